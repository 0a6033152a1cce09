/*
 * metadata_update.c - table requirements and updates (the REST catalog's
 * TableRequirement / TableUpdate JSON shapes) and table creation.
 *
 * Updates are applied to a deep copy of the base document, one after the
 * other, directly on the JSON; the result is then rebuilt (and so fully
 * validated) by floe__metadata_from_json.  Creation is the list of
 * creation updates applied to an empty document, so the same code path
 * makes new tables and changes existing ones.
 *
 * Semantics follow the reference implementations where they agree:
 *  - add-schema / add-spec / add-sort-order reuse an equal existing entry
 *    (ids aside) and otherwise take the next free id; "-1" in the matching
 *    set-* update means "the one added (or reused) in this list".
 *  - add-snapshot requires sequence-number > last-sequence-number and a
 *    new snapshot id; it sets last-sequence-number and last-updated-ms.
 *  - set-snapshot-ref "main" moves current-snapshot-id and appends to the
 *    snapshot-log.
 *  - remove-snapshots drops the snapshots, the refs pointing at them (main
 *    too: the table then has no current snapshot) and the snapshot-log
 *    entries up to the last removed one; remove-snapshot-ref drops a ref.
 *  - Anything changed moves last-updated-ms (never backwards) and, given
 *    the base file's location, appends it to the bounded metadata-log.
 *  - upgrade-format-version to 3 starts row lineage (next-row-id 0);
 *    add-snapshot on a v3 table checks first-row-id >= next-row-id and moves
 *    next-row-id to first-row-id + added-rows.
 * A v1 document accepts only upgrade-format-version first: floe writes v2 and v3.
 */
#include <stdio.h>
#include <stdlib.h>

#include "iceberg/metadata_internal.h"
#include "schema/schema_internal.h"

typedef struct added_id {
    bool have;
    int32_t id;
} added_id;

typedef struct apply_ctx {
    json_t *doc;                      /* working copy */
    const floe__metadata *base;       /* NULL: empty table */
    int64_t now_ms;
    bool changed;
    bool have_updated_ms;             /* an update chose last-updated-ms */
    int64_t updated_ms;
    added_id schema, spec, order;     /* last added / reused in this list */
    int64_t *added_snaps;             /* snapshot ids added in this list */
    size_t n_added_snaps;
    char ctx[96];                     /* "updates[i] (action)" for messages */
    floe_error *err;
} apply_ctx;

/* ---- small helpers ------------------------------------------------------------- */

static int jset(apply_ctx *a, json_t *obj, const char *key, json_t *val)
{
    if (!val || json_object_set_new(obj, key, val) != 0)
        return FLOE_OOM(a->err);
    return FLOE_OK;
}

static int jappend(apply_ctx *a, json_t *arr, json_t *val)
{
    if (!val || json_array_append_new(arr, val) != 0)
        return FLOE_OOM(a->err);
    return FLOE_OK;
}

static int64_t doc_int(const json_t *doc, const char *key, int64_t dflt)
{
    json_t *v = json_object_get(doc, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

/* The array (or object) `key` of the working document, created when absent. */
static int doc_container(apply_ctx *a, const char *key, bool array, json_t **out)
{
    json_t *v = json_object_get(a->doc, key);
    if (array ? json_is_array(v) : json_is_object(v)) {
        *out = v;
        return FLOE_OK;
    }
    v = array ? json_array() : json_object();
    FLOE_FORWARD(jset(a, a->doc, key, v));
    *out = v;
    return FLOE_OK;
}

static json_t *find_by_id(const json_t *list, const char *key, int64_t id)
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

static int32_t next_id(const json_t *list, const char *key, int32_t floor)
{
    int32_t next = floor;
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        int64_t id = doc_int(e, key, -1);
        if (id >= next && id < INT32_MAX)
            next = (int32_t)id + 1;
    }
    return next;
}

static int arg_int(apply_ctx *a, const json_t *u, const char *key, int64_t *out)
{
    return floe__mdjson_int(u, key, true, FLOE_EINVAL, a->ctx, out, NULL, a->err);
}

static int arg_str(apply_ctx *a, const json_t *u, const char *key, const char **out)
{
    return floe__mdjson_str(u, key, true, FLOE_EINVAL, a->ctx, out, a->err);
}

static int arg_kind(apply_ctx *a, const json_t *u, const char *key, json_type t, json_t **out)
{
    return floe__mdjson_kind(u, key, t, true, FLOE_EINVAL, a->ctx, out, a->err);
}

/* Two objects equal once `idkey` is ignored in both. */
static bool equal_except(const json_t *x, const json_t *y, const char *idkey)
{
    if (!json_is_object(x) || !json_is_object(y))
        return false;
    if (json_object_size(x) - (json_object_get(x, idkey) != NULL) !=
        json_object_size(y) - (json_object_get(y, idkey) != NULL))
        return false;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)x, k, v) {
        if (strcmp(k, idkey) != 0 && !json_equal(v, json_object_get(y, k)))
            return false;
    }
    return true;
}

/* A deep copy of `v` with `key` set to `id`; NULL on out of memory. */
static json_t *copy_with_id(const json_t *v, const char *key, int id)
{
    json_t *c = json_deep_copy(v);
    if (c && json_object_set_new(c, key, json_integer(id)) != 0) {
        json_decref(c);
        return NULL;
    }
    return c;
}

/* ---- assign-uuid, upgrade-format-version, set-location -------------------------- */

static int up_assign_uuid(apply_ctx *a, const json_t *u)
{
    const char *s;
    uint8_t want[16], have[16];
    FLOE_FORWARD(arg_str(a, u, "uuid", &s));
    if (floe__uuid_parse(s, strlen(s), want) != 0)
        return floe__err_set(a->err, FLOE_EINVAL, "%s: \"%s\" is not a uuid", a->ctx, s);
    const char *cur = json_string_value(json_object_get(a->doc, "table-uuid"));
    if (cur && floe__uuid_parse(cur, strlen(cur), have) == 0 && memcmp(have, want, 16) == 0)
        return FLOE_OK;
    if (cur)
        return floe__err_set(a->err, FLOE_EINVAL,
                             "%s: the table already has uuid %s; it cannot change to %s", a->ctx,
                             cur, s);
    a->changed = true;
    return jset(a, a->doc, "table-uuid", json_string(s));
}

