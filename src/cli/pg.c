/*
 * pg.c - `floe pg`: tables of a Postgres database mirrored into Iceberg
 * tables through logical replication, exactly once (docs/postgres.md).
 *
 *   floe pg --source postgres://user@host/db --tables public.orders,public.items
 *           [--create-publication] [--slot NAME] [--namespace NS] ...
 *
 * The library does the work (floe_pg_*): this file turns options into
 * floe_pg_options, prints notices, warnings, the status line and the
 * summary, serves /metrics and /health, and maps the outcome to the exit
 * status: 0 when --stop-at was reached, 1 when the mirror halted, 2 for bad
 * options, 128 + N when stopped by signal N (after committing every whole
 * transaction received).  The connection string is never printed.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_internal.h"

static const char USAGE[] =
    "floe pg [--source CONNINFO] [--tables SCHEMA.TABLE,...] [--publication NAME] "
    "[--create-publication] [--slot NAME] [--namespace NS] [--table-map SCHEMA.TABLE=NS.NAME,...] "
    "[--partition-by SCHEMA.TABLE=SPEC,...] "
    "[--resync SCHEMA.TABLE,...] [--verify] [--catalog URI] [--warehouse URI] [--commit-interval DURATION] "
    "[--idle-commit-interval DURATION] [--stop-at LSN|now] [--txn-memory BYTES] "
    "[--txn-streaming on|off] "
    "[--copy-workers N] [--copy-range-pages N] "
    "[--compression zstd|snappy|gzip|none] [--target-file-size BYTES] "
    "[--delete-mode position|equality] [--format-version 2|3] [--index-dir DIR] "
    "[--memory-limit BYTES] [--spill-dir DIR] [--sink-version N] [--metrics-addr HOST:PORT] "
    "[--quiet] [--retire] [--drop-table SCHEMA.TABLE,... [--purge]]";

static const char NOTES[] =
    "source:\n"
    "  A libpq connection string or URI (postgres://user@host:5432/db); without it the\n"
    "  PG* environment variables (PGHOST, PGUSER, PGPASSWORD, ...) apply.  It is never\n"
    "  printed.  The server needs wal_level = logical; the role needs REPLICATION and\n"
    "  SELECT on the tables (and CREATE on the database for --create-publication).\n"
    "\n"
    "tables:\n"
    "  Each table goes to its own Iceberg table, NAMESPACE.table (NAMESPACE: --namespace,\n"
    "  else the Postgres schema), keyed by its primary key (or replica identity index).\n"
    "  A table floe has not copied yet is copied first, inside the snapshot of the\n"
    "  replication slot, by --copy-workers connections at once (tables in parallel, a\n"
    "  large table in ranges of pages on Postgres 14 and later); then the change stream\n"
    "  follows.  A copy cut short copies its table again.  Values Postgres stores out of\n"
    "  line (TOAST) and leaves out of updates are taken from the key's row; with\n"
    "  --delete-mode equality such tables need REPLICA IDENTITY FULL.\n"
    "  ALTER TABLE is followed: the Iceberg table's schema changes at the change's\n"
    "  position in the stream.  A change Iceberg cannot take in place (bigint -> int,\n"
    "  another type, a default Postgres wrote into old rows of a format 2 table)\n"
    "  copies that table again (a resync) while the others stream on; --resync does\n"
    "  the same on demand.  TRUNCATE is mirrored at its place in the stream (one\n"
    "  snapshot removes the rows it removed).\n"
    "  A partitioned table is one Iceberg table, the root's; its publication publishes\n"
    "  through the root (publish_via_partition_root = true: --create-publication sets\n"
    "  it).  ATTACH, DETACH, DROP or TRUNCATE of one partition resync it.\n"
    "\n"
    "exactly once:\n"
    "  Snapshots are committed every --commit-interval (wall clock) for tables with\n"
    "  changes, every --idle-commit-interval for the others; the slot's confirmed LSN\n"
    "  only moves to what every table has committed.  Kill it at any moment and run the\n"
    "  same command again: nothing is lost or doubled.\n"
    "\n"
    "lifecycle:\n"
    "  --drop-table T,... stops mirroring tables (with the slot idle: no floe pg running):\n"
    "  each leaves the publication (with --create-publication; else the ALTER PUBLICATION\n"
    "  is printed) and its Iceberg table stays, or with --purge is dropped with its files.\n"
    "  Listed again later, a kept table is copied again in place (a resync), a purged one\n"
    "  afresh.  --retire runs until everything up to the server's position now is\n"
    "  committed, then drops the slot (and the publication with --create-publication);\n"
    "  the Iceberg tables stay.  Mirroring them again takes --new-mirror.\n"

    "verify:\n"
    "  --verify runs the mirror up to one LSN (a temporary slot's consistent point),\n"
    "  commits every table there, compares each with Postgres at that LSN and exits:\n"
    "  a line per table (equal, or its missing, extra and different keys) and a\n"
    "  summary.  It takes the slot as a run does: stop the mirror meanwhile.\n"
    "\n"
    "exit status:\n"
    "  0    --stop-at was reached: everything up to it is committed; --verify: every\n"
    "       table is equal\n"
    "  3    --verify found differences (each table's line names them)\n"
    "  1    the mirror halted (the message says why); tables stay at their last commits\n"
    "  2    bad options: nothing was created\n"
    "  129, 130, 143   stopped by SIGHUP, SIGINT, SIGTERM (whole transactions received\n"
    "       are committed first)\n";

static const cli_command CMD = {"pg", USAGE, NOTES};

#define EXIT_DIFFERENCES 3              /* --verify found differences */

