/*
 * project.c - the read plan: a projection matched against the file's schema.
 *
 * Every projected field becomes a node (pre-order, the root first, the
 * children of a node side by side, as in the writer's plan), and every
 * projected primitive the file has becomes a column to read.  Fields are
 * matched by field id among the children of the group their parent
 * matched; without any field id in the file, by name.  List elements and
 * map keys and values are matched by position (fschema.c finds them, legacy
 * forms included).  A field the file lacks is ABSENT and reads as its
 * initial-default, else null (a required one without a default is an error
 * here, at open).
 *
 * Levels (see floe__pq_rnode): a field is null when its anchor column's
 * definition level is below the level of the file node it matched; a list or
 * map is empty below the level of its repeated node, whose repetition level
 * its entries continue at.  A group none of whose projected fields is in
 * the file still needs a column to tell null from present: it reads the
 * first column under it for its levels only.
 */
#include <stdio.h>

#include "parquet/pqr_internal.h"

typedef struct plan {
    floe__pq_reader *r;
    size_t next_node;
    size_t cap_cols;
    char path[1024];
    size_t plen;
    floe_error *err;
} plan;

static size_t count_fields(const floe__field *f)
{
    size_t n = f->n_children;
    for (uint32_t i = 0; i < f->n_children; i++)
        n += count_fields(&f->children[i]);
    return n;
}

static void push_name(plan *p, const char *name, size_t *saved)
{
    *saved = p->plen;
    int n = snprintf(p->path + p->plen, sizeof p->path - p->plen, "%s%s", p->plen ? "." : "",
                     name);
    if (n > 0)
        p->plen += (size_t)n < sizeof p->path - p->plen ? (size_t)n : sizeof p->path - p->plen - 1;
}

static void pop_name(plan *p, size_t saved)
{
    p->plen = saved;
    p->path[saved] = '\0';
}

static bool same_field(const plan *p, const floe__pq_selem *e, const floe__field *f)
{
    if (p->r->fs.has_ids)
        return e->has_id && e->field_id == f->id;
    return strcmp(e->name, f->name) == 0;
}

/* The child of group node g that field f matches, or PQ_NONE. */
static int find_child(plan *p, uint32_t g, const floe__field *f, uint32_t *out)
{
    const floe__pq_fnode *gn = &p->r->fs.nodes[g];
    *out = PQ_NONE;
    for (uint32_t k = 0; k < gn->n_children; k++) {
        uint32_t c = gn->children[k];
        if (!same_field(p, p->r->fs.nodes[c].e, f))
            continue;
        FLOE_RETURN_IF(*out != PQ_NONE, p->err, FLOE_EFORMAT,
                       "parquet schema: two fields of \"%s\" match field %s (id %d)",
                       gn->e->name, p->path, (int)f->id);
        *out = c;
    }
    return FLOE_OK;
}

/* A column reading file leaf `leaf` as field f (NULL: levels only). */
static int add_col(plan *p, uint32_t fnode, const floe__field *f)
{
    floe__pq_reader *r = p->r;
    assert(r->n_cols < p->cap_cols);
    const floe__pq_fnode *fn = &r->fs.nodes[fnode];
    floe__pq_rcol *c = &r->cols[r->n_cols++];
    memset(c, 0, sizeof *c);
    c->leaf = (uint32_t)fn->leaf;
    c->e = fn->e;
    c->field = f;
    c->ptype = fn->e->type;
    c->max_def = fn->def;
    c->max_rep = fn->rep;
    c->wop = PQ_W_NONE;
    c->path = floe__strdup(p->path);
    if (!c->path)
        return FLOE_OOM(p->err);
    if (f)
        FLOE_FORWARD(floe__pq_choose_cv(c, f, p->path, p->err));
    return floe__pq_col_init(c, &r->opts, p->err);
}

static int plan_node(plan *p, size_t at, const floe__field *f, uint32_t fnode, bool elem_of_rep,
                     bool is_key);

static int incompatible(plan *p, const floe__field *f, const char *what)
{
    char t[128];
    floe__type_name(f, false, t, sizeof t);
    return floe__err_set(p->err, FLOE_EINCOMPATIBLE,
                         "column %s (field id %d): the projection reads %s, the file has %s",
                         p->path, (int)f->id, t, what);
}

