/*
 * metadata.c - Iceberg table metadata: parsing and validation, the typed
 * view over the JSON document, accessors and serialization.
 *
 * The document (json_t) is kept whole and is the source of truth.  Building
 * a floe__metadata validates every field floe reads and records typed
 * values plus pointers into the document.  For v1 documents the v2
 * collections missing from the file (schemas, partition-specs, sort-orders)
 * are synthesized into a separate object `synth`, so the document itself
 * is never rewritten by reading.  Updates live in metadata_update.c,
 * location rules in metadata_location.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#include "iceberg/metadata_internal.h"

struct floe__metadata {
    json_t *doc;
    json_t *synth;                    /* v1 defaults (owned), or NULL */
    int format_version;
    const char *table_uuid;
    const char *location;
    int64_t last_sequence_number;
    int64_t next_row_id;              /* -1 before v3 */
    int64_t last_updated_ms;
    int32_t last_column_id;
    int32_t last_partition_id;
    json_t *schemas;
    int32_t current_schema_id;
    const json_t *current_schema;
    json_t *specs;
    int32_t default_spec_id;
    const json_t *default_spec;
    json_t *sort_orders;
    int32_t default_sort_order_id;
    json_t *properties;
    json_t *refs;                     /* object, or NULL when absent */
    int64_t current_snapshot_id;      /* -1: none */
    floe__snapshot *snapshots;
    size_t n_snapshots;
    floe__snapshot_log_entry *snapshot_log;
    size_t n_snapshot_log;
    floe__metadata_log_entry *metadata_log;
    size_t n_metadata_log;
};

/* ---- typed JSON field reads ------------------------------------------------ */

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "a value";
}

static const char *kind_name(json_type t)
{
    switch (t) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    default: return "a value";
    }
}

/* The value of key, NULL when absent or JSON null. */
static json_t *get_present(const json_t *obj, const char *key)
{
    json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;
    return v && !json_is_null(v) ? v : NULL;
}

int floe__mdjson_kind(const json_t *obj, const char *key, json_type type, bool required,
                      int code, const char *ctx, json_t **out, floe_error *err)
{
    json_t *v = get_present(obj, key);
    *out = NULL;
    if (!v) {
        if (required)
            return floe__err_set(err, code, "%s: field \"%s\" is missing", ctx, key);
        return FLOE_OK;
    }
    if (json_typeof(v) != type)
        return floe__err_set(err, code, "%s: field \"%s\" must be %s, not %s", ctx, key,
                             kind_name(type), type_name(v));
    *out = v;
    return FLOE_OK;
}

int floe__mdjson_int(const json_t *obj, const char *key, bool required, int code,
                     const char *ctx, int64_t *out, bool *present, floe_error *err)
{
    json_t *v;
    FLOE_FORWARD(floe__mdjson_kind(obj, key, JSON_INTEGER, required, code, ctx, &v, err));
    if (present)
        *present = v != NULL;
    if (v)
        *out = (int64_t)json_integer_value(v);
    return FLOE_OK;
}

int floe__mdjson_str(const json_t *obj, const char *key, bool required, int code,
                     const char *ctx, const char **out, floe_error *err)
{
    json_t *v;
    FLOE_FORWARD(floe__mdjson_kind(obj, key, JSON_STRING, required, code, ctx, &v, err));
    *out = v ? json_string_value(v) : NULL;
    return FLOE_OK;
}

/* A required or optional int32 field. */
static int get_i32(const json_t *obj, const char *key, bool required, const char *ctx,
                   int32_t *out, bool *present, floe_error *err)
{
    int64_t v = 0;
    bool have = false;
    FLOE_FORWARD(floe__mdjson_int(obj, key, required, FLOE_EFORMAT, ctx, &v, &have, err));
    if (have && (v < INT32_MIN || v > INT32_MAX))
        return floe__err_set(err, FLOE_EFORMAT, "%s: field \"%s\" = %lld is out of int range",
                             ctx, key, (long long)v);
    if (present)
        *present = have;
    if (have)
        *out = (int32_t)v;
    return FLOE_OK;
}

/* ---- schema ids -------------------------------------------------------------- */

static int32_t max_id_in_type(const json_t *type);

static int32_t id_of(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        return 0;
    json_int_t i = json_integer_value(v);
    return i > INT32_MAX ? INT32_MAX : i < 0 ? 0 : (int32_t)i;
}

static int32_t max32(int32_t a, int32_t b) { return a > b ? a : b; }

