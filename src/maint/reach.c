/*
 * reach.c - the files a table's metadata reaches, as a set.
 *
 * Expiry deletes what only expired snapshots reached; orphan removal
 * deletes what nothing reaches.  Both compare paths written by different
 * writers ("file:/x" by Java, "file:///x" by pyiceberg and floe, "s3a://"
 * by Hadoop), so paths are compared in a normalized form (floe__reach_key)
 * while the set keeps each file's first spelling for deleting it.
 */
#include "maint/maint_internal.h"

typedef struct item {
    char *key;                       /* normalized; the map points at it */
    char *uri;                       /* as first seen */
    floe__reach_kind kind;
    uint64_t size;
} item;

struct floe__reach {
    floe__pathmap map;               /* key -> index into items */
    item *items;
    size_t n, cap;
};

int floe__reach_new(floe__reach **out, floe_error *err)
{
    *out = floe__calloc(1, sizeof **out);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

void floe__reach_free(floe__reach *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        floe__free(r->items[i].key);
        floe__free(r->items[i].uri);
    }
    floe__free(r->items);
    floe__pathmap_clear(&r->map);
    floe__free(r);
}

char *floe__reach_key(const char *uri)
{
    static const char *const s3[] = {"s3a://", "s3n://"};
    for (size_t i = 0; i < 2; i++)
        if (floe__str_starts(uri, s3[i]))
            return floe__sprintf("s3://%s", uri + 6);
    if (floe__str_starts(uri, "file:") || !strstr(uri, "://"))
        return floe__strdup(floe__local_path(uri));
    return floe__strdup(uri);
}

static int grow(floe__reach *r, floe_error *err)
{
    size_t cap = r->cap ? r->cap * 2 : 64;
    item *p = floe__realloc(r->items, cap * sizeof *p);
    if (!p)
        return FLOE_OOM(err);
    /* the map borrows the keys, which did not move: only the array did */
    r->items = p;
    r->cap = cap;
    return FLOE_OK;
}

int floe__reach_add(floe__reach *r, const char *uri, floe__reach_kind kind, uint64_t size,
                    floe_error *err)
{
    char *key = floe__reach_key(uri);
    if (!key)
        return FLOE_OOM(err);
    size_t at;
    if (floe__pathmap_get(&r->map, key, &at)) {
        floe__free(key);
        return FLOE_OK;
    }
    if (r->n == r->cap && grow(r, err) != FLOE_OK) {
        floe__free(key);
        return FLOE_ENOMEM;
    }
    item *it = &r->items[r->n];
    *it = (item){key, floe__strdup(uri), kind, size};
    bool existed;
    int rc = it->uri ? floe__pathmap_put(&r->map, key, r->n, &existed, err) : FLOE_OOM(err);
    if (rc != FLOE_OK) {
        floe__free(it->key);
        floe__free(it->uri);
        return rc;
    }
    r->n++;
    return FLOE_OK;
}

bool floe__reach_has(const floe__reach *r, const char *uri)
{
    char *key = floe__reach_key(uri);
    size_t at;
    bool has = key && floe__pathmap_get(&r->map, key, &at);
    floe__free(key);
    return has;
}

size_t floe__reach_count(const floe__reach *r) { return r->n; }

int floe__reach_each(const floe__reach *r, floe__reach_fn fn, void *ctx, floe_error *err)
{
    for (size_t i = 0; i < r->n; i++)
        FLOE_FORWARD(fn(ctx, r->items[i].uri, r->items[i].kind, r->items[i].size, err));
    return FLOE_OK;
}

const char *floe__reach_kind_name(floe__reach_kind k)
{
    static const char *const names[FLOE_REACH_KINDS] = {
        "metadata file", "manifest list", "manifest", "data file", "delete file",
        "statistics file"};
    return k < FLOE_REACH_KINDS ? names[k] : "file";
}

/* ---- walking snapshots ---------------------------------------------------------------- */

