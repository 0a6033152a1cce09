/*
 * metrics_server.c - the HTTP endpoint of `floe sink --metrics-addr`:
 * GET /metrics (Prometheus text format, from floe_sink_metrics) and
 * GET /health (200 "ok" while the sink runs; 503 with the reason while it
 * starts, after it halted or while it stops).
 *
 * The address is checked and bound before the sink opens its table, so a
 * bad one fails with nothing created.  One thread accepts; each connection
 * gets a thread of its own (at most MAX_CONNS at once; more wait in the
 * listen backlog until one finishes), bounded by a deadline for reading the
 * request and writing the answer, so a client that connects and says
 * nothing delays no other scrape.  Replies use send(MSG_NOSIGNAL): a client that hangs up cannot
 * raise SIGPIPE.  One request per connection.  floe_sink_metrics is safe
 * from any thread; the sink outlives the server (metrics_server_stop joins
 * every thread first).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/cli_internal.h"

#define MAX_CONNS 16
#define CONN_DEADLINE_MS 5000
#define MAX_REQUEST 8192

typedef struct conn {
    struct metrics_server *m;
    int fd;                   /* -1 once closed */
    pthread_t thread;
    bool used, done;
} conn;

struct metrics_server {
    int fd;
    int stop_pipe[2];
    pthread_t thread;
    pthread_mutex_t lock;     /* guards everything below */
    pthread_cond_t slot_freed;
    bool stopping;
    const floe_sink *sink;
    cli_metrics_fn fn;            /* or this, with ctx */
    void *fn_ctx;
    cli_health_fn health_fn;      /* while healthy: may say otherwise (with fn_ctx) */
    int health_status;
    char health_text[1024];
    conn conns[MAX_CONNS];
};

/* ---- one connection --------------------------------------------------------------- */

static int ms_left(uint64_t deadline_ns)
{
    uint64_t now = cli_now_ns();
    return now >= deadline_ns ? 0 : (int)((deadline_ns - now) / 1000000u) + 1;
}

