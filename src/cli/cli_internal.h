/*
 * cli_internal.h - shared pieces of the floe program: option parsing, line
 * reading, messages on stderr, the status line, stop signals, the metrics
 * endpoint and a small JSON reader.  The program uses only the public API
 * (include/floe.h); nothing here reaches into src/ internals.  Unlike the
 * library, the program may keep process-wide state (the signal thread, the
 * stderr live-line flag): there is one program per process.
 */
#ifndef FLOE_CLI_INTERNAL_H
#define FLOE_CLI_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "floe.h"

/* Exit statuses of every command (README "The floe program"). */
#define CLI_EXIT_OK 0           /* done */
#define CLI_EXIT_FAILED 1       /* the command failed (bad input, storage, catalog...) */
#define CLI_EXIT_USAGE 2        /* bad options: nothing was done */
#define CLI_EXIT_TRANSIENT 75   /* gave up on a failure that may pass (EX_TEMPFAIL): run again */
/* A run stopped by signal N exits with 128 + N (SIGHUP 129, SIGINT 130, SIGTERM 143). */

/* ---- commands and options (args.c) ------------------------------------------ */
typedef struct cli_command {
    const char *name;        /* "sink" */
    const char *usage;       /* the synopsis, starting with "floe NAME" */
    const char *notes;       /* printed after the options by --help; may be NULL */
} cli_command;

typedef struct cli_opt {
    const char *name;        /* without the leading "--" */
    bool takes_value;
    const char *help;        /* one line for --help; never shows a secret's value */
    const char *value;       /* filled by cli_parse: NULL when absent, "" for flags */
} cli_opt;

/* Parse argv (after the command word) against `opts` (terminated by a NULL
 * name).  Accepts "--name value" and "--name=value".  An unknown option is
 * named with the closest known one ("did you mean"), a missing value or a
 * stray argument is named too: one message on stderr, then -1.  "--help"
 * prints the usage, the options and the command's notes on stdout and
 * returns 1; otherwise 0. */
int cli_parse(const cli_command *cmd, int argc, char **argv, cli_opt *opts);
const char *cli_get(const cli_opt *opts, const char *name);
bool cli_has(const cli_opt *opts, const char *name);
void cli_usage(FILE *f, const cli_command *cmd, const cli_opt *opts);
/* Each option of the NULL-terminated `names` must be given: 0, or -1 with
 * a message naming the first missing one. */
int cli_require(const cli_command *cmd, const cli_opt *opts, const char *const *names);
/* Optimal-string-alignment distance (edits: insert, delete, substitute,
 * swap two neighbours) between a[0..alen) and b; capped at 99. */
size_t cli_edit_distance(const char *a, size_t alen, const char *b);
/* Whether `b` is close enough to the typed word a[0..alen) to suggest:
 * a prefix of it, or within an edit distance that grows with the length.
 * *score (lower is better) ranks candidates. */
bool cli_is_close(const char *a, size_t alen, const char *b, size_t *score);

/* A byte count or number option ("1048576", "64k", "1MiB", "512m"): leaves
 * *out unchanged when absent; 0 on success, -1 (reported) when malformed. */
int cli_size_opt(const cli_opt *opts, const char *name, size_t *out);
/* A DURATION of input time ("500ms", "10s", "2m", or a bare number of time
 * units): the count of input time units (milliseconds by default).  0 on
 * success, -1 (reported) when malformed, zero or too large. */
int cli_duration_opt(const cli_opt *opts, const char *name, uint64_t *out);
/* A wall-clock duration ("500ms", "10s", "2m"; a bare number is seconds)
 * in nanoseconds, at most one day; `allow_zero` accepts "0".  Leaves *out
 * unchanged when absent; -1 (reported) when malformed. */
int cli_wall_duration_opt(const cli_opt *opts, const char *name, bool allow_zero,
                          uint64_t *out_ns);
/* An age of wall-clock time ("500ms", "30s", "10m", "6h", "7d"; a bare
 * number counts seconds) in milliseconds; leaves *out_ms unchanged when
 * absent; -1 (reported) when malformed. */
int cli_age_opt(const cli_opt *opts, const char *name, int64_t *out_ms);
/* Every value of option `name` given (in order) into out[0..cap), for
 * options that may repeat; argv as cli_parse accepted it.  Returns how many. */
size_t cli_get_all(const cli_opt *opts, int argc, char **argv, const char *name,
                   const char **out, size_t cap);
/* An unsigned integer option; leaves *out unchanged when absent. */
int cli_u64_opt(const cli_opt *opts, const char *name, uint64_t *out);