static int up_set_location(apply_ctx *a, const json_t *u)
{
    const char *s;
    FLOE_FORWARD(arg_str(a, u, "location", &s));
    if (!*s)
        return floe__err_set(a->err, FLOE_EINVAL, "%s: empty location", a->ctx);
    char *trimmed = floe__location_trim(s);
    if (!trimmed)
        return FLOE_OOM(a->err);
    const char *cur = json_string_value(json_object_get(a->doc, "location"));
    int rc = FLOE_OK;
    if (!cur || strcmp(cur, trimmed) != 0) {
        a->changed = true;
        rc = jset(a, a->doc, "location", json_string(trimmed));
    }
    floe__free(trimmed);
    return rc;
}

/* Partition fields without a field-id get last-partition-id + 1, ... */
static int assign_partition_field_ids(apply_ctx *a, json_t *fields, int64_t *last)
{
    size_t i;
    json_t *f;
    json_array_foreach(fields, i, f) {
        if (!json_is_object(f))
            return floe__err_set(a->err, FLOE_EINVAL, "%s: partition field %zu is not an object",
                                 a->ctx, i);
        if (json_is_integer(json_object_get(f, "field-id")))
            continue;
        FLOE_FORWARD(jset(a, f, "field-id", json_integer(++*last)));
    }
    return FLOE_OK;
}

/* v1 -> v2: write down the defaults the v1 reader assumed (they are in the
 * base's typed view), drop the deprecated single-valued fields. */
static int upgrade_v1(apply_ctx *a)
{
    const floe__metadata *b = a->base;
    json_t *d = a->doc;
    if (!json_is_string(json_object_get(d, "table-uuid"))) {
        uint8_t u[16];
        char s[37];
        FLOE_FORWARD(floe__uuid_random(u, a->err));
        floe__uuid_format(u, s);
        FLOE_FORWARD(jset(a, d, "table-uuid", json_string(s)));
    }
    if (!json_object_get(d, "last-sequence-number"))
        FLOE_FORWARD(jset(a, d, "last-sequence-number", json_integer(0)));
    if (!json_object_get(d, "schemas")) {
        FLOE_FORWARD(jset(a, d, "schemas", json_deep_copy(floe__metadata_schemas(b))));
        FLOE_FORWARD(jset(a, d, "current-schema-id",
                          json_integer(floe__metadata_current_schema_id(b))));
    }
    if (!json_object_get(d, "partition-specs")) {
        FLOE_FORWARD(jset(a, d, "partition-specs", json_deep_copy(floe__metadata_specs(b))));
        FLOE_FORWARD(jset(a, d, "default-spec-id",
                          json_integer(floe__metadata_default_spec_id(b))));
    }
    int64_t last = floe__metadata_last_partition_id(b);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(d, "partition-specs"), i, e)
        FLOE_FORWARD(assign_partition_field_ids(a, json_object_get(e, "fields"), &last));
    FLOE_FORWARD(jset(a, d, "last-partition-id", json_integer(last)));
    if (!json_object_get(d, "sort-orders")) {
        FLOE_FORWARD(jset(a, d, "sort-orders", json_deep_copy(floe__metadata_sort_orders(b))));
        FLOE_FORWARD(jset(a, d, "default-sort-order-id",
                          json_integer(floe__metadata_default_sort_order_id(b))));
    }
    json_object_del(d, "schema");
    json_object_del(d, "partition-spec");
    json_array_foreach(json_object_get(d, "snapshots"), i, e) {
        if (!json_is_string(json_object_get(e, "manifest-list")))
            return floe__err_set(a->err, FLOE_EUNSUPPORTED,
                                 "%s: snapshot %lld has no manifest-list; cannot upgrade to v2",
                                 a->ctx, (long long)doc_int(e, "snapshot-id", -1));
        if (!json_object_get(e, "sequence-number"))
            FLOE_FORWARD(jset(a, e, "sequence-number", json_integer(0)));
    }
    return jset(a, d, "format-version", json_integer(2));
}

/* v2 -> v3: row lineage starts at 0; existing snapshots stay as they are. */
static int upgrade_v2(apply_ctx *a)
{
    if (!json_is_integer(json_object_get(a->doc, "next-row-id")))
        FLOE_FORWARD(jset(a, a->doc, "next-row-id", json_integer(0)));
    return jset(a, a->doc, "format-version", json_integer(3));
}

static int up_upgrade_format_version(apply_ctx *a, const json_t *u)
{
    int64_t v;
    FLOE_FORWARD(arg_int(a, u, "format-version", &v));
    int64_t cur = doc_int(a->doc, "format-version", 1);
    if (v > FLOE_FORMAT_VERSION_MAX)
        return floe__err_set(a->err, FLOE_EUNSUPPORTED,
                             "%s: format version %lld is not supported (floe writes 2 and 3)",
                             a->ctx, (long long)v);
    if (v < cur)
        return floe__err_set(a->err, FLOE_EINVAL, "%s: cannot downgrade a v%lld table to v%lld",
                             a->ctx, (long long)cur, (long long)v);
    if (v == cur)
        return FLOE_OK;
    a->changed = true;
    if (cur < 2)
        FLOE_FORWARD(upgrade_v1(a));
    return v >= 3 ? upgrade_v2(a) : FLOE_OK;
}

/* ---- schemas, specs, sort orders ----------------------------------------------- */

/* Two schemas are the same when their fields and identifier field ids
 * (absent = none) agree; ids and other keys do not matter.  Compared as
 * schemas where both parse (writers spell types differently:
 * "decimal(10, 2)", "decimal(10,2)"), else as JSON. */
