/*
 * local_read.c - reading local files at random (floe__input over pread) and
 * listing a directory tree, for the local FileIO (local.c).
 *
 * Listing walks the tree depth-first with opendir/readdir and stat; every
 * regular file is reported with its size and modification time, under the
 * URI form it was asked for ("file:///a/b" gives "file:///a/b/c/d").
 * Hidden in-progress outputs (".<name>.<random>.tmp", local.c) are reported
 * too: they are files like any other to someone cleaning up.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io_internal.h"

#define MAX_DEPTH 64

typedef struct local_input {
    floe__input base;
    int fd;
    char *path;
} local_input;

static int lin_read_at(floe__input *in, uint64_t off, size_t n, uint8_t *dst, floe_error *err)
{
    local_input *li = (local_input *)in;
    FLOE_RETURN_IF(off > in->size || n > in->size - off, err, FLOE_EINVAL,
                   "reading %s: bytes %llu..%llu are past its end (%llu bytes)", li->path,
                   (unsigned long long)off, (unsigned long long)(off + n),
                   (unsigned long long)in->size);
    while (n) {
        ssize_t got = pread(li->fd, dst, n, (off_t)off);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return floe__err_set(err, FLOE_EIO, "reading %s: %s", li->path,
                                 got < 0 ? strerror(errno) : "the file got shorter");
        dst += got;
        off += (uint64_t)got;
        n -= (size_t)got;
    }
    return FLOE_OK;
}

static void lin_close(floe__input *in)
{
    local_input *li = (local_input *)in;
    if (li->fd >= 0)
        close(li->fd);
    floe__free(li->path);
    floe__free(li);
}

int floe__local_open_input(const char *uri, floe__input **out, floe_error *err)
{
    const char *path = floe__local_path(uri);
    local_input *li = floe__calloc(1, sizeof *li);
    if (!li || !(li->path = floe__strdup(path))) {
        floe__free(li);
        return FLOE_OOM(err);
    }
    li->base.read_at = lin_read_at;
    li->base.close = lin_close;
    li->fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    int e = errno;
    if (li->fd < 0 || fstat(li->fd, &st) != 0) {
        e = li->fd < 0 ? e : errno;
        lin_close(&li->base);
        return floe__err_set(err, e == ENOENT ? FLOE_ENOTFOUND : FLOE_EIO, "open %s: %s", path,
                             strerror(e));
    }
    li->base.size = (uint64_t)st.st_size;
    *out = &li->base;
    return FLOE_OK;
}

/* ---- listing ------------------------------------------------------------------------- */

typedef struct walk {
    floe__list_fn fn;
    void *ctx;
    floe__buf path, uri;         /* the current directory, as a path and as a URI */
} walk;

static int walk_dir(walk *w, int depth, floe_error *err);

static int visit(walk *w, const char *name, int depth, floe_error *err)
{
    size_t pl = w->path.len, ul = w->uri.len;
    int rc = floe__buf_printf(&w->path, err, "/%s", name);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(&w->uri, err, "/%s", name);
    struct stat st;
    if (rc == FLOE_OK && lstat((const char *)w->path.data, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            rc = walk_dir(w, depth + 1, err);
        else if (S_ISREG(st.st_mode)) {
            floe__listed obj = {(const char *)w->uri.data, (uint64_t)st.st_size,
                                (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000};
            rc = w->fn(w->ctx, &obj, err);
        }
    }                                /* vanished meanwhile: nothing to report */
    w->path.len = pl;
    w->uri.len = ul;
    w->path.data[pl] = w->uri.data[ul] = '\0';
    return rc;
}

static int walk_dir(walk *w, int depth, floe_error *err)
{
    FLOE_RETURN_IF(depth > MAX_DEPTH, err, FLOE_ELIMIT, "listing %s: deeper than %d levels",
                   (const char *)w->path.data, MAX_DEPTH);
    DIR *d = opendir((const char *)w->path.data);
    if (!d)
        return errno == ENOENT || errno == ENOTDIR
                   ? FLOE_OK
                   : floe__err_set(err, FLOE_EIO, "listing %s: %s", (const char *)w->path.data,
                                   strerror(errno));
    int rc = FLOE_OK;
    for (struct dirent *e; rc == FLOE_OK && (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            rc = visit(w, e->d_name, depth, err);
    closedir(d);
    return rc;
}

int floe__local_list(const char *uri, floe__list_fn fn, void *ctx, floe_error *err)
{
    walk w = {.fn = fn, .ctx = ctx};
    floe__buf_init(&w.path, 1 << 16);
    floe__buf_init(&w.uri, 1 << 16);
    size_t n = strlen(uri);
    while (n > 1 && uri[n - 1] == '/')
        n--;
    int rc = floe__buf_printf(&w.uri, err, "%.*s", (int)n, uri);
    char *base = rc == FLOE_OK ? floe__buf_strdup(&w.uri) : NULL;
    if (rc == FLOE_OK && !base)
        rc = FLOE_OOM(err);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(&w.path, err, "%s", floe__local_path(base));
    if (rc == FLOE_OK)
        rc = walk_dir(&w, 0, err);
    floe__free(base);
    floe__buf_free(&w.path);
    floe__buf_free(&w.uri);
    return rc;
}
