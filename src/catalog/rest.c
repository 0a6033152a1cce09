/*
 * rest.c - the Iceberg REST catalog client: the catalog interface of
 * catalog_internal.h spoken over HTTP to any server of the Iceberg REST
 * OpenAPI (Apache's reference server, Polaris, Lakekeeper, Nessie,
 * Gravitino, Unity, Glue, S3 Tables).
 *
 * Opening: authenticate (rest_auth.c), then GET /v1/config?warehouse=W.
 * The properties the client works with are the server's "defaults", then
 * the client's own settings, then the server's "overrides" on top (SPEC.md
 * section 8): "prefix" puts every later path under /v1/<prefix>/, "uri"
 * moves the client to another base URI, "namespace-separator" (URL-encoded,
 * default %1F) joins the levels of a namespace in a path.
 *
 * Paths: namespaces are floe's dot-joined strings; each level is
 * percent-encoded and the levels joined with the separator; table names
 * are percent-encoded.  Query parameters are written in sorted order, so a
 * SigV4 canonical query needs no reordering.
 *
 * The request loop (call()): one HTTP exchange, plus
 *   - an OAuth2 token fetched or refreshed before it when due, and one
 *     forced refresh and repeat after a 401/403/419;
 *   - for reads, creates and drops (safe to repeat: a create repeated after
 *     a lost response answers 409, which callers take as "exists"): up to
 *     three tries with backoff on transport failures, 408, 429 and 5xx;
 *   - for commits, never a repeat after anything may have reached the
 *     server: a 5xx, a timeout or a lost connection is
 *     FLOE_EUNKNOWN_OUTCOME, which the committer resolves by reloading
 *     the table (SPEC.md section 7.4); a failure before the connection
 *     existed is FLOE_ENET (nothing was sent).
 * Statuses become codes in rest_errors.c; responses are parsed in
 * rest_parse.c.
 *
 * Table loads ask for vended credentials (X-Iceberg-Access-Delegation);
 * the "config" of the reply is kept in the loaded table for storage.
 * Secrets never reach a message: URLs in messages have no query string
 * and no user info.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "catalog/rest_internal.h"

#define READ_TRIES 3
#define BACKOFF_MS 100
#define MAX_PAGES 100000
#define DEFAULT_SEPARATOR "%1F"
#define MAX_REPLY ((size_t)256 << 20)    /* metadata replies can be large */

typedef struct rest_catalog {
    floe__catalog base;
    floe__http *http;
    floe__rest_auth auth;
    char *uri;             /* base URI, no trailing '/' */
    char *prefix;          /* NULL: none */
    char *sep;             /* URL-encoded namespace separator in paths */
    char *sep_raw;         /* the same decoded, for the parent= query */
    json_t *props;         /* merged config properties */
} rest_catalog;

/* ---- URLs ------------------------------------------------------------------------ */

static int hexval(char ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0'
           : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
           : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                    : -1;
}

/* Percent-decoding (for the separator); NULL on a malformed escape. */
static char *url_decode(const char *s)
{
    char *out = floe__malloc(strlen(s) + 1), *o = out;
    if (!out)
        return NULL;
    for (; *s; s++) {
        if (*s != '%') {
            *o++ = *s;
            continue;
        }
        int hi = hexval(s[1]), lo = hi < 0 ? -1 : hexval(s[2]);
        if (hi < 0 || lo < 0) {
            floe__free(out);
            return NULL;
        }
        *o++ = (char)(hi * 16 + lo);
        s += 2;
    }
    *o = '\0';
    return out;
}

/* The levels of dot-joined `ns`, each encoded, joined by `sep`. */
static int put_namespace(floe__buf *b, const char *ns, const char *sep, bool encode_sep,
                         floe_error *err)
{
    const char *p = ns;
    for (bool first = true;; first = false) {
        size_t n = strcspn(p, ".");
        if (!first) {
            if (encode_sep)
                FLOE_FORWARD(floe__url_encode(sep, b, err));
            else
                FLOE_FORWARD(floe__buf_append(b, sep, strlen(sep), err));
        }
        char *level = floe__strndup(p, n);
        if (!level)
            return FLOE_OOM(err);
        int rc = floe__url_encode(level, b, err);
        floe__free(level);
        FLOE_FORWARD(rc);
        if (!p[n])
            return FLOE_OK;
        p += n + 1;
    }
}

