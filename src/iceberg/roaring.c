/*
 * roaring.c - floe__posbitmap, a set of 64-bit row positions in Roaring
 * form, and its portable 64-bit serialization (the vector inside an
 * Iceberg deletion vector).
 *
 * Positions are split into a 48-bit container key (pos >> 16) and a 16-bit
 * offset.  A container is one of
 *   ARRAY   sorted offsets, at most 4096 of them (2 bytes a position);
 *   BITMAP  65536 bits (more than 4096 positions);
 *   RUN     sorted (start, length - 1) pairs, as read from a serialized
 *           run container: kept so a few bytes of input never become 8 KiB
 *           of memory; a run container is expanded (to an array or a
 *           bitmap) the first time a position is added to it.
 * Containers are kept sorted by key; the last container added to is
 * cached, so ascending adds are O(1).
 *
 * Serialization groups containers by the high 32 bits of their key into
 * 32-bit Roaring bitmaps (RoaringFormatSpec "portable" layout: cookie,
 * descriptive header, offsets, containers) preceded by a 64-bit count of
 * buckets and each bucket's 32-bit key, all little-endian.  Each container
 * is written as whichever of array, bitmap or run is smallest (what
 * Roaring's runOptimize does, and Java Iceberg before writing a DV).
 * Empty buckets (Java writes one for every key below the highest) are
 * accepted when reading and never written.
 */
#include <stdlib.h>

#include "iceberg/puffin_internal.h"

enum { K_ARRAY = 0, K_BITMAP = 1, K_RUN = 2 };
#define ARRAY_MAX 4096
#define BITMAP_WORDS 1024
#define COOKIE_NO_RUN 12346
#define COOKIE_RUN 12347

/* The kind of a container: bits set = bitmap; cap == 0 with an array = runs. */
static int kind(const floe__pb_container *c)
{
    if (c->bits)
        return K_BITMAP;
    return c->cap == UINT32_MAX ? K_RUN : K_ARRAY;
}

/* A run container keeps in `array` the number of runs (at most 32768),
 * then that many (start, length - 1) pairs; `cap` is UINT32_MAX. */
static uint32_t run_count(const floe__pb_container *c, const uint16_t **runs)
{
    *runs = c->array + 1;
    return c->array[0];
}

static void container_free(floe__pb_container *c)
{
    floe__free(c->array);
    floe__free(c->bits);
}

void floe__posbitmap_clear(floe__posbitmap *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++)
        container_free(&b->c[i]);
    floe__free(b->c);
    memset(b, 0, sizeof *b);
}

void floe__posbitmap_move(floe__posbitmap *dst, floe__posbitmap *src)
{
    *dst = *src;
    memset(src, 0, sizeof *src);
}

/* ---- finding and making containers ------------------------------------------------- */

/* Index of the container with `key`, or where it would go (*found false). */
static size_t find(const floe__posbitmap *b, uint64_t key, bool *found)
{
    if (b->last < b->n && b->c[b->last].key == key) {
        *found = true;
        return b->last;
    }
    if (b->n && b->c[b->n - 1].key < key) {
        *found = false;
        return b->n;
    }
    size_t lo = 0, hi = b->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b->c[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < b->n && b->c[lo].key == key;
    return lo;
}

static int insert_container(floe__posbitmap *b, size_t at, uint64_t key, floe_error *err)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4;
        FLOE_RETURN_IF(cap > SIZE_MAX / sizeof *b->c / 2, err, FLOE_ELIMIT, "too many positions");
        floe__pb_container *c = floe__realloc(b->c, cap * sizeof *c);
        if (!c)
            return FLOE_OOM(err);
        b->c = c;
        b->cap = cap;
    }
    memmove(b->c + at + 1, b->c + at, (b->n - at) * sizeof *b->c);
    b->c[at] = (floe__pb_container){.key = key};
    b->n++;
    return FLOE_OK;
}

/* ---- one container -------------------------------------------------------------------- */

static bool bit_get(const uint64_t *w, uint32_t v) { return (w[v >> 6] >> (v & 63)) & 1; }
static void bit_set(uint64_t *w, uint32_t v) { w[v >> 6] |= (uint64_t)1 << (v & 63); }

