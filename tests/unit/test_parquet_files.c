/*
 * test_parquet_files.c - whole Parquet files.
 *
 *   test_parquet_files                     self-tests on in-memory files
 *   test_parquet_files write CASE OUT MET  write the rows of CASE (JSON) into
 *                                          the Parquet file OUT and its Iceberg
 *                                          metrics into MET (JSON)
 *
 * The write mode is driven by tests/test_parquet_*.py, which read the files
 * back with pyarrow, DuckDB and polars.  A case is
 *   {"schema": "<test schema text>", "options": {...}, "rows": [[v, ...], ...]}
 * with values by field kind: booleans, integers (dates in days, times and
 * timestamps in microseconds), floats as numbers or "nan"/"inf"/"-inf",
 * decimals as the unscaled integer in a string, strings, binary/fixed/uuid
 * as hex strings (binary also {"byte": B, "n": N}: N copies of byte B),
 * structs as arrays of their fields, lists as arrays, maps as arrays of
 * [key, value]; null is null.
 */
#include <jansson.h>
#include <math.h>

#include "io/io_internal.h"
#include "test_parquet_util.h"
#include "unit.h"

/* ---- JSON -> row bytes -------------------------------------------------------------- */

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int put_hex(rb *b, const char *s, size_t want, int with_len)
{
    size_t n = strlen(s);
    if (n % 2 || (want && n / 2 != want))
        return -1;
    uint32_t len = (uint32_t)(n / 2);
    rb_tag(b, 1);
    if (with_len)
        rb_raw(b, &len, 4);
    for (size_t i = 0; i < n; i += 2) {
        int hi = hexval(s[i]), lo = hexval(s[i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        uint8_t x = (uint8_t)(hi << 4 | lo);
        rb_raw(b, &x, 1);
    }
    return 0;
}

static int parse_i128(const char *s, __int128 *out)
{
    int neg = *s == '-';
    if (neg || *s == '+')
        s++;
    if (!*s)
        return -1;
    unsigned __int128 v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (unsigned)(*s - '0');
    }
    *out = neg ? -(__int128)v : (__int128)v;
    return 0;
}

static double json_double(const json_t *v)
{
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (strcmp(s, "nan") == 0)
            return NAN;
        if (strcmp(s, "inf") == 0)
            return INFINITY;
        if (strcmp(s, "-inf") == 0)
            return -INFINITY;
        return strtod(s, NULL);
    }
    return json_number_value(v);
}

static int put_json(rb *b, const floe__field *f, const json_t *v)
{
    if (json_is_null(v)) {
        rb_null(b);
        return 0;
    }
    switch (f->kind) {
    case FLOE_K_BOOLEAN:
        rb_bool(b, json_is_true(v));
        return json_is_boolean(v) ? 0 : -1;
    case FLOE_K_INT:
    case FLOE_K_DATE:
        rb_i32(b, (int32_t)json_integer_value(v));
        return json_is_integer(v) ? 0 : -1;
    case FLOE_K_LONG:
    case FLOE_K_TIME:
    case FLOE_K_TIMESTAMP:
    case FLOE_K_TIMESTAMPTZ:
        rb_i64(b, (int64_t)json_integer_value(v));
        return json_is_integer(v) ? 0 : -1;
    case FLOE_K_FLOAT: {
        float x = (float)json_double(v);
        if (isnan(x))
            x = NAN;
        rb_f32(b, x);
        return 0;
    }
    case FLOE_K_DOUBLE: {
        double x = json_double(v);
        if (isnan(x))
            x = NAN;
        rb_f64(b, x);
        return 0;
    }
    case FLOE_K_DECIMAL: {
        __int128 x;
        if (!json_is_string(v) || parse_i128(json_string_value(v), &x))
            return -1;
        rb_dec(b, x);
        return 0;
    }
    case FLOE_K_STRING:
        if (!json_is_string(v))
            return -1;
        rb_bytes(b, json_string_value(v), (uint32_t)json_string_length(v));
        return 0;
    case FLOE_K_BINARY:
        if (json_is_object(v)) {
            uint32_t n = (uint32_t)json_integer_value(json_object_get(v, "n"));
            uint8_t byte = (uint8_t)json_integer_value(json_object_get(v, "byte"));
            rb_tag(b, 1);
            rb_raw(b, &n, 4);
            for (uint32_t i = 0; i < n; i++)
                rb_raw(b, &byte, 1);
            return 0;
        }
        return json_is_string(v) ? put_hex(b, json_string_value(v), 0, 1) : -1;
    case FLOE_K_UUID:
    case FLOE_K_FIXED:
        return json_is_string(v)
                   ? put_hex(b, json_string_value(v),
                             f->kind == FLOE_K_UUID ? 16 : (size_t)f->length, 0)
                   : -1;
    case FLOE_K_STRUCT:
        if (!json_is_array(v) || json_array_size(v) != f->n_children)
            return -1;
        rb_struct(b);
        for (uint32_t i = 0; i < f->n_children; i++)
            if (put_json(b, &f->children[i], json_array_get(v, i)))
                return -1;
        return 0;
    case FLOE_K_LIST:
        if (!json_is_array(v))
            return -1;
        rb_count(b, (uint32_t)json_array_size(v));
        for (size_t i = 0; i < json_array_size(v); i++)
            if (put_json(b, &f->children[0], json_array_get(v, i)))
                return -1;
        return 0;
    case FLOE_K_MAP:
        if (!json_is_array(v))
            return -1;
        rb_count(b, (uint32_t)json_array_size(v));
        for (size_t i = 0; i < json_array_size(v); i++) {
            const json_t *kv = json_array_get(v, i);
            if (!json_is_array(kv) || json_array_size(kv) != 2 ||
                put_json(b, &f->children[0], json_array_get(kv, 0)) ||
                put_json(b, &f->children[1], json_array_get(kv, 1)))
                return -1;
        }
        return 0;
    }
    return -1;
}

