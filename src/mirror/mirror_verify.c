/*
 * mirror_verify.c - floe pg --verify (floe_pg_verify): every mirrored table
 * compared with Postgres at one LSN, exactly.
 *
 * The point.  A temporary slot, created on a walsender connection of its
 * own, exports a snapshot consistent at C: it sees every transaction that
 * commits below C and none at or after it.  A query connection imports it
 * (REPEATABLE READ, SET TRANSACTION SNAPSHOT) and locks every table (ACCESS
 * SHARE, as the initial copy does: an ALTER TABLE committed after C would
 * make the old snapshot read a rewritten table empty, so one found there
 * fails the verify); the temporary slot is dropped, the import keeps the
 * snapshot.  The mirror then streams from its own slot as a run does,
 * committing no table past C (floe_pg.verify_at caps the commits in
 * mirror_stream.c), until its frontier reaches C and every table is
 * committed at exactly C: everything Postgres committed below C is then
 * in Iceberg and nothing at or after it, and the slot is confirmed at C.
 * Each table's current snapshot must now hold what the exported snapshot
 * holds.
 *
 * The comparison, per table, with memory bounded whatever its size.  Both
 * sides are rows in floe's row format of the table's sink schema: Postgres
 * rows from COPY in the snapshot, converted as the initial copy converts
 * them (floe__mirror_copy_row); Iceberg rows are the live rows of the
 * current snapshot read back by floe's reader (floe__live: DVs, position
 * and equality deletes applied).  A row's key (its key columns in key
 * order; the whole row for a table keyed by it) picks one of BUCKETS
 * buckets by hash; each side keeps per bucket the count, the bytes and two
 * sums of 64-bit row hashes (a sum: order does not matter, duplicates
 * count).  Buckets whose digests agree are equal.  The rows of those that
 * differ are read again from both sides (COPY again in the same snapshot),
 * as many buckets a round as fit ROUND_BYTES, sorted by key and row, and
 * matched: a key with rows on one side only is missing (in Iceberg) or
 * extra, a key whose rows differ is different (its columns named).  A
 * bucket with rows on one side only needs no second read once the report
 * is full: its rows are all missing or all extra.  The first REPORT_MAX
 * differences per table are reported with their keys as JSON; all are
 * counted.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "mirror/mirror_internal.h"

#define BUCKETS 65536u                       /* a power of two */
#define REPORT_MAX 100
#define ROUND_BYTES ((uint64_t)256 << 20)    /* rows held by one round of the second read */
#define HELD_MAX ((size_t)4 << 30)           /* a round's rows, even when one bucket holds
                                                more than ROUND_BYTES (a key skew) */
#define KEY_JSON_MAX 300
#define STOP_EVERY 65536                     /* rows between looks at a stop request */
#define SEED_BUCKET 0x6a09e667f3bcc908ull
#define SEED_H1 0xbb67ae8584caa73bull
#define SEED_H2 0x3c6ef372fe94f82bull

enum { PG = 0, ICEBERG = 1 };

typedef struct digest {
    uint64_t n, bytes, h1, h2;
} digest;

typedef struct entry {
    const uint8_t *key, *row;                /* into v->held, once it is complete */
    size_t off;
    uint32_t klen, rlen;
    uint8_t side;
} entry;

typedef struct vtable {
    floe_pg *pg;
    floe__mtable *t;
    uint64_t at;
    floe__schema *key_schema;                /* the key columns in key order; NULL: the row */
    const uint8_t **spans;                   /* scratch: each column's slot in a row */
    digest *d[2];
    uint8_t *wanted;                         /* per bucket: its rows held this round */
    bool collect;
    int side;
    floe__buf key, held, json, report;
    entry *e;
    size_t n, cap;
    uint64_t rows[2], missing, extra, different;
    uint64_t reported, shown;                /* differences noted; of them written out */
    uint64_t seen;                           /* rows read, for stop requests */
} vtable;

int floe__mirror_verify_refuse_resync(const floe__mtable *t, floe_error *err)
{
    return floe__err_set(err, FLOE_ESTATE, "%s needs a resync (%s), which would commit past "
                         "the point being verified: run floe pg without --verify until it "
                         "has resynced, then verify", t->source, t->resync_why);
}

