/*
 * column.c - data pages, the dictionary page and column chunks.
 *
 * A column buffers one page of shredded values (PLAIN) and levels (one byte
 * each).  floe__pq_col_flush_page turns them into a DataPage V1:
 *
 *   [u32 length][RLE repetition levels]   when max_rep > 0
 *   [u32 length][RLE definition levels]   when max_def > 0
 *   values: RLE_DICTIONARY (bit width byte + RLE indices) or PLAIN
 *
 * compresses it and appends header + body to the chunk buffer (pages the
 * codec keeps failing to shrink are stored in the codec's raw form, see
 * compress_page).  At the end of the row group the chunk is written out:
 * the dictionary page first (when any data page used it), then the data
 * pages.
 *
 * Dictionary policy per chunk (booleans never use one):
 *  - "stops paying": after the first page that has values, if dictionary
 *    plus indices are not smaller than PLAIN, the page is re-encoded PLAIN,
 *    the dictionary dropped, and the rest of the chunk is PLAIN; when the
 *    first PQ_DICT_PROBE values of that page are already nearly all
 *    distinct, the same happens without hashing the rest;
 *  - "overflow": when a page would push the dictionary page past
 *    opts.dictionary_limit bytes, that page and the rest of the chunk are
 *    PLAIN; pages already written stay dictionary-encoded and the
 *    dictionary page still leads the chunk.
 *
 * Statistics: floats are folded value by value (NaN counts); other types
 * fold the values of PLAIN pages, and for dictionary pages only the entries
 * the page added to the dictionary (each distinct value once).
 */
#include "parquet/pq_internal.h"

void floe__pq_col_free(floe__pq_col *c)
{
    floe__buf_free(&c->vals);
    floe__buf_free(&c->defs);
    floe__buf_free(&c->reps);
    floe__buf_free(&c->pages);
    floe__pq_dict_free(&c->dict);
    floe__pq_stats_free(&c->stats);
    floe__pq_stats_free(&c->file_stats);
    floe__free(c->path);
    c->path = NULL;
}

size_t floe__pq_col_buffered(const floe__pq_col *c)
{
    /* Pending values are scaled by the ratio the chunk's pages achieved. */
    size_t pending = floe__pq_vbytes(c) + c->defs.len / 4 + c->reps.len / 4;
    if (c->raw_encoded > 0 && c->pages.len < c->raw_encoded)
        pending = (size_t)((double)pending * (double)c->pages.len / (double)c->raw_encoded) + 64;
    return c->pages.len + c->dict.values.len + pending;
}

void floe__pq_col_begin_chunk(floe__pq_writer *w, floe__pq_col *c)
{
    floe__buf_reset(&c->pages);
    floe__pq_dict_reset(&c->dict);
    floe__pq_stats_reset(&c->stats);
    c->dict_state = (w->opts.dictionary && c->ptype != PQ_T_BOOLEAN) ? PQ_DICT_ON : PQ_DICT_OFF;
    c->dict_checked = false;
    c->flat_pages = 0;
    c->store_next = 0;
    c->n_dict_pages = c->n_plain_pages = 0;
    c->chunk_levels = c->chunk_uncompressed = c->raw_encoded = 0;
}

/* Serialise a PageHeader into w->hdr. */
static int page_header(floe__pq_writer *w, int type, size_t raw, size_t comp, uint32_t num_values,
                       int encoding, floe_error *err)
{
    FLOE_RETURN_IF(raw > INT32_MAX || comp > INT32_MAX, err, FLOE_ELIMIT,
                   "page of %zu bytes is larger than Parquet allows", raw > comp ? raw : comp);
    floe__buf_reset(&w->hdr);
    floe__tc t;
    floe__tc_init(&t, &w->hdr);
    floe__tc_elem_struct_begin(&t);
    floe__tc_i32(&t, 1, type);
    floe__tc_i32(&t, 2, (int32_t)raw);
    floe__tc_i32(&t, 3, (int32_t)comp);
    if (type == PQ_PAGE_DATA) {
        floe__tc_struct_begin(&t, 5);
        floe__tc_i32(&t, 1, (int32_t)num_values);
        floe__tc_i32(&t, 2, encoding);
        floe__tc_i32(&t, 3, PQ_ENC_RLE);
        floe__tc_i32(&t, 4, PQ_ENC_RLE);
        floe__tc_struct_end(&t);
    } else {
        floe__tc_struct_begin(&t, 7);
        floe__tc_i32(&t, 1, (int32_t)num_values);
        floe__tc_i32(&t, 2, PQ_ENC_PLAIN);
        floe__tc_struct_end(&t);
    }
    floe__tc_struct_end(&t);
    return floe__tc_finish(&t, err);
}