/* <uri>/v1/[<prefix>/]<tail>, then "namespaces/<ns>" when ns is given,
 * then "/tables/<name>" when name is given.  Caller frees *out. */
static int make_url(rest_catalog *c, const char *tail, const char *ns, const char *name,
                    char **out, floe_error *err)
{
    floe__buf b;
    floe__buf_init(&b, 1 << 16);
    int rc = floe__buf_printf(&b, err, "%s/v1/", c->uri);
    if (rc == FLOE_OK && c->prefix && *c->prefix)
        rc = floe__buf_printf(&b, err, "%s/", c->prefix);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(&b, err, "%s", tail);
    if (rc == FLOE_OK && ns) {
        rc = floe__buf_printf(&b, err, "/");
        if (rc == FLOE_OK)
            rc = put_namespace(&b, ns, c->sep, false, err);
    }
    if (rc == FLOE_OK && name) {
        rc = floe__buf_printf(&b, err, "/tables/");
        if (rc == FLOE_OK)
            rc = floe__url_encode(name, &b, err);
    }
    *out = rc == FLOE_OK ? floe__buf_strdup(&b) : NULL;
    floe__buf_free(&b);
    if (rc == FLOE_OK && !*out)
        rc = FLOE_OOM(err);
    return rc;
}

/* ---- the request loop ------------------------------------------------------------------ */

typedef struct rest_call {
    const char *method;
    const char *url;
    const json_t *body;     /* NULL: none */
    floe__rest_op op;
    bool vended;            /* ask for vended storage credentials */
} rest_call;

static bool auth_status(long s)
{
    return s == 401 || s == 403 || s == 419;
}

/* One exchange with the headers and credentials every request carries. */
static int exchange(rest_catalog *c, const rest_call *rc_, const floe__buf *body,
                    floe__http_response *resp, floe_error *err)
{
    floe__http_header h[4];
    size_t n = 0;
    h[n++] = (floe__http_header){"Accept", "application/json"};
    h[n++] = (floe__http_header){"User-Agent", "floe/" FLOE_VERSION_STRING};
    if (body)
        h[n++] = (floe__http_header){"Content-Type", "application/json"};
    if (rc_->vended)
        h[n++] = (floe__http_header){"X-Iceberg-Access-Delegation", "vended-credentials"};
    floe__http_request req = {
        .method = rc_->method,
        .url = rc_->url,
        .headers = h,
        .n_headers = n,
        .body = body ? (const void *)(body->data ? body->data : (uint8_t *)"") : NULL,
        .body_len = body ? body->len : 0,
        .sigv4 = floe__rest_auth_sigv4(&c->auth),
        .bearer_token = floe__rest_auth_bearer(&c->auth),
        .max_response = MAX_REPLY,
    };
    return floe__http_do(c->http, &req, resp, err);
}

/* A transport failure of a commit that may have reached the server. */
static int unknown_outcome(const rest_call *rc_, floe_error *err)
{
    char u[512];
    floe__url_for_message(rc_->url, u, sizeof u);
    return floe__err_recode(err, FLOE_EUNKNOWN_OUTCOME, "%s %s: the connection failed after "
                            "the request was sent, so the commit may or may not have been "
                            "applied", rc_->method, u);
}

/* Perform `rc_` with authentication and the retries described at the top.
 * FLOE_OK when a response arrived (any status: the caller looks at it). */
