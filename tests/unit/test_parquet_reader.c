/*
 * test_parquet_reader.c - the Parquet reader (src/parquet/reader.c and the
 * files it uses).
 *
 *  - round trips through floe's writer: random rows of every kind, nulls at
 *    every level, nested structs, lists and maps, empty lists and maps, many
 *    pages and row groups, dictionaries on, off and falling back, every
 *    codec; rows come back byte for byte, with their positions, through
 *    next and next_batch;
 *  - projections: subsets, reordering, missing fields, nested subsets,
 *    promotions, uuid as text, required and incompatible fields;
 *  - hand-made files for what floe's writer never writes (data page v2,
 *    BIT_PACKED levels, delta encodings, BYTE_STREAM_SPLIT, legacy lists and
 *    maps, name matching) and malformed ones (truncated, bad magic, lying
 *    lengths and levels), which must be FLOE_EFORMAT, never a crash;
 *  - every allocation failing in turn.
 */
#include "unit.h"
#include "test_parquet_util.h"

#include <jansson.h>

#include "parquet/pqr_internal.h"

/* ---- random rows ---------------------------------------------------------------------- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rnext(rng *r)
{
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}

static uint32_t rint_(rng *r, uint32_t n) { return (uint32_t)(rnext(r) % n); }

typedef struct rowset {
    rb data;
    size_t *ends;
    size_t n, cap;
} rowset;

static void rowset_add(rowset *rs, const rb *row)
{
    if (rs->n == rs->cap) {
        rs->cap = rs->cap ? rs->cap * 2 : 64;
        rs->ends = realloc(rs->ends, rs->cap * sizeof *rs->ends);
    }
    rb_raw(&rs->data, row->d, row->len);
    rs->ends[rs->n++] = rs->data.len;
}

static const uint8_t *rowset_row(const rowset *rs, size_t i, size_t *len)
{
    size_t start = i ? rs->ends[i - 1] : 0;
    *len = rs->ends[i] - start;
    return rs->data.d + start;
}

static void rowset_free(rowset *rs)
{
    rb_free(&rs->data);
    free(rs->ends);
    memset(rs, 0, sizeof *rs);
}

typedef struct gen {
    rng r;
    int null_pct;        /* chance of null for an optional field */
    int pool;            /* 1 in pool values come from a small set (dictionaries) */
    int max_list;
} gen;

static void gen_float(gen *g, rb *b, bool dbl)
{
    static const double special[] = {0.0, -0.0, 1.5, -2.25, 1e300, -1e-300, 3.4e38};
    uint32_t k = rint_(&g->r, 10);
    if (k < 2) {
        double inf = k ? -__builtin_inf() : __builtin_inf();
        dbl ? rb_f64(b, inf) : rb_f32(b, (float)inf);
    } else if (k == 2) {
        uint32_t f = 0x7fc00000u;             /* canonical NaNs: the row format's */
        uint64_t d = 0x7ff8000000000000ull;
        rb_tag(b, 1);
        dbl ? rb_raw(b, &d, 8) : rb_raw(b, &f, 4);
    } else if (k < 6) {
        double v = special[rint_(&g->r, 7)];
        dbl ? rb_f64(b, v) : rb_f32(b, (float)(v > 1e38 || v < -1e38 ? 1.0 : v));
    } else {
        double v = (double)(int64_t)rnext(&g->r) / 1e9;
        dbl ? rb_f64(b, v) : rb_f32(b, (float)v);
    }
}

static void gen_text(gen *g, rb *b, bool text)
{
    static const char *pool[] = {"", "a", "hello", "wörld ☃", "x y z", "𝄞 clef"};
    char buf[400];
    if (text && rint_(&g->r, 3) == 0) {
        rb_str(b, pool[rint_(&g->r, 6)]);
        return;
    }
    uint32_t n = rint_(&g->r, 20) == 0 ? 300 + rint_(&g->r, 90) : rint_(&g->r, 24);
    for (uint32_t i = 0; i < n; i++)
        buf[i] = text ? (char)('a' + rint_(&g->r, 26)) : (char)rnext(&g->r);
    rb_bytes(b, buf, n);
}

static void gen_decimal(gen *g, rb *b, int32_t p)
{
    __int128 lim = 1;
    for (int i = 0; i < p; i++)
        lim *= 10;
    __int128 v = (__int128)(((unsigned __int128)rnext(&g->r) << 64 | rnext(&g->r)) >> 1) % lim;
    if (rnext(&g->r) & 1)
        v = -v;
    if (rint_(&g->r, 8) == 0)
        v = rint_(&g->r, 2) ? lim - 1 : -(lim - 1);
    rb_dec(b, v);
}

static void gen_slot(gen *g, rb *b, const floe__field *f, int depth);

static void gen_prim(gen *g, rb *b, const floe__field *f)
{
    static const int64_t ints[] = {0, 1, -1, INT32_MIN, INT32_MAX, 42, 1000};
    bool pooled = g->pool && rint_(&g->r, (uint32_t)g->pool) != 0;
    uint64_t x = pooled ? rint_(&g->r, 5) : rnext(&g->r);
    switch (f->kind) {
    case FLOE_K_BOOLEAN: rb_bool(b, (int)(x & 1)); break;
    case FLOE_K_INT: rb_i32(b, (x & 7) == 7 ? (int32_t)ints[x % 7] : (int32_t)x); break;
    case FLOE_K_DATE: rb_i32(b, (int32_t)(x % 200000) - 100000); break;
    case FLOE_K_LONG: rb_i64(b, (x & 15) == 15 ? INT64_MIN : (int64_t)x); break;
    case FLOE_K_TIME: rb_i64(b, (int64_t)(x % 86400000000ull)); break;
    case FLOE_K_TIMESTAMP:
    case FLOE_K_TIMESTAMPTZ: rb_i64(b, (int64_t)(x >> 8) - ((int64_t)1 << 54)); break;
    case FLOE_K_FLOAT: gen_float(g, b, false); break;
    case FLOE_K_DOUBLE: gen_float(g, b, true); break;
    case FLOE_K_DECIMAL: gen_decimal(g, b, f->precision); break;
    case FLOE_K_STRING: gen_text(g, b, true); break;
    case FLOE_K_BINARY: gen_text(g, b, false); break;
    case FLOE_K_UUID:
    case FLOE_K_FIXED: {
        uint8_t v[64];
        size_t n = f->kind == FLOE_K_UUID ? 16 : (size_t)f->length;
        for (size_t i = 0; i < n; i++)
            v[i] = (uint8_t)(pooled ? x : rnext(&g->r));
        rb_fixed(b, v, n);
        break;
    }
    default: break;
    }
}

static void gen_slot(gen *g, rb *b, const floe__field *f, int depth)
{
    if (!f->required && (int)rint_(&g->r, 100) < g->null_pct) {
        rb_null(b);
        return;
    }
    if (f->kind == FLOE_K_STRUCT) {
        rb_struct(b);
        for (uint32_t i = 0; i < f->n_children; i++)
            gen_slot(g, b, &f->children[i], depth + 1);
    } else if (f->kind == FLOE_K_LIST || f->kind == FLOE_K_MAP) {
        uint32_t n = depth > 4 ? 0 : rint_(&g->r, (uint32_t)g->max_list + 1);
        rb_count(b, n);
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t k = 0; k < f->n_children; k++)
                gen_slot(g, b, &f->children[k], depth + 1);
    } else {
        gen_prim(g, b, f);
    }
}

static void gen_rows(gen *g, const floe__schema *s, size_t n, rowset *rs)
{
    rb b = {0};
    for (size_t i = 0; i < n; i++) {
        rb_reset(&b);
        for (uint32_t k = 0; k < s->root.n_children; k++)
            gen_slot(g, &b, &s->root.children[k], 1);
        rowset_add(rs, &b);
    }
    rb_free(&b);
}

/* ---- writing and reading --------------------------------------------------------------- */

static void write_rows(const floe__schema *s, const floe_parquet_options *o, const rowset *rs,
                       floe__buf *file)
{
    floe__buf_init(file, 0);
    floe__pq_writer *w = NULL;
    floe_error *err = floe_error_new();
    int rc = floe__pq_writer_new(s, o, floe__output_memory(file), &w, err);
    for (size_t i = 0; rc == FLOE_OK && i < rs->n; i++) {
        size_t len;
        const uint8_t *row = rowset_row(rs, i, &len);
        rc = floe__pq_write_row(w, row, len, err);
    }
    if (rc == FLOE_OK)
        rc = floe__pq_writer_close(w, NULL, err);
    else
        floe__pq_writer_abort(w);
    if (rc)
        fprintf(stderr, "write: %s\n", floe_error_message(err));
    CHECK_EQ_INT(rc, FLOE_OK);
    floe_error_free(err);
}

static int open_mem(const floe__buf *file, const floe__schema *proj, floe__pq_reader **r,
                    floe_error *err)
{
    floe__pq_source src = floe__pq_source_memory(file->data, file->len);
    return floe__pq_reader_open(&src, proj, NULL, r, err);
}

