/*
 * convert.c - a row of one schema rewritten as a row of another, its
 * evolution (a schema change of the sink: updates held across it are
 * carried into the new shape).
 *
 * Fields are matched by Iceberg field id among the children of matched
 * structs, as a reader projects a data file: a field of `to` that `from`
 * has keeps its value (promoted along Iceberg's allowed widenings: int ->
 * long, float -> double, date -> timestamp, decimal precision up), one it
 * lacks takes its write-default (null when it has none), and fields `to`
 * lacks are dropped.  List elements and map keys and values are matched by
 * position.  Map entries stay sorted by key bytes (the row format's
 * canonical order), re-sorted when the key's type was widened.
 *
 * It does not decide whether an evolution is allowed (iceberg/schema_evolve.c).
 */
#include <stdlib.h>

#include "schema/schema_internal.h"

typedef struct conv {
    const uint8_t *end;
    floe__buf *out;
    floe_error *err;
} conv;

static int put(conv *c, const void *p, size_t n) { return floe__buf_append(c->out, p, n, c->err); }

static int malformed(conv *c)
{
    return floe__err_set(c->err, FLOE_EINTERNAL, "a row being converted to a new schema is "
                         "malformed");
}

static int slot(conv *c, const floe__field *from, const floe__field *to, const uint8_t **pp);

/* A field `from` does not have: its write-default, or null. */
static int missing(conv *c, const floe__field *to)
{
    if (!to->write_default) {
        if (to->required)
            return floe__err_set(c->err, FLOE_EINCOMPATIBLE, "field \"%s\" (id %d) is required "
                                 "and has no default: rows of the old schema have no value",
                                 to->name, (int)to->id);
        uint8_t z = FLOE_SLOT_NULL;
        return put(c, &z, 1);
    }
    uint8_t tag = FLOE_SLOT_PRESENT;
    FLOE_FORWARD(put(c, &tag, 1));
    return put(c, to->write_default, to->write_default_len);
}

static int promote(conv *c, const floe__field *from, const floe__field *to, const uint8_t *p)
{
    uint8_t b[16];
    if (from->kind == FLOE_K_INT && to->kind == FLOE_K_LONG) {
        floe__put_le64(b, (uint64_t)(int64_t)(int32_t)floe__get_le32(p));
        return put(c, b, 8);
    }
    if (from->kind == FLOE_K_FLOAT && to->kind == FLOE_K_DOUBLE) {
        float f;
        memcpy(&f, p, 4);
        double d = f;
        if (d != d)
            floe__put_le64(b, 0x7ff8000000000000ull);
        else
            memcpy(b, &d, 8);
        return put(c, b, 8);
    }
    if (from->kind == FLOE_K_DATE &&
        (to->kind == FLOE_K_TIMESTAMP || to->kind == FLOE_K_TIMESTAMPTZ)) {
        floe__put_le64(b, (uint64_t)((int64_t)(int32_t)floe__get_le32(p) * 86400000000LL));
        return put(c, b, 8);
    }
    return floe__err_set(c->err, FLOE_EINCOMPATIBLE, "field \"%s\" (id %d): %s cannot become %s",
                         to->name, (int)to->id, floe__kind_name(from->kind),
                         floe__kind_name(to->kind));
}

/* Struct children: `to`'s fields in its order, each from the `from`
 * field with its id. */
static int children(conv *c, const floe__field *from, const floe__field *to, const uint8_t **pp)
{
    const uint8_t *p = *pp;
    const uint8_t *starts[256], **at = starts;
    if (from->n_children > 256 && !(at = floe__malloc(from->n_children * sizeof *at)))
        return FLOE_OOM(c->err);
    int rc = FLOE_OK;
    for (uint32_t i = 0; rc == FLOE_OK && i < from->n_children; i++) {
        at[i] = p;
        if (!(p = floe__datum_skip(&from->children[i], p, c->end)))
            rc = malformed(c);
    }
    for (uint32_t k = 0; rc == FLOE_OK && k < to->n_children; k++) {
        const floe__field *tf = &to->children[k];
        uint32_t i = 0;
        while (i < from->n_children && from->children[i].id != tf->id)
            i++;
        if (i == from->n_children) {
            rc = missing(c, tf);
        } else {
            const uint8_t *q = at[i];
            rc = slot(c, &from->children[i], tf, &q);
        }
    }
    if (at != starts)
        floe__free((void *)at);
    *pp = p;
    return rc;
}

