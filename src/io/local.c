/*
 * local.c - storage on the local file system.
 *
 * Whole-object writes are atomic: bytes go to "<dir>/.<name>.<random>.tmp"
 * and close() renames the file into place, so a partial object is never
 * visible under its final name (a stray temporary file at worst).
 * Durability: a stand-alone output (floe__local_output_open) fsyncs the file
 * and its directory at close.  Outputs of a local FileIO defer it: the
 * FileIO remembers which file systems it wrote to, and floe__fileio_sync
 * makes all of it durable with one syncfs each, which the commit path calls
 * before anything refers to the files.
 * The local FileIO (floe__fileio_local_new) wraps these for "file://" URIs
 * and plain paths.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io_internal.h"

#define WRITE_CHUNK (1u << 20)

/* Deferred durability of a local FileIO: the directories (one per file
 * system) written since the last sync. */
#define MAX_SYNC_DIRS 8
typedef struct sync_state {
    pthread_mutex_t lock;
    size_t n;
    dev_t dev[MAX_SYNC_DIRS];
    char *dir[MAX_SYNC_DIRS];
} sync_state;

typedef struct local_output {
    floe__output base;
    sync_state *sync;           /* NULL: fsync the file and its directory at close */
    int fd;
    char *path;
    char *tmp;
    floe__buf pending;          /* small writes are gathered into 1 MiB writes */
} local_output;

const char *floe__local_path(const char *uri)
{
    if (floe__str_starts(uri, "file://localhost/"))
        return uri + strlen("file://localhost");
    if (floe__str_starts(uri, "file://"))
        return uri + strlen("file://");
    if (floe__str_starts(uri, "file:/"))
        return uri + strlen("file:");
    return uri;
}

static int mkdirs(const char *dir, floe_error *err)
{
    char *copy = floe__strdup(dir);
    if (!copy)
        return FLOE_OOM(err);
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(copy, 0777) != 0 && errno != EEXIST) {
            int rc = floe__err_set(err, FLOE_EIO, "cannot create directory %s: %s", copy,
                                   strerror(errno));
            floe__free(copy);
            return rc;
        }
        *p = '/';
    }
    int rc = FLOE_OK;
    if (mkdir(copy, 0777) != 0 && errno != EEXIST)
        rc = floe__err_set(err, FLOE_EIO, "cannot create directory %s: %s", copy,
                           strerror(errno));
    floe__free(copy);
    return rc;
}

int floe__local_mkdirs(const char *dir, floe_error *err)
{
    return mkdirs(floe__local_path(dir), err);
}

static int flush_pending(local_output *lo, floe_error *err)
{
    int rc = floe__write_all(lo->fd, lo->pending.data, lo->pending.len, lo->tmp, err);
    floe__buf_reset(&lo->pending);
    return rc;
}

static int local_write(floe__output *o, const void *p, size_t n, floe_error *err)
{
    local_output *lo = (local_output *)o;
    if (lo->pending.len + n > WRITE_CHUNK) {
        FLOE_FORWARD(flush_pending(lo, err));
        if (n >= WRITE_CHUNK)
            return floe__write_all(lo->fd, p, n, lo->tmp, err);
    }
    return floe__buf_append(&lo->pending, p, n, err);
}

static void local_destroy(local_output *lo)
{
    if (lo->fd >= 0)
        close(lo->fd);
    floe__buf_free(&lo->pending);
    floe__free(lo->path);
    floe__free(lo->tmp);
    floe__free(lo);
}

static void local_abort(floe__output *o)
{
    local_output *lo = (local_output *)o;
    unlink(lo->tmp);
    local_destroy(lo);
}

/* fsync the directory holding `path`.  It runs after the rename has made
 * the file visible, so it must not allocate (an allocation failure here
 * would report a failed close for a file that is already in place): the
 * directory part is cut off `path` in place and restored. */