static int32_t max_id_in_fields(const json_t *fields)
{
    int32_t m = 0;
    size_t i;
    json_t *f;
    json_array_foreach(fields, i, f) {
        m = max32(m, id_of(f, "id"));
        m = max32(m, max_id_in_type(json_object_get(f, "type")));
    }
    return m;
}

/* Walks struct / list / map types; primitive type names hold no ids.  The
 * parser bounds nesting depth, so recursion is bounded too. */
static int32_t max_id_in_type(const json_t *type)
{
    if (!json_is_object(type))
        return 0;
    const char *t = json_string_value(json_object_get(type, "type"));
    if (!t)
        return 0;
    if (strcmp(t, "struct") == 0)
        return max_id_in_fields(json_object_get(type, "fields"));
    if (strcmp(t, "list") == 0)
        return max32(id_of(type, "element-id"), max_id_in_type(json_object_get(type, "element")));
    if (strcmp(t, "map") == 0) {
        int32_t m = max32(id_of(type, "key-id"), id_of(type, "value-id"));
        m = max32(m, max_id_in_type(json_object_get(type, "key")));
        return max32(m, max_id_in_type(json_object_get(type, "value")));
    }
    return 0;
}

int32_t floe__schema_json_max_id(const json_t *schema)
{
    return max_id_in_fields(json_object_get(schema, "fields"));
}

/* ---- building the typed view -------------------------------------------------- */

static int synth_set(floe__metadata *md, const char *key, json_t *value, floe_error *err)
{
    if (!value)
        return FLOE_OOM(err);
    if (!md->synth && !(md->synth = json_object())) {
        json_decref(value);
        return FLOE_OOM(err);
    }
    if (json_object_set_new(md->synth, key, value) != 0)
        return FLOE_OOM(err);
    return FLOE_OK;
}

static int parse_header(floe__metadata *md, floe_error *err)
{
    const json_t *d = md->doc;
    int64_t v = 0;
    FLOE_FORWARD(floe__mdjson_int(d, "format-version", true, FLOE_EFORMAT, "metadata", &v, NULL,
                                  err));
    if (v > FLOE_FORMAT_VERSION_MAX)
        return floe__err_set(err, FLOE_EUNSUPPORTED,
                             "metadata: format-version %lld is not supported (floe reads 1 to 3)",
                             (long long)v);
    if (v < 1)
        return floe__err_set(err, FLOE_EFORMAT, "metadata: format-version %lld is invalid",
                             (long long)v);
    md->format_version = (int)v;
    bool v2 = v >= 2;
    FLOE_FORWARD(floe__mdjson_str(d, "table-uuid", v2, FLOE_EFORMAT, "metadata", &md->table_uuid,
                                  err));
    uint8_t u[16];
    if (md->table_uuid && floe__uuid_parse(md->table_uuid, strlen(md->table_uuid), u) != 0)
        return floe__err_set(err, FLOE_EFORMAT, "metadata: table-uuid \"%s\" is not a uuid",
                             md->table_uuid);
    FLOE_FORWARD(floe__mdjson_str(d, "location", true, FLOE_EFORMAT, "metadata", &md->location,
                                  err));
    md->last_sequence_number = 0;
    FLOE_FORWARD(floe__mdjson_int(d, "last-sequence-number", v2, FLOE_EFORMAT, "metadata",
                                  &md->last_sequence_number, NULL, err));
    if (md->last_sequence_number < 0)
        return floe__err_set(err, FLOE_EFORMAT, "metadata: last-sequence-number is negative");
    md->next_row_id = -1;
    if (v >= 3) {
        FLOE_FORWARD(floe__mdjson_int(d, "next-row-id", true, FLOE_EFORMAT, "metadata",
                                      &md->next_row_id, NULL, err));
        if (md->next_row_id < 0)
            return floe__err_set(err, FLOE_EFORMAT, "metadata: next-row-id is negative");
    }
    FLOE_FORWARD(floe__mdjson_int(d, "last-updated-ms", true, FLOE_EFORMAT, "metadata",
                                  &md->last_updated_ms, NULL, err));
    return get_i32(d, "last-column-id", true, "metadata", &md->last_column_id, NULL, err);
}

/* Validate a list of objects each carrying an int32 id `idkey` and an
 * array "fields"; ids must be unique.  Returns the element with id `want`
 * in *found (NULL when none). */
