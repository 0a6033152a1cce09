/*
 * schema.c - floe's type tree as a Parquet schema.
 *
 * From the schema it builds (a) the leaf columns with their physical type,
 * maximum definition/repetition levels and path, (b) the shredding plan, one
 * node per field, and (c) the thrift list<SchemaElement> of the footer.
 *
 * Mapping (Iceberg spec, appendix "Parquet"):
 *   boolean BOOLEAN; int INT32; long INT64; float FLOAT; double DOUBLE;
 *   decimal(P,S) INT32 (P<=9), INT64 (P<=18), else FIXED_LEN_BYTE_ARRAY of the
 *   fewest bytes that hold P digits, DECIMAL(P,S); date INT32 DATE;
 *   time INT64 TIME(MICROS, local); timestamp INT64 TIMESTAMP(MICROS, local);
 *   timestamptz INT64 TIMESTAMP(MICROS, UTC); string BYTE_ARRAY STRING;
 *   uuid FLBA(16) UUID; fixed(L) FLBA(L); binary BYTE_ARRAY; struct: group;
 *   list: 3-level  <name> (LIST) { repeated group list { <element> } }
 *   map:           <name> (MAP) { repeated group key_value { required key; value } }
 * Every element with an Iceberg id carries it as field_id.  Converted types
 * are written next to logical types where LogicalTypes.md asks for them
 * (UTF8, MAP, LIST, DECIMAL, DATE, TIME_MICROS, TIMESTAMP_MICROS - the last
 * two also for local time, as its compatibility table requires).
 *
 * Levels: an optional field adds 1 to the definition level; the repeated
 * group of a list or map adds 1 to both levels.
 */
#include "parquet/pq_internal.h"

static bool is_primitive(floe__kind k)
{
    return k != FLOE_K_STRUCT && k != FLOE_K_LIST && k != FLOE_K_MAP;
}

/* Bytes of the FLBA holding a decimal of precision p (9 < p <= 38). */
static int32_t decimal_bytes(int32_t p)
{
    static const int32_t max_digits[17] = {0, 2, 4, 6, 9, 11, 14, 16, 18,
                                           21, 23, 26, 28, 31, 33, 35, 38};
    int32_t n = 1;
    while (n < 16 && max_digits[n] < p)
        n++;
    return n;
}

static void count_fields(const floe__field *f, size_t *nodes, size_t *leaves)
{
    (*nodes)++;
    if (is_primitive(f->kind)) {
        (*leaves)++;
        return;
    }
    for (uint32_t i = 0; i < f->n_children; i++)
        count_fields(&f->children[i], nodes, leaves);
}

