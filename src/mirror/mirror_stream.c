/*
 * mirror_stream.c - the change stream of the slot into the tables' sinks.
 *
 * START_REPLICATION at the smallest frontier of the tables (the server
 * starts at its confirmed flush LSN when that is later; every table skips
 * changes below its own frontier).  Then, message by message:
 *
 *   Begin          the transaction's changes get its commit LSN as time
 *   Relation       a table's shape in the stream, compared with the shape
 *                  it is mirrored in at its next change: a difference
 *                  (ALTER TABLE) changes its Iceberg table's schema at that
 *                  change's commit LSN, or copies the table again in place
 *                  (mirror_ddl.c, mirror_resync.c)
 *   Insert         +new row
 *   Update         -old row (the old tuple of REPLICA IDENTITY FULL; else a
 *                  retraction by key), +new row
 *   Delete         -old row, or a retraction by key
 *   Truncate       each mirrored table named: what it held and what this
 *                  transaction pushed so far are gone (floe_sink_truncate:
 *                  the snapshot that commits it removes every file), its
 *                  later changes in the transaction go in one time later
 *   Commit         the frontier moves to the commit's end LSN
 *   keepalive      between transactions, the frontier moves to its WAL
 *                  position (everything before it was sent)
 *
 * With protocol 2 (Postgres 14+, txn_streaming), a transaction larger than
 * the server's logical_decoding_work_mem comes while it runs:
 *
 *   Stream Start   the messages up to Stream Stop belong to in-progress
 *                  transaction xid: each goes to its spill file
 *                  (mirror_spill.c) with the subtransaction that made it
 *   Stream Abort   the file goes, or the subtransaction's records are
 *                  marked to be skipped
 *   Stream Commit  the file is replayed a turn of the loop at a time,
 *                  through the same Begin .. Commit path as above at the
 *                  commit LSN (a first pass finds the keys it touches once,
 *                  which need no netting); nothing else is read meanwhile
 *
 * Within one transaction (one time) the sink cannot order a retraction by
 * key against rows inserted at the same time, so a table whose old rows
 * are not sent has its keys netted here (mirror_txn.c): a key touched again
 * retracts the exact row this transaction pushed for it.
 *
 * Snapshots are made on the wall clock: every commit interval each table
 * with changes advances to the frontier (one commit, floe_sink_options
 * commit_on_advance), and a table without changes does so every idle
 * interval, so that it records progress too.  Only after that does the
 * standby status update report, as flush position, the smallest committed
 * frontier of all tables: the slot never moves ahead of any table (SPEC
 * 7.5).
 */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

#include "mirror/mirror_internal.h"

#define NS 1000000000ull
#define STATUS_EVERY (10 * NS)
#define LAG_EVERY (5 * NS)
#define PUBLISH_EVERY (NS / 5)
#define PROBE_EVERY (NS / 5)          /* stop-at: ask the server for keepalives */
#define DRAIN_MAX 20000

typedef enum commit_what { COMMIT_DUE, COMMIT_PENDING, COMMIT_ALL } commit_what;

static floe__mtable *table_of(floe_pg *pg, uint32_t relid)
{
    if (pg->last_table && pg->last_table->relid == relid)
        return pg->last_table;
    for (size_t i = 0; i < pg->ntables; i++)
        if (pg->tables[i].relid == relid)
            return pg->last_table = &pg->tables[i];
    return NULL;
}

/* A table whose old rows come whole, with no key touched twice yet in this
 * transaction: its changes need no netting (mirror_txn.c). */
static bool plain(const floe_pg *pg, const floe__mtable *t)
{
    return t->stream_replident == 'f' && floe__txnmap_count(pg->txn) == 0;
}

/* The time of t's changes now: the transaction's commit LSN, plus one per
 * TRUNCATE of t in it so far. */
static uint64_t time_of(const floe_pg *pg, const floe__mtable *t)
{
    return t->trunc_lsn == pg->txn_lsn ? pg->txn_lsn + t->truncs : pg->txn_lsn;
}

/* ---- the slot: status updates ------------------------------------------------------------ */

static uint64_t committed_min(const floe_pg *pg)
{
    uint64_t min = UINT64_MAX;
    for (size_t i = 0; i < pg->ntables; i++) {
        floe_sink_stats st;
        floe_sink_stats_get(pg->tables[i].sink, &st, sizeof st);
        if (!st.has_committed_frontier || st.committed_frontier_empty)
            return 0;
        if (st.committed_frontier < min)
            min = st.committed_frontier;
    }
    return min == UINT64_MAX ? 0 : min;
}

