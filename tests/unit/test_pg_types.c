/*
 * test_pg_types.c - Postgres types as floe columns and Postgres text values
 * as rows (src/source/pg_types.c): the declarations of SPEC 3 each type
 * maps to, and values read by each converter, written back as floe's
 * canonical JSON (floe__datum_to_json) and compared; values an Iceberg
 * column cannot hold are FLOE_EINPUT and leave nothing behind.
 */
#include <stdio.h>

#include "source/pg_internal.h"
#include "unit.h"

static void decl_of(uint32_t oid, int32_t typmod, int wrap, const char *want)
{
    floe__pg_type t;
    floe__pg_scalar_type(oid, typmod, &t);
    if (wrap == 1)
        floe__pg_array_of(&t);
    else if (wrap == 2)
        floe__pg_range_of(&t);
    char buf[96];
    floe__pg_type_decl(&t, buf, sizeof buf);
    if (strcmp(buf, want) != 0)
        fprintf(stderr, "oid %u typmod %d wrap %d: %s, want %s\n", oid, typmod, wrap, buf, want);
    CHECK_EQ_STR(buf, want);
    floe_schema *s = NULL;                     /* every declaration parses */
    char cols[128];
    snprintf(cols, sizeof cols, "c %s", buf);
    CHECK_EQ_INT(floe_schema_parse(cols, &s, NULL), FLOE_OK);
    floe_schema_free(s);
}

#define NUMERIC(p, s) ((int32_t)((((p) << 16) | ((s) & 0x7ff)) + 4))

TEST(declarations)
{
    decl_of(16, -1, 0, "boolean");
    decl_of(21, -1, 0, "smallint");
    decl_of(23, -1, 0, "integer");
    decl_of(20, -1, 0, "bigint");
    decl_of(26, -1, 0, "uint4");
    decl_of(700, -1, 0, "real");
    decl_of(701, -1, 0, "double precision");
    decl_of(1700, NUMERIC(12, 2), 0, "numeric(12,2)");
    decl_of(1700, NUMERIC(5, -2), 0, "numeric(7,0)");       /* negative scale widens */
    decl_of(1700, NUMERIC(2, 5), 0, "numeric(5,5)");        /* scale above precision */
    decl_of(1700, NUMERIC(39, 0), 0, "text");               /* too wide: exact text */
    decl_of(1700, -1, 0, "text");                           /* unconstrained */
    decl_of(25, -1, 0, "text");
    decl_of(1043, 24, 0, "text");
    decl_of(1042, 9, 0, "text");
    decl_of(114, -1, 0, "jsonb");
    decl_of(3802, -1, 0, "jsonb");
    decl_of(1186, -1, 0, "interval");
    decl_of(2950, -1, 0, "uuid");
    decl_of(17, -1, 0, "bytea");
    decl_of(1082, -1, 0, "date");
    decl_of(1083, -1, 0, "time");
    decl_of(1114, 3, 0, "timestamp");
    decl_of(1184, -1, 0, "timestamptz");
    decl_of(869, -1, 0, "text");                            /* inet: unknown, text */
    decl_of(23, -1, 1, "integer[]");
    decl_of(1700, NUMERIC(6, 2), 1, "numeric(6,2)[]");
    decl_of(3802, -1, 1, "jsonb[]");
    decl_of(23, -1, 2, "range<integer>");
    decl_of(1082, -1, 2, "range<date>");
    decl_of(1184, -1, 2, "range<timestamptz>");
    CHECK(floe__pg_toastable('x', -1, 25, -1) && floe__pg_toastable('m', -1, 3802, -1));
    CHECK(!floe__pg_toastable('p', -1, 25, -1) && !floe__pg_toastable('p', 8, 20, -1));
    /* bounded by the type modifier: at most 24 bytes, never out of line */
    CHECK(!floe__pg_toastable('m', -1, 1700, NUMERIC(10, 2)));
    CHECK(!floe__pg_toastable('m', -1, 1700, NUMERIC(32, 0)));
    CHECK(floe__pg_toastable('m', -1, 1700, NUMERIC(33, 0)));
    CHECK(floe__pg_toastable('m', -1, 1700, -1));           /* numeric: unbounded */
    CHECK(!floe__pg_toastable('x', -1, 1043, 5 + 4) && floe__pg_toastable('x', -1, 1043, 6 + 4));
    CHECK(!floe__pg_toastable('x', -1, 1042, 1 + 4) && floe__pg_toastable('x', -1, 25, 9));
}

