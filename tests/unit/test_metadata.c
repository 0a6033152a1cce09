/*
 * test_metadata.c - table metadata: parsing (a pyiceberg-written v2 file, a
 * hand-written v1 file from the spec, broken files), accessors, creation,
 * every requirement and update including their failures, metadata-log
 * bounding, file naming, location rules, and unknown-field preservation.
 */
#include <zlib.h>

#include "iceberg/metadata_internal.h"
#include "unit.h"

/* Written by pyiceberg 0.12 (SqlCatalog, two appends); warehouse renamed. */
static const char PYICEBERG_V2[] =
    "{\"location\":\"file:///warehouse/ns/t\",\"table-uuid\":\"918631db-a559-4017-9fbf-4518"
    "8644a0f8\",\"last-updated-ms\":1796040719445,\"last-column-id\":2,\"schemas\":[{\"type"
    "\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"id\",\"type\":\"long\",\"required\":fal"
    "se},{\"id\":2,\"name\":\"name\",\"type\":\"string\",\"required\":false}],\"schema-id\""
    ":0,\"identifier-field-ids\":[]}],\"current-schema-id\":0,\"partition-specs\":[{\"spec-"
    "id\":0,\"fields\":[]}],\"default-spec-id\":0,\"last-partition-id\":999,\"properties\":"
    "{\"a\":\"b\"},\"current-snapshot-id\":2234776904495669077,\"snapshots\":[{\"snapshot-i"
    "d\":4208748240572424748,\"sequence-number\":1,\"timestamp-ms\":1796040719417,\"manifes"
    "t-list\":\"file:///warehouse/ns/t/metadata/snap-4208748240572424748-0-64f04d0f-158f-40"
    "28-9d0d-b037115411dd.avro\",\"summary\":{\"operation\":\"append\",\"added-files-size\""
    ":\"920\",\"added-data-files\":\"1\",\"added-records\":\"2\",\"total-data-files\":\"1\""
    ",\"total-delete-files\":\"0\",\"total-records\":\"2\",\"total-files-size\":\"920\",\"t"
    "otal-position-deletes\":\"0\",\"total-equality-deletes\":\"0\"},\"schema-id\":0},{\"sn"
    "apshot-id\":2234776904495669077,\"parent-snapshot-id\":4208748240572424748,\"sequence-"
    "number\":2,\"timestamp-ms\":1796040719445,\"manifest-list\":\"file:///warehouse/ns/t/m"
    "etadata/snap-2234776904495669077-0-1efe85d3-b6bb-443e-a408-db1fc9f966ea.avro\",\"summa"
    "ry\":{\"operation\":\"append\",\"added-files-size\":\"907\",\"added-data-files\":\"1\""
    ",\"added-records\":\"1\",\"total-data-files\":\"2\",\"total-delete-files\":\"0\",\"tot"
    "al-records\":\"3\",\"total-files-size\":\"1827\",\"total-position-deletes\":\"0\",\"to"
    "tal-equality-deletes\":\"0\"},\"schema-id\":0}],\"snapshot-log\":[{\"snapshot-id\":420"
    "8748240572424748,\"timestamp-ms\":1796040719417},{\"snapshot-id\":2234776904495669077,"
    "\"timestamp-ms\":1796040719445}],\"metadata-log\":[{\"metadata-file\":\"file:///wareho"
    "use/ns/t/metadata/00000-16297c43-bff9-4c27-8de0-b820e8868eb2.metadata.json\",\"timesta"
    "mp-ms\":1796040719347},{\"metadata-file\":\"file:///warehouse/ns/t/metadata/00001-9089"
    "fa0e-ac09-4a4a-90ae-f1f0b8836576.metadata.json\",\"timestamp-ms\":1796040719417}],\"so"
    "rt-orders\":[{\"order-id\":0,\"fields\":[]}],\"default-sort-order-id\":0,\"refs\":{\"m"
    "ain\":{\"snapshot-id\":2234776904495669077,\"type\":\"branch\"}},\"statistics\":[],\"p"
    "artition-statistics\":[],\"format-version\":2,\"last-sequence-number\":2}";

#define SNAP1 4208748240572424748LL
#define SNAP2 2234776904495669077LL

/* A v1 table as the spec describes it: single schema and partition-spec,
 * snapshots without sequence numbers. */
static const char HAND_V1[] =
    "{\"format-version\":1,\"table-uuid\":\"fb072c92-a02b-11e9-ae9c-1bb7bc9eca94\","
    "\"location\":\"s3://b/wh/data.db/table\",\"last-updated-ms\":1515100955770,"
    "\"last-column-id\":3,"
    "\"schema\":{\"type\":\"struct\",\"fields\":["
    "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
    "{\"id\":2,\"name\":\"tags\",\"required\":false,\"type\":{\"type\":\"list\",\"element-id\":3,"
    "\"element\":\"string\",\"element-required\":false}}]},"
    "\"partition-spec\":[{\"name\":\"id_bucket\",\"transform\":\"bucket[16]\",\"source-id\":1}],"
    "\"properties\":{\"write.format.default\":\"parquet\"},"
    "\"current-snapshot-id\":3051729675574597004,"
    "\"snapshots\":[{\"snapshot-id\":3051729675574597004,\"timestamp-ms\":1515100955770,"
    "\"summary\":{\"operation\":\"append\"},\"manifest-list\":\"s3://b/wh/.../s1.avro\"}]}";

/* A minimal valid v2 document used as the base for broken variants. */
static const char MINIMAL_V2[] =
    "{\"format-version\":2,\"table-uuid\":\"9c12d441-03fe-4693-9a96-a0705ddf69c1\","
    "\"location\":\"file:///wh/ns/t\",\"last-sequence-number\":0,\"last-updated-ms\":1000,"
    "\"last-column-id\":1,\"schemas\":[{\"type\":\"struct\",\"schema-id\":0,\"fields\":"
    "[{\"id\":1,\"name\":\"x\",\"required\":false,\"type\":\"long\"}]}],"
    "\"current-schema-id\":0,\"partition-specs\":[{\"spec-id\":0,\"fields\":[]}],"
    "\"default-spec-id\":0,\"last-partition-id\":999,\"sort-orders\":[{\"order-id\":0,"
    "\"fields\":[]}],\"default-sort-order-id\":0}";

static floe__metadata *parse_ok(const char *text)
{
    floe__metadata *md = NULL;
    floe_error *err = floe_error_new();
    int rc = floe__metadata_parse(text, strlen(text), &md, err);
    if (rc != FLOE_OK)
        fprintf(stderr, "parse failed: %s\n", floe_error_message(err));
    CHECK_EQ_INT(rc, FLOE_OK);
    floe_error_free(err);
    return md;
}

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v)
        fprintf(stderr, "bad test JSON: %s: %s\n", e.text, text);
    return v;
}

/* Apply `updates` (JSON text) to base; returns the rc, *out on success. */
static int apply_txt(const floe__metadata *base, const char *loc, const char *updates,
                     int64_t now, floe__metadata **out, bool *changed, floe_error *err)
{
    json_t *u = J(updates);
    int rc = floe__metadata_apply(base, loc, u, now, out, changed, err);
    json_decref(u);
    return rc;
}

static int check_txt(const floe__metadata *base, const char *reqs, floe_error *err)
{
    json_t *r = J(reqs);
    int rc = floe__metadata_check(base, r, err);
    json_decref(r);
    return rc;
}

static bool msg_has(const floe_error *err, const char *needle)
{
    bool ok = strstr(floe_error_message(err), needle) != NULL;
    if (!ok)
        fprintf(stderr, "message \"%s\" lacks \"%s\"\n", floe_error_message(err), needle);
    return ok;
}

/* ---- parsing ----------------------------------------------------------------------- */

