/*
 * chunk_read.c - one column chunk, read a page at a time into batches.
 *
 * The chunk's bytes come through a window: a buffer holding the part of
 * [start, end) being decoded, refilled from the source in reads of at least
 * READAHEAD bytes, so a chunk of small pages costs few reads and a chunk of
 * any size costs one page of memory.  A page is its header (thrift, read
 * with more bytes until it fits), then its body:
 *
 *   DataPage V1   [rep levels][def levels][values], compressed as a whole;
 *                 levels RLE behind a 4-byte length, or BIT_PACKED
 *   DataPage V2   rep levels, def levels (RLE, no length: the header has
 *                 them), uncompressed; then the values, compressed when
 *                 is_compressed says so
 *   Dictionary    PLAIN entries, decoded and converted once (values.c)
 *   others        index pages and unknown types are skipped
 *
 * Uncompressed bodies are used where they lie in the window; they stay
 * valid until the next page is read, which only happens once every entry
 * of the page has left its batch.  A batch is up to PQ_BATCH level entries
 * of one page: their repetition and definition levels (checked against the
 * column's maxima) and the values of the entries at the maximum definition
 * level.  Errors name the column; page errors also the page's file offset.
 */
#include "parquet/pqr_internal.h"

#define READAHEAD ((size_t)256 << 10)
#define HEADER_FIRST 256

/* Batches of wide values are kept under this many payload bytes. */
#define BATCH_BYTES ((size_t)16 << 20)

int floe__pq_col_init(floe__pq_rcol *c, const floe__pq_read_options *o, floe_error *err)
{
    size_t wide = c->width > c->pwidth ? c->width : c->pwidth;
    c->batch = wide > BATCH_BYTES / PQ_BATCH ? BATCH_BYTES / wide : PQ_BATCH;
    if (c->batch == 0)
        c->batch = 1;
    size_t page = o->max_page;
    floe__buf_init(&c->in.win, page + READAHEAD);
    floe__buf_init(&c->page, page + 1);
    floe__buf_init(&c->dict_raw, page + 1);
    floe__buf_init(&c->dict_vals, page < SIZE_MAX / 32 ? page * 16 + 64 : 0);
    floe__buf_init(&c->vbuf, BATCH_BYTES * 2);
    floe__buf_init(&c->pbuf, BATCH_BYTES * 2);
    floe__buf_init(&c->sbuf, page + 64);
    floe__buf_init(&c->vd.prev, page + 64);
    if (c->max_def && !(c->def = floe__malloc(PQ_BATCH)))
        return FLOE_OOM(err);
    if (c->max_rep && !(c->rep = floe__malloc(PQ_BATCH)))
        return FLOE_OOM(err);
    if (c->field) {
        c->idx = floe__malloc(PQ_BATCH * sizeof *c->idx);
        c->words = floe__malloc(2 * PQ_BATCH * sizeof *c->words);
        if (!c->idx || !c->words)
            return FLOE_OOM(err);
    }
    return FLOE_OK;
}

void floe__pq_col_release(floe__pq_rcol *c)
{
    floe__free(c->path);
    floe__free(c->def);
    floe__free(c->rep);
    floe__free(c->idx);
    floe__free(c->words);
    floe__buf_free(&c->in.win);
    floe__buf_free(&c->page);
    floe__buf_free(&c->dict_raw);
    floe__buf_free(&c->dict_vals);
    floe__buf_free(&c->vbuf);
    floe__buf_free(&c->pbuf);
    floe__buf_free(&c->sbuf);
    floe__pq_vdec_free(&c->vd);
    memset(c, 0, sizeof *c);
}

static int chunk_check(const floe__pq_reader *r, const floe__pq_rcol *c,
                       const floe__pq_cmeta *cm, floe_error *err)
{
    FLOE_RETURN_IF(cm->encrypted, err, FLOE_EUNSUPPORTED, "the chunk is encrypted");
    FLOE_RETURN_IF(cm->external, err, FLOE_EUNSUPPORTED,
                   "the chunk is in another file (ColumnChunk.file_path)");
    FLOE_RETURN_IF(!cm->has_meta, err, FLOE_EFORMAT, "the chunk has no ColumnMetaData");
    FLOE_RETURN_IF(cm->type != c->ptype, err, FLOE_EFORMAT,
                   "the chunk holds %s, the schema says %s", floe__pq_type_name(cm->type),
                   floe__pq_type_name(c->ptype));
    FLOE_RETURN_IF(!floe__pq_codec_supported(cm->codec), err, FLOE_EUNSUPPORTED,
                   "compression codec %s is not supported (floe reads UNCOMPRESSED, SNAPPY, "
                   "GZIP and ZSTD)", floe__pq_codec_name(cm->codec));
    (void)r;
    return FLOE_OK;
}

