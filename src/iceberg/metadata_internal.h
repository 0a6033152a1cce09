/*
 * metadata_internal.h - Iceberg table metadata: parse, inspect, create,
 * check requirements, apply updates, serialize, and the location rules.
 *
 * The parsed JSON document (jansson json_t) is the source of truth: fields
 * floe does not understand (statistics, encryption keys, vendor fields)
 * survive an apply + serialize untouched.  On top of it sits a typed,
 * validated view of what floe needs.  A floe__metadata is immutable once
 * built; applying updates builds a new one from a copy of the document.
 *
 * Formats: v2 and v3 are read and written; v1 is read (with the spec's
 * defaults: sequence numbers 0, the deprecated `schema` / `partition-spec`
 * fields) and can be upgraded by an `upgrade-format-version` update; v4
 * and later are refused with FLOE_EUNSUPPORTED.  v3 adds row lineage: the
 * table's `next-row-id` (required), each snapshot's `first-row-id` and
 * `added-rows` (required on snapshots added to a v3 table; snapshots from
 * before an upgrade may lack them).  Upgrading to v3 sets next-row-id 0;
 * adding a snapshot to a v3 table moves next-row-id to its first-row-id +
 * added-rows (a first-row-id below next-row-id is a stale snapshot:
 * FLOE_ECONFLICT).
 *
 * Schemas, partition specs and sort orders stay JSON values here (src/schema
 * converts); only telling two schemas the same (add-schema reuses an equal
 * one) parses them into type trees.
 *
 * Updates and requirements use the JSON shapes of the Iceberg REST catalog
 * OpenAPI (TableUpdate with "action", TableRequirement with "type"), so one
 * update list serves a local catalog (applied here) and a REST catalog
 * (sent to the server).
 *
 * Strings returned as `const char *` and JSON returned as `const json_t *`
 * are owned by the metadata object and live as long as it does.
 */
#ifndef FLOE_METADATA_INTERNAL_H
#define FLOE_METADATA_INTERNAL_H

#include <jansson.h>

#include "util/util_internal.h"

/* Highest format version floe reads and writes. */
#define FLOE_FORMAT_VERSION_MAX 3
/* Property names and defaults. */
#define FLOE_PROP_DATA_PATH "write.data.path"
#define FLOE_PROP_FOLDER_STORAGE_PATH "write.folder-storage.path"
#define FLOE_PROP_METADATA_PATH "write.metadata.path"
#define FLOE_PROP_PREVIOUS_VERSIONS_MAX "write.metadata.previous-versions-max"
#define FLOE_PREVIOUS_VERSIONS_MAX_DEFAULT 100
/* Metadata files larger than this are refused (bounded reads). */
#define FLOE_METADATA_MAX_BYTES ((size_t)512 << 20)

typedef struct floe__metadata floe__metadata;

/* One entry of `snapshots`.  Pointers point into the metadata document. */
typedef struct floe__snapshot {
    int64_t snapshot_id;
    bool has_parent;
    int64_t parent_snapshot_id;      /* valid when has_parent */
    int64_t sequence_number;         /* 0 for v1 snapshots without one */
    int64_t timestamp_ms;
    const char *manifest_list;       /* NULL only for v1 snapshots with `manifests` */
    const char *operation;           /* summary.operation; NULL when no summary */
    const json_t *summary;           /* object of strings, or NULL */
    bool has_schema_id;
    int32_t schema_id;
    bool has_first_row_id;           /* v3 row lineage: first-row-id, added-rows */
    int64_t first_row_id;
    bool has_added_rows;
    int64_t added_rows;
    const json_t *json;              /* the whole snapshot object */
} floe__snapshot;

typedef struct floe__snapshot_log_entry {
    int64_t snapshot_id;
    int64_t timestamp_ms;
} floe__snapshot_log_entry;

typedef struct floe__metadata_log_entry {
    const char *metadata_file;
    int64_t timestamp_ms;
} floe__metadata_log_entry;

/* ---- parse, serialize, free (metadata.c) ---------------------------------- */

/* Parse metadata JSON text (gzip-compressed text is accepted too, as the
 * spec allows).  Validates every field floe reads: a missing or ill-typed
 * field is FLOE_EFORMAT naming the field and why; format-version > 3 is
 * FLOE_EUNSUPPORTED.  *out is the caller's (floe__metadata_free). */
int floe__metadata_parse(const void *data, size_t len, floe__metadata **out, floe_error *err);
/* Build from a JSON document; takes over the caller's reference to `doc`
 * whether or not it succeeds. */
int floe__metadata_from_json(json_t *doc, floe__metadata **out, floe_error *err);
void floe__metadata_free(floe__metadata *md);

