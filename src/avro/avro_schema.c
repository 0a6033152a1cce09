/*
 * avro_schema.c - Avro schema JSON into a graph of nodes.
 *
 * Owns name resolution (fullnames from name + namespace, references to
 * previously defined names, recursive types), logical type annotations,
 * and the Iceberg id attributes (`field-id`, `element-id`, `key-id`,
 * `value-id`).  It does not touch encoded data.
 *
 * Ownership: nodes, fields and computed names live in one arena owned by
 * the schema; other strings point into the kept jansson tree.  Bare
 * primitive names ("long") share one static node each.  A named type is
 * registered before its body is parsed, so a record may refer to itself;
 * such graphs are cyclic and every walker limits its depth.
 */
#include <stdarg.h>
#include <stdio.h>

#include "avro/avro_internal.h"

#define MAX_NAMED 100000
#define MAX_BRANCHES 1000       /* union branches; the clash check is quadratic */

struct floe__avro_schema {
    floe__arena *arena;
    json_t *json;
    char *text;
    const floe__avro_node *root;
    size_t n_named, cap_named;
    floe__avro_node **named;            /* in definition order */
    json_t *names;                      /* fullname -> index into `named` */
};

/* Shared nodes for bare primitive names, indexed by floe__avro_type. */
#define PRIM(t, size) {.type = (t), .element_id = -1, .key_id = -1, .value_id = -1, .min_size = (size)}
static const floe__avro_node primitives[] = {
    PRIM(FLOE_AVRO_NULL, 0),  PRIM(FLOE_AVRO_BOOLEAN, 1), PRIM(FLOE_AVRO_INT, 1),
    PRIM(FLOE_AVRO_LONG, 1),  PRIM(FLOE_AVRO_FLOAT, 4),   PRIM(FLOE_AVRO_DOUBLE, 8),
    PRIM(FLOE_AVRO_BYTES, 1), PRIM(FLOE_AVRO_STRING, 1),
};
#undef PRIM

static const char *const type_names[] = {
    "null", "boolean", "int", "long", "float", "double", "bytes", "string",
    "record", "enum", "array", "map", "union", "fixed",
};

const char *floe__avro_type_name(floe__avro_type t)
{
    return (unsigned)t < sizeof type_names / sizeof *type_names ? type_names[t] : "?";
}

static int primitive_type(const char *s)
{
    for (int t = FLOE_AVRO_NULL; t <= FLOE_AVRO_STRING; t++)
        if (strcmp(s, type_names[t]) == 0)
            return t;
    return -1;
}

typedef struct parser {
    floe__avro_schema *s;
    floe_error *err;
    int rc;                             /* the first failure's code */
} parser;

/* Records a failure (code and message); returns NULL for the callers that
 * return nodes. */
__attribute__((format(printf, 3, 4)))
static void *ps_fail(parser *ps, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = floe__vsprintf(fmt, ap);
    va_end(ap);
    ps->rc = code;
    floe__err_set(ps->err, code, "%s", msg ? msg : "avro schema error");
    floe__free(msg);
    return NULL;
}
#define OOM(ps) ps_fail((ps), FLOE_ENOMEM, "out of memory")
#define FAIL(ps, ...) ps_fail((ps), FLOE_ESCHEMA, __VA_ARGS__)

static const floe__avro_node *parse_node(parser *ps, json_t *j, const char *ns, int depth);

static floe__avro_node *new_node(parser *ps, floe__avro_type t, json_t *j)
{
    floe__avro_node *n = floe__arena_alloc(ps->s->arena, sizeof *n);
    if (!n)
        return OOM(ps);
    memset(n, 0, sizeof *n);
    n->type = t;
    n->json = j;
    n->element_id = n->key_id = n->value_id = -1;
    return n;
}

/* ---- names ------------------------------------------------------------ */

static const floe__avro_node *find_named(const floe__avro_schema *s, const char *fullname)
{
    json_t *i = json_object_get(s->names, fullname);
    return i ? s->named[json_integer_value(i)] : NULL;
}

/* Whether `key` was already in `set`; adds it when not.  Keeps duplicate
 * checks linear for hostile schemas with huge records or enums. */
