/*
 * api.c - the public catalog, table, writer and commit API of floe.h, a
 * thin layer over the internal table layer (table_internal.h).
 *
 * It owns argument checking, defaults (catalog URI, warehouse, catalog
 * name), splitting "NS.NAME", and the lifetime rules the header promises:
 * a commit removes the files it holds when it is freed without having
 * reached the catalog successfully (or with an unknown outcome).
 */
#include <stdio.h>

#include "table/table_internal.h"


struct floe_catalog {
    floe__fileio *io;
    floe__catalog *cat;
};

struct floe_table {
    floe_catalog *catalog;
    floe__table *t;
};

struct floe_file_writer {
    floe__file_writer *w;
    floe__part_writer *pw;           /* instead of w: a partitioned table's data or
                                        equality deletes (part_writer.c) */
    uint64_t rows;                   /* rows written through pw */
    const floe__schema *schema;
    floe__schema *own_schema;        /* equality deletes: the projected key schema */
};

struct floe_position_delete_writer {
    floe__posdel_writer *w;
    floe__posdel_set *set;           /* instead of w on a partitioned table: the commit writes
                                        them, each in its data file's partition */
};

struct floe_commit {
    floe_table *table;
    floe__content_list files;
    floe__posdel_set *deletes;       /* partitioned tables' position deletes, written by the
                                        commit (NULL: none) */
    json_t *props;
    bool keep_files;                 /* committed, or maybe committed */
    bool spent;                      /* committed */
};

floe__table *floe__table_of(const floe_table *t) { return t->t; }

/* ---- catalogs ------------------------------------------------------------------------- */

int floe_catalog_open(const floe_connect_options *opts, floe_catalog **out, floe_error *err)
{
    FLOE_RETURN_IF(!out, err, FLOE_EINVAL, "floe_catalog_open: out is NULL");
    floe_connect_options co;
    FLOE_FORWARD(FLOE__OPTIONS_IN(floe_connect_options, &co, opts, err));
    floe_catalog *c = floe__calloc(1, sizeof *c);
    if (!c)
        return FLOE_OOM(err);
    int rc = floe__catalog_open(&co, &c->io, &c->cat, err);
    if (rc != FLOE_OK) {
        floe_catalog_free(c);
        return rc;
    }
    *out = c;
    return FLOE_OK;
}

void floe_catalog_free(floe_catalog *c)
{
    if (!c)
        return;
    floe__catalog_free(c->cat);
    floe__fileio_free(c->io);
    floe__free(c);
}

/* ---- tables ---------------------------------------------------------------------------- */

static int split_ident(const char *ident, char **ns, char **name, floe_error *err)
{
    const char *dot = ident ? strrchr(ident, '.') : NULL;
    FLOE_RETURN_IF(!dot || dot == ident || !dot[1], err, FLOE_EINVAL,
                   "table \"%s\": expected NS.NAME (a namespace, a dot, a table name)",
                   ident ? ident : "(null)");
    *ns = floe__strndup(ident, (size_t)(dot - ident));
    *name = floe__strdup(dot + 1);
    if (!*ns || !*name) {
        floe__free(*ns);
        floe__free(*name);
        return FLOE_OOM(err);
    }
    return FLOE_OK;
}

static int props_json(const char *const *kv, json_t **out, floe_error *err)
{
    *out = NULL;
    if (!kv)
        return FLOE_OK;
    json_t *o = json_object();
    if (!o)
        return FLOE_OOM(err);
    for (size_t i = 0; kv[i]; i += 2) {
        if (!kv[i + 1]) {
            json_decref(o);
            return floe__err_set(err, FLOE_EINVAL, "table property \"%s\" has no value", kv[i]);
        }
        json_t *v = json_string(kv[i + 1]);
        if (!v || json_object_set_new(o, kv[i], v) != 0) {
            json_decref(o);
            return floe__err_set(err, FLOE_EINVAL, "table property \"%s\" is not valid UTF-8",
                                 kv[i]);
        }
    }
    *out = o;
    return FLOE_OK;
}

