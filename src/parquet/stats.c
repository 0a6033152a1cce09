/*
 * stats.c - column statistics: min/max in Parquet's type-defined sort
 * order, null and NaN counts; their encoding for the footer; and Iceberg's
 * lower/upper bounds (single-value serialization, truncate(16)).
 *
 * Orders (parquet.thrift ColumnOrder): signed integers for INT32/INT64 (and
 * the decimals, dates, times stored in them); IEEE values for floats with
 * NaN left out; unsigned lexicographic bytes for BYTE_ARRAY and FLBA;
 * signed (big-endian two's complement) for decimals stored as FLBA.
 *
 * Floats are tracked in IEEE totalOrder restricted to non-NaN values, so
 * -0.0 sorts before +0.0: that is exactly what Iceberg wants for bounds.
 * The Parquet footer then applies its own zero rule (a zero min is written
 * as -0.0, a zero max as +0.0), so readers that treat -0.0 == +0.0 stay
 * correct.
 */
#include <math.h>

#include "parquet/pq_internal.h"

void floe__pq_stats_init(floe__pq_stats *s)
{
    memset(s, 0, sizeof *s);
    floe__buf_init(&s->bmin, 0);
    floe__buf_init(&s->bmax, 0);
}

void floe__pq_stats_free(floe__pq_stats *s)
{
    floe__buf_free(&s->bmin);
    floe__buf_free(&s->bmax);
    floe__pq_stats_init(s);
}

void floe__pq_stats_reset(floe__pq_stats *s)
{
    floe__buf bmin = s->bmin, bmax = s->bmax;
    memset(s, 0, sizeof *s);
    s->bmin = bmin;
    s->bmax = bmax;
    floe__buf_reset(&s->bmin);
    floe__buf_reset(&s->bmax);
}

/* totalOrder on non-NaN values: -0.0 < +0.0. */
static inline bool f_less(double a, double b)
{
    return a < b || (a == b && signbit(a) && !signbit(b));
}

int floe__pq_cmp_bytes(floe__pq_order ord, const uint8_t *a, size_t an, const uint8_t *b,
                       size_t bn)
{
    if (ord == PQ_ORD_SIGNED_BE && an > 0 && bn > 0 && an == bn) {
        int sa = (int8_t)a[0], sb = (int8_t)b[0];
        if (sa != sb)
            return sa < sb ? -1 : 1;
        int c = memcmp(a + 1, b + 1, an - 1);
        return c < 0 ? -1 : c > 0;
    }
    size_t m = an < bn ? an : bn;
    int c = m ? memcmp(a, b, m) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return an < bn ? -1 : an > bn;
}

static int set_buf(floe__buf *b, const uint8_t *p, size_t n, floe_error *err)
{
    floe__buf_reset(b);
    return floe__buf_append(b, p, n, err);
}

/* Byte-array extremes are kept to their first PQ_STATS_MAX_VALUE + 1 bytes:
 * min and max of the cut values are the cut min and max (values equal in
 * the kept bytes have the same cut), which is all the footer (it leaves
 * out extremes over PQ_STATS_MAX_VALUE) and Iceberg's truncate(16) bounds
 * need, and a 200 MB value costs no copy. */
int floe__pq_stats_one(floe__pq_stats *s, floe__pq_order ord, const uint8_t *p, size_t n,
                       floe_error *err)
{
    if (n > PQ_STATS_MAX_VALUE + 1)
        n = PQ_STATS_MAX_VALUE + 1;
    if (!s->has_minmax) {
        FLOE_FORWARD(set_buf(&s->bmin, p, n, err));
        FLOE_FORWARD(set_buf(&s->bmax, p, n, err));
        s->has_minmax = true;
        return FLOE_OK;
    }
    if (floe__pq_cmp_bytes(ord, p, n, s->bmin.data, s->bmin.len) < 0)
        FLOE_FORWARD(set_buf(&s->bmin, p, n, err));
    else if (floe__pq_cmp_bytes(ord, p, n, s->bmax.data, s->bmax.len) > 0)
        FLOE_FORWARD(set_buf(&s->bmax, p, n, err));
    return FLOE_OK;
}

