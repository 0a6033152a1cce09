/*
 * changes.c - one line of the NDJSON change stream (SPEC.md section 2):
 *
 *   {"time": 5, "diff": 1, "row": {...}}     an update
 *   {"progress": 7}                          the frontier moves to [7]
 *   {"progress": [7]}                        the same in frontier form
 *   {"progress": null} / {"progress": []}    the input is complete (closed)
 *   {"time": 9, "schema": "COLUMNS"}         the schema changes at time 9
 *   {"time": 9, "schema": "...", "key": "a,b"}   ... and so do the key columns
 *   {"time": 9, "truncate": true}            every row before time 9 is gone
 *   {"time": 9, "partition-by": "day(ts)"}   the partition spec changes at time 9
 *
 * Members may come in any order; unknown members, missing ones and values of
 * the wrong type are errors naming the member.  The row is parsed in place
 * into the row format by floe__json_parse_row.  The usual order (time, diff,
 * row) takes a fast path; anything else, errors included, goes through the
 * general member loop, which also makes the messages.
 */
#include "source/source_internal.h"

enum { HAVE_TIME = 1, HAVE_DIFF = 2, HAVE_ROW = 4, HAVE_PROGRESS = 8, HAVE_SCHEMA = 16,
       HAVE_KEY = 32, HAVE_TRUNCATE = 64, HAVE_PARTITION = 128 };

static int bad(floe_error *err, const char *start, const char *at, const char *why)
{
    return floe__err_set(err, FLOE_EINPUT, "%s (byte %zu)", why, (size_t)(at - start));
}

static int parse_progress(const char *start, const char *p, const char *end, const char **endp,
                          floe__change *out, floe_error *err)
{
    if ((size_t)(end - p) >= 4 && memcmp(p, "null", 4) == 0) {
        out->closed = true;
        *endp = p + 4;
        return FLOE_OK;
    }
    bool bracket = p < end && *p == '[';
    if (bracket) {
        p = floe__json_ws(p + 1, end);
        if (p < end && *p == ']') {
            out->closed = true;
            *endp = p + 1;
            return FLOE_OK;
        }
    }
    const char *q = floe__json_u64(p, end, &out->time);
    if (!q)
        return bad(err, start, p, "\"progress\" must be a time (an integer 0..2^64-1), [time], "
                   "or null (the input is complete)");
    if (bracket) {
        q = floe__json_ws(q, end);
        if (q >= end || *q != ']')
            return bad(err, start, q, "\"progress\" array must hold one time");
        q++;
    }
    *endp = q;
    return FLOE_OK;
}

