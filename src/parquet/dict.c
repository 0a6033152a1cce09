/*
 * dict.c - the dictionary of one column chunk.
 *
 * Entries are kept PLAIN-encoded, in insertion order, in one buffer: that
 * buffer is the dictionary page.  Lookup is an open-addressing hash table
 * with linear probing holding entry index + 1 (0 = empty), at most half
 * full.  For byte arrays each slot also keeps 32 more bits of the hash, so a
 * probe only touches the entry bytes when those bits match.
 *
 * The encode loops are specialised by value width (4, 8, other fixed widths,
 * byte arrays) so the hot path has no per-value dispatch, and remember the
 * previous value, which makes runs of equal values (sorted keys, repeated
 * flags) cost one compare.
 */
#include "parquet/pq_internal.h"

#define MIN_SLOTS 1024u

void floe__pq_dict_init(floe__pq_dict *d, uint32_t width)
{
    memset(d, 0, sizeof *d);
    d->width = width;
    floe__buf_init(&d->values, 0);
}

void floe__pq_dict_free(floe__pq_dict *d)
{
    if (!d)
        return;
    floe__free(d->slots);
    floe__free(d->hashes);
    floe__free(d->offsets);
    floe__buf_free(&d->values);
    floe__pq_dict_init(d, d->width);
}

void floe__pq_dict_reset(floe__pq_dict *d)
{
    if (d->slots && d->n)
        memset(d->slots, 0, (d->mask + 1) * sizeof *d->slots);
    d->n = 0;
    floe__buf_reset(&d->values);
}

static inline uint64_t mix64(uint64_t h)
{
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    h ^= h >> 32;
    return h;
}

static inline uint64_t hash4(uint32_t x) { return mix64((uint64_t)x * 0x9e3779b97f4a7c15ULL); }
static inline uint64_t hash8(uint64_t x) { return mix64(x * 0x9e3779b97f4a7c15ULL); }

uint64_t floe__pq_hash_bytes(const uint8_t *p, size_t n)
{
    const uint64_t k1 = 0x9e3779b97f4a7c15ULL, k2 = 0xbf58476d1ce4e5b9ULL;
    uint64_t h = (uint64_t)n * k2 ^ k1;
    while (n >= 8) {
        uint64_t w = floe__get_le64(p);
        h = (h ^ (w * k1)) * k2;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, p, n);
        h = (h ^ (w * k1)) * k2;
    }
    return mix64(h);
}

static uint64_t entry_hash(const floe__pq_dict *d, uint32_t e)
{
    const uint8_t *v = d->values.data;
    switch (d->width) {
    case 4: return hash4(floe__get_le32(v + (size_t)e * 4));
    case 8: return hash8(floe__get_le64(v + (size_t)e * 8));
    default: return floe__pq_hash_bytes(v + (size_t)e * d->width, d->width);
    }
}

/* Double the table (or create it) and re-insert every entry. */
static int grow(floe__pq_dict *d, floe_error *err)
{
    size_t old_n = d->slots ? d->mask + 1 : 0;
    size_t n = old_n ? old_n * 2 : MIN_SLOTS;
    uint32_t *slots = floe__calloc(n, sizeof *slots);
    uint32_t *hashes = d->width == 0 ? floe__calloc(n, sizeof *hashes) : NULL;
    if (!slots || (d->width == 0 && !hashes)) {
        floe__free(slots);
        floe__free(hashes);
        return FLOE_OOM(err);
    }
    size_t mask = n - 1;
    for (size_t s = 0; s < old_n; s++) {
        uint32_t e = d->slots[s];
        if (!e)
            continue;
        size_t t;
        if (d->width == 0) {
            /* the slot index and the stored bits together are the hash */
            t = (size_t)floe__pq_hash_bytes(d->values.data + d->offsets[e - 1] + 4,
                                            floe__get_le32(d->values.data + d->offsets[e - 1]));
        } else {
            t = (size_t)entry_hash(d, e - 1);
        }
        t &= mask;
        while (slots[t])
            t = (t + 1) & mask;
        slots[t] = e;
        if (hashes)
            hashes[t] = d->hashes[s];
    }
    floe__free(d->slots);
    floe__free(d->hashes);
    d->slots = slots;
    d->hashes = hashes;
    d->mask = mask;
    return FLOE_OK;
}

static inline bool must_grow(const floe__pq_dict *d)
{
    return !d->slots || ((size_t)d->n + 1) * 2 > d->mask + 1;
}

/* Fixed widths 4 and 8: the value is loaded as an integer. */
#define ENCODE_INT(NAME, T, W, LOAD, HASH)                                     \
    static int NAME(floe__pq_dict *d, const uint8_t *vals, size_t n, size_t limit, \
                    uint32_t *idx, size_t *done, floe_error *err)              \
    {                                                                          \
        T last = 0;                                                            \
        uint32_t last_idx = UINT32_MAX;                                        \
        for (size_t i = 0; i < n; i++) {                                       \
            T x = LOAD(vals + i * W);                                          \
            if (x == last && last_idx != UINT32_MAX) {                         \
                idx[i] = last_idx;                                             \
                continue;                                                      \
            }                                                                  \
            if (!d->slots)                                                     \
                FLOE_FORWARD(grow(d, err));                                    \
            size_t s = (size_t)HASH(x) & d->mask;                              \
            for (;;) {                                                         \
                uint32_t e = d->slots[s];                                      \
                if (e == 0)                                                    \
                    break;                                                     \
                if (LOAD(d->values.data + (size_t)(e - 1) * W) == x) {         \
                    last_idx = e - 1;                                          \
                    goto found;                                                \
                }                                                              \
                s = (s + 1) & d->mask;                                         \
            }                                                                  \
            if (d->values.len + W > limit) {                                   \
                *done = i;                                                     \
                return FLOE_OK;                                                \
            }                                                                  \
            if (must_grow(d)) {                                                \
                FLOE_FORWARD(grow(d, err));                                    \
                s = (size_t)HASH(x) & d->mask;                                 \
                while (d->slots[s])                                            \
                    s = (s + 1) & d->mask;                                     \
            }                                                                  \
            FLOE_FORWARD(floe__buf_append(&d->values, vals + i * W, W, err));  \
            d->slots[s] = ++d->n;                                              \
            last_idx = d->n - 1;                                               \
        found:                                                                 \
            last = x;                                                          \
            idx[i] = last_idx;                                                 \
        }                                                                      \
        *done = n;                                                             \
        return FLOE_OK;                                                        \
    }
