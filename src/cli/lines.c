/*
 * lines.c - a fast line reader for NDJSON input (a file or stdin).
 *
 * Reads big blocks into one buffer and returns lines in place; a line that
 * straddles the end of the buffer is moved to the front before the next
 * read, and the buffer grows (up to MAX_LINE) for very long lines.  With a
 * wake descriptor (the stop-signal pipe) every read first waits on both in
 * poll, so a stop request ends a read that would block on an idle stdin.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_internal.h"

#define BLOCK (4u << 20)
#define MAX_LINE ((size_t)1 << 30)

struct cli_lines {
    int fd;
    bool own_fd;
    bool eof;
    char *buf;
    size_t cap;
    size_t pos;       /* start of unread data */
    size_t end;       /* end of data read */
    size_t lineno;
    char *path;
    int wake_fd;      /* -1: none */
};

int cli_lines_open(const char *path, cli_lines **out)
{
    cli_lines *r = calloc(1, sizeof *r);
    if (!r)
        return FLOE_ENOMEM;
    bool is_stdin = strcmp(path, "-") == 0;
    r->fd = is_stdin ? 0 : open(path, O_RDONLY | O_CLOEXEC);
    r->wake_fd = -1;
    r->own_fd = !is_stdin;
    r->path = strdup(is_stdin ? "<stdin>" : path);
    r->cap = BLOCK;
    r->buf = malloc(r->cap);
    if (r->fd < 0 || !r->buf || !r->path) {
        int e = errno;
        cli_lines_close(r);
        cli_say("floe: cannot open input '%s': %s\n", path, strerror(e));
        return FLOE_EIO;
    }
    *out = r;
    return FLOE_OK;
}

void cli_lines_close(cli_lines *r)
{
    if (!r)
        return;
    if (r->own_fd && r->fd >= 0)
        close(r->fd);
    free(r->buf);
    free(r->path);
    free(r);
}

void cli_lines_wake_on(cli_lines *r, int fd) { r->wake_fd = fd; }

const char *cli_lines_name(const cli_lines *r) { return r->path; }

/* Wait until the input or the wake descriptor is readable: 1 for the input,
 * 0 when woken, -1 on error. */
static int wait_readable(cli_lines *r)
{
    if (r->wake_fd < 0)
        return 1;
    for (;;) {
        struct pollfd p[2] = {{r->fd, POLLIN, 0}, {r->wake_fd, POLLIN, 0}};
        int n = poll(p, 2, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (p[1].revents)
            return 0;
        return 1;                         /* data, end of input or an error to read */
    }
}

/* Make room and read more bytes; returns 0 at end of input, -1 on error,
 * -2 when woken. */
static int fill(cli_lines *r)
{
    if (r->pos > 0) {
        memmove(r->buf, r->buf + r->pos, r->end - r->pos);
        r->end -= r->pos;
        r->pos = 0;
    }
    if (r->end == r->cap) {
        if (r->cap >= MAX_LINE) {
            errno = EFBIG;
            return -1;
        }
        char *b = realloc(r->buf, r->cap * 2);
        if (!b)
            return -1;
        r->buf = b;
        r->cap *= 2;
    }
    for (;;) {
        int ready = wait_readable(r);
        if (ready <= 0)
            return ready == 0 ? -2 : -1;
        ssize_t n = read(r->fd, r->buf + r->end, r->cap - r->end);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        r->end += (size_t)n;
        return n > 0;
    }
}

int cli_lines_next(cli_lines *r, const char **line, size_t *len, size_t *lineno)
{
    size_t scan = r->pos;
    for (;;) {
        char *nl = memchr(r->buf + scan, '\n', r->end - scan);
        if (nl || (r->eof && r->pos < r->end)) {
            size_t stop = nl ? (size_t)(nl - r->buf) : r->end;
            size_t n = stop - r->pos;
            if (n > 0 && r->buf[r->pos + n - 1] == '\r')
                n--;
            *line = r->buf + r->pos;
            *len = n;
            *lineno = ++r->lineno;
            r->pos = nl ? stop + 1 : r->end;
            return 1;
        }
        if (r->eof)
            return 0;
        size_t scanned = r->end - r->pos;
        int got = fill(r);
        if (got == -2)
            return -2;
        if (got < 0) {
            cli_say("floe: reading '%s' at line %zu: %s\n", r->path, r->lineno + 1,
                    errno == EFBIG ? "line longer than 1 GiB" : strerror(errno));
            return -1;
        }
        if (got == 0)
            r->eof = true;
        scan = r->pos + scanned;
    }
}
