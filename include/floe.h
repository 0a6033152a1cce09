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
 *  - Growing (docs/api.md, "Compatibility"): every struct begins with its
 *    size.  Options structs are set up by floe_x_options_init(&o, sizeof o)
 *    before their fields are set; the library reads only the bytes the
 *    caller's struct has (a program built against an older header gets the
 *    defaults for the fields added since), and refuses (FLOE_EUNSUPPORTED)
 *    a newer program's struct that sets a field the library does not know.
 *    Structs the library fills take their size as an argument (`sizeof
 *    out`); it writes no more than that and sets out->size to the bytes it
 *    filled.  Option structs refer to one another by pointer.
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
/* MAJOR * 10000 + MINOR * 100 + PATCH, for compile-time comparisons. */
#define FLOE_VERSION_NUMBER (FLOE_VERSION_MAJOR * 10000 + FLOE_VERSION_MINOR * 100 + \
                             FLOE_VERSION_PATCH)

/* Whether struct *s (of type T, filled by the library) has `field`: a
 * program built against a newer header, run with an older libfloe, checks
 * this before reading a field added since (docs/api.md). */
#define FLOE_HAS_FIELD(T, s, field) \
    ((s)->size >= offsetof(T, field) + sizeof(((T *)0)->field))

/* The version of the library linked at run time ("0.1.0"), and as a
 * number (FLOE_VERSION_NUMBER's form): a program compiled against one
 * header and run with another libfloe.so of the same major version can
 * tell which it got. */
const char *floe_version(void);
unsigned floe_version_number(void);

/* ------------------------------------------------------------------------
 * Result codes.  The numbers are stable: never renumbered, never reused.
 * X(NAME, number, description, class) where class says what a caller may
 * conclude from a failure with this code (the one place that decides it):
 *   FLOE_FAIL_FINAL    retrying the same operation cannot help
 *   FLOE_FAIL_RETRY    a transient failure: retrying may succeed (for a
 *                      commit: nothing changed; reload and try again)
 *   FLOE_FAIL_UNKNOWN  the operation may or may not have taken effect
 *                      (retrying may succeed; look before you do)
 * ---------------------------------------------------------------------- */
#define FLOE_FAIL_FINAL 0
#define FLOE_FAIL_RETRY 1
#define FLOE_FAIL_UNKNOWN 2

#define FLOE_ERRNO_MAP(X)                                                      \
    X(OK, 0, "success", FLOE_FAIL_FINAL)                                       \
    X(ENOMEM, 1, "out of memory", FLOE_FAIL_FINAL)                             \
    X(EINVAL, 2, "invalid argument", FLOE_FAIL_FINAL)                          \
    X(ESCHEMA, 3, "invalid schema declaration", FLOE_FAIL_FINAL)               \
    X(EINPUT, 4, "invalid input", FLOE_FAIL_FINAL)                             \
    X(EIO, 5, "storage I/O error", FLOE_FAIL_RETRY)                            \
    X(EFORMAT, 6, "malformed file or metadata", FLOE_FAIL_FINAL)               \
    X(ELIMIT, 7, "size limit exceeded", FLOE_FAIL_FINAL)                       \
    X(EUNSUPPORTED, 8, "unsupported feature", FLOE_FAIL_FINAL)                 \
    X(ENOTFOUND, 9, "not found", FLOE_FAIL_FINAL)                              \
    X(EEXISTS, 10, "already exists", FLOE_FAIL_FINAL)                          \
    X(EINCOMPATIBLE, 11, "incompatible table", FLOE_FAIL_FINAL)                \
    X(ECONFLICT, 12, "commit conflict", FLOE_FAIL_RETRY)                       \
    X(EUNKNOWN_OUTCOME, 13, "commit outcome unknown", FLOE_FAIL_UNKNOWN)       \
    X(EFENCED, 14, "fenced by a newer sink version", FLOE_FAIL_FINAL)          \
    X(ESTATE, 15, "table in an unexpected state", FLOE_FAIL_FINAL)             \
    X(ECATALOG, 16, "catalog error", FLOE_FAIL_FINAL)                          \
    X(ENET, 17, "network error", FLOE_FAIL_RETRY)                              \
    X(EAUTH, 18, "authentication failed", FLOE_FAIL_FINAL)                     \
    X(EINTERNAL, 19, "internal error", FLOE_FAIL_FINAL)                        \
    X(ETLS, 20, "TLS verification failed", FLOE_FAIL_FINAL)                    \
    X(EINTERRUPTED, 21, "interrupted by a signal", FLOE_FAIL_FINAL)                \
    X(EPERM, 22, "permission denied", FLOE_FAIL_FINAL)

typedef enum floe_code {
#define FLOE__CODE_ENUM(name, num, desc, cls) FLOE_##name = num,
    FLOE_ERRNO_MAP(FLOE__CODE_ENUM)
#undef FLOE__CODE_ENUM
} floe_code;

/* The constant name ("FLOE_EINPUT") and description of a code; never NULL. */
const char *floe_code_name(int code);
const char *floe_code_string(int code);
/* The failure class of a code (FLOE_FAIL_*); FLOE_FAIL_FINAL for unknown codes. */
int floe_code_class(int code);

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
 * failures, throttling, unknown outcomes): 1 or 0.  Decided by the code's
 * class alone (floe_code_class). */
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
    /* A table's writers (floe_sink): the table's write.parquet.compression-codec,
     * zstd when it has none.  Anywhere else: ZSTD. */
    FLOE_COMPRESSION_DEFAULT = 4,
} floe_compression;

/* Options for Parquet writing.  Always start from floe_parquet_options_init()
 * (later versions append fields; init sets them to their defaults). */
typedef struct floe_parquet_options {
    size_t size;                    /* set by floe_parquet_options_init ("Growing") */
    floe_compression compression;   /* default ZSTD */
    int compression_level;          /* 0 = the codec's default (zstd: 3, gzip: 6) */
    size_t page_size;               /* target uncompressed data page bytes; default 1 MiB */
    size_t row_group_size;          /* target row group bytes (estimated); default 128 MiB */
    size_t dictionary_limit;        /* max dictionary bytes per column chunk before
                                       falling back to plain; default 1 MiB */
    int dictionary;                 /* 1 = try dictionary encoding (default), 0 = never */
} floe_parquet_options;

void floe_parquet_options_init(floe_parquet_options *opts, size_t size);
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
 * Catalogs.  A catalog registers tables and swaps a table's metadata
 * atomically on commit.  The embedded catalog is a SQLite database shared
 * with pyiceberg's SqlCatalog and Iceberg's JdbcCatalog (open the same file
 * with the same catalog name).  Tables opened from a catalog use it: a
 * catalog and its tables must be used from one thread at a time (open one
 * catalog per thread for parallel work).
 * ---------------------------------------------------------------------- */
typedef struct floe_catalog floe_catalog;

/* Where tables live and how to reach them: the catalog and the storage.
 * Start from floe_connect_options_init().  A NULL field takes the
 * environment variable named beside it, then the default.  Secrets
 * (tokens, credentials, keys) never appear in messages or logs. */
typedef struct floe_connect_options {
    size_t size;                    /* set by floe_connect_options_init ("Growing") */
    /* "sqlite:PATH" (relative to the working directory, or absolute),
     * "sqlite:///PATH" as SQLAlchemy and pyiceberg write it
     * ("sqlite:////abs/catalog.db" is absolute), or an "http(s)://" REST
     * catalog.  Default "sqlite:warehouse/catalog.db". */
    const char *catalog;            /* FLOE_CATALOG */
    const char *catalog_name;       /* default "floe"; readers must use the same */
    /* Where new tables go, "<warehouse>/<namespace>/<table>": a "file://"
     * URI, a local path (made absolute) or "s3://bucket/prefix".  Default
     * ./warehouse.  For a REST catalog: the warehouse name sent in config. */
    const char *warehouse;          /* FLOE_WAREHOUSE */
    /* REST catalog authentication (one of them, or none). */
    const char *token;              /* bearer token; FLOE_CATALOG_TOKEN */
    const char *credential;         /* OAuth2 client credentials "id:secret";
                                       FLOE_CATALOG_CREDENTIAL */
    const char *oauth2_uri;         /* token endpoint; default <catalog>/v1/oauth/tokens */
    const char *scope;              /* OAuth2 scope; default "catalog" */
    const char *sigv4_region;       /* sign catalog requests with AWS SigV4 (Glue,
                                       S3 Tables); FLOE_CATALOG_SIGV4_REGION */
    const char *sigv4_service;      /* default "execute-api" */
    /* S3 storage (a catalog may vend credentials that take precedence). */
    const char *s3_endpoint;        /* AWS_ENDPOINT_URL_S3; default AWS */
    const char *s3_region;          /* AWS_REGION; default us-east-1 */
    const char *s3_access_key_id;   /* AWS_ACCESS_KEY_ID */
    const char *s3_secret_access_key; /* AWS_SECRET_ACCESS_KEY */
    const char *s3_session_token;   /* AWS_SESSION_TOKEN */
    int s3_path_style;              /* 1 path-style, 0 virtual-hosted, -1 (default):
                                       path-style when an endpoint is given */
    /* TLS: certificates are always verified; trust this extra CA bundle
     * (PEM) for private endpoints. */
    const char *ca_file;            /* FLOE_CA_FILE */
    /* 1: open an existing catalog only: a SQLite database file that does
     * not exist is FLOE_ENOTFOUND, and nothing is created (for commands
     * that only read).  Default 0: it is created when missing. */
    int must_exist;
} floe_connect_options;

void floe_connect_options_init(floe_connect_options *opts, size_t size);

