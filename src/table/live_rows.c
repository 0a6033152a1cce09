/*
 * live_rows.c - the live rows of a snapshot: every row of its data files
 * that no delete deletes, read back through the table's FileIO as a reader
 * would see them (floe pg --verify reads a table with it).
 *
 * Deletes are applied per data file: its deletion vector or position
 * delete files (floe__deleted), and the equality delete files whose data
 * sequence number is above the file's (plan.c matched them).  An equality
 * delete file's rows are read once, into a set of their bytes in the row
 * format of the table's columns it deletes by (in table order); a data row
 * is deleted when its projection onto the same columns is in the set,
 * null equal to null as Iceberg's equality deletes have it.  Rows are read
 * by field id into the caller's schema, so files written in any older
 * schema of the table read in the current one.
 *
 * Memory: the plan, the position deletes of the file being read, and the
 * equality delete sets that applied so far; rows go one at a time to the
 * caller.  It does not know what the rows are for.
 */
#include "table/table_internal.h"

typedef struct eq_set {
    floe__schema *schema;            /* the columns it deletes by, in table order */
    floe__byteset *keys;             /* its rows in the row format of `schema` */
} eq_set;

struct floe__live {
    floe__fileio *io;
    const floe__plan *plan;
    const floe__schema *schema;      /* the table's columns rows are read with */
    floe__deleted *deleted;
    eq_set *eq;                      /* per plan->deletes index (equality files only) */
    floe__buf key;                   /* a row's projection onto equality delete columns */
};

int floe__live_new(floe__fileio *io, const floe__plan *p, const floe__schema *schema,
                   floe__live **out, floe_error *err)
{
    floe__live *l = floe__calloc(1, sizeof *l);
    if (!l)
        return FLOE_OOM(err);
    l->io = io;
    l->plan = p;
    l->schema = schema;
    floe__buf_init(&l->key, (size_t)1 << 30);
    l->eq = floe__calloc(p->n_deletes ? p->n_deletes : 1, sizeof *l->eq);
    int rc = l->eq ? floe__deleted_new(io, p, &l->deleted, err) : FLOE_OOM(err);
    if (rc != FLOE_OK) {
        floe__live_free(l);
        return rc;
    }
    *out = l;
    return FLOE_OK;
}

void floe__live_free(floe__live *l)
{
    if (!l)
        return;
    for (size_t i = 0; l->eq && i < l->plan->n_deletes; i++) {
        floe__byteset_free(l->eq[i].keys);
        floe_schema_free(l->eq[i].schema);
    }
    floe__free(l->eq);
    floe__deleted_free(l->deleted);
    floe__buf_free(&l->key);
    floe__free(l);
}

/* ---- equality delete sets ---------------------------------------------------------------- */

/* The projection of the table's columns onto an equality delete file's. */
static int eq_schema(const floe__schema *s, const floe__content_file *eq, floe__schema **out,
                     floe_error *err)
{
    const char **names = floe__calloc(eq->n_equality_ids ? eq->n_equality_ids : 1,
                                      sizeof *names);
    if (!names)
        return FLOE_OOM(err);
    size_t n = 0;
    for (uint32_t c = 0; c < s->root.n_children; c++)
        for (size_t k = 0; k < eq->n_equality_ids; k++)
            if (s->root.children[c].id == eq->equality_ids[k])
                names[n++] = s->root.children[c].name;
    int rc = n == eq->n_equality_ids && n > 0
                 ? floe__schema_project(s, names, n, out, err)
                 : floe__err_set(err, FLOE_EUNSUPPORTED, "equality delete file %s deletes by "
                                 "fields that are not top-level columns of the table",
                                 eq->path);
    floe__free(names);
    return rc;
}

static int add_key(void *ctx, const uint8_t *row, size_t len, uint64_t pos, floe_error *err)
{
    (void)pos;
    return floe__byteset_add(ctx, row, len, err);
}

/* The set of plan->deletes[k], read on first use. */
static int eq_set_of(floe__live *l, size_t k, eq_set **out, floe_error *err)
{
    eq_set *e = &l->eq[k];
    if (!e->keys) {
        const floe__content_file *f = &l->plan->deletes[k].file;
        int rc = eq_schema(l->schema, f, &e->schema, err);
        if (rc == FLOE_OK)
            rc = floe__byteset_new(&e->keys, err);
        if (rc == FLOE_OK)
            rc = floe__file_rows_each(l->io, f->path, e->schema, add_key, e->keys, err);
        if (rc != FLOE_OK) {
            floe__byteset_free(e->keys);
            floe_schema_free(e->schema);
            memset(e, 0, sizeof *e);
            return floe__err_wrap(err, rc, "reading equality deletes %s", f->path);
        }
    }
    *out = e;
    return FLOE_OK;
}

