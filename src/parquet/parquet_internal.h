/*
 * parquet_internal.h - the Parquet file writer and reader as the rest of floe
 * uses them.
 *
 * A writer takes rows in floe's row format (schema/schema_internal.h) for one
 * schema, shreds them into leaf columns and writes a Parquet file with
 * Iceberg field ids into a floe__output.  At close it hands back the Iceberg
 * metrics of the file (column sizes, counts, bounds, split offsets), computed
 * while writing: nobody has to read the footer back.
 *
 * A reader (the second half of this header) reads Parquet files back into
 * the row format, for a projection matched by Iceberg field ids.
 *
 * The encoder internals (thrift, RLE, dictionaries, pages, statistics) are in
 * parquet/pq_internal.h, the reader's in parquet/pqr_internal.h; nothing
 * outside src/parquet/ should need them.
 */
#ifndef FLOE_PARQUET_INTERNAL_H
#define FLOE_PARQUET_INTERNAL_H

#include "schema/schema_internal.h"
#include "util/util_internal.h"

typedef struct floe__pq_writer floe__pq_writer;

/* Iceberg metrics of one leaf column (one primitive field id).
 * Counts and bounds follow Java Iceberg's Parquet writer: fields inside a
 * list or a map report only their column size; floats and doubles report a
 * NaN count; bounds use Iceberg's single-value binary serialization, strings
 * and binary truncated to 16 (code points / bytes) as the default metrics
 * mode truncate(16) does.  An upper bound that cannot be truncated (all
 * bytes 0xff, all code points U+10FFFF) is left out, the lower bound kept. */
typedef struct floe__col_metrics {
    int32_t field_id;
    bool has_counts;           /* value_count and null_count are meaningful */
    bool has_nan_count;        /* float and double columns */
    bool has_lower, has_upper;
    uint64_t column_size;      /* compressed bytes of its column chunks, page headers included */
    uint64_t value_count;      /* values including nulls (and NaNs) */
    uint64_t null_count;
    uint64_t nan_count;
    floe__buf lower, upper;    /* Iceberg single-value serialization */
} floe__col_metrics;

typedef struct floe__file_metrics {
    uint64_t record_count;
    uint64_t file_size;
    size_t n_columns;          /* one per leaf column, in schema order */
    floe__col_metrics *columns;
    size_t n_splits;           /* one per row group: the offset of its first page */
    uint64_t *split_offsets;
} floe__file_metrics;

/* Releases what a floe__file_metrics holds (not the struct); accepts NULL. */
void floe__file_metrics_free(floe__file_metrics *m);

/* Start a Parquet file on `out` for rows of schema `s` (which must outlive
 * the writer).  `o` may be NULL for the defaults.  The writer takes ownership
 * of `out` whether or not this succeeds (on failure `out` is aborted). */
int floe__pq_writer_new(const floe__schema *s, const floe_parquet_options *o,
                        floe__output *out, floe__pq_writer **w, floe_error *err);

/* A compressor for files written with options `o` (NULL: the defaults),
 * which their writers may share, one writer at a time: a writer of many
 * small files then sets one up once, not per file. */
typedef struct floe__pq_codec floe__pq_codec;
int floe__pq_codec_new(const floe_parquet_options *o, floe__pq_codec **out, floe_error *err);
void floe__pq_codec_destroy(floe__pq_codec *c);     /* accepts NULL */
/* floe__pq_writer_new compressing with `codec` (from floe__pq_codec_new
 * with the same options; borrowed, outliving the writer). */
int floe__pq_writer_new_shared(const floe__schema *s, const floe_parquet_options *o,
                               floe__output *out, floe__pq_codec *codec, floe__pq_writer **w,
                               floe_error *err);

/* A key_value_metadata entry of the footer (copied), e.g. Iceberg's
 * "iceberg.schema"; at most FLOE__PQ_MAX_KV (4) of them (FLOE_ELIMIT). */
int floe__pq_writer_add_kv(floe__pq_writer *w, const char *key, const char *value,
                           floe_error *err);

/* Append one row in the row format.  A row of the wrong shape (truncated,
 * a bad slot tag, null in a required field, a decimal that does not fit its
 * precision's storage, trailing bytes) is FLOE_EINPUT and leaves the writer
 * as it was before the call.  Any other failure (I/O, memory) breaks the
 * writer: every later call fails and close aborts the output. */
int floe__pq_write_row(floe__pq_writer *w, const uint8_t *row, size_t len, floe_error *err);

/* Rows accepted so far. */
uint64_t floe__pq_writer_rows(const floe__pq_writer *w);

/* An estimate of the file's size if it were closed now (bytes written plus
 * buffered data plus footer), for rolling files over at a target size. */
uint64_t floe__pq_writer_bytes(const floe__pq_writer *w);
/* The bytes of the row group held in memory (encoded pages and the values
 * not yet encoded), not yet written out. */
uint64_t floe__pq_writer_buffered(const floe__pq_writer *w);

/* Flush the last row group, write the footer and close the output.  Frees w
 * whether or not it succeeds; on failure the output is aborted.  When `m` is
 * not NULL and the call succeeds, *m receives the file's metrics (free them
 * with floe__file_metrics_free). */
int floe__pq_writer_close(floe__pq_writer *w, floe__file_metrics *m, floe_error *err);

/* Discard the file and free w.  Accepts NULL. */
void floe__pq_writer_abort(floe__pq_writer *w);

