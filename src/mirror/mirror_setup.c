/*
 * mirror_setup.c - what floe_pg_open checks and decides before anything
 * is copied or streamed: the server (wal_level, encoding), the tables
 * (from --tables or the publication), the publication (created or
 * completed when asked), each table's columns, types and key, and a sink
 * per table on one catalog.
 *
 * Refused up front, with the statement that fixes it: a table that is
 * missing, not a table (plain or partitioned: mirror_part.c), not readable (SELECT), without a primary
 * key or replica identity (REPLICA IDENTITY NOTHING, or DEFAULT without a
 * primary key), keyed by the whole row (FULL without a primary key) with
 * columns that cannot be compared, or whose values Postgres may store out
 * of line (TOAST) while its old rows are not sent whole (not FULL): an
 * update that leaves such a value unchanged does not carry it
 * (docs/postgres.md says why floe asks for FULL rather than reading the
 * live row back).  A publication with a row filter or a column list for a
 * table is refused too (the copy would not match the stream).
 */
#include <stdio.h>

#include "mirror/mirror_internal.h"

#define MIN_TABLE_MEMORY ((size_t)32 << 20)

/* ---- small helpers -------------------------------------------------------------------------- */

static int query1(floe_pg *pg, const char *sql, const char *a, const char *b,
                  floe__pg_result **r, floe_error *err)
{
    const char *params[2] = {a, b};
    int n = b ? 2 : a ? 1 : 0;
    return floe__pg_query(pg->conn, sql, params, n, r, err);
}

static bool yes(const char *v) { return v && v[0] == 't'; }

/* ---- the server ------------------------------------------------------------------------------ */

static int check_server(floe_pg *pg, floe_error *err)
{
    pg->server_version = floe__pg_server_version(pg->conn);
    FLOE_RETURN_IF(pg->server_version < 120000, err, FLOE_EUNSUPPORTED,
                   "Postgres %d.%d at %s: floe needs Postgres 12 or later",
                   pg->server_version / 10000, pg->server_version % 10000 / 100,
                   floe__pg_where(pg->conn));
    floe__pg_result *r = NULL;
    FLOE_FORWARD(query1(pg, "SELECT current_setting('wal_level'), current_database(), "
                            "pg_encoding_to_char(d.encoding), current_user, (SELECT "
                            "system_identifier FROM pg_control_system())::text FROM pg_database "
                            "d WHERE d.datname = current_database()", NULL, NULL, &r, err));
    const char *wal = floe__pg_get(r, 0, 0), *db = floe__pg_get(r, 0, 1);
    const char *enc = floe__pg_get(r, 0, 2), *sys = floe__pg_get(r, 0, 4);
    snprintf(pg->system_id, sizeof pg->system_id, "%s", sys ? sys : "");
    int rc = FLOE_OK;
    if (!wal || strcmp(wal, "logical") != 0)
        rc = floe__err_set(err, FLOE_ESTATE, "wal_level is '%s' on %s: logical replication "
                           "needs wal_level = logical (ALTER SYSTEM SET wal_level = logical, "
                           "then restart Postgres)", wal ? wal : "?", floe__pg_where(pg->conn));
    else if (!enc || strcmp(enc, "UTF8") != 0)
        rc = floe__err_set(err, FLOE_EUNSUPPORTED, "database %s is encoded %s: floe mirrors "
                           "UTF8 databases only", db ? db : "?", enc ? enc : "?");
    else if (!(pg->database = floe__strdup(db ? db : "")))
        rc = FLOE_OOM(err);
    floe__pg_result_free(r);
    return rc;
}

/* ---- the tables named ------------------------------------------------------------------------ */

static int add_table(floe_pg *pg, const char *nsp, size_t nn, const char *rel, size_t rn,
                     floe_error *err)
{
    for (size_t i = 0; i < pg->ntables; i++)
        if (strlen(pg->tables[i].nsp) == nn && memcmp(pg->tables[i].nsp, nsp, nn) == 0 &&
            strlen(pg->tables[i].rel) == rn && memcmp(pg->tables[i].rel, rel, rn) == 0)
            return floe__err_set(err, FLOE_EINVAL, "table %.*s.%.*s is named twice", (int)nn,
                                 nsp, (int)rn, rel);
    floe__mtable *a = floe__realloc(pg->tables, (pg->ntables + 1) * sizeof *a);
    if (!a)
        return FLOE_OOM(err);
    pg->tables = a;
    floe__mtable *t = &a[pg->ntables];
    memset(t, 0, sizeof *t);
    t->index = (uint32_t)pg->ntables++;
    t->nsp = floe__strndup(nsp, nn);
    t->rel = floe__strndup(rel, rn);
    t->source = floe__sprintf("%.*s.%.*s", (int)nn, nsp, (int)rn, rel);
    return t->nsp && t->rel && t->source ? FLOE_OK : FLOE_OOM(err);
}

typedef int (*name_fn)(floe_pg *pg, const char *nsp, size_t nn, const char *rel, size_t rn,
                       floe_error *err);

/* Each name of a list "a.b, c" (an option's): a name without a schema is
 * in public. */
static int each_name(floe_pg *pg, const char *list, const char *option, name_fn fn,
                     floe_error *err)
{
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ','), *e = comma ? comma : p + strlen(p);
        while (p < e && *p == ' ')
            p++;
        const char *q = e;
        while (q > p && q[-1] == ' ')
            q--;
        FLOE_RETURN_IF(q == p, err, FLOE_EINVAL, "%s has an empty name", option);
        const char *dot = memchr(p, '.', (size_t)(q - p));
        if (dot)
            FLOE_FORWARD(fn(pg, p, (size_t)(dot - p), dot + 1, (size_t)(q - dot - 1), err));
        else
            FLOE_FORWARD(fn(pg, "public", 6, p, (size_t)(q - p), err));
        p = comma ? comma + 1 : e;
    }
    return FLOE_OK;
}

static int parse_tables(floe_pg *pg, const char *list, floe_error *err)
{
    FLOE_FORWARD(each_name(pg, list, "--tables", add_table, err));
    FLOE_RETURN_IF(!pg->ntables, err, FLOE_EINVAL, "--tables names no table");
    return FLOE_OK;
}

/* --resync: the table is copied again once streaming starts (a table
 * without progress is copied anyway). */
static int ask_resync(floe_pg *pg, const char *nsp, size_t nn, const char *rel, size_t rn,
                      floe_error *err)
{
    for (size_t i = 0; i < pg->ntables; i++) {
        floe__mtable *t = &pg->tables[i];
        if (strlen(t->nsp) == nn && memcmp(t->nsp, nsp, nn) == 0 && strlen(t->rel) == rn &&
            memcmp(t->rel, rel, rn) == 0) {
            if (!t->copy)
                floe__mirror_resync_mark(pg, t, "asked by --resync");
            return FLOE_OK;
        }
    }
    return floe__err_set(err, FLOE_EINVAL, "--resync names %.*s.%.*s, which is not one of the "
                         "mirrored tables", (int)nn, nsp, (int)rn, rel);
}

/* --partition-by "SCHEMA.TABLE=SPEC,...": each named table's spec.  A
 * spec has commas of its own ("day(ts), bucket(16, id)"): a part between
 * commas outside parentheses that holds '=' starts the next table, one
 * without continues the spec before it. */