/* Expand a run container into a bitmap (then an array when small). */
static int materialize(floe__pb_container *c, floe_error *err)
{
    const uint16_t *runs;
    uint32_t nr = run_count(c, &runs);
    uint64_t *bits = floe__calloc(BITMAP_WORDS, sizeof *bits);
    if (!bits)
        return FLOE_OOM(err);
    for (uint32_t r = 0; r < nr; r++)
        for (uint32_t v = runs[2 * r]; v <= (uint32_t)runs[2 * r] + runs[2 * r + 1]; v++)
            bit_set(bits, v);
    floe__free(c->array);
    c->array = NULL;
    c->cap = 0;
    c->bits = bits;
    if (c->card > ARRAY_MAX)
        return FLOE_OK;
    uint16_t *a = floe__malloc(c->card * sizeof *a);
    if (!a)
        return FLOE_OOM(err);
    uint32_t k = 0;
    for (uint32_t v = 0; v < 65536; v++)
        if (bit_get(bits, v))
            a[k++] = (uint16_t)v;
    floe__free(bits);
    c->bits = NULL;
    c->array = a;
    c->cap = c->card;
    return FLOE_OK;
}

static int array_to_bitmap(floe__pb_container *c, floe_error *err)
{
    uint64_t *bits = floe__calloc(BITMAP_WORDS, sizeof *bits);
    if (!bits)
        return FLOE_OOM(err);
    for (uint32_t i = 0; i < c->card; i++)
        bit_set(bits, c->array[i]);
    floe__free(c->array);
    c->array = NULL;
    c->cap = 0;
    c->bits = bits;
    return FLOE_OK;
}

/* Binary search in a sorted array: index of v or of where it goes. */
static uint32_t array_find(const uint16_t *a, uint32_t n, uint16_t v, bool *found)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < n && a[lo] == v;
    return lo;
}

/* Add v; *added tells whether it was new. */
static int container_add(floe__pb_container *c, uint16_t v, bool *added, floe_error *err)
{
    *added = false;
    if (kind(c) == K_RUN)
        FLOE_FORWARD(materialize(c, err));
    if (c->bits) {
        if (bit_get(c->bits, v))
            return FLOE_OK;
        bit_set(c->bits, v);
        c->card++;
        *added = true;
        return FLOE_OK;
    }
    bool found = false;
    uint32_t at = c->card && c->array[c->card - 1] < v ? c->card
                                                        : array_find(c->array, c->card, v, &found);
    if (found)
        return FLOE_OK;
    if (c->card == ARRAY_MAX) {
        FLOE_FORWARD(array_to_bitmap(c, err));
        return container_add(c, v, added, err);
    }
    if (c->card == c->cap) {
        uint32_t cap = c->cap ? c->cap * 2 : 4;
        if (cap > ARRAY_MAX)
            cap = ARRAY_MAX;
        uint16_t *a = floe__realloc(c->array, cap * sizeof *a);
        if (!a)
            return FLOE_OOM(err);
        c->array = a;
        c->cap = cap;
    }
    memmove(c->array + at + 1, c->array + at, (c->card - at) * sizeof *c->array);
    c->array[at] = v;
    c->card++;
    *added = true;
    return FLOE_OK;
}

static bool container_contains(const floe__pb_container *c, uint16_t v)
{
    bool found = false;
    switch (kind(c)) {
    case K_BITMAP:
        return bit_get(c->bits, v);
    case K_ARRAY:
        array_find(c->array, c->card, v, &found);
        return found;
    default: {
        const uint16_t *runs;
        uint32_t nr = run_count(c, &runs), lo = 0, hi = nr;
        while (lo < hi) {                    /* the last run starting at or before v */
            uint32_t mid = lo + (hi - lo) / 2;
            if (runs[2 * mid] <= v)
                lo = mid + 1;
            else
                hi = mid;
        }
        return lo > 0 && v <= (uint32_t)runs[2 * (lo - 1)] + runs[2 * (lo - 1) + 1];
    }
    }
}

/* ---- the set -------------------------------------------------------------------------- */

