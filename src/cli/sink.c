/*
 * sink.c - `floe sink`: an NDJSON change stream (a file or stdin) into an
 * Iceberg table, exactly once (SPEC.md sections 2-10).
 *
 * Each line is {"time","diff","row"} or {"progress"}.  At the end of the
 * input everything read is committed and the table records the frontier
 * just past the newest update, so a later run over the next file continues;
 * with --close (or an input line {"progress": null}) the input is complete
 * and the table records [].  The library commits synchronously inside
 * push/advance, so between two calls nothing is half-done: a bad line, or a
 * stop signal, leaves the table at its last committed frontier, and running
 * the same command again resumes there.
 *
 * What the operator sees: a status line (status_line.c), messages and the
 * final summary on stderr, /metrics and /health on --metrics-addr
 * (metrics_server.c), and the exit status: 0 done, 1 halted, 2 bad
 * options, 128 + N stopped by signal N (stop_signals.c).
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_internal.h"

static const char USAGE[] =
    "floe sink --table NS.NAME --schema \"COLUMNS\"|@FILE [--key COL,...] [--partition-by SPEC] "
    "[--mode upsert|append] [--input PATH|-] [--catalog URI] [--warehouse URI] "
    "[--catalog-name NAME] [--commit-interval DURATION] [--as-of T] [--sink-id ID] "
    "[--sink-version N] [--compression zstd|snappy|gzip|none] [--target-file-size BYTES] "
    "[--delete-mode position|equality] [--format-version 2|3] [--index-dir DIR] "
    "[--memory-limit BYTES] [--spill-dir DIR] [--maintain auto|off] [--maintain-budget F] "
    "[--orphan-age AGE] [--orphan-interval AGE] [--property KEY=VALUE]... [--close] "
    "[--new-sink] [--resume-from FRONTIER] [--metrics-addr HOST:PORT] [--quiet]";

static const char NOTES[] =
    "progress:\n"
    "  On a terminal one status line is redrawn every second: time running, updates\n"
    "  read and their rate, snapshots committed, the input and committed frontiers,\n"
    "  the lag between them (in input time units) and the freshness (seconds since\n"
    "  the oldest input no commit covers arrived; 0 when caught up).\n"
    "  Off a terminal it is a plain line every 10 s.  A summary line ends the run.\n"
    "  --quiet prints nothing on success but the resume notice; errors and warnings\n"
    "  still go to stderr.\n"
    "\n"
    "metrics (--metrics-addr HOST:PORT, [IPv6]:PORT, or :PORT for every interface):\n"
    "  GET /metrics   Prometheus text format\n"
    "  GET /health    200 \"ok\" while the sink runs; 503 with the reason while it\n"
    "                 starts, after it halted or while it stops (200 \"finished\" at\n"
    "                 the end of a successful run; see --metrics-linger)\n"
    "\n"
    "signals:\n"
    "  SIGTERM, SIGINT (Ctrl-C) and SIGHUP stop the sink cleanly: it stops reading,\n"
    "  keeps every snapshot already committed, prints the committed frontier and exits\n"
    "  128 + the signal number; the same command resumes at that frontier.  A second\n"
    "  signal while stopping ends the process at once.\n"
    "\n"
    "exit status:\n"
    "  0    the input ended and everything read was committed\n"
    "  1    the sink halted (bad input, catalog or storage failure, fenced...): the\n"
    "       table stays at its last committed frontier\n"
    "  2    bad options: nothing was created\n"
    "  129, 130, 143   stopped by SIGHUP, SIGINT, SIGTERM\n";

static const cli_command CMD = {"sink", USAGE, NOTES};

#define MAX_PROPERTIES 64

typedef enum outcome { RUN_DONE, RUN_HALTED, RUN_STOPPED } outcome;

typedef struct run {
    floe_sink *sink;
    floe_error *err;
    cli_lines *lines;
    metrics_server *metrics;
    cli_status *status;
    const char *table;
    const char *input;
    cli_status_mode mode;
    uint64_t interval_ns, linger_ns;
    bool close;
    _Atomic uint64_t warnings;       /* the maintenance thread warns too */
    const char *props[2 * MAX_PROPERTIES + 1];   /* --property pairs, NULL-terminated */
    char *prop_text[MAX_PROPERTIES];
    uint64_t started_ns;
    size_t lineno;              /* of the last line read */
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

