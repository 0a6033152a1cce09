/*
 * delta.c - DELTA_BINARY_PACKED decoding (Encodings.md), also the length
 * streams of DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY.
 *
 *   stream  := header block*
 *   header  := varint(values per block) varint(miniblocks per block)
 *              varint(total values) zigzag(first value)
 *   block   := zigzag(min delta) byte(bit width) x miniblocks  miniblock*
 *
 * Each miniblock holds (values per block / miniblocks) deltas, less the min
 * delta, bit-packed at its width; value[i] = value[i-1] + min delta +
 * delta[i], in wrapping 64-bit arithmetic (int32 columns keep the low 32
 * bits, which is what wrapping 32-bit encoders produce as well).  In the
 * last block, the miniblocks no value needs have a width byte but no bytes,
 * so the end of a stream is found by walking its block headers
 * (floe__pq_delta_end) without decoding anything.
 *
 * The decoder hands out values a batch at a time.  Block sizes must be
 * multiples of 128 (at most 2^20) and miniblocks multiples of 32 values,
 * as the spec says; widths over 64 bits and streams that end early are
 * FLOE_EFORMAT.
 */
#include "parquet/pqr_internal.h"

#define MAX_BLOCK ((uint64_t)1 << 20)

static int bad(floe_error *err, const char *what)
{
    return floe__err_set(err, FLOE_EFORMAT, "DELTA_BINARY_PACKED: %s", what);
}

static int uvar(const uint8_t **p, const uint8_t *end, uint64_t *v, floe_error *err)
{
    size_t n = floe__get_uvarint(*p, end, v);
    if (!n)
        return bad(err, "truncated");
    *p += n;
    return FLOE_OK;
}

int floe__pq_delta_init(floe__pq_delta *d, const uint8_t *p, size_t n, floe_error *err)
{
    memset(d, 0, sizeof *d);
    const uint8_t *end = p + n;
    uint64_t first;
    FLOE_FORWARD(uvar(&p, end, &d->block, err));
    FLOE_FORWARD(uvar(&p, end, &d->n_mini, err));
    FLOE_FORWARD(uvar(&p, end, &d->total, err));
    FLOE_FORWARD(uvar(&p, end, &first, err));
    if (d->block == 0 || d->block % 128 || d->block > MAX_BLOCK || d->n_mini == 0 ||
        d->block % d->n_mini || (d->block / d->n_mini) % 32)
        return bad(err, "bad block layout");
    d->per_mini = d->block / d->n_mini;
    d->last = (uint64_t)floe__unzigzag64(first);
    d->first = d->total > 0;
    d->left = d->total;
    d->p = p;
    d->end = end;
    return FLOE_OK;
}

static int start_block(floe__pq_delta *d, floe_error *err)
{
    uint64_t md;
    FLOE_FORWARD(uvar(&d->p, d->end, &md, err));
    d->min_delta = floe__unzigzag64(md);
    if ((uint64_t)(d->end - d->p) < d->n_mini)
        return bad(err, "truncated block header");
    d->widths = d->p;
    d->p += d->n_mini;
    d->mini_p = d->p;
    d->mini = 0;
    d->in_mini = 0;
    d->in_block = true;
    return FLOE_OK;
}

/* Bytes of a miniblock of width bw, as far as the input goes. */
static size_t mini_bytes(const floe__pq_delta *d, int bw)
{
    uint64_t want = d->per_mini * (uint64_t)bw / 8;
    uint64_t have = (uint64_t)(d->end - d->mini_p);
    return (size_t)(want < have ? want : have);
}

/* Values from the current miniblock into out[0..m). */
static int from_mini(floe__pq_delta *d, uint64_t *out, size_t m, floe_error *err)
{
    int bw = d->widths[d->mini];
    if (bw > 64)
        return bad(err, "miniblock wider than 64 bits");
    if (!floe__pq_unpack64(d->mini_p, mini_bytes(d, bw), d->in_mini, m, bw, out))
        return bad(err, "miniblock is truncated");
    uint64_t v = d->last, md = (uint64_t)d->min_delta;
    for (size_t k = 0; k < m; k++) {
        v += md + out[k];
        out[k] = v;
    }
    d->last = v;
    d->in_mini += m;
    if (d->in_mini == d->per_mini) {
        d->mini_p += mini_bytes(d, bw);
        d->mini++;
        d->in_mini = 0;
        if (d->mini == d->n_mini) {
            d->p = d->mini_p;           /* the next block header */
            d->in_block = false;
        }
    }
    return FLOE_OK;
}

int floe__pq_delta_next(floe__pq_delta *d, uint64_t *out, size_t n, floe_error *err)
{
    if (n > d->left)
        return bad(err, "fewer values than the page needs");
    size_t i = 0;
    if (n && d->first) {
        out[i++] = d->last;
        d->first = false;
    }
    while (i < n) {
        if (!d->in_block)
            FLOE_FORWARD(start_block(d, err));
        uint64_t room = d->per_mini - d->in_mini;
        size_t m = n - i < room ? n - i : (size_t)room;
        FLOE_FORWARD(from_mini(d, out + i, m, err));
        i += m;
    }
    d->left -= n;
    return FLOE_OK;
}

int floe__pq_delta_end(const floe__pq_delta *d, const uint8_t **end, floe_error *err)
{
    assert(d->left == d->total && !d->in_block);
    const uint8_t *p = d->p;
    uint64_t remaining = d->total ? d->total - 1 : 0;
    while (remaining > 0) {
        uint64_t md;
        FLOE_FORWARD(uvar(&p, d->end, &md, err));
        if ((uint64_t)(d->end - p) < d->n_mini)
            return bad(err, "truncated block header");
        const uint8_t *w = p;
        p += d->n_mini;
        for (uint64_t k = 0; k < d->n_mini && remaining > 0; k++) {
            if (w[k] > 64)
                return bad(err, "miniblock wider than 64 bits");
            uint64_t bytes = d->per_mini * w[k] / 8;
            if (bytes > (uint64_t)(d->end - p))
                return bad(err, "miniblock is truncated");
            p += bytes;
            remaining -= remaining < d->per_mini ? remaining : d->per_mini;
        }
    }
    *end = p;
    return FLOE_OK;
}
