/*
 * http.c - the libcurl layer under the REST catalog and S3 (see
 * http_internal.h).  One easy handle per client, reused so connections stay
 * alive; every request resets it and sets what it needs.
 */
#include <ctype.h>
#include <strings.h>
#include <curl/curl.h>
#include <stdio.h>

#include "io/http_internal.h"

#define DEFAULT_MAX_RESPONSE ((size_t)64 << 20)

struct floe__http {
    CURL *curl;
    char *ca_file;
    long connect_timeout_ms, timeout_ms;
    char errbuf[CURL_ERROR_SIZE];
};

int floe__http_new(const floe__http_options *o, floe__http **out, floe_error *err)
{
    floe__http *h = floe__calloc(1, sizeof *h);
    if (!h)
        return FLOE_OOM(err);
    h->curl = curl_easy_init();
    h->connect_timeout_ms = o && o->connect_timeout_ms ? o->connect_timeout_ms : 10000;
    h->timeout_ms = o && o->timeout_ms ? o->timeout_ms : 120000;
    if (o && o->ca_file && !(h->ca_file = floe__strdup(o->ca_file))) {
        floe__http_free(h);
        return FLOE_OOM(err);
    }
    if (!h->curl) {
        floe__http_free(h);
        return floe__err_set(err, FLOE_ENOMEM, "cannot create an HTTP client");
    }
    *out = h;
    return FLOE_OK;
}

void floe__http_free(floe__http *h)
{
    if (!h)
        return;
    if (h->curl)
        curl_easy_cleanup(h->curl);
    floe__free(h->ca_file);
    floe__free(h);
}

void floe__http_response_init(floe__http_response *r)
{
    r->status = 0;
    floe__buf_init(&r->body, DEFAULT_MAX_RESPONSE);
    floe__buf_init(&r->headers, 1 << 20);
}

void floe__http_response_free(floe__http_response *r)
{
    floe__buf_free(&r->body);
    floe__buf_free(&r->headers);
}

typedef struct sink_ctx {
    floe__buf *buf;
    bool overflow;
} sink_ctx;

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    sink_ctx *s = ctx;
    if (floe__buf_append(s->buf, p, size * n, NULL) != FLOE_OK) {
        s->overflow = true;
        return 0;
    }
    return size * n;
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
    floe__buf *b = ctx;
    if (n * size >= 5 && memcmp(p, "HTTP/", 5) == 0)
        floe__buf_reset(b);                   /* a new (e.g. after 100-continue) response */
    floe__buf_append(b, p, size * n, NULL);
    return size * n;
}

const char *floe__http_response_header(const floe__http_response *r, const char *name,
                                       char *buf, size_t cap)
{
    size_t nlen = strlen(name);
    const char *p = (const char *)r->headers.data, *end = p + r->headers.len;
    while (p && p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = eol ? eol : end;
        if ((size_t)(line_end - p) > nlen && p[nlen] == ':' && strncasecmp(p, name, nlen) == 0) {
            const char *v = p + nlen + 1;
            while (v < line_end && (*v == ' ' || *v == '\t'))
                v++;
            const char *ve = line_end;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' '))
                ve--;
            size_t len = (size_t)(ve - v) < cap - 1 ? (size_t)(ve - v) : cap - 1;
            memcpy(buf, v, len);
            buf[len] = '\0';
            return buf;
        }
        p = eol ? eol + 1 : NULL;
    }
    return NULL;
}

static int add_header(struct curl_slist **list, const char *name, const char *value,
                      floe_error *err)
{
    char *line = floe__sprintf("%s: %s", name, value);
    if (!line)
        return FLOE_OOM(err);
    struct curl_slist *l = curl_slist_append(*list, line);
    floe__free(line);
    if (!l)
        return FLOE_OOM(err);
    *list = l;
    return FLOE_OK;
}

static int build_headers(const floe__http_request *req, struct curl_slist **list, floe_error *err)
{
    for (size_t i = 0; i < req->n_headers; i++)
        FLOE_FORWARD(add_header(list, req->headers[i].name, req->headers[i].value, err));
    if (req->bearer_token) {
        char *v = floe__sprintf("Bearer %s", req->bearer_token);
        if (!v)
            return FLOE_OOM(err);
        int rc = add_header(list, "Authorization", v, err);
        floe__free(v);
        FLOE_FORWARD(rc);
    }
    if (req->sigv4 && req->sigv4->session_token)
        FLOE_FORWARD(add_header(list, "x-amz-security-token", req->sigv4->session_token, err));
    /* No "Expect: 100-continue" round trip.  Not with SigV4: libcurl signs
     * the empty header it then leaves out, so the signature would not
     * verify (libcurl only expects a 100 for bodies over 1 MiB anyway). */
    if (req->body && !req->sigv4)
        FLOE_FORWARD(add_header(list, "Expect", "", err));
    return FLOE_OK;
}

/* The key id and secret go in separately (CURLOPT_USERPWD would split a
 * secret containing ':'); libcurl keeps its own copies until the next
 * curl_easy_reset. */
