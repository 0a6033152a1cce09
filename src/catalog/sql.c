/*
 * sql.c - the SQLite catalog, sharing its database with pyiceberg's
 * SqlCatalog and Iceberg Java's JdbcCatalog.
 *
 * Tables (created when missing, in the shape both create them):
 *   iceberg_tables(catalog_name, table_namespace, table_name,
 *                  metadata_location, previous_metadata_location,
 *                  iceberg_type)          PK (catalog_name, table_namespace, table_name)
 *   iceberg_namespace_properties(catalog_name, namespace, property_key,
 *                  property_value)        PK (catalog_name, namespace, property_key)
 * A database made before views existed ("V0": no iceberg_type column) is
 * used as it is, never migrated; with the column, rows are written with
 * iceberg_type 'TABLE' and views (iceberg_type 'VIEW') are ignored.
 *
 * Namespaces are dot-joined strings.  A namespace exists when a table or a
 * property row names it or a namespace below it; creating one writes its
 * properties plus exists=true.
 *
 * A commit reads the current metadata, checks the requirements, applies the
 * updates, writes the next metadata file and then compare-and-swaps the
 * pointer:
 *   UPDATE iceberg_tables SET metadata_location = new, previous_metadata_location = old
 *    WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?
 *      AND metadata_location = old
 * which must change exactly one row; otherwise another commit won
 * (FLOE_ECONFLICT) and the file just written is removed.  Every statement
 * runs in autocommit mode (or BEGIN IMMEDIATE for multi-row writes) under a
 * busy timeout, so concurrent processes wait for the lock instead of
 * failing with "database is locked"; a timeout still reads as a conflict.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <unistd.h>

#include "catalog/catalog_internal.h"

#define BUSY_TIMEOUT_MS 30000
#define TYPE_FILTER " AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)"

typedef struct sql_catalog {
    floe__catalog base;
    sqlite3 *db;
    char *name;         /* catalog_name */
    char *warehouse;    /* trimmed, or NULL */
    floe__fileio *io;   /* borrowed */
    bool v1;            /* iceberg_type column present */
} sql_catalog;

/* ---- statements ------------------------------------------------------------------- */

/* A failed SQLite call as a floe error: lock contention that outlasted the
 * busy timeout is a retryable conflict, anything else a catalog error. */
static int db_error(sql_catalog *c, int rc, const char *what, floe_error *err)
{
    int primary = rc & 0xff;
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
        return floe__err_set(err, FLOE_ECONFLICT, "catalog database busy (%s): %s", what,
                             sqlite3_errmsg(c->db));
    return floe__err_set(err, FLOE_ECATALOG, "catalog database error (%s): %s", what,
                         sqlite3_errmsg(c->db));
}

/* Prepare `sql` and bind `n` strings; a NULL string binds SQL NULL.  `sql`
 * is a format: its "%s" (if any) becomes the table-type filter when the
 * database has the iceberg_type column, else nothing.  Values are always
 * bound, never formatted in. */
static int prep(sql_catalog *c, const char *sql, const char *const *args, int n,
                sqlite3_stmt **st, floe_error *err)
{
    char *text = floe__sprintf(sql, c->v1 ? TYPE_FILTER : "");
    if (!text)
        return FLOE_OOM(err);
    int rc = sqlite3_prepare_v2(c->db, text, -1, st, NULL);
    floe__free(text);
    if (rc != SQLITE_OK)
        return db_error(c, rc, "prepare", err);
    for (int i = 0; i < n; i++) {
        rc = args[i] ? sqlite3_bind_text(*st, i + 1, args[i], -1, SQLITE_TRANSIENT)
                     : sqlite3_bind_null(*st, i + 1);
        if (rc != SQLITE_OK) {
            int r = db_error(c, rc, "bind", err);
            sqlite3_finalize(*st);
            return r;
        }
    }
    return FLOE_OK;
}

/* Run a statement that returns no rows; *changes (may be NULL) receives the
 * number of rows it changed.  Returns the raw SQLite code in *sqlrc. */
static int exec_args(sql_catalog *c, const char *sql, const char *const *args, int n,
                     int *changes, int *sqlrc, floe_error *err)
{
    sqlite3_stmt *st;
    FLOE_FORWARD(prep(c, sql, args, n, &st, err));
    int rc = sqlite3_step(st);
    if (sqlrc)
        *sqlrc = rc;
    int result = FLOE_OK;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        result = db_error(c, rc, "execute", err);
    else if (changes)
        *changes = sqlite3_changes(c->db);
    sqlite3_finalize(st);
    return result;
}