ENCODE_INT(encode_w4, uint32_t, 4, floe__get_le32, hash4)
ENCODE_INT(encode_w8, uint64_t, 8, floe__get_le64, hash8)

/* Other fixed widths (FLBA): compared with memcmp. */
static int encode_wn(floe__pq_dict *d, const uint8_t *vals, size_t n, size_t limit,
                     uint32_t *idx, size_t *done, floe_error *err)
{
    size_t w = d->width;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *x = vals + i * w;
        if (i > 0 && memcmp(x, x - w, w) == 0) {
            idx[i] = idx[i - 1];
            continue;
        }
        if (!d->slots)
            FLOE_FORWARD(grow(d, err));
        uint64_t h = floe__pq_hash_bytes(x, w);
        size_t s = (size_t)h & d->mask;
        uint32_t e;
        while ((e = d->slots[s]) != 0) {
            if (memcmp(d->values.data + (size_t)(e - 1) * w, x, w) == 0)
                break;
            s = (s + 1) & d->mask;
        }
        if (e == 0) {
            if (d->values.len + w > limit) {
                *done = i;
                return FLOE_OK;
            }
            if (must_grow(d)) {
                FLOE_FORWARD(grow(d, err));
                s = (size_t)h & d->mask;
                while (d->slots[s])
                    s = (s + 1) & d->mask;
            }
            FLOE_FORWARD(floe__buf_append(&d->values, x, w, err));
            e = d->slots[s] = ++d->n;
        }
        idx[i] = e - 1;
    }
    *done = n;
    return FLOE_OK;
}

static int add_offset(floe__pq_dict *d, uint32_t off, floe_error *err)
{
    if (d->n == d->offsets_cap) {
        size_t cap = d->offsets_cap ? d->offsets_cap * 2 : 256;
        uint32_t *p = floe__realloc(d->offsets, cap * sizeof *p);
        if (!p)
            return FLOE_OOM(err);
        d->offsets = p;
        d->offsets_cap = cap;
    }
    d->offsets[d->n] = off;
    return FLOE_OK;
}

/* Byte arrays: vals is u32 length + bytes per value. */
static int encode_bytes(floe__pq_dict *d, const uint8_t *vals, size_t n, size_t limit,
                        uint32_t *idx, size_t *done, floe_error *err)
{
    const uint8_t *p = vals;
    const uint8_t *last = NULL;
    uint32_t last_len = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t len = floe__get_le32(p);
        const uint8_t *x = p + 4;
        p = x + len;
        if (last && len == last_len && memcmp(x, last, len) == 0) {
            idx[i] = idx[i - 1];
            continue;
        }
        last = x;
        last_len = len;
        if (!d->slots)
            FLOE_FORWARD(grow(d, err));
        uint64_t h = floe__pq_hash_bytes(x, len);
        uint32_t tag = (uint32_t)(h >> 32);
        size_t s = (size_t)h & d->mask;
        uint32_t e;
        while ((e = d->slots[s]) != 0) {
            if (d->hashes[s] == tag) {
                const uint8_t *ev = d->values.data + d->offsets[e - 1];
                if (floe__get_le32(ev) == len && memcmp(ev + 4, x, len) == 0)
                    break;
            }
            s = (s + 1) & d->mask;
        }
        if (e == 0) {
            if (d->values.len + 4 + (size_t)len > limit) {
                *done = i;
                return FLOE_OK;
            }
            if (must_grow(d)) {
                FLOE_FORWARD(grow(d, err));
                s = (size_t)h & d->mask;
                while (d->slots[s])
                    s = (s + 1) & d->mask;
            }
            FLOE_FORWARD(add_offset(d, (uint32_t)d->values.len, err));
            FLOE_FORWARD(floe__buf_append(&d->values, x - 4, 4 + (size_t)len, err));
            d->hashes[s] = tag;
            e = d->slots[s] = ++d->n;
        }
        idx[i] = e - 1;
    }
    *done = n;
    return FLOE_OK;
}

int floe__pq_dict_encode(floe__pq_dict *d, const uint8_t *vals, size_t n, size_t limit,
                         uint32_t *idx, size_t *done, floe_error *err)
{
    /* Offsets into the dictionary page are 32-bit. */
    if (limit > UINT32_MAX)
        limit = UINT32_MAX;
    switch (d->width) {
    case 0: return encode_bytes(d, vals, n, limit, idx, done, err);
    case 4: return encode_w4(d, vals, n, limit, idx, done, err);
    case 8: return encode_w8(d, vals, n, limit, idx, done, err);
    default: return encode_wn(d, vals, n, limit, idx, done, err);
    }
}
