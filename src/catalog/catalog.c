/*
 * catalog.c - what every catalog implementation shares: the loaded-table
 * result, reading / writing metadata files through a FileIO, the
 * connection options with their environment fallbacks, and opening the
 * catalog a URI names (sqlite: -> sql.c, http(s):// -> rest.c).
 */
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "catalog/catalog_internal.h"

void floe__loaded_table_free(floe__loaded_table *t)
{
    if (!t)
        return;
    floe__metadata_free(t->metadata);
    floe__free(t->metadata_location);
    json_decref(t->config);
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

int floe__catalog_check_namespace(const char *ns, floe_error *err)
{
    if (!ns || !*ns)
        return floe__err_set(err, FLOE_EINVAL, "empty namespace");
    if (ns[0] == '.' || floe__str_ends(ns, ".") || strstr(ns, ".."))
        return floe__err_set(err, FLOE_EINVAL, "namespace \"%s\" has an empty level", ns);
    return FLOE_OK;
}

int floe__catalog_check_ident(const char *ns, const char *name, floe_error *err)
{
    FLOE_FORWARD(floe__catalog_check_namespace(ns, err));
    if (!name || !*name)
        return floe__err_set(err, FLOE_EINVAL, "empty table name in namespace %s", ns);
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

/* New tables' files go to local files or S3; anything else fails before a
 * namespace or table is made. */
static int check_warehouse_scheme(const char *wh, floe_error *err)
{
    static const char *const ok[] = {"file:", "s3://", "s3a://", "s3n://"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (floe__str_starts(wh, ok[i]))
            return FLOE_OK;
    char shown[256];
    floe__url_for_message(wh, shown, sizeof shown);
    return floe__err_set(err, FLOE_EUNSUPPORTED, "warehouse %s: floe stores files on the local "
                         "file system (a path or file://) or on S3 (s3://bucket/prefix)", shown);
}

void floe_connect_options_init(floe_connect_options *o, size_t size)
{
    floe_connect_options d = {.size = sizeof d, .s3_path_style = -1};
    floe__abi_init(o, size, &d, sizeof d);
}

static const char *pick(const char *given, const char *env, const char *dflt)
{
    if (given)
        return given;
    const char *v = env ? getenv(env) : NULL;
    return v && *v ? v : dflt;
}

void floe__connect_resolve(const floe_connect_options *o, floe_connect_options *out)
{
    floe_connect_options none;
    if (!o) {
        floe_connect_options_init(&none, sizeof none);
        o = &none;
    }
    *out = *o;
    out->catalog = pick(o->catalog, "FLOE_CATALOG", FLOE_DEFAULT_CATALOG_URI);
    out->catalog_name = pick(o->catalog_name, NULL, FLOE_DEFAULT_CATALOG_NAME);
    out->warehouse = pick(o->warehouse, "FLOE_WAREHOUSE", NULL);
    out->token = pick(o->token, "FLOE_CATALOG_TOKEN", NULL);
    out->credential = pick(o->credential, "FLOE_CATALOG_CREDENTIAL", NULL);
    out->sigv4_region = pick(o->sigv4_region, "FLOE_CATALOG_SIGV4_REGION", NULL);
    out->s3_endpoint = pick(o->s3_endpoint, "AWS_ENDPOINT_URL_S3", NULL);
    out->s3_region = pick(o->s3_region, "AWS_REGION", NULL);
    out->s3_access_key_id = pick(o->s3_access_key_id, "AWS_ACCESS_KEY_ID", NULL);
    out->s3_secret_access_key = pick(o->s3_secret_access_key, "AWS_SECRET_ACCESS_KEY", NULL);
    out->s3_session_token = pick(o->s3_session_token, "AWS_SESSION_TOKEN", NULL);
    out->ca_file = pick(o->ca_file, "FLOE_CA_FILE", NULL);
}

/* A REST catalog: the server writes the metadata; floe's FileIO (S3 or
 * local files, by scheme) reaches the data files under the locations the
 * server reports, with the settings it sends per table (table.c). */
static int open_rest(const floe_connect_options *o, floe__fileio **io, floe__catalog **out,
                     floe_error *err)
{
    FLOE_FORWARD(floe__fileio_for_connect(o, io, err));
    int rc = floe__catalog_rest_open(o, out, err);
    if (rc != FLOE_OK) {
        floe__fileio_free(*io);
        *io = NULL;
    }
    return rc;
}

int floe__catalog_open(const floe_connect_options *opts, floe__fileio **io, floe__catalog **out,
                       floe_error *err)
{
    floe_connect_options o;
    floe__connect_resolve(opts, &o);
    *io = NULL;
    if (floe__str_starts(o.catalog, "http://") || floe__str_starts(o.catalog, "https://"))
        return open_rest(&o, io, out, err);
    if (!floe__str_starts(o.catalog, "sqlite:") && !floe__str_starts(o.catalog, "jdbc:sqlite:"))
        return floe__err_set(err, FLOE_EINVAL,
                             "unknown catalog URI '%s' (want sqlite:PATH or http(s)://...)",
                             o.catalog);
    if (o.must_exist)
        FLOE_FORWARD(floe__catalog_sql_require(o.catalog, err));
    char *wh = NULL;
    FLOE_FORWARD(warehouse_uri(o.warehouse ? o.warehouse : FLOE_DEFAULT_WAREHOUSE, &wh, err));
    int scheme = check_warehouse_scheme(wh, err);
    if (scheme != FLOE_OK) {
        floe__free(wh);
        return scheme;
    }
    /* S3 and local files by scheme: metadata may point anywhere */
    int rc = floe__fileio_for_connect(&o, io, err);
    if (rc == FLOE_OK)
        rc = floe__catalog_sql_open(o.catalog, o.catalog_name, wh, *io, out, err);
    floe__free(wh);
    if (rc != FLOE_OK) {
        floe__fileio_free(*io);
        *io = NULL;
    }
    return rc;
}
