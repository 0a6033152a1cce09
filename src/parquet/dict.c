/*
 * dict.c - the dictionary of one column chunk.
 *
 * Entries are kept PLAIN-encoded, in insertion order, in one buffer: that
 * buffer is the dictionary page.  Lookup is an open-addressing hash table
 * with linear probing, at most half full, whose slots carry the key itself
 * so a probe touches one cache line:
 *  - 4- and 8-byte values: the value and its entry index + 1 (0 = empty),
 *    hashed multiplicatively (Fibonacci hashing: the top bits of x * 2^64/phi);
 *    8-byte values use 8-byte slots (32-bit key) until one needs more than
 *    32 bits, which halves the table for the usual ids, amounts and counts;
 *  - byte arrays: the first 16 bytes (a value of at most 16 bytes packed
 *    whole, so short strings never touch the entry bytes), length and 32
 *    hash bits;
 *  - other widths (FLBA): entry index + 1, compared with memcmp.
 * Integer dictionaries whose values stay within a span of DENSE_MAX also
 * keep a direct map (value - base -> entry + 1), checked before hashing:
 * dates, small counts, flags and amounts then cost a subtraction and a load.
 * The map is made once the dictionary holds DENSE_FROM entries (a small
 * chunk's few values do not pay for it).
 */
#include "parquet/pq_internal.h"

#define MIN_SLOTS 64u         /* grown as entries come: a small chunk stays small */
#define DENSE_MAX ((size_t)1 << 15)
#define DENSE_FROM 32u        /* entries before a map: fewer are the hash table's */
#define FIB 0x9e3779b97f4a7c15ULL

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
    floe__free(d->slots4);
    floe__free(d->slots8);
    floe__free(d->bslots);
    floe__free(d->slots);
    floe__free(d->offsets);
    floe__free(d->dense);
    floe__buf_free(&d->values);
    floe__pq_dict_init(d, d->width);
}

static bool has_table(const floe__pq_dict *d)
{
    return d->slots4 || d->slots8 || d->bslots || d->slots;
}

void floe__pq_dict_reset(floe__pq_dict *d)
{
    size_t n = d->mask + 1;
    if (d->n && d->slots4)
        memset(d->slots4, 0, n * sizeof *d->slots4);
    if (d->n && d->slots8)
        memset(d->slots8, 0, n * sizeof *d->slots8);
    if (d->n && d->bslots)
        memset(d->bslots, 0, n * sizeof *d->bslots);
    if (d->n && d->slots)
        memset(d->slots, 0, n * sizeof *d->slots);
    d->n = 0;
    floe__buf_reset(&d->values);
    floe__free(d->dense);
    d->dense = NULL;
    d->dense_len = 0;
    d->no_dense = false;
}

static inline uint64_t mix64(uint64_t h)
{
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    h ^= h >> 32;
    return h;
}

static const uint64_t LOW[9] = {
    0, 0xffULL, 0xffffULL, 0xffffffULL, 0xffffffffULL, 0xffffffffffULL, 0xffffffffffffULL,
    0xffffffffffffffULL, ~0ULL,
};