typedef struct entry {
    size_t off, key_len, len;
    const uint8_t *base;
} entry;

static int cmp_entry(const void *x, const void *y)
{
    const entry *a = x, *b = y;
    size_t n = a->key_len < b->key_len ? a->key_len : b->key_len;
    int r = memcmp(a->base + a->off, b->base + b->off, n);
    return r ? r : (a->key_len > b->key_len) - (a->key_len < b->key_len);
}

/* The map's converted entries [start, out->len) again in key byte order. */
static int resort(conv *c, size_t start, uint32_t n, const floe__field *to)
{
    entry *e = floe__calloc(n ? n : 1, sizeof *e);
    floe__buf tmp;
    floe__buf_init(&tmp, 0);
    int rc = e ? floe__buf_append(&tmp, c->out->data + start, c->out->len - start, c->err)
               : FLOE_OOM(c->err);
    const uint8_t *p = tmp.data, *end = tmp.data + tmp.len;
    for (uint32_t i = 0; rc == FLOE_OK && i < n; i++) {
        const uint8_t *k = floe__datum_skip(&to->children[0], p, end);
        const uint8_t *v = k ? floe__datum_skip(&to->children[1], k, end) : NULL;
        if (!v) {
            rc = malformed(c);
            break;
        }
        e[i] = (entry){(size_t)(p - tmp.data), (size_t)(k - p), (size_t)(v - p), tmp.data};
        p = v;
    }
    if (rc == FLOE_OK) {
        qsort(e, n, sizeof *e, cmp_entry);
        c->out->len = start;
        for (uint32_t i = 0; rc == FLOE_OK && i < n; i++)
            rc = put(c, tmp.data + e[i].off, e[i].len);
    }
    floe__buf_free(&tmp);
    floe__free(e);
    return rc;
}

/* A list's or map's entries. */
static int entries(conv *c, const floe__field *from, const floe__field *to, const uint8_t **pp)
{
    const uint8_t *p = *pp;
    if (c->end - p < 4)
        return malformed(c);
    uint32_t n = floe__datum_u32(p);
    FLOE_FORWARD(put(c, p, 4));
    p += 4;
    size_t start = c->out->len;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < to->n_children; k++)
            FLOE_FORWARD(slot(c, &from->children[k], &to->children[k], &p));
    *pp = p;
    if (to->kind == FLOE_K_MAP && from->children[0].kind != to->children[0].kind && n > 1)
        return resort(c, start, n, to);
    return FLOE_OK;
}

static int slot(conv *c, const floe__field *from, const floe__field *to, const uint8_t **pp)
{
    const uint8_t *p = *pp;
    if (p >= c->end)
        return malformed(c);
    const uint8_t *next = floe__datum_skip(from, p, c->end);
    if (!next)
        return malformed(c);
    *pp = next;
    if (*p == FLOE_SLOT_NULL) {
        if (to->required)
            return floe__err_set(c->err, FLOE_EINCOMPATIBLE, "field \"%s\" (id %d) is required "
                                 "now, and a row holds null there", to->name, (int)to->id);
        return put(c, p, 1);
    }
    FLOE_FORWARD(put(c, p, 1));
    p++;
    if (from->kind != to->kind)
        return promote(c, from, to, p);
    if (to->kind == FLOE_K_STRUCT)
        return children(c, from, to, &p);
    if (to->kind == FLOE_K_LIST || to->kind == FLOE_K_MAP)
        return entries(c, from, to, &p);
    return put(c, p, (size_t)(next - p));       /* the same primitive: the same bytes */
}

int floe__datum_convert(const floe__schema *from, const floe__schema *to, const uint8_t *row,
                        size_t len, floe__buf *out, floe_error *err)
{
    conv c = {row + len, out, err};
    size_t start = out->len;
    const uint8_t *p = row;
    int rc = children(&c, &from->root, &to->root, &p);
    if (rc == FLOE_OK && p != c.end)
        rc = malformed(&c);
    if (rc != FLOE_OK)
        out->len = start;
    return rc;
}