/* Levels with their 4-byte length prefix. */
static void put_levels(floe__buf *pg, const uint8_t *lv, size_t n, int max)
{
    int bw = floe__bit_width((uint64_t)max);
    size_t at = pg->len;
    size_t len = floe__rle_encode_u8(lv, n, bw, pg->data + at + 4);
    floe__put_le32(pg->data + at, (uint32_t)len);
    pg->len += 4 + len;
}

static int fold_stats(floe__pq_stats *s, const floe__pq_col *c, const uint8_t *vals, size_t n,
                      floe_error *err)
{
    if (c->width)
        return floe__pq_stats_fixed(s, c->order, vals, n, c->width, err);
    return floe__pq_stats_bytes(s, c->order, vals, n, err);
}

static int grow_idx(floe__pq_writer *w, size_t n, floe_error *err)
{
    if (n <= w->idx_cap)
        return FLOE_OK;
    size_t cap = w->idx_cap ? w->idx_cap : 4096;
    while (cap < n)
        cap *= 2;
    uint32_t *p = floe__realloc(w->idx, cap * sizeof *p);
    if (!p)
        return FLOE_OOM(err);
    w->idx = p;
    w->idx_cap = cap;
    return FLOE_OK;
}

/* Byte offset of value k of the page's PLAIN values. */
static size_t value_offset(const floe__pq_col *c, size_t k)
{
    if (c->width)
        return k * c->width;
    size_t off = 0;
    for (size_t i = 0; i < k; i++)
        off += 4 + (size_t)floe__get_le32(floe__pq_vdata(c) + off);
    return off;
}

/* Map the page's values to dictionary indices in w->idx.  On a chunk's
 * first dictionary page a sample of PQ_DICT_PROBE values goes first: when
 * nearly all of them are distinct the dictionary cannot pay, and the chunk
 * goes PLAIN without hashing the rest.  Returns with *ok false when the
 * values are not (all) mapped: overflow or no dictionary. */
#define PQ_DICT_PROBE 4096

static int map_values(floe__pq_writer *w, floe__pq_col *c, bool *ok, floe_error *err)
{
    size_t n = c->n_vals, done, first = 0;
    *ok = false;
    if (!c->dict_checked && n >= 2 * PQ_DICT_PROBE) {
        uint32_t before = c->dict.n;
        FLOE_FORWARD(floe__pq_dict_encode(&c->dict, floe__pq_vdata(c), floe__pq_vbytes(c),
                                          PQ_DICT_PROBE,
                                          w->opts.dictionary_limit, w->idx, &done, err));
        if (done == PQ_DICT_PROBE && (c->dict.n - before) * 10 > PQ_DICT_PROBE * 9) {
            c->dict_checked = true;
            floe__pq_dict_reset(&c->dict);
            c->dict_state = PQ_DICT_OFF;
            return FLOE_OK;
        }
        if (done < PQ_DICT_PROBE) {
            c->dict_state = c->n_dict_pages ? PQ_DICT_FELL_BACK : PQ_DICT_OFF;
            return FLOE_OK;
        }
        first = PQ_DICT_PROBE;
    }
    size_t off = value_offset(c, first);
    FLOE_FORWARD(floe__pq_dict_encode(&c->dict, floe__pq_vdata(c) + off, floe__pq_vbytes(c) - off,
                                      n - first,
                                      w->opts.dictionary_limit, w->idx + first, &done, err));
    if (done < n - first) {
        /* overflow: this page and the rest of the chunk go PLAIN */
        c->dict_state = c->n_dict_pages ? PQ_DICT_FELL_BACK : PQ_DICT_OFF;
        return FLOE_OK;
    }
    *ok = true;
    return FLOE_OK;
}