static int partition_specs(floe_pg *pg, const char *list, floe_error *err)
{
    floe__mtable *cur = NULL;
    for (const char *p = list; *p;) {
        const char *e = p;
        for (int depth = 0; *e && (depth > 0 || *e != ','); e++)
            depth += *e == '(' ? 1 : *e == ')' ? -1 : 0;
        while (p < e && *p == ' ')
            p++;
        const char *q = e;
        while (q > p && q[-1] == ' ')
            q--;
        const char *eq = memchr(p, '=', (size_t)(q - p));
        const char *paren = memchr(p, '(', (size_t)(q - p));
        char *spec = NULL;
        if (eq && (!paren || eq < paren)) {
            const char *n = p, *ne = eq;
            while (ne > n && ne[-1] == ' ')
                ne--;
            const char *dot = memchr(n, '.', (size_t)(ne - n));
            char *name = dot ? floe__strndup(n, (size_t)(ne - n))
                             : floe__sprintf("public.%.*s", (int)(ne - n), n);
            if (!name)
                return FLOE_OOM(err);
            cur = NULL;
            for (size_t i = 0; i < pg->ntables && !cur; i++)
                if (strcmp(pg->tables[i].source, name) == 0)
                    cur = &pg->tables[i];
            int rc = !cur ? floe__err_set(err, FLOE_EINVAL, "--partition-by names %s, which is "
                                          "not one of the mirrored tables", name)
                     : cur->partition_by ? floe__err_set(err, FLOE_EINVAL, "--partition-by "
                                                         "names %s twice", name)
                                         : FLOE_OK;
            floe__free(name);
            FLOE_FORWARD(rc);
            for (eq++; eq < q && *eq == ' '; eq++)
                ;
            FLOE_RETURN_IF(eq == q, err, FLOE_EINVAL, "--partition-by: %s has an empty spec",
                           cur->source);
            spec = floe__strndup(eq, (size_t)(q - eq));
        } else {
            FLOE_RETURN_IF(!cur, err, FLOE_EINVAL, "--partition-by '%.*s' does not start with "
                           "SCHEMA.TABLE=", (int)(q - p), p);
            FLOE_RETURN_IF(q == p, err, FLOE_EINVAL, "--partition-by: %s has an empty field",
                           cur->source);
            spec = floe__sprintf("%s, %.*s", cur->partition_by, (int)(q - p), p);
        }
        if (!spec)
            return FLOE_OOM(err);
        floe__free(cur->partition_by);
        cur->partition_by = spec;
        p = *e ? e + 1 : e;
    }
    return FLOE_OK;
}

/* ---- the publication ---------------------------------------------------------------------------- */

/* "a"."b", "c"."d" of the tables for which want(t) holds. */
static int table_list(floe_pg *pg, const bool *want, floe__buf *b, floe_error *err)
{
    bool first = true;
    for (size_t i = 0; i < pg->ntables; i++) {
        if (!want[i])
            continue;
        if (!first)
            FLOE_FORWARD(floe__buf_append(b, ", ", 2, err));
        FLOE_FORWARD(floe__pg_quote_ident(pg->tables[i].nsp, b, err));
        FLOE_FORWARD(floe__buf_putc(b, '.', err));
        FLOE_FORWARD(floe__pg_quote_ident(pg->tables[i].rel, b, err));
        first = false;
    }
    return floe__buf_putc(b, 0, err);
}

/* CREATE PUBLICATION or ALTER PUBLICATION ... ADD TABLE for the tables in want. */
static int publication_statement(floe_pg *pg, bool create, const bool *want, floe__buf *sql,
                                 floe_error *err)
{
    floe__buf list;
    floe__buf_init(&list, 1 << 20);
    int rc = table_list(pg, want, &list, err);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(sql, err, create ? "CREATE PUBLICATION " : "ALTER PUBLICATION ");
    if (rc == FLOE_OK)
        rc = floe__pg_quote_ident(pg->pub_name, sql, err);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(sql, err, "%s %s", create ? " FOR TABLE" : " ADD TABLE",
                              (const char *)list.data);
    if (rc == FLOE_OK && create && floe__mirror_part_via_root(pg))   /* a partitioned table */
        rc = floe__buf_printf(sql, err, " WITH (publish_via_partition_root = true)");
    if (rc == FLOE_OK)
        rc = floe__buf_putc(sql, 0, err);
    floe__buf_free(&list);
    return rc;
}

static int fix_publication(floe_pg *pg, bool create, const bool *want, floe_error *err)
{
    floe__buf sql;
    floe__buf_init(&sql, 1 << 20);
    int rc = publication_statement(pg, create, want, &sql, err);
    if (rc == FLOE_OK && !pg->opts.create_publication)
        rc = floe__err_set(err, FLOE_ESTATE, create ? "publication \"%s\" does not exist: "
                           "create it (%s) or pass --create-publication"
                           : "publication \"%s\" does not publish every table: add them (%s) "
                             "or pass --create-publication", pg->pub_name,
                           (const char *)sql.data);
    if (rc == FLOE_OK) {
        rc = floe__pg_exec(pg->conn, (const char *)sql.data, err);
        if (rc == FLOE_OK)
            floe__mirror_notice(pg, "%s", (const char *)sql.data);
        else
            floe__err_wrap(err, rc, "%s", (const char *)sql.data);
    }
    floe__buf_free(&sql);
    return rc;
}

/* The publication's tables, added to pg->tables (no --tables). */
static int tables_of_publication(floe_pg *pg, floe_error *err)
{
    floe__pg_result *r = NULL;
    FLOE_FORWARD(query1(pg, "SELECT schemaname, tablename FROM pg_publication_tables WHERE "
                            "pubname = $1 ORDER BY 1, 2", pg->pub_name, NULL, &r, err));
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < floe__pg_rows(r); i++) {
        const char *n = floe__pg_get(r, i, 0), *t = floe__pg_get(r, i, 1);
        rc = add_table(pg, n, strlen(n), t, strlen(t), err);
    }
    floe__pg_result_free(r);
    FLOE_RETURN_IF(rc == FLOE_OK && !pg->ntables, err, FLOE_ESTATE, "publication \"%s\" has no "
                   "tables", pg->pub_name);
    return rc;
}

/* Which of the tables the publication lacks (want[i]); *n of them. */
static int missing_tables(floe_pg *pg, bool *want, size_t *n, floe_error *err)
{
    floe__pg_result *r = NULL;
    FLOE_FORWARD(query1(pg, "SELECT schemaname, tablename FROM pg_publication_tables WHERE "
                            "pubname = $1", pg->pub_name, NULL, &r, err));
    *n = 0;
    for (size_t i = 0; i < pg->ntables; i++) {
        want[i] = true;
        for (size_t j = 0; j < floe__pg_rows(r) && want[i]; j++)
            want[i] = !(strcmp(floe__pg_get(r, j, 0), pg->tables[i].nsp) == 0 &&
                        strcmp(floe__pg_get(r, j, 1), pg->tables[i].rel) == 0);
        *n += want[i];
    }
    floe__pg_result_free(r);
    return FLOE_OK;
}

static int check_actions(floe_pg *pg, floe__pg_result *r, floe_error *err)
{
    if (!yes(floe__pg_get(r, 0, 0)) || !yes(floe__pg_get(r, 0, 1)) ||
        !yes(floe__pg_get(r, 0, 2)))
        return floe__err_set(err, FLOE_ESTATE, "publication \"%s\" does not publish every "
                             "insert, update and delete: ALTER PUBLICATION \"%s\" SET (publish "
                             "= 'insert, update, delete, truncate')", pg->pub_name,
                             pg->pub_name);
    if (!yes(floe__pg_get(r, 0, 3)))
        floe__mirror_warn(pg, "publication \"%s\" does not publish TRUNCATE: a TRUNCATE of its "
                          "tables would not reach floe, and the Iceberg tables would keep the "
                          "rows", pg->pub_name);
    return FLOE_OK;
}

