/*
 * io_internal.h - storage: where floe's files live.
 *
 * A FileIO resolves URIs ("file:///...", plain paths, later "s3://...") to
 * object reads and whole-object writes.  Writes are atomic: an object is
 * either complete under its final name or absent.  This header declares the
 * local-file implementation; the FileIO interface itself grows with the
 * Iceberg layer.
 */
#ifndef FLOE_IO_INTERNAL_H
#define FLOE_IO_INTERNAL_H

#include "util/util_internal.h"

/* Open a local file for writing.  Bytes go to a temporary name in the same
 * directory (created with its parents when missing); close() fsyncs and
 * renames it to `path`; abort() unlinks it.  `path` may be a plain path or a
 * "file://" URI. */
int floe__local_output_open(const char *path, floe__output **out, floe_error *err);

/* Read a whole local file into `dst` (appending), at most dst->max bytes. */
int floe__local_read_all(const char *path, floe__buf *dst, floe_error *err);

/* The local path of a "file://" URI or plain path (pointer into `uri`). */
const char *floe__local_path(const char *uri);

#endif /* FLOE_IO_INTERNAL_H */
