/*
 * schema_internal.h - floe's type tree and its row format.
 *
 * A schema is a tree of fields.  Each field carries its Iceberg type (`kind`,
 * what is stored) and, when it came from a user declaration, the declared
 * source type (`decl`, how input values are read: a `uint2` is stored as an
 * Iceberg int but accepts 0..65535).  Field ids follow Iceberg: assigned
 * depth-first, pre-order, from 1 (SPEC.md section 3).
 *
 * The row format ("datum") is how rows travel inside floe between the input
 * parsers, consolidation, key memory and the Parquet shredder.  It is a
 * compact, self-delimiting, canonical byte string: two rows are equal iff
 * their bytes are equal.  Layout (all integers little-endian):
 *
 *   row      := slot(field_1) slot(field_2) ... slot(field_n)   top-level fields, in order
 *   slot     := 0x00                       null
 *             | 0x01 payload               present
 *   payload by kind:
 *     BOOLEAN            1 byte, 0 or 1
 *     INT, DATE          4 bytes (int32; DATE = days since 1970-01-01)
 *     LONG               8 bytes (int64)
 *     TIME               8 bytes (int64 microseconds since midnight)
 *     TIMESTAMP(TZ)      8 bytes (int64 microseconds since the epoch; TZ: UTC)
 *     FLOAT / DOUBLE     4 / 8 bytes IEEE-754 bits; every NaN is the canonical
 *                        quiet NaN 0x7fc00000 / 0x7ff8000000000000
 *     DECIMAL            16 bytes: the unscaled value as int128 two's complement
 *     STRING, BINARY     u32 length, then the bytes (STRING: valid UTF-8)
 *     UUID               16 bytes (Iceberg uuid type; only in tables floe loads)
 *     FIXED(L)           L bytes
 *     STRUCT             slot per child, in order
 *     LIST               u32 count, then `count` element slots
 *     MAP                u32 count, then `count` x (key slot, value slot);
 *                        keys are never null
 *
 * Required fields still carry a slot tag (always 0x01), which keeps the
 * walker uniform.
 */
#ifndef FLOE_SCHEMA_INTERNAL_H
#define FLOE_SCHEMA_INTERNAL_H

#include "util/util_internal.h"

typedef enum floe__kind {
    FLOE_K_BOOLEAN = 0,
    FLOE_K_INT,
    FLOE_K_LONG,
    FLOE_K_FLOAT,
    FLOE_K_DOUBLE,
    FLOE_K_DECIMAL,
    FLOE_K_DATE,
    FLOE_K_TIME,
    FLOE_K_TIMESTAMP,
    FLOE_K_TIMESTAMPTZ,
    FLOE_K_STRING,
    FLOE_K_UUID,
    FLOE_K_FIXED,
    FLOE_K_BINARY,
    FLOE_K_STRUCT,
    FLOE_K_LIST,
    FLOE_K_MAP,
} floe__kind;

/* The declared (source) type of a field, as written in a column list.
 * FLOE_D_NONE: the field came from an Iceberg schema, not a declaration;
 * input values are then read by its kind alone. */
typedef enum floe__decl {
    FLOE_D_NONE = 0,
    FLOE_D_BOOLEAN,
    FLOE_D_SMALLINT,
    FLOE_D_INTEGER,
    FLOE_D_BIGINT,
    FLOE_D_UINT2,
    FLOE_D_UINT4,
    FLOE_D_UINT8,
    FLOE_D_REAL,
    FLOE_D_DOUBLE,
    FLOE_D_NUMERIC,
    FLOE_D_TEXT,
    FLOE_D_JSONB,
    FLOE_D_INTERVAL,
    FLOE_D_UUID,
    FLOE_D_BYTEA,
    FLOE_D_DATE,
    FLOE_D_TIME,
    FLOE_D_TIMESTAMP,
    FLOE_D_TIMESTAMPTZ,
    FLOE_D_LIST,
    FLOE_D_RECORD,
    FLOE_D_MAP,
    FLOE_D_RANGE,
} floe__decl;