/* The column list of --schema: the text itself, or the contents of FILE for
 * "@FILE" (caller frees).  NULL with a message printed on error. */
char *cli_schema_text(const char *arg);

/* ---- messages on stderr (status_line.c) -------------------------------------
 * Every message of the program goes through cli_say so that it never lands
 * glued to the live status line on a terminal: the line is cleared first
 * and redrawn at the next tick.  Safe from any thread. */
void cli_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The error chain of `err` as "frame: frame: frame", frames that repeat
 * their neighbour (one a prefix of the other) printed once. */
void cli_chain(const floe_error *err, char *buf, size_t cap);
/* Print "floe: <what>: <error chain>". */
void cli_report(const char *what, const floe_error *err);
/* A warning of the library's (from any thread): "floe: warning: ..." for
 * the first 20 a command gets, counted in *count, then one line saying the
 * rest are only counted. */
void cli_warning(_Atomic uint64_t *count, const char *msg);

/* ---- the status line of `floe sink` (status_line.c) ----------------------------
 * TTY: one live line, redrawn in place every `interval` by a thread of its
 * own (so it moves while the input is idle), cleared before any message;
 * PLAIN (stderr is not a terminal): an ordinary line every `interval`, no
 * carriage returns or escape codes. */
typedef enum cli_status_mode { CLI_STATUS_QUIET, CLI_STATUS_TTY, CLI_STATUS_PLAIN } cli_status_mode;
typedef struct cli_status cli_status;
/* The status options every streaming command shares: the mode (--quiet,
 * else TTY when stderr is a terminal other than TERM=dumb, else PLAIN),
 * its interval (1 s on a terminal, 10 s otherwise; --progress-interval)
 * and, when linger_ns is not NULL, --metrics-linger (which needs
 * --metrics-addr).  0, or -1 (reported) for a malformed one. */
int cli_status_options(const cli_opt *opts, cli_status_mode *mode, uint64_t *interval_ns,
                       uint64_t *linger_ns);
/* Start the clock thread for `sink` (which must outlive cli_status_stop).
 * NULL for QUIET, or when the thread cannot start (then no status). */
cli_status *cli_status_start(cli_status_mode mode, uint64_t interval_ns, const floe_sink *sink);
/* The same with a function that writes the line's text after "floe: " (called
 * from the clock thread, with the seconds since the start; ctx must outlive
 * cli_status_stop). */
typedef void (*cli_line_fn)(void *ctx, double elapsed, char *buf, size_t cap);
cli_status *cli_status_start_fn(cli_status_mode mode, uint64_t interval_ns, cli_line_fn fn,
                                void *ctx);
/* "12s", "3m05s", "1h02m". */
void cli_elapsed_text(uint64_t ns, char *buf, size_t cap);
/* Stop the thread and clear the live line.  Accepts NULL. */
void cli_status_stop(cli_status *s);
/* "[t]", "[]" of a frontier. */
void cli_frontier_text(int empty, uint64_t t, char *buf, size_t cap);
/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t cli_now_ns(void);

/* ---- stop signals (stop_signals.c) ----------------------------------------------
 * SIGTERM, SIGINT and SIGHUP ask a command to stop.  cli_signals_start
 * blocks them in the calling thread (and so in every thread started after
 * it, the library's included) and waits for them in a thread of its own;
 * the first one is recorded and wakes cli_signals_fd; a second one while
 * stopping takes the signal's default action (the process ends at once).
 * SIGPIPE is ignored (a scrape client that hangs up cannot kill the sink).
 * Call it from the main thread before any other thread starts. */
int cli_signals_start(void);
/* A streaming command's start: its options parsed (cli_parse) and the stop
 * signals set up.  -1 to go on, else the exit status to return (help
 * printed: 0; bad options: 2; the signals: 1, said). */
int cli_begin(const cli_command *cmd, int argc, char **argv, cli_opt *opts);
/* The first stop signal received, 0 while there is none.  Asking marks it
 * seen: a command that has not asked within a second of the signal (it is
 * inside a long library call) gets a notice printed for it. */
int cli_signals_caught(void);
/* Readable once a stop signal came (for poll); -1 before cli_signals_start. */
int cli_signals_fd(void);
/* Sleep `ns`, or less if a stop signal comes (or came already). */
void cli_signals_wait(uint64_t ns);
/* "SIGTERM", "SIGINT", "SIGHUP", or "signal N". */
const char *cli_signal_name(int sig, char *buf, size_t cap);

