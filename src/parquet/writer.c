/*
 * writer.c - the Parquet file: magic, row groups, footer, Iceberg metrics.
 *
 *   file   := "PAR1" row_group* footer u32(footer length) "PAR1"
 *
 * Rows are shredded into the columns' page buffers (shred.c); a column whose
 * page is full (opts.page_size bytes or PQ_PAGE_MAX_VALUES values) is
 * encoded at the end of that row; the
 * row group is closed when the columns' estimated encoded size reaches
 * opts.row_group_size (checked every so many row bytes, not every row).
 * Closing a row group writes each column chunk in schema order and keeps
 * its footer description (offsets, sizes, statistics) until close.
 *
 * The footer is FileMetaData (version 1, schema with field ids, row groups,
 * created_by "floe version X.Y.Z", TypeDefinedOrder for every column).
 * Iceberg metrics are folded per column while chunks are written, so close
 * hands them back without reading anything.
 */
#include "parquet/pq_internal.h"

#define MAX_PAGE_LIMIT ((size_t)1 << 30)

static int check_options(const floe_parquet_options *o, floe_error *err)
{
    FLOE_RETURN_IF(o->compression < FLOE_COMPRESSION_NONE ||
                       o->compression > FLOE_COMPRESSION_ZSTD,
                   err, FLOE_EINVAL, "parquet: unknown compression %d", (int)o->compression);
    FLOE_RETURN_IF(o->page_size == 0 || o->row_group_size == 0, err, FLOE_EINVAL,
                   "parquet: page_size and row_group_size must be positive");
    return FLOE_OK;
}

static int write_magic(floe__pq_writer *w, floe_error *err)
{
    return floe__output_write(w->out, "PAR1", 4, err);
}

/* o's options with the default compression resolved. */
static floe_parquet_options resolved(const floe_parquet_options *o)
{
    floe_parquet_options r;
    if (o)
        r = *o;
    else
        floe_parquet_options_init(&r, sizeof r);
    if (r.compression == FLOE_COMPRESSION_DEFAULT)
        r.compression = FLOE_COMPRESSION_ZSTD;
    return r;
}

int floe__pq_codec_new(const floe_parquet_options *o, floe__pq_codec **out, floe_error *err)
{
    floe_parquet_options r = resolved(o);
    floe__pq_codec *c = floe__calloc(1, sizeof *c);
    if (!c)
        return FLOE_OOM(err);
    int rc = floe__pq_codec_init(c, r.compression, r.compression_level, err);
    if (rc != FLOE_OK) {
        floe__pq_codec_destroy(c);
        return rc;
    }
    *out = c;
    return FLOE_OK;
}

void floe__pq_codec_destroy(floe__pq_codec *c)
{
    floe__pq_codec_free(c);
    floe__free(c);
}

int floe__pq_writer_new(const floe__schema *s, const floe_parquet_options *o,
                        floe__output *out, floe__pq_writer **pw, floe_error *err)
{
    return floe__pq_writer_new_shared(s, o, out, NULL, pw, err);
}

int floe__pq_writer_new_shared(const floe__schema *s, const floe_parquet_options *o,
                               floe__output *out, floe__pq_codec *codec, floe__pq_writer **pw,
                               floe_error *err)
{
    floe__pq_writer *w = floe__calloc(1, sizeof *w);
    if (!w) {
        out->abort(out);
        return FLOE_OOM(err);
    }
    w->schema = s;
    w->out = out;
    w->opts = resolved(o);
    floe__buf_init(&w->page, 0);
    floe__buf_init(&w->cpage, 0);
    floe__buf_init(&w->hdr, 0);
    int rc = check_options(&w->opts, err);
    if (rc == FLOE_OK && codec) {
        w->codec = codec;
        if (codec->compression != (int)w->opts.compression ||
            (w->opts.compression_level && codec->level != w->opts.compression_level))
            rc = floe__err_set(err, FLOE_EINTERNAL, "parquet: a shared codec of other options");
    } else if (rc == FLOE_OK) {
        w->codec = &w->own_codec;
        rc = floe__pq_codec_init(w->codec, w->opts.compression, w->opts.compression_level, err);
    }
    if (rc == FLOE_OK) {
        w->page_limit = w->opts.page_size < MAX_PAGE_LIMIT ? w->opts.page_size : MAX_PAGE_LIMIT;
        /* the row group size is estimated every 1/64 of it (at most 1 MiB) */
        w->check_every = w->opts.row_group_size / 64;
        if (w->check_every > ((size_t)1 << 20))
            w->check_every = (size_t)1 << 20;
        w->arena = floe__arena_new(0);
        rc = w->arena ? floe__pq_plan(w, err) : FLOE_OOM(err);
    }
    if (rc == FLOE_OK && w->n_cols == 0)
        rc = floe__err_set(err, FLOE_ESCHEMA, "parquet: the schema has no columns");
    if (rc == FLOE_OK && !w->flat) {
        w->snap = floe__calloc(w->n_cols, sizeof *w->snap);
        if (!w->snap)
            rc = FLOE_OOM(err);
    }
    if (rc == FLOE_OK)
        rc = write_magic(w, err);
    if (rc != FLOE_OK) {
        floe__pq_writer_abort(w);
        return rc;
    }
    for (size_t i = 0; i < w->n_cols; i++)
        floe__pq_col_begin_chunk(w, &w->cols[i]);
    *pw = w;
    return FLOE_OK;
}

