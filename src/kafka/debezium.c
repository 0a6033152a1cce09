/*
 * debezium.c - Debezium's JSON change events (docs/kafka.md): the envelope
 * (with or without JsonConverter's embedded schema), its rows turned into
 * floe's JSON row form, and the column list a Debezium row schema declares.
 *
 * Debezium writes values in Kafka Connect's types, with logical types named
 * in the schema: io.debezium.time.Date (days), Time / MicroTime / NanoTime,
 * Timestamp / MicroTimestamp / NanoTimestamp (since the epoch, no zone),
 * ZonedTimestamp (ISO text), org.apache.kafka.connect.data.Decimal (base64
 * of the unscaled two's complement, scale in the parameters),
 * io.debezium.data.VariableScaleDecimal ({"scale", "value"}), Json (text of
 * a JSON value), Uuid (text).  floe's JSON rows take dates, times and
 * timestamps as text, decimals as numbers or text and jsonb as a JSON value
 * (source/json_row.c), so each value is rewritten by its logical type, or,
 * when the event carries no schema, by the column's type with Debezium's
 * defaults (MicroTime, MicroTimestamp, precise decimals).
 *
 * Fast where it can be: the envelope and the rows are scanned in place
 * (source/json_scan.c), a value is copied as it is unless its column needs
 * it rewritten (then only that value is parsed), and the embedded schema,
 * the same in every event of a table until its DDL changes, is parsed once
 * and kept while its bytes stay the same.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kafka/kafka_internal.h"
#include "source/source_internal.h"

#define NS_PER_US 1000
#define US_PER_DAY INT64_C(86400000000)

void floe__dbz_cache_free(floe__dbz_cache *c)
{
    json_decref(c->schema);
    memset(c, 0, sizeof *c);
}

static const char *ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

typedef int (*member_fn)(void *ctx, const floe__json_str *key, const char *v, const char *vend,
                         floe_error *err);

/* Each member of the object at p (after whitespace): fn with its key and
 * its value's bytes; *endp after the closing brace. */
static int each_member(const char *p, const char *end, const char **endp, member_fn fn,
                       void *ctx, floe_error *err)
{
    p = ws(p, end);
    FLOE_RETURN_IF(p == end || *p != '{', err, FLOE_EINPUT, "not a JSON object");
    p = ws(p + 1, end);
    if (p < end && *p == '}') {
        *endp = p + 1;
        return FLOE_OK;
    }
    for (;;) {
        floe__json_str key;
        FLOE_RETURN_IF(p == end || *p != '"', err, FLOE_EINPUT, "an object member without "
                       "a string key");
        FLOE_FORWARD(floe__json_scan_string(p, end, &p, &key, err));
        p = ws(p, end);
        FLOE_RETURN_IF(p == end || *p != ':', err, FLOE_EINPUT, "no ':' after an object key");
        const char *v = ws(p + 1, end);
        FLOE_FORWARD(floe__json_skip_value(v, end, &p, err));
        FLOE_FORWARD(fn(ctx, &key, v, p, err));
        p = ws(p, end);
        if (p < end && *p == ',') {
            p = ws(p + 1, end);
            continue;
        }
        FLOE_RETURN_IF(p == end || *p != '}', err, FLOE_EINPUT, "no ',' or '}' after an "
                       "object member");
        *endp = p + 1;
        return FLOE_OK;
    }
}

typedef struct span {
    const char *p;
    size_t n;
} span;

/* The top level: JsonConverter's {"schema", "payload"} or the envelope itself. */
typedef struct top {
    span schema, payload, op, before, after, transaction;
    size_t members;
} top;

static int top_member(void *ctx, const floe__json_str *key, const char *v, const char *vend,
                      floe_error *err)
{
    (void)err;
    top *t = ctx;
    span sp = {v, (size_t)(vend - v)};
    t->members++;
    if (floe__json_str_eq(key, "schema"))
        t->schema = sp;
    else if (floe__json_str_eq(key, "payload"))
        t->payload = sp;
    else if (floe__json_str_eq(key, "op"))
        t->op = sp;
    else if (floe__json_str_eq(key, "before"))
        t->before = sp;
    else if (floe__json_str_eq(key, "after"))
        t->after = sp;
    else if (floe__json_str_eq(key, "transaction"))
        t->transaction = sp;
    return FLOE_OK;
}