static int row_from_json(rb *b, const floe__schema *s, const json_t *row)
{
    rb_reset(b);
    if (!json_is_array(row) || json_array_size(row) != s->root.n_children)
        return -1;
    for (uint32_t i = 0; i < s->root.n_children; i++)
        if (put_json(b, &s->root.children[i], json_array_get(row, i)))
            return -1;
    return 0;
}

static void options_from_json(floe_parquet_options *o, const json_t *j)
{
    floe_parquet_options_init(o, sizeof *o);
    const json_t *v;
    if ((v = json_object_get(j, "compression")))
        o->compression = (floe_compression)floe_compression_from_name(json_string_value(v));
    if ((v = json_object_get(j, "level")))
        o->compression_level = (int)json_integer_value(v);
    if ((v = json_object_get(j, "page_size")))
        o->page_size = (size_t)json_integer_value(v);
    if ((v = json_object_get(j, "row_group_size")))
        o->row_group_size = (size_t)json_integer_value(v);
    if ((v = json_object_get(j, "dictionary_limit")))
        o->dictionary_limit = (size_t)json_integer_value(v);
    if ((v = json_object_get(j, "dictionary")))
        o->dictionary = (int)json_integer_value(v);
}

static json_t *hex_json(const floe__buf *b)
{
    char *s = malloc(b->len * 2 + 1);
    for (size_t i = 0; i < b->len; i++)
        sprintf(s + 2 * i, "%02x", b->data[i]);
    s[b->len * 2] = 0;
    json_t *j = json_string(s);
    free(s);
    return j;
}

static json_t *metrics_json(const floe__file_metrics *m)
{
    json_t *cols = json_array(), *splits = json_array();
    for (size_t i = 0; i < m->n_columns; i++) {
        const floe__col_metrics *c = &m->columns[i];
        json_t *o = json_object();
        json_object_set_new(o, "field_id", json_integer(c->field_id));
        json_object_set_new(o, "column_size", json_integer((json_int_t)c->column_size));
        if (c->has_counts) {
            json_object_set_new(o, "value_count", json_integer((json_int_t)c->value_count));
            json_object_set_new(o, "null_count", json_integer((json_int_t)c->null_count));
        }
        if (c->has_nan_count)
            json_object_set_new(o, "nan_count", json_integer((json_int_t)c->nan_count));
        if (c->has_lower)
            json_object_set_new(o, "lower", hex_json(&c->lower));
        if (c->has_upper)
            json_object_set_new(o, "upper", hex_json(&c->upper));
        json_array_append_new(cols, o);
    }
    for (size_t i = 0; i < m->n_splits; i++)
        json_array_append_new(splits, json_integer((json_int_t)m->split_offsets[i]));
    json_t *j = json_object();
    json_object_set_new(j, "record_count", json_integer((json_int_t)m->record_count));
    json_object_set_new(j, "file_size", json_integer((json_int_t)m->file_size));
    json_object_set_new(j, "columns", cols);
    json_object_set_new(j, "split_offsets", splits);
    return j;
}

