/*
 * s3_request.c - one S3 request: object URIs and URLs, SigV4 signing
 * (libcurl's signer), retries with exponential backoff and jitter, and
 * turning S3's error replies into floe errors that say what to fix.
 *
 * Signing: libcurl 7.88 signs the headers we pass plus host and x-amz-date,
 * and takes the payload hash from our x-amz-content-sha256 header; we send
 * UNSIGNED-PAYLOAD (accepted by S3 and S3-compatible stores).  The path
 * and query go into the canonical request as sent, so the URL carries the
 * key encoded the SigV4 way and the query in canonical order.
 *
 * Secrets: the secret key and session token reach libcurl only; messages
 * name the endpoint, region, bucket, key and access key id (not secret).
 */
#include <stdio.h>
#include <time.h>

#include "io/s3_internal.h"

#define DEFAULT_MAX_RESPONSE ((size_t)1 << 20)

/* ---- locations and URLs -------------------------------------------------- */

static size_t scheme_len(const char *uri)
{
    static const char *schemes[] = {"s3://", "s3a://", "s3n://"};
    for (size_t i = 0; i < sizeof schemes / sizeof *schemes; i++)
        if (floe__str_starts(uri, schemes[i]))
            return strlen(schemes[i]);
    return 0;
}

bool floe__s3_is_uri(const char *uri) { return scheme_len(uri) > 0; }

int floe__s3_parse_uri(const char *uri, s3_loc *out, floe_error *err)
{
    size_t sl = scheme_len(uri);
    FLOE_RETURN_IF(!sl, err, FLOE_EINVAL, "'%s' is not an s3:// URI", uri);
    const char *b = uri + sl, *slash = strchr(b, '/');
    FLOE_RETURN_IF(!slash || slash == b, err, FLOE_EINVAL,
                   "'%s': an S3 object URI is s3://BUCKET/KEY", uri);
    FLOE_RETURN_IF(!slash[1], err, FLOE_EINVAL, "'%s': the object key is empty", uri);
    out->bucket = floe__strndup(b, (size_t)(slash - b));
    out->key = floe__strdup(slash + 1);
    if (!out->bucket || !out->key) {
        floe__s3_loc_free(out);
        return FLOE_OOM(err);
    }
    return FLOE_OK;
}

int floe__s3_parse_prefix(const char *uri, s3_loc *out, floe_error *err)
{
    size_t sl = scheme_len(uri);
    FLOE_RETURN_IF(!sl, err, FLOE_EINVAL, "'%s' is not an s3:// URI", uri);
    const char *b = uri + sl, *slash = strchr(b, '/');
    size_t bl = slash ? (size_t)(slash - b) : strlen(b);
    FLOE_RETURN_IF(bl == 0, err, FLOE_EINVAL, "'%s': an S3 prefix is s3://BUCKET[/PREFIX]", uri);
    const char *p = slash ? slash + 1 : "";
    size_t pl = strlen(p);
    out->bucket = floe__strndup(b, bl);
    out->key = pl && p[pl - 1] != '/' ? floe__sprintf("%s/", p) : floe__strdup(p);
    if (!out->bucket || !out->key) {
        floe__s3_loc_free(out);
        return FLOE_OOM(err);
    }
    return FLOE_OK;
}

void floe__s3_loc_free(s3_loc *l)
{
    floe__free(l->bucket);
    floe__free(l->key);
    l->bucket = l->key = NULL;
}

/* Percent-encode s the SigV4 way: RFC 3986 unreserved characters stay, and
 * '/' too when keep_slash. */
static int encode(const char *s, bool keep_slash, floe__buf *out)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        bool plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                     (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.' ||
                     *p == '~' || (keep_slash && *p == '/');
        if (plain) {
            FLOE_FORWARD(floe__buf_putc(out, *p, NULL));
        } else {
            uint8_t e[3] = {'%', (uint8_t)hex[*p >> 4], (uint8_t)hex[*p & 15]};
            FLOE_FORWARD(floe__buf_append(out, e, 3, NULL));
        }
    }
    return FLOE_OK;
}

char *floe__s3_url(const s3_conf *c, const s3_loc *l, const char *query)
{
    floe__buf u;
    floe__buf_init(&u, 0);
    bool path_style = c->path_style >= 0 ? c->path_style : c->endpoint != NULL;
    int rc;
    if (!c->endpoint && path_style)
        rc = floe__buf_printf(&u, NULL, "https://s3.%s.amazonaws.com/%s/", c->region, l->bucket);
    else if (!c->endpoint)
        rc = floe__buf_printf(&u, NULL, "https://%s.s3.%s.amazonaws.com/", l->bucket, c->region);
    else if (path_style)
        rc = floe__buf_printf(&u, NULL, "%s/%s/", c->endpoint, l->bucket);
    else {                        /* the bucket goes in front of the endpoint's host */
        const char *host = strstr(c->endpoint, "://");
        host = host ? host + 3 : c->endpoint;
        rc = floe__buf_printf(&u, NULL, "%.*s%s.%s/", (int)(host - c->endpoint), c->endpoint,
                              l->bucket, host);
    }
    if (rc == FLOE_OK)
        rc = encode(l->key, true, &u);
    if (rc == FLOE_OK && query)
        rc = floe__buf_printf(&u, NULL, "?%s", query);
    char *s = rc == FLOE_OK ? floe__buf_strdup(&u) : NULL;
    floe__buf_free(&u);
    return s;
}

