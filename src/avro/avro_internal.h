/*
 * avro_internal.h - Avro binary encoding, schemas, and object container
 * files (OCF): the format of Iceberg manifests and manifest lists.
 *
 * floe encodes Avro itself because Iceberg depends on schema attributes
 * (`field-id`, `element-id`, `key-id`, `value-id`) that general Avro
 * libraries may drop.  The writer stores the schema text exactly as given.
 *
 * Layers, one file each:
 *   avro_binary.c  primitives: zig-zag varints, floats, strings, blocks;
 *                  a bounds-checked read cursor
 *   avro_schema.c  schema JSON -> node graph (named types, references,
 *                  logical types, Iceberg ids, every attribute kept)
 *   avro_codec.c   block codecs: null, deflate, snappy (+CRC32), zstandard
 *   avro_writer.c  OCF writer with a streaming encoder checked against the
 *                  schema on every call
 *   avro_reader.c  OCF reader decoding records into a value tree
 *   avro_value.c   value tree lookups (by field name and by field id)
 *
 * Depends only on util/ (and jansson, zlib, snappy, zstd).  Schema
 * resolution against a separate reader schema is not implemented: readers
 * look fields up by name or field id in the writer's schema.
 *
 * Conventions: fallible functions return FLOE_OK or a FLOE_E* code and take
 * an optional `floe_error *err` last.  Corrupt or hostile files give
 * FLOE_EFORMAT (an invalid embedded schema FLOE_ESCHEMA, an unknown codec
 * FLOE_EUNSUPPORTED): never a crash, never an allocation beyond the limits
 * below.  Misuse of the writer's encoding calls is FLOE_EINVAL.
 */
#ifndef FLOE_AVRO_INTERNAL_H
#define FLOE_AVRO_INTERNAL_H

#include <jansson.h>

#include "util/util_internal.h"

/* Deepest nesting of schema nodes (records, arrays, maps, unions) and of
 * decoded values (recursive types can nest through data). */
#define FLOE_AVRO_MAX_DEPTH 64

/* ==== binary encoding (avro_binary.c) ====================================
 * Writers append to a floe__buf (fail only on its limit or OOM).  Readers
 * take a cursor over [p, end) and return FLOE_EFORMAT, with a message, on
 * truncation, overlong varints and out-of-range values; the cursor is left
 * unspecified after a failure. */

int floe__avro_enc_long(floe__buf *b, int64_t v, floe_error *err);   /* int too */
int floe__avro_enc_float(floe__buf *b, float v, floe_error *err);
int floe__avro_enc_double(floe__buf *b, double v, floe_error *err);
int floe__avro_enc_boolean(floe__buf *b, bool v, floe_error *err);
/* length (long) then the bytes: Avro `bytes` and `string` */
int floe__avro_enc_bytes(floe__buf *b, const void *p, size_t n, floe_error *err);
/* Zig-zag varint of v into out (at most 10 bytes); returns bytes written. */
size_t floe__avro_put_varint(uint8_t out[10], int64_t v);

typedef struct floe__avro_cursor {
    const uint8_t *p;
    const uint8_t *end;
} floe__avro_cursor;

static inline size_t floe__avro_left(const floe__avro_cursor *c)
{
    return (size_t)(c->end - c->p);
}
/* A long: at most 10 bytes, the 10th carrying only the top bit. */
int floe__avro_dec_long(floe__avro_cursor *c, int64_t *out, floe_error *err);
/* An int: a long that must fit in 32 bits. */
int floe__avro_dec_int(floe__avro_cursor *c, int32_t *out, floe_error *err);
int floe__avro_dec_float(floe__avro_cursor *c, float *out, floe_error *err);
int floe__avro_dec_double(floe__avro_cursor *c, double *out, floe_error *err);
/* One byte, 0 or 1 (anything else is FLOE_EFORMAT). */
int floe__avro_dec_boolean(floe__avro_cursor *c, bool *out, floe_error *err);
/* Length-prefixed bytes: *p points into the cursor's memory.  A negative
 * length or one beyond the remaining input is FLOE_EFORMAT. */
