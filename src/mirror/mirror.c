/*
 * mirror.c - the public floe_pg object: open, run, stop, free,
 * the tables, stats and metrics.  The work is in the other mirror_*.c
 * files (mirror_internal.h says which does what).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "mirror/mirror_internal.h"

#define DEFAULT_MEMORY ((size_t)1 << 30)

/* ---- messages ----------------------------------------------------------------------------- */

void floe__mirror_notice(floe_pg *pg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    floe__vtell(pg->opts.on_notice, pg->opts.notice_ctx, fmt, ap);
    va_end(ap);
}

void floe__mirror_warn(floe_pg *pg, const char *fmt, ...)
{
    if (!pg->sink.on_warning)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pg->sink.on_warning(pg->sink.warning_ctx, msg);
}

/* ---- stop ---------------------------------------------------------------------------------- */

void floe_pg_stop(floe_pg *pg)
{
    if (pg && pg->stop_pipe[1] >= 0) {
        ssize_t w = write(pg->stop_pipe[1], "x", 1);
        (void)w;                       /* full: a stop is pending already */
    }
}

bool floe__mirror_stopping(floe_pg *pg)
{
    struct pollfd p[2] = {{pg->stop_pipe[0], POLLIN, 0}, {pg->opts.stop_fd, POLLIN, 0}};
    return poll(p, pg->opts.stop_fd >= 0 ? 2 : 1, 0) > 0;
}

/* ---- stats --------------------------------------------------------------------------------- */

/* The smallest committed frontier over the tables, 0 when one has none. */
static uint64_t committed_min(const floe_pg *pg, uint64_t *snapshots)
{
    uint64_t min = UINT64_MAX;
    *snapshots = 0;
    for (size_t i = 0; i < pg->ntables; i++) {
        floe_sink_stats st;
        if (!pg->tables[i].sink)
            return 0;
        floe_sink_stats_get(pg->tables[i].sink, &st, sizeof st);
        *snapshots += st.snapshots_committed;
        if (!st.has_committed_frontier || st.committed_frontier_empty)
            return 0;
        if (st.committed_frontier < min)
            min = st.committed_frontier;
    }
    return min == UINT64_MAX ? 0 : min;
}

static double lag_seconds(const floe_pg *pg)
{
    int64_t oldest = 0;
    for (size_t i = 0; i < pg->ntables; i++) {
        const floe__mtable *t = &pg->tables[i];
        if (t->pending && (!oldest || t->pending_since < oldest))
            oldest = t->pending_since;
    }
    if (!oldest)
        return 0.0;
    int64_t now = floe__pg_now_us();
    return now > oldest ? (double)(now - oldest) / 1e6 : 0.0;
}

void floe__mirror_publish(floe_pg *pg)
{
    floe_pg_stats st = {0};
    st.phase = pg->streaming ? 2 : 1;
    st.tables = pg->ntables;
    st.tables_copied = pg->tables_copied;
    st.copy_rows = pg->copy_rows;
    st.transactions = pg->transactions;
    st.inserts = pg->inserts;
    st.updates = pg->updates;
    st.deletes = pg->deletes;
    st.bytes_received = pg->bytes_in;
    st.frontier = pg->frontier;
    st.received_lsn = pg->received;
    st.server_lsn = pg->server_lsn;
    st.committed_lsn = committed_min(pg, &st.snapshots_committed);
    st.confirmed_lsn = pg->reported;
    uint64_t head = pg->server_lsn > pg->received ? pg->server_lsn : pg->received;
    st.lag_bytes = st.committed_lsn && head > st.committed_lsn ? head - st.committed_lsn : 0;
    st.lag_seconds = lag_seconds(pg);
    st.schema_changes = pg->schema_changes;
    st.truncates = pg->truncates;
    st.resyncs = pg->resyncs;
    st.reconnects = pg->reconnects;
    st.reconnecting = pg->reconnecting;
    st.streamed_transactions = pg->streamed_txns;
    st.streamed_aborts = pg->streamed_aborts;
    st.spill_bytes = pg->spill ? floe__spill_bytes(pg->spill) : 0;
    pthread_mutex_lock(&pg->lock);
    pg->published = st;
    pthread_mutex_unlock(&pg->lock);
}

