/*
 * metadata_location.c - where a table's files go (SPEC.md section 4):
 * the table root (also when a catalog reports a metadata file as the
 * location), the data and metadata directories chosen by table properties,
 * and metadata file names "<NNNNN>-<uuid>.metadata.json".
 *
 * Invariant: every location produced here has no trailing '/' and joins
 * its parts with exactly one '/', so no URI holds "//" after its scheme.
 */
#include <stdio.h>

#include "iceberg/metadata_internal.h"

/* Length of the part of `loc` that trimming must keep: "scheme://" (plus
 * the root '/' of "scheme:///"), or the root '/' of an absolute path. */
static size_t keep_prefix(const char *loc)
{
    const char *scheme = strstr(loc, "://");
    if (scheme) {
        size_t keep = (size_t)(scheme - loc) + 3;
        return loc[keep] == '/' ? keep + 1 : keep;
    }
    const char *colon = strchr(loc, ':');
    if (colon && colon[1] == '/' && !memchr(loc, '/', (size_t)(colon - loc)))
        return (size_t)(colon - loc) + 2;   /* "file:/" */
    return loc[0] == '/' ? 1 : 0;
}

static char *trim_n(const char *loc, size_t n)
{
    size_t keep = keep_prefix(loc);
    while (n > keep && loc[n - 1] == '/')
        n--;
    return floe__strndup(loc, n);
}

char *floe__location_trim(const char *location)
{
    return trim_n(location, strlen(location));
}

static bool is_metadata_file(const char *loc)
{
    return floe__str_ends(loc, ".metadata.json") || floe__str_ends(loc, ".metadata.json.gz");
}

int floe__location_table_root(const char *location, char **out, floe_error *err)
{
    if (!location || !*location)
        return floe__err_set(err, FLOE_EINVAL, "empty table location");
    size_t n = strlen(location);
    if (is_metadata_file(location)) {
        /* the last "/metadata/" before the file name: a table may live under
         * a directory that is itself called "metadata" */
        const char *cut = NULL;
        for (const char *p = strstr(location, "/metadata/"); p; p = strstr(p + 1, "/metadata/"))
            cut = p;
        if (!cut)
            cut = strrchr(location, '/');
        if (cut)
            n = (size_t)(cut - location);
    }
    *out = trim_n(location, n);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

/* A property naming a directory, trimmed; NULL when unset or empty. */
static const char *dir_property(const floe__metadata *md, const char *key)
{
    const char *v = floe__metadata_property(md, key);
    return v && *v ? v : NULL;
}

static int under_root(const floe__metadata *md, const char *sub, char **out, floe_error *err)
{
    char *root;
    FLOE_FORWARD(floe__location_table_root(floe__metadata_location(md), &root, err));
    *out = floe__path_join(root, sub);
    floe__free(root);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

int floe__metadata_data_location(const floe__metadata *md, char **out, floe_error *err)
{
    const char *p = dir_property(md, FLOE_PROP_DATA_PATH);
    if (!p)
        p = dir_property(md, FLOE_PROP_FOLDER_STORAGE_PATH);
    if (!p)
        return under_root(md, "data", out, err);
    *out = floe__location_trim(p);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

int floe__metadata_metadata_location_dir(const floe__metadata *md, char **out, floe_error *err)
{
    const char *p = dir_property(md, FLOE_PROP_METADATA_PATH);
    if (!p)
        return under_root(md, "metadata", out, err);
    *out = floe__location_trim(p);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

/* Leading decimal digits of s as a number (at most 18 digits); the count
 * of digits read in *used, 0 when none. */
static int64_t leading_number(const char *s, size_t *used)
{
    int64_t v = 0;
    size_t i = 0;
    while (s[i] >= '0' && s[i] <= '9' && i < 18)
        v = v * 10 + (s[i++] - '0');
    *used = (s[i] >= '0' && s[i] <= '9') ? 0 : i;
    return v;
}

int64_t floe__metadata_file_version(const char *location)
{
    if (!location || !is_metadata_file(location))
        return -1;
    const char *slash = strrchr(location, '/');
    const char *name = slash ? slash + 1 : location;
    size_t used;
    if (name[0] == 'v') {                      /* vN.metadata.json (file-system tables) */
        int64_t v = leading_number(name + 1, &used);
        return used && name[1 + used] == '.' ? v : -1;
    }
    int64_t v = leading_number(name, &used);   /* NNNNN-<uuid>.metadata.json */
    return used && name[used] == '-' ? v : -1;
}

int floe__metadata_new_file_location(const floe__metadata *md, const char *prev_location,
                                     char **out, floe_error *err)
{
    int64_t prev = prev_location ? floe__metadata_file_version(prev_location) : -1;
    int64_t version = prev < 0 ? 0 : prev + 1;
    uint8_t u[16];
    char uuid[37], name[96];
    FLOE_FORWARD(floe__uuid_random(u, err));
    floe__uuid_format(u, uuid);
    snprintf(name, sizeof name, "%05lld-%s.metadata.json", (long long)version, uuid);
    char *dir;
    FLOE_FORWARD(floe__metadata_metadata_location_dir(md, &dir, err));
    *out = floe__path_join(dir, name);
    floe__free(dir);
    return *out ? FLOE_OK : FLOE_OOM(err);
}
