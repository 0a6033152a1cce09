/*
 * shred.c - rows in floe's row format to leaf columns (Dremel shredding).
 *
 * Every leaf column receives, per row, one or more level entries (repetition
 * level, definition level) and, for each entry whose definition level is the
 * column's maximum, one value.  Walking a row:
 *  - a null slot of a field at definition level d (what its parent reached)
 *    gives every leaf under the field one entry (r, d);
 *  - a present field adds 1 to d when it is optional;
 *  - a list or map with entries: the first entry continues at the current
 *    repetition level r, the following ones at the list's own level; each
 *    entry adds 1 to d (the repeated group);
 *  - an empty list or map gives every leaf under it one entry (r, d) with
 *    d = the level of the present list.
 * Values are stored PLAIN right away (decimals converted to their Parquet
 * storage), levels one byte each; column.c encodes them page by page.
 *
 * Rows whose top-level fields are all primitive take a fast path without
 * recursion.  A malformed row is undone before returning FLOE_EINPUT, so the
 * writer stays usable: the fast path re-walks the fields it already stored,
 * the general path restores a snapshot of every column's fill.
 */
#include "parquet/pq_internal.h"

typedef struct cursor {
    const uint8_t *p, *end;
} cursor;

static int bad_row(const floe__pq_col *c, const char *what, floe_error *err)
{
    return floe__err_set(err, FLOE_EINPUT, "row: field %s: %s", c->field->name, what);
}

/* The bytes the row format uses for one present value of column c (after
 * the slot tag), or 0 when they are not all there. */
static inline size_t row_value_size(const floe__pq_col *c, const uint8_t *p, const uint8_t *end)
{
    size_t have = (size_t)(end - p);
    size_t need;
    switch (c->op) {
    case PQ_OP_BOOL: need = 1; break;
    case PQ_OP_FIX4: need = 4; break;
    case PQ_OP_FIX8: need = 8; break;
    case PQ_OP_DEC32:
    case PQ_OP_DEC64:
    case PQ_OP_DECFLBA: need = 16; break;
    case PQ_OP_FLBA: need = (size_t)c->type_len; break;
    default:
        if (have < 4)
            return 0;
        need = 4 + (size_t)floe__get_le32(p);
        break;
    }
    return have >= need ? need : 0;
}

/* Whether the int128 at p is the sign extension of its low `bytes` bytes. */
static inline bool fits(const uint8_t *p, size_t bytes)
{
    uint8_t ext = (p[bytes - 1] & 0x80) ? 0xff : 0x00;
    for (size_t i = bytes; i < 16; i++)
        if (p[i] != ext)
            return false;
    return true;
}

/* Append the value at *pp to c's page; advances *pp.  Nothing is stored on
 * failure. */
static inline int put_value(floe__pq_col *c, const uint8_t **pp, const uint8_t *end,
                            floe_error *err)
{
    const uint8_t *p = *pp;
    size_t n = row_value_size(c, p, end);
    if (n == 0)
        return bad_row(c, "row is truncated", err);
    size_t store = c->op == PQ_OP_BYTES ? n : c->width;
    FLOE_FORWARD(floe__buf_reserve(&c->vals, store, err));
    uint8_t *o = c->vals.data + c->vals.len;
    switch (c->op) {
    case PQ_OP_BOOL:
        *o = p[0] != 0;
        break;
    case PQ_OP_DEC32:
        if (!fits(p, 4))
            return bad_row(c, "decimal does not fit its precision", err);
        memcpy(o, p, 4);
        break;
    case PQ_OP_DEC64:
        if (!fits(p, 8))
            return bad_row(c, "decimal does not fit its precision", err);
        memcpy(o, p, 8);
        break;
    case PQ_OP_DECFLBA: {
        size_t w = c->width;
        if (!fits(p, w))
            return bad_row(c, "decimal does not fit its precision", err);
        for (size_t i = 0; i < w; i++)
            o[i] = p[w - 1 - i];
        break;
    }
    default:
        memcpy(o, p, n);
        break;
    }
    c->vals.len += store;
    c->n_vals++;
    *pp = p + n;
    return FLOE_OK;
}

static inline int put_level(floe__pq_writer *w, floe__pq_col *c, uint8_t rep, uint8_t def,
                            floe_error *err)
{
    if (c->max_rep) {
        FLOE_FORWARD(floe__buf_reserve(&c->reps, 1, err));
        c->reps.data[c->reps.len++] = rep;
    }
    if (c->max_def) {
        FLOE_FORWARD(floe__buf_reserve(&c->defs, 1, err));
        c->defs.data[c->defs.len++] = def;
    }
    c->n_levels++;
    if (floe__pq_page_full(w, c))
        w->page_full = true;
    return FLOE_OK;
}

/* ---- flat rows ------------------------------------------------------------------ */