static bool same_schema(const json_t *x, const json_t *y)
{
    floe__schema *a = NULL, *b = NULL;
    if (floe__schema_from_jansson(x, &a, NULL) == FLOE_OK &&
        floe__schema_from_jansson(y, &b, NULL) == FLOE_OK) {
        bool same = floe__schema_equal(a, b);
        floe_schema_free(a);
        floe_schema_free(b);
        return same;
    }
    floe_schema_free(a);
    if (!json_equal(json_object_get(x, "fields"), json_object_get(y, "fields")))
        return false;
    const json_t *ix = json_object_get(x, "identifier-field-ids");
    const json_t *iy = json_object_get(y, "identifier-field-ids");
    if (json_array_size(ix) == 0 && json_array_size(iy) == 0)
        return true;
    return ix && iy && json_equal(ix, iy);
}

int32_t floe__metadata_schema_id_for(const floe__metadata *md, const json_t *schema)
{
    const json_t *list = floe__metadata_schemas(md);
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
        if (same_schema(e, schema))
            return (int32_t)doc_int(e, "schema-id", 0);
    return next_id(list, "schema-id", 0);
}

static int up_add_schema(apply_ctx *a, const json_t *u)
{
    json_t *schema, *fields, *list;
    int64_t lcid = 0;
    FLOE_FORWARD(arg_kind(a, u, "schema", JSON_OBJECT, &schema));
    FLOE_FORWARD(floe__mdjson_kind(schema, "fields", JSON_ARRAY, true, FLOE_EINVAL, a->ctx,
                                   &fields, a->err));
    FLOE_FORWARD(floe__mdjson_int(u, "last-column-id", false, FLOE_EINVAL, a->ctx, &lcid, NULL,
                                  a->err));
    FLOE_FORWARD(doc_container(a, "schemas", true, &list));
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        if (same_schema(e, schema)) {
            a->schema = (added_id){true, (int32_t)doc_int(e, "schema-id", 0)};
            return FLOE_OK;
        }
    }
    int32_t id = next_id(list, "schema-id", 0);
    FLOE_FORWARD(jappend(a, list, copy_with_id(schema, "schema-id", id)));
    int64_t last = doc_int(a->doc, "last-column-id", 0);
    int64_t top = floe__schema_json_max_id(schema);
    if (top > last)
        last = top;
    if (lcid > last)
        last = lcid;
    a->schema = (added_id){true, id};
    a->changed = true;
    return jset(a, a->doc, "last-column-id", json_integer(last));
}

/* set-current-schema, set-default-spec, set-default-sort-order: make an id
 * (or -1: the last added in this list) the table's current/default one. */
static int set_default(apply_ctx *a, const json_t *u, const char *argkey, const char *listkey,
                       const char *idkey, const char *defkey, const added_id *added,
                       const char *what)
{
    int64_t id;
    FLOE_FORWARD(arg_int(a, u, argkey, &id));
    if (id == -1) {
        if (!added->have)
            return floe__err_set(a->err, FLOE_EINVAL, "%s: -1 needs a %s added earlier in the "
                                                      "same list", a->ctx, what);
        id = added->id;
    }
    if (!find_by_id(json_object_get(a->doc, listkey), idkey, id))
        return floe__err_set(a->err, FLOE_EINVAL, "%s: there is no %s with id %lld", a->ctx,
                             what, (long long)id);
    if (doc_int(a->doc, defkey, INT64_MIN) == id)
        return FLOE_OK;
    a->changed = true;
    return jset(a, a->doc, defkey, json_integer(id));
}

static int up_set_current_schema(apply_ctx *a, const json_t *u)
{
    return set_default(a, u, "schema-id", "schemas", "schema-id", "current-schema-id",
                       &a->schema, "schema");
}

/* Two partition specs are the same when their fields agree on source-id,
 * transform and name (and field-id, when both carry one). */
static bool same_spec(const json_t *x, const json_t *y)
{
    const json_t *fx = json_object_get(x, "fields"), *fy = json_object_get(y, "fields");
    if (json_array_size(fx) != json_array_size(fy))
        return false;
    static const char *const keys[] = {"source-id", "source-ids", "transform", "name"};
    for (size_t i = 0; i < json_array_size(fx); i++) {
        json_t *a = json_array_get(fx, i), *b = json_array_get(fy, i);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            json_t *va = json_object_get(a, keys[k]), *vb = json_object_get(b, keys[k]);
            if ((va || vb) && !(va && vb && json_equal(va, vb)))
                return false;
        }
        json_t *ia = json_object_get(a, "field-id"), *ib = json_object_get(b, "field-id");
        if (ia && ib && !json_equal(ia, ib))
            return false;
    }
    return true;
}

static int up_add_spec(apply_ctx *a, const json_t *u)
{
    json_t *spec, *fields, *list;
    FLOE_FORWARD(arg_kind(a, u, "spec", JSON_OBJECT, &spec));
    FLOE_FORWARD(floe__mdjson_kind(spec, "fields", JSON_ARRAY, true, FLOE_EINVAL, a->ctx,
                                   &fields, a->err));
    FLOE_FORWARD(doc_container(a, "partition-specs", true, &list));
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        if (same_spec(e, spec)) {
            a->spec = (added_id){true, (int32_t)doc_int(e, "spec-id", 0)};
            return FLOE_OK;
        }
    }
    int64_t last = doc_int(a->doc, "last-partition-id", 999);
    json_t *copy = json_deep_copy(spec);
    if (!copy)
        return FLOE_OOM(a->err);
    int rc = assign_partition_field_ids(a, json_object_get(copy, "fields"), &last);
    json_array_foreach(json_object_get(copy, "fields"), i, e) {
        int64_t fid = doc_int(e, "field-id", 0);
        if (fid > last)
            last = fid;
    }
    int32_t id = next_id(list, "spec-id", 0);
    if (rc == FLOE_OK)
        rc = jset(a, copy, "spec-id", json_integer(id));
    if (rc != FLOE_OK) {
        json_decref(copy);
        return rc;
    }
    FLOE_FORWARD(jappend(a, list, copy));
    a->spec = (added_id){true, id};
    a->changed = true;
    return jset(a, a->doc, "last-partition-id", json_integer(last));
}

static int up_set_default_spec(apply_ctx *a, const json_t *u)
{
    return set_default(a, u, "spec-id", "partition-specs", "spec-id", "default-spec-id",
                       &a->spec, "partition spec");
}

