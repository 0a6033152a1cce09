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
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kafka/kafka_internal.h"

#define NS_PER_US 1000
#define US_PER_DAY INT64_C(86400000000)

void floe__dbz_clear(floe__dbz *m)
{
    json_decref(m->root);
    memset(m, 0, sizeof *m);
}

/* The payload of JsonConverter's {"schema": ..., "payload": ...}, else v. */
static json_t *payload_of(json_t *v, json_t **schema)
{
    json_t *p = json_object_get(v, "payload");
    json_t *s = json_object_get(v, "schema");
    if (p && s && json_object_size(v) == 2) {
        *schema = s;
        return p;
    }
    *schema = NULL;
    return v;
}

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

static json_t *row_or_null(json_t *v) { return json_is_object(v) ? v : NULL; }

int floe__dbz_parse(const char *v, size_t n, floe__dbz *out, floe_error *err)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *root = json_loadb(v, n, JSON_REJECT_DUPLICATES, &je);
    FLOE_RETURN_IF(!root, err, FLOE_EINPUT, "not JSON: %s (at byte %d)", je.text, je.position);
    out->root = root;
    json_t *schema = NULL;
    json_t *env = payload_of(root, &schema);
    const char *op = json_string_value(json_object_get(env, "op"));
    FLOE_RETURN_IF(!json_is_object(env) || !op || strlen(op) != 1 || !strchr("crudtm", op[0]),
                   err, FLOE_EINPUT, "not a Debezium change event (an object with \"op\" one "
                   "of c, r, u, d, t, m%s)", json_object_get(env, "op") ? "" : "; it has no op");
    out->op = op[0];
    out->before = row_or_null(json_object_get(env, "before"));
    out->after = row_or_null(json_object_get(env, "after"));
    if (schema) {
        out->before_fields = fields_of(schema, "before");
        out->after_fields = fields_of(schema, "after");
    }
    FLOE_RETURN_IF((out->op == 'c' || out->op == 'r' || out->op == 'u') && !out->after, err,
                   FLOE_EINPUT, "a Debezium '%c' event without \"after\"", out->op);
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
    int64_t days = floor_div(us, US_PER_DAY);
    size_t n = floe__format_date(days, buf);
    buf[n++] = 'T';
    n += floe__format_time(us - days * US_PER_DAY, buf + n);
    if (zone)
        buf[n++] = 'Z';
    buf[n] = 0;
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

int floe__dbz_row(const floe_schema *s, json_t *row, const json_t *fields, floe__buf *scratch,
                  floe__buf *out, floe_error *err)
{
    const floe__field *root = &s->root;
    const char *k;
    json_t *v;
    json_object_foreach(row, k, v) {
        bool known = false;
        for (uint32_t i = 0; i < root->n_children && !known; i++)
            known = strcmp(root->children[i].name, k) == 0;
        FLOE_RETURN_IF(!known, err, FLOE_EINPUT, "column \"%s\" is not one of the table's (a "
                       "column added at the source: with the event's schema embedded, floe "
                       "adds it; without, declare it in --schema)", k);
    }
    json_t *o = json_object();
    if (!o)
        return FLOE_OOM(err);
    int rc = FLOE_OK;
    for (uint32_t i = 0; rc == FLOE_OK && i < root->n_children; i++) {
        const floe__field *f = &root->children[i];
        json_t *val = json_object_get(row, f->name);
        if (!val)
            continue;
        json_t *c = NULL;
        rc = convert(f, field_schema(fields, f->name), val, scratch, &c, err);
        if (rc != FLOE_OK)
            rc = floe__err_wrap(err, rc, "column \"%s\"", f->name);
        else if (json_object_set_new(o, f->name, c) != 0)
            rc = FLOE_OOM(err);
    }
    if (rc == FLOE_OK) {
        size_t len = json_dumpb(o, NULL, 0, JSON_COMPACT);
        floe__buf_reset(out);
        rc = floe__buf_reserve(out, len + 1, err);
        if (rc == FLOE_OK)
            out->len = json_dumpb(o, (char *)out->data, len, JSON_COMPACT);
    }
    json_decref(o);
    return rc;
}

int floe__dbz_key(const floe_schema *s, const char *k, size_t n, floe__buf *scratch,
                  floe__buf *out, floe_error *err)
{
    json_error_t je;
    json_t *root = json_loadb(k, n, JSON_REJECT_DUPLICATES, &je);
    FLOE_RETURN_IF(!root, err, FLOE_EINPUT, "the key is not JSON: %s", je.text);
    json_t *schema = NULL;
    json_t *p = payload_of(root, &schema);
    int rc = json_is_object(p) ? floe__dbz_row(s, p, json_object_get(schema, "fields"), scratch,
                                               out, err)
                               : floe__err_set(err, FLOE_EINPUT, "the key is not an object of "
                                               "the key columns");
    json_decref(root);
    return rc;
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
    if (strcmp(lt, "io.debezium.data.VariableScaleDecimal") == 0)
        return "numeric(38, 10)";
    if (strcmp(lt, "io.debezium.data.Json") == 0)
        return "jsonb";
    if (strcmp(lt, "io.debezium.data.Uuid") == 0)
        return "uuid";
    if (strcmp(t, "int8") == 0 || strcmp(t, "int16") == 0)
        return "smallint";
    if (strcmp(t, "int32") == 0)
        return "integer";
    if (strcmp(t, "int64") == 0)
        return "bigint";
    if (strcmp(t, "float") == 0 || strcmp(t, "float32") == 0)
        return "real";
    if (strcmp(t, "double") == 0 || strcmp(t, "float64") == 0)
        return "double precision";
    if (strcmp(t, "boolean") == 0)
        return "boolean";
    if (strcmp(t, "string") == 0)
        return "text";
    if (strcmp(t, "bytes") == 0)
        return "bytea";
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
