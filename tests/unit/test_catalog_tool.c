/*
 * test_catalog_tool.c - a small command-line driver of floe's SQLite
 * catalog for the peer tests (tests/test_catalog*.py), which check what it
 * does against pyiceberg.  Without arguments it runs a short self-test
 * (so `make unit` can run it like every other unit-test program).
 *
 *   test_catalog_tool URI CATALOG_NAME WAREHOUSE COMMAND ARGS...
 *     create-namespace NS [PROPS]          list-namespaces [PARENT]
 *     list-tables NS                       drop NS NAME
 *     create-table NS NAME SCHEMA [PROPS [LOCATION]]
 *     load NS NAME                         commit NS NAME REQUIREMENTS UPDATES
 *     set-props NS NAME PROPS              (asserts uuid and main)
 *     add-snapshot NS NAME ID MANIFEST_LIST SUMMARY   (appends on main)
 *     race NS NAME ROUNDS WORKER SYNC_DIR  (lock-step appends with a peer)
 *     increment NS NAME COUNT WORKER       (free-running appends, retried)
 * race and increment append snapshots whose summary "counter" is the
 * previous snapshot's + 1, each commit asserting uuid and main.
 *
 * JSON arguments are JSON text.  Results go to stdout as JSON; on failure
 * the error chain goes to stderr as "ERROR <FLOE_CODE>: message" and the
 * exit status is the floe result code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "catalog/catalog_internal.h"
#include "unit.h"

typedef struct tool {
    floe__fileio *io;
    floe__catalog *cat;
    floe_error *err;
} tool;

static int fail(tool *t, int rc)
{
    fprintf(stderr, "ERROR %s: %s\n", floe_code_name(rc), floe_error_message(t->err));
    return rc;
}

static json_t *arg_json(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    if (!v)
        fprintf(stderr, "bad JSON argument (%s): %s\n", e.text, text);
    return v;
}

static json_t *jint_or_null(bool have, int64_t v)
{
    return have ? json_integer(v) : json_null();
}

/* Everything a test wants to know about a loaded table, as JSON. */
static json_t *describe(const floe__loaded_table *lt)
{
    const floe__metadata *md = lt->metadata;
    json_t *snaps = json_array(), *slog = json_array(), *mlog = json_array();
    for (size_t i = 0; i < floe__metadata_snapshot_count(md); i++) {
        const floe__snapshot *s = floe__metadata_snapshot_at(md, i);
        json_array_append_new(snaps, json_pack(
            "{s:I, s:o, s:I, s:I, s:s?, s:s?, s:O?, s:o}", "snapshot_id",
            (json_int_t)s->snapshot_id, "parent_snapshot_id",
            jint_or_null(s->has_parent, s->parent_snapshot_id), "sequence_number",
            (json_int_t)s->sequence_number, "timestamp_ms", (json_int_t)s->timestamp_ms,
            "manifest_list", s->manifest_list, "operation", s->operation, "summary",
            (json_t *)s->summary, "schema_id", jint_or_null(s->has_schema_id, s->schema_id)));
    }
    for (size_t i = 0; i < floe__metadata_snapshot_log_count(md); i++) {
        const floe__snapshot_log_entry *e = floe__metadata_snapshot_log_at(md, i);
        json_array_append_new(slog, json_pack("{s:I, s:I}", "snapshot_id",
                                              (json_int_t)e->snapshot_id, "timestamp_ms",
                                              (json_int_t)e->timestamp_ms));
    }
    for (size_t i = 0; i < floe__metadata_metadata_log_count(md); i++) {
        const floe__metadata_log_entry *e = floe__metadata_metadata_log_at(md, i);
        json_array_append_new(mlog, json_pack("{s:s, s:I}", "metadata_file", e->metadata_file,
                                              "timestamp_ms", (json_int_t)e->timestamp_ms));
    }
    char *data = NULL;
    floe__metadata_data_location(md, &data, NULL);
    int64_t cur = floe__metadata_current_snapshot_id(md);
    json_t *d = json_pack(
        "{s:s, s:i, s:s?, s:s, s:s?, s:I, s:I, s:i, s:i, s:O, s:i, s:i, s:O, s:o, s:o, s:o, s:o}",
        "metadata_location", lt->metadata_location, "format_version",
        floe__metadata_format_version(md), "table_uuid", floe__metadata_table_uuid(md),
        "location", floe__metadata_location(md), "data_location", data,
        "last_sequence_number", (json_int_t)floe__metadata_last_sequence_number(md),
        "last_updated_ms", (json_int_t)floe__metadata_last_updated_ms(md), "last_column_id",
        (int)floe__metadata_last_column_id(md), "current_schema_id",
        (int)floe__metadata_current_schema_id(md), "current_schema",
        (json_t *)floe__metadata_current_schema(md), "default_spec_id",
        (int)floe__metadata_default_spec_id(md), "default_sort_order_id",
        (int)floe__metadata_default_sort_order_id(md), "properties",
        (json_t *)floe__metadata_properties(md), "current_snapshot_id",
        jint_or_null(cur != -1, cur), "snapshots", snaps, "snapshot_log", slog, "metadata_log",
        mlog);
    floe__free(data);
    return d;
}

