/*
 * mirror_slot.c - the replication slot, checked against what the tables
 * recorded, or created.
 *
 *  - No slot, and no table records progress: the slot is created on the
 *    walsender connection that will stream from it, exporting a snapshot
 *    (consistent with the slot's start) that the initial copy uses.
 *  - No slot while tables record progress: the changes since their
 *    frontiers are gone with it.  An error, never a silent fresh start.
 *  - The slot exists: it must be a pgoutput slot of this database that is
 *    not invalidated, and its confirmed flush LSN must not be ahead of any
 *    table's frontier (else changes were consumed that no table holds).
 *    Its exported snapshot (if it ever had one) is gone, so tables that
 *    still need a copy (a crash before their copy committed, or a table
 *    new to the mirror) are copied inside the snapshot of a temporary slot
 *    created for it (mirror.c); the stream skips their changes below that
 *    slot's consistent point.  The slot itself is never dropped.
 *  - The slot exists but the catalog holds none of the tables (they were
 *    all created by this run): another catalog holds this mirror (a
 *    relative catalog path run from another directory), and copying here
 *    would move the slot past it.  Refused unless new_mirror.  (A first
 *    run killed during its copies left its tables created, empty.)
 */
#include <stdio.h>

#include "mirror/mirror_internal.h"

static int repl_connect(floe_pg *pg, floe__pg_conn **c, floe_error *err)
{
    int rc = floe__pg_connect(pg->opts.source, true, c, err);
    if (rc == FLOE_EPERM)
        return floe__err_wrap(err, rc, "a replication connection needs a role with the "
                              "REPLICATION attribute (ALTER ROLE ... REPLICATION) and a "
                              "pg_hba.conf entry for database connections");
    return rc;
}

int floe__mirror_slot_create(floe_pg *pg, floe__pg_conn *c, const char *name, bool temporary,
                             uint64_t *consistent, char *snapshot, size_t cap, floe_error *err)
{
    char sql[256];
    snprintf(sql, sizeof sql, "CREATE_REPLICATION_SLOT \"%s\" %sLOGICAL pgoutput %s", name,
             temporary ? "TEMPORARY " : "",
             pg->server_version >= 150000 ? "(SNAPSHOT 'export')" : "EXPORT_SNAPSHOT");
    floe__pg_result *r = NULL;
    int rc = floe__pg_query(c, sql, NULL, 0, &r, err);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "creating replication slot %s", name);
    const char *lsn = floe__pg_get(r, 0, 1), *snap = floe__pg_get(r, 0, 2);
    if (!lsn || !snap || floe__lsn_parse(lsn, consistent) != 0 || *consistent == 0)
        rc = floe__err_set(err, FLOE_EFORMAT, "CREATE_REPLICATION_SLOT answered without a "
                           "consistent point and snapshot");
    else
        snprintf(snapshot, cap, "%s", snap);
    floe__pg_result_free(r);
    return rc;
}

/* The smallest frontier of the tables that record progress, 0 when none
 * does.  A table listed again after --drop-table does not count: it is
 * resynced, whatever the slot kept. */
static uint64_t min_progress(const floe_pg *pg, const char **which)
{
    uint64_t min = 0;
    for (size_t i = 0; i < pg->ntables; i++)
        if (!pg->tables[i].copy && !pg->tables[i].rejoined &&
            (!min || pg->tables[i].start < min)) {
            min = pg->tables[i].start;
            *which = pg->tables[i].ident;
        }
    return min;
}

static int create_slot(floe_pg *pg, floe_error *err)
{
    FLOE_FORWARD(repl_connect(pg, &pg->repl, err));
    FLOE_FORWARD(floe__mirror_slot_create(pg, pg->repl, pg->slot_name, false,
                                          &pg->slot.consistent, pg->slot.snapshot,
                                          sizeof pg->slot.snapshot, err));
    pg->slot.created = true;
    pg->slot.exists = true;
    char lsn[24];
    floe__lsn_format(pg->slot.consistent, lsn, sizeof lsn);
    floe__mirror_notice(pg, "created replication slot %s (pgoutput), consistent at %s", pg->slot_name,
                        lsn);
    return FLOE_OK;
}

static int check_found(floe_pg *pg, floe__pg_result *r, floe_error *err)
{
    const char *plugin = floe__pg_get(r, 0, 0), *type = floe__pg_get(r, 0, 1);
    const char *db = floe__pg_get(r, 0, 2), *lsn = floe__pg_get(r, 0, 3);
    const char *status = floe__pg_get(r, 0, 4), *s = pg->slot_name;
    if (!type || strcmp(type, "logical") != 0 || !plugin || strcmp(plugin, "pgoutput") != 0)
        return floe__err_set(err, FLOE_ESTATE, "replication slot %s is not a logical slot of "
                             "plugin pgoutput (it is %s, %s): pick another --slot", s,
                             type ? type : "?", plugin ? plugin : "no plugin");
    if (!db || strcmp(db, pg->database) != 0)
        return floe__err_set(err, FLOE_ESTATE, "replication slot %s belongs to database %s, "
                             "not %s", s, db ? db : "?", pg->database);
    if ((status && strcmp(status, "lost") == 0) || !lsn)
        return floe__err_set(err, FLOE_ESTATE, "replication slot %s was invalidated (the server "
                             "removed WAL it needed, max_slot_wal_keep_size): the changes since "
                             "the tables' frontiers are gone; drop the slot and the Iceberg "
                             "tables to copy them afresh", s);
    if (floe__lsn_parse(lsn, &pg->slot.confirmed) != 0)
        return floe__err_set(err, FLOE_EFORMAT, "slot %s: confirmed_flush_lsn '%s'", s, lsn);
    return FLOE_OK;
}

