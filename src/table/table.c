/*
 * table.c - opening an Iceberg table for writing (SPEC.md section 4): load
 * or create it through its catalog, check the declared schema against the
 * table's (schema_compat.c), carry the declared source types over onto the
 * table's schema tree, and work out where data files go.
 *
 * It does not write files (file_writer.c) or commit (table_commit.c).
 */
#include <stdio.h>

#include "iceberg/partition_internal.h"
#include "table/table_internal.h"

/* ---- opening ------------------------------------------------------------------------------ */

void floe__table_free(floe__table *t)
{
    if (!t)
        return;
    floe__free(t->ns);
    floe__free(t->name);
    floe__loaded_table_free(t->loaded);
    floe__fileio_free(t->own_io);
    floe_schema_free(t->schema);
    floe__free(t->data_location);
    floe__free(t);
}

static int ensure_namespace(floe__table *t, floe_error *err)
{
    bool exists = false;
    FLOE_FORWARD(floe__catalog_namespace_exists(t->catalog, t->ns, &exists, err));
    if (exists)
        return FLOE_OK;
    int rc = floe__catalog_create_namespace(t->catalog, t->ns, NULL, err);
    if (rc == FLOE_EEXISTS) {            /* created concurrently: fine */
        floe_error_clear(err);
        return FLOE_OK;
    }
    return rc;
}

/* The creation properties with "format-version" set for `version` (0:
 * props as given): a REST catalog reads the version from there. */
static int versioned_props(const json_t *props, int version, json_t **out, floe_error *err)
{
    *out = props ? json_deep_copy(props) : json_object();
    if (!*out)
        return FLOE_OOM(err);
    char v[16];
    snprintf(v, sizeof v, "%d", version);
    if (version && json_object_set_new(*out, "format-version", json_string(v)) != 0) {
        json_decref(*out);
        return FLOE_OOM(err);
    }
    return FLOE_OK;
}

/* The creation property "floe.partition-by" (Spark DDL-style text, see
 * floe__partition_spec_parse) as spec JSON over `declared` (*out NULL
 * without it), taken out of props: it is never kept as a table property. */
static int creation_spec(json_t *props, const floe__schema *declared, json_t **out,
                         floe_error *err)
{
    *out = NULL;
    const char *by = json_string_value(json_object_get(props, "floe.partition-by"));
    if (!by)
        return FLOE_OK;
    floe__partition_spec *ps;
    int rc = floe__partition_spec_parse(by, declared, 1000, &ps, err);
    if (rc == FLOE_OK) {
        rc = floe__partition_spec_to_json(ps, out, err);
        floe__partition_spec_free(ps);
    }
    json_object_del(props, "floe.partition-by");
    return rc;
}

static int create(floe__table *t, const floe__schema *declared, const json_t *props,
                  int version, floe_error *err)
{
    FLOE_FORWARD(ensure_namespace(t, err));
    json_t *schema = NULL, *p, *spec = NULL;
    FLOE_FORWARD(versioned_props(props, version, &p, err));
    int rc = creation_spec(p, declared, &spec, err);
    if (rc == FLOE_OK)
        rc = floe__schema_to_jansson(declared, &schema, err);
    if (rc != FLOE_OK) {
        json_decref(p);
        return rc;
    }
    floe__table_def def = {.schema = schema, .partition_spec = spec, .properties = p,
                           .format_version = version};
    rc = floe__catalog_create_table(t->catalog, t->ns, t->name, &def, &t->loaded, err);
    json_decref(schema);
    json_decref(spec);
    json_decref(p);
    if (rc == FLOE_EEXISTS) {            /* lost a race to another creator: use theirs */
        floe_error_clear(err);
        rc = floe__catalog_load_table(t->catalog, t->ns, t->name, &t->loaded, err);
    }
    return rc;
}

/* Storage settings the catalog sent with the table (REST "config": vended
 * credentials, endpoint, region) apply to this table's files only. */
static int apply_table_config(floe__table *t, floe__fileio *given, floe_error *err)
{
    const json_t *config = t->loaded->config;
    if (!config || json_object_size(config) == 0)
        return FLOE_OK;
    if (t->own_io)
        return floe__fileio_s3_configure(t->own_io, config, err);
    FLOE_FORWARD_CTX(floe__fileio_s3_derive(given, config, &t->own_io, err), err,
                     "applying the storage settings the catalog sent for %s.%s", t->ns,
                     t->name);
    t->io = t->own_io;
    return FLOE_OK;
}

