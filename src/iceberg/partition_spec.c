/*
 * partition_spec.c - partition specs bound to a schema: read from table
 * metadata JSON, written back, parsed from Spark DDL-style text
 * ("day(ts), bucket(16, id)"), and the partition tuple of a row.
 *
 * The transforms themselves are partition.c's; this file finds each
 * source field, checks the transform applies, and builds the spec's
 * partition type (a struct schema of the result fields).
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/partition_internal.h"

#define MAX_FIELDS 1024

void floe__partition_spec_free(floe__partition_spec *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        floe__free(s->fields[i].name);
        if (s->paths)
            floe__free(s->paths[i]);
    }
    floe__free(s->fields);
    floe__free(s->paths);
    floe__free(s->depths);
    floe__free(s->sources);
    floe_schema_free(s->type);
    floe__free(s);
}

static int spec_alloc(size_t n, floe__partition_spec **out, floe_error *err)
{
    floe__partition_spec *s = floe__calloc(1, sizeof *s);
    if (!s)
        return FLOE_OOM(err);
    s->n = n;
    size_t m = n ? n : 1;
    s->fields = floe__calloc(m, sizeof *s->fields);
    s->paths = floe__calloc(m, sizeof *s->paths);
    s->depths = floe__calloc(m, sizeof *s->depths);
    s->sources = floe__calloc(m, sizeof *s->sources);
    if (!s->fields || !s->paths || !s->depths || !s->sources) {
        floe__partition_spec_free(s);
        return FLOE_OOM(err);
    }
    *out = s;
    return FLOE_OK;
}

/* ---- binding --------------------------------------------------------------------------- */

/* Find the field with id `id` under f through structs only, recording the
 * child indexes into path (depth at most FLOE__SCHEMA_MAX_DEPTH).  *nested
 * is set when it lies inside a list or map. */
static const floe__field *find_path(const floe__field *f, int32_t id, uint32_t *path,
                                    uint32_t depth, uint32_t *out_depth, bool *nested)
{
    for (uint32_t i = 0; i < f->n_children && depth < FLOE__SCHEMA_MAX_DEPTH; i++) {
        const floe__field *c = &f->children[i];
        path[depth] = i;
        if (c->id == id) {
            *out_depth = depth + 1;
            return c;
        }
        bool inner = false;
        const floe__field *r = find_path(c, id, path, depth + 1, out_depth, &inner);
        if (r) {
            *nested = inner || c->kind == FLOE_K_LIST || c->kind == FLOE_K_MAP;
            return r;
        }
    }
    return NULL;
}

/* Resolve field i's source in schema and set its result field in type. */
static int bind_field(floe__partition_spec *s, size_t i, const floe__schema *schema,
                      floe_error *err)
{
    floe__partition_field *pf = &s->fields[i];
    uint32_t path[FLOE__SCHEMA_MAX_DEPTH], depth = 0;
    bool nested = false;
    const floe__field *src = find_path(&schema->root, pf->source_id, path, 0, &depth, &nested);
    FLOE_RETURN_IF(!src, err, FLOE_ESCHEMA, "partition field %s: source column id %d is not "
                   "in the schema", pf->name, (int)pf->source_id);
    FLOE_RETURN_IF(nested, err, FLOE_ESCHEMA, "partition field %s: source column %s is inside "
                   "a list or map", pf->name, src->name);
    floe__field *r = &s->type->root.children[i];
    int rc = floe__transform_result(&pf->transform, src, r, err);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "partition field %s", pf->name);
    r->id = pf->field_id;
    r->name = floe__strdup(pf->name);
    s->paths[i] = floe__malloc(depth * sizeof *path);
    if (!r->name || !s->paths[i])
        return FLOE_OOM(err);
    memcpy(s->paths[i], path, depth * sizeof *path);
    s->depths[i] = depth;
    s->sources[i] = src;
    return FLOE_OK;
}

