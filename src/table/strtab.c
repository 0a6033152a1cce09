/*
 * strtab.c - interned strings: each distinct string gets the next dense
 * index, kept in an array of owned copies and found again through a
 * floe__pathmap (posdel_set.c).  For the data file paths a batch's
 * deletes, its key index log and a position delete writer name: a
 * partitioned batch names a file per partition, so a lookup must not walk
 * them all.
 */
#include "table/table_internal.h"

void floe__strtab_free(floe__strtab *t)
{
    for (size_t i = 0; i < t->n; i++)
        floe__free(t->s[i]);
    floe__free(t->s);
    floe__pathmap_clear(&t->index);
    memset(t, 0, sizeof *t);
}

static int add(floe__strtab *t, const char *s, size_t len, uint32_t *index, floe_error *err)
{
    FLOE_RETURN_IF(t->n >= UINT32_MAX - 1, err, FLOE_ELIMIT, "more than 2^32 distinct strings");
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **v = floe__realloc(t->s, cap * sizeof *v);
        if (!v)
            return FLOE_OOM(err);
        t->s = v;
        t->cap = cap;
    }
    char *copy = floe__strndup(s, len);
    if (!copy)
        return FLOE_OOM(err);
    int rc = floe__pathmap_put(&t->index, copy, t->n, NULL, err);
    if (rc != FLOE_OK) {
        floe__free(copy);
        return rc;
    }
    t->s[t->n] = copy;
    if (index)
        *index = (uint32_t)t->n;
    t->n++;
    return FLOE_OK;
}

int floe__strtab_intern(floe__strtab *t, const char *s, uint32_t *index, floe_error *err)
{
    size_t at;
    if (floe__pathmap_get(&t->index, s, &at)) {
        *index = (uint32_t)at;
        return FLOE_OK;
    }
    return add(t, s, strlen(s), index, err);
}

int floe__strtab_push(floe__strtab *t, const char *s, size_t len, floe_error *err)
{
    return add(t, s, len, NULL, err);
}
