/*
 * rle_read.c - decoding the RLE / bit-packed hybrid (levels, dictionary
 * indices, RLE booleans; the format is in rle.c), the deprecated BIT_PACKED
 * level encoding, and bit unpacking for delta.c.
 *
 * A decoder keeps its place between calls, so a page's levels come out a
 * batch at a time.  The input is untrusted: a run may not reach past the
 * bytes there are (a bit-packed run cut short is read as far as it goes,
 * which is what writers that trim the last group produce), and asking for
 * more values than the runs hold is FLOE_EFORMAT.
 *
 * Unpacking reads 64-bit little-endian words at the bit offset of each
 * value; near the end of the input the word is assembled from the bytes
 * that exist, so nothing is ever read out of bounds.
 */
#include "parquet/pqr_internal.h"

void floe__pq_rle_init(floe__pq_rle *d, const uint8_t *p, size_t n, int bw)
{
    memset(d, 0, sizeof *d);
    d->p = p;
    d->end = p + n;
    d->bw = bw;
}

void floe__pq_bitpacked_init(floe__pq_rle *d, const uint8_t *p, size_t n, int bw)
{
    floe__pq_rle_init(d, p + n, 0, bw);
    d->msb = true;
    d->packed = true;
    d->bits = p;
    d->bits_len = n;
    d->left = bw ? (uint32_t)(n * 8 / (size_t)bw < UINT32_MAX ? n * 8 / (size_t)bw : UINT32_MAX)
                 : UINT32_MAX;
}

static inline uint64_t load_le64(const uint8_t *p, const uint8_t *end)
{
    if (end - p >= 8)
        return floe__get_le64(p);
    uint64_t v = 0;
    for (int i = 0; p + i < end; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static inline uint64_t load_be64(const uint8_t *p, const uint8_t *end)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | (p + i < end ? p[i] : 0);
    return v;
}

static bool inside(size_t len, uint64_t first, size_t n, int bw)
{
    uint64_t last;
    return !__builtin_mul_overflow(first + n, (uint64_t)bw, &last) && last <= (uint64_t)len * 8;
}

bool floe__pq_unpack32(const uint8_t *p, size_t len, uint64_t first, size_t n, int bw,
                       uint32_t *out)
{
    assert(bw >= 0 && bw <= 32);
    if (!inside(len, first, n, bw))
        return false;
    const uint8_t *end = p + len;
    uint64_t mask = bw == 32 ? 0xffffffffu : ((uint64_t)1 << bw) - 1;
    uint64_t bit = first * (uint64_t)bw;
    size_t i = 0;
    /* whole words while 8 bytes remain after the value's first byte */
    for (; i < n && (bit >> 3) + 8 <= len; i++, bit += (uint64_t)bw)
        out[i] = (uint32_t)((floe__get_le64(p + (bit >> 3)) >> (bit & 7)) & mask);
    for (; i < n; i++, bit += (uint64_t)bw)
        out[i] = (uint32_t)((load_le64(p + (bit >> 3), end) >> (bit & 7)) & mask);
    return true;
}

bool floe__pq_unpack64(const uint8_t *p, size_t len, uint64_t first, size_t n, int bw,
                       uint64_t *out)
{
    assert(bw >= 0 && bw <= 64);
    if (!inside(len, first, n, bw))
        return false;
    const uint8_t *end = p + len;
    uint64_t mask = bw == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bw) - 1;
    uint64_t bit = first * (uint64_t)bw;
    for (size_t i = 0; i < n; i++, bit += (uint64_t)bw) {
        const uint8_t *b = p + (bit >> 3);
        unsigned sh = (unsigned)(bit & 7);
        uint64_t v = load_le64(b, end) >> sh;
        if (sh && bw > 64 - (int)sh)           /* the value reaches a ninth byte */
            v |= (uint64_t)(b + 8 < end ? b[8] : 0) << (64 - sh);
        out[i] = v & mask;
    }
    return true;
}

