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
 * FAULT@schema applies the fault (not always-conflict) to the first commit
 * that adds a schema instead (a schema change's commit; N is ignored).
 * KEY "-" means no key (append mode); INTERVAL "advance" commits at each
 * progress record instead (floe_sink_options commit_on_advance, as floe pg).  Prints one JSON line of the sink's
 * stats and exits 0 when the sink finished, 1 otherwise.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>

#include "scripted_catalog.h"

/* Another writer compacts: a `replace` snapshot on top of main, same files. */
static int concurrent_compaction(scripted *sc, const char *ns, const char *name, floe_error *err)
{
    return sc_add_snapshot(sc, ns, name, json_pack("{s:s}", "operation", "replace"), NULL, err);
}

/* FAULT at the `when`-th commit call; busy-compactor: another writer
 * compacts before each of the `when` commit calls after the first (0: of
 * all of them). */
static int script_fault(scripted *sc, const char *fault, long when)
{
    if (strcmp(fault, "busy-compactor") == 0) {
        sc->hook = concurrent_compaction;
        sc_script(sc, SC_PASS);
        for (long k = 0; k < when; k++)
            sc_script(sc, SC_HOOK);
        if (when == 0)
            sc->after = SC_HOOK;
        return 0;
    }
    static const struct { const char *name; sc_action a; } faults[] = {
        {"none", SC_PASS}, {"lost-response", SC_LOST}, {"conflict", SC_HOOK},
        {"unsent", SC_UNSENT}, {"bad-request", SC_REJECT}, {"always-conflict", SC_CONFLICT},
    };
    size_t len = strcspn(fault, "@");
    bool at_schema = strcmp(fault + len, "@schema") == 0;
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        if (strlen(faults[i].name) != len || strncmp(fault, faults[i].name, len) != 0 ||
            (fault[len] && !at_schema))
            continue;
        sc->hook = concurrent_compaction;
        if (at_schema) {
            sc->on_schema = faults[i].a;
            return faults[i].a == SC_CONFLICT ? -1 : 0;
        }
        for (long k = 1; k < when; k++)
            sc_script(sc, SC_PASS);
        sc_script(sc, faults[i].a);
        if (faults[i].a == SC_CONFLICT)
            sc->after = SC_CONFLICT;
        return 0;
    }
    return -1;
}

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
    if (argc != 10 && argc != 11) {
        fprintf(stderr, "usage: %s FAULT N CATALOG WAREHOUSE NS.TABLE SCHEMA KEY INPUT INTERVAL "
                "[COMMIT_TIMEOUT_MS]\n", argv[0]);
        return 2;
    }
    floe_error *err = floe_error_new();
    floe__fileio *io = NULL;
    scripted *f = calloc(1, sizeof *f);
    f->base.ops = &SCRIPTED_OPS;
    if (script_fault(f, argv[1], atol(argv[2])) != 0) {
        fprintf(stderr, "unknown fault %s\n", argv[1]);
        return 2;
    }
    floe_connect_options co;
    floe_connect_options_init(&co, sizeof co);
    co.catalog = argv[3];
    co.warehouse = argv[4];
    int rc = floe__catalog_open(&co, &io, &f->inner, err);
    floe_sink_options o;
    floe_sink_options_init(&o, sizeof o);
    o.table = argv[5];
    o.schema = argv[6];
    o.key = strcmp(argv[7], "-") ? argv[7] : NULL;
    if (strcmp(argv[9], "advance") == 0)
        o.commit_on_advance = 1;             /* a commit at each progress record */
    else
        o.commit_interval = strtoull(argv[9], NULL, 10);
    o.maintain = FLOE_MAINTAIN_OFF;          /* the faults are for the sink's own commits */
    if (argc == 11)
        o.commit_timeout_ms = atoll(argv[10]);
    floe_sink *sink = NULL;
    if (rc == FLOE_OK)
        rc = floe__sink_open_with(&o, &f->base, io, &sink, err);
    if (rc == FLOE_OK)
        rc = feed(sink, argv[8], err);
    if (sink) {
        floe_sink_stats st;
        floe_sink_stats_get(sink, &st, sizeof st);
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