/* Whether the publication exists (its actions checked when it does). */
static int publication_exists(floe_pg *pg, bool *exists, floe_error *err)
{
    floe__pg_result *r = NULL;
    FLOE_FORWARD(query1(pg, "SELECT pubinsert, pubupdate, pubdelete, pubtruncate, puballtables "
                            "FROM pg_publication WHERE pubname = $1", pg->pub_name, NULL, &r,
                        err));
    *exists = floe__pg_rows(r) > 0;
    int rc = *exists ? check_actions(pg, r, err) : FLOE_OK;
    floe__pg_result_free(r);
    return rc;
}

/* The tables: --tables, else the publication's. */
static int resolve_tables(floe_pg *pg, floe_error *err)
{
    bool exists;
    FLOE_FORWARD(publication_exists(pg, &exists, err));
    if (pg->opts.tables)
        return parse_tables(pg, pg->opts.tables, err);
    FLOE_RETURN_IF(!exists, err, FLOE_ESTATE, "publication \"%s\" does not exist: name the "
                   "tables (--tables) to have it created, or create it", pg->pub_name);
    return tables_of_publication(pg, err);
}

/* After every table passed its checks: the publication publishes them all
 * (created or completed when asked). */
static int setup_publication(floe_pg *pg, floe_error *err)
{
    bool exists;
    FLOE_FORWARD(publication_exists(pg, &exists, err));
    if (!pg->opts.tables)
        return FLOE_OK;
    bool *want = floe__calloc(pg->ntables, sizeof *want);
    if (!want)
        return FLOE_OOM(err);
    size_t n = pg->ntables;
    for (size_t i = 0; i < pg->ntables; i++)
        want[i] = true;
    int rc = exists ? floe__mirror_part_publication(pg, err) : FLOE_OK;
    if (rc == FLOE_OK && exists)
        rc = missing_tables(pg, want, &n, err);
    if (rc == FLOE_OK && n)
        rc = fix_publication(pg, !exists, want, err);
    floe__free(want);
    return rc;
}

/* Postgres 15: row filters and column lists change what the stream sends. */
static int check_filters(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    if (pg->server_version < 150000)
        return FLOE_OK;
    /* the table's own entry in the publication (FOR ALL TABLES and TABLES IN
     * SCHEMA have none, and neither filters nor column lists) */
    char relid[16];
    snprintf(relid, sizeof relid, "%u", t->relid);
    floe__pg_result *r = NULL;
    FLOE_FORWARD(query1(pg, "SELECT r.prqual IS NOT NULL, r.prattrs IS NOT NULL FROM "
                            "pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid "
                            "WHERE p.pubname = $1 AND r.prrelid = $2", pg->pub_name, relid, &r,
                        err));
    int rc = FLOE_OK;
    if (floe__pg_rows(r) && yes(floe__pg_get(r, 0, 0)))
        rc = floe__err_set(err, FLOE_EUNSUPPORTED, "publication \"%s\" filters the rows of %s "
                           "(a WHERE clause): floe mirrors whole tables", pg->pub_name,
                           t->source);
    else if (floe__pg_rows(r) && yes(floe__pg_get(r, 0, 1)))
        rc = floe__err_set(err, FLOE_EUNSUPPORTED, "publication \"%s\" publishes a column list "
                           "of %s: floe mirrors whole tables, columns added later included",
                           pg->pub_name, t->source);
    floe__pg_result_free(r);
    return rc;
}

/* ---- one table ---------------------------------------------------------------------------------- */

/* pg_class.relkind as Postgres's documentation names it. */
static const char *relkind_name(char k)
{
    switch (k) {
    case 'v': return "a view";
    case 'm': return "a materialized view";
    case 'f': return "a foreign table";
    case 'p': return "a partitioned table";
    case 'S': return "a sequence";
    case 'i': case 'I': return "an index";
    case 'c': return "a composite type";
    case 't': return "a TOAST table";
    default: return "a relation of another kind";
    }
}

static int describe_class(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    floe__pg_result *r = NULL;
    FLOE_FORWARD(query1(pg, "SELECT c.oid, c.relkind, c.relreplident, "
                            "has_table_privilege(c.oid, 'SELECT'), c.relispartition FROM "
                            "pg_class c JOIN "
                            "pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND "
                            "c.relname = $2", t->nsp, t->rel, &r, err));
    int rc = FLOE_OK;
    const char *kind = floe__pg_get(r, 0, 1);
    if (!floe__pg_rows(r))
        rc = floe__err_set(err, FLOE_ENOTFOUND, "table %s does not exist in database %s (names "
                           "are matched exactly; a mirrored table dropped in Postgres: floe pg "
                           "--drop-table %s stops mirroring it, then leave it out of --tables)",
                           t->source, pg->database, t->source);
    else if (kind[0] != 'r' && kind[0] != 'p')
        rc = floe__err_set(err, FLOE_EUNSUPPORTED, "%s is %s, not a table: floe mirrors tables, "
                           "plain or partitioned", t->source, relkind_name(kind[0]));
    else if (!yes(floe__pg_get(r, 0, 3)))
        rc = floe__err_set(err, FLOE_EPERM, "no SELECT privilege on %s: GRANT SELECT ON %s TO "
                           "the role floe connects as", t->source, t->source);
    if (rc == FLOE_OK) {
        t->relid = (uint32_t)strtoul(floe__pg_get(r, 0, 0), NULL, 10);
        t->replident = floe__pg_get(r, 0, 2)[0];
        t->stream_replident = t->replident;
        rc = floe__mirror_part_describe(pg, t, kind[0], yes(floe__pg_get(r, 0, 4)), err);
    }
    floe__pg_result_free(r);
    return rc;
}

/* The converter of type oid with typmod: domains to their base, arrays
 * and ranges of scalars, enums and the rest as text. */
static int resolve_type(floe_pg *pg, uint32_t oid, int32_t typmod, int depth, floe__pg_type *out,
                        floe_error *err);

int floe__mirror_resolve_type(floe_pg *pg, uint32_t oid, int32_t typmod, floe__pg_type *out,
                              floe_error *err)
{
    return resolve_type(pg, oid, typmod, 0, out, err);
}

static int resolve_type(floe_pg *pg, uint32_t oid, int32_t typmod, int depth, floe__pg_type *out,
                        floe_error *err)
{
    char o[16];
    snprintf(o, sizeof o, "%u", oid);
    floe__pg_result *r = NULL;
    char mod[16];
    snprintf(mod, sizeof mod, "%d", (int)typmod);
    FLOE_FORWARD(query1(pg, "SELECT t.typtype, t.typbasetype, t.typtypmod, t.typelem, "
                            "t.typcategory, t.typlen, (SELECT rngsubtype FROM pg_range WHERE "
                            "rngtypid = t.oid), t.typname, format_type(t.oid, $2::int) FROM "
                            "pg_type t WHERE t.oid = $1", o, mod, &r, err));
    int rc = FLOE_OK;
    const char *tt = floe__pg_get(r, 0, 0), *cat = floe__pg_get(r, 0, 4);
    uint32_t base = floe__pg_rows(r) ? (uint32_t)strtoul(floe__pg_get(r, 0, 1), NULL, 10) : 0;
    uint32_t elem = floe__pg_rows(r) ? (uint32_t)strtoul(floe__pg_get(r, 0, 3), NULL, 10) : 0;
    const char *sub = floe__pg_get(r, 0, 6), *len = floe__pg_get(r, 0, 5);
    if (!tt || depth > 8) {
        floe__pg_scalar_type(0, -1, out);                  /* unknown: text */
    } else if (tt[0] == 'd') {
        int32_t m = typmod >= 0 ? typmod : (int32_t)strtol(floe__pg_get(r, 0, 2), NULL, 10);
        rc = resolve_type(pg, base, m, depth + 1, out, err);
    } else if (tt[0] == 'r' && sub) {
        rc = resolve_type(pg, (uint32_t)strtoul(sub, NULL, 10), -1, depth + 1, out, err);
        if (rc == FLOE_OK)
            floe__pg_range_of(out);
    } else if (tt[0] == 'b' && cat && cat[0] == 'A' && elem && len && strcmp(len, "-1") == 0) {
        rc = resolve_type(pg, elem, typmod, depth + 1, out, err);
        if (rc == FLOE_OK)
            floe__pg_array_of(out);
    } else {
        floe__pg_scalar_type(tt[0] == 'b' ? oid : 0, typmod, out);
        if (out->conv == FLOE__PGC_TEXT)
            snprintf(out->name, sizeof out->name, "%s", floe__pg_get(r, 0, 7));
    }
    const char *shown = floe__pg_get(r, 0, 8);    /* messages name it as Postgres does */
    if (rc == FLOE_OK && depth == 0 && shown)
        snprintf(out->name, sizeof out->name, "%s", shown);
    floe__pg_result_free(r);
    return rc;
}

