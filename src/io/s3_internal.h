/*
 * s3_internal.h - what the parts of the S3 FileIO share: its settings, the
 * FileIO object, object locations, one request with retries, and the small
 * XML reader for S3 replies.
 *
 *   s3.c          the FileIO: settings, scheme dispatch, GET / HEAD / DELETE
 *   s3_request.c  URLs, signing, retries with backoff, error classification
 *   s3_xml.c      element text, repeated elements and root name of S3 XML
 *   s3_output.c   uploads: one PUT, or a multipart upload for large objects
 *   s3_input.c    random-access reads: HEAD for the size, ranged GETs
 *   s3_list.c     listings (ListObjectsV2, page by page)
 *
 * Threads: the FileIO may be used from many threads at once.  Its settings
 * are an immutable, reference-counted snapshot (s3_conf) swapped under the
 * lock by floe__fileio_s3_configure; each request pins the snapshot it
 * uses.  HTTP clients (one connection each) are borrowed from an idle pool
 * for one request at a time.
 */
#ifndef FLOE_S3_INTERNAL_H
#define FLOE_S3_INTERNAL_H

#include <pthread.h>

#include "io/http_internal.h"
#include "io/io_internal.h"

#define S3_MIN_PART_SIZE ((size_t)5 << 20)       /* S3's floor for all but the last part */
#define S3_MAX_PART_SIZE ((size_t)5 << 30)
#define S3_MAX_PARTS 10000
#define S3_IDLE_CLIENTS 8

/* One immutable set of settings (strings owned). */
typedef struct s3_conf {
    int refs;                     /* under floe__s3.lock */
    unsigned generation;          /* HTTP clients made under another generation are dropped */
    char *endpoint;               /* "http(s)://host[:port][/prefix]", no trailing '/';
                                     NULL: AWS */
    char *region;
    char *access_key_id;          /* NULL: requests go unsigned */
    char *secret_access_key;
    char *session_token;          /* NULL when none */
    int path_style;               /* 1, 0, -1: path-style when there is an endpoint */
    char *ca_file;                /* NULL: the system's CAs only */
    size_t part_size;
    int max_attempts;
    long retry_base_ms, retry_max_ms;
    long connect_timeout_ms, request_timeout_ms;
    long list_page_size;          /* ListObjectsV2 max-keys; 0: not sent (S3: 1000) */
} s3_conf;

typedef struct floe__s3 {
    floe__fileio base;
    floe__fileio *local;          /* file:// URIs and plain paths go here */
    pthread_mutex_t lock;         /* guards conf, idle, n_idle */
    s3_conf *conf;
    floe__http *idle[S3_IDLE_CLIENTS];
    unsigned idle_generation[S3_IDLE_CLIENTS];
    size_t n_idle;
    unsigned generation;          /* of the latest conf */
} floe__s3;

/* Pin the current settings / release them (accepts NULL). */
s3_conf *floe__s3_conf_get(floe__s3 *s);
void floe__s3_conf_put(floe__s3 *s, s3_conf *c);

/* An object: "s3://bucket/key" (or s3a://, s3n://).  Both strings owned. */
typedef struct s3_loc {
    char *bucket;
    char *key;
} s3_loc;

/* Whether `uri` names S3 storage (by its scheme). */
bool floe__s3_is_uri(const char *uri);
/* Split an S3 URI; FLOE_EINVAL when the bucket or the key is missing. */
int floe__s3_parse_uri(const char *uri, s3_loc *out, floe_error *err);
/* Split an S3 URI naming a "directory" to list: "s3://b", "s3://b/" (the
 * whole bucket, key ""), "s3://b/p" and "s3://b/p/" (key "p/": a '/' is
 * added when missing, so "p" never matches "p2/...").  FLOE_EINVAL without
 * a bucket. */
int floe__s3_parse_prefix(const char *uri, s3_loc *out, floe_error *err);
void floe__s3_loc_free(s3_loc *l);

/* The URL of an object under settings `c` (path-style or virtual-hosted),
 * with the key percent-encoded as SigV4 wants it and `query` (already in
 * canonical order, see below) appended.  Caller frees. */
char *floe__s3_url(const s3_conf *c, const s3_loc *l, const char *query);

/* One S3 request. */
typedef struct s3_req {
    const char *method;
    const s3_loc *loc;
    const char *query;            /* canonical: keys sorted, "k=v" pairs with
                                     encoded values joined by '&'; NULL: none */
    const void *body;             /* NULL: no body */
    size_t body_len;
    const floe__http_header *headers;
    size_t n_headers;
    size_t max_response;          /* 0: 1 MiB */
    const char *what;             /* the operation, for messages ("UploadPart 3") */
    const char *shown_key;        /* the key messages name; NULL: loc->key */
    bool error_in_200;            /* a 200 whose body is <Error> is that error
                                     (CompleteMultipartUpload) */
} s3_req;