/* Open the catalog `opts` names (NULL: all defaults).  The database of a
 * SQLite catalog and its directory are created when missing (unless
 * opts->must_exist: then FLOE_ENOTFOUND); a warehouse that is neither local
 * files nor S3 is FLOE_EUNSUPPORTED before anything is created.  Errors:
 * FLOE_EINVAL (malformed URI), FLOE_EUNSUPPORTED, FLOE_ECATALOG (the
 * catalog cannot be opened or set up), FLOE_ENET / FLOE_EAUTH (a REST
 * catalog cannot be reached or refuses the credentials).  *out is the
 * caller's. */
int floe_catalog_open(const floe_connect_options *opts, floe_catalog **out, floe_error *err);
/* Close the catalog.  Free its tables first.  Accepts NULL. */
void floe_catalog_free(floe_catalog *catalog);

/* ------------------------------------------------------------------------
 * Tables.  A floe_table is a handle on one Iceberg table: its metadata as
 * last loaded, its schema, and where its data files go.  Tables are named
 * "NS.NAME": the namespace (its levels joined by '.') and the table name
 * after the last '.'.
 * ---------------------------------------------------------------------- */
typedef struct floe_table floe_table;

/* Open table `ident`.
 *   declared   NULL: the table must exist (FLOE_ENOTFOUND otherwise) and
 *              its own schema is used.  Not NULL: the table is created
 *              (unpartitioned, with this schema, in a namespace created
 *              when missing) if it does not exist; if it exists its schema
 *              must be compatible with `declared` (same column names,
 *              order, nesting, nullability and types; field ids are not
 *              compared; a fixed[16] or uuid column may stand for a
 *              declared uuid) or the call fails with FLOE_EINCOMPATIBLE
 *              naming the first difference and both schemas.  Input rows
 *              are then read by the declared types.
 *   properties NULL, or key/value pairs ending with NULL ({"k1", "v1",
 *              "k2", "v2", NULL}): table properties for a table created
 *              here (e.g. "write.data.path"); ignored when it exists.
 *              "floe.partition-by" (not kept as a property) partitions a
 *              table created here: Spark DDL-style text such as
 *              "day(ts), bucket(16, id), truncate(4, name), id" (also
 *              year, month, hour, void; FLOE_EINVAL / FLOE_ESCHEMA naming
 *              what is wrong).
 * The catalog must outlive the table; `declared` need not.  *out is the
 * caller's. */
int floe_table_open(floe_catalog *catalog, const char *ident, const floe_schema *declared,
                    const char *const *properties, floe_table **out, floe_error *err);
/* Accepts NULL.  Writers and commits of the table must be freed first. */
void floe_table_free(floe_table *table);
/* Reload the table's metadata from the catalog (its schema stays as it was
 * when opened).  Snapshot information read before is invalidated. */
int floe_table_refresh(floe_table *table, floe_error *err);
/* The schema rows for this table must be made with (floe_row_new): the
 * table's field ids, read by the declared types when a declaration was
 * given.  Owned by the table. */
const floe_schema *floe_table_schema(const floe_table *table);
/* The current snapshot id, -1 when the table has no snapshot. */
int64_t floe_table_current_snapshot_id(const floe_table *table);
/* The metadata file the table was last loaded from, and where its data
 * files go.  Owned by the table; valid until it is refreshed, committed
 * to or freed. */
const char *floe_table_metadata_location(const floe_table *table);
const char *floe_table_data_location(const floe_table *table);
/* The table's partition specs as JSON text (caller frees with floe_free):
 * {"default-spec-id": N, "specs": [{"spec-id", "fields": [{"name",
 * "transform", "source-id", "field-id"}]}, ...]} as the metadata holds
 * them (an unpartitioned table has one spec without fields). */
int floe_table_partition_specs(const floe_table *table, char **out, floe_error *err);

/* A snapshot of the table.  Strings are owned by the table and valid until
 * it is refreshed, committed to or freed. */
typedef struct floe_snapshot_info {
    size_t size;                    /* the bytes the library filled in (see "Growing") */
    int64_t snapshot_id;
    int64_t parent_id;               /* -1: none */
    int64_t sequence_number;
    int64_t timestamp_ms;            /* commit time, ms since the epoch */
    const char *operation;           /* "append", "overwrite", ...; "" when unknown */
    const char *manifest_list;       /* "" for a v1 snapshot without one */
    size_t property_count;           /* summary properties, operation included */
} floe_snapshot_info;

/* Snapshots in the order the metadata lists them (commit order). */
size_t floe_table_snapshot_count(const floe_table *table);
/* Snapshot i (0 <= i < count); FLOE_EINVAL when out of range. */
int floe_table_snapshot(const floe_table *table, size_t i, floe_snapshot_info *out,
                        size_t size, floe_error *err);
/* Summary property `key` of snapshot i ("floe.frontier", "total-records",
 * ...), or NULL when absent. */
const char *floe_table_snapshot_property(const floe_table *table, size_t i, const char *key);
/* Summary property j of snapshot i (0 <= j < property_count), in stored
 * order; FLOE_EINVAL when out of range. */
int floe_table_snapshot_property_at(const floe_table *table, size_t i, size_t j,
                                    const char **key, const char **value, floe_error *err);

/* What a table records of floe sinks (SPEC 5.1): their ids and where each
 * stands on the history of branch main. */
typedef enum floe_progress_state {
    FLOE_PROGRESS_NONE = 0,       /* no snapshot of the sink id on main's history */
    FLOE_PROGRESS_FOUND = 1,      /* its newest one there says where it stands */
    FLOE_PROGRESS_UNKNOWN = 2,    /* main's history is cut (expired) before one */
} floe_progress_state;

typedef struct floe_sink_progress {
    size_t size;                    /* the bytes the library filled in (see "Growing") */
    floe_progress_state state;
    char frontier[32];            /* FOUND: "[t]" or "[]"; else "" */
    uint64_t sink_version;        /* FOUND */
    int64_t snapshot_id;          /* FOUND: the snapshot recording it; else -1 */
    int64_t tag_snapshot_id;      /* the sink's tag floe-<sink id>, or -1 */
} floe_sink_progress;

/* The sink ids the table knows (from floe-* tags and main's history), as
 * one allocation the caller frees with floe_free: *ids is an array of *n
 * strings. */
int floe_table_sink_ids(const floe_table *table, char ***ids, size_t *n, floe_error *err);
/* Where sink `sink_id` stands in the table as last loaded.  May read older
 * metadata files when main's history was expired. */
int floe_table_sink_progress(const floe_table *table, const char *sink_id,
                             floe_sink_progress *out, size_t size, floe_error *err);

/* ------------------------------------------------------------------------
 * Table maintenance (docs/maintenance.md): what keeps a table that is
 * committed to every second small and fast to read.  Every operation is
 * safe while other writers (a floe sink, Spark, ...) commit to the table:
 * commits assert what they depend on and are retried or rebased, and no
 * file a snapshot or ref still reaches is ever deleted.  Manifest merging
 * (commit.manifest-merge.enabled, commit.manifest.min-count-to-merge,
 * commit.manifest.target-size-bytes) and metadata file cleanup
 * (write.metadata.previous-versions-max,
 * write.metadata.delete-after-commit.enabled) happen on every floe commit.
 * ---------------------------------------------------------------------- */

/* A table's debt: what makes reading it cost more than reading its rows
 * compacted into few files, as of its current snapshot. */
typedef struct floe_table_debt {
    size_t size;                    /* the bytes the library filled in (see "Growing") */
    uint64_t data_files;             /* live data files */
    uint64_t small_data_files;       /* of them, below 75% of target_file_size */
    uint64_t data_bytes, data_rows;  /* their size and rows (deletes not applied) */
    uint64_t delete_files;           /* live delete files (each DV counts one) */
    uint64_t position_delete_files, deletion_vectors, equality_delete_files;
    uint64_t deleted_rows;           /* rows position deletes and DVs delete */
    uint64_t equality_deletes;       /* rows of equality delete files */
    double deleted_ratio;            /* deleted_rows / data_rows (0 when no rows) */
    uint64_t data_manifests, delete_manifests;   /* in the current manifest list */
    uint64_t snapshots;              /* in the metadata */
    int64_t oldest_snapshot_age_ms;  /* now minus the oldest snapshot's time; -1: none */
    uint64_t metadata_bytes;         /* the current metadata file, as JSON */
    uint64_t metadata_log_files;     /* earlier metadata files its log lists */
    uint64_t target_file_size;       /* write.target-file-size-bytes (default 512 MiB) */
    /* Live data files written under an older partition spec than the
     * table's current one (floe maintain --compact-old-specs rewrites them
     * into it; readers cannot prune them by the current spec). */
    uint64_t old_spec_data_files;
} floe_table_debt;

/* Read the table's debt (its manifests are read; the metadata as last
 * loaded). */
int floe_table_debt_get(floe_table *table, floe_table_debt *out, size_t size, floe_error *err);
/* The debt per partition (spec id and partition tuple) as JSON text
 * (caller frees with floe_free): {"partitions": N, "worst": [{"spec_id",
 * "partition": {"field name": value, ...} (null when the spec no longer
 * binds to the current schema), "data_files", "small_data_files",
 * "data_rows", "data_bytes", "delete_files", "deleted_rows"}, ...]}, the
 * partitions with the most files (data and delete) first, at most `max`
 * of them (0: all).  An unpartitioned table has one partition, {}. */
int floe_table_partition_debt(floe_table *table, size_t max, char **out, floe_error *err);

/* What floe_table_maintain does; start from floe_maintain_options_init
 * (everything off).  Steps run in this order: compaction, expiry, orphan
 * removal. */