/* Report the smallest committed frontier as the slot's flush position. */
static int send_status(floe_pg *pg, bool reply, floe_error *err)
{
    uint64_t flush = committed_min(pg);
    if (flush < pg->reported)
        flush = pg->reported;
    uint64_t write = pg->received > flush ? pg->received : flush;
    uint8_t msg[FLOE__PG_STATUS_LEN];
    floe__pg_status_encode(write, flush, flush, floe__pg_now_us(), reply, msg);
    FLOE_FORWARD(floe__pg_stream_send(pg->repl, msg, sizeof msg, err));
    pg->reported = flush;
    return FLOE_OK;
}

/* ---- commits ------------------------------------------------------------------------------- */

int floe__mirror_advance(floe_pg *pg, floe__mtable *t, uint64_t at, floe_error *err)
{
    char lsn[24] = "none";
    if (pg->reported)
        floe__lsn_format(pg->reported, lsn, sizeof lsn);
    FLOE_FORWARD(floe_sink_set_property(t->sink, "floe.pg.slot-confirmed-lsn", lsn, err));
    floe__lsn_format(at, lsn, sizeof lsn);
    FLOE_FORWARD(floe_sink_set_property(t->sink, "floe.pg.lsn", lsn, err));
    return floe_sink_advance(t->sink, at, err);
}

/* Where tables commit to: the frontier, but never past the point a
 * verification reads them at (floe_pg_verify). */
static uint64_t commit_point(const floe_pg *pg)
{
    return pg->verify_at && pg->frontier > pg->verify_at ? pg->verify_at : pg->frontier;
}

static int commit_table(floe_pg *pg, floe__mtable *t, uint64_t now, floe_error *err)
{
    int rc = floe__mirror_advance(pg, t, commit_point(pg), err);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "committing %s into %s", t->source, t->ident);
    t->input = commit_point(pg);
    t->shape_due = false;
    t->pending = 0;
    t->pending_since = 0;
    t->last_commit_ns = now;
    return FLOE_OK;
}

static bool commit_due(const floe_pg *pg, const floe__mtable *t, commit_what what, uint64_t now)
{
    uint64_t idle = pg->opts.idle_commit_interval_ms * 1000000ull;
    if (commit_point(pg) <= t->input || t->resync_due || t->resyncing)
        return false;                      /* a resync commits by itself */
    if (t->partitioned && !t->parts_ok)
        return false;                      /* its partitions are not verified (mirror_part.c) */
    return t->pending || what == COMMIT_ALL ||
           (what == COMMIT_DUE && now - t->last_commit_ns >= idle);
}

static int commit_tables(floe_pg *pg, commit_what what, floe_error *err)
{
    uint64_t now = floe__monotonic_ns();
    bool any = false;
    FLOE_FORWARD(floe__mirror_names_verify(pg, err));     /* a table dropped or replaced */
    FLOE_FORWARD(floe__mirror_part_verify(pg, err));      /* up to the frontier */
    for (size_t i = 0; i < pg->ntables; i++) {
        floe__mtable *t = &pg->tables[i];
        if (!commit_due(pg, t, what, now))
            continue;
        if (!any)           /* the server hears from us before commits that may take long */
            FLOE_FORWARD(send_status(pg, false, err));
        FLOE_FORWARD(commit_table(pg, t, now, err));
        any = true;
    }
    if (any && committed_min(pg) > pg->reported)
        FLOE_FORWARD(send_status(pg, false, err));
    floe__mirror_publish(pg);
    return FLOE_OK;
}

/* ---- changes --------------------------------------------------------------------------------- */

static void note_pending(floe_pg *pg, floe__mtable *t)
{
    if (!t->pending++)
        t->pending_since = pg->txn_time;
}

/* Push row bytes (a row the transaction pushed before, whole or partial)
 * with diff -1. */
static int retract_bytes(floe_pg *pg, floe__mtable *t, const uint8_t *row, size_t len,
                         floe_error *err)
{
    note_pending(pg, t);
    return floe__sink_push_bytes(t->sink, row, len, time_of(pg, t), -1, err);
}

/* The old version of a key goes: `old` is its whole row (REPLICA IDENTITY
 * FULL), or NULL and `key` holds its key columns. */
