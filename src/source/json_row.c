/*
 * json_row.c - JSON object -> one row in floe's row format
 * (schema_internal.h), and the public floe_row_new / free / clear /
 * set_json.
 *
 * Value rules by declared type (SPEC.md section 2):
 *   smallint, integer, bigint, uint2, uint4, uint8
 *        JSON numbers that are exact integers in the type's range.  Digits
 *        are read without strtoll or doubles.  Forms with a fraction or
 *        exponent are accepted only when their value is an exact integer
 *        (1.0, 1e3, 1.5e1); 1.5 is an error.  Strings are errors.
 *   numeric(p,s)
 *        a JSON number or a string holding one ("1.5E+3", "-0.00", ".5"),
 *        exact; extra fraction digits are rounded half away from zero (as
 *        PostgreSQL does); more than p digits is an error; "NaN" and
 *        infinities are errors (an Iceberg decimal cannot hold them).
 *   real, double precision
 *        JSON numbers, correctly rounded (overflow is an error, underflow
 *        gives 0, -0 is kept); strings "NaN", "Infinity", "-Infinity" (also
 *        "+Infinity", "inf", any case).  Every NaN is stored canonical.
 *   boolean   true / false
 *   text, interval, varchar   any JSON string (escapes decoded, UTF-8 checked)
 *   jsonb, json    any JSON value except null, stored as its compact text
 *        (see floe__json_compact_value); JSON null is SQL NULL
 *   uuid      a string in 8-4-4-4-12 form, any case; stored lower-case (kind
 *        string) or as 16 bytes (kind uuid or fixed[16])
 *   bytea     base64 (standard alphabet, padded) in a string
 *   date, time, timestamp, timestamptz   strings, see schema/value_text.c
 *   T[], list<T>   arrays
 *   record(...), ranges   objects: unknown key = error, missing = null (or the
 *                         field's write-default)
 *   map[text=>T]   objects; entries are stored sorted by key bytes (equal
 *        maps give equal rows); a repeated key is an error
 *   null      null, except in a not-null column, record field, list<T not
 *        null> element or map[text=>T not null] value.
 *   Repeated keys in any object (other than inside jsonb) are errors.
 * Fields of an Iceberg schema (decl FLOE_D_NONE) are read by kind: int and
 * long as integers in their range, decimal as numeric, string as text,
 * binary as base64, uuid as a uuid string, fixed[L] as base64 of exactly L
 * bytes (fixed[16] also takes a uuid string), the rest as above.  Maps with
 * string keys are objects; maps with other keys are arrays of
 * {"key": .., "value": ..} objects.
 *
 * How it is fast: one pass, writing slots straight into the output buffer;
 * object keys in schema order take a fast path (one comparison with the
 * expected name, missing ones filled with nulls as they are passed); keys
 * out of order are put in order once the object ends by copying the
 * recorded slot ranges.  Bookkeeping lives on a scratch stack that starts
 * inside the parse context (no allocation unless objects are very wide or
 * deep).  On error the path to the value is collected while unwinding,
 * so the success path pays nothing for messages.
 */
#include <math.h>
#include <stdio.h>

#include "source/source_internal.h"

#define STACK_INLINE 512            /* scratch words kept in the context */
#define PATH_MAX_PARTS 80           /* > FLOE__SCHEMA_MAX_DEPTH: one per level */
#define UNSEEN SIZE_MAX

typedef struct path_part {
    const char *s;                  /* field name, or raw (escaped) map key */
    size_t n;
    int64_t index;                  /* list position, or -1 */
    bool key;                       /* s is a map key */
} path_part;

typedef struct ctx {
    floe__buf *out;
    floe_error *err;
    const char *start, *end;        /* the row text */
    const char *err_at;             /* where the error was found */
    size_t *stk;                    /* scratch stack (struct and map bookkeeping) */
    size_t stk_len, stk_cap;
    path_part path[PATH_MAX_PARTS]; /* innermost first, filled while unwinding */
    int path_len;
    floe__buf tmp;                  /* decoded escaped strings, when long */
    size_t inline_stk[STACK_INLINE];
} ctx;

static int read_value(ctx *c, const floe__field *f, const char **pp);

/* ---- errors ---------------------------------------------------------------- */

