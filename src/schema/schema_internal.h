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
} floe__field;

/* The public floe_schema: a root STRUCT field and the Iceberg schema id. */
struct floe_schema {
    floe__field root;        /* kind STRUCT, id 0, name "" */
    int32_t schema_id;
    int32_t highest_id;      /* the largest field id in the tree */
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

#endif /* FLOE_SCHEMA_INTERNAL_H */
