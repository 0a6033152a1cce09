/*
 * floe.h - the public C API of libfloe.
 *
 * floe streams a changelog of rows into Apache Iceberg tables exactly once.
 * This header is the whole public surface: the command-line program uses
 * nothing else.  It is usable from C and C++.
 *
 * Conventions (they hold for every function below unless its comment says
 * otherwise):
 *  - Fallible functions return an `int` result code: FLOE_OK (0) or one of
 *    the FLOE_E* codes.  They take an optional `floe_error *err` last; when
 *    it is not NULL and the call fails, it receives the message and its
 *    cause chain.  Passing NULL is allowed and loses only the message.
 *  - Objects come in `floe_x_new` / `floe_x_free` pairs.  `free` accepts
 *    NULL.  Out-parameters are set only on success; on failure nothing is
 *    handed to the caller and nothing the caller passed in changes owner.
 *  - Strings are NUL-terminated UTF-8 unless a length is given.  Strings
 *    returned as `const char *` are owned by the object they came from and
 *    live as long as it does, unless the comment says "caller frees"
 *    (then free them with floe_free()).
 *  - Thread safety: distinct objects may be used from distinct threads at
 *    once; one object must not be used from two threads at once.  There is
 *    no global mutable state.
 */
#ifndef FLOE_H
#define FLOE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FLOE_VERSION_MAJOR 0
#define FLOE_VERSION_MINOR 1
#define FLOE_VERSION_PATCH 0
#define FLOE_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------------
 * Result codes.  The numbers are stable: never renumbered, never reused.
 * X(NAME, number, description)
 * ---------------------------------------------------------------------- */
#define FLOE_ERRNO_MAP(X)                                                      \
    X(OK, 0, "success")                                                        \
    X(ENOMEM, 1, "out of memory")                                              \
    X(EINVAL, 2, "invalid argument")                                           \
    X(ESCHEMA, 3, "invalid schema declaration")                                \
    X(EINPUT, 4, "invalid input")                                              \
    X(EIO, 5, "storage I/O error")                                             \
    X(EFORMAT, 6, "malformed file or metadata")                                \
    X(ELIMIT, 7, "size limit exceeded")                                        \
    X(EUNSUPPORTED, 8, "unsupported feature")                                  \
    X(ENOTFOUND, 9, "not found")                                               \
    X(EEXISTS, 10, "already exists")                                           \
    X(EINCOMPATIBLE, 11, "incompatible table")                                 \
    X(ECONFLICT, 12, "commit conflict")                                        \
    X(EUNKNOWN_OUTCOME, 13, "commit outcome unknown")                          \
    X(EFENCED, 14, "fenced by a newer sink version")                           \
    X(ESTATE, 15, "table in an unexpected state")                              \
    X(ECATALOG, 16, "catalog error")                                           \
    X(ENET, 17, "network error")                                               \
    X(EAUTH, 18, "authentication failed")                                      \
    X(EINTERNAL, 19, "internal error")

typedef enum floe_code {
#define FLOE__CODE_ENUM(name, num, desc) FLOE_##name = num,
    FLOE_ERRNO_MAP(FLOE__CODE_ENUM)
#undef FLOE__CODE_ENUM
} floe_code;

/* The constant name ("FLOE_EINPUT") and description of a code; never NULL. */
const char *floe_code_name(int code);
const char *floe_code_string(int code);

/* ------------------------------------------------------------------------
 * Errors: a code plus a chain of messages, outermost context first.
 * ---------------------------------------------------------------------- */
typedef struct floe_error floe_error;

floe_error *floe_error_new(void);               /* NULL only on out of memory */
void floe_error_free(floe_error *err);
void floe_error_clear(floe_error *err);         /* back to FLOE_OK, no message */
int floe_error_code(const floe_error *err);     /* FLOE_OK when none */
/* The whole chain, "context: cause: root cause".  Owned by err; valid until
 * err changes.  "" when there is no error. */
const char *floe_error_message(const floe_error *err);
/* The number of frames in the chain and frame i (0 = outermost). */
size_t floe_error_depth(const floe_error *err);
const char *floe_error_frame(const floe_error *err, size_t i);
/* Whether trying the same operation again may succeed (conflicts, network
 * failures, throttling): 1 or 0. */
int floe_error_retryable(const floe_error *err);

/* Frees memory that a floe function handed to the caller ("caller frees"). */
void floe_free(void *p);

/* ------------------------------------------------------------------------
 * Schemas.  A schema is the column list of SPEC.md section 3, e.g.
 *   "id bigint not null, name text, tags text[], attrs map[text=>text],
 *    price numeric(12,2), addr record(street text, zip integer)"
 * turned into an Iceberg schema with field ids assigned depth-first,
 * pre-order, from 1.  A schema is immutable once made and may be shared
 * between threads.
 * ---------------------------------------------------------------------- */
