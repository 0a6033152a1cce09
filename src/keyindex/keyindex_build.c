/*
 * keyindex_build.c - an empty key index built from many rows in sorted
 * runs, when they are more than the memory tier holds: the bulk snapshot
 * batch of sink_bulk.c, a checkpoint loaded (keyindex_store.c), a rebuild
 * from the table (keybuild.c).
 *
 * Inserting such rows into the memory tier makes it spill again and again,
 * and every spill merges the whole disk tier once more.  Here rows are
 * gathered in a chunk (entries in an array, keys in a buffer) within the
 * index's memory limit; a full chunk is sorted in (key hash, key, file,
 * pos) order, the runs' order (entries scattered by their hash's top 16
 * bits, then each small bucket sorted), and written as a run; at the end the runs
 * are merged once, with the last chunk sorted in memory, into the run the
 * index adopts as its disk tier.  Each row is written twice (its chunk's
 * run, the merged run), once when it is in the last chunk or when one
 * chunk held every row.  This file owns the chunk, its sort and the merge;
 * the run format is keyindex_run.c's.
 */
#include <stdlib.h>

#include "keyindex/keyindex_internal.h"

/* Bytes a row takes in a chunk besides a key too long to be inline: its
 * entry and its room in the sort. */
#define ROW_BYTES (2 * sizeof(entry))
#define INLINE_KEY 16
#define SMALL_BUCKET 32                  /* insertion sort up to this many */
#define MIN_CHUNK ((size_t)1 << 20)
/* Chunks beyond this buy little (a merge of a few more runs costs less
 * than the memory): the index's budget may be most of --memory-limit. */
#define MAX_CHUNK ((size_t)128 << 20)

/* A row: sorted by moving entries themselves, so the run is written from
 * memory read in order; a key of up to INLINE_KEY bytes (most keys) moves
 * with its entry, a longer one stays in the keys buffer. */
typedef struct entry {
    uint64_t hash, pos, rowhash;
    uint32_t file, key_len;
    union {
        uint8_t in[INLINE_KEY];
        uint64_t off;                /* into the keys buffer */
    } key;
} entry;

struct floe__kx_builder {
    floe__kx *kx;
    size_t limit;                    /* a chunk's bytes */
    entry *e, *sorted;               /* the chunk; room for its sort */
    size_t n, cap;
    floe__buf keys;                  /* keys longer than INLINE_KEY */
    floe__kx_run **runs;
    size_t n_runs;
};

int floe__kx_builder_new(floe__kx *kx, floe__kx_builder **out, floe_error *err)
{
    floe__kx_builder *b = floe__calloc(1, sizeof *b);
    if (!b)
        return FLOE_OOM(err);
    b->kx = kx;
    b->limit = floe__kx_memory_limit(kx);
    if (b->limit < MIN_CHUNK)
        b->limit = MIN_CHUNK;
    if (b->limit > MAX_CHUNK)
        b->limit = MAX_CHUNK;
    floe__buf_init(&b->keys, FLOE_KX_MAX_KEY + (size_t)UINT32_MAX);
    *out = b;
    return FLOE_OK;
}

void floe__kx_builder_free(floe__kx_builder *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n_runs; i++)
        floe__kx_run_free(b->runs[i]);
    floe__free(b->runs);
    floe__free(b->e);
    floe__free(b->sorted);
    floe__buf_free(&b->keys);
    floe__free(b);
}

static const uint8_t *key_of(const floe__kx_builder *b, const entry *x)
{
    return x->key_len <= INLINE_KEY ? x->key.in : b->keys.data + x->key.off;
}

static int cmp_entries(const floe__kx_builder *b, const entry *x, const entry *y)
{
    return floe__kx_cmp_row(x->hash, key_of(b, x), x->key_len, x->file, x->pos, y->hash,
                            key_of(b, y), y->key_len, y->file, y->pos);
}

static int cmp_sorted(const void *x, const void *y, void *arg)
{
    return cmp_entries(arg, x, y);
}

/* A stretch of entries whose hashes share their top bits, in full order:
 * insertion sort (hashes are uniform: a stretch holds a few entries). */
static void sort_bucket(const floe__kx_builder *b, entry *e, size_t n)
{
    if (n > SMALL_BUCKET) {
        qsort_r(e, n, sizeof *e, cmp_sorted, (void *)b);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        entry x = e[i];
        size_t j = i;
        for (; j > 0 && (e[j - 1].hash > x.hash ||
                         (e[j - 1].hash == x.hash && cmp_entries(b, &e[j - 1], &x) > 0));
             j--)
            e[j] = e[j - 1];
        e[j] = x;
    }
}

