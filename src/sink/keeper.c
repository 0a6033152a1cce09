/*
 * keeper.c - the key index kept true to the table (keeper_internal.h).
 *
 * Open: load the checkpoint and verify that its snapshot is on main's
 * history; then, snapshot by snapshot after it, apply this sink's logged
 * attempt when the snapshot carries its token (floe.attempt-id), else read
 * what the snapshot changed.  Without a usable checkpoint: rebuild from the
 * current snapshot's files, and checkpoint at once so later logs have a
 * base.
 *
 * Reading what a snapshot changed ("sync"): removed data files are retired;
 * added data files, and the data files whose DV or position deletes were
 * added or removed, are indexed again from the snapshot's plan (positions
 * do not change, the rows their deletes leave do); equality deletes on the
 * key take the keys' rows from the other files; anything else (equality
 * deletes on other columns, removed equality deletes, unscoped position
 * deletes removed) re-reads every file.  After every re-read the delete
 * records of the batch being committed and of the open batches are fixed:
 * a record on a re-read file takes its row out again; a record on a file
 * that is gone follows its key to the row's new file (a compaction) or is
 * dropped when the key has no committed row left (another writer deleted
 * it).  A compaction by the sink's own maintenance is not read: it left
 * its moves (moves.c), by which the rows and the records are re-pointed
 * (sync_moved).  When main's history no longer leads back to the index's
 * snapshot (a rollback; expiry of the snapshots in between) but that snapshot is
 * still in the table (the sink's tag keeps it), the two snapshots' plans
 * are compared instead: files only in the old one are retired, files new
 * or with other deletes are read again.  Without it, every file is read.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "sink/keeper_internal.h"

#define MAX_HISTORY 10000000
#define CHECKPOINT_AFTER ((uint64_t)64 << 20)   /* log bytes, or half the checkpoint */

struct floe__keeper {
    const floe__keeper_config *cfg;
    floe__kx *kx;
    floe__kx_store *store;
    int64_t synced_to;               /* the snapshot the index reflects, -1: none */
    floe__posdel_set *deletes;       /* the last prepare's */
    floe__moves *rewrites;           /* copy-on-write attempts' moves, by attempt id */
    bool dirty;                      /* changed since the last checkpoint */
    bool unlogged;                   /* the last attempt was too big to log: checkpoint */
    int64_t checkpoint_ms;           /* when the last checkpoint was written (wall clock) */
    floe__kx_ckpt *streamed;         /* a checkpoint written as a bulk batch is indexed */
    floe__keeper_stats stats;
};

/* What a sync keeps right besides the table: the batch being committed and
 * the open ones (either may be NULL). */
typedef struct pending {
    floe__sealed *s;
    floe__writer *w;
} pending;

static const floe__metadata *table_md(const floe__keeper *k)
{
    return k->cfg->table->loaded->metadata;
}

/* ---- main's history ------------------------------------------------------------------------ */

/* The snapshots of main after `from` (-1: all), oldest first, and *on;
 * *on false (and no list) when `from` is not on main's history as far as
 * the metadata reaches. */
static int history_since(const floe__metadata *md, int64_t from, int64_t **ids, size_t *n,
                         bool *on, floe_error *err)
{
    *ids = NULL;
    *n = 0;
    *on = false;
    size_t cap = 0;
    for (int64_t id = floe__metadata_current_snapshot_id(md); id != from;) {
        const floe__snapshot *s = id < 0 ? NULL : floe__metadata_snapshot_by_id(md, id);
        if (!s || *n >= MAX_HISTORY) {      /* from is not an ancestor (or expired): */
            floe__free(*ids);               /* no list, the caller compares or rebuilds */
            *ids = NULL;
            *n = 0;
            return FLOE_OK;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            int64_t *v = floe__realloc(*ids, cap * sizeof *v);
            if (!v) {
                floe__free(*ids);
                *ids = NULL;
                return FLOE_OOM(err);
            }
            *ids = v;
        }
        (*ids)[(*n)++] = id;
        id = s->has_parent ? s->parent_snapshot_id : -1;
    }
    for (size_t i = 0; i < *n / 2; i++) {
        int64_t t = (*ids)[i];
        (*ids)[i] = (*ids)[*n - 1 - i];
        (*ids)[*n - 1 - i] = t;
    }
    *on = true;
    return FLOE_OK;
}

/* ---- delete records ------------------------------------------------------------------------- */

typedef struct moving moving;

typedef struct fixing {
    floe__keeper *k;
    const floe__pathmap *reread;     /* paths indexed again just now */
    const moving *moved;             /* or: rows moved by the sink's own compaction */
} fixing;

static void put_record(uint8_t *p, uint32_t slot, floe__kx_loc loc)
{
    floe__put_le32(p, slot);
    floe__put_le64(p + 4, loc.pos);
    floe__put_le64(p + 12, loc.rowhash);
}

static int move_record(const moving *mv, floe__delrecs *d, uint8_t *p, floe_error *err);

/* One record after a re-read: see the file comment. */
static int fix_record(fixing *f, floe__delrecs *d, uint8_t *p, floe_error *err)
{
    floe__keeper *k = f->k;
    uint32_t slot = floe__get_le32(p), klen = floe__get_le32(p + 20);
    const uint8_t *key = p + FLOE__DELETE_HEAD;
    if (slot == FLOE__DELETE_DROPPED)
        return FLOE_OK;
    if (f->moved)
        return move_record(f->moved, d, p, err);
    const char *path = d->paths.s[slot];
    uint32_t id;
    size_t ignored;
    bool found = false;
    if (floe__kx_file_find(k->kx, path, &id)) {
        if (!floe__pathmap_get(f->reread, path, &ignored))
            return FLOE_OK;
        return floe__kx_remove(k->kx, key, klen, id, floe__get_le64(p + 4), &found, err);
    }
    floe__kx_loc loc;
    FLOE_FORWARD(floe__kx_take_committed(k->kx, key, klen, floe__get_le64(p + 12), &found, &loc,
                                         err));
    if (!found) {
        put_record(p, FLOE__DELETE_DROPPED, (floe__kx_loc){0, 0, 0});
        k->stats.dropped++;
        return FLOE_OK;
    }
    FLOE_FORWARD(floe__delrecs_path(d, floe__kx_file_path(k->kx, loc.file), &slot, err));
    put_record(p, slot, loc);
    k->stats.retargeted++;
    return FLOE_OK;
}