static int exec_plain(sql_catalog *c, const char *sql, floe_error *err)
{
    return exec_args(c, sql, NULL, 0, NULL, NULL, err);
}

/* ---- names ----------------------------------------------------------------------- */

/* "ns" -> "ns.%" with LIKE's wildcards escaped by '!'. */
static char *like_children(const char *ns)
{
    size_t n = strlen(ns);
    char *p = floe__malloc(2 * n + 3);
    if (!p)
        return NULL;
    char *o = p;
    for (size_t i = 0; i < n; i++) {
        if (ns[i] == '!' || ns[i] == '%' || ns[i] == '_')
            *o++ = '!';
        *o++ = ns[i];
    }
    memcpy(o, ".%", 3);
    return p;
}

/* Whether `candidate` is `ns` or below it (LIKE is case-insensitive, so
 * the match is confirmed here byte for byte). */
static bool within(const char *candidate, const char *ns)
{
    size_t n = strlen(ns);
    return strncmp(candidate, ns, n) == 0 && (candidate[n] == '\0' || candidate[n] == '.');
}

/* ---- namespaces ------------------------------------------------------------------ */

static int ns_exists_in(sql_catalog *c, const char *sql, const char *ns, bool *found,
                        floe_error *err)
{
    char *like = like_children(ns);
    if (!like)
        return FLOE_OOM(err);
    const char *args[] = {c->name, ns, like};
    sqlite3_stmt *st;
    int rc = prep(c, sql, args, 3, &st, err);
    floe__free(like);
    FLOE_FORWARD(rc);
    int s;
    while (!*found && (s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(st, 0);
        *found = v && within(v, ns);
    }
    rc = (*found || s == SQLITE_DONE) ? FLOE_OK : db_error(c, s, "namespace lookup", err);
    sqlite3_finalize(st);
    return rc;
}

static int sql_namespace_exists(floe__catalog *base, const char *ns, bool *exists,
                                floe_error *err)
{
    sql_catalog *c = (sql_catalog *)base;
    FLOE_FORWARD(floe__catalog_check_namespace(ns, err));
    bool found = false;
    FLOE_FORWARD(ns_exists_in(c,
                              "SELECT table_namespace FROM iceberg_tables WHERE catalog_name = ?"
                              " AND (table_namespace = ? OR table_namespace LIKE ? ESCAPE '!')",
                              ns, &found, err));
    if (!found)
        FLOE_FORWARD(ns_exists_in(c,
                                  "SELECT namespace FROM iceberg_namespace_properties WHERE"
                                  " catalog_name = ? AND (namespace = ? OR namespace LIKE ?"
                                  " ESCAPE '!')",
                                  ns, &found, err));
    *exists = found;
    return FLOE_OK;
}

static int insert_ns_property(sql_catalog *c, const char *ns, const char *key, const char *value,
                              floe_error *err)
{
    const char *args[] = {c->name, ns, key, value};
    int sqlrc = 0;
    int rc = exec_args(c,
                       "INSERT INTO iceberg_namespace_properties (catalog_name, namespace,"
                       " property_key, property_value) VALUES (?, ?, ?, ?)",
                       args, 4, NULL, &sqlrc, err);
    if (rc != FLOE_OK && (sqlrc & 0xff) == SQLITE_CONSTRAINT)
        return floe__err_set(err, FLOE_EEXISTS, "namespace %s already exists", ns);
    return rc;
}

static int insert_ns_properties(sql_catalog *c, const char *ns, const json_t *props,
                                floe_error *err)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)props, k, v)
        FLOE_FORWARD(insert_ns_property(c, ns, k, json_string_value(v), err));
    if (!json_object_get(props, "exists"))
        FLOE_FORWARD(insert_ns_property(c, ns, "exists", "true", err));
    return FLOE_OK;
}

