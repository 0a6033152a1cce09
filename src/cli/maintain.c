/*
 * maintain.c - `floe maintain`: compaction, snapshot expiry and orphan
 * removal for a table written by anyone, safe while a sink (or another
 * engine) commits to it.  Prints the table's debt before and after, and
 * what each step did (or, with --dry-run, would do); --json gives the same
 * as one JSON object.
 *
 * With no step named, every step runs with the table's own settings
 * (history.expire.*, write.target-file-size-bytes, a one-day orphan
 * window).  Naming a step (--compact, --expire-older-than,
 * --retain-last, --remove-orphans-older-than, ...) runs only the named
 * ones.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli_internal.h"

static const char USAGE[] =
    "floe maintain --table NS.NAME [--compact] [--compact-all] [--compact-old-specs] "
    "[--target-file-size BYTES] [--compact-max-bytes BYTES] [--expire] "
    "[--expire-older-than AGE] [--retain-last N] "
    "[--remove-orphans] [--remove-orphans-older-than AGE] [--dry-run] [--json] "
    "[--catalog URI] [--warehouse URI] ...";

static const char NOTES[] =
    "With no step named, every step runs with the table's settings.  AGE is a number with\n"
    "ms, s, m, h or d (7d, 12h).  Exit status: 0 done, 1 failed (what was done before the\n"
    "failure stays done), 2 bad options.  See docs/maintenance.md.\n";

static const cli_command CMD = {"maintain", USAGE, NOTES};

static void human_bytes(uint64_t n, char *buf, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

static void human_age(int64_t ms, char *buf, size_t cap)
{
    if (ms < 0)
        snprintf(buf, cap, "none");
    else if (ms < 120000)
        snprintf(buf, cap, "%.1fs", (double)ms / 1000);
    else if (ms < 7200000)
        snprintf(buf, cap, "%" PRId64 "m", ms / 60000);
    else if (ms < 172800000)
        snprintf(buf, cap, "%" PRId64 "h", ms / 3600000);
    else
        snprintf(buf, cap, "%" PRId64 "d", ms / 86400000);
}

static void print_debt(const char *label, const floe_table_debt *d)
{
    char meta[32], age[32];
    human_bytes(d->metadata_bytes, meta, sizeof meta);
    human_age(d->oldest_snapshot_age_ms, age, sizeof age);
    char older[64] = "";
    if (d->old_spec_data_files)
        snprintf(older, sizeof older, ", %" PRIu64 " of older specs", d->old_spec_data_files);
    printf("%-10s data files %" PRIu64 " (%" PRIu64 " small%s), delete files %" PRIu64
           " (%" PRIu64 " DVs, %" PRIu64 " equality), deleted rows %.1f%%, manifests %" PRIu64
           ", snapshots %" PRIu64 " (oldest %s), metadata %s\n",
           label, d->data_files, d->small_data_files, older, d->delete_files, d->deletion_vectors,
           d->equality_delete_files, 100 * d->deleted_ratio,
           d->data_manifests + d->delete_manifests, d->snapshots, age, meta);
}

static void print_report(const floe_maintain_options *o, const floe_maintain_report *r)
{
    const char *will = o->dry_run ? "would rewrite" : "rewrote";
    char b[32];
    if (o->compact) {
        human_bytes(r->bytes_rewritten, b, sizeof b);
        printf("compact   %s %" PRIu64 " files (%s) in %" PRIu64 " groups", will,
               r->files_rewritten, b, r->compact_groups);
        if (!o->dry_run)
            printf(" into %" PRIu64 " files, %" PRIu64 " rows, %" PRIu64 " delete files dropped"
                   ", %" PRIu64 " groups given up, %" PRIu64 " conflicts, %.2fs",
                   r->files_written, r->rows_rewritten, r->delete_files_dropped,
                   r->compact_groups_failed, r->compact_conflicts,
                   (double)r->compact_ms / 1000);
        printf("\n");
    }
    if (o->expire) {
        human_bytes(r->bytes_deleted, b, sizeof b);
        printf("expire    %s %" PRIu64 " snapshots and %" PRIu64 " refs; %s %" PRIu64
               " manifest lists, %" PRIu64 " manifests, %" PRIu64 " data files, %" PRIu64
               " delete files, %" PRIu64 " statistics files, %.2fs\n",
               o->dry_run ? "would expire" : "expired", r->snapshots_expired, r->refs_removed,
               o->dry_run ? "would delete" : "deleted", r->manifest_lists_deleted,
               r->manifests_deleted, r->data_files_deleted, r->delete_files_deleted,
               r->statistics_files_deleted, (double)r->expire_ms / 1000);
    }
    if (o->remove_orphans)
        printf("orphans   %" PRIu64 " of %" PRIu64 " files unreached: %" PRIu64 " %s, %" PRIu64
               " inside the safety window, %.2fs\n", r->orphans_found, r->files_listed,
               r->orphans_deleted, o->dry_run ? "would be deleted" : "deleted",
               r->orphans_too_young, (double)r->orphans_ms / 1000);
    if (r->delete_failures)
        printf("note      %" PRIu64 " files could not be deleted (kept; a later run retries)\n",
               r->delete_failures);
}

static void json_debt(const char *key, const floe_table_debt *d)
{
    printf("\"%s\":", key);
    cli_debt_json(d);
}

static void json_report(const floe_maintain_options *o, const floe_maintain_report *r)
{
    printf("\"dry_run\":%s,\"steps\":{\"compact\":%s,\"expire\":%s,\"remove_orphans\":%s},"
           "\"report\":{", o->dry_run ? "true" : "false", o->compact ? "true" : "false",
           o->expire ? "true" : "false", o->remove_orphans ? "true" : "false");
    const struct { const char *k; uint64_t v; } f[] = {
        {"compact_groups", r->compact_groups}, {"compact_groups_failed", r->compact_groups_failed},
        {"compact_conflicts", r->compact_conflicts}, {"files_rewritten", r->files_rewritten},
        {"files_written", r->files_written}, {"delete_files_dropped", r->delete_files_dropped},
        {"rows_rewritten", r->rows_rewritten}, {"bytes_rewritten", r->bytes_rewritten},
        {"bytes_written", r->bytes_written}, {"snapshots_expired", r->snapshots_expired},
        {"refs_removed", r->refs_removed}, {"manifest_lists_deleted", r->manifest_lists_deleted},
        {"manifests_deleted", r->manifests_deleted}, {"data_files_deleted", r->data_files_deleted},
        {"delete_files_deleted", r->delete_files_deleted},
        {"statistics_files_deleted", r->statistics_files_deleted},
        {"files_listed", r->files_listed}, {"orphans_found", r->orphans_found},
        {"orphans_too_young", r->orphans_too_young}, {"orphans_deleted", r->orphans_deleted},
        {"bytes_deleted", r->bytes_deleted}, {"delete_failures", r->delete_failures},
        {"compact_ms", r->compact_ms}, {"expire_ms", r->expire_ms}, {"orphans_ms", r->orphans_ms}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        printf("%s\"%s\":%" PRIu64, i ? "," : "", f[i].k, f[i].v);
    printf("}");
}

/* The steps and settings the options ask for; -1 on a bad option. */
static int options(const cli_opt *opts, floe_maintain_options *o)
{
    floe_maintain_options_init(o, sizeof *o);
    size_t target = 0, max_bytes = 0;
    uint64_t retain = 0;
    if (cli_size_opt(opts, "target-file-size", &target) != 0 ||
        cli_size_opt(opts, "compact-max-bytes", &max_bytes) != 0 ||
        cli_u64_opt(opts, "retain-last", &retain) != 0 ||
        cli_age_opt(opts, "expire-older-than", &o->expire_older_than_ms) != 0 ||
        cli_age_opt(opts, "remove-orphans-older-than", &o->orphan_older_than_ms) != 0)
        return -1;
    if (retain > 1000000000 || (cli_has(opts, "retain-last") && retain == 0)) {
        cli_say("floe: --retain-last: give a positive number of snapshots\n");
        return -1;
    }
    o->target_file_size = target;
    o->compact_max_bytes = max_bytes;
    o->retain_last = (int)retain;
    o->compact_all = cli_has(opts, "compact-all");
    o->compact_old_specs = cli_has(opts, "compact-old-specs");
    o->compact = o->compact_all || o->compact_old_specs || cli_has(opts, "compact") || target ||
                 max_bytes;
    o->expire = cli_has(opts, "expire") || cli_has(opts, "expire-older-than") || retain;
    o->remove_orphans = cli_has(opts, "remove-orphans") ||
                        cli_has(opts, "remove-orphans-older-than");
    if (!o->compact && !o->expire && !o->remove_orphans)
        o->compact = o->expire = o->remove_orphans = 1;
    o->dry_run = cli_has(opts, "dry-run");
    return 0;
}