static int fix_records(void *ctx, floe__delrecs *d, floe_error *err)
{
    for (size_t at = 0; at < d->recs.len;) {
        uint8_t *p = d->recs.data + at;
        FLOE_FORWARD(fix_record(ctx, d, p, err));
        at += FLOE__DELETE_HEAD + floe__get_le32(p + 20);
    }
    return FLOE_OK;
}

static int fix_pending(floe__keeper *k, const floe__pathmap *reread, const moving *moved,
                       const pending *pend, floe_error *err)
{
    fixing f = {k, reread, moved};
    if (pend->s)
        FLOE_FORWARD(fix_records(&f, &pend->s->dels, err));
    return pend->w ? floe__writer_each_open(pend->w, fix_records, &f, err) : FLOE_OK;
}

/* ---- reading files again ---------------------------------------------------------------------- */

/* Paths to index again (borrowed from what the sync read). */
typedef struct touched {
    floe__pathmap set;
    const char **paths;
    size_t n, cap;
    bool all;                         /* every file */
    const floe__plan_file **eq;       /* equality deletes on the key, added */
    size_t n_eq, cap_eq;
} touched;

static int touch(touched *t, const char *path, floe_error *err)
{
    bool existed;
    FLOE_FORWARD(floe__pathmap_put(&t->set, path, t->n, &existed, err));
    if (existed)
        return FLOE_OK;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        const char **v = floe__realloc((void *)t->paths, cap * sizeof *v);
        if (!v)
            return FLOE_OOM(err);
        t->paths = v;
        t->cap = cap;
    }
    t->paths[t->n++] = path;
    return FLOE_OK;
}

static void touched_free(touched *t)
{
    floe__pathmap_clear(&t->set);
    floe__free((void *)t->paths);
    floe__free((void *)t->eq);
}

static void retire_path(floe__kx *kx, const char *path)
{
    uint32_t id;
    if (floe__kx_file_find(kx, path, &id))
        floe__kx_retire(kx, id);
}

static void retire_committed(floe__kx *kx)
{
    for (size_t i = 0, n = floe__kx_file_count(kx); i < n; i++)
        if (floe__kx_file_committed(kx, (uint32_t)i))
            floe__kx_retire(kx, (uint32_t)i);
}

typedef struct eq_taking {
    floe__keeper *k;
    const floe__pathmap *keep;        /* files indexed with the deletes applied */
    const floe__plan *plan;           /* the snapshot that added the delete */
    const floe__plan_file *eq;        /* the delete */
    floe__kx_loc *locs;
    size_t n, cap;
} eq_taking;

/* Whether e's delete reaches data file `path`: a file of the snapshot,
 * older than the delete, in its partition (a delete of a partitioned spec
 * is scoped to its tuple: SPEC 6; Iceberg's scan planning). */
static bool eq_reaches(const eq_taking *e, const char *path)
{
    size_t i;
    if (floe__pathmap_get(e->keep, path, &i))
        return false;
    if (!floe__pathmap_get(&e->plan->data_index, path, &i))
        return true;                  /* not live: nothing to keep */
    const floe__plan_file *d = &e->plan->data[i].f;
    return d->data_seq < e->eq->data_seq && floe__plan_eq_applies(d, e->eq);
}

/* An equality delete of key: its rows in the committed files it reaches
 * go. */
static int take_eq_key(void *ctx, const uint8_t *key, size_t len, floe_error *err)
{
    eq_taking *e = ctx;
    floe__kx *kx = e->k->kx;
    e->n = 0;
    for (bool found = true; found;) {
        if (e->n == e->cap) {
            size_t cap = e->cap ? e->cap * 2 : 8;
            floe__kx_loc *v = floe__realloc(e->locs, cap * sizeof *v);
            if (!v)
                return FLOE_OOM(err);
            e->locs = v;
            e->cap = cap;
        }
        FLOE_FORWARD(floe__kx_take_committed(kx, key, len, 0, &found, &e->locs[e->n], err));
        e->n += found;
    }
    for (size_t i = 0; i < e->n; i++)
        if (!eq_reaches(e, floe__kx_file_path(kx, e->locs[i].file)))
            FLOE_FORWARD(floe__kx_insert(kx, key, len, e->locs[i], err));
    return FLOE_OK;
}

static int apply_eq_keys(floe__keeper *k, floe__kx_build *b, const floe__plan *p,
                         const touched *t, const floe__pathmap *reread, floe_error *err)
{
    eq_taking e = {.k = k, .keep = reread, .plan = p};
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < t->n_eq; i++) {
        e.eq = t->eq[i];
        rc = floe__kx_build_eq_keys(b, t->eq[i], take_eq_key, &e, err);
    }
    floe__free(e.locs);
    return rc;
}

static void add_built(floe__keeper *k, const floe__kx_build *b)
{
    floe__kx_build_stats st;
    floe__kx_build_get_stats(b, &st);
    k->stats.built.files += st.files;
    k->stats.built.rows += st.rows;
    k->stats.built.deleted += st.deleted;
    k->stats.built.bytes += st.bytes;
}

/* Index the touched files again as of plan p, apply the equality deletes
 * on the key, fix the pending records. */