static int check_id_list(const json_t *list, const char *listname, const char *idkey,
                         int32_t want, const json_t **found, floe_error *err)
{
    size_t i;
    json_t *e;
    *found = NULL;
    json_array_foreach(list, i, e) {
        char ctx[64];
        snprintf(ctx, sizeof ctx, "metadata: %s[%zu]", listname, i);
        if (!json_is_object(e))
            return floe__err_set(err, FLOE_EFORMAT, "%s: must be an object, not %s", ctx,
                                 type_name(e));
        int32_t id = 0;
        json_t *fields;
        FLOE_FORWARD(get_i32(e, idkey, true, ctx, &id, NULL, err));
        FLOE_FORWARD(floe__mdjson_kind(e, "fields", JSON_ARRAY, true, FLOE_EFORMAT, ctx, &fields,
                                       err));
        for (size_t j = 0; j < i; j++)
            if (id_of(json_array_get(list, j), idkey) == id)
                return floe__err_set(err, FLOE_EFORMAT, "%s: duplicate %s %d", ctx, idkey,
                                     (int)id);
        if (id == want)
            *found = e;
    }
    return FLOE_OK;
}

/* "schemas" + "current-schema-id", or v1's single "schema". */
static int parse_schemas(floe__metadata *md, floe_error *err)
{
    const json_t *d = md->doc;
    bool v2 = md->format_version >= 2;
    FLOE_FORWARD(floe__mdjson_kind(d, "schemas", JSON_ARRAY, v2, FLOE_EFORMAT, "metadata",
                                   &md->schemas, err));
    if (md->schemas) {
        FLOE_FORWARD(get_i32(d, "current-schema-id", true, "metadata", &md->current_schema_id,
                             NULL, err));
    } else {
        json_t *one;
        FLOE_FORWARD(floe__mdjson_kind(d, "schema", JSON_OBJECT, true, FLOE_EFORMAT,
                                       "metadata (format v1 without schemas)", &one, err));
        json_t *copy = json_deep_copy(one);
        if (copy && !json_object_get(copy, "schema-id"))
            json_object_set_new(copy, "schema-id", json_integer(0));
        md->current_schema_id = copy ? id_of(copy, "schema-id") : 0;
        json_t *arr = copy ? json_pack("[o]", copy) : NULL;
        FLOE_FORWARD(synth_set(md, "schemas", arr, err));
        md->schemas = arr;
    }
    FLOE_FORWARD(check_id_list(md->schemas, "schemas", "schema-id", md->current_schema_id,
                               &md->current_schema, err));
    if (!md->current_schema)
        return floe__err_set(err, FLOE_EFORMAT,
                             "metadata: current-schema-id %d names no schema in schemas",
                             (int)md->current_schema_id);
    return FLOE_OK;
}

/* The highest partition field id in all specs (999 when there is none). */
static int32_t max_partition_field_id(const json_t *specs)
{
    int32_t m = 999;
    size_t i, j;
    json_t *s, *f;
    json_array_foreach(specs, i, s) {
        json_array_foreach(json_object_get(s, "fields"), j, f)
            m = max32(m, id_of(f, "field-id"));
    }
    return m;
}

/* v1's "partition-spec" (a bare field list) as one spec with id 0; fields
 * without a field-id get 1000, 1001, ... as the reference implementation
 * assigned them. */
static int synth_v1_spec(floe__metadata *md, floe_error *err)
{
    json_t *fields;
    FLOE_FORWARD(floe__mdjson_kind(md->doc, "partition-spec", JSON_ARRAY, true, FLOE_EFORMAT,
                                   "metadata (format v1 without partition-specs)", &fields, err));
    json_t *copy = json_deep_copy(fields);
    size_t i;
    json_t *f;
    json_array_foreach(copy, i, f) {
        if (json_is_object(f) && !json_object_get(f, "field-id"))
            json_object_set_new(f, "field-id", json_integer(1000 + (json_int_t)i));
    }
    json_t *spec = json_pack("{s:i, s:o}", "spec-id", 0, "fields", copy);
    json_t *arr = spec ? json_pack("[o]", spec) : NULL;
    FLOE_FORWARD(synth_set(md, "partition-specs", arr, err));
    md->specs = arr;
    md->default_spec_id = 0;
    return FLOE_OK;
}

static int parse_specs(floe__metadata *md, floe_error *err)
{
    const json_t *d = md->doc;
    bool v2 = md->format_version >= 2;
    FLOE_FORWARD(floe__mdjson_kind(d, "partition-specs", JSON_ARRAY, v2, FLOE_EFORMAT, "metadata",
                                   &md->specs, err));
    if (md->specs)
        FLOE_FORWARD(get_i32(d, "default-spec-id", true, "metadata", &md->default_spec_id, NULL,
                             err));
    else
        FLOE_FORWARD(synth_v1_spec(md, err));
    FLOE_FORWARD(check_id_list(md->specs, "partition-specs", "spec-id", md->default_spec_id,
                               &md->default_spec, err));
    if (!md->default_spec)
        return floe__err_set(err, FLOE_EFORMAT,
                             "metadata: default-spec-id %d names no spec in partition-specs",
                             (int)md->default_spec_id);
    bool have = false;
    FLOE_FORWARD(get_i32(d, "last-partition-id", v2, "metadata", &md->last_partition_id, &have,
                         err));
    if (!have)
        md->last_partition_id = max_partition_field_id(md->specs);
    return FLOE_OK;
}

