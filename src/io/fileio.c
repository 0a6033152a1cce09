/*
 * fileio.c - helpers shared by every FileIO implementation (the interface
 * itself is in io_internal.h), and the FileIO that connection options
 * call for.
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

int floe__fileio_for_connect(const floe_connect_options *o, floe__fileio **out,
                             floe_error *err)
{
    floe__s3_options so;
    floe__s3_options_init(&so);
    so.endpoint = o->s3_endpoint;
    so.region = o->s3_region;
    so.access_key_id = o->s3_access_key_id;
    so.secret_access_key = o->s3_secret_access_key;
    so.session_token = o->s3_session_token;
    so.path_style = o->s3_path_style;
    so.ca_file = o->ca_file;
    return floe__fileio_s3_new(&so, out, err);
}
