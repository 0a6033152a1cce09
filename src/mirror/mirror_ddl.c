/*
 * mirror_ddl.c - a mirrored table whose shape changes in Postgres (ALTER
 * TABLE), followed without stopping the mirror.
 *
 * pgoutput sends a Relation message (names, type oids, typmods, key flags)
 * before a transaction's first change of a table whose definition changed,
 * and the stream decodes historic shapes: every change comes after the
 * shape it was made in.  So the shape a table is mirrored in (t->cols, the
 * columns its sink's schema was declared from) is compared with the last
 * Relation message at the table's next change not below its start, and a
 * difference becomes a schema change of its sink at that transaction's
 * commit LSN (floe_sink_evolve: everything before it is committed in the
 * old schema; the commit after it makes the new one current with its first
 * rows).  Columns are known by attnum, which Postgres never reuses: a
 * Relation message has no attnums, so its names are looked up in the
 * catalog (a renamed column keeps its attnum: `was`; a dropped and re-added
 * name gets a new one).  Each commit records the attnums and key as
 * floe.pg.columns / floe.pg.key, so a restart knows them.
 *
 *   ADD COLUMN              a new column; its value for the rows before it
 *                           (atthasmissing: NOT NULL DEFAULT x, DEFAULT x)
 *                           becomes its initial-default on format 3
 *   DROP COLUMN             dropped
 *   RENAME COLUMN           renamed (field id kept)
 *   ALTER TYPE              widened when Iceberg can (int -> bigint, real ->
 *                           double, numeric precision up, varchar -> text)
 *   DROP NOT NULL           the column becomes optional (SET NOT NULL: it
 *                           stays optional; Postgres enforces it)
 *   key or identity change  new key columns: the key index is read again
 * Anything Iceberg cannot express in place is a **resync** of that table
 * alone: a temporary slot's snapshot, the table copied again inside it
 * while the other tables stream on, committed as one snapshot that
 * replaces every file (floe__sink_resync), its frontier the slot's
 * consistent point.  So is an added column whose earlier rows Postgres
 * filled (a default on a format 2 table; a volatile default, which
 * rewrote the table) and a name the catalog no longer knows.
 *
 * A table changed while floe was down with no row changed since has no
 * Relation message to tell: its catalog, read when streaming starts, is
 * compared once the stream has passed the WAL position it was read at.
 */
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "mirror/mirror_internal.h"

/* ---- shapes ----------------------------------------------------------------------------------- */

static int cols_copy(const floe__mcol *src, size_t n, floe__mcol **out, floe_error *err)
{
    floe__mcol *c = floe__calloc(n ? n : 1, sizeof *c);
    if (!c)
        return FLOE_OOM(err);
    for (size_t i = 0; i < n; i++) {
        c[i] = src[i];
        c[i].name = floe__strdup(src[i].name);
        c[i].missing = src[i].missing ? floe__strdup(src[i].missing) : NULL;
        if (!c[i].name || (src[i].missing && !c[i].missing)) {
            floe__mirror_cols_free(c, n);
            return FLOE_OOM(err);
        }
    }
    *out = c;
    return FLOE_OK;
}

/* The same columns and types in the same order (and key flags, unless
 * the stream marks every column: REPLICA IDENTITY FULL). */
static bool same_shape(const floe__mcol *a, size_t na, const floe__mcol *b, size_t nb,
                       bool keys)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i].name, b[i].name) != 0 || a[i].type_oid != b[i].type_oid ||
            a[i].typmod != b[i].typmod || (keys && a[i].key != b[i].key))
            return false;
    return true;
}

static const floe__mcol *by_name(const floe__mcol *c, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(c[i].name, name) == 0)
            return &c[i];
    return NULL;
}

static const floe__mcol *by_attnum(const floe__mcol *c, size_t n, int32_t attnum)
{
    for (size_t i = 0; attnum > 0 && i < n; i++)
        if (c[i].attnum == attnum)
            return &c[i];
    return NULL;
}

/* A column's Postgres type for messages, as format_type() names it
 * ("integer", "numeric(10,2)", "character varying(20)", a domain's name;
 * floe__mirror_resolve_type sets it). */