static int parse_mode(const char *v, floe_sink_mode *out)
{
    if (!v)
        return 0;
    if (strcmp(v, "upsert") == 0)
        *out = FLOE_SINK_MODE_UPSERT;
    else if (strcmp(v, "append") == 0)
        *out = FLOE_SINK_MODE_APPEND;
    else {
        cli_say("floe: --mode must be upsert or append, not '%s'\n", v);
        return -1;
    }
    return 0;
}


/* --property KEY=VALUE, as many as given. */
static int parse_properties(run *r, const cli_opt *opts, int argc, char **argv,
                            floe_sink_options *o)
{
    const char *vals[MAX_PROPERTIES + 1];
    size_t n = cli_get_all(opts, argc, argv, "property", vals, MAX_PROPERTIES + 1);
    if (n > MAX_PROPERTIES) {
        cli_say("floe: at most %d --property options\n", MAX_PROPERTIES);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(vals[i], '=');
        if (!eq || eq == vals[i]) {
            cli_say("floe: --property takes KEY=VALUE, not '%s'\n", vals[i]);
            return -1;
        }
        if (!(r->prop_text[i] = strdup(vals[i])))
            return -1;
        r->prop_text[i][eq - vals[i]] = '\0';
        r->props[2 * i] = r->prop_text[i];
        r->props[2 * i + 1] = r->prop_text[i] + (eq - vals[i]) + 1;
    }
    o->properties = n ? r->props : NULL;
    return 0;
}


static int numbers(const cli_opt *opts, floe_sink_options *o)
{
    if (parse_mode(cli_get(opts, "mode"), &o->mode) != 0 ||
        cli_duration_opt(opts, "commit-interval", &o->commit_interval) != 0 ||
        cli_u64_opt(opts, "as-of", &o->as_of) != 0 || cli_sink_numbers(opts, o) != 0)
        return -1;
    if (cli_has(opts, "delete-mode") &&
        (o->mode == FLOE_SINK_MODE_APPEND || (o->mode == FLOE_SINK_MODE_AUTO && !o->key))) {
        cli_say("floe: --delete-mode needs upsert mode (append mode writes no deletes)\n");
        return -1;
    }
    return 0;
}

static int options(const cli_opt *opts, int argc, char **argv, floe_sink_options *o, run *r,
                   char **schema_text)
{
    floe_sink_options_init(o, sizeof *o);
    o->table = r->table = cli_get(opts, "table");
    o->key = cli_get(opts, "key");
    cli_connect_options(opts, &r->connect);
    o->connect = &r->connect;
    o->sink_id = cli_get(opts, "sink-id");
    o->spill_dir = cli_get(opts, "spill-dir");
    o->index_dir = cli_get(opts, "index-dir");
    o->resume_from = cli_get(opts, "resume-from");
    o->partition_by = cli_get(opts, "partition-by");
    o->new_sink = cli_has(opts, "new-sink");
    o->on_warning = on_warning;
    o->warning_ctx = r;
    o->on_notice = on_notice;
    o->notice_ctx = r;
    if (numbers(opts, o) != 0 || parse_properties(r, opts, argc, argv, o) != 0)
        return -1;
    r->input = cli_get(opts, "input") ? cli_get(opts, "input") : "-";
    r->close = cli_has(opts, "close");
    if (cli_status_options(opts, &r->mode, &r->interval_ns, &r->linger_ns) != 0)
        return -1;
    if (cli_has(opts, "schema")) {
        *schema_text = cli_schema_text(cli_get(opts, "schema"));
        if (!*schema_text)
            return -1;
        o->schema = *schema_text;
    }
    return 0;
}

/* ---- reports --------------------------------------------------------------------- */

/* The committed frontier, "[t]" / "[]", or false when nothing is committed. */
static bool committed(const floe_sink_stats *st, char *buf, size_t cap)
{
    if (!st->has_committed_frontier)
        return false;
    cli_frontier_text(st->committed_frontier_empty, st->committed_frontier, buf, cap);
    return true;
}