/* src's n entries into dst by the 8 bits of their hash at `shift`; end[d]
 * is then where bucket d ends in dst. */
static void scatter(const entry *src, entry *dst, size_t n, unsigned shift, size_t end[256])
{
    size_t at[257] = {0};
    for (size_t i = 0; i < n; i++)
        at[((src[i].hash >> shift) & 0xFF) + 1]++;
    for (size_t d = 1; d <= 256; d++)
        at[d] += at[d - 1];
    for (size_t i = 0; i < n; i++)
        dst[at[(src[i].hash >> shift) & 0xFF]++] = src[i];
    memcpy(end, at, 256 * sizeof *end);
}

/* The chunk's entries in (hash, key, file, pos) order, in place: two
 * counting passes on the hash's top 16 bits, 8 at a time (256 buckets keep
 * each pass's writes in cache), through b->sorted and back, then each
 * bucket of a few entries sorted.  A chunk holds at most MAX_CHUNK /
 * ROW_BYTES entries, so buckets hold about 20 at most. */
static void sort_chunk(floe__kx_builder *b)
{
    size_t end[256], end2[256];
    scatter(b->e, b->sorted, b->n, 56, end);
    for (size_t d = 0, from = 0; d < 256; from = end[d++]) {
        size_t len = end[d] - from;
        entry *in = b->sorted + from, *out = b->e + from;
        if (len <= SMALL_BUCKET) {
            memcpy(out, in, len * sizeof *out);
            sort_bucket(b, out, len);
            continue;
        }
        scatter(in, out, len, 48, end2);
        for (size_t d2 = 0, f2 = 0; d2 < 256; f2 = end2[d2++])
            sort_bucket(b, out + f2, end2[d2] - f2);
    }
}

/* The chunk, sorted, as one more run; the chunk is empty again. */
static int write_chunk(floe__kx_builder *b, floe_error *err)
{
    if (!b->n)
        return FLOE_OK;
    floe__kx_run **runs = floe__realloc(b->runs, (b->n_runs + 1) * sizeof *runs);
    if (!runs)
        return FLOE_OOM(err);
    b->runs = runs;
    sort_chunk(b);
    floe__kx_run_writer *w = NULL;
    FLOE_FORWARD(floe__kx_run_writer_new(floe__kx_spill_dir(b->kx), &w, err));
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < b->n; i++) {
        const entry *x = &b->e[i];
        rc = floe__kx_run_put(w, x->hash, key_of(b, x), x->key_len,
                              (floe__kx_loc){x->file, x->pos, x->rowhash}, err);
    }
    if (rc != FLOE_OK) {
        floe__kx_run_writer_abort(w);
        return rc;
    }
    FLOE_FORWARD(floe__kx_run_finish(w, &b->runs[b->n_runs], err));
    b->n_runs++;
    b->n = 0;
    floe__buf_reset(&b->keys);
    return FLOE_OK;
}

int floe__kx_builder_add(floe__kx_builder *b, const uint8_t *key, size_t len, floe__kx_loc loc,
                         floe_error *err)
{
    FLOE_RETURN_IF(len > FLOE_KX_MAX_KEY, err, FLOE_ELIMIT, "a key of %zu bytes", len);
    size_t outside = len > INLINE_KEY ? len : 0;
    if (b->n && (b->n + 1) * ROW_BYTES + b->keys.len + outside > b->limit)
        FLOE_FORWARD(write_chunk(b, err));
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096, most = b->limit / ROW_BYTES + 1;
        cap = cap > most && most > b->n ? most : cap;
        entry *e = floe__realloc(b->e, cap * sizeof *e);
        if (!e)
            return FLOE_OOM(err);
        b->e = e;
        floe__free(b->sorted);                       /* the sort's room, as large */
        b->sorted = floe__malloc(cap * sizeof *e);
        if (!b->sorted)
            return FLOE_OOM(err);
        b->cap = cap;
    }
    entry *x = &b->e[b->n];
    *x = (entry){floe__kx_key_hash(key, len), loc.pos, loc.rowhash, loc.file, (uint32_t)len,
                 {{0}}};
    if (!outside) {
        memcpy(x->key.in, key, len);
    } else {
        x->key.off = b->keys.len;
        FLOE_FORWARD(floe__buf_append(&b->keys, key, len, err));
    }
    b->n++;
    return FLOE_OK;
}