static void type_text(const floe__mcol *c, char *out, size_t n)
{
    const floe__pg_type *t = &c->type;
    if (t->name[0])
        snprintf(out, n, "%s", t->name);
    else
        floe__pg_type_decl(t, out, n);
}

/* ---- the Relation message ----------------------------------------------------------------------- */

/* A Relation message that names a generated column (Postgres 18's
 * publish_generated_columns): the stream would carry a column the copy
 * does not read. */
static int check_generated(floe_pg *pg, const floe__mtable *t, const floe__pgo_msg *m,
                           floe_error *err)
{
    for (uint16_t i = 0; i < m->ncols; i++)
        for (size_t g = 0; g < t->ngenerated; g++)
            if (strcmp(m->cols[i].name, t->generated[g].name) == 0)
                return floe__err_set(err, FLOE_EUNSUPPORTED, "publication \"%s\" sends the "
                                     "generated column \"%s\" of %s, which floe's copy does "
                                     "not read: floe does not mirror generated columns yet "
                                     "(ALTER PUBLICATION \"%s\" SET (publish_generated_columns "
                                     "= none))", pg->pub_name, m->cols[i].name, t->source,
                                     pg->pub_name);
    return FLOE_OK;
}

int floe__mirror_relation(floe_pg *pg, floe__mtable *t, const floe__pgo_msg *m, floe_error *err)
{
    FLOE_FORWARD(check_generated(pg, t, m, err));
    floe__mcol *c = floe__calloc(m->ncols ? m->ncols : 1, sizeof *c);
    if (!c)
        return FLOE_OOM(err);
    for (uint16_t i = 0; i < m->ncols; i++) {
        c[i].name = floe__strdup(m->cols[i].name);
        c[i].type_oid = m->cols[i].type;
        c[i].typmod = m->cols[i].typmod;
        c[i].key = m->cols[i].key;
        if (!c[i].name) {
            floe__mirror_cols_free(c, m->ncols);
            return FLOE_OOM(err);
        }
    }
    floe__mirror_cols_free(t->msg, t->nmsg);
    t->msg = c;
    t->nmsg = m->ncols;
    t->msg_pending = true;
    t->relation_seen = true;
    t->stream_replident = (char)m->replident;
    return FLOE_OK;
}

/* ---- planning a new shape ------------------------------------------------------------------------- */

typedef struct plan {
    floe__mcol *cols;                 /* the new shape (owned) */
    size_t n;
    floe__buf decl;                   /* its column list */
    floe__buf key;                    /* new key columns "a,b", or empty: the same */
    char resync[400];                 /* a reason to copy the table again instead, or "" */
    bool whole;                       /* a resync's: every row is written again */
} plan;

static void plan_init(plan *p, bool whole)
{
    memset(p, 0, sizeof *p);
    floe__buf_init(&p->decl, 1 << 24);
    floe__buf_init(&p->key, 1 << 20);
    p->whole = whole;
}

static void plan_free(plan *p)
{
    floe__mirror_cols_free(p->cols, p->n);
    floe__buf_free(&p->decl);
    floe__buf_free(&p->key);
}

static int version_of(const floe__mtable *t)
{
    return floe__sink_format_version(t->sink);
}

/* How a column added while the table held rows is filled for them: its
 * atthasmissing value becomes the Iceberg default (format 3); anything
 * Postgres wrote into the existing rows itself (a volatile default
 * rewrites the table) or a default on format 2 asks for a resync. */
static void judge_added(const floe__mtable *t, const floe__mcol *c, plan *p)
{
    bool scalar = c->type.conv != FLOE__PGC_ARRAY && c->type.conv != FLOE__PGC_RANGE;
    if (c->has_missing && c->missing && (version_of(t) < 3 || !scalar))
        snprintf(p->resync, sizeof p->resync, "column \"%s\" was added with a default, which "
                 "the rows already there read: Iceberg keeps such a default only for a "
                 "primitive column of a format version 3 table", c->name);
    else if (!c->has_missing && c->has_default)
        snprintf(p->resync, sizeof p->resync, "column \"%s\" was added with a default Postgres "
                 "may have written into every row (a volatile default, or one set after "
                 "adding it)", c->name);
    else if (!c->has_missing && c->not_null)
        snprintf(p->resync, sizeof p->resync, "column \"%s\" was added not null without a "
                 "default Postgres keeps for the earlier rows", c->name);
}