typedef struct run {
    floe_pg *pg;
    floe_error *err;
    metrics_server *metrics;
    cli_status *status;
    cli_status_mode mode;
    uint64_t interval_ns, linger_ns, started_ns;
    _Atomic uint64_t warnings;      /* the maintenance threads warn too */
    uint64_t last_changes;
    double last_secs;
    floe_sink_options sink;         /* the options' */
    floe_connect_options connect;   /* the sink options' */
} run;

static void on_warning(void *ctx, const char *msg)
{
    cli_warning(&((run *)ctx)->warnings, msg);
}

static void on_notice(void *ctx, const char *msg)
{
    run *r = ctx;
    if (r->mode != CLI_STATUS_QUIET)
        cli_say("floe: %s\n", msg);
}

/* ---- options ---------------------------------------------------------------------------------- */

static int wall_ms(const cli_opt *opts, const char *name, uint64_t *ms)
{
    uint64_t ns = *ms * 1000000u;
    if (cli_wall_duration_opt(opts, name, false, &ns) != 0)
        return -1;
    *ms = ns / 1000000u ? ns / 1000000u : 1;
    return 0;
}

static int stop_at(const cli_opt *opts, floe_pg_options *o)
{
    const char *v = cli_get(opts, "stop-at");
    if (!v)
        return 0;
    if (strcmp(v, "now") == 0) {
        o->stop_at_now = 1;
        return 0;
    }
    if (floe_pg_lsn_parse(v, &o->stop_at_lsn) != 0 || !o->stop_at_lsn) {
        cli_say("floe: --stop-at must be an LSN (16/B374D848) or 'now', not '%s'\n", v);
        return -1;
    }
    return 0;
}

