/*
 * inspect_text.c - `floe inspect` for people: a header, one aligned line
 * per snapshot (the newest --limit of them), the schema, the live row
 * count and where each sink id stands.  The view comes from inspect.c.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"

enum { COLS = 9, CELL = 160 };

typedef struct cells {
    char c[COLS][CELL];
} cells;

static const char *const HEAD[COLS] = {
    "SNAPSHOT", "COMMITTED (UTC)", "OPERATION", "DATA FILES", "ROWS", "DELETE FILES",
    "FRONTIER", "SINK", "REFS",
};
static const bool RIGHT[COLS] = {false, false, false, true, true, true, false, false, false};

static const char *or_dash(const char *s) { return s && *s ? s : "-"; }

/* Iceberg leaves out the added-* counts that are zero. */
static const char *or_zero(const char *s) { return s && *s ? s : "0"; }

static const char *or_q(const char *s) { return s ? s : "?"; }

static void snapshot_cells(const inspect_view *v, const inspect_snap *s, cells *out)
{
    const char *sink = inspect_prop(v, s, "floe.sink-id");
    const char *version = inspect_prop(v, s, "floe.sink-version");
    char refs[CELL - 16];
    inspect_refs(v, s, refs, sizeof refs);
    snprintf(out->c[0], CELL, "%" PRId64, s->info.snapshot_id);
    inspect_time_text(s->info.timestamp_ms, false, out->c[1], CELL);
    snprintf(out->c[2], CELL, "%s", or_dash(s->info.operation));
    snprintf(out->c[3], CELL, "%s", or_zero(inspect_prop(v, s, "added-data-files")));
    snprintf(out->c[4], CELL, "%s", or_zero(inspect_prop(v, s, "added-records")));
    snprintf(out->c[5], CELL, "%s", or_zero(inspect_prop(v, s, "added-delete-files")));
    snprintf(out->c[6], CELL, "%s", or_dash(inspect_prop(v, s, "floe.frontier")));
    if (sink && version)
        snprintf(out->c[7], CELL, "%s v%s", sink, version);
    else
        snprintf(out->c[7], CELL, "%s", or_dash(sink));
    if (!s->on_main)
        snprintf(out->c[8], CELL, "%s%snot on main", refs, *refs ? ", " : "");
    else
        snprintf(out->c[8], CELL, "%s", refs);
}

static void print_row(const char *const *c, const size_t *width)
{
    size_t last = COLS;
    while (last > 0 && !*c[last - 1])
        last--;                                /* no trailing blanks */
    fputs(" ", stdout);
    for (size_t i = 0; i < last; i++) {
        int w = i + 1 == last && !RIGHT[i] ? 0 : (int)width[i];
        printf(RIGHT[i] ? " %*s" : " %-*s", w, c[i]);
        if (i + 1 < last)
            fputs(" ", stdout);
    }
    fputs("\n", stdout);
}

static void print_snapshots(const inspect_view *v)
{
    size_t shown = v->n_snaps - v->first;
    if (v->n_snaps == 0) {
        printf("\nsnapshots: none\n");
        return;
    }
    if (v->first)
        printf("\nsnapshots: the newest %zu of %zu (%zu older left out; --limit 0 shows all)\n",
               shown, v->n_snaps, v->first);
    else
        printf("\nsnapshots: %zu (files and rows each one added)\n", v->n_snaps);
    cells *rows = calloc(shown, sizeof *rows);
    if (!rows) {
        printf("  (out of memory)\n");
        return;
    }
    size_t width[COLS];
    for (size_t j = 0; j < COLS; j++)
        width[j] = strlen(HEAD[j]);
    for (size_t i = 0; i < shown; i++) {
        snapshot_cells(v, &v->snaps[v->first + i], &rows[i]);
        for (size_t j = 0; j < COLS; j++)
            if (strlen(rows[i].c[j]) > width[j])
                width[j] = strlen(rows[i].c[j]);
    }
    print_row(HEAD, width);
    for (size_t i = 0; i < shown; i++) {
        const char *c[COLS];
        for (size_t j = 0; j < COLS; j++)
            c[j] = rows[i].c[j];
        print_row(c, width);
    }
    free(rows);
}

/* A member's text (see cli_json_text) in a buffer of its own. */
typedef struct text { char s[64]; } text;
static const char *member(const json_t *o, const char *k, text *t)
{
    return cli_json_text(json_object_get(o, k), t->s, sizeof t->s);
}

/* The name of the top-level column with field id `id`, or NULL. */
static const char *column_name(const inspect_view *v, const json_t *id)
{
    const json_t *fields = json_object_get(v->schema, "fields");
    for (size_t i = 0; json_is_integer(id) && i < json_array_size(fields); i++) {
        const json_t *f = json_array_get(fields, i);
        if (json_equal(json_object_get(f, "id"), id))
            return cli_json_str(f, "name");
    }
    return NULL;
}

