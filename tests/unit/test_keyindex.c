/*
 * test_keyindex.c - the key index (src/sink/keyindex*.c): a multiset of
 * live rows per key, row-hash preference, retired files, the disk tier
 * (spills at a tiny memory limit) against a model, walking every live row,
 * memory per key, and rows re-pointed by a compaction's moves (moves.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "keyindex/keyindex_internal.h"
#include "sink/moves_internal.h"
#include "unit.h"

static floe__kx *open_kx(size_t limit)
{
    floe__kx_options o = {limit, NULL};
    floe__kx *kx = NULL;
    CHECK_EQ_INT(floe__kx_new(&o, &kx, NULL), FLOE_OK);
    return kx;
}

static uint32_t file(floe__kx *kx, const char *path)
{
    uint32_t id = 0;
    CHECK_EQ_INT(floe__kx_file(kx, path, &id, NULL), FLOE_OK);
    return id;
}

static int put(floe__kx *kx, const char *key, uint32_t f, uint64_t pos, uint64_t rh)
{
    floe__kx_loc loc = {f, pos, rh};
    return floe__kx_insert(kx, (const uint8_t *)key, strlen(key), loc, NULL);
}

static bool take(floe__kx *kx, const char *key, uint64_t rh, floe__kx_loc *loc)
{
    bool found = false;
    CHECK_EQ_INT(floe__kx_take(kx, (const uint8_t *)key, strlen(key), rh, &found, loc, NULL),
                 FLOE_OK);
    return found;
}

TEST(rows_of_a_key_are_a_multiset_and_prefer_the_matching_row)
{
    floe__kx *kx = open_kx(0);
    uint32_t a = file(kx, "s3://b/a.parquet"), b = file(kx, "s3://b/b.parquet");
    CHECK(a != b && file(kx, "s3://b/a.parquet") == a);
    CHECK_EQ_INT(put(kx, "k", a, 1, 11), FLOE_OK);
    CHECK_EQ_INT(put(kx, "k", b, 2, 22), FLOE_OK);
    CHECK_EQ_INT(put(kx, "other", a, 3, 33), FLOE_OK);
    floe__kx_loc loc;
    CHECK(take(kx, "k", 22, &loc) && loc.file == b && loc.pos == 2 && loc.rowhash == 22);
    CHECK(take(kx, "k", 99, &loc) && loc.file == a && loc.pos == 1);   /* no match: any */
    CHECK(!take(kx, "k", 11, &loc));
    bool live = true;
    CHECK_EQ_INT(floe__kx_has(kx, (const uint8_t *)"k", 1, &live, NULL), FLOE_OK);
    CHECK(!live);
    CHECK_EQ_INT(floe__kx_has(kx, (const uint8_t *)"other", 5, &live, NULL), FLOE_OK);
    CHECK(live);
    floe__kx_stats st;
    floe__kx_get_stats(kx, &st);
    CHECK_EQ_INT(st.keys, 1);
    CHECK_EQ_INT(put(kx, "", a, 4, 0), FLOE_OK);                 /* an empty key is a key */
    CHECK(take(kx, "", 0, &loc) && loc.pos == 4);
    floe__kx_free(kx);
}

TEST(rows_of_a_retired_file_stop_counting)
{
    floe__kx *kx = open_kx(0);
    uint32_t a = file(kx, "a"), b = file(kx, "b");
    CHECK_EQ_INT(put(kx, "k1", a, 0, 1), FLOE_OK);
    CHECK_EQ_INT(put(kx, "k2", a, 1, 2), FLOE_OK);
    CHECK_EQ_INT(put(kx, "k2", b, 0, 2), FLOE_OK);
    floe__kx_retire(kx, a);                           /* a compaction rewrote a */
    CHECK(!floe__kx_file_live(kx, a));
    uint32_t id;
    CHECK(!floe__kx_file_find(kx, "a", &id));
    floe__kx_loc loc;
    CHECK(!take(kx, "k1", 1, &loc));
    CHECK(take(kx, "k2", 2, &loc) && loc.file == b);
    uint32_t a2 = file(kx, "a");                      /* the path comes back: a new id */
    CHECK(a2 != a && floe__kx_file_live(kx, a2));
    CHECK_EQ_STR(floe__kx_file_path(kx, a2), "a");
    floe__kx_free(kx);
}

/* ---- the disk tier against a model ------------------------------------------------------- */

#define NKEYS 100000

typedef struct model {
    int count[NKEYS];                 /* live rows per key */
} model;

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void key_name(int k, char *out) { snprintf(out, 32, "key-%05d-%s", k, k % 3 ? "x" : "yy"); }

