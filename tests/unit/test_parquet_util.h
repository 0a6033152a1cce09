/*
 * test_parquet_util.h - helpers for the Parquet encoder's tests (test-only).
 *
 *  - ts_parse: a floe__schema from a short text form, field ids assigned
 *    depth-first, pre-order, from 1:
 *        "id long!, name string, tags list<string!>, m map<string,int>,
 *         d decimal(38,2), f fixed(3), s struct<a int, b string!>"
 *    ("!" = required; list elements are "element", map parts "key"/"value").
 *  - rb_*: row-format bytes (every value call writes its slot tag).
 *  - tn_*: a small Thrift compact protocol reader, to parse footers and
 *    page headers back.
 *  - mem_write: write rows to an in-memory Parquet file.
 */
#ifndef FLOE_TEST_PARQUET_UTIL_H
#define FLOE_TEST_PARQUET_UTIL_H

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "parquet/pq_internal.h"

/* ---- schema text ---------------------------------------------------------------- */

typedef struct ts_parser {
    const char *p;
    int32_t next_id;
    int bad;
} ts_parser;

static __attribute__((unused)) void ts_skip(ts_parser *t)
{
    while (isspace((unsigned char)*t->p))
        t->p++;
}

static __attribute__((unused)) int ts_eat(ts_parser *t, const char *s)
{
    ts_skip(t);
    size_t n = strlen(s);
    if (strncmp(t->p, s, n) == 0) {
        t->p += n;
        return 1;
    }
    return 0;
}

static __attribute__((unused)) char *ts_word(ts_parser *t)
{
    ts_skip(t);
    const char *s = t->p;
    while (isalnum((unsigned char)*t->p) || *t->p == '_')
        t->p++;
    size_t n = (size_t)(t->p - s);
    char *w = malloc(n + 1);
    memcpy(w, s, n);
    w[n] = 0;
    return w;
}

static __attribute__((unused)) void ts_type(ts_parser *t, floe__field *f);

static __attribute__((unused)) void ts_child(ts_parser *t, floe__field *f, const char *name)
{
    f->name = strdup(name);
    f->id = t->next_id++;
    ts_type(t, f);
    f->required = ts_eat(t, "!");
}

static __attribute__((unused)) void ts_fields(ts_parser *t, floe__field *parent, const char *end)
{
    parent->kind = FLOE_K_STRUCT;
    while (1) {
        ts_skip(t);
        if (!*t->p || (end && strncmp(t->p, end, 1) == 0))
            break;
        parent->children =
            realloc(parent->children, (parent->n_children + 1) * sizeof(floe__field));
        floe__field *f = &parent->children[parent->n_children++];
        memset(f, 0, sizeof *f);
        char *name = ts_word(t);
        ts_child(t, f, name);
        free(name);
        if (!ts_eat(t, ","))
            break;
    }
}

static __attribute__((unused)) void ts_type(ts_parser *t, floe__field *f)
{
    static const struct { const char *n; floe__kind k; } prims[] = {
        {"boolean", FLOE_K_BOOLEAN}, {"int", FLOE_K_INT}, {"long", FLOE_K_LONG},
        {"float", FLOE_K_FLOAT}, {"double", FLOE_K_DOUBLE}, {"date", FLOE_K_DATE},
        {"timestamptz", FLOE_K_TIMESTAMPTZ}, {"timestamp", FLOE_K_TIMESTAMP},
        {"time", FLOE_K_TIME}, {"string", FLOE_K_STRING}, {"uuid", FLOE_K_UUID},
        {"binary", FLOE_K_BINARY},
    };
    char *w = ts_word(t);
    if (strcmp(w, "decimal") == 0) {
        f->kind = FLOE_K_DECIMAL;
        t->bad |= !ts_eat(t, "(");
        f->precision = (int32_t)strtol(t->p, (char **)&t->p, 10);
        t->bad |= !ts_eat(t, ",");
        f->scale = (int32_t)strtol(t->p, (char **)&t->p, 10);
        t->bad |= !ts_eat(t, ")");
    } else if (strcmp(w, "fixed") == 0) {
        f->kind = FLOE_K_FIXED;
        t->bad |= !ts_eat(t, "(");
        f->length = (int32_t)strtol(t->p, (char **)&t->p, 10);
        t->bad |= !ts_eat(t, ")");
    } else if (strcmp(w, "struct") == 0) {
        t->bad |= !ts_eat(t, "<");
        ts_fields(t, f, ">");
        t->bad |= !ts_eat(t, ">");
    } else if (strcmp(w, "list") == 0) {
        f->kind = FLOE_K_LIST;
        f->n_children = 1;
        f->children = calloc(1, sizeof(floe__field));
        t->bad |= !ts_eat(t, "<");
        ts_child(t, &f->children[0], "element");
        t->bad |= !ts_eat(t, ">");
    } else if (strcmp(w, "map") == 0) {
        f->kind = FLOE_K_MAP;
        f->n_children = 2;
        f->children = calloc(2, sizeof(floe__field));
        t->bad |= !ts_eat(t, "<");
        ts_child(t, &f->children[0], "key");
        f->children[0].required = true;
        t->bad |= !ts_eat(t, ",");
        ts_child(t, &f->children[1], "value");
        t->bad |= !ts_eat(t, ">");
    } else {
        size_t i;
        for (i = 0; i < sizeof prims / sizeof prims[0]; i++)
            if (strcmp(w, prims[i].n) == 0)
                break;
        if (i == sizeof prims / sizeof prims[0])
            t->bad = 1;
        else
            f->kind = prims[i].k;
    }
    free(w);
}

