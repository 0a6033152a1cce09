/*
 * thrift_read.c - a decoder for the Thrift compact protocol, for Parquet's
 * footer and page headers (the encoding is described in thrift.c).
 *
 * The input is untrusted.  Every read checks its bounds; structs nest at
 * most FLOE__TR_MAX_DEPTH deep, which bounds the recursion of skipping
 * unknown fields; a list cannot claim more elements than bytes remain (each
 * element takes at least one), so callers may size arrays by the count.
 * Failures are FLOE_EFORMAT "<what> at byte N of M: ...", and `truncated`
 * records whether the bytes ran out, so a caller reading a page header from
 * a window can fetch more and try again.  This file knows no Parquet
 * structure: meta_read.c does.
 */
#include <stdio.h>

#include "parquet/pqr_internal.h"

void floe__tr_init(floe__tr *t, const uint8_t *p, size_t n, const char *what, floe_error *err)
{
    memset(t, 0, sizeof *t);
    t->p = t->base = p;
    t->end = p + n;
    t->what = what;
    t->err = err;
}

int floe__tr_fail(floe__tr *t, const char *fmt, ...)
{
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return floe__err_set(t->err, FLOE_EFORMAT, "%s at byte %zu of %zu: %s", t->what,
                         (size_t)(t->p - t->base), (size_t)(t->end - t->base), msg);
}

static int truncated(floe__tr *t)
{
    t->truncated = true;
    return floe__tr_fail(t, "truncated");
}

static int varint(floe__tr *t, uint64_t *v)
{
    size_t n = floe__get_uvarint(t->p, t->end, v);
    if (n == 0) {
        /* ten bytes all with the continuation bit is malformed, not short */
        if (t->end - t->p >= 10)
            return floe__tr_fail(t, "varint longer than 10 bytes");
        return truncated(t);
    }
    t->p += n;
    return FLOE_OK;
}

static int zigzag(floe__tr *t, int64_t *v)
{
    uint64_t u;
    FLOE_FORWARD(varint(t, &u));
    *v = floe__unzigzag64(u);
    return FLOE_OK;
}

static int byte(floe__tr *t, uint8_t *b)
{
    if (t->p >= t->end)
        return truncated(t);
    *b = *t->p++;
    return FLOE_OK;
}

int floe__tr_field(floe__tr *t, int16_t *last, int16_t *id, uint8_t *type)
{
    uint8_t b = 0;
    FLOE_FORWARD(byte(t, &b));
    *type = b & 0x0f;
    if (*type == 0)
        return FLOE_OK;
    if (b >> 4) {
        *id = (int16_t)(*last + (b >> 4));
    } else {
        int64_t v;
        FLOE_FORWARD(zigzag(t, &v));
        if (v < INT16_MIN || v > INT16_MAX)
            return floe__tr_fail(t, "field id %lld out of range", (long long)v);
        *id = (int16_t)v;
    }
    *last = *id;
    return FLOE_OK;
}

static int expect(floe__tr *t, uint8_t type, uint8_t want)
{
    if (type != want)
        return floe__tr_fail(t, "a field of thrift type %u where type %u belongs", type, want);
    return FLOE_OK;
}

int floe__tr_i32(floe__tr *t, uint8_t type, int32_t *v)
{
    FLOE_FORWARD(expect(t, type, TC_I32));
    int64_t x;
    FLOE_FORWARD(zigzag(t, &x));
    if (x < INT32_MIN || x > INT32_MAX)
        return floe__tr_fail(t, "i32 value %lld out of range", (long long)x);
    *v = (int32_t)x;
    return FLOE_OK;
}

int floe__tr_i8(floe__tr *t, uint8_t type, int8_t *v)
{
    FLOE_FORWARD(expect(t, type, TC_BYTE));
    uint8_t b = 0;
    FLOE_FORWARD(byte(t, &b));
    *v = (int8_t)b;
    return FLOE_OK;
}

int floe__tr_i64(floe__tr *t, uint8_t type, int64_t *v)
{
    FLOE_FORWARD(expect(t, type, TC_I64));
    return zigzag(t, v);
}

int floe__tr_bool(floe__tr *t, uint8_t type, bool *v)
{
    if (type != TC_TRUE && type != TC_FALSE)
        return floe__tr_fail(t, "a field of thrift type %u where a bool belongs", type);
    *v = type == TC_TRUE;
    return FLOE_OK;
}

