/*
 * pg_types.c - Postgres column types as floe columns (SPEC.md section 3),
 * and Postgres text values as slots of floe's row format.
 *
 * Type mapping (after domains are resolved to their base type, by the
 * caller): boolean; smallint, integer -> int; bigint -> long; oid -> long
 * (uint4); real, double precision; numeric(p,s) -> decimal(p,s) when it
 * fits 38 digits (a negative scale widens the precision: numeric(5,-2) is
 * decimal(7,0); a scale above the precision raises it), else, and for
 * unconstrained numeric, the exact text; json, jsonb -> jsonb (compact
 * JSON text); interval -> text in IntervalStyle iso_8601 ("P1Y2M3DT4H");
 * uuid; bytea -> binary; date, time, timestamp, timestamptz; T[] of a
 * scalar -> list<T>; ranges of a scalar -> range<T>; enums, text, varchar,
 * char(n), name and every type floe does not know -> text (its output).
 *
 * Values arrive as the text of Postgres's output functions under the
 * session settings of pg_conn.c (ISO dates, UTC, hex bytea, iso_8601
 * intervals).  Values an Iceberg column cannot hold are errors naming the
 * type and the value: NaN or infinite numerics, infinite or BC dates and
 * timestamps, 24:00:00, multi-dimensional arrays.  A one-dimensional array
 * printed with its bounds ("[2:3]={..}") loses the bounds.
 */
#include <stdio.h>

#include "source/pg_internal.h"
#include "source/source_internal.h"

/* ---- types -------------------------------------------------------------------------------- */

static void set(floe__pg_type *t, floe__pg_conv c, const char *name)
{
    memset(t, 0, sizeof *t);
    t->conv = c;
    snprintf(t->name, sizeof t->name, "%s", name);
}

/* numeric(p,s) from its typmod: ((p << 16) | (s & 0x7ff)) + 4, s signed
 * 11 bits (Postgres 15 allows -1000..1000). */
static void numeric_type(int32_t typmod, floe__pg_type *t)
{
    if (typmod < 4) {
        set(t, FLOE__PGC_TEXT, "numeric");
        return;
    }
    int32_t p = ((typmod - 4) >> 16) & 0xffff;
    int32_t s = (((typmod - 4) & 0x7ff) ^ 1024) - 1024;
    char name[40];
    snprintf(name, sizeof name, "numeric(%d,%d)", (int)p, (int)s);
    if (s < 0) {
        p -= s;
        s = 0;
    }
    if (s > p)
        p = s;
    set(t, p >= 1 && p <= 38 ? FLOE__PGC_NUMERIC : FLOE__PGC_TEXT, name);
    t->precision = p;
    t->scale = s;
}

void floe__pg_scalar_type(uint32_t oid, int32_t typmod, floe__pg_type *t)
{
    static const struct { uint32_t oid; floe__pg_conv conv; const char *name; } BUILTIN[] = {
        {16, FLOE__PGC_BOOL, "boolean"}, {17, FLOE__PGC_BYTEA, "bytea"},
        {20, FLOE__PGC_INT8, "bigint"}, {21, FLOE__PGC_INT2, "smallint"},
        {23, FLOE__PGC_INT4, "integer"}, {25, FLOE__PGC_TEXT, "text"},
        {26, FLOE__PGC_OID, "oid"}, {114, FLOE__PGC_JSONB, "json"},
        {700, FLOE__PGC_FLOAT4, "real"}, {701, FLOE__PGC_FLOAT8, "double precision"},
        {1042, FLOE__PGC_TEXT, "character"}, {1043, FLOE__PGC_TEXT, "character varying"},
        {1082, FLOE__PGC_DATE, "date"}, {1083, FLOE__PGC_TIME, "time"},
        {1114, FLOE__PGC_TIMESTAMP, "timestamp"}, {1184, FLOE__PGC_TIMESTAMPTZ, "timestamptz"},
        {1186, FLOE__PGC_INTERVAL, "interval"}, {2950, FLOE__PGC_UUID, "uuid"},
        {3802, FLOE__PGC_JSONB, "jsonb"},
    };
    if (oid == 1700) {
        numeric_type(typmod, t);
        return;
    }
    for (size_t i = 0; i < sizeof BUILTIN / sizeof BUILTIN[0]; i++)
        if (BUILTIN[i].oid == oid) {
            set(t, BUILTIN[i].conv, BUILTIN[i].name);
            return;
        }
    set(t, FLOE__PGC_TEXT, "text");
}

