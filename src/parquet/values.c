/*
 * values.c - the values of a data page, decoded a batch at a time, and the
 * dictionary page.
 *
 * Encodings (Encodings.md), by physical type:
 *   PLAIN                    all types (booleans bit-packed LSB first)
 *   PLAIN_DICTIONARY,
 *   RLE_DICTIONARY           all but booleans: a bit-width byte, then the
 *                            indices as an RLE/bit-packed hybrid
 *   RLE                      booleans: a 4-byte length, then the hybrid
 *   DELTA_BINARY_PACKED      INT32, INT64 (delta.c)
 *   DELTA_LENGTH_BYTE_ARRAY  BYTE_ARRAY: the lengths (delta), then the bytes
 *   DELTA_BYTE_ARRAY         BYTE_ARRAY, FLBA: prefix lengths and suffixes
 *                            (as DELTA_LENGTH_BYTE_ARRAY) against the
 *                            previous value
 *   BYTE_STREAM_SPLIT        FLOAT, DOUBLE, INT32, INT64, FLBA: byte k of
 *                            every value in stream k
 *
 * A batch's payloads end up in c->vals (fixed width, in the row format) or
 * c->bv (byte arrays).  PLAIN values that need no conversion are used where
 * they lie in the page; everything else is decoded into the column's
 * scratch buffers and converted once (convert.c).  A dictionary is
 * converted once when its page is read, so dictionary-encoded batches are a
 * gather of ready payloads.
 */
#include "parquet/pqr_internal.h"

/* Messages leave the column out: chunk_read.c names it. */
static int bad(const floe__pq_rcol *c, const char *what, floe_error *err)
{
    (void)c;
    return floe__err_set(err, FLOE_EFORMAT, "%s", what);
}

/* b as raw storage for n bytes (its contents are not kept). */
static int room(floe__buf *b, size_t n, floe_error *err)
{
    b->len = 0;
    return floe__buf_reserve(b, n ? n : 1, err);
}

/* Fixed stored values to the batch: in place, or converted into vbuf. */
static int emit_fixed(floe__pq_rcol *c, const uint8_t *in, size_t n, floe_error *err)
{
    if (floe__pq_cv_identity(c)) {
        assert(c->width == c->pwidth);
        c->vals = in;
        return FLOE_OK;
    }
    FLOE_FORWARD(room(&c->vbuf, n * c->width, err));
    FLOE_FORWARD(floe__pq_convert_fixed(c, in, n, c->vbuf.data, err));
    c->vals = c->vbuf.data;
    return FLOE_OK;
}

/* Byte arrays to the batch: checked where they are, or converted to fixed
 * payloads (decimals). */
static int emit_bytes(floe__pq_rcol *c, const floe__pq_bv *bv, size_t n, floe_error *err)
{
    if (c->wop != PQ_W_FIXED) {
        c->bv = bv;
        return floe__pq_convert_bytes(c, bv, n, NULL, err);
    }
    FLOE_FORWARD(room(&c->vbuf, n * 16, err));
    FLOE_FORWARD(floe__pq_convert_bytes(c, bv, n, c->vbuf.data, err));
    c->vals = c->vbuf.data;
    return FLOE_OK;
}

/* ---- PLAIN ------------------------------------------------------------------------------ */

static void unpack_bools(const uint8_t *p, uint64_t bit, size_t n, uint8_t *out)
{
    for (size_t i = 0; i < n; i++, bit++)
        out[i] = (uint8_t)((p[bit >> 3] >> (bit & 7)) & 1);
}

/* n PLAIN byte arrays from *pp (up to end) into bv. */
static int plain_bv(const floe__pq_rcol *c, const uint8_t **pp, const uint8_t *end,
                    floe__pq_bv *bv, size_t n, floe_error *err)
{
    const uint8_t *p = *pp;
    for (size_t i = 0; i < n; i++) {
        if (end - p < 4)
            return bad(c, "PLAIN byte arrays end early", err);
        uint32_t len = floe__get_le32(p);
        if (len > (size_t)(end - p) - 4)
            return bad(c, "a PLAIN byte array runs past its page", err);
        bv[i].p = p + 4;
        bv[i].n = len;
        p += 4 + (size_t)len;
    }
    *pp = p;
    return FLOE_OK;
}