typedef struct floe_maintain_options {
    size_t size;                    /* set by floe_maintain_options_init ("Growing") */
    /* Compaction: bin-pack data files smaller than 75% (or larger than
     * 180%) of the target size, or with at least 30% of their rows deleted,
     * into files of the target size with every delete applied, and drop the
     * delete files nothing needs any more; each group is one `replace`
     * snapshot that validates like Java's RewriteFiles.  The table
     * properties floe.compact.min-file-ratio, floe.compact.max-file-ratio,
     * floe.compact.delete-ratio and floe.compact.min-input-files (default
     * 5) change the thresholds. */
    int compact;
    uint64_t target_file_size;       /* 0: write.target-file-size-bytes (512 MiB) */
    int compact_all;                 /* 1: rewrite every data file (into the current spec) */
    /* 1: also rewrite the data files written under an older partition spec
     * into the table's current one, each row into its partition's file
     * there (without it they keep their spec; compaction packs only files
     * of the current spec). */
    int compact_old_specs;
    uint64_t compact_max_bytes;      /* stop starting groups past this much read; 0: no limit */
    /* Expiry (Java's ExpireSnapshots rules and properties; see the doc):
     * snapshots past the age limit beyond the newest retain_last of each
     * branch, refs past their max-ref-age-ms, and the files only they
     * reached. */
    int expire;
    int64_t expire_older_than_ms;    /* -1: history.expire.max-snapshot-age-ms (5 days) */
    int retain_last;                 /* 0: history.expire.min-snapshots-to-keep (1) */
    /* Orphan removal: files under the table's locations that no metadata
     * reaches, last modified before now minus the window. */
    int remove_orphans;
    int64_t orphan_older_than_ms;    /* -1: one day */
    /* 1: decide and count, change and delete nothing. */
    int dry_run;
} floe_maintain_options;

void floe_maintain_options_init(floe_maintain_options *opts, size_t size);

/* What a maintenance run did (or, in a dry run, would do). */
typedef struct floe_maintain_report {
    size_t size;                    /* the bytes the library filled in (see "Growing") */
    /* compaction */
    uint64_t compact_groups, compact_groups_failed, compact_conflicts;
    uint64_t files_rewritten, files_written, delete_files_dropped;
    uint64_t rows_rewritten, bytes_rewritten, bytes_written;
    /* expiry */
    uint64_t snapshots_expired, refs_removed;
    uint64_t manifest_lists_deleted, manifests_deleted, data_files_deleted,
        delete_files_deleted, statistics_files_deleted;
    /* orphan removal */
    uint64_t files_listed, orphans_found, orphans_too_young, orphans_deleted;
    uint64_t bytes_deleted;          /* by expiry and orphan removal */
    uint64_t delete_failures;        /* files that could not be deleted (kept) */
    uint64_t compact_ms, expire_ms, orphans_ms;
} floe_maintain_report;

/* Run the steps `o` asks for on `table` (reloaded first and after every
 * change).  report (may be NULL) receives what was done, also when a step
 * fails (the steps before it stay done).  Errors: the catalog's and
 * storage's; FLOE_EUNSUPPORTED for tables floe cannot write (format 1). */
int floe_table_maintain(floe_table *table, const floe_maintain_options *o,
                        floe_maintain_report *report, size_t report_size, floe_error *err);

/* ------------------------------------------------------------------------
 * Writing files.  Writers put rows into Parquet files under the table's
 * data location, rolling over to a new file at a target size.  Files become
 * part of the table only when a commit adds them; until then they are
 * invisible to readers, and aborting a writer (or freeing an uncommitted
 * commit) removes them.  A writer uses its table: free writers before the
 * table, and use them from the table's thread.
 * ---------------------------------------------------------------------- */
typedef struct floe_write_options {
    size_t size;                    /* set by floe_write_options_init ("Growing") */
    const floe_parquet_options *parquet;  /* NULL: floe_parquet_options_init's */
    uint64_t target_file_size;       /* roll over at this estimated size; default 512 MiB */
    const char *prefix;              /* file name prefix; NULL: "data" / "delete" */
} floe_write_options;

/* Fill `o` with the defaults (later versions append fields). */
void floe_write_options_init(floe_write_options *opts, size_t size);
/* The options the table's write properties ask of its data files (what
 * floe_data_writer_new does with opts NULL), to adjust and pass as opts:
 * into `out` and `parquet` (both set up by their _init), out->parquet
 * pointing to `parquet`; errors as floe_data_writer_new's for a property
 * floe cannot follow. */
int floe_table_write_options(floe_table *table, floe_write_options *out,
                             floe_parquet_options *parquet, floe_error *err);

typedef struct floe_file_writer floe_file_writer;

/* Data files, rows of floe_table_schema(table).  opts NULL: as the table's
 * write properties ask (write.parquet.compression-codec, -level,
 * -row-group-size-bytes, -page-size-bytes, -dict-size-bytes,
 * write.target-file-size-bytes; delete writers their write.delete.* forms
 * first), FLOE_EINVAL / FLOE_EUNSUPPORTED naming a property floe cannot
 * follow; opts given: exactly those.
 * On a partitioned table, rows are held per partition and each
 * partition's written as one file when the writer goes to a commit (or
 * past the target file size), each file carrying its partition to it.
 * FLOE_EUNSUPPORTED for a table floe cannot write (format version 1). */
int floe_data_writer_new(floe_table *table, const floe_write_options *opts,
                         floe_file_writer **out, floe_error *err);
/* Equality delete files on the top-level columns `columns` (primitive
 * columns of the table): each row written deletes every row of earlier
 * snapshots whose key columns equal it.  Rows are of
 * floe_file_writer_schema(w).  FLOE_EINVAL for an unknown or nested
 * column.  On a partitioned table whose every partition source column is
 * among `columns`, each file holds one partition's keys and applies to
 * that partition; otherwise the deletes are global (the commit puts them
 * in an unpartitioned spec, adding one to the table when it has none), as
 * they also are when the table has live data files of another spec. */
int floe_equality_delete_writer_new(floe_table *table, const char *const *columns,
                                    size_t n_columns, const floe_write_options *opts,
                                    floe_file_writer **out, floe_error *err);
/* The schema of the rows the writer takes; owned by the writer (for data
 * writers, the table's schema). */
const floe_schema *floe_file_writer_schema(const floe_file_writer *w);
/* Write one row, which must have been made for floe_file_writer_schema(w)
 * (FLOE_EINVAL otherwise).  *path and *pos (either may be NULL) receive the
 * data file and 0-based row position the row went to, for position deletes;
 * the path is owned by the writer and valid until it is handed to a commit
 * or aborted.  A failure other than FLOE_EINPUT/FLOE_EINVAL breaks the
 * writer (abort it). */
int floe_file_writer_write(floe_file_writer *w, const floe_row *row, const char **path,
                           uint64_t *pos, floe_error *err);
uint64_t floe_file_writer_rows(const floe_file_writer *w);
/* Discard the writer and remove its files.  Accepts NULL. */
void floe_file_writer_abort(floe_file_writer *w);

typedef struct floe_position_delete_writer floe_position_delete_writer;

/* Position deletes: each (data file path, row position) deletes one row of
 * a data file (of an earlier snapshot, or of this commit).  Kept in memory
 * and written sorted when added to a commit.  On a partitioned table the
 * commit writes them when submitted, each data file's into a file-scoped
 * delete file (a deletion vector on format 3) with that file's partition
 * (so floe_commit_file_count does not count them). */
int floe_position_delete_writer_new(floe_table *table, const floe_write_options *opts,
                                    floe_position_delete_writer **out, floe_error *err);
int floe_position_delete_add(floe_position_delete_writer *w, const char *data_file,
                             uint64_t pos, floe_error *err);
uint64_t floe_position_delete_count(const floe_position_delete_writer *w);
/* Discard the writer.  Accepts NULL. */
void floe_position_delete_writer_abort(floe_position_delete_writer *w);

/* ------------------------------------------------------------------------
 * Commits.  A floe_commit gathers the files of one snapshot and its summary
 * properties, then commits them at once: readers see all of it or none.
 * ---------------------------------------------------------------------- */
typedef struct floe_commit floe_commit;

/* A new, empty commit for `table` (which must outlive it). */
int floe_commit_new(floe_table *table, floe_commit **out, floe_error *err);
/* Finish writer `w` and add its files.  The commit takes `w` and frees it
 * whether or not this succeeds (on failure its files are removed). */
int floe_commit_add_files(floe_commit *c, floe_file_writer *w, floe_error *err);
/* The same for position deletes (written now, sorted by path then
 * position). */
int floe_commit_add_position_deletes(floe_commit *c, floe_position_delete_writer *w,
                                     floe_error *err);
/* Set a summary property of the snapshot (copied), e.g. "floe.frontier".
 * The standard ones ("operation", "added-*", "total-*",
 * "changed-partition-count") are computed and may not be set
 * (FLOE_EINVAL). */
int floe_commit_set_property(floe_commit *c, const char *key, const char *value,
                             floe_error *err);
/* Files added so far. */
size_t floe_commit_file_count(const floe_commit *c);
/* Commit the files as one snapshot on top of snapshot `base_snapshot_id`
 * (-1: the table has no snapshot yet): main must still point at it, so a
 * concurrent change is a conflict, never a silent duplicate.  The operation
 * is "append" (only data files), "delete" (only delete files) or
 * "overwrite" (both); an empty commit is an "append" and is allowed (it records properties).  Results:
 *   FLOE_OK            committed; *snapshot_id (may be NULL) is the new
 *                      snapshot and the table handle shows it.
 *   FLOE_ECONFLICT     the table moved (or the handle is stale): nothing
 *                      changed.  floe_table_refresh, decide, and submit again
 *                      with the new base (the files stay in the commit).
 *   FLOE_EUNKNOWN_OUTCOME  it may or may not have landed: refresh and look
 *                      (e.g. for your summary property) before retrying.
 *   other codes        nothing was committed.
 * After FLOE_OK the commit is spent (only floe_commit_free is allowed). */