static int options(const cli_opt *opts, floe_pg_options *o, run *r)
{
    floe_pg_options_init(o, sizeof *o);
    o->source = cli_get(opts, "source");
    o->tables = cli_get(opts, "tables");
    o->publication = cli_get(opts, "publication");
    o->create_publication = cli_has(opts, "create-publication");
    o->slot = cli_get(opts, "slot");
    o->namespace_name = cli_get(opts, "namespace");
    o->table_map = cli_get(opts, "table-map");
    o->partition_by = cli_get(opts, "partition-by");
    o->resync = cli_get(opts, "resync");
    o->new_mirror = cli_has(opts, "new-mirror");
    uint64_t reconnect_ns = o->reconnect_timeout_ms * 1000000u;
    if (cli_wall_duration_opt(opts, "reconnect-timeout", true, &reconnect_ns) != 0)
        return -1;
    o->reconnect_timeout_ms = reconnect_ns / 1000000u;
    o->on_notice = on_notice;
    o->notice_ctx = r;
    o->sink = &r->sink;
    o->stop_fd = cli_signals_fd();
    size_t txn = 0;
    if (cli_source_sink_options(opts, &r->sink, &r->connect, on_warning, r) != 0 ||
        wall_ms(opts, "commit-interval", &o->commit_interval_ms) ||
        wall_ms(opts, "idle-commit-interval", &o->idle_commit_interval_ms) || stop_at(opts, o) ||
        cli_size_opt(opts, "txn-memory", &txn) != 0)
        return -1;
    o->txn_memory = txn;
    const char *ts = cli_get(opts, "txn-streaming");
    if (ts && strcmp(ts, "on") != 0 && strcmp(ts, "off") != 0) {
        cli_say("floe: --txn-streaming takes on or off, not '%s'\n", ts);
        return -1;
    }
    o->txn_streaming = !ts || strcmp(ts, "on") == 0;
    uint64_t workers = 0;
    if (cli_u64_opt(opts, "copy-workers", &workers) != 0 ||
        cli_u64_opt(opts, "copy-range-pages", &o->copy_range_pages) != 0)
        return -1;
    if (cli_has(opts, "copy-workers") && (workers < 1 || workers > 64)) {
        cli_say("floe: --copy-workers must be from 1 to 64, not %" PRIu64 "\n", workers);
        return -1;
    }
    o->copy_workers = (int)workers;
    if (cli_has(opts, "retire")) {
        if (cli_has(opts, "stop-at") || cli_has(opts, "drop-table")) {
            cli_say("floe: --retire stops by itself (at the server's position now): leave out "
                    "--stop-at and --drop-table\n");
            return -1;
        }
        o->stop_at_now = 1;
    }
    if (cli_has(opts, "purge") && !cli_has(opts, "drop-table")) {
        cli_say("floe: --purge goes with --drop-table\n");
        return -1;
    }
    if (cli_has(opts, "verify") && (o->stop_at_lsn || o->stop_at_now || o->resync ||
                                    cli_has(opts, "retire") || cli_has(opts, "drop-table"))) {
        cli_say("floe: --verify stops by itself at the LSN it verifies: it takes none of "
                "--stop-at, --resync, --retire and --drop-table\n");
        return -1;
    }
    if (!o->tables && !o->publication && !cli_has(opts, "drop-table")) {
        cli_say("floe: name the tables (--tables) or a publication (--publication)\n");
        return -1;
    }
    if (cli_status_options(opts, &r->mode, &r->interval_ns, &r->linger_ns) != 0)
        return -1;
    return 0;
}

/* ---- what is shown -------------------------------------------------------------------------- */

static void bytes_text(uint64_t b, char *out, size_t n)
{
    if (b < 10000)
        snprintf(out, n, "%" PRIu64 " B", b);
    else if (b < 10000000)
        snprintf(out, n, "%.1f kB", (double)b / 1e3);
    else
        snprintf(out, n, "%.1f MB", (double)b / 1e6);
}