static int count_rows(void *ctx, const uint8_t *key, size_t len, floe__kx_loc loc,
                      floe_error *err)
{
    (void)err;
    (void)loc;
    int *counts = ctx, k = -1;
    char name[32];
    for (int i = 0; i < 6 && k < 0; i++) {    /* parse the number back */
        (void)i;
        if (len > 9 && memcmp(key, "key-", 4) == 0) {
            memcpy(name, key + 4, 5);
            name[5] = '\0';
            k = atoi(name);
        }
    }
    if (k >= 0 && k < NKEYS)
        counts[k]++;
    return FLOE_OK;
}

TEST(the_disk_tier_agrees_with_a_model_across_spills)
{
    floe__kx *kx = open_kx(FLOE_KX_MIN_MEMORY);       /* spills every ~40,000 rows */
    model m = {{0}};
    uint32_t f = file(kx, "f");
    uint64_t pos = 0;
    char key[32];
    for (int step = 0; step < 400000; step++) {
        int k = (int)(next_rand() % NKEYS);
        key_name(k, key);
        if (next_rand() % 3 == 0 || m.count[k] == 0) {
            CHECK_EQ_INT(put(kx, key, f, pos++, (uint64_t)k), FLOE_OK);
            m.count[k]++;
        } else {
            floe__kx_loc loc;
            bool found = take(kx, key, (uint64_t)k, &loc);
            CHECK(found && loc.rowhash == (uint64_t)k);
            if (found)
                m.count[k]--;
        }
    }
    floe__kx_stats st;
    floe__kx_get_stats(kx, &st);
    CHECK(st.spills >= 3);
    uint64_t total = 0;
    for (int k = 0; k < NKEYS; k++)
        total += (uint64_t)m.count[k];
    CHECK_EQ_INT(st.keys, total);
    int seen[NKEYS] = {0};
    CHECK_EQ_INT(floe__kx_each(kx, count_rows, seen, NULL), FLOE_OK);
    int wrong = 0;
    for (int k = 0; k < NKEYS; k++)
        wrong += seen[k] != m.count[k];
    CHECK_EQ_INT(wrong, 0);
    for (int k = 0; k < NKEYS; k++) {                 /* and every row can be taken back */
        key_name(k, key);
        floe__kx_loc loc;
        for (int n = 0; n < m.count[k]; n++)
            CHECK(take(kx, key, 0, &loc));
        CHECK(!take(kx, key, 0, &loc));
    }
    floe__kx_free(kx);
}

/* Keys for the bulk builder: "k" and 6 digits, every fourth padded past
 * what an entry holds inline. */
static size_t bulk_key(int k, char *out)
{
    return (size_t)snprintf(out, 48, "k%06d%s", k, k % 4 ? "" : "-padded-past-sixteen-bytes");
}

static int count_bulk(void *ctx, const uint8_t *key, size_t len, floe__kx_loc loc,
                      floe_error *err)
{
    (void)err;
    int *counts = ctx;
    char digits[7] = {0};
    if (len >= 7 && key[0] == 'k')
        memcpy(digits, key + 1, 6);
    int k = atoi(digits);
    if (k >= 0 && k < NKEYS && loc.rowhash == (uint64_t)k)
        counts[k]++;
    return FLOE_OK;
}

TEST(a_bulk_build_in_sorted_runs_holds_every_row)
{
    floe__kx *kx = open_kx(FLOE_KX_MIN_MEMORY);       /* a chunk holds ~40,000 rows */
    floe__kx_builder *b = NULL;
    CHECK_EQ_INT(floe__kx_builder_new(kx, &b, NULL), FLOE_OK);
    uint32_t f[2] = {file(kx, "f0"), file(kx, "f1")};
    int want[NKEYS] = {0};
    char key[48];
    for (int i = 0; i < 150000; i++) {                /* several runs and a last chunk */
        int k = (int)(next_rand() % NKEYS);
        size_t len = bulk_key(k, key);
        floe__kx_loc loc = {f[i % 2], (uint64_t)i, (uint64_t)k};
        CHECK_EQ_INT(floe__kx_builder_add(b, (const uint8_t *)key, len, loc, NULL), FLOE_OK);
        want[k]++;
    }
    CHECK_EQ_INT(floe__kx_builder_finish(b, NULL), FLOE_OK);
    int seen[NKEYS] = {0}, wrong = 0;
    CHECK_EQ_INT(floe__kx_each(kx, count_bulk, seen, NULL), FLOE_OK);
    for (int k = 0; k < NKEYS; k++)
        wrong += seen[k] != want[k];
    CHECK_EQ_INT(wrong, 0);
    for (int k = 0; k < NKEYS; k += 7) {              /* found by key, each row once */
        size_t len = bulk_key(k, key);
        floe__kx_loc loc;
        bool found = true;
        int n = 0;
        while (found) {
            CHECK_EQ_INT(floe__kx_take(kx, (const uint8_t *)key, len, (uint64_t)k, &found, &loc,
                                       NULL), FLOE_OK);
            n += found;
            CHECK(!found || loc.rowhash == (uint64_t)k);
        }
        CHECK_EQ_INT(n, want[k]);
    }
    floe__kx_free(kx);
}