/* Take back the first k fields of a row the fast path stored. */
static void unwind_flat(floe__pq_writer *w, const uint8_t *row, const uint8_t *end, size_t k)
{
    const uint8_t *p = row;
    for (size_t i = 0; i < k; i++) {
        floe__pq_col *c = &w->cols[i];
        uint8_t tag = *p++;
        if (c->max_def)
            c->defs.len--;
        if (tag == FLOE_SLOT_PRESENT) {
            size_t n = row_value_size(c, p, end);
            c->vals.len -= c->op == PQ_OP_BYTES ? n : c->width;
            p += n;
        }
    }
}

static inline bool fits64(const uint8_t *p)
{
    uint64_t lo = floe__get_le64(p), hi = floe__get_le64(p + 8);
    return hi == (uint64_t)((int64_t)lo >> 63);
}

/* Flat shredding cases: the common kinds, required or optional. */
enum { FAST_OTHER = 0, FAST_FIX8, FAST_FIX4, FAST_DEC64, FAST_BYTES };
#define FAST_OPT 8

uint8_t floe__pq_fast_case(const floe__pq_col *c)
{
    uint8_t k = c->op == PQ_OP_FIX8    ? FAST_FIX8
                : c->op == PQ_OP_FIX4  ? FAST_FIX4
                : c->op == PQ_OP_DEC64 ? FAST_DEC64
                : c->op == PQ_OP_BYTES ? FAST_BYTES
                                       : FAST_OTHER;
    return (uint8_t)(k | (c->max_def ? FAST_OPT : 0));
}

/* One field of a flat row, any kind: the general case. */
static int flat_field(floe__pq_col *c, uint8_t tag, const uint8_t **pp, const uint8_t *end,
                      floe_error *err)
{
    if (tag == FLOE_SLOT_PRESENT)
        FLOE_FORWARD(put_value(c, pp, end, err));
    else if (tag != FLOE_SLOT_NULL || !c->max_def)
        return bad_row(c, tag == FLOE_SLOT_NULL ? "null in a required field" : "bad slot tag",
                       err);
    if (c->max_def)
        c->defs.data[c->defs.len++] = tag;
    return FLOE_OK;
}

/* The flat path: one level entry per column per row, no counters (see
 * floe__pq_col_sync) and no capacity checks: writer.c reserved room for
 * `len` bytes in every column (a column never stores more bytes for a row
 * than the row has), so only the row's own bounds are checked.  The common
 * cases copy with constant sizes; anything unusual (nulls, other kinds,
 * errors) goes through flat_field. */
static int shred_flat(floe__pq_writer *w, const uint8_t *row, size_t len, floe_error *err)
{
    const uint8_t *p = row, *end = row + len;
    floe__pq_col *c = w->cols, *last = w->cols + w->n_cols;
    int rc = FLOE_OK;
    for (; c < last; c++) {
        if (p >= end)
            goto truncated;
        uint8_t tag = *p++;
        size_t have = (size_t)(end - p);
        uint8_t *o = c->vals.data + c->vals.len;
        switch (c->fast) {
        case FAST_FIX8:
        case FAST_FIX8 | FAST_OPT:
            if (tag != FLOE_SLOT_PRESENT || have < 8)
                break;
            memcpy(o, p, 8);
            c->vals.len += 8;
            p += 8;
            goto next;
        case FAST_FIX4:
        case FAST_FIX4 | FAST_OPT:
            if (tag != FLOE_SLOT_PRESENT || have < 4)
                break;
            memcpy(o, p, 4);
            c->vals.len += 4;
            p += 4;
            goto next;
        case FAST_DEC64:
        case FAST_DEC64 | FAST_OPT:
            if (tag != FLOE_SLOT_PRESENT || have < 16 || !fits64(p))
                break;
            memcpy(o, p, 8);
            c->vals.len += 8;
            p += 16;
            goto next;
        case FAST_BYTES:
        case FAST_BYTES | FAST_OPT: {
            if (tag != FLOE_SLOT_PRESENT || have < 4)
                break;
            size_t sz = 4 + (size_t)floe__get_le32(p);
            if (have < sz)
                break;
            /* short values: fixed-size copies, which may copy a few bytes
             * past the value (room: at least the row's length was reserved,
             * and the row has them) */
            if (sz <= 16 && have >= 16)
                memcpy(o, p, 16);
            else if (sz <= 48 && have >= 48)
                memcpy(o, p, 48);
            else
                memcpy(o, p, sz);
            c->vals.len += sz;
            p += sz;
            goto next;
        }
        default:
            break;
        }
        const uint8_t *q = p;     /* keeps p out of memory in the fast cases */
        if ((rc = flat_field(c, tag, &q, end, err)) != FLOE_OK)
            goto fail;
        p = q;
        continue;
    next:
        if (c->fast & FAST_OPT)
            c->defs.data[c->defs.len++] = FLOE_SLOT_PRESENT;
    }
    if (p == end)
        return FLOE_OK;
    rc = floe__err_set(err, FLOE_EINPUT, "row: %zu bytes after the last field",
                       (size_t)(end - p));
    unwind_flat(w, row, end, w->n_cols);
    return rc;
truncated:
    rc = bad_row(c, "row is truncated", err);
fail:
    unwind_flat(w, row, end, (size_t)(c - w->cols));
    return rc;
}

