/*
 * inspect.c - `floe inspect`: what a table holds, for people (text) and
 * programs (--json).  This file gathers it into an inspect_view through the
 * public API alone: the snapshots by sequence number (which of them are on
 * main's history), the schema, the live row count of the current snapshot
 * (from its summary totals) and the progress of every sink id the table
 * knows (SPEC.md section 5.1).  inspect_text.c and inspect_json.c print it.
 *
 * It never creates anything: the catalog is opened with must_exist and the
 * table without a declared schema.  Table properties, the format version
 * and refs other than main and the floe-* tags are not shown: floe.h has
 * no accessor for them.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli_internal.h"

static const char USAGE[] =
    "floe inspect --table NS.NAME [--catalog URI] [--warehouse URI] [--catalog-name NAME] "
    "[--limit N] [--json] [--source CONNINFO]";

static const char NOTES[] =
    "output:\n"
    "  The table, its metadata and data locations and current snapshot; one line per\n"
    "  snapshot (id, commit time in UTC, operation, data files, rows and delete files\n"
    "  it added, the floe frontier and sink id it records, the refs pointing at it);\n"
    "  the schema; the live row count (from the current snapshot's totals: an upper\n"
    "  bound when there are equality deletes); and where each sink id stands.\n"
    "  --limit N shows the newest N snapshots (default 20 in text, all with --json;\n"
    "  0 = all).  --json prints the same as one JSON object.  Nothing is created.\n"
    "  A table fed by `floe pg` also shows its Postgres table, database, replication\n"
    "  slot and the slot's confirmed LSN as of its last commit; with --source the\n"
    "  slot's state now, read from the server.\n";

static const cli_command CMD = {"inspect", USAGE, NOTES};

static int by_sequence(const void *a, const void *b)
{
    const inspect_snap *x = a, *y = b;
    if (x->info.sequence_number != y->info.sequence_number)
        return x->info.sequence_number < y->info.sequence_number ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

typedef struct by_id_entry { int64_t id; size_t pos; } by_id_entry;

static int cmp_id(const void *a, const void *b)
{
    const by_id_entry *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}

/* Mark the current snapshot and its ancestors (main's history). */
static int mark_main(inspect_view *v)
{
    if (v->n_snaps == 0 || v->current < 0)
        return 0;
    by_id_entry *ids = malloc(v->n_snaps * sizeof *ids);
    if (!ids)
        return -1;
    for (size_t i = 0; i < v->n_snaps; i++)
        ids[i] = (by_id_entry){v->snaps[i].info.snapshot_id, i};
    qsort(ids, v->n_snaps, sizeof *ids, cmp_id);
    by_id_entry key = {v->current, 0};
    for (size_t steps = 0; steps < v->n_snaps; steps++) {   /* bounded: a cycle cannot loop */
        by_id_entry *e = bsearch(&key, ids, v->n_snaps, sizeof *ids, cmp_id);
        if (!e || v->snaps[e->pos].on_main)
            break;
        v->snaps[e->pos].on_main = true;
        key.id = v->snaps[e->pos].info.parent_id;
    }
    free(ids);
    return 0;
}

static int load_snapshots(inspect_view *v, floe_error *err)
{
    v->n_snaps = floe_table_snapshot_count(v->table);
    v->snaps = calloc(v->n_snaps ? v->n_snaps : 1, sizeof *v->snaps);
    if (!v->snaps)
        return FLOE_ENOMEM;
    for (size_t i = 0; i < v->n_snaps; i++) {
        v->snaps[i].index = i;
        int rc = floe_table_snapshot(v->table, i, &v->snaps[i].info, sizeof v->snaps[i].info, err);
        if (rc != FLOE_OK)
            return rc;
    }
    qsort(v->snaps, v->n_snaps, sizeof *v->snaps, by_sequence);
    v->first = v->limit && v->limit < v->n_snaps ? v->n_snaps - (size_t)v->limit : 0;
    return mark_main(v) == 0 ? FLOE_OK : FLOE_ENOMEM;
}

static int load_sinks(inspect_view *v, floe_error *err)
{
    int rc = floe_table_sink_ids(v->table, &v->sink_ids, &v->n_sinks, err);
    if (rc != FLOE_OK)
        return rc;
    v->sinks = calloc(v->n_sinks ? v->n_sinks : 1, sizeof *v->sinks);
    if (!v->sinks)
        return FLOE_ENOMEM;
    for (size_t i = 0; i < v->n_sinks; i++) {
        v->sinks[i].id = v->sink_ids[i];
        floe_sink_progress *p = &v->sinks[i].progress;
        rc = floe_table_sink_progress(v->table, v->sink_ids[i], p, sizeof *p, err);
        if (rc != FLOE_OK)
            return rc;
    }
    return FLOE_OK;
}

/* A summary total as a number; false when absent or not a decimal count. */
static bool total(const inspect_view *v, const inspect_snap *s, const char *key, uint64_t *out)
{
    const char *t = inspect_prop(v, s, key);
    if (!t || !*t || strspn(t, "0123456789") != strlen(t) || strlen(t) > 19)
        return false;
    *out = strtoull(t, NULL, 10);
    return true;
}