/* Try to encode the page's values through the dictionary, appending to
 * w->page; *used says whether it did (otherwise w->page is as it was). */
static int dict_values(floe__pq_writer *w, floe__pq_col *c, bool *used, floe_error *err)
{
    *used = false;
    FLOE_FORWARD(grow_idx(w, c->n_vals, err));
    uint32_t before = c->dict.n;
    bool ok;
    FLOE_FORWARD(map_values(w, c, &ok, err));
    if (!ok)
        return FLOE_OK;
    floe__buf *pg = &w->page;
    size_t at = pg->len;
    int bw = floe__bit_width(c->dict.n > 1 ? c->dict.n - 1 : 1);
    FLOE_FORWARD(floe__buf_reserve(pg, 1 + floe__rle_bound(c->n_vals, bw), err));
    pg->data[pg->len++] = (uint8_t)bw;
    pg->len += floe__rle_encode_u32(w->idx, c->n_vals, bw, pg->data + pg->len);
    if (!c->dict_checked) {
        c->dict_checked = true;
        if (c->dict.values.len + (pg->len - at) >= floe__pq_vbytes(c)) {
            /* stops paying: no dictionary for this chunk */
            pg->len = at;
            floe__pq_dict_reset(&c->dict);
            c->dict_state = PQ_DICT_OFF;
            return FLOE_OK;
        }
    }
    if (c->order != PQ_ORD_FLOAT && c->order != PQ_ORD_DOUBLE && c->dict.n > before) {
        const uint8_t *first = c->width ? c->dict.values.data + (size_t)before * c->width
                                        : c->dict.values.data + c->dict.offsets[before];
        FLOE_FORWARD(fold_stats(&c->stats, c, first, c->dict.n - before, err));
    }
    *used = true;
    return FLOE_OK;
}

/* PLAIN values after the levels.  When the levels fit in the room kept
 * before the values (always, for a page without levels), they are copied
 * there and the page is compressed in place from c->vals (*body, *len);
 * otherwise the values are appended to the levels in w->page. */
static int plain_values(floe__pq_writer *w, floe__pq_col *c, const uint8_t **body, size_t *len,
                        floe_error *err)
{
    floe__buf *pg = &w->page;
    if (c->ptype != PQ_T_BOOLEAN && pg->len <= c->vpre) {
        uint8_t *start = c->vals.data + c->vpre - pg->len;
        if (pg->len)
            memcpy(start, pg->data, pg->len);
        *body = start;
        *len = pg->len + floe__pq_vbytes(c);
    } else {
        if (c->ptype == PQ_T_BOOLEAN) {
            FLOE_FORWARD(floe__buf_reserve(pg, (c->n_vals + 7) / 8, err));
            pg->len += floe__pack_bools(floe__pq_vdata(c), c->n_vals, pg->data + pg->len);
        } else {
            FLOE_FORWARD(floe__buf_append(pg, floe__pq_vdata(c), floe__pq_vbytes(c), err));
        }
        *body = pg->data;
        *len = pg->len;
    }
    if (c->order != PQ_ORD_FLOAT && c->order != PQ_ORD_DOUBLE)
        FLOE_FORWARD(fold_stats(&c->stats, c, floe__pq_vdata(c), c->n_vals, err));
    return FLOE_OK;
}

/* Compress a page body, appending to dst.  Pages the codec does not shrink by
 * 1/32 (bit-packed dictionary indices of a column with many distinct
 * values, typically) come in runs: after two of them the next pages are
 * stored in the codec's format without searching for matches, 8, 16 ... up
 * to 64 pages between attempts; any page that compresses ends the run.
 * A body of at most TINY_PAGE bytes (a small file's pages: a partition's
 * few rows) is stored at once: a codec saves a few bytes there at the cost
 * of setting up a frame. */
#define TINY_PAGE 64

