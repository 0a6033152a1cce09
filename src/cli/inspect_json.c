/*
 * inspect_json.c - `floe inspect --json`: the view of inspect.c as one JSON
 * object.  Ids, sequence numbers, timestamps and counts are JSON numbers;
 * frontiers are JSON arrays ([t] or []), as SPEC.md serialises them; each
 * snapshot's raw summary stays a map of strings, as Iceberg writes it, and
 * its decimal-integer values are repeated as numbers under "counts".
 */
#include <inttypes.h>
#include <string.h>

#include "cli/cli_internal.h"

/* A JSON integer as Iceberg summaries write counts: no sign or leading zero games. */
static bool decimal_integer(const char *s)
{
    const char *d = s[0] == '-' ? s + 1 : s;
    size_t n = strspn(d, "0123456789");
    return n > 0 && n <= 20 && !d[n] && !(d[0] == '0' && n > 1);
}

/* "[t]" or "[]" in the frontier syntax. */
static bool frontier_syntax(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 2 || s[0] != '[' || s[n - 1] != ']')
        return false;
    size_t digits = strspn(s + 1, "0123456789");
    return digits == n - 2 && (digits <= 1 || s[1] != '0');
}

static void json_key(const char *key, bool first)
{
    printf("%s", first ? "" : ",");
    cli_json_string(stdout, key);
    printf(":");
}

static void json_str_or_null(const char *s)
{
    if (s)
        cli_json_string(stdout, s);
    else
        printf("null");
}

static void json_id_or_null(int64_t id)
{
    if (id >= 0)
        printf("%" PRId64, id);
    else
        printf("null");
}

static void json_frontier(const char *s)
{
    printf("%s", frontier_syntax(s) ? s : "null");
}

static void json_summary(const inspect_view *v, const inspect_snap *s, bool counts)
{
    printf("{");
    bool first = true;
    for (size_t j = 0; j < s->info.property_count; j++) {
        const char *k = "", *val = "";
        if (floe_table_snapshot_property_at(v->table, s->index, j, &k, &val, NULL) != FLOE_OK ||
            (counts && !decimal_integer(val)))
            continue;
        json_key(k, first);
        first = false;
        if (counts)
            printf("%s", val);
        else
            cli_json_string(stdout, val);
    }
    printf("}");
}

static void json_floe(const inspect_view *v, const inspect_snap *s)
{
    const char *frontier = inspect_prop(v, s, "floe.frontier");
    const char *sink = inspect_prop(v, s, "floe.sink-id");
    const char *version = inspect_prop(v, s, "floe.sink-version");
    if (!frontier && !sink) {
        printf("null");
        return;
    }
    printf("{\"frontier\":");
    json_frontier(frontier);
    printf(",\"sink_id\":");
    json_str_or_null(sink);
    printf(",\"sink_version\":%s}", version && decimal_integer(version) ? version : "null");
}

static void json_refs(const inspect_view *v, const inspect_snap *s)
{
    printf("[");
    bool first = true;
    if (s->info.snapshot_id == v->current) {
        printf("\"main\"");
        first = false;
    }
    for (size_t i = 0; i < v->n_sinks; i++)
        if (v->sinks[i].progress.tag_snapshot_id == s->info.snapshot_id) {
            char tag[512];
            snprintf(tag, sizeof tag, "floe-%s", v->sinks[i].id);
            printf("%s", first ? "" : ",");
            first = false;
            cli_json_string(stdout, tag);
        }
    printf("]");
}

static void json_snapshot(const inspect_view *v, const inspect_snap *s)
{
    const floe_snapshot_info *si = &s->info;
    char when[48];
    inspect_time_text(si->timestamp_ms, true, when, sizeof when);
    printf("{\"snapshot_id\":%" PRId64 ",\"parent_snapshot_id\":", si->snapshot_id);
    json_id_or_null(si->parent_id);
    printf(",\"sequence_number\":%" PRId64 ",\"timestamp_ms\":%" PRId64 ",\"committed_at\":",
           si->sequence_number, si->timestamp_ms);
    cli_json_string(stdout, when);
    printf(",\"operation\":");
    cli_json_string(stdout, si->operation);
    printf(",\"manifest_list\":");
    cli_json_string(stdout, si->manifest_list);
    printf(",\"current\":%s,\"on_main\":%s,\"refs\":",
           si->snapshot_id == v->current ? "true" : "false", s->on_main ? "true" : "false");
    json_refs(v, s);
    printf(",\"floe\":");
    json_floe(v, s);
    printf(",\"summary\":");
    json_summary(v, s, false);
    printf(",\"counts\":");
    json_summary(v, s, true);
    printf("}");
}

/* Kept as before: the newest snapshot carrying floe.frontier, its summary's strings. */
static void json_newest_frontier(const inspect_view *v)
{
    for (size_t i = v->n_snaps; i-- > 0;) {
        const inspect_snap *s = &v->snaps[i];
        const char *f = inspect_prop(v, s, "floe.frontier");
        if (!f)
            continue;
        const char *sink = inspect_prop(v, s, "floe.sink-id");
        const char *version = inspect_prop(v, s, "floe.sink-version");
        printf("{\"snapshot_id\":%" PRId64 ",\"frontier\":", s->info.snapshot_id);
        cli_json_string(stdout, f);
        printf(",\"sink_id\":");
        cli_json_string(stdout, sink ? sink : "");
        printf(",\"sink_version\":");
        cli_json_string(stdout, version ? version : "");
        printf("}");
        return;
    }
    printf("null");
}