/* All rows by next (batch == 0) or next_batch(batch); positions must count up. */
static int read_all(floe__pq_reader *r, size_t batch, rowset *out, floe_error *err)
{
    floe__buf rows;
    floe__buf_init(&rows, 0);
    size_t *ends = malloc((batch ? batch : 1) * sizeof *ends);
    int rc = FLOE_OK;
    for (;;) {
        size_t n = 0;
        uint64_t first = 0;
        rows.len = 0;
        if (batch) {
            rc = floe__pq_reader_next_batch(r, &rows, ends, batch, &n, &first, err);
        } else {
            bool got;
            rc = floe__pq_reader_next(r, &rows, &first, &got, err);
            n = got;
            ends[0] = rows.len;
        }
        if (rc || n == 0)
            break;
        CHECK_EQ_INT(first, out->n);
        for (size_t i = 0; i < n; i++) {
            rb row = {.d = rows.data + (i ? ends[i - 1] : 0), .len = ends[i] - (i ? ends[i - 1] : 0)};
            rowset_add(out, &row);
        }
    }
    free(ends);
    floe__buf_free(&rows);
    return rc;
}

static bool same_rows(const rowset *a, const rowset *b)
{
    if (a->n != b->n) {
        fprintf(stderr, "rows: %zu != %zu\n", a->n, b->n);
        return false;
    }
    for (size_t i = 0; i < a->n; i++) {
        size_t la, lb;
        const uint8_t *pa = rowset_row(a, i, &la), *pb = rowset_row(b, i, &lb);
        if (la != lb || memcmp(pa, pb, la) != 0) {
            fprintf(stderr, "row %zu differs (%zu vs %zu bytes)\n", i, la, lb);
            return false;
        }
    }
    return true;
}

/* Read file with projection proj (NULL: the file's schema) by next and by
 * batches of a few sizes; every way must give `want`. */
static void check_read(const floe__buf *file, const floe__schema *proj, const rowset *want)
{
    static const size_t batches[] = {0, 1, 7, 100000};
    for (size_t k = 0; k < sizeof batches / sizeof batches[0]; k++) {
        floe_error *err = floe_error_new();
        floe__pq_reader *r = NULL;
        rowset got = {0};
        int rc = open_mem(file, proj, &r, err);
        if (rc == FLOE_OK)
            rc = read_all(r, batches[k], &got, err);
        if (rc)
            fprintf(stderr, "read (batch %zu): %s\n", batches[k], floe_error_message(err));
        CHECK_EQ_INT(rc, FLOE_OK);
        CHECK(same_rows(&got, want));
        if (r)
            CHECK_EQ_INT(floe__pq_reader_num_rows(r), want->n);
        floe__pq_reader_free(r);
        rowset_free(&got);
        floe_error_free(err);
    }
}

static void roundtrip(const char *schema, const floe_parquet_options *o, gen *g, size_t n)
{
    floe__schema *s = ts_parse(schema);
    CHECK(s != NULL);
    if (!s)
        return;
    rowset rs = {0};
    gen_rows(g, s, n, &rs);
    floe__buf file;
    write_rows(s, o, &rs, &file);
    check_read(&file, s, &rs);
    check_read(&file, NULL, &rs);        /* the derived schema reads the same bytes */
    floe__buf_free(&file);
    rowset_free(&rs);
    ts_free(s);
}

static const char ALL_KINDS[] =
    "b boolean, i int, l long, f float, d double, dt date, t time, ts timestamp, "
    "tz timestamptz, s string, u uuid, bin binary, fx fixed(3), d9 decimal(9,2), "
    "d18 decimal(18,3), d38 decimal(38,5), d20 decimal(20,0), rb boolean!, ri int!, "
    "rs string!, rd decimal(38,10)!";

static const char NESTED[] =
    "id long!, tags list<string>, req list<int!>!, m map<string, int>, "
    "s struct<a int, b list<struct<x long, y string!>>, c struct<d double!>!>, "
    "mm map<int, list<map<string, double>>>, ll list<list<int>>, "
    "deep struct<e struct<f struct<g list<int>>>>";

static void options(floe_parquet_options *o, int codec, bool dict, size_t page, size_t rg)
{
    floe_parquet_options_init(o, sizeof *o);
    o->compression = (floe_compression)codec;
    o->dictionary = dict;
    o->page_size = page;
    o->row_group_size = rg;
    o->dictionary_limit = 2048;
}

TEST(every_kind_every_codec)
{
    for (int codec = FLOE_COMPRESSION_NONE; codec <= FLOE_COMPRESSION_ZSTD; codec++) {
        for (int dict = 0; dict < 2; dict++) {
            gen g = {.r = {0x1234567 + (uint64_t)codec * 7 + (uint64_t)dict}, .null_pct = 20,
                     .pool = dict ? 3 : 0, .max_list = 3};
            floe_parquet_options o;
            options(&o, codec, dict, 1024, 32 << 10);
            roundtrip(ALL_KINDS, &o, &g, 700);
        }
    }
}

TEST(nested_nulls_at_every_level)
{
    for (int codec = FLOE_COMPRESSION_NONE; codec <= FLOE_COMPRESSION_ZSTD; codec += 3) {
        gen g = {.r = {0xabcdef + (uint64_t)codec}, .null_pct = 25, .pool = 2, .max_list = 3};
        floe_parquet_options o;
        options(&o, codec, true, 700, 32 << 10);
        roundtrip(NESTED, &o, &g, 800);
    }
}

TEST(empty_lists_and_maps_and_defaults)
{
    gen g = {.r = {99}, .null_pct = 50, .pool = 0, .max_list = 1};
    roundtrip(NESTED, NULL, &g, 300);             /* default options: one page, one group */
    gen none = {.r = {7}, .null_pct = 100, .max_list = 0};
    roundtrip(NESTED, NULL, &none, 50);           /* all optional fields null */
    gen full = {.r = {8}, .null_pct = 0, .max_list = 0};
    roundtrip(NESTED, NULL, &full, 50);           /* every list and map empty */
}