static void status_text(void *ctx, double secs, char *buf, size_t cap)
{
    run *r = ctx;
    floe_pg_stats st;
    floe_pg_stats_get(r->pg, &st, sizeof st);
    char when[32], rcv[24], done[24] = "none", lag[24];
    cli_elapsed_text((uint64_t)(secs * 1e9), when, sizeof when);
    if (st.reconnecting) {
        snprintf(buf, cap, "%s: reconnecting to Postgres (%" PRIu64 " reconnections so far)",
                 when, st.reconnects);
        return;
    }
    if (st.phase < 2) {
        snprintf(buf, cap, "%s: copying: %" PRIu64 " of %" PRIu64 " tables, %" PRIu64 " rows",
                 when, st.tables_copied, st.tables, st.copy_rows);
        return;
    }
    uint64_t changes = st.inserts + st.updates + st.deletes;
    double dt = secs - r->last_secs;
    double rate = dt > 0 ? (double)(changes - r->last_changes) / dt : 0.0;
    r->last_changes = changes;
    r->last_secs = secs;
    floe_pg_lsn_format(st.received_lsn, rcv, sizeof rcv);
    if (st.committed_lsn)
        floe_pg_lsn_format(st.committed_lsn, done, sizeof done);
    bytes_text(st.lag_bytes, lag, sizeof lag);
    snprintf(buf, cap, "%s: %" PRIu64 " changes (%.0f/s) in %" PRIu64 " transactions, %" PRIu64
             " snapshots, received %s, committed %s, lag %s %.1fs", when, changes, rate,
             st.transactions, st.snapshots_committed, rcv, done, lag, st.lag_seconds);
}

static int metrics_text(void *ctx, char **text, floe_error *err)
{
    return floe_pg_metrics(ctx, text, err);
}

static int health_text(void *ctx, char *text, size_t cap)
{
    floe_pg_stats st;
    floe_pg_stats_get(ctx, &st, sizeof st);
    if (!st.reconnecting)
        return 200;
    snprintf(text, cap, "reconnecting to Postgres (%" PRIu64 " reconnections so far)",
             st.reconnects);
    return 503;
}

static void table_notices(run *r)
{
    if (r->mode == CLI_STATUS_QUIET)
        return;
    for (size_t i = 0; i < floe_pg_table_count(r->pg); i++) {
        floe_pg_table_info t;
        if (floe_pg_table_info_get(r->pg, i, &t, sizeof t, NULL) != FLOE_OK)
            continue;
        const char *from = floe_sink_resume_frontier(t.sink);
        uint64_t lsn = 0;
        char text[24] = "";
        if (from && from[0] == '[')
            floe_pg_lsn_format(strtoull(from + 1, NULL, 10), text, sizeof text);
        (void)lsn;
        if (from)
            cli_say("floe: %s -> %s: resuming at %s (changes below it are in the table)\n",
                    t.source, t.table, text);
        else
            cli_say("floe: %s -> %s: new to this mirror, copied first\n", t.source, t.table);
    }
}

static void report_done(run *r)
{
    metrics_server_health(r->metrics, 200, "finished");
    if (r->mode == CLI_STATUS_QUIET)
        return;
    floe_pg_stats st;
    floe_pg_stats_get(r->pg, &st, sizeof st);
    char lsn[24];
    floe_pg_lsn_format(st.committed_lsn, lsn, sizeof lsn);
    double secs = (double)(cli_now_ns() - r->started_ns) / 1e9;
    char shape[240] = "";
    if (st.schema_changes || st.resyncs)
        snprintf(shape, sizeof shape, ", %" PRIu64 " schema changes, %" PRIu64 " resyncs",
                 st.schema_changes, st.resyncs);
    if (st.truncates)
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), ", %" PRIu64 " truncates",
                 st.truncates);
    if (st.streamed_transactions || st.streamed_aborts)
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), ", %" PRIu64 " streamed "
                 "transactions (%" PRIu64 " aborted)", st.streamed_transactions,
                 st.streamed_aborts);
    cli_say("floe: done in %.1fs: %" PRIu64 " tables (%" PRIu64 " copied, %" PRIu64 " rows), %"
            PRIu64 " transactions (%" PRIu64 " inserts, %" PRIu64 " updates, %" PRIu64
            " deletes)%s, %" PRIu64 " snapshots; every table committed up to %s, the slot's "
            "confirmed LSN\n", secs, st.tables, st.tables_copied, st.copy_rows, st.transactions,
            st.inserts, st.updates, st.deletes, shape, st.snapshots_committed, lsn);
}

