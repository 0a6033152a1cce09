/*
 * test_puffin.c - position bitmaps (iceberg/roaring.c), deletion vector
 * blobs and Puffin files (iceberg/puffin.c): round trips of random sparse
 * and dense sets, every container kind, 64-bit positions, the spec's
 * framing and CRC, bytes from a known Roaring layout, a Puffin file of
 * several DVs, and malformed input refused with FLOE_EFORMAT.
 *
 * With arguments it is a tool for the Python tests:
 *   test_puffin encode OUT POS...      write one DV blob of the positions
 *   test_puffin decode FILE [OFF LEN]  print the positions of a blob (or of
 *                                      the blob at OFF/LEN of a Puffin file)
 *   test_puffin footer FILE            print a Puffin footer's blobs as JSON
 */
#include <stdio.h>
#include <stdlib.h>

#include "iceberg/puffin_internal.h"
#include "unit.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sort and dedupe p[0..n); returns the new n. */
static size_t uniq(uint64_t *p, size_t n)
{
    qsort(p, n, sizeof *p, cmp_u64);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || p[k - 1] != p[i])
            p[k++] = p[i];
    return k;
}

/* b must hold exactly want[0..n) (sorted, unique). */
static void check_same(const floe__posbitmap *b, const uint64_t *want, size_t n)
{
    CHECK_EQ_INT(floe__posbitmap_count(b), n);
    floe__posbitmap_iter it = {b, 0, 0, 0};
    uint64_t pos;
    size_t i = 0;
    while (floe__posbitmap_next(&it, &pos)) {
        if (i < n && pos != want[i]) {
            CHECK_EQ_INT(pos, want[i]);
            return;
        }
        i++;
    }
    CHECK_EQ_INT(i, n);
    for (size_t j = 0; j < n; j += 1 + n / 64)
        CHECK(floe__posbitmap_contains(b, want[j]));
    /* ascending queries: each value and its neighbours, as contains answers */
    floe__posbitmap_seq q;
    floe__posbitmap_seq_init(&q, b);
    uint64_t last = 0;
    bool any = false;
    for (size_t j = 0; j < n; j++)
        for (uint64_t v = want[j] ? want[j] - 1 : 0; v <= want[j] + 1; v++) {
            if (any && v <= last)
                continue;
            if (floe__posbitmap_seq_has(&q, v) != floe__posbitmap_contains(b, v)) {
                CHECK_EQ_INT(v, UINT64_MAX);           /* names the position */
                return;
            }
            last = v;
            any = true;
        }
}

/* Build from p (in the given order), check, serialize both ways, check again. */
static void round_trip(uint64_t *p, size_t n)
{
    floe__posbitmap b = {0}, back = {0}, dv = {0};
    floe_error *err = floe_error_new();
    for (size_t i = 0; i < n; i++)
        CHECK_EQ_INT(floe__posbitmap_add(&b, p[i], err), FLOE_OK);
    size_t u = uniq(p, n);
    check_same(&b, p, u);
    floe__buf s;
    floe__buf_init(&s, 0);
    CHECK_EQ_INT(floe__posbitmap_serialize(&b, &s, err), FLOE_OK);
    size_t used = 0;
    CHECK_EQ_INT(floe__posbitmap_deserialize(s.data, s.len, &back, &used, err), FLOE_OK);
    CHECK_EQ_INT(used, s.len);
    check_same(&back, p, u);
    floe__buf_reset(&s);
    CHECK_EQ_INT(floe__dv_encode(&back, &s, err), FLOE_OK);
    CHECK_EQ_INT(floe__dv_decode(s.data, s.len, &dv, err), FLOE_OK);
    check_same(&dv, p, u);
    floe__buf_free(&s);
    floe__posbitmap_clear(&b);
    floe__posbitmap_clear(&back);
    floe__posbitmap_clear(&dv);
    floe_error_free(err);
}

