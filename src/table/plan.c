/*
 * plan.c - what a snapshot holds: its live data files, the delete files
 * that apply to each (the spec's scan planning rules, without filters),
 * the totals, and what one snapshot added and removed; plus reading a
 * manifest with inheritance resolved and reading one deletion vector.
 *
 * Ownership: a floe__plan owns everything it points to; files are moved
 * out of the parsed manifests into the plan, never copied.  Nothing here
 * writes: commits (table_commit.c, commit_files.c) use a plan of their
 * parent to find what they remove and the DVs they replace.
 */
#include <stdlib.h>
#include <strings.h>

#include "table/table_internal.h"

#define POSDEL_PATH_ID 2147483546

/* ---- reading manifests --------------------------------------------------------------- */

static int read_list(floe__fileio *io, const floe__snapshot *s, floe__manifest_list *l,
                     floe_error *err)
{
    FLOE_RETURN_IF(!s->manifest_list, err, FLOE_EUNSUPPORTED,
                   "snapshot %lld has no manifest list (a v1 snapshot with inline manifests)",
                   (long long)s->snapshot_id);
    floe__buf data;
    floe__buf_init(&data, FLOE_MANIFEST_MAX_BYTES);
    int rc = floe__fileio_read_all(io, s->manifest_list, &data, err);
    if (rc == FLOE_OK)
        rc = floe__manifest_list_parse(data.data, data.len, l, err);
    floe__buf_free(&data);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "reading the manifest list of snapshot %lld (%s)",
                              (long long)s->snapshot_id, s->manifest_list);
    return FLOE_OK;
}

/* Inherit what null means for entry e of manifest mf (spec: sequence
 * number and first row id inheritance). */
static void resolve(const floe__manifest_file *mf, floe__manifest_entry *e, int64_t *next_row)
{
    if (!e->has_snapshot_id) {
        e->has_snapshot_id = true;
        e->snapshot_id = mf->added_snapshot_id;
    }
    if (!e->has_sequence_number && e->status == 1) {
        e->has_sequence_number = true;
        e->sequence_number = mf->sequence_number;
    }
    if (!e->has_file_sequence_number && e->status == 1) {
        e->has_file_sequence_number = true;
        e->file_sequence_number = mf->sequence_number;
    }
    if (!e->has_sequence_number) {            /* v1 manifests: 0 */
        e->has_sequence_number = true;
        e->sequence_number = 0;
    }
    if (!e->has_file_sequence_number) {
        e->has_file_sequence_number = true;
        e->file_sequence_number = 0;
    }
    floe__content_file *f = &e->file;
    if (f->content != FLOE_CONTENT_DATA || f->has_first_row_id || !mf->has_first_row_id)
        return;
    f->has_first_row_id = true;
    f->first_row_id = *next_row;
    *next_row += (int64_t)f->metrics.record_count;
}

int floe__manifest_read_resolved(floe__fileio *io, const floe__manifest_file *mf,
                                 floe__manifest_entries *out, floe_error *err)
{
    floe__buf data;
    floe__buf_init(&data, FLOE_MANIFEST_MAX_BYTES);
    size_t keep = out->n;
    int rc = floe__fileio_read_all(io, mf->path, &data, err);
    if (rc == FLOE_OK)
        rc = floe__manifest_parse(data.data, data.len, out, err);
    floe__buf_free(&data);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "reading manifest %s", mf->path);
    int64_t next_row = mf->first_row_id;
    for (size_t i = keep; i < out->n; i++) {
        floe__content_file *f = &out->items[i].file;
        FLOE_RETURN_IF((f->content == FLOE_CONTENT_DATA) != (mf->content == 0), err,
                       FLOE_EFORMAT, "manifest %s: %s file %s in a %s manifest", mf->path,
                       f->content == FLOE_CONTENT_DATA ? "a data" : "a delete", f->path,
                       mf->content == 0 ? "data" : "delete");
        resolve(mf, &out->items[i], &next_row);
    }
    return FLOE_OK;
}

/* ---- building a plan ------------------------------------------------------------------- */

void floe__plan_free(floe__plan *p)
{
    if (!p)
        return;
    floe__manifest_list_clear(&p->manifests);
    for (size_t i = 0; i < p->n_data; i++) {
        floe__content_file_clear(&p->data[i].f.file);
        floe__free(p->data[i].pos);
    }
    for (size_t i = 0; i < p->n_deletes; i++)
        floe__content_file_clear(&p->deletes[i].file);
    floe__free(p->data);
    floe__free(p->deletes);
    floe__free(p->eq);
    floe__pathmap_clear(&p->data_index);
    floe__free(p);
}