static int up_add_sort_order(apply_ctx *a, const json_t *u)
{
    json_t *order, *fields, *list;
    FLOE_FORWARD(arg_kind(a, u, "sort-order", JSON_OBJECT, &order));
    FLOE_FORWARD(floe__mdjson_kind(order, "fields", JSON_ARRAY, true, FLOE_EINVAL, a->ctx,
                                   &fields, a->err));
    FLOE_FORWARD(doc_container(a, "sort-orders", true, &list));
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        if (equal_except(e, order, "order-id")) {
            a->order = (added_id){true, (int32_t)doc_int(e, "order-id", 0)};
            return FLOE_OK;
        }
    }
    /* order-id 0 is reserved for "unsorted" */
    int32_t id = json_array_size(fields) == 0 ? 0 : next_id(list, "order-id", 1);
    if (find_by_id(list, "order-id", id))
        return floe__err_set(a->err, FLOE_EINVAL, "%s: sort order id %d is taken", a->ctx,
                             (int)id);
    FLOE_FORWARD(jappend(a, list, copy_with_id(order, "order-id", id)));
    a->order = (added_id){true, id};
    a->changed = true;
    return FLOE_OK;
}

static int up_set_default_sort_order(apply_ctx *a, const json_t *u)
{
    return set_default(a, u, "sort-order-id", "sort-orders", "order-id",
                       "default-sort-order-id", &a->order, "sort order");
}

/* ---- snapshots and refs ---------------------------------------------------------- */

/* v3: the snapshot must carry first-row-id (not behind next-row-id) and
 * added-rows; next-row-id moves past the rows it assigned. */
static int add_lineage(apply_ctx *a, const floe__snapshot *s)
{
    if (doc_int(a->doc, "format-version", 1) < 3)
        return FLOE_OK;
    if (!s->has_first_row_id || !s->has_added_rows)
        return floe__err_set(a->err, FLOE_EINVAL, "%s: a snapshot of a v3 table needs "
                             "first-row-id and added-rows", a->ctx);
    int64_t next = doc_int(a->doc, "next-row-id", 0);
    if (s->first_row_id < next)
        return floe__err_set(a->err, FLOE_ECONFLICT, "%s: first-row-id %lld is behind the "
                             "table's next-row-id %lld (the snapshot is stale)", a->ctx,
                             (long long)s->first_row_id, (long long)next);
    if (s->added_rows > INT64_MAX - s->first_row_id)
        return floe__err_set(a->err, FLOE_EINVAL, "%s: added-rows overflows row ids", a->ctx);
    return jset(a, a->doc, "next-row-id", json_integer(s->first_row_id + s->added_rows));
}

static int up_add_snapshot(apply_ctx *a, const json_t *u)
{
    json_t *snap, *list;
    floe__snapshot s;
    FLOE_FORWARD(arg_kind(a, u, "snapshot", JSON_OBJECT, &snap));
    FLOE_FORWARD(floe__snapshot_parse(snap, true, FLOE_EINVAL, a->ctx, &s, a->err));
    FLOE_FORWARD(doc_container(a, "snapshots", true, &list));
    if (find_by_id(list, "snapshot-id", s.snapshot_id))
        return floe__err_set(a->err, FLOE_ECONFLICT, "%s: snapshot %lld already exists", a->ctx,
                             (long long)s.snapshot_id);
    int64_t last = doc_int(a->doc, "last-sequence-number", 0);
    if (s.sequence_number <= last)
        return floe__err_set(a->err, FLOE_ECONFLICT,
                             "%s: sequence number %lld is not above the table's "
                             "last-sequence-number %lld (the snapshot is stale)",
                             a->ctx, (long long)s.sequence_number, (long long)last);
    FLOE_FORWARD(add_lineage(a, &s));
    int64_t *ids = floe__realloc(a->added_snaps, (a->n_added_snaps + 1) * sizeof *ids);
    if (!ids)
        return FLOE_OOM(a->err);
    a->added_snaps = ids;
    ids[a->n_added_snaps++] = s.snapshot_id;
    FLOE_FORWARD(jappend(a, list, json_deep_copy(snap)));
    FLOE_FORWARD(jset(a, a->doc, "last-sequence-number", json_integer(s.sequence_number)));
    a->have_updated_ms = true;
    a->updated_ms = s.timestamp_ms;
    a->changed = true;
    return FLOE_OK;
}

static bool added_here(const apply_ctx *a, int64_t id)
{
    for (size_t i = 0; i < a->n_added_snaps; i++)
        if (a->added_snaps[i] == id)
            return true;
    return false;
}

/* The ref object a set-snapshot-ref update describes. */
static int make_ref(apply_ctx *a, const json_t *u, int64_t id, const char *type, json_t **out)
{
    static const char *const retention[] = {"min-snapshots-to-keep", "max-snapshot-age-ms",
                                            "max-ref-age-ms"};
    json_t *ref = json_pack("{s:I, s:s}", "snapshot-id", (json_int_t)id, "type", type);
    if (!ref)
        return FLOE_OOM(a->err);
    for (size_t i = 0; i < sizeof retention / sizeof retention[0]; i++) {
        json_t *v = json_object_get(u, retention[i]);
        if (!v || json_is_null(v))
            continue;
        if (!json_is_integer(v) || json_object_set(ref, retention[i], v) != 0) {
            json_decref(ref);
            return floe__err_set(a->err, FLOE_EINVAL, "%s: %s must be an integer", a->ctx,
                                 retention[i]);
        }
    }
    *out = ref;
    return FLOE_OK;
}

/* The refs map, created with the implied main branch when absent. */
static int doc_refs(apply_ctx *a, json_t **out)
{
    if (json_is_object(json_object_get(a->doc, "refs")))
        return doc_container(a, "refs", false, out);
    FLOE_FORWARD(doc_container(a, "refs", false, out));
    int64_t cur = doc_int(a->doc, "current-snapshot-id", -1);
    if (cur == -1)
        return FLOE_OK;
    return jset(a, *out, "main",
                json_pack("{s:I, s:s}", "snapshot-id", (json_int_t)cur, "type", "branch"));
}

