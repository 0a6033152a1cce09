/*
 * s3.c - the S3 FileIO (see io_internal.h): its settings and how they
 * change (vended credentials), scheme dispatch (local URIs go to a local
 * FileIO inside), whole reads (GET), existence (HEAD) and deletes.
 * Requests and retries are in s3_request.c, uploads in s3_output.c,
 * random-access reads in s3_input.c, listings in s3_list.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "io/s3_internal.h"

#define DEFAULT_PART_SIZE ((size_t)8 << 20)

void floe__s3_options_init(floe__s3_options *o)
{
    memset(o, 0, sizeof *o);
    o->path_style = -1;
}

/* ---- settings ------------------------------------------------------------------ */

static void free_secret(char *s)
{
    if (s) {
        volatile char *p = s;         /* not optimised away */
        while (*p)
            *p++ = 0;
        floe__free(s);
    }
}

static void conf_free(s3_conf *c)
{
    if (!c)
        return;
    floe__free(c->endpoint);
    floe__free(c->region);
    floe__free(c->access_key_id);
    free_secret(c->secret_access_key);
    free_secret(c->session_token);
    floe__free(c->ca_file);
    floe__free(c);
}

/* *dst = a copy of v (NULL stays NULL); the old value is freed. */
static int set_str(char **dst, const char *v, bool secret, floe_error *err)
{
    char *copy = NULL;
    if (v && !(copy = floe__strdup(v)))
        return FLOE_OOM(err);
    if (secret)
        free_secret(*dst);
    else
        floe__free(*dst);
    *dst = copy;
    return FLOE_OK;
}

/* "host:port" gets https://; a trailing '/' goes. */
static int set_endpoint(s3_conf *c, const char *e, floe_error *err)
{
    if (!e || !*e)
        return set_str(&c->endpoint, NULL, false, err);
    size_t n = strlen(e);
    while (n > 0 && e[n - 1] == '/')
        n--;
    char *v = strstr(e, "://") ? floe__strndup(e, n) : floe__sprintf("https://%.*s", (int)n, e);
    if (!v)
        return FLOE_OOM(err);
    floe__free(c->endpoint);
    c->endpoint = v;
    return FLOE_OK;
}

/* An endpoint may carry user info or a query (secrets): never shown. */
static int endpoint_error(const char *endpoint, const char *why, floe_error *err)
{
    char shown[512];
    floe__url_for_message(endpoint, shown, sizeof shown);
    return floe__err_set(err, FLOE_EINVAL, "S3 endpoint '%s': %s", shown, why);
}

static bool has_userinfo_or_query(const char *url)
{
    const char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    return memchr(host, '@', strcspn(host, "/?#")) != NULL || strpbrk(url, "?#") != NULL;
}

static int check_conf(const s3_conf *c, floe_error *err)
{
    if (c->endpoint && has_userinfo_or_query(c->endpoint))
        return endpoint_error(c->endpoint, "credentials and query strings do not belong in the "
                              "endpoint (give keys in AWS_ACCESS_KEY_ID / "
                              "AWS_SECRET_ACCESS_KEY)", err);
    if (c->endpoint && !floe__str_starts(c->endpoint, "http://") &&
        !floe__str_starts(c->endpoint, "https://"))
        return endpoint_error(c->endpoint, "want http(s)://HOST[:PORT]", err);
    if (c->endpoint && !c->endpoint[strcspn(c->endpoint, ":") + 3])
        return endpoint_error(c->endpoint, "it has no host", err);
    for (const char *p = c->region; *p; p++)
        FLOE_RETURN_IF(!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
                         (*p >= 'A' && *p <= 'Z') || *p == '_'),
                       err, FLOE_EINVAL, "S3 region '%s': letters, digits and '-' only",
                       c->region);
    FLOE_RETURN_IF(!*c->region, err, FLOE_EINVAL, "S3 region is empty");
    FLOE_RETURN_IF(c->access_key_id && !c->secret_access_key, err, FLOE_EINVAL,
                   "S3 access key id %s is given without a secret access key "
                   "(AWS_SECRET_ACCESS_KEY)", c->access_key_id);
    FLOE_RETURN_IF(c->part_size < S3_MIN_PART_SIZE || c->part_size > S3_MAX_PART_SIZE, err,
                   FLOE_EINVAL, "S3 part size %zu: want 5 MiB to 5 GiB", c->part_size);
    FLOE_RETURN_IF(c->max_attempts < 1 || c->max_attempts > 100, err, FLOE_EINVAL,
                   "S3 max attempts %d: want 1 to 100", c->max_attempts);
    FLOE_RETURN_IF(c->retry_base_ms < 1 || c->retry_max_ms < c->retry_base_ms ||
                       c->connect_timeout_ms < 1 || c->request_timeout_ms < 1,
                   err, FLOE_EINVAL, "S3 retry delays and timeouts must be positive");
    return FLOE_OK;
}