static int write_case(const char *case_path, const char *out_path, const char *metrics_path)
{
    json_error_t jerr;
    json_t *c = json_load_file(case_path, 0, &jerr);
    if (!c) {
        fprintf(stderr, "%s: %s\n", case_path, jerr.text);
        return 2;
    }
    floe__schema *s = ts_parse(json_string_value(json_object_get(c, "schema")));
    if (!s) {
        json_decref(c);
        return 2;
    }
    floe_parquet_options o;
    options_from_json(&o, json_object_get(c, "options"));
    floe_error *err = floe_error_new();
    floe__output *out = NULL;
    floe__pq_writer *w = NULL;
    int rc = floe__local_output_open(out_path, &out, err);
    if (rc == FLOE_OK)
        rc = floe__pq_writer_new(s, &o, out, &w, err);
    const json_t *rows = json_object_get(c, "rows");
    rb b = {0};
    for (size_t i = 0; rc == FLOE_OK && i < json_array_size(rows); i++) {
        if (row_from_json(&b, s, json_array_get(rows, i))) {
            fprintf(stderr, "row %zu does not match the schema\n", i);
            floe__pq_writer_abort(w);
            w = NULL;
            rc = FLOE_EINVAL;
            break;
        }
        rc = floe__pq_write_row(w, b.d, b.len, err);
        if (rc)
            floe__pq_writer_abort(w);
    }
    floe__file_metrics m;
    if (rc == FLOE_OK)
        rc = floe__pq_writer_close(w, &m, err);
    if (rc == FLOE_OK) {
        json_t *mj = metrics_json(&m);
        json_dump_file(mj, metrics_path, JSON_INDENT(1));
        json_decref(mj);
        floe__file_metrics_free(&m);
    } else {
        fprintf(stderr, "write failed: %s\n", floe_error_message(err));
    }
    rb_free(&b);
    floe_error_free(err);
    ts_free(s);
    json_decref(c);
    return rc == FLOE_OK ? 0 : 1;
}

/* ---- self-tests on in-memory files ----------------------------------------------------- */

static floe__pq_writer *mem_writer(const floe__schema *s, const floe_parquet_options *o,
                                   memfile *mf)
{
    memset(mf, 0, sizeof *mf);
    floe__buf_init(&mf->data, 0);
    floe__pq_writer *w = NULL;
    int rc = floe__pq_writer_new(s, o, floe__output_memory(&mf->data), &w, NULL);
    CHECK_EQ_INT(rc, FLOE_OK);
    return w;
}

static int mem_close(floe__pq_writer *w, memfile *mf, floe__file_metrics *m)
{
    int rc = floe__pq_writer_close(w, m, NULL);
    CHECK_EQ_INT(rc, FLOE_OK);
    CHECK_EQ_INT(mem_parse_footer(mf), 0);
    return rc;
}

