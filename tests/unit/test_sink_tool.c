/*
 * test_sink_tool.c - runs a real floe sink over an NDJSON file with a
 * fault-injecting catalog under it, for the commit-protocol tests of SPEC.md
 * section 7 (driven by tests/test_sink_faults.py).
 *
 *   test_sink_tool FAULT N CATALOG WAREHOUSE NS.TABLE SCHEMA KEY INPUT INTERVAL
 *
 * FAULT, applied to the N-th commit the sink attempts (1-based):
 *   none            no fault
 *   lost-response   the commit lands, but the sink is told the outcome is unknown
 *   conflict        just before it, a compaction (a `replace` snapshot) commits
 *                   on the same table, so the sink's commit loses the race
 *   unsent          the commit fails before anything was sent (not applied)
 *   bad-request     the catalog rejects it (not applied; fatal)
 *   always-conflict this and every later commit is refused as a conflict
 * KEY "-" means no key (append mode).  Prints one JSON line of the sink's
 * stats and exits 0 when the sink finished, 1 otherwise.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "sink/sink_internal.h"

typedef struct faulty {
    floe__catalog base;
    floe__catalog *inner;
    const char *fault;
    long when, calls;
} faulty;

static faulty *F(floe__catalog *c) { return (faulty *)c; }

static int f_create_ns(floe__catalog *c, const char *ns, const json_t *p, floe_error *e)
{ return floe__catalog_create_namespace(F(c)->inner, ns, p, e); }
static int f_ns_exists(floe__catalog *c, const char *ns, bool *x, floe_error *e)
{ return floe__catalog_namespace_exists(F(c)->inner, ns, x, e); }
static int f_list_ns(floe__catalog *c, const char *p, json_t **o, floe_error *e)
{ return floe__catalog_list_namespaces(F(c)->inner, p, o, e); }
static int f_list_tables(floe__catalog *c, const char *ns, json_t **o, floe_error *e)
{ return floe__catalog_list_tables(F(c)->inner, ns, o, e); }
static int f_load(floe__catalog *c, const char *ns, const char *n, floe__loaded_table **o, floe_error *e)
{ return floe__catalog_load_table(F(c)->inner, ns, n, o, e); }
static int f_create(floe__catalog *c, const char *ns, const char *n, const floe__table_def *d,
                    floe__loaded_table **o, floe_error *e)
{ return floe__catalog_create_table(F(c)->inner, ns, n, d, o, e); }
static int f_drop(floe__catalog *c, const char *ns, const char *n, floe_error *e)
{ return floe__catalog_drop_table(F(c)->inner, ns, n, e); }
static void f_free(floe__catalog *c) { floe__catalog_free(F(c)->inner); free(c); }

/* Another writer compacts: a `replace` snapshot on top of main, same files. */
static int concurrent_compaction(faulty *f, const char *ns, const char *name, floe_error *err)
{
    floe__loaded_table *t = NULL;
    FLOE_FORWARD(floe__catalog_load_table(f->inner, ns, name, &t, err));
    const floe__snapshot *cur = floe__metadata_current_snapshot(t->metadata);
    int64_t id = 4242000000000 + f->calls;
    int64_t seq = floe__metadata_last_sequence_number(t->metadata) + 1;
    json_t *updates = json_pack(
        "[{s:s, s:{s:I, s:I, s:I, s:I, s:s, s:{s:s}}}, {s:s, s:s, s:s, s:I}]",
        "action", "add-snapshot", "snapshot", "snapshot-id", (json_int_t)id,
        "parent-snapshot-id", (json_int_t)(cur ? cur->snapshot_id : -1),
        "sequence-number", (json_int_t)seq, "timestamp-ms", (json_int_t)floe__now_ms(),
        "manifest-list", cur ? cur->manifest_list : "", "summary", "operation", "replace",
        "action", "set-snapshot-ref", "ref-name", "main", "type", "branch",
        "snapshot-id", (json_int_t)id);
    json_t *reqs = json_array();
    floe__loaded_table *out = NULL;
    int rc = floe__catalog_commit_table(f->inner, ns, name, reqs, updates, &out, err);
    floe__loaded_table_free(out);
    floe__loaded_table_free(t);
    json_decref(updates);
    json_decref(reqs);
    return rc;
}

