/*
 * test_rest.c - the REST catalog client against a scripted HTTP server in
 * this process (a thread on a loopback port): paths and query strings the
 * client sends (prefix, namespace separator, encoding, pagination), the
 * error model (409, 5xx, 400 with an ErrorModel, lost connections) as floe
 * codes, retries of reads but never of commits, OAuth2 token fetch and
 * refresh after a 401, and that secrets stay out of messages.
 *
 * The end-to-end behaviour against Apache's REST server is tested from
 * Python (tests/test_rest_*.py); this file pins down the client's own
 * decisions, byte for byte.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "catalog/rest_internal.h"
#include "unit.h"

/* ---- a scripted server -------------------------------------------------------------- */

#define MAX_STEPS 32

typedef struct step {
    int status;              /* 0: close the connection without answering */
    const char *body;
} step;

typedef struct seen {
    char method[8];
    char target[512];
    char auth[256];
    char body[4096];
} seen;

typedef struct server {
    int fd, port;
    pthread_t thread;
    step steps[MAX_STEPS];
    int n_steps, next;
    seen log[MAX_STEPS];
    int n_log;
    const char *config;      /* answer to GET /v1/config (not scripted) */
    const char *token;       /* answer to POST /v1/oauth/tokens (not scripted) */
    int token_calls;
} server;

static const char *find(const char *hay, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (strncasecmp(hay + i, needle, k) == 0)
            return hay + i;
    return NULL;
}

static void answer(int c, int status, const char *body)
{
    char head[256];
    size_t n = body ? strlen(body) : 0;
    int h = snprintf(head, sizeof head,
                     "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n", status, n);
    if (write(c, head, (size_t)h) < 0 || (n && write(c, body, n) < 0))
        return;
}