static int parse_sort_orders(floe__metadata *md, floe_error *err)
{
    const json_t *d = md->doc;
    bool v2 = md->format_version >= 2;
    FLOE_FORWARD(floe__mdjson_kind(d, "sort-orders", JSON_ARRAY, v2, FLOE_EFORMAT, "metadata",
                                   &md->sort_orders, err));
    if (md->sort_orders) {
        FLOE_FORWARD(get_i32(d, "default-sort-order-id", true, "metadata",
                             &md->default_sort_order_id, NULL, err));
    } else {
        json_t *arr = json_pack("[{s:i, s:[]}]", "order-id", 0, "fields");
        FLOE_FORWARD(synth_set(md, "sort-orders", arr, err));
        md->sort_orders = arr;
        md->default_sort_order_id = 0;
    }
    const json_t *found;
    FLOE_FORWARD(check_id_list(md->sort_orders, "sort-orders", "order-id",
                               md->default_sort_order_id, &found, err));
    if (!found)
        return floe__err_set(err, FLOE_EFORMAT,
                             "metadata: default-sort-order-id %d names no sort order",
                             (int)md->default_sort_order_id);
    return FLOE_OK;
}

static int parse_properties(floe__metadata *md, floe_error *err)
{
    FLOE_FORWARD(floe__mdjson_kind(md->doc, "properties", JSON_OBJECT, false, FLOE_EFORMAT,
                                   "metadata", &md->properties, err));
    if (!md->properties) {
        FLOE_FORWARD(synth_set(md, "properties", json_object(), err));
        md->properties = json_object_get(md->synth, "properties");
    }
    const char *k;
    json_t *v;
    json_object_foreach(md->properties, k, v) {
        if (!json_is_string(v))
            return floe__err_set(err, FLOE_EFORMAT,
                                 "metadata: property \"%s\" must be a string, not %s", k,
                                 type_name(v));
    }
    return FLOE_OK;
}

static int parse_summary(floe__snapshot *s, int code, const char *ctx, floe_error *err)
{
    json_t *sum;
    FLOE_FORWARD(floe__mdjson_kind(s->json, "summary", JSON_OBJECT, false, code, ctx, &sum, err));
    s->summary = sum;
    if (!sum)
        return FLOE_OK;
    const char *k;
    json_t *v;
    json_object_foreach(sum, k, v) {
        if (!json_is_string(v))
            return floe__err_set(err, code, "%s: summary \"%s\" must be a string, not %s", ctx,
                                 k, type_name(v));
    }
    char sctx[96];
    snprintf(sctx, sizeof sctx, "%s.summary", ctx);
    return floe__mdjson_str(sum, "operation", true, code, sctx, &s->operation, err);
}

int floe__snapshot_parse(const json_t *js, bool v2, int code, const char *ctx,
                        floe__snapshot *s, floe_error *err)
{
    memset(s, 0, sizeof *s);
    s->json = js;
    if (!json_is_object(js))
        return floe__err_set(err, code, "%s: must be an object, not %s", ctx, type_name(js));
    FLOE_FORWARD(floe__mdjson_int(js, "snapshot-id", true, code, ctx, &s->snapshot_id, NULL,
                                  err));
    FLOE_FORWARD(floe__mdjson_int(js, "parent-snapshot-id", false, code, ctx,
                                  &s->parent_snapshot_id, &s->has_parent, err));
    FLOE_FORWARD(floe__mdjson_int(js, "sequence-number", v2, code, ctx, &s->sequence_number,
                                  NULL, err));
    if (s->sequence_number < 0)
        return floe__err_set(err, code, "%s: sequence-number is negative", ctx);
    FLOE_FORWARD(floe__mdjson_int(js, "timestamp-ms", true, code, ctx, &s->timestamp_ms, NULL,
                                  err));
    FLOE_FORWARD(floe__mdjson_str(js, "manifest-list", false, code, ctx, &s->manifest_list,
                                  err));
    if (!s->manifest_list && (v2 || !json_is_array(json_object_get(js, "manifests"))))
        return floe__err_set(err, code, "%s: field \"manifest-list\" is missing", ctx);
    int64_t sid = 0;
    FLOE_FORWARD(floe__mdjson_int(js, "schema-id", false, code, ctx, &sid, &s->has_schema_id,
                                  err));
    if (sid < INT32_MIN || sid > INT32_MAX)
        return floe__err_set(err, code, "%s: schema-id %lld is out of int range", ctx,
                             (long long)sid);
    s->schema_id = (int32_t)sid;
    FLOE_FORWARD(floe__mdjson_int(js, "first-row-id", false, code, ctx, &s->first_row_id,
                                  &s->has_first_row_id, err));
    FLOE_FORWARD(floe__mdjson_int(js, "added-rows", false, code, ctx, &s->added_rows,
                                  &s->has_added_rows, err));
    if ((s->has_first_row_id && s->first_row_id < 0) || (s->has_added_rows && s->added_rows < 0))
        return floe__err_set(err, code, "%s: first-row-id or added-rows is negative", ctx);
    return parse_summary(s, code, ctx, err);
}