static void load_live_rows(inspect_view *v)
{
    inspect_live *l = &v->live;
    if (v->current < 0) {
        *l = (inspect_live){.known = true, .exact = true};
        return;
    }
    const inspect_snap *cur = NULL;
    for (size_t i = 0; i < v->n_snaps; i++)
        if (v->snaps[i].info.snapshot_id == v->current)
            cur = &v->snaps[i];
    if (!cur || !total(v, cur, "total-records", &l->records))
        return;
    if (!total(v, cur, "total-position-deletes", &l->position_deletes))
        l->position_deletes = 0;
    if (!total(v, cur, "total-equality-deletes", &l->equality_deletes))
        l->equality_deletes = 0;
    l->known = true;
    l->exact = l->equality_deletes == 0;
    l->rows = l->records > l->position_deletes ? l->records - l->position_deletes : 0;
}

static int load_view(inspect_view *v, floe_error *err)
{
    v->current = floe_table_current_snapshot_id(v->table);
    int rc = load_snapshots(v, err);
    if (rc == FLOE_OK)
        rc = load_sinks(v, err);
    if (rc == FLOE_OK)
        rc = floe_schema_to_json(floe_table_schema(v->table), &v->schema_json, err);
    if (rc == FLOE_OK)
        v->schema = json_loads(v->schema_json, 0, NULL);
    if (rc == FLOE_OK)
        rc = floe_table_partition_specs(v->table, &v->specs_json, err);
    if (rc == FLOE_OK)
        v->specs = json_loads(v->specs_json, 0, NULL);
    load_live_rows(v);
    return rc;
}

static void free_view(inspect_view *v)
{
    free(v->snaps);
    free(v->sinks);
    floe_free(v->sink_ids);
    floe_free(v->schema_json);
    json_decref(v->schema);
    floe_free(v->specs_json);
    floe_free(v->parts_json);
    json_decref(v->parts);
    json_decref(v->specs);
}

/* ---- helpers for the printers ------------------------------------------------------ */

const char *inspect_prop(const inspect_view *v, const inspect_snap *s, const char *key)
{
    return floe_table_snapshot_property(v->table, s->index, key);
}

void inspect_refs(const inspect_view *v, const inspect_snap *s, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    if (s->info.snapshot_id == v->current)
        len += (size_t)snprintf(buf, cap, "main");
    for (size_t i = 0; i < v->n_sinks && len < cap; i++)
        if (v->sinks[i].progress.tag_snapshot_id == s->info.snapshot_id)
            len += (size_t)snprintf(buf + len, cap - len, "%sfloe-%s", len ? ", " : "",
                                    v->sinks[i].id);
}

void inspect_time_text(int64_t ms, bool with_ms, char *buf, size_t cap)
{
    time_t secs = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    struct tm tm;
    if (!gmtime_r(&secs, &tm)) {
        snprintf(buf, cap, "%lld ms", (long long)ms);
        return;
    }
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    if (with_ms)
        snprintf(buf + n, cap - n, ".%03dZ", (int)(((ms % 1000) + 1000) % 1000));
    else
        snprintf(buf + n, cap - n, "Z");
}

static void type_append(char *buf, size_t cap, size_t *len, const char *s)
{
    int n = snprintf(buf + *len, cap - *len, "%s", s);
    if (n > 0)
        *len = *len + (size_t)n < cap ? *len + (size_t)n : cap - 1;
}

static void nested_text(const json_t *type, char *buf, size_t cap, size_t *len);

static void type_into(const json_t *type, bool required, char *buf, size_t cap, size_t *len)
{
    if (json_is_string(type))
        type_append(buf, cap, len, json_string_value(type));
    else if (json_is_object(type))
        nested_text(type, buf, cap, len);
    else
        type_append(buf, cap, len, "?");
    if (required)
        type_append(buf, cap, len, " not null");
}

static bool flag(const json_t *obj, const char *key)
{
    return json_is_true(json_object_get(obj, key));
}

static void nested_text(const json_t *type, char *buf, size_t cap, size_t *len)
{
    const char *kind = cli_json_str(type, "type");
    if (kind && strcmp(kind, "list") == 0) {
        type_append(buf, cap, len, "list<");
        type_into(json_object_get(type, "element"), flag(type, "element-required"), buf, cap, len);
    } else if (kind && strcmp(kind, "map") == 0) {
        type_append(buf, cap, len, "map<");
        type_into(json_object_get(type, "key"), false, buf, cap, len);
        type_append(buf, cap, len, ", ");
        type_into(json_object_get(type, "value"), flag(type, "value-required"), buf, cap, len);
    } else {
        const json_t *fields = json_object_get(type, "fields");
        type_append(buf, cap, len, "struct<");
        for (size_t i = 0; i < json_array_size(fields); i++) {
            const json_t *f = json_array_get(fields, i);
            const char *name = cli_json_str(f, "name");
            type_append(buf, cap, len, i ? ", " : "");
            type_append(buf, cap, len, name ? name : "?");
            type_append(buf, cap, len, ": ");
            type_into(json_object_get(f, "type"), flag(f, "required"), buf, cap, len);
        }
    }
    type_append(buf, cap, len, ">");
}