/* One column of the new shape: `want` (as the stream or the catalog shows
 * it), `cat` its catalog row (NULL: the catalog no longer has the name). */
static int plan_column(floe_pg *pg, floe__mtable *t, const floe__mcol *want,
                       const floe__mcol *cat, plan *p, floe__mcol *out, floe_error *err)
{
    /* by attnum; a name the catalog no longer has is the column that had it
     * (renamed or dropped since) */
    const floe__mcol *old = cat ? by_attnum(t->cols, t->ncols, cat->attnum)
                                : by_name(t->cols, t->ncols, want->name);
    if (!cat && !old) {
        snprintf(p->resync, sizeof p->resync, "column \"%s\" of the change stream is no longer "
                 "in the catalog (renamed or dropped since), so which column it was cannot be "
                 "told", want->name);
        return FLOE_OK;
    }
    *out = *want;
    out->name = floe__strdup(want->name);
    out->missing = cat && cat->missing ? floe__strdup(cat->missing) : NULL;
    if (!out->name || (cat && cat->missing && !out->missing))
        return FLOE_OOM(err);
    out->attnum = cat ? cat->attnum : old->attnum;
    out->has_missing = cat && cat->has_missing;
    out->has_default = cat && cat->has_default;
    /* not null only while both say so: Iceberg never makes a column required */
    out->not_null = cat && cat->not_null && (!old || old->not_null);
    out->toastable = cat ? cat->toastable : old->toastable;
    if (cat && cat->type_oid == want->type_oid && cat->typmod == want->typmod)
        out->type = cat->type;
    else if (old && old->type_oid == want->type_oid && old->typmod == want->typmod)
        out->type = old->type;
    else
        FLOE_FORWARD(floe__mirror_resolve_type(pg, want->type_oid, want->typmod, &out->type,
                                               err));
    if (!old && p->whole) {
        out->not_null = false;
    } else if (!old) {
        out->not_null = false;
        judge_added(t, out, p);
        if (out->has_missing && out->missing && cat && cat->not_null)
            out->not_null = true;              /* with its default, as Postgres has it */
    }
    return FLOE_OK;
}

/* "name" decl [not null] [was "old"] for each column; key names. */
static int plan_text(const floe__mtable *t, plan *p, floe_error *err)
{
    for (size_t i = 0; i < p->n; i++) {
        const floe__mcol *c = &p->cols[i], *old = by_attnum(t->cols, t->ncols, c->attnum);
        char decl[96];
        floe__pg_type_decl(&c->type, decl, sizeof decl);
        if (i)
            FLOE_FORWARD(floe__buf_append(&p->decl, ", ", 2, err));
        FLOE_FORWARD(floe__pg_quote_ident(c->name, &p->decl, err));
        FLOE_FORWARD(floe__buf_printf(&p->decl, err, " %s%s", decl,
                                      c->not_null ? " not null" : ""));
        if (old && strcmp(old->name, c->name) != 0) {
            FLOE_FORWARD(floe__buf_printf(&p->decl, err, " was "));
            FLOE_FORWARD(floe__pg_quote_ident(old->name, &p->decl, err));
        }
    }
    return floe__buf_putc(&p->decl, 0, err);
}

/* The key of the new shape (its columns' attnums) when it is not the
 * table's (the same set of columns is the same key), or always for a
 * resync: their names into p->key. */
static int plan_key(floe__mtable *t, const int32_t *key_attnums, size_t nkey, plan *p,
                    floe_error *err)
{
    bool same = nkey == t->nkeys && !p->whole;
    for (size_t k = 0; same && k < nkey; k++) {
        bool in = false;
        for (size_t j = 0; j < t->nkeys && !in; j++)
            in = t->cols[t->keys[j]].attnum == key_attnums[k];
        same = in;
    }
    if (same)
        return FLOE_OK;
    if (!nkey) {
        if (t->nkeys)
            snprintf(p->resync, sizeof p->resync, "it no longer has a primary key or replica "
                     "identity index");
        return FLOE_OK;          /* keyed by the whole row, as it was */
    }
    for (size_t k = 0; k < nkey; k++) {
        const floe__mcol *c = by_attnum(p->cols, p->n, key_attnums[k]);
        if (!c || strchr(c->name, ',')) {
            snprintf(p->resync, sizeof p->resync, "its key changed to columns floe cannot key "
                     "by (not plain columns, or a comma in a name)");
            return FLOE_OK;
        }
        FLOE_FORWARD(floe__buf_printf(&p->key, err, "%s%s", k ? "," : "", c->name));
    }
    return floe__buf_putc(&p->key, 0, err);
}

