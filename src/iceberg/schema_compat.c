/*
 * schema_compat.c - whether a table's schema can take rows of a declared
 * schema (SPEC.md section 4), the declared source types carried over onto
 * the table's tree, and projections of a schema (equality delete key
 * columns).
 *
 * Compatibility (floe__schema_compatible): the same column names in the
 * same order, the same nesting, nullability and Iceberg types (decimal
 * precision and scale, fixed length included).  One exception: a table
 * column of type fixed[16] or uuid is accepted where the declaration gives
 * a string column of uuids or text (older writers stored uuids that way);
 * input for it must then be uuid strings.  Field ids are never compared:
 * the table's ids (whatever numbering its creator used) are the ones files
 * are written with.
 */
#include <stdio.h>

#include "iceberg/iceberg_internal.h"

/* ---- rendering schemas for messages ---------------------------------------------- */

#define RENDER_MAX 6000    /* bytes of one rendered schema in a message */

static void render_iceberg(floe__buf *b, const floe__field *f);

static void render_required(floe__buf *b, const floe__field *f)
{
    if (f->required)
        floe__buf_printf(b, NULL, " not null");
}

static void render_iceberg(floe__buf *b, const floe__field *f)
{
    char name[96];
    switch (f->kind) {
    case FLOE_K_STRUCT:
        floe__buf_printf(b, NULL, "struct<");
        for (uint32_t i = 0; i < f->n_children; i++) {
            floe__buf_printf(b, NULL, "%s%s: ", i ? ", " : "", f->children[i].name);
            render_iceberg(b, &f->children[i]);
            render_required(b, &f->children[i]);
        }
        floe__buf_printf(b, NULL, ">");
        return;
    case FLOE_K_LIST:
        floe__buf_printf(b, NULL, "list<");
        render_iceberg(b, &f->children[0]);
        render_required(b, &f->children[0]);
        floe__buf_printf(b, NULL, ">");
        return;
    case FLOE_K_MAP:
        floe__buf_printf(b, NULL, "map<");
        render_iceberg(b, &f->children[0]);
        floe__buf_printf(b, NULL, ", ");
        render_iceberg(b, &f->children[1]);
        render_required(b, &f->children[1]);
        floe__buf_printf(b, NULL, ">");
        return;
    default:
        floe__type_name(f, false, name, sizeof name);
        floe__buf_printf(b, NULL, "%s", name);
    }
}

/* "id bigint not null, name text" (declared) or "id: long not null,
 * name: string" (Iceberg), cut at RENDER_MAX bytes.  Caller frees. */
static char *render_schema(const floe__schema *s, bool declared)
{
    floe__buf b;
    floe__buf_init(&b, RENDER_MAX);
    char type[512];
    for (uint32_t i = 0; i < s->root.n_children; i++) {
        const floe__field *c = &s->root.children[i];
        floe__buf_printf(&b, NULL, "%s%s%s", i ? ", " : "", c->name, declared ? " " : ": ");
        if (declared && c->decl != FLOE_D_NONE) {
            floe__type_name(c, true, type, sizeof type);
            floe__buf_printf(&b, NULL, "%s", type);
        } else {
            render_iceberg(&b, c);
        }
        render_required(&b, c);
    }
    if (b.len + 1 >= RENDER_MAX && b.len > 3)
        memcpy(b.data + b.len - 3, "...", 3);
    char *out = b.len ? floe__buf_strdup(&b) : floe__strdup("(no columns)");
    floe__buf_free(&b);
    return out;
}

/* ---- compatibility ------------------------------------------------------------------ */

typedef struct diff {
    char path[512];          /* "addr.zip", "tags.element", "attrs.value" */
    char why[600];
} diff;

static void path_push(char *path, size_t *len, const char *name)
{
    int n = snprintf(path + *len, 512 - *len, "%s%s", *len ? "." : "", name);
    if (n > 0)
        *len = *len + (size_t)n < 511 ? *len + (size_t)n : 511;
}

/* A table column of fixed[16] or uuid may stand where a string of uuids
 * (or text) is declared. */
static bool uuid_alternative(const floe__field *d, const floe__field *t)
{
    bool stringish = d->kind == FLOE_K_STRING &&
                     (d->decl == FLOE_D_UUID || d->decl == FLOE_D_TEXT || d->decl == FLOE_D_NONE);
    return stringish && (t->kind == FLOE_K_UUID || (t->kind == FLOE_K_FIXED && t->length == 16));
}

static bool same_type(const floe__field *d, const floe__field *t)
{
    if (d->kind != t->kind)
        return uuid_alternative(d, t);
    if (d->kind == FLOE_K_DECIMAL)
        return d->precision == t->precision && d->scale == t->scale;
    if (d->kind == FLOE_K_FIXED)
        return d->length == t->length;
    return true;
}

static bool compare(const floe__field *d, const floe__field *t, char *path, size_t len, diff *out);