static int retract_old(floe_pg *pg, floe__mtable *t, floe_row *old, floe_row *key,
                       floe_error *err)
{
    if (old && plain(pg, t)) {
        note_pending(pg, t);
        return floe_sink_push(t->sink, old, time_of(pg, t), -1, err);
    }
    FLOE_FORWARD(floe__mirror_row_key(t, old ? old : key, &pg->keybuf, err));
    bool found;
    const uint8_t *row;
    size_t len;
    floe__txnmap_get(pg->txn, t->index, pg->keybuf.data, pg->keybuf.len, &found, &row, &len);
    if (found && row)
        FLOE_FORWARD(retract_bytes(pg, t, row, len, err));   /* cancels this transaction's */
    else if (!found && old)
        FLOE_FORWARD(floe_sink_push(t->sink, old, time_of(pg, t), -1, err));
    else if (!found)
        FLOE_FORWARD(floe_sink_retract_key(t->sink, key, time_of(pg, t), err));
    note_pending(pg, t);
    if ((found || t->stream_replident != 'f') && !pg->net_skip)
        return floe__txnmap_put(pg->txn, t->index, pg->keybuf.data, pg->keybuf.len, NULL, 0,
                                err);
    return FLOE_OK;
}

static int insert_new(floe_pg *pg, floe__mtable *t, floe_row *row, floe_error *err)
{
    if (plain(pg, t)) {
        note_pending(pg, t);
        return floe_sink_push(t->sink, row, time_of(pg, t), 1, err);
    }
    FLOE_FORWARD(floe__mirror_row_key(t, row, &pg->keybuf, err));
    bool found;
    const uint8_t *prev;
    size_t len;
    floe__txnmap_get(pg->txn, t->index, pg->keybuf.data, pg->keybuf.len, &found, &prev, &len);
    if (found && prev)                   /* a key inserted twice: the sink warns */
        FLOE_FORWARD(retract_bytes(pg, t, prev, len, err));
    FLOE_FORWARD(floe__sink_push_bytes(t->sink, row->data.data, row->data.len, time_of(pg, t), 1,
                                       err));
    note_pending(pg, t);
    if ((found || t->stream_replident != 'f') && !pg->net_skip)
        return floe__txnmap_put(pg->txn, t->index, pg->keybuf.data, pg->keybuf.len,
                                row->data.data, row->data.len, err);
    return FLOE_OK;
}

/* The old tuple of an update or delete: the whole row ('O') into
 * t->oldrow, or the key ('K', or the new row's key when there is none). */
static int old_version(floe_pg *pg, floe__mtable *t, const floe__pgo_msg *m, floe_row **old,
                       floe_error *err)
{
    *old = NULL;
    if (m->old_kind == 'O') {
        FLOE_FORWARD(floe__mirror_tuple_row(pg, t, &m->old_tuple, NULL, false, t->oldrow, err));
        *old = t->oldrow;
        return FLOE_OK;
    }
    const floe__pgo_tuple *k = m->old_kind == 'K' ? &m->old_tuple : &m->new_tuple;
    return floe__mirror_tuple_row(pg, t, k, NULL, true, t->keyrow, err);
}

/* Whether an update's new tuple leaves out an unchanged TOAST value. */
static bool leaves_out(const floe__pgo_tuple *tup)
{
    for (uint32_t c = 0; c < tup->n; c++)
        if (tup->vals[c].kind == 'u')
            return true;
    return false;
}

/* The row this transaction left for the key in t->keyrow (whole or
 * partial), into `fill`; nothing when it left none (the key's row is then
 * the sink's: the new row is partial, mirror_row.c). */
static int left_row(floe_pg *pg, floe__mtable *t, floe__buf *fill, floe_error *err)
{
    FLOE_FORWARD(floe__mirror_row_key(t, t->keyrow, &pg->keybuf, err));
    bool found;
    const uint8_t *row;
    size_t len;
    floe__txnmap_get(pg->txn, t->index, pg->keybuf.data, pg->keybuf.len, &found, &row, &len);
    return found && row ? floe__buf_append(fill, row, len, err) : FLOE_OK;
}

/* A partial row takes its unchanged values from its key's row: an update
 * that also changed the key (t->keyrow the old one) cannot be mirrored so
 * (the table is copied again, on_change). */
static int same_key(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    floe__buf *old = &pg->packed;           /* free once the row is made */
    FLOE_FORWARD(floe__mirror_row_key(t, t->keyrow, &pg->keybuf, err));
    floe__buf_reset(old);
    FLOE_FORWARD(floe__buf_append(old, pg->keybuf.data, pg->keybuf.len, err));
    FLOE_FORWARD(floe__mirror_row_key(t, t->row, &pg->keybuf, err));
    if (old->len == pg->keybuf.len && memcmp(old->data, pg->keybuf.data, old->len) == 0)
        return FLOE_OK;
    t->toast_gap = true;
    return floe__err_set(err, FLOE_EUNSUPPORTED, "%s: an update changed a row's key and left a "
                         "TOASTed value unchanged, which Postgres did not send (REPLICA "
                         "IDENTITY FULL sends it)", t->source);
}