static int move_main(apply_ctx *a, int64_t id, const json_t *snap)
{
    int64_t ts = added_here(a, id) ? doc_int(snap, "timestamp-ms", a->now_ms) : a->now_ms;
    json_t *log;
    FLOE_FORWARD(jset(a, a->doc, "current-snapshot-id", json_integer(id)));
    FLOE_FORWARD(doc_container(a, "snapshot-log", true, &log));
    FLOE_FORWARD(jappend(a, log, json_pack("{s:I, s:I}", "snapshot-id", (json_int_t)id,
                                           "timestamp-ms", (json_int_t)ts)));
    a->have_updated_ms = true;
    a->updated_ms = ts;
    return FLOE_OK;
}

static int up_set_snapshot_ref(apply_ctx *a, const json_t *u)
{
    const char *name, *type;
    int64_t id;
    FLOE_FORWARD(arg_str(a, u, "ref-name", &name));
    FLOE_FORWARD(arg_int(a, u, "snapshot-id", &id));
    FLOE_FORWARD(arg_str(a, u, "type", &type));
    bool main = strcmp(name, "main") == 0;
    if (strcmp(type, "branch") != 0 && (strcmp(type, "tag") != 0 || main))
        return floe__err_set(a->err, FLOE_EINVAL, "%s: type \"%s\" is not valid for ref %s",
                             a->ctx, type, name);
    const json_t *snap = find_by_id(json_object_get(a->doc, "snapshots"), "snapshot-id", id);
    if (!snap)
        return floe__err_set(a->err, FLOE_EINVAL, "%s: cannot set %s to unknown snapshot %lld",
                             a->ctx, name, (long long)id);
    json_t *ref = NULL, *refs = NULL;
    FLOE_FORWARD(make_ref(a, u, id, type, &ref));
    json_t *old = json_object_get(json_object_get(a->doc, "refs"), name);
    if (old && json_equal(old, ref) &&
        (!main || doc_int(a->doc, "current-snapshot-id", -1) == id)) {
        json_decref(ref);
        return FLOE_OK;
    }
    int rc = doc_refs(a, &refs);
    if (rc != FLOE_OK) {
        json_decref(ref);
        return rc;
    }
    FLOE_FORWARD(jset(a, refs, name, ref));
    a->changed = true;
    return main ? move_main(a, id, snap) : FLOE_OK;
}

/* ---- properties -------------------------------------------------------------------- */

static int up_set_properties(apply_ctx *a, const json_t *u)
{
    json_t *updates, *props;
    FLOE_FORWARD(arg_kind(a, u, "updates", JSON_OBJECT, &updates));
    const char *k;
    json_t *v;
    json_object_foreach(updates, k, v) {
        if (!json_is_string(v))
            return floe__err_set(a->err, FLOE_EINVAL, "%s: property \"%s\" must be a string",
                                 a->ctx, k);
    }
    if (json_object_size(updates) == 0)
        return FLOE_OK;
    FLOE_FORWARD(doc_container(a, "properties", false, &props));
    json_object_foreach(updates, k, v) {
        if (json_equal(json_object_get(props, k), v))
            continue;
        FLOE_FORWARD(jset(a, props, k, json_string(json_string_value(v))));
        a->changed = true;
    }
    return FLOE_OK;
}

static int up_remove_properties(apply_ctx *a, const json_t *u)
{
    json_t *removals;
    FLOE_FORWARD(arg_kind(a, u, "removals", JSON_ARRAY, &removals));
    json_t *props = json_object_get(a->doc, "properties");
    size_t i;
    json_t *k;
    json_array_foreach(removals, i, k) {
        if (!json_is_string(k))
            return floe__err_set(a->err, FLOE_EINVAL, "%s: removals[%zu] must be a string",
                                 a->ctx, i);
    }
    json_array_foreach(removals, i, k) {
        if (json_is_object(props) && json_object_del(props, json_string_value(k)) == 0)
            a->changed = true;
    }
    return FLOE_OK;
}

/* ---- removing snapshots and refs ------------------------------------------------------ */

static bool listed(const json_t *ids, int64_t id)
{
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v) {
        if (json_integer_value(v) == id)
            return true;
    }
    return false;
}

/* Drop ref `name`; dropping main leaves the table without a current snapshot. */
static int drop_ref(apply_ctx *a, const char *name)
{
    json_t *refs = json_object_get(a->doc, "refs");
    bool main = strcmp(name, "main") == 0;         /* name may be the key deleted next */
    if (refs && json_object_del(refs, name) == 0)
        a->changed = true;
    if (main && doc_int(a->doc, "current-snapshot-id", -1) != -1) {
        a->changed = true;
        return jset(a, a->doc, "current-snapshot-id", json_integer(-1));
    }
    return FLOE_OK;
}

/* As Java's builder: refs to removed snapshots go, and so do their
 * statistics and partition statistics; the snapshot-log keeps
 * only the entries after the last one whose snapshot is gone (the history
 * must not claim a snapshot the metadata no longer has). */
static int after_removal(apply_ctx *a)
{
    const json_t *snaps = json_object_get(a->doc, "snapshots");
    json_t *refs = json_object_get(a->doc, "refs");
    const char *name;
    json_t *ref, *tmp;
    json_object_foreach_safe(refs, tmp, name, ref) {
        if (!find_by_id(snaps, "snapshot-id", doc_int(ref, "snapshot-id", -1)))
            FLOE_FORWARD(drop_ref(a, name));
    }
    int64_t cur = doc_int(a->doc, "current-snapshot-id", -1);
    if (cur != -1 && !find_by_id(snaps, "snapshot-id", cur))
        FLOE_FORWARD(drop_ref(a, "main"));
    static const char *const stats[] = {"statistics", "partition-statistics"};
    for (int k = 0; k < 2; k++) {                  /* statistics of removed snapshots go */
        json_t *arr = json_object_get(a->doc, stats[k]);
        for (size_t i = json_array_size(arr); i-- > 0;)
            if (!find_by_id(snaps, "snapshot-id",
                            doc_int(json_array_get(arr, i), "snapshot-id", -1))) {
                json_array_remove(arr, i);
                a->changed = true;
            }
    }
    json_t *log = json_object_get(a->doc, "snapshot-log");
    size_t keep_from = 0;
    for (size_t i = 0; i < json_array_size(log); i++)
        if (!find_by_id(snaps, "snapshot-id", doc_int(json_array_get(log, i), "snapshot-id", -1)))
            keep_from = i + 1;
    for (; keep_from > 0; keep_from--)
        json_array_remove(log, 0);
    return FLOE_OK;
}

