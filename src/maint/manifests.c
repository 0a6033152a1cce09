/*
 * manifests.c - a snapshot that only merges a table's manifests (as
 * Iceberg's RewriteManifests does, operation `replace`), every bin at once:
 * the sink's final maintenance pass, so that a table committed to many
 * times in a burst is left with few manifests for readers to open.
 */
#include "maint/maint_internal.h"

int floe__merge_manifests(floe__table *t, pthread_mutex_t *gate, floe_error *err)
{
    if (gate)
        pthread_mutex_lock(gate);
    int rc = gate ? floe__table_refresh(t, err) : FLOE_OK;
    const floe__metadata *md = rc == FLOE_OK ? t->loaded->metadata : NULL;
    int64_t head = md ? floe__metadata_current_snapshot_id(md) : -1;
    if (rc == FLOE_OK && head >= 0) {
        json_t *summary = json_pack("{s:s}", "floe.maintenance", "merge-manifests");
        floe__commit_request req = {.summary = summary, .base_snapshot_id = head,
                                    .operation = "replace", .merge_all = true};
        rc = summary ? floe__table_commit(t, &req, NULL, err) : FLOE_OOM(err);
        json_decref(summary);
    }
    if (gate)
        pthread_mutex_unlock(gate);
    return rc;
}
