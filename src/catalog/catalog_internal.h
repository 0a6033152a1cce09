/*
 * catalog_internal.h - the catalog interface: where tables are registered
 * and how a commit swaps a table's current metadata atomically.
 *
 * A catalog is a vtable object; implementations: sql (SQLite, shared with
 * pyiceberg's SqlCatalog and Java's JdbcCatalog) and rest (the Iceberg REST
 * catalog protocol, rest*.c).  Tables are
 * named by a namespace (its levels joined with '.') and a name.
 *
 * Commits use the REST shapes of requirements and updates (see
 * iceberg/metadata_internal.h): the sql catalog checks and applies them
 * itself, a REST catalog sends them to its server.
 *
 * Error codes common to every implementation:
 *   FLOE_ENOTFOUND  the table (or namespace) does not exist
 *   FLOE_EEXISTS    it exists already (create)
 *   FLOE_ECONFLICT  a requirement failed or another commit won the race:
 *                   nothing changed; reload and retry
 *   FLOE_EUNKNOWN_OUTCOME  the commit may or may not have landed
 *   FLOE_ECATALOG   the catalog itself failed (database error, bad reply)
 */
#ifndef FLOE_CATALOG_INTERNAL_H
#define FLOE_CATALOG_INTERNAL_H

#include "iceberg/iceberg_internal.h"
#include "io/io_internal.h"

/* A table as a catalog hands it out: its metadata and the metadata file it
 * was read from (or written to).  Owned by the caller.  `config` is what a
 * REST catalog vends for reaching the table's files (its LoadTableResult
 * "config", e.g. s3.access-key-id, s3.endpoint, merged with the matching
 * "storage-credentials" entry): an object of strings, or NULL.  It may hold
 * secrets: never print it. */
typedef struct floe__loaded_table {
    floe__metadata *metadata;
    char *metadata_location;
    json_t *config;
} floe__loaded_table;

void floe__loaded_table_free(floe__loaded_table *t);   /* accepts NULL */

/* Names every catalog accepts: a dot-joined namespace without empty
 * levels, and a non-empty table name.  FLOE_EINVAL otherwise. */
int floe__catalog_check_namespace(const char *ns, floe_error *err);
int floe__catalog_check_ident(const char *ns, const char *name, floe_error *err);

typedef struct floe__catalog floe__catalog;

typedef struct floe__catalog_ops {
    const char *name;   /* "sql", "rest" */
    /* Create a namespace with properties (object of strings, may be NULL).
     * FLOE_EEXISTS when it exists. */
    int (*create_namespace)(floe__catalog *c, const char *ns, const json_t *properties,
                            floe_error *err);
    int (*namespace_exists)(floe__catalog *c, const char *ns, bool *exists, floe_error *err);
    /* The namespaces directly below `parent` (NULL or "": the top level), as
     * a new JSON array of dot-joined strings (caller json_decref). */
    int (*list_namespaces)(floe__catalog *c, const char *parent, json_t **out, floe_error *err);
    /* The names of the tables in `ns`, as a new JSON array of strings.
     * FLOE_ENOTFOUND when the namespace does not exist. */
    int (*list_tables)(floe__catalog *c, const char *ns, json_t **out, floe_error *err);
    /* FLOE_ENOTFOUND when the table does not exist. */
    int (*load_table)(floe__catalog *c, const char *ns, const char *name,
                      floe__loaded_table **out, floe_error *err);
    /* Create a table; def->location NULL means the catalog's default
     * location.  FLOE_EEXISTS when it exists, FLOE_ENOTFOUND when the
     * namespace does not. */
    int (*create_table)(floe__catalog *c, const char *ns, const char *name,
                        const floe__table_def *def, floe__loaded_table **out, floe_error *err);
    /* Check `requirements` against the current metadata, apply `updates`
     * (JSON arrays, REST shapes) and swap the table to the result.  With an
     * assert-create requirement a missing table is created.  On success *out
     * is the new state; on FLOE_ECONFLICT nothing changed. */
    int (*commit_table)(floe__catalog *c, const char *ns, const char *name,
                        const json_t *requirements, const json_t *updates,
                        floe__loaded_table **out, floe_error *err);
    /* Unregister the table (its files stay).  FLOE_ENOTFOUND when absent. */
    int (*drop_table)(floe__catalog *c, const char *ns, const char *name, floe_error *err);
    void (*free)(floe__catalog *c);
} floe__catalog_ops;

struct floe__catalog {
    const floe__catalog_ops *ops;
};

