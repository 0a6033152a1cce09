/*
 * cow.c - copy-on-write for one commit (write.update.mode=copy-on-write):
 * the data files a commit deletes rows from are rewritten without them,
 * so readers of the new snapshot meet no delete files for those rows.
 *
 * Each such file is rewritten on its own (a compaction group of one file,
 * compact_rewrite.c) into a file of its live rows, on the table's current
 * snapshot as loaded (the committer has just reloaded it and its key index
 * is synced to it), with the commit's position deletes applied on top of
 * every delete the snapshot holds for it.  The commit that carries the
 * rewrite asserts that snapshot: a concurrent commit makes it a conflict,
 * and the next attempt rewrites again, but only the files whose rewrite
 * would differ: a file the other writer removed, one it added deletes to,
 * or one the commit now deletes other rows from.  The rest of the failed
 * attempt's rewrite is taken over as it is (a busy compactor replacing a
 * few files between attempts costs those files, not the whole rewrite).
 * Merging small files is left to compaction.
 *
 * The new files take the new snapshot's sequence number (every equality
 * delete that applied to the old rows was applied when they were read), as
 * Java's copy-on-write overwrite does.
 */
#include <stdlib.h>
#include <string.h>

#include "maint/compact_internal.h"

/* One old data file's rewrite, kept whole so that an attempt after a
 * conflict can take it over. */
typedef struct piece {
    char *old;                       /* the data file (owned); NULL: taken over */
    char *deletes;                   /* the delete files that applied to it, sorted */
    floe__posbitmap extra;           /* the commit's positions in it */
    floe__content_list files;        /* its live rows' new files (none: every row went) */
    floe__compact_map map;           /* of the one file */
} piece;

struct floe__cow_state {
    floe__compaction c;
    floe__compact_options o;
    int32_t schema_id, spec_id;      /* the pieces were written in */
    piece *pieces;                   /* one per rewritten file, as w->old */
    size_t n;
    floe__pathmap by_old;            /* old path -> piece */
};

static void piece_clear(const floe__cow *w, piece *pc, bool remove_files)
{
    for (size_t i = 0; remove_files && pc->old && i < pc->files.n; i++)
        floe__fileio_remove(w->state->c.t->io, pc->files.files[i].path, NULL);
    floe__content_list_clear(&pc->files);
    floe__compact_map_clear(&pc->map);
    floe__posbitmap_clear(&pc->extra);
    floe__free(pc->deletes);
    floe__free(pc->old);
    memset(pc, 0, sizeof *pc);
}

/* The commit's deletes on data files the snapshot does not hold (the
 * commit's own new files) stay deletes. */
static int keep_rest(floe__cow *w, const floe__posdel_set *deletes, size_t i, floe_error *err)
{
    if (!w->rest)
        FLOE_FORWARD(floe__posdel_set_new(&w->rest, err));
    return floe__posdel_set_add_all(w->rest, floe__posdel_set_path(deletes, i),
                                    floe__posdel_set_positions(deletes, i), err);
}

static int by_path(const void *x, const void *y)
{
    const floe__plan_file *const *a = x, *const *b = y;
    return strcmp((*a)->file.path, (*b)->file.path);
}

/* The delete files that apply to plan data file i, as one string: what a
 * rewrite of it read besides the file itself. */
static int deletes_of(const floe__plan *p, size_t i, char **out, floe_error *err)
{
    const floe__plan_file **v = NULL;
    size_t n = 0;
    FLOE_FORWARD(floe__plan_applicable(p, i, &v, &n, err));
    qsort(v, n, sizeof *v, by_path);
    floe__buf b;
    floe__buf_init(&b, 0);
    int rc = FLOE_OK;
    for (size_t k = 0; rc == FLOE_OK && k < n; k++)
        rc = floe__buf_append(&b, v[k]->file.path, strlen(v[k]->file.path) + 1, err);
    floe__free(v);
    if (rc == FLOE_OK)
        rc = floe__buf_append(&b, "", 1, err);
    if (rc != FLOE_OK) {
        floe__buf_free(&b);
        return rc;
    }
    *out = (char *)b.data;                     /* '\0'-separated, ends in "\0\0" */
    return FLOE_OK;
}

