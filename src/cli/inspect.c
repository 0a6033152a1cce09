/*
 * inspect.c - `floe inspect`: a table's snapshots (ids, parents, sequence
 * numbers, times, operations, summaries) and the floe frontier it records,
 * as text or, with --json, as one JSON object.
 *
 * The frontier is the one the sink resumes from (SPEC.md section 5.1): the
 * newest snapshot by sequence number that carries floe.frontier, with its
 * floe.sink-id and floe.sink-version.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli_internal.h"

static const char USAGE[] =
    "floe inspect --table NS.NAME [--catalog URI] [--warehouse URI] [--catalog-name NAME] "
    "[--json]";

typedef struct snap {
    floe_snapshot_info info;
    size_t index;                 /* in the table's snapshot list */
} snap;

static int by_sequence(const void *a, const void *b)
{
    const snap *x = a, *y = b;
    if (x->info.sequence_number != y->info.sequence_number)
        return x->info.sequence_number < y->info.sequence_number ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* The snapshots sorted by sequence number (caller frees); NULL on failure. */
static snap *load_snapshots(const floe_table *t, size_t *n, floe_error *err)
{
    *n = floe_table_snapshot_count(t);
    snap *s = calloc(*n ? *n : 1, sizeof *s);
    if (!s)
        return NULL;
    for (size_t i = 0; i < *n; i++) {
        s[i].index = i;
        if (floe_table_snapshot(t, i, &s[i].info, err) != FLOE_OK) {
            free(s);
            return NULL;
        }
    }
    qsort(s, *n, sizeof *s, by_sequence);
    return s;
}

/* The newest snapshot carrying floe.frontier, or NULL. */
static const snap *frontier_snapshot(const floe_table *t, const snap *s, size_t n)
{
    for (size_t i = n; i-- > 0;)
        if (floe_table_snapshot_property(t, s[i].index, "floe.frontier"))
            return &s[i];
    return NULL;
}

static void format_time(int64_t ms, char *buf, size_t cap)
{
    time_t secs = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    struct tm tm;
    if (!gmtime_r(&secs, &tm)) {
        snprintf(buf, cap, "%lld ms", (long long)ms);
        return;
    }
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, cap - n, ".%03dZ", (int)(((ms % 1000) + 1000) % 1000));
}

static const char *prop(const floe_table *t, size_t i, const char *key)
{
    const char *v = floe_table_snapshot_property(t, i, key);
    return v ? v : "";
}

static void print_text(const floe_table *t, const char *ident, const snap *s, size_t n)
{
    int64_t cur = floe_table_current_snapshot_id(t);
    printf("table     %s\nmetadata  %s\ndata      %s\n", ident, floe_table_metadata_location(t),
           floe_table_data_location(t));
    if (cur < 0)
        printf("current   none (no snapshots)\n");
    else
        printf("current   %lld (%zu snapshots)\n", (long long)cur, n);
    const snap *f = frontier_snapshot(t, s, n);
    if (f)
        printf("frontier  %s from sink %s version %s (snapshot %lld)\n",
               prop(t, f->index, "floe.frontier"), prop(t, f->index, "floe.sink-id"),
               prop(t, f->index, "floe.sink-version"), (long long)f->info.snapshot_id);
    else
        printf("frontier  none (no snapshot records floe.frontier)\n");
    for (size_t i = 0; i < n; i++) {
        const floe_snapshot_info *si = &s[i].info;
        char when[48], parent[32] = "none";
        format_time(si->timestamp_ms, when, sizeof when);
        if (si->parent_id >= 0)
            snprintf(parent, sizeof parent, "%lld", (long long)si->parent_id);
        printf("\nsnapshot %lld%s\n  sequence %lld, parent %s, %s, %s\n",
               (long long)si->snapshot_id, si->snapshot_id == cur ? " (current)" : "",
               (long long)si->sequence_number, parent, when,
               *si->operation ? si->operation : "(no operation)");
        for (size_t j = 0; j < si->property_count; j++) {
            const char *k, *v;
            if (floe_table_snapshot_property_at(t, s[i].index, j, &k, &v, NULL) == FLOE_OK &&
                strcmp(k, "operation") != 0)
                printf("  %s = %s\n", k, v);
        }
    }
}

