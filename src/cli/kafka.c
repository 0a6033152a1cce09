/*
 * kafka.c - `floe kafka`: Kafka topics into Iceberg tables, exactly once
 * (docs/kafka.md).
 *
 *   floe kafka --brokers HOST:PORT,... --topics T1,T2 | --topic-pattern REGEX
 *              --format debezium|upsert|changes|append [--schema COLUMNS] [--key COLS] [--table NS.NAME | --table-map T=NS.NAME,...]
 *
 * The library does the work (floe_kafka_*): this file turns options into
 * floe_kafka_options, prints notices, warnings and the summary, and maps
 * the outcome to the exit status.  Values of --kafka-property are never
 * printed (they may hold SASL passwords).
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_internal.h"

static const char USAGE[] =
    "floe kafka --brokers HOST:PORT,... --topics T1,T2 | --topic-pattern REGEX "
    "--format debezium|upsert|changes|append [--schema COLUMNS|@FILE] [--key COLS] "
    "[--table NS.NAME] [--table-map TOPIC=NS.NAME,...] [--namespace NS] "
    "[--transaction-topic TOPIC [--txn-memory BYTES]] [--group ID [--member NAME]] "
    "[--kafka-property KEY=VALUE]... [--kafka-columns] "
    "[--on-bad-message fail|skip|dead-letter=TOPIC] [--stop-at end] [--commit-interval DURATION] "
    "[--partition-by SPEC] [--catalog URI] [--warehouse URI] [...]";

static const char NOTES[] =
    "formats:\n"
    "  upsert   the message key is the row's key (a JSON object of the --key columns, or\n"
    "           the bare JSON value of a single key column), the value the whole row (a\n"
    "           JSON object); a null value (a tombstone) deletes the key\n"
    "  append   each value is a row (a JSON object), appended; null values are skipped;\n"
    "           --kafka-columns adds _kafka_partition, _kafka_offset and _kafka_timestamp\n"
    "  changes  each value is one of floe's change records (as floe sink reads them):\n"
    "           updates at their own times, schema, partition-by and truncate records,\n"
    "           and progress records; the table's frontier is the least of its\n"
    "           partitions' progress (every partition must carry progress records);\n"
    "           upsert mode with --key, else append\n"
    "  debezium Debezium's change events (JsonConverter, schema embedded or not): c, r and\n"
    "           u make \"after\" the key's row, d deletes the key, t (TRUNCATE) empties\n"
    "           the table there; values are read by their Debezium logical types; a\n"
    "           column an event's schema adds is added to the table.  A table that\n"
    "           does not exist is made from the first event: its columns from the\n"
    "           event's embedded schema (unless --schema), its key from the message\n"
    "           key's (unless --key)\n"
    "\n"
    "tables:\n"
    "  Each topic (--topics, or every topic matching --topic-pattern, a POSIX extended\n"
    "  regular expression over the whole name, new ones included) goes to its own\n"
    "  Iceberg table, NAMESPACE.TOPIC (--namespace, default\n"
    "  kafka; dots in TOPIC become underscores), unless --table (one topic) or\n"
    "  --table-map names it.  A table floe creates takes the columns of --schema; an\n"
    "  existing one keeps its own.  Each table records its key columns: a rerun needs\n"
    "  no --key.\n"
    "\n"
    "exactly once:\n"
    "  Every --commit-interval (wall clock) each table with new messages commits one\n"
    "  snapshot recording, for every partition of its topic, the next offset to read\n"
    "  (summary property floe.kafka.offsets, with the cluster id).  A rerun seeks there:\n"
    "  kill it at any moment and run the same command again; nothing is lost or doubled.\n"
    "  The consumer group's offsets (--group) are committed after each snapshot, for\n"
    "  monitoring only.  A table fed from another cluster, or whose offsets the topic no\n"
    "  longer holds (deleted and created again, or deleted by retention), is refused:\n"
    "  read the topic as it now is into another table (--table, --table-map).\n"
    "\n"
    "source transactions:\n"
    "  With Debezium's provide.transaction.metadata, --transaction-topic PREFIX.transaction\n"
    "  (the topics read being PREFIX.SCHEMA.TABLE) holds each event until its\n"
    "  transaction has ended and all its events in every topic read have arrived, and\n"
    "  gives whole transactions to the tables in the order they ended: every snapshot\n"
    "  of every table holds whole source transactions, and the tables of one commit\n"
    "  round stand at the same transaction.  Not with --member or --topic-pattern.\n"
    "\n"
    "scaling out:\n"
    "  Processes given the same --group and each its own --member NAME share the topics'\n"
    "  partitions (Kafka assigns them; NAME is the static group.instance.id, so a member\n"
    "  restarted under its name gets its partitions back at once).  Each writes the\n"
    "  tables through its own sink id (kafka:TOPIC@NAME); every commit records the\n"
    "  offsets of all the topic's partitions, and lands only while the table records,\n"
    "  for each partition the member reads, the offset it started at: a member that\n"
    "  lost a partition can never commit it twice.  Revoked partitions are committed\n"
    "  first.  The member that maintains a table is elected through the table (a lease\n"
    "  each commit renews).\n"
    "\n"
    "bad messages:\n"
    "  A message that does not parse halts the run, naming topic, partition and offset;\n"
    "  --on-bad-message skip passes over it, dead-letter=TOPIC copies it first to TOPIC\n"
    "  (headers floe.topic, floe.partition, floe.offset, floe.error), acknowledged by\n"
    "  the brokers before the commit that passes over it.\n"
    "\n"
    "exit status:\n"
    "  0    --stop-at end was reached: everything read is committed\n"
    "  1    the run halted (the message says why); tables stay at their last commits\n"
    "  2    bad options: nothing was created\n"
    "  75   a failure that may pass (brokers or catalog unreachable): run it again\n"
    "  129, 130, 143   stopped by SIGHUP, SIGINT, SIGTERM (what was read is committed first)\n";

static const cli_command CMD = {"kafka", USAGE, NOTES};

#define MAX_PROPERTIES 64

typedef struct run {
    floe_kafka *k;
    floe_error *err;
    bool quiet;
    uint64_t started_ns;
    _Atomic uint64_t warnings;
    cli_status_mode mode;
    uint64_t interval_ns;
    cli_status *status;
    metrics_server *metrics;
    uint64_t last_messages;         /* of the status line before */
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
    if (!r->quiet)
        cli_say("floe: %s\n", msg);
}

