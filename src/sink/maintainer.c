/*
 * maintainer.c - `--maintain auto`: table maintenance while the sink runs,
 * on a thread of its own with its own catalog connection and table handle,
 * so that a compaction never holds up a commit.
 *
 * Each round (after a commit, or every few seconds while idle) it looks at
 * the table's debt and does what is due, within a budget of wall time
 * (default 20%: the thread's busy time stays below budget x the time since
 * it started; a round that would go over waits):
 *   - compaction of the groups most in need, bounded in bytes by what the
 *     budget allows at the rate compaction ran so far;
 *   - snapshot expiry once the oldest snapshot is a tenth past the table's
 *     age limit (history.expire.max-snapshot-age-ms), keeping the sink's
 *     last commit and what follows it (the key index walks forward from it);
 *   - orphan removal every orphan interval (files older than the window).
 * Compactions and expiry commit under the sink's commit gate, so they
 * never race the sink's commits; compaction rebases onto the sink's commits,
 * carrying their deletes, and the sink's key index learns where it moved
 * rows from the moves each group hands over before its first commit
 * attempt (moves.c) rather than reading the new files.
 * A failed round is counted and reported as a warning; the sink goes on.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "maint/maint_internal.h"
#include "sink/moves_internal.h"
#include "sink/sink_internal.h"

#define IDLE_NS ((uint64_t)5 * 1000000000)
#define DAY_MS ((int64_t)24 * 3600 * 1000)
#define MIN_RATE 8e6                       /* bytes/s assumed before compaction ran */

struct floe__maintainer {
    floe__maintainer_config cfg;
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, nudged;
    bool paused;                           /* floe__maintainer_pause: no rounds */
    int64_t index_at;                      /* where the key index stands; 0: none */
    /* the thread's own */
    floe__fileio *io;
    floe__catalog *catalog;
    floe__table *table;
    uint64_t t0, busy_ns, last_orphans_ns;
    double rate;                           /* compaction bytes/s seen */
    /* shared, under mu */
    floe__maintainer_stats stats;
};

/* ---- one round ------------------------------------------------------------------------------ */

static int open_table(floe__maintainer *m, floe_error *err)
{
    if (m->table) {
        FLOE_FORWARD(floe__table_refresh(m->table, err));
        /* compaction writes in the table's default spec, whoever changed it
         * (the sink's own spec changes included): this handle follows it */
        m->table->spec_id = floe__metadata_default_spec_id(m->table->loaded->metadata);
        return FLOE_OK;
    }
    FLOE_FORWARD(floe__catalog_open(&m->cfg.connect, &m->io, &m->catalog, err));
    return floe__table_open(m->catalog, m->io, m->cfg.ns, m->cfg.name, NULL, NULL, &m->table,
                            err);
}

/* The share of a file's rows deleted past which the sink's own maintenance
 * rewrites it (floe maintain's default is 0.3, as Java's): deleted rows are
 * what readers pay for most (DuckDB spends more on 20% of rows deleted by
 * position than on scanning them), and the budget, not this, bounds the
 * work.  The table property floe.compact.delete-ratio wins over it. */
#define SINK_DELETE_RATIO 0.05

static double delete_ratio(const floe__maintainer *m)
{
    return floe__compact_delete_ratio(m->table->loaded->metadata, SINK_DELETE_RATIO);
}

static bool compaction_due(const floe_table_debt *d, double ratio)
{
    return d->small_data_files >= 2 || d->deleted_ratio >= ratio || d->equality_delete_files > 0;
}

/* Past the age limit by a tenth (so that a sink committing every second
 * does not expire a snapshot or two every round). */
static bool expiry_due(const floe__maintainer *m, const floe_table_debt *d)
{
    const floe__metadata *md = m->table->loaded->metadata;
    int64_t age = floe__metadata_property_int(md, "history.expire.max-snapshot-age-ms", 5 * DAY_MS);
    int64_t keep = floe__metadata_property_int(md, "history.expire.min-snapshots-to-keep", 1);
    return (int64_t)d->snapshots > keep && d->oldest_snapshot_age_ms > age + age / 10;
}

static void add_removal(floe__maintainer_stats *st, const floe__removal *r)
{
    for (int k = 0; k < FLOE_REACH_KINDS; k++)
        st->files_removed += r->files[k];
    st->bytes_removed += r->bytes;
}

static void hand_moves(void *ctx, const floe__compact_moved *moved)
{
    floe__moves_put(ctx, moved);
}

static void withdraw_moves(void *ctx, const char *id)
{
    floe__moved_free(floe__moves_take(ctx, id));
}

/* final: a round while the sink runs groups files by size tier; the final
 * pass puts all of a partition's small files in one group, two of them
 * already being enough. */
