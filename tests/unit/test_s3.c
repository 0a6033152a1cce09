/*
 * test_s3.c - unit tests of the S3 FileIO without an S3 server: URIs and
 * URLs, the XML reader, error classification, settings, and the request
 * and upload logic against a scripted HTTP server on a loopback socket
 * (retries, multipart uploads, aborts, signing headers).  The real-server
 * tests are tests/test_s3*.py.
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
    return UNIT_DONE();
}