static int change(floe_pg *pg, floe__mtable *t, const floe__pgo_msg *m, floe_error *err)
{
    floe_row *old = NULL;
    if (m->kind == 'I') {
        pg->inserts++;
        FLOE_FORWARD(floe__mirror_tuple_row(pg, t, &m->new_tuple, NULL, false, t->row, err));
        return insert_new(pg, t, t->row, err);
    }
    FLOE_FORWARD(old_version(pg, t, m, &old, err));
    if (m->kind == 'D') {
        pg->deletes++;
        return retract_old(pg, t, old, t->keyrow, err);
    }
    pg->updates++;
    floe__buf_reset(&pg->fill);
    if (old)
        FLOE_FORWARD(floe__buf_append(&pg->fill, old->data.data, old->data.len, err));
    else if (leaves_out(&m->new_tuple))
        FLOE_FORWARD(left_row(pg, t, &pg->fill, err));
    FLOE_FORWARD(floe__mirror_tuple_row(pg, t, &m->new_tuple, &pg->fill, false, t->row, err));
    if (floe__partial_is(t->row->data.data, t->row->data.len) && m->old_kind == 'K')
        FLOE_FORWARD(same_key(pg, t, err));
    FLOE_FORWARD(retract_old(pg, t, old, t->keyrow, err));
    return insert_new(pg, t, t->row, err);
}

/* ---- relations and truncates ------------------------------------------------------------------ */

/* A commit record is far longer than this: times up to txn_lsn + it stay
 * below the commit's end LSN. */
#define MAX_TRUNCS 16

static int truncate_table(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    if (t->resyncing)                  /* the copy first: it commits below this */
        FLOE_FORWARD(floe__mirror_resync_complete(pg, err));
    if (t->resync_due)
        return FLOE_OK;                /* the resync's copy will show it */
    if (t->trunc_lsn != pg->txn_lsn) {
        t->trunc_lsn = pg->txn_lsn;
        t->truncs = 0;
    }
    char lsn[24];
    floe__lsn_format(pg->txn_lsn, lsn, sizeof lsn);
    FLOE_RETURN_IF(t->truncs == MAX_TRUNCS, err, FLOE_EUNSUPPORTED, "more than %d TRUNCATEs of "
                   "%s in the transaction committed at %s", MAX_TRUNCS, t->source, lsn);
    t->truncs++;
    int rc = floe_sink_truncate(t->sink, time_of(pg, t), err);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "the TRUNCATE of %s in the transaction committed at %s",
                              t->source, lsn);
    floe__txnmap_truncate(pg->txn, t->index);    /* the keys it touched are gone */
    floe__mirror_part_truncated(pg, t);          /* its partitions' new relfilenodes */
    note_pending(pg, t);
    pg->truncates++;
    pg->txn_changes++;
    return FLOE_OK;
}

static int truncate_tables(floe_pg *pg, const floe__pgo_msg *m, floe_error *err)
{
    for (uint32_t i = 0; i < m->nrels; i++) {
        floe__mtable *t = table_of(pg, floe__pgo_relid(m, i));
        if (t && pg->txn_lsn >= t->start)
            FLOE_FORWARD(truncate_table(pg, t, err));
    }
    return FLOE_OK;
}

/* ---- messages ------------------------------------------------------------------------------------- */

