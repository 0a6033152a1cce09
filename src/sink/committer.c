/*
 * committer.c - the committer: sealed batches into snapshots, exactly once
 * (SPEC.md sections 5.1 and 7).
 *
 * One attempt: reload the table; refuse schema or partition-spec evolution
 * by another writer (a batch's own change, found landed, is taken);
 * read this sink id's progress on main's history (progress.c) and judge the
 * batch [lower, upper) against it:
 *
 *   our version, frontier == upper    our earlier attempt landed (its
 *                                     response was lost): done
 *   our version, frontier > upper     an earlier run of this sink committed
 *                                     the batch already (its commit landed
 *                                     after this run started): skip it
 *   newer version (on main or tag)    fenced
 *   frontier == lower                 commit
 *   lower < frontier < upper          part of the batch is in the table: stop
 *   frontier < lower, or our earlier  main was rolled back past what this
 *   snapshots gone from main          sink committed: stop
 *   frontier < lower, this run had    another process of the sink id
 *   nothing committed                 committed since it started: stop
 *
 * A commit asserts the current snapshot (no rebasing) and moves the tag
 * floe-<sink id> to the new snapshot in the same metadata update.
 * Conflicts and unknown outcomes are retried after a reload (which also
 * finds a commit that did land), transient failures are retried, anything
 * else is fatal (the code's class decides), with floe__retry's waits: at most
 * max_tries failures; conflicts another writer's commit explains (main
 * moved: the table goes on) for up to conflict_patience_ms.
 * Each attempt holds the sink's commit gate, which its own maintenance
 * thread's compactions commit under, so those two never race.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sink/sink_internal.h"

struct floe__committer {
    floe__committer_config cfg;
    floe__committer_stats stats;
    char tag[300];                    /* floe-<sink id> */
    /* what the table must show: nothing of ours yet (!has_last), or our
     * progress at last_frontier, recorded by last_snapshot (-1: given by
     * the user, not yet recorded in the table) */
    bool has_last;
    floe__frontier last_frontier;
    int64_t last_snapshot;
};

/* ---- committing ------------------------------------------------------------------------ */

int floe__committer_new(const floe__committer_config *cfg, floe__committer **out,
                        floe_error *err)
{
    floe__committer *c = floe__calloc(1, sizeof *c);
    if (!c)
        return FLOE_OOM(err);
    c->cfg = *cfg;
    floe__progress_tag(cfg->sink_id, c->tag, sizeof c->tag);
    c->has_last = cfg->has_base;
    c->last_frontier = cfg->base_frontier;
    c->last_snapshot = cfg->has_base ? cfg->base_snapshot : -1;
    if (c->cfg.max_tries <= 0)
        c->cfg.max_tries = 5;
    if (c->cfg.backoff_ms == 0)
        c->cfg.backoff_ms = 50;
    if (c->cfg.conflict_patience_ms == 0)
        c->cfg.conflict_patience_ms = 10 * 60 * 1000;
    *out = c;
    return FLOE_OK;
}

void floe__committer_free(floe__committer *c) { floe__free(c); }

void floe__committer_get_stats(const floe__committer *c, floe__committer_stats *out)
{
    *out = c->stats;
}

typedef enum verdict { PROCEED, ALREADY_LANDED, COVERED } verdict;

/* A batch and the frontiers a judgement talks about, as text. */
typedef struct judged {
    const floe__committer *c;
    const floe__sealed *s;
    const floe__progress *p;
    char have[32], lo[32], hi[32], last[32];
} judged;

static void judged_init(judged *j, const floe__committer *c, const floe__sealed *s,
                        const floe__progress *p)
{
    j->c = c;
    j->s = s;
    j->p = p;
    floe__frontier_format(p->frontier, j->have, sizeof j->have);
    floe__frontier_format(s->desc.lower, j->lo, sizeof j->lo);
    floe__frontier_format(s->desc.upper, j->hi, sizeof j->hi);
    floe__frontier_format(c->last_frontier, j->last, sizeof j->last);
}