static void free_writer(floe__pq_writer *w)
{
    floe__pq_plan_free(w);
    floe__free(w->snap);
    floe__buf_free(&w->page);
    floe__buf_free(&w->cpage);
    floe__buf_free(&w->hdr);
    floe__free(w->idx);
    floe__pq_codec_free(&w->own_codec);
    for (size_t i = 0; i < w->n_rgs; i++)
        floe__free(w->rg_chunks[i]);
    floe__free(w->rg_chunks);
    floe__free(w->rg_rows_list);
    floe__arena_free(w->arena);
    floe__free(w);
}

void floe__pq_writer_abort(floe__pq_writer *w)
{
    if (!w)
        return;
    if (w->out)
        w->out->abort(w->out);
    free_writer(w);
}

uint64_t floe__pq_writer_rows(const floe__pq_writer *w) { return w->rows; }

static uint64_t buffered(const floe__pq_writer *w)
{
    uint64_t n = 0;
    for (size_t i = 0; i < w->n_cols; i++)
        n += floe__pq_col_buffered(&w->cols[i]);
    return n;
}

uint64_t floe__pq_writer_buffered(const floe__pq_writer *w) { return buffered(w); }

uint64_t floe__pq_writer_bytes(const floe__pq_writer *w)
{
    uint64_t footer = 1024 + (uint64_t)(w->n_rgs + 1) * w->n_cols * 96;
    return w->out->offset + buffered(w) + footer;
}

static int grow_row_groups(floe__pq_writer *w, floe_error *err)
{
    if (w->n_rgs < w->cap_rgs)
        return FLOE_OK;
    size_t cap = w->cap_rgs ? w->cap_rgs * 2 : 8;
    floe__pq_chunk **c = floe__realloc(w->rg_chunks, cap * sizeof *c);
    if (!c)
        return FLOE_OOM(err);
    w->rg_chunks = c;
    uint64_t *r = floe__realloc(w->rg_rows_list, cap * sizeof *r);
    if (!r)
        return FLOE_OOM(err);
    w->rg_rows_list = r;
    w->cap_rgs = cap;
    return FLOE_OK;
}

static int close_row_group(floe__pq_writer *w, floe_error *err)
{
    if (w->rg_rows == 0)
        return FLOE_OK;
    for (size_t i = 0; i < w->n_cols; i++)
        FLOE_FORWARD(floe__pq_col_flush_page(w, &w->cols[i], err));
    FLOE_FORWARD(grow_row_groups(w, err));
    floe__pq_chunk *chunks = floe__calloc(w->n_cols, sizeof *chunks);
    if (!chunks)
        return FLOE_OOM(err);
    w->rg_chunks[w->n_rgs] = chunks;
    w->rg_rows_list[w->n_rgs] = w->rg_rows;
    w->n_rgs++;
    for (size_t i = 0; i < w->n_cols; i++)
        FLOE_FORWARD(floe__pq_col_write_chunk(w, &w->cols[i], &chunks[i], err));
    w->rg_rows = 0;
    w->since_check = 0;
    w->headroom = 0;      /* flat writers check before the next row */
    return FLOE_OK;
}

/* Flat writers: before a row that does not fit the budget, encode the pages
 * that are full, then give every column room for the next rows.  Each row
 * adds at most its length in value bytes and one level to any column, so
 * while the row bytes since the check stay within `headroom` (no more than
 * the tightest column's room left in its page, and at least this row) and
 * the rows within `rows_left` (the tightest column's values left under
 * PQ_PAGE_MAX_VALUES), no column needs a check of its own. */
#define FLAT_HEADROOM ((size_t)64 << 10)

