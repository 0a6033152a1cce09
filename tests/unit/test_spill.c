/* test_spill.c - streamed transactions on disk (mirror_spill.c): records
 * read back in order across flushes and stream segments, interleaved
 * transactions kept apart, subtransaction aborts, drops and the bytes
 * gauge, records bigger than the read buffer, a segment without its first;
 * and the filter of keys a streamed transaction touches once
 * (mirror_txn.c). */
#include <dirent.h>
#include <stdlib.h>

#include "mirror/mirror_internal.h"
#include "unit.h"

/* Record i of a transaction: "<kind>" then i as text, repeated to vary sizes. */
static size_t body_of(uint32_t xid, uint32_t i, uint8_t *out, size_t cap)
{
    int n = snprintf((char *)out, cap, "x%u:%u:", xid, i);
    size_t len = (size_t)n;
    for (uint32_t k = 0; k < i % 37 && len + 4 < cap; k++)
        out[len++] = (uint8_t)('a' + (i + k) % 26);
    return len;
}

/* Read every record of xid; check each against body_of, skipping the
 * subxids in `gone`; returns how many were not aborted. */
static uint32_t read_back(floe__spill *s, uint32_t xid, uint32_t n, uint32_t gone_from,
                          uint32_t gone_to)
{
    floe__spill_reader *r = NULL;
    CHECK_EQ_INT(floe__spill_read(s, xid, &r, NULL), FLOE_OK);
    if (!r)
        return 0;
    uint32_t kept = 0, seen = 0;
    for (;;) {
        const uint8_t *msg;
        size_t len;
        uint32_t sub;
        bool aborted, end;
        CHECK_EQ_INT(floe__spill_next(r, &msg, &len, &sub, &aborted, &end, NULL), FLOE_OK);
        if (end)
            break;
        uint8_t want[128];
        size_t wl = body_of(xid, seen, want, sizeof want);
        CHECK_EQ_INT(msg[0], 'I');
        CHECK_EQ_INT(len, wl + 1);
        if (len == wl + 1)
            CHECK_MEM(msg + 1, want, wl);
        CHECK_EQ_INT(sub, xid + 1000 + seen / 100);
        bool should = sub >= xid + 1000 + gone_from && sub < xid + 1000 + gone_to;
        CHECK_EQ_INT(aborted, should);
        kept += !aborted;
        seen++;
    }
    CHECK_EQ_INT(seen, n);
    floe__spill_reader_free(r);
    return kept;
}