static int conf_from_options(const floe__s3_options *o, s3_conf **out, floe_error *err)
{
    s3_conf *c = floe__calloc(1, sizeof *c);
    if (!c)
        return FLOE_OOM(err);
    c->refs = 1;
    c->path_style = o->path_style < 0 ? -1 : o->path_style != 0;
    c->part_size = o->part_size ? o->part_size : DEFAULT_PART_SIZE;
    c->max_attempts = o->max_attempts ? o->max_attempts : 5;
    c->retry_base_ms = o->retry_base_ms ? o->retry_base_ms : 100;
    c->retry_max_ms = o->retry_max_ms ? o->retry_max_ms : 5000;
    c->connect_timeout_ms = o->connect_timeout_ms ? o->connect_timeout_ms : 10000;
    c->request_timeout_ms = o->request_timeout_ms ? o->request_timeout_ms : 120000;
    const char *key = o->access_key_id && *o->access_key_id ? o->access_key_id : NULL;
    int rc = set_endpoint(c, o->endpoint, err);
    if (rc == FLOE_OK)
        rc = set_str(&c->region, o->region && *o->region ? o->region : "us-east-1", false, err);
    if (rc == FLOE_OK)
        rc = set_str(&c->access_key_id, key, false, err);
    if (rc == FLOE_OK && key)
        rc = set_str(&c->secret_access_key, o->secret_access_key, true, err);
    if (rc == FLOE_OK && key && o->session_token && *o->session_token)
        rc = set_str(&c->session_token, o->session_token, true, err);
    if (rc == FLOE_OK)
        rc = set_str(&c->ca_file, o->ca_file && *o->ca_file ? o->ca_file : NULL, false, err);
    if (rc == FLOE_OK)
        rc = check_conf(c, err);
    if (rc != FLOE_OK) {
        conf_free(c);
        return rc;
    }
    *out = c;
    return FLOE_OK;
}

static s3_conf *conf_clone(const s3_conf *src)
{
    s3_conf *c = floe__calloc(1, sizeof *c);
    if (!c)
        return NULL;
    *c = *src;
    c->refs = 1;
    c->endpoint = c->region = c->access_key_id = c->secret_access_key = NULL;
    c->session_token = c->ca_file = NULL;
    if (set_str(&c->endpoint, src->endpoint, false, NULL) != FLOE_OK ||
        set_str(&c->region, src->region, false, NULL) != FLOE_OK ||
        set_str(&c->access_key_id, src->access_key_id, false, NULL) != FLOE_OK ||
        set_str(&c->secret_access_key, src->secret_access_key, true, NULL) != FLOE_OK ||
        set_str(&c->session_token, src->session_token, true, NULL) != FLOE_OK ||
        set_str(&c->ca_file, src->ca_file, false, NULL) != FLOE_OK) {
        conf_free(c);
        return NULL;
    }
    return c;
}

/* A property value as text: strings as they are, booleans and integers
 * printed.  NULL (with an error) for other JSON types. */
static const char *prop_text(const json_t *v, const char *key, char *buf, size_t cap,
                             floe_error *err)
{
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_boolean(v))
        return json_is_true(v) ? "true" : "false";
    if (json_is_integer(v)) {
        snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
        return buf;
    }
    floe__err_set(err, FLOE_EINVAL, "storage property %s: want a string", key);
    return NULL;
}

static int parse_long(const char *key, const char *text, long lo, long hi, long *out,
                      floe_error *err)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    FLOE_RETURN_IF(errno || end == text || *end || v < lo || v > hi, err, FLOE_EINVAL,
                   "storage property %s='%s': want a whole number from %ld to %ld", key, text,
                   lo, hi);
    *out = (long)v;
    return FLOE_OK;
}

