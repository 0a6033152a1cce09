/*
 * rest_auth.c - how the REST catalog client proves who it is: a static
 * bearer token, OAuth2 client credentials (RFC 6749 section 4.4) against the
 * catalog's token endpoint, and AWS SigV4 credentials for catalogs behind
 * AWS (Glue, S3 Tables, API Gateway).
 *
 * OAuth2: the first request fetches a token (grant_type=client_credentials,
 * client_id, client_secret, scope, form-encoded, POSTed to the token
 * endpoint).  The token is kept with its lifetime (expires_in) and fetched
 * anew before it runs out: once less than a fifth of its lifetime (at most
 * five minutes) is left, so a request never goes out with a token about to
 * expire.  A 401/403 from the catalog makes rest.c force one refresh and
 * repeat the request once.
 *
 * Secrets never leave this file except into request headers and the token
 * request body; messages name the token endpoint and the server's OAuth
 * error, never the secret or a token.  Everything secret is overwritten
 * before it is freed.
 */
#include <stdio.h>
#include <strings.h>

#include "catalog/rest_internal.h"

#define DEFAULT_SCOPE "catalog"
#define MAX_EARLY_NS (300ull * 1000000000ull)   /* refresh at most 5 min early */

static void scrub_free(char *s)
{
    if (!s)
        return;
    volatile char *v = s;                /* not optimized away */
    for (size_t i = 0; v[i]; i++)
        v[i] = 0;
    floe__free(s);
}

void floe__rest_auth_clear(floe__rest_auth *a)
{
    if (!a)
        return;
    scrub_free(a->token);
    scrub_free(a->client_id);
    scrub_free(a->client_secret);
    floe__free(a->token_uri);
    floe__free(a->scope);
    floe__free(a->sigv4_region);
    floe__free(a->sigv4_service);
    scrub_free(a->access_key_id);
    scrub_free(a->secret_access_key);
    scrub_free(a->session_token);
    memset(a, 0, sizeof *a);
}