static __attribute__((unused)) void ts_free_field(floe__field *f)
{
    for (uint32_t i = 0; i < f->n_children; i++)
        ts_free_field(&f->children[i]);
    free(f->children);
    free(f->name);
}

static __attribute__((unused)) void ts_free(floe__schema *s)
{
    if (!s)
        return;
    ts_free_field(&s->root);
    free(s);
}

/* NULL when the text does not parse. */
static __attribute__((unused)) floe__schema *ts_parse(const char *text)
{
    floe__schema *s = calloc(1, sizeof *s);
    ts_parser t = {text, 1, 0};
    s->root.name = strdup("");
    s->root.required = true;
    ts_fields(&t, &s->root, NULL);
    ts_skip(&t);
    if (t.bad || *t.p) {
        fprintf(stderr, "bad test schema near: %s\n", t.p);
        ts_free(s);
        return NULL;
    }
    s->highest_id = t.next_id - 1;
    return s;
}

/* ---- row bytes --------------------------------------------------------------------- */

typedef struct rb {
    uint8_t *d;
    size_t len, cap;
} rb;

static __attribute__((unused)) void rb_raw(rb *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->d = realloc(b->d, b->cap);
    }
    if (n)
        memcpy(b->d + b->len, p, n);
    b->len += n;
}
static __attribute__((unused)) void rb_tag(rb *b, uint8_t t) { rb_raw(b, &t, 1); }
static __attribute__((unused)) void rb_null(rb *b) { rb_tag(b, 0); }
static __attribute__((unused)) void rb_bool(rb *b, int v)
{
    uint8_t x = (uint8_t)(v != 0);
    rb_tag(b, 1);
    rb_raw(b, &x, 1);
}
static __attribute__((unused)) void rb_i32(rb *b, int32_t v) { rb_tag(b, 1); rb_raw(b, &v, 4); }
static __attribute__((unused)) void rb_i64(rb *b, int64_t v) { rb_tag(b, 1); rb_raw(b, &v, 8); }
static __attribute__((unused)) void rb_f32(rb *b, float v) { rb_tag(b, 1); rb_raw(b, &v, 4); }
static __attribute__((unused)) void rb_f64(rb *b, double v) { rb_tag(b, 1); rb_raw(b, &v, 8); }
static __attribute__((unused)) void rb_dec(rb *b, __int128 v) { rb_tag(b, 1); rb_raw(b, &v, 16); }
static __attribute__((unused)) void rb_bytes(rb *b, const void *p, uint32_t n)
{
    rb_tag(b, 1);
    rb_raw(b, &n, 4);
    rb_raw(b, p, n);
}
static __attribute__((unused)) void rb_str(rb *b, const char *s)
{
    rb_bytes(b, s, (uint32_t)strlen(s));
}
static __attribute__((unused)) void rb_fixed(rb *b, const void *p, size_t n)
{
    rb_tag(b, 1);
    rb_raw(b, p, n);
}
static __attribute__((unused)) void rb_struct(rb *b) { rb_tag(b, 1); }
/* A present list or map of n entries (the entries' slots follow). */
static __attribute__((unused)) void rb_count(rb *b, uint32_t n)
{
    rb_tag(b, 1);
    rb_raw(b, &n, 4);
}
static __attribute__((unused)) void rb_reset(rb *b) { b->len = 0; }
static __attribute__((unused)) void rb_free(rb *b) { free(b->d); memset(b, 0, sizeof *b); }

/* ---- thrift compact reader ------------------------------------------------------------ */

typedef struct tnode {
    int type;              /* TC_* of the value */
    int16_t id;            /* field id (list elements: index) */
    int64_t i;             /* ints, bools */
    const uint8_t *bin;    /* binary */
    size_t len;
    struct tnode *kids;    /* struct fields / list elements */
    size_t n;
} tnode;

typedef struct treader {
    const uint8_t *p, *end;
    int bad;
} treader;

static __attribute__((unused)) uint64_t tr_varint(treader *r)
{
    uint64_t v;
    size_t n = floe__get_uvarint(r->p, r->end, &v);
    if (!n) {
        r->bad = 1;
        return 0;
    }
    r->p += n;
    return v;
}

static __attribute__((unused)) void tr_value(treader *r, int type, tnode *out, int depth);