/* ---- classification ------------------------------------------------------- */

static bool code_is(const char *code, const char *const *list)
{
    for (; code && *list; list++)
        if (strcmp(code, *list) == 0)
            return true;
    return false;
}

s3_verdict floe__s3_classify(long status, const char *code)
{
    static const char *const transient[] = {
        "RequestTimeout", "SlowDown", "Throttling", "ThrottlingException", "RequestThrottled",
        "TooManyRequests", "InternalError", "ServiceUnavailable", "BadDigest", "IncompleteBody",
        "XAmzContentSHA256Mismatch", "OperationAborted", NULL};
    static const char *const token[] = {"ExpiredToken", "InvalidToken", "TokenRefreshRequired",
                                        NULL};
    static const char *const redirect[] = {"PermanentRedirect", "TemporaryRedirect",
                                           "IllegalLocationConstraintException", NULL};
    if (code_is(code, transient) || status == 429 || (status >= 500 && status != 501))
        return (s3_verdict){FLOE_EIO, ""};
    /* versitygw answers an unknown key id with 404 XAdminUserNotFound */
    static const char *const unknown_key[] = {"InvalidAccessKeyId", "XAdminUserNotFound", NULL};
    if (code_is(code, (const char *const[]){"RequestTimeTooSkewed", NULL}))
        return (s3_verdict){FLOE_EAUTH, " (this machine's clock is off)"};
    if (code_is(code, unknown_key))
        return (s3_verdict){FLOE_EAUTH,
                            " (the server does not know the access key id: check "
                            "AWS_ACCESS_KEY_ID)"};
    if (code_is(code, (const char *const[]){"SignatureDoesNotMatch", NULL}))
        return (s3_verdict){FLOE_EAUTH,
                            " (the secret access key does not match the access key id: "
                            "check AWS_SECRET_ACCESS_KEY)"};
    if (code_is(code, token))
        return (s3_verdict){FLOE_EAUTH, " (the session token is expired or invalid: "
                                               "check AWS_SESSION_TOKEN)"};
    if (code_is(code, (const char *const[]){"AuthorizationHeaderMalformed", NULL}))
        return (s3_verdict){FLOE_EAUTH, " (check the region: --s3-region, AWS_REGION)"};
    if (code_is(code, redirect) || status == 301 || status == 307)
        return (s3_verdict){FLOE_EINVAL,
                            " (another region or endpoint serves the bucket: --s3-region, "
                            "--s3-endpoint)"};
    if (status == 401 || status == 403)
        return (s3_verdict){FLOE_EAUTH,
                            " (access denied: check the credentials and the bucket's policy)"};
    if (status == 404)
        return (s3_verdict){FLOE_ENOTFOUND, ""};
    return (s3_verdict){FLOE_EINVAL, " (the storage server refused the request)"};
}

/* ---- HTTP clients ----------------------------------------------------------- */

static int acquire(floe__s3 *s, const s3_conf *c, floe__http **out, floe_error *err)
{
    floe__http *stale[S3_IDLE_CLIENTS];
    size_t n_stale = 0;
    *out = NULL;
    pthread_mutex_lock(&s->lock);
    while (s->n_idle > 0 && !*out) {
        s->n_idle--;
        if (s->idle_generation[s->n_idle] == c->generation)
            *out = s->idle[s->n_idle];
        else
            stale[n_stale++] = s->idle[s->n_idle];
    }
    pthread_mutex_unlock(&s->lock);
    for (size_t i = 0; i < n_stale; i++)
        floe__http_free(stale[i]);
    if (*out)
        return FLOE_OK;
    floe__http_options o = {.ca_file = c->ca_file,
                            .connect_timeout_ms = c->connect_timeout_ms,
                            .timeout_ms = c->request_timeout_ms};
    return floe__http_new(&o, out, err);
}

static void release(floe__s3 *s, const s3_conf *c, floe__http *h)
{
    pthread_mutex_lock(&s->lock);
    bool keep = s->n_idle < S3_IDLE_CLIENTS && c->generation == s->conf->generation;
    if (keep) {
        s->idle_generation[s->n_idle] = c->generation;
        s->idle[s->n_idle++] = h;
    }
    pthread_mutex_unlock(&s->lock);
    if (!keep)
        floe__http_free(h);
}

/* Words for a status when the reply has no error body (HEAD). */
static const char *status_text(long status)
{
    switch (status) {
    case 400: return " Bad Request";
    case 401: return " Unauthorized";
    case 403: return " Forbidden";
    case 404: return " Not Found";
    case 409: return " Conflict";
    case 412: return " Precondition Failed";
    case 429: return " Too Many Requests";
    case 500: return " Internal Server Error";
    case 502: return " Bad Gateway";
    case 503: return " Service Unavailable";
    case 504: return " Gateway Timeout";
    default: return "";
    }
}