static int report_stop(run *r, int sig)
{
    char buf[32], lsn[24] = "none";
    const char *name = cli_signal_name(sig, buf, sizeof buf);
    metrics_server_health(r->metrics, 503, "stopping: %s", name);
    floe_pg_stats st;
    floe_pg_stats_get(r->pg, &st, sizeof st);
    if (st.committed_lsn)
        floe_pg_lsn_format(st.committed_lsn, lsn, sizeof lsn);
    if (st.phase == 1)
        cli_say("floe: %s: stopped during the initial copy: %" PRIu64 " of %" PRIu64 " tables "
                "committed their copy; the same command copies the others\n", name,
                st.tables_copied, st.tables);
    else
        cli_say("floe: %s: stopped; every table is committed up to at least %s and the slot "
                "confirmed there: the same command resumes\n", name, lsn);
    return 128 + sig;
}

static void report_halt(run *r, const char *what)
{
    char chain[16384];
    cli_chain(r->err, chain, sizeof chain);
    metrics_server_health(r->metrics, 503, "halted: %s", chain);
    cli_say("floe: %s: %s\n", what, chain);
    if (floe_error_retryable(r->err))
        cli_say("floe: this may be transient: run the same command again (each table resumes "
                "at its last commit)\n");
    else
        cli_say("floe: fix the cause and run the same command again: each table stays at its "
                "last commit (nothing after it is visible)\n");
}

static void linger(run *r)
{
    if (r->metrics && r->linger_ns)
        cli_signals_wait(r->linger_ns);
}

/* --retire, after every table committed up to the server's position. */
static int retire(run *r)
{
    if (floe_pg_retire(r->pg, r->err) != FLOE_OK) {
        report_halt(r, "pg --retire");
        return floe_error_retryable(r->err) ? CLI_EXIT_TRANSIENT : CLI_EXIT_FAILED;
    }
    cli_say("floe: retired: replication slot %s is dropped; the Iceberg tables stay with their "
            "history in the catalog (to mirror them again, run floe pg with --new-mirror: a "
            "new slot, each table copied again in place)\n", floe_pg_slot_name(r->pg));
    return CLI_EXIT_OK;
}

/* ---- --verify ------------------------------------------------------------------------------ */

typedef struct verified {
    uint64_t tables, equal;
} verified;

static void on_verified(void *ctx, const floe_pg_verify_table *t)
{
    verified *v = ctx;
    char lsn[24];
    floe_pg_lsn_format(t->at, lsn, sizeof lsn);
    uint64_t n = t->missing + t->extra + t->different;
    v->tables++;
    if (t->shape_differs) {
        cli_say("%s: differs at %s: %s\n", t->source, lsn, t->report);
        return;
    }
    if (!n) {
        v->equal++;
        cli_say("%s: equal, %" PRIu64 " rows at %s\n", t->source, t->pg_rows, lsn);
        return;
    }
    cli_say("%s: %" PRIu64 " difference%s at %s (%" PRIu64 " missing in %s, %" PRIu64 " extra, %"
            PRIu64 " different; %" PRIu64 " rows in Postgres, %" PRIu64 " in Iceberg): %s\n",
            t->source, n, n == 1 ? "" : "s", lsn, t->missing, t->table, t->extra, t->different,
            t->pg_rows, t->iceberg_rows, t->report);
}

