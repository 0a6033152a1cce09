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

#ifdef __cplusplus
}
#endif
#endif /* FLOE_H */
