/*
 * expire.c - snapshot expiry with Iceberg's rules (Java's ExpireSnapshots):
 * which snapshots and refs go, one metadata update that removes them, and
 * the deletion of the files only they reached.
 *
 * Properties: history.expire.max-snapshot-age-ms (default 5 days),
 * history.expire.min-snapshots-to-keep (1), history.expire.max-ref-age-ms
 * (forever); a ref's own max-ref-age-ms, and a branch's own
 * max-snapshot-age-ms and min-snapshots-to-keep, win over them.
 *
 * Files: R = what the remaining snapshots (and the metadata) reach, read
 * after the update landed; E = what the removed snapshots reached, read
 * without reopening manifests R already covers.  E - R is deleted.  A file
 * a remaining snapshot holds (a live entry of one of its manifests) is never
 * deleted; a file no snapshot reached (a killed writer's) is orphan
 * removal's business, not expiry's.
 */
#include <stdio.h>

#include "maint/maint_internal.h"

#define DAY_MS ((int64_t)24 * 3600 * 1000)
#define MAX_ATTEMPTS 5
#define KEEP_SINCE_MAX 100       /* snapshots keep_since may hold back */

typedef struct decision {
    const floe__metadata *md;
    int64_t now, cutoff;             /* default: snapshots older than cutoff may go */
    int64_t min_keep, max_ref_age;
    int64_t keep_since;              /* 0, or kept with what follows it on its branch */
    int64_t *keep;                   /* retained snapshot ids (unsorted, may repeat) */
    size_t n_keep;
    int64_t *reached;                /* ancestors of every branch, and tags' snapshots */
    size_t n_reached;
    json_t *drop_refs;               /* names of refs to remove */
} decision;

