/*
 * mirror_copy.c - the initial copy: each table that records no progress is
 * read with COPY ... TO STDOUT inside a transaction that imports the
 * snapshot a replication slot exported at consistent point C, and becomes
 * its sink's snapshot batch [C-1, C): every row at time C-1, then one
 * advance to C commits the whole table as one snapshot with frontier [C].
 * The stream then brings every transaction that commits at C or later.
 *
 * Each table is locked (ACCESS SHARE) before it is read, and its catalog
 * rows as the snapshot sees them are compared with the current ones: an
 * ALTER TABLE that committed after the snapshot was taken would make COPY
 * read the table empty (a rewrite is not MVCC-safe) or fail on a column.
 *
 * Rows stream through: COPY hands out one line at a time and the sink
 * spills what exceeds its memory, so a table of any size is copied in
 * bounded memory.  A copy cut short (a crash, a stop, an error) commits
 * nothing of the table, and the next run copies it again.
 */
#include <stdio.h>

#include "mirror/mirror_internal.h"

#define CHECK_EVERY 65536

static int table_name(const floe__mtable *t, floe__buf *b, floe_error *err)
{
    FLOE_FORWARD(floe__pg_quote_ident(t->nsp, b, err));
    FLOE_FORWARD(floe__buf_putc(b, '.', err));
    return floe__pg_quote_ident(t->rel, b, err);
}

/* COPY t (cols) TO STDOUT; for a partitioned table, which COPY refuses,
 * COPY (SELECT cols FROM t) TO STDOUT (every partition's rows). */
static int copy_sql(const floe__mtable *t, floe__buf *b, floe_error *err)
{
    FLOE_FORWARD(floe__buf_printf(b, err, t->partitioned ? "COPY (SELECT " : "COPY "));
    if (!t->partitioned)
        FLOE_FORWARD(table_name(t, b, err));
    FLOE_FORWARD(floe__buf_printf(b, err, t->partitioned ? "" : " ("));
    for (size_t c = 0; c < t->ncols; c++) {
        if (c)
            FLOE_FORWARD(floe__buf_append(b, ", ", 2, err));
        FLOE_FORWARD(floe__pg_quote_ident(t->cols[c].name, b, err));
    }
    if (t->partitioned) {
        FLOE_FORWARD(floe__buf_printf(b, err, " FROM "));
        FLOE_FORWARD(table_name(t, b, err));
    }
    FLOE_FORWARD(floe__buf_printf(b, err, ") TO STDOUT"));
    return floe__buf_putc(b, 0, err);
}