/* --kafka-property K=V (repeated) into {"K", "V", ..., NULL}, pointing into
 * argv (cut at '='). */
static int kafka_properties(const cli_opt *opts, int argc, char **argv, const char **out)
{
    const char *given[MAX_PROPERTIES];
    size_t n = cli_get_all(opts, argc, argv, "kafka-property", given, MAX_PROPERTIES);
    if (n >= MAX_PROPERTIES) {
        cli_say("floe: at most %d --kafka-property options\n", MAX_PROPERTIES - 1);
        return -1;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        char *eq = strchr(given[i], '=');
        if (!eq || eq == given[i]) {
            cli_say("floe: --kafka-property takes KEY=VALUE (the value is not shown)\n");
            return -1;
        }
        *eq = 0;                            /* argv is ours to cut */
        out[m++] = given[i];
        out[m++] = eq + 1;
    }
    out[m] = NULL;
    return 0;
}

static int options(const cli_opt *opts, int argc, char **argv, floe_kafka_options *o,
                   const char **props, char **map, run *r)
{
    floe_kafka_options_init(o, sizeof *o);
    static const char *const required[] = {"brokers", "format", NULL};
    if (cli_require(&CMD, opts, required) != 0)
        return -1;
    o->brokers = cli_get(opts, "brokers");
    o->topics = cli_get(opts, "topics");
    o->topic_pattern = cli_get(opts, "topic-pattern");
    if (!o->topics == !o->topic_pattern) {
        cli_say("floe: give the topics to read: --topics T1,T2 or --topic-pattern REGEX (one "
                "of them)\n");
        return -1;
    }
    const char *f = cli_get(opts, "format");
    if (strcmp(f, "upsert") == 0) {
        o->format = FLOE_KAFKA_UPSERT;
    } else if (strcmp(f, "append") == 0) {
        o->format = FLOE_KAFKA_APPEND;
    } else if (strcmp(f, "debezium") == 0) {
        o->format = FLOE_KAFKA_DEBEZIUM;
    } else if (strcmp(f, "changes") == 0) {
        o->format = FLOE_KAFKA_CHANGES;
    } else {
        cli_say("floe: --format must be debezium, upsert, changes or append, not '%s'\n", f);
        return -1;
    }
    o->namespace_name = cli_get(opts, "namespace");
    o->table_map = cli_get(opts, "table-map");
    const char *table = cli_get(opts, "table");
    if (table) {
        if (o->table_map || !o->topics || strchr(o->topics, ',')) {
            cli_say("floe: --table names the table of a single topic; with several, use "
                    "--table-map TOPIC=NS.NAME,...\n");
            return -1;
        }
        size_t n = strlen(o->topics) + strlen(table) + 2;
        if (!(*map = malloc(n)))
            return -1;
        snprintf(*map, n, "%s=%s", o->topics, table);
        o->table_map = *map;
    }
    o->transaction_topic = cli_get(opts, "transaction-topic");
    if (cli_size_opt(opts, "txn-memory", &o->txn_memory) != 0)
        return -1;
    if (cli_has(opts, "txn-memory") && !o->transaction_topic) {
        cli_say("floe: --txn-memory bounds the events held for --transaction-topic: give "
                "that too\n");
        return -1;
    }
    if (o->transaction_topic && o->format != FLOE_KAFKA_DEBEZIUM) {
        cli_say("floe: --transaction-topic is Debezium's transaction metadata: it goes with "
                "--format debezium\n");
        return -1;
    }
    o->group = cli_get(opts, "group");
    o->member = cli_get(opts, "member");
    if (o->member && !o->group) {
        cli_say("floe: --member NAME shares the partitions with the other members of a group: "
                "name it (--group ID)\n");
        return -1;
    }
    const char *bad = cli_get(opts, "on-bad-message");
    const char *dlq = "dead-letter=";
    if (!bad || strcmp(bad, "fail") == 0) {
        o->on_bad_message = FLOE_KAFKA_BAD_FAIL;
    } else if (strcmp(bad, "skip") == 0) {
        o->on_bad_message = FLOE_KAFKA_BAD_SKIP;
    } else if (strncmp(bad, dlq, strlen(dlq)) == 0 && bad[strlen(dlq)]) {
        o->on_bad_message = FLOE_KAFKA_BAD_DEAD_LETTER;
        o->dead_letter_topic = bad + strlen(dlq);
    } else {
        cli_say("floe: --on-bad-message must be fail, skip or dead-letter=TOPIC, not '%s'\n",
                bad);
        return -1;
    }
    o->kafka_columns = cli_has(opts, "kafka-columns");
    if (o->kafka_columns && o->format != FLOE_KAFKA_APPEND) {
        cli_say("floe: --kafka-columns is for the append format (the others keep one row per "
                "key)\n");
        return -1;
    }
    const char *stop = cli_get(opts, "stop-at");
    if (stop && strcmp(stop, "end") != 0) {
        cli_say("floe: --stop-at takes 'end' (every partition's end when floe starts), not "
                "'%s'\n", stop);
        return -1;
    }
    o->stop_at_end = stop != NULL;
    uint64_t ns = 0;
    if (cli_wall_duration_opt(opts, "commit-interval", false, &ns) != 0)
        return -1;
    o->commit_interval_ms = ns ? (ns / 1000000u ? ns / 1000000u : 1) : 0;
    ns = 0;
    if (cli_wall_duration_opt(opts, "timeout", false, &ns) != 0)
        return -1;
    o->timeout_ms = ns / 1000000u;
    ns = 0;
    if (cli_wall_duration_opt(opts, "topic-refresh", false, &ns) != 0)
        return -1;
    if (ns && !o->topic_pattern) {
        cli_say("floe: --topic-refresh is for --topic-pattern\n");
        return -1;
    }
    o->topic_refresh_ms = ns ? (ns / 1000000u ? ns / 1000000u : 1) : 0;
    if (kafka_properties(opts, argc, argv, props) != 0)
        return -1;
    o->kafka_properties = props;
    o->on_notice = on_notice;
    o->notice_ctx = r;
    o->stop_fd = cli_signals_fd();
    o->sink = &r->sink;
    if (cli_source_sink_options(opts, &r->sink, &r->connect, on_warning, r) != 0)
        return -1;
    r->sink.key = cli_get(opts, "key");
    r->sink.partition_by = cli_get(opts, "partition-by");
    if (cli_status_options(opts, &r->mode, &r->interval_ns, NULL) != 0)
        return -1;
    if (o->format == FLOE_KAFKA_CHANGES && !r->sink.key && cli_has(opts, "delete-mode")) {
        cli_say("floe: --delete-mode is for upsert mode: the changes format takes it with "
                "--key\n");
        return -1;
    }
    if (o->format == FLOE_KAFKA_APPEND && (r->sink.key || cli_has(opts, "delete-mode"))) {
        cli_say("floe: the append format takes neither --key nor --delete-mode (it writes no "
                "deletes)\n");
        return -1;
    }
    r->quiet = cli_has(opts, "quiet");
    return 0;
}

