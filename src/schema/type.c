/*
 * type.c - operations on the type tree (schema_internal.h): freeing, deep
 * copies, Iceberg field-id assignment and lookup, type names for messages,
 * and the Iceberg JSON form of a schema in both directions (the Iceberg
 * spec's "Appendix C: JSON serialization").
 *
 * It does not parse column lists (parse.c) nor touch rows (datum.c).
 *
 * Every walk here recurses along the tree.  Trees are at most
 * FLOE__SCHEMA_MAX_DEPTH deep: both builders (parse.c and the JSON reader
 * below) refuse deeper input, so recursion is bounded.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "schema/schema_internal.h"

/* ---- freeing and copying ------------------------------------------------ */

void floe__field_clear(floe__field *f)
{
    if (!f)
        return;
    for (uint32_t i = 0; i < f->n_children; i++)
        floe__field_clear(&f->children[i]);
    floe__free(f->children);
    floe__free(f->name);
    floe__free(f->initial_default);
    floe__free(f->write_default);
    floe__free(f->doc);
    floe__free(f->was);
    memset(f, 0, sizeof *f);
}

/* The field's own strings and defaults copied into dst (whose pointers
 * were cleared). */
static int copy_extras(floe__field *dst, const floe__field *src, floe_error *err)
{
    if ((src->doc && !(dst->doc = floe__strdup(src->doc))) ||
        (src->was && !(dst->was = floe__strdup(src->was))))
        return FLOE_OOM(err);
    return floe__field_set_defaults(dst, src->initial_default, src->initial_default_len,
                                    src->write_default, src->write_default_len, err);
}

int floe__field_copy(floe__field *dst, const floe__field *src, floe_error *err)
{
    *dst = *src;
    dst->name = NULL;
    dst->children = NULL;
    dst->n_children = 0;
    dst->initial_default = dst->write_default = NULL;
    dst->doc = dst->was = NULL;
    dst->name = floe__strdup(src->name ? src->name : "");
    int rc = dst->name ? copy_extras(dst, src, err) : FLOE_OOM(err);
    if (rc != FLOE_OK) {
        floe__field_clear(dst);
        return rc;
    }
    if (src->n_children == 0)
        return FLOE_OK;
    dst->children = floe__calloc(src->n_children, sizeof(floe__field));
    if (!dst->children) {
        floe__field_clear(dst);
        return FLOE_OOM(err);
    }
    for (uint32_t i = 0; i < src->n_children; i++) {
        dst->n_children = i + 1;     /* so clear() frees what is copied so far */
        rc = floe__field_copy(&dst->children[i], &src->children[i], err);
        if (rc != FLOE_OK) {
            floe__field_clear(dst);
            return rc;
        }
    }
    return FLOE_OK;
}

int floe__schema_new(floe__schema **out, floe_error *err)
{
    floe__schema *s = floe__calloc(1, sizeof *s);
    if (!s)
        return FLOE_OOM(err);
    s->root.name = floe__strdup("");
    if (!s->root.name) {
        floe__free(s);
        return FLOE_OOM(err);
    }
    s->root.kind = FLOE_K_STRUCT;
    s->root.decl = FLOE_D_RECORD;
    s->root.required = true;
    *out = s;
    return FLOE_OK;
}

void floe_schema_free(floe_schema *schema)
{
    if (!schema)
        return;
    floe__field_clear(&schema->root);
    floe__free(schema->identifier_ids);
    floe__free(schema);
}

int floe__schema_set_identifiers(floe__schema *s, const int32_t *ids, size_t n, floe_error *err)
{
    int32_t *copy = NULL;
    if (n) {
        FLOE_RETURN_IF(n > UINT32_MAX / 8, err, FLOE_ELIMIT, "too many identifier fields");
        copy = floe__malloc(n * sizeof *copy);
        if (!copy)
            return FLOE_OOM(err);
        memcpy(copy, ids, n * sizeof *copy);
    }
    floe__free(s->identifier_ids);
    s->identifier_ids = copy;
    s->n_identifier_ids = (uint32_t)n;
    return FLOE_OK;
}

