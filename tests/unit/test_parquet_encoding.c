/*
 * test_parquet_encoding.c - the Parquet encoder's building blocks against
 * hand-computed bytes: Thrift compact protocol, RLE / bit-packed hybrid,
 * boolean packing, dictionaries.
 */
#include <snappy-c.h>
#include <zstd.h>

#include "test_parquet_util.h"
#include "unit.h"

/* ---- thrift ------------------------------------------------------------------------ */

TEST(thrift_known_bytes)
{
    floe__buf b;
    floe__buf_init(&b, 0);
    floe__tc t;
    floe__tc_init(&t, &b);
    floe__tc_elem_struct_begin(&t);
    floe__tc_i32(&t, 1, 1);              /* 0x15 0x02 */
    floe__tc_i64(&t, 3, -1);             /* 0x26 0x01 */
    floe__tc_i32(&t, 20, 20);            /* long form: 0x05 0x28, value 0x28 */
    floe__tc_bool(&t, 21, true);         /* 0x11 */
    floe__tc_bool(&t, 22, false);        /* 0x12 */
    floe__tc_string(&t, 23, "ab");       /* 0x18 0x02 'a' 'b' */
    floe__tc_list_begin(&t, 24, TC_I32, 3);  /* 0x19 0x35 */
    floe__tc_elem_i32(&t, 1);
    floe__tc_elem_i32(&t, 2);
    floe__tc_elem_i32(&t, -3);           /* 02 04 05 */
    floe__tc_struct_begin(&t, 25);       /* 0x1c */
    floe__tc_i32(&t, 1, 5);              /* 0x15 0x0a */
    floe__tc_struct_end(&t);             /* 0x00 */
    floe__tc_i16(&t, 26, 300);           /* 0x14 0xd8 0x04 */
    floe__tc_i64(&t, 27, 1LL << 40);     /* 0x16 + varint(2^41) */
    floe__tc_struct_end(&t);             /* 0x00 */
    CHECK_EQ_INT(floe__tc_finish(&t, NULL), FLOE_OK);
    static const uint8_t want[] = {
        0x15, 0x02, 0x26, 0x01, 0x05, 0x28, 0x28, 0x11, 0x12, 0x18, 0x02, 'a', 'b',
        0x19, 0x35, 0x02, 0x04, 0x05, 0x1c, 0x15, 0x0a, 0x00, 0x14, 0xd8, 0x04,
        0x16, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0x00,
    };
    CHECK_EQ_INT(b.len, sizeof want);
    CHECK_MEM(b.data, want, sizeof want < b.len ? sizeof want : b.len);

    tnode n;
    CHECK_EQ_INT(tn_parse(b.data, b.len, &n), b.len);
    CHECK_EQ_INT(tn_int(&n, 3, 0), -1);
    CHECK_EQ_INT(tn_int(&n, 20, 0), 20);
    CHECK_EQ_INT(tn_int(&n, 21, 9), 1);
    CHECK_EQ_INT(tn_int(&n, 22, 9), 0);
    CHECK_EQ_INT(tn_get(&n, 24)->n, 3);
    CHECK_EQ_INT(tn_get(&n, 24)->kids[2].i, -3);
    CHECK_EQ_INT(tn_int(tn_get(&n, 25), 1, 0), 5);
    CHECK_EQ_INT(tn_int(&n, 26, 0), 300);
    CHECK_EQ_INT(tn_int(&n, 27, 0), 1LL << 40);
    tn_free(&n);
    floe__buf_free(&b);
}

