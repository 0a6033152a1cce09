/*
 * s3_list.c - listing an S3 "directory" for the S3 FileIO: ListObjectsV2
 * (GET /?list-type=2&prefix=P on the bucket, path-style or virtual-hosted
 * like every other request), page after page with continuation tokens, and
 * the parsing of one reply page (keys, sizes, LastModified times).
 *
 * Every object under the prefix is reported as SCHEME://BUCKET/KEY, in the
 * scheme the caller used (s3a:// stays s3a://), in S3's (lexicographic)
 * order.  A page is parsed and checked whole before any of its objects is
 * reported, so a damaged page reports nothing; objects of earlier pages
 * have been reported by then.  The page size is S3's (1000) unless the
 * floe.s3.list-page-size setting asks for fewer (tests use it).
 *
 * Not here: CommonPrefixes (no delimiter is sent), versions, the request
 * itself (s3_request.c) and the XML scanner (s3_xml.c).
 */
#include <stdio.h>

#include "io/s3_internal.h"

#define LIST_MAX_RESPONSE ((size_t)16 << 20)   /* 1000 keys of 1 KiB, escaped, and more */
#define MAX_TOKEN 4096

/* ---- times -------------------------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static unsigned days_in_month(int64_t y, unsigned m)
{
    static const unsigned char dim[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : dim[m - 1];
}

/* n decimal digits at *p (advanced); -1 when they are not all digits. */
static int digits(const char **p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (**p < '0' || **p > '9')
            return -1;
        v = v * 10 + (**p - '0');
    }
    return v;
}

/* The zone at p: "" or "Z" (UTC) or "+hh:mm" / "-hh:mm" / "+hhmm" -> the
 * offset in minutes east; false when it is something else. */
static bool zone_minutes(const char *p, int *minutes)
{
    *minutes = 0;
    if (!*p || ((*p == 'Z' || *p == 'z') && !p[1]))
        return true;
    if (*p != '+' && *p != '-')
        return false;
    int sign = *p++ == '-' ? -1 : 1;
    int h = digits(&p, 2);
    if (*p == ':')
        p++;
    int m = digits(&p, 2);
    if (h < 0 || h > 23 || m < 0 || m > 59 || *p)
        return false;
    *minutes = sign * (h * 60 + m);
    return true;
}

bool floe__s3_parse_time(const char *text, int64_t *ms)
{
    const char *p = text;
    int y = digits(&p, 4);
    int mo = *p == '-' ? (p++, digits(&p, 2)) : -1;
    int d = *p == '-' ? (p++, digits(&p, 2)) : -1;
    int h = *p == 'T' || *p == 't' ? (p++, digits(&p, 2)) : -1;
    int mi = *p == ':' ? (p++, digits(&p, 2)) : -1;
    int s = *p == ':' ? (p++, digits(&p, 2)) : -1;
    if (y < 0 || mo < 1 || mo > 12 || d < 1 || (unsigned)d > days_in_month(y, (unsigned)mo) ||
        h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 60)
        return false;
    int frac = 0, scale = 1000;
    if (*p == '.') {
        const char *f = ++p;
        for (; *p >= '0' && *p <= '9'; p++)
            if (scale > 1)
                frac += (*p - '0') * (scale /= 10);
        if (p == f)
            return false;
    }
    int zone;
    if (!zone_minutes(p, &zone))
        return false;
    int64_t secs = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 +
                   s - (int64_t)zone * 60;
    *ms = secs * 1000 + frac;
    return true;
}

/* ---- one page ------------------------------------------------------------------------- */

/* The text of <tag> inside [xml, xml+n) into b (reset first); false when absent. */
static bool text_in(const char *xml, size_t n, const char *tag, floe__buf *b)
{
    floe__buf_reset(b);
    return floe__s3_xml_text(xml, n, tag, b);
}

static bool parse_size(const char *t, uint64_t *out)
{
    uint64_t v = 0;
    if (!*t)
        return false;
    for (; *t; t++) {
        if (*t < '0' || *t > '9' || v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*t - '0');
    }
    *out = v;
    return true;
}

typedef struct page_scratch {
    floe__buf key, text;
} page_scratch;

