/*
 * partition_internal.h - Iceberg partition transforms and partition specs
 * (the Iceberg spec's "Partitioning" and "Appendix B: 32-bit Hash
 * Requirements").
 *
 * Values travel as payloads of floe's row format (schema_internal.h: a
 * present slot's bytes without the tag byte; a string or binary payload is
 * its u32 length then its bytes).  A partition tuple is a row of the spec's
 * partition type: a struct whose fields are the partition fields (ids =
 * partition field ids, types = the transforms' result types, all
 * optional), in the same row format, so tuples compare by their bytes and
 * print with floe__datum_to_json.
 *
 * This module owns the transforms, parsing and validating specs (from
 * table metadata and from Spark DDL-style text), and the single-value
 * binary serialization of partition values (manifest list summaries).  It
 * does not write manifests (manifest.c) or route rows to files (table/).
 */
#ifndef FLOE_PARTITION_INTERNAL_H
#define FLOE_PARTITION_INTERNAL_H

#include "iceberg/iceberg_internal.h"

typedef enum floe__transform_kind {
    FLOE_TR_IDENTITY = 0,
    FLOE_TR_BUCKET,          /* param: N, the number of buckets */
    FLOE_TR_TRUNCATE,        /* param: W, the width */
    FLOE_TR_YEAR,
    FLOE_TR_MONTH,
    FLOE_TR_DAY,
    FLOE_TR_HOUR,
    FLOE_TR_VOID,
} floe__transform_kind;

typedef struct floe__transform {
    floe__transform_kind kind;
    int32_t param;           /* bucket N or truncate W (> 0); 0 otherwise */
} floe__transform;

/* Iceberg's 32-bit Murmur3 (x86 variant) of [p, p+n). */
uint32_t floe__murmur3_32(const void *p, size_t n, uint32_t seed);

/* Parse a transform's metadata text ("identity", "bucket[16]",
 * "truncate[4]", "year", "month", "day", "hour", "void").  FLOE_EFORMAT
 * for anything else (FLOE_EUNSUPPORTED for a transform Iceberg defines
 * that floe does not know). */
int floe__transform_parse(const char *text, floe__transform *out, floe_error *err);
/* The metadata text of t, snprintf-style (at most cap bytes). */
size_t floe__transform_text(const floe__transform *t, char *buf, size_t cap);

/* The result type of t applied to a field of type `src` into *result (a
 * primitive field: kind, precision, scale, length; name and id left
 * empty).  FLOE_ESCHEMA saying why when t does not apply to src's type
 * (bucket of a float, day of a time, truncate of a uuid, ...). */
int floe__transform_result(const floe__transform *t, const floe__field *src,
                           floe__field *result, floe_error *err);

/* Apply t (valid for src, see floe__transform_result) to one value: `p`
 * points at the payload of a present slot of src, or is NULL for null.
 * The result's payload is appended to out with its slot tag (0x00 null,
 * 0x01 then the payload), so a tuple is these appended in field order. */
int floe__transform_apply(const floe__transform *t, const floe__field *src, const uint8_t *p,
                          floe__buf *out, floe_error *err);

/* One partition field of a spec. */
typedef struct floe__partition_field {
    int32_t source_id;
    int32_t field_id;
    char *name;
    floe__transform transform;
} floe__partition_field;

/* A partition spec bound to a schema. */
typedef struct floe__partition_spec {
    int32_t spec_id;
    size_t n;
    floe__partition_field *fields;
    floe__schema *type;      /* the partition type: a struct of the result fields */
    const floe__field **sources;   /* per field: its source field in the bound schema */
    uint32_t **paths;        /* per field: top-level .. leaf child indexes of the source */
    uint32_t *depths;        /* per field: length of paths[i] */
} floe__partition_spec;

void floe__partition_spec_free(floe__partition_spec *s);   /* accepts NULL */

/* A spec from its metadata JSON ({"spec-id", "fields": [{"source-id",
 * "field-id", "name", "transform"}]}) bound to `schema`: every source must
 * be a primitive field of the schema reachable through structs only (not
 * inside a list or map) and of a type its transform accepts; names and
 * field ids distinct.  FLOE_EFORMAT (malformed) or FLOE_ESCHEMA naming the
 * partition field and why. */
int floe__partition_spec_from_json(const json_t *j, const floe__schema *schema,
                                   floe__partition_spec **out, floe_error *err);
/* The metadata JSON of s (caller decrefs). */
int floe__partition_spec_to_json(const floe__partition_spec *s, json_t **out, floe_error *err);

/* A spec from Spark DDL-style text, fields separated by commas:
 * `col`, `identity(col)`, `bucket(N, col)`, `truncate(W, col)`,
 * `year(col)` / `years(col)`, likewise month(s), day(s)/date, hour(s)/
 * date_hour, `void(col)`; column names may be dotted into structs and
 * quoted with backticks.  Field ids start at first_field_id; names are
 * those Java's PartitionSpec.Builder gives (col, col_bucket, col_trunc,
 * col_year, col_month, col_day, col_hour, col_null).  Spec id 0.
 * FLOE_EINVAL saying where the text is wrong; FLOE_ESCHEMA as above. */
int floe__partition_spec_parse(const char *text, const floe__schema *schema,
                               int32_t first_field_id, floe__partition_spec **out,
                               floe_error *err);

/* Append the partition tuple of the row [row, row+len) of `schema` (the
 * schema s was bound to) to out (a row of s->type).  The row must be well
 * formed (FLOE_EINPUT otherwise). */
int floe__partition_tuple(const floe__partition_spec *s, const floe__schema *schema,
                          const uint8_t *row, size_t len, floe__buf *out, floe_error *err);

/* The payload of field i of a tuple (of s->type), or NULL when it is null;
 * FLOE_EFORMAT when the tuple is malformed. */
int floe__partition_value(const floe__partition_spec *s, const uint8_t *tuple, size_t len,
                          size_t i, const uint8_t **payload, floe_error *err);

/* Iceberg's single-value binary serialization of the payload p of a
 * primitive field f (ints and floats little-endian, dates as int days,
 * decimals as minimal big-endian two's complement, strings' UTF-8 bytes,
 * uuids' 16 bytes, ...), appended to out. */
int floe__single_value(const floe__field *f, const uint8_t *p, floe__buf *out, floe_error *err);

/* The order of two payloads of primitive field f: <0, 0, >0 (strings and
 * binary by unsigned bytes, uuids and fixed likewise, NaN above all). */
int floe__payload_cmp(const floe__field *f, const uint8_t *a, const uint8_t *b);

#endif /* FLOE_PARTITION_INTERNAL_H */