/* ---- catalogs and tables (table_opts.c) -----------------------------------------
 * The options every table command shares (CLI_TABLE_OPTS expands to their
 * cli_opt entries): --table and where the table lives.  Secrets are best
 * passed in the environment (see floe.h), which every option falls back to. */
/* The spec of a table a command creates (append, sink): the library
 * parses it at creation (the "floe.partition-by" creation property). */
#define CLI_PARTITION_BY_OPT                                                               \
    {"partition-by", true, "partition a table created here: \"day(ts), bucket(16, id), "   \
                           "truncate(4, name), id\" (Spark's DDL transforms)", NULL}
#define CLI_TABLE_OPTS                                                                     \
    {"table", true, "the table, NS.NAME (required)", NULL},                               \
    CLI_CATALOG_OPTS
/* Where tables live: the catalog and the storage (no --table). */
#define CLI_CATALOG_OPTS                                                                   \
    {"catalog", true, "catalog URI: sqlite:PATH, sqlite:///PATH or http(s)://... "         \
                      "(default sqlite:warehouse/catalog.db; env FLOE_CATALOG)", NULL},    \
    {"warehouse", true, "where new tables go: a path, file:// or s3:// URI "              \
                        "(default ./warehouse; env FLOE_WAREHOUSE)", NULL},               \
    {"catalog-name", true, "the catalog's name, as other readers open it (default floe)",  \
     NULL},                                                                                \
    {"catalog-token", true, "REST catalog bearer token (env FLOE_CATALOG_TOKEN)", NULL},   \
    {"catalog-credential", true, "REST catalog OAuth2 client id:secret "                   \
                                 "(env FLOE_CATALOG_CREDENTIAL)", NULL},                   \
    {"catalog-oauth2-uri", true, "OAuth2 token endpoint (default CATALOG/v1/oauth/tokens)", \
     NULL},                                                                                \
    {"catalog-scope", true, "OAuth2 scope (default catalog)", NULL},                        \
    {"catalog-sigv4-region", true, "sign REST catalog requests with SigV4 for this region", \
     NULL},                                                                                \
    {"s3-endpoint", true, "S3 endpoint URL (env AWS_ENDPOINT_URL_S3)", NULL},               \
    {"s3-region", true, "S3 region (env AWS_REGION)", NULL},                               \
    {"s3-path-style", false, "address S3 buckets path-style", NULL},                       \
    {"ca-file", true, "trust this CA bundle (PEM) too (env FLOE_CA_FILE)", NULL}
/* The options of table maintenance while a sink runs (floe sink, floe pg). */
#define CLI_MAINTAIN_OPTS                                                                  \
    {"maintain", true, "table maintenance while the sink runs: auto (default: compaction, " \
                       "snapshot expiry, orphan removal) or off (env FLOE_MAINTAIN)", NULL},    \
    {"maintain-budget", true, "share of wall time maintenance may use: 0.2 (default) or "  \
                              "20%", NULL},                                                 \
    {"orphan-age", true, "orphan files older than this are removed (default 1d)", NULL},    \
    {"orphan-interval", true, "look for orphan files this often (default 1h; 0: never)", NULL}, \
    {"maintain-final", true, "when the run ends, compact what is still due for at most this " \
                             "long (default 10s; 0: never)", NULL}
/* How long a commit other writers keep beating goes on (cli_sink_numbers). */
#define CLI_COMMIT_TIMEOUT_OPT                                                             \
    {"commit-timeout", true, "how long a commit that other writers (a compactor) keep "    \
                             "beating is rebased and tried again before the run gives up " \
                             "(default 10m)", NULL}
/* The status and metrics options of the sources' commands. */
#define CLI_STATUS_OPTS                                                                    \
    {"metrics-addr", true, "serve /metrics and /health on HOST:PORT", NULL},               \
    {"progress-interval", true, "redraw the status line this often", NULL},                \
    {"quiet", false, "no status line, notices or summary (errors and warnings shown)",     \
     NULL}
/* The sink options the sources (floe pg, floe kafka) take for every table
 * (besides --memory-limit and --spill-dir, which each says its own way). */
#define CLI_SOURCE_SINK_OPTS                                                               \
    {"compression", true, "zstd, snappy, gzip or none (default: the table's "              \
                          "write.parquet.compression-codec, else zstd)", NULL},            \
    {"target-file-size", true, "data file roll-over size (default 512m)", NULL},            \
    {"delete-mode", true, "position (default) or equality", NULL},                          \
    CLI_MAINTAIN_OPTS,                                                                     \
    {"format-version", true, "Iceberg format of tables floe creates: 2 (default) or 3",    \
     NULL},                                                                                \
    {"index-dir", true, "where the key indexes are kept between runs", NULL},              \
    CLI_COMMIT_TIMEOUT_OPT,                                                                \
    {"sink-version", true, "sink version; a newer one fences older ones (default 1)", NULL}