static bool scalar(floe__pg_conv c) { return c != FLOE__PGC_ARRAY && c != FLOE__PGC_RANGE; }

void floe__pg_array_of(floe__pg_type *t)
{
    if (!scalar(t->conv)) {                  /* arrays of ranges: their text */
        set(t, FLOE__PGC_TEXT, "array");
        return;
    }
    t->elem = t->conv;
    t->conv = FLOE__PGC_ARRAY;
    size_t n = strlen(t->name);
    if (n + 2 < sizeof t->name)
        memcpy(t->name + n, "[]", 3);
}

void floe__pg_range_of(floe__pg_type *t)
{
    if (!scalar(t->conv)) {
        set(t, FLOE__PGC_TEXT, "range");
        return;
    }
    t->elem = t->conv;
    t->conv = FLOE__PGC_RANGE;
    char name[sizeof t->name + 16];
    snprintf(name, sizeof name, "range of %s", t->name);
    memcpy(t->name, name, sizeof t->name - 1);
    t->name[sizeof t->name - 1] = '\0';
}

static const char *scalar_decl(floe__pg_conv c)
{
    switch (c) {
    case FLOE__PGC_BOOL: return "boolean";
    case FLOE__PGC_INT2: return "smallint";
    case FLOE__PGC_INT4: return "integer";
    case FLOE__PGC_INT8: return "bigint";
    case FLOE__PGC_OID: return "uint4";
    case FLOE__PGC_FLOAT4: return "real";
    case FLOE__PGC_FLOAT8: return "double precision";
    case FLOE__PGC_JSONB: return "jsonb";
    case FLOE__PGC_INTERVAL: return "interval";
    case FLOE__PGC_UUID: return "uuid";
    case FLOE__PGC_BYTEA: return "bytea";
    case FLOE__PGC_DATE: return "date";
    case FLOE__PGC_TIME: return "time";
    case FLOE__PGC_TIMESTAMP: return "timestamp";
    case FLOE__PGC_TIMESTAMPTZ: return "timestamptz";
    default: return "text";
    }
}

void floe__pg_type_decl(const floe__pg_type *t, char *out, size_t n)
{
    floe__pg_conv c = scalar(t->conv) ? t->conv : t->elem;
    char one[48];
    if (c == FLOE__PGC_NUMERIC)
        snprintf(one, sizeof one, "numeric(%d,%d)", (int)t->precision, (int)t->scale);
    else
        snprintf(one, sizeof one, "%s", scalar_decl(c));
    if (t->conv == FLOE__PGC_ARRAY)
        snprintf(out, n, "%s[]", one);
    else if (t->conv == FLOE__PGC_RANGE)
        snprintf(out, n, "range<%s>", one);
    else
        snprintf(out, n, "%s", one);
}

/* Postgres moves a value out of line only when it is longer than this
 * (the aligned size of a TOAST pointer): the largest value toast_tuple
 * looks at must exceed it.  Sizes below count the 4-byte header. */
#define TOAST_MIN_BYTES 24

bool floe__pg_toastable(char storage, int typlen, uint32_t oid, int32_t typmod)
{
    if (typlen != -1 || storage == 'p')
        return false;
    if (typmod < 4)
        return true;                             /* no bound */
    uint32_t m = (uint32_t)typmod - 4;
    switch (oid) {
    case 1700: {                                 /* numeric(p,s): 4-digit groups */
        uint32_t p = m >> 16, groups = (p + 3) / 4 + 1;
        return 4 + 2 + 2 * groups > TOAST_MIN_BYTES;
    }
    case 1043: case 1042:                        /* varchar(n), char(n): 4 bytes a char */
        return 4 + 4 * m > TOAST_MIN_BYTES;
    default:
        return true;
    }
}

/* ---- values: slots ------------------------------------------------------------------------ */