TEST(parse_pyiceberg_v2)
{
    floe__metadata *md = parse_ok(PYICEBERG_V2);
    if (!md)
        return;
    CHECK_EQ_INT(floe__metadata_format_version(md), 2);
    CHECK_EQ_STR(floe__metadata_table_uuid(md), "918631db-a559-4017-9fbf-45188644a0f8");
    CHECK_EQ_STR(floe__metadata_location(md), "file:///warehouse/ns/t");
    CHECK_EQ_INT(floe__metadata_last_sequence_number(md), 2);
    CHECK_EQ_INT(floe__metadata_last_updated_ms(md), 1796040719445LL);
    CHECK_EQ_INT(floe__metadata_last_column_id(md), 2);
    CHECK_EQ_INT(floe__metadata_last_partition_id(md), 999);
    CHECK_EQ_INT(floe__metadata_current_schema_id(md), 0);
    const json_t *schema = floe__metadata_current_schema(md);
    CHECK(schema == floe__metadata_schema_by_id(md, 0));
    CHECK(floe__metadata_schema_by_id(md, 1) == NULL);
    const json_t *fields = json_object_get(schema, "fields");
    CHECK_EQ_INT(json_array_size(fields), 2);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(fields, 1), "name")), "name");
    CHECK_EQ_INT(floe__metadata_default_spec_id(md), 0);
    CHECK_EQ_INT(json_array_size(json_object_get(floe__metadata_default_spec(md), "fields")), 0);
    CHECK(floe__metadata_spec_by_id(md, 0) == floe__metadata_default_spec(md));
    CHECK_EQ_INT(json_array_size(floe__metadata_specs(md)), 1);
    CHECK_EQ_INT(floe__metadata_default_sort_order_id(md), 0);
    CHECK_EQ_INT(json_array_size(floe__metadata_sort_orders(md)), 1);
    CHECK_EQ_STR(floe__metadata_property(md, "a"), "b");
    CHECK(floe__metadata_property(md, "nope") == NULL);
    CHECK_EQ_INT(floe__metadata_property_int(md, "a", 42), 42);
    CHECK_EQ_INT(floe__metadata_current_snapshot_id(md), SNAP2);
    int64_t ref = 0;
    const char *type = NULL;
    CHECK(floe__metadata_ref(md, "main", &ref, &type));
    CHECK_EQ_INT(ref, SNAP2);
    CHECK_EQ_STR(type, "branch");
    CHECK(!floe__metadata_ref(md, "dev", NULL, NULL));

    CHECK_EQ_INT(floe__metadata_snapshot_count(md), 2);
    const floe__snapshot *s0 = floe__metadata_snapshot_at(md, 0);
    const floe__snapshot *s1 = floe__metadata_snapshot_at(md, 1);
    CHECK(floe__metadata_snapshot_at(md, 2) == NULL);
    CHECK_EQ_INT(s0->snapshot_id, SNAP1);
    CHECK(!s0->has_parent);
    CHECK_EQ_INT(s0->sequence_number, 1);
    CHECK_EQ_INT(s0->timestamp_ms, 1796040719417LL);
    CHECK_EQ_STR(s0->operation, "append");
    CHECK_EQ_STR(floe__snapshot_summary_get(s0, "added-records"), "2");
    CHECK(s0->has_schema_id && s0->schema_id == 0);
    CHECK_EQ_INT(s1->snapshot_id, SNAP2);
    CHECK(s1->has_parent);
    CHECK_EQ_INT(s1->parent_snapshot_id, SNAP1);
    CHECK_EQ_INT(s1->sequence_number, 2);
    CHECK_EQ_STR(floe__snapshot_summary_get(s1, "total-records"), "3");
    CHECK(floe__snapshot_summary_get(s1, "floe.frontier") == NULL);
    CHECK(strstr(s1->manifest_list, "snap-2234776904495669077-0-") != NULL);
    CHECK(floe__metadata_snapshot_by_id(md, SNAP1) == s0);
    CHECK(floe__metadata_current_snapshot(md) == s1);
    CHECK(floe__metadata_snapshot_by_id(md, 7) == NULL);

    CHECK_EQ_INT(floe__metadata_snapshot_log_count(md), 2);
    CHECK_EQ_INT(floe__metadata_snapshot_log_at(md, 1)->snapshot_id, SNAP2);
    CHECK_EQ_INT(floe__metadata_snapshot_log_at(md, 0)->timestamp_ms, 1796040719417LL);
    CHECK(floe__metadata_snapshot_log_at(md, 2) == NULL);
    CHECK_EQ_INT(floe__metadata_metadata_log_count(md), 2);
    CHECK_EQ_STR(floe__metadata_metadata_log_at(md, 0)->metadata_file,
                 "file:///warehouse/ns/t/metadata/"
                 "00000-16297c43-bff9-4c27-8de0-b820e8868eb2.metadata.json");
    CHECK_EQ_INT(floe__metadata_metadata_log_at(md, 1)->timestamp_ms, 1796040719417LL);
    floe__metadata_free(md);
}

TEST(parse_v1)
{
    floe__metadata *md = parse_ok(HAND_V1);
    if (!md)
        return;
    CHECK_EQ_INT(floe__metadata_format_version(md), 1);
    CHECK_EQ_INT(floe__metadata_last_sequence_number(md), 0);
    CHECK_EQ_INT(floe__metadata_current_schema_id(md), 0);
    CHECK_EQ_INT(json_array_size(json_object_get(floe__metadata_current_schema(md), "fields")), 2);
    const json_t *spec = floe__metadata_default_spec(md);
    CHECK_EQ_INT(json_integer_value(json_object_get(spec, "spec-id")), 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(
                     json_array_get(json_object_get(spec, "fields"), 0), "field-id")),
                 1000);
    CHECK_EQ_INT(floe__metadata_last_partition_id(md), 1000);
    CHECK_EQ_INT(floe__metadata_default_sort_order_id(md), 0);
    CHECK_EQ_INT(floe__metadata_snapshot_count(md), 1);
    CHECK_EQ_INT(floe__metadata_snapshot_at(md, 0)->sequence_number, 0);
    CHECK_EQ_INT(floe__metadata_current_snapshot_id(md), 3051729675574597004LL);
    CHECK(floe__metadata_ref(md, "main", NULL, NULL));
    /* reading never rewrites the document */
    CHECK(json_object_get(floe__metadata_json(md), "schemas") == NULL);
    CHECK(json_object_get(floe__metadata_json(md), "schema") != NULL);
    floe__metadata_free(md);
}

/* Replace `key` in MINIMAL_V2 with `value` (NULL: delete it). */
static char *variant(const char *key, const char *value)
{
    json_t *d = J(MINIMAL_V2);
    if (value)
        json_object_set_new(d, key, J(value));
    else
        json_object_del(d, key);
    char *s = json_dumps(d, JSON_COMPACT);
    json_decref(d);
    return s;
}