/* The "id" string of the envelope's "transaction" object. */
static int transaction_member(void *ctx, const floe__json_str *key, const char *v,
                              const char *vend, floe_error *err)
{
    floe__json_str *id = ctx;
    const char *e;
    if (floe__json_str_eq(key, "id") && v < vend && *v == '"') {
        FLOE_FORWARD(floe__json_scan_string(v, vend, &e, id, err));
        FLOE_RETURN_IF(id->escaped, err, FLOE_EINPUT, "a transaction id with escapes");
    }
    return FLOE_OK;
}

static span object_or_none(span s) { return s.n && s.p[0] == '{' ? s : (span){NULL, 0}; }

/* The fields of struct field `name` of an envelope schema, or NULL. */
static json_t *fields_of(json_t *schema, const char *name)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(schema, "fields"), i, f) {
        const char *n = json_string_value(json_object_get(f, "field"));
        if (n && strcmp(n, name) == 0)
            return json_object_get(f, "fields");
    }
    return NULL;
}

/* The embedded schema, parsed unless it is the one parsed last. */
static int schema_of(floe__dbz_cache *c, span s, json_t **out, floe_error *err)
{
    uint64_t h = floe__hash64(s.p, s.n, 0);
    if (!c->schema || c->hash != h || c->len != s.n) {
        json_error_t je;
        json_t *j = json_loadb(s.p, s.n, 0, &je);
        FLOE_RETURN_IF(!j, err, FLOE_EINPUT, "the embedded schema is not JSON: %s", je.text);
        json_decref(c->schema);
        c->schema = j;
        c->hash = h;
        c->len = s.n;
    }
    *out = c->schema;
    return FLOE_OK;
}

int floe__dbz_parse(floe__dbz_cache *c, const char *v, size_t n, floe__dbz *out,
                    floe_error *err)
{
    memset(out, 0, sizeof *out);
    const char *end = v + n, *after_top;
    top t = {0};
    FLOE_FORWARD(each_member(v, end, &after_top, top_member, &t, err));
    FLOE_RETURN_IF(ws(after_top, end) != end, err, FLOE_EINPUT, "bytes after the JSON object");
    if (t.members == 2 && t.schema.n && t.payload.n && t.payload.p[0] == '{') {
        json_t *schema = NULL;
        if (t.schema.p[0] == '{') {
            FLOE_FORWARD(schema_of(c, t.schema, &schema, err));
            out->before_fields = fields_of(schema, "before");
            out->after_fields = fields_of(schema, "after");
        }
        top env = {0};
        FLOE_FORWARD(each_member(t.payload.p, t.payload.p + t.payload.n, &after_top, top_member,
                                 &env, err));
        t = env;
    }
    floe__json_str op = {0};
    const char *op_end;
    if (t.op.n && t.op.p[0] == '"')
        FLOE_FORWARD(floe__json_scan_string(t.op.p, t.op.p + t.op.n, &op_end, &op, err));
    FLOE_RETURN_IF(op.len != 1 || op.escaped || !strchr("crudtm", op.raw[0]), err, FLOE_EINPUT,
                   "not a Debezium change event (an object with \"op\" one of c, r, u, d, t, "
                   "m%s)", t.op.n ? "" : "; it has no op");
    out->op = op.raw[0];
    span b = object_or_none(t.before), a = object_or_none(t.after);
    out->before = b.p;
    out->before_len = b.n;
    out->after = a.p;
    out->after_len = a.n;
    FLOE_RETURN_IF((out->op == 'c' || out->op == 'r' || out->op == 'u') && !out->after, err,
                   FLOE_EINPUT, "a Debezium '%c' event without \"after\"", out->op);
    span tx = object_or_none(t.transaction);
    if (tx.p) {
        floe__json_str id = {0};
        FLOE_FORWARD(each_member(tx.p, tx.p + tx.n, &after_top, transaction_member, &id, err));
        out->txn = id.raw;
        out->txn_len = id.raw ? id.len : 0;
    }
    return FLOE_OK;
}

