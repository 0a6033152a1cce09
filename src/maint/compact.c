/*
 * compact.c - bin-packing compaction: which data files need rewriting, in
 * which groups, and committing each group as a `replace` snapshot that
 * validates like Java's RewriteFiles.
 *
 * A data file needs rewriting when it is small (below min_file_ratio x the
 * target size), too large (above max_file_ratio x), when at least
 * delete_ratio of its rows are deleted by its DV or file-scoped position
 * deletes, or when equality deletes apply to it (the costliest deletes to
 * read; rewriting every file older than an equality delete lets the delete
 * go).  Candidates are packed, oldest first, into groups of about the
 * target size, a group within one partition of the table's spec; a group
 * is rewritten when it has min_input_files files,
 * fills a file, holds a file with deletes to apply, or holds a file too
 * large.  Groups go in order of need.  Tiered (the sink's own maintenance,
 * which runs every few commits): candidates are packed only with files of
 * their size class (4x wide), so a small new file is not merged into a
 * large one at every round.  Files of older partition specs are left as
 * they are unless asked (respec, all): then they are packed, oldest first,
 * into groups of their own whatever their partition, and each row is
 * written into the file of its partition under the current spec.
 *
 * Each group commits on its own: new files with the start snapshot's
 * sequence number as data sequence number, the old files removed (their
 * DVs and file-scoped deletes with them), and the delete files no data
 * file needs any more dropped (an equality delete once no remaining file
 * is older than it; an unscoped position delete file once none of the
 * files it applies to remains).  The commit asserts main's snapshot; when
 * it lost a race the table is re-planned and the commit rebased if the
 * group's files are still live with the same DVs and position deletes
 * (new equality deletes are fine: they apply to the new files by sequence
 * number); rows a DV or position delete deleted meanwhile are deleted
 * from the new files in the same commit (where each old row went is
 * known), so neither side loses a delete.  A group whose files another
 * commit removed, or whose deletes went away (a rollback), is given up
 * and its new files removed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "maint/compact_internal.h"

#define MAX_ATTEMPTS 10          /* a rebase is cheap: one plan of the table */

/* ---- what needs rewriting ------------------------------------------------------------------ */

static double prop_ratio(const floe__metadata *md, const char *key, double given, double dflt)
{
    if (given > 0)
        return given;
    const char *s = floe__metadata_property(md, key);
    char *end = NULL;
    double v = s ? strtod(s, &end) : 0;
    return s && end && !*end && v > 0 ? v : dflt;
}

double floe__compact_delete_ratio(const floe__metadata *md, double dflt)
{
    return prop_ratio(md, "floe.compact.delete-ratio", 0, dflt);
}

typedef struct thresholds {
    double min_ratio, max_ratio, delete_ratio;
    int64_t min_input;
} thresholds;

static thresholds thresholds_of(const floe__compaction *c)
{
    const floe__metadata *md = c->t->loaded->metadata;
    const floe__compact_options *o = c->o;
    thresholds th = {prop_ratio(md, "floe.compact.min-file-ratio", o->min_file_ratio, 0.75),
                     prop_ratio(md, "floe.compact.max-file-ratio", o->max_file_ratio, 1.8),
                     prop_ratio(md, "floe.compact.delete-ratio", o->delete_ratio, 0.3),
                     o->min_input_files > 0
                         ? o->min_input_files
                         : floe__metadata_property_int(md, "floe.compact.min-input-files", 5)};
    return th;
}

typedef struct candidate {
    size_t i;
    uint64_t bytes;                  /* size, less the deleted share */
    double need;
    bool urgent;                     /* deletes to apply, or too large */
    unsigned tier;                   /* tiered: size class (x4 each, from 64 KiB); else 0 */
    int64_t seq;
    const floe__buf *part;           /* its partition tuple (empty: unpartitioned) */
    bool respec;                     /* of an older spec: rewritten into the current */
} candidate;

/* Size classes of 4x each: files merge with files of their size only, so
 * a row is rewritten about log4(table / file) times, not at every round. */
static unsigned tier_of(uint64_t size)
{
    unsigned t = 0;
    for (uint64_t s = size >> 16; s >= 4; s >>= 2)
        t++;
    return t;
}