int floe_table_open(floe_catalog *catalog, const char *ident, const floe_schema *declared,
                    const char *const *properties, floe_table **out, floe_error *err)
{
    FLOE_RETURN_IF(!catalog || !out, err, FLOE_EINVAL, "floe_table_open: NULL argument");
    char *ns = NULL, *name = NULL;
    FLOE_FORWARD(split_ident(ident, &ns, &name, err));
    json_t *props = NULL;
    floe_table *t = floe__calloc(1, sizeof *t);
    int rc = t ? props_json(properties, &props, err) : FLOE_OOM(err);
    if (rc == FLOE_OK)
        rc = floe__table_open(catalog->cat, catalog->io, ns, name, declared, props, &t->t, err);
    json_decref(props);
    floe__free(ns);
    floe__free(name);
    if (rc != FLOE_OK) {
        floe__free(t);
        return rc;
    }
    t->catalog = catalog;
    *out = t;
    return FLOE_OK;
}

void floe_table_free(floe_table *t)
{
    if (!t)
        return;
    floe__table_free(t->t);
    floe__free(t);
}

int floe_table_refresh(floe_table *t, floe_error *err)
{
    FLOE_RETURN_IF(!t, err, FLOE_EINVAL, "floe_table_refresh: NULL table");
    return floe__table_refresh(t->t, err);
}

const floe_schema *floe_table_schema(const floe_table *t) { return t ? t->t->schema : NULL; }

int64_t floe_table_current_snapshot_id(const floe_table *t)
{
    return t ? floe__metadata_current_snapshot_id(t->t->loaded->metadata) : -1;
}

const char *floe_table_metadata_location(const floe_table *t)
{
    return t ? t->t->loaded->metadata_location : NULL;
}

const char *floe_table_data_location(const floe_table *t) { return t ? t->t->data_location : NULL; }