TEST(a_huge_key_fits)
{
    floe__kx *kx = open_kx(0);
    size_t n = (size_t)3 << 20;                       /* a whole-row key of 3 MiB */
    uint8_t *big = malloc(n);
    memset(big, 'z', n);
    floe__kx_loc loc = {file(kx, "f"), 7, 9}, got;
    floe_error *e = floe_error_new();
    CHECK_EQ_INT(floe__kx_insert(kx, big, n, loc, e), FLOE_OK);
    if (floe_error_code(e))
        fprintf(stderr, "%s\n", floe_error_message(e));
    floe_error_free(e);
    bool found = false;
    CHECK_EQ_INT(floe__kx_take(kx, big, n, 9, &found, &got, NULL), FLOE_OK);
    CHECK(found && got.pos == 7);
    free(big);
    floe__kx_free(kx);
}

TEST(memory_per_key)
{
    floe__kx *kx = open_kx((size_t)1 << 30);
    uint32_t f = file(kx, "f");
    const uint32_t n = 500000;
    char key[16];
    for (uint32_t i = 0; i < n; i++) {
        snprintf(key, sizeof key, "k%010u", i);         /* 11 bytes */
        CHECK_EQ_INT(put(kx, key, f, i, i), FLOE_OK);
    }
    floe__kx_stats st;
    floe__kx_get_stats(kx, &st);
    CHECK_EQ_INT(st.spills, 0);
    CHECK(st.memory_bytes <= (uint64_t)n * (64 + 11));    /* at most 64 bytes plus the key */
    floe__kx_free(kx);
}

/* ---- durability ------------------------------------------------------------------------ */

static char tmp_root[256];

static floe__kx_store *open_store(void)
{
    floe__kx_store *st = NULL;
    CHECK_EQ_INT(floe__kx_store_open(tmp_root, "9c12d441-03fe-4693-9a96-a0705ddf69c1",
                                     "shop.orders/v 1", 7, &st, NULL), FLOE_OK);
    return st;
}

/* Batch `b` of the test: inserts key b*10..b*10+9 into file "f<b>", removes
 * the keys of batch b-1 it names. */
static void fill_batch(floe__kx *kx, floe__kx_log *l, int b)
{
    char key[16], path[16];
    snprintf(path, sizeof path, "f%d", b);
    uint32_t id = file(kx, path);
    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "k%d", b * 10 + i);
        CHECK_EQ_INT(put(kx, key, id, (uint64_t)i, (uint64_t)b), FLOE_OK);
        CHECK_EQ_INT(floe__kx_log_insert(l, (const uint8_t *)key, strlen(key), path, (uint64_t)i,
                                         (uint64_t)b, NULL), FLOE_OK);
    }
    if (b > 0) {
        snprintf(key, sizeof key, "k%d", (b - 1) * 10);
        snprintf(path, sizeof path, "f%d", b - 1);
        floe__kx_loc loc;
        CHECK(take(kx, key, 0, &loc));
        CHECK_EQ_INT(floe__kx_log_remove(l, (const uint8_t *)key, strlen(key), path, 0, NULL),
                     FLOE_OK);
    }
}

static uint64_t keys_of(floe__kx *kx)
{
    floe__kx_stats st;
    floe__kx_get_stats(kx, &st);
    return st.keys;
}

/* Apply the logged attempts with upper <= upto (the ones the table shows
 * landed; in a sink their tokens say so).  Returns how many. */
static size_t replay_upto(floe__kx_store *st, floe__kx *kx, uint64_t upto)
{
    floe__kx_logged *v = NULL;
    size_t n = 0, applied = 0;
    CHECK_EQ_INT(floe__kx_store_list(st, &v, &n, NULL), FLOE_OK);
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ_INT(v[i].token, 1000 + v[i].upper);
        if (v[i].upper_empty || v[i].upper > upto)
            continue;
        floe__kx_log l;
        floe__kx_log_init(&l);
        bool ok = false;
        CHECK_EQ_INT(floe__kx_store_read(st, v[i].off, &l, &ok, NULL), FLOE_OK);
        CHECK(ok);
        CHECK_EQ_INT(floe__kx_log_apply(&l, kx, NULL), FLOE_OK);
        applied++;
        floe__kx_log_free(&l);
    }
    floe__free(v);
    return applied;
}