static int up_remove_snapshots(apply_ctx *a, const json_t *u)
{
    json_t *ids;
    FLOE_FORWARD(arg_kind(a, u, "snapshot-ids", JSON_ARRAY, &ids));
    size_t i;
    json_t *v;
    json_array_foreach(ids, i, v) {
        if (!json_is_integer(v))
            return floe__err_set(a->err, FLOE_EINVAL, "%s: snapshot-ids[%zu] must be an integer",
                                 a->ctx, i);
    }
    json_t *snaps = json_object_get(a->doc, "snapshots");
    for (size_t k = json_array_size(snaps); k-- > 0;) {
        if (listed(ids, doc_int(json_array_get(snaps, k), "snapshot-id", -1))) {
            json_array_remove(snaps, k);
            a->changed = true;
        }
    }
    return after_removal(a);
}

static int up_remove_snapshot_ref(apply_ctx *a, const json_t *u)
{
    const char *name;
    FLOE_FORWARD(arg_str(a, u, "ref-name", &name));
    return drop_ref(a, name);
}

/* ---- applying a list ----------------------------------------------------------------- */

typedef int (*update_fn)(apply_ctx *a, const json_t *u);

static const struct {
    const char *action;
    update_fn fn;
} UPDATES[] = {
    {"assign-uuid", up_assign_uuid},
    {"upgrade-format-version", up_upgrade_format_version},
    {"add-schema", up_add_schema},
    {"set-current-schema", up_set_current_schema},
    {"add-spec", up_add_spec},
    {"set-default-spec", up_set_default_spec},
    {"add-sort-order", up_add_sort_order},
    {"set-default-sort-order", up_set_default_sort_order},
    {"add-snapshot", up_add_snapshot},
    {"set-snapshot-ref", up_set_snapshot_ref},
    {"remove-snapshots", up_remove_snapshots},
    {"remove-snapshot-ref", up_remove_snapshot_ref},
    {"set-properties", up_set_properties},
    {"remove-properties", up_remove_properties},
    {"set-location", up_set_location},
};

static int apply_one(apply_ctx *a, size_t i, const json_t *u)
{
    snprintf(a->ctx, sizeof a->ctx, "updates[%zu]", i);
    if (!json_is_object(u))
        return floe__err_set(a->err, FLOE_EINVAL, "%s: must be an object", a->ctx);
    const char *action;
    FLOE_FORWARD(arg_str(a, u, "action", &action));
    snprintf(a->ctx, sizeof a->ctx, "updates[%zu] (%.48s)", i, action);
    if (doc_int(a->doc, "format-version", 1) < 2 &&
        strcmp(action, "upgrade-format-version") != 0)
        return floe__err_set(a->err, FLOE_EUNSUPPORTED,
                             "%s: floe changes only format v2 tables; upgrade-format-version "
                             "to 2 first", a->ctx);
    for (size_t k = 0; k < sizeof UPDATES / sizeof UPDATES[0]; k++)
        if (strcmp(action, UPDATES[k].action) == 0)
            return UPDATES[k].fn(a, u);
    return floe__err_set(a->err, FLOE_EUNSUPPORTED, "%s: unknown update action", a->ctx);
}

/* Append the base file to the metadata-log, keeping the newest `max`. */
static int log_previous_file(apply_ctx *a, const char *base_location)
{
    json_t *log;
    FLOE_FORWARD(doc_container(a, "metadata-log", true, &log));
    FLOE_FORWARD(jappend(a, log, json_pack("{s:s, s:I}", "metadata-file", base_location,
                                           "timestamp-ms",
                                           (json_int_t)floe__metadata_last_updated_ms(a->base))));
    int64_t max = FLOE_PREVIOUS_VERSIONS_MAX_DEFAULT;
    const char *s = json_string_value(
        json_object_get(json_object_get(a->doc, "properties"), FLOE_PROP_PREVIOUS_VERSIONS_MAX));
    if (s) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (*s && !*end)
            max = v;
    }
    if (max < 1)
        max = 1;
    while ((int64_t)json_array_size(log) > max)
        json_array_remove(log, 0);
    return FLOE_OK;
}

static int finish(apply_ctx *a, const char *base_location)
{
    if (!a->changed)
        return FLOE_OK;
    if (a->base && base_location)
        FLOE_FORWARD(log_previous_file(a, base_location));
    int64_t ms = a->have_updated_ms ? a->updated_ms : a->now_ms;
    if (a->base && ms < floe__metadata_last_updated_ms(a->base))
        ms = floe__metadata_last_updated_ms(a->base);
    return jset(a, a->doc, "last-updated-ms", json_integer(ms));
}

/* The document of a table that does not exist yet: every collection empty,
 * ids unset (-1), so only creation updates can make it valid. */
static json_t *empty_doc(void)
{
    return json_pack("{s:i, s:n, s:n, s:i, s:i, s:i, s:[], s:i, s:[], s:i, s:i, s:{}, s:[],"
                     " s:[], s:[], s:[], s:i, s:{}}",
                     "format-version", 2, "table-uuid", "location", "last-sequence-number", 0,
                     "last-updated-ms", 0, "last-column-id", 0, "schemas", "current-schema-id",
                     -1, "partition-specs", "default-spec-id", -1, "last-partition-id", 999,
                     "properties", "snapshots", "snapshot-log", "metadata-log", "sort-orders",
                     "default-sort-order-id", -1, "refs");
}

/* Rebuild the typed view; a document the updates left invalid is the
 * caller's mistake (FLOE_EINVAL), not a malformed file. */