static void print_json(json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT);
    if (s)
        printf("%s\n", s);
    free(s);
    fflush(stdout);
}

static int print_table(tool *t, int rc, floe__loaded_table *lt)
{
    if (rc != FLOE_OK)
        return fail(t, rc);
    json_t *d = describe(lt);
    print_json(d);
    json_decref(d);
    floe__loaded_table_free(lt);
    return 0;
}

/* The requirements every guarded commit carries: the table's uuid and its
 * current main snapshot (none: main must not exist), as floe's committer
 * asserts them. */
static json_t *guard(const floe__loaded_table *lt)
{
    int64_t cur = floe__metadata_current_snapshot_id(lt->metadata);
    return json_pack("[{s:s, s:s}, {s:s, s:s, s:o}]", "type", "assert-table-uuid", "uuid",
                     floe__metadata_table_uuid(lt->metadata), "type", "assert-ref-snapshot-id",
                     "ref", "main", "snapshot-id", jint_or_null(cur != -1, cur));
}

/* Load, then commit `updates` under guard(). */
static int guarded_commit(tool *t, const char *ns, const char *name, json_t *updates,
                          floe__loaded_table **out)
{
    floe__loaded_table *lt = NULL;
    int rc = floe__catalog_load_table(t->cat, ns, name, &lt, t->err);
    if (rc != FLOE_OK)
        return rc;
    json_t *reqs = guard(lt);
    rc = floe__catalog_commit_table(t->cat, ns, name, reqs, updates, out, t->err);
    json_decref(reqs);
    floe__loaded_table_free(lt);
    return rc;
}

/* The updates that append snapshot `id` (child of the current one, next
 * sequence number, now) on main of `lt`; `summary` is borrowed. */
static json_t *append_updates(const floe__loaded_table *lt, int64_t id, const char *manifest_list,
                              json_t *summary)
{
    const floe__metadata *md = lt->metadata;
    json_t *snap = json_pack("{s:I, s:I, s:I, s:s, s:O, s:i}", "snapshot-id", (json_int_t)id,
                             "sequence-number",
                             (json_int_t)floe__metadata_last_sequence_number(md) + 1,
                             "timestamp-ms", (json_int_t)floe__now_ms(), "manifest-list",
                             manifest_list, "summary", summary, "schema-id",
                             (int)floe__metadata_current_schema_id(md));
    int64_t parent = floe__metadata_current_snapshot_id(md);
    if (parent != -1)
        json_object_set_new(snap, "parent-snapshot-id", json_integer(parent));
    return json_pack("[{s:s, s:o}, {s:s, s:s, s:s, s:I}]", "action", "add-snapshot", "snapshot",
                     snap, "action", "set-snapshot-ref", "ref-name", "main", "type", "branch",
                     "snapshot-id", (json_int_t)id);
}

