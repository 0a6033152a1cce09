/*
 * commit.c - the committer: sealed batches into snapshots, exactly once
 * (SPEC.md sections 5.1 and 7).
 *
 * One attempt: reload the table; refuse schema or partition-spec evolution;
 * read the last floe progress.  If it is our own commit of this very batch
 * (same sink id and version, frontier == upper) the response of an earlier
 * attempt was lost: done.  A newer sink version fences us; a range that
 * another writer already covered is fatal.  Otherwise commit asserting the
 * current snapshot (no rebasing).  Conflicts and unknown outcomes are retried
 * after a reload (which also finds a commit that did land), failures before
 * anything was sent are retried, anything else is fatal; at most max_tries
 * attempts with doubling backoff.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sink/sink_internal.h"

struct floe__committer {
    floe__committer_config cfg;
    floe__committer_stats stats;
};

/* ---- progress (SPEC 5.1) ------------------------------------------------------------ */

static int by_sequence_desc(const void *a, const void *b)
{
    const floe__snapshot *x = *(const floe__snapshot *const *)a;
    const floe__snapshot *y = *(const floe__snapshot *const *)b;
    if (x->sequence_number != y->sequence_number)
        return x->sequence_number > y->sequence_number ? -1 : 1;
    return x->timestamp_ms > y->timestamp_ms ? -1 : x->timestamp_ms < y->timestamp_ms;
}

static int progress_of(const floe__snapshot *s, floe__progress *out, floe_error *err)
{
    const char *f = floe__snapshot_summary_get(s, FLOE_PROP_FRONTIER);
    const char *id = floe__snapshot_summary_get(s, FLOE_PROP_SINK_ID);
    const char *ver = floe__snapshot_summary_get(s, FLOE_PROP_SINK_VERSION);
    if (!f || !id || !ver)
        return FLOE_ENOTFOUND;
    char *end = NULL;
    unsigned long long v = strtoull(ver, &end, 10);
    if (!*ver || *end || ver[0] == '-')
        return floe__err_set(err, FLOE_EFORMAT, "snapshot %" PRId64 ": bad %s '%s'",
                             s->snapshot_id, FLOE_PROP_SINK_VERSION, ver);
    FLOE_FORWARD_CTX(floe__frontier_parse(f, &out->frontier, err), err,
                     "snapshot %" PRId64 ": %s", s->snapshot_id, FLOE_PROP_FRONTIER);
    out->has = true;
    snprintf(out->sink_id, sizeof out->sink_id, "%s", id);
    out->sink_version = v;
    out->snapshot_id = s->snapshot_id;
    return FLOE_OK;
}

int floe__read_progress(const floe__metadata *md, floe__progress *out, floe_error *err)
{
    memset(out, 0, sizeof *out);
    size_t n = floe__metadata_snapshot_count(md);
    if (n == 0)
        return FLOE_OK;
    const floe__snapshot **order = floe__malloc(n * sizeof *order);
    if (!order)
        return FLOE_OOM(err);
    for (size_t i = 0; i < n; i++)
        order[i] = floe__metadata_snapshot_at(md, i);
    qsort(order, n, sizeof *order, by_sequence_desc);
    int rc = FLOE_OK;
    for (size_t i = 0; i < n; i++) {
        rc = progress_of(order[i], out, err);
        if (rc != FLOE_ENOTFOUND)
            break;
        rc = FLOE_OK;
        const char *op = order[i]->operation;
        if (op && strcmp(op, "replace") == 0)
            continue;
        rc = floe__err_set(err, FLOE_ESTATE,
                           "snapshot %" PRId64 " (operation %s) carries no floe progress: the "
                           "table was changed by another writer, so floe cannot tell where to "
                           "resume", order[i]->snapshot_id, op ? op : "unknown");
        break;
    }
    floe__free(order);
    return rc;
}

/* ---- committing ------------------------------------------------------------------------ */

int floe__committer_new(const floe__committer_config *cfg, floe__committer **out,
                        floe_error *err)
{
    floe__committer *c = floe__calloc(1, sizeof *c);
    if (!c)
        return FLOE_OOM(err);
    c->cfg = *cfg;
    if (c->cfg.max_tries <= 0)
        c->cfg.max_tries = 5;
    if (c->cfg.backoff_ms == 0)
        c->cfg.backoff_ms = 50;
    *out = c;
    return FLOE_OK;
}

void floe__committer_free(floe__committer *c) { floe__free(c); }