/* Every snapshot: well-formed, unique ids, sequence numbers within
 * last-sequence-number. */
static int parse_snapshots(floe__metadata *md, floe_error *err)
{
    json_t *arr;
    FLOE_FORWARD(floe__mdjson_kind(md->doc, "snapshots", JSON_ARRAY, false, FLOE_EFORMAT,
                                   "metadata", &arr, err));
    size_t n = arr ? json_array_size(arr) : 0;
    if (n == 0)
        return FLOE_OK;
    md->snapshots = floe__calloc(n, sizeof *md->snapshots);
    if (!md->snapshots)
        return FLOE_OOM(err);
    for (size_t i = 0; i < n; i++) {
        char ctx[64];
        snprintf(ctx, sizeof ctx, "metadata: snapshots[%zu]", i);
        FLOE_FORWARD(floe__snapshot_parse(json_array_get(arr, i), md->format_version >= 2,
                                          FLOE_EFORMAT, ctx, &md->snapshots[i], err));
        md->n_snapshots = i + 1;
        if (md->snapshots[i].sequence_number > md->last_sequence_number)
            return floe__err_set(err, FLOE_EFORMAT,
                                 "%s: sequence-number %lld is above last-sequence-number %lld",
                                 ctx, (long long)md->snapshots[i].sequence_number,
                                 (long long)md->last_sequence_number);
        for (size_t j = 0; j < i; j++)
            if (md->snapshots[j].snapshot_id == md->snapshots[i].snapshot_id)
                return floe__err_set(err, FLOE_EFORMAT, "%s: duplicate snapshot-id %lld", ctx,
                                     (long long)md->snapshots[i].snapshot_id);
    }
    return FLOE_OK;
}

static int parse_refs(floe__metadata *md, floe_error *err)
{
    FLOE_FORWARD(floe__mdjson_kind(md->doc, "refs", JSON_OBJECT, false, FLOE_EFORMAT, "metadata",
                                   &md->refs, err));
    const char *name;
    json_t *ref;
    json_object_foreach(md->refs, name, ref) {
        char ctx[160];
        snprintf(ctx, sizeof ctx, "metadata: refs[\"%.100s\"]", name);
        if (!json_is_object(ref))
            return floe__err_set(err, FLOE_EFORMAT, "%s: must be an object", ctx);
        int64_t id = 0;
        const char *type;
        FLOE_FORWARD(floe__mdjson_int(ref, "snapshot-id", true, FLOE_EFORMAT, ctx, &id, NULL,
                                      err));
        FLOE_FORWARD(floe__mdjson_str(ref, "type", true, FLOE_EFORMAT, ctx, &type, err));
        if (strcmp(type, "branch") != 0 && strcmp(type, "tag") != 0)
            return floe__err_set(err, FLOE_EFORMAT, "%s: type \"%s\" is not branch or tag", ctx,
                                 type);
        if (!floe__metadata_snapshot_by_id(md, id))
            return floe__err_set(err, FLOE_EFORMAT, "%s: snapshot %lld does not exist", ctx,
                                 (long long)id);
        if (strcmp(name, "main") == 0 && id != md->current_snapshot_id)
            return floe__err_set(err, FLOE_EFORMAT,
                                 "%s: snapshot %lld differs from current-snapshot-id %lld", ctx,
                                 (long long)id, (long long)md->current_snapshot_id);
    }
    return FLOE_OK;
}

