/*
 * keyindex_build.c - an empty key index built from many rows in sorted
 * runs (the bulk snapshot batch of sink_bulk.c, when its rows are more than
 * the memory tier holds).
 *
 * Inserting such rows into the memory tier makes it spill again and again,
 * and every spill merges the whole disk tier once more.  Here rows are
 * gathered in a chunk (entries in an array, keys in a buffer) within the
 * index's memory limit; a full chunk is sorted in (key hash, key, file,
 * pos) order, the runs' order (radix sort on the hash, then each stretch
 * of equal hashes by the rest), and written as a run; at the end the runs
 * are merged once into the run the index adopts as its disk tier.  Each
 * row is written twice (its chunk's run, the merged run), or once when one
 * chunk held every row.  This file owns the chunk, its sort and the merge;
 * the run format is keyindex_run.c's.
 */
#include <stdlib.h>

#include "sink/keyindex_internal.h"

/* Bytes a row takes in a chunk besides its key: its entry and two sort
 * pairs (the radix sort's source and destination). */
#define ROW_BYTES (sizeof(entry) + 2 * sizeof(pair))
#define RADIX_BITS 16
#define MIN_CHUNK ((size_t)1 << 20)
/* Chunks beyond this buy little (a merge of a few more runs costs less
 * than the memory): the index's budget may be most of --memory-limit. */
#define MAX_CHUNK ((size_t)128 << 20)

typedef struct entry {
    uint64_t hash, pos, rowhash, key_off;
    uint32_t key_len, file;
} entry;

typedef struct pair {
    uint64_t hash;
    uint64_t i;                      /* into the chunk's entries */
} pair;

struct floe__kx_builder {
    floe__kx *kx;
    size_t limit;                    /* a chunk's bytes */
    entry *e;
    size_t n, cap;
    floe__buf keys;
    pair *sorted, *tmp;
    size_t cap_pairs;
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
    floe__free(b->tmp);
    floe__buf_free(&b->keys);
    floe__free(b);
}

static const uint8_t *key_of(const floe__kx_builder *b, const entry *x)
{
    return b->keys.data + x->key_off;
}

static int cmp_entries(const floe__kx_builder *b, const entry *x, const entry *y)
{
    return floe__kx_cmp_row(x->hash, key_of(b, x), x->key_len, x->file, x->pos, y->hash,
                            key_of(b, y), y->key_len, y->file, y->pos);
}

static int cmp_pairs(const void *x, const void *y, void *arg)
{
    const floe__kx_builder *b = arg;
    return cmp_entries(b, &b->e[((const pair *)x)->i], &b->e[((const pair *)y)->i]);
}

/* LSD radix sort of the chunk's (hash, index) pairs on the hash; then each
 * stretch of equal hashes in full order (insertion sort: they are rare). */
