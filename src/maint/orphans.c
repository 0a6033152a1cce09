/*
 * orphans.c - files in a table's data and metadata locations that no
 * metadata reaches: data and delete files of writers killed before their
 * commit, manifests of lost commit attempts, metadata files past the
 * metadata-log, files of expired snapshots nobody deleted.
 *
 * Reached = floe__reach_metadata of the metadata as loaded just before the
 * listing (every snapshot, the metadata-log, statistics).  A file written
 * after that load by a concurrent writer is unreached but young: only files
 * last modified before the safety window are deleted, so the window must
 * be longer than any writer's commit takes (default one day).  Only the
 * data location and the metadata location are listed, never the whole
 * table root: another table may live below it.
 */
#include "maint/maint_internal.h"

typedef struct sweep {
    floe__table *t;
    const floe__reach *reached;
    floe__reach *seen;               /* files already looked at (two locations may nest) */
    const floe__orphan_options *o;
    int64_t before;                  /* delete only files modified before this */
    floe__orphan_result *res;
} sweep;

static floe__reach_kind guess_kind(const char *uri)
{
    if (floe__str_ends(uri, ".metadata.json") || floe__str_ends(uri, ".metadata.json.gz"))
        return FLOE_REACH_METADATA;
    if (strstr(uri, "/snap-") && floe__str_ends(uri, ".avro"))
        return FLOE_REACH_LIST;
    if (floe__str_ends(uri, ".avro"))
        return FLOE_REACH_MANIFEST;
    if (floe__str_ends(uri, ".puffin") || strstr(uri, "/delete-"))
        return FLOE_REACH_DELETE;
    return FLOE_REACH_DATA;
}

static int visit(void *ctx, const floe__listed *obj, floe_error *err)
{
    sweep *s = ctx;
    if (floe__reach_has(s->seen, obj->uri))
        return FLOE_OK;
    FLOE_FORWARD(floe__reach_add(s->seen, obj->uri, FLOE_REACH_DATA, 0, err));
    s->res->listed++;
    if (floe__reach_has(s->reached, obj->uri) || floe__str_ends(obj->uri, "version-hint.text"))
        return FLOE_OK;
    s->res->orphans++;
    if (obj->mtime_ms >= s->before) {
        s->res->too_young++;
        return FLOE_OK;
    }
    int rc = s->o->dry_run ? FLOE_OK : floe__fileio_remove(s->t->io, obj->uri, NULL);
    if (rc != FLOE_OK && rc != FLOE_ENOTFOUND) {
        s->res->removed.failed++;
        return FLOE_OK;
    }
    s->res->removed.files[guess_kind(obj->uri)]++;
    s->res->removed.bytes += obj->size;
    return FLOE_OK;
}

static int list_dir(sweep *s, const char *dir, floe_error *err)
{
    char *prefix = floe__sprintf("%s/", dir);
    if (!prefix)
        return FLOE_OOM(err);
    int rc = floe__fileio_list(s->t->io, prefix, visit, s, err);
    floe__free(prefix);
    if (rc == FLOE_ENOTFOUND) {                  /* nothing written there yet */
        floe_error_clear(err);
        rc = FLOE_OK;
    }
    return rc;
}

int floe__remove_orphans(floe__table *t, const floe__orphan_options *o, floe__orphan_result *res,
                         floe_error *err)
{
    memset(res, 0, sizeof *res);
    FLOE_FORWARD(floe__table_refresh(t, err));
    const floe__loaded_table *l = t->loaded;
    floe__reach *reached = NULL, *seen = NULL;
    char *meta_dir = NULL;
    int rc = floe__reach_new(&reached, err);
    if (rc == FLOE_OK)
        rc = floe__reach_new(&seen, err);
    if (rc == FLOE_OK)
        rc = floe__reach_metadata(reached, t->io, l->metadata, l->metadata_location, err);
    if (rc == FLOE_OK)
        rc = floe__metadata_metadata_location_dir(l->metadata, &meta_dir, err);
    int64_t now = o->now_ms ? o->now_ms : floe__now_ms();
    sweep s = {t, reached, seen, o, now - o->older_than_ms, res};
    if (rc == FLOE_OK)
        rc = list_dir(&s, t->data_location, err);
    if (rc == FLOE_OK)
        rc = list_dir(&s, meta_dir, err);
    floe__free(meta_dir);
    floe__reach_free(reached);
    floe__reach_free(seen);
    return rc == FLOE_OK ? FLOE_OK : floe__err_wrap(err, rc, "removing orphan files of %s.%s",
                                                     t->ns, t->name);
}
