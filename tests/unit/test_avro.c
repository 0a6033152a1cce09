/*
 * test_avro.c - unit tests of src/avro: varints against the spec's tables,
 * hand-computed encodings, the schema graph, writer -> reader round trips of
 * every type under every codec, writer misuse, and corrupt files.
 */
#include <math.h>
#include <zlib.h>

#include "avro/avro_internal.h"
#include "unit.h"

int main(void);

static const uint8_t SYNC[16] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

/* ---- helpers ------------------------------------------------------------- */

static int write_file(const char *schema, floe__avro_codec codec, size_t block,
                      void (*fill)(floe__avro_writer *, void *), void *arg, floe__buf *dst,
                      floe_error *err)
{
    floe__buf_init(dst, 0);
    floe__output *out = floe__output_memory(dst);
    floe__avro_writer_options o = {.codec = codec, .block_size = block, .sync = SYNC};
    floe__avro_meta meta[] = {{"schema", "{\"type\":\"struct\"}", FLOE_AVRO_STRLEN},
                              {"format-version", "2", FLOE_AVRO_STRLEN}};
    floe__avro_writer *w;
    int rc = floe__avro_writer_new(schema, &o, meta, 2, out, &w, err);
    if (rc != FLOE_OK) {
        out->abort(out);
        return rc;
    }
    fill(w, arg);
    return floe__avro_writer_close(w, NULL, err);
}

/* Reads every object; returns the code of the first failure (or OK) and
 * the number of objects read. */
static int read_all(const uint8_t *p, size_t n, const floe__avro_reader_options *o,
                    size_t *count, floe_error *err)
{
    floe__avro_reader *r;
    *count = 0;
    int rc = floe__avro_reader_open(p, n, o, &r, err);
    if (rc != FLOE_OK)
        return rc;
    const floe__avro_value *v;
    while ((rc = floe__avro_reader_next(r, &v, err)) == FLOE_OK && v)
        (*count)++;
    floe__avro_reader_free(r);
    return rc;
}

/* The data of the first block of a file written with SYNC: it starts after
 * the first SYNC (the header's) with two varints, count and size. */
static const uint8_t *first_block(const floe__buf *f, int64_t *count, size_t *size)
{
    for (size_t i = 0; i + 16 <= f->len; i++) {
        if (memcmp(f->data + i, SYNC, 16) == 0) {
            floe__avro_cursor c = {f->data + i + 16, f->data + f->len};
            int64_t sz = 0;
            if (floe__avro_dec_long(&c, count, NULL) || floe__avro_dec_long(&c, &sz, NULL))
                return NULL;
            *size = (size_t)sz;
            return c.p;
        }
    }
    return NULL;
}

/* Appends an OCF header for `schema` with avro.codec `codec` (NULL: none). */
static void ocf_header(floe__buf *b, const char *schema, const char *codec)
{
    floe__buf_init(b, 0);
    floe__buf_append(b, "Obj\x01", 4, NULL);
    floe__avro_enc_long(b, codec ? 2 : 1, NULL);
    floe__avro_enc_bytes(b, "avro.schema", 11, NULL);
    floe__avro_enc_bytes(b, schema, strlen(schema), NULL);
    if (codec) {
        floe__avro_enc_bytes(b, "avro.codec", 10, NULL);
        floe__avro_enc_bytes(b, codec, strlen(codec), NULL);
    }
    floe__avro_enc_long(b, 0, NULL);
    floe__buf_append(b, SYNC, 16, NULL);
}

static void ocf_block(floe__buf *b, int64_t count, const void *data, size_t n)
{
    floe__avro_enc_long(b, count, NULL);
    floe__avro_enc_long(b, (int64_t)n, NULL);
    floe__buf_append(b, data, n, NULL);
    floe__buf_append(b, SYNC, 16, NULL);
}

/* A hand-made file with one block; returns the code of reading it all. */
static int read_crafted(const char *schema, int64_t count, const void *data, size_t n,
                        size_t *objects, floe_error *err)
{
    floe__buf b;
    ocf_header(&b, schema, NULL);
    ocf_block(&b, count, data, n);
    int rc = read_all(b.data, b.len, NULL, objects, err);
    floe__buf_free(&b);
    return rc;
}

/* ---- binary encoding ----------------------------------------------------- */

