/*
 * test_partition.c - partition transforms (iceberg/partition.c) against
 * the Iceberg spec's Appendix B hash test vectors and its truncate
 * examples, temporal transforms at and before the epoch, and partition
 * specs (partition_spec.c): metadata JSON, DDL text, validation, tuples.
 */
#include <jansson.h>
#include <stdlib.h>

#include "iceberg/partition_internal.h"
#include "unit.h"

static floe__field fld(floe__kind k)
{
    return (floe__field){.name = (char *)"c", .kind = k, .precision = 9, .scale = 2,
                         .length = 4};
}

/* The spec's hash of v's single value; and bucket[N] of v equals it. */
static int32_t hash_of(floe__kind k, const uint8_t *payload)
{
    floe__field f = fld(k);
    floe__buf b;
    floe__buf_init(&b, 0);
    floe__transform t = {FLOE_TR_BUCKET, INT32_MAX};
    floe__transform_apply(&t, &f, payload, &b, NULL);
    int32_t bucket = (int32_t)floe__get_le32(b.data + 1);
    floe__buf_free(&b);
    return bucket;
}

static void le64(uint8_t *p, int64_t v) { floe__put_le64(p, (uint64_t)v); }
static void le32(uint8_t *p, int32_t v) { floe__put_le32(p, (uint32_t)v); }

/* (h & INT_MAX) % INT_MAX of the spec's (signed) vector h. */
static int32_t expect(int32_t h) { return (int32_t)(((uint32_t)h & 0x7fffffffu) % 0x7fffffffu); }

TEST(murmur3_vectors)
{
    uint8_t p[32];
    le32(p, 34);
    CHECK_EQ_INT(hash_of(FLOE_K_INT, p), expect(2017239379));
    le64(p, 34);
    CHECK_EQ_INT(hash_of(FLOE_K_LONG, p), expect(2017239379));
    __int128 d = 1420;                           /* 14.20 as decimal(9,2) */
    memcpy(p, &d, 16);
    CHECK_EQ_INT(hash_of(FLOE_K_DECIMAL, p), expect(-500754589));
    le32(p, 17486);                              /* 2017-11-16 */
    CHECK_EQ_INT(hash_of(FLOE_K_DATE, p), expect(-653330422));
    le64(p, 81068000000LL);                      /* 22:31:08 */
    CHECK_EQ_INT(hash_of(FLOE_K_TIME, p), expect(-662762989));
    le64(p, 1510871468000000LL);                 /* 2017-11-16T22:31:08 */
    CHECK_EQ_INT(hash_of(FLOE_K_TIMESTAMP, p), expect(-2047944441));
    CHECK_EQ_INT(hash_of(FLOE_K_TIMESTAMPTZ, p), expect(-2047944441));
    le32(p, 7);
    memcpy(p + 4, "iceberg", 7);
    CHECK_EQ_INT(hash_of(FLOE_K_STRING, p), expect(1210000089));
    static const uint8_t uuid[16] = {0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4b, 0xbd,
                                     0xa4, 0x79, 0x3f, 0x34, 0x9c, 0xb7, 0x85, 0xe7};
    CHECK_EQ_INT(hash_of(FLOE_K_UUID, uuid), expect(1488055340));
    static const uint8_t bytes[4] = {0, 1, 2, 3};
    CHECK_EQ_INT(hash_of(FLOE_K_FIXED, bytes), expect(-188683207));
    le32(p, 4);
    memcpy(p + 4, bytes, 4);
    CHECK_EQ_INT(hash_of(FLOE_K_BINARY, p), expect(-188683207));
    CHECK_EQ_INT((int32_t)floe__murmur3_32("iceberg", 7, 0), 1210000089);
}

TEST(bucket_modulo_and_null)
{
    uint8_t p[8];
    floe__field f = fld(FLOE_K_INT);
    floe__transform t = {FLOE_TR_BUCKET, 16};
    floe__buf b;
    floe__buf_init(&b, 0);
    le32(p, 34);
    CHECK_EQ_INT(floe__transform_apply(&t, &f, p, &b, NULL), FLOE_OK);
    CHECK_EQ_INT(b.data[0], FLOE_SLOT_PRESENT);
    CHECK_EQ_INT((int32_t)floe__get_le32(b.data + 1), 2017239379 % 16);
    floe__buf_reset(&b);
    CHECK_EQ_INT(floe__transform_apply(&t, &f, NULL, &b, NULL), FLOE_OK);
    CHECK_EQ_INT(b.len, 1);
    CHECK_EQ_INT(b.data[0], FLOE_SLOT_NULL);
    floe__buf_free(&b);
}

