/*
 * progress_api.c - the public readers of what a table records of floe
 * sinks (floe_table_sink_ids, floe_table_sink_progress), on progress.c.
 */
#include <stdio.h>

#include "sink/sink_internal.h"

int floe_table_sink_ids(const floe_table *table, char ***ids, size_t *n, floe_error *err)
{
    FLOE_RETURN_IF(!table || !ids || !n, err, FLOE_EINVAL, "floe_table_sink_ids: NULL argument");
    const floe__table *t = floe__table_of(table);
    json_t *names = NULL;
    FLOE_FORWARD(floe__progress_sink_ids(t->loaded->metadata, &names, err));
    size_t count = json_array_size(names), bytes = (count + 1) * sizeof(char *);
    for (size_t i = 0; i < count; i++)
        bytes += strlen(json_string_value(json_array_get(names, i))) + 1;
    char **out = floe__malloc(bytes);          /* the pointers, then the strings */
    if (!out) {
        json_decref(names);
        return FLOE_OOM(err);
    }
    char *text = (char *)(out + count + 1);
    for (size_t i = 0; i < count; i++) {
        const char *v = json_string_value(json_array_get(names, i));
        size_t len = strlen(v) + 1;
        memcpy(text, v, len);
        out[i] = text;
        text += len;
    }
    out[count] = NULL;
    json_decref(names);
    *ids = out;
    *n = count;
    return FLOE_OK;
}

int floe_table_sink_progress(const floe_table *table, const char *sink_id,
                             floe_sink_progress *dst, size_t size, floe_error *err)
{
    FLOE_RETURN_IF(!table || !sink_id || !dst, err, FLOE_EINVAL,
                   "floe_table_sink_progress: NULL argument");
    const floe__table *t = floe__table_of(table);
    floe__progress p;
    FLOE_FORWARD(floe__progress_read(t->loaded->metadata, t->io, sink_id, &p, err));
    floe_sink_progress sp = {.size = sizeof sp}, *out = &sp;
    out->state = p.state == FLOE__PROGRESS_FOUND     ? FLOE_PROGRESS_FOUND
                 : p.state == FLOE__PROGRESS_UNKNOWN ? FLOE_PROGRESS_UNKNOWN
                                                     : FLOE_PROGRESS_NONE;
    if (p.state == FLOE__PROGRESS_FOUND)
        floe__frontier_format(p.frontier, out->frontier, sizeof out->frontier);
    out->sink_version = p.state == FLOE__PROGRESS_FOUND ? p.sink_version : 0;
    out->snapshot_id = p.snapshot_id;
    out->tag_snapshot_id = p.has_tag ? p.tag_snapshot_id : -1;
    floe__abi_out(dst, size, &sp, sizeof sp);
    return FLOE_OK;
}