/* One column of the catalog query below, row i of r. */
static int catalog_column(floe_pg *pg, floe__pg_result *r, size_t i, floe__mcol *c,
                          floe_error *err)
{
    c->name = floe__strdup(floe__pg_get(r, i, 0));
    c->attnum = (int32_t)strtol(floe__pg_get(r, i, 1), NULL, 10);
    c->type_oid = (uint32_t)strtoul(floe__pg_get(r, i, 2), NULL, 10);
    c->typmod = (int32_t)strtol(floe__pg_get(r, i, 3), NULL, 10);
    c->not_null = yes(floe__pg_get(r, i, 4));
    c->toastable = floe__pg_toastable(floe__pg_get(r, i, 5)[0],
                                      (int)strtol(floe__pg_get(r, i, 6), NULL, 10), c->type_oid,
                                      c->typmod);
    c->has_missing = yes(floe__pg_get(r, i, 7));
    const char *missing = floe__pg_get(r, i, 8);
    c->has_default = yes(floe__pg_get(r, i, 9));
    if (!c->name || (missing && !(c->missing = floe__strdup(missing))))
        return FLOE_OOM(err);
    return resolve_type(pg, c->type_oid, c->typmod, 0, &c->type, err);
}

int floe__mirror_columns(floe_pg *pg, floe__pg_conn *conn, uint32_t relid, const char *source,
                         floe__mcol **out, size_t *n_out, floe_error *err)
{
    char rel[16];
    snprintf(rel, sizeof rel, "%u", relid);
    const char *params[1] = {rel};
    floe__pg_result *r = NULL;
    FLOE_FORWARD(floe__pg_query(conn, "SELECT a.attname, a.attnum, a.atttypid, a.atttypmod, "
                                "a.attnotnull, a.attstorage, t.typlen, a.atthasmissing, "
                                "a.attmissingval::text, d.adbin IS NOT NULL FROM pg_attribute a "
                                "JOIN pg_type t ON t.oid = a.atttypid LEFT JOIN pg_attrdef d ON "
                                "d.adrelid = a.attrelid AND d.adnum = a.attnum WHERE a.attrelid "
                                "= $1 AND a.attnum > 0 AND NOT a.attisdropped AND "
                                "a.attgenerated = '' ORDER BY a.attnum", params, 1, &r, err));
    size_t n = floe__pg_rows(r);
    int rc = n ? FLOE_OK : floe__err_set(err, FLOE_EUNSUPPORTED, "%s has no columns", source);
    floe__mcol *cols = rc == FLOE_OK ? floe__calloc(n, sizeof *cols) : NULL;
    if (rc == FLOE_OK && !cols)
        rc = FLOE_OOM(err);
    for (size_t i = 0; rc == FLOE_OK && i < n; i++)
        rc = catalog_column(pg, r, i, &cols[i], err);
    floe__pg_result_free(r);
    if (rc != FLOE_OK) {
        floe__mirror_cols_free(cols, n);
        return rc;
    }
    *out = cols;
    *n_out = n;
    return FLOE_OK;
}

void floe__mirror_cols_free(floe__mcol *cols, size_t n)
{
    for (size_t i = 0; cols && i < n; i++) {
        floe__free(cols[i].name);
        floe__free(cols[i].missing);
    }
    floe__free(cols);
}

static int describe_columns(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    return floe__mirror_columns(pg, pg->conn, t->relid, t->source, &t->cols, &t->ncols, err);
}

static int column_index(const floe__mtable *t, const char *name, size_t *out)
{
    for (size_t i = 0; i < t->ncols; i++)
        if (strcmp(t->cols[i].name, name) == 0) {
            *out = i;
            return FLOE_OK;
        }
    return FLOE_ENOTFOUND;
}

/* The key: the replica identity index (USING INDEX), else the primary key. */
static int describe_key(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    char relid[16];
    snprintf(relid, sizeof relid, "%u", t->relid);
    floe__pg_result *r = NULL;
    FLOE_FORWARD(query1(pg, "SELECT i.indisprimary, i.indisreplident, a.attname FROM pg_index i "
                            "CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS "
                            "k(attnum, ord) JOIN pg_attribute a ON a.attrelid = i.indrelid AND "
                            "a.attnum = k.attnum WHERE i.indrelid = $1 AND (i.indisprimary OR "
                            "i.indisreplident) ORDER BY k.ord", relid, NULL, &r, err));
    int col = t->replident == 'i' ? 1 : 0;
    t->keys = floe__calloc(t->ncols, sizeof *t->keys);
    int rc = t->keys ? FLOE_OK : FLOE_OOM(err);
    for (size_t i = 0; rc == FLOE_OK && i < floe__pg_rows(r); i++) {
        size_t c;
        if (!yes(floe__pg_get(r, i, col)))
            continue;
        if (column_index(t, floe__pg_get(r, i, 2), &c) != FLOE_OK || t->nkeys == t->ncols)
            rc = floe__err_set(err, FLOE_EUNSUPPORTED, "%s: key column \"%s\" is not a plain "
                               "column", t->source, floe__pg_get(r, i, 2));
        else if (!t->cols[c].key)
            t->cols[c].key = true, t->keys[t->nkeys++] = c;
    }
    floe__pg_result_free(r);
    return rc;
}

/* What floe cannot mirror about the table's key and identity. */
static int check_identity(floe__mtable *t, floe_error *err)
{
    const char *s = t->source;
    if (t->replident == 'n')
        return floe__err_set(err, FLOE_EUNSUPPORTED, "%s has REPLICA IDENTITY NOTHING: Postgres "
                             "sends no key with its updates and deletes (ALTER TABLE %s REPLICA "
                             "IDENTITY FULL, or DEFAULT with a primary key)", s, s);
    if (!t->nkeys && t->replident != 'f')
        return floe__err_set(err, FLOE_EUNSUPPORTED, "%s has no primary key and no replica "
                             "identity: add a primary key, or ALTER TABLE %s REPLICA IDENTITY "
                             "FULL", s, s);
    for (size_t c = 0; !t->nkeys && c < t->ncols; c++) {
        floe__pg_conv v = t->cols[c].type.conv;
        if (v == FLOE__PGC_FLOAT4 || v == FLOE__PGC_FLOAT8 || v == FLOE__PGC_ARRAY ||
            v == FLOE__PGC_RANGE)
            return floe__err_set(err, FLOE_EUNSUPPORTED, "%s has no primary key, so floe keys "
                                 "it by the whole row, which cannot hold column \"%s\" (%s): "
                                 "add a primary key", s, t->cols[c].name, t->cols[c].type.name);
    }
    return FLOE_OK;
}

/* Columns whose values Postgres may store out of line (TOAST) and then
 * leave out of updates that do not change them, unless the table has
 * REPLICA IDENTITY FULL, where floe cannot take them from the key's row
 * (mirror_row.c: --delete-mode equality, or a table without a key):
 * `"a", "b"` into out (empty: none). */
