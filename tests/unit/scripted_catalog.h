/*
 * scripted_catalog.h - a catalog for tests of the commit protocol: a real
 * SQLite catalog underneath, and a script saying what happens to each
 * commit call (the n-th one, from 1): it passes, lands but its response is
 * lost, is refused as a conflict, fails before sending, is rejected, or
 * another writer commits first (a queue of actions, one per commit call).  Helpers make what other writers do to a
 * table directly on the inner catalog: a foreign append, a commit of
 * another sink, a rollback of main, the expiry of snapshots.
 *
 * Header-only (static functions) for the unit tests and tools in
 * tests/unit; the catalog is a floe__catalog, so a real sink or committer
 * runs on top of it.
 */
#ifndef FLOE_SCRIPTED_CATALOG_H
#define FLOE_SCRIPTED_CATALOG_H

#include <stdlib.h>

#include "sink/sink_internal.h"

typedef enum sc_action {
    SC_PASS = 0,          /* forwarded */
    SC_LOST,              /* forwarded and applied, then FLOE_EUNKNOWN_OUTCOME */
    SC_UNKNOWN,           /* not applied, FLOE_EUNKNOWN_OUTCOME */
    SC_CONFLICT,          /* not applied, FLOE_ECONFLICT */
    SC_UNSENT,            /* not applied, FLOE_ENET (nothing was sent) */
    SC_REJECT,            /* not applied, FLOE_ECATALOG (a 400) */
    SC_FOREIGN_FIRST,     /* another writer appends first, then forwarded (a conflict) */
    SC_HOOK,              /* sc->hook runs first, then forwarded */
} sc_action;

#define SC_MAX_STEPS 64

typedef struct scripted {
    floe__catalog base;
    floe__catalog *inner;
    sc_action steps[SC_MAX_STEPS];   /* a queue: each commit call takes the next */
    int n_steps, next;
    sc_action after;                 /* for later calls (default SC_PASS) */
    int (*hook)(struct scripted *sc, const char *ns, const char *name, floe_error *err);
    void *hook_ctx;
    long calls;                      /* commit calls so far */
    long applied;                    /* commits that reached the inner catalog */
    /* What the first commit call that adds a schema does instead of its
     * scripted step (SC_PASS: its step); once. */
    sc_action on_schema;
} scripted;

static scripted *SC(floe__catalog *c) { return (scripted *)c; }

static int sc_create_ns(floe__catalog *c, const char *ns, const json_t *p, floe_error *e)
{ return floe__catalog_create_namespace(SC(c)->inner, ns, p, e); }
static int sc_ns_exists(floe__catalog *c, const char *ns, bool *x, floe_error *e)
{ return floe__catalog_namespace_exists(SC(c)->inner, ns, x, e); }
static int sc_list_ns(floe__catalog *c, const char *p, json_t **o, floe_error *e)
{ return floe__catalog_list_namespaces(SC(c)->inner, p, o, e); }
static int sc_list_tables(floe__catalog *c, const char *ns, json_t **o, floe_error *e)
{ return floe__catalog_list_tables(SC(c)->inner, ns, o, e); }
static int sc_load(floe__catalog *c, const char *ns, const char *n, floe__loaded_table **o,
                   floe_error *e)
{ return floe__catalog_load_table(SC(c)->inner, ns, n, o, e); }
static int sc_create(floe__catalog *c, const char *ns, const char *n, const floe__table_def *d,
                     floe__loaded_table **o, floe_error *e)
{ return floe__catalog_create_table(SC(c)->inner, ns, n, d, o, e); }
static int sc_drop(floe__catalog *c, const char *ns, const char *n, floe_error *e)
{ return floe__catalog_drop_table(SC(c)->inner, ns, n, e); }
static void sc_free(floe__catalog *c)
{
    floe__catalog_free(SC(c)->inner);
    free(c);
}

/* Apply `updates` to the table on the inner catalog, no requirements. */
static inline int sc_apply(scripted *sc, const char *ns, const char *name, json_t *updates,
                    floe_error *err)
{
    json_t *reqs = json_array();
    floe__loaded_table *out = NULL;
    int rc = floe__catalog_commit_table(sc->inner, ns, name, reqs, updates, &out, err);
    floe__loaded_table_free(out);
    json_decref(reqs);
    json_decref(updates);
    return rc;
}

/* A snapshot on top of main (same manifests: no rows change) with the given
 * summary (a JSON object, taken); *id (may be NULL) receives its id. */
static inline int sc_add_snapshot(scripted *sc, const char *ns, const char *name, json_t *summary,
                           int64_t *id, floe_error *err)
{
    floe__loaded_table *t = NULL;
    int rc = floe__catalog_load_table(sc->inner, ns, name, &t, err);
    if (rc != FLOE_OK) {
        json_decref(summary);
        return rc;
    }
    const floe__snapshot *cur = floe__metadata_current_snapshot(t->metadata);
    static int64_t next = 4242000000000;
    int64_t sid = ++next;
    json_t *snap = json_pack("{s:I, s:I, s:I, s:s, s:o}", "snapshot-id", (json_int_t)sid,
                             "sequence-number",
                             (json_int_t)floe__metadata_last_sequence_number(t->metadata) + 1,
                             "timestamp-ms", (json_int_t)floe__now_ms(), "manifest-list",
                             cur ? cur->manifest_list : "", "summary", summary);
    if (cur)
        json_object_set_new(snap, "parent-snapshot-id", json_integer(cur->snapshot_id));
    floe__loaded_table_free(t);
    json_t *ups = json_pack("[{s:s, s:o}, {s:s, s:s, s:s, s:I}]", "action", "add-snapshot",
                            "snapshot", snap, "action", "set-snapshot-ref", "ref-name", "main",
                            "type", "branch", "snapshot-id", (json_int_t)sid);
    if (id)
        *id = sid;
    return sc_apply(sc, ns, name, ups, err);
}