static int compress_page(floe__pq_writer *w, floe__pq_col *c, const uint8_t *body, size_t len,
                         floe__buf *dst, floe_error *err)
{
    if (!floe__pq_can_store(w->codec))
        return floe__pq_compress(w->codec, body, len, dst, err);
    if (len <= TINY_PAGE)
        return floe__pq_store(w->codec, body, len, dst, err);
    if (c->store_next > 0) {
        c->store_next--;
        return floe__pq_store(w->codec, body, len, dst, err);
    }
    size_t at = dst->len;
    FLOE_FORWARD(floe__pq_compress(w->codec, body, len, dst, err));
    if (dst->len - at < len - len / 32) {
        c->flat_pages = 0;
    } else if (++c->flat_pages >= 2) {
        unsigned shift = c->flat_pages - 2 < 3 ? c->flat_pages - 2u : 3u;
        c->store_next = (uint16_t)(8u << shift);
    }
    return FLOE_OK;
}

/* Compress the page body [body, body+len) straight into the chunk, after
 * room for its header.  The header is sized for the compress bound first;
 * the real compressed size can only make it shorter (a shorter varint),
 * and then the body moves down by those few bytes. */
static int append_page(floe__pq_writer *w, floe__pq_col *c, const uint8_t *body, size_t len,
                       int encoding, floe_error *err)
{
    FLOE_RETURN_IF(c->n_levels > INT32_MAX, err, FLOE_ELIMIT, "page of %zu values is too large",
                   c->n_levels);
    size_t bound = floe__pq_compress_bound(w->codec, len);
    FLOE_FORWARD(page_header(w, PQ_PAGE_DATA, len, bound, (uint32_t)c->n_levels, encoding, err));
    size_t room = w->hdr.len;
    FLOE_FORWARD(floe__buf_reserve(&c->pages, room + bound, err));
    size_t at = c->pages.len;
    c->pages.len += room;
    int rc = compress_page(w, c, body, len, &c->pages, err);
    size_t comp = c->pages.len - at - room;
    if (rc == FLOE_OK)
        rc = page_header(w, PQ_PAGE_DATA, len, comp, (uint32_t)c->n_levels, encoding, err);
    if (rc != FLOE_OK) {
        c->pages.len = at;
        return rc;
    }
    uint8_t *h = c->pages.data + at;
    if (w->hdr.len != room)
        memmove(h + w->hdr.len, h + room, comp);
    memcpy(h, w->hdr.data, w->hdr.len);
    c->pages.len = at + w->hdr.len + comp;
    c->chunk_uncompressed += w->hdr.len + len;
    return FLOE_OK;
}

void floe__pq_col_sync(const floe__pq_writer *w, floe__pq_col *c)
{
    if (!w->flat)
        return;
    c->n_levels = (size_t)(w->rows - c->page_row0);
    if (c->width)
        c->n_vals = floe__pq_vbytes(c) / c->width;
    else if (!c->max_def)
        c->n_vals = c->n_levels;
}

/* Flat optional byte arrays: the values are the present slots. */
static void count_values(const floe__pq_writer *w, floe__pq_col *c)
{
    if (!w->flat || c->width || !c->max_def)
        return;
    size_t n = 0;
    for (size_t i = 0; i < c->defs.len; i++)
        n += c->defs.data[i];
    c->n_vals = n;
}

int floe__pq_col_flush_page(floe__pq_writer *w, floe__pq_col *c, floe_error *err)
{
    floe__pq_col_sync(w, c);
    count_values(w, c);
    c->page_row0 = w->rows;
    if (c->n_levels == 0)
        return FLOE_OK;
    floe__buf *pg = &w->page;
    floe__buf_reset(pg);
    size_t bound = 8;
    if (c->max_rep)
        bound += floe__rle_bound(c->n_levels, floe__bit_width(c->max_rep));
    if (c->max_def)
        bound += floe__rle_bound(c->n_levels, floe__bit_width(c->max_def));
    FLOE_FORWARD(floe__buf_reserve(pg, bound, err));
    if (c->max_rep)
        put_levels(pg, c->reps.data, c->n_levels, c->max_rep);
    if (c->max_def)
        put_levels(pg, c->defs.data, c->n_levels, c->max_def);

    bool dict = false;
    const uint8_t *body;
    size_t body_len;
    if (c->dict_state == PQ_DICT_ON && c->n_vals > 0)
        FLOE_FORWARD(dict_values(w, c, &dict, err));
    if (dict) {
        body = pg->data;          /* w->page may have moved while it grew */
        body_len = pg->len;
    } else {
        FLOE_FORWARD(plain_values(w, c, &body, &body_len, err));
    }
    if (c->order == PQ_ORD_FLOAT || c->order == PQ_ORD_DOUBLE)
        FLOE_FORWARD(floe__pq_stats_fixed(&c->stats, c->order, floe__pq_vdata(c), c->n_vals,
                                          c->width, err));
    c->stats.nulls += c->n_levels - c->n_vals;

    FLOE_FORWARD(append_page(w, c, body, body_len, dict ? PQ_ENC_RLE_DICTIONARY : PQ_ENC_PLAIN,
                             err));
    if (dict)
        c->n_dict_pages++;
    else
        c->n_plain_pages++;
    c->chunk_levels += c->n_levels;
    c->raw_encoded += floe__pq_vbytes(c) + c->defs.len / 4 + c->reps.len / 4;
    c->vals.len = c->vpre;
    floe__buf_reset(&c->defs);
    floe__buf_reset(&c->reps);
    c->n_levels = c->n_vals = 0;
    return FLOE_OK;
}

