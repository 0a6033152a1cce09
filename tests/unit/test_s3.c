/*
 * test_s3.c - unit tests of the S3 FileIO without an S3 server: URIs and
 * URLs, the XML reader, ListObjectsV2 pages and times, error
 * classification, settings, and the request, upload, ranged-read and
 * listing logic against a scripted HTTP server on a loopback socket
 * (retries, multipart uploads, aborts, signing headers, Range headers,
 * pagination, addressing).  The real-server tests are tests/test_s3*.py.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/s3_internal.h"
#include "unit.h"

/* ---- URIs, URLs, XML, classification ------------------------------------------- */

TEST(uris_split_into_bucket_and_key)
{
    s3_loc l;
    CHECK_EQ_INT(floe__s3_parse_uri("s3://bkt/a/b c.parquet", &l, NULL), FLOE_OK);
    CHECK_EQ_STR(l.bucket, "bkt");
    CHECK_EQ_STR(l.key, "a/b c.parquet");
    floe__s3_loc_free(&l);
    CHECK_EQ_INT(floe__s3_parse_uri("s3a://bkt/k", &l, NULL), FLOE_OK);
    floe__s3_loc_free(&l);
    CHECK(floe__s3_is_uri("s3n://x/y"));
    CHECK(!floe__s3_is_uri("file:///x"));
    CHECK(!floe__s3_is_uri("s3:/x"));
    CHECK_EQ_INT(floe__s3_parse_uri("s3://bkt", &l, NULL), FLOE_EINVAL);
    CHECK_EQ_INT(floe__s3_parse_uri("s3://bkt/", &l, NULL), FLOE_EINVAL);
    CHECK_EQ_INT(floe__s3_parse_uri("s3:///key", &l, NULL), FLOE_EINVAL);
    CHECK_EQ_INT(floe__s3_parse_uri("gs://b/k", &l, NULL), FLOE_EINVAL);
}

TEST(urls_path_style_virtual_hosted_and_aws)
{
    s3_loc l = {"bkt", "dir/a b+c=é~.txt"};
    s3_conf c = {.endpoint = "http://127.0.0.1:9000", .region = "eu-west-1", .path_style = -1};
    char *u = floe__s3_url(&c, &l, NULL);
    CHECK_EQ_STR(u, "http://127.0.0.1:9000/bkt/dir/a%20b%2Bc%3D%C3%A9~.txt");
    floe__free(u);
    c.path_style = 0;
    u = floe__s3_url(&c, &l, "partNumber=1&uploadId=x");
    CHECK_EQ_STR(u, "http://bkt.127.0.0.1:9000/dir/a%20b%2Bc%3D%C3%A9~.txt?partNumber=1&uploadId=x");
    floe__free(u);
    c.endpoint = NULL;
    c.path_style = -1;
    u = floe__s3_url(&c, &l, "uploads=");
    CHECK_EQ_STR(u, "https://bkt.s3.eu-west-1.amazonaws.com/dir/a%20b%2Bc%3D%C3%A9~.txt?uploads=");
    floe__free(u);
    c.path_style = 1;
    u = floe__s3_url(&c, &l, NULL);
    CHECK_EQ_STR(u, "https://s3.eu-west-1.amazonaws.com/bkt/dir/a%20b%2Bc%3D%C3%A9~.txt");
    floe__free(u);
}

static bool text_of(const char *xml, const char *tag, const char *want)
{
    floe__buf b;
    floe__buf_init(&b, 0);
    bool found = floe__s3_xml_text(xml, strlen(xml), tag, &b);
    bool ok = want ? found && strcmp((const char *)b.data, want) == 0 : !found;
    if (!ok)
        fprintf(stderr, "  <%s> in %s: got %s\n", tag, xml, found ? (char *)b.data : "(none)");
    floe__buf_free(&b);
    return ok;
}

TEST(xml_text_and_root)
{
    const char *err = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code>"
                      "<Message>Key &lt;a&amp;b&gt; &#x263A;&#65; &bogus; end</Message>"
                      "<CodeX>no</CodeX></Error>";
    CHECK(text_of(err, "Code", "NoSuchKey"));
    CHECK(text_of(err, "Message", "Key <a&b> \xE2\x98\xBA" "A &bogus; end"));
    CHECK(text_of(err, "CodeX", "no"));
    CHECK(text_of(err, "Missing", NULL));
    CHECK(text_of("<a><UploadId attr=\"1\">u-1</UploadId></a>", "UploadId", "u-1"));
    CHECK(text_of("<a><Empty/></a>", "Empty", ""));
    CHECK(text_of("<a><Code>unterminated", "Code", NULL));
    CHECK(text_of("<Code>&#0;&#xD800;&#999999999;</Code>", "Code", "??&#999999999;"));
    CHECK(floe__s3_xml_root_is(err, strlen(err), "Error"));
    const char *ok = "\n  <!-- c --><CompleteMultipartUploadResult><Error>x</Error>";
    CHECK(!floe__s3_xml_root_is(ok, strlen(ok), "Error"));
    CHECK(floe__s3_xml_root_is(ok, strlen(ok), "CompleteMultipartUploadResult"));
    CHECK(!floe__s3_xml_root_is("<Errors/>", 9, "Error"));
    CHECK(!floe__s3_xml_root_is("<!-- open", 9, "Error"));
    CHECK(!floe__s3_xml_root_is("", 0, "Error"));
    floe__buf b;
    floe__buf_init(&b, 0);
    CHECK_EQ_INT(floe__s3_xml_escape("\"a\"<&>'", &b, NULL), FLOE_OK);
    CHECK(b.len == 32 && memcmp(b.data, "&quot;a&quot;&lt;&amp;&gt;&apos;", 32) == 0);
    floe__buf_free(&b);
}

TEST(xml_next_walks_repeated_elements)
{
    const char *xml = "<R><C>one</C><Cx>no</Cx><C a=\"1\">two</C><C/><C>open";
    size_t n = strlen(xml), pos = 0, len = 0;
    const char *in = NULL;
    CHECK_EQ_INT(floe__s3_xml_next(xml, n, "C", &pos, &in, &len), 1);
    CHECK(len == 3 && memcmp(in, "one", 3) == 0);
    CHECK_EQ_INT(floe__s3_xml_next(xml, n, "C", &pos, &in, &len), 1);
    CHECK(len == 3 && memcmp(in, "two", 3) == 0);
    CHECK_EQ_INT(floe__s3_xml_next(xml, n, "C", &pos, &in, &len), 1);
    CHECK_EQ_INT(len, 0);
    CHECK_EQ_INT(floe__s3_xml_next(xml, n, "C", &pos, &in, &len), -1);   /* never closed */
    CHECK_EQ_INT(pos, n);
    CHECK_EQ_INT(floe__s3_xml_next(xml, n, "C", &pos, &in, &len), 0);
    pos = 0;
    CHECK_EQ_INT(floe__s3_xml_next("<R/>", 4, "C", &pos, &in, &len), 0);
    pos = 0;
    CHECK_EQ_INT(floe__s3_xml_next("", 0, "C", &pos, &in, &len), 0);
}

static bool time_is(const char *text, int64_t want)
{
    int64_t got = 0;
    bool ok = floe__s3_parse_time(text, &got) && got == want;
    if (!ok)
        fprintf(stderr, "  %s: got %lld\n", text, (long long)got);
    return ok;
}