/* ---- values ---------------------------------------------------------------------------------- */

static const json_t *field_schema(const json_t *fields, const char *name)
{
    size_t i;
    const json_t *f;
    json_array_foreach(fields, i, f) {
        const char *n = json_string_value(json_object_get(f, "field"));
        if (n && strcmp(n, name) == 0)
            return f;
    }
    return NULL;
}

static const char *logical(const json_t *fs)
{
    const char *n = json_string_value(json_object_get(fs, "name"));
    return n ? n : "";
}

static int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

static json_t *text(const char *s) { return json_string(s); }

/* Microseconds since midnight or since the epoch, from a Debezium integer
 * of the unit its logical type names (no schema: micro). */
static int64_t to_micros(const char *lt, int64_t v)
{
    if (strcmp(lt, "io.debezium.time.Time") == 0 || strcmp(lt, "io.debezium.time.Timestamp") == 0 ||
        strcmp(lt, "org.apache.kafka.connect.data.Time") == 0 ||
        strcmp(lt, "org.apache.kafka.connect.data.Timestamp") == 0)
        return v * 1000;
    if (strcmp(lt, "io.debezium.time.NanoTime") == 0 ||
        strcmp(lt, "io.debezium.time.NanoTimestamp") == 0)
        return floor_div(v, NS_PER_US);
    return v;
}

static json_t *timestamp_text(int64_t us, bool zone)
{
    char buf[64];
    floe__format_timestamp(us, zone, buf);
    return text(buf);
}