int floe__pq_col_start(floe__pq_reader *r, floe__pq_rcol *c, size_t rg, floe_error *err)
{
    const floe__pq_cmeta *cm = &r->meta.rgs[rg].cols[c->leaf];
    int rc = chunk_check(r, c, cm, err);
    if (rc)
        return floe__err_wrap(err, rc, "column %s, row group %zu", c->path, rg);
    uint64_t start = (uint64_t)cm->data_page_offset;
    if (cm->dict_page_offset > 0 && (uint64_t)cm->dict_page_offset < start)
        start = (uint64_t)cm->dict_page_offset;
    uint64_t end;
    FLOE_RETURN_IF(start < 4 || __builtin_add_overflow(start, (uint64_t)cm->total_compressed,
                                                       &end) || end > r->data_end,
                   err, FLOE_EFORMAT, "column %s, row group %zu: chunk [%llu, +%lld) lies "
                   "outside the file's data", c->path, rg, (unsigned long long)start,
                   (long long)cm->total_compressed);
    c->codec = cm->codec;
    c->chunk_values = (uint64_t)cm->num_values;
    c->entries = 0;
    c->in.next = start;
    c->in.end = end;
    c->in.win.len = c->in.at = 0;
    c->has_dict = false;
    c->dict_n = 0;
    c->page_left = 0;
    c->n = c->at = c->vat = 0;
    return FLOE_OK;
}

/* ---- the window ------------------------------------------------------------------- */

/* At least `need` bytes of the chunk at the read point, fewer only at its end. */
static int fill(floe__pq_reader *r, floe__pq_rcol *c, size_t need, const uint8_t **p,
                size_t *have, floe_error *err)
{
    floe__pq_in *in = &c->in;
    size_t avail = in->win.len - in->at;
    if (avail < need && in->next < in->end) {
        if (in->at) {
            memmove(in->win.data, in->win.data + in->at, avail);
            in->win.len = avail;
            in->at = 0;
        }
        uint64_t left = in->end - in->next;
        size_t want = need - avail < READAHEAD ? READAHEAD : need - avail;
        if (want > left)
            want = (size_t)left;
        FLOE_FORWARD(floe__buf_reserve(&in->win, want, err));
        int rc = r->src.read_at(r->src.ctx, in->next, want, in->win.data + in->win.len, err);
        if (rc)
            return floe__err_wrap(err, rc, "reading bytes %llu..%llu",
                                  (unsigned long long)in->next,
                                  (unsigned long long)(in->next + want));
        in->win.len += want;
        in->next += want;
        avail += want;
    }
    *p = in->win.data + in->at;
    *have = avail;
    return FLOE_OK;
}

/* File offset of the read point. */
static uint64_t read_point(const floe__pq_in *in)
{
    return in->next - (in->win.len - in->at);
}

static int read_header(floe__pq_reader *r, floe__pq_rcol *c, floe__pq_page_hdr *h,
                       floe_error *err)
{
    for (size_t want = HEADER_FIRST;; want *= 4) {
        const uint8_t *p;
        size_t have, used;
        bool truncated;
        FLOE_FORWARD(fill(r, c, want, &p, &have, err));
        FLOE_RETURN_IF(have == 0, err, FLOE_EFORMAT,
                       "the chunk ends after %llu of its %llu values",
                       (unsigned long long)c->entries, (unsigned long long)c->chunk_values);
        int rc = floe__pq_page_hdr_decode(p, have, h, &used, &truncated, err);
        if (rc == FLOE_OK) {
            c->in.at += used;
            return FLOE_OK;
        }
        if (!truncated || have < want || want > r->opts.max_page / 4)
            return rc;
    }
}

/* The page's [src, src + n) as exactly `len` bytes: where it lies when
 * stored uncompressed, else decompressed into dst. */
static int body_bytes(floe__pq_reader *r, floe__pq_rcol *c, floe__buf *dst, const uint8_t *src,
                      size_t n, size_t len, bool compressed, const uint8_t **out, floe_error *err)
{
    if (!compressed || c->codec == PQ_CODEC_UNCOMPRESSED) {
        FLOE_RETURN_IF(n != len, err, FLOE_EFORMAT,
                       "an uncompressed page of %zu bytes whose header says %zu", n, len);
        *out = src;
        return FLOE_OK;
    }
    FLOE_RETURN_IF(!floe__pq_decompress_bound(c->codec, src, n, len), err, FLOE_EFORMAT,
                   "%zu compressed bytes cannot hold the %zu its header says", n, len);
    dst->len = 0;
    FLOE_FORWARD(floe__buf_reserve(dst, len + 1, err));
    FLOE_FORWARD(floe__pq_decompress(&r->dctx, c->codec, src, n, dst->data, len, err));
    *out = dst->data;
    return FLOE_OK;
}

