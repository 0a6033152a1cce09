/*
 * posdel_set.c - position deletes as sets: data file path -> the set of
 * deleted row positions (a floe__posbitmap each), and the small path -> index
 * hash map the table layer uses wherever files are matched by path
 * (position delete sets, scan planning, commits).
 *
 * A set owns its paths (interned, strtab.c) and bitmaps.  Files are kept
 * in the order they were first added; floe__posdel_set_sorted gives them
 * in path (byte) order, which is the order the commit writes them in.
 */
#include <stdlib.h>

#include "table/table_internal.h"

/* ---- path -> index ---------------------------------------------------------------------- */

void floe__pathmap_clear(floe__pathmap *m)
{
    if (!m)
        return;
    floe__free(m->slots);
    memset(m, 0, sizeof *m);
}

static uint64_t hash_path(const char *s)
{
    return floe__hash64(s, strlen(s), 0x51ed270b27e1fa53ull);
}

static int grow(floe__pathmap *m, floe_error *err)
{
    size_t n = m->cap ? m->cap * 2 : 64;
    FLOE_RETURN_IF(n > SIZE_MAX / sizeof *m->slots / 2, err, FLOE_ELIMIT, "too many files");
    floe__pathmap_slot *s = floe__calloc(n, sizeof *s);
    if (!s)
        return FLOE_OOM(err);
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].path)
            continue;
        size_t h = (size_t)hash_path(m->slots[i].path) & (n - 1);
        while (s[h].path)
            h = (h + 1) & (n - 1);
        s[h] = m->slots[i];
    }
    floe__free(m->slots);
    m->slots = s;
    m->cap = n;
    return FLOE_OK;
}

bool floe__pathmap_get(const floe__pathmap *m, const char *path, size_t *value)
{
    if (!m->cap)
        return false;
    for (size_t h = (size_t)hash_path(path) & (m->cap - 1); m->slots[h].path;
         h = (h + 1) & (m->cap - 1)) {
        if (strcmp(m->slots[h].path, path) == 0) {
            *value = m->slots[h].value;
            return true;
        }
    }
    return false;
}

int floe__pathmap_put(floe__pathmap *m, const char *path, size_t value, bool *existed,
                      floe_error *err)
{
    if ((m->n + 1) * 2 > m->cap)
        FLOE_FORWARD(grow(m, err));
    size_t h = (size_t)hash_path(path) & (m->cap - 1);
    for (; m->slots[h].path; h = (h + 1) & (m->cap - 1)) {
        if (strcmp(m->slots[h].path, path) == 0) {
            if (existed)
                *existed = true;
            return FLOE_OK;                  /* the first value stays */
        }
    }
    m->slots[h] = (floe__pathmap_slot){path, value};
    m->n++;
    if (existed)
        *existed = false;
    return FLOE_OK;
}

/* ---- position delete sets ----------------------------------------------------------------- */

struct floe__posdel_set {
    floe__strtab paths;              /* the data files, in the order first added */
    floe__posbitmap *pos;            /* per path index */
    size_t cap;                      /* of pos */
    uint64_t count;
};

int floe__posdel_set_new(floe__posdel_set **out, floe_error *err)
{
    *out = floe__calloc(1, sizeof **out);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

void floe__posdel_set_free(floe__posdel_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->paths.n; i++)
        floe__posbitmap_clear(&s->pos[i]);
    floe__strtab_free(&s->paths);
    floe__free(s->pos);
    floe__free(s);
}

/* The bitmap of `path`, added (empty) when new. */
static int slot_of(floe__posdel_set *s, const char *path, size_t *i, floe_error *err)
{
    if (floe__pathmap_get(&s->paths.index, path, i))
        return FLOE_OK;
    FLOE_RETURN_IF(!*path, err, FLOE_EINVAL, "position deletes: empty data file path");
    if (s->paths.n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        floe__posbitmap *b = floe__realloc(s->pos, cap * sizeof *b);
        if (!b)
            return FLOE_OOM(err);
        s->pos = b;
        s->cap = cap;
    }
    uint32_t at;
    FLOE_FORWARD(floe__strtab_intern(&s->paths, path, &at, err));
    memset(&s->pos[at], 0, sizeof s->pos[at]);
    *i = at;
    return FLOE_OK;
}

int floe__posdel_set_add(floe__posdel_set *s, const char *data_path, uint64_t pos,
                         floe_error *err)
{
    FLOE_RETURN_IF(!data_path, err, FLOE_EINVAL, "position deletes: no data file path");
    size_t i;
    FLOE_FORWARD(slot_of(s, data_path, &i, err));
    uint64_t before = floe__posbitmap_count(&s->pos[i]);
    FLOE_FORWARD(floe__posbitmap_add(&s->pos[i], pos, err));
    s->count += floe__posbitmap_count(&s->pos[i]) - before;
    return FLOE_OK;
}

int floe__posdel_set_add_all(floe__posdel_set *s, const char *data_path,
                             const floe__posbitmap *positions, floe_error *err)
{
    size_t i;
    FLOE_FORWARD(slot_of(s, data_path, &i, err));
    uint64_t before = floe__posbitmap_count(&s->pos[i]);
    int rc = floe__posbitmap_or(&s->pos[i], positions, err);
    s->count += floe__posbitmap_count(&s->pos[i]) - before;
    return rc;
}

uint64_t floe__posdel_set_count(const floe__posdel_set *s) { return s ? s->count : 0; }
size_t floe__posdel_set_files(const floe__posdel_set *s) { return s ? s->paths.n : 0; }

const char *floe__posdel_set_path(const floe__posdel_set *s, size_t i)
{
    return i < s->paths.n ? s->paths.s[i] : NULL;
}

const floe__posbitmap *floe__posdel_set_positions(const floe__posdel_set *s, size_t i)
{
    return i < s->paths.n ? &s->pos[i] : NULL;
}

const floe__posbitmap *floe__posdel_set_find(const floe__posdel_set *s, const char *path)
{
    size_t i;
    return s && floe__pathmap_get(&s->paths.index, path, &i) ? &s->pos[i] : NULL;
}

static int cmp_paths(const void *a, const void *b, void *ctx)
{
    char *const *p = ctx;
    return strcmp(p[*(const size_t *)a], p[*(const size_t *)b]);
}

int floe__posdel_set_sorted(const floe__posdel_set *s, size_t **order, floe_error *err)
{
    size_t n = s->paths.n;
    *order = floe__malloc((n ? n : 1) * sizeof **order);
    if (!*order)
        return FLOE_OOM(err);
    for (size_t i = 0; i < n; i++)
        (*order)[i] = i;
    qsort_r(*order, n, sizeof **order, cmp_paths, s->paths.s);
    return FLOE_OK;
}