static bool seen(parser *ps, json_t *set, const char *key, bool *dup)
{
    *dup = json_object_get(set, key) != NULL;
    if (!*dup && json_object_set_new(set, key, json_true()) != 0)
        return FAIL(ps, "avro schema: name \"%.40s\" is not valid UTF-8", key);
    return true;
}

const floe__avro_node *floe__avro_schema_find(const floe__avro_schema *s, const char *fullname)
{
    return s && fullname ? find_named(s, fullname) : NULL;
}

/* "ns.name" in the arena, or `name` itself when ns is empty. */
static const char *qualify(parser *ps, const char *ns, const char *name)
{
    if (!ns || !*ns)
        return name;
    size_t a = strlen(ns), b = strlen(name);
    char *q = floe__arena_alloc(ps->s->arena, a + b + 2);
    if (!q)
        return OOM(ps);
    memcpy(q, ns, a);
    q[a] = '.';
    memcpy(q + a + 1, name, b + 1);
    return q;
}

/* Sets n->name to the fullname per the spec: a dotted name is already
 * full; otherwise the namespace attribute, else the enclosing namespace,
 * qualifies it.  *inner_ns receives the namespace that encloses the type's
 * own children (the fullname minus its last part).  false on failure. */
static bool define_name(parser *ps, floe__avro_node *n, json_t *j, const char *ns,
                        const char **inner_ns)
{
    const char *name = json_string_value(json_object_get(j, "name"));
    if (!name || !*name)
        return FAIL(ps, "avro schema: %s without a name", floe__avro_type_name(n->type));
    json_t *nsj = json_object_get(j, "namespace");
    if (nsj && !json_is_string(nsj) && !json_is_null(nsj))
        return FAIL(ps, "avro schema: %s: namespace is not a string", name);
    const char *full = name;
    if (!strchr(name, '.')) {
        const char *own = json_string_value(nsj);
        if (!(full = qualify(ps, own ? own : ns, name)))
            return false;
    }
    if (primitive_type(full) >= 0)
        return FAIL(ps, "avro schema: cannot redefine \"%s\"", full);
    if (find_named(ps->s, full))
        return FAIL(ps, "avro schema: \"%s\" defined twice", full);
    if (ps->s->n_named >= MAX_NAMED)
        return FAIL(ps, "avro schema: more than %d named types", MAX_NAMED);
    if (ps->s->n_named == ps->s->cap_named) {
        size_t cap = ps->s->cap_named ? ps->s->cap_named * 2 : 16;
        floe__avro_node **p = floe__realloc(ps->s->named, cap * sizeof *p);
        if (!p)
            return OOM(ps);
        ps->s->named = p;
        ps->s->cap_named = cap;
    }
    if (json_object_set_new(ps->s->names, full, json_integer((json_int_t)ps->s->n_named)) != 0)
        return FAIL(ps, "avro schema: name \"%.40s\" is not valid UTF-8", full);
    ps->s->named[ps->s->n_named++] = n;
    n->name = full;
    const char *dot = strrchr(full, '.');
    *inner_ns = dot ? floe__arena_strndup(ps->s->arena, full, (size_t)(dot - full)) : "";
    if (!*inner_ns)
        return OOM(ps);
    return true;
}

static const floe__avro_node *resolve_name(parser *ps, const char *name, const char *ns)
{
    int t = primitive_type(name);
    if (t >= 0)
        return &primitives[t];
    const floe__avro_node *n = NULL;
    if (!strchr(name, '.') && ns && *ns) {
        const char *full = qualify(ps, ns, name);
        if (!full)
            return NULL;
        n = find_named(ps->s, full);
    }
    if (!n)
        n = find_named(ps->s, name);   /* a fullname, or a name in the null namespace */
    if (!n)
        return FAIL(ps, "avro schema: unknown type \"%s\"", name);
    return n;
}

/* ---- attributes ------------------------------------------------------- */

/* An optional int32 attribute: -1 when absent; an error when present but
 * not an integer in range. */
static bool int_attr(parser *ps, json_t *j, const char *key, int32_t *out)
{
    *out = -1;
    json_t *v = json_object_get(j, key);
    if (!v)
        return true;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
        return FAIL(ps, "avro schema: \"%s\" must be a non-negative 32-bit integer", key);
    *out = (int32_t)json_integer_value(v);
    return true;
}