int floe__posbitmap_add(floe__posbitmap *b, uint64_t pos, floe_error *err)
{
    FLOE_RETURN_IF(pos > FLOE_POS_MAX, err, FLOE_EINVAL, "position %llu is out of range",
                   (unsigned long long)pos);
    uint64_t key = pos >> 16;
    bool found;
    size_t at = find(b, key, &found);
    if (!found)
        FLOE_FORWARD(insert_container(b, at, key, err));
    bool added = false;
    int rc = container_add(&b->c[at], (uint16_t)(pos & 0xFFFF), &added, err);
    if (rc != FLOE_OK && b->c[at].card == 0) {       /* do not leave an empty container */
        container_free(&b->c[at]);
        memmove(b->c + at, b->c + at + 1, (b->n - at - 1) * sizeof *b->c);
        b->n--;
    }
    FLOE_FORWARD(rc);
    b->last = at;
    b->count += added;
    return FLOE_OK;
}

bool floe__posbitmap_contains(const floe__posbitmap *b, uint64_t pos)
{
    if (pos > FLOE_POS_MAX)
        return false;
    bool found;
    size_t at = find(b, pos >> 16, &found);
    return found && container_contains(&b->c[at], (uint16_t)(pos & 0xFFFF));
}

int floe__posbitmap_or(floe__posbitmap *dst, const floe__posbitmap *src, floe_error *err)
{
    floe__posbitmap_iter it = {src, 0, 0, 0};
    uint64_t pos;
    while (floe__posbitmap_next(&it, &pos))
        FLOE_FORWARD(floe__posbitmap_add(dst, pos, err));
    return FLOE_OK;
}

/* ---- iteration ------------------------------------------------------------------------ */

/* The next value of container c at or after the iterator's place, if any. */
static bool container_next(const floe__pb_container *c, floe__posbitmap_iter *it, uint32_t *v)
{
    switch (kind(c)) {
    case K_ARRAY:
        if (it->i >= c->card)
            return false;
        *v = c->array[it->i++];
        return true;
    case K_BITMAP:
        while (it->i < 65536) {
            uint64_t w = c->bits[it->i >> 6] >> (it->i & 63);
            if (w) {
                it->i += (uint32_t)__builtin_ctzll(w);
                *v = it->i++;
                return true;
            }
            it->i = (it->i | 63) + 1;
        }
        return false;
    default: {
        const uint16_t *runs;
        uint32_t nr = run_count(c, &runs);
        if (it->r >= nr)
            return false;
        *v = runs[2 * it->r] + it->i;
        if (it->i++ == runs[2 * it->r + 1]) {
            it->r++;
            it->i = 0;
        }
        return true;
    }
    }
}

bool floe__posbitmap_next(floe__posbitmap_iter *it, uint64_t *pos)
{
    while (it->ci < it->b->n) {
        const floe__pb_container *c = &it->b->c[it->ci];
        uint32_t v;
        if (container_next(c, it, &v)) {
            *pos = (c->key << 16) | v;
            return true;
        }
        it->ci++;
        it->i = it->r = 0;
    }
    return false;
}

void floe__posbitmap_seq_init(floe__posbitmap_seq *q, const floe__posbitmap *b)
{
    static const floe__posbitmap empty = {0};
    q->it = (floe__posbitmap_iter){b ? b : &empty, 0, 0, 0};
    q->more = floe__posbitmap_next(&q->it, &q->next);
}

/* ---- serialization ---------------------------------------------------------------------- */

static int put16(floe__buf *o, uint32_t v, floe_error *err)
{
    uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    return floe__buf_append(o, b, 2, err);
}

static int put32(floe__buf *o, uint32_t v, floe_error *err)
{
    uint8_t b[4];
    floe__put_le32(b, v);
    return floe__buf_append(o, b, 4, err);
}

/* Runs of consecutive values in a container. */
static uint32_t count_runs(const floe__pb_container *c)
{
    const uint16_t *runs;
    if (kind(c) == K_RUN)
        return run_count(c, &runs);
    floe__pb_container low = *c;             /* iterate the low 16 bits only */
    low.key = 0;
    floe__posbitmap one = {.c = &low, .n = 1};
    floe__posbitmap_iter it = {&one, 0, 0, 0};
    uint64_t v, prev = 0;
    uint32_t n = 0;
    for (bool first = true; floe__posbitmap_next(&it, &v); first = false, prev = v)
        n += first || v != prev + 1;
    return n;
}

