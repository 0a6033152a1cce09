/*
 * http_internal.h - HTTP(S) for the REST catalog and S3 storage: a thin
 * layer over libcurl that keeps connections alive between requests, verifies
 * TLS (an extra CA bundle may be trusted), signs requests with AWS SigV4 or
 * a bearer token, and reports transport failures as FLOE_ENET.
 *
 * Secrets (keys, tokens) go into the request only; they never appear in an
 * error message.  A client is used from one thread at a time.
 */
#ifndef FLOE_HTTP_INTERNAL_H
#define FLOE_HTTP_INTERNAL_H

#include "util/util_internal.h"

typedef struct floe__http floe__http;

typedef struct floe__http_options {
    const char *ca_file;             /* extra CA bundle (PEM) to trust; NULL: system only */
    long connect_timeout_ms;         /* 0: 10 s */
    long timeout_ms;                 /* whole request; 0: 120 s */
} floe__http_options;

int floe__http_new(const floe__http_options *o, floe__http **out, floe_error *err);
void floe__http_free(floe__http *h);

typedef struct floe__http_header {
    const char *name, *value;
} floe__http_header;

/* AWS Signature Version 4 credentials for one request. */
typedef struct floe__sigv4 {
    const char *region;              /* e.g. "us-east-1" */
    const char *service;             /* "s3", "execute-api", "s3tables", ... */
    const char *access_key_id;
    const char *secret_access_key;
    const char *session_token;       /* NULL when none */
} floe__sigv4;

typedef struct floe__http_request {
    const char *method;              /* "GET", "PUT", "POST", "DELETE", "HEAD" */
    const char *url;
    const floe__http_header *headers;
    size_t n_headers;
    const void *body;                /* NULL: no body */
    size_t body_len;
    const floe__sigv4 *sigv4;        /* sign with SigV4 when not NULL */
    const char *bearer_token;        /* "Authorization: Bearer ..." when not NULL */
    size_t max_response;             /* response body limit; 0: 64 MiB */
} floe__http_request;

typedef struct floe__http_response {
    long status;                     /* the HTTP status */
    floe__buf body;
    floe__buf headers;               /* the raw header lines of the final response */
    /* After a transport failure: whether the request may have reached the server
     * (false only when no byte of it was sent: DNS, connect or TLS
     * handshake failures).  A non-idempotent request that may have been
     * sent has an unknown outcome. */
    bool maybe_sent;
} floe__http_response;

void floe__http_response_init(floe__http_response *r);
void floe__http_response_free(floe__http_response *r);
/* A response header's value (case-insensitive name), copied into buf;
 * NULL when absent. */
const char *floe__http_response_header(const floe__http_response *r, const char *name,
                                       char *buf, size_t cap);

/* Perform a request.  FLOE_OK whenever a response arrived, whatever its
 * status (the caller classifies it); when none did, FLOE_ENET (connection
 * refused or reset, DNS, timeout: worth a retry), FLOE_ETLS (certificate
 * verification failed) or FLOE_EINVAL (a URL curl cannot use), with the
 * reason and resp->maybe_sent; FLOE_ELIMIT when the body exceeds max_response.  `resp`
 * is reset first.  Redirects are not followed.  The URL is sent as given
 * (no dot-segment removal), so a signed path is the path sent.
 * A body is sent with libcurl's default Content-Type
 * (application/x-www-form-urlencoded) unless a header sets another.
 * SigV4 with libcurl 7.88 signs the headers given plus host and x-amz-date;
 * it hashes an in-memory body itself, but for service "s3" the caller must
 * send "x-amz-content-sha256" (e.g. UNSIGNED-PAYLOAD), which S3 requires
 * and the signer then uses as the payload hash. */
int floe__http_do(floe__http *h, const floe__http_request *req, floe__http_response *resp,
                  floe_error *err);

/* Percent-encode s for a URL path segment or query value (RFC 3986
 * unreserved characters kept), appended to out. */
int floe__url_encode(const char *s, floe__buf *out, floe_error *err);

#endif /* FLOE_HTTP_INTERNAL_H */
