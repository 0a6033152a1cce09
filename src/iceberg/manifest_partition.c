/*
 * manifest_partition.c - the partition side of manifests: the Avro schema
 * of a spec's `partition` record (field 102; one optional field per
 * partition field, named as Java's AvroSchemaUtil sanitizes names, typed by
 * the transform's result type, field ids the partition field ids), a data
 * file's tuple written into it and read back, and the manifest list's
 * partition field summaries (contains_null, contains_nan, lower and upper
 * bounds in single-value serialization).
 *
 * manifest.c owns the files; partition.c / partition_spec.c own the
 * tuples and their types.
 */
#include <stdio.h>
#include <string.h>

#include "avro/avro_internal.h"
#include "iceberg/manifest_internal.h"
#include "iceberg/partition_internal.h"

/* Bytes of the smallest fixed holding every unscaled decimal of
 * `precision` digits (as Java's TypeUtil.decimalRequiredBytes). */
static size_t decimal_size(int32_t precision)
{
    for (size_t n = 1; n < 16; n++) {
        /* 2^(8n-1) > 10^precision  <=>  (8n-1) * log10(2) > precision */
        if ((double)(8 * n - 1) * 0.30102999566398120 > (double)precision)
            return n;
    }
    return 16;
}

/* Java's AvroSchemaUtil.makeCompatibleName: a leading digit gets a '_'
 * before it, any other character outside [A-Za-z0-9_] becomes _x<HEX>. */
static int avro_name(const char *name, floe__buf *out, floe_error *err)
{
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
                  (p != (const unsigned char *)name && *p >= '0' && *p <= '9');
        if (ok)
            FLOE_FORWARD(floe__buf_putc(out, *p, err));
        else if (*p >= '0' && *p <= '9')
            FLOE_FORWARD(floe__buf_printf(out, err, "_%c", *p));
        else
            FLOE_FORWARD(floe__buf_printf(out, err, "_x%X", (unsigned)*p));
    }
    return FLOE_OK;
}

static int avro_type(const floe__field *f, floe__buf *out, floe_error *err)
{
    switch (f->kind) {
    case FLOE_K_BOOLEAN: return floe__buf_printf(out, err, "\"boolean\"");
    case FLOE_K_INT: return floe__buf_printf(out, err, "\"int\"");
    case FLOE_K_LONG: return floe__buf_printf(out, err, "\"long\"");
    case FLOE_K_FLOAT: return floe__buf_printf(out, err, "\"float\"");
    case FLOE_K_DOUBLE: return floe__buf_printf(out, err, "\"double\"");
    case FLOE_K_STRING: return floe__buf_printf(out, err, "\"string\"");
    case FLOE_K_BINARY: return floe__buf_printf(out, err, "\"bytes\"");
    case FLOE_K_DATE:
        return floe__buf_printf(out, err, "{\"type\":\"int\",\"logicalType\":\"date\"}");
    case FLOE_K_TIME:
        return floe__buf_printf(out, err, "{\"type\":\"long\",\"logicalType\":\"time-micros\"}");
    case FLOE_K_TIMESTAMP: case FLOE_K_TIMESTAMPTZ:
        return floe__buf_printf(out, err, "{\"type\":\"long\",\"logicalType\":"
                                "\"timestamp-micros\",\"adjust-to-utc\":%s}",
                                f->kind == FLOE_K_TIMESTAMPTZ ? "true" : "false");
    case FLOE_K_UUID:
        return floe__buf_printf(out, err, "{\"type\":\"fixed\",\"name\":\"uuid_fixed_%d\","
                                "\"size\":16,\"logicalType\":\"uuid\"}", (int)f->id);
    case FLOE_K_FIXED:
        return floe__buf_printf(out, err, "{\"type\":\"fixed\",\"name\":\"fixed_%d\","
                                "\"size\":%d}", (int)f->id, (int)f->length);
    case FLOE_K_DECIMAL:
        return floe__buf_printf(out, err, "{\"type\":\"fixed\",\"name\":\"decimal_%d\","
                                "\"size\":%zu,\"logicalType\":\"decimal\",\"precision\":%d,"
                                "\"scale\":%d}", (int)f->id, decimal_size(f->precision),
                                (int)f->precision, (int)f->scale);
    default:
        return floe__err_set(err, FLOE_EINVAL, "partition field %s has no primitive type",
                             f->name);
    }
}