TEST(many_row_groups_and_pages)
{
    gen g = {.r = {4242}, .null_pct = 10, .pool = 4, .max_list = 2};
    floe_parquet_options o;
    options(&o, FLOE_COMPRESSION_SNAPPY, true, 200, 4096);
    roundtrip("k long!, v string, l list<long>", &o, &g, 8000);
    floe__schema *s = ts_parse("k long!, v string");
    rowset rs = {0};
    gen_rows(&g, s, 5000, &rs);
    floe__buf file;
    write_rows(s, &o, &rs, &file);
    floe__pq_reader *r = NULL;
    CHECK_EQ_INT(open_mem(&file, s, &r, NULL), FLOE_OK);
    size_t groups = r ? floe__pq_reader_num_row_groups(r) : 0;
    CHECK(groups > 3);
    uint64_t next = 0;
    for (size_t i = 0; i < groups; i++) {
        floe__pq_row_group rg = floe__pq_reader_row_group(r, i);
        CHECK_EQ_INT(rg.first_row, next);
        CHECK(rg.compressed > 0);
        next += rg.num_rows;
    }
    CHECK_EQ_INT(next, 5000);
    /* a batch never crosses a row group; seek reads one group again */
    floe__buf rows;
    floe__buf_init(&rows, 0);
    size_t ends[100000], n;
    uint64_t first;
    floe__pq_row_group g2 = floe__pq_reader_row_group(r, 2);
    CHECK_EQ_INT(floe__pq_reader_seek(r, 2, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__pq_reader_next_batch(r, &rows, ends, 100000, &n, &first, NULL), FLOE_OK);
    CHECK_EQ_INT(n, g2.num_rows);              /* the whole row group in one call */
    CHECK_EQ_INT(first, g2.first_row);
    size_t len;
    const uint8_t *want = rowset_row(&rs, (size_t)first, &len);
    CHECK(rows.len == rs.ends[first + n - 1] - (want - rs.data.d) &&
          memcmp(rows.data, want, rows.len) == 0);
    CHECK_EQ_INT(floe__pq_reader_seek(r, groups, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__pq_reader_next_batch(r, &rows, ends, 10, &n, &first, NULL), FLOE_OK);
    CHECK_EQ_INT(n, 0);
    floe__buf_free(&rows);
    floe__pq_reader_free(r);
    floe__buf_free(&file);
    rowset_free(&rs);
    ts_free(s);
}

/* ---- projections ------------------------------------------------------------------------ */

static void set_id(floe__schema *s, const char *name, int32_t id)
{
    for (uint32_t i = 0; i < s->root.n_children; i++)
        if (strcmp(s->root.children[i].name, name) == 0)
            s->root.children[i].id = id;
}

/* The expected rows of a top-level projection: column k of `pick` is column
 * pick[k] of s, or null when negative. */
static void project_rows(const floe__schema *s, const rowset *rs, const int *pick, size_t n_pick,
                         rowset *out)
{
    rb b = {0};
    for (size_t i = 0; i < rs->n; i++) {
        size_t len;
        const uint8_t *row = rowset_row(rs, i, &len), *end = row + len;
        const uint8_t *at[64];
        const uint8_t *p = row;
        for (uint32_t k = 0; k < s->root.n_children; k++) {
            at[k] = p;
            p = floe__datum_skip(&s->root.children[k], p, end);
        }
        at[s->root.n_children] = p;
        rb_reset(&b);
        for (size_t k = 0; k < n_pick; k++) {
            if (pick[k] < 0)
                rb_null(&b);
            else
                rb_raw(&b, at[pick[k]], (size_t)(at[pick[k] + 1] - at[pick[k]]));
        }
        rowset_add(out, &b);
    }
    rb_free(&b);
}

TEST(projection_subset_reorder_missing)
{
    floe__schema *s = ts_parse(NESTED);
    gen g = {.r = {31337}, .null_pct = 20, .pool = 2, .max_list = 2};
    rowset rs = {0};
    gen_rows(&g, s, 800, &rs);
    floe_parquet_options o;
    options(&o, FLOE_COMPRESSION_ZSTD, true, 512, 16 << 10);
    floe__buf file;
    write_rows(s, &o, &rs, &file);
    /* s (id 5), missing (id 999), id (1), mm (ids from 17) */
    floe__schema *p = ts_parse("s struct<a int, b list<struct<x long, y string!>>, "
                               "c struct<d double!>!>, missing list<string>, id long!, "
                               "mm map<int, list<map<string, double>>>");
    const floe__field *ss = NULL;
    for (uint32_t i = 0; i < s->root.n_children; i++)
        if (strcmp(s->root.children[i].name, "s") == 0)
            ss = &s->root.children[i];
    /* give the projection the file's ids, field by field */
    floe__field_clear(&p->root.children[0]);
    CHECK_EQ_INT(floe__field_copy(&p->root.children[0], ss, NULL), FLOE_OK);
    floe__field_clear(&p->root.children[3]);
    CHECK_EQ_INT(floe__field_copy(&p->root.children[3], &s->root.children[5], NULL), FLOE_OK);
    set_id(p, "missing", 999);
    set_id(p, "id", 1);
    int pick[] = {4, -1, 0, 5};
    rowset want = {0};
    project_rows(s, &rs, pick, 4, &want);
    check_read(&file, p, &want);
    rowset_free(&want);
    /* a required field the file lacks */
    p->root.children[1].required = true;
    floe_error *err = floe_error_new();
    floe__pq_reader *r = NULL;
    CHECK_EQ_INT(open_mem(&file, p, &r, err), FLOE_EINCOMPATIBLE);
    CHECK(strstr(floe_error_message(err), "missing") != NULL);
    floe_error_free(err);
    floe__buf_free(&file);
    rowset_free(&rs);
    ts_free(p);
    ts_free(s);
}

/* Rows of the file schema's struct s read through a projection that keeps
 * only some of its fields, and one that keeps none the file has. */
TEST(projection_nested_subset)
{
    floe__schema *s = ts_parse("s struct<a int, b string, c list<struct<x long, y int>>>, z int");
    floe__schema *p = ts_parse("s struct<c list<struct<y int>>, q string>, z int");
    /* ids: file s=1 a=2 b=3 c=4 element=5 x=6 y=7 z=8; projection s=1 c=4 el=5 y=7 q=50 z=8 */
    floe__field *ps = &p->root.children[0];
    ps->id = 1;
    ps->children[0].id = 4;
    ps->children[0].children[0].id = 5;
    ps->children[0].children[0].children[0].id = 7;
    ps->children[1].id = 50;
    p->root.children[1].id = 8;
    rowset rs = {0}, want = {0};
    rb b = {0}, w = {0};
    for (int i = 0; i < 40; i++) {
        rb_reset(&b);
        rb_reset(&w);
        if (i % 5 == 0) {
            rb_null(&b);
            rb_null(&w);
        } else {
            rb_struct(&b);
            rb_struct(&w);
            rb_i32(&b, i);
            rb_str(&b, "text");
            if (i % 7 == 0) {
                rb_null(&b);
                rb_null(&w);
            } else {
                uint32_t n = (uint32_t)(i % 3);
                rb_count(&b, n);
                rb_count(&w, n);
                for (uint32_t k = 0; k < n; k++) {
                    if (k == 1) {
                        rb_null(&b);
                        rb_null(&w);
                        continue;
                    }
                    rb_struct(&b);
                    rb_struct(&w);
                    rb_i64(&b, i * 10 + k);
                    if ((i + k) % 2) {
                        rb_i32(&b, (int32_t)k);
                        rb_i32(&w, (int32_t)k);
                    } else {
                        rb_null(&b);
                        rb_null(&w);
                    }
                }
            }
            rb_null(&w);                      /* q: not in the file */
        }
        rb_i32(&b, -i);
        rb_i32(&w, -i);
        rowset_add(&rs, &b);
        rowset_add(&want, &w);
    }
    floe__buf file;
    write_rows(s, NULL, &rs, &file);
    check_read(&file, p, &want);
    /* a struct none of whose projected fields are in the file still knows
     * whether it is null (it reads a column for its levels) */
    floe__schema *q = ts_parse("s struct<q string>");
    q->root.children[0].id = 1;
    q->root.children[0].children[0].id = 50;
    rowset want2 = {0};
    for (int i = 0; i < 40; i++) {
        rb_reset(&w);
        if (i % 5 == 0) {
            rb_null(&w);
        } else {
            rb_struct(&w);
            rb_null(&w);
        }
        rowset_add(&want2, &w);
    }
    check_read(&file, q, &want2);
    rowset_free(&want2);
    ts_free(q);
    rb_free(&b);
    rb_free(&w);
    rowset_free(&rs);
    rowset_free(&want);
    floe__buf_free(&file);
    ts_free(p);
    ts_free(s);
}

/* Structs whose only column in the file sits under a list the projection
 * leaves out: the struct's levels still come from that column, all of the
 * column's entries for each occurrence are taken. */
TEST(projection_levels_from_a_repeated_column)
{
    floe__schema *s = ts_parse("s struct<l list<int>>, e list<struct<m list<long>, n int>>, z int!");
    /* ids: s=1 l=2 element=3 e=4 element=5 m=6 element=7 n=8 z=9 */
    floe__schema *p = ts_parse("s struct<q string>, e list<struct<r int>>, z int!");
    floe__field *ps = &p->root.children[0], *pe = &p->root.children[1];
    ps->id = 1;
    ps->children[0].id = 100;
    pe->id = 4;
    pe->children[0].id = 5;
    pe->children[0].children[0].id = 101;
    p->root.children[2].id = 9;
    gen g = {.r = {2024}, .null_pct = 30, .pool = 0, .max_list = 3};
    rowset rs = {0}, want = {0};
    gen_rows(&g, s, 500, &rs);
    rb w = {0};
    for (size_t i = 0; i < rs.n; i++) {
        size_t len;
        const uint8_t *row = rowset_row(&rs, i, &len), *end = row + len, *q;
        rb_reset(&w);
        if (row[0]) {                                   /* s present: q null */
            rb_struct(&w);
            rb_null(&w);
        } else {
            rb_null(&w);
        }
        q = floe__datum_skip(&s->root.children[0], row, end);
        if (q[0]) {                                     /* e: its elements, r null */
            uint32_t n = floe__get_le32(q + 1);
            const uint8_t *el = q + 5;
            rb_count(&w, n);
            for (uint32_t k = 0; k < n; k++) {
                if (el[0]) {
                    rb_struct(&w);
                    rb_null(&w);
                } else {
                    rb_null(&w);
                }
                el = floe__datum_skip(&s->root.children[1].children[0], el, end);
            }
            q = el;
        } else {
            rb_null(&w);
            q++;
        }
        rb_raw(&w, q, (size_t)(end - q));               /* z as it is */
        rowset_add(&want, &w);
    }
    floe_parquet_options o;
    options(&o, FLOE_COMPRESSION_NONE, false, 256, 8192);
    floe__buf file;
    write_rows(s, &o, &rs, &file);
    check_read(&file, p, &want);
    floe__buf_free(&file);
    rb_free(&w);
    rowset_free(&rs);
    rowset_free(&want);
    ts_free(p);
    ts_free(s);
}

TEST(promotions_and_incompatible_types)
{
    floe__schema *s = ts_parse("i int, f float, d decimal(9,2), l long");
    rowset rs = {0}, want = {0};
    rb b = {0}, w = {0};
    static const int32_t ints[] = {0, -1, INT32_MIN, INT32_MAX, 77};
    for (int i = 0; i < 5; i++) {
        rb_reset(&b);
        rb_reset(&w);
        rb_i32(&b, ints[i]);
        rb_i64(&w, ints[i]);
        float f = i == 4 ? -0.0f : (float)ints[i] / 3.0f;
        rb_f32(&b, f);
        rb_f64(&w, (double)f);
        rb_dec(&b, ints[i] % 1000000000);
        rb_dec(&w, ints[i] % 1000000000);
        rb_null(&b);
        rb_null(&w);
        rowset_add(&rs, &b);
        rowset_add(&want, &w);
    }
    floe__buf file;
    write_rows(s, NULL, &rs, &file);
    floe__schema *p = ts_parse("i long, f double, d decimal(12,2), l long");
    check_read(&file, p, &want);
    static const char *bad[] = {"i string", "f long", "d decimal(9,3)", "d decimal(8,2)",
                                "l int", "i list<int>", "i struct<x int>", "f boolean"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        floe__schema *q = ts_parse(bad[k]);
        floe_error *err = floe_error_new();
        floe__pq_reader *r = NULL;
        q->root.children[0].id = bad[k][0] == 'i' ? 1 : bad[k][0] == 'f' ? 2 : bad[k][0] == 'd' ? 3 : 4;
        CHECK_EQ_INT(open_mem(&file, q, &r, err), FLOE_EINCOMPATIBLE);
        CHECK(strstr(floe_error_message(err), "column ") != NULL);
        floe_error_free(err);
        ts_free(q);
    }
    rb_free(&b);
    rb_free(&w);
    rowset_free(&rs);
    rowset_free(&want);
    floe__buf_free(&file);
    ts_free(p);
    ts_free(s);
}

/* A null in the file where the projection says required. */
TEST(null_in_required_projection)
{
    floe__schema *s = ts_parse("a int, b list<int>");
    rowset rs = {0};
    rb b = {0};
    rb_i32(&b, 1);
    rb_count(&b, 1);
    rb_i32(&b, 1);
    rowset_add(&rs, &b);
    rb_reset(&b);
    rb_null(&b);
    rb_count(&b, 1);
    rb_null(&b);
    rowset_add(&rs, &b);
    floe__buf file;
    write_rows(s, NULL, &rs, &file);
    static const char *proj[] = {"a int!, b list<int>", "a int, b list<int!>"};
    for (int k = 0; k < 2; k++) {
        floe__schema *p = ts_parse(proj[k]);
        floe__pq_reader *r = NULL;
        floe_error *err = floe_error_new();
        rowset got = {0};
        CHECK_EQ_INT(open_mem(&file, p, &r, err), FLOE_OK);
        CHECK_EQ_INT(read_all(r, 0, &got, err), FLOE_EINCOMPATIBLE);
        CHECK_EQ_INT(got.n, 1);
        CHECK(strstr(floe_error_message(err), "row 1") != NULL);
        /* broken from now on */
        CHECK_EQ_INT(read_all(r, 0, &got, NULL), FLOE_EINCOMPATIBLE);
        floe__pq_reader_free(r);
        rowset_free(&got);
        floe_error_free(err);
        ts_free(p);
    }
    rb_free(&b);
    rowset_free(&rs);
    floe__buf_free(&file);
    ts_free(s);
}

TEST(uuid_as_text_and_position_deletes)
{
    floe__schema *s = ts_parse("u uuid, file_path string!, pos long!");
    s->root.children[1].id = 2147483546;
    s->root.children[2].id = 2147483545;
    rowset rs = {0}, want = {0};
    rb b = {0}, w = {0};
    for (int i = 0; i < 30; i++) {
        uint8_t u[16];
        for (int k = 0; k < 16; k++)
            u[k] = (uint8_t)(i * 16 + k * 7);
        rb_reset(&b);
        rb_reset(&w);
        if (i % 4 == 3) {
            rb_null(&b);
            rb_null(&w);
        } else {
            char text[37];
            rb_fixed(&b, u, 16);
            floe__uuid_format(u, text);
            rb_str(&w, text);
        }
        rb_str(&b, i < 15 ? "s3://bucket/data/a.parquet" : "s3://bucket/data/b.parquet");
        rb_i64(&b, i * 3);
        rowset_add(&rs, &b);
        rowset_add(&want, &w);
    }
    floe__buf file;
    write_rows(s, NULL, &rs, &file);
    check_read(&file, s, &rs);
    floe__schema *p = ts_parse("u string");
    p->root.children[0].decl = FLOE_D_UUID;
    check_read(&file, p, &want);
    /* the position delete columns alone */
    floe__schema *d = ts_parse("file_path string!, pos long!");
    d->root.children[0].id = 2147483546;
    d->root.children[1].id = 2147483545;
    int pick[] = {1, 2};
    rowset dels = {0};
    project_rows(s, &rs, pick, 2, &dels);
    check_read(&file, d, &dels);
    rowset_free(&dels);
    ts_free(d);
    rb_free(&b);
    rb_free(&w);
    rowset_free(&rs);
    rowset_free(&want);
    floe__buf_free(&file);
    ts_free(p);
    ts_free(s);
}

TEST(derived_schema)
{
    floe__schema *s = ts_parse(ALL_KINDS);
    floe__schema *n = ts_parse(NESTED);
    const floe__schema *both[2] = {s, n};
    for (int k = 0; k < 2; k++) {
        rowset rs = {0};
        floe__buf file;
        write_rows(both[k], NULL, &rs, &file);
        floe__pq_reader *r = NULL;
        CHECK_EQ_INT(open_mem(&file, NULL, &r, NULL), FLOE_OK);
        struct json_t *a = NULL, *b = NULL;
        CHECK_EQ_INT(floe__schema_to_jansson(both[k], &a, NULL), FLOE_OK);
        CHECK_EQ_INT(floe__schema_to_jansson(floe__pq_reader_schema(r), &b, NULL), FLOE_OK);
        char *ta = json_dumps(a, JSON_SORT_KEYS), *tb = json_dumps(b, JSON_SORT_KEYS);
        CHECK_EQ_STR(tb, ta);
        free(ta);
        free(tb);
        json_decref(a);
        json_decref(b);
        floe__pq_reader_free(r);
        floe__buf_free(&file);
    }
    ts_free(s);
    ts_free(n);
}

/* ---- hand-made files ------------------------------------------------------------------- */

/* A schema element; -1 (or 0 for id) leaves a field out.  lt: a LogicalType
 * of TIMESTAMP (lt 8) or TIME (7) with unit lt_unit, or STRING (1). */
typedef struct celem {
    const char *name;
    int type, rep, children, conv, id, len, scale, prec;
    int lt, lt_unit, lt_utc;
} celem;

#define LEAF(n, t, r, id) {n, t, r, -1, -1, id, -1, -1, -1, 0, 0, 0}
#define GROUP(n, r, k, conv, id) {n, -1, r, k, conv, id, -1, -1, -1, 0, 0, 0}

typedef struct chunkspec {
    int type;
    int compression;             /* floe_compression */
    int64_t num_values;
    rb pages;
} chunkspec;

static void tc_bytes(rb *out, floe__buf *h)
{
    rb_raw(out, h->data, h->len);
    floe__buf_free(h);
}

static void put_hdr(chunkspec *c, int type, size_t raw, size_t comp, const int *f, int nf)
{
    floe__buf h;
    floe__buf_init(&h, 0);
    floe__tc t;
    floe__tc_init(&t, &h);
    floe__tc_elem_struct_begin(&t);
    floe__tc_i32(&t, 1, type);
    floe__tc_i32(&t, 2, (int32_t)raw);
    floe__tc_i32(&t, 3, (int32_t)comp);
    floe__tc_struct_begin(&t, type == PQ_PAGE_DATA ? 5 : type == PQ_PAGE_DICTIONARY ? 7 : 8);
    for (int i = 0; i < nf; i++) {
        if (type == PQ_PAGE_DATA_V2 && i == 6)
            floe__tc_bool(&t, 7, f[i] != 0);
        else
            floe__tc_i32(&t, (int16_t)(i + 1), f[i]);
    }
    floe__tc_struct_end(&t);
    floe__tc_struct_end(&t);
    CHECK_EQ_INT(floe__tc_finish(&t, NULL), FLOE_OK);
    tc_bytes(&c->pages, &h);
}

static void compress_into(int compression, const uint8_t *p, size_t n, rb *out)
{
    floe__pq_codec codec;
    CHECK_EQ_INT(floe__pq_codec_init(&codec, compression, 0, NULL), FLOE_OK);
    floe__buf z;
    floe__buf_init(&z, 0);
    CHECK_EQ_INT(floe__pq_compress(&codec, p, n, &z, NULL), FLOE_OK);
    rb_raw(out, z.data, z.len);
    floe__buf_free(&z);
    floe__pq_codec_free(&codec);
}

/* A v1 data page (or dictionary page) of `body`, compressed as a whole. */
static void add_page(chunkspec *c, int type, const rb *body, const int *f, int nf)
{
    rb z = {0};
    compress_into(c->compression, body->d, body->len, &z);
    put_hdr(c, type, body->len, z.len, f, nf);
    rb_raw(&c->pages, z.d, z.len);
    rb_free(&z);
}

/* A v2 data page: levels as they are, values compressed when `compressed`. */
static void add_page_v2(chunkspec *c, const rb *reps, const rb *defs, const rb *vals, int n,
                        int nulls, int rows, int enc, bool compressed)
{
    rb z = {0};
    if (compressed)
        compress_into(c->compression, vals->d, vals->len, &z);
    else
        rb_raw(&z, vals->d, vals->len);
    int f[7] = {n, nulls, rows, enc, (int)defs->len, (int)reps->len, compressed};
    size_t lv = reps->len + defs->len;
    put_hdr(c, PQ_PAGE_DATA_V2, lv + vals->len, lv + z.len, f, 7);
    rb_raw(&c->pages, reps->d, reps->len);
    rb_raw(&c->pages, defs->d, defs->len);
    rb_raw(&c->pages, z.d, z.len);
    rb_free(&z);
}

static void put_elem(floe__tc *t, const celem *e)
{
    floe__tc_elem_struct_begin(t);
    if (e->type >= 0)
        floe__tc_i32(t, 1, e->type);
    if (e->len >= 0)
        floe__tc_i32(t, 2, e->len);
    if (e->rep >= 0)
        floe__tc_i32(t, 3, e->rep);
    floe__tc_string(t, 4, e->name);
    if (e->children >= 0)
        floe__tc_i32(t, 5, e->children);
    if (e->conv >= 0)
        floe__tc_i32(t, 6, e->conv);
    if (e->scale >= 0)
        floe__tc_i32(t, 7, e->scale);
    if (e->prec >= 0)
        floe__tc_i32(t, 8, e->prec);
    if (e->id > 0)
        floe__tc_i32(t, 9, e->id);
    if (e->lt) {
        floe__tc_struct_begin(t, 10);
        floe__tc_struct_begin(t, (int16_t)e->lt);
        if (e->lt == 7 || e->lt == 8) {
            floe__tc_bool(t, 1, e->lt_utc);
            floe__tc_struct_begin(t, 2);
            floe__tc_struct_begin(t, (int16_t)e->lt_unit);
            floe__tc_struct_end(t);
            floe__tc_struct_end(t);
        }
        floe__tc_struct_end(t);
        floe__tc_struct_end(t);
    }
    floe__tc_struct_end(t);
}

static void put_chunk(floe__tc *t, const chunkspec *c, uint64_t off)
{
    floe__tc_elem_struct_begin(t);
    floe__tc_i64(t, 2, (int64_t)off);
    floe__tc_struct_begin(t, 3);
    floe__tc_i32(t, 1, c->type);
    floe__tc_list_begin(t, 2, TC_I32, 1);
    floe__tc_elem_i32(t, 0);
    floe__tc_list_begin(t, 3, TC_BINARY, 1);
    floe__tc_elem_string(t, "x");
    floe__tc_i32(t, 4, floe__pq_codec_id(c->compression));
    floe__tc_i64(t, 5, c->num_values);
    floe__tc_i64(t, 6, (int64_t)c->pages.len);
    floe__tc_i64(t, 7, (int64_t)c->pages.len);
    floe__tc_i64(t, 9, (int64_t)off);
    floe__tc_struct_end(t);
    floe__tc_struct_end(t);
}

/* "PAR1", the chunks of one row group, the footer. */
static void craft_file(floe__buf *file, const celem *els, size_t n_els, const chunkspec *cols,
                       size_t n_cols, int64_t rows)
{
    floe__buf_init(file, 0);
    floe__buf_append(file, "PAR1", 4, NULL);
    uint64_t offs[16];
    for (size_t i = 0; i < n_cols; i++) {
        offs[i] = file->len;
        floe__buf_append(file, cols[i].pages.d, cols[i].pages.len, NULL);
    }
    floe__buf f;
    floe__buf_init(&f, 0);
    floe__tc t;
    floe__tc_init(&t, &f);
    floe__tc_elem_struct_begin(&t);
    floe__tc_i32(&t, 1, 1);
    floe__tc_list_begin(&t, 2, TC_STRUCT, n_els);
    for (size_t i = 0; i < n_els; i++)
        put_elem(&t, &els[i]);
    floe__tc_i64(&t, 3, rows);
    floe__tc_list_begin(&t, 4, TC_STRUCT, 1);
    floe__tc_elem_struct_begin(&t);
    floe__tc_list_begin(&t, 1, TC_STRUCT, n_cols);
    for (size_t i = 0; i < n_cols; i++)
        put_chunk(&t, &cols[i], offs[i]);
    floe__tc_i64(&t, 2, 1);
    floe__tc_i64(&t, 3, rows);
    floe__tc_struct_end(&t);
    floe__tc_struct_end(&t);
    CHECK_EQ_INT(floe__tc_finish(&t, NULL), FLOE_OK);
    uint8_t len[4];
    floe__put_le32(len, (uint32_t)f.len);
    floe__buf_append(file, f.data, f.len, NULL);
    floe__buf_append(file, len, 4, NULL);
    floe__buf_append(file, "PAR1", 4, NULL);
    floe__buf_free(&f);
}

static void free_chunks(chunkspec *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rb_free(&c[i].pages);
}

/* Levels as RLE with the v1 4-byte length (with_len) or bare (v2). */
static void rle_levels(rb *out, const uint8_t *lv, size_t n, int max, bool with_len)
{
    int bw = floe__bit_width((uint64_t)max);
    uint8_t *tmp = malloc(floe__rle_bound(n, bw) + 8);
    size_t len = floe__rle_encode_u8(lv, n, bw, tmp);
    uint8_t l4[4];
    floe__put_le32(l4, (uint32_t)len);
    if (with_len)
        rb_raw(out, l4, 4);
    rb_raw(out, tmp, len);
    free(tmp);
}

static void pack_bits(rb *out, const uint64_t *v, size_t n, int bw, bool msb)
{
    size_t bytes = (n * (size_t)bw + 7) / 8;
    uint8_t *o = calloc(bytes + 1, 1);
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < bw; b++) {
            size_t bit = i * (size_t)bw + (size_t)b;
            int set = msb ? (int)(v[i] >> (bw - 1 - b)) & 1 : (int)(v[i] >> b) & 1;
            if (set)
                o[bit / 8] |= (uint8_t)(msb ? 0x80 >> (bit % 8) : 1 << (bit % 8));
        }
    rb_raw(out, o, bytes);
    free(o);
}

static void uvar(rb *b, uint64_t v)
{
    uint8_t t[10];
    rb_raw(b, t, floe__put_uvarint(t, v));
}

/* DELTA_BINARY_PACKED: blocks of 128, 4 miniblocks of 32. */
static void dbp(rb *b, const int64_t *v, size_t n)
{
    uvar(b, 128);
    uvar(b, 4);
    uvar(b, n);
    uvar(b, floe__zigzag64(n ? v[0] : 0));
    for (size_t s = 1; s < n; s += 128) {
        size_t m = n - s < 128 ? n - s : 128;
        uint64_t d[128] = {0};
        int64_t mn = INT64_MAX;
        for (size_t i = 0; i < m; i++) {
            d[i] = (uint64_t)v[s + i] - (uint64_t)v[s + i - 1];
            if ((int64_t)d[i] < mn)
                mn = (int64_t)d[i];
        }
        uvar(b, floe__zigzag64(mn));
        uint8_t w[4] = {0};
        for (size_t i = 0; i < m; i++) {
            d[i] -= (uint64_t)mn;
            int bw = floe__bit_width(d[i]);
            if (bw > w[i / 32])
                w[i / 32] = (uint8_t)bw;
        }
        for (size_t i = m; i < 128; i++)
            d[i] = 0;
        rb_raw(b, w, 4);
        for (size_t k = 0; k * 32 < m; k++)
            pack_bits(b, d + 32 * k, 32, w[k], false);
    }
}

/* With FLOE_PQ_DUMP=DIR, hand-made files are also written there (they seed
 * fuzz/corpus/fuzz_parquet_read). */
static void dump(const floe__buf *file)
{
    static int n;
    const char *dir = getenv("FLOE_PQ_DUMP");
    if (!dir)
        return;
    char path[1024];
    snprintf(path, sizeof path, "%s/crafted-%02d.parquet", dir, n++);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(file->data, 1, file->len, f);
        fclose(f);
    }
}