static int compact(floe__maintainer *m, double seconds, double ratio, bool final,
                   floe_error *err)
{
    floe__compact_options o = {.max_bytes = (uint64_t)(seconds * m->rate) + 1, .tiered = !final,
                               .min_input_files = final ? 2 : 0,
                               .delete_ratio = ratio, .gate = m->cfg.gate};
    if (m->cfg.moves) {
        o.on_moves = hand_moves;
        o.on_abandoned = withdraw_moves;
        o.moves_ctx = m->cfg.moves;
    }
    floe__compact_result r;
    uint64_t t0 = floe__monotonic_ns();
    int rc = floe__compact(m->table, &o, &r, err);
    double took = (double)(floe__monotonic_ns() - t0) / 1e9;
    if (r.bytes_read && took > 0.01)
        m->rate = 0.5 * m->rate + 0.5 * ((double)r.bytes_read / took);
    pthread_mutex_lock(&m->mu);
    m->stats.compactions += r.groups;
    m->stats.files_compacted += r.files_rewritten;
    m->stats.deletes_carried += r.deletes_carried;
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int expire(floe__maintainer *m, floe_error *err)
{
    pthread_mutex_lock(&m->mu);
    floe__expire_options o = {.older_than_ms = -1, .keep_since = m->index_at,
                              .clean_files = true, .gate = m->cfg.gate};
    pthread_mutex_unlock(&m->mu);
    floe__expire_result r;
    FLOE_FORWARD(floe__expire(m->table, &o, &r, err));
    pthread_mutex_lock(&m->mu);
    m->stats.snapshots_expired += r.snapshots_expired;
    add_removal(&m->stats, &r.removed);
    pthread_mutex_unlock(&m->mu);
    return FLOE_OK;
}

static int orphans(floe__maintainer *m, floe_error *err)
{
    floe__orphan_options o = {.older_than_ms = m->cfg.orphan_age_ms};
    floe__orphan_result r;
    FLOE_FORWARD(floe__remove_orphans(m->table, &o, &r, err));
    pthread_mutex_lock(&m->mu);
    m->stats.orphans_removed += r.orphans - r.too_young;
    add_removal(&m->stats, &r.removed);
    pthread_mutex_unlock(&m->mu);
    return FLOE_OK;
}

static int look(floe__maintainer *m, floe_table_debt *d, floe_error *err)
{
    FLOE_FORWARD(open_table(m, err));
    FLOE_FORWARD(floe__debt(m->table, d, err));
    pthread_mutex_lock(&m->mu);
    m->stats.debt = *d;
    m->stats.debt_known = true;
    pthread_mutex_unlock(&m->mu);
    return FLOE_OK;
}

/* What the budget allows now, in seconds of work (<= 0: nothing). */
static double allowance(const floe__maintainer *m, uint64_t now)
{
    double elapsed = (double)(now - m->t0) / 1e9, busy = (double)m->busy_ns / 1e9;
    return m->cfg.budget * elapsed - busy;
}

static int round_once(floe__maintainer *m, floe_error *err)
{
    floe_table_debt d;
    FLOE_FORWARD(look(m, &d, err));
    bool acted = false;
    double left = allowance(m, floe__monotonic_ns());
    double ratio = delete_ratio(m);
    if (left > 0 && compaction_due(&d, ratio)) {
        FLOE_FORWARD(compact(m, left, ratio, false, err));
        acted = true;
    }
    if (expiry_due(m, &d)) {
        FLOE_FORWARD(expire(m, err));
        acted = true;
    }
    uint64_t now = floe__monotonic_ns(), every = m->cfg.orphan_interval_ns;
    if (every && now - m->last_orphans_ns >= every) {
        m->last_orphans_ns = now;
        FLOE_FORWARD(orphans(m, err));
        acted = true;
    }
    return acted ? look(m, &d, err) : FLOE_OK;
}

/* Work that took `took` ns and ended in rc counted; a failure is a
 * warning: "WHAT: why (THEN)". */
static void account(floe__maintainer *m, uint64_t took, int rc, const floe_error *err,
                    const char *what, const char *then)
{
    pthread_mutex_lock(&m->mu);
    m->stats.busy_ns += took;
    if (rc != FLOE_OK)
        m->stats.failures++;
    pthread_mutex_unlock(&m->mu);
    if (rc != FLOE_OK && m->cfg.on_warning) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s: %s (%s)", what,
                 err ? floe_error_message(err) : floe_code_string(rc), then);
        m->cfg.on_warning(m->cfg.warning_ctx, msg);
    }
}

static void run_round(floe__maintainer *m)
{
    floe_error *err = floe_error_new();
    uint64_t t0 = floe__monotonic_ns();
    int rc = round_once(m, err);
    uint64_t took = floe__monotonic_ns() - t0;
    m->busy_ns += took;
    pthread_mutex_lock(&m->mu);
    m->stats.runs++;
    pthread_mutex_unlock(&m->mu);
    account(m, took, rc, err, "table maintenance", "the sink goes on; the next round tries again");
    floe_error_free(err);
}

/* ---- the thread ---------------------------------------------------------------------------- */

static void wait_for_work(floe__maintainer *m)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(IDLE_NS / 1000000000);
    while (!m->stop && !m->nudged)
        if (pthread_cond_timedwait(&m->cv, &m->mu, &until) != 0)
            break;
    m->nudged = false;
}