static int grow(void **items, size_t n, size_t *cap, size_t size, floe_error *err)
{
    if (n < *cap)
        return FLOE_OK;
    size_t c = *cap ? *cap * 2 : 16;
    FLOE_RETURN_IF(c > SIZE_MAX / size / 2, err, FLOE_ELIMIT, "too many files");
    void *p = floe__realloc(*items, c * size);
    if (!p)
        return FLOE_OOM(err);
    *items = p;
    *cap = c;
    return FLOE_OK;
}

typedef struct builder {
    floe__plan *p;
    size_t cap_data, cap_deletes;
    floe_error *err;
} builder;

static void count_file(floe__plan_totals *t, const floe__content_file *f)
{
    uint64_t rows = f->metrics.record_count;
    if (f->content == FLOE_CONTENT_DATA) {
        t->data_files++;
        t->data_rows += rows;
        t->data_size += f->metrics.file_size;
        return;
    }
    t->delete_files++;
    if (f->content == FLOE_CONTENT_EQUALITY_DELETES) {
        t->eq_delete_files++;
        t->eq_deletes += rows;
        return;
    }
    t->pos_deletes += rows;
    if (floe__content_is_dv(f))
        t->dvs++;
    else
        t->pos_delete_files++;
}

/* Move the live entries of manifest mi into the plan. */
static int take_entries(builder *b, uint32_t mi, floe__manifest_entries *es)
{
    const floe__manifest_file *mf = &b->p->manifests.items[mi];
    for (size_t j = 0; j < es->n; j++) {
        floe__manifest_entry *e = &es->items[j];
        if (e->status == 2)
            continue;
        floe__plan_file pf = {.file = e->file, .data_seq = e->sequence_number,
                              .file_seq = e->file_sequence_number,
                              .snapshot_id = e->snapshot_id, .spec_id = mf->spec_id,
                              .manifest = mi, .entry = (uint32_t)j};
        if (pf.file.content == FLOE_CONTENT_DATA) {
            FLOE_FORWARD(grow((void **)&b->p->data, b->p->n_data, &b->cap_data,
                              sizeof *b->p->data, b->err));
            b->p->data[b->p->n_data++] = (floe__plan_data){.f = pf, .dv = SIZE_MAX};
        } else {
            FLOE_FORWARD(grow((void **)&b->p->deletes, b->p->n_deletes, &b->cap_deletes,
                              sizeof *b->p->deletes, b->err));
            b->p->deletes[b->p->n_deletes++] = pf;
        }
        count_file(&b->p->totals, &pf.file);
        memset(&e->file, 0, sizeof e->file);      /* moved */
    }
    return FLOE_OK;
}

static int read_manifests(builder *b, floe__fileio *io)
{
    FLOE_RETURN_IF(b->p->manifests.n > UINT32_MAX, b->err, FLOE_ELIMIT, "too many manifests");
    for (size_t i = 0; i < b->p->manifests.n; i++) {
        floe__manifest_entries es = {0};
        int rc = floe__manifest_read_resolved(io, &b->p->manifests.items[i], &es, b->err);
        if (rc == FLOE_OK)
            rc = take_entries(b, (uint32_t)i, &es);
        floe__manifest_entries_clear(&es);
        FLOE_FORWARD(rc);
    }
    return FLOE_OK;
}

/* ---- matching deletes to data files ------------------------------------------------------ */

static int push_pos(floe__plan_data *d, size_t del, floe_error *err)
{
    if ((d->n_pos & (d->n_pos - 1)) == 0) {           /* 0, 1, 2, 4, ...: grow */
        size_t cap = d->n_pos ? d->n_pos * 2 : 1;
        size_t *p = floe__realloc(d->pos, cap * sizeof *p);
        if (!p)
            return FLOE_OOM(err);
        d->pos = p;
    }
    d->pos[d->n_pos++] = del;
    return FLOE_OK;
}

