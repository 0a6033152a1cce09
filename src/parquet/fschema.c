/*
 * fschema.c - the file's Parquet schema as a tree, and what it means.
 *
 * FileMetaData.schema is the tree flattened in pre-order (each group says
 * how many children follow).  floe__pq_fschema_build rebuilds the tree with
 * the levels of every node (an optional or repeated node adds one to the
 * definition level, a repeated node one to the repetition level) and
 * numbers the leaves: leaf k is column k of every row group.
 *
 * Lists and maps follow LogicalTypes.md, backward-compatibility rules
 * included:
 *   - a LIST group holds one repeated field; that field is the element when
 *     it is a primitive, a group of several fields, or a one-field group
 *     named "array" or "<list>_tuple" (the legacy 2-level forms of
 *     parquet-avro, old Spark and Hive); otherwise its one child is the
 *     element (the standard 3-level form);
 *   - a repeated field that is not the repeated field of a LIST or MAP group
 *     is a required list of required elements by itself;
 *   - a MAP (or legacy MAP_KEY_VALUE) group holds one repeated group of a key
 *     and, usually, a value.
 * floe__pq_fschema_derive turns the tree into an Iceberg schema; project.c
 * matches a projection against it.
 */
#include <stdlib.h>

#include "parquet/pqr_internal.h"

typedef struct build {
    const floe__pq_meta *m;
    floe__pq_fschema *fs;
    size_t next;                /* next schema element */
    floe_error *err;
} build;

static int build_leaf(build *b, floe__pq_fnode *nd)
{
    const floe__pq_selem *e = nd->e;
    FLOE_RETURN_IF(e->type < PQ_T_BOOLEAN || e->type > PQ_T_FLBA, b->err, FLOE_EFORMAT,
                   "parquet schema: column \"%s\" has physical type %d", e->name, (int)e->type);
    FLOE_RETURN_IF(e->type == PQ_T_FLBA && e->type_length < 1, b->err, FLOE_EFORMAT,
                   "parquet schema: column \"%s\" is FIXED_LEN_BYTE_ARRAY of length %d", e->name,
                   (int)e->type_length);
    nd->leaf = (int32_t)b->fs->n_leaves;
    b->fs->leaves[b->fs->n_leaves++] = (uint32_t)(nd - b->fs->nodes);
    return FLOE_OK;
}

static int build_node(build *b, uint32_t parent, int depth)
{
    /* each group checks its own count; together they may still claim more */
    FLOE_RETURN_IF(b->next >= b->m->n_schema, b->err, FLOE_EFORMAT,
                   "parquet schema: groups claim more children than the %zu elements",
                   b->m->n_schema);
    uint32_t i = (uint32_t)b->next++;
    floe__pq_fnode *nd = &b->fs->nodes[i];
    const floe__pq_selem *e = &b->m->schema[i];
    nd->e = e;
    nd->parent = parent;
    nd->leaf = -1;
    nd->leaf_begin = (uint32_t)b->fs->n_leaves;
    if (parent != PQ_NONE) {
        const floe__pq_fnode *pn = &b->fs->nodes[parent];
        FLOE_RETURN_IF(e->repetition < PQ_REQUIRED || e->repetition > PQ_REPEATED, b->err,
                       FLOE_EFORMAT, "parquet schema: field \"%s\" has repetition %d", e->name,
                       (int)e->repetition);
        unsigned def = pn->def + (e->repetition != PQ_REQUIRED);
        unsigned rep = pn->rep + (e->repetition == PQ_REPEATED);
        FLOE_RETURN_IF(def > PQ_MAX_LEVEL || depth > PQ_MAX_LEVEL, b->err, FLOE_EUNSUPPORTED,
                       "parquet schema: field \"%s\" is nested too deeply", e->name);
        nd->def = (uint8_t)def;
        nd->rep = (uint8_t)rep;
        if (e->num_children < 0) {
            FLOE_FORWARD(build_leaf(b, nd));
            nd->leaf_end = (uint32_t)b->fs->n_leaves;
            return FLOE_OK;
        }
    }
    FLOE_RETURN_IF(e->num_children < 0 || (size_t)e->num_children > b->m->n_schema - b->next,
                   b->err, FLOE_EFORMAT, "parquet schema: group \"%s\" claims %d children",
                   e->name, (int)e->num_children);
    nd->n_children = (uint32_t)e->num_children;
    nd->children = floe__arena_alloc(b->m->arena, (nd->n_children + 1) * sizeof(uint32_t));
    if (!nd->children)
        return FLOE_OOM(b->err);
    for (uint32_t k = 0; k < nd->n_children; k++) {
        nd->children[k] = (uint32_t)b->next;
        FLOE_FORWARD(build_node(b, i, depth + 1));
    }
    nd->leaf_end = (uint32_t)b->fs->n_leaves;
    return FLOE_OK;
}

