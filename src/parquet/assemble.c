/*
 * assemble.c - rows in floe's row format from the columns' batches.
 *
 * Flat plans (every top-level field primitive or absent) take the fast
 * path: each column holds one level entry per row, so a run of rows is a
 * loop over the columns' batches, as many rows as every batch still holds.
 *
 * Nested plans are assembled Dremel-style, a field at a time in the order
 * the row format lists them, taking each column's entries as the fields
 * reach them.  A group field looks at the definition level of its anchor
 * (its first column) without taking it: below the group's level it is
 * null, and below a list's or map's repeated level it is empty; in both
 * cases every column under it then holds exactly one entry for it, which
 * is taken.  A present list takes elements (a map key/value pairs) while its
 * anchor's next entry repeats at the list's repetition level.
 *
 * The levels are untrusted, so each entry taken is checked against what the
 * structure so far implies: its repetition level must be the one expected
 * at that point, a null or empty subtree's entries must all carry the
 * anchor's definition level, a leaf's level must say present or (for an
 * optional leaf) null.  Columns out of step are FLOE_EFORMAT, never rows of
 * the wrong shape.  A null where the projection says required is
 * FLOE_EINCOMPATIBLE.
 */
#include "parquet/pqr_internal.h"

typedef struct asm_ctx {
    floe__pq_reader *r;
    floe__buf *out;
    uint64_t pos;               /* position of the row (messages) */
    floe_error *err;
} asm_ctx;

static inline uint8_t def_at(const floe__pq_rcol *c) { return c->def ? c->def[c->at] : c->max_def; }
static inline uint8_t rep_at(const floe__pq_rcol *c) { return c->rep ? c->rep[c->at] : 0; }

/* The column's next entry in its batch. */
static inline int ready(asm_ctx *a, floe__pq_rcol *c)
{
    return c->at < c->n ? FLOE_OK : floe__pq_col_refill(a->r, c, a->err);
}

static int broken(asm_ctx *a, const floe__pq_rcol *c, const char *what)
{
    return floe__err_set(a->err, FLOE_EFORMAT, "column %s, row %llu: %s", c->path,
                         (unsigned long long)a->pos, what);
}

static int required_null(asm_ctx *a, const floe__pq_rnode *nd)
{
    return floe__err_set(a->err, FLOE_EINCOMPATIBLE,
                         "row %llu: field \"%s\" (id %d) is null in the file, but required",
                         (unsigned long long)a->pos, nd->f->name, (int)nd->f->id);
}

static inline int put_byte(floe__buf *o, uint8_t b, floe_error *err)
{
    FLOE_FORWARD(floe__buf_reserve(o, 1, err));
    o->data[o->len++] = b;
    return FLOE_OK;
}

static inline int put_null(asm_ctx *a, const floe__pq_rnode *nd)
{
    return nd->required ? required_null(a, nd) : put_byte(a->out, FLOE_SLOT_NULL, a->err);
}

/* The column's next value, tag included. */
static inline int put_value(floe__buf *o, floe__pq_rcol *c, floe_error *err)
{
    size_t i = c->vat++;
    if (c->wop == PQ_W_FIXED) {
        size_t w = c->width;
        FLOE_FORWARD(floe__buf_reserve(o, 1 + w, err));
        o->data[o->len] = FLOE_SLOT_PRESENT;
        memcpy(o->data + o->len + 1, c->vals + i * w, w);
        o->len += 1 + w;
        return FLOE_OK;
    }
    if (c->wop == PQ_W_BYTES) {
        floe__pq_bv v = c->bv[i];
        FLOE_FORWARD(floe__buf_reserve(o, 5 + (size_t)v.n, err));
        o->data[o->len] = FLOE_SLOT_PRESENT;
        floe__put_le32(o->data + o->len + 1, v.n);
        if (v.n)
            memcpy(o->data + o->len + 5, v.p, v.n);
        o->len += 5 + (size_t)v.n;
        return FLOE_OK;
    }
    assert(c->wop == PQ_W_UUID_STR);
    char text[37];
    floe__uuid_format(c->vals + i * 16, text);
    FLOE_FORWARD(floe__buf_reserve(o, 41, err));
    o->data[o->len] = FLOE_SLOT_PRESENT;
    floe__put_le32(o->data + o->len + 1, 36);
    memcpy(o->data + o->len + 5, text, 36);
    o->len += 41;
    return FLOE_OK;
}

/* ---- nested rows ----------------------------------------------------------------------- */

static int node(asm_ctx *a, const floe__pq_rnode *nd, uint8_t rep);