int floe_commit_submit(floe_commit *c, int64_t base_snapshot_id, int64_t *snapshot_id,
                       floe_error *err);
/* Free the commit.  Files of a commit that never reached the catalog, or
 * that got only conflicts, are removed; committed files (and those of an
 * unknown outcome) are kept.  Accepts NULL. */
void floe_commit_free(floe_commit *c);
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

/* The largest multiplicity of one update, and of one consolidated (row,
 * time): append mode writes |diff| rows for it. */
#define FLOE_SINK_MAX_DIFF 1000000

typedef enum floe_sink_mode {
    FLOE_SINK_MODE_AUTO = 0,        /* upsert when a key is given, append otherwise */
    FLOE_SINK_MODE_UPSERT = 1,      /* without a key: the whole row is the key */
    FLOE_SINK_MODE_APPEND = 2,
} floe_sink_mode;

/* Whether the sink maintains its table while it runs. */
typedef enum floe_maintain_mode {
    FLOE_MAINTAIN_AUTO = 0,
    FLOE_MAINTAIN_OFF = 1,
} floe_maintain_mode;

/* How upsert mode deletes a row of an earlier commit (SPEC 6). */
typedef enum floe_delete_mode {
    /* By position (format 2) or deletion vector (format 3), found in a key
     * index of the table's live rows: every engine reads such tables, and
     * reads them fast.  The index is kept on local disk between runs
     * (index_dir) and rebuilt from the table when it is missing.  On a
     * table whose property write.update.mode is copy-on-write, each commit
     * instead rewrites the data files it deletes rows from, so readers meet
     * no delete file (docs/sink.md). */
    FLOE_DELETE_POSITION = 0,
    /* Equality deletes on the key: no index, but readers must check every
     * delete against every older data file (slow, and pyiceberg and some
     * engines cannot read them). */
    FLOE_DELETE_EQUALITY = 1,
} floe_delete_mode;

/* Options; start from floe_sink_options_init().  Every string (those of
 * connect and the properties array too) is copied by floe_sink_open: the
 * caller's may be freed once it returns. */
typedef struct floe_sink_options {
    size_t size;                    /* set by floe_sink_options_init ("Growing") */
    const char *table;              /* "NS.NAME" (required) */
    const char *schema;             /* column list (SPEC 3); NULL: the existing table's */
    const char *key;                /* key columns "a,b"; NULL: none */
    floe_sink_mode mode;
    const floe_connect_options *connect;  /* the catalog and storage; NULL: the
                                       defaults (and environment) */
    uint64_t commit_interval;       /* in the input's time units; default 10000 */
    uint64_t as_of;                 /* default 0 */
    const char *sink_id;            /* NULL: the table name "NS.NAME" */
    uint64_t sink_version;          /* default 1 */
    /* Default FLOE_COMPRESSION_DEFAULT: the table's write properties
     * (write.parquet.compression-codec, -level; zstd at its default level when
     * unset); the table's other write.parquet.* settings always apply. */
    floe_compression compression;
    int compression_level;          /* 0: the table's, else the codec's default */
    uint64_t target_file_size;      /* data file roll-over size; 0 (default): the table's
                                       write.target-file-size-bytes, else 512 MiB */
    /* Memory for updates held before spilling and, in position mode, the
     * key index's memory tier (half each; beyond it the index spills to
     * disk too).  0: 512 MiB for updates, 256 MiB for the index.  Set, it
     * also caps the Parquet row group a data file buffers (an eighth of
     * it, at least 4 MiB; below the table's write.parquet.row-group-size-bytes
     * only then) and a batch's key index log (a sixteenth). */
    size_t memory_limit;
    const char *spill_dir;          /* NULL: $TMPDIR or /tmp */
    floe_delete_mode delete_mode;   /* upsert mode only; default FLOE_DELETE_POSITION */
    /* Where position mode keeps its key index between runs (a directory per
     * table and sink id, locked while a sink uses it).  NULL: $FLOE_STATE_DIR,
     * else $XDG_STATE_HOME/floe, else $HOME/.local/state/floe; "": nowhere
     * (the index is rebuilt from the table at every start). */
    const char *index_dir;
    /* The Iceberg format version of a table floe creates: 2 (0: the
     * default) or 3 (deletion vectors).  An existing table keeps its own;
     * asking for another is FLOE_EINVAL. */
    int format_version;
    /* Called with each warning (e.g. a primary-key violation); may be NULL. */
    void (*on_warning)(void *ctx, const char *message);
    void *warning_ctx;
    /* Called after each commit with the new frontier ("[t]" or "[]") and
     * snapshot id: the moment to acknowledge the input upstream. */
    void (*on_commit)(void *ctx, const char *frontier, int64_t snapshot_id);
    void *commit_ctx;
    /* Resume explicitly at this frontier ("[t]", "t" or "[]") when the
     * table holds rows but its record of this sink's progress was lost
     * (history expired: SPEC 5.1).  Refused (FLOE_EINVAL) when the table
     * records another frontier for this sink.  NULL: the table says. */
    const char *resume_from;
    /* 1: this sink id is new to a table that already holds rows (written by
     * other writers or sink ids).  Without it such a table is refused
     * (FLOE_ESTATE, listing the sink ids the table knows): starting from
     * scratch there could double rows.  An empty table needs no such word. */
    int new_sink;
    /* Table maintenance while the sink runs (docs/maintenance.md).
     * FLOE_MAINTAIN_AUTO (the default) compacts the files most in need,
     * expires snapshots past the table's history.expire.* limits and
     * removes orphan files, on a thread of its own with its own catalog
     * connection, within maintain_budget of wall time; its commits race
     * the sink's like any other writer's and lose no update.  Its warnings
     * reach on_warning from that thread.  FLOE_MAINTAIN_OFF leaves the
     * table to other tools (floe maintain, Spark). */
    floe_maintain_mode maintain;
    double maintain_budget;          /* share of wall time, (0, 1]; 0: 0.2 */
    int64_t orphan_age_ms;           /* orphan safety window; 0: one day */
    int64_t orphan_interval_ms;      /* orphan removal every...; 0: hour; -1: never */
    /* When the run ends (floe_sink_free after the sink's last advance or
     * finish succeeded), FLOE_MAINTAIN_AUTO compacts what is still due, in
     * the caller's thread, for at most this long, so that a table fed
     * faster than maintenance kept up (a backfill, a catch-up) is left
     * compacted; skipped in a member that does not hold the maintenance
     * lease (floe kafka).  0: 10000; -1: no final pass. */
    int64_t maintain_final_ms;
    /* Table properties for a table the sink creates, {"k1", "v1", ...,
     * NULL}; NULL: none.  Sink-created tables get floe's defaults unless
     * given here: write.metadata.delete-after-commit.enabled=true and
     * history.expire.max-snapshot-age-ms=3600000 (an hour of snapshots). */
    const char *const *properties;
    /* The partition spec of a table the sink creates, in Spark's DDL
     * transform syntax ("day(ts), bucket(16, id)", SPEC 4); NULL:
     * unpartitioned.  An existing table is written with its own spec,
     * whichever writer made it; given and different from that spec, the
     * sink's first batch changes the table's spec to it (SPEC 4: files
     * written before keep theirs). */
    const char *partition_by;
    /* 1: the caller decides when snapshots are made.  Every
     * floe_sink_advance that moves the frontier past what is committed
     * closes one batch [last upper, new frontier) and commits it;
     * commit_interval is not used.  For time lines whose units say nothing
     * of wall-clock time (a Postgres LSN), with a clock of the caller's.
     * 0 (default): batches of commit_interval time units (SPEC 5). */
    int commit_on_advance;
    /* Called with what the sink decides on its own (a schema change and
     * when it lands, the key index rebuilt for new key columns); may be
     * NULL.  From the sink's thread. */
    void (*on_notice)(void *ctx, const char *message);
    void *notice_ctx;
    /* How long a commit that other writers keep beating (a compactor
     * committing while the sink does: each conflict is rebased onto and
     * tried again) goes on before the sink gives up, in wall-clock
     * milliseconds since the first conflict of that commit.  0: 600000
     * (ten minutes).  Failures of other kinds are bounded by count. */
    int64_t commit_timeout_ms;
} floe_sink_options;

void floe_sink_options_init(floe_sink_options *opts, size_t size);

/* Open the catalog, load or create the table (checking a declared schema
 * against an existing table), read where the table says the sink stands
 * (SPEC 5.1: this sink id's newest snapshot on main's history; other
 * writers' snapshots are passed over) and whether this sink version is
 * fenced (FLOE_EFENCED).  Every option is checked before anything is
 * created.  FLOE_ESTATE when the table holds rows this sink id cannot
 * account for, or its progress cannot be recovered: the message says what
 * happened and which option (new_sink, resume_from) goes on. */
int floe_sink_open(const floe_sink_options *opts, floe_sink **out, floe_error *err);
void floe_sink_free(floe_sink *sink);

/* The frontier the sink resumes at, "[t]" / "[]", or NULL for a fresh
 * start.  Input below it is skipped (it is committed already). */
const char *floe_sink_resume_frontier(const floe_sink *sink);
/* Position mode: one sentence on how the key index started (loaded from
 * its checkpoint and log, rebuilt from the table and why, or empty), with
 * its size and the time it took; NULL in equality and append mode.  Owned
 * by the sink. */