/* Bytes compared as unsigned, shorter first on a tie (Iceberg bound order). */
static int cmp_bytes(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    int c = memcmp(a, b, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

static int cmp_path_idx(const void *x, const void *y, void *ctx)
{
    const floe__plan_data *d = ctx;
    return strcmp(d[*(const size_t *)x].f.file.path, d[*(const size_t *)y].f.file.path);
}

/* The file_path bounds of an unscoped position delete file, if any. */
static bool path_bounds(const floe__content_file *f, const floe__buf **lo, const floe__buf **hi)
{
    for (size_t i = 0; i < f->metrics.n_columns; i++) {
        const floe__col_metrics *c = &f->metrics.columns[i];
        if (c->field_id == POSDEL_PATH_ID && c->has_lower && c->has_upper) {
            *lo = &c->lower;
            *hi = &c->upper;
            return true;
        }
    }
    return false;
}

/* An unscoped position delete file: every data file within its bounds. */
static int match_unscoped(floe__plan *p, size_t di, const size_t *by_path, floe_error *err)
{
    const floe__plan_file *d = &p->deletes[di];
    const floe__buf *lo, *hi;
    size_t from = 0, to = p->n_data;
    if (path_bounds(&d->file, &lo, &hi)) {
        size_t a = 0, b = p->n_data;                   /* first path >= lo */
        while (a < b) {
            size_t m = a + (b - a) / 2;
            const char *s = p->data[by_path[m]].f.file.path;
            if (cmp_bytes((const uint8_t *)s, strlen(s), lo->data, lo->len) < 0)
                a = m + 1;
            else
                b = m;
        }
        from = a;
        for (to = from; to < p->n_data; to++) {
            const char *s = p->data[by_path[to]].f.file.path;
            if (cmp_bytes((const uint8_t *)s, strlen(s), hi->data, hi->len) > 0)
                break;
        }
    }
    for (size_t k = from; k < to; k++) {
        floe__plan_data *x = &p->data[by_path[k]];
        if (x->f.data_seq <= d->data_seq)
            FLOE_FORWARD(push_pos(x, di, err));
    }
    return FLOE_OK;
}

static int match_scoped(floe__plan *p, size_t di, floe_error *err)
{
    const floe__plan_file *d = &p->deletes[di];
    size_t k;
    if (!floe__pathmap_get(&p->data_index, d->file.referenced_data_file, &k))
        return FLOE_OK;                                /* its data file is gone */
    floe__plan_data *x = &p->data[k];
    if (x->f.data_seq > d->data_seq)
        return FLOE_OK;
    if (!floe__content_is_dv(&d->file))
        return push_pos(x, di, err);
    FLOE_RETURN_IF(x->dv != SIZE_MAX, err, FLOE_EFORMAT,
                   "snapshot %lld has two deletion vectors for %s", (long long)p->snapshot_id,
                   x->f.file.path);
    x->dv = di;
    return FLOE_OK;
}

static int cmp_eq(const void *x, const void *y, void *ctx)
{
    const floe__plan_file *d = ctx;
    int64_t a = d[*(const size_t *)x].data_seq, b = d[*(const size_t *)y].data_seq;
    return (a > b) - (a < b);
}

/* The first equality delete with a data sequence number above seq. */
static size_t eq_suffix(const floe__plan *p, int64_t seq)
{
    size_t a = 0, b = p->n_eq;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (p->deletes[p->eq[m]].data_seq <= seq)
            a = m + 1;
        else
            b = m;
    }
    return a;
}

static int index_data(floe__plan *p, size_t **by_path, floe_error *err)
{
    *by_path = floe__malloc((p->n_data ? p->n_data : 1) * sizeof **by_path);
    p->eq = floe__malloc((p->n_deletes ? p->n_deletes : 1) * sizeof *p->eq);
    if (!*by_path || !p->eq)
        return FLOE_OOM(err);
    for (size_t i = 0; i < p->n_data; i++) {
        (*by_path)[i] = i;
        FLOE_FORWARD(floe__pathmap_put(&p->data_index, p->data[i].f.file.path, i, NULL, err));
    }
    qsort_r(*by_path, p->n_data, sizeof **by_path, cmp_path_idx, p->data);
    for (size_t i = 0; i < p->n_deletes; i++)
        if (p->deletes[i].file.content == FLOE_CONTENT_EQUALITY_DELETES)
            p->eq[p->n_eq++] = i;
    qsort_r(p->eq, p->n_eq, sizeof *p->eq, cmp_eq, p->deletes);
    return FLOE_OK;
}

static int match(floe__plan *p, floe_error *err)
{
    size_t *by_path = NULL;
    int rc = index_data(p, &by_path, err);
    for (size_t di = 0; rc == FLOE_OK && di < p->n_deletes; di++) {
        const floe__content_file *f = &p->deletes[di].file;
        if (f->content == FLOE_CONTENT_EQUALITY_DELETES)
            continue;
        if (f->referenced_data_file)
            rc = match_scoped(p, di, err);
        else if (floe__content_is_dv(f))
            rc = floe__err_set(err, FLOE_EFORMAT, "deletion vector in %s names no data file",
                               f->path);
        else
            rc = match_unscoped(p, di, by_path, err);
    }
    for (size_t i = 0; rc == FLOE_OK && i < p->n_data; i++) {
        floe__plan_data *d = &p->data[i];
        d->eq_from = eq_suffix(p, d->f.data_seq);
        if (d->dv != SIZE_MAX) {                       /* a DV replaces position deletes */
            floe__free(d->pos);
            d->pos = NULL;
            d->n_pos = 0;
        }
    }
    floe__free(by_path);
    return rc;
}

int floe__plan_snapshot(floe__fileio *io, const floe__metadata *md, int64_t snapshot_id,
                        floe__plan **out, floe_error *err)
{
    if (snapshot_id < 0)
        snapshot_id = floe__metadata_current_snapshot_id(md);
    const floe__snapshot *s = snapshot_id < 0 ? NULL
                                              : floe__metadata_snapshot_by_id(md, snapshot_id);
    FLOE_RETURN_IF(snapshot_id >= 0 && !s, err, FLOE_ENOTFOUND, "snapshot %lld does not exist",
                   (long long)snapshot_id);
    builder b = {.p = floe__calloc(1, sizeof *b.p), .err = err};
    if (!b.p)
        return FLOE_OOM(err);
    b.p->snapshot_id = snapshot_id;
    int rc = s ? read_list(io, s, &b.p->manifests, err) : FLOE_OK;
    if (rc == FLOE_OK)
        rc = read_manifests(&b, io);
    if (rc == FLOE_OK)
        rc = match(b.p, err);
    if (rc != FLOE_OK) {
        floe__plan_free(b.p);
        return floe__err_wrap(err, rc, "planning snapshot %lld", (long long)snapshot_id);
    }
    *out = b.p;
    return FLOE_OK;
}

int floe__table_plan(floe__table *t, int64_t snapshot_id, floe__plan **out, floe_error *err)
{
    return floe__plan_snapshot(t->io, t->loaded->metadata, snapshot_id, out, err);
}

bool floe__plan_eq_applies(const floe__plan_file *data, const floe__plan_file *del)
{
    const floe__buf *a = &data->file.partition, *b = &del->file.partition;
    if (b->len == 0)
        return true;
    return data->spec_id == del->spec_id && a->len == b->len &&
           memcmp(a->data, b->data, a->len) == 0;
}

int floe__plan_applicable(const floe__plan *p, size_t i, const floe__plan_file ***out,
                          size_t *n, floe_error *err)
{
    FLOE_RETURN_IF(i >= p->n_data, err, FLOE_EINVAL, "no data file %zu in the plan", i);
    const floe__plan_data *d = &p->data[i];
    size_t k = (d->dv != SIZE_MAX) + d->n_pos + (p->n_eq - d->eq_from);
    *out = floe__malloc((k ? k : 1) * sizeof **out);
    if (!*out)
        return FLOE_OOM(err);
    size_t at = 0;
    if (d->dv != SIZE_MAX)
        (*out)[at++] = &p->deletes[d->dv];
    for (size_t j = 0; j < d->n_pos; j++)
        (*out)[at++] = &p->deletes[d->pos[j]];
    for (size_t j = d->eq_from; j < p->n_eq; j++)
        if (floe__plan_eq_applies(&d->f, &p->deletes[p->eq[j]]))
            (*out)[at++] = &p->deletes[p->eq[j]];
    *n = at;
    return FLOE_OK;
}

/* ---- what one snapshot changed ---------------------------------------------------------- */

void floe__snapshot_changes_free(floe__snapshot_changes *c)
{
    if (!c)
        return;
    floe__plan_file *lists[4] = {c->added_data, c->removed_data, c->added_deletes,
                                 c->removed_deletes};
    size_t ns[4] = {c->n_added_data, c->n_removed_data, c->n_added_deletes,
                    c->n_removed_deletes};
    for (int k = 0; k < 4; k++) {
        for (size_t i = 0; i < ns[k]; i++)
            floe__content_file_clear(&lists[k][i].file);
        floe__free(lists[k]);
    }
    floe__free(c);
}

static int push_change(floe__plan_file **list, size_t *n, floe__plan_file *pf, floe_error *err)
{
    floe__plan_file *p = floe__realloc(*list, (*n + 1) * sizeof *p);
    if (!p)
        return FLOE_OOM(err);
    *list = p;
    p[(*n)++] = *pf;
    return FLOE_OK;
}

static int take_changes(floe__snapshot_changes *c, uint32_t mi, const floe__manifest_file *mf,
                        floe__manifest_entries *es, floe_error *err)
{
    for (size_t j = 0; j < es->n; j++) {
        floe__manifest_entry *e = &es->items[j];
        if (e->status == 0 || e->snapshot_id != c->snapshot_id)
            continue;
        floe__plan_file pf = {.file = e->file, .data_seq = e->sequence_number,
                              .file_seq = e->file_sequence_number,
                              .snapshot_id = e->snapshot_id, .spec_id = mf->spec_id,
                              .manifest = mi, .entry = (uint32_t)j};
        bool data = pf.file.content == FLOE_CONTENT_DATA, added = e->status == 1;
        int rc = data ? added ? push_change(&c->added_data, &c->n_added_data, &pf, err)
                              : push_change(&c->removed_data, &c->n_removed_data, &pf, err)
                 : added ? push_change(&c->added_deletes, &c->n_added_deletes, &pf, err)
                         : push_change(&c->removed_deletes, &c->n_removed_deletes, &pf, err);
        FLOE_FORWARD(rc);
        memset(&e->file, 0, sizeof e->file);
    }
    return FLOE_OK;
}

int floe__snapshot_changes_read(floe__fileio *io, const floe__metadata *md, int64_t snapshot_id,
                                floe__snapshot_changes **out, floe_error *err)
{
    const floe__snapshot *s = floe__metadata_snapshot_by_id(md, snapshot_id);
    FLOE_RETURN_IF(!s, err, FLOE_ENOTFOUND, "snapshot %lld does not exist",
                   (long long)snapshot_id);
    floe__snapshot_changes *c = floe__calloc(1, sizeof *c);
    if (!c)
        return FLOE_OOM(err);
    c->snapshot_id = snapshot_id;
    floe__manifest_list l = {0};
    int rc = read_list(io, s, &l, err);
    for (size_t i = 0; rc == FLOE_OK && i < l.n && i < UINT32_MAX; i++) {
        if (l.items[i].added_snapshot_id != snapshot_id)
            continue;
        floe__manifest_entries es = {0};
        rc = floe__manifest_read_resolved(io, &l.items[i], &es, err);
        if (rc == FLOE_OK)
            rc = take_changes(c, (uint32_t)i, &l.items[i], &es, err);
        floe__manifest_entries_clear(&es);
    }
    floe__manifest_list_clear(&l);
    if (rc != FLOE_OK) {
        floe__snapshot_changes_free(c);
        return rc;
    }
    *out = c;
    return FLOE_OK;
}

/* ---- one deletion vector ----------------------------------------------------------------- */

int floe__dv_read(floe__fileio *io, const floe__content_file *dv, floe__posbitmap *out,
                  floe_error *err)
{
    FLOE_RETURN_IF(!floe__content_is_dv(dv) || !dv->has_content_offset, err, FLOE_EINVAL,
                   "%s is not a deletion vector with a content range", dv->path);
    floe__buf data;
    floe__buf_init(&data, FLOE_PUFFIN_MAX_BYTES);
    int rc = floe__fileio_read_all(io, dv->path, &data, err);
    if (rc == FLOE_OK)
        rc = floe__dv_read_at(data.data, data.len, dv->content_offset, dv->content_size,
                              (int64_t)dv->metrics.record_count, out, err);
    floe__buf_free(&data);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "reading the deletion vector of %s in %s",
                              dv->referenced_data_file ? dv->referenced_data_file : "?",
                              dv->path);
    return FLOE_OK;
}

uint64_t floe__plan_deleted_rows(const floe__plan *p, size_t i)
{
    const floe__plan_data *pd = &p->data[i];
    if (pd->dv != SIZE_MAX)
        return p->deletes[pd->dv].file.metrics.record_count;
    uint64_t n = 0;
    for (size_t k = 0; k < pd->n_pos; k++)
        if (p->deletes[pd->pos[k]].file.referenced_data_file)
            n += p->deletes[pd->pos[k]].file.metrics.record_count;
    return n;
}