TEST(a_restart_has_the_index_of_the_last_commit)
{
    floe__kx_store *st = open_store();
    floe__kx_store *again = NULL;
    CHECK_EQ_INT(floe__kx_store_open(tmp_root, "9c12d441-03fe-4693-9a96-a0705ddf69c1",
                                     "shop.orders/v 1", 7, &again, NULL), FLOE_ESTATE);   /* locked */
    floe__kx *kx = open_kx(0);
    for (int b = 0; b < 4; b++) {
        floe__kx_log l;
        floe__kx_log_init(&l);
        fill_batch(kx, &l, b);
        CHECK_EQ_INT(floe__kx_store_log(st, &l, 1000 + (uint64_t)(b + 1) * 100, false,
                                        (uint64_t)(b + 1) * 100, NULL), FLOE_OK);
        floe__kx_log_free(&l);
        if (b == 1) {
            floe__kx_mark m = {false, 200, 42};
            CHECK_EQ_INT(floe__kx_store_checkpoint(st, kx, m, NULL, NULL, NULL), FLOE_OK);
            CHECK_EQ_INT(floe__kx_store_log_bytes(st), 0);
        }
    }
    CHECK_EQ_INT(keys_of(kx), 37);
    floe__kx_free(kx);
    floe__kx_store_free(st);
    /* the table says batch 3 (upper 300) landed, batch 4 did not */
    st = open_store();
    kx = open_kx(0);
    bool have = false;
    floe__kx_mark at;
    char why[128];
    CHECK_EQ_INT(floe__kx_store_load(st, kx, &have, &at, why, sizeof why, NULL), FLOE_OK);
    CHECK(have && at.frontier == 200 && at.snapshot_id == 42);
    CHECK_EQ_INT(keys_of(kx), 19);
    CHECK_EQ_INT(replay_upto(st, kx, 300), 1);
    CHECK_EQ_INT(keys_of(kx), 28);
    floe__kx_loc loc;
    CHECK(!take(kx, "k10", 0, &loc));                  /* the third batch removed it */
    CHECK(take(kx, "k29", 2, &loc) && loc.pos == 9 && loc.rowhash == 2 &&
          strcmp(floe__kx_file_path(kx, loc.file), "f2") == 0);
    CHECK(!take(kx, "k30", 0, &loc));                  /* batch 4 never landed */
    uint64_t logged = floe__kx_store_log_bytes(st);      /* batches 3 and 4 */
    CHECK(logged > 0);
    floe__kx_free(kx);
    floe__kx_store_free(st);
    /* a torn tail is where the log ends */
    char path[400];
    snprintf(path, sizeof path, "%s/9c12d441-03fe-4693-9a96-a0705ddf69c1-shop.orders%%2Fv%%201/log",
             tmp_root);
    CHECK(truncate(path, (off_t)logged - 3) == 0);
    st = open_store();
    kx = open_kx(0);
    CHECK_EQ_INT(floe__kx_store_load(st, kx, &have, &at, why, sizeof why, NULL), FLOE_OK);
    CHECK_EQ_INT(replay_upto(st, kx, UINT64_MAX), 1);     /* batch 4's record is torn */
    CHECK(at.frontier == 200);
    CHECK(floe__kx_store_log_bytes(st) > 0 && floe__kx_store_log_bytes(st) < logged - 3);
    CHECK_EQ_INT(keys_of(kx), 28);
    floe__kx_free(kx);
    floe__kx_store_free(st);
}

static int put_taken(void *ctx, floe__kx_visit_fn emit, void *emit_ctx, floe_error *err)
{
    floe__kx *kx = ctx;
    uint32_t id;
    CHECK(floe__kx_file_find(kx, "f0", &id));
    return emit(emit_ctx, (const uint8_t *)"taken", 5, (floe__kx_loc){id, 77, 5}, err);
}

TEST(a_checkpoint_holds_what_the_table_holds)
{
    floe__kx_store *st = NULL;
    CHECK_EQ_INT(floe__kx_store_open(tmp_root, "u3", "s", 7, &st, NULL), FLOE_OK);
    floe__kx *kx = open_kx(0);
    floe__kx_log l;
    floe__kx_log_init(&l);
    fill_batch(kx, &l, 0);                       /* 10 rows in f0, committed */
    floe__kx_log_free(&l);
    uint32_t pending = file(kx, "pending");      /* a batch not committed yet */
    floe__kx_file_set_committed(kx, pending, false);
    CHECK(!floe__kx_file_committed(kx, pending) && floe__kx_file_live(kx, pending));
    CHECK_EQ_INT(floe__kx_insert(kx, (const uint8_t *)"new", 3, (floe__kx_loc){pending, 0, 1},
                                 NULL), FLOE_OK);
    floe__kx_mark m = {false, 7, 1};
    CHECK_EQ_INT(floe__kx_store_checkpoint(st, kx, m, put_taken, kx, NULL), FLOE_OK);
    floe__kx_free(kx);
    kx = open_kx(0);
    bool have = false;
    floe__kx_mark at;
    char why[128];
    CHECK_EQ_INT(floe__kx_store_load(st, kx, &have, &at, why, sizeof why, NULL), FLOE_OK);
    CHECK(have);
    CHECK_EQ_INT(keys_of(kx), 11);               /* f0's ten and the taken row */
    floe__kx_loc loc;
    CHECK(!take(kx, "new", 0, &loc));
    CHECK(take(kx, "taken", 0, &loc) && loc.pos == 77 &&
          strcmp(floe__kx_file_path(kx, loc.file), "f0") == 0);
    floe__kx_free(kx);
    floe__kx_store_free(st);
}