int floe__schema_copy(const floe__schema *s, floe__schema **out, floe_error *err)
{
    floe__schema *c = floe__calloc(1, sizeof *c);
    if (!c)
        return FLOE_OOM(err);
    int rc = floe__field_copy(&c->root, &s->root, err);
    if (rc != FLOE_OK) {
        floe__free(c);
        return rc;
    }
    c->schema_id = s->schema_id;
    c->highest_id = s->highest_id;
    rc = floe__schema_set_identifiers(c, s->identifier_ids, s->n_identifier_ids, err);
    if (rc != FLOE_OK) {
        floe_schema_free(c);
        return rc;
    }
    *out = c;
    return FLOE_OK;
}

size_t floe_schema_column_count(const floe_schema *schema)
{
    return schema ? schema->root.n_children : 0;
}

/* ---- field ids ---------------------------------------------------------- */

static void assign_ids(floe__field *f, int32_t *next)
{
    for (uint32_t i = 0; i < f->n_children; i++) {
        f->children[i].id = (*next)++;
        assign_ids(&f->children[i], next);
    }
}

void floe__schema_assign_ids(floe__schema *s)
{
    int32_t next = 1;
    s->root.id = 0;
    assign_ids(&s->root, &next);
    s->highest_id = next - 1;
}

static const floe__field *find_id(const floe__field *f, int32_t id)
{
    for (uint32_t i = 0; i < f->n_children; i++) {
        const floe__field *c = &f->children[i];
        if (c->id == id)
            return c;
        const floe__field *hit = find_id(c, id);
        if (hit)
            return hit;
    }
    return NULL;
}

const floe__field *floe__schema_find_id(const floe__schema *s, int32_t id)
{
    return id > 0 ? find_id(&s->root, id) : NULL;
}

static int32_t max_id(const floe__field *f)
{
    int32_t m = f->id;
    for (uint32_t i = 0; i < f->n_children; i++) {
        int32_t c = max_id(&f->children[i]);
        if (c > m)
            m = c;
    }
    return m;
}

/* ---- type names ---------------------------------------------------------- */

/* A truncating writer: keeps what fits in buf (always NUL-terminated when
 * cap > 0) and counts what would have been written. */
typedef struct tw {
    char *buf;
    size_t cap, len;
} tw;

static void tw_puts(tw *w, const char *s)
{
    for (; *s; s++, w->len++)
        if (w->len + 1 < w->cap)
            w->buf[w->len] = *s;
}

