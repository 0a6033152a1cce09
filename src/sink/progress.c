/*
 * progress.c - where a sink stands in a table (SPEC.md section 5.1): the
 * newest snapshot on the history of branch `main` (the current snapshot and
 * its ancestors, by parent id) whose summary carries this sink id.
 *
 * Snapshots of other writers (compactions, other engines' appends and
 * deletes, other floe sink ids) are passed over; snapshots off main's
 * history (other branches, snapshots a rollback left behind) never count.
 *
 * Expiry removes snapshots, which can cut main's history.  Two things keep
 * the walk going: every floe commit points the tag `floe-<sink id>` at its
 * own snapshot in the same metadata update (so expiry keeps that snapshot,
 * and a compaction on top of it leaves the chain whole), and when a parent
 * is missing the walk looks it up in the older metadata files the
 * metadata-log lists (a parent link never changes, so an old file's word on
 * it is as good as the current one's).  When neither helps, the progress
 * is *unknown*: the caller must not guess.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "sink/sink_internal.h"

#define MAX_STEPS 10000000          /* a parent chain longer than this is malformed */

void floe__progress_tag(const char *sink_id, char *out, size_t n)
{
    snprintf(out, n, "%s%s", FLOE_PROGRESS_TAG_PREFIX, sink_id);
}

/* ---- one snapshot's floe properties ---------------------------------------------- */

int floe__snapshot_progress(const floe__snapshot *s, floe__frontier *frontier, uint64_t *version,
                            const char **sink_id, floe_error *err)
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
    FLOE_FORWARD_CTX(floe__frontier_parse(f, frontier, err), err, "snapshot %" PRId64 ": %s",
                     s->snapshot_id, FLOE_PROP_FRONTIER);
    *version = v;
    *sink_id = id;
    return FLOE_OK;
}

/* ---- finding snapshots, in older metadata files when need be ------------------------ */

typedef struct walker {
    const floe__metadata *md;
    floe__fileio *io;                /* NULL: no looking into older files */
    floe__metadata **older;          /* loaded from the metadata-log, newest first */
    size_t n_older, next_log;        /* next_log counts log entries from the newest */
} walker;

static void walker_free(walker *w)
{
    for (size_t i = 0; i < w->n_older; i++)
        floe__metadata_free(w->older[i]);
    floe__free(w->older);
}

/* Load the next older metadata file; false when there is none left.  A
 * file that is gone (cleaned up) or unreadable is passed over: it simply
 * cannot vouch for anything. */
static bool load_older(walker *w)
{
    size_t n = floe__metadata_metadata_log_count(w->md);
    while (w->io && w->next_log < n) {
        const floe__metadata_log_entry *e =
            floe__metadata_metadata_log_at(w->md, n - 1 - w->next_log++);
        floe__metadata *old = NULL;
        if (floe__catalog_read_metadata(w->io, e->metadata_file, &old, NULL) != FLOE_OK)
            continue;
        floe__metadata **v = floe__realloc(w->older, (w->n_older + 1) * sizeof *v);
        if (!v) {
            floe__metadata_free(old);
            return false;
        }
        w->older = v;
        w->older[w->n_older++] = old;
        return true;
    }
    return false;
}

static const floe__snapshot *find(walker *w, int64_t id)
{
    const floe__snapshot *s = floe__metadata_snapshot_by_id(w->md, id);
    for (size_t i = 0; !s && i < w->n_older; i++)
        s = floe__metadata_snapshot_by_id(w->older[i], id);
    while (!s && load_older(w))
        s = floe__metadata_snapshot_by_id(w->older[w->n_older - 1], id);
    return s;
}

/* ---- the walk ------------------------------------------------------------------------- */

static void read_tag(const floe__metadata *md, const char *sink_id, floe__progress *out,
                     floe_error *err)
{
    char tag[300];
    floe__progress_tag(sink_id, tag, sizeof tag);
    const char *type = NULL;
    int64_t id = -1;
    if (!floe__metadata_ref(md, tag, &id, &type) || !type || strcmp(type, "tag") != 0)
        return;
    out->has_tag = true;
    out->tag_snapshot_id = id;
    const floe__snapshot *s = floe__metadata_snapshot_by_id(md, id);
    const char *sid = NULL;
    if (s && floe__snapshot_progress(s, &out->tag_frontier, &out->tag_version, &sid, err) ==
                 FLOE_OK && strcmp(sid, sink_id) == 0)
        out->tag_has_progress = true;
    floe_error_clear(err);
}