typedef struct vctx {
    const floe__pg_type *t;
    floe__buf *out, *scratch;
    floe_error *err;
    const char *whole;              /* the whole value, for messages */
    size_t whole_len;
} vctx;

static int bad_value(vctx *v, const char *why)
{
    int n = v->whole_len > 60 ? 60 : (int)v->whole_len;
    return floe__err_set(v->err, FLOE_EINPUT, "%s value '%.*s%s': %s", v->t->name, n, v->whole,
                         v->whole_len > 60 ? "..." : "", why);
}

static int put_fixed(vctx *v, const void *p, size_t n)
{
    FLOE_FORWARD(floe__buf_reserve(v->out, n + 1, v->err));
    uint8_t *o = v->out->data + v->out->len;
    o[0] = FLOE_SLOT_PRESENT;
    memcpy(o + 1, p, n);
    v->out->len += n + 1;
    return FLOE_OK;
}

static int put_string(vctx *v, const char *s, size_t n)
{
    if (n > UINT32_MAX)
        return bad_value(v, "longer than 4 GiB");
    FLOE_FORWARD(floe__buf_reserve(v->out, n + 5, v->err));
    uint8_t *o = v->out->data + v->out->len;
    o[0] = FLOE_SLOT_PRESENT;
    floe__put_le32(o + 1, (uint32_t)n);
    if (n)
        memcpy(o + 5, s, n);
    v->out->len += n + 5;
    return FLOE_OK;
}

/* An integer in [lo, hi]: optional '-', digits, nothing else. */
static int integer(vctx *v, const char *s, size_t n, int64_t lo, int64_t hi, int64_t *out)
{
    size_t i = n && s[0] == '-';
    if (i == n || n - i > 19)
        return bad_value(v, "not an integer in range");
    uint64_t x = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return bad_value(v, "not an integer");
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    bool neg = s[0] == '-';
    if ((!neg && x > (uint64_t)hi) || (neg && x > (uint64_t)0 - (uint64_t)lo))
        return bad_value(v, "out of range");
    *out = neg ? (int64_t)((uint64_t)0 - x) : (int64_t)x;
    return FLOE_OK;
}

static int put_int(vctx *v, const floe__field *f, const char *s, size_t n)
{
    int64_t x = 0;
    floe__pg_conv c = v->t->conv == FLOE__PGC_ARRAY || v->t->conv == FLOE__PGC_RANGE
                          ? v->t->elem : v->t->conv;
    int64_t lo = c == FLOE__PGC_INT2 ? -32768 : c == FLOE__PGC_INT4 ? INT32_MIN
                 : c == FLOE__PGC_OID ? 0 : INT64_MIN;
    int64_t hi = c == FLOE__PGC_INT2 ? 32767 : c == FLOE__PGC_INT4 ? INT32_MAX
                 : c == FLOE__PGC_OID ? (int64_t)UINT32_MAX : INT64_MAX;
    FLOE_FORWARD(integer(v, s, n, lo, hi, &x));
    if (f->kind == FLOE_K_INT) {
        FLOE_RETURN_IF(x < INT32_MIN || x > INT32_MAX, v->err, FLOE_EINPUT,
                       "%s value %lld does not fit an int column", v->t->name, (long long)x);
        uint32_t w = (uint32_t)(int32_t)x;
        return put_fixed(v, &w, 4);
    }
    uint64_t w = (uint64_t)x;
    return put_fixed(v, &w, 8);
}

static int put_float(vctx *v, const floe__field *f, const char *s, size_t n)
{
    double d = 0;
    float fl = 0;
    const char *why = NULL;
    if (floe__parse_float_special(s, n, &d))
        fl = (float)d;
    else if (f->kind == FLOE_K_FLOAT)
        why = floe__parse_float(s, n, &fl);
    else
        why = floe__parse_double(s, n, &d);
    if (why)
        return bad_value(v, why);
    if (f->kind == FLOE_K_FLOAT) {
        uint32_t w;
        memcpy(&w, &fl, 4);
        if (fl != fl)
            w = 0x7fc00000u;
        return put_fixed(v, &w, 4);
    }
    uint64_t w;
    memcpy(&w, &d, 8);
    if (d != d)
        w = 0x7ff8000000000000ull;
    return put_fixed(v, &w, 8);
}