/* The status line: messages read and their rate, snapshots, the lag. */
static void status_text(void *ctx, double secs, char *buf, size_t cap)
{
    run *r = ctx;
    floe_kafka_stats st;
    floe_kafka_stats_get(r->k, &st, sizeof st);
    char when[32];
    cli_elapsed_text((uint64_t)(secs * 1e9), when, sizeof when);
    double dt = secs - r->last_secs;
    double rate = dt > 0 ? (double)(st.messages - r->last_messages) / dt : 0.0;
    r->last_messages = st.messages;
    r->last_secs = secs;
    snprintf(buf, cap, "%s: %" PRIu64 " messages (%.0f/s) from %" PRIu64 " partitions, %" PRIu64
             " snapshots, lag %" PRIu64 " messages", when, st.messages, rate, st.partitions,
             st.snapshots_committed, st.lag_messages);
}

static int metrics_text(void *ctx, char **text, floe_error *err)
{
    return floe_kafka_metrics(ctx, text, err);
}

static void report_halt(run *r)
{
    char chain[16384];
    cli_chain(r->err, chain, sizeof chain);
    metrics_server_health(r->metrics, 503, "halted: %s", chain);
    cli_say("floe: kafka: %s\n", chain);
    if (floe_error_retryable(r->err))
        cli_say("floe: this may be transient: run the same command again (each table resumes "
                "at its last commit)\n");
    else
        cli_say("floe: fix the cause and run the same command again: each table stays at its "
                "last commit (nothing after it is visible)\n");
}

