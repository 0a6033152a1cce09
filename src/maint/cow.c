/*
 * cow.c - copy-on-write for one commit (write.update.mode=copy-on-write):
 * the data files a commit deletes rows from are rewritten without them,
 * so readers of the new snapshot meet no delete files for those rows.
 *
 * The rewrite is a compaction of exactly those files (compact_rewrite.c),
 * on the table's current snapshot as loaded (the committer has just
 * reloaded it and its key index is synced to it), with the commit's
 * position deletes applied on top of every delete the snapshot holds for
 * them.  The commit that carries it asserts that snapshot, so nothing can
 * have changed in between: a concurrent commit makes it a conflict, and the
 * next attempt rewrites again.  The new files take the new snapshot's
 * sequence number (every equality delete that applied to the old rows was
 * applied when they were read), as Java's copy-on-write overwrite does.
 */
#include <stdlib.h>
#include <string.h>

#include "maint/compact_internal.h"

struct floe__cow_state {
    floe__compaction c;
    floe__compact_options o;
    floe__compact_group g;
};

/* The commit's deletes on data files the snapshot does not hold (the
 * commit's own new files) stay deletes. */
static int keep_rest(floe__cow *w, const floe__posdel_set *deletes, size_t i, floe_error *err)
{
    if (!w->rest)
        FLOE_FORWARD(floe__posdel_set_new(&w->rest, err));
    return floe__posdel_set_add_all(w->rest, floe__posdel_set_path(deletes, i),
                                    floe__posdel_set_positions(deletes, i), err);
}

/* Files of one partition side by side (compact_rewrite.c writes each run
 * of one partition's files with a writer of its own), else as named. */
typedef struct placed {
    const floe__buf *part;
    size_t i;                                  /* in the plan */
} placed;

static int by_partition(const void *x, const void *y)
{
    const placed *a = x, *b = y;
    if (a->part->len != b->part->len)
        return a->part->len < b->part->len ? -1 : 1;
    int d = a->part->len ? memcmp(a->part->data, b->part->data, a->part->len) : 0;
    return d ? d : (a->i > b->i) - (a->i < b->i);
}

static int sort_by_partition(const floe__plan *p, size_t *files, size_t n, floe_error *err)
{
    placed *v = floe__malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return FLOE_OOM(err);
    for (size_t k = 0; k < n; k++)
        v[k] = (placed){&p->data[files[k]].f.file.partition, files[k]};
    qsort(v, n, sizeof *v, by_partition);
    for (size_t k = 0; k < n; k++)
        files[k] = v[k].i;
    floe__free(v);
    return FLOE_OK;
}

/* The group: the plan's data files `deletes` names, of the table's spec,
 * grouped by partition.  Deletes of other files stay deletes: the commit's
 * own new files, and files of an older spec (their rows would need the
 * current spec's tuples). */
static int gather(floe__cow *w, const floe__posdel_set *deletes, floe_error *err)
{
    struct floe__cow_state *st = w->state;
    const floe__plan *p = st->c.plan;
    size_t n = floe__posdel_set_files(deletes);
    st->g.files = floe__calloc(n + 1, sizeof *st->g.files);
    w->old = floe__calloc(n + 1, sizeof *w->old);
    if (!st->g.files || !w->old)
        return FLOE_OOM(err);
    for (size_t k = 0; k < n; k++) {
        size_t i;
        if (floe__pathmap_get(&p->data_index, floe__posdel_set_path(deletes, k), &i) &&
            p->data[i].f.spec_id == st->c.t->spec_id)
            st->g.files[st->g.n++] = i;
        else
            FLOE_FORWARD(keep_rest(w, deletes, k, err));
    }
    if (floe__table_partitioned(st->c.t))
        FLOE_FORWARD(sort_by_partition(p, st->g.files, st->g.n, err));
    for (size_t k = 0; k < st->g.n; k++) {
        w->old[k] = p->data[st->g.files[k]].f.file.path;
        st->g.bytes += p->data[st->g.files[k]].f.file.metrics.file_size;
    }
    w->n_old = st->g.n;
    return FLOE_OK;
}

static int rewrite(floe__cow *w, const floe__posdel_set *deletes, floe_error *err)
{
    struct floe__cow_state *st = w->state;
    FLOE_FORWARD(floe__compaction_start(&st->c, err));
    st->c.extra = deletes;
    FLOE_FORWARD(gather(w, deletes, err));
    if (!st->g.n)
        return FLOE_OK;
    FLOE_FORWARD(floe__compact_rewrite(&st->c, &st->g, &w->map, &w->files, err));
    uint64_t dropped = 0;
    return floe__compact_removals(&st->c, w->old, w->n_old, st->c.plan, &w->remove, &w->n_remove,
                                  &dropped, err);
}

int floe__cow_rewrite(floe__table *t, const floe__posdel_set *deletes, floe__cow **out,
                      floe_error *err)
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
    int rc = rewrite(w, deletes, err);
    if (rc != FLOE_OK) {
        floe__cow_free(w, true);
        return floe__err_wrap(err, rc, "rewriting the files a commit deletes from "
                              "(copy-on-write)");
    }
    for (size_t i = 0; i < w->files.n; i++)
        w->stats.bytes_written += w->files.files[i].metrics.file_size;
    w->stats.files_rewritten = w->n_old;
    w->stats.files_written = w->files.n;
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
    for (size_t i = 0; remove_files && i < w->files.n; i++)
        floe__fileio_remove(st->c.t->io, w->files.files[i].path, NULL);
    floe__content_list_clear(&w->files);
    floe__compact_map_clear(&w->map);
    floe__posdel_set_free(w->rest);
    floe__free(w->remove);
    floe__free(w->old);
    floe__free(st->g.files);
    floe__compaction_clear(&st->c);
    floe__free(st);
    floe__free(w);
}