static int fail(ctx *c, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(ctx *c, const char *at, const char *fmt, ...)
{
    char msg[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->err_at = at;
    return floe__err_set(c->err, FLOE_EINPUT, "%s", msg);
}

/* A scanner failed with *q at the offending byte. */
static int scan_failed(ctx *c, int rc, const char *q)
{
    c->err_at = q;
    return rc;
}

static void path_push(ctx *c, path_part part)
{
    if (c->path_len < PATH_MAX_PARTS)
        c->path[c->path_len++] = part;
}

static void path_name(ctx *c, const char *name)
{
    path_push(c, (path_part){name, strlen(name), -1, false});
}

/* The value text at p for a message: up to 40 bytes of the token (a whole
 * string token when it fits, quotes included). */
static void token_text(ctx *c, const char *p, char out[48])
{
    size_t n = 0;
    if (p < c->end && *p == '"') {
        for (n = 1; p + n < c->end && n < 40; n++)
            if (p[n] == '"' && p[n - 1] != '\\') {
                n++;
                break;
            }
    } else {
        while (p + n < c->end && n < 40 && !strchr(",}] \t\r\n", p[n]))
            n++;
    }
    memcpy(out, p, n);
    const char *more = p + n < c->end && n == 40 ? "..." : "";
    memcpy(out + n, more, strlen(more) + 1);
}

static const char *token_kind(char ch)
{
    switch (ch) {
    case '"': return "a string";
    case '{': return "an object";
    case '[': return "an array";
    case 't': case 'f': return "a boolean";
    case 'n': return "null";
    default: return ch == '-' || (ch >= '0' && ch <= '9') ? "a number" : "invalid JSON";
    }
}

static int type_error(ctx *c, const floe__field *f, const char *p, const char *expected)
{
    char t[64];
    floe__type_name(f, true, t, sizeof t);
    return fail(c, p, "expected %s for %s, found %s", expected, t, token_kind(*p));
}

static int value_error(ctx *c, const floe__field *f, const char *p, const char *why)
{
    char t[64], v[48];
    floe__type_name(f, true, t, sizeof t);
    token_text(c, p, v);
    return fail(c, p, "%s value %s: %s", t, v, why);
}

/* ---- output helpers ---------------------------------------------------------- */

static inline int reserve(ctx *c, size_t n) { return floe__buf_reserve(c->out, n, c->err); }

/* A present slot with a fixed-width payload. */
static inline int put_fixed(ctx *c, const void *v, size_t n)
{
    FLOE_FORWARD(reserve(c, n + 1));
    uint8_t *o = c->out->data + c->out->len;
    o[0] = FLOE_SLOT_PRESENT;
    memcpy(o + 1, v, n);
    c->out->len += n + 1;
    return FLOE_OK;
}

static inline int put_nulls(ctx *c, size_t n)
{
    FLOE_FORWARD(reserve(c, n));
    memset(c->out->data + c->out->len, FLOE_SLOT_NULL, n);
    c->out->len += n;
    return FLOE_OK;
}

/* The slot of a field the object left out: its write-default, else null. */
static inline size_t missing_len(const floe__field *f)
{
    return f->write_default ? 1 + (size_t)f->write_default_len : 1;
}

static inline uint8_t *put_missing_at(uint8_t *o, const floe__field *f)
{
    if (!f->write_default) {
        *o = FLOE_SLOT_NULL;
        return o + 1;
    }
    *o = FLOE_SLOT_PRESENT;
    memcpy(o + 1, f->write_default, f->write_default_len);
    return o + 1 + f->write_default_len;
}

/* The slots of children [from, to) of f, left out by the object. */
static int put_missing(ctx *c, const floe__field *f, uint32_t from, uint32_t to)
{
    size_t need = 0;
    for (uint32_t j = from; j < to; j++)
        need += missing_len(&f->children[j]);
    if (need == to - from)
        return put_nulls(c, need);
    FLOE_FORWARD(reserve(c, need));
    uint8_t *o = c->out->data + c->out->len;
    for (uint32_t j = from; j < to; j++)
        o = put_missing_at(o, &f->children[j]);
    c->out->len += need;
    return FLOE_OK;
}

/* ---- scratch stack ------------------------------------------------------------ */

/* Pushes n words set to UNSEEN; *frame receives their index. */
static int stk_push(ctx *c, size_t n, size_t *frame)
{
    if (c->stk_cap - c->stk_len < n) {
        size_t cap = c->stk_cap * 2 > c->stk_len + n ? c->stk_cap * 2 : c->stk_len + n;
        size_t *s = c->stk == c->inline_stk ? floe__malloc(cap * sizeof(size_t))
                                            : floe__realloc(c->stk, cap * sizeof(size_t));
        if (!s)
            return FLOE_OOM(c->err);
        if (c->stk == c->inline_stk)
            memcpy(s, c->inline_stk, c->stk_len * sizeof(size_t));
        c->stk = s;
        c->stk_cap = cap;
    }
    *frame = c->stk_len;
    for (size_t i = 0; i < n; i++)
        c->stk[c->stk_len + i] = UNSEEN;
    c->stk_len += n;
    return FLOE_OK;
}

/* ---- strings ---------------------------------------------------------------- */

/* The decoded contents of the string value at *pp (which must be one). */
static int string_value(ctx *c, const floe__field *f, const char **pp, const char **s, size_t *n,
                        const char *expected)
{
    const char *p = *pp, *q;
    if (*p != '"')
        return type_error(c, f, p, expected);
    floe__json_str js;
    int rc = floe__json_scan_string(p, c->end, &q, &js, c->err);
    if (rc != FLOE_OK)
        return scan_failed(c, rc, q);
    *pp = q;
    if (!js.escaped) {
        *s = js.raw;
        *n = js.len;
        return FLOE_OK;
    }
    floe__buf_reset(&c->tmp);
    FLOE_FORWARD(floe__buf_reserve(&c->tmp, js.len, c->err));
    *n = floe__json_unescape(&js, (char *)c->tmp.data);
    *s = (const char *)c->tmp.data;
    return FLOE_OK;
}

/* A text slot straight from the JSON string at *pp. */
static int read_text(ctx *c, const floe__field *f, const char **pp)
{
    const char *p = *pp, *q;
    if (*p != '"')
        return type_error(c, f, p, "a string");
    floe__json_str js;
    int rc = floe__json_scan_string(p, c->end, &q, &js, c->err);
    if (rc != FLOE_OK)
        return scan_failed(c, rc, q);
    if (js.len > UINT32_MAX)
        return fail(c, p, "string longer than 4 GiB");
    FLOE_FORWARD(reserve(c, js.len + 5));
    uint8_t *o = c->out->data + c->out->len;
    size_t n = floe__json_unescape(&js, (char *)o + 5);
    o[0] = FLOE_SLOT_PRESENT;
    floe__put_le32(o + 1, (uint32_t)n);
    c->out->len += n + 5;
    *pp = q;
    return FLOE_OK;
}

static int read_jsonb(ctx *c, const char **pp)
{
    FLOE_FORWARD(reserve(c, 5));
    size_t at = c->out->len;
    c->out->data[at] = FLOE_SLOT_PRESENT;
    c->out->len += 5;
    const char *q;
    int rc = floe__json_compact_value(*pp, c->end, &q, c->out, c->err);
    if (rc != FLOE_OK)
        return scan_failed(c, rc, q);
    size_t n = c->out->len - at - 5;
    if (n > UINT32_MAX)
        return fail(c, *pp, "jsonb value longer than 4 GiB");
    floe__put_le32(c->out->data + at + 1, (uint32_t)n);
    *pp = q;
    return FLOE_OK;
}

static int read_uuid(ctx *c, const floe__field *f, const char **pp)
{
    const char *p = *pp, *s;
    size_t n;
    FLOE_FORWARD(string_value(c, f, pp, &s, &n, "a uuid string"));
    uint8_t u[16];
    if (floe__uuid_parse(s, n, u) != 0)
        return value_error(c, f, p, "expected xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx");
    if (f->kind != FLOE_K_STRING)
        return put_fixed(c, u, 16);
    char text[37];
    floe__uuid_format(u, text);
    uint8_t slot[40];
    floe__put_le32(slot, 36);
    memcpy(slot + 4, text, 36);
    return put_fixed(c, slot, 40);
}

/* bytea / binary: base64 into a length-prefixed slot; fixed: exactly L bytes. */
static int read_base64(ctx *c, const floe__field *f, const char **pp)
{
    const char *p = *pp, *s;
    size_t n;
    FLOE_FORWARD(string_value(c, f, pp, &s, &n, "a base64 string"));
    if (f->kind == FLOE_K_FIXED && f->length == 16 && n == 36) {
        uint8_t u[16];
        if (floe__uuid_parse(s, n, u) == 0)
            return put_fixed(c, u, 16);
    }
    bool fixed = f->kind == FLOE_K_FIXED;
    size_t hdr = fixed ? 1 : 5;
    FLOE_FORWARD(reserve(c, hdr));
    size_t at = c->out->len;
    c->out->data[at] = FLOE_SLOT_PRESENT;
    c->out->len += hdr;
    int rc = floe__base64_decode(s, n, c->out, c->err);
    if (rc != FLOE_OK)
        return scan_failed(c, rc, p);
    size_t len = c->out->len - at - hdr;
    if (fixed && len != (size_t)f->length)
        return value_error(c, f, p, "wrong number of bytes for a fixed-length value");
    if (len > UINT32_MAX)
        return fail(c, p, "value longer than 4 GiB");
    if (!fixed)
        floe__put_le32(c->out->data + at + 1, (uint32_t)len);
    return FLOE_OK;
}

/* ---- numbers ------------------------------------------------------------------ */

/* The JSON number token at p: *q after it. */
static int number_token(ctx *c, const floe__field *f, const char *p, const char **q,
                        const char *expected)
{
    if (*p != '-' && (unsigned)(*p - '0') > 9)
        return type_error(c, f, p, expected);
    int rc = floe__json_scan_number(p, c->end, q, c->err);
    return rc == FLOE_OK ? FLOE_OK : scan_failed(c, rc, *q);
}

/* An exact integer: the common case is a run of at most 18 digits, read
 * directly; anything longer or with a fraction/exponent goes through the
 * exact decimal parser. */
static int int_token(ctx *c, const floe__field *f, const char **pp, floe__i128 *out)
{
    const char *p = *pp, *q = p, *end = c->end;
    bool neg = q < end && *q == '-';
    q += neg;
    const char *d0 = q;
    uint64_t v = 0;
    while (q < end && (unsigned)(*q - '0') <= 9 && q - d0 < 18)
        v = v * 10 + (uint64_t)(*q++ - '0');
    bool simple = q > d0 && (q == end || (*q != '.' && *q != 'e' && *q != 'E' &&
                                          (unsigned)(*q - '0') > 9));
    if (simple && !(*d0 == '0' && q - d0 > 1)) {
        *out = neg ? -(floe__i128)v : (floe__i128)v;
        *pp = q;
        return FLOE_OK;
    }
    FLOE_FORWARD(number_token(c, f, p, &q, "an integer"));
    bool inexact;
    const char *why = floe__parse_decimal(p, (size_t)(q - p), 20, 0, out, &inexact);
    if (why)
        return value_error(c, f, p, "out of range");
    if (inexact)
        return value_error(c, f, p, "not an integer");
    *pp = q;
    return FLOE_OK;
}

/* The inclusive range of an integer field, by declared type, else kind. */
static void int_range(const floe__field *f, floe__i128 *lo, floe__i128 *hi)
{
    switch (f->decl) {
    case FLOE_D_SMALLINT: *lo = -32768; *hi = 32767; return;
    case FLOE_D_UINT2: *lo = 0; *hi = 65535; return;
    case FLOE_D_UINT4: *lo = 0; *hi = UINT32_MAX; return;
    case FLOE_D_UINT8: *lo = 0; *hi = UINT64_MAX; return;
    default: break;
    }
    if (f->kind == FLOE_K_INT) {
        *lo = INT32_MIN;
        *hi = INT32_MAX;
    } else {
        *lo = INT64_MIN;
        *hi = INT64_MAX;
    }
}

static int read_int(ctx *c, const floe__field *f, const char **pp)
{
    const char *p = *pp;
    if (*p != '-' && (unsigned)(*p - '0') > 9)
        return type_error(c, f, p, "a JSON integer");
    floe__i128 v, lo, hi;
    FLOE_FORWARD(int_token(c, f, pp, &v));
    int_range(f, &lo, &hi);
    if (v < lo || v > hi)
        return value_error(c, f, p, "out of range");
    if (f->kind == FLOE_K_INT) {
        uint32_t w = (uint32_t)(int32_t)v;
        return put_fixed(c, &w, 4);
    }
    if (f->kind == FLOE_K_LONG) {
        uint64_t w = (uint64_t)(int64_t)v;
        return put_fixed(c, &w, 8);
    }
    return put_fixed(c, &v, 16);            /* uint8: decimal(20,0) */
}

/* Plain JSON decimals ("-123.45": at most 18 digits, no exponent, no more
 * fraction digits than the scale) straight to the unscaled value; false
 * when the general parser is needed. */
static bool fast_decimal(ctx *c, const floe__field *f, const char **pp, floe__i128 *out)
{
    static const int64_t P10[19] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                    100000000, 1000000000, 10000000000LL, 100000000000LL,
                                    1000000000000LL, 10000000000000LL, 100000000000000LL,
                                    1000000000000000LL, 10000000000000000LL,
                                    100000000000000000LL, 1000000000000000000LL};
    const char *q = *pp, *end = c->end;
    bool neg = q < end && *q == '-';
    q += neg;
    const char *d0 = q;
    int64_t v = 0;
    int ni = 0, nf = 0;                     /* v never exceeds 18 digits */
    for (; q < end && (unsigned)(*q - '0') <= 9; q++, ni++) {
        if (ni == 18)
            return false;
        v = v * 10 + (*q - '0');
    }
    if (ni == 0 || (*d0 == '0' && ni > 1))
        return false;
    if (q < end && *q == '.') {
        for (q++; q < end && (unsigned)(*q - '0') <= 9; q++, nf++) {
            if (ni + nf == 18)
                return false;
            v = v * 10 + (*q - '0');
        }
        if (nf == 0)
            return false;
    }
    if (nf > f->scale || ni + f->scale > 18 ||
        (q < end && (*q == 'e' || *q == 'E' || (unsigned)(*q - '0') <= 9)))
        return false;
    v *= P10[f->scale - nf];
    if (f->precision < 19 && (v >= P10[f->precision]))
        return false;                       /* let the general path say why */
    *out = neg ? -(floe__i128)v : (floe__i128)v;
    *pp = q;
    return true;
}

static int read_decimal(ctx *c, const floe__field *f, const char **pp)
{
    const char *p = *pp, *s, *q;
    size_t n;
    floe__i128 fast;
    if (*p != '"' && fast_decimal(c, f, pp, &fast))
        return put_fixed(c, &fast, 16);
    if (*p == '"') {
        FLOE_FORWARD(string_value(c, f, pp, &s, &n, "a number"));
        double special;
        if (floe__parse_float_special(s, n, &special))
            return value_error(c, f, p, "NaN and infinities cannot be stored in a decimal");
    } else {
        FLOE_FORWARD(number_token(c, f, p, &q, "a number or a numeric string"));
        s = p;
        n = (size_t)(q - p);
        *pp = q;
    }
    floe__i128 v;
    bool inexact;
    const char *why = floe__parse_decimal(s, n, f->precision, f->scale, &v, &inexact);
    if (why && why[0] == 'o')
        return value_error(c, f, p, "too many digits for its precision");
    if (why)
        return value_error(c, f, p, why);
    return put_fixed(c, &v, 16);
}

static int put_float_value(ctx *c, const floe__field *f, double d, float fl)
{
    if (f->kind == FLOE_K_FLOAT) {
        uint32_t w;
        memcpy(&w, &fl, 4);
        if (isnan(fl))
            w = 0x7fc00000u;
        return put_fixed(c, &w, 4);
    }
    uint64_t w;
    memcpy(&w, &d, 8);
    if (isnan(d))
        w = 0x7ff8000000000000ull;
    return put_fixed(c, &w, 8);
}

static int read_float(ctx *c, const floe__field *f, const char **pp)
{
    const char *p = *pp, *q, *s;
    size_t n;
    if (*p == '"') {
        FLOE_FORWARD(string_value(c, f, pp, &s, &n, "a number"));
        double d;
        if (!floe__parse_float_special(s, n, &d))
            return value_error(c, f, p, "only \"NaN\", \"Infinity\" and \"-Infinity\" may be "
                                        "strings; numbers must be JSON numbers");
        return put_float_value(c, f, d, (float)d);
    }
    FLOE_FORWARD(number_token(c, f, p, &q, "a number"));
    const char *why;
    double d = 0;
    float fl = 0;
    if (f->kind == FLOE_K_FLOAT)
        why = floe__parse_float(p, (size_t)(q - p), &fl);
    else
        why = floe__parse_double(p, (size_t)(q - p), &d);
    if (why)
        return value_error(c, f, p, why);
    *pp = q;
    return put_float_value(c, f, d, fl);
}

static int read_bool(ctx *c, const floe__field *f, const char **pp)
{
    const char *p = *pp;
    uint8_t v;
    if (c->end - p >= 4 && memcmp(p, "true", 4) == 0)
        v = 1, *pp = p + 4;
    else if (c->end - p >= 5 && memcmp(p, "false", 5) == 0)
        v = 0, *pp = p + 5;
    else
        return type_error(c, f, p, "true or false");
    return put_fixed(c, &v, 1);
}

/* ---- dates and times ------------------------------------------------------------ */

static int read_temporal(ctx *c, const floe__field *f, const char **pp)
{
    const char *p = *pp, *s;
    size_t n;
    static const char *const expect[] = {"a date string", "a time string",
                                         "a timestamp string"};
    int which = f->kind == FLOE_K_DATE ? 0 : f->kind == FLOE_K_TIME ? 1 : 2;
    FLOE_FORWARD(string_value(c, f, pp, &s, &n, expect[which]));
    const char *why;
    if (f->kind == FLOE_K_DATE) {
        int32_t days;
        if ((why = floe__parse_date(s, n, &days)) == NULL)
            return put_fixed(c, &days, 4);
    } else {
        int64_t us;
        if (f->kind == FLOE_K_TIME)
            why = floe__parse_time(s, n, &us);
        else
            why = floe__parse_timestamp(s, n, f->kind == FLOE_K_TIMESTAMPTZ, &us);
        if (!why)
            return put_fixed(c, &us, 8);
    }
    return value_error(c, f, p, why);
}

/* ---- records (and the root) --------------------------------------------------- */

/* Index of the child named by key, searching from `from` onwards and
 * wrapping; UINT32_MAX when none. */
static uint32_t find_child(const floe__field *f, const floe__json_str *key, uint32_t from)
{
    uint32_t n = f->n_children;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t j = from + k < n ? from + k : from + k - n;
        if (floe__json_str_eq(key, f->children[j].name))
            return j;
    }
    return UINT32_MAX;
}