static floe__avro_logical logical_for(const floe__avro_node *n, const char *lt)
{
    static const struct {
        const char *name;
        floe__avro_type on;
        floe__avro_logical lt;
    } table[] = {
        {"date", FLOE_AVRO_INT, FLOE_AVRO_LT_DATE},
        {"time-millis", FLOE_AVRO_INT, FLOE_AVRO_LT_TIME_MILLIS},
        {"time-micros", FLOE_AVRO_LONG, FLOE_AVRO_LT_TIME_MICROS},
        {"timestamp-millis", FLOE_AVRO_LONG, FLOE_AVRO_LT_TIMESTAMP_MILLIS},
        {"timestamp-micros", FLOE_AVRO_LONG, FLOE_AVRO_LT_TIMESTAMP_MICROS},
        {"timestamp-nanos", FLOE_AVRO_LONG, FLOE_AVRO_LT_TIMESTAMP_NANOS},
        {"local-timestamp-millis", FLOE_AVRO_LONG, FLOE_AVRO_LT_LOCAL_TIMESTAMP_MILLIS},
        {"local-timestamp-micros", FLOE_AVRO_LONG, FLOE_AVRO_LT_LOCAL_TIMESTAMP_MICROS},
        {"local-timestamp-nanos", FLOE_AVRO_LONG, FLOE_AVRO_LT_LOCAL_TIMESTAMP_NANOS},
        {"uuid", FLOE_AVRO_STRING, FLOE_AVRO_LT_UUID},
    };
    if (strcmp(lt, "uuid") == 0 && n->type == FLOE_AVRO_FIXED && n->size == 16)
        return FLOE_AVRO_LT_UUID;
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (strcmp(lt, table[i].name) == 0)
            return n->type == table[i].on ? table[i].lt : FLOE_AVRO_LT_NONE;
    if (strcmp(lt, "duration") == 0 && n->type == FLOE_AVRO_FIXED && n->size == 12)
        return FLOE_AVRO_LT_DURATION;
    if (strcmp(lt, "map") == 0 && n->type == FLOE_AVRO_ARRAY &&
        n->items->type == FLOE_AVRO_RECORD && n->items->n == 2)
        return FLOE_AVRO_LT_MAP;
    return FLOE_AVRO_LT_NONE;
}

/* Decimal: precision > 0, 0 <= scale <= precision, and for fixed at most
 * the digits that size bytes of two's complement can hold; otherwise the
 * annotation is ignored, as the spec says. */
static void apply_decimal(floe__avro_node *n, json_t *j)
{
    json_t *p = json_object_get(j, "precision"), *s = json_object_get(j, "scale");
    if (!json_is_integer(p) || (s && !json_is_integer(s)))
        return;
    json_int_t prec = json_integer_value(p), scale = s ? json_integer_value(s) : 0;
    if (prec <= 0 || prec > 1000 || scale < 0 || scale > prec)
        return;
    if (n->type == FLOE_AVRO_FIXED) {
        /* digits held by 8*size-1 bits: floor(log10(2^(8*size-1) - 1)) */
        double bits = 8.0 * (double)n->size - 1.0;
        if (n->size == 0 || (double)prec > bits * 0.30102999566398120)
            return;
    } else if (n->type != FLOE_AVRO_BYTES) {
        return;
    }
    n->logical = FLOE_AVRO_LT_DECIMAL;
    n->precision = (int32_t)prec;
    n->scale = (int32_t)scale;
}

static void apply_logical(floe__avro_node *n, json_t *j)
{
    const char *lt = json_string_value(json_object_get(j, "logicalType"));
    if (!lt)
        return;
    n->logical_name = lt;
    if (strcmp(lt, "decimal") == 0)
        apply_decimal(n, j);
    else
        n->logical = logical_for(n, lt);
}

static size_t sat_add(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }

/* ---- complex types ------------------------------------------------------ */