static int call(rest_catalog *c, const rest_call *rc_, floe__http_response *resp,
                floe_error *err)
{
    floe__buf body;
    floe__buf_init(&body, MAX_REPLY);
    if (rc_->body) {
        size_t n = json_dumpb(rc_->body, NULL, 0, JSON_COMPACT);
        if (floe__buf_reserve(&body, n + 1, err) != FLOE_OK)
            return floe__err_wrap(err, FLOE_ENOMEM, "encoding a %s request", rc_->method);
        body.len = json_dumpb(rc_->body, (char *)body.data, n + 1, JSON_COMPACT);
    }
    bool refreshed = false;
    int rc = FLOE_OK;
    floe__retry retry;                          /* a commit is never repeated */
    floe__retry_init(&retry, BACKOFF_MS, 4 * BACKOFF_MS);
    retry.max_attempts = rc_->op == FLOE_REST_COMMIT ? 1 : READ_TRIES;
    for (;;) {
        rc = floe__rest_auth_prepare(&c->auth, c->http, refreshed, err);
        if (rc == FLOE_OK)
            rc = exchange(c, rc_, rc_->body ? &body : NULL, resp, err);
        if (rc != FLOE_OK && rc_->op == FLOE_REST_COMMIT && resp->maybe_sent) {
            rc = unknown_outcome(rc_, err);
            break;
        }
        if (rc == FLOE_OK && auth_status(resp->status) &&
            floe__rest_auth_can_refresh(&c->auth) && !refreshed) {
            refreshed = true;                   /* a new token, then the same request */
            continue;
        }
        /* the transport's failure, or a reply a read takes as one, by its class */
        int failed = rc != FLOE_OK ? rc
                     : resp->status >= 200 && resp->status <= 299
                         ? FLOE_OK
                         : floe__rest_status_code(resp->status, FLOE_REST_READ);
        if (!floe__retry_again(&retry, failed))
            break;
        floe_error_clear(err);
        refreshed = false;
    }
    floe__buf_free(&body);
    return rc;
}

/* Perform and require a 2xx; the error names the request otherwise. */
static int call_ok(rest_catalog *c, const rest_call *rc_, floe__http_response *resp,
                   floe_error *err)
{
    FLOE_FORWARD(call(c, rc_, resp, err));
    if (resp->status >= 200 && resp->status <= 299)
        return FLOE_OK;
    char u[512];
    floe__url_for_message(rc_->url, u, sizeof u);
    return floe__rest_error(err, rc_->method, u, resp->status, &resp->body, rc_->op);
}

/* ---- namespaces --------------------------------------------------------------------------- */

/* ["a", "b"] for "a.b". */
static json_t *levels_of(const char *ns)
{
    json_t *a = json_array();
    for (const char *p = ns; a;) {
        size_t n = strcspn(p, ".");
        if (json_array_append_new(a, json_stringn(p, n)) != 0) {
            json_decref(a);
            return NULL;
        }
        if (!p[n])
            break;
        p += n + 1;
    }
    return a;
}

static int rest_create_namespace(floe__catalog *base, const char *ns, const json_t *props,
                                 floe_error *err)
{
    rest_catalog *c = (rest_catalog *)base;
    FLOE_FORWARD(floe__catalog_check_namespace(ns, err));
    FLOE_RETURN_IF(props && !json_is_object(props), err, FLOE_EINVAL,
                   "namespace properties must be an object");
    json_t *body = json_pack("{s:o, s:o}", "namespace", levels_of(ns), "properties",
                             props ? json_incref((json_t *)props) : json_object());
    char *url = NULL;
    int rc = body ? make_url(c, "namespaces", NULL, NULL, &url, err) : FLOE_OOM(err);
    floe__http_response resp;
    floe__http_response_init(&resp);
    if (rc == FLOE_OK) {
        rest_call rq = {"POST", url, body, FLOE_REST_CREATE, false};
        rc = call_ok(c, &rq, &resp, err);
    }
    floe__http_response_free(&resp);
    floe__free(url);
    json_decref(body);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "creating namespace %s", ns);
    return FLOE_OK;
}