TEST(sparse_dense_and_runs)
{
    size_t cap = 200000;
    uint64_t *p = malloc(cap * sizeof *p);
    /* sparse random 32-bit positions */
    for (size_t i = 0; i < 5000; i++)
        p[i] = rnd() & 0xFFFFFFFFu;
    round_trip(p, 5000);
    /* dense: 70% of the first 200000 rows, random order -> bitmap containers */
    size_t n = 0;
    for (uint64_t v = 0; v < 200000; v++)
        if (rnd() % 10 < 7)
            p[n++] = v;
    for (size_t i = n; i > 1; i--) {
        size_t j = rnd() % i;
        uint64_t t = p[i - 1];
        p[i - 1] = p[j];
        p[j] = t;
    }
    round_trip(p, n);
    /* long runs -> run containers; a full container of 65536 */
    n = 0;
    for (uint64_t v = 65536; v < 65536 * 2; v++)
        p[n++] = v;
    for (uint64_t v = 300000; v < 310000; v++)
        p[n++] = v;
    p[n++] = 7;
    round_trip(p, n);
    /* exactly 4096 and 4097 values in one container (array / bitmap edge) */
    for (n = 0; n < 4097; n++)
        p[n] = n * 3;
    round_trip(p, 4096);
    for (n = 0; n < 4097; n++)
        p[n] = n * 3;
    round_trip(p, 4097);
    free(p);
}

TEST(positions_past_32_bits)
{
    uint64_t p[] = {0, 1, (uint64_t)1 << 32, ((uint64_t)1 << 32) + 5, (uint64_t)7 << 40,
                    FLOE_POS_MAX, FLOE_POS_MAX - 1, (uint64_t)0xFFFFFFFFu, 65535, 65536};
    round_trip(p, sizeof p / sizeof p[0]);
    floe__posbitmap b = {0};
    CHECK_EQ_INT(floe__posbitmap_add(&b, FLOE_POS_MAX + 1, NULL), FLOE_EINVAL);
    CHECK_EQ_INT(floe__posbitmap_count(&b), 0);
    CHECK(!floe__posbitmap_contains(&b, 3));
    floe__posbitmap_seq q;
    floe__posbitmap_seq_init(&q, NULL);                         /* NULL: empty */
    CHECK(!floe__posbitmap_seq_has(&q, 0) && !floe__posbitmap_seq_has(&q, 3));
    floe__posbitmap_clear(&b);
}