static int parse_current_snapshot(floe__metadata *md, floe_error *err)
{
    bool have = false;
    md->current_snapshot_id = -1;
    FLOE_FORWARD(floe__mdjson_int(md->doc, "current-snapshot-id", false, FLOE_EFORMAT,
                                  "metadata", &md->current_snapshot_id, &have, err));
    if (!have || md->current_snapshot_id == -1) {   /* -1: "none", as Java writes */
        md->current_snapshot_id = -1;
        return FLOE_OK;
    }
    if (!floe__metadata_snapshot_by_id(md, md->current_snapshot_id))
        return floe__err_set(err, FLOE_EFORMAT,
                             "metadata: current-snapshot-id %lld names no snapshot",
                             (long long)md->current_snapshot_id);
    return FLOE_OK;
}

static int parse_snapshot_log(floe__metadata *md, floe_error *err)
{
    json_t *arr;
    FLOE_FORWARD(floe__mdjson_kind(md->doc, "snapshot-log", JSON_ARRAY, false, FLOE_EFORMAT,
                                   "metadata", &arr, err));
    size_t n = arr ? json_array_size(arr) : 0;
    if (n && !(md->snapshot_log = floe__calloc(n, sizeof *md->snapshot_log)))
        return FLOE_OOM(err);
    for (size_t i = 0; i < n; i++) {
        char ctx[64];
        snprintf(ctx, sizeof ctx, "metadata: snapshot-log[%zu]", i);
        json_t *e = json_array_get(arr, i);
        if (!json_is_object(e))
            return floe__err_set(err, FLOE_EFORMAT, "%s: must be an object", ctx);
        FLOE_FORWARD(floe__mdjson_int(e, "snapshot-id", true, FLOE_EFORMAT, ctx,
                                      &md->snapshot_log[i].snapshot_id, NULL, err));
        FLOE_FORWARD(floe__mdjson_int(e, "timestamp-ms", true, FLOE_EFORMAT, ctx,
                                      &md->snapshot_log[i].timestamp_ms, NULL, err));
        md->n_snapshot_log = i + 1;
    }
    return FLOE_OK;
}

static int parse_metadata_log(floe__metadata *md, floe_error *err)
{
    json_t *arr;
    FLOE_FORWARD(floe__mdjson_kind(md->doc, "metadata-log", JSON_ARRAY, false, FLOE_EFORMAT,
                                   "metadata", &arr, err));
    size_t n = arr ? json_array_size(arr) : 0;
    if (n && !(md->metadata_log = floe__calloc(n, sizeof *md->metadata_log)))
        return FLOE_OOM(err);
    for (size_t i = 0; i < n; i++) {
        char ctx[64];
        snprintf(ctx, sizeof ctx, "metadata: metadata-log[%zu]", i);
        json_t *e = json_array_get(arr, i);
        if (!json_is_object(e))
            return floe__err_set(err, FLOE_EFORMAT, "%s: must be an object", ctx);
        FLOE_FORWARD(floe__mdjson_str(e, "metadata-file", true, FLOE_EFORMAT, ctx,
                                      &md->metadata_log[i].metadata_file, err));
        FLOE_FORWARD(floe__mdjson_int(e, "timestamp-ms", true, FLOE_EFORMAT, ctx,
                                      &md->metadata_log[i].timestamp_ms, NULL, err));
        md->n_metadata_log = i + 1;
    }
    return FLOE_OK;
}

static int build(floe__metadata *md, floe_error *err)
{
    if (!json_is_object(md->doc))
        return floe__err_set(err, FLOE_EFORMAT, "metadata: must be a JSON object, not %s",
                             type_name(md->doc));
    FLOE_FORWARD(parse_header(md, err));
    FLOE_FORWARD(parse_schemas(md, err));
    FLOE_FORWARD(parse_specs(md, err));
    FLOE_FORWARD(parse_sort_orders(md, err));
    FLOE_FORWARD(parse_properties(md, err));
    FLOE_FORWARD(parse_snapshots(md, err));
    FLOE_FORWARD(parse_current_snapshot(md, err));
    FLOE_FORWARD(parse_refs(md, err));
    FLOE_FORWARD(parse_snapshot_log(md, err));
    return parse_metadata_log(md, err);
}

int floe__metadata_from_json(json_t *doc, floe__metadata **out, floe_error *err)
{
    if (!doc)
        return floe__err_set(err, FLOE_EINVAL, "metadata: no document");
    floe__metadata *md = floe__calloc(1, sizeof *md);
    if (!md) {
        json_decref(doc);
        return FLOE_OOM(err);
    }
    md->doc = doc;
    int rc = build(md, err);
    if (rc != FLOE_OK) {
        floe__metadata_free(md);
        return rc;
    }
    *out = md;
    return FLOE_OK;
}