/* The kind a container is written as (the smallest) and its size in bytes. */
static int written_kind(const floe__pb_container *c, uint32_t nruns, size_t *size)
{
    size_t plain = c->card > ARRAY_MAX ? 8192 : (size_t)c->card * 2;
    size_t run = 2 + (size_t)nruns * 4;
    *size = run < plain ? run : plain;
    return run < plain ? K_RUN : c->card > ARRAY_MAX ? K_BITMAP : K_ARRAY;
}

static int put_container(floe__buf *o, const floe__pb_container *c, int k, uint32_t nruns,
                         floe_error *err)
{
    floe__pb_container low = *c;             /* iterate the low 16 bits only */
    low.key = 0;
    floe__posbitmap one = {.c = &low, .n = 1};
    floe__posbitmap_iter it = {&one, 0, 0, 0};
    uint64_t v, start = 0, prev = 0;
    if (k == K_BITMAP) {
        uint64_t words[BITMAP_WORDS] = {0};
        while (floe__posbitmap_next(&it, &v))
            bit_set(words, (uint32_t)v);
        return floe__buf_append(o, words, sizeof words, err);    /* little-endian host */
    }
    if (k == K_ARRAY) {
        FLOE_FORWARD(floe__buf_reserve(o, (size_t)c->card * 2, err));
        while (floe__posbitmap_next(&it, &v))
            FLOE_FORWARD(put16(o, (uint32_t)v, err));
        return FLOE_OK;
    }
    FLOE_FORWARD(put16(o, nruns, err));
    for (bool first = true; floe__posbitmap_next(&it, &v); first = false, prev = v) {
        if (!first && v == prev + 1)
            continue;
        if (!first) {
            FLOE_FORWARD(put16(o, (uint32_t)start, err));
            FLOE_FORWARD(put16(o, (uint32_t)(prev - start), err));
        }
        start = v;
    }
    FLOE_FORWARD(put16(o, (uint32_t)start, err));
    return put16(o, (uint32_t)(prev - start), err);
}

/* One 32-bit Roaring bitmap of the containers c[0..n) (n <= 65536). */
static int put_bucket(floe__buf *o, const floe__pb_container *c, size_t n, floe_error *err)
{
    uint32_t *runs = floe__malloc(n * sizeof *runs);
    uint8_t *kinds = floe__malloc(n);
    int rc = runs && kinds ? FLOE_OK : FLOE_OOM(err);
    bool any_run = false;
    size_t body = 0, sz;
    for (size_t i = 0; rc == FLOE_OK && i < n; i++) {
        runs[i] = count_runs(&c[i]);
        kinds[i] = (uint8_t)written_kind(&c[i], runs[i], &sz);
        any_run = any_run || kinds[i] == K_RUN;
        body += sz;
    }
    bool offsets = !any_run || n >= 4;
    size_t header = (any_run ? 4 + (n + 7) / 8 : 8) + 4 * n + (offsets ? 4 * n : 0);
    if (rc == FLOE_OK && header + body > UINT32_MAX)
        rc = floe__err_set(err, FLOE_ELIMIT, "a deletion vector bucket is too large");
    if (rc == FLOE_OK && any_run) {
        rc = put32(o, COOKIE_RUN | (uint32_t)(n - 1) << 16, err);
        for (size_t i = 0; rc == FLOE_OK && i < (n + 7) / 8; i++) {
            uint8_t flags = 0;
            for (size_t j = 0; j < 8 && i * 8 + j < n; j++)
                flags |= (uint8_t)((kinds[i * 8 + j] == K_RUN) << j);
            rc = floe__buf_putc(o, flags, err);
        }
    } else if (rc == FLOE_OK) {
        rc = put32(o, COOKIE_NO_RUN, err);
        if (rc == FLOE_OK)
            rc = put32(o, (uint32_t)n, err);
    }
    for (size_t i = 0; rc == FLOE_OK && i < n; i++) {
        rc = put16(o, (uint32_t)(c[i].key & 0xFFFF), err);
        if (rc == FLOE_OK)
            rc = put16(o, c[i].card - 1, err);
    }
    for (size_t i = 0, at = header; rc == FLOE_OK && offsets && i < n; i++) {
        rc = put32(o, (uint32_t)at, err);
        written_kind(&c[i], runs[i], &sz);
        at += sz;
    }
    for (size_t i = 0; rc == FLOE_OK && i < n; i++)
        rc = put_container(o, &c[i], kinds[i], runs[i], err);
    floe__free(runs);
    floe__free(kinds);
    return rc;
}

