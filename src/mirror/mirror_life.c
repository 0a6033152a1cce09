/*
 * mirror_life.c - a mirror's lifecycle beyond running it: tables dropped
 * from it (floe_pg_drop_tables, `floe pg --drop-table`) and the mirror
 * retired (floe_pg_retire, `floe pg --retire`).  docs/postgres.md says
 * what stays and what the next run does.
 *
 * Dropping a table from the mirror:
 *  - is refused while the slot is in use (a running floe pg would go on
 *    committing the table's progress without its changes);
 *  - takes it out of the publication when floe manages it
 *    (--create-publication), else names the ALTER PUBLICATION that does;
 *  - keeps its Iceberg table, and records in it (the table property
 *    floe.pg.dropped.<sink id> = the frontier it was left at) that the
 *    mirror let it go there: listed again, it resumes from nothing the
 *    slot still holds, so it is copied again in place (a resync; its
 *    history stays) and its old frontier holds no check of the slot;
 *  - or, with purge, drops the Iceberg table and deletes every file its
 *    metadata reaches (only a table this sink committed to, or one with no
 *    snapshot); listed again, it is copied afresh.
 * The slot is not touched: its confirmed LSN is only ever the smallest
 * frontier of the tables a run mirrors, and a table not listed holds
 * nothing back.
 *
 * A table dropped, or replaced under its name (dropped and created again,
 * a rename swap), while floe runs: Postgres sends nothing for the new
 * table (it is not in the publication) nor for the drop.  Before each
 * round of commits, one catalog query compares what each mirrored name
 * denotes with the table mirrored (floe__mirror_names_verify); a
 * difference opens the mirror again as a new run would (floe_pg_run),
 * where setup resyncs a replaced table and stops at a dropped one.
 *
 * Retiring: after floe_pg_run committed every table up to its stop LSN,
 * the replication slot is dropped, and the publication when floe manages
 * it.  The Iceberg tables, their history and the catalog stay; a run with
 * the same slot then finds tables recording progress from a slot that is
 * gone, which is an error whose advice (--new-mirror) works.
 */
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "mirror/mirror_internal.h"

#define DROPPED_PREFIX "floe.pg.dropped."

static void dropped_key(const char *sink_id, char *out, size_t n)
{
    snprintf(out, n, DROPPED_PREFIX "%s", sink_id);
}

bool floe__mirror_dropped_at(const floe__metadata *md, const char *sink_id,
                             floe__frontier frontier)
{
    char key[400], f[32];
    dropped_key(sink_id, key, sizeof key);
    const char *v = json_string_value(json_object_get(floe__metadata_properties(md), key));
    floe__frontier_format(frontier, f, sizeof f);
    return v && strcmp(v, f) == 0;
}

/* ---- dropping tables from the mirror ------------------------------------------------------- */

/* What one table's Iceberg side holds. */
typedef struct dropping {
    floe__table *tb;             /* NULL: no Iceberg table */
    bool progress;               /* this sink committed to it */
    floe__frontier frontier;
    bool published;              /* the publication lists it */
} dropping;

static int slot_idle(floe_pg *pg, floe_error *err)
{
    const char *params[1] = {pg->slot_name};
    floe__pg_result *r = NULL;
    FLOE_FORWARD(floe__pg_query(pg->conn, "SELECT active_pid::text FROM pg_replication_slots "
                                "WHERE slot_name = $1 AND active", params, 1, &r, err));
    const char *pid = floe__pg_rows(r) ? floe__pg_get(r, 0, 0) : NULL;
    int rc = pid ? floe__err_set(err, FLOE_ESTATE, "replication slot %s is in use (by the "
                                 "walsender of process %s): a floe pg of this mirror is "
                                 "running, and would go on committing the tables' progress "
                                 "without their changes.  Stop it first, then drop the "
                                 "tables", pg->slot_name, pid)
                 : FLOE_OK;
    floe__pg_result_free(r);
    return rc;
}