static int setup_col(floe__pq_writer *w, floe__pq_col *c, const floe__field *f,
                     floe_error *err)
{
    c->field = f;
    switch (f->kind) {
    case FLOE_K_BOOLEAN:
        c->ptype = PQ_T_BOOLEAN, c->width = 1, c->op = PQ_OP_BOOL, c->order = PQ_ORD_BOOL;
        break;
    case FLOE_K_INT:
    case FLOE_K_DATE:
        c->ptype = PQ_T_INT32, c->width = 4, c->op = PQ_OP_FIX4, c->order = PQ_ORD_INT32;
        break;
    case FLOE_K_LONG:
    case FLOE_K_TIME:
    case FLOE_K_TIMESTAMP:
    case FLOE_K_TIMESTAMPTZ:
        c->ptype = PQ_T_INT64, c->width = 8, c->op = PQ_OP_FIX8, c->order = PQ_ORD_INT64;
        break;
    case FLOE_K_FLOAT:
        c->ptype = PQ_T_FLOAT, c->width = 4, c->op = PQ_OP_FIX4, c->order = PQ_ORD_FLOAT;
        break;
    case FLOE_K_DOUBLE:
        c->ptype = PQ_T_DOUBLE, c->width = 8, c->op = PQ_OP_FIX8, c->order = PQ_ORD_DOUBLE;
        break;
    case FLOE_K_DECIMAL:
        FLOE_RETURN_IF(f->precision < 1 || f->precision > 38 || f->scale < 0 ||
                           f->scale > f->precision,
                       err, FLOE_ESCHEMA, "field %s: unsupported decimal(%d,%d)", f->name,
                       f->precision, f->scale);
        if (f->precision <= 9) {
            c->ptype = PQ_T_INT32, c->width = 4, c->op = PQ_OP_DEC32, c->order = PQ_ORD_INT32;
        } else if (f->precision <= 18) {
            c->ptype = PQ_T_INT64, c->width = 8, c->op = PQ_OP_DEC64, c->order = PQ_ORD_INT64;
        } else {
            c->ptype = PQ_T_FLBA, c->type_len = decimal_bytes(f->precision);
            c->width = (uint32_t)c->type_len, c->op = PQ_OP_DECFLBA;
            c->order = PQ_ORD_SIGNED_BE;
        }
        break;
    case FLOE_K_STRING:
    case FLOE_K_BINARY:
        c->ptype = PQ_T_BYTE_ARRAY, c->width = 0, c->op = PQ_OP_BYTES, c->order = PQ_ORD_UNSIGNED;
        break;
    case FLOE_K_UUID:
    case FLOE_K_FIXED:
        c->type_len = f->kind == FLOE_K_UUID ? 16 : f->length;
        FLOE_RETURN_IF(c->type_len < 1, err, FLOE_ESCHEMA, "field %s: fixed length %d",
                       f->name, c->type_len);
        c->ptype = PQ_T_FLBA, c->width = (uint32_t)c->type_len, c->op = PQ_OP_FLBA;
        c->order = PQ_ORD_UNSIGNED;
        break;
    default:
        return floe__err_set(err, FLOE_EINTERNAL, "field %s: kind %d is not primitive",
                             f->name, (int)f->kind);
    }
    floe__buf_init(&c->vals, 0);
    floe__buf_init(&c->defs, 0);
    floe__buf_init(&c->reps, 0);
    floe__buf_init(&c->pages, 0);
    floe__pq_dict_init(&c->dict, c->width);
    floe__pq_stats_init(&c->stats);
    floe__pq_stats_init(&c->file_stats);
    c->dict_state = (w->opts.dictionary && c->ptype != PQ_T_BOOLEAN) ? PQ_DICT_ON : PQ_DICT_OFF;
    return FLOE_OK;
}

typedef struct plan_ctx {
    floe__pq_writer *w;
    size_t next_node;
    const char *names[256];      /* the path of the field being visited */
    size_t depth;
} plan_ctx;

static int push_name(plan_ctx *p, const char *name, floe_error *err)
{
    FLOE_RETURN_IF(p->depth == sizeof p->names / sizeof p->names[0], err, FLOE_EUNSUPPORTED,
                   "schema nesting is deeper than %zu levels", p->depth);
    p->names[p->depth++] = name;
    return FLOE_OK;
}

static int fill(plan_ctx *p, size_t at, const floe__field *f, unsigned parent_def,
                unsigned parent_rep, bool in_rep, bool is_key, floe_error *err)
{
    floe__pq_writer *w = p->w;
    floe__pq_node *nd = &w->nodes[at];
    nd->f = f;
    nd->kind = f->kind;
    nd->required = f->required || is_key || f == &w->schema->root;
    unsigned def = parent_def + (nd->required ? 0 : 1);
    unsigned rep = parent_rep;
    bool repeated = f->kind == FLOE_K_LIST || f->kind == FLOE_K_MAP;
    if (repeated)
        rep++;
    FLOE_RETURN_IF(def + repeated > 255 || rep > 255, err, FLOE_EUNSUPPORTED,
                   "field %s: nesting too deep for Parquet levels", f->name);
    nd->def = (uint8_t)def;
    nd->rep = (uint8_t)rep;
    nd->col_begin = (uint32_t)w->n_cols;
    if (f != &w->schema->root)
        FLOE_FORWARD(push_name(p, f->name, err));
    if (is_primitive(f->kind)) {
        floe__pq_col *c = &w->cols[w->n_cols];
        nd->col = (uint32_t)w->n_cols++;
        FLOE_FORWARD(setup_col(w, c, f, err));
        c->max_def = (uint8_t)def;
        c->max_rep = (uint8_t)parent_rep;
        c->vpre = (def || parent_rep) ? PQ_LEVEL_ROOM : 0;
        FLOE_FORWARD(floe__buf_reserve(&c->vals, c->vpre, err));
        c->vals.len = c->vpre;
        c->fast = floe__pq_fast_case(c);
        c->in_repeated = in_rep;
        c->path = floe__malloc(p->depth * sizeof *c->path);
        if (!c->path)
            return FLOE_OOM(err);
        memcpy(c->path, p->names, p->depth * sizeof *c->path);
        c->path_len = p->depth;
    } else {
        FLOE_RETURN_IF(f->n_children == 0, err, FLOE_ESCHEMA,
                       "field %s: a struct without fields cannot be written to Parquet",
                       f->name);
        uint32_t want = f->kind == FLOE_K_LIST ? 1 : f->kind == FLOE_K_MAP ? 2 : f->n_children;
        FLOE_RETURN_IF(f->n_children != want, err, FLOE_ESCHEMA,
                       "field %s: %u children, expected %u", f->name, f->n_children, want);
        nd->child = (uint32_t)p->next_node;
        nd->n_children = f->n_children;
        p->next_node += f->n_children;
        if (repeated)
            FLOE_FORWARD(push_name(p, f->kind == FLOE_K_LIST ? "list" : "key_value", err));
        for (uint32_t i = 0; i < f->n_children; i++) {
            if (repeated)
                FLOE_FORWARD(fill(p, nd->child + i, &f->children[i], def + 1, rep, true,
                                  f->kind == FLOE_K_MAP && i == 0, err));
            else
                FLOE_FORWARD(fill(p, nd->child + i, &f->children[i], def, rep, in_rep, false,
                                  err));
        }
        if (repeated)
            p->depth--;
    }
    if (f != &w->schema->root)
        p->depth--;
    nd->col_end = (uint32_t)w->n_cols;
    return FLOE_OK;
}

