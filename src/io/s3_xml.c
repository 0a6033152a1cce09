/*
 * s3_xml.c - the little XML S3 speaks: the text of a named element (Code,
 * Message, UploadId, ...), repeated elements one after another (a
 * listing's <Contents>), the name of the root element (<Error> hiding in a
 * 200 reply) and escaping text for request bodies.
 *
 * Not a general XML parser: it scans for "<tag>" or "<tag attr...>" and the
 * next "</tag>", which is all S3's flat replies need.  Every scan is
 * bounded by the given length; the input need not be NUL-terminated.
 * Replies are untrusted: text inside elements is always entity-encoded
 * (a key cannot hold a literal '<'), so a value cannot fake a tag.
 */
#include <stdio.h>

#include "io/s3_internal.h"

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* The position just after the '>' of the first start tag named `tag` at or
 * after p, with *empty set for "<tag/>"; NULL when none. */
static const char *find_start(const char *p, const char *end, const char *tag, bool *empty)
{
    size_t tl = strlen(tag);
    for (; p < end; p++) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        if (!lt || (size_t)(end - lt) < tl + 2)
            return NULL;
        p = lt;
        if (memcmp(lt + 1, tag, tl) != 0)
            continue;
        const char *q = lt + 1 + tl;
        if (*q != '>' && *q != '/' && !is_space(*q))
            continue;                       /* a longer name ("<CodeX>") */
        const char *gt = memchr(q, '>', (size_t)(end - q));
        if (!gt)
            return NULL;
        *empty = gt > q && gt[-1] == '/';
        return gt + 1;
    }
    return NULL;
}

static const char *find_end(const char *p, const char *end, const char *tag)
{
    size_t tl = strlen(tag);
    for (; p < end; p++) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        if (!lt || (size_t)(end - lt) < tl + 3)
            return NULL;
        p = lt;
        if (lt[1] == '/' && memcmp(lt + 2, tag, tl) == 0 && lt[2 + tl] == '>')
            return lt;
    }
    return NULL;
}

/* Append the UTF-8 encoding of code point cp (invalid ones become '?'). */
static void put_utf8(floe__buf *out, unsigned long cp)
{
    uint8_t b[4];
    size_t n;
    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        b[0] = '?';
        n = 1;
    } else if (cp < 0x80) {
        b[0] = (uint8_t)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (uint8_t)(0xC0 | (cp >> 6));
        b[1] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (uint8_t)(0xE0 | (cp >> 12));
        b[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (uint8_t)(0xF0 | (cp >> 18));
        b[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 4;
    }
    floe__buf_append(out, b, n, NULL);
}

/* Decode one entity reference at p ('&'), up to end; returns the position
 * after it, or NULL when it is not a known reference. */
static const char *decode_entity(const char *p, const char *end, floe__buf *out)
{
    static const struct { const char *name; char c; } named[] = {
        {"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''},
    };
    p++;
    for (size_t i = 0; i < sizeof named / sizeof *named; i++) {
        size_t l = strlen(named[i].name);
        if ((size_t)(end - p) >= l && memcmp(p, named[i].name, l) == 0) {
            floe__buf_putc(out, (uint8_t)named[i].c, NULL);
            return p + l;
        }
    }
    if (p >= end || *p != '#')
        return NULL;
    p++;
    bool hex = p < end && (*p == 'x' || *p == 'X');
    p += hex;
    unsigned long cp = 0;
    const char *digits = p;
    for (; p < end && *p != ';' && p - digits < 8; p++) {
        int d = (*p >= '0' && *p <= '9')             ? *p - '0'
                : hex && (*p >= 'a' && *p <= 'f')     ? *p - 'a' + 10
                : hex && (*p >= 'A' && *p <= 'F')     ? *p - 'A' + 10
                                                      : -1;
        if (d < 0)
            return NULL;
        cp = cp * (hex ? 16 : 10) + (unsigned long)d;
    }
    if (p >= end || *p != ';' || p == digits)
        return NULL;
    put_utf8(out, cp);
    return p + 1;
}

bool floe__s3_xml_text(const char *xml, size_t n, const char *tag, floe__buf *out)
{
    const char *end = xml + n;
    bool empty = false;
    const char *p = find_start(xml, end, tag, &empty);
    if (!p)
        return false;
    const char *stop = empty ? p : find_end(p, end, tag);
    if (!stop)
        return false;
    size_t mark = out->len;
    while (p < stop) {
        const char *amp = memchr(p, '&', (size_t)(stop - p));
        const char *run_end = amp ? amp : stop;
        floe__buf_append(out, p, (size_t)(run_end - p), NULL);
        if (!amp)
            break;
        const char *next = decode_entity(amp, stop, out);
        if (!next) {                         /* not a reference: keep the '&' */
            floe__buf_putc(out, '&', NULL);
            next = amp + 1;
        }
        p = next;
    }
    if (floe__buf_putc(out, 0, NULL) != FLOE_OK) {
        out->len = mark;                     /* out of room: as if absent */
        return false;
    }
    out->len--;
    return true;
}

int floe__s3_xml_next(const char *xml, size_t n, const char *tag, size_t *pos,
                      const char **inner, size_t *inner_len)
{
    const char *end = xml + n;
    bool empty = false;
    const char *p = *pos < n ? find_start(xml + *pos, end, tag, &empty) : NULL;
    if (!p) {
        *pos = n;
        return 0;
    }
    const char *stop = empty ? p : find_end(p, end, tag);
    if (!stop) {
        *pos = n;
        return -1;
    }
    *inner = p;
    *inner_len = (size_t)(stop - p);
    *pos = empty ? (size_t)(p - xml) : (size_t)(stop - xml) + strlen(tag) + 3;
    return 1;
}

/* The position after the first occurrence of `pat` in [p, end), or NULL. */
static const char *skip_past(const char *p, const char *end, const char *pat)
{
    size_t pl = strlen(pat);
    for (; (size_t)(end - p) >= pl; p++)
        if (memcmp(p, pat, pl) == 0)
            return p + pl;
    return NULL;
}

bool floe__s3_xml_root_is(const char *xml, size_t n, const char *tag)
{
    const char *p = xml, *end = xml + n;
    for (;;) {                    /* skip the declaration, comments, doctype */
        while (p < end && is_space(*p))
            p++;
        if (end - p >= 4 && memcmp(p, "<!--", 4) == 0)
            p = skip_past(p + 4, end, "-->");
        else if (end - p >= 2 && p[0] == '<' && (p[1] == '?' || p[1] == '!'))
            p = skip_past(p + 2, end, ">");
        else
            break;
        if (!p)
            return false;
    }
    size_t tl = strlen(tag);
    if ((size_t)(end - p) < tl + 2 || *p != '<' || memcmp(p + 1, tag, tl) != 0)
        return false;
    char c = p[1 + tl];
    return c == '>' || c == '/' || is_space(c);
}

int floe__s3_xml_escape(const char *s, floe__buf *out, floe_error *err)
{
    for (; *s; s++) {
        const char *rep = *s == '&'    ? "&amp;"
                          : *s == '<'  ? "&lt;"
                          : *s == '>'  ? "&gt;"
                          : *s == '"'  ? "&quot;"
                          : *s == '\'' ? "&apos;"
                                       : NULL;
        if (rep)
            FLOE_FORWARD(floe__buf_append(out, rep, strlen(rep), err));
        else
            FLOE_FORWARD(floe__buf_putc(out, (uint8_t)*s, err));
    }
    return FLOE_OK;
}