int floe__pq_fschema_build(const floe__pq_meta *m, floe__pq_fschema *fs, floe_error *err)
{
    memset(fs, 0, sizeof *fs);
    fs->nodes = floe__arena_alloc(m->arena, m->n_schema * sizeof *fs->nodes);
    fs->leaves = floe__arena_alloc(m->arena, m->n_schema * sizeof *fs->leaves);
    if (!fs->nodes || !fs->leaves)
        return FLOE_OOM(err);
    memset(fs->nodes, 0, m->n_schema * sizeof *fs->nodes);
    fs->n_nodes = m->n_schema;
    build b = {.m = m, .fs = fs, .err = err};
    FLOE_FORWARD(build_node(&b, PQ_NONE, 0));
    FLOE_RETURN_IF(b.next != m->n_schema, err, FLOE_EFORMAT,
                   "parquet schema: %zu elements after the root's tree", m->n_schema - b.next);
    for (size_t i = 1; i < m->n_schema; i++)
        if (m->schema[i].has_id && m->schema[i].field_id > 0)
            fs->has_ids = true;
    return FLOE_OK;
}

/* ---- lists and maps ------------------------------------------------------------------ */

static bool is_group(const floe__pq_fnode *nd) { return nd->leaf < 0; }

static bool repeated(const floe__pq_fnode *nd) { return nd->e->repetition == PQ_REPEATED; }

/* A group annotated `ann` holding exactly one repeated field. */
static bool wraps_repeated(const floe__pq_fschema *fs, const floe__pq_fnode *nd)
{
    return is_group(nd) && nd->n_children == 1 && repeated(&fs->nodes[nd->children[0]]);
}

static bool is_map_group(const floe__pq_fschema *fs, const floe__pq_fnode *nd)
{
    if (nd->e->ann != PQ_A_MAP && nd->e->ann != PQ_A_MAP_KEY_VALUE)
        return false;
    if (!wraps_repeated(fs, nd))
        return false;
    const floe__pq_fnode *kv = &fs->nodes[nd->children[0]];
    return is_group(kv) && (kv->n_children == 1 || kv->n_children == 2);
}

static bool is_list_group(const floe__pq_fschema *fs, const floe__pq_fnode *nd)
{
    return nd->e->ann == PQ_A_LIST && !repeated(nd) && wraps_repeated(fs, nd);
}

bool floe__pq_bare_repeated(const floe__pq_fschema *fs, uint32_t i)
{
    const floe__pq_fnode *nd = &fs->nodes[i];
    if (!repeated(nd) || nd->parent == PQ_NONE)
        return false;
    const floe__pq_fnode *p = &fs->nodes[nd->parent];
    return !is_list_group(fs, p) && !is_map_group(fs, p);
}

/* The element of a LIST group's repeated field r (the backward-compatibility
 * rules of LogicalTypes.md). */
static uint32_t list_element(const floe__pq_fschema *fs, const floe__pq_fnode *list, uint32_t r)
{
    const floe__pq_fnode *rn = &fs->nodes[r];
    if (!is_group(rn) || rn->n_children != 1)
        return r;                               /* rules 1 and 2 */
    const char *name = rn->e->name, *ln = list->e->name;
    size_t ll = strlen(ln);
    if (strcmp(name, "array") == 0 ||
        (strncmp(name, ln, ll) == 0 && strcmp(name + ll, "_tuple") == 0))
        return r;                               /* rule 3 */
    return rn->children[0];                     /* the standard 3-level form */
}