int floe__manifest_partition_schema(const floe__partition_spec *ps, floe__buf *out,
                                    floe_error *err)
{
    for (size_t i = 0; ps && i < ps->n; i++) {
        const floe__field *f = &ps->type->root.children[i];
        FLOE_FORWARD(floe__buf_printf(out, err, "%s{\"name\":\"", i ? "," : ""));
        FLOE_FORWARD(avro_name(f->name, out, err));
        FLOE_FORWARD(floe__buf_printf(out, err, "\",\"type\":[\"null\","));
        FLOE_FORWARD(avro_type(f, out, err));
        FLOE_FORWARD(floe__buf_printf(out, err, "],\"default\":null,\"field-id\":%d}",
                                      (int)f->id));
    }
    return FLOE_OK;
}

/* A present value of result field f (payload p). */
static void put_value(floe__avro_writer *w, const floe__field *f, const uint8_t *p)
{
    switch (f->kind) {
    case FLOE_K_BOOLEAN: floe__avro_put_boolean(w, p[0] != 0); break;
    case FLOE_K_INT: case FLOE_K_DATE: floe__avro_put_int(w, (int32_t)floe__get_le32(p)); break;
    case FLOE_K_FLOAT: { float v; memcpy(&v, p, 4); floe__avro_put_float(w, v); break; }
    case FLOE_K_DOUBLE: { double v; memcpy(&v, p, 8); floe__avro_put_double(w, v); break; }
    case FLOE_K_STRING:
        floe__avro_put_string(w, (const char *)p + 4, floe__datum_u32(p));
        break;
    case FLOE_K_BINARY: floe__avro_put_bytes(w, p + 4, floe__datum_u32(p)); break;
    case FLOE_K_UUID: floe__avro_put_fixed(w, p, 16); break;
    case FLOE_K_FIXED: floe__avro_put_fixed(w, p, (size_t)f->length); break;
    case FLOE_K_DECIMAL: {
        __int128 v;
        uint8_t be[16];
        memcpy(&v, p, 16);
        size_t n = decimal_size(f->precision);
        for (size_t i = 0; i < n; i++, v >>= 8)   /* arithmetic shift: sign-extends */
            be[n - 1 - i] = (uint8_t)v;
        floe__avro_put_fixed(w, be, n);
        break;
    }
    default: floe__avro_put_long(w, (int64_t)floe__get_le64(p)); break;
    }
}

int floe__manifest_put_partition(struct floe__avro_writer *w, const floe__partition_spec *ps,
                                 const floe__content_file *f, floe_error *err)
{
    size_t n = ps ? ps->n : 0;
    FLOE_RETURN_IF(n == 0 && f->partition.len, err, FLOE_EINVAL, "file %s has a partition "
                   "tuple but its manifest's spec is unpartitioned", f->path);
    FLOE_RETURN_IF(n && !f->partition.len, err, FLOE_EINVAL, "file %s has no partition tuple "
                   "for partition spec %d", f->path, (int)ps->spec_id);
    floe__avro_begin_record(w);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p;
        int rc = floe__partition_value(ps, f->partition.data, f->partition.len, i, &p, err);
        if (rc != FLOE_OK)
            return floe__err_wrap(err, rc, "file %s (spec %d)", f->path, (int)ps->spec_id);
        if (p)
            put_value(w, &ps->type->root.children[i], p);
        else
            floe__avro_put_null(w);
    }
    return FLOE_OK;   /* the caller ends the record with the data_file's */
}

/* ---- reading -------------------------------------------------------------------------------- */

/* A fixed decimal (big-endian two's complement, at most 16 bytes) as the
 * row format's 16-byte little-endian int128. */
static int put_decimal(const uint8_t *p, size_t n, floe__buf *out, floe_error *err)
{
    FLOE_RETURN_IF(n == 0 || n > 16, err, FLOE_EFORMAT, "partition decimal of %zu bytes", n);
    __int128 v = (p[0] & 0x80) ? -1 : 0;
    for (size_t i = 0; i < n; i++)
        v = (__int128)(((unsigned __int128)v << 8) | p[i]);
    return floe__buf_append(out, &v, 16, err);
}