static void tw_printf(tw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tw_printf(tw *w, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    tw_puts(w, tmp);
}

const char *floe__kind_name(floe__kind k)
{
    switch (k) {
    case FLOE_K_BOOLEAN: return "boolean";
    case FLOE_K_INT: return "int";
    case FLOE_K_LONG: return "long";
    case FLOE_K_FLOAT: return "float";
    case FLOE_K_DOUBLE: return "double";
    case FLOE_K_DECIMAL: return "decimal";
    case FLOE_K_DATE: return "date";
    case FLOE_K_TIME: return "time";
    case FLOE_K_TIMESTAMP: return "timestamp";
    case FLOE_K_TIMESTAMPTZ: return "timestamptz";
    case FLOE_K_STRING: return "string";
    case FLOE_K_UUID: return "uuid";
    case FLOE_K_FIXED: return "fixed";
    case FLOE_K_BINARY: return "binary";
    case FLOE_K_STRUCT: return "struct";
    case FLOE_K_LIST: return "list";
    case FLOE_K_MAP: return "map";
    }
    return "unknown";
}

static void iceberg_name(tw *w, const floe__field *f)
{
    switch (f->kind) {
    case FLOE_K_DECIMAL:
        tw_printf(w, "decimal(%d,%d)", (int)f->precision, (int)f->scale);
        return;
    case FLOE_K_FIXED:
        tw_printf(w, "fixed[%d]", (int)f->length);
        return;
    case FLOE_K_LIST:
        tw_puts(w, "list<");
        iceberg_name(w, &f->children[0]);
        tw_puts(w, ">");
        return;
    case FLOE_K_MAP:
        tw_puts(w, "map<");
        iceberg_name(w, &f->children[0]);
        tw_puts(w, ", ");
        iceberg_name(w, &f->children[1]);
        tw_puts(w, ">");
        return;
    case FLOE_K_STRUCT:
        tw_puts(w, "struct<");
        for (uint32_t i = 0; i < f->n_children; i++) {
            tw_puts(w, i ? ", " : "");
            tw_puts(w, f->children[i].name);
            tw_puts(w, ": ");
            iceberg_name(w, &f->children[i]);
        }
        tw_puts(w, ">");
        return;
    default:
        tw_puts(w, floe__kind_name(f->kind));
    }
}

static const char *decl_scalar(floe__decl d)
{
    switch (d) {
    case FLOE_D_BOOLEAN: return "boolean";
    case FLOE_D_SMALLINT: return "smallint";
    case FLOE_D_INTEGER: return "integer";
    case FLOE_D_BIGINT: return "bigint";
    case FLOE_D_UINT2: return "uint2";
    case FLOE_D_UINT4: return "uint4";
    case FLOE_D_UINT8: return "uint8";
    case FLOE_D_REAL: return "real";
    case FLOE_D_DOUBLE: return "double precision";
    case FLOE_D_TEXT: return "text";
    case FLOE_D_JSONB: return "jsonb";
    case FLOE_D_INTERVAL: return "interval";
    case FLOE_D_UUID: return "uuid";
    case FLOE_D_BYTEA: return "bytea";
    case FLOE_D_DATE: return "date";
    case FLOE_D_TIME: return "time";
    case FLOE_D_TIMESTAMP: return "timestamp";
    case FLOE_D_TIMESTAMPTZ: return "timestamptz";
    default: return NULL;
    }
}

static void decl_name(tw *w, const floe__field *f)
{
    const char *s = decl_scalar(f->decl);
    if (s) {
        tw_puts(w, s);
        return;
    }
    switch (f->decl) {
    case FLOE_D_NUMERIC:
        tw_printf(w, "numeric(%d,%d)", (int)f->precision, (int)f->scale);
        return;
    case FLOE_D_LIST:
        decl_name(w, &f->children[0]);
        tw_puts(w, "[]");
        return;
    case FLOE_D_MAP:
        tw_puts(w, "map[");
        decl_name(w, &f->children[0]);
        tw_puts(w, "=>");
        decl_name(w, &f->children[1]);
        tw_puts(w, "]");
        return;
    case FLOE_D_RANGE:
        tw_puts(w, "range<");
        decl_name(w, &f->children[0]);
        tw_puts(w, ">");
        return;
    case FLOE_D_RECORD:
        tw_puts(w, "record(");
        for (uint32_t i = 0; i < f->n_children; i++) {
            tw_puts(w, i ? ", " : "");
            tw_puts(w, f->children[i].name);
            tw_puts(w, " ");
            decl_name(w, &f->children[i]);
            tw_puts(w, f->children[i].required ? " not null" : "");
        }
        tw_puts(w, ")");
        return;
    default:           /* FLOE_D_NONE: not declared, name the Iceberg type */
        iceberg_name(w, f);
    }
}

size_t floe__type_name(const floe__field *f, bool declared, char *buf, size_t cap)
{
    tw w = {buf, cap, 0};
    if (declared)
        decl_name(&w, f);
    else
        iceberg_name(&w, f);
    if (cap) {
        size_t end = w.len < cap ? w.len : cap - 1;
        buf[end] = '\0';
        if (w.len >= cap && cap > 4)
            memcpy(buf + cap - 4, "...", 4);
    }
    return w.len;
}

/* ---- Iceberg JSON: writing ----------------------------------------------- */

static json_t *type_to_json(const floe__field *f);

/* jansson's *_set_new/_append_new take the value's reference even when they
 * fail (and accept NULL), so a chain of them needs no cleanup of its own. */
static json_t *fields_to_json(const floe__field *f)
{
    json_t *arr = json_array();
    for (uint32_t i = 0; arr && i < f->n_children; i++) {
        const floe__field *c = &f->children[i];
        json_t *o = json_object();
        if (json_array_append_new(arr, o) ||
            json_object_set_new(o, "id", json_integer(c->id)) ||
            json_object_set_new(o, "name", json_string(c->name)) ||
            json_object_set_new(o, "required", json_boolean(c->required)) ||
            json_object_set_new(o, "type", type_to_json(c)) ||
            (c->doc && json_object_set_new(o, "doc", json_string(c->doc))) ||
            (c->initial_default &&
             json_object_set_new(o, "initial-default",
                                 floe__default_to_json(c, c->initial_default,
                                                       c->initial_default_len))) ||
            (c->write_default &&
             json_object_set_new(o, "write-default",
                                 floe__default_to_json(c, c->write_default,
                                                       c->write_default_len)))) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static json_t *type_to_json(const floe__field *f)
{
    json_t *o = NULL;
    int bad = 0;
    switch (f->kind) {
    case FLOE_K_STRUCT:
        o = json_object();
        bad = !o || json_object_set_new(o, "type", json_string("struct")) ||
              json_object_set_new(o, "fields", fields_to_json(f));
        break;
    case FLOE_K_LIST: {
        const floe__field *e = &f->children[0];
        o = json_object();
        bad = !o || json_object_set_new(o, "type", json_string("list")) ||
              json_object_set_new(o, "element-id", json_integer(e->id)) ||
              json_object_set_new(o, "element", type_to_json(e)) ||
              json_object_set_new(o, "element-required", json_boolean(e->required));
        break;
    }
    case FLOE_K_MAP: {
        const floe__field *k = &f->children[0], *v = &f->children[1];
        o = json_object();
        bad = !o || json_object_set_new(o, "type", json_string("map")) ||
              json_object_set_new(o, "key-id", json_integer(k->id)) ||
              json_object_set_new(o, "key", type_to_json(k)) ||
              json_object_set_new(o, "value-id", json_integer(v->id)) ||
              json_object_set_new(o, "value", type_to_json(v)) ||
              json_object_set_new(o, "value-required", json_boolean(v->required));
        break;
    }
    default: {
        char name[64];
        floe__type_name(f, false, name, sizeof name);
        return json_string(name);
    }
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int floe__schema_to_jansson(const floe__schema *s, struct json_t **out, floe_error *err)
{
    json_t *o = json_object();
    if (!o || json_object_set_new(o, "type", json_string("struct")) ||
        json_object_set_new(o, "schema-id", json_integer(s->schema_id)) ||
        json_object_set_new(o, "fields", fields_to_json(&s->root))) {
        json_decref(o);
        return FLOE_OOM(err);
    }
    if (s->n_identifier_ids) {
        json_t *ids = json_array();
        for (uint32_t i = 0; ids && i < s->n_identifier_ids; i++)
            if (json_array_append_new(ids, json_integer(s->identifier_ids[i])) != 0) {
                json_decref(ids);
                ids = NULL;
            }
        if (json_object_set_new(o, "identifier-field-ids", ids) != 0) {
            json_decref(o);
            return FLOE_OOM(err);
        }
    }
    *out = o;
    return FLOE_OK;
}

int floe_schema_to_json(const floe_schema *schema, char **out, floe_error *err)
{
    FLOE_RETURN_IF(!schema || !out, err, FLOE_EINVAL, "floe_schema_to_json: NULL argument");
    json_t *o;
    FLOE_FORWARD(floe__schema_to_jansson(schema, &o, err));
    /* dump straight into memory from floe's allocator (caller frees) */
    size_t n = json_dumpb(o, NULL, 0, JSON_COMPACT);
    char *text = n ? floe__malloc(n + 1) : NULL;
    if (text && json_dumpb(o, text, n, JSON_COMPACT) == n) {
        text[n] = '\0';
        *out = text;
        json_decref(o);
        return FLOE_OK;
    }
    floe__free(text);
    json_decref(o);
    return FLOE_OOM(err);
}

/* ---- Iceberg JSON: reading ----------------------------------------------- */

typedef struct reader {
    floe_error *err;
    int32_t max_id;
} reader;

static int bad_json(reader *r, const char *what, const char *name)
{
    return floe__err_set(r->err, FLOE_EFORMAT, "Iceberg schema: %s%s%s%s", what,
                         name ? " (field \"" : "", name ? name : "", name ? "\")" : "");
}

/* "decimal(P, S)" and "fixed[L]" with optional blanks; returns 0 on success. */
static int parse_params(const char *s, const char *prefix, char open, char close,
                        long *a, long *b)
{
    size_t n = strlen(prefix);
    if (strncmp(s, prefix, n) != 0)
        return -1;
    s += n;
    while (*s == ' ')
        s++;
    if (*s++ != open)
        return -1;
    char *e;
    *a = strtol(s, &e, 10);
    if (e == s)
        return -1;
    s = e;
    while (*s == ' ')
        s++;
    if (b) {
        if (*s++ != ',')
            return -1;
        *b = strtol(s, &e, 10);
        if (e == s)
            return -1;
        s = e;
        while (*s == ' ')
            s++;
    }
    return (*s == close && s[1] == '\0') ? 0 : -1;
}

static int primitive_from_name(reader *r, floe__field *f, const char *t)
{
    static const struct {
        const char *name;
        floe__kind kind;
    } prims[] = {
        {"boolean", FLOE_K_BOOLEAN}, {"int", FLOE_K_INT},       {"long", FLOE_K_LONG},
        {"float", FLOE_K_FLOAT},     {"double", FLOE_K_DOUBLE}, {"date", FLOE_K_DATE},
        {"time", FLOE_K_TIME},       {"timestamp", FLOE_K_TIMESTAMP},
        {"timestamptz", FLOE_K_TIMESTAMPTZ},                      {"string", FLOE_K_STRING},
        {"uuid", FLOE_K_UUID},       {"binary", FLOE_K_BINARY},
    };
    for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++) {
        if (strcmp(t, prims[i].name) == 0) {
            f->kind = prims[i].kind;
            return FLOE_OK;
        }
    }
    long a, b;
    if (parse_params(t, "decimal", '(', ')', &a, &b) == 0) {
        if (a < 1 || a > 38 || b < 0 || b > a)
            return bad_json(r, "decimal precision must be 1..38 and scale 0..precision",
                            f->name);
        f->kind = FLOE_K_DECIMAL;
        f->precision = (int32_t)a;
        f->scale = (int32_t)b;
        return FLOE_OK;
    }
    if (parse_params(t, "fixed", '[', ']', &a, NULL) == 0) {
        if (a < 1 || a > (1L << 20))
            return bad_json(r, "fixed length must be 1..1048576", f->name);
        f->kind = FLOE_K_FIXED;
        f->length = (int32_t)a;
        return FLOE_OK;
    }
    return floe__err_set(r->err, FLOE_EUNSUPPORTED,
                         "Iceberg schema: field \"%s\" has unsupported type \"%s\"",
                         f->name ? f->name : "", t);
}

static int type_from_json(reader *r, floe__field *f, const json_t *t, int depth);

static int take_id(reader *r, const json_t *v, int32_t *id, const char *what, const char *name)
{
    if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
        json_integer_value(v) > INT32_MAX)
        return bad_json(r, what, name);
    *id = (int32_t)json_integer_value(v);
    if (*id > r->max_id)
        r->max_id = *id;
    return FLOE_OK;
}

/* A struct field's "doc", "initial-default" and "write-default". */
static int field_extras_from_json(reader *r, floe__field *c, const json_t *o)
{
    const json_t *doc = json_object_get(o, "doc");
    if (doc && !json_is_null(doc)) {
        if (!json_is_string(doc))
            return bad_json(r, "\"doc\" must be a string", c->name);
        if (!(c->doc = floe__strdup(json_string_value(doc))))
            return FLOE_OOM(r->err);
    }
    int rc = floe__default_from_json(c, json_object_get(o, "initial-default"), NULL, 0,
                                     &c->initial_default, &c->initial_default_len, r->err);
    if (rc == FLOE_OK)
        rc = floe__default_from_json(c, json_object_get(o, "write-default"), NULL, 0,
                                     &c->write_default, &c->write_default_len, r->err);
    if (rc == FLOE_ESCHEMA)
        return floe__err_recode(r->err, FLOE_EFORMAT, "Iceberg schema");
    return rc;
}

/* Fills f->children from an array of Iceberg fields. */
static int fields_from_json(reader *r, floe__field *f, const json_t *arr, int depth)
{
    if (!json_is_array(arr))
        return bad_json(r, "\"fields\" must be an array", f->name);
    size_t n = json_array_size(arr);
    if (n == 0)
        return FLOE_OK;
    if (n > UINT32_MAX / 2)
        return bad_json(r, "too many fields", f->name);
    f->children = floe__calloc(n, sizeof(floe__field));
    if (!f->children)
        return FLOE_OOM(r->err);
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(arr, i);
        floe__field *c = &f->children[i];
        f->n_children = (uint32_t)i + 1;
        const json_t *name = json_object_get(o, "name");
        if (!json_is_object(o) || !json_is_string(name))
            return bad_json(r, "a field needs a \"name\" string", f->name);
        c->name = floe__strdup(json_string_value(name));
        if (!c->name)
            return FLOE_OOM(r->err);
        for (size_t k = 0; k < i; k++)
            if (strcmp(f->children[k].name, c->name) == 0)
                return bad_json(r, "two fields of one struct have the same name", c->name);
        const json_t *req = json_object_get(o, "required");
        if (!json_is_boolean(req))
            return bad_json(r, "a field needs a boolean \"required\"", c->name);
        c->required = json_is_true(req);
        FLOE_FORWARD(take_id(r, json_object_get(o, "id"), &c->id, "a field needs a positive \"id\"",
                             c->name));
        FLOE_FORWARD(type_from_json(r, c, json_object_get(o, "type"), depth + 1));
        FLOE_FORWARD(field_extras_from_json(r, c, o));
    }
    return FLOE_OK;
}

/* A list's element or a map's key/value: a child field named `name`. */
static int part_from_json(reader *r, floe__field *c, const char *name, const json_t *id,
                          const json_t *type, bool required, int depth)
{
    c->name = floe__strdup(name);
    if (!c->name)
        return FLOE_OOM(r->err);
    c->required = required;
    char what[64];
    snprintf(what, sizeof what, "a positive \"%s-id\" is needed", name);
    FLOE_FORWARD(take_id(r, id, &c->id, what, name));
    return type_from_json(r, c, type, depth + 1);
}

static int type_from_json(reader *r, floe__field *f, const json_t *t, int depth)
{
    if (depth > FLOE__SCHEMA_MAX_DEPTH)
        return bad_json(r, "nested too deeply", f->name);
    f->decl = FLOE_D_NONE;
    if (json_is_string(t))
        return primitive_from_name(r, f, json_string_value(t));
    const char *kind = json_string_value(json_object_get(t, "type"));
    if (!json_is_object(t) || !kind)
        return bad_json(r, "a \"type\" must be a string or an object with a \"type\"", f->name);
    if (strcmp(kind, "struct") == 0) {
        f->kind = FLOE_K_STRUCT;
        return fields_from_json(r, f, json_object_get(t, "fields"), depth);
    }
    bool is_list = strcmp(kind, "list") == 0, is_map = strcmp(kind, "map") == 0;
    if (!is_list && !is_map)
        return bad_json(r, "unknown nested type", f->name);
    f->kind = is_list ? FLOE_K_LIST : FLOE_K_MAP;
    uint32_t n = is_list ? 1 : 2;
    f->children = floe__calloc(n, sizeof(floe__field));
    if (!f->children)
        return FLOE_OOM(r->err);
    f->n_children = n;
    const char *rq = is_list ? "element-required" : "value-required";
    const json_t *req = json_object_get(t, rq);
    if (!json_is_boolean(req))
        return bad_json(r, is_list ? "a list needs \"element-required\""
                                   : "a map needs \"value-required\"",
                        f->name);
    if (is_list)
        return part_from_json(r, &f->children[0], "element", json_object_get(t, "element-id"),
                              json_object_get(t, "element"), json_is_true(req), depth);
    FLOE_FORWARD(part_from_json(r, &f->children[0], "key", json_object_get(t, "key-id"),
                                json_object_get(t, "key"), true, depth));
    return part_from_json(r, &f->children[1], "value", json_object_get(t, "value-id"),
                          json_object_get(t, "value"), json_is_true(req), depth);
}

/* Every field id in the tree must be distinct. */
static int check_unique_ids(reader *r, const floe__field *root)
{
    size_t n = (size_t)r->max_id + 1;
    if (r->max_id <= 0)
        return FLOE_OK;
    if (r->max_id > (1 << 26))
        return bad_json(r, "field ids above 67108864 are not supported", NULL);
    uint8_t *seen = floe__calloc(n, 1);
    if (!seen)
        return FLOE_OOM(r->err);
    /* iterative walk with an explicit stack of (field, next child) */
    const floe__field *stack[FLOE__SCHEMA_MAX_DEPTH + 2];
    uint32_t next[FLOE__SCHEMA_MAX_DEPTH + 2];
    int sp = 0, rc = FLOE_OK;
    stack[0] = root;
    next[0] = 0;
    while (sp >= 0 && rc == FLOE_OK) {
        const floe__field *f = stack[sp];
        if (next[sp] == f->n_children) {
            sp--;
            continue;
        }
        const floe__field *c = &f->children[next[sp]++];
        if (seen[c->id]++)
            rc = floe__err_set(r->err, FLOE_EFORMAT, "Iceberg schema: field id %d is used twice",
                               (int)c->id);
        stack[++sp] = c;
        next[sp] = 0;
    }
    floe__free(seen);
    return rc;
}

static int identifiers_from_json(reader *r, floe__schema *s, const json_t *ids)
{
    if (!ids || json_is_null(ids))
        return FLOE_OK;
    if (!json_is_array(ids))
        return bad_json(r, "\"identifier-field-ids\" must be an array", NULL);
    size_t n = json_array_size(ids);
    int32_t *v = floe__calloc(n ? n : 1, sizeof *v);
    if (!v)
        return FLOE_OOM(r->err);
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < n; i++) {
        const json_t *x = json_array_get(ids, i);
        if (!json_is_integer(x) || !floe__schema_find_id(s, (int32_t)json_integer_value(x)))
            rc = bad_json(r, "an identifier field id is not a field of the schema", NULL);
        else
            v[i] = (int32_t)json_integer_value(x);
    }
    if (rc == FLOE_OK)
        rc = floe__schema_set_identifiers(s, v, n, r->err);
    floe__free(v);
    return rc;
}

int floe__schema_from_jansson(const struct json_t *j, floe__schema **out, floe_error *err)
{
    reader r = {err, 0};
    if (!json_is_object(j) || !json_is_string(json_object_get(j, "type")) ||
        strcmp(json_string_value(json_object_get(j, "type")), "struct") != 0)
        return bad_json(&r, "a schema must be an object with \"type\": \"struct\"", NULL);
    floe__schema *s;
    FLOE_FORWARD(floe__schema_new(&s, err));
    s->root.decl = FLOE_D_NONE;
    const json_t *sid = json_object_get(j, "schema-id");
    int rc = FLOE_OK;
    if (sid && (!json_is_integer(sid) || json_integer_value(sid) < 0 ||
                json_integer_value(sid) > INT32_MAX))
        rc = bad_json(&r, "\"schema-id\" must be a non-negative integer", NULL);
    if (rc == FLOE_OK) {
        s->schema_id = sid ? (int32_t)json_integer_value(sid) : 0;
        rc = fields_from_json(&r, &s->root, json_object_get(j, "fields"), 0);
    }
    if (rc == FLOE_OK)
        rc = check_unique_ids(&r, &s->root);
    if (rc == FLOE_OK)
        rc = identifiers_from_json(&r, s, json_object_get(j, "identifier-field-ids"));
    if (rc != FLOE_OK) {
        floe_schema_free(s);
        return rc;
    }
    s->highest_id = max_id(&s->root);
    *out = s;
    return FLOE_OK;
}

int floe__schema_from_json(const char *text, size_t len, floe__schema **out, floe_error *err)
{
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!j)
        return floe__err_set(err, FLOE_EFORMAT, "Iceberg schema: invalid JSON at %d:%d: %s",
                             je.line, je.column, je.text);
    int rc = floe__schema_from_jansson(j, out, err);
    json_decref(j);
    return rc;
}