typedef struct floe__field {
    char *name;              /* list elements are "element"; map parts "key"/"value" */
    int32_t id;              /* Iceberg field id (> 0) */
    bool required;           /* not null */
    floe__kind kind;
    floe__decl decl;
    int32_t precision;       /* DECIMAL */
    int32_t scale;           /* DECIMAL */
    int32_t length;          /* FIXED */
    uint32_t n_children;     /* STRUCT: fields; LIST: 1 (element); MAP: 2 (key, value) */
    struct floe__field *children;
    /* Iceberg default values of a primitive struct field (format 3): the
     * payload of a present slot in the row format (no tag byte), or NULL
     * for a null default.  initial-default: what rows written before the
     * field was added read; write-default: what a row that does not supply
     * the field gets.  Owned by the field. */
    uint8_t *initial_default, *write_default;
    uint32_t initial_default_len, write_default_len;
    char *doc;               /* Iceberg "doc", or NULL; owned */
    /* Column lists only: the name the field had before ("b bigint was a"),
     * a rename for schema evolution; NULL otherwise.  Owned. */
    char *was;
} floe__field;

/* The public floe_schema: a root STRUCT field and the Iceberg schema id. */
struct floe_schema {
    floe__field root;        /* kind STRUCT, id 0, name "" */
    int32_t schema_id;
    int32_t highest_id;      /* the largest field id in the tree */
    int32_t *identifier_ids; /* Iceberg identifier-field-ids (owned), or NULL */
    uint32_t n_identifier_ids;
};
typedef struct floe_schema floe__schema;

/* The public floe_row: one row of `schema` in the row format above. */
struct floe_row {
    const floe__schema *schema;
    floe__buf data;
};

/* ---- row format helpers (inline) ----------------------------------------- */
#define FLOE_SLOT_NULL 0x00
#define FLOE_SLOT_PRESENT 0x01

static inline uint32_t floe__datum_u32(const uint8_t *p) { return floe__get_le32(p); }

/* Fixed payload width of a kind, or 0 for variable-width kinds (STRING,
 * BINARY, STRUCT, LIST, MAP).  FIXED uses the field's length. */
static inline size_t floe__kind_width(const floe__field *f)
{
    switch (f->kind) {
    case FLOE_K_BOOLEAN: return 1;
    case FLOE_K_INT: case FLOE_K_DATE: case FLOE_K_FLOAT: return 4;
    case FLOE_K_LONG: case FLOE_K_TIME: case FLOE_K_TIMESTAMP: case FLOE_K_TIMESTAMPTZ:
    case FLOE_K_DOUBLE: return 8;
    case FLOE_K_DECIMAL: case FLOE_K_UUID: return 16;
    case FLOE_K_FIXED: return (size_t)f->length;
    default: return 0;
    }
}

/* ---- type tree operations (type.c) ---------------------------------------
 * Trees are at most FLOE__SCHEMA_MAX_DEPTH levels deep (a top-level column is
 * level 1; each struct field, list element or map key/value one more).  Every
 * builder enforces it, so the recursive walks below are bounded.  Code that
 * builds trees by hand must stay within it too. */
#define FLOE__SCHEMA_MAX_DEPTH 64

struct json_t;   /* jansson's value type */

/* Frees f's name and children (recursively) and zeroes *f; f itself is the
 * caller's.  Accepts NULL. */
void floe__field_clear(floe__field *f);
/* Deep copy of src into *dst (whose old contents are overwritten, not freed).
 * On failure *dst is left zeroed. */
int floe__field_copy(floe__field *dst, const floe__field *src, floe_error *err);
/* A schema with an empty root struct (no columns yet, schema id 0). */
int floe__schema_new(floe__schema **out, floe_error *err);
int floe__schema_copy(const floe__schema *s, floe__schema **out, floe_error *err);
/* Replace s's identifier-field-ids with a copy of ids[0..n). */
int floe__schema_set_identifiers(floe__schema *s, const int32_t *ids, size_t n, floe_error *err);
/* Number the fields depth-first, pre-order, from 1 (root keeps id 0) and set
 * highest_id. */
void floe__schema_assign_ids(floe__schema *s);
/* A hash of the tree's shape: field ids, kinds, fixed lengths and nesting
 * (not names, nullability or decimal precision: what the row format's bytes
 * of it depend on, and what they mean). */