static void check_crafted(const floe__buf *file, const floe__schema *proj, const rowset *want)
{
    dump(file);
    check_read(file, proj, want);
}

static int crafted_error(const floe__buf *file, const floe__schema *proj, const char *needle)
{
    dump(file);
    floe_error *err = floe_error_new();
    floe__pq_reader *r = NULL;
    rowset got = {0};
    int rc = open_mem(file, proj, &r, err);
    if (rc == FLOE_OK)
        rc = read_all(r, 0, &got, err);
    if (needle && !strstr(floe_error_message(err), needle))
        fprintf(stderr, "message without \"%s\": %s\n", needle, floe_error_message(err));
    CHECK(!needle || strstr(floe_error_message(err), needle) != NULL);
    floe__pq_reader_free(r);
    rowset_free(&got);
    floe_error_free(err);
    return rc;
}

/* An optional int32: a v2 page (snappy, levels bare), then a v1 page with
 * deprecated BIT_PACKED levels, then a v2 page stored uncompressed. */
TEST(crafted_page_versions_and_level_encodings)
{
    celem els[] = {GROUP("schema", -1, 1, -1, 0), LEAF("x", PQ_T_INT32, PQ_OPTIONAL, 1)};
    chunkspec c = {.type = PQ_T_INT32, .compression = FLOE_COMPRESSION_SNAPPY, .num_values = 30};
    rowset want = {0};
    rb w = {0}, reps = {0}, defs = {0}, vals = {0}, body = {0};
    uint8_t lv[10];
    uint64_t lv64[10];
    for (int page = 0; page < 3; page++) {
        rb_reset(&defs);
        rb_reset(&vals);
        rb_reset(&body);
        int nulls = 0;
        for (int i = 0; i < 10; i++) {
            int v = page * 10 + i;
            lv[i] = (uint8_t)(v % 3 != 0);
            lv64[i] = lv[i];
            rb_reset(&w);
            if (lv[i]) {
                rb_raw(&vals, &v, 4);
                rb_i32(&w, v);
            } else {
                rb_null(&w);
                nulls++;
            }
            rowset_add(&want, &w);
        }
        if (page == 1) {
            pack_bits(&body, lv64, 10, 1, true);
            rb_raw(&body, vals.d, vals.len);
            int f[4] = {10, PQ_ENC_PLAIN, PQ_ENC_BIT_PACKED, PQ_ENC_RLE};
            add_page(&c, PQ_PAGE_DATA, &body, f, 4);
        } else {
            rle_levels(&defs, lv, 10, 1, false);
            add_page_v2(&c, &reps, &defs, &vals, 10, nulls, 10, PQ_ENC_PLAIN, page == 0);
        }
    }
    floe__buf file;
    craft_file(&file, els, 2, &c, 1, 30);
    floe__schema *p = ts_parse("x int");
    check_crafted(&file, p, &want);
    floe__schema *l = ts_parse("x long");
    rowset wl = {0};
    for (size_t i = 0; i < want.n; i++) {
        size_t len;
        const uint8_t *row = rowset_row(&want, i, &len);
        rb_reset(&w);
        if (row[0])
            rb_i64(&w, (int32_t)floe__get_le32(row + 1));
        else
            rb_null(&w);
        rowset_add(&wl, &w);
    }
    check_crafted(&file, l, &wl);
    rowset_free(&wl);
    ts_free(l);
    ts_free(p);
    floe__buf_free(&file);
    rb_free(&w);
    rb_free(&reps);
    rb_free(&defs);
    rb_free(&vals);
    rb_free(&body);
    rowset_free(&want);
    free_chunks(&c, 1);
}