static int reread_plan(floe__keeper *k, const floe__plan *p, touched *t, const pending *pend,
                       floe_error *err)
{
    floe__kx_build *b = NULL;
    floe__pathmap done = {0};
    int rc = floe__kx_build_new(k->kx, &k->cfg->src, p, &b, err);
    if (rc == FLOE_OK && t->all)
        retire_committed(k->kx);
    for (size_t i = 0; rc == FLOE_OK && i < (t->all ? p->n_data : t->n); i++) {
        const char *path = t->all ? p->data[i].f.file.path : t->paths[i];
        size_t at = i;
        bool existed;
        retire_path(k->kx, path);
        if (!t->all && !floe__pathmap_get(&p->data_index, path, &at))
            continue;                            /* not live in this snapshot */
        rc = floe__kx_build_file(b, at, err);
        if (rc == FLOE_OK)
            rc = floe__pathmap_put(&done, p->data[at].f.file.path, at, &existed, err);
    }
    if (rc == FLOE_OK)
        rc = floe__kx_build_finish(b, err);
    if (rc == FLOE_OK)
        rc = apply_eq_keys(k, b, p, t, &done, err);
    if (rc == FLOE_OK)
        rc = fix_pending(k, &done, NULL, pend, err);
    if (b)
        add_built(k, b);
    floe__pathmap_clear(&done);
    floe__kx_build_free(b);
    return rc;
}

static int reread(floe__keeper *k, const floe__metadata *md, int64_t id, touched *t,
                  const pending *pend, floe_error *err)
{
    floe__plan *p = NULL;
    int rc = floe__plan_snapshot(k->cfg->src.io, md, id, &p, err);
    if (rc == FLOE_OK)
        rc = reread_plan(k, p, t, pend, err);
    floe__plan_free(p);
    return rc;
}

/* ---- two snapshots compared ------------------------------------------------------------------ */

/* Whether data file ia of a and ib of b have the same deletes. */
static int same_deletes(const floe__plan *a, size_t ia, const floe__plan *b, size_t ib,
                        bool *same, floe_error *err)
{
    const floe__plan_file **da = NULL, **db = NULL;
    size_t na = 0, nb = 0;
    int rc = floe__plan_applicable(a, ia, &da, &na, err);
    if (rc == FLOE_OK)
        rc = floe__plan_applicable(b, ib, &db, &nb, err);
    *same = rc == FLOE_OK && na == nb;
    for (size_t i = 0; *same && i < na; i++)
        *same = strcmp(da[i]->file.path, db[i]->file.path) == 0 &&
                da[i]->file.content_offset == db[i]->file.content_offset;
    floe__free((void *)da);
    floe__free((void *)db);
    return rc;
}

/* The index reflects snapshot `from`; bring it to the current snapshot by
 * comparing the two plans (history between them may be gone): files only
 * in `from` are retired, files new or with other deletes read again. */
static int sync_by_plans(floe__keeper *k, const floe__metadata *md, int64_t from,
                         const pending *pend, floe_error *err)
{
    floe__plan *a = NULL, *b = NULL;
    touched t = {0};
    int rc = floe__plan_snapshot(k->cfg->src.io, md, from, &a, err);
    if (rc == FLOE_OK)
        rc = floe__plan_snapshot(k->cfg->src.io, md, -1, &b, err);
    for (size_t i = 0; rc == FLOE_OK && i < a->n_data; i++) {
        size_t at;
        if (!floe__pathmap_get(&b->data_index, a->data[i].f.file.path, &at))
            retire_path(k->kx, a->data[i].f.file.path);
    }
    for (size_t i = 0; rc == FLOE_OK && i < b->n_data; i++) {
        size_t at;
        bool same = false;
        if (floe__pathmap_get(&a->data_index, b->data[i].f.file.path, &at))
            rc = same_deletes(a, at, b, i, &same, err);
        if (rc == FLOE_OK && !same)
            rc = touch(&t, b->data[i].f.file.path, err);
    }
    if (rc == FLOE_OK)
        rc = reread_plan(k, b, &t, pend, err);
    touched_free(&t);
    floe__plan_free(a);
    floe__plan_free(b);
    if (rc == FLOE_OK)
        k->stats.compared++;
    return rc;
}

/* ---- one snapshot of another writer ------------------------------------------------------------- */

/* A delete file added or removed: what it touches. */
static int touch_delete(floe__keeper *k, touched *t, const floe__plan_file *f, bool added,
                        floe__posdel_set **unscoped, floe_error *err)
{
    const floe__content_file *c = &f->file;
    if (c->content == FLOE_CONTENT_EQUALITY_DELETES) {
        if (!added || !floe__kx_eq_on_key(k->cfg->src.key_schema, c)) {
            t->all = true;
            return FLOE_OK;
        }
        if (t->n_eq == t->cap_eq) {
            size_t cap = t->cap_eq ? t->cap_eq * 2 : 4;
            const floe__plan_file **v = floe__realloc((void *)t->eq, cap * sizeof *v);
            if (!v)
                return FLOE_OOM(err);
            t->eq = v;
            t->cap_eq = cap;
        }
        t->eq[t->n_eq++] = f;
        return FLOE_OK;
    }
    if (c->referenced_data_file)
        return touch(t, c->referenced_data_file, err);
    if (!added) {
        t->all = true;                          /* unscoped and maybe gone from storage */
        return FLOE_OK;
    }
    if (!*unscoped)
        FLOE_FORWARD(floe__posdel_set_new(unscoped, err));
    return floe__posdel_file_read(k->cfg->src.io, c->path, *unscoped, err);
}

/* ---- a snapshot of the sink's own compaction ---------------------------------------------- */

/* The moves of one compaction group applied to the index and the records. */
struct moving {
    floe__keeper *k;
    const floe__moved *m;
    floe__pathmap old;               /* old path -> its index in m */
    size_t *k_of;                    /* per file id: index in m->old, SIZE_MAX: not moved */
    size_t n_ids;
    uint32_t *out_id;                /* per output file: its id */
    uint64_t rows;                   /* re-pointed */
};

static floe__kx_move move_row(void *ctx, floe__kx_loc *loc)
{
    moving *mv = ctx;
    size_t k = loc->file < mv->n_ids ? mv->k_of[loc->file] : SIZE_MAX, out;
    uint64_t at;
    if (k == SIZE_MAX)
        return FLOE_KX_STAYS;
    if (!floe__moved_where(mv->m, k, loc->pos, &out, &at))
        return FLOE_KX_GONE;         /* deleted when the compaction read it (the index synced
                                        every delete before this snapshot: not expected) */
    loc->file = mv->out_id[out];
    loc->pos = at;
    mv->rows++;
    return FLOE_KX_MOVED;
}