static void report_done(run *r, const char *how)
{
    if (r->quiet)
        return;
    floe_kafka_stats st;
    floe_kafka_stats_get(r->k, &st, sizeof st);
    double secs = (double)(cli_now_ns() - r->started_ns) / 1e9;
    char bad[160] = "";
    if (st.bad_messages)
        snprintf(bad, sizeof bad, ", %" PRIu64 " bad messages skipped", st.bad_messages);
    if (st.truncates || st.schema_changes)
        snprintf(bad + strlen(bad), sizeof bad - strlen(bad), ", %" PRIu64 " truncates, %"
                 PRIu64 " schema changes", st.truncates, st.schema_changes);
    cli_say("floe: %s in %.1fs: %" PRIu64 " messages from %" PRIu64 " partitions of %" PRIu64
            " topics (%" PRIu64 " tombstones%s), %" PRIu64 " snapshots; everything read is "
            "committed\n", how, secs, st.messages, st.partitions, st.topics, st.tombstones, bad,
            st.snapshots_committed);
}

static int open_and_run(run *r, const cli_opt *opts, const floe_kafka_options *o)
{
    const char *addr = cli_get(opts, "metrics-addr");
    bool usage = false;
    if (addr && !(r->metrics = metrics_server_start(addr, &usage)))
        return usage ? CLI_EXIT_USAGE : CLI_EXIT_FAILED;
    r->started_ns = cli_now_ns();
    if (floe_kafka_open(o, &r->k, r->err) != FLOE_OK) {
        report_halt(r);
        return floe_error_code(r->err) == FLOE_EINVAL ? CLI_EXIT_USAGE
               : floe_error_retryable(r->err)          ? CLI_EXIT_TRANSIENT
                                                       : CLI_EXIT_FAILED;
    }
    metrics_server_attach_fn(r->metrics, metrics_text, r->k);
    r->status = cli_status_start_fn(r->mode, r->interval_ns, status_text, r);
    int rc = floe_kafka_run(r->k, r->err);
    cli_status_stop(r->status);
    r->status = NULL;
    if (rc == FLOE_OK)
        metrics_server_health(r->metrics, 200, "finished");
    if (rc == FLOE_EINTERRUPTED && cli_signals_caught()) {
        char buf[32];
        int sig = cli_signals_caught();
        report_done(r, cli_signal_name(sig, buf, sizeof buf));
        return 128 + sig;
    }
    if (rc != FLOE_OK) {
        report_halt(r);
        return floe_error_retryable(r->err) ? CLI_EXIT_TRANSIENT : CLI_EXIT_FAILED;
    }
    report_done(r, "done");
    return CLI_EXIT_OK;
}

