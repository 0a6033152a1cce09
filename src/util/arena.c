/*
 * arena.c - bump allocation from a chain of blocks, released as a whole.
 *
 * Used for transient work (one batch, one commit attempt) so that a single
 * reset frees everything the work allocated.  Requests larger than a block
 * get a block of their own.
 */
#include "util/util_internal.h"

typedef struct block {
    struct block *next;
    size_t size;
    size_t used;
    _Alignas(16) unsigned char data[];
} block;

struct floe__arena {
    block *head;          /* current block; older ones follow */
    size_t block_size;
    size_t total;
};

floe__arena *floe__arena_new(size_t block_size)
{
    floe__arena *a = floe__calloc(1, sizeof *a);
    if (a)
        a->block_size = block_size ? block_size : 64 * 1024;
    return a;
}

static void free_chain(block *b)
{
    while (b) {
        block *next = b->next;
        floe__free(b);
        b = next;
    }
}

void floe__arena_free(floe__arena *a)
{
    if (!a)
        return;
    free_chain(a->head);
    floe__free(a);
}

void floe__arena_reset(floe__arena *a)
{
    if (!a || !a->head)
        return;
    block *last = a->head;               /* keep the oldest block */
    block *prev = NULL;
    while (last->next) {
        prev = last;
        last = last->next;
    }
    if (prev) {
        prev->next = NULL;
        free_chain(a->head);
    }
    last->used = 0;
    a->head = last;
    a->total = 0;
}

void *floe__arena_alloc(floe__arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    block *b = a->head;
    if (!b || b->size - b->used < n) {
        size_t size = n > a->block_size ? n : a->block_size;
        block *nb = floe__malloc(sizeof(block) + size);
        if (!nb)
            return NULL;
        nb->size = size;
        nb->used = 0;
        nb->next = a->head;
        a->head = nb;
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    a->total += n;
    return p;
}

char *floe__arena_strndup(floe__arena *a, const char *s, size_t n)
{
    char *d = floe__arena_alloc(a, n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

size_t floe__arena_used(const floe__arena *a) { return a ? a->total : 0; }

int floe__arena_own_str(floe__arena *a, const char **s)
{
    if (!*s)
        return 0;
    char *copy = floe__arena_strndup(a, *s, strlen(*s));
    if (!copy)
        return -1;
    *s = copy;
    return 0;
}