/* ---- keys and digests --------------------------------------------------------------------------- */

/* The key bytes of `row` into v->key: its key columns' slots in key order. */
static int row_key(vtable *v, const uint8_t *row, size_t len, floe_error *err)
{
    const floe__mtable *t = v->t;
    floe__buf_reset(&v->key);
    if (!t->nkeys)
        return floe__buf_append(&v->key, row, len, err);
    const floe__field *f = t->schema->root.children;
    const uint8_t *p = row, *end = row + len;
    for (size_t c = 0; c < t->ncols; c++) {
        v->spans[c] = p;
        p = floe__datum_skip(&f[c], p, end);
        FLOE_RETURN_IF(!p, err, FLOE_EINTERNAL, "a row of %s is malformed", t->source);
    }
    v->spans[t->ncols] = p;
    for (size_t k = 0; k < t->nkeys; k++) {
        size_t c = t->keys[k];
        FLOE_FORWARD(floe__buf_append(&v->key, v->spans[c],
                                      (size_t)(v->spans[c + 1] - v->spans[c]), err));
    }
    return FLOE_OK;
}

static int hold(vtable *v, const uint8_t *row, size_t len, floe_error *err)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 1024;
        entry *e = floe__realloc(v->e, cap * sizeof *e);
        if (!e)
            return FLOE_OOM(err);
        v->e = e;
        v->cap = cap;
    }
    v->e[v->n++] = (entry){.off = v->held.len, .klen = (uint32_t)v->key.len,
                           .rlen = (uint32_t)len, .side = (uint8_t)v->side};
    FLOE_FORWARD(floe__buf_append(&v->held, v->key.data, v->key.len, err));
    return floe__buf_append(&v->held, row, len, err);
}

/* A row of the side being read: into its bucket's digest, or held. */
static int on_row(vtable *v, const uint8_t *row, size_t len, floe_error *err)
{
    FLOE_RETURN_IF(++v->seen % STOP_EVERY == 0 && floe__mirror_stopping(v->pg), err,
                   FLOE_EINTERRUPTED, "stopped while comparing %s", v->t->source);
    FLOE_FORWARD(row_key(v, row, len, err));
    uint32_t b = (uint32_t)floe__hash64(v->key.data, v->key.len, SEED_BUCKET) & (BUCKETS - 1);
    if (v->collect)
        return v->wanted[b] ? hold(v, row, len, err) : FLOE_OK;
    digest *d = &v->d[v->side][b];
    d->n++;
    d->bytes += len + v->key.len;
    d->h1 += floe__hash64(row, len, SEED_H1);
    d->h2 += floe__hash64(row, len, SEED_H2);
    v->rows[v->side]++;
    return FLOE_OK;
}

/* ---- the two sides ---------------------------------------------------------------------------- */

static int read_postgres(vtable *v, floe_error *err)
{
    floe_pg *pg = v->pg;
    floe__mtable *t = v->t;
    v->side = PG;
    FLOE_FORWARD(floe__mirror_fit_fields(pg, t->ncols, err));
    FLOE_FORWARD(floe__mirror_copy_begin(pg->vconn, t, err));
    for (;;) {
        const char *line;
        size_t len;
        int got;
        FLOE_FORWARD(floe__pg_copy_next(pg->vconn, &line, &len, &got, err));
        if (!got)
            return FLOE_OK;
        FLOE_FORWARD(floe__pg_copy_split(line, len, t->ncols, &pg->fields_buf, pg->fields, err));
        FLOE_FORWARD(floe__mirror_copy_row(pg, t, pg->fields, err));
        FLOE_FORWARD(on_row(v, t->row->data.data, t->row->data.len, err));
    }
}

static int iceberg_row(void *ctx, const uint8_t *row, size_t len, uint64_t pos, floe_error *err)
{
    (void)pos;
    return on_row(ctx, row, len, err);
}