/* The fast path for an expected key: when the JSON string at p is plain
 * ASCII without escapes and equals `name`, returns the pointer after its
 * closing quote.  NULL means "use the full scanner" (another key, escapes,
 * non-ASCII).  The closing quote is found 8 bytes at a time; as the bytes
 * before it hold no NUL, strncmp stops at the end of a shorter name. */
static inline const char *match_key(const char *p, const char *end, const char *name)
{
    if (p >= end || *p != '"')
        return NULL;
    const char *s = ++p;
    for (;;) {
        if (end - p < 8) {
            while (p < end && (unsigned char)*p >= 0x20 && *p != '"' && *p != '\\' &&
                   (unsigned char)*p < 0x80)
                p++;
            break;
        }
        uint64_t v;
        memcpy(&v, p, 8);
        uint64_t m = floe__json_special_mask(v);
        if (m) {
            p += __builtin_ctzll(m) / 8;
            break;
        }
        p += 8;
    }
    if (p >= end || *p != '"')
        return NULL;
    size_t n = (size_t)(p - s);
    return strncmp(name, s, n) == 0 && name[n] == '\0' ? p + 1 : NULL;
}

/* Scans `"key"` and the ':' after it; *pp ends at the value. */
static int read_key(ctx *c, const char **pp, floe__json_str *key)
{
    const char *p = *pp, *q;
    if (p >= c->end || *p != '"')
        return fail(c, p, "expected a key (a string)");
    int rc = floe__json_scan_string(p, c->end, &q, key, c->err);
    if (rc != FLOE_OK)
        return scan_failed(c, rc, q);
    q = floe__json_ws(q, c->end);
    if (q >= c->end || *q != ':')
        return fail(c, q, "expected ':' after a key");
    *pp = floe__json_ws(q + 1, c->end);
    return FLOE_OK;
}