int floe__avro_dec_bytes(floe__avro_cursor *c, const uint8_t **p, size_t *n, floe_error *err);
/* Exactly n raw bytes (fixed, sync markers). */
int floe__avro_dec_raw(floe__avro_cursor *c, size_t n, const uint8_t **p, floe_error *err);
/* The count of the next block of an array or map: a negative count is
 * followed by the block's byte size, which is checked against the input and
 * dropped.  *count is >= 0; 0 ends the array or map.  Counts above `max` are
 * FLOE_EFORMAT. */
int floe__avro_dec_block_count(floe__avro_cursor *c, uint64_t max, uint64_t *count,
                               floe_error *err);

/* ==== schemas (avro_schema.c) ============================================
 * A parsed schema is a graph of nodes.  Named types (record, enum, fixed)
 * are defined once and every reference to the name points at the same
 * node, so a recursive schema is a cyclic graph: walk it with a depth
 * limit.  Everything is owned by the floe__avro_schema and freed with it;
 * the schema is immutable after parsing and may be shared between threads.
 * Every node and field keeps its JSON object (`json`, NULL when the schema
 * was written as a bare type name like "long"), so attributes such as
 * `doc`, `default` or any custom key stay readable. */

typedef enum floe__avro_type {
    FLOE_AVRO_NULL = 0,
    FLOE_AVRO_BOOLEAN,
    FLOE_AVRO_INT,
    FLOE_AVRO_LONG,
    FLOE_AVRO_FLOAT,
    FLOE_AVRO_DOUBLE,
    FLOE_AVRO_BYTES,
    FLOE_AVRO_STRING,
    FLOE_AVRO_RECORD,
    FLOE_AVRO_ENUM,
    FLOE_AVRO_ARRAY,
    FLOE_AVRO_MAP,
    FLOE_AVRO_UNION,
    FLOE_AVRO_FIXED,
} floe__avro_type;

/* Logical types are annotations: values are encoded (and decoded) as the
 * underlying type.  An unknown logicalType, or one on the wrong underlying
 * type, is FLOE_AVRO_LT_NONE (the spec says to ignore it); the raw string
 * stays in `logical_name`. */
typedef enum floe__avro_logical {
    FLOE_AVRO_LT_NONE = 0,
    FLOE_AVRO_LT_DECIMAL,            /* bytes or fixed; precision, scale */
    FLOE_AVRO_LT_UUID,               /* string (or fixed 16) */
    FLOE_AVRO_LT_DATE,               /* int: days since 1970-01-01 */
    FLOE_AVRO_LT_TIME_MILLIS,        /* int */
    FLOE_AVRO_LT_TIME_MICROS,        /* long */
    FLOE_AVRO_LT_TIMESTAMP_MILLIS,   /* long */
    FLOE_AVRO_LT_TIMESTAMP_MICROS,   /* long */
    FLOE_AVRO_LT_TIMESTAMP_NANOS,    /* long */
    FLOE_AVRO_LT_LOCAL_TIMESTAMP_MILLIS,
    FLOE_AVRO_LT_LOCAL_TIMESTAMP_MICROS,
    FLOE_AVRO_LT_LOCAL_TIMESTAMP_NANOS,
    FLOE_AVRO_LT_DURATION,           /* fixed 12 */
    FLOE_AVRO_LT_MAP,                /* Iceberg: array of {key, value} records */
} floe__avro_logical;

typedef struct floe__avro_node floe__avro_node;

/* A record field. */
typedef struct floe__avro_field {
    const char *name;
    const floe__avro_node *type;
    int32_t field_id;                /* Iceberg `field-id`; -1 when absent */
    const json_t *json;              /* the field's JSON object */
} floe__avro_field;