static int put_decimal(vctx *v, const floe__field *f, const char *s, size_t n)
{
    double special;
    if (floe__parse_float_special(s, n, &special))
        return bad_value(v, "NaN and infinities cannot be stored in an Iceberg decimal");
    floe__i128 x;
    bool inexact;
    const char *why = floe__parse_decimal(s, n, f->precision, f->scale, &x, &inexact);
    if (why)
        return bad_value(v, why[0] == 'o' ? "too many digits for the column's precision" : why);
    return put_fixed(v, &x, 16);
}

static int put_jsonb(vctx *v, const char *s, size_t n)
{
    FLOE_FORWARD(floe__buf_reserve(v->out, 5, v->err));
    size_t at = v->out->len;
    v->out->data[at] = FLOE_SLOT_PRESENT;
    v->out->len += 5;
    const char *end;
    int rc = floe__json_compact_value(s, s + n, &end, v->out, v->err);
    if (rc == FLOE_OK && floe__json_ws(end, s + n) != s + n)
        rc = floe__err_set(v->err, FLOE_EINPUT, "text after the JSON value");
    if (rc != FLOE_OK || v->out->len - at - 5 > UINT32_MAX) {
        v->out->len = at;
        return floe__err_wrap(v->err, rc == FLOE_OK ? FLOE_EINPUT : rc, "%s value", v->t->name);
    }
    floe__put_le32(v->out->data + at + 1, (uint32_t)(v->out->len - at - 5));
    return FLOE_OK;
}

static int put_uuid(vctx *v, const floe__field *f, const char *s, size_t n)
{
    uint8_t u[16];
    if (floe__uuid_parse(s, n, u) != 0)
        return bad_value(v, "not a uuid");
    if (f->kind != FLOE_K_STRING)
        return put_fixed(v, u, 16);
    char text[37];
    floe__uuid_format(u, text);
    return put_string(v, text, 36);
}