static int plain_read(floe__pq_rcol *c, size_t k, floe_error *err)
{
    floe__pq_vdec *v = &c->vd;
    size_t avail = (size_t)(v->end - v->p);
    if (c->ptype == PQ_T_BOOLEAN) {
        if (v->bit + k > (uint64_t)avail * 8)
            return bad(c, "PLAIN booleans end early", err);
        FLOE_FORWARD(room(&c->vbuf, k, err));
        unpack_bools(v->p, v->bit, k, c->vbuf.data);
        v->bit += k;
        c->vals = c->vbuf.data;
        return FLOE_OK;
    }
    if (c->ptype == PQ_T_BYTE_ARRAY) {
        FLOE_FORWARD(room(&c->pbuf, k * sizeof(floe__pq_bv), err));
        floe__pq_bv *bv = (floe__pq_bv *)(void *)c->pbuf.data;
        FLOE_FORWARD(plain_bv(c, &v->p, v->end, bv, k, err));
        return emit_bytes(c, bv, k, err);
    }
    if ((uint64_t)k * c->pwidth > avail)
        return bad(c, "PLAIN values end early", err);
    const uint8_t *in = v->p;
    v->p += k * c->pwidth;
    return emit_fixed(c, in, k, err);
}

/* ---- dictionaries ------------------------------------------------------------------------- */

static int dict_bytes(floe__pq_rcol *c, const uint8_t *p, size_t len, uint32_t n,
                      floe_error *err)
{
    FLOE_RETURN_IF(n > len / 4, err, FLOE_EFORMAT, "a dictionary of %u byte arrays in %zu bytes",
                   n, len);
    FLOE_FORWARD(room(&c->pbuf, (size_t)n * sizeof(floe__pq_bv), err));
    floe__pq_bv *bv = (floe__pq_bv *)(void *)c->pbuf.data;
    FLOE_FORWARD(plain_bv(c, &p, p + len, bv, n, err));
    if (c->wop != PQ_W_FIXED) {
        FLOE_FORWARD(floe__pq_convert_bytes(c, bv, n, NULL, err));
        FLOE_FORWARD(room(&c->dict_vals, (size_t)n * sizeof *bv, err));
        memcpy(c->dict_vals.data, bv, (size_t)n * sizeof *bv);
        return FLOE_OK;
    }
    FLOE_FORWARD(room(&c->dict_vals, (size_t)n * 16, err));
    return floe__pq_convert_bytes(c, bv, n, c->dict_vals.data, err);
}

int floe__pq_dict_load(floe__pq_rcol *c, const uint8_t *p, size_t len, uint32_t n,
                       floe_error *err)
{
    c->dict_n = 0;
    if (c->ptype == PQ_T_BYTE_ARRAY)
        FLOE_FORWARD(dict_bytes(c, p, len, n, err));
    else if (c->ptype == PQ_T_BOOLEAN)
        return bad(c, "a dictionary of booleans", err);
    else {
        FLOE_RETURN_IF((uint64_t)n * c->pwidth > len, err, FLOE_EFORMAT,
                       "a dictionary of %u values in %zu bytes", n, len);
        FLOE_FORWARD(room(&c->dict_vals, (size_t)n * c->width, err));
        FLOE_FORWARD(floe__pq_convert_fixed(c, p, n, c->dict_vals.data, err));
    }
    c->dict_n = n;
    c->has_dict = true;
    return FLOE_OK;
}

/* Gather dictionary payloads of width w for the k indices. */
static void gather(const uint8_t *dict, const uint32_t *idx, size_t k, size_t w, uint8_t *out)
{
    switch (w) {
    case 4:
        for (size_t i = 0; i < k; i++)
            memcpy(out + 4 * i, dict + 4 * (size_t)idx[i], 4);
        break;
    case 8:
        for (size_t i = 0; i < k; i++)
            memcpy(out + 8 * i, dict + 8 * (size_t)idx[i], 8);
        break;
    case 16:
        for (size_t i = 0; i < k; i++)
            memcpy(out + 16 * i, dict + 16 * (size_t)idx[i], 16);
        break;
    default:
        for (size_t i = 0; i < k; i++)
            memcpy(out + w * i, dict + w * (size_t)idx[i], w);
    }
}

