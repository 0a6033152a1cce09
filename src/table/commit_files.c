/*
 * commit_files.c - what one commit attempt writes and removes beyond the
 * caller's files: position deletes materialized for the table's format,
 * and content files removed from the parent snapshot.
 *
 * Against a plan of the parent snapshot (plan.c):
 *   - every path of req->remove must be a live file (a data file, a delete
 *     file, or the Puffin file of DVs); removing a data file also removes
 *     its DV and its file-scoped position delete files (the spec: no
 *     dangling DVs).  A path not found is FLOE_ECONFLICT: a concurrent
 *     commit removed it, the caller re-plans.
 *   - every data file req->deletes names must be live and not removed in
 *     the same commit, else FLOE_ECONFLICT.
 *   - v2 tables get one file-scoped position delete file per data file
 *     (rows sorted by position, referenced_data_file set); the data file's
 *     earlier file-scoped delete files are folded into it and removed in
 *     the same commit, so each data file keeps one.
 *   - v3 tables get one Puffin file with a deletion vector per data file;
 *     a data file that already has a DV gets the union, and the old DV's
 *     entry is removed in this commit (at most one DV per data file); its
 *     file-scoped Parquet position deletes (a table upgraded from v2) are
 *     folded in too; unscoped ones are FLOE_EUNSUPPORTED.
 * Every delete file and DV carries its data file's partition tuple and
 * spec id (a->written_specs), so it is scoped to that partition as the
 * spec requires.
 * Removed entries are recorded as (manifest, entry) of the plan; the
 * manifests holding them are rewritten with those entries DELETED and the
 * other live ones EXISTING (sequence numbers and first_row_id kept), as
 * Java's manifest filtering does.
 */
#include <stdio.h>
#include <stdlib.h>

#include "table/commit_internal.h"

void floe__commit_count(floe__commit_counts *c, const floe__content_file *f)
{
    uint64_t rows = f->metrics.record_count;
    bool dv = floe__content_is_dv(f);
    c->files_size += dv ? (uint64_t)f->content_size : f->metrics.file_size;
    switch (f->content) {
    case FLOE_CONTENT_DATA:
        c->data_files++;
        c->records += rows;
        break;
    case FLOE_CONTENT_POSITION_DELETES:
        c->delete_files++;
        c->pos_deletes += rows;
        if (dv)
            c->dvs++;
        else
            c->pos_files++;
        break;
    default:
        c->delete_files++;
        c->eq_files++;
        c->eq_deletes += rows;
        break;
    }
}

/* ---- marking removed entries ------------------------------------------------------------ */