static int sql_create_namespace(floe__catalog *base, const char *ns, const json_t *props,
                                floe_error *err)
{
    sql_catalog *c = (sql_catalog *)base;
    bool exists;
    FLOE_FORWARD(sql_namespace_exists(base, ns, &exists, err));
    if (exists)
        return floe__err_set(err, FLOE_EEXISTS, "namespace %s already exists", ns);
    if (props && !json_is_object(props))
        return floe__err_set(err, FLOE_EINVAL, "namespace properties must be an object");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)props, k, v) {
        if (!json_is_string(v))
            return floe__err_set(err, FLOE_EINVAL, "namespace property %s must be a string", k);
    }
    FLOE_FORWARD(exec_plain(c, "BEGIN IMMEDIATE", err));
    int rc = insert_ns_properties(c, ns, props, err);
    if (rc == FLOE_OK)
        rc = exec_plain(c, "COMMIT", err);
    if (rc != FLOE_OK)
        sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Append `ns` truncated to depth(parent)+1 levels to `out` when it lies
 * below `parent` ("" = the top), unless already there. */
static int add_child(json_t *out, const char *ns, const char *parent, floe_error *err)
{
    size_t plen = strlen(parent);
    if (plen && (strncmp(ns, parent, plen) != 0 || ns[plen] != '.'))
        return FLOE_OK;
    const char *start = plen ? ns + plen + 1 : ns;
    const char *dot = strchr(start, '.');
    size_t n = dot ? (size_t)(dot - ns) : strlen(ns);
    size_t i;
    json_t *e;
    json_array_foreach(out, i, e) {
        if (strlen(json_string_value(e)) == n && strncmp(json_string_value(e), ns, n) == 0)
            return FLOE_OK;
    }
    if (json_array_append_new(out, json_stringn(ns, n)) != 0)
        return FLOE_OOM(err);
    return FLOE_OK;
}

static int sql_list_namespaces(floe__catalog *base, const char *parent, json_t **out,
                               floe_error *err)
{
    sql_catalog *c = (sql_catalog *)base;
    if (!parent)
        parent = "";
    if (*parent) {
        bool exists;
        FLOE_FORWARD(sql_namespace_exists(base, parent, &exists, err));
        if (!exists)
            return floe__err_set(err, FLOE_ENOTFOUND, "namespace %s does not exist", parent);
    }
    const char *args[] = {c->name, c->name};
    sqlite3_stmt *st;
    FLOE_FORWARD(prep(c,
                      "SELECT table_namespace FROM iceberg_tables WHERE catalog_name = ?"
                      " UNION SELECT namespace FROM iceberg_namespace_properties"
                      " WHERE catalog_name = ? ORDER BY 1",
                      args, 2, &st, err));
    json_t *list = json_array();
    int rc = list ? FLOE_OK : FLOE_OOM(err), s = SQLITE_DONE;
    while (rc == FLOE_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *ns = (const char *)sqlite3_column_text(st, 0);
        if (ns)
            rc = add_child(list, ns, parent, err);
    }
    if (rc == FLOE_OK && s != SQLITE_DONE)
        rc = db_error(c, s, "list namespaces", err);
    sqlite3_finalize(st);
    if (rc != FLOE_OK) {
        json_decref(list);
        return rc;
    }
    *out = list;
    return FLOE_OK;
}

static int sql_list_tables(floe__catalog *base, const char *ns, json_t **out, floe_error *err)
{
    sql_catalog *c = (sql_catalog *)base;
    bool exists;
    FLOE_FORWARD(sql_namespace_exists(base, ns, &exists, err));
    if (!exists)
        return floe__err_set(err, FLOE_ENOTFOUND, "namespace %s does not exist", ns);
    const char *args[] = {c->name, ns};
    sqlite3_stmt *st;
    FLOE_FORWARD(prep(c,
                      "SELECT table_name FROM iceberg_tables WHERE catalog_name = ?"
                      " AND table_namespace = ?%s ORDER BY table_name",
                      args, 2, &st, err));
    json_t *list = json_array();
    int rc = list ? FLOE_OK : FLOE_OOM(err), s = SQLITE_DONE;
    while (rc == FLOE_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (name && json_array_append_new(list, json_string(name)) != 0)
            rc = FLOE_OOM(err);
    }
    if (rc == FLOE_OK && s != SQLITE_DONE)
        rc = db_error(c, s, "list tables", err);
    sqlite3_finalize(st);
    if (rc != FLOE_OK) {
        json_decref(list);
        return rc;
    }
    *out = list;
    return FLOE_OK;
}

/* ---- tables -------------------------------------------------------------------------- */

