/*
 * merge.c - manifest merging on commit, as Iceberg's merge-append does, so
 * that a table committed to every second keeps a bounded manifest list.
 *
 * Table properties (Java's names and defaults):
 *   commit.manifest-merge.enabled       true
 *   commit.manifest.min-count-to-merge  100
 *   commit.manifest.target-size-bytes   8 MiB
 *
 * The manifests this attempt carries forward from its parent (never the
 * ones it wrote itself) are grouped by content (data, deletes), in list
 * order (newest first), and packed into bins of at most the target size
 * from the oldest end, so that older bins are full and the newest one
 * takes what is left.  The newest bin is merged only once it holds
 * min-count manifests; every other bin of more than one manifest is merged
 * at once.  A merged manifest lists the live entries of its bin as
 * EXISTING with their snapshot ids, sequence numbers and first_row_id kept
 * (entries DELETED by earlier snapshots are dropped, as Java drops them).
 * Bins whose spec is partitioned, and on v3 data manifests without a
 * first_row_id (files from before an upgrade, whose row ids are inherited),
 * are left alone.
 */
#include <stdio.h>

#include "table/commit_internal.h"

#define PROP_ENABLED "commit.manifest-merge.enabled"
#define PROP_MIN_COUNT "commit.manifest.min-count-to-merge"
#define PROP_TARGET "commit.manifest.target-size-bytes"
#define DEFAULT_MIN_COUNT 100
#define DEFAULT_TARGET ((int64_t)8 << 20)

typedef struct bin {
    size_t from, n;                   /* indexes into the candidates array */
    int64_t bytes;
} bin;

typedef struct merging {
    floe__attempt *a;
    int64_t target, min_count;
    size_t *cand;                     /* list indexes of one content kind, newest first */
    size_t n_cand;
    bool *gone;                       /* per list item: replaced by a merged manifest */
    int written;                      /* merged manifests written so far (names) */
} merging;

/* Whether a carried manifest may be merged at all. */
static bool mergeable(const floe__attempt *a, const floe__manifest_file *m)
{
    const json_t *spec = floe__metadata_spec_by_id(a->md, m->spec_id);
    if (!spec || json_array_size(json_object_get(spec, "fields")) != 0)
        return false;
    return !(a->version >= 3 && m->content == 0 && !m->has_first_row_id);
}

/* Read the bin's manifests; keep their live entries as EXISTING. */
static int gather(merging *g, const bin *b, floe__manifest_entries *es, floe_error *err)
{
    for (size_t i = 0; i < b->n; i++) {
        const floe__manifest_file *mf = &g->a->list.items[g->cand[b->from + i]];
        size_t start = es->n;
        FLOE_FORWARD(floe__manifest_read_resolved(g->a->t->io, mf, es, err));
        size_t k = start;
        for (size_t j = start; j < es->n; j++) {
            floe__manifest_entry *e = &es->items[j];
            if (e->status == 2) {
                floe__free(e->file_format);
                floe__content_file_clear(&e->file);
                continue;
            }
            e->status = 0;
            es->items[k++] = *e;
        }
        es->n = k;
    }
    return FLOE_OK;
}

/* The smallest explicit first_row_id of the entries (v3 data), for the list. */
static void first_row_id(const floe__manifest_entries *es, floe__manifest_file *mf)
{
    for (size_t i = 0; i < es->n; i++) {
        const floe__content_file *f = &es->items[i].file;
        if (f->has_first_row_id && (!mf->has_first_row_id || f->first_row_id < mf->first_row_id)) {
            mf->has_first_row_id = true;
            mf->first_row_id = f->first_row_id;
        }
    }
}

static int write_merged(merging *g, const bin *b, floe_error *err)
{
    floe__attempt *a = g->a;
    const floe__manifest_file *first = &a->list.items[g->cand[b->from]];
    floe__manifest_entries es = {0};
    int rc = gather(g, b, &es, err);
    floe__manifest_meta m = {a->schema_json, floe__metadata_spec_by_id(a->md, first->spec_id),
                             first->content == 1, a->snapshot_id, a->seq};
    char name[64];
    snprintf(name, sizeof name, "%s-g%d.avro", a->uuid, g->written);
    char *path = rc == FLOE_OK ? floe__path_join(a->dir, name) : NULL;
    floe__manifest_file out = {0};
    if (rc == FLOE_OK && !path)
        rc = FLOE_OOM(err);
    if (rc == FLOE_OK)
        rc = floe__manifest_write_entries(a->t->io, path, &m, a->version, es.items, es.n, &out,
                                          err);
    if (rc == FLOE_OK && first->content == 0 && a->version >= 3)
        first_row_id(&es, &out);
    floe__manifest_entries_clear(&es);
    floe__free(path);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "merging %zu manifests", b->n);
    /* the merged manifest goes where the bin's newest one was; the rest go */
    size_t at = g->cand[b->from];
    floe__manifest_file_clear(&a->list.items[at]);
    a->list.items[at] = out;
    for (size_t i = 1; i < b->n; i++)
        g->gone[g->cand[b->from + i]] = true;
    a->n_merged_from += b->n;
    g->written++;
    a->merged[a->n_merged++] = at;
    return FLOE_OK;
}

