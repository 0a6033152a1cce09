/*
 * status_line.c - what the floe program writes on stderr: messages
 * (cli_say, error chains) and the status line of `floe sink`.
 *
 * On a terminal the status line is one line redrawn in place ("\r", erase
 * to the end of the line) by a thread of its own on a clock, so it moves
 * while the input is idle; every message first erases it, so nothing is
 * ever glued to it.  Off a terminal it is an ordinary line every interval
 * (no carriage returns, no escape codes).  The figures come from
 * floe_sink_stats_get, which is safe from any thread.  The final summary
 * is the command's business (sink.c), printed after cli_status_stop.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli_internal.h"

#define TTY_INTERVAL_NS 1000000000u
#define PLAIN_INTERVAL_NS 10000000000u

int cli_status_options(const cli_opt *opts, cli_status_mode *mode, uint64_t *interval_ns,
                       uint64_t *linger_ns)
{
    const char *term = getenv("TERM");
    bool tty = isatty(STDERR_FILENO) && !(term && strcmp(term, "dumb") == 0);
    *mode = cli_has(opts, "quiet") ? CLI_STATUS_QUIET : tty ? CLI_STATUS_TTY : CLI_STATUS_PLAIN;
    *interval_ns = tty ? TTY_INTERVAL_NS : PLAIN_INTERVAL_NS;
    if (cli_wall_duration_opt(opts, "progress-interval", false, interval_ns) != 0 ||
        (linger_ns && cli_wall_duration_opt(opts, "metrics-linger", true, linger_ns) != 0))
        return -1;
    if (linger_ns && *linger_ns && !cli_has(opts, "metrics-addr")) {
        cli_say("floe: --metrics-linger needs --metrics-addr\n");
        return -1;
    }
    return 0;
}

/* Whether the live line is on the terminal now; guarded by flockfile(stderr). */
static bool live_shown;

uint64_t cli_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void cli_say(const char *fmt, ...)
{
    va_list ap;
    flockfile(stderr);
    if (live_shown) {
        fputs("\r\033[K", stderr);
        live_shown = false;
    }
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
    funlockfile(stderr);
}

static bool starts_with(const char *s, const char *prefix)
{
    size_t n = strlen(prefix);
    return n > 0 && strncmp(s, prefix, n) == 0;
}

static void append(char *buf, size_t cap, size_t *len, const char *s)
{
    int n = snprintf(buf + *len, cap - *len, "%s", s);
    if (n > 0)
        *len = *len + (size_t)n < cap ? *len + (size_t)n : cap - 1;
}

void cli_chain(const floe_error *err, char *buf, size_t cap)
{
    size_t depth = floe_error_depth(err), len = 0;
    const char *shown = NULL;
    buf[0] = '\0';
    for (size_t i = 0; i < depth; i++) {
        const char *f = floe_error_frame(err, i);
        const char *next = i + 1 < depth ? floe_error_frame(err, i + 1) : NULL;
        if (!f || !*f || (next && starts_with(next, f)))
            continue;                      /* empty, or the next frame repeats it and more */
        if (shown && strstr(shown, f))
            continue;                      /* said already */
        if (len)
            append(buf, cap, &len, ": ");
        append(buf, cap, &len, f);
        shown = f;
    }
    if (!len) {
        const char *m = floe_error_message(err);
        snprintf(buf, cap, "%s", *m ? m : floe_code_string(floe_error_code(err)));
    }
}

void cli_report(const char *what, const floe_error *err)
{
    char chain[16384];
    cli_chain(err, chain, sizeof chain);
    cli_say("floe: %s: %s\n", what, chain);
}

void cli_warning(_Atomic uint64_t *count, const char *msg)
{
    uint64_t n = atomic_fetch_add(count, 1) + 1;
    if (n <= 20)
        cli_say("floe: warning: %s\n", msg);
    else if (n == 21)
        cli_say("floe: warning: further warnings are counted, not shown\n");
}

void cli_frontier_text(int empty, uint64_t t, char *buf, size_t cap)
{
    if (empty)
        snprintf(buf, cap, "[]");
    else
        snprintf(buf, cap, "[%" PRIu64 "]", t);
}

/* ---- the status line ------------------------------------------------------------- */

struct cli_status {
    cli_status_mode mode;
    uint64_t interval_ns, started_ns;
    const floe_sink *sink;
    cli_line_fn fn;                     /* or this, with ctx */
    void *fn_ctx;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop;
    uint64_t last_updates, last_ns;     /* for the rate over the last interval */
};