int floe__tr_binary(floe__tr *t, uint8_t type, const uint8_t **p, size_t *n)
{
    FLOE_FORWARD(expect(t, type, TC_BINARY));
    uint64_t len;
    FLOE_FORWARD(varint(t, &len));
    if (len > (uint64_t)(t->end - t->p))
        return truncated(t);
    *p = t->p;
    *n = (size_t)len;
    t->p += len;
    return FLOE_OK;
}

int floe__tr_list(floe__tr *t, uint8_t type, uint8_t *elem, size_t *n)
{
    if (type != TC_LIST && type != TC_SET)
        return floe__tr_fail(t, "a field of thrift type %u where a list belongs", type);
    uint8_t h = 0;
    FLOE_FORWARD(byte(t, &h));
    uint64_t count = h >> 4;
    if (count == 15)
        FLOE_FORWARD(varint(t, &count));
    *elem = h & 0x0f;
    if (count > (uint64_t)(t->end - t->p))
        return count > ((uint64_t)1 << 32) ? floe__tr_fail(t, "list of %llu elements",
                                                            (unsigned long long)count)
                                            : truncated(t);
    *n = (size_t)count;
    return FLOE_OK;
}

int floe__tr_enter(floe__tr *t, uint8_t type)
{
    FLOE_FORWARD(expect(t, type, TC_STRUCT));
    if (t->depth >= FLOE__TR_MAX_DEPTH)
        return floe__tr_fail(t, "structs nested more than %d deep", FLOE__TR_MAX_DEPTH);
    t->depth++;
    return FLOE_OK;
}

void floe__tr_leave(floe__tr *t)
{
    assert(t->depth > 0);
    t->depth--;
}

static int skip_struct(floe__tr *t)
{
    int16_t last = 0, id;
    uint8_t type;
    for (;;) {
        FLOE_FORWARD(floe__tr_field(t, &last, &id, &type));
        if (type == 0)
            return FLOE_OK;
        FLOE_FORWARD(floe__tr_skip(t, type));
    }
}

/* A list or map element: booleans there take a byte each. */
static int skip_elem(floe__tr *t, uint8_t type)
{
    if (type == TC_TRUE || type == TC_FALSE) {
        uint8_t b = 0;
        return byte(t, &b);
    }
    return floe__tr_skip(t, type);
}

static int skip_list(floe__tr *t, uint8_t type)
{
    uint8_t elem;
    size_t n;
    FLOE_FORWARD(floe__tr_list(t, type, &elem, &n));
    for (size_t i = 0; i < n; i++)
        FLOE_FORWARD(skip_elem(t, elem));
    return FLOE_OK;
}

static int skip_map(floe__tr *t)
{
    uint64_t n;
    FLOE_FORWARD(varint(t, &n));
    if (n == 0)
        return FLOE_OK;
    uint8_t kv = 0;
    FLOE_FORWARD(byte(t, &kv));
    if (n > (uint64_t)(t->end - t->p))
        return truncated(t);
    for (uint64_t i = 0; i < n; i++) {
        FLOE_FORWARD(skip_elem(t, kv >> 4));
        FLOE_FORWARD(skip_elem(t, kv & 0x0f));
    }
    return FLOE_OK;
}

int floe__tr_skip(floe__tr *t, uint8_t type)
{
    uint64_t u;
    switch (type) {
    case TC_TRUE:
    case TC_FALSE:
        return FLOE_OK;             /* the value is in the field header */
    case TC_BYTE: {
        uint8_t b = 0;
        return byte(t, &b);
    }
    case TC_I16:
    case TC_I32:
    case TC_I64:
        return varint(t, &u);
    case TC_DOUBLE:
        if (t->end - t->p < 8)
            return truncated(t);
        t->p += 8;
        return FLOE_OK;
    case TC_BINARY: {
        const uint8_t *p;
        size_t n;
        return floe__tr_binary(t, type, &p, &n);
    }
    case TC_LIST:
    case TC_SET:
        return skip_list(t, type);
    case TC_MAP:
        return skip_map(t);
    case TC_STRUCT: {
        FLOE_FORWARD(floe__tr_enter(t, type));
        int rc = skip_struct(t);
        floe__tr_leave(t);
        return rc;
    }
    default:
        return floe__tr_fail(t, "unknown thrift type %u", type);
    }
}