/* Bins packed from the oldest end: bins[0] is the newest (maybe partial). */
static int pack(merging *g, bin **out, size_t *n_out, floe_error *err)
{
    bin *bins = floe__calloc(g->n_cand ? g->n_cand : 1, sizeof *bins);
    if (!bins)
        return FLOE_OOM(err);
    size_t nb = 0;
    for (size_t k = g->n_cand; k-- > 0;) {
        int64_t len = g->a->list.items[g->cand[k]].length;
        bin *b = nb ? &bins[nb - 1] : NULL;
        if (!b || b->bytes + len > g->target)
            b = &bins[nb++];
        b->from = k;
        b->n++;
        b->bytes += len;
    }
    for (size_t i = 0; i < nb / 2; i++) {               /* newest bin first */
        bin t = bins[i];
        bins[i] = bins[nb - 1 - i];
        bins[nb - 1 - i] = t;
    }
    *out = bins;
    *n_out = nb;
    return FLOE_OK;
}

static int merge_kind(merging *g, int32_t content, floe_error *err)
{
    floe__attempt *a = g->a;
    g->n_cand = 0;
    for (size_t i = a->n_new; i < a->list.n; i++) {
        const floe__manifest_file *m = &a->list.items[i];
        if (m->content == content && !g->gone[i] && mergeable(a, m))
            g->cand[g->n_cand++] = i;
    }
    bin *bins = NULL;
    size_t nb = 0;
    FLOE_FORWARD(pack(g, &bins, &nb, err));
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < nb; i++) {
        if (bins[i].n < 2 || (i == 0 && (int64_t)bins[i].n < g->min_count))
            continue;
        rc = write_merged(g, &bins[i], err);
    }
    floe__free(bins);
    return rc;
}

/* Drop the list items a merged manifest replaced, keeping the order. */
static void compact_list(floe__attempt *a, const bool *gone)
{
    size_t k = 0;
    for (size_t i = 0; i < a->list.n; i++) {
        if (gone[i]) {
            floe__manifest_file_clear(&a->list.items[i]);
            continue;
        }
        for (size_t j = 0; j < a->n_merged; j++)     /* keep the merged indexes true */
            if (a->merged[j] == i)
                a->merged[j] = k;
        a->list.items[k++] = a->list.items[i];
    }
    a->list.n = k;
}

int floe__attempt_merge(floe__attempt *a, floe_error *err)
{
    const floe__metadata *md = a->md;
    const char *on = floe__metadata_property(md, PROP_ENABLED);
    if (on && strcmp(on, "true") != 0)
        return FLOE_OK;
    merging g = {a, floe__metadata_property_int(md, PROP_TARGET, DEFAULT_TARGET),
                 floe__metadata_property_int(md, PROP_MIN_COUNT, DEFAULT_MIN_COUNT), NULL, 0,
                 NULL, 0};
    if (g.target <= 0)
        g.target = DEFAULT_TARGET;
    if (a->req->merge_all)
        g.min_count = 1;
    size_t n = a->list.n;
    g.cand = floe__calloc(n ? n : 1, sizeof *g.cand);
    g.gone = floe__calloc(n ? n : 1, sizeof *g.gone);
    a->merged = floe__calloc(n ? n : 1, sizeof *a->merged);
    int rc = g.cand && g.gone && a->merged ? FLOE_OK : FLOE_OOM(err);
    if (rc == FLOE_OK)
        rc = merge_kind(&g, 0, err);
    if (rc == FLOE_OK)
        rc = merge_kind(&g, 1, err);
    if (rc == FLOE_OK)
        compact_list(a, g.gone);
    floe__free(g.cand);
    floe__free(g.gone);
    return rc;
}