/* The schema elements of the footer, checked for names, field ids and levels. */
TEST(footer_schema_and_field_ids)
{
    floe__schema *s = ts_parse("id long!, tags list<string!>, m map<string,int>, "
                               "p struct<a decimal(38,2)!, b uuid>, t timestamptz, d date");
    memfile mf;
    floe__pq_writer *w = mem_writer(s, NULL, &mf);
    mem_close(w, &mf, NULL);
    const tnode *els = tn_get(&mf.meta, 2);
    CHECK(els != NULL);
    static const struct { const char *name; int id; int rep; int type; int conv; } want[] = {
        {"schema", -1, -1, -1, -1},
        {"id", 1, 0, PQ_T_INT64, -1},
        {"tags", 2, 1, -1, PQ_CT_LIST},
        {"list", -1, 2, -1, -1},
        {"element", 3, 0, PQ_T_BYTE_ARRAY, PQ_CT_UTF8},
        {"m", 4, 1, -1, PQ_CT_MAP},
        {"key_value", -1, 2, -1, -1},
        {"key", 5, 0, PQ_T_BYTE_ARRAY, PQ_CT_UTF8},
        {"value", 6, 1, PQ_T_INT32, -1},
        {"p", 7, 1, -1, -1},
        {"a", 8, 0, PQ_T_FLBA, PQ_CT_DECIMAL},
        {"b", 9, 1, PQ_T_FLBA, -1},
        {"t", 10, 1, PQ_T_INT64, PQ_CT_TIMESTAMP_MICROS},
        {"d", 11, 1, PQ_T_INT32, PQ_CT_DATE},
    };
    CHECK_EQ_INT(els ? els->n : 0, sizeof want / sizeof want[0]);
    for (size_t i = 0; els && i < els->n && i < sizeof want / sizeof want[0]; i++) {
        const tnode *e = &els->kids[i];
        const tnode *name = tn_get(e, 4);
        CHECK(name && name->len == strlen(want[i].name) &&
              memcmp(name->bin, want[i].name, name->len) == 0);
        CHECK_EQ_INT(tn_int(e, 9, -1), want[i].id);
        CHECK_EQ_INT(tn_int(e, 3, -1), want[i].rep);
        CHECK_EQ_INT(tn_int(e, 1, -1), want[i].type);
        CHECK_EQ_INT(tn_int(e, 6, -1), want[i].conv);
    }
    /* decimal(38,2): 16 bytes; uuid: 16 bytes with the UUID logical type */
    CHECK_EQ_INT(tn_int(&els->kids[10], 2, 0), 16);
    CHECK_EQ_INT(tn_int(&els->kids[10], 7, 0), 2);
    CHECK_EQ_INT(tn_int(&els->kids[10], 8, 0), 38);
    CHECK(tn_get(tn_get(&els->kids[11], 10), 14) != NULL);
    /* timestamptz: TIMESTAMP(isAdjustedToUTC=true, MICROS) */
    const tnode *ts = tn_get(tn_get(&els->kids[12], 10), 8);
    CHECK(ts && tn_int(ts, 1, 0) == 1 && tn_get(tn_get(ts, 2), 2));
    CHECK_EQ_INT(tn_int(&mf.meta, 3, -1), 0);          /* num_rows */
    CHECK_EQ_INT(tn_get(&mf.meta, 4)->n, 0);           /* no row groups */
    CHECK_EQ_INT(tn_get(&mf.meta, 7)->n, 8);           /* a column order per leaf */
    const tnode *cb = tn_get(&mf.meta, 6);
    CHECK(cb && cb->len == strlen("floe version 0.1.0") &&
          memcmp(cb->bin, "floe version 0.1.0", cb->len) == 0);
    mem_free(&mf);
    ts_free(s);
}

/* Decimal widths follow the precision: INT32, INT64, then FLBA of the fewest bytes. */
TEST(decimal_storage)
{
    floe__schema *s = ts_parse("a decimal(9,2), b decimal(18,0), c decimal(19,0), "
                               "d decimal(21,1), e decimal(22,0), f decimal(38,38)");
    memfile mf;
    floe__pq_writer *w = mem_writer(s, NULL, &mf);
    mem_close(w, &mf, NULL);
    const tnode *els = tn_get(&mf.meta, 2);
    CHECK_EQ_INT(tn_int(&els->kids[1], 1, -1), PQ_T_INT32);
    CHECK_EQ_INT(tn_int(&els->kids[2], 1, -1), PQ_T_INT64);
    CHECK_EQ_INT(tn_int(&els->kids[3], 2, -1), 9);
    CHECK_EQ_INT(tn_int(&els->kids[4], 2, -1), 9);
    CHECK_EQ_INT(tn_int(&els->kids[5], 2, -1), 10);
    CHECK_EQ_INT(tn_int(&els->kids[6], 2, -1), 16);
    mem_free(&mf);
    ts_free(s);
}