void floe__mirror_toast_gap(const floe_pg *pg, const floe__mtable *t, char *out, size_t n)
{
    size_t at = 0;
    out[0] = 0;
    if (t->replident == 'f' || t->stream_replident == 'f')
        return;
    if (t->nkeys && pg->sink.delete_mode != FLOE_DELETE_EQUALITY)
        return;
    for (size_t c = 0; c < t->ncols && at < n; c++)
        if (t->cols[c].toastable)
            at += (size_t)snprintf(out + at, n - at, "%s\"%s\"", at ? ", " : "",
                                   t->cols[c].name);
}


int floe__mirror_declaration(floe__mtable *t, floe_error *err)
{
    floe__free(t->schema_text);
    floe__free(t->key_text);
    t->schema_text = t->key_text = NULL;
    floe__buf b, k;
    floe__buf_init(&b, 1 << 24);
    floe__buf_init(&k, 1 << 20);
    int rc = FLOE_OK;
    for (size_t c = 0; rc == FLOE_OK && c < t->ncols; c++) {
        char decl[96];
        floe__pg_type_decl(&t->cols[c].type, decl, sizeof decl);
        rc = c ? floe__buf_append(&b, ", ", 2, err) : FLOE_OK;
        if (rc == FLOE_OK)
            rc = floe__pg_quote_ident(t->cols[c].name, &b, err);
        if (rc == FLOE_OK)
            rc = floe__buf_printf(&b, err, " %s%s", decl, t->cols[c].not_null ? " not null" : "");
    }
    for (size_t i = 0; rc == FLOE_OK && i < t->nkeys; i++) {
        const char *n = t->cols[t->keys[i]].name;
        if (strchr(n, ',') || n[0] == ' ' || (n[0] && n[strlen(n) - 1] == ' '))
            rc = floe__err_set(err, FLOE_EUNSUPPORTED, "%s: key column \"%s\" has a comma or "
                               "blanks at its ends in its name", t->source, n);
        else
            rc = floe__buf_printf(&k, err, "%s%s", i ? "," : "", n);
    }
    if (rc == FLOE_OK && !(t->schema_text = floe__buf_strdup(&b)))
        rc = FLOE_OOM(err);
    if (rc == FLOE_OK && t->nkeys && !(t->key_text = floe__buf_strdup(&k)))
        rc = FLOE_OOM(err);
    floe__buf_free(&b);
    floe__buf_free(&k);
    return rc;
}

/* The Iceberg table: --table-map's, else NAMESPACE.rel. */
static int iceberg_ident(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    size_t n = strlen(t->source);
    for (const char *p = pg->opts.table_map; p && *p;) {
        const char *comma = strchr(p, ','), *e = comma ? comma : p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(e - p));
        FLOE_RETURN_IF(!eq, err, FLOE_EINVAL, "--table-map entry '%.*s' is not schema.table="
                       "ns.name", (int)(e - p), p);
        if ((size_t)(eq - p) == n && memcmp(p, t->source, n) == 0) {
            t->ident = floe__strndup(eq + 1, (size_t)(e - eq - 1));
            return t->ident ? FLOE_OK : FLOE_OOM(err);
        }
        p = comma ? comma + 1 : e;
    }
    const char *ns = pg->opts.namespace_name ? pg->opts.namespace_name : t->nsp;
    t->ident = floe__sprintf("%s.%s", ns, t->rel);
    return t->ident ? FLOE_OK : FLOE_OOM(err);
}

/* Stored generated columns: the stream of Postgres before 18 does not
 * carry them (18 does with publish_generated_columns, which floe does not
 * use yet: refused), so they are left out, with a warning. */
static int generated_columns(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    char rel[16];
    snprintf(rel, sizeof rel, "%u", t->relid);
    floe__pg_result *r = NULL;
    FLOE_FORWARD(query1(pg, "SELECT attname FROM pg_attribute WHERE attrelid = $1 AND attnum > "
                            "0 AND NOT attisdropped AND attgenerated <> '' ORDER BY attnum", rel,
                        NULL, &r, err));
    size_t n = floe__pg_rows(r);
    floe__mirror_cols_free(t->generated, t->ngenerated);
    t->generated = n ? floe__calloc(n, sizeof *t->generated) : NULL;
    t->ngenerated = t->generated ? n : 0;
    char names[512] = "";
    size_t at = 0;
    int rc = n && !t->generated ? FLOE_OOM(err) : FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < t->ngenerated; i++) {
        const char *name = floe__pg_get(r, i, 0);
        if (!(t->generated[i].name = floe__strdup(name)))
            rc = FLOE_OOM(err);
        else if (at < sizeof names)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s\"%s\"", i ? ", " : "",
                                   name);
    }
    floe__pg_result_free(r);
    FLOE_FORWARD(rc);
    if (!n)
        return FLOE_OK;
    if (pg->server_version >= 180000) {
        FLOE_FORWARD(query1(pg, "SELECT pubgencols::text FROM pg_publication WHERE pubname = $1",
                            pg->pub_name, NULL, &r, err));
        const char *g = floe__pg_rows(r) ? floe__pg_get(r, 0, 0) : NULL;
        bool sent = g && g[0] == 's';
        floe__pg_result_free(r);
        FLOE_RETURN_IF(sent, err, FLOE_EUNSUPPORTED, "publication \"%s\" sends the generated "
                       "columns of %s (%s), which floe's copy does not read: floe does not "
                       "mirror generated columns yet (ALTER PUBLICATION \"%s\" SET "
                       "(publish_generated_columns = none))", pg->pub_name, t->source, names,
                       pg->pub_name);
    }
    floe__mirror_warn(pg, "%s: generated column%s %s %s left out of the Iceberg table: logical "
                      "replication does not send stored generated columns (before Postgres 18, "
                      "or without its publish_generated_columns, which floe does not use yet); "
                      "the other columns are mirrored", t->source, n > 1 ? "s" : "", names,
                      n > 1 ? "are" : "is");
    return FLOE_OK;
}

static int describe_table(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    t->pg = pg;
    FLOE_FORWARD(describe_class(pg, t, err));
    FLOE_FORWARD(floe__mirror_shape(pg->conn, t, &t->shape, err));
    FLOE_FORWARD(describe_columns(pg, t, err));
    FLOE_FORWARD(check_filters(pg, t, err));
    FLOE_FORWARD(describe_key(pg, t, err));
    FLOE_FORWARD(check_identity(t, err));
    FLOE_FORWARD(generated_columns(pg, t, err));
    FLOE_FORWARD(floe__mirror_declaration(t, err));
    FLOE_FORWARD(iceberg_ident(pg, t, err));
    t->sink_id = floe__sprintf("pg:%s:%s", pg->slot_name, t->source);
    return t->sink_id ? FLOE_OK : FLOE_OOM(err);
}

/* ---- the sinks ---------------------------------------------------------------------------------- */

static void table_warning(void *ctx, const char *msg)
{
    floe__mtable *t = ctx;
    floe__mirror_warn(t->pg, "%s: %s", t->ident, msg);
}

/* What the Iceberg table records of t's sink: *resumes when it has its
 * progress, its current schema then, and the shape the table was mirrored
 * in (floe.pg.columns "field id:attnum,...", floe.pg.key "field id,...";
 * NULL when written by a floe that did not record them). */
typedef struct recorded {
    bool exists;                 /* the Iceberg table exists */
    bool resumes;
    floe__schema *schema;
    char *columns, *key;
    char *relid, *system_id;     /* the Postgres table's identity (NULL: not recorded) */
    bool dropped;                /* floe pg --drop-table left it at its progress (mirror_life.c) */
    char *partitions;            /* floe.pg.partitions (a partitioned table's) */
} recorded;