const char *floe_sink_index_report(const floe_sink *sink);
/* 1 when the table already records the empty frontier for this sink: its
 * input was closed.  Pushing an update then is FLOE_ESTATE. */
int floe_sink_complete(const floe_sink *sink);

/* One NDJSON change record (SPEC 2): an update or a progress record
 * ({"progress": null} closes the input, as floe_sink_finish).  Errors
 * (FLOE_EINPUT) say why; the caller adds the line number. */
int floe_sink_push_json(floe_sink *sink, const char *line, size_t len, floe_error *err);
/* One update.  `row` must be of floe_sink_row_schema(sink).  |diff| is at
 * most FLOE_SINK_MAX_DIFF, and so is the sum of the diffs of one (row,
 * time) (FLOE_ELIMIT beyond).  An update for a sink whose input was closed
 * is FLOE_ESTATE. */
int floe_sink_push(floe_sink *sink, const floe_row *row, uint64_t time, int64_t diff,
                   floe_error *err);
/* The schema input rows are parsed with (owned by the sink). */
const floe_schema *floe_sink_row_schema(const floe_sink *sink);
/* A retraction by key: whichever row the key of `row` has live is
 * retracted at `time` (only the key columns of `row` are read; the others
 * may be null, even in not-null columns).  For sources that name the row
 * an update or delete replaces by its key alone (a Postgres table with
 * REPLICA IDENTITY DEFAULT).  The live row is the key's row from an earlier
 * time: the row an update of an earlier time in the same batch inserted,
 * or the table's live row (position mode finds it in the key index;
 * equality mode writes an equality delete on the key).  At one time
 * retractions come before insertions (SPEC 6), so a retraction by key
 * never takes a row inserted at the same time.  No "row differs" warning;
 * a key with no live row is warned about and counted
 * (retractions_missing).  Upsert mode with declared key columns only
 * (FLOE_EINVAL otherwise); the other rules of floe_sink_push apply. */
int floe_sink_retract_key(floe_sink *sink, const floe_row *row, uint64_t time,
                          floe_error *err);
/* The time of the snapshot batch (floe_sink_options.as_of), for a source
 * that learns it only after opening the sink (a replication slot's
 * consistent point).  Only for a fresh sink (floe_sink_resume_frontier is
 * NULL) before any push or advance: FLOE_ESTATE otherwise. */
int floe_sink_set_as_of(floe_sink *sink, uint64_t as_of, floe_error *err);
/* A summary property every snapshot the sink commits from now on carries
 * (key and value copied; the value replaces an earlier one), e.g. the
 * source a table is fed from.  The key must start with "floe." and must
 * not be one the sink writes itself (floe.frontier, floe.sink-id,
 * floe.sink-version, floe.attempt-id): FLOE_EINVAL. */
int floe_sink_set_property(floe_sink *sink, const char *key, const char *value,
                           floe_error *err);
/* The input's schema changes at `time` (SPEC.md section 4): updates at
 * `time` and later are in `schema` (a column list parsed by
 * floe_schema_parse; copied), those before it in the schema the sink had.
 * The table's schema evolves by Iceberg's rules: columns are matched by
 * name, a column declared `b bigint was a` renames a (its field id kept);
 * new columns get fresh field ids (nullable, or, on format 3, with a
 * default: their initial-default and write-default); types may widen (int
 * to long, float to double, decimal precision up; on format 3 date to
 * timestamp), not null may become nullable; columns not declared are
 * dropped.  Everything before `time` is committed first (the batch that
 * holds it ends there), and the snapshot after it makes the new schema the
 * table's current one together with the first rows written in it.
 * Updates the sink holds at `time` or later are carried into the new
 * shape.  A schema the table has already (and the same key) changes
 * nothing and commits nothing.  `key` (upsert mode; NULL: the same key columns, followed through
 * renames) names the key columns from now on; when the key columns or
 * their types change, the key index is read again from the table.
 * Afterwards rows are made with the new floe_sink_row_schema() (the
 * earlier schemas stay valid until the sink is freed).  A `time` below
 * the sink's resume frontier is input replayed after a restart: the
 * schema is what lines are read with from there on, and a change Iceberg
 * refuses is only raised at the first update past the resume frontier.
 * Errors: FLOE_EINCOMPATIBLE naming the column and the rule a change
 * breaks (nothing of it is committed); FLOE_EINPUT for a time behind the
 * frontier; the commit's errors.  After a failure other than a refusal
 * the sink must be freed. */
int floe_sink_evolve(floe_sink *sink, uint64_t time, const floe_schema *schema, const char *key,
                     floe_error *err);
/* The table's partition spec changes at `time` (SPEC.md section 4) to
 * `spec`, written as Spark's DDL writes one ("day(ts), bucket(16, id)",
 * "" for unpartitioned) over the sink's current columns.  Everything before
 * `time` is committed first in the spec it was written in (the batch that
 * holds it ends there); files written from `time` on are in the new spec,
 * which the snapshot after it adds and makes the table's default together
 * with them (a field some spec of the table has keeps its field id; an
 * equal spec the table has keeps its spec id).  Files of the older spec
 * stay as they are and readers prune each file by its own spec.  The
 * spec the sink writes in already changes nothing.  A `time` below the
 * sink's resume frontier is input replayed after a restart: the spec is
 * what files are written in from the resume frontier on.  Errors:
 * FLOE_EINVAL for a spec that does not parse or names no column;
 * FLOE_EINPUT for a time behind the frontier; the commit's errors. */
int floe_sink_repartition(floe_sink *sink, uint64_t time, const char *spec, floe_error *err);
/* Every row before `time` is gone (a source's TRUNCATE): the snapshot that
 * holds `time` removes every data and delete file the table has (no row is
 * read) and adds only what the updates at `time` and later leave, in one
 * commit (operation `overwrite`, or `delete` when nothing is left); updates
 * pushed below `time` that are not committed yet are dropped, and the key
 * index starts again from the rows left.  Older snapshots keep the old rows.
 * The frontier moves to `time` (everything before it is committed first),
 * except with commit_on_advance: then the truncation lands inside the batch
 * that holds `time` (the first advance past it commits that batch), which
 * drops its updates below `time` (a source's transaction, pushed at time T
 * and truncated at T+1, stays whole); several may wait at once.
 * A `time` below the sink's resume frontier is input replayed after a
 * restart: nothing happens.  Errors: FLOE_EINPUT for a time behind the
 * frontier, or not past a fresh sink's as-of time (where earlier updates
 * are gathered); FLOE_ESTATE during a resync or for a complete table. */
int floe_sink_truncate(floe_sink *sink, uint64_t time, floe_error *err);
/* The input frontier moves to `time`: every update still to come has a time
 * >= it.  Closed batches are written and committed before this returns. */
int floe_sink_advance(floe_sink *sink, uint64_t time, floe_error *err);
/* This input ends here, but the stream does not (a later run brings the
 * next file, the rest of the stream): commit every update pushed and record
 * the frontier just past the newest update, or the input frontier if that
 * is later (SPEC 2, 5.7), so a later run continues.  Nothing more may be
 * pushed afterwards. */
int floe_sink_end(floe_sink *sink, floe_error *err);
/* The input is complete: commit everything; the table then records "[]"
 * for this sink, and a later run with updates is an error. */
int floe_sink_finish(floe_sink *sink, floe_error *err);

typedef struct floe_sink_stats {
    size_t size;                    /* the bytes the library filled in (see "Growing") */
    uint64_t updates_in, bytes_in;          /* pushed */
    uint64_t updates_stashed;               /* waiting for the frontier */
    uint64_t snapshots_committed, lost_responses, commit_conflicts, commit_failures;
    uint64_t data_files, delete_files;      /* committed (delete files: each DV counts one) */
    uint64_t rows_committed, bytes_committed;
    uint64_t pk_violations;
    uint64_t commit_seconds_total_us, close_seconds_total_us;  /* microseconds, summed */
    uint64_t commit_p50_us, commit_p99_us;  /* over the last 100 commits (0: none yet) */
    uint64_t batches_sealed;
    int input_frontier_empty;               /* input closed */
    uint64_t input_frontier;
    int has_committed_frontier, committed_frontier_empty;
    uint64_t committed_frontier;
    /* Wall-clock staleness of the table: seconds since the oldest input
     * (update or progress record) that no commit covers yet arrived; 0 when
     * everything read is committed. */
    double freshness_seconds;
    uint64_t batches_skipped;               /* already committed by an earlier run */
    /* Position mode's key index (all 0 otherwise). */
    uint64_t index_keys;                    /* live rows it holds */
    uint64_t index_memory_bytes, index_disk_bytes;
    uint64_t index_rebuilds;                /* full reads of the table's files */
    uint64_t index_snapshots_synced;        /* other writers' snapshots read */
    uint64_t index_rows_read;               /* rows read back from data files (builds, syncs) */
    uint64_t index_rows_moved;              /* re-pointed after the sink's own compactions
                                               and copy-on-write commits */
    uint64_t deletes_retargeted;            /* moved onto a file a compaction wrote */
    uint64_t retractions_missing;           /* retracted a key with no live row */
    uint64_t retractions_mismatched;        /* retracted a row other than the key's live row */
    /* Maintenance (FLOE_MAINTAIN_AUTO); the table's debt as its last round
     * saw it: floe_sink_debt_get. */
    uint64_t maintenance_runs, maintenance_failures;
    uint64_t maintenance_us;                /* time spent, summed */
    uint64_t compactions, files_compacted, deletes_carried;
    uint64_t snapshots_expired, files_removed, bytes_removed, orphans_removed;
    /* Copy-on-write commits (the table's write.update.mode): data files
     * they rewrote and the rows the new files hold. */
    uint64_t files_rewritten, rows_rewritten;
    /* Of the files a copy-on-write attempt rewrote, those whose rewrite
     * the next attempt took over after a conflict (another writer changed
     * other files): the rewrite is redone only for files it changed. */
    uint64_t rewrites_reused;
} floe_sink_stats;
/* Current figures: the input counters, the input frontier and the
 * freshness are read live (they never lag the input), the rest as of the
 * last commit or close. */