typedef struct floe_schema floe_schema;

/* Parse a column list.  On a bad declaration: FLOE_ESCHEMA with a message
 * naming the column and offending text.  *out is the caller's (free with
 * floe_schema_free). */
int floe_schema_parse(const char *columns, floe_schema **out, floe_error *err);
void floe_schema_free(floe_schema *schema);
/* Number of top-level columns. */
size_t floe_schema_column_count(const floe_schema *schema);
/* The Iceberg JSON form of the schema ({"type":"struct","schema-id":..,
 * "fields":[..]}); caller frees. */
int floe_schema_to_json(const floe_schema *schema, char **out, floe_error *err);

/* ------------------------------------------------------------------------
 * Rows.  A floe_row holds one row of a schema in floe's internal row
 * format.  Fill it from JSON (the value encodings of SPEC.md section 2),
 * pass it to a writer, clear it, fill it again.  The row keeps a pointer to
 * its schema: the schema must outlive it.
 * ---------------------------------------------------------------------- */
typedef struct floe_row floe_row;

int floe_row_new(const floe_schema *schema, floe_row **out, floe_error *err);
void floe_row_free(floe_row *row);
void floe_row_clear(floe_row *row);
/* Replace the row's contents with the JSON object in [json, json+len), whose
 * keys are column names.  Missing columns are null; an unknown column, a
 * value that does not fit its type, or null in a not-null column is
 * FLOE_EINPUT with a message naming the column (and the nested path). */
int floe_row_set_json(floe_row *row, const char *json, size_t len, floe_error *err);
/* The row as JSON text (the same encodings, canonical forms); caller frees.
 * For diagnostics and tests. */
int floe_row_to_json(const floe_row *row, char **out, floe_error *err);

/* ------------------------------------------------------------------------
 * Parquet files with Iceberg field ids.
 * ---------------------------------------------------------------------- */
typedef enum floe_compression {
    FLOE_COMPRESSION_NONE = 0,
    FLOE_COMPRESSION_SNAPPY = 1,
    FLOE_COMPRESSION_GZIP = 2,
    FLOE_COMPRESSION_ZSTD = 3,
} floe_compression;

/* Options for Parquet writing.  Always start from floe_parquet_options_init()
 * (later versions append fields; init sets them to their defaults). */
typedef struct floe_parquet_options {
    floe_compression compression;   /* default ZSTD */
    int compression_level;          /* 0 = the codec's default (zstd: 3, gzip: 6) */
    size_t page_size;               /* target uncompressed data page bytes; default 1 MiB */
    size_t row_group_size;          /* target row group bytes (estimated); default 128 MiB */
    size_t dictionary_limit;        /* max dictionary bytes per column chunk before
                                       falling back to plain; default 1 MiB */
    int dictionary;                 /* 1 = try dictionary encoding (default), 0 = never */
} floe_parquet_options;

void floe_parquet_options_init(floe_parquet_options *opts);
/* "none", "snappy", "gzip", "zstd" -> code; -1 when unknown. */
int floe_compression_from_name(const char *name);

typedef struct floe_parquet_writer floe_parquet_writer;

/* Open `path` (a local path or file:// URI) for writing.  Nothing is visible
 * under `path` until floe_parquet_writer_close succeeds.  opts may be NULL
 * (defaults).  The schema must outlive the writer. */
int floe_parquet_writer_open(const floe_schema *schema, const char *path,
                             const floe_parquet_options *opts,
                             floe_parquet_writer **out, floe_error *err);
/* Append one row (it must belong to the writer's schema). */
int floe_parquet_writer_write(floe_parquet_writer *w, const floe_row *row, floe_error *err);
/* Rows written so far and an estimate of the file's size if closed now. */
uint64_t floe_parquet_writer_rows(const floe_parquet_writer *w);
uint64_t floe_parquet_writer_bytes(const floe_parquet_writer *w);
/* Finish the file and make it visible; frees w whether or not it succeeds
 * (on failure nothing is left under the path).  *file_size, when not NULL,
 * receives the final size. */
int floe_parquet_writer_close(floe_parquet_writer *w, uint64_t *file_size, floe_error *err);
/* Discard the file and free w.  Accepts NULL. */
void floe_parquet_writer_abort(floe_parquet_writer *w);

/* ------------------------------------------------------------------------
 * The sink: a changelog into an Iceberg table, exactly once (SPEC.md 1-7).
 *
 * Feed it updates (row, time, diff) and frontiers; it groups them into one
 * Iceberg snapshot per commit interval, writes data and delete files
 * (upsert) or plain rows with _diff/_timestamp (append), and commits each
 * snapshot with its frontier in the snapshot summary, so a restart resumes
 * where it stopped, a lost commit response is recognised, and an older sink
 * version is fenced.  A floe_sink is used from one thread; floe_sink_stats
 * and floe_sink_metrics may be called from any thread at any time.
 * ---------------------------------------------------------------------- */