uint64_t floe__schema_fingerprint(const floe__schema *s);
/* The same Iceberg schema: field ids, names, types, nullability, defaults,
 * order and identifier fields (not schema ids, docs or declared types). */
bool floe__schema_equal(const floe__schema *a, const floe__schema *b);
/* The field with Iceberg id `id`, or NULL. */
const floe__field *floe__schema_find_id(const floe__schema *s, int32_t id);
/* "int", "decimal", "list", ... (no parameters). */
const char *floe__kind_name(floe__kind k);
/* The type of f as text, for messages, snprintf-style: writes at most cap
 * bytes (NUL-terminated, "..." when cut) and returns the full length.
 * declared = false: the Iceberg type ("decimal(12,2)", "fixed[16]",
 * "list<string>", "map<string, int>", "struct<a: int>").  declared = true:
 * the declared type ("numeric(12,2)", "uint8", "text[]", "map[text=>integer]",
 * "record(a integer not null)", "range<date>"), or the Iceberg type for
 * fields with decl FLOE_D_NONE. */
size_t floe__type_name(const floe__field *f, bool declared, char *buf, size_t cap);
/* The Iceberg JSON schema (Appendix C of the Iceberg spec) as a jansson
 * object (caller decrefs). */
int floe__schema_to_jansson(const floe__schema *s, struct json_t **out, floe_error *err);
/* Builds a schema from Iceberg schema JSON: every field gets decl
 * FLOE_D_NONE, ids are taken as given (they must be positive and distinct),
 * highest_id is their maximum.  Malformed: FLOE_EFORMAT; a type floe cannot
 * store (timestamp_ns, variant, ...): FLOE_EUNSUPPORTED. */
int floe__schema_from_jansson(const struct json_t *j, floe__schema **out, floe_error *err);
int floe__schema_from_json(const char *text, size_t len, floe__schema **out, floe_error *err);

/* ---- default values (default_value.c) ---------------------------------------
 * Iceberg's initial-default / write-default of a field: JSON single-value
 * form (Iceberg spec, Appendix D) <-> the payload kept on the field. */

/* The payload of JSON value v for field f (primitive fields only; a null
 * or absent v is no payload: *out NULL).  raw (may be NULL): a number's
 * text, read exactly for decimals.  *out is the caller's (floe__free).
 * FLOE_ESCHEMA naming the field and why when v does not fit; a non-null
 * default of a record, list or map is FLOE_EUNSUPPORTED. */
int floe__default_from_json(const floe__field *f, const struct json_t *v, const char *raw,
                            size_t raw_len, uint8_t **out, uint32_t *out_len,
                            floe_error *err);
/* The JSON single-value form of a payload (NULL p: JSON null); NULL when
 * out of memory or malformed.  Caller decrefs. */
struct json_t *floe__default_to_json(const floe__field *f, const uint8_t *p, uint32_t len);
/* Replace f's defaults with copies (NULL: null). */
int floe__field_set_defaults(floe__field *f, const uint8_t *initial, uint32_t initial_len,
                             const uint8_t *write, uint32_t write_len, floe_error *err);
bool floe__default_equal(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen);

/* ---- rows (datum.c) --------------------------------------------------------
 * Walkers over the row format above.  They never read outside [p, end). */

/* The end of the slot of field f starting at p, or NULL when the bytes are
 * truncated or malformed (bad tag).  Checks structure only, not values. */
const uint8_t *floe__datum_skip(const floe__field *f, const uint8_t *p, const uint8_t *end);
/* Checks that [p, p+n) is exactly one well-formed row of s: tags are 0/1,
 * required fields and map keys are present, booleans are 0/1, strings are
 * UTF-8, NaNs are canonical, decimals fit their precision.  FLOE_EINPUT
 * naming the field and reason otherwise. */
int floe__datum_validate(const floe__schema *s, const uint8_t *p, size_t n, floe_error *err);
/* Appends the row [p, p+n) as JSON text to out, in the encodings of SPEC.md
 * section 2 (canonical forms; see datum.c).  The row must be well formed
 * (FLOE_EINPUT otherwise). */
