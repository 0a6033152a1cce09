/*
 * mirror_row.c - rows of a mirrored table from what Postgres sends: the
 * TupleData of a change (values as text; 'n' null; 'u' a TOASTed value
 * left unchanged, which Postgres does not send) and the fields of a COPY
 * line.  Columns come in the table's order (attnum, without dropped or
 * generated columns), which is the order of the sink's schema.
 *
 * A 'u' value is taken from a row that holds it: the old row of the same
 * change (REPLICA IDENTITY FULL sends it, TOASTed values inline), or the
 * row the transaction left for the key (mirror_txn.c).  With neither, the
 * column is left "unchanged" in a partial row (sink/partial.c): the sink's
 * writer takes the value from the key's live row, in the batch or in its
 * data file.  That needs position deletes and a key: a table in
 * --delete-mode equality, or whose key column is unchanged, cannot be
 * mirrored so (floe_pg_open refuses a new one unless REPLICA IDENTITY
 * FULL; for one that resumes, the stream copies it again, t->toast_gap).
 */
#include "mirror/mirror_internal.h"

static int put_text(floe__buf *scratch, const floe__mtable *t, size_t c, const char *s,
                    size_t n, floe__buf *out, floe_error *err)
{
    const floe__field *f = &t->schema->root.children[c];
    int rc = floe__pg_value_put(&t->cols[c].type, f, s, n, out, scratch, err);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "%s column \"%s\"", t->source, t->cols[c].name);
    return FLOE_OK;
}

static int put_null(const floe__mtable *t, size_t c, bool key_only, floe__buf *out, floe_error *err)
{
    if (key_only && t->cols[c].key)
        return floe__err_set(err, FLOE_EINPUT, "%s: the key Postgres sent for an update or "
                             "delete lacks key column \"%s\" (did the replica identity "
                             "change?)", t->source, t->cols[c].name);
    if (!key_only && t->schema->root.children[c].required)
        return floe__err_set(err, FLOE_EINPUT, "%s column \"%s\": null in a not-null column",
                             t->source, t->cols[c].name);
    return floe__buf_putc(out, FLOE_SLOT_NULL, err);
}

/* Postgres has at most 1600 columns. */
#define MASK_BYTES 200

/* A column a 'u' value leaves unknown: unchanged in a partial row, when
 * the sink can fill it. */
static int put_unchanged(floe_pg *pg, floe__mtable *t, size_t c, uint8_t *mask, floe__buf *out,
                         floe_error *err)
{
    const char *why = t->cols[c].key ? "it is a key column"
                      : pg->sink.delete_mode == FLOE_DELETE_EQUALITY
                          ? "with --delete-mode equality floe cannot take it from the key's row"
                          : !t->nkeys ? "the table has no key" : NULL;
    if (why) {
        t->toast_gap = true;
        return floe__err_set(err, FLOE_EUNSUPPORTED, "%s column \"%s\": an update left this "
                             "TOASTed value unchanged and Postgres did not send it, and %s; "
                             "ALTER TABLE %s REPLICA IDENTITY FULL makes Postgres send it",
                             t->source, t->cols[c].name, why, t->source);
    }
    mask[c / 8] |= (uint8_t)(1u << (c % 8));
    return floe__buf_putc(out, FLOE_SLOT_NULL, err);
}

/* Slot c of the row in `fill` (whole or partial), appended to out; a
 * column the fill leaves unchanged stays so. */
static int put_filled(floe_pg *pg, floe__mtable *t, size_t c, const floe__buf *fill,
                      uint8_t *mask, floe__buf *out, floe_error *err)
{
    if (!fill || !fill->len)
        return put_unchanged(pg, t, c, mask, out, err);
    const uint8_t *p = fill->data, *end = fill->data + fill->len;
    if (floe__partial_is(p, fill->len)) {
        floe__partial v;
        FLOE_FORWARD(floe__partial_view(p, fill->len, &v, err));
        if (floe__partial_unchanged(&v, c))
            return put_unchanged(pg, t, c, mask, out, err);
        p = v.row;
        end = v.row + v.len;
    }
    const floe__field *f = t->schema->root.children;
    for (size_t i = 0; i < c && p; i++)
        p = floe__datum_skip(&f[i], p, end);
    const uint8_t *q = p ? floe__datum_skip(&f[c], p, end) : NULL;
    FLOE_RETURN_IF(!q, err, FLOE_EINTERNAL, "a remembered row of %s is malformed", t->source);
    return floe__buf_append(out, p, (size_t)(q - p), err);
}