static int fenced(const judged *j, uint64_t version, const char *frontier, floe_error *err)
{
    return floe__err_set(err, FLOE_EFENCED,
                         "fenced: sink '%s' version %" PRIu64 " committed frontier %s; this "
                         "sink is version %" PRIu64, j->c->cfg.sink_id, version, frontier,
                         j->c->cfg.sink_version);
}

static int rolled_back(const judged *j, floe_error *err)
{
    char where[96] = "no snapshot of this sink is on main's history any more";
    if (j->p->state == FLOE__PROGRESS_FOUND)
        snprintf(where, sizeof where, "its newest snapshot on main's history records %s",
                 j->have);
    return floe__err_set(err, FLOE_ESTATE,
                         "main was rolled back past what sink '%s' committed: %s, but this run "
                         "committed through %s; those rows are no longer in the table.  Run "
                         "again to resume where main's history says (the input must still "
                         "hold the rows)", j->c->cfg.sink_id, where, j->last);
}

/* A sink that started with nothing committed finds progress of its sink
 * id below its batch: no rollback can explain that (this run committed
 * nothing to roll back), another process of the sink id committed since
 * this one opened the table. */
static int another_writer(const judged *j, floe_error *err)
{
    return floe__err_set(err, FLOE_ESTATE,
                         "sink '%s' committed frontier %s since this run started, from another "
                         "process (version %" PRIu64 "): two processes are writing this table "
                         "with the same sink id; nothing of batch [%s, %s) was committed.  Stop "
                         "one of them; a later run resumes from what the table records",
                         j->c->cfg.sink_id, j->have, j->p->sink_version, j->lo, j->hi);
}

static int judge_found(const judged *j, verdict *v, floe_error *err)
{
    const floe__progress *p = j->p;
    const floe__sealed *s = j->s;
    bool same = p->sink_version == j->c->cfg.sink_version;
    if (p->sink_version > j->c->cfg.sink_version)
        return fenced(j, p->sink_version, j->have, err);
    int up = floe__frontier_cmp(p->frontier, s->desc.upper);
    int low = floe__frontier_cmp(p->frontier, s->desc.lower);
    *v = same && up == 0 ? ALREADY_LANDED : same && up > 0 ? COVERED : PROCEED;
    if (*v != PROCEED || low == 0)
        return FLOE_OK;
    if (low < 0 && !j->c->has_last)
        return another_writer(j, err);
    if (low < 0)
        return rolled_back(j, err);
    return floe__err_set(err, FLOE_ESTATE,
                         "batch [%s, %s) is already partly in the table: sink '%s' version %"
                         PRIu64 " committed frontier %s%s", j->lo, j->hi, j->c->cfg.sink_id,
                         p->sink_version, j->have,
                         same ? " after this run started (an earlier run's commit landed "
                                "late); nothing of this batch was committed: run again to "
                                "resume there" : "");
}

static int judge_absent(const judged *j, verdict *v, floe_error *err)
{
    *v = PROCEED;
    if (!j->c->has_last || j->c->last_snapshot < 0)
        return FLOE_OK;            /* nothing of ours committed yet: nothing to find */
    if (j->p->state == FLOE__PROGRESS_NONE)
        return rolled_back(j, err);
    return floe__err_set(err, FLOE_ESTATE,
                         "the progress of sink '%s' can no longer be verified: main's history "
                         "is cut at snapshot %" PRId64 " (its parent %" PRId64 " was expired and "
                         "no metadata file in the metadata-log has it) before this sink's last "
                         "snapshot %" PRId64 ", so whether main was rolled back cannot be "
                         "told.  If it was not, run again with --resume-from '%s'",
                         j->c->cfg.sink_id, j->p->cut_at, j->p->missing, j->c->last_snapshot,
                         j->last);
}

/* Whether the table's current schema is the one batch s is written in
 * (its schema change landed, or the table has it anyway). */
static int schema_is_ours(const floe__table *t, const floe__sealed *s, bool *ours,
                          floe_error *err)
{
    *ours = false;
    if (!s->schema)
        return FLOE_OK;
    floe__schema *cur;
    FLOE_FORWARD(floe__table_current_schema(t, &cur, err));
    *ours = floe__schema_equal(cur, s->schema);
    floe_schema_free(cur);
    return FLOE_OK;
}