/* A record on a file the compaction removed names the row's new place (or
 * is dropped: the compaction found the row deleted). */
static int move_record(const moving *mv, floe__delrecs *d, uint8_t *p, floe_error *err)
{
    size_t k, out;
    uint64_t at;
    if (!floe__pathmap_get(&mv->old, d->paths.s[floe__get_le32(p)], &k))
        return FLOE_OK;
    if (!floe__moved_where(mv->m, k, floe__get_le64(p + 4), &out, &at)) {
        put_record(p, FLOE__DELETE_DROPPED, (floe__kx_loc){0, 0, 0});
        mv->k->stats.dropped++;
        return FLOE_OK;
    }
    uint32_t slot;
    FLOE_FORWARD(floe__delrecs_path(d, mv->m->out[out], &slot, err));
    put_record(p, slot, (floe__kx_loc){0, at, floe__get_le64(p + 12)});
    mv->k->stats.retargeted++;
    return FLOE_OK;
}

static bool among(char *const *paths, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(paths[i], path) == 0)
            return true;
    return false;
}

/* Whether the snapshot did exactly what m says: removed its old files,
 * added its new ones, and no equality deletes (deletes carried onto the
 * new files take rows the index no longer holds). */
static bool moves_match(const floe__moved *m, const floe__snapshot_changes *c)
{
    bool same = c->n_removed_data == m->n_old && c->n_added_data == m->n_out;
    for (size_t i = 0; same && i < c->n_removed_data; i++)
        same = among(m->old, m->n_old, c->removed_data[i].file.path);
    for (size_t i = 0; same && i < c->n_added_data; i++)
        same = among(m->out, m->n_out, c->added_data[i].file.path);
    for (size_t i = 0; same && i < c->n_added_deletes; i++)
        same = c->added_deletes[i].file.content != FLOE_CONTENT_EQUALITY_DELETES;
    return same;
}

static int moving_init(moving *mv, floe__keeper *k, const floe__moved *m, floe_error *err)
{
    floe__kx *kx = k->kx;
    *mv = (moving){.k = k, .m = m};
    mv->out_id = floe__calloc(m->n_out + 1, sizeof *mv->out_id);
    if (!mv->out_id)
        return FLOE_OOM(err);
    for (size_t i = 0; i < m->n_out; i++)
        FLOE_FORWARD(floe__kx_file(kx, m->out[i], &mv->out_id[i], err));
    mv->n_ids = floe__kx_file_count(kx);
    mv->k_of = floe__malloc((mv->n_ids + 1) * sizeof *mv->k_of);
    if (!mv->k_of)
        return FLOE_OOM(err);
    for (size_t i = 0; i < mv->n_ids; i++)
        mv->k_of[i] = SIZE_MAX;
    int32_t hash_schema = INT32_MIN;                /* none seen yet */
    for (size_t j = 0; j < m->n_old; j++) {
        bool existed;
        uint32_t id;
        FLOE_FORWARD(floe__pathmap_put(&mv->old, m->old[j], j, &existed, err));
        if (floe__kx_file_find(kx, m->old[j], &id)) {
            mv->k_of[id] = j;
            int32_t s = floe__kx_file_schema(kx, id);
            hash_schema = hash_schema == INT32_MIN || hash_schema == s ? s : -1;
        }
    }
    /* the rows keep their hashes: the new files' are of the old files' schema */
    for (size_t i = 0; i < m->n_out; i++)
        floe__kx_file_set_schema(kx, mv->out_id[i], hash_schema == INT32_MIN ? -1 : hash_schema);
    return FLOE_OK;
}

static void moving_clear(moving *mv)
{
    floe__pathmap_clear(&mv->old);
    floe__free(mv->k_of);
    floe__free(mv->out_id);
}

/* Re-point the rows m moved and the pending records on them. */
static int apply_moves(floe__keeper *k, const floe__moved *m, const pending *pend,
                       floe_error *err)
{
    moving mv;
    int rc = moving_init(&mv, k, m, err);
    if (rc == FLOE_OK) {
        floe__kx_repoint(k->kx, move_row, &mv);
        for (size_t j = 0; j < m->n_old; j++)
            retire_path(k->kx, m->old[j]);
        rc = fix_pending(k, NULL, &mv, pend, err);
    }
    if (rc == FLOE_OK) {
        k->stats.moved_files += m->n_old;
        k->stats.moved_rows += mv.rows;
    }
    moving_clear(&mv);
    return rc;
}

/* Snapshot `s` is a compaction of the sink's own whose moves the keeper
 * was handed: re-point the rows it moved and the pending records on them
 * instead of reading the new files (*done); else nothing happens. */
static int sync_moved(floe__keeper *k, const floe__snapshot *s, const floe__snapshot_changes *c,
                      const pending *pend, bool *done, floe_error *err)
{
    const char *id = floe__snapshot_summary_get(s, "floe.maintenance-id");
    *done = false;
    if (!k->cfg->moves || !id || !floe__kx_in_memory(k->kx))
        return FLOE_OK;
    floe__moved *m = floe__moves_take(k->cfg->moves, id);
    int rc = FLOE_OK;
    if (m && moves_match(m, c)) {
        rc = apply_moves(k, m, pend, err);
        *done = rc == FLOE_OK;
    }
    floe__moved_free(m);
    return rc;
}