static int load_dict(floe__pq_reader *r, floe__pq_rcol *c, const floe__pq_page_hdr *h,
                     const uint8_t *body, floe_error *err)
{
    FLOE_RETURN_IF(c->has_dict, err, FLOE_EFORMAT, "a second dictionary page");
    FLOE_RETURN_IF(c->entries > 0, err, FLOE_EFORMAT, "a dictionary page after data pages");
    FLOE_RETURN_IF(h->encoding != PQ_ENC_PLAIN && h->encoding != PQ_ENC_PLAIN_DICTIONARY, err,
                   FLOE_EUNSUPPORTED, "a dictionary encoded %s",
                   floe__pq_encoding_name(h->encoding));
    c->has_dict = true;
    if (!c->field || c->cv == PQ_CV_NULL)
        return FLOE_OK;                 /* read for its levels only, or no values at all */
    const uint8_t *p;
    FLOE_FORWARD(body_bytes(r, c, &c->dict_raw, body, (size_t)h->compressed,
                            (size_t)h->uncompressed, true, &p, err));
    if (p != c->dict_raw.data) {        /* uncompressed: keep it out of the window */
        c->dict_raw.len = 0;
        FLOE_FORWARD(floe__buf_append(&c->dict_raw, p, (size_t)h->uncompressed, err));
        p = c->dict_raw.data;
    }
    return floe__pq_dict_load(c, p, (size_t)h->uncompressed, (uint32_t)h->num_values, err);
}

/* V1 levels at *pp: RLE behind a 4-byte length, or BIT_PACKED. */
static int levels_v1(floe__pq_rle *d, int encoding, int max, uint32_t n, const uint8_t **pp,
                     const uint8_t *end, floe_error *err)
{
    const uint8_t *p = *pp;
    int bw = floe__bit_width((uint64_t)max);
    size_t len;
    if (encoding == PQ_ENC_RLE) {
        FLOE_RETURN_IF(end - p < 4, err, FLOE_EFORMAT, "levels without their length");
        len = floe__get_le32(p);
        p += 4;
        FLOE_RETURN_IF(len > (size_t)(end - p), err, FLOE_EFORMAT, "levels run past the page");
        floe__pq_rle_init(d, p, len, bw);
    } else if (encoding == PQ_ENC_BIT_PACKED) {
        len = ((size_t)n * (size_t)bw + 7) / 8;
        FLOE_RETURN_IF(len > (size_t)(end - p), err, FLOE_EFORMAT, "levels run past the page");
        floe__pq_bitpacked_init(d, p, len, bw);
    } else {
        return floe__err_set(err, FLOE_EUNSUPPORTED, "levels encoded %s",
                             floe__pq_encoding_name(encoding));
    }
    *pp = p + len;
    return FLOE_OK;
}

static int page_v1(floe__pq_reader *r, floe__pq_rcol *c, const floe__pq_page_hdr *h,
                   const uint8_t *body, floe_error *err)
{
    const uint8_t *p;
    FLOE_FORWARD(body_bytes(r, c, &c->page, body, (size_t)h->compressed, (size_t)h->uncompressed,
                            true, &p, err));
    const uint8_t *end = p + h->uncompressed;
    uint32_t n = (uint32_t)h->num_values;
    if (c->max_rep)
        FLOE_FORWARD(levels_v1(&c->reps, h->rep_encoding, c->max_rep, n, &p, end, err));
    if (c->max_def)
        FLOE_FORWARD(levels_v1(&c->defs, h->def_encoding, c->max_def, n, &p, end, err));
    if (!c->field)
        return FLOE_OK;
    return floe__pq_values_begin(c, h->encoding, p, (size_t)(end - p), err);
}

static int page_v2(floe__pq_reader *r, floe__pq_rcol *c, const floe__pq_page_hdr *h,
                   const uint8_t *body, floe_error *err)
{
    size_t lv = (size_t)h->rep_len + (size_t)h->def_len;
    FLOE_RETURN_IF(lv > (size_t)h->compressed || lv > (size_t)h->uncompressed, err,
                   FLOE_EFORMAT, "levels of %zu bytes in a page of %d", lv, (int)h->compressed);
    floe__pq_rle_init(&c->reps, body, (size_t)h->rep_len, floe__bit_width(c->max_rep));
    floe__pq_rle_init(&c->defs, body + h->rep_len, (size_t)h->def_len,
                      floe__bit_width(c->max_def));
    if (!c->field)
        return FLOE_OK;
    const uint8_t *p;
    size_t len = (size_t)h->uncompressed - lv;
    FLOE_FORWARD(body_bytes(r, c, &c->page, body + lv, (size_t)h->compressed - lv, len,
                            h->is_compressed, &p, err));
    return floe__pq_values_begin(c, h->encoding, p, len, err);
}

