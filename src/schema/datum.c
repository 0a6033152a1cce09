/*
 * datum.c - walkers over the row format of schema_internal.h: skipping a
 * slot, validating a whole row, and printing a row as JSON text
 * (floe_row_to_json), plus the proleptic-Gregorian day arithmetic that
 * dates and timestamps share with the input parsers.
 *
 * It does not parse JSON (src/source/ does).
 *
 * JSON forms written by floe__datum_to_json (SPEC.md section 2, canonical):
 *   boolean            true / false
 *   int, long          JSON integers; uint8 (decimal(20,0)) a bare integer too
 *   numeric / decimal  a JSON string with exactly `scale` fraction digits: "-12.50"
 *   real / double      the shortest %g text that reads back to the same bits;
 *                      "NaN", "Infinity", "-Infinity" as strings; -0.0 as -0.0
 *   text, interval     JSON strings (", \ and control characters escaped)
 *   uuid               "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lower case
 *   jsonb              the stored JSON text, embedded as a value
 *   bytea / binary     base64 (standard alphabet, padded); fixed too
 *   date               "YYYY-MM-DD"
 *   time               "HH:MM:SS" plus ".f" (1-6 digits, trailing zeros cut)
 *   timestamp          "YYYY-MM-DD HH:MM:SS[.f]"
 *   timestamptz        the same in UTC with a "Z" suffix
 *   list               array; record and range: object with every member
 *                      (null ones as null), in schema order
 *   map                object when keys are strings, otherwise an array of
 *                      {"key": .., "value": ..} objects
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "schema/schema_internal.h"

/* ---- calendar ------------------------------------------------------------ */

/* Days are counted in 400-year eras of 146097 days; within an era the year
 * is taken to start on March 1st so that the leap day falls at its end. */
int64_t floe__days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;                                   /* [0, 399] */
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;  /* [0, 365] */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           /* [0, 146096] */
    return era * 146097 + doe - 719468;       /* 719468: 0000-03-01 .. 1970-01-01 */
}

void floe__civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;                  /* month from March = 0 */
    *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
    *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* ---- skipping ------------------------------------------------------------ */

static const uint8_t *skip_payload(const floe__field *f, const uint8_t *p, const uint8_t *end)
{
    size_t w = floe__kind_width(f);
    if (w)
        return (size_t)(end - p) >= w ? p + w : NULL;
    switch (f->kind) {
    case FLOE_K_STRING:
    case FLOE_K_BINARY: {
        if (end - p < 4)
            return NULL;
        uint32_t n = floe__datum_u32(p);
        return (size_t)(end - p - 4) >= n ? p + 4 + n : NULL;
    }
    case FLOE_K_STRUCT:
        for (uint32_t i = 0; i < f->n_children && p; i++)
            p = floe__datum_skip(&f->children[i], p, end);
        return p;
    case FLOE_K_LIST:
    case FLOE_K_MAP: {
        if (end - p < 4)
            return NULL;
        uint32_t n = floe__datum_u32(p);
        p += 4;
        /* every slot takes at least one byte, so n is bounded by the input */
        for (uint32_t i = 0; i < n && p; i++)
            for (uint32_t c = 0; c < f->n_children && p; c++)
                p = floe__datum_skip(&f->children[c], p, end);
        return p;
    }
    default:
        return NULL;     /* FIXED of length 0 cannot be built */
    }
}

const uint8_t *floe__datum_skip(const floe__field *f, const uint8_t *p, const uint8_t *end)
{
    if (p >= end)
        return NULL;
    if (*p == FLOE_SLOT_NULL)
        return p + 1;
    if (*p != FLOE_SLOT_PRESENT)
        return NULL;
    return skip_payload(f, p + 1, end);
}

/* ---- a walk with a path for messages ------------------------------------- */

/* Each level of nesting takes at most two path entries (a name and a list
 * position). */
#define WALK_MAX (2 * FLOE__SCHEMA_MAX_DEPTH + 4)