static int hexdig(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static int put_bytea(vctx *v, const char *s, size_t n)
{
    if (n < 2 || s[0] != '\\' || s[1] != 'x' || n % 2)
        return bad_value(v, "expected hex output (\\x...)");
    size_t len = (n - 2) / 2;
    FLOE_FORWARD(floe__buf_reserve(v->out, len + 5, v->err));
    uint8_t *o = v->out->data + v->out->len;
    for (size_t i = 0; i < len; i++) {
        int hi = hexdig(s[2 + 2 * i]), lo = hexdig(s[3 + 2 * i]);
        if (hi < 0 || lo < 0)
            return bad_value(v, "bad hex digit");
        o[5 + i] = (uint8_t)(hi << 4 | lo);
    }
    if (len > UINT32_MAX)
        return bad_value(v, "longer than 4 GiB");
    o[0] = FLOE_SLOT_PRESENT;
    floe__put_le32(o + 1, (uint32_t)len);
    v->out->len += len + 5;
    return FLOE_OK;
}

static int put_temporal(vctx *v, floe__pg_conv c, const char *s, size_t n)
{
    const char *why;
    if (c == FLOE__PGC_DATE) {
        int32_t days;
        if (!(why = floe__parse_date(s, n, &days)))
            return put_fixed(v, &days, 4);
    } else {
        int64_t us;
        why = c == FLOE__PGC_TIME ? floe__parse_time(s, n, &us)
                                  : floe__parse_timestamp(s, n, c == FLOE__PGC_TIMESTAMPTZ, &us);
        if (!why)
            return put_fixed(v, &us, 8);
    }
    return bad_value(v, why);
}

static int put_text(vctx *v, const char *s, size_t n)
{
    if (!floe__utf8_valid((const uint8_t *)s, n))
        return bad_value(v, "not valid UTF-8");
    return put_string(v, s, n);
}

static int put_scalar(vctx *v, floe__pg_conv c, const floe__field *f, const char *s, size_t n)
{
    switch (c) {
    case FLOE__PGC_BOOL: {
        if (n != 1 || (s[0] != 't' && s[0] != 'f'))
            return bad_value(v, "expected t or f");
        uint8_t b = s[0] == 't';
        return put_fixed(v, &b, 1);
    }
    case FLOE__PGC_INT2: case FLOE__PGC_INT4: case FLOE__PGC_INT8: case FLOE__PGC_OID:
        return put_int(v, f, s, n);
    case FLOE__PGC_FLOAT4: case FLOE__PGC_FLOAT8:
        return put_float(v, f, s, n);
    case FLOE__PGC_NUMERIC:
        return put_decimal(v, f, s, n);
    case FLOE__PGC_JSONB:
        return put_jsonb(v, s, n);
    case FLOE__PGC_UUID:
        return put_uuid(v, f, s, n);
    case FLOE__PGC_BYTEA:
        return put_bytea(v, s, n);
    case FLOE__PGC_DATE: case FLOE__PGC_TIME: case FLOE__PGC_TIMESTAMP:
    case FLOE__PGC_TIMESTAMPTZ:
        return put_temporal(v, c, s, n);
    default:
        return put_text(v, s, n);
    }
}

/* ---- arrays and ranges: quoted parts ------------------------------------------------------- */

/* One element or bound starting at *pp: quoted ("..." with backslash
 * escapes; in range bounds "" is a quote too) or bare up to a delimiter in
 * `stops`.  Decoded into scratch when quoted. */
static int part(vctx *v, const char **pp, const char *end, const char *stops, bool doubled,
                const char **s, size_t *n, bool *quoted)
{
    const char *p = *pp;
    *quoted = p < end && *p == '"';
    if (!*quoted) {
        const char *q = p;
        while (q < end && !strchr(stops, *q))
            q++;
        *s = p;
        *n = (size_t)(q - p);
        *pp = q;
        return FLOE_OK;
    }
    floe__buf_reset(v->scratch);
    for (p++;; p++) {
        if (p >= end)
            return bad_value(v, "unterminated quoted part");
        if (doubled && *p == '"' && p + 1 < end && p[1] == '"') {
            p++;                              /* "" in a range bound */
        } else if (*p == '"') {
            break;
        } else if (*p == '\\') {
            if (++p >= end)
                return bad_value(v, "unterminated escape");
        }
        FLOE_FORWARD(floe__buf_putc(v->scratch, (uint8_t)*p, v->err));
    }
    *pp = p + 1;
    *s = (const char *)v->scratch->data;
    *n = v->scratch->len;
    return FLOE_OK;
}

static bool is_null_word(const char *s, size_t n)
{
    return n == 4 && (s[0] | 0x20) == 'n' && (s[1] | 0x20) == 'u' && (s[2] | 0x20) == 'l' &&
           (s[3] | 0x20) == 'l';
}

static int put_null(vctx *v, const floe__field *f)
{
    if (f->required)
        return bad_value(v, "null where the column's element is required");
    return floe__buf_putc(v->out, FLOE_SLOT_NULL, v->err);
}

/* Skip "[a:b]=" before an array; more than one dimension is an error. */
static int array_bounds(vctx *v, const char **pp, const char *end)
{
    const char *p = *pp;
    if (p >= end || *p != '[')
        return FLOE_OK;
    const char *eq = memchr(p, '=', (size_t)(end - p));
    if (!eq || eq[-1] != ']' || memchr(p + 1, '[', (size_t)(eq - p - 1)))
        return bad_value(v, "multi-dimensional arrays cannot be stored (one dimension only)");
    *pp = eq + 1;
    return FLOE_OK;
}

static int array_elements(vctx *v, const floe__field *ef, const char **pp, const char *end,
                          uint32_t *count)
{
    const char *p = *pp;
    if (p < end && *p == '}') {
        *pp = p + 1;
        return FLOE_OK;
    }
    for (;;) {
        if (p < end && *p == '{')
            return bad_value(v, "multi-dimensional arrays cannot be stored (one dimension only)");
        const char *s;
        size_t n;
        bool quoted;
        FLOE_FORWARD(part(v, &p, end, ",}", false, &s, &n, &quoted));
        if (!quoted && is_null_word(s, n))
            FLOE_FORWARD(put_null(v, ef));
        else
            FLOE_FORWARD(put_scalar(v, v->t->elem, ef, s, n));
        FLOE_RETURN_IF(*count == UINT32_MAX, v->err, FLOE_ELIMIT, "array too long");
        (*count)++;
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        if (p < end && *p == '}') {
            *pp = p + 1;
            return FLOE_OK;
        }
        return bad_value(v, "expected ',' or '}' in an array");
    }
}

static int put_array(vctx *v, const floe__field *f, const char *s, size_t n)
{
    const char *p = s, *end = s + n;
    FLOE_FORWARD(array_bounds(v, &p, end));
    if (p >= end || *p != '{')
        return bad_value(v, "expected an array ('{...}')");
    size_t at = v->out->len;
    FLOE_FORWARD(floe__buf_reserve(v->out, 5, v->err));
    v->out->data[at] = FLOE_SLOT_PRESENT;
    v->out->len += 5;
    uint32_t count = 0;
    p++;
    int rc = array_elements(v, &f->children[0], &p, end, &count);
    if (rc == FLOE_OK && p != end)
        rc = bad_value(v, "text after the array");
    if (rc != FLOE_OK) {
        v->out->len = at;
        return rc;
    }
    floe__put_le32(v->out->data + at + 1, count);
    return FLOE_OK;
}

static int put_bool_slot(vctx *v, bool b)
{
    uint8_t x = b;
    return put_fixed(v, &x, 1);
}

/* A range bound: empty (infinite) -> null. */
static int range_bound(vctx *v, const floe__field *f, const char **pp, const char *end,
                       const char *stops)
{
    const char *s;
    size_t n;
    bool quoted;
    FLOE_FORWARD(part(v, pp, end, stops, true, &s, &n, &quoted));
    if (!quoted && n == 0)
        return floe__buf_putc(v->out, FLOE_SLOT_NULL, v->err);
    return put_scalar(v, v->t->elem, f, s, n);
}

static int range_parts(vctx *v, const floe__field *f, const char *s, size_t n)
{
    const char *p = s, *end = s + n;
    if (n == 5 && memcmp(s, "empty", 5) == 0) {
        FLOE_FORWARD(floe__buf_append(v->out, "\0\0", 2, v->err));        /* lower, upper */
        FLOE_FORWARD(put_bool_slot(v, false));
        FLOE_FORWARD(put_bool_slot(v, false));
        return put_bool_slot(v, true);
    }
    if (p >= end || (*p != '[' && *p != '('))
        return bad_value(v, "expected a range ('[', '(' or empty)");
    bool lower_inc = *p++ == '[';
    FLOE_FORWARD(range_bound(v, &f->children[0], &p, end, ",)]"));
    if (p >= end || *p != ',')
        return bad_value(v, "expected ',' between a range's bounds");
    p++;
    FLOE_FORWARD(range_bound(v, &f->children[1], &p, end, ",)]"));
    if (p + 1 != end || (*p != ']' && *p != ')'))
        return bad_value(v, "expected ']' or ')' ending a range");
    FLOE_FORWARD(put_bool_slot(v, lower_inc));
    FLOE_FORWARD(put_bool_slot(v, *p == ']'));
    return put_bool_slot(v, false);
}

static int put_range(vctx *v, const floe__field *f, const char *s, size_t n)
{
    size_t at = v->out->len;
    FLOE_FORWARD(floe__buf_putc(v->out, FLOE_SLOT_PRESENT, v->err));
    int rc = range_parts(v, f, s, n);
    if (rc != FLOE_OK)
        v->out->len = at;
    return rc;
}

int floe__pg_value_put(const floe__pg_type *t, const floe__field *f, const char *s, size_t n,
                       floe__buf *out, floe__buf *scratch, floe_error *err)
{
    vctx v = {t, out, scratch, err, s, n};
    size_t at = out->len;
    int rc;
    if (t->conv == FLOE__PGC_ARRAY)
        rc = f->kind == FLOE_K_LIST ? put_array(&v, f, s, n)
                                    : bad_value(&v, "the column is not a list");
    else if (t->conv == FLOE__PGC_RANGE)
        rc = f->kind == FLOE_K_STRUCT && f->n_children == 5 ? put_range(&v, f, s, n)
                                                            : bad_value(&v, "not a range column");
    else
        rc = put_scalar(&v, t->conv, f, s, n);
    if (rc != FLOE_OK)
        out->len = at;
    return rc;
}