void floe_pg_stats_get(const floe_pg *pg, floe_pg_stats *out, size_t size)
{
    floe_pg *p = (floe_pg *)pg;               /* the lock is all that is touched */
    pthread_mutex_lock(&p->lock);
    floe_pg_stats st = p->published;
    pthread_mutex_unlock(&p->lock);
    st.size = sizeof st;
    floe__abi_out(out, size, &st, sizeof st);
}

static int pg_metric(floe__buf *b, const char *slot, const char *name, const char *type,
                     const char *help, double v, floe_error *err)
{
    FLOE_FORWARD(floe__buf_printf(b, err, "# HELP %s %s\n# TYPE %s %s\n%s{slot=\"", name, help,
                                  name, type, name));
    for (const char *p = slot; *p; p++)          /* slot names are [a-z0-9_] */
        FLOE_FORWARD(floe__buf_putc(b, (uint8_t)*p, err));
    return floe__buf_printf(b, err, isnan(v) ? "\"} NaN\n" : "\"} %.17g\n", v);
}

static int slot_metrics(const floe_pg *pg, floe__buf *b, floe_error *err)
{
    floe_pg_stats st;
    floe_pg_stats_get(pg, &st, sizeof st);
    struct { const char *name, *type, *help; double v; } m[] = {
        {"floe_pg_lag_bytes", "gauge", "WAL bytes between the server's position and the smallest committed frontier of the tables.", (double)st.lag_bytes},
        {"floe_pg_lag_seconds", "gauge", "Seconds since the oldest transaction received but not yet committed into its table committed in Postgres.", st.lag_seconds},
        {"floe_pg_server_lsn", "gauge", "The server's WAL position, as last seen.", (double)st.server_lsn},
        {"floe_pg_received_lsn", "gauge", "The end of the last replication message received.", (double)st.received_lsn},
        {"floe_pg_committed_lsn", "gauge", "The smallest committed frontier of the tables (NaN: none yet).", st.committed_lsn ? (double)st.committed_lsn : NAN},
        {"floe_pg_confirmed_flush_lsn", "gauge", "The flush LSN last reported to the slot (NaN: none yet).", st.confirmed_lsn ? (double)st.confirmed_lsn : NAN},
        {"floe_pg_transactions_total", "counter", "Transactions received with changes of the tables.", (double)st.transactions},
        {"floe_pg_inserts_total", "counter", "Inserted rows received.", (double)st.inserts},
        {"floe_pg_updates_total", "counter", "Updated rows received.", (double)st.updates},
        {"floe_pg_deletes_total", "counter", "Deleted rows received.", (double)st.deletes},
        {"floe_pg_bytes_received_total", "counter", "pgoutput message bytes received.", (double)st.bytes_received},
        {"floe_pg_copy_rows_total", "counter", "Rows copied (initial copies and resyncs).", (double)st.copy_rows},
        {"floe_pg_schema_changes_total", "counter", "Changes of a table's shape (ALTER TABLE) followed in place.", (double)st.schema_changes},
        {"floe_pg_resyncs_total", "counter", "Tables copied again in place (resyncs).", (double)st.resyncs},
        {"floe_pg_truncates_total", "counter", "TRUNCATEs mirrored (one per table truncated).", (double)st.truncates},
        {"floe_pg_reconnects_total", "counter", "Reconnections to Postgres after a lost connection or another transient failure.", (double)st.reconnects},
        {"floe_pg_reconnecting", "gauge", "1 while floe is reconnecting.", (double)st.reconnecting},
        {"floe_pg_tables", "gauge", "Tables mirrored.", (double)st.tables},
        {"floe_pg_streamed_transactions_total", "counter", "Streamed (in-progress) transactions mirrored at their commit.", (double)st.streamed_transactions},
        {"floe_pg_streamed_aborts_total", "counter", "Streamed (in-progress) transactions aborted (their spill files dropped).", (double)st.streamed_aborts},
        {"floe_pg_spill_bytes", "gauge", "Bytes of in-progress streamed transactions held in spill files.", (double)st.spill_bytes},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        FLOE_FORWARD(pg_metric(b, pg->slot_name, m[i].name, m[i].type, m[i].help, m[i].v, err));
    return FLOE_OK;
}

int floe_pg_metrics(const floe_pg *pg, char **out, floe_error *err)
{
    floe_pg *p = (floe_pg *)pg;               /* the locks are all that is touched */
    floe__buf b;
    floe__buf_init(&b, (size_t)1 << 26);
    pthread_mutex_lock(&p->tables_lock);
    size_t n = p->tables_ready ? p->ntables : 0;   /* none while they are reopened */
    const floe_sink **sinks = floe__calloc(n ? n : 1, sizeof *sinks);
    int rc = sinks ? FLOE_OK : FLOE_OOM(err);
    for (size_t i = 0; rc == FLOE_OK && i < n; i++)
        sinks[i] = pg->tables[i].sink;
    if (rc == FLOE_OK)
        rc = slot_metrics(pg, &b, err);
    if (rc == FLOE_OK)
        rc = floe__sinks_metrics(sinks, n, &b, err);
    pthread_mutex_unlock(&p->tables_lock);
    if (rc == FLOE_OK && !(*out = floe__buf_strdup(&b)))
        rc = FLOE_OOM(err);
    floe__free(sinks);
    floe__buf_free(&b);
    return rc;
}

/* ---- tables -------------------------------------------------------------------------------- */

size_t floe_pg_table_count(const floe_pg *pg) { return pg->ntables; }
const char *floe_pg_slot_name(const floe_pg *pg) { return pg->slot_name; }
const char *floe_pg_publication_name(const floe_pg *pg) { return pg->pub_name; }

int floe_pg_table_info_get(const floe_pg *pg, size_t i, floe_pg_table_info *out, size_t size,
                           floe_error *err)
{
    FLOE_RETURN_IF(i >= pg->ntables, err, FLOE_EINVAL, "no table %zu", i);
    const floe__mtable *t = &pg->tables[i];
    floe_pg_table_info info = {
        .size = sizeof info, .source = t->source, .table = t->ident, .sink_id = t->sink_id,
        .sink = t->sink, .copied = t->copied, .copied_rows = t->copied_rows,
    };
    floe__abi_out(out, size, &info, sizeof info);
    return FLOE_OK;
}

/* ---- open, run, free ----------------------------------------------------------------------- */

static int copy_options(floe_pg *pg, const floe_pg_options *o, floe_error *err)
{
    FLOE_FORWARD(FLOE__OPTIONS_IN(floe_pg_options, &pg->opts, o, err));
    floe_connect_options connect;
    FLOE_FORWARD(floe__sink_options_in(&pg->sink, &connect, pg->opts.sink, err));
    floe_pg_options *c = &pg->opts;
    c->sink = &pg->sink;
    if (!c->slot)
        c->slot = "floe";
    if (!c->publication)
        c->publication = c->slot;
    const char **fields[] = {&c->source, &c->tables, &c->publication, &c->slot,
                             &c->namespace_name, &c->table_map, &c->resync};
    pg->strings = floe__arena_new(1024);
    if (!pg->strings)
        return FLOE_OOM(err);
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        if (floe__arena_own_str(pg->strings, fields[i]) != 0)
            return FLOE_OOM(err);
    FLOE_FORWARD(floe__sink_options_own(&pg->sink, pg->strings, err));
    pg->slot_name = c->slot;
    pg->pub_name = c->publication;
    if (!pg->sink.memory_limit)
        pg->sink.memory_limit = DEFAULT_MEMORY;
    if (!pg->opts.commit_interval_ms)
        pg->opts.commit_interval_ms = 10000;
    if (!pg->opts.idle_commit_interval_ms)
        pg->opts.idle_commit_interval_ms = 60000;
    pg->stop_lsn = pg->opts.stop_at_lsn;
    return FLOE_OK;
}

static int check_slot_name(const char *s, floe_error *err)
{
    size_t n = strlen(s);
    bool ok = n > 0 && n <= 63;
    for (size_t i = 0; ok && i < n; i++)
        ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_';
    FLOE_RETURN_IF(!ok, err, FLOE_EINVAL, "slot name '%.70s' must be 1 to 63 lower-case letters, "
                   "digits and underscores (as Postgres requires)", s);
    return FLOE_OK;
}

int floe__mirror_new(const floe_pg_options *o, floe_pg **out, floe_error *err)
{
    FLOE_RETURN_IF(!o || !out, err, FLOE_EINVAL, "floe_pg: NULL argument");
    floe_pg *pg = floe__calloc(1, sizeof *pg);
    if (!pg)
        return FLOE_OOM(err);
    pg->stop_pipe[0] = pg->stop_pipe[1] = -1;
    pthread_mutex_init(&pg->lock, NULL);
    pthread_mutex_init(&pg->tables_lock, NULL);
    floe__pgo_decoder_init(&pg->dec);
    floe__buf_init(&pg->scratch, (size_t)1 << 30);
    floe__buf_init(&pg->fields_buf, (size_t)1 << 30);
    floe__buf_init(&pg->keybuf, (size_t)1 << 30);
    floe__buf_init(&pg->fill, (size_t)1 << 30);
    floe__buf_init(&pg->packed, (size_t)1 << 30);
    int rc = copy_options(pg, o, err);
    if (rc == FLOE_OK)
        rc = check_slot_name(pg->slot_name, err);
    if (rc == FLOE_OK && pipe2(pg->stop_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
        rc = floe__err_set(err, FLOE_EIO, "cannot make a pipe");
    if (rc == FLOE_OK)
        rc = floe__txnmap_new(pg->opts.txn_memory ? pg->opts.txn_memory : DEFAULT_MEMORY,
                              &pg->txn, err);
    if (rc == FLOE_OK)
        rc = floe__spill_new(pg->sink.spill_dir, &pg->spill, err);
    if (rc != FLOE_OK) {
        floe_pg_free(pg);
        return rc;
    }
    *out = pg;
    return FLOE_OK;
}

static int copy_phase(floe_pg *pg, floe_error *err)
{
    bool any = false;
    for (size_t i = 0; i < pg->ntables; i++)
        any = any || pg->tables[i].copy;
    if (!any)
        return FLOE_OK;
    uint64_t at = pg->slot.consistent;
    char snap[96];
    snprintf(snap, sizeof snap, "%s", pg->slot.snapshot);
    if (!pg->slot.created) {             /* the exported snapshot is gone: a temporary slot */
        char name[64];
        snprintf(name, sizeof name, "floe_copy_%d_%" PRIx64, (int)getpid(),
                 (uint64_t)floe__monotonic_ns() & 0xffffffffu);
        FLOE_FORWARD(floe__pg_connect(pg->opts.source, true, &pg->tmp, err));
        FLOE_FORWARD(floe__mirror_slot_create(pg, pg->tmp, name, true, &at, snap, sizeof snap,
                                              err));
        char lsn[24];
        floe__lsn_format(at, lsn, sizeof lsn);
        floe__mirror_notice(pg, "copying inside the snapshot of temporary slot %s, consistent "
                            "at %s (slot %s exists, so its own snapshot is gone)", name, lsn,
                            pg->slot_name);
    }
    int rc = floe__mirror_copy(pg, snap, at, err);
    floe__pg_close(pg->tmp);             /* drops the temporary slot */
    pg->tmp = NULL;
    return rc;
}

static int run_once(floe_pg *pg, floe_error *err)
{
    int rc = copy_phase(pg, err);
    if (rc != FLOE_OK) {
        floe__mirror_publish(pg);                  /* phase 1: stopped while copying */
        return rc;
    }
    rc = floe__mirror_stream(pg, err);
    floe__mirror_resync_abandon(pg);
    pg->streaming = false;
    floe__mirror_publish(pg);
    pthread_mutex_lock(&pg->lock);
    pg->published.phase = 3;
    pthread_mutex_unlock(&pg->lock);
    return rc;
}

static void table_free(floe__mtable *t);

/* The --resync tables whose resync has not committed yet (asked again
 * after a reconnection), or NULL. */
static const char *resyncs_left(floe_pg *pg)
{
    floe__buf b;
    floe__buf_init(&b, 1 << 20);
    for (size_t i = 0; i < pg->ntables; i++) {
        const floe__mtable *t = &pg->tables[i];
        if ((t->resync_due || t->resyncing) && strstr(t->resync_why, "--resync"))
            floe__buf_printf(&b, NULL, "%s%s", b.len ? "," : "", t->source);
    }
    const char *out = NULL;
    if (b.len && floe__buf_putc(&b, 0, NULL) == FLOE_OK)
        out = floe__arena_strndup(pg->strings, (const char *)b.data, b.len - 1);
    floe__buf_free(&b);
    return out;
}

/* Drop everything not committed (sinks, connections, the stream's state)
 * and open the tables and the slot again, as a new run would.  after_run:
 * the tables ran (else a reopen failed half way, and --resync stays). */
static int reopen(floe_pg *pg, bool after_run, floe_error *err)
{
    floe__mirror_resync_abandon(pg);
    if (after_run)
        pg->opts.resync = resyncs_left(pg);
    pthread_mutex_lock(&pg->tables_lock);
    pg->tables_ready = false;
    for (size_t i = 0; i < pg->ntables; i++)
        table_free(&pg->tables[i]);
    floe__free(pg->tables);
    pg->tables = NULL;
    pg->ntables = 0;
    pthread_mutex_unlock(&pg->tables_lock);
    pg->last_table = NULL;
    floe__pg_close(pg->repl);
    floe__pg_close(pg->conn);
    pg->repl = pg->conn = NULL;
    floe__free(pg->database);
    pg->database = NULL;
    floe__txnmap_clear(pg->txn);
    floe__mirror_replay_end(pg);
    floe__spill_clear(pg->spill);             /* the slot sends them again */
    floe__pgo_decoder_free(&pg->dec);
    floe__pgo_decoder_init(&pg->dec);
    memset(&pg->slot, 0, sizeof pg->slot);
    pg->in_txn = pg->streaming = false;
    pg->frontier = pg->received = 0;
    int rc = floe__mirror_setup(pg, err);
    if (rc == FLOE_OK)
        rc = floe__mirror_slot_prepare(pg, err);
    pthread_mutex_lock(&pg->tables_lock);
    pg->tables_ready = true;
    pthread_mutex_unlock(&pg->tables_lock);
    return rc;
}

static void set_reconnecting(floe_pg *pg, bool on)
{
    pg->reconnecting = on;
    pthread_mutex_lock(&pg->lock);
    pg->published.reconnecting = on;
    pg->published.reconnects = pg->reconnects;
    pthread_mutex_unlock(&pg->lock);
}

/* Sleep ms, or less when asked to stop. */
static void pause_ms(floe_pg *pg, unsigned ms)
{
    struct pollfd p[2] = {{pg->stop_pipe[0], POLLIN, 0}, {pg->opts.stop_fd, POLLIN, 0}};
    poll(p, pg->opts.stop_fd >= 0 ? 2 : 1, (int)ms);
}

/* Reconnecting: 100 ms doubling to 10 s (floe__retry's waits), for up to
 * reconnect_timeout_ms of failing in a row. */
static void backoff_init(floe_pg *pg, floe__retry *b)
{
    floe__retry_init(b, 100, 10000);
    b->max_ns = pg->opts.reconnect_timeout_ms * 1000000ull;
}

/* After rc failed: FLOE_OK when it is transient and the caller may try
 * again (it said so and waited), else the error to end with (rc, or why
 * reconnecting gave up). */
static int backoff_wait(floe_pg *pg, floe__retry *b, int rc, floe_error *err)
{
    if (!floe_error_retryable(err))
        return rc;
    bool timed_out = b->max_ns && b->failures &&
                     floe__retry_seconds(b) * 1e9 >= (double)b->max_ns;
    if (floe__mirror_stopping(pg) || timed_out) {
        set_reconnecting(pg, false);
        return timed_out && !floe__mirror_stopping(pg)
                   ? floe__err_wrap(err, rc, "gave up reconnecting after %.0fs",
                                    floe__retry_seconds(b))
                   : rc;
    }
    unsigned delay = floe__retry_delay(b);
    floe__mirror_warn(pg, "%s: reconnecting in %.1fs (every table stays at its last commit and "
                      "resumes from it)", floe_error_message(err), (double)delay / 1e3);
    set_reconnecting(pg, true);
    pause_ms(pg, delay);
    floe_error_clear(err);
    if (floe__mirror_stopping(pg)) {
        set_reconnecting(pg, false);
        return floe__err_set(err, FLOE_EINTERRUPTED, "stopped while reconnecting");
    }
    return FLOE_OK;
}

int floe_pg_open(const floe_pg_options *o, floe_pg **out, floe_error *err)
{
    floe_pg *pg = NULL;
    FLOE_FORWARD(floe__mirror_new(o, &pg, err));
    int rc = floe__mirror_setup(pg, err);
    if (rc == FLOE_OK)
        rc = floe__mirror_slot_prepare(pg, err);
    floe__retry b;
    backoff_init(pg, &b);
    while (rc != FLOE_OK && (rc = backoff_wait(pg, &b, rc, err)) == FLOE_OK)
        rc = reopen(pg, false, err);       /* Postgres not there yet, or gone: again */
    set_reconnecting(pg, false);
    if (rc != FLOE_OK) {
        floe_pg_free(pg);
        return rc;
    }
    pg->tables_ready = true;
    floe__mirror_publish(pg);
    *out = pg;
    return FLOE_OK;
}

int floe_pg_run(floe_pg *pg, floe_error *err)
{
    floe__retry b;
    backoff_init(pg, &b);
    bool ran = true;
    for (int rc = run_once(pg, err);;) {
        if (rc != FLOE_OK && pg->reopen && !floe__mirror_stopping(pg)) {
            pg->reopen = false;                /* a table dropped or replaced: at once */
            floe__mirror_notice(pg, "%s", floe_error_message(err));
            floe_error_clear(err);
            rc = reopen(pg, ran, err);
            if (rc == FLOE_OK)
                rc = run_once(pg, err);
            ran = true;
            continue;
        }
        pg->reopen = false;
        if (rc == FLOE_OK || rc == FLOE_EINTERRUPTED || (rc = backoff_wait(pg, &b, rc, err)))
            return rc;
        rc = reopen(pg, ran, err);
        ran = false;
        if (rc != FLOE_OK)
            continue;                      /* still down: back off again (or give up) */
        pg->reconnects++;
        floe__mirror_notice(pg, "reconnected to Postgres (%" PRIu64 " reconnections so far): "
                            "resuming every table from its committed frontier", pg->reconnects);
        set_reconnecting(pg, false);
        backoff_init(pg, &b);
        rc = run_once(pg, err);
        ran = true;
    }
}

static void table_free(floe__mtable *t)
{
    floe__free(t->partition_by);
    floe_row_free(t->row);
    floe_row_free(t->keyrow);
    floe_row_free(t->oldrow);
    floe_sink_free(t->sink);
    floe__mirror_cols_free(t->cols, t->ncols);
    floe__mirror_cols_free(t->msg, t->nmsg);
    floe__mirror_cols_free(t->cat, t->ncat);
    floe__mirror_cols_free(t->generated, t->ngenerated);
    floe__free(t->keys);
    floe__free(t->nsp);
    floe__free(t->rel);
    floe__free(t->source);
    floe__free(t->ident);
    floe__free(t->sink_id);
    floe__free(t->schema_text);
    floe__free(t->key_text);
    floe__free(t->shape);
    floe__free(t->parts);
}

void floe_pg_free(floe_pg *pg)
{
    if (!pg)
        return;
    for (size_t i = 0; i < pg->ntables; i++)
        table_free(&pg->tables[i]);
    floe__free(pg->tables);
    floe__pg_close(pg->tmp);
    floe__pg_close(pg->repl);
    floe__pg_close(pg->conn);
    floe__catalog_free(pg->catalog);
    floe__fileio_free(pg->io);
    floe__txnmap_free(pg->txn);
    floe__mirror_replay_end(pg);
    floe__spill_free(pg->spill);
    floe__pgo_decoder_free(&pg->dec);
    floe__buf_free(&pg->scratch);
    floe__buf_free(&pg->fields_buf);
    floe__buf_free(&pg->keybuf);
    floe__buf_free(&pg->fill);
    floe__buf_free(&pg->packed);
    floe__free(pg->fields);
    for (int i = 0; i < 2; i++)
        if (pg->stop_pipe[i] >= 0)
            close(pg->stop_pipe[i]);
    floe__arena_free(pg->strings);
    floe__free(pg->database);
    pthread_mutex_destroy(&pg->lock);
    pthread_mutex_destroy(&pg->tables_lock);
    floe__free(pg);
}

/* ---- the slot, for inspect ------------------------------------------------------------------- */

static int slot_row(floe__pg_conn *c, const char *slot, floe_pg_slot_info *out, floe_error *err)
{
    const char *sql = floe__pg_server_version(c) >= 130000
        ? "SELECT active, confirmed_flush_lsn, restart_lsn, wal_status FROM pg_replication_slots "
          "WHERE slot_name = $1"
        : "SELECT active, confirmed_flush_lsn, restart_lsn, '' FROM pg_replication_slots "
          "WHERE slot_name = $1";
    const char *params[1] = {slot};
    floe__pg_result *r = NULL;
    FLOE_FORWARD(floe__pg_query(c, sql, params, 1, &r, err));
    if (floe__pg_rows(r)) {
        const char *a = floe__pg_get(r, 0, 0), *s = floe__pg_get(r, 0, 3);
        out->exists = 1;
        out->active = a && a[0] == 't';
        floe__lsn_parse(floe__pg_get(r, 0, 1), &out->confirmed_flush_lsn);
        floe__lsn_parse(floe__pg_get(r, 0, 2), &out->restart_lsn);
        snprintf(out->wal_status, sizeof out->wal_status, "%s", s ? s : "");
    }
    floe__pg_result_free(r);
    return FLOE_OK;
}

int floe_pg_slot_info_get(const char *source, const char *slot, floe_pg_slot_info *dst,
                          size_t size, floe_error *err)
{
    floe_pg_slot_info info = {.size = sizeof info};
    floe__pg_conn *c = NULL;
    FLOE_FORWARD(floe__pg_connect(source, false, &c, err));
    int rc = slot_row(c, slot, &info, err);
    floe__pg_close(c);
    if (rc == FLOE_OK)
        floe__abi_out(dst, size, &info, sizeof info);
    return rc;
}