struct floe__avro_node {
    floe__avro_type type;
    floe__avro_logical logical;
    const char *logical_name;        /* the logicalType attribute or NULL */
    const char *name;                /* fullname of record/enum/fixed, else NULL */
    const json_t *json;              /* the node's JSON object or NULL */
    int32_t precision, scale;        /* decimal */
    int32_t element_id;              /* array `element-id`, -1 when absent */
    int32_t key_id, value_id;        /* map `key-id` / `value-id`, -1 when absent */
    size_t size;                     /* fixed: bytes per value */
    size_t n;                        /* record: fields; enum: symbols; union: branches */
    floe__avro_field *fields;        /* record */
    const char **symbols;            /* enum */
    const floe__avro_node **branches;/* union */
    const floe__avro_node *items;    /* array */
    const floe__avro_node *values;   /* map (keys are strings) */
    size_t min_size;                 /* a lower bound on a value's encoded bytes */
};

typedef struct floe__avro_schema floe__avro_schema;

/* Parse schema JSON text [json, json+len).  Invalid JSON or an invalid
 * schema (unknown type name, undefined or duplicate name, a union inside a
 * union or with two branches of one unnamed type, fixed without size, ...)
 * is FLOE_ESCHEMA with a message naming the place.  *out is the caller's
 * (free with floe__avro_schema_free). */
int floe__avro_schema_parse(const char *json, size_t len, floe__avro_schema **out,
                            floe_error *err);
void floe__avro_schema_free(floe__avro_schema *s);
const floe__avro_node *floe__avro_schema_root(const floe__avro_schema *s);
/* The schema text exactly as it was parsed (NUL-terminated copy). */
const char *floe__avro_schema_text(const floe__avro_schema *s);
/* A named type by fullname, or NULL. */
const floe__avro_node *floe__avro_schema_find(const floe__avro_schema *s, const char *fullname);

/* Whether every name follows the spec's [A-Za-z_][A-Za-z0-9_]* rule (each
 * part of a fullname, field names, enum symbols); FLOE_ESCHEMA naming the
 * first offender.  The writer insists on it, since strict readers (Java)
 * reject such files; the reader does not. */
int floe__avro_schema_check_names(const floe__avro_schema *s, floe_error *err);
/* "null", "boolean", ..., "fixed". */
const char *floe__avro_type_name(floe__avro_type t);
/* A record's field by name or by Iceberg field id; index into node->fields
 * or -1.  NULL or non-record nodes give -1. */
int floe__avro_field_index(const floe__avro_node *record, const char *name);
int floe__avro_field_index_by_id(const floe__avro_node *record, int32_t field_id);
/* For a union of null and one other type (Iceberg's optional), that other
 * branch; NULL for anything else. */
const floe__avro_node *floe__avro_optional_inner(const floe__avro_node *u);

/* ==== codecs (avro_codec.c) ============================================== */

typedef enum floe__avro_codec {
    FLOE_AVRO_CODEC_NULL = 0,
    FLOE_AVRO_CODEC_DEFLATE,         /* raw deflate, RFC 1951 (no zlib header);
                                        bytes after the stream's end are ignored */
    FLOE_AVRO_CODEC_SNAPPY,          /* raw snappy + big-endian CRC32 of the data */
    FLOE_AVRO_CODEC_ZSTD,            /* "zstandard": one or more zstd frames */
} floe__avro_codec;

/* The avro.codec name ("null", "deflate", "snappy", "zstandard"). */
const char *floe__avro_codec_name(floe__avro_codec c);
/* Name (n bytes, not NUL-terminated) -> codec; FLOE_EUNSUPPORTED when the
 * codec is unknown or not built in (bzip2, xz). */
int floe__avro_codec_parse(const char *name, size_t n, floe__avro_codec *out, floe_error *err);
/* Append the compressed form of [src, src+n) to dst.  level: 0 = default. */
int floe__avro_compress(floe__avro_codec c, int level, const uint8_t *src, size_t n,
                        floe__buf *dst, floe_error *err);
/* Append the decompressed form to dst.  Output beyond dst->max is
 * FLOE_EFORMAT (so compression bombs stop at the limit); corrupt data and a
 * snappy CRC mismatch are FLOE_EFORMAT too. */
int floe__avro_decompress(floe__avro_codec c, const uint8_t *src, size_t n, floe__buf *dst,
                          floe_error *err);