/* The table's row: *found, and its metadata_location (caller frees; NULL
 * when the column is NULL). */
static int get_row(sql_catalog *c, const char *ns, const char *name, bool *found, char **loc,
                   floe_error *err)
{
    const char *args[] = {c->name, ns, name};
    sqlite3_stmt *st;
    FLOE_FORWARD(prep(c,
                      "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ?"
                      " AND table_namespace = ? AND table_name = ?%s",
                      args, 3, &st, err));
    int s = sqlite3_step(st), rc = FLOE_OK;
    *found = s == SQLITE_ROW;
    *loc = NULL;
    if (s == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *loc = floe__strdup((const char *)sqlite3_column_text(st, 0));
        if (!*loc)
            rc = FLOE_OOM(err);
    } else if (s != SQLITE_ROW && s != SQLITE_DONE) {
        rc = db_error(c, s, "load table", err);
    }
    sqlite3_finalize(st);
    return rc;
}

static int make_loaded(floe__metadata *md, const char *loc, floe__loaded_table **out,
                       floe_error *err)
{
    floe__loaded_table *t = floe__calloc(1, sizeof *t);
    char *l = floe__strdup(loc);
    if (!t || !l) {
        floe__free(t);
        floe__free(l);
        floe__metadata_free(md);
        return FLOE_OOM(err);
    }
    t->metadata = md;
    t->metadata_location = l;
    *out = t;
    return FLOE_OK;
}

/* Read the metadata the row points to; a missing file is a broken
 * catalog entry (FLOE_EIO), not a missing table. */
static int read_current(sql_catalog *c, const char *ns, const char *name, const char *loc,
                        floe__metadata **md, floe_error *err)
{
    if (!loc)
        return floe__err_set(err, FLOE_ECATALOG, "table %s.%s has no metadata location", ns,
                             name);
    int rc = floe__catalog_read_metadata(c->io, loc, md, err);
    if (rc == FLOE_ENOTFOUND)
        return floe__err_set(err, FLOE_EIO, "table %s.%s: its metadata file %s is missing", ns,
                             name, loc);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "table %s.%s", ns, name);
    return FLOE_OK;
}

static int sql_load_table(floe__catalog *base, const char *ns, const char *name,
                          floe__loaded_table **out, floe_error *err)
{
    sql_catalog *c = (sql_catalog *)base;
    FLOE_FORWARD(floe__catalog_check_ident(ns, name, err));
    bool found;
    char *loc;
    FLOE_FORWARD(get_row(c, ns, name, &found, &loc, err));
    if (!found)
        return floe__err_set(err, FLOE_ENOTFOUND, "table %s.%s does not exist", ns, name);
    floe__metadata *md = NULL;
    int rc = read_current(c, ns, name, loc, &md, err);
    if (rc == FLOE_OK)
        rc = make_loaded(md, loc, out, err);
    floe__free(loc);
    return rc;
}

/* Where a new table goes when no location is given: <ns location>/<name>
 * when the namespace has a "location" property, else
 * <warehouse>/<ns>/<name> (pyiceberg's layout). */