static int read_iceberg(vtable *v, floe_error *err)
{
    const char *ident = v->t->ident, *dot = strrchr(ident, '.');
    FLOE_RETURN_IF(!dot, err, FLOE_EINTERNAL, "table name %s", ident);
    char *ns = floe__strndup(ident, (size_t)(dot - ident));
    floe__table *tab = NULL;
    floe__plan *plan = NULL;
    floe__live *live = NULL;
    int rc = ns ? floe__table_open(v->pg->catalog, v->pg->io, ns, dot + 1, NULL, NULL, &tab, err)
                : FLOE_OOM(err);
    if (rc == FLOE_OK)
        rc = floe__table_plan(tab, -1, &plan, err);
    if (rc == FLOE_OK)
        rc = floe__live_new(tab->io, plan, v->t->schema, &live, err);
    v->side = ICEBERG;
    if (rc == FLOE_OK)
        rc = floe__live_rows_each(live, iceberg_row, v, err);
    floe__live_free(live);
    floe__plan_free(plan);
    floe__table_free(tab);
    floe__free(ns);
    return rc;
}

/* Both sides, into digests (collect false) or holding the wanted buckets' rows. */
static int read_both(vtable *v, bool collect, floe_error *err)
{
    v->collect = collect;
    int rc = read_postgres(v, err);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "reading %s in Postgres", v->t->source);
    rc = read_iceberg(v, err);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "reading %s in Iceberg", v->t->ident);
    return FLOE_OK;
}

/* ---- matching ------------------------------------------------------------------------------- */