/* One property onto c (keys that are not ours are ignored). */
static int apply_prop(s3_conf *c, const char *key, const char *text, floe_error *err)
{
    long v;
    if (strcmp(key, "s3.endpoint") == 0)
        return set_endpoint(c, text, err);
    if (strcmp(key, "s3.region") == 0 || strcmp(key, "client.region") == 0)
        return set_str(&c->region, text, false, err);
    if (strcmp(key, "s3.path-style-access") == 0) {
        FLOE_RETURN_IF(strcmp(text, "true") != 0 && strcmp(text, "false") != 0, err,
                       FLOE_EINVAL, "storage property %s='%s': want true or false", key, text);
        c->path_style = strcmp(text, "true") == 0;
        return FLOE_OK;
    }
    if (strcmp(key, "s3.access-key-id") == 0) {
        return set_str(&c->access_key_id, *text ? text : NULL, false, err);
    }
    if (strcmp(key, "s3.secret-access-key") == 0) {
        return set_str(&c->secret_access_key, *text ? text : NULL, true, err);
    }
    if (strcmp(key, "s3.session-token") == 0) {
        return set_str(&c->session_token, *text ? text : NULL, true, err);
    }
    if (strcmp(key, "floe.s3.part-size") == 0) {
        FLOE_FORWARD(parse_long(key, text, (long)S3_MIN_PART_SIZE, (long)S3_MAX_PART_SIZE, &v,
                                err));
        c->part_size = (size_t)v;
        return FLOE_OK;
    }
    static const struct { const char *key; size_t off; long hi; } nums[] = {
        {"floe.s3.max-attempts", offsetof(s3_conf, max_attempts), 100},
        {"floe.s3.retry-base-ms", offsetof(s3_conf, retry_base_ms), 3600000},
        {"floe.s3.retry-max-ms", offsetof(s3_conf, retry_max_ms), 3600000},
        {"floe.s3.connect-timeout-ms", offsetof(s3_conf, connect_timeout_ms), 3600000},
        {"floe.s3.request-timeout-ms", offsetof(s3_conf, request_timeout_ms), 86400000},
        {"floe.s3.list-page-size", offsetof(s3_conf, list_page_size), 1000},
    };
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        if (strcmp(key, nums[i].key) != 0)
            continue;
        FLOE_FORWARD(parse_long(key, text, 1, nums[i].hi, &v, err));
        if (nums[i].off == offsetof(s3_conf, max_attempts))
            c->max_attempts = (int)v;
        else
            *(long *)((char *)c + nums[i].off) = v;
        return FLOE_OK;
    }
    return FLOE_OK;                       /* not a storage property of ours */
}

/* A copy of base with `config` applied and checked. */
static int conf_with(const s3_conf *base, const json_t *config, s3_conf **out, floe_error *err)
{
    FLOE_RETURN_IF(config && !json_is_object(config), err, FLOE_EINVAL,
                   "storage properties must be a JSON object");
    s3_conf *c = conf_clone(base);
    if (!c)
        return FLOE_OOM(err);
    bool creds = false;
    int rc = FLOE_OK;
    if (config) {
        /* credentials come as a set: clear them, then take what is given */
        const char *ck[] = {"s3.access-key-id", "s3.secret-access-key", "s3.session-token"};
        for (size_t i = 0; i < 3; i++)
            creds |= json_object_get(config, ck[i]) != NULL;
        if (creds) {
            set_str(&c->access_key_id, NULL, false, NULL);
            set_str(&c->secret_access_key, NULL, true, NULL);
            set_str(&c->session_token, NULL, true, NULL);
        }
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)config, key, v) {
            char num[32];
            const char *text = prop_text(v, key, num, sizeof num, err);
            rc = text ? apply_prop(c, key, text, err) : FLOE_EINVAL;
            if (rc != FLOE_OK)
                break;
        }
    }
    if (rc == FLOE_OK && !c->access_key_id) {     /* unsigned: no stray secrets */
        set_str(&c->secret_access_key, NULL, true, NULL);
        set_str(&c->session_token, NULL, true, NULL);
    }
    if (rc == FLOE_OK)
        rc = check_conf(c, err);
    if (rc != FLOE_OK) {
        conf_free(c);
        return rc;
    }
    *out = c;
    return FLOE_OK;
}