static void halt_advice(run *r, bool input_at_fault)
{
    floe_sink_stats st;
    floe_sink_stats_get(r->sink, &st, sizeof st);
    char f[32];
    int code = floe_error_code(r->err);
    if (floe_sink_complete(r->sink)) {
        cli_say("floe: an earlier run closed this sink's input: the table stays complete at "
                "frontier [] (a new stream needs another --sink-id)\n");
        return;
    }
    const char *what = input_at_fault ? "fix the input and run again"
                       : code == FLOE_EFENCED ? "a newer version of this sink took over"
                       : floe_error_retryable(r->err)
                           ? "this may be transient: run the same command again"
                           : "fix the cause and run the same command again";
    if (committed(&st, f, sizeof f))
        cli_say("floe: %s: the table stays at its last committed frontier %s (nothing of this "
                "run after it is visible)\n", what, f);
    else
        cli_say("floe: %s: nothing is committed for this sink yet (nothing of this run is "
                "visible)\n", what);
}

/* The sink halted with r->err: say where and why, and tell /health. */
static void report_halt(run *r, const char *where, bool input_at_fault)
{
    char chain[16384];
    cli_chain(r->err, chain, sizeof chain);
    metrics_server_health(r->metrics, 503, "halted: %s: %s", where, chain);
    cli_say("floe: %s: %s\n", where, chain);
    halt_advice(r, input_at_fault);
}

static void report_done(run *r)
{
    metrics_server_health(r->metrics, 200, "finished");
    if (r->mode == CLI_STATUS_QUIET)
        return;
    floe_sink_stats st;
    floe_sink_stats_get(r->sink, &st, sizeof st);
    double secs = (double)(cli_now_ns() - r->started_ns) / 1e9;
    char f[32], where[160];
    if (!committed(&st, f, sizeof f))
        snprintf(where, sizeof where, "nothing committed (the input held no updates)");
    else if (st.committed_frontier_empty)
        snprintf(where, sizeof where, "%s at frontier [] (input closed)", r->table);
    else
        snprintf(where, sizeof where, "%s at frontier %s (a later run continues there)",
                 r->table, f);
    cli_say("floe: done in %.1fs: %" PRIu64 " update%s read (%.0f/s), %" PRIu64
            " snapshot%s committed, %s\n", secs, st.updates_in, st.updates_in == 1 ? "" : "s",
            secs > 0 ? (double)st.updates_in / secs : 0.0, st.snapshots_committed,
            st.snapshots_committed == 1 ? "" : "s", where);
    if (floe_sink_index_report(r->sink) && (st.index_snapshots_synced || st.deletes_retargeted))
        cli_say("floe: key index: %" PRIu64 " keys; %" PRIu64 " snapshots of other writers "
                "(maintenance included) read, %" PRIu64 " rows re-pointed after this sink's "
                "compactions, %" PRIu64 " deletes moved onto rewritten files\n", st.index_keys,
                st.index_snapshots_synced, st.index_rows_moved, st.deletes_retargeted);
    if (st.files_rewritten)
        cli_say("floe: copy-on-write: %" PRIu64 " data files rewritten (%" PRIu64 " rows); %"
                PRIu64 " rewrites taken over after a conflict\n", st.files_rewritten,
                st.rows_rewritten, st.rewrites_reused);
    if (st.compactions || st.snapshots_expired || st.files_removed)
        cli_say("floe: maintenance: %" PRIu64 " compactions (%" PRIu64 " files rewritten), %"
                PRIu64 " snapshots expired, %" PRIu64 " files removed, %.1fs (%.0f%% of the run)"
                "%s\n", st.compactions, st.files_compacted, st.snapshots_expired,
                st.files_removed, st.maintenance_us / 1e6,
                secs > 0 ? 100 * st.maintenance_us / 1e6 / secs : 0.0,
                st.maintenance_failures ? "; some rounds failed (see the warnings)" : "");
}