static bool same_deletes(const char *a, const char *b)
{
    for (;;) {
        size_t la = strlen(a), lb = strlen(b);
        if (la != lb || memcmp(a, b, la) != 0)
            return false;
        if (la == 0)
            return true;
        a += la + 1;
        b += lb + 1;
    }
}

/* prev's rewrite of `path` when it is what this attempt would write: the
 * same schema and spec, the same deletes read, the same rows left out. */
static piece *reusable(floe__cow *prev, const struct floe__cow_state *st, const char *path,
                       const char *deletes, const floe__posbitmap *extra)
{
    size_t k;
    if (!prev || prev->state->schema_id != st->schema_id || prev->state->spec_id != st->spec_id ||
        !floe__pathmap_get(&prev->state->by_old, path, &k))
        return NULL;
    piece *pc = &prev->state->pieces[k];
    if (!pc->old || !same_deletes(pc->deletes, deletes) ||
        !floe__posbitmap_equal(&pc->extra, extra))
        return NULL;
    return pc;
}

/* Plan data file i into piece pc: prev's when it can be taken over, else
 * rewritten. */
static int rewrite_one(floe__cow *w, floe__cow *prev, const floe__posdel_set *deletes, size_t i,
                       piece *pc, floe_error *err)
{
    struct floe__cow_state *st = w->state;
    const floe__plan_data *pd = &st->c.plan->data[i];
    const char *path = pd->f.file.path;
    const floe__posbitmap *extra = floe__posdel_set_find(deletes, path);
    char *dels = NULL;
    FLOE_FORWARD(deletes_of(st->c.plan, i, &dels, err));
    piece *had = reusable(prev, st, path, dels, extra);
    if (had) {
        floe__free(dels);
        *pc = *had;
        memset(had, 0, sizeof *had);
        w->reused++;
        return FLOE_OK;
    }
    pc->deletes = dels;
    pc->old = floe__strdup(path);
    if (!pc->old)
        return FLOE_OOM(err);
    if (extra)
        FLOE_FORWARD(floe__posbitmap_or(&pc->extra, extra, err));
    floe__compact_group one = {.files = &i, .n = 1, .bytes = pd->f.file.metrics.file_size};
    return floe__compact_rewrite(&st->c, &one, &pc->map, &pc->files, err);
}

/* The pieces as one rewrite: w->old, w->files (borrowed from the pieces)
 * and w->map, rows counted through the pieces' files in order. */
static int assemble(floe__cow *w, floe_error *err)
{
    struct floe__cow_state *st = w->state;
    size_t n = st->n, n_out = 0;
    for (size_t k = 0; k < n; k++)
        n_out += st->pieces[k].files.n;
    floe__compact_map *m = &w->map;
    m->n = n;
    m->first_out = floe__calloc(n + 1, sizeof *m->first_out);
    m->skipped = floe__calloc(n + 1, sizeof *m->skipped);
    m->pos_deleted = floe__calloc(n + 1, sizeof *m->pos_deleted);
    w->old = floe__calloc(n + 1, sizeof *w->old);
    w->files.files = floe__calloc(n_out + 1, sizeof *w->files.files);
    if (!m->first_out || !m->skipped || !m->pos_deleted || !w->old || !w->files.files)
        return FLOE_OOM(err);
    uint64_t rows = 0;
    for (size_t k = 0; k < n; k++) {
        piece *pc = &st->pieces[k];
        w->old[k] = pc->old;
        m->first_out[k] = rows;
        FLOE_FORWARD(floe__posbitmap_or(&m->skipped[k], &pc->map.skipped[0], err));
        FLOE_FORWARD(floe__posbitmap_or(&m->pos_deleted[k], &pc->map.pos_deleted[0], err));
        for (size_t f = 0; f < pc->files.n; f++) {
            w->files.files[w->files.n++] = pc->files.files[f];
            rows += pc->files.files[f].metrics.record_count;
            w->stats.bytes_written += pc->files.files[f].metrics.file_size;
        }
    }
    w->n_old = n;
    w->stats.rows_written = rows;
    w->stats.files_rewritten = n;
    w->stats.files_written = n_out;
    return FLOE_OK;
}