TEST(or_and_duplicates)
{
    floe__posbitmap a = {0}, b = {0};
    for (uint64_t v = 0; v < 10000; v += 2)
        CHECK_EQ_INT(floe__posbitmap_add(&a, v, NULL), FLOE_OK);
    for (uint64_t v = 0; v < 10000; v += 3)
        CHECK_EQ_INT(floe__posbitmap_add(&b, v, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__posbitmap_add(&b, 3, NULL), FLOE_OK);     /* again: no change */
    CHECK_EQ_INT(floe__posbitmap_count(&b), 3334);
    CHECK_EQ_INT(floe__posbitmap_or(&a, &b, NULL), FLOE_OK);
    uint64_t n = 0;
    for (uint64_t v = 0; v < 10000; v++)
        n += (v % 2 == 0 || v % 3 == 0);
    CHECK_EQ_INT(floe__posbitmap_count(&a), n);
    CHECK(floe__posbitmap_contains(&a, 9999) && !floe__posbitmap_contains(&a, 9997));
    floe__posbitmap_clear(&a);
    floe__posbitmap_clear(&b);
}

/* The exact bytes for {1, 2, 3, 1000} and {5<<32}: two buckets, run-free
 * and run cookies, as the Roaring format spec lays them out. */
TEST(known_layout)
{
    floe__posbitmap b = {0};
    uint64_t p[] = {1, 2, 3, 1000};
    for (size_t i = 0; i < 4; i++)
        floe__posbitmap_add(&b, p[i], NULL);
    floe__buf s;
    floe__buf_init(&s, 0);
    CHECK_EQ_INT(floe__posbitmap_serialize(&b, &s, NULL), FLOE_OK);
    static const uint8_t want[] = {
        1, 0, 0, 0, 0, 0, 0, 0,            /* one bucket */
        0, 0, 0, 0,                        /* key 0 */
        0x3a, 0x30, 0, 0, 1, 0, 0, 0,      /* cookie 12346, 1 container */
        0, 0, 3, 0,                        /* container key 0, cardinality - 1 = 3 */
        0x10, 0, 0, 0,                     /* offset 16: from the 32-bit bitmap start */
        1, 0, 2, 0, 3, 0, 0xe8, 0x03,      /* array */
    };
    CHECK_EQ_INT(s.len, sizeof want);
    CHECK(s.len == sizeof want && memcmp(s.data, want, sizeof want) == 0);
    floe__posbitmap_clear(&b);
    for (uint64_t v = 10; v < 20; v++)
        floe__posbitmap_add(&b, ((uint64_t)5 << 32) | v, NULL);
    floe__buf_reset(&s);
    CHECK_EQ_INT(floe__posbitmap_serialize(&b, &s, NULL), FLOE_OK);
    static const uint8_t want2[] = {
        1, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0,
        0x3b, 0x30, 0, 0,                  /* cookie 12347, 1 container */
        1,                                 /* run flags: container 0 is a run */
        0, 0, 9, 0,                        /* key 0, cardinality - 1 = 9 (no offsets: n < 4) */
        1, 0, 10, 0, 9, 0,                 /* one run: start 10, length - 1 = 9 */
    };
    CHECK(s.len == sizeof want2 && memcmp(s.data, want2, sizeof want2) == 0);
    floe__buf_free(&s);
    floe__posbitmap_clear(&b);
}

TEST(empty_buckets_and_framing)
{
    /* Java writes an empty bitmap for every key below the highest */
    static const uint8_t java[] = {
        2, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0x3a, 0x30, 0, 0, 0, 0, 0, 0,                     /* key 0: empty */
        1, 0, 0, 0, 0x3a, 0x30, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 4, 0,
    };
    floe__posbitmap b = {0};
    size_t used = 0;
    CHECK_EQ_INT(floe__posbitmap_deserialize(java, sizeof java, &b, &used, NULL), FLOE_OK);
    CHECK_EQ_INT(used, sizeof java);
    CHECK_EQ_INT(floe__posbitmap_count(&b), 1);
    CHECK(floe__posbitmap_contains(&b, ((uint64_t)1 << 32) | 4));
    floe__buf s;
    floe__buf_init(&s, 0);
    CHECK_EQ_INT(floe__dv_encode(&b, &s, NULL), FLOE_OK);
    /* length = magic + vector, big-endian; magic; CRC big-endian at the end */
    uint32_t len = (uint32_t)s.data[0] << 24 | s.data[1] << 16 | s.data[2] << 8 | s.data[3];
    CHECK_EQ_INT(len, s.len - 8);
    CHECK(s.data[4] == 0xD1 && s.data[5] == 0xD3 && s.data[6] == 0x39 && s.data[7] == 0x64);
    floe__posbitmap d = {0};
    floe_error *err = floe_error_new();
    s.data[s.len - 1] ^= 1;                                      /* bad CRC */
    CHECK_EQ_INT(floe__dv_decode(s.data, s.len, &d, err), FLOE_EFORMAT);
    CHECK(strstr(floe_error_message(err), "CRC") != NULL);
    s.data[s.len - 1] ^= 1;
    s.data[4] = 0;                                               /* bad magic */
    CHECK_EQ_INT(floe__dv_decode(s.data, s.len, &d, NULL), FLOE_EFORMAT);
    s.data[4] = 0xD1;
    CHECK_EQ_INT(floe__dv_decode(s.data, s.len - 1, &d, NULL), FLOE_EFORMAT);  /* length */
    CHECK_EQ_INT(floe__dv_decode(s.data, s.len, &d, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__posbitmap_count(&d), 1);
    floe__posbitmap_clear(&d);
    floe__posbitmap_clear(&b);
    floe__buf_free(&s);
    floe_error_free(err);
}

TEST(malformed_bitmaps)
{
    static const uint8_t cases[][24] = {
        {1, 0, 0, 0, 0, 0, 0, 0},                                    /* truncated */
        {9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3a, 0x30, 0, 0, 0, 0, 0, 0},  /* count */
        {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x3a, 0x30, 0, 0, 0, 0, 0, 0}, /* key >= 2^31 */
        {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x39, 0x30, 0, 0, 0, 0, 0, 0},  /* cookie */
        {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3a, 0x30, 0, 0, 1, 0, 0, 0,
         0, 0, 3, 0},                                                /* containers cut */
    };
    static const size_t lens[] = {8, 20, 20, 20, 24};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        floe__posbitmap b = {0};
        CHECK_EQ_INT(floe__posbitmap_deserialize(cases[i], lens[i], &b, NULL, NULL),
                     FLOE_EFORMAT);
        CHECK_EQ_INT(b.n, 0);
    }
    /* unsorted array values, run past 65535, bitmap popcount mismatch */
    static const uint8_t unsorted[] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3a, 0x30, 0, 0,
                                       1, 0, 0, 0, 0, 0, 1, 0, 24, 0, 0, 0, 5, 0, 4, 0};
    static const uint8_t runs[] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3b, 0x30, 0, 0, 1,
                                   0, 0, 1, 0, 1, 0, 0xff, 0xff, 1, 0};
    floe__posbitmap b = {0};
    CHECK_EQ_INT(floe__posbitmap_deserialize(unsorted, sizeof unsorted, &b, NULL, NULL),
                 FLOE_EFORMAT);
    CHECK_EQ_INT(floe__posbitmap_deserialize(runs, sizeof runs, &b, NULL, NULL), FLOE_EFORMAT);
}