void floe__metadata_free(floe__metadata *md)
{
    if (!md)
        return;
    json_decref(md->doc);
    json_decref(md->synth);
    floe__free(md->snapshots);
    floe__free(md->snapshot_log);
    floe__free(md->metadata_log);
    floe__free(md);
}

/* ---- text in and out ------------------------------------------------------------ */

/* Inflate a gzip member into `out`, at most FLOE_METADATA_MAX_BYTES. */
static int gunzip(const uint8_t *p, size_t n, floe__buf *out, floe_error *err)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
        return FLOE_OOM(err);
    zs.next_in = (Bytef *)p;
    zs.avail_in = (uInt)(n > UINT_MAX ? UINT_MAX : n);
    int rc = FLOE_OK, z = Z_OK;
    while (z != Z_STREAM_END) {
        rc = floe__buf_reserve(out, 1 << 16, err);
        if (rc != FLOE_OK)
            break;
        zs.next_out = out->data + out->len;
        zs.avail_out = (uInt)(out->cap - out->len > UINT_MAX ? UINT_MAX : out->cap - out->len);
        uInt before = zs.avail_out;
        z = inflate(&zs, Z_NO_FLUSH);
        out->len += before - zs.avail_out;
        if (z != Z_OK && z != Z_STREAM_END) {
            rc = floe__err_set(err, FLOE_EFORMAT, "metadata: bad gzip data (%s)",
                               zs.msg ? zs.msg : "truncated");
            break;
        }
    }
    inflateEnd(&zs);
    return rc;
}

int floe__metadata_parse(const void *data, size_t len, floe__metadata **out, floe_error *err)
{
    const uint8_t *p = data;
    floe__buf plain;
    floe__buf_init(&plain, FLOE_METADATA_MAX_BYTES);
    if (len >= 2 && p[0] == 0x1f && p[1] == 0x8b) {
        int rc = gunzip(p, len, &plain, err);
        if (rc != FLOE_OK) {
            floe__buf_free(&plain);
            return rc;
        }
        p = plain.data;
        len = plain.len;
    }
    json_error_t jerr;
    json_t *doc = json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, &jerr);
    floe__buf_free(&plain);
    if (!doc)
        return floe__err_set(err, FLOE_EFORMAT, "metadata: invalid JSON at line %d column %d: %s",
                             jerr.line, jerr.column, jerr.text);
    return floe__metadata_from_json(doc, out, err);
}

/* jansson (2.14) ignores a failed callback in some paths (an object key
 * loses its closing quote and the dump still "succeeds"), so a failure is
 * remembered here and checked after the dump. */
typedef struct dump_sink {
    floe__buf *out;
    bool failed;
} dump_sink;

static int dump_cb(const char *buffer, size_t size, void *data)
{
    dump_sink *d = data;
    if (!d->failed && floe__buf_append(d->out, buffer, size, NULL) != FLOE_OK)
        d->failed = true;
    return d->failed ? -1 : 0;
}

int floe__metadata_write_json(const floe__metadata *md, floe__buf *out, floe_error *err)
{
    size_t before = out->len;
    dump_sink d = {out, false};
    if (json_dump_callback(md->doc, dump_cb, &d, JSON_COMPACT) != 0 || d.failed) {
        out->len = before;
        return floe__err_set(err, FLOE_ELIMIT, "metadata: cannot serialize (out of memory or "
                                               "buffer limit)");
    }
    return FLOE_OK;
}

int floe__metadata_to_json(const floe__metadata *md, char **out, floe_error *err)
{
    floe__buf b;
    floe__buf_init(&b, 0);
    int rc = floe__metadata_write_json(md, &b, err);
    if (rc == FLOE_OK) {
        *out = floe__buf_strdup(&b);
        if (!*out)
            rc = FLOE_OOM(err);
    }
    floe__buf_free(&b);
    return rc;
}

const json_t *floe__metadata_json(const floe__metadata *md) { return md->doc; }

/* ---- accessors ------------------------------------------------------------------- */

int floe__metadata_format_version(const floe__metadata *md) { return md->format_version; }
const char *floe__metadata_table_uuid(const floe__metadata *md) { return md->table_uuid; }
const char *floe__metadata_location(const floe__metadata *md) { return md->location; }
int64_t floe__metadata_last_sequence_number(const floe__metadata *md)
{
    return md->last_sequence_number;
}
int64_t floe__metadata_last_updated_ms(const floe__metadata *md) { return md->last_updated_ms; }
int64_t floe__metadata_next_row_id(const floe__metadata *md) { return md->next_row_id; }
int32_t floe__metadata_last_column_id(const floe__metadata *md) { return md->last_column_id; }
int32_t floe__metadata_last_partition_id(const floe__metadata *md)
{
    return md->last_partition_id;
}