/* Malformed rows: FLOE_EINPUT and the writer as before. */
TEST(bad_rows_are_undone)
{
    floe__schema *s = ts_parse("a int!, b string, c long");
    memfile mf;
    floe__pq_writer *w = mem_writer(s, NULL, &mf);
    rb b = {0};
    floe_error *err = floe_error_new();
    rb_i32(&b, 1);
    rb_str(&b, "x");
    rb_i64(&b, 10);
    CHECK_EQ_INT(floe__pq_write_row(w, b.d, b.len, err), FLOE_OK);
    /* every truncation point of a good row fails cleanly */
    for (size_t cut = 0; cut < b.len; cut++) {
        CHECK_EQ_INT(floe__pq_write_row(w, b.d, cut, err), FLOE_EINPUT);
    }
    /* trailing bytes */
    rb_tag(&b, 0);
    CHECK_EQ_INT(floe__pq_write_row(w, b.d, b.len, err), FLOE_EINPUT);
    /* null in a required field, bad tag */
    rb_reset(&b);
    rb_null(&b);
    rb_null(&b);
    rb_null(&b);
    CHECK_EQ_INT(floe__pq_write_row(w, b.d, b.len, err), FLOE_EINPUT);
    CHECK(strstr(floe_error_message(err), "required") != NULL);
    b.d[0] = 7;
    CHECK_EQ_INT(floe__pq_write_row(w, b.d, b.len, err), FLOE_EINPUT);
    /* a string claiming more bytes than the row has */
    rb_reset(&b);
    rb_i32(&b, 2);
    rb_tag(&b, 1);
    uint32_t huge = 0xfffffff0u;
    rb_raw(&b, &huge, 4);
    CHECK_EQ_INT(floe__pq_write_row(w, b.d, b.len, err), FLOE_EINPUT);
    rb_reset(&b);
    rb_i32(&b, 3);
    rb_null(&b);
    rb_i64(&b, 30);
    CHECK_EQ_INT(floe__pq_write_row(w, b.d, b.len, err), FLOE_OK);
    CHECK_EQ_INT(floe__pq_writer_rows(w), 2);
    floe__file_metrics m;
    mem_close(w, &mf, &m);
    CHECK_EQ_INT(m.record_count, 2);
    CHECK_EQ_INT(m.n_columns, 3);
    CHECK_EQ_INT(m.columns[0].value_count, 2);
    CHECK_EQ_INT(m.columns[1].null_count, 1);
    CHECK_EQ_INT(m.columns[2].value_count, 2);
    CHECK_EQ_INT(floe__get_le64(m.columns[2].lower.data), 10);
    CHECK_EQ_INT(floe__get_le64(m.columns[2].upper.data), 30);
    floe__file_metrics_free(&m);
    mem_free(&mf);
    floe_error_free(err);
    rb_free(&b);
    ts_free(s);
}

/* The same for nested rows, which take the general path. */
TEST(bad_nested_rows_are_undone)
{
    floe__schema *s = ts_parse("k int!, l list<struct<x int, y string!>>, m map<string,long>");
    memfile mf;
    floe__pq_writer *w = mem_writer(s, NULL, &mf);
    rb b = {0};
    rb_i32(&b, 1);
    rb_count(&b, 2);
    rb_struct(&b);
    rb_i32(&b, 5);
    rb_str(&b, "a");
    rb_null(&b);
    rb_count(&b, 1);
    rb_str(&b, "key");
    rb_i64(&b, 9);
    CHECK_EQ_INT(floe__pq_write_row(w, b.d, b.len, NULL), FLOE_OK);
    for (size_t cut = 0; cut < b.len; cut++)
        CHECK_EQ_INT(floe__pq_write_row(w, b.d, cut, NULL), FLOE_EINPUT);
    /* a null map key */
    rb_reset(&b);
    rb_i32(&b, 2);
    rb_null(&b);
    rb_count(&b, 1);
    rb_null(&b);
    rb_i64(&b, 1);
    CHECK_EQ_INT(floe__pq_write_row(w, b.d, b.len, NULL), FLOE_EINPUT);
    /* a decimal-free row that is fine */
    rb_reset(&b);
    rb_i32(&b, 3);
    rb_count(&b, 0);
    rb_null(&b);
    CHECK_EQ_INT(floe__pq_write_row(w, b.d, b.len, NULL), FLOE_OK);
    floe__file_metrics m;
    mem_close(w, &mf, &m);
    CHECK_EQ_INT(m.record_count, 2);
    /* leaves: k, l.x, l.y, m.key, m.value; entries per leaf: k 2; l.x 2 + 1 (empty list) */
    const tnode *cm = mem_colmeta(&mf, 0, 1);
    CHECK_EQ_INT(tn_int(cm, 5, -1), 3);
    cm = mem_colmeta(&mf, 0, 3);
    CHECK_EQ_INT(tn_int(cm, 5, -1), 2);
    /* fields inside lists and maps report only their size */
    CHECK(m.columns[0].has_counts);
    CHECK(!m.columns[1].has_counts && !m.columns[1].has_lower && m.columns[1].column_size > 0);
    CHECK(!m.columns[4].has_counts);
    floe__file_metrics_free(&m);
    mem_free(&mf);
    rb_free(&b);
    ts_free(s);
}