static int leaf(asm_ctx *a, const floe__pq_rnode *nd, uint8_t rep)
{
    floe__pq_rcol *c = &a->r->cols[nd->col_begin];
    FLOE_FORWARD(ready(a, c));
    uint8_t d = def_at(c), r = rep_at(c);
    c->at++;
    if (r != rep)
        return broken(a, c, "a repetition level out of step");
    if (d == c->max_def)
        return put_value(a->out, c, a->err);
    if (d + 1 != c->max_def || c->e->repetition != PQ_OPTIONAL)
        return broken(a, c, "a definition level out of step");
    return put_null(a, nd);
}

/* Take the one entry each column under nd holds for a null or empty nd. */
static int take_empty(asm_ctx *a, const floe__pq_rnode *nd, uint8_t d, uint8_t rep)
{
    for (uint32_t i = nd->col_begin; i < nd->col_end; i++) {
        floe__pq_rcol *c = &a->r->cols[i];
        FLOE_FORWARD(ready(a, c));
        if (def_at(c) != d || rep_at(c) != rep)
            return broken(a, c, "levels out of step with the other columns of its field");
        c->at++;
    }
    return FLOE_OK;
}

/* A present struct read for its levels only: take its anchor's entries
 * for this occurrence (more than one when the anchor is under a list the
 * projection leaves out). */
static int take_anchor(asm_ctx *a, const floe__pq_rnode *nd, floe__pq_rcol *c, uint8_t rep)
{
    FLOE_FORWARD(ready(a, c));
    if (rep_at(c) != rep)
        return broken(a, c, "a repetition level out of step");
    c->at++;
    for (;;) {
        if (c->at == c->n && !floe__pq_col_more(c))
            return FLOE_OK;
        FLOE_FORWARD(ready(a, c));
        if (rep_at(c) <= nd->frep)
            return FLOE_OK;
        c->at++;
    }
}

/* Elements (map entries) while the anchor repeats at the list's level. */
static int entries(asm_ctx *a, const floe__pq_rnode *nd, floe__pq_rcol *anchor, uint8_t rep)
{
    floe__buf *o = a->out;
    size_t at = o->len;
    FLOE_FORWARD(floe__buf_reserve(o, 4, a->err));
    o->len += 4;
    uint32_t count = 0;
    for (;;) {
        for (uint32_t k = 0; k < nd->n_children; k++)
            FLOE_FORWARD(node(a, &a->r->nodes[nd->child + k], rep));
        FLOE_RETURN_IF(++count == UINT32_MAX, a->err, FLOE_ELIMIT, "a list of 2^32 elements");
        rep = nd->rep;
        if (anchor->at == anchor->n && !floe__pq_col_more(anchor))
            break;                      /* the end of the row group */
        FLOE_FORWARD(ready(a, anchor));
        uint8_t r = rep_at(anchor);
        if (r < nd->rep)
            break;
        if (r > nd->rep || def_at(anchor) < nd->d_elem)
            return broken(a, anchor, "a list entry out of step");
    }
    floe__put_le32(o->data + at, count);
    return FLOE_OK;
}

static int group(asm_ctx *a, const floe__pq_rnode *nd, uint8_t rep)
{
    floe__pq_rcol *c = &a->r->cols[nd->col_begin];
    FLOE_FORWARD(ready(a, c));
    uint8_t d = def_at(c);
    if (d < nd->d_null) {
        FLOE_FORWARD(put_null(a, nd));
        return take_empty(a, nd, d, rep);
    }
    FLOE_FORWARD(put_byte(a->out, FLOE_SLOT_PRESENT, a->err));
    if (nd->shape == PQ_R_STRUCT) {
        for (uint32_t k = 0; k < nd->n_children; k++)
            FLOE_FORWARD(node(a, &a->r->nodes[nd->child + k], rep));
        return nd->own_anchor ? take_anchor(a, nd, c, rep) : FLOE_OK;
    }
    if (d < nd->d_elem) {
        uint8_t zero[4] = {0};
        FLOE_FORWARD(floe__buf_append(a->out, zero, 4, a->err));
        return take_empty(a, nd, d, rep);
    }
    return entries(a, nd, c, rep);
}

/* A field the file lacks: its initial-default, else null. */
static int absent(asm_ctx *a, const floe__field *f)
{
    if (!f || !f->initial_default)
        return put_byte(a->out, FLOE_SLOT_NULL, a->err);
    FLOE_FORWARD(put_byte(a->out, FLOE_SLOT_PRESENT, a->err));
    return floe__buf_append(a->out, f->initial_default, f->initial_default_len, a->err);
}

static int node(asm_ctx *a, const floe__pq_rnode *nd, uint8_t rep)
{
    switch (nd->shape) {
    case PQ_R_ABSENT: return absent(a, nd->f);
    case PQ_R_PRIM: return leaf(a, nd, rep);
    default: return group(a, nd, rep);
    }
}

static uint64_t row_pos(const floe__pq_reader *r)
{
    return r->rg_first + ((uint64_t)r->meta.rgs[r->rg].num_rows - r->rg_left);
}