static bool candidate_of(const floe__compaction *c, const thresholds *th, size_t i,
                         candidate *out)
{
    const floe__plan *p = c->plan;
    const floe__content_file *f = &p->data[i].f.file;
    bool respec = p->data[i].f.spec_id != c->t->spec_id;
    if (respec && !c->o->respec && !c->o->all)
        return false;                /* left in its spec */
    uint64_t rows = f->metrics.record_count, size = f->metrics.file_size;
    double ratio = rows ? (double)floe__plan_deleted_rows(p, i) / (double)rows : 0;
    bool eq = p->n_eq > p->data[i].eq_from;
    double target = (double)c->wopts.target_file_size;
    bool small = (double)size < th->min_ratio * target;
    bool large = (double)size > th->max_ratio * target;
    bool deletes = ratio >= th->delete_ratio || eq;
    if (!(c->o->all || respec || small || large || deletes))
        return false;
    static const floe__buf none = {0};
    *out = (candidate){i, (uint64_t)((double)size * (1 - (ratio > 1 ? 1 : ratio))),
                       1 + 10 * ratio + (eq ? 10 : 0), large || deletes || respec,
                       c->o->tiered && !respec ? tier_of(size) : 0, p->data[i].f.data_seq,
                       respec ? &none : &f->partition, respec};
    return true;
}

static int cmp_part(const floe__buf *a, const floe__buf *b)
{
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return a->len ? memcmp(a->data, b->data, a->len) : 0;
}

/* Older specs' files apart; partition (a group never mixes two), then
 * size class, then age. */
