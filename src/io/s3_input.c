/*
 * s3_input.c - random-access reads of one S3 object (floe__input) for the
 * S3 FileIO: open is a HEAD (the size is its Content-Length), and every
 * read_at one ranged GET ("Range: bytes=A-B") through floe__s3_request, so
 * reads get the retries, signing and error messages of every request.
 *
 * A read must come back as 206 Partial Content with exactly the bytes asked
 * for (and, when the reply says, the range asked for of an object of the
 * size seen at open); any other successful reply is FLOE_EIO naming the
 * object and the range.  Reads of 1 MiB or more land in the caller's buffer
 * directly (no second copy of a 256 MiB read); smaller ones go through a
 * buffer of their own, so an error reply of up to 1 MiB always fits.
 *
 * The input pins no settings: each read takes those in force when it
 * starts, so it keeps working when floe__fileio_s3_configure swaps
 * credentials.  Not here: caching, read-ahead, checking that the object
 * was not replaced between reads (Iceberg never rewrites a file).
 */
#include <stdio.h>

#include "io/s3_internal.h"

#define SMALL_READ ((size_t)1 << 20)

typedef struct s3_input {
    floe__input base;
    floe__s3 *s;
    s3_loc loc;
} s3_input;

/* "GET bytes A-B of" (the request's `what`). */
typedef struct range_text {
    char what[96];
    char header[64];
} range_text;

static void range_text_init(range_text *t, uint64_t off, size_t n)
{
    unsigned long long a = off, b = off + n - 1;
    snprintf(t->what, sizeof t->what, "GET bytes %llu-%llu of", a, b);
    snprintf(t->header, sizeof t->header, "bytes=%llu-%llu", a, b);
}

/* A Content-Length or a total: digits only, no overflow. */
static bool parse_length(const char *v, uint64_t *out)
{
    uint64_t x = 0;
    if (!*v)
        return false;
    for (; *v; v++) {
        if (*v < '0' || *v > '9' || x > (UINT64_MAX - 9) / 10)
            return false;
        x = x * 10 + (uint64_t)(*v - '0');
    }
    *out = x;
    return true;
}

/* Content-Range "bytes A-B/TOTAL" (TOTAL may be '*'), when the reply has
 * one, must be the range asked for of an object of the size seen at open. */
static int check_content_range(const s3_input *si, const floe__http_response *resp,
                               uint64_t off, size_t n, floe_error *err)
{
    char v[128];
    if (!floe__http_response_header(resp, "Content-Range", v, sizeof v))
        return FLOE_OK;
    unsigned long long a = 0, b = 0;
    uint64_t total = si->base.size;
    int used = 0;
    bool ok = sscanf(v, "bytes %llu-%llu/%n", &a, &b, &used) == 2 && used > 0 &&
              (strcmp(v + used, "*") == 0 || parse_length(v + used, &total));
    FLOE_RETURN_IF(!ok, err, FLOE_EIO, "the reply's Content-Range '%s' is not one range", v);
    FLOE_RETURN_IF(a != off || b != off + n - 1, err, FLOE_EIO,
                   "the reply holds bytes %llu-%llu instead", a, b);
    FLOE_RETURN_IF(total != si->base.size, err, FLOE_EIO,
                   "the object is now %llu bytes, not the %llu it had when opened",
                   (unsigned long long)total, (unsigned long long)si->base.size);
    return FLOE_OK;
}

/* A successful reply: is it exactly the range asked for? */
static int check_reply(const s3_input *si, const floe__http_response *resp, uint64_t off,
                       size_t n, floe_error *err)
{
    FLOE_RETURN_IF(resp->status != 206, err, FLOE_EIO,
                   "HTTP %ld instead of 206 Partial Content (the server ignored the Range)",
                   resp->status);
    FLOE_RETURN_IF(resp->body.len != n, err, FLOE_EIO, "got %zu of the %zu bytes asked for",
                   resp->body.len, n);
    return check_content_range(si, resp, off, n, err);
}

/* Lend dst to resp as its body buffer.  cap == max == n, so the buffer can
 * never grow (growth past max fails before any realloc): the HTTP layer
 * writes into dst or reports FLOE_ELIMIT, and never frees or moves it. */
