/*
 * moves.c - the moves of the sink's own compactions, from the maintenance
 * thread to the key index (moves_internal.h).
 */
#include <pthread.h>
#include <string.h>

#include "sink/moves_internal.h"

#define MOVES_KEPT 16

struct floe__moves {
    pthread_mutex_t mu;
    floe__moved *kept[MOVES_KEPT];   /* oldest first */
    size_t n;
};

/* ---- one group's moves ------------------------------------------------------------------- */

static void free_paths(char **p, size_t n)
{
    for (size_t i = 0; p && i < n; i++)
        floe__free(p[i]);
    floe__free(p);
}

void floe__moved_free(floe__moved *m)
{
    if (!m)
        return;
    for (size_t k = 0; m->skipped && k < m->n_old; k++)
        floe__free(m->skipped[k]);
    free_paths(m->old, m->n_old);
    free_paths(m->out, m->n_out);
    floe__free(m->skipped);
    floe__free(m->n_skipped);
    floe__free(m->first_out);
    floe__free(m->out_start);
    floe__free(m->id);
    floe__free(m);
}

static bool copy_skipped(floe__moved *m, size_t k, const floe__posbitmap *b)
{
    uint64_t n = floe__posbitmap_count(b), p;
    m->skipped[k] = floe__calloc(n + 1, sizeof *m->skipped[k]);
    if (!m->skipped[k])
        return false;
    floe__posbitmap_iter it = {b, 0, 0, 0};
    while (floe__posbitmap_next(&it, &p))
        m->skipped[k][m->n_skipped[k]++] = p;
    assert(m->n_skipped[k] == n);
    return true;
}

static floe__moved *copy_moved(const floe__compact_moved *c)
{
    floe__moved *m = floe__calloc(1, sizeof *m);
    if (!m)
        return NULL;
    size_t n = c->map->n, n_out = c->files->n;
    m->n_old = n;
    m->n_out = n_out;
    m->id = floe__strdup(c->id);
    m->old = floe__calloc(n + 1, sizeof *m->old);
    m->out = floe__calloc(n_out + 1, sizeof *m->out);
    m->first_out = floe__calloc(n + 1, sizeof *m->first_out);
    m->skipped = floe__calloc(n + 1, sizeof *m->skipped);
    m->n_skipped = floe__calloc(n + 1, sizeof *m->n_skipped);
    m->out_start = floe__calloc(n_out + 1, sizeof *m->out_start);
    bool ok = m->id && m->old && m->out && m->first_out && m->skipped && m->n_skipped &&
              m->out_start;
    for (size_t k = 0; ok && k < n; k++) {
        m->first_out[k] = c->map->first_out[k];
        ok = (m->old[k] = floe__strdup(c->old[k])) && copy_skipped(m, k, &c->map->skipped[k]);
    }
    for (size_t i = 0; ok && i < n_out; i++) {
        m->out_start[i + 1] = m->out_start[i] + c->files->files[i].metrics.record_count;
        ok = (m->out[i] = floe__strdup(c->files->files[i].path)) != NULL;
    }
    if (!ok) {
        floe__moved_free(m);
        return NULL;
    }
    return m;
}

/* How many of the n ascending values in v are below x; *has: whether x is one. */
static size_t rank(const uint64_t *v, size_t n, uint64_t x, bool *has)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    *has = lo < n && v[lo] == x;
    return lo;
}

bool floe__moved_where(const floe__moved *m, size_t k, uint64_t pos, size_t *out, uint64_t *at)
{
    assert(k < m->n_old);
    bool skipped;
    uint64_t below = rank(m->skipped[k], m->n_skipped[k], pos, &skipped);
    if (skipped || m->n_out == 0)
        return false;
    uint64_t row = m->first_out[k] + pos - below;
    bool exact;
    size_t i = rank(m->out_start + 1, m->n_out, row + 1, &exact);   /* first end above row */
    assert(i < m->n_out);            /* a copied row is in some output file */
    *out = i;
    *at = row - m->out_start[i];
    return true;
}

/* ---- the registry ---------------------------------------------------------------------------- */

int floe__moves_new(floe__moves **out, floe_error *err)
{
    floe__moves *r = floe__calloc(1, sizeof *r);
    if (!r)
        return FLOE_OOM(err);
    pthread_mutex_init(&r->mu, NULL);
    *out = r;
    return FLOE_OK;
}

void floe__moves_free(floe__moves *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        floe__moved_free(r->kept[i]);
    pthread_mutex_destroy(&r->mu);
    floe__free(r);
}

void floe__moves_put(floe__moves *r, const floe__compact_moved *moved)
{
    floe__moved *m = copy_moved(moved);
    if (!m)
        return;
    pthread_mutex_lock(&r->mu);
    if (r->n == MOVES_KEPT) {
        floe__moved_free(r->kept[0]);
        memmove(r->kept, r->kept + 1, (MOVES_KEPT - 1) * sizeof *r->kept);
        r->n--;
    }
    r->kept[r->n++] = m;
    pthread_mutex_unlock(&r->mu);
}

floe__moved *floe__moves_take(floe__moves *r, const char *id)
{
    floe__moved *m = NULL;
    pthread_mutex_lock(&r->mu);
    for (size_t i = 0; i < r->n && !m; i++)
        if (strcmp(r->kept[i]->id, id) == 0) {
            m = r->kept[i];
            memmove(r->kept + i, r->kept + i + 1, (r->n - i - 1) * sizeof *r->kept);
            r->n--;
        }
    pthread_mutex_unlock(&r->mu);
    return m;
}
