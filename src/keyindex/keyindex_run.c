/*
 * keyindex_run.c - the key index's disk tier: a run of entries sorted by
 * (key hash, key, file, pos), written once, then read by key or in order.
 *
 * File: blocks, each a u32 payload length then whole entries (a block holds
 * at least one entry, so an entry larger than FLOE_KX_RUN_BLOCK gets a
 * block of its own).  The fences (each block's offset and first hash) stay
 * in memory, about 16 bytes per 16 KiB of run.  Reads go through pread, so
 * the pages live in the kernel's cache, not in floe's heap: the memory a
 * large index costs floe is its fences.  The file is unnamed (O_TMPFILE):
 * nothing is left behind by a crash.
 *
 * Entry: u64 hash | u32 key length | key | u32 file | u64 pos | u64 rowhash.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "keyindex/keyindex_internal.h"

#define ENTRY_FIXED 32                  /* entry bytes besides the key */

typedef struct fence {
    uint64_t offset;                    /* of the block's length word */
    uint64_t first;                     /* hash of its first entry */
} fence;

struct floe__kx_run {
    int fd;
    fence *fences;
    size_t n_fences;
    uint64_t entries, bytes;
    floe__buf scratch;                  /* one block, for finds */
};

struct floe__kx_run_writer {
    floe__kx_run *run;
    floe__buf block;                    /* the block being filled (after its length word) */
    size_t cap_fences;
    uint64_t last_hash;
};

/* ---- writing ------------------------------------------------------------------------ */

int floe__kx_run_writer_new(const char *dir, floe__kx_run_writer **out, floe_error *err)
{
    floe__kx_run_writer *w = floe__calloc(1, sizeof *w);
    floe__kx_run *r = floe__calloc(1, sizeof *r);
    if (!w || !r) {
        floe__free(w);
        floe__free(r);
        return FLOE_OOM(err);
    }
    w->run = r;
    floe__buf_init(&w->block, 0);
    floe__buf_init(&r->scratch, 0);
    r->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (r->fd < 0) {
        int e = errno;
        floe__kx_run_writer_abort(w);
        return floe__err_set(err, FLOE_EIO, "cannot create the key index's disk tier in %s: %s",
                             dir, strerror(e));
    }
    *out = w;
    return FLOE_OK;
}

static int flush_block(floe__kx_run_writer *w, floe_error *err)
{
    if (w->block.len == 0)
        return FLOE_OK;
    uint8_t head[4];
    floe__put_le32(head, (uint32_t)w->block.len);
    FLOE_FORWARD(floe__write_all(w->run->fd, head, 4, "the key index's disk tier", err));
    FLOE_FORWARD(floe__write_all(w->run->fd, w->block.data, w->block.len,
                                 "the key index's disk tier", err));
    w->run->bytes += 4 + w->block.len;
    floe__buf_reset(&w->block);
    return FLOE_OK;
}

static int new_fence(floe__kx_run_writer *w, uint64_t hash, floe_error *err)
{
    floe__kx_run *r = w->run;
    if (r->n_fences == w->cap_fences) {
        size_t cap = w->cap_fences ? w->cap_fences * 2 : 64;
        fence *f = floe__realloc(r->fences, cap * sizeof *f);
        if (!f)
            return FLOE_OOM(err);
        r->fences = f;
        w->cap_fences = cap;
    }
    r->fences[r->n_fences++] = (fence){r->bytes, hash};
    return FLOE_OK;
}

int floe__kx_run_put(floe__kx_run_writer *w, uint64_t hash, const uint8_t *key, size_t len,
                     floe__kx_loc loc, floe_error *err)
{
    assert(w->run->entries == 0 || hash >= w->last_hash);      /* sorted input */
    size_t need = ENTRY_FIXED + len;
    if (w->block.len && w->block.len + need > FLOE_KX_RUN_BLOCK)
        FLOE_FORWARD(flush_block(w, err));
    if (w->block.len == 0)
        FLOE_FORWARD(new_fence(w, hash, err));
    FLOE_FORWARD(floe__buf_reserve(&w->block, need, err));
    uint8_t fixed[12];
    floe__put_le64(fixed, hash);
    floe__put_le32(fixed + 8, (uint32_t)len);
    floe__buf_put_unchecked(&w->block, fixed, 12);
    floe__buf_put_unchecked(&w->block, key, len);
    uint8_t tail[20];
    floe__put_le32(tail, loc.file);
    floe__put_le64(tail + 4, loc.pos);
    floe__put_le64(tail + 12, loc.rowhash);
    floe__buf_put_unchecked(&w->block, tail, 20);
    w->run->entries++;
    w->last_hash = hash;
    return FLOE_OK;
}

int floe__kx_run_finish(floe__kx_run_writer *w, floe__kx_run **out, floe_error *err)
{
    int rc = flush_block(w, err);
    if (rc == FLOE_OK) {
        *out = w->run;
        w->run = NULL;
    }
    floe__kx_run_writer_abort(w);
    return rc;
}