static void fold_int(floe__pq_stats *s, int64_t mn, int64_t mx)
{
    if (!s->has_minmax) {
        s->imin = mn;
        s->imax = mx;
        s->has_minmax = true;
        return;
    }
    if (mn < s->imin)
        s->imin = mn;
    if (mx > s->imax)
        s->imax = mx;
}

static void fold_float(floe__pq_stats *s, double v)
{
    if (!s->has_minmax) {
        s->fmin = s->fmax = v;
        s->has_minmax = true;
        return;
    }
    if (f_less(v, s->fmin))
        s->fmin = v;
    if (f_less(s->fmax, v))
        s->fmax = v;
}

int floe__pq_stats_fixed(floe__pq_stats *s, floe__pq_order ord, const uint8_t *vals, size_t n,
                         size_t width, floe_error *err)
{
    if (n == 0)
        return FLOE_OK;
    switch (ord) {
    case PQ_ORD_BOOL: {
        bool any_false = memchr(vals, 0, n) != NULL;
        bool any_true = false;
        for (size_t i = 0; i < n && !any_true; i++)
            any_true = vals[i] != 0;
        fold_int(s, any_false ? 0 : 1, any_true ? 1 : 0);
        return FLOE_OK;
    }
    case PQ_ORD_INT32: {
        int32_t mn = INT32_MAX, mx = INT32_MIN;
        for (size_t i = 0; i < n; i++) {
            int32_t v = (int32_t)floe__get_le32(vals + 4 * i);
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
        }
        fold_int(s, mn, mx);
        return FLOE_OK;
    }
    case PQ_ORD_INT64: {
        int64_t mn = INT64_MAX, mx = INT64_MIN;
        for (size_t i = 0; i < n; i++) {
            int64_t v = (int64_t)floe__get_le64(vals + 8 * i);
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
        }
        fold_int(s, mn, mx);
        return FLOE_OK;
    }
    case PQ_ORD_FLOAT:
        for (size_t i = 0; i < n; i++) {
            float v;
            memcpy(&v, vals + 4 * i, 4);
            if (isnan(v))
                s->nans++;
            else
                fold_float(s, v);
        }
        return FLOE_OK;
    case PQ_ORD_DOUBLE:
        for (size_t i = 0; i < n; i++) {
            double v;
            memcpy(&v, vals + 8 * i, 8);
            if (isnan(v))
                s->nans++;
            else
                fold_float(s, v);
        }
        return FLOE_OK;
    case PQ_ORD_UNSIGNED:
    case PQ_ORD_SIGNED_BE:
        for (size_t i = 0; i < n; i++)
            FLOE_FORWARD(floe__pq_stats_one(s, ord, vals + i * width, width, err));
        return FLOE_OK;
    }
    return FLOE_OK;
}

/* The first 8 bytes of p[0..n) as a big-endian integer, zero-padded: a
 * different prefix decides the unsigned order without memcmp. */
static inline uint64_t be_prefix(const uint8_t *p, size_t n)
{
    if (n >= 8)
        return __builtin_bswap64(floe__get_le64(p));
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (56 - 8 * i);
    return v;
}