int floe__pq_plan(floe__pq_writer *w, floe_error *err)
{
    const floe__field *root = &w->schema->root;
    FLOE_RETURN_IF(root->kind != FLOE_K_STRUCT, err, FLOE_ESCHEMA,
                   "the schema root is not a struct");
    size_t n_nodes = 0, n_leaves = 0;
    count_fields(root, &n_nodes, &n_leaves);
    w->nodes = floe__calloc(n_nodes, sizeof *w->nodes);
    w->cols = floe__calloc(n_leaves ? n_leaves : 1, sizeof *w->cols);
    if (!w->nodes || !w->cols)
        return FLOE_OOM(err);
    w->n_nodes = n_nodes;
    plan_ctx p = {.w = w, .next_node = 1};
    FLOE_FORWARD(fill(&p, 0, root, 0, 0, false, false, err));
    w->flat = true;
    for (uint32_t i = 0; i < root->n_children; i++)
        if (!is_primitive(root->children[i].kind))
            w->flat = false;
    return FLOE_OK;
}

void floe__pq_plan_free(floe__pq_writer *w)
{
    for (size_t i = 0; i < w->n_cols; i++)
        floe__pq_col_free(&w->cols[i]);
    floe__free(w->cols);
    floe__free(w->nodes);
    w->cols = NULL;
    w->nodes = NULL;
    w->n_cols = w->n_nodes = 0;
}

/* ---- footer schema ------------------------------------------------------------ */

static size_t count_elements(const floe__field *f)
{
    size_t n = 1 + (f->kind == FLOE_K_LIST || f->kind == FLOE_K_MAP);
    if (!is_primitive(f->kind))
        for (uint32_t i = 0; i < f->n_children; i++)
            n += count_elements(&f->children[i]);
    return n;
}

static void empty_struct(floe__tc *t, int16_t id)
{
    floe__tc_struct_begin(t, id);
    floe__tc_struct_end(t);
}

/* LogicalType for TIME / TIMESTAMP: {1: isAdjustedToUTC, 2: TimeUnit{MICROS}}. */
static void time_logical(floe__tc *t, int16_t id, bool utc)
{
    floe__tc_struct_begin(t, id);
    floe__tc_bool(t, 1, utc);
    floe__tc_struct_begin(t, 2);
    empty_struct(t, 2);
    floe__tc_struct_end(t);
    floe__tc_struct_end(t);
}

/* Converted type (6), decimal scale/precision (7, 8), field id (9) and
 * logical type (10) of a field. */
