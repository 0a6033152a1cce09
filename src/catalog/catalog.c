/*
 * catalog.c - what every catalog implementation shares: the loaded-table
 * result and reading / writing metadata files through a FileIO.
 */
#include <limits.h>
#include <unistd.h>

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
    if (rc == FLOE_OK)                  /* durable before the catalog points at it */
        rc = floe__fileio_sync(io, err);
    floe__buf_free(&b);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "writing table metadata %s", location);
    return FLOE_OK;
}

/* A warehouse given as a plain path becomes an absolute file:// URI. */
static int warehouse_uri(const char *warehouse, char **out, floe_error *err)
{
    if (strstr(warehouse, "://") || floe__str_starts(warehouse, "file:")) {
        *out = floe__strdup(warehouse);
        return *out ? FLOE_OK : FLOE_OOM(err);
    }
    if (warehouse[0] == '/') {
        *out = floe__sprintf("file://%s", warehouse);
        return *out ? FLOE_OK : FLOE_OOM(err);
    }
    char cwd[PATH_MAX];
    FLOE_RETURN_IF(!getcwd(cwd, sizeof cwd), err, FLOE_EIO,
                   "cannot find the working directory for the warehouse %s", warehouse);
    const char *rel = warehouse[0] == '.' && warehouse[1] == '/' ? warehouse + 2 : warehouse;
    char *abs = strcmp(rel, ".") == 0 ? floe__strdup(cwd) : floe__path_join(cwd, rel);
    *out = abs ? floe__sprintf("file://%s", abs) : NULL;
    floe__free(abs);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

int floe__catalog_open(const char *uri, const char *name, const char *warehouse,
                       floe__fileio *io, floe__catalog **out, floe_error *err)
{
    uri = uri ? uri : FLOE_DEFAULT_CATALOG_URI;
    name = name ? name : FLOE_DEFAULT_CATALOG_NAME;
    if (floe__str_starts(uri, "http://") || floe__str_starts(uri, "https://"))
        return floe__err_set(err, FLOE_EUNSUPPORTED,
                             "REST catalogs (%s) are not supported yet", uri);
    if (!floe__str_starts(uri, "sqlite:") && !floe__str_starts(uri, "jdbc:sqlite:"))
        return floe__err_set(err, FLOE_EINVAL,
                             "unknown catalog URI '%s' (want sqlite:PATH or http(s)://...)", uri);
    char *wh = NULL;
    FLOE_FORWARD(warehouse_uri(warehouse ? warehouse : FLOE_DEFAULT_WAREHOUSE, &wh, err));
    int rc = floe__catalog_sql_open(uri, name, wh, io, out, err);
    floe__free(wh);
    return rc;
}