/* The key attnums the catalog has for t (primary key, or the replica
 * identity index), in key order, into *out (caller frees). */
static int catalog_key(floe__pg_conn *conn, const floe__mtable *t, int32_t **out, size_t *n,
                       floe_error *err)
{
    char rel[16];
    snprintf(rel, sizeof rel, "%u", t->relid);
    const char *params[1] = {rel};
    floe__pg_result *r = NULL;
    FLOE_FORWARD(floe__pg_query(conn, "SELECT k.attnum FROM pg_index i JOIN pg_class c ON "
                                "c.oid = i.indrelid CROSS JOIN LATERAL unnest(i.indkey::int2[]) "
                                "WITH ORDINALITY AS k(attnum, ord) WHERE i.indrelid = $1 AND "
                                "(CASE WHEN c.relreplident = 'i' THEN i.indisreplident ELSE "
                                "i.indisprimary END) ORDER BY k.ord", params, 1, &r, err));
    *n = floe__pg_rows(r);
    *out = floe__calloc(*n ? *n : 1, sizeof **out);
    int rc = *out ? FLOE_OK : FLOE_OOM(err);
    for (size_t i = 0; rc == FLOE_OK && i < *n; i++)
        (*out)[i] = (int32_t)strtol(floe__pg_get(r, i, 0), NULL, 10);
    floe__pg_result_free(r);
    return rc;
}

/* The new shape `want` (from the stream, or from the catalog when
 * from_catalog) planned against t->cols and the catalog, read on conn;
 * p->whole set or not by the caller. */
static int make_plan(floe_pg *pg, floe__pg_conn *conn, floe__mtable *t, const floe__mcol *want,
                     size_t n, bool from_catalog, plan *p, floe_error *err)
{
    floe__mcol *cat = NULL;
    size_t ncat = 0;
    int32_t *key = NULL;
    size_t nkey = 0;
    int rc = from_catalog ? FLOE_OK : floe__mirror_columns(pg, conn, t->relid, t->source, &cat,
                                                           &ncat, err);
    p->cols = rc == FLOE_OK ? floe__calloc(n ? n : 1, sizeof *p->cols) : NULL;
    if (rc == FLOE_OK && !p->cols)
        rc = FLOE_OOM(err);
    for (size_t i = 0; rc == FLOE_OK && i < n && !p->resync[0]; i++) {
        const floe__mcol *c = from_catalog ? &want[i] : by_name(cat, ncat, want[i].name);
        p->n = i + 1;
        rc = plan_column(pg, t, &want[i], c, p, &p->cols[i], err);
    }
    if (rc == FLOE_OK && !p->resync[0] && !from_catalog && t->stream_replident != 'f') {
        /* the key the stream sends (the replica identity), in column order */
        key = floe__calloc(n ? n : 1, sizeof *key);
        for (size_t i = 0; key && i < n; i++)
            if (want[i].key)
                key[nkey++] = p->cols[i].attnum;
        rc = key ? FLOE_OK : FLOE_OOM(err);
    } else if (rc == FLOE_OK && !p->resync[0]) {
        rc = catalog_key(conn, t, &key, &nkey, err);
    }
    if (rc == FLOE_OK && !p->resync[0])
        rc = plan_key(t, key, nkey, p, err);
    if (rc == FLOE_OK && !p->resync[0])
        rc = plan_text(t, p, err);
    floe__free(key);
    floe__mirror_cols_free(cat, ncat);
    return rc;
}

/* ---- applying it ---------------------------------------------------------------------------------- */

/* floe.pg.columns ("field id:attnum,...") and floe.pg.key ("field id,...")
 * for every commit of t from now on. */