static const floe__avro_node *parse_fields(parser *ps, floe__avro_node *n, json_t *fields,
                                           json_t *names, const char *inner, int depth)
{
    bool dup;
    for (size_t i = 0; i < n->n; i++) {
        json_t *f = json_array_get(fields, i);
        floe__avro_field *fd = &n->fields[i];
        fd->json = f;
        fd->name = json_string_value(json_object_get(f, "name"));
        if (!json_is_object(f) || !fd->name)
            return FAIL(ps, "avro schema: record %s: a field without a name", n->name);
        if (!seen(ps, names, fd->name, &dup))
            return NULL;
        if (dup)
            return FAIL(ps, "avro schema: duplicate field \"%s\"", fd->name);
        json_t *t = json_object_get(f, "type");
        if (!t)
            return FAIL(ps, "avro schema: field \"%s\" has no type", fd->name);
        if (!int_attr(ps, f, "field-id", &fd->field_id))
            return NULL;
        fd->type = parse_node(ps, t, inner, depth + 1);
        if (!fd->type) {
            floe__err_wrap(ps->err, ps->rc, "field \"%s\"", fd->name);
            return NULL;
        }
        n->min_size = sat_add(n->min_size, fd->type->min_size);
    }
    return n;
}

static const floe__avro_node *parse_record(parser *ps, floe__avro_node *n, json_t *j,
                                           const char *ns, int depth)
{
    const char *inner;
    if (!define_name(ps, n, j, ns, &inner))
        return NULL;
    json_t *fields = json_object_get(j, "fields");
    if (!json_is_array(fields))
        return FAIL(ps, "avro schema: record %s: \"fields\" must be an array", n->name);
    n->n = json_array_size(fields);
    n->fields = floe__arena_alloc(ps->s->arena, (n->n ? n->n : 1) * sizeof *n->fields);
    if (!n->fields)
        return OOM(ps);
    json_t *names = json_object();
    const floe__avro_node *done = names ? parse_fields(ps, n, fields, names, inner, depth)
                                        : OOM(ps);
    json_decref(names);
    return done;
}

static const floe__avro_node *parse_enum(parser *ps, floe__avro_node *n, json_t *j,
                                         const char *ns)
{
    const char *inner;
    if (!define_name(ps, n, j, ns, &inner))
        return NULL;
    json_t *syms = json_object_get(j, "symbols");
    if (!json_is_array(syms) || json_array_size(syms) == 0)
        return FAIL(ps, "avro schema: enum %s: \"symbols\" must be a non-empty array", n->name);
    n->n = json_array_size(syms);
    n->symbols = floe__arena_alloc(ps->s->arena, n->n * sizeof *n->symbols);
    if (!n->symbols)
        return OOM(ps);
    json_t *set = json_object();
    if (!set)
        return OOM(ps);
    bool dup = false;
    const floe__avro_node *done = n;
    for (size_t i = 0; i < n->n && done; i++) {
        n->symbols[i] = json_string_value(json_array_get(syms, i));
        if (!n->symbols[i])
            done = FAIL(ps, "avro schema: enum %s: a symbol is not a string", n->name);
        else if (!seen(ps, set, n->symbols[i], &dup))
            done = NULL;
        else if (dup)
            done = FAIL(ps, "avro schema: duplicate enum symbol \"%s\"", n->symbols[i]);
    }
    json_decref(set);
    n->min_size = 1;
    return done;
}

static const floe__avro_node *parse_fixed(parser *ps, floe__avro_node *n, json_t *j,
                                          const char *ns)
{
    const char *inner;
    if (!define_name(ps, n, j, ns, &inner))
        return NULL;
    json_t *size = json_object_get(j, "size");
    if (!json_is_integer(size) || json_integer_value(size) < 0 ||
        json_integer_value(size) > INT32_MAX)
        return FAIL(ps, "avro schema: fixed %s: \"size\" must be a non-negative integer",
                    n->name);
    n->size = (size_t)json_integer_value(size);
    n->min_size = n->size;
    return n;
}

static const floe__avro_node *parse_array(parser *ps, floe__avro_node *n, json_t *j,
                                          const char *ns, int depth)
{
    json_t *items = json_object_get(j, "items");
    if (!items)
        return FAIL(ps, "avro schema: %s without \"items\"", "array");
    if (!int_attr(ps, j, "element-id", &n->element_id))
        return NULL;
    n->items = parse_node(ps, items, ns, depth + 1);
    n->min_size = 1;
    return n->items ? n : NULL;
}

static const floe__avro_node *parse_map(parser *ps, floe__avro_node *n, json_t *j,
                                        const char *ns, int depth)
{
    json_t *values = json_object_get(j, "values");
    if (!values)
        return FAIL(ps, "avro schema: %s without \"values\"", "map");
    if (!int_attr(ps, j, "key-id", &n->key_id) || !int_attr(ps, j, "value-id", &n->value_id))
        return NULL;
    n->values = parse_node(ps, values, ns, depth + 1);
    n->min_size = 1;
    return n->values ? n : NULL;
}

