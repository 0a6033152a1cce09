/*
 * source_internal.h - input adapters: the JSON scanner (json_scan.c) and the
 * JSON -> row-format parser (json_row.c) that the change-stream reader uses
 * to parse `{"time":5,"diff":1,"row":{...}}` lines in place.
 *
 * All functions work on a byte range [p, end) that need not be
 * NUL-terminated and never read outside it.  JSON here is RFC 8259: no
 * comments, no trailing commas, no NaN literals, strings must be valid UTF-8
 * (escapes included: lone surrogates are errors).
 */
#ifndef FLOE_SOURCE_INTERNAL_H
#define FLOE_SOURCE_INTERNAL_H

#include "schema/schema_internal.h"

/* Containers nested deeper than this are rejected (jsonb values, skipped
 * values); typed values are bounded by their schema instead. */
#define FLOE__JSON_MAX_DEPTH 1000

/* ---- scanner (json_scan.c) ------------------------------------------------ */

/* Skips JSON whitespace (space, tab, CR, LF). */
static inline const char *floe__json_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* For 8 bytes of a JSON string loaded little-endian into v: a mask with
 * the high bit set in (at least) the first byte that is >= 0x80, < 0x20,
 * '"' or '\\', and 0 when there is none.  Each test is the classic "has a
 * byte less than n" bit trick: a borrow only starts at a byte that itself
 * matches, so the lowest set bit marks exactly the first such byte. */
static inline uint64_t floe__json_special_mask(uint64_t v)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');
    uint64_t t = v | ((v - ones * 0x20) & ~v) | ((q - ones) & ~q) | ((b - ones) & ~b);
    return t & high;
}

/* Exact integers in strict JSON integer syntax (optional '-' for i64, no
 * leading zeros, no fraction or exponent).  Return the pointer after the
 * digits, or NULL when there is no such integer at p or it is out of range.
 * The caller checks what follows. */
const char *floe__json_u64(const char *p, const char *end, uint64_t *out);
const char *floe__json_i64(const char *p, const char *end, int64_t *out);

/* A scanned string: the bytes between the quotes, escapes not decoded. */
typedef struct floe__json_str {
    const char *raw;
    size_t len;
    bool escaped;           /* raw holds at least one backslash escape */
} floe__json_str;

/* Scans the string starting at p (which must be '"'): checks escapes,
 * surrogate pairs, UTF-8 and the absence of raw control characters.  On
 * success *endp is after the closing quote.  On failure FLOE_EINPUT with
 * the reason, and *endp points at the offending byte. */
int floe__json_scan_string(const char *p, const char *end, const char **endp,
                           floe__json_str *s, floe_error *err);
/* Decodes a scanned string into dst, which has room for s->len bytes (the
 * decoded form is never longer); returns the decoded length. */
size_t floe__json_unescape(const floe__json_str *s, char *dst);
/* Whether the scanned string equals the NUL-terminated `name`. */
bool floe__json_str_eq(const floe__json_str *s, const char *name);
/* Scans and appends the decoded string to out. */
int floe__json_read_string(const char *p, const char *end, const char **endp, floe__buf *out,
                           floe_error *err);
/* Checks the JSON number grammar at p; *endp after it (or at the offending
 * byte on failure). */
int floe__json_scan_number(const char *p, const char *end, const char **endp, floe_error *err);
/* Skips one JSON value of any type (after leading whitespace), validating
 * it fully; *endp after it (or at the offending byte on failure). */
int floe__json_skip_value(const char *p, const char *end, const char **endp, floe_error *err);
/* Like skip, and appends the value's compact text to out: no whitespace
 * between tokens, numbers and literals as written, strings re-escaped
 * canonically (only ", \ and control characters escaped, as \" \\ \n \t \r
 * \b \f or \u00xx; everything else as UTF-8).  Object members keep their
 * order (duplicates kept).  Equal JSON texts up to whitespace and escaping
 * give equal output. */
int floe__json_compact_value(const char *p, const char *end, const char **endp, floe__buf *out,
                             floe_error *err);

/* ---- JSON rows (json_row.c) ------------------------------------------------ */

/* Parses one JSON object at p (after optional whitespace) whose keys are the
 * columns of s, and appends the row in the row format (schema_internal.h)
 * to out.  On success *endp points just after the closing '}'.  On failure
 * out is restored to its length on entry and err says which column (with
 * the nested path, e.g. "addr.zip", "tags[3]", "attrs[\"k\"]"), why, and the
 * byte offset from p.  Codes: FLOE_EINPUT for bad input, FLOE_ELIMIT when
 * out would exceed its maximum, FLOE_ENOMEM.
 *
 * Rules (SPEC.md section 2; the full list is at the top of json_row.c):
 * missing keys are null, unknown or repeated keys are errors, null in a
 * not-null field is an error; map entries are stored sorted by key bytes
 * (so equal maps give equal rows) and repeated map keys are errors.
 * Speed: single pass, no allocation per value (allocation only for very
 * wide or deeply nested objects, or escaped non-text strings over 256
 * bytes); keys in schema order take a fast path. */
int floe__json_parse_row(const floe__schema *s, const char *p, const char *end,
                         const char **endp, floe__buf *out, floe_error *err);

/* ---- change records (changes.c) --------------------------------------------- */
typedef enum floe__change_kind {
    FLOE__CHANGE_UPDATE = 1,
    FLOE__CHANGE_PROGRESS = 2,
    FLOE__CHANGE_SCHEMA = 3,
    FLOE__CHANGE_TRUNCATE = 4,
    FLOE__CHANGE_PARTITION = 5,
} floe__change_kind;

typedef struct floe__change {
    floe__change_kind kind;
    uint64_t time;           /* UPDATE: its time; PROGRESS: the new frontier time; SCHEMA,
                                PARTITION: when it takes effect; TRUNCATE: the time before
                                which every row is gone */
    int64_t diff;            /* UPDATE */
    bool closed;             /* PROGRESS given as null or []: the input is complete */
    size_t schema_at;        /* SCHEMA: the column list, PARTITION: the spec, a
                                NUL-terminated string in `row` */
    size_t key_at;           /* SCHEMA: the key columns in `row`; SIZE_MAX: not given */
} floe__change;

/* Parses one NDJSON change line [line, line+n): an update (its row appended
 * to `row` in the row format), a progress record, or a schema change (its
 * strings appended to `row`).  FLOE_EINPUT with the
 * reason and byte offset for anything else; `row` is unchanged on failure. */
int floe__change_parse(const floe__schema *s, const char *line, size_t n, floe__change *out,
                       floe__buf *row, floe_error *err);

/* The largest row floe_row_set_json builds (bytes in the row format). */
#define FLOE__ROW_MAX_BYTES ((size_t)1 << 30)

#endif /* FLOE_SOURCE_INTERNAL_H */
