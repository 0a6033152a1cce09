/*
 * io_internal.h - storage: where floe's files live.
 *
 * A FileIO resolves URIs ("file:///...", plain paths, later "s3://...") to
 * object reads and whole-object writes.  Writes are atomic: an object is
 * either complete under its final name or absent.  This header declares the
 * FileIO interface (a vtable object, so S3 can join later) and the
 * local-file implementation.
 */
#ifndef FLOE_IO_INTERNAL_H
#define FLOE_IO_INTERNAL_H

#include "util/util_internal.h"

/* Open a local file for writing.  Bytes go to a temporary name in the same
 * directory (created with its parents when missing); close() fsyncs and
 * renames it to `path`; abort() unlinks it.  `path` may be a plain path or a
 * "file://" URI. */
int floe__local_output_open(const char *path, floe__output **out, floe_error *err);

/* Create a local directory and its missing parents (a path or file:// URI). */
int floe__local_mkdirs(const char *dir, floe_error *err);

/* Read a whole local file into `dst` (appending), at most dst->max bytes. */
int floe__local_read_all(const char *path, floe__buf *dst, floe_error *err);

/* The local path of a "file://" URI ("file:///abs", "file://localhost/abs",
 * "file:/abs") or plain path (pointer into `uri`). */
const char *floe__local_path(const char *uri);

/* ---- the FileIO interface ------------------------------------------------
 * Every operation takes a URI.  One FileIO may serve many threads only if
 * its implementation says so (local: yes, it holds no state). */
typedef struct floe__fileio floe__fileio;

typedef struct floe__fileio_ops {
    const char *name;                                   /* "local", "s3" */
    /* A new atomic output stream for `uri` (see floe__output): nothing is
     * visible under `uri` until close() succeeds; it is durable after the
     * next sync. */
    int (*open_output)(floe__fileio *io, const char *uri, floe__output **out, floe_error *err);
    /* Append the whole object to dst (at most dst->max bytes: FLOE_ELIMIT
     * beyond).  A missing object is FLOE_ENOTFOUND. */
    int (*read_all)(floe__fileio *io, const char *uri, floe__buf *dst, floe_error *err);
    /* *exists = whether the object exists. */
    int (*exists)(floe__fileio *io, const char *uri, bool *exists, floe_error *err);
    /* Delete the object; FLOE_ENOTFOUND when it does not exist. */
    int (*remove)(floe__fileio *io, const char *uri, floe_error *err);
    /* Make every object closed so far durable (an object store's completed
     * writes already are).  Called before a commit refers to them. */
    int (*sync)(floe__fileio *io, floe_error *err);
    void (*free)(floe__fileio *io);
} floe__fileio_ops;

struct floe__fileio {
    const floe__fileio_ops *ops;
};

static inline int floe__fileio_open_output(floe__fileio *io, const char *uri, floe__output **out,
                                           floe_error *err)
{
    return io->ops->open_output(io, uri, out, err);
}
static inline int floe__fileio_read_all(floe__fileio *io, const char *uri, floe__buf *dst,
                                        floe_error *err)
{
    return io->ops->read_all(io, uri, dst, err);
}
static inline int floe__fileio_exists(floe__fileio *io, const char *uri, bool *exists,
                                      floe_error *err)
{
    return io->ops->exists(io, uri, exists, err);
}
static inline int floe__fileio_remove(floe__fileio *io, const char *uri, floe_error *err)
{
    return io->ops->remove(io, uri, err);
}
static inline int floe__fileio_sync(floe__fileio *io, floe_error *err)
{
    return io->ops->sync ? io->ops->sync(io, err) : FLOE_OK;
}
/* Accepts NULL. */
static inline void floe__fileio_free(floe__fileio *io)
{
    if (io)
        io->ops->free(io);
}
/* Write `n` bytes as the whole object `uri`, atomically. */
int floe__fileio_write_all(floe__fileio *io, const char *uri, const void *p, size_t n,
                           floe_error *err);

/* The local file system: "file://" URIs ("file:///abs", "file:/abs",
 * "file://localhost/abs") and plain paths; any other scheme is
 * FLOE_EUNSUPPORTED.  *out is the caller's (floe__fileio_free). */
int floe__fileio_local_new(floe__fileio **out, floe_error *err);

#endif /* FLOE_IO_INTERNAL_H */