static int on_change(floe_pg *pg, const floe__pgo_msg *m, floe_error *err)
{
    FLOE_RETURN_IF(!pg->in_txn, err, FLOE_EINPUT, "a change outside a transaction");
    floe__mtable *t = table_of(pg, m->relid);
    if (!t || pg->txn_lsn < t->start)
        return FLOE_OK;                    /* not mirrored, or in the table already */
    FLOE_RETURN_IF(!t->relation_seen, err, FLOE_EINPUT, "a change of %s before its Relation "
                   "message", t->source);
    int rc = FLOE_OK;
    if (t->resyncing && t->msg_pending)        /* its schema change would commit the copy */
        rc = floe__mirror_resync_complete(pg, err);
    if (rc == FLOE_OK && !t->resync_due)
        rc = floe__mirror_follow(pg, t, pg->txn_lsn, err);   /* below a TRUNCATE's cut */
    if (rc == FLOE_OK && t->resync_due)
        return FLOE_OK;                    /* in the resync's copy */
    pg->txn_changes++;
    t->toast_gap = false;
    pg->net_skip = pg->netf && floe__netfilter_once(pg->netf, m);
    if (rc == FLOE_OK)
        rc = change(pg, t, m, err);
    pg->net_skip = false;
    if (rc != FLOE_OK && t->toast_gap) {     /* nothing of the change was pushed */
        char why[1100];
        snprintf(why, sizeof why, "%s", err ? floe_error_message(err)
                                            : "an update left out an unchanged TOAST value");
        floe_error_clear(err);
        floe__mirror_resync_mark(pg, t, why);
        return FLOE_OK;
    }
    if (rc != FLOE_OK) {
        char lsn[24];
        floe__lsn_format(pg->txn_lsn, lsn, sizeof lsn);
        return floe__err_wrap(err, rc, "a change of %s in the transaction committed at %s "
                              "(nothing of it is committed)", t->source, lsn);
    }
    return FLOE_OK;
}

static int on_commit(floe_pg *pg, const floe__pgo_msg *m, floe_error *err)
{
    FLOE_RETURN_IF(!pg->in_txn || m->lsn != pg->txn_lsn, err, FLOE_EINPUT,
                   "a Commit that does not match its Begin");
    pg->in_txn = false;
    if (m->end_lsn > pg->frontier)
        pg->frontier = m->end_lsn;
    if (pg->txn_changes)
        pg->transactions++;
    floe__txnmap_clear(pg->txn);
    return FLOE_OK;
}

/* Begin, or a Stream Commit's replay beginning: the transaction that
 * commits at `lsn`. */
static int on_begin(floe_pg *pg, uint64_t lsn, uint32_t xid, int64_t time, floe_error *err)
{
    FLOE_RETURN_IF(pg->in_txn || pg->dec.in_stream, err, FLOE_EINPUT, "a Begin inside a "
                   "transaction or a stream block");
    pg->in_txn = true;
    pg->txn_lsn = lsn;
    pg->txn_xid = xid;
    pg->txn_time = time;
    pg->txn_changes = 0;
    floe__txnmap_clear(pg->txn);
    return FLOE_OK;
}

/* ---- streamed transactions (protocol 2) ------------------------------------------------------ */

void floe__mirror_replay_end(floe_pg *pg)
{
    floe__spill_reader_free(pg->replay);
    floe__netfilter_free(pg->netf);
    pg->replay = NULL;
    pg->netf = NULL;
    pg->replay_pass = 0;
    pg->net_skip = false;
}

/* A message inside a stream block: into its transaction's file (Type and
 * logical messages are not needed).  Nothing of it is applied now, not
 * even a Relation message: the transaction may abort. */
static int on_streamed(floe_pg *pg, const floe__pgo_msg *m, const uint8_t *p, size_t n,
                       floe_error *err)
{
    if (m->kind == 'Y' || m->kind == 'M')
        return FLOE_OK;
    return floe__spill_add(pg->spill, pg->stream_xid, m->xid, m->kind, p + 5, n - 5, err);
}

/* Stream Commit: the transaction's changes are replayed from its file by
 * replay_step, as a transaction committed at m->lsn. */
static int on_stream_commit(floe_pg *pg, const floe__pgo_msg *m, floe_error *err)
{
    FLOE_FORWARD(on_begin(pg, m->lsn, m->xid, m->time, err));
    FLOE_FORWARD(floe__spill_read(pg->spill, m->xid, &pg->replay, err));
    pg->replay_end_lsn = m->end_lsn;
    pg->replay_pass = 1;
    size_t most = pg->sink.memory_limit / 8;
    return floe__netfilter_new(floe__spill_records(pg->spill, m->xid), most, &pg->netf, err);
}

static int on_stream_abort(floe_pg *pg, const floe__pgo_msg *m, floe_error *err)
{
    if (m->subxid != m->xid)
        return floe__spill_abort_sub(pg->spill, m->xid, m->subxid, err);
    if (floe__spill_has(pg->spill, m->xid))
        pg->streamed_aborts++;
    floe__spill_drop(pg->spill, m->xid);
    return FLOE_OK;
}

static int on_message(floe_pg *pg, const uint8_t *p, size_t n, floe_error *err);