static int flat_check(floe__pq_writer *w, size_t len, floe_error *err)
{
    size_t room = SIZE_MAX;
    uint64_t rows = PQ_PAGE_MAX_VALUES;
    for (size_t i = 0; i < w->n_cols; i++) {
        floe__pq_col *c = &w->cols[i];
        floe__pq_col_sync(w, c);
        if (floe__pq_page_full(w, c))
            FLOE_FORWARD(floe__pq_col_flush_page(w, c, err));
        size_t used = floe__pq_vbytes(c) + c->n_levels;
        size_t left = used < w->page_limit ? w->page_limit - used : 0;
        if (left < room)
            room = left;
        if (PQ_PAGE_MAX_VALUES - c->n_levels < rows)
            rows = PQ_PAGE_MAX_VALUES - c->n_levels;
    }
    size_t head = room < FLAT_HEADROOM ? room : FLAT_HEADROOM;
    if (head < len)
        head = len;
    if (rows == 0)
        rows = 1;
    for (size_t i = 0; i < w->n_cols; i++) {   /* what each column can take before the next check */
        floe__pq_col *c = &w->cols[i];
        size_t vals = c->width && rows < head / c->width ? (size_t)rows * c->width : head;
        FLOE_FORWARD(floe__buf_reserve(&c->vals, vals, err));
        if (c->max_def)                         /* one level byte per row */
            FLOE_FORWARD(floe__buf_reserve(&c->defs, rows < head ? (size_t)rows : head, err));
    }
    w->headroom = head;
    w->rows_left = rows;
    return FLOE_OK;
}

/* After a row: encode full pages, close the row group when it is big enough. */
static int after_row(floe__pq_writer *w, size_t len, floe_error *err)
{
    if (w->page_full) {
        w->page_full = false;
        for (size_t i = 0; i < w->n_cols; i++) {
            floe__pq_col *c = &w->cols[i];
            if (floe__pq_page_full(w, c))
                FLOE_FORWARD(floe__pq_col_flush_page(w, c, err));
        }
    }
    w->since_check += len + 1;
    if (w->since_check >= w->check_every) {
        w->since_check = 0;
        if (buffered(w) >= w->opts.row_group_size)
            return close_row_group(w, err);
    }
    return FLOE_OK;
}

static int broken_error(const floe__pq_writer *w, floe_error *err)
{
    return floe__err_set(err, w->broken, "parquet writer: unusable after an earlier failure");
}

int floe__pq_write_row(floe__pq_writer *w, const uint8_t *row, size_t len, floe_error *err)
{
    if (w->broken)
        return broken_error(w, err);
    int rc;
    if (w->flat && (len > w->headroom || w->rows_left == 0)) {
        if ((rc = flat_check(w, len, err)) != FLOE_OK) {
            w->broken = rc;
            return rc;
        }
    }
    FLOE_FORWARD(floe__pq_shred(w, row, len, err));
    w->rows++;
    w->rg_rows++;
    if (w->flat) {
        w->headroom -= len;
        w->rows_left--;
    }
    rc = after_row(w, len, err);
    if (rc)
        w->broken = rc;
    return rc;
}

/* ---- footer -------------------------------------------------------------------- */

int floe__pq_writer_add_kv(floe__pq_writer *w, const char *key, const char *value,
                           floe_error *err)
{
    FLOE_RETURN_IF(w->n_kv >= FLOE__PQ_MAX_KV, err, FLOE_ELIMIT,
                   "parquet: more than %d key-value metadata entries", FLOE__PQ_MAX_KV);
    const char *k = floe__arena_strndup(w->arena, key, strlen(key));
    const char *v = floe__arena_strndup(w->arena, value, strlen(value));
    if (!k || !v)
        return FLOE_OOM(err);
    w->kv[2 * w->n_kv] = k;
    w->kv[2 * w->n_kv + 1] = v;
    w->n_kv++;
    return FLOE_OK;
}

static void encoding_stat(floe__tc *t, int page_type, int encoding, uint32_t count)
{
    floe__tc_elem_struct_begin(t);
    floe__tc_i32(t, 1, page_type);
    floe__tc_i32(t, 2, encoding);
    floe__tc_i32(t, 3, (int32_t)count);
    floe__tc_struct_end(t);
}

static void chunk_statistics(floe__tc *t, const floe__pq_col *c, const floe__pq_chunk *ch)
{
    floe__tc_struct_begin(t, 12);
    floe__tc_i64(t, 3, (int64_t)ch->nulls);
    if (ch->has_minmax) {
        floe__tc_binary(t, 5, ch->max, ch->max_len);
        floe__tc_binary(t, 6, ch->min, ch->min_len);
    }
    if (c->ptype == PQ_T_FLOAT || c->ptype == PQ_T_DOUBLE)
        floe__tc_i64(t, 9, (int64_t)ch->nans);
    floe__tc_struct_end(t);
}