static void unpack_msb(const floe__pq_rle *d, uint8_t *out, size_t n)
{
    const uint8_t *end = d->bits + d->bits_len;
    uint64_t bit = (uint64_t)d->bit_i * (uint64_t)d->bw;
    for (size_t i = 0; i < n; i++, bit += (uint64_t)d->bw) {
        uint64_t w = load_be64(d->bits + (bit >> 3), end);
        out[i] = d->bw ? (uint8_t)((w << (bit & 7)) >> (64 - d->bw)) : 0;
    }
}

static int runs_end(floe_error *err)
{
    return floe__err_set(err, FLOE_EFORMAT, "RLE/bit-packed runs end before their values do");
}

/* Start the next run (skipping empty ones). */
static int next_run(floe__pq_rle *d, floe_error *err)
{
    while (d->left == 0) {
        if (d->msb || d->p >= d->end)
            return runs_end(err);
        uint64_t h;
        size_t used = floe__get_uvarint(d->p, d->end, &h);
        if (!used || (h >> 1) > ((h & 1) ? UINT32_MAX / 8 : UINT32_MAX))
            return floe__err_set(err, FLOE_EFORMAT, "bad RLE/bit-packed run header");
        d->p += used;
        if (h & 1) {
            size_t bytes = (size_t)(h >> 1) * (size_t)d->bw;
            size_t have = (size_t)(d->end - d->p);
            d->bits = d->p;
            d->bits_len = bytes < have ? bytes : have;
            d->p += d->bits_len;
            d->packed = true;
            d->bit_i = 0;
            d->left = (uint32_t)(h >> 1) * 8;
        } else {
            size_t vb = (size_t)(d->bw + 7) / 8;
            FLOE_RETURN_IF((size_t)(d->end - d->p) < vb, err, FLOE_EFORMAT,
                           "RLE run value is truncated");
            uint64_t v = load_le64(d->p, d->p + vb);
            FLOE_RETURN_IF(d->bw < 32 && (v >> d->bw), err, FLOE_EFORMAT,
                           "RLE run value %llu is wider than %d bits", (unsigned long long)v,
                           d->bw);
            d->p += vb;
            d->value = (uint32_t)v;
            d->packed = false;
            d->left = (uint32_t)(h >> 1);
        }
    }
    return FLOE_OK;
}

static int packed_u8(floe__pq_rle *d, uint8_t *out, size_t m, floe_error *err)
{
    if (d->msb) {
        unpack_msb(d, out, m);
        return FLOE_OK;
    }
    uint32_t tmp[256];
    for (size_t done = 0; done < m;) {
        size_t k = m - done < 256 ? m - done : 256;
        if (!floe__pq_unpack32(d->bits, d->bits_len, d->bit_i + done, k, d->bw, tmp))
            return runs_end(err);
        for (size_t i = 0; i < k; i++)
            out[done + i] = (uint8_t)tmp[i];
        done += k;
    }
    return FLOE_OK;
}

int floe__pq_rle_u8(floe__pq_rle *d, uint8_t *out, size_t n, floe_error *err)
{
    assert(d->bw <= 8);
    while (n) {
        if (d->left == 0)
            FLOE_FORWARD(next_run(d, err));
        size_t m = n < d->left ? n : d->left;
        if (!d->packed)
            memset(out, (int)d->value, m);
        else
            FLOE_FORWARD(packed_u8(d, out, m, err));
        if (d->packed)
            d->bit_i += (uint32_t)m;
        d->left -= (uint32_t)m;
        out += m;
        n -= m;
    }
    return FLOE_OK;
}

int floe__pq_rle_u32(floe__pq_rle *d, uint32_t *out, size_t n, floe_error *err)
{
    assert(!d->msb && d->bw <= 32);
    while (n) {
        if (d->left == 0)
            FLOE_FORWARD(next_run(d, err));
        size_t m = n < d->left ? n : d->left;
        if (!d->packed) {
            for (size_t i = 0; i < m; i++)
                out[i] = d->value;
        } else {
            if (!floe__pq_unpack32(d->bits, d->bits_len, d->bit_i, m, d->bw, out))
                return runs_end(err);
            d->bit_i += (uint32_t)m;
        }
        d->left -= (uint32_t)m;
        out += m;
        n -= m;
    }
    return FLOE_OK;
}