static int rest_namespace_exists(floe__catalog *base, const char *ns, bool *exists,
                                 floe_error *err)
{
    rest_catalog *c = (rest_catalog *)base;
    FLOE_FORWARD(floe__catalog_check_namespace(ns, err));
    char *url = NULL;
    FLOE_FORWARD(make_url(c, "namespaces", ns, NULL, &url, err));
    floe__http_response resp;
    floe__http_response_init(&resp);
    rest_call rq = {"HEAD", url, NULL, FLOE_REST_READ, false};
    int rc = call(c, &rq, &resp, err);
    if (rc == FLOE_OK && (resp.status == 400 || resp.status == 405 || resp.status == 501)) {
        rq.method = "GET";                       /* a server without HEAD */
        rc = call(c, &rq, &resp, err);
    }
    if (rc == FLOE_OK) {
        if (resp.status == 404) {
            *exists = false;
        } else if (resp.status >= 200 && resp.status <= 299) {
            *exists = true;
        } else {
            char u[512];
            floe__url_for_message(url, u, sizeof u);
            rc = floe__rest_error(err, rq.method, u, resp.status, &resp.body, FLOE_REST_READ);
        }
    }
    floe__http_response_free(&resp);
    floe__free(url);
    return rc;
}

/* Every page of a list, following next-page-token. */
static int list_pages(rest_catalog *c, const char *url_base, const char *parent, bool tables,
                      json_t **out, floe_error *err)
{
    json_t *names = json_array();
    char *token = NULL, *url = NULL;
    int rc = names ? FLOE_OK : FLOE_OOM(err);
    floe__http_response resp;
    floe__http_response_init(&resp);
    for (int page = 0; rc == FLOE_OK; page++) {
        floe__buf b;
        floe__buf_init(&b, 1 << 16);
        char sepc = '?';
        rc = floe__buf_printf(&b, err, "%s", url_base);
        if (rc == FLOE_OK && token) {            /* parameters in sorted order */
            rc = floe__buf_printf(&b, err, "%cpageToken=", sepc);
            sepc = '&';
            if (rc == FLOE_OK)
                rc = floe__url_encode(token, &b, err);
        }
        if (rc == FLOE_OK && parent && *parent) {
            rc = floe__buf_printf(&b, err, "%cparent=", sepc);
            if (rc == FLOE_OK)
                rc = put_namespace(&b, parent, c->sep_raw, true, err);
        }
        floe__free(url);
        url = rc == FLOE_OK ? floe__buf_strdup(&b) : NULL;
        floe__buf_free(&b);
        if (rc == FLOE_OK && !url)
            rc = FLOE_OOM(err);
        if (rc != FLOE_OK)
            break;
        rest_call rq = {"GET", url, NULL, FLOE_REST_READ, false};
        rc = call_ok(c, &rq, &resp, err);
        char *next = NULL;
        if (rc == FLOE_OK)
            rc = floe__rest_parse_page(resp.body.data, resp.body.len, tables, names, &next, err);
        if (rc == FLOE_OK && next && token && strcmp(next, token) == 0)
            rc = floe__err_set(err, FLOE_ECATALOG, "the server repeats page token %.64s", next);
        if (rc == FLOE_OK && page + 1 >= MAX_PAGES && next)
            rc = floe__err_set(err, FLOE_ELIMIT, "more than %d pages", MAX_PAGES);
        floe__free(token);
        token = next;
        if (!token)
            break;
    }
    floe__http_response_free(&resp);
    floe__free(token);
    floe__free(url);
    if (rc != FLOE_OK) {
        json_decref(names);
        return rc;
    }
    *out = names;
    return FLOE_OK;
}

static int rest_list_namespaces(floe__catalog *base, const char *parent, json_t **out,
                                floe_error *err)
{
    rest_catalog *c = (rest_catalog *)base;
    if (parent && *parent)
        FLOE_FORWARD(floe__catalog_check_namespace(parent, err));
    char *url = NULL;
    FLOE_FORWARD(make_url(c, "namespaces", NULL, NULL, &url, err));
    int rc = list_pages(c, url, parent, false, out, err);
    floe__free(url);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "listing namespaces%s%s", parent && *parent ? " in " : "",
                              parent && *parent ? parent : "");
    return FLOE_OK;
}