static int parse_member(const floe__schema *s, const char *start, const floe__json_str *key,
                        const char *p, const char *end, const char **endp, int *seen,
                        floe__change *out, floe__buf *row, floe_error *err)
{
    int flag = floe__json_str_eq(key, "time")       ? HAVE_TIME
               : floe__json_str_eq(key, "diff")     ? HAVE_DIFF
               : floe__json_str_eq(key, "row")      ? HAVE_ROW
               : floe__json_str_eq(key, "progress") ? HAVE_PROGRESS
               : floe__json_str_eq(key, "schema")   ? HAVE_SCHEMA
               : floe__json_str_eq(key, "key")      ? HAVE_KEY
               : floe__json_str_eq(key, "truncate") ? HAVE_TRUNCATE
               : floe__json_str_eq(key, "partition-by") ? HAVE_PARTITION : 0;
    if (!flag)
        return floe__err_set(err, FLOE_EINPUT, "unknown member \"%.*s\" (byte %zu); a change is "
                             "{\"time\",\"diff\",\"row\"}, {\"progress\"}, "
                             "{\"time\",\"schema\"}, {\"time\",\"truncate\"} or "
                             "{\"time\",\"partition-by\"}",
                             (int)(key->len > 40 ? 40 : key->len), key->raw,
                             (size_t)(key->raw - start));
    if (*seen & flag)
        return bad(err, start, key->raw, "repeated member");
    *seen |= flag;
    const char *q = NULL;
    switch (flag) {
    case HAVE_TIME:
        q = floe__json_u64(p, end, &out->time);
        if (!q)
            return bad(err, start, p, "\"time\" must be an integer 0..2^64-1");
        break;
    case HAVE_DIFF:
        q = floe__json_i64(p, end, &out->diff);
        if (!q)
            return bad(err, start, p, "\"diff\" must be an integer (+1 insert, -1 retract)");
        break;
    case HAVE_ROW: {
        if (p >= end || *p != '{')
            return bad(err, start, p, "\"row\" must be an object of column values");
        int rc = floe__json_parse_row(s, p, end, &q, row, err);
        if (rc != FLOE_OK)
            return floe__err_wrap(err, rc, "row (at byte %zu)", (size_t)(p - start));
        break;
    }
    case HAVE_SCHEMA:
    case HAVE_PARTITION:
    case HAVE_KEY: {
        if (p >= end || *p != '"')
            return bad(err, start, p, flag == HAVE_SCHEMA
                       ? "\"schema\" must be a column list (a string)"
                       : flag == HAVE_PARTITION
                       ? "\"partition-by\" must be a partition spec (a string \"day(ts), "
                         "bucket(16, id)\", or \"\" for none)"
                       : "\"key\" must be the key columns (a string \"a,b\")");
        size_t at = row->len;
        FLOE_FORWARD(floe__json_read_string(p, end, &q, row, err));
        FLOE_FORWARD(floe__buf_putc(row, 0, err));
        if (flag == HAVE_KEY)
            out->key_at = at;
        else
            out->schema_at = at;
        break;
    }
    case HAVE_TRUNCATE:
        if ((size_t)(end - p) < 4 || memcmp(p, "true", 4) != 0)
            return bad(err, start, p, "\"truncate\" must be true");
        q = p + 4;
        break;
    default:
        FLOE_FORWARD(parse_progress(start, p, end, &q, out, err));
    }
    *endp = q;
    return FLOE_OK;
}

/* `"name"` then ':' (whitespace allowed around them) at p: after it, or NULL. */
static const char *member(const char *p, const char *end, const char *name, size_t len)
{
    p = floe__json_ws(p, end);
    if ((size_t)(end - p) < len + 2 || p[0] != '"' || memcmp(p + 1, name, len) != 0 ||
        p[len + 1] != '"')
        return NULL;
    p = floe__json_ws(p + len + 2, end);
    return p < end && *p == ':' ? floe__json_ws(p + 1, end) : NULL;
}

static const char *comma(const char *p, const char *end)
{
    p = floe__json_ws(p, end);
    return p < end && *p == ',' ? p + 1 : NULL;
}

/* The common shape {"time": T, "diff": D, "row": {...}} without the general
 * member loop: true when the whole line was parsed.  On any other shape (or
 * an error) it gives up and leaves row as it was, for the general path. */
static bool fast_update(const floe__schema *s, const char *p, const char *end, floe__change *out,
                        floe__buf *row)
{
    size_t row_start = row->len;
    const char *q = member(p + 1, end, "time", 4);
    if (q)
        q = floe__json_u64(q, end, &out->time);
    if (q && (q = comma(q, end)) && (q = member(q, end, "diff", 4)))
        q = floe__json_i64(q, end, &out->diff);
    if (q && (q = comma(q, end)) && (q = member(q, end, "row", 3)) && q < end && *q == '{' &&
        floe__json_parse_row(s, q, end, &q, row, NULL) == FLOE_OK) {
        q = floe__json_ws(q, end);
        if (q < end && *q == '}' && floe__json_ws(q + 1, end) == end) {
            out->kind = FLOE__CHANGE_UPDATE;
            return true;
        }
    }
    row->len = row_start;
    return false;
}