static int default_location(sql_catalog *c, const char *ns, const char *name, char **out,
                            floe_error *err)
{
    const char *args[] = {c->name, ns};
    sqlite3_stmt *st;
    FLOE_FORWARD(prep(c,
                      "SELECT property_value FROM iceberg_namespace_properties WHERE"
                      " catalog_name = ? AND namespace = ? AND property_key = 'location'",
                      args, 2, &st, err));
    char *nsloc = NULL;
    int s = sqlite3_step(st), rc = FLOE_OK;
    if (s == SQLITE_ROW && sqlite3_column_text(st, 0) && *sqlite3_column_text(st, 0)) {
        nsloc = floe__strdup((const char *)sqlite3_column_text(st, 0));
        rc = nsloc ? FLOE_OK : FLOE_OOM(err);
    } else if (s != SQLITE_ROW && s != SQLITE_DONE) {
        rc = db_error(c, s, "namespace location", err);
    }
    sqlite3_finalize(st);
    FLOE_FORWARD(rc);
    if (nsloc) {
        *out = floe__path_join(nsloc, name);
        floe__free(nsloc);
        return *out ? FLOE_OK : FLOE_OOM(err);
    }
    if (!c->warehouse)
        return floe__err_set(err, FLOE_EINVAL,
                             "table %s.%s: no location given and the catalog has no warehouse",
                             ns, name);
    char *dir = floe__path_join(c->warehouse, ns);
    *out = dir ? floe__path_join(dir, name) : NULL;
    floe__free(dir);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

static int require_namespace(sql_catalog *c, const char *ns, floe_error *err)
{
    bool exists;
    FLOE_FORWARD(sql_namespace_exists(&c->base, ns, &exists, err));
    if (!exists)
        return floe__err_set(err, FLOE_ENOTFOUND, "namespace %s does not exist", ns);
    return FLOE_OK;
}

/* Register a new table whose first metadata file is written already; on
 * failure the file is removed.  A lost race is `exists_code`. */
static int insert_table(sql_catalog *c, const char *ns, const char *name, const char *loc,
                        int exists_code, floe_error *err)
{
    const char *args[] = {c->name, ns, name, loc};
    int sqlrc = 0;
    int rc = exec_args(c,
                       c->v1 ? "INSERT INTO iceberg_tables (catalog_name, table_namespace,"
                               " table_name, metadata_location, previous_metadata_location,"
                               " iceberg_type) VALUES (?, ?, ?, ?, NULL, 'TABLE')"
                             : "INSERT INTO iceberg_tables (catalog_name, table_namespace,"
                               " table_name, metadata_location, previous_metadata_location)"
                               " VALUES (?, ?, ?, ?, NULL)",
                       args, 4, NULL, &sqlrc, err);
    if (rc == FLOE_OK)
        return FLOE_OK;
    floe__fileio_remove(c->io, loc, NULL);
    if ((sqlrc & 0xff) == SQLITE_CONSTRAINT)
        return floe__err_set(err, exists_code, "table %s.%s already exists", ns, name);
    return rc;
}

/* Write `md` as a new table's first metadata file and register it. */
static int register_new(sql_catalog *c, const char *ns, const char *name, floe__metadata *md,
                        int exists_code, floe__loaded_table **out, floe_error *err)
{
    char *loc = NULL;
    int rc = floe__metadata_new_file_location(md, NULL, &loc, err);
    if (rc == FLOE_OK)
        rc = floe__catalog_write_metadata(c->io, loc, md, err);
    if (rc == FLOE_OK)
        rc = insert_table(c, ns, name, loc, exists_code, err);
    if (rc == FLOE_OK)
        rc = make_loaded(md, loc, out, err);
    else
        floe__metadata_free(md);
    floe__free(loc);
    return rc;
}

static int sql_create_table(floe__catalog *base, const char *ns, const char *name,
                            const floe__table_def *def, floe__loaded_table **out,
                            floe_error *err)
{
    sql_catalog *c = (sql_catalog *)base;
    FLOE_FORWARD(floe__catalog_check_ident(ns, name, err));
    FLOE_FORWARD(require_namespace(c, ns, err));
    bool found;
    char *loc = NULL;
    FLOE_FORWARD(get_row(c, ns, name, &found, &loc, err));
    floe__free(loc);
    if (found)
        return floe__err_set(err, FLOE_EEXISTS, "table %s.%s already exists", ns, name);
    floe__table_def d = *def;
    char *where = NULL;
    int rc = d.location ? FLOE_OK : default_location(c, ns, name, &where, err);
    if (where)
        d.location = where;
    floe__metadata *md = NULL;
    if (rc == FLOE_OK)
        rc = floe__metadata_create(&d, floe__now_ms(), &md, err);
    if (rc == FLOE_OK)
        rc = register_new(c, ns, name, md, FLOE_EEXISTS, out, err);
    floe__free(where);
    return rc;
}

static bool has_entry(const json_t *list, const char *key, const char *value)
{
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        const char *v = json_string_value(json_object_get(e, key));
        if (v && strcmp(v, value) == 0)
            return true;
    }
    return false;
}

/* Commit to a table that does not exist: allowed with assert-create (a
 * create transaction); the default location is added when the updates set
 * none. */