static bool compare_children(const floe__field *d, const floe__field *t, char *path, size_t len,
                             diff *out)
{
    uint32_t n = d->n_children < t->n_children ? d->n_children : t->n_children;
    for (uint32_t i = 0; i < n; i++) {
        size_t l = len;
        path_push(path, &l, d->children[i].name);
        if (strcmp(d->children[i].name, t->children[i].name) != 0) {
            snprintf(out->why, sizeof out->why, "declared column \"%s\", the table has \"%s\" "
                     "in its place", d->children[i].name, t->children[i].name);
            memcpy(out->path, path, sizeof out->path);
            return false;
        }
        if (!compare(&d->children[i], &t->children[i], path, l, out))
            return false;
        path[len] = '\0';
    }
    if (d->n_children == t->n_children)
        return true;
    const floe__field *extra = d->n_children > n ? &d->children[n] : &t->children[n];
    path_push(path, &len, extra->name);
    memcpy(out->path, path, sizeof out->path);
    snprintf(out->why, sizeof out->why, "%s", d->n_children > n
             ? "declared, but the table has no such column"
             : "the table has this column, the declaration does not");
    return false;
}

/* True when equal; else the first difference in *out. */
static bool compare(const floe__field *d, const floe__field *t, char *path, size_t len, diff *out)
{
    char dt[160], tt[160];
    if (!same_type(d, t)) {
        floe__type_name(d, false, dt, sizeof dt);
        floe__type_name(t, false, tt, sizeof tt);
        memcpy(out->path, path, sizeof out->path);
        snprintf(out->why, sizeof out->why, "declared type %s, the table has %s", dt, tt);
        return false;
    }
    if (d->required != t->required) {
        memcpy(out->path, path, sizeof out->path);
        snprintf(out->why, sizeof out->why, "declared %s, the table's column is %s",
                 d->required ? "not null" : "nullable", t->required ? "required" : "optional");
        return false;
    }
    if (d->kind == FLOE_K_STRUCT)
        return compare_children(d, t, path, len, out);
    for (uint32_t i = 0; i < d->n_children; i++) {    /* list element, map key and value */
        size_t l = len;
        path_push(path, &l, d->children[i].name);
        if (!compare(&d->children[i], &t->children[i], path, l, out))
            return false;
        path[len] = '\0';
    }
    return true;
}

int floe__schema_compatible(const floe__schema *declared, const floe__schema *table,
                            floe_error *err)
{
    char path[512] = "";
    diff d;
    if (compare_children(&declared->root, &table->root, path, 0, &d))
        return FLOE_OK;
    char *ds = render_schema(declared, true), *ts = render_schema(table, false);
    int rc = floe__err_set(err, FLOE_EINCOMPATIBLE,
                           "the table's schema does not match the declared one: column \"%s\": "
                           "%s; declared: %s; table: %s",
                           d.path, d.why, ds ? ds : "?", ts ? ts : "?");
    floe__free(ds);
    floe__free(ts);
    return rc;
}

/* Give the table's fields the declared source types (the trees are
 * compatible).  A uuid stored as fixed[16]/uuid reads uuid strings. */
void floe__schema_adopt_decl(floe__field *t, const floe__field *d)
{
    t->decl = d->decl;
    if (t->kind != d->kind)
        t->decl = FLOE_D_UUID;
    for (uint32_t i = 0; i < t->n_children; i++)
        floe__schema_adopt_decl(&t->children[i], &d->children[i]);
}

/* ---- projection ----------------------------------------------------------------------- */

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

int floe__schema_project(const floe__schema *s, const char *const *names, size_t n,
                         floe__schema **out, floe_error *err)
{
    FLOE_RETURN_IF(n == 0 || n > s->root.n_children, err, FLOE_EINVAL,
                   "a projection needs 1 to %u columns, got %zu", s->root.n_children, n);
    floe__schema *p;
    FLOE_FORWARD(floe__schema_new(&p, err));
    p->root.decl = s->root.decl;
    p->schema_id = s->schema_id;
    int rc = FLOE_OK;
    p->root.children = floe__calloc(n, sizeof(floe__field));
    if (!p->root.children)
        rc = FLOE_OOM(err);
    for (size_t i = 0; rc == FLOE_OK && i < n; i++) {
        const floe__field *f = NULL;
        for (uint32_t j = 0; !f && j < s->root.n_children; j++)
            if (strcmp(s->root.children[j].name, names[i]) == 0)
                f = &s->root.children[j];
        for (size_t k = 0; f && k < i; k++)
            if (strcmp(names[k], names[i]) == 0)
                rc = floe__err_set(err, FLOE_EINVAL, "column \"%s\" is named twice", names[i]);
        if (rc == FLOE_OK && !f)
            rc = floe__err_set(err, FLOE_EINVAL, "no column \"%s\" in the schema", names[i]);
        if (rc == FLOE_OK)
            rc = floe__field_copy(&p->root.children[i], f, err);
        if (rc == FLOE_OK) {
            p->root.n_children = (uint32_t)i + 1;
            int32_t top = max_id(f);
            if (top > p->highest_id)
                p->highest_id = top;
        }
    }
    if (rc != FLOE_OK) {
        floe_schema_free(p);
        return rc;
    }
    *out = p;
    return FLOE_OK;
}