void floe_sink_stats_get(const floe_sink *sink, floe_sink_stats *out, size_t size);
/* The table's debt as the sink's maintenance last saw it (its rounds
 * read it; FLOE_MAINTAIN_AUTO only): 1 and *out filled, or 0 before the
 * first round.  From any thread. */
int floe_sink_debt_get(const floe_sink *sink, floe_table_debt *out, size_t size);
/* The Prometheus text exposition of the sink's metrics (caller frees). */
int floe_sink_metrics(const floe_sink *sink, char **out, floe_error *err);

/* ------------------------------------------------------------------------
 * Postgres: tables of a Postgres database mirrored into Iceberg tables,
 * exactly once, through logical replication (docs/postgres.md).
 *
 * One replication slot (plugin pgoutput) and one publication feed one floe
 * sink per table (sink id "pg:<slot>:<schema>.<table>", upsert mode keyed
 * by the primary key or the replica identity index, position deletes).
 * Time is the LSN: a transaction's changes get its commit LSN.  A table
 * without progress is first copied inside the snapshot the slot exported
 * (its snapshot batch; its frontier the slot's consistent point), then
 * follows the change stream.  Snapshots are made on a wall clock
 * (commit_interval_ms), and the slot's confirmed flush LSN is moved only to
 * the smallest frontier every table has committed (SPEC 7.5), so a rerun
 * after a crash (of floe or of Postgres) resumes each table at its own
 * frontier and loses or doubles nothing.  A floe_pg is driven from one
 * thread (floe_pg_run); floe_pg_stop, floe_pg_stats_get, floe_pg_metrics
 * and the sinks' stats may be called from any thread.
 * ---------------------------------------------------------------------- */
typedef struct floe_pg floe_pg;

/* Options; start from floe_pg_options_init().  Every string (those of
 * sink too) is copied by floe_pg_open: the caller's may be freed once it
 * returns. */
typedef struct floe_pg_options {
    size_t size;                    /* set by floe_pg_options_init ("Growing") */
    /* A libpq connection string or URI ("postgres://user@host/db",
     * "host=... dbname=..."); NULL: the PG* environment variables.  Never
     * printed: messages name host, port, database and user only. */
    const char *source;
    /* The tables to mirror, "schema.table,..." (a name without a schema
     * is in public; names are matched exactly, as stored).  NULL: every
     * table of the publication. */
    const char *tables;
    /* The publication the slot streams; NULL: the slot's name.  Missing
     * tables (or a missing publication) are an error naming the statement
     * that fixes it, unless create_publication is 1: then floe creates the
     * publication for the tables, or adds the missing ones. */
    const char *publication;
    int create_publication;
    const char *slot;               /* NULL: "floe"; [a-z0-9_], at most 63 */
    /* The Iceberg table of schema.table: NAMESPACE.table, with NAMESPACE
     * this (NULL: the Postgres schema), unless table_map says otherwise:
     * "schema.table=ns.name,..." */
    const char *namespace_name;
    const char *table_map;
    /* Tables to copy again in place, "schema.table,..." (each must be one
     * of the mirrored tables): inside the snapshot of a temporary slot,
     * while the others stream on, committed as one snapshot that replaces
     * every file of the Iceberg table (its history kept).  The recovery for
     * a table that went wrong; floe does the same by itself for a change of
     * shape Iceberg cannot take in place (docs/postgres.md).  NULL: none. */
    const char *resync;
    /* For every table's sink: connect (catalog and storage), compression,
     * compression_level, target_file_size, memory_limit (for all tables
     * together: three quarters split evenly among the sinks, the rest for
     * the stream; 0: 1 GiB), spill_dir (also streamed transactions'), delete_mode,
     * index_dir, format_version, sink_version, maintain, maintain_budget,
     * orphan_age_ms, orphan_interval_ms, commit_timeout_ms, properties, on_warning and
     * warning_ctx (warnings of the mirror and of the tables' maintenance
     * threads too, from those threads).  The other fields are floe's to
     * set.  NULL: floe_sink_options_init's. */
    const floe_sink_options *sink;
    /* Wall-clock milliseconds between the snapshots of a table that has
     * changes (default 10000), and between those that only record the
     * progress of a table without changes (default 60000): the slot can
     * only move past a frontier every table has committed. */
    uint64_t commit_interval_ms;
    uint64_t idle_commit_interval_ms;
    /* The largest bytes of rows one transaction may leave per key in
     * tables whose old rows Postgres does not send (REPLICA IDENTITY
     * DEFAULT or USING INDEX; see docs/postgres.md).  0: 1 GiB.  A
     * streamed transaction (txn_streaming) needs it only for the keys it
     * changes more than once. */
    size_t txn_memory;
    /* 1 (floe_pg_options_init): on a server of version 14 or later, ask
     * for in-progress transactions (pgoutput protocol 2, streaming 'on'):
     * a transaction larger than the server's logical_decoding_work_mem
     * comes while it runs and is written to a file in sink.spill_dir
     * until it commits (then mirrored as one transaction) or aborts
     * (then dropped), so memory does not grow with it, and the rows it
     * leaves per key are no longer bounded by txn_memory.  0: protocol 1
     * (a transaction comes once committed). */
    int txn_streaming;
    /* Stop (floe_pg_run returns FLOE_OK) once every table has committed
     * everything below this LSN; 0: run until stopped.  stop_at_now: the
     * server's WAL position when streaming starts. */
    uint64_t stop_at_lsn;
    int stop_at_now;
    /* When this descriptor becomes readable, floe_pg_run stops as
     * floe_pg_stop makes it; -1 (the default): none. */
    int stop_fd;
    /* What floe does and finds (the slot it creates, tables it copies or
     * resumes): one sentence each; may be NULL. */
    void (*on_notice)(void *ctx, const char *message);
    void *notice_ctx;
    /* 1: mirror into this catalog although the slot exists and confirmed
     * progress that none of the tables here records (another catalog holds
     * this mirror, e.g. a relative catalog path run from another
     * directory): every table is copied, and the other catalog can no
     * longer resume from the slot.  Also: start a new slot when the slot
     * the tables record progress from is gone (floe_pg_retire, or dropped
     * by hand): every such table is copied again in place (a resync).
     * 0 (default): both are refused. */
    int new_mirror;
    /* A lost connection (a Postgres restart or shutdown, a network failure,
     * a walsender timeout) or another transient failure during
     * floe_pg_run: floe drops what is not committed, connects again with
     * backoff (100 ms doubling to 10 s) and resumes every table from its
     * committed frontier, for up to this many milliseconds of failing in a
     * row (floe_pg_options_init: 300000); 0: never gives up.  floe_pg_open
     * waits for a server it cannot reach the same way. */
    uint64_t reconnect_timeout_ms;
    /* The initial copy: connections (and threads) that copy at once, each
     * in the slot's exported snapshot; tables go in parallel, and a large
     * table in ranges of heap pages (CTID ranges, Postgres 14 and later).
     * 0: 2. */
    int copy_workers;
    /* The pages of one such range; 0: from the table's size (at least
     * 8192 pages, at most about 4 ranges per worker). */
    uint64_t copy_range_pages;
    /* Partition specs of Iceberg tables floe creates, per source table:
     * "SCHEMA.TABLE=SPEC,..." with SPEC in floe_sink_options partition_by's
     * syntax ("public.events=day(ts), bucket(16, id),public.t=id"; a part
     * with '=' starts the next table).  A table not named is unpartitioned;
     * an existing Iceberg table keeps its own spec (a different one named
     * here is FLOE_EINVAL).  Naming a table not mirrored is FLOE_EINVAL.
     * NULL: none. */
    const char *partition_by;
} floe_pg_options;

void floe_pg_options_init(floe_pg_options *opts, size_t size);

/* Connect, check the server (wal_level logical, the REPLICATION
 * privilege, SELECT on the tables, a UTF8 database), resolve the tables
 * (each needs a primary key or a replica identity; with equality deletes,
 * a table whose values Postgres may store out of line needs REPLICA
 * IDENTITY FULL), the
 * publication and the slot (a slot that is gone, invalidated or ahead of
 * a table's frontier is an error), and open a sink per table, creating
 * the Iceberg tables that are missing.  Errors name the table, the
 * server (without secrets) and the statement that fixes them:
 * FLOE_EPERM (privileges), FLOE_ESTATE (server settings, slot),
 * FLOE_EUNSUPPORTED (tables floe cannot mirror), FLOE_EINCOMPATIBLE (an
 * Iceberg table of another shape), FLOE_ENET (unreachable past
 * reconnect_timeout_ms), FLOE_EAUTH. */
int floe_pg_open(const floe_pg_options *opts, floe_pg **out, floe_error *err);
/* Copy the tables that need it, then stream until stopped
 * (FLOE_EINTERRUPTED, after committing every whole transaction received),
 * until stop_at_lsn is committed (FLOE_OK), or until a failure: the
 * connection (FLOE_ENET: run again), a value an Iceberg column cannot hold
 * (FLOE_EINPUT).  A TRUNCATE is mirrored (floe_sink_truncate).  After a failure
 * nothing past the tables' committed frontiers is visible; a rerun resumes
 * there.  ALTER TABLE of a mirrored table is followed, never a failure:
 * its Iceberg schema changes at the change's position in the stream, or
 * the table is copied again in place (docs/postgres.md). */