/* First pass: what the filter of keys touched once needs. */
static int replay_scan(floe_pg *pg, const uint8_t *p, size_t n, floe_error *err)
{
    floe__pgo_msg m;
    FLOE_FORWARD(floe__pgo_decode(&pg->dec, p, n, &m, err));
    if (m.kind == 'R')
        floe__netfilter_relation(pg->netf, &m);
    else if (m.kind == 'T')
        floe__netfilter_truncate(pg->netf);
    else if (m.kind == 'I' || m.kind == 'U' || m.kind == 'D')
        floe__netfilter_add(pg->netf, &m);
    return FLOE_OK;
}

/* The replayed transaction's Commit; its file goes. */
static int replay_finish(floe_pg *pg, floe_error *err)
{
    floe__pgo_msg c;
    memset(&c, 0, sizeof c);
    c.kind = 'C';
    c.lsn = pg->txn_lsn;
    c.end_lsn = pg->replay_end_lsn;
    uint32_t xid = pg->txn_xid;
    floe__mirror_replay_end(pg);
    FLOE_FORWARD(on_commit(pg, &c, err));
    floe__spill_drop(pg->spill, xid);
    pg->streamed_txns++;
    return FLOE_OK;
}

/* Up to DRAIN_MAX records of the transaction being replayed; at the end of
 * the second pass, its Commit. */
static int replay_step(floe_pg *pg, floe_error *err)
{
    for (int k = 0; k < DRAIN_MAX; k++) {
        const uint8_t *p;
        size_t n;
        uint32_t subxid;
        bool aborted, end;
        FLOE_FORWARD(floe__spill_next(pg->replay, &p, &n, &subxid, &aborted, &end, err));
        if (end && pg->replay_pass == 1) {
            floe__netfilter_seal(pg->netf);
            floe__spill_rewind(pg->replay);
            pg->replay_pass = 2;
            continue;
        }
        if (end)
            return replay_finish(pg, err);
        /* a rolled back subtransaction's changes go; Relation messages stay
         * (they describe the table, and later changes may rely on them) */
        if (aborted && p[0] != 'R')
            continue;
        FLOE_FORWARD(pg->replay_pass == 1 ? replay_scan(pg, p, n, err)
                                          : on_message(pg, p, n, err));
        if (pg->replay_pass == 2 && !pg->in_txn)
            return floe__err_set(err, FLOE_EINPUT, "a streamed transaction holds a Commit");
    }
    return FLOE_OK;
}

static int on_message(floe_pg *pg, const uint8_t *p, size_t n, floe_error *err)
{
    floe__pgo_msg m;
    FLOE_FORWARD(floe__pgo_decode(&pg->dec, p, n, &m, err));
    if (m.streamed)
        return on_streamed(pg, &m, p, n, err);
    switch (m.kind) {
    case 'B':
        return on_begin(pg, m.lsn, m.xid, m.time, err);
    case 'C':
        return on_commit(pg, &m, err);
    case 'S':
        FLOE_RETURN_IF(pg->in_txn, err, FLOE_EINPUT, "a Stream Start inside a transaction");
        pg->stream_xid = m.xid;
        return floe__spill_start(pg->spill, m.xid, m.flags & 1, err);
    case 'E':
        return floe__spill_stop(pg->spill, pg->stream_xid, err);
    case 'c':
        return on_stream_commit(pg, &m, err);
    case 'A':
        return on_stream_abort(pg, &m, err);
    case 'R': {
        floe__mtable *t = table_of(pg, m.relid);
        if (pg->netf)
            floe__netfilter_relation(pg->netf, &m);
        return t ? floe__mirror_relation(pg, t, &m, err) : FLOE_OK;
    }
    case 'I': case 'U': case 'D':
        return on_change(pg, &m, err);
    case 'T':
        return pg->in_txn ? truncate_tables(pg, &m, err) : FLOE_OK;
    default:
        return FLOE_OK;                    /* Origin, Type, logical messages */
    }
}

static int on_copydata(floe_pg *pg, const uint8_t *p, size_t n, bool *reply, floe_error *err)
{
    floe__pg_copymsg c;
    FLOE_FORWARD(floe__pg_copymsg_decode(p, n, &c, err));
    if (c.wal_end > pg->server_lsn)
        pg->server_lsn = c.wal_end;
    if (c.kind == 'k') {
        if (!pg->in_txn && c.wal_end > pg->frontier)
            pg->frontier = c.wal_end;
        if (c.wal_end > pg->received)
            pg->received = c.wal_end;
        *reply = *reply || c.reply_requested;
        return FLOE_OK;
    }
    if (c.wal_start > pg->received)
        pg->received = c.wal_start;
    pg->bytes_in += c.len;
    return on_message(pg, c.data, c.len, err);
}