int floe__mirror_shape(floe__pg_conn *c, const floe__mtable *t, char **out, floe_error *err)
{
    char rel[16];
    snprintf(rel, sizeof rel, "%u", t->relid);
    const char *params[1] = {rel};
    floe__pg_result *r = NULL;
    FLOE_FORWARD(floe__pg_query(c, "SELECT (SELECT xmin::text FROM pg_class WHERE oid = $1) || "
                                "':' || (SELECT string_agg(attnum || ',' || attname || ',' || "
                                "atttypid || ',' || atttypmod || ',' || attisdropped || ',' || "
                                "attnotnull, ';' ORDER BY attnum) FROM pg_attribute WHERE "
                                "attrelid = $1 AND attnum > 0) || coalesce((SELECT ':' || "
                                "string_agg(c.oid || ',' || c.xmin, ';' ORDER BY c.oid) FROM "
                                "pg_partition_tree($1) p JOIN pg_class c ON c.oid = p.relid "
                                "WHERE p.relid <> $1), '')", params, 1, &r, err));
    const char *v = floe__pg_rows(r) ? floe__pg_get(r, 0, 0) : NULL;
    *out = floe__strdup(v ? v : "");
    floe__pg_result_free(r);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

int floe__mirror_hold_table(floe_pg *pg, floe__pg_conn *c, const floe__mtable *t,
                            const char *described, bool *changed, floe_error *err)
{
    floe__buf sql;
    floe__buf_init(&sql, 1 << 16);
    int rc = floe__buf_printf(&sql, err, "LOCK TABLE ");
    if (rc == FLOE_OK)
        rc = floe__pg_quote_ident(t->nsp, &sql, err);
    if (rc == FLOE_OK)
        rc = floe__buf_putc(&sql, '.', err);
    if (rc == FLOE_OK)
        rc = floe__pg_quote_ident(t->rel, &sql, err);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(&sql, err, " IN ACCESS SHARE MODE%c", 0);
    if (rc == FLOE_OK)
        rc = floe__pg_exec(c, (const char *)sql.data, err);
    floe__buf_free(&sql);
    char *then = NULL, *now = NULL;
    if (rc == FLOE_OK)
        rc = floe__mirror_shape(c, t, &then, err);
    if (rc == FLOE_OK)
        rc = floe__mirror_shape(pg->conn, t, &now, err);
    *changed = rc == FLOE_OK && (strcmp(then, now) != 0 || (described && strcmp(then, described)));
    floe__free(then);
    floe__free(now);
    return rc;
}

int floe__mirror_copy_begin(floe__pg_conn *c, const floe__mtable *t, floe_error *err)
{
    floe__buf sql;
    floe__buf_init(&sql, 1 << 20);
    int rc = copy_sql(t, &sql, err);
    if (rc == FLOE_OK)
        rc = floe__pg_copy_begin(c, (const char *)sql.data, err);
    floe__buf_free(&sql);
    return rc;
}

int floe__mirror_copy_some(floe_pg *pg, floe__pg_conn *c, floe__mtable *t, uint64_t time,
                           uint64_t max, bool *done, floe_error *err)
{
    *done = false;
    FLOE_FORWARD(floe__mirror_fit_fields(pg, t->ncols, err));
    for (uint64_t n = 0; n < max; n++) {
        const char *line;
        size_t len;
        int got;
        FLOE_FORWARD(floe__pg_copy_next(c, &line, &len, &got, err));
        if (!got) {
            *done = true;
            return FLOE_OK;
        }
        FLOE_FORWARD(floe__pg_copy_split(line, len, t->ncols, &pg->fields_buf, pg->fields, err));
        FLOE_FORWARD(floe__mirror_copy_row(pg, t, pg->fields, err));
        FLOE_FORWARD(floe_sink_push(t->sink, t->row, time, 1, err));
        t->copied_rows++;
        pg->copy_rows++;
    }
    return FLOE_OK;
}

static int copy_rows(floe_pg *pg, floe__mtable *t, uint64_t time, floe_error *err)
{
    for (bool done = false;;) {
        FLOE_FORWARD(floe__mirror_copy_some(pg, pg->rconn, t, time, CHECK_EVERY, &done, err));
        floe__mirror_publish(pg);
        if (done)
            return FLOE_OK;
        FLOE_RETURN_IF(floe__mirror_stopping(pg), err, FLOE_EINTERRUPTED,
                       "stopped during the copy");
    }
}

/* After t's copy failed to commit, or its commit was skipped as covered:
 * whether another process of this mirror committed t's copy meanwhile (t
 * recorded no progress when this run opened it; progress at `at` is this
 * run's own), as FLOE_ESTATE naming it; else FLOE_OK. */
static int another_mirror(floe_pg *pg, floe__mtable *t, uint64_t at, bool *other,
                          floe_error *err)
{
    floe__table *tb = NULL;
    floe__progress p = {.state = FLOE__PROGRESS_NONE};
    if (floe__mirror_open_iceberg(pg, t, &tb, NULL) != FLOE_OK ||
        floe__progress_read(tb->loaded->metadata, tb->io, t->sink_id, &p, NULL) != FLOE_OK)
        p.state = FLOE__PROGRESS_NONE;
    floe__table_free(tb);
    if (p.state != FLOE__PROGRESS_FOUND || (!p.frontier.empty && p.frontier.t == at))
        return FLOE_OK;                   /* nothing, or this run's own commit */
    *other = true;
    char lsn[24];
    floe__lsn_format(p.frontier.t, lsn, sizeof lsn);
    floe_error_clear(err);
    return floe__err_set(err, FLOE_ESTATE, "another floe pg process is mirroring %s into %s in "
                         "the same catalog (slot %s): it committed its own copy of the table, up "
                         "to %s, while this run was copying it.  Nothing of this run's copy is "
                         "committed, and this run stops; the other goes on.  Run one floe pg "
                         "per slot and catalog (a later run resumes from what the table "
                         "records)", t->source, t->ident, pg->slot_name, lsn);
}

/* Commit t's copy (its snapshot batch) at `at`: another process of the
 * mirror that committed it first makes this one fail, whichever of the two
 * copies is newer (the sink skips a batch another run covered). */
static int commit_copy(floe_pg *pg, floe__mtable *t, uint64_t at, bool *other,
                       floe_error *err)
{
    floe_sink_stats before, after;
    floe_sink_stats_get(t->sink, &before);
    int rc = floe__mirror_advance(pg, t, at, err);
    floe_sink_stats_get(t->sink, &after);
    if (rc == FLOE_OK && after.batches_skipped == before.batches_skipped)
        return FLOE_OK;
    int arc = another_mirror(pg, t, at, other, err);
    if (arc != FLOE_OK)
        return arc;
    return rc != FLOE_OK ? rc : floe__err_set(err, FLOE_ESTATE, "%s: its copy was skipped as "
                                              "committed already", t->ident);
}

static int copy_table(floe_pg *pg, floe__mtable *t, uint64_t at, floe_error *err)
{
    uint64_t t0 = floe__monotonic_ns();
    bool changed = false;
    int rc = floe__mirror_hold_table(pg, pg->rconn, t, t->shape, &changed, err);
    if (rc == FLOE_OK && changed) {
        pg->reopen = true;               /* floe_pg_run copies it again, from a new snapshot */
        rc = floe__err_set(err, FLOE_ECONFLICT, "%s changed (an ALTER TABLE or a TRUNCATE "
                           "committed) after the snapshot its copy is read in was taken: that "
                           "snapshot would show it in another shape, or empty; copying it again "
                           "from a new snapshot", t->source);
    }
    if (rc == FLOE_OK)
        rc = floe__mirror_part_read(pg, pg->rconn, t, err);      /* as the copy sees them */
    if (rc == FLOE_OK)
        rc = floe_sink_set_as_of(t->sink, at - 1, err);
    if (rc == FLOE_OK)
        rc = floe__mirror_copy_begin(pg->rconn, t, err);
    if (rc == FLOE_OK)
        rc = copy_rows(pg, t, at - 1, err);
    bool other = false;                                   /* another process committed it */
    if (rc == FLOE_OK)
        rc = commit_copy(pg, t, at, &other, err);         /* the snapshot batch commits */
    if (rc != FLOE_OK && !other)
        return floe__err_wrap(err, rc, "the initial copy of %s (nothing of it is committed; "
                              "the next run copies it again)", t->source);
    if (rc != FLOE_OK)
        return rc;
    t->input = t->start = at;
    t->copy = false;
    t->copied = true;
    t->last_commit_ns = floe__monotonic_ns();
    pg->tables_copied++;
    char lsn[24];
    floe__lsn_format(at, lsn, sizeof lsn);
    floe__mirror_notice(pg, "copied %s: %llu rows into %s in %.1fs, committed at %s", t->source,
                        (unsigned long long)t->copied_rows, t->ident,
                        (double)(floe__monotonic_ns() - t0) / 1e9, lsn);
    floe__mirror_publish(pg);
    return FLOE_OK;
}

int floe__mirror_in_snapshot(floe__pg_conn *c, const char *snapshot, floe_error *err)
{
    floe__buf sql;
    floe__buf_init(&sql, 4096);
    int rc = floe__buf_printf(&sql, err, "SET TRANSACTION SNAPSHOT ");
    if (rc == FLOE_OK)
        rc = floe__pg_quote_literal(snapshot, &sql, err);
    if (rc == FLOE_OK)
        rc = floe__buf_putc(&sql, 0, err);
    if (rc == FLOE_OK)
        rc = floe__pg_exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err);
    if (rc == FLOE_OK)
        rc = floe__pg_exec(c, (const char *)sql.data, err);
    floe__buf_free(&sql);
    return rc;
}

int floe__mirror_copy(floe_pg *pg, const char *snapshot, uint64_t at, floe_error *err)
{
    /* the snapshot on a connection of its own: pg->conn sees the catalog now */
    int rc = floe__pg_connect(pg->opts.source, false, &pg->rconn, err);
    if (rc == FLOE_OK)
        rc = floe__mirror_in_snapshot(pg->rconn, snapshot, err);
    for (size_t i = 0; rc == FLOE_OK && i < pg->ntables; i++)
        if (pg->tables[i].copy)
            rc = copy_table(pg, &pg->tables[i], at, err);
    if (rc == FLOE_OK)
        rc = floe__pg_exec(pg->rconn, "COMMIT", err);
    floe__pg_close(pg->rconn);           /* a transaction still open rolls back */
    pg->rconn = NULL;
    return rc;
}
