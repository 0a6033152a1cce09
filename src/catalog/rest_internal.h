/*
 * rest_internal.h - what the files of the REST catalog client share
 * (rest.c: the catalog operations and the request loop; rest_auth.c:
 * bearer tokens, OAuth2 client credentials, SigV4 credentials;
 * rest_errors.c: HTTP statuses and the ErrorModel as floe codes;
 * rest_parse.c: the response documents).
 *
 * Nothing here is used outside src/catalog/rest*.c; the catalog itself is
 * opened with floe__catalog_rest_open (catalog_internal.h).
 *
 * Secrets (the static token, the client secret, the access tokens the
 * token endpoint issues, AWS keys) live only in floe__rest_auth.  They go
 * into request headers or the token request body and nowhere else: no
 * message, log line or error frame ever contains one.  Freeing the auth
 * state overwrites them first.
 */
#ifndef FLOE_REST_INTERNAL_H
#define FLOE_REST_INTERNAL_H

#include "catalog/catalog_internal.h"
#include "io/http_internal.h"

/* ---- authentication (rest_auth.c) ----------------------------------------------- */

typedef enum floe__rest_auth_kind {
    FLOE_REST_AUTH_NONE = 0,
    FLOE_REST_AUTH_BEARER,          /* a static token given by the user */
    FLOE_REST_AUTH_OAUTH2,          /* client credentials against a token endpoint */
} floe__rest_auth_kind;

typedef struct floe__rest_auth {
    floe__rest_auth_kind kind;
    char *token;                    /* current bearer token (static or issued); NULL: none yet */
    /* OAuth2 client credentials */
    char *client_id;                /* NULL: the credential had no "id:" part */
    char *client_secret;
    char *token_uri;                /* the token endpoint */
    char *scope;
    uint64_t issued_ns;             /* monotonic time the token was issued */
    uint64_t lifetime_ns;           /* expires_in; 0: no expiry announced */
    uint64_t refreshes;             /* tokens fetched so far (for tests and metrics) */
    /* SigV4 (independent of the above: when on, it replaces the bearer token) */
    bool sigv4_on;
    floe__sigv4 sigv4;              /* strings owned below */
    char *sigv4_region, *sigv4_service, *access_key_id, *secret_access_key, *session_token;
} floe__rest_auth;

/* Set up from the resolved options: token, else credential (OAuth2, token
 * endpoint `oauth2_uri` or <base_uri>/v1/oauth/tokens, scope default
 * "catalog"), plus SigV4 when sigv4_region is given (keys from the s3_*
 * options / AWS_* environment; FLOE_EAUTH when none).  Fetches nothing. */
int floe__rest_auth_init(floe__rest_auth *a, const floe_connect_options *o, const char *base_uri,
                         floe_error *err);
/* Overwrite the secrets and free everything.  Accepts a zeroed struct. */
void floe__rest_auth_clear(floe__rest_auth *a);
/* Make the bearer token ready for a request: for OAuth2, fetch one when
 * there is none, when `force` (the server refused the current one), or when
 * it expires soon (less than a fifth of its lifetime, at most 5 minutes,
 * left).  FLOE_EAUTH when the token endpoint refuses (its OAuth error and
 * description in the message), FLOE_ENET when it cannot be reached. */
int floe__rest_auth_prepare(floe__rest_auth *a, floe__http *h, bool force, floe_error *err);
/* What to put on the request: the bearer token (NULL: none) and the SigV4
 * credentials (NULL: none). */
const char *floe__rest_auth_bearer(const floe__rest_auth *a);
const floe__sigv4 *floe__rest_auth_sigv4(const floe__rest_auth *a);
/* Whether asking the token endpoint again may cure a 401/403. */
static inline bool floe__rest_auth_can_refresh(const floe__rest_auth *a)
{
    return a->kind == FLOE_REST_AUTH_OAUTH2;
}

/* ---- errors (rest_errors.c) ----------------------------------------------------- */

/* What kind of request failed, for the mapping of SPEC.md section 7.4. */
typedef enum floe__rest_op {
    FLOE_REST_READ,                 /* GET/HEAD: safe to repeat */
    FLOE_REST_CREATE,               /* POST creating a namespace or table: 409 = EEXISTS */
    FLOE_REST_COMMIT,               /* POST committing to a table: 409 = ECONFLICT, 5xx and
                                       lost connections = EUNKNOWN_OUTCOME */
    FLOE_REST_DROP,                 /* DELETE */
} floe__rest_op;

/* The floe code for an HTTP status that is not a success:
 *   400 and other 4xx      FLOE_ECATALOG (a refusal: fatal)
 *   401, 403, 419          FLOE_EAUTH
 *   404                    FLOE_ENOTFOUND
 *   406, 501               FLOE_EUNSUPPORTED
 *   409                    FLOE_ECONFLICT on a commit, FLOE_EEXISTS on a create,
 *                          FLOE_ECATALOG otherwise
 *   408, 429               FLOE_ENET (refused before any work: retry)
 *   5xx                    FLOE_EUNKNOWN_OUTCOME on a commit, FLOE_ENET otherwise */
int floe__rest_status_code(long status, floe__rest_op op);
/* Record the failure of `method path` with status `status`: the code of
 * floe__rest_status_code and a message naming the request, the status and,
 * when the body is an ErrorModel ({"error": {"message", "type", "code"}}),
 * the server's type and message (cut at a few hundred bytes, control
 * characters dropped); otherwise a short printable excerpt of the body.
 * Returns the code.  The retryable flag is set for ENET and unknown
 * outcomes and conflicts. */
int floe__rest_error(floe_error *err, const char *method, const char *path, long status,
                     const floe__buf *body, floe__rest_op op);
/* A short, printable excerpt of an HTTP body for messages (control bytes
 * become '?', cut at `cap`-1 bytes with "..."), into out. */
void floe__rest_excerpt(const void *body, size_t len, char *out, size_t cap);

/* ---- responses (rest_parse.c) -------------------------------------------------- *
 * Each takes a response body as the server sent it.  A body that is not
 * the document expected is FLOE_ECATALOG naming the field and why. */

/* A LoadTableResult or CommitTableResponse: "metadata" (required, parsed
 * with floe__metadata_from_json), "metadata-location" (may be absent: ""),
 * "config" (strings) merged under the "storage-credentials" entry whose
 * prefix is the longest one the table location starts with.  *out is the
 * caller's. */
int floe__rest_parse_table(const void *body, size_t len, floe__loaded_table **out,
                           floe_error *err);
/* A ConfigResponse: the properties the client works with, "defaults" first,
 * then `client` (the client's own settings, may be NULL), then
 * "overrides" on top.  Non-string values are skipped.  *out is a new
 * object. */
int floe__rest_parse_config(const void *body, size_t len, const json_t *client, json_t **out,
                            floe_error *err);
/* One page of ListNamespacesResponse ("namespaces": arrays of levels,
 * appended dot-joined) or ListTablesResponse ("identifiers": objects with
 * "name", appended), into the array `names`.  *next is the
 * next-page-token (caller frees) or NULL on the last page. */
int floe__rest_parse_page(const void *body, size_t len, bool tables, json_t *names, char **next,
                          floe_error *err);

#endif /* FLOE_REST_INTERNAL_H */