/* One <Contents> element: checked, then handed to fn (when not NULL). */
static int one_object(const char *el, size_t n, const char *prefix, page_scratch *ps,
                      s3_object_fn fn, void *ctx, floe_error *err)
{
    uint64_t size = 0;
    int64_t mtime = 0;
    FLOE_RETURN_IF(!text_in(el, n, "Key", &ps->key) || ps->key.len == 0, err, FLOE_EIO,
                   "an object without a <Key>");
    const char *key = (const char *)ps->key.data;
    FLOE_RETURN_IF(strlen(key) != ps->key.len, err, FLOE_EIO, "a key holding a NUL character");
    FLOE_RETURN_IF(!floe__str_starts(key, prefix), err, FLOE_EIO,
                   "key '%s' is not under the prefix asked for", key);
    FLOE_RETURN_IF(!text_in(el, n, "Size", &ps->text) ||
                       !parse_size((const char *)ps->text.data, &size),
                   err, FLOE_EIO, "key '%s': no <Size> or a bad one", key);
    FLOE_RETURN_IF(!text_in(el, n, "LastModified", &ps->text) ||
                       !floe__s3_parse_time((const char *)ps->text.data, &mtime),
                   err, FLOE_EIO, "key '%s': no <LastModified> or a bad one", key);
    return fn ? fn(ctx, key, size, mtime, err) : FLOE_OK;
}

/* Every <Contents> of the page through one_object. */
static int walk_contents(const char *xml, size_t n, const char *prefix, page_scratch *ps,
                         s3_object_fn fn, void *ctx, floe_error *err)
{
    size_t pos = 0;
    const char *el;
    size_t el_len;
    int found;
    while ((found = floe__s3_xml_next(xml, n, "Contents", &pos, &el, &el_len)) == 1)
        FLOE_FORWARD(one_object(el, el_len, prefix, ps, fn, ctx, err));
    FLOE_RETURN_IF(found < 0, err, FLOE_EIO, "a <Contents> element is not closed");
    return FLOE_OK;
}

/* IsTruncated and, when true, NextContinuationToken into tok (which holds
 * the token that asked for this page: the same one again would loop). */
static int page_tail(const char *xml, size_t n, page_scratch *ps, bool *truncated,
                     floe__buf *tok, floe_error *err)
{
    FLOE_RETURN_IF(!text_in(xml, n, "IsTruncated", &ps->text), err, FLOE_EIO,
                   "no <IsTruncated>");
    const char *t = (const char *)ps->text.data;
    FLOE_RETURN_IF(strcmp(t, "true") != 0 && strcmp(t, "false") != 0, err, FLOE_EIO,
                   "<IsTruncated> is '%s'", t);
    *truncated = strcmp(t, "true") == 0;
    if (!*truncated)
        return FLOE_OK;
    FLOE_RETURN_IF(!text_in(xml, n, "NextContinuationToken", &ps->text) || ps->text.len == 0 ||
                       ps->text.len > MAX_TOKEN ||
                       strlen((const char *)ps->text.data) != ps->text.len,
                   err, FLOE_EIO, "a truncated page without a usable <NextContinuationToken>");
    FLOE_RETURN_IF(tok->len == ps->text.len && memcmp(tok->data, ps->text.data, tok->len) == 0,
                   err, FLOE_EIO, "the same continuation token again");
    floe__buf_reset(tok);
    FLOE_FORWARD(floe__buf_append(tok, ps->text.data, ps->text.len + 1, err));   /* with NUL */
    tok->len--;
    return FLOE_OK;
}

int floe__s3_list_page(const char *xml, size_t n, const char *prefix, s3_object_fn fn,
                       void *ctx, bool *truncated, floe__buf *next_token, floe_error *err)
{
    page_scratch ps;
    floe__buf_init(&ps.key, 1 << 16);
    floe__buf_init(&ps.text, 1 << 16);
    int rc = FLOE_OK;
    if (!floe__s3_xml_root_is(xml, n, "ListBucketResult"))
        rc = floe__err_set(err, FLOE_EIO, "not a ListBucketResult");
    if (rc == FLOE_OK)
        rc = walk_contents(xml, n, prefix, &ps, NULL, NULL, err);       /* check it all */
    if (rc == FLOE_OK)
        rc = page_tail(xml, n, &ps, truncated, next_token, err);
    if (rc == FLOE_OK)
        rc = walk_contents(xml, n, prefix, &ps, fn, ctx, err);
    floe__buf_free(&ps.key);
    floe__buf_free(&ps.text);
    return rc;
}

/* ---- the listing ---------------------------------------------------------------------- */

typedef struct lister {
    floe__s3 *s;
    s3_loc bucket;                /* key "": requests go to the bucket */
    char *prefix;                 /* ends in '/' or is "" */
    floe__list_fn fn;
    void *ctx;
    bool fn_failed;               /* the caller's fn stopped the listing */
    floe__buf uri;                /* "SCHEME://BUCKET/" + the key being reported */
    size_t base_len;
    floe__buf query, token;
} lister;