static int64_t apply_int(floe__transform_kind k, int32_t param, floe__kind kind, int64_t v)
{
    uint8_t p[16];
    floe__field f = fld(kind);
    floe__transform t = {k, param};
    if (kind == FLOE_K_INT || kind == FLOE_K_DATE)
        le32(p, (int32_t)v);
    else
        le64(p, v);
    floe__buf b;
    floe__buf_init(&b, 0);
    floe__transform_apply(&t, &f, p, &b, NULL);
    floe__field r;
    floe__transform_result(&t, &f, &r, NULL);
    int64_t out = floe__kind_width(&r) == 4 ? (int32_t)floe__get_le32(b.data + 1)
                                            : (int64_t)floe__get_le64(b.data + 1);
    floe__buf_free(&b);
    return out;
}

TEST(truncate_examples)
{
    CHECK_EQ_INT(apply_int(FLOE_TR_TRUNCATE, 10, FLOE_K_INT, 1), 0);
    CHECK_EQ_INT(apply_int(FLOE_TR_TRUNCATE, 10, FLOE_K_INT, -1), -10);
    CHECK_EQ_INT(apply_int(FLOE_TR_TRUNCATE, 10, FLOE_K_LONG, 1), 0);
    CHECK_EQ_INT(apply_int(FLOE_TR_TRUNCATE, 10, FLOE_K_LONG, -1), -10);
    CHECK_EQ_INT(apply_int(FLOE_TR_TRUNCATE, 10, FLOE_K_LONG, 20), 20);
    /* decimal 10.65 truncate[50] -> 10.50 */
    uint8_t p[17];
    __int128 d = 1065, got;
    memcpy(p, &d, 16);
    floe__field f = fld(FLOE_K_DECIMAL);
    floe__transform t = {FLOE_TR_TRUNCATE, 50};
    floe__buf b;
    floe__buf_init(&b, 0);
    floe__transform_apply(&t, &f, p, &b, NULL);
    memcpy(&got, b.data + 1, 16);
    CHECK(got == 1050);
    /* string "iceberg" truncate[3] -> "ice"; code points, not bytes */
    floe__field s = fld(FLOE_K_STRING);
    t.param = 3;
    uint8_t sv[32];
    le32(sv, 7);
    memcpy(sv + 4, "iceberg", 7);
    floe__buf_reset(&b);
    floe__transform_apply(&t, &s, sv, &b, NULL);
    CHECK_EQ_INT(floe__get_le32(b.data + 1), 3);
    CHECK_MEM(b.data + 5, "ice", 3);
    const char *u = "\xc3\xa9t\xc3\xa9!";        /* "été!" */
    le32(sv, 7);
    memcpy(sv + 4, u, 7);
    floe__buf_reset(&b);
    floe__transform_apply(&t, &s, sv, &b, NULL);
    CHECK_EQ_INT(floe__get_le32(b.data + 1), 5);
    CHECK_MEM(b.data + 5, u, 5);
    floe__field bin = fld(FLOE_K_BINARY);
    floe__buf_reset(&b);
    floe__transform_apply(&t, &bin, sv, &b, NULL);
    CHECK_EQ_INT(floe__get_le32(b.data + 1), 3);
    floe__buf_free(&b);
}