TEST(parse_errors)
{
    static const struct {
        const char *key, *value;
        int code;
        const char *needle;
    } cases[] = {
        {"format-version", NULL, FLOE_EFORMAT, "\"format-version\" is missing"},
        {"format-version", "\"2\"", FLOE_EFORMAT, "must be an integer, not a string"},
        {"format-version", "4", FLOE_EUNSUPPORTED, "format-version 4 is not supported"},
        {"format-version", "0", FLOE_EFORMAT, "format-version 0 is invalid"},
        {"table-uuid", NULL, FLOE_EFORMAT, "\"table-uuid\" is missing"},
        {"table-uuid", "\"not-a-uuid\"", FLOE_EFORMAT, "is not a uuid"},
        {"location", NULL, FLOE_EFORMAT, "\"location\" is missing"},
        {"location", "null", FLOE_EFORMAT, "\"location\" is missing"},
        {"last-sequence-number", NULL, FLOE_EFORMAT, "\"last-sequence-number\" is missing"},
        {"last-sequence-number", "-1", FLOE_EFORMAT, "last-sequence-number is negative"},
        {"last-updated-ms", "1.5", FLOE_EFORMAT, "must be an integer, not a real number"},
        {"last-column-id", "4294967296", FLOE_EFORMAT, "out of int range"},
        {"schemas", NULL, FLOE_EFORMAT, "\"schemas\" is missing"},
        {"schemas", "[{\"type\":\"struct\",\"fields\":[]}]", FLOE_EFORMAT,
         "schemas[0]: field \"schema-id\" is missing"},
        {"schemas", "[{\"schema-id\":0,\"fields\":[]},{\"schema-id\":0,\"fields\":[]}]",
         FLOE_EFORMAT, "duplicate schema-id 0"},
        {"current-schema-id", "5", FLOE_EFORMAT, "current-schema-id 5 names no schema"},
        {"partition-specs", "{}", FLOE_EFORMAT, "must be an array, not an object"},
        {"default-spec-id", "1", FLOE_EFORMAT, "default-spec-id 1 names no spec"},
        {"last-partition-id", NULL, FLOE_EFORMAT, "\"last-partition-id\" is missing"},
        {"sort-orders", "[{\"order-id\":0}]", FLOE_EFORMAT, "\"fields\" is missing"},
        {"default-sort-order-id", "2", FLOE_EFORMAT, "default-sort-order-id 2 names no sort"},
        {"properties", "{\"a\":1}", FLOE_EFORMAT, "property \"a\" must be a string"},
        {"current-snapshot-id", "12", FLOE_EFORMAT, "current-snapshot-id 12 names no snapshot"},
        {"snapshots", "[{\"snapshot-id\":1,\"timestamp-ms\":1,\"manifest-list\":\"m\"}]",
         FLOE_EFORMAT, "snapshots[0]: field \"sequence-number\" is missing"},
        {"snapshots", "[{\"snapshot-id\":1,\"sequence-number\":0,\"timestamp-ms\":1}]",
         FLOE_EFORMAT, "snapshots[0]: field \"manifest-list\" is missing"},
        {"snapshots", "[{\"snapshot-id\":1,\"sequence-number\":1,\"timestamp-ms\":1,"
                      "\"manifest-list\":\"m\"}]",
         FLOE_EFORMAT, "sequence-number 1 is above last-sequence-number 0"},
        {"snapshots", "[{\"snapshot-id\":1,\"sequence-number\":0,\"timestamp-ms\":1,"
                      "\"manifest-list\":\"m\",\"summary\":{\"added\":\"1\"}}]",
         FLOE_EFORMAT, "summary: field \"operation\" is missing"},
        {"snapshots", "[{\"snapshot-id\":1,\"sequence-number\":0,\"timestamp-ms\":1,"
                      "\"manifest-list\":\"m\",\"summary\":{\"operation\":\"append\",\"n\":3}}]",
         FLOE_EFORMAT, "summary \"n\" must be a string"},
        {"snapshots", "[{\"snapshot-id\":1,\"sequence-number\":0,\"timestamp-ms\":1,"
                      "\"manifest-list\":\"m\"},{\"snapshot-id\":1,\"sequence-number\":0,"
                      "\"timestamp-ms\":1,\"manifest-list\":\"m\"}]",
         FLOE_EFORMAT, "duplicate snapshot-id 1"},
        {"refs", "{\"main\":{\"snapshot-id\":4,\"type\":\"branch\"}}", FLOE_EFORMAT,
         "refs[\"main\"]: snapshot 4 does not exist"},
        {"refs", "{\"x\":{\"type\":\"branch\"}}", FLOE_EFORMAT,
         "refs[\"x\"]: field \"snapshot-id\" is missing"},
        {"snapshot-log", "[{\"snapshot-id\":1}]", FLOE_EFORMAT,
         "snapshot-log[0]: field \"timestamp-ms\" is missing"},
        {"metadata-log", "[{\"timestamp-ms\":1}]", FLOE_EFORMAT,
         "metadata-log[0]: field \"metadata-file\" is missing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *text = variant(cases[i].key, cases[i].value);
        floe__metadata *md = NULL;
        floe_error *err = floe_error_new();
        int rc = floe__metadata_parse(text, strlen(text), &md, err);
        if (rc != cases[i].code)
            fprintf(stderr, "case %zu (%s): rc %d: %s\n", i, cases[i].key, rc,
                    floe_error_message(err));
        CHECK_EQ_INT(rc, cases[i].code);
        CHECK(md == NULL);
        CHECK(msg_has(err, cases[i].needle));
        floe_error_free(err);
        free(text);
    }
    /* not JSON, not an object, duplicate keys */
    static const char *const bad[] = {"", "{", "[1]", "{\"a\":1,\"a\":2}", "\x1f\x8b\x08garbage"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        floe__metadata *md = NULL;
        floe_error *err = floe_error_new();
        CHECK_EQ_INT(floe__metadata_parse(bad[i], strlen(bad[i]), &md, err), FLOE_EFORMAT);
        CHECK(md == NULL);
        floe_error_free(err);
    }
}

TEST(parse_gzip)
{
    uint8_t out[4096];
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    CHECK(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    zs.next_in = (Bytef *)PYICEBERG_V2;
    zs.avail_in = (uInt)strlen(PYICEBERG_V2);
    zs.next_out = out;
    zs.avail_out = sizeof out;
    CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
    size_t n = sizeof out - zs.avail_out;
    deflateEnd(&zs);
    floe__metadata *md = NULL;
    CHECK_EQ_INT(floe__metadata_parse(out, n, &md, NULL), FLOE_OK);
    if (md)
        CHECK_EQ_INT(floe__metadata_current_snapshot_id(md), SNAP2);
    floe__metadata_free(md);
    /* truncated gzip */
    CHECK_EQ_INT(floe__metadata_parse(out, n / 2, &md, NULL), FLOE_EFORMAT);
}

TEST(serialize_roundtrip)
{
    floe__metadata *md = parse_ok(PYICEBERG_V2);
    if (!md)
        return;
    char *text = NULL;
    CHECK_EQ_INT(floe__metadata_to_json(md, &text, NULL), FLOE_OK);
    floe__metadata *again = text ? parse_ok(text) : NULL;
    CHECK(again && json_equal(floe__metadata_json(md), floe__metadata_json(again)));
    /* compact output, key order kept */
    CHECK(text && strncmp(text, "{\"location\":\"file:///warehouse/ns/t\",\"table-uuid\"", 49) == 0);
    floe__free(text);
    floe__metadata_free(again);
    floe__metadata_free(md);
}

/* ---- creation ------------------------------------------------------------------------ */

static const char NESTED_SCHEMA[] =
    "{\"type\":\"struct\",\"schema-id\":7,\"identifier-field-ids\":[1],\"fields\":["
    "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
    "{\"id\":2,\"name\":\"tags\",\"required\":false,\"type\":{\"type\":\"list\","
    "\"element-id\":5,\"element\":\"string\",\"element-required\":false}},"
    "{\"id\":3,\"name\":\"attrs\",\"required\":false,\"type\":{\"type\":\"map\",\"key-id\":6,"
    "\"key\":\"string\",\"value-id\":7,\"value\":{\"type\":\"struct\",\"fields\":["
    "{\"id\":9,\"name\":\"v\",\"required\":false,\"type\":\"decimal(12, 2)\"}]},"
    "\"value-required\":false}},"
    "{\"id\":4,\"name\":\"ts\",\"required\":false,\"type\":\"timestamptz\"}]}";

TEST(create_defaults)
{
    json_t *schema = J(NESTED_SCHEMA), *props = J("{\"owner\":\"floe\",\"k\":\"v\"}");
    floe__table_def def = {.schema = schema, .location = "file:///wh/ns/t//", .properties = props};
    floe__metadata *md = NULL;
    floe_error *err = floe_error_new();
    int rc = floe__metadata_create(&def, 1234567, &md, err);
    if (rc)
        fprintf(stderr, "%s\n", floe_error_message(err));
    CHECK_EQ_INT(rc, FLOE_OK);
    if (md) {
        uint8_t u[16];
        const char *uuid = floe__metadata_table_uuid(md);
        CHECK(uuid && floe__uuid_parse(uuid, strlen(uuid), u) == 0);
        CHECK_EQ_INT(floe__metadata_format_version(md), 2);
        CHECK_EQ_STR(floe__metadata_location(md), "file:///wh/ns/t");
        CHECK_EQ_INT(floe__metadata_last_column_id(md), 9);
        CHECK_EQ_INT(floe__metadata_last_sequence_number(md), 0);
        CHECK_EQ_INT(floe__metadata_last_updated_ms(md), 1234567);
        CHECK_EQ_INT(floe__metadata_current_schema_id(md), 0);
        const json_t *s = floe__metadata_current_schema(md);
        CHECK(json_equal(json_object_get(s, "fields"), json_object_get(schema, "fields")));
        CHECK(json_integer_value(json_array_get(json_object_get(s, "identifier-field-ids"), 0)) == 1);
        CHECK_EQ_INT(floe__metadata_default_spec_id(md), 0);
        CHECK_EQ_INT(floe__metadata_last_partition_id(md), 999);
        CHECK_EQ_INT(floe__metadata_default_sort_order_id(md), 0);
        CHECK_EQ_STR(floe__metadata_property(md, "owner"), "floe");
        CHECK_EQ_STR(floe__metadata_property(md, "k"), "v");
        CHECK_EQ_INT(floe__metadata_current_snapshot_id(md), -1);
        CHECK(!floe__metadata_ref(md, "main", NULL, NULL));
        CHECK_EQ_INT(floe__metadata_snapshot_count(md), 0);
        CHECK_EQ_INT(floe__metadata_metadata_log_count(md), 0);
        /* two creations get different uuids */
        floe__metadata *md2 = NULL;
        CHECK_EQ_INT(floe__metadata_create(&def, 1, &md2, NULL), FLOE_OK);
        CHECK(md2 && strcmp(floe__metadata_table_uuid(md2), uuid) != 0);
        floe__metadata_free(md2);
    }
    floe__metadata_free(md);
    /* missing location / schema */
    def.location = NULL;
    CHECK_EQ_INT(floe__metadata_create(&def, 1, &md, err), FLOE_EINVAL);
    def.location = "file:///x";
    def.schema = NULL;
    CHECK_EQ_INT(floe__metadata_create(&def, 1, &md, err), FLOE_EINVAL);
    floe_error_free(err);
    json_decref(schema);
    json_decref(props);
}

TEST(create_partitioned_sorted)
{
    json_t *schema = J(NESTED_SCHEMA);
    json_t *spec = J("{\"spec-id\":3,\"fields\":[{\"source-id\":4,\"name\":\"ts_day\","
                     "\"transform\":\"day\"},{\"source-id\":1,\"name\":\"id_b\","
                     "\"transform\":\"bucket[8]\"}]}");
    json_t *order = J("{\"order-id\":0,\"fields\":[{\"transform\":\"identity\",\"source-id\":1,"
                      "\"direction\":\"asc\",\"null-order\":\"nulls-first\"}]}");
    floe__table_def def = {.schema = schema, .location = "s3://b/t", .partition_spec = spec,
                           .sort_order = order};
    floe__metadata *md = NULL;
    CHECK_EQ_INT(floe__metadata_create(&def, 5, &md, NULL), FLOE_OK);
    if (md) {
        const json_t *ds = floe__metadata_default_spec(md);
        CHECK_EQ_INT(floe__metadata_default_spec_id(md), 0);
        const json_t *f = json_object_get(ds, "fields");
        CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(f, 0), "field-id")), 1000);
        CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(f, 1), "field-id")), 1001);
        CHECK_EQ_INT(floe__metadata_last_partition_id(md), 1001);
        CHECK_EQ_INT(floe__metadata_default_sort_order_id(md), 1);
        CHECK_EQ_INT(json_array_size(floe__metadata_sort_orders(md)), 1);
    }
    floe__metadata_free(md);
    json_decref(schema);
    json_decref(spec);
    json_decref(order);
}

