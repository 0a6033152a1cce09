/*
 * schema_evolve.c - a table's schema evolved into a declared one, by the
 * rules of the Iceberg spec ("Schema Evolution"), and the table's name
 * mapping kept true across it.
 *
 * Fields are matched by name within their struct (the top level, or a
 * record's fields); a declared field that says `was OLD` matches the
 * table's field OLD when none has its own name (a rename: the field id is
 * kept).  Then:
 *   matched      the table's field id; its type may stay or widen (int ->
 *                long, float -> double, decimal(P,S) -> decimal(P',S) with
 *                P' > P, and on format 3 date -> timestamp); required may
 *                become optional, never the reverse; its position is the
 *                declared one (a reorder is allowed)
 *   new          fresh field ids above the table's last-column-id (for the
 *                field and every field inside it); optional, or (format 3)
 *                with a default, which becomes its initial-default (what
 *                rows already written read) and write-default
 *   not declared dropped (an identifier field cannot be: say which)
 * A declared default on a field that exists sets its write-default (format
 * 3; the initial-default never changes).  Anything else is FLOE_EINCOMPATIBLE
 * naming the column and the rule it breaks; nothing is changed then.
 *
 * The result carries the declared source types (decl), so input rows are
 * read by them; field ids are never reused (last-column-id only grows).
 */
#include <stdio.h>

#include "iceberg/iceberg_internal.h"

typedef struct ev {
    int format_version;
    bool replace;                    /* every row is written again: see floe__schema_replace */
    int32_t next_id;                 /* the next fresh field id */
    bool changed;
    floe__buf *summary;
    floe_error *err;
    char path[512];
} ev;