int32_t floe__metadata_current_schema_id(const floe__metadata *md)
{
    return md->current_schema_id;
}
const json_t *floe__metadata_current_schema(const floe__metadata *md) { return md->current_schema; }
const json_t *floe__metadata_schemas(const floe__metadata *md) { return md->schemas; }

static const json_t *find_by_id(const json_t *list, const char *key, int32_t id)
{
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        json_t *v = json_object_get(e, key);
        if (json_is_integer(v) && json_integer_value(v) == id)
            return e;
    }
    return NULL;
}

const json_t *floe__metadata_schema_by_id(const floe__metadata *md, int32_t id)
{
    return find_by_id(md->schemas, "schema-id", id);
}

int32_t floe__metadata_default_spec_id(const floe__metadata *md) { return md->default_spec_id; }
const json_t *floe__metadata_default_spec(const floe__metadata *md) { return md->default_spec; }
const json_t *floe__metadata_specs(const floe__metadata *md) { return md->specs; }
const json_t *floe__metadata_spec_by_id(const floe__metadata *md, int32_t id)
{
    return find_by_id(md->specs, "spec-id", id);
}

int32_t floe__metadata_default_sort_order_id(const floe__metadata *md)
{
    return md->default_sort_order_id;
}
const json_t *floe__metadata_sort_orders(const floe__metadata *md) { return md->sort_orders; }

const char *floe__metadata_property(const floe__metadata *md, const char *key)
{
    return json_string_value(json_object_get(md->properties, key));
}

int64_t floe__metadata_property_int(const floe__metadata *md, const char *key, int64_t dflt)
{
    const char *s = floe__metadata_property(md, key);
    if (!s || !*s)
        return dflt;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    return (*end || errno) ? dflt : (int64_t)v;
}

const json_t *floe__metadata_properties(const floe__metadata *md) { return md->properties; }

int64_t floe__metadata_current_snapshot_id(const floe__metadata *md)
{
    return md->current_snapshot_id;
}

const floe__snapshot *floe__metadata_current_snapshot(const floe__metadata *md)
{
    if (md->current_snapshot_id == -1)
        return NULL;
    return floe__metadata_snapshot_by_id(md, md->current_snapshot_id);
}

bool floe__metadata_ref(const floe__metadata *md, const char *name, int64_t *snapshot_id,
                        const char **type)
{
    json_t *ref = md->refs ? json_object_get(md->refs, name) : NULL;
    if (ref) {
        if (snapshot_id)
            *snapshot_id = (int64_t)json_integer_value(json_object_get(ref, "snapshot-id"));
        if (type)
            *type = json_string_value(json_object_get(ref, "type"));
        return true;
    }
    if (strcmp(name, "main") == 0 && md->current_snapshot_id != -1) {
        if (snapshot_id)
            *snapshot_id = md->current_snapshot_id;
        if (type)
            *type = "branch";
        return true;
    }
    return false;
}

size_t floe__metadata_snapshot_count(const floe__metadata *md) { return md->n_snapshots; }

const floe__snapshot *floe__metadata_snapshot_at(const floe__metadata *md, size_t i)
{
    return i < md->n_snapshots ? &md->snapshots[i] : NULL;
}

const floe__snapshot *floe__metadata_snapshot_by_id(const floe__metadata *md, int64_t id)
{
    for (size_t i = 0; i < md->n_snapshots; i++)
        if (md->snapshots[i].snapshot_id == id)
            return &md->snapshots[i];
    return NULL;
}

const char *floe__snapshot_summary_get(const floe__snapshot *s, const char *key)
{
    return s->summary ? json_string_value(json_object_get(s->summary, key)) : NULL;
}

size_t floe__metadata_snapshot_log_count(const floe__metadata *md) { return md->n_snapshot_log; }

const floe__snapshot_log_entry *floe__metadata_snapshot_log_at(const floe__metadata *md, size_t i)
{
    return i < md->n_snapshot_log ? &md->snapshot_log[i] : NULL;
}

size_t floe__metadata_metadata_log_count(const floe__metadata *md) { return md->n_metadata_log; }

const floe__metadata_log_entry *floe__metadata_metadata_log_at(const floe__metadata *md, size_t i)
{
    return i < md->n_metadata_log ? &md->metadata_log[i] : NULL;
}