/* After a member or element: ',' (then *pp at the next one; returns 1) or
 * the closing bracket (returns 0); < 0 never, errors are positive codes. */
static int next_member(ctx *c, const char **pp, char close, bool *more)
{
    const char *p = floe__json_ws(*pp, c->end);
    if (p < c->end && *p == ',') {
        *pp = floe__json_ws(p + 1, c->end);
        *more = true;
        return FLOE_OK;
    }
    if (p < c->end && *p == close) {
        *pp = p + 1;
        *more = false;
        return FLOE_OK;
    }
    return fail(c, p, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
}

/* Rewrites the children of a struct in schema order: recorded slot ranges
 * are copied to the end of the buffer, nulls for the unseen, and the result
 * moved down to `base`. */
static int reorder(ctx *c, const floe__field *f, size_t frame, size_t base)
{
    size_t total = 0;
    for (uint32_t j = 0; j < f->n_children; j++) {
        const size_t *e = c->stk + frame + 2 * (size_t)j;
        total += e[0] == UNSEEN ? missing_len(&f->children[j]) : e[1] - e[0];
    }
    FLOE_FORWARD(reserve(c, total));
    uint8_t *d = c->out->data;
    size_t tail = c->out->len, o = tail;
    for (uint32_t j = 0; j < f->n_children; j++) {
        const size_t *e = c->stk + frame + 2 * (size_t)j;
        if (e[0] == UNSEEN) {
            o = (size_t)(put_missing_at(d + o, &f->children[j]) - d);
        } else {
            memcpy(d + o, d + base + e[0], e[1] - e[0]);
            o += e[1] - e[0];
        }
    }
    memmove(d + base, d + tail, total);
    c->out->len = base + total;
    return FLOE_OK;
}

/* The object at *pp (which is '{') as the child slots of struct f. */
static int read_struct_body(ctx *c, const floe__field *f, const char **pp, bool top)
{
    const char *p = floe__json_ws(*pp + 1, c->end);
    uint32_t n = f->n_children, next = 0, seen = 0;
    bool in_order = true, more = true;
    size_t base = c->out->len, frame;
    FLOE_FORWARD(stk_push(c, 2 * (size_t)n, &frame));
    if (p < c->end && *p == '}') {
        p++;
        more = false;
    }
    while (more) {
        floe__json_str key;
        const char *key_at = p, *q;
        uint32_t j = next;
        if (j < n && (q = match_key(p, c->end, f->children[j].name)) != NULL) {
            q = floe__json_ws(q, c->end);
            if (q >= c->end || *q != ':')
                return fail(c, q, "expected ':' after a key");
            p = floe__json_ws(q + 1, c->end);
        } else {
            FLOE_FORWARD(read_key(c, &p, &key));
            if (j >= n || !floe__json_str_eq(&key, f->children[j].name))
                j = find_child(f, &key, next < n ? next : 0);
            if (j == UINT32_MAX) {
                char name[48];
                token_text(c, key_at, name);
                return fail(c, key_at, "unknown %s %s", top ? "column" : "field", name);
            }
        }
        if (c->stk[frame + 2 * (size_t)j] != UNSEEN)
            return fail(c, key_at, "key \"%s\" appears twice", f->children[j].name);
        if (j < next) {
            in_order = false;
        } else {
            if (in_order && j > next)                    /* provisional */
                FLOE_FORWARD(put_missing(c, f, next, j));
            next = j + 1;
        }
        size_t start = c->out->len - base;
        int rc = read_value(c, &f->children[j], &p);
        if (rc != FLOE_OK) {
            path_name(c, f->children[j].name);
            return rc;
        }
        c->stk[frame + 2 * (size_t)j] = start;
        c->stk[frame + 2 * (size_t)j + 1] = c->out->len - base;
        seen++;
        FLOE_FORWARD(next_member(c, &p, '}', &more));
    }
    if (seen < n) {
        for (uint32_t j = 0; j < n; j++) {
            if (f->children[j].required && !f->children[j].write_default &&
                c->stk[frame + 2 * (size_t)j] == UNSEEN) {
                path_name(c, f->children[j].name);
                return fail(c, p - 1, "missing value for a not-null %s",
                            top ? "column" : "field");
            }
        }
    }
    int rc = in_order ? (next < n ? put_missing(c, f, next, n) : FLOE_OK)
                      : reorder(c, f, frame, base);
    c->stk_len = frame;
    *pp = p;
    return rc;
}

static int read_struct(ctx *c, const floe__field *f, const char **pp)
{
    if (**pp != '{')
        return type_error(c, f, *pp, "an object");
    FLOE_FORWARD(reserve(c, 1));
    c->out->data[c->out->len++] = FLOE_SLOT_PRESENT;
    return read_struct_body(c, f, pp, false);
}

/* ---- lists ------------------------------------------------------------------------ */

static int read_list(ctx *c, const floe__field *f, const char **pp)
{
    const char *p = *pp;
    if (*p != '[')
        return type_error(c, f, p, "an array");
    FLOE_FORWARD(reserve(c, 5));
    size_t at = c->out->len;
    c->out->data[at] = FLOE_SLOT_PRESENT;
    c->out->len += 5;
    uint32_t count = 0;
    bool more = true;
    p = floe__json_ws(p + 1, c->end);
    if (p < c->end && *p == ']') {
        p++;
        more = false;
    }
    while (more) {
        if (count == UINT32_MAX)
            return fail(c, p, "too many elements");
        int rc = read_value(c, &f->children[0], &p);
        if (rc != FLOE_OK) {
            path_push(c, (path_part){NULL, 0, count, false});
            return rc;
        }
        count++;
        FLOE_FORWARD(next_member(c, &p, ']', &more));
    }
    floe__put_le32(c->out->data + at + 1, count);
    *pp = p;
    return FLOE_OK;
}

/* ---- maps --------------------------------------------------------------------------- */

/* Map entries on the scratch stack: 4 words each, offsets from the first
 * entry: start, end, key bytes start, key bytes length. */
enum { E_START, E_END, E_KEY, E_KLEN, E_WORDS };

static int entry_cmp(const uint8_t *base, const size_t *a, const size_t *b)
{
    size_t n = a[E_KLEN] < b[E_KLEN] ? a[E_KLEN] : b[E_KLEN];
    int r = memcmp(base + a[E_KEY], base + b[E_KEY], n);
    if (r)
        return r;
    return (a[E_KLEN] > b[E_KLEN]) - (a[E_KLEN] < b[E_KLEN]);
}

static void entry_swap(size_t *a, size_t *b)
{
    size_t t[E_WORDS];
    memcpy(t, a, sizeof t);
    memcpy(a, b, sizeof t);
    memcpy(b, t, sizeof t);
}

static void sift_down(const uint8_t *base, size_t *e, size_t r, size_t n)
{
    for (;;) {
        size_t ch = 2 * r + 1;
        if (ch >= n)
            return;
        if (ch + 1 < n && entry_cmp(base, e + ch * E_WORDS, e + (ch + 1) * E_WORDS) < 0)
            ch++;
        if (entry_cmp(base, e + r * E_WORDS, e + ch * E_WORDS) >= 0)
            return;
        entry_swap(e + r * E_WORDS, e + ch * E_WORDS);
        r = ch;
    }
}

/* In-place heapsort of n entries by key (no allocation, O(n log n)). */
static void sort_entries(const uint8_t *base, size_t *e, size_t n)
{
    for (size_t k = n / 2; k-- > 0;)
        sift_down(base, e, k, n);
    for (size_t m = n; m-- > 1;) {
        entry_swap(e, e + m * E_WORDS);
        sift_down(base, e, 0, m);
    }
}

/* Puts the `count` entries recorded from `frame` in key order (they start
 * at `base`) and rejects repeated keys. */
static int canonical_map(ctx *c, const floe__field *f, size_t frame, size_t count, size_t base,
                         const char *at)
{
    size_t *e = c->stk + frame;
    const uint8_t *b = c->out->data + base;
    bool sorted = true;
    for (size_t i = 1; i < count && sorted; i++)
        sorted = entry_cmp(b, e + (i - 1) * E_WORDS, e + i * E_WORDS) < 0;
    if (sorted)
        return FLOE_OK;
    sort_entries(b, e, count);
    for (size_t i = 1; i < count; i++) {
        if (entry_cmp(b, e + (i - 1) * E_WORDS, e + i * E_WORDS) == 0) {
            const size_t *d = e + i * E_WORDS;
            if (f->children[0].kind == FLOE_K_STRING)
                return fail(c, at, "map key \"%.*s\" appears twice",
                            (int)(d[E_KLEN] > 40 ? 40 : d[E_KLEN]), (const char *)b + d[E_KEY]);
            return fail(c, at, "a map key appears twice");
        }
    }
    size_t total = c->out->len - base;
    FLOE_FORWARD(reserve(c, total));
    uint8_t *d = c->out->data;
    size_t o = c->out->len;
    for (size_t i = 0; i < count; i++) {
        const size_t *x = e + i * E_WORDS;
        memcpy(d + o, d + base + x[E_START], x[E_END] - x[E_START]);
        o += x[E_END] - x[E_START];
    }
    memmove(d + base, d + c->out->len, total);
    return FLOE_OK;
}

static int record_entry(ctx *c, size_t base, size_t start, size_t kstart, size_t kend)
{
    size_t fr;
    FLOE_FORWARD(stk_push(c, E_WORDS, &fr));
    c->stk[fr + E_START] = start;
    c->stk[fr + E_END] = c->out->len - base;
    c->stk[fr + E_KEY] = kstart;
    c->stk[fr + E_KLEN] = kend - kstart;
    return FLOE_OK;
}

/* One {"key": k, "value": v} entry of an array-form map. */
static int read_map_entry(ctx *c, const floe__field *f, const char **pp, size_t base)
{
    const char *p = *pp;
    if (*p != '{')
        return type_error(c, f, p, "a {\"key\": .., \"value\": ..} object");
    size_t start = c->out->len - base;
    FLOE_FORWARD(read_struct_body(c, f, pp, false));
    const uint8_t *d = c->out->data + base;
    const uint8_t *kend = floe__datum_skip(&f->children[0], d + start, c->out->data + c->out->len);
    if (!kend)
        return fail(c, p, "internal error: bad key slot");
    return record_entry(c, base, start, start + 1, (size_t)(kend - d));
}

/* One "key": value member of an object-form map. */
static int read_map_member(ctx *c, const floe__field *f, const char **pp, size_t base)
{
    floe__json_str key;
    const char *p = *pp;
    FLOE_FORWARD(read_key(c, pp, &key));
    if (key.len > UINT32_MAX)
        return fail(c, p, "key longer than 4 GiB");
    FLOE_FORWARD(reserve(c, key.len + 5));
    size_t start = c->out->len - base;
    uint8_t *o = c->out->data + c->out->len;
    size_t n = floe__json_unescape(&key, (char *)o + 5);
    o[0] = FLOE_SLOT_PRESENT;
    floe__put_le32(o + 1, (uint32_t)n);
    c->out->len += n + 5;
    int rc = read_value(c, &f->children[1], pp);
    if (rc != FLOE_OK) {
        path_push(c, (path_part){key.raw, key.len, -1, true});
        return rc;
    }
    return record_entry(c, base, start, start + 5, start + 5 + n);
}

static int read_map(ctx *c, const floe__field *f, const char **pp)
{
    const char *p = *pp, *open = p;
    bool as_object = f->children[0].kind == FLOE_K_STRING;
    if (*p != (as_object ? '{' : '['))
        return type_error(c, f, p, as_object ? "an object" : "an array of {\"key\", \"value\"}");
    FLOE_FORWARD(reserve(c, 5));
    size_t at = c->out->len, base = at + 5, frame = c->stk_len, count = 0;
    c->out->data[at] = FLOE_SLOT_PRESENT;
    c->out->len += 5;
    bool more = true;
    p = floe__json_ws(p + 1, c->end);
    if (p < c->end && *p == (as_object ? '}' : ']')) {
        p++;
        more = false;
    }
    while (more) {
        if (count == UINT32_MAX)
            return fail(c, p, "too many map entries");
        int rc = as_object ? read_map_member(c, f, &p, base) : read_map_entry(c, f, &p, base);
        if (rc != FLOE_OK) {
            if (!as_object)
                path_push(c, (path_part){NULL, 0, (int64_t)count, false});
            return rc;
        }
        count++;
        FLOE_FORWARD(next_member(c, &p, as_object ? '}' : ']', &more));
    }
    FLOE_FORWARD(canonical_map(c, f, frame, count, base, open));
    c->stk_len = frame;
    floe__put_le32(c->out->data + at + 1, (uint32_t)count);
    *pp = p;
    return FLOE_OK;
}

/* ---- dispatch ------------------------------------------------------------------------ */

static int read_by_kind(ctx *c, const floe__field *f, const char **pp)
{
    switch (f->kind) {
    case FLOE_K_BOOLEAN: return read_bool(c, f, pp);
    case FLOE_K_INT:
    case FLOE_K_LONG: return read_int(c, f, pp);
    case FLOE_K_FLOAT:
    case FLOE_K_DOUBLE: return read_float(c, f, pp);
    case FLOE_K_DECIMAL: return read_decimal(c, f, pp);
    case FLOE_K_DATE:
    case FLOE_K_TIME:
    case FLOE_K_TIMESTAMP:
    case FLOE_K_TIMESTAMPTZ: return read_temporal(c, f, pp);
    case FLOE_K_STRING: return read_text(c, f, pp);
    case FLOE_K_UUID: return read_uuid(c, f, pp);
    case FLOE_K_FIXED:
    case FLOE_K_BINARY: return read_base64(c, f, pp);
    case FLOE_K_STRUCT: return read_struct(c, f, pp);
    case FLOE_K_LIST: return read_list(c, f, pp);
    case FLOE_K_MAP: return read_map(c, f, pp);
    }
    return fail(c, *pp, "internal error: unknown kind");
}

/* The slot for field f from the value at *pp (after whitespace). */
static int read_value(ctx *c, const floe__field *f, const char **pp)
{
    const char *p = *pp;
    if (p >= c->end)
        return fail(c, p, "unexpected end of input, expected a value");
    if (*p == 'n' && c->end - p >= 4 && memcmp(p, "null", 4) == 0) {
        if (f->required)
            return fail(c, p, "null in a not-null field");
        *pp = p + 4;
        return put_nulls(c, 1);
    }
    switch (f->decl) {
    case FLOE_D_UINT8: return read_int(c, f, pp);        /* kind decimal(20,0) */
    case FLOE_D_JSONB: return read_jsonb(c, pp);
    case FLOE_D_UUID: return read_uuid(c, f, pp);
    case FLOE_D_TEXT:
    case FLOE_D_INTERVAL: return read_text(c, f, pp);
    default: return read_by_kind(c, f, pp);
    }
}

/* ---- entry points --------------------------------------------------------------------- */

/* "a.b[3][\"k\"]" from the parts collected while unwinding. */
static void format_path(const ctx *c, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = c->path_len - 1; i >= 0 && n < cap; i--) {
        const path_part *pt = &c->path[i];
        if (pt->index >= 0)
            n += (size_t)snprintf(buf + n, cap - n, "[%lld]", (long long)pt->index);
        else if (pt->key)
            n += (size_t)snprintf(buf + n, cap - n, "[\"%.*s\"]",
                                  (int)(pt->n > 40 ? 40 : pt->n), pt->s);
        else
            n += (size_t)snprintf(buf + n, cap - n, "%s%.*s", n ? "." : "",
                                  (int)(pt->n > 200 ? 200 : pt->n), pt->s);
    }
}