/* What snapshot id changed (c), read from the table. */
static int sync_read(floe__keeper *k, const floe__metadata *md, int64_t id,
                     const floe__snapshot_changes *c, const pending *pend, floe_error *err)
{
    floe__posdel_set *unscoped = NULL;
    touched t = {0};
    int rc = FLOE_OK;
    for (size_t i = 0; i < c->n_removed_data; i++)
        retire_path(k->kx, c->removed_data[i].file.path);
    for (size_t i = 0; rc == FLOE_OK && i < c->n_added_data; i++)
        rc = touch(&t, c->added_data[i].file.path, err);
    for (size_t i = 0; rc == FLOE_OK && i < c->n_added_deletes; i++)
        rc = touch_delete(k, &t, &c->added_deletes[i], true, &unscoped, err);
    for (size_t i = 0; rc == FLOE_OK && i < c->n_removed_deletes; i++)
        rc = touch_delete(k, &t, &c->removed_deletes[i], false, &unscoped, err);
    for (size_t i = 0; rc == FLOE_OK && unscoped && i < floe__posdel_set_files(unscoped); i++)
        rc = touch(&t, floe__posdel_set_path(unscoped, i), err);
    if (rc == FLOE_OK && (t.n || t.all || t.n_eq))
        rc = reread(k, md, id, &t, pend, err);
    else if (rc == FLOE_OK && c->n_removed_data) {
        floe__pathmap none = {0};
        rc = fix_pending(k, &none, NULL, pend, err);  /* records on removed files follow keys */
    }
    touched_free(&t);
    floe__posdel_set_free(unscoped);
    return rc;
}

/* What snapshot id changed, read from the table. */
static int sync_changes(floe__keeper *k, const floe__metadata *md, int64_t id,
                        const pending *pend, floe_error *err)
{
    floe__snapshot_changes *c = NULL;
    int rc = floe__snapshot_changes_read(k->cfg->src.io, md, id, &c, err);
    if (rc == FLOE_OK)
        rc = sync_read(k, md, id, c, pend, err);
    floe__snapshot_changes_free(c);
    return rc;
}

static int sync_snapshot(floe__keeper *k, const floe__metadata *md, int64_t id,
                         const pending *pend, floe_error *err)
{
    floe__snapshot_changes *c = NULL;
    bool moved = false;
    int rc = floe__snapshot_changes_read(k->cfg->src.io, md, id, &c, err);
    if (rc == FLOE_OK)
        rc = sync_moved(k, floe__metadata_snapshot_by_id(md, id), c, pend, &moved, err);
    if (rc == FLOE_OK && !moved)
        rc = sync_read(k, md, id, c, pend, err);
    floe__snapshot_changes_free(c);
    if (rc == FLOE_OK)
        k->stats.synced++;
    return rc;
}

/* Every file again, as of the current snapshot. */
static int rebuild(floe__keeper *k, const floe__metadata *md, const pending *pend,
                   floe_error *err)
{
    touched t = {.all = true};
    int rc = reread(k, md, floe__metadata_current_snapshot_id(md), &t, pend, err);
    touched_free(&t);
    k->stats.rebuilds++;
    return rc;
}

/* Bring the index from synced_to to the table's current snapshot. */
static int sync_to_current(floe__keeper *k, const pending *pend, floe_error *err)
{
    const floe__metadata *md = table_md(k);
    int64_t *ids = NULL;
    size_t n = 0;
    bool on = false;
    FLOE_FORWARD(history_since(md, k->synced_to, &ids, &n, &on, err));
    int rc = FLOE_OK;
    if (!on && k->synced_to >= 0 && floe__metadata_snapshot_by_id(md, k->synced_to))
        rc = sync_by_plans(k, md, k->synced_to, pend, err);   /* a rollback, or expiry */
    else if (!on)
        rc = rebuild(k, md, pend, err);
    assert(on || n == 0);                          /* both bring the index to current */
    for (size_t i = 0; rc == FLOE_OK && i < n; i++)
        rc = sync_snapshot(k, md, ids[i], pend, err);
    floe__free(ids);
    if (rc == FLOE_OK)
        k->synced_to = floe__metadata_current_snapshot_id(md);
    k->dirty |= n > 0 || !on;
    return rc;
}

/* ---- checkpoints ---------------------------------------------------------------------------------- */

typedef struct taken {
    floe__keeper *k;
    floe__kx_visit_fn put;
    void *put_ctx;
} taken;

/* Rows an open batch took that are still live in the table. */
static int put_taken(void *ctx, floe__delrecs *d, floe_error *err)
{
    taken *x = ctx;
    for (size_t at = 0; at < d->recs.len;) {
        const uint8_t *p = d->recs.data + at;
        uint32_t slot = floe__get_le32(p), klen = floe__get_le32(p + 20);
        uint32_t id;
        at += FLOE__DELETE_HEAD + klen;
        if (slot == FLOE__DELETE_DROPPED || !floe__kx_file_find(x->k->kx, d->paths.s[slot], &id) ||
            !floe__kx_file_committed(x->k->kx, id))
            continue;
        floe__kx_loc loc = {id, floe__get_le64(p + 4), floe__get_le64(p + 12)};
        FLOE_FORWARD(x->put(x->put_ctx, p + FLOE__DELETE_HEAD, klen, loc, err));
    }
    return FLOE_OK;
}

typedef struct checkpointing {
    floe__keeper *k;
    floe__writer *w;
} checkpointing;

static int open_takes(void *ctx, floe__kx_visit_fn put, void *put_ctx, floe_error *err)
{
    checkpointing *c = ctx;
    taken x = {c->k, put, put_ctx};
    return c->w ? floe__writer_each_open(c->w, put_taken, &x, err) : FLOE_OK;
}

static int count_row(void *ctx, const uint8_t *key, size_t len, floe__kx_loc loc,
                     floe_error *err)
{
    (void)key, (void)len, (void)loc, (void)err;
    ++*(uint64_t *)ctx;
    return FLOE_OK;
}

/* Whether the streamed checkpoint holds what a walk would write: every
 * row the index holds, all of them in committed files, none taken by an
 * open batch. */
