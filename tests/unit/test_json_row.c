/*
 * test_json_row.c - the JSON scanner (json_scan.c), the scalar text parsers
 * (json_value.c), the JSON -> row parser (json_row.c) and the row walkers
 * (datum.c): exact values, canonical forms, round trips and errors.
 */
#include <math.h>
#include <stdlib.h>

#include "source/source_internal.h"
#include "unit.h"

static floe_schema *schema(const char *cols)
{
    floe_schema *s = NULL;
    floe_error *e = floe_error_new();
    if (floe_schema_parse(cols, &s, e) != FLOE_OK)
        fprintf(stderr, "schema [%s]: %s\n", cols, floe_error_message(e));
    floe_error_free(e);
    return s;
}

/* Parses json as a row of s into b (reset first); returns the code and
 * prints the message on failure when `quiet` is false. */
static int parse(const floe_schema *s, const char *json, floe__buf *b, floe_error *e)
{
    floe__buf_reset(b);
    const char *end = json + strlen(json), *q = NULL;
    int rc = floe__json_parse_row(s, json, end, &q, b, e);
    if (rc == FLOE_OK) {
        CHECK(floe__json_ws(q, end) == end);
        CHECK_EQ_INT(floe__datum_validate(s, b->data, b->len, e), FLOE_OK);
        const uint8_t *p = b->data;
        for (uint32_t i = 0; i < s->root.n_children && p; i++)
            p = floe__datum_skip(&s->root.children[i], p, b->data + b->len);
        CHECK(p == b->data + b->len);
    }
    return rc;
}

static char *row_json(const floe_schema *s, const floe__buf *b)
{
    floe__buf out;
    floe__buf_init(&out, 0);
    CHECK_EQ_INT(floe__datum_to_json(s, b->data, b->len, &out, NULL), FLOE_OK);
    char *t = floe__buf_strdup(&out);
    floe__buf_free(&out);
    return t;
}

/* json parses; its canonical JSON is `want` (NULL: json itself); `want`
 * parses again to the same row bytes. */
static void rt(const char *cols, const char *json, const char *want)
{
    floe_schema *s = schema(cols);
    CHECK(s != NULL);
    if (!s)
        return;
    floe__buf a, b;
    floe__buf_init(&a, 0);
    floe__buf_init(&b, 0);
    floe_error *e = floe_error_new();
    int rc = parse(s, json, &a, e);
    if (rc != FLOE_OK)
        fprintf(stderr, "rt [%s] [%s]: %s\n", cols, json, floe_error_message(e));
    CHECK_EQ_INT(rc, FLOE_OK);
    if (rc == FLOE_OK) {
        char *t = row_json(s, &a);
        if (!want)
            want = json;
        if (strcmp(t, want) != 0)
            fprintf(stderr, "rt [%s]\n  input %s\n  got   %s\n  want  %s\n", cols, json, t, want);
        CHECK_EQ_STR(t, want);
        CHECK_EQ_INT(parse(s, t, &b, e), FLOE_OK);
        CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
        free(t);
    }
    floe_error_free(e);
    floe__buf_free(&a);
    floe__buf_free(&b);
    floe_schema_free(s);
}

/* json fails with `code` and a message holding both fragments. */
static void bad_code(const char *cols, const char *json, int code, const char *f1, const char *f2)
{
    floe_schema *s = schema(cols);
    CHECK(s != NULL);
    if (!s)
        return;
    floe__buf b;
    floe__buf_init(&b, 0);
    floe__buf_append(&b, "xyz", 3, NULL);        /* must be kept as it was */
    floe_error *e = floe_error_new();
    const char *q = NULL;
    int rc = floe__json_parse_row(s, json, json + strlen(json), &q, &b, e);
    const char *m = floe_error_message(e);
    bool ok = rc == code && strstr(m, f1) && (!f2 || strstr(m, f2));
    if (!ok)
        fprintf(stderr, "bad [%s] [%s]: rc %d \"%s\" (wanted \"%s\", \"%s\")\n", cols, json, rc, m,
                f1, f2 ? f2 : "");
    CHECK(ok);
    CHECK(b.len == 3 && memcmp(b.data, "xyz", 3) == 0);
    floe_error_free(e);
    floe__buf_free(&b);
    floe_schema_free(s);
}

static void bad(const char *cols, const char *json, const char *f1, const char *f2)
{
    bad_code(cols, json, FLOE_EINPUT, f1, f2);
}

/* The payload bytes of the first column (after the slot tag). */
static const uint8_t *first_payload(const char *cols, const char *json, floe__buf *b)
{
    floe_schema *s = schema(cols);
    int rc = s ? parse(s, json, b, NULL) : -1;
    CHECK_EQ_INT(rc, FLOE_OK);
    floe_schema_free(s);
    if (rc != FLOE_OK || b->len < 1 || b->data[0] != FLOE_SLOT_PRESENT)
        return NULL;
    return b->data + 1;
}

static int64_t i64_of(const char *cols, const char *json)
{
    floe__buf b;
    floe__buf_init(&b, 0);
    const uint8_t *p = first_payload(cols, json, &b);
    int64_t v = 0;
    if (p) {
        size_t w = b.len - 1;
        v = w == 4 ? (int32_t)floe__get_le32(p) : (int64_t)floe__get_le64(p);
    }
    floe__buf_free(&b);
    return v;
}

static floe__i128 i128_of(const char *cols, const char *json)
{
    floe__buf b;
    floe__buf_init(&b, 0);
    const uint8_t *p = first_payload(cols, json, &b);
    floe__i128 v = -12345;
    if (p && b.len == 17)
        memcpy(&v, p, 16);
    floe__buf_free(&b);
    return v;
}

static uint64_t bits_of(const char *cols, const char *json)
{
    floe__buf b;
    floe__buf_init(&b, 0);
    const uint8_t *p = first_payload(cols, json, &b);
    uint64_t v = 0;
    if (p)
        v = b.len == 5 ? floe__get_le32(p) : floe__get_le64(p);
    floe__buf_free(&b);
    return v;
}

static floe__i128 i128_from(const char *digits)
{
    floe__i128 v = 0;
    bool neg = *digits == '-';
    for (const char *p = digits + neg; *p; p++)
        v = v * 10 + (*p - '0');
    return neg ? -v : v;
}

/* ---- scanner ---------------------------------------------------------------- */

TEST(scanner_integers)
{
    const char *s;
    uint64_t u;
    int64_t i;
    s = "18446744073709551615,";
    CHECK(floe__json_u64(s, s + strlen(s), &u) == s + 20 && u == UINT64_MAX);
    s = "18446744073709551616";
    CHECK(floe__json_u64(s, s + strlen(s), &u) == NULL);
    s = "99999999999999999999";
    CHECK(floe__json_u64(s, s + strlen(s), &u) == NULL);
    s = "0";
    CHECK(floe__json_u64(s, s + 1, &u) == s + 1 && u == 0);
    s = "01";
    CHECK(floe__json_u64(s, s + 2, &u) == NULL);
    s = "-1";
    CHECK(floe__json_u64(s, s + 2, &u) == NULL);
    s = "-9223372036854775808]";
    CHECK(floe__json_i64(s, s + strlen(s), &i) == s + 20 && i == INT64_MIN);
    s = "9223372036854775807";
    CHECK(floe__json_i64(s, s + strlen(s), &i) == s + 19 && i == INT64_MAX);
    s = "9223372036854775808";
    CHECK(floe__json_i64(s, s + strlen(s), &i) == NULL);
    s = "-";
    CHECK(floe__json_i64(s, s + 1, &i) == NULL);
    s = "123";   /* bounded by end, not by the NUL */
    CHECK(floe__json_u64(s, s + 2, &u) == s + 2 && u == 12);
}