/* Record a non-2xx reply as an error in e; returns its verdict. */
static s3_verdict reply_error(const floe__http_response *resp, const s3_req *r, floe_error *e)
{
    floe__buf code, msg;
    floe__buf_init(&code, 256);
    floe__buf_init(&msg, 4096);
    const char *xml = (const char *)resp->body.data;
    bool have_code = floe__s3_xml_text(xml, resp->body.len, "Code", &code);
    bool have_msg = floe__s3_xml_text(xml, resp->body.len, "Message", &msg);
    long status = resp->status;
    if (status / 100 == 2 && r->error_in_200)
        status = 500;                /* S3's advice: an error inside a 200 is retried */
    s3_verdict v = floe__s3_classify(status, have_code ? (const char *)code.data : NULL);
    floe__err_set(e, v.code, "HTTP %ld%s%s%s%s%s", resp->status, have_code ? " " : "",
                  have_code ? (const char *)code.data : status_text(resp->status),
                  have_msg ? ": " : "",
                  have_msg ? (const char *)msg.data : "", v.hint);
    floe__buf_free(&code);
    floe__buf_free(&msg);
    return v;
}

/* One attempt; the code's class says whether another may succeed. */
static int attempt_once(floe__s3 *s, const s3_conf *c, const s3_req *r,
                        const floe__http_request *hr, floe__http_response *resp, floe_error *e)
{
    floe__http *h;
    FLOE_FORWARD(acquire(s, c, &h, e));
    int rc = floe__http_do(h, hr, resp, e);
    release(s, c, h);
    if (rc != FLOE_OK)
        return rc;
    bool ok = resp->status / 100 == 2;
    if (ok && r->error_in_200)
        ok = !floe__s3_xml_root_is((const char *)resp->body.data, resp->body.len, "Error");
    if (ok)
        return FLOE_OK;
    return reply_error(resp, r, e).code;
}

/* "S3 <what> s3://bucket/key (endpoint ..., region ...)" */
static int wrap(const s3_conf *c, const s3_req *r, int code, int attempts, bool gave_up,
                floe_error *err)
{
    char tries[48] = "";
    if (gave_up)
        snprintf(tries, sizeof tries, ", gave up after %d attempts", attempts);
    const char *key = r->shown_key ? r->shown_key : r->loc->key;
    if (c->endpoint)
        floe__err_wrap(err, code, "S3 %s s3://%s/%s (endpoint %s, region %s%s)", r->what,
                       r->loc->bucket, key, c->endpoint, c->region, tries);
    else
        floe__err_wrap(err, code, "S3 %s s3://%s/%s (AWS, region %s%s)", r->what,
                       r->loc->bucket, key, c->region, tries);
    return code;
}

int floe__s3_wrap(const s3_conf *c, const s3_req *r, int code, floe_error *err)
{
    return wrap(c, r, code, 0, false, err);
}

int floe__s3_request(floe__s3 *s, const s3_conf *c, const s3_req *r, floe__http_response *resp,
                     floe_error *err)
{
    enum { MAX_HEADERS = 16 };
    floe__http_header headers[MAX_HEADERS];
    FLOE_RETURN_IF(r->n_headers + 1 > MAX_HEADERS, err, FLOE_EINTERNAL, "too many headers");
    if (r->n_headers)
        memcpy(headers, r->headers, r->n_headers * sizeof *headers);
    headers[r->n_headers] = (floe__http_header){"x-amz-content-sha256", "UNSIGNED-PAYLOAD"};
    floe__sigv4 sig = {.region = c->region, .service = "s3", .access_key_id = c->access_key_id,
                       .secret_access_key = c->secret_access_key,
                       .session_token = c->session_token};
    char *url = floe__s3_url(c, r->loc, r->query);
    if (!url)
        return FLOE_OOM(err);
    floe__http_request hr = {.method = r->method, .url = url, .headers = headers,
                             .n_headers = r->n_headers + 1, .body = r->body,
                             .body_len = r->body_len,
                             .sigv4 = c->access_key_id ? &sig : NULL,
                             .max_response = r->max_response ? r->max_response
                                                             : DEFAULT_MAX_RESPONSE};
    floe_error *e = floe_error_new();
    int rc = e ? FLOE_OK : FLOE_OOM(err);
    int attempts = 0;
    floe__retry retry;
    floe__retry_init(&retry, (unsigned)c->retry_base_ms, (unsigned)c->retry_max_ms);
    retry.max_attempts = c->max_attempts;
    while (e) {
        floe_error_clear(e);
        attempts++;
        rc = attempt_once(s, c, r, &hr, resp, e);
        if (!floe__retry_again(&retry, rc))
            break;
    }
    if (e && rc != FLOE_OK) {
        floe__err_move(err, e);
        wrap(c, r, rc, attempts, floe_code_class(rc) == FLOE_FAIL_RETRY, err);
    }
    floe_error_free(e);
    floe__free(url);
    return rc;
}