static int commit_create(sql_catalog *c, const char *ns, const char *name,
                         const json_t *requirements, const json_t *updates,
                         floe__loaded_table **out, floe_error *err)
{
    if (!has_entry(requirements, "type", "assert-create"))
        return floe__err_set(err, FLOE_ENOTFOUND, "table %s.%s does not exist", ns, name);
    FLOE_FORWARD(floe__metadata_check(NULL, requirements, err));
    FLOE_FORWARD(require_namespace(c, ns, err));
    json_t *ups = json_is_array(updates) ? json_copy((json_t *)updates) : json_array();
    if (!ups)
        return FLOE_OOM(err);
    int rc = FLOE_OK;
    if (!has_entry(ups, "action", "set-location")) {
        char *loc = NULL;
        rc = default_location(c, ns, name, &loc, err);
        if (rc == FLOE_OK &&
            json_array_append_new(ups, json_pack("{s:s, s:s}", "action", "set-location",
                                                 "location", loc)) != 0)
            rc = FLOE_OOM(err);
        floe__free(loc);
    }
    floe__metadata *md = NULL;
    if (rc == FLOE_OK)
        rc = floe__metadata_apply(NULL, NULL, ups, floe__now_ms(), &md, NULL, err);
    json_decref(ups);
    if (rc == FLOE_OK)
        rc = register_new(c, ns, name, md, FLOE_ECONFLICT, out, err);
    return rc;
}

/* After a failed swap statement: did it land anyway?  1 yes, 0 no, -1 the
 * row could not be read. */
static int swap_landed(sql_catalog *c, const char *ns, const char *name, const char *new_loc)
{
    bool found;
    char *loc = NULL;
    if (get_row(c, ns, name, &found, &loc, NULL) != FLOE_OK)
        return -1;
    int landed = found && loc && strcmp(loc, new_loc) == 0;
    floe__free(loc);
    return landed;
}

/* The compare-and-swap of the metadata pointer from old_loc to new_loc. */
static int swap_pointer(sql_catalog *c, const char *ns, const char *name, const char *old_loc,
                        const char *new_loc, floe_error *err)
{
    const char *args[] = {new_loc, old_loc, c->name, ns, name, old_loc};
    int changes = 0, sqlrc = 0;
    int rc = exec_args(c,
                       "UPDATE iceberg_tables SET metadata_location = ?,"
                       " previous_metadata_location = ? WHERE catalog_name = ?"
                       " AND table_namespace = ? AND table_name = ? AND metadata_location = ?%s",
                       args, 6, &changes, &sqlrc, err);
    if (rc == FLOE_OK && changes == 1)
        return FLOE_OK;
    if (rc == FLOE_OK) {
        floe__fileio_remove(c->io, new_loc, NULL);
        return floe__err_set(err, FLOE_ECONFLICT,
                             "table %s.%s was changed by a concurrent commit (it no longer points"
                             " at %s)", ns, name, old_loc);
    }
    if (rc == FLOE_ECONFLICT) {             /* busy: the statement did not run */
        floe__fileio_remove(c->io, new_loc, NULL);
        return rc;
    }
    int landed = swap_landed(c, ns, name, new_loc);
    if (landed == 1)
        return FLOE_OK;
    if (landed == 0) {
        floe__fileio_remove(c->io, new_loc, NULL);
        return rc;
    }
    return floe__err_recode(err, FLOE_EUNKNOWN_OUTCOME, "commit to %s.%s may or may not have "
                                                        "landed", ns, name);
}

/* write.metadata.delete-after-commit.enabled: the metadata files the
 * bounded metadata-log let go are deleted once the new file is in place,
 * as Java's catalogs do (failures only leave orphans). */
static void delete_dropped_metadata(sql_catalog *c, const floe__metadata *before,
                                    const floe__metadata *after)
{
    const char *on = floe__metadata_property(after, "write.metadata.delete-after-commit.enabled");
    if (!on || strcmp(on, "true") != 0)
        return;
    size_t n_after = floe__metadata_metadata_log_count(after);
    for (size_t i = 0; i < floe__metadata_metadata_log_count(before); i++) {
        const char *f = floe__metadata_metadata_log_at(before, i)->metadata_file;
        bool kept = false;
        for (size_t j = 0; j < n_after && !kept; j++)
            kept = strcmp(floe__metadata_metadata_log_at(after, j)->metadata_file, f) == 0;
        if (!kept)
            floe__fileio_remove(c->io, f, NULL);
    }
}