/* ==== writer (avro_writer.c) ==============================================
 * Writes one OCF to a floe__output.  Objects are encoded with a streaming
 * API that follows the schema depth-first, the way the binary encoding
 * does.  Every call is checked against the schema: a value of the wrong
 * type, a field left out, too many or too few array items, or an ambiguous
 * union is FLOE_EINVAL naming the path ("manifest_entry.data_file.
 * record_count: expected long, got string") and nothing is encoded for that
 * call.  After any failure the writer is poisoned: every later call returns
 * the same code, and the only thing left to do is floe__avro_writer_abort.
 *
 *   record        floe__avro_begin_record(w) ... one value per field, in
 *                 schema order ... floe__avro_end_record(w)
 *   array         floe__avro_begin_array(w, n) ... n item values ...
 *                 floe__avro_end_array(w)
 *   map           floe__avro_begin_map(w, n) ... n x (put_string(key),
 *                 value) ... floe__avro_end_map(w)
 *   Iceberg map   (array of key/value records) begin_array(w, n), then n x
 *                 { begin_record, key, value, end_record }, end_array
 *   union         floe__avro_put_union(w, branch) then the branch's value;
 *                 or, when exactly one branch can hold the value being put,
 *                 just put it: put_null / put_long / begin_record / ... on
 *                 ["null", "long"] picks the branch itself.  So an Iceberg
 *                 optional field is put_null(w) or put_long(w, v).
 *   logical types are put as their underlying type (date: put_int,
 *                 timestamp-micros: put_long, decimal: put_bytes/put_fixed
 *                 with the big-endian two's-complement unscaled value).
 *
 * One top-level value (the root record) is one object; objects are
 * gathered into blocks, and a block is compressed and written out when it
 * reaches the block size and at close.  Example, for
 *   {"type":"record","name":"r","fields":[
 *     {"name":"id","type":"long","field-id":1},
 *     {"name":"tags","type":["null",{"type":"array","items":"string"}]}]}
 *
 *   floe__avro_begin_record(w);
 *   floe__avro_put_long(w, 42);
 *   floe__avro_begin_array(w, 2);           (picks the array branch)
 *   floe__avro_put_cstr(w, "a");
 *   floe__avro_put_cstr(w, "b");
 *   floe__avro_end_array(w);
 *   rc = floe__avro_end_record(w, err);     (the object is complete)
 *
 * Encoding calls other than floe__avro_end_record take no `err`: they return
 * the code, and the message is kept by the writer until end_record, close or
 * floe__avro_writer_error() hands it out.  Checking the code of every call
 * is fine but optional; a failure is never lost. */

typedef struct floe__avro_writer floe__avro_writer;

/* One header metadata entry.  Keys starting with "avro." are reserved and
 * rejected.  The value is `value_len` bytes, or strlen(value) when
 * value_len is (size_t)-1. */
typedef struct floe__avro_meta {
    const char *key;
    const char *value;
    size_t value_len;
} floe__avro_meta;
#define FLOE_AVRO_STRLEN ((size_t)-1)

/* Writer options: zero-initialise, then set what you need. */
typedef struct floe__avro_writer_options {
    floe__avro_codec codec;          /* default FLOE_AVRO_CODEC_NULL */
    int level;                       /* codec level; 0 = the codec's default */
    size_t block_size;               /* flush a block at this many uncompressed
                                        bytes; 0 = 256 KiB */
    const uint8_t *sync;             /* 16 bytes to use as the sync marker;
                                        NULL = random (tests want fixed bytes) */
} floe__avro_writer_options;

/* Parse `schema_json` (NUL-terminated; stored in the header byte for byte),
 * write the header to `out` and return a writer.  opts may be NULL.  On
 * success the writer owns `out` (close or abort it through the writer); on
 * failure the caller still owns `out`, which may have received part of the
 * header and should be aborted.  Errors: FLOE_ESCHEMA (bad schema),
 * FLOE_EINVAL (reserved or duplicate metadata key), the output's errors. */
