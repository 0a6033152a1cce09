/*
 * alloc.c - the one place libfloe gets memory from.
 *
 * Every allocation in the library goes through floe__malloc and friends.  A
 * thread-local countdown (floe__alloc_fail_after) makes one chosen allocation
 * fail, so tests can walk every out-of-memory path (the habit of SQLite's and
 * curl's test suites).  It is the library's only mutable static state, it is
 * per thread, and it is inert (-1) unless a test arms it.
 */
#include <stdlib.h>

#include "util/util_internal.h"

static _Thread_local long fail_countdown = -1;

void floe__alloc_fail_after(long n) { fail_countdown = n; }

static bool should_fail(void)
{
    if (fail_countdown < 0)
        return false;
    if (fail_countdown == 0) {
        fail_countdown = -1;
        return true;
    }
    fail_countdown--;
    return false;
}

void *floe__malloc(size_t n)
{
    if (should_fail())
        return NULL;
    return malloc(n ? n : 1);
}

void *floe__calloc(size_t count, size_t size)
{
    if (should_fail())
        return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *floe__realloc(void *p, size_t n)
{
    if (should_fail())
        return NULL;
    return realloc(p, n ? n : 1);
}

void floe__free(void *p) { free(p); }

void floe_free(void *p) { free(p); }

char *floe__strndup(const char *s, size_t n)
{
    char *d = floe__malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

char *floe__strdup(const char *s) { return s ? floe__strndup(s, strlen(s)) : NULL; }