static int commit_existing(sql_catalog *c, const char *ns, const char *name, const char *cur_loc,
                           const json_t *requirements, const json_t *updates,
                           floe__loaded_table **out, floe_error *err)
{
    floe__metadata *cur = NULL, *next = NULL;
    FLOE_FORWARD(read_current(c, ns, name, cur_loc, &cur, err));
    bool changed = false;
    int rc = floe__metadata_check(cur, requirements, err);
    if (rc == FLOE_OK)
        rc = floe__metadata_apply(cur, cur_loc, updates, floe__now_ms(), &next, &changed, err);
    if (rc != FLOE_OK) {
        floe__metadata_free(cur);
        return floe__err_wrap(err, rc, "commit to %s.%s", ns, name);
    }
    if (!changed) {
        floe__metadata_free(cur);
        return make_loaded(next, cur_loc, out, err);
    }
    char *new_loc = NULL;
    rc = floe__metadata_new_file_location(next, cur_loc, &new_loc, err);
    if (rc == FLOE_OK)
        rc = floe__catalog_write_metadata(c->io, new_loc, next, err);
    if (rc == FLOE_OK)
        rc = swap_pointer(c, ns, name, cur_loc, new_loc, err);
    if (rc == FLOE_OK)
        delete_dropped_metadata(c, cur, next);
    floe__metadata_free(cur);
    if (rc == FLOE_OK)
        rc = make_loaded(next, new_loc, out, err);
    else
        floe__metadata_free(next);
    floe__free(new_loc);
    return rc;
}

static int sql_commit_table(floe__catalog *base, const char *ns, const char *name,
                            const json_t *requirements, const json_t *updates,
                            floe__loaded_table **out, floe_error *err)
{
    sql_catalog *c = (sql_catalog *)base;
    FLOE_FORWARD(floe__catalog_check_ident(ns, name, err));
    if ((requirements && !json_is_array(requirements)) || (updates && !json_is_array(updates)))
        return floe__err_set(err, FLOE_EINVAL, "requirements and updates must be JSON arrays");
    bool found;
    char *loc = NULL;
    FLOE_FORWARD(get_row(c, ns, name, &found, &loc, err));
    int rc = found ? commit_existing(c, ns, name, loc, requirements, updates, out, err)
                   : commit_create(c, ns, name, requirements, updates, out, err);
    floe__free(loc);
    return rc;
}

static int sql_drop_table(floe__catalog *base, const char *ns, const char *name,
                          floe_error *err)
{
    sql_catalog *c = (sql_catalog *)base;
    FLOE_FORWARD(floe__catalog_check_ident(ns, name, err));
    const char *args[] = {c->name, ns, name};
    int changes = 0;
    FLOE_FORWARD(exec_args(c,
                           "DELETE FROM iceberg_tables WHERE catalog_name = ?"
                           " AND table_namespace = ? AND table_name = ?%s",
                           args, 3, &changes, NULL, err));
    if (changes == 0)
        return floe__err_set(err, FLOE_ENOTFOUND, "table %s.%s does not exist", ns, name);
    return FLOE_OK;
}

static void sql_free(floe__catalog *base)
{
    sql_catalog *c = (sql_catalog *)base;
    sqlite3_close(c->db);
    floe__free(c->name);
    floe__free(c->warehouse);
    floe__free(c);
}

static const floe__catalog_ops SQL_OPS = {
    .name = "sql",
    .create_namespace = sql_create_namespace,
    .namespace_exists = sql_namespace_exists,
    .list_namespaces = sql_list_namespaces,
    .list_tables = sql_list_tables,
    .load_table = sql_load_table,
    .create_table = sql_create_table,
    .commit_table = sql_commit_table,
    .drop_table = sql_drop_table,
    .free = sql_free,
};

/* ---- opening ----------------------------------------------------------------------- */