bool floe__pq_list_shape(const floe__pq_fschema *fs, uint32_t i, floe__pq_shape *sh)
{
    const floe__pq_fnode *nd = &fs->nodes[i];
    sh->outer = i;
    sh->value = PQ_NONE;
    if (floe__pq_bare_repeated(fs, i)) {
        sh->rep = sh->elem = i;
        return true;
    }
    if (!is_list_group(fs, nd))
        return false;
    sh->rep = nd->children[0];
    const floe__pq_fnode *rn = &fs->nodes[sh->rep];
    if (is_group(rn) && rn->n_children == 0)
        return false;
    sh->elem = list_element(fs, nd, sh->rep);
    return true;
}

bool floe__pq_map_shape(const floe__pq_fschema *fs, uint32_t i, floe__pq_shape *sh)
{
    const floe__pq_fnode *nd = &fs->nodes[i];
    if (repeated(nd) || !is_map_group(fs, nd))
        return false;
    sh->outer = i;
    sh->rep = nd->children[0];
    const floe__pq_fnode *kv = &fs->nodes[sh->rep];
    sh->elem = kv->children[0];
    sh->value = kv->n_children == 2 ? kv->children[1] : PQ_NONE;
    return true;
}

/* ---- the derived Iceberg schema ---------------------------------------------------- */

typedef struct derive {
    const floe__pq_fschema *fs;
    int32_t next_id;            /* for elements, keys and values without ids */
    floe_error *err;
} derive;

static bool decimal_ok(const floe__pq_selem *e)
{
    return e->precision >= 1 && e->precision <= 38 && e->scale >= 0 && e->scale <= e->precision;
}

/* The Iceberg type of a primitive column; false when there is none. */
static bool prim_kind(const floe__pq_selem *e, floe__field *f)
{
    uint8_t a = e->ann;
    if (a == PQ_A_DECIMAL) {
        f->kind = FLOE_K_DECIMAL;
        f->precision = e->precision;
        f->scale = e->scale;
        return decimal_ok(e) && e->type != PQ_T_BOOLEAN && e->type != PQ_T_FLOAT &&
               e->type != PQ_T_DOUBLE && e->type != PQ_T_INT96;
    }
    switch (e->type) {
    case PQ_T_BOOLEAN: f->kind = FLOE_K_BOOLEAN; return a == PQ_A_NONE;
    case PQ_T_INT32:
        f->kind = a == PQ_A_DATE ? FLOE_K_DATE : a == PQ_A_TIME ? FLOE_K_TIME : FLOE_K_INT;
        if (a == PQ_A_INT && !e->is_signed && e->bits == 32)
            f->kind = FLOE_K_LONG;
        return a == PQ_A_NONE || a == PQ_A_DATE || a == PQ_A_INT || a == PQ_A_NULL ||
               (a == PQ_A_TIME && e->unit == PQ_UNIT_MILLIS);
    case PQ_T_INT64:
        f->kind = a == PQ_A_TIME ? FLOE_K_TIME : a != PQ_A_TIMESTAMP ? FLOE_K_LONG
                  : e->utc ? FLOE_K_TIMESTAMPTZ : FLOE_K_TIMESTAMP;
        return a == PQ_A_NONE || a == PQ_A_TIMESTAMP || a == PQ_A_NULL ||
               (a == PQ_A_INT && e->is_signed) || (a == PQ_A_TIME && e->unit != PQ_UNIT_MILLIS);
    case PQ_T_INT96: f->kind = FLOE_K_TIMESTAMPTZ; return a == PQ_A_NONE;
    case PQ_T_FLOAT: f->kind = FLOE_K_FLOAT; return a == PQ_A_NONE;
    case PQ_T_DOUBLE: f->kind = FLOE_K_DOUBLE; return a == PQ_A_NONE;
    case PQ_T_BYTE_ARRAY:
        f->kind = (a == PQ_A_STRING || a == PQ_A_ENUM || a == PQ_A_JSON) ? FLOE_K_STRING
                                                                     : FLOE_K_BINARY;
        return a != PQ_A_UUID && a != PQ_A_FLOAT16;
    case PQ_T_FLBA:
        f->kind = (a == PQ_A_UUID && e->type_length == 16) ? FLOE_K_UUID : FLOE_K_FIXED;
        f->length = e->type_length;
        return a != PQ_A_FLOAT16;
    default:
        return false;
    }
}