int floe__datum_to_json(const floe__schema *s, const uint8_t *p, size_t n, floe__buf *out,
                        floe_error *err);

/* ---- scalar text parsers (value_text.c) ------------------------------------
 * Pure functions over a text span (the contents of a JSON string, or a JSON
 * number token).  Each returns NULL on success or a static reason for a
 * message. */

typedef __int128 floe__i128;

/* Exact decimal text: [+-] digits [. digits] [(e|E) [+-] digits] (at least one
 * digit; ".5" and "5." are accepted), no blanks.  The value is scaled to
 * `scale` fraction digits, rounding half away from zero (as PostgreSQL
 * does); *inexact tells whether non-zero digits were dropped.  A result of
 * `precision` or more digits is an overflow (reason starts with
 * "overflow").  Never goes through a double. */
const char *floe__parse_decimal(const char *s, size_t n, int precision, int scale,
                                floe__i128 *out, bool *inexact);
/* A JSON number token as double / float, correctly rounded; -0 is kept;
 * values beyond the type's range are errors (underflow goes to 0). */
const char *floe__parse_double(const char *s, size_t n, double *out);
const char *floe__parse_float(const char *s, size_t n, float *out);
/* "NaN", "Infinity", "-Infinity" (also "+Infinity", "inf", "-inf", any
 * case): sets *out and returns true. */
bool floe__parse_float_special(const char *s, size_t n, double *out);
/* "YYYY-MM-DD", years 0001..9999 -> days since 1970-01-01. */
const char *floe__parse_date(const char *s, size_t n, int32_t *days);
/* "HH:MM:SS[.f]" (1-6 fraction digits) -> microseconds since midnight. */
const char *floe__parse_time(const char *s, size_t n, int64_t *us);
/* "YYYY-MM-DD HH:MM:SS[.f]" ('T' also accepted) -> microseconds since the
 * epoch.  with_zone: a zone is required ("Z", "+HH:MM", "+HHMM", "+HH", or
 * '-') and the result is UTC; otherwise a zone is an error.  The result must
 * lie within 0001-01-01 .. 9999-12-31 (UTC). */
const char *floe__parse_timestamp(const char *s, size_t n, bool with_zone, int64_t *us);

/* ---- schema changes (convert.c) ------------------------------------------
 * The row [row, row+len) of `from` as a row of `to` (its evolution),
 * appended to out: fields matched by id, values promoted along Iceberg's
 * widenings, fields `to` adds take their write-default or null.
 * FLOE_EINCOMPATIBLE when a value cannot be carried (a type change Iceberg
 * does not allow, null into a required field); out is unchanged then. */
int floe__datum_convert(const floe__schema *from, const floe__schema *to, const uint8_t *row,
                        size_t len, floe__buf *out, floe_error *err);

/* ---- value text (datum.c) --------------------------------------------------
 * The text forms datum.c prints, for other printers of single values. */
/* The decimal digits of v with `scale` of them after a point ("-12.30"),
 * NUL-terminated; buf holds at least 44 bytes.  Returns the length. */
size_t floe__format_decimal(__int128 v, int scale, char *buf);
/* "YYYY-MM-DD" of days since 1970-01-01 (at most 24 bytes with the NUL). */
size_t floe__format_date(int64_t days, char *buf);
/* "HH:MM:SS[.f]" of microseconds since midnight (in [0, 86400e6)), the
 * fraction's trailing zeros cut; at most 16 bytes with the NUL. */
size_t floe__format_time(int64_t us, char *buf);
/* "YYYY-MM-DD HH:MM:SS[.f]" of microseconds since 1970 (floored), with a
 * "Z" when zone; NUL-terminated, at most 48 bytes with it.  Returns the
 * length. */
size_t floe__format_timestamp(int64_t us, bool zone, char *buf);

/* ---- calendar arithmetic (datum.c) ----------------------------------------
 * Proleptic Gregorian; days are counted from 1970-01-01. */
int64_t floe__days_from_civil(int64_t y, unsigned m, unsigned d);
void floe__civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);

#endif /* FLOE_SCHEMA_INTERNAL_H */