static int rebuild(json_t *doc, floe__metadata **out, floe_error *err)
{
    floe_error *inner = floe_error_new();
    if (!inner) {
        json_decref(doc);
        return FLOE_OOM(err);
    }
    int rc = floe__metadata_from_json(doc, out, inner);
    if (rc == FLOE_EFORMAT)
        rc = floe__err_set(err, FLOE_EINVAL, "the updates leave invalid metadata: %s",
                           floe_error_message(inner));
    else if (rc != FLOE_OK)
        floe__err_move(err, inner);
    floe_error_free(inner);
    return rc;
}

int floe__metadata_apply(const floe__metadata *base, const char *base_location,
                         const json_t *updates, int64_t now_ms, floe__metadata **out,
                         bool *changed, floe_error *err)
{
    if (updates && !json_is_array(updates))
        return floe__err_set(err, FLOE_EINVAL, "updates must be a JSON array");
    apply_ctx a = {.base = base, .now_ms = now_ms, .err = err};
    a.doc = base ? json_deep_copy(floe__metadata_json(base)) : empty_doc();
    if (!a.doc)
        return FLOE_OOM(err);
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < json_array_size(updates); i++)
        rc = apply_one(&a, i, json_array_get(updates, i));
    if (rc == FLOE_OK)
        rc = finish(&a, base_location);
    floe__free(a.added_snaps);
    if (rc != FLOE_OK) {
        json_decref(a.doc);
        return rc;
    }
    if (changed)
        *changed = a.changed;
    return rebuild(a.doc, out, err);
}

/* ---- requirements ------------------------------------------------------------------- */

typedef struct check_ctx {
    const floe__metadata *base;
    char ctx[96];
    floe_error *err;
} check_ctx;

static int req_int(check_ctx *c, const json_t *r, const char *key, int64_t *out)
{
    return floe__mdjson_int(r, key, true, FLOE_EINVAL, c->ctx, out, NULL, c->err);
}

static int check_uuid(check_ctx *c, const json_t *r)
{
    const char *want;
    FLOE_FORWARD(floe__mdjson_str(r, "uuid", true, FLOE_EINVAL, c->ctx, &want, c->err));
    const char *have = floe__metadata_table_uuid(c->base);
    uint8_t w[16], h[16];
    if (floe__uuid_parse(want, strlen(want), w) != 0)
        return floe__err_set(c->err, FLOE_EINVAL, "%s: \"%s\" is not a uuid", c->ctx, want);
    if (!have || floe__uuid_parse(have, strlen(have), h) != 0 || memcmp(w, h, 16) != 0)
        return floe__err_set(c->err, FLOE_ECONFLICT, "%s: table uuid is %s, expected %s",
                             c->ctx, have ? have : "(none)", want);
    return FLOE_OK;
}

static int check_ref(check_ctx *c, const json_t *r)
{
    const char *ref;
    int64_t want = 0, have = 0;
    bool want_some = false;
    const char *type = NULL;
    FLOE_FORWARD(floe__mdjson_str(r, "ref", true, FLOE_EINVAL, c->ctx, &ref, c->err));
    FLOE_FORWARD(floe__mdjson_int(r, "snapshot-id", false, FLOE_EINVAL, c->ctx, &want,
                                  &want_some, c->err));
    bool exists = floe__metadata_ref(c->base, ref, &have, &type);
    if (!want_some && exists)
        return floe__err_set(c->err, FLOE_ECONFLICT,
                             "%s: %s %s was created concurrently (now at snapshot %lld)",
                             c->ctx, type, ref, (long long)have);
    if (want_some && !exists)
        return floe__err_set(c->err, FLOE_ECONFLICT,
                             "%s: branch or tag %s is missing, expected snapshot %lld", c->ctx,
                             ref, (long long)want);
    if (want_some && want != have)
        return floe__err_set(c->err, FLOE_ECONFLICT,
                             "%s: %s %s has changed: expected snapshot %lld, found %lld", c->ctx,
                             type, ref, (long long)want, (long long)have);
    return FLOE_OK;
}

/* The assert-* requirements that compare one integer. */
static int check_int(check_ctx *c, const json_t *r, const char *key, int64_t have,
                     const char *what)
{
    int64_t want;
    FLOE_FORWARD(req_int(c, r, key, &want));
    if (want != have)
        return floe__err_set(c->err, FLOE_ECONFLICT,
                             "%s: %s has changed: expected %lld, found %lld", c->ctx, what,
                             (long long)want, (long long)have);
    return FLOE_OK;
}

static int check_one(check_ctx *c, size_t i, const json_t *r)
{
    snprintf(c->ctx, sizeof c->ctx, "requirements[%zu]", i);
    if (!json_is_object(r))
        return floe__err_set(c->err, FLOE_EINVAL, "%s: must be an object", c->ctx);
    const char *type;
    FLOE_FORWARD(floe__mdjson_str(r, "type", true, FLOE_EINVAL, c->ctx, &type, c->err));
    snprintf(c->ctx, sizeof c->ctx, "requirements[%zu] (%.48s)", i, type);
    const floe__metadata *b = c->base;
    if (strcmp(type, "assert-create") == 0) {
        if (b)
            return floe__err_set(c->err, FLOE_ECONFLICT, "%s: the table already exists", c->ctx);
        return FLOE_OK;
    }
    static const char *const known[] = {"assert-table-uuid", "assert-ref-snapshot-id",
                                        "assert-current-schema-id", "assert-default-spec-id",
                                        "assert-last-assigned-field-id",
                                        "assert-last-assigned-partition-id",
                                        "assert-default-sort-order-id"};
    bool is_known = false;
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
        is_known = is_known || strcmp(type, known[k]) == 0;
    if (!is_known)
        return floe__err_set(c->err, FLOE_EINVAL, "%s: unknown requirement type", c->ctx);
    if (!b)
        return floe__err_set(c->err, FLOE_ECONFLICT, "%s: the table does not exist", c->ctx);
    if (strcmp(type, "assert-table-uuid") == 0)
        return check_uuid(c, r);
    if (strcmp(type, "assert-ref-snapshot-id") == 0)
        return check_ref(c, r);
    if (strcmp(type, "assert-current-schema-id") == 0)
        return check_int(c, r, "current-schema-id", floe__metadata_current_schema_id(b),
                         "current schema id");
    if (strcmp(type, "assert-default-spec-id") == 0)
        return check_int(c, r, "default-spec-id", floe__metadata_default_spec_id(b),
                         "default spec id");
    if (strcmp(type, "assert-last-assigned-field-id") == 0)
        return check_int(c, r, "last-assigned-field-id", floe__metadata_last_column_id(b),
                         "last assigned field id");
    if (strcmp(type, "assert-last-assigned-partition-id") == 0)
        return check_int(c, r, "last-assigned-partition-id",
                         floe__metadata_last_partition_id(b), "last assigned partition id");
    return check_int(c, r, "default-sort-order-id", floe__metadata_default_sort_order_id(b),
                     "default sort order id");
}

