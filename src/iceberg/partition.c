/*
 * partition.c - Iceberg partition transforms and specs: Murmur3 bucketing
 * of each type's single-value serialization (the spec's Appendix B),
 * truncation, the temporal transforms (floored, so values before 1970 go
 * to negative ordinals), void; specs parsed from metadata JSON or from
 * Spark DDL-style text and bound to a schema; partition tuples of rows.
 *
 * It owns no files: manifest.c writes tuples and summaries, table/ routes
 * rows to files by their tuple.
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/partition_internal.h"

typedef __int128 i128;

#define US_PER_HOUR 3600000000LL
#define US_PER_DAY 86400000000LL

/* ---- Murmur3 ------------------------------------------------------------------------- */

static inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static inline uint32_t mix_k(uint32_t k)
{
    k *= 0xcc9e2d51u;
    k = rotl32(k, 15);
    return k * 0x1b873593u;
}

uint32_t floe__murmur3_32(const void *data, size_t n, uint32_t seed)
{
    const uint8_t *p = data;
    uint32_t h = seed;
    size_t blocks = n / 4;
    for (size_t i = 0; i < blocks; i++) {
        h ^= mix_k(floe__get_le32(p + 4 * i));
        h = rotl32(h, 13);
        h = h * 5 + 0xe6546b64u;
    }
    const uint8_t *tail = p + 4 * blocks;
    uint32_t k = 0;
    switch (n & 3) {
    case 3: k ^= (uint32_t)tail[2] << 16; /* fall through */
    case 2: k ^= (uint32_t)tail[1] << 8;  /* fall through */
    case 1: k ^= tail[0]; h ^= mix_k(k);
    }
    h ^= (uint32_t)n;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

/* ---- transform text ------------------------------------------------------------------ */

static const char *const NAMES[] = {"identity", "bucket", "truncate", "year",
                                    "month",    "day",    "hour",     "void"};

static bool parse_param(const char *s, int32_t *out)
{
    char *end = NULL;
    if (!isdigit((unsigned char)*s))
        return false;
    long v = strtol(s, &end, 10);
    if (*end != ']' || end[1] != '\0' || v <= 0 || v > INT32_MAX)
        return false;
    *out = (int32_t)v;
    return true;
}

int floe__transform_parse(const char *text, floe__transform *out, floe_error *err)
{
    *out = (floe__transform){0};
    for (int k = 0; k < (int)(sizeof NAMES / sizeof NAMES[0]); k++) {
        size_t n = strlen(NAMES[k]);
        if (strncmp(text, NAMES[k], n) != 0)
            continue;
        bool param = k == FLOE_TR_BUCKET || k == FLOE_TR_TRUNCATE;
        if (!param && text[n] == '\0') {
            out->kind = (floe__transform_kind)k;
            return FLOE_OK;
        }
        if (param && text[n] == '[' && parse_param(text + n + 1, &out->param)) {
            out->kind = (floe__transform_kind)k;
            return FLOE_OK;
        }
    }
    if (strncmp(text, "zorder", 6) == 0)
        return floe__err_set(err, FLOE_EUNSUPPORTED, "partition transform \"%s\" is not "
                             "supported", text);
    return floe__err_set(err, FLOE_EFORMAT, "unknown partition transform \"%s\"", text);
}

size_t floe__transform_text(const floe__transform *t, char *buf, size_t cap)
{
    const char *name = NAMES[t->kind];
    int n = t->kind == FLOE_TR_BUCKET || t->kind == FLOE_TR_TRUNCATE
                ? snprintf(buf, cap, "%s[%d]", name, (int)t->param)
                : snprintf(buf, cap, "%s", name);
    return n < 0 ? 0 : (size_t)n;
}

/* ---- result types -------------------------------------------------------------------- */

static bool is_primitive(floe__kind k)
{
    return k != FLOE_K_STRUCT && k != FLOE_K_LIST && k != FLOE_K_MAP;
}

static bool accepts(floe__transform_kind t, floe__kind k)
{
    switch (t) {
    case FLOE_TR_IDENTITY:
    case FLOE_TR_VOID:
        return is_primitive(k);
    case FLOE_TR_BUCKET:
        return k == FLOE_K_INT || k == FLOE_K_LONG || k == FLOE_K_DECIMAL || k == FLOE_K_DATE ||
               k == FLOE_K_TIME || k == FLOE_K_TIMESTAMP || k == FLOE_K_TIMESTAMPTZ ||
               k == FLOE_K_STRING || k == FLOE_K_UUID || k == FLOE_K_FIXED || k == FLOE_K_BINARY;
    case FLOE_TR_TRUNCATE:
        return k == FLOE_K_INT || k == FLOE_K_LONG || k == FLOE_K_DECIMAL ||
               k == FLOE_K_STRING || k == FLOE_K_BINARY;
    case FLOE_TR_YEAR:
    case FLOE_TR_MONTH:
    case FLOE_TR_DAY:
        return k == FLOE_K_DATE || k == FLOE_K_TIMESTAMP || k == FLOE_K_TIMESTAMPTZ;
    case FLOE_TR_HOUR:
        return k == FLOE_K_TIMESTAMP || k == FLOE_K_TIMESTAMPTZ;
    }
    return false;
}

int floe__transform_result(const floe__transform *t, const floe__field *src,
                           floe__field *result, floe_error *err)
{
    char ty[64], tr[32];
    if (!accepts(t->kind, src->kind)) {
        floe__type_name(src, false, ty, sizeof ty);
        floe__transform_text(t, tr, sizeof tr);
        bool dated = t->kind == FLOE_TR_YEAR || t->kind == FLOE_TR_MONTH ||
                     t->kind == FLOE_TR_DAY || t->kind == FLOE_TR_HOUR;
        bool number = src->kind == FLOE_K_INT || src->kind == FLOE_K_LONG;
        return floe__err_set(err, FLOE_ESCHEMA, "transform %s does not apply to column %s of "
                             "type %s%s", tr, src->name ? src->name : "?", ty,
                             dated && number ? " (year, month, day and hour take dates and "
                                               "timestamps; a number is partitioned by "
                                               "truncate(W, col) or bucket(N, col))" : "");
    }
    *result = (floe__field){.kind = src->kind, .precision = src->precision,
                            .scale = src->scale, .length = src->length};
    switch (t->kind) {
    case FLOE_TR_BUCKET: case FLOE_TR_YEAR: case FLOE_TR_MONTH: case FLOE_TR_HOUR:
        *result = (floe__field){.kind = FLOE_K_INT};
        break;
    case FLOE_TR_DAY:        /* Java and pyiceberg: date (an int of days on the wire) */
        *result = (floe__field){.kind = FLOE_K_DATE};
        break;
    default:
        break;
    }
    return FLOE_OK;
}

/* ---- values -------------------------------------------------------------------------- */

static i128 get_i128(const uint8_t *p)
{
    i128 v;
    memcpy(&v, p, 16);
    return v;
}

/* The minimal big-endian two's complement bytes of v (Java's
 * BigInteger.toByteArray): at least one byte, the top bit the sign. */
static size_t decimal_bytes(i128 v, uint8_t out[16])
{
    uint8_t be[16];
    unsigned __int128 u = (unsigned __int128)v;
    for (int i = 15; i >= 0; i--, u >>= 8)
        be[i] = (uint8_t)u;
    size_t skip = 0;
    uint8_t fill = v < 0 ? 0xff : 0x00;
    while (skip < 15 && be[skip] == fill && ((be[skip + 1] ^ fill) & 0x80) == 0)
        skip++;
    memcpy(out, be + skip, 16 - skip);
    return 16 - skip;
}

/* The bytes of a variable-width payload (string, binary) or fixed one. */
static const uint8_t *value_bytes(const floe__field *f, const uint8_t *p, size_t *n)
{
    if (f->kind == FLOE_K_STRING || f->kind == FLOE_K_BINARY) {
        *n = floe__datum_u32(p);
        return p + 4;
    }
    *n = floe__kind_width(f);
    return p;
}

static int64_t as_long(const floe__field *f, const uint8_t *p)
{
    if (f->kind == FLOE_K_INT || f->kind == FLOE_K_DATE)
        return (int32_t)floe__get_le32(p);
    return (int64_t)floe__get_le64(p);
}

int floe__single_value(const floe__field *f, const uint8_t *p, floe__buf *out, floe_error *err)
{
    uint8_t tmp[16];
    size_t n;
    if (f->kind == FLOE_K_DECIMAL) {
        n = decimal_bytes(get_i128(p), tmp);
        return floe__buf_append(out, tmp, n, err);
    }
    const uint8_t *b = value_bytes(f, p, &n);
    return floe__buf_append(out, b, n, err);
}

static int32_t bucket_of(const floe__field *f, const uint8_t *p, int32_t n_buckets)
{
    uint8_t tmp[16];
    size_t n;
    const uint8_t *b;
    switch (f->kind) {
    case FLOE_K_INT: case FLOE_K_LONG: case FLOE_K_DATE: case FLOE_K_TIME:
    case FLOE_K_TIMESTAMP: case FLOE_K_TIMESTAMPTZ:
        floe__put_le64(tmp, (uint64_t)as_long(f, p));
        b = tmp;
        n = 8;
        break;
    case FLOE_K_DECIMAL:
        n = decimal_bytes(get_i128(p), tmp);
        b = tmp;
        break;
    default:
        b = value_bytes(f, p, &n);
        break;
    }
    uint32_t h = floe__murmur3_32(b, n, 0);
    return (int32_t)((h & 0x7fffffffu) % (uint32_t)n_buckets);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* year / month / day / hour ordinal of a date or timestamp payload. */
static int32_t temporal(floe__transform_kind t, const floe__field *f, const uint8_t *p)
{
    int64_t v = as_long(f, p);
    if (t == FLOE_TR_HOUR)
        return (int32_t)floor_div(v, US_PER_HOUR);
    int64_t days = f->kind == FLOE_K_DATE ? v : floor_div(v, US_PER_DAY);
    if (t == FLOE_TR_DAY)
        return (int32_t)days;
    int64_t y;
    unsigned m, d;
    floe__civil_from_days(days, &y, &m, &d);
    if (t == FLOE_TR_YEAR)
        return (int32_t)(y - 1970);
    return (int32_t)((y - 1970) * 12 + (int64_t)m - 1);
}

/* The byte length of the first w code points of UTF-8 [s, s+n). */
static size_t utf8_prefix(const uint8_t *s, size_t n, int32_t w)
{
    size_t i = 0;
    for (int32_t k = 0; k < w && i < n; k++) {
        i++;
        while (i < n && (s[i] & 0xc0) == 0x80)
            i++;
    }
    return i;
}

static int put_tagged(floe__buf *out, const void *p, size_t n, floe_error *err)
{
    FLOE_FORWARD(floe__buf_putc(out, FLOE_SLOT_PRESENT, err));
    return floe__buf_append(out, p, n, err);
}

static int put_int(floe__buf *out, int32_t v, floe_error *err)
{
    uint8_t b[4];
    floe__put_le32(b, (uint32_t)v);
    return put_tagged(out, b, 4, err);
}

static int truncate_value(int32_t w, const floe__field *f, const uint8_t *p, floe__buf *out,
                          floe_error *err)
{
    uint8_t b[16];
    switch (f->kind) {
    /* v - (((v % w) + w) % w), wrapping around at the type's minimum as
     * Java's int and long arithmetic does */
    case FLOE_K_INT: {
        int64_t v = as_long(f, p);
        return put_int(out, (int32_t)(uint32_t)(v - (((v % w) + w) % w)), err);
    }
    case FLOE_K_LONG: {
        int64_t v = as_long(f, p);
        floe__put_le64(b, (uint64_t)v - (uint64_t)(((v % w) + w) % w));
        return put_tagged(out, b, 8, err);
    }
    case FLOE_K_DECIMAL: {
        i128 v = get_i128(p);
        v -= ((v % w) + w) % w;
        memcpy(b, &v, 16);
        return put_tagged(out, b, 16, err);
    }
    default: {
        size_t n;
        const uint8_t *s = value_bytes(f, p, &n);
        size_t k = f->kind == FLOE_K_STRING ? utf8_prefix(s, n, w)
                                            : (n < (size_t)w ? n : (size_t)w);
        floe__put_le32(b, (uint32_t)k);
        FLOE_FORWARD(put_tagged(out, b, 4, err));
        return floe__buf_append(out, s, k, err);
    }
    }
}

int floe__transform_apply(const floe__transform *t, const floe__field *src, const uint8_t *p,
                          floe__buf *out, floe_error *err)
{
    if (!p || t->kind == FLOE_TR_VOID)
        return floe__buf_putc(out, FLOE_SLOT_NULL, err);
    switch (t->kind) {
    case FLOE_TR_IDENTITY: {
        size_t n;
        value_bytes(src, p, &n);
        if (src->kind == FLOE_K_STRING || src->kind == FLOE_K_BINARY)
            n += 4;
        return put_tagged(out, p, n, err);
    }
    case FLOE_TR_BUCKET:
        return put_int(out, bucket_of(src, p, t->param), err);
    case FLOE_TR_TRUNCATE:
        return truncate_value(t->param, src, p, out, err);
    default:
        return put_int(out, temporal(t->kind, src, p), err);
    }
}

int floe__payload_cmp(const floe__field *f, const uint8_t *a, const uint8_t *b)
{
    switch (f->kind) {
    case FLOE_K_BOOLEAN:
        return (int)a[0] - (int)b[0];
    case FLOE_K_FLOAT: case FLOE_K_DOUBLE: {
        double x, y;
        float fx, fy;
        if (f->kind == FLOE_K_FLOAT) {
            memcpy(&fx, a, 4), memcpy(&fy, b, 4), x = fx, y = fy;
        } else {
            memcpy(&x, a, 8), memcpy(&y, b, 8);
        }
        if (x != x || y != y)
            return (x != x) - (y != y);
        return x < y ? -1 : x > y ? 1 : (int)__builtin_signbit(y) - (int)__builtin_signbit(x);
    }
    case FLOE_K_DECIMAL: {
        i128 x = get_i128(a), y = get_i128(b);
        return x < y ? -1 : x > y;
    }
    case FLOE_K_INT: case FLOE_K_LONG: case FLOE_K_DATE: case FLOE_K_TIME:
    case FLOE_K_TIMESTAMP: case FLOE_K_TIMESTAMPTZ: {
        int64_t x = as_long(f, a), y = as_long(f, b);
        return x < y ? -1 : x > y;
    }
    default: {
        size_t na, nb;
        const uint8_t *sa = value_bytes(f, a, &na), *sb = value_bytes(f, b, &nb);
        int c = memcmp(sa, sb, na < nb ? na : nb);
        return c ? c : (na > nb) - (na < nb);
    }
    }
}
