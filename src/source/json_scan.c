/*
 * json_scan.c - a small, fast, validating JSON scanner over byte ranges:
 * whitespace, exact integers, strings (scan, unescape, compare), numbers,
 * and skipping or compacting whole values.
 *
 * It builds no tree and allocates nothing (except what callers ask it to
 * append to a floe__buf).  Nested values are walked iteratively with a bit
 * stack, so hostile nesting cannot exhaust the C stack.
 *
 * Strings are scanned eight bytes at a time while they hold only printable
 * ASCII other than '"' and '\' (the common case); the rest is checked byte
 * by byte, including full UTF-8 validation (no overlongs, no surrogates,
 * nothing above U+10FFFF).
 */
#include "source/source_internal.h"

/* ---- integers -------------------------------------------------------------- */

const char *floe__json_u64(const char *p, const char *end, uint64_t *out)
{
    if (p >= end || (unsigned)(*p - '0') > 9)
        return NULL;
    if (*p == '0') {
        p++;
        if (p < end && (unsigned)(*p - '0') <= 9)
            return NULL;                           /* leading zero */
        *out = 0;
        return p;
    }
    uint64_t v = 0;
    const char *start = p;
    while (p < end && (unsigned)(*p - '0') <= 9) {
        unsigned d = (unsigned)(*p - '0');
        if (p - start >= 19 && (v > UINT64_MAX / 10 || v * 10 > UINT64_MAX - d))
            return NULL;                           /* overflow */
        v = v * 10 + d;
        p++;
    }
    *out = v;
    return p;
}

const char *floe__json_i64(const char *p, const char *end, int64_t *out)
{
    bool neg = p < end && *p == '-';
    uint64_t m;
    const char *q = floe__json_u64(p + neg, end, &m);
    if (!q || m > (uint64_t)INT64_MAX + neg)
        return NULL;
    *out = neg ? (int64_t)(0 - m) : (int64_t)m;
    return q;
}

/* ---- strings --------------------------------------------------------------- */

static int fail_at(const char *at, const char **endp, floe_error *err, const char *msg)
{
    *endp = at;
    return floe__err_set(err, FLOE_EINPUT, "%s", msg);
}

static inline int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at p (which has at least 4 bytes), or -1. */
static inline long hex4(const char *p)
{
    int a = hexval(p[0]), b = hexval(p[1]), c = hexval(p[2]), d = hexval(p[3]);
    if ((a | b | c | d) < 0)
        return -1;
    return (long)(a << 12 | b << 8 | c << 4 | d);
}

/* The UTF-8 sequence whose lead byte (>= 0x80) is at p: the pointer after
 * it, or NULL when malformed. */
static const char *utf8_seq(const char *p, const char *end)
{
    const uint8_t *s = (const uint8_t *)p;
    size_t room = (size_t)(end - p);
    uint8_t c = s[0];
    if (c < 0xC2 || c > 0xF4)
        return NULL;                  /* stray continuation, overlong, > U+10FFFF */
    size_t n = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (room < n)
        return NULL;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return NULL;
    if ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0) ||   /* overlong, surrogate */
        (c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90))     /* overlong, too big */
        return NULL;
    return p + n;
}

/* Checks the escape at p (just after the backslash); returns the pointer
 * after it or NULL. */
static const char *check_escape(const char *p, const char *end)
{
    if (p >= end)
        return NULL;
    switch (*p) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
        return p + 1;
    case 'u':
        break;
    default:
        return NULL;
    }
    if (end - p < 5)
        return NULL;
    long cp = hex4(p + 1);
    if (cp < 0 || (cp >= 0xDC00 && cp <= 0xDFFF))
        return NULL;                                /* bad hex, lone low surrogate */
    p += 5;
    if (cp < 0xD800 || cp > 0xDBFF)
        return p;
    if (end - p < 6 || p[0] != '\\' || p[1] != 'u')
        return NULL;                                /* lone high surrogate */
    long lo = hex4(p + 2);
    if (lo < 0xDC00 || lo > 0xDFFF)
        return NULL;
    return p + 6;
}

int floe__json_scan_string(const char *p, const char *end, const char **endp,
                           floe__json_str *s, floe_error *err)
{
    if (p >= end || *p != '"')
        return fail_at(p, endp, err, "expected a string");
    const char *q = ++p;
    bool escaped = false;
    for (;;) {
        while (end - q >= 8) {
            uint64_t v;
            memcpy(&v, q, 8);
            uint64_t m = floe__json_special_mask(v);
            if (m) {
                q += __builtin_ctzll(m) / 8;      /* straight to the special byte */
                break;
            }
            q += 8;
        }
        if (q >= end)
            return fail_at(q, endp, err, "unterminated string");
        unsigned char c = (unsigned char)*q;
        if (c == '"')
            break;
        if (c == '\\') {
            const char *n = check_escape(q + 1, end);
            if (!n)
                return fail_at(q, endp, err, "invalid escape in string (bad \\ sequence or "
                                             "unpaired surrogate)");
            escaped = true;
            q = n;
        } else if (c < 0x20) {
            return fail_at(q, endp, err, "control character in string (must be escaped)");
        } else if (c >= 0x80) {
            const char *n = utf8_seq(q, end);
            if (!n)
                return fail_at(q, endp, err, "string is not valid UTF-8");
            q = n;
        } else {
            q++;
        }
    }
    s->raw = p;
    s->len = (size_t)(q - p);
    s->escaped = escaped;
    *endp = q + 1;
    return FLOE_OK;
}