/* Append a snapshot (a[2] id, a[3] manifest list, a[4] summary) on main. */
static int add_snapshot(tool *t, char **a, floe__loaded_table **out)
{
    floe__loaded_table *lt = NULL;
    int rc = floe__catalog_load_table(t->cat, a[0], a[1], &lt, t->err);
    if (rc != FLOE_OK)
        return rc;
    json_t *summary = arg_json(a[4]);
    json_t *ups = append_updates(lt, strtoll(a[2], NULL, 10), a[3], summary);
    json_t *reqs = guard(lt);
    rc = floe__catalog_commit_table(t->cat, a[0], a[1], reqs, ups, out, t->err);
    json_decref(reqs);
    json_decref(ups);
    json_decref(summary);
    floe__loaded_table_free(lt);
    return rc;
}

static int cmd_add_snapshot(tool *t, char **a)
{
    floe__loaded_table *out = NULL;
    int rc = add_snapshot(t, a, &out);
    return print_table(t, rc, out);
}

/* Wait until every worker has created "<dir>/<tag>-<round>-<w>". */
static int barrier(const char *dir, const char *tag, int round, int me, int workers)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%d-%d", dir, tag, round, me);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fclose(f);
    for (int waited = 0; waited < 120000; waited++) {
        int ready = 0;
        for (int w = 0; w < workers; w++) {
            snprintf(path, sizeof path, "%s/%s-%d-%d", dir, tag, round, w);
            ready += access(path, F_OK) == 0;
        }
        if (ready == workers)
            return 0;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return -1;
}

/* The "counter" of the current snapshot's summary (0 without one). */
static long current_counter(const floe__loaded_table *lt)
{
    const floe__snapshot *s = floe__metadata_current_snapshot(lt->metadata);
    const char *v = s ? floe__snapshot_summary_get(s, "counter") : NULL;
    return v ? atol(v) : 0;
}

/* One guarded append of counter+1 on a table loaded earlier. */
static int append_counter(tool *t, const char *ns, const char *name, floe__loaded_table *lt,
                          int64_t id, const char *worker, floe__loaded_table **out)
{
    char val[32];
    snprintf(val, sizeof val, "%ld", current_counter(lt) + 1);
    json_t *summary = json_pack("{s:s, s:s, s:s}", "operation", "append", "counter", val,
                                "worker", worker);
    json_t *ups = append_updates(lt, id, "file:///nonexistent/manifest-list.avro", summary);
    json_t *reqs = guard(lt);
    int rc = floe__catalog_commit_table(t->cat, ns, name, reqs, ups, out, t->err);
    json_decref(reqs);
    json_decref(ups);
    json_decref(summary);
    return rc;
}

/* Lock-step rounds against one peer: both load, meet, then commit an
 * append on the same base; one must win, the other must see
 * FLOE_ECONFLICT. */
static int cmd_race(tool *t, char **a)
{
    int rounds = atoi(a[2]), me = atoi(a[3]);
    for (int r = 0; r < rounds; r++) {
        floe__loaded_table *lt = NULL, *out = NULL;
        int rc = floe__catalog_load_table(t->cat, a[0], a[1], &lt, t->err);
        if (rc != FLOE_OK)
            return fail(t, rc);
        if (barrier(a[4], "load", r, me, 2) != 0)
            return fprintf(stderr, "barrier timeout\n"), 99;
        rc = append_counter(t, a[0], a[1], lt, 1000 * (r + 1) + me, a[3], &out);
        floe__loaded_table_free(lt);
        if (rc != FLOE_OK && rc != FLOE_ECONFLICT)
            return fail(t, rc);
        json_t *line = json_pack("{s:i, s:s, s:s}", "round", r, "result",
                                 rc == FLOE_OK ? "won" : "conflict", "message",
                                 rc == FLOE_OK ? out->metadata_location
                                               : floe_error_message(t->err));
        print_json(line);
        json_decref(line);
        floe__loaded_table_free(out);
        if (barrier(a[4], "done", r, me, 2) != 0)
            return fprintf(stderr, "barrier timeout\n"), 99;
    }
    return 0;
}