static int rest_list_tables(floe__catalog *base, const char *ns, json_t **out, floe_error *err)
{
    rest_catalog *c = (rest_catalog *)base;
    FLOE_FORWARD(floe__catalog_check_namespace(ns, err));
    char *ns_url = NULL, *url = NULL;
    FLOE_FORWARD(make_url(c, "namespaces", ns, NULL, &ns_url, err));
    url = floe__sprintf("%s/tables", ns_url);
    floe__free(ns_url);
    int rc = url ? list_pages(c, url, NULL, true, out, err) : FLOE_OOM(err);
    floe__free(url);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "listing the tables of namespace %s", ns);
    return FLOE_OK;
}

/* ---- tables --------------------------------------------------------------------------------- */

/* Perform a table request whose reply is a LoadTableResult or
 * CommitTableResponse. */
static int table_call(rest_catalog *c, const rest_call *rq, floe__loaded_table **out,
                      floe_error *err)
{
    floe__http_response resp;
    floe__http_response_init(&resp);
    int rc = call_ok(c, rq, &resp, err);
    if (rc == FLOE_OK)
        rc = floe__rest_parse_table(resp.body.data, resp.body.len, out, err);
    floe__http_response_free(&resp);
    return rc;
}

static int rest_load_table(floe__catalog *base, const char *ns, const char *name,
                           floe__loaded_table **out, floe_error *err)
{
    rest_catalog *c = (rest_catalog *)base;
    FLOE_FORWARD(floe__catalog_check_ident(ns, name, err));
    char *url = NULL;
    FLOE_FORWARD(make_url(c, "namespaces", ns, name, &url, err));
    rest_call rq = {"GET", url, NULL, FLOE_REST_READ, true};
    int rc = table_call(c, &rq, out, err);
    floe__free(url);
    if (rc == FLOE_ENOTFOUND)
        return floe__err_wrap(err, rc, "table %s.%s does not exist", ns, name);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "loading table %s.%s", ns, name);
    return FLOE_OK;
}

/* CreateTableRequest: name, location?, schema, partition-spec?,
 * write-order?, properties (format-version 2 unless given), stage-create. */
static json_t *create_body(const char *name, const floe__table_def *def)
{
    json_t *props = def->properties ? json_deep_copy(def->properties) : json_object();
    if (props && !json_object_get(props, "format-version"))
        json_object_set_new(props, "format-version", json_string("2"));
    json_t *b = props ? json_pack("{s:s, s:O, s:o, s:b}", "name", name, "schema",
                                  (json_t *)def->schema, "properties", props, "stage-create", 0)
                      : NULL;   /* "o" took props, even on failure */
    if (b && def->location)
        json_object_set_new(b, "location", json_string(def->location));
    if (b && def->partition_spec)
        json_object_set(b, "partition-spec", (json_t *)def->partition_spec);
    if (b && def->sort_order)
        json_object_set(b, "write-order", (json_t *)def->sort_order);
    return b;
}

static int rest_create_table(floe__catalog *base, const char *ns, const char *name,
                             const floe__table_def *def, floe__loaded_table **out,
                             floe_error *err)
{
    rest_catalog *c = (rest_catalog *)base;
    FLOE_FORWARD(floe__catalog_check_ident(ns, name, err));
    FLOE_RETURN_IF(!def || !def->schema, err, FLOE_EINVAL, "creating %s.%s: no schema", ns,
                   name);
    FLOE_RETURN_IF(def->properties && !json_is_object(def->properties), err, FLOE_EINVAL,
                   "creating %s.%s: properties must be an object", ns, name);
    json_t *body = create_body(name, def);
    char *ns_url = NULL, *url = NULL;
    int rc = body ? make_url(c, "namespaces", ns, NULL, &ns_url, err) : FLOE_OOM(err);
    if (rc == FLOE_OK && !(url = floe__sprintf("%s/tables", ns_url)))
        rc = FLOE_OOM(err);
    if (rc == FLOE_OK) {
        rest_call rq = {"POST", url, body, FLOE_REST_CREATE, true};
        rc = table_call(c, &rq, out, err);
    }
    floe__free(ns_url);
    floe__free(url);
    json_decref(body);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "creating table %s.%s", ns, name);
    return FLOE_OK;
}