int floe_pg_run(floe_pg *pg, floe_error *err);
/* Ask floe_pg_run to stop.  From any thread or a signal handler. */
void floe_pg_stop(floe_pg *pg);
void floe_pg_free(floe_pg *pg);

/* Stop mirroring `tables` ("schema.table,...") of the mirror that opts
 * names (source, slot, publication, create_publication, namespace_name,
 * table_map, sink.connect; opts->tables is not used).  Refused while the
 * slot is in use (stop the running floe pg first).  Each table leaves the
 * publication when create_publication is 1; otherwise a warning gives the
 * ALTER PUBLICATION ... DROP TABLE that does it.  purge 0: its Iceberg
 * table stays, with its history; listed again later, it is copied again
 * in place (a resync), since the slot did not keep its changes meanwhile.
 * purge 1: its Iceberg table is dropped and every file its metadata
 * reaches deleted (refused for a table with snapshots of other writers
 * only); listed again, it is copied afresh.  The slot is not touched: a
 * table no run mirrors holds it back no more.  What was done goes to
 * opts->on_notice, one sentence per table.  Nothing is changed unless
 * every table passes its checks. */
int floe_pg_drop_tables(const floe_pg_options *opts, const char *tables, int purge,
                        floe_error *err);
/* After floe_pg_run returned FLOE_OK (stop_at_lsn or stop_at_now reached:
 * every table committed up to it), drop the replication slot, and the
 * publication when create_publication is 1 (else a notice gives the
 * DROP PUBLICATION).  The Iceberg tables, their history and the catalog
 * stay.  A later floe_pg_open of the same slot finds tables recording
 * progress from a slot that is gone: an error unless new_mirror (a new
 * slot, every table copied again in place).  FLOE_ESTATE (nothing
 * dropped) when floe_pg_run did not reach its stop LSN. */
int floe_pg_retire(floe_pg *pg, floe_error *err);
/* Verify the mirror (floe pg --verify, docs/postgres.md "Verifying a
 * mirror"), instead of floe_pg_run: a temporary slot exports a snapshot
 * consistent at C (held open on a connection of its own), the mirror
 * streams from its slot until every transaction committing below C is in
 * and advances every table to exactly C (the slot is confirmed there), and
 * then each table's Iceberg rows (the live rows of its current snapshot,
 * read back with floe's reader) are compared with its Postgres rows in that
 * snapshot (COPY, converted as the copy converts them), key by key:
 * digests of hash buckets of the key first, then the rows of the buckets
 * that differ, so memory stays bounded whatever the table's size.
 * on_table (may be NULL) hears each table's result as it is compared (the
 * struct and its strings are valid during the call only); *at receives C
 * and *differences (may be NULL) the differences of all tables.  FLOE_OK
 * whether or not the tables are equal; an error when a table could not be
 * compared (a table that needs its initial copy or a resync, an ALTER
 * TABLE while verifying, the connection: FLOE_ENET).  Tables needing a
 * copy are refused (run the mirror first). */
typedef struct floe_pg_verify_table {
    size_t size;                    /* the bytes the library filled in (see "Growing") */
    const char *source;             /* "schema.table" */
    const char *table;              /* the Iceberg table, "NS.NAME" */
    uint64_t at;                    /* C, the LSN both sides were read at */
    uint64_t pg_rows, iceberg_rows;
    /* Keys live in Postgres and not in Iceberg, live in Iceberg and not in
     * Postgres, and live in both with other values (for a table keyed by
     * the whole row: rows, counted with their multiplicity). */
    uint64_t missing, extra, different;
    /* 1: its columns in Postgres at C are not those it is mirrored with (an
     * ALTER TABLE the mirror follows at the table's next change): its rows
     * were not compared, and it counts as one difference. */
    int shape_differs;
    /* The first differences (at most 100), ", "-separated: `missing {"id":5}`,
     * `extra {"id":9}`, `different {"id":7} ("qty", "note")`, then
     * `... (N more)` when there are more; "" when none.  A table whose
     * shape differs says how here. */
    const char *report;
} floe_pg_verify_table;
int floe_pg_verify(floe_pg *pg, void (*on_table)(void *ctx, const floe_pg_verify_table *t),
                   void *ctx, uint64_t *at, uint64_t *differences, floe_error *err);

/* The mirrored tables. */
size_t floe_pg_table_count(const floe_pg *pg);
typedef struct floe_pg_table_info {
    size_t size;                    /* the bytes the library filled in (see "Growing") */
    const char *source;             /* "schema.table" */
    const char *table;              /* the Iceberg table, "NS.NAME" */
    const char *sink_id;
    const floe_sink *sink;          /* its sink (stats, metrics) */
    int copied;                     /* 1 once its initial copy is committed by this run */
    uint64_t copied_rows;
} floe_pg_table_info;
/* Strings are owned by pg, valid until floe_pg_run reconnects (the tables
 * are opened again then); FLOE_EINVAL when i is out of range. */
int floe_pg_table_info_get(const floe_pg *pg, size_t i, floe_pg_table_info *out,
                           size_t size, floe_error *err);
/* The slot's and publication's names (owned by pg). */
const char *floe_pg_slot_name(const floe_pg *pg);
const char *floe_pg_publication_name(const floe_pg *pg);

typedef struct floe_pg_stats {
    size_t size;                    /* the bytes the library filled in (see "Growing") */
    /* 1 copying (and after floe_pg_run ended during the copies), 2 streaming,
     * 3 stopped after streaming */
    int phase;
    uint64_t tables, tables_copied, copy_rows;  /* copy_rows: of resyncs too */
    uint64_t transactions;          /* whole transactions received with changes of the tables */
    uint64_t inserts, updates, deletes;
    uint64_t bytes_received;        /* pgoutput message bytes */
    uint64_t snapshots_committed;   /* over every table */
    uint64_t frontier;              /* every transaction to come commits at or after it */
    uint64_t received_lsn;          /* the end of the last message received */
    uint64_t server_lsn;            /* the server's WAL position, as last seen */
    uint64_t committed_lsn;         /* the smallest committed frontier of the tables (0: none) */
    uint64_t confirmed_lsn;         /* the flush LSN last reported to the slot (0: none) */
    /* Replication lag: WAL bytes between the server's position and the
     * committed frontier, and seconds since the oldest transaction
     * received but not yet committed into its table committed in Postgres
     * (by Postgres's clock; 0 when everything received is committed). */
    uint64_t lag_bytes;
    double lag_seconds;
    /* ALTER TABLE followed in place, and tables copied again in place */
    uint64_t schema_changes, resyncs;
    uint64_t truncates;             /* TRUNCATEs mirrored (one per table truncated) */
    /* Reconnections (each a fresh start from the committed frontiers), and
     * whether floe is reconnecting now. */
    uint64_t reconnects;
    int reconnecting;
    /* Streamed (in-progress) transactions: mirrored at their commit, and
     * aborted (dropped); bytes of them held in spill files now. */
    uint64_t streamed_transactions, streamed_aborts;
    uint64_t spill_bytes;
} floe_pg_stats;
void floe_pg_stats_get(const floe_pg *pg, floe_pg_stats *out, size_t size);
/* Prometheus text: every table's sink metrics (labelled by sink id) and
 * the slot's (floe_pg_*).  Caller frees. */
int floe_pg_metrics(const floe_pg *pg, char **out, floe_error *err);

/* An LSN as Postgres prints it ("16/B374D848", at least 18 bytes), and
 * back (-1 when malformed). */
void floe_pg_lsn_format(uint64_t lsn, char *out, size_t n);
int floe_pg_lsn_parse(const char *text, uint64_t *out);

/* A replication slot as the server reports it, for `floe inspect`. */
typedef struct floe_pg_slot_info {
    size_t size;                    /* the bytes the library filled in (see "Growing") */
    int exists;
    int active;
    uint64_t confirmed_flush_lsn;
    uint64_t restart_lsn;
    char wal_status[16];            /* "reserved", "lost", ... ("" before Postgres 13) */
} floe_pg_slot_info;
int floe_pg_slot_info_get(const char *source, const char *slot, floe_pg_slot_info *out,
                          size_t size, floe_error *err);

/* ----------------------------------------------------------------------
 * Kafka into Iceberg (docs/kafka.md).
 *
 * One consumer reads topics from a Kafka cluster; each topic feeds one
 * floe sink (sink id "kafka:<topic>") and so one Iceberg table.  Every
 * message of a topic gets the next time of that table's input (message i
 * after the table's resume frontier t: time t + i, in the order the
 * consumer receives them, which is each partition's order), so updates of
 * one key keep their partition's order (the changes format brings its own
 * times).  Snapshots are made on a wall clock (commit_interval_ms); each
 * records, in its summary property floe.kafka.offsets, the cluster id, the
 * topic and per partition the first offset whose message it does not
 * hold.  A restart seeks every partition there, so nothing is
 * lost or doubled whatever kills the process; Kafka's group offsets are
 * committed after the Iceberg commit, for monitoring only.  A floe_kafka
 * is driven from one thread (floe_kafka_run); floe_kafka_stop and
 * floe_kafka_stats_get may be called from any thread.
 * ---------------------------------------------------------------------- */
typedef struct floe_kafka floe_kafka;