/* ---- nested rows ------------------------------------------------------------------ */

static int put_nulls(floe__pq_writer *w, const floe__pq_node *nd, uint8_t rep, uint8_t def,
                     floe_error *err)
{
    for (uint32_t i = nd->col_begin; i < nd->col_end; i++)
        FLOE_FORWARD(put_level(w, &w->cols[i], rep, def, err));
    return FLOE_OK;
}

static int shred_slot(floe__pq_writer *w, const floe__pq_node *nd, cursor *cur, uint8_t rep,
                      uint8_t parent_def, floe_error *err);

/* The entries of a present list or map node. */
static int shred_entries(floe__pq_writer *w, const floe__pq_node *nd, cursor *cur, uint8_t rep,
                         floe_error *err)
{
    FLOE_RETURN_IF(cur->end - cur->p < 4, err, FLOE_EINPUT,
                   "row: field %s: row is truncated", nd->f->name);
    uint32_t count = floe__get_le32(cur->p);
    cur->p += 4;
    if (count == 0)
        return put_nulls(w, nd, rep, nd->def, err);
    const floe__pq_node *kids = &w->nodes[nd->child];
    uint8_t d = (uint8_t)(nd->def + 1);
    for (uint32_t i = 0; i < count; i++) {
        uint8_t r = i ? nd->rep : rep;
        FLOE_FORWARD(shred_slot(w, &kids[0], cur, r, d, err));
        if (nd->kind == FLOE_K_MAP)
            FLOE_FORWARD(shred_slot(w, &kids[1], cur, r, d, err));
    }
    return FLOE_OK;
}

static int shred_slot(floe__pq_writer *w, const floe__pq_node *nd, cursor *cur, uint8_t rep,
                      uint8_t parent_def, floe_error *err)
{
    FLOE_RETURN_IF(cur->p == cur->end, err, FLOE_EINPUT, "row: field %s: row is truncated",
                   nd->f->name);
    uint8_t tag = *cur->p++;
    if (tag == FLOE_SLOT_NULL) {
        FLOE_RETURN_IF(nd->required, err, FLOE_EINPUT, "row: field %s: null in a required field",
                       nd->f->name);
        return put_nulls(w, nd, rep, parent_def, err);
    }
    FLOE_RETURN_IF(tag != FLOE_SLOT_PRESENT, err, FLOE_EINPUT, "row: field %s: bad slot tag %u",
                   nd->f->name, tag);
    switch (nd->kind) {
    case FLOE_K_STRUCT:
        for (uint32_t i = 0; i < nd->n_children; i++)
            FLOE_FORWARD(shred_slot(w, &w->nodes[nd->child + i], cur, rep, nd->def, err));
        return FLOE_OK;
    case FLOE_K_LIST:
    case FLOE_K_MAP:
        return shred_entries(w, nd, cur, rep, err);
    default: {
        floe__pq_col *c = &w->cols[nd->col];
        FLOE_FORWARD(put_value(c, &cur->p, cur->end, err));
        return put_level(w, c, rep, nd->def, err);
    }
    }
}

static int shred_nested(floe__pq_writer *w, const uint8_t *row, size_t len, floe_error *err)
{
    for (size_t i = 0; i < w->n_cols; i++) {
        const floe__pq_col *c = &w->cols[i];
        w->snap[i] = (floe__pq_snap){c->n_levels, c->n_vals, c->vals.len};
    }
    cursor cur = {row, row + len};
    const floe__pq_node *root = &w->nodes[0];
    int rc = FLOE_OK;
    for (uint32_t i = 0; i < root->n_children && rc == FLOE_OK; i++)
        rc = shred_slot(w, &w->nodes[root->child + i], &cur, 0, 0, err);
    if (rc == FLOE_OK && cur.p != cur.end)
        rc = floe__err_set(err, FLOE_EINPUT, "row: %zu bytes after the last field",
                           (size_t)(cur.end - cur.p));
    if (rc) {
        for (size_t i = 0; i < w->n_cols; i++) {
            floe__pq_col *c = &w->cols[i];
            c->n_levels = w->snap[i].n_levels;
            c->n_vals = w->snap[i].n_vals;
            c->vals.len = w->snap[i].vals_len;
            if (c->max_def)
                c->defs.len = c->n_levels;
            if (c->max_rep)
                c->reps.len = c->n_levels;
        }
    }
    return rc;
}

int floe__pq_shred(floe__pq_writer *w, const uint8_t *row, size_t len, floe_error *err)
{
    if (w->flat)
        return shred_flat(w, row, len, err);
    return shred_nested(w, row, len, err);
}