static size_t files_in(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

TEST(interleaved_transactions_read_back_in_order)
{
    char dir[256];
    unit_make_tmp(dir, sizeof dir, "spill");
    floe__spill *s = NULL;
    CHECK_EQ_INT(floe__spill_new(dir, &s, NULL), FLOE_OK);
    const uint32_t n = 60000;                   /* several flushes and read chunks */
    uint64_t bytes = 0;
    for (uint32_t seg = 0; seg < 6; seg++)
        for (uint32_t xid = 10; xid <= 20; xid += 10) {
            CHECK_EQ_INT(floe__spill_start(s, xid, seg == 0, NULL), FLOE_OK);
            for (uint32_t i = seg * n / 6; i < (seg + 1) * n / 6; i++) {
                uint8_t b[128];
                size_t len = body_of(xid, i, b, sizeof b);
                CHECK_EQ_INT(floe__spill_add(s, xid, xid + 1000 + i / 100, 'I', b, len, NULL),
                             FLOE_OK);
                bytes += 9 + len;
            }
            CHECK_EQ_INT(floe__spill_stop(s, xid, NULL), FLOE_OK);
        }
    CHECK_EQ_INT(floe__spill_bytes(s), bytes);
    CHECK_EQ_INT(floe__spill_count(s), 2);
    CHECK_EQ_INT(floe__spill_records(s, 10), n);
    CHECK_EQ_INT(files_in(dir), 0);             /* unnamed: nothing to leave behind */
    /* subtransactions 5..9 of xid 10 abort (one of them twice) */
    for (uint32_t k = 9; k >= 5; k--)
        CHECK_EQ_INT(floe__spill_abort_sub(s, 10, 10 + 1000 + k, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__spill_abort_sub(s, 10, 10 + 1000 + 7, NULL), FLOE_OK);
    CHECK_EQ_INT(read_back(s, 10, n, 5, 10), n - 500);
    CHECK_EQ_INT(read_back(s, 20, n, 0, 0), n);
    floe__spill_drop(s, 10);
    CHECK(!floe__spill_has(s, 10) && floe__spill_has(s, 20));
    CHECK(floe__spill_bytes(s) < bytes && floe__spill_bytes(s) > 0);
    floe__spill_drop(s, 20);
    CHECK_EQ_INT(floe__spill_bytes(s), 0);
    floe__spill_free(s);
    unit_remove_tmp(dir);
}

TEST(first_segment_restarts_and_later_needs_first)
{
    char dir[256];
    unit_make_tmp(dir, sizeof dir, "spill");
    floe__spill *s = NULL;
    CHECK_EQ_INT(floe__spill_new(dir, &s, NULL), FLOE_OK);
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(floe__spill_start(s, 7, false, err), FLOE_EINPUT);
    CHECK_EQ_INT(floe__spill_add(s, 7, 7, 'I', (const uint8_t *)"x", 1, err), FLOE_EINPUT);
    CHECK_EQ_INT(floe__spill_start(s, 7, true, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__spill_add(s, 7, 7, 'I', (const uint8_t *)"old", 3, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__spill_start(s, 7, true, NULL), FLOE_OK);   /* sent again: afresh */
    /* a record larger than the read buffer's chunk */
    size_t big = (size_t)3 << 20;
    uint8_t *b = malloc(big);
    for (size_t i = 0; i < big; i++)
        b[i] = (uint8_t)(i * 31);
    CHECK_EQ_INT(floe__spill_add(s, 7, 8, 'U', b, big, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__spill_add(s, 7, 7, 'D', (const uint8_t *)"end", 3, NULL), FLOE_OK);
    floe__spill_reader *r = NULL;
    CHECK_EQ_INT(floe__spill_read(s, 7, &r, NULL), FLOE_OK);
    const uint8_t *msg;
    size_t len;
    uint32_t sub;
    bool aborted, end;
    CHECK_EQ_INT(floe__spill_next(r, &msg, &len, &sub, &aborted, &end, NULL), FLOE_OK);
    CHECK(!end && msg[0] == 'U' && len == big + 1 && sub == 8 && !aborted);
    if (!end && len == big + 1)
        CHECK_MEM(msg + 1, b, big);
    CHECK_EQ_INT(floe__spill_next(r, &msg, &len, &sub, &aborted, &end, NULL), FLOE_OK);
    CHECK(!end && msg[0] == 'D' && len == 4);
    CHECK_EQ_INT(floe__spill_next(r, &msg, &len, &sub, &aborted, &end, NULL), FLOE_OK);
    CHECK(end);
    floe__spill_rewind(r);                       /* a second pass reads the same */
    CHECK_EQ_INT(floe__spill_next(r, &msg, &len, &sub, &aborted, &end, NULL), FLOE_OK);
    CHECK(!end && msg[0] == 'U');
    floe__spill_reader_free(r);
    CHECK_EQ_INT(floe__spill_read(s, 99, &r, err), FLOE_EINPUT);
    free(b);
    floe_error_free(err);
    floe__spill_free(s);
    unit_remove_tmp(dir);
}

/* ---- the filter of keys touched once ---------------------------------------------------------- */

static floe__pgo_column cols2[2] = {{true, "id", 23, -1}, {false, "v", 25, -1}};

static floe__pgo_msg relation(uint32_t relid, char ident)
{
    floe__pgo_msg m;
    memset(&m, 0, sizeof m);
    m.kind = 'R';
    m.relid = relid;
    m.replident = (uint8_t)ident;
    m.ncols = 2;
    m.cols = cols2;
    return m;
}

typedef struct change_buf {
    floe__pgo_value vals[4];
    char key[2][16];
} change_buf;

static floe__pgo_msg change(change_buf *cb, uint32_t relid, char kind, int old_key, int new_key)
{
    floe__pgo_msg m;
    memset(&m, 0, sizeof m);
    m.kind = kind;
    m.relid = relid;
    snprintf(cb->key[0], sizeof cb->key[0], "%d", old_key);
    snprintf(cb->key[1], sizeof cb->key[1], "%d", new_key);
    cb->vals[0] = (floe__pgo_value){'t', cb->key[0], (uint32_t)strlen(cb->key[0])};
    cb->vals[1] = (floe__pgo_value){'n', NULL, 0};
    cb->vals[2] = (floe__pgo_value){'t', cb->key[1], (uint32_t)strlen(cb->key[1])};
    cb->vals[3] = (floe__pgo_value){'t', "v", 1};
    if (old_key >= 0) {
        m.old_kind = 'K';
        m.old_tuple = (floe__pgo_tuple){2, cb->vals};
    }
    if (kind != 'D')
        m.new_tuple = (floe__pgo_tuple){2, cb->vals + 2};
    return m;
}

TEST(netfilter_finds_every_key_touched_twice)
{
    floe__netfilter *f = NULL;
    const int n = 200000;
    CHECK_EQ_INT(floe__netfilter_new(n + 10, (size_t)64 << 20, &f, NULL), FLOE_OK);
    change_buf cb;
    floe__pgo_msg r = relation(5, 'd');
    for (int pass = 1; pass <= 2; pass++) {
        floe__netfilter_relation(f, &r);
        int twice = 0, once = 0;
        for (int i = 0; i < n; i++) {
            floe__pgo_msg m = change(&cb, 5, 'I', -1, i);
            if (pass == 1)
                floe__netfilter_add(f, &m);
            else if (floe__netfilter_once(f, &m))
                once++;
            else
                twice++;
        }
        /* keys 7 and 11 again (an update, a delete), key 13 moved to -13 */
        floe__pgo_msg u = change(&cb, 5, 'U', -1, 7);
        floe__pgo_msg d = change(&cb, 5, 'D', 11, 0);
        if (pass == 1) {
            floe__netfilter_add(f, &u);
            floe__netfilter_add(f, &d);
            floe__pgo_msg k = change(&cb, 5, 'U', 13, 1000000013);
            floe__netfilter_add(f, &k);
            floe__netfilter_seal(f);
            continue;
        }
        CHECK(!floe__netfilter_once(f, &u));
        CHECK(!floe__netfilter_once(f, &d));
        floe__pgo_msg k = change(&cb, 5, 'U', 13, 1000000013);
        CHECK(!floe__netfilter_once(f, &k));
        floe__pgo_msg i7 = change(&cb, 5, 'I', -1, 7), i13 = change(&cb, 5, 'I', -1, 13);
        CHECK(!floe__netfilter_once(f, &i7) && !floe__netfilter_once(f, &i13));
        CHECK(twice >= 3 && twice < n / 50);    /* collisions stay rare */
        CHECK(once > n - n / 50);
    }
    floe__netfilter_free(f);
}

TEST(netfilter_says_not_sure_when_it_cannot_tell)
{
    change_buf cb;
    floe__netfilter *f = NULL;
    /* a change before its relation's Relation message; a FULL relation */
    CHECK_EQ_INT(floe__netfilter_new(100, 1 << 20, &f, NULL), FLOE_OK);
    floe__pgo_msg early = change(&cb, 6, 'I', -1, 1);
    floe__netfilter_add(f, &early);
    floe__pgo_msg r6 = relation(6, 'd'), r9 = relation(9, 'f');
    floe__netfilter_relation(f, &r6);
    floe__netfilter_relation(f, &r9);
    floe__pgo_msg full = change(&cb, 9, 'I', -1, 1), later = change(&cb, 6, 'I', -1, 2);
    floe__netfilter_add(f, &full);
    floe__netfilter_add(f, &later);
    floe__netfilter_seal(f);
    floe__netfilter_relation(f, &r6);
    floe__netfilter_relation(f, &r9);
    CHECK(!floe__netfilter_once(f, &later) && !floe__netfilter_once(f, &full));
    floe__netfilter_free(f);
    /* a TRUNCATE anywhere: not sure of anything */
    CHECK_EQ_INT(floe__netfilter_new(100, 1 << 20, &f, NULL), FLOE_OK);
    floe__netfilter_relation(f, &r6);
    floe__pgo_msg one = change(&cb, 6, 'I', -1, 3);
    floe__netfilter_add(f, &one);
    floe__netfilter_truncate(f);
    floe__netfilter_seal(f);
    floe__netfilter_relation(f, &r6);
    CHECK(!floe__netfilter_once(f, &one));
    floe__netfilter_free(f);
    /* without the truncate, the same key is once */
    CHECK_EQ_INT(floe__netfilter_new(100, 1 << 20, &f, NULL), FLOE_OK);
    floe__netfilter_relation(f, &r6);
    floe__netfilter_add(f, &one);
    floe__netfilter_seal(f);
    floe__netfilter_relation(f, &r6);
    CHECK(floe__netfilter_once(f, &one));
    floe__netfilter_free(f);
}

int main(void)
{
    RUN(interleaved_transactions_read_back_in_order);
    RUN(first_segment_restarts_and_later_needs_first);
    RUN(netfilter_finds_every_key_touched_twice);
    RUN(netfilter_says_not_sure_when_it_cannot_tell);
    return UNIT_DONE();
}