static int mark(floe__attempt *a, const floe__plan_file *f, floe_error *err)
{
    if ((a->n_removed & (a->n_removed - 1)) == 0) {
        size_t cap = a->n_removed ? a->n_removed * 2 : 1;
        uint64_t *p = floe__realloc(a->removed, cap * sizeof *p);
        if (!p)
            return FLOE_OOM(err);
        a->removed = p;
    }
    a->removed[a->n_removed++] = (uint64_t)f->manifest << 32 | f->entry;
    return FLOE_OK;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static bool is_marked(const floe__attempt *a, uint32_t manifest, uint32_t entry)
{
    uint64_t key = (uint64_t)manifest << 32 | entry;
    return a->n_removed && bsearch(&key, a->removed, a->n_removed, sizeof key, cmp_u64) != NULL;
}

/* Sort and dedupe the marks, then count each removed file once. */
static void finish_marks(floe__attempt *a)
{
    if (a->n_removed)
        qsort(a->removed, a->n_removed, sizeof *a->removed, cmp_u64);
    size_t k = 0;
    for (size_t i = 0; i < a->n_removed; i++)
        if (k == 0 || a->removed[k - 1] != a->removed[i])
            a->removed[k++] = a->removed[i];
    a->n_removed = k;
    const floe__plan *p = a->plan;
    for (size_t i = 0; i < p->n_data; i++)
        if (is_marked(a, p->data[i].f.manifest, p->data[i].f.entry))
            floe__commit_count(&a->gone, &p->data[i].f.file);
    for (size_t i = 0; i < p->n_deletes; i++)
        if (is_marked(a, p->deletes[i].manifest, p->deletes[i].entry))
            floe__commit_count(&a->gone, &p->deletes[i].file);
}

/* ---- removals ------------------------------------------------------------------------------ */

/* A removed data file takes its DV and file-scoped position deletes along. */
static int mark_data(floe__attempt *a, const floe__plan_data *d, floe_error *err)
{
    FLOE_FORWARD(mark(a, &d->f, err));
    if (d->dv != SIZE_MAX)
        FLOE_FORWARD(mark(a, &a->plan->deletes[d->dv], err));
    for (size_t j = 0; j < d->n_pos; j++) {
        const floe__plan_file *x = &a->plan->deletes[d->pos[j]];
        if (x->file.referenced_data_file)
            FLOE_FORWARD(mark(a, x, err));
    }
    return FLOE_OK;
}

static int removals(floe__attempt *a, floe__pathmap *gone, floe_error *err)
{
    const floe__commit_request *r = a->req;
    bool *found = floe__calloc(r->n_remove ? r->n_remove : 1, sizeof *found);
    if (!found)
        return FLOE_OOM(err);
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < r->n_remove; i++)
        rc = r->remove[i] ? floe__pathmap_put(gone, r->remove[i], i, NULL, err)
                          : floe__err_set(err, FLOE_EINVAL, "commit: remove[%zu] is NULL", i);
    size_t k;
    for (size_t i = 0; rc == FLOE_OK && i < a->plan->n_data; i++)
        if (floe__pathmap_get(gone, a->plan->data[i].f.file.path, &k)) {
            found[k] = true;
            rc = mark_data(a, &a->plan->data[i], err);
        }
    for (size_t i = 0; rc == FLOE_OK && i < a->plan->n_deletes; i++)
        if (floe__pathmap_get(gone, a->plan->deletes[i].file.path, &k)) {
            found[k] = true;
            rc = mark(a, &a->plan->deletes[i], err);
        }
    for (size_t i = 0; rc == FLOE_OK && i < r->n_remove; i++)
        if (!found[i])
            rc = floe__err_set(err, FLOE_ECONFLICT, "file %s, to be removed, is not in snapshot "
                               "%lld (a concurrent commit removed it; plan again)", r->remove[i],
                               (long long)a->parent);
    floe__free(found);
    return rc;
}

/* ---- position deletes ------------------------------------------------------------------------ */

static bool added_here(const floe__attempt *a, const char *path)
{
    size_t i;
    return floe__pathmap_get(&a->added_data, path, &i);
}

/* The plan's live data file a delete targets (*out NULL: a data file this
 * commit adds, which deletes may target too), or FLOE_ECONFLICT. */
static int target(floe__attempt *a, const floe__pathmap *gone, const char *path,
                  const floe__plan_data **out, floe_error *err)
{
    size_t i;
    *out = NULL;
    if (!floe__pathmap_get(&a->plan->data_index, path, &i) && added_here(a, path))
        return FLOE_OK;
    FLOE_RETURN_IF(!floe__pathmap_get(&a->plan->data_index, path, &i), err, FLOE_ECONFLICT,
                   "data file %s, which position deletes target, is not in snapshot %lld (a "
                   "concurrent commit removed it; plan again)", path, (long long)a->parent);
    FLOE_RETURN_IF(floe__pathmap_get(gone, path, &i), err, FLOE_EINVAL,
                   "data file %s is both removed and given position deletes", path);
    floe__pathmap_get(&a->plan->data_index, path, &i);
    *out = &a->plan->data[i];
    return FLOE_OK;
}

/* The partition tuple and spec id of data file `path`: a live file of the
 * parent's plan, else one this commit adds (the table's spec).  NULL when
 * neither (target() has refused such a path already). */
static const floe__buf *data_partition(const floe__attempt *a, const char *path,
                                       int32_t *spec_id)
{
    size_t i;
    if (floe__pathmap_get(&a->plan->data_index, path, &i)) {
        *spec_id = a->plan->data[i].f.spec_id;
        return &a->plan->data[i].f.file.partition;
    }
    if (!floe__pathmap_get(&a->added_data, path, &i))
        return NULL;
    *spec_id = a->t->spec_id;
    return &a->req->files[i].partition;
}

/* Move f (a delete of data file `data_path`) into a->written with that
 * file's partition tuple and spec id; on failure f is removed and cleared. */
