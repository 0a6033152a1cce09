/*
 * byteset.c - a set of byte strings: the keys of an equality delete file
 * while a compaction applies it.  The strings are copied into an arena;
 * the table holds their hashes and addresses (open addressing, linear
 * probing, at most 3/4 full).
 */
#include "util/util_internal.h"

typedef struct slot {
    uint64_t hash;
    const uint8_t *p;               /* NULL: empty */
    size_t len;
} slot;

struct floe__byteset {
    floe__arena *arena;
    slot *slots;
    size_t n, cap;                   /* cap: a power of two */
};

int floe__byteset_new(floe__byteset **out, floe_error *err)
{
    floe__byteset *s = floe__calloc(1, sizeof *s);
    if (s)
        s->arena = floe__arena_new(1 << 16);
    if (!s || !s->arena) {
        floe__free(s);
        return FLOE_OOM(err);
    }
    *out = s;
    return FLOE_OK;
}

void floe__byteset_free(floe__byteset *s)
{
    if (!s)
        return;
    floe__arena_free(s->arena);
    floe__free(s->slots);
    floe__free(s);
}

size_t floe__byteset_count(const floe__byteset *s) { return s->n; }

static slot *find(const floe__byteset *s, uint64_t h, const uint8_t *p, size_t len)
{
    for (size_t i = (size_t)h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        slot *x = &s->slots[i];
        if (!x->p || (x->hash == h && x->len == len && memcmp(x->p, p, len) == 0))
            return x;
    }
}

static int grow(floe__byteset *s, floe_error *err)
{
    size_t cap = s->cap ? s->cap * 2 : 256;
    FLOE_RETURN_IF(cap > SIZE_MAX / 2 / sizeof(slot), err, FLOE_ELIMIT, "too many keys");
    slot *old = s->slots;
    size_t old_cap = s->cap;
    s->slots = floe__calloc(cap, sizeof *s->slots);
    if (!s->slots) {
        s->slots = old;
        return FLOE_OOM(err);
    }
    s->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].p)
            *find(s, old[i].hash, old[i].p, old[i].len) = old[i];
    floe__free(old);
    return FLOE_OK;
}

int floe__byteset_add(floe__byteset *s, const void *p, size_t len, floe_error *err)
{
    if ((s->n + 1) * 4 > s->cap * 3)
        FLOE_FORWARD(grow(s, err));
    uint64_t h = floe__hash64(p, len, 0);
    slot *x = find(s, h, p, len);
    if (x->p)
        return FLOE_OK;
    uint8_t *copy = floe__arena_alloc(s->arena, len ? len : 1);
    if (!copy)
        return FLOE_OOM(err);
    memcpy(copy, p, len);
    *x = (slot){h, copy, len};
    s->n++;
    return FLOE_OK;
}

bool floe__byteset_has(const floe__byteset *s, const void *p, size_t len)
{
    if (!s->n)
        return false;
    return find(s, floe__hash64(p, len, 0), p, len)->p != NULL;
}