void inspect_type_text(const json_t *type, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    type_into(type, false, buf, cap, &len);
}

/* ---- the command --------------------------------------------------------------------- */

/* A sink fed by a Postgres slot: the floe.pg.* of its progress snapshot,
 * and with --source the slot as the server reports it now. */
static void pg_source_of(inspect_view *v, inspect_sink *k)
{
    for (size_t i = 0; i < v->n_snaps && !k->snap; i++)
        if (k->progress.state == FLOE_PROGRESS_FOUND &&
            v->snaps[i].info.snapshot_id == k->progress.snapshot_id)
            k->snap = &v->snaps[i];
    const char *src = k->snap ? inspect_prop(v, k->snap, "floe.source") : NULL;
    if (!src || strcmp(src, "postgres") != 0)
        return;
    k->pg_table = inspect_prop(v, k->snap, "floe.pg.table");
    k->pg_slot = inspect_prop(v, k->snap, "floe.pg.slot");
    k->pg_database = inspect_prop(v, k->snap, "floe.pg.database");
    k->pg_publication = inspect_prop(v, k->snap, "floe.pg.publication");
    k->pg_confirmed = inspect_prop(v, k->snap, "floe.pg.slot-confirmed-lsn");
    if (k->progress.frontier[0] == '[' && k->progress.frontier[1] != ']')
        floe_pg_lsn_format(strtoull(k->progress.frontier + 1, NULL, 10), k->pg_frontier_lsn,
                           sizeof k->pg_frontier_lsn);
    if (!v->pg_source || !k->pg_slot)
        return;
    floe_error *e = floe_error_new();
    if (e && floe_pg_slot_info_get(v->pg_source, k->pg_slot, &k->pg_slot_now,
                                   sizeof k->pg_slot_now, e) == FLOE_OK)
        k->pg_live = true;
    else
        snprintf(k->pg_error, sizeof k->pg_error, "%s", e ? floe_error_message(e) : "no memory");
    floe_error_free(e);
}

#define WORST_PARTITIONS 10           /* listed by their debt */

static int inspect_table(floe_table *t, const char *ident, uint64_t limit, bool json,
                         const char *pg_source, floe_error *err)
{
    inspect_view v = {.table = t, .ident = ident, .limit = limit, .pg_source = pg_source};
    int status = CLI_EXIT_FAILED;
    v.debt_known = floe_table_debt_get(t, &v.debt, sizeof v.debt, NULL) == FLOE_OK;
    if (v.debt_known && floe_table_partition_debt(t, WORST_PARTITIONS, &v.parts_json, NULL) ==
                            FLOE_OK)
        v.parts = json_loads(v.parts_json, 0, NULL);
    int rc = load_view(&v, err);
    for (size_t i = 0; rc == FLOE_OK && i < v.n_sinks; i++)
        pg_source_of(&v, &v.sinks[i]);
    if (rc != FLOE_OK) {
        cli_report("inspect", err);
    } else {
        if (json)
            inspect_print_json(&v);
        else
            inspect_print_text(&v);
        status = fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
    }
    free_view(&v);
    return status;
}

int cmd_inspect(int argc, char **argv)
{
    cli_opt opts[] = {
        CLI_TABLE_OPTS,
        {"limit", true, "show the newest N snapshots (default 20; all with --json; 0 = all)",
         NULL},
        {"json", false, "print one JSON object instead of text", NULL},
        {"source", true, "for tables fed by `floe pg`: read their replication slot's state "
                         "from this Postgres (connection string or URI)", NULL},
        {NULL, false, NULL, NULL},
    };
    int p = cli_parse(&CMD, argc, argv, opts);
    if (p != 0)
        return p > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    if (cli_require(&CMD, opts, (const char *const[]){"table", NULL}) != 0)
        return CLI_EXIT_USAGE;
    bool json = cli_has(opts, "json");
    uint64_t limit = json ? 0 : 20;
    if (cli_u64_opt(opts, "limit", &limit) != 0)
        return CLI_EXIT_USAGE;
    const char *ident = cli_get(opts, "table");
    floe_error *err = floe_error_new();
    floe_catalog *cat = NULL;
    floe_table *t = NULL;
    int status = CLI_EXIT_FAILED;
    if (!err || cli_open_catalog(opts, true, &cat, err) != FLOE_OK) {
        /* reported */
    } else if (floe_table_open(cat, ident, NULL, NULL, &t, err) != FLOE_OK) {
        cli_report("inspect", err);
    } else {
        status = inspect_table(t, ident, limit, json, cli_get(opts, "source"), err);
    }
    floe_table_free(t);
    floe_catalog_free(cat);
    floe_error_free(err);
    return status;
}