static int read_value(const floe__avro_value *v, floe__buf *out, floe_error *err)
{
    uint8_t b[8];
    FLOE_FORWARD(floe__buf_putc(out, FLOE_SLOT_PRESENT, err));
    switch (v->type) {
    case FLOE_AVRO_BOOLEAN: return floe__buf_putc(out, v->u.b ? 1 : 0, err);
    case FLOE_AVRO_INT: floe__put_le32(b, (uint32_t)v->u.i); return floe__buf_append(out, b, 4, err);
    case FLOE_AVRO_LONG: floe__put_le64(b, (uint64_t)v->u.i); return floe__buf_append(out, b, 8, err);
    case FLOE_AVRO_FLOAT: return floe__buf_append(out, &v->u.f, 4, err);
    case FLOE_AVRO_DOUBLE: return floe__buf_append(out, &v->u.d, 8, err);
    case FLOE_AVRO_STRING: case FLOE_AVRO_BYTES:
        if (v->type == FLOE_AVRO_STRING && v->schema->logical == FLOE_AVRO_LT_UUID) {
            uint8_t u[16];
            FLOE_RETURN_IF(floe__uuid_parse((const char *)v->u.bytes, v->n, u) != 0, err,
                           FLOE_EFORMAT, "partition uuid is not a uuid");
            return floe__buf_append(out, u, 16, err);
        }
        if (v->schema->logical == FLOE_AVRO_LT_DECIMAL)
            return put_decimal(v->u.bytes, v->n, out, err);
        floe__put_le32(b, (uint32_t)v->n);
        FLOE_FORWARD(floe__buf_append(out, b, 4, err));
        return floe__buf_append(out, v->u.bytes, v->n, err);
    case FLOE_AVRO_FIXED:
        if (v->schema->logical == FLOE_AVRO_LT_DECIMAL)
            return put_decimal(v->u.bytes, v->n, out, err);
        return floe__buf_append(out, v->u.bytes, v->n, err);
    default:
        return floe__err_set(err, FLOE_EFORMAT, "partition value of Avro type %s",
                             floe__avro_type_name(v->type));
    }
}

int floe__manifest_read_partition(const struct floe__avro_value *rec, floe__buf *out,
                                  floe_error *err)
{
    floe__buf_reset(out);
    if (!rec || floe__avro_is_null(rec))
        return FLOE_OK;
    FLOE_RETURN_IF(rec->type != FLOE_AVRO_RECORD, err, FLOE_EFORMAT,
                   "field 102 (partition) is not a record");
    for (size_t i = 0; i < rec->n; i++) {
        const floe__avro_value *v = &rec->u.items[i];
        if (floe__avro_is_null(v))
            FLOE_FORWARD(floe__buf_putc(out, FLOE_SLOT_NULL, err));
        else
            FLOE_FORWARD(read_value(v, out, err));
    }
    return FLOE_OK;
}

/* ---- summaries ------------------------------------------------------------------------------ */

typedef struct bound {
    const uint8_t *lo, *hi;
    bool has_null, has_nan;
} bound;

static void fold(const floe__field *f, const uint8_t *p, bound *b)
{
    if (!p) {
        b->has_null = true;
        return;
    }
    if (f->kind == FLOE_K_FLOAT || f->kind == FLOE_K_DOUBLE) {
        double d;
        float x;
        if (f->kind == FLOE_K_FLOAT)
            memcpy(&x, p, 4), d = x;
        else
            memcpy(&d, p, 8);
        if (d != d) {
            b->has_nan = true;
            return;
        }
    }
    if (!b->lo || floe__payload_cmp(f, p, b->lo) < 0)
        b->lo = p;
    if (!b->hi || floe__payload_cmp(f, p, b->hi) > 0)
        b->hi = p;
}

static int summary_of(const floe__field *f, const bound *b, floe__partition_summary *s,
                      floe_error *err)
{
    s->contains_null = b->has_null;
    s->contains_nan = f->kind == FLOE_K_FLOAT || f->kind == FLOE_K_DOUBLE ? b->has_nan : -1;
    floe__buf_init(&s->lower, 0);
    floe__buf_init(&s->upper, 0);
    if (!b->lo)
        return FLOE_OK;
    s->has_lower = s->has_upper = true;
    FLOE_FORWARD(floe__single_value(f, b->lo, &s->lower, err));
    return floe__single_value(f, b->hi, &s->upper, err);
}

int floe__manifest_partition_summaries(const floe__partition_spec *ps,
                                       const floe__manifest_entry *entries, size_t n,
                                       floe__manifest_file *e, floe_error *err)
{
    e->has_partitions = true;
    if (!ps || ps->n == 0)
        return FLOE_OK;
    e->partitions = floe__calloc(ps->n, sizeof *e->partitions);
    if (!e->partitions)
        return FLOE_OOM(err);
    e->n_partitions = ps->n;
    for (size_t i = 0; i < ps->n; i++) {
        const floe__field *f = &ps->type->root.children[i];
        bound b = {0};
        for (size_t k = 0; k < n; k++) {
            const floe__buf *t = &entries[k].file.partition;
            const uint8_t *p;
            FLOE_RETURN_IF(!t->len, err, FLOE_EINVAL, "file %s has no partition tuple for "
                           "partition spec %d", entries[k].file.path, (int)ps->spec_id);
            FLOE_FORWARD(floe__partition_value(ps, t->data, t->len, i, &p, err));
            fold(f, p, &b);
        }
        FLOE_FORWARD(summary_of(f, &b, &e->partitions[i], err));
    }
    return FLOE_OK;
}