int floe__metadata_check(const floe__metadata *base, const json_t *requirements, floe_error *err)
{
    if (requirements && !json_is_array(requirements))
        return floe__err_set(err, FLOE_EINVAL, "requirements must be a JSON array");
    check_ctx c = {.base = base, .err = err};
    for (size_t i = 0; i < json_array_size(requirements); i++)
        FLOE_FORWARD(check_one(&c, i, json_array_get(requirements, i)));
    return FLOE_OK;
}

/* ---- creation --------------------------------------------------------------------------- */

static int push(json_t *arr, json_t *v, floe_error *err)
{
    if (!v || json_array_append_new(arr, v) != 0)
        return FLOE_OOM(err);
    return FLOE_OK;
}

/* json_pack's "o" takes over its argument even when packing fails, and a
 * NULL argument makes packing fail: each value is made right where it is
 * packed, so nothing leaks on out of memory. */
int floe__table_def_format_version(const floe__table_def *def, int *out, floe_error *err)
{
    int v = def->format_version;
    const char *p = json_string_value(json_object_get(def->properties, "format-version"));
    if (v == 0 && p) {
        char *end;
        long long x = strtoll(p, &end, 10);
        FLOE_RETURN_IF(!*p || *end, err, FLOE_EINVAL, "create table: property format-version "
                       "\"%s\" is not a number", p);
        v = x < 0 || x > 100 ? 100 : (int)x;
    }
    if (v == 0)
        v = 2;
    FLOE_RETURN_IF(v < 2 || v > FLOE_FORMAT_VERSION_MAX, err, FLOE_EUNSUPPORTED,
                   "create table: format version %d is not supported (floe writes 2 and 3)", v);
    *out = v;
    return FLOE_OK;
}

/* The properties to set: def's, without the reserved format-version. */
static int creation_props(const floe__table_def *def, json_t *ups, floe_error *err)
{
    if (!def->properties || json_object_size(def->properties) == 0)
        return FLOE_OK;
    json_t *props = json_copy((json_t *)def->properties);
    if (!props)
        return FLOE_OOM(err);
    json_object_del(props, "format-version");
    if (json_object_size(props) == 0) {
        json_decref(props);
        return FLOE_OK;
    }
    return push(ups, json_pack("{s:s, s:o}", "action", "set-properties", "updates", props), err);
}

static int creation_list(const floe__table_def *def, json_t *ups, floe_error *err)
{
    uint8_t u[16];
    char uuid[37];
    int version;
    FLOE_FORWARD(floe__table_def_format_version(def, &version, err));
    FLOE_FORWARD(floe__uuid_random(u, err));
    floe__uuid_format(u, uuid);
    FLOE_FORWARD(push(ups, json_pack("{s:s, s:s}", "action", "assign-uuid", "uuid", uuid), err));
    FLOE_FORWARD(push(ups, json_pack("{s:s, s:i}", "action", "upgrade-format-version",
                                     "format-version", version), err));
    FLOE_FORWARD(push(ups, json_pack("{s:s, s:o}", "action", "add-schema", "schema",
                                     copy_with_id(def->schema, "schema-id", 0)), err));
    FLOE_FORWARD(push(ups, json_pack("{s:s, s:i}", "action", "set-current-schema", "schema-id",
                                     -1), err));
    json_t *spec = def->partition_spec ? json_deep_copy(def->partition_spec)
                                       : json_pack("{s:i, s:[]}", "spec-id", 0, "fields");
    FLOE_FORWARD(push(ups, json_pack("{s:s, s:o}", "action", "add-spec", "spec", spec), err));
    FLOE_FORWARD(push(ups, json_pack("{s:s, s:i}", "action", "set-default-spec", "spec-id", -1),
                      err));
    json_t *order = def->sort_order ? json_deep_copy(def->sort_order)
                                    : json_pack("{s:i, s:[]}", "order-id", 0, "fields");
    FLOE_FORWARD(push(ups, json_pack("{s:s, s:o}", "action", "add-sort-order", "sort-order",
                                     order), err));
    FLOE_FORWARD(push(ups, json_pack("{s:s, s:i}", "action", "set-default-sort-order",
                                     "sort-order-id", -1), err));
    if (def->location)
        FLOE_FORWARD(push(ups, json_pack("{s:s, s:s}", "action", "set-location", "location",
                                         def->location), err));
    return creation_props(def, ups, err);
}

int floe__metadata_creation_updates(const floe__table_def *def, json_t **out, floe_error *err)
{
    if (!def || !json_is_object(def->schema))
        return floe__err_set(err, FLOE_EINVAL, "create table: a schema object is required");
    if (def->properties && !json_is_object(def->properties))
        return floe__err_set(err, FLOE_EINVAL, "create table: properties must be an object");
    json_t *ups = json_array();
    if (!ups)
        return FLOE_OOM(err);
    int rc = creation_list(def, ups, err);
    if (rc != FLOE_OK) {
        json_decref(ups);
        return rc;
    }
    *out = ups;
    return FLOE_OK;
}

int floe__metadata_create(const floe__table_def *def, int64_t now_ms, floe__metadata **out,
                          floe_error *err)
{
    if (!def || !def->location || !*def->location)
        return floe__err_set(err, FLOE_EINVAL, "create table: a location is required");
    json_t *ups;
    FLOE_FORWARD(floe__metadata_creation_updates(def, &ups, err));
    int rc = floe__metadata_apply(NULL, NULL, ups, now_ms, out, NULL, err);
    json_decref(ups);
    return rc;
}