/* Decimals that do not fit their storage are refused. */
TEST(decimal_range)
{
    floe__schema *s = ts_parse("a decimal(9,0), b decimal(20,0)");
    memfile mf;
    floe__pq_writer *w = mem_writer(s, NULL, &mf);
    rb b = {0};
    rb_dec(&b, (__int128)INT32_MAX + 1);
    rb_null(&b);
    CHECK_EQ_INT(floe__pq_write_row(w, b.d, b.len, NULL), FLOE_EINPUT);
    rb_reset(&b);
    rb_dec(&b, INT32_MIN);
    rb_dec(&b, (__int128)1 << 72);    /* needs 10 bytes; decimal(20) has 9 */
    CHECK_EQ_INT(floe__pq_write_row(w, b.d, b.len, NULL), FLOE_EINPUT);
    rb_reset(&b);
    rb_dec(&b, INT32_MIN);
    rb_dec(&b, -((__int128)1 << 70));
    CHECK_EQ_INT(floe__pq_write_row(w, b.d, b.len, NULL), FLOE_OK);
    floe__file_metrics m;
    mem_close(w, &mf, &m);
    /* bounds: minimal big-endian two's complement */
    CHECK_EQ_INT(m.columns[0].lower.len, 4);
    CHECK_EQ_INT(m.columns[0].lower.data[0], 0x80);
    CHECK_EQ_INT(m.columns[1].lower.len, 9);
    CHECK_EQ_INT(m.columns[1].lower.data[0], 0xc0);
    floe__file_metrics_free(&m);
    mem_free(&mf);
    rb_free(&b);
    ts_free(s);
}

/* Reads the PageHeader at `off`; returns its type, -1 on error. */
static int page_type_at(const memfile *mf, uint64_t off, int *encoding)
{
    tnode h;
    if (off >= mf->data.len || !tn_parse(mf->data.data + off, mf->data.len - off, &h))
        return -1;
    int type = (int)tn_int(&h, 1, -1);
    const tnode *dp = tn_get(&h, type == PQ_PAGE_DICTIONARY ? 7 : 5);
    *encoding = (int)tn_int(dp, 2, -1);
    tn_free(&h);
    return type;
}

/* Pages of a chunk by encoding, from encoding_stats. */
static int64_t pages_with(const tnode *cm, int page_type, int encoding)
{
    const tnode *es = tn_get(cm, 13);
    for (size_t i = 0; es && i < es->n; i++)
        if (tn_int(&es->kids[i], 1, -1) == page_type && tn_int(&es->kids[i], 2, -1) == encoding)
            return tn_int(&es->kids[i], 3, 0);
    return 0;
}

TEST(dictionary_policies)
{
    floe__schema *s = ts_parse("low string!, grow string!, uniq string!, flag boolean!");
    floe_parquet_options o;
    floe_parquet_options_init(&o, sizeof o);
    o.page_size = 4096;
    o.dictionary_limit = 20000;
    o.compression = FLOE_COMPRESSION_NONE;
    memfile mf;
    floe__pq_writer *w = mem_writer(s, &o, &mf);
    rb b = {0};
    const char *low[] = {"R", "A", "N"};
    for (int i = 0; i < 20000; i++) {
        char g[32], u[64];
        snprintf(g, sizeof g, "v%05d", i / 3);                  /* grows past the limit */
        snprintf(u, sizeof u, "unique value number %08d!", i);  /* never pays */
        rb_reset(&b);
        rb_str(&b, low[i % 3]);
        rb_str(&b, g);
        rb_str(&b, u);
        rb_bool(&b, i % 7 == 0);
        CHECK_EQ_INT(floe__pq_write_row(w, b.d, b.len, NULL), FLOE_OK);
    }
    mem_close(w, &mf, NULL);
    const tnode *low_m = mem_colmeta(&mf, 0, 0), *grow_m = mem_colmeta(&mf, 0, 1);
    const tnode *uniq_m = mem_colmeta(&mf, 0, 2), *flag_m = mem_colmeta(&mf, 0, 3);
    /* low cardinality: dictionary page + only dictionary data pages */
    CHECK(tn_get(low_m, 11) != NULL);
    CHECK(pages_with(low_m, PQ_PAGE_DATA, PQ_ENC_RLE_DICTIONARY) > 0);
    CHECK_EQ_INT(pages_with(low_m, PQ_PAGE_DATA, PQ_ENC_PLAIN), 0);
    /* overflow mid-chunk: dictionary pages first, then PLAIN ones; dictionary page first */
    CHECK(tn_get(grow_m, 11) != NULL);
    CHECK(pages_with(grow_m, PQ_PAGE_DATA, PQ_ENC_RLE_DICTIONARY) > 0);
    CHECK(pages_with(grow_m, PQ_PAGE_DATA, PQ_ENC_PLAIN) > 0);
    int enc;
    uint64_t dict_off = (uint64_t)tn_int(grow_m, 11, 0);
    CHECK_EQ_INT(page_type_at(&mf, dict_off, &enc), PQ_PAGE_DICTIONARY);
    CHECK_EQ_INT(page_type_at(&mf, (uint64_t)tn_int(grow_m, 9, 0), &enc), PQ_PAGE_DATA);
    CHECK_EQ_INT(enc, PQ_ENC_RLE_DICTIONARY);
    /* the dictionary page respects the limit */
    tnode h;
    CHECK(tn_parse(mf.data.data + dict_off, mf.data.len - dict_off, &h) > 0);
    CHECK(tn_int(&h, 2, 0) <= (int64_t)o.dictionary_limit);
    tn_free(&h);
    /* all-unique: the first page shows the dictionary does not pay */
    CHECK(tn_get(uniq_m, 11) == NULL);
    CHECK_EQ_INT(pages_with(uniq_m, PQ_PAGE_DATA, PQ_ENC_RLE_DICTIONARY), 0);
    CHECK(pages_with(uniq_m, PQ_PAGE_DATA, PQ_ENC_PLAIN) > 1);
    /* booleans never use a dictionary */
    CHECK(tn_get(flag_m, 11) == NULL);
    CHECK_EQ_INT(pages_with(flag_m, PQ_PAGE_DATA, PQ_ENC_RLE_DICTIONARY), 0);
    /* encodings list */
    const tnode *encs = tn_get(grow_m, 2);
    CHECK_EQ_INT(encs->n, 3);
    mem_free(&mf);
    rb_free(&b);
    ts_free(s);
}