int floe__mirror_tuple_row(floe_pg *pg, floe__mtable *t, const floe__pgo_tuple *tup,
                           const floe__buf *fill, bool key_only, floe_row *row,
                           floe_error *err)
{
    if (tup->n != t->ncols)
        return floe__err_set(err, FLOE_EINCOMPATIBLE, "%s: Postgres sent a row of %u columns, "
                             "the table has %zu", t->source, (unsigned)tup->n, t->ncols);
    FLOE_RETURN_IF(t->ncols > MASK_BYTES * 8, err, FLOE_EUNSUPPORTED, "%s: more than %d "
                   "columns", t->source, MASK_BYTES * 8);
    uint8_t mask[MASK_BYTES] = {0};
    bool partial = false;
    floe__buf *out = &row->data;
    floe__buf_reset(out);
    for (size_t c = 0; c < t->ncols; c++) {
        const floe__pgo_value *v = &tup->vals[c];
        int rc;
        if (key_only && !t->cols[c].key)
            rc = floe__buf_putc(out, FLOE_SLOT_NULL, err);
        else if (v->kind == 'n')
            rc = put_null(t, c, key_only, out, err);
        else if (v->kind == 'u') {
            rc = put_filled(pg, t, c, fill, mask, out, err);
            partial = partial || (mask[c / 8] >> (c % 8) & 1);
        }
        else if (v->kind == 't')
            rc = put_text(&pg->scratch, t, c, v->data, v->len, out, err);
        else
            rc = floe__err_set(err, FLOE_EINPUT, "%s column \"%s\": a binary value (not asked "
                               "for)", t->source, t->cols[c].name);
        if (rc != FLOE_OK) {
            floe__buf_reset(out);
            return rc;
        }
    }
    if (!partial)
        return FLOE_OK;
    floe__buf *packed = &pg->packed;
    floe__buf_reset(packed);
    FLOE_FORWARD(floe__partial_pack(mask, (uint32_t)t->ncols, out->data, out->len, packed, err));
    floe__buf_reset(out);
    return floe__buf_append(out, packed->data, packed->len, err);
}

int floe__mirror_copy_fields(const floe__mtable *t, const floe__pg_field *fields,
                             floe__buf *scratch, floe__buf *out, floe_error *err)
{
    floe__buf_reset(out);
    for (size_t c = 0; c < t->ncols; c++) {
        int rc = fields[c].null ? put_null(t, c, false, out, err)
                                : put_text(scratch, t, c, fields[c].s, fields[c].len, out, err);
        if (rc != FLOE_OK) {
            floe__buf_reset(out);
            return rc;
        }
    }
    return FLOE_OK;
}

int floe__mirror_copy_row(floe_pg *pg, floe__mtable *t, const floe__pg_field *fields,
                          floe_error *err)
{
    return floe__mirror_copy_fields(t, fields, &pg->scratch, &t->row->data, err);
}

int floe__mirror_row_key(const floe__mtable *t, const floe_row *row, floe__buf *out,
                         floe_error *err)
{
    return floe__mirror_bytes_key(t, row->data.data, row->data.len, out, err);
}

int floe__mirror_bytes_key(const floe__mtable *t, const uint8_t *row, size_t len,
                           floe__buf *out, floe_error *err)
{
    floe__buf_reset(out);
    if (!t->nkeys)
        return floe__buf_append(out, row, len, err);
    const floe__field *f = t->schema->root.children;
    const uint8_t *p = row, *end = p + len;
    if (floe__partial_is(p, len)) {                /* its key columns are all there */
        floe__partial v;
        FLOE_FORWARD(floe__partial_view(p, len, &v, err));
        p = v.row;
        end = v.row + v.len;
    }
    for (size_t c = 0; c < t->ncols; c++) {
        const uint8_t *q = floe__datum_skip(&f[c], p, end);
        FLOE_RETURN_IF(!q, err, FLOE_EINTERNAL, "a row of %s is malformed", t->source);
        if (t->cols[c].key) {
            for (size_t k = 0; k < t->nkeys; k++)         /* key order: index of c in keys */
                if (t->keys[k] == c) {
                    FLOE_FORWARD(floe__buf_putc(out, (uint8_t)k, err));
                    break;
                }
            FLOE_FORWARD(floe__buf_append(out, p, (size_t)(q - p), err));
        }
        p = q;
    }
    return FLOE_OK;
}