static inline int floe__catalog_create_namespace(floe__catalog *c, const char *ns,
                                                 const json_t *properties, floe_error *err)
{
    return c->ops->create_namespace(c, ns, properties, err);
}
static inline int floe__catalog_namespace_exists(floe__catalog *c, const char *ns, bool *exists,
                                                 floe_error *err)
{
    return c->ops->namespace_exists(c, ns, exists, err);
}
static inline int floe__catalog_list_namespaces(floe__catalog *c, const char *parent,
                                                json_t **out, floe_error *err)
{
    return c->ops->list_namespaces(c, parent, out, err);
}
static inline int floe__catalog_list_tables(floe__catalog *c, const char *ns, json_t **out,
                                            floe_error *err)
{
    return c->ops->list_tables(c, ns, out, err);
}
static inline int floe__catalog_load_table(floe__catalog *c, const char *ns, const char *name,
                                           floe__loaded_table **out, floe_error *err)
{
    return c->ops->load_table(c, ns, name, out, err);
}
static inline int floe__catalog_create_table(floe__catalog *c, const char *ns, const char *name,
                                             const floe__table_def *def,
                                             floe__loaded_table **out, floe_error *err)
{
    return c->ops->create_table(c, ns, name, def, out, err);
}
static inline int floe__catalog_commit_table(floe__catalog *c, const char *ns, const char *name,
                                             const json_t *requirements, const json_t *updates,
                                             floe__loaded_table **out, floe_error *err)
{
    return c->ops->commit_table(c, ns, name, requirements, updates, out, err);
}
static inline int floe__catalog_drop_table(floe__catalog *c, const char *ns, const char *name,
                                           floe_error *err)
{
    return c->ops->drop_table(c, ns, name, err);
}
/* Accepts NULL. */
static inline void floe__catalog_free(floe__catalog *c)
{
    if (c)
        c->ops->free(c);
}

/* Read and parse the metadata file at `location` through `io`
 * (catalog.c).  *out is the caller's. */
int floe__catalog_read_metadata(floe__fileio *io, const char *location, floe__metadata **out,
                                floe_error *err);
/* Serialize `md`, write it as the whole object `location` (atomic) and make
 * it durable (floe__fileio_sync), ready for the catalog to point at. */
int floe__catalog_write_metadata(floe__fileio *io, const char *location,
                                 const floe__metadata *md, floe_error *err);

/* ---- the SQLite catalog (sql.c) -------------------------------------------------
 * uri: "sqlite:PATH" or, as pyiceberg (SQLAlchemy) writes it,
 * "sqlite:///PATH" (so "sqlite:////abs/path" is absolute, like SQLAlchemy).
 * catalog_name: the catalog_name column value (NULL: "floe"); readers must
 * use the same.  warehouse: a URI, e.g. "file:///abs/warehouse"; new tables
 * go to <warehouse>/<namespace>/<name> unless the namespace has a
 * "location" property (then <location>/<name>), as pyiceberg lays them out.
 * io is borrowed: it must outlive the catalog.  The catalog tables are
 * created when missing, in the shape both pyiceberg and JdbcCatalog use. */
/* Defaults of SPEC.md section 10. */
#define FLOE_DEFAULT_CATALOG_URI "sqlite:warehouse/catalog.db"
#define FLOE_DEFAULT_CATALOG_NAME "floe"
#define FLOE_DEFAULT_WAREHOUSE "warehouse"

/* Open the catalog and the storage `o` names (NULL: all defaults; NULL
 * fields fall back to their environment variables, see floe.h).  *io is
 * the FileIO for the warehouse (and what the catalog reads and writes
 * metadata through); free the catalog first, then *io. */
int floe__catalog_open(const floe_connect_options *o, floe__fileio **io, floe__catalog **out,
                       floe_error *err);
/* The options with environment variables and defaults applied (the
 * strings point into `o`, the environment or static defaults). */
void floe__connect_resolve(const floe_connect_options *o, floe_connect_options *out);


int floe__catalog_sql_open(const char *uri, const char *catalog_name, const char *warehouse,
                           floe__fileio *io, floe__catalog **out, floe_error *err);
/* FLOE_ENOTFOUND (saying so) unless the database file of a sqlite: URI
 * exists: for commands that only read and must create nothing. */
int floe__catalog_sql_require(const char *uri, floe_error *err);

/* ---- the REST catalog (rest.c) --------------------------------------------------
 * o: resolved options (floe__connect_resolve); o->catalog is the
 * "http(s)://" base URI (requests go to <base>/v1/...).  Authenticates
 * (o->token, o->credential, SigV4 with o->sigv4_region), asks GET
 * /v1/config?warehouse=<o->warehouse> for the prefix and the server's
 * defaults and overrides, and keeps one HTTP connection for every later
 * request.  TLS is verified (o->ca_file adds a CA).  The environment
 * variable FLOE_CATALOG_TIMEOUT_MS, when set, bounds every request (default
 * 120000), e.g. to test a hanging server.  Errors: FLOE_ENET (unreachable),
 * FLOE_EAUTH (credentials refused), FLOE_ECATALOG (a bad reply), FLOE_EINVAL
 * (a malformed option). */
int floe__catalog_rest_open(const floe_connect_options *o, floe__catalog **out, floe_error *err);
/* Tokens the catalog fetched from its OAuth2 endpoint so far (0 for other
 * catalogs or other authentication); for tests and metrics. */
uint64_t floe__catalog_rest_token_fetches(const floe__catalog *c);

#endif /* FLOE_CATALOG_INTERNAL_H */