static int push_written(floe__attempt *a, floe__content_file *f, const char *data_path,
                        floe_error *err)
{
    int32_t spec = a->t->spec_id;
    const floe__buf *tuple = data_partition(a, data_path, &spec);
    int rc = FLOE_OK;
    floe__buf_reset(&f->partition);
    if (tuple && tuple->len)
        rc = floe__buf_append(&f->partition, tuple->data, tuple->len, err);
    if (rc == FLOE_OK)
        rc = floe__content_list_push(&a->written, f, err);
    if (rc != FLOE_OK) {
        floe__fileio_remove(a->t->io, f->path, NULL);
        floe__content_file_clear(f);
        return rc;
    }
    if (a->written.cap > a->n_written_specs) {       /* the list grew: so do the ids */
        int32_t *specs = floe__realloc(a->written_specs, a->written.cap * sizeof *specs);
        if (!specs)                                  /* f is the attempt's: cleanup removes it */
            return FLOE_OOM(err);
        a->written_specs = specs;
        a->n_written_specs = a->written.cap;
    }
    a->written_specs[a->written.n - 1] = spec;
    return FLOE_OK;
}

/* The positions data file d's own position delete files (file-scoped to
 * it) delete, ORed into `out`, and those files marked removed: the new
 * file written for d replaces them, so a data file keeps one file-scoped
 * delete file (or DV) however many commits delete from it.  Unscoped ones
 * (Spark's, which may apply to other files too) stay. */
static int fold_scoped(floe__attempt *a, const floe__plan_data *d, const char *path,
                       floe__posbitmap *out, floe_error *err)
{
    for (size_t k = 0; d && k < d->n_pos; k++) {
        const floe__plan_file *f = &a->plan->deletes[d->pos[k]];
        const char *ref = f->file.referenced_data_file;
        if (!ref || strcmp(ref, path) != 0)
            continue;
        floe__posdel_set *old = NULL;
        int rc = floe__posdel_set_new(&old, err);
        if (rc == FLOE_OK)
            rc = floe__posdel_file_read(a->t->io, f->file.path, old, err);
        const floe__posbitmap *b = rc == FLOE_OK ? floe__posdel_set_find(old, path) : NULL;
        if (b)
            rc = floe__posbitmap_or(out, b, err);
        floe__posdel_set_free(old);
        FLOE_FORWARD(rc);
        FLOE_FORWARD(mark(a, f, err));
    }
    return FLOE_OK;
}

/* Whether position delete files that are not scoped to data file d apply to it. */
static bool unscoped_deletes(const floe__attempt *a, const floe__plan_data *d, const char *path)
{
    for (size_t k = 0; k < d->n_pos; k++) {
        const char *ref = a->plan->deletes[d->pos[k]].file.referenced_data_file;
        if (!ref || strcmp(ref, path) != 0)
            return true;
    }
    return false;
}

/* v2: one file-scoped position delete file (or more, past the target size) per data file. */
static int write_v2_one(floe__attempt *a, const char *path, const floe__posbitmap *b,
                        floe_error *err)
{
    floe__posdel_writer *w;
    FLOE_FORWARD(floe__posdel_writer_new(a->t, NULL, &w, err));
    floe__posbitmap_iter it = {b, 0, 0, 0};
    uint64_t pos;
    int rc = FLOE_OK;
    while (rc == FLOE_OK && floe__posbitmap_next(&it, &pos))
        rc = floe__posdel_add(w, path, pos, err);
    if (rc != FLOE_OK) {
        floe__posdel_writer_abort(w);
        return rc;
    }
    floe__content_list files = {0};
    FLOE_FORWARD(floe__posdel_writer_close(w, &files, err));
    for (size_t i = 0; rc == FLOE_OK && i < files.n; i++) {
        files.files[i].referenced_data_file = floe__strdup(path);
        rc = files.files[i].referenced_data_file ? FLOE_OK : FLOE_OOM(err);
    }
    for (size_t i = 0; i < files.n; i++) {
        if (rc == FLOE_OK)
            rc = push_written(a, &files.files[i], path, err);
        else
            floe__fileio_remove(a->t->io, files.files[i].path, NULL);
    }
    floe__content_list_clear(&files);
    return rc;
}

/* v3: a DV's manifest entry. */
static int dv_file(const char *uri, uint64_t size, const floe__puffin_dv *d,
                   floe__content_file *f, floe_error *err)
{
    memset(f, 0, sizeof *f);
    f->content = FLOE_CONTENT_POSITION_DELETES;
    f->path = floe__strdup(uri);
    f->format = floe__strdup("PUFFIN");
    f->referenced_data_file = floe__strdup(d->referenced_data_file);
    f->metrics.record_count = floe__posbitmap_count(d->positions);
    f->metrics.file_size = size;
    f->has_content_offset = true;
    f->content_offset = d->offset;
    f->content_size = d->length;
    if (f->path && f->format && f->referenced_data_file)
        return FLOE_OK;
    floe__content_file_clear(f);
    return FLOE_OOM(err);
}