static int report(void *ctx, const char *key, uint64_t size, int64_t mtime_ms, floe_error *err)
{
    lister *ls = ctx;
    ls->uri.len = ls->base_len;
    FLOE_FORWARD(floe__buf_append(&ls->uri, key, strlen(key) + 1, err));
    floe__listed obj = {(const char *)ls->uri.data, size, mtime_ms};
    int rc = ls->fn(ls->ctx, &obj, err);
    ls->fn_failed = rc != FLOE_OK;
    return rc;
}

/* The canonical ListObjectsV2 query (keys in order, NUL-terminated). */
static int list_query(lister *ls, const s3_conf *c, floe_error *err)
{
    floe__buf *q = &ls->query;
    floe__buf_reset(q);
    if (ls->token.len) {
        FLOE_FORWARD(floe__buf_printf(q, err, "continuation-token="));
        FLOE_FORWARD(floe__url_encode((const char *)ls->token.data, q, err));
        FLOE_FORWARD(floe__buf_printf(q, err, "&"));
    }
    FLOE_FORWARD(floe__buf_printf(q, err, "list-type=2"));
    if (c->list_page_size)
        FLOE_FORWARD(floe__buf_printf(q, err, "&max-keys=%ld", c->list_page_size));
    FLOE_FORWARD(floe__buf_printf(q, err, "&prefix="));
    FLOE_FORWARD(floe__url_encode(ls->prefix, q, err));
    return floe__buf_putc(q, 0, err);
}

/* Page number `page`: request, parse, report.  *more says whether another
 * follows (its token in ls->token).  The settings are pinned per page. */
static int list_one_page(lister *ls, size_t page, bool *more, floe_error *err)
{
    s3_conf *c = floe__s3_conf_get(ls->s);
    char what[64];
    snprintf(what, sizeof what, "ListObjectsV2 (page %zu) of", page);
    s3_req r = {.method = "GET", .loc = &ls->bucket, .shown_key = ls->prefix,
                .max_response = LIST_MAX_RESPONSE, .what = what};
    floe__http_response resp;
    floe__http_response_init(&resp);
    int rc = list_query(ls, c, err);
    r.query = (const char *)ls->query.data;
    if (rc == FLOE_OK)
        rc = floe__s3_request(ls->s, c, &r, &resp, err);
    if (rc == FLOE_OK) {
        rc = floe__s3_list_page((const char *)resp.body.data, resp.body.len, ls->prefix, report,
                                ls, more, &ls->token, err);
        if (rc != FLOE_OK && !ls->fn_failed)
            floe__s3_wrap(c, &r, rc, err);
    }
    floe__http_response_free(&resp);
    floe__s3_conf_put(ls->s, c);
    return rc;
}

static void lister_free(lister *ls)
{
    floe__s3_loc_free(&ls->bucket);
    floe__free(ls->prefix);
    floe__buf_free(&ls->uri);
    floe__buf_free(&ls->query);
    floe__buf_free(&ls->token);
}

/* "SCHEME://BUCKET/" of uri, the bucket and the prefix into ls. */
static int lister_init(lister *ls, const char *uri, floe_error *err)
{
    floe__buf_init(&ls->uri, 1 << 16);
    floe__buf_init(&ls->query, 1 << 16);
    floe__buf_init(&ls->token, MAX_TOKEN + 1);
    FLOE_FORWARD(floe__s3_parse_prefix(uri, &ls->bucket, err));
    ls->prefix = ls->bucket.key;
    if (!(ls->bucket.key = floe__strdup("")))
        return FLOE_OOM(err);
    const char *scheme_end = strstr(uri, "://") + 3;
    FLOE_FORWARD(floe__buf_printf(&ls->uri, err, "%.*s%s/", (int)(scheme_end - uri), uri,
                                  ls->bucket.bucket));
    ls->base_len = ls->uri.len;
    return FLOE_OK;
}

int floe__s3_list(floe__s3 *s, const char *uri, floe__list_fn fn, void *ctx, floe_error *err)
{
    lister ls = {.s = s, .fn = fn, .ctx = ctx};
    int rc = lister_init(&ls, uri, err);
    bool more = true;
    for (size_t page = 1; rc == FLOE_OK && more; page++)
        rc = list_one_page(&ls, page, &more, err);
    lister_free(&ls);
    return rc;
}