static int by_tier_seq(const void *x, const void *y)
{
    const candidate *a = x, *b = y;
    if (a->respec != b->respec)
        return a->respec ? -1 : 1;
    int part = cmp_part(a->part, b->part);
    if (part)
        return part;
    if (a->tier != b->tier)
        return a->tier < b->tier ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

static int by_need(const void *x, const void *y)
{
    const floe__compact_group *a = x, *b = y;
    return (a->need < b->need) - (a->need > b->need);
}

static bool worth_it(const floe__compaction *c, const thresholds *th,
                     const floe__compact_group *g, bool urgent)
{
    return c->o->all || urgent || (int64_t)g->n >= th->min_input ||
           (g->n > 1 && (double)g->bytes >= th->min_ratio * (double)c->wopts.target_file_size);
}

/* Close the group being packed: keep it when worth it, else drop it. */
static int close_group(floe__compaction *c, const thresholds *th, floe__compact_group *g,
                       bool urgent, floe__compact_group **gs, size_t *n, floe_error *err)
{
    if (!g->n)
        return FLOE_OK;
    if (!worth_it(c, th, g, urgent)) {
        floe__free(g->files);
        memset(g, 0, sizeof *g);
        return FLOE_OK;
    }
    floe__compact_group *more = floe__realloc(*gs, (*n + 1) * sizeof **gs);
    if (!more)
        return FLOE_OOM(err);
    *gs = more;
    (*gs)[(*n)++] = *g;
    memset(g, 0, sizeof *g);
    return FLOE_OK;
}

static int choose(floe__compaction *c, floe__compact_group **gs, size_t *n_gs, floe_error *err)
{
    thresholds th = thresholds_of(c);
    const floe__plan *p = c->plan;
    candidate *cs = floe__calloc(p->n_data ? p->n_data : 1, sizeof *cs);
    if (!cs)
        return FLOE_OOM(err);
    size_t n = 0;
    for (size_t i = 0; i < p->n_data; i++)
        n += candidate_of(c, &th, i, &cs[n]);
    qsort(cs, n, sizeof *cs, by_tier_seq);
    floe__compact_group g = {0};
    bool urgent = false;
    int rc = FLOE_OK;
    for (size_t k = 0; rc == FLOE_OK && k < n; k++) {
        if (g.n && (g.bytes + cs[k].bytes > c->wopts.target_file_size ||
                    cs[k].tier != cs[k - 1].tier || cs[k].respec != cs[k - 1].respec ||
                    cmp_part(cs[k].part, cs[k - 1].part))) {
            rc = close_group(c, &th, &g, urgent, gs, n_gs, err);
            urgent = false;
        }
        if (rc == FLOE_OK && !g.files && !(g.files = floe__calloc(n, sizeof *g.files)))
            rc = FLOE_OOM(err);
        if (rc != FLOE_OK)
            break;
        g.files[g.n++] = cs[k].i;
        g.respec = cs[k].respec;
        g.bytes += cs[k].bytes;
        g.need += cs[k].need;
        urgent |= cs[k].urgent;
    }
    if (rc == FLOE_OK)
        rc = close_group(c, &th, &g, urgent, gs, n_gs, err);
    floe__free(g.files);
    floe__free(cs);
    if (rc == FLOE_OK && *n_gs > 1)
        qsort(*gs, *n_gs, sizeof **gs, by_need);
    return rc;
}

/* ---- deletes committed meanwhile ----------------------------------------------------------- */

/* One group being committed: what it removes, where its rows went, the
 * files it wrote, and the deletes to carry onto them. */
typedef struct pending {
    const floe__compact_group *g;
    const floe__compact_map *map;
    const floe__content_list *files;
    const char **paths;              /* the group's data files (owned by the start plan) */
    const char **eq_paths;           /* equality delete files applied when read */
    size_t n_eq;
    floe__posdel_set *carried;       /* NULL: none */
    char id[37];                     /* the commit's floe.maintenance-id */
} pending;

static void pending_clear(pending *q)
{
    floe__free(q->paths);
    floe__free(q->eq_paths);
    floe__posdel_set_free(q->carried);
}

static int pending_init(floe__compaction *c, pending *q, floe_error *err)
{
    const floe__plan *p = c->plan;
    q->paths = floe__calloc(q->g->n, sizeof *q->paths);
    q->eq_paths = floe__calloc(p->n_eq + 1, sizeof *q->eq_paths);
    if (!q->paths || !q->eq_paths)
        return FLOE_OOM(err);
    size_t oldest_eq = p->n_eq;                       /* eq[from..] apply to a file */
    for (size_t k = 0; k < q->g->n; k++) {
        q->paths[k] = p->data[q->g->files[k]].f.file.path;
        if (p->data[q->g->files[k]].eq_from < oldest_eq)
            oldest_eq = p->data[q->g->files[k]].eq_from;
    }
    for (size_t e = oldest_eq; e < p->n_eq; e++)
        q->eq_paths[q->n_eq++] = p->deletes[p->eq[e]].file.path;
    return FLOE_OK;
}

/* New file and position of output row `row` of the group. */
static void locate(const floe__content_list *files, uint64_t row, const char **path,
                   uint64_t *pos)
{
    for (size_t i = 0; i < files->n; i++) {
        uint64_t n = files->files[i].metrics.record_count;
        if (row < n || i + 1 == files->n) {
            *path = files->files[i].path;
            *pos = row;
            return;
        }
        row -= n;
    }
}

/* Old file k's deletes now (`now`) against when it was read: every row
 * deleted then must still be deleted (else rows came back: give up), and
 * each row deleted since is carried onto its new place. */
static int carry_file(pending *q, size_t k, const floe__posbitmap *now, char *why, size_t cap,
                      floe_error *err)
{
    const floe__posbitmap *then = &q->map->pos_deleted[k], *skipped = &q->map->skipped[k];
    floe__posbitmap_iter was = {then, 0, 0, 0}, it = {now, 0, 0, 0}, sk = {skipped, 0, 0, 0};
    uint64_t p, s = 0, below = 0;
    while (floe__posbitmap_next(&was, &p))
        if (!now || !floe__posbitmap_contains(now, p)) {
            snprintf(why, cap, "row %" PRIu64 " of %s, deleted when it was read, is live again",
                     p, q->paths[k]);
            return FLOE_ECONFLICT;
        }
    bool more = floe__posbitmap_next(&sk, &s);
    while (now && floe__posbitmap_next(&it, &p)) {
        for (; more && s < p; more = floe__posbitmap_next(&sk, &s))
            below++;
        if (more && s == p)
            continue;                                   /* left out when read */
        const char *path = NULL;
        uint64_t pos = 0;
        locate(q->files, q->map->out_row ? q->map->out_row[k][p] : q->map->first_out[k] + p - below,
               &path, &pos);
        assert(path);                                   /* the row was copied somewhere */
        if (!q->carried)
            FLOE_FORWARD(floe__posdel_set_new(&q->carried, err));
        FLOE_FORWARD(floe__posdel_set_add(q->carried, path, pos, err));
    }
    return FLOE_OK;
}

static bool eq_still_live(const pending *q, const floe__plan *p, char *why, size_t cap)
{
    for (size_t e = 0; e < q->n_eq; e++) {
        bool found = false;
        for (size_t k = 0; k < p->n_deletes && !found; k++)
            found = strcmp(p->deletes[k].file.path, q->eq_paths[e]) == 0;
        if (!found) {
            snprintf(why, cap, "equality delete file %s it applied was removed", q->eq_paths[e]);
            return false;
        }
    }
    return true;
}

/* Whether the group still applies to plan p (its files live, no delete it
 * applied gone) and, into q->carried, the deletes committed since. */
static int revalidate(floe__compaction *c, pending *q, const floe__plan *p, floe_error *err)
{
    char why[512] = "";
    floe__posdel_set_free(q->carried);
    q->carried = NULL;
    floe__deleted *del = NULL;
    int rc = eq_still_live(q, p, why, sizeof why) ? floe__deleted_new(c->t->io, p, &del, err)
                                                   : FLOE_ECONFLICT;
    for (size_t k = 0; rc == FLOE_OK && k < q->g->n; k++) {
        size_t i;
        const floe__posbitmap *now = NULL;
        if (!floe__pathmap_get(&p->data_index, q->paths[k], &i)) {
            snprintf(why, sizeof why, "%s was removed by a concurrent commit", q->paths[k]);
            rc = FLOE_ECONFLICT;
        } else if ((rc = floe__deleted_positions(del, i, &now, err)) == FLOE_OK) {
            rc = carry_file(q, k, now, why, sizeof why, err);
        }
    }
    floe__deleted_free(del);
    if (rc == FLOE_ECONFLICT)
        return floe__err_set(err, FLOE_ECONFLICT, "compaction group of %zu files given up: %s",
                             q->g->n, why);
    if (rc == FLOE_OK && q->carried)
        c->res->deletes_carried += floe__posdel_set_count(q->carried);
    return rc;
}

/* ---- the commit ---------------------------------------------------------------------------- */

/* An equality delete goes once no remaining data file is older than it; an
 * unscoped position delete file once none of the files it applies to
 * remains (DVs and file-scoped deletes go with their data file). */
int floe__compact_removals(const floe__compaction *c, const char *const *old, size_t n_old,
                           const floe__plan *p, const char ***out, size_t *n_out,
                           uint64_t *dropped, floe_error *err)
{
    bool *gone = floe__calloc(p->n_data + 1, sizeof *gone);
    bool *used = floe__calloc(p->n_deletes + 1, sizeof *used);
    const char **paths = floe__calloc(n_old + p->n_deletes + 1, sizeof *paths);
    if (!gone || !used || !paths) {
        floe__free(gone);
        floe__free(used);
        floe__free(paths);
        return FLOE_OOM(err);
    }
    size_t n = 0, i;
    *dropped = 0;
    for (size_t k = 0; k < n_old; k++)
        if (floe__pathmap_get(&p->data_index, old[k], &i)) {
            gone[i] = true;
            paths[n++] = p->data[i].f.file.path;
            *dropped += p->data[i].n_pos + (p->data[i].dv != SIZE_MAX);
        }
    int64_t oldest = c->start_seq;               /* the oldest data file that stays */
    for (i = 0; i < p->n_data; i++) {
        if (gone[i])
            continue;
        for (size_t k = 0; k < p->data[i].n_pos; k++)
            used[p->data[i].pos[k]] = true;
        if (p->data[i].f.data_seq < oldest)
            oldest = p->data[i].f.data_seq;
    }
    for (size_t k = 0; k < p->n_deletes; k++) {
        const floe__plan_file *d = &p->deletes[k];
        bool drop = d->file.content == FLOE_CONTENT_EQUALITY_DELETES
                        ? d->data_seq <= oldest
                        : !used[k] && !floe__content_is_dv(&d->file) &&
                              !d->file.referenced_data_file;
        if (drop) {
            paths[n++] = d->file.path;
            ++*dropped;
        }
    }
    floe__free(gone);
    floe__free(used);
    *out = paths;
    *n_out = n;
    return FLOE_OK;
}

static int summary_of(const char *id, json_t **out, floe_error *err)
{
    *out = json_pack("{s:s, s:s}", "floe.maintenance", "compaction", "floe.maintenance-id", id);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

bool floe__table_has_maintenance_id(const floe__table *t, const char *id)
{
    const floe__metadata *md = t->loaded->metadata;
    for (size_t i = 0; i < floe__metadata_snapshot_count(md); i++) {
        const char *v = floe__snapshot_summary_get(floe__metadata_snapshot_at(md, i),
                                                   "floe.maintenance-id");
        if (v && strcmp(v, id) == 0)
            return true;
    }
    return false;
}

static int commit_once(floe__compaction *c, const pending *q, const floe__plan *p,
                       const json_t *summary, floe_error *err)
{
    const char **paths = NULL;
    size_t n = 0;
    uint64_t dropped = 0;
    FLOE_FORWARD(floe__compact_removals(c, q->paths, q->g->n, p, &paths, &n, &dropped, err));
    floe__commit_request req = {.files = q->files->files, .n_files = q->files->n,
                                .summary = summary, .base_snapshot_id = p->snapshot_id,
                                .deletes = q->carried, .remove = paths, .n_remove = n,
                                .operation = "replace", .has_data_sequence_number = true,
                                .data_sequence_number = c->start_seq};
    int rc = floe__table_commit(c->t, &req, NULL, err);
    floe__free(paths);
    if (rc == FLOE_OK)
        c->res->delete_files_dropped += dropped;
    return rc;
}

/* The plan to commit against: the start plan while main is still there,
 * else a new one (into *now) on which the group is revalidated. */
static int plan_for(floe__compaction *c, pending *q, const floe__plan **p, floe__plan **now,
                    floe_error *err)
{
    if (floe__metadata_current_snapshot_id(c->t->loaded->metadata) == (*p)->snapshot_id)
        return FLOE_OK;
    floe__plan_free(*now);
    *now = NULL;
    FLOE_FORWARD(floe__table_plan(c->t, -1, now, err));
    FLOE_FORWARD(revalidate(c, q, *now, err));
    *p = *now;
    return FLOE_OK;
}

/* One commit attempt of a group: against the start plan while main is
 * still there, else a new plan the group is revalidated on (*stale when it
 * failed that: the group is given up).  With a gate, held throughout, after
 * a reload: what its other holder committed is rebased onto, never raced. */
static int attempt_group(floe__compaction *c, pending *q, const floe__plan **p, floe__plan **now,
                         const json_t *summary, bool *stale, floe_error *err)
{
    pthread_mutex_t *gate = c->o->gate;
    if (gate)
        pthread_mutex_lock(gate);
    int rc = gate ? floe__table_refresh(c->t, err) : FLOE_OK;
    if (rc == FLOE_OK)
        rc = plan_for(c, q, p, now, err);
    *stale = rc != FLOE_OK;
    if (rc == FLOE_OK)
        rc = commit_once(c, q, *p, summary, err);
    if (gate)
        pthread_mutex_unlock(gate);
    return rc;
}

/* Commit a rewritten group, rebasing onto concurrent commits (their
 * deletes on the group's rows carried over).  *keep_files: whether the new
 * files may be referenced (a commit landed or its outcome is unknown). */
static int commit_group(floe__compaction *c, pending *q, bool *keep_files, floe_error *err)
{
    json_t *summary = NULL;
    uint8_t u[16];
    int rc = floe__uuid_random(u, err);
    if (rc == FLOE_OK) {
        floe__uuid_format(u, q->id);
        rc = summary_of(q->id, &summary, err);
    }
    const floe__plan *p = c->plan;
    floe__plan *now = NULL;
    *keep_files = false;
    if (rc == FLOE_OK && c->o->before_commit)
        rc = c->o->before_commit(c->o->hook_ctx, err);
    /* rows spread over another spec's partitions are not handed over (a
     * key index reads the new files instead) */
    bool handed = rc == FLOE_OK && c->o->on_moves && !q->map->out_row;
    if (handed) {                                   /* before the snapshot can be seen */
        floe__compact_moved moved = {q->id, q->paths, q->map, q->files};
        c->o->on_moves(c->o->moves_ctx, &moved);
    }
    /* a conflict, a transient failure (the network) or an unknown outcome:
     * after a short random wait (so that a writer committing in step with
     * us is not met again at the same moment), look, rebase, again */
    floe__retry retry;
    floe__retry_init(&retry, 20, 1000);
    retry.max_attempts = MAX_ATTEMPTS;
    retry.unknown_too = true;
    while (rc == FLOE_OK) {
        bool stale = false;
        rc = attempt_group(c, q, &p, &now, summary, &stale, err);
        *keep_files |= rc == FLOE_EUNKNOWN_OUTCOME;
        c->res->conflicts += rc == FLOE_ECONFLICT;
        if (stale || !floe__retry_again(&retry, rc))
            break;
        floe_error_clear(err);
        if ((rc = floe__table_refresh(c->t, err)) == FLOE_OK &&
            floe__table_has_maintenance_id(c->t, q->id))
            break;                                  /* the unknown outcome was a success */
    }
    *keep_files |= rc == FLOE_OK || rc == FLOE_EUNKNOWN_OUTCOME;   /* the last may have landed */
    if (handed && !*keep_files && c->o->on_abandoned)
        c->o->on_abandoned(c->o->moves_ctx, q->id);
    floe__plan_free(now);
    json_decref(summary);
    return rc;
}

/* ---- a run ---------------------------------------------------------------------------------- */

static int do_group(floe__compaction *c, const floe__compact_group *g, floe_error *err)
{
    if (c->o->dry_run) {                          /* what would be read, nothing written */
        c->res->groups++;
        c->res->files_rewritten += g->n;
        for (size_t k = 0; k < g->n; k++)
            c->res->bytes_read += c->plan->data[g->files[k]].f.file.metrics.file_size;
        return FLOE_OK;
    }
    floe__content_list files = {0};
    floe__compact_map map = {0};
    pending q = {.g = g, .map = &map, .files = &files};
    bool keep = false;
    int rc = floe__compact_rewrite(c, g, &map, &files, err);
    if (rc == FLOE_OK)
        rc = pending_init(c, &q, err);
    if (rc == FLOE_OK)
        rc = commit_group(c, &q, &keep, err);
    if (!keep)
        for (size_t i = 0; i < files.n; i++)
            floe__fileio_remove(c->t->io, files.files[i].path, NULL);
    if (rc == FLOE_OK) {
        c->res->groups++;
        c->res->files_rewritten += g->n;
        c->res->files_written += files.n;
        for (size_t i = 0; i < files.n; i++)
            c->res->bytes_written += files.files[i].metrics.file_size;
    }
    pending_clear(&q);
    floe__compact_map_clear(&map);
    floe__content_list_clear(&files);
    return rc;
}

void floe__compaction_clear(floe__compaction *c)
{
    floe__live_free(c->live);
    floe__plan_free(c->plan);
    floe_schema_free(c->rows);
    floe_schema_free(c->schema);
    floe__buf_free(&c->row);
}

int floe__compaction_start(floe__compaction *c, floe_error *err)
{
    FLOE_FORWARD(floe__table_check_format(c->t, err));
    const floe__metadata *md = c->t->loaded->metadata;
    int32_t current = floe__metadata_default_spec_id(md);
    FLOE_RETURN_IF((c->o->respec || c->o->all) && c->t->spec_id != current, err, FLOE_ESTATE,
                   "the table's partition spec is now %d, the handle was opened with spec %d: "
                   "open the table again to rewrite files into the current spec", (int)current,
                   (int)c->t->spec_id);
    FLOE_FORWARD(floe__table_file_options(c->t, FLOE_CONTENT_DATA, &c->wopts, err));
    if (c->o->target_file_size)
        c->wopts.target_file_size = c->o->target_file_size;
    const floe__snapshot *s = floe__metadata_current_snapshot(md);
    c->start_seq = s ? s->sequence_number : 0;
    FLOE_FORWARD(floe__table_current_schema(c->t, &c->schema, err));
    FLOE_FORWARD(floe__compact_row_schema(c, err));
    FLOE_FORWARD(floe__table_plan(c->t, -1, &c->plan, err));
    return floe__live_new(c->t->io, c->plan, c->schema, &c->live, err);
}

int floe__compact(floe__table *t, const floe__compact_options *o, floe__compact_result *res,
                  floe_error *err)
{
    memset(res, 0, sizeof *res);
    floe__compaction *c = floe__calloc(1, sizeof *c);
    if (!c)
        return FLOE_OOM(err);
    *c = (floe__compaction){.t = t, .o = o, .res = res};
    floe__buf_init(&c->row, 0);
    floe__compact_group *gs = NULL;
    size_t n = 0;
    int rc = floe__table_refresh(t, err);
    if (rc == FLOE_OK)
        rc = floe__compaction_start(c, err);
    if (rc == FLOE_OK)
        rc = choose(c, &gs, &n, err);
    for (size_t k = 0; rc == FLOE_OK && k < n; k++) {
        if (o->max_bytes && res->bytes_read >= o->max_bytes)
            break;
        rc = do_group(c, &gs[k], err);
        if (rc == FLOE_ECONFLICT) {              /* that group lost; the others may not */
            res->groups_failed++;
            floe_error_clear(err);
            rc = FLOE_OK;
        }
    }
    for (size_t k = 0; k < n; k++)
        floe__free(gs[k].files);
    floe__free(gs);
    floe__compaction_clear(c);
    floe__free(c);
    return rc == FLOE_OK ? FLOE_OK : floe__err_wrap(err, rc, "compacting %s.%s", t->ns, t->name);
}