int floe__avro_writer_new(const char *schema_json, const floe__avro_writer_options *opts,
                          const floe__avro_meta *meta, size_t n_meta, floe__output *out,
                          floe__avro_writer **w_out, floe_error *err);
/* The parsed schema (owned by the writer). */
const floe__avro_schema *floe__avro_writer_schema(const floe__avro_writer *w);

int floe__avro_put_null(floe__avro_writer *w);
int floe__avro_put_boolean(floe__avro_writer *w, bool v);
int floe__avro_put_int(floe__avro_writer *w, int32_t v);
int floe__avro_put_long(floe__avro_writer *w, int64_t v);
int floe__avro_put_float(floe__avro_writer *w, float v);
int floe__avro_put_double(floe__avro_writer *w, double v);
int floe__avro_put_bytes(floe__avro_writer *w, const void *p, size_t n);
/* Strings must be valid UTF-8 (else FLOE_EINVAL). */
int floe__avro_put_string(floe__avro_writer *w, const char *s, size_t n);
int floe__avro_put_cstr(floe__avro_writer *w, const char *s);
/* n must equal the fixed type's size. */
int floe__avro_put_fixed(floe__avro_writer *w, const void *p, size_t n);
/* The zero-based symbol index. */
int floe__avro_put_enum(floe__avro_writer *w, int32_t index);
/* Select branch `branch` of the union expected next. */
int floe__avro_put_union(floe__avro_writer *w, int32_t branch);
int floe__avro_begin_record(floe__avro_writer *w);
/* Ends the innermost record; when it is the top-level value, the object is
 * complete and counted (and a full block is flushed, so output errors can
 * surface here). */
int floe__avro_end_record(floe__avro_writer *w, floe_error *err);
int floe__avro_begin_array(floe__avro_writer *w, size_t n);
int floe__avro_end_array(floe__avro_writer *w);
int floe__avro_begin_map(floe__avro_writer *w, size_t n);
int floe__avro_end_map(floe__avro_writer *w);

/* The first failure's code and message (moved into err), FLOE_OK if none. */
int floe__avro_writer_error(floe__avro_writer *w, floe_error *err);
/* Objects completed so far, and bytes written plus bytes still pending. */
uint64_t floe__avro_writer_objects(const floe__avro_writer *w);
uint64_t floe__avro_writer_bytes(const floe__avro_writer *w);
/* Flush the last block and close the output (making the file durable and
 * visible).  An object left half-written is FLOE_EINVAL.  Frees w whether
 * or not it succeeds; on failure the output was aborted.  *file_size (may be
 * NULL) receives the final size. */
int floe__avro_writer_close(floe__avro_writer *w, uint64_t *file_size, floe_error *err);
/* Abort the output and free w.  Accepts NULL. */
void floe__avro_writer_abort(floe__avro_writer *w);

/* ==== values (avro_value.c) ===============================================
 * A decoded object is a tree of values.  Unions are resolved: a value's
 * `schema` is the selected branch and `branch` records its index (-1 when
 * the value did not come from a union), so an absent optional field is a
 * value of type FLOE_AVRO_NULL.  Values belong to the reader that produced
 * them (see floe__avro_reader_next for how long they live). */
typedef struct floe__avro_value floe__avro_value;
struct floe__avro_value {
    floe__avro_type type;            /* == schema->type; never UNION */
    int32_t branch;                  /* union branch index, or -1 */
    const floe__avro_node *schema;
    size_t n;                        /* bytes/string/fixed: length in bytes;
                                        record: fields; array: items; map: entries */
    union {
        bool b;                      /* boolean */
        int64_t i;                   /* int, long, enum (symbol index) */
        float f;                     /* float */
        double d;                    /* double */
        const uint8_t *bytes;        /* bytes, fixed, string (string is
                                        NUL-terminated, valid UTF-8) */
        floe__avro_value *items;     /* record: fields in schema order; array:
                                        items; map: 2n values, key then value */
    } u;
};

/* Record field by name / by Iceberg field id.  NULL when v is NULL, not a
 * record, or has no such field (so lookups chain and tolerate missing
 * optional fields: floe__avro_get(floe__avro_get(e, "data_file"), "x")). */