/* Distinct names and field ids; then bind every field and build the type. */
static int bind(floe__partition_spec *s, const floe__schema *schema, floe_error *err)
{
    for (size_t i = 0; i < s->n; i++)
        for (size_t j = 0; j < i; j++) {
            FLOE_RETURN_IF(strcmp(s->fields[i].name, s->fields[j].name) == 0, err,
                           FLOE_ESCHEMA, "partition field name %s is used twice",
                           s->fields[i].name);
            FLOE_RETURN_IF(s->fields[i].field_id == s->fields[j].field_id, err, FLOE_ESCHEMA,
                           "partition field id %d is used twice (%s, %s)",
                           (int)s->fields[i].field_id, s->fields[j].name, s->fields[i].name);
        }
    FLOE_FORWARD(floe__schema_new(&s->type, err));
    if (s->n) {
        s->type->root.children = floe__calloc(s->n, sizeof(floe__field));
        if (!s->type->root.children)
            return FLOE_OOM(err);
        s->type->root.n_children = (uint32_t)s->n;
    }
    for (size_t i = 0; i < s->n; i++) {
        FLOE_FORWARD(bind_field(s, i, schema, err));
        if (s->fields[i].field_id > s->type->highest_id)
            s->type->highest_id = s->fields[i].field_id;
    }
    return FLOE_OK;
}

/* ---- JSON -------------------------------------------------------------------------------- */

static int get_id(const json_t *o, const char *key, size_t i, int32_t *out, floe_error *err)
{
    const json_t *v = json_object_get(o, key);
    FLOE_RETURN_IF(!json_is_integer(v) || json_integer_value(v) < 0 ||
                   json_integer_value(v) > INT32_MAX, err, FLOE_EFORMAT,
                   "partition spec field %zu: \"%s\" is missing or not an id", i, key);
    *out = (int32_t)json_integer_value(v);
    return FLOE_OK;
}

static int field_from_json(const json_t *o, size_t i, floe__partition_field *pf,
                           floe_error *err)
{
    FLOE_RETURN_IF(!json_is_object(o), err, FLOE_EFORMAT, "partition spec field %zu is not "
                   "an object", i);
    const char *name = json_string_value(json_object_get(o, "name"));
    const char *tr = json_string_value(json_object_get(o, "transform"));
    FLOE_RETURN_IF(!name || !tr, err, FLOE_EFORMAT, "partition spec field %zu has no name or "
                   "transform", i);
    FLOE_FORWARD(get_id(o, "source-id", i, &pf->source_id, err));
    FLOE_FORWARD(get_id(o, "field-id", i, &pf->field_id, err));
    int rc = floe__transform_parse(tr, &pf->transform, err);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "partition field %s", name);
    pf->name = floe__strdup(name);
    return pf->name ? FLOE_OK : FLOE_OOM(err);
}

int floe__partition_spec_from_json(const json_t *j, const floe__schema *schema,
                                   floe__partition_spec **out, floe_error *err)
{
    *out = NULL;
    const json_t *fields = json_object_get(j, "fields");
    const json_t *id = json_object_get(j, "spec-id");
    FLOE_RETURN_IF(!json_is_array(fields) || (id && !json_is_integer(id)), err, FLOE_EFORMAT,
                   "partition spec has no field list or a bad spec-id");
    FLOE_RETURN_IF(json_array_size(fields) > MAX_FIELDS, err, FLOE_ELIMIT,
                   "partition spec has more than %d fields", MAX_FIELDS);
    floe__partition_spec *s;
    FLOE_FORWARD(spec_alloc(json_array_size(fields), &s, err));
    s->spec_id = id ? (int32_t)json_integer_value(id) : 0;
    int rc = FLOE_OK;
    for (size_t i = 0; i < s->n && rc == FLOE_OK; i++)
        rc = field_from_json(json_array_get(fields, i), i, &s->fields[i], err);
    if (rc == FLOE_OK)
        rc = bind(s, schema, err);
    if (rc != FLOE_OK) {
        floe__partition_spec_free(s);
        return rc;
    }
    *out = s;
    return FLOE_OK;
}

