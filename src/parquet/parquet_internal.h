/*
 * parquet_internal.h - the Parquet file writer as the rest of floe uses it.
 *
 * A writer takes rows in floe's row format (schema/schema_internal.h) for one
 * schema, shreds them into leaf columns and writes a Parquet file with
 * Iceberg field ids into a floe__output.  At close it hands back the Iceberg
 * metrics of the file (column sizes, counts, bounds, split offsets), computed
 * while writing: nobody has to read the footer back.
 *
 * The encoder internals (thrift, RLE, dictionaries, pages, statistics) are in
 * parquet/pq_internal.h; nothing outside src/parquet/ should need them.
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
    uint64_t column_size;      /* compressed bytes of its column chunks, page headers included */
    bool has_counts;           /* value_count and null_count are meaningful */
    uint64_t value_count;      /* values including nulls (and NaNs) */
    uint64_t null_count;
    bool has_nan_count;        /* float and double columns */
    uint64_t nan_count;
    bool has_lower, has_upper;
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

/* Flush the last row group, write the footer and close the output.  Frees w
 * whether or not it succeeds; on failure the output is aborted.  When `m` is
 * not NULL and the call succeeds, *m receives the file's metrics (free them
 * with floe__file_metrics_free). */
int floe__pq_writer_close(floe__pq_writer *w, floe__file_metrics *m, floe_error *err);

/* Discard the file and free w.  Accepts NULL. */
void floe__pq_writer_abort(floe__pq_writer *w);

#endif /* FLOE_PARQUET_INTERNAL_H */