static int record_shape(floe__mtable *t, floe_error *err)
{
    const floe__schema *s = floe_sink_row_schema(t->sink);
    floe__buf cols, key;
    floe__buf_init(&cols, 1 << 20);
    floe__buf_init(&key, 1 << 16);
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < t->ncols && i < s->root.n_children; i++)
        rc = floe__buf_printf(&cols, err, "%s%d:%d", i ? "," : "",
                              (int)s->root.children[i].id, (int)t->cols[i].attnum);
    for (size_t k = 0; rc == FLOE_OK && k < t->nkeys; k++)
        rc = floe__buf_printf(&key, err, "%s%d", k ? "," : "",
                              (int)s->root.children[t->keys[k]].id);
    if (rc == FLOE_OK)
        rc = floe__buf_putc(&cols, 0, err);
    if (rc == FLOE_OK)
        rc = floe__buf_putc(&key, 0, err);
    if (rc == FLOE_OK)
        rc = floe_sink_set_property(t->sink, "floe.pg.columns", (const char *)cols.data, err);
    if (rc == FLOE_OK)
        rc = floe_sink_set_property(t->sink, "floe.pg.key", (const char *)key.data, err);
    floe__buf_free(&cols);
    floe__buf_free(&key);
    return rc;
}

/* The position of column `name` (len bytes) in cols, or n. */
static size_t position(const floe__mcol *cols, size_t n, const char *name, size_t len)
{
    for (size_t c = 0; c < n; c++)
        if (strlen(cols[c].name) == len && memcmp(cols[c].name, name, len) == 0)
            return c;
    return n;
}

int floe__mirror_adopt(floe__mtable *t, floe__mcol *cols, size_t n, floe_error *err)
{
    const floe_schema *s = floe_sink_row_schema(t->sink);
    size_t *keys = floe__calloc(n ? n : 1, sizeof *keys), nkeys = 0;
    floe_row *row = NULL, *keyrow = NULL, *oldrow = NULL;
    int rc = keys ? floe_row_new(s, &row, err) : FLOE_OOM(err);
    if (rc == FLOE_OK)
        rc = floe_row_new(s, &keyrow, err);
    if (rc == FLOE_OK)
        rc = floe_row_new(s, &oldrow, err);
    if (rc != FLOE_OK) {
        floe_row_free(row);
        floe_row_free(keyrow);
        floe__free(keys);
        if (cols != t->cols)
            floe__mirror_cols_free(cols, n);
        return rc;
    }
    for (size_t c = 0; c < n; c++)
        cols[c].key = false;
    for (const char *p = floe__sink_key_text(t->sink); p && *p;) {    /* in key order */
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p), c = position(cols, n, p, len);
        if (c < n && !cols[c].key) {
            cols[c].key = true;
            keys[nkeys++] = c;
        }
        p = e ? e + 1 : p + len;
    }
    floe_row_free(t->row);
    floe_row_free(t->keyrow);
    floe_row_free(t->oldrow);
    t->row = row;
    t->keyrow = keyrow;
    t->oldrow = oldrow;
    if (cols != t->cols)
        floe__mirror_cols_free(t->cols, t->ncols);
    floe__free(t->keys);
    t->cols = cols;
    t->ncols = n;
    t->keys = keys;
    t->nkeys = nkeys;
    t->schema = s;
    return record_shape(t, err);
}

/* The rows this transaction left for t's keys, in the new shape (the
 * key bytes stay: the key columns and their types are the same). */
typedef struct remapping {
    const floe__schema *from, *to;
} remapping;

static int remap_row(void *ctx, const uint8_t *key, size_t klen, const uint8_t *row, size_t rlen,
                     floe__buf *nkey, floe__buf *nrow, floe_error *err)
{
    remapping *r = ctx;
    if (row)                          /* whole or partial */
        FLOE_FORWARD(floe__partial_convert(r->from, r->to, row, rlen, nrow, err));
    return floe__buf_append(nkey, key, klen, err);
}

/* The key columns of plan p are t's, of the same types. */
static bool same_key(const floe__mtable *t, const plan *p)
{
    if (p->key.len)
        return false;
    for (size_t k = 0; k < t->nkeys; k++) {
        const floe__mcol *a = &t->cols[t->keys[k]], *b = by_attnum(p->cols, p->n, a->attnum);
        if (!b || a->type_oid != b->type_oid || a->typmod != b->typmod)
            return false;
    }
    return true;
}

