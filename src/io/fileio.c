/*
 * fileio.c - helpers shared by every FileIO implementation (the interface
 * itself is in io_internal.h).
 */
#include "io/io_internal.h"

int floe__fileio_write_all(floe__fileio *io, const char *uri, const void *p, size_t n,
                           floe_error *err)
{
    floe__output *o;
    FLOE_FORWARD(floe__fileio_open_output(io, uri, &o, err));
    int rc = floe__output_write(o, p, n, err);
    if (rc != FLOE_OK) {
        o->abort(o);
        return rc;
    }
    return o->close(o, err);
}