TEST(creation_updates_shape)
{
    json_t *schema = J(NESTED_SCHEMA);
    floe__table_def def = {.schema = schema};
    json_t *ups = NULL;
    CHECK_EQ_INT(floe__metadata_creation_updates(&def, &ups, NULL), FLOE_OK);
    static const char *const actions[] = {
        "assign-uuid", "upgrade-format-version", "add-schema", "set-current-schema",
        "add-spec", "set-default-spec", "add-sort-order", "set-default-sort-order"};
    CHECK_EQ_INT(json_array_size(ups), 8);   /* no location, no properties */
    for (size_t i = 0; i < 8 && i < json_array_size(ups); i++)
        CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(ups, i), "action")),
                     actions[i]);
    json_decref(ups);
    json_decref(schema);
}

/* ---- requirements ---------------------------------------------------------------------- */

TEST(requirements)
{
    floe__metadata *md = parse_ok(PYICEBERG_V2);
    if (!md)
        return;
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(check_txt(md, "[]", err), FLOE_OK);
    CHECK_EQ_INT(floe__metadata_check(md, NULL, err), FLOE_OK);
    CHECK_EQ_INT(check_txt(md,
        "[{\"type\":\"assert-table-uuid\",\"uuid\":\"918631DB-A559-4017-9FBF-45188644A0F8\"},"
        "{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\",\"snapshot-id\":2234776904495669077},"
        "{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"dev\",\"snapshot-id\":null},"
        "{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"tag1\"},"
        "{\"type\":\"assert-current-schema-id\",\"current-schema-id\":0},"
        "{\"type\":\"assert-default-spec-id\",\"default-spec-id\":0},"
        "{\"type\":\"assert-last-assigned-field-id\",\"last-assigned-field-id\":2},"
        "{\"type\":\"assert-last-assigned-partition-id\",\"last-assigned-partition-id\":999},"
        "{\"type\":\"assert-default-sort-order-id\",\"default-sort-order-id\":0}]", err),
        FLOE_OK);
    static const struct {
        const char *req;
        int code;
        const char *needle;
    } fails[] = {
        {"{\"type\":\"assert-create\"}", FLOE_ECONFLICT, "the table already exists"},
        {"{\"type\":\"assert-table-uuid\",\"uuid\":\"9c12d441-03fe-4693-9a96-a0705ddf69c1\"}",
         FLOE_ECONFLICT, "table uuid is 918631db"},
        {"{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\",\"snapshot-id\":4208748240572424748}",
         FLOE_ECONFLICT, "branch main has changed: expected snapshot 4208748240572424748, "
                         "found 2234776904495669077"},
        {"{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\",\"snapshot-id\":null}",
         FLOE_ECONFLICT, "branch main was created concurrently"},
        {"{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"dev\",\"snapshot-id\":5}",
         FLOE_ECONFLICT, "branch or tag dev is missing, expected snapshot 5"},
        {"{\"type\":\"assert-current-schema-id\",\"current-schema-id\":1}", FLOE_ECONFLICT,
         "current schema id has changed: expected 1, found 0"},
        {"{\"type\":\"assert-default-spec-id\",\"default-spec-id\":2}", FLOE_ECONFLICT,
         "default spec id has changed: expected 2, found 0"},
        {"{\"type\":\"assert-last-assigned-field-id\",\"last-assigned-field-id\":3}",
         FLOE_ECONFLICT, "last assigned field id has changed: expected 3, found 2"},
        {"{\"type\":\"assert-last-assigned-partition-id\",\"last-assigned-partition-id\":1000}",
         FLOE_ECONFLICT, "last assigned partition id has changed: expected 1000, found 999"},
        {"{\"type\":\"assert-default-sort-order-id\",\"default-sort-order-id\":1}",
         FLOE_ECONFLICT, "default sort order id has changed: expected 1, found 0"},
        {"{\"type\":\"assert-current-schema-id\"}", FLOE_EINVAL,
         "field \"current-schema-id\" is missing"},
        {"{\"type\":\"assert-nothing\"}", FLOE_EINVAL, "unknown requirement type"},
        {"{\"uuid\":\"x\"}", FLOE_EINVAL, "field \"type\" is missing"},
        {"17", FLOE_EINVAL, "must be an object"},
    };
    for (size_t i = 0; i < sizeof fails / sizeof fails[0]; i++) {
        char text[512];
        /* the failing requirement comes second: earlier ones pass */
        snprintf(text, sizeof text, "[{\"type\":\"assert-default-spec-id\",\"default-spec-id\":0},%s]",
                 fails[i].req);
        int rc = check_txt(md, text, err);
        if (rc != fails[i].code)
            fprintf(stderr, "case %zu: rc %d: %s\n", i, rc, floe_error_message(err));
        CHECK_EQ_INT(rc, fails[i].code);
        CHECK(msg_has(err, fails[i].needle));
        CHECK(msg_has(err, "requirements[1]"));
    }
    CHECK_EQ_INT(check_txt(md, "{}", err), FLOE_EINVAL);
    CHECK(floe_error_retryable(err) == 0);
    CHECK_EQ_INT(check_txt(md, "[{\"type\":\"assert-create\"}]", err), FLOE_ECONFLICT);
    CHECK(floe_error_retryable(err) == 1);
    /* a table that does not exist */
    CHECK_EQ_INT(check_txt(NULL, "[{\"type\":\"assert-create\"}]", err), FLOE_OK);
    CHECK_EQ_INT(check_txt(NULL, "[{\"type\":\"assert-table-uuid\",\"uuid\":"
                                 "\"918631db-a559-4017-9fbf-45188644a0f8\"}]", err),
                 FLOE_ECONFLICT);
    CHECK(msg_has(err, "the table does not exist"));
    floe_error_free(err);
    floe__metadata_free(md);

    /* main is implied by current-snapshot-id when refs is absent */
    json_t *d = J(PYICEBERG_V2);
    json_object_del(d, "refs");
    floe__metadata *norefs = NULL;
    CHECK_EQ_INT(floe__metadata_from_json(d, &norefs, NULL), FLOE_OK);
    CHECK_EQ_INT(check_txt(norefs, "[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\","
                                   "\"snapshot-id\":2234776904495669077}]", NULL), FLOE_OK);
    floe__metadata_free(norefs);
}

/* ---- updates ----------------------------------------------------------------------------- */

#define NEW_SNAP                                                                   \
    "{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":77,"              \
    "\"parent-snapshot-id\":2234776904495669077,\"sequence-number\":3,"            \
    "\"timestamp-ms\":1796040800000,\"manifest-list\":\"file:///warehouse/m.avro\"," \
    "\"summary\":{\"operation\":\"append\",\"floe.frontier\":\"[5]\"},\"schema-id\":0}}"

/* Expiry's updates: snapshots go with the refs that point at them and the
 * snapshot-log up to the last removed entry (as Java's builder does). */