int floe__pq_assemble_row(floe__pq_reader *r, floe__buf *out, floe_error *err)
{
    assert(r->rg_left > 0);
    asm_ctx a = {.r = r, .out = out, .pos = row_pos(r), .err = err};
    const floe__pq_rnode *root = &r->nodes[0];
    for (uint32_t k = 0; k < root->n_children; k++)
        FLOE_FORWARD(node(&a, &r->nodes[root->child + k], 0));
    return FLOE_OK;
}

/* ---- flat rows --------------------------------------------------------------------------- */

/* How a top-level field of a flat plan is written: the width is a
 * constant in the loop below, so each copy is a move or two. */
enum { FW_ABSENT, FW_F1, FW_F4, FW_F8, FW_F16, FW_FN, FW_BYTES, FW_UUID };

void floe__pq_flat_ops(floe__pq_reader *r)
{
    const floe__pq_rnode *root = &r->nodes[0];
    for (uint32_t k = 0; k < root->n_children; k++) {
        const floe__pq_rnode *nd = &r->nodes[root->child + k];
        const floe__pq_rcol *c = &r->cols[nd->col_begin];
        uint8_t op = FW_ABSENT;
        if (nd->shape == PQ_R_PRIM && c->wop == PQ_W_BYTES)
            op = FW_BYTES;
        else if (nd->shape == PQ_R_PRIM && c->wop == PQ_W_UUID_STR)
            op = FW_UUID;
        else if (nd->shape == PQ_R_PRIM)
            op = c->width == 1 ? FW_F1 : c->width == 4 ? FW_F4 : c->width == 8 ? FW_F8
                 : c->width == 16 ? FW_F16 : FW_FN;
        r->flat_ops[k] = op;
    }
}

/* Rows every column's batch holds (at least one: batches are refilled). */
static int flat_ready(floe__pq_reader *r, size_t *rows, floe_error *err)
{
    for (size_t i = 0; i < r->n_cols; i++) {
        floe__pq_rcol *c = &r->cols[i];
        if (c->at == c->n)
            FLOE_FORWARD(floe__pq_col_refill(r, c, err));
        if (c->n - c->at < *rows)
            *rows = c->n - c->at;
    }
    return FLOE_OK;
}

/* A null in a required field, found after the fact: say which. */
static int flat_required(floe__pq_reader *r, uint64_t pos, uint32_t k, floe_error *err)
{
    asm_ctx a = {.r = r, .pos = pos, .err = err};
    return required_null(&a, &r->nodes[r->nodes[0].child + k]);
}

/* Rows are written in chunks of FLAT_CHUNK, a field at a time: pass 1
 * adds each field's slot size to each row's, pass 2 writes each field's
 * slots at its rows' running offsets.  Both are short loops over one
 * column with the width a constant, on offsets that stay in L1. */
#define FLAT_CHUNK 256

typedef struct chunk {
    size_t rows;
    uint32_t size[FLAT_CHUNK];          /* pass 1: bytes of each row */
    size_t at[FLAT_CHUNK];              /* pass 2: where each row's next slot goes */
} chunk;

static inline bool present(const floe__pq_rcol *c, size_t i)
{
    return !c->def || c->def[c->at + i] == c->max_def;
}

/* Pass 1 for one field; the index of a null in a required field, or SIZE_MAX. */
static size_t size_field(chunk *ch, const floe__pq_rcol *c, uint8_t op, bool required)
{
    uint32_t w = op == FW_UUID ? 40 : c->width;
    if (op != FW_BYTES && !c->def) {            /* required fixed width: the same for all */
        for (size_t i = 0; i < ch->rows; i++)
            ch->size[i] += 1 + w;
        return SIZE_MAX;
    }
    size_t v = c->vat, bad = SIZE_MAX;
    for (size_t i = 0; i < ch->rows; i++) {
        bool here = present(c, i);
        if (!here && required && bad == SIZE_MAX)
            bad = i;
        if (op != FW_BYTES)
            ch->size[i] += 1 + (here ? w : 0);
        else
            ch->size[i] += here ? 5 + c->bv[v++].n : 1;
    }
    return bad;
}

/* Pass 2 for a fixed-width field of width W (a constant where inlined). */
static inline __attribute__((always_inline)) void put_fixed(chunk *ch, floe__pq_rcol *c,
                                                            uint8_t *restrict o, size_t W)
{
    const uint8_t *vals = c->vals;
    size_t v = c->vat;
    if (!c->def) {                               /* every value present */
        for (size_t i = 0; i < ch->rows; i++) {
            uint8_t *p = o + ch->at[i];
            p[0] = FLOE_SLOT_PRESENT;
            memcpy(p + 1, vals + W * (v + i), W);
            ch->at[i] += 1 + W;
        }
        c->vat = v + ch->rows;
        return;
    }
    for (size_t i = 0; i < ch->rows; i++) {
        uint8_t *p = o + ch->at[i];
        if (present(c, i)) {
            p[0] = FLOE_SLOT_PRESENT;
            memcpy(p + 1, vals + W * v++, W);
            ch->at[i] += 1 + W;
        } else {
            p[0] = FLOE_SLOT_NULL;
            ch->at[i] += 1;
        }
    }
    c->vat = v;
}