static int dict_read(floe__pq_rcol *c, size_t k, floe_error *err)
{
    uint32_t *idx = c->idx, top = 0;
    FLOE_FORWARD(floe__pq_rle_u32(&c->vd.rle, idx, k, err));
    for (size_t i = 0; i < k; i++)
        top = idx[i] > top ? idx[i] : top;
    if (k && top >= c->dict_n)
        return floe__err_set(err, FLOE_EFORMAT, "dictionary index %u in a dictionary of %u",
                             top, c->dict_n);
    bool bytes = c->wop == PQ_W_BYTES;
    size_t w = bytes ? sizeof(floe__pq_bv) : c->width;
    floe__buf *dst = bytes ? &c->pbuf : &c->vbuf;
    FLOE_FORWARD(room(dst, k * w, err));
    gather(c->dict_vals.data, idx, k, w, dst->data);
    if (bytes)
        c->bv = (const floe__pq_bv *)(const void *)dst->data;
    else
        c->vals = dst->data;
    return FLOE_OK;
}

/* ---- delta encodings ------------------------------------------------------------------------ */

static int delta_ints(floe__pq_rcol *c, size_t k, floe_error *err)
{
    FLOE_FORWARD(floe__pq_delta_next(&c->vd.d1, c->words, k, err));
    if (c->ptype == PQ_T_INT64)
        return emit_fixed(c, (const uint8_t *)c->words, k, err);
    FLOE_FORWARD(room(&c->pbuf, k * 4, err));
    for (size_t i = 0; i < k; i++)
        floe__put_le32(c->pbuf.data + 4 * i, (uint32_t)c->words[i]);
    return emit_fixed(c, c->pbuf.data, k, err);
}

static int dlba_read(floe__pq_rcol *c, size_t k, floe_error *err)
{
    floe__pq_vdec *v = &c->vd;
    FLOE_FORWARD(floe__pq_delta_next(&v->d1, c->words, k, err));
    FLOE_FORWARD(room(&c->pbuf, k * sizeof(floe__pq_bv), err));
    floe__pq_bv *bv = (floe__pq_bv *)(void *)c->pbuf.data;
    for (size_t i = 0; i < k; i++) {
        uint64_t len = c->words[i];
        if (len > (uint64_t)(v->end - v->data))
            return bad(c, "a DELTA_LENGTH_BYTE_ARRAY value runs past its page", err);
        bv[i].p = v->data;
        bv[i].n = (uint32_t)len;
        v->data += len;
    }
    return emit_bytes(c, bv, k, err);
}

/* One DELTA_BYTE_ARRAY value into c->sbuf: the previous value's first
 * `pre` bytes and `suf` new ones.  The previous value is `prev`, or, when
 * prev_at is not SIZE_MAX, the one at that offset of sbuf (found again after
 * sbuf grows).  out->p receives the value's offset, made a pointer once the
 * batch is complete. */
static int dba_value(floe__pq_rcol *c, floe__pq_bv prev, size_t prev_at, uint64_t pre,
                     uint64_t suf, floe__pq_bv *out, floe_error *err)
{
    floe__pq_vdec *v = &c->vd;
    if (pre > prev.n || suf > (uint64_t)(v->end - v->data))
        return bad(c, "a DELTA_BYTE_ARRAY prefix or suffix out of range", err);
    size_t at = c->sbuf.len;
    FLOE_FORWARD(floe__buf_reserve(&c->sbuf, (size_t)(pre + suf), err));
    const uint8_t *pp = prev_at == SIZE_MAX ? prev.p : c->sbuf.data + prev_at;
    if (pre)
        memcpy(c->sbuf.data + at, pp, (size_t)pre);
    if (suf)
        memcpy(c->sbuf.data + at + pre, v->data, (size_t)suf);
    v->data += suf;
    c->sbuf.len = at + (size_t)(pre + suf);
    out->p = (const uint8_t *)(uintptr_t)at;
    out->n = (uint32_t)(pre + suf);
    return FLOE_OK;
}