static bool send_all(int fd, const char *p, size_t len, uint64_t deadline)
{
    while (len > 0) {
        struct pollfd pf = {fd, POLLOUT, 0};
        int left = ms_left(deadline);
        if (left == 0 || poll(&pf, 1, left) <= 0)
            return false;
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

static void respond(int fd, const char *status, const char *type, const char *body,
                    uint64_t deadline)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n", status, type, strlen(body));
    if (send_all(fd, head, (size_t)n, deadline))
        send_all(fd, body, strlen(body), deadline);
}

/* Read up to the end of the request's headers: false on timeout, hang-up or
 * a request too large. */
static bool read_request(int fd, char *buf, size_t cap, uint64_t deadline)
{
    size_t len = 0;
    buf[0] = '\0';
    while (len + 1 < cap) {
        struct pollfd pf = {fd, POLLIN, 0};
        int left = ms_left(deadline);
        if (left == 0 || poll(&pf, 1, left) <= 0)
            return false;
        ssize_t n = recv(fd, buf + len, cap - 1 - len, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            return false;
        len += (size_t)n;
        buf[len] = '\0';
        if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
            return true;
    }
    return false;
}

static void serve_metrics(metrics_server *m, int fd, uint64_t deadline)
{
    pthread_mutex_lock(&m->lock);
    const floe_sink *sink = m->sink;
    cli_metrics_fn fn = m->fn;
    void *ctx = m->fn_ctx;
    pthread_mutex_unlock(&m->lock);
    if (!sink && !fn) {
        respond(fd, "503 Service Unavailable", "text/plain", "starting\n", deadline);
        return;
    }
    char *text = NULL;
    floe_error *err = floe_error_new();
    if (err && (sink ? floe_sink_metrics(sink, &text, err) : fn(ctx, &text, err)) == FLOE_OK)
        respond(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", text, deadline);
    else
        respond(fd, "500 Internal Server Error", "text/plain",
                err ? floe_error_message(err) : "out of memory\n", deadline);
    floe_free(text);
    floe_error_free(err);
}

static void serve_health(metrics_server *m, int fd, uint64_t deadline)
{
    char body[sizeof m->health_text + 2];
    pthread_mutex_lock(&m->lock);
    int status = m->health_status;
    snprintf(body, sizeof body, "%s\n", m->health_text);
    if (status == 200 && m->health_fn) {
        char text[sizeof m->health_text];
        if (m->health_fn(m->fn_ctx, text, sizeof text) != 200) {
            status = 503;
            snprintf(body, sizeof body, "%s\n", text);
        }
    }
    pthread_mutex_unlock(&m->lock);
    respond(fd, status == 200 ? "200 OK" : "503 Service Unavailable", "text/plain", body,
            deadline);
}

static bool is_path(const char *target, const char *path)
{
    size_t n = strlen(path);
    return strncmp(target, path, n) == 0 &&
           (target[n] == ' ' || target[n] == '?' || target[n] == '\r' || target[n] == '\n');
}

static void serve_one(metrics_server *m, int fd)
{
    uint64_t deadline = cli_now_ns() + (uint64_t)CONN_DEADLINE_MS * 1000000u;
    char req[MAX_REQUEST];
    if (!read_request(fd, req, sizeof req, deadline))
        return;
    if (strncmp(req, "GET ", 4) != 0) {
        respond(fd, "405 Method Not Allowed", "text/plain", "only GET\n", deadline);
        return;
    }
    const char *target = req + 4;
    if (is_path(target, "/metrics"))
        serve_metrics(m, fd, deadline);
    else if (is_path(target, "/health"))
        serve_health(m, fd, deadline);
    else
        respond(fd, "404 Not Found", "text/plain", "not found; try /metrics or /health\n",
                deadline);
}

static void *serve_conn(void *arg)
{
    conn *c = arg;
    metrics_server *m = c->m;
    serve_one(m, c->fd);
    pthread_mutex_lock(&m->lock);
    close(c->fd);
    c->fd = -1;
    c->done = true;
    pthread_cond_signal(&m->slot_freed);
    pthread_mutex_unlock(&m->lock);
    return NULL;
}

/* ---- accepting ---------------------------------------------------------------------- */

/* A free connection slot (finished threads joined); while all are taken,
 * wait for one to finish (new connections wait in the listen backlog).
 * NULL when the server stops. */
static conn *free_slot(metrics_server *m)
{
    conn *slot = NULL;
    pthread_mutex_lock(&m->lock);
    while (!slot && !m->stopping) {
        for (size_t i = 0; i < MAX_CONNS; i++) {
            conn *c = &m->conns[i];
            if (c->used && c->done) {
                pthread_join(c->thread, NULL);
                c->used = false;
            }
            if (!c->used && !slot)
                slot = c;
        }
        if (!slot)
            pthread_cond_wait(&m->slot_freed, &m->lock);
    }
    pthread_mutex_unlock(&m->lock);
    return slot;
}

static void start_conn(metrics_server *m, conn *c, int fd)
{
    pthread_mutex_lock(&m->lock);
    c->m = m;
    c->fd = fd;
    c->used = true;
    c->done = false;
    if (pthread_create(&c->thread, NULL, serve_conn, c) != 0) {
        close(fd);
        c->fd = -1;
        c->used = false;
    }
    pthread_mutex_unlock(&m->lock);
}

static void *run(void *arg)
{
    metrics_server *m = arg;
    conn *c;
    while ((c = free_slot(m)) != NULL) {
        struct pollfd p[2] = {{m->fd, POLLIN, 0}, {m->stop_pipe[0], POLLIN, 0}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        if (!(p[0].revents & POLLIN))
            continue;
        int fd = accept4(m->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0)
            start_conn(m, c, fd);
        else if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS)
            poll(NULL, 0, 100);            /* out of descriptors: do not spin */
    }
    return NULL;
}

/* ---- the address ---------------------------------------------------------------------- */

/* Split HOST:PORT, [IPv6]:PORT or :PORT; NULL, or why it is malformed. */
static const char *split_addr(const char *addr, char *host, size_t hcap, char *port,
                              size_t pcap)
{
    const char *colon;
    if (addr[0] == '[') {
        const char *close_br = strchr(addr, ']');
        if (!close_br || close_br[1] != ':')
            return "expected HOST:PORT, [IPv6]:PORT or :PORT";
        snprintf(host, hcap, "%.*s", (int)(close_br - addr - 1), addr + 1);
        colon = close_br + 1;
        if (!*host)
            return "the brackets hold no IPv6 address";
    } else {
        colon = strrchr(addr, ':');
        if (!colon)
            return "expected HOST:PORT, [IPv6]:PORT or :PORT (no port)";
        snprintf(host, hcap, "%.*s", (int)(colon - addr), addr);
        if (strchr(host, ':'))
            return "an IPv6 address goes in brackets, e.g. [::1]:9091";
    }
    const char *p = colon + 1;
    size_t n = strspn(p, "0123456789");
    if (n == 0 || p[n] || n > 5 || atoi(p) < 1 || atoi(p) > 65535)
        return "the port must be a number from 1 to 65535";
    snprintf(port, pcap, "%d", atoi(p));
    return NULL;
}

static int bind_listen(int family, const struct sockaddr *sa, socklen_t len, bool dual)
{
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (dual)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  /* "::" takes IPv4 too */
    if (bind(fd, sa, len) != 0 || listen(fd, SOMAXCONN) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Every interface: IPv6 and IPv4 on "::", or IPv4 alone without IPv6. */
static int listen_any(int port)
{
    struct sockaddr_in6 a6;
    memset(&a6, 0, sizeof a6);
    a6.sin6_family = AF_INET6;
    a6.sin6_port = htons((uint16_t)port);
    a6.sin6_addr = in6addr_any;
    int fd = bind_listen(AF_INET6, (struct sockaddr *)&a6, sizeof a6, true);
    if (fd >= 0 || (errno != EAFNOSUPPORT && errno != EADDRNOTAVAIL))
        return fd;
    struct sockaddr_in a4;
    memset(&a4, 0, sizeof a4);
    a4.sin_family = AF_INET;
    a4.sin_port = htons((uint16_t)port);
    a4.sin_addr.s_addr = htonl(INADDR_ANY);
    return bind_listen(AF_INET, (struct sockaddr *)&a4, sizeof a4, false);
}

static int listen_on(const char *addr, bool *usage_error)
{
    char host[256], port[8];
    const char *why = split_addr(addr, host, sizeof host, port, sizeof port);
    if (why) {
        cli_say("floe: --metrics-addr '%s': %s\n", addr, why);
        *usage_error = true;
        return -1;
    }
    int fd = -1;
    if (!*host) {
        fd = listen_any(atoi(port));
    } else {
        struct addrinfo hints, *res = NULL;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
        int gai = getaddrinfo(host, port, &hints, &res);
        if (gai != 0) {
            cli_say("floe: --metrics-addr '%s': cannot resolve '%s': %s\n", addr, host,
                    gai_strerror(gai));
            return -1;
        }
        errno = EADDRNOTAVAIL;
        for (int pass = 0; pass < 2 && fd < 0; pass++)      /* IPv4 first: "localhost" */
            for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
                if ((ai->ai_family == AF_INET) == (pass == 0))
                    fd = bind_listen(ai->ai_family, ai->ai_addr, ai->ai_addrlen, false);
        freeaddrinfo(res);
    }
    if (fd < 0)
        cli_say("floe: --metrics-addr '%s': cannot listen there: %s\n", addr, strerror(errno));
    return fd;
}

/* ---- the server ------------------------------------------------------------------------ */

metrics_server *metrics_server_start(const char *addr, bool *usage_error)
{
    *usage_error = false;
    metrics_server *m = calloc(1, sizeof *m);
    if (!m) {
        cli_say("floe: out of memory\n");
        return NULL;
    }
    m->health_status = 503;
    snprintf(m->health_text, sizeof m->health_text, "starting");
    m->fd = listen_on(addr, usage_error);
    if (m->fd < 0) {
        free(m);
        return NULL;
    }
    bool ok = pipe2(m->stop_pipe, O_CLOEXEC) == 0;
    if (ok && (pthread_mutex_init(&m->lock, NULL) != 0 ||
               pthread_cond_init(&m->slot_freed, NULL) != 0)) {
        close(m->stop_pipe[0]);
        close(m->stop_pipe[1]);
        ok = false;                        /* (a mutex that did init is left: we exit) */
    }
    if (ok && pthread_create(&m->thread, NULL, run, m) != 0) {
        pthread_cond_destroy(&m->slot_freed);
        pthread_mutex_destroy(&m->lock);
        close(m->stop_pipe[0]);
        close(m->stop_pipe[1]);
        ok = false;
    }
    if (!ok) {
        cli_say("floe: --metrics-addr '%s': cannot start serving: %s\n", addr, strerror(errno));
        close(m->fd);
        free(m);
        return NULL;
    }
    return m;
}

void metrics_server_attach(metrics_server *m, const floe_sink *sink)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->sink = sink;
    m->health_status = 200;
    snprintf(m->health_text, sizeof m->health_text, "ok");
    pthread_mutex_unlock(&m->lock);
}

void metrics_server_attach_fn(metrics_server *m, cli_metrics_fn fn, void *ctx)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->fn = fn;
    m->fn_ctx = ctx;
    m->health_status = 200;
    snprintf(m->health_text, sizeof m->health_text, "ok");
    pthread_mutex_unlock(&m->lock);
}

void metrics_server_health_fn(metrics_server *m, cli_health_fn fn)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->health_fn = fn;
    pthread_mutex_unlock(&m->lock);
}

void metrics_server_health(metrics_server *m, int status, const char *fmt, ...)
{
    if (!m)
        return;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&m->lock);
    m->health_status = status;
    vsnprintf(m->health_text, sizeof m->health_text, fmt, ap);
    pthread_mutex_unlock(&m->lock);
    va_end(ap);
}

void metrics_server_stop(metrics_server *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->stopping = true;
    pthread_cond_broadcast(&m->slot_freed);
    pthread_mutex_unlock(&m->lock);
    if (write(m->stop_pipe[1], "x", 1) != 1)
        cli_say("floe: stopping the metrics server: %s\n", strerror(errno));
    pthread_join(m->thread, NULL);
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < MAX_CONNS; i++)
        if (m->conns[i].used && m->conns[i].fd >= 0)
            shutdown(m->conns[i].fd, SHUT_RDWR);     /* ends its wait at once */
    pthread_mutex_unlock(&m->lock);
    for (size_t i = 0; i < MAX_CONNS; i++)
        if (m->conns[i].used)
            pthread_join(m->conns[i].thread, NULL);
    pthread_cond_destroy(&m->slot_freed);
    pthread_mutex_destroy(&m->lock);
    close(m->fd);
    close(m->stop_pipe[0]);
    close(m->stop_pipe[1]);
    free(m);
}