/* Two union branches clash when they are the same unnamed type or named
 * types with the same fullname. */
static bool branches_clash(const floe__avro_node *a, const floe__avro_node *b)
{
    if (a->type != b->type)
        return false;
    if (a->name && b->name)
        return strcmp(a->name, b->name) == 0;
    return true;
}

static const floe__avro_node *parse_union(parser *ps, json_t *j, const char *ns, int depth)
{
    floe__avro_node *n = new_node(ps, FLOE_AVRO_UNION, NULL);
    if (!n)
        return NULL;
    n->n = json_array_size(j);
    if (n->n == 0 || n->n > MAX_BRANCHES)
        return FAIL(ps, "avro schema: a union of %zu branches", n->n);
    n->branches = floe__arena_alloc(ps->s->arena, n->n * sizeof *n->branches);
    if (!n->branches)
        return OOM(ps);
    size_t min = SIZE_MAX;
    for (size_t i = 0; i < n->n; i++) {
        const floe__avro_node *b = parse_node(ps, json_array_get(j, i), ns, depth + 1);
        if (!b)
            return NULL;
        if (b->type == FLOE_AVRO_UNION)
            return FAIL(ps, "avro schema: %s", "a union directly inside a union");
        for (size_t k = 0; k < i; k++)
            if (branches_clash(n->branches[k], b))
                return FAIL(ps, "avro schema: union has two branches of type %s",
                            b->name ? b->name : floe__avro_type_name(b->type));
        n->branches[i] = b;
        if (b->min_size < min)
            min = b->min_size;
    }
    n->min_size = sat_add(1, min);
    return n;
}

static const floe__avro_node *parse_object(parser *ps, json_t *j, const char *ns, int depth)
{
    json_t *t = json_object_get(j, "type");
    if (json_is_object(t) || json_is_array(t))
        return parse_node(ps, t, ns, depth + 1);        /* {"type": {...}} */
    const char *tn = json_string_value(t);
    if (!tn)
        return FAIL(ps, "avro schema: %s", "object without a \"type\"");
    int prim = primitive_type(tn);
    floe__avro_node *n;
    const floe__avro_node *done;
    if (prim >= 0) {
        n = new_node(ps, (floe__avro_type)prim, j);
        if (!n)
            return NULL;
        n->min_size = primitives[prim].min_size;
        done = n;
    } else if (strcmp(tn, "record") == 0 || strcmp(tn, "error") == 0) {
        done = (n = new_node(ps, FLOE_AVRO_RECORD, j)) ? parse_record(ps, n, j, ns, depth) : NULL;
    } else if (strcmp(tn, "enum") == 0) {
        done = (n = new_node(ps, FLOE_AVRO_ENUM, j)) ? parse_enum(ps, n, j, ns) : NULL;
    } else if (strcmp(tn, "fixed") == 0) {
        done = (n = new_node(ps, FLOE_AVRO_FIXED, j)) ? parse_fixed(ps, n, j, ns) : NULL;
    } else if (strcmp(tn, "array") == 0) {
        done = (n = new_node(ps, FLOE_AVRO_ARRAY, j)) ? parse_array(ps, n, j, ns, depth) : NULL;
    } else if (strcmp(tn, "map") == 0) {
        done = (n = new_node(ps, FLOE_AVRO_MAP, j)) ? parse_map(ps, n, j, ns, depth) : NULL;
    } else {
        return resolve_name(ps, tn, ns);                /* {"type": "SomeRecord"} */
    }
    if (done)
        apply_logical(n, j);
    return done;
}

static const floe__avro_node *parse_node(parser *ps, json_t *j, const char *ns, int depth)
{
    if (depth > FLOE_AVRO_MAX_DEPTH)
        return FAIL(ps, "avro schema: nested deeper than %s levels", "64");
    if (json_is_string(j))
        return resolve_name(ps, json_string_value(j), ns);
    if (json_is_array(j))
        return parse_union(ps, j, ns, depth);
    if (json_is_object(j))
        return parse_object(ps, j, ns, depth);
    return FAIL(ps, "avro schema: %s", "a schema must be a string, an array or an object");
}

