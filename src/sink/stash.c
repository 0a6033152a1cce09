/*
 * stash.c - updates waiting for the frontier, consolidated when it passes.
 *
 * In memory: an array of floe__upd whose bytes live in an arena.  Past the
 * memory limit everything held is sorted by (time, key, row) and written as
 * a run to an anonymous temporary file (O_TMPFILE: nothing to clean up after
 * a crash).  Closing the interval below a frontier F sorts the in-memory
 * updates with time < F and merges them with the prefix of every run whose
 * times are < F (runs are sorted by time first, so that prefix is contiguous),
 * summing the diffs of equal (time, key, row) and dropping zero sums.
 * Updates at or above F stay: in memory they are compacted into a fresh
 * arena; in a run the read position simply stays where the prefix ended.
 *
 * Run record: u64 time, i64 diff, u32 key_len, u32 row_len, key, row.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "sink/sink_internal.h"

#define DEFAULT_LIMIT ((size_t)512 << 20)
#define RUN_BUF (1u << 20)
#define REC_HEADER 24

typedef struct run {
    int fd;
    uint8_t *buf;             /* read window */
    size_t len, pos;
    uint64_t remaining;       /* records not yet read */
    bool has_cur;
    floe__upd cur;            /* the current record, bytes in rec */
    floe__buf rec;
} run;

struct floe__stash {
    char *dir;
    size_t limit;
    floe__upd *v;
    size_t n, cap;
    floe__arena *arena;
    size_t bytes;             /* key+row bytes in memory */
    run **runs;
    size_t n_runs;
    uint64_t spilled_held;    /* records held in runs */
    uint64_t spilled_bytes;
    uint64_t spilled_total;
    /* closing */
    bool closing;
    floe__frontier f;
    size_t closed_n, closed_pos;
    floe__buf acc_bytes;      /* the accumulated record, when it came from a run */
};