int floe__partition_spec_to_json(const floe__partition_spec *s, json_t **out, floe_error *err)
{
    json_t *fields = json_array();
    *out = json_pack("{s:i, s:o}", "spec-id", (json_int_t)s->spec_id, "fields", fields);
    if (!*out)
        return FLOE_OOM(err);
    for (size_t i = 0; i < s->n; i++) {
        const floe__partition_field *f = &s->fields[i];
        char tr[32];
        floe__transform_text(&f->transform, tr, sizeof tr);
        if (json_array_append_new(fields, json_pack("{s:s, s:s, s:i, s:i}", "name", f->name,
                                                    "transform", tr, "source-id",
                                                    (json_int_t)f->source_id, "field-id",
                                                    (json_int_t)f->field_id)) != 0) {
            json_decref(*out);
            *out = NULL;
            return FLOE_OOM(err);
        }
    }
    return FLOE_OK;
}

/* ---- DDL text ------------------------------------------------------------------------------ */

typedef struct ddl {
    const char *text, *p;
    floe_error *err;
} ddl;

static void skip_ws(ddl *d)
{
    while (isspace((unsigned char)*d->p))
        d->p++;
}

static int ddl_fail(ddl *d, const char *what)
{
    return floe__err_set(d->err, FLOE_EINVAL, "partition spec \"%s\": %s at offset %zu",
                         d->text, what, (size_t)(d->p - d->text));
}

/* A dotted column name (parts bare or `quoted`) into buf. */
static int ddl_column(ddl *d, char *buf, size_t cap)
{
    size_t n = 0;
    skip_ws(d);
    for (;;) {
        if (*d->p == '`') {
            const char *e = strchr(d->p + 1, '`');
            if (!e)
                return ddl_fail(d, "unterminated `");
            for (const char *q = d->p + 1; q < e && n + 1 < cap; q++)
                buf[n++] = *q;
            d->p = e + 1;
        } else {
            const char *q = d->p;
            while (isalnum((unsigned char)*q) || *q == '_' || (unsigned char)*q >= 0x80)
                q++;
            if (q == d->p)
                return ddl_fail(d, "expected a column name");
            for (; d->p < q && n + 1 < cap; d->p++)
                buf[n++] = *d->p;
        }
        if (*d->p != '.')
            break;
        if (n + 1 < cap)
            buf[n++] = '.';
        d->p++;
    }
    if (n + 1 >= cap)
        return ddl_fail(d, "column name too long");
    buf[n] = '\0';
    skip_ws(d);
    return FLOE_OK;
}

static int ddl_number(ddl *d, int32_t *out)
{
    skip_ws(d);
    char *end;
    long v = strtol(d->p, &end, 10);
    if (end == d->p || v <= 0 || v > INT32_MAX)
        return ddl_fail(d, "expected a positive number");
    d->p = end;
    skip_ws(d);
    *out = (int32_t)v;
    return FLOE_OK;
}

static int ddl_expect(ddl *d, char c, const char *what)
{
    skip_ws(d);
    if (*d->p != c)
        return ddl_fail(d, what);
    d->p++;
    skip_ws(d);
    return FLOE_OK;
}

typedef struct ddl_fn {
    const char *name;
    floe__transform_kind kind;
    const char *suffix;   /* Java's PartitionSpec.Builder name suffix */
} ddl_fn;

static const ddl_fn FNS[] = {
    {"identity", FLOE_TR_IDENTITY, ""}, {"bucket", FLOE_TR_BUCKET, "_bucket"},
    {"truncate", FLOE_TR_TRUNCATE, "_trunc"}, {"year", FLOE_TR_YEAR, "_year"},
    {"years", FLOE_TR_YEAR, "_year"}, {"month", FLOE_TR_MONTH, "_month"},
    {"months", FLOE_TR_MONTH, "_month"}, {"day", FLOE_TR_DAY, "_day"},
    {"days", FLOE_TR_DAY, "_day"}, {"date", FLOE_TR_DAY, "_day"},
    {"hour", FLOE_TR_HOUR, "_hour"}, {"hours", FLOE_TR_HOUR, "_hour"},
    {"date_hour", FLOE_TR_HOUR, "_hour"}, {"void", FLOE_TR_VOID, "_null"},
};

