/*
 * catalog.c - what every catalog implementation shares: the loaded-table
 * result and reading / writing metadata files through a FileIO.
 */
#include "catalog/catalog_internal.h"

void floe__loaded_table_free(floe__loaded_table *t)
{
    if (!t)
        return;
    floe__metadata_free(t->metadata);
    floe__free(t->metadata_location);
    floe__free(t);
}

int floe__catalog_read_metadata(floe__fileio *io, const char *location, floe__metadata **out,
                                floe_error *err)
{
    floe__buf b;
    floe__buf_init(&b, FLOE_METADATA_MAX_BYTES);
    int rc = floe__fileio_read_all(io, location, &b, err);
    if (rc == FLOE_OK)
        rc = floe__metadata_parse(b.data, b.len, out, err);
    floe__buf_free(&b);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "reading table metadata %s", location);
    return FLOE_OK;
}

int floe__catalog_write_metadata(floe__fileio *io, const char *location,
                                 const floe__metadata *md, floe_error *err)
{
    floe__buf b;
    floe__buf_init(&b, 0);
    int rc = floe__metadata_write_json(md, &b, err);
    if (rc == FLOE_OK)
        rc = floe__fileio_write_all(io, location, b.data, b.len, err);
    floe__buf_free(&b);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "writing table metadata %s", location);
    return FLOE_OK;
}