/* Apply plan p at time `at` (a commit LSN, or the frontier between
 * transactions): the sink's schema change, then t's shape. */
static int apply(floe_pg *pg, floe__mtable *t, plan *p, uint64_t at, floe_error *err)
{
    floe_schema *schema = NULL;
    int rc = floe_schema_parse((const char *)p->decl.data, &schema, err);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "%s: the column list of its new shape", t->source);
    /* the defaults of added columns, read from the catalog by the column's type */
    for (size_t i = 0; rc == FLOE_OK && i < p->n; i++) {
        const floe__mcol *c = &p->cols[i];
        if (!c->has_missing || !c->missing || by_attnum(t->cols, t->ncols, c->attnum))
            continue;
        floe__field *f = &schema->root.children[i];
        floe__field list = {.kind = FLOE_K_LIST, .n_children = 1, .children = f};
        floe__pg_type at_type = c->type;
        floe__pg_array_of(&at_type);
        floe__buf v;
        floe__buf_init(&v, 1 << 30);
        rc = floe__pg_value_put(&at_type, &list, c->missing, strlen(c->missing), &v,
                                &pg->scratch, err);
        /* a one-element list: tag, count, then the element's slot */
        if (rc == FLOE_OK && v.len > 6 && floe__get_le32(v.data + 1) == 1 &&
            v.data[5] == FLOE_SLOT_PRESENT)
            rc = floe__field_set_defaults(f, NULL, 0, v.data + 6, (uint32_t)(v.len - 6), err);
        floe__buf_free(&v);
    }
    const floe__schema *before = t->schema;
    size_t held = floe__txnmap_count(pg->txn);
    if (rc == FLOE_OK && held && !same_key(t, p)) {
        snprintf(p->resync, sizeof p->resync, "its key changed in the middle of a transaction "
                 "that changed its rows");
        floe_schema_free(schema);
        return FLOE_OK;
    }
    if (rc == FLOE_OK)
        rc = floe_sink_evolve(t->sink, at, schema, p->key.len ? (const char *)p->key.data : NULL,
                              err);
    floe_schema_free(schema);
    if (rc == FLOE_EINCOMPATIBLE) {
        snprintf(p->resync, sizeof p->resync, "%s",
                 err ? floe_error_message(err) : "Iceberg cannot take it in place");
        floe_error_clear(err);
        return FLOE_OK;
    }
    FLOE_FORWARD(rc);
    floe__mcol *cols = p->cols;
    size_t n = p->n;
    p->cols = NULL;
    p->n = 0;
    FLOE_FORWARD(floe__mirror_adopt(t, cols, n, err));
    if (held) {
        remapping r = {before, t->schema};
        FLOE_FORWARD(floe__txnmap_rewrite(pg->txn, t->index, remap_row, &r, err));
    }
    return FLOE_OK;
}

static void describe_change(const floe__mtable *t, const plan *p, char *out, size_t n)
{
    size_t at = 0;
    for (size_t i = 0; i < p->n && at < n; i++) {
        const floe__mcol *c = &p->cols[i], *old = by_attnum(t->cols, t->ncols, c->attnum);
        char ty[96];
        type_text(c, ty, sizeof ty);
        if (!old)
            at += (size_t)snprintf(out + at, n - at, "%sadded \"%s\" %s", at ? ", " : "",
                                   c->name, ty);
        else if (strcmp(old->name, c->name) != 0)
            at += (size_t)snprintf(out + at, n - at, "%srenamed \"%s\" to \"%s\"",
                                   at ? ", " : "", old->name, c->name);
        if (old && old->type_oid && at < n &&
            (old->type_oid != c->type_oid || old->typmod != c->typmod)) {
            char was[96];
            type_text(old, was, sizeof was);
            at += (size_t)snprintf(out + at, n - at, "%s\"%s\" %s -> %s", at ? ", " : "",
                                   c->name, was, ty);
        }
        if (old && at < n && old->not_null && !c->not_null)
            at += (size_t)snprintf(out + at, n - at, "%s\"%s\" may be null", at ? ", " : "",
                                   c->name);
    }
    for (size_t i = 0; i < t->ncols && at < n; i++)
        if (!by_attnum(p->cols, p->n, t->cols[i].attnum))
            at += (size_t)snprintf(out + at, n - at, "%sdropped \"%s\"", at ? ", " : "",
                                   t->cols[i].name);
    if (p->key.len && at < n)
        at += (size_t)snprintf(out + at, n - at, "%skeyed by %s", at ? ", " : "",
                               (const char *)p->key.data);
    if (at >= n && n > 4)
        memcpy(out + n - 4, "...", 4);
}

