/*
 * test_parquet_stats.c - statistics order edge cases (NaN, -0.0, unsigned
 * bytes, signed decimals), the size limit, Iceberg bounds and truncation.
 */
#include <math.h>

#include "test_parquet_util.h"
#include "unit.h"

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static uint64_t f64_bits(double f) { uint64_t u; memcpy(&u, &f, 8); return u; }

/* Parquet min/max of a stats object as raw bytes. */
static bool minmax(const floe__pq_stats *s, floe__pq_order ord, int ptype, uint8_t mn[16],
                   uint8_t mx[16], size_t *mn_len, size_t *mx_len)
{
    uint8_t a[8], b[8];
    const uint8_t *pa, *pb;
    if (!floe__pq_stats_minmax(s, ord, ptype, a, b, &pa, mn_len, &pb, mx_len))
        return false;
    memcpy(mn, pa, *mn_len < 16 ? *mn_len : 16);
    memcpy(mx, pb, *mx_len < 16 ? *mx_len : 16);
    return true;
}

TEST(float_nan_and_zero)
{
    floe__pq_stats s;
    floe__pq_stats_init(&s);
    float v[] = {NAN, -0.0f, 1.5f, NAN};
    CHECK_EQ_INT(floe__pq_stats_fixed(&s, PQ_ORD_FLOAT, (uint8_t *)v, 4, 4, NULL), FLOE_OK);
    CHECK_EQ_INT(s.nans, 2);
    uint8_t mn[16], mx[16];
    size_t ml, xl;
    CHECK(minmax(&s, PQ_ORD_FLOAT, PQ_T_FLOAT, mn, mx, &ml, &xl));
    CHECK_EQ_INT(floe__get_le32(mn), f32_bits(-0.0f));
    CHECK_EQ_INT(floe__get_le32(mx), f32_bits(1.5f));

    /* only +0.0: Parquet writes min -0.0, max +0.0; Iceberg keeps +0.0 */
    floe__pq_stats_reset(&s);
    float z[] = {0.0f, 0.0f};
    floe__pq_stats_fixed(&s, PQ_ORD_FLOAT, (uint8_t *)z, 2, 4, NULL);
    CHECK(minmax(&s, PQ_ORD_FLOAT, PQ_T_FLOAT, mn, mx, &ml, &xl));
    CHECK_EQ_INT(floe__get_le32(mn), f32_bits(-0.0f));
    CHECK_EQ_INT(floe__get_le32(mx), f32_bits(0.0f));
    floe__col_metrics m;
    memset(&m, 0, sizeof m);
    CHECK_EQ_INT(floe__pq_iceberg_bounds(&s, PQ_ORD_FLOAT, PQ_T_FLOAT, FLOE_K_FLOAT, &m, NULL),
                 FLOE_OK);
    CHECK(m.has_lower && m.has_upper);
    CHECK_EQ_INT(floe__get_le32(m.lower.data), f32_bits(0.0f));
    CHECK_EQ_INT(floe__get_le32(m.upper.data), f32_bits(0.0f));

    /* -0.0 and +0.0: Iceberg lower -0.0 (totalOrder), upper +0.0 */
    double d[] = {0.0, -0.0, -0.0};
    floe__pq_stats_reset(&s);
    floe__pq_stats_fixed(&s, PQ_ORD_DOUBLE, (uint8_t *)d, 3, 8, NULL);
    CHECK_EQ_INT(floe__pq_iceberg_bounds(&s, PQ_ORD_DOUBLE, PQ_T_DOUBLE, FLOE_K_DOUBLE, &m, NULL),
                 FLOE_OK);
    CHECK_EQ_INT(floe__get_le64(m.lower.data), f64_bits(-0.0));
    CHECK_EQ_INT(floe__get_le64(m.upper.data), f64_bits(0.0));

    /* infinities are ordinary values */
    double inf[] = {INFINITY, -INFINITY, NAN, 3.0};
    floe__pq_stats_reset(&s);
    floe__pq_stats_fixed(&s, PQ_ORD_DOUBLE, (uint8_t *)inf, 4, 8, NULL);
    CHECK(minmax(&s, PQ_ORD_DOUBLE, PQ_T_DOUBLE, mn, mx, &ml, &xl));
    CHECK_EQ_INT(floe__get_le64(mn), f64_bits(-INFINITY));
    CHECK_EQ_INT(floe__get_le64(mx), f64_bits(INFINITY));
    CHECK_EQ_INT(s.nans, 1);

    /* all NaN: no min/max anywhere */
    double nan2[] = {NAN, NAN};
    floe__pq_stats_reset(&s);
    floe__pq_stats_fixed(&s, PQ_ORD_DOUBLE, (uint8_t *)nan2, 2, 8, NULL);
    CHECK(!minmax(&s, PQ_ORD_DOUBLE, PQ_T_DOUBLE, mn, mx, &ml, &xl));
    CHECK_EQ_INT(floe__pq_iceberg_bounds(&s, PQ_ORD_DOUBLE, PQ_T_DOUBLE, FLOE_K_DOUBLE, &m, NULL),
                 FLOE_OK);
    CHECK(!m.has_lower && !m.has_upper);
    CHECK_EQ_INT(s.nans, 2);
    floe__buf_free(&m.lower);
    floe__buf_free(&m.upper);
    floe__pq_stats_free(&s);
}