/* The Postgres name of the table whose frontier is `min`. */
static const char *which_source(const floe_pg *pg, uint64_t min)
{
    for (size_t i = 0; i < pg->ntables; i++)
        if (!pg->tables[i].copy && !pg->tables[i].rejoined && pg->tables[i].start == min)
            return pg->tables[i].source;
    return "?";
}

static int check_against_tables(floe_pg *pg, floe_error *err)
{
    const char *which = NULL;
    uint64_t min = min_progress(pg, &which);
    bool any = false;                      /* a table an earlier run here created */
    for (size_t i = 0; i < pg->ntables; i++)
        any = any || pg->tables[i].existed;
    if (!min && !any && !pg->opts.new_mirror) {    /* a catalog new to this slot */
        char a[24];
        floe__lsn_format(pg->slot.confirmed, a, sizeof a);
        const char *cat = pg->sink.connect->catalog;
        return floe__err_set(err, FLOE_ESTATE, "replication slot %s exists and is confirmed up "
                             "to %s, but catalog %s holds none of its tables: "
                             "another catalog holds this mirror (a relative catalog path, "
                             "the default sqlite:warehouse/catalog.db among them, is relative "
                             "to the working directory: run from the first run's directory, "
                             "or name the catalog with an absolute path).  Copying the tables "
                             "here would move the slot past what that catalog holds.  To "
                             "mirror into this catalog anyway pass --new-mirror (every table "
                             "is copied; the other catalog can no longer resume), or use "
                             "another --slot", pg->slot_name, a,
                             cat ? cat : "sqlite:warehouse/catalog.db");
    }
    if (!min || pg->slot.confirmed <= min)
        return FLOE_OK;
    char a[24], b[24];
    floe__lsn_format(pg->slot.confirmed, a, sizeof a);
    floe__lsn_format(min, b, sizeof b);
    return floe__err_set(err, FLOE_ESTATE, "replication slot %s is confirmed up to %s, ahead of "
                         "the frontier %s of %s: changes in between were consumed by another "
                         "client of the slot, or the table was left out of --tables while the "
                         "others went on, and they are not in the table.  Run floe pg "
                         "--drop-table %s (its Iceberg table stays), then list it again: it is "
                         "copied again in place (a resync)", pg->slot_name, a, b, which,
                         which_source(pg, min));
}

int floe__mirror_slot_prepare(floe_pg *pg, floe_error *err)
{
    const char *sql = pg->server_version >= 130000
        ? "SELECT plugin, slot_type, database, confirmed_flush_lsn, wal_status FROM "
          "pg_replication_slots WHERE slot_name = $1"
        : "SELECT plugin, slot_type, database, confirmed_flush_lsn, NULL FROM "
          "pg_replication_slots WHERE slot_name = $1";
    const char *params[1] = {pg->slot_name};
    floe__pg_result *r = NULL;
    FLOE_FORWARD(floe__pg_query(pg->conn, sql, params, 1, &r, err));
    bool exists = floe__pg_rows(r) > 0;
    int rc = exists ? check_found(pg, r, err) : FLOE_OK;
    floe__pg_result_free(r);
    FLOE_FORWARD(rc);
    const char *which = NULL;
    uint64_t min = min_progress(pg, &which);
    if (!exists && min && !pg->opts.new_mirror) {
        char f[24];
        floe__lsn_format(min, f, sizeof f);
        return floe__err_set(err, FLOE_ENOTFOUND, "replication slot %s does not exist, but %s "
                             "records progress from it (frontier %s): the slot was dropped (floe "
                             "pg --retire, or pg_drop_replication_slot) and the changes since "
                             "then are gone with it.  To mirror these tables again pass "
                             "--new-mirror: a new slot is created and every table is copied "
                             "again in place (a resync; its Iceberg history stays)",
                             pg->slot_name, which, f);
    }
    if (!exists && min)                   /* --new-mirror: every table resynced */
        for (size_t i = 0; i < pg->ntables; i++)
            if (!pg->tables[i].copy)
                floe__mirror_resync_mark(pg, &pg->tables[i], "a new mirror (--new-mirror): "
                                         "the slot its frontier came from is gone");
    if (!exists)
        return create_slot(pg, err);
    pg->slot.exists = true;
    FLOE_FORWARD(check_against_tables(pg, err));
    return repl_connect(pg, &pg->repl, err);
}