/* Those options into `o`: 0, or -1 (reported) when one is malformed. */
int cli_maintain_opts(const cli_opt *opts, floe_sink_options *o);
/* The sink options every streaming command takes (floe sink, and the
 * sources floe pg and floe kafka through CLI_SOURCE_SINK_OPTS):
 * --compression, --delete-mode, --target-file-size, --memory-limit,
 * --sink-version (at least 1), --format-version (2 or 3), --commit-timeout
 * and the maintenance options, into `o`, by one set of rules: 0, or -1 (reported)
 * when one is malformed. */
int cli_sink_numbers(const cli_opt *opts, floe_sink_options *o);
/* A source's options for every table's sink: `o` set up, its connect
 * options (into `connect`, which o->connect points to), --index-dir,
 * --spill-dir, the warning callback and cli_sink_numbers's. */
int cli_source_sink_options(const cli_opt *opts, floe_sink_options *o,
                            floe_connect_options *connect,
                            void (*on_warning)(void *ctx, const char *message), void *ctx);
/* Fill `o` from those options (pointers into argv). */
void cli_connect_options(const cli_opt *opts, floe_connect_options *o);
/* Open the catalog the options name (must_exist: never create one);
 * reports failures on stderr. */
int cli_open_catalog(const cli_opt *opts, bool must_exist, floe_catalog **out, floe_error *err);
/* A table's debt as one JSON object on stdout (floe inspect, floe maintain). */
void cli_debt_json(const floe_table_debt *d);
/* ---- JSON (cli_json.c, over jansson) ---- */
/* Write s as a JSON string (quoted, escaped) to f; null when s is not UTF-8
 * (never the case for what floe.h hands out: Iceberg metadata is UTF-8). */
void cli_json_string(FILE *f, const char *s);
/* The string value of member `key` of obj, NULL when absent or not a string. */
const char *cli_json_str(const json_t *obj, const char *key);
/* The text of a scalar: a string's value, or a number's, boolean's or
 * null's JSON text written into buf; NULL when x is NULL or its text does
 * not fit. */
const char *cli_json_text(const json_t *x, char *buf, size_t cap);

/* ---- line reading (lines.c) ----------------------------------------------------
 * Reads a file (or stdin for "-") in large blocks and hands out lines without
 * copying when they lie inside one block.  Lines may be any length up to a
 * hard limit. */
typedef struct cli_lines cli_lines;
/* Open PATH ("-" = stdin); a failure is reported on stderr. */
int cli_lines_open(const char *path, cli_lines **out);
/* Also wait on `fd` while waiting for input: once it is readable, reading
 * stops (cli_lines_next returns -2).  For the stop-signal descriptor. */
void cli_lines_wake_on(cli_lines *r, int fd);
/* Next line (without its '\n' or "\r\n"): 1 with *line and *len set, 0 at end of
 * input, -1 on a read error or an over-long line (reported on stderr), -2
 * when the wake descriptor became readable.  The line stays valid until the
 * next call.  *lineno counts from 1. */
int cli_lines_next(cli_lines *r, const char **line, size_t *len, size_t *lineno);
/* The name the input is reported by: PATH, or "<stdin>". */
const char *cli_lines_name(const cli_lines *r);
void cli_lines_close(cli_lines *r);
/* Whether the line holds only blanks (skipped by every command). */
bool cli_blank(const char *s, size_t n);

/* ---- the metrics endpoint (metrics_server.c) ----------------------------------
 * GET /metrics (Prometheus text from floe_sink_metrics) and GET /health,
 * each connection served by a thread of its own (at most a few at once,
 * each bounded in time), so a silent client delays no one. */
typedef struct metrics_server metrics_server;
/* Check ADDR (HOST:PORT, [IPv6]:PORT or :PORT for every interface; port
 * 1-65535), listen on it and start serving: /health and /metrics answer 503
 * "starting" until metrics_server_attach.  NULL (reported) when the address
 * is malformed (*usage_error set) or cannot be listened on. */
metrics_server *metrics_server_start(const char *addr, bool *usage_error);
/* Serve /metrics of `sink` from now on; /health answers 200 "ok".  The sink
 * must outlive the server (stop the server first). */