TEST(thrift_long_list_and_errors)
{
    floe__buf b;
    floe__buf_init(&b, 0);
    floe__tc t;
    floe__tc_init(&t, &b);
    floe__tc_list_begin(&t, 1, TC_BINARY, 20);   /* 0x19 0xf8 0x14 */
    for (int i = 0; i < 20; i++)
        floe__tc_elem_string(&t, "x");
    CHECK_EQ_INT(floe__tc_finish(&t, NULL), FLOE_OK);
    CHECK_EQ_INT(b.data[0], 0x19);
    CHECK_EQ_INT(b.data[1], 0xf8);
    CHECK_EQ_INT(b.data[2], 0x14);
    CHECK_EQ_INT(b.len, 3 + 20 * 2);

    /* an unbalanced end is reported, not ignored */
    floe__tc_struct_end(&t);
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(floe__tc_finish(&t, err), FLOE_EINTERNAL);
    floe_error_free(err);

    /* a buffer limit surfaces as the first failure */
    floe__buf small;
    floe__buf_init(&small, 8);
    floe__tc_init(&t, &small);
    floe__tc_string(&t, 1, "this is longer than eight bytes");
    floe__tc_i32(&t, 2, 1);
    CHECK_EQ_INT(floe__tc_finish(&t, NULL), FLOE_ELIMIT);
    floe__buf_free(&small);
    floe__buf_free(&b);
}

/* ---- RLE ------------------------------------------------------------------------------- */

static size_t enc8(const uint8_t *v, size_t n, int bw, uint8_t *out)
{
    return floe__rle_encode_u8(v, n, bw, out);
}

TEST(rle_hand_computed)
{
    uint8_t out[256];
    uint8_t ones[100];
    memset(ones, 1, sizeof ones);
    /* one RLE run: varint(100 << 1) = c8 01, value 01 */
    size_t n = enc8(ones, 100, 1, out);
    static const uint8_t w1[] = {0xc8, 0x01, 0x01};
    CHECK_EQ_INT(n, 3);
    CHECK_MEM(out, w1, 3);

    /* no run of 8: one bit-packed run of 2 groups, last padded */
    static const uint8_t alt[10] = {0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
    n = enc8(alt, 10, 1, out);
    static const uint8_t w2[] = {0x05, 0xaa, 0x02};
    CHECK_EQ_INT(n, 3);
    CHECK_MEM(out, w2, 3);

    /* a run of 8 fives then literals 1,2,3 at width 3 */
    static const uint8_t mix[11] = {5, 5, 5, 5, 5, 5, 5, 5, 1, 2, 3};
    n = enc8(mix, 11, 3, out);
    static const uint8_t w3[] = {0x10, 0x05, 0x03, 0xd1, 0x00, 0x00};
    CHECK_EQ_INT(n, 6);
    CHECK_MEM(out, w3, 6);

    /* literals 1,2,3 topped up with five 7s from the run, then RLE 8 x 7 */
    static const uint8_t fill[16] = {1, 2, 3, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7};
    n = enc8(fill, 16, 3, out);
    static const uint8_t w4[] = {0x03, 0xd1, 0xfe, 0xff, 0x10, 0x07};
    CHECK_EQ_INT(n, 6);
    CHECK_MEM(out, w4, 6);

    /* a run too short after topping up stays literal: 1,2,3 + 12 x 7 */
    n = enc8(fill, 15, 3, out);
    CHECK_EQ_INT(out[0], 0x05);   /* 2 groups */
    CHECK_EQ_INT(n, 1 + 2 * 3);

    /* 32-bit indices, width 10: RLE value takes 2 bytes */
    uint32_t idx[9];
    for (int i = 0; i < 9; i++)
        idx[i] = 1000;
    n = floe__rle_encode_u32(idx, 9, 10, out);
    static const uint8_t w5[] = {0x12, 0xe8, 0x03};
    CHECK_EQ_INT(n, 3);
    CHECK_MEM(out, w5, 3);

    /* empty input encodes to nothing */
    CHECK_EQ_INT(enc8(ones, 0, 1, out), 0);
}

/* A reference decoder for the hybrid encoding. */
static int rle_decode(const uint8_t *p, size_t len, int bw, uint32_t *out, size_t want)
{
    const uint8_t *end = p + len;
    size_t got = 0;
    while (got < want) {
        uint64_t h;
        size_t k = floe__get_uvarint(p, end, &h);
        if (!k)
            return -1;
        p += k;
        if (h & 1) {
            size_t count = (size_t)(h >> 1) * 8;
            size_t bytes = (size_t)(h >> 1) * (size_t)bw;
            if ((size_t)(end - p) < bytes)
                return -1;
            for (size_t i = 0; i < count; i++) {
                uint64_t v = 0;
                for (int b = 0; b < bw; b++) {
                    size_t bit = i * (size_t)bw + (size_t)b;
                    v |= (uint64_t)((p[bit / 8] >> (bit % 8)) & 1) << b;
                }
                if (got < want)
                    out[got++] = (uint32_t)v;
            }
            p += bytes;
        } else {
            size_t count = (size_t)(h >> 1);
            int nb = (bw + 7) / 8;
            if (end - p < nb || count == 0)
                return -1;
            uint32_t v = 0;
            for (int b = 0; b < nb; b++)
                v |= (uint32_t)p[b] << (8 * b);
            p += nb;
            for (size_t i = 0; i < count && got < want; i++)
                out[got++] = v;
        }
    }
    return p == end ? 0 : -2;
}

TEST(rle_round_trip_random)
{
    uint64_t seed = 42;
    for (int round = 0; round < 400; round++) {
        int bw = 1 + round % 20;
        size_t n = 1 + (size_t)(round * 37 % 3000);
        uint32_t *v = malloc(n * sizeof *v), *back = malloc(n * sizeof *back);
        uint32_t maxv = bw == 32 ? UINT32_MAX : (1u << bw) - 1;
        for (size_t i = 0; i < n;) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            uint32_t x = (uint32_t)(seed >> 33) & maxv;
            size_t run = (seed >> 20) % 4 == 0 ? (seed >> 8) % 40 : 1;
            for (size_t k = 0; k <= run && i < n; k++)
                v[i++] = x;
        }
        size_t cap = floe__rle_bound(n, bw);
        uint8_t *enc = malloc(cap);
        size_t len = floe__rle_encode_u32(v, n, bw, enc);
        CHECK(len <= cap);
        CHECK_EQ_INT(rle_decode(enc, len, bw, back, n), 0);
        CHECK(memcmp(v, back, n * sizeof *v) == 0);
        if (bw <= 8) {
            uint8_t *v8 = malloc(n);
            for (size_t i = 0; i < n; i++)
                v8[i] = (uint8_t)v[i];
            size_t len8 = floe__rle_encode_u8(v8, n, bw, enc);
            CHECK_EQ_INT(len8, len);
            CHECK_EQ_INT(rle_decode(enc, len8, bw, back, n), 0);
            CHECK(memcmp(v, back, n * sizeof *v) == 0);
            free(v8);
        }
        free(enc);
        free(v);
        free(back);
    }
}