static __attribute__((unused)) void tr_struct(treader *r, tnode *out, int depth)
{
    out->type = TC_STRUCT;
    int16_t last = 0;
    while (!r->bad && r->p < r->end) {
        uint8_t b = *r->p++;
        if (b == 0)
            return;
        int type = b & 0x0f;
        int16_t id = (b >> 4) ? (int16_t)(last + (b >> 4))
                              : (int16_t)floe__unzigzag64(tr_varint(r));
        last = id;
        out->kids = realloc(out->kids, (out->n + 1) * sizeof(tnode));
        tnode *k = &out->kids[out->n++];
        memset(k, 0, sizeof *k);
        k->id = id;
        if (type == TC_TRUE || type == TC_FALSE) {
            k->type = TC_TRUE;
            k->i = type == TC_TRUE;
        } else {
            tr_value(r, type, k, depth + 1);
        }
    }
    r->bad = 1;
}

static __attribute__((unused)) void tr_value(treader *r, int type, tnode *out, int depth)
{
    if (depth > 32) {
        r->bad = 1;
        return;
    }
    out->type = type;
    switch (type) {
    case TC_BYTE:
        if (r->p >= r->end) { r->bad = 1; return; }
        out->i = (int8_t)*r->p++;
        return;
    case TC_I16: case TC_I32: case TC_I64:
        out->i = floe__unzigzag64(tr_varint(r));
        return;
    case TC_BINARY: {
        uint64_t n = tr_varint(r);
        if (n > (uint64_t)(r->end - r->p)) { r->bad = 1; return; }
        out->bin = r->p;
        out->len = n;
        r->p += n;
        return;
    }
    case TC_LIST: case TC_SET: {
        if (r->p >= r->end) { r->bad = 1; return; }
        uint8_t h = *r->p++;
        uint64_t n = h >> 4;
        if (n == 15)
            n = tr_varint(r);
        int et = h & 0x0f;
        if (n > (uint64_t)(r->end - r->p) + 1) { r->bad = 1; return; }
        out->kids = calloc(n ? n : 1, sizeof(tnode));
        out->n = n;
        for (uint64_t i = 0; i < n && !r->bad; i++) {
            out->kids[i].id = (int16_t)i;
            if (et == TC_TRUE || et == TC_FALSE) {
                out->kids[i].type = TC_TRUE;
                out->kids[i].i = r->p < r->end && *r->p++ == 1;
            } else {
                tr_value(r, et, &out->kids[i], depth + 1);
            }
        }
        return;
    }
    case TC_STRUCT:
        tr_struct(r, out, depth);
        return;
    default:
        r->bad = 1;
    }
}

static __attribute__((unused)) void tn_free(tnode *n)
{
    for (size_t i = 0; i < n->n; i++)
        tn_free(&n->kids[i]);
    free(n->kids);
    n->kids = NULL;
    n->n = 0;
}

/* Parse one struct at p; returns bytes consumed, 0 on error. */
static __attribute__((unused)) size_t tn_parse(const uint8_t *p, size_t n, tnode *out)
{
    memset(out, 0, sizeof *out);
    treader r = {p, p + n, 0};
    tr_struct(&r, out, 0);
    if (r.bad) {
        tn_free(out);
        return 0;
    }
    return (size_t)(r.p - p);
}

static __attribute__((unused)) const tnode *tn_get(const tnode *s, int id)
{
    if (!s)
        return NULL;
    for (size_t i = 0; i < s->n; i++)
        if (s->kids[i].id == id)
            return &s->kids[i];
    return NULL;
}

static __attribute__((unused)) int64_t tn_int(const tnode *s, int id, int64_t dflt)
{
    const tnode *k = tn_get(s, id);
    return k ? k->i : dflt;
}

/* ---- in-memory files ---------------------------------------------------------------- */

typedef struct memfile {
    floe__buf data;
    tnode meta;          /* FileMetaData */
    int parsed;
} memfile;

/* Parse the footer of mf->data into mf->meta. */
static __attribute__((unused)) int mem_parse_footer(memfile *mf)
{
    const uint8_t *d = mf->data.data;
    size_t n = mf->data.len;
    if (n < 12 || memcmp(d, "PAR1", 4) || memcmp(d + n - 4, "PAR1", 4))
        return -1;
    uint32_t flen = floe__get_le32(d + n - 8);
    if (flen > n - 12)
        return -1;
    size_t used = tn_parse(d + n - 8 - flen, flen, &mf->meta);
    if (used != flen)
        return -1;
    mf->parsed = 1;
    return 0;
}

static __attribute__((unused)) void mem_free(memfile *mf)
{
    floe__buf_free(&mf->data);
    if (mf->parsed)
        tn_free(&mf->meta);
    memset(mf, 0, sizeof *mf);
}

/* The ColumnMetaData of column `col` in row group `rg`. */
static __attribute__((unused)) const tnode *mem_colmeta(const memfile *mf, int rg, int col)
{
    const tnode *rgs = tn_get(&mf->meta, 4);
    if (!rgs || (size_t)rg >= rgs->n)
        return NULL;
    const tnode *cols = tn_get(&rgs->kids[rg], 1);
    if (!cols || (size_t)col >= cols->n)
        return NULL;
    return tn_get(&cols->kids[col], 3);
}

#endif