static int cmp_bytes(const uint8_t *a, uint32_t na, const uint8_t *b, uint32_t nb)
{
    int c = memcmp(a, b, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

static int cmp_upd(const floe__upd *a, const floe__upd *b)
{
    if (a->time != b->time)
        return a->time < b->time ? -1 : 1;
    int c = cmp_bytes(a->key, a->key_len, b->key, b->key_len);
    return c ? c : cmp_bytes(a->row, a->row_len, b->row, b->row_len);
}

static int qsort_cmp(const void *a, const void *b) { return cmp_upd(a, b); }

int floe__stash_new(const char *spill_dir, size_t memory_limit, floe__stash **out,
                    floe_error *err)
{
    floe__stash *st = floe__calloc(1, sizeof *st);
    if (!st)
        return FLOE_OOM(err);
    const char *dir = spill_dir ? spill_dir : getenv("TMPDIR");
    st->dir = floe__strdup(dir && *dir ? dir : "/tmp");
    st->limit = memory_limit ? memory_limit : DEFAULT_LIMIT;
    st->arena = floe__arena_new(1 << 20);
    floe__buf_init(&st->acc_bytes, 0);
    if (!st->dir || !st->arena) {
        floe__stash_free(st);
        return FLOE_OOM(err);
    }
    *out = st;
    return FLOE_OK;
}

static void run_free(run *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    floe__free(r->buf);
    floe__buf_free(&r->rec);
    floe__free(r);
}

void floe__stash_free(floe__stash *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->n_runs; i++)
        run_free(st->runs[i]);
    floe__free(st->runs);
    floe__free(st->v);
    floe__arena_free(st->arena);
    floe__buf_free(&st->acc_bytes);
    floe__free(st->dir);
    floe__free(st);
}

/* ---- spilling ---------------------------------------------------------------- */

static int spill_records(int fd, const floe__upd *v, size_t n, floe_error *err)
{
    floe__buf out;
    floe__buf_init(&out, 0);
    int rc = FLOE_OK;
    for (size_t i = 0; i < n && rc == FLOE_OK; i++) {
        uint8_t h[REC_HEADER];
        floe__put_le64(h, v[i].time);
        floe__put_le64(h + 8, (uint64_t)v[i].diff);
        floe__put_le32(h + 16, v[i].key_len);
        floe__put_le32(h + 20, v[i].row_len);
        rc = floe__buf_append(&out, h, sizeof h, err);
        if (rc == FLOE_OK)
            rc = floe__buf_append(&out, v[i].key, v[i].key_len, err);
        if (rc == FLOE_OK)
            rc = floe__buf_append(&out, v[i].row, v[i].row_len, err);
        if (rc == FLOE_OK && (out.len >= RUN_BUF || i + 1 == n)) {
            rc = floe__write_all(fd, out.data, out.len, "a stash spill file", err);
            floe__buf_reset(&out);
        }
    }
    floe__buf_free(&out);
    return rc;
}

static int spill(floe__stash *st, floe_error *err)
{
    qsort(st->v, st->n, sizeof *st->v, qsort_cmp);
    run *r = floe__calloc(1, sizeof *r);
    if (!r)
        return FLOE_OOM(err);
    floe__buf_init(&r->rec, 0);
    r->fd = open(st->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    r->buf = floe__malloc(RUN_BUF);
    int rc = FLOE_OK;
    if (r->fd < 0)
        rc = floe__err_set(err, FLOE_EIO, "cannot create a spill file in %s: %s", st->dir,
                           strerror(errno));
    else if (!r->buf)
        rc = FLOE_OOM(err);
    if (rc == FLOE_OK)
        rc = spill_records(r->fd, st->v, st->n, err);
    if (rc == FLOE_OK && lseek(r->fd, 0, SEEK_SET) < 0)
        rc = floe__err_set(err, FLOE_EIO, "rewinding a spill file: %s", strerror(errno));
    run **runs = rc == FLOE_OK ? floe__realloc(st->runs, (st->n_runs + 1) * sizeof *runs) : NULL;
    if (rc == FLOE_OK && !runs)
        rc = FLOE_OOM(err);
    if (rc != FLOE_OK) {
        run_free(r);
        return rc;
    }
    r->remaining = st->n;
    st->runs = runs;
    st->runs[st->n_runs++] = r;
    st->spilled_held += st->n;
    st->spilled_bytes += st->bytes;
    st->spilled_total += st->n;
    st->n = 0;
    st->bytes = 0;
    floe__arena_reset(st->arena);
    return FLOE_OK;
}

/* ---- reading runs -------------------------------------------------------------- */

static int run_fill(run *r, size_t need, floe_error *err)
{
    while (r->len - r->pos < need) {
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->pos = 0;
        ssize_t got = read(r->fd, r->buf + r->len, RUN_BUF - r->len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return floe__err_set(err, FLOE_EIO, "reading a stash spill file: %s",
                                 got < 0 ? strerror(errno) : "truncated");
        r->len += (size_t)got;
    }
    return FLOE_OK;
}

static int run_take(run *r, void *dst, size_t n, floe_error *err)
{
    uint8_t *d = dst;
    while (n) {
        size_t chunk = n < RUN_BUF ? n : RUN_BUF;
        FLOE_FORWARD(run_fill(r, chunk, err));
        memcpy(d, r->buf + r->pos, chunk);
        r->pos += chunk;
        d += chunk;
        n -= chunk;
    }
    return FLOE_OK;
}

/* Load the next record of r into r->cur (has_cur false at the end). */
static int run_advance(run *r, floe_error *err)
{
    r->has_cur = false;
    if (r->remaining == 0)
        return FLOE_OK;
    uint8_t h[REC_HEADER];
    FLOE_FORWARD(run_take(r, h, sizeof h, err));
    uint32_t kl = floe__get_le32(h + 16), rl = floe__get_le32(h + 20);
    floe__buf_reset(&r->rec);
    FLOE_FORWARD(floe__buf_reserve(&r->rec, (size_t)kl + rl, err));
    FLOE_FORWARD(run_take(r, r->rec.data, (size_t)kl + rl, err));
    r->cur.time = floe__get_le64(h);
    r->cur.diff = (int64_t)floe__get_le64(h + 8);
    r->cur.key = r->rec.data;
    r->cur.key_len = kl;
    r->cur.row = r->rec.data + kl;
    r->cur.row_len = rl;
    r->remaining--;
    r->has_cur = true;
    return FLOE_OK;
}

/* ---- pushing -------------------------------------------------------------------- */

int floe__stash_push(floe__stash *st, uint64_t time, int64_t diff, const uint8_t *key,
                     uint32_t key_len, const uint8_t *row, uint32_t row_len, floe_error *err)
{
    FLOE_RETURN_IF(st->closing, err, FLOE_EINTERNAL, "stash push while closing an interval");
    if (diff == 0)
        return FLOE_OK;
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 1024;
        floe__upd *v = floe__realloc(st->v, cap * sizeof *v);
        if (!v)
            return FLOE_OOM(err);
        st->v = v;
        st->cap = cap;
    }
    uint8_t *bytes = floe__arena_alloc(st->arena, (size_t)key_len + row_len);
    if (!bytes)
        return FLOE_OOM(err);
    if (key_len)
        memcpy(bytes, key, key_len);
    if (row_len)
        memcpy(bytes + key_len, row, row_len);
    floe__upd *u = &st->v[st->n++];
    u->time = time;
    u->diff = diff;
    u->key = bytes;
    u->key_len = key_len;
    u->row = bytes + key_len;
    u->row_len = row_len;
    st->bytes += (size_t)key_len + row_len + sizeof *u;
    if (st->bytes > st->limit)
        return spill(st, err);
    return FLOE_OK;
}

/* ---- closing an interval ---------------------------------------------------------- */

/* Whether a and b belong to one group: the same key, or (no key: append
 * mode, or upsert keyed by the whole row) the same row.  A group holds one
 * key's updates at every time, so the writer sees an insertion before the
 * later retraction that cancels it, whatever the key. */
static bool same_group(const floe__upd *a, const floe__upd *b)
{
    if (a->key_len || b->key_len)
        return a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len) == 0;
    return a->row_len == b->row_len && memcmp(a->row, b->row, a->row_len) == 0;
}

static uint64_t group_hash(const floe__upd *u)
{
    if (u->key_len)
        return floe__hash64(u->key, u->key_len, 0);
    return floe__hash64(u->row, u->row_len, 0);
}

/* Reorder v[0..k) so groups are contiguous and each is sorted (see the
 * file comment).  Without memory for it, falls back to one full sort. */
static void group_closed(floe__upd *v, size_t k)
{
    if (k < 2)
        return;                                       /* nothing to group (v may be NULL) */
    size_t cap = 16;
    while (cap < 2 * k)
        cap *= 2;
    uint32_t *heads = floe__calloc(cap, sizeof *heads);   /* index + 1 of a group's last member */
    uint32_t *prev = floe__malloc(k * sizeof *prev);   /* chain to earlier members */
    floe__upd *out = floe__malloc(k * sizeof *out);
    if (!heads || !prev || !out || k >= UINT32_MAX) {
        qsort(v, k, sizeof *v, qsort_cmp);
        goto done;
    }
    for (size_t i = 0; i < k; i++) {
        size_t slot = group_hash(&v[i]) & (cap - 1);
        while (heads[slot] && !same_group(&v[heads[slot] - 1], &v[i]))
            slot = (slot + 1) & (cap - 1);
        prev[i] = heads[slot];                             /* 0: first of its group */
        heads[slot] = (uint32_t)(i + 1);
    }
    size_t n = 0;
    for (size_t s = 0; s < cap; s++) {
        if (!heads[s])
            continue;
        size_t start = n;
        for (uint32_t m = heads[s]; m; m = prev[m - 1])
            out[n++] = v[m - 1];
        if (n - start > 1)
            qsort(out + start, n - start, sizeof *out, qsort_cmp);
    }
    memcpy(v, out, k * sizeof *v);
done:
    floe__free(heads);
    floe__free(prev);
    floe__free(out);
}

int floe__stash_begin_close(floe__stash *st, floe__frontier f, floe_error *err)
{
    FLOE_RETURN_IF(st->closing, err, FLOE_EINTERNAL, "stash interval already being closed");
    size_t k = 0;                               /* closed updates to the front */
    for (size_t i = 0; i < st->n; i++) {
        if (floe__frontier_passed(f, st->v[i].time)) {
            floe__upd t = st->v[k];
            st->v[k++] = st->v[i];
            st->v[i] = t;
        }
    }
    if (st->n_runs == 0)
        group_closed(st->v, k);
    else
        qsort(st->v, k, sizeof *st->v, qsort_cmp);
    st->closed_n = k;
    st->closed_pos = 0;
    st->closing = true;
    st->f = f;
    for (size_t i = 0; i < st->n_runs; i++)
        if (!st->runs[i]->has_cur)
            FLOE_FORWARD(run_advance(st->runs[i], err));
    return FLOE_OK;
}

/* The smallest closed record among memory and runs: -1 for memory, the run
 * index, or -2 when none is left. */
static long pick(const floe__stash *st)
{
    const floe__upd *best = st->closed_pos < st->closed_n ? &st->v[st->closed_pos] : NULL;
    long who = best ? -1 : -2;
    for (size_t i = 0; i < st->n_runs; i++) {
        const run *r = st->runs[i];
        if (!r->has_cur || !floe__frontier_passed(st->f, r->cur.time))
            continue;
        if (!best || cmp_upd(&r->cur, best) < 0) {
            best = &r->cur;
            who = (long)i;
        }
    }
    return who;
}

static const floe__upd *source(floe__stash *st, long who)
{
    return who == -1 ? &st->v[st->closed_pos] : &st->runs[who]->cur;
}

static int consume(floe__stash *st, long who, floe_error *err)
{
    if (who == -1) {
        st->closed_pos++;
        return FLOE_OK;
    }
    run *r = st->runs[who];
    st->spilled_held--;
    st->spilled_bytes -= (size_t)r->cur.key_len + r->cur.row_len + sizeof(floe__upd);
    return run_advance(r, err);
}

/* Keep a run record's bytes while its run moves on. */
static int hold(floe__stash *st, floe__upd *u, floe_error *err)
{
    floe__buf_reset(&st->acc_bytes);
    FLOE_FORWARD(floe__buf_append(&st->acc_bytes, u->key, u->key_len, err));
    FLOE_FORWARD(floe__buf_append(&st->acc_bytes, u->row, u->row_len, err));
    u->key = st->acc_bytes.data;
    u->row = st->acc_bytes.data + u->key_len;
    return FLOE_OK;
}

static int too_many(const floe__upd *u, floe_error *err)
{
    return floe__err_set(err, FLOE_ELIMIT,
                         "the updates of one row at time %llu sum to a multiplicity beyond %d "
                         "(FLOE_SINK_MAX_DIFF)", (unsigned long long)u->time, FLOE_SINK_MAX_DIFF);
}

/* Checked: diffs of one (time, key, row) never wrap. */
static int add_diff(floe__upd *u, int64_t d, floe_error *err)
{
    if (__builtin_add_overflow(u->diff, d, &u->diff))
        return too_many(u, err);
    return FLOE_OK;
}

int floe__stash_next(floe__stash *st, floe__upd *u, bool *got, floe_error *err)
{
    FLOE_RETURN_IF(!st->closing, err, FLOE_EINTERNAL, "stash next outside a close");
    for (;;) {
        long who = pick(st);
        if (who == -2) {
            *got = false;
            return FLOE_OK;
        }
        *u = *source(st, who);
        u->stable = who == -1;            /* memory: the arena stays until end_close */
        if (who >= 0)
            FLOE_FORWARD(hold(st, u, err));
        FLOE_FORWARD(consume(st, who, err));
        for (long next; (next = pick(st)) != -2 && cmp_upd(source(st, next), u) == 0;) {
            FLOE_FORWARD(add_diff(u, source(st, next)->diff, err));
            FLOE_FORWARD(consume(st, next, err));
        }
        if (u->diff > FLOE_SINK_MAX_DIFF || u->diff < -FLOE_SINK_MAX_DIFF)
            return too_many(u, err);
        if (u->diff != 0) {
            *got = true;
            return FLOE_OK;
        }
    }
}

/* Move the updates still open into a fresh arena so the closed ones' bytes
 * are released.  Without memory for it the old arena is simply kept. */
static void compact(floe__stash *st)
{
    size_t open_n = st->n - st->closed_n, total = 0, bytes = 0;
    for (size_t i = st->closed_n; i < st->n; i++)
        total += (size_t)st->v[i].key_len + st->v[i].row_len;
    floe__arena *fresh = open_n ? floe__arena_new(total > (1 << 20) ? total : (1 << 20)) : NULL;
    uint8_t *dst = fresh ? floe__arena_alloc(fresh, total) : NULL;
    if (open_n)
        memmove(st->v, st->v + st->closed_n, open_n * sizeof *st->v);
    st->n = open_n;
    for (size_t i = 0; i < open_n; i++) {
        floe__upd *u = &st->v[i];
        if (dst) {
            if (u->key_len)
                memcpy(dst, u->key, u->key_len);
            if (u->row_len)
                memcpy(dst + u->key_len, u->row, u->row_len);
            u->key = dst;
            u->row = dst + u->key_len;
            dst += u->key_len + u->row_len;
        }
        bytes += (size_t)u->key_len + u->row_len + sizeof *u;
    }
    if (dst) {
        floe__arena_free(st->arena);
        st->arena = fresh;
    } else {
        floe__arena_free(fresh);
        if (open_n == 0)
            floe__arena_reset(st->arena);
    }
    st->bytes = bytes;
}

void floe__stash_end_close(floe__stash *st)
{
    if (!st->closing)
        return;
    st->closing = false;
    compact(st);
    size_t w = 0;                  /* drop exhausted runs */
    for (size_t i = 0; i < st->n_runs; i++) {
        if (st->runs[i]->remaining == 0 && !st->runs[i]->has_cur)
            run_free(st->runs[i]);
        else
            st->runs[w++] = st->runs[i];
    }
    st->n_runs = w;
}

void floe__stash_get_stats(const floe__stash *st, floe__stash_stats *out)
{
    out->rows = st->n + st->spilled_held;
    out->bytes = st->bytes + st->spilled_bytes;
    out->runs = st->n_runs;
    out->spilled_rows = st->spilled_total;
}