int cmd_kafka(int argc, char **argv)
{
    cli_opt opts[] = {
        {"brokers", true, "bootstrap brokers, HOST:PORT,... (required)", NULL},
        {"topics", true, "topics to read, T1,T2 (this or --topic-pattern)", NULL},
        {"topic-pattern", true, "read every topic whose name matches this POSIX extended "
                                "regular expression, new ones too", NULL},
        {"topic-refresh", true, "how often --topic-pattern looks for new topics (default "
                                "30s)", NULL},
        {"format", true, "debezium, upsert, changes or append (required; see below)", NULL},
        {"schema", true, "columns of tables floe creates, or @FILE (default: the table's)",
         NULL},
        {"key", true, "key columns, a,b (upsert, debezium, changes; default: those the "
                       "table records)", NULL},
        {"table", true, "the Iceberg table of the one topic, NS.NAME", NULL},
        {"table-map", true, "Iceberg tables of topics, TOPIC=NS.NAME,...", NULL},
        {"namespace", true, "Iceberg namespace of the tables (default kafka)", NULL},
        {"transaction-topic", true, "debezium: Debezium's transaction metadata topic, "
                                    "PREFIX.transaction: every snapshot holds whole source "
                                    "transactions (see below)", NULL},
        {"txn-memory", true, "with --transaction-topic: the most bytes of events held "
                             "until their transactions are whole (default 1g)", NULL},
        {"group", true, "consumer group whose offsets follow the commits (default floe)",
         NULL},
        {"member", true, "share the partitions with the other members of --group as member "
                         "NAME (stable across restarts; see below)", NULL},
        {"kafka-property", true, "a librdkafka setting KEY=VALUE (security.protocol, sasl.*, "
                                 "ssl.*, ...); may repeat; values are never printed", NULL},
        {"on-bad-message", true, "fail (default), skip, or dead-letter=TOPIC: what to do with "
                                 "a message that does not parse", NULL},
        {"kafka-columns", false, "append: add _kafka_partition, _kafka_offset and "
                                 "_kafka_timestamp columns", NULL},
        {"stop-at", true, "end: stop once every partition is committed up to its end at the "
                          "start", NULL},
        {"commit-interval", true, "wall clock between snapshots (default 10s)", NULL},
        {"timeout", true, "how long to wait for the brokers at the start (default 30s)", NULL},
        CLI_PARTITION_BY_OPT,
        CLI_CATALOG_OPTS,
        CLI_SOURCE_SINK_OPTS,
        {"memory-limit", true, "memory for each table's held updates and key index "
                               "(default 768m)", NULL},
        {"spill-dir", true, "where spilled updates go (default $TMPDIR or /tmp)", NULL},
        CLI_STATUS_OPTS,
        {NULL, false, NULL, NULL},
    };
    int begun = cli_begin(&CMD, argc, argv, opts);
    if (begun >= 0)
        return begun;
    run r = {0};
    r.err = floe_error_new();
    floe_kafka_options o;
    const char *props[2 * MAX_PROPERTIES + 1];
    char *map = NULL, *schema = NULL;
    int status = CLI_EXIT_FAILED;
    if (r.err && options(opts, argc, argv, &o, props, &map, &r) != 0) {
        status = CLI_EXIT_USAGE;
    } else if (r.err) {
        const char *s = cli_get(opts, "schema");
        if (s && !(schema = cli_schema_text(s))) {
            status = CLI_EXIT_USAGE;
        } else {
            r.sink.schema = schema;
            status = open_and_run(&r, opts, &o);
        }
    }
    cli_status_stop(r.status);
    metrics_server_stop(r.metrics);
    floe_kafka_free(r.k);
    floe_error_free(r.err);
    free(map);
    free(schema);
    return status;
}