/* Append `count` counter snapshots, reloading and retrying on conflict. */
static int cmd_increment(tool *t, char **a)
{
    int count = atoi(a[2]), commits = 0, conflicts = 0;
    int64_t base_id = (int64_t)atoi(a[3]) * 1000000000;
    for (int attempt = 1; commits < count; attempt++) {
        floe__loaded_table *lt = NULL, *out = NULL;
        int rc = floe__catalog_load_table(t->cat, a[0], a[1], &lt, t->err);
        if (rc != FLOE_OK)
            return fail(t, rc);
        rc = append_counter(t, a[0], a[1], lt, base_id + attempt, a[3], &out);
        floe__loaded_table_free(lt);
        floe__loaded_table_free(out);
        if (rc == FLOE_OK)
            commits++;
        else if (rc == FLOE_ECONFLICT)
            conflicts++;
        else
            return fail(t, rc);
    }
    json_t *r = json_pack("{s:i, s:i}", "commits", commits, "conflicts", conflicts);
    print_json(r);
    json_decref(r);
    return 0;
}

static int cmd_list(tool *t, int rc, json_t *list)
{
    if (rc != FLOE_OK)
        return fail(t, rc);
    print_json(list);
    json_decref(list);
    return 0;
}

static int run(tool *t, const char *cmd, char **a, int n)
{
    floe__loaded_table *lt = NULL;
    json_t *list = NULL;
    if (strcmp(cmd, "create-namespace") == 0 && n >= 1) {
        json_t *props = n >= 2 ? arg_json(a[1]) : NULL;
        int rc = floe__catalog_create_namespace(t->cat, a[0], props, t->err);
        json_decref(props);
        return rc == FLOE_OK ? 0 : fail(t, rc);
    }
    if (strcmp(cmd, "list-namespaces") == 0) {
        int rc = floe__catalog_list_namespaces(t->cat, n ? a[0] : NULL, &list, t->err);
        return cmd_list(t, rc, list);
    }
    if (strcmp(cmd, "list-tables") == 0 && n >= 1) {
        int rc = floe__catalog_list_tables(t->cat, a[0], &list, t->err);
        return cmd_list(t, rc, list);
    }
    if (strcmp(cmd, "create-table") == 0 && n >= 3) {
        json_t *schema = arg_json(a[2]), *props = n >= 4 ? arg_json(a[3]) : NULL;
        floe__table_def def = {.schema = schema, .properties = props,
                               .location = n >= 5 ? a[4] : NULL};
        int rc = floe__catalog_create_table(t->cat, a[0], a[1], &def, &lt, t->err);
        json_decref(schema);
        json_decref(props);
        return print_table(t, rc, lt);
    }
    if (strcmp(cmd, "load") == 0 && n >= 2) {
        int rc = floe__catalog_load_table(t->cat, a[0], a[1], &lt, t->err);
        return print_table(t, rc, lt);
    }
    if (strcmp(cmd, "commit") == 0 && n >= 4) {
        json_t *reqs = arg_json(a[2]), *ups = arg_json(a[3]);
        int rc = floe__catalog_commit_table(t->cat, a[0], a[1], reqs, ups, &lt, t->err);
        json_decref(reqs);
        json_decref(ups);
        return print_table(t, rc, lt);
    }
    if (strcmp(cmd, "set-props") == 0 && n >= 3) {
        json_t *ups = json_pack("[{s:s, s:o}]", "action", "set-properties", "updates",
                                arg_json(a[2]));
        int rc = guarded_commit(t, a[0], a[1], ups, &lt);
        json_decref(ups);
        return print_table(t, rc, lt);
    }
    if (strcmp(cmd, "add-snapshot") == 0 && n >= 5)
        return cmd_add_snapshot(t, a);
    if (strcmp(cmd, "race") == 0 && n >= 5)
        return cmd_race(t, a);
    if (strcmp(cmd, "increment") == 0 && n >= 4)
        return cmd_increment(t, a);
    if (strcmp(cmd, "drop") == 0 && n >= 2) {
        int rc = floe__catalog_drop_table(t->cat, a[0], a[1], t->err);
        return rc == FLOE_OK ? 0 : fail(t, rc);
    }
    fprintf(stderr, "unknown command or missing arguments: %s\n", cmd);
    return 2;
}