TEST(temporal_around_epoch)
{
    const int64_t H = 3600000000LL, D = 24 * H;
    CHECK_EQ_INT(apply_int(FLOE_TR_HOUR, 0, FLOE_K_TIMESTAMP, 0), 0);
    CHECK_EQ_INT(apply_int(FLOE_TR_HOUR, 0, FLOE_K_TIMESTAMP, -1), -1);
    CHECK_EQ_INT(apply_int(FLOE_TR_HOUR, 0, FLOE_K_TIMESTAMPTZ, -H), -1);
    CHECK_EQ_INT(apply_int(FLOE_TR_HOUR, 0, FLOE_K_TIMESTAMPTZ, -H - 1), -2);
    CHECK_EQ_INT(apply_int(FLOE_TR_DAY, 0, FLOE_K_TIMESTAMP, -1), -1);
    CHECK_EQ_INT(apply_int(FLOE_TR_DAY, 0, FLOE_K_TIMESTAMP, D), 1);
    CHECK_EQ_INT(apply_int(FLOE_TR_DAY, 0, FLOE_K_DATE, -3), -3);
    CHECK_EQ_INT(apply_int(FLOE_TR_MONTH, 0, FLOE_K_DATE, 0), 0);
    CHECK_EQ_INT(apply_int(FLOE_TR_MONTH, 0, FLOE_K_DATE, -1), -1);       /* 1969-12 */
    CHECK_EQ_INT(apply_int(FLOE_TR_MONTH, 0, FLOE_K_TIMESTAMP, -1), -1);
    CHECK_EQ_INT(apply_int(FLOE_TR_YEAR, 0, FLOE_K_DATE, -1), -1);
    CHECK_EQ_INT(apply_int(FLOE_TR_YEAR, 0, FLOE_K_DATE, 17486), 47);     /* 2017 */
    CHECK_EQ_INT(apply_int(FLOE_TR_MONTH, 0, FLOE_K_DATE, 17486), 574);   /* 2017-11 */
    CHECK_EQ_INT(apply_int(FLOE_TR_YEAR, 0, FLOE_K_TIMESTAMP, -365 * D - 1), -2);
}

TEST(transform_text_and_types)
{
    floe__transform t;
    char buf[32];
    CHECK_EQ_INT(floe__transform_parse("bucket[16]", &t, NULL), FLOE_OK);
    CHECK_EQ_INT(t.kind, FLOE_TR_BUCKET);
    CHECK_EQ_INT(t.param, 16);
    floe__transform_text(&t, buf, sizeof buf);
    CHECK_EQ_STR(buf, "bucket[16]");
    CHECK_EQ_INT(floe__transform_parse("truncate[0]", &t, NULL), FLOE_EFORMAT);
    CHECK_EQ_INT(floe__transform_parse("bucket", &t, NULL), FLOE_EFORMAT);
    CHECK_EQ_INT(floe__transform_parse("dayz", &t, NULL), FLOE_EFORMAT);
    CHECK_EQ_INT(floe__transform_parse("void", &t, NULL), FLOE_OK);
    floe_error *e = floe_error_new();
    floe__field f = fld(FLOE_K_DOUBLE), r;
    t = (floe__transform){FLOE_TR_BUCKET, 4};
    CHECK_EQ_INT(floe__transform_result(&t, &f, &r, e), FLOE_ESCHEMA);
    CHECK(strstr(floe_error_message(e), "bucket[4] does not apply to column c of type double"));
    f = fld(FLOE_K_TIME);
    t.kind = FLOE_TR_DAY;
    CHECK_EQ_INT(floe__transform_result(&t, &f, &r, NULL), FLOE_ESCHEMA);
    f = fld(FLOE_K_TIMESTAMP);
    CHECK_EQ_INT(floe__transform_result(&t, &f, &r, NULL), FLOE_OK);
    CHECK_EQ_INT(r.kind, FLOE_K_DATE);
    t.kind = FLOE_TR_HOUR;
    floe__transform_result(&t, &f, &r, NULL);
    CHECK_EQ_INT(r.kind, FLOE_K_INT);
    f = fld(FLOE_K_DECIMAL);
    t = (floe__transform){FLOE_TR_TRUNCATE, 5};
    floe__transform_result(&t, &f, &r, NULL);
    CHECK(r.kind == FLOE_K_DECIMAL && r.precision == 9 && r.scale == 2);
    floe_error_free(e);
}

static floe__schema *schema_of(const char *json)
{
    floe__schema *s = NULL;
    if (floe__schema_from_json(json, strlen(json), &s, NULL) != FLOE_OK)
        fprintf(stderr, "bad test schema\n");
    return s;
}