static void put_var(chunk *ch, floe__pq_rcol *c, uint8_t op, uint8_t *restrict o)
{
    size_t v = c->vat;
    for (size_t i = 0; i < ch->rows; i++) {
        uint8_t *p = o + ch->at[i];
        if (!present(c, i)) {
            p[0] = FLOE_SLOT_NULL;
            ch->at[i] += 1;
            continue;
        }
        p[0] = FLOE_SLOT_PRESENT;
        if (op == FW_BYTES) {
            floe__pq_bv b = c->bv[v++];
            floe__put_le32(p + 1, b.n);
            if (b.n)
                memcpy(p + 5, b.p, b.n);
            ch->at[i] += 5 + (size_t)b.n;
        } else {
            char text[37];
            floe__uuid_format(c->vals + 16 * v++, text);
            floe__put_le32(p + 1, 36);
            memcpy(p + 5, text, 36);
            ch->at[i] += 41;
        }
    }
    c->vat = v;
}

static void put_field(chunk *ch, floe__pq_rcol *c, uint8_t op, uint8_t *restrict o)
{
    switch (op) {
    case FW_F1: put_fixed(ch, c, o, 1); break;
    case FW_F4: put_fixed(ch, c, o, 4); break;
    case FW_F8: put_fixed(ch, c, o, 8); break;
    case FW_F16: put_fixed(ch, c, o, 16); break;
    case FW_FN: put_fixed(ch, c, o, c->width); break;
    default: put_var(ch, c, op, o); break;
    }
    c->at += ch->rows;
}

/* The next ch->rows rows (every column's batch holds them) onto out. */
static int flat_chunk(floe__pq_reader *r, chunk *ch, floe__buf *out, size_t *restrict ends,
                      uint64_t pos, floe_error *err)
{
    const floe__pq_rnode *root = &r->nodes[0], *fields = &r->nodes[root->child];
    const uint8_t *ops = r->flat_ops;
    memset(ch->size, 0, ch->rows * sizeof ch->size[0]);
    for (uint32_t k = 0; k < root->n_children; k++) {
        size_t bad = SIZE_MAX;
        if (ops[k] == FW_ABSENT) {
            const floe__field *f = fields[k].f;
            size_t w = 1 + (f->initial_default ? f->initial_default_len : 0);
            for (size_t i = 0; i < ch->rows; i++)
                ch->size[i] += w;
        } else
            bad = size_field(ch, &r->cols[fields[k].col_begin], ops[k], fields[k].required);
        if (bad != SIZE_MAX)
            return flat_required(r, pos + bad, k, err);
    }
    size_t total = 0;
    for (size_t i = 0; i < ch->rows; i++) {
        ch->at[i] = total;
        total += ch->size[i];
        ends[i] = out->len + total;
    }
    FLOE_FORWARD(floe__buf_reserve(out, total, err));
    uint8_t *restrict o = out->data + out->len;
    for (uint32_t k = 0; k < root->n_children; k++) {
        if (ops[k] == FW_ABSENT) {
            const floe__field *f = fields[k].f;
            for (size_t i = 0; i < ch->rows; i++) {
                if (!f->initial_default) {
                    o[ch->at[i]++] = FLOE_SLOT_NULL;
                    continue;
                }
                o[ch->at[i]++] = FLOE_SLOT_PRESENT;
                memcpy(o + ch->at[i], f->initial_default, f->initial_default_len);
                ch->at[i] += f->initial_default_len;
            }
            continue;
        }
        put_field(ch, &r->cols[fields[k].col_begin], ops[k], o);
    }
    out->len += total;
    return FLOE_OK;
}

int floe__pq_assemble_flat(floe__pq_reader *r, floe__buf *out, size_t *ends, size_t max,
                           size_t *n, floe_error *err)
{
    assert(r->flat && r->rg_left > 0 && max > 0);
    size_t rows = max < r->rg_left ? max : (size_t)r->rg_left;
    FLOE_FORWARD(flat_ready(r, &rows, err));
    chunk ch;
    uint64_t pos = row_pos(r);
    for (size_t done = 0; done < rows; done += ch.rows) {
        ch.rows = rows - done < FLAT_CHUNK ? rows - done : FLAT_CHUNK;
        FLOE_FORWARD(flat_chunk(r, &ch, out, ends + done, pos + done, err));
    }
    *n = rows;
    return FLOE_OK;
}