/* ---- self-test (no arguments) ---------------------------------------------------- */

TEST(self_test)
{
    char dir[] = "/tmp/floe-catalog-tool-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char uri[128], wh[128];
    snprintf(uri, sizeof uri, "sqlite:%s/cat.db", dir);
    snprintf(wh, sizeof wh, "file://%s/wh", dir);
    tool t = {.err = floe_error_new()};
    CHECK_EQ_INT(floe__fileio_local_new(&t.io, t.err), FLOE_OK);
    CHECK_EQ_INT(floe__catalog_sql_open(uri, NULL, wh, t.io, &t.cat, t.err), FLOE_OK);
    if (!t.cat)
        return;
    CHECK_EQ_INT(floe__catalog_create_namespace(t.cat, "ns", NULL, t.err), FLOE_OK);
    json_t *schema = arg_json("{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"x\","
                              "\"required\":false,\"type\":\"long\"}]}");
    floe__table_def def = {.schema = schema};
    floe__loaded_table *lt = NULL;
    CHECK_EQ_INT(floe__catalog_create_table(t.cat, "ns", "t", &def, &lt, t.err), FLOE_OK);
    if (lt) {
        json_t *d = describe(lt);
        char want[160];
        snprintf(want, sizeof want, "file://%s/wh/ns/t", dir);
        CHECK_EQ_STR(json_string_value(json_object_get(d, "location")), want);
        snprintf(want, sizeof want, "file://%s/wh/ns/t/data", dir);
        CHECK_EQ_STR(json_string_value(json_object_get(d, "data_location")), want);
        CHECK(json_is_null(json_object_get(d, "current_snapshot_id")));
        CHECK_EQ_INT(json_array_size(json_object_get(d, "snapshots")), 0);
        CHECK_EQ_INT(json_integer_value(json_object_get(d, "last_column_id")), 1);
        json_decref(d);
        /* a snapshot through the tool's own command path */
        char *args[] = {"ns", "t", "42", "file:///m.avro", "{\"operation\":\"append\"}"};
        floe__loaded_table_free(lt);
        lt = NULL;
        CHECK_EQ_INT(add_snapshot(&t, args, &lt), FLOE_OK);
        CHECK(lt && floe__metadata_current_snapshot_id(lt->metadata) == 42);
        CHECK(lt && floe__metadata_last_sequence_number(lt->metadata) == 1);
    }
    floe__loaded_table_free(lt);
    json_decref(schema);
    floe__catalog_free(t.cat);
    floe__fileio_free(t.io);
    floe_error_free(t.err);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

int main(int argc, char **argv)
{
    if (argc == 1) {
        RUN(self_test);
        return UNIT_DONE();
    }
    if (argc < 5) {
        fprintf(stderr, "usage: %s URI CATALOG_NAME WAREHOUSE COMMAND ARGS...\n", argv[0]);
        return 2;
    }
    tool t = {.err = floe_error_new()};
    int rc = floe__fileio_local_new(&t.io, t.err);
    if (rc == FLOE_OK)
        rc = floe__catalog_sql_open(argv[1], argv[2], argv[3], t.io, &t.cat, t.err);
    rc = rc == FLOE_OK ? run(&t, argv[4], argv + 5, argc - 5) : fail(&t, rc);
    floe__catalog_free(t.cat);
    floe__fileio_free(t.io);
    floe_error_free(t.err);
    return rc;
}
