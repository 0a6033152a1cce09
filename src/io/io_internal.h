/*
 * io_internal.h - storage: where floe's files live.
 *
 * A FileIO resolves URIs ("file:///...", plain paths, "s3://bucket/key") to
 * object reads and whole-object writes.  Writes are atomic: an object is
 * either complete under its final name or absent.  This header declares the
 * FileIO interface (a vtable object), the local-file implementation and the
 * S3 one (which serves local URIs too, by scheme).
 */
#ifndef FLOE_IO_INTERNAL_H
#define FLOE_IO_INTERNAL_H

#include <jansson.h>

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

/* An object opened for random-access reads (Parquet footers and pages, a
 * Puffin blob).  read_at reads exactly [off, off + n), inside [0, size). */
typedef struct floe__input floe__input;
struct floe__input {
    uint64_t size;
    int (*read_at)(floe__input *in, uint64_t off, size_t n, uint8_t *dst, floe_error *err);
    void (*close)(floe__input *in);
};
static inline int floe__input_read_at(floe__input *in, uint64_t off, size_t n, uint8_t *dst,
                                      floe_error *err)
{
    return in->read_at(in, off, n, dst, err);
}
/* Accepts NULL. */
static inline void floe__input_close(floe__input *in)
{
    if (in)
        in->close(in);
}

/* One object a listing found. */
typedef struct floe__listed {
    const char *uri;                 /* valid during the callback only */
    uint64_t size;
    int64_t mtime_ms;                /* last modified, ms since the epoch */
} floe__listed;
typedef int (*floe__list_fn)(void *ctx, const floe__listed *obj, floe_error *err);

/* Open a local file for random-access reads (local_read.c); FLOE_ENOTFOUND
 * when it does not exist. */