typedef struct floe_sink floe_sink;

typedef enum floe_sink_mode {
    FLOE_SINK_MODE_AUTO = 0,        /* upsert when a key is given, append otherwise */
    FLOE_SINK_MODE_UPSERT = 1,      /* without a key: the whole row is the key */
    FLOE_SINK_MODE_APPEND = 2,
} floe_sink_mode;

/* Options; start from floe_sink_options_init().  Strings are copied by
 * floe_sink_open. */
typedef struct floe_sink_options {
    const char *table;              /* "NS.NAME" (required) */
    const char *schema;             /* column list (SPEC 3); NULL: the existing table's */
    const char *key;                /* key columns "a,b"; NULL: none */
    floe_sink_mode mode;
    const char *catalog;            /* NULL: "sqlite:warehouse/catalog.db" */
    const char *catalog_name;       /* NULL: "floe" */
    const char *warehouse;          /* NULL: "./warehouse" (as a file:// URI) */
    uint64_t commit_interval;       /* in the input's time units; default 10000 */
    uint64_t as_of;                 /* default 0 */
    const char *sink_id;            /* NULL: the table name "NS.NAME" */
    uint64_t sink_version;          /* default 1 */
    floe_compression compression;   /* default ZSTD */
    int compression_level;          /* 0: the codec's default */
    uint64_t target_file_size;      /* data file roll-over size; default 512 MiB */
    size_t memory_limit;            /* updates held in memory before spilling; 512 MiB */
    const char *spill_dir;          /* NULL: $TMPDIR or /tmp */
    /* Called with each warning (e.g. a primary-key violation); may be NULL. */
    void (*on_warning)(void *ctx, const char *message);
    void *warning_ctx;
    /* Called after each commit with the new frontier ("[t]" or "[]") and
     * snapshot id: the moment to acknowledge the input upstream. */
    void (*on_commit)(void *ctx, const char *frontier, int64_t snapshot_id);
    void *commit_ctx;
} floe_sink_options;

void floe_sink_options_init(floe_sink_options *opts);

/* Open the catalog, load or create the table (checking a declared schema
 * against an existing table), read where the table says the sink stands
 * and whether this sink version is fenced (FLOE_EFENCED). */
int floe_sink_open(const floe_sink_options *opts, floe_sink **out, floe_error *err);
void floe_sink_free(floe_sink *sink);

/* The frontier the table records, "[t]" / "[]", or NULL for a fresh table.
 * Input below it is skipped (it is committed already). */
const char *floe_sink_resume_frontier(const floe_sink *sink);
/* 1 when the table already records the empty frontier: nothing to do. */
int floe_sink_complete(const floe_sink *sink);

/* One NDJSON change record (SPEC 2): an update or a progress record.
 * Errors (FLOE_EINPUT) say why; the caller adds the line number. */
int floe_sink_push_json(floe_sink *sink, const char *line, size_t len, floe_error *err);
/* One update.  `row` must be of floe_sink_row_schema(sink). */
int floe_sink_push(floe_sink *sink, const floe_row *row, uint64_t time, int64_t diff,
                   floe_error *err);
/* The schema input rows are parsed with (owned by the sink). */
const floe_schema *floe_sink_row_schema(const floe_sink *sink);
/* The input frontier moves to `time`: every update still to come has a time
 * >= it.  Closed batches are written and committed before this returns. */
int floe_sink_advance(floe_sink *sink, uint64_t time, floe_error *err);
/* The input is complete: commit everything; the table then records "[]". */
int floe_sink_finish(floe_sink *sink, floe_error *err);

typedef struct floe_sink_stats {
    uint64_t updates_in, bytes_in;          /* pushed */
    uint64_t updates_stashed;               /* waiting for the frontier */
    uint64_t snapshots_committed, lost_responses, commit_conflicts, commit_failures;
    uint64_t data_files, delete_files;      /* committed */
    uint64_t rows_committed, bytes_committed;
    uint64_t pk_violations;
    uint64_t commit_seconds_total_us, close_seconds_total_us;  /* microseconds, summed */
    uint64_t batches_sealed;
    int input_frontier_empty;               /* input closed */
    uint64_t input_frontier;
    int has_committed_frontier, committed_frontier_empty;
    uint64_t committed_frontier;
} floe_sink_stats;
void floe_sink_stats_get(const floe_sink *sink, floe_sink_stats *out);
/* The Prometheus text exposition of the sink's metrics (caller frees). */
int floe_sink_metrics(const floe_sink *sink, char **out, floe_error *err);

#ifdef __cplusplus
}
#endif
#endif /* FLOE_H */