/* The document as compact JSON text, appended to `out`. */
int floe__metadata_write_json(const floe__metadata *md, floe__buf *out, floe_error *err);
/* The document as NUL-terminated JSON text; caller frees with floe__free. */
int floe__metadata_to_json(const floe__metadata *md, char **out, floe_error *err);
/* The whole document (read-only). */
const json_t *floe__metadata_json(const floe__metadata *md);

/* ---- accessors (metadata.c) ------------------------------------------------ */
int floe__metadata_format_version(const floe__metadata *md);
/* NULL only for v1 tables without one. */
const char *floe__metadata_table_uuid(const floe__metadata *md);
/* The `location` field as written (see floe__location_table_root). */
const char *floe__metadata_location(const floe__metadata *md);
int64_t floe__metadata_last_sequence_number(const floe__metadata *md);
/* v3 tables: next-row-id (the next snapshot's first-row-id); -1 before v3. */
int64_t floe__metadata_next_row_id(const floe__metadata *md);
int64_t floe__metadata_last_updated_ms(const floe__metadata *md);
int32_t floe__metadata_last_column_id(const floe__metadata *md);
int32_t floe__metadata_last_partition_id(const floe__metadata *md);

int32_t floe__metadata_current_schema_id(const floe__metadata *md);
const json_t *floe__metadata_current_schema(const floe__metadata *md);
const json_t *floe__metadata_schema_by_id(const floe__metadata *md, int32_t id);  /* NULL: none */
const json_t *floe__metadata_schemas(const floe__metadata *md);                   /* array */

int32_t floe__metadata_default_spec_id(const floe__metadata *md);
const json_t *floe__metadata_default_spec(const floe__metadata *md);
const json_t *floe__metadata_spec_by_id(const floe__metadata *md, int32_t id);    /* NULL: none */
const json_t *floe__metadata_specs(const floe__metadata *md);                     /* array */

int32_t floe__metadata_default_sort_order_id(const floe__metadata *md);
const json_t *floe__metadata_sort_orders(const floe__metadata *md);               /* array */

/* A table property, or NULL when unset. */
const char *floe__metadata_property(const floe__metadata *md, const char *key);
/* A property parsed as an integer; `dflt` when unset or not an integer. */
int64_t floe__metadata_property_int(const floe__metadata *md, const char *key, int64_t dflt);
const json_t *floe__metadata_properties(const floe__metadata *md);                /* object */

/* The current snapshot id, -1 when the table has none. */
int64_t floe__metadata_current_snapshot_id(const floe__metadata *md);
const floe__snapshot *floe__metadata_current_snapshot(const floe__metadata *md);  /* NULL: none */
/* A snapshot reference: true and its snapshot id (and type "branch"/"tag",
 * when `type` is not NULL) when it exists.  `main` exists whenever the
 * table has a current snapshot, even without a `refs` map. */
bool floe__metadata_ref(const floe__metadata *md, const char *name, int64_t *snapshot_id,
                        const char **type);

size_t floe__metadata_snapshot_count(const floe__metadata *md);
const floe__snapshot *floe__metadata_snapshot_at(const floe__metadata *md, size_t i);
const floe__snapshot *floe__metadata_snapshot_by_id(const floe__metadata *md, int64_t id);
/* A snapshot summary property, or NULL. */
const char *floe__snapshot_summary_get(const floe__snapshot *s, const char *key);

size_t floe__metadata_snapshot_log_count(const floe__metadata *md);
const floe__snapshot_log_entry *floe__metadata_snapshot_log_at(const floe__metadata *md, size_t i);
size_t floe__metadata_metadata_log_count(const floe__metadata *md);
const floe__metadata_log_entry *floe__metadata_metadata_log_at(const floe__metadata *md, size_t i);

/* ---- create, requirements, updates (metadata_update.c) ----------------------- */

/* What a new table is made of.  JSON values are borrowed. */
typedef struct floe__table_def {
    const json_t *schema;          /* Iceberg schema JSON (required) */
    const char *location;          /* table location (required by
                                      floe__metadata_create; optional for a
                                      catalog, which then picks its default) */
    const json_t *properties;      /* object of strings, or NULL */
    const json_t *partition_spec;  /* spec JSON, or NULL: unpartitioned (spec-id 0) */
    const json_t *sort_order;      /* sort order JSON, or NULL: unsorted (order-id 0) */
    int format_version;            /* 2 or 3; 0: the "format-version" property when it
                                      is set (Java's rule; it is not kept as a
                                      property), else 2 */
} floe__table_def;

/* The format version a new table gets from `def` (2 or 3), or
 * FLOE_EUNSUPPORTED / FLOE_EINVAL for another one. */
int floe__table_def_format_version(const floe__table_def *def, int *out, floe_error *err);
/* The update list that creates the table `def` describes (REST shapes):
 * assign-uuid (random), upgrade-format-version (2 or 3), add-schema,
 * set-current-schema -1, add-spec, set-default-spec -1, add-sort-order,
 * set-default-sort-order -1, set-location, set-properties.  *out is a new
 * JSON array (caller json_decref). */