/* Batch 0 (and a retired file) written as st's checkpoint at mark m; the
 * file opened for damaging, NULL when that failed (a failed check). */
static FILE *checkpoint_of_batch0(floe__kx_store *st, floe__kx_mark m)
{
    floe__kx *kx = open_kx(0);
    floe__kx_log l;
    floe__kx_log_init(&l);
    fill_batch(kx, &l, 0);
    floe__kx_log_free(&l);
    floe__kx_retire(kx, file(kx, "gone"));
    CHECK_EQ_INT(floe__kx_store_checkpoint(st, kx, m, NULL, NULL, NULL), FLOE_OK);
    floe__kx_free(kx);
    char path[400];
    snprintf(path, sizeof path, "%s/checkpoint", floe__kx_store_path(st));
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    return f;
}

TEST(a_damaged_checkpoint_is_not_used)
{
    floe__kx_store *st = NULL;
    CHECK_EQ_INT(floe__kx_store_open(tmp_root, "u2", "s", 7, &st, NULL), FLOE_OK);
    FILE *f = checkpoint_of_batch0(st, (floe__kx_mark){false, 7, 1});
    if (!f)
        return;
    fseek(f, 60, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 60, SEEK_SET);
    fputc(c ^ 0x40, f);
    fclose(f);
    floe__kx *kx = open_kx(0);
    bool have = true;
    floe__kx_mark at;
    char why[128];
    CHECK_EQ_INT(floe__kx_store_load(st, kx, &have, &at, why, sizeof why, NULL), FLOE_OK);
    CHECK(!have && strstr(why, "unusable") != NULL);
    floe__kx_free(kx);
    floe__kx_store_free(st);
}

/* The trailer tells the mark and entry count before a load; an entry
 * whose position is out of range makes the checkpoint unusable (a rebuild),
 * not an error that fails the start. */