/* Bytes [0, k) of p, k <= 8, little-endian and zero-padded. */
static inline uint64_t load_part(const uint8_t *p, size_t k)
{
    uint64_t v = 0;
    for (size_t i = 0; i < k; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint64_t hash_long(const uint8_t *p, size_t n)
{
    const uint64_t k2 = 0xbf58476d1ce4e5b9ULL;
    uint64_t h = (uint64_t)n * k2 ^ FIB;
    while (n >= 8) {
        uint64_t w = floe__get_le64(p);
        h = (h ^ (w * FIB)) * k2;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    return mix64((h ^ (load_part(p, n) * FIB)) * k2);
}

/* A byte string's first 16 bytes as two little-endian integers, zero-padded
 * (with the length they identify a string of at most 16 bytes), and its
 * hash.  key_hash_fast may read up to 16 bytes past x (the caller knows
 * they are there); key_hash reads only the string. */
static inline uint64_t short_hash(uint64_t k0, uint64_t k1, size_t n)
{
    return mix64((k0 * FIB) ^ (k1 * 0xbf58476d1ce4e5b9ULL) ^ n);
}

static inline __attribute__((always_inline)) uint64_t key_hash_fast(const uint8_t *x, size_t n,
                                                                    uint64_t *k0, uint64_t *k1)
{
    size_t a = n < 8 ? n : 8, b = n > 16 ? 8 : n > 8 ? n - 8 : 0;
    *k0 = floe__get_le64(x) & LOW[a];
    *k1 = floe__get_le64(x + 8) & LOW[b];
    return n <= 16 ? short_hash(*k0, *k1, n) : hash_long(x, n);
}

static uint64_t key_hash(const uint8_t *x, size_t n, uint64_t *k0, uint64_t *k1)
{
    if (n > 16) {
        *k0 = floe__get_le64(x);
        *k1 = floe__get_le64(x + 8);
        return hash_long(x, n);
    }
    *k0 = load_part(x, n < 8 ? n : 8);
    *k1 = n > 8 ? load_part(x + 8, n - 8) : 0;
    return short_hash(*k0, *k1, n);
}

uint64_t floe__pq_hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t k0, k1;
    return key_hash(p, n, &k0, &k1);
}

/* Hash of entry e of a dictionary of byte arrays or other widths. */
static uint64_t entry_hash(const floe__pq_dict *d, uint32_t e)
{
    if (d->width == 0) {
        const uint8_t *v = d->values.data + d->offsets[e];
        return floe__pq_hash_bytes(v + 4, floe__get_le32(v));
    }
    return floe__pq_hash_bytes(d->values.data + (size_t)e * d->width, d->width);
}

static inline size_t fib4(const floe__pq_dict *d, uint32_t x)
{
    return (size_t)(((uint64_t)x * FIB) >> d->shift);
}

static inline size_t fib8(const floe__pq_dict *d, uint64_t x)
{
    return (size_t)((x * FIB) >> d->shift);
}

/* Double the table (or create it) and re-insert every entry. */
static int grow(floe__pq_dict *d, floe_error *err)
{
    size_t old_n = has_table(d) ? d->mask + 1 : 0;
    size_t n = old_n ? old_n * 2 : MIN_SLOTS;
    bool narrow = d->width == 4 || (d->width == 8 && !d->wide);
    void *t = floe__calloc(n, narrow            ? sizeof *d->slots4
                              : d->width == 8 ? sizeof *d->slots8
                              : d->width == 0 ? sizeof *d->bslots
                                              : sizeof *d->slots);
    if (!t)
        return FLOE_OOM(err);
    d->mask = n - 1;
    d->shift = 64 - (unsigned)floe__bit_width(n - 1);
    if (narrow) {
        uint64_t *nw = t, *old = d->slots4;
        for (size_t s = 0; s < old_n; s++) {
            if (!old[s])
                continue;
            size_t i = fib4(d, (uint32_t)(old[s] >> 32));
            while (nw[i])
                i = (i + 1) & d->mask;
            nw[i] = old[s];
        }
        floe__free(old);
        d->slots4 = nw;
    } else if (d->width == 8) {
        floe__pq_slot8 *nw = t, *old = d->slots8;
        for (size_t s = 0; s < old_n; s++) {
            if (!old[s].entry)
                continue;
            size_t i = fib8(d, old[s].value);
            while (nw[i].entry)
                i = (i + 1) & d->mask;
            nw[i] = old[s];
        }
        floe__free(old);
        d->slots8 = nw;
    } else if (d->width == 0) {
        floe__pq_bslot *nw = t, *old = d->bslots;
        for (size_t s = 0; s < old_n; s++) {
            if (!old[s].entry)
                continue;
            size_t i = (size_t)entry_hash(d, (uint32_t)old[s].entry - 1) & d->mask;
            while (nw[i].entry)
                i = (i + 1) & d->mask;
            nw[i] = old[s];
        }
        floe__free(old);
        d->bslots = nw;
    } else {
        uint32_t *nw = t, *old = d->slots;
        for (size_t s = 0; s < old_n; s++) {
            if (!old[s])
                continue;
            size_t i = (size_t)entry_hash(d, old[s] - 1) & d->mask;
            while (nw[i])
                i = (i + 1) & d->mask;
            nw[i] = old[s];
        }
        floe__free(old);
        d->slots = nw;
    }
    return FLOE_OK;
}

static inline bool must_grow(const floe__pq_dict *d)
{
    return ((size_t)d->n + 1) * 2 > d->mask + 1;
}

/* Narrow slots (value << 32 | entry + 1) for values of width W (4, or 8
 * while they fit in 32 bits).  Returns at the first 8-byte value that does
 * not fit (*i tells where), with the table still narrow. */
/* Value k of an integer dictionary, sign-extended. */
static inline int64_t entry_value(const floe__pq_dict *d, uint32_t k)
{
    const uint8_t *v = d->values.data + (size_t)k * d->width;
    return d->width == 8 ? (int64_t)floe__get_le64(v) : (int64_t)(int32_t)floe__get_le32(v);
}

/* Entry e (just added) has value v: keep the direct map covering it, moving
 * and growing the map (twice the span needed) while the span stays within
 * DENSE_MAX, else give the map up for this chunk.  Spans are computed on
 * values shifted by 2^63 (unsigned, order-preserving), so nothing
 * overflows near the ends of the int64 range. */
#define BIAS ((uint64_t)1 << 63)

static int dense_add(floe__pq_dict *d, int64_t v, uint32_t e, floe_error *err)
{
    if (d->no_dense || (!d->dense && d->n < DENSE_FROM))
        return FLOE_OK;
    uint64_t u = (uint64_t)v + BIAS, base_u = (uint64_t)d->dense_base + BIAS;
    if (d->dense && u - base_u < d->dense_len) {
        d->dense[u - base_u] = e + 1;
        return FLOE_OK;
    }
    uint64_t lo = u, hi = u;
    if (d->dense) {
        uint64_t top = base_u + (d->dense_len - 1);
        lo = base_u < u ? base_u : u;
        hi = top > u ? top : u;
    }
    if (hi - lo >= DENSE_MAX) {
        floe__free(d->dense);
        d->dense = NULL;
        d->dense_len = 0;
        d->no_dense = true;
        return FLOE_OK;
    }
    uint64_t need = hi - lo + 1;
    size_t len = need * 2 < 256 ? 256 : need * 2 > DENSE_MAX ? DENSE_MAX : (size_t)need * 2;
    /* grow away from the side that was already covered, within the range */
    uint64_t nb = (d->dense && u < base_u) ? (hi >= len - 1 ? hi - (len - 1) : 0) : lo;
    if (nb > UINT64_MAX - (len - 1))
        nb = UINT64_MAX - (len - 1);
    uint32_t *t = floe__calloc(len, sizeof *t);
    if (!t)
        return FLOE_OOM(err);
    for (uint32_t k = 0; k <= e && k < d->n; k++) {
        uint64_t o = (uint64_t)entry_value(d, k) + BIAS - nb;
        if (o < len)
            t[o] = k + 1;
    }
    floe__free(d->dense);
    d->dense = t;
    d->dense_base = (int64_t)(nb - BIAS);
    d->dense_len = len;
    return FLOE_OK;
}

static inline __attribute__((always_inline)) int
encode_narrow(floe__pq_dict *d, const uint8_t *vals, size_t n, size_t w, size_t limit,
              uint32_t *idx, size_t *at, size_t *done, floe_error *err)
{
    if (!d->slots4)
        FLOE_FORWARD(grow(d, err));
    /* the table in locals: the stores to idx[] could alias *d */
    uint64_t *slots = d->slots4;
    size_t mask = d->mask;
    unsigned shift = d->shift;
    const uint32_t *dense = d->dense;
    uint64_t dbase = (uint64_t)d->dense_base, dlen = d->dense_len;
    size_t i = *at;
    for (; i < n; i++) {
        const uint8_t *v = vals + w * i;
        uint64_t x64 = w == 8 ? floe__get_le64(v) : floe__get_le32(v);
        uint64_t off = (w == 8 ? x64 : (uint64_t)(int64_t)(int32_t)x64) - dbase;
        if (off < dlen && dense[off]) {
            idx[i] = dense[off] - 1;
            continue;
        }
        if (x64 >> 32)
            break;
        uint32_t x = (uint32_t)x64;
        size_t s = (size_t)(((uint64_t)x * FIB) >> shift);
        uint64_t slot;
        while ((slot = slots[s]) != 0 && (uint32_t)(slot >> 32) != x)
            s = (s + 1) & mask;
        if (slot == 0) {
            if (d->values.len + w > limit) {
                *at = *done = i;
                return FLOE_OK;
            }
            if (must_grow(d)) {
                *at = i;
                FLOE_FORWARD(grow(d, err));
                slots = d->slots4;
                mask = d->mask;
                shift = d->shift;
                s = fib4(d, x);
                while (slots[s])
                    s = (s + 1) & mask;
            }
            FLOE_FORWARD(floe__buf_append(&d->values, v, w, err));
            slot = (uint64_t)x << 32 | ++d->n;
            slots[s] = slot;
            FLOE_FORWARD(dense_add(d, w == 8 ? (int64_t)x64 : (int64_t)(int32_t)x, d->n - 1,
                                   err));
            dense = d->dense;
            dbase = (uint64_t)d->dense_base;
            dlen = d->dense_len;
        }
        idx[i] = (uint32_t)slot - 1;
    }
    *at = i;
    if (i == n)
        *done = n;
    return FLOE_OK;
}

static int encode_w4(floe__pq_dict *d, const uint8_t *vals, size_t n, size_t limit,
                     uint32_t *idx, size_t *done, floe_error *err)
{
    size_t i = 0;
    return encode_narrow(d, vals, n, 4, limit, idx, &i, done, err);
}

/* Switch a width-8 dictionary to wide slots. */
static int widen(floe__pq_dict *d, floe_error *err)
{
    size_t n = d->slots4 ? d->mask + 1 : MIN_SLOTS;
    floe__pq_slot8 *t = floe__calloc(n, sizeof *t);
    if (!t)
        return FLOE_OOM(err);
    d->mask = n - 1;
    d->shift = 64 - (unsigned)floe__bit_width(n - 1);
    for (size_t s = 0; d->slots4 && s < n; s++) {
        uint64_t x = d->slots4[s];
        if (!x)
            continue;
        size_t i = fib8(d, x >> 32);
        while (t[i].entry)
            i = (i + 1) & d->mask;
        t[i].value = x >> 32;
        t[i].entry = (uint32_t)x;
    }
    floe__free(d->slots4);
    d->slots4 = NULL;
    d->slots8 = t;
    d->wide = true;
    return FLOE_OK;
}

/* Width 8: narrow while the values fit in 32 bits, then slots of value and
 * entry + 1. */
static int encode_w8(floe__pq_dict *d, const uint8_t *vals, size_t n, size_t limit,
                     uint32_t *idx, size_t *done, floe_error *err)
{
    size_t i = 0;
    if (!d->wide) {
        *done = SIZE_MAX;
        FLOE_FORWARD(encode_narrow(d, vals, n, 8, limit, idx, &i, done, err));
        if (*done != SIZE_MAX)
            return FLOE_OK;
        FLOE_FORWARD(widen(d, err));
    }
    if (!d->slots8)
        FLOE_FORWARD(grow(d, err));
    for (; i < n; i++) {
        uint64_t x = floe__get_le64(vals + 8 * i);
        if (d->dense) {
            uint64_t off = x - (uint64_t)d->dense_base;
            if (off < d->dense_len && d->dense[off]) {
                idx[i] = d->dense[off] - 1;
                continue;
            }
        }
        size_t s = fib8(d, x);
        floe__pq_slot8 *sl;
        while ((sl = &d->slots8[s])->entry && sl->value != x)
            s = (s + 1) & d->mask;
        if (!sl->entry) {
            if (d->values.len + 8 > limit) {
                *done = i;
                return FLOE_OK;
            }
            if (must_grow(d)) {
                FLOE_FORWARD(grow(d, err));
                s = fib8(d, x);
                while (d->slots8[s].entry)
                    s = (s + 1) & d->mask;
                sl = &d->slots8[s];
            }
            FLOE_FORWARD(floe__buf_append(&d->values, vals + 8 * i, 8, err));
            sl->value = x;
            sl->entry = ++d->n;
            FLOE_FORWARD(dense_add(d, (int64_t)x, d->n - 1, err));
        }
        idx[i] = (uint32_t)sl->entry - 1;
    }
    *done = n;
    return FLOE_OK;
}

/* Other fixed widths (FLBA): compared with memcmp. */
static int encode_wn(floe__pq_dict *d, const uint8_t *vals, size_t n, size_t limit,
                     uint32_t *idx, size_t *done, floe_error *err)
{
    size_t w = d->width;
    if (!d->slots)
        FLOE_FORWARD(grow(d, err));
    for (size_t i = 0; i < n; i++) {
        const uint8_t *x = vals + i * w;
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

/* Byte arrays: vals is u32 length + bytes per value, vals_len bytes. */
static int encode_bytes(floe__pq_dict *d, const uint8_t *vals, size_t vals_len, size_t n,
                        size_t limit, uint32_t *idx, size_t *done, floe_error *err)
{
    if (!d->bslots)
        FLOE_FORWARD(grow(d, err));
    const uint8_t *p = vals;
    const uint8_t *fast_end = vals_len >= 16 ? vals + vals_len - 16 : vals;
    floe__pq_bslot *slots = d->bslots;     /* in locals: idx[] stores could alias *d */
    size_t mask = d->mask;
    for (size_t i = 0; i < n; i++) {
        uint32_t len = floe__get_le32(p);
        const uint8_t *x = p + 4;
        p = x + len;
        uint64_t k0, k1;
        uint64_t h = x <= fast_end ? key_hash_fast(x, len, &k0, &k1) : key_hash(x, len, &k0, &k1);
        uint64_t meta = (uint64_t)len << 32 | (uint32_t)(h >> 32);
        size_t s = (size_t)h & mask;
        floe__pq_bslot *sl;
        while ((sl = &slots[s])->entry) {
            if (sl->k0 == k0 && sl->meta == meta && sl->k1 == k1 &&
                (len <= 16 ||
                 memcmp(d->values.data + d->offsets[sl->entry - 1] + 20, x + 16, len - 16) == 0))
                break;
            s = (s + 1) & mask;
        }
        if (!sl->entry) {
            if (d->values.len + 4 + (size_t)len > limit) {
                *done = i;
                return FLOE_OK;
            }
            if (must_grow(d)) {
                FLOE_FORWARD(grow(d, err));
                slots = d->bslots;
                mask = d->mask;
                s = (size_t)h & mask;
                while (slots[s].entry)
                    s = (s + 1) & mask;
                sl = &slots[s];
            }
            FLOE_FORWARD(add_offset(d, (uint32_t)d->values.len, err));
            FLOE_FORWARD(floe__buf_append(&d->values, x - 4, 4 + (size_t)len, err));
            sl->k0 = k0;
            sl->k1 = k1;
            sl->meta = meta;
            sl->entry = ++d->n;
        }
        idx[i] = (uint32_t)sl->entry - 1;
    }
    *done = n;
    return FLOE_OK;
}

int floe__pq_dict_encode(floe__pq_dict *d, const uint8_t *vals, size_t vals_len, size_t n,
                         size_t limit, uint32_t *idx, size_t *done, floe_error *err)
{
    /* Offsets into the dictionary page are 32-bit. */
    if (limit > UINT32_MAX)
        limit = UINT32_MAX;
    switch (d->width) {
    case 0: return encode_bytes(d, vals, vals_len, n, limit, idx, done, err);
    case 4: return encode_w4(d, vals, n, limit, idx, done, err);
    case 8: return encode_w8(d, vals, n, limit, idx, done, err);
    default: return encode_wn(d, vals, n, limit, idx, done, err);
    }
}