static int verify(run *r)
{
    verified v = {0};
    uint64_t at = 0, diffs = 0;
    int rc = floe_pg_verify(r->pg, on_verified, &v, &at, &diffs, r->err);
    if (rc == FLOE_EINTERRUPTED && cli_signals_caught())
        return report_stop(r, cli_signals_caught());
    if (rc != FLOE_OK) {
        report_halt(r, "pg --verify");
        return floe_error_retryable(r->err) ? CLI_EXIT_TRANSIENT : CLI_EXIT_FAILED;
    }
    char lsn[24];
    floe_pg_lsn_format(at, lsn, sizeof lsn);
    if (!diffs) {
        cli_say("floe: verified at %s: all %" PRIu64 " tables equal\n", lsn, v.tables);
        return CLI_EXIT_OK;
    }
    cli_say("floe: verified at %s: %" PRIu64 " of %" PRIu64 " tables differ (%" PRIu64
            " differences); floe pg --resync SCHEMA.TABLE copies a table again in place\n",
            lsn, v.tables - v.equal, v.tables, diffs);
    return EXIT_DIFFERENCES;
}

static int open_and_run(run *r, const cli_opt *opts, const floe_pg_options *o)
{
    const char *addr = cli_get(opts, "metrics-addr");
    bool usage = false;
    if (addr && !(r->metrics = metrics_server_start(addr, &usage)))
        return usage ? CLI_EXIT_USAGE : CLI_EXIT_FAILED;
    r->started_ns = cli_now_ns();
    if (floe_pg_open(o, &r->pg, r->err) != FLOE_OK) {
        report_halt(r, "pg");
        linger(r);
        return floe_error_code(r->err) == FLOE_EINVAL ? CLI_EXIT_USAGE
               : floe_error_retryable(r->err)          ? CLI_EXIT_TRANSIENT
                                                       : CLI_EXIT_FAILED;
    }
    metrics_server_attach_fn(r->metrics, metrics_text, r->pg);
    metrics_server_health_fn(r->metrics, health_text);
    table_notices(r);
    r->status = cli_status_start_fn(r->mode, r->interval_ns, status_text, r);
    if (cli_has(opts, "verify")) {
        int status = verify(r);
        cli_status_stop(r->status);
        r->status = NULL;
        return status;
    }
    int rc = floe_pg_run(r->pg, r->err);
    cli_status_stop(r->status);
    r->status = NULL;
    if (rc == FLOE_EINTERRUPTED && cli_signals_caught())
        return report_stop(r, cli_signals_caught());
    if (rc != FLOE_OK) {
        report_halt(r, "pg");
        linger(r);
        return floe_error_retryable(r->err) ? CLI_EXIT_TRANSIENT : CLI_EXIT_FAILED;
    }
    report_done(r);
    if (cli_has(opts, "retire"))
        return retire(r);
    linger(r);
    return CLI_EXIT_OK;
}

/* --drop-table: no stream; the library says what it did per table. */
static int drop_tables(run *r, const cli_opt *opts, const floe_pg_options *o)
{
    const char *list = cli_get(opts, "drop-table");
    bool purge = cli_has(opts, "purge");
    if (floe_pg_drop_tables(o, list, purge, r->err) != FLOE_OK) {
        char chain[16384];
        cli_chain(r->err, chain, sizeof chain);
        cli_say("floe: pg --drop-table: %s\n", chain);
        return floe_error_code(r->err) == FLOE_EINVAL ? CLI_EXIT_USAGE
               : floe_error_retryable(r->err)          ? CLI_EXIT_TRANSIENT
                                                       : CLI_EXIT_FAILED;
    }
    cli_say("floe: done: slot %s no longer mirrors %s (%s); the slot and the other tables "
            "are unchanged\n", o->slot ? o->slot : "floe", list,
            purge ? "Iceberg tables dropped with their files" : "Iceberg tables kept");
    return CLI_EXIT_OK;
}