/* Reserve the node's children (side by side) and plan them. */
static int plan_children(plan *p, floe__pq_rnode *nd, const uint32_t *fnodes, bool elem_of_rep,
                         bool map)
{
    const floe__field *f = nd->f;
    nd->child = (uint32_t)p->next_node;
    nd->n_children = f->n_children;
    p->next_node += f->n_children;
    uint32_t first = nd->child;
    for (uint32_t i = 0; i < f->n_children; i++) {
        size_t saved;
        push_name(p, f->children[i].name, &saved);
        int rc = plan_node(p, first + i, &f->children[i], fnodes[i], elem_of_rep, map && i == 0);
        pop_name(p, saved);
        FLOE_FORWARD(rc);
    }
    return FLOE_OK;
}

static int plan_struct(plan *p, floe__pq_rnode *nd, uint32_t fnode, bool elem_of_rep)
{
    const floe__field *f = nd->f;
    const floe__pq_fschema *fs = &p->r->fs;
    floe__pq_shape sh;
    if (fs->nodes[fnode].leaf >= 0 ||
        (!elem_of_rep && (floe__pq_list_shape(fs, fnode, &sh) ||
                          floe__pq_map_shape(fs, fnode, &sh))))
        return incompatible(p, f, "no struct there");
    nd->shape = PQ_R_STRUCT;
    nd->d_null = fs->nodes[fnode].def;
    uint32_t *match = floe__malloc((f->n_children + 1) * sizeof *match);
    if (!match)
        return FLOE_OOM(p->err);
    int rc = FLOE_OK;
    for (uint32_t i = 0; i < f->n_children && rc == FLOE_OK; i++)
        rc = find_child(p, fnode, &f->children[i], &match[i]);
    if (rc == FLOE_OK)
        rc = plan_children(p, nd, match, false, false);
    floe__free(match);
    return rc;
}

/* A list or map field at node fnode: a LIST/MAP group, or (bare) a repeated
 * field that is a list by itself. */
static int plan_list(plan *p, floe__pq_rnode *nd, uint32_t fnode, bool bare)
{
    const floe__pq_fschema *fs = &p->r->fs;
    bool map = nd->f->kind == FLOE_K_MAP;
    floe__pq_shape sh;
    bool ok;
    if (bare)
        ok = nd->f->kind == FLOE_K_LIST && floe__pq_list_shape(fs, fnode, &sh);
    else
        ok = map ? floe__pq_map_shape(fs, fnode, &sh) : floe__pq_list_shape(fs, fnode, &sh);
    if (!ok)
        return incompatible(p, nd->f, bare ? "a repeated field" : map ? "no map there"
                                                                       : "no list there");
    assert(nd->f->n_children == (map ? 2u : 1u));
    const floe__pq_fnode *rn = &fs->nodes[sh.rep];
    nd->shape = map ? PQ_R_MAP : PQ_R_LIST;
    nd->d_null = bare ? (uint8_t)(rn->def - 1) : fs->nodes[fnode].def;
    nd->d_elem = rn->def;
    nd->rep = rn->rep;
    uint32_t kids[2] = {sh.elem, sh.value};
    return plan_children(p, nd, kids, sh.elem == sh.rep, map);
}

static int plan_prim(plan *p, floe__pq_rnode *nd, uint32_t fnode)
{
    const floe__pq_fnode *fn = &p->r->fs.nodes[fnode];
    if (fn->leaf < 0)
        return incompatible(p, nd->f, "a group there");
    nd->shape = PQ_R_PRIM;
    nd->d_null = fn->def;
    return add_col(p, fnode, nd->f);
}

/* A group with no projected column in the file reads one for its levels. */
static int anchor(plan *p, floe__pq_rnode *nd, uint32_t fnode)
{
    const floe__pq_fnode *fn = &p->r->fs.nodes[fnode];
    if (nd->col_end > nd->col_begin || nd->shape == PQ_R_PRIM)
        return FLOE_OK;
    if (fn->leaf_end == fn->leaf_begin) {
        nd->shape = PQ_R_ABSENT;           /* a group without columns: nothing to read */
        nd->n_children = 0;
        return FLOE_OK;
    }
    /* the column with the fewest repeated levels under the group: it holds
     * the fewest entries per occurrence of the group */
    uint32_t best = fn->leaf_begin;
    for (uint32_t k = fn->leaf_begin; k < fn->leaf_end; k++)
        if (p->r->fs.nodes[p->r->fs.leaves[k]].rep < p->r->fs.nodes[p->r->fs.leaves[best]].rep)
            best = k;
    FLOE_FORWARD(add_col(p, p->r->fs.leaves[best], NULL));
    nd->col_end = (uint32_t)p->r->n_cols;
    nd->own_anchor = true;
    nd->frep = fn->rep;
    return FLOE_OK;
}