/* ---- public ------------------------------------------------------------- */

void floe__avro_schema_free(floe__avro_schema *s)
{
    if (!s)
        return;
    floe__arena_free(s->arena);
    json_decref(s->json);
    floe__free(s->text);
    floe__free(s->named);
    json_decref(s->names);
    floe__free(s);
}

int floe__avro_schema_parse(const char *json, size_t len, floe__avro_schema **out,
                            floe_error *err)
{
    floe__avro_schema *s = floe__calloc(1, sizeof *s);
    if (!s || !(s->arena = floe__arena_new(16 * 1024)) || !(s->text = floe__strndup(json, len)) ||
        !(s->names = json_object())) {
        floe__avro_schema_free(s);
        return FLOE_OOM(err);
    }
    json_error_t jerr;
    s->json = json_loadb(json, len, JSON_DECODE_ANY, &jerr);
    if (!s->json) {
        floe__avro_schema_free(s);
        return floe__err_set(err, FLOE_ESCHEMA, "avro schema: invalid JSON at %d:%d: %s",
                             jerr.line, jerr.column, jerr.text);
    }
    parser ps = {.s = s, .err = err};
    s->root = parse_node(&ps, s->json, "", 0);
    if (!s->root) {
        floe__avro_schema_free(s);
        return ps.rc;
    }
    *out = s;
    return FLOE_OK;
}

const floe__avro_node *floe__avro_schema_root(const floe__avro_schema *s) { return s->root; }
const char *floe__avro_schema_text(const floe__avro_schema *s) { return s->text; }

int floe__avro_field_index(const floe__avro_node *record, const char *name)
{
    if (!record || record->type != FLOE_AVRO_RECORD || !name)
        return -1;
    for (size_t i = 0; i < record->n; i++)
        if (strcmp(record->fields[i].name, name) == 0)
            return (int)i;
    return -1;
}

int floe__avro_field_index_by_id(const floe__avro_node *record, int32_t field_id)
{
    if (!record || record->type != FLOE_AVRO_RECORD || field_id < 0)
        return -1;
    for (size_t i = 0; i < record->n; i++)
        if (record->fields[i].field_id == field_id)
            return (int)i;
    return -1;
}

const floe__avro_node *floe__avro_optional_inner(const floe__avro_node *u)
{
    if (!u || u->type != FLOE_AVRO_UNION || u->n != 2)
        return NULL;
    if (u->branches[0]->type == FLOE_AVRO_NULL)
        return u->branches[1];
    if (u->branches[1]->type == FLOE_AVRO_NULL)
        return u->branches[0];
    return NULL;
}

/* [A-Za-z_][A-Za-z0-9_]* for n bytes */
static bool valid_name(const char *s, size_t n)
{
    if (n == 0 || !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return false;
    }
    return true;
}

static bool valid_fullname(const char *s)
{
    for (;;) {
        const char *dot = strchr(s, '.');
        size_t n = dot ? (size_t)(dot - s) : strlen(s);
        if (!valid_name(s, n))
            return false;
        if (!dot)
            return true;
        s = dot + 1;
    }
}

/* Every record, enum and fixed is in the named list, so walking it visits
 * every name the spec constrains without walking the (cyclic) graph. */
int floe__avro_schema_check_names(const floe__avro_schema *s, floe_error *err)
{
    for (size_t i = 0; i < s->n_named; i++) {
        const floe__avro_node *n = s->named[i];
        FLOE_RETURN_IF(!valid_fullname(n->name), err, FLOE_ESCHEMA,
                       "avro schema: invalid name \"%s\"", n->name);
        for (size_t k = 0; n->type == FLOE_AVRO_RECORD && k < n->n; k++)
            FLOE_RETURN_IF(!valid_name(n->fields[k].name, strlen(n->fields[k].name)), err,
                           FLOE_ESCHEMA, "avro schema: record %s: invalid field name \"%s\"",
                           n->name, n->fields[k].name);
        for (size_t k = 0; n->type == FLOE_AVRO_ENUM && k < n->n; k++)
            FLOE_RETURN_IF(!valid_name(n->symbols[k], strlen(n->symbols[k])), err, FLOE_ESCHEMA,
                           "avro schema: enum %s: invalid symbol \"%s\"", n->name,
                           n->symbols[k]);
    }
    return FLOE_OK;
}
