/*
 * mirror_resync.c - one table copied again in place while the others
 * stream on: after a change of shape Iceberg cannot take in place
 * (mirror_ddl.c), or when --resync asks for it.
 *
 * From the moment a resync is due the table's changes are skipped.  It
 * starts in the stream loop, one table at a time: a temporary slot is
 * created on a walsender connection of its own, exporting a snapshot
 * consistent at C (every transaction committing below C is in it, none at
 * or after C); a second connection imports that snapshot, locks the table
 * (starting over with a new slot when an ALTER TABLE committed after C: in
 * an older snapshot a rewritten table reads empty), reads the table's
 * columns and key in it, and runs COPY.  The table's sink is
 * opened again on its Iceberg table as committed (what it held is in the
 * copy), declared in the snapshot's shape (floe__sink_resync: renamed
 * columns keep their field ids, a column whose type changed gets a new
 * one), and the copy's lines go in at time C-1, a few thousand per turn
 * of the stream loop, between the other tables' changes; the stream
 * skips the table's changes below C and pushes those at C and later (a
 * change of its shape at or after C first finishes the copy: the sink's
 * schema change would commit what is below it).
 * When COPY ends the sink advances to C: one `overwrite` snapshot removes
 * every file of the table and adds the copy, frontier [C].  Until then the
 * table's committed frontier stays where it was, so the slot cannot move
 * past it: a crash or stop in the middle loses nothing, and the next run
 * meets the same change and starts the resync again (--resync must be
 * given again).
 */
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "mirror/mirror_internal.h"

#define RESYNC_LINES 20000            /* COPY lines per turn of the stream loop */

void floe__mirror_resync_mark(floe_pg *pg, floe__mtable *t, const char *why)
{
    if (t->resync_due)
        return;
    t->resync_due = true;
    t->pending = 0;
    t->pending_since = 0;
    snprintf(t->resync_why, sizeof t->resync_why, "%s", why);
    floe__mirror_notice(pg, "%s: %s; it is copied again in place (a resync) while the other "
                        "tables go on", t->source, why);
}

static void close_conns(floe_pg *pg)
{
    floe__pg_close(pg->rconn);           /* its transaction (and any COPY) ends */
    pg->rconn = NULL;
    floe__pg_close(pg->tmp);             /* drops the temporary slot */
    pg->tmp = NULL;
}

void floe__mirror_resync_abandon(floe_pg *pg)
{
    floe__mtable *t = pg->resync;
    close_conns(pg);
    if (!t)
        return;
    pg->resync = NULL;
    floe__mirror_notice(pg, "the resync of %s stopped before its commit: %s stays as it was "
                        "and the next run copies it again%s", t->source, t->ident,
                        strstr(t->resync_why, "--resync") ? " (pass --resync again)" : "");
}

static floe__mtable *next_due(floe_pg *pg)
{
    for (size_t i = 0; i < pg->ntables; i++)
        if (pg->tables[i].resync_due)
            return &pg->tables[i];
    return NULL;
}