TEST(remove_snapshots_and_refs)
{
    floe__metadata *md = parse_ok(PYICEBERG_V2), *a = NULL, *b = NULL, *c = NULL;
    if (!md)
        return;
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(apply_txt(md, NULL,
                           "[" NEW_SNAP ",{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\","
                           "\"type\":\"branch\",\"snapshot-id\":77},{\"action\":\"set-snapshot-ref\","
                           "\"ref-name\":\"t\",\"type\":\"tag\",\"snapshot-id\":2234776904495669077}]",
                           1796040900000, &a, NULL, err), FLOE_OK);
    if (!a)
        goto out;
    CHECK_EQ_INT(floe__metadata_snapshot_log_count(a), 3);
    CHECK_EQ_INT(apply_txt(a, NULL, "[{\"action\":\"remove-snapshots\",\"snapshot-ids\":"
                                    "[4208748240572424748]}]", 1796040900001, &b, NULL, err),
                 FLOE_OK);
    if (b) {
        CHECK_EQ_INT(floe__metadata_snapshot_count(b), 2);
        CHECK_EQ_INT(floe__metadata_snapshot_log_count(b), 2);       /* the first entry goes */
        CHECK(floe__metadata_ref(b, "t", NULL, NULL));
        CHECK_EQ_INT(floe__metadata_current_snapshot_id(b), 77);
        CHECK_EQ_INT(apply_txt(b, NULL, "[{\"action\":\"remove-snapshots\",\"snapshot-ids\":"
                                        "[2234776904495669077]},{\"action\":"
                                        "\"remove-snapshot-ref\",\"ref-name\":\"main\"}]",
                               1796040900002, &c, NULL, err), FLOE_OK);
    }
    if (c) {
        CHECK(!floe__metadata_ref(c, "t", NULL, NULL));               /* its snapshot went */
        CHECK_EQ_INT(floe__metadata_current_snapshot_id(c), -1);     /* main removed */
        CHECK_EQ_INT(floe__metadata_snapshot_count(c), 1);
        CHECK_EQ_INT(floe__metadata_snapshot_log_count(c), 1);
    }
out:
    floe__metadata_free(c);
    floe__metadata_free(b);
    floe__metadata_free(a);
    floe__metadata_free(md);
    floe_error_free(err);
}

TEST(add_snapshot_and_main)
{
    floe__metadata *md = parse_ok(PYICEBERG_V2), *a = NULL, *b = NULL;
    if (!md)
        return;
    floe_error *err = floe_error_new();
    bool changed = false;
    CHECK_EQ_INT(apply_txt(md, NULL, "[" NEW_SNAP "]", 1796040900000, &a, &changed, err),
                 FLOE_OK);
    if (a) {
        CHECK(changed);
        CHECK_EQ_INT(floe__metadata_snapshot_count(a), 3);
        CHECK_EQ_INT(floe__metadata_last_sequence_number(a), 3);
        CHECK_EQ_INT(floe__metadata_last_updated_ms(a), 1796040800000LL);
        CHECK_EQ_INT(floe__metadata_current_snapshot_id(a), SNAP2);   /* main not moved */
        const floe__snapshot *s = floe__metadata_snapshot_by_id(a, 77);
        CHECK(s && strcmp(floe__snapshot_summary_get(s, "floe.frontier"), "[5]") == 0);
        CHECK_EQ_INT(floe__metadata_snapshot_log_count(a), 2);
    }
    /* add + set main in one list: snapshot-log gets the snapshot's timestamp */
    CHECK_EQ_INT(apply_txt(md, NULL,
                           "[" NEW_SNAP ",{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\","
                           "\"type\":\"branch\",\"snapshot-id\":77}]",
                           1796040900000, &b, NULL, err),
                 FLOE_OK);
    if (b) {
        CHECK_EQ_INT(floe__metadata_current_snapshot_id(b), 77);
        int64_t id = 0;
        CHECK(floe__metadata_ref(b, "main", &id, NULL) && id == 77);
        CHECK_EQ_INT(floe__metadata_snapshot_log_count(b), 3);
        CHECK_EQ_INT(floe__metadata_snapshot_log_at(b, 2)->snapshot_id, 77);
        CHECK_EQ_INT(floe__metadata_snapshot_log_at(b, 2)->timestamp_ms, 1796040800000LL);
        CHECK_EQ_INT(floe__metadata_last_updated_ms(b), 1796040800000LL);
    }
    floe__metadata_free(b);
    b = NULL;
    /* moving main to an older snapshot (rollback) logs now */
    CHECK_EQ_INT(apply_txt(md, NULL, "[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\","
                                     "\"type\":\"branch\",\"snapshot-id\":4208748240572424748}]",
                           1796040900000, &b, NULL, err),
                 FLOE_OK);
    if (b) {
        CHECK_EQ_INT(floe__metadata_current_snapshot_id(b), SNAP1);
        CHECK_EQ_INT(floe__metadata_snapshot_log_at(b, 2)->timestamp_ms, 1796040900000LL);
        CHECK_EQ_INT(floe__metadata_last_updated_ms(b), 1796040900000LL);
    }
    floe__metadata_free(b);
    b = NULL;
    /* stale and broken snapshots */
    CHECK_EQ_INT(apply_txt(a, NULL, "[" NEW_SNAP "]", 1, &b, NULL, err), FLOE_ECONFLICT);
    CHECK(msg_has(err, "snapshot 77 already exists"));
    CHECK_EQ_INT(apply_txt(md, NULL,
                           "[{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":78,"
                           "\"sequence-number\":2,\"timestamp-ms\":1,\"manifest-list\":\"m\","
                           "\"summary\":{\"operation\":\"append\"}}}]",
                           1, &b, NULL, err),
                 FLOE_ECONFLICT);
    CHECK(msg_has(err, "sequence number 2 is not above the table's last-sequence-number 2"));
    CHECK(msg_has(err, "updates[0] (add-snapshot)"));
    CHECK_EQ_INT(apply_txt(md, NULL,
                           "[{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":78,"
                           "\"sequence-number\":3,\"timestamp-ms\":1}}]",
                           1, &b, NULL, err),
                 FLOE_EINVAL);
    CHECK(msg_has(err, "\"manifest-list\" is missing"));
    CHECK_EQ_INT(apply_txt(md, NULL, "[{\"action\":\"add-snapshot\"}]", 1, &b, NULL, err),
                 FLOE_EINVAL);
    CHECK(b == NULL);
    floe_error_free(err);
    floe__metadata_free(a);
    floe__metadata_free(md);
}

TEST(snapshot_refs)
{
    floe__metadata *md = parse_ok(PYICEBERG_V2), *a = NULL;
    if (!md)
        return;
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(apply_txt(md, NULL,
                           "[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"v1\",\"type\":\"tag\","
                           "\"snapshot-id\":4208748240572424748,\"max-ref-age-ms\":1000}]",
                           1796040900000, &a, NULL, err),
                 FLOE_OK);
    if (a) {
        int64_t id = 0;
        const char *type = NULL;
        CHECK(floe__metadata_ref(a, "v1", &id, &type) && id == SNAP1);
        CHECK_EQ_STR(type, "tag");
        CHECK_EQ_INT(floe__metadata_current_snapshot_id(a), SNAP2);
        CHECK_EQ_INT(floe__metadata_snapshot_log_count(a), 2);
        const json_t *ref = json_object_get(json_object_get(floe__metadata_json(a), "refs"), "v1");
        CHECK_EQ_INT(json_integer_value(json_object_get(ref, "max-ref-age-ms")), 1000);
    }
    /* same ref again: nothing changes */
    bool changed = true;
    floe__metadata *same = NULL;
    CHECK_EQ_INT(apply_txt(md, NULL,
                           "[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":"
                           "\"branch\",\"snapshot-id\":2234776904495669077}]",
                           1796040900000, &same, &changed, err),
                 FLOE_OK);
    CHECK(!changed);
    CHECK(same && floe__metadata_last_updated_ms(same) == floe__metadata_last_updated_ms(md));
    floe__metadata_free(same);
    floe__metadata *b = NULL;
    CHECK_EQ_INT(apply_txt(md, NULL, "[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\","
                                     "\"type\":\"tag\",\"snapshot-id\":2234776904495669077}]",
                           1, &b, NULL, err),
                 FLOE_EINVAL);
    CHECK_EQ_INT(apply_txt(md, NULL, "[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"x\","
                                     "\"type\":\"branch\",\"snapshot-id\":5}]",
                           1, &b, NULL, err),
                 FLOE_EINVAL);
    CHECK(msg_has(err, "cannot set x to unknown snapshot 5"));
    CHECK_EQ_INT(apply_txt(md, NULL, "[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"x\","
                                     "\"type\":\"leaf\",\"snapshot-id\":5}]",
                           1, &b, NULL, err),
                 FLOE_EINVAL);
    floe__metadata_free(a);
    floe__metadata_free(md);

    /* a table without a refs map: adding a ref writes main down too */
    json_t *d = J(PYICEBERG_V2);
    json_object_del(d, "refs");
    CHECK_EQ_INT(floe__metadata_from_json(d, &md, NULL), FLOE_OK);
    CHECK_EQ_INT(apply_txt(md, NULL, "[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"b\","
                                     "\"type\":\"branch\",\"snapshot-id\":4208748240572424748}]",
                           1796040900000, &a, NULL, err),
                 FLOE_OK);
    const json_t *refs = a ? json_object_get(floe__metadata_json(a), "refs") : NULL;
    CHECK_EQ_INT(json_object_size(refs), 2);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(refs, "main"), "snapshot-id")),
                 SNAP2);
    floe__metadata_free(a);
    floe__metadata_free(md);
    floe_error_free(err);
}