s3_conf *floe__s3_conf_get(floe__s3 *s)
{
    pthread_mutex_lock(&s->lock);
    s3_conf *c = s->conf;
    c->refs++;
    pthread_mutex_unlock(&s->lock);
    return c;
}

void floe__s3_conf_put(floe__s3 *s, s3_conf *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&s->lock);
    bool last = --c->refs == 0;
    pthread_mutex_unlock(&s->lock);
    if (last)
        conf_free(c);
}

/* ---- the FileIO ------------------------------------------------------------------ */

static const floe__fileio_ops S3_OPS;

static floe__s3 *as_s3(floe__fileio *io) { return io && io->ops == &S3_OPS ? (floe__s3 *)io : NULL; }

static int s3_open_output(floe__fileio *io, const char *uri, floe__output **out, floe_error *err)
{
    floe__s3 *s = (floe__s3 *)io;
    if (!floe__s3_is_uri(uri))
        return floe__fileio_open_output(s->local, uri, out, err);
    return floe__s3_output_open(s, uri, out, err);
}

/* Move the body into dst without copying when dst is empty. */
static int take_body(floe__buf *dst, floe__buf *body, floe_error *err)
{
    if (dst->len == 0) {
        floe__free(dst->data);
        dst->data = body->data;
        dst->len = body->len;
        dst->cap = body->cap;
        body->data = NULL;
        body->len = body->cap = 0;
        return FLOE_OK;
    }
    return floe__buf_append(dst, body->data, body->len, err);
}

static int s3_read_all(floe__fileio *io, const char *uri, floe__buf *dst, floe_error *err)
{
    floe__s3 *s = (floe__s3 *)io;
    if (!floe__s3_is_uri(uri))
        return floe__fileio_read_all(s->local, uri, dst, err);
    FLOE_RETURN_IF(dst->len >= dst->max, err, FLOE_ELIMIT, "reading %s: no room left", uri);
    s3_loc l;
    FLOE_FORWARD(floe__s3_parse_uri(uri, &l, err));
    s3_conf *c = floe__s3_conf_get(s);
    floe__http_response resp;
    floe__http_response_init(&resp);
    s3_req r = {.method = "GET", .loc = &l, .max_response = dst->max - dst->len, .what = "GET"};
    int rc = floe__s3_request(s, c, &r, &resp, err);
    if (rc == FLOE_OK)
        rc = take_body(dst, &resp.body, err);
    floe__http_response_free(&resp);
    floe__s3_conf_put(s, c);
    floe__s3_loc_free(&l);
    return rc;
}

/* HEAD: FLOE_OK (exists), FLOE_ENOTFOUND or an error. */
static int head(floe__s3 *s, const char *uri, const char *what, floe_error *err)
{
    s3_loc l;
    FLOE_FORWARD(floe__s3_parse_uri(uri, &l, err));
    s3_conf *c = floe__s3_conf_get(s);
    floe__http_response resp;
    floe__http_response_init(&resp);
    s3_req r = {.method = "HEAD", .loc = &l, .what = what};
    int rc = floe__s3_request(s, c, &r, &resp, err);
    floe__http_response_free(&resp);
    floe__s3_conf_put(s, c);
    floe__s3_loc_free(&l);
    return rc;
}

static int s3_exists(floe__fileio *io, const char *uri, bool *exists, floe_error *err)
{
    floe__s3 *s = (floe__s3 *)io;
    if (!floe__s3_is_uri(uri))
        return floe__fileio_exists(s->local, uri, exists, err);
    floe_error *e = floe_error_new();
    int rc = head(s, uri, "HEAD", e);
    *exists = rc == FLOE_OK;
    if (rc == FLOE_ENOTFOUND)
        rc = FLOE_OK;
    if (rc != FLOE_OK && e)
        floe__err_move(err, e);
    else if (rc != FLOE_OK)
        rc = FLOE_OOM(err);
    floe_error_free(e);
    return rc;
}

static int s3_open_input(floe__fileio *io, const char *uri, floe__input **in, floe_error *err)
{
    floe__s3 *s = (floe__s3 *)io;
    if (!floe__s3_is_uri(uri))
        return floe__fileio_open_input(s->local, uri, in, err);
    return floe__s3_input_open(s, uri, in, err);
}