static const char SCHEMA[] =
    "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
    "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
    "{\"id\":2,\"name\":\"name\",\"required\":false,\"type\":\"string\"},"
    "{\"id\":3,\"name\":\"ts\",\"required\":false,\"type\":\"timestamptz\"},"
    "{\"id\":4,\"name\":\"s\",\"required\":false,\"type\":{\"type\":\"struct\",\"fields\":["
    "{\"id\":5,\"name\":\"x\",\"required\":false,\"type\":\"int\"}]}},"
    "{\"id\":6,\"name\":\"l\",\"required\":false,\"type\":{\"type\":\"list\","
    "\"element-id\":7,\"element\":\"int\",\"element-required\":false}}]}";

TEST(spec_from_ddl)
{
    floe__schema *s = schema_of(SCHEMA);
    floe__partition_spec *p = NULL;
    floe_error *e = floe_error_new();
    CHECK_EQ_INT(floe__partition_spec_parse("day(ts), bucket(16, id), truncate(4, name), id, "
                                            "hours(`ts`), s.x, void(name)", s, 1000, &p, e),
                 FLOE_OK);
    if (!p) {
        fprintf(stderr, "%s\n", floe_error_message(e));
        floe_error_free(e);
        floe_schema_free(s);
        return;
    }
    CHECK_EQ_INT(p->n, 7);
    static const char *const names[] = {"ts_day", "id_bucket", "name_trunc", "id",
                                        "ts_hour", "s.x", "name_null"};
    for (size_t i = 0; i < 7 && i < p->n; i++) {
        CHECK_EQ_STR(p->fields[i].name, names[i]);
        CHECK_EQ_INT(p->fields[i].field_id, 1000 + (int)i);
    }
    CHECK_EQ_INT(p->fields[1].transform.param, 16);
    CHECK_EQ_INT(p->fields[5].source_id, 5);
    json_t *j = NULL;
    CHECK_EQ_INT(floe__partition_spec_to_json(p, &j, NULL), FLOE_OK);
    floe__partition_spec *q = NULL;
    CHECK_EQ_INT(floe__partition_spec_from_json(j, s, &q, NULL), FLOE_OK);
    CHECK(q && q->n == 7 && q->fields[2].transform.kind == FLOE_TR_TRUNCATE);
    char *text = json_dumps(json_array_get(json_object_get(j, "fields"), 1), JSON_COMPACT |
                            JSON_SORT_KEYS);
    CHECK_EQ_STR(text, "{\"field-id\":1001,\"name\":\"id_bucket\",\"source-id\":1,"
                       "\"transform\":\"bucket[16]\"}");
    free(text);
    json_decref(j);
    floe__partition_spec_free(q);
    floe__partition_spec_free(p);
    p = NULL;
    CHECK_EQ_INT(floe__partition_spec_parse("day(id)", s, 1000, &p, e), FLOE_ESCHEMA);
    CHECK(strstr(floe_error_message(e), "partition field id_day"));
    CHECK_EQ_INT(floe__partition_spec_parse("bucket(id)", s, 1000, &p, e), FLOE_EINVAL);
    CHECK_EQ_INT(floe__partition_spec_parse("nope(id)", s, 1000, &p, e), FLOE_EINVAL);
    CHECK_EQ_INT(floe__partition_spec_parse("missing", s, 1000, &p, e), FLOE_ESCHEMA);
    CHECK_EQ_INT(floe__partition_spec_parse("id, id", s, 1000, &p, e), FLOE_ESCHEMA);
    CHECK_EQ_INT(floe__partition_spec_parse("id,", s, 1000, &p, e), FLOE_EINVAL);
    floe__schema *s2 = schema_of("{\"type\":\"struct\",\"fields\":["
                                 "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
                                 "{\"id\":2,\"name\":\"id_bucket\",\"required\":false,"
                                 "\"type\":\"int\"}]}");
    CHECK_EQ_INT(floe__partition_spec_parse("bucket(4, id)", s2, 1000, &p, e), FLOE_ESCHEMA);
    CHECK(strstr(floe_error_message(e), "id_bucket is a column"));
    CHECK_EQ_INT(floe__partition_spec_parse("id_bucket, id", s2, 1000, &p, e), FLOE_OK);
    floe__partition_spec_free(p);
    p = NULL;
    floe_schema_free(s2);
    json_t *bad = json_loads("{\"spec-id\":1,\"fields\":[{\"source-id\":7,\"field-id\":1000,"
                             "\"name\":\"e\",\"transform\":\"identity\"}]}", 0, NULL);
    CHECK_EQ_INT(floe__partition_spec_from_json(bad, s, &p, e), FLOE_ESCHEMA);
    CHECK(strstr(floe_error_message(e), "inside a list or map"));
    json_decref(bad);
    floe_error_free(e);
    floe_schema_free(s);
}