/* Steps 1-2 of an attempt on freshly reloaded metadata; *p is what the
 * table says of this sink, *adopt whether the table's current schema is
 * already the batch's. */
static int check_table(floe__committer *c, const floe__sealed *s, verdict *v, floe__progress *pp,
                       bool *adopt, floe_error *err)
{
    floe__table *t = c->cfg.table;
    const floe__metadata *md = t->loaded->metadata;
    int32_t cur = floe__metadata_current_schema_id(md), spec = floe__metadata_default_spec_id(md);
    *adopt = false;
    if (cur != t->schema_id)
        FLOE_FORWARD(schema_is_ours(t, s, adopt, err));
    if (spec != t->spec_id && s->spec && floe__table_default_spec_is(t, s->spec))
        t->spec_id = spec;                 /* the batch's spec change landed already */
    if ((cur != t->schema_id && !*adopt) || spec != t->spec_id)
        return floe__err_set(err, FLOE_ESTATE,
                             "the table's schema or partition spec changed under the running "
                             "sink (schema id %d -> %d, spec id %d -> %d): another writer "
                             "evolved it; run the sink again to write with the table's schema "
                             "as it is now", t->schema_id, cur, t->spec_id,
                             floe__metadata_default_spec_id(md));
    FLOE_FORWARD(floe__progress_read(md, t->io, c->cfg.sink_id, pp, err));
    judged j;
    judged_init(&j, c, s, pp);
    if (pp->tag_has_progress && pp->tag_version > c->cfg.sink_version) {
        char f[32];
        floe__frontier_format(pp->tag_frontier, f, sizeof f);
        return fenced(&j, pp->tag_version, f, err);
    }
    if (pp->state == FLOE__PROGRESS_FOUND)
        return judge_found(&j, v, err);
    return judge_absent(&j, v, err);
}

static int summary_of(const floe__committer *c, const floe__sealed *s, json_t **out,
                      floe_error *err)
{
    char f[32], ver[24];
    floe__frontier_format(s->desc.upper, f, sizeof f);
    snprintf(ver, sizeof ver, "%" PRIu64, c->cfg.sink_version);
    json_t *o = json_object();
    if (!o || json_object_set_new(o, FLOE_PROP_FRONTIER, json_string(f)) ||
        json_object_set_new(o, FLOE_PROP_SINK_ID, json_string(c->cfg.sink_id)) ||
        json_object_set_new(o, FLOE_PROP_SINK_VERSION, json_string(ver))) {
        json_decref(o);
        return FLOE_OOM(err);
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)c->cfg.extra_props, k, v) {
        if (json_object_set(o, k, v) != 0) {
            json_decref(o);
            return FLOE_OOM(err);
        }
    }
    *out = o;
    return FLOE_OK;
}

/* The commit's own summary count `key` of snapshot id (0 when absent). */
static uint64_t summary_count(const floe__committer *c, int64_t id, const char *key)
{
    const floe__snapshot *snap = floe__metadata_snapshot_by_id(c->cfg.table->loaded->metadata,
                                                               id);
    const char *v = snap ? floe__snapshot_summary_get(snap, key) : NULL;
    return v ? strtoull(v, NULL, 10) : 0;
}

/* delete_files: every delete file and DV the commit added (the position
 * deletes are written while it commits, not with the batch's files). */
static void count_committed(floe__committer *c, const floe__sealed *s, int64_t id, uint64_t ns)
{
    floe__committer_stats *st = &c->stats;
    st->recent_ns[st->snapshots % FLOE__COMMIT_WINDOW] = ns;
    st->snapshots++;
    st->commit_ns_last = ns;
    st->commit_ns_total += ns;
    st->frontier = s->desc.upper;
    st->has_frontier = true;
    for (size_t i = 0; i < s->files.n; i++) {
        const floe__content_file *f = &s->files.files[i];
        if (f->content == FLOE_CONTENT_DATA) {
            st->data_files++;
            st->rows += f->metrics.record_count;
        }
        st->bytes += f->metrics.file_size;
    }
    st->delete_files += summary_count(c, id, "added-delete-files");
}