/* A decimal from base64 of its unscaled big-endian two's complement. */
static int decimal_text(const char *b64, int scale, floe__buf *scratch, json_t **out,
                        floe_error *err)
{
    floe__buf_reset(scratch);
    FLOE_FORWARD(floe__base64_decode(b64, strlen(b64), scratch, err));
    FLOE_RETURN_IF(scratch->len == 0 || scratch->len > 16, err, FLOE_EINPUT,
                   "a decimal of %zu bytes (1 to 16 are read)", scratch->len);
    __int128 v = (scratch->data[0] & 0x80) ? -1 : 0;
    for (size_t i = 0; i < scratch->len; i++)
        v = (__int128)(((unsigned __int128)v << 8) | scratch->data[i]);
    char buf[48];
    floe__format_decimal(v, scale, buf);
    *out = text(buf);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

static int scale_param(const json_t *fs, int dflt)
{
    const char *s = json_string_value(json_object_get(json_object_get(fs, "parameters"), "scale"));
    return s ? atoi(s) : dflt;
}

/* Value v of Debezium field schema fs (NULL: none) for column f, as floe's
 * JSON row form takes it: a new reference in *out. */
static int convert(const floe__field *f, const json_t *fs, json_t *v, floe__buf *scratch,
                   json_t **out, floe_error *err)
{
    const char *lt = logical(fs);
    *out = NULL;
    if (json_is_null(v)) {
        *out = json_null();
        return FLOE_OK;
    }
    if (json_is_integer(v)) {
        int64_t i = json_integer_value(v);
        switch (f->kind) {
        case FLOE_K_DATE: {
            char buf[32];
            floe__format_date(i, buf);
            *out = text(buf);
            return *out ? FLOE_OK : FLOE_OOM(err);
        }
        case FLOE_K_TIME: {
            char buf[32];
            int64_t us = to_micros(lt, i);
            FLOE_RETURN_IF(us < 0 || us >= US_PER_DAY, err, FLOE_EINPUT, "a time of day out of "
                           "range (%" PRId64 ")", i);
            floe__format_time(us, buf);
            *out = text(buf);
            return *out ? FLOE_OK : FLOE_OOM(err);
        }
        case FLOE_K_TIMESTAMP:
        case FLOE_K_TIMESTAMPTZ:
            *out = timestamp_text(to_micros(lt, i), f->kind == FLOE_K_TIMESTAMPTZ);
            return *out ? FLOE_OK : FLOE_OOM(err);
        default:
            break;
        }
    }
    if (f->kind == FLOE_K_DECIMAL && json_is_string(v) &&
        (!fs || strcmp(lt, "org.apache.kafka.connect.data.Decimal") == 0)) {
        const char *s = json_string_value(v);
        if (fs || strspn(s, "0123456789+-.eE") != strlen(s))   /* no schema: base64 unless a number */
            return decimal_text(s, scale_param(fs, f->scale), scratch, out, err);
    }
    if (f->kind == FLOE_K_DECIMAL && json_is_object(v) && json_object_get(v, "value")) {
        json_t *sc = json_object_get(v, "scale");              /* VariableScaleDecimal */
        const char *b = json_string_value(json_object_get(v, "value"));
        FLOE_RETURN_IF(!json_is_integer(sc) || !b, err, FLOE_EINPUT, "a variable-scale decimal "
                       "without an integer scale and a base64 value");
        return decimal_text(b, (int)json_integer_value(sc), scratch, out, err);
    }
    if (f->decl == FLOE_D_JSONB && json_is_string(v) &&
        (!fs || strcmp(lt, "io.debezium.data.Json") == 0)) {
        json_error_t je;
        *out = json_loads(json_string_value(v), JSON_DECODE_ANY, &je);
        FLOE_RETURN_IF(!*out, err, FLOE_EINPUT, "a Json value that is not JSON: %s", je.text);
        return FLOE_OK;
    }
    *out = json_incref(v);
    return FLOE_OK;
}

/* Whether value v (its first byte) of column f must be rewritten: a
 * Debezium encoding floe's JSON rows do not read as it is. */
static bool needs_rewrite(const floe__field *f, const json_t *fs, const char *v, const char *vend)
{
    char c = *v;
    switch (f->kind) {
    case FLOE_K_DATE:
    case FLOE_K_TIME:
    case FLOE_K_TIMESTAMP:
    case FLOE_K_TIMESTAMPTZ:
        return c == '-' || (c >= '0' && c <= '9');
    case FLOE_K_DECIMAL:
        if (c == '{')
            return true;
        if (c != '"')
            return false;
        if (fs)
            return strcmp(logical(fs), "org.apache.kafka.connect.data.Decimal") == 0;
        for (const char *p = v + 1; p < vend - 1; p++)      /* base64 unless a number */
            if (!strchr("0123456789+-.eE", *p))
                return true;
        return false;
    default:
        return f->decl == FLOE_D_JSONB && c == '"' &&
               (!fs || strcmp(logical(fs), "io.debezium.data.Json") == 0);
    }
}

typedef struct rewrite {
    const floe_schema *s;
    const json_t *fields;
    floe__buf *scratch, *out;
    size_t n;
} rewrite;

static int rewrite_member(void *ctx, const floe__json_str *key, const char *v, const char *vend,
                          floe_error *err)
{
    rewrite *r = ctx;
    const floe__field *f = NULL;
    for (uint32_t i = 0; i < r->s->root.n_children && !f; i++)
        if (floe__json_str_eq(key, r->s->root.children[i].name))
            f = &r->s->root.children[i];
    FLOE_RETURN_IF(!f, err, FLOE_EINPUT, "column \"%.*s\" is not one of the table's (a column "
                   "added at the source: with the event's schema embedded, floe adds it; "
                   "without, declare it in --schema)", (int)key->len, key->raw);
    floe__buf *o = r->out;
    bool first = r->n++ == 0;
    FLOE_FORWARD(floe__buf_append(o, first ? "\"" : ",\"", first ? 1 : 2, err));
    FLOE_FORWARD(floe__buf_append(o, key->raw, key->len, err));
    FLOE_FORWARD(floe__buf_append(o, "\":", 2, err));
    const json_t *fs = NULL;
    bool candidate = f->kind == FLOE_K_DATE || f->kind == FLOE_K_TIME ||
                     f->kind == FLOE_K_TIMESTAMP || f->kind == FLOE_K_TIMESTAMPTZ ||
                     f->kind == FLOE_K_DECIMAL || f->decl == FLOE_D_JSONB;
    if (candidate && r->fields)
        fs = field_schema(r->fields, f->name);
    if (!candidate || !needs_rewrite(f, fs, v, vend))
        return floe__buf_append(o, v, (size_t)(vend - v), err);
    json_error_t je;
    json_t *jv = json_loadb(v, (size_t)(vend - v), JSON_DECODE_ANY, &je);
    FLOE_RETURN_IF(!jv, err, FLOE_EINPUT, "column \"%s\": %s", f->name, je.text);
    json_t *c = NULL;
    int rc = convert(f, fs, jv, r->scratch, &c, err);
    json_decref(jv);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "column \"%s\"", f->name);
    size_t len = json_dumpb(c, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
    rc = floe__buf_reserve(o, len + 1, err);
    if (rc == FLOE_OK)
        o->len += json_dumpb(c, (char *)o->data + o->len, len, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(c);
    return rc;
}

int floe__dbz_row(const floe_schema *s, const char *row, size_t n, const json_t *fields,
                  floe__buf *scratch, floe__buf *out, floe_error *err)
{
    floe__buf_reset(out);
    FLOE_FORWARD(floe__buf_append(out, "{", 1, err));
    rewrite r = {s, fields, scratch, out, 0};
    const char *end;
    FLOE_FORWARD(each_member(row, row + n, &end, rewrite_member, &r, err));
    return floe__buf_append(out, "}", 1, err);
}

int floe__dbz_key(const floe_schema *s, floe__dbz_cache *c, const char *k, size_t n,
                  floe__buf *scratch, floe__buf *out, floe_error *err)
{
    const char *end = k + n, *after;
    top t = {0};
    int rc = each_member(k, end, &after, top_member, &t, err);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "the key is not an object of the key columns");
    if (t.members == 2 && t.schema.n && t.payload.n && t.payload.p[0] == '{') {
        json_t *schema = NULL;
        if (t.schema.p[0] == '{')
            FLOE_FORWARD(schema_of(c, t.schema, &schema, err));
        return floe__dbz_row(s, t.payload.p, t.payload.n, json_object_get(schema, "fields"),
                             scratch, out, err);
    }
    return floe__dbz_row(s, k, n, NULL, scratch, out, err);
}

int floe__dbz_key_columns(floe__dbz_cache *c, const char *k, size_t n, floe__buf *out,
                          floe_error *err)
{
    const char *end = k + n, *after;
    top t = {0};
    json_t *schema = NULL;
    int rc = each_member(k, end, &after, top_member, &t, err);
    if (rc == FLOE_OK && t.members == 2 && t.schema.n && t.schema.p[0] == '{')
        rc = schema_of(c, t.schema, &schema, err);
    const json_t *fields = json_object_get(schema, "fields");
    if (rc != FLOE_OK || !json_array_size(fields)) {
        floe_error_clear(err);
        return floe__err_set(err, FLOE_EINPUT, "the message key carries no schema naming the "
                             "key columns");
    }
    floe__buf_reset(out);
    size_t i;
    const json_t *f;
    json_array_foreach(fields, i, f) {
        const char *name = json_string_value(json_object_get(f, "field"));
        FLOE_RETURN_IF(!name, err, FLOE_EINPUT, "the key schema has a field without a name");
        FLOE_RETURN_IF(strchr(name, ','), err, FLOE_EUNSUPPORTED, "key column \"%s\" has a "
                       "comma in its name", name);
        if (i)
            FLOE_FORWARD(floe__buf_append(out, ",", 1, err));
        FLOE_FORWARD(floe__buf_append(out, name, strlen(name), err));
    }
    return floe__buf_append(out, "", 1, err);
}

/* ---- the columns a Debezium row schema declares ------------------------------------------ */

static const char *column_type(const json_t *fs, char *buf, size_t cap)
{
    const char *t = json_string_value(json_object_get(fs, "type"));
    const char *lt = logical(fs);
    if (!t)
        return NULL;
    if (strcmp(lt, "io.debezium.time.Date") == 0 || strcmp(lt, "org.apache.kafka.connect.data.Date") == 0)
        return "date";
    if (strstr(lt, "io.debezium.time.") == lt && strstr(lt, "Time") && !strstr(lt, "Timestamp") &&
        strcmp(lt, "io.debezium.time.ZonedTime") != 0)
        return "time";
    if (strstr(lt, "Timestamp") && strcmp(lt, "io.debezium.time.ZonedTimestamp") != 0)
        return "timestamp";
    if (strcmp(lt, "io.debezium.time.ZonedTimestamp") == 0)
        return "timestamptz";
    if (strcmp(lt, "org.apache.kafka.connect.data.Decimal") == 0) {
        const json_t *p = json_object_get(fs, "parameters");
        const char *prec = json_string_value(json_object_get(p, "connect.decimal.precision"));
        snprintf(buf, cap, "numeric(%s, %d)", prec ? prec : "38", scale_param(fs, 0));
        return buf;
    }
    /* the other logical types, then Kafka Connect's plain types */
    static const char *const names[][2] = {
        {"io.debezium.data.VariableScaleDecimal", "numeric(38, 10)"},
        {"io.debezium.data.Json", "jsonb"}, {"io.debezium.data.Uuid", "uuid"},
        {"int8", "smallint"}, {"int16", "smallint"}, {"int32", "integer"}, {"int64", "bigint"},
        {"float", "real"}, {"float32", "real"}, {"double", "double precision"},
        {"float64", "double precision"}, {"boolean", "boolean"}, {"string", "text"},
        {"bytes", "bytea"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(i < 3 ? lt : t, names[i][0]) == 0)
            return names[i][1];
    return NULL;
}

int floe__dbz_columns(const json_t *fields, floe__buf *out, floe_error *err)
{
    floe__buf_reset(out);
    size_t i;
    const json_t *fs;
    char buf[64];
    json_array_foreach(fields, i, fs) {
        const char *name = json_string_value(json_object_get(fs, "field"));
        const char *type = column_type(fs, buf, sizeof buf);
        const char *t = json_string_value(json_object_get(fs, "type"));
        FLOE_RETURN_IF(!name || !type, err, FLOE_EUNSUPPORTED, "Debezium field %s of type %s "
                       "has no column type floe maps to (declare the columns with --schema)",
                       name ? name : "(unnamed)", t ? t : "(none)");
        if (out->len)
            FLOE_FORWARD(floe__buf_append(out, ", ", 2, err));
        FLOE_FORWARD(floe__buf_append(out, "\"", 1, err));
        for (const char *c = name; *c; c++)          /* a quote inside is doubled */
            FLOE_FORWARD(floe__buf_append(out, *c == '"' ? "\"\"" : c, *c == '"' ? 2 : 1, err));
        FLOE_FORWARD(floe__buf_append(out, "\" ", 2, err));
        FLOE_FORWARD(floe__buf_append(out, type, strlen(type), err));
        if (json_is_false(json_object_get(fs, "optional")))
            FLOE_FORWARD(floe__buf_append(out, " not null", 9, err));
    }
    return floe__buf_append(out, "", 1, err);
}

bool floe__dbz_new_columns(const json_t *fields, const floe_schema *s)
{
    size_t i;
    const json_t *fs;
    json_array_foreach(fields, i, fs) {
        const char *name = json_string_value(json_object_get(fs, "field"));
        bool known = false;
        for (uint32_t c = 0; name && c < s->root.n_children && !known; c++)
            known = strcmp(s->root.children[c].name, name) == 0;
        if (name && !known)
            return true;
    }
    return false;
}
