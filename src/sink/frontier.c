/*
 * frontier.c - the text form of frontiers: "[t]" or "[]".
 */
#include <inttypes.h>
#include <stdio.h>

#include "sink/sink_internal.h"

void floe__frontier_format(floe__frontier f, char *out, size_t n)
{
    if (f.empty)
        snprintf(out, n, "[]");
    else
        snprintf(out, n, "[%" PRIu64 "]", f.t);
}

static const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    return s;
}

int floe__frontier_parse(const char *s, floe__frontier *out, floe_error *err)
{
    const char *p = skip_ws(s);
    if (*p++ != '[')
        goto bad;
    p = skip_ws(p);
    if (*p == ']') {
        if (*skip_ws(p + 1) != '\0')
            goto bad;
        *out = floe__frontier_closed();
        return FLOE_OK;
    }
    uint64_t t = 0;
    const char *digits = p;
    while (*p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p++ - '0');
        if (t > (UINT64_MAX - d) / 10)
            goto bad;
        t = t * 10 + d;
    }
    if (p == digits || (*digits == '0' && p - digits > 1))
        goto bad;
    p = skip_ws(p);
    if (*p++ != ']' || *skip_ws(p) != '\0')
        goto bad;
    *out = floe__frontier_at(t);
    return FLOE_OK;
bad:
    return floe__err_set(err, FLOE_EFORMAT, "malformed frontier '%s' (want [t] or [])", s);
}