int floe__json_parse_row(const floe__schema *s, const char *p, const char *end,
                         const char **endp, floe__buf *out, floe_error *err)
{
    ctx c;
    c.out = out;
    c.err = err;
    c.start = p;
    c.end = end;
    c.err_at = p;
    c.stk = c.inline_stk;
    c.stk_len = 0;
    c.stk_cap = STACK_INLINE;
    c.path_len = 0;
    floe__buf_init(&c.tmp, 0);
    size_t entry_len = out->len;
    const char *q = floe__json_ws(p, end);
    int rc;
    if (q >= end || *q != '{')
        rc = fail(&c, q, "a row must be a JSON object");
    else
        rc = read_struct_body(&c, &s->root, &q, true);
    if (c.stk != c.inline_stk)
        floe__free(c.stk);
    floe__buf_free(&c.tmp);
    if (rc == FLOE_OK) {
        *endp = q;
        return FLOE_OK;
    }
    out->len = entry_len;
    size_t off = (size_t)(c.err_at - p);
    if (c.path_len) {
        char path[512];
        format_path(&c, path, sizeof path);
        return floe__err_wrap(err, rc, "column \"%s\" (byte %zu)", path, off);
    }
    return floe__err_wrap(err, rc, "row (byte %zu)", off);
}

/* ---- the public row --------------------------------------------------------------------- */