/* Follow t into the shape `want` at `at`; a change that needs it marks a
 * resync. */
static int reshape(floe_pg *pg, floe__mtable *t, const floe__mcol *want, size_t n,
                   bool from_catalog, uint64_t at, floe_error *err)
{
    plan p;
    plan_init(&p, false);
    int rc = make_plan(pg, pg->conn, t, want, n, from_catalog, &p, err);
    char what[600] = "", lsn[24], gap[512], gap_after[512];
    floe__lsn_format(at, lsn, sizeof lsn);
    floe__mirror_toast_gap(pg, t, gap, sizeof gap);
    if (rc == FLOE_OK)
        describe_change(t, &p, what, sizeof what);
    if (rc == FLOE_OK && !p.resync[0])
        rc = apply(pg, t, &p, at, err);
    floe__mirror_toast_gap(pg, t, gap_after, sizeof gap_after);
    if (rc == FLOE_OK && gap_after[0] && strcmp(gap, gap_after) != 0)
        floe__mirror_warn(pg, "%s: Postgres may leave values of %s out of updates that do not "
                          "change them (TOAST), and each such update makes floe copy the table "
                          "again (a resync): run ALTER TABLE %s REPLICA IDENTITY FULL",
                          t->source, gap_after, t->source);
    if (rc == FLOE_OK && p.resync[0]) {
        char why[1100];
        snprintf(why, sizeof why, "it changed shape at %s%s%s%s: %s", lsn, what[0] ? " (" : "",
                 what, what[0] ? ")" : "", p.resync);
        floe__mirror_resync_mark(pg, t, why);
    } else if (rc == FLOE_OK && what[0]) {         /* else only types learnt from the stream */
        pg->schema_changes++;
        floe__mirror_notice(pg, "%s changed shape at %s: %s; %s follows it", t->source, lsn,
                            what, t->ident);
    }
    plan_free(&p);
    return rc == FLOE_OK ? FLOE_OK
                         : floe__err_wrap(err, rc, "following %s into its new shape at %s",
                                          t->source, lsn);
}

/* Columns of t that the sink holds not null while the catalog allows
 * nulls now (DROP NOT NULL sends a Relation message of the same shape). */
static int relax_nulls(floe_pg *pg, floe__mtable *t, uint64_t at, floe_error *err)
{
    bool any = false;
    for (size_t i = 0; i < t->ncols && !any; i++)
        any = t->cols[i].not_null && !t->cols[i].key;
    if (!any)
        return FLOE_OK;
    floe__mcol *cat = NULL;
    size_t ncat = 0;
    FLOE_FORWARD(floe__mirror_columns(pg, pg->conn, t->relid, t->source, &cat, &ncat, err));
    bool relax = false;
    for (size_t i = 0; i < t->ncols; i++) {
        const floe__mcol *c = by_attnum(cat, ncat, t->cols[i].attnum);
        relax = relax || (t->cols[i].not_null && c && !c->not_null);
    }
    int rc = FLOE_OK;
    if (relax) {
        floe__mcol *want = NULL;
        rc = cols_copy(t->cols, t->ncols, &want, err);
        for (size_t i = 0; rc == FLOE_OK && i < t->ncols; i++) {
            const floe__mcol *c = by_attnum(cat, ncat, want[i].attnum);
            want[i].not_null = want[i].not_null && c && c->not_null;
        }
        if (rc == FLOE_OK)
            rc = reshape(pg, t, want, t->ncols, true, at, err);
        floe__mirror_cols_free(want, t->ncols);
    }
    floe__mirror_cols_free(cat, ncat);
    return rc;
}