static int dba_read(floe__pq_rcol *c, size_t k, floe_error *err)
{
    floe__pq_vdec *v = &c->vd;
    uint64_t *pre = c->words, *suf = c->words + PQ_BATCH;
    FLOE_FORWARD(floe__pq_delta_next(&v->d1, pre, k, err));
    FLOE_FORWARD(floe__pq_delta_next(&v->d2, suf, k, err));
    FLOE_FORWARD(room(&c->pbuf, k * sizeof(floe__pq_bv), err));
    floe__pq_bv *bv = (floe__pq_bv *)(void *)c->pbuf.data;
    FLOE_FORWARD(room(&c->sbuf, 64, err));
    floe__pq_bv first = {v->prev.data, (uint32_t)v->prev.len};
    for (size_t i = 0; i < k; i++) {
        floe__pq_bv prev = i ? bv[i - 1] : first;
        size_t prev_at = i ? (size_t)(uintptr_t)bv[i - 1].p : SIZE_MAX;
        FLOE_FORWARD(dba_value(c, prev, prev_at, pre[i], suf[i], &bv[i], err));
    }
    for (size_t i = 0; i < k; i++)
        bv[i].p = c->sbuf.data + (uintptr_t)bv[i].p;
    if (k) {
        v->prev.len = 0;
        FLOE_FORWARD(floe__buf_append(&v->prev, bv[k - 1].p, bv[k - 1].n, err));
    }
    if (c->ptype == PQ_T_BYTE_ARRAY)
        return emit_bytes(c, bv, k, err);
    for (size_t i = 0; i < k; i++)
        if (bv[i].n != c->pwidth)
            return bad(c, "a DELTA_BYTE_ARRAY value of the wrong length", err);
    return emit_fixed(c, c->sbuf.data, k, err);
}

/* ---- BYTE_STREAM_SPLIT, RLE booleans ---------------------------------------------------------- */

static int bss_read(floe__pq_rcol *c, size_t k, floe_error *err)
{
    floe__pq_vdec *v = &c->vd;
    size_t w = c->pwidth;
    if (k > v->bss_n - v->bss_i)
        return bad(c, "BYTE_STREAM_SPLIT values end early", err);
    FLOE_FORWARD(room(&c->pbuf, k * w, err));
    uint8_t *out = c->pbuf.data;
    for (size_t b = 0; b < w; b++) {
        const uint8_t *s = v->p + b * v->bss_n + v->bss_i;
        for (size_t i = 0; i < k; i++)
            out[i * w + b] = s[i];
    }
    v->bss_i += k;
    return emit_fixed(c, out, k, err);
}

static int rle_bools(floe__pq_rcol *c, size_t k, floe_error *err)
{
    FLOE_FORWARD(room(&c->vbuf, k, err));
    FLOE_FORWARD(floe__pq_rle_u8(&c->vd.rle, c->vbuf.data, k, err));
    c->vals = c->vbuf.data;
    return FLOE_OK;
}

int floe__pq_values_read(floe__pq_rcol *c, size_t k, floe_error *err)
{
    assert(k <= PQ_BATCH);
    switch (c->vd.encoding) {
    case PQ_ENC_PLAIN: return plain_read(c, k, err);
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY: return dict_read(c, k, err);
    case PQ_ENC_RLE: return rle_bools(c, k, err);
    case PQ_ENC_DELTA_BINARY_PACKED: return delta_ints(c, k, err);
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY: return dlba_read(c, k, err);
    case PQ_ENC_DELTA_BYTE_ARRAY: return dba_read(c, k, err);
    default: return bss_read(c, k, err);
    }
}

/* ---- starting a page ---------------------------------------------------------------------------- */