static int start(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    char name[64], snap[96], lsn[24];
    snprintf(name, sizeof name, "floe_resync_%d_%" PRIx64, (int)getpid(),
             (uint64_t)floe__monotonic_ns() & 0xffffffffu);
    uint64_t at = 0;
    FLOE_FORWARD(floe__pg_connect(pg->opts.source, true, &pg->tmp, err));
    FLOE_FORWARD(floe__mirror_slot_create(pg, pg->tmp, name, true, &at, snap, sizeof snap, err));
    FLOE_FORWARD(floe__pg_connect(pg->opts.source, false, &pg->rconn, err));
    FLOE_FORWARD(floe__mirror_in_snapshot(pg->rconn, snap, err));
    bool changed = false;
    FLOE_FORWARD(floe__mirror_hold_table(pg, pg->rconn, t, NULL, &changed, err));
    if (changed) {                       /* a DDL after the snapshot: take another */
        close_conns(pg);
        floe__mirror_notice(pg, "%s changed shape again as its resync began: it starts over",
                            t->source);
        return FLOE_OK;
    }
    floe__mcol *cat = NULL;
    size_t ncat = 0;
    FLOE_FORWARD(floe__mirror_columns(pg, pg->rconn, t->relid, t->source, &cat, &ncat, err));
    int rc = floe__mirror_reopen_sink(pg, t, err);
    if (rc == FLOE_OK)                   /* its partitions as the copy sees them */
        rc = floe__mirror_part_read(pg, pg->rconn, t, err);
    if (rc != FLOE_OK) {
        floe__mirror_cols_free(cat, ncat);
        return rc;
    }
    FLOE_FORWARD(floe__mirror_reshape_whole(pg, pg->rconn, t, cat, ncat, at, err));
    FLOE_FORWARD(floe__mirror_copy_begin(pg->rconn, t, err));
    pg->resync = t;
    t->resync_due = false;
    t->resyncing = true;
    t->resync_at = t->start = at;
    t->resync_rows = 0;
    t->resync_t0 = floe__monotonic_ns();
    t->msg_pending = false;              /* shapes before `at` do not count */
    floe__lsn_format(at, lsn, sizeof lsn);
    floe__mirror_notice(pg, "resyncing %s inside the snapshot of temporary slot %s, consistent "
                        "at %s", t->source, name, lsn);
    return FLOE_OK;
}

static int finish(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    FLOE_FORWARD(floe__pg_exec(pg->rconn, "COMMIT", err));
    char lsn[24];
    floe__lsn_format(t->resync_at, lsn, sizeof lsn);
    FLOE_FORWARD(floe_sink_set_property(t->sink, "floe.pg.lsn", lsn, err));
    FLOE_FORWARD(floe__mirror_advance(pg, t, t->resync_at, err));     /* the overwrite commits */
    close_conns(pg);
    pg->resync = NULL;
    pg->resyncs++;
    t->resyncing = false;
    t->input = t->resync_at;
    t->last_commit_ns = floe__monotonic_ns();
    floe__mirror_notice(pg, "resynced %s: %" PRIu64 " rows into %s in %.1fs, committed at %s "
                        "(one snapshot replacing every file)", t->source, t->resync_rows,
                        t->ident, (double)(floe__monotonic_ns() - t->resync_t0) / 1e9, lsn);
    return FLOE_OK;
}

static int step(floe_pg *pg, floe_error *err)
{
    floe__mtable *t = pg->resync;
    if (!t) {
        if (!(t = next_due(pg)))
            return FLOE_OK;
        if (pg->verify_at)                 /* its commit would pass the point verified */
            return floe__mirror_verify_refuse_resync(t, err);
        return start(pg, t, err);
    }
    bool done = false;
    uint64_t before = t->copied_rows;
    FLOE_FORWARD(floe__mirror_copy_some(pg, pg->rconn, t, t->resync_at - 1, RESYNC_LINES, &done,
                                        err));
    t->resync_rows += t->copied_rows - before;
    return done ? finish(pg, t, err) : FLOE_OK;
}

int floe__mirror_resync_complete(floe_pg *pg, floe_error *err)
{
    floe__mtable *t = pg->resync;
    if (!t)
        return FLOE_OK;
    floe__mirror_notice(pg, "%s changed shape again during its resync: the copy is finished "
                        "first (the stream waits)", t->source);
    while (pg->resync == t)
        FLOE_FORWARD(floe__mirror_resync_step(pg, err));
    return FLOE_OK;
}

int floe__mirror_resync_step(floe_pg *pg, floe_error *err)
{
    floe__mtable *t = pg->resync ? pg->resync : next_due(pg);
    int rc = step(pg, err);
    if (rc != FLOE_OK && t)
        return floe__err_wrap(err, rc, "the resync of %s (nothing of it is committed; the "
                              "next run does it again)", t->source);
    return rc;
}