/* Row groups close at the size target; split offsets point at their first page. */
TEST(row_groups_and_splits)
{
    floe__schema *s = ts_parse("a long!, b string");
    floe_parquet_options o;
    floe_parquet_options_init(&o, sizeof o);
    o.row_group_size = 64 * 1024;
    o.page_size = 8 * 1024;
    memfile mf;
    floe__pq_writer *w = mem_writer(s, &o, &mf);
    rb b = {0};
    for (int i = 0; i < 50000; i++) {
        char t[40];
        snprintf(t, sizeof t, "row %d", i * 7919 % 100003);
        rb_reset(&b);
        rb_i64(&b, i);
        rb_str(&b, t);
        CHECK_EQ_INT(floe__pq_write_row(w, b.d, b.len, NULL), FLOE_OK);
    }
    uint64_t est = floe__pq_writer_bytes(w);
    floe__file_metrics m;
    mem_close(w, &mf, &m);
    const tnode *rgs = tn_get(&mf.meta, 4);
    CHECK(rgs->n > 2);
    CHECK_EQ_INT(m.n_splits, rgs->n);
    int64_t rows = 0;
    for (size_t r = 0; r < rgs->n; r++) {
        rows += tn_int(&rgs->kids[r], 3, 0);
        CHECK_EQ_INT(tn_int(&rgs->kids[r], 5, -1), (int64_t)m.split_offsets[r]);
        CHECK_EQ_INT(tn_int(&rgs->kids[r], 7, -1), (int64_t)r);
    }
    CHECK_EQ_INT(rows, 50000);
    CHECK_EQ_INT(m.split_offsets[0], 4);
    CHECK_EQ_INT(m.file_size, mf.data.len);
    /* column sizes add up to the chunks */
    uint64_t total = 0;
    for (size_t r = 0; r < rgs->n; r++)
        total += (uint64_t)tn_int(mem_colmeta(&mf, (int)r, 0), 7, 0);
    CHECK_EQ_INT(m.columns[0].column_size, total);
    /* the size estimate is in the right ballpark */
    CHECK(est > mf.data.len / 2 && est < mf.data.len * 2);
    floe__file_metrics_free(&m);
    mem_free(&mf);
    rb_free(&b);
    ts_free(s);
}