static void serve_one(server *s, int c)
{
    char buf[16384];
    size_t len = 0;
    const char *end = NULL;
    while (!end && len < sizeof buf - 1) {
        ssize_t r = read(c, buf + len, sizeof buf - 1 - len);
        if (r <= 0)
            return;
        len += (size_t)r;
        end = find(buf, len, "\r\n\r\n");
    }
    if (!end)
        return;
    size_t head = (size_t)(end - buf) + 4, want = 0;
    const char *cl = find(buf, head, "\r\nContent-Length:");
    if (cl)
        want = strtoul(cl + 17, NULL, 10);
    while (len < head + want && len < sizeof buf - 1) {
        ssize_t r = read(c, buf + len, sizeof buf - 1 - len);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    seen q = {0};
    sscanf(buf, "%7s %511s", q.method, q.target);
    const char *au = find(buf, head, "\r\nAuthorization: ");
    if (au)
        snprintf(q.auth, sizeof q.auth, "%.*s", (int)strcspn(au + 17, "\r"), au + 17);
    snprintf(q.body, sizeof q.body, "%s", buf + head);
    if (strncmp(q.target, "/v1/config", 10) == 0 && s->config)
        return answer(c, 200, s->config);
    if (strcmp(q.target, "/v1/oauth/tokens") == 0 && s->token) {
        s->token_calls++;
        if (s->n_log < MAX_STEPS)
            s->log[s->n_log++] = q;
        return answer(c, 200, s->token);
    }
    if (s->n_log < MAX_STEPS)
        s->log[s->n_log++] = q;
    if (s->next >= s->n_steps)
        return answer(c, 500, "{\"error\":{\"message\":\"unscripted\",\"type\":\"X\"}}");
    step st = s->steps[s->next++];
    if (st.status)
        answer(c, st.status, st.body);
}

static void *serve(void *arg)
{
    server *s = arg;
    for (;;) {
        int c = accept(s->fd, NULL, NULL);
        if (c < 0)
            return NULL;
        serve_one(s, c);
        close(c);
    }
}

static void server_start(server *s)
{
    memset(s, 0, sizeof *s);
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t n = sizeof a;
    if (bind(s->fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(s->fd, 16) != 0 ||
        getsockname(s->fd, (struct sockaddr *)&a, &n) != 0)
        abort();
    s->port = ntohs(a.sin_port);
    s->config = "{\"defaults\":{},\"overrides\":{}}";
}

static void server_run(server *s)
{
    pthread_create(&s->thread, NULL, serve, s);
}

static void server_stop(server *s)
{
    shutdown(s->fd, SHUT_RDWR);
    close(s->fd);
    pthread_join(s->thread, NULL);
}

static void script(server *s, int status, const char *body)
{
    s->steps[s->n_steps++] = (step){status, body};
}

/* ---- helpers ---------------------------------------------------------------------------- */

static const char *METADATA =
    "{\"format-version\":2,\"table-uuid\":\"9c12d441-03fe-4693-9a96-a0705ddf69c1\","
    "\"location\":\"file:///w/ns/t\",\"last-sequence-number\":0,\"last-updated-ms\":1,"
    "\"last-column-id\":1,\"current-schema-id\":0,\"schemas\":[{\"type\":\"struct\","
    "\"schema-id\":0,\"fields\":[{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":"
    "\"long\"}]}],\"default-spec-id\":0,\"partition-specs\":[{\"spec-id\":0,\"fields\":[]}],"
    "\"last-partition-id\":999,\"default-sort-order-id\":0,\"sort-orders\":[{\"order-id\":0,"
    "\"fields\":[]}],\"properties\":{},\"current-snapshot-id\":-1,\"refs\":{},"
    "\"snapshots\":[],\"snapshot-log\":[],\"metadata-log\":[]}";

static char *table_reply(const char *extra)
{
    return floe__sprintf("{\"metadata-location\":\"file:///w/ns/t/metadata/00000-a.metadata.json"
                         "\",\"metadata\":%s%s}", METADATA, extra ? extra : "");
}

static floe__catalog *open_at(server *s, const char *token, const char *credential,
                              const char *warehouse)
{
    char uri[64];
    snprintf(uri, sizeof uri, "http://127.0.0.1:%d/", s->port);
    floe_connect_options o;
    floe_connect_options_init(&o, sizeof o);
    o.catalog = uri;
    o.token = token;
    o.credential = credential;
    o.warehouse = warehouse;
    floe__catalog *c = NULL;
    floe_error *err = floe_error_new();
    int rc = floe__catalog_rest_open(&o, &c, err);
    if (rc != FLOE_OK)
        fprintf(stderr, "open: %s\n", floe_error_message(err));
    floe_error_free(err);
    return c;
}

static json_t *reqs_updates(void)
{
    return json_pack("[{s:s, s:s}]", "type", "assert-table-uuid", "uuid", "u");
}

/* ---- tests ---------------------------------------------------------------------------------- */

TEST(config_prefix_overrides_and_paths)
{
    server s;
    server_start(&s);
    s.config = "{\"defaults\":{\"prefix\":\"dflt\",\"namespace-separator\":\"%2E\"},"
               "\"overrides\":{\"prefix\":\"cat/1\",\"namespace-separator\":\"%1F\"}}";
    script(&s, 204, NULL);
    script(&s, 404, "{\"error\":{\"message\":\"no\",\"type\":\"NoSuchNamespaceException\"}}");
    server_run(&s);
    floe__catalog *c = open_at(&s, NULL, NULL, "my wh");
    CHECK(c != NULL);
    bool exists = false;
    CHECK_EQ_INT(floe__catalog_namespace_exists(c, "a.b c", &exists, NULL), FLOE_OK);
    CHECK(exists);
    CHECK_EQ_INT(floe__catalog_namespace_exists(c, "x", &exists, NULL), FLOE_OK);
    CHECK(!exists);
    floe__catalog_free(c);
    server_stop(&s);
    CHECK_EQ_STR(s.log[0].method, "HEAD");
    CHECK_EQ_STR(s.log[0].target, "/v1/cat/1/namespaces/a%1Fb%20c");
    CHECK_EQ_STR(s.log[1].target, "/v1/cat/1/namespaces/x");
}

TEST(lists_follow_page_tokens)
{
    server s;
    server_start(&s);
    script(&s, 200, "{\"namespaces\":[[\"p\",\"a\"],[\"p\",\"b\"]],\"next-page-token\":\"t 1\"}");
    script(&s, 200, "{\"namespaces\":[[\"p\",\"c\"]],\"next-page-token\":null}");
    script(&s, 200, "{\"identifiers\":[{\"namespace\":[\"p\"],\"name\":\"t1\"}],"
                    "\"next-page-token\":\"x\"}");
    script(&s, 200, "{\"identifiers\":[{\"namespace\":[\"p\"],\"name\":\"t2\"}]}");
    server_run(&s);
    floe__catalog *c = open_at(&s, NULL, NULL, NULL);
    json_t *names = NULL;
    CHECK_EQ_INT(floe__catalog_list_namespaces(c, "p", &names, NULL), FLOE_OK);
    CHECK_EQ_INT(json_array_size(names), 3);
    CHECK_EQ_STR(json_string_value(json_array_get(names, 2)), "p.c");
    json_decref(names);
    CHECK_EQ_INT(floe__catalog_list_tables(c, "p", &names, NULL), FLOE_OK);
    CHECK_EQ_INT(json_array_size(names), 2);
    CHECK_EQ_STR(json_string_value(json_array_get(names, 1)), "t2");
    json_decref(names);
    floe__catalog_free(c);
    server_stop(&s);
    CHECK_EQ_STR(s.log[0].target, "/v1/namespaces?parent=p");
    CHECK_EQ_STR(s.log[1].target, "/v1/namespaces?pageToken=t%201&parent=p");
    CHECK_EQ_STR(s.log[2].target, "/v1/namespaces/p/tables");
    CHECK_EQ_STR(s.log[3].target, "/v1/namespaces/p/tables?pageToken=x");
}

TEST(commit_errors_map_to_codes_and_are_never_repeated)
{
    server s;
    server_start(&s);
    script(&s, 409, "{\"error\":{\"message\":\"branch main changed\","
                    "\"type\":\"CommitFailedException\",\"code\":409}}");
    script(&s, 502, "<html>bad gateway</html>");
    script(&s, 500, "{\"error\":{\"message\":\"boom\",\"type\":\"RuntimeException\"}}");
    script(&s, 400, "{\"error\":{\"message\":\"bad update\",\"type\":\"BadRequestException\","
                    "\"code\":400,\"stack\":[\"at x\"]}}");
    script(&s, 0, NULL);                                  /* connection lost */
    server_run(&s);
    floe__catalog *c = open_at(&s, NULL, NULL, NULL);
    json_t *r = reqs_updates(), *u = json_array();
    floe__loaded_table *t = NULL;
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(floe__catalog_commit_table(c, "ns", "t", r, u, &t, err), FLOE_ECONFLICT);
    CHECK(strstr(floe_error_message(err), "CommitFailedException: branch main changed") != NULL);
    floe_error_clear(err);
    CHECK_EQ_INT(floe__catalog_commit_table(c, "ns", "t", r, u, &t, err), FLOE_EUNKNOWN_OUTCOME);
    CHECK(strstr(floe_error_message(err), "HTTP 502 Bad Gateway") != NULL);
    CHECK(floe_error_retryable(err));
    floe_error_clear(err);
    CHECK_EQ_INT(floe__catalog_commit_table(c, "ns", "t", r, u, &t, err), FLOE_EUNKNOWN_OUTCOME);
    floe_error_clear(err);
    CHECK_EQ_INT(floe__catalog_commit_table(c, "ns", "t", r, u, &t, err), FLOE_ECATALOG);
    CHECK(strstr(floe_error_message(err), "HTTP 400 Bad Request: BadRequestException: bad "
                                          "update") != NULL);
    CHECK(strstr(floe_error_message(err), "at x") == NULL);
    floe_error_clear(err);
    CHECK_EQ_INT(floe__catalog_commit_table(c, "ns", "t", r, u, &t, err), FLOE_EUNKNOWN_OUTCOME);
    CHECK(strstr(floe_error_message(err), "may or may not have been applied") != NULL);
    floe__catalog_free(c);
    server_stop(&s);
    CHECK_EQ_INT(s.n_log, 5);                             /* one request per commit */
    CHECK_EQ_STR(s.log[0].method, "POST");
    CHECK_EQ_STR(s.log[0].target, "/v1/namespaces/ns/tables/t");
    json_t *body = json_loads(s.log[0].body, 0, NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(json_object_get(body, "identifier"), "name")),
                 "t");
    CHECK(json_equal(json_object_get(body, "requirements"), r));
    CHECK(json_equal(json_object_get(body, "updates"), u));
    json_decref(body);
    json_decref(r);
    json_decref(u);
    floe_error_free(err);
}

TEST(reads_are_retried_and_load_keeps_the_vended_config)
{
    server s;
    server_start(&s);
    char *reply = table_reply(",\"config\":{\"s3.endpoint\":\"http://e\",\"n\":1},"
                              "\"storage-credentials\":[{\"prefix\":\"file:///w/ns\",\"config\":"
                              "{\"s3.access-key-id\":\"k2\"}},{\"prefix\":\"file:///w/other\","
                              "\"config\":{\"s3.access-key-id\":\"no\"}}]");
    script(&s, 503, NULL);
    script(&s, 0, NULL);
    script(&s, 200, reply);
    script(&s, 404, "{\"error\":{\"message\":\"Table does not exist: ns.u\","
                    "\"type\":\"NoSuchTableException\"}}");
    server_run(&s);
    floe__catalog *c = open_at(&s, NULL, NULL, NULL);
    floe__loaded_table *t = NULL;
    CHECK_EQ_INT(floe__catalog_load_table(c, "ns", "t", &t, NULL), FLOE_OK);
    CHECK_EQ_STR(t->metadata_location, "file:///w/ns/t/metadata/00000-a.metadata.json");
    CHECK_EQ_STR(json_string_value(json_object_get(t->config, "s3.endpoint")), "http://e");
    CHECK_EQ_STR(json_string_value(json_object_get(t->config, "s3.access-key-id")), "k2");
    CHECK(json_object_get(t->config, "n") == NULL);
    CHECK_EQ_INT(floe__metadata_current_snapshot_id(t->metadata), -1);
    floe__loaded_table_free(t);
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(floe__catalog_load_table(c, "ns", "u", &t, err), FLOE_ENOTFOUND);
    CHECK(strstr(floe_error_message(err), "Table does not exist: ns.u") != NULL);
    floe_error_free(err);
    floe__catalog_free(c);
    server_stop(&s);
    CHECK_EQ_INT(s.n_log, 4);
    floe__free(reply);
}

TEST(creates_send_the_table_and_409_is_exists)
{
    server s;
    server_start(&s);
    char *reply = table_reply(NULL);
    script(&s, 200, "{\"namespace\":[\"ns\"],\"properties\":{}}");
    script(&s, 409, "{\"error\":{\"message\":\"Namespace already exists: ns\","
                    "\"type\":\"AlreadyExistsException\"}}");
    script(&s, 200, reply);
    script(&s, 409, "{\"error\":{\"message\":\"Table already exists: ns.t\","
                    "\"type\":\"AlreadyExistsException\"}}");
    server_run(&s);
    floe__catalog *c = open_at(&s, NULL, NULL, NULL);
    CHECK_EQ_INT(floe__catalog_create_namespace(c, "ns", NULL, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__catalog_create_namespace(c, "ns", NULL, NULL), FLOE_EEXISTS);
    json_t *schema = json_loads("{\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,"
                                "\"name\":\"id\",\"required\":true,\"type\":\"long\"}]}", 0, NULL);
    json_t *props = json_pack("{s:s}", "write.data.path", "file:///d");
    floe__table_def def = {.schema = schema, .properties = props};
    floe__loaded_table *t = NULL;
    CHECK_EQ_INT(floe__catalog_create_table(c, "ns", "t", &def, &t, NULL), FLOE_OK);
    floe__loaded_table_free(t);
    CHECK_EQ_INT(floe__catalog_create_table(c, "ns", "t", &def, &t, NULL), FLOE_EEXISTS);
    floe__catalog_free(c);
    server_stop(&s);
    CHECK_EQ_STR(s.log[0].body, "{\"namespace\":[\"ns\"],\"properties\":{}}");
    CHECK_EQ_STR(s.log[2].target, "/v1/namespaces/ns/tables");
    json_t *body = json_loads(s.log[2].body, 0, NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(body, "name")), "t");
    CHECK(json_equal(json_object_get(body, "schema"), schema));
    CHECK(json_is_false(json_object_get(body, "stage-create")));
    CHECK(json_object_get(body, "location") == NULL);
    json_t *p = json_object_get(body, "properties");
    CHECK_EQ_STR(json_string_value(json_object_get(p, "format-version")), "2");
    CHECK_EQ_STR(json_string_value(json_object_get(p, "write.data.path")), "file:///d");
    json_decref(body);
    json_decref(schema);
    json_decref(props);
    floe__free(reply);
}

TEST(oauth2_fetches_once_and_refreshes_after_a_401)
{
    server s;
    server_start(&s);
    s.token = "{\"access_token\":\"issued-tok\",\"token_type\":\"Bearer\",\"expires_in\":3600}";
    script(&s, 401, "{\"error\":{\"message\":\"expired\",\"type\":\"NotAuthorizedException\"}}");
    script(&s, 204, NULL);
    script(&s, 204, NULL);
    server_run(&s);
    floe__catalog *c = open_at(&s, NULL, "my-id:my secret&x", NULL);
    CHECK(c != NULL);
    bool exists = false;
    CHECK_EQ_INT(floe__catalog_namespace_exists(c, "ns", &exists, NULL), FLOE_OK);
    CHECK(exists);
    CHECK_EQ_INT(floe__catalog_namespace_exists(c, "ns", &exists, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__catalog_rest_token_fetches(c), 2);
    floe__catalog_free(c);
    server_stop(&s);
    CHECK_EQ_INT(s.token_calls, 2);
    CHECK_EQ_STR(s.log[0].target, "/v1/oauth/tokens");
    CHECK_EQ_STR(s.log[0].body, "grant_type=client_credentials&client_id=my-id&client_secret="
                                "my%20secret%26x&scope=catalog");
    CHECK_EQ_STR(s.log[1].auth, "Bearer issued-tok");    /* refused */
    CHECK_EQ_STR(s.log[2].target, "/v1/oauth/tokens");   /* refreshed */
    CHECK_EQ_STR(s.log[3].auth, "Bearer issued-tok");
    CHECK_EQ_INT(s.n_log, 5);
}

TEST(a_refused_static_token_is_an_auth_error_without_the_token)
{
    server s;
    server_start(&s);
    s.config = NULL;                                      /* config is scripted here */
    script(&s, 403, "{\"error\":{\"message\":\"forbidden\",\"type\":\"ForbiddenException\"}}");
    server_run(&s);
    char uri[64];
    snprintf(uri, sizeof uri, "http://127.0.0.1:%d", s.port);
    floe_connect_options o;
    floe_connect_options_init(&o, sizeof o);
    o.catalog = uri;
    o.token = "sekrit-token-value";
    floe__catalog *c = NULL;
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(floe__catalog_rest_open(&o, &c, err), FLOE_EAUTH);
    CHECK(strstr(floe_error_message(err), "HTTP 403 Forbidden") != NULL);
    CHECK(strstr(floe_error_message(err), "sekrit") == NULL);
    floe_error_free(err);
    server_stop(&s);
    CHECK_EQ_STR(s.log[0].auth, "Bearer sekrit-token-value");
}

TEST(unreachable_is_a_network_error_and_a_commit_not_sent_is_not_unknown)
{
    server s;
    server_start(&s);
    server_run(&s);
    floe__catalog *c = open_at(&s, NULL, NULL, NULL);
    server_stop(&s);                                      /* nobody listens any more */
    json_t *r = reqs_updates(), *u = json_array();
    floe__loaded_table *t = NULL;
    CHECK_EQ_INT(floe__catalog_commit_table(c, "ns", "t", r, u, &t, NULL), FLOE_ENET);
    json_decref(r);
    json_decref(u);
    floe__catalog_free(c);
}

TEST(status_mapping)
{
    CHECK_EQ_INT(floe__rest_status_code(409, FLOE_REST_COMMIT), FLOE_ECONFLICT);
    CHECK_EQ_INT(floe__rest_status_code(409, FLOE_REST_CREATE), FLOE_EEXISTS);
    CHECK_EQ_INT(floe__rest_status_code(504, FLOE_REST_COMMIT), FLOE_EUNKNOWN_OUTCOME);
    CHECK_EQ_INT(floe__rest_status_code(503, FLOE_REST_READ), FLOE_ENET);
    CHECK_EQ_INT(floe__rest_status_code(422, FLOE_REST_COMMIT), FLOE_ECATALOG);
    CHECK_EQ_INT(floe__rest_status_code(419, FLOE_REST_READ), FLOE_EAUTH);
    CHECK_EQ_INT(floe__rest_status_code(429, FLOE_REST_COMMIT), FLOE_ENET);
    CHECK_EQ_INT(floe__rest_status_code(501, FLOE_REST_READ), FLOE_EUNSUPPORTED);
    char out[8];
    floe__rest_excerpt("abc\x01\ndefghij", 12, out, sizeof out);
    CHECK_EQ_STR(out, "abc?...");
    floe__rest_excerpt("ab\x01", 3, out, sizeof out);
    CHECK_EQ_STR(out, "ab?");
}

/* SPEC 7.4 through the public API, with an error object: the catalog
 * refuses the commit (a 400, which need not mean it did not land) and the
 * reload that would tell fails too.  The outcome is unknown: the code says
 * so, and freeing the commit keeps the data file its snapshot may
 * reference. */
TEST(an_untellable_commit_is_unknown_and_keeps_its_files)
{
    char dir[256];
    unit_make_tmp(dir, sizeof dir, "rest-unknown");
    char *md = floe__sprintf("{\"format-version\":2,\"table-uuid\":\"9c12d441-03fe-4693-9a96-"
                             "a0705ddf69c1\",\"location\":\"file://%s/t\",%s", dir,
                             strstr(METADATA, "\"last-sequence-number\""));
    char *reply = floe__sprintf("{\"metadata-location\":\"file://%s/t/metadata/00000-a.metadata"
                                ".json\",\"metadata\":%s}", dir, md);
    server s;
    server_start(&s);
    script(&s, 200, reply);                               /* floe_table_open */
    script(&s, 400, "{\"error\":{\"message\":\"nope\",\"type\":\"BadRequestException\"}}");
    for (int i = 0; i < 3; i++)                           /* every reload try fails */
        script(&s, 503, NULL);
    server_run(&s);
    char uri[64];
    snprintf(uri, sizeof uri, "http://127.0.0.1:%d/", s.port);
    floe_connect_options o;
    floe_connect_options_init(&o, sizeof o);
    o.catalog = uri;
    floe_error *err = floe_error_new();
    floe_catalog *cat = NULL;
    floe_table *t = NULL;
    floe_file_writer *w = NULL;
    floe_commit *c = NULL;
    floe_row *row = NULL;
    const char *path = NULL;
    CHECK_EQ_INT(floe_catalog_open(&o, &cat, err), FLOE_OK);
    CHECK_EQ_INT(floe_table_open(cat, "ns.t", NULL, NULL, &t, err), FLOE_OK);
    CHECK_EQ_INT(floe_data_writer_new(t, NULL, &w, err), FLOE_OK);
    CHECK_EQ_INT(floe_row_new(floe_table_schema(t), &row, err), FLOE_OK);
    CHECK_EQ_INT(floe_row_set_json(row, "{\"id\": 7}", 9, err), FLOE_OK);
    CHECK_EQ_INT(floe_file_writer_write(w, row, &path, NULL, err), FLOE_OK);
    char *kept = floe__strdup(floe__local_path(path));
    CHECK_EQ_INT(floe_commit_new(t, &c, err), FLOE_OK);
    CHECK_EQ_INT(floe_commit_add_files(c, w, err), FLOE_OK);
    CHECK_EQ_INT(floe_commit_submit(c, -1, NULL, err), FLOE_EUNKNOWN_OUTCOME);
    CHECK_EQ_INT(floe_error_code(err), FLOE_EUNKNOWN_OUTCOME);
    CHECK(floe_error_retryable(err));
    CHECK(strstr(floe_error_message(err), "cannot be told") != NULL);
    floe_commit_free(c);
    CHECK(access(kept, F_OK) == 0);                       /* the data file stays */
    floe_row_free(row);
    floe_table_free(t);
    floe_catalog_free(cat);
    floe_error_free(err);
    server_stop(&s);
    CHECK_EQ_INT(s.n_log, 5);
    floe__free(kept);
    floe__free(reply);
    floe__free(md);
    unit_remove_tmp(dir);
}

int main(void)
{
    RUN(config_prefix_overrides_and_paths);
    RUN(lists_follow_page_tokens);
    RUN(commit_errors_map_to_codes_and_are_never_repeated);
    RUN(reads_are_retried_and_load_keeps_the_vended_config);
    RUN(creates_send_the_table_and_409_is_exists);
    RUN(oauth2_fetches_once_and_refreshes_after_a_401);
    RUN(a_refused_static_token_is_an_auth_error_without_the_token);
    RUN(unreachable_is_a_network_error_and_a_commit_not_sent_is_not_unknown);
    RUN(status_mapping);
    RUN(an_untellable_commit_is_unknown_and_keeps_its_files);
    return UNIT_DONE();
}