int floe__pq_stats_bytes(floe__pq_stats *s, floe__pq_order ord, const uint8_t *vals, size_t n,
                         floe_error *err)
{
    const uint8_t *p = vals;
    if (ord != PQ_ORD_UNSIGNED) {
        for (size_t i = 0; i < n; i++) {
            uint32_t len = floe__get_le32(p);
            FLOE_FORWARD(floe__pq_stats_one(s, ord, p + 4, len, err));
            p += 4 + (size_t)len;
        }
        return FLOE_OK;
    }
    /* Unsigned order: most values differ from min and max in their first 8
     * bytes; only ties there need the full comparison. */
    uint64_t pmin = 0, pmax = 0;
    if (s->has_minmax) {
        pmin = be_prefix(s->bmin.data, s->bmin.len);
        pmax = be_prefix(s->bmax.data, s->bmax.len);
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t len = floe__get_le32(p);
        const uint8_t *x = p + 4;
        p = x + len;
        uint64_t px = be_prefix(x, len);
        if (s->has_minmax && px > pmin && px < pmax)
            continue;
        FLOE_FORWARD(floe__pq_stats_one(s, ord, x, len, err));
        pmin = be_prefix(s->bmin.data, s->bmin.len);
        pmax = be_prefix(s->bmax.data, s->bmax.len);
    }
    return FLOE_OK;
}

int floe__pq_stats_merge(floe__pq_stats *dst, const floe__pq_stats *src, floe__pq_order ord,
                         floe_error *err)
{
    dst->nulls += src->nulls;
    dst->nans += src->nans;
    if (!src->has_minmax)
        return FLOE_OK;
    switch (ord) {
    case PQ_ORD_BOOL:
    case PQ_ORD_INT32:
    case PQ_ORD_INT64:
        fold_int(dst, src->imin, src->imax);
        return FLOE_OK;
    case PQ_ORD_FLOAT:
    case PQ_ORD_DOUBLE:
        fold_float(dst, src->fmin);
        fold_float(dst, src->fmax);
        return FLOE_OK;
    case PQ_ORD_UNSIGNED:
    case PQ_ORD_SIGNED_BE:
        FLOE_FORWARD(floe__pq_stats_one(dst, ord, src->bmin.data, src->bmin.len, err));
        return floe__pq_stats_one(dst, ord, src->bmax.data, src->bmax.len, err);
    }
    return FLOE_OK;
}

bool floe__pq_stats_minmax(const floe__pq_stats *s, floe__pq_order ord, int ptype,
                           uint8_t scratch_min[8], uint8_t scratch_max[8],
                           const uint8_t **mn, size_t *mn_len, const uint8_t **mx, size_t *mx_len)
{
    if (!s->has_minmax)
        return false;
    switch (ord) {
    case PQ_ORD_BOOL:
        scratch_min[0] = (uint8_t)s->imin;
        scratch_max[0] = (uint8_t)s->imax;
        *mn_len = *mx_len = 1;
        break;
    case PQ_ORD_INT32:
        floe__put_le32(scratch_min, (uint32_t)(int32_t)s->imin);
        floe__put_le32(scratch_max, (uint32_t)(int32_t)s->imax);
        *mn_len = *mx_len = 4;
        break;
    case PQ_ORD_INT64:
        floe__put_le64(scratch_min, (uint64_t)s->imin);
        floe__put_le64(scratch_max, (uint64_t)s->imax);
        *mn_len = *mx_len = 8;
        break;
    case PQ_ORD_FLOAT: {
        float a = s->fmin == 0 ? -0.0f : (float)s->fmin;
        float b = s->fmax == 0 ? 0.0f : (float)s->fmax;
        memcpy(scratch_min, &a, 4);
        memcpy(scratch_max, &b, 4);
        *mn_len = *mx_len = 4;
        break;
    }
    case PQ_ORD_DOUBLE: {
        double a = s->fmin == 0 ? -0.0 : s->fmin;
        double b = s->fmax == 0 ? 0.0 : s->fmax;
        memcpy(scratch_min, &a, 8);
        memcpy(scratch_max, &b, 8);
        *mn_len = *mx_len = 8;
        break;
    }
    case PQ_ORD_UNSIGNED:
    case PQ_ORD_SIGNED_BE:
        if (s->bmin.len > PQ_STATS_MAX_VALUE || s->bmax.len > PQ_STATS_MAX_VALUE)
            return false;
        *mn = s->bmin.len ? s->bmin.data : (const uint8_t *)"";
        *mx = s->bmax.len ? s->bmax.data : (const uint8_t *)"";
        *mn_len = s->bmin.len;
        *mx_len = s->bmax.len;
        return true;
    }
    (void)ptype;
    *mn = scratch_min;
    *mx = scratch_max;
    return true;
}