TEST(bool_packing)
{
    static const uint8_t v[9] = {1, 0, 1, 1, 0, 0, 0, 1, 1};
    uint8_t out[2];
    CHECK_EQ_INT(floe__pack_bools(v, 9, out), 2);
    CHECK_EQ_INT(out[0], 0x8d);
    CHECK_EQ_INT(out[1], 0x01);
    CHECK_EQ_INT(floe__bit_width(0), 0);
    CHECK_EQ_INT(floe__bit_width(1), 1);
    CHECK_EQ_INT(floe__bit_width(2), 2);
    CHECK_EQ_INT(floe__bit_width(255), 8);
    CHECK_EQ_INT(floe__bit_width(256), 9);
}

/* ---- dictionaries ------------------------------------------------------------------- */

TEST(dict_ints)
{
    floe__pq_dict d;
    floe__pq_dict_init(&d, 4);
    int32_t vals[] = {5, 7, 5, 5, 9, -1, 7};
    uint32_t idx[7];
    size_t done;
    CHECK_EQ_INT(floe__pq_dict_encode(&d, (const uint8_t *)vals, sizeof vals, 7, 1 << 20, idx,
                                      &done, NULL), FLOE_OK);
    CHECK_EQ_INT(done, 7);
    static const uint32_t want[] = {0, 1, 0, 0, 2, 3, 1};
    CHECK_MEM(idx, want, sizeof want);
    CHECK_EQ_INT(d.n, 4);
    int32_t page[4];
    memcpy(page, d.values.data, 16);
    CHECK_EQ_INT(page[0], 5);
    CHECK_EQ_INT(page[3], -1);

    /* a limit of 5 entries (20 bytes): the 6th new value stops the page */
    int32_t more[] = {9, 100, 101, 5};
    CHECK_EQ_INT(floe__pq_dict_encode(&d, (const uint8_t *)more, sizeof more, 4, 20, idx, &done,
                                      NULL), FLOE_OK);
    CHECK_EQ_INT(done, 2);
    CHECK_EQ_INT(idx[0], 2);
    CHECK_EQ_INT(idx[1], 4);
    CHECK_EQ_INT(d.values.len, 20);

    floe__pq_dict_free(&d);

    /* 8-byte values: narrow slots until a value needs 64 bits */
    floe__pq_dict_init(&d, 8);
    int64_t wv[] = {1, 2, 1, (int64_t)1 << 40, 2, (int64_t)1 << 40, -1, 1};
    uint32_t wi[8];
    CHECK_EQ_INT(floe__pq_dict_encode(&d, (const uint8_t *)wv, sizeof wv, 3, 1 << 20, wi, &done,
                                      NULL), FLOE_OK);
    CHECK(!d.wide);
    CHECK_EQ_INT(floe__pq_dict_encode(&d, (const uint8_t *)(wv + 3), 5 * 8, 5, 1 << 20, wi + 3,
                                      &done, NULL), FLOE_OK);
    CHECK(d.wide);
    static const uint32_t wwant[] = {0, 1, 0, 2, 1, 2, 3, 0};
    CHECK_MEM(wi, wwant, sizeof wwant);
    floe__pq_dict_free(&d);
    floe__pq_dict_init(&d, 4);

    floe__pq_dict_reset(&d);
    CHECK_EQ_INT(d.n, 0);
    CHECK_EQ_INT(floe__pq_dict_encode(&d, (const uint8_t *)more, 4, 1, 1 << 20, idx, &done, NULL),
                 FLOE_OK);
    CHECK_EQ_INT(idx[0], 0);
    floe__pq_dict_free(&d);
}