TEST(a_checkpoint_is_peeked_and_a_wild_position_is_unusable)
{
    floe__kx_store *st = NULL;
    CHECK_EQ_INT(floe__kx_store_open(tmp_root, "u4", "s", 7, &st, NULL), FLOE_OK);
    bool have = true;
    floe__kx_mark at;
    uint64_t entries = 0;
    CHECK_EQ_INT(floe__kx_store_peek(st, &have, &at, &entries, NULL), FLOE_OK);
    CHECK(!have);                                        /* none yet */
    floe__kx *kx = open_kx(0);
    uint32_t f = file(kx, "f0");
    floe__kx_ckpt *c = NULL;
    CHECK_EQ_INT(floe__kx_ckpt_begin(st, &c, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__kx_ckpt_add(c, (const uint8_t *)"k1", 2, (floe__kx_loc){f, 1, 1}, NULL),
                 FLOE_OK);
    CHECK_EQ_INT(floe__kx_ckpt_add(c, (const uint8_t *)"k2", 2,
                                   (floe__kx_loc){f, (uint64_t)1 << 50, 1}, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__kx_ckpt_finish(c, kx, (floe__kx_mark){false, 7, 99}, NULL), FLOE_OK);
    floe__kx_free(kx);
    CHECK_EQ_INT(floe__kx_store_peek(st, &have, &at, &entries, NULL), FLOE_OK);
    CHECK(have && at.snapshot_id == 99 && at.frontier == 7 && !at.empty_frontier);
    CHECK_EQ_INT(entries, 2);
    kx = open_kx(0);
    char why[128];
    CHECK_EQ_INT(floe__kx_store_load(st, kx, &have, &at, why, sizeof why, NULL), FLOE_OK);
    CHECK(!have && strstr(why, "unusable (entry)") != NULL);
    floe__kx_free(kx);
    floe__kx_store_free(st);
}

static int stream_entry(void *ctx, const uint8_t *key, size_t len, floe__kx_loc loc,
                        floe_error *err)
{
    return floe__kx_ckpt_add(ctx, key, len, loc, err);
}

/* A checkpoint streamed entry by entry (a bulk copy's) loads as the index
 * it was streamed from; one abandoned leaves the checkpoint before it, and
 * only one is written at a time. */
TEST(a_streamed_checkpoint_loads_as_the_index)
{
    floe__kx_store *st = NULL;
    CHECK_EQ_INT(floe__kx_store_open(tmp_root, "u5", "s", 7, &st, NULL), FLOE_OK);
    floe__kx *kx = open_kx(0);
    floe__kx_log l;
    floe__kx_log_init(&l);
    for (int b = 0; b < 3; b++)
        fill_batch(kx, &l, b);                   /* 28 rows live in f0..f2 */
    floe__kx_log_free(&l);
    char big[300];                               /* a key past a one-byte length */
    memset(big, 'x', sizeof big);
    CHECK_EQ_INT(floe__kx_insert(kx, (const uint8_t *)big, sizeof big,
                                 (floe__kx_loc){file(kx, "f1"), 123456789, 77}, NULL), FLOE_OK);
    floe__kx_ckpt *c = NULL, *second = NULL;
    CHECK_EQ_INT(floe__kx_ckpt_begin(st, &c, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__kx_ckpt_begin(st, &second, NULL), FLOE_EINTERNAL);
    CHECK_EQ_INT(floe__kx_each(kx, stream_entry, c, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__kx_ckpt_entries(c), 29);
    CHECK_EQ_INT(floe__kx_ckpt_finish(c, kx, (floe__kx_mark){false, 30, 5}, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__kx_ckpt_begin(st, &c, NULL), FLOE_OK);     /* abandoned */
    CHECK_EQ_INT(floe__kx_ckpt_add(c, (const uint8_t *)"k0", 2, (floe__kx_loc){0, 0, 0}, NULL),
                 FLOE_OK);
    floe__kx_ckpt_abort(c);
    floe__kx_free(kx);
    kx = open_kx(0);
    bool have = false;
    floe__kx_mark at;
    char why[128];
    CHECK_EQ_INT(floe__kx_store_load(st, kx, &have, &at, why, sizeof why, NULL), FLOE_OK);
    CHECK(have && at.frontier == 30 && at.snapshot_id == 5);
    CHECK_EQ_INT(keys_of(kx), 29);
    floe__kx_loc loc;
    CHECK(take(kx, "k29", 2, &loc) && loc.pos == 9 && loc.rowhash == 2 &&
          strcmp(floe__kx_file_path(kx, loc.file), "f2") == 0);
    bool found = false;
    CHECK_EQ_INT(floe__kx_take(kx, (const uint8_t *)big, sizeof big, 77, &found, &loc, NULL),
                 FLOE_OK);
    CHECK(found && loc.pos == 123456789 && strcmp(floe__kx_file_path(kx, loc.file), "f1") == 0);
    CHECK(!take(kx, "k0", 0, &loc));             /* the second batch removed it */
    floe__kx_free(kx);
    floe__kx_store_free(st);
}

/* A checkpoint of more rows than the memory tier holds loads through a
 * builder (sorted runs merged once, no spill): every row of its live
 * files, none of a retired one's, and the index takes changes after it as
 * any other. */
TEST(a_checkpoint_past_the_memory_tier_loads_in_sorted_runs)
{
    floe__kx_store *st = NULL;
    CHECK_EQ_INT(floe__kx_store_open(tmp_root, "u6", "s", 7, &st, NULL), FLOE_OK);
    floe__kx *kx = open_kx(0);
    uint32_t f[3] = {file(kx, "f0"), file(kx, "f1"), file(kx, "f2")};
    floe__kx_ckpt *c = NULL;
    CHECK_EQ_INT(floe__kx_ckpt_begin(st, &c, NULL), FLOE_OK);
    static int want[NKEYS], seen[NKEYS];
    memset(want, 0, sizeof want);
    memset(seen, 0, sizeof seen);
    char key[48];
    for (int i = 0; i < 150000; i++) {
        int k = (int)(next_rand() % NKEYS);
        size_t len = bulk_key(k, key);
        floe__kx_loc loc = {f[i % 3], (uint64_t)i, (uint64_t)k};
        CHECK_EQ_INT(floe__kx_ckpt_add(c, (const uint8_t *)key, len, loc, NULL), FLOE_OK);
        want[k] += i % 3 != 2;
    }
    floe__kx_retire(kx, f[2]);                   /* rewritten before the mark */
    CHECK_EQ_INT(floe__kx_ckpt_finish(c, kx, (floe__kx_mark){false, 40, 6}, NULL), FLOE_OK);
    floe__kx_free(kx);
    kx = open_kx(FLOE_KX_MIN_MEMORY);            /* holds ~40,000 rows */
    CHECK(floe__kx_build_pays(kx, 150000) && !floe__kx_build_pays(kx, 1000));
    bool have = false;
    floe__kx_mark at;
    char why[128];
    CHECK_EQ_INT(floe__kx_store_load(st, kx, &have, &at, why, sizeof why, NULL), FLOE_OK);
    CHECK(have && at.frontier == 40 && at.snapshot_id == 6);
    floe__kx_stats sts;
    floe__kx_get_stats(kx, &sts);
    CHECK_EQ_INT(sts.keys, 100000);
    CHECK_EQ_INT(sts.disk_entries, 100000);
    CHECK_EQ_INT(sts.spills, 0);
    CHECK_EQ_INT(floe__kx_each(kx, count_bulk, seen, NULL), FLOE_OK);
    int wrong = 0;
    for (int k = 0; k < NKEYS; k++)
        wrong += seen[k] != want[k];
    CHECK_EQ_INT(wrong, 0);
    uint32_t id;
    CHECK(floe__kx_file_find(kx, "f1", &id) && !floe__kx_file_find(kx, "f2", &id));
    size_t len = bulk_key(12, key);
    floe__kx_loc loc = {id, 999999, 12}, got;
    CHECK_EQ_INT(floe__kx_insert(kx, (const uint8_t *)key, len, loc, NULL), FLOE_OK);
    int n = 0;
    bool found = true;
    while (found) {
        CHECK_EQ_INT(floe__kx_take(kx, (const uint8_t *)key, len, 12, &found, &got, NULL),
                     FLOE_OK);
        n += found;
    }
    CHECK_EQ_INT(n, want[12] + 1);
    floe__kx_free(kx);
    floe__kx_store_free(st);
}

/* ---- a compaction's moves (moves.c) and re-pointing rows ---------------------------------- */

/* Old file A (10 rows, rows 2 and 5 deleted when compacted) and B (4 rows,
 * row 0 deleted) rewritten into X (5 rows) and Y (6 rows). */
typedef struct compacted {
    floe__posbitmap skipped[2];
    uint64_t first_out[2];
    floe__compact_map map;
    floe__content_file out[2];
    floe__content_list files;
    const char *old[2];
    floe__moves *moves;              /* a registry, empty */
} compacted;

static void compacted_init(compacted *c)
{
    memset(c, 0, sizeof *c);
    CHECK_EQ_INT(floe__posbitmap_add(&c->skipped[0], 2, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__posbitmap_add(&c->skipped[0], 5, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__posbitmap_add(&c->skipped[1], 0, NULL), FLOE_OK);
    c->first_out[1] = 8;
    c->map = (floe__compact_map){2, c->first_out, c->skipped, NULL, NULL};
    c->out[0].path = "s3://b/X.parquet";
    c->out[0].metrics.record_count = 5;
    c->out[1].path = "s3://b/Y.parquet";
    c->out[1].metrics.record_count = 6;
    c->files = (floe__content_list){c->out, 2, 2};
    c->old[0] = "s3://b/A.parquet";
    c->old[1] = "s3://b/B.parquet";
    CHECK_EQ_INT(floe__moves_new(&c->moves, NULL), FLOE_OK);
}

static void compacted_clear(compacted *c)
{
    floe__moves_free(c->moves);
    floe__posbitmap_clear(&c->skipped[0]);
    floe__posbitmap_clear(&c->skipped[1]);
}

/* The compaction landed as group `id`: its moves into the registry. */
static void landed(compacted *c, const char *id)
{
    floe__compact_moved mv = {id, c->old, &c->map, &c->files};
    floe__moves_put(c->moves, &mv);
}

static bool where(const floe__moved *m, size_t k, uint64_t pos, size_t want_out,
                  uint64_t want_at)
{
    size_t out = 99;
    uint64_t at = 99;
    return floe__moved_where(m, k, pos, &out, &at) && out == want_out && at == want_at;
}

TEST(a_compactions_moves_say_where_each_row_went)
{
    compacted c;
    compacted_init(&c);
    landed(&c, "g1");
    CHECK(floe__moves_take(c.moves, "g2") == NULL);
    floe__moved *m = floe__moves_take(c.moves, "g1");
    CHECK(m != NULL && floe__moves_take(c.moves, "g1") == NULL);   /* taken once */
    size_t out;
    uint64_t at;
    CHECK(where(m, 0, 0, 0, 0) && where(m, 0, 1, 0, 1) && where(m, 0, 3, 0, 2));
    CHECK(!floe__moved_where(m, 0, 2, &out, &at) && !floe__moved_where(m, 0, 5, &out, &at));
    CHECK(where(m, 0, 6, 0, 4) && where(m, 0, 7, 1, 0) && where(m, 0, 9, 1, 2));
    CHECK(!floe__moved_where(m, 1, 0, &out, &at));
    CHECK(where(m, 1, 1, 1, 3) && where(m, 1, 3, 1, 5));
    floe__moved_free(m);
    /* the registry keeps the latest few */
    char id[16];
    for (int i = 0; i < 40; i++) {
        snprintf(id, sizeof id, "m%d", i);
        landed(&c, id);
    }
    CHECK(floe__moves_take(c.moves, "m0") == NULL);
    m = floe__moves_take(c.moves, "m39");
    CHECK(m != NULL);
    floe__moved_free(m);
    compacted_clear(&c);
}

typedef struct repointing {
    const floe__moved *m;
    uint32_t a, b, x, y;
} repointing;

static floe__kx_move repoint_row(void *ctx, floe__kx_loc *loc)
{
    repointing *p = ctx;
    size_t out;
    uint64_t at;
    if (loc->file != p->a && loc->file != p->b)
        return FLOE_KX_STAYS;
    if (!floe__moved_where(p->m, loc->file == p->a ? 0 : 1, loc->pos, &out, &at))
        return FLOE_KX_GONE;
    loc->file = out == 0 ? p->x : p->y;
    loc->pos = at;
    return FLOE_KX_MOVED;
}

TEST(rows_follow_a_compaction_without_reading_it)
{
    compacted c;
    compacted_init(&c);
    landed(&c, "g");
    floe__moved *m = floe__moves_take(c.moves, "g");
    floe__kx *kx = open_kx(0);
    repointing p = {m, file(kx, c.old[0]), file(kx, c.old[1]), 0, 0};
    uint32_t other = file(kx, "s3://b/C.parquet");
    char key[16];
    for (uint64_t i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "a%d", (int)i);
        CHECK_EQ_INT(put(kx, key, p.a, i, 100 + i), FLOE_OK);
    }
    for (uint64_t i = 0; i < 4; i++) {
        snprintf(key, sizeof key, "b%d", (int)i);
        CHECK_EQ_INT(put(kx, key, p.b, i, 200 + i), FLOE_OK);
    }
    CHECK_EQ_INT(put(kx, "c", other, 7, 300), FLOE_OK);
    CHECK(floe__kx_in_memory(kx));
    p.x = file(kx, c.out[0].path);
    p.y = file(kx, c.out[1].path);
    floe__kx_repoint(kx, repoint_row, &p);
    floe__kx_stats st;
    floe__kx_get_stats(kx, &st);
    CHECK_EQ_INT(st.keys, 15 - 3);                      /* A's rows 2 and 5, B's row 0 */
    floe__kx_loc loc;
    CHECK(!take(kx, "a2", 0, &loc) && !take(kx, "a5", 0, &loc) && !take(kx, "b0", 0, &loc));
    CHECK(take(kx, "a3", 0, &loc) && loc.file == p.x && loc.pos == 2 && loc.rowhash == 103);
    CHECK(take(kx, "a9", 0, &loc) && loc.file == p.y && loc.pos == 2 && loc.rowhash == 109);
    CHECK(take(kx, "b3", 0, &loc) && loc.file == p.y && loc.pos == 5 && loc.rowhash == 203);
    CHECK(take(kx, "c", 0, &loc) && loc.file == other && loc.pos == 7);
    floe__kx_free(kx);
    floe__moved_free(m);
    compacted_clear(&c);
}

/* A batch's log past its bound drops its operations and says so (the
 * keeper then checkpoints instead of logging); appending it passes that on. */
TEST(a_batch_log_past_its_bound_is_dropped)
{
    floe__kx_log l, all;
    floe__kx_log_init(&l);
    floe__kx_log_init(&all);
    l.max = 1000;
    uint8_t key[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int i = 0;
    for (; i < 1000 && !l.dropped; i++)
        CHECK_EQ_INT(floe__kx_log_insert(&l, key, sizeof key, "f.parquet", (uint64_t)i, 7, NULL),
                     FLOE_OK);
    CHECK(l.dropped && i == 31);                 /* 30 ops of 33 bytes fit in 1000 */
    CHECK(l.n_ops == 0 && l.ops.len == 0);
    CHECK_EQ_INT(floe__kx_log_remove(&l, key, sizeof key, "f.parquet", 1, NULL), FLOE_OK);
    CHECK(l.n_ops == 0);
    CHECK_EQ_INT(floe__kx_log_insert(&all, key, sizeof key, "g.parquet", 1, 7, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__kx_log_append(&all, &l, NULL), FLOE_OK);
    CHECK(all.dropped && all.n_ops == 0);
    floe__kx_log_free(&l);
    floe__kx_log_free(&all);
}

int main(void)
{
    unit_make_tmp(tmp_root, sizeof tmp_root, "keyindex");
    RUN(rows_of_a_key_are_a_multiset_and_prefer_the_matching_row);
    RUN(rows_of_a_retired_file_stop_counting);
    RUN(the_disk_tier_agrees_with_a_model_across_spills);
    RUN(a_bulk_build_in_sorted_runs_holds_every_row);
    RUN(a_huge_key_fits);
    RUN(memory_per_key);
    RUN(a_restart_has_the_index_of_the_last_commit);
    RUN(a_checkpoint_holds_what_the_table_holds);
    RUN(a_damaged_checkpoint_is_not_used);
    RUN(a_checkpoint_is_peeked_and_a_wild_position_is_unusable);
    RUN(a_streamed_checkpoint_loads_as_the_index);
    RUN(a_checkpoint_past_the_memory_tier_loads_in_sorted_runs);
    RUN(a_compactions_moves_say_where_each_row_went);
    RUN(rows_follow_a_compaction_without_reading_it);
    RUN(a_batch_log_past_its_bound_is_dropped);
    unit_remove_tmp(tmp_root);
    return UNIT_DONE();
}
