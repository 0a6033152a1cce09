/*
 * sink.c - `floe sink`: an NDJSON change stream (a file or stdin) into an
 * Iceberg table, exactly once (SPEC.md sections 2-10).
 *
 * Each line is {"time","diff","row"} or {"progress"}.  At the end of the
 * input everything read is committed and the table records the frontier
 * just past the newest update, so a later run over the next file continues;
 * with --close (or an input line {"progress": null}) the input is complete
 * and the table records [].  A bad line stops
 * the run with an error naming the line; the table stays at its last
 * committed frontier, and running the same command again resumes there.
 * Progress goes to stderr on a terminal; --metrics-addr serves Prometheus
 * metrics.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_internal.h"

static const char USAGE[] =
    "floe sink --table NS.NAME --schema \"COLUMNS\"|@FILE [--key COL,...] "
    "[--mode upsert|append] [--input PATH|-] [--catalog URI] [--warehouse URI] "
    "[--catalog-name NAME] [--commit-interval DURATION] [--as-of T] [--sink-id ID] "
    "[--sink-version N] [--compression zstd|snappy|gzip|none] [--target-file-size BYTES] "
    "[--close] [--new-sink] [--resume-from FRONTIER] [--metrics-addr HOST:PORT]";

#define MAX_WARNINGS 20

typedef struct run {
    floe_sink *sink;
    floe_error *err;
    cli_lines *lines;
    metrics_server *metrics;
    const char *input;
    bool progress, close;
    uint64_t warnings;
    uint64_t started_ns, last_progress_ns;
} run;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_warning(void *ctx, const char *msg)
{
    run *r = ctx;
    if (++r->warnings <= MAX_WARNINGS)
        fprintf(stderr, "%sfloe: warning: %s\n", r->progress ? "\r\033[K" : "", msg);
    else if (r->warnings == MAX_WARNINGS + 1)
        fprintf(stderr, "floe: warning: further warnings are counted, not shown\n");
}

static void frontier_text(int empty, uint64_t t, char *buf, size_t n)
{
    if (empty)
        snprintf(buf, n, "[]");
    else
        snprintf(buf, n, "[%" PRIu64 "]", t);
}

static void show_progress(run *r, bool final)
{
    floe_sink_stats st;
    floe_sink_stats_get(r->sink, &st);
    double secs = (double)(now_ns() - r->started_ns) / 1e9;
    char in[32], done[32] = "none", lag[48] = "";
    frontier_text(st.input_frontier_empty, st.input_frontier, in, sizeof in);
    if (st.has_committed_frontier)
        frontier_text(st.committed_frontier_empty, st.committed_frontier, done, sizeof done);
    if (st.has_committed_frontier && !st.input_frontier_empty && !st.committed_frontier_empty &&
        st.input_frontier >= st.committed_frontier)
        snprintf(lag, sizeof lag, ", lag %" PRIu64, st.input_frontier - st.committed_frontier);
    fprintf(stderr,
            "%sfloe: %" PRIu64 " updates in (%.0f/s), %" PRIu64 " stashed, %" PRIu64
            " snapshots committed, frontier %s, committed %s%s%s",
            r->progress && !final ? "\r\033[K" : "", st.updates_in,
            secs > 0 ? (double)st.updates_in / secs : 0.0, st.updates_stashed,
            st.snapshots_committed, in, done, lag, final || !r->progress ? "\n" : "");
}

static void maybe_progress(run *r)
{
    uint64_t t = now_ns();
    if (r->progress && t - r->last_progress_ns > 1000000000u) {
        r->last_progress_ns = t;
        show_progress(r, false);
    }
}

static void on_commit(void *ctx, const char *frontier, int64_t snapshot_id)
{
    (void)frontier;
    (void)snapshot_id;
    maybe_progress(ctx);
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
        fprintf(stderr, "floe: --mode must be upsert or append, not '%s'\n", v);
        return -1;
    }
    return 0;
}

static int options(const cli_opt *opts, floe_sink_options *o, run *r, char **schema_text)
{
    floe_sink_options_init(o);
    o->table = cli_get(opts, "table");
    o->key = cli_get(opts, "key");
    cli_connect_options(opts, &o->connect);
    o->sink_id = cli_get(opts, "sink-id");
    o->spill_dir = cli_get(opts, "spill-dir");
    o->resume_from = cli_get(opts, "resume-from");
    o->new_sink = cli_has(opts, "new-sink");
    o->on_warning = on_warning;
    o->warning_ctx = r;
    o->on_commit = on_commit;
    o->commit_ctx = r;
    size_t mem = 0;
    const char *codec = cli_get(opts, "compression");
    if (codec) {
        int c = floe_compression_from_name(codec);
        if (c < 0) {
            fprintf(stderr, "floe: unknown compression '%s' (zstd, snappy, gzip, none)\n", codec);
            return -1;
        }
        o->compression = (floe_compression)c;
    }
    size_t target = 0;
    if (parse_mode(cli_get(opts, "mode"), &o->mode) != 0 ||
        cli_duration_opt(opts, "commit-interval", &o->commit_interval) != 0 ||
        cli_u64_opt(opts, "as-of", &o->as_of) != 0 ||
        cli_u64_opt(opts, "sink-version", &o->sink_version) != 0 ||
        cli_size_opt(opts, "target-file-size", &target) != 0 ||
        cli_size_opt(opts, "memory-limit", &mem) != 0)
        return -1;
    if (cli_has(opts, "sink-version") && o->sink_version == 0) {
        fprintf(stderr, "floe: --sink-version must be at least 1\n");
        return -1;
    }
    o->target_file_size = target;
    o->memory_limit = mem;
    if (cli_has(opts, "schema")) {
        *schema_text = cli_schema_text(cli_get(opts, "schema"));
        if (!*schema_text)
            return -1;
        o->schema = *schema_text;
    }
    return 0;
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

static void report_halt(run *r, const char *where)
{
    floe_sink_stats st;
    floe_sink_stats_get(r->sink, &st);
    char done[32] = "none (nothing committed)";
    if (st.has_committed_frontier)
        frontier_text(st.committed_frontier_empty, st.committed_frontier, done, sizeof done);
    fprintf(stderr, "%sfloe: %s: %s\n", r->progress ? "\r\033[K" : "", where,
            floe_error_frame(r->err, 0));
    for (size_t i = 1; i < floe_error_depth(r->err); i++)
        fprintf(stderr, "  caused by: %s\n", floe_error_frame(r->err, i));
    fprintf(stderr, "floe: the table stays at its last committed frontier, %s; run again to "
                    "resume\n", done);
}

static int stream(run *r)
{
    const char *line;
    size_t len, lineno = 0;
    int got;
    while ((got = cli_lines_next(r->lines, &line, &len, &lineno)) == 1) {
        if (blank(line, len))
            continue;
        if (floe_sink_push_json(r->sink, line, len, r->err) != FLOE_OK) {
            char where[4200];
            snprintf(where, sizeof where, "%s:%zu", r->input, lineno);
            report_halt(r, where);
            return -1;
        }
        if ((lineno & 1023) == 0)
            maybe_progress(r);
    }
    if (got < 0)
        return -1;
    int rc = r->close ? floe_sink_finish(r->sink, r->err) : floe_sink_end(r->sink, r->err);
    if (rc != FLOE_OK) {
        report_halt(r, "at the end of the input");
        return -1;
    }
    return 0;
}

int cmd_sink(int argc, char **argv)
{
    cli_opt opts[] = {
        CLI_TABLE_OPTS,
        {"schema", true, "column list or @FILE (may be omitted when the table exists)", NULL},
        {"key", true, "key columns, comma-separated (upsert mode)", NULL},
        {"mode", true, "upsert (default with --key) or append (default without)", NULL},
        {"input", true, "NDJSON change stream; - for stdin (default -)", NULL},
        {"commit-interval", true, "batch width in input time: 500ms, 10s, 2m (default 10s)", NULL},
        {"as-of", true, "time of the initial snapshot (default 0)", NULL},
        {"sink-id", true, "sink identity (default NS.NAME)", NULL},
        {"sink-version", true, "sink version; a newer one fences older ones (default 1)", NULL},
        {"compression", true, "zstd (default), snappy, gzip or none", NULL},
        {"target-file-size", true, "data file roll-over size (default 512m)", NULL},
        {"close", false, "the input is complete: record frontier [] at its end (no later run "
                         "may add updates)", NULL},
        {"new-sink", false, "this sink id is new to a table that already holds rows", NULL},
        {"resume-from", true, "resume at this frontier when the table lost this sink's "
                              "progress (expired history)", NULL},
        {"metrics-addr", true, "serve Prometheus metrics on HOST:PORT", NULL},
        {"memory-limit", true, "updates held in memory before spilling to disk (default 512m)", NULL},
        {"spill-dir", true, "where spilled updates go (default $TMPDIR or /tmp)", NULL},
        {"progress", false, "show progress even when stderr is not a terminal", NULL},
        {"quiet", false, "no progress output", NULL},
        {NULL, false, NULL, NULL},
    };
    int p = cli_parse(argc, argv, opts, USAGE);
    if (p != 0)
        return p > 0 ? 0 : 2;
    if (!cli_has(opts, "table")) {
        fprintf(stderr, "floe sink: --table is required\n");
        cli_usage(stderr, opts, USAGE);
        return 2;
    }
    run r = {0};
    r.input = cli_get(opts, "input") ? cli_get(opts, "input") : "-";
    r.progress = !cli_has(opts, "quiet") && (cli_has(opts, "progress") || isatty(2));
    r.close = cli_has(opts, "close");
    r.started_ns = r.last_progress_ns = now_ns();
    r.err = floe_error_new();
    floe_sink_options o;
    char *schema_text = NULL;
    int status = 1;
    if (!r.err || options(opts, &o, &r, &schema_text) != 0) {
        status = 2;
    } else if (cli_lines_open(r.input, &r.lines) != FLOE_OK) {   /* before anything is made */
        status = 1;
    } else if (floe_sink_open(&o, &r.sink, r.err) != FLOE_OK) {
        cli_report(o.table, r.err);
    } else if (cli_has(opts, "metrics-addr") &&
               !(r.metrics = metrics_server_start(cli_get(opts, "metrics-addr"), r.sink))) {
        status = 1;
    } else {
        if (floe_sink_complete(r.sink))
            fprintf(stderr, "floe: %s already records frontier [] for this sink: its input was "
                            "closed, so only an input without updates is accepted\n", o.table);
        if (floe_sink_resume_frontier(r.sink))
            fprintf(stderr, "floe: resuming %s at frontier %s\n", o.table,
                    floe_sink_resume_frontier(r.sink));
        status = stream(&r) == 0 ? 0 : 1;
        if (status == 0 || !r.progress)
            show_progress(&r, true);
    }
    metrics_server_stop(r.metrics);
    cli_lines_close(r.lines);
    floe_sink_free(r.sink);
    floe_error_free(r.err);
    free(schema_text);
    return status;
}