static int s3_list(floe__fileio *io, const char *uri, floe__list_fn fn, void *ctx,
                   floe_error *err)
{
    floe__s3 *s = (floe__s3 *)io;
    if (!floe__s3_is_uri(uri))
        return floe__fileio_list(s->local, uri, fn, ctx, err);
    return floe__s3_list(s, uri, fn, ctx, err);
}

static int s3_remove(floe__fileio *io, const char *uri, floe_error *err)
{
    floe__s3 *s = (floe__s3 *)io;
    if (!floe__s3_is_uri(uri))
        return floe__fileio_remove(s->local, uri, err);
    FLOE_FORWARD(head(s, uri, "HEAD (before DELETE)", err));
    s3_loc l;
    FLOE_FORWARD(floe__s3_parse_uri(uri, &l, err));
    s3_conf *c = floe__s3_conf_get(s);
    floe__http_response resp;
    floe__http_response_init(&resp);
    s3_req r = {.method = "DELETE", .loc = &l, .what = "DELETE"};
    int rc = floe__s3_request(s, c, &r, &resp, err);
    floe__http_response_free(&resp);
    floe__s3_conf_put(s, c);
    floe__s3_loc_free(&l);
    return rc;
}

static int s3_sync(floe__fileio *io, floe_error *err)
{
    return floe__fileio_sync(((floe__s3 *)io)->local, err);   /* S3 writes are durable */
}

static void s3_free(floe__fileio *io)
{
    floe__s3 *s = (floe__s3 *)io;
    for (size_t i = 0; i < s->n_idle; i++)
        floe__http_free(s->idle[i]);
    conf_free(s->conf);
    floe__fileio_free(s->local);
    pthread_mutex_destroy(&s->lock);
    floe__free(s);
}

static const floe__fileio_ops S3_OPS = {
    .name = "s3",
    .open_output = s3_open_output,
    .read_all = s3_read_all,
    .exists = s3_exists,
    .open_input = s3_open_input,
    .list = s3_list,
    .remove = s3_remove,
    .sync = s3_sync,
    .free = s3_free,
};

/* Takes c (freed on failure). */
static int new_with_conf(s3_conf *c, floe__fileio **out, floe_error *err)
{
    floe__s3 *s = floe__calloc(1, sizeof *s);
    if (!s) {
        conf_free(c);
        return FLOE_OOM(err);
    }
    int rc = floe__fileio_local_new(&s->local, err);
    if (rc != FLOE_OK) {
        conf_free(c);
        floe__free(s);
        return rc;
    }
    s->base.ops = &S3_OPS;
    pthread_mutex_init(&s->lock, NULL);
    s->conf = c;
    c->generation = s->generation;
    *out = &s->base;
    return FLOE_OK;
}

int floe__fileio_s3_new(const floe__s3_options *o, floe__fileio **out, floe_error *err)
{
    floe__s3_options dflt;
    if (!o) {
        floe__s3_options_init(&dflt);
        o = &dflt;
    }
    s3_conf *c = NULL;
    FLOE_FORWARD(conf_from_options(o, &c, err));
    return new_with_conf(c, out, err);
}

int floe__fileio_s3_configure(floe__fileio *io, const json_t *config, floe_error *err)
{
    floe__s3 *s = as_s3(io);
    FLOE_RETURN_IF(!s, err, FLOE_EINVAL, "storage properties apply to S3 storage only");
    s3_conf *base = floe__s3_conf_get(s);
    s3_conf *c = NULL;
    int rc = conf_with(base, config, &c, err);
    floe__s3_conf_put(s, base);
    FLOE_FORWARD(rc);
    pthread_mutex_lock(&s->lock);
    s3_conf *old = s->conf;
    c->generation = ++s->generation;
    s->conf = c;
    pthread_mutex_unlock(&s->lock);
    floe__s3_conf_put(s, old);
    return FLOE_OK;
}

int floe__fileio_s3_derive(floe__fileio *io, const json_t *config, floe__fileio **out,
                           floe_error *err)
{
    floe__s3 *s = as_s3(io);
    FLOE_RETURN_IF(!s, err, FLOE_EINVAL, "storage properties apply to S3 storage only");
    s3_conf *base = floe__s3_conf_get(s);
    s3_conf *c = NULL;
    int rc = conf_with(base, config, &c, err);
    floe__s3_conf_put(s, base);
    FLOE_FORWARD(rc);
    return new_with_conf(c, out, err);
}