static int streamed_whole(floe__keeper *k, floe__writer *w, bool *whole, floe_error *err)
{
    floe__kx_stats st;
    floe__kx_get_stats(k->kx, &st);
    *whole = st.keys == floe__kx_ckpt_entries(k->streamed);
    for (uint32_t i = 0; *whole && i < floe__kx_file_count(k->kx); i++)
        *whole = floe__kx_file_committed(k->kx, i);
    uint64_t takes = 0;
    checkpointing c = {k, w};
    if (*whole)
        FLOE_FORWARD(open_takes(&c, count_row, &takes, err));
    *whole = *whole && takes == 0;
    return FLOE_OK;
}

/* The index as the table holds it (the open batches' changes left out). */
static int checkpoint(floe__keeper *k, floe__writer *w, floe_error *err)
{
    floe__kx_ckpt *streamed = k->streamed;
    bool whole = false;
    if (streamed && k->dirty)
        FLOE_FORWARD(streamed_whole(k, w, &whole, err));
    k->streamed = NULL;
    if (!whole)
        floe__kx_ckpt_abort(streamed);
    if (!k->store || !k->dirty)
        return FLOE_OK;
    floe__kx_mark at = {false, 0, k->synced_to};
    checkpointing c = {k, w};
    if (whole)
        FLOE_FORWARD(floe__kx_ckpt_finish(streamed, k->kx, at, err));
    else
        FLOE_FORWARD(floe__kx_store_checkpoint(k->store, k->kx, at, open_takes, &c, err));
    k->stats.checkpoints++;
    k->dirty = false;
    k->checkpoint_ms = floe__now_ms();
    return FLOE_OK;
}

/* A checkpoint is tied to a snapshot: once expiry removed that snapshot a
 * restart must rebuild.  So the index is checkpointed again well before
 * that: when the last one is a quarter of the table's snapshot age limit
 * old (history.expire.max-snapshot-age-ms, default 5 days). */
static bool checkpoint_aging(const floe__keeper *k)
{
    int64_t age = floe__metadata_property_int(table_md(k), "history.expire.max-snapshot-age-ms",
                                              (int64_t)5 * 24 * 3600 * 1000);
    return floe__now_ms() - k->checkpoint_ms > age / 4;
}

int floe__keeper_checkpoint(floe__keeper *k, floe__writer *w, floe_error *err)
{
    return checkpoint(k, w, err);
}

int floe__keeper_stream_checkpoint(floe__keeper *k, floe_error *err)
{
    floe__kx_stats st;
    floe__kx_get_stats(k->kx, &st);
    if (!k->store || k->streamed || st.keys || st.files)
        return FLOE_OK;
    return floe__kx_ckpt_begin(k->store, &k->streamed, err);
}

floe__kx_ckpt *floe__keeper_streamed(floe__keeper *k) { return k->streamed; }

/* ---- opening --------------------------------------------------------------------------------------- */

static int new_index(floe__keeper *k, floe_error *err)
{
    floe__kx_free(k->kx);
    k->kx = NULL;
    return floe__kx_new(&k->cfg->kx, &k->kx, err);
}

/* Whether a snapshot removed data files: of this sink, a copy-on-write
 * commit (its log says which rows it took and added, not where the rows
 * of the files it rewrote went). */
static bool removed_data(const floe__snapshot *s)
{
    const char *v = s ? floe__snapshot_summary_get(s, "deleted-data-files") : NULL;
    return v && strtoull(v, NULL, 10) > 0;
}

/* The attempt token a snapshot of this sink carries: 0 when none. */
static uint64_t token_of(const floe__keeper *k, const floe__snapshot *s)
{
    floe__frontier f;
    uint64_t version;
    const char *sid = NULL;
    if (floe__snapshot_progress(s, &f, &version, &sid, NULL) != FLOE_OK ||
        strcmp(sid, k->cfg->sink_id) != 0 || !s->summary)
        return 0;
    const char *hex = json_string_value(json_object_get(s->summary, FLOE_PROP_ATTEMPT));
    return hex ? strtoull(hex, NULL, 16) : 0;
}

/* Apply the logged attempt with this token: *used false when there is none
 * (or it does not verify). */
static int replay_token(floe__keeper *k, const floe__kx_logged *v, size_t n, uint64_t token,
                        bool *used, floe_error *err)
{
    *used = false;
    for (size_t i = 0; token && i < n && !*used; i++) {
        if (v[i].token != token)
            continue;
        floe__kx_log l;
        floe__kx_log_init(&l);
        int rc = floe__kx_store_read(k->store, v[i].off, &l, used, err);
        if (rc == FLOE_OK && *used)
            rc = floe__kx_log_apply(&l, k->kx, err);
        floe__kx_log_free(&l);
        FLOE_FORWARD(rc);
    }
    k->stats.replayed += *used;
    return FLOE_OK;
}

/* After the checkpoint: main's snapshots in order, each from the log or read. */
static int replay(floe__keeper *k, const int64_t *ids, size_t n, floe_error *err)
{
    floe__kx_logged *v = NULL;
    size_t nv = 0;
    FLOE_FORWARD(floe__kx_store_list(k->store, &v, &nv, err));
    const floe__metadata *md = table_md(k);
    pending none = {0};
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < n; i++) {
        bool used = false;
        const floe__snapshot *s = floe__metadata_snapshot_by_id(md, ids[i]);
        rc = replay_token(k, v, nv, removed_data(s) ? 0 : token_of(k, s), &used, err);
        if (rc == FLOE_OK && !used)
            rc = sync_snapshot(k, md, ids[i], &none, err);
    }
    floe__free(v);
    return rc;
}

/* Whether other writers added most of the table's rows since the stored
 * index (their snapshots' added-records against the keys it holds): a
 * compaction of the whole table, say.  Loading the index and re-pointing
 * every key then costs more than a rebuild into an empty one (10M keys:
 * 6.7 + 17 s against 9).  Read from the checkpoint's head and tail, before
 * any of it is loaded; true sets k->stats.why. */