int cmd_pg(int argc, char **argv)
{
    cli_opt opts[] = {
        {"source", true, "Postgres connection string or URI (default: the PG* environment)",
         NULL},
        {"tables", true, "tables to mirror, SCHEMA.TABLE,... (default: the publication's)", NULL},
        {"publication", true, "publication to stream (default: the slot's name)", NULL},
        {"create-publication", false, "create the publication, or add missing tables to it",
         NULL},
        {"slot", true, "replication slot, created when missing (default floe)", NULL},
        {"namespace", true, "Iceberg namespace of the tables (default: the Postgres schema)",
         NULL},
        {"table-map", true, "Iceberg names, SCHEMA.TABLE=NS.NAME,...", NULL},
        {"partition-by", true, "partition specs of tables floe creates, SCHEMA.TABLE=SPEC,... "
                               "(SPEC as floe sink's: \"public.ev=day(ts), bucket(16, id)\")",
         NULL},
        {"resync", true, "copy these tables again in place while the others stream, "
                         "SCHEMA.TABLE,...", NULL},
        {"reconnect-timeout", true, "keep reconnecting after a lost connection this long "
                                    "(default 5m; 0: for ever)", NULL},
        {"verify", false, "commit every table up to one LSN, compare each with Postgres "
                          "there and exit (0 equal, 3 differences)", NULL},
        {"new-mirror", false, "mirror into this catalog although the slot already confirmed "
                              "progress no table here records (copies every table), or start "
                              "a new slot after the old one was dropped (--retire): every "
                              "table is copied again in place", NULL},
        {"drop-table", true, "stop mirroring these tables, SCHEMA.TABLE,... (no stream; "
                             "their Iceberg tables stay unless --purge)", NULL},
        {"purge", false, "with --drop-table: drop the Iceberg tables and delete their files",
         NULL},
        {"retire", false, "commit everything up to the server's position now, then drop the "
                          "slot (and the publication with --create-publication)", NULL},
        CLI_CATALOG_OPTS,
        {"commit-interval", true, "wall clock between snapshots of a table with changes "
                                  "(default 10s)", NULL},
        {"idle-commit-interval", true, "wall clock between progress records of a table "
                                       "without changes (default 1m)", NULL},
        {"stop-at", true, "stop once every table has committed up to this LSN, or 'now' "
                          "(the server's position when streaming starts)", NULL},
        {"txn-memory", true, "bytes one transaction may leave per key in tables without "
                             "REPLICA IDENTITY FULL (default 1g; a streamed transaction "
                             "needs it only for keys it changes twice)", NULL},
        {"txn-streaming", true, "on (default): on Postgres 14 and later, take transactions "
                                "larger than the server's logical_decoding_work_mem while they "
                                "run, spilled to --spill-dir until they commit; off: each "
                                "transaction comes once committed", NULL},
        {"copy-workers", true, "connections and threads of the initial copy: tables in "
                               "parallel, a large table in page ranges (default 2)", NULL},
        {"copy-range-pages", true, "heap pages of one range of a table's copy (default: from "
                                   "its size, at least 8192)", NULL},
        CLI_SOURCE_SINK_OPTS,
        {"memory-limit", true, "memory for all tables' held updates and key indexes "
                               "(default 1g)", NULL},
        {"spill-dir", true, "where spilled updates and in-progress transactions go "
                            "(default $TMPDIR or /tmp)", NULL},
        {"metrics-linger", true, "after the run, keep serving /metrics this long", NULL},
        CLI_STATUS_OPTS,
        {NULL, false, NULL, NULL},
    };
    int begun = cli_begin(&CMD, argc, argv, opts);
    if (begun >= 0)
        return begun;
    run r = {0};
    r.err = floe_error_new();
    floe_pg_options o;
    int status = CLI_EXIT_FAILED;
    if (r.err && options(opts, &o, &r) != 0)
        status = CLI_EXIT_USAGE;
    else if (r.err && cli_has(opts, "drop-table"))
        status = drop_tables(&r, opts, &o);
    else if (r.err)
        status = open_and_run(&r, opts, &o);
    cli_status_stop(r.status);
    metrics_server_stop(r.metrics);
    floe_pg_free(r.pg);
    floe_error_free(r.err);
    return status;
}