static void recorded_clear(recorded *r)
{
    floe_schema_free(r->schema);
    floe__free(r->columns);
    floe__free(r->key);
    floe__free(r->relid);
    floe__free(r->system_id);
    floe__free(r->partitions);
    memset(r, 0, sizeof *r);
}

static int probe(floe_pg *pg, floe__mtable *t, recorded *out, floe_error *err)
{
    memset(out, 0, sizeof *out);
    floe__table *tb = NULL;
    int rc = floe__mirror_open_iceberg(pg, t, &tb, err);
    if (rc == FLOE_ENOTFOUND) {
        floe_error_clear(err);
        return FLOE_OK;
    }
    FLOE_FORWARD(rc);
    out->exists = true;
    floe__progress p;
    rc = floe__progress_read(tb->loaded->metadata, tb->io, t->sink_id, &p, err);
    if (rc == FLOE_OK && p.state == FLOE__PROGRESS_FOUND) {
        const floe__snapshot *s = floe__metadata_snapshot_by_id(tb->loaded->metadata,
                                                                p.snapshot_id);
        const char *cols = s ? floe__snapshot_summary_get(s, "floe.pg.columns") : NULL;
        const char *key = s ? floe__snapshot_summary_get(s, "floe.pg.key") : NULL;
        const char *relid = s ? floe__snapshot_summary_get(s, "floe.pg.relid") : NULL;
        const char *sys = s ? floe__snapshot_summary_get(s, "floe.pg.system-id") : NULL;
        out->resumes = true;
        out->columns = cols ? floe__strdup(cols) : NULL;
        out->key = key ? floe__strdup(key) : NULL;
        out->relid = relid ? floe__strdup(relid) : NULL;
        out->system_id = sys ? floe__strdup(sys) : NULL;
        const char *parts = s ? floe__snapshot_summary_get(s, "floe.pg.partitions") : NULL;
        out->partitions = parts ? floe__strdup(parts) : NULL;
        if (parts && !out->partitions)
            rc = FLOE_OOM(err);
        if ((cols && !out->columns) || (key && !out->key) || (relid && !out->relid) ||
            (sys && !out->system_id))
            rc = FLOE_OOM(err);
        if (rc == FLOE_OK)
            rc = floe__table_current_schema(tb, &out->schema, err);
        out->dropped = floe__mirror_dropped_at(tb->loaded->metadata, t->sink_id, p.frontier);
    }
    floe__table_free(tb);
    if (rc != FLOE_OK)
        recorded_clear(out);
    return rc;
}

/* The attnum "field id:attnum,..." gives field id `id`; 0 when it has none. */
static int32_t recorded_attnum(const char *list, int32_t id)
{
    for (const char *p = list; p && *p;) {
        char *e;
        long f = strtol(p, &e, 10);
        if (*e != ':')
            return 0;
        long a = strtol(e + 1, &e, 10);
        if (f == id)
            return (int32_t)a;
        if (*e != ',')
            break;
        p = e + 1;
    }
    return 0;
}

/* The Postgres type of a catalog column reads into field f: the same
 * Iceberg type (as declared from it). */
static bool reads_as(const floe__pg_type *pt, const floe__field *f)
{
    char decl[96], text[128];
    floe__pg_type_decl(pt, decl, sizeof decl);
    snprintf(text, sizeof text, "x %s", decl);
    floe_schema *s = NULL;
    if (floe_schema_parse(text, &s, NULL) != FLOE_OK)
        return false;
    char a[256], b[256];
    floe__type_name(&s->root.children[0], false, a, sizeof a);
    floe__type_name(f, false, b, sizeof b);
    floe_schema_free(s);
    return strcmp(a, b) == 0;
}

/* A resuming table is mirrored in the shape its Iceberg table has (its
 * sink's schema): each column with the attnum recorded for it (else the
 * catalog's column of that name), a type from the catalog where it reads
 * the same (else unknown until the stream's Relation message says).  The
 * catalog's shape is kept in t->cat. */
static int align_with_table(floe__mtable *t, const recorded *rec, floe_error *err)
{
    const floe__schema *s = floe_sink_row_schema(t->sink);
    size_t n = s->root.n_children;
    floe__mcol *cols = floe__calloc(n ? n : 1, sizeof *cols);
    if (!cols)
        return FLOE_OOM(err);
    for (size_t i = 0; i < n; i++) {
        const floe__field *f = &s->root.children[i];
        floe__mcol *c = &cols[i];
        if (!(c->name = floe__strdup(f->name))) {
            floe__mirror_cols_free(cols, n);
            return FLOE_OOM(err);
        }
        c->attnum = recorded_attnum(rec->columns, f->id);
        const floe__mcol *cat = NULL;
        for (size_t k = 0; k < t->ncols && !cat; k++)
            if (c->attnum ? t->cols[k].attnum == c->attnum
                          : strcmp(t->cols[k].name, c->name) == 0)
                cat = &t->cols[k];
        c->not_null = f->required;
        if (cat) {
            c->attnum = cat->attnum;
            c->toastable = cat->toastable;
            if (reads_as(&cat->type, f)) {
                c->type = cat->type;
                c->type_oid = cat->type_oid;
                c->typmod = cat->typmod;
            }
        }
        if (!c->type_oid)
            floe__pg_scalar_type(0, -1, &c->type);   /* unknown: replaced before any row */
    }
    t->cat = t->cols;
    t->ncat = t->ncols;
    t->cols = cols;
    t->ncols = n;
    return FLOE_OK;
}

/* The key a resuming table's sink opens with: the key it was mirrored with
 * (floe.pg.key), else the catalog's key columns by name. */
static int resumed_key(const floe__mtable *t, const recorded *rec, char **out, floe_error *err)
{
    *out = NULL;
    if (!rec->key)
        return t->key_text && !(*out = floe__strdup(t->key_text)) ? FLOE_OOM(err) : FLOE_OK;
    floe__buf b;
    floe__buf_init(&b, 1 << 20);
    int rc = FLOE_OK;
    for (const char *p = rec->key; rc == FLOE_OK && *p;) {
        char *e;
        long id = strtol(p, &e, 10);
        const floe__field *f = floe__schema_find_id(rec->schema, (int32_t)id);
        rc = f ? floe__buf_printf(&b, err, "%s%s", b.len ? "," : "", f->name)
               : floe__err_set(err, FLOE_EFORMAT, "%s: floe.pg.key names field id %ld, which "
                               "the table does not have", t->ident, id);
        if (*e != ',')
            break;
        p = e + 1;
    }
    if (rc == FLOE_OK && b.len && !(*out = floe__buf_strdup(&b)))
        rc = FLOE_OOM(err);
    floe__buf_free(&b);
    return rc;
}

static void sink_options(floe_pg *pg, floe__mtable *t, floe_sink_options *o)
{
    *o = pg->sink;
    o->table = t->ident;
    o->mode = FLOE_SINK_MODE_UPSERT;
    o->sink_id = t->sink_id;
    o->as_of = 0;
    o->commit_on_advance = 1;
    o->commit_interval = 1;
    o->partition_by = t->partition_by;
    o->resume_from = NULL;
    o->new_sink = 0;
    o->on_commit = NULL;
    o->on_warning = table_warning;
    o->warning_ctx = t;
    o->on_notice = NULL;
    /* three quarters for the sinks; the rest is the stream's (a streamed
     * transaction's filter of keys touched once: an eighth; buffers) */
    o->memory_limit = pg->sink.memory_limit / 4 * 3 / pg->ntables;
    if (o->memory_limit < MIN_TABLE_MEMORY)
        o->memory_limit = MIN_TABLE_MEMORY;
}

