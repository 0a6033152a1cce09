/*
 * debt.c - a table's debt: the figures that say what reading it costs
 * beyond its rows (small files, deletes readers must apply, manifests to
 * plan over) and what its metadata weighs (snapshots, the metadata file).
 * One plan of the current snapshot; nothing is written.
 */
#include "maint/maint_internal.h"

#define DEFAULT_TARGET ((uint64_t)512 << 20)
#define SMALL_RATIO 0.75

static uint64_t metadata_bytes(const floe__metadata *md)
{
    floe__buf b;
    floe__buf_init(&b, FLOE_METADATA_MAX_BYTES);
    uint64_t n = floe__metadata_write_json(md, &b, NULL) == FLOE_OK ? b.len : 0;
    floe__buf_free(&b);
    return n;
}

static void snapshot_figures(const floe__metadata *md, int64_t now, floe_table_debt *d)
{
    size_t n = floe__metadata_snapshot_count(md);
    d->snapshots = n;
    d->oldest_snapshot_age_ms = -1;
    for (size_t i = 0; i < n; i++) {
        int64_t age = now - floe__metadata_snapshot_at(md, i)->timestamp_ms;
        if (age > d->oldest_snapshot_age_ms)
            d->oldest_snapshot_age_ms = age;
    }
    d->metadata_log_files = floe__metadata_metadata_log_count(md);
    d->metadata_bytes = metadata_bytes(md);
}

int floe__debt(floe__table *t, floe_table_debt *out, floe_error *err)
{
    memset(out, 0, sizeof *out);
    const floe__metadata *md = t->loaded->metadata;
    int64_t target = floe__metadata_property_int(md, "write.target-file-size-bytes",
                                                 (int64_t)DEFAULT_TARGET);
    out->target_file_size = target > 0 ? (uint64_t)target : DEFAULT_TARGET;
    floe__plan *p = NULL;
    FLOE_FORWARD_CTX(floe__table_plan(t, -1, &p, err), err, "planning %s.%s", t->ns, t->name);
    const floe__plan_totals *tot = &p->totals;
    out->data_files = tot->data_files;
    out->data_bytes = tot->data_size;
    out->data_rows = tot->data_rows;
    out->delete_files = tot->delete_files;
    out->position_delete_files = tot->pos_delete_files;
    out->deletion_vectors = tot->dvs;
    out->equality_delete_files = tot->eq_delete_files;
    out->deleted_rows = tot->pos_deletes;
    out->equality_deletes = tot->eq_deletes;
    out->deleted_ratio = tot->data_rows ? (double)tot->pos_deletes / (double)tot->data_rows : 0;
    for (size_t i = 0; i < p->n_data; i++)
        if ((double)p->data[i].f.file.metrics.file_size <
            SMALL_RATIO * (double)out->target_file_size)
            out->small_data_files++;
    for (size_t i = 0; i < p->manifests.n; i++) {
        if (p->manifests.items[i].content == 0)
            out->data_manifests++;
        else
            out->delete_manifests++;
    }
    floe__plan_free(p);
    snapshot_figures(md, floe__now_ms(), out);
    return FLOE_OK;
}