typedef enum floe_kafka_format {
    /* The message key is the row's key (a JSON object of the key columns,
     * or the bare value of a single key column), the value the whole row
     * (a JSON object); a null value deletes the key (a compacted topic's
     * tombstone).  Upsert mode; the key columns are sink.key, else those the
     * table records (floe.kafka.key). */
    FLOE_KAFKA_UPSERT = 0,
    /* Each value is one row (a JSON object), appended; a null value is
     * skipped.  Append mode. */
    FLOE_KAFKA_APPEND = 1,
    /* Debezium's JSON change events (JsonConverter, with or without the
     * embedded schema): op c / r / u insert or replace the key's row with
     * "after", d deletes the key (from the message key, else "before"), t
     * (TRUNCATE) empties the table at its place in the stream; null values
     * (the tombstone after a delete) and m (messages) are skipped.  Values
     * are read by their Debezium logical types (dates as days, timestamps
     * as micro- or milliseconds, decimals as base64 with their scale, Json
     * text as JSON, docs/kafka.md).  When an event's embedded schema names a
     * column the table does not have (ADD COLUMN at the source), the table's
     * schema evolves there (floe_sink_evolve) to the event's columns.
     * Upsert mode; the key columns are sink.key, else those the table
     * records.  A table that does not exist, without sink.schema or
     * sink.key, is made at the first change event: its columns from the
     * event's embedded schema, its key from the message key's. */
    FLOE_KAFKA_DEBEZIUM = 2,
    /* floe's change records (SPEC 2), one per message value: an update
     * {"time", "diff", "row"} at its own time, schema, partition-by and
     * truncate records, and progress records.  A partition's progress
     * record says that partition's later messages have times at or past
     * it; the table's frontier is the least of its partitions' progress
     * (so every partition must carry progress records), and
     * {"progress": null} closes a partition: when all have closed, the
     * table's input is complete.  Upsert mode when sink.key is given,
     * else append mode. */
    FLOE_KAFKA_CHANGES = 3,
} floe_kafka_format;

typedef enum floe_kafka_bad {
    FLOE_KAFKA_BAD_FAIL = 0,        /* a message that does not parse halts the run */
    FLOE_KAFKA_BAD_SKIP = 1,        /* it is skipped and counted (bad_messages) */
    /* it is copied to dead_letter_topic (key, value and headers, with
     * headers floe.topic, floe.partition, floe.offset, floe.error), then
     * skipped and counted; the copy is acknowledged by the brokers before
     * the commit that passes over the message (a kill in between may copy
     * it again: at least once). */
    FLOE_KAFKA_BAD_DEAD_LETTER = 2,
} floe_kafka_bad;

/* Options; start from floe_kafka_options_init().  Every string is copied
 * by floe_kafka_open. */
typedef struct floe_kafka_options {
    size_t size;                    /* set by floe_kafka_options_init ("Growing") */
    const char *brokers;            /* "host:port,..." (required) */
    const char *topics;             /* "t1,t2" (this or topic_pattern) */
    /* Every topic whose whole name matches this POSIX extended regular
     * expression (topics starting with "__", Kafka's own, excepted), those
     * created while floe runs included (found within
     * topic_refresh_ms; 0: 30000). */
    const char *topic_pattern;
    uint64_t topic_refresh_ms;
    floe_kafka_format format;
    /* The Iceberg table of a topic: NAMESPACE.topic, with NAMESPACE this
     * (NULL: "kafka"), unless table_map says "topic=ns.name,...". */
    const char *namespace_name;
    const char *table_map;
    /* The consumer group whose offsets are committed (after each Iceberg
     * commit, for monitoring: where reading resumes is the table's
     * record); NULL: "floe". */
    const char *group;
    /* Set: this process is member `member` of `group` (required then),
     * sharing the topics' partitions with the group's other members
     * (Kafka assigns them, in eager rebalances; `member` is the static
     * group.instance.id, so a restarted member gets its partitions back at
     * once).  Each member writes every topic's table through its own sink
     * id, kafka:TOPIC@member; every commit records the offsets of all the
     * topic's partitions (its own over the table's last record) and lands
     * only while the table records, for each partition it reads, the
     * offset it started at (FLOE_EFENCED otherwise: another member took
     * the partition over).  Partitions revoked by a rebalance are
     * committed first.  NULL: one process reads every partition. */
    const char *member;
    /* librdkafka configuration passed through, {"k1", "v1", ..., NULL}
     * (security.protocol, sasl.*, ssl.*, ...); values are never printed. */
    const char *const *kafka_properties;
    /* For every topic's sink: schema (the column list of a table floe
     * creates; an existing table keeps its own), key, connect, compression, compression_level,
     * target_file_size, memory_limit (for each topic), spill_dir,
     * delete_mode, index_dir, format_version, sink_version, maintain,
     * maintain_budget, orphan_age_ms, orphan_interval_ms, commit_timeout_ms,
     * properties, partition_by, on_warning and warning_ctx.  The other fields are
     * floe's to set.  NULL: floe_sink_options_init's. */
    const floe_sink_options *sink;
    uint64_t commit_interval_ms;    /* wall clock between snapshots; 0: 10000 */
    floe_kafka_bad on_bad_message;
    const char *dead_letter_topic;  /* FLOE_KAFKA_BAD_DEAD_LETTER's topic */
    /* Debezium format: the topic of Debezium's transaction metadata
     * (provide.transaction.metadata), PREFIX.transaction, whose END
     * messages count each transaction's events per table.  Set, every
     * snapshot holds whole source transactions: events are held until
     * their transaction's END is read and all its events in every topic
     * of the run are, and given to the tables in the order the
     * transactions ended.  The topics must be PREFIX.SCHEMA.TABLE; not
     * with member or topic_pattern.  NULL: events as they come. */
    const char *transaction_topic;
    /* transaction_topic: the most bytes of events held at once (keys and
     * values); a transaction that needs more halts the run (FLOE_ELIMIT)
     * before anything of it is committed.  0: 1 GiB. */
    size_t txn_memory;
    /* Append format: 1 adds the columns _kafka_partition int,
     * _kafka_offset long and _kafka_timestamp timestamptz (the message's
     * timestamp) to the row schema, filled from each message. */
    int kafka_columns;
    /* 1: stop (floe_kafka_run returns FLOE_OK) once every partition is
     * read and committed up to the end it had when floe_kafka_open
     * looked. */
    int stop_at_end;
    /* When this descriptor becomes readable, floe_kafka_run stops as
     * floe_kafka_stop makes it; -1 (the default): none. */
    int stop_fd;
    /* Milliseconds to wait for the brokers (metadata, the cluster id,
     * offsets) at open; 0: 30000. */
    uint64_t timeout_ms;
    /* What floe does and finds (tables resumed, offsets sought): one
     * sentence each; may be NULL. */
    void (*on_notice)(void *ctx, const char *message);
    void *notice_ctx;
} floe_kafka_options;

void floe_kafka_options_init(floe_kafka_options *opts, size_t size);

/* Connect, learn the cluster id and each topic's partitions, open every
 * topic's sink and find where each table stands: the offsets its last
 * commit records.  Refused (FLOE_ESTATE) when a table was fed from
 * another cluster (a cluster replaced or rebuilt: its offsets mean
 * nothing here), when a recorded offset is past the end of its partition
 * (the topic was deleted and created again) or before its start (the
 * messages between were deleted: they would be lost), or when the topic
 * has fewer partitions than recorded.  FLOE_ENOTFOUND for a topic the
 * cluster does not have; FLOE_ENET when the brokers cannot be reached
 * within timeout_ms. */
int floe_kafka_open(const floe_kafka_options *opts, floe_kafka **out, floe_error *err);
/* Read and commit until floe_kafka_stop, stop_fd or (stop_at_end) the
 * end; what was read before a stop is committed first.  A stop is
 * FLOE_EINTERRUPTED, the end FLOE_OK.  A message that does not parse:
 * FLOE_EINPUT naming topic, partition and offset (on_bad_message FAIL). */
int floe_kafka_run(floe_kafka *k, floe_error *err);
void floe_kafka_stop(floe_kafka *k);
void floe_kafka_free(floe_kafka *k);

typedef struct floe_kafka_stats {
    size_t size;                    /* the bytes the library filled in (see "Growing") */
    uint64_t topics, partitions;
    uint64_t messages, bytes;        /* read (key and value bytes) */
    uint64_t bad_messages;           /* skipped (on_bad_message SKIP) */
    uint64_t tombstones;             /* null values: deletes (upsert), skipped (append,
                                        debezium) */
    uint64_t truncates;              /* debezium: TRUNCATE events */
    uint64_t schema_changes;         /* debezium: tables evolved to an event's columns */
    uint64_t snapshots_committed;
    /* Messages in the partitions past what is committed, as of the last
     * look at their ends (each commit looks). */
    uint64_t lag_messages;
} floe_kafka_stats;
void floe_kafka_stats_get(const floe_kafka *k, floe_kafka_stats *out, size_t size);
/* Prometheus text: the counters above as floe_kafka_*, each partition's
 * lag (floe_kafka_partition_lag{topic, partition}: messages past the offset
 * its table committed, as of the last look at the partition's end) and
 * every topic's sink metrics (floe_sink_metrics, labelled by sink id:
 * freshness, commits, files...).  Caller frees (floe_free).  From any
 * thread. */
int floe_kafka_metrics(const floe_kafka *k, char **out, floe_error *err);
/* The sink of topic i (0 <= i < stats.topics), its topic and table. */
floe_sink *floe_kafka_sink(floe_kafka *k, size_t i);
const char *floe_kafka_topic(const floe_kafka *k, size_t i);
const char *floe_kafka_table(const floe_kafka *k, size_t i);

#ifdef __cplusplus
}
#endif
#endif /* FLOE_H */