TEST(last_modified_times_parse_to_ms)
{
    CHECK(time_is("1970-01-01T00:00:00.000Z", 0));
    CHECK(time_is("2009-10-12T17:50:30.000Z", 1255369830000));
    CHECK(time_is("2009-10-12T17:50:30.5Z", 1255369830500));
    CHECK(time_is("2009-10-12T17:50:30.123456789Z", 1255369830123));
    CHECK(time_is("2009-10-12T17:50:30Z", 1255369830000));
    CHECK(time_is("2009-10-12T17:50:30", 1255369830000));
    CHECK(time_is("2009-10-12T19:50:30.000+02:00", 1255369830000));
    CHECK(time_is("2009-10-12T16:20:30-0130", 1255369830000));
    CHECK(time_is("2024-02-29T12:34:56.001Z", 1709210096001));
    CHECK(time_is("2000-03-01T00:00:00Z", 951868800000));
    CHECK(time_is("1969-12-31T23:59:59.000Z", -1000));
    int64_t t;
    const char *bad[] = {"", "2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-01-01",
                         "2024-01-01T24:00:00Z", "2024-01-01T00:60:00Z", "2024-01-01T00:00:00.Z",
                         "2024-01-01T00:00:00.000Q", "2024-01-01T00:00:00+2", "24-01-01T00:00:00Z",
                         "2024-01-01T00:00:00Zjunk", "2024-00-10T00:00:00Z", "garbage"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(!floe__s3_parse_time(bad[i], &t));
        if (floe__s3_parse_time(bad[i], &t))
            fprintf(stderr, "  accepted %s\n", bad[i]);
    }
}

typedef struct page_seen {
    floe__buf text;               /* "key size mtime\n" per object */
    int fail_at;                  /* fail on this object (1-based); 0: never */
    int n;
} page_seen;

static int page_collect(void *ctx, const char *key, uint64_t size, int64_t mtime,
                        floe_error *err)
{
    page_seen *ps = ctx;
    if (++ps->n == ps->fail_at)
        return floe__err_set(err, FLOE_EINTERRUPTED, "stop here");
    floe__buf_printf(&ps->text, NULL, "%s %llu %lld\n", key, (unsigned long long)size,
                     (long long)mtime);
    return FLOE_OK;
}

#define CONTENTS(key, size, when)                                                            \
    "<Contents><Key>" key "</Key><LastModified>" when "</LastModified><ETag>&quot;e&quot;"  \
    "</ETag><Size>" size "</Size><StorageClass>STANDARD</StorageClass></Contents>"
#define LIST_HEAD "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult "             \
                  "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>bkt</Name>"
#define T0 "2009-10-12T17:50:30.000Z"

/* Parse one page; the text of what it reported (or "ERR <code>: message"). */
static bool page_gives(const char *xml, const char *prefix, int fail_at, const char *want,
                       bool want_more, const char *want_token)
{
    page_seen ps = {.fail_at = fail_at};
    floe__buf_init(&ps.text, 0);
    floe__buf tok;
    floe__buf_init(&tok, 0);
    floe__buf_printf(&tok, NULL, "previous");
    floe_error *e = floe_error_new();
    bool more = false;
    int rc = floe__s3_list_page(xml, strlen(xml), prefix, page_collect, &ps, &more, &tok, e);
    if (rc != FLOE_OK)
        floe__buf_printf(&ps.text, NULL, "ERR %s: %s", floe_code_name(rc), floe_error_message(e));
    floe__buf_putc(&ps.text, 0, NULL);
    floe__buf_putc(&tok, 0, NULL);
    bool ok = strcmp((const char *)ps.text.data, want) == 0 &&
              (rc != FLOE_OK || (more == want_more &&
                                 (!want_token || strcmp((const char *)tok.data, want_token) == 0)));
    if (!ok)
        fprintf(stderr, "  page gave [%s] more=%d token=%s\n", (const char *)ps.text.data, more,
                (const char *)tok.data);
    floe_error_free(e);
    floe__buf_free(&ps.text);
    floe__buf_free(&tok);
    return ok;
}