int floe_row_new(const floe_schema *schema, floe_row **out, floe_error *err)
{
    FLOE_RETURN_IF(!schema || !out, err, FLOE_EINVAL, "floe_row_new: NULL argument");
    floe_row *r = floe__calloc(1, sizeof *r);
    if (!r)
        return FLOE_OOM(err);
    r->schema = schema;
    floe__buf_init(&r->data, FLOE__ROW_MAX_BYTES);
    *out = r;
    return FLOE_OK;
}

void floe_row_free(floe_row *row)
{
    if (!row)
        return;
    floe__buf_free(&row->data);
    floe__free(row);
}

void floe_row_clear(floe_row *row)
{
    if (row)
        floe__buf_reset(&row->data);
}

int floe_row_set_json(floe_row *row, const char *json, size_t len, floe_error *err)
{
    FLOE_RETURN_IF(!row || (!json && len), err, FLOE_EINVAL, "floe_row_set_json: NULL argument");
    floe__buf_reset(&row->data);
    if (!json)
        json = "";
    const char *end = json + len, *q;
    int rc = floe__json_parse_row(row->schema, json, end, &q, &row->data, err);
    if (rc != FLOE_OK)
        return rc;
    q = floe__json_ws(q, end);
    if (q != end) {
        floe__buf_reset(&row->data);
        return floe__err_set(err, FLOE_EINPUT, "row: unexpected text after the object (byte %zu)",
                             (size_t)(q - json));
    }
    return FLOE_OK;
}
