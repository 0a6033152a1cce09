/*
 * rest_parse.c - the documents a REST catalog answers with, as floe needs
 * them: LoadTableResult / CommitTableResponse (metadata, its location and
 * the storage config the catalog vends), ConfigResponse (defaults and
 * overrides) and the list pages (namespaces, table identifiers, the next
 * page token).
 *
 * Everything is validated here: a server's reply is untrusted input (it is
 * fuzzed by fuzz/fuzz_rest_parse.c).  Only the fields floe uses are read;
 * unknown fields are ignored, as the OpenAPI lets servers add them.
 */
#include "catalog/rest_internal.h"

#define MAX_LEVELS 64

static int load_doc(const void *body, size_t len, const char *what, json_t **out,
                    floe_error *err)
{
    json_error_t je;
    json_t *doc = json_loadb(body, len, 0, &je);
    if (!doc)
        return floe__err_set(err, FLOE_ECATALOG, "%s: the reply is not JSON (%s at byte %d)",
                             what, je.text, je.position);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return floe__err_set(err, FLOE_ECATALOG, "%s: the reply is not a JSON object", what);
    }
    *out = doc;
    return FLOE_OK;
}

/* Copy the string members of `src` (an object or NULL) into `dst`. */
static int merge_strings(json_t *dst, const json_t *src, floe_error *err)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)src, k, v) {
        if (json_is_string(v) && json_object_set(dst, k, v) != 0)
            return FLOE_OOM(err);
    }
    return FLOE_OK;
}

/* ---- LoadTableResult / CommitTableResponse ------------------------------------------ */

/* The storage-credentials entry with the longest prefix of `location`. */
static const json_t *best_credentials(const json_t *list, const char *location)
{
    const json_t *best = NULL;
    size_t best_len = 0, i;
    json_t *e;
    json_array_foreach((json_t *)list, i, e) {
        const char *p = json_string_value(json_object_get(e, "prefix"));
        json_t *cfg = json_object_get(e, "config");
        size_t n = p ? strlen(p) : 0;
        if (p && json_is_object(cfg) && location && strncmp(location, p, n) == 0 &&
            (!best || n > best_len)) {
            best = cfg;
            best_len = n;
        }
    }
    return best;
}

static int table_config(const json_t *doc, const char *location, json_t **out, floe_error *err)
{
    const json_t *cfg = json_object_get(doc, "config");
    const json_t *cred = best_credentials(json_object_get(doc, "storage-credentials"), location);
    *out = NULL;
    if (!json_is_object(cfg) && !cred)
        return FLOE_OK;
    json_t *o = json_object();
    if (!o)
        return FLOE_OOM(err);
    int rc = merge_strings(o, json_is_object(cfg) ? cfg : NULL, err);
    if (rc == FLOE_OK)
        rc = merge_strings(o, cred, err);
    if (rc != FLOE_OK) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return FLOE_OK;
}

int floe__rest_parse_table(const void *body, size_t len, floe__loaded_table **out,
                           floe_error *err)
{
    json_t *doc;
    FLOE_FORWARD(load_doc(body, len, "table response", &doc, err));
    json_t *md = json_object_get(doc, "metadata");
    json_t *loc = json_object_get(doc, "metadata-location");
    int rc = FLOE_OK;
    if (!json_is_object(md))
        rc = floe__err_set(err, FLOE_ECATALOG, "table response: field \"metadata\" is %s",
                           md ? "not an object" : "missing");
    else if (loc && !json_is_null(loc) && !json_is_string(loc))
        rc = floe__err_set(err, FLOE_ECATALOG,
                           "table response: field \"metadata-location\" is not a string");
    floe__loaded_table *t = rc == FLOE_OK ? floe__calloc(1, sizeof *t) : NULL;
    if (rc == FLOE_OK && !t)
        rc = FLOE_OOM(err);
    if (rc == FLOE_OK) {
        rc = floe__metadata_from_json(json_incref(md), &t->metadata, err);
        if (rc != FLOE_OK)
            rc = floe__err_wrap(err, rc, "table response: field \"metadata\"");
    }
    if (rc == FLOE_OK) {
        t->metadata_location = floe__strdup(json_is_string(loc) ? json_string_value(loc) : "");
        if (!t->metadata_location)
            rc = FLOE_OOM(err);
    }
    if (rc == FLOE_OK)
        rc = table_config(doc, floe__metadata_location(t->metadata), &t->config, err);
    json_decref(doc);
    if (rc != FLOE_OK) {
        floe__loaded_table_free(t);
        return rc;
    }
    *out = t;
    return FLOE_OK;
}