TEST(dict_grows_and_keeps_indices)
{
    enum { N = 200000 };
    floe__pq_dict d;
    floe__pq_dict_init(&d, 8);
    int64_t *v = malloc(N * 2 * sizeof *v);
    for (int i = 0; i < N; i++) {
        v[i] = (int64_t)i * 1000003;
        v[N + i] = (int64_t)(N - 1 - i) * 1000003;
    }
    uint32_t *idx = malloc(N * 2 * sizeof *idx);
    size_t done;
    CHECK_EQ_INT(floe__pq_dict_encode(&d, (const uint8_t *)v, N * 2 * 8, N * 2, SIZE_MAX, idx,
                                      &done, NULL), FLOE_OK);
    CHECK_EQ_INT(done, N * 2);
    CHECK_EQ_INT(d.n, N);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += idx[i] != (uint32_t)i || idx[N + i] != (uint32_t)(N - 1 - i);
    CHECK_EQ_INT(bad, 0);
    free(v);
    free(idx);
    floe__pq_dict_free(&d);
}

TEST(dict_bytes_and_fixed)
{
    rb b = {0};
    const char *words[] = {"R", "A", "N", "R", "", "A", "MAIL", "", "R"};
    for (size_t i = 0; i < 9; i++) {
        uint32_t n = (uint32_t)strlen(words[i]);
        rb_raw(&b, &n, 4);
        rb_raw(&b, words[i], n);
    }
    floe__pq_dict d;
    floe__pq_dict_init(&d, 0);
    uint32_t idx[9];
    size_t done;
    CHECK_EQ_INT(floe__pq_dict_encode(&d, b.d, b.len, 9, 1 << 20, idx, &done, NULL), FLOE_OK);
    static const uint32_t want[] = {0, 1, 2, 0, 3, 1, 4, 3, 0};
    CHECK_MEM(idx, want, sizeof want);
    /* the dictionary page: PLAIN byte arrays in first-seen order */
    static const uint8_t page[] = {1, 0, 0, 0, 'R', 1, 0, 0, 0, 'A', 1, 0, 0, 0, 'N',
                                   0, 0, 0, 0, 4, 0, 0, 0, 'M', 'A', 'I', 'L'};
    CHECK_EQ_INT(d.values.len, sizeof page);
    CHECK_MEM(d.values.data, page, sizeof page);
    /* a limit smaller than one value: nothing fits */
    floe__pq_dict_reset(&d);
    CHECK_EQ_INT(floe__pq_dict_encode(&d, b.d, b.len, 9, 4, idx, &done, NULL), FLOE_OK);
    CHECK_EQ_INT(done, 0);
    floe__pq_dict_free(&d);

    /* 3-byte fixed values */
    floe__pq_dict_init(&d, 3);
    const uint8_t fx[] = {1, 2, 3, 1, 2, 4, 1, 2, 3, 1, 2, 3};
    CHECK_EQ_INT(floe__pq_dict_encode(&d, fx, sizeof fx, 4, 1 << 20, idx, &done, NULL), FLOE_OK);
    CHECK_EQ_INT(done, 4);
    CHECK_EQ_INT(idx[0], 0);
    CHECK_EQ_INT(idx[1], 1);
    CHECK_EQ_INT(idx[2], 0);
    CHECK_EQ_INT(idx[3], 0);
    CHECK_EQ_INT(d.values.len, 6);
    floe__pq_dict_free(&d);
    rb_free(&b);

    /* many distinct strings survive growth */
    floe__pq_dict_init(&d, 0);
    rb s = {0};
    for (int i = 0; i < 50000; i++) {
        char w[32];
        uint32_t n = (uint32_t)snprintf(w, sizeof w, "value-%d", i % 20000);
        rb_raw(&s, &n, 4);
        rb_raw(&s, w, n);
    }
    uint32_t *ix = malloc(50000 * sizeof *ix);
    CHECK_EQ_INT(floe__pq_dict_encode(&d, s.d, s.len, 50000, SIZE_MAX, ix, &done, NULL), FLOE_OK);
    CHECK_EQ_INT(d.n, 20000);
    int bad = 0;
    for (int i = 0; i < 50000; i++)
        bad += ix[i] != (uint32_t)(i % 20000);
    CHECK_EQ_INT(bad, 0);
    free(ix);
    rb_free(&s);
    floe__pq_dict_free(&d);
}

