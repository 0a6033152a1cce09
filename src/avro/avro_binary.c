/*
 * avro_binary.c - Avro's binary encoding of primitive values: zig-zag
 * varints (int and long), little-endian IEEE floats, booleans, length-
 * prefixed bytes and strings, and the block counts of arrays and maps.
 *
 * Encoders append to a floe__buf.  Decoders read through a cursor and never
 * step past its end: every length is checked against the bytes left before
 * it is used.  This file knows nothing of schemas or files.
 */
#include "avro/avro_internal.h"

size_t floe__avro_put_varint(uint8_t out[10], int64_t v)
{
    uint64_t z = floe__zigzag64(v);
    size_t n = 0;
    while (z >= 0x80) {
        out[n++] = (uint8_t)(z | 0x80);
        z >>= 7;
    }
    out[n++] = (uint8_t)z;
    return n;
}

int floe__avro_enc_long(floe__buf *b, int64_t v, floe_error *err)
{
    FLOE_FORWARD(floe__buf_reserve(b, 10, err));
    b->len += floe__avro_put_varint(b->data + b->len, v);
    return FLOE_OK;
}

int floe__avro_enc_float(floe__buf *b, float v, floe_error *err)
{
    uint32_t bits;
    memcpy(&bits, &v, 4);
    uint8_t le[4];
    floe__put_le32(le, bits);
    return floe__buf_append(b, le, 4, err);
}

int floe__avro_enc_double(floe__buf *b, double v, floe_error *err)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    uint8_t le[8];
    floe__put_le64(le, bits);
    return floe__buf_append(b, le, 8, err);
}

int floe__avro_enc_boolean(floe__buf *b, bool v, floe_error *err)
{
    return floe__buf_putc(b, v ? 1 : 0, err);
}

int floe__avro_enc_bytes(floe__buf *b, const void *p, size_t n, floe_error *err)
{
    FLOE_RETURN_IF(n > (size_t)INT64_MAX, err, FLOE_ELIMIT, "avro: %zu bytes is too long", n);
    FLOE_FORWARD(floe__buf_reserve(b, 10 + n, err));
    b->len += floe__avro_put_varint(b->data + b->len, (int64_t)n);
    if (n)
        floe__buf_put_unchecked(b, p, n);
    return FLOE_OK;
}

/* Unsigned base-128 with a hard stop: 64 bits fill 9 bytes of 7 bits plus
 * one bit of a 10th byte, so a 10th byte above 1 (or an 11th) overflows. */
int floe__avro_dec_long(floe__avro_cursor *c, int64_t *out, floe_error *err)
{
    uint64_t z = 0;
    for (unsigned i = 0; i < 10; i++) {
        FLOE_RETURN_IF(c->p >= c->end, err, FLOE_EFORMAT, "avro: truncated varint");
        uint8_t byte = *c->p++;
        FLOE_RETURN_IF(i == 9 && byte > 1, err, FLOE_EFORMAT, "avro: varint overflows 64 bits");
        z |= (uint64_t)(byte & 0x7f) << (7 * i);
        if (!(byte & 0x80)) {
            *out = floe__unzigzag64(z);
            return FLOE_OK;
        }
    }
    return floe__err_set(err, FLOE_EFORMAT, "avro: varint longer than 10 bytes");
}

int floe__avro_dec_int(floe__avro_cursor *c, int32_t *out, floe_error *err)
{
    int64_t v;
    FLOE_FORWARD(floe__avro_dec_long(c, &v, err));
    FLOE_RETURN_IF(v < INT32_MIN || v > INT32_MAX, err, FLOE_EFORMAT,
                   "avro: int value %lld out of range", (long long)v);
    *out = (int32_t)v;
    return FLOE_OK;
}

int floe__avro_dec_raw(floe__avro_cursor *c, size_t n, const uint8_t **p, floe_error *err)
{
    FLOE_RETURN_IF(floe__avro_left(c) < n, err, FLOE_EFORMAT,
                   "avro: truncated: need %zu bytes, %zu left", n, floe__avro_left(c));
    *p = c->p;
    c->p += n;
    return FLOE_OK;
}

int floe__avro_dec_float(floe__avro_cursor *c, float *out, floe_error *err)
{
    const uint8_t *p = NULL;
    FLOE_FORWARD(floe__avro_dec_raw(c, 4, &p, err));
    uint32_t bits = floe__get_le32(p);
    memcpy(out, &bits, 4);
    return FLOE_OK;
}

int floe__avro_dec_double(floe__avro_cursor *c, double *out, floe_error *err)
{
    const uint8_t *p = NULL;
    FLOE_FORWARD(floe__avro_dec_raw(c, 8, &p, err));
    uint64_t bits = floe__get_le64(p);
    memcpy(out, &bits, 8);
    return FLOE_OK;
}

int floe__avro_dec_boolean(floe__avro_cursor *c, bool *out, floe_error *err)
{
    const uint8_t *p = NULL;
    FLOE_FORWARD(floe__avro_dec_raw(c, 1, &p, err));
    FLOE_RETURN_IF(*p > 1, err, FLOE_EFORMAT, "avro: boolean byte 0x%02x", *p);
    *out = *p == 1;
    return FLOE_OK;
}

int floe__avro_dec_bytes(floe__avro_cursor *c, const uint8_t **p, size_t *n, floe_error *err)
{
    int64_t len;
    FLOE_FORWARD(floe__avro_dec_long(c, &len, err));
    FLOE_RETURN_IF(len < 0, err, FLOE_EFORMAT, "avro: negative length %lld", (long long)len);
    FLOE_RETURN_IF((uint64_t)len > floe__avro_left(c), err, FLOE_EFORMAT,
                   "avro: length %lld exceeds the %zu bytes left", (long long)len,
                   floe__avro_left(c));
    *n = (size_t)len;
    return floe__avro_dec_raw(c, (size_t)len, p, err);
}

int floe__avro_dec_block_count(floe__avro_cursor *c, uint64_t max, uint64_t *count,
                               floe_error *err)
{
    int64_t v;
    FLOE_FORWARD(floe__avro_dec_long(c, &v, err));
    if (v < 0) {
        int64_t size;
        FLOE_RETURN_IF(v == INT64_MIN, err, FLOE_EFORMAT, "avro: block count out of range");
        v = -v;
        FLOE_FORWARD(floe__avro_dec_long(c, &size, err));
        FLOE_RETURN_IF(size < 0 || (uint64_t)size > floe__avro_left(c), err, FLOE_EFORMAT,
                       "avro: block size %lld does not fit the %zu bytes left",
                       (long long)size, floe__avro_left(c));
    }
    FLOE_RETURN_IF((uint64_t)v > max, err, FLOE_EFORMAT,
                   "avro: block of %lld items exceeds the limit of %llu", (long long)v,
                   (unsigned long long)max);
    *count = (uint64_t)v;
    return FLOE_OK;
}