static void json_snapshot(const floe_table *t, const snap *s)
{
    const floe_snapshot_info *si = &s->info;
    printf("{\"snapshot_id\":%lld,\"parent_snapshot_id\":", (long long)si->snapshot_id);
    if (si->parent_id >= 0)
        printf("%lld", (long long)si->parent_id);
    else
        printf("null");
    printf(",\"sequence_number\":%lld,\"timestamp_ms\":%lld,\"operation\":",
           (long long)si->sequence_number, (long long)si->timestamp_ms);
    cli_json_string(stdout, si->operation);
    printf(",\"manifest_list\":");
    cli_json_string(stdout, si->manifest_list);
    printf(",\"summary\":{");
    for (size_t j = 0; j < si->property_count; j++) {
        const char *k = "", *v = "";
        floe_table_snapshot_property_at(t, s->index, j, &k, &v, NULL);
        printf("%s", j ? "," : "");
        cli_json_string(stdout, k);
        printf(":");
        cli_json_string(stdout, v);
    }
    printf("}}");
}

static void print_json(const floe_table *t, const char *ident, const snap *s, size_t n)
{
    int64_t cur = floe_table_current_snapshot_id(t);
    printf("{\"table\":");
    cli_json_string(stdout, ident);
    printf(",\"metadata_location\":");
    cli_json_string(stdout, floe_table_metadata_location(t));
    printf(",\"data_location\":");
    cli_json_string(stdout, floe_table_data_location(t));
    if (cur >= 0)
        printf(",\"current_snapshot_id\":%lld", (long long)cur);
    else
        printf(",\"current_snapshot_id\":null");
    printf(",\"snapshots\":[");
    for (size_t i = 0; i < n; i++) {
        printf("%s", i ? "," : "");
        json_snapshot(t, &s[i]);
    }
    printf("],\"frontier\":");
    const snap *f = frontier_snapshot(t, s, n);
    if (!f) {
        printf("null}\n");
        return;
    }
    printf("{\"snapshot_id\":%lld,\"frontier\":", (long long)f->info.snapshot_id);
    cli_json_string(stdout, prop(t, f->index, "floe.frontier"));
    printf(",\"sink_id\":");
    cli_json_string(stdout, prop(t, f->index, "floe.sink-id"));
    printf(",\"sink_version\":");
    cli_json_string(stdout, prop(t, f->index, "floe.sink-version"));
    printf("}}\n");
}

int cmd_inspect(int argc, char **argv)
{
    cli_opt opts[] = {
        CLI_TABLE_OPTS,
        {"json", false, "print one JSON object instead of text", NULL},
        {NULL, false, NULL, NULL},
    };
    int p = cli_parse(argc, argv, opts, USAGE);
    if (p != 0)
        return p > 0 ? 0 : 2;
    const char *ident = cli_get(opts, "table");
    if (!ident) {
        fprintf(stderr, "floe inspect: --table is required\n");
        cli_usage(stderr, opts, USAGE);
        return 2;
    }
    floe_error *err = floe_error_new();
    floe_catalog *cat = NULL;
    floe_table *t = NULL;
    snap *s = NULL;
    size_t n = 0;
    int status = 1;
    if (!err || cli_open_catalog(opts, true, &cat, err) != FLOE_OK) {
        /* reported */
    } else if (floe_table_open(cat, ident, NULL, NULL, &t, err) != FLOE_OK) {
        cli_report("inspect", err);
    } else if (!(s = load_snapshots(t, &n, err))) {
        cli_report("inspect", err);
    } else {
        if (cli_has(opts, "json"))
            print_json(t, ident, s, n);
        else
            print_text(t, ident, s, n);
        status = fflush(stdout) == 0 ? 0 : 1;
    }
    free(s);
    floe_table_free(t);
    floe_catalog_free(cat);
    floe_error_free(err);
    return status;
}