/* Integer dictionaries against a reference: every index points at its value,
 * entries are distinct and in first-seen order, whatever the spread of the
 * values (the direct map for narrow spans, narrow and wide hash slots). */
TEST(dict_ints_differential)
{
    uint64_t seed = 7;
    for (int round = 0; round < 32; round++) {
        int w = round % 2 ? 8 : 4;
        int dist = round / 2 % 8;
        size_t n = 20000;
        uint8_t *vals = malloc(n * 8);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            int64_t r = (int64_t)(seed >> 20);
            int64_t v;
            switch (dist) {
            case 0: v = r % 50; break;                                /* tiny range */
            case 1: v = r % 9000 - 4500; break;                       /* negatives */
            case 2: v = (int64_t)i / 3; break;                        /* sorted, growing */
            case 3: v = r % 100 + (i % 1000 == 999 ? 1000000 : 0); break;   /* rare outliers */
            case 4: v = -(int64_t)(i / 2); break;                     /* growing downwards */
            case 5: v = (w == 8 ? INT64_MAX : INT32_MAX) - r % 300; break;  /* at the top */
            case 6: v = (w == 8 ? INT64_MIN : INT32_MIN) + r % 300; break;  /* at the bottom */
            default: v = r; break;                                    /* spread out */
            }
            if (w == 4)
                floe__put_le32(vals + 4 * i, (uint32_t)(int32_t)v);
            else
                floe__put_le64(vals + 8 * i, (uint64_t)v);
        }
        floe__pq_dict d;
        floe__pq_dict_init(&d, (uint32_t)w);
        uint32_t *idx = malloc(n * sizeof *idx);
        size_t at = 0, done;
        while (at < n) {                      /* in pieces, like pages */
            size_t k = 1 + (size_t)(seed >> 40) % 3000;
            if (k > n - at)
                k = n - at;
            CHECK_EQ_INT(floe__pq_dict_encode(&d, vals + at * (size_t)w, k * (size_t)w, k,
                                              SIZE_MAX, idx + at, &done, NULL), FLOE_OK);
            CHECK_EQ_INT(done, k);
            at += k;
            seed = seed * 6364136223846793005ULL + 1;
        }
        int bad = 0;
        uint32_t next = 0;
        for (size_t i = 0; i < n; i++) {
            bad += idx[i] >= d.n;
            if (idx[i] < d.n)
                bad += memcmp(d.values.data + (size_t)idx[i] * (size_t)w, vals + i * (size_t)w,
                              (size_t)w) != 0;
            if (idx[i] == next)
                next++;
            else
                bad += idx[i] > next;         /* first-seen order */
        }
        CHECK_EQ_INT(next, d.n);
        CHECK_EQ_INT(bad, 0);
        free(idx);
        free(vals);
        floe__pq_dict_free(&d);
    }
}