/* Another engine's append (no floe properties). */
static inline int sc_foreign_append(scripted *sc, const char *ns, const char *name, floe_error *err)
{
    return sc_add_snapshot(sc, ns, name, json_pack("{s:s}", "operation", "append"), NULL, err);
}

/* A commit of floe sink `sink_id` version `version` recording `frontier`. */
static inline int sc_sink_commit(scripted *sc, const char *ns, const char *name, const char *sink_id,
                          unsigned version, const char *frontier, int64_t *id, floe_error *err)
{
    char v[16];
    snprintf(v, sizeof v, "%u", version);
    return sc_add_snapshot(sc, ns, name,
                           json_pack("{s:s, s:s, s:s, s:s}", "operation", "append",
                                     "floe.frontier", frontier, "floe.sink-id", sink_id,
                                     "floe.sink-version", v),
                           id, err);
}

/* Main back to snapshot `id` (ManageSnapshots.rollbackTo). */
static inline int sc_rollback(scripted *sc, const char *ns, const char *name, int64_t id,
                       floe_error *err)
{
    return sc_apply(sc, ns, name,
                    json_pack("[{s:s, s:s, s:s, s:I}]", "action", "set-snapshot-ref", "ref-name",
                              "main", "type", "branch", "snapshot-id", (json_int_t)id),
                    err);
}

/* Expire the snapshots `ids` (n of them). */
static inline int sc_expire(scripted *sc, const char *ns, const char *name, const int64_t *ids,
                     size_t n, floe_error *err)
{
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(list, json_integer(ids[i]));
    return sc_apply(sc, ns, name,
                    json_pack("[{s:s, s:o}]", "action", "remove-snapshots", "snapshot-ids", list),
                    err);
}

static int sc_commit(floe__catalog *c, const char *ns, const char *name, const json_t *reqs,
                     const json_t *updates, floe__loaded_table **out, floe_error *err)
{
    scripted *sc = SC(c);
    sc->calls++;
    sc_action a = sc->next < sc->n_steps ? sc->steps[sc->next++] : sc->after;
    size_t i;
    const json_t *u;
    json_array_foreach((json_t *)updates, i, u) {
        const char *action = json_string_value(json_object_get(u, "action"));
        if (sc->on_schema != SC_PASS && action && strcmp(action, "add-schema") == 0) {
            a = sc->on_schema;
            sc->on_schema = SC_PASS;
            break;
        }
    }
    switch (a) {
    case SC_UNKNOWN:
        return floe__err_set(err, FLOE_EUNKNOWN_OUTCOME, "scripted: outcome unknown, not applied");
    case SC_CONFLICT:
        return floe__err_set(err, FLOE_ECONFLICT, "scripted: refused as a conflict");
    case SC_UNSENT:
        return floe__err_set(err, FLOE_ENET, "scripted: connection refused before sending");
    case SC_REJECT:
        return floe__err_set(err, FLOE_ECATALOG, "scripted: 400 Bad Request");
    case SC_FOREIGN_FIRST:
        FLOE_FORWARD(sc_foreign_append(sc, ns, name, err));
        break;
    case SC_HOOK:
        FLOE_FORWARD(sc->hook(sc, ns, name, err));
        break;
    default:
        break;
    }
    int rc = floe__catalog_commit_table(sc->inner, ns, name, reqs, updates, out, err);
    if (rc == FLOE_OK)
        sc->applied++;
    if (rc != FLOE_OK || a != SC_LOST)
        return rc;
    floe__loaded_table_free(*out);
    *out = NULL;
    return floe__err_set(err, FLOE_EUNKNOWN_OUTCOME, "scripted: applied, but the response was lost");
}

/* What the next commit call not yet scripted does (calls past the script
 * do sc->after). */
static inline void sc_script(scripted *sc, sc_action a)
{
    if (sc->n_steps < SC_MAX_STEPS)
        sc->steps[sc->n_steps++] = a;
}

static const floe__catalog_ops SCRIPTED_OPS = {
    "scripted", sc_create_ns, sc_ns_exists, sc_list_ns, sc_list_tables, sc_load, sc_create,
    sc_commit, sc_drop, sc_free,
};

/* A scripted catalog over a new SQLite catalog at DIR/catalog.db with the
 * warehouse DIR/wh; *io is its FileIO (free it after the catalog). */
static inline scripted *sc_open(const char *dir, floe__fileio **io, floe_error *err)
{
    char uri[600], wh[600];
    snprintf(uri, sizeof uri, "sqlite:%s/catalog.db", dir);
    snprintf(wh, sizeof wh, "file://%s/wh", dir);
    scripted *sc = calloc(1, sizeof *sc);
    if (!sc)
        return NULL;
    sc->base.ops = &SCRIPTED_OPS;
    if (floe__fileio_local_new(io, err) != FLOE_OK ||
        floe__catalog_sql_open(uri, "floe", wh, *io, &sc->inner, err) != FLOE_OK) {
        floe__fileio_free(*io);
        *io = NULL;
        free(sc);
        return NULL;
    }
    return sc;
}

#endif /* FLOE_SCRIPTED_CATALOG_H */