static int derive_field(derive *d, uint32_t i, floe__field *f, bool elem_of_rep, int depth);

static int set_name_id(derive *d, const floe__pq_selem *e, floe__field *f, const char *name,
                       bool synthetic)
{
    f->name = floe__strdup(name ? name : e->name);
    if (!f->name)
        return FLOE_OOM(d->err);
    if (!synthetic && e->has_id && e->field_id > 0)
        f->id = e->field_id;
    else
        f->id = d->next_id++;
    return FLOE_OK;
}

static int alloc_children(derive *d, floe__field *f, uint32_t n)
{
    f->children = floe__calloc(n ? n : 1, sizeof *f->children);
    if (!f->children)
        return FLOE_OOM(d->err);
    f->n_children = n;
    return FLOE_OK;
}

/* A list: its element from node `elem` (the repeated node itself for the
 * 2-level and bare forms, which leave elements required). */
static int derive_list(derive *d, const floe__pq_shape *sh, floe__field *f, int depth)
{
    f->kind = FLOE_K_LIST;
    FLOE_FORWARD(alloc_children(d, f, 1));
    floe__field *el = &f->children[0];
    bool same = sh->elem == sh->rep;
    FLOE_FORWARD(derive_field(d, sh->elem, el, same, depth + 1));
    floe__free(el->name);
    el->name = floe__strdup("element");
    if (!el->name)
        return FLOE_OOM(d->err);
    if (same && sh->rep == sh->outer)
        el->id = d->next_id++;                  /* the list itself took the node's id */
    el->required = el->required || same;
    return FLOE_OK;
}

static int derive_map(derive *d, const floe__pq_shape *sh, floe__field *f, int depth)
{
    FLOE_RETURN_IF(sh->value == PQ_NONE, d->err, FLOE_EUNSUPPORTED,
                   "parquet schema: map \"%s\" has no value", f->name);
    f->kind = FLOE_K_MAP;
    FLOE_FORWARD(alloc_children(d, f, 2));
    static const char *names[2] = {"key", "value"};
    uint32_t nodes[2] = {sh->elem, sh->value};
    for (int k = 0; k < 2; k++) {
        FLOE_FORWARD(derive_field(d, nodes[k], &f->children[k], false, depth + 1));
        floe__free(f->children[k].name);
        f->children[k].name = floe__strdup(names[k]);
        if (!f->children[k].name)
            return FLOE_OOM(d->err);
    }
    f->children[0].required = true;
    return FLOE_OK;
}

/* A struct's fields; with field ids in the file, fields without one are
 * left out (no projection can name them). */
static int derive_struct(derive *d, const floe__pq_fnode *nd, floe__field *f, int depth)
{
    f->kind = FLOE_K_STRUCT;
    FLOE_FORWARD(alloc_children(d, f, nd->n_children));
    uint32_t n = 0;
    for (uint32_t k = 0; k < nd->n_children; k++) {
        const floe__pq_selem *ce = d->fs->nodes[nd->children[k]].e;
        if (d->fs->has_ids && !(ce->has_id && ce->field_id > 0))
            continue;
        f->n_children = ++n;             /* counted first: a failed child is freed too */
        FLOE_FORWARD(derive_field(d, nd->children[k], &f->children[n - 1], false, depth + 1));
    }
    f->n_children = n;
    FLOE_RETURN_IF(n == 0, d->err, FLOE_EUNSUPPORTED,
                   "parquet schema: %s%s%s has no fields floe can read%s", *f->name ? "struct \"" : "",
                   *f->name ? f->name : "the file", *f->name ? "\"" : "",
                   d->fs->has_ids ? " (with field ids in the file, fields without one are left out)"
                                  : "");
    return FLOE_OK;
}