void metrics_server_attach(metrics_server *m, const floe_sink *sink);
/* The same with a function that makes the text (called from the server's
 * threads; ctx must outlive the server). */
typedef int (*cli_metrics_fn)(void *ctx, char **text, floe_error *err);
void metrics_server_attach_fn(metrics_server *m, cli_metrics_fn fn, void *ctx);
/* While /health would answer 200, ask fn (with the attach_fn ctx): another
 * status makes it 503 with fn's text (e.g. "reconnecting"). */
typedef int (*cli_health_fn)(void *ctx, char *text, size_t cap);
void metrics_server_health_fn(metrics_server *m, cli_health_fn fn);
/* /health answers `status` (200 or 503) with the text (printf format;
 * truncated to 1 KiB) from now on.  Accepts NULL m. */
void metrics_server_health(metrics_server *m, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Stop serving, end every connection, join the threads.  Accepts NULL. */
void metrics_server_stop(metrics_server *m);

/* ---- what `floe inspect` shows (inspect.c builds it; inspect_text.c and
 * inspect_json.c print it) ------------------------------------------------------ */
typedef struct inspect_snap {
    floe_snapshot_info info;
    size_t index;                 /* in the table's snapshot list */
    bool on_main;                 /* the current snapshot or one of its ancestors */
} inspect_snap;

typedef struct inspect_sink {
    const char *id;               /* in inspect_view.sink_ids */
    floe_sink_progress progress;
    const inspect_snap *snap;     /* the snapshot recording its progress, or NULL */
    /* A sink fed by a Postgres slot (floe pg): its summary's floe.pg.*. */
    const char *pg_table, *pg_slot, *pg_database, *pg_publication, *pg_confirmed;
    char pg_frontier_lsn[24];     /* the frontier as an LSN ("" when none) */
    bool pg_live;                 /* --source: the slot as the server reports it now */
    floe_pg_slot_info pg_slot_now;
    char pg_error[512];           /* --source: why the slot could not be read */
} inspect_sink;

typedef struct inspect_live {
    bool known;                   /* the current snapshot's summary has the totals */
    bool exact;                   /* no equality deletes: the count is exact */
    uint64_t rows, records, position_deletes, equality_deletes;
} inspect_live;

typedef struct inspect_view {
    const floe_table *table;
    const char *ident;
    int64_t current;              /* main's snapshot, -1 when none */
    inspect_snap *snaps;          /* every snapshot, by sequence number */
    size_t n_snaps;
    size_t first;                 /* the first one shown (the last --limit) */
    uint64_t limit;               /* 0: all */
    const char *pg_source;        /* --source: read the slots of Postgres-fed sinks live */
    char **sink_ids;              /* floe_table_sink_ids */
    inspect_sink *sinks;
    size_t n_sinks;
    char *schema_json;            /* floe_schema_to_json of the table's schema */
    json_t *schema;               /* parsed; NULL when it could not be */
    char *specs_json;             /* floe_table_partition_specs */
    json_t *specs;                /* parsed; NULL when it could not be */
    inspect_live live;
    bool debt_known;              /* floe_table_debt_get worked (it reads manifests) */
    floe_table_debt debt;
    char *parts_json;             /* floe_table_partition_debt, the worst ten */
    json_t *parts;                /* parsed; NULL when it could not be */
} inspect_view;

/* A summary property of a snapshot, NULL when absent. */
const char *inspect_prop(const inspect_view *v, const inspect_snap *s, const char *key);
/* The refs pointing at a snapshot that floe.h tells of: "main" and the
 * sinks' "floe-<id>" tags, comma-separated into buf ("" when none). */
void inspect_refs(const inspect_view *v, const inspect_snap *s, char *buf, size_t cap);
/* An Iceberg type (a schema JSON "type" value) as text: "long",
 * "list<string>", "struct<a: int not null, b: string>". */
void inspect_type_text(const json_t *type, char *buf, size_t cap);
/* Milliseconds since the epoch as ISO-8601 UTC, with or without the ms. */
void inspect_time_text(int64_t ms, bool with_ms, char *buf, size_t cap);
void inspect_print_text(const inspect_view *v);
void inspect_print_json(const inspect_view *v);

/* ---- commands --------------------------------------------------------------- */
int cmd_to_parquet(int argc, char **argv);
int cmd_append(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_sink(int argc, char **argv);
int cmd_maintain(int argc, char **argv);
int cmd_pg(int argc, char **argv);
int cmd_kafka(int argc, char **argv);

#endif