static int cmp_bytes(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

static int by_key_row_side(const void *x, const void *y)
{
    const entry *a = x, *b = y;
    int c = cmp_bytes(a->key, a->klen, b->key, b->klen);
    if (!c)
        c = cmp_bytes(a->row, a->rlen, b->row, b->rlen);
    return c ? c : (int)a->side - (int)b->side;
}

/* The columns in which rows a and b differ, as ` ("a", "b")`, into the report. */
static void differing_columns(vtable *v, const entry *x, const entry *y)
{
    const floe__field *f = v->t->schema->root.children;
    const uint8_t *a = x->row, *ae = a + x->rlen, *b = y->row, *be = b + y->rlen;
    bool first = true;
    for (size_t c = 0; c < v->t->ncols && a && b; c++) {
        const uint8_t *an = floe__datum_skip(&f[c], a, ae), *bn = floe__datum_skip(&f[c], b, be);
        if (an && bn && cmp_bytes(a, (size_t)(an - a), b, (size_t)(bn - b)) != 0) {
            floe__buf_printf(&v->report, NULL, "%s\"%s\"", first ? " (" : ", ", f[c].name);
            first = false;
        }
        a = an;
        b = bn;
    }
    if (!first)
        floe__buf_putc(&v->report, ')', NULL);
}

/* One difference of key e->key into the report (the first REPORT_MAX):
 * kind, the key as JSON, and for "different" the columns (x, y: the rows). */
static void note(vtable *v, const char *kind, const entry *x, const entry *y)
{
    if (v->reported++ >= REPORT_MAX)
        return;
    v->shown++;
    const floe__schema *ks = v->key_schema ? v->key_schema : v->t->schema;
    floe__buf *j = &v->json;
    floe__buf_reset(j);
    if (floe__datum_to_json(ks, x->key, x->klen, j, NULL) != FLOE_OK)
        floe__buf_reset(j);
    if (j->len > KEY_JSON_MAX)
        j->len = KEY_JSON_MAX;
    floe__buf_printf(&v->report, NULL, "%s%s %.*s", v->report.len ? ", " : "", kind,
                     (int)j->len, (const char *)j->data);
    if (y)
        differing_columns(v, x, y);
}

/* The entries [i, end) of one key: equal rows of the two sides cancel;
 * what is left of Postgres is missing, of Iceberg extra, both: different. */
static void match_key(vtable *v, size_t i, size_t end)
{
    uint64_t plus = 0, minus = 0;
    const entry *p = NULL, *q = NULL;       /* a row left on each side */
    for (size_t j = i; j < end;) {
        size_t k = j;
        int64_t net = 0;
        for (; k < end && v->e[k].rlen == v->e[j].rlen &&
               memcmp(v->e[k].row, v->e[j].row, v->e[j].rlen) == 0; k++)
            net += v->e[k].side == PG ? 1 : -1;
        if (net > 0) {
            plus += (uint64_t)net;
            p = p ? p : &v->e[j];
        } else if (net < 0) {
            minus += (uint64_t)-net;
            q = q ? q : &v->e[j];
        }
        j = k;
    }
    uint64_t pairs = plus < minus ? plus : minus;
    v->different += pairs;
    v->missing += plus - pairs;
    v->extra += minus - pairs;
    if (pairs)
        note(v, "different", p, q);
    else if (plus)
        note(v, "missing", p, NULL);
    else if (minus)
        note(v, "extra", q, NULL);
}

static int match_held(vtable *v, floe_error *err)
{
    (void)err;
    for (size_t i = 0; i < v->n; i++) {
        v->e[i].key = v->held.data + v->e[i].off;
        v->e[i].row = v->e[i].key + v->e[i].klen;
    }
    if (v->n)
        qsort(v->e, v->n, sizeof *v->e, by_key_row_side);
    for (size_t i = 0; i < v->n;) {
        size_t end = i + 1;
        while (end < v->n && cmp_bytes(v->e[end].key, v->e[end].klen, v->e[i].key,
                                       v->e[i].klen) == 0)
            end++;
        match_key(v, i, end);
        i = end;
    }
    v->n = 0;
    floe__buf_reset(&v->held);
    return FLOE_OK;
}

static bool same(const digest *a, const digest *b)
{
    return a->n == b->n && a->h1 == b->h1 && a->h2 == b->h2;
}

/* The differing buckets from *next on that one round holds; *any false
 * when none is left.  One-sided buckets are counted without a read once
 * the report is full. */
static void choose_round(vtable *v, uint32_t *next, bool *any)
{
    uint64_t bytes = 0, room = v->reported < REPORT_MAX ? REPORT_MAX - v->reported : 0;
    *any = false;
    memset(v->wanted, 0, BUCKETS);
    for (; *next < BUCKETS; (*next)++) {
        const digest *p = &v->d[PG][*next], *q = &v->d[ICEBERG][*next];
        if (same(p, q))
            continue;
        if (!p->n || !q->n) {                /* all missing or all extra */
            if (!room) {
                v->missing += p->n;
                v->extra += q->n;
                continue;
            }
            room -= p->n + q->n < room ? p->n + q->n : room;
        }
        uint64_t need = p->bytes + q->bytes + (p->n + q->n) * sizeof(entry);
        if (*any && bytes + need > ROUND_BYTES)
            return;
        v->wanted[*next] = 1;
        bytes += need;
        *any = true;
    }
}

static int compare_rows(vtable *v, floe_error *err)
{
    FLOE_FORWARD(read_both(v, false, err));
    uint32_t next = 0;
    for (bool any = true; any;) {
        choose_round(v, &next, &any);
        if (any) {
            FLOE_FORWARD(read_both(v, true, err));
            FLOE_FORWARD(match_held(v, err));
        }
    }
    uint64_t n = v->missing + v->extra + v->different;
    if (n > v->shown && v->shown >= REPORT_MAX)
        floe__buf_printf(&v->report, NULL, ", ... (%" PRIu64 " more)", n - v->shown);
    return FLOE_OK;
}

/* ---- one table -------------------------------------------------------------------------------- */

/* Whether t's columns in the snapshot are those it is mirrored with (names,
 * attnums, and types where the stream told them); else says how into the
 * report. */
static int check_shape(vtable *v, bool *same_shape, floe_error *err)
{
    floe__mcol *cat = NULL;
    size_t n = 0;
    const floe__mtable *t = v->t;
    FLOE_FORWARD(floe__mirror_columns(v->pg, v->pg->vconn, t->relid, t->source, &cat, &n, err));
    *same_shape = n == t->ncols;
    for (size_t i = 0; *same_shape && i < n; i++) {
        const floe__mcol *a = &cat[i], *b = &t->cols[i];
        *same_shape = strcmp(a->name, b->name) == 0 && (!b->attnum || a->attnum == b->attnum) &&
                      (!b->type_oid || (a->type_oid == b->type_oid && a->typmod == b->typmod));
    }
    if (!*same_shape) {
        floe__buf_printf(&v->report, NULL, "columns differ: Postgres has");
        for (size_t i = 0; i < n; i++)
            floe__buf_printf(&v->report, NULL, "%s \"%s\"", i ? "," : "", cat[i].name);
        floe__buf_printf(&v->report, NULL, "; the table is mirrored with");
        for (size_t i = 0; i < t->ncols; i++)
            floe__buf_printf(&v->report, NULL, "%s \"%s\"", i ? "," : "", t->cols[i].name);
        floe__buf_printf(&v->report, NULL, " (an ALTER TABLE the mirror follows at the "
                         "table's next change, or one it has not met yet)");
    }
    floe__mirror_cols_free(cat, n);
    return FLOE_OK;
}

static int vtable_init(vtable *v, floe_pg *pg, floe__mtable *t, uint64_t at, floe_error *err)
{
    *v = (vtable){.pg = pg, .t = t, .at = at};
    floe__buf_init(&v->key, (size_t)1 << 30);
    floe__buf_init(&v->held, HELD_MAX);
    floe__buf_init(&v->json, (size_t)1 << 20);
    floe__buf_init(&v->report, (size_t)1 << 20);
    v->spans = floe__calloc(t->ncols + 1, sizeof *v->spans);
    v->d[PG] = floe__calloc(BUCKETS, sizeof(digest));
    v->d[ICEBERG] = floe__calloc(BUCKETS, sizeof(digest));
    v->wanted = floe__calloc(BUCKETS, 1);
    if (!v->spans || !v->d[PG] || !v->d[ICEBERG] || !v->wanted)
        return FLOE_OOM(err);
    if (!t->nkeys)
        return FLOE_OK;
    const char **names = floe__calloc(t->nkeys, sizeof *names);
    if (!names)
        return FLOE_OOM(err);
    for (size_t k = 0; k < t->nkeys; k++)
        names[k] = t->schema->root.children[t->keys[k]].name;
    int rc = floe__schema_project(t->schema, names, t->nkeys, &v->key_schema, err);
    floe__free(names);
    return rc;
}

static void vtable_clear(vtable *v)
{
    floe_schema_free(v->key_schema);
    floe__free(v->spans);
    floe__free(v->d[PG]);
    floe__free(v->d[ICEBERG]);
    floe__free(v->wanted);
    floe__free(v->e);
    floe__buf_free(&v->key);
    floe__buf_free(&v->held);
    floe__buf_free(&v->json);
    floe__buf_free(&v->report);
}

typedef void (*table_fn)(void *ctx, const floe_pg_verify_table *t);

static int verify_table(floe_pg *pg, floe__mtable *t, uint64_t at, table_fn fn, void *ctx,
                        uint64_t *differences, floe_error *err)
{
    vtable v;
    bool same_shape = false;
    int rc = vtable_init(&v, pg, t, at, err);
    if (rc == FLOE_OK)
        rc = check_shape(&v, &same_shape, err);
    if (rc == FLOE_OK && same_shape)
        rc = compare_rows(&v, err);
    if (rc == FLOE_OK && floe__buf_putc(&v.report, 0, NULL) != FLOE_OK)
        rc = FLOE_OOM(err);
    if (rc == FLOE_OK) {
        floe_pg_verify_table r = {
            .size = sizeof r, .source = t->source, .table = t->ident, .at = at,
            .pg_rows = v.rows[PG],
            .iceberg_rows = v.rows[ICEBERG], .missing = v.missing, .extra = v.extra,
            .different = v.different, .shape_differs = !same_shape,
            .report = (const char *)v.report.data};
        *differences += v.missing + v.extra + v.different + !same_shape;
        if (fn)
            fn(ctx, &r);
    }
    vtable_clear(&v);
    return rc == FLOE_OK ? FLOE_OK : floe__err_wrap(err, rc, "verifying %s", t->source);
}

/* ---- the point ------------------------------------------------------------------------------- */

static int check_tables(const floe_pg *pg, floe_error *err)
{
    for (size_t i = 0; i < pg->ntables; i++) {
        const floe__mtable *t = &pg->tables[i];
        FLOE_RETURN_IF(t->copy, err, FLOE_ESTATE, "%s has no copy in %s yet (it is new to "
                       "this mirror): run floe pg without --verify first, then verify",
                       t->source, t->ident);
        if (t->resync_due)
            return floe__mirror_verify_refuse_resync(t, err);
    }
    return FLOE_OK;
}

/* A temporary slot's snapshot, consistent at C, imported on pg->vconn with
 * every table locked in it; the slot is dropped (the import keeps it). */
static int take_snapshot(floe_pg *pg, uint64_t *at, floe_error *err)
{
    char name[64], snap[96];
    snprintf(name, sizeof name, "floe_verify_%d_%" PRIx64, (int)getpid(),
             (uint64_t)floe__monotonic_ns() & 0xffffffffu);
    floe__pg_conn *repl = NULL;
    int rc = floe__pg_connect(pg->opts.source, true, &repl, err);
    if (rc == FLOE_OK)
        rc = floe__mirror_slot_create(pg, repl, name, true, at, snap, sizeof snap, err);
    if (rc == FLOE_OK)
        rc = floe__pg_connect(pg->opts.source, false, &pg->vconn, err);
    if (rc == FLOE_OK)
        rc = floe__mirror_in_snapshot(pg->vconn, snap, err);
    for (size_t i = 0; rc == FLOE_OK && i < pg->ntables; i++) {
        bool changed = false;
        const floe__mtable *t = &pg->tables[i];
        rc = floe__mirror_hold_table(pg, pg->vconn, t, NULL, &changed, err);
        if (rc == FLOE_OK && changed)
            rc = floe__err_set(err, FLOE_ESTATE, "%s changed shape (ALTER TABLE) as the "
                               "verify began: run it again", t->source);
    }
    floe__pg_close(repl);                    /* drops the temporary slot */
    if (rc != FLOE_OK)
        return rc;
    char lsn[24];
    floe__lsn_format(*at, lsn, sizeof lsn);
    floe__mirror_notice(pg, "verifying at %s (the snapshot of temporary slot %s): every table "
                        "is committed up to it, then compared with Postgres", lsn, name);
    return FLOE_OK;
}

static int check_committed(floe_pg *pg, uint64_t at, floe_error *err)
{
    for (size_t i = 0; i < pg->ntables; i++) {
        floe_sink_stats st;
        floe_sink_stats_get(pg->tables[i].sink, &st, sizeof st);
        bool ok = st.has_committed_frontier && !st.committed_frontier_empty &&
                  st.committed_frontier == at;
        char f[24], c[24];
        floe__lsn_format(st.committed_frontier, f, sizeof f);
        floe__lsn_format(at, c, sizeof c);
        FLOE_RETURN_IF(!ok, err, FLOE_EINTERNAL, "%s is committed up to %s, not at exactly the "
                       "point verified, %s", pg->tables[i].source, f, c);
    }
    return FLOE_OK;
}

int floe_pg_verify(floe_pg *pg, table_fn on_table, void *ctx, uint64_t *at,
                   uint64_t *differences, floe_error *err)
{
    uint64_t c = 0, diffs = 0;
    int rc = check_tables(pg, err);
    if (rc == FLOE_OK)
        rc = take_snapshot(pg, &c, err);
    if (rc == FLOE_OK) {
        pg->verify_at = pg->stop_lsn = c;
        rc = floe__mirror_stream(pg, err);
        pg->streaming = false;
        floe__mirror_publish(pg);
    }
    if (rc == FLOE_OK)
        rc = check_committed(pg, c, err);
    for (size_t i = 0; rc == FLOE_OK && i < pg->ntables; i++)
        rc = verify_table(pg, &pg->tables[i], c, on_table, ctx, &diffs, err);
    if (rc == FLOE_OK)
        rc = floe__pg_exec(pg->vconn, "COMMIT", err);
    floe__pg_close(pg->vconn);               /* a transaction still open rolls back */
    pg->vconn = NULL;
    if (at)
        *at = c;
    if (differences)
        *differences = diffs;
    return rc;
}