static void *thread_main(void *arg)
{
    floe__maintainer *m = arg;
    pthread_mutex_lock(&m->mu);
    for (;;) {
        wait_for_work(m);
        if (m->stop)
            break;
        bool paused = m->paused;
        pthread_mutex_unlock(&m->mu);
        if (!paused && allowance(m, floe__monotonic_ns()) > 0)
            run_round(m);
        pthread_mutex_lock(&m->mu);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

int floe__maintainer_start(const floe__maintainer_config *cfg, floe__maintainer **out,
                           floe_error *err)
{
    floe__maintainer *m = floe__calloc(1, sizeof *m);
    if (!m)
        return FLOE_OOM(err);
    m->cfg = *cfg;
    m->index_at = cfg->index_at;
    if (m->cfg.budget <= 0 || m->cfg.budget > 1)
        m->cfg.budget = 0.2;
    if (m->cfg.orphan_age_ms <= 0)
        m->cfg.orphan_age_ms = DAY_MS;
    m->rate = MIN_RATE;
    m->t0 = floe__monotonic_ns();
    m->last_orphans_ns = m->t0 - m->cfg.orphan_interval_ns + m->cfg.orphan_first_ns;
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    if (pthread_create(&m->thread, NULL, thread_main, m) != 0) {
        floe__maintainer_stop(m);
        return floe__err_set(err, FLOE_EIO, "cannot start the table maintenance thread");
    }
    m->started = true;
    *out = m;
    return FLOE_OK;
}

void floe__maintainer_committed(floe__maintainer *m, int64_t index_at)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->nudged = true;
    m->index_at = index_at;
    pthread_cond_signal(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

void floe__maintainer_pause(floe__maintainer *m, bool paused)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    m->paused = paused;
    pthread_mutex_unlock(&m->mu);
}

void floe__maintainer_stats_get(floe__maintainer *m, floe__maintainer_stats *out)
{
    pthread_mutex_lock(&m->mu);
    *out = m->stats;
    pthread_mutex_unlock(&m->mu);
}

static void stop_thread(floe__maintainer *m)
{
    if (!m->started)
        return;
    pthread_mutex_lock(&m->mu);
    m->stop = true;
    pthread_cond_signal(&m->cv);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->thread, NULL);
    m->started = false;
}

/* Whether a manifest-merging commit would merge anything: more manifests
 * than one per content, in an unpartitioned spec (merge.c leaves
 * partitioned ones alone). */
static bool mergeable(const floe__maintainer *m, const floe_table_debt *d)
{
    const floe__metadata *md = m->table->loaded->metadata;
    const json_t *spec = floe__metadata_spec_by_id(md, floe__metadata_default_spec_id(md));
    if (!spec || json_array_size(json_object_get(spec, "fields")) != 0)
        return false;
    return d->data_manifests > 1 || d->delete_manifests > (d->delete_files > 0);
}

/* The final pass: compaction rounds in the caller's thread, each bounded by
 * the time left at the rate compaction ran so far, until nothing is due,
 * a round does nothing or the time is up. */
void floe__maintainer_final(floe__maintainer *m, uint64_t max_ns)
{
    if (!m)
        return;
    stop_thread(m);
    if (m->paused)
        return;
    uint64_t t0 = floe__monotonic_ns();
    floe_error *err = floe_error_new();
    int rc = FLOE_OK;
    for (;;) {
        floe_table_debt d;
        uint64_t now = floe__monotonic_ns();
        if (now - t0 >= max_ns || (rc = look(m, &d, err)) != FLOE_OK)
            break;
        double ratio = delete_ratio(m);
        if (!compaction_due(&d, ratio))
            break;
        uint64_t before;
        pthread_mutex_lock(&m->mu);
        before = m->stats.files_compacted;
        pthread_mutex_unlock(&m->mu);
        if ((rc = compact(m, (double)(max_ns - (now - t0)) / 1e9, ratio, true, err)) != FLOE_OK)
            break;
        pthread_mutex_lock(&m->mu);
        bool moved = m->stats.files_compacted != before;
        pthread_mutex_unlock(&m->mu);
        if (!moved)
            break;
    }
    /* then the manifests: one per content where the spec allows (merge.c) */
    floe_table_debt d;
    if (rc == FLOE_OK && floe__monotonic_ns() - t0 < max_ns &&
        (rc = look(m, &d, err)) == FLOE_OK && mergeable(m, &d))
        rc = floe__merge_manifests(m->table, m->cfg.gate, err);
    account(m, floe__monotonic_ns() - t0, rc, err, "table maintenance at the end of the run",
            "the table stays as committed");
    floe_error_free(err);
}

void floe__maintainer_stop(floe__maintainer *m)
{
    if (!m)
        return;
    stop_thread(m);
    floe__table_free(m->table);
    floe__catalog_free(m->catalog);
    floe__fileio_free(m->io);
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
    floe__free(m);
}