TEST(int_extremes_and_merge)
{
    floe__pq_stats a, b;
    floe__pq_stats_init(&a);
    floe__pq_stats_init(&b);
    int64_t v1[] = {0, INT64_MAX, -5};
    int64_t v2[] = {INT64_MIN, 7};
    floe__pq_stats_fixed(&a, PQ_ORD_INT64, (uint8_t *)v1, 3, 8, NULL);
    floe__pq_stats_fixed(&b, PQ_ORD_INT64, (uint8_t *)v2, 2, 8, NULL);
    b.nulls = 3;
    CHECK_EQ_INT(floe__pq_stats_merge(&a, &b, PQ_ORD_INT64, NULL), FLOE_OK);
    CHECK(a.imin == INT64_MIN);
    CHECK(a.imax == INT64_MAX);
    CHECK_EQ_INT(a.nulls, 3);
    int32_t i32[] = {INT32_MIN, INT32_MAX, 0};
    floe__pq_stats_reset(&b);
    floe__pq_stats_fixed(&b, PQ_ORD_INT32, (uint8_t *)i32, 3, 4, NULL);
    uint8_t mn[16], mx[16];
    size_t ml, xl;
    CHECK(minmax(&b, PQ_ORD_INT32, PQ_T_INT32, mn, mx, &ml, &xl));
    CHECK_EQ_INT(ml, 4);
    CHECK_EQ_INT((int32_t)floe__get_le32(mn), INT32_MIN);
    CHECK_EQ_INT((int32_t)floe__get_le32(mx), INT32_MAX);
    /* booleans: false < true */
    uint8_t bools[] = {1, 1};
    floe__pq_stats_reset(&b);
    floe__pq_stats_fixed(&b, PQ_ORD_BOOL, bools, 2, 1, NULL);
    CHECK(minmax(&b, PQ_ORD_BOOL, PQ_T_BOOLEAN, mn, mx, &ml, &xl));
    CHECK_EQ_INT(mn[0], 1);
    CHECK_EQ_INT(mx[0], 1);
    bools[1] = 0;
    floe__pq_stats_fixed(&b, PQ_ORD_BOOL, bools, 2, 1, NULL);
    CHECK(minmax(&b, PQ_ORD_BOOL, PQ_T_BOOLEAN, mn, mx, &ml, &xl));
    CHECK_EQ_INT(mn[0], 0);
    CHECK_EQ_INT(mx[0], 1);
    floe__pq_stats_free(&a);
    floe__pq_stats_free(&b);
}