TEST(varint_spec_table)
{
    /* The zig-zag table of the spec, plus the 64-bit extremes. */
    static const struct {
        int64_t v;
        uint8_t bytes[10];
        size_t n;
    } cases[] = {
        {0, {0x00}, 1},           {-1, {0x01}, 1},          {1, {0x02}, 1},
        {-2, {0x03}, 1},          {2, {0x04}, 1},           {-64, {0x7f}, 1},
        {64, {0x80, 0x01}, 2},    {27, {0x36}, 1},          {-65, {0x81, 0x01}, 2},
        {INT32_MIN, {0xff, 0xff, 0xff, 0xff, 0x0f}, 5},
        {INT32_MAX, {0xfe, 0xff, 0xff, 0xff, 0x0f}, 5},
        {INT64_MAX, {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10},
        {INT64_MIN, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint8_t out[10];
        size_t n = floe__avro_put_varint(out, cases[i].v);
        CHECK_EQ_INT(n, cases[i].n);
        CHECK_MEM(out, cases[i].bytes, cases[i].n);
        floe__avro_cursor c = {cases[i].bytes, cases[i].bytes + cases[i].n};
        int64_t back = 0;
        CHECK_EQ_INT(floe__avro_dec_long(&c, &back, NULL), FLOE_OK);
        CHECK(back == cases[i].v);
        CHECK(c.p == c.end);
    }
}

TEST(varint_round_trip_powers)
{
    for (int s = 0; s < 63; s++) {
        int64_t base = (int64_t)1 << s;
        int64_t vals[] = {base, base - 1, -base, -base - 1, base + 1};
        for (size_t k = 0; k < 5; k++) {
            floe__buf b;
            floe__buf_init(&b, 0);
            CHECK_EQ_INT(floe__avro_enc_long(&b, vals[k], NULL), FLOE_OK);
            floe__avro_cursor c = {b.data, b.data + b.len};
            int64_t back = 0;
            CHECK_EQ_INT(floe__avro_dec_long(&c, &back, NULL), FLOE_OK);
            CHECK(back == vals[k]);
            CHECK(c.p == c.end);
            floe__buf_free(&b);
        }
    }
}

TEST(varint_malformed)
{
    int64_t v;
    int32_t i;
    floe_error *err = floe_error_new();
    static const uint8_t truncated[] = {0x80, 0x80};
    floe__avro_cursor c = {truncated, truncated + 2};
    CHECK_EQ_INT(floe__avro_dec_long(&c, &v, err), FLOE_EFORMAT);
    CHECK(strstr(floe_error_message(err), "truncated") != NULL);
    static const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                     0x80, 0x80, 0x80, 0x80, 0x01};
    c = (floe__avro_cursor){eleven, eleven + 11};
    CHECK_EQ_INT(floe__avro_dec_long(&c, &v, err), FLOE_EFORMAT);
    static const uint8_t overflow[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    c = (floe__avro_cursor){overflow, overflow + 10};
    CHECK_EQ_INT(floe__avro_dec_long(&c, &v, err), FLOE_EFORMAT);
    CHECK(strstr(floe_error_message(err), "overflow") != NULL);
    static const uint8_t big_int[] = {0x80, 0x80, 0x80, 0x80, 0x10};  /* 2^31 */
    c = (floe__avro_cursor){big_int, big_int + 5};
    CHECK_EQ_INT(floe__avro_dec_int(&c, &i, err), FLOE_EFORMAT);
    static const uint8_t neg_len[] = {0x01, 'x'};                    /* length -1 */
    const uint8_t *p;
    size_t n;
    c = (floe__avro_cursor){neg_len, neg_len + 2};
    CHECK_EQ_INT(floe__avro_dec_bytes(&c, &p, &n, err), FLOE_EFORMAT);
    static const uint8_t long_len[] = {0x08, 'a', 'b'};              /* length 4, 2 left */
    c = (floe__avro_cursor){long_len, long_len + 3};
    CHECK_EQ_INT(floe__avro_dec_bytes(&c, &p, &n, err), FLOE_EFORMAT);
    static const uint8_t bool2[] = {0x02};
    bool b;
    c = (floe__avro_cursor){bool2, bool2 + 1};
    CHECK_EQ_INT(floe__avro_dec_boolean(&c, &b, err), FLOE_EFORMAT);
    floe_error_free(err);
}

TEST(float_double_bytes)
{
    floe__buf b;
    floe__buf_init(&b, 0);
    floe__avro_enc_float(&b, 1.5f, NULL);
    floe__avro_enc_double(&b, 1.0, NULL);
    floe__avro_enc_boolean(&b, true, NULL);
    floe__avro_enc_bytes(&b, "foo", 3, NULL);
    static const uint8_t want[] = {0x00, 0x00, 0xc0, 0x3f, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f,
                                   0x01, 0x06, 'f',  'o',  'o'};
    CHECK_EQ_INT(b.len, sizeof want);
    CHECK_MEM(b.data, want, sizeof want);
    floe__avro_cursor c = {b.data, b.data + b.len};
    float f = 0;
    double d = 0;
    bool t = false;
    const uint8_t *p = NULL;
    size_t n = 0;
    CHECK_EQ_INT(floe__avro_dec_float(&c, &f, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__avro_dec_double(&c, &d, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__avro_dec_boolean(&c, &t, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__avro_dec_bytes(&c, &p, &n, NULL), FLOE_OK);
    CHECK(f == 1.5f && d == 1.0 && t && n == 3 && memcmp(p, "foo", 3) == 0);
    floe__buf_free(&b);
}

TEST(block_counts)
{
    /* -2 items in a block of 2 bytes, then 1 item, then the end. */
    static const uint8_t data[] = {0x03, 0x04, 0x06, 0x36, 0x02, 0x08, 0x00};
    floe__avro_cursor c = {data, data + sizeof data};
    uint64_t n = 0;
    int64_t v = 0;
    CHECK_EQ_INT(floe__avro_dec_block_count(&c, 100, &n, NULL), FLOE_OK);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(floe__avro_dec_long(&c, &v, NULL), FLOE_OK);
    CHECK_EQ_INT(v, 3);
    CHECK_EQ_INT(floe__avro_dec_long(&c, &v, NULL), FLOE_OK);
    CHECK_EQ_INT(v, 27);
    CHECK_EQ_INT(floe__avro_dec_block_count(&c, 100, &n, NULL), FLOE_OK);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(floe__avro_dec_long(&c, &v, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__avro_dec_block_count(&c, 100, &n, NULL), FLOE_OK);
    CHECK_EQ_INT(n, 0);
    /* a byte size beyond the input, and a count beyond the limit */
    static const uint8_t bad_size[] = {0x03, 0x7e, 0x00};
    c = (floe__avro_cursor){bad_size, bad_size + 3};
    CHECK_EQ_INT(floe__avro_dec_block_count(&c, 100, &n, NULL), FLOE_EFORMAT);
    static const uint8_t too_many[] = {0xc8, 0x01};                   /* 100 */
    c = (floe__avro_cursor){too_many, too_many + 2};
    CHECK_EQ_INT(floe__avro_dec_block_count(&c, 99, &n, NULL), FLOE_EFORMAT);
}

/* ---- schemas ------------------------------------------------------------- */

TEST(schema_names_and_ids)
{
    static const char *json =
        "{\"type\":\"record\",\"name\":\"outer\",\"namespace\":\"a.b\",\"doc\":\"hi\",\"x-custom\":7,"
        "\"fields\":["
        "{\"name\":\"f1\",\"type\":{\"type\":\"fixed\",\"name\":\"h\",\"size\":8},\"field-id\":1},"
        "{\"name\":\"f2\",\"type\":\"h\",\"field-id\":2},"
        "{\"name\":\"f3\",\"type\":\"a.b.h\",\"field-id\":3,\"doc\":\"kept\"},"
        "{\"name\":\"f4\",\"type\":{\"type\":\"enum\",\"name\":\"c.E\",\"symbols\":[\"X\",\"Y\"]}},"
        "{\"name\":\"f5\",\"type\":{\"type\":\"array\",\"items\":[\"null\",\"c.E\"],\"element-id\":6},\"field-id\":5},"
        "{\"name\":\"f6\",\"type\":{\"type\":\"map\",\"values\":\"long\",\"key-id\":8,\"value-id\":9},\"field-id\":7},"
        "{\"name\":\"next\",\"type\":[\"null\",\"outer\"],\"field-id\":10}]}";
    floe__avro_schema *s = NULL;
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(floe__avro_schema_parse(json, strlen(json), &s, err), FLOE_OK);
    if (!s) {
        fprintf(stderr, "%s\n", floe_error_message(err));
        floe_error_free(err);
        return;
    }
    const floe__avro_node *r = floe__avro_schema_root(s);
    CHECK_EQ_STR(r->name, "a.b.outer");
    CHECK_EQ_INT(r->n, 7);
    CHECK(r->fields[0].type == r->fields[1].type);       /* references share the node */
    CHECK(r->fields[1].type == r->fields[2].type);
    CHECK(floe__avro_schema_find(s, "a.b.h") == r->fields[0].type);
    CHECK(floe__avro_schema_find(s, "c.E") == r->fields[3].type);
    CHECK_EQ_INT(r->fields[0].field_id, 1);
    CHECK_EQ_INT(r->fields[3].field_id, -1);
    CHECK_EQ_INT(r->fields[4].type->element_id, 6);
    CHECK_EQ_INT(r->fields[5].type->key_id, 8);
    CHECK_EQ_INT(r->fields[5].type->value_id, 9);
    CHECK_EQ_INT(floe__avro_field_index(r, "f6"), 5);
    CHECK_EQ_INT(floe__avro_field_index_by_id(r, 10), 6);
    CHECK_EQ_INT(floe__avro_field_index_by_id(r, 4), -1);
    CHECK(floe__avro_optional_inner(r->fields[6].type) == r);   /* recursion */
    CHECK_EQ_STR(json_string_value(json_object_get(r->fields[2].json, "doc")), "kept");
    CHECK_EQ_INT(json_integer_value(json_object_get(r->json, "x-custom")), 7);
    CHECK_EQ_STR(floe__avro_schema_text(s), json);
    CHECK_EQ_INT(r->fields[0].type->min_size, 8);
    floe__avro_schema_free(s);
    floe_error_free(err);
}

TEST(schema_logical_types)
{
    static const char *json =
        "{\"type\":\"record\",\"name\":\"r\",\"fields\":["
        "{\"name\":\"a\",\"type\":{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":10,\"scale\":3}},"
        "{\"name\":\"b\",\"type\":{\"type\":\"fixed\",\"name\":\"f\",\"size\":2,\"logicalType\":\"decimal\",\"precision\":5}},"
        "{\"name\":\"c\",\"type\":{\"type\":\"fixed\",\"name\":\"g\",\"size\":2,\"logicalType\":\"decimal\",\"precision\":4}},"
        "{\"name\":\"d\",\"type\":{\"type\":\"int\",\"logicalType\":\"date\"}},"
        "{\"name\":\"e\",\"type\":{\"type\":\"long\",\"logicalType\":\"timestamp-micros\"}},"
        "{\"name\":\"f\",\"type\":{\"type\":\"string\",\"logicalType\":\"uuid\"}},"
        "{\"name\":\"g\",\"type\":{\"type\":\"int\",\"logicalType\":\"timestamp-micros\"}},"
        "{\"name\":\"h\",\"type\":{\"type\":\"array\",\"logicalType\":\"map\",\"items\":{\"type\":\"record\",\"name\":\"kv\","
        "\"fields\":[{\"name\":\"key\",\"type\":\"int\"},{\"name\":\"value\",\"type\":\"long\"}]}}},"
        "{\"name\":\"i\",\"type\":{\"type\":\"long\",\"logicalType\":\"something-new\"}},"
        "{\"name\":\"j\",\"type\":{\"type\":\"fixed\",\"name\":\"u\",\"size\":16,\"logicalType\":\"uuid\"}}]}";
    floe__avro_schema *s = NULL;
    CHECK_EQ_INT(floe__avro_schema_parse(json, strlen(json), &s, NULL), FLOE_OK);
    if (!s)
        return;
    const floe__avro_node *r = floe__avro_schema_root(s);
    CHECK_EQ_INT(r->fields[0].type->logical, FLOE_AVRO_LT_DECIMAL);
    CHECK_EQ_INT(r->fields[0].type->precision, 10);
    CHECK_EQ_INT(r->fields[0].type->scale, 3);
    CHECK_EQ_INT(r->fields[1].type->logical, FLOE_AVRO_LT_NONE);   /* 5 digits > 2 bytes */
    CHECK_EQ_INT(r->fields[2].type->logical, FLOE_AVRO_LT_DECIMAL);
    CHECK_EQ_INT(r->fields[3].type->logical, FLOE_AVRO_LT_DATE);
    CHECK_EQ_INT(r->fields[4].type->logical, FLOE_AVRO_LT_TIMESTAMP_MICROS);
    CHECK_EQ_INT(r->fields[5].type->logical, FLOE_AVRO_LT_UUID);
    CHECK_EQ_INT(r->fields[6].type->logical, FLOE_AVRO_LT_NONE);   /* wrong base type */
    CHECK_EQ_INT(r->fields[7].type->logical, FLOE_AVRO_LT_MAP);
    CHECK_EQ_INT(r->fields[8].type->logical, FLOE_AVRO_LT_NONE);
    CHECK_EQ_STR(r->fields[8].type->logical_name, "something-new");
    CHECK_EQ_INT(r->fields[9].type->logical, FLOE_AVRO_LT_UUID);
    floe__avro_schema_free(s);
}

TEST(schema_errors)
{
    static const char *bad[] = {
        "{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"a\",\"type\":\"nope\"}]}",
        ("{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"a\",\"type\":\"int\"},"
         "{\"name\":\"a\",\"type\":\"int\"}]}"),
        "[\"null\",[\"int\"]]",
        "[\"int\",\"int\"]",
        "[\"null\",{\"type\":\"array\",\"items\":\"int\"},{\"type\":\"array\",\"items\":\"long\"}]",
        "{\"type\":\"record\",\"name\":\"r\"}",
        "{\"type\":\"fixed\",\"name\":\"f\"}",
        "{\"type\":\"fixed\",\"name\":\"f\",\"size\":-1}",
        "{\"type\":\"enum\",\"name\":\"e\",\"symbols\":[\"A\",\"A\"]}",
        "{\"type\":\"array\"}",
        "{\"type\":\"map\"}",
        "[{\"type\":\"fixed\",\"name\":\"f\",\"size\":1},{\"type\":\"fixed\",\"name\":\"f\",\"size\":2}]",
        "{\"type\":\"record\",\"name\":\"int\",\"fields\":[]}",
        "{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"a\",\"type\":\"int\",\"field-id\":\"x\"}]}",
        "{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"a\"}]}",
        "[]",
        "42",
        "{\"type\":\"record\",",
        "{\"name\":\"x\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        floe__avro_schema *s = NULL;
        floe_error *err = floe_error_new();
        int rc = floe__avro_schema_parse(bad[i], strlen(bad[i]), &s, err);
        if (rc != FLOE_ESCHEMA)
            fprintf(stderr, "schema %zu: %s\n", i, bad[i]);
        CHECK_EQ_INT(rc, FLOE_ESCHEMA);
        CHECK(s == NULL);
        CHECK(strlen(floe_error_message(err)) > 0);
        floe_error_free(err);
    }
    /* nesting limit: 100 arrays deep */
    floe__buf b;
    floe__buf_init(&b, 0);
    for (int i = 0; i < 100; i++)
        floe__buf_printf(&b, NULL, "{\"type\":\"array\",\"items\":");
    floe__buf_printf(&b, NULL, "\"int\"");
    for (int i = 0; i < 100; i++)
        floe__buf_putc(&b, '}', NULL);
    floe__avro_schema *s = NULL;
    CHECK_EQ_INT(floe__avro_schema_parse((const char *)b.data, b.len, &s, NULL), FLOE_ESCHEMA);
    floe__buf_free(&b);
}

/* Many names: duplicates are found through the hash sets at any distance. */
static int parse_many(int n, bool dup_name, bool dup_field, bool dup_symbol)
{
    floe__buf b;
    floe__buf_init(&b, 0);
    floe__buf_printf(&b, NULL, "{\"type\":\"record\",\"name\":\"r\",\"fields\":[");
    for (int i = 0; i < n; i++)
        floe__buf_printf(&b, NULL, "%s{\"name\":\"f%d\",\"type\":{\"type\":\"fixed\","
                         "\"name\":\"x%d\",\"size\":1}}", i ? "," : "",
                         dup_field && i == n - 1 ? 0 : i, dup_name && i == n - 1 ? 0 : i);
    floe__buf_printf(&b, NULL, ",{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"E\","
                     "\"symbols\":[");
    for (int i = 0; i < n; i++)
        floe__buf_printf(&b, NULL, "%s\"S%d\"", i ? "," : "", dup_symbol && i == n - 1 ? 0 : i);
    floe__buf_printf(&b, NULL, "]}}]}");
    floe__avro_schema *s = NULL;
    int rc = floe__avro_schema_parse((const char *)b.data, b.len, &s, NULL);
    if (s) {
        char name[32];
        snprintf(name, sizeof name, "x%d", n - 1);
        CHECK(floe__avro_schema_find(s, name) != NULL);
        CHECK_EQ_INT(floe__avro_schema_root(s)->n, n + 1);
        CHECK_EQ_INT(floe__avro_schema_root(s)->fields[n].type->n, n);
    }
    floe__avro_schema_free(s);
    floe__buf_free(&b);
    return rc;
}

TEST(schema_many_names)
{
    CHECK_EQ_INT(parse_many(20000, false, false, false), FLOE_OK);
    CHECK_EQ_INT(parse_many(20000, true, false, false), FLOE_ESCHEMA);
    CHECK_EQ_INT(parse_many(20000, false, true, false), FLOE_ESCHEMA);
    CHECK_EQ_INT(parse_many(20000, false, false, true), FLOE_ESCHEMA);
    /* a union of 1001 branches is refused */
    floe__buf b;
    floe__buf_init(&b, 0);
    floe__buf_putc(&b, '[', NULL);
    for (int i = 0; i < 1001; i++)
        floe__buf_printf(&b, NULL, "%s{\"type\":\"fixed\",\"name\":\"u%d\",\"size\":1}",
                         i ? "," : "", i);
    floe__buf_putc(&b, ']', NULL);
    floe__avro_schema *s = NULL;
    CHECK_EQ_INT(floe__avro_schema_parse((const char *)b.data, b.len, &s, NULL), FLOE_ESCHEMA);
    floe__buf_free(&b);
}

/* ---- writer: the spec's examples, byte for byte ---------------------------- */

static void fill_spec_record(floe__avro_writer *w, void *arg)
{
    (void)arg;
    floe__avro_begin_record(w);
    floe__avro_put_long(w, 27);
    floe__avro_put_cstr(w, "foo");
    floe__avro_begin_array(w, 2);
    floe__avro_put_long(w, 3);
    floe__avro_put_long(w, 27);
    floe__avro_end_array(w);
    floe__avro_put_cstr(w, "a");                 /* union ["null","string"] */
    floe__avro_put_null(w);                      /* same union, null */
    floe__avro_end_record(w, NULL);
}

TEST(spec_example_bytes)
{
    static const char *schema =
        "{\"type\":\"record\",\"name\":\"test\",\"fields\":["
        "{\"name\":\"a\",\"type\":\"long\"},{\"name\":\"b\",\"type\":\"string\"},"
        "{\"name\":\"c\",\"type\":{\"type\":\"array\",\"items\":\"long\"}},"
        "{\"name\":\"d\",\"type\":[\"null\",\"string\"]},"
        "{\"name\":\"e\",\"type\":[\"null\",\"string\"]}]}";
    floe__buf f;
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(write_file(schema, FLOE_AVRO_CODEC_NULL, 0, fill_spec_record, NULL, &f, err),
                 FLOE_OK);
    /* 36 06 66 6f 6f | 04 06 36 00 | 02 02 61 | 00 */
    static const uint8_t want[] = {0x36, 0x06, 'f', 'o', 'o', 0x04, 0x06, 0x36,
                                   0x00, 0x02, 0x02, 'a', 0x00};
    int64_t count = 0;
    size_t size = 0;
    const uint8_t *data = first_block(&f, &count, &size);
    CHECK(data != NULL);
    if (data) {
        CHECK_EQ_INT(count, 1);
        CHECK_EQ_INT(size, sizeof want);
        CHECK_MEM(data, want, sizeof want);
        CHECK(memcmp(data + size, SYNC, 16) == 0);
        CHECK(data + size + 16 == f.data + f.len);
    }
    /* the header: magic, then the metadata map with the schema as given */
    CHECK_MEM(f.data, "Obj\x01", 4);
    floe__avro_reader *r = NULL;
    CHECK_EQ_INT(floe__avro_reader_open(f.data, f.len, NULL, &r, err), FLOE_OK);
    if (r) {
        CHECK_EQ_STR(floe__avro_reader_meta(r, "avro.schema", NULL), schema);
        CHECK_EQ_STR(floe__avro_reader_meta(r, "avro.codec", NULL), "null");
        CHECK_EQ_STR(floe__avro_reader_meta(r, "format-version", NULL), "2");
        CHECK_EQ_STR(floe__avro_reader_meta(r, "schema", NULL), "{\"type\":\"struct\"}");
        CHECK(floe__avro_reader_meta(r, "missing", NULL) == NULL);
        CHECK_EQ_INT(floe__avro_reader_meta_count(r), 4);
        CHECK_EQ_STR(floe__avro_reader_meta_key(r, 0), "avro.schema");
        const floe__avro_value *v = NULL;
        CHECK_EQ_INT(floe__avro_reader_next(r, &v, err), FLOE_OK);
        int64_t a = 0;
        const char *b = NULL;
        CHECK(floe__avro_long(floe__avro_get(v, "a"), &a) && a == 27);
        CHECK(floe__avro_string(floe__avro_get(v, "b"), &b, NULL) && strcmp(b, "foo") == 0);
        CHECK(floe__avro_string(floe__avro_get(v, "d"), &b, NULL) && strcmp(b, "a") == 0);
        CHECK(floe__avro_get(v, "d") && floe__avro_get(v, "d")->branch == 1);
        CHECK(floe__avro_is_null(floe__avro_get(v, "e")));
        CHECK(floe__avro_get(v, "e") && floe__avro_get(v, "e")->branch == 0);
        CHECK(floe__avro_get(v, "c") && floe__avro_get(v, "c")->n == 2);
        CHECK(floe__avro_long(floe__avro_item(floe__avro_get(v, "c"), 1), &a) && a == 27);
        CHECK_EQ_INT(floe__avro_reader_next(r, &v, err), FLOE_OK);
        CHECK(v == NULL);
        CHECK_EQ_INT(floe__avro_reader_objects(r), 1);
        floe__avro_reader_free(r);
    }
    floe__buf_free(&f);
    floe_error_free(err);
}

/* ---- writer -> reader round trips ------------------------------------------- */

static const char ALL_TYPES[] =
    "{\"type\":\"record\",\"name\":\"all\",\"namespace\":\"t\",\"fields\":["
    "{\"name\":\"n\",\"type\":\"null\",\"field-id\":1},"
    "{\"name\":\"b\",\"type\":\"boolean\",\"field-id\":2},"
    "{\"name\":\"i\",\"type\":\"int\",\"field-id\":3},"
    "{\"name\":\"l\",\"type\":\"long\",\"field-id\":4},"
    "{\"name\":\"f\",\"type\":\"float\",\"field-id\":5},"
    "{\"name\":\"d\",\"type\":\"double\",\"field-id\":6},"
    "{\"name\":\"by\",\"type\":\"bytes\",\"field-id\":7},"
    "{\"name\":\"s\",\"type\":\"string\",\"field-id\":8},"
    "{\"name\":\"fx\",\"type\":{\"type\":\"fixed\",\"name\":\"three\",\"size\":3},\"field-id\":9},"
    "{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\",\"C\"]},\"field-id\":10},"
    "{\"name\":\"arr\",\"type\":{\"type\":\"array\",\"items\":{\"type\":\"array\",\"items\":\"int\"}},\"field-id\":11},"
    "{\"name\":\"m\",\"type\":{\"type\":\"map\",\"values\":[\"null\",\"double\"]},\"field-id\":12},"
    "{\"name\":\"u\",\"type\":[\"null\",\"string\",\"three\",{\"type\":\"record\",\"name\":\"P\",\"fields\":["
    "{\"name\":\"x\",\"type\":\"long\",\"field-id\":14}]},{\"type\":\"record\",\"name\":\"Q\",\"fields\":[]}],\"field-id\":13},"
    "{\"name\":\"rec\",\"type\":{\"type\":\"record\",\"name\":\"R\",\"fields\":["
    "{\"name\":\"p\",\"type\":\"P\",\"field-id\":16},"
    "{\"name\":\"km\",\"type\":{\"type\":\"array\",\"logicalType\":\"map\",\"items\":{\"type\":\"record\",\"name\":\"kv\",\"fields\":["
    "{\"name\":\"key\",\"type\":\"int\",\"field-id\":18},{\"name\":\"value\",\"type\":\"bytes\",\"field-id\":19}]}},\"field-id\":17}]},\"field-id\":15},"
    "{\"name\":\"dt\",\"type\":{\"type\":\"int\",\"logicalType\":\"date\"},\"field-id\":20}]}";

static void fill_all(floe__avro_writer *w, void *arg)
{
    int n = *(int *)arg;
    for (int k = 0; k < n; k++) {
        floe__avro_begin_record(w);
        floe__avro_put_null(w);
        floe__avro_put_boolean(w, k & 1);
        floe__avro_put_int(w, k % 2 ? INT32_MIN : INT32_MAX - k);
        floe__avro_put_long(w, k % 2 ? INT64_MIN + k : INT64_MAX - k);
        floe__avro_put_float(w, k == 2 ? NAN : (float)k * 0.5f);
        floe__avro_put_double(w, k == 3 ? -INFINITY : (double)k / 3.0);
        floe__avro_put_bytes(w, "\x00\x01\x02\x03", (size_t)(k % 5));
        char s[32];
        snprintf(s, sizeof s, "str-%d-\xc3\xa9", k);
        floe__avro_put_cstr(w, s);
        floe__avro_put_fixed(w, "\xff\x00\x7f", 3);
        floe__avro_put_enum(w, k % 3);
        floe__avro_begin_array(w, (size_t)(k % 3));            /* arr: k%3 arrays of j ints */
        for (int j = 0; j < k % 3; j++) {
            floe__avro_begin_array(w, (size_t)j);
            for (int q = 0; q < j; q++)
                floe__avro_put_int(w, k * 100 + q);
            floe__avro_end_array(w);
        }
        floe__avro_end_array(w);
        floe__avro_begin_map(w, 2);                             /* m */
        floe__avro_put_cstr(w, "one");
        floe__avro_put_double(w, 1.0 + k);
        floe__avro_put_cstr(w, "none");
        floe__avro_put_null(w);
        floe__avro_end_map(w);
        switch (k % 5) {                                        /* u */
        case 0: floe__avro_put_null(w); break;
        case 1: floe__avro_put_cstr(w, "u"); break;
        case 2: floe__avro_put_fixed(w, "abc", 3); break;
        case 3:
            floe__avro_put_union(w, 3);
            floe__avro_begin_record(w);
            floe__avro_put_long(w, -k);
            floe__avro_end_record(w, NULL);
            break;
        default:
            floe__avro_put_union(w, 4);
            floe__avro_begin_record(w);
            floe__avro_end_record(w, NULL);
            break;
        }
        floe__avro_begin_record(w);                             /* rec */
        floe__avro_begin_record(w);
        floe__avro_put_long(w, k * 11);
        floe__avro_end_record(w, NULL);
        floe__avro_begin_array(w, 1);
        floe__avro_begin_record(w);
        floe__avro_put_int(w, 7);
        floe__avro_put_bytes(w, "kv", 2);
        floe__avro_end_record(w, NULL);
        floe__avro_end_array(w);
        floe__avro_end_record(w, NULL);
        floe__avro_put_int(w, 19000 + k);                       /* dt */
        floe__avro_end_record(w, NULL);
    }
}

static void check_all(const floe__avro_value *v, int k)
{
    CHECK(v && v->type == FLOE_AVRO_RECORD);
    if (!v || v->type != FLOE_AVRO_RECORD)
        return;
    bool b = false;
    int64_t l = 0;
    double d = 0;
    const char *s = NULL;
    const uint8_t *p = NULL;
    size_t n = 0;
    CHECK(floe__avro_is_null(floe__avro_get(v, "n")));
    CHECK(floe__avro_get(v, "n") != NULL);
    CHECK(floe__avro_boolean(floe__avro_get(v, "b"), &b) && b == (k & 1));
    CHECK(floe__avro_long(floe__avro_get_id(v, 3), &l) && l == (k % 2 ? INT32_MIN : INT32_MAX - k));
    CHECK(floe__avro_long(floe__avro_get(v, "l"), &l) && l == (k % 2 ? INT64_MIN + k : INT64_MAX - k));
    CHECK(floe__avro_double(floe__avro_get(v, "f"), &d));
    CHECK(k == 2 ? isnan(d) : d == (double)((float)k * 0.5f));
    CHECK(floe__avro_double(floe__avro_get(v, "d"), &d));
    CHECK(k == 3 ? d == -INFINITY : d == (double)k / 3.0);
    CHECK(floe__avro_bytes(floe__avro_get(v, "by"), &p, &n) && n == (size_t)(k % 5) &&
          memcmp(p, "\x00\x01\x02\x03", n) == 0);
    char want[32];
    snprintf(want, sizeof want, "str-%d-\xc3\xa9", k);
    CHECK(floe__avro_string(floe__avro_get_id(v, 8), &s, &n) && strcmp(s, want) == 0 &&
          n == strlen(want));
    CHECK(floe__avro_bytes(floe__avro_get(v, "fx"), &p, &n) && n == 3 &&
          memcmp(p, "\xff\x00\x7f", 3) == 0);
    const floe__avro_value *e = floe__avro_get(v, "e");
    CHECK(floe__avro_long(e, &l) && l == k % 3);
    if (e && l >= 0 && l < 3)
        CHECK_EQ_STR(e->schema->symbols[l], k % 3 == 0 ? "A" : k % 3 == 1 ? "B" : "C");
    const floe__avro_value *arr = floe__avro_get(v, "arr");
    CHECK(arr && arr->n == (size_t)(k % 3));
    for (int j = 0; arr && j < k % 3; j++) {
        const floe__avro_value *inner = floe__avro_item(arr, (size_t)j);
        CHECK(inner && inner->n == (size_t)j);
        for (int q = 0; inner && q < j; q++)
            CHECK(floe__avro_long(floe__avro_item(inner, (size_t)q), &l) && l == k * 100 + q);
    }
    const floe__avro_value *m = floe__avro_get(v, "m");
    CHECK(m && m->n == 2);
    CHECK(floe__avro_string(floe__avro_map_key(m, 0), &s, NULL) && strcmp(s, "one") == 0);
    CHECK(floe__avro_double(floe__avro_map_value(m, 0), &d) && d == 1.0 + k);
    CHECK(floe__avro_string(floe__avro_map_key(m, 1), &s, NULL) && strcmp(s, "none") == 0);
    CHECK(floe__avro_is_null(floe__avro_map_value(m, 1)));
    CHECK(floe__avro_map_key(m, 2) == NULL);
    const floe__avro_value *u = floe__avro_get(v, "u");
    CHECK_EQ_INT(u ? u->branch : -2, k % 5);
    if (k % 5 == 1)
        CHECK(floe__avro_string(u, &s, NULL) && strcmp(s, "u") == 0);
    if (k % 5 == 2)
        CHECK(floe__avro_bytes(u, &p, &n) && n == 3 && memcmp(p, "abc", 3) == 0);
    if (k % 5 == 3)
        CHECK(floe__avro_long(floe__avro_get(u, "x"), &l) && l == -k);
    if (k % 5 == 4)
        CHECK(u && u->type == FLOE_AVRO_RECORD && u->n == 0 && strcmp(u->schema->name, "t.Q") == 0);
    const floe__avro_value *rec = floe__avro_get_id(v, 15);
    CHECK(floe__avro_long(floe__avro_get_id(floe__avro_get(rec, "p"), 14), &l) && l == k * 11);
    const floe__avro_value *kv = floe__avro_item(floe__avro_get_id(rec, 17), 0);
    CHECK(floe__avro_long(floe__avro_get(kv, "key"), &l) && l == 7);
    CHECK(floe__avro_bytes(floe__avro_get_id(kv, 19), &p, &n) && n == 2 && memcmp(p, "kv", 2) == 0);
    CHECK(floe__avro_get_id(rec, 17) && floe__avro_get_id(rec, 17)->schema->logical == FLOE_AVRO_LT_MAP);
    CHECK(floe__avro_long(floe__avro_get(v, "dt"), &l) && l == 19000 + k);
    CHECK(floe__avro_get(v, "dt") && floe__avro_get(v, "dt")->schema->logical == FLOE_AVRO_LT_DATE);
    /* lookups that find nothing */
    CHECK(floe__avro_get(v, "nope") == NULL);
    CHECK(floe__avro_get_id(v, 999) == NULL);
    CHECK(floe__avro_get(floe__avro_get(v, "nope"), "x") == NULL);
    CHECK(floe__avro_get(floe__avro_get(v, "l"), "x") == NULL);
    CHECK(!floe__avro_long(floe__avro_get(v, "s"), &l));
    CHECK(!floe__avro_string(floe__avro_get(v, "l"), &s, NULL));
    CHECK(!floe__avro_boolean(NULL, &b));
}

static void round_trip(floe__avro_codec codec, size_t block, int n)
{
    floe__buf f;
    floe_error *err = floe_error_new();
    int rc = write_file(ALL_TYPES, codec, block, fill_all, &n, &f, err);
    CHECK_EQ_INT(rc, FLOE_OK);
    if (rc != FLOE_OK)
        fprintf(stderr, "%s\n", floe_error_message(err));
    floe__avro_reader *r = NULL;
    CHECK_EQ_INT(floe__avro_reader_open(f.data, f.len, NULL, &r, err), FLOE_OK);
    if (r) {
        CHECK_EQ_INT(floe__avro_reader_codec(r), codec);
        const floe__avro_value *v;
        int k = 0;
        while ((rc = floe__avro_reader_next(r, &v, err)) == FLOE_OK && v)
            check_all(v, k++);
        CHECK_EQ_INT(rc, FLOE_OK);
        CHECK_EQ_INT(k, n);
        floe__avro_reader_free(r);
    }
    floe__buf_free(&f);
    floe_error_free(err);
}

TEST(round_trip_null) { round_trip(FLOE_AVRO_CODEC_NULL, 0, 25); }
TEST(round_trip_deflate) { round_trip(FLOE_AVRO_CODEC_DEFLATE, 0, 25); }
TEST(round_trip_snappy) { round_trip(FLOE_AVRO_CODEC_SNAPPY, 0, 25); }
TEST(round_trip_zstd) { round_trip(FLOE_AVRO_CODEC_ZSTD, 0, 25); }
/* tiny blocks: every object closes a block */
TEST(round_trip_many_blocks) { round_trip(FLOE_AVRO_CODEC_DEFLATE, 1, 40); }

static void fill_rows(floe__avro_writer *w, void *arg)
{
    int n = *(int *)arg;
    for (int k = 0; k < n; k++) {
        floe__avro_begin_record(w);
        floe__avro_put_long(w, k);
        floe__avro_put_cstr(w, "a fairly repetitive string value, for the compressor");
        floe__avro_end_record(w, NULL);
    }
}

static size_t count_syncs(const floe__buf *f)
{
    size_t n = 0;
    for (size_t i = 0; i + 16 <= f->len; i++)
        if (memcmp(f->data + i, SYNC, 16) == 0)
            n++;
    return n;
}

TEST(deflate_compresses_and_blocks_split)
{
    static const char *schema = "{\"type\":\"record\",\"name\":\"r\",\"fields\":["
                                "{\"name\":\"k\",\"type\":\"long\"},{\"name\":\"s\",\"type\":\"string\"}]}";
    int n = 4000;                                  /* ~220 KB: under one default block */
    floe__buf plain, packed, small;
    CHECK_EQ_INT(write_file(schema, FLOE_AVRO_CODEC_NULL, 0, fill_rows, &n, &plain, NULL), FLOE_OK);
    CHECK_EQ_INT(write_file(schema, FLOE_AVRO_CODEC_DEFLATE, 0, fill_rows, &n, &packed, NULL), FLOE_OK);
    CHECK_EQ_INT(write_file(schema, FLOE_AVRO_CODEC_DEFLATE, 4096, fill_rows, &n, &small, NULL), FLOE_OK);
    CHECK(packed.len * 10 < plain.len);
    CHECK_EQ_INT(count_syncs(&plain), 2);          /* header + one block */
    CHECK(count_syncs(&small) > 50);               /* ~220 KB in 4 KiB blocks */
    size_t got = 0;
    CHECK_EQ_INT(read_all(packed.data, packed.len, NULL, &got, NULL), FLOE_OK);
    CHECK_EQ_INT(got, n);
    CHECK_EQ_INT(read_all(small.data, small.len, NULL, &got, NULL), FLOE_OK);
    CHECK_EQ_INT(got, n);
    floe__buf_free(&plain);
    floe__buf_free(&packed);
    floe__buf_free(&small);
}

static void fill_nothing(floe__avro_writer *w, void *arg)
{
    (void)w;
    (void)arg;
}

TEST(empty_file_and_non_record_root)
{
    floe__buf f;
    CHECK_EQ_INT(write_file("\"long\"", FLOE_AVRO_CODEC_NULL, 0, fill_nothing, NULL, &f, NULL),
                 FLOE_OK);
    size_t got = 99;
    CHECK_EQ_INT(read_all(f.data, f.len, NULL, &got, NULL), FLOE_OK);
    CHECK_EQ_INT(got, 0);
    floe__buf_free(&f);
    /* a bare long root: every put is an object */
    floe__buf_init(&f, 0);
    floe__output *out = floe__output_memory(&f);
    floe__avro_writer *w = NULL;
    CHECK_EQ_INT(floe__avro_writer_new("\"long\"", NULL, NULL, 0, out, &w, NULL), FLOE_OK);
    for (int i = 0; i < 3; i++)
        floe__avro_put_long(w, i - 1);
    CHECK_EQ_INT(floe__avro_writer_objects(w), 3);
    CHECK_EQ_INT(floe__avro_writer_close(w, NULL, NULL), FLOE_OK);
    floe__avro_reader *r = NULL;
    CHECK_EQ_INT(floe__avro_reader_open(f.data, f.len, NULL, &r, NULL), FLOE_OK);
    const floe__avro_value *v;
    int64_t l;
    for (int i = 0; r && i < 3; i++) {
        CHECK_EQ_INT(floe__avro_reader_next(r, &v, NULL), FLOE_OK);
        CHECK(floe__avro_long(v, &l) && l == i - 1);
    }
    floe__avro_reader_free(r);
    floe__buf_free(&f);
}

/* ---- writer misuse ---------------------------------------------------------- */

static const char MISUSE[] =
    "{\"type\":\"record\",\"name\":\"m\",\"fields\":["
    "{\"name\":\"a\",\"type\":\"long\"},"
    "{\"name\":\"tags\",\"type\":[\"null\",{\"type\":\"array\",\"items\":\"string\"}]},"
    "{\"name\":\"u\",\"type\":[\"null\",{\"type\":\"record\",\"name\":\"A\",\"fields\":[]},"
    "{\"type\":\"record\",\"name\":\"B\",\"fields\":[]}]},"
    "{\"name\":\"fx\",\"type\":{\"type\":\"fixed\",\"name\":\"F\",\"size\":2}},"
    "{\"name\":\"e\",\"type\":{\"type\":\"enum\",\"name\":\"En\",\"symbols\":[\"X\"]}}]}";

static floe__avro_writer *misuse_writer(floe__buf *f)
{
    floe__buf_init(f, 0);
    floe__output *out = floe__output_memory(f);
    floe__avro_writer *w = NULL;
    if (floe__avro_writer_new(MISUSE, NULL, NULL, 0, out, &w, NULL) != FLOE_OK)
        out->abort(out);
    return w;
}

/* Runs `steps` on a fresh writer and expects the given failure, with a
 * message containing `needle`, sticky on later calls. */
static void expect_misuse(void (*steps)(floe__avro_writer *), const char *needle)
{
    floe__buf f;
    floe__avro_writer *w = misuse_writer(&f);
    CHECK(w != NULL);
    if (!w)
        return;
    steps(w);
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(floe__avro_writer_error(w, err), FLOE_EINVAL);
    if (!strstr(floe_error_message(err), needle))
        fprintf(stderr, "message \"%s\" lacks \"%s\"\n", floe_error_message(err), needle);
    CHECK(strstr(floe_error_message(err), needle) != NULL);
    CHECK_EQ_INT(floe__avro_put_long(w, 1), FLOE_EINVAL);       /* sticky */
    CHECK_EQ_INT(floe__avro_writer_close(w, NULL, err), FLOE_EINVAL);
    CHECK_EQ_INT(f.len, 0);                                       /* aborted */
    floe__buf_free(&f);
    floe_error_free(err);
}

static void wrong_type(floe__avro_writer *w)
{
    floe__avro_begin_record(w);
    floe__avro_put_cstr(w, "not a long");
}
static void missing_field(floe__avro_writer *w)
{
    floe__avro_begin_record(w);
    floe__avro_put_long(w, 1);
    floe__avro_end_record(w, NULL);
}
static void too_many_items(floe__avro_writer *w)
{
    floe__avro_begin_record(w);
    floe__avro_put_long(w, 1);
    floe__avro_begin_array(w, 1);
    floe__avro_put_cstr(w, "x");
    floe__avro_put_cstr(w, "y");
}
static void too_few_items(floe__avro_writer *w)
{
    floe__avro_begin_record(w);
    floe__avro_put_long(w, 1);
    floe__avro_begin_array(w, 2);
    floe__avro_put_cstr(w, "x");
    floe__avro_end_array(w);
}
static void ambiguous_union(floe__avro_writer *w)
{
    floe__avro_begin_record(w);
    floe__avro_put_long(w, 1);
    floe__avro_put_null(w);
    floe__avro_begin_record(w);
}
static void bad_fixed(floe__avro_writer *w)
{
    floe__avro_begin_record(w);
    floe__avro_put_long(w, 1);
    floe__avro_put_null(w);
    floe__avro_put_null(w);
    floe__avro_put_fixed(w, "abc", 3);
}
static void bad_enum(floe__avro_writer *w)
{
    floe__avro_begin_record(w);
    floe__avro_put_long(w, 1);
    floe__avro_put_null(w);
    floe__avro_put_null(w);
    floe__avro_put_fixed(w, "ab", 2);
    floe__avro_put_enum(w, 1);
}
static void bad_utf8(floe__avro_writer *w)
{
    floe__avro_begin_record(w);
    floe__avro_put_long(w, 1);
    floe__avro_begin_array(w, 1);
    floe__avro_put_string(w, "\xc3\x28", 2);
}
static void bad_branch(floe__avro_writer *w)
{
    floe__avro_begin_record(w);
    floe__avro_put_long(w, 1);
    floe__avro_put_union(w, 2);
}
static void union_not_expected(floe__avro_writer *w)
{
    floe__avro_begin_record(w);
    floe__avro_put_union(w, 0);
}
static void stray_end(floe__avro_writer *w) { floe__avro_end_array(w); }
static void half_written(floe__avro_writer *w)
{
    floe__avro_begin_record(w);
    floe__avro_put_long(w, 1);
}

TEST(writer_misuse)
{
    expect_misuse(wrong_type, "at m.a: expected long, got string");
    expect_misuse(missing_field, "field \"tags\"");
    expect_misuse(too_many_items, "no value expected");
    expect_misuse(too_few_items, "declared 2 items but 1");
    expect_misuse(ambiguous_union, "call put_union");
    expect_misuse(bad_fixed, "holds 2 bytes, got 3");
    expect_misuse(bad_enum, "no symbol 1");
    expect_misuse(bad_utf8, "UTF-8");
    expect_misuse(bad_branch, "no branch 2");
    expect_misuse(union_not_expected, "put_union where long");
    expect_misuse(stray_end, "end_array without");
    /* close with an object half-written */
    floe__buf f;
    floe__avro_writer *w = misuse_writer(&f);
    half_written(w);
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(floe__avro_writer_close(w, NULL, err), FLOE_EINVAL);
    CHECK(strstr(floe_error_message(err), "half-written") != NULL);
    floe__buf_free(&f);
    floe_error_free(err);
}

TEST(writer_new_errors)
{
    floe__buf f;
    floe__buf_init(&f, 0);
    floe__output *out = floe__output_memory(&f);
    floe__avro_writer *w = NULL;
    floe__avro_meta reserved[] = {{"avro.thing", "x", FLOE_AVRO_STRLEN}};
    CHECK_EQ_INT(floe__avro_writer_new("\"int\"", NULL, reserved, 1, out, &w, NULL), FLOE_EINVAL);
    floe__avro_meta dup[] = {{"k", "x", FLOE_AVRO_STRLEN}, {"k", "y", FLOE_AVRO_STRLEN}};
    CHECK_EQ_INT(floe__avro_writer_new("\"int\"", NULL, dup, 2, out, &w, NULL), FLOE_EINVAL);
    CHECK_EQ_INT(floe__avro_writer_new("{\"type\":\"nope\"}", NULL, NULL, 0, out, &w, NULL),
                 FLOE_ESCHEMA);
    /* names a strict reader would reject */
    CHECK_EQ_INT(floe__avro_writer_new("{\"type\":\"record\",\"name\":\"r\",\"fields\":"
                                       "[{\"name\":\"a-b\",\"type\":\"int\"}]}",
                                       NULL, NULL, 0, out, &w, NULL),
                 FLOE_ESCHEMA);
    CHECK_EQ_INT(floe__avro_writer_new("{\"type\":\"fixed\",\"name\":\"9x\",\"size\":1}", NULL,
                                       NULL, 0, out, &w, NULL),
                 FLOE_ESCHEMA);
    CHECK(w == NULL);
    out->abort(out);
    floe__buf_free(&f);
}

/* An output that fails after `budget` bytes. */
typedef struct failing_output {
    floe__output base;
    size_t budget;
} failing_output;

static int failing_write(floe__output *o, const void *p, size_t n, floe_error *err)
{
    (void)p;
    failing_output *f = (failing_output *)o;
    if (n > f->budget)
        return floe__err_set(err, FLOE_EIO, "disk full");
    f->budget -= n;
    return FLOE_OK;
}
static int failing_close(floe__output *o, floe_error *err)
{
    (void)err;
    floe__free(o);
    return FLOE_OK;
}
static void failing_abort(floe__output *o) { floe__free(o); }

TEST(writer_output_failure)
{
    failing_output *o = floe__calloc(1, sizeof *o);
    o->base = (floe__output){failing_write, failing_close, failing_abort, 0};
    o->budget = 2000;
    floe__avro_writer_options opts = {.block_size = 100};
    floe__avro_writer *w = NULL;
    CHECK_EQ_INT(floe__avro_writer_new(MISUSE, &opts, NULL, 0, &o->base, &w, NULL), FLOE_OK);
    floe_error *err = floe_error_new();
    int rc = FLOE_OK;
    for (int i = 0; i < 1000 && rc == FLOE_OK; i++) {
        floe__avro_begin_record(w);
        floe__avro_put_long(w, i);
        floe__avro_begin_array(w, 1);
        floe__avro_put_cstr(w, "some text to fill blocks quickly, some text to fill blocks");
        floe__avro_end_array(w);
        floe__avro_put_null(w);
        floe__avro_put_fixed(w, "ab", 2);
        floe__avro_put_enum(w, 0);
        rc = floe__avro_end_record(w, err);
    }
    CHECK_EQ_INT(rc, FLOE_EIO);
    CHECK(strstr(floe_error_message(err), "disk full") != NULL);
    CHECK_EQ_INT(floe__avro_writer_close(w, NULL, NULL), FLOE_EIO);   /* aborts, frees */
    floe_error_free(err);
}

/* ---- reader: corrupt and hostile files ------------------------------------- */

TEST(reader_bad_headers)
{
    floe_error *err = floe_error_new();
    size_t n;
    CHECK_EQ_INT(read_all((const uint8_t *)"Obj\x02", 4, NULL, &n, err), FLOE_EFORMAT);
    CHECK(strstr(floe_error_message(err), "magic") != NULL);
    CHECK_EQ_INT(read_all((const uint8_t *)"", 0, NULL, &n, err), FLOE_EFORMAT);
    floe__buf b;
    /* no avro.schema */
    floe__buf_init(&b, 0);
    floe__buf_append(&b, "Obj\x01\x00", 5, NULL);
    floe__buf_append(&b, SYNC, 16, NULL);
    CHECK_EQ_INT(read_all(b.data, b.len, NULL, &n, err), FLOE_EFORMAT);
    CHECK(strstr(floe_error_message(err), "avro.schema") != NULL);
    floe__buf_free(&b);
    /* bad schema JSON, unknown codec */
    ocf_header(&b, "{\"type\":", NULL);
    CHECK_EQ_INT(read_all(b.data, b.len, NULL, &n, err), FLOE_ESCHEMA);
    floe__buf_free(&b);
    ocf_header(&b, "\"int\"", "lzma");
    CHECK_EQ_INT(read_all(b.data, b.len, NULL, &n, err), FLOE_EUNSUPPORTED);
    floe__buf_free(&b);
    /* metadata in a negative-count block (count -1, then its byte size) */
    floe__buf_init(&b, 0);
    floe__buf_append(&b, "Obj\x01", 4, NULL);
    floe__buf tmp;
    floe__buf_init(&tmp, 0);
    floe__avro_enc_bytes(&tmp, "avro.schema", 11, NULL);
    floe__avro_enc_bytes(&tmp, "\"int\"", 5, NULL);
    floe__avro_enc_long(&b, -1, NULL);
    floe__avro_enc_long(&b, (int64_t)tmp.len, NULL);
    floe__buf_append(&b, tmp.data, tmp.len, NULL);
    floe__avro_enc_long(&b, 0, NULL);
    floe__buf_append(&b, SYNC, 16, NULL);
    ocf_block(&b, 2, "\x02\x04", 2);
    CHECK_EQ_INT(read_all(b.data, b.len, NULL, &n, err), FLOE_OK);
    CHECK_EQ_INT(n, 2);
    floe__buf_free(&tmp);
    floe__buf_free(&b);
    floe_error_free(err);
}

/* Every prefix of a file is corrupt, except those that end right after a
 * sync marker: a file cut at a block boundary is a valid, shorter file. */
static void every_truncation(floe__avro_codec codec, size_t block, int n)
{
    floe__buf f;
    CHECK_EQ_INT(write_file(ALL_TYPES, codec, block, fill_all, &n, &f, NULL), FLOE_OK);
    size_t got, boundaries = 0;
    for (size_t len = 0; len < f.len; len++) {
        bool boundary = len >= 16 && memcmp(f.data + len - 16, SYNC, 16) == 0;
        int rc = read_all(f.data, len, NULL, &got, NULL);
        if (rc != (boundary ? FLOE_OK : FLOE_EFORMAT))
            fprintf(stderr, "prefix %zu of %zu: %s\n", len, f.len, floe_code_name(rc));
        CHECK_EQ_INT(rc, boundary ? FLOE_OK : FLOE_EFORMAT);
        boundaries += boundary;
    }
    CHECK(boundaries >= 1);
    CHECK_EQ_INT(read_all(f.data, f.len, NULL, &got, NULL), FLOE_OK);
    CHECK_EQ_INT(got, n);
    floe__buf_free(&f);
}

TEST(reader_every_truncation) { every_truncation(FLOE_AVRO_CODEC_NULL, 300, 7); }
TEST(reader_every_truncation_deflate) { every_truncation(FLOE_AVRO_CODEC_DEFLATE, 0, 5); }
TEST(reader_every_truncation_zstd) { every_truncation(FLOE_AVRO_CODEC_ZSTD, 0, 5); }
TEST(reader_every_truncation_snappy) { every_truncation(FLOE_AVRO_CODEC_SNAPPY, 0, 5); }

TEST(reader_wrong_sync_and_garbage)
{
    int n = 3;
    floe__buf f;
    CHECK_EQ_INT(write_file(ALL_TYPES, FLOE_AVRO_CODEC_NULL, 0, fill_all, &n, &f, NULL), FLOE_OK);
    floe_error *err = floe_error_new();
    size_t got;
    f.data[f.len - 3] ^= 0x40;                        /* the block's sync */
    CHECK_EQ_INT(read_all(f.data, f.len, NULL, &got, err), FLOE_EFORMAT);
    CHECK(strstr(floe_error_message(err), "sync") != NULL);
    f.data[f.len - 3] ^= 0x40;
    floe__buf_append(&f, "\x02", 1, NULL);             /* trailing garbage */
    CHECK_EQ_INT(read_all(f.data, f.len, NULL, &got, err), FLOE_EFORMAT);
    CHECK_EQ_INT(got, 3);
    floe__buf_free(&f);
    floe_error_free(err);
}

TEST(reader_hostile_blocks)
{
    floe_error *err = floe_error_new();
    size_t n;
    /* leftover bytes after the last object */
    CHECK_EQ_INT(read_crafted("\"long\"", 1, "\x02\x02", 2, &n, err), FLOE_EFORMAT);
    CHECK(strstr(floe_error_message(err), "after its last object") != NULL);
    /* more objects than bytes could hold */
    CHECK_EQ_INT(read_crafted("\"long\"", 1000, "\x02\x02", 2, &n, err), FLOE_EFORMAT);
    /* negative object count */
    CHECK_EQ_INT(read_crafted("\"long\"", -1, "\x02", 1, &n, err), FLOE_EFORMAT);
    /* a string claiming 2^62 bytes */
    CHECK_EQ_INT(read_crafted("\"string\"", 1,
                              "\xfe\xff\xff\xff\xff\xff\xff\xff\x7f", 9, &n, err), FLOE_EFORMAT);
    /* an array of 2^40 nulls: no bytes per item, stopped by the value limit */
    CHECK_EQ_INT(read_crafted("{\"type\":\"array\",\"items\":\"null\"}", 1,
                              "\x80\x80\x80\x80\x80\x40\x00", 7, &n, err), FLOE_EFORMAT);
    CHECK(strstr(floe_error_message(err), "limit") != NULL);
    /* an array of 2^40 longs: more items than bytes */
    CHECK_EQ_INT(read_crafted("{\"type\":\"array\",\"items\":\"long\"}", 1,
                              "\x80\x80\x80\x80\x80\x40\x00", 7, &n, err), FLOE_EFORMAT);
    /* a map of 2^40 entries */
    CHECK_EQ_INT(read_crafted("{\"type\":\"map\",\"values\":\"null\"}", 1,
                              "\x80\x80\x80\x80\x80\x40\x00", 7, &n, err), FLOE_EFORMAT);
    /* array blocks with negative counts and byte sizes are fine */
    CHECK_EQ_INT(read_crafted("{\"type\":\"array\",\"items\":\"long\"}", 1,
                              "\x03\x04\x06\x36\x01\x02\x08\x00", 8, &n, err), FLOE_OK);
    /* ... but not a byte size beyond the block */
    CHECK_EQ_INT(read_crafted("{\"type\":\"array\",\"items\":\"long\"}", 1,
                              "\x03\x40\x06\x36\x00", 5, &n, err), FLOE_EFORMAT);
    /* union branch out of range, enum symbol out of range, bad boolean */
    CHECK_EQ_INT(read_crafted("[\"null\",\"long\"]", 1, "\x04", 1, &n, err), FLOE_EFORMAT);
    CHECK_EQ_INT(read_crafted("[\"null\",\"long\"]", 1, "\x01", 1, &n, err), FLOE_EFORMAT);
    CHECK_EQ_INT(read_crafted("{\"type\":\"enum\",\"name\":\"e\",\"symbols\":[\"A\"]}", 1, "\x02",
                              1, &n, err), FLOE_EFORMAT);
    CHECK_EQ_INT(read_crafted("\"boolean\"", 1, "\x05", 1, &n, err), FLOE_EFORMAT);
    /* invalid UTF-8 in a string */
    CHECK_EQ_INT(read_crafted("\"string\"", 1, "\x04\xc3\x28", 3, &n, err), FLOE_EFORMAT);
    /* an int out of 32-bit range */
    CHECK_EQ_INT(read_crafted("\"int\"", 1, "\x80\x80\x80\x80\x10", 5, &n, err), FLOE_EFORMAT);
    /* a fixed longer than the data */
    CHECK_EQ_INT(read_crafted("{\"type\":\"fixed\",\"name\":\"f\",\"size\":100000}", 1, "ab", 2,
                              &n, err), FLOE_EFORMAT);
    /* data nested 100 deep through a recursive type */
    floe__buf deep;
    floe__buf_init(&deep, 0);
    for (int i = 0; i < 100; i++)
        floe__buf_putc(&deep, 0x02, NULL);         /* branch 1: another node */
    floe__buf_putc(&deep, 0x00, NULL);
    CHECK_EQ_INT(read_crafted("{\"type\":\"record\",\"name\":\"L\",\"fields\":[{\"name\":\"n\","
                              "\"type\":[\"null\",\"L\"]}]}",
                              1, deep.data, deep.len, &n, err), FLOE_EFORMAT);
    CHECK(strstr(floe_error_message(err), "deeper") != NULL);
    floe__buf_free(&deep);
    /* a block of no objects is fine when empty */
    CHECK_EQ_INT(read_crafted("\"long\"", 0, "", 0, &n, err), FLOE_OK);
    CHECK_EQ_INT(n, 0);
    floe_error_free(err);
}

TEST(reader_sticky_failure)
{
    floe__buf b;
    ocf_header(&b, "\"long\"", NULL);
    ocf_block(&b, 1, "\x02", 1);
    ocf_block(&b, 1, "\x80", 1);                     /* truncated varint */
    floe__avro_reader *r = NULL;
    CHECK_EQ_INT(floe__avro_reader_open(b.data, b.len, NULL, &r, NULL), FLOE_OK);
    const floe__avro_value *v = NULL;
    if (r) {
        CHECK_EQ_INT(floe__avro_reader_next(r, &v, NULL), FLOE_OK);
        CHECK(v != NULL);
        CHECK_EQ_INT(floe__avro_reader_next(r, &v, NULL), FLOE_EFORMAT);
        CHECK_EQ_INT(floe__avro_reader_next(r, &v, NULL), FLOE_EFORMAT);
        floe__avro_reader_free(r);
    }
    floe__buf_free(&b);
}

TEST(reader_codec_corruption)
{
    floe_error *err = floe_error_new();
    size_t n;
    int k = 4;
    floe__buf f;
    /* snappy: flip a byte of the stored CRC */
    CHECK_EQ_INT(write_file(ALL_TYPES, FLOE_AVRO_CODEC_SNAPPY, 0, fill_all, &k, &f, NULL), FLOE_OK);
    f.data[f.len - 17] ^= 1;
    CHECK_EQ_INT(read_all(f.data, f.len, NULL, &n, err), FLOE_EFORMAT);
    CHECK(strstr(floe_error_message(err), "CRC32") != NULL);
    floe__buf_free(&f);
    /* deflate and zstd: garbage blocks */
    floe__buf b;
    ocf_header(&b, "\"long\"", "deflate");
    ocf_block(&b, 1, "\xff\xff\xff\xff", 4);
    CHECK_EQ_INT(read_all(b.data, b.len, NULL, &n, err), FLOE_EFORMAT);
    floe__buf_free(&b);
    ocf_header(&b, "\"long\"", "zstandard");
    ocf_block(&b, 1, "\x28\xb5\x2f\xfd\x00\x00", 6);
    CHECK_EQ_INT(read_all(b.data, b.len, NULL, &n, err), FLOE_EFORMAT);
    floe__buf_free(&b);
    ocf_header(&b, "\"long\"", "snappy");
    ocf_block(&b, 1, "\x02", 1);
    CHECK_EQ_INT(read_all(b.data, b.len, NULL, &n, err), FLOE_EFORMAT);
    floe__buf_free(&b);
    floe_error_free(err);
}

/* pyiceberg's deflate blocks are zlib output minus 2 leading bytes and 1
 * trailing byte: raw deflate followed by 3 bytes of the adler32.  Readers
 * ignore bytes after the end of the deflate stream; so do we. */
TEST(reader_deflate_with_zlib_trailer)
{
    uint8_t raw[] = {0x02};                          /* one long: 1 */
    uint8_t z[64];
    uLongf zn = sizeof z;
    CHECK_EQ_INT(compress(z, &zn, raw, 1), Z_OK);
    floe__buf b;
    ocf_header(&b, "\"long\"", "deflate");
    ocf_block(&b, 1, z + 2, zn - 3);
    floe__avro_reader *r = NULL;
    CHECK_EQ_INT(floe__avro_reader_open(b.data, b.len, NULL, &r, NULL), FLOE_OK);
    const floe__avro_value *v = NULL;
    int64_t l = 0;
    if (r) {
        CHECK_EQ_INT(floe__avro_reader_next(r, &v, NULL), FLOE_OK);
        CHECK(floe__avro_long(v, &l) && l == 1);
        CHECK_EQ_INT(floe__avro_reader_next(r, &v, NULL), FLOE_OK);
        CHECK(v == NULL);
        floe__avro_reader_free(r);
    }
    floe__buf_free(&b);
}

/* A block that expands past the reader's limit stops there. */
TEST(reader_decompression_limit)
{
    static const char *schema = "{\"type\":\"record\",\"name\":\"r\",\"fields\":["
                                "{\"name\":\"k\",\"type\":\"long\"},{\"name\":\"s\",\"type\":\"string\"}]}";
    int n = 20000;                                    /* ~1.1 MB, one block */
    floe__avro_codec codecs[] = {FLOE_AVRO_CODEC_NULL, FLOE_AVRO_CODEC_DEFLATE,
                                 FLOE_AVRO_CODEC_SNAPPY, FLOE_AVRO_CODEC_ZSTD};
    for (size_t c = 0; c < 4; c++) {
        floe__buf f;
        CHECK_EQ_INT(write_file(schema, codecs[c], 4u << 20, fill_rows, &n, &f, NULL), FLOE_OK);
        floe__avro_reader_options o = {.max_block_bytes = 256 * 1024};
        size_t got;
        floe_error *err = floe_error_new();
        CHECK_EQ_INT(read_all(f.data, f.len, &o, &got, err), FLOE_EFORMAT);
        CHECK(strstr(floe_error_message(err), "more than 262144 bytes") != NULL);
        CHECK_EQ_INT(read_all(f.data, f.len, NULL, &got, err), FLOE_OK);
        CHECK_EQ_INT(got, n);
        floe__buf_free(&f);
        floe_error_free(err);
    }
}

int main(void)
{
    RUN(varint_spec_table);
    RUN(varint_round_trip_powers);
    RUN(varint_malformed);
    RUN(float_double_bytes);
    RUN(block_counts);
    RUN(schema_names_and_ids);
    RUN(schema_logical_types);
    RUN(schema_errors);
    RUN(schema_many_names);
    RUN(spec_example_bytes);
    RUN(round_trip_null);
    RUN(round_trip_deflate);
    RUN(round_trip_snappy);
    RUN(round_trip_zstd);
    RUN(round_trip_many_blocks);
    RUN(deflate_compresses_and_blocks_split);
    RUN(empty_file_and_non_record_root);
    RUN(writer_misuse);
    RUN(writer_new_errors);
    RUN(writer_output_failure);
    RUN(reader_bad_headers);
    RUN(reader_every_truncation);
    RUN(reader_every_truncation_deflate);
    RUN(reader_every_truncation_zstd);
    RUN(reader_every_truncation_snappy);
    RUN(reader_wrong_sync_and_garbage);
    RUN(reader_hostile_blocks);
    RUN(reader_sticky_failure);
    RUN(reader_codec_corruption);
    RUN(reader_deflate_with_zlib_trailer);
    RUN(reader_decompression_limit);
    return UNIT_DONE();
}