/* ---- ConfigResponse ---------------------------------------------------------------- */

int floe__rest_parse_config(const void *body, size_t len, const json_t *client, json_t **out,
                            floe_error *err)
{
    json_t *doc;
    FLOE_FORWARD(load_doc(body, len, "config response", &doc, err));
    json_t *defaults = json_object_get(doc, "defaults");
    json_t *overrides = json_object_get(doc, "overrides");
    int rc = FLOE_OK;
    if ((defaults && !json_is_object(defaults) && !json_is_null(defaults)) ||
        (overrides && !json_is_object(overrides) && !json_is_null(overrides)))
        rc = floe__err_set(err, FLOE_ECATALOG,
                           "config response: \"defaults\" and \"overrides\" must be objects");
    json_t *o = rc == FLOE_OK ? json_object() : NULL;
    if (rc == FLOE_OK && !o)
        rc = FLOE_OOM(err);
    if (rc == FLOE_OK)
        rc = merge_strings(o, json_is_object(defaults) ? defaults : NULL, err);
    if (rc == FLOE_OK)
        rc = merge_strings(o, client, err);
    if (rc == FLOE_OK)
        rc = merge_strings(o, json_is_object(overrides) ? overrides : NULL, err);
    json_decref(doc);
    if (rc != FLOE_OK) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return FLOE_OK;
}

/* ---- list pages -------------------------------------------------------------------------- */

/* ["a", "b"] -> "a.b"; a level containing '.' or an empty one cannot be
 * named in floe's dot-joined form. */
static int join_levels(const json_t *levels, json_t *names, floe_error *err)
{
    if (!json_is_array(levels) || json_array_size(levels) == 0 ||
        json_array_size(levels) > MAX_LEVELS)
        return floe__err_set(err, FLOE_ECATALOG,
                             "namespace list: a namespace is not a non-empty array of levels");
    floe__buf b;
    floe__buf_init(&b, 1 << 16);
    size_t i;
    json_t *l;
    int rc = FLOE_OK;
    json_array_foreach((json_t *)levels, i, l) {
        const char *s = json_string_value(l);
        if (!s || !*s || strchr(s, '.')) {
            rc = floe__err_set(err, FLOE_ECATALOG, "namespace list: level %zu is %s", i,
                               !s ? "not a string" : !*s ? "empty" : "dotted");
            break;
        }
        if ((i && (rc = floe__buf_putc(&b, '.', err)) != FLOE_OK) ||
            (rc = floe__buf_append(&b, s, strlen(s), err)) != FLOE_OK)
            break;
    }
    if (rc == FLOE_OK && json_array_append_new(names, json_stringn((const char *)b.data,
                                                                    b.len)) != 0)
        rc = FLOE_OOM(err);
    floe__buf_free(&b);
    return rc;
}

static int table_name(const json_t *ident, json_t *names, floe_error *err)
{
    const char *n = json_string_value(json_object_get(ident, "name"));
    if (!n || !*n)
        return floe__err_set(err, FLOE_ECATALOG, "table list: an identifier has no name");
    return json_array_append_new(names, json_string(n)) == 0 ? FLOE_OK : FLOE_OOM(err);
}

int floe__rest_parse_page(const void *body, size_t len, bool tables, json_t *names, char **next,
                          floe_error *err)
{
    const char *field = tables ? "identifiers" : "namespaces";
    json_t *doc;
    *next = NULL;
    FLOE_FORWARD(load_doc(body, len, tables ? "table list" : "namespace list", &doc, err));
    json_t *list = json_object_get(doc, field);
    json_t *tok = json_object_get(doc, "next-page-token");
    int rc = FLOE_OK;
    if (!json_is_array(list))
        rc = floe__err_set(err, FLOE_ECATALOG, "%s list: field \"%s\" is %s",
                           tables ? "table" : "namespace", field,
                           list ? "not an array" : "missing");
    size_t i;
    json_t *e;
    if (rc == FLOE_OK) {
        json_array_foreach(list, i, e) {
            rc = tables ? table_name(e, names, err) : join_levels(e, names, err);
            if (rc != FLOE_OK)
                break;
        }
    }
    if (rc == FLOE_OK && json_is_string(tok) && *json_string_value(tok)) {
        *next = floe__strdup(json_string_value(tok));
        if (!*next)
            rc = FLOE_OOM(err);
    }
    json_decref(doc);
    return rc;
}