/* The public API over a local file. */
TEST(public_api)
{
    CHECK_EQ_INT(floe_compression_from_name("zstd"), FLOE_COMPRESSION_ZSTD);
    CHECK_EQ_INT(floe_compression_from_name("SNAPPY"), FLOE_COMPRESSION_SNAPPY);
    CHECK_EQ_INT(floe_compression_from_name("gzip"), FLOE_COMPRESSION_GZIP);
    CHECK_EQ_INT(floe_compression_from_name("none"), FLOE_COMPRESSION_NONE);
    CHECK_EQ_INT(floe_compression_from_name("lz4"), -1);
    floe_parquet_options o;
    floe_parquet_options_init(&o, sizeof o);
    CHECK_EQ_INT(o.compression, FLOE_COMPRESSION_ZSTD);
    CHECK_EQ_INT(o.page_size, 1 << 20);
    CHECK_EQ_INT(o.dictionary, 1);

    floe__schema *s = ts_parse("a int!, b string");
    char path[] = "/tmp/floe-pq-XXXXXX";
    CHECK(mkdtemp(path) != NULL);
    char file[128];
    snprintf(file, sizeof file, "%s/sub/t.parquet", path);
    floe_parquet_writer *w = NULL;
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(floe_parquet_writer_open(s, file, NULL, &w, err), FLOE_OK);
    floe_row row = {.schema = s};
    floe__buf_init(&row.data, 0);
    rb b = {0};
    rb_i32(&b, 42);
    rb_str(&b, "hello");
    floe__buf_append(&row.data, b.d, b.len, NULL);
    CHECK_EQ_INT(floe_parquet_writer_write(w, &row, err), FLOE_OK);
    floe_row other = {.schema = NULL, .data = row.data};
    CHECK_EQ_INT(floe_parquet_writer_write(w, &other, err), FLOE_EINVAL);
    CHECK_EQ_INT(floe_parquet_writer_rows(w), 1);
    CHECK(floe_parquet_writer_bytes(w) > 0);
    uint64_t size = 0;
    CHECK_EQ_INT(floe_parquet_writer_close(w, &size, err), FLOE_OK);
    memfile mf = {0};
    floe__buf_init(&mf.data, 0);
    CHECK_EQ_INT(floe__local_read_all(file, &mf.data, err), FLOE_OK);
    CHECK_EQ_INT(mf.data.len, size);
    CHECK_EQ_INT(mem_parse_footer(&mf), 0);
    CHECK_EQ_INT(tn_int(&mf.meta, 3, 0), 1);
    mem_free(&mf);
    /* abort leaves nothing behind */
    char file2[128];
    snprintf(file2, sizeof file2, "%s/aborted.parquet", path);
    CHECK_EQ_INT(floe_parquet_writer_open(s, file2, NULL, &w, err), FLOE_OK);
    floe_parquet_writer_write(w, &row, err);
    floe_parquet_writer_abort(w);
    floe_parquet_writer_abort(NULL);
    memfile none = {0};
    floe__buf_init(&none.data, 0);
    CHECK_EQ_INT(floe__local_read_all(file2, &none.data, NULL), FLOE_ENOTFOUND);
    floe__buf_free(&none.data);
    /* bad options are refused and the file is not created */
    o.compression = (floe_compression)9;
    CHECK_EQ_INT(floe_parquet_writer_open(s, file2, &o, &w, err), FLOE_EINVAL);
    floe_parquet_options_init(&o, sizeof o);
    o.compression_level = 99;
    CHECK_EQ_INT(floe_parquet_writer_open(s, file2, &o, &w, err), FLOE_EINVAL);
    remove(file);
    snprintf(file, sizeof file, "%s/sub", path);
    remove(file);
    remove(path);
    floe__buf_free(&row.data);
    floe_error_free(err);
    rb_free(&b);
    ts_free(s);
}

/* Schemas Parquet cannot hold are refused at open. */
TEST(bad_schemas)
{
    floe__schema *s = ts_parse("a struct<>");
    memfile mf = {0};
    floe__buf_init(&mf.data, 0);
    floe__pq_writer *w = NULL;
    CHECK_EQ_INT(floe__pq_writer_new(s, NULL, floe__output_memory(&mf.data), &w, NULL),
                 FLOE_ESCHEMA);
    ts_free(s);
    s = ts_parse("a decimal(40,2)");
    CHECK_EQ_INT(floe__pq_writer_new(s, NULL, floe__output_memory(&mf.data), &w, NULL),
                 FLOE_ESCHEMA);
    ts_free(s);
    s = ts_parse("");
    CHECK_EQ_INT(floe__pq_writer_new(s, NULL, floe__output_memory(&mf.data), &w, NULL),
                 FLOE_ESCHEMA);
    ts_free(s);
    floe__buf_free(&mf.data);
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "write") == 0)
        return write_case(argv[2], argv[3], argv[4]);
    if (argc != 1) {
        fprintf(stderr, "usage: %s [write CASE.json OUT.parquet METRICS.json]\n", argv[0]);
        return 2;
    }
    RUN(footer_schema_and_field_ids);
    RUN(decimal_storage);
    RUN(bad_rows_are_undone);
    RUN(bad_nested_rows_are_undone);
    RUN(decimal_range);
    RUN(dictionary_policies);
    RUN(row_groups_and_splits);
    RUN(public_api);
    RUN(bad_schemas);
    return UNIT_DONE();
}