/* row's top-level slots of the columns `proj` holds, in table order, into out. */
static int project(const floe__schema *table, const floe__schema *proj, const uint8_t *row,
                   size_t len, floe__buf *out, floe_error *err)
{
    floe__buf_reset(out);
    const uint8_t *p = row, *end = row + len;
    uint32_t k = 0;
    for (uint32_t i = 0; i < table->root.n_children && k < proj->root.n_children; i++) {
        const floe__field *f = &table->root.children[i];
        const uint8_t *next = floe__datum_skip(f, p, end);
        FLOE_RETURN_IF(!next, err, FLOE_EINTERNAL, "a row read back is not of the table schema");
        if (proj->root.children[k].id == f->id) {
            FLOE_FORWARD(floe__buf_append(out, p, (size_t)(next - p), err));
            k++;
        }
        p = next;
    }
    return FLOE_OK;
}

/* ---- one data file ------------------------------------------------------------------------ */

int floe__live_positions(floe__live *l, size_t i, const floe__posbitmap **out, floe_error *err)
{
    return floe__deleted_positions(l->deleted, i, out, err);
}

typedef struct walking {
    floe__live *l;
    floe__posbitmap_seq deleted, extra;
    eq_set **eq;
    size_t n_eq;
    floe__row_fn live, gone;
    void *ctx;
} walking;

static int visit(void *ctx, const uint8_t *row, size_t len, uint64_t pos, floe_error *err)
{
    walking *w = ctx;
    bool deleted = floe__posbitmap_seq_has(&w->deleted, pos);
    deleted = floe__posbitmap_seq_has(&w->extra, pos) || deleted;
    for (size_t i = 0; i < w->n_eq && !deleted; i++) {
        FLOE_FORWARD(project(w->l->schema, w->eq[i]->schema, row, len, &w->l->key, err));
        deleted = floe__byteset_has(w->eq[i]->keys, w->l->key.data, w->l->key.len);
    }
    if (deleted)
        return w->gone ? w->gone(w->ctx, row, len, pos, err) : FLOE_OK;
    return w->live(w->ctx, row, len, pos, err);
}

int floe__live_file_rows(floe__live *l, size_t i, const floe__schema *rows,
                         const floe__posbitmap *extra, floe__row_fn live, floe__row_fn gone,
                         void *ctx, floe_error *err)
{
    const floe__plan *p = l->plan;
    const floe__plan_data *pd = &p->data[i];
    walking w = {.l = l, .live = live, .gone = gone, .ctx = ctx};
    const floe__posbitmap *deleted;
    FLOE_FORWARD(floe__deleted_positions(l->deleted, i, &deleted, err));
    floe__posbitmap_seq_init(&w.deleted, deleted);
    floe__posbitmap_seq_init(&w.extra, extra);
    size_t n_eq = p->n_eq - pd->eq_from;
    w.eq = floe__calloc(n_eq ? n_eq : 1, sizeof *w.eq);
    if (!w.eq)
        return FLOE_OOM(err);
    int rc = FLOE_OK;
    for (size_t e = 0; rc == FLOE_OK && e < n_eq; e++)
        if (floe__plan_eq_applies(&pd->f, &p->deletes[p->eq[pd->eq_from + e]]))
            rc = eq_set_of(l, p->eq[pd->eq_from + e], &w.eq[w.n_eq++], err);
    if (rc == FLOE_OK)
        rc = floe__file_rows_each(l->io, pd->f.file.path, rows ? rows : l->schema, visit, &w,
                                  err);
    floe__free(w.eq);
    return rc;
}

int floe__live_rows_each(floe__live *l, floe__row_fn fn, void *ctx, floe_error *err)
{
    for (size_t i = 0; i < l->plan->n_data; i++) {
        int rc = floe__live_file_rows(l, i, NULL, NULL, fn, NULL, ctx, err);
        if (rc != FLOE_OK)
            return floe__err_wrap(err, rc, "reading %s", l->plan->data[i].f.file.path);
    }
    return FLOE_OK;
}