/* The Iceberg table of t, if any, and this sink's progress in it; purge
 * is refused for a table holding snapshots none of which is this sink's. */
static int examine(floe_pg *pg, floe__mtable *t, bool purge, dropping *d, floe_error *err)
{
    int rc = floe__mirror_open_iceberg(pg, t, &d->tb, err);
    if (rc == FLOE_ENOTFOUND) {
        floe_error_clear(err);
        d->tb = NULL;
        return FLOE_OK;
    }
    FLOE_FORWARD(rc);
    const floe__metadata *md = d->tb->loaded->metadata;
    floe__progress p;
    FLOE_FORWARD(floe__progress_read(md, d->tb->io, t->sink_id, &p, err));
    d->progress = p.state == FLOE__PROGRESS_FOUND;
    d->frontier = p.frontier;
    FLOE_RETURN_IF(purge && !d->progress && floe__metadata_snapshot_count(md) > 0, err,
                   FLOE_ESTATE, "%s holds snapshots, but none of sink %s (this mirror never "
                   "committed to it): floe does not purge another writer's table.  Drop it "
                   "yourself if that is meant, or leave out --purge to keep it", t->ident,
                   t->sink_id);
    return FLOE_OK;
}

/* Which tables the publication lists; *all when it is FOR ALL TABLES. */
static int published(floe_pg *pg, dropping *d, bool *exists, bool *all, floe_error *err)
{
    const char *params[1] = {pg->pub_name};
    floe__pg_result *r = NULL;
    FLOE_FORWARD(floe__pg_query(pg->conn, "SELECT puballtables FROM pg_publication WHERE "
                                "pubname = $1", params, 1, &r, err));
    *exists = floe__pg_rows(r) > 0;
    *all = *exists && floe__pg_get(r, 0, 0)[0] == 't';
    floe__pg_result_free(r);
    FLOE_FORWARD(floe__pg_query(pg->conn, "SELECT schemaname, tablename FROM "
                                "pg_publication_tables WHERE pubname = $1", params, 1, &r,
                                err));
    for (size_t i = 0; i < pg->ntables; i++)
        for (size_t j = 0; j < floe__pg_rows(r) && !d[i].published; j++)
            d[i].published = strcmp(floe__pg_get(r, j, 0), pg->tables[i].nsp) == 0 &&
                             strcmp(floe__pg_get(r, j, 1), pg->tables[i].rel) == 0;
    floe__pg_result_free(r);
    return FLOE_OK;
}

/* ALTER PUBLICATION ... DROP TABLE for the published tables into sql. */
static int unpublish_statement(floe_pg *pg, const dropping *d, floe__buf *sql, floe_error *err)
{
    FLOE_FORWARD(floe__buf_printf(sql, err, "ALTER PUBLICATION "));
    FLOE_FORWARD(floe__pg_quote_ident(pg->pub_name, sql, err));
    FLOE_FORWARD(floe__buf_printf(sql, err, " DROP TABLE "));
    bool first = true;
    for (size_t i = 0; i < pg->ntables; i++) {
        if (!d[i].published)
            continue;
        if (!first)
            FLOE_FORWARD(floe__buf_append(sql, ", ", 2, err));
        FLOE_FORWARD(floe__pg_quote_ident(pg->tables[i].nsp, sql, err));
        FLOE_FORWARD(floe__buf_putc(sql, '.', err));
        FLOE_FORWARD(floe__pg_quote_ident(pg->tables[i].rel, sql, err));
        first = false;
    }
    return floe__buf_putc(sql, 0, err);
}

/* The publication no longer lists the tables (floe's), or *advice says
 * how to make it so. */