static int open_table_sink(floe_pg *pg, floe__mtable *t, const recorded *rec, floe_error *err)
{
    floe_sink_options o;
    sink_options(pg, t, &o);
    char *key = NULL;
    o.schema = rec->resumes ? NULL : t->schema_text;
    o.key = t->key_text;
    if (rec->resumes) {
        FLOE_FORWARD(resumed_key(t, rec, &key, err));
        o.key = key;
    }
    int rc = floe__sink_open_with(&o, pg->catalog, pg->io, &t->sink, err);
    floe__free(key);
    if (rc == FLOE_OK && floe__sink_spec_pending(t->sink))     /* the sink's notices are off */
        floe__mirror_notice(pg, "%s: its partition spec becomes '%s' with its next snapshot "
                            "(files written before keep theirs)", t->ident, t->partition_by);
    return rc;
}

/* What every commit of t records of its source. */
static int set_properties(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    FLOE_FORWARD(floe_sink_set_property(t->sink, "floe.source", "postgres", err));
    FLOE_FORWARD(floe_sink_set_property(t->sink, "floe.pg.slot", pg->slot_name, err));
    FLOE_FORWARD(floe_sink_set_property(t->sink, "floe.pg.publication", pg->pub_name, err));
    FLOE_FORWARD(floe_sink_set_property(t->sink, "floe.pg.database", pg->database, err));
    char relid[16];
    snprintf(relid, sizeof relid, "%u", t->relid);
    FLOE_FORWARD(floe_sink_set_property(t->sink, "floe.pg.relid", relid, err));
    if (pg->system_id[0])
        FLOE_FORWARD(floe_sink_set_property(t->sink, "floe.pg.system-id", pg->system_id, err));
    FLOE_FORWARD(floe__mirror_part_record(t, err));
    return floe_sink_set_property(t->sink, "floe.pg.table", t->source, err);
}

/* Whether the table a resuming t's name denotes is another one than its
 * Iceberg table records (dropped and created again, a rename swap): then
 * its recorded attnums mean nothing, and it is resynced.  A table of
 * another Postgres system is an error: its frontier is an LSN of that one. */
static int check_table_identity(floe_pg *pg, floe__mtable *t, recorded *rec, bool *other,
                                floe_error *err)
{
    *other = false;
    if (!rec->resumes)
        return FLOE_OK;
    if (rec->system_id && pg->system_id[0] && strcmp(rec->system_id, pg->system_id) != 0)
        return floe__err_set(err, FLOE_ESTATE, "%s mirrors %s of another Postgres system "
                             "(system identifier %s; %s is %s): its frontier is a position in "
                             "that system's WAL.  Mirror into another namespace (--namespace), "
                             "or drop the Iceberg table to copy it afresh", t->ident, t->source,
                             rec->system_id, floe__pg_where(pg->conn), pg->system_id);
    if (!rec->relid || strtoul(rec->relid, NULL, 10) == t->relid)
        return FLOE_OK;
    *other = true;
    floe__free(rec->columns);            /* attnums of the other table */
    rec->columns = NULL;
    return FLOE_OK;
}

int floe__mirror_open_sink(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    recorded rec;
    FLOE_FORWARD(probe(pg, t, &rec, err));
    bool other = false;
    int rc = check_table_identity(pg, t, &rec, &other, err);
    char why[160] = "";
    if (other)
        snprintf(why, sizeof why, "the table this name denotes is not the one mirrored "
                 "(relation %s then, %u now: dropped and created again, or renamed)", rec.relid,
                 t->relid);
    if (rc == FLOE_OK)
        rc = open_table_sink(pg, t, &rec, err);
    if (rc == FLOE_ESTATE && !rec.resumes) {     /* the sink's advice names its CLI options */
        floe_error_clear(err);
        rc = floe__err_set(err, FLOE_ESTATE, "%s holds rows, but none this mirror recorded for "
                           "sink %s (another writer's, or its history was rolled back or "
                           "expired past them): floe will not mix a copy of %s into them.  "
                           "Drop the Iceberg table (the next run copies %s afresh), or mirror "
                           "into another one (--namespace, --table-map)", t->ident, t->sink_id,
                           t->source, t->source);
    }
    const char *from = rc == FLOE_OK ? floe_sink_resume_frontier(t->sink) : NULL;
    floe__frontier f;
    if (from && (floe__frontier_parse(from, &f, err) != FLOE_OK || f.empty))
        rc = floe__err_set(err, FLOE_ESTATE, "%s records frontier %s for sink %s: floe cannot "
                           "go on from it", t->ident, from, t->sink_id);
    if (rc == FLOE_OK && from)
        rc = align_with_table(t, &rec, err);
    bool dropped = rec.dropped, existed = rec.exists;   /* recorded_clear forgets them */
    if (rc == FLOE_OK && from && !other)
        rc = floe__mirror_part_resumed(pg, t, rec.partitions, err);
    recorded_clear(&rec);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "%s (from %s)", t->ident, t->source);
    t->copy = !from;
    t->input = t->start = from ? f.t : 0;
    t->existed = existed;
    FLOE_FORWARD(floe__mirror_adopt(t, t->cols, t->ncols, err));
    if (why[0])
        floe__mirror_resync_mark(pg, t, why);
    if (dropped && from) {
        char lsn[24];
        floe__lsn_format(t->start, lsn, sizeof lsn);
        snprintf(why, sizeof why, "listed again after floe pg --drop-table left it at %s (the "
                 "slot did not keep its changes since)", lsn);
        t->rejoined = true;
        floe__mirror_resync_mark(pg, t, why);
    }
    return set_properties(pg, t, err);
}

int floe__mirror_reopen_sink(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    const char *k = floe__sink_key_text(t->sink);
    char *key = k ? floe__strdup(k) : NULL;
    if (k && !key)
        return FLOE_OOM(err);
    floe_sink_free(t->sink);
    t->sink = NULL;
    floe_sink_options o;
    sink_options(pg, t, &o);
    o.schema = NULL;
    o.key = key;
    int rc = floe__sink_open_with(&o, pg->catalog, pg->io, &t->sink, err);
    floe__free(key);
    if (rc == FLOE_OK && !floe_sink_resume_frontier(t->sink))
        rc = floe__err_set(err, FLOE_ESTATE, "%s no longer records progress for sink %s",
                           t->ident, t->sink_id);
    if (rc == FLOE_OK)
        rc = set_properties(pg, t, err);
    return rc == FLOE_OK ? FLOE_OK : floe__err_wrap(err, rc, "%s (from %s)", t->ident, t->source);
}

int floe__mirror_fit_fields(floe_pg *pg, size_t n, floe_error *err)
{
    if (n + 1 <= pg->cap_fields)
        return FLOE_OK;
    floe__pg_field *f = floe__realloc(pg->fields, (n + 1) * sizeof *f);
    if (!f)
        return FLOE_OOM(err);
    pg->fields = f;
    pg->cap_fields = n + 1;
    return FLOE_OK;
}

/* The WAL position after the catalog was read (where the next record
 * goes: past the commit of every change the catalog shows, even one not
 * flushed yet): a resuming table's catalog is compared with its shape once
 * the stream has passed it. */
static int catalog_read_at(floe_pg *pg, floe_error *err)
{
    floe__pg_result *r = NULL;
    FLOE_FORWARD(query1(pg, "SELECT pg_current_wal_insert_lsn()", NULL, NULL, &r, err));
    uint64_t at = 0;
    int bad = floe__lsn_parse(floe__pg_get(r, 0, 0), &at);
    floe__pg_result_free(r);
    FLOE_RETURN_IF(bad, err, FLOE_EFORMAT, "pg_current_wal_insert_lsn() answered no LSN");
    for (size_t i = 0; i < pg->ntables; i++)
        if (pg->tables[i].cat)
            pg->tables[i].cat_at = at;
    return FLOE_OK;
}