TEST(bytes_unsigned_and_decimal_signed)
{
    floe__pq_stats s;
    floe__pq_stats_init(&s);
    /* unsigned: "\xff" sorts after "b", "" before everything */
    const char *words[] = {"b", "\xff", "ab", "a", ""};
    for (int i = 0; i < 5; i++)
        floe__pq_stats_one(&s, PQ_ORD_UNSIGNED, (const uint8_t *)words[i], strlen(words[i]), NULL);
    CHECK_EQ_INT(s.bmin.len, 0);
    CHECK_EQ_INT(s.bmax.len, 1);
    CHECK_EQ_INT(s.bmax.data[0], 0xff);

    /* signed big-endian: -300 < -1 < 1 < 256 */
    floe__pq_stats_reset(&s);
    const uint8_t vals[][2] = {{0xff, 0xff}, {0x00, 0x01}, {0xfe, 0xd4}, {0x01, 0x00}};
    floe__pq_stats_fixed(&s, PQ_ORD_SIGNED_BE, &vals[0][0], 4, 2, NULL);
    CHECK_EQ_INT(s.bmin.data[0], 0xfe);
    CHECK_EQ_INT(s.bmin.data[1], 0xd4);
    CHECK_EQ_INT(s.bmax.data[0], 0x01);
    CHECK_EQ_INT(s.bmax.data[1], 0x00);
    /* Iceberg bound: minimal two's complement */
    floe__col_metrics m;
    memset(&m, 0, sizeof m);
    CHECK_EQ_INT(floe__pq_iceberg_bounds(&s, PQ_ORD_SIGNED_BE, PQ_T_FLBA, FLOE_K_DECIMAL, &m, NULL),
                 FLOE_OK);
    CHECK_EQ_INT(m.lower.len, 2);
    CHECK_EQ_INT(m.upper.len, 2);

    /* decimals in INT64: 0 -> 00, -1 -> ff, 128 -> 00 80, -129 -> ff 7f */
    const struct { int64_t v; size_t n; uint8_t b[2]; } cases[] = {
        {0, 1, {0x00}}, {-1, 1, {0xff}}, {128, 2, {0x00, 0x80}}, {-129, 2, {0xff, 0x7f}},
        {127, 1, {0x7f}}, {-128, 1, {0x80}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        floe__pq_stats_reset(&s);
        floe__pq_stats_fixed(&s, PQ_ORD_INT64, (const uint8_t *)&cases[i].v, 1, 8, NULL);
        CHECK_EQ_INT(floe__pq_iceberg_bounds(&s, PQ_ORD_INT64, PQ_T_INT64, FLOE_K_DECIMAL, &m,
                                             NULL), FLOE_OK);
        CHECK_EQ_INT(m.lower.len, cases[i].n);
        CHECK_MEM(m.lower.data, cases[i].b, cases[i].n);
    }
    /* strings longer than the footer limit: no Parquet min/max */
    floe__pq_stats_reset(&s);
    uint8_t *big = calloc(1, PQ_STATS_MAX_VALUE + 1);
    floe__pq_stats_one(&s, PQ_ORD_UNSIGNED, (const uint8_t *)"a", 1, NULL);
    uint8_t mn[16], mx[16];
    size_t ml, xl;
    CHECK(minmax(&s, PQ_ORD_UNSIGNED, PQ_T_BYTE_ARRAY, mn, mx, &ml, &xl));
    big[0] = 'z';
    floe__pq_stats_one(&s, PQ_ORD_UNSIGNED, big, PQ_STATS_MAX_VALUE + 1, NULL);
    CHECK(!minmax(&s, PQ_ORD_UNSIGNED, PQ_T_BYTE_ARRAY, mn, mx, &ml, &xl));
    /* ... but the Iceberg bounds are still there, truncated */
    CHECK_EQ_INT(floe__pq_iceberg_bounds(&s, PQ_ORD_UNSIGNED, PQ_T_BYTE_ARRAY, FLOE_K_BINARY, &m,
                                         NULL), FLOE_OK);
    CHECK(m.has_lower && m.has_upper);
    CHECK_EQ_INT(m.lower.len, 1);
    /* "z" + 4096 zero bytes: 16 bytes kept, the last one incremented */
    CHECK_EQ_INT(m.upper.len, 16);
    CHECK_EQ_INT(m.upper.data[0], 'z');
    CHECK_EQ_INT(m.upper.data[14], 0);
    CHECK_EQ_INT(m.upper.data[15], 1);
    free(big);
    floe__buf_free(&m.lower);
    floe__buf_free(&m.upper);
    floe__pq_stats_free(&s);
}

static bool upper(bool utf8, const char *in, size_t n, floe__buf *out)
{
    bool ok = false;
    CHECK_EQ_INT(floe__pq_truncate_upper(utf8, (const uint8_t *)in, n, 16, out, &ok, NULL),
                 FLOE_OK);
    return ok;
}

static void lower(bool utf8, const char *in, size_t n, floe__buf *out)
{
    CHECK_EQ_INT(floe__pq_truncate_lower(utf8, (const uint8_t *)in, n, 16, out, NULL), FLOE_OK);
}

#define OUT_IS(b, s) (b.len == strlen(s) && memcmp(b.data, s, b.len) == 0)

TEST(truncation)
{
    floe__buf o;
    floe__buf_init(&o, 0);
    const char *abc = "abcdefghijklmnopqrstuvwxyz";
    lower(true, abc, 26, &o);
    CHECK(OUT_IS(o, "abcdefghijklmnop"));
    CHECK(upper(true, abc, 26, &o));
    CHECK(OUT_IS(o, "abcdefghijklmnoq"));
    /* short values are kept whole */
    CHECK(upper(true, "abc", 3, &o));
    CHECK(OUT_IS(o, "abc"));
    lower(true, "", 0, &o);
    CHECK_EQ_INT(o.len, 0);
    /* 17 x U+00E9: 16 code points (32 bytes); upper ends in U+00EA */
    char e17[64] = "";
    for (int i = 0; i < 17; i++)
        strcat(e17, "\xc3\xa9");
    lower(true, e17, 34, &o);
    CHECK_EQ_INT(o.len, 32);
    CHECK(upper(true, e17, 34, &o));
    CHECK_EQ_INT(o.len, 32);
    CHECK_MEM(o.data, e17, 30);
    CHECK_EQ_INT(o.data[30], 0xc3);
    CHECK_EQ_INT(o.data[31], 0xaa);
    /* "a" + 16 x U+10FFFF: the max code points cannot grow, "a" becomes "b" */
    char m[80] = "a";
    for (int i = 0; i < 16; i++)
        strcat(m, "\xf4\x8f\xbf\xbf");
    CHECK(upper(true, m, strlen(m), &o));
    CHECK(OUT_IS(o, "b"));
    /* 17 x U+10FFFF: no upper bound */
    char mm[80] = "";
    for (int i = 0; i < 17; i++)
        strcat(mm, "\xf4\x8f\xbf\xbf");
    CHECK(!upper(true, mm, strlen(mm), &o));
    /* U+D7FF at the end of the prefix skips the surrogates to U+E000 */
    char sur[80] = "";
    for (int i = 0; i < 15; i++)
        strcat(sur, "x");
    strcat(sur, "\xed\x9f\xbfzz");
    CHECK(upper(true, sur, strlen(sur), &o));
    CHECK_EQ_INT(o.len, 15 + 3);
    CHECK_MEM(o.data + 15, "\xee\x80\x80", 3);
    /* 4-byte code points are not split */
    char emoji[80] = "";
    for (int i = 0; i < 17; i++)
        strcat(emoji, "\xf0\x9f\x98\x80");
    lower(true, emoji, strlen(emoji), &o);
    CHECK_EQ_INT(o.len, 64);
    CHECK(upper(true, emoji, strlen(emoji), &o));
    CHECK_EQ_INT(o.len, 64);
    CHECK_MEM(o.data + 60, "\xf0\x9f\x98\x81", 4);

    /* binary: bytes, with carry over 0xff */
    char bin[20];
    memset(bin, 0xff, sizeof bin);
    bin[0] = 1;
    lower(false, bin, 20, &o);
    CHECK_EQ_INT(o.len, 16);
    CHECK(upper(false, bin, 20, &o));
    CHECK_EQ_INT(o.len, 1);
    CHECK_EQ_INT(o.data[0], 2);
    memset(bin, 0xff, sizeof bin);
    CHECK(!upper(false, bin, 20, &o));
    CHECK(upper(false, bin, 16, &o));     /* not truncated: kept as is */
    CHECK_EQ_INT(o.len, 16);
    floe__buf_free(&o);
}

TEST(string_bounds_via_metrics)
{
    floe__pq_stats s;
    floe__pq_stats_init(&s);
    const char *a = "zebra crossing at the corner", *b = "aardvark";
    floe__pq_stats_one(&s, PQ_ORD_UNSIGNED, (const uint8_t *)a, strlen(a), NULL);
    floe__pq_stats_one(&s, PQ_ORD_UNSIGNED, (const uint8_t *)b, strlen(b), NULL);
    floe__col_metrics m;
    memset(&m, 0, sizeof m);
    CHECK_EQ_INT(floe__pq_iceberg_bounds(&s, PQ_ORD_UNSIGNED, PQ_T_BYTE_ARRAY, FLOE_K_STRING, &m,
                                         NULL), FLOE_OK);
    CHECK(OUT_IS(m.lower, "aardvark"));
    /* 16 code points "zebra crossing a", the last one incremented */
    CHECK(OUT_IS(m.upper, "zebra crossing b"));
    floe__buf_free(&m.lower);
    floe__buf_free(&m.upper);
    floe__pq_stats_free(&s);
}

int main(void)
{
    RUN(float_nan_and_zero);
    RUN(int_extremes_and_merge);
    RUN(bytes_unsigned_and_decimal_signed);
    RUN(truncation);
    RUN(string_bounds_via_metrics);
    return UNIT_DONE();
}