int floe__mirror_follow(floe_pg *pg, floe__mtable *t, uint64_t at, floe_error *err)
{
    if (!t->msg_pending || t->resync_due)
        return FLOE_OK;
    t->msg_pending = false;
    if (same_shape(t->msg, t->nmsg, t->cols, t->ncols, t->stream_replident != 'f'))
        return relax_nulls(pg, t, at, err);
    return reshape(pg, t, t->msg, t->nmsg, false, at, err);
}

/* Shape a differs from b: another column set, other types, or (strict) a
 * not null dropped. */
static bool differs(const floe__mcol *a, size_t na, const floe__mcol *b, size_t nb, bool strict)
{
    if (na != nb)
        return true;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i].name, b[i].name) != 0 || a[i].attnum != b[i].attnum ||
            a[i].type_oid != b[i].type_oid || a[i].typmod != b[i].typmod ||
            (a[i].not_null && !b[i].not_null) || (strict && a[i].not_null != b[i].not_null))
            return true;
    return false;
}

/* Once the stream has passed the WAL position read after the catalog at
 * setup, that catalog is how t looks there.  Unless a DDL came since it
 * was read (then the stream's Relation messages may be newer than it, and
 * the next change tells the newest shape anyway), a difference from t's
 * shape is a change made while floe was down with no row changed after. */
int floe__mirror_check_catalog(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    if (!t->cat_at || pg->frontier < t->cat_at || pg->in_txn)
        return FLOE_OK;
    t->cat_at = 0;
    floe__mcol *now = NULL;
    size_t nnow = 0;
    int rc = FLOE_OK;
    if (!t->resync_due && !t->resyncing && differs(t->cols, t->ncols, t->cat, t->ncat, false))
        rc = floe__mirror_columns(pg, pg->conn, t->relid, t->source, &now, &nnow, err);
    /* at the frontier's last time: the DDL's commit lies below cat_at, so
     * below the frontier, and no change of t came after it (its Relation
     * message would have shown the shape); so the commit at the frontier,
     * which a run told to stop there makes, holds the change */
    if (rc == FLOE_OK && now && !differs(now, nnow, t->cat, t->ncat, true)) {
        rc = reshape(pg, t, t->cat, t->ncat, true, pg->frontier - 1, err);
        t->shape_due = rc == FLOE_OK && !t->resync_due;
    }
    /* t committed up to the frontier already (a run stopped there, nothing
     * written since): only a commit past it can hold the change, so the
     * server is asked to write a record (a transaction id's commit; on a
     * standby it cannot, and the change waits for the next WAL) */
    if (t->shape_due && t->input >= pg->frontier) {
        floe__pg_result *r = NULL;
        if (floe__pg_query(pg->conn, "SELECT txid_current()", NULL, 0, &r, NULL) != FLOE_OK)
            t->shape_due = false;
        floe__pg_result_free(r);
    }
    floe__mirror_cols_free(now, nnow);
    floe__mirror_cols_free(t->cat, t->ncat);
    t->cat = NULL;
    t->ncat = 0;
    return rc;
}

/* ---- a resync's shape ------------------------------------------------------------------------------ */

int floe__mirror_reshape_whole(floe_pg *pg, floe__pg_conn *c, floe__mtable *t, floe__mcol *cat,
                               size_t ncat, uint64_t at, floe_error *err)
{
    plan p;
    plan_init(&p, true);
    int rc = make_plan(pg, c, t, cat, ncat, true, &p, err);
    floe__mirror_cols_free(cat, ncat);
    if (rc == FLOE_OK && p.resync[0])
        rc = floe__err_set(err, FLOE_EUNSUPPORTED, "%s: %s", t->source, p.resync);
    floe_schema *schema = NULL;
    if (rc == FLOE_OK)
        rc = floe_schema_parse((const char *)p.decl.data, &schema, err);
    if (rc == FLOE_OK)
        rc = floe__sink_resync(t->sink, at, schema, p.key.len ? (const char *)p.key.data : NULL,
                               err);
    floe_schema_free(schema);
    if (rc == FLOE_OK) {
        floe__mcol *cols = p.cols;
        size_t n = p.n;
        p.cols = NULL;
        p.n = 0;
        rc = floe__mirror_adopt(t, cols, n, err);
    }
    plan_free(&p);
    return rc;
}