static void json_columns(const inspect_view *v)
{
    const json_t *fields = json_object_get(v->schema, "fields");
    printf("[");
    for (size_t i = 0; i < json_array_size(fields); i++) {
        const json_t *f = json_array_get(fields, i);
        const json_t *id = json_object_get(f, "id");
        char type[4096];
        inspect_type_text(json_object_get(f, "type"), type, sizeof type);
        if (json_is_integer(id))
            printf("%s{\"id\":%" JSON_INTEGER_FORMAT ",\"name\":", i ? "," : "",
                   json_integer_value(id));
        else
            printf("%s{\"id\":null,\"name\":", i ? "," : "");
        json_str_or_null(cli_json_str(f, "name"));
        printf(",\"type\":");
        cli_json_string(stdout, type);
        printf(",\"required\":%s}",
               json_is_true(json_object_get(f, "required")) ? "true" : "false");
    }
    printf("]");
}

static void json_live(const inspect_view *v)
{
    const inspect_live *l = &v->live;
    if (!l->known) {
        printf("null");
        return;
    }
    printf("{\"rows\":%" PRIu64 ",\"exact\":%s,\"total_records\":%" PRIu64
           ",\"total_position_deletes\":%" PRIu64 ",\"total_equality_deletes\":%" PRIu64 "}",
           l->rows, l->exact ? "true" : "false", l->records, l->position_deletes,
           l->equality_deletes);
}

static void json_str_field(const char *name, const char *v)
{
    printf(",\"%s\":", name);
    if (v)
        cli_json_string(stdout, v);
    else
        printf("null");
}

/* "postgres": {...} of a sink fed by a replication slot (floe pg). */
static void json_pg(const inspect_sink *k)
{
    if (!k->pg_slot)
        return;
    printf(",\"postgres\":{\"slot\":");
    cli_json_string(stdout, k->pg_slot);
    json_str_field("table", k->pg_table);
    json_str_field("database", k->pg_database);
    json_str_field("publication", k->pg_publication);
    json_str_field("frontier_lsn", k->pg_frontier_lsn[0] ? k->pg_frontier_lsn : NULL);
    json_str_field("slot_confirmed_lsn_at_commit", k->pg_confirmed);
    if (k->pg_live && k->pg_slot_now.exists) {
        char c[24], r[24];
        floe_pg_lsn_format(k->pg_slot_now.confirmed_flush_lsn, c, sizeof c);
        floe_pg_lsn_format(k->pg_slot_now.restart_lsn, r, sizeof r);
        printf(",\"slot_now\":{\"confirmed_flush_lsn\":\"%s\",\"restart_lsn\":\"%s\","
               "\"active\":%s", c, r, k->pg_slot_now.active ? "true" : "false");
        json_str_field("wal_status", k->pg_slot_now.wal_status);
        printf("}");
    } else if (k->pg_live) {
        printf(",\"slot_now\":{\"missing\":true}");
    } else if (k->pg_error[0]) {
        json_str_field("slot_now_error", k->pg_error);
    }
    printf("}");
}

static void json_sinks(const inspect_view *v)
{
    static const char *const STATE[] = {"none", "found", "unknown"};
    printf("[");
    for (size_t i = 0; i < v->n_sinks; i++) {
        const floe_sink_progress *p = &v->sinks[i].progress;
        bool found = p->state == FLOE_PROGRESS_FOUND;
        printf("%s{\"sink_id\":", i ? "," : "");
        cli_json_string(stdout, v->sinks[i].id);
        printf(",\"state\":\"%s\",\"frontier\":",
               (unsigned)p->state < 3 ? STATE[p->state] : "unknown");
        json_frontier(found ? p->frontier : NULL);
        if (found)
            printf(",\"sink_version\":%" PRIu64, p->sink_version);
        else
            printf(",\"sink_version\":null");
        printf(",\"snapshot_id\":");
        json_id_or_null(found ? p->snapshot_id : -1);
        printf(",\"tag_snapshot_id\":");
        json_id_or_null(p->tag_snapshot_id);
        json_pg(&v->sinks[i]);
        printf("}");
    }
    printf("]");
}

static void json_debt(const inspect_view *v)
{
    if (v->debt_known)
        cli_debt_json(&v->debt);
    else
        printf("null");
}

void inspect_print_json(const inspect_view *v)
{
    printf("{\"table\":");
    cli_json_string(stdout, v->ident);
    printf(",\"metadata_location\":");
    cli_json_string(stdout, floe_table_metadata_location(v->table));
    printf(",\"data_location\":");
    cli_json_string(stdout, floe_table_data_location(v->table));
    printf(",\"current_snapshot_id\":");
    json_id_or_null(v->current);
    printf(",\"snapshot_count\":%zu,\"limit\":%" PRIu64 ",\"snapshots_omitted\":%zu",
           v->n_snaps, v->limit, v->first);
    printf(",\"snapshots\":[");
    for (size_t i = v->first; i < v->n_snaps; i++) {
        printf("%s", i > v->first ? "," : "");
        json_snapshot(v, &v->snaps[i]);
    }
    printf("],\"frontier\":");
    json_newest_frontier(v);
    printf(",\"partition_specs\":%s", v->specs ? v->specs_json : "null");
    printf(",\"schema\":%s,\"columns\":", v->schema ? v->schema_json : "null");
    json_columns(v);
    printf(",\"live_rows\":");
    json_live(v);
    printf(",\"debt\":");
    json_debt(v);
    printf(",\"partition_debt\":%s", v->parts ? v->parts_json : "null");
    printf(",\"sinks\":");
    json_sinks(v);
    printf("}\n");
}