static int unpublish(floe_pg *pg, dropping *d, char *advice, size_t cap, floe_error *err)
{
    bool exists, all, any = false;
    FLOE_FORWARD(published(pg, d, &exists, &all, err));
    for (size_t i = 0; i < pg->ntables; i++)
        any = any || d[i].published;
    advice[0] = 0;
    if (!any)
        return FLOE_OK;
    if (all) {
        snprintf(advice, cap, "publication \"%s\" publishes every table (FOR ALL TABLES), so "
                 "it still sends their changes (a run with --tables ignores them; one without "
                 "mirrors them again): name the tables with --tables, or recreate the "
                 "publication for the tables to mirror", pg->pub_name);
        return FLOE_OK;
    }
    floe__buf sql;
    floe__buf_init(&sql, 1 << 20);
    int rc = unpublish_statement(pg, d, &sql, err);
    if (rc == FLOE_OK && pg->opts.create_publication) {
        rc = floe__pg_exec(pg->conn, (const char *)sql.data, err);
        if (rc == FLOE_OK)
            floe__mirror_notice(pg, "%s", (const char *)sql.data);
        else
            floe__err_wrap(err, rc, "%s", (const char *)sql.data);
    } else if (rc == FLOE_OK) {
        snprintf(advice, cap, "publication \"%s\" still publishes them, so their changes still "
                 "reach floe (a run with --tables ignores them; one without mirrors them "
                 "again): run %s (floe changes a publication only with --create-publication)",
                 pg->pub_name, (const char *)sql.data);
    }
    floe__buf_free(&sql);
    return rc;
}

/* Keep the Iceberg table, recording where the mirror let it go. */
static int keep(floe_pg *pg, floe__mtable *t, dropping *d, floe_error *err)
{
    char key[400], f[32];
    dropped_key(t->sink_id, key, sizeof key);
    floe__frontier_format(d->frontier, f, sizeof f);
    json_t *reqs = json_array();
    json_t *ups = json_pack("[{s:s, s:{s:s}}]", "action", "set-properties", "updates", key, f);
    int rc = reqs && ups ? floe__table_update(d->tb, reqs, ups, err) : FLOE_OOM(err);
    json_decref(reqs);
    json_decref(ups);
    FLOE_FORWARD(rc);
    char lsn[24];
    floe__lsn_format(d->frontier.t, lsn, sizeof lsn);
    floe__mirror_notice(pg, "%s is no longer mirrored; its Iceberg table %s stays, with its "
                        "history, committed up to %s (listed in --tables again, it is copied "
                        "again in place: a resync)", t->source, t->ident, lsn);
    return FLOE_OK;
}

typedef struct purged {
    floe__fileio *io;
    uint64_t files, missing;
} purged;

static int remove_one(void *ctx, const char *uri, floe__reach_kind kind, uint64_t size,
                      floe_error *err)
{
    (void)kind;
    (void)size;
    purged *p = ctx;
    int rc = floe__fileio_remove(p->io, uri, err);
    if (rc == FLOE_ENOTFOUND) {
        floe_error_clear(err);
        p->missing++;
        return FLOE_OK;
    }
    FLOE_FORWARD(rc);
    p->files++;
    return FLOE_OK;
}

/* Drop the Iceberg table, then delete every file its metadata reaches. */
static int purge_table(floe_pg *pg, floe__mtable *t, dropping *d, floe_error *err)
{
    floe__reach *r = NULL;
    FLOE_FORWARD(floe__reach_new(&r, err));
    int rc = floe__reach_metadata(r, d->tb->io, d->tb->loaded->metadata,
                                  d->tb->loaded->metadata_location, err);
    if (rc == FLOE_OK)
        rc = floe__catalog_drop_table(pg->catalog, d->tb->ns, d->tb->name, err);
    purged p = {d->tb->io, 0, 0};
    if (rc == FLOE_OK)
        rc = floe__reach_each(r, remove_one, &p, err);
    floe__reach_free(r);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "purging %s", t->ident);
    floe__mirror_notice(pg, "%s is no longer mirrored; its Iceberg table %s was dropped and "
                        "its %" PRIu64 " files deleted (listed in --tables again, it is copied "
                        "afresh)", t->source, t->ident, p.files);
    return FLOE_OK;
}