static int copy_to_arena(floe__arena *a, const uint8_t *p, size_t n, uint8_t **out,
                         floe_error *err)
{
    *out = floe__arena_alloc(a, n ? n : 1);
    if (!*out)
        return FLOE_OOM(err);
    if (n)
        memcpy(*out, p, n);
    return FLOE_OK;
}

static int write_dict_page(floe__pq_writer *w, floe__pq_col *c, floe_error *err)
{
    floe__buf_reset(&w->cpage);
    bool tiny = c->dict.values.len <= TINY_PAGE && floe__pq_can_store(w->codec);
    FLOE_FORWARD((tiny ? floe__pq_store : floe__pq_compress)(w->codec, c->dict.values.data,
                                                             c->dict.values.len, &w->cpage,
                                                             err));
    FLOE_FORWARD(page_header(w, PQ_PAGE_DICTIONARY, c->dict.values.len, w->cpage.len,
                             c->dict.n, PQ_ENC_PLAIN, err));
    FLOE_FORWARD(floe__output_write(w->out, w->hdr.data, w->hdr.len, err));
    FLOE_FORWARD(floe__output_write(w->out, w->cpage.data, w->cpage.len, err));
    c->chunk_uncompressed += w->hdr.len + c->dict.values.len;
    return FLOE_OK;
}

int floe__pq_col_write_chunk(floe__pq_writer *w, floe__pq_col *c, floe__pq_chunk *ch,
                             floe_error *err)
{
    memset(ch, 0, sizeof *ch);
    ch->start = w->out->offset;
    if (c->n_dict_pages > 0) {
        FLOE_FORWARD(write_dict_page(w, c, err));
        ch->has_dict = true;
    }
    ch->data_page_offset = w->out->offset;
    FLOE_FORWARD(floe__output_write(w->out, c->pages.data, c->pages.len, err));
    ch->n_dict_pages = c->n_dict_pages;
    ch->n_plain_pages = c->n_plain_pages;
    ch->num_values = c->chunk_levels;
    ch->uncompressed = c->chunk_uncompressed;
    ch->compressed = w->out->offset - ch->start;
    ch->nulls = c->stats.nulls;
    ch->nans = c->stats.nans;

    uint8_t smin[8], smax[8];
    const uint8_t *mn, *mx;
    size_t mn_len, mx_len;
    if (floe__pq_stats_minmax(&c->stats, c->order, c->ptype, smin, smax, &mn, &mn_len, &mx,
                              &mx_len)) {
        FLOE_FORWARD(copy_to_arena(w->arena, mn, mn_len, &ch->min, err));
        FLOE_FORWARD(copy_to_arena(w->arena, mx, mx_len, &ch->max, err));
        ch->min_len = (uint32_t)mn_len;
        ch->max_len = (uint32_t)mx_len;
        ch->has_minmax = true;
    }
    FLOE_FORWARD(floe__pq_stats_merge(&c->file_stats, &c->stats, c->order, err));
    c->file_values += ch->num_values;
    c->file_compressed += ch->compressed;
    floe__pq_col_begin_chunk(w, c);
    return FLOE_OK;
}