static int f_commit(floe__catalog *c, const char *ns, const char *name, const json_t *reqs,
                    const json_t *updates, floe__loaded_table **out, floe_error *err)
{
    faulty *f = F(c);
    long n = ++f->calls;
    bool hit = n == f->when || (strcmp(f->fault, "always-conflict") == 0 && n >= f->when);
    if (!hit || strcmp(f->fault, "none") == 0)
        return floe__catalog_commit_table(f->inner, ns, name, reqs, updates, out, err);
    if (strcmp(f->fault, "lost-response") == 0) {
        int rc = floe__catalog_commit_table(f->inner, ns, name, reqs, updates, out, err);
        if (rc != FLOE_OK)
            return rc;
        floe__loaded_table_free(*out);
        *out = NULL;
        return floe__err_set(err, FLOE_EUNKNOWN_OUTCOME, "injected: the response was lost");
    }
    if (strcmp(f->fault, "conflict") == 0) {
        FLOE_FORWARD(concurrent_compaction(f, ns, name, err));
        return floe__catalog_commit_table(f->inner, ns, name, reqs, updates, out, err);
    }
    if (strcmp(f->fault, "unsent") == 0)
        return floe__err_set(err, FLOE_ENET, "injected: connection refused before sending");
    if (strcmp(f->fault, "bad-request") == 0)
        return floe__err_set(err, FLOE_ECATALOG, "injected: 400 Bad Request: malformed update");
    return floe__err_set(err, FLOE_ECONFLICT, "injected: commit refused as a conflict");
}

static const floe__catalog_ops FAULTY_OPS = {
    "faulty", f_create_ns, f_ns_exists, f_list_ns, f_list_tables, f_load, f_create, f_commit,
    f_drop, f_free,
};

static int feed(floe_sink *sink, const char *path, floe_error *err)
{
    FILE *in = fopen(path, "r");
    if (!in)
        return floe__err_set(err, FLOE_EIO, "cannot open %s", path);
    char *line = NULL;
    size_t cap = 0, lineno = 0;
    ssize_t n;
    int rc = FLOE_OK;
    while (rc == FLOE_OK && (n = getline(&line, &cap, in)) > 0) {
        lineno++;
        if (n > 1)
            rc = floe_sink_push_json(sink, line, (size_t)n - 1, err);
    }
    if (rc == FLOE_OK)
        rc = floe_sink_finish(sink, err);
    else
        floe__err_wrap(err, rc, "line %zu", lineno);
    free(line);
    fclose(in);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 10) {
        fprintf(stderr, "usage: %s FAULT N CATALOG WAREHOUSE NS.TABLE SCHEMA KEY INPUT INTERVAL\n",
                argv[0]);
        return 2;
    }
    floe_error *err = floe_error_new();
    floe__fileio *io = NULL;
    faulty *f = calloc(1, sizeof *f);
    f->base.ops = &FAULTY_OPS;
    f->fault = argv[1];
    f->when = atol(argv[2]);
    floe_connect_options co;
    floe_connect_options_init(&co);
    co.catalog = argv[3];
    co.warehouse = argv[4];
    int rc = floe__catalog_open(&co, &io, &f->inner, err);
    floe_sink_options o;
    floe_sink_options_init(&o);
    o.table = argv[5];
    o.schema = argv[6];
    o.key = strcmp(argv[7], "-") ? argv[7] : NULL;
    o.commit_interval = strtoull(argv[9], NULL, 10);
    floe_sink *sink = NULL;
    if (rc == FLOE_OK)
        rc = floe__sink_open_with(&o, &f->base, io, &sink, err);
    if (rc == FLOE_OK)
        rc = feed(sink, argv[8], err);
    if (sink) {
        floe_sink_stats st;
        floe_sink_stats_get(sink, &st);
        printf("{\"snapshots\": %" PRIu64 ", \"lost_responses\": %" PRIu64 ", \"conflicts\": %" PRIu64
               ", \"failures\": %" PRIu64 ", \"commit_calls\": %ld}\n", st.snapshots_committed,
               st.lost_responses, st.commit_conflicts, st.commit_failures, f->calls);
    }
    if (rc != FLOE_OK)
        fprintf(stderr, "test_sink_tool: %s\n", floe_error_message(err));
    floe_sink_free(sink);
    if (f->inner)
        floe__catalog_free(&f->base);
    else
        free(f);
    floe__fileio_free(io);
    floe_error_free(err);
    return rc == FLOE_OK ? 0 : 1;
}