/* One page: a data page sets page_left; others are taken in passing. */
static int one_page(floe__pq_reader *r, floe__pq_rcol *c, floe_error *err)
{
    floe__pq_page_hdr h;
    FLOE_FORWARD(read_header(r, c, &h, err));
    FLOE_RETURN_IF((size_t)h.compressed > r->opts.max_page ||
                       (size_t)h.uncompressed > r->opts.max_page,
                   err, FLOE_ELIMIT, "a page of %d bytes (%d uncompressed) is over the limit "
                   "of %zu", (int)h.compressed, (int)h.uncompressed, r->opts.max_page);
    const uint8_t *body, *p;
    size_t have;
    FLOE_FORWARD(fill(r, c, (size_t)h.compressed, &body, &have, err));
    FLOE_RETURN_IF(have < (size_t)h.compressed, err, FLOE_EFORMAT,
                   "a page of %d bytes runs past the end of its chunk", (int)h.compressed);
    c->in.at += (size_t)h.compressed;
    p = body;
    if (h.type == PQ_PAGE_DICTIONARY)
        return load_dict(r, c, &h, p, err);
    if (h.type != PQ_PAGE_DATA && h.type != PQ_PAGE_DATA_V2)
        return FLOE_OK;
    FLOE_RETURN_IF((uint64_t)h.num_values > c->chunk_values - c->entries, err, FLOE_EFORMAT,
                   "pages hold more than the chunk's %llu values",
                   (unsigned long long)c->chunk_values);
    FLOE_FORWARD(h.type == PQ_PAGE_DATA ? page_v1(r, c, &h, p, err)
                                        : page_v2(r, c, &h, p, err));
    c->page_left = (uint32_t)h.num_values;
    return FLOE_OK;
}

static int next_page(floe__pq_reader *r, floe__pq_rcol *c, floe_error *err)
{
    while (c->page_left == 0) {
        uint64_t at = read_point(&c->in);
        int rc = one_page(r, c, err);
        if (rc)
            return floe__err_wrap(err, rc, "page at byte %llu", (unsigned long long)at);
    }
    return FLOE_OK;
}

/* Check levels against their maximum; the count of entries at it. */
static size_t at_max(const uint8_t *lv, size_t n, uint8_t max, bool *over)
{
    size_t k = 0;
    uint8_t top = 0;
    for (size_t i = 0; i < n; i++) {
        k += lv[i] == max;
        top = lv[i] > top ? lv[i] : top;
    }
    *over = top > max;
    return k;
}

static int decode_batch(floe__pq_reader *r, floe__pq_rcol *c, floe_error *err)
{
    FLOE_RETURN_IF(c->entries >= c->chunk_values, err, FLOE_EFORMAT,
                   "its chunk ends (%llu values) before the row group does",
                   (unsigned long long)c->chunk_values);
    FLOE_FORWARD(next_page(r, c, err));
    size_t n = c->page_left < c->batch ? c->page_left : c->batch, k = n;
    bool over = false;
    if (c->max_rep) {
        FLOE_FORWARD(floe__pq_rle_u8(&c->reps, c->rep, n, err));
        at_max(c->rep, n, c->max_rep, &over);
    }
    if (c->max_def && !over)
        FLOE_FORWARD(floe__pq_rle_u8(&c->defs, c->def, n, err));
    if (c->max_def && !over)
        k = at_max(c->def, n, c->max_def, &over);
    FLOE_RETURN_IF(over, err, FLOE_EFORMAT, "a level above the column's maximum");
    if (c->field && c->cv == PQ_CV_NULL && k)
        return floe__err_set(err, FLOE_EFORMAT, "values in a column of the null type");
    if (c->field && c->cv != PQ_CV_NULL && k)
        FLOE_FORWARD(floe__pq_values_read(c, k, err));
    c->n = n;
    c->page_left -= (uint32_t)n;
    c->entries += n;
    return FLOE_OK;
}

int floe__pq_col_refill(floe__pq_reader *r, floe__pq_rcol *c, floe_error *err)
{
    assert(c->at == c->n);
    c->n = c->at = c->vat = 0;
    int rc = decode_batch(r, c, err);
    if (rc)
        return floe__err_wrap(err, rc, "column %s, row group %zu", c->path, r->rg);
    return FLOE_OK;
}