static void lend(floe__http_response *resp, uint8_t *dst, size_t n)
{
    resp->body.data = dst;
    resp->body.len = 0;
    resp->body.cap = resp->body.max = n;
}

static void take_back(floe__http_response *resp, const uint8_t *dst)
{
    assert(resp->body.data == dst);
    (void)dst;
    resp->body.data = NULL;
    resp->body.len = resp->body.cap = 0;
}

/* The GET of [off, off + n) into dst under settings c. */
static int ranged_get(s3_input *si, const s3_conf *c, uint64_t off, size_t n, uint8_t *dst,
                      floe_error *err)
{
    range_text t;
    range_text_init(&t, off, n);
    floe__http_header range = {"Range", t.header};
    bool lent = n >= SMALL_READ;
    s3_req r = {.method = "GET", .loc = &si->loc, .headers = &range, .n_headers = 1,
                .max_response = lent ? n : SMALL_READ, .what = t.what};
    floe__http_response resp;
    floe__http_response_init(&resp);
    if (lent)
        lend(&resp, dst, n);
    int rc = floe__s3_request(si->s, c, &r, &resp, err);
    if (rc == FLOE_ELIMIT) {                  /* more than asked for: not the range */
        floe__err_set(err, FLOE_EIO, "the reply is longer than the %zu bytes asked for (the "
                      "server ignored the Range?)", n);
        rc = floe__s3_wrap(c, &r, FLOE_EIO, err);
    } else if (rc == FLOE_OK && (rc = check_reply(si, &resp, off, n, err)) != FLOE_OK) {
        floe__s3_wrap(c, &r, rc, err);
    } else if (rc == FLOE_OK && !lent) {
        memcpy(dst, resp.body.data, n);
    }
    if (lent)
        take_back(&resp, dst);
    floe__http_response_free(&resp);
    return rc;
}

static int in_read_at(floe__input *in, uint64_t off, size_t n, uint8_t *dst, floe_error *err)
{
    s3_input *si = (s3_input *)in;
    FLOE_RETURN_IF(off > in->size || n > in->size - off, err, FLOE_EINVAL,
                   "reading s3://%s/%s: bytes %llu..%llu are past its end (%llu bytes)",
                   si->loc.bucket, si->loc.key, (unsigned long long)off,
                   (unsigned long long)off + n, (unsigned long long)in->size);
    if (n == 0)
        return FLOE_OK;
    s3_conf *c = floe__s3_conf_get(si->s);
    int rc = ranged_get(si, c, off, n, dst, err);
    floe__s3_conf_put(si->s, c);
    return rc;
}

static void in_close(floe__input *in)
{
    s3_input *si = (s3_input *)in;
    floe__s3_loc_free(&si->loc);
    floe__free(si);
}

/* HEAD: the object's size into si->base.size. */
static int head_size(s3_input *si, floe_error *err)
{
    s3_conf *c = floe__s3_conf_get(si->s);
    floe__http_response resp;
    floe__http_response_init(&resp);
    s3_req r = {.method = "HEAD", .loc = &si->loc, .what = "HEAD (to open)"};
    int rc = floe__s3_request(si->s, c, &r, &resp, err);
    char v[32];
    if (rc == FLOE_OK && !(floe__http_response_header(&resp, "Content-Length", v, sizeof v) &&
                           parse_length(v, &si->base.size))) {
        floe__err_set(err, FLOE_EIO, "the reply has no usable Content-Length");
        rc = floe__s3_wrap(c, &r, FLOE_EIO, err);
    }
    floe__http_response_free(&resp);
    floe__s3_conf_put(si->s, c);
    return rc;
}

int floe__s3_input_open(floe__s3 *s, const char *uri, floe__input **out, floe_error *err)
{
    s3_input *si = floe__calloc(1, sizeof *si);
    if (!si)
        return FLOE_OOM(err);
    si->base.read_at = in_read_at;
    si->base.close = in_close;
    si->s = s;
    int rc = floe__s3_parse_uri(uri, &si->loc, err);
    if (rc == FLOE_OK)
        rc = head_size(si, err);
    if (rc != FLOE_OK) {
        in_close(&si->base);
        return rc;
    }
    *out = &si->base;
    return FLOE_OK;
}
