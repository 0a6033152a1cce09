/*
 * pg_copy.c - one line of COPY ... TO STDOUT in text format, split into
 * its fields.
 *
 * Fields are separated by tabs; \N alone is SQL NULL; a backslash starts
 * an escape: \b \f \n \r \t \v, \\, \digits (up to three octal digits),
 * \xhh (one or two hex digits), and a backslash before any other
 * character stands for that character (the COPY documentation's rules).
 * Fields without a backslash are handed out as pointers into the line;
 * the others are decoded into a scratch buffer reserved to the line's
 * length first (decoding never lengthens), so earlier fields stay valid.
 */
#include "source/pg_internal.h"

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Decode the escaped field [p, end) into o; the number of bytes written. */
static size_t unescape(const char *p, const char *end, uint8_t *o)
{
    uint8_t *start = o;
    while (p < end) {
        char c = *p++;
        if (c != '\\' || p == end) {
            *o++ = (uint8_t)c;
            continue;
        }
        c = *p++;
        switch (c) {
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'v': *o++ = '\v'; break;
        case 'x': {
            int v = 0, k = 0;
            for (; k < 2 && p < end && hexval(*p) >= 0; k++)
                v = v * 16 + hexval(*p++);
            *o++ = k ? (uint8_t)v : (uint8_t)'x';
            break;
        }
        default:
            if (c >= '0' && c <= '7') {
                int v = c - '0';
                for (int k = 1; k < 3 && p < end && *p >= '0' && *p <= '7'; k++)
                    v = v * 8 + (*p++ - '0');
                *o++ = (uint8_t)v;
            } else {
                *o++ = (uint8_t)c;
            }
        }
    }
    return (size_t)(o - start);
}

int floe__pg_copy_split(const char *p, size_t n, size_t ncols, floe__buf *scratch,
                        floe__pg_field *fields, floe_error *err)
{
    floe__buf_reset(scratch);
    FLOE_FORWARD(floe__buf_reserve(scratch, n + 1, err));
    const char *end = p + n;
    size_t i = 0;
    for (const char *f = p;; i++) {
        const char *tab = memchr(f, '\t', (size_t)(end - f));
        const char *fe = tab ? tab : end;
        FLOE_RETURN_IF(i >= ncols, err, FLOE_EINPUT,
                       "COPY line has more than the %zu columns expected", ncols);
        floe__pg_field *out = &fields[i];
        size_t len = (size_t)(fe - f);
        out->null = len == 2 && f[0] == '\\' && f[1] == 'N';
        out->s = f;
        out->len = (uint32_t)len;
        if (!out->null && memchr(f, '\\', len)) {
            uint8_t *o = scratch->data + scratch->len;
            out->len = (uint32_t)unescape(f, fe, o);
            out->s = (const char *)o;
            scratch->len += out->len;
        }
        if (!tab)
            break;
        f = tab + 1;
    }
    FLOE_RETURN_IF(i + 1 != ncols, err, FLOE_EINPUT, "COPY line has %zu columns, expected %zu",
                   i + 1, ncols);
    return FLOE_OK;
}