static int scan_str(const char *json, char *out, size_t *n)
{
    floe__json_str js;
    const char *q;
    int rc = floe__json_scan_string(json, json + strlen(json), &q, &js, NULL);
    if (rc == FLOE_OK)
        *n = floe__json_unescape(&js, out);
    return rc;
}

TEST(scanner_strings)
{
    char out[64];
    size_t n = 0;
    CHECK_EQ_INT(scan_str("\"plain ascii text that is long enough for words\"", out, &n), 0);
    CHECK(n == 46 && memcmp(out, "plain ascii text that is long enough for words", n) == 0);
    CHECK_EQ_INT(scan_str("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", out, &n), 0);
    CHECK(n == 12 && memcmp(out, "a\"b\\c/d\b\f\n\r\t", n) == 0);
    CHECK_EQ_INT(scan_str("\"\\u00e9\\u20AC\\ud83d\\ude00\\u0000x\"", out, &n), 0);
    CHECK(n == 2 + 3 + 4 + 1 + 1 && memcmp(out, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\0x", n) == 0);
    CHECK_EQ_INT(scan_str("\"h\xc3\xa9llo w\xf0\x9f\x98\x80rld\"", out, &n), 0);
    CHECK_EQ_INT(n, 15);
    CHECK_EQ_INT(scan_str("\"\\ud83d\"", out, &n), FLOE_EINPUT);          /* lone high */
    CHECK_EQ_INT(scan_str("\"\\ude00\"", out, &n), FLOE_EINPUT);          /* lone low */
    CHECK_EQ_INT(scan_str("\"\\ud83d\\u0041\"", out, &n), FLOE_EINPUT);   /* high + non-low */
    CHECK_EQ_INT(scan_str("\"\\x41\"", out, &n), FLOE_EINPUT);
    CHECK_EQ_INT(scan_str("\"\\u12g4\"", out, &n), FLOE_EINPUT);
    CHECK_EQ_INT(scan_str("\"abc", out, &n), FLOE_EINPUT);
    CHECK_EQ_INT(scan_str("\"a\nb\"", out, &n), FLOE_EINPUT);             /* raw control */
    CHECK_EQ_INT(scan_str("\"\xc3\"", out, &n), FLOE_EINPUT);             /* truncated */
    CHECK_EQ_INT(scan_str("\"\xc0\xaf\"", out, &n), FLOE_EINPUT);         /* overlong */
    CHECK_EQ_INT(scan_str("\"\xed\xa0\x80\"", out, &n), FLOE_EINPUT);     /* surrogate */
    CHECK_EQ_INT(scan_str("\"\xf4\x90\x80\x80\"", out, &n), FLOE_EINPUT); /* > U+10FFFF */
    CHECK_EQ_INT(scan_str("\"\xff\"", out, &n), FLOE_EINPUT);
    CHECK_EQ_INT(scan_str("\"12345678\x80\"", out, &n), FLOE_EINPUT);     /* after a fast block */

    floe__json_str js;
    const char *q, *k = "\"n\\u0061me\"";
    CHECK_EQ_INT(floe__json_scan_string(k, k + strlen(k), &q, &js, NULL), FLOE_OK);
    CHECK(floe__json_str_eq(&js, "name"));
    CHECK(!floe__json_str_eq(&js, "nam"));
    CHECK(!floe__json_str_eq(&js, "names"));
    k = "\"id\"";
    CHECK_EQ_INT(floe__json_scan_string(k, k + 4, &q, &js, NULL), FLOE_OK);
    CHECK(floe__json_str_eq(&js, "id") && !floe__json_str_eq(&js, "i") &&
          !floe__json_str_eq(&js, "idx") && !floe__json_str_eq(&js, ""));
}

static int compact(const char *json, char *out)
{
    floe__buf b;
    floe__buf_init(&b, 0);
    const char *q;
    int rc = floe__json_compact_value(json, json + strlen(json), &q, &b, NULL);
    if (rc == FLOE_OK) {
        memcpy(out, b.data, b.len);
        out[b.len] = '\0';
        CHECK(floe__json_ws(q, json + strlen(json)) == json + strlen(json));
    }
    floe__buf_free(&b);
    return rc;
}

TEST(scanner_values)
{
    char out[256];
    CHECK_EQ_INT(compact(" { \"a\" : [ 1 , -2.50e+3 , true , false , null ] ,\n\"b\":{}, "
                         "\"c\":[] , \"d\" : \"x\\/\\u0041\\n\\u001f\" } ", out), 0);
    CHECK_EQ_STR(out, "{\"a\":[1,-2.50e+3,true,false,null],\"b\":{},\"c\":[],"
                      "\"d\":\"x/A\\n\\u001f\"}");
    CHECK_EQ_INT(compact("\"\\u00e9\\\"\"", out), 0);
    CHECK_EQ_STR(out, "\"\xc3\xa9\\\"\"");
    CHECK_EQ_INT(compact("{\"a\":1,\"a\":2}", out), 0);       /* jsonb keeps duplicates */
    CHECK_EQ_STR(out, "{\"a\":1,\"a\":2}");
    const char *bads[] = {"", "{", "[1,]", "{\"a\"}", "{\"a\":}", "{1:2}", "tru", "nul",
                          "01", "1.", "-", "1e", ".5", "[1 2]", "{\"a\":1,}", "\"x",
                          "NaN", "Infinity", "+1", "[", "]"};
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        const char *q;
        int rc = floe__json_skip_value(bads[i], bads[i] + strlen(bads[i]), &q, NULL);
        if (rc != FLOE_EINPUT)
            fprintf(stderr, "skip accepted [%s]\n", bads[i]);
        CHECK_EQ_INT(rc, FLOE_EINPUT);
    }
    /* nesting: 1000 levels fine, 1001 too deep, iteratively */
    char *deep = malloc(2 * 1001 + 1);
    for (int d = 1000; d <= 1001; d++) {
        memset(deep, '[', (size_t)d);
        memset(deep + d, ']', (size_t)d);
        const char *q;
        int rc = floe__json_skip_value(deep, deep + 2 * d, &q, NULL);
        CHECK_EQ_INT(rc, d == 1000 ? FLOE_OK : FLOE_EINPUT);
    }
    free(deep);
}

/* ---- integers ------------------------------------------------------------------ */

TEST(integers_exact_and_range_checked)
{
    CHECK_EQ_INT(i64_of("a smallint", "{\"a\":-32768}"), -32768);
    CHECK_EQ_INT(i64_of("a smallint", "{\"a\":32767}"), 32767);
    bad("a smallint", "{\"a\":32768}", "column \"a\"", "smallint value 32768: out of range");
    bad("a smallint", "{\"a\":-32769}", "out of range", NULL);
    CHECK_EQ_INT(i64_of("a integer", "{\"a\":-2147483648}"), INT32_MIN);
    CHECK_EQ_INT(i64_of("a integer", "{\"a\":2147483647}"), INT32_MAX);
    bad("a integer", "{\"a\":2147483648}", "integer value 2147483648: out of range", NULL);
    CHECK_EQ_INT(i64_of("a bigint", "{\"a\":-9223372036854775808}"), INT64_MIN);
    CHECK_EQ_INT(i64_of("a bigint", "{\"a\":9223372036854775807}"), INT64_MAX);
    CHECK_EQ_INT(i64_of("a bigint", "{\"a\":123456789012345678}"), 123456789012345678LL);
    bad("a bigint", "{\"a\":9223372036854775808}", "out of range", NULL);
    bad("a bigint", "{\"a\":-9223372036854775809}", "out of range", NULL);
    bad("a bigint", "{\"a\":100000000000000000000000}", "out of range", NULL);
    CHECK_EQ_INT(i64_of("a uint2", "{\"a\":65535}"), 65535);
    bad("a uint2", "{\"a\":65536}", "uint2 value 65536: out of range", NULL);
    bad("a uint2", "{\"a\":-1}", "out of range", NULL);
    CHECK_EQ_INT(i64_of("a uint4", "{\"a\":4294967295}"), 4294967295LL);
    bad("a uint4", "{\"a\":4294967296}", "out of range", NULL);
    CHECK(i128_of("a uint8", "{\"a\":18446744073709551615}") == (floe__i128)UINT64_MAX);
    CHECK(i128_of("a uint8", "{\"a\":0}") == 0);
    bad("a uint8", "{\"a\":18446744073709551616}", "uint8 value 18446744073709551616", "range");
    bad("a uint8", "{\"a\":-1}", "out of range", NULL);
    /* exact-integer forms with a fraction or exponent */
    CHECK_EQ_INT(i64_of("a bigint", "{\"a\":1.0}"), 1);
    CHECK_EQ_INT(i64_of("a bigint", "{\"a\":1e3}"), 1000);
    CHECK_EQ_INT(i64_of("a bigint", "{\"a\":1.5E1}"), 15);
    CHECK_EQ_INT(i64_of("a bigint", "{\"a\":-2.000e+2}"), -200);
    CHECK_EQ_INT(i64_of("a bigint", "{\"a\":-0}"), 0);
    CHECK(i128_of("a uint8", "{\"a\":1.8446744073709551615e19}") == (floe__i128)UINT64_MAX);
    bad("a bigint", "{\"a\":1.5}", "bigint value 1.5: not an integer", NULL);
    bad("a bigint", "{\"a\":1e-1}", "not an integer", NULL);
    bad("a bigint", "{\"a\":1e400}", "out of range", NULL);
    bad("a bigint", "{\"a\":\"1\"}", "expected a JSON integer for bigint, found a string", NULL);
    bad("a bigint", "{\"a\":true}", "found a boolean", NULL);
    bad("a bigint", "{\"a\":01}", "leading zero", NULL);
    bad("a bigint", "{\"a\":1x}", "expected ',' or '}'", NULL);
    bad("a bigint", "{\"a\":-}", "invalid number", NULL);
    rt("a smallint, b integer, c bigint, d uint2, e uint4, f uint8",
       "{\"a\":-5,\"b\":7,\"c\":-9223372036854775808,\"d\":65535,\"e\":4294967295,"
       "\"f\":18446744073709551615}", NULL);
}

/* ---- decimals ------------------------------------------------------------------- */

TEST(decimals_exact)
{
    CHECK(i128_of("p numeric(12,2)", "{\"p\":\"1.5E+3\"}") == 150000);
    CHECK(i128_of("p numeric(5,2)", "{\"p\":1e-2}") == 1);
    CHECK(i128_of("p numeric(5,2)", "{\"p\":\"-0.00\"}") == 0);
    CHECK(i128_of("p numeric(10,0)", "{\"p\":\"1.2E+3\"}") == 1200);
    CHECK(i128_of("p numeric(10,0)", "{\"p\":1.2E+3}") == 1200);
    CHECK(i128_of("p numeric(10,3)", "{\"p\":\".5\"}") == 500);
    CHECK(i128_of("p numeric(10,3)", "{\"p\":\"+5.\"}") == 5000);
    CHECK(i128_of("p numeric(10,3)", "{\"p\":-12.3456e1}") == -123456);
    CHECK(i128_of("p numeric(4,2)", "{\"p\":0.000000000000000000000000000000000000000000001e45}")
          == 100);
    /* rounding half away from zero, like PostgreSQL */
    CHECK(i128_of("p numeric(5,2)", "{\"p\":1.005}") == 101);
    CHECK(i128_of("p numeric(5,2)", "{\"p\":-1.005}") == -101);
    CHECK(i128_of("p numeric(5,2)", "{\"p\":1.0049999}") == 100);
    CHECK(i128_of("p numeric(5,2)", "{\"p\":0.004}") == 0);
    CHECK(i128_of("p numeric(5,2)", "{\"p\":0.005}") == 1);
    CHECK(i128_of("p numeric(5,2)", "{\"p\":1e-300}") == 0);
    CHECK(i128_of("p numeric(5,0)", "{\"p\":\"0e99999999999999999999\"}") == 0);
    bad("p numeric(5,2)", "{\"p\":999.995}", "numeric(5,2) value 999.995", "too many digits");
    bad("p numeric(5,2)", "{\"p\":1000}", "too many digits", NULL);
    bad("p numeric(5,2)", "{\"p\":1e99999999999999999}", "too many digits", NULL);
    CHECK(i128_of("p numeric(5,2)", "{\"p\":999.994}") == 99999);
    /* the extremes of numeric(38,s) */
    const char *max38 = "99999999999999999999999999999999999999";
    char json[128];
    snprintf(json, sizeof json, "{\"p\":%s}", max38);
    CHECK(i128_of("p numeric(38,0)", json) == i128_from(max38));
    snprintf(json, sizeof json, "{\"p\":\"-%s\"}", max38);
    CHECK(i128_of("p numeric(38,0)", json) == -i128_from(max38));
    bad("p numeric(38,0)", "{\"p\":100000000000000000000000000000000000000}", "too many digits",
        NULL);
    snprintf(json, sizeof json, "{\"p\":\"0.%s\"}", max38);
    CHECK(i128_of("p numeric(38,38)", json) == i128_from(max38));
    snprintf(json, sizeof json, "{\"p\":-0.%s}", max38);
    CHECK(i128_of("p numeric(38,38)", json) == -i128_from(max38));
    bad("p numeric(38,38)", "{\"p\":1}", "too many digits", NULL);
    snprintf(json, sizeof json, "{\"p\":\"%.36s.99\"}", max38);
    CHECK(i128_of("p numeric(38,2)", json) == i128_from(max38));
    /* not numbers */
    bad("p numeric(5,2)", "{\"p\":\"NaN\"}", "NaN and infinities cannot be stored", NULL);
    bad("p numeric(5,2)", "{\"p\":\"-Infinity\"}", "cannot be stored in a decimal", NULL);
    bad("p numeric(5,2)", "{\"p\":\"abc\"}", "numeric(5,2) value \"abc\": not a number", NULL);
    bad("p numeric(5,2)", "{\"p\":\" 1\"}", "not a number", NULL);
    bad("p numeric(5,2)", "{\"p\":\"1e\"}", "no digits in the exponent", NULL);
    bad("p numeric(5,2)", "{\"p\":\".\"}", "not a number", NULL);
    bad("p numeric(5,2)", "{\"p\":[1]}", "expected a number or a numeric string", NULL);
    rt("p numeric(12,2), q numeric(3,3), r numeric(38,0), u uint8",
       "{\"p\":-1234.5,\"q\":\"-0.001\",\"r\":1e37,\"u\":0}",
       "{\"p\":\"-1234.50\",\"q\":\"-0.001\",\"r\":\"10000000000000000000000000000000000000\","
       "\"u\":0}");
}

/* ---- floats ----------------------------------------------------------------------- */

TEST(floats)
{
    CHECK(bits_of("f double precision", "{\"f\":\"NaN\"}") == 0x7ff8000000000000ull);
    CHECK(bits_of("f double precision", "{\"f\":\"nan\"}") == 0x7ff8000000000000ull);
    CHECK(bits_of("f real", "{\"f\":\"NaN\"}") == 0x7fc00000u);
    CHECK(bits_of("f double precision", "{\"f\":\"Infinity\"}") == 0x7ff0000000000000ull);
    CHECK(bits_of("f double precision", "{\"f\":\"-Infinity\"}") == 0xfff0000000000000ull);
    CHECK(bits_of("f real", "{\"f\":\"-inf\"}") == 0xff800000u);
    CHECK(bits_of("f double precision", "{\"f\":-0.0}") == 0x8000000000000000ull);
    CHECK(bits_of("f double precision", "{\"f\":-0}") == 0x8000000000000000ull);
    CHECK(bits_of("f real", "{\"f\":-0.0}") == 0x80000000u);
    double d = 0.1;
    uint64_t want;
    memcpy(&want, &d, 8);
    CHECK(bits_of("f float8", "{\"f\":0.1}") == want);
    /* strings of digits beyond the fast path are still correctly rounded */
    const char *hard[] = {"2.2250738585072011e-308", "1.7976931348623157e308",
                          "9007199254740993", "0.30000000000000004", "123456789012345678901234",
                          "4.9e-324", "1e23", "8.98846567431158e307", "3.14159265358979323846"};
    for (size_t i = 0; i < sizeof hard / sizeof hard[0]; i++) {
        char json[96];
        snprintf(json, sizeof json, "{\"f\":%s}", hard[i]);
        double x = strtod(hard[i], NULL);
        memcpy(&want, &x, 8);
        CHECK(bits_of("f float8", json) == want);
    }
    float fl = 3.4028235e38f;
    uint32_t fw;
    memcpy(&fw, &fl, 4);
    CHECK(bits_of("f real", "{\"f\":3.4028235e38}") == fw);
    fl = 0.1f;
    memcpy(&fw, &fl, 4);
    CHECK(bits_of("f real", "{\"f\":0.1}") == fw);
    bad("f real", "{\"f\":1e39}", "real value 1e39: out of range for real", NULL);
    bad("f double precision", "{\"f\":1e309}", "out of range for double precision", NULL);
    CHECK(bits_of("f float8", "{\"f\":1e-400}") == 0);
    bad("f float8", "{\"f\":\"1.5\"}", "only \"NaN\", \"Infinity\"", NULL);
    bad("f float8", "{\"f\":NaN}", "expected a number", NULL);
    rt("a real, b double precision, c float8, d float8, e float8, f real",
       "{\"a\":0.1,\"b\":0.1,\"c\":\"NaN\",\"d\":\"-Infinity\",\"e\":-0.0,\"f\":1e+30}", NULL);
    rt("e float8", "{\"e\":-0}", "{\"e\":-0.0}");
    rt("b double precision", "{\"b\":1E2}", "{\"b\":100}");
    rt("b double precision", "{\"b\":2.2250738585072011e-308}", "{\"b\":2.225073858507201e-308}");
}

/* ---- strings and friends ------------------------------------------------------------ */

TEST(text_and_unicode)
{
    rt("t text", "{\"t\":\"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ \\/ \\t\"}",
       "{\"t\":\"caf\xc3\xa9 \xf0\x9f\x98\x80 \\\"q\\\" \\\\ / \\t\"}");
    rt("t text", "{\"t\":\"\\u0000\\u001f\"}", NULL);
    rt("t text", "{\"t\":\"\"}", NULL);
    rt("t varchar(3), i interval", "{\"t\":\"longer than three\",\"i\":\"1 day 02:00:00\"}", NULL);
    bad("t text", "{\"t\":\"\\ud800\"}", "column \"t\"", "invalid escape");
    bad("t text", "{\"t\":\"\xff\"}", "column \"t\"", "not valid UTF-8");
    bad("t text", "{\"t\":\"a\tb\"}", "control character", NULL);
    bad("t text", "{\"t\":5}", "expected a string for text, found a number", NULL);
    bad("t text", "{\"t\":\"abc}", "unterminated string", NULL);
    /* the raw bytes of a long string go straight into the row */
    floe__buf b;
    floe__buf_init(&b, 0);
    const uint8_t *p = first_payload("t text", "{\"t\":\"0123456789abcdefghij\\n\"}", &b);
    CHECK(p && floe__get_le32(p) == 21 && memcmp(p + 4, "0123456789abcdefghij\n", 21) == 0);
    floe__buf_free(&b);
}

TEST(jsonb)
{
    rt("j jsonb", "{\"j\": { \"b\" : [1, 2.50, \"x\\/\"], \"a\": {\"n\": null} } }",
       "{\"j\":{\"b\":[1,2.50,\"x/\"],\"a\":{\"n\":null}}}");
    rt("j json", "{\"j\":\"just a string\"}", NULL);
    rt("j jsonb", "{\"j\":-1.0e+5}", NULL);
    rt("j jsonb", "{\"j\":[]}", NULL);
    rt("j jsonb", "{\"j\":false}", NULL);
    rt("j jsonb", "{\"j\":null}", NULL);                  /* SQL NULL */
    floe__buf b;
    floe__buf_init(&b, 0);
    const uint8_t *p = first_payload("j jsonb", "{\"j\" : [ 1 , {\"k\" :\"v\"} ] }", &b);
    CHECK(p && floe__get_le32(p) == 13 && memcmp(p + 4, "[1,{\"k\":\"v\"}]", 13) == 0);
    floe__buf_free(&b);
    bad("j jsonb", "{\"j\":[1,]}", "column \"j\"", "invalid JSON value");
    bad("j jsonb", "{\"j\":{\"a\" 1}}", "column \"j\"", "expected ':'");
}

TEST(uuid_values)
{
    rt("u uuid", "{\"u\":\"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11\"}",
       "{\"u\":\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\"}");
    bad("u uuid", "{\"u\":\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1\"}", "column \"u\"",
        "expected xxxxxxxx-xxxx");
    bad("u uuid", "{\"u\":\"a0eebc999c0b4ef8bb6d6bb9bd380a11\"}", "uuid value", NULL);
    bad("u uuid", "{\"u\":\"g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\"}", "uuid value", NULL);
    bad("u uuid", "{\"u\":1}", "expected a uuid string", NULL);
}

TEST(bytea_base64)
{
    rt("b bytea", "{\"b\":\"aGVsbG8=\"}", NULL);
    rt("b bytea", "{\"b\":\"\"}", NULL);
    rt("b bytea", "{\"b\":\"AAEC/w==\"}", NULL);
    rt("b bytea", "{\"b\":\"AAEC\\/w==\"}", "{\"b\":\"AAEC/w==\"}");   /* escaped '/' */
    floe__buf b;
    floe__buf_init(&b, 0);
    const uint8_t *p = first_payload("b bytea", "{\"b\":\"AAEC/w==\"}", &b);
    CHECK(p && floe__get_le32(p) == 4 && memcmp(p + 4, "\x00\x01\x02\xff", 4) == 0);
    floe__buf_free(&b);
    bad("b bytea", "{\"b\":\"aGVsbG8\"}", "column \"b\"", "base64");
    bad("b bytea", "{\"b\":\"aGV*bG8=\"}", "column \"b\"", "invalid base64 character");
    bad("b bytea", "{\"b\":[1]}", "expected a base64 string", NULL);
}

/* ---- dates and times ------------------------------------------------------------------- */

TEST(dates)
{
    CHECK_EQ_INT(i64_of("d date", "{\"d\":\"1970-01-01\"}"), 0);
    CHECK_EQ_INT(i64_of("d date", "{\"d\":\"1969-12-31\"}"), -1);
    CHECK_EQ_INT(i64_of("d date", "{\"d\":\"0001-01-01\"}"), -719162);
    CHECK_EQ_INT(i64_of("d date", "{\"d\":\"9999-12-31\"}"), 2932896);
    CHECK_EQ_INT(i64_of("d date", "{\"d\":\"2000-02-29\"}"), 11016);
    CHECK_EQ_INT(i64_of("d date", "{\"d\":\"2024-02-29\"}"), 19782);
    CHECK_EQ_INT(i64_of("d date", "{\"d\":\"1900-03-01\"}"), -25508);
    CHECK_EQ_INT(i64_of("d date", "{\"d\":\"1600-02-29\"}"), -135081);
    bad("d date", "{\"d\":\"1900-02-29\"}", "date value \"1900-02-29\"", "no such day");
    bad("d date", "{\"d\":\"2023-02-29\"}", "no such day", NULL);
    bad("d date", "{\"d\":\"2023-04-31\"}", "no such day", NULL);
    bad("d date", "{\"d\":\"2023-13-01\"}", "month out of range", NULL);
    bad("d date", "{\"d\":\"0000-01-01\"}", "years 0001..9999", NULL);
    bad("d date", "{\"d\":\"2023-1-01\"}", "expected YYYY-MM-DD", NULL);
    bad("d date", "{\"d\":\"2023-01-01 \"}", "expected YYYY-MM-DD", NULL);
    bad("d date", "{\"d\":19000}", "expected a date string", NULL);
    /* every day of 1899..2101 round-trips through the calendar code */
    for (int64_t day = -25567; day < 48000; day++) {
        int64_t y;
        unsigned m, dd;
        floe__civil_from_days(day, &y, &m, &dd);
        if (floe__days_from_civil(y, m, dd) != day) {
            CHECK(0);
            break;
        }
    }
    rt("d date", "{\"d\":\"0001-01-01\"}", NULL);
    rt("d date", "{\"d\":\"1969-07-20\"}", NULL);
}

TEST(times_and_timestamps)
{
    CHECK_EQ_INT(i64_of("t time", "{\"t\":\"00:00:00\"}"), 0);
    CHECK_EQ_INT(i64_of("t time", "{\"t\":\"23:59:59.999999\"}"), 86399999999LL);
    CHECK_EQ_INT(i64_of("t time", "{\"t\":\"12:34:56.5\"}"), 45296500000LL);
    bad("t time", "{\"t\":\"24:00:00\"}", "out of range", NULL);
    bad("t time", "{\"t\":\"12:34:56.1234567\"}", "1 to 6 fraction digits", NULL);
    bad("t time", "{\"t\":\"12:34:56.\"}", "1 to 6 fraction digits", NULL);
    bad("t time", "{\"t\":\"12:34\"}", "expected HH:MM:SS", NULL);
    bad("t time", "{\"t\":\"12:34:56Z\"}", "unexpected text", NULL);
    CHECK_EQ_INT(i64_of("t timestamp", "{\"t\":\"1970-01-01 00:00:00\"}"), 0);
    CHECK_EQ_INT(i64_of("t timestamp", "{\"t\":\"1970-01-01T00:00:01.000001\"}"), 1000001);
    CHECK_EQ_INT(i64_of("t timestamp", "{\"t\":\"1969-12-31 23:59:59.999999\"}"), -1);
    CHECK_EQ_INT(i64_of("t timestamp", "{\"t\":\"0001-01-01 00:00:00\"}"), -62135596800000000LL);
    CHECK_EQ_INT(i64_of("t timestamp", "{\"t\":\"2024-02-29 12:00:00\"}"), 1709208000000000LL);
    bad("t timestamp", "{\"t\":\"2024-02-29 12:00:00Z\"}", "timestamp value",
        "declare the column timestamptz");
    bad("t timestamp", "{\"t\":\"2024-02-29\"}", "expected YYYY-MM-DD HH:MM:SS", NULL);
    CHECK_EQ_INT(i64_of("t timestamptz", "{\"t\":\"1970-01-01 00:00:00Z\"}"), 0);
    CHECK_EQ_INT(i64_of("t timestamptz", "{\"t\":\"1970-01-01 01:00:00+01:00\"}"), 0);
    CHECK_EQ_INT(i64_of("t timestamptz", "{\"t\":\"1970-01-01T00:00:00-0130\"}"), 5400000000LL);
    CHECK_EQ_INT(i64_of("t timestamptz", "{\"t\":\"1970-01-01 05:30:00.25+05\"}"), 1800250000LL);
    CHECK_EQ_INT(i64_of("t timestamptz", "{\"t\":\"2024-03-01T00:30:00+05:30\"}"),
                 1709233200000000LL);       /* 2024-02-29 19:00:00 UTC */
    bad("t timestamptz", "{\"t\":\"2024-03-01 00:30:00\"}", "needs a zone", NULL);
    bad("t timestamptz", "{\"t\":\"2024-03-01 00:30:00+5\"}", "invalid time zone", NULL);
    bad("t timestamptz", "{\"t\":\"2024-03-01 00:30:00+19:00\"}", "offset out of range", NULL);
    bad("t timestamptz", "{\"t\":\"0001-01-01 00:00:00+01:00\"}", "timestamp out of range", NULL);
    bad("t timestamptz", "{\"t\":\"9999-12-31 23:00:00-01:00\"}", "timestamp out of range", NULL);
    rt("a time, b timestamp, c timestamptz",
       "{\"a\":\"01:02:03.000400\",\"b\":\"1901-02-03T04:05:06\","
       "\"c\":\"2024-02-29 23:30:00.5+05:30\"}",
       "{\"a\":\"01:02:03.0004\",\"b\":\"1901-02-03 04:05:06\","
       "\"c\":\"2024-02-29 18:00:00.5Z\"}");
}

/* ---- structure ------------------------------------------------------------------------- */

TEST(objects_missing_unknown_duplicate_order)
{
    const char *cols = "a int, b text, c bool not null, d date";
    rt(cols, "{\"a\":1,\"b\":\"x\",\"c\":true,\"d\":\"2020-01-01\"}", NULL);
    /* keys in any order, missing ones null: same bytes as the canonical form */
    rt(cols, "{\"d\":\"2020-01-01\",\"c\":false,\"a\":1}",
       "{\"a\":1,\"b\":null,\"c\":false,\"d\":\"2020-01-01\"}");
    rt(cols, "{\"c\":true}", "{\"a\":null,\"b\":null,\"c\":true,\"d\":null}");
    rt(cols, "{\"b\":\"x\",\"c\":true}", "{\"a\":null,\"b\":\"x\",\"c\":true,\"d\":null}");
    rt(cols, "{\"c\":true,\"b\":\"x\"}", "{\"a\":null,\"b\":\"x\",\"c\":true,\"d\":null}");
    rt(cols, " {\n \"a\" : null , \"c\" : true } ",
       "{\"a\":null,\"b\":null,\"c\":true,\"d\":null}");
    rt(cols, "{\"\\u0061\":3,\"c\":true}", "{\"a\":3,\"b\":null,\"c\":true,\"d\":null}");
    bad(cols, "{\"a\":1,\"zz\":2,\"c\":true}", "unknown column \"zz\"", NULL);
    bad(cols, "{\"a\":1,\"c\":true,\"a\":2}", "key \"a\" appears twice", NULL);
    bad(cols, "{\"c\":true,\"a\":1,\"c\":true}", "appears twice", NULL);
    bad(cols, "{\"a\":1}", "column \"c\"", "missing value for a not-null column");
    bad(cols, "{\"c\":null}", "column \"c\"", "null in a not-null field");
    bad(cols, "{}", "column \"c\"", "missing value");
    bad(cols, "[]", "a row must be a JSON object", NULL);
    bad(cols, "", "a row must be a JSON object", NULL);
    bad(cols, "{\"c\":true,}", "expected a key", NULL);
    bad(cols, "{\"c\":true", "expected ',' or '}'", NULL);
    bad(cols, "{\"c\" true}", "expected ':'", NULL);
    bad(cols, "{\"c\":}", "column \"c\"", "found invalid JSON");
    bad(cols, "{\"c\":", "unexpected end of input", NULL);
    bad(cols, "{\"c\":tru}", "expected true or false for boolean", NULL);
}

TEST(unusual_column_names)
{
    /* names the fast key path must hand to the full scanner */
    const char *cols = "\"a\\b\" int, \"q\"\"x\" int, \"\xc3\xbcn\xc3\xaf" "c\xc3\xb6" "de\" int, "
                       "ab int, \"a b\" int";
    rt(cols, "{\"a\\\\b\":1,\"q\\\"x\":2,\"\xc3\xbcn\xc3\xaf" "c\xc3\xb6" "de\":3,\"ab\":4,"
             "\"a b\":5}", NULL);
    rt(cols, "{\"a\\u005cb\":1,\"q\\u0022x\":2,\"\\u00fcn\xc3\xaf" "c\xc3\xb6" "de\":3,\"a\\u0062\":4}",
       "{\"a\\\\b\":1,\"q\\\"x\":2,\"\xc3\xbcn\xc3\xaf" "c\xc3\xb6" "de\":3,\"ab\":4,\"a b\":null}");
    bad(cols, "{\"a\\nb\":1}", "unknown column \"a\\nb\"", NULL);
    bad(cols, "{\"a\":1}", "unknown column \"a\"", NULL);
    bad(cols, "{\"abc\":1}", "unknown column", NULL);
    bad(cols, "{\"a\\\\b\":1,\"q\\\"x\":2,\"q\\u0022x\":2}", "appears twice", NULL);
}

TEST(byte_offsets_in_errors)
{
    bad("a int, b int", "{\"a\":1,\"b\":\"x\"}", "column \"b\" (byte 11)", "found a string");
}

TEST(lists_records_maps_ranges)
{
    rt("tags text[], m list<int not null>, n int[][]",
       "{\"tags\":[\"a\",null,\"c\"],\"m\":[],\"n\":[[1],[],null,[2,null]]}", NULL);
    bad("m list<int not null>", "{\"m\":[1,null]}", "column \"m[1]\"", "null in a not-null");
    bad("tags text[]", "{\"tags\":\"a\"}", "expected an array for text[], found a string", NULL);
    bad("tags text[]", "{\"tags\":[\"a\" \"b\"]}", "expected ',' or ']'", NULL);
    bad("tags text[]", "{\"tags\":[\"a\",]}", "column \"tags[1]\"", NULL);
    bad("n int[][]", "{\"n\":[[1],[2,\"x\"]]}", "column \"n[1][1]\"", "found a string");

    const char *rec = "r record(a int not null, b record(c text, d int[]))";
    rt(rec, "{\"r\":{\"b\":{\"d\":[1,2],\"c\":\"x\"},\"a\":1}}",
       "{\"r\":{\"a\":1,\"b\":{\"c\":\"x\",\"d\":[1,2]}}}");
    rt(rec, "{\"r\":{\"a\":1}}", "{\"r\":{\"a\":1,\"b\":null}}");
    rt(rec, "{\"r\":null}", "{\"r\":null}");
    bad(rec, "{\"r\":{\"b\":{}}}", "column \"r.a\"", "missing value for a not-null field");
    bad(rec, "{\"r\":{\"a\":1,\"b\":{\"e\":1}}}", "column \"r.b\"", "unknown field \"e\"");
    bad(rec, "{\"r\":{\"a\":1,\"b\":{\"d\":[1,\"x\"]}}}", "column \"r.b.d[1]\"", NULL);
    bad(rec, "{\"r\":[1]}", "expected an object", NULL);
    bad("rs record(a int)[]", "{\"rs\":[{\"a\":1},{\"a\":\"x\"}]}", "column \"rs[1].a\"", NULL);

    const char *map = "m map[text=>int], n map[text=>text not null]";
    rt(map, "{\"m\":{\"b\":2,\"a\":1,\"\":null},\"n\":{}}",
       "{\"m\":{\"\":null,\"a\":1,\"b\":2},\"n\":{}}");
    rt(map, "{\"m\":{\"a\":1,\"b\":2}}", "{\"m\":{\"a\":1,\"b\":2},\"n\":null}");
    rt(map, "{\"m\":{\"ab\":1,\"a\":2,\"b\":3,\"\\u00e9\":4,\"aa\":5}}",
       "{\"m\":{\"a\":2,\"aa\":5,\"ab\":1,\"b\":3,\"\xc3\xa9\":4},\"n\":null}");
    bad(map, "{\"m\":{\"b\":2,\"a\":1,\"b\":3}}", "column \"m\"", "map key \"b\" appears twice");
    bad(map, "{\"m\":{\"a\":1,\"a\":1}}", "appears twice", NULL);
    bad(map, "{\"n\":{\"k\":null}}", "column \"n[\"k\"]\"", "null in a not-null");
    bad(map, "{\"m\":{\"k\":\"v\"}}", "column \"m[\"k\"]\"", "expected a JSON integer");
    bad(map, "{\"m\":[]}", "expected an object for map[text=>integer]", NULL);

    /* a big map out of order sorts like a small one */
    char big[4096];
    size_t n = (size_t)sprintf(big, "{\"m\":{");
    for (int i = 199; i >= 0; i--)
        n += (size_t)sprintf(big + n, "\"k%03d\":%d%s", i, i, i ? "," : "");
    sprintf(big + n, "}}");
    floe_schema *s = schema("m map[text=>int]");
    floe__buf b;
    floe__buf_init(&b, 0);
    CHECK_EQ_INT(parse(s, big, &b, NULL), FLOE_OK);
    char *t = row_json(s, &b);
    CHECK(strncmp(t, "{\"m\":{\"k000\":0,\"k001\":1,\"k002\":2,", 32) == 0);
    CHECK(strstr(t, "\"k198\":198,\"k199\":199}}") != NULL);
    free(t);
    floe__buf_free(&b);
    floe_schema_free(s);

    rt("r int4range, d daterange, n numrange(6,2)",
       "{\"r\":{\"lower\":1,\"upper\":10,\"lower_inclusive\":true,\"upper_inclusive\":false,"
       "\"empty\":false},\"d\":{\"empty\":true},\"n\":{\"upper\":\"1.5\"}}",
       "{\"r\":{\"lower\":1,\"upper\":10,\"lower_inclusive\":true,\"upper_inclusive\":false,"
       "\"empty\":false},\"d\":{\"lower\":null,\"upper\":null,\"lower_inclusive\":null,"
       "\"upper_inclusive\":null,\"empty\":true},\"n\":{\"lower\":null,\"upper\":\"1.50\","
       "\"lower_inclusive\":null,\"upper_inclusive\":null,\"empty\":null}}");
    bad("r int4range", "{\"r\":{\"lower\":1,\"min\":2}}", "column \"r\"", "unknown field \"min\"");
    bad("r tstzrange", "{\"r\":{\"lower\":\"2020-01-01\"}}", "column \"r.lower\"", "timestamptz");
}

TEST(wide_and_deep)
{
    /* 300 columns in reverse order: exercises the scratch stack growth */
    char cols[8192], json[8192], want[8192];
    size_t nc = 0, nj = 0, nw = 0;
    nj += (size_t)sprintf(json + nj, "{");
    nw += (size_t)sprintf(want + nw, "{");
    for (int i = 0; i < 300; i++) {
        nc += (size_t)sprintf(cols + nc, "%sc%d int", i ? ", " : "", i);
        nw += (size_t)sprintf(want + nw, "%s\"c%d\":%d", i ? "," : "", i, i * 7);
    }
    for (int i = 299; i >= 0; i--)
        nj += (size_t)sprintf(json + nj, "\"c%d\":%d%s", i, i * 7, i ? "," : "");
    sprintf(json + nj, "}");
    sprintf(want + nw, "}");
    rt(cols, json, want);

    /* 63 nested lists (the deepest a schema may be), 63 nested arrays */
    char dcols[1024], djson[1024];
    size_t n = (size_t)sprintf(dcols, "a ");
    for (int i = 0; i < 63; i++)
        n += (size_t)sprintf(dcols + n, "list<");
    n += (size_t)sprintf(dcols + n, "int");
    for (int i = 0; i < 63; i++)
        dcols[n++] = '>';
    dcols[n] = '\0';
    n = (size_t)sprintf(djson, "{\"a\":");
    for (int i = 0; i < 63; i++)
        djson[n++] = '[';
    n += (size_t)sprintf(djson + n, "42");
    for (int i = 0; i < 63; i++)
        djson[n++] = ']';
    sprintf(djson + n, "}");
    rt(dcols, djson, NULL);
    /* one array level more than the schema: a clear type error, not a crash */
    djson[5] = '[';
    memmove(djson + 6, djson + 5, strlen(djson + 5) + 1);
    size_t len = strlen(djson);
    djson[len - 1] = ']';
    djson[len] = '}';
    djson[len + 1] = '\0';
    bad(dcols, djson, "expected a JSON integer", "found an array");
}

/* ---- Iceberg schemas (decl NONE) ---------------------------------------------------------- */

TEST(iceberg_schema_fields_read_by_kind)
{
    const char *text =
        "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
        "{\"id\":1,\"name\":\"i\",\"required\":true,\"type\":\"int\"},"
        "{\"id\":2,\"name\":\"l\",\"required\":false,\"type\":\"long\"},"
        "{\"id\":3,\"name\":\"d\",\"required\":false,\"type\":\"decimal(9,3)\"},"
        "{\"id\":4,\"name\":\"u\",\"required\":false,\"type\":\"uuid\"},"
        "{\"id\":5,\"name\":\"f\",\"required\":false,\"type\":\"fixed[16]\"},"
        "{\"id\":6,\"name\":\"g\",\"required\":false,\"type\":\"fixed[2]\"},"
        "{\"id\":7,\"name\":\"b\",\"required\":false,\"type\":\"binary\"},"
        "{\"id\":8,\"name\":\"m\",\"required\":false,\"type\":{\"type\":\"map\",\"key-id\":9,"
        "\"key\":\"int\",\"value-id\":10,\"value\":\"string\",\"value-required\":false}},"
        "{\"id\":11,\"name\":\"s\",\"required\":false,\"type\":{\"type\":\"map\",\"key-id\":12,"
        "\"key\":\"string\",\"value-id\":13,\"value\":\"float\",\"value-required\":true}}]}";
    floe__schema *s = NULL;
    CHECK_EQ_INT(floe__schema_from_json(text, strlen(text), &s, NULL), FLOE_OK);
    if (!s)
        return;
    floe__buf a, b;
    floe__buf_init(&a, 0);
    floe__buf_init(&b, 0);
    floe_error *e = floe_error_new();
    const char *in =
        "{\"i\":-2147483648,\"l\":9223372036854775807,\"d\":\"-1.5\","
        "\"u\":\"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11\","
        "\"f\":\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\",\"g\":\"AAE=\",\"b\":\"AA==\","
        "\"m\":[{\"value\":\"two\",\"key\":2},{\"key\":1,\"value\":null}],\"s\":{\"x\":1.5}}";
    int rc = parse(s, in, &a, e);
    if (rc)
        fprintf(stderr, "%s\n", floe_error_message(e));
    CHECK_EQ_INT(rc, FLOE_OK);
    char *t = row_json(s, &a);
    CHECK_EQ_STR(t, "{\"i\":-2147483648,\"l\":9223372036854775807,\"d\":\"-1.500\","
                    "\"u\":\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\","
                    "\"f\":\"oO68mZwLTvi7bWu5vTgKEQ==\",\"g\":\"AAE=\",\"b\":\"AA==\","
                    "\"m\":[{\"key\":1,\"value\":null},{\"key\":2,\"value\":\"two\"}],"
                    "\"s\":{\"x\":1.5}}");
    CHECK_EQ_INT(parse(s, t, &b, NULL), FLOE_OK);
    CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    /* uuid kind stores 16 bytes */
    const uint8_t *p = a.data + 1 + 4 + 1 + 8 + 1 + 16;
    CHECK(p[0] == FLOE_SLOT_PRESENT && p[1] == 0xa0 && p[16] == 0x11);
    free(t);
    floe__buf_reset(&a);
    const char *q;
    const char *in2 = "{\"i\":2147483648}";
    CHECK_EQ_INT(floe__json_parse_row(s, in2, in2 + strlen(in2), &q, &a, e), FLOE_EINPUT);
    CHECK(strstr(floe_error_message(e), "int value 2147483648: out of range") != NULL);
    const char *in3 = "{\"i\":1,\"g\":\"AAEC\"}";
    CHECK_EQ_INT(floe__json_parse_row(s, in3, in3 + strlen(in3), &q, &a, e), FLOE_EINPUT);
    CHECK(strstr(floe_error_message(e), "wrong number of bytes") != NULL);
    const char *in4 = "{\"i\":1,\"m\":[{\"value\":\"x\"}]}";
    CHECK_EQ_INT(floe__json_parse_row(s, in4, in4 + strlen(in4), &q, &a, e), FLOE_EINPUT);
    CHECK(strstr(floe_error_message(e), "column \"m[0].key\"") != NULL);
    const char *in5 = "{\"i\":1,\"m\":[{\"key\":1},{\"key\":1}]}";
    CHECK_EQ_INT(floe__json_parse_row(s, in5, in5 + strlen(in5), &q, &a, e), FLOE_EINPUT);
    CHECK(strstr(floe_error_message(e), "a map key appears twice") != NULL);
    const char *in6 = "{\"i\":1,\"s\":{\"x\":null}}";
    CHECK_EQ_INT(floe__json_parse_row(s, in6, in6 + strlen(in6), &q, &a, e), FLOE_EINPUT);
    CHECK(strstr(floe_error_message(e), "column \"s[\"x\"]\"") != NULL);
    floe_error_free(e);
    floe__buf_free(&a);
    floe__buf_free(&b);
    floe_schema_free(s);
}

/* ---- the row format directly ----------------------------------------------------------- */

TEST(row_bytes_layout)
{
    floe_schema *s = schema("a int not null, b text, c bigint[], d bool");
    floe__buf b;
    floe__buf_init(&b, 0);
    CHECK_EQ_INT(parse(s, "{\"a\":258,\"b\":\"hi\",\"c\":[null,1]}", &b, NULL), FLOE_OK);
    static const uint8_t want[] = {1, 2, 1, 0, 0,                   /* a = 258 */
                                   1, 2, 0, 0, 0, 'h', 'i',         /* b */
                                   1, 2, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, /* c */
                                   0};                              /* d null */
    CHECK_EQ_INT(b.len, sizeof want);
    CHECK(b.len == sizeof want && memcmp(b.data, want, sizeof want) == 0);
    floe__buf_free(&b);
    floe_schema_free(s);
}

TEST(parse_row_appends_and_reports_end)
{
    floe_schema *s = schema("a int");
    floe__buf b;
    floe__buf_init(&b, 0);
    floe__buf_append(&b, "HDR", 3, NULL);
    const char *line = "{\"time\":1,\"row\":{\"a\":5} , \"diff\":1}";
    const char *row = strstr(line, "{\"a\"");
    const char *q = NULL;
    CHECK_EQ_INT(floe__json_parse_row(s, row, line + strlen(line), &q, &b, NULL), FLOE_OK);
    CHECK(q == row + 7);
    CHECK(b.len == 3 + 5 && memcmp(b.data, "HDR\x01\x05\0\0\0", 8) == 0);
    /* a buffer limit is reported, and the buffer is left as it was */
    floe__buf small;
    floe__buf_init(&small, 4);
    floe_error *e = floe_error_new();
    CHECK_EQ_INT(floe__json_parse_row(s, row, line + strlen(line), &q, &small, e), FLOE_ELIMIT);
    CHECK_EQ_INT(small.len, 0);
    floe_error_free(e);
    floe__buf_free(&small);
    floe__buf_free(&b);
    floe_schema_free(s);
}

TEST(validate_rejects_bad_rows)
{
    floe_schema *s = schema("a int not null, b text, f double precision, l smallint[], "
                            "m map[text=>int], u uuid");
    floe__buf b;
    floe__buf_init(&b, 0);
    CHECK_EQ_INT(parse(s, "{\"a\":1,\"b\":\"xy\",\"f\":1.5,\"l\":[1],\"m\":{\"k\":1},"
                          "\"u\":\"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\"}", &b, NULL), FLOE_OK);
    floe_error *e = floe_error_new();
    CHECK_EQ_INT(floe__datum_validate(s, b.data, b.len, e), FLOE_OK);
    /* layout: a@0 (5 bytes), b@5 (7), f@12 (9), l@21 (10; element value at 27), m@31 (16),
     * u@47 (41) */
    uint8_t *d = malloc(b.len + 1);
    struct {
        size_t at;
        uint8_t v;
        const char *frag;
    } cases[] = {
        {0, 0, "null in a not-null"},      {0, 7, "bad slot tag"},
        {10, 0xff, "not valid UTF-8"},     {19, 0xf8, NULL},
        {29, 0x01, "out of range"},        {b.len - 36, 'A', "canonical lower-case"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(d, b.data, b.len);
        d[cases[i].at] = cases[i].v;
        if (cases[i].frag == NULL) {   /* a non-canonical NaN: 0x7ff8..01 */
            uint64_t nan = 0x7ff8000000000001ull;
            memcpy(d + 13, &nan, 8);
            cases[i].frag = "NaN is not canonical";
        }
        int rc = floe__datum_validate(s, d, b.len, e);
        CHECK_EQ_INT(rc, FLOE_EINPUT);
        if (!strstr(floe_error_message(e), cases[i].frag))
            fprintf(stderr, "case %zu: %s\n", i, floe_error_message(e));
        CHECK(strstr(floe_error_message(e), cases[i].frag) != NULL);
    }
    CHECK_EQ_INT(floe__datum_validate(s, b.data, b.len - 1, e), FLOE_EINPUT);
    memcpy(d, b.data, b.len);
    d[b.len] = 0;
    CHECK_EQ_INT(floe__datum_validate(s, d, b.len + 1, e), FLOE_EINPUT);
    CHECK(strstr(floe_error_message(e), "bytes after the last column") != NULL);
    /* skip never reads past the end of a truncated row */
    for (size_t n = 0; n < b.len; n++) {
        const uint8_t *p = b.data;
        for (uint32_t i = 0; i < s->root.n_children && p; i++)
            p = floe__datum_skip(&s->root.children[i], p, b.data + n);
        CHECK(p == NULL || p <= b.data + n);
        CHECK_EQ_INT(floe__datum_validate(s, b.data, n, NULL), FLOE_EINPUT);
    }
    free(d);
    floe_error_free(e);
    floe__buf_free(&b);
    floe_schema_free(s);
}

/* ---- the public floe_row API -------------------------------------------------------------- */

TEST(public_row_api)
{
    floe_schema *s = schema("id bigint not null, name text, tags text[]");
    floe_row *r = NULL;
    floe_error *e = floe_error_new();
    CHECK_EQ_INT(floe_row_new(s, &r, e), FLOE_OK);
    char *t = NULL;
    CHECK_EQ_INT(floe_row_to_json(r, &t, e), FLOE_EINVAL);     /* empty row */
    const char *j = "{\"id\":7,\"tags\":[\"x\"]}\n";
    CHECK_EQ_INT(floe_row_set_json(r, j, strlen(j), e), FLOE_OK);
    CHECK_EQ_INT(floe_row_to_json(r, &t, e), FLOE_OK);
    CHECK_EQ_STR(t, "{\"id\":7,\"name\":null,\"tags\":[\"x\"]}");
    floe_free(t);
    j = "{\"id\":7} x";
    CHECK_EQ_INT(floe_row_set_json(r, j, strlen(j), e), FLOE_EINPUT);
    CHECK(strstr(floe_error_message(e), "unexpected text after the object") != NULL);
    CHECK_EQ_INT(r->data.len, 0);
    j = "{\"id\":\"seven\"}";
    CHECK_EQ_INT(floe_row_set_json(r, j, strlen(j), e), FLOE_EINPUT);
    CHECK(strstr(floe_error_message(e), "column \"id\"") != NULL);
    CHECK_EQ_INT(floe_row_set_json(r, NULL, 0, e), FLOE_EINPUT);
    CHECK_EQ_INT(floe_row_set_json(NULL, "{}", 2, e), FLOE_EINVAL);
    j = "{\"id\":1}";
    CHECK_EQ_INT(floe_row_set_json(r, j, 5, e), FLOE_EINPUT);   /* length bounds the text */
    CHECK_EQ_INT(floe_row_set_json(r, j, strlen(j), e), FLOE_OK);
    floe_row_clear(r);
    CHECK_EQ_INT(r->data.len, 0);
    floe_row_free(r);
    floe_row_free(NULL);
    floe_error_free(e);
    floe_schema_free(s);
}

int main(void)
{
    RUN(scanner_integers);
    RUN(scanner_strings);
    RUN(scanner_values);
    RUN(integers_exact_and_range_checked);
    RUN(decimals_exact);
    RUN(floats);
    RUN(text_and_unicode);
    RUN(jsonb);
    RUN(uuid_values);
    RUN(bytea_base64);
    RUN(dates);
    RUN(times_and_timestamps);
    RUN(objects_missing_unknown_duplicate_order);
    RUN(unusual_column_names);
    RUN(byte_offsets_in_errors);
    RUN(lists_records_maps_ranges);
    RUN(wide_and_deep);
    RUN(iceberg_schema_fields_read_by_kind);
    RUN(row_bytes_layout);
    RUN(parse_row_appends_and_reports_end);
    RUN(validate_rejects_bad_rows);
    RUN(public_row_api);
    return UNIT_DONE();
}