int floe__posbitmap_serialize(const floe__posbitmap *b, floe__buf *out, floe_error *err)
{
    size_t buckets = 0;
    for (size_t i = 0; i < b->n; i++)
        buckets += i == 0 || (b->c[i].key >> 16) != (b->c[i - 1].key >> 16);
    uint8_t cnt[8];
    floe__put_le64(cnt, buckets);
    FLOE_FORWARD(floe__buf_append(out, cnt, 8, err));
    for (size_t i = 0; i < b->n;) {
        size_t j = i;
        while (j < b->n && (b->c[j].key >> 16) == (b->c[i].key >> 16))
            j++;
        FLOE_FORWARD(put32(out, (uint32_t)(b->c[i].key >> 16), err));
        FLOE_FORWARD(put_bucket(out, &b->c[i], j - i, err));
        i = j;
    }
    return FLOE_OK;
}

/* ---- deserialization ---------------------------------------------------------------------- */

typedef struct rd {
    const uint8_t *p;
    size_t n, at;
    floe_error *err;
} rd;

static int bad(rd *r, const char *why)
{
    return floe__err_set(r->err, FLOE_EFORMAT, "deletion vector bitmap: %s (at byte %zu)", why,
                         r->at);
}

static bool take(rd *r, size_t k, const uint8_t **p)
{
    if (r->n - r->at < k)
        return false;
    *p = r->p + r->at;
    r->at += k;
    return true;
}

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* A serialized run container into c (runs sorted, disjoint, within 16 bits). */
static int read_runs(rd *r, floe__pb_container *c, uint32_t card)
{
    const uint8_t *p;
    if (!take(r, 2, &p))
        return bad(r, "truncated run container");
    uint32_t nr = le16(p);
    if (nr == 0 || nr > 32768 || !take(r, (size_t)nr * 4, &p))
        return bad(r, "bad or truncated run container");
    c->array = floe__malloc((1 + (size_t)nr * 2) * sizeof *c->array);
    if (!c->array)
        return FLOE_OOM(r->err);
    c->cap = UINT32_MAX;
    c->array[0] = (uint16_t)nr;
    uint64_t total = 0, next = 0;
    for (uint32_t i = 0; i < nr; i++) {
        uint32_t start = le16(p + 4 * i), len = le16(p + 4 * i + 2);
        if (start < next || start + len > 65535)
            return bad(r, "run container runs overlap, are unsorted or overflow");
        c->array[1 + 2 * i] = (uint16_t)start;
        c->array[2 + 2 * i] = (uint16_t)len;
        total += len + 1;
        next = (uint64_t)start + len + 1;
    }
    c->card = (uint32_t)total;
    return total == card ? FLOE_OK : bad(r, "run container cardinality differs from its header");
}

static int read_plain(rd *r, floe__pb_container *c, uint32_t card)
{
    const uint8_t *p;
    if (card > ARRAY_MAX) {
        if (!take(r, 8192, &p))
            return bad(r, "truncated bitmap container");
        c->bits = floe__malloc(8192);
        if (!c->bits)
            return FLOE_OOM(r->err);
        memcpy(c->bits, p, 8192);
        uint64_t pop = 0;
        for (int i = 0; i < BITMAP_WORDS; i++)
            pop += (uint64_t)__builtin_popcountll(c->bits[i]);
        c->card = (uint32_t)pop;
        return pop == card ? FLOE_OK : bad(r, "bitmap container cardinality differs");
    }
    if (!take(r, (size_t)card * 2, &p))
        return bad(r, "truncated array container");
    c->array = floe__malloc((size_t)card * sizeof *c->array);
    if (!c->array)
        return FLOE_OOM(r->err);
    c->cap = card;
    for (uint32_t i = 0; i < card; i++) {
        c->array[i] = le16(p + 2 * i);
        if (i && c->array[i] <= c->array[i - 1])
            return bad(r, "array container values are not strictly increasing");
    }
    c->card = card;
    return FLOE_OK;
}