int floe__local_open_input(const char *uri, floe__input **out, floe_error *err);
/* Every regular file under the local directory `uri` (local_read.c). */
int floe__local_list(const char *uri, floe__list_fn fn, void *ctx, floe_error *err);

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
    /* Open the object for random-access reads; FLOE_ENOTFOUND when it does
     * not exist.  *in is the caller's (floe__input_close); it may be used
     * from one thread at a time and must not outlive io. */
    int (*open_input)(floe__fileio *io, const char *uri, floe__input **in, floe_error *err);
    /* Every object under the prefix `uri` (a directory, or an S3 key prefix
     * ending in '/'), recursively, in no particular order; fn's failure
     * stops the listing and is returned. */
    int (*list)(floe__fileio *io, const char *uri, floe__list_fn fn, void *ctx, floe_error *err);
    /* Delete the object; FLOE_ENOTFOUND when it does not exist (S3: seen
     * by a HEAD just before; the delete itself is idempotent). */
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
static inline int floe__fileio_open_input(floe__fileio *io, const char *uri, floe__input **in,
                                          floe_error *err)
{
    if (!io->ops->open_input)
        return floe__err_set(err, FLOE_EUNSUPPORTED, "%s storage cannot read %s at random",
                             io->ops->name, uri);
    return io->ops->open_input(io, uri, in, err);
}
static inline int floe__fileio_list(floe__fileio *io, const char *uri, floe__list_fn fn,
                                    void *ctx, floe_error *err)
{
    if (!io->ops->list)
        return floe__err_set(err, FLOE_EUNSUPPORTED, "%s storage cannot list %s",
                             io->ops->name, uri);
    return io->ops->list(io, uri, fn, ctx, err);
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

/* ---- S3 (s3.c, s3_request.c, s3_xml.c, s3_output.c) ---------------------------
 * The S3 FileIO serves "s3://BUCKET/KEY" URIs (also s3a://, s3n://) and
 * hands every other URI to a local FileIO inside it, so metadata written
 * anywhere can be read.  Safe for many threads at once.
 *
 *  - Addressing: path-style (ENDPOINT/BUCKET/KEY) or virtual-hosted
 *    (BUCKET.HOST/KEY); default endpoint https://s3.REGION.amazonaws.com.
 *  - Signing: AWS SigV4 by libcurl with payload UNSIGNED-PAYLOAD; without an
 *    access key id requests go unsigned (public buckets).
 *  - Writes: an output buffers up to part_size bytes; closed before that,
 *    the object is one PUT; otherwise a multipart upload (parts of
 *    part_size, doubled every 1000 parts), completed on close, aborted on
 *    abort() or on any failure.  Nothing is visible under the key until
 *    close() succeeds.  sync is a no-op: a completed upload is durable.
 *  - Retries: transport failures, 5xx, 429, throttling (SlowDown),
 *    RequestTimeout, BadDigest, with exponential backoff and jitter, up to
 *    max_attempts; then the error says "gave up after N attempts" and is
 *    retryable (floe_error_retryable).
 *  - Errors: FLOE_ENOTFOUND (404), FLOE_EAUTH (credentials refused, access
 *    denied, expired token; the message says which setting to check),
 *    FLOE_EINVAL (another region or endpoint serves the bucket), FLOE_ENET
 *    (no reply, e.g. TLS verification failed), FLOE_EIO (others).
 *    Messages name the operation, URI, endpoint, region and S3's error
 *    code and message, never the secret key or session token.
 *  - TLS: certificates are always verified; ca_file adds a CA bundle. */
typedef struct floe__s3_options {
    const char *endpoint;           /* "http(s)://host[:port]" (no scheme: https);
                                       NULL: AWS */
    const char *region;             /* NULL: us-east-1 */
    const char *access_key_id;      /* NULL: unsigned requests */
    const char *secret_access_key;
    const char *session_token;      /* NULL: none */
    int path_style;                 /* 1 path-style, 0 virtual-hosted, -1: path-style
                                       when an endpoint is given */
    const char *ca_file;            /* extra CA bundle (PEM); NULL: system CAs */
    size_t part_size;               /* multipart part size; 0: 8 MiB; 5 MiB..5 GiB */
    int max_attempts;               /* per request; 0: 5 */
    long retry_base_ms;             /* first backoff; 0: 100 */
    long retry_max_ms;              /* longest backoff; 0: 5000 */
    long connect_timeout_ms;        /* 0: 10 s */
    long request_timeout_ms;        /* one attempt; 0: 120 s */
} floe__s3_options;

void floe__s3_options_init(floe__s3_options *o);   /* zeroes, path_style = -1 */

/* A new S3 FileIO (strings are copied).  FLOE_EINVAL for bad settings.
 * *out is the caller's (floe__fileio_free). */
int floe__fileio_s3_new(const floe__s3_options *o, floe__fileio **out, floe_error *err);

/* Override settings of an S3 FileIO with an Iceberg-style property object,
 * e.g. the "config" of a REST catalog's load-table reply (vended
 * credentials).  String values (JSON strings; booleans and integers are
 * accepted too); other keys are ignored:
 *   s3.endpoint, s3.region or client.region, s3.path-style-access
 *   ("true"/"false"), s3.access-key-id, s3.secret-access-key,
 *   s3.session-token (when any of these three is given, all three are
 *   replaced: an absent token becomes none),
 *   floe.s3.part-size, floe.s3.max-attempts, floe.s3.retry-base-ms,
 *   floe.s3.retry-max-ms, floe.s3.connect-timeout-ms,
 *   floe.s3.request-timeout-ms (numbers, as in floe__s3_options).
 * Requests already running finish with the old settings; later ones use
 * the new.  FLOE_EINVAL when io is not an S3 FileIO or a value is bad
 * (then nothing changes). */
int floe__fileio_s3_configure(floe__fileio *io, const json_t *config, floe_error *err);

/* A new S3 FileIO with io's current settings overridden by `config` (as
 * floe__fileio_s3_configure): a per-table FileIO for vended credentials.
 * io is not changed and need not outlive *out. */
int floe__fileio_s3_derive(floe__fileio *io, const json_t *config, floe__fileio **out,
                           floe_error *err);

/* The FileIO for resolved connection options (floe__connect_resolve):
 * S3 (s3_* fields, ca_file) plus local files by scheme. */
int floe__fileio_for_connect(const floe_connect_options *o, floe__fileio **out,
                             floe_error *err);

#endif /* FLOE_IO_INTERNAL_H */