/* DELTA_BINARY_PACKED (int32 and int64, wrapping deltas, 64-bit widths),
 * DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, BYTE_STREAM_SPLIT. */
TEST(crafted_delta_and_split_encodings)
{
    enum { N = 300 };
    celem els[] = {GROUP("schema", -1, 5, -1, 0), LEAF("a", PQ_T_INT64, PQ_REQUIRED, 1),
                   LEAF("b", PQ_T_INT32, PQ_REQUIRED, 2),
                   {"c", PQ_T_BYTE_ARRAY, PQ_REQUIRED, -1, PQ_CT_UTF8, 3, -1, -1, -1, 0, 0, 0},
                   {"d", PQ_T_BYTE_ARRAY, PQ_REQUIRED, -1, PQ_CT_UTF8, 4, -1, -1, -1, 0, 0, 0},
                   LEAF("e", PQ_T_DOUBLE, PQ_REQUIRED, 5)};
    chunkspec c[5];
    memset(c, 0, sizeof c);
    int types[5] = {PQ_T_INT64, PQ_T_INT32, PQ_T_BYTE_ARRAY, PQ_T_BYTE_ARRAY, PQ_T_DOUBLE};
    int encs[5] = {PQ_ENC_DELTA_BINARY_PACKED, PQ_ENC_DELTA_BINARY_PACKED,
                   PQ_ENC_DELTA_LENGTH_BYTE_ARRAY, PQ_ENC_DELTA_BYTE_ARRAY,
                   PQ_ENC_BYTE_STREAM_SPLIT};
    int64_t a[N], b[N], lens[N], pre[N], suf[N];
    char strs[N][40];
    double e[N];
    rng r = {77};
    rowset want = {0};
    rb w = {0};
    for (int i = 0; i < N; i++) {
        a[i] = i % 50 == 0 ? (i % 100 ? INT64_MAX : INT64_MIN) : (int64_t)rnext(&r) >> (i % 60);
        b[i] = i % 7 == 0 ? INT32_MIN : (int32_t)(rnext(&r) >> (i % 30 + 32));
        snprintf(strs[i], sizeof strs[i], "key-%06d-%s", i / 3, i % 2 ? "odd" : "even");
        lens[i] = (int64_t)strlen(strs[i]);
        size_t common = 0;
        while (i && strs[i][common] && strs[i][common] == strs[i - 1][common])
            common++;
        pre[i] = (int64_t)common;
        suf[i] = lens[i] - pre[i];
        e[i] = i % 11 == 0 ? -0.0 : (double)(int64_t)rnext(&r) / 7.0;
        static const uint64_t nans[3] = {0x7ff0000000000123ull, 0xfff8000000000000ull,
                                         0x7fffffffffffffffull};
        if (i % 17 == 5)                /* NaNs with sign and payload: read canonical */
            memcpy(&e[i], &nans[i % 3], 8);
        rb_reset(&w);
        rb_i64(&w, a[i]);
        rb_i32(&w, (int32_t)b[i]);
        rb_str(&w, strs[i]);
        rb_str(&w, strs[i]);
        if (i % 17 == 5) {
            uint64_t canon = 0x7ff8000000000000ull;
            rb_tag(&w, 1);
            rb_raw(&w, &canon, 8);
        } else {
            rb_f64(&w, e[i]);
        }
        rowset_add(&want, &w);
    }
    rb body[5] = {{0}};
    dbp(&body[0], a, N);
    dbp(&body[1], b, N);
    dbp(&body[2], lens, N);
    for (int i = 0; i < N; i++)
        rb_raw(&body[2], strs[i], (size_t)lens[i]);
    dbp(&body[3], pre, N);
    dbp(&body[3], suf, N);
    for (int i = 0; i < N; i++)
        rb_raw(&body[3], strs[i] + pre[i], (size_t)suf[i]);
    for (int byte = 0; byte < 8; byte++)
        for (int i = 0; i < N; i++)
            rb_raw(&body[4], (const uint8_t *)&e[i] + byte, 1);
    for (int k = 0; k < 5; k++) {
        c[k].type = types[k];
        c[k].compression = k % 2 ? FLOE_COMPRESSION_ZSTD : FLOE_COMPRESSION_GZIP;
        c[k].num_values = N;
        int f[4] = {N, encs[k], PQ_ENC_RLE, PQ_ENC_RLE};
        add_page(&c[k], PQ_PAGE_DATA, &body[k], f, 4);
        rb_free(&body[k]);
    }
    floe__buf file;
    craft_file(&file, els, 6, c, 5, N);
    floe__schema *p = ts_parse("a long!, b int!, c string!, d string!, e double!");
    check_crafted(&file, p, &want);
    ts_free(p);
    floe__buf_free(&file);
    free_chunks(c, 5);
    rb_free(&w);
    rowset_free(&want);
}