const floe__avro_value *floe__avro_get(const floe__avro_value *v, const char *name);
const floe__avro_value *floe__avro_get_id(const floe__avro_value *v, int32_t field_id);
/* Array item / map key / map value i, NULL when out of range or wrong type. */
const floe__avro_value *floe__avro_item(const floe__avro_value *v, size_t i);
const floe__avro_value *floe__avro_map_key(const floe__avro_value *v, size_t i);
const floe__avro_value *floe__avro_map_value(const floe__avro_value *v, size_t i);
/* Whether v is absent (NULL) or a null value. */
bool floe__avro_is_null(const floe__avro_value *v);
/* Typed reads: true and *out set when v has a matching type; false (and
 * *out untouched) when v is NULL, null or of another type.
 *   floe__avro_long     int, long, enum index
 *   floe__avro_double   float, double, int, long
 *   floe__avro_string   string (NUL-terminated); len may be NULL
 *   floe__avro_bytes    bytes, fixed or string */
bool floe__avro_boolean(const floe__avro_value *v, bool *out);
bool floe__avro_long(const floe__avro_value *v, int64_t *out);
bool floe__avro_double(const floe__avro_value *v, double *out);
bool floe__avro_string(const floe__avro_value *v, const char **out, size_t *len);
bool floe__avro_bytes(const floe__avro_value *v, const uint8_t **out, size_t *len);

/* ==== reader (avro_reader.c) ============================================== */

typedef struct floe__avro_reader floe__avro_reader;

/* Reader limits: zero-initialise; 0 means the default. */
typedef struct floe__avro_reader_options {
    size_t max_block_bytes;          /* uncompressed bytes per block; 64 MiB */
    size_t max_values;               /* decoded values per object; 1 Mi */
} floe__avro_reader_options;

/* Open the OCF in [data, data+len).  The memory is borrowed and must
 * outlive the reader.  Checks the magic, reads the metadata, parses
 * avro.schema and avro.codec.  Errors: FLOE_EFORMAT (not an OCF, truncated,
 * bad metadata), FLOE_ESCHEMA (bad avro.schema), FLOE_EUNSUPPORTED (codec).
 * opts may be NULL.  *out is the caller's (floe__avro_reader_free). */
int floe__avro_reader_open(const uint8_t *data, size_t len,
                           const floe__avro_reader_options *opts,
                           floe__avro_reader **out, floe_error *err);
void floe__avro_reader_free(floe__avro_reader *r);
/* The writer's schema (owned by the reader). */
const floe__avro_schema *floe__avro_reader_schema(const floe__avro_reader *r);
floe__avro_codec floe__avro_reader_codec(const floe__avro_reader *r);
/* Header metadata value for `key` (e.g. Iceberg's "schema",
 * "partition-spec"), NUL-terminated, owned by the reader; NULL when absent.
 * len (may be NULL) receives the value's length (values may hold NULs). */
const char *floe__avro_reader_meta(const floe__avro_reader *r, const char *key, size_t *len);
/* Metadata entries in file order, for listing. */
size_t floe__avro_reader_meta_count(const floe__avro_reader *r);
const char *floe__avro_reader_meta_key(const floe__avro_reader *r, size_t i);
const char *floe__avro_reader_meta_value(const floe__avro_reader *r, size_t i, size_t *len);
/* Decode the next object.  *out is set to the object, or to NULL at the
 * end of the file.  The value tree lives until the next call of
 * floe__avro_reader_next or floe__avro_reader_free.  A block whose sync
 * marker differs from the header's, whose data is corrupt or not fully
 * used by its objects, and trailing garbage are FLOE_EFORMAT.  After a
 * failure further calls fail again. */
int floe__avro_reader_next(floe__avro_reader *r, const floe__avro_value **out,
                           floe_error *err);
/* Objects returned so far. */
uint64_t floe__avro_reader_objects(const floe__avro_reader *r);

#endif /* FLOE_AVRO_INTERNAL_H */