static int report_stop(run *r, int sig)
{
    char buf[32], f[32];
    const char *name = cli_signal_name(sig, buf, sizeof buf);
    metrics_server_health(r->metrics, 503, "stopping: %s", name);
    floe_sink_stats st;
    floe_sink_stats_get(r->sink, &st, sizeof st);
    cli_say("floe: %s: stopped reading %s after line %zu: %" PRIu64 " updates read, %" PRIu64
            " snapshots committed by this run\n", name, cli_lines_name(r->lines), r->lineno,
            st.updates_in, st.snapshots_committed);
    if (!committed(&st, f, sizeof f))
        cli_say("floe: nothing is committed for this sink yet: the same command resumes from "
                "the start of the input\n");
    else if (st.committed_frontier_empty)
        cli_say("floe: %s is at committed frontier [] (its input is complete): nothing remains "
                "to resume\n", r->table);
    else
        cli_say("floe: %s is at committed frontier %s: the same command resumes there (input "
                "below it is skipped, the rest is read again)\n", r->table, f);
    return 128 + sig;
}

/* ---- the run --------------------------------------------------------------------- */

static outcome stream(run *r)
{
    const char *line;
    size_t len;
    int got = 0;
    while (!cli_signals_caught() &&
           (got = cli_lines_next(r->lines, &line, &len, &r->lineno)) == 1) {
        if (cli_blank(line, len))
            continue;
        if (floe_sink_push_json(r->sink, line, len, r->err) != FLOE_OK) {
            char where[4200];
            int code = floe_error_code(r->err);
            snprintf(where, sizeof where, "%s:%zu", cli_lines_name(r->lines), r->lineno);
            report_halt(r, where, code == FLOE_EINPUT || code == FLOE_ELIMIT);
            return RUN_HALTED;
        }
    }
    if (cli_signals_caught())
        return RUN_STOPPED;
    if (got < 0) {                                  /* a read error, reported */
        metrics_server_health(r->metrics, 503, "halted: cannot read the input");
        floe_error_clear(r->err);
        halt_advice(r, false);
        return RUN_HALTED;
    }
    int rc = r->close ? floe_sink_finish(r->sink, r->err) : floe_sink_end(r->sink, r->err);
    if (rc != FLOE_OK) {
        char where[4300];
        snprintf(where, sizeof where, "at the end of %s (line %zu)", cli_lines_name(r->lines),
                 r->lineno);
        report_halt(r, where, false);
        return RUN_HALTED;
    }
    return RUN_DONE;
}

static void notices(run *r)
{
    if (floe_sink_complete(r->sink))
        cli_say("floe: warning: %s already records frontier [] for this sink: its input was "
                "closed, so only an input without updates is accepted\n", r->table);
    const char *from = floe_sink_resume_frontier(r->sink);
    if (from)          /* shown even with --quiet: input below it is skipped */
        cli_say("floe: resuming %s at frontier %s (input below it is skipped)\n", r->table,
                from);
    const char *index = floe_sink_index_report(r->sink);
    if (index && (strstr(index, "rebuilt") || (r->mode != CLI_STATUS_QUIET &&
                                                strstr(index, "loaded"))))  /* a rebuild costs */
        cli_say("floe: %s\n", index);
    if (r->mode != CLI_STATUS_QUIET && strcmp(r->input, "-") == 0 && isatty(STDIN_FILENO))
        cli_say("floe: reading the change stream from the terminal (Ctrl-D ends the input, "
                "Ctrl-C stops)\n");
}

/* Keep serving /metrics and /health for --metrics-linger (a signal ends it). */
static void linger(run *r)
{
    if (r->metrics && r->linger_ns)
        cli_signals_wait(r->linger_ns);
}