typedef struct walk {
    floe_error *err;
    const uint8_t *end;
    floe__buf *out;                               /* to_json only */
    const char *name[WALK_MAX];
    int64_t index[WALK_MAX];                      /* list position, or -1 */
    int depth;
} walk;

static int walk_fail(walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int walk_fail(walk *w, const char *fmt, ...)
{
    char msg[160], path[512];
    size_t n = 0;
    path[0] = '\0';
    for (int i = 0; i < w->depth && n < sizeof path; i++) {
        if (w->index[i] >= 0)
            n += (size_t)snprintf(path + n, sizeof path - n, "[%lld]", (long long)w->index[i]);
        else if (i > 0 && w->index[i - 1] >= 0 && strcmp(w->name[i], "element") == 0)
            continue;                             /* "tags[3]", not "tags[3].element" */
        else
            n += (size_t)snprintf(path + n, sizeof path - n, "%s%s", i ? "." : "", w->name[i]);
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return floe__err_set(w->err, FLOE_EINPUT, "row: column \"%s\": %s", path, msg);
}

static void push(walk *w, const floe__field *f, int64_t index)
{
    w->name[w->depth] = f->name;
    w->index[w->depth] = index;
    w->depth++;
}

/* ---- validation ---------------------------------------------------------- */

static int validate_slot(walk *w, const floe__field *f, const uint8_t **pp);

typedef __int128 i128;

static i128 pow10_i128(int n)
{
    i128 v = 1;
    while (n-- > 0)
        v *= 10;
    return v;
}

static i128 get_i128(const uint8_t *p)
{
    i128 v;
    memcpy(&v, p, 16);
    return v;
}

static int validate_int(walk *w, const floe__field *f, const uint8_t *p)
{
    int64_t v = f->kind == FLOE_K_INT ? (int32_t)floe__get_le32(p) : (int64_t)floe__get_le64(p);
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    switch (f->decl) {
    case FLOE_D_SMALLINT: lo = -32768; hi = 32767; break;
    case FLOE_D_UINT2: lo = 0; hi = 65535; break;
    case FLOE_D_UINT4: lo = 0; hi = 4294967295LL; break;
    default: break;
    }
    if (v < lo || v > hi)
        return walk_fail(w, "value %lld is out of range for its type", (long long)v);
    return FLOE_OK;
}

static int validate_scalar(walk *w, const floe__field *f, const uint8_t *p)
{
    switch (f->kind) {
    case FLOE_K_BOOLEAN:
        return *p <= 1 ? FLOE_OK : walk_fail(w, "boolean byte %u is not 0 or 1", *p);
    case FLOE_K_INT:
    case FLOE_K_LONG:
        return validate_int(w, f, p);
    case FLOE_K_FLOAT: {
        float v;
        memcpy(&v, p, 4);
        return !isnan(v) || floe__get_le32(p) == 0x7fc00000u
                   ? FLOE_OK : walk_fail(w, "NaN is not canonical");
    }
    case FLOE_K_DOUBLE: {
        double v;
        memcpy(&v, p, 8);
        return !isnan(v) || floe__get_le64(p) == 0x7ff8000000000000ull
                   ? FLOE_OK : walk_fail(w, "NaN is not canonical");
    }
    case FLOE_K_DECIMAL: {
        i128 v = get_i128(p), lim = pow10_i128(f->precision);
        if (f->decl == FLOE_D_UINT8 ? (v < 0 || v > (i128)UINT64_MAX) : (v <= -lim || v >= lim))
            return walk_fail(w, "decimal value does not fit its precision");
        return FLOE_OK;
    }
    case FLOE_K_TIME: {
        int64_t v = (int64_t)floe__get_le64(p);
        return v >= 0 && v < 86400000000LL ? FLOE_OK : walk_fail(w, "time is out of range");
    }
    default:
        return FLOE_OK;
    }
}

static int validate_string(walk *w, const floe__field *f, const uint8_t *s, uint32_t n)
{
    if (f->kind != FLOE_K_STRING)
        return FLOE_OK;
    if (!floe__utf8_valid(s, n))
        return walk_fail(w, "string is not valid UTF-8");
    if (f->decl == FLOE_D_UUID) {
        uint8_t u[16];
        char canon[37];
        if (floe__uuid_parse((const char *)s, n, u) != 0)
            return walk_fail(w, "not a uuid");
        floe__uuid_format(u, canon);
        if (memcmp(canon, s, 36) != 0)
            return walk_fail(w, "uuid is not in canonical lower-case form");
    }
    return FLOE_OK;
}

static int validate_children(walk *w, const floe__field *f, const uint8_t **pp)
{
    const uint8_t *p = *pp;
    if (f->kind == FLOE_K_STRUCT) {
        for (uint32_t i = 0; i < f->n_children; i++)
            FLOE_FORWARD(validate_slot(w, &f->children[i], &p));
        *pp = p;
        return FLOE_OK;
    }
    if (w->end - p < 4)
        return walk_fail(w, "row is truncated");
    uint32_t n = floe__datum_u32(p);
    p += 4;
    for (uint32_t i = 0; i < n; i++) {
        if (w->depth >= WALK_MAX)
            return walk_fail(w, "nested too deeply");
        w->index[w->depth] = i;
        w->name[w->depth++] = "";
        if (f->kind == FLOE_K_MAP && (p >= w->end || *p != FLOE_SLOT_PRESENT)) {
            w->depth--;
            return walk_fail(w, "map key is null");
        }
        for (uint32_t c = 0; c < f->n_children; c++) {
            int rc = validate_slot(w, &f->children[c], &p);
            if (rc != FLOE_OK)
                return rc;
        }
        w->depth--;
    }
    *pp = p;
    return FLOE_OK;
}

static int validate_slot(walk *w, const floe__field *f, const uint8_t **pp)
{
    const uint8_t *p = *pp;
    if (w->depth >= WALK_MAX)
        return walk_fail(w, "nested too deeply");
    push(w, f, -1);
    if (p >= w->end)
        return walk_fail(w, "row is truncated");
    if (*p == FLOE_SLOT_NULL) {
        if (f->required)
            return walk_fail(w, "null in a not-null field");
        *pp = p + 1;
        w->depth--;
        return FLOE_OK;
    }
    if (*p != FLOE_SLOT_PRESENT)
        return walk_fail(w, "bad slot tag 0x%02x", *p);
    p++;
    const uint8_t *next = skip_payload(f, p, w->end);
    if (!next)
        return walk_fail(w, "row is truncated or malformed");
    if (f->kind == FLOE_K_STRUCT || f->kind == FLOE_K_LIST || f->kind == FLOE_K_MAP) {
        FLOE_FORWARD(validate_children(w, f, &p));
    } else if (f->kind == FLOE_K_STRING || f->kind == FLOE_K_BINARY) {
        FLOE_FORWARD(validate_string(w, f, p + 4, floe__datum_u32(p)));
    } else {
        FLOE_FORWARD(validate_scalar(w, f, p));
    }
    *pp = next;
    w->depth--;
    return FLOE_OK;
}

int floe__datum_validate(const floe__schema *s, const uint8_t *p, size_t n, floe_error *err)
{
    walk w = {.err = err, .end = p + n};
    for (uint32_t i = 0; i < s->root.n_children; i++)
        FLOE_FORWARD(validate_slot(&w, &s->root.children[i], &p));
    if (p != w.end)
        return floe__err_set(err, FLOE_EINPUT, "row: %zu bytes after the last column",
                             (size_t)(w.end - p));
    return FLOE_OK;
}

/* ---- JSON text ----------------------------------------------------------- */

static int put(walk *w, const char *s, size_t n) { return floe__buf_append(w->out, s, n, w->err); }
static int puts_(walk *w, const char *s) { return put(w, s, strlen(s)); }

static int put_json_string(walk *w, const uint8_t *s, size_t n)
{
    /* worst case every byte becomes \u00XX */
    if (n > (SIZE_MAX - 2) / 6)
        return floe__err_set(w->err, FLOE_ELIMIT, "string too long");
    FLOE_FORWARD(floe__buf_reserve(w->out, n * 6 + 2, w->err));
    uint8_t *o = w->out->data + w->out->len;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        if (floe__json_needs_escape(s[i]))
            o += floe__json_escape(s[i], (char *)o);
        else
            *o++ = s[i];
    }
    *o++ = '"';
    w->out->len = (size_t)(o - w->out->data);
    return FLOE_OK;
}

/* The decimal digits of |v| with `scale` of them after a point. */
size_t floe__format_decimal(__int128 v, int scale, char *buf)
{
    unsigned __int128 u = v < 0 ? -(unsigned __int128)v : (unsigned __int128)v;
    char digits[48];
    int nd = 0;
    do {
        digits[nd++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    while (nd <= scale)
        digits[nd++] = '0';          /* at least one digit before the point */
    size_t n = 0;
    if (v < 0)
        buf[n++] = '-';
    for (int i = nd - 1; i >= 0; i--) {
        buf[n++] = digits[i];
        if (i == scale && scale > 0)
            buf[n++] = '.';
    }
    buf[n] = '\0';
    return n;
}

/* Shortest %g text that reads back to the same value. */
static void format_double(double v, bool is_float, char *buf, size_t cap)
{
    for (int prec = is_float ? 6 : 15; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, v);
        if (is_float ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v)
            return;
    }
}

static int put_float(walk *w, const floe__field *f, const uint8_t *p)
{
    double v;
    if (f->kind == FLOE_K_FLOAT) {
        float fv;
        memcpy(&fv, p, 4);
        v = fv;
    } else {
        memcpy(&v, p, 8);
    }
    if (isnan(v))
        return puts_(w, "\"NaN\"");
    if (isinf(v))
        return puts_(w, v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    if (v == 0 && signbit(v))
        return puts_(w, "-0.0");       /* "-0" reads as the integer 0 in many parsers */
    char buf[40];
    format_double(v, f->kind == FLOE_K_FLOAT, buf, sizeof buf);
    return puts_(w, buf);
}

size_t floe__format_date(int64_t days, char *buf)
{
    int64_t y;
    unsigned m, d;
    floe__civil_from_days(days, &y, &m, &d);
    return (size_t)snprintf(buf, 24, "%04lld-%02u-%02u", (long long)y, m, d);
}

/* "HH:MM:SS" and the fraction with trailing zeros cut; us in [0, 86400e6).
 * Writes at most 16 bytes (the date at most 24): callers leave room. */
size_t floe__format_time(int64_t us, char *buf)
{
    int64_t s = us / 1000000, frac = us % 1000000;
    size_t n = (size_t)snprintf(buf, 16, "%02d:%02d:%02d", (int)(s / 3600), (int)(s / 60 % 60),
                               (int)(s % 60));
    if (frac) {
        int digits = 6;
        while (frac % 10 == 0)
            frac /= 10, digits--;
        n += (size_t)snprintf(buf + n, 8, ".%0*lld", digits, (long long)frac);
    }
    return n;
}

size_t floe__format_timestamp(int64_t us, bool zone, char *buf)
{
    int64_t day = us / 86400000000LL, rem = us % 86400000000LL;
    if (rem < 0)
        rem += 86400000000LL, day--;
    size_t n = floe__format_date(day, buf);
    buf[n++] = ' ';
    n += floe__format_time(rem, buf + n);
    if (zone)
        buf[n++] = 'Z';
    buf[n] = 0;
    return n;
}

static int put_temporal(walk *w, const floe__field *f, const uint8_t *p)
{
    char buf[64];
    size_t n = 0;
    buf[n++] = '"';
    if (f->kind == FLOE_K_DATE) {
        n += floe__format_date((int32_t)floe__get_le32(p), buf + n);
    } else if (f->kind == FLOE_K_TIME) {
        int64_t us = (int64_t)floe__get_le64(p);
        if (us < 0 || us >= 86400000000LL)
            return walk_fail(w, "time is out of range");
        n += floe__format_time(us, buf + n);
    } else {
        n += floe__format_timestamp((int64_t)floe__get_le64(p), f->kind == FLOE_K_TIMESTAMPTZ,
                                    buf + n);
    }
    buf[n++] = '"';
    return put(w, buf, n);
}

static int put_base64(walk *w, const uint8_t *p, size_t n)
{
    FLOE_FORWARD(puts_(w, "\""));
    FLOE_FORWARD(floe__base64_encode(p, n, w->out, w->err));
    return puts_(w, "\"");
}

static int put_uuid(walk *w, const uint8_t *p)
{
    char buf[40];
    buf[0] = '"';
    floe__uuid_format(p, buf + 1);
    buf[37] = '"';
    return put(w, buf, 38);
}

static int put_slot(walk *w, const floe__field *f, const uint8_t **pp);

static int put_scalar(walk *w, const floe__field *f, const uint8_t *p)
{
    char buf[64];
    switch (f->kind) {
    case FLOE_K_BOOLEAN:
        return puts_(w, *p ? "true" : "false");
    case FLOE_K_INT:
        return floe__buf_printf(w->out, w->err, "%d", (int)(int32_t)floe__get_le32(p));
    case FLOE_K_LONG:
        return floe__buf_printf(w->out, w->err, "%lld", (long long)(int64_t)floe__get_le64(p));
    case FLOE_K_FLOAT:
    case FLOE_K_DOUBLE:
        return put_float(w, f, p);
    case FLOE_K_DECIMAL: {
        size_t n = floe__format_decimal(get_i128(p), f->scale, buf + 1);
        if (f->decl == FLOE_D_UINT8)
            return put(w, buf + 1, n);
        buf[0] = '"';
        buf[n + 1] = '"';
        return put(w, buf, n + 2);
    }
    case FLOE_K_DATE:
    case FLOE_K_TIME:
    case FLOE_K_TIMESTAMP:
    case FLOE_K_TIMESTAMPTZ:
        return put_temporal(w, f, p);
    case FLOE_K_UUID:
        return put_uuid(w, p);
    case FLOE_K_FIXED:
        if (f->decl == FLOE_D_UUID && f->length == 16)
            return put_uuid(w, p);
        return put_base64(w, p, (size_t)f->length);
    default:
        return walk_fail(w, "unexpected type");
    }
}

static int put_string(walk *w, const floe__field *f, const uint8_t *s, uint32_t n)
{
    if (f->kind == FLOE_K_BINARY)
        return put_base64(w, s, n);
    if (!floe__utf8_valid(s, n))
        return walk_fail(w, "string is not valid UTF-8");
    if (f->decl == FLOE_D_JSONB && n > 0)
        return put(w, (const char *)s, n);     /* stored as compact JSON text */
    return put_json_string(w, s, n);
}

static int put_map(walk *w, const floe__field *f, const uint8_t **pp, uint32_t n)
{
    const floe__field *k = &f->children[0], *v = &f->children[1];
    bool as_object = k->kind == FLOE_K_STRING;
    FLOE_FORWARD(puts_(w, as_object ? "{" : "["));
    for (uint32_t i = 0; i < n; i++) {
        FLOE_FORWARD(puts_(w, i ? "," : ""));
        FLOE_FORWARD(puts_(w, as_object ? "" : "{\"key\":"));
        FLOE_FORWARD(put_slot(w, k, pp));
        FLOE_FORWARD(puts_(w, as_object ? ":" : ",\"value\":"));
        FLOE_FORWARD(put_slot(w, v, pp));
        FLOE_FORWARD(puts_(w, as_object ? "" : "}"));
    }
    return puts_(w, as_object ? "}" : "]");
}

static int put_nested(walk *w, const floe__field *f, const uint8_t **pp)
{
    if (f->kind == FLOE_K_STRUCT) {
        FLOE_FORWARD(puts_(w, "{"));
        for (uint32_t i = 0; i < f->n_children; i++) {
            FLOE_FORWARD(puts_(w, i ? "," : ""));
            const uint8_t *name = (const uint8_t *)f->children[i].name;
            FLOE_FORWARD(put_json_string(w, name, strlen(f->children[i].name)));
            FLOE_FORWARD(puts_(w, ":"));
            FLOE_FORWARD(put_slot(w, &f->children[i], pp));
        }
        return puts_(w, "}");
    }
    uint32_t n = floe__datum_u32(*pp);
    *pp += 4;
    if (f->kind == FLOE_K_MAP)
        return put_map(w, f, pp, n);
    FLOE_FORWARD(puts_(w, "["));
    for (uint32_t i = 0; i < n; i++) {
        FLOE_FORWARD(puts_(w, i ? "," : ""));
        FLOE_FORWARD(put_slot(w, &f->children[0], pp));
    }
    return puts_(w, "]");
}

/* The slot at *pp; bounds were checked by skip_payload before any read. */
static int put_slot(walk *w, const floe__field *f, const uint8_t **pp)
{
    const uint8_t *p = *pp;
    if (p >= w->end)
        return walk_fail(w, "row is truncated");
    if (*p == FLOE_SLOT_NULL) {
        *pp = p + 1;
        return puts_(w, "null");
    }
    const uint8_t *next = floe__datum_skip(f, p, w->end);
    if (!next)
        return walk_fail(w, "row is truncated or malformed");
    p++;
    int rc;
    if (f->kind == FLOE_K_STRUCT || f->kind == FLOE_K_LIST || f->kind == FLOE_K_MAP)
        rc = put_nested(w, f, &p);
    else if (f->kind == FLOE_K_STRING || f->kind == FLOE_K_BINARY)
        rc = put_string(w, f, p + 4, floe__datum_u32(p));
    else
        rc = put_scalar(w, f, p);
    *pp = next;
    return rc;
}

int floe__datum_to_json(const floe__schema *s, const uint8_t *p, size_t n, floe__buf *out,
                        floe_error *err)
{
    walk w = {.err = err, .end = p + n, .out = out};
    size_t start = out->len;
    int rc = puts_(&w, "{");
    for (uint32_t i = 0; rc == FLOE_OK && i < s->root.n_children; i++) {
        const floe__field *f = &s->root.children[i];
        w.name[0] = f->name;
        w.index[0] = -1;
        w.depth = 1;
        rc = puts_(&w, i ? "," : "");
        if (rc == FLOE_OK)
            rc = put_json_string(&w, (const uint8_t *)f->name, strlen(f->name));
        if (rc == FLOE_OK)
            rc = puts_(&w, ":");
        if (rc == FLOE_OK)
            rc = put_slot(&w, f, &p);
    }
    if (rc == FLOE_OK && p != w.end)
        rc = floe__err_set(err, FLOE_EINPUT, "row: %zu bytes after the last column",
                           (size_t)(w.end - p));
    if (rc == FLOE_OK)
        rc = puts_(&w, "}");
    if (rc != FLOE_OK)
        out->len = start;
    return rc;
}

int floe_row_to_json(const floe_row *row, char **out, floe_error *err)
{
    FLOE_RETURN_IF(!row || !out, err, FLOE_EINVAL, "floe_row_to_json: NULL argument");
    FLOE_RETURN_IF(row->data.len == 0 && row->schema->root.n_children > 0, err, FLOE_EINVAL,
                   "floe_row_to_json: the row is empty (cleared, or never filled)");
    floe__buf b;
    floe__buf_init(&b, 0);
    int rc = floe__datum_to_json(row->schema, row->data.data, row->data.len, &b, err);
    if (rc == FLOE_OK) {
        *out = floe__buf_strdup(&b);
        if (!*out)
            rc = FLOE_OOM(err);
    }
    floe__buf_free(&b);
    return rc;
}