static const ddl_fn *ddl_find(const char *name, size_t n)
{
    for (size_t i = 0; i < sizeof FNS / sizeof FNS[0]; i++)
        if (strlen(FNS[i].name) == n && strncasecmp(FNS[i].name, name, n) == 0)
            return &FNS[i];
    return NULL;
}

/* The arguments of fn after its "(": (N, col) for bucket and truncate
 * (Spark's order; (col, N) is accepted too), else (col). */
static int ddl_args(ddl *d, const ddl_fn *fn, char *col, size_t cap, int32_t *param)
{
    bool param_fn = fn->kind == FLOE_TR_BUCKET || fn->kind == FLOE_TR_TRUNCATE;
    skip_ws(d);
    if (param_fn && isdigit((unsigned char)*d->p)) {
        FLOE_FORWARD(ddl_number(d, param));
        FLOE_FORWARD(ddl_expect(d, ',', "expected ','"));
        FLOE_FORWARD(ddl_column(d, col, cap));
    } else {
        FLOE_FORWARD(ddl_column(d, col, cap));
        if (param_fn) {
            FLOE_FORWARD(ddl_expect(d, ',', "expected ','"));
            FLOE_FORWARD(ddl_number(d, param));
        }
    }
    return ddl_expect(d, ')', "expected ')'");
}

/* The field of dotted name `col` (through structs), or NULL. */
static const floe__field *by_name(const floe__schema *s, const char *col)
{
    const floe__field *f = &s->root;
    const char *p = col;
    while (f) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        const floe__field *next = NULL;
        for (uint32_t i = 0; i < f->n_children && !next; i++)
            if (strlen(f->children[i].name) == n && memcmp(f->children[i].name, p, n) == 0)
                next = &f->children[i];
        if (!next || !dot)
            return next;
        f = next->kind == FLOE_K_STRUCT ? next : NULL;
        p = dot + 1;
    }
    return NULL;
}

/* One term ("col" or "fn(args)") into pf. */
static int ddl_term(ddl *d, const floe__schema *schema, floe__partition_field *pf)
{
    char col[512], name[600];
    const char *start = d->p;
    const ddl_fn *fn = &FNS[0];
    FLOE_FORWARD(ddl_column(d, col, sizeof col));
    if (*d->p == '(') {
        fn = ddl_find(start, strcspn(start, " \t\n("));
        if (!fn)
            return ddl_fail(d, "unknown transform");
        d->p++;
        FLOE_FORWARD(ddl_args(d, fn, col, sizeof col, &pf->transform.param));
    }
    pf->transform.kind = fn->kind;
    const floe__field *src = by_name(schema, col);
    if (!src)
        return floe__err_set(d->err, FLOE_ESCHEMA, "partition spec \"%s\": no column %s",
                             d->text, col);
    pf->source_id = src->id;
    snprintf(name, sizeof name, "%s%s", col, fn->suffix);
    pf->name = floe__strdup(name);
    return pf->name ? FLOE_OK : FLOE_OOM(d->err);
}

