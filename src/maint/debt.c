/*
 * debt.c - a table's debt: the figures that say what reading it costs
 * beyond its rows (small files, deletes readers must apply, manifests to
 * plan over) and what its metadata weighs (snapshots, the metadata file).
 * One plan of the current snapshot; nothing is written.  Also per
 * partition (spec and tuple): files, rows and deletes, the worst first.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "iceberg/partition_internal.h"
#include "maint/maint_internal.h"

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
    out->size = sizeof *out;
    const floe__metadata *md = t->loaded->metadata;
    int64_t target = floe__metadata_property_int(md, "write.target-file-size-bytes",
                                                 (int64_t)FLOE__DEFAULT_TARGET_FILE_SIZE);
    out->target_file_size = target > 0 ? (uint64_t)target : FLOE__DEFAULT_TARGET_FILE_SIZE;
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
    int32_t spec = floe__metadata_default_spec_id(md);
    for (size_t i = 0; i < p->n_data; i++) {
        if ((double)p->data[i].f.file.metrics.file_size <
            SMALL_RATIO * (double)out->target_file_size)
            out->small_data_files++;
        out->old_spec_data_files += p->data[i].f.spec_id != spec;
    }
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

/* ---- per partition ------------------------------------------------------------------------ */

/* One live file of the plan, by partition: data file i (>= 0) or delete
 * file -1 - i. */
typedef struct entry {
    int32_t spec_id;
    const floe__buf *tuple;
    int64_t i;
} entry;

typedef struct part_debt {
    int32_t spec_id;
    const floe__buf *tuple;
    uint64_t data_files, small_data_files, data_rows, data_bytes, delete_files, deleted_rows;
} part_debt;

static int by_partition(const void *x, const void *y)
{
    const entry *a = x, *b = y;
    if (a->spec_id != b->spec_id)
        return a->spec_id < b->spec_id ? -1 : 1;
    if (a->tuple->len != b->tuple->len)
        return a->tuple->len < b->tuple->len ? -1 : 1;
    return a->tuple->len ? memcmp(a->tuple->data, b->tuple->data, a->tuple->len) : 0;
}

/* Files readers open, then rows deleted: the worst first. */
static int by_cost(const void *x, const void *y)
{
    const part_debt *a = x, *b = y;
    uint64_t fa = a->data_files + a->delete_files, fb = b->data_files + b->delete_files;
    if (fa != fb)
        return fa > fb ? -1 : 1;
    return (a->deleted_rows < b->deleted_rows) - (a->deleted_rows > b->deleted_rows);
}

/* Partition values as JSON: {"name": value, ...} in spec spec_id bound to
 * the current schema, or null when it cannot be bound (a source column
 * dropped since). */
static int partition_json(const floe__table *t, const floe__schema *schema, const part_debt *d,
                          floe__buf *out, floe_error *err)
{
    const json_t *j = floe__metadata_spec_by_id(t->loaded->metadata, d->spec_id);
    floe__partition_spec *ps = NULL;
    if (!j || floe__partition_spec_from_json(j, schema, &ps, NULL) != FLOE_OK)
        return floe__buf_printf(out, err, "null");
    int rc = floe__datum_to_json(ps->type, d->tuple->data, d->tuple->len, out, NULL);
    floe__partition_spec_free(ps);
    return rc == FLOE_OK ? FLOE_OK : floe__buf_printf(out, err, "null");
}

static int partitions_json(const floe__table *t, part_debt *ds, size_t n, size_t max,
                           floe__buf *out, floe_error *err)
{
    floe__schema *schema = NULL;
    FLOE_FORWARD(floe__table_current_schema(t, &schema, err));
    int rc = floe__buf_printf(out, err, "{\"partitions\":%zu,\"worst\":[", n);
    for (size_t k = 0; rc == FLOE_OK && k < n && (!max || k < max); k++) {
        const part_debt *d = &ds[k];
        rc = floe__buf_printf(out, err, "%s{\"spec_id\":%d,\"partition\":", k ? "," : "",
                              (int)d->spec_id);
        if (rc == FLOE_OK)
            rc = partition_json(t, schema, d, out, err);
        if (rc == FLOE_OK)
            rc = floe__buf_printf(out, err, ",\"data_files\":%" PRIu64 ",\"small_data_files\":%"
                                  PRIu64 ",\"data_rows\":%" PRIu64 ",\"data_bytes\":%" PRIu64
                                  ",\"delete_files\":%" PRIu64 ",\"deleted_rows\":%" PRIu64 "}",
                                  d->data_files, d->small_data_files, d->data_rows,
                                  d->data_bytes, d->delete_files, d->deleted_rows);
    }
    if (rc == FLOE_OK)
        rc = floe__buf_printf(out, err, "]}");
    floe_schema_free(schema);
    return rc;
}

int floe__partition_debt(floe__table *t, size_t max, char **out, floe_error *err)
{
    *out = NULL;
    int64_t target = floe__metadata_property_int(t->loaded->metadata,
                                                 "write.target-file-size-bytes",
                                                 (int64_t)FLOE__DEFAULT_TARGET_FILE_SIZE);
    uint64_t small = target > 0 ? (uint64_t)target : FLOE__DEFAULT_TARGET_FILE_SIZE;
    floe__plan *p = NULL;
    FLOE_FORWARD_CTX(floe__table_plan(t, -1, &p, err), err, "planning %s.%s", t->ns, t->name);
    size_t n = p->n_data + p->n_deletes;
    entry *es = floe__calloc(n ? n : 1, sizeof *es);
    part_debt *ds = floe__calloc(n ? n : 1, sizeof *ds);
    int rc = es && ds ? FLOE_OK : FLOE_OOM(err);
    for (size_t i = 0; rc == FLOE_OK && i < p->n_data; i++)
        es[i] = (entry){p->data[i].f.spec_id, &p->data[i].f.file.partition, (int64_t)i};
    for (size_t k = 0; rc == FLOE_OK && k < p->n_deletes; k++)
        es[p->n_data + k] = (entry){p->deletes[k].spec_id, &p->deletes[k].file.partition,
                                    -1 - (int64_t)k};
    size_t nd = 0;
    if (rc == FLOE_OK && n) {
        qsort(es, n, sizeof *es, by_partition);
        for (size_t k = 0; k < n; k++) {
            if (!nd || by_partition(&es[k], &es[k - 1]) != 0)
                ds[nd++] = (part_debt){.spec_id = es[k].spec_id, .tuple = es[k].tuple};
            part_debt *d = &ds[nd - 1];
            if (es[k].i < 0) {
                d->delete_files++;
                continue;
            }
            const floe__content_file *f = &p->data[es[k].i].f.file;
            d->data_files++;
            d->data_rows += f->metrics.record_count;
            d->data_bytes += f->metrics.file_size;
            d->small_data_files += (double)f->metrics.file_size < SMALL_RATIO * (double)small;
            d->deleted_rows += floe__plan_deleted_rows(p, (size_t)es[k].i);
        }
        qsort(ds, nd, sizeof *ds, by_cost);
    }
    floe__buf b;
    floe__buf_init(&b, (size_t)64 << 20);
    if (rc == FLOE_OK)
        rc = partitions_json(t, ds, nd, max, &b, err);
    if (rc == FLOE_OK && !(*out = floe__buf_strdup(&b)))
        rc = FLOE_OOM(err);
    floe__buf_free(&b);
    floe__free(es);
    floe__free(ds);
    floe__plan_free(p);
    return rc;
}