static int setup(floe__table *t, const floe__schema *declared, floe_error *err)
{
    FLOE_FORWARD(apply_table_config(t, t->io, err));
    const floe__metadata *md = t->loaded->metadata;
    FLOE_FORWARD_CTX(floe__schema_from_jansson(floe__metadata_current_schema(md), &t->schema,
                                               err), err, "the table's current schema");
    if (declared && !t->created && !t->compare) {
        /* the caller evolves the table to the declaration */
    } else if (declared) {
        FLOE_FORWARD(floe__schema_compatible(declared, t->schema, err));
        floe__schema_adopt_decl(&t->schema->root, &declared->root);
    }
    t->schema_id = floe__metadata_current_schema_id(md);
    t->spec_id = floe__metadata_default_spec_id(md);
    return floe__metadata_data_location(md, &t->data_location, err);
}

int floe__table_open(floe__catalog *c, floe__fileio *io, const char *ns, const char *name,
                     const floe__schema *declared, const json_t *create_properties,
                     floe__table **out, floe_error *err)
{
    return floe__table_open_v(c, io, ns, name, declared, create_properties, 0, out, err);
}

int floe__table_open_v(floe__catalog *c, floe__fileio *io, const char *ns, const char *name,
                       const floe__schema *declared, const json_t *create_properties,
                       int format_version, floe__table **out, floe_error *err)
{
    return floe__table_open_x(c, io, ns, name, declared, create_properties, format_version, true,
                              out, err);
}

int floe__table_open_x(floe__catalog *c, floe__fileio *io, const char *ns, const char *name,
                       const floe__schema *declared, const json_t *create_properties,
                       int format_version, bool compare, floe__table **out, floe_error *err)
{
    FLOE_RETURN_IF(!c || !io || !ns || !name || !*ns || !*name, err, FLOE_EINVAL,
                   "opening a table needs a catalog, a FileIO, a namespace and a name");
    FLOE_RETURN_IF(format_version != 0 && format_version != 2 && format_version != 3, err,
                   FLOE_EUNSUPPORTED, "format version %d: floe creates v2 and v3 tables",
                   format_version);
    floe__table *t = floe__calloc(1, sizeof *t);
    if (!t)
        return FLOE_OOM(err);
    t->catalog = c;
    t->io = io;
    t->compare = compare;
    t->ns = floe__strdup(ns);
    t->name = floe__strdup(name);
    int rc = t->ns && t->name ? FLOE_OK : FLOE_OOM(err);
    if (rc == FLOE_OK)
        rc = floe__catalog_load_table(c, ns, name, &t->loaded, err);
    if (rc == FLOE_ENOTFOUND && declared) {
        floe_error_clear(err);
        rc = create(t, declared, create_properties, format_version, err);
        t->created = rc == FLOE_OK;
    }
    if (rc == FLOE_OK)
        rc = setup(t, declared, err);
    if (rc != FLOE_OK) {
        floe__table_free(t);
        return floe__err_wrap(err, rc, "opening table %s.%s", ns, name);
    }
    *out = t;
    return FLOE_OK;
}

int floe__table_refresh(floe__table *t, floe_error *err)
{
    floe__loaded_table *l = NULL;
    FLOE_FORWARD_CTX(floe__catalog_load_table(t->catalog, t->ns, t->name, &l, err), err,
                     "reloading table %s.%s", t->ns, t->name);
    char *loc = NULL;
    int rc = floe__metadata_data_location(l->metadata, &loc, err);
    if (rc != FLOE_OK) {
        floe__loaded_table_free(l);
        return rc;
    }
    floe__loaded_table_free(t->loaded);
    t->loaded = l;
    if (t->own_io && l->config && json_object_size(l->config))
        FLOE_FORWARD(floe__fileio_s3_configure(t->own_io, l->config, err));
    floe__free(t->data_location);
    t->data_location = loc;
    return FLOE_OK;
}