TEST(tuple_of_row)
{
    floe__schema *s = schema_of(SCHEMA);
    floe__partition_spec *p = NULL;
    CHECK_EQ_INT(floe__partition_spec_parse("day(ts), bucket(16, id), s.x, truncate(2, name)",
                                            s, 1000, &p, NULL), FLOE_OK);
    if (!p) {
        floe_schema_free(s);
        return;
    }
    /* id 34, name "iceberg", ts -1us, s {x: 7}, l null */
    uint8_t row[64];
    size_t n = 0;
    row[n++] = 1, le64(row + n, 34), n += 8;
    row[n++] = 1, le32(row + n, 7), n += 4, memcpy(row + n, "iceberg", 7), n += 7;
    row[n++] = 1, le64(row + n, -1), n += 8;
    row[n++] = 1, row[n++] = 1, le32(row + n, 7), n += 4;
    row[n++] = 0;
    floe__buf t;
    floe__buf_init(&t, 0);
    CHECK_EQ_INT(floe__partition_tuple(p, s, row, n, &t, NULL), FLOE_OK);
    const uint8_t *v;
    CHECK_EQ_INT(floe__partition_value(p, t.data, t.len, 0, &v, NULL), FLOE_OK);
    CHECK(v && (int32_t)floe__get_le32(v) == -1);
    floe__partition_value(p, t.data, t.len, 1, &v, NULL);
    CHECK(v && (int32_t)floe__get_le32(v) == 2017239379 % 16);
    floe__partition_value(p, t.data, t.len, 2, &v, NULL);
    CHECK(v && (int32_t)floe__get_le32(v) == 7);
    floe__partition_value(p, t.data, t.len, 3, &v, NULL);
    CHECK(v && floe__get_le32(v) == 2 && memcmp(v + 4, "ic", 2) == 0);
    /* s null: s.x is null */
    CHECK_EQ_INT(n, 37);
    floe__buf_reset(&t);
    CHECK_EQ_INT(floe__partition_tuple(p, s, row, 32, &t, NULL), FLOE_EINPUT);
    uint8_t row2[64];
    memcpy(row2, row, 30);
    row2[30] = 0, row2[31] = 0;
    floe__buf_reset(&t);
    CHECK_EQ_INT(floe__partition_tuple(p, s, row2, 32, &t, NULL), FLOE_OK);
    floe__partition_value(p, t.data, t.len, 2, &v, NULL);
    CHECK(v == NULL);
    floe__buf_free(&t);
    floe__partition_spec_free(p);
    floe_schema_free(s);
}

TEST(single_values)
{
    floe__buf b;
    floe__buf_init(&b, 0);
    floe__field f = fld(FLOE_K_DECIMAL);
    __int128 d = -1;
    uint8_t p[16];
    memcpy(p, &d, 16);
    floe__single_value(&f, p, &b, NULL);
    CHECK(b.len == 1 && b.data[0] == 0xff);
    d = 128;
    memcpy(p, &d, 16);
    floe__buf_reset(&b);
    floe__single_value(&f, p, &b, NULL);
    CHECK(b.len == 2 && b.data[0] == 0x00 && b.data[1] == 0x80);
    d = 0;
    memcpy(p, &d, 16);
    floe__buf_reset(&b);
    floe__single_value(&f, p, &b, NULL);
    CHECK(b.len == 1 && b.data[0] == 0);
    f = fld(FLOE_K_INT);
    le32(p, -2);
    floe__buf_reset(&b);
    floe__single_value(&f, p, &b, NULL);
    CHECK(b.len == 4 && (int32_t)floe__get_le32(b.data) == -2);
    floe__buf_free(&b);
}

int main(void)
{
    RUN(murmur3_vectors);
    RUN(bucket_modulo_and_null);
    RUN(truncate_examples);
    RUN(temporal_around_epoch);
    RUN(transform_text_and_types);
    RUN(spec_from_ddl);
    RUN(tuple_of_row);
    RUN(single_values);
    return UNIT_DONE();
}