void floe__attempt_id(uint64_t token, char out[FLOE__ATTEMPT_ID_LEN])
{
    snprintf(out, FLOE__ATTEMPT_ID_LEN, "%016" PRIx64, token);
}

/* With a prepare hook, each attempt's snapshot carries a random token the
 * hook logs with what the attempt changes (the key index's log). */
static int attempt_token(json_t *summary, uint64_t *token, floe_error *err)
{
    uint8_t r[16];
    FLOE_FORWARD(floe__uuid_random(r, err));
    *token = floe__get_le64(r);
    char hex[FLOE__ATTEMPT_ID_LEN];
    floe__attempt_id(*token, hex);
    if (json_object_set_new(summary, FLOE_PROP_ATTEMPT, json_string(hex)) != 0)
        return FLOE_OOM(err);
    return FLOE_OK;
}

/* ---- copy-on-write ----------------------------------------------------------------------- */

/* Asked by the table's write.update.mode, and possible: not (yet) for a
 * partitioned table, whose rewrite would have to keep each file's
 * partition (position deletes then, as the sink warned at open). */
static bool copy_on_write(const floe__committer *c, const floe__posdel_set *deletes)
{
    const char *mode = floe__metadata_property(c->cfg.table->loaded->metadata,
                                               "write.update.mode");
    return c->cfg.prepare && deletes && floe__posdel_set_count(deletes) && mode &&
           strcmp(mode, "copy-on-write") == 0;
}

/* The attempt's request with the rewrite in it: its files after the
 * batch's (*files, the caller frees), its removals, the deletes left. */
static int with_rewrite(const floe__sealed *s, const floe__cow *w, floe__commit_request *req,
                        floe__content_file **files, floe_error *err)
{
    size_t n = s->files.n + w->files.n;
    *files = floe__malloc((n ? n : 1) * sizeof **files);
    if (!*files)
        return FLOE_OOM(err);
    if (s->files.n)
        memcpy(*files, s->files.files, s->files.n * sizeof **files);
    if (w->files.n)                       /* none when every row of the old files went */
        memcpy(*files + s->files.n, w->files.files, w->files.n * sizeof **files);
    req->files = *files;
    req->n_files = n;
    req->remove = w->remove;
    req->n_remove = w->n_remove;
    req->deletes = w->rest;
    return FLOE_OK;
}

/* After the attempt's commit: the rewrite's files stay when it may have
 * landed; else the index forgets its moves and the rewrite is kept in
 * *prev for the next attempt to take over what it can (what it cannot is
 * removed then; a rewrite that may have landed is never taken over: a
 * commit whose outcome was lost could still land and name its files). */
static void rewrite_done(floe__committer *c, floe__cow *w, uint64_t token, int rc,
                         floe__cow **prev)
{
    bool may_have_landed = rc == FLOE_OK || rc == FLOE_EUNKNOWN_OUTCOME;
    if (rc == FLOE_OK) {
        c->stats.rewritten_files += w->n_old;
        c->stats.rewritten_rows += w->stats.rows_written;
    }
    if (may_have_landed) {
        floe__cow_free(w, false);
        return;
    }
    if (c->cfg.rewrote)
        c->cfg.rewrote(c->cfg.rewrote_ctx, token, NULL);
    *prev = w;
}

/* ---- replacing ------------------------------------------------------------------------------ */

/* A batch that replaces the table (a resync): every data file of the
 * current snapshot goes, with every delete file that does not go with one
 * (equality deletes, unscoped position deletes; DVs and file-scoped
 * deletes go with their data file).  *paths point into *plan. */
static int replaced(floe__table *t, floe__plan **plan, const char ***paths, size_t *n,
                    floe_error *err)
{
    FLOE_FORWARD(floe__table_plan(t, -1, plan, err));
    const floe__plan *p = *plan;
    *paths = floe__calloc(p->n_data + p->n_deletes + 1, sizeof **paths);
    if (!*paths)
        return FLOE_OOM(err);
    *n = 0;
    for (size_t i = 0; i < p->n_data; i++)
        (*paths)[(*n)++] = p->data[i].f.file.path;
    for (size_t i = 0; i < p->n_deletes; i++) {
        const floe__content_file *f = &p->deletes[i].file;
        if (!floe__content_is_dv(f) && !f->referenced_data_file)
            (*paths)[(*n)++] = f->path;
    }
    return FLOE_OK;
}