void floe__committer_get_stats(const floe__committer *c, floe__committer_stats *out)
{
    *out = c->stats;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

typedef enum verdict { PROCEED, ALREADY_LANDED } verdict;

/* Step 1-2 of an attempt on freshly reloaded metadata. */
static int check_table(floe__committer *c, const floe__sealed *s, verdict *v, floe_error *err)
{
    floe__table *t = c->cfg.table;
    const floe__metadata *md = t->loaded->metadata;
    if (floe__metadata_current_schema_id(md) != t->schema_id ||
        floe__metadata_default_spec_id(md) != t->spec_id)
        return floe__err_set(err, FLOE_ESTATE,
                             "the table's schema or partition spec changed under the running "
                             "sink (schema id %d -> %d, spec id %d -> %d); evolution is refused",
                             t->schema_id, floe__metadata_current_schema_id(md), t->spec_id,
                             floe__metadata_default_spec_id(md));
    floe__progress p;
    FLOE_FORWARD(floe__read_progress(md, &p, err));
    *v = PROCEED;
    if (!p.has)
        return FLOE_OK;
    char have[32], lo[32], hi[32];
    floe__frontier_format(p.frontier, have, sizeof have);
    floe__frontier_format(s->desc.lower, lo, sizeof lo);
    floe__frontier_format(s->desc.upper, hi, sizeof hi);
    if (strcmp(p.sink_id, c->cfg.sink_id) == 0 && p.sink_version == c->cfg.sink_version &&
        floe__frontier_cmp(p.frontier, s->desc.upper) == 0) {
        *v = ALREADY_LANDED;
        return FLOE_OK;
    }
    if (p.sink_version > c->cfg.sink_version)
        return floe__err_set(err, FLOE_EFENCED,
                             "fenced: sink '%s' version %" PRIu64 " committed frontier %s; this "
                             "sink is version %" PRIu64, p.sink_id, p.sink_version, have,
                             c->cfg.sink_version);
    if (floe__frontier_cmp(s->desc.upper, p.frontier) <= 0 ||
        floe__frontier_cmp(s->desc.lower, p.frontier) < 0)
        return floe__err_set(err, FLOE_ESTATE,
                             "batch [%s, %s) was already covered by another writer (sink '%s' "
                             "version %" PRIu64 " committed frontier %s)", lo, hi, p.sink_id,
                             p.sink_version, have);
    if (floe__frontier_cmp(s->desc.lower, p.frontier) > 0)
        return floe__err_set(err, FLOE_EINTERNAL,
                             "batch [%s, %s) does not follow the table's frontier %s", lo, hi,
                             have);
    return FLOE_OK;
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
    *out = o;
    return FLOE_OK;
}

static void count_committed(floe__committer *c, const floe__sealed *s, uint64_t ns)
{
    floe__committer_stats *st = &c->stats;
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
        } else {
            st->delete_files++;
        }
        st->bytes += f->metrics.file_size;
    }
}

/* One attempt: FLOE_OK when the batch is in the table. */
static int attempt(floe__committer *c, const floe__sealed *s, const json_t *summary, bool *landed,
                   floe_error *err)
{
    floe__table *t = c->cfg.table;
    FLOE_FORWARD(floe__table_refresh(t, err));
    verdict v;
    FLOE_FORWARD(check_table(c, s, &v, err));
    if (v == ALREADY_LANDED) {
        *landed = true;
        return FLOE_OK;
    }
    floe__commit_request req = {
        .files = s->files.files,
        .n_files = s->files.n,
        .summary = summary,
        .base_snapshot_id = floe__metadata_current_snapshot_id(t->loaded->metadata),
    };
    int64_t id = 0;
    return floe__table_commit(t, &req, &id, err);
}

/* SPEC 7.4: conflicts, unknown outcomes and transient failures (network,
 * storage) are retried; everything else is fatal.  The code's class in
 * FLOE_ERRNO_MAP decides. */
static bool fatal(int rc)
{
    return floe_code_class(rc) == FLOE_FAIL_FINAL;
}

int floe__committer_commit(floe__committer *c, const floe__sealed *s, floe_error *err)
{
    json_t *summary = NULL;
    FLOE_FORWARD(summary_of(c, s, &summary, err));
    uint64_t start = floe__monotonic_ns();
    unsigned delay = c->cfg.backoff_ms;
    int rc = FLOE_OK;
    for (int try = 1; try <= c->cfg.max_tries; try++) {
        bool landed = false;
        rc = attempt(c, s, summary, &landed, err);
        if (rc == FLOE_OK) {
            if (landed)
                c->stats.lost_responses++;
            count_committed(c, s, floe__monotonic_ns() - start);
            break;
        }
        if (rc == FLOE_ECONFLICT)
            c->stats.conflicts++;
        else
            c->stats.failures++;
        if (fatal(rc) || try == c->cfg.max_tries)
            break;
        sleep_ms(delay + (unsigned)(floe__monotonic_ns() % (delay / 2 + 1)));
        delay = delay * 2 > 2000 ? 2000 : delay * 2;
    }
    json_decref(summary);
    if (rc != FLOE_OK && !fatal(rc)) {
        char lo[32], hi[32];
        floe__frontier_format(s->desc.lower, lo, sizeof lo);
        floe__frontier_format(s->desc.upper, hi, sizeof hi);
        return floe__err_wrap(err, rc, "committing batch [%s, %s) failed %d times; giving up", lo,
                              hi, c->cfg.max_tries);
    }
    if (rc == FLOE_OK && c->cfg.on_commit)
        c->cfg.on_commit(c->cfg.on_commit_ctx, s->desc.upper,
                         floe__metadata_current_snapshot_id(c->cfg.table->loaded->metadata));
    return rc;
}