/* Send `r`, retrying transient failures (transport failures, 5xx, 429,
 * throttling, RequestTimeout, BadDigest) with exponential backoff and
 * jitter up to the configured number of attempts.  FLOE_OK for a 2xx
 * reply (in *resp).  Otherwise, with a message naming the operation, the
 * object, the endpoint and S3's error code and message (never a secret):
 * FLOE_ENOTFOUND (404), FLOE_EAUTH (credentials refused, access denied,
 * expired token), FLOE_EINVAL (wrong region or endpoint), FLOE_ENET
 * (transport, after the retries), FLOE_EIO (anything else). */
int floe__s3_request(floe__s3 *s, const s3_conf *c, const s3_req *r, floe__http_response *resp,
                     floe_error *err);
/* Add the frame floe__s3_request puts around its failures ("S3 <what>
 * s3://bucket/key (endpoint ..., region ...)") to err, which holds the
 * cause: for a reply that succeeded but is not what the caller needs. */
int floe__s3_wrap(const s3_conf *c, const s3_req *r, int code, floe_error *err);

/* How a non-2xx reply is classified: the floe code and whether to retry. */
/* What an S3 error reply means: a floe code (its class says whether the
 * request is worth repeating) and a hint for the message. */
typedef struct s3_verdict {
    int code;
    const char *hint;             /* advice appended to the message, "" when none */
} s3_verdict;
s3_verdict floe__s3_classify(long status, const char *s3_code);

/* ---- XML (s3_xml.c) -------------------------------------------------------
 * Just enough XML for S3 replies: no DTDs, no namespaces beyond ignoring
 * attributes. */
/* The text of the first element named `tag` in [xml, xml+n), entity
 * references decoded, appended to out (NUL-terminated, len excludes it).
 * false when there is no such element (out unchanged). */
bool floe__s3_xml_text(const char *xml, size_t n, const char *tag, floe__buf *out);
/* The next element named `tag` at or after xml + *pos: its content (from
 * after the start tag to the end tag; empty for "<tag/>") in *inner and
 * *inner_len, and *pos moves past it.  1 when found, 0 when there is none
 * (*pos = n), -1 when a start tag has no end tag.  Elements of that name
 * must not nest (S3's <Contents> do not). */
int floe__s3_xml_next(const char *xml, size_t n, const char *tag, size_t *pos,
                      const char **inner, size_t *inner_len);
/* Whether the root element of the document is named `tag`. */
bool floe__s3_xml_root_is(const char *xml, size_t n, const char *tag);
/* Append s with &, <, >, " and ' escaped. */
int floe__s3_xml_escape(const char *s, floe__buf *out, floe_error *err);

/* ---- uploads (s3_output.c) ------------------------------------------------ */
int floe__s3_output_open(floe__s3 *s, const char *uri, floe__output **out, floe_error *err);

/* ---- reads (s3_input.c) ----------------------------------------------------
 * open_input of the S3 FileIO (io_internal.h) for an S3 URI: a HEAD for the
 * size, then one ranged GET per read_at.  Every read pins the settings in
 * force when it starts, so an input keeps working across
 * floe__fileio_s3_configure (fresh credentials apply to the next read). */
int floe__s3_input_open(floe__s3 *s, const char *uri, floe__input **out, floe_error *err);

/* ---- listings (s3_list.c) --------------------------------------------------
 * list of the S3 FileIO for an S3 URI (see floe__s3_parse_prefix). */
int floe__s3_list(floe__s3 *s, const char *uri, floe__list_fn fn, void *ctx, floe_error *err);

/* One object of a ListObjectsV2 page: key decoded, NUL-terminated. */
typedef int (*s3_object_fn)(void *ctx, const char *key, uint64_t size, int64_t mtime_ms,
                            floe_error *err);
/* Parse one ListObjectsV2 reply page.  The whole page is checked before fn
 * sees any of it: FLOE_EIO (nothing reported) when it is not a
 * ListBucketResult, a <Contents> lacks a Key, a Size or a LastModified
 * that parses, a key is not under `prefix`, or IsTruncated is missing or
 * true without a NextContinuationToken.  Then fn is called per object in
 * page order (its failure stops the walk and is returned); *truncated says
 * whether another page follows, with its token in next_token (replaced). */
int floe__s3_list_page(const char *xml, size_t n, const char *prefix, s3_object_fn fn,
                       void *ctx, bool *truncated, floe__buf *next_token, floe_error *err);
/* An ISO-8601 UTC time as S3 writes it ("2024-05-01T12:34:56.789Z"; the
 * fraction is optional, a "+hh:mm" / "-hh:mm" offset is applied, no zone
 * means UTC) -> ms since the epoch.  false when it is not one. */
bool floe__s3_parse_time(const char *text, int64_t *ms);

#endif /* FLOE_S3_INTERNAL_H */