static int open_and_run(run *r, const cli_opt *opts, const floe_sink_options *o)
{
    if (cli_lines_open(r->input, &r->lines) != FLOE_OK)      /* before anything is made */
        return CLI_EXIT_FAILED;
    cli_lines_wake_on(r->lines, cli_signals_fd());
    const char *addr = cli_get(opts, "metrics-addr");
    bool usage = false;
    if (addr && !(r->metrics = metrics_server_start(addr, &usage)))   /* before the table */
        return usage ? CLI_EXIT_USAGE : CLI_EXIT_FAILED;
    if (floe_sink_open(o, &r->sink, r->err) != FLOE_OK) {
        char chain[16384];
        cli_chain(r->err, chain, sizeof chain);
        metrics_server_health(r->metrics, 503, "halted: %s", chain);
        cli_say("floe: %s: %s\n", o->table, chain);
        linger(r);
        return CLI_EXIT_FAILED;
    }
    metrics_server_attach(r->metrics, r->sink);
    notices(r);
    r->started_ns = cli_now_ns();
    r->status = cli_status_start(r->mode, r->interval_ns, r->sink);
    outcome out = stream(r);
    cli_status_stop(r->status);
    r->status = NULL;
    if (out == RUN_STOPPED)
        return report_stop(r, cli_signals_caught());
    if (out == RUN_DONE)
        report_done(r);
    linger(r);
    return out == RUN_DONE ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

int cmd_sink(int argc, char **argv)
{
    cli_opt opts[] = {
        CLI_TABLE_OPTS,
        {"schema", true, "column list or @FILE (may be omitted when the table exists)", NULL},
        {"key", true, "key columns, comma-separated (upsert mode)", NULL},
        CLI_PARTITION_BY_OPT,
        {"mode", true, "upsert (default with --key) or append (default without)", NULL},
        {"input", true, "NDJSON change stream; - for stdin (default -)", NULL},
        {"commit-interval", true, "batch width in input time: 500ms, 10s, 2m (default 10s)", NULL},
        {"as-of", true, "time of the initial snapshot (default 0)", NULL},
        {"sink-id", true, "sink identity (default NS.NAME)", NULL},
        {"sink-version", true, "sink version; a newer one fences older ones (default 1)", NULL},
        {"compression", true, "zstd, snappy, gzip or none (default: the table's "
                                 "write.parquet.compression-codec, else zstd)", NULL},
        {"target-file-size", true, "data file roll-over size (default 512m)", NULL},
        {"close", false, "the input is complete: record frontier [] at its end (no later run "
                         "may add updates)", NULL},
        {"new-sink", false, "this sink id is new to a table that already holds rows", NULL},
        {"resume-from", true, "resume at this frontier when the table lost this sink's "
                              "progress (expired history)", NULL},
        {"metrics-addr", true, "serve /metrics and /health on HOST:PORT, [IPv6]:PORT or :PORT",
         NULL},
        {"metrics-linger", true, "after the run, keep serving them this long (wall clock, "
                                 "e.g. 30s; default 0)", NULL},
        {"delete-mode", true, "upsert deletes by position (default: a key index finds the "
                              "rows; every engine reads the table) or by equality on the key",
         NULL},
        {"format-version", true, "Iceberg format of a table floe creates: 2 (default) or 3 "
                                 "(deletion vectors)", NULL},
        {"index-dir", true, "where the key index is kept between runs (default "
                            "$FLOE_STATE_DIR, $XDG_STATE_HOME/floe or ~/.local/state/floe)",
         NULL},
        {"memory-limit", true, "memory for held updates and the key index, half each, before "
                               "they spill to disk (default 512m + 256m)", NULL},
        {"spill-dir", true, "where spilled updates and index runs go (default $TMPDIR or /tmp)",
         NULL},
        CLI_MAINTAIN_OPTS,
        CLI_COMMIT_TIMEOUT_OPT,
        {"property", true, "KEY=VALUE: a table property for a table the sink creates "
                           "(repeatable)", NULL},
        {"progress-interval", true, "redraw the status line this often (wall clock; default 1s "
                                    "on a terminal, 10s otherwise)", NULL},
        {"quiet", false, "no status line and no summary (errors and warnings still shown)",
         NULL},
        {NULL, false, NULL, NULL},
    };
    int begun = cli_begin(&CMD, argc, argv, opts);
    if (begun >= 0)
        return begun;
    if (cli_require(&CMD, opts, (const char *const[]){"table", NULL}) != 0)
        return CLI_EXIT_USAGE;
    run r = {0};
    r.err = floe_error_new();
    floe_sink_options o;
    char *schema_text = NULL;
    int status = CLI_EXIT_FAILED;
    if (r.err)
        status = options(opts, argc, argv, &o, &r, &schema_text) != 0
                     ? CLI_EXIT_USAGE
                     : open_and_run(&r, opts, &o);
    cli_status_stop(r.status);
    metrics_server_stop(r.metrics);
    cli_lines_close(r.lines);
    floe_sink_free(r.sink);
    floe_error_free(r.err);
    free(schema_text);
    for (size_t i = 0; i < MAX_PROPERTIES; i++)
        free(r.prop_text[i]);
    return status;
}