/* The database file of a catalog URI (caller frees). */
static int db_path(const char *uri, char **out, floe_error *err)
{
    const char *p;
    if (floe__str_starts(uri, "sqlite:///"))
        p = uri + strlen("sqlite:///");           /* SQLAlchemy: "sqlite:////abs" is absolute */
    else if (floe__str_starts(uri, "sqlite://"))
        return floe__err_set(err, FLOE_EINVAL,
                             "catalog URI %s: use sqlite:PATH or sqlite:///PATH", uri);
    else if (floe__str_starts(uri, "sqlite:"))
        p = uri + strlen("sqlite:");
    else if (floe__str_starts(uri, "jdbc:sqlite:"))
        p = uri + strlen("jdbc:sqlite:");
    else
        return floe__err_set(err, FLOE_EINVAL, "catalog URI %s is not a sqlite: URI", uri);
    size_t n = strcspn(p, "?");
    if (n == 0)
        return floe__err_set(err, FLOE_EINVAL, "catalog URI %s names no database file", uri);
    *out = floe__strndup(p, n);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

int floe__catalog_sql_require(const char *uri, floe_error *err)
{
    char *path = NULL;
    FLOE_FORWARD(db_path(uri, &path, err));
    int rc = access(path, F_OK) == 0 ? FLOE_OK
                                     : floe__err_set(err, FLOE_ENOTFOUND,
                                                     "there is no catalog database at %s (floe "
                                                     "sink and floe append create one; --catalog "
                                                     "names another)", path);
    floe__free(path);
    return rc;
}

/* Create the directory holding the database file when it is missing. */
static int make_parent(const char *path, floe_error *err)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return FLOE_OK;
    char *dir = floe__strndup(path, (size_t)(slash - path));
    if (!dir)
        return FLOE_OOM(err);
    int rc = floe__local_mkdirs(dir, err);
    floe__free(dir);
    return rc;
}

static int init_schema(sql_catalog *c, floe_error *err)
{
    FLOE_FORWARD(exec_plain(c,
                            "CREATE TABLE IF NOT EXISTS iceberg_tables ("
                            "catalog_name VARCHAR(255) NOT NULL,"
                            " table_namespace VARCHAR(255) NOT NULL,"
                            " table_name VARCHAR(255) NOT NULL,"
                            " metadata_location VARCHAR(1000),"
                            " previous_metadata_location VARCHAR(1000),"
                            " iceberg_type VARCHAR(5),"
                            " PRIMARY KEY (catalog_name, table_namespace, table_name))",
                            err));
    FLOE_FORWARD(exec_plain(c,
                            "CREATE TABLE IF NOT EXISTS iceberg_namespace_properties ("
                            "catalog_name VARCHAR(255) NOT NULL,"
                            " namespace VARCHAR(255) NOT NULL,"
                            " property_key VARCHAR(255) NOT NULL,"
                            " property_value VARCHAR(1000) NOT NULL,"
                            " PRIMARY KEY (catalog_name, namespace, property_key))",
                            err));
    sqlite3_stmt *st = NULL;
    c->v1 = sqlite3_prepare_v2(c->db, "SELECT iceberg_type FROM iceberg_tables LIMIT 0", -1,
                               &st, NULL) == SQLITE_OK;
    sqlite3_finalize(st);
    return FLOE_OK;
}

static int open_db(sql_catalog *c, const char *uri, floe_error *err)
{
    char *path = NULL;
    FLOE_FORWARD(db_path(uri, &path, err));
    int rc = make_parent(path, err);
    if (rc == FLOE_OK) {
        int s = sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
        if (s != SQLITE_OK)
            rc = floe__err_set(err, FLOE_ECATALOG, "cannot open catalog database %s: %s", path,
                               c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(s));
    }
    floe__free(path);
    FLOE_FORWARD(rc);
    sqlite3_extended_result_codes(c->db, 1);
    sqlite3_busy_timeout(c->db, BUSY_TIMEOUT_MS);
    return init_schema(c, err);
}

int floe__catalog_sql_open(const char *uri, const char *catalog_name, const char *warehouse,
                           floe__fileio *io, floe__catalog **out, floe_error *err)
{
    if (!uri || !io)
        return floe__err_set(err, FLOE_EINVAL, "sql catalog: a URI and a FileIO are required");
    sql_catalog *c = floe__calloc(1, sizeof *c);
    if (!c)
        return FLOE_OOM(err);
    c->base.ops = &SQL_OPS;
    c->io = io;
    c->name = floe__strdup(catalog_name && *catalog_name ? catalog_name : "floe");
    c->warehouse = warehouse && *warehouse ? floe__location_trim(warehouse) : NULL;
    int rc = (!c->name || (warehouse && *warehouse && !c->warehouse)) ? FLOE_OOM(err)
                                                                       : open_db(c, uri, err);
    if (rc != FLOE_OK) {
        sql_free(&c->base);
        return floe__err_wrap(err, rc, "opening catalog %s", uri);
    }
    *out = &c->base;
    return FLOE_OK;
}
