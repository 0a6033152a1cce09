/*
 * buf.c - growable byte buffers with a hard maximum.
 */
#include <stdio.h>

#include "util/util_internal.h"

#define DEFAULT_MAX (SIZE_MAX / 2)

void floe__buf_init(floe__buf *b, size_t max)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->max = max ? max : DEFAULT_MAX;
}

void floe__buf_free(floe__buf *b)
{
    floe__free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void floe__buf_shrink(floe__buf *b)
{
    if (b->len == b->cap)
        return;
    if (b->len == 0) {
        floe__buf_free(b);
        return;
    }
    uint8_t *p = floe__realloc(b->data, b->len);
    if (p) {
        b->data = p;
        b->cap = b->len;
    }
}

int floe__buf_grow(floe__buf *b, size_t extra, floe_error *err)
{
    if (b->max == 0)
        b->max = DEFAULT_MAX;
    if (extra > b->max || b->len > b->max - extra)
        return floe__err_set(err, FLOE_ELIMIT, "buffer would exceed its limit of %zu bytes",
                             b->max);
    size_t need = b->len + extra;
    size_t cap = b->cap ? b->cap : 64;
    if (cap <= b->max / 2 && need > cap * 2)
        cap = need;                 /* one big value: no doubling past it */
    while (cap < need)
        cap = cap > b->max / 2 ? b->max : cap * 2;
    uint8_t *p = floe__realloc(b->data, cap);
    if (!p)
        return FLOE_OOM(err);
    b->data = p;
    b->cap = cap;
    return FLOE_OK;
}

int floe__buf_append(floe__buf *b, const void *p, size_t n, floe_error *err)
{
    if (n == 0)
        return FLOE_OK;
    FLOE_FORWARD(floe__buf_reserve(b, n, err));
    if (n)
        floe__buf_put_unchecked(b, p, n);
    return FLOE_OK;
}

int floe__buf_putc(floe__buf *b, uint8_t c, floe_error *err)
{
    FLOE_FORWARD(floe__buf_reserve(b, 1, err));
    b->data[b->len++] = c;
    return FLOE_OK;
}

int floe__buf_printf(floe__buf *b, floe_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return floe__err_set(err, FLOE_EINTERNAL, "bad format string");
    FLOE_FORWARD(floe__buf_reserve(b, (size_t)n + 1, err));
    va_start(ap, fmt);
    vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return FLOE_OK;
}

char *floe__buf_strdup(const floe__buf *b)
{
    return floe__strndup(b->len ? (const char *)b->data : "", b->len);
}