static int dup_opt(const char *s, char **out, floe_error *err)
{
    *out = NULL;
    if (!s)
        return FLOE_OK;
    *out = floe__strdup(s);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

static int init_oauth2(floe__rest_auth *a, const floe_connect_options *o, const char *base_uri,
                       floe_error *err)
{
    a->kind = FLOE_REST_AUTH_OAUTH2;
    const char *colon = strchr(o->credential, ':');
    if (colon) {                         /* "id:secret"; a bare value is the secret alone */
        a->client_id = floe__strndup(o->credential, (size_t)(colon - o->credential));
        a->client_secret = floe__strdup(colon + 1);
        if (!a->client_id)
            return FLOE_OOM(err);
    } else {
        a->client_secret = floe__strdup(o->credential);
    }
    if (!a->client_secret)
        return FLOE_OOM(err);
    a->token_uri = o->oauth2_uri && *o->oauth2_uri ? floe__strdup(o->oauth2_uri)
                                                   : floe__sprintf("%s/v1/oauth/tokens", base_uri);
    a->scope = floe__strdup(o->scope && *o->scope ? o->scope : DEFAULT_SCOPE);
    return a->token_uri && a->scope ? FLOE_OK : FLOE_OOM(err);
}

static int init_sigv4(floe__rest_auth *a, const floe_connect_options *o, floe_error *err)
{
    if (!o->s3_access_key_id || !*o->s3_access_key_id || !o->s3_secret_access_key ||
        !*o->s3_secret_access_key)
        return floe__err_set(err, FLOE_EAUTH,
                             "signing catalog requests with SigV4 (region %s) needs AWS "
                             "credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
                             o->sigv4_region);
    a->sigv4_on = true;
    FLOE_FORWARD(dup_opt(o->sigv4_region, &a->sigv4_region, err));
    FLOE_FORWARD(dup_opt(o->sigv4_service && *o->sigv4_service ? o->sigv4_service
                                                                : "execute-api",
                         &a->sigv4_service, err));
    FLOE_FORWARD(dup_opt(o->s3_access_key_id, &a->access_key_id, err));
    FLOE_FORWARD(dup_opt(o->s3_secret_access_key, &a->secret_access_key, err));
    if (o->s3_session_token && *o->s3_session_token)
        FLOE_FORWARD(dup_opt(o->s3_session_token, &a->session_token, err));
    a->sigv4 = (floe__sigv4){
        .region = a->sigv4_region,
        .service = a->sigv4_service,
        .access_key_id = a->access_key_id,
        .secret_access_key = a->secret_access_key,
        .session_token = a->session_token,
    };
    return FLOE_OK;
}

int floe__rest_auth_init(floe__rest_auth *a, const floe_connect_options *o, const char *base_uri,
                         floe_error *err)
{
    memset(a, 0, sizeof *a);
    int rc = FLOE_OK;
    if (o->token && *o->token) {
        a->kind = FLOE_REST_AUTH_BEARER;
        rc = dup_opt(o->token, &a->token, err);
    } else if (o->credential && *o->credential) {
        rc = init_oauth2(a, o, base_uri, err);
    }
    if (rc == FLOE_OK && o->sigv4_region && *o->sigv4_region)
        rc = init_sigv4(a, o, err);
    if (rc != FLOE_OK)
        floe__rest_auth_clear(a);
    return rc;
}

const char *floe__rest_auth_bearer(const floe__rest_auth *a)
{
    return a->sigv4_on ? NULL : a->token;
}

const floe__sigv4 *floe__rest_auth_sigv4(const floe__rest_auth *a)
{
    return a->sigv4_on ? &a->sigv4 : NULL;
}

/* ---- OAuth2 client credentials ------------------------------------------------- */

static int form_field(floe__buf *b, const char *name, const char *value, floe_error *err)
{
    if (b->len)
        FLOE_FORWARD(floe__buf_putc(b, '&', err));
    FLOE_FORWARD(floe__buf_append(b, name, strlen(name), err));
    FLOE_FORWARD(floe__buf_putc(b, '=', err));
    return floe__url_encode(value, b, err);
}

static int token_form(const floe__rest_auth *a, floe__buf *b, floe_error *err)
{
    FLOE_FORWARD(form_field(b, "grant_type", "client_credentials", err));
    if (a->client_id)
        FLOE_FORWARD(form_field(b, "client_id", a->client_id, err));
    FLOE_FORWARD(form_field(b, "client_secret", a->client_secret, err));
    return form_field(b, "scope", a->scope, err);
}

static void scrub_buf(floe__buf *b)
{
    if (b->data) {
        volatile uint8_t *v = b->data;
        for (size_t i = 0; i < b->cap; i++)
            v[i] = 0;
    }
    floe__buf_free(b);
}

/* The token endpoint without its query string, for messages. */
static void endpoint_name(const char *uri, char *out, size_t cap)
{
    size_t n = strcspn(uri, "?#");
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), uri);
}

static int token_refused(const floe__rest_auth *a, const floe__http_response *r, floe_error *err)
{
    char where[300], ex[300] = "";
    endpoint_name(a->token_uri, where, sizeof where);
    json_t *doc = json_loadb((const char *)r->body.data, r->body.len, 0, NULL);
    const char *e = json_string_value(json_object_get(doc, "error"));
    const char *d = json_string_value(json_object_get(doc, "error_description"));
    if (e)
        snprintf(ex, sizeof ex, "%s%s%s", e, d ? ": " : "", d ? d : "");
    else if (r->body.len)
        floe__rest_excerpt(r->body.data, r->body.len, ex, sizeof ex);
    char clean[300];
    floe__rest_excerpt(ex, strlen(ex), clean, sizeof clean);
    json_decref(doc);
    int code = r->status >= 500 || r->status == 429 ? FLOE_ENET : FLOE_EAUTH;
    floe__err_set(err, code, "OAuth2 token request to %s refused: HTTP %ld%s%s", where,
                  r->status, *clean ? ": " : "", clean);
    return code;
}