static int sort_chunk(floe__kx_builder *b, floe_error *err)
{
    if (b->n > b->cap_pairs) {
        floe__free(b->sorted);
        floe__free(b->tmp);
        b->sorted = floe__malloc(b->n * sizeof(pair));
        b->tmp = floe__malloc(b->n * sizeof(pair));
        b->cap_pairs = b->sorted && b->tmp ? b->n : 0;
        if (!b->cap_pairs)
            return FLOE_OOM(err);
    }
    for (size_t i = 0; i < b->n; i++)
        b->sorted[i] = (pair){b->e[i].hash, i};
    size_t *count = floe__calloc((size_t)1 << RADIX_BITS, sizeof *count);
    if (!count)
        return FLOE_OOM(err);
    for (unsigned shift = 0; shift < 64; shift += RADIX_BITS) {
        memset(count, 0, ((size_t)1 << RADIX_BITS) * sizeof *count);
        for (size_t i = 0; i < b->n; i++)
            count[(b->sorted[i].hash >> shift) & 0xFFFF]++;
        for (size_t d = 0, at = 0; d < ((size_t)1 << RADIX_BITS); d++) {
            size_t c = count[d];
            count[d] = at;
            at += c;
        }
        for (size_t i = 0; i < b->n; i++)
            b->tmp[count[(b->sorted[i].hash >> shift) & 0xFFFF]++] = b->sorted[i];
        pair *t = b->sorted;
        b->sorted = b->tmp;
        b->tmp = t;
    }
    floe__free(count);
    for (size_t i = 0, j; i < b->n; i = j) {      /* equal hashes: key, file, pos */
        for (j = i + 1; j < b->n && b->sorted[j].hash == b->sorted[i].hash; j++)
            ;
        if (j - i > 1)
            qsort_r(b->sorted + i, j - i, sizeof(pair), cmp_pairs, b);
    }
    return FLOE_OK;
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
    FLOE_FORWARD(sort_chunk(b, err));
    floe__kx_run_writer *w = NULL;
    FLOE_FORWARD(floe__kx_run_writer_new(floe__kx_spill_dir(b->kx), &w, err));
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < b->n; i++) {
        const entry *x = &b->e[b->sorted[i].i];
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
    if (b->n && (b->n + 1) * ROW_BYTES + b->keys.len + len > b->limit)
        FLOE_FORWARD(write_chunk(b, err));
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        entry *e = floe__realloc(b->e, cap * sizeof *e);
        if (!e)
            return FLOE_OOM(err);
        b->e = e;
        b->cap = cap;
    }
    b->e[b->n++] = (entry){floe__kx_key_hash(key, len), loc.pos, loc.rowhash, b->keys.len,
                           (uint32_t)len, loc.file};
    return floe__buf_append(&b->keys, key, len, err);
}

/* The smallest current entry among the cursors (-1: all done). */
static long smallest(const floe__kx_run_cursor *c, size_t n)
{
    long min = -1;
    for (size_t i = 0; i < n; i++) {
        if (!c[i].has)
            continue;
        const floe__kx_run_cursor *m = min < 0 ? NULL : &c[min];
        if (!m || floe__kx_cmp_row(c[i].hash, c[i].key, c[i].len, c[i].loc.file, c[i].loc.pos,
                                   m->hash, m->key, m->len, m->loc.file, m->loc.pos) < 0)
            min = (long)i;
    }
    return min;
}

/* Every run merged into one. */
static int merge_runs(floe__kx_builder *b, floe__kx_run **out, floe_error *err)
{
    floe__kx_run_cursor *c = floe__calloc(b->n_runs, sizeof *c);
    if (!c)
        return FLOE_OOM(err);
    floe__kx_run_writer *w = NULL;
    int rc = floe__kx_run_writer_new(floe__kx_spill_dir(b->kx), &w, err);
    size_t opened = 0;
    for (; rc == FLOE_OK && opened < b->n_runs; opened++)
        rc = floe__kx_run_cursor_init(&c[opened], b->runs[opened], err);
    for (long m; rc == FLOE_OK && (m = smallest(c, b->n_runs)) >= 0;) {
        rc = floe__kx_run_put(w, c[m].hash, c[m].key, c[m].len, c[m].loc, err);
        if (rc == FLOE_OK)
            rc = floe__kx_run_cursor_next(&c[m], err);
    }
    for (size_t i = 0; i < opened; i++)
        floe__kx_run_cursor_free(&c[i]);
    floe__free(c);
    if (rc == FLOE_OK)
        return floe__kx_run_finish(w, out, err);
    floe__kx_run_writer_abort(w);
    return rc;
}

int floe__kx_builder_finish(floe__kx_builder *b, floe_error *err)
{
    int rc = write_chunk(b, err);
    floe__kx_run *run = NULL;
    if (rc == FLOE_OK && b->n_runs == 1) {
        run = b->runs[0];
        b->n_runs = 0;
    } else if (rc == FLOE_OK && b->n_runs > 1) {
        rc = merge_runs(b, &run, err);
    }
    if (rc == FLOE_OK && run) {
        rc = floe__kx_adopt_run(b->kx, run, err);
        if (rc != FLOE_OK)
            floe__kx_run_free(run);
    }
    floe__kx_builder_free(b);
    return rc;
}