static int rebuild_cheaper(floe__keeper *k, bool *yes, floe_error *err)
{
    *yes = false;
    bool have, on = false;
    floe__kx_mark at;
    uint64_t keys = 0, rows = 0;
    FLOE_FORWARD(floe__kx_store_peek(k->store, &have, &at, &keys, err));
    int64_t *ids = NULL;
    size_t n = 0;
    if (have)
        FLOE_FORWARD(history_since(table_md(k), at.snapshot_id, &ids, &n, &on, err));
    for (size_t i = 0; on && i < n; i++) {
        const floe__snapshot *s = floe__metadata_snapshot_by_id(table_md(k), ids[i]);
        bool read = s && (!token_of(k, s) || removed_data(s));
        const char *v = read ? floe__snapshot_summary_get(s, "added-records") : NULL;
        if (v)
            rows += strtoull(v, NULL, 10);
    }
    floe__free(ids);
    *yes = rows > keys / 2 && rows >= 100000;
    if (*yes)
        snprintf(k->stats.why, sizeof k->stats.why, "other writers added %" PRIu64 " rows since "
                 "the stored index, most of the table: a rebuild is cheaper", rows);
    return FLOE_OK;
}

/* The stored index: *loaded false (k->stats.why says why) when unusable. */
static int load_stored(floe__keeper *k, bool *loaded, floe_error *err)
{
    *loaded = false;
    bool have = false, cheaper;
    FLOE_FORWARD(rebuild_cheaper(k, &cheaper, err));
    if (cheaper)
        return FLOE_OK;
    floe__kx_mark at;
    char why[200] = "";
    FLOE_FORWARD(floe__kx_store_load(k->store, k->kx, &have, &at, why, sizeof why, err));
    if (!have) {
        snprintf(k->stats.why, sizeof k->stats.why, "%s", why[0] ? why : "no stored index");
        return FLOE_OK;
    }
    int64_t *ids = NULL;
    size_t n = 0;
    bool on = false;
    FLOE_FORWARD(history_since(table_md(k), at.snapshot_id, &ids, &n, &on, err));
    int rc = FLOE_OK;
    if (on)
        rc = replay(k, ids, n, err);
    else if (at.snapshot_id >= 0 && floe__metadata_snapshot_by_id(table_md(k), at.snapshot_id))
        rc = sync_by_plans(k, table_md(k), at.snapshot_id, &(pending){0}, err);
    else {
        snprintf(k->stats.why, sizeof k->stats.why, "the stored index is of snapshot %" PRId64
                 ", which the table no longer has (expired)", at.snapshot_id);
        floe__free(ids);
        return FLOE_OK;
    }
    floe__free(ids);
    *loaded = rc == FLOE_OK;
    const floe__snapshot *tied = floe__metadata_snapshot_by_id(table_md(k), at.snapshot_id);
    k->checkpoint_ms = tied ? tied->timestamp_ms : floe__now_ms();   /* as old as its snapshot */
    return rc;
}

static int open_store(floe__keeper *k, floe_error *err)
{
    const floe__metadata *md = table_md(k);
    uint64_t fp = floe__schema_fingerprint(k->cfg->src.key_schema) ^ (k->cfg->src.whole_row ? 1 : 0);
    int rc = floe__kx_store_open(k->cfg->dir, floe__metadata_table_uuid(md), k->cfg->sink_id, fp,
                                 &k->store, err);
    if (rc == FLOE_ESTATE && k->cfg->warn) {
        /* another process of this sink id (an older version about to be
         * fenced, say): run on a private index, read from the table */
        char msg[640];
        snprintf(msg, sizeof msg, "%s; this run keeps its key index in memory only",
                 floe_error_message(err));
        k->cfg->warn(k->cfg->warn_ctx, msg);
        snprintf(k->stats.why, sizeof k->stats.why, "the stored index is in use by another "
                 "process");
        floe_error_clear(err);
        return FLOE_OK;
    }
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "the key index directory %s (choose another with "
                              "--index-dir)", k->cfg->dir);
    return FLOE_OK;
}

static int start(floe__keeper *k, floe_error *err)
{
    bool loaded = false;
    if (k->cfg->dir) {
        FLOE_FORWARD(open_store(k, err));
        if (k->store)
            FLOE_FORWARD(load_stored(k, &loaded, err));
    } else {
        snprintf(k->stats.why, sizeof k->stats.why, "no index directory");
    }
    k->synced_to = floe__metadata_current_snapshot_id(table_md(k));
    if (loaded) {
        k->stats.start = FLOE__KEEPER_LOADED;
        k->dirty = k->stats.synced || k->stats.compared;
        return checkpoint(k, NULL, err);
    }
    FLOE_FORWARD(new_index(k, err));
    pending none = {0};
    FLOE_FORWARD(rebuild(k, table_md(k), &none, err));
    k->stats.start = k->stats.built.files ? FLOE__KEEPER_REBUILT : FLOE__KEEPER_EMPTY;
    if (!k->stats.built.files)
        k->stats.rebuilds = 0;
    k->dirty = true;                       /* the log needs a base */
    return checkpoint(k, NULL, err);
}

int floe__keeper_open(const floe__keeper_config *cfg, floe__keeper **out, floe_error *err)
{
    floe__keeper *k = floe__calloc(1, sizeof *k);
    if (!k)
        return FLOE_OOM(err);
    k->cfg = cfg;
    uint64_t t0 = floe__monotonic_ns();
    int rc = floe__kx_new(&cfg->kx, &k->kx, err);
    if (rc == FLOE_OK)
        rc = floe__moves_new(&k->rewrites, err);
    if (rc == FLOE_OK)
        rc = start(k, err);
    if (rc != FLOE_OK) {
        floe__keeper_free(k);
        return floe__err_wrap(err, rc, "opening the key index");
    }
    k->stats.start_ns = floe__monotonic_ns() - t0;
    *out = k;
    return FLOE_OK;
}

void floe__keeper_free(floe__keeper *k)
{
    if (!k)
        return;
    floe__posdel_set_free(k->deletes);
    floe__moves_free(k->rewrites);
    floe__kx_ckpt_abort(k->streamed);
    floe__kx_store_free(k->store);
    floe__kx_free(k->kx);
    floe__free(k);
}

floe__kx *floe__keeper_kx(floe__keeper *k) { return k->kx; }

