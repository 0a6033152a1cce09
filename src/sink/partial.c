/*
 * partial.c - partial rows: an upsert's insertion some of whose top-level
 * columns are "unchanged", taking the values of the row it replaces (the
 * row of its key retracted at the same time).  The Postgres mirror makes
 * them for updates that leave TOASTed values out; the writer fills them
 * from a row of the same batch, or from the replaced row read back from
 * its data file (write_fill.c).
 *
 * Bytes: FLOE__PARTIAL_TAG, u32 n (columns), ceil(n / 8) mask bytes (bit
 * c: column c unchanged), then the row with a null slot for each
 * unchanged column.  A whole row never starts with the tag: its first byte
 * is a slot tag, 0 or 1.  Nothing here allocates beyond its output.
 */
#include "sink/sink_internal.h"

#define HEAD 5

static size_t mask_bytes(uint32_t n) { return ((size_t)n + 7) / 8; }

bool floe__partial_is(const uint8_t *p, size_t len)
{
    return len > 0 && p[0] == FLOE__PARTIAL_TAG;
}

int floe__partial_view(const uint8_t *p, size_t len, floe__partial *out, floe_error *err)
{
    FLOE_RETURN_IF(!floe__partial_is(p, len) || len < HEAD, err, FLOE_EINTERNAL,
                   "a partial row is malformed");
    uint32_t n = floe__get_le32(p + 1);
    FLOE_RETURN_IF(len - HEAD < mask_bytes(n), err, FLOE_EINTERNAL,
                   "a partial row is malformed");
    *out = (floe__partial){.n = n, .mask = p + HEAD, .row = p + HEAD + mask_bytes(n),
                           .len = len - HEAD - mask_bytes(n)};
    return FLOE_OK;
}

bool floe__partial_unchanged(const floe__partial *v, size_t c)
{
    return c < v->n && (v->mask[c / 8] >> (c % 8)) & 1;
}

int floe__partial_pack(const uint8_t *mask, uint32_t n, const uint8_t *row, size_t len,
                       floe__buf *out, floe_error *err)
{
    uint8_t head[HEAD] = {FLOE__PARTIAL_TAG};
    floe__put_le32(head + 1, n);
    FLOE_FORWARD(floe__buf_append(out, head, HEAD, err));
    FLOE_FORWARD(floe__buf_append(out, mask, mask_bytes(n), err));
    return floe__buf_append(out, row, len, err);
}

/* The slots of a row of s: starts[c] for each top-level column, and the end. */
static int slots(const floe__schema *s, const uint8_t *p, size_t len, const uint8_t **starts,
                 floe_error *err)
{
    const uint8_t *end = p + len;
    for (uint32_t c = 0; c < s->root.n_children; c++) {
        starts[c] = p;
        p = floe__datum_skip(&s->root.children[c], p, end);
        FLOE_RETURN_IF(!p, err, FLOE_EINTERNAL, "a row being filled is malformed");
    }
    starts[s->root.n_children] = p;
    return FLOE_OK;
}

/* Where column c of s is in `proj` (by field id); proj NULL: c. */
static uint32_t column_in(const floe__schema *s, const floe__schema *proj, uint32_t c)
{
    if (!proj)
        return c;
    uint32_t j = 0;
    while (j < proj->root.n_children && proj->root.children[j].id != s->root.children[c].id)
        j++;
    return j;
}

/* Column slots into out, each from the partial row or, when it is
 * unchanged there, from `from` (a row of s, or of `proj`); columns
 * unchanged in `from` too (a partial source) stay unchanged. */