/* Walk main from its current snapshot to this sink id's newest snapshot. */
static int walk(walker *w, const char *sink_id, floe__progress *out, floe_error *err)
{
    int64_t id = floe__metadata_current_snapshot_id(w->md), child = -1;
    for (long steps = 0; id != -1; steps++) {
        FLOE_RETURN_IF(steps > MAX_STEPS, err, FLOE_EFORMAT,
                       "main's history does not end: a cycle of parent ids at snapshot %" PRId64,
                       id);
        const floe__snapshot *s = find(w, id);
        if (!s) {
            out->state = FLOE__PROGRESS_UNKNOWN;
            out->cut_at = child;
            out->missing = id;
            return FLOE_OK;
        }
        out->tag_on_main = out->tag_on_main || (out->has_tag && id == out->tag_snapshot_id);
        const char *sid = NULL;
        int rc = floe__snapshot_progress(s, &out->frontier, &out->sink_version, &sid, err);
        if (rc == FLOE_OK && strcmp(sid, sink_id) == 0) {
            out->state = FLOE__PROGRESS_FOUND;
            out->snapshot_id = id;
            return FLOE_OK;
        }
        if (rc != FLOE_OK && rc != FLOE_ENOTFOUND)
            return rc;
        child = id;
        id = s->has_parent ? s->parent_snapshot_id : -1;
    }
    out->state = FLOE__PROGRESS_NONE;
    return FLOE_OK;
}

int floe__progress_read(const floe__metadata *md, floe__fileio *io, const char *sink_id,
                        floe__progress *out, floe_error *err)
{
    memset(out, 0, sizeof *out);
    out->snapshot_id = out->tag_snapshot_id = out->cut_at = out->missing = -1;
    read_tag(md, sink_id, out, err);
    walker w = {.md = md, .io = io};
    int rc = walk(&w, sink_id, out, err);
    walker_free(&w);
    return rc;
}

/* ---- what the table holds ------------------------------------------------------------------ */

static bool summary_count(const floe__snapshot *s, const char *key, uint64_t *out)
{
    const char *v = floe__snapshot_summary_get(s, key);
    char *end = NULL;
    if (!v || !*v || v[0] == '-')
        return false;
    *out = strtoull(v, &end, 10);
    return *end == '\0';
}

bool floe__table_holds_rows(const floe__metadata *md)
{
    const floe__snapshot *cur = floe__metadata_current_snapshot(md);
    if (!cur)
        return false;
    uint64_t n = 0;
    if (summary_count(cur, "total-records", &n))
        return n > 0;
    if (summary_count(cur, "total-data-files", &n))
        return n > 0;
    return true;                      /* no totals: it may hold rows */
}

/* ---- the sink ids a table knows, for messages ------------------------------------------------ */

static int add_name(json_t *names, const char *name, floe_error *err)
{
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v) {
        if (strcmp(json_string_value(v), name) == 0)
            return FLOE_OK;
    }
    return json_array_append_new(names, json_string(name)) == 0 ? FLOE_OK : FLOE_OOM(err);
}

static int gather_ids(const floe__metadata *md, json_t *names, floe_error *err)
{
    const json_t *refs = json_object_get(floe__metadata_json(md), "refs");
    const char *name;
    const json_t *v;
    size_t plen = strlen(FLOE_PROGRESS_TAG_PREFIX);
    json_object_foreach((json_t *)refs, name, v) {
        if (strncmp(name, FLOE_PROGRESS_TAG_PREFIX, plen) == 0 && name[plen])
            FLOE_FORWARD(add_name(names, name + plen, err));
    }
    for (int64_t id = floe__metadata_current_snapshot_id(md); id != -1;) {
        const floe__snapshot *s = floe__metadata_snapshot_by_id(md, id);
        const char *sid = NULL;
        floe__frontier f;
        uint64_t ver;
        if (!s)
            break;
        if (floe__snapshot_progress(s, &f, &ver, &sid, NULL) == FLOE_OK)
            FLOE_FORWARD(add_name(names, sid, err));
        id = s->has_parent ? s->parent_snapshot_id : -1;
    }
    return FLOE_OK;
}

int floe__progress_sink_ids(const floe__metadata *md, json_t **out, floe_error *err)
{
    json_t *names = json_array();
    int rc = names ? gather_ids(md, names, err) : FLOE_OOM(err);
    if (rc != FLOE_OK) {
        json_decref(names);
        return rc;
    }
    *out = names;
    return FLOE_OK;
}

int floe__progress_known_ids(const floe__metadata *md, floe__buf *out, floe_error *err)
{
    json_t *names = json_array();
    int rc = names ? gather_ids(md, names, err) : FLOE_OOM(err);
    size_t i;
    json_t *v;
    json_array_foreach(names, i, v) {
        if (rc == FLOE_OK)
            rc = floe__buf_printf(out, err, "%s'%s'", i ? ", " : "", json_string_value(v));
    }
    json_decref(names);
    return rc;
}