int floe__table_pin(const floe__table *t, floe__table **out, floe_error *err)
{
    *out = NULL;
    floe__table *p = floe__calloc(1, sizeof *p);
    floe__loaded_table *l = floe__calloc(1, sizeof *l);
    if (p)
        p->loaded = l;
    else
        floe__free(l);
    int rc = l ? FLOE_OK : FLOE_OOM(err);
    if (rc == FLOE_OK) {
        p->catalog = t->catalog;
        p->io = t->io;
        p->schema_id = t->schema_id;
        p->spec_id = t->spec_id;
        p->created = t->created;
        p->compare = t->compare;
        p->ns = floe__strdup(t->ns);
        p->name = floe__strdup(t->name);
        p->data_location = floe__strdup(t->data_location);
        const char *ml = t->loaded->metadata_location;
        l->metadata_location = ml ? floe__strdup(ml) : NULL;
        rc = p->ns && p->name && p->data_location && (!ml || l->metadata_location)
                 ? FLOE_OK : FLOE_OOM(err);
    }
    if (rc == FLOE_OK) {              /* from_json takes the copy, failing or not */
        json_t *doc = json_deep_copy(floe__metadata_json(t->loaded->metadata));
        rc = doc ? floe__metadata_from_json(doc, &l->metadata, err) : FLOE_OOM(err);
    }
    if (rc == FLOE_OK)
        rc = floe__schema_copy(t->schema, &p->schema, err);
    if (rc != FLOE_OK) {
        floe__table_free(p);
        return floe__err_wrap(err, rc, "pinning table %s.%s", t->ns, t->name);
    }
    *out = p;
    return FLOE_OK;
}

int floe__table_check_format(const floe__table *t, floe_error *err)
{
    int v = floe__metadata_format_version(t->loaded->metadata);
    if (v != 2 && v != 3)
        return floe__err_set(err, FLOE_EUNSUPPORTED,
                             "table %s.%s has format version %d: floe writes version 2 and 3 "
                             "tables (upgrade the table first)", t->ns, t->name, v);
    return FLOE_OK;
}

bool floe__table_partitioned(const floe__table *t)
{
    const json_t *spec = floe__metadata_spec_by_id(t->loaded->metadata, t->spec_id);
    return json_array_size(json_object_get(spec, "fields")) > 0;
}

bool floe__table_default_spec_is(const floe__table *t, const json_t *spec)
{
    return floe__spec_same_fields(floe__metadata_default_spec(t->loaded->metadata), spec);
}

bool floe__spec_same_fields(const json_t *sa, const json_t *sb)
{
    const json_t *a = json_object_get(sa, "fields"), *b = json_object_get(sb, "fields");
    if (json_array_size(a) != json_array_size(b))
        return false;
    for (size_t i = 0; i < json_array_size(a); i++) {
        const json_t *x = json_array_get(a, i), *y = json_array_get(b, i);
        if (!json_equal(json_object_get(x, "source-id"), json_object_get(y, "source-id")) ||
            !json_equal(json_object_get(x, "transform"), json_object_get(y, "transform")))
            return false;
    }
    return true;
}

int floe__table_update(floe__table *t, const json_t *requirements, const json_t *updates,
                       floe_error *err)
{
    floe__loaded_table *next = NULL;
    FLOE_FORWARD_CTX(floe__catalog_commit_table(t->catalog, t->ns, t->name, requirements,
                                                updates, &next, err),
                     err, "updating table %s.%s", t->ns, t->name);
    floe__loaded_table_free(t->loaded);
    t->loaded = next;
    return FLOE_OK;
}

/* ---- schemas ------------------------------------------------------------------------------------ */

int floe__table_schema_id_for(const floe__table *t, const floe__schema *s, int32_t *out,
                              floe_error *err)
{
    json_t *j;
    FLOE_FORWARD(floe__schema_to_jansson(s, &j, err));
    *out = floe__metadata_schema_id_for(t->loaded->metadata, j);
    json_decref(j);
    return FLOE_OK;
}

int floe__table_adopt_schema(floe__table *t, const floe__schema *schema, floe_error *err)
{
    int32_t id = floe__metadata_current_schema_id(t->loaded->metadata);
    floe__schema *copy;
    FLOE_FORWARD(floe__schema_copy(schema, &copy, err));
    copy->schema_id = id;
    floe_schema_free(t->schema);
    t->schema = copy;
    t->schema_id = id;
    return FLOE_OK;
}

int floe__table_current_schema(const floe__table *t, floe__schema **out, floe_error *err)
{
    const floe__metadata *md = t->loaded->metadata;
    FLOE_FORWARD_CTX(floe__schema_from_jansson(floe__metadata_current_schema(md), out, err), err,
                     "the current schema of %s.%s", t->ns, t->name);
    return FLOE_OK;
}