/* One Puffin file holding one DV (the data file order[i] of merged). */
static int write_one_dv(floe__attempt *a, floe__posdel_set *merged, size_t i, size_t k,
                        floe_error *err)
{
    char name[96];
    snprintf(name, sizeof name, "dv-%s-%05zu.puffin", a->uuid, k);
    char *uri = floe__path_join(a->t->data_location, name);
    if (!uri)
        return FLOE_OOM(err);
    floe__puffin_dv dv = {floe__posdel_set_path(merged, i), floe__posdel_set_positions(merged, i),
                          0, 0};
    uint64_t size = 0;
    int rc = floe__puffin_write_dvs(a->t->io, uri, &dv, 1, &size, err);
    bool wrote = rc == FLOE_OK;
    floe__content_file f;
    if (rc == FLOE_OK)
        rc = dv_file(uri, size, &dv, &f, err);
    if (rc == FLOE_OK)
        rc = push_written(a, &f, dv.referenced_data_file, err);   /* removes it on failure */
    else if (wrote)
        floe__fileio_remove(a->t->io, uri, NULL);
    floe__free(uri);
    return rc;
}

static int write_puffin(floe__attempt *a, floe__posdel_set *merged, const size_t *order,
                        floe_error *err)
{
    size_t n = floe__posdel_set_files(merged);
    for (size_t k = 0; k < n; k++)
        FLOE_FORWARD(write_one_dv(a, merged, order[k], k, err));
    return FLOE_OK;
}

/* v3: each target's positions, with its current DV's (read, then removed). */
static int merge_dvs(floe__attempt *a, const floe__pathmap *gone, const size_t *order,
                     floe__posdel_set *merged, floe_error *err)
{
    const floe__posdel_set *s = a->req->deletes;
    for (size_t k = 0; k < floe__posdel_set_files(s); k++) {
        const char *path = floe__posdel_set_path(s, order[k]);
        const floe__plan_data *d;
        FLOE_FORWARD(target(a, gone, path, &d, err));
        FLOE_RETURN_IF(d && unscoped_deletes(a, d, path), err, FLOE_EUNSUPPORTED, "data file %s "
                       "has position delete files that apply to other data files too (from "
                       "before an upgrade to v3): compact the table first", path);
        FLOE_FORWARD(floe__posdel_set_add_all(merged, path, floe__posdel_set_positions(s, order[k]),
                                              err));
        if (d && d->n_pos) {                   /* Parquet ones from before an upgrade: folded in */
            floe__posbitmap old = {0};
            int rc = fold_scoped(a, d, path, &old, err);
            if (rc == FLOE_OK)
                rc = floe__posdel_set_add_all(merged, path, &old, err);
            floe__posbitmap_clear(&old);
            FLOE_FORWARD(rc);
        }
        if (!d || d->dv == SIZE_MAX)
            continue;
        floe__posbitmap old = {0};
        const floe__plan_file *dv = &a->plan->deletes[d->dv];
        int rc = floe__dv_read(a->t->io, &dv->file, &old, err);
        if (rc == FLOE_OK)
            rc = floe__posdel_set_add_all(merged, path, &old, err);
        floe__posbitmap_clear(&old);
        FLOE_FORWARD(rc);
        FLOE_FORWARD(mark(a, dv, err));
    }
    return FLOE_OK;
}

static int write_deletes(floe__attempt *a, const floe__pathmap *gone, floe_error *err)
{
    const floe__posdel_set *s = a->req->deletes;
    if (floe__posdel_set_files(s) == 0)
        return FLOE_OK;
    size_t *order = NULL;
    FLOE_FORWARD(floe__posdel_set_sorted(s, &order, err));
    int rc = FLOE_OK;
    if (a->version >= 3) {
        floe__posdel_set *merged = NULL;
        rc = floe__posdel_set_new(&merged, err);
        if (rc == FLOE_OK)
            rc = merge_dvs(a, gone, order, merged, err);
        if (rc == FLOE_OK)        /* merged was filled in path order: identity order */
            for (size_t i = 0; i < floe__posdel_set_files(merged); i++)
                order[i] = i;
        if (rc == FLOE_OK)
            rc = write_puffin(a, merged, order, err);
        floe__posdel_set_free(merged);
    } else {
        const floe__plan_data *d;
        for (size_t k = 0; rc == FLOE_OK && k < floe__posdel_set_files(s); k++) {
            const char *path = floe__posdel_set_path(s, order[k]);
            floe__posbitmap all = {0};
            rc = target(a, gone, path, &d, err);
            if (rc == FLOE_OK)
                rc = floe__posbitmap_or(&all, floe__posdel_set_positions(s, order[k]), err);
            if (rc == FLOE_OK)
                rc = fold_scoped(a, d, path, &all, err);
            if (rc == FLOE_OK)
                rc = write_v2_one(a, path, &all, err);
            floe__posbitmap_clear(&all);
        }
    }
    floe__free(order);
    return rc;
}