TEST(list_pages_are_checked_whole_then_reported)
{
    CHECK(page_gives(LIST_HEAD "<Prefix>wh/t/</Prefix><IsTruncated>true</IsTruncated>"
                     "<NextContinuationToken>1/a+b=</NextContinuationToken>"
                     CONTENTS("wh/t/a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&apos;.parquet",
                              "434234", T0)
                     CONTENTS("wh/t/&#xE9;&#233;", "0", "1970-01-01T00:00:00Z")
                     "</ListBucketResult>",
                     "wh/t/", 0,
                     "wh/t/a&b <c> \"d\" 'e'.parquet 434234 1255369830000\n"
                     "wh/t/\xC3\xA9\xC3\xA9 0 0\n", true, "1/a+b="));
    CHECK(page_gives(LIST_HEAD "<IsTruncated>false</IsTruncated></ListBucketResult>", "", 0, "",
                     false, "previous"));
    CHECK(page_gives(LIST_HEAD CONTENTS("k", "1", T0) "<IsTruncated>false</IsTruncated>"
                     "</ListBucketResult>", "", 0, "k 1 1255369830000\n", false, NULL));
    /* a damaged page reports nothing */
    struct { const char *xml, *prefix, *why; } bad[] = {
        {"<Error><Code>x</Code></Error>", "", "not a ListBucketResult"},
        {LIST_HEAD CONTENTS("k", "1", T0) "</ListBucketResult>", "", "no <IsTruncated>"},
        {LIST_HEAD CONTENTS("k", "1", T0) "<IsTruncated>maybe</IsTruncated>", "", "'maybe'"},
        {LIST_HEAD CONTENTS("k", "1", T0) "<IsTruncated>true</IsTruncated>", "",
         "<NextContinuationToken>"},
        {LIST_HEAD CONTENTS("k", "1", T0) "<IsTruncated>true</IsTruncated>"
         "<NextContinuationToken>previous</NextContinuationToken>", "",
         "the same continuation token"},
        {LIST_HEAD CONTENTS("k", "1", T0) CONTENTS("k2", "-1", T0)
         "<IsTruncated>false</IsTruncated>", "", "key 'k2': no <Size> or a bad one"},
        {LIST_HEAD CONTENTS("k", "18446744073709551616", T0) "<IsTruncated>false</IsTruncated>",
         "", "no <Size>"},
        {LIST_HEAD CONTENTS("k", "1", "yesterday") "<IsTruncated>false</IsTruncated>", "",
         "no <LastModified>"},
        {LIST_HEAD CONTENTS("", "1", T0) "<IsTruncated>false</IsTruncated>", "", "without a <Key>"},
        {LIST_HEAD "<Contents><Size>1</Size></Contents><IsTruncated>false</IsTruncated>", "",
         "without a <Key>"},
        {LIST_HEAD CONTENTS("wh/t2/x", "1", T0) "<IsTruncated>false</IsTruncated>", "wh/t/",
         "key 'wh/t2/x' is not under the prefix"},
        {LIST_HEAD "<IsTruncated>false</IsTruncated><Contents><Key>k</Key>", "", "not closed"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        page_seen ps = {0};
        floe__buf_init(&ps.text, 0);
        floe__buf tok;
        floe__buf_init(&tok, 0);
        floe__buf_printf(&tok, NULL, "previous");
        floe_error *e = floe_error_new();
        bool more = false;
        int rc = floe__s3_list_page(bad[i].xml, strlen(bad[i].xml), bad[i].prefix,
                                    page_collect, &ps, &more, &tok, e);
        CHECK_EQ_INT(rc, FLOE_EIO);
        CHECK_EQ_INT(ps.n, 0);
        if (!strstr(floe_error_message(e), bad[i].why))
            fprintf(stderr, "  case %zu: %s\n", i, floe_error_message(e));
        CHECK(strstr(floe_error_message(e), bad[i].why) != NULL);
        floe_error_free(e);
        floe__buf_free(&ps.text);
        floe__buf_free(&tok);
    }
    /* the callback's failure stops the walk and is returned as it is */
    CHECK(page_gives(LIST_HEAD CONTENTS("a", "1", T0) CONTENTS("b", "2", T0) CONTENTS("c", "3", T0)
                     "<IsTruncated>false</IsTruncated></ListBucketResult>", "", 2,
                     "a 1 1255369830000\nERR FLOE_EINTERRUPTED: stop here", false, NULL));
}

/* Whether a reply is worth repeating is its code's class (floe.h), nothing else. */
static bool retried(long status, const char *code)
{
    return floe_code_class(floe__s3_classify(status, code).code) == FLOE_FAIL_RETRY;
}

TEST(classification)
{
    CHECK(retried(503, "SlowDown"));
    CHECK(retried(500, NULL));
    CHECK(retried(429, NULL));
    CHECK(retried(400, "RequestTimeout"));
    CHECK(retried(400, "BadDigest"));
    CHECK(!retried(501, "NotImplemented"));
    s3_verdict v = floe__s3_classify(403, "SignatureDoesNotMatch");
    CHECK(!retried(403, "SignatureDoesNotMatch") && v.code == FLOE_EAUTH &&
          strstr(v.hint, "AWS_SECRET_ACCESS_KEY"));
    CHECK_EQ_INT(floe__s3_classify(403, "InvalidAccessKeyId").code, FLOE_EAUTH);
    CHECK_EQ_INT(floe__s3_classify(404, "XAdminUserNotFound").code, FLOE_EAUTH);
    CHECK_EQ_INT(floe__s3_classify(400, "ExpiredToken").code, FLOE_EAUTH);
    CHECK_EQ_INT(floe__s3_classify(403, NULL).code, FLOE_EAUTH);
    CHECK_EQ_INT(floe__s3_classify(301, "PermanentRedirect").code, FLOE_EINVAL);
    CHECK_EQ_INT(floe__s3_classify(404, "NoSuchKey").code, FLOE_ENOTFOUND);
    CHECK_EQ_INT(floe__s3_classify(400, "InvalidArgument").code, FLOE_EINVAL);
    CHECK(!retried(400, "InvalidArgument"));
}

/* ---- settings ---------------------------------------------------------------------- */

static json_t *js(const char *text) { return json_loads(text, 0, NULL); }

TEST(settings_are_checked_and_overridden)
{
    floe__s3_options o;
    floe__s3_options_init(&o);
    floe__fileio *io = NULL;
    o.endpoint = "ftp://x";
    CHECK_EQ_INT(floe__fileio_s3_new(&o, &io, NULL), FLOE_EINVAL);
    floe_error *e1 = floe_error_new();                  /* secrets in the endpoint */
    const char *leaky[] = {"http://u:hunter2@host:9000/", "http://host/?X-Amz-Signature=hunter2",
                           "ftp://u:hunter2@host", "http://host#hunter2"};
    for (size_t i = 0; i < sizeof leaky / sizeof leaky[0]; i++) {
        o.endpoint = leaky[i];
        CHECK_EQ_INT(floe__fileio_s3_new(&o, &io, e1), FLOE_EINVAL);
        CHECK(strstr(floe_error_message(e1), "S3 endpoint") != NULL);
        CHECK(strstr(floe_error_message(e1), "hunter2") == NULL);
    }
    floe_error_free(e1);
    o.endpoint = "127.0.0.1:9000/";
    o.region = "bad region";
    CHECK_EQ_INT(floe__fileio_s3_new(&o, &io, NULL), FLOE_EINVAL);
    o.region = NULL;
    o.access_key_id = "AKID";
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(floe__fileio_s3_new(&o, &io, err), FLOE_EINVAL);   /* no secret */
    CHECK(strstr(floe_error_message(err), "AWS_SECRET_ACCESS_KEY") != NULL);
    o.secret_access_key = "sekrit";
    o.part_size = 1 << 20;
    CHECK_EQ_INT(floe__fileio_s3_new(&o, &io, NULL), FLOE_EINVAL);
    o.part_size = 0;
    CHECK_EQ_INT(floe__fileio_s3_new(&o, &io, NULL), FLOE_OK);
    floe__s3 *s = (floe__s3 *)io;
    CHECK_EQ_STR(s->conf->endpoint, "https://127.0.0.1:9000");
    CHECK_EQ_STR(s->conf->region, "us-east-1");
    CHECK_EQ_INT(s->conf->part_size, 8 << 20);

    json_t *j = js("{\"s3.access-key-id\": \"VENDED\", \"s3.secret-access-key\": \"vs\","
                   "\"client.region\": \"eu-central-1\", \"s3.path-style-access\": false,"
                   "\"floe.s3.max-attempts\": 7, \"unrelated\": {\"x\": 1}}");
    json_object_del(j, "unrelated");
    CHECK_EQ_INT(floe__fileio_s3_configure(io, j, NULL), FLOE_OK);
    json_decref(j);
    CHECK_EQ_STR(s->conf->access_key_id, "VENDED");
    CHECK_EQ_STR(s->conf->region, "eu-central-1");
    CHECK(s->conf->session_token == NULL && s->conf->path_style == 0);
    CHECK_EQ_INT(s->conf->max_attempts, 7);
    CHECK_EQ_INT(s->generation, 1);

    /* a bad value changes nothing */
    j = js("{\"s3.region\": \"eu-west-2\", \"floe.s3.part-size\": \"12x\"}");
    CHECK_EQ_INT(floe__fileio_s3_configure(io, j, err), FLOE_EINVAL);
    CHECK(strstr(floe_error_message(err), "floe.s3.part-size") != NULL);
    json_decref(j);
    j = js("{\"s3.secret-access-key\": [1]}");
    CHECK_EQ_INT(floe__fileio_s3_configure(io, j, NULL), FLOE_EINVAL);
    json_decref(j);
    j = js("{\"s3.access-key-id\": \"ONLYKEY\"}");                  /* no secret with it */
    CHECK_EQ_INT(floe__fileio_s3_configure(io, j, NULL), FLOE_EINVAL);
    json_decref(j);
    CHECK_EQ_STR(s->conf->region, "eu-central-1");
    CHECK_EQ_STR(s->conf->access_key_id, "VENDED");

    /* derive: a new FileIO, the old one unchanged */
    floe__fileio *d = NULL;
    j = js("{\"s3.endpoint\": \"http://other:1/\", \"s3.session-token\": \"tok\","
           "\"s3.access-key-id\": \"K2\", \"s3.secret-access-key\": \"S2\"}");
    CHECK_EQ_INT(floe__fileio_s3_derive(io, j, &d, NULL), FLOE_OK);
    json_decref(j);
    CHECK_EQ_STR(((floe__s3 *)d)->conf->endpoint, "http://other:1");
    CHECK_EQ_STR(((floe__s3 *)d)->conf->session_token, "tok");
    CHECK_EQ_STR(((floe__s3 *)d)->conf->region, "eu-central-1");
    CHECK_EQ_STR(s->conf->endpoint, "https://127.0.0.1:9000");
    floe__fileio_free(d);

    floe__fileio *local = NULL;
    CHECK_EQ_INT(floe__fileio_local_new(&local, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__fileio_s3_configure(local, NULL, NULL), FLOE_EINVAL);
    floe__fileio_free(local);
    floe__fileio_free(io);
    floe_error_free(err);
}

/* ---- a scripted HTTP server ---------------------------------------------------------- */

#define MAX_SEEN 64

typedef struct seen_req {
    char method[8];
    char target[512];
    char *headers;              /* the raw header block */
    uint8_t *body;
    size_t body_len;
} seen_req;

typedef struct mock {
    int listen_fd, port;
    pthread_t thread;
    pthread_mutex_t lock;
    /* The reply to request number n (0-based) into buf: the whole response. */
    void (*reply)(struct mock *m, size_t n, const seen_req *r, floe__buf *out);
    int state;                  /* for reply functions */
    size_t n_seen;
    seen_req seen[MAX_SEEN];
} mock;

static void respond(floe__buf *out, int status, const char *extra_headers, const char *body)
{
    floe__buf_printf(out, NULL, "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n%s\r\n%s", status,
                     strlen(body), extra_headers ? extra_headers : "", body);
}

static const char *header_of(const seen_req *r, const char *name, char *buf, size_t cap)
{
    floe__http_response fake;
    fake.headers.data = (uint8_t *)r->headers;
    fake.headers.len = strlen(r->headers);
    return floe__http_response_header(&fake, name, buf, cap);
}

/* Read one request from fd; false at EOF or on a malformed request. */
static bool read_request(int fd, floe__buf *in, seen_req *r)
{
    for (;;) {
        uint8_t *end = in->len >= 4 ? memmem(in->data, in->len, "\r\n\r\n", 4) : NULL;
        if (end) {
            size_t head = (size_t)(end - in->data) + 4;
            char *h = floe__strndup((const char *)in->data, head);
            if (sscanf(h, "%7s %511s", r->method, r->target) != 2) {
                floe__free(h);
                return false;
            }
            r->headers = h;
            char cl[32];
            size_t len = header_of(r, "Content-Length", cl, sizeof cl) ? strtoull(cl, NULL, 10)
                                                                       : 0;
            while (in->len < head + len) {
                floe__buf_reserve(in, 65536, NULL);
                ssize_t n = read(fd, in->data + in->len, in->cap - in->len);
                if (n <= 0)
                    return false;
                in->len += (size_t)n;
            }
            r->body = floe__malloc(len + 1);
            memcpy(r->body, in->data + head, len);
            r->body_len = len;
            memmove(in->data, in->data + head + len, in->len - head - len);
            in->len -= head + len;
            return true;
        }
        floe__buf_reserve(in, 65536, NULL);
        ssize_t n = read(fd, in->data + in->len, in->cap - in->len);
        if (n <= 0)
            return false;
        in->len += (size_t)n;
    }
}

static void *serve(void *arg)
{
    mock *m = arg;
    for (;;) {
        int fd = accept(m->listen_fd, NULL, NULL);
        if (fd < 0)
            return NULL;
        floe__buf in, out;
        floe__buf_init(&in, 0);
        floe__buf_init(&out, 0);
        seen_req r;
        while (read_request(fd, &in, &r)) {
            pthread_mutex_lock(&m->lock);
            size_t n = m->n_seen;
            if (n < MAX_SEEN)
                m->seen[m->n_seen++] = r;
            pthread_mutex_unlock(&m->lock);
            floe__buf_reset(&out);
            m->reply(m, n, &r, &out);
            if (n >= MAX_SEEN) {
                floe__free(r.headers);
                floe__free(r.body);
            }
            if (out.len == 0 || write(fd, out.data, out.len) != (ssize_t)out.len)
                break;                        /* no reply: drop the connection */
        }
        close(fd);
        floe__buf_free(&in);
        floe__buf_free(&out);
    }
}

static void mock_start(mock *m, void (*reply)(mock *, size_t, const seen_req *, floe__buf *))
{
    memset(m, 0, sizeof *m);
    m->reply = reply;
    pthread_mutex_init(&m->lock, NULL);
    m->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (bind(m->listen_fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(m->listen_fd, 8) != 0 ||
        getsockname(m->listen_fd, (struct sockaddr *)&a, &al) != 0) {
        perror("mock server");
        exit(1);
    }
    m->port = ntohs(a.sin_port);
    pthread_create(&m->thread, NULL, serve, m);
}

/* Stop serving; what was seen stays until mock_free. */
static void mock_stop(mock *m)
{
    shutdown(m->listen_fd, SHUT_RDWR);
    close(m->listen_fd);
    pthread_join(m->thread, NULL);
    pthread_mutex_destroy(&m->lock);
}

static void mock_free(mock *m)
{
    for (size_t i = 0; i < m->n_seen; i++) {
        floe__free(m->seen[i].headers);
        floe__free(m->seen[i].body);
    }
}

static floe__fileio *mock_io(const mock *m, const char *key, const char *extra_json)
{
    char ep[64];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%d", m->port);
    floe__s3_options o;
    floe__s3_options_init(&o);
    o.endpoint = ep;
    o.access_key_id = key;
    o.secret_access_key = key ? "TopSecretValue" : NULL;
    o.part_size = 5 << 20;
    o.retry_base_ms = 1;
    o.retry_max_ms = 4;
    floe__fileio *io = NULL;
    if (floe__fileio_s3_new(&o, &io, NULL) != FLOE_OK)
        return NULL;
    if (extra_json) {
        json_t *j = js(extra_json);
        floe__fileio_s3_configure(io, j, NULL);
        json_decref(j);
    }
    return io;
}

static bool has_header(const seen_req *r, const char *name, const char *value)
{
    char buf[512];
    const char *v = header_of(r, name, buf, sizeof buf);
    return v && (!value || strcmp(v, value) == 0);
}

/* ---- requests -------------------------------------------------------------------------- */

static void reply_ok(mock *m, size_t n, const seen_req *r, floe__buf *out)
{
    (void)m;
    (void)n;
    if (strcmp(r->method, "GET") == 0)
        respond(out, 200, NULL, "0123456789");
    else if (strcmp(r->method, "HEAD") == 0)
        floe__buf_printf(out, NULL, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
    else
        respond(out, 200, "ETag: \"e\"\r\n", "");
}

TEST(put_is_signed_with_checksum_and_unsigned_payload)
{
    mock m;
    mock_start(&m, reply_ok);
    floe__fileio *io = mock_io(&m, "AKIDEXAMPLE", "{\"s3.session-token\": \"tok\","
                               "\"s3.access-key-id\": \"AKIDEXAMPLE\","
                               "\"s3.secret-access-key\": \"TopSecretValue\"}");
    CHECK(io != NULL);
    CHECK_EQ_INT(floe__fileio_write_all(io, "s3://bkt/a/b c", "hello", 5, NULL), FLOE_OK);
    floe__buf b;
    floe__buf_init(&b, 0);
    CHECK_EQ_INT(floe__fileio_read_all(io, "s3://bkt/x", &b, NULL), FLOE_OK);
    CHECK(b.len == 10 && memcmp(b.data, "0123456789", 10) == 0);
    floe__buf_free(&b);
    floe__buf_init(&b, 4);
    CHECK_EQ_INT(floe__fileio_read_all(io, "s3://bkt/x", &b, NULL), FLOE_ELIMIT);
    floe__buf_free(&b);
    bool e = true;
    CHECK_EQ_INT(floe__fileio_exists(io, "s3://bkt/x", &e, NULL), FLOE_OK);
    CHECK(!e);
    floe__fileio_free(io);
    mock_stop(&m);
    CHECK_EQ_INT(m.n_seen, 4);
    const seen_req *put = &m.seen[0];
    CHECK_EQ_STR(put->method, "PUT");
    CHECK_EQ_STR(put->target, "/bkt/a/b%20c");
    CHECK(put->body_len == 5 && memcmp(put->body, "hello", 5) == 0);
    CHECK(has_header(put, "x-amz-content-sha256", "UNSIGNED-PAYLOAD"));
    CHECK(has_header(put, "x-amz-checksum-crc32", "NhCmhg=="));      /* crc32("hello") */
    CHECK(has_header(put, "x-amz-security-token", "tok"));
    CHECK(has_header(put, "Content-Type", "application/octet-stream"));
    char auth[512];
    CHECK(header_of(put, "Authorization", auth, sizeof auth) != NULL);
    CHECK(strncmp(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/", 40) == 0);
    CHECK(strstr(auth, "/us-east-1/s3/aws4_request") != NULL);
    CHECK(strstr(auth, "x-amz-content-sha256") && strstr(auth, "x-amz-security-token"));
    for (size_t i = 0; i < m.n_seen; i++)
        CHECK(strstr(m.seen[i].headers, "TopSecretValue") == NULL);
    mock_free(&m);
}

TEST(unsigned_without_credentials)
{
    mock m;
    mock_start(&m, reply_ok);
    floe__fileio *io = mock_io(&m, NULL, NULL);
    CHECK_EQ_INT(floe__fileio_write_all(io, "s3://bkt/k", "x", 1, NULL), FLOE_OK);
    floe__fileio_free(io);
    mock_stop(&m);
    CHECK_EQ_INT(m.n_seen, 1);
    CHECK(!has_header(&m.seen[0], "Authorization", NULL));
    mock_free(&m);
}

static void reply_flaky(mock *m, size_t n, const seen_req *r, floe__buf *out)
{
    (void)m;
    (void)r;
    if (n == 0)
        respond(out, 503, NULL, "<Error><Code>SlowDown</Code><Message>slow</Message></Error>");
    else if (n == 1)
        return;                                       /* connection dropped */
    else if (n == 2)
        respond(out, 400, NULL, "<Error><Code>RequestTimeout</Code></Error>");
    else
        respond(out, 200, "ETag: \"e\"\r\n", "");
}

TEST(transient_failures_are_retried)
{
    mock m;
    mock_start(&m, reply_flaky);
    floe__fileio *io = mock_io(&m, "AK", NULL);
    CHECK_EQ_INT(floe__fileio_write_all(io, "s3://bkt/k", "abc", 3, NULL), FLOE_OK);
    floe__fileio_free(io);
    mock_stop(&m);
    CHECK_EQ_INT(m.n_seen, 4);
    for (size_t i = 0; i < m.n_seen; i++)
        CHECK(m.seen[i].body_len == 3 && memcmp(m.seen[i].body, "abc", 3) == 0);
    mock_free(&m);
}

static void reply_always(mock *m, size_t n, const seen_req *r, floe__buf *out)
{
    (void)n;
    (void)r;
    if (m->state == 403)
        respond(out, 403, NULL, "<Error><Code>SignatureDoesNotMatch</Code><Message>The "
                                "request signature we calculated does not match.</Message>"
                                "<StringToSign>TopSecretValue?</StringToSign></Error>");
    else
        respond(out, 500, NULL, "<Error><Code>InternalError</Code><Message>boom</Message></Error>");
}

TEST(permanent_failures_give_up_with_clear_errors)
{
    mock m;
    mock_start(&m, reply_always);
    floe__fileio *io = mock_io(&m, "AK", "{\"floe.s3.max-attempts\": \"3\"}");
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(floe__fileio_write_all(io, "s3://bkt/k", "abc", 3, err), FLOE_EIO);
    const char *msg = floe_error_message(err);
    CHECK(strstr(msg, "S3 PUT s3://bkt/k") && strstr(msg, "gave up after 3 attempts"));
    CHECK(strstr(msg, "HTTP 500 InternalError: boom") != NULL);
    CHECK(floe_error_retryable(err));
    size_t before = m.n_seen;
    CHECK_EQ_INT(before, 3);
    m.state = 403;
    CHECK_EQ_INT(floe__fileio_write_all(io, "s3://bkt/k", "abc", 3, err), FLOE_EAUTH);
    msg = floe_error_message(err);
    CHECK(strstr(msg, "SignatureDoesNotMatch") && strstr(msg, "AWS_SECRET_ACCESS_KEY"));
    CHECK(strstr(msg, "TopSecretValue") == NULL);
    CHECK(!floe_error_retryable(err));
    CHECK_EQ_INT(m.n_seen, before + 1);                   /* not retried */
    floe_error_free(err);
    floe__fileio_free(io);
    mock_stop(&m);
    mock_free(&m);
}

/* ---- multipart uploads ------------------------------------------------------------------ */

static void reply_multipart(mock *m, size_t n, const seen_req *r, floe__buf *out)
{
    (void)n;
    if (strcmp(r->method, "POST") == 0 && strstr(r->target, "?uploads="))
        respond(out, 200, NULL, "<InitiateMultipartUploadResult><UploadId>u+1/=</UploadId>"
                                "</InitiateMultipartUploadResult>");
    else if (strcmp(r->method, "PUT") == 0 && strstr(r->target, "partNumber=")) {
        int part = atoi(strstr(r->target, "partNumber=") + 11);
        if (m->state == part)                      /* this part fails for good */
            respond(out, 500, NULL, "<Error><Code>InternalError</Code></Error>");
        else {
            char h[64];
            snprintf(h, sizeof h, "ETag: \"etag-%d\"\r\n", part);
            respond(out, 200, h, "");
        }
    } else if (strcmp(r->method, "POST") == 0)
        respond(out, 200, NULL, m->state == -1
                                    ? "<Error><Code>InternalError</Code></Error>"
                                    : "<CompleteMultipartUploadResult/>");
    else
        respond(out, 204, NULL, "");
}

static int write_pattern(floe__output *o, size_t total, size_t chunk)
{
    uint8_t *buf = floe__malloc(chunk);
    int rc = FLOE_OK;
    for (size_t done = 0; done < total && rc == FLOE_OK;) {
        size_t n = total - done < chunk ? total - done : chunk;
        for (size_t i = 0; i < n; i++)
            buf[i] = (uint8_t)((done + i) * 7 + 3);
        rc = floe__output_write(o, buf, n, NULL);
        done += n;
    }
    floe__free(buf);
    return rc;
}

TEST(multipart_upload_parts_and_completion)
{
    mock m;
    mock_start(&m, reply_multipart);
    floe__fileio *io = mock_io(&m, "AK", NULL);
    floe__output *o = NULL;
    size_t total = (5 << 20) * 2 + 1234;
    CHECK_EQ_INT(floe__fileio_open_output(io, "s3://bkt/big", &o, NULL), FLOE_OK);
    CHECK_EQ_INT(write_pattern(o, total, 1 << 20), FLOE_OK);
    CHECK_EQ_INT(o->close(o, NULL), FLOE_OK);
    floe__fileio_free(io);
    mock_stop(&m);
    CHECK_EQ_INT(m.n_seen, 5);
    CHECK_EQ_STR(m.seen[0].target, "/bkt/big?uploads=");
    CHECK(has_header(&m.seen[0], "x-amz-checksum-algorithm", "CRC32"));
    CHECK_EQ_STR(m.seen[1].target, "/bkt/big?partNumber=1&uploadId=u%2B1%2F%3D");
    CHECK_EQ_STR(m.seen[3].target, "/bkt/big?partNumber=3&uploadId=u%2B1%2F%3D");
    CHECK_EQ_INT(m.seen[1].body_len, 5 << 20);
    CHECK_EQ_INT(m.seen[3].body_len, 1234);
    size_t off = 0;
    bool same = true;
    for (size_t p = 1; p <= 3; p++) {
        CHECK(has_header(&m.seen[p], "x-amz-checksum-crc32", NULL));
        for (size_t i = 0; i < m.seen[p].body_len; i++, off++)
            same &= m.seen[p].body[i] == (uint8_t)(off * 7 + 3);
    }
    CHECK(same && off == total);
    CHECK_EQ_STR(m.seen[4].method, "POST");
    CHECK_EQ_STR(m.seen[4].target, "/bkt/big?uploadId=u%2B1%2F%3D");
    const char *xml = (const char *)m.seen[4].body;
    CHECK(strstr(xml, "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>"
                      "<ETag>&quot;etag-1&quot;</ETag><ChecksumCRC32>") == xml);
    CHECK(strstr(xml, "<PartNumber>3</PartNumber><ETag>&quot;etag-3&quot;</ETag>") != NULL);
    mock_free(&m);
}

TEST(failed_part_or_completion_or_abort_aborts_the_upload)
{
    for (int scenario = 0; scenario < 3; scenario++) {
        mock m;
        mock_start(&m, reply_multipart);
        m.state = scenario == 0 ? 2 : scenario == 1 ? -1 : 0;   /* part 2 / completion / none */
        floe__fileio *io = mock_io(&m, "AK", "{\"floe.s3.max-attempts\": \"2\"}");
        floe__output *o = NULL;
        CHECK_EQ_INT(floe__fileio_open_output(io, "s3://bkt/k", &o, NULL), FLOE_OK);
        int rc = write_pattern(o, (5 << 20) * 2 + 10, 1 << 16);
        if (scenario == 0) {
            CHECK_EQ_INT(rc, FLOE_EIO);
            CHECK_EQ_INT(floe__output_write(o, "x", 1, NULL), FLOE_EIO);   /* stays broken */
            CHECK_EQ_INT(o->close(o, NULL), FLOE_EIO);
        } else if (scenario == 1) {
            CHECK_EQ_INT(rc, FLOE_OK);
            CHECK_EQ_INT(o->close(o, NULL), FLOE_EIO);
        } else {
            CHECK_EQ_INT(rc, FLOE_OK);
            o->abort(o);
        }
        floe__fileio_free(io);
        mock_stop(&m);
        const seen_req *last = &m.seen[m.n_seen - 1];
        CHECK_EQ_STR(last->method, "DELETE");
        CHECK_EQ_STR(last->target, "/bkt/k?uploadId=u%2B1%2F%3D");
        size_t deletes = 0;
        for (size_t i = 0; i < m.n_seen; i++)
            deletes += strcmp(m.seen[i].method, "DELETE") == 0;
        CHECK_EQ_INT(deletes, 1);
        mock_free(&m);
    }
}

TEST(small_object_abort_sends_nothing)
{
    mock m;
    mock_start(&m, reply_ok);
    floe__fileio *io = mock_io(&m, "AK", NULL);
    floe__output *o = NULL;
    CHECK_EQ_INT(floe__fileio_open_output(io, "s3://bkt/k", &o, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__output_write(o, "abc", 3, NULL), FLOE_OK);
    o->abort(o);
    floe__fileio_free(io);
    mock_stop(&m);
    CHECK_EQ_INT(m.n_seen, 0);
    mock_free(&m);
}

/* ---- ranged reads -------------------------------------------------------------------------- */

/* The scripted object: byte i is obj_byte(i); its size and what goes wrong are set per test. */
enum { RD_OK, RD_200, RD_SHORT, RD_LONG, RD_WRONG_RANGE, RD_RESIZED, RD_404, RD_NO_LENGTH };
static uint64_t obj_size;

static uint8_t obj_byte(uint64_t i) { return (uint8_t)(i * 7 + 3); }

static bool check_bytes(const uint8_t *p, uint64_t off, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != obj_byte(off + i))
            return false;
    return true;
}

static void respond_bytes(floe__buf *out, int status, uint64_t from, uint64_t len,
                          const char *extra)
{
    floe__buf_printf(out, NULL, "HTTP/1.1 %d X\r\nContent-Length: %llu\r\n%s\r\n", status,
                     (unsigned long long)len, extra);
    floe__buf_reserve(out, len, NULL);
    for (uint64_t i = 0; i < len; i++)
        out->data[out->len++] = obj_byte(from + i);
}

static void reply_object(mock *m, size_t n, const seen_req *r, floe__buf *out)
{
    (void)n;
    if (strcmp(r->method, "HEAD") == 0) {
        if (m->state == RD_404)
            floe__buf_printf(out, NULL, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
        else if (m->state == RD_NO_LENGTH)
            floe__buf_printf(out, NULL, "HTTP/1.1 200 OK\r\nETag: \"e\"\r\n\r\n");
        else
            floe__buf_printf(out, NULL, "HTTP/1.1 200 OK\r\nContent-Length: %llu\r\n\r\n",
                             (unsigned long long)obj_size);
        return;
    }
    char range[128];
    unsigned long long a = 0, b = 0;
    if (!header_of(r, "Range", range, sizeof range) ||
        sscanf(range, "bytes=%llu-%llu", &a, &b) != 2 || b < a || b >= obj_size) {
        respond(out, 416, NULL, "<Error><Code>InvalidRange</Code></Error>");
        return;
    }
    uint64_t len = b - a + 1;
    char cr[160];
    snprintf(cr, sizeof cr, "Content-Range: bytes %llu-%llu/%llu\r\n", a, b,
             (unsigned long long)obj_size + (m->state == RD_RESIZED));
    if (m->state == RD_200)
        respond_bytes(out, 200, 0, obj_size, "");
    else if (m->state == RD_SHORT)
        respond_bytes(out, 206, a, len - 1, cr);
    else if (m->state == RD_LONG)
        respond_bytes(out, 206, a, len + 1, cr);
    else if (m->state == RD_WRONG_RANGE) {
        snprintf(cr, sizeof cr, "Content-Range: bytes %llu-%llu/%llu\r\n", a + 1, b + 1,
                 (unsigned long long)obj_size);
        respond_bytes(out, 206, a + 1, len, cr);
    } else
        respond_bytes(out, 206, a, len, cr);
}

/* The Range header of request i. */
static bool range_was(const mock *m, size_t i, const char *want)
{
    return i < m->n_seen && strcmp(m->seen[i].method, "GET") == 0 &&
           has_header(&m->seen[i], "Range", want);
}

TEST(ranged_reads_are_ranged_gets_and_follow_new_settings)
{
    mock m;
    mock_start(&m, reply_object);
    obj_size = (3 << 20) + 17;
    floe__fileio *io = mock_io(&m, "AKONE", NULL);
    floe__input *in = NULL;
    CHECK_EQ_INT(floe__fileio_open_input(io, "s3://bkt/dir/a b.parquet", &in, NULL), FLOE_OK);
    CHECK(in->size == obj_size);
    size_t big = (2 << 20) + 5;
    uint8_t *buf = floe__malloc(big);
    CHECK_EQ_INT(floe__input_read_at(in, 10, 100, buf, NULL), FLOE_OK);        /* small */
    CHECK(check_bytes(buf, 10, 100));
    CHECK_EQ_INT(floe__input_read_at(in, obj_size - big, big, buf, NULL), FLOE_OK);   /* big */
    CHECK(check_bytes(buf, obj_size - big, big));
    CHECK_EQ_INT(floe__input_read_at(in, obj_size - 1, 1, buf, NULL), FLOE_OK);     /* last */
    CHECK(buf[0] == obj_byte(obj_size - 1));
    CHECK_EQ_INT(floe__input_read_at(in, obj_size, 0, buf, NULL), FLOE_OK);         /* nothing */
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(floe__input_read_at(in, obj_size - 1, 2, buf, err), FLOE_EINVAL);  /* past end */
    CHECK(strstr(floe_error_message(err), "past its end") != NULL);
    size_t before = m.n_seen;
    /* fresh credentials: the open input uses them for its next read */
    json_t *j = js("{\"s3.access-key-id\": \"AKTWO\", \"s3.secret-access-key\": \"S2\"}");
    CHECK_EQ_INT(floe__fileio_s3_configure(io, j, NULL), FLOE_OK);
    json_decref(j);
    CHECK_EQ_INT(floe__input_read_at(in, 0, 8, buf, NULL), FLOE_OK);
    CHECK(check_bytes(buf, 0, 8));
    floe__input_close(in);
    floe__fileio_free(io);
    mock_stop(&m);
    CHECK_EQ_INT(m.n_seen, before + 1);              /* the empty and bad reads sent nothing */
    CHECK_EQ_STR(m.seen[0].method, "HEAD");
    CHECK_EQ_STR(m.seen[0].target, "/bkt/dir/a%20b.parquet");
    CHECK_EQ_STR(m.seen[1].target, "/bkt/dir/a%20b.parquet");
    CHECK(range_was(&m, 1, "bytes=10-109"));
    char want[64];
    snprintf(want, sizeof want, "bytes=%llu-%llu", (unsigned long long)(obj_size - big),
             (unsigned long long)(obj_size - 1));
    CHECK(range_was(&m, 2, want));
    snprintf(want, sizeof want, "bytes=%llu-%llu", (unsigned long long)(obj_size - 1),
             (unsigned long long)(obj_size - 1));
    CHECK(range_was(&m, 3, want));
    CHECK(range_was(&m, 4, "bytes=0-7"));
    char auth[512];
    CHECK(header_of(&m.seen[3], "Authorization", auth, sizeof auth) && strstr(auth, "=AKONE/"));
    CHECK(header_of(&m.seen[4], "Authorization", auth, sizeof auth) && strstr(auth, "=AKTWO/"));
    for (size_t i = 0; i < m.n_seen; i++)
        CHECK(has_header(&m.seen[i], "x-amz-content-sha256", "UNSIGNED-PAYLOAD"));
    floe_error_free(err);
    floe__free(buf);
    mock_free(&m);
}

/* Read [off, off + n) of s3://bkt/k in scenario `mode`: the code, and the
 * message into msg. */
static int read_in_mode(int mode, uint64_t size, uint64_t off, size_t n, char *msg, size_t cap)
{
    mock m;
    mock_start(&m, reply_object);
    m.state = mode;
    obj_size = size;
    floe__fileio *io = mock_io(&m, "AK", NULL);
    floe_error *err = floe_error_new();
    floe__input *in = NULL;
    uint8_t *buf = floe__malloc(n);
    int rc = floe__fileio_open_input(io, "s3://bkt/k", &in, err);
    if (rc == FLOE_OK)
        rc = floe__input_read_at(in, off, n, buf, err);
    snprintf(msg, cap, "%s", floe_error_message(err));
    floe__input_close(in);
    floe__fileio_free(io);
    mock_stop(&m);
    mock_free(&m);
    floe__free(buf);
    floe_error_free(err);
    return rc;
}

TEST(ranged_reads_that_do_not_return_the_range_fail_clearly)
{
    char msg[1024];
    CHECK_EQ_INT(read_in_mode(RD_OK, 1000, 0, 10, msg, sizeof msg), FLOE_OK);
    CHECK_EQ_INT(read_in_mode(RD_200, 1000, 0, 10, msg, sizeof msg), FLOE_EIO);
    CHECK(strstr(msg, "S3 GET bytes 0-9 of s3://bkt/k (endpoint http://127.0.0.1:"));
    CHECK(strstr(msg, "HTTP 200 instead of 206 Partial Content"));
    CHECK_EQ_INT(read_in_mode(RD_200, 3 << 20, 5, 100, msg, sizeof msg), FLOE_EIO);
    CHECK(strstr(msg, "S3 GET bytes 5-104 of s3://bkt/k") && strstr(msg, "longer than the 100"));
    CHECK_EQ_INT(read_in_mode(RD_200, 3 << 20, 5, 2 << 20, msg, sizeof msg), FLOE_EIO);  /* lent */
    CHECK(strstr(msg, "longer than the 2097152 bytes"));
    CHECK_EQ_INT(read_in_mode(RD_SHORT, 1000, 100, 100, msg, sizeof msg), FLOE_EIO);
    CHECK(strstr(msg, "S3 GET bytes 100-199 of s3://bkt/k") &&
          strstr(msg, "got 99 of the 100 bytes asked for"));
    CHECK_EQ_INT(read_in_mode(RD_SHORT, 3 << 20, 0, 2 << 20, msg, sizeof msg), FLOE_EIO);
    CHECK(strstr(msg, "got 2097151 of the 2097152 bytes"));
    CHECK_EQ_INT(read_in_mode(RD_LONG, 1000, 0, 100, msg, sizeof msg), FLOE_EIO);
    CHECK(strstr(msg, "got 101 of the 100 bytes"));
    CHECK_EQ_INT(read_in_mode(RD_LONG, 3 << 20, 0, 2 << 20, msg, sizeof msg), FLOE_EIO);
    CHECK(strstr(msg, "longer than the 2097152 bytes"));
    CHECK_EQ_INT(read_in_mode(RD_WRONG_RANGE, 1000, 10, 10, msg, sizeof msg), FLOE_EIO);
    CHECK(strstr(msg, "bytes 11-20 instead"));
    CHECK_EQ_INT(read_in_mode(RD_RESIZED, 1000, 10, 10, msg, sizeof msg), FLOE_EIO);
    CHECK(strstr(msg, "now 1001 bytes, not the 1000"));
    CHECK_EQ_INT(read_in_mode(RD_404, 1000, 0, 1, msg, sizeof msg), FLOE_ENOTFOUND);
    CHECK(strstr(msg, "S3 HEAD (to open) s3://bkt/k") && strstr(msg, "HTTP 404 Not Found"));
    CHECK_EQ_INT(read_in_mode(RD_NO_LENGTH, 1000, 0, 1, msg, sizeof msg), FLOE_EIO);
    CHECK(strstr(msg, "no usable Content-Length"));
    CHECK(strstr(msg, "TopSecretValue") == NULL);
}

/* ---- listings ------------------------------------------------------------------------------ */

#define PAGE1 LIST_HEAD "<Prefix>wh/t/</Prefix><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>" \
    "<NextContinuationToken>1/a+b=</NextContinuationToken>"                                     \
    CONTENTS("wh/t/a&amp;b &lt;c&gt;.parquet", "434234", T0)                                   \
    CONTENTS("wh/t/metadata/v1.json", "0", "1970-01-01T00:00:00.001Z") "</ListBucketResult>"
#define PAGE2 LIST_HEAD "<IsTruncated>false</IsTruncated>"                                     \
    CONTENTS("wh/t/z&#x263A;", "7", "2024-02-29T12:34:56Z") "</ListBucketResult>"

static void reply_list(mock *m, size_t n, const seen_req *r, floe__buf *out)
{
    (void)n;
    if (!strstr(r->target, "continuation-token="))
        respond(out, 200, NULL, PAGE1);
    else if (m->state == 1)                                    /* a damaged second page */
        respond(out, 200, NULL, LIST_HEAD "<IsTruncated>false</IsTruncated>"
                                CONTENTS("wh/t/x", "big", T0) "</ListBucketResult>");
    else
        respond(out, 200, NULL, PAGE2);
}

typedef struct listed_text {
    floe__buf text;
    int fail_at, n;
} listed_text;

static int collect_listed(void *ctx, const floe__listed *obj, floe_error *err)
{
    listed_text *lt = ctx;
    if (++lt->n == lt->fail_at)
        return floe__err_set(err, FLOE_EINTERRUPTED, "enough");
    floe__buf_printf(&lt->text, NULL, "%s %llu %lld\n", obj->uri, (unsigned long long)obj->size,
                     (long long)obj->mtime_ms);
    return FLOE_OK;
}

/* List `uri` from a server replying with reply_list in `state`; the
 * listing's text (then "ERR code: message") in out (caller frees). */
static int list_from_mock(mock *m, const char *uri, int state, int fail_at, const char *json,
                          floe__buf *out)
{
    mock_start(m, reply_list);
    m->state = state;
    floe__fileio *io = mock_io(m, "AK", json);
    listed_text lt = {.fail_at = fail_at};
    floe__buf_init(&lt.text, 0);
    floe_error *err = floe_error_new();
    int rc = floe__fileio_list(io, uri, collect_listed, &lt, err);
    if (rc != FLOE_OK)
        floe__buf_printf(&lt.text, NULL, "ERR %s: %s", floe_code_name(rc), floe_error_message(err));
    floe__buf_putc(&lt.text, 0, NULL);
    *out = lt.text;
    floe_error_free(err);
    floe__fileio_free(io);
    mock_stop(m);
    return rc;
}

TEST(listing_follows_continuation_tokens_path_style)
{
    mock m;
    floe__buf got;
    CHECK_EQ_INT(list_from_mock(&m, "s3://bkt/wh/t", 0, 0, "{\"floe.s3.list-page-size\": 2}",
                                &got), FLOE_OK);
    CHECK_EQ_STR((const char *)got.data,
                 "s3://bkt/wh/t/a&b <c>.parquet 434234 1255369830000\n"
                 "s3://bkt/wh/t/metadata/v1.json 0 1\n"
                 "s3://bkt/wh/t/z\xE2\x98\xBA 7 1709210096000\n");
    CHECK_EQ_INT(m.n_seen, 2);
    CHECK_EQ_STR(m.seen[0].method, "GET");
    CHECK_EQ_STR(m.seen[0].target, "/bkt/?list-type=2&max-keys=2&prefix=wh%2Ft%2F");
    CHECK_EQ_STR(m.seen[1].target,
                 "/bkt/?continuation-token=1%2Fa%2Bb%3D&list-type=2&max-keys=2&prefix=wh%2Ft%2F");
    char auth[512];
    CHECK(header_of(&m.seen[1], "Authorization", auth, sizeof auth) &&
          strstr(auth, "Credential=AK/"));
    floe__buf_free(&got);
    mock_free(&m);
    /* a prefix ending in '/' is the same directory; s3a:// stays s3a:// */
    CHECK_EQ_INT(list_from_mock(&m, "s3a://bkt/wh/t/", 0, 0, NULL, &got), FLOE_OK);
    CHECK(strncmp((const char *)got.data, "s3a://bkt/wh/t/a&b <c>.parquet 434234", 37) == 0);
    CHECK_EQ_STR(m.seen[0].target, "/bkt/?list-type=2&prefix=wh%2Ft%2F");
    floe__buf_free(&got);
    mock_free(&m);
}

TEST(listing_virtual_hosted_requests_the_bucket_host)
{
    /* endpoint localhost: curl resolves BUCKET.localhost to the loopback address */
    mock m;
    mock_start(&m, reply_list);
    char json[160];
    snprintf(json, sizeof json, "{\"s3.endpoint\": \"http://localhost:%d\", "
                                "\"s3.path-style-access\": \"false\"}", m.port);
    floe__fileio *io = mock_io(&m, "AK", json);
    listed_text lt = {0};
    floe__buf_init(&lt.text, 0);
    CHECK_EQ_INT(floe__fileio_list(io, "s3://bkt/wh/t", collect_listed, &lt, NULL), FLOE_OK);
    CHECK_EQ_INT(lt.n, 3);
    CHECK(strstr((const char *)lt.text.data, "s3://bkt/wh/t/metadata/v1.json 0 1\n") != NULL);
    floe__fileio_free(io);
    mock_stop(&m);
    CHECK_EQ_INT(m.n_seen, 2);
    CHECK_EQ_STR(m.seen[0].target, "/?list-type=2&prefix=wh%2Ft%2F");
    CHECK_EQ_STR(m.seen[1].target, "/?continuation-token=1%2Fa%2Bb%3D&list-type=2&prefix=wh%2Ft%2F");
    char host[128], want[128];
    snprintf(want, sizeof want, "bkt.localhost:%d", m.port);
    CHECK(header_of(&m.seen[0], "Host", host, sizeof host) && strcmp(host, want) == 0);
    floe__buf_free(&lt.text);
    mock_free(&m);
}

TEST(listing_stops_at_a_damaged_page_or_the_callback)
{
    mock m;
    floe__buf got;
    CHECK_EQ_INT(list_from_mock(&m, "s3://bkt/wh/t", 1, 0, NULL, &got), FLOE_EIO);
    const char *text = (const char *)got.data;
    CHECK(strstr(text, "s3://bkt/wh/t/metadata/v1.json 0 1\nERR FLOE_EIO: S3 ListObjectsV2 "
                       "(page 2) of s3://bkt/wh/t/ (endpoint http://127.0.0.1:") != NULL);
    CHECK(strstr(text, "key 'wh/t/x': no <Size> or a bad one") != NULL);
    CHECK(strstr(text, "wh/t/x ") == NULL);
    floe__buf_free(&got);
    mock_free(&m);
    CHECK_EQ_INT(list_from_mock(&m, "s3://bkt/wh/t", 0, 2, NULL, &got), FLOE_EINTERRUPTED);
    CHECK_EQ_STR((const char *)got.data, "s3://bkt/wh/t/a&b <c>.parquet 434234 1255369830000\n"
                                         "ERR FLOE_EINTERRUPTED: enough");
    CHECK_EQ_INT(m.n_seen, 1);
    floe__buf_free(&got);
    mock_free(&m);
    CHECK_EQ_INT(list_from_mock(&m, "s3://", 0, 0, NULL, &got), FLOE_EINVAL);
    CHECK_EQ_INT(m.n_seen, 0);
    floe__buf_free(&got);
    mock_free(&m);
}

TEST(out_of_memory_while_reading_and_listing)
{
    mock m;
    mock_start(&m, reply_object);
    obj_size = 1000;
    floe__fileio *io = mock_io(&m, "AK", NULL);
    uint8_t buf[100];
    bool done_read = false;
    for (long n = 0; n < 400 && !done_read; n++) {
        floe__input *in = NULL;
        floe__alloc_fail_after(n);
        int rc = floe__fileio_open_input(io, "s3://bkt/k", &in, NULL);
        if (rc == FLOE_OK)
            rc = floe__input_read_at(in, 5, sizeof buf, buf, NULL);
        floe__alloc_fail_after(-1);
        floe__input_close(in);
        CHECK(rc == FLOE_OK || rc == FLOE_ENOMEM);
        done_read = rc == FLOE_OK && check_bytes(buf, 5, sizeof buf);
    }
    CHECK(done_read);
    floe__fileio_free(io);
    mock_stop(&m);
    mock_free(&m);
    mock_start(&m, reply_list);
    io = mock_io(&m, "AK", NULL);
    bool done_list = false;
    for (long n = 0; n < 400 && !done_list; n++) {
        listed_text lt = {0};
        floe__buf_init(&lt.text, 0);
        floe__alloc_fail_after(n);
        int rc = floe__fileio_list(io, "s3://bkt/wh/t", collect_listed, &lt, NULL);
        floe__alloc_fail_after(-1);
        CHECK(rc == FLOE_OK || rc == FLOE_ENOMEM);
        done_list = rc == FLOE_OK && lt.n == 3;
        floe__buf_free(&lt.text);
    }
    CHECK(done_list);
    floe__fileio_free(io);
    mock_stop(&m);
    mock_free(&m);
}

TEST(out_of_memory_while_writing_and_closing)
{
    /* every allocation in turn fails; nothing leaks, nothing crashes */
    mock m;
    mock_start(&m, reply_multipart);
    floe__fileio *io = mock_io(&m, "AK", NULL);
    for (long n = 0; n < 200; n++) {
        floe__output *o = NULL;
        floe__alloc_fail_after(n);
        int rc = floe__fileio_open_output(io, "s3://bkt/k", &o, NULL);
        if (rc == FLOE_OK)
            rc = floe__output_write(o, "abc", 3, NULL);
        if (rc == FLOE_OK)
            rc = o->close(o, NULL);
        else if (o)
            o->abort(o);
        floe__alloc_fail_after(-1);
        CHECK(rc == FLOE_OK || rc == FLOE_ENOMEM);
        if (rc == FLOE_OK && n > 50)
            break;
    }
    floe__fileio_free(io);
    mock_stop(&m);
    mock_free(&m);
}

int main(void)
{
    RUN(uris_split_into_bucket_and_key);
    RUN(urls_path_style_virtual_hosted_and_aws);
    RUN(xml_text_and_root);
    RUN(xml_next_walks_repeated_elements);
    RUN(last_modified_times_parse_to_ms);
    RUN(list_pages_are_checked_whole_then_reported);
    RUN(classification);
    RUN(settings_are_checked_and_overridden);
    RUN(put_is_signed_with_checksum_and_unsigned_payload);
    RUN(unsigned_without_credentials);
    RUN(transient_failures_are_retried);
    RUN(permanent_failures_give_up_with_clear_errors);
    RUN(multipart_upload_parts_and_completion);
    RUN(failed_part_or_completion_or_abort_aborts_the_upload);
    RUN(small_object_abort_sends_nothing);
    RUN(out_of_memory_while_writing_and_closing);
    RUN(ranged_reads_are_ranged_gets_and_follow_new_settings);
    RUN(ranged_reads_that_do_not_return_the_range_fail_clearly);
    RUN(listing_follows_continuation_tokens_path_style);
    RUN(listing_virtual_hosted_requests_the_bucket_host);
    RUN(listing_stops_at_a_damaged_page_or_the_callback);
    RUN(out_of_memory_while_reading_and_listing);
    return UNIT_DONE();
}
