/*
 * output.c - the in-memory floe__output (tests, small objects, manifests
 * that are built whole before they are stored), and writing a whole
 * buffer to a file descriptor.
 */
#include <errno.h>
#include <unistd.h>

#include "util/util_internal.h"

int floe__write_all(int fd, const void *p, size_t n, const char *what, floe_error *err)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return floe__err_set(err, FLOE_EIO, "writing %s: %s", what, strerror(errno));
        b += w;
        n -= (size_t)w;
    }
    return FLOE_OK;
}

typedef struct memory_output {
    floe__output base;
    floe__buf *dst;
} memory_output;

static int memory_write(floe__output *o, const void *p, size_t n, floe_error *err)
{
    return floe__buf_append(((memory_output *)o)->dst, p, n, err);
}

static int memory_close(floe__output *o, floe_error *err)
{
    (void)err;
    floe__free(o);
    return FLOE_OK;
}

static void memory_abort(floe__output *o)
{
    floe__buf_reset(((memory_output *)o)->dst);
    floe__free(o);
}

floe__output *floe__output_memory(floe__buf *dst)
{
    memory_output *m = floe__calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->base.write = memory_write;
    m->base.close = memory_close;
    m->base.abort = memory_abort;
    m->dst = dst;
    return &m->base;
}