/* One chunk's worth of a list column: levels and int32 values, one v1 page. */
static void list_chunk(chunkspec *c, const uint8_t *reps, const uint8_t *defs, size_t n,
                       int max_rep, int max_def, const int32_t *vals, size_t n_vals)
{
    c->type = PQ_T_INT32;
    c->compression = FLOE_COMPRESSION_NONE;
    c->num_values = (int64_t)n;
    rb body = {0};
    rle_levels(&body, reps, n, max_rep, true);
    rle_levels(&body, defs, n, max_def, true);
    rb_raw(&body, vals, n_vals * 4);
    int f[4] = {(int)n, PQ_ENC_PLAIN, PQ_ENC_RLE, PQ_ENC_RLE};
    add_page(c, PQ_PAGE_DATA, &body, f, 4);
    rb_free(&body);
}

/* The legacy list and map forms: 2-level lists (repeated primitive in a
 * LIST group), a bare repeated field, a MAP_KEY_VALUE map; no field ids, so
 * fields are matched by name. */
TEST(crafted_legacy_lists_and_maps_by_name)
{
    celem els[] = {
        GROUP("schema", -1, 3, -1, 0),
        GROUP("two", PQ_OPTIONAL, 1, PQ_CT_LIST, 0),
        LEAF("array", PQ_T_INT32, PQ_REPEATED, 0),
        LEAF("bare", PQ_T_INT32, PQ_REPEATED, 0),
        GROUP("m", PQ_OPTIONAL, 1, PQ_CT_MAP, 0),
        GROUP("map", PQ_REPEATED, 2, PQ_CT_MAP_KEY_VALUE, 0),
        LEAF("key", PQ_T_INT32, PQ_REQUIRED, 0),
        LEAF("value", PQ_T_INT32, PQ_OPTIONAL, 0),
    };
    els[0].children = 3;
    /* rows: two=null, [], [1,2]; bare=[5], [], [6,7]; m=null, {}, {1:null, 2:20} */
    static const uint8_t two_r[] = {0, 0, 0, 1}, two_d[] = {0, 1, 2, 2};
    static const int32_t two_v[] = {1, 2};
    static const uint8_t bare_r[] = {0, 0, 0, 1}, bare_d[] = {1, 0, 1, 1};
    static const int32_t bare_v[] = {5, 6, 7};
    static const uint8_t m_r[] = {0, 0, 0, 1}, mk_d[] = {0, 1, 2, 2}, mv_d[] = {0, 1, 2, 3};
    static const int32_t mk_v[] = {1, 2}, mv_v[] = {20};
    chunkspec c[4];
    memset(c, 0, sizeof c);
    list_chunk(&c[0], two_r, two_d, 4, 1, 2, two_v, 2);
    list_chunk(&c[1], bare_r, bare_d, 4, 1, 1, bare_v, 3);
    list_chunk(&c[2], m_r, mk_d, 4, 1, 2, mk_v, 2);
    list_chunk(&c[3], m_r, mv_d, 4, 1, 3, mv_v, 1);
    floe__buf file;
    craft_file(&file, els, 8, c, 4, 3);
    floe__schema *p = ts_parse("two list<int!>, bare list<int!>!, m map<int, int>");
    rowset want = {0};
    rb w = {0};
    rb_null(&w);
    rb_count(&w, 1);
    rb_i32(&w, 5);
    rb_null(&w);
    rowset_add(&want, &w);
    rb_reset(&w);
    rb_count(&w, 0);
    rb_count(&w, 0);
    rb_count(&w, 0);
    rowset_add(&want, &w);
    rb_reset(&w);
    rb_count(&w, 2);
    rb_i32(&w, 1);
    rb_i32(&w, 2);
    rb_count(&w, 2);
    rb_i32(&w, 6);
    rb_i32(&w, 7);
    rb_count(&w, 2);
    rb_i32(&w, 1);
    rb_null(&w);
    rb_i32(&w, 2);
    rb_i32(&w, 20);
    rowset_add(&want, &w);
    check_crafted(&file, p, &want);
    check_crafted(&file, NULL, &want);    /* derived: the same shapes */
    /* a definition level above the key column's maximum (2, in 2 bits) */
    free_chunks(&c[2], 1);
    memset(&c[2], 0, sizeof c[2]);
    static const uint8_t bad_d[] = {0, 1, 2, 3};
    list_chunk(&c[2], m_r, bad_d, 4, 1, 2, mk_v, 1);
    floe__buf bad;
    craft_file(&bad, els, 8, c, 4, 3);
    CHECK_EQ_INT(crafted_error(&bad, p, "above the column's maximum"), FLOE_EFORMAT);
    floe__buf_free(&bad);
    /* levels out of step between a map's key and value columns */
    free_chunks(&c[2], 1);
    memset(&c[2], 0, sizeof c[2]);
    static const uint8_t step_d[] = {0, 2, 2, 2};
    static const int32_t step_v[] = {1, 2, 3};
    list_chunk(&c[2], m_r, step_d, 4, 1, 2, step_v, 3);
    craft_file(&bad, els, 8, c, 4, 3);
    CHECK_EQ_INT(crafted_error(&bad, p, "out of step"), FLOE_EFORMAT);
    floe__buf_free(&bad);
    rb_free(&w);
    rowset_free(&want);
    ts_free(p);
    floe__buf_free(&file);
    free_chunks(c, 4);
}