static void annotations(floe__tc *t, const floe__field *f, bool with_id)
{
    int ct = -1;
    switch (f->kind) {
    case FLOE_K_STRING: ct = PQ_CT_UTF8; break;
    case FLOE_K_MAP: ct = PQ_CT_MAP; break;
    case FLOE_K_LIST: ct = PQ_CT_LIST; break;
    case FLOE_K_DECIMAL: ct = PQ_CT_DECIMAL; break;
    case FLOE_K_DATE: ct = PQ_CT_DATE; break;
    case FLOE_K_TIME: ct = PQ_CT_TIME_MICROS; break;
    case FLOE_K_TIMESTAMP:
    case FLOE_K_TIMESTAMPTZ: ct = PQ_CT_TIMESTAMP_MICROS; break;
    default: break;
    }
    if (ct >= 0)
        floe__tc_i32(t, 6, ct);
    if (f->kind == FLOE_K_DECIMAL) {
        floe__tc_i32(t, 7, f->scale);
        floe__tc_i32(t, 8, f->precision);
    }
    if (with_id)
        floe__tc_i32(t, 9, f->id);
    switch (f->kind) {
    case FLOE_K_STRING:
        floe__tc_struct_begin(t, 10);
        empty_struct(t, 1);
        floe__tc_struct_end(t);
        break;
    case FLOE_K_MAP:
    case FLOE_K_LIST:
    case FLOE_K_DATE:
    case FLOE_K_UUID:
        floe__tc_struct_begin(t, 10);
        empty_struct(t, f->kind == FLOE_K_MAP ? 2 : f->kind == FLOE_K_LIST ? 3
                        : f->kind == FLOE_K_DATE ? 6 : 14);
        floe__tc_struct_end(t);
        break;
    case FLOE_K_DECIMAL:
        floe__tc_struct_begin(t, 10);
        floe__tc_struct_begin(t, 5);
        floe__tc_i32(t, 1, f->scale);
        floe__tc_i32(t, 2, f->precision);
        floe__tc_struct_end(t);
        floe__tc_struct_end(t);
        break;
    case FLOE_K_TIME:
    case FLOE_K_TIMESTAMP:
    case FLOE_K_TIMESTAMPTZ:
        floe__tc_struct_begin(t, 10);
        time_logical(t, f->kind == FLOE_K_TIME ? 7 : 8, f->kind == FLOE_K_TIMESTAMPTZ);
        floe__tc_struct_end(t);
        break;
    default:
        break;
    }
}

static void element(const floe__pq_writer *w, floe__tc *t, const floe__pq_node *nd)
{
    const floe__field *f = nd->f;
    floe__tc_elem_struct_begin(t);
    if (is_primitive(f->kind)) {
        const floe__pq_col *c = &w->cols[nd->col];
        floe__tc_i32(t, 1, c->ptype);
        if (c->ptype == PQ_T_FLBA)
            floe__tc_i32(t, 2, c->type_len);
    }
    floe__tc_i32(t, 3, nd->required ? PQ_REQUIRED : PQ_OPTIONAL);
    floe__tc_string(t, 4, f->name);
    if (!is_primitive(f->kind))
        floe__tc_i32(t, 5, f->kind == FLOE_K_STRUCT ? (int32_t)f->n_children : 1);
    annotations(t, f, true);
    floe__tc_struct_end(t);
    if (f->kind == FLOE_K_LIST || f->kind == FLOE_K_MAP) {
        floe__tc_elem_struct_begin(t);
        floe__tc_i32(t, 3, PQ_REPEATED);
        floe__tc_string(t, 4, f->kind == FLOE_K_LIST ? "list" : "key_value");
        floe__tc_i32(t, 5, (int32_t)f->n_children);
        floe__tc_struct_end(t);
    }
    for (uint32_t i = 0; i < nd->n_children; i++)
        element(w, t, &w->nodes[nd->child + i]);
}

void floe__pq_schema_thrift(const floe__pq_writer *w, floe__tc *t)
{
    const floe__pq_node *root = &w->nodes[0];
    size_t n = 1;
    for (uint32_t i = 0; i < root->n_children; i++)
        n += count_elements(w->nodes[root->child + i].f);
    floe__tc_list_begin(t, 2, TC_STRUCT, n);
    floe__tc_elem_struct_begin(t);
    floe__tc_string(t, 4, "schema");
    floe__tc_i32(t, 5, (int32_t)root->n_children);
    floe__tc_struct_end(t);
    for (uint32_t i = 0; i < root->n_children; i++)
        element(w, t, &w->nodes[root->child + i]);
}