static int run(const cli_opt *opts, const floe_maintain_options *o, floe_error *err)
{
    floe_catalog *cat = NULL;
    floe_table *t = NULL;
    if (cli_open_catalog(opts, true, &cat, err) != FLOE_OK)
        return CLI_EXIT_FAILED;
    int status = CLI_EXIT_FAILED;
    floe_table_debt before, after;
    floe_maintain_report r;
    bool json = cli_has(opts, "json");
    if (floe_table_open(cat, cli_get(opts, "table"), NULL, NULL, &t, err) != FLOE_OK ||
        floe_table_debt_get(t, &before, sizeof before, err) != FLOE_OK) {
        cli_report("maintain", err);
        goto done;
    }
    int rc = floe_table_maintain(t, o, &r, sizeof r, err);
    if (rc == FLOE_OK)
        rc = floe_table_debt_get(t, &after, sizeof after, err);
    if (json) {
        printf("{\"table\":");
        cli_json_string(stdout, cli_get(opts, "table"));
        printf(",\"ok\":%s,", rc == FLOE_OK ? "true" : "false");
        json_debt("before", &before);
        printf(",");
        json_report(o, &r);
        if (rc == FLOE_OK) {
            printf(",");
            json_debt("after", &after);
        }
        printf("}\n");
    } else {
        printf("table     %s%s\n", cli_get(opts, "table"), o->dry_run ? " (dry run)" : "");
        print_debt("before", &before);
        print_report(o, &r);
        if (rc == FLOE_OK && !o->dry_run)
            print_debt("after", &after);
    }
    fflush(stdout);
    if (rc != FLOE_OK)
        cli_report("maintain", err);
    else
        status = CLI_EXIT_OK;
done:
    floe_table_free(t);
    floe_catalog_free(cat);
    return status;
}

