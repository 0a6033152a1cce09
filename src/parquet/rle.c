/*
 * rle.c - the RLE / bit-packed hybrid encoding (Parquet Encodings.md) used
 * for repetition and definition levels and for dictionary indices, and the
 * bit packing of PLAIN booleans.
 *
 *   hybrid      := run*
 *   run         := rle-run | bit-packed-run
 *   rle-run     := varint(count << 1)            value in ceil(bw/8) bytes LE
 *   packed-run  := varint(groups << 1 | 1)       groups x 8 values, bw bits each,
 *                                                LSB first
 *
 * The encoder works on a whole array at once, in groups of 8 values: a
 * group of 8 equal values starts an RLE run (extended while the value
 * repeats), everything between runs is gathered into one bit-packed run of
 * whole groups; only the very last group may be padded with zeros (readers
 * stop at the value count).
 */
#include "parquet/pq_internal.h"

size_t floe__rle_bound(size_t n, int bw)
{
    /* Per 8 values at most: an RLE run (<= 5 header + 4 value bytes), a
     * packed-run header (<= 5) and a packed group (bw bytes). */
    return (n / 8 + 2) * (size_t)(14 + bw);
}

static inline uint8_t *put_varint(uint8_t *o, uint64_t v)
{
    return o + floe__put_uvarint(o, v);
}

static inline uint8_t *put_value(uint8_t *o, uint32_t v, int bw)
{
    int nbytes = (bw + 7) / 8;
    for (int i = 0; i < nbytes; i++)
        *o++ = (uint8_t)(v >> (8 * i));
    return o;
}

/* Pack 8 values of bw bits (values < 2^bw) into bw bytes.  Always inlined
 * and called with a constant bw (see PACK_GROUPS); the eight steps are
 * written out so that, with bw known, every shift and flush is resolved at
 * compile time. */
#define PACK_STEP(k)                                                           \
    acc |= (uint64_t)v[k] << bits;                                             \
    bits += bw;                                                                \
    if (bits >= 32) {                                                          \
        floe__put_le32(o, (uint32_t)acc);                                      \
        o += 4;                                                                \
        acc >>= 32;                                                            \
        bits -= 32;                                                            \
    }
#define PACK8(T)                                                               \
    static inline __attribute__((always_inline)) uint8_t *pack8_##T(           \
        const T *v, int bw, uint8_t *o)                                        \
    {                                                                          \
        uint64_t acc = 0;                                                      \
        int bits = 0;                                                          \
        PACK_STEP(0) PACK_STEP(1) PACK_STEP(2) PACK_STEP(3)                    \
        PACK_STEP(4) PACK_STEP(5) PACK_STEP(6) PACK_STEP(7)                    \
        for (; bits > 0; bits -= 8) {                                          \
            *o++ = (uint8_t)acc;                                               \
            acc >>= 8;                                                         \
        }                                                                      \
        return o;                                                              \
    }
PACK8(uint8_t)
PACK8(uint32_t)

/* `groups` groups of 8 values, with bw a compile-time constant per case. */
#define PACK_CASE(T, B)                                                        \
    case B:                                                                    \
        for (size_t g = 0; g < groups; g++)                                    \
            o = pack8_##T(v + 8 * g, B, o);                                    \
        return o;
#define PACK_GROUPS(T)                                                         \
    static uint8_t *pack_groups_##T(const T *v, size_t groups, int bw, uint8_t *o) \
    {                                                                          \
        switch (bw) {                                                          \
            PACK_CASE(T, 1) PACK_CASE(T, 2) PACK_CASE(T, 3) PACK_CASE(T, 4)    \
            PACK_CASE(T, 5) PACK_CASE(T, 6) PACK_CASE(T, 7) PACK_CASE(T, 8)    \
        }                                                                      \
        for (size_t g = 0; g < groups; g++)                                    \
            o = pack8_##T(v + 8 * g, bw, o);                                   \
        return o;                                                              \
    }
PACK_GROUPS(uint8_t)

static uint8_t *pack_groups_uint32_t(const uint32_t *v, size_t groups, int bw, uint8_t *o)
{
    switch (bw) {
        PACK_CASE(uint32_t, 1) PACK_CASE(uint32_t, 2) PACK_CASE(uint32_t, 3)
        PACK_CASE(uint32_t, 4) PACK_CASE(uint32_t, 5) PACK_CASE(uint32_t, 6)
        PACK_CASE(uint32_t, 7) PACK_CASE(uint32_t, 8) PACK_CASE(uint32_t, 9)
        PACK_CASE(uint32_t, 10) PACK_CASE(uint32_t, 11) PACK_CASE(uint32_t, 12)
        PACK_CASE(uint32_t, 13) PACK_CASE(uint32_t, 14) PACK_CASE(uint32_t, 15)
        PACK_CASE(uint32_t, 16) PACK_CASE(uint32_t, 17) PACK_CASE(uint32_t, 18)
        PACK_CASE(uint32_t, 19) PACK_CASE(uint32_t, 20)
    }
    for (size_t g = 0; g < groups; g++)
        o = pack8_uint32_t(v + 8 * g, bw, o);
    return o;
}