static size_t put_utf8(uint32_t cp, char *o)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes the (already checked) escape at p, just after a backslash, into
 * the code point *cp; returns the pointer after it. */
static const char *decode_escape(const char *p, uint32_t *cp)
{
    switch (*p) {
    case 'b': *cp = '\b'; return p + 1;
    case 'f': *cp = '\f'; return p + 1;
    case 'n': *cp = '\n'; return p + 1;
    case 'r': *cp = '\r'; return p + 1;
    case 't': *cp = '\t'; return p + 1;
    case 'u': break;
    default: *cp = (uint8_t)*p; return p + 1;       /* " \ / */
    }
    uint32_t hi = (uint32_t)hex4(p + 1);
    if (hi < 0xD800 || hi > 0xDBFF) {
        *cp = hi;
        return p + 5;
    }
    uint32_t lo = (uint32_t)hex4(p + 7);
    *cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
    return p + 11;
}

size_t floe__json_unescape(const floe__json_str *s, char *dst)
{
    if (!s->escaped) {
        memcpy(dst, s->raw, s->len);
        return s->len;
    }
    const char *p = s->raw, *end = s->raw + s->len;
    char *o = dst;
    while (p < end) {
        const char *bs = memchr(p, '\\', (size_t)(end - p));
        size_t plain = (size_t)((bs ? bs : end) - p);
        memcpy(o, p, plain);
        o += plain;
        p += plain;
        if (!bs)
            break;
        uint32_t cp;
        p = decode_escape(p + 1, &cp);
        o += put_utf8(cp, o);
    }
    return (size_t)(o - dst);
}

bool floe__json_str_eq(const floe__json_str *s, const char *name)
{
    if (!s->escaped) {
        /* raw holds no NUL (a control byte), so strncmp stops at a shorter
         * name's end, and name[len] is read only when name is that long */
        return strncmp(name, s->raw, s->len) == 0 && name[s->len] == '\0';
    }
    const char *p = s->raw, *end = s->raw + s->len;
    const char *n = name;
    while (p < end) {
        char buf[4];
        size_t k = 1;
        if (*p == '\\') {
            uint32_t cp;
            p = decode_escape(p + 1, &cp);
            k = put_utf8(cp, buf);
        } else {
            buf[0] = *p++;
        }
        for (size_t i = 0; i < k; i++, n++)
            if (*n == '\0' || *n != buf[i])
                return false;
    }
    return *n == '\0';
}

int floe__json_read_string(const char *p, const char *end, const char **endp, floe__buf *out,
                           floe_error *err)
{
    floe__json_str s;
    FLOE_FORWARD(floe__json_scan_string(p, end, endp, &s, err));
    FLOE_FORWARD(floe__buf_reserve(out, s.len, err));
    out->len += floe__json_unescape(&s, (char *)out->data + out->len);
    return FLOE_OK;
}

/* ---- numbers ----------------------------------------------------------------- */

static const char *digits(const char *p, const char *end)
{
    while (p < end && (unsigned)(*p - '0') <= 9)
        p++;
    return p;
}

int floe__json_scan_number(const char *p, const char *end, const char **endp, floe_error *err)
{
    const char *q = p;
    if (q < end && *q == '-')
        q++;
    if (q >= end || (unsigned)(*q - '0') > 9)
        return fail_at(q, endp, err, "invalid number");
    if (*q == '0') {
        q++;
        if (q < end && (unsigned)(*q - '0') <= 9)
            return fail_at(q, endp, err, "invalid number (leading zero)");
    } else {
        q = digits(q, end);
    }
    if (q < end && *q == '.') {
        const char *d = ++q;
        q = digits(q, end);
        if (q == d)
            return fail_at(q, endp, err, "invalid number (no digits after '.')");
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < end && (*q == '+' || *q == '-'))
            q++;
        const char *d = q;
        q = digits(q, end);
        if (q == d)
            return fail_at(q, endp, err, "invalid number (no digits in exponent)");
    }
    *endp = q;
    return FLOE_OK;
}

/* ---- whole values ---------------------------------------------------------- */