/* The cookie and sizes of one 32-bit bitmap. */
static int read_header(rd *r, uint32_t *n, const uint8_t **runflags, const uint8_t **desc)
{
    const uint8_t *p;
    if (!take(r, 4, &p))
        return bad(r, "truncated 32-bit bitmap");
    uint32_t cookie = floe__get_le32(p);
    *runflags = NULL;
    bool offsets = true;
    if ((cookie & 0xFFFF) == COOKIE_RUN) {
        *n = (cookie >> 16) + 1;
        if (!take(r, (*n + 7) / 8, runflags))
            return bad(r, "truncated run flags");
        offsets = *n >= 4;
    } else if (cookie == COOKIE_NO_RUN) {
        if (!take(r, 4, &p))
            return bad(r, "truncated container count");
        *n = floe__get_le32(p);
        if (*n > 65536)
            return bad(r, "more than 65536 containers");
    } else {
        return bad(r, "unknown cookie");
    }
    if (!take(r, (size_t)*n * 4, desc) || (offsets && !take(r, (size_t)*n * 4, &p)))
        return bad(r, "truncated container headers");
    return FLOE_OK;
}

static int read_bucket(rd *r, uint64_t high, floe__posbitmap *out)
{
    uint32_t n = 0;
    const uint8_t *runflags = NULL, *desc = NULL;
    FLOE_FORWARD(read_header(r, &n, &runflags, &desc));
    for (uint32_t i = 0; i < n; i++) {
        uint32_t key = le16(desc + 4 * i), card = (uint32_t)le16(desc + 4 * i + 2) + 1;
        if (i && key <= le16(desc + 4 * (i - 1)))
            return bad(r, "container keys are not strictly increasing");
        FLOE_FORWARD(insert_container(out, out->n, high << 16 | key, r->err));
        floe__pb_container *c = &out->c[out->n - 1];
        bool run = runflags && (runflags[i / 8] >> (i % 8)) & 1;
        int rc = run ? read_runs(r, c, card) : read_plain(r, c, card);
        if (rc != FLOE_OK)
            return rc;
        out->count += c->card;
    }
    return FLOE_OK;
}

int floe__posbitmap_deserialize(const uint8_t *p, size_t n, floe__posbitmap *out, size_t *used,
                                floe_error *err)
{
    rd r = {p, n, 0, err};
    const uint8_t *q = NULL;
    int rc = take(&r, 8, &q) ? FLOE_OK : bad(&r, "truncated bucket count");
    uint64_t buckets = rc == FLOE_OK ? floe__get_le64(q) : 0;
    if (rc == FLOE_OK && buckets > (n - 8) / 12)        /* a bucket takes at least 12 bytes */
        rc = bad(&r, "bucket count larger than the input");
    int64_t prev = -1;
    for (uint64_t i = 0; rc == FLOE_OK && i < buckets; i++) {
        if (!take(&r, 4, &q)) {
            rc = bad(&r, "truncated bucket key");
            break;
        }
        uint32_t key = floe__get_le32(q);
        if ((int64_t)key <= prev || key > 0x7FFFFFFF)
            rc = bad(&r, "bucket keys are not increasing, or past 2^63 positions");
        else
            rc = read_bucket(&r, key, out);
        prev = key;
    }
    if (rc != FLOE_OK) {
        floe__posbitmap_clear(out);
        return rc;
    }
    if (used)
        *used = r.at;
    return FLOE_OK;
}

bool floe__posbitmap_equal(const floe__posbitmap *a, const floe__posbitmap *b)
{
    uint64_t na = a ? a->count : 0, nb = b ? b->count : 0;
    if (na != nb)
        return false;
    if (na == 0)
        return true;
    floe__posbitmap_iter x = {.b = a}, y = {.b = b};
    uint64_t p, q;
    while (floe__posbitmap_next(&x, &p))
        if (!floe__posbitmap_next(&y, &q) || p != q)
            return false;
    return true;
}