TEST(properties_updates)
{
    floe__metadata *md = parse_ok(PYICEBERG_V2), *a = NULL, *b = NULL;
    if (!md)
        return;
    floe_error *err = floe_error_new();
    bool changed = false;
    CHECK_EQ_INT(apply_txt(md, NULL,
                           "[{\"action\":\"set-properties\",\"updates\":{\"x\":\"1\",\"a\":\"c\"}},"
                           "{\"action\":\"remove-properties\",\"removals\":[\"x\",\"missing\"]},"
                           "{\"action\":\"set-properties\",\"updates\":{\"y\":\"2\"}}]",
                           1796040900000, &a, &changed, err),
                 FLOE_OK);
    CHECK(changed);
    if (a) {
        CHECK_EQ_STR(floe__metadata_property(a, "a"), "c");
        CHECK(floe__metadata_property(a, "x") == NULL);
        CHECK_EQ_STR(floe__metadata_property(a, "y"), "2");
        CHECK_EQ_INT(floe__metadata_property_int(a, "y", 0), 2);
        CHECK_EQ_INT(floe__metadata_last_updated_ms(a), 1796040900000LL);
        /* nothing else moved */
        CHECK_EQ_INT(floe__metadata_current_snapshot_id(a), SNAP2);
        CHECK_EQ_INT(floe__metadata_snapshot_count(a), 2);
    }
    /* setting what is there already, removing what is not: no change */
    CHECK_EQ_INT(apply_txt(a, "file:///warehouse/ns/t/metadata/00003-x.metadata.json",
                           "[{\"action\":\"set-properties\",\"updates\":{\"a\":\"c\"}},"
                           "{\"action\":\"remove-properties\",\"removals\":[\"zz\"]}]",
                           1796040999999, &b, &changed, err),
                 FLOE_OK);
    CHECK(!changed);
    CHECK(b && json_equal(floe__metadata_json(a), floe__metadata_json(b)));
    floe__metadata_free(b);
    b = NULL;
    CHECK_EQ_INT(apply_txt(md, NULL, "[{\"action\":\"set-properties\",\"updates\":{\"n\":1}}]", 1,
                           &b, NULL, err),
                 FLOE_EINVAL);
    CHECK(msg_has(err, "property \"n\" must be a string"));
    CHECK_EQ_INT(apply_txt(md, NULL, "[{\"action\":\"remove-properties\",\"removals\":[1]}]", 1,
                           &b, NULL, err),
                 FLOE_EINVAL);
    CHECK_EQ_INT(apply_txt(md, NULL, "[{\"action\":\"set-properties\"}]", 1, &b, NULL, err),
                 FLOE_EINVAL);
    CHECK(msg_has(err, "\"updates\" is missing"));
    floe__metadata_free(a);
    floe__metadata_free(md);
    floe_error_free(err);
}

TEST(last_updated_never_backwards)
{
    floe__metadata *md = parse_ok(PYICEBERG_V2), *a = NULL;
    if (!md)
        return;
    CHECK_EQ_INT(apply_txt(md, NULL, "[{\"action\":\"set-properties\",\"updates\":{\"q\":\"1\"}}]",
                           1000, &a, NULL, NULL),
                 FLOE_OK);
    CHECK(a && floe__metadata_last_updated_ms(a) == floe__metadata_last_updated_ms(md));
    floe__metadata_free(a);
    floe__metadata_free(md);
}

TEST(schema_spec_order_updates)
{
    floe__metadata *md = parse_ok(PYICEBERG_V2), *a = NULL, *b = NULL;
    if (!md)
        return;
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(apply_txt(md, NULL,
        "[{\"action\":\"add-schema\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
        "{\"id\":1,\"name\":\"id\",\"type\":\"long\",\"required\":false},"
        "{\"id\":2,\"name\":\"name\",\"type\":\"string\",\"required\":false},"
        "{\"id\":3,\"name\":\"extra\",\"type\":\"int\",\"required\":false}]}},"
        "{\"action\":\"set-current-schema\",\"schema-id\":-1},"
        "{\"action\":\"add-spec\",\"spec\":{\"fields\":[{\"source-id\":1,\"name\":\"id_b\","
        "\"transform\":\"bucket[4]\"}]}},"
        "{\"action\":\"set-default-spec\",\"spec-id\":-1},"
        "{\"action\":\"add-sort-order\",\"sort-order\":{\"order-id\":0,\"fields\":["
        "{\"transform\":\"identity\",\"source-id\":3,\"direction\":\"desc\","
        "\"null-order\":\"nulls-last\"}]}},"
        "{\"action\":\"set-default-sort-order\",\"sort-order-id\":-1}]",
        1796040900000, &a, NULL, err), FLOE_OK);
    if (a) {
        CHECK_EQ_INT(floe__metadata_current_schema_id(a), 1);
        CHECK_EQ_INT(floe__metadata_last_column_id(a), 3);
        CHECK_EQ_INT(json_array_size(floe__metadata_schemas(a)), 2);
        CHECK_EQ_INT(floe__metadata_default_spec_id(a), 1);
        CHECK_EQ_INT(floe__metadata_last_partition_id(a), 1000);
        CHECK_EQ_INT(floe__metadata_default_sort_order_id(a), 1);
    }
    /* re-adding an equal schema/spec/order reuses it; -1 then names it */
    bool changed = true;
    CHECK_EQ_INT(apply_txt(a,  NULL,
        "[{\"action\":\"add-schema\",\"schema\":{\"type\":\"struct\",\"schema-id\":9,\"fields\":["
        "{\"id\":1,\"name\":\"id\",\"type\":\"long\",\"required\":false},"
        "{\"id\":2,\"name\":\"name\",\"type\":\"string\",\"required\":false}]}},"
        "{\"action\":\"set-current-schema\",\"schema-id\":-1},"
        "{\"action\":\"add-spec\",\"spec\":{\"spec-id\":5,\"fields\":[]}},"
        "{\"action\":\"set-default-spec\",\"spec-id\":-1}]",
        1796040900001, &b, &changed, err), FLOE_OK);
    CHECK(changed);
    if (b) {
        CHECK_EQ_INT(floe__metadata_current_schema_id(b), 0);
        CHECK_EQ_INT(json_array_size(floe__metadata_schemas(b)), 2);
        CHECK_EQ_INT(floe__metadata_default_spec_id(b), 0);
        CHECK_EQ_INT(json_array_size(floe__metadata_specs(b)), 2);
        CHECK_EQ_INT(floe__metadata_last_column_id(b), 3);   /* never shrinks */
    }
    floe__metadata_free(b);
    b = NULL;
    static const struct {
        const char *ups;
        const char *needle;
    } fails[] = {
        {"[{\"action\":\"set-current-schema\",\"schema-id\":-1}]", "needs a schema added"},
        {"[{\"action\":\"set-current-schema\",\"schema-id\":4}]", "no schema with id 4"},
        {"[{\"action\":\"set-default-spec\",\"spec-id\":-1}]", "needs a partition spec added"},
        {"[{\"action\":\"set-default-spec\",\"spec-id\":3}]", "no partition spec with id 3"},
        {"[{\"action\":\"set-default-sort-order\",\"sort-order-id\":8}]", "no sort order with id 8"},
        {"[{\"action\":\"add-schema\",\"schema\":{\"type\":\"struct\"}}]", "\"fields\" is missing"},
        {"[{\"action\":\"add-spec\",\"spec\":[]}]", "\"spec\" must be an object"},
        {"[{\"action\":\"add-sort-order\"}]", "\"sort-order\" is missing"},
        {"[{\"action\":\"assign-uuid\",\"uuid\":\"9c12d441-03fe-4693-9a96-a0705ddf69c1\"}]",
         "cannot change"},
        {"[{\"action\":\"assign-uuid\",\"uuid\":\"nope\"}]", "is not a uuid"},
        {"[{\"action\":\"upgrade-format-version\",\"format-version\":1}]", "cannot downgrade"},
        {"[{\"action\":\"set-location\",\"location\":\"\"}]", "empty location"},
        {"[{}]", "\"action\" is missing"},
        {"[[]]", "must be an object"},
    };
    for (size_t i = 0; i < sizeof fails / sizeof fails[0]; i++) {
        int rc = apply_txt(md, NULL, fails[i].ups, 1, &b, NULL, err);
        if (rc != FLOE_EINVAL)
            fprintf(stderr, "case %zu: rc %d: %s\n", i, rc, floe_error_message(err));
        CHECK_EQ_INT(rc, FLOE_EINVAL);
        CHECK(msg_has(err, fails[i].needle));
        CHECK(b == NULL);
    }
    CHECK_EQ_INT(apply_txt(md, NULL, "[{\"action\":\"no-such-action\"}]", 1, &b, NULL, err),
                 FLOE_EUNSUPPORTED);
    CHECK(msg_has(err, "unknown update action"));
    CHECK_EQ_INT(apply_txt(md, NULL, "[{\"action\":\"upgrade-format-version\",\"format-version\":4}]",
                           1, &b, NULL, err),
                 FLOE_EUNSUPPORTED);
    CHECK_EQ_INT(apply_txt(md, NULL, "{}", 1, &b, NULL, err), FLOE_EINVAL);
    /* same uuid (any case) and same format version: no change */
    changed = true;
    CHECK_EQ_INT(apply_txt(md, NULL,
                           "[{\"action\":\"assign-uuid\",\"uuid\":"
                           "\"918631DB-A559-4017-9FBF-45188644A0F8\"},"
                           "{\"action\":\"upgrade-format-version\",\"format-version\":2}]",
                           1, &b, &changed, err),
                 FLOE_OK);
    CHECK(!changed);
    floe__metadata_free(b);
    floe__metadata_free(a);
    floe__metadata_free(md);
    floe_error_free(err);
}