/* ---- the loop -------------------------------------------------------------------------------------- */

/* Whether to ask for in-progress transactions (pgoutput protocol 2,
 * Postgres 14 and later). */
static bool streams(const floe_pg *pg)
{
    return pg->opts.txn_streaming && pg->server_version >= 140000;
}

static int start(floe_pg *pg, floe_error *err)
{
    uint64_t from = UINT64_MAX;
    for (size_t i = 0; i < pg->ntables; i++)
        if (pg->tables[i].start < from)
            from = pg->tables[i].start;
    floe__buf sql, pub;
    floe__buf_init(&sql, 1 << 16);
    floe__buf_init(&pub, 1 << 16);
    char lsn[24];
    floe__lsn_format(from, lsn, sizeof lsn);
    int rc = floe__pg_quote_ident(pg->pub_name, &pub, err);
    if (rc == FLOE_OK)
        rc = floe__buf_putc(&pub, 0, err);
    bool stream = streams(pg);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(&sql, err, "START_REPLICATION SLOT \"%s\" LOGICAL %s "
                              "(proto_version '%s', %spublication_names ", pg->slot_name, lsn,
                              stream ? "2" : "1", stream ? "streaming 'on', " : "");
    if (rc == FLOE_OK)
        rc = floe__pg_quote_literal((const char *)pub.data, &sql, err);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(&sql, err, ")%c", 0);
    /* A slot still held by the walsender of a run that just died frees up
     * once the server notices: try for a while. */
    for (int tries = 0; rc == FLOE_OK; tries++) {
        rc = floe__pg_stream_begin(pg->repl, (const char *)sql.data, err);
        if (rc == FLOE_OK || strcmp(floe__pg_sqlstate(pg->repl), "55006") != 0 || tries >= 60 ||
            floe__mirror_stopping(pg))
            break;
        floe_error_clear(err);
        rc = FLOE_OK;
        usleep(250000);
    }
    floe__buf_free(&sql);
    floe__buf_free(&pub);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "streaming from slot %s", pg->slot_name);
    pg->frontier = pg->received = from;
    pg->streaming = true;
    floe__mirror_notice(pg, "streaming from slot %s at %s (publication %s%s)", pg->slot_name,
                        lsn, pg->pub_name, stream ? ", in-progress transactions spilled to disk"
                                                  : "");
    return FLOE_OK;
}

static void query_lag(floe_pg *pg)
{
    floe__pg_result *r = NULL;
    uint64_t lsn;
    if (floe__pg_query(pg->conn, "SELECT pg_current_wal_lsn()", NULL, 0, &r, NULL) == FLOE_OK &&
        floe__lsn_parse(floe__pg_get(r, 0, 0), &lsn) == 0 && lsn > pg->server_lsn)
        pg->server_lsn = lsn;
    floe__pg_result_free(r);
}

static int stop_at_now(floe_pg *pg, floe_error *err)
{
    floe__pg_result *r = NULL;
    FLOE_FORWARD(floe__pg_query(pg->conn, "SELECT pg_current_wal_insert_lsn()", NULL, 0, &r,
                                err));
    int bad = floe__lsn_parse(floe__pg_get(r, 0, 0), &pg->stop_lsn);
    floe__pg_result_free(r);
    FLOE_RETURN_IF(bad, err, FLOE_EFORMAT, "pg_current_wal_insert_lsn() answered no LSN");
    char lsn[24];
    floe__lsn_format(pg->stop_lsn, lsn, sizeof lsn);
    floe__mirror_notice(pg, "stopping once every table has committed up to %s", lsn);
    return FLOE_OK;
}

/* Read what the server sent without waiting: *idle when nothing was left. */
static int drain(floe_pg *pg, bool *reply, bool *idle, floe_error *err)
{
    *idle = false;
    for (int k = 0; k < DRAIN_MAX; k++) {
        const uint8_t *msg;
        size_t len;
        int got;
        FLOE_FORWARD(floe__pg_stream_next(pg->repl, &msg, &len, &got, err));
        if (!got) {
            *idle = true;
            return FLOE_OK;
        }
        FLOE_FORWARD(on_copydata(pg, msg, len, reply, err));
        if (pg->replay)
            return FLOE_OK;                  /* a Stream Commit: its replay comes first */
    }
    return FLOE_OK;
}