/* Appends a scanned string in canonical escaping (see the header). */
static int put_canonical_string(const floe__json_str *s, floe__buf *out, floe_error *err)
{
    FLOE_FORWARD(floe__buf_reserve(out, s->len + 2, err));   /* never grows */
    char *o = (char *)out->data + out->len;
    *o++ = '"';
    if (!s->escaped) {
        memcpy(o, s->raw, s->len);
        o += s->len;
    } else {
        const char *p = s->raw, *end = s->raw + s->len;
        while (p < end) {
            if (*p != '\\') {
                *o++ = *p++;
                continue;
            }
            uint32_t cp;
            p = decode_escape(p + 1, &cp);
            o += floe__json_needs_escape(cp) ? floe__json_escape(cp, o) : put_utf8(cp, o);
        }
    }
    *o++ = '"';
    out->len = (size_t)(o - (char *)out->data);
    return FLOE_OK;
}

static int emit(floe__buf *out, const char *p, size_t n, floe_error *err)
{
    return out ? floe__buf_append(out, p, n, err) : FLOE_OK;
}

/* One scalar (string, number, literal) at p; *q after it. */
static int scalar_value(const char *p, const char *end, const char **q, floe__buf *out,
                        floe_error *err)
{
    if (*p == '"') {
        floe__json_str s;
        FLOE_FORWARD(floe__json_scan_string(p, end, q, &s, err));
        return out ? put_canonical_string(&s, out, err) : FLOE_OK;
    }
    if (*p == '-' || (unsigned)(*p - '0') <= 9) {
        FLOE_FORWARD(floe__json_scan_number(p, end, q, err));
        return emit(out, p, (size_t)(*q - p), err);
    }
    static const char *const lits[3] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(lits[i]);
        if ((size_t)(end - p) >= n && memcmp(p, lits[i], n) == 0) {
            *q = p + n;
            return emit(out, p, n, err);
        }
    }
    return fail_at(p, q, err, "invalid JSON value");
}

/* The iterative walk shared by skip and compact (out == NULL: skip). */
static int walk_value(const char *p, const char *end, const char **endp, floe__buf *out,
                      floe_error *err)
{
    uint8_t is_obj[FLOE__JSON_MAX_DEPTH / 8 + 1];   /* bit stack: 1 object, 0 array */
    int depth = 0;
    enum { VALUE, KEY, AFTER } state = VALUE;
    for (;;) {
        if (state == AFTER && depth == 0) {
            *endp = p;
            return FLOE_OK;
        }
        p = floe__json_ws(p, end);
        if (p >= end)
            return fail_at(p, endp, err, "unexpected end of JSON");
        const char *q = p;
        if (state == KEY) {
            if (*p != '"')
                return fail_at(p, endp, err, "expected a string key");
            int rc = scalar_value(p, end, &q, out, err);
            if (rc != FLOE_OK) {
                if (rc == FLOE_EINPUT)
                    *endp = q;
                return rc;
            }
            q = floe__json_ws(q, end);
            if (q >= end || *q != ':')
                return fail_at(q, endp, err, "expected ':' after a key");
            FLOE_FORWARD(emit(out, ":", 1, err));
            p = q + 1;
            state = VALUE;
            continue;
        }
        if (state == AFTER) {
            bool obj = is_obj[(depth - 1) / 8] >> ((depth - 1) % 8) & 1;
            if (*p == ',') {
                FLOE_FORWARD(emit(out, ",", 1, err));
                p++;
                state = obj ? KEY : VALUE;
            } else if (*p == (obj ? '}' : ']')) {
                FLOE_FORWARD(emit(out, p, 1, err));
                p++;
                depth--;
            } else {
                return fail_at(p, endp, err, obj ? "expected ',' or '}'" : "expected ',' or ']'");
            }
            continue;
        }
        if (*p == '{' || *p == '[') {                     /* state == VALUE */
            if (depth >= FLOE__JSON_MAX_DEPTH)
                return fail_at(p, endp, err, "JSON nested too deeply");
            bool obj = *p == '{';
            uint8_t bit = (uint8_t)(1u << (depth % 8));
            is_obj[depth / 8] = (uint8_t)(obj ? is_obj[depth / 8] | bit : is_obj[depth / 8] & ~bit);
            depth++;
            FLOE_FORWARD(emit(out, p, 1, err));
            q = floe__json_ws(p + 1, end);
            if (q < end && *q == (obj ? '}' : ']')) {
                FLOE_FORWARD(emit(out, q, 1, err));
                depth--;
                p = q + 1;
                state = AFTER;
            } else {
                p = p + 1;
                state = obj ? KEY : VALUE;
            }
            continue;
        }
        int rc = scalar_value(p, end, &q, out, err);
        if (rc != FLOE_OK) {
            if (rc == FLOE_EINPUT)
                *endp = q;
            return rc;
        }
        p = q;
        state = AFTER;
    }
}

int floe__json_skip_value(const char *p, const char *end, const char **endp, floe_error *err)
{
    return walk_value(p, end, endp, NULL, err);
}

int floe__json_compact_value(const char *p, const char *end, const char **endp, floe__buf *out,
                             floe_error *err)
{
    return walk_value(p, end, endp, out, err);
}