/* ---- one attempt ------------------------------------------------------------------------- */

/* One attempt: FLOE_OK when the batch is in the table (*v says how) and
 * *id is the snapshot that records its upper.  *prev: the copy-on-write
 * rewrite of the attempt before, taken over where it can be (and freed);
 * on return this attempt's when it did not land. */
static int attempt(floe__committer *c, floe__sealed *s, json_t *summary, verdict *v, int64_t *id,
                   floe__cow **prev, floe_error *err)
{
    floe__table *t = c->cfg.table;
    FLOE_FORWARD(floe__table_refresh(t, err));
    floe__progress p;
    bool adopt = false;
    FLOE_FORWARD(check_table(c, s, v, &p, &adopt, err));
    if (adopt)                           /* the table has the batch's schema already */
        FLOE_FORWARD(floe__table_adopt_schema(t, s->schema, err));
    if (*v != PROCEED) {
        *id = p.snapshot_id;
        return FLOE_OK;
    }
    if (c->cfg.summary_hook)
        FLOE_FORWARD(c->cfg.summary_hook(c->cfg.summary_ctx, s->desc.upper, t->loaded->metadata,
                                         summary, err));
    floe__posdel_set *deletes = NULL;
    uint64_t token = 0;
    bool own = !c->cfg.prepare;
    if (own)
        FLOE_FORWARD(floe__delrecs_set(&s->dels, &deletes, err));
    else {
        FLOE_FORWARD(attempt_token(summary, &token, err));
        FLOE_FORWARD(c->cfg.prepare(c->cfg.prepare_ctx, s, token, &deletes, err));
    }
    floe__commit_request req = {
        .files = s->files.files,
        .n_files = s->files.n,
        .summary = summary,
        .base_snapshot_id = floe__metadata_current_snapshot_id(t->loaded->metadata),
        .tag = c->tag,
        .deletes = deletes,
    };
    if (s->schema && !floe__schema_equal(s->schema, t->schema)) {
        req.schema = s->schema;
        req.last_column_id = s->last_column_id;
    }
    if (s->spec && !floe__table_default_spec_is(t, s->spec))
        req.spec = s->spec;

    floe__cow *w = NULL;
    floe__content_file *files = NULL;
    floe__plan *old = NULL;
    const char **gone = NULL;
    int rc = FLOE_OK;
    if (s->desc.replace) {
        rc = replaced(t, &old, &gone, &req.n_remove, err);
        req.remove = gone;
        req.operation = req.n_files ? "overwrite" : "delete";    /* a truncation may add none */
    }
    /* the commit changing the spec deletes by position: its own files are of
     * the new spec, a rewrite's would be of the old one */
    if (rc == FLOE_OK && !req.spec && copy_on_write(c, deletes)) {
        rc = floe__cow_rewrite(t, deletes, *prev, &w, err);
        if (rc == FLOE_OK) {
            c->stats.rewrites_reused += w->reused;
            rc = with_rewrite(s, w, &req, &files, err);
        }
        if (rc == FLOE_OK && c->cfg.rewrote)
            c->cfg.rewrote(c->cfg.rewrote_ctx, token, w);   /* before it can be seen */
    }
    floe__cow_free(*prev, true);
    *prev = NULL;
    if (rc == FLOE_OK)
        rc = floe__table_commit(t, &req, id, err);
    if (w)
        rewrite_done(c, w, token, rc, prev);
    floe__free(gone);
    floe__plan_free(old);
    floe__free(files);
    if (own)
        floe__posdel_set_free(deletes);
    return rc;
}