int floe__metadata_creation_updates(const floe__table_def *def, json_t **out, floe_error *err);
/* A new table's metadata (format v2 or v3): the creation updates applied to an
 * empty table.  def->location is required. */
int floe__metadata_create(const floe__table_def *def, int64_t now_ms, floe__metadata **out,
                          floe_error *err);

/* The schema id an add-schema of `schema` gets in md (as Java's
 * TableMetadata builder assigns it): that of a schema with the same fields
 * and identifier field ids, else one above every schema id. */
int32_t floe__metadata_schema_id_for(const floe__metadata *md, const json_t *schema);

/* Check a JSON array of requirements against `base` (NULL: the table does
 * not exist).  A failed requirement is FLOE_ECONFLICT saying which and why;
 * a malformed or unknown requirement is FLOE_EINVAL. */
int floe__metadata_check(const floe__metadata *base, const json_t *requirements, floe_error *err);

/* Apply a JSON array of updates to `base` (NULL: an empty table, for
 * creation) and build the result.  Each change moves last-updated-ms
 * forward (to the added snapshot's timestamp, else to now_ms, never below
 * base's).  When `base_location` is given (the file `base` was read from)
 * and anything changed, it is appended to the metadata-log, which keeps at
 * most `write.metadata.previous-versions-max` (default 100) entries.
 * *changed (may be NULL) tells whether anything changed; when nothing did,
 * *out is an equal copy of base.  Errors: FLOE_EINVAL for a malformed update
 * or one that cannot apply (unknown schema id, ...), FLOE_EUNSUPPORTED for
 * an unknown action or changes to a v1 table before upgrading it,
 * FLOE_ECONFLICT for a snapshot that is stale against base (duplicate id,
 * sequence number not above last-sequence-number). */
int floe__metadata_apply(const floe__metadata *base, const char *base_location,
                         const json_t *updates, int64_t now_ms, floe__metadata **out,
                         bool *changed, floe_error *err);

/* ---- locations (metadata_location.c) ------------------------------------------ */

/* The table root for a location a catalog reported: when it names a
 * metadata file (".../metadata/NNNNN-x.metadata.json") the part before
 * "/metadata/", else the location itself; trailing '/' trimmed (never past
 * "scheme://").  Caller frees. */
int floe__location_table_root(const char *location, char **out, floe_error *err);
/* Trailing '/' trimmed, never past "scheme://" (or "scheme:///").  Caller frees. */
char *floe__location_trim(const char *location);
/* Where data files go: write.data.path, else write.folder-storage.path,
 * else <table root>/data; trailing '/' trimmed.  Caller frees. */
int floe__metadata_data_location(const floe__metadata *md, char **out, floe_error *err);
/* Where metadata files go: write.metadata.path, else <table root>/metadata. */
int floe__metadata_metadata_location_dir(const floe__metadata *md, char **out, floe_error *err);
/* The version of a metadata file name "NNNNN-<uuid>.metadata.json" (also
 * "vN.metadata.json" and their ".gz" forms): N, or -1 when it has none. */
int64_t floe__metadata_file_version(const char *location);
/* The location for the metadata file after `prev_location` (NULL for a new
 * table): "<metadata dir>/<NNNNN>-<random uuid>.metadata.json" with
 * NNNNN = version(prev) + 1 (0 for a new table or an unversioned name),
 * zero-padded to 5 digits.  Caller frees. */
int floe__metadata_new_file_location(const floe__metadata *md, const char *prev_location,
                                     char **out, floe_error *err);

/* ---- shared by the metadata*.c files ------------------------------------------ */

/* Read key of obj as an int64 / string / array / object.  A missing (or
 * null) key is an error `code` when `required`, else *present = false.
 * Messages read "<ctx>: field \"key\" ...". */
int floe__mdjson_int(const json_t *obj, const char *key, bool required, int code,
                     const char *ctx, int64_t *out, bool *present, floe_error *err);
int floe__mdjson_str(const json_t *obj, const char *key, bool required, int code,
                     const char *ctx, const char **out, floe_error *err);
int floe__mdjson_kind(const json_t *obj, const char *key, json_type type, bool required,
                      int code, const char *ctx, json_t **out, floe_error *err);
/* Validate one snapshot object (v2: sequence-number and manifest-list
 * required); errors carry `code`.  Pointers in *out point into js. */
int floe__snapshot_parse(const json_t *js, bool v2, int code, const char *ctx,
                         floe__snapshot *out, floe_error *err);
/* The highest field id in a schema (struct/list/map ids, recursively). */
int32_t floe__schema_json_max_id(const json_t *schema);

#endif /* FLOE_METADATA_INTERNAL_H */
