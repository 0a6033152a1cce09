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
    for (size_t k = 0; m->skipped && k < m->n_old; k++) {
        floe__free(m->skipped[k].bits);
        floe__free(m->skipped[k].below);
    }
    free_paths(m->old, m->n_old);
    free_paths(m->out, m->n_out);
    floe__free(m->skipped);
    floe__free(m->first_out);
    floe__free(m->out_start);
    floe__free(m->id);
    floe__free(m);
}

static bool copy_skipped(floe__skipped *sk, const floe__posbitmap *b)
{
    floe__posbitmap_iter it = {b, 0, 0, 0};
    uint64_t p, last = 0;
    while (floe__posbitmap_next(&it, &p))
        last = p;                                    /* ascending: the last is the largest */
    sk->n_words = floe__posbitmap_count(b) ? (size_t)(last / 64) + 1 : 0;
    sk->bits = floe__calloc(sk->n_words + 1, sizeof *sk->bits);
    sk->below = floe__calloc(sk->n_words + 1, sizeof *sk->below);
    if (!sk->bits || !sk->below)
        return false;
    it = (floe__posbitmap_iter){b, 0, 0, 0};
    while (floe__posbitmap_next(&it, &p))
        sk->bits[p / 64] |= (uint64_t)1 << (p % 64);
    for (size_t w = 0; w < sk->n_words; w++)
        sk->below[w + 1] = sk->below[w] + (uint64_t)__builtin_popcountll(sk->bits[w]);
    sk->count = sk->below[sk->n_words];
    assert(sk->count == floe__posbitmap_count(b));
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
    m->out_start = floe__calloc(n_out + 1, sizeof *m->out_start);
    bool ok = m->id && m->old && m->out && m->first_out && m->skipped && m->out_start;
    for (size_t k = 0; ok && k < n; k++) {
        m->first_out[k] = c->map->first_out[k];
        ok = (m->old[k] = floe__strdup(c->old[k])) &&
             copy_skipped(&m->skipped[k], &c->map->skipped[k]);
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

/* Skipped rows of sk below pos; *was: whether pos is one. */
static uint64_t skipped_below(const floe__skipped *sk, uint64_t pos, bool *was)
{
    size_t w = (size_t)(pos / 64);
    if (w >= sk->n_words) {
        *was = false;
        return sk->count;
    }
    uint64_t bit = (uint64_t)1 << (pos % 64);
    *was = (sk->bits[w] & bit) != 0;
    return sk->below[w] + (uint64_t)__builtin_popcountll(sk->bits[w] & (bit - 1));
}

bool floe__moved_where(const floe__moved *m, size_t k, uint64_t pos, size_t *out, uint64_t *at)
{
    assert(k < m->n_old);
    bool skipped;
    uint64_t below = skipped_below(&m->skipped[k], pos, &skipped);
    if (skipped || m->n_out == 0)
        return false;
    uint64_t row = m->first_out[k] + pos - below;
    size_t i = 0;
    while (i + 1 < m->n_out && m->out_start[i + 1] <= row)
        i++;                                         /* a group writes a file or a few */
    assert(row < m->out_start[i + 1]);              /* a copied row is in some output file */
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