/* Timestamps in millis and nanos, INT96, TIME(MILLIS) in int32. */
TEST(crafted_time_units)
{
    celem els[] = {
        GROUP("schema", -1, 4, -1, 0),
        {"ms", PQ_T_INT64, PQ_REQUIRED, -1, -1, 1, -1, -1, -1, 8, PQ_UNIT_MILLIS, 1},
        {"ns", PQ_T_INT64, PQ_REQUIRED, -1, -1, 2, -1, -1, -1, 8, PQ_UNIT_NANOS, 0},
        LEAF("i96", PQ_T_INT96, PQ_REQUIRED, 3),
        {"tm", PQ_T_INT32, PQ_REQUIRED, -1, PQ_CT_TIME_MILLIS, 4, -1, -1, -1, 0, 0, 0},
    };
    static const int64_t ms[] = {0, 1, -1, 1700000000123LL};
    static const int64_t ns[] = {0, 1999, -1, -1001};
    static const int64_t ns_us[] = {0, 1, -1, -2};         /* floored */
    static const int32_t tm[] = {0, 1, 86399999, 45296789};
    chunkspec c[4];
    memset(c, 0, sizeof c);
    rb body[4] = {{0}};
    rowset want = {0};
    rb w = {0};
    for (int i = 0; i < 4; i++) {
        rb_raw(&body[0], &ms[i], 8);
        rb_raw(&body[1], &ns[i], 8);
        int64_t nanos = ns[i] < 0 ? 0 : ns[i] * 1000;     /* nanos of the day */
        uint32_t jday = 2440588 + (uint32_t)i;
        rb_raw(&body[2], &nanos, 8);
        rb_raw(&body[2], &jday, 4);
        rb_raw(&body[3], &tm[i], 4);
        rb_reset(&w);
        rb_i64(&w, ms[i] * 1000);
        rb_i64(&w, ns_us[i]);
        rb_i64(&w, (int64_t)i * 86400000000LL + nanos / 1000);
        rb_i64(&w, (int64_t)tm[i] * 1000);
        rowset_add(&want, &w);
    }
    int types[4] = {PQ_T_INT64, PQ_T_INT64, PQ_T_INT96, PQ_T_INT32};
    for (int k = 0; k < 4; k++) {
        c[k].type = types[k];
        c[k].num_values = 4;
        int f[4] = {4, PQ_ENC_PLAIN, PQ_ENC_RLE, PQ_ENC_RLE};
        add_page(&c[k], PQ_PAGE_DATA, &body[k], f, 4);
        rb_free(&body[k]);
    }
    floe__buf file;
    craft_file(&file, els, 5, c, 4, 4);
    floe__schema *p = ts_parse("ms timestamptz!, ns timestamp!, i96 timestamptz!, tm time!");
    check_crafted(&file, p, &want);
    ts_free(p);
    /* INT96 is only a timestamp */
    floe__schema *q = ts_parse("i96 long!");
    q->root.children[0].id = 3;
    CHECK_EQ_INT(crafted_error(&file, q, "INT96"), FLOE_EINCOMPATIBLE);
    ts_free(q);
    floe__buf_free(&file);
    rb_free(&w);
    rowset_free(&want);
    free_chunks(c, 4);
}

/* A dictionary column, whole or broken in the ways a hostile file could. */
static void dict_file(floe__buf *file, int how)
{
    celem els[] = {GROUP("schema", -1, 1, -1, 0),
                   {"s", PQ_T_BYTE_ARRAY, PQ_OPTIONAL, -1, PQ_CT_UTF8, 1, -1, -1, -1, 0, 0, 0}};
    chunkspec c = {.type = PQ_T_BYTE_ARRAY, .compression = FLOE_COMPRESSION_SNAPPY,
                   .num_values = 6};
    rb d = {0}, body = {0};
    const char *words[3] = {"alpha", "beta", how == 3 ? "\xff\xfe" : "gamma"};
    for (int i = 0; i < 3; i++)
        rb_bytes(&d, words[i], (uint32_t)strlen(words[i]));
    rb plain = {.d = d.d + 1, .len = 0};               /* entries without slot tags */
    rb entries = {0};
    for (size_t at = 0; at < d.len;) {
        uint32_t n = floe__get_le32(d.d + at + 1);
        rb_raw(&entries, d.d + at + 1, 4 + n);
        at += 5 + n;
    }
    (void)plain;
    int fd[2] = {3, PQ_ENC_PLAIN};
    if (how != 1)
        add_page(&c, PQ_PAGE_DICTIONARY, &entries, fd, 2);
    static const uint8_t defs[6] = {1, 1, 0, 1, 1, 1};
    uint32_t idx[5] = {0, 2, 1, 1, how == 2 ? 7 : 0};
    rle_levels(&body, defs, 6, 1, true);
    uint8_t bw = 3, packed[16];
    rb_raw(&body, &bw, 1);
    rb_raw(&body, packed, floe__rle_encode_u32(idx, 5, 3, packed));
    int f[4] = {6, PQ_ENC_RLE_DICTIONARY, PQ_ENC_RLE, PQ_ENC_RLE};
    if (how == 4) {
        /* a page claiming far more bytes than its snappy stream holds */
        rb z = {0};
        compress_into(FLOE_COMPRESSION_SNAPPY, body.d, body.len, &z);
        put_hdr(&c, PQ_PAGE_DATA, 200 << 20, z.len, f, 4);
        rb_raw(&c.pages, z.d, z.len);
        rb_free(&z);
    } else {
        add_page(&c, PQ_PAGE_DATA, &body, f, 4);
    }
    if (how == 5)
        c.pages.len -= 3;                              /* the page runs past its chunk */
    craft_file(file, els, 2, &c, 1, 6);
    rb_free(&d);
    rb_free(&entries);
    rb_free(&body);
    free_chunks(&c, 1);
}