static int rest_commit_table(floe__catalog *base, const char *ns, const char *name,
                             const json_t *requirements, const json_t *updates,
                             floe__loaded_table **out, floe_error *err)
{
    rest_catalog *c = (rest_catalog *)base;
    FLOE_FORWARD(floe__catalog_check_ident(ns, name, err));
    FLOE_RETURN_IF((requirements && !json_is_array(requirements)) ||
                   (updates && !json_is_array(updates)), err, FLOE_EINVAL,
                   "requirements and updates must be JSON arrays");
    json_t *body = json_pack("{s:{s:o, s:s}, s:o, s:o}", "identifier", "namespace",
                             levels_of(ns), "name", name, "requirements",
                             requirements ? json_incref((json_t *)requirements) : json_array(),
                             "updates", updates ? json_incref((json_t *)updates) : json_array());
    char *url = NULL;
    int rc = body ? make_url(c, "namespaces", ns, name, &url, err) : FLOE_OOM(err);
    if (rc == FLOE_OK) {
        rest_call rq = {"POST", url, body, FLOE_REST_COMMIT, false};
        rc = table_call(c, &rq, out, err);
    }
    floe__free(url);
    json_decref(body);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "commit to %s.%s", ns, name);
    return FLOE_OK;
}

static int rest_drop_table(floe__catalog *base, const char *ns, const char *name,
                           floe_error *err)
{
    rest_catalog *c = (rest_catalog *)base;
    FLOE_FORWARD(floe__catalog_check_ident(ns, name, err));
    char *url = NULL;
    FLOE_FORWARD(make_url(c, "namespaces", ns, name, &url, err));
    floe__http_response resp;
    floe__http_response_init(&resp);
    rest_call rq = {"DELETE", url, NULL, FLOE_REST_DROP, false};
    int rc = call_ok(c, &rq, &resp, err);
    floe__http_response_free(&resp);
    floe__free(url);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "dropping table %s.%s", ns, name);
    return FLOE_OK;
}

static void rest_free(floe__catalog *base)
{
    rest_catalog *c = (rest_catalog *)base;
    floe__http_free(c->http);
    floe__rest_auth_clear(&c->auth);
    floe__free(c->uri);
    floe__free(c->prefix);
    floe__free(c->sep);
    floe__free(c->sep_raw);
    json_decref(c->props);
    floe__free(c);
}

static const floe__catalog_ops REST_OPS = {
    .name = "rest",
    .create_namespace = rest_create_namespace,
    .namespace_exists = rest_namespace_exists,
    .list_namespaces = rest_list_namespaces,
    .list_tables = rest_list_tables,
    .load_table = rest_load_table,
    .create_table = rest_create_table,
    .commit_table = rest_commit_table,
    .drop_table = rest_drop_table,
    .free = rest_free,
};

uint64_t floe__catalog_rest_token_fetches(const floe__catalog *c)
{
    if (!c || c->ops != &REST_OPS)
        return 0;
    return ((const rest_catalog *)c)->auth.refreshes;
}

/* ---- opening ------------------------------------------------------------------------------ */

static int timeout_ms(long *out, floe_error *err)
{
    const char *v = getenv("FLOE_CATALOG_TIMEOUT_MS");
    *out = 0;
    if (!v || !*v)
        return FLOE_OK;
    char *end = NULL;
    long ms = strtol(v, &end, 10);
    FLOE_RETURN_IF(*end || ms <= 0, err, FLOE_EINVAL,
                   "FLOE_CATALOG_TIMEOUT_MS must be a positive number of milliseconds, not "
                   "\"%.40s\"", v);
    *out = ms;
    return FLOE_OK;
}

static char *trimmed_uri(const char *uri)
{
    size_t n = strlen(uri);
    while (n > 0 && uri[n - 1] == '/')
        n--;
    return floe__strndup(uri, n);
}