/* The catalog of every table's sink (opened once, when first needed). */
static int open_catalog(floe_pg *pg, floe_error *err)
{
    if (pg->catalog)
        return FLOE_OK;
    floe_connect_options co = *pg->sink.connect;
    co.must_exist = 0;
    return floe__catalog_open(&co, &pg->io, &pg->catalog, err);
}

/* A table new to the mirror is refused when its updates can leave values
 * out that floe cannot fill (floe__mirror_toast_gap); one that resumes (a
 * column added since) is warned about: such an update makes floe copy it
 * again (a resync). */
static int check_toast(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    char names[512];
    floe__mirror_toast_gap(pg, t, names, sizeof names);
    const char *s = t->source;
    if (!names[0])
        return FLOE_OK;
    recorded rec;
    FLOE_FORWARD(open_catalog(pg, err));
    FLOE_FORWARD(probe(pg, t, &rec, err));
    bool resumes = rec.resumes;
    recorded_clear(&rec);
    if (!resumes)
        return floe__err_set(err, FLOE_EUNSUPPORTED, "%s: Postgres may store values of %s out "
                             "of line (TOAST) and then leaves them out of updates that do not "
                             "change them, unless the table has REPLICA IDENTITY FULL; %s: run "
                             "ALTER TABLE %s REPLICA IDENTITY FULL%s", s, names,
                             t->nkeys ? "with --delete-mode equality floe cannot take them "
                             "from the rows it wrote" : "the table has no key to find them by",
                             s,
                             t->partitioned ? ", and the same for each of its partitions (a "
                             "partition's updates carry what its own identity logs)" : "");
    floe__mirror_warn(pg, "%s: Postgres may leave values of %s out of updates that do not "
                      "change them (TOAST), and each such update makes floe copy the table "
                      "again (a resync): run ALTER TABLE %s REPLICA IDENTITY FULL", s, names, s);
    return FLOE_OK;
}

static int open_sinks(floe_pg *pg, floe_error *err)
{
    if (pg->opts.partition_by)
        FLOE_FORWARD(partition_specs(pg, pg->opts.partition_by, err));
    FLOE_FORWARD(open_catalog(pg, err));
    for (size_t i = 0; i < pg->ntables; i++) {
        FLOE_FORWARD(floe__mirror_open_sink(pg, &pg->tables[i], err));
        FLOE_FORWARD(floe__mirror_fit_fields(pg, pg->tables[i].ncols, err));
    }
    if (pg->opts.resync)
        FLOE_FORWARD(each_name(pg, pg->opts.resync, "--resync", ask_resync, err));
    return catalog_read_at(pg, err);
}

/* A table floe refuses (rather than a failure of the server or the
 * connection): every such refusal is gathered, so one run names them all. */
static bool refusal(int rc)
{
    return rc == FLOE_EUNSUPPORTED || rc == FLOE_ESTATE || rc == FLOE_EPERM ||
           rc == FLOE_ENOTFOUND || rc == FLOE_EINVAL;
}

typedef struct refusals {
    floe__buf text;
    size_t n;
    int code;                    /* the first one's */
} refusals;

/* rc of a check of one table: a refusal is noted (and err cleared). */
static int note(refusals *r, int rc, floe_error *err)
{
    if (rc == FLOE_OK || !refusal(rc))
        return rc;
    if (!r->n)
        r->code = rc;
    r->n++;
    int brc = floe__buf_printf(&r->text, NULL, "\n  %s", floe_error_message(err));
    floe_error_clear(err);
    return brc == FLOE_OK ? FLOE_OK : FLOE_OOM(err);
}

/* Every table described (in one snapshot of the catalog: an ALTER TABLE may
 * run meanwhile, and a refused table does not end the transaction: each
 * has a savepoint) and checked; every refusal in one error. */
static int describe_all(floe_pg *pg, refusals *r, floe_error *err)
{
    FLOE_FORWARD(floe__pg_exec(pg->conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err));
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < pg->ntables; i++) {
        rc = floe__pg_exec(pg->conn, "SAVEPOINT floe_describe", err);
        int drc = rc == FLOE_OK ? describe_table(pg, &pg->tables[i], err) : rc;
        if (rc == FLOE_OK && drc != FLOE_OK)
            rc = floe__pg_exec(pg->conn, "ROLLBACK TO SAVEPOINT floe_describe", NULL);
        if (rc == FLOE_OK)
            rc = note(r, drc, err);
        pg->tables[i].refused = drc != FLOE_OK;
    }
    if (rc != FLOE_OK) {
        floe__pg_exec(pg->conn, "ROLLBACK", NULL);
        return rc;
    }
    FLOE_FORWARD(floe__pg_exec(pg->conn, "COMMIT", err));
    for (size_t i = 0; i < pg->ntables; i++)
        if (!pg->tables[i].refused)
            FLOE_FORWARD(note(r, check_toast(pg, &pg->tables[i], err), err));
    return FLOE_OK;
}

int floe__mirror_setup(floe_pg *pg, floe_error *err)
{
    FLOE_FORWARD(floe__pg_connect(pg->opts.source, false, &pg->conn, err));
    FLOE_FORWARD(check_server(pg, err));
    FLOE_FORWARD(resolve_tables(pg, err));
    refusals r = {.n = 0};
    floe__buf_init(&r.text, 1 << 20);
    int rc = describe_all(pg, &r, err);
    if (rc == FLOE_OK && r.n == 1) {
        rc = floe__err_set(err, r.code, "%.*s", (int)r.text.len - 3,
                           (const char *)r.text.data + 3);
    } else if (rc == FLOE_OK && r.n) {
        rc = floe__err_set(err, r.code, "%zu of the %zu tables cannot be mirrored (nothing was "
                           "created; each says how to go on):%.*s", r.n, pg->ntables,
                           (int)r.text.len, (const char *)r.text.data);
    }
    floe__buf_free(&r.text);
    FLOE_FORWARD(rc);
    FLOE_FORWARD(setup_publication(pg, err));
    return open_sinks(pg, err);
}

/* ---- for the lifecycle commands (mirror_life.c) ------------------------------------------------ */

int floe__mirror_connect(floe_pg *pg, floe_error *err)
{
    FLOE_FORWARD(floe__pg_connect(pg->opts.source, false, &pg->conn, err));
    return check_server(pg, err);
}

int floe__mirror_name_tables(floe_pg *pg, const char *list, const char *option,
                             floe_error *err)
{
    FLOE_FORWARD(each_name(pg, list, option, add_table, err));
    FLOE_RETURN_IF(!pg->ntables, err, FLOE_EINVAL, "%s names no table", option);
    for (size_t i = 0; i < pg->ntables; i++) {
        floe__mtable *t = &pg->tables[i];
        t->pg = pg;
        FLOE_FORWARD(iceberg_ident(pg, t, err));
        if (!(t->sink_id = floe__sprintf("pg:%s:%s", pg->slot_name, t->source)))
            return FLOE_OOM(err);
    }
    return FLOE_OK;
}

int floe__mirror_open_catalog(floe_pg *pg, floe_error *err) { return open_catalog(pg, err); }

int floe__mirror_open_iceberg(floe_pg *pg, const floe__mtable *t, floe__table **out,
                              floe_error *err)
{
    const char *dot = strrchr(t->ident, '.');
    FLOE_RETURN_IF(!dot || dot == t->ident || !dot[1], err, FLOE_EINVAL, "Iceberg table '%s' "
                   "is not NS.NAME", t->ident);
    char *ns = floe__strndup(t->ident, (size_t)(dot - t->ident));
    if (!ns)
        return FLOE_OOM(err);
    int rc = floe__table_open(pg->catalog, pg->io, ns, dot + 1, NULL, NULL, out, err);
    floe__free(ns);
    return rc;
}