/* ==== Reading Parquet files ====================================================
 *
 * A reader reads a Parquet file (written by floe or by pyarrow, DuckDB,
 * Spark, parquet-java, ...) back into floe's row format, for a projection: a
 * floe__schema whose fields carry Iceberg field ids.  Each projected field
 * is matched to the file by the Parquet field_id of its SchemaElement, among
 * the children of the group its parent matched (list elements and map
 * keys/values by position, whatever their ids).  Only when the file has no
 * field ids at all are fields matched by name instead.  A projected field
 * the file lacks reads as null; a required one is FLOE_EINCOMPATIBLE at
 * open.  A stored type that does not fit the projected type (see
 * docs/internals/parquet.md for the table of what reads as what: Iceberg's
 * promotions, timestamp units, INT96, decimals from any physical type, uuid
 * as text) is FLOE_EINCOMPATIBLE naming the column.
 *
 * Only the projected columns' chunks are read, a page at a time: memory is
 * about one page (plus the dictionary) per projected column, whatever the
 * file's size.  Malformed input is FLOE_EFORMAT with a message saying where;
 * features floe does not read (LZ4, LZO, BROTLI codecs, encryption, column
 * chunks in other files) are FLOE_EUNSUPPORTED naming them; pages or footers
 * over the option limits are FLOE_ELIMIT.
 *
 * Threads: a reader is used by one thread at a time; its source's read_at
 * is only called from inside the reader's calls.  Distinct readers (of the
 * same source too, if read_at allows it) run in parallel.
 */

/* A random-access byte source.  read_at copies [off, off + len) to dst; the
 * reader only asks for ranges inside [0, size).  It returns FLOE_OK or a
 * code with err set (FLOE_EIO, ...), which the reader passes on. */
typedef struct floe__pq_source {
    int (*read_at)(void *ctx, uint64_t off, size_t len, uint8_t *dst, floe_error *err);
    uint64_t size;
    void *ctx;
} floe__pq_source;

/* A source over [data, data + len), which must outlive every reader of it. */
floe__pq_source floe__pq_source_memory(const void *data, size_t len);

typedef struct floe__pq_read_options {
    size_t max_footer;      /* largest footer accepted; default 64 MiB */
    size_t max_page;        /* largest page (compressed or not, header included) and
                               largest decoded values of one batch; default 256 MiB */
} floe__pq_read_options;

void floe__pq_read_options_init(floe__pq_read_options *o);

typedef struct floe__pq_reader floe__pq_reader;

/* Open a reader on `src` (copied; its ctx must outlive the reader) for rows
 * of `projection`, which must outlive the reader too.  projection NULL: the
 * file's own schema, derived from its Parquet schema (Iceberg types; its
 * field ids, or ids numbered from 1 when it has none; fields floe cannot
 * represent are FLOE_EUNSUPPORTED), owned by the reader
 * (floe__pq_reader_schema).  `o` may be NULL for the defaults.  Reads and
 * checks the footer; no data is read yet.  Errors: FLOE_EFORMAT (not
 * Parquet, a malformed footer or schema), FLOE_EUNSUPPORTED, FLOE_ELIMIT
 * (a footer over max_footer), FLOE_EINCOMPATIBLE (the projection does not
 * fit the file), FLOE_EINVAL (options), the source's codes.  *out is the
 * caller's (free with floe__pq_reader_free); on failure nothing is
 * allocated. */
int floe__pq_reader_open(const floe__pq_source *src, const floe__schema *projection,
                         const floe__pq_read_options *o, floe__pq_reader **out,
                         floe_error *err);
/* Accepts NULL. */
void floe__pq_reader_free(floe__pq_reader *r);

/* The schema rows are read in: the projection, or the derived schema. */
const floe__schema *floe__pq_reader_schema(const floe__pq_reader *r);
/* The file's row count (FileMetaData.num_rows) and row groups. */
uint64_t floe__pq_reader_num_rows(const floe__pq_reader *r);
size_t floe__pq_reader_num_row_groups(const floe__pq_reader *r);

typedef struct floe__pq_row_group {
    uint64_t first_row;     /* position of its first row in the file */
    uint64_t num_rows;
    uint64_t compressed;    /* bytes of its projected column chunks */
} floe__pq_row_group;

/* Row group i (i < floe__pq_reader_num_row_groups). */
floe__pq_row_group floe__pq_reader_row_group(const floe__pq_reader *r, size_t i);

/* Continue reading at the first row of row group i (i may be the number of
 * row groups: then the next read is the end).  Readers can so split a file
 * by row groups. */
int floe__pq_reader_seek(floe__pq_reader *r, size_t row_group, floe_error *err);

/* The next row: appends it to `row` in the row format of the reader's
 * schema and sets *pos to its 0-based position in the file and *got to
 * true; at the end of the file *got is false and nothing is appended.  On
 * failure `row` is as it was and the reader is broken: every later call
 * fails with the same code. */
int floe__pq_reader_next(floe__pq_reader *r, floe__buf *row, uint64_t *pos, bool *got,
                         floe_error *err);

/* The next rows at once: `max` (> 0) of them, fewer only where the current
 * row group ends (a batch never crosses one) or the file does.  Appends
 * them to `rows` back to back, row i ending at ends[i] (an offset in
 * rows->data; row 0 starts at rows->len before the call), sets *n to how
 * many (0 at the end of the file) and *first_pos to the position of the
 * first (the others follow it: first_pos + i).  The fast way to read many
 * rows, e.g. the key columns of a whole row group in one call (max >= its
 * num_rows; ends then needs that many entries).  Failure as for
 * floe__pq_reader_next. */
int floe__pq_reader_next_batch(floe__pq_reader *r, floe__buf *rows, size_t *ends, size_t max,
                               size_t *n, uint64_t *first_pos, floe_error *err);

#endif /* FLOE_PARQUET_INTERNAL_H */
