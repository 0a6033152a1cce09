/*
 * maintain.c - the public maintenance API (floe.h): one run of compaction,
 * expiry and orphan removal in that order (compaction first, so that the
 * files it replaced can go with the snapshots that expire), and a table's
 * debt.
 */
#include "maint/maint_internal.h"

#define DAY_MS ((int64_t)24 * 3600 * 1000)

void floe_maintain_options_init(floe_maintain_options *o, size_t size)
{
    floe_maintain_options d = {.size = sizeof d, .expire_older_than_ms = -1,
                               .orphan_older_than_ms = -1};
    floe__abi_init(o, size, &d, sizeof d);
}

static uint64_t ms_since(uint64_t t0)
{
    return (floe__monotonic_ns() - t0) / 1000000;
}

static void report_removal(const floe__removal *rm, floe_maintain_report *r)
{
    r->manifest_lists_deleted += rm->files[FLOE_REACH_LIST];
    r->manifests_deleted += rm->files[FLOE_REACH_MANIFEST];
    r->data_files_deleted += rm->files[FLOE_REACH_DATA];
    r->delete_files_deleted += rm->files[FLOE_REACH_DELETE];
    r->statistics_files_deleted += rm->files[FLOE_REACH_STATS];
    r->bytes_deleted += rm->bytes;
    r->delete_failures += rm->failed;
}

static int compact_step(floe__table *t, const floe_maintain_options *o, floe_maintain_report *r,
                        floe_error *err)
{
    floe__compact_options co = {.target_file_size = o->target_file_size,
                                .all = o->compact_all != 0,
                                .respec = o->compact_old_specs != 0,
                                .max_bytes = o->compact_max_bytes,
                                .dry_run = o->dry_run != 0};
    floe__compact_result cr;
    uint64_t t0 = floe__monotonic_ns();
    int rc = floe__compact(t, &co, &cr, err);
    r->compact_ms += ms_since(t0);
    r->compact_groups += cr.groups;
    r->compact_groups_failed += cr.groups_failed;
    r->compact_conflicts += cr.conflicts;
    r->files_rewritten += cr.files_rewritten;
    r->files_written += cr.files_written;
    r->delete_files_dropped += cr.delete_files_dropped;
    r->rows_rewritten += cr.rows_read;
    r->bytes_rewritten += cr.bytes_read;
    r->bytes_written += cr.bytes_written;
    return rc;
}

static int expire_step(floe__table *t, const floe_maintain_options *o, floe_maintain_report *r,
                       floe_error *err)
{
    floe__expire_options eo = {.older_than_ms = o->expire_older_than_ms,
                               .retain_last = o->retain_last, .dry_run = o->dry_run != 0,
                               .clean_files = true};
    floe__expire_result er;
    uint64_t t0 = floe__monotonic_ns();
    int rc = floe__table_refresh(t, err);
    if (rc == FLOE_OK)
        rc = floe__expire(t, &eo, &er, err);
    r->expire_ms += ms_since(t0);
    if (rc == FLOE_OK) {
        r->snapshots_expired += er.snapshots_expired;
        r->refs_removed += er.refs_removed;
        report_removal(&er.removed, r);
    }
    return rc;
}

static int orphans_step(floe__table *t, const floe_maintain_options *o, floe_maintain_report *r,
                        floe_error *err)
{
    floe__orphan_options oo = {.older_than_ms = o->orphan_older_than_ms >= 0
                                                    ? o->orphan_older_than_ms
                                                    : DAY_MS,
                               .dry_run = o->dry_run != 0};
    floe__orphan_result orr;
    uint64_t t0 = floe__monotonic_ns();
    int rc = floe__remove_orphans(t, &oo, &orr, err);
    r->orphans_ms += ms_since(t0);
    if (rc == FLOE_OK) {
        r->files_listed += orr.listed;
        r->orphans_found += orr.orphans;
        r->orphans_too_young += orr.too_young;
        uint64_t n = 0;
        for (int k = 0; k < FLOE_REACH_KINDS; k++)
            n += orr.removed.files[k];
        r->orphans_deleted += n;
        r->bytes_deleted += orr.removed.bytes;
        r->delete_failures += orr.removed.failed;
    }
    return rc;
}

static int maintain(floe__table *t, const floe_maintain_options *o, floe_maintain_report *r,
                    floe_error *err)
{
    FLOE_FORWARD(floe__table_refresh(t, err));
    FLOE_FORWARD(floe__table_check_format(t, err));
    if (o->compact)
        FLOE_FORWARD(compact_step(t, o, r, err));
    if (o->expire)
        FLOE_FORWARD(expire_step(t, o, r, err));
    if (o->remove_orphans)
        FLOE_FORWARD(orphans_step(t, o, r, err));
    return FLOE_OK;
}

int floe_table_maintain(floe_table *table, const floe_maintain_options *opts,
                        floe_maintain_report *report, size_t report_size, floe_error *err)
{
    FLOE_RETURN_IF(!table || !opts, err, FLOE_EINVAL, "maintain: NULL argument");
    floe_maintain_options o;
    FLOE_FORWARD(FLOE__OPTIONS_IN(floe_maintain_options, &o, opts, err));
    floe_maintain_report r = {.size = sizeof r};
    int rc = maintain(floe__table_of(table), &o, &r, err);
    floe__abi_out(report, report_size, &r, sizeof r);
    return rc;
}

int floe_table_debt_get(floe_table *table, floe_table_debt *out, size_t size, floe_error *err)
{
    FLOE_RETURN_IF(!table || !out, err, FLOE_EINVAL, "debt: NULL argument");
    floe_table_debt d;
    FLOE_FORWARD(floe__debt(floe__table_of(table), &d, err));
    floe__abi_out(out, size, &d, sizeof d);
    return FLOE_OK;
}

int floe_table_partition_debt(floe_table *table, size_t max, char **out, floe_error *err)
{
    FLOE_RETURN_IF(!table || !out, err, FLOE_EINVAL, "partition debt: NULL argument");
    return floe__partition_debt(floe__table_of(table), max, out, err);
}