void cli_elapsed_text(uint64_t ns, char *buf, size_t cap)
{
    uint64_t s = ns / 1000000000u;
    if (s < 60)
        snprintf(buf, cap, "%" PRIu64 "s", s);
    else if (s < 3600)
        snprintf(buf, cap, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
    else
        snprintf(buf, cap, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
}

/* "frontier [t], committed [u], lag d, freshness f" */
static void frontiers_text(const floe_sink_stats *st, char *buf, size_t cap)
{
    char in[32], done[32] = "none", lag[48] = "";
    cli_frontier_text(st->input_frontier_empty, st->input_frontier, in, sizeof in);
    if (st->has_committed_frontier)
        cli_frontier_text(st->committed_frontier_empty, st->committed_frontier, done,
                          sizeof done);
    if (st->has_committed_frontier && !st->committed_frontier_empty && !st->input_frontier_empty)
        snprintf(lag, sizeof lag, ", lag %" PRIu64,
                 st->input_frontier > st->committed_frontier
                     ? st->input_frontier - st->committed_frontier : 0);
    snprintf(buf, cap, "input %s, committed %s%s, freshness %.1fs", in, done, lag,
             st->freshness_seconds);
}

static void put_line(cli_status *s, const char *line, size_t len)
{
    struct winsize ws;
    if (s->mode == CLI_STATUS_TTY && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 &&
        ws.ws_col > 20 && len >= ws.ws_col)
        len = ws.ws_col - 1u;             /* a wrapped line could not be redrawn in place */
    flockfile(stderr);
    if (s->mode == CLI_STATUS_TTY) {
        fprintf(stderr, "\r\033[K%.*s", (int)len, line);
        live_shown = true;
    } else {
        fprintf(stderr, "%.*s\n", (int)len, line);
    }
    fflush(stderr);
    funlockfile(stderr);
}

static void draw(cli_status *s)
{
    if (s->fn) {
        char text[1024], line[1040];
        s->fn(s->fn_ctx, (double)(cli_now_ns() - s->started_ns) / 1e9, text, sizeof text);
        int n = snprintf(line, sizeof line, "floe: %s", text);
        put_line(s, line, n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        return;
    }
    floe_sink_stats st;
    floe_sink_stats_get(s->sink, &st, sizeof st);
    uint64_t now = cli_now_ns();
    double secs = (double)(now - s->last_ns) / 1e9;
    double rate = secs > 0 ? (double)(st.updates_in - s->last_updates) / secs : 0.0;
    s->last_updates = st.updates_in;
    s->last_ns = now;
    char when[32], fr[160], line[512];
    cli_elapsed_text(now - s->started_ns, when, sizeof when);
    frontiers_text(&st, fr, sizeof fr);
    int n = snprintf(line, sizeof line,
                     "floe: %s: %" PRIu64 " updates (%.0f/s), %" PRIu64 " snapshots, %s", when,
                     st.updates_in, rate, st.snapshots_committed, fr);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    put_line(s, line, len);
}

static struct timespec at(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    return ts;
}

static void *tick(void *arg)
{
    cli_status *s = arg;
    uint64_t next = s->started_ns + s->interval_ns;
    pthread_mutex_lock(&s->lock);
    while (!s->stop) {
        struct timespec ts = at(next);
        pthread_cond_timedwait(&s->cond, &s->lock, &ts);
        uint64_t now = cli_now_ns();
        if (s->stop || now < next)
            continue;                      /* stopping, or woken early */
        pthread_mutex_unlock(&s->lock);
        draw(s);
        pthread_mutex_lock(&s->lock);
        next += s->interval_ns;
        if (next <= now)
            next = now + s->interval_ns;   /* a slow draw skips ticks, never bunches them */
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static bool init_sync(cli_status *s)
{
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        return false;
    bool ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
              pthread_cond_init(&s->cond, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (ok && pthread_mutex_init(&s->lock, NULL) != 0) {
        pthread_cond_destroy(&s->cond);
        ok = false;
    }
    return ok;
}

static cli_status *status_start(cli_status_mode mode, uint64_t interval_ns, const floe_sink *sink,
                                cli_line_fn fn, void *ctx)
{
    if (mode == CLI_STATUS_QUIET)
        return NULL;
    cli_status *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->mode = mode;
    s->interval_ns = interval_ns ? interval_ns : 1000000000u;
    s->sink = sink;
    s->fn = fn;
    s->fn_ctx = ctx;
    s->started_ns = s->last_ns = cli_now_ns();
    if (!init_sync(s)) {
        free(s);
        return NULL;
    }
    if (pthread_create(&s->thread, NULL, tick, s) != 0) {
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->cond);
        free(s);
        return NULL;
    }
    return s;
}

cli_status *cli_status_start(cli_status_mode mode, uint64_t interval_ns, const floe_sink *sink)
{
    return status_start(mode, interval_ns, sink, NULL, NULL);
}

cli_status *cli_status_start_fn(cli_status_mode mode, uint64_t interval_ns, cli_line_fn fn,
                                void *ctx)
{
    return status_start(mode, interval_ns, NULL, fn, ctx);
}

void cli_status_stop(cli_status *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
    flockfile(stderr);
    if (live_shown) {
        fputs("\r\033[K", stderr);
        live_shown = false;
        fflush(stderr);
    }
    funlockfile(stderr);
}