/* The default partition spec: "partitioning: none", or one line a field. */
static void print_partitioning(const inspect_view *v)
{
    const json_t *def = json_object_get(v->specs, "default-spec-id");
    const json_t *specs = json_object_get(v->specs, "specs");
    const json_t *spec = NULL;
    for (size_t i = 0; json_is_integer(def) && i < json_array_size(specs); i++) {
        if (json_equal(json_object_get(json_array_get(specs, i), "spec-id"), def))
            spec = json_array_get(specs, i);
    }
    const json_t *fields = json_object_get(spec, "fields");
    if (json_array_size(fields) == 0) {
        printf("\npartitioning: none\n");
        return;
    }
    printf("\npartitioning: spec %" JSON_INTEGER_FORMAT " (%zu spec%s in all)\n",
           json_integer_value(def), json_array_size(specs), json_array_size(specs) == 1 ? "" : "s");
    for (size_t i = 0; i < json_array_size(fields); i++) {
        const json_t *f = json_array_get(fields, i);
        const json_t *src = json_object_get(f, "source-id");
        const char *col = column_name(v, src);
        text fid, sid;
        printf("  %4s  %s = %s(%s)\n", or_q(member(f, "field-id", &fid)),
               or_dash(cli_json_str(f, "name")),
               or_dash(cli_json_str(f, "transform")),
               col ? col : or_q(member(f, "source-id", &sid)));
    }
}

static void print_schema(const inspect_view *v)
{
    const json_t *fields = json_object_get(v->schema, "fields");
    if (!json_is_array(fields)) {
        printf("\nschema: %s\n", v->schema_json ? v->schema_json : "unknown");
        return;
    }
    size_t n = json_array_size(fields);
    const json_t *sid = json_object_get(v->schema, "schema-id");
    printf("\nschema: %zu column%s", n, n == 1 ? "" : "s");
    if (json_is_integer(sid))
        printf(" (schema id %" JSON_INTEGER_FORMAT ")", json_integer_value(sid));
    printf("\n");
    size_t wname = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = cli_json_str(json_array_get(fields, i), "name");
        if (name && strlen(name) > wname)
            wname = strlen(name);
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *f = json_array_get(fields, i);
        char type[4096];
        inspect_type_text(json_object_get(f, "type"), type, sizeof type);
        text id;
        printf("  %4s  %-*s  %s%s\n", or_q(member(f, "id", &id)), (int)wname,
               or_dash(cli_json_str(f, "name")), type,
               json_is_true(json_object_get(f, "required")) ? " not null" : "");
    }
}

static void print_live(const inspect_view *v)
{
    const inspect_live *l = &v->live;
    if (v->current < 0)
        printf("\nlive rows: 0 (no current snapshot)\n");
    else if (!l->known)
        printf("\nlive rows: unknown (the current snapshot's summary has no total-records)\n");
    else if (l->exact)
        printf("\nlive rows: %" PRIu64 " (total-records %" PRIu64 " - total-position-deletes "
               "%" PRIu64 ")\n", l->rows, l->records, l->position_deletes);
    else
        printf("\nlive rows: at most %" PRIu64 " (total-records %" PRIu64 " - total-position-"
               "deletes %" PRIu64 "; %" PRIu64 " equality deletes remove an unknown number "
               "more)\n", l->rows, l->records, l->position_deletes, l->equality_deletes);
}

/* A sink fed by a Postgres replication slot (floe pg). */
static void print_pg(const inspect_sink *k)
{
    if (!k->pg_slot)
        return;
    printf("      fed by Postgres: table %s of database %s, slot %s (publication %s)\n",
           or_dash(k->pg_table), or_dash(k->pg_database), k->pg_slot,
           or_dash(k->pg_publication));
    printf("      frontier LSN %s; the slot's confirmed flush LSN was %s when it committed\n",
           or_dash(k->pg_frontier_lsn), or_dash(k->pg_confirmed));
    if (k->pg_live && !k->pg_slot_now.exists) {
        printf("      slot %s now: missing on the server\n", k->pg_slot);
    } else if (k->pg_live) {
        char c[24], r[24];
        floe_pg_lsn_format(k->pg_slot_now.confirmed_flush_lsn, c, sizeof c);
        floe_pg_lsn_format(k->pg_slot_now.restart_lsn, r, sizeof r);
        printf("      slot %s now: confirmed flush LSN %s, restart LSN %s, %s%s%s\n", k->pg_slot, c,
               r, k->pg_slot_now.active ? "active" : "inactive",
               k->pg_slot_now.wal_status[0] ? ", WAL " : "", k->pg_slot_now.wal_status);
    } else if (k->pg_error[0]) {
        printf("      slot %s now: cannot tell (%s)\n", k->pg_slot, k->pg_error);
    }
}