int floe__partition_spec_parse(const char *text, const floe__schema *schema,
                               int32_t first_field_id, floe__partition_spec **out,
                               floe_error *err)
{
    *out = NULL;
    size_t n = 0;
    for (const char *p = text; *p; p++)
        n += *p == ',';
    floe__partition_spec *s;
    FLOE_FORWARD(spec_alloc(n + 1, &s, err));
    ddl d = {text, text, err};
    int rc = FLOE_OK;
    s->n = 0;
    skip_ws(&d);
    while (rc == FLOE_OK && *d.p) {
        floe__partition_field *pf = &s->fields[s->n++];
        pf->field_id = first_field_id + (int32_t)s->n - 1;
        rc = ddl_term(&d, schema, pf);
        if (rc == FLOE_OK && *d.p == ',' && d.p[1] == '\0')
            rc = ddl_fail(&d, "trailing ','");
        else if (rc == FLOE_OK && *d.p)
            rc = *d.p == ',' ? (d.p++, skip_ws(&d), FLOE_OK) : ddl_fail(&d, "expected ','");
    }
    if (rc == FLOE_OK && s->n == 0)
        rc = ddl_fail(&d, "no partition fields");
    for (size_t i = 0; rc == FLOE_OK && i < s->n; i++) {
        /* as Java's builder: a name may only be its own source column's
         * (an identity field), never another column's */
        const floe__field *same = by_name(schema, s->fields[i].name);
        if (same && (s->fields[i].transform.kind != FLOE_TR_IDENTITY ||
                     same->id != s->fields[i].source_id))
            rc = floe__err_set(err, FLOE_ESCHEMA, "partition spec \"%s\": partition field "
                               "name %s is a column of the table", text, s->fields[i].name);
    }
    if (rc == FLOE_OK)
        rc = bind(s, schema, err);
    if (rc != FLOE_OK) {
        floe__partition_spec_free(s);
        return rc;
    }
    *out = s;
    return FLOE_OK;
}

/* ---- tuples ------------------------------------------------------------------------------- */

/* The payload of the source of field i in row [p, end), or NULL when it
 * (or a struct on its path) is null.  FLOE_EINPUT when malformed. */
static int source_payload(const floe__partition_spec *s, size_t i, const floe__schema *type_of,
                          const uint8_t *p, const uint8_t *end, const uint8_t **out,
                          floe_error *err)
{
    const floe__field *f = &type_of->root;
    for (uint32_t k = 0; k < s->depths[i]; k++) {
        uint32_t want = s->paths[i][k];
        for (uint32_t c = 0; c < want && p; c++)
            p = floe__datum_skip(&f->children[c], p, end);
        FLOE_RETURN_IF(!p || p >= end, err, FLOE_EINPUT, "malformed row (partition field %s)",
                       s->fields[i].name);
        f = &f->children[want];
        if (*p == FLOE_SLOT_NULL) {
            *out = NULL;
            return FLOE_OK;
        }
        p++;   /* into the present slot's payload (a struct's: its children) */
    }
    FLOE_RETURN_IF(!floe__datum_skip(f, p - 1, end), err, FLOE_EINPUT,
                   "malformed row (partition field %s)", s->fields[i].name);
    *out = p;
    return FLOE_OK;
}

int floe__partition_tuple(const floe__partition_spec *s, const floe__schema *schema,
                          const uint8_t *row, size_t len, floe__buf *out,
                          floe_error *err)
{
    for (size_t i = 0; i < s->n; i++) {
        const uint8_t *v;
        FLOE_FORWARD(source_payload(s, i, schema, row, row + len, &v, err));
        FLOE_FORWARD(floe__transform_apply(&s->fields[i].transform, s->sources[i], v, out, err));
    }
    return FLOE_OK;
}

int floe__partition_value(const floe__partition_spec *s, const uint8_t *tuple, size_t len,
                          size_t i, const uint8_t **payload, floe_error *err)
{
    const uint8_t *p = tuple, *end = tuple + len;
    for (size_t k = 0; k < i && p; k++)
        p = floe__datum_skip(&s->type->root.children[k], p, end);
    FLOE_RETURN_IF(!p || p >= end || !floe__datum_skip(&s->type->root.children[i], p, end),
                   err, FLOE_EFORMAT, "malformed partition tuple");
    *payload = *p == FLOE_SLOT_NULL ? NULL : p + 1;
    return FLOE_OK;
}