int64_t floe__keeper_synced_to(const floe__keeper *k)
{
    return k->synced_to;
}

void floe__keeper_get_stats(const floe__keeper *k, floe__keeper_stats *out)
{
    *out = k->stats;
    floe__kx_get_stats(k->kx, &out->kx);
}

/* ---- commits ------------------------------------------------------------------------------------------ */

/* The attempt's index changes: the rows s indexed, then the rows it takes. */
static int attempt_log(const floe__sealed *s, floe__kx_log *l, floe_error *err)
{
    if (s->kx_log)
        FLOE_FORWARD(floe__kx_log_append(l, s->kx_log, err));
    const floe__delrecs *d = &s->dels;
    for (size_t at = 0; at < d->recs.len;) {
        const uint8_t *p = d->recs.data + at;
        uint32_t slot = floe__get_le32(p), klen = floe__get_le32(p + 20);
        at += FLOE__DELETE_HEAD + klen;
        if (slot != FLOE__DELETE_DROPPED)
            FLOE_FORWARD(floe__kx_log_remove(l, p + FLOE__DELETE_HEAD, klen, d->paths.s[slot],
                                             floe__get_le64(p + 4), err));
    }
    return FLOE_OK;
}

int floe__keeper_prepare(floe__keeper *k, floe__sealed *s, floe__writer *w, uint64_t token,
                         floe__posdel_set **deletes, floe_error *err)
{
    *deletes = NULL;
    floe__posdel_set_free(k->deletes);
    k->deletes = NULL;
    pending pend = {s, w};
    FLOE_FORWARD(sync_to_current(k, &pend, err));
    uint64_t size = (s->kx_log ? s->kx_log->ops.len : 0) + s->dels.recs.len;
    uint64_t ckpt = k->store ? floe__kx_store_checkpoint_bytes(k->store) : 0;
    /* cheaper to checkpoint after the commit than to log (or too big to) */
    k->unlogged = s->unlogged ||           /* rows indexed in bulk, without a log */
                  (s->kx_log && s->kx_log->dropped) ||       /* past its bound: too big */
                  (size > CHECKPOINT_AFTER && (size > ckpt / 2 || size >= FLOE__KX_MAX_RECORD / 2));
    if (k->store && !k->unlogged) {
        floe__kx_log l;
        floe__kx_log_init(&l);
        int rc = attempt_log(s, &l, err);
        if (rc == FLOE_OK)
            rc = floe__kx_store_log(k->store, &l, token, s->desc.upper.empty, s->desc.upper.t,
                                    err);
        floe__kx_log_free(&l);
        FLOE_FORWARD(rc);
    }
    FLOE_FORWARD(floe__delrecs_set(&s->dels, &k->deletes, err));
    *deletes = k->deletes;
    return FLOE_OK;
}

void floe__keeper_rewrote(floe__keeper *k, uint64_t token, const floe__cow *w)
{
    char id[FLOE__ATTEMPT_ID_LEN];
    floe__attempt_id(token, id);
    if (!w) {
        floe__moved_free(floe__moves_take(k->rewrites, id));
        return;
    }
    floe__compact_moved m;
    floe__cow_moved(w, id, &m);
    floe__moves_put(k->rewrites, &m);
}

/* The sink's own snapshot `id` rewrote files (copy-on-write): the rows
 * left in them moved, by the attempt's moves or, when they were not kept,
 * as read from the table. */
static int sync_rewrite(floe__keeper *k, int64_t id, floe__writer *w, floe_error *err)
{
    const floe__snapshot *s = floe__metadata_snapshot_by_id(table_md(k), id);
    if (!removed_data(s))
        return FLOE_OK;
    char attempt[FLOE__ATTEMPT_ID_LEN];
    floe__attempt_id(token_of(k, s), attempt);
    floe__moved *m = floe__moves_take(k->rewrites, attempt);
    pending pend = {NULL, w};
    int rc = m && floe__kx_in_memory(k->kx) ? apply_moves(k, m, &pend, err)
                                             : sync_changes(k, table_md(k), id, &pend, err);
    floe__moved_free(m);
    return rc;
}

int floe__keeper_committed(floe__keeper *k, const floe__sealed *s, int64_t snapshot_id,
                           floe__writer *w, floe_error *err)
{
    for (size_t i = 0; i < s->files.n; i++) {
        uint32_t id;
        if (s->files.files[i].content == FLOE_CONTENT_DATA &&
            floe__kx_file_find(k->kx, s->files.files[i].path, &id))
            floe__kx_file_set_committed(k->kx, id, true);
    }
    FLOE_FORWARD(sync_rewrite(k, snapshot_id, w, err));
    k->synced_to = snapshot_id;
    k->dirty = true;
    if (!k->store)
        return FLOE_OK;
    uint64_t logged = floe__kx_store_log_bytes(k->store);
    if (k->unlogged || checkpoint_aging(k) ||
        (logged >= CHECKPOINT_AFTER && logged >= floe__kx_store_checkpoint_bytes(k->store) / 2))
        return checkpoint(k, w, err);
    return FLOE_OK;
}

int floe__keeper_rebuild(floe__keeper *k, floe__writer *w, floe_error *err)
{
    FLOE_FORWARD(new_index(k, err));
    pending pend = {NULL, w};
    FLOE_FORWARD(rebuild(k, table_md(k), &pend, err));
    k->synced_to = floe__metadata_current_snapshot_id(table_md(k));
    k->dirty = true;
    return checkpoint(k, w, err);
}

int floe__keeper_covered(floe__keeper *k, const floe__sealed *s, floe__writer *w,
                         floe_error *err)
{
    for (size_t i = 0; i < s->files.n; i++)
        retire_path(k->kx, s->files.files[i].path);
    pending pend = {NULL, w};
    FLOE_FORWARD(rebuild(k, table_md(k), &pend, err));
    k->synced_to = floe__metadata_current_snapshot_id(table_md(k));
    k->dirty = true;
    return checkpoint(k, w, err);
}