/* A merge's input: a run's cursor, or (run NULL) the last chunk, sorted
 * in memory and never written, its entries shown through the cursor's
 * fields one by one. */
typedef struct source {
    floe__kx_run_cursor c;
    const entry *at, *end;
} source;

static void show(const floe__kx_builder *b, source *s)
{
    s->c.has = s->at < s->end;
    if (s->c.has) {
        s->c.hash = s->at->hash;
        s->c.key = key_of(b, s->at);
        s->c.len = s->at->key_len;
        s->c.loc = (floe__kx_loc){s->at->file, s->at->pos, s->at->rowhash};
    }
}

static int advance(const floe__kx_builder *b, source *s, floe_error *err)
{
    if (s->c.run)
        return floe__kx_run_cursor_next(&s->c, err);
    s->at++;
    show(b, s);
    return FLOE_OK;
}

static bool before(const source *x, const source *y)
{
    return floe__kx_cmp_row(x->c.hash, x->c.key, x->c.len, x->c.loc.file, x->c.loc.pos,
                            y->c.hash, y->c.key, y->c.len, y->c.loc.file, y->c.loc.pos) < 0;
}

/* Restore the min-heap h[0..n) of sources from position i down. */
static void sift(source **h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && before(h[l], h[m]))
            m = l;
        if (l + 1 < n && before(h[l + 1], h[m]))
            m = l + 1;
        if (m == i)
            return;
        source *t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Every run and the last chunk (sorted, in memory) merged into one run. */
static int merge(floe__kx_builder *b, floe__kx_run **out, floe_error *err)
{
    size_t ns = b->n_runs + (b->n > 0);
    source *src = floe__calloc(ns, sizeof *src);
    source **heap = floe__calloc(ns, sizeof *heap);
    floe__kx_run_writer *w = NULL;
    int rc = src && heap ? floe__kx_run_writer_new(floe__kx_spill_dir(b->kx), &w, err)
                         : FLOE_OOM(err);
    size_t opened = 0, n = 0;
    for (; rc == FLOE_OK && opened < b->n_runs; opened++)
        rc = floe__kx_run_cursor_init(&src[opened].c, b->runs[opened], err);
    if (rc == FLOE_OK && b->n) {
        src[ns - 1].at = b->e;
        src[ns - 1].end = b->e + b->n;
        show(b, &src[ns - 1]);
    }
    for (size_t i = 0; rc == FLOE_OK && i < ns; i++)
        if (src[i].c.has)
            heap[n++] = &src[i];
    for (size_t i = n / 2; rc == FLOE_OK && i-- > 0;)
        sift(heap, n, i);
    while (rc == FLOE_OK && n) {
        source *m = heap[0];
        rc = floe__kx_run_put(w, m->c.hash, m->c.key, m->c.len, m->c.loc, err);
        if (rc == FLOE_OK)
            rc = advance(b, m, err);
        if (rc == FLOE_OK && !m->c.has)
            heap[0] = heap[--n];
        sift(heap, n, 0);
    }
    for (size_t i = 0; i < opened; i++)
        floe__kx_run_cursor_free(&src[i].c);
    floe__free(src);
    floe__free(heap);
    if (rc == FLOE_OK)
        return floe__kx_run_finish(w, out, err);
    floe__kx_run_writer_abort(w);
    return rc;
}

int floe__kx_builder_finish(floe__kx_builder *b, floe_error *err)
{
    int rc = FLOE_OK;
    floe__kx_run *run = NULL;
    if (b->n_runs && b->n) {                 /* the last chunk is merged from memory */
        sort_chunk(b);
        rc = merge(b, &run, err);
    } else if (b->n_runs > 1) {
        rc = merge(b, &run, err);
    } else {
        rc = write_chunk(b, err);            /* one chunk held every row */
        if (rc == FLOE_OK && b->n_runs) {
            run = b->runs[0];
            b->n_runs = 0;
        }
    }
    if (rc == FLOE_OK && run) {
        rc = floe__kx_adopt_run(b->kx, run, err);
        if (rc != FLOE_OK)
            floe__kx_run_free(run);
    }
    floe__kx_builder_free(b);
    return rc;
}
