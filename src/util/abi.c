/*
 * abi.c - what lets the public API grow without breaking programs built
 * against an older header (include/floe.h, "Growing"; docs/api.md): the
 * library's version at run time, and the copying of the caller's structs,
 * each of which begins with its size, in and out of the library's own.
 */
#include "util/util_internal.h"

const char *floe_version(void) { return FLOE_VERSION_STRING; }

unsigned floe_version_number(void) { return FLOE_VERSION_NUMBER; }

/* The largest struct size believed: beyond it, `size` is garbage (a struct
 * never set up), not a newer header. */
#define SIZE_SANE ((size_t)1 << 16)

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

void floe__abi_init(void *dst, size_t size, const void *defaults, size_t full)
{
    if (!dst || size < sizeof(size_t))
        return;
    memcpy(dst, defaults, min_size(size, full));
    if (size > full)
        memset((char *)dst + full, 0, size - full);
    memcpy(dst, &size, sizeof size);
}

int floe__abi_in(void *dst, size_t full, const void *src, const char *what, floe_error *err)
{
    size_t size;
    memcpy(&size, src, sizeof size);
    if (size < sizeof(size_t) || size > SIZE_SANE)
        return floe__err_set(err, FLOE_EINVAL, "%s was not set up by its _init(&o, sizeof o) "
                             "(its size field is %zu)", what, size);
    if (size > full) {
        const unsigned char *tail = (const unsigned char *)src + full;
        for (size_t i = 0; i < size - full; i++)
            if (tail[i])
                return floe__err_set(err, FLOE_EUNSUPPORTED, "%s sets a field this libfloe "
                                     "(%s, whose struct has %zu bytes) does not know (the "
                                     "program's has %zu): it needs a newer libfloe",
                                     what, FLOE_VERSION_STRING, full, size);
    }
    memcpy(dst, src, min_size(size, full));
    memcpy(dst, &full, sizeof full);
    return FLOE_OK;
}

void floe__abi_out(void *dst, size_t size, const void *src, size_t full)
{
    if (!dst || size < sizeof(size_t))
        return;
    size_t n = min_size(size, full);
    memcpy(dst, src, n);
    if (size > full)
        memset((char *)dst + full, 0, size - full);
    memcpy(dst, &n, sizeof n);
}