TEST(puffin_file)
{
    char dir[256];
    unit_make_tmp(dir, sizeof dir, "puffin");
    floe__fileio *io = NULL;
    CHECK_EQ_INT(floe__fileio_local_new(&io, NULL), FLOE_OK);
    floe__posbitmap a = {0}, b = {0};
    for (uint64_t v = 0; v < 100; v += 7)
        floe__posbitmap_add(&a, v, NULL);
    for (uint64_t v = 0; v < 100000; v++)
        floe__posbitmap_add(&b, v, NULL);
    floe__puffin_dv dvs[2] = {{"file:///d/a.parquet", &a, 0, 0}, {"file:///d/b.parquet", &b, 0, 0}};
    char uri[300];
    snprintf(uri, sizeof uri, "file://%s/x.puffin", dir);
    uint64_t size = 0;
    CHECK_EQ_INT(floe__puffin_write_dvs(io, uri, dvs, 2, &size, NULL), FLOE_OK);
    CHECK_EQ_INT(dvs[0].offset, 4);
    CHECK_EQ_INT(dvs[1].offset, 4 + dvs[0].length);
    floe__buf f;
    floe__buf_init(&f, 0);
    CHECK_EQ_INT(floe__fileio_read_all(io, uri, &f, NULL), FLOE_OK);
    CHECK_EQ_INT(f.len, size);
    floe__puffin_footer ft;
    CHECK_EQ_INT(floe__puffin_footer_parse(f.data, f.len, &ft, NULL), FLOE_OK);
    CHECK_EQ_INT(ft.n, 2);
    if (ft.n == 2) {
        CHECK_EQ_STR(ft.blobs[1].type, FLOE_DV_BLOB_TYPE);
        CHECK_EQ_STR(ft.blobs[1].referenced_data_file, "file:///d/b.parquet");
        CHECK_EQ_INT(ft.blobs[1].cardinality, 100000);
        CHECK_EQ_INT(ft.blobs[1].offset, dvs[1].offset);
        CHECK_EQ_INT(ft.blobs[1].length, dvs[1].length);
    }
    floe__posbitmap got = {0};
    CHECK_EQ_INT(floe__dv_read_at(f.data, f.len, dvs[1].offset, dvs[1].length, 100000, &got,
                                  NULL), FLOE_OK);
    CHECK_EQ_INT(floe__posbitmap_count(&got), 100000);
    floe__posbitmap_clear(&got);
    CHECK_EQ_INT(floe__dv_read_at(f.data, f.len, dvs[0].offset, dvs[0].length, 3, &got, NULL),
                 FLOE_EFORMAT);                                    /* wrong cardinality */
    CHECK_EQ_INT(floe__dv_read_at(f.data, f.len, dvs[0].offset + 1, dvs[0].length, -1, &got,
                                  NULL), FLOE_EFORMAT);
    floe__puffin_footer_clear(&ft);
    f.data[f.len - 1] = 0;                                          /* trailing magic */
    CHECK_EQ_INT(floe__puffin_footer_parse(f.data, f.len, &ft, NULL), FLOE_EFORMAT);
    floe__buf_free(&f);
    floe__posbitmap_clear(&a);
    floe__posbitmap_clear(&b);
    floe__fileio_free(io);
    unit_remove_tmp(dir);
}