/* Take access_token and expires_in from a token response. */
static int take_token(floe__rest_auth *a, const floe__http_response *r, floe_error *err)
{
    char where[300];
    endpoint_name(a->token_uri, where, sizeof where);
    json_t *doc = json_loadb((const char *)r->body.data, r->body.len, 0, NULL);
    const char *tok = json_string_value(json_object_get(doc, "access_token"));
    const char *type = json_string_value(json_object_get(doc, "token_type"));
    json_t *exp = json_object_get(doc, "expires_in");
    int rc = FLOE_OK;
    if (!tok || !*tok)
        rc = floe__err_set(err, FLOE_EAUTH, "OAuth2 token response from %s has no access_token",
                           where);
    else if (type && strcasecmp(type, "bearer") != 0 && strcasecmp(type, "N_A") != 0)
        rc = floe__err_set(err, FLOE_EAUTH, "OAuth2 token from %s has token_type \"%.40s\", "
                           "not bearer", where, type);
    if (rc == FLOE_OK) {
        char *copy = floe__strdup(tok);
        if (!copy) {
            rc = FLOE_OOM(err);
        } else {
            scrub_free(a->token);
            a->token = copy;
            a->issued_ns = floe__monotonic_ns();
            json_int_t secs = json_is_integer(exp) ? json_integer_value(exp)
                              : json_is_real(exp)  ? (json_int_t)json_real_value(exp)
                                                   : 0;
            a->lifetime_ns = secs > 0 ? (uint64_t)secs * 1000000000ull : 0;
            a->refreshes++;
        }
    }
    if (doc) {                           /* the token also lives in the parsed document */
        json_t *t = json_object_get(doc, "access_token");
        if (json_is_string(t)) {
            volatile char *v = (char *)json_string_value(t);
            for (size_t i = 0; v[i]; i++)
                v[i] = 0;
        }
    }
    json_decref(doc);
    return rc;
}

static int fetch_token(floe__rest_auth *a, floe__http *h, floe_error *err)
{
    floe__buf form;
    floe__buf_init(&form, 1 << 16);
    int rc = token_form(a, &form, err);
    floe__http_header hdr[] = {{"Content-Type", "application/x-www-form-urlencoded"},
                               {"Accept", "application/json"}};
    floe__http_request req = {
        .method = "POST",
        .url = a->token_uri,
        .headers = hdr,
        .n_headers = 2,
        .body = form.data ? (const void *)form.data : "",
        .body_len = form.len,
        .max_response = 1 << 20,
    };
    floe__http_response resp;
    floe__http_response_init(&resp);
    if (rc == FLOE_OK)
        rc = floe__http_do(h, &req, &resp, err);
    scrub_buf(&form);
    if (rc == FLOE_OK)
        rc = resp.status == 200 ? take_token(a, &resp, err) : token_refused(a, &resp, err);
    scrub_buf(&resp.body);
    floe__http_response_free(&resp);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "authenticating to the catalog (OAuth2 client "
                                       "credentials)");
    return FLOE_OK;
}

/* Less than a fifth of the lifetime (at most MAX_EARLY_NS) left. */
static bool expiring(const floe__rest_auth *a)
{
    if (a->lifetime_ns == 0)
        return false;
    uint64_t early = a->lifetime_ns / 5 < MAX_EARLY_NS ? a->lifetime_ns / 5 : MAX_EARLY_NS;
    return floe__monotonic_ns() - a->issued_ns >= a->lifetime_ns - early;
}

int floe__rest_auth_prepare(floe__rest_auth *a, floe__http *h, bool force, floe_error *err)
{
    if (a->kind != FLOE_REST_AUTH_OAUTH2 || a->sigv4_on)
        return FLOE_OK;
    if (a->token && !force && !expiring(a))
        return FLOE_OK;
    return fetch_token(a, h, err);
}