static void note(ev *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(ev *e, const char *fmt, ...)
{
    char msg[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    e->changed = true;
    floe__buf_printf(e->summary, NULL, "%s%s", e->summary->len ? "; " : "", msg);
}

static int refuse(ev *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(ev *e, const char *fmt, ...)
{
    char msg[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return floe__err_set(e->err, FLOE_EINCOMPATIBLE, "column \"%s\": %s", e->path, msg);
}

static size_t path_push(ev *e, const char *name)
{
    size_t len = strlen(e->path);
    snprintf(e->path + len, sizeof e->path - len, "%s%s", len ? "." : "", name);
    return len;
}

static void type_text(const floe__field *f, char *buf, size_t n)
{
    floe__type_name(f, false, buf, n);
}

/* ---- new fields ------------------------------------------------------------------------- */

static void fresh_ids(ev *e, floe__field *f)
{
    f->id = e->next_id++;
    for (uint32_t i = 0; i < f->n_children; i++)
        fresh_ids(e, &f->children[i]);
}

/* Defaults are a format 3 feature; a new required field needs one. */
static int check_added(ev *e, const floe__field *d, bool top)
{
    if (d->write_default && e->format_version < 3)
        return refuse(e, "a default needs a format version 3 table (this one is version %d)",
                      e->format_version);
    if (top && d->required && !d->write_default)
        return refuse(e, "a new column that is not null needs a default: the rows already in "
                      "the table have no value for it (declare it nullable%s)",
                      e->format_version >= 3 ? ", or give it a default" : "");
    for (uint32_t i = 0; i < d->n_children; i++) {
        size_t len = path_push(e, d->children[i].name);
        int rc = d->kind == FLOE_K_STRUCT ? check_added(e, &d->children[i], false) : FLOE_OK;
        e->path[len] = '\0';
        FLOE_FORWARD(rc);
    }
    return FLOE_OK;
}

static int add_field(ev *e, const floe__field *d, floe__field *out)
{
    if (!e->replace)
        FLOE_FORWARD(check_added(e, d, true));
    FLOE_FORWARD(floe__field_copy(out, d, e->err));
    floe__free(out->was);
    out->was = NULL;
    fresh_ids(e, out);
    /* rows written before it read the default too (SQL's ADD COLUMN ... DEFAULT);
     * a v2 table written again whole needs none (and can have none) */
    bool dflt = d->write_default && !(e->replace && e->format_version < 3);
    FLOE_FORWARD(floe__field_set_defaults(out, dflt ? d->write_default : NULL,
                                          d->write_default_len, dflt ? d->write_default : NULL,
                                          d->write_default_len, e->err));
    if (e->replace && !dflt)
        out->required = false;          /* older snapshots' files do not have it */
    char type[160];
    type_text(out, type, sizeof type);
    note(e, "added %s (%s%s)", e->path, type,
         d->write_default ? ", with a default" : "");
    return FLOE_OK;
}

/* ---- kept fields -------------------------------------------------------------------------- */

static int evolve_field(ev *e, const floe__field *t, const floe__field *d, floe__field *out);

/* The same rule as a declaration's check (schema_compat.c): a fixed[16] or
 * uuid column of the table reads declared uuid strings. */
static bool uuid_alternative(const floe__field *t, const floe__field *d)
{
    return d->kind == FLOE_K_STRING &&
           (d->decl == FLOE_D_UUID || d->decl == FLOE_D_TEXT || d->decl == FLOE_D_NONE) &&
           (t->kind == FLOE_K_UUID || (t->kind == FLOE_K_FIXED && t->length == 16));
}

static int widen(ev *e, const floe__field *t, const floe__field *d)
{
    char tt[160], dt[160];
    type_text(t, tt, sizeof tt);
    type_text(d, dt, sizeof dt);
    bool ok = (t->kind == FLOE_K_INT && d->kind == FLOE_K_LONG) ||
              (t->kind == FLOE_K_FLOAT && d->kind == FLOE_K_DOUBLE) ||
              (e->format_version >= 3 && t->kind == FLOE_K_DATE && d->kind == FLOE_K_TIMESTAMP);
    if (t->kind == FLOE_K_DECIMAL && d->kind == FLOE_K_DECIMAL) {
        if (d->scale != t->scale)
            return refuse(e, "%s cannot become %s: a decimal's scale never changes", tt, dt);
        if (d->precision < t->precision)
            return refuse(e, "%s cannot become %s: a decimal's precision may only grow", tt, dt);
        ok = true;
    }
    if (!ok)
        return refuse(e, "%s cannot become %s: Iceberg widens only int to long, float to "
                      "double, decimal(P,S) to decimal(P',S) with P' > P%s", tt, dt,
                      e->format_version >= 3 ? " and date to timestamp"
                                             : " (and, on format 3, date to timestamp)");
    if (strcmp(tt, dt) != 0)
        note(e, "widened %s from %s to %s", e->path, tt, dt);
    return FLOE_OK;
}

static int evolve_struct(ev *e, const floe__field *t, const floe__field *d, floe__field *out);

/* The children of a list (element) or map (key, value): matched by place. */
static int evolve_parts(ev *e, const floe__field *t, const floe__field *d, floe__field *out)
{
    out->children = floe__calloc(t->n_children, sizeof *out->children);
    if (!out->children)
        return FLOE_OOM(e->err);
    for (uint32_t i = 0; i < t->n_children; i++) {
        size_t len = path_push(e, t->children[i].name);
        out->n_children = i + 1;
        int rc = evolve_field(e, &t->children[i], &d->children[i], &out->children[i]);
        e->path[len] = '\0';
        FLOE_FORWARD(rc);
        floe__free(out->children[i].name);      /* parts keep their names */
        if (!(out->children[i].name = floe__strdup(t->children[i].name)))
            return FLOE_OOM(e->err);
    }
    return FLOE_OK;
}

static int evolve_type(ev *e, const floe__field *t, const floe__field *d, floe__field *out)
{
    char tt[160], dt[160];
    if (uuid_alternative(t, d)) {
        out->kind = t->kind;
        out->length = t->length;
        out->decl = FLOE_D_UUID;
        return FLOE_OK;
    }
    bool nested = t->kind == FLOE_K_STRUCT || t->kind == FLOE_K_LIST || t->kind == FLOE_K_MAP;
    if (nested || d->kind == FLOE_K_STRUCT || d->kind == FLOE_K_LIST || d->kind == FLOE_K_MAP) {
        if (t->kind != d->kind) {
            type_text(t, tt, sizeof tt);
            type_text(d, dt, sizeof dt);
            return refuse(e, "%s cannot become %s: a column keeps its kind (record, list, map "
                          "or primitive)", tt, dt);
        }
        if (t->kind == FLOE_K_STRUCT)
            return evolve_struct(e, t, d, out);
        return evolve_parts(e, t, d, out);
    }
    if (t->kind == d->kind && t->kind == FLOE_K_FIXED && t->length != d->length) {
        type_text(t, tt, sizeof tt);
        type_text(d, dt, sizeof dt);
        return refuse(e, "%s cannot become %s: a fixed type's length never changes", tt, dt);
    }
    if (t->kind != d->kind || (t->kind == FLOE_K_DECIMAL && t->precision != d->precision) ||
        (t->kind == FLOE_K_DECIMAL && t->scale != d->scale))
        return widen(e, t, d);
    return FLOE_OK;
}

static int evolve_field(ev *e, const floe__field *t, const floe__field *d, floe__field *out)
{
    *out = (floe__field){.id = t->id, .kind = d->kind, .decl = d->decl, .required = d->required,
                         .precision = d->precision, .scale = d->scale, .length = d->length};
    out->name = floe__strdup(d->name);
    if (!out->name || (t->doc && !(out->doc = floe__strdup(t->doc))))
        return FLOE_OOM(e->err);
    if (d->required && !t->required && e->replace)
        out->required = false;          /* stays optional: the source enforces it */
    else if (d->required && !t->required)
        return refuse(e, "an optional column cannot become not null: rows already written may "
                      "hold null");
    if (t->required && !d->required)
        note(e, "made %s nullable", e->path);
    FLOE_FORWARD(evolve_type(e, t, d, out));
    const uint8_t *w = t->write_default;
    uint32_t wlen = t->write_default_len;
    if (d->write_default && !(e->replace && e->format_version < 3)) {
        if (e->format_version < 3)
            return refuse(e, "a default needs a format version 3 table (this one is version %d)",
                          e->format_version);
        if (!floe__default_equal(w, wlen, d->write_default, d->write_default_len))
            note(e, "changed the default of %s for rows written from now on", e->path);
        w = d->write_default;
        wlen = d->write_default_len;
    }
    return floe__field_set_defaults(out, t->initial_default, t->initial_default_len, w, wlen,
                                    e->err);
}

/* ---- structs ------------------------------------------------------------------------------ */

static const floe__field *by_name(const floe__field *t, const char *name, uint32_t *at)
{
    for (uint32_t i = 0; name && i < t->n_children; i++)
        if (strcmp(t->children[i].name, name) == 0) {
            *at = i;
            return &t->children[i];
        }
    return NULL;
}

/* The table's field a declared one stands for: by its name, else by the
 * name it `was`; NULL for a new field. */
static int match(ev *e, const floe__field *t, const floe__field *d, const bool *taken,
                 uint32_t *at, const floe__field **out)
{
    *out = by_name(t, d->name, at);
    bool renamed = false;
    if (!*out && d->was) {
        *out = by_name(t, d->was, at);
        renamed = *out != NULL;
        if (!renamed)
            return refuse(e, "it was \"%s\", but the table has no column \"%s\" (nor one "
                          "named \"%s\")", d->was, d->was, d->name);
    }
    if (*out && taken[*at])
        return refuse(e, "it and another declared column both stand for the table's column "
                      "\"%s\"", (*out)->name);
    if (renamed)
        note(e, "renamed %s to %s", d->was, e->path);
    return FLOE_OK;
}

static int drops(ev *e, const floe__field *t, const bool *taken)
{
    for (uint32_t i = 0; i < t->n_children; i++) {
        if (taken[i])
            continue;
        size_t len = path_push(e, t->children[i].name);
        note(e, "dropped %s", e->path);
        e->path[len] = '\0';
    }
    return FLOE_OK;
}

static int evolve_children(ev *e, const floe__field *t, const floe__field *d, floe__field *out,
                           bool *taken)
{
    uint32_t kept = 0;
    for (uint32_t k = 0; k < d->n_children; k++) {
        const floe__field *df = &d->children[k], *tf = NULL;
        size_t len = path_push(e, df->name);
        uint32_t at = 0;
        out->n_children = k + 1;
        int rc = match(e, t, df, taken, &at, &tf);
        if (rc == FLOE_OK && tf) {
            taken[at] = true;
            if (at != kept++)
                note(e, "moved %s", e->path);
            rc = evolve_field(e, tf, df, &out->children[k]);
            if (rc == FLOE_EINCOMPATIBLE && e->replace) {
                /* a new column of the same name: the rows are written again */
                floe_error_clear(e->err);
                floe__field_clear(&out->children[k]);
                note(e, "replaced %s (a type Iceberg cannot change in place)", e->path);
                rc = add_field(e, df, &out->children[k]);
            }
        } else if (rc == FLOE_OK) {
            rc = add_field(e, df, &out->children[k]);
        }
        e->path[len] = '\0';
        FLOE_FORWARD(rc);
    }
    return drops(e, t, taken);
}

static int evolve_struct(ev *e, const floe__field *t, const floe__field *d, floe__field *out)
{
    out->children = floe__calloc(d->n_children ? d->n_children : 1, sizeof *out->children);
    bool *taken = floe__calloc(t->n_children ? t->n_children : 1, sizeof *taken);
    int rc = out->children && taken ? evolve_children(e, t, d, out, taken) : FLOE_OOM(e->err);
    floe__free(taken);
    return rc;
}

/* ---- the schema --------------------------------------------------------------------------- */

static int keep_identifiers(ev *e, const floe__schema *table, floe__schema *s)
{
    for (uint32_t i = 0; i < table->n_identifier_ids; i++)
        if (!floe__schema_find_id(s, table->identifier_ids[i])) {
            const floe__field *f = floe__schema_find_id(table, table->identifier_ids[i]);
            return floe__err_set(e->err, FLOE_EINCOMPATIBLE, "column \"%s\" is an identifier "
                                 "field of the table (identifier-field-ids): it cannot be "
                                 "dropped", f ? f->name : "?");
        }
    return floe__schema_set_identifiers(s, table->identifier_ids, table->n_identifier_ids,
                                        e->err);
}

static int32_t highest(const floe__field *f)
{
    int32_t m = f->id;
    for (uint32_t i = 0; i < f->n_children; i++) {
        int32_t c = highest(&f->children[i]);
        if (c > m)
            m = c;
    }
    return m;
}

void floe__evolution_clear(floe__evolution *out)
{
    floe_schema_free(out->schema);
    floe__buf_free(&out->summary);
    memset(out, 0, sizeof *out);
}

static int evolve(const floe__schema *table, int32_t last_column_id, int format_version,
                  bool replace, const floe__schema *declared, floe__evolution *out,
                  floe_error *err);

int floe__schema_evolve(const floe__schema *table, int32_t last_column_id, int format_version,
                        const floe__schema *declared, floe__evolution *out, floe_error *err)
{
    return evolve(table, last_column_id, format_version, false, declared, out, err);
}

int floe__schema_replace(const floe__schema *table, int32_t last_column_id, int format_version,
                         const floe__schema *declared, floe__evolution *out, floe_error *err)
{
    return evolve(table, last_column_id, format_version, true, declared, out, err);
}

static int evolve(const floe__schema *table, int32_t last_column_id, int format_version,
                  bool replace, const floe__schema *declared, floe__evolution *out,
                  floe_error *err)
{
    memset(out, 0, sizeof *out);
    floe__buf_init(&out->summary, 1 << 16);
    int32_t top = highest(&table->root);
    ev e = {.format_version = format_version, .replace = replace,
            .next_id = (last_column_id > top ? last_column_id : top) + 1,
            .summary = &out->summary, .err = err};
    int rc = floe__schema_new(&out->schema, err);
    if (rc == FLOE_OK) {
        out->schema->root.decl = declared->root.decl;
        rc = evolve_struct(&e, &table->root, &declared->root, &out->schema->root);
    }
    if (rc == FLOE_OK)
        rc = keep_identifiers(&e, table, out->schema);
    if (rc != FLOE_OK) {
        floe__evolution_clear(out);
        return rc;
    }
    out->schema->schema_id = table->schema_id;
    out->schema->highest_id = highest(&out->schema->root);
    out->last_column_id = e.next_id - 1;
    out->changed = e.changed;
    return FLOE_OK;
}

/* ---- the name mapping ------------------------------------------------------------------------ */

static int map_fields(json_t *list, const floe__field *parent);

static json_t *map_entry(const floe__field *f)
{
    json_t *o = json_pack("{s:i, s:[s]}", "field-id", (int)f->id, "names", f->name);
    if (o && f->n_children) {
        json_t *kids = json_array();
        if (json_object_set_new(o, "fields", kids) != 0 || map_fields(kids, f) != FLOE_OK) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

static bool has_name(const json_t *names, const char *name)
{
    size_t i;
    const json_t *n;
    json_array_foreach(names, i, n)
        if (json_is_string(n) && strcmp(json_string_value(n), name) == 0)
            return true;
    return false;
}

/* The entries of `list` (a mapping's fields) brought up to parent's children. */
static int map_fields(json_t *list, const floe__field *parent)
{
    for (uint32_t k = 0; k < parent->n_children; k++) {
        const floe__field *f = &parent->children[k];
        json_t *hit = NULL, *o;
        size_t i;
        json_array_foreach(list, i, o) {
            const json_t *id = json_object_get(o, "field-id");
            if (json_is_integer(id) && json_integer_value(id) == f->id)
                hit = o;
        }
        if (!hit) {
            if (json_array_append_new(list, map_entry(f)) != 0)
                return FLOE_ENOMEM;
            continue;
        }
        json_t *names = json_object_get(hit, "names");
        if (!json_is_array(names)) {
            names = json_array();
            if (json_object_set_new(hit, "names", names) != 0)
                return FLOE_ENOMEM;
        }
        if (!has_name(names, f->name) && json_array_append_new(names, json_string(f->name)))
            return FLOE_ENOMEM;
        if (!f->n_children)
            continue;
        json_t *kids = json_object_get(hit, "fields");
        if (!json_is_array(kids)) {
            kids = json_array();
            if (json_object_set_new(hit, "fields", kids) != 0)
                return FLOE_ENOMEM;
        }
        FLOE_FORWARD(map_fields(kids, f));
    }
    return FLOE_OK;
}

int floe__name_mapping_update(const char *mapping, const floe__schema *to, char **out,
                              floe_error *err)
{
    *out = NULL;
    if (!mapping)
        return FLOE_OK;
    json_error_t je;
    json_t *list = json_loads(mapping, 0, &je);
    if (!json_is_array(list)) {
        json_decref(list);
        return floe__err_set(err, FLOE_EFORMAT, "the table's schema.name-mapping.default is not "
                             "a JSON list of field mappings");
    }
    int rc = map_fields(list, &to->root);
    size_t n = rc == FLOE_OK ? json_dumpb(list, NULL, 0, JSON_COMPACT) : 0;
    char *text = n ? floe__malloc(n + 1) : NULL;
    if (text && json_dumpb(list, text, n, JSON_COMPACT) == n) {
        text[n] = '\0';
        *out = text;
    } else {
        floe__free(text);
        rc = FLOE_ENOMEM;
    }
    json_decref(list);
    return rc == FLOE_OK ? FLOE_OK : FLOE_OOM(err);
}