TEST(crafted_dictionaries_and_lies)
{
    floe__buf file;
    dict_file(&file, 0);
    floe__schema *p = ts_parse("s string");
    rowset want = {0};
    rb w = {0};
    static const char *rows[6] = {"alpha", "gamma", NULL, "beta", "beta", "alpha"};
    for (int i = 0; i < 6; i++) {
        rb_reset(&w);
        if (rows[i])
            rb_str(&w, rows[i]);
        else
            rb_null(&w);
        rowset_add(&want, &w);
    }
    check_crafted(&file, p, &want);
    floe__buf_free(&file);
    static const struct { const char *needle; int code; } cases[] = {
        {NULL, FLOE_OK},
        {"without a dictionary page", FLOE_EFORMAT},
        {"dictionary index 7", FLOE_EFORMAT},
        {"UTF-8", FLOE_EFORMAT},
        {"compressed bytes cannot hold", FLOE_EFORMAT},
        {"runs past the end of its chunk", FLOE_EFORMAT},
    };
    for (int how = 1; how < 6; how++) {
        dict_file(&file, how);
        CHECK_EQ_INT(crafted_error(&file, p, cases[how].needle), cases[how].code);
        floe__buf_free(&file);
    }
    rb_free(&w);
    rowset_free(&want);
    ts_free(p);
}

/* ---- malformed files ----------------------------------------------------------------------- */

static void small_file(floe__buf *file, int compression)
{
    floe__schema *s = ts_parse("a long!, b string, c list<int>, d map<string, double>");
    gen g = {.r = {5}, .null_pct = 20, .pool = 2, .max_list = 2};
    rowset rs = {0};
    gen_rows(&g, s, 200, &rs);
    floe_parquet_options o;
    options(&o, compression, true, 300, 4096);
    write_rows(s, &o, &rs, file);
    rowset_free(&rs);
    ts_free(s);
}

/* Open and read everything with the file's schema: rows must be valid and
 * failures one of the codes for bad input. */
static int read_any(const uint8_t *p, size_t n)
{
    floe__pq_source src = floe__pq_source_memory(p, n);
    floe__pq_read_options o;
    floe__pq_read_options_init(&o);
    o.max_page = 1 << 20;
    floe__pq_reader *r = NULL;
    floe_error *err = floe_error_new();
    int rc = floe__pq_reader_open(&src, NULL, &o, &r, err);
    floe__buf row;
    floe__buf_init(&row, 1 << 24);
    for (int i = 0; rc == FLOE_OK && i < 5000; i++) {
        uint64_t pos;
        bool got;
        row.len = 0;
        rc = floe__pq_reader_next(r, &row, &pos, &got, err);
        if (rc || !got)
            break;
        CHECK_EQ_INT(floe__datum_validate(floe__pq_reader_schema(r), row.data, row.len, NULL),
                     FLOE_OK);
    }
    CHECK(rc == FLOE_OK || rc == FLOE_EFORMAT || rc == FLOE_EUNSUPPORTED ||
          rc == FLOE_EINCOMPATIBLE || rc == FLOE_ELIMIT);
    if (rc != FLOE_OK)
        CHECK(strlen(floe_error_message(err)) > 0);
    floe__buf_free(&row);
    floe__pq_reader_free(r);
    floe_error_free(err);
    return rc;
}

TEST(truncated_and_bad_magic)
{
    floe__buf file;
    small_file(&file, FLOE_COMPRESSION_ZSTD);
    CHECK_EQ_INT(read_any(file.data, file.len), FLOE_OK);
    for (size_t cut = 0; cut < file.len; cut += cut < 64 || file.len - cut < 600 ? 1 : 97)
        CHECK_EQ_INT(read_any(file.data, cut), FLOE_EFORMAT);
    uint8_t *copy = malloc(file.len);
    memcpy(copy, file.data, file.len);
    copy[0] = 'X';
    CHECK_EQ_INT(read_any(copy, file.len), FLOE_EFORMAT);
    memcpy(copy, file.data, file.len);
    copy[file.len - 1] = 'X';
    CHECK_EQ_INT(read_any(copy, file.len), FLOE_EFORMAT);
    memcpy(copy + file.len - 4, "PARE", 4);
    CHECK_EQ_INT(read_any(copy, file.len), FLOE_EUNSUPPORTED);
    memcpy(copy, file.data, file.len);
    floe__put_le32(copy + file.len - 8, (uint32_t)file.len);      /* footer longer than file */
    CHECK_EQ_INT(read_any(copy, file.len), FLOE_EFORMAT);
    floe__put_le32(copy + file.len - 8, floe__get_le32(file.data + file.len - 8) - 5);
    CHECK_EQ_INT(read_any(copy, file.len), FLOE_EFORMAT);
    free(copy);
    floe__buf_free(&file);
}

/* Every byte of small files changed, one at a time, in a few ways: never a
 * crash, a hang or an invalid row. */
TEST(corrupted_bytes)
{
    static const int codecs[] = {FLOE_COMPRESSION_NONE, FLOE_COMPRESSION_SNAPPY};
    static const uint8_t xors[] = {0x01, 0x80, 0xff};
    for (size_t k = 0; k < 2; k++) {
        floe__buf file;
        small_file(&file, codecs[k]);
        uint8_t *copy = malloc(file.len);
        size_t step = file.len / 300 + 1;
        for (size_t at = 0; at < file.len; at += step) {
            for (size_t x = 0; x < sizeof xors; x++) {
                memcpy(copy, file.data, file.len);
                copy[at] ^= xors[x];
                read_any(copy, file.len);
            }
        }
        free(copy);
        floe__buf_free(&file);
    }
}

/* Every allocation failing in turn: FLOE_ENOMEM, nothing leaked. */
TEST(allocation_failures)
{
    floe__buf file;
    small_file(&file, FLOE_COMPRESSION_GZIP);
    floe__schema *s = ts_parse("a long!, b string, c list<int>, d map<string, double>");
    int ok = 0;
    for (long n = 0; n < 5000 && !ok; n++) {
        floe__pq_reader *r = NULL;
        floe__buf row;
        floe__buf_init(&row, 0);
        floe__alloc_fail_after(n);
        int rc = open_mem(&file, n % 2 ? s : NULL, &r, NULL);
        size_t rows = 0;
        while (rc == FLOE_OK) {
            uint64_t pos;
            bool got;
            rc = floe__pq_reader_next(r, &row, &pos, &got, NULL);
            if (!got)
                break;
            rows++;
        }
        floe__alloc_fail_after(-1);
        CHECK(rc == FLOE_OK || rc == FLOE_ENOMEM);
        if (rc == FLOE_OK) {
            CHECK_EQ_INT(rows, 200);
            ok = 1;
        }
        floe__pq_reader_free(r);
        floe__buf_free(&row);
    }
    CHECK(ok);
    ts_free(s);
    floe__buf_free(&file);
}

TEST(bad_arguments_and_options)
{
    floe__buf file;
    small_file(&file, FLOE_COMPRESSION_NONE);
    floe__pq_source src = floe__pq_source_memory(file.data, file.len);
    floe__pq_reader *r = NULL;
    floe__pq_read_options o;
    floe__pq_read_options_init(&o);
    o.max_page = 10;
    CHECK_EQ_INT(floe__pq_reader_open(&src, NULL, &o, &r, NULL), FLOE_EINVAL);
    CHECK_EQ_INT(floe__pq_reader_open(NULL, NULL, NULL, &r, NULL), FLOE_EINVAL);
    floe__pq_read_options_init(&o);
    o.max_footer = 64;
    CHECK_EQ_INT(floe__pq_reader_open(&src, NULL, &o, &r, NULL), FLOE_ELIMIT);
    floe__pq_read_options_init(&o);
    o.max_page = 4096;                       /* pages of this file are about 300 bytes */
    CHECK_EQ_INT(floe__pq_reader_open(&src, NULL, &o, &r, NULL), FLOE_OK);
    size_t ends[4], n;
    uint64_t first;
    floe__buf rows;
    floe__buf_init(&rows, 0);
    CHECK_EQ_INT(floe__pq_reader_next_batch(r, &rows, ends, 0, &n, &first, NULL), FLOE_EINVAL);
    CHECK_EQ_INT(floe__pq_reader_seek(r, 99, NULL), FLOE_EINVAL);
    CHECK_EQ_INT(floe__pq_reader_next_batch(r, &rows, ends, 4, &n, &first, NULL), FLOE_OK);
    CHECK_EQ_INT(n, 4);
    floe__buf_free(&rows);
    floe__pq_reader_free(r);
    floe__pq_reader_free(NULL);
    floe__buf_free(&file);
}

int main(void)
{
    RUN(every_kind_every_codec);
    RUN(nested_nulls_at_every_level);
    RUN(empty_lists_and_maps_and_defaults);
    RUN(many_row_groups_and_pages);
    RUN(projection_subset_reorder_missing);
    RUN(projection_nested_subset);
    RUN(projection_levels_from_a_repeated_column);
    RUN(promotions_and_incompatible_types);
    RUN(null_in_required_projection);
    RUN(uuid_as_text_and_position_deletes);
    RUN(derived_schema);
    RUN(crafted_page_versions_and_level_encodings);
    RUN(crafted_delta_and_split_encodings);
    RUN(crafted_legacy_lists_and_maps_by_name);
    RUN(crafted_time_units);
    RUN(crafted_dictionaries_and_lies);
    RUN(truncated_and_bad_magic);
    RUN(corrupted_bytes);
    RUN(allocation_failures);
    RUN(bad_arguments_and_options);
    return UNIT_DONE();
}