/* Whether `encoding` may hold values of the column's physical type. */
static bool encoding_fits(int encoding, int t)
{
    switch (encoding) {
    case PQ_ENC_PLAIN: return true;
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY: return t != PQ_T_BOOLEAN;
    case PQ_ENC_RLE: return t == PQ_T_BOOLEAN;
    case PQ_ENC_DELTA_BINARY_PACKED: return t == PQ_T_INT32 || t == PQ_T_INT64;
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY: return t == PQ_T_BYTE_ARRAY;
    case PQ_ENC_DELTA_BYTE_ARRAY: return t == PQ_T_BYTE_ARRAY || t == PQ_T_FLBA;
    case PQ_ENC_BYTE_STREAM_SPLIT:
        return t == PQ_T_FLOAT || t == PQ_T_DOUBLE || t == PQ_T_INT32 || t == PQ_T_INT64 ||
               t == PQ_T_FLBA;
    default: return false;
    }
}

static int begin_dict(floe__pq_rcol *c, const uint8_t *p, size_t n, floe_error *err)
{
    if (!c->has_dict)
        return bad(c, "a dictionary-encoded page without a dictionary page", err);
    if (n < 1)
        return bad(c, "a dictionary-encoded page without its bit width", err);
    if (p[0] > 32)
        return bad(c, "dictionary indices wider than 32 bits", err);
    floe__pq_rle_init(&c->vd.rle, p + 1, n - 1, p[0]);
    return FLOE_OK;
}

static int begin_deltas(floe__pq_rcol *c, int encoding, const uint8_t *p, size_t n,
                        floe_error *err)
{
    floe__pq_vdec *v = &c->vd;
    FLOE_FORWARD(floe__pq_delta_init(&v->d1, p, n, err));
    if (encoding == PQ_ENC_DELTA_BINARY_PACKED)
        return FLOE_OK;
    const uint8_t *e1;
    FLOE_FORWARD(floe__pq_delta_end(&v->d1, &e1, err));
    if (encoding == PQ_ENC_DELTA_LENGTH_BYTE_ARRAY) {
        v->data = e1;
        return FLOE_OK;
    }
    FLOE_FORWARD(floe__pq_delta_init(&v->d2, e1, (size_t)(p + n - e1), err));
    FLOE_FORWARD(floe__pq_delta_end(&v->d2, &v->data, err));
    v->prev.len = 0;
    if (v->d1.total != v->d2.total)
        return bad(c, "DELTA_BYTE_ARRAY prefix and suffix counts differ", err);
    return FLOE_OK;
}

int floe__pq_values_begin(floe__pq_rcol *c, int encoding, const uint8_t *p, size_t n,
                          floe_error *err)
{
    floe__pq_vdec *v = &c->vd;
    v->encoding = encoding;
    v->p = p;
    v->end = p + n;
    v->bit = 0;
    if (!encoding_fits(encoding, c->ptype))
        return floe__err_set(err, encoding >= 0 && encoding <= 9 ? FLOE_EFORMAT
                                                                 : FLOE_EUNSUPPORTED,
                             "values encoded %s, which %s %s", floe__pq_encoding_name(encoding),
                             encoding >= 0 && encoding <= 9 ? "does not hold"
                                                            : "floe does not read, for",
                             floe__pq_type_name(c->ptype));
    switch (encoding) {
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY: return begin_dict(c, p, n, err);
    case PQ_ENC_RLE: {
        if (n < 4 || floe__get_le32(p) > n - 4)
            return bad(c, "RLE booleans with a bad length", err);
        floe__pq_rle_init(&v->rle, p + 4, floe__get_le32(p), 1);
        return FLOE_OK;
    }
    case PQ_ENC_BYTE_STREAM_SPLIT:
        if (c->pwidth == 0 || n % c->pwidth)
            return bad(c, "BYTE_STREAM_SPLIT bytes are not whole values", err);
        v->bss_n = n / c->pwidth;
        v->bss_i = 0;
        return FLOE_OK;
    case PQ_ENC_PLAIN: return FLOE_OK;
    default: return begin_deltas(c, encoding, p, n, err);
    }
}

void floe__pq_vdec_free(floe__pq_vdec *v)
{
    floe__buf_free(&v->prev);
}