static void column_chunk(const floe__pq_writer *w, floe__tc *t, const floe__pq_col *c,
                         const floe__pq_chunk *ch)
{
    floe__tc_elem_struct_begin(t);
    floe__tc_i64(t, 2, 0);
    floe__tc_struct_begin(t, 3);
    floe__tc_i32(t, 1, c->ptype);
    bool plain = ch->has_dict || ch->n_plain_pages > 0;
    bool dict = ch->n_dict_pages > 0;
    floe__tc_list_begin(t, 2, TC_I32, (size_t)plain + 1 + (size_t)dict);
    if (plain)
        floe__tc_elem_i32(t, PQ_ENC_PLAIN);
    floe__tc_elem_i32(t, PQ_ENC_RLE);
    if (dict)
        floe__tc_elem_i32(t, PQ_ENC_RLE_DICTIONARY);
    floe__tc_list_begin(t, 3, TC_BINARY, c->path_len);
    for (size_t i = 0; i < c->path_len; i++)
        floe__tc_elem_string(t, c->path[i]);
    floe__tc_i32(t, 4, floe__pq_codec_id(w->opts.compression));
    floe__tc_i64(t, 5, (int64_t)ch->num_values);
    floe__tc_i64(t, 6, (int64_t)ch->uncompressed);
    floe__tc_i64(t, 7, (int64_t)ch->compressed);
    floe__tc_i64(t, 9, (int64_t)ch->data_page_offset);
    if (ch->has_dict)
        floe__tc_i64(t, 11, (int64_t)ch->start);
    chunk_statistics(t, c, ch);
    floe__tc_list_begin(t, 13, TC_STRUCT,
                        (size_t)ch->has_dict + (size_t)dict + (ch->n_plain_pages > 0));
    if (ch->has_dict)
        encoding_stat(t, PQ_PAGE_DICTIONARY, PQ_ENC_PLAIN, 1);
    if (dict)
        encoding_stat(t, PQ_PAGE_DATA, PQ_ENC_RLE_DICTIONARY, ch->n_dict_pages);
    if (ch->n_plain_pages)
        encoding_stat(t, PQ_PAGE_DATA, PQ_ENC_PLAIN, ch->n_plain_pages);
    floe__tc_struct_end(t);
    floe__tc_struct_end(t);
}

static void row_group(const floe__pq_writer *w, floe__tc *t, size_t r)
{
    const floe__pq_chunk *chunks = w->rg_chunks[r];
    uint64_t raw = 0, comp = 0;
    floe__tc_elem_struct_begin(t);
    floe__tc_list_begin(t, 1, TC_STRUCT, w->n_cols);
    for (size_t i = 0; i < w->n_cols; i++) {
        column_chunk(w, t, &w->cols[i], &chunks[i]);
        raw += chunks[i].uncompressed;
        comp += chunks[i].compressed;
    }
    floe__tc_i64(t, 2, (int64_t)raw);
    floe__tc_i64(t, 3, (int64_t)w->rg_rows_list[r]);
    floe__tc_i64(t, 5, (int64_t)chunks[0].start);
    floe__tc_i64(t, 6, (int64_t)comp);
    if (r <= INT16_MAX)
        floe__tc_i16(t, 7, (int16_t)r);
    floe__tc_struct_end(t);
}

