/* test_stash.c - the stash: consolidation order and sums, spilling runs,
 * updates that stay open across closes. */
#include <stdlib.h>

#include "sink/sink_internal.h"
#include "unit.h"

typedef struct model_upd {
    uint64_t time;
    int64_t diff;
    uint8_t key, row;
    bool done;
} model_upd;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int model_cmp(const void *a, const void *b)
{
    const model_upd *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* Expected consolidated output below f from the model, in (time,key,row) order. */
static size_t expect(model_upd *m, size_t n, uint64_t f, bool all, model_upd *out)
{
    size_t k = 0;
    for (uint64_t t = 0; t < 64; t++)
        for (int key = 0; key < 4; key++)
            for (int row = 0; row < 4; row++) {
                int64_t sum = 0;
                for (size_t i = 0; i < n; i++)
                    if (!m[i].done && m[i].time == t && m[i].key == key && m[i].row == row &&
                        (all || t < f))
                        sum += m[i].diff;
                if (sum != 0) {
                    model_upd e = {t, sum, (uint8_t)key, (uint8_t)row, false};
                    out[k++] = e;
                }
            }
    for (size_t i = 0; i < n; i++)
        if (all || m[i].time < f)
            m[i].done = true;
    return k;
}

static void round_trip(size_t limit, size_t pushes)
{
    floe__stash *st = NULL;
    CHECK_EQ_INT(floe__stash_new(NULL, limit, &st, NULL), FLOE_OK);
    model_upd *m = calloc(pushes, sizeof *m), *want = calloc(64 * 16, sizeof *want);
    size_t n = 0;
    uint64_t frontier = 0;
    for (int step = 0; step < 12; step++) {
        for (size_t i = 0; i < pushes / 12; i++) {
            model_upd u = {frontier + next_rand() % 8, (int64_t)(next_rand() % 5) - 2,
                           (uint8_t)(next_rand() % 4), (uint8_t)(next_rand() % 4), false};
            if (u.time >= 64)
                u.time = 63;
            uint8_t key[3] = {u.key, 7, 7}, row[40];
            memset(row, u.row, sizeof row);          /* long rows fill memory fast */
            CHECK_EQ_INT(floe__stash_push(st, u.time, u.diff, key, 1 + u.key % 3, row,
                                          10 + u.row, NULL), FLOE_OK);
            if (u.diff != 0)
                m[n++] = u;
        }
        bool all = step == 11;
        frontier += next_rand() % 6;
        floe__frontier f = all ? floe__frontier_closed() : floe__frontier_at(frontier);
        size_t k = expect(m, n, frontier, all, want);
        CHECK_EQ_INT(floe__stash_begin_close(st, f, NULL), FLOE_OK);
        size_t got_n = 0;
        floe__upd u;
        bool got = false;
        model_upd seen[64 * 16];
        while (floe__stash_next(st, &u, &got, NULL) == FLOE_OK && got && got_n < 64 * 16) {
            CHECK(u.key_len == 1u + u.key[0] % 3 && u.row_len == 10u + u.row[0]);
            model_upd m1 = {u.time, u.diff, u.key[0], u.row[0], false};
            /* One key's updates come in (time, row) order. */
            for (size_t j = 0; j < got_n; j++)
                if (seen[j].key == m1.key)
                    CHECK(seen[j].time < m1.time ||
                          (seen[j].time == m1.time && seen[j].row < m1.row));
            seen[got_n++] = m1;
        }
        CHECK_EQ_INT(got_n, k);
        qsort(seen, got_n, sizeof seen[0], model_cmp);     /* as a set: the model's */
        for (size_t j = 0; j < got_n && j < k; j++)
            CHECK(seen[j].time == want[j].time && seen[j].diff == want[j].diff &&
                  seen[j].key == want[j].key && seen[j].row == want[j].row);
        floe__stash_end_close(st);
    }
    floe__stash_stats stats;
    floe__stash_get_stats(st, &stats);
    CHECK_EQ_INT(stats.rows, 0);
    CHECK_EQ_INT(stats.runs, 0);
    if (limit && limit < 4096)
        CHECK(stats.spilled_rows > 0);
    floe__stash_free(st);
    free(m);
    free(want);
}

TEST(consolidates_in_memory) { round_trip(0, 600); }
TEST(consolidates_across_spilled_runs) { round_trip(2000, 600); }
TEST(many_tiny_runs) { round_trip(200, 240); }

TEST(open_updates_survive_closes)
{
    floe__stash *st = NULL;
    CHECK_EQ_INT(floe__stash_new(NULL, 0, &st, NULL), FLOE_OK);
    uint8_t r1[] = {1, 2, 3}, r2[] = {9};
    CHECK_EQ_INT(floe__stash_push(st, 10, 1, NULL, 0, r1, 3, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__stash_push(st, 5, 1, NULL, 0, r2, 1, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__stash_push(st, 5, -1, NULL, 0, r2, 1, NULL), FLOE_OK);  /* cancels */
    CHECK_EQ_INT(floe__stash_begin_close(st, floe__frontier_at(10), NULL), FLOE_OK);
    floe__upd u;
    bool got = true;
    CHECK_EQ_INT(floe__stash_next(st, &u, &got, NULL), FLOE_OK);
    CHECK(!got);
    floe__stash_end_close(st);
    CHECK_EQ_INT(floe__stash_begin_close(st, floe__frontier_at(11), NULL), FLOE_OK);
    CHECK_EQ_INT(floe__stash_next(st, &u, &got, NULL), FLOE_OK);
    CHECK(got && u.time == 10 && u.diff == 1 && u.row_len == 3 && memcmp(u.row, r1, 3) == 0);
    CHECK_EQ_INT(floe__stash_next(st, &u, &got, NULL), FLOE_OK);
    CHECK(!got);
    floe__stash_end_close(st);
    CHECK_EQ_INT(floe__stash_push(st, 3, 1, NULL, 0, r1, 3, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__stash_begin_close(st, floe__frontier_at(11), NULL), FLOE_OK);
    CHECK_EQ_INT(floe__stash_push(st, 3, 1, NULL, 0, r1, 3, NULL), FLOE_EINTERNAL);
    floe__stash_end_close(st);
    floe__stash_free(st);
}

int main(void)
{
    RUN(consolidates_in_memory);
    RUN(consolidates_across_spilled_runs);
    RUN(many_tiny_runs);
    RUN(open_updates_survive_closes);
    return UNIT_DONE();
}