TEST(set_location)
{
    floe__metadata *md = parse_ok(PYICEBERG_V2), *a = NULL;
    if (!md)
        return;
    CHECK_EQ_INT(apply_txt(md, NULL, "[{\"action\":\"set-location\",\"location\":\"s3://b/new///\"}]",
                           1796040900000, &a, NULL, NULL),
                 FLOE_OK);
    CHECK(a && strcmp(floe__metadata_location(a), "s3://b/new") == 0);
    floe__metadata_free(a);
    floe__metadata_free(md);
}

TEST(upgrade_v1)
{
    floe__metadata *md = parse_ok(HAND_V1), *a = NULL;
    if (!md)
        return;
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(apply_txt(md, NULL, "[{\"action\":\"set-properties\",\"updates\":{\"a\":\"b\"}}]",
                           1, &a, NULL, err),
                 FLOE_EUNSUPPORTED);
    CHECK(msg_has(err, "upgrade-format-version to 2 first"));
    CHECK_EQ_INT(apply_txt(md, NULL,
                           "[{\"action\":\"upgrade-format-version\",\"format-version\":2},"
                           "{\"action\":\"set-properties\",\"updates\":{\"a\":\"b\"}}]",
                           1515100999999, &a, NULL, err),
                 FLOE_OK);
    if (a) {
        const json_t *d = floe__metadata_json(a);
        CHECK_EQ_INT(floe__metadata_format_version(a), 2);
        CHECK_EQ_STR(floe__metadata_table_uuid(a), "fb072c92-a02b-11e9-ae9c-1bb7bc9eca94");
        CHECK(json_object_get(d, "schema") == NULL);
        CHECK(json_object_get(d, "partition-spec") == NULL);
        CHECK_EQ_INT(json_array_size(json_object_get(d, "schemas")), 1);
        CHECK_EQ_INT(json_integer_value(json_object_get(d, "last-sequence-number")), 0);
        CHECK_EQ_INT(json_integer_value(json_object_get(d, "last-partition-id")), 1000);
        CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(
                         json_object_get(d, "snapshots"), 0), "sequence-number")), 0);
        CHECK_EQ_STR(floe__metadata_property(a, "a"), "b");
        CHECK_EQ_STR(floe__metadata_property(a, "write.format.default"), "parquet");
        /* the upgraded document stands on its own */
        char *text = NULL;
        CHECK_EQ_INT(floe__metadata_to_json(a, &text, NULL), FLOE_OK);
        floe__metadata *again = text ? parse_ok(text) : NULL;
        CHECK(again && floe__metadata_default_spec_id(again) == 0);
        floe__metadata_free(again);
        floe__free(text);
    }
    floe__metadata_free(a);
    floe__metadata_free(md);
    floe_error_free(err);
}

TEST(metadata_log_bounded)
{
    floe__metadata *md = parse_ok(PYICEBERG_V2);
    if (!md)
        return;
    /* default bound (100): the previous file is appended with base's time */
    floe__metadata *a = NULL;
    CHECK_EQ_INT(apply_txt(md, "file:///warehouse/ns/t/metadata/00002-x.metadata.json",
                           "[{\"action\":\"set-properties\",\"updates\":{\"k\":\"1\"}}]",
                           1796040900000, &a, NULL, NULL),
                 FLOE_OK);
    if (a) {
        CHECK_EQ_INT(floe__metadata_metadata_log_count(a), 3);
        CHECK_EQ_STR(floe__metadata_metadata_log_at(a, 2)->metadata_file,
                     "file:///warehouse/ns/t/metadata/00002-x.metadata.json");
        CHECK_EQ_INT(floe__metadata_metadata_log_at(a, 2)->timestamp_ms, 1796040719445LL);
    }
    floe__metadata_free(a);
    /* bound 3: after five commits only the newest three previous files stay */
    floe__metadata *cur = NULL;
    CHECK_EQ_INT(apply_txt(md, NULL, "[{\"action\":\"set-properties\",\"updates\":"
                                     "{\"write.metadata.previous-versions-max\":\"3\"}}]",
                           1796040900000, &cur, NULL, NULL),
                 FLOE_OK);
    for (int i = 0; cur && i < 5; i++) {
        char loc[64], ups[128];
        snprintf(loc, sizeof loc, "file:///m/%05d-u.metadata.json", i);
        snprintf(ups, sizeof ups, "[{\"action\":\"set-properties\",\"updates\":{\"i\":\"%d\"}}]", i);
        floe__metadata *next = NULL;
        CHECK_EQ_INT(apply_txt(cur, loc, ups, 1796040900001 + i, &next, NULL, NULL), FLOE_OK);
        floe__metadata_free(cur);
        cur = next;
    }
    if (cur) {
        CHECK_EQ_INT(floe__metadata_metadata_log_count(cur), 3);
        CHECK_EQ_STR(floe__metadata_metadata_log_at(cur, 0)->metadata_file,
                     "file:///m/00002-u.metadata.json");
        CHECK_EQ_STR(floe__metadata_metadata_log_at(cur, 2)->metadata_file,
                     "file:///m/00004-u.metadata.json");
        CHECK_EQ_INT(floe__metadata_metadata_log_at(cur, 2)->timestamp_ms, 1796040900004LL);
    }
    /* bound 0 or garbage: at least one entry is kept / default applies */
    floe__metadata *z = NULL;
    CHECK_EQ_INT(apply_txt(cur, "file:///m/last.metadata.json",
                           "[{\"action\":\"set-properties\",\"updates\":"
                           "{\"write.metadata.previous-versions-max\":\"0\"}}]",
                           1796040999999, &z, NULL, NULL),
                 FLOE_OK);
    CHECK(z && floe__metadata_metadata_log_count(z) == 1);
    floe__metadata_free(z);
    floe__metadata_free(cur);
    floe__metadata_free(md);
}

TEST(unknown_fields_survive)
{
    json_t *d = J(PYICEBERG_V2);
    json_object_set_new(d, "x-vendor", J("{\"nested\":[1,2.5,\"s\",null,true,{\"k\":[]}]}"));
    json_object_set_new(d, "statistics", J("[{\"snapshot-id\":4208748240572424748,"
                                           "\"statistics-path\":\"p\",\"file-size-in-bytes\":1,"
                                           "\"file-footer-size-in-bytes\":1,\"blob-metadata\":[]}]"));
    json_object_set_new(json_array_get(json_object_get(d, "snapshots"), 0), "x-snap",
                        json_string("kept"));
    json_object_set_new(json_array_get(json_object_get(d, "schemas"), 0), "x-schema",
                        json_integer(5));
    json_t *orig = json_deep_copy(d);
    floe__metadata *md = NULL, *a = NULL, *again = NULL;
    CHECK_EQ_INT(floe__metadata_from_json(d, &md, NULL), FLOE_OK);
    CHECK_EQ_INT(apply_txt(md, "file:///warehouse/ns/t/metadata/00002-x.metadata.json",
                           "[" NEW_SNAP ",{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\","
                           "\"type\":\"branch\",\"snapshot-id\":77},{\"action\":\"set-properties\","
                           "\"updates\":{\"p\":\"q\"}}]",
                           1796040900000, &a, NULL, NULL),
                 FLOE_OK);
    char *text = NULL;
    if (a)
        CHECK_EQ_INT(floe__metadata_to_json(a, &text, NULL), FLOE_OK);
    if (text)
        again = parse_ok(text);
    if (again) {
        const json_t *g = floe__metadata_json(again);
        CHECK(json_equal(json_object_get(g, "x-vendor"), json_object_get(orig, "x-vendor")));
        CHECK(json_equal(json_object_get(g, "statistics"), json_object_get(orig, "statistics")));
        CHECK_EQ_STR(json_string_value(json_object_get(
                         json_array_get(json_object_get(g, "snapshots"), 0), "x-snap")), "kept");
        CHECK_EQ_INT(json_integer_value(json_object_get(
                         json_array_get(json_object_get(g, "schemas"), 0), "x-schema")), 5);
        CHECK(json_is_array(json_object_get(g, "partition-statistics")));
        /* everything the updates did not touch is equal */
        static const char *const same[] = {"location", "table-uuid", "schemas", "partition-specs",
                                           "sort-orders", "format-version", "last-column-id"};
        for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
            CHECK(json_equal(json_object_get(g, same[i]), json_object_get(orig, same[i])));
        CHECK_EQ_INT(floe__metadata_current_snapshot_id(again), 77);
        CHECK_EQ_INT(floe__metadata_metadata_log_count(again), 3);
    }
    floe__free(text);
    json_decref(orig);
    floe__metadata_free(again);
    floe__metadata_free(a);
    floe__metadata_free(md);
}