int floe__attempt_files(floe__attempt *a, floe_error *err)
{
    FLOE_FORWARD(floe__plan_snapshot(a->t->io, a->md, a->parent, &a->plan, err));
    floe__pathmap_clear(&a->added_data);
    for (size_t i = 0; i < a->req->n_files; i++)
        if (a->req->files[i].content == FLOE_CONTENT_DATA)
            FLOE_FORWARD(floe__pathmap_put(&a->added_data, a->req->files[i].path, i, NULL, err));
    floe__pathmap gone = {0};
    int rc = removals(a, &gone, err);
    if (rc == FLOE_OK && a->req->deletes)
        rc = write_deletes(a, &gone, err);
    floe__pathmap_clear(&gone);
    if (rc == FLOE_OK)
        finish_marks(a);
    for (size_t i = 0; rc == FLOE_OK && i < a->written.n; i++)
        floe__commit_count(&a->added, &a->written.files[i]);
    return rc;
}

/* ---- rewriting manifests ------------------------------------------------------------------- */

static int rewrite_one(floe__attempt *a, uint32_t mi, int k, floe_error *err)
{
    const floe__manifest_file *mf = &a->plan->manifests.items[mi];
    const json_t *spec = floe__metadata_spec_by_id(a->md, mf->spec_id);
    FLOE_RETURN_IF(!spec, err, FLOE_EFORMAT, "manifest %s names partition spec %d, which "
                   "the table does not have", mf->path, (int)mf->spec_id);
    floe__manifest_entries es = {0};
    FLOE_FORWARD(floe__manifest_read_resolved(a->t->io, mf, &es, err));
    size_t n = 0;
    for (size_t j = 0; j < es.n; j++) {
        floe__manifest_entry *e = &es.items[j];
        if (e->status == 2) {                          /* dropped, as Java does */
            floe__free(e->file_format);
            floe__content_file_clear(&e->file);
            memset(e, 0, sizeof *e);
            continue;
        }
        bool gone = is_marked(a, mi, (uint32_t)j);
        e->status = gone ? 2 : 0;
        if (gone)
            e->snapshot_id = a->snapshot_id;
        es.items[n++] = *e;
        if (n - 1 != j)
            memset(e, 0, sizeof *e);
    }
    for (size_t j = n; j < es.n; j++) {                /* what was dropped or moved */
        floe__free(es.items[j].file_format);
        floe__content_file_clear(&es.items[j].file);
    }
    es.n = n;
    floe__manifest_meta m = {a->schema_json, spec,
                             mf->content == 1, a->snapshot_id, a->seq};
    char name[64];
    snprintf(name, sizeof name, "%s-r%d.avro", a->uuid, k);
    char *path = floe__path_join(a->dir, name);
    floe__manifest_file *e = path ? floe__manifest_list_push(&a->list) : NULL;
    int rc = e ? floe__manifest_write_entries(a->t->io, path, &m, a->version, es.items, es.n, e,
                                              err)
               : FLOE_OOM(err);
    if (rc != FLOE_OK && e)
        a->list.n--;
    if (rc == FLOE_OK)
        a->n_new++;
    floe__free(path);
    floe__manifest_entries_clear(&es);
    return rc;
}

int floe__attempt_rewrite(floe__attempt *a, bool **rewritten, floe_error *err)
{
    *rewritten = NULL;
    if (!a->plan || a->n_removed == 0)
        return FLOE_OK;
    size_t nm = a->plan->manifests.n;
    *rewritten = floe__calloc(nm ? nm : 1, sizeof **rewritten);
    if (!*rewritten)
        return FLOE_OOM(err);
    for (size_t i = 0; i < a->n_removed; i++)
        (*rewritten)[a->removed[i] >> 32] = true;
    int k = 0;
    for (size_t i = 0; i < nm; i++)
        if ((*rewritten)[i])
            FLOE_FORWARD(rewrite_one(a, (uint32_t)i, k++, err));
    return FLOE_OK;
}