/* Adopt the merged config: prefix, uri, namespace-separator. */
static int apply_config(rest_catalog *c, floe_error *err)
{
    const char *prefix = json_string_value(json_object_get(c->props, "prefix"));
    const char *uri = json_string_value(json_object_get(c->props, "uri"));
    const char *sep = json_string_value(json_object_get(c->props, "namespace-separator"));
    if (prefix) {
        while (*prefix == '/')
            prefix++;
        if (*prefix && !(c->prefix = trimmed_uri(prefix)))
            return FLOE_OOM(err);
    }
    if (uri && (floe__str_starts(uri, "http://") || floe__str_starts(uri, "https://"))) {
        char *u = trimmed_uri(uri);
        if (!u)
            return FLOE_OOM(err);
        floe__free(c->uri);
        c->uri = u;
    }
    c->sep = floe__strdup(sep && *sep ? sep : DEFAULT_SEPARATOR);
    if (!c->sep)
        return FLOE_OOM(err);
    c->sep_raw = url_decode(c->sep);
    FLOE_RETURN_IF(!c->sep_raw || !*c->sep_raw, err, FLOE_ECATALOG,
                   "the catalog's namespace-separator \"%.20s\" is not a valid encoded "
                   "separator", c->sep);
    return FLOE_OK;
}

static int fetch_config(rest_catalog *c, const char *warehouse, floe_error *err)
{
    floe__buf b;
    floe__buf_init(&b, 1 << 16);
    int rc = floe__buf_printf(&b, err, "%s/v1/config", c->uri);
    if (rc == FLOE_OK && warehouse && *warehouse) {
        rc = floe__buf_printf(&b, err, "?warehouse=");
        if (rc == FLOE_OK)
            rc = floe__url_encode(warehouse, &b, err);
    }
    char *url = rc == FLOE_OK ? floe__buf_strdup(&b) : NULL;
    floe__buf_free(&b);
    if (rc == FLOE_OK && !url)
        rc = FLOE_OOM(err);
    json_t *client = rc == FLOE_OK ? json_object() : NULL;
    if (client && warehouse && *warehouse)
        json_object_set_new(client, "warehouse", json_string(warehouse));
    floe__http_response resp;
    floe__http_response_init(&resp);
    if (rc == FLOE_OK) {
        rest_call rq = {"GET", url, NULL, FLOE_REST_READ, false};
        rc = call_ok(c, &rq, &resp, err);
    }
    if (rc == FLOE_OK)
        rc = floe__rest_parse_config(resp.body.data, resp.body.len, client, &c->props, err);
    floe__http_response_free(&resp);
    json_decref(client);
    floe__free(url);
    if (rc == FLOE_OK)
        rc = apply_config(c, err);
    return rc;
}

int floe__catalog_rest_open(const floe_connect_options *o, floe__catalog **out, floe_error *err)
{
    FLOE_RETURN_IF(!o || !o->catalog, err, FLOE_EINVAL, "REST catalog: no URI");
    rest_catalog *c = floe__calloc(1, sizeof *c);
    if (!c)
        return FLOE_OOM(err);
    c->base.ops = &REST_OPS;
    c->uri = trimmed_uri(o->catalog);
    floe__http_options ho = {.ca_file = o->ca_file};
    int rc = c->uri ? timeout_ms(&ho.timeout_ms, err) : FLOE_OOM(err);
    if (rc == FLOE_OK && ho.timeout_ms && ho.timeout_ms < 10000)
        ho.connect_timeout_ms = ho.timeout_ms;
    if (rc == FLOE_OK)
        rc = floe__http_new(&ho, &c->http, err);
    if (rc == FLOE_OK)
        rc = floe__rest_auth_init(&c->auth, o, c->uri, err);
    if (rc == FLOE_OK)
        rc = fetch_config(c, o->warehouse, err);
    if (rc != FLOE_OK) {
        char u[512];
        floe__url_for_message(o->catalog, u, sizeof u);
        rest_free(&c->base);
        return floe__err_wrap(err, rc, "opening REST catalog %s", u);
    }
    *out = &c->base;
    return FLOE_OK;
}