static int derive_field(derive *d, uint32_t i, floe__field *f, bool elem_of_rep, int depth)
{
    const floe__pq_fnode *nd = &d->fs->nodes[i];
    const floe__pq_selem *e = nd->e;
    FLOE_RETURN_IF(depth > FLOE__SCHEMA_MAX_DEPTH, d->err, FLOE_EUNSUPPORTED,
                   "parquet schema: field \"%s\" is nested deeper than %d levels", e->name,
                   FLOE__SCHEMA_MAX_DEPTH);
    FLOE_FORWARD(set_name_id(d, e, f, NULL, false));
    f->required = e->repetition == PQ_REQUIRED;
    floe__pq_shape sh;
    if (!elem_of_rep && e->repetition == PQ_REPEATED) {
        f->required = true;               /* a bare repeated field: a required list */
        FLOE_RETURN_IF(!floe__pq_list_shape(d->fs, i, &sh), d->err, FLOE_EFORMAT,
                       "parquet schema: repeated field \"%s\" out of place", e->name);
        return derive_list(d, &sh, f, depth);
    }
    /* a repeated node standing for the element is a struct or a primitive */
    if (!elem_of_rep && floe__pq_list_shape(d->fs, i, &sh))
        return derive_list(d, &sh, f, depth);
    if (!elem_of_rep && floe__pq_map_shape(d->fs, i, &sh))
        return derive_map(d, &sh, f, depth);
    if (is_group(nd))
        return derive_struct(d, nd, f, depth);
    FLOE_RETURN_IF(!prim_kind(e, f), d->err, FLOE_EUNSUPPORTED,
                   "parquet schema: column \"%s\" (%s) has no Iceberg type floe reads", e->name,
                   floe__pq_type_name(e->type));
    return FLOE_OK;
}

static int cmp_ids(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static size_t collect_ids(const floe__field *f, int32_t *ids, size_t n)
{
    for (uint32_t i = 0; i < f->n_children; i++) {
        ids[n++] = f->children[i].id;
        n = collect_ids(&f->children[i], ids, n);
    }
    return n;
}

static size_t count_fields(const floe__field *f)
{
    size_t n = f->n_children;
    for (uint32_t i = 0; i < f->n_children; i++)
        n += count_fields(&f->children[i]);
    return n;
}

/* Field ids must be distinct (Iceberg's rule, and what matching relies on). */
static int check_ids(floe__schema *s, floe_error *err)
{
    size_t n = count_fields(&s->root);
    int32_t *ids = floe__malloc((n ? n : 1) * sizeof *ids);
    if (!ids)
        return FLOE_OOM(err);
    collect_ids(&s->root, ids, 0);
    qsort(ids, n, sizeof *ids, cmp_ids);
    int rc = FLOE_OK;
    for (size_t i = 0; i + 1 < n && rc == FLOE_OK; i++)
        if (ids[i] == ids[i + 1])
            rc = floe__err_set(err, FLOE_EFORMAT, "parquet schema: field id %d is used twice",
                               (int)ids[i]);
    s->highest_id = n ? ids[n - 1] : 0;
    floe__free(ids);
    return rc;
}

int floe__pq_fschema_derive(const floe__pq_fschema *fs, floe__schema **out, floe_error *err)
{
    floe__schema *s;
    FLOE_FORWARD(floe__schema_new(&s, err));
    s->root.decl = FLOE_D_NONE;
    int32_t top = 0;
    for (size_t i = 1; i < fs->n_nodes; i++)
        if (fs->nodes[i].e->has_id && fs->nodes[i].e->field_id > top)
            top = fs->nodes[i].e->field_id;
    derive d = {.fs = fs, .next_id = top < INT32_MAX - (int32_t)fs->n_nodes ? top + 1 : 1,
                .err = err};
    int rc = derive_struct(&d, &fs->nodes[0], &s->root, 0);
    if (rc == FLOE_OK && !fs->has_ids)
        floe__schema_assign_ids(s);
    if (rc == FLOE_OK)
        rc = check_ids(s, err);
    if (rc != FLOE_OK) {
        floe_schema_free(s);
        return rc;
    }
    *out = s;
    return FLOE_OK;
}