/* The plan's data files `deletes` names, of the table's spec, each
 * rewritten (or taken over from prev).  Deletes of other files stay
 * deletes: the commit's own new files, and files of an older spec (their
 * rows would need the current spec's tuples). */
static int rewrite(floe__cow *w, const floe__posdel_set *deletes, floe__cow *prev,
                   floe_error *err)
{
    struct floe__cow_state *st = w->state;
    FLOE_FORWARD(floe__compaction_start(&st->c, err));
    st->c.extra = deletes;
    st->schema_id = floe__metadata_current_schema_id(st->c.t->loaded->metadata);
    st->spec_id = st->c.t->spec_id;
    const floe__plan *p = st->c.plan;
    size_t n = floe__posdel_set_files(deletes);
    st->pieces = floe__calloc(n + 1, sizeof *st->pieces);
    if (!st->pieces)
        return FLOE_OOM(err);
    for (size_t k = 0; k < n; k++) {
        size_t i;
        if (!floe__pathmap_get(&p->data_index, floe__posdel_set_path(deletes, k), &i) ||
            p->data[i].f.spec_id != st->spec_id) {
            FLOE_FORWARD(keep_rest(w, deletes, k, err));
            continue;
        }
        piece *pc = &st->pieces[st->n++];
        FLOE_FORWARD(rewrite_one(w, prev, deletes, i, pc, err));
        FLOE_FORWARD(floe__pathmap_put(&st->by_old, pc->old, st->n - 1, NULL, err));
    }
    FLOE_FORWARD(assemble(w, err));
    uint64_t dropped = 0;
    return floe__compact_removals(&st->c, w->old, w->n_old, p, &w->remove, &w->n_remove,
                                  &dropped, err);
}

int floe__cow_rewrite(floe__table *t, const floe__posdel_set *deletes, floe__cow *prev,
                      floe__cow **out, floe_error *err)
{
    *out = NULL;
    floe__cow *w = floe__calloc(1, sizeof *w);
    struct floe__cow_state *st = floe__calloc(1, sizeof *st);
    if (!w || !st) {
        floe__free(w);
        floe__free(st);
        return FLOE_OOM(err);
    }
    w->state = st;
    st->c = (floe__compaction){.t = t, .o = &st->o, .res = &w->stats};
    floe__buf_init(&st->c.row, 0);
    int rc = rewrite(w, deletes, prev, err);
    if (rc != FLOE_OK) {
        floe__cow_free(w, true);
        return floe__err_wrap(err, rc, "rewriting the files a commit deletes from "
                              "(copy-on-write)");
    }
    *out = w;
    return FLOE_OK;
}

void floe__cow_moved(const floe__cow *w, const char *id, floe__compact_moved *out)
{
    *out = (floe__compact_moved){id, w->old, &w->map, &w->files};
}

void floe__cow_free(floe__cow *w, bool remove_files)
{
    if (!w)
        return;
    struct floe__cow_state *st = w->state;
    for (size_t k = 0; k < st->n; k++)
        piece_clear(w, &st->pieces[k], remove_files);
    floe__free(w->files.files);                  /* the pieces' */
    floe__compact_map_clear(&w->map);
    floe__posdel_set_free(w->rest);
    floe__free(w->remove);
    floe__free(w->old);
    floe__free(st->pieces);
    floe__pathmap_clear(&st->by_old);
    floe__compaction_clear(&st->c);
    floe__free(st);
    floe__free(w);
}