static int fsync_dir(char *path, floe_error *err)
{
    char *slash = strrchr(path, '/');
    int fd;
    if (slash == path) {
        fd = open("/", O_RDONLY | O_DIRECTORY);
    } else if (slash) {
        *slash = '\0';
        fd = open(path, O_RDONLY | O_DIRECTORY);
        *slash = '/';
    } else {
        fd = open(".", O_RDONLY | O_DIRECTORY);
    }
    int rc = FLOE_OK;
    if (fd < 0 || fsync(fd) != 0)
        rc = floe__err_set(err, FLOE_EIO, "fsync directory of %s: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Remember the file system of `path` for the next floe__fileio_sync. */
static int note_dirty(sync_state *st, const char *path, floe_error *err)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return floe__err_set(err, FLOE_EIO, "stat %s: %s", path, strerror(errno));
    int rc = FLOE_OK;
    pthread_mutex_lock(&st->lock);
    size_t i = 0;
    while (i < st->n && st->dev[i] != sb.st_dev)
        i++;
    if (i == st->n && st->n == MAX_SYNC_DIRS)
        rc = floe__err_set(err, FLOE_EIO, "files on more than %d file systems", MAX_SYNC_DIRS);
    else if (i == st->n) {
        char *copy = floe__strdup(path);
        char *slash = copy ? strrchr(copy, '/') : NULL;
        if (slash && slash != copy)
            *slash = '\0';
        if (!copy)
            rc = FLOE_OOM(err);
        else {
            st->dev[st->n] = sb.st_dev;
            st->dir[st->n++] = copy;
        }
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

static int local_close(floe__output *o, floe_error *err)
{
    local_output *lo = (local_output *)o;
    int rc = flush_pending(lo, err);
    if (lo->sync) {                     /* durability comes with floe__fileio_sync */
        if (rc == FLOE_OK && close(lo->fd) != 0)
            rc = floe__err_set(err, FLOE_EIO, "close %s: %s", lo->tmp, strerror(errno));
        lo->fd = -1;
        if (rc == FLOE_OK)          /* before the rename: nothing may fail after it */
            rc = note_dirty(lo->sync, lo->tmp, err);
        if (rc == FLOE_OK && rename(lo->tmp, lo->path) != 0)
            rc = floe__err_set(err, FLOE_EIO, "rename %s to %s: %s", lo->tmp, lo->path,
                               strerror(errno));
        if (rc != FLOE_OK) {
            local_abort(o);
            return rc;
        }
        local_destroy(lo);
        return FLOE_OK;
    }
    if (rc == FLOE_OK && fsync(lo->fd) != 0)
        rc = floe__err_set(err, FLOE_EIO, "fsync %s: %s", lo->tmp, strerror(errno));
    if (rc == FLOE_OK && close(lo->fd) != 0)
        rc = floe__err_set(err, FLOE_EIO, "close %s: %s", lo->tmp, strerror(errno));
    lo->fd = -1;
    if (rc == FLOE_OK && rename(lo->tmp, lo->path) != 0)
        rc = floe__err_set(err, FLOE_EIO, "rename %s to %s: %s", lo->tmp, lo->path,
                           strerror(errno));
    if (rc == FLOE_OK)
        rc = fsync_dir(lo->tmp, err);      /* the same directory as lo->path */
    if (rc != FLOE_OK) {
        local_abort(o);
        return rc;
    }
    local_destroy(lo);
    return FLOE_OK;
}

static int make_tmp_name(const char *path, char **out, floe_error *err)
{
    uint8_t u[16];
    char hex[37];
    FLOE_FORWARD(floe__uuid_random(u, err));
    floe__uuid_format(u, hex);
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    *out = floe__sprintf("%.*s.%s.%.8s.tmp", (int)dirlen, path, path + dirlen, hex);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

static int open_output(const char *uri, sync_state *sync, floe__output **out, floe_error *err)
{
    const char *path = floe__local_path(uri);
    local_output *lo = floe__calloc(1, sizeof *lo);
    if (!lo)
        return FLOE_OOM(err);
    lo->sync = sync;
    lo->fd = -1;
    floe__buf_init(&lo->pending, 0);
    lo->path = floe__strdup(path);
    if (!lo->path) {
        local_destroy(lo);
        return FLOE_OOM(err);
    }
    int rc = make_tmp_name(path, &lo->tmp, err);
    const int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
    if (rc == FLOE_OK)
        lo->fd = open(lo->tmp, flags, 0644);
    const char *slash = strrchr(path, '/');
    if (rc == FLOE_OK && lo->fd < 0 && errno == ENOENT && slash && slash != path) {
        /* no directory yet: made now (making it before every file would cost a
         * mkdir per path level, each failing) */
        char *dir = floe__strndup(path, (size_t)(slash - path));
        rc = dir ? mkdirs(dir, err) : FLOE_OOM(err);
        floe__free(dir);
        if (rc == FLOE_OK)
            lo->fd = open(lo->tmp, flags, 0644);
    }
    if (rc == FLOE_OK && lo->fd < 0)
        rc = floe__err_set(err, FLOE_EIO, "cannot create %s: %s", lo->tmp, strerror(errno));
    if (rc != FLOE_OK) {
        local_destroy(lo);
        return rc;
    }
    lo->base.write = local_write;
    lo->base.close = local_close;
    lo->base.abort = local_abort;
    *out = &lo->base;
    return FLOE_OK;
}

int floe__local_output_open(const char *uri, floe__output **out, floe_error *err)
{
    return open_output(uri, NULL, out, err);
}

int floe__local_read_all(const char *uri, floe__buf *dst, floe_error *err)
{
    const char *path = floe__local_path(uri);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return floe__err_set(err, errno == ENOENT ? FLOE_ENOTFOUND : FLOE_EIO,
                             "cannot open %s: %s", path, strerror(errno));
    int rc = FLOE_OK;
    for (;;) {
        rc = floe__buf_reserve(dst, 1 << 16, err);
        if (rc != FLOE_OK)
            break;
        ssize_t n = read(fd, dst->data + dst->len, dst->cap - dst->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = floe__err_set(err, FLOE_EIO, "read %s: %s", path, strerror(errno));
            break;
        }
        if (n == 0)
            break;
        dst->len += (size_t)n;
    }
    close(fd);
    return rc;
}

/* ---- the local FileIO ------------------------------------------------------- */

/* A URI with a scheme other than file: is not ours. */
static int check_local(const char *uri, floe_error *err)
{
    size_t i = 0;
    while ((uri[i] >= 'a' && uri[i] <= 'z') || (uri[i] >= 'A' && uri[i] <= 'Z') ||
           (i > 0 && ((uri[i] >= '0' && uri[i] <= '9') || uri[i] == '+' || uri[i] == '-' ||
                      uri[i] == '.')))
        i++;
    if (i > 1 && uri[i] == ':' && uri[i + 1] == '/' && strncmp(uri, "file", i) != 0)
        return floe__err_set(err, FLOE_EUNSUPPORTED,
                             "%.*s: URIs are not supported by local storage (%s)", (int)i, uri,
                             uri);
    if (!*uri)
        return floe__err_set(err, FLOE_EINVAL, "empty storage location");
    return FLOE_OK;
}

typedef struct local_io {
    floe__fileio base;
    sync_state sync;
} local_io;

static int lio_open_output(floe__fileio *io, const char *uri, floe__output **out,
                           floe_error *err)
{
    FLOE_FORWARD(check_local(uri, err));
    return open_output(uri, &((local_io *)io)->sync, out, err);
}

/* One syncfs per file system written since the last sync: all the files
 * (and their directory entries) become durable at once, instead of one
 * fsync per file and per directory. */
static int lio_sync(floe__fileio *io, floe_error *err)
{
    sync_state *st = &((local_io *)io)->sync;
    int rc = FLOE_OK;
    pthread_mutex_lock(&st->lock);
    while (st->n > 0 && rc == FLOE_OK) {
        const char *dir = st->dir[st->n - 1];
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || syncfs(fd) != 0)
            rc = floe__err_set(err, FLOE_EIO, "syncing the file system of %s: %s", dir,
                               strerror(errno));
        if (fd >= 0)
            close(fd);
        if (rc == FLOE_OK)
            floe__free(st->dir[--st->n]);
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

static int lio_read_all(floe__fileio *io, const char *uri, floe__buf *dst, floe_error *err)
{
    (void)io;
    FLOE_FORWARD(check_local(uri, err));
    return floe__local_read_all(uri, dst, err);
}

static int lio_exists(floe__fileio *io, const char *uri, bool *exists, floe_error *err)
{
    (void)io;
    FLOE_FORWARD(check_local(uri, err));
    struct stat st;
    const char *path = floe__local_path(uri);
    if (stat(path, &st) == 0) {
        *exists = true;
        return FLOE_OK;
    }
    if (errno == ENOENT || errno == ENOTDIR) {
        *exists = false;
        return FLOE_OK;
    }
    return floe__err_set(err, FLOE_EIO, "stat %s: %s", path, strerror(errno));
}

static int lio_open_input(floe__fileio *io, const char *uri, floe__input **in, floe_error *err)
{
    (void)io;
    FLOE_FORWARD(check_local(uri, err));
    return floe__local_open_input(uri, in, err);
}

static int lio_list(floe__fileio *io, const char *uri, floe__list_fn fn, void *ctx,
                    floe_error *err)
{
    (void)io;
    FLOE_FORWARD(check_local(uri, err));
    return floe__local_list(uri, fn, ctx, err);
}

static int lio_remove(floe__fileio *io, const char *uri, floe_error *err)
{
    (void)io;
    FLOE_FORWARD(check_local(uri, err));
    const char *path = floe__local_path(uri);
    if (unlink(path) == 0)
        return FLOE_OK;
    return floe__err_set(err, errno == ENOENT ? FLOE_ENOTFOUND : FLOE_EIO, "remove %s: %s", path,
                         strerror(errno));
}

static void lio_free(floe__fileio *io)
{
    local_io *l = (local_io *)io;
    for (size_t i = 0; i < l->sync.n; i++)
        floe__free(l->sync.dir[i]);
    pthread_mutex_destroy(&l->sync.lock);
    floe__free(l);
}

static const floe__fileio_ops LOCAL_OPS = {
    .name = "local",
    .open_output = lio_open_output,
    .read_all = lio_read_all,
    .exists = lio_exists,
    .open_input = lio_open_input,
    .list = lio_list,
    .remove = lio_remove,
    .sync = lio_sync,
    .free = lio_free,
};

int floe__fileio_local_new(floe__fileio **out, floe_error *err)
{
    local_io *io = floe__calloc(1, sizeof *io);
    if (!io)
        return FLOE_OOM(err);
    io->base.ops = &LOCAL_OPS;
    pthread_mutex_init(&io->sync.lock, NULL);
    *out = &io->base;
    return FLOE_OK;
}