static int merge(const floe__schema *s, const floe__partial *p, const uint8_t **pslots,
                 const uint8_t **fslots, const floe__partial *fp, const floe__schema *proj,
                 floe__buf *out, floe_error *err)
{
    uint32_t n = s->root.n_children;
    uint8_t *mask = floe__calloc(mask_bytes(n) + 1, 1);
    if (!mask)
        return FLOE_OOM(err);
    bool any = false;
    floe__buf row;
    floe__buf_init(&row, 0);
    int rc = FLOE_OK;
    for (uint32_t c = 0; rc == FLOE_OK && c < n; c++) {
        if (!floe__partial_unchanged(p, c)) {
            rc = floe__buf_append(&row, pslots[c], (size_t)(pslots[c + 1] - pslots[c]), err);
            continue;
        }
        uint32_t at = column_in(s, proj, c);
        if (proj && at == proj->root.n_children)
            rc = floe__err_set(err, FLOE_EINTERNAL, "column \"%s\" was not read back",
                               s->root.children[c].name);
        else if (fp && floe__partial_unchanged(fp, c)) {
            mask[c / 8] |= (uint8_t)(1u << (c % 8));
            any = true;
            rc = floe__buf_putc(&row, FLOE_SLOT_NULL, err);
        } else {
            rc = floe__buf_append(&row, fslots[at], (size_t)(fslots[at + 1] - fslots[at]), err);
        }
    }
    if (rc == FLOE_OK)
        rc = any ? floe__partial_pack(mask, n, row.data, row.len, out, err)
                 : floe__buf_append(out, row.data, row.len, err);
    floe__buf_free(&row);
    floe__free(mask);
    return rc;
}

static int check_width(const floe__schema *s, const floe__partial *p, floe_error *err)
{
    FLOE_RETURN_IF(p->n != s->root.n_children, err, FLOE_EINTERNAL, "a partial row of %u columns in a schema of %u",
                   (unsigned)p->n, (unsigned)s->root.n_children);
    return FLOE_OK;
}

int floe__partial_fill(const floe__schema *s, const floe__partial *p, const uint8_t *src,
                       size_t slen, floe__buf *out, floe_error *err)
{
    FLOE_FORWARD(check_width(s, p, err));
    floe__partial sp, *fp = NULL;
    if (floe__partial_is(src, slen)) {
        FLOE_FORWARD(floe__partial_view(src, slen, &sp, err));
        FLOE_FORWARD(check_width(s, &sp, err));
        fp = &sp;
        src = sp.row;
        slen = sp.len;
    }
    size_t n = s->root.n_children + 1;
    const uint8_t **ps = floe__malloc(2 * n * sizeof *ps);
    if (!ps)
        return FLOE_OOM(err);
    int rc = slots(s, p->row, p->len, ps, err);
    if (rc == FLOE_OK)
        rc = slots(s, src, slen, ps + n, err);
    if (rc == FLOE_OK)
        rc = merge(s, p, ps, ps + n, fp, NULL, out, err);
    floe__free(ps);
    return rc;
}

int floe__partial_fill_projected(const floe__schema *s, const floe__schema *proj,
                                 const floe__partial *p, const uint8_t *vals, size_t vlen,
                                 floe__buf *out, floe_error *err)
{
    FLOE_FORWARD(check_width(s, p, err));
    size_t n = s->root.n_children + 1, m = proj->root.n_children + 1;
    const uint8_t **ps = floe__malloc((n + m) * sizeof *ps);
    if (!ps)
        return FLOE_OOM(err);
    int rc = slots(s, p->row, p->len, ps, err);
    if (rc == FLOE_OK)
        rc = slots(proj, vals, vlen, ps + n, err);
    if (rc == FLOE_OK)
        rc = merge(s, p, ps, ps + n, NULL, proj, out, err);
    floe__free(ps);
    return rc;
}

int floe__partial_convert(const floe__schema *from, const floe__schema *to, const uint8_t *row,
                          size_t len, floe__buf *out, floe_error *err)
{
    if (!floe__partial_is(row, len))
        return floe__datum_convert(from, to, row, len, out, err);
    floe__partial p;
    FLOE_FORWARD(floe__partial_view(row, len, &p, err));
    FLOE_FORWARD(check_width(from, &p, err));
    uint8_t *mask = floe__calloc(mask_bytes(to->root.n_children) + 1, 1);
    if (!mask)
        return FLOE_OOM(err);
    for (uint32_t c = 0; c < to->root.n_children; c++)      /* columns by field id */
        for (uint32_t i = 0; i < from->root.n_children; i++)
            if (from->root.children[i].id == to->root.children[c].id &&
                floe__partial_unchanged(&p, i))
                mask[c / 8] |= (uint8_t)(1u << (c % 8));
    floe__buf conv;
    floe__buf_init(&conv, 0);
    int rc = floe__datum_convert(from, to, p.row, p.len, &conv, err);
    if (rc == FLOE_OK)
        rc = floe__partial_pack(mask, to->root.n_children, conv.data, conv.len, out, err);
    floe__buf_free(&conv);
    floe__free(mask);
    return rc;
}
