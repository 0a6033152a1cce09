/*
 * keybuild.c - the key index read from the table itself: for each live
 * data file of a plan, its key columns (the whole row when the key is the
 * whole row) read back by field id, row by row with their positions, as
 * the table layer's walker of live rows (floe__live, table/live_rows.c)
 * gives them: its DV or position delete files and the equality delete
 * files that apply to it (by whatever columns) taken off.
 *
 * Rows are read in the key columns, followed by the columns equality
 * deletes delete by that the key lacks (usually none).  The key bytes are
 * the read row's first slots: the row format of a projection onto the key
 * columns in key order is the concatenation of their slots, exactly what
 * the sink builds from an input row.
 *
 * An empty index given more rows than its memory tier holds (a rebuild of
 * a large table) takes them through a builder (sorted runs merged once,
 * keyindex_build.c) instead of inserts that spill again and again; they
 * are in the index once floe__kx_build_finish is called.
 */
#include "keyindex/keyindex_internal.h"

struct floe__kx_build {
    floe__kx *kx;
    const floe__kx_source *src;
    const floe__plan *plan;
    floe__schema *read;              /* key columns + other equality delete columns */
    floe__live *live;
    floe__kx_builder *builder;       /* or NULL: rows inserted as they come */
    floe__kx_build_stats stats;
};

/* The key columns, then the columns of the plan's equality deletes the
 * key does not have (from the table's columns). */
static int read_schema(const floe__kx_source *src, const floe__plan *p, floe__schema **out,
                       floe_error *err)
{
    const floe__schema *key = src->key_schema, *table = src->table_schema;
    size_t cap = key->root.n_children + (table ? table->root.n_children : 0);
    const char **names = floe__calloc(cap ? cap : 1, sizeof *names);
    if (!names)
        return FLOE_OOM(err);
    size_t n = 0;
    for (uint32_t i = 0; i < key->root.n_children; i++)
        names[n++] = key->root.children[i].name;
    for (uint32_t c = 0; table && c < table->root.n_children; c++) {
        const floe__field *f = &table->root.children[c];
        bool in_key = false, wanted = false;
        for (uint32_t i = 0; i < key->root.n_children && !in_key; i++)
            in_key = key->root.children[i].id == f->id;
        for (size_t d = 0; d < p->n_deletes && !in_key && !wanted; d++) {
            const floe__content_file *eq = &p->deletes[d].file;
            for (size_t k = 0; eq->content == FLOE_CONTENT_EQUALITY_DELETES &&
                               k < eq->n_equality_ids && !wanted; k++)
                wanted = eq->equality_ids[k] == f->id;
        }
        if (wanted)
            names[n++] = f->name;
    }
    int rc = floe__schema_project(table && n > key->root.n_children ? table : key, names, n,
                                  out, err);
    floe__free(names);
    return rc;
}

int floe__kx_build_new(floe__kx *kx, const floe__kx_source *src, const floe__plan *p,
                       floe__kx_build **out, floe_error *err)
{
    floe__kx_build *b = floe__calloc(1, sizeof *b);
    if (!b)
        return FLOE_OOM(err);
    b->kx = kx;
    b->src = src;
    b->plan = p;
    uint64_t rows = 0;
    for (size_t i = 0; i < p->n_data; i++)
        rows += p->data[i].f.file.metrics.record_count;
    int rc = read_schema(src, p, &b->read, err);
    if (rc == FLOE_OK)
        rc = floe__live_new(src->io, p, b->read, &b->live, err);
    if (rc == FLOE_OK && floe__kx_build_pays(kx, rows))
        rc = floe__kx_builder_new(kx, &b->builder, err);
    if (rc != FLOE_OK) {
        floe__kx_build_free(b);
        return rc;
    }
    *out = b;
    return FLOE_OK;
}

void floe__kx_build_free(floe__kx_build *b)
{
    if (!b)
        return;
    floe__live_free(b->live);
    floe_schema_free(b->read);
    floe__kx_builder_free(b->builder);
    floe__free(b);
}

int floe__kx_build_finish(floe__kx_build *b, floe_error *err)
{
    floe__kx_builder *builder = b->builder;
    b->builder = NULL;
    return builder ? floe__kx_builder_finish(builder, err) : FLOE_OK;
}

void floe__kx_build_get_stats(const floe__kx_build *b, floe__kx_build_stats *out)
{
    *out = b->stats;
}

bool floe__kx_eq_on_key(const floe__schema *key_schema, const floe__content_file *eq)
{
    const floe__field *k = key_schema->root.children;
    size_t n = key_schema->root.n_children;
    if (eq->n_equality_ids != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (size_t j = 0; j < n && !found; j++)
            found = eq->equality_ids[j] == k[i].id;
        if (!found)
            return false;
    }
    return true;
}

typedef struct eq_visit {
    int (*fn)(void *ctx, const uint8_t *key, size_t len, floe_error *err);
    void *ctx;
} eq_visit;

static int visit_eq_row(void *ctx, const uint8_t *key, size_t len, uint64_t pos,
                        floe_error *err)
{
    (void)pos;
    eq_visit *v = ctx;
    return v->fn(v->ctx, key, len, err);
}

