/*
 * avro_value.c - looking things up in decoded value trees: record fields by
 * name or Iceberg field id, array items, map entries, and typed reads that
 * treat a missing value and a null alike.  Decoding itself is in
 * avro_reader.c.
 */
#include "avro/avro_internal.h"

const floe__avro_value *floe__avro_get(const floe__avro_value *v, const char *name)
{
    if (!v || v->type != FLOE_AVRO_RECORD)
        return NULL;
    int i = floe__avro_field_index(v->schema, name);
    return i < 0 ? NULL : &v->u.items[i];
}

const floe__avro_value *floe__avro_get_id(const floe__avro_value *v, int32_t field_id)
{
    if (!v || v->type != FLOE_AVRO_RECORD)
        return NULL;
    int i = floe__avro_field_index_by_id(v->schema, field_id);
    return i < 0 ? NULL : &v->u.items[i];
}

const floe__avro_value *floe__avro_item(const floe__avro_value *v, size_t i)
{
    return v && v->type == FLOE_AVRO_ARRAY && i < v->n ? &v->u.items[i] : NULL;
}

const floe__avro_value *floe__avro_map_key(const floe__avro_value *v, size_t i)
{
    return v && v->type == FLOE_AVRO_MAP && i < v->n ? &v->u.items[2 * i] : NULL;
}

const floe__avro_value *floe__avro_map_value(const floe__avro_value *v, size_t i)
{
    return v && v->type == FLOE_AVRO_MAP && i < v->n ? &v->u.items[2 * i + 1] : NULL;
}

bool floe__avro_is_null(const floe__avro_value *v) { return !v || v->type == FLOE_AVRO_NULL; }

bool floe__avro_boolean(const floe__avro_value *v, bool *out)
{
    if (!v || v->type != FLOE_AVRO_BOOLEAN)
        return false;
    *out = v->u.b;
    return true;
}

bool floe__avro_long(const floe__avro_value *v, int64_t *out)
{
    if (!v || (v->type != FLOE_AVRO_INT && v->type != FLOE_AVRO_LONG && v->type != FLOE_AVRO_ENUM))
        return false;
    *out = v->u.i;
    return true;
}

bool floe__avro_double(const floe__avro_value *v, double *out)
{
    if (!v)
        return false;
    switch (v->type) {
    case FLOE_AVRO_FLOAT: *out = v->u.f; return true;
    case FLOE_AVRO_DOUBLE: *out = v->u.d; return true;
    case FLOE_AVRO_INT:
    case FLOE_AVRO_LONG: *out = (double)v->u.i; return true;
    default: return false;
    }
}

bool floe__avro_string(const floe__avro_value *v, const char **out, size_t *len)
{
    if (!v || v->type != FLOE_AVRO_STRING)
        return false;
    *out = (const char *)v->u.bytes;
    if (len)
        *len = v->n;
    return true;
}

bool floe__avro_bytes(const floe__avro_value *v, const uint8_t **out, size_t *len)
{
    if (!v || (v->type != FLOE_AVRO_BYTES && v->type != FLOE_AVRO_FIXED &&
               v->type != FLOE_AVRO_STRING))
        return false;
    *out = v->u.bytes;
    if (len)
        *len = v->n;
    return true;
}