int floe_table_partition_specs(const floe_table *t, char **out, floe_error *err)
{
    FLOE_RETURN_IF(!t || !out, err, FLOE_EINVAL, "floe_table_partition_specs: NULL argument");
    const floe__metadata *md = t->t->loaded->metadata;
    json_t *o = json_pack("{s:i, s:O}", "default-spec-id",
                          (json_int_t)floe__metadata_default_spec_id(md), "specs",
                          (json_t *)floe__metadata_specs(md));
    size_t n = o ? json_dumpb(o, NULL, 0, JSON_COMPACT) : 0;
    *out = n ? floe__malloc(n + 1) : NULL;
    if (*out && json_dumpb(o, *out, n, JSON_COMPACT) == n) {
        (*out)[n] = '\0';
    } else {
        floe__free(*out);
        *out = NULL;
    }
    json_decref(o);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

size_t floe_table_snapshot_count(const floe_table *t)
{
    return t ? floe__metadata_snapshot_count(t->t->loaded->metadata) : 0;
}

static const floe__snapshot *snapshot_at(const floe_table *t, size_t i)
{
    if (!t || i >= floe__metadata_snapshot_count(t->t->loaded->metadata))
        return NULL;
    return floe__metadata_snapshot_at(t->t->loaded->metadata, i);
}

int floe_table_snapshot(const floe_table *t, size_t i, floe_snapshot_info *dst, size_t size,
                        floe_error *err)
{
    const floe__snapshot *s = snapshot_at(t, i);
    FLOE_RETURN_IF(!s || !dst, err, FLOE_EINVAL, "snapshot index %zu out of range", i);
    floe_snapshot_info info = {.size = sizeof info}, *out = &info;
    out->snapshot_id = s->snapshot_id;
    out->parent_id = s->has_parent ? s->parent_snapshot_id : -1;
    out->sequence_number = s->sequence_number;
    out->timestamp_ms = s->timestamp_ms;
    out->operation = s->operation ? s->operation : "";
    out->manifest_list = s->manifest_list ? s->manifest_list : "";
    out->property_count = json_object_size(s->summary);
    floe__abi_out(dst, size, &info, sizeof info);
    return FLOE_OK;
}

const char *floe_table_snapshot_property(const floe_table *t, size_t i, const char *key)
{
    const floe__snapshot *s = snapshot_at(t, i);
    return s && key ? floe__snapshot_summary_get(s, key) : NULL;
}

int floe_table_snapshot_property_at(const floe_table *t, size_t i, size_t j, const char **key,
                                    const char **value, floe_error *err)
{
    const floe__snapshot *s = snapshot_at(t, i);
    FLOE_RETURN_IF(!s || j >= json_object_size(s->summary), err, FLOE_EINVAL,
                   "snapshot property %zu of snapshot %zu is out of range", j, i);
    void *it = json_object_iter((json_t *)s->summary);
    for (size_t k = 0; k < j && it; k++)
        it = json_object_iter_next((json_t *)s->summary, it);
    FLOE_RETURN_IF(!it, err, FLOE_EINTERNAL, "snapshot summary iteration ended early");
    const char *v = json_string_value(json_object_iter_value(it));
    if (key)
        *key = json_object_iter_key(it);
    if (value)
        *value = v ? v : "";
    return FLOE_OK;
}

/* ---- writers ------------------------------------------------------------------------------- */

void floe_write_options_init(floe_write_options *o, size_t size)
{
    floe_write_options d = {.size = sizeof d};
    floe__abi_init(o, size, &d, sizeof d);
}

int floe_table_write_options(floe_table *t, floe_write_options *out,
                             floe_parquet_options *parquet, floe_error *err)
{
    FLOE_RETURN_IF(!t || !out || !parquet, err, FLOE_EINVAL,
                   "floe_table_write_options: NULL argument");
    floe__file_writer_options o;
    FLOE_FORWARD(floe__table_file_options(t->t, FLOE_CONTENT_DATA, &o, err));
    floe_write_options wo = {.size = sizeof wo, .parquet = parquet,
                             .target_file_size = o.target_file_size};
    o.parquet.size = sizeof o.parquet;
    floe__abi_out(parquet, parquet->size, &o.parquet, sizeof o.parquet);
    floe__abi_out(out, out->size, &wo, sizeof wo);
    return FLOE_OK;
}

/* The caller's write options (NULL: none) as the writers take them. */
static int internal_options(const floe_write_options *o, floe__file_writer_options *io,
                            floe_error *err)
{
    memset(io, 0, sizeof *io);
    floe_write_options wo;
    FLOE_FORWARD(FLOE__OPTIONS_IN(floe_write_options, &wo, o, err));
    FLOE_FORWARD(FLOE__OPTIONS_IN(floe_parquet_options, &io->parquet, wo.parquet, err));
    io->target_file_size = wo.target_file_size;
    io->prefix = wo.prefix;
    return FLOE_OK;
}

static int new_writer(floe_table *t, floe__content content, floe__schema *own,
                      const int32_t *ids, size_t n_ids, const floe_write_options *opts,
                      floe_file_writer **out, floe_error *err)
{
    floe_file_writer *w = floe__calloc(1, sizeof *w);
    if (!w) {
        floe_schema_free(own);
        return FLOE_OOM(err);
    }
    w->own_schema = own;
    w->schema = own ? own : t->t->schema;
    floe__file_writer_options o;
    int rc = internal_options(opts, &o, err);
    if (rc != FLOE_OK) {
        floe_schema_free(own);
        floe__free(w);
        return rc;
    }
    bool part = floe__table_partitioned(t->t);
    rc = !part ? floe__file_writer_new(t->t, content, w->schema, ids, n_ids,
                                           opts ? &o : NULL, &w->w, err)
             : content == FLOE_CONTENT_DATA
                 ? floe__part_writer_new(t->t, w->schema, NULL, opts ? &o : NULL, NULL, &w->pw,
                                         err)
                 : floe__part_writer_new_deletes(t->t, w->schema, ids, n_ids, NULL,
                                                 opts ? &o : NULL, NULL, &w->pw, err);
    if (rc != FLOE_OK) {
        floe_schema_free(own);
        floe__free(w);
        return rc;
    }
    *out = w;
    return FLOE_OK;
}

int floe_data_writer_new(floe_table *t, const floe_write_options *opts, floe_file_writer **out,
                         floe_error *err)
{
    FLOE_RETURN_IF(!t || !out, err, FLOE_EINVAL, "floe_data_writer_new: NULL argument");
    return new_writer(t, FLOE_CONTENT_DATA, NULL, NULL, 0, opts, out, err);
}

int floe_equality_delete_writer_new(floe_table *t, const char *const *columns, size_t n_columns,
                                    const floe_write_options *opts, floe_file_writer **out,
                                    floe_error *err)
{
    FLOE_RETURN_IF(!t || !out || !columns, err, FLOE_EINVAL,
                   "floe_equality_delete_writer_new: NULL argument");
    floe__schema *key;
    FLOE_FORWARD(floe__schema_project(t->t->schema, columns, n_columns, &key, err));
    int32_t *ids = floe__malloc(key->root.n_children * sizeof *ids);
    if (!ids) {
        floe_schema_free(key);
        return FLOE_OOM(err);
    }
    for (uint32_t i = 0; i < key->root.n_children; i++)
        ids[i] = key->root.children[i].id;
    int rc = new_writer(t, FLOE_CONTENT_EQUALITY_DELETES, key, ids, key->root.n_children, opts,
                        out, err);
    floe__free(ids);
    return rc;
}

const floe_schema *floe_file_writer_schema(const floe_file_writer *w)
{
    return w ? w->schema : NULL;
}

int floe_file_writer_write(floe_file_writer *w, const floe_row *row, const char **path,
                           uint64_t *pos, floe_error *err)
{
    FLOE_RETURN_IF(!w || !row, err, FLOE_EINVAL, "floe_file_writer_write: NULL argument");
    FLOE_RETURN_IF(row->schema != w->schema, err, FLOE_EINVAL,
                   "the row was made for another schema: make rows with "
                   "floe_row_new(floe_file_writer_schema(w))");
    if (!w->pw)
        return floe__file_writer_write(w->w, row->data.data, row->data.len, path, pos, err);
    FLOE_FORWARD(floe__part_writer_write(w->pw, row->data.data, row->data.len, path, pos, err));
    w->rows++;
    return FLOE_OK;
}

uint64_t floe_file_writer_rows(const floe_file_writer *w)
{
    return !w ? 0 : w->pw ? w->rows : floe__file_writer_rows(w->w);
}

static void free_file_writer(floe_file_writer *w)
{
    floe_schema_free(w->own_schema);
    floe__free(w);
}

void floe_file_writer_abort(floe_file_writer *w)
{
    if (!w)
        return;
    floe__file_writer_abort(w->w);
    floe__part_writer_abort(w->pw);
    free_file_writer(w);
}

int floe_position_delete_writer_new(floe_table *t, const floe_write_options *opts,
                                    floe_position_delete_writer **out, floe_error *err)
{
    FLOE_RETURN_IF(!t || !out, err, FLOE_EINVAL, "floe_position_delete_writer_new: NULL "
                                                 "argument");
    floe__file_writer_options o;
    FLOE_FORWARD(internal_options(opts, &o, err));
    floe_position_delete_writer *w = floe__calloc(1, sizeof *w);
    if (!w)
        return FLOE_OOM(err);
    int rc = floe__table_partitioned(t->t) ? floe__posdel_set_new(&w->set, err)
                                           : floe__posdel_writer_new(t->t, opts ? &o : NULL,
                                                                     &w->w, err);
    if (rc != FLOE_OK) {
        floe__free(w);
        return rc;
    }
    *out = w;
    return FLOE_OK;
}

int floe_position_delete_add(floe_position_delete_writer *w, const char *data_file, uint64_t pos,
                             floe_error *err)
{
    FLOE_RETURN_IF(!w, err, FLOE_EINVAL, "floe_position_delete_add: NULL writer");
    if (!w->set)
        return floe__posdel_add(w->w, data_file, pos, err);
    FLOE_RETURN_IF(!data_file || !*data_file, err, FLOE_EINVAL,
                   "position delete: empty data file path");
    FLOE_RETURN_IF(pos > (uint64_t)INT64_MAX, err, FLOE_EINVAL,
                   "position delete: position %llu is past 2^63-1", (unsigned long long)pos);
    return floe__posdel_set_add(w->set, data_file, pos, err);
}

uint64_t floe_position_delete_count(const floe_position_delete_writer *w)
{
    return !w ? 0 : w->set ? floe__posdel_set_count(w->set) : floe__posdel_count(w->w);
}

void floe_position_delete_writer_abort(floe_position_delete_writer *w)
{
    if (!w)
        return;
    floe__posdel_writer_abort(w->w);
    floe__posdel_set_free(w->set);
    floe__free(w);
}

/* ---- commits ---------------------------------------------------------------------------------- */

int floe_commit_new(floe_table *t, floe_commit **out, floe_error *err)
{
    FLOE_RETURN_IF(!t || !out, err, FLOE_EINVAL, "floe_commit_new: NULL argument");
    floe_commit *c = floe__calloc(1, sizeof *c);
    if (!c)
        return FLOE_OOM(err);
    c->table = t;
    c->props = json_object();
    if (!c->props) {
        floe__free(c);
        return FLOE_OOM(err);
    }
    *out = c;
    return FLOE_OK;
}

static int usable(const floe_commit *c, floe_error *err)
{
    FLOE_RETURN_IF(!c, err, FLOE_EINVAL, "NULL commit");
    FLOE_RETURN_IF(c->spent, err, FLOE_EINVAL, "this commit was committed already");
    return FLOE_OK;
}

int floe_commit_add_files(floe_commit *c, floe_file_writer *w, floe_error *err)
{
    int rc = usable(c, err);
    if (rc != FLOE_OK || !w) {
        floe_file_writer_abort(w);
        return rc != FLOE_OK ? rc : floe__err_set(err, FLOE_EINVAL, "NULL writer");
    }
    rc = w->pw ? floe__part_writer_close(w->pw, &c->files, err)
               : floe__file_writer_close(w->w, &c->files, err);
    free_file_writer(w);
    return rc;
}

int floe_commit_add_position_deletes(floe_commit *c, floe_position_delete_writer *w,
                                     floe_error *err)
{
    int rc = usable(c, err);
    if (rc != FLOE_OK || !w) {
        floe_position_delete_writer_abort(w);
        return rc != FLOE_OK ? rc : floe__err_set(err, FLOE_EINVAL, "NULL writer");
    }
    if (w->set && !c->deletes) {
        c->deletes = w->set;
        w->set = NULL;
    }
    for (size_t i = 0; rc == FLOE_OK && w->set && i < floe__posdel_set_files(w->set); i++)
        rc = floe__posdel_set_add_all(c->deletes, floe__posdel_set_path(w->set, i),
                                      floe__posdel_set_positions(w->set, i), err);
    if (rc == FLOE_OK && w->w) {
        rc = floe__posdel_writer_close(w->w, &c->files, err);
        w->w = NULL;
    }
    floe_position_delete_writer_abort(w);
    return rc;
}

int floe_commit_set_property(floe_commit *c, const char *key, const char *value,
                             floe_error *err)
{
    FLOE_FORWARD(usable(c, err));
    FLOE_RETURN_IF(!key || !*key || !value, err, FLOE_EINVAL, "a property needs a key and value");
    FLOE_RETURN_IF(floe__summary_key_reserved(key), err, FLOE_EINVAL,
                   "summary property \"%s\" is computed by floe", key);
    json_t *v = json_string(value);
    FLOE_RETURN_IF(!v || !floe__utf8_valid((const uint8_t *)key, strlen(key)), err,
                   FLOE_EINVAL, "summary property \"%s\": key and value must be UTF-8", key);
    if (json_object_set_new(c->props, key, v) != 0)
        return FLOE_OOM(err);
    return FLOE_OK;
}

size_t floe_commit_file_count(const floe_commit *c) { return c ? c->files.n : 0; }

int floe_commit_submit(floe_commit *c, int64_t base_snapshot_id, int64_t *snapshot_id,
                       floe_error *err)
{
    FLOE_FORWARD(usable(c, err));
    floe__commit_request req = {
        .files = c->files.files,
        .n_files = c->files.n,
        .summary = c->props,
        .base_snapshot_id = base_snapshot_id,
        .deletes = c->deletes,
    };
    int64_t id = -1;
    int rc = floe__table_commit(c->table->t, &req, &id, err);
    if (rc == FLOE_OK) {
        c->spent = true;
        c->keep_files = true;
        if (snapshot_id)
            *snapshot_id = id;
    } else if (rc != FLOE_ECONFLICT) {
        /* it may have reached the catalog: never remove what it may reference */
        c->keep_files = c->keep_files || rc == FLOE_EUNKNOWN_OUTCOME;
    }
    return rc;
}

void floe_commit_free(floe_commit *c)
{
    if (!c)
        return;
    if (!c->keep_files)
        for (size_t i = 0; i < c->files.n; i++)
            floe__fileio_remove(c->table->t->io, c->files.files[i].path, NULL);
    floe__content_list_clear(&c->files);
    floe__posdel_set_free(c->deletes);
    json_decref(c->props);
    floe__free(c);
}