static void print_sinks(const inspect_view *v)
{
    if (v->n_sinks == 0) {
        printf("\nsinks: none (no snapshot records a floe sink)\n");
        return;
    }
    printf("\nsinks: %zu (where each stands on main's history)\n", v->n_sinks);
    size_t w = 0;
    for (size_t i = 0; i < v->n_sinks; i++)
        if (strlen(v->sinks[i].id) > w)
            w = strlen(v->sinks[i].id);
    for (size_t i = 0; i < v->n_sinks; i++) {
        const floe_sink_progress *p = &v->sinks[i].progress;
        printf("  %-*s  ", (int)w, v->sinks[i].id);
        if (p->state == FLOE_PROGRESS_FOUND)
            printf("frontier %s, version %" PRIu64 ", snapshot %" PRId64, p->frontier,
                   p->sink_version, p->snapshot_id);
        else if (p->state == FLOE_PROGRESS_UNKNOWN)
            printf("unknown (history expired; --resume-from sets where it goes on)");
        else
            printf("none on main");
        if (p->tag_snapshot_id >= 0 && p->tag_snapshot_id == p->snapshot_id)
            printf(" (tag floe-%s)", v->sinks[i].id);
        else if (p->tag_snapshot_id >= 0)
            printf(" (tag floe-%s at snapshot %" PRId64 ")", v->sinks[i].id, p->tag_snapshot_id);
        printf("\n");
        print_pg(&v->sinks[i]);
    }
}

static void print_debt(const inspect_view *v)
{
    if (!v->debt_known) {
        printf("\ndebt: unknown (the manifests could not be read)\n");
        return;
    }
    const floe_table_debt *d = &v->debt;
    printf("\ndebt (what reading costs beyond the rows; floe maintain pays it):\n"
           "  data files      %" PRIu64 " (%" PRIu64 " below 75%% of the %" PRIu64
           "-byte target), %" PRIu64 " bytes, %" PRIu64 " rows\n"
           "  delete files    %" PRIu64 " (%" PRIu64 " position, %" PRIu64 " DVs, %" PRIu64
           " equality); %.1f%% of the rows deleted by position\n"
           "  manifests       %" PRIu64 " (%" PRIu64 " data, %" PRIu64 " delete)\n"
           "  snapshots       %" PRIu64 ", the oldest %.0fs old\n"
           "  metadata        %" PRIu64 " bytes, %" PRIu64 " earlier files in its log\n",
           d->data_files, d->small_data_files, d->target_file_size, d->data_bytes,
           d->data_rows, d->delete_files, d->position_delete_files, d->deletion_vectors,
           d->equality_delete_files, 100 * d->deleted_ratio,
           d->data_manifests + d->delete_manifests, d->data_manifests, d->delete_manifests,
           d->snapshots, d->oldest_snapshot_age_ms < 0 ? 0 : d->oldest_snapshot_age_ms / 1e3,
           d->metadata_bytes, d->metadata_log_files);
    if (d->old_spec_data_files)
        printf("  older specs     %" PRIu64 " data files of an older partition spec (floe "
               "maintain --compact-old-specs rewrites them into the current one)\n",
               d->old_spec_data_files);
}

/* A partition tuple as "name=value, ..." ("?" when its spec no longer binds). */
static void print_tuple(const json_t *part)
{
    if (!json_is_object(part)) {
        printf("?");
        return;
    }
    if (!json_object_size(part))
        printf("(unpartitioned)");
    const char *name;
    const json_t *x;
    bool first = true;
    json_object_foreach((json_t *)part, name, x) {
        char buf[256];
        printf("%s%s=%s", first ? "" : ", ", name, or_q(cli_json_text(x, buf, sizeof buf)));
        first = false;
    }
}

/* The partitions that cost most (a partitioned table only). */
static void print_partition_debt(const inspect_view *v)
{
    const json_t *worst = json_object_get(v->parts, "worst");
    size_t n = json_array_size(worst);
    text parts;
    if (!member(v->parts, "partitions", &parts) || !n ||
        (n == 1 && !json_object_size(json_object_get(json_array_get(worst, 0), "partition"))))
        return;                                  /* unpartitioned */
    printf("  partitions      %s; the %zu with the most files:\n", parts.s, n);
    for (size_t i = 0; i < n; i++) {
        const json_t *w = json_array_get(worst, i);
        printf("    ");
        print_tuple(json_object_get(w, "partition"));
        text t[6];
        printf("  (spec %s): %s data files (%s small), %s rows, %s delete files, %s rows "
               "deleted\n", or_dash(member(w, "spec_id", &t[0])),
               or_dash(member(w, "data_files", &t[1])),
               or_dash(member(w, "small_data_files", &t[2])),
               or_dash(member(w, "data_rows", &t[3])), or_dash(member(w, "delete_files", &t[4])),
               or_dash(member(w, "deleted_rows", &t[5])));
    }
}

void inspect_print_text(const inspect_view *v)
{
    printf("table     %s\nmetadata  %s\ndata      %s\n", v->ident,
           floe_table_metadata_location(v->table), floe_table_data_location(v->table));
    if (v->current < 0)
        printf("current   none (no snapshots)\n");
    else
        printf("current   %" PRId64 " (main)\n", v->current);
    print_snapshots(v);
    print_schema(v);
    print_partitioning(v);
    print_live(v);
    print_debt(v);
    print_partition_debt(v);
    print_sinks(v);
}