/* ---- naming and locations ------------------------------------------------------------------ */

TEST(file_names)
{
    CHECK_EQ_INT(floe__metadata_file_version(
                     "file:///w/t/metadata/00012-6c97e413-d51b-4538-ac70-12fe2a85cb83.metadata.json"),
                 12);
    CHECK_EQ_INT(floe__metadata_file_version("s3://b/t/metadata/123456-x.metadata.json"), 123456);
    CHECK_EQ_INT(floe__metadata_file_version("/t/metadata/v7.metadata.json"), 7);
    CHECK_EQ_INT(floe__metadata_file_version("/t/metadata/00003-x.gz.metadata.json"), 3);
    CHECK_EQ_INT(floe__metadata_file_version("/t/metadata/00003-x.metadata.json.gz"), 3);
    CHECK_EQ_INT(floe__metadata_file_version("/t/metadata/x-00003.metadata.json"), -1);
    CHECK_EQ_INT(floe__metadata_file_version("/t/metadata/00003.metadata.json"), -1);
    CHECK_EQ_INT(floe__metadata_file_version("/t/metadata/00003-x.json"), -1);
    CHECK_EQ_INT(floe__metadata_file_version("/t/metadata/99999999999999999999-x.metadata.json"), -1);
    CHECK_EQ_INT(floe__metadata_file_version(NULL), -1);

    floe__metadata *md = parse_ok(PYICEBERG_V2);
    if (!md)
        return;
    char *loc = NULL;
    CHECK_EQ_INT(floe__metadata_new_file_location(
                     md, "file:///warehouse/ns/t/metadata/00002-f2d8607f.metadata.json", &loc, NULL),
                 FLOE_OK);
    const char *prefix = "file:///warehouse/ns/t/metadata/00003-";
    CHECK(loc && strncmp(loc, prefix, strlen(prefix)) == 0);
    CHECK(loc && strlen(loc) == strlen(prefix) + 36 + strlen(".metadata.json"));
    uint8_t u[16];
    CHECK(loc && floe__uuid_parse(loc + strlen(prefix), 36, u) == 0);
    CHECK(loc && floe__str_ends(loc, ".metadata.json"));
    CHECK_EQ_INT(floe__metadata_file_version(loc), 3);
    char *loc2 = NULL;
    CHECK_EQ_INT(floe__metadata_new_file_location(md, NULL, &loc2, NULL), FLOE_OK);
    CHECK(loc2 && strncmp(loc2, "file:///warehouse/ns/t/metadata/00000-", 38) == 0);
    CHECK(loc && loc2 && strcmp(loc + 38, loc2 + 38) != 0);   /* fresh uuid each time */
    floe__free(loc2);
    loc2 = NULL;
    CHECK_EQ_INT(floe__metadata_new_file_location(md, "s3://x/t/metadata/v9.metadata.json",
                                                  &loc2, NULL),
                 FLOE_OK);
    CHECK(loc2 && strncmp(loc2, "file:///warehouse/ns/t/metadata/00010-", 38) == 0);
    floe__free(loc2);
    loc2 = NULL;
    CHECK_EQ_INT(floe__metadata_new_file_location(md, "file:///w/t/metadata/99999-a.metadata.json",
                                                  &loc2, NULL),
                 FLOE_OK);
    CHECK(loc2 && strncmp(loc2, "file:///warehouse/ns/t/metadata/100000-", 39) == 0);
    floe__free(loc2);
    floe__free(loc);
    /* write.metadata.path moves metadata files */
    floe__metadata *a = NULL;
    CHECK_EQ_INT(apply_txt(md, NULL, "[{\"action\":\"set-properties\",\"updates\":"
                                     "{\"write.metadata.path\":\"s3://meta/t//\"}}]",
                           1796040900000, &a, NULL, NULL),
                 FLOE_OK);
    loc = NULL;
    if (a)
        CHECK_EQ_INT(floe__metadata_new_file_location(a, NULL, &loc, NULL), FLOE_OK);
    CHECK(loc && strncmp(loc, "s3://meta/t/00000-", 18) == 0);
    floe__free(loc);
    floe__metadata_free(a);
    floe__metadata_free(md);
}

static void check_root(const char *in, const char *want)
{
    char *out = NULL;
    CHECK_EQ_INT(floe__location_table_root(in, &out, NULL), FLOE_OK);
    CHECK_EQ_STR(out, want);
    floe__free(out);
}

static void check_trim(const char *in, const char *want)
{
    char *out = floe__location_trim(in);
    CHECK_EQ_STR(out, want);
    floe__free(out);
}

TEST(location_rules)
{
    check_trim("s3://b/t///", "s3://b/t");
    check_trim("s3://b/", "s3://b");
    check_trim("s3://", "s3://");
    check_trim("file:///", "file:///");
    check_trim("file:////", "file:///");
    check_trim("file:/tmp/w/", "file:/tmp/w");
    check_trim("/", "/");
    check_trim("/a/b//", "/a/b");
    check_trim("rel/", "rel");
    check_root("file:///w/ns/t/metadata/00001-abc.metadata.json", "file:///w/ns/t");
    check_root("s3://b/metadata/t/metadata/00001-abc.metadata.json", "s3://b/metadata/t");
    check_root("s3://b/t/metadata/v3.metadata.json.gz", "s3://b/t");
    check_root("s3://b/t/00001-abc.metadata.json", "s3://b/t");
    check_root("s3://b/t/", "s3://b/t");
    check_root("s3://b/metadata/t", "s3://b/metadata/t");
    char *out = NULL;
    CHECK_EQ_INT(floe__location_table_root("", &out, NULL), FLOE_EINVAL);

    static const struct {
        const char *location, *props, *data;
    } cases[] = {
        {"file:///w/ns/t", "{}", "file:///w/ns/t/data"},
        {"file:///w/ns/t///", "{}", "file:///w/ns/t/data"},
        {"s3://b/t/metadata/00004-u.metadata.json", "{}", "s3://b/t/data"},
        {"s3://b/t", "{\"write.data.path\":\"s3://other/d///\"}", "s3://other/d"},
        {"s3://b/t", "{\"write.folder-storage.path\":\"s3://fs/d/\"}", "s3://fs/d"},
        {"s3://b/t", "{\"write.folder-storage.path\":\"s3://fs/d/\",\"write.data.path\":\"s3://dp\"}",
         "s3://dp"},
        {"s3://b/t", "{\"write.data.path\":\"\"}", "s3://b/t/data"},
        {"s3://b/", "{}", "s3://b/data"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *d = J(MINIMAL_V2);
        json_object_set_new(d, "location", json_string(cases[i].location));
        json_object_set_new(d, "properties", J(cases[i].props));
        floe__metadata *md = NULL;
        CHECK_EQ_INT(floe__metadata_from_json(d, &md, NULL), FLOE_OK);
        char *data = NULL;
        if (md)
            CHECK_EQ_INT(floe__metadata_data_location(md, &data, NULL), FLOE_OK);
        if (!data || strcmp(data, cases[i].data) != 0)
            fprintf(stderr, "case %zu\n", i);
        CHECK_EQ_STR(data, cases[i].data);
        const char *path = data ? strstr(data, "://") + 3 : NULL;
        CHECK(path && strstr(path + 1, "//") == NULL);
        floe__free(data);
        floe__metadata_free(md);
    }
}

int main(void)
{
    RUN(parse_pyiceberg_v2);
    RUN(parse_v1);
    RUN(parse_errors);
    RUN(parse_gzip);
    RUN(serialize_roundtrip);
    RUN(create_defaults);
    RUN(create_partitioned_sorted);
    RUN(creation_updates_shape);
    RUN(requirements);
    RUN(add_snapshot_and_main);
    RUN(remove_snapshots_and_refs);
    RUN(snapshot_refs);
    RUN(properties_updates);
    RUN(last_updated_never_backwards);
    RUN(schema_spec_order_updates);
    RUN(set_location);
    RUN(upgrade_v1);
    RUN(metadata_log_bounded);
    RUN(unknown_fields_survive);
    RUN(file_names);
    RUN(location_rules);
    return UNIT_DONE();
}