/* Read `text` as a value of (oid, typmod, wrap) and compare floe's JSON of
 * the one-column row with want (NULL: the value must be refused). */
static void value(uint32_t oid, int32_t typmod, int wrap, const char *text, const char *want)
{
    floe__pg_type t;
    floe__pg_scalar_type(oid, typmod, &t);
    if (wrap == 1)
        floe__pg_array_of(&t);
    else if (wrap == 2)
        floe__pg_range_of(&t);
    char decl[96], cols[128];
    floe__pg_type_decl(&t, decl, sizeof decl);
    snprintf(cols, sizeof cols, "c %s", decl);
    floe_schema *s = NULL;
    if (floe_schema_parse(cols, &s, NULL) != FLOE_OK) {
        CHECK(!"schema");
        return;
    }
    floe__buf out, scratch, json;
    floe__buf_init(&out, 1 << 20);
    floe__buf_init(&scratch, 1 << 20);
    floe__buf_init(&json, 1 << 20);
    floe_error *e = floe_error_new();
    int rc = floe__pg_value_put(&t, &s->root.children[0], text, strlen(text), &out, &scratch, e);
    if (!want) {
        if (rc != FLOE_EINPUT || out.len)
            fprintf(stderr, "%s '%s' was not refused (%d)\n", decl, text, rc);
        CHECK(rc == FLOE_EINPUT && out.len == 0 && *floe_error_message(e));
    } else if (rc != FLOE_OK) {
        fprintf(stderr, "%s '%s': %s\n", decl, text, floe_error_message(e));
        CHECK(rc == FLOE_OK);
    } else {
        CHECK_EQ_INT(floe__datum_validate(s, out.data, out.len, NULL), FLOE_OK);
        CHECK_EQ_INT(floe__datum_to_json(s, out.data, out.len, &json, NULL), FLOE_OK);
        floe__buf_putc(&json, 0, NULL);
        char w[1024];
        snprintf(w, sizeof w, "{\"c\":%s}", want);
        if (strcmp((const char *)json.data, w) != 0)
            fprintf(stderr, "%s '%s': %s, want %s\n", decl, text, (const char *)json.data, w);
        CHECK_EQ_STR((const char *)json.data, w);
    }
    floe_error_free(e);
    floe__buf_free(&out);
    floe__buf_free(&scratch);
    floe__buf_free(&json);
    floe_schema_free(s);
}

TEST(scalars)
{
    value(16, -1, 0, "t", "true");
    value(16, -1, 0, "f", "false");
    value(16, -1, 0, "true", NULL);
    value(21, -1, 0, "-32768", "-32768");
    value(21, -1, 0, "32768", NULL);
    value(23, -1, 0, "-2147483648", "-2147483648");
    value(23, -1, 0, "1.5", NULL);
    value(20, -1, 0, "-9223372036854775808", "-9223372036854775808");
    value(20, -1, 0, "9223372036854775808", NULL);
    value(20, -1, 0, "", NULL);
    value(20, -1, 0, "-", NULL);
    value(26, -1, 0, "4294967295", "4294967295");
    value(26, -1, 0, "-1", NULL);
    value(701, -1, 0, "1.5e+300", "1.5e+300");
    value(701, -1, 0, "-0", "-0.0");
    value(701, -1, 0, "NaN", "\"NaN\"");
    value(701, -1, 0, "-Infinity", "\"-Infinity\"");
    value(700, -1, 0, "3.4028235e+38", "3.4028235e+38");
    value(701, -1, 0, "abc", NULL);
    value(1700, NUMERIC(12, 3), 0, "-123456789.125", "\"-123456789.125\"");
    value(1700, NUMERIC(12, 3), 0, "NaN", NULL);
    value(1700, NUMERIC(4, 0), 0, "12345", NULL);
    value(1700, NUMERIC(5, -2), 0, "9999900", "\"9999900\"");
    value(1700, -1, 0, "1e-40", "\"1e-40\"");               /* unconstrained: its text */
    value(25, -1, 0, "tab\there \"q\" \\ é", "\"tab\\there \\\"q\\\" \\\\ é\"");
    value(25, -1, 0, "\xff\xfe", NULL);                    /* not UTF-8 */
    value(1186, -1, 0, "P1Y2M3DT4H5M6.5S", "\"P1Y2M3DT4H5M6.5S\"");
    value(3802, -1, 0, "{\"b\": 1, \"a\": [1, 2.50, null]}", "{\"b\":1,\"a\":[1,2.50,null]}");
    value(114, -1, 0, " [ ] ", "[]");
    value(3802, -1, 0, "{bad", NULL);
    value(2950, -1, 0, "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
          "\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\"");
    value(2950, -1, 0, "nope", NULL);
    value(17, -1, 0, "\\x00ff41", "\"AP9B\"");
    value(17, -1, 0, "\\x", "\"\"");
    value(17, -1, 0, "\\x0", NULL);
    value(17, -1, 0, "\\xzz", NULL);
    value(1082, -1, 0, "2024-02-29", "\"2024-02-29\"");
    value(1082, -1, 0, "infinity", NULL);
    value(1082, -1, 0, "0044-03-15 BC", NULL);
    value(1083, -1, 0, "23:59:59.999999", "\"23:59:59.999999\"");
    value(1083, -1, 0, "24:00:00", NULL);
    value(1114, -1, 0, "2024-01-02 03:04:05.123456", "\"2024-01-02 03:04:05.123456\"");
    value(1114, -1, 0, "-infinity", NULL);
    value(1184, -1, 0, "1999-12-31 23:59:59.5+05:30", "\"1999-12-31 18:29:59.5Z\"");
    value(1184, -1, 0, "2024-01-02 03:04:05+00", "\"2024-01-02 03:04:05Z\"");
}