typedef struct clock_s {
    uint64_t commit, status, lag, publish, probe;
} clock_s;

static void wait_for(floe_pg *pg, const clock_s *ck, uint64_t now)
{
    uint64_t next = ck->commit;
    const uint64_t others[] = {ck->status, ck->lag, ck->publish, pg->stop_lsn ? ck->probe : next};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (others[i] < next)
            next = others[i];
    int ms = next > now ? (int)((next - now) / 1000000u) + 1 : 0;
    struct pollfd p[3] = {{floe__pg_socket(pg->repl), POLLIN, 0},
                          {pg->stop_pipe[0], POLLIN, 0}, {pg->opts.stop_fd, POLLIN, 0}};
    poll(p, pg->opts.stop_fd >= 0 ? 3 : 2, ms);
}

/* A table's catalog, read at start, is not yet compared with its shape,
 * or a change found so is not committed while a commit may still hold it
 * (a verification commits no further than its point): a change no row
 * change has shown since (a DROP COLUMN as the last statement) would be
 * left out of a run that stops at an LSN below the point the catalog was
 * read at (floe__mirror_check_catalog).  The probes move the frontier
 * there. */
static bool catalog_unchecked(const floe_pg *pg)
{
    for (size_t i = 0; i < pg->ntables; i++) {
        const floe__mtable *t = &pg->tables[i];
        bool can_commit = !pg->verify_at || t->input < pg->verify_at;
        if (t->cat_at || (t->shape_due && can_commit))
            return true;
    }
    return false;
}

/* One turn of the clock: commits, status, lag; 1 in *done once stop-at is reached. */
static int tick(floe_pg *pg, clock_s *ck, bool reply, bool *done, floe_error *err)
{
    uint64_t now = floe__monotonic_ns();
    if (now >= ck->commit) {
        FLOE_FORWARD(commit_tables(pg, COMMIT_DUE, err));
        ck->commit = now + pg->opts.commit_interval_ms * 1000000ull;
    }
    if (pg->stop_lsn && !pg->in_txn && pg->frontier >= pg->stop_lsn) {
        FLOE_FORWARD(commit_tables(pg, COMMIT_ALL, err));
        *done = committed_min(pg) >= pg->stop_lsn && !catalog_unchecked(pg);
    }
    bool probe = pg->stop_lsn && now >= ck->probe;
    if (reply || probe || now >= ck->status || *done) {
        FLOE_FORWARD(send_status(pg, probe, err));
        ck->status = now + STATUS_EVERY;
        ck->probe = now + PROBE_EVERY;
    }
    if (now >= ck->lag) {
        query_lag(pg);
        ck->lag = now + LAG_EVERY;
    }
    if (now >= ck->publish) {
        floe__mirror_publish(pg);
        ck->publish = now + PUBLISH_EVERY;
    }
    return FLOE_OK;
}

static int stopped(floe_pg *pg, floe_error *err)
{
    FLOE_FORWARD(commit_tables(pg, COMMIT_PENDING, err));
    FLOE_FORWARD(send_status(pg, false, err));
    return floe__err_set(err, FLOE_EINTERRUPTED, "stopped");
}

int floe__mirror_stream(floe_pg *pg, floe_error *err)
{
    FLOE_FORWARD(start(pg, err));
    if (pg->opts.stop_at_now && !pg->stop_lsn)      /* not again after a reconnection */
        FLOE_FORWARD(stop_at_now(pg, err));
    uint64_t now = floe__monotonic_ns();
    clock_s ck = {now + pg->opts.commit_interval_ms * 1000000ull, now, now, now, now};
    for (size_t i = 0; i < pg->ntables; i++)
        pg->tables[i].last_commit_ns = now;
    for (;;) {
        bool reply = false, idle = false, done = false;
        if (pg->replay)                     /* a streamed transaction first, then what follows */
            FLOE_FORWARD(replay_step(pg, err));
        else
            FLOE_FORWARD(drain(pg, &reply, &idle, err));
        if (floe__mirror_stopping(pg))
            return stopped(pg, err);
        for (size_t i = 0; i < pg->ntables; i++)
            FLOE_FORWARD(floe__mirror_check_catalog(pg, &pg->tables[i], err));
        FLOE_FORWARD(floe__mirror_resync_step(pg, err));
        FLOE_FORWARD(tick(pg, &ck, reply, &done, err));
        if (done) {
            floe__mirror_publish(pg);
            return FLOE_OK;
        }
        if (idle && !pg->resync)
            wait_for(pg, &ck, floe__monotonic_ns());
    }
}