static int drop_one(floe_pg *pg, floe__mtable *t, dropping *d, bool purge, floe_error *err)
{
    if (!d->tb) {
        floe__mirror_notice(pg, "%s is no longer mirrored; it had no Iceberg table (%s)",
                            t->source, t->ident);
        return FLOE_OK;
    }
    if (purge)
        return purge_table(pg, t, d, err);
    if (d->progress)
        return keep(pg, t, d, err);
    floe__mirror_notice(pg, "%s is no longer mirrored; its Iceberg table %s stays, without "
                        "any commit of this mirror (listed in --tables again, it is copied)",
                        t->source, t->ident);
    return FLOE_OK;
}

static int drop_tables(floe_pg *pg, bool purge, dropping *d, floe_error *err)
{
    FLOE_FORWARD(floe__mirror_connect(pg, err));
    FLOE_FORWARD(floe__mirror_name_tables(pg, pg->opts.tables, "--drop-table", err));
    FLOE_FORWARD(slot_idle(pg, err));
    FLOE_FORWARD(floe__mirror_open_catalog(pg, err));
    for (size_t i = 0; i < pg->ntables; i++)      /* every refusal before any change */
        FLOE_FORWARD(examine(pg, &pg->tables[i], purge, &d[i], err));
    char advice[2048];
    FLOE_FORWARD(unpublish(pg, d, advice, sizeof advice, err));
    for (size_t i = 0; i < pg->ntables; i++)
        FLOE_FORWARD(drop_one(pg, &pg->tables[i], &d[i], purge, err));
    if (advice[0])
        floe__mirror_warn(pg, "%s", advice);
    return FLOE_OK;
}

int floe_pg_drop_tables(const floe_pg_options *opts, const char *tables, int purge,
                        floe_error *err)
{
    FLOE_RETURN_IF(!opts || !tables, err, FLOE_EINVAL, "floe_pg_drop_tables: NULL argument");
    floe_pg_options o;
    FLOE_FORWARD(FLOE__OPTIONS_IN(floe_pg_options, &o, opts, err));
    o.tables = tables;
    floe_pg *pg = NULL;
    FLOE_FORWARD(floe__mirror_new(&o, &pg, err));
    size_t n = 1;
    for (const char *p = tables; *p; p++)
        n += *p == ',';
    dropping *d = floe__calloc(n, sizeof *d);
    int rc = d ? drop_tables(pg, purge != 0, d, err) : FLOE_OOM(err);
    for (size_t i = 0; d && i < n; i++)
        floe__table_free(d[i].tb);
    floe__free(d);
    floe_pg_free(pg);
    return rc;
}

/* ---- retiring the mirror -------------------------------------------------------------------- */

/* Drop the slot, waiting while the walsender that streamed from it exits. */
static int drop_slot(floe_pg *pg, floe_error *err)
{
    const char *params[1] = {pg->slot_name};
    for (int tries = 0;; tries++) {
        floe__pg_result *r = NULL;
        int rc = floe__pg_query(pg->conn, "SELECT pg_drop_replication_slot($1)", params, 1, &r,
                                err);
        floe__pg_result_free(r);
        const char *state = floe__pg_sqlstate(pg->conn);
        if (rc == FLOE_OK || strcmp(state, "42704") == 0) {     /* gone already */
            floe_error_clear(err);
            return FLOE_OK;
        }
        if (strcmp(state, "55006") != 0 || tries >= 200)
            return floe__err_wrap(err, rc, "dropping replication slot %s", pg->slot_name);
        floe_error_clear(err);
        usleep(50000);
    }
}