/* ---- the tool ------------------------------------------------------------------------ */

static int tool_encode(const char *out, int n, char **pos)
{
    floe__posbitmap b = {0};
    floe__buf s;
    floe__buf_init(&s, 0);
    for (int i = 0; i < n; i++)
        floe__posbitmap_add(&b, strtoull(pos[i], NULL, 10), NULL);
    int rc = floe__dv_encode(&b, &s, NULL);
    FILE *f = fopen(out, "wb");
    if (rc == FLOE_OK && f && fwrite(s.data, 1, s.len, f) != s.len)
        rc = FLOE_EIO;
    if (f)
        fclose(f);
    floe__buf_free(&s);
    floe__posbitmap_clear(&b);
    return rc == FLOE_OK && f ? 0 : 1;
}

static int tool_read(const char *what, const char *path, char **rest, int n)
{
    floe__buf f;
    floe__buf_init(&f, 0);
    floe_error *err = floe_error_new();
    int rc = floe__local_read_all(path, &f, err);
    floe__posbitmap b = {0};
    floe__puffin_footer ft = {0};
    if (rc == FLOE_OK && strcmp(what, "footer") == 0) {
        rc = floe__puffin_footer_parse(f.data, f.len, &ft, err);
        for (size_t i = 0; rc == FLOE_OK && i < ft.n; i++)
            printf("{\"type\":\"%s\",\"offset\":%lld,\"length\":%lld,\"cardinality\":%lld}\n",
                   ft.blobs[i].type, (long long)ft.blobs[i].offset,
                   (long long)ft.blobs[i].length, (long long)ft.blobs[i].cardinality);
    } else if (rc == FLOE_OK) {
        rc = n >= 2 ? floe__dv_read_at(f.data, f.len, atoll(rest[0]), atoll(rest[1]), -1, &b, err)
                    : floe__dv_decode(f.data, f.len, &b, err);
        floe__posbitmap_iter it = {&b, 0, 0, 0};
        uint64_t p;
        while (rc == FLOE_OK && floe__posbitmap_next(&it, &p))
            printf("%llu\n", (unsigned long long)p);
    }
    if (rc != FLOE_OK)
        fprintf(stderr, "%s: %s\n", floe_code_name(rc), floe_error_message(err));
    floe__puffin_footer_clear(&ft);
    floe__posbitmap_clear(&b);
    floe__buf_free(&f);
    floe_error_free(err);
    return rc == FLOE_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "encode") == 0)
        return tool_encode(argv[2], argc - 3, argv + 3);
    if (argc >= 3)
        return tool_read(argv[1], argv[2], argv + 3, argc - 3);
    RUN(sparse_dense_and_runs);
    RUN(positions_past_32_bits);
    RUN(or_and_duplicates);
    RUN(known_layout);
    RUN(empty_buckets_and_framing);
    RUN(malformed_bitmaps);
    RUN(puffin_file);
    return UNIT_DONE();
}