void floe__kx_run_writer_abort(floe__kx_run_writer *w)
{
    if (!w)
        return;
    floe__kx_run_free(w->run);
    floe__buf_free(&w->block);
    floe__free(w);
}

void floe__kx_run_free(floe__kx_run *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    floe__free(r->fences);
    floe__buf_free(&r->scratch);
    floe__free(r);
}

uint64_t floe__kx_run_entries(const floe__kx_run *r) { return r ? r->entries : 0; }
uint64_t floe__kx_run_bytes(const floe__kx_run *r) { return r ? r->bytes : 0; }

/* ---- reading ---------------------------------------------------------------------------- */

static int read_at(int fd, uint64_t off, void *dst, size_t n, floe_error *err)
{
    uint8_t *d = dst;
    while (n) {
        ssize_t got = pread(fd, d, n, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return floe__err_set(err, FLOE_EIO, "reading the key index's disk tier: %s",
                                 got < 0 ? strerror(errno) : "truncated");
        d += got;
        off += (uint64_t)got;
        n -= (size_t)got;
    }
    return FLOE_OK;
}

/* Block b into buf; *next is the offset after it. */
static int read_block(const floe__kx_run *r, uint64_t off, floe__buf *buf, uint64_t *next,
                      floe_error *err)
{
    uint8_t head[4];
    FLOE_FORWARD(read_at(r->fd, off, head, 4, err));
    uint32_t n = floe__get_le32(head);
    floe__buf_reset(buf);
    FLOE_FORWARD(floe__buf_reserve(buf, n, err));
    FLOE_FORWARD(read_at(r->fd, off + 4, buf->data, n, err));
    buf->len = n;
    *next = off + 4 + n;
    return FLOE_OK;
}

/* Decode the entry at b[*at]; false at the end of the block. */
static bool entry_at(const floe__buf *b, size_t *at, uint64_t *hash, const uint8_t **key,
                     size_t *len, floe__kx_loc *loc)
{
    if (*at + 12 > b->len)
        return false;
    const uint8_t *p = b->data + *at;
    *hash = floe__get_le64(p);
    *len = floe__get_le32(p + 8);
    assert(*at + ENTRY_FIXED + *len <= b->len);
    *key = p + 12;
    const uint8_t *t = p + 12 + *len;
    loc->file = floe__get_le32(t);
    loc->pos = floe__get_le64(t + 4);
    loc->rowhash = floe__get_le64(t + 12);
    *at += ENTRY_FIXED + *len;
    return true;
}

/* The first block that may hold hash h: the last block starting below h
 * (entries of h can begin there), or the first starting at h. */
static size_t first_block(const floe__kx_run *r, uint64_t h)
{
    size_t lo = 0, hi = r->n_fences;          /* first fence with first >= h */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->fences[mid].first < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 ? lo - 1 : 0;
}

int floe__kx_run_find(const floe__kx_run *r, uint64_t h, const uint8_t *key, size_t len,
                      floe__kx_run_fn fn, void *ctx, floe_error *err)
{
    if (!r || r->n_fences == 0)
        return FLOE_OK;
    floe__buf *buf = (floe__buf *)&r->scratch;       /* scratch only */
    for (size_t b = first_block(r, h); b < r->n_fences && r->fences[b].first <= h; b++) {
        uint64_t next;
        FLOE_FORWARD(read_block(r, r->fences[b].offset, buf, &next, err));
        size_t at = 0;
        uint64_t eh;
        const uint8_t *ek;
        size_t el;
        floe__kx_loc loc;
        while (entry_at(buf, &at, &eh, &ek, &el, &loc)) {
            if (eh > h)
                return FLOE_OK;
            if (eh == h && el == len && memcmp(ek, key, len) == 0)
                FLOE_FORWARD(fn(ctx, loc, err));
        }
    }
    return FLOE_OK;
}

int floe__kx_run_cursor_init(floe__kx_run_cursor *c, const floe__kx_run *r, floe_error *err)
{
    memset(c, 0, sizeof *c);
    c->run = r;
    floe__buf_init(&c->block, 0);
    return floe__kx_run_cursor_next(c, err);
}

int floe__kx_run_cursor_next(floe__kx_run_cursor *c, floe_error *err)
{
    for (;;) {
        if (c->block.len && entry_at(&c->block, &c->at, &c->hash, &c->key, &c->len, &c->loc)) {
            c->has = true;
            return FLOE_OK;
        }
        c->has = false;
        if (!c->run || c->offset >= c->run->bytes)
            return FLOE_OK;
        FLOE_FORWARD(read_block(c->run, c->offset, &c->block, &c->offset, err));
        c->at = 0;
    }
}

void floe__kx_run_cursor_free(floe__kx_run_cursor *c) { floe__buf_free(&c->block); }
