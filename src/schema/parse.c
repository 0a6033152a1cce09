/*
 * parse.c - the column-list syntax of SPEC.md section 3, turned into a type
 * tree with Iceberg field ids.
 *
 *   columns := column ("," column)*
 *   column  := name type clause*
 *   clause  := "not" "null" | "null" | "default" literal | "was" name
 *   name    := identifier | '"' chars '"'        ("" inside quotes is one ")
 *   type    := base ("[" [digits] "]")*         each [] wraps in a list
 *   base    := scalar | "numeric" "(" p ["," s] ")" | "varchar" ["(" n ")"]
 *            | "list" "<" type ["not" "null"] ">"
 *            | "record" "(" column ("," column)* ")"
 *            | "map" "[" text "=>" type ["not" "null"] "]"
 *            | "range" "<" scalar ">" | int4range | int8range | daterange
 *            | tsrange | tstzrange | numrange "(" p ["," s] ")"
 *
 * Identifiers are ASCII letters, digits and '_' (not starting with a digit)
 * and keep their case; type names and keywords are case-insensitive.
 *
 * Nullability: a column or record field is nullable unless it says
 * "not null".  List elements and map values are nullable, except in the
 * spelled-out forms list<T not null> and map[text=>T not null]; `T[]`
 * elements are always nullable.  Map keys are always required.  Range
 * parts (lower, upper, the three flags) are all nullable.
 *
 * Clauses, each at most once, in any order (columns and record fields):
 * `default` sets the write-default of a primitive field (Iceberg format 3)
 * to a JSON literal in Iceberg's single-value form (5, 2.50, "text",
 * "2024-01-31", "2024-01-31T10:00:00", true; bytea and fixed as hex
 * strings); `was` names the column's earlier name, a rename when the
 * declaration evolves a table (SPEC.md section 4).
 *
 * Bare `numeric` / `numrange` are errors: an Iceberg decimal needs a fixed
 * precision and scale.  varchar(n) is read as text (the length is not
 * enforced: Iceberg strings are unbounded and the source already enforced
 * it).  Nesting is capped at FLOE__SCHEMA_MAX_DEPTH levels.
 */
#include <jansson.h>
#include <stdio.h>

#include "schema/schema_internal.h"

typedef struct parser {
    const char *src;        /* the whole column list */
    const char *p;          /* cursor */
    floe_error *err;
    const char *path[FLOE__SCHEMA_MAX_DEPTH + 2];   /* names of enclosing fields */
    int path_len;
} parser;

/* ---- errors -------------------------------------------------------------- */