TEST(arrays_and_ranges)
{
    value(23, -1, 1, "{1,NULL,-3}", "[1,null,-3]");
    value(23, -1, 1, "{}", "[]");
    value(23, -1, 1, "[2:3]={7,8}", "[7,8]");                /* the bounds are dropped */
    value(23, -1, 1, "{{1,2},{3,4}}", NULL);                 /* two dimensions */
    value(23, -1, 1, "[1:2][1:1]={{1},{2}}", NULL);
    value(23, -1, 1, "{1,2", NULL);
    value(23, -1, 1, "{1,x}", NULL);
    value(25, -1, 1, "{\"a,b\",\"q\\\"uote\",\"back\\\\slash\",NULL,\"\",\"NULL\",\" sp \"}",
          "[\"a,b\",\"q\\\"uote\",\"back\\\\slash\",null,\"\",\"NULL\",\" sp \"]");
    value(1700, NUMERIC(6, 2), 1, "{1.25,NULL}", "[\"1.25\",null]");
    value(17, -1, 1, "{\"\\\\x0102\"}", "[\"AQI=\"]");
    value(3802, -1, 1, "{\"{\\\"a\\\": 1}\",\"[]\"}", "[{\"a\":1},[]]");
    value(23, -1, 2, "[1,5)",
          "{\"lower\":1,\"upper\":5,\"lower_inclusive\":true,\"upper_inclusive\":false,"
          "\"empty\":false}");
    value(23, -1, 2, "empty",
          "{\"lower\":null,\"upper\":null,\"lower_inclusive\":false,\"upper_inclusive\":false,"
          "\"empty\":true}");
    value(20, -1, 2, "(,100]",
          "{\"lower\":null,\"upper\":100,\"lower_inclusive\":false,\"upper_inclusive\":true,"
          "\"empty\":false}");
    value(1114, -1, 2, "[\"2020-01-01 00:00:00\",\"2020-01-02 00:00:00\")",
          "{\"lower\":\"2020-01-01 00:00:00\",\"upper\":\"2020-01-02 00:00:00\","
          "\"lower_inclusive\":true,\"upper_inclusive\":false,\"empty\":false}");
    value(25, -1, 2, "[\"a\"\"b\",\"c\\\\d\"]",
          "{\"lower\":\"a\\\"b\",\"upper\":\"c\\\\d\",\"lower_inclusive\":true,"
          "\"upper_inclusive\":true,\"empty\":false}");
    value(23, -1, 2, "[1,5", NULL);
    value(23, -1, 2, "1,5)", NULL);
    value(23, -1, 2, "[1,5)x", NULL);
    value(23, -1, 2, "[a,5)", NULL);
}

int main(void)
{
    RUN(declarations);
    RUN(scalars);
    RUN(arrays_and_ranges);
    return UNIT_DONE();
}
