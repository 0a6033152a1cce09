/*
 * thrift.c - a writer for the Thrift compact protocol, enough for Parquet's
 * footer and page headers.
 *
 * Encoding (Thrift compact protocol spec):
 *  - field header: one byte (id delta << 4 | type) when the id is 1..15
 *    above the previous field id of the same struct, else the type byte
 *    followed by the id as a zigzag varint;
 *  - booleans live in the header's type nibble (1 true, 2 false);
 *  - i16/i32/i64: zigzag varints; binary/string: varint length + bytes;
 *  - list header: (size << 4 | element type) when size < 15, else
 *    (0xf0 | element type) followed by the size as a varint;
 *  - a struct ends with a 0 byte (stop); nested structs restart the id delta
 *    at 0, so the writer keeps the previous id of every open struct.
 *
 * Every call reserves its worst case first; on failure the error code is
 * kept in t->rc and later calls do nothing.
 */
#include "parquet/pq_internal.h"

void floe__tc_init(floe__tc *t, floe__buf *out)
{
    memset(t, 0, sizeof *t);
    t->out = out;
}

/* Room for `n` more bytes, or remember the failure. */
static bool room(floe__tc *t, size_t n)
{
    if (t->rc)
        return false;
    int rc = floe__buf_reserve(t->out, n, NULL);
    if (rc) {
        t->rc = rc;
        return false;
    }
    return true;
}

static void put_byte(floe__tc *t, uint8_t b) { t->out->data[t->out->len++] = b; }

static void put_varint(floe__tc *t, uint64_t v)
{
    t->out->len += floe__put_uvarint(t->out->data + t->out->len, v);
}

static void field_header(floe__tc *t, int16_t id, uint8_t type)
{
    int delta = id - t->last_id;
    if (delta > 0 && delta <= 15) {
        put_byte(t, (uint8_t)(delta << 4 | type));
    } else {
        put_byte(t, type);
        put_varint(t, floe__zigzag64(id));
    }
    t->last_id = id;
}

void floe__tc_i32(floe__tc *t, int16_t id, int32_t v)
{
    if (!room(t, 16))
        return;
    field_header(t, id, TC_I32);
    put_varint(t, floe__zigzag64(v));
}

void floe__tc_i64(floe__tc *t, int16_t id, int64_t v)
{
    if (!room(t, 16))
        return;
    field_header(t, id, TC_I64);
    put_varint(t, floe__zigzag64(v));
}

void floe__tc_i16(floe__tc *t, int16_t id, int16_t v)
{
    if (!room(t, 16))
        return;
    field_header(t, id, TC_I16);
    put_varint(t, floe__zigzag64(v));
}

void floe__tc_bool(floe__tc *t, int16_t id, bool v)
{
    if (!room(t, 4))
        return;
    field_header(t, id, v ? TC_TRUE : TC_FALSE);
}

void floe__tc_binary(floe__tc *t, int16_t id, const void *p, size_t n)
{
    if (!room(t, 16 + n))
        return;
    field_header(t, id, TC_BINARY);
    put_varint(t, n);
    if (n)
        floe__buf_put_unchecked(t->out, p, n);
}

void floe__tc_string(floe__tc *t, int16_t id, const char *s)
{
    floe__tc_binary(t, id, s, strlen(s));
}

static void push(floe__tc *t)
{
    if (t->depth == FLOE__TC_MAX_DEPTH) {
        t->rc = FLOE_EINTERNAL;
        return;
    }
    t->stack[t->depth++] = t->last_id;
    t->last_id = 0;
}

void floe__tc_struct_begin(floe__tc *t, int16_t id)
{
    if (!room(t, 4))
        return;
    field_header(t, id, TC_STRUCT);
    push(t);
}

void floe__tc_elem_struct_begin(floe__tc *t)
{
    if (!t->rc)
        push(t);
}

void floe__tc_struct_end(floe__tc *t)
{
    if (!room(t, 1))
        return;
    put_byte(t, 0);
    if (t->depth == 0) {
        t->rc = FLOE_EINTERNAL;
        return;
    }
    t->last_id = t->stack[--t->depth];
}

void floe__tc_list_begin(floe__tc *t, int16_t id, uint8_t elem_type, size_t n)
{
    if (!room(t, 16))
        return;
    field_header(t, id, TC_LIST);
    if (n < 15) {
        put_byte(t, (uint8_t)(n << 4 | elem_type));
    } else {
        put_byte(t, (uint8_t)(0xf0 | elem_type));
        put_varint(t, n);
    }
}

void floe__tc_elem_i32(floe__tc *t, int32_t v)
{
    if (room(t, 10))
        put_varint(t, floe__zigzag64(v));
}

void floe__tc_elem_i64(floe__tc *t, int64_t v)
{
    if (room(t, 10))
        put_varint(t, floe__zigzag64(v));
}

void floe__tc_elem_string(floe__tc *t, const char *s)
{
    size_t n = strlen(s);
    if (!room(t, 10 + n))
        return;
    put_varint(t, n);
    floe__buf_put_unchecked(t->out, s, n);
}

int floe__tc_finish(const floe__tc *t, floe_error *err)
{
    if (t->rc == FLOE_OK && t->depth != 0)
        return floe__err_set(err, FLOE_EINTERNAL, "thrift: %d structs left open", t->depth);
    if (t->rc == FLOE_ENOMEM)
        return FLOE_OOM(err);
    if (t->rc)
        return floe__err_set(err, t->rc, "thrift: cannot encode metadata (%s)",
                             floe_code_string(t->rc));
    return FLOE_OK;
}