static int fail(parser *ps, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(parser *ps, const char *at, const char *fmt, ...)
{
    char msg[256], path[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t n = 0;
    path[0] = '\0';
    for (int i = 0; i < ps->path_len && n < sizeof path; i++)
        n += (size_t)snprintf(path + n, sizeof path - n, "%s%s", i ? "." : "", ps->path[i]);
    size_t pos = (size_t)(at - ps->src) + 1;
    if (ps->path_len)
        return floe__err_set(ps->err, FLOE_ESCHEMA, "column \"%s\": %s (at position %zu)", path,
                             msg, pos);
    return floe__err_set(ps->err, FLOE_ESCHEMA, "%s (at position %zu)", msg, pos);
}

/* The text at `at` for a message: up to 24 bytes, stopping at a delimiter. */
static void snippet(const char *at, char out[32])
{
    if (!*at) {
        memcpy(out, "end of input", sizeof "end of input");
        return;
    }
    size_t n = 0;
    out[n++] = '"';
    for (size_t i = 0; at[i] && i < 24; i++) {
        if (i > 0 && strchr(" \t\r\n,()[]<>", at[i]))
            break;
        out[n++] = at[i];
    }
    out[n++] = '"';
    out[n] = '\0';
}

/* ---- lexing -------------------------------------------------------------- */

static void skip_ws(parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
        ps->p++;
}

static bool is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

typedef struct word {
    const char *s;
    size_t n;
} word;

/* Reads an identifier at the cursor (after blanks); n == 0 when none. */
static word read_word(parser *ps)
{
    skip_ws(ps);
    word w = {ps->p, 0};
    if (is_ident_start(*ps->p))
        while (is_ident_char(ps->p[w.n]))
            w.n++;
    ps->p += w.n;
    return w;
}

static bool word_is(word w, const char *kw)
{
    size_t n = strlen(kw);
    if (w.n != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = w.s[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != kw[i])
            return false;
    }
    return true;
}

/* Consumes keyword kw if it is next; the cursor does not move otherwise. */
static bool accept_kw(parser *ps, const char *kw)
{
    const char *save = ps->p;
    if (word_is(read_word(ps), kw))
        return true;
    ps->p = save;
    return false;
}

static bool accept(parser *ps, char c)
{
    skip_ws(ps);
    if (*ps->p != c)
        return false;
    ps->p++;
    return true;
}

static int expect(parser *ps, char c, const char *what)
{
    if (accept(ps, c))
        return FLOE_OK;
    char s[32];
    snippet(ps->p, s);
    return fail(ps, ps->p, "expected %s, found %s", what, s);
}

/* A small decimal number (at most 9 digits). */
static int read_number(parser *ps, const char *what, long *out)
{
    skip_ws(ps);
    const char *s = ps->p;
    long v = 0;
    while (*ps->p >= '0' && *ps->p <= '9' && ps->p - s < 9)
        v = v * 10 + (*ps->p++ - '0');
    if (ps->p == s || (*ps->p >= '0' && *ps->p <= '9')) {
        char sn[32];
        snippet(s, sn);
        return fail(ps, s, "expected %s (a number), found %s", what, sn);
    }
    *out = v;
    return FLOE_OK;
}

/* ---- names --------------------------------------------------------------- */

static int read_quoted_name(parser *ps, char **out)
{
    const char *start = ps->p++;
    size_t n = 0;
    for (const char *q = ps->p;; q++) {          /* measure; "" is one quote */
        if (*q == '\0')
            return fail(ps, start, "unterminated quoted name");
        if ((unsigned char)*q < 0x20)
            return fail(ps, q, "control character in quoted name");
        if (*q == '"' && q[1] != '"')
            break;
        if (*q == '"')
            q++;
        n++;
    }
    if (n == 0)
        return fail(ps, start, "empty quoted name");
    char *name = floe__malloc(n + 1);
    if (!name)
        return FLOE_OOM(ps->err);
    size_t k = 0;
    while (k < n) {
        if (*ps->p == '"')
            ps->p++;
        name[k++] = *ps->p++;
    }
    name[k] = '\0';
    ps->p++;                                      /* closing quote */
    if (!floe__utf8_valid((const uint8_t *)name, n)) {
        floe__free(name);
        return fail(ps, start, "quoted name is not valid UTF-8");
    }
    *out = name;
    return FLOE_OK;
}

static int read_name(parser *ps, char **out)
{
    skip_ws(ps);
    if (*ps->p == '"')
        return read_quoted_name(ps, out);
    word w = read_word(ps);
    if (w.n == 0) {
        char s[32];
        snippet(ps->p, s);
        return fail(ps, ps->p, "expected a column name, found %s", s);
    }
    *out = floe__strndup(w.s, w.n);
    return *out ? FLOE_OK : FLOE_OOM(ps->err);
}

/* ---- types --------------------------------------------------------------- */

static int parse_type(parser *ps, floe__field *f, int level, int *height);

typedef struct scalar {
    const char *name;
    floe__decl decl;
    floe__kind kind;
} scalar;

static const scalar SCALARS[] = {
    {"boolean", FLOE_D_BOOLEAN, FLOE_K_BOOLEAN},   {"bool", FLOE_D_BOOLEAN, FLOE_K_BOOLEAN},
    {"smallint", FLOE_D_SMALLINT, FLOE_K_INT},     {"int2", FLOE_D_SMALLINT, FLOE_K_INT},
    {"integer", FLOE_D_INTEGER, FLOE_K_INT},       {"int", FLOE_D_INTEGER, FLOE_K_INT},
    {"int4", FLOE_D_INTEGER, FLOE_K_INT},          {"bigint", FLOE_D_BIGINT, FLOE_K_LONG},
    {"int8", FLOE_D_BIGINT, FLOE_K_LONG},          {"uint2", FLOE_D_UINT2, FLOE_K_INT},
    {"uint4", FLOE_D_UINT4, FLOE_K_LONG},          {"uint8", FLOE_D_UINT8, FLOE_K_DECIMAL},
    {"real", FLOE_D_REAL, FLOE_K_FLOAT},           {"float4", FLOE_D_REAL, FLOE_K_FLOAT},
    {"float8", FLOE_D_DOUBLE, FLOE_K_DOUBLE},      {"text", FLOE_D_TEXT, FLOE_K_STRING},
    {"jsonb", FLOE_D_JSONB, FLOE_K_STRING},        {"json", FLOE_D_JSONB, FLOE_K_STRING},
    {"interval", FLOE_D_INTERVAL, FLOE_K_STRING},  {"uuid", FLOE_D_UUID, FLOE_K_STRING},
    {"bytea", FLOE_D_BYTEA, FLOE_K_BINARY},        {"date", FLOE_D_DATE, FLOE_K_DATE},
    {"timestamptz", FLOE_D_TIMESTAMPTZ, FLOE_K_TIMESTAMPTZ},
};

static void set_scalar(floe__field *f, floe__decl d, floe__kind k)
{
    f->decl = d;
    f->kind = k;
    if (d == FLOE_D_UINT8) {
        f->precision = 20;
        f->scale = 0;
    }
}

static bool is_scalar(const floe__field *f)
{
    return f->kind != FLOE_K_LIST && f->kind != FLOE_K_MAP && f->kind != FLOE_K_STRUCT;
}

/* "(p[,s])" after numeric/decimal/numrange; `what` names the type. */
static int parse_precision(parser *ps, floe__field *f, const char *what, const char *at)
{
    if (!accept(ps, '('))
        return fail(ps, at,
                    "%s needs a precision and scale, e.g. %s(12,2): Iceberg decimals have a "
                    "fixed precision (at most 38)",
                    what, what);
    long p, s = 0;
    const char *num = (skip_ws(ps), ps->p);
    FLOE_FORWARD(read_number(ps, "a precision", &p));
    if (accept(ps, ','))
        FLOE_FORWARD(read_number(ps, "a scale", &s));
    FLOE_FORWARD(expect(ps, ')', "\")\""));
    if (p < 1 || p > 38)
        return fail(ps, num, "%s precision %ld is out of range 1..38", what, p);
    if (s > p)
        return fail(ps, num, "%s scale %ld is out of range 0..%ld (the precision)", what, s, p);
    f->kind = FLOE_K_DECIMAL;
    f->decl = FLOE_D_NUMERIC;
    f->precision = (int32_t)p;
    f->scale = (int32_t)s;
    return FLOE_OK;
}

static int new_children(parser *ps, floe__field *f, uint32_t n)
{
    f->children = floe__calloc(n, sizeof(floe__field));
    if (!f->children)
        return FLOE_OOM(ps->err);
    f->n_children = n;
    return FLOE_OK;
}

/* Optional "not null" / "null" after a type; *required is set accordingly. */
static void parse_nullability(parser *ps, bool *required)
{
    const char *save = ps->p;
    if (accept_kw(ps, "not")) {
        if (accept_kw(ps, "null")) {
            *required = true;
            return;
        }
        ps->p = save;
    } else if (accept_kw(ps, "null")) {
        *required = false;
    }
}

static int set_name(parser *ps, floe__field *f, const char *name)
{
    f->name = floe__strdup(name);
    return f->name ? FLOE_OK : FLOE_OOM(ps->err);
}

/* list<T [not null]> */
static int parse_list(parser *ps, floe__field *f, int level, int *height)
{
    FLOE_FORWARD(expect(ps, '<', "\"<\" after list"));
    f->kind = FLOE_K_LIST;
    f->decl = FLOE_D_LIST;
    FLOE_FORWARD(new_children(ps, f, 1));
    FLOE_FORWARD(set_name(ps, &f->children[0], "element"));
    FLOE_FORWARD(parse_type(ps, &f->children[0], level + 1, height));
    parse_nullability(ps, &f->children[0].required);
    (*height)++;
    return expect(ps, '>', "\">\" closing list<");
}

/* map[text=>T [not null]] */
static int parse_map(parser *ps, floe__field *f, int level, int *height)
{
    FLOE_FORWARD(expect(ps, '[', "\"[\" after map"));
    f->kind = FLOE_K_MAP;
    f->decl = FLOE_D_MAP;
    FLOE_FORWARD(new_children(ps, f, 2));
    floe__field *k = &f->children[0], *v = &f->children[1];
    FLOE_FORWARD(set_name(ps, k, "key"));
    FLOE_FORWARD(set_name(ps, v, "value"));
    int hk = 0, hv = 0;
    const char *kat = (skip_ws(ps), ps->p);
    FLOE_FORWARD(parse_type(ps, k, level + 1, &hk));
    if (k->decl != FLOE_D_TEXT) {
        char t[64];
        floe__type_name(k, true, t, sizeof t);
        return fail(ps, kat, "map keys must be text, not %s", t);
    }
    k->required = true;
    skip_ws(ps);
    if (ps->p[0] != '=' || ps->p[1] != '>') {
        char s[32];
        snippet(ps->p, s);
        return fail(ps, ps->p, "expected \"=>\" after the map key type, found %s", s);
    }
    ps->p += 2;
    FLOE_FORWARD(parse_type(ps, v, level + 1, &hv));
    parse_nullability(ps, &v->required);
    *height = 1 + (hv > hk ? hv : hk);
    return expect(ps, ']', "\"]\" closing map[");
}

static int parse_fields(parser *ps, floe__field *parent, int level, int *height, char close);

/* record(a T, ...) */
static int parse_record(parser *ps, floe__field *f, int level, int *height)
{
    FLOE_FORWARD(expect(ps, '(', "\"(\" after record"));
    f->kind = FLOE_K_STRUCT;
    f->decl = FLOE_D_RECORD;
    FLOE_FORWARD(parse_fields(ps, f, level + 1, height, ')'));
    (*height)++;
    return FLOE_OK;
}

/* A range of the scalar type in *elem (which it takes over):
 * struct{lower, upper, lower_inclusive, upper_inclusive, empty}. */
static int make_range(parser *ps, floe__field *f, floe__field *elem, const char *at)
{
    static const char *const names[5] = {"lower", "upper", "lower_inclusive",
                                         "upper_inclusive", "empty"};
    if (!is_scalar(elem)) {
        char t[64];
        floe__type_name(elem, true, t, sizeof t);
        return fail(ps, at, "a range needs a scalar element type, not %s", t);
    }
    f->kind = FLOE_K_STRUCT;
    f->decl = FLOE_D_RANGE;
    FLOE_FORWARD(new_children(ps, f, 5));
    for (int i = 0; i < 5; i++) {
        floe__field *c = &f->children[i];
        if (i < 2) {
            *c = *elem;
            c->name = NULL;
        } else {
            set_scalar(c, FLOE_D_BOOLEAN, FLOE_K_BOOLEAN);
        }
        c->required = false;
        FLOE_FORWARD(set_name(ps, c, names[i]));
    }
    return FLOE_OK;
}

/* range<T> */
static int parse_range(parser *ps, floe__field *f, int level, int *height)
{
    FLOE_FORWARD(expect(ps, '<', "\"<\" after range"));
    floe__field elem = {0};
    const char *at = (skip_ws(ps), ps->p);
    int h = 0;
    int rc = parse_type(ps, &elem, level + 1, &h);
    if (rc == FLOE_OK)
        rc = make_range(ps, f, &elem, at);
    floe__field_clear(&elem);     /* scalars own no memory besides the name */
    FLOE_FORWARD(rc);
    *height = 2;
    return expect(ps, '>', "\">\" closing range<");
}

/* int4range and friends. */
static int parse_named_range(parser *ps, floe__field *f, word w, int *height)
{
    floe__field elem = {0};
    if (word_is(w, "int4range"))
        set_scalar(&elem, FLOE_D_INTEGER, FLOE_K_INT);
    else if (word_is(w, "int8range"))
        set_scalar(&elem, FLOE_D_BIGINT, FLOE_K_LONG);
    else if (word_is(w, "daterange"))
        set_scalar(&elem, FLOE_D_DATE, FLOE_K_DATE);
    else if (word_is(w, "tsrange"))
        set_scalar(&elem, FLOE_D_TIMESTAMP, FLOE_K_TIMESTAMP);
    else if (word_is(w, "tstzrange"))
        set_scalar(&elem, FLOE_D_TIMESTAMPTZ, FLOE_K_TIMESTAMPTZ);
    else
        FLOE_FORWARD(parse_precision(ps, &elem, "numrange", w.s));
    *height = 2;
    return make_range(ps, f, &elem, w.s);
}

/* timestamp / time with their optional "with[out] time zone". */
static int parse_time_zone(parser *ps, floe__field *f, word w)
{
    bool ts = word_is(w, "timestamp");
    bool with_tz = accept_kw(ps, "with");
    if (with_tz || accept_kw(ps, "without")) {
        const char *kw = (skip_ws(ps), ps->p);
        if (!accept_kw(ps, "time") || !accept_kw(ps, "zone"))
            return fail(ps, kw, "expected \"time zone\"");
    }
    if (!ts && with_tz)
        return fail(ps, w.s, "time with time zone is not supported (Iceberg has no such type)");
    if (ts)
        set_scalar(f, with_tz ? FLOE_D_TIMESTAMPTZ : FLOE_D_TIMESTAMP,
                   with_tz ? FLOE_K_TIMESTAMPTZ : FLOE_K_TIMESTAMP);
    else
        set_scalar(f, FLOE_D_TIME, FLOE_K_TIME);
    return FLOE_OK;
}

/* varchar, varchar(n), character varying[(n)] */
static int parse_varchar(parser *ps, floe__field *f)
{
    set_scalar(f, FLOE_D_TEXT, FLOE_K_STRING);
    if (!accept(ps, '('))
        return FLOE_OK;
    long n;
    const char *at = (skip_ws(ps), ps->p);
    FLOE_FORWARD(read_number(ps, "a length", &n));
    if (n < 1)
        return fail(ps, at, "varchar length must be at least 1");
    return expect(ps, ')', "\")\"");
}

static int parse_base(parser *ps, floe__field *f, int level, int *height)
{
    word w = read_word(ps);
    *height = 1;
    if (w.n == 0) {
        char s[32];
        snippet(ps->p, s);
        return fail(ps, ps->p, "expected a type, found %s", s);
    }
    for (size_t i = 0; i < sizeof SCALARS / sizeof SCALARS[0]; i++) {
        if (word_is(w, SCALARS[i].name)) {
            set_scalar(f, SCALARS[i].decl, SCALARS[i].kind);
            return FLOE_OK;
        }
    }
    if (word_is(w, "double")) {
        if (!accept_kw(ps, "precision"))
            return fail(ps, w.s, "expected \"double precision\"");
        set_scalar(f, FLOE_D_DOUBLE, FLOE_K_DOUBLE);
        return FLOE_OK;
    }
    if (word_is(w, "timestamp") || word_is(w, "time"))
        return parse_time_zone(ps, f, w);
    if (word_is(w, "numeric") || word_is(w, "decimal"))
        return parse_precision(ps, f, word_is(w, "numeric") ? "numeric" : "decimal", w.s);
    if (word_is(w, "varchar"))
        return parse_varchar(ps, f);
    if (word_is(w, "character")) {
        if (!accept_kw(ps, "varying"))
            return fail(ps, w.s, "character(n) is not supported; use text or varchar");
        return parse_varchar(ps, f);
    }
    if (word_is(w, "list"))
        return parse_list(ps, f, level, height);
    if (word_is(w, "record"))
        return parse_record(ps, f, level, height);
    if (word_is(w, "map"))
        return parse_map(ps, f, level, height);
    if (word_is(w, "range"))
        return parse_range(ps, f, level, height);
    if (word_is(w, "int4range") || word_is(w, "int8range") || word_is(w, "numrange") ||
        word_is(w, "daterange") || word_is(w, "tsrange") || word_is(w, "tstzrange"))
        return parse_named_range(ps, f, w, height);
    return fail(ps, w.s, "unknown type \"%.*s\"", (int)(w.n > 40 ? 40 : w.n), w.s);
}

/* Wraps the type in *f into a list whose (nullable) element it becomes;
 * f keeps its name. */
static int wrap_list(parser *ps, floe__field *f)
{
    floe__field *elem = floe__calloc(1, sizeof(floe__field));
    if (!elem)
        return FLOE_OOM(ps->err);
    *elem = *f;
    memset(f, 0, sizeof *f);
    f->name = elem->name;               /* the column keeps its name */
    f->kind = FLOE_K_LIST;
    f->decl = FLOE_D_LIST;
    f->children = elem;
    f->n_children = 1;
    elem->required = false;
    elem->name = NULL;
    return set_name(ps, elem, "element");
}

/* A type at nesting `level` (a top-level column is 1); *height receives the
 * number of levels it spans (a scalar 1). */
static int parse_type(parser *ps, floe__field *f, int level, int *height)
{
    skip_ws(ps);
    const char *at = ps->p;
    if (level > FLOE__SCHEMA_MAX_DEPTH)
        return fail(ps, at, "types are nested too deeply (more than %d levels)",
                    FLOE__SCHEMA_MAX_DEPTH);
    FLOE_FORWARD(parse_base(ps, f, level, height));
    if (level + *height - 1 > FLOE__SCHEMA_MAX_DEPTH)
        return fail(ps, at, "types are nested too deeply (more than %d levels)",
                    FLOE__SCHEMA_MAX_DEPTH);
    while (accept(ps, '[')) {
        skip_ws(ps);
        if (*ps->p >= '0' && *ps->p <= '9') {    /* int[3]: the size is ignored */
            long ignored;
            FLOE_FORWARD(read_number(ps, "an array size", &ignored));
        }
        FLOE_FORWARD(expect(ps, ']', "\"]\" after \"[\""));
        if (level + *height > FLOE__SCHEMA_MAX_DEPTH)
            return fail(ps, at, "types are nested too deeply (more than %d levels)",
                        FLOE__SCHEMA_MAX_DEPTH);
        FLOE_FORWARD(wrap_list(ps, f));
        (*height)++;
    }
    return FLOE_OK;
}

/* Appends a zeroed child to parent (growing its array) as *out. */
static int add_child(parser *ps, floe__field *parent, uint32_t *cap, floe__field **out)
{
    if (parent->n_children == *cap) {
        if (*cap >= UINT32_MAX / 4)
            return floe__err_set(ps->err, FLOE_ELIMIT, "too many columns");
        uint32_t ncap = *cap ? *cap * 2 : 8;
        floe__field *c = floe__realloc(parent->children, ncap * sizeof(floe__field));
        if (!c)
            return FLOE_OOM(ps->err);
        parent->children = c;
        *cap = ncap;
    }
    floe__field *c = &parent->children[parent->n_children++];
    memset(c, 0, sizeof *c);
    *out = c;
    return FLOE_OK;
}

/* The declared type's range where it is narrower than the Iceberg type's. */
static bool in_decl_range(const floe__field *f, const uint8_t *p)
{
    int64_t v = f->kind == FLOE_K_INT ? (int32_t)floe__get_le32(p)
                : f->kind == FLOE_K_LONG ? (int64_t)floe__get_le64(p) : 0;
    switch (f->decl) {
    case FLOE_D_SMALLINT: return v >= -32768 && v <= 32767;
    case FLOE_D_UINT2: return v >= 0 && v <= 65535;
    case FLOE_D_UINT4: return v >= 0 && v <= 4294967295LL;
    case FLOE_D_UINT8: {
        floe__i128 d;
        memcpy(&d, p, 16);
        return d >= 0;
    }
    default: return true;
    }
}

/* "default" literal: the write-default of a primitive field. */
static int parse_default(parser *ps, floe__field *f)
{
    skip_ws(ps);
    const char *at = ps->p;
    if (f->kind == FLOE_K_STRUCT || f->kind == FLOE_K_LIST || f->kind == FLOE_K_MAP)
        return fail(ps, at, "only a column of a primitive type takes a default");
    json_error_t je;
    json_t *v = json_loadb(at, strlen(at), JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &je);
    if (!v)
        return fail(ps, at, "expected a JSON literal after \"default\" (%s)", je.text);
    size_t used = (size_t)je.position;
    ps->p = at + used;
    floe_error *sub = floe_error_new();
    int rc = sub ? floe__default_from_json(f, v, json_is_number(v) ? at : NULL,
                                           json_is_number(v) ? used : 0, &f->write_default,
                                           &f->write_default_len, sub)
                 : FLOE_OOM(ps->err);
    json_decref(v);
    if (rc == FLOE_OK && f->write_default && !in_decl_range(f, f->write_default))
        rc = floe__err_set(sub, FLOE_ESCHEMA, "the default is out of range for the type");
    if (rc != FLOE_OK && rc != FLOE_ENOMEM) {
        const char *msg = floe_error_message(sub);
        const char *colon = strstr(msg, "): ");
        rc = fail(ps, at, "bad default: %s", colon ? colon + 3 : msg);
    } else if (rc == FLOE_ENOMEM) {
        rc = FLOE_OOM(ps->err);
    }
    floe_error_free(sub);
    return rc;
}

/* The clauses after a column's type, each at most once. */
static int parse_clauses(parser *ps, floe__field *f)
{
    bool nullability = false, dflt = false;
    for (;;) {
        skip_ws(ps);
        const char *at = ps->p, *save = ps->p;
        word w = read_word(ps);
        if (w.n == 0) {
            ps->p = save;
            return FLOE_OK;
        }
        bool is_not = word_is(w, "not");
        if (is_not || word_is(w, "null")) {
            if (is_not && !accept_kw(ps, "null")) {
                ps->p = save;
                return FLOE_OK;
            }
            if (nullability)
                return fail(ps, at, "nullability is given twice");
            nullability = true;
            f->required = is_not;
        } else if (word_is(w, "default")) {
            if (dflt)
                return fail(ps, at, "two defaults");
            dflt = true;
            FLOE_FORWARD(parse_default(ps, f));
        } else if (word_is(w, "was")) {
            if (f->was)
                return fail(ps, at, "\"was\" is given twice");
            FLOE_FORWARD(read_name(ps, &f->was));
        } else {
            ps->p = save;
            return FLOE_OK;
        }
    }
}

/* Columns (or record fields) up to `close` ('\0' = end of input). */
static int parse_fields(parser *ps, floe__field *parent, int level, int *height, char close)
{
    uint32_t cap = 0;
    *height = 0;
    for (;;) {
        skip_ws(ps);
        const char *at = ps->p;
        if (*at == close && parent->n_children == 0)
            return fail(ps, at, close ? "a record needs at least one field"
                                      : "the column list is empty");
        floe__field *f = NULL;
        FLOE_FORWARD(add_child(ps, parent, &cap, &f));
        FLOE_FORWARD(read_name(ps, &f->name));
        for (uint32_t i = 0; i + 1 < parent->n_children; i++)
            if (strcmp(parent->children[i].name, f->name) == 0)
                return fail(ps, at, "duplicate %s name \"%s\"", close ? "field" : "column",
                            f->name);
        ps->path[ps->path_len++] = f->name;
        int h = 0;
        FLOE_FORWARD(parse_type(ps, f, level, &h));
        FLOE_FORWARD(parse_clauses(ps, f));
        ps->path_len--;
        if (h > *height)
            *height = h;
        skip_ws(ps);
        if (*ps->p == close) {
            if (close)
                ps->p++;
            return FLOE_OK;
        }
        if (*ps->p != ',') {
            char s[32];
            snippet(ps->p, s);
            ps->path[ps->path_len++] = f->name;
            int rc = fail(ps, ps->p, "expected \",\"%s after the type, found %s",
                          close ? " or \")\"" : "", s);
            ps->path_len--;
            return rc;
        }
        ps->p++;
    }
}

int floe_schema_parse(const char *columns, floe_schema **out, floe_error *err)
{
    FLOE_RETURN_IF(!columns || !out, err, FLOE_EINVAL, "floe_schema_parse: NULL argument");
    floe__schema *s;
    FLOE_FORWARD(floe__schema_new(&s, err));
    parser ps = {.src = columns, .p = columns, .err = err};
    int height;
    int rc = parse_fields(&ps, &s->root, 1, &height, '\0');
    if (rc != FLOE_OK) {
        floe_schema_free(s);
        return rc;
    }
    floe__schema_assign_ids(s);
    *out = s;
    return FLOE_OK;
}