static int write_footer(floe__pq_writer *w, floe_error *err)
{
    floe__buf fb;
    floe__buf_init(&fb, 0);
    floe__tc t;
    floe__tc_init(&t, &fb);
    floe__tc_elem_struct_begin(&t);
    floe__tc_i32(&t, 1, 1);
    floe__pq_schema_thrift(w, &t);
    floe__tc_i64(&t, 3, (int64_t)w->rows);
    floe__tc_list_begin(&t, 4, TC_STRUCT, w->n_rgs);
    for (size_t r = 0; r < w->n_rgs; r++)
        row_group(w, &t, r);
    if (w->n_kv) {
        floe__tc_list_begin(&t, 5, TC_STRUCT, w->n_kv);
        for (size_t i = 0; i < w->n_kv; i++) {
            floe__tc_elem_struct_begin(&t);
            floe__tc_string(&t, 1, w->kv[2 * i]);
            floe__tc_string(&t, 2, w->kv[2 * i + 1]);
            floe__tc_struct_end(&t);
        }
    }
    floe__tc_string(&t, 6, "floe version " FLOE_VERSION_STRING);
    floe__tc_list_begin(&t, 7, TC_STRUCT, w->n_cols);
    for (size_t i = 0; i < w->n_cols; i++) {
        floe__tc_elem_struct_begin(&t);     /* ColumnOrder union */
        floe__tc_struct_begin(&t, 1);       /* TYPE_ORDER: TypeDefinedOrder {} */
        floe__tc_struct_end(&t);
        floe__tc_struct_end(&t);
    }
    floe__tc_struct_end(&t);
    int rc = floe__tc_finish(&t, err);
    if (rc == FLOE_OK && fb.len > UINT32_MAX)
        rc = floe__err_set(err, FLOE_ELIMIT, "parquet: footer of %zu bytes is too large", fb.len);
    uint8_t tail[8];
    floe__put_le32(tail, (uint32_t)fb.len);
    memcpy(tail + 4, "PAR1", 4);
    if (rc == FLOE_OK)
        rc = floe__output_write(w->out, fb.data, fb.len, err);
    if (rc == FLOE_OK)
        rc = floe__output_write(w->out, tail, 8, err);
    floe__buf_free(&fb);
    return rc;
}

/* ---- metrics ------------------------------------------------------------------- */

void floe__file_metrics_free(floe__file_metrics *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_columns; i++) {
        floe__buf_free(&m->columns[i].lower);
        floe__buf_free(&m->columns[i].upper);
    }
    floe__free(m->columns);
    floe__free(m->split_offsets);
    memset(m, 0, sizeof *m);
}

static int column_metrics(const floe__pq_col *c, floe__col_metrics *cm, floe_error *err)
{
    cm->field_id = c->field->id;
    cm->column_size = c->file_compressed;
    floe__buf_init(&cm->lower, 0);
    floe__buf_init(&cm->upper, 0);
    /* Java Iceberg reports nothing but the size for fields in lists and maps. */
    if (c->in_repeated)
        return FLOE_OK;
    cm->has_counts = true;
    cm->value_count = c->file_values;
    cm->null_count = c->file_stats.nulls;
    if (c->ptype == PQ_T_FLOAT || c->ptype == PQ_T_DOUBLE) {
        cm->has_nan_count = true;
        cm->nan_count = c->file_stats.nans;
    }
    FLOE_FORWARD(floe__pq_iceberg_bounds(&c->file_stats, c->order, c->ptype, c->field->kind,
                                         cm, err));
    floe__buf_shrink(&cm->lower);    /* kept per file until its commit: 16 files a MiB less */
    floe__buf_shrink(&cm->upper);
    return FLOE_OK;
}

static int file_metrics(const floe__pq_writer *w, floe__file_metrics *m, floe_error *err)
{
    memset(m, 0, sizeof *m);
    m->record_count = w->rows;
    m->columns = floe__calloc(w->n_cols, sizeof *m->columns);
    m->split_offsets = floe__calloc(w->n_rgs ? w->n_rgs : 1, sizeof *m->split_offsets);
    if (!m->columns || !m->split_offsets) {
        floe__file_metrics_free(m);
        return FLOE_OOM(err);
    }
    m->n_columns = w->n_cols;
    int rc = FLOE_OK;
    for (size_t i = 0; i < w->n_cols && rc == FLOE_OK; i++)
        rc = column_metrics(&w->cols[i], &m->columns[i], err);
    m->n_splits = w->n_rgs;
    for (size_t r = 0; r < w->n_rgs; r++)
        m->split_offsets[r] = w->rg_chunks[r][0].start;
    if (rc)
        floe__file_metrics_free(m);
    return rc;
}

int floe__pq_writer_close(floe__pq_writer *w, floe__file_metrics *m, floe_error *err)
{
    int rc = w->broken ? broken_error(w, err) : FLOE_OK;
    if (rc == FLOE_OK)
        rc = close_row_group(w, err);
    if (rc == FLOE_OK)
        rc = write_footer(w, err);
    floe__file_metrics fm;
    memset(&fm, 0, sizeof fm);
    if (rc == FLOE_OK && m)
        rc = file_metrics(w, &fm, err);
    if (rc != FLOE_OK) {
        floe__pq_writer_abort(w);
        return rc;
    }
    fm.file_size = w->out->offset;
    floe__output *out = w->out;
    w->out = NULL;
    free_writer(w);
    rc = out->close(out, err);
    if (rc != FLOE_OK) {
        floe__file_metrics_free(&fm);
        return floe__err_wrap(err, rc, "parquet: closing the file");
    }
    if (m)
        *m = fm;
    return FLOE_OK;
}