static int reach_manifest(floe__reach *r, floe__fileio *io, const floe__manifest_file *mf,
                          floe_error *err)
{
    floe__manifest_entries es = {0};
    int rc = floe__manifest_read_resolved(io, mf, &es, err);
    for (size_t i = 0; rc == FLOE_OK && i < es.n; i++) {
        if (es.items[i].status == 2)        /* DELETED: the snapshot no longer holds it */
            continue;
        const floe__content_file *f = &es.items[i].file;
        bool dv = floe__content_is_dv(f);
        floe__reach_kind kind = f->content == FLOE_CONTENT_DATA ? FLOE_REACH_DATA
                                                                : FLOE_REACH_DELETE;
        rc = floe__reach_add(r, f->path, kind, dv ? 0 : f->metrics.file_size, err);
    }
    floe__manifest_entries_clear(&es);
    return rc;
}

int floe__reach_snapshot(floe__reach *r, const floe__reach *known, floe__fileio *io,
                         const floe__snapshot *s, floe_error *err)
{
    if (!s->manifest_list)
        return floe__err_set(err, FLOE_EUNSUPPORTED, "snapshot %lld has no manifest list "
                             "(a v1 snapshot with inline manifests)", (long long)s->snapshot_id);
    if (floe__reach_has(r, s->manifest_list))
        return FLOE_OK;
    FLOE_FORWARD(floe__reach_add(r, s->manifest_list, FLOE_REACH_LIST, 0, err));
    floe__buf data;
    floe__buf_init(&data, FLOE_MANIFEST_MAX_BYTES);
    floe__manifest_list l = {0};
    int rc = floe__fileio_read_all(io, s->manifest_list, &data, err);
    if (rc == FLOE_OK)
        rc = floe__manifest_list_parse(data.data, data.len, &l, err);
    floe__buf_free(&data);
    for (size_t i = 0; rc == FLOE_OK && i < l.n; i++) {
        const floe__manifest_file *mf = &l.items[i];
        if (floe__reach_has(r, mf->path) || (known && floe__reach_has(known, mf->path)))
            continue;
        rc = floe__reach_add(r, mf->path, FLOE_REACH_MANIFEST, (uint64_t)mf->length, err);
        if (rc == FLOE_OK)
            rc = reach_manifest(r, io, mf, err);
    }
    floe__manifest_list_clear(&l);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "reading what snapshot %lld reaches (%s)",
                              (long long)s->snapshot_id, s->manifest_list);
    return FLOE_OK;
}

/* statistics / partition-statistics: [{"snapshot-id", "statistics-path", ...}] */
static int reach_stats(floe__reach *r, const floe__metadata *md, const char *key,
                       floe_error *err)
{
    const json_t *arr = json_object_get(floe__metadata_json(md), key);
    size_t i;
    const json_t *v;
    json_array_foreach(arr, i, v) {
        const char *path = json_string_value(json_object_get(v, "statistics-path"));
        if (path)
            FLOE_FORWARD(floe__reach_add(r, path, FLOE_REACH_STATS, 0, err));
    }
    return FLOE_OK;
}

int floe__reach_metadata(floe__reach *r, floe__fileio *io, const floe__metadata *md,
                         const char *location, floe_error *err)
{
    if (location)
        FLOE_FORWARD(floe__reach_add(r, location, FLOE_REACH_METADATA, 0, err));
    for (size_t i = 0; i < floe__metadata_metadata_log_count(md); i++)
        FLOE_FORWARD(floe__reach_add(r, floe__metadata_metadata_log_at(md, i)->metadata_file,
                                     FLOE_REACH_METADATA, 0, err));
    FLOE_FORWARD(reach_stats(r, md, "statistics", err));
    FLOE_FORWARD(reach_stats(r, md, "partition-statistics", err));
    for (size_t i = 0; i < floe__metadata_snapshot_count(md); i++)
        FLOE_FORWARD(floe__reach_snapshot(r, NULL, io, floe__metadata_snapshot_at(md, i), err));
    return FLOE_OK;
}