int floe__kx_build_eq_keys(floe__kx_build *b, const floe__plan_file *eq,
                           int (*fn)(void *ctx, const uint8_t *key, size_t len, floe_error *err),
                           void *ctx, floe_error *err)
{
    assert(floe__kx_eq_on_key(b->src->key_schema, &eq->file));
    eq_visit v = {fn, ctx};
    int rc = floe__file_rows_each(b->src->io, eq->file.path, b->src->key_schema, visit_eq_row,
                                  &v, err);
    return rc == FLOE_OK ? FLOE_OK
                         : floe__err_wrap(err, rc, "reading equality deletes %s", eq->file.path);
}

/* Rows wait in a short queue before they go in, their slots prefetched
 * when they come: the index's cache misses overlap instead of following
 * one another.  Keys longer than AHEAD_KEY go in at once (in order: the
 * queue is emptied first). */
#define AHEAD 8
#define AHEAD_KEY 64

typedef struct ahead_row {
    uint8_t key[AHEAD_KEY];
    size_t len;
    floe__kx_loc loc;
} ahead_row;

typedef struct indexing {
    floe__kx_build *b;
    uint32_t id;
    size_t key_slots;                /* the read row's first slots that are the key */
    ahead_row ahead[AHEAD];
    size_t head, n;
} indexing;

static int insert_oldest(floe__kx_build *b, indexing *x, floe_error *err)
{
    const ahead_row *r = &x->ahead[x->head];
    x->head = (x->head + 1) % AHEAD;
    x->n--;
    return floe__kx_insert(b->kx, r->key, r->len, r->loc, err);
}

static int insert_all(floe__kx_build *b, indexing *x, floe_error *err)
{
    while (x->n)
        FLOE_FORWARD(insert_oldest(b, x, err));
    return FLOE_OK;
}

static int insert_soon(floe__kx_build *b, indexing *x, const uint8_t *key, size_t len,
                       floe__kx_loc loc, floe_error *err)
{
    if (b->builder)
        return floe__kx_builder_add(b->builder, key, len, loc, err);
    if (len > AHEAD_KEY) {
        FLOE_FORWARD(insert_all(b, x, err));
        return floe__kx_insert(b->kx, key, len, loc, err);
    }
    if (x->n == AHEAD)
        FLOE_FORWARD(insert_oldest(b, x, err));
    ahead_row *r = &x->ahead[(x->head + x->n++) % AHEAD];
    memcpy(r->key, key, len);
    r->len = len;
    r->loc = loc;
    floe__kx_prefetch(b->kx, key, len);
    return FLOE_OK;
}

/* The key: the row's first key_slots slots (all of it when it is read in
 * the key columns alone). */
static int key_of(const indexing *x, const uint8_t *row, size_t len, size_t *key_len,
                  floe_error *err)
{
    const floe__schema *read = x->b->read;
    if (x->key_slots == read->root.n_children) {
        *key_len = len;
        return FLOE_OK;
    }
    const uint8_t *p = row, *end = row + len;
    for (size_t i = 0; i < x->key_slots && p; i++)
        p = floe__datum_skip(&read->root.children[i], p, end);
    FLOE_RETURN_IF(!p, err, FLOE_EINTERNAL, "a row read back is not of its schema");
    *key_len = (size_t)(p - row);
    return FLOE_OK;
}

static int index_row(void *ctx, const uint8_t *row, size_t len, uint64_t pos, floe_error *err)
{
    indexing *x = ctx;
    floe__kx_build *b = x->b;
    b->stats.rows++;
    size_t n = 0;
    FLOE_FORWARD(key_of(x, row, len, &n, err));
    uint64_t rh = b->src->whole_row ? floe__hash64(row, n, 0) : 0;
    return insert_soon(b, x, row, n, (floe__kx_loc){x->id, pos, rh}, err);
}

static int deleted_row(void *ctx, const uint8_t *row, size_t len, uint64_t pos,
                       floe_error *err)
{
    (void)row, (void)len, (void)pos, (void)err;
    indexing *x = ctx;
    x->b->stats.rows++;
    x->b->stats.deleted++;
    return FLOE_OK;
}

int floe__kx_build_file(floe__kx_build *b, size_t i, floe_error *err)
{
    const floe__plan_data *pd = &b->plan->data[i];
    indexing x = {.b = b, .key_slots = b->src->key_schema->root.n_children};
    FLOE_FORWARD(floe__kx_file(b->kx, pd->f.file.path, &x.id, err));
    if (b->src->whole_row)             /* rows read back in the key schema: hashes of it */
        floe__kx_file_set_schema(b->kx, x.id, b->src->hash_schema);
    int rc = floe__live_file_rows(b->live, i, NULL, NULL, index_row, deleted_row, &x, err);
    if (rc == FLOE_OK)
        rc = insert_all(b, &x, err);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "indexing the keys of %s", pd->f.file.path);
    b->stats.files++;
    b->stats.bytes += pd->f.file.metrics.file_size;
    return FLOE_OK;
}