int cmd_maintain(int argc, char **argv)
{
    cli_opt opts[] = {
        CLI_TABLE_OPTS,
        {"compact", false, "compact data files (small ones, those with many deletes)", NULL},
        {"compact-all", false, "rewrite every data file (into the current partition spec)", NULL},
        {"compact-old-specs", false, "also rewrite the data files of older partition specs "
                                     "into the current one", NULL},
        {"target-file-size", true, "size of the files compaction writes "
                                   "(default: write.target-file-size-bytes, 512 MiB)", NULL},
        {"compact-max-bytes", true, "stop starting compaction groups past this much read",
         NULL},
        {"expire", false, "expire snapshots by the table's history.expire.* settings", NULL},
        {"expire-older-than", true, "expire snapshots older than AGE (beyond --retain-last)",
         NULL},
        {"retain-last", true, "keep at least N snapshots of each branch (default: "
                              "history.expire.min-snapshots-to-keep, 1)", NULL},
        {"remove-orphans", false, "delete files no metadata reaches (older than a day)", NULL},
        {"remove-orphans-older-than", true, "the orphan safety window, AGE (default 1d)", NULL},
        {"dry-run", false, "say what would be done, change nothing", NULL},
        {"json", false, "print one JSON object", NULL},
        {NULL, false, NULL, NULL},
    };
    int p = cli_parse(&CMD, argc, argv, opts);
    if (p != 0)
        return p > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    static const char *const required[] = {"table", NULL};
    floe_maintain_options o;
    if (cli_require(&CMD, opts, required) != 0 || options(opts, &o) != 0)
        return CLI_EXIT_USAGE;
    floe_error *err = floe_error_new();
    if (!err)
        return CLI_EXIT_FAILED;
    int status = run(opts, &o, err);
    floe_error_free(err);
    return status;
}