static int plan_node(plan *p, size_t at, const floe__field *f, uint32_t fnode, bool elem_of_rep,
                     bool is_key)
{
    floe__pq_reader *r = p->r;
    floe__pq_rnode *nd = &r->nodes[at];
    memset(nd, 0, sizeof *nd);
    nd->f = f;
    nd->required = f->required || is_key;
    nd->col_begin = (uint32_t)r->n_cols;
    int rc;
    if (fnode == PQ_NONE) {
        nd->shape = PQ_R_ABSENT;           /* null, or its initial-default */
        FLOE_RETURN_IF(nd->required && !f->initial_default, p->err, FLOE_EINCOMPATIBLE,
                       "column %s (field id %d) is required, but the file does not have it",
                       p->path, (int)f->id);
        rc = FLOE_OK;
    } else if (!elem_of_rep && floe__pq_bare_repeated(&r->fs, fnode)) {
        rc = plan_list(p, nd, fnode, true);
    } else if (f->kind == FLOE_K_STRUCT) {
        rc = plan_struct(p, nd, fnode, elem_of_rep);
    } else if (f->kind == FLOE_K_LIST || f->kind == FLOE_K_MAP) {
        /* a repeated node standing for an element is no list itself */
        rc = elem_of_rep ? incompatible(p, f, "a list element there")
                         : plan_list(p, nd, fnode, false);
    } else {
        rc = plan_prim(p, nd, fnode);
    }
    nd->col_end = (uint32_t)r->n_cols;
    if (rc == FLOE_OK && fnode != PQ_NONE && nd->shape != PQ_R_ABSENT)
        rc = anchor(p, nd, fnode);
    return rc;
}

int floe__pq_plan_read(floe__pq_reader *r, floe_error *err)
{
    const floe__field *root = &r->schema->root;
    FLOE_RETURN_IF(root->kind != FLOE_K_STRUCT, err, FLOE_EINVAL,
                   "parquet reader: the projection's root is not a struct");
    size_t n = count_fields(root);
    r->nodes = floe__calloc(n + 1, sizeof *r->nodes);
    r->cols = floe__calloc(n + 1, sizeof *r->cols);
    if (!r->nodes || !r->cols)
        return FLOE_OOM(err);
    r->n_nodes = n + 1;
    plan p = {.r = r, .next_node = 1, .cap_cols = n + 1, .err = err};
    floe__pq_rnode *nd = &r->nodes[0];
    nd->f = root;
    nd->shape = PQ_R_STRUCT;
    nd->required = true;
    uint32_t *match = floe__malloc((root->n_children + 1) * sizeof *match);
    if (!match)
        return FLOE_OOM(err);
    int rc = FLOE_OK;
    for (uint32_t i = 0; i < root->n_children && rc == FLOE_OK; i++) {
        snprintf(p.path, sizeof p.path, "%s", root->children[i].name);
        rc = find_child(&p, 0, &root->children[i], &match[i]);
    }
    p.path[0] = '\0';
    if (rc == FLOE_OK)
        rc = plan_children(&p, nd, match, false, false);
    floe__free(match);
    nd->col_end = (uint32_t)r->n_cols;
    r->flat = true;
    for (uint32_t i = 0; i < nd->n_children; i++)
        if (r->nodes[nd->child + i].shape > PQ_R_PRIM)
            r->flat = false;
    if (rc == FLOE_OK && r->flat) {
        r->flat_ops = floe__malloc(nd->n_children + 1);
        if (!r->flat_ops)
            return FLOE_OOM(err);
        floe__pq_flat_ops(r);
    }
    return rc;
}

void floe__pq_plan_read_free(floe__pq_reader *r)
{
    for (size_t i = 0; i < r->n_cols; i++)
        floe__pq_col_release(&r->cols[i]);
    floe__free(r->cols);
    floe__free(r->nodes);
    floe__free(r->flat_ops);
    r->cols = NULL;
    r->nodes = NULL;
    r->flat_ops = NULL;
    r->n_cols = r->n_nodes = 0;
}