/* A batch an earlier run committed: its own files are not needed. */
static void skip_covered(floe__committer *c, const floe__sealed *s, int64_t by)
{
    for (size_t i = 0; i < s->files.n; i++)
        floe__fileio_remove(c->cfg.table->io, s->files.files[i].path, NULL);
    c->stats.covered++;
    if (!c->cfg.warn)
        return;
    char lo[32], hi[32], msg[400];
    floe__frontier_format(s->desc.lower, lo, sizeof lo);
    floe__frontier_format(s->desc.upper, hi, sizeof hi);
    snprintf(msg, sizeof msg, "batch [%s, %s) was already committed by another run of sink "
             "'%s' (snapshot %" PRId64 ", committed after this run started: an earlier run's "
             "commit that landed late, or another process of the sink): skipped", lo, hi,
             c->cfg.sink_id, by);
    c->cfg.warn(c->cfg.warn_ctx, msg);
}

/* SPEC 7.4: conflicts, unknown outcomes and transient failures (network,
 * storage) are retried; everything else is fatal.  The code's class in
 * FLOE_ERRNO_MAP decides. */
static bool fatal(int rc)
{
    return floe_code_class(rc) == FLOE_FAIL_FINAL;
}

/* After a conflict: whether main moved past the snapshot the attempt
 * asserted (another writer committed first).  A conflict nothing explains
 * (a catalog refusing with the table unchanged) counts as a failure. */
static bool main_moved(floe__committer *c)
{
    floe__table *t = c->cfg.table;
    int64_t asserted = floe__metadata_current_snapshot_id(t->loaded->metadata);
    return floe__table_refresh(t, NULL) == FLOE_OK &&
           floe__metadata_current_snapshot_id(t->loaded->metadata) != asserted;
}

int floe__committer_commit(floe__committer *c, floe__sealed *s, floe_error *err)
{
    json_t *summary = NULL;
    FLOE_FORWARD(summary_of(c, s, &summary, err));
    uint64_t start = floe__monotonic_ns();
    floe__retry retry;                  /* the waits; the limits are the loop's own */
    floe__retry_init(&retry, c->cfg.backoff_ms, 2000);
    int rc = FLOE_OK;
    int64_t id = -1;
    int failed = 0, conflicts = 0;
    floe__cow *prev = NULL;             /* the last attempt's rewrite (copy-on-write) */
    uint64_t patience = (uint64_t)c->cfg.conflict_patience_ms * 1000000;
    for (;;) {
        verdict v = PROCEED;
        if (c->cfg.gate)
            pthread_mutex_lock(c->cfg.gate);
        rc = attempt(c, s, summary, &v, &id, &prev, err);
        if (c->cfg.gate)
            pthread_mutex_unlock(c->cfg.gate);
        if (rc == FLOE_OK) {
            if (v == ALREADY_LANDED)
                c->stats.lost_responses++;
            if (v == COVERED)
                skip_covered(c, s, id);
            else
                count_committed(c, s, id, floe__monotonic_ns() - start);
            break;
        }
        bool raced = rc == FLOE_ECONFLICT && main_moved(c);
        if (rc == FLOE_ECONFLICT)
            c->stats.conflicts++;
        else
            c->stats.failures++;
        conflicts += raced;
        failed += !raced;
        if (fatal(rc) || failed == c->cfg.max_tries ||
            (raced && floe__monotonic_ns() - start >= patience))
            break;
        floe__retry_sleep_ms(floe__retry_delay(&retry));
    }
    floe__cow_free(prev, true);
    json_decref(summary);
    if (rc != FLOE_OK && !fatal(rc)) {
        char lo[32], hi[32];
        floe__frontier_format(s->desc.lower, lo, sizeof lo);
        floe__frontier_format(s->desc.upper, hi, sizeof hi);
        if (failed < c->cfg.max_tries)
            return floe__err_wrap(err, rc, "committing batch [%s, %s): other writers committed "
                                  "first %d times in %.0f s; giving up", lo, hi, conflicts,
                                  (double)(floe__monotonic_ns() - start) / 1e9);
        return floe__err_wrap(err, rc, "committing batch [%s, %s) failed %d times; giving up", lo,
                              hi, failed);
    }
    if (rc != FLOE_OK)
        return rc;
    c->has_last = true;
    c->last_frontier = s->desc.upper;
    c->last_snapshot = id;
    if (c->cfg.on_commit)
        c->cfg.on_commit(c->cfg.on_commit_ctx, s->desc.upper, id);
    return FLOE_OK;
}