/* ---- Iceberg bounds ---------------------------------------------------------- */

/* Length of the UTF-8 sequence starting with lead byte b (1 for stray bytes). */
static inline size_t utf8_len(uint8_t b)
{
    if (b < 0xc0)
        return 1;
    if (b < 0xe0)
        return 2;
    if (b < 0xf0)
        return 3;
    return 4;
}

/* Byte offset of the end of the first `k` code points of p[0..n). */
static size_t utf8_prefix(const uint8_t *p, size_t n, size_t k, size_t *count)
{
    size_t off = 0, c = 0;
    while (off < n && c < k) {
        off += utf8_len(p[off]);
        c++;
    }
    if (off > n)
        off = n;
    *count = c;
    return off;
}

static uint32_t utf8_decode(const uint8_t *p, size_t len)
{
    switch (len) {
    case 1: return p[0];
    case 2: return (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
    case 3: return (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
    default:
        return (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 |
               (uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f);
    }
}

static size_t utf8_encode(uint32_t cp, uint8_t *o)
{
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xc0 | cp >> 6);
        o[1] = (uint8_t)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xe0 | cp >> 12);
        o[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
        o[2] = (uint8_t)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (uint8_t)(0xf0 | cp >> 18);
    o[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
    o[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
    o[3] = (uint8_t)(0x80 | (cp & 0x3f));
    return 4;
}

int floe__pq_truncate_lower(bool utf8, const uint8_t *p, size_t n, size_t len, floe__buf *out,
                            floe_error *err)
{
    size_t cut = len < n ? len : n, count;
    if (utf8)
        cut = utf8_prefix(p, n, len, &count);
    floe__buf_reset(out);
    return floe__buf_append(out, p, cut, err);
}

int floe__pq_truncate_upper(bool utf8, const uint8_t *p, size_t n, size_t len, floe__buf *out,
                            bool *ok, floe_error *err)
{
    floe__buf_reset(out);
    *ok = true;
    if (!utf8) {
        if (n <= len)
            return floe__buf_append(out, p, n, err);
        /* Increment the last byte that is not 0xff, dropping what follows. */
        for (size_t i = len; i-- > 0;) {
            if (p[i] != 0xff) {
                FLOE_FORWARD(floe__buf_append(out, p, i + 1, err));
                out->data[i]++;
                return FLOE_OK;
            }
        }
        *ok = false;
        return FLOE_OK;
    }
    size_t count;
    size_t cut = utf8_prefix(p, n, len, &count);
    if (cut >= n)
        return floe__buf_append(out, p, n, err);
    /* Walk the kept code points backwards: increment the last one that can
     * be incremented and drop everything after it. */
    for (size_t end = cut; end > 0;) {
        size_t at = end - 1;
        while (at > 0 && (p[at] & 0xc0) == 0x80)
            at--;
        uint32_t cp = utf8_decode(p + at, end - at);
        end = at;
        if (cp >= 0x10ffff)
            continue;
        cp = cp == 0xd7ff ? 0xe000 : cp + 1;   /* skip the surrogates */
        uint8_t enc[4];
        size_t el = utf8_encode(cp, enc);
        FLOE_FORWARD(floe__buf_append(out, p, at, err));
        return floe__buf_append(out, enc, el, err);
    }
    *ok = false;
    return FLOE_OK;
}

/* Minimal big-endian two's complement of a big-endian two's complement value. */
static int put_min_be(const uint8_t *be, size_t n, floe__buf *out, floe_error *err)
{
    size_t i = 0;
    while (i + 1 < n && ((be[i] == 0x00 && !(be[i + 1] & 0x80)) ||
                         (be[i] == 0xff && (be[i + 1] & 0x80))))
        i++;
    floe__buf_reset(out);
    return floe__buf_append(out, be + i, n - i, err);
}

static int int_bound(int64_t v, floe__kind kind, int ptype, floe__buf *out, floe_error *err)
{
    uint8_t b[8];
    floe__buf_reset(out);
    if (kind == FLOE_K_DECIMAL) {
        for (int i = 0; i < 8; i++)
            b[i] = (uint8_t)((uint64_t)v >> (56 - 8 * i));
        return put_min_be(b, 8, out, err);
    }
    if (kind == FLOE_K_BOOLEAN) {
        b[0] = v ? 1 : 0;
        return floe__buf_append(out, b, 1, err);
    }
    if (ptype == PQ_T_INT32) {
        floe__put_le32(b, (uint32_t)(int32_t)v);
        return floe__buf_append(out, b, 4, err);
    }
    floe__put_le64(b, (uint64_t)v);
    return floe__buf_append(out, b, 8, err);
}

int floe__pq_iceberg_bounds(const floe__pq_stats *s, floe__pq_order ord, int ptype,
                            floe__kind kind, floe__col_metrics *m, floe_error *err)
{
    m->has_lower = m->has_upper = false;
    if (!s->has_minmax)
        return FLOE_OK;
    switch (ord) {
    case PQ_ORD_BOOL:
    case PQ_ORD_INT32:
    case PQ_ORD_INT64:
        FLOE_FORWARD(int_bound(s->imin, kind, ptype, &m->lower, err));
        FLOE_FORWARD(int_bound(s->imax, kind, ptype, &m->upper, err));
        break;
    case PQ_ORD_FLOAT: {
        float a = (float)s->fmin, b = (float)s->fmax;
        floe__buf_reset(&m->lower);
        floe__buf_reset(&m->upper);
        FLOE_FORWARD(floe__buf_append(&m->lower, &a, 4, err));
        FLOE_FORWARD(floe__buf_append(&m->upper, &b, 4, err));
        break;
    }
    case PQ_ORD_DOUBLE:
        floe__buf_reset(&m->lower);
        floe__buf_reset(&m->upper);
        FLOE_FORWARD(floe__buf_append(&m->lower, &s->fmin, 8, err));
        FLOE_FORWARD(floe__buf_append(&m->upper, &s->fmax, 8, err));
        break;
    case PQ_ORD_SIGNED_BE:
        FLOE_FORWARD(put_min_be(s->bmin.data, s->bmin.len, &m->lower, err));
        FLOE_FORWARD(put_min_be(s->bmax.data, s->bmax.len, &m->upper, err));
        break;
    case PQ_ORD_UNSIGNED:
        if (kind == FLOE_K_STRING || kind == FLOE_K_BINARY) {
            bool utf8 = kind == FLOE_K_STRING, ok;
            FLOE_FORWARD(floe__pq_truncate_lower(utf8, s->bmin.data, s->bmin.len,
                                                 PQ_ICEBERG_TRUNCATE, &m->lower, err));
            FLOE_FORWARD(floe__pq_truncate_upper(utf8, s->bmax.data, s->bmax.len,
                                                 PQ_ICEBERG_TRUNCATE, &m->upper, &ok, err));
            m->has_lower = true;
            m->has_upper = ok;
            return FLOE_OK;
        }
        floe__buf_reset(&m->lower);
        floe__buf_reset(&m->upper);
        FLOE_FORWARD(floe__buf_append(&m->lower, s->bmin.data, s->bmin.len, err));
        FLOE_FORWARD(floe__buf_append(&m->upper, s->bmax.data, s->bmax.len, err));
        break;
    }
    m->has_lower = m->has_upper = true;
    return FLOE_OK;
}
