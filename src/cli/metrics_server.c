/*
 * metrics_server.c - serves `GET /metrics` (Prometheus text format) for
 * `floe sink --metrics-addr HOST:PORT` from a thread of its own.
 *
 * The page comes from floe_sink_metrics(), which is safe to call from this
 * thread while the sink works in the main one.  One request per connection;
 * anything but GET /metrics is answered 404.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/cli_internal.h"

struct metrics_server {
    int fd;
    int stop_pipe[2];
    pthread_t thread;
    const floe_sink *sink;
};

static void respond(int c, const char *status, const char *type, const char *body)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n", status, type, strlen(body));
    if (write(c, head, (size_t)n) == n)
        for (size_t off = 0, len = strlen(body); off < len;) {
            ssize_t w = write(c, body + off, len - off);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
}

static void serve_one(metrics_server *m, int c)
{
    char req[2048];
    ssize_t n = read(c, req, sizeof req - 1);
    if (n <= 0)
        return;
    req[n] = '\0';
    if (strncmp(req, "GET /metrics ", 13) != 0 && strncmp(req, "GET /metrics?", 13) != 0) {
        respond(c, "404 Not Found", "text/plain", "not found; try /metrics\n");
        return;
    }
    char *text = NULL;
    floe_error *err = floe_error_new();
    if (floe_sink_metrics(m->sink, &text, err) == FLOE_OK)
        respond(c, "200 OK", "text/plain; version=0.0.4", text);
    else
        respond(c, "500 Internal Server Error", "text/plain", floe_error_message(err));
    floe_free(text);
    floe_error_free(err);
}

static void *run(void *arg)
{
    metrics_server *m = arg;
    for (;;) {
        struct pollfd p[2] = {{m->fd, POLLIN, 0}, {m->stop_pipe[0], POLLIN, 0}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        if (!(p[0].revents & POLLIN))
            continue;
        int c = accept(m->fd, NULL, NULL);
        if (c < 0)
            continue;
        struct timeval tv = {2, 0};
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        serve_one(m, c);
        close(c);
    }
    return NULL;
}

static int listen_on(const char *addr)
{
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr)
        return -1;
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        int one = 1;
        if (fd >= 0)
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (fd >= 0 && (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 16) != 0)) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

metrics_server *metrics_server_start(const char *addr, const floe_sink *sink)
{
    metrics_server *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->sink = sink;
    m->fd = listen_on(addr);
    if (m->fd < 0 || pipe(m->stop_pipe) != 0) {
        fprintf(stderr, "floe: --metrics-addr %s: cannot listen: %s\n", addr, strerror(errno));
        if (m->fd >= 0)
            close(m->fd);
        free(m);
        return NULL;
    }
    if (pthread_create(&m->thread, NULL, run, m) != 0) {
        close(m->fd);
        close(m->stop_pipe[0]);
        close(m->stop_pipe[1]);
        free(m);
        return NULL;
    }
    return m;
}

void metrics_server_stop(metrics_server *m)
{
    if (!m)
        return;
    if (write(m->stop_pipe[1], "x", 1) != 1)
        perror("floe: stopping the metrics server");
    pthread_join(m->thread, NULL);
    close(m->fd);
    close(m->stop_pipe[0]);
    close(m->stop_pipe[1]);
    free(m);
}
