/*
 * mirror_copy.c - the initial copy: each table that records no progress is
 * read with COPY ... TO STDOUT inside transactions that import the
 * snapshot a replication slot exported at consistent point C, and becomes
 * its sink's snapshot batch [C-1, C): every row at time C-1, then one
 * advance to C commits the whole table as one snapshot with frontier [C].
 * The stream then brings every transaction that commits at C or later.
 *
 * Each table is locked (ACCESS SHARE) before it is read, and its catalog
 * rows as the snapshot sees them are compared with the current ones: an
 * ALTER TABLE that committed after the snapshot was taken would make COPY
 * read the table empty (a rewrite is not MVCC-safe) or fail on a column.
 *
 * The copy runs on floe_pg_options.copy_workers threads, each with a
 * connection of its own in the snapshot, taking tasks in order: a table,
 * or one range of a large table's heap pages (a TID range scan, Postgres
 * 14).  Workers convert COPY's lines and write them into the table's
 * snapshot batch in bulk (sink/sink_bulk.c: straight into data files); the
 * calling thread builds the key indexes from what they wrote and commits
 * each table once its tasks are done, while the workers go on.  Memory is
 * bounded: row groups and the index queue are capped, the index spills.
 * A copy cut short (a crash, a stop, an error) commits nothing of the
 * table to main; the ranges it finished are staged on a branch, and the
 * next run copies a keyed table's other ranges only (mirror_stage.c says
 * how and why that is exact), a keyless one whole.  This file owns the
 * plan, the workers and their failures; also the shape check and the COPY
 * statement a resync and a verify share.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "mirror/mirror_internal.h"

#define CHECK_EVERY 65536

static int table_name(const floe__mtable *t, floe__buf *b, floe_error *err)
{
    FLOE_FORWARD(floe__pg_quote_ident(t->nsp, b, err));
    FLOE_FORWARD(floe__buf_putc(b, '.', err));
    return floe__pg_quote_ident(t->rel, b, err);
}

/* COPY t (cols) TO STDOUT; for a partitioned table, which COPY refuses,
 * COPY (SELECT cols FROM t) TO STDOUT (every partition's rows). */
static int copy_sql(const floe__mtable *t, floe__buf *b, floe_error *err)
{
    FLOE_FORWARD(floe__buf_printf(b, err, t->partitioned ? "COPY (SELECT " : "COPY "));
    if (!t->partitioned)
        FLOE_FORWARD(table_name(t, b, err));
    FLOE_FORWARD(floe__buf_printf(b, err, t->partitioned ? "" : " ("));
    for (size_t c = 0; c < t->ncols; c++) {
        if (c)
            FLOE_FORWARD(floe__buf_append(b, ", ", 2, err));
        FLOE_FORWARD(floe__pg_quote_ident(t->cols[c].name, b, err));
    }
    if (t->partitioned) {
        FLOE_FORWARD(floe__buf_printf(b, err, " FROM "));
        FLOE_FORWARD(table_name(t, b, err));
    }
    FLOE_FORWARD(floe__buf_printf(b, err, ") TO STDOUT"));
    return floe__buf_putc(b, 0, err);
}

