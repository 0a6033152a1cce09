/*
 * str.c - small string helpers: formatted allocation, prefix/suffix tests,
 * URI joining, base64 and UTF-8 validation.
 */
#include <stdio.h>

#include "util/util_internal.h"

char *floe__vsprintf(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return NULL;
    char *s = floe__malloc((size_t)n + 1);
    if (s)
        vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *floe__sprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = floe__vsprintf(fmt, ap);
    va_end(ap);
    return s;
}

void floe__vtell(void (*fn)(void *ctx, const char *message), void *ctx, const char *fmt,
                 va_list ap)
{
    if (!fn)
        return;
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fn(ctx, msg);
}

void floe__tell(void (*fn)(void *ctx, const char *message), void *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    floe__vtell(fn, ctx, fmt, ap);
    va_end(ap);
}

bool floe__str_starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool floe__str_ends(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

void floe__url_for_message(const char *url, char *out, size_t cap)
{
    size_t n = strcspn(url, "?#");
    const char *scheme_end = strstr(url, "://");
    const char *host = scheme_end && (size_t)(scheme_end - url) < n ? scheme_end + 3 : url;
    const char *at = memchr(host, '@', strcspn(host, "/?#"));
    const char *from = at ? at + 1 : host;
    snprintf(out, cap, "%.*s%.*s", (int)(host - url), url, (int)(url + n - from), from);
}

char *floe__path_join(const char *a, const char *b)
{
    size_t na = strlen(a);
    const char *scheme = strstr(a, "://");
    size_t keep = scheme ? (size_t)(scheme - a) + 3 : 0;   /* never trim "s3://" */
    if (keep && a[keep] == '/')
        keep++;                                            /* "file:///" */
    while (na > keep && a[na - 1] == '/')
        na--;
    while (*b == '/')
        b++;
    const char *sep = (na == keep && keep) || !*b ? "" : "/";
    return floe__sprintf("%.*s%s%s", (int)na, a, sep, b);
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int floe__base64_encode(const uint8_t *p, size_t n, floe__buf *out, floe_error *err)
{
    FLOE_FORWARD(floe__buf_reserve(out, (n + 2) / 3 * 4, err));
    uint8_t *o = out->data + out->len;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = B64[v >> 18];
        *o++ = B64[(v >> 12) & 63];
        *o++ = B64[(v >> 6) & 63];
        *o++ = B64[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
        *o++ = B64[v >> 18];
        *o++ = B64[(v >> 12) & 63];
        *o++ = i + 1 < n ? B64[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    out->len = (size_t)(o - out->data);
    return FLOE_OK;
}

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

int floe__base64_decode(const char *s, size_t n, floe__buf *out, floe_error *err)
{
    if (n % 4 != 0)
        return floe__err_set(err, FLOE_EINPUT, "base64 length %zu is not a multiple of 4", n);
    size_t pad = 0;
    if (n >= 1 && s[n - 1] == '=') pad++;
    if (n >= 2 && s[n - 2] == '=') pad++;
    FLOE_FORWARD(floe__buf_reserve(out, n / 4 * 3, err));
    uint8_t *o = out->data + out->len;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t v = 0;
        for (size_t j = 0; j < 4; j++) {
            bool is_pad = i + j >= n - pad;
            int d = is_pad ? 0 : b64_value((unsigned char)s[i + j]);
            if (d < 0)
                return floe__err_set(err, FLOE_EINPUT, "invalid base64 character at offset %zu",
                                     i + j);
            v = v << 6 | (uint32_t)d;
        }
        *o++ = (uint8_t)(v >> 16);
        if (i + 4 < n || pad < 2) *o++ = (uint8_t)(v >> 8);
        if (i + 4 < n || pad < 1) *o++ = (uint8_t)v;
    }
    out->len = (size_t)(o - out->data);
    return FLOE_OK;
}

bool floe__utf8_valid(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint32_t cp;
        if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
        else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
        else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
        else return false;
        if (i + len > n)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

size_t floe__json_escape(uint32_t c, char *o)
{
    static const char hex[] = "0123456789abcdef";
    const char *named = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n"
                        : c == '\t' ? "\\t" : c == '\r' ? "\\r" : c == '\b' ? "\\b"
                        : c == '\f' ? "\\f" : NULL;
    if (named) {
        o[0] = named[0], o[1] = named[1];
        return 2;
    }
    memcpy(o, "\\u00", 4);
    o[4] = hex[(c >> 4) & 15], o[5] = hex[c & 15];
    return 6;
}