static int set_signing(CURL *c, const floe__sigv4 *s, char **provider, floe_error *err)
{
    *provider = floe__sprintf("aws:amz:%s:%s", s->region, s->service);
    if (!*provider)
        return FLOE_OOM(err);
    curl_easy_setopt(c, CURLOPT_AWS_SIGV4, *provider);
    curl_easy_setopt(c, CURLOPT_USERNAME, s->access_key_id ? s->access_key_id : "");
    curl_easy_setopt(c, CURLOPT_PASSWORD, s->secret_access_key ? s->secret_access_key : "");
    return FLOE_OK;
}

/* The code of a transport failure: FLOE_ENET (class RETRY) when it may go
 * away on its own (a refused or reset connection, a timeout, a name that
 * did not resolve), FLOE_ETLS when certificate verification failed and
 * FLOE_EINVAL for a URL or protocol curl cannot use (both FINAL: they need
 * a change of configuration). */
static int failure_code(CURLcode cc)
{
    switch (cc) {
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_CRL_BADFILE:
        return FLOE_ETLS;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return FLOE_EINVAL;
    case CURLE_OUT_OF_MEMORY:
        return FLOE_ENOMEM;
    default:
        return FLOE_ENET;
    }
}

/* Certificate failures get a hint at the fix. */
static const char *tls_hint(CURLcode cc)
{
    switch (cc) {
    case CURLE_PEER_FAILED_VERIFICATION:
        return " (TLS certificate verification failed: for a private CA, trust it with "
               "--ca-file / FLOE_CA_FILE)";
    case CURLE_SSL_CACERT_BADFILE:
        return " (the CA file cannot be read or is not a PEM bundle)";
    default:
        return "";
    }
}

/* After a failed transfer: could any of the request have reached the
 * server?  Only failures before a connection existed say no for sure. */
static bool maybe_sent(CURL *c, CURLcode cc)
{
    long request_bytes = 0;
    curl_easy_getinfo(c, CURLINFO_REQUEST_SIZE, &request_bytes);
    if (request_bytes > 0)
        return true;
    return !(cc == CURLE_COULDNT_RESOLVE_HOST || cc == CURLE_COULDNT_RESOLVE_PROXY ||
             cc == CURLE_COULDNT_CONNECT || cc == CURLE_SSL_CONNECT_ERROR ||
             cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE ||
             cc == CURLE_UNSUPPORTED_PROTOCOL || cc == CURLE_URL_MALFORMAT);
}

int floe__http_do(floe__http *h, const floe__http_request *req, floe__http_response *resp,
                  floe_error *err)
{
    CURL *c = h->curl;
    curl_easy_reset(c);
    floe__buf_reset(&resp->body);
    floe__buf_reset(&resp->headers);
    resp->body.max = req->max_response ? req->max_response : DEFAULT_MAX_RESPONSE;
    resp->status = 0;
    resp->maybe_sent = false;
    struct curl_slist *headers = NULL;
    char *provider = NULL;
    int rc = build_headers(req, &headers, err);
    if (rc == FLOE_OK && req->sigv4)
        rc = set_signing(c, req->sigv4, &provider, err);
    sink_ctx body = {&resp->body, false};
    if (rc == FLOE_OK) {
        h->errbuf[0] = '\0';
        curl_easy_setopt(c, CURLOPT_URL, req->url);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method);
        curl_easy_setopt(c, CURLOPT_NOBODY, strcmp(req->method, "HEAD") == 0 ? 1L : 0L);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &resp->headers);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->errbuf);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->connect_timeout_ms);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->timeout_ms);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);     /* object keys may hold "./" */
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
        if (h->ca_file)
            curl_easy_setopt(c, CURLOPT_CAINFO, h->ca_file);
        if (req->body) {
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body);
            curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
        }
        CURLcode cc = curl_easy_perform(c);
        if (body.overflow)
            rc = floe__err_set(err, FLOE_ELIMIT, "%s response body exceeds %zu bytes",
                               req->method, resp->body.max);
        else if (cc != CURLE_OK) {
            resp->maybe_sent = maybe_sent(c, cc);
            char u[512];
            floe__url_for_message(req->url, u, sizeof u);
            rc = floe__err_set(err, failure_code(cc), "%s %s: %s%s", req->method, u,
                               h->errbuf[0] ? h->errbuf : curl_easy_strerror(cc), tls_hint(cc));
        } else {
            curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
        }
    }
    curl_slist_free_all(headers);
    curl_easy_setopt(c, CURLOPT_PASSWORD, NULL);  /* the handle keeps no secret */
    floe__free(provider);
    return rc;
}

int floe__url_encode(const char *s, floe__buf *out, floe_error *err)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~') {
            FLOE_FORWARD(floe__buf_putc(out, *p, err));
        } else {
            uint8_t enc[3] = {'%', (uint8_t)hex[*p >> 4], (uint8_t)hex[*p & 15]};
            FLOE_FORWARD(floe__buf_append(out, enc, 3, err));
        }
    }
    return FLOE_OK;
}