/* One bit-packed run of `count` values (a multiple of 8 except at the end,
 * where the last group is padded with zeros). */
#define EMIT_PACKED(T)                                                         \
    static uint8_t *emit_packed_##T(const T *v, size_t count, int bw, uint8_t *o) \
    {                                                                          \
        if (count == 0)                                                        \
            return o;                                                          \
        size_t groups = (count + 7) / 8;                                       \
        o = put_varint(o, (uint64_t)groups << 1 | 1);                          \
        size_t full = count / 8;                                               \
        o = pack_groups_##T(v, full, bw, o);                                   \
        if (count % 8) {                                                       \
            T last[8] = {0};                                                   \
            memcpy(last, v + 8 * full, (count % 8) * sizeof(T));               \
            o = pack8_##T(last, bw, o);                                        \
        }                                                                      \
        return o;                                                              \
    }
EMIT_PACKED(uint8_t)
EMIT_PACKED(uint32_t)

/* Whether the 8 values at v are all equal. */
static inline bool all8_uint8_t(const uint8_t *v)
{
    return floe__get_le64(v) == 0x0101010101010101ULL * v[0];
}

static inline bool all8_uint32_t(const uint32_t *v)
{
    unsigned ne = 0;
    for (int k = 1; k < 8; k++)
        ne |= v[k] != v[0];
    return ne == 0;
}

/* End of the run of values equal to v[i], from j on. */
static inline size_t run_end_uint8_t(const uint8_t *v, size_t j, size_t n, uint8_t x)
{
    uint64_t pat = 0x0101010101010101ULL * x;
    while (j + 8 <= n && floe__get_le64(v + j) == pat)
        j += 8;
    while (j < n && v[j] == x)
        j++;
    return j;
}

static inline size_t run_end_uint32_t(const uint32_t *v, size_t j, size_t n, uint32_t x)
{
    while (j < n && v[j] == x)
        j++;
    return j;
}

/* The values are walked in groups of 8 counted from the start of the
 * pending literals, so literals always form whole groups.  A group whose 8
 * values are equal starts an RLE run, extended as far as the value repeats;
 * every run of 15 or more equal values contains such a group, shorter runs
 * may stay in the literals (which is valid, only slightly less compact). */
#define RLE_ENCODE(T)                                                          \
    size_t floe__rle_encode_##T(const T *v, size_t n, int bw, uint8_t *out)    \
    {                                                                          \
        uint8_t *o = out;                                                      \
        size_t lit = 0, i = 0;                                                 \
        while (i + 8 <= n) {                                                   \
            if (!all8_##T(v + i)) {                                            \
                i += 8;                                                        \
                continue;                                                      \
            }                                                                  \
            size_t j = run_end_##T(v, i + 8, n, v[i]);                         \
            o = emit_packed_##T(v + lit, i - lit, bw, o);                      \
            o = put_varint(o, (uint64_t)(j - i) << 1);                         \
            o = put_value(o, v[i], bw);                                        \
            i = lit = j;                                                       \
        }                                                                      \
        o = emit_packed_##T(v + lit, n - lit, bw, o);                          \
        return (size_t)(o - out);                                              \
    }

/* The public names are floe__rle_encode_u8 / _u32. */
#define floe__rle_encode_uint8_t floe__rle_encode_u8
#define floe__rle_encode_uint32_t floe__rle_encode_u32
RLE_ENCODE(uint8_t)
RLE_ENCODE(uint32_t)

size_t floe__pack_bools(const uint8_t *v, size_t n, uint8_t *out)
{
    size_t full = n / 8;
    for (size_t g = 0; g < full; g++) {
        const uint8_t *p = v + 8 * g;
        uint8_t b = 0;
        for (int k = 0; k < 8; k++)
            b |= (uint8_t)((p[k] != 0) << k);
        out[g] = b;
    }
    if (n % 8) {
        uint8_t b = 0;
        for (size_t k = 0; k < n % 8; k++)
            b |= (uint8_t)((v[8 * full + k] != 0) << k);
        out[full] = b;
    }
    return (n + 7) / 8;
}