int floe_pg_retire(floe_pg *pg, floe_error *err)
{
    floe__mirror_publish(pg);
    uint64_t done = pg->published.committed_lsn;
    FLOE_RETURN_IF(!pg->stop_lsn || !pg->conn || done < pg->stop_lsn, err, FLOE_ESTATE,
                   "floe_pg_retire: the tables have not committed everything up to the stop "
                   "LSN (floe_pg_run must return FLOE_OK first): nothing was dropped");
    floe__pg_close(pg->repl);            /* its walsender lets the slot go */
    pg->repl = NULL;
    FLOE_FORWARD(drop_slot(pg, err));
    char lsn[24];
    floe__lsn_format(done, lsn, sizeof lsn);
    floe__mirror_notice(pg, "dropped replication slot %s: every table is committed up to %s",
                        pg->slot_name, lsn);
    if (!pg->opts.create_publication) {
        floe__mirror_notice(pg, "publication %s stays (floe manages it only with "
                            "--create-publication): DROP PUBLICATION \"%s\" removes it",
                            pg->pub_name, pg->pub_name);
        return FLOE_OK;
    }
    floe__buf sql;
    floe__buf_init(&sql, 4096);
    int rc = floe__buf_printf(&sql, err, "DROP PUBLICATION IF EXISTS ");
    if (rc == FLOE_OK)
        rc = floe__pg_quote_ident(pg->pub_name, &sql, err);
    if (rc == FLOE_OK)
        rc = floe__buf_putc(&sql, 0, err);
    if (rc == FLOE_OK)
        rc = floe__pg_exec(pg->conn, (const char *)sql.data, err);
    if (rc == FLOE_OK)
        floe__mirror_notice(pg, "%s", (const char *)sql.data);
    else
        floe__err_wrap(err, rc, "%s (the slot is dropped already)", (const char *)sql.data);
    floe__buf_free(&sql);
    return rc;
}

/* ---- tables dropped or replaced while the mirror runs ---------------------------------------- */

int floe__mirror_names_verify(floe_pg *pg, floe_error *err)
{
    if (!pg->ntables || floe__mirror_stopping(pg))
        return FLOE_OK;
    floe__buf sql;
    floe__buf_init(&sql, 1 << 24);
    const char **params = floe__calloc(pg->ntables * 2, sizeof *params);
    int rc = params ? floe__buf_printf(&sql, err, "SELECT x.i, c.oid FROM (VALUES ")
                    : FLOE_OOM(err);
    for (size_t i = 0; rc == FLOE_OK && i < pg->ntables; i++) {
        params[2 * i] = pg->tables[i].nsp;
        params[2 * i + 1] = pg->tables[i].rel;
        rc = floe__buf_printf(&sql, err, "%s($%zu::text, $%zu::text, %zu)", i ? ", " : "",
                              2 * i + 1, 2 * i + 2, i);
    }
    if (rc == FLOE_OK)
        rc = floe__buf_printf(&sql, err, ") AS x(nsp, rel, i) LEFT JOIN pg_namespace n ON "
                              "n.nspname = x.nsp LEFT JOIN pg_class c ON c.relnamespace = n.oid "
                              "AND c.relname = x.rel ORDER BY x.i");
    if (rc == FLOE_OK)
        rc = floe__buf_putc(&sql, 0, err);
    floe__pg_result *r = NULL;
    if (rc == FLOE_OK)
        rc = floe__pg_query(pg->conn, (const char *)sql.data, params, (int)(pg->ntables * 2), &r,
                            err);
    floe__buf_free(&sql);
    floe__free(params);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "checking that the mirrored tables still exist");
    for (size_t i = 0; rc == FLOE_OK && i < floe__pg_rows(r) && i < pg->ntables; i++) {
        const floe__mtable *t = &pg->tables[i];
        const char *oid = floe__pg_get(r, i, 1);
        if (oid && strtoul(oid, NULL, 10) == t->relid)
            continue;
        pg->reopen = true;
        rc = floe__err_set(err, FLOE_ECONFLICT, "%s was %s in Postgres while floe mirrored it: "
                           "floe opens the mirror again, as a new run would", t->source,
                           oid ? "replaced (dropped and created again, or another table renamed "
                                 "to its name)"
                               : "dropped or renamed");
    }
    floe__pg_result_free(r);
    return rc;
}