/* Stored (uncompressed) pages are valid zstd and snappy data. */
TEST(stored_pages_decode)
{
    static const size_t sizes[] = {0, 1, 59, 60, 255, 256, 257, 65535, 65536 + 255, 65536 + 256,
                                   65536 + 257, 131072, 131073, 300000};
    uint8_t *src = malloc(300000), *back = malloc(300001);
    for (size_t i = 0; i < 300000; i++)
        src[i] = (uint8_t)(i * 2654435761u >> 13);
    floe__pq_codec z, sn;
    CHECK_EQ_INT(floe__pq_codec_init(&z, FLOE_COMPRESSION_ZSTD, 0, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__pq_codec_init(&sn, FLOE_COMPRESSION_SNAPPY, 0, NULL), FLOE_OK);
    CHECK(floe__pq_can_store(&z) && floe__pq_can_store(&sn));
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        floe__buf b;
        floe__buf_init(&b, 0);
        CHECK_EQ_INT(floe__pq_store(&z, src, n, &b, NULL), FLOE_OK);
        CHECK_EQ_INT(ZSTD_getFrameContentSize(b.data, b.len), n);
        size_t got = ZSTD_decompress(back, 300001, b.data, b.len);
        CHECK(!ZSTD_isError(got) && got == n && memcmp(back, src, n) == 0);
        floe__buf_reset(&b);
        CHECK_EQ_INT(floe__pq_store(&sn, src, n, &b, NULL), FLOE_OK);
        size_t out = 300001;
        CHECK(snappy_validate_compressed_buffer((const char *)b.data, b.len) == SNAPPY_OK);
        CHECK(snappy_uncompress((const char *)b.data, b.len, (char *)back, &out) == SNAPPY_OK);
        CHECK(out == n && memcmp(back, src, n) == 0);
        floe__buf_free(&b);
    }
    floe__pq_codec_free(&z);
    floe__pq_codec_free(&sn);
    free(src);
    free(back);
}

int main(void)
{
    RUN(thrift_known_bytes);
    RUN(thrift_long_list_and_errors);
    RUN(rle_hand_computed);
    RUN(rle_round_trip_random);
    RUN(bool_packing);
    RUN(dict_ints);
    RUN(dict_grows_and_keeps_indices);
    RUN(dict_bytes_and_fixed);
    RUN(dict_ints_differential);
    RUN(stored_pages_decode);
    return UNIT_DONE();
}