/* ---- comparing -------------------------------------------------------------------------- */

static uint64_t shape_hash(const floe__field *f, uint64_t h)
{
    uint8_t b[16];
    floe__put_le32(b, (uint32_t)f->id);
    floe__put_le32(b + 4, (uint32_t)f->kind);
    floe__put_le32(b + 8, (uint32_t)f->length);
    floe__put_le32(b + 12, f->n_children);
    h = floe__hash64(b, sizeof b, h);
    for (uint32_t i = 0; i < f->n_children; i++)
        h = shape_hash(&f->children[i], h);
    return h;
}

uint64_t floe__schema_fingerprint(const floe__schema *s)
{
    return shape_hash(&s->root, 0x666c6f65u);
}

static bool field_equal(const floe__field *a, const floe__field *b)
{
    if (a->id != b->id || a->kind != b->kind || a->required != b->required ||
        strcmp(a->name, b->name) != 0 || a->n_children != b->n_children ||
        (a->kind == FLOE_K_DECIMAL && (a->precision != b->precision || a->scale != b->scale)) ||
        (a->kind == FLOE_K_FIXED && a->length != b->length) ||
        !floe__default_equal(a->initial_default, a->initial_default_len, b->initial_default,
                             b->initial_default_len) ||
        !floe__default_equal(a->write_default, a->write_default_len, b->write_default,
                             b->write_default_len))
        return false;
    for (uint32_t i = 0; i < a->n_children; i++)
        if (!field_equal(&a->children[i], &b->children[i]))
            return false;
    return true;
}

bool floe__schema_equal(const floe__schema *a, const floe__schema *b)
{
    if (!field_equal(&a->root, &b->root) || a->n_identifier_ids != b->n_identifier_ids)
        return false;
    for (uint32_t i = 0; i < a->n_identifier_ids; i++)
        if (a->identifier_ids[i] != b->identifier_ids[i])
            return false;
    return true;
}