static bool has_id(const int64_t *ids, size_t n, int64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

static int64_t ref_int(const json_t *ref, const char *key, int64_t dflt)
{
    const json_t *v = json_object_get(ref, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

static const floe__snapshot *parent_of(const decision *d, const floe__snapshot *s)
{
    return s->has_parent ? floe__metadata_snapshot_by_id(d->md, s->parent_snapshot_id) : NULL;
}

/* Whether d->keep_since is head or one of its KEEP_SINCE_MAX newest
 * ancestors (further back, another writer is busy on the branch and the
 * history after keep_since would grow without bound: it goes as usual). */
static bool holds_keep_since(const decision *d, int64_t head)
{
    const floe__snapshot *s = floe__metadata_snapshot_by_id(d->md, head);
    for (int n = 0; d->keep_since && s && n < KEEP_SINCE_MAX; s = parent_of(d, s), n++)
        if (s->snapshot_id == d->keep_since)
            return true;
    return false;
}

/* Keep a branch's head and the ancestors inside its limits, and on the
 * branch holding keep_since, everything from it to the head. */
static void keep_branch(decision *d, const json_t *ref, int64_t head)
{
    int64_t age = ref_int(ref, "max-snapshot-age-ms", -1);
    int64_t cutoff = age >= 0 ? d->now - age : d->cutoff;
    int64_t min_keep = ref_int(ref, "min-snapshots-to-keep", d->min_keep);
    bool guarded = holds_keep_since(d, head);
    size_t kept = 0;
    const floe__snapshot *s = floe__metadata_snapshot_by_id(d->md, head);
    for (; s; s = parent_of(d, s)) {
        d->reached[d->n_reached++] = s->snapshot_id;
        if (guarded || (int64_t)kept < min_keep || s->timestamp_ms >= cutoff || kept == 0) {
            guarded &= s->snapshot_id != d->keep_since;
            d->keep[d->n_keep++] = s->snapshot_id;
            kept++;
        } else {
            cutoff = INT64_MAX;        /* past the limits: the rest only counts as reached */
            min_keep = 0;
        }
    }
}

/* One ref: dropped when older than its max age (never main), else kept. */
static int decide_ref(decision *d, const char *name, const json_t *ref, floe_error *err)
{
    int64_t id = ref_int(ref, "snapshot-id", -1);
    const floe__snapshot *s = floe__metadata_snapshot_by_id(d->md, id);
    bool main = strcmp(name, "main") == 0;
    int64_t max_age = ref_int(ref, "max-ref-age-ms", d->max_ref_age);
    if (!main && (!s || (max_age >= 0 && d->now - s->timestamp_ms > max_age))) {
        if (json_array_append_new(d->drop_refs, json_string(name)) != 0)
            return FLOE_OOM(err);
        return FLOE_OK;
    }
    if (!s)
        return FLOE_OK;
    const char *type = json_string_value(json_object_get(ref, "type"));
    if (type && strcmp(type, "tag") == 0) {
        d->keep[d->n_keep++] = id;
        d->reached[d->n_reached++] = id;
    } else {
        keep_branch(d, ref, id);
    }
    return FLOE_OK;
}

static int decide(decision *d, floe_error *err)
{
    size_t n = floe__metadata_snapshot_count(d->md);
    const json_t *refs = json_object_get(floe__metadata_json(d->md), "refs");
    size_t cap = n * (json_object_size(refs) + 1) + 1;
    d->keep = floe__calloc(cap, sizeof *d->keep);
    d->reached = floe__calloc(cap, sizeof *d->reached);
    d->drop_refs = json_array();
    if (!d->keep || !d->reached || !d->drop_refs)
        return FLOE_OOM(err);
    const char *name;
    const json_t *ref;
    json_object_foreach((json_t *)refs, name, ref)
        FLOE_FORWARD(decide_ref(d, name, ref, err));
    int64_t cur = floe__metadata_current_snapshot_id(d->md);
    if (cur >= 0 && !json_object_get(refs, "main"))       /* main implied by the current id */
        keep_branch(d, NULL, cur);
    for (size_t i = 0; i < n; i++) {                      /* snapshots no ref reaches */
        const floe__snapshot *s = floe__metadata_snapshot_at(d->md, i);
        if (!has_id(d->reached, d->n_reached, s->snapshot_id) && s->timestamp_ms >= d->cutoff)
            d->keep[d->n_keep++] = s->snapshot_id;
    }
    return FLOE_OK;
}

static void decision_clear(decision *d)
{
    floe__free(d->keep);
    floe__free(d->reached);
    json_decref(d->drop_refs);
    memset(d, 0, sizeof *d);
}

static int decision_init(decision *d, const floe__metadata *md, const floe__expire_options *o,
                         floe_error *err)
{
    *d = (decision){.md = md, .now = o->now_ms ? o->now_ms : floe__now_ms(),
                    .keep_since = o->keep_since};
    int64_t age = o->older_than_ms >= 0
                      ? o->older_than_ms
                      : floe__metadata_property_int(md, "history.expire.max-snapshot-age-ms",
                                                    5 * DAY_MS);
    d->cutoff = d->now - age;
    d->min_keep = o->retain_last > 0
                      ? o->retain_last
                      : floe__metadata_property_int(md, "history.expire.min-snapshots-to-keep", 1);
    d->max_ref_age = floe__metadata_property_int(md, "history.expire.max-ref-age-ms", -1);
    return decide(d, err);
}

/* ---- the metadata update ------------------------------------------------------------------ */

/* The ids to remove, as a JSON array (empty when none). */
static int expired_ids(const decision *d, json_t **out, floe_error *err)
{
    *out = json_array();
    if (!*out)
        return FLOE_OOM(err);
    for (size_t i = 0; i < floe__metadata_snapshot_count(d->md); i++) {
        int64_t id = floe__metadata_snapshot_at(d->md, i)->snapshot_id;
        if (!has_id(d->keep, d->n_keep, id) && json_array_append_new(*out, json_integer(id)))
            return FLOE_OOM(err);
    }
    return FLOE_OK;
}

static int build_update(const decision *d, const json_t *ids, json_t **reqs, json_t **ups,
                        floe_error *err)
{
    const char *uuid = floe__metadata_table_uuid(d->md);
    int64_t cur = floe__metadata_current_snapshot_id(d->md);
    *reqs = json_pack("[{s:s, s:s}, {s:s, s:s, s:o}]", "type", "assert-table-uuid", "uuid",
                      uuid ? uuid : "", "type", "assert-ref-snapshot-id", "ref", "main",
                      "snapshot-id", cur < 0 ? json_null() : json_integer(cur));
    *ups = json_array();
    if (!*reqs || !*ups)
        return FLOE_OOM(err);
    size_t i;
    const json_t *name;
    json_array_foreach(d->drop_refs, i, name) {
        if (json_array_append_new(*ups, json_pack("{s:s, s:O}", "action", "remove-snapshot-ref",
                                                  "ref-name", name)) != 0)
            return FLOE_OOM(err);
    }
    if (json_array_size(ids) &&
        json_array_append_new(*ups, json_pack("{s:s, s:O}", "action", "remove-snapshots",
                                              "snapshot-ids", ids)) != 0)
        return FLOE_OOM(err);
    return FLOE_OK;
}

/* What the snapshots in `ids` reached that R (what remains) does not. */
typedef struct gone {
    floe__reach *expired;
    const floe__reach *remaining;
    floe__fileio *io;
    bool dry_run;
    floe__removal *removed;
} gone;

static int delete_one(void *ctx, const char *uri, floe__reach_kind kind, uint64_t size,
                      floe_error *err)
{
    (void)err;
    gone *g = ctx;
    if (floe__reach_has(g->remaining, uri))
        return FLOE_OK;
    int rc = g->dry_run ? FLOE_OK : floe__fileio_remove(g->io, uri, NULL);
    if (rc != FLOE_OK && rc != FLOE_ENOTFOUND) {
        g->removed->failed++;
        return FLOE_OK;
    }
    g->removed->files[kind]++;
    g->removed->bytes += size;
    return FLOE_OK;
}

/* The statistics files of removed snapshots. */
static int expired_stats(floe__reach *r, const floe__metadata *md, const json_t *ids,
                         floe_error *err)
{
    static const char *const keys[] = {"statistics", "partition-statistics"};
    for (int k = 0; k < 2; k++) {
        size_t i;
        const json_t *v;
        json_array_foreach(json_object_get(floe__metadata_json(md), keys[k]), i, v) {
            const char *path = json_string_value(json_object_get(v, "statistics-path"));
            size_t j;
            const json_t *id;
            json_array_foreach(ids, j, id) {
                if (path && json_integer_value(id) == ref_int(v, "snapshot-id", -1))
                    FLOE_FORWARD(floe__reach_add(r, path, FLOE_REACH_STATS, 0, err));
            }
        }
    }
    return FLOE_OK;
}

/* Delete what only the removed snapshots of `old` reached.  `now` is the
 * metadata after the update (NULL in a dry run: `old` minus the removed). */
static int clean(floe__table *t, const floe__metadata *old, const json_t *ids, bool dry_run,
                 floe__removal *removed, floe_error *err)
{
    floe__reach *remaining = NULL, *expired = NULL;
    FLOE_FORWARD(floe__reach_new(&remaining, err));
    int rc = floe__reach_new(&expired, err);
    const floe__metadata *now = dry_run ? old : t->loaded->metadata;
    for (size_t i = 0; rc == FLOE_OK && i < floe__metadata_snapshot_count(now); i++) {
        const floe__snapshot *s = floe__metadata_snapshot_at(now, i);
        bool going = false;
        size_t j;
        const json_t *id;
        json_array_foreach(ids, j, id)
            going |= json_integer_value(id) == s->snapshot_id;
        if (!going)
            rc = floe__reach_snapshot(remaining, NULL, t->io, s, err);
    }
    for (size_t i = 0; rc == FLOE_OK && i < json_array_size(ids); i++) {
        const floe__snapshot *s =
            floe__metadata_snapshot_by_id(old, json_integer_value(json_array_get(ids, i)));
        if (s)
            rc = floe__reach_snapshot(expired, remaining, t->io, s, err);
    }
    if (rc == FLOE_OK)
        rc = expired_stats(expired, old, ids, err);
    gone g = {expired, remaining, t->io, dry_run, removed};
    if (rc == FLOE_OK)
        rc = floe__reach_each(expired, delete_one, &g, err);
    floe__reach_free(remaining);
    floe__reach_free(expired);
    return rc;
}

/* ---- one expiry ------------------------------------------------------------------------------ */

/* Decide and update once; *ids (the removed snapshot ids) and *old (the
 * metadata they were removed from, set once the update landed) are the
 * caller's. */
static int attempt(floe__table *t, const floe__expire_options *o, floe__expire_result *res,
                   json_t **ids, floe__loaded_table **old, floe_error *err)
{
    decision d;
    int rc = decision_init(&d, t->loaded->metadata, o, err);
    if (rc == FLOE_OK)
        rc = expired_ids(&d, ids, err);
    if (rc == FLOE_OK) {
        res->snapshots_expired = json_array_size(*ids);
        res->refs_removed = json_array_size(d.drop_refs);
    }
    bool change = rc == FLOE_OK && !o->dry_run &&
                  res->snapshots_expired + res->refs_removed > 0;
    json_t *reqs = NULL, *ups = NULL;
    if (change)
        rc = build_update(&d, *ids, &reqs, &ups, err);
    if (change && rc == FLOE_OK) {
        *old = t->loaded;
        t->loaded = NULL;
        rc = floe__table_update(t, reqs, ups, err);
        if (rc != FLOE_OK) {
            t->loaded = *old;
            *old = NULL;
        }
    }
    json_decref(reqs);
    json_decref(ups);
    decision_clear(&d);
    return rc;
}

int floe__expire(floe__table *t, const floe__expire_options *o, floe__expire_result *res,
                 floe_error *err)
{
    memset(res, 0, sizeof *res);
    json_t *ids = NULL;
    floe__loaded_table *old = NULL;
    floe__retry retry;                   /* a lost race or the network: again, as it is now */
    floe__retry_init(&retry, 20, 1000);
    retry.max_attempts = MAX_ATTEMPTS;
    int rc = FLOE_OK;
    if (o->gate) {                       /* what committed before it took the gate */
        pthread_mutex_lock(o->gate);
        rc = floe__table_refresh(t, err);
    }
    if (rc == FLOE_OK)
        rc = attempt(t, o, res, &ids, &old, err);
    while (floe__retry_again(&retry, rc)) {
        json_decref(ids);
        ids = NULL;
        floe_error_clear(err);
        if ((rc = floe__table_refresh(t, err)) != FLOE_OK)
            break;
        rc = attempt(t, o, res, &ids, &old, err);
    }
    if (o->gate)
        pthread_mutex_unlock(o->gate);
    if (rc == FLOE_OK && o->clean_files && json_array_size(ids))
        rc = clean(t, old ? old->metadata : t->loaded->metadata, ids, o->dry_run, &res->removed,
                   err);
    json_decref(ids);
    floe__loaded_table_free(old);
    return rc == FLOE_OK ? FLOE_OK : floe__err_wrap(err, rc, "expiring snapshots of %s.%s",
                                                     t->ns, t->name);
}