/* The member loop: any shape, every error with its message. */
static int general(const floe__schema *s, const char *line, const char *p, const char *end,
                   floe__change *out, floe__buf *row, floe_error *err)
{
    memset(out, 0, sizeof *out);
    out->schema_at = out->key_at = SIZE_MAX;
    if (p >= end || *p != '{')
        return bad(err, line, p, "a change must be a JSON object");
    p = floe__json_ws(p + 1, end);
    int seen = 0;
    while (p < end && *p != '}') {
        floe__json_str key;
        if (*p != '"')
            return bad(err, line, p, "malformed JSON: expected a member name");
        FLOE_FORWARD(floe__json_scan_string(p, end, &p, &key, err));
        p = floe__json_ws(p, end);
        if (p >= end || *p != ':')
            return bad(err, line, p, "malformed JSON: expected ':'");
        p = floe__json_ws(p + 1, end);
        FLOE_FORWARD(parse_member(s, line, &key, p, end, &p, &seen, out, row, err));
        p = floe__json_ws(p, end);
        if (p < end && *p == ',')
            p = floe__json_ws(p + 1, end);
        else if (p >= end || *p != '}')
            return bad(err, line, p, "malformed JSON: expected ',' or '}'");
    }
    if (p >= end)
        return bad(err, line, p, "malformed JSON: unterminated object");
    if (floe__json_ws(p + 1, end) != end)
        return bad(err, line, p + 1, "malformed JSON: trailing characters after the object");
    if (seen == HAVE_PROGRESS) {
        out->kind = FLOE__CHANGE_PROGRESS;
        return FLOE_OK;
    }
    if (seen == (HAVE_TIME | HAVE_DIFF | HAVE_ROW)) {
        out->kind = FLOE__CHANGE_UPDATE;
        return FLOE_OK;
    }
    if (seen == (HAVE_TIME | HAVE_SCHEMA) || seen == (HAVE_TIME | HAVE_SCHEMA | HAVE_KEY)) {
        out->kind = FLOE__CHANGE_SCHEMA;
        return FLOE_OK;
    }
    if (seen == (HAVE_TIME | HAVE_TRUNCATE)) {
        out->kind = FLOE__CHANGE_TRUNCATE;
        return FLOE_OK;
    }
    if (seen == (HAVE_TIME | HAVE_PARTITION)) {
        out->kind = FLOE__CHANGE_PARTITION;
        return FLOE_OK;
    }
    if (seen & HAVE_PARTITION)
        return bad(err, line, line, "a partition spec change is {\"time\", \"partition-by\"} "
                   "and nothing else");
    if (seen & HAVE_TRUNCATE)
        return bad(err, line, line, "a truncation is {\"time\", \"truncate\": true} and "
                   "nothing else");
    if (seen & (HAVE_SCHEMA | HAVE_KEY))
        return bad(err, line, line, (seen & HAVE_TIME) ? "a schema change is {\"time\", "
                   "\"schema\"} with an optional \"key\" and nothing else"
                   : "a schema change needs the \"time\" it takes effect");
    if (seen & HAVE_PROGRESS)
        return bad(err, line, line, "\"progress\" cannot be mixed with time, diff or row");
    return floe__err_set(err, FLOE_EINPUT, "an update needs \"time\", \"diff\" and \"row\" (missing %s)",
                         !(seen & HAVE_TIME) ? "\"time\"" : !(seen & HAVE_DIFF) ? "\"diff\"" : "\"row\"");
}

int floe__change_parse(const floe__schema *s, const char *line, size_t n, floe__change *out,
                       floe__buf *row, floe_error *err)
{
    const char *p = floe__json_ws(line, line + n), *end = line + n;
    size_t row_start = row->len;
    memset(out, 0, sizeof *out);
    out->schema_at = out->key_at = SIZE_MAX;
    if (p < end && *p == '{' && fast_update(s, p, end, out, row))
        return FLOE_OK;
    int rc = general(s, line, p, end, out, row, err);
    if (rc != FLOE_OK)
        row->len = row_start;             /* a refused line leaves no partial row */
    return rc;
}
