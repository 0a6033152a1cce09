/*
 * keybuild.c - the key index read from the table itself: for each live
 * data file of a plan, its key columns (the whole row when the key is the
 * whole row) read back by field id, row by row with their positions, minus
 * the rows its deletion vector or position delete files delete and the
 * keys its equality delete files delete (keyindex_internal.h).
 *
 * The key bytes are the projected row itself: the row format of a
 * projection onto the key columns in key order is the concatenation of
 * their slots, exactly what the sink builds from an input row.
 */
#include "keyindex/keyindex_internal.h"

struct floe__kx_build {
    floe__kx *kx;
    const floe__kx_source *src;
    const floe__plan *plan;
    floe__deleted *deleted;
    floe__kx **eq_keys;              /* per plan->deletes index: an equality file's keys */
    floe__kx_build_stats stats;
};

int floe__kx_build_new(floe__kx *kx, const floe__kx_source *src, const floe__plan *p,
                       floe__kx_build **out, floe_error *err)
{
    floe__kx_build *b = floe__calloc(1, sizeof *b);
    if (!b)
        return FLOE_OOM(err);
    b->kx = kx;
    b->src = src;
    b->plan = p;
    b->eq_keys = floe__calloc(p->n_deletes ? p->n_deletes : 1, sizeof *b->eq_keys);
    int rc = b->eq_keys ? floe__deleted_new(src->io, p, &b->deleted, err) : FLOE_OOM(err);
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
    for (size_t i = 0; b->eq_keys && i < b->plan->n_deletes; i++)
        floe__kx_free(b->eq_keys[i]);
    floe__free(b->eq_keys);
    floe__deleted_free(b->deleted);
    floe__free(b);
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

typedef int (*key_fn)(floe__kx_build *b, void *ctx, const uint8_t *key, size_t len, uint64_t pos,
                      floe_error *err);

typedef struct row_visit {
    floe__kx_build *b;
    key_fn fn;
    void *ctx;
} row_visit;

static int visit_row(void *ctx, const uint8_t *row, size_t len, uint64_t pos, floe_error *err)
{
    row_visit *v = ctx;
    return v->fn(v->b, v->ctx, row, len, pos, err);
}

/* Every row of `path` read with the key projection: fn(key, pos). */
static int each_row(floe__kx_build *b, const char *path, key_fn fn, void *ctx, floe_error *err)
{
    row_visit v = {b, fn, ctx};
    int rc = floe__file_rows_each(b->src->io, path, b->src->key_schema, visit_row, &v, err);
    return rc == FLOE_OK ? FLOE_OK : floe__err_wrap(err, rc, "indexing the keys of %s", path);
}

typedef struct eq_visit {
    int (*fn)(void *ctx, const uint8_t *key, size_t len, floe_error *err);
    void *ctx;
} eq_visit;

static int visit_eq_row(floe__kx_build *b, void *ctx, const uint8_t *key, size_t len,
                        uint64_t pos, floe_error *err)
{
    (void)b;
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
    return each_row(b, eq->file.path, visit_eq_row, &v, err);
}

static int add_eq_key(void *ctx, const uint8_t *key, size_t len, floe_error *err)
{
    return floe__kx_insert(ctx, key, len, (floe__kx_loc){0, 0, 0}, err);
}

/* The keys of equality delete file k (plan->deletes index), read once. */
static int eq_keys_of(floe__kx_build *b, size_t k, floe__kx **out, floe_error *err)
{
    const floe__plan_file *eq = &b->plan->deletes[k];
    if (!floe__kx_eq_on_key(b->src->key_schema, &eq->file))
        return floe__err_set(err, FLOE_EUNSUPPORTED,
                             "equality delete file %s deletes by columns other than the sink's "
                             "key; the key index cannot apply it (compact the table, or use "
                             "--delete-mode equality)", eq->file.path);
    if (!b->eq_keys[k]) {
        floe__kx *set;
        uint32_t id;
        FLOE_FORWARD(floe__kx_new(NULL, &set, err));
        int rc = floe__kx_file(set, eq->file.path, &id, err);
        if (rc == FLOE_OK)
            rc = floe__kx_build_eq_keys(b, eq, add_eq_key, set, err);
        if (rc != FLOE_OK) {
            floe__kx_free(set);
            return rc;
        }
        b->eq_keys[k] = set;
    }
    *out = b->eq_keys[k];
    return FLOE_OK;
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
    uint32_t id;
    floe__posbitmap_seq deleted;     /* by the file's DV or position deletes */
    floe__kx **eq;                   /* the equality key sets that apply */
    size_t n_eq;
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

static int index_row(floe__kx_build *b, void *ctx, const uint8_t *key, size_t len, uint64_t pos,
                     floe_error *err)
{
    indexing *x = ctx;
    b->stats.rows++;
    bool gone = floe__posbitmap_seq_has(&x->deleted, pos);
    for (size_t i = 0; i < x->n_eq && !gone; i++)
        FLOE_FORWARD(floe__kx_has(x->eq[i], key, len, &gone, err));
    if (gone) {
        b->stats.deleted++;
        return FLOE_OK;
    }
    uint64_t rh = b->src->whole_row ? floe__hash64(key, len, 0) : 0;
    return insert_soon(b, x, key, len, (floe__kx_loc){x->id, pos, rh}, err);
}

int floe__kx_build_file(floe__kx_build *b, size_t i, floe_error *err)
{
    const floe__plan *p = b->plan;
    const floe__plan_data *pd = &p->data[i];
    indexing x = {0};
    FLOE_FORWARD(floe__kx_file(b->kx, pd->f.file.path, &x.id, err));
    if (b->src->whole_row)             /* rows read back in the key schema: hashes of it */
        floe__kx_file_set_schema(b->kx, x.id, b->src->hash_schema);
    const floe__posbitmap *deleted;
    FLOE_FORWARD(floe__deleted_positions(b->deleted, i, &deleted, err));
    floe__posbitmap_seq_init(&x.deleted, deleted);
    size_t n_eq = p->n_eq - pd->eq_from;
    x.eq = floe__calloc(n_eq ? n_eq : 1, sizeof *x.eq);
    if (!x.eq)
        return FLOE_OOM(err);
    int rc = FLOE_OK;
    for (size_t e = 0; rc == FLOE_OK && e < n_eq; e++)
        rc = eq_keys_of(b, p->eq[pd->eq_from + e], &x.eq[x.n_eq++], err);
    if (rc == FLOE_OK)
        rc = each_row(b, pd->f.file.path, index_row, &x, err);
    if (rc == FLOE_OK)
        rc = insert_all(b, &x, err);
    floe__free(x.eq);
    if (rc == FLOE_OK) {
        b->stats.files++;
        b->stats.bytes += pd->f.file.metrics.file_size;
    }
    return rc;
}