int floe__mirror_shape(floe__pg_conn *c, const floe__mtable *t, char **out, floe_error *err)
{
    char rel[16];
    snprintf(rel, sizeof rel, "%u", t->relid);
    const char *params[1] = {rel};
    floe__pg_result *r = NULL;
    FLOE_FORWARD(floe__pg_query(c, "SELECT (SELECT xmin::text FROM pg_class WHERE oid = $1) || "
                                "':' || (SELECT string_agg(attnum || ',' || attname || ',' || "
                                "atttypid || ',' || atttypmod || ',' || attisdropped || ',' || "
                                "attnotnull, ';' ORDER BY attnum) FROM pg_attribute WHERE "
                                "attrelid = $1 AND attnum > 0) || coalesce((SELECT ':' || "
                                "string_agg(c.oid || ',' || c.xmin, ';' ORDER BY c.oid) FROM "
                                "pg_partition_tree($1) p JOIN pg_class c ON c.oid = p.relid "
                                "WHERE p.relid <> $1), '')", params, 1, &r, err));
    const char *v = floe__pg_rows(r) ? floe__pg_get(r, 0, 0) : NULL;
    *out = floe__strdup(v ? v : "");
    floe__pg_result_free(r);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

int floe__mirror_hold_table(floe_pg *pg, floe__pg_conn *c, const floe__mtable *t,
                            const char *described, bool *changed, floe_error *err)
{
    floe__buf sql;
    floe__buf_init(&sql, 1 << 16);
    int rc = floe__buf_printf(&sql, err, "LOCK TABLE ");
    if (rc == FLOE_OK)
        rc = floe__pg_quote_ident(t->nsp, &sql, err);
    if (rc == FLOE_OK)
        rc = floe__buf_putc(&sql, '.', err);
    if (rc == FLOE_OK)
        rc = floe__pg_quote_ident(t->rel, &sql, err);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(&sql, err, " IN ACCESS SHARE MODE%c", 0);
    if (rc == FLOE_OK)
        rc = floe__pg_exec(c, (const char *)sql.data, err);
    floe__buf_free(&sql);
    char *then = NULL, *now = NULL;
    if (rc == FLOE_OK)
        rc = floe__mirror_shape(c, t, &then, err);
    if (rc == FLOE_OK)
        rc = floe__mirror_shape(pg->conn, t, &now, err);
    *changed = rc == FLOE_OK && (strcmp(then, now) != 0 || (described && strcmp(then, described)));
    floe__free(then);
    floe__free(now);
    return rc;
}

int floe__mirror_copy_begin(floe__pg_conn *c, const floe__mtable *t, floe_error *err)
{
    floe__buf sql;
    floe__buf_init(&sql, 1 << 20);
    int rc = copy_sql(t, &sql, err);
    if (rc == FLOE_OK)
        rc = floe__pg_copy_begin(c, (const char *)sql.data, err);
    floe__buf_free(&sql);
    return rc;
}

int floe__mirror_copy_some(floe_pg *pg, floe__pg_conn *c, floe__mtable *t, uint64_t time,
                           uint64_t max, bool *done, floe_error *err)
{
    *done = false;
    FLOE_FORWARD(floe__mirror_fit_fields(pg, t->ncols, err));
    for (uint64_t n = 0; n < max; n++) {
        const char *line;
        size_t len;
        int got;
        FLOE_FORWARD(floe__pg_copy_next(c, &line, &len, &got, err));
        if (!got) {
            *done = true;
            return FLOE_OK;
        }
        FLOE_FORWARD(floe__pg_copy_split(line, len, t->ncols, &pg->fields_buf, pg->fields, err));
        FLOE_FORWARD(floe__mirror_copy_row(pg, t, pg->fields, err));
        FLOE_FORWARD(floe_sink_push(t->sink, t->row, time, 1, err));
        t->copied_rows++;
        pg->copy_rows++;
    }
    return FLOE_OK;
}

/* After t's copy failed to commit, or its commit was skipped as covered:
 * whether another process of this mirror committed t's copy meanwhile (t
 * recorded no progress when this run opened it; progress at `at` is this
 * run's own), as FLOE_ESTATE naming it; else FLOE_OK. */
static int another_mirror(floe_pg *pg, floe__mtable *t, uint64_t at, bool *other,
                          floe_error *err)
{
    floe__table *tb = NULL;
    floe__progress p = {.state = FLOE__PROGRESS_NONE};
    if (floe__mirror_open_iceberg(pg, t, &tb, NULL) != FLOE_OK ||
        floe__progress_read(tb->loaded->metadata, tb->io, t->sink_id, &p, NULL) != FLOE_OK)
        p.state = FLOE__PROGRESS_NONE;
    floe__table_free(tb);
    if (p.state != FLOE__PROGRESS_FOUND || (!p.frontier.empty && p.frontier.t == at))
        return FLOE_OK;                   /* nothing, or this run's own commit */
    *other = true;
    char lsn[24];
    floe__lsn_format(p.frontier.t, lsn, sizeof lsn);
    floe_error_clear(err);
    return floe__err_set(err, FLOE_ESTATE, "another floe pg process is mirroring %s into %s in "
                         "the same catalog (slot %s): it committed its own copy of the table, up "
                         "to %s, while this run was copying it.  Nothing of this run's copy is "
                         "committed, and this run stops; the other goes on.  Run one floe pg "
                         "per slot and catalog (a later run resumes from what the table "
                         "records)", t->source, t->ident, pg->slot_name, lsn);
}

/* Commit t's copy (its snapshot batch) at `at`: another process of the
 * mirror that committed it first makes this one fail, whichever of the two
 * copies is newer (the sink skips a batch another run covered). */
static int commit_copy(floe_pg *pg, floe__mtable *t, uint64_t at, bool *other,
                       floe_error *err)
{
    floe_sink_stats before, after;
    floe_sink_stats_get(t->sink, &before, sizeof before);
    int rc = floe__mirror_advance(pg, t, at, err);
    floe_sink_stats_get(t->sink, &after, sizeof after);
    if (rc == FLOE_OK && after.batches_skipped == before.batches_skipped)
        return FLOE_OK;
    int arc = another_mirror(pg, t, at, other, err);
    if (arc != FLOE_OK)
        return arc;
    return rc != FLOE_OK ? rc : floe__err_set(err, FLOE_ESTATE, "%s: its copy was skipped as "
                                              "committed already", t->ident);
}

/* ---- the copy's plan: tables, their ranges ------------------------------------------------ */

#define DEFAULT_WORKERS 2
#define MIN_RANGE_PAGES 8192
#define RANGES_PER_WORKER 4
#define HEAP_PER_FILE_BYTE 4              /* heap bytes per byte of Parquet, at least */
#define PAGE_BYTES 8192                   /* Postgres's usual block size */
#define WAIT_MS 100

typedef struct copy_table {
    floe__mtable *t;
    floe__bulk *bulk;
    size_t ntasks;
    _Atomic uint64_t rows;            /* written so far (workers add) */
    _Atomic uint64_t restaged;        /* of them, from staged files */
    uint64_t t0;                      /* monotonic ns */
    floe__mstage *stage;              /* resuming: what was staged, the keys changed since */
    char *shape;                      /* staging: its catalog rows in the snapshot */
    uint64_t per, nranges;            /* staging: the plan */
    bool *done;                       /* staging: per range, staged */
} copy_table;

typedef enum { TASK_RANGE, TASK_FILE, TASK_KEYS } task_kind;

typedef struct copy_task {
    copy_table *table;
    task_kind kind;
    uint64_t lo, hi;                  /* heap pages [lo, hi); hi 0: to the end */
    bool ranged;                      /* false: the whole table */
    uint64_t tag;                     /* its part's: the range's number */
    size_t item;                      /* TASK_FILE: a staged file; TASK_KEYS: a query */
} copy_task;

typedef struct copy_job {
    floe_pg *pg;                      /* workers read its options only */
    const char *snapshot;
    copy_table *tables;
    size_t ntables;
    copy_task *tasks;
    size_t ntasks;
    pthread_mutex_t mu;
    /* under mu */
    size_t next;                      /* the next task to take */
    bool failed;                      /* a worker failed, or the copy stops */
    int rc;                           /* the first worker failure */
    floe_error *err;
} copy_job;

typedef struct copy_worker {
    copy_job *job;
    pthread_t thread;
    bool started;
    floe__pg_conn *c;
    floe__buf fields_buf, scratch, row, sql, key;
    floe__pg_field *fields;
    size_t cap_fields;
    floe_error *err;
} copy_worker;

static int copy_workers(const floe_pg *pg)
{
    return pg->opts.copy_workers > 0 ? pg->opts.copy_workers : DEFAULT_WORKERS;
}

/* t's heap pages as c sees them (the size now: a range past the last
 * page reads nothing, and the last range has no upper bound) and its
 * estimated rows (pg_class.reltuples; 0 when never counted). */
static int heap_size(floe__pg_conn *c, const floe__mtable *t, uint64_t *pages, uint64_t *rows,
                     floe_error *err)
{
    char rel[16];
    snprintf(rel, sizeof rel, "%u", t->relid);
    const char *params[1] = {rel};
    floe__pg_result *r = NULL;
    FLOE_FORWARD(floe__pg_query(c, "SELECT pg_relation_size(oid) / "
                                "current_setting('block_size')::bigint, "
                                "greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = $1",
                                params, 1, &r, err));
    const char *p = floe__pg_rows(r) ? floe__pg_get(r, 0, 0) : NULL;
    const char *n = floe__pg_rows(r) ? floe__pg_get(r, 0, 1) : NULL;
    *pages = p ? strtoull(p, NULL, 10) : 0;
    *rows = n ? strtoull(n, NULL, 10) : 0;
    floe__pg_result_free(r);
    return FLOE_OK;
}

uint64_t floe__mirror_range_pages(uint64_t pages, int workers, uint64_t target_file_size)
{
    uint64_t fill = target_file_size * HEAP_PER_FILE_BYTE / PAGE_BYTES;
    uint64_t share = pages / (uint64_t)workers + 1;
    uint64_t size = pages / ((uint64_t)workers * RANGES_PER_WORKER) + 1;
    if (size < fill)
        size = fill < share ? fill : share;
    return size < MIN_RANGE_PAGES ? MIN_RANGE_PAGES : size;
}

/* How many page ranges t is copied in (floe__mirror_range_pages says how
 * large): one unless the server scans TID ranges (Postgres 14) and t is
 * large enough for several. */
static void plan_ranges(const floe_pg *pg, const copy_table *ct, uint64_t pages, uint64_t *n,
                        uint64_t *per)
{
    *n = 1;
    *per = 0;
    int workers = copy_workers(pg);
    if (ct->t->partitioned || pg->server_version < 140000 ||
        (workers < 2 && !pg->opts.copy_range_pages))
        return;
    uint64_t size = pg->opts.copy_range_pages;
    if (!size)
        size = floe__mirror_range_pages(pages, workers, floe__bulk_target_file_size(ct->bulk));
    *per = size;
    *n = pages / size + 1;
}

/* Lock t in the snapshot, check its shape, read its partitions and size,
 * and open its snapshot batch in bulk at at - 1. */
static int prepare_table(floe_pg *pg, copy_table *ct, uint64_t at, uint64_t *pages,
                         floe_error *err)
{
    floe__mtable *t = ct->t;
    ct->t0 = floe__monotonic_ns();
    bool changed = false;
    int rc = floe__mirror_hold_table(pg, pg->rconn, t, t->shape, &changed, err);
    if (rc == FLOE_OK && changed) {
        pg->reopen = true;               /* floe_pg_run copies it again, from a new snapshot */
        rc = floe__err_set(err, FLOE_ECONFLICT, "%s changed (an ALTER TABLE or a TRUNCATE "
                           "committed) after the snapshot its copy is read in was taken: that "
                           "snapshot would show it in another shape, or empty; copying it again "
                           "from a new snapshot", t->source);
    }
    if (rc == FLOE_OK)
        rc = floe__mirror_part_read(pg, pg->rconn, t, err);      /* as the copy sees them */
    uint64_t rows = 0;
    if (rc == FLOE_OK)
        rc = heap_size(pg->rconn, t, pages, &rows, err);
    if (rc == FLOE_OK)
        rc = floe_sink_set_as_of(t->sink, at - 1, err);
    if (rc == FLOE_OK)
        rc = floe__bulk_begin(t->sink, at - 1, (size_t)copy_workers(pg), rows, &ct->bulk, err);
    return rc;
}

static int add_task(copy_job *job, size_t *cap, copy_task k, floe_error *err)
{
    if (job->ntasks == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        copy_task *tk = floe__realloc(job->tasks, *cap * sizeof *tk);
        FLOE_RETURN_IF(!tk, err, FLOE_ENOMEM, "out of memory");
        job->tasks = tk;
    }
    job->tasks[job->ntasks++] = k;
    k.table->ntasks++;
    return FLOE_OK;
}

/* A resumed table's tasks: its staged files, the ranges not staged, the
 * rows of the keys changed since. */
static int plan_resume(copy_job *job, copy_table *ct, size_t *cap, floe_error *err)
{
    const floe__mstage *st = ct->stage;
    for (size_t i = 0; i < st->nfiles; i++)
        FLOE_FORWARD(add_task(job, cap, (copy_task){ct, TASK_FILE, 0, 0, false, 0, i}, err));
    for (uint64_t r = 0; r < st->nranges; r++)
        if (!st->done[r])
            FLOE_FORWARD(add_task(job, cap, (copy_task){ct, TASK_RANGE, r * st->per,
                                                        r + 1 < st->nranges ? (r + 1) * st->per
                                                                            : 0,
                                                        true, r, 0}, err));
    for (size_t q = 0; q < floe__mirror_stage_key_queries(st); q++)
        FLOE_FORWARD(add_task(job, cap, (copy_task){ct, TASK_KEYS, 0, 0, false, 0, q}, err));
    return FLOE_OK;
}

/* A ranged table with a key has its finished ranges staged as they come
 * (on a branch of its own: one an earlier copy left goes first).  A table
 * keyed by the whole row is never resumed, so nothing of it is staged. */
static int stage_ranges(floe_pg *pg, copy_table *ct, uint64_t per, uint64_t n, floe_error *err)
{
    if (!ct->t->nkeys)
        return FLOE_OK;
    if (floe__sink_drop_branch(ct->t->sink, FLOE__MIRROR_COPY_BRANCH, err) != FLOE_OK) {
        floe__mirror_warn(pg, "%s: its copy is not staged (a kill starts it over): %s",
                          ct->t->source, floe_error_message(err));
        floe_error_clear(err);
        return FLOE_OK;
    }
    ct->per = per;
    ct->nranges = n;
    ct->done = floe__calloc(n, sizeof *ct->done);
    if (!ct->done)
        return FLOE_OOM(err);
    FLOE_FORWARD(floe__mirror_shape(pg->rconn, ct->t, &ct->shape, err));
    floe__bulk_stage_to(ct->bulk, FLOE__MIRROR_COPY_BRANCH);
    return FLOE_OK;
}

static int plan(floe_pg *pg, copy_job *job, uint64_t at, floe_error *err)
{
    size_t n = 0;
    for (size_t i = 0; i < pg->ntables; i++)
        n += pg->tables[i].copy;
    job->tables = floe__calloc(n ? n : 1, sizeof *job->tables);
    FLOE_RETURN_IF(!job->tables, err, FLOE_ENOMEM, "out of memory");
    size_t cap = 0;
    for (size_t i = 0; i < pg->ntables; i++) {
        if (!pg->tables[i].copy)
            continue;
        copy_table *ct = &job->tables[job->ntables++];
        ct->t = &pg->tables[i];
        uint64_t pages = 0, ranges = 1, per = 0;
        FLOE_FORWARD(prepare_table(pg, ct, at, &pages, err));
        FLOE_FORWARD(floe__mirror_stage_resume(pg, ct->t, at, &ct->stage, err));
        if (ct->stage) {
            FLOE_FORWARD(plan_resume(job, ct, &cap, err));
            continue;
        }
        plan_ranges(pg, ct, pages, &ranges, &per);
        if (ranges > 1)
            FLOE_FORWARD(stage_ranges(pg, ct, per, ranges, err));
        for (uint64_t r = 0; r < ranges; r++)
            FLOE_FORWARD(add_task(job, &cap, (copy_task){ct, TASK_RANGE, r * per,
                                                         r + 1 < ranges ? (r + 1) * per : 0,
                                                         ranges > 1, r, 0}, err));
    }
    return FLOE_OK;
}

/* ---- the workers -------------------------------------------------------------------------- */

int floe__mirror_select_sql(const floe__mtable *t, floe__buf *b, floe_error *err)
{
    FLOE_FORWARD(floe__buf_printf(b, err, "COPY (SELECT "));
    for (size_t c = 0; c < t->ncols; c++) {
        if (c)
            FLOE_FORWARD(floe__buf_append(b, ", ", 2, err));
        FLOE_FORWARD(floe__pg_quote_ident(t->cols[c].name, b, err));
    }
    FLOE_FORWARD(floe__buf_printf(b, err, " FROM "));
    return table_name(t, b, err);
}

/* COPY (SELECT cols FROM t WHERE ctid >= '(lo,0)' AND ctid < '(hi,0)') TO
 * STDOUT: a TID range scan of those pages (Postgres 14). */
static int range_sql(const copy_task *k, floe__buf *b, floe_error *err)
{
    const floe__mtable *t = k->table->t;
    floe__buf_reset(b);
    if (k->kind == TASK_KEYS) {
        size_t lo, hi;
        floe__mirror_stage_key_range(k->table->stage, k->item, &lo, &hi);
        return floe__mirror_stage_keys_sql(k->table->stage, t, lo, hi, b, err);
    }
    if (!k->ranged) {
        FLOE_FORWARD(copy_sql(t, b, err));
        return FLOE_OK;
    }
    FLOE_FORWARD(floe__mirror_select_sql(t, b, err));
    if (k->lo)
        FLOE_FORWARD(floe__buf_printf(b, err, " WHERE ctid >= '(%" PRIu64 ",0)'::tid", k->lo));
    if (k->hi)
        FLOE_FORWARD(floe__buf_printf(b, err, " %s ctid < '(%" PRIu64 ",0)'::tid",
                                      k->lo ? "AND" : "WHERE", k->hi));
    FLOE_FORWARD(floe__buf_printf(b, err, ") TO STDOUT"));
    return floe__buf_putc(b, 0, err);
}

static bool job_failed(copy_job *job)
{
    pthread_mutex_lock(&job->mu);
    bool f = job->failed;
    pthread_mutex_unlock(&job->mu);
    return f;
}

static int fit_fields(copy_worker *w, size_t n, floe_error *err)
{
    if (n <= w->cap_fields)
        return FLOE_OK;
    floe__pg_field *f = floe__realloc(w->fields, n * sizeof *f);
    if (!f)
        return FLOE_OOM(err);
    w->fields = f;
    w->cap_fields = n;
    return FLOE_OK;
}

/* Whether a row goes into the copy: resuming, a row of a key changed
 * since the staged ranges were read is taken only as the query of such
 * keys (changed) reads it. */
static int wanted(copy_worker *w, const copy_table *ct, const uint8_t *row, size_t len,
                  bool changed, bool *keep, floe_error *err)
{
    *keep = true;
    if (!ct->stage)
        return FLOE_OK;
    FLOE_FORWARD(floe__mirror_bytes_key(ct->t, row, len, &w->key, err));
    *keep = floe__mirror_stage_changed(ct->stage, w->key.data, w->key.len) == changed;
    return FLOE_OK;
}

/* The lines of the running COPY into part p (changed: of TASK_KEYS). */
static int copy_lines(copy_worker *w, copy_table *ct, floe__bulk_part *p, bool changed,
                      floe_error *err)
{
    const floe__mtable *t = ct->t;
    FLOE_FORWARD(fit_fields(w, t->ncols, err));
    uint64_t n = 0;
    for (;;) {
        const char *line;
        size_t len;
        int got;
        FLOE_FORWARD(floe__pg_copy_next(w->c, &line, &len, &got, err));
        if (got) {
            FLOE_FORWARD(floe__pg_copy_split(line, len, t->ncols, &w->fields_buf, w->fields,
                                             err));
            FLOE_FORWARD(floe__mirror_copy_fields(t, w->fields, &w->scratch, &w->row, err));
            bool keep;
            FLOE_FORWARD(wanted(w, ct, w->row.data, w->row.len, changed, &keep, err));
            if (keep)
                FLOE_FORWARD(floe__bulk_part_write(p, w->row.data, w->row.len, err));
            n += keep;
        }
        if (!got || n == CHECK_EVERY) {
            atomic_fetch_add_explicit(&ct->rows, n, memory_order_relaxed);
            n = 0;
            FLOE_RETURN_IF(got && job_failed(w->job), err, FLOE_EINTERRUPTED,
                           "the copy stopped");
        }
        if (!got)
            return FLOE_OK;
    }
}

/* A staged file's rows, read back, into a part: those of keys not
 * changed since. */
typedef struct restage {
    copy_worker *w;
    copy_table *ct;
    floe__bulk_part *p;
    uint64_t n;
} restage;

static int restage_row(void *ctx, const uint8_t *row, size_t len, uint64_t pos,
                       floe_error *err)
{
    (void)pos;
    restage *r = ctx;
    bool keep;
    FLOE_FORWARD(wanted(r->w, r->ct, row, len, false, &keep, err));
    if (keep)
        FLOE_FORWARD(floe__bulk_part_write(r->p, row, len, err));
    r->n += keep;
    if (r->n == CHECK_EVERY) {
        atomic_fetch_add_explicit(&r->ct->rows, r->n, memory_order_relaxed);
        atomic_fetch_add_explicit(&r->ct->restaged, r->n, memory_order_relaxed);
        r->n = 0;
        FLOE_RETURN_IF(job_failed(r->w->job), err, FLOE_EINTERRUPTED, "the copy stopped");
    }
    return FLOE_OK;
}

static int copy_file(copy_worker *w, const copy_task *k, floe__bulk_part *p, floe_error *err)
{
    restage r = {w, k->table, p, 0};
    const char *path = k->table->stage->files[k->item];
    FLOE_FORWARD(floe__file_rows_each(w->job->pg->io, path, k->table->t->schema, restage_row, &r,
                                      err));
    atomic_fetch_add_explicit(&k->table->rows, r.n, memory_order_relaxed);
    atomic_fetch_add_explicit(&k->table->restaged, r.n, memory_order_relaxed);
    return FLOE_OK;
}

static int copy_task_run(copy_worker *w, const copy_task *k, floe_error *err)
{
    floe__bulk_part *p = NULL;
    FLOE_FORWARD(floe__bulk_part_new(k->table->bulk, k->tag, &p, err));
    int rc = FLOE_OK;
    if (k->kind == TASK_FILE) {
        rc = copy_file(w, k, p, err);
    } else {
        rc = range_sql(k, &w->sql, err);
        if (rc == FLOE_OK)
            rc = floe__pg_copy_begin(w->c, (const char *)w->sql.data, err);
        if (rc == FLOE_OK)
            rc = copy_lines(w, k->table, p, k->kind == TASK_KEYS, err);
    }
    if (rc == FLOE_OK)
        rc = floe__bulk_part_finish(p, err);
    floe__bulk_part_free(p);
    if (rc == FLOE_OK || rc == FLOE_EINTERRUPTED)
        return rc;
    char pages[64] = "";
    if (k->kind == TASK_FILE)
        snprintf(pages, sizeof pages, ", a file staged on branch %s", FLOE__MIRROR_COPY_BRANCH);
    else if (k->kind == TASK_KEYS)
        snprintf(pages, sizeof pages, ", the rows of keys changed since its ranges were staged");
    else if (k->ranged && k->hi)
        snprintf(pages, sizeof pages, ", pages %" PRIu64 " to %" PRIu64, k->lo, k->hi - 1);
    else if (k->ranged)
        snprintf(pages, sizeof pages, ", pages %" PRIu64 " to the end", k->lo);
    return floe__err_wrap(err, rc, "the initial copy of %s%s (nothing of it is committed; the "
                          "next run copies it again)", k->table->t->source, pages);
}

/* Take the next task; NULL when none is left or the copy stops. */
static const copy_task *take_task(copy_job *job)
{
    pthread_mutex_lock(&job->mu);
    const copy_task *k = job->failed || job->next == job->ntasks ? NULL
                                                                  : &job->tasks[job->next++];
    pthread_mutex_unlock(&job->mu);
    return k;
}

/* A worker's failure: the job's, unless another came first. */
static void worker_failed(copy_job *job, int rc, floe_error *err)
{
    pthread_mutex_lock(&job->mu);
    if (!job->failed) {
        job->failed = true;
        job->rc = rc;
        floe__err_move(job->err, err);
    }
    pthread_mutex_unlock(&job->mu);
}

static void *worker_main(void *arg)
{
    copy_worker *w = arg;
    copy_job *job = w->job;
    int rc = floe__pg_connect(job->pg->opts.source, false, &w->c, w->err);
    if (rc == FLOE_OK)
        rc = floe__mirror_in_snapshot(w->c, job->snapshot, w->err);
    if (rc != FLOE_OK) {
        worker_failed(job, rc, w->err);
        return NULL;
    }
    for (const copy_task *k; (k = take_task(job));) {
        rc = copy_task_run(w, k, w->err);
        if (rc != FLOE_OK) {
            worker_failed(job, rc, w->err);
            break;
        }
    }
    return NULL;
}

static void worker_free(copy_worker *w)
{
    floe__pg_close(w->c);                 /* a COPY cut short or a transaction goes with it */
    floe__buf_free(&w->fields_buf);
    floe__buf_free(&w->scratch);
    floe__buf_free(&w->row);
    floe__buf_free(&w->sql);
    floe__buf_free(&w->key);
    floe__free(w->fields);
    floe_error_free(w->err);
}

/* ---- the sink's thread: index, commit ---------------------------------------------------- */

/* The copy stops: no more tasks, and parts waiting for room give up.
 * rc (not FLOE_OK) and err: the failure, unless a worker's came first. */
static void stop_all(copy_job *job, int rc, floe_error *err)
{
    pthread_mutex_lock(&job->mu);
    if (!job->failed && rc != FLOE_OK) {
        job->failed = true;
        job->rc = rc;
        floe__err_move(job->err, err);
    }
    pthread_mutex_unlock(&job->mu);
    for (size_t i = 0; i < job->ntables; i++)
        if (job->tables[i].bulk)
            floe__bulk_cancel(job->tables[i].bulk);
}

static uint64_t rows_so_far(copy_job *job)
{
    uint64_t n = 0;
    for (size_t i = 0; i < job->ntables; i++)
        n += atomic_load_explicit(&job->tables[i].rows, memory_order_relaxed);
    return n;
}

/* Index ct's rows as its workers write them, until every range is done. */
static int index_table(copy_job *job, copy_table *ct, uint64_t at, uint64_t base,
                       floe_error *err)
{
    for (;;) {
        size_t finished = 0;
        FLOE_FORWARD(floe__bulk_index(ct->bulk, WAIT_MS, &finished, err));
        if (ct->done)
            FLOE_FORWARD(floe__mirror_stage_record(job->pg, ct->t, ct->bulk, at, ct->shape,
                                                   ct->per, ct->nranges, ct->done, err));
        job->pg->copy_rows = base + rows_so_far(job);
        floe__mirror_publish(job->pg);
        if (job_failed(job))
            return FLOE_OK;                        /* the worker's error is the job's */
        if (finished == ct->ntasks)                /* a part per task */
            return FLOE_OK;
        FLOE_RETURN_IF(floe__mirror_stopping(job->pg), err, FLOE_EINTERRUPTED,
                       "stopped during the copy");
    }
}

static int copy_one(floe_pg *pg, copy_job *job, copy_table *ct, uint64_t at, uint64_t base,
                      floe_error *err)
{
    floe__mtable *t = ct->t;
    int rc = index_table(job, ct, at, base, err);
    if (rc == FLOE_OK && job_failed(job))
        return FLOE_OK;
    if (rc == FLOE_OK)
        rc = floe__bulk_seal(ct->bulk, err);
    t->copied_rows = floe__bulk_rows(ct->bulk);
    bool other = false;                                   /* another process committed it */
    if (rc == FLOE_OK)
        rc = commit_copy(pg, t, at, &other, err);         /* the snapshot batch commits */
    if (rc != FLOE_OK && !other)
        return floe__err_wrap(err, rc, "the initial copy of %s (nothing of it is committed; "
                              "the next run copies it again)", t->source);
    if (rc != FLOE_OK)
        return rc;
    t->input = t->start = at;
    t->copy = false;
    t->copied = true;
    t->last_commit_ns = floe__monotonic_ns();
    pg->tables_copied++;
    char lsn[24], resumed[96] = "";
    floe__lsn_format(at, lsn, sizeof lsn);
    size_t ranges = ct->ntasks;
    if (ct->stage) {
        ranges = (size_t)(ct->stage->nranges - ct->stage->ndone);
        snprintf(resumed, sizeof resumed, "; resumed: %llu rows from %zu ranges staged before",
                 (unsigned long long)atomic_load(&ct->restaged), ct->stage->ndone);
    }
    floe__mirror_notice(pg, "copied %s: %llu rows into %s in %.1fs (%zu range%s%s), committed "
                        "at %s", t->source, (unsigned long long)t->copied_rows, t->ident,
                        (double)(floe__monotonic_ns() - ct->t0) / 1e9, ranges,
                        ranges == 1 ? "" : "s", resumed, lsn);
    if (floe__sink_drop_branch(t->sink, FLOE__MIRROR_COPY_BRANCH, err) != FLOE_OK) {
        floe__mirror_warn(pg, "%s: %s (the branch holds nothing main needs: drop it by hand)",
                          t->ident, floe_error_message(err));
        floe_error_clear(err);
    }
    floe__mirror_publish(pg);
    return FLOE_OK;
}

int floe__mirror_in_snapshot(floe__pg_conn *c, const char *snapshot, floe_error *err)
{
    floe__buf sql;
    floe__buf_init(&sql, 4096);
    int rc = floe__buf_printf(&sql, err, "SET TRANSACTION SNAPSHOT ");
    if (rc == FLOE_OK)
        rc = floe__pg_quote_literal(snapshot, &sql, err);
    if (rc == FLOE_OK)
        rc = floe__buf_putc(&sql, 0, err);
    if (rc == FLOE_OK)
        rc = floe__pg_exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", err);
    if (rc == FLOE_OK)
        rc = floe__pg_exec(c, (const char *)sql.data, err);
    floe__buf_free(&sql);
    /* invalid_parameter_value: the snapshot is gone, with the connection
     * that exported it (a lost connection, or a walsender that ended):
     * the copy starts again from a new one once floe has reconnected */
    if (rc != FLOE_OK && strcmp(floe__pg_sqlstate(c), "22023") == 0)
        rc = floe__err_recode(err, FLOE_ENET, "the snapshot %s the copy reads in is gone (the "
                            "connection that exported it was lost)", snapshot);
    return rc;
}

/* The workers, at most one per task, each on a connection of its own in
 * the snapshot.  *n: those started. */
static int start_workers(copy_job *job, copy_worker *ws, size_t want, size_t *n,
                         floe_error *err)
{
    *n = 0;
    for (size_t i = 0; i < want; i++) {
        copy_worker *w = &ws[i];
        w->job = job;
        floe__buf_init(&w->fields_buf, (size_t)1 << 30);
        floe__buf_init(&w->scratch, (size_t)1 << 30);
        floe__buf_init(&w->row, (size_t)1 << 31);
        floe__buf_init(&w->sql, (size_t)1 << 30);
        floe__buf_init(&w->key, (size_t)1 << 30);
        w->err = floe_error_new();
        FLOE_RETURN_IF(!w->err, err, FLOE_ENOMEM, "out of memory");
        *n = i + 1;
        int e = pthread_create(&w->thread, NULL, worker_main, w);
        FLOE_RETURN_IF(e, err, FLOE_EIO, "starting a copy worker: %s", strerror(e));
        w->started = true;
    }
    return FLOE_OK;
}

static void job_free(copy_job *job)
{
    for (size_t i = 0; i < job->ntables; i++) {
        floe__bulk_free(job->tables[i].bulk);
        floe__mirror_stage_free(job->tables[i].stage);
        floe__free(job->tables[i].shape);
        floe__free(job->tables[i].done);
    }
    floe__free(job->tables);
    floe__free(job->tasks);
    floe_error_free(job->err);
    pthread_mutex_destroy(&job->mu);
}

/* Commit each table as its ranges are done, in order (the workers go on
 * with the next tables meanwhile). */
static int copy_tables(floe_pg *pg, copy_job *job, uint64_t at, floe_error *err)
{
    uint64_t base = pg->copy_rows;
    for (size_t i = 0; i < job->ntables; i++) {
        FLOE_FORWARD(copy_one(pg, job, &job->tables[i], at, base, err));
        if (job_failed(job))
            return FLOE_OK;
    }
    return FLOE_OK;
}

static int copy_job_run(floe_pg *pg, copy_job *job, uint64_t at, floe_error *err)
{
    int rc = plan(pg, job, at, err);
    size_t want = (size_t)copy_workers(pg), n = 0;
    if (want > job->ntasks)
        want = job->ntasks;
    copy_worker *ws = floe__calloc(want ? want : 1, sizeof *ws);
    if (rc == FLOE_OK && !ws)
        rc = FLOE_OOM(err);
    if (rc == FLOE_OK)
        rc = start_workers(job, ws, want, &n, err);
    if (rc == FLOE_OK)
        rc = copy_tables(pg, job, at, err);
    if (rc != FLOE_OK || job_failed(job))
        stop_all(job, rc, err);                /* workers waiting for room wake up */
    for (size_t i = 0; i < n; i++) {
        if (ws[i].started)
            pthread_join(ws[i].thread, NULL);
        worker_free(&ws[i]);
    }
    floe__free(ws);
    pthread_mutex_lock(&job->mu);
    if (job->failed) {                         /* the first failure, a worker's or ours */
        rc = job->rc;
        floe__err_move(err, job->err);
    }
    pthread_mutex_unlock(&job->mu);
    return rc;
}

int floe__mirror_copy(floe_pg *pg, const char *snapshot, uint64_t at, floe_error *err)
{
    /* the snapshot on a connection of its own: pg->conn sees the catalog
     * now; it holds the tables' locks until every range is copied */
    copy_job job = {.pg = pg, .snapshot = snapshot, .err = floe_error_new()};
    pthread_mutex_init(&job.mu, NULL);
    int rc = job.err ? FLOE_OK : FLOE_OOM(err);
    if (rc == FLOE_OK)
        rc = floe__pg_connect(pg->opts.source, false, &pg->rconn, err);
    if (rc == FLOE_OK)
        rc = floe__mirror_in_snapshot(pg->rconn, snapshot, err);
    if (rc == FLOE_OK)
        rc = copy_job_run(pg, &job, at, err);
    if (rc == FLOE_OK)
        rc = floe__pg_exec(pg->rconn, "COMMIT", err);
    floe__pg_close(pg->rconn);           /* a transaction still open rolls back */
    pg->rconn = NULL;
    job_free(&job);
    return rc;
}
