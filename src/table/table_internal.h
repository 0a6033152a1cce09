/*
 * table_internal.h - the table layer: an Iceberg table reached through a
 * catalog.  Opening it (with the compatibility and location rules of
 * SPEC.md section 4), writing data and delete files under its location, and
 * committing them as one snapshot through the catalog.
 *
 * It sits above catalog/ (which knows table metadata but not tables) and
 * below sink/ and the public table API (table_api.c).  It owns snapshot
 * summaries and commit requirements; it does not know frontiers or sink
 * identities (those travel as summary properties and refs).
 */
#ifndef FLOE_TABLE_INTERNAL_H
#define FLOE_TABLE_INTERNAL_H

#include "catalog/catalog_internal.h"
#include "iceberg/manifest_internal.h"
#include "parquet/parquet_internal.h"

/* ---- tables (table.c) --------------------------------------------------------- */
typedef struct floe__table {
    floe__catalog *catalog;      /* borrowed */
    floe__fileio *io;            /* own_io when the catalog vended storage
                                    settings, else the one given (borrowed) */
    floe__fileio *own_io;        /* owned: the given FileIO with the load-table
                                    reply's "config" applied (REST), or NULL */
    char *ns, *name;
    floe__loaded_table *loaded;  /* current metadata and its location */
    floe__schema *schema;        /* the table's current schema (its field ids), with the
                                    declared source types copied in where one was given */
    int32_t schema_id;           /* current schema id when opened */
    int32_t spec_id;             /* default partition spec id when opened */
    char *data_location;         /* SPEC 4: write.data.path | write.folder-storage.path |
                                    <root>/data, trailing '/' trimmed */
} floe__table;

/* Load ns.name; when absent and `declared` is not NULL, create it
 * (unpartitioned, with `create_properties`, a JSON object or NULL) with the
 * declared schema.  When present and `declared` is not NULL, the table's
 * schema must be compatible with it (floe__schema_compatible): else
 * FLOE_EINCOMPATIBLE naming both schemas.  `declared` NULL: the table must
 * exist (FLOE_ENOTFOUND) and its own schema is used.  The namespace is
 * created when missing. */
int floe__table_open(floe__catalog *c, floe__fileio *io, const char *ns, const char *name,
                     const floe__schema *declared, const json_t *create_properties,
                     floe__table **out, floe_error *err);
/* Reload the current metadata from the catalog (schema and spec unchanged
 * in the struct: the caller compares ids to detect evolution). */
int floe__table_refresh(floe__table *t, floe_error *err);
void floe__table_free(floe__table *t);
/* Whether floe can write to the table as loaded: format version 2 and an
 * unpartitioned default spec (FLOE_EUNSUPPORTED naming what is not). */
int floe__table_check_writable(const floe__table *t, floe_error *err);

/* ---- file writers (file_writer.c) ---------------------------------------------------
 * Rows of one schema into Parquet files under the table's data location,
 * rolled over at a target size.  File names are unique across workers and
 * restarts: "<location>/<prefix>-<uuid>-<n>.parquet". */
typedef struct floe__file_writer_options {
    floe_parquet_options parquet;
    uint64_t target_file_size;        /* roll over at this estimated size; 0 = 512 MiB */
    const char *prefix;               /* file name prefix; NULL = "data" / "delete" */
} floe__file_writer_options;

typedef struct floe__file_writer floe__file_writer;

/* content DATA: `file_schema` is t->schema (or a superset for append mode).
 * content EQUALITY_DELETES: `file_schema` holds the key columns (from
 * floe__schema_project) and eq_ids their field ids.  The schema must outlive
 * the writer. */
int floe__file_writer_new(floe__table *t, floe__content content, const floe__schema *file_schema,
                          const int32_t *eq_ids, size_t n_eq_ids,
                          const floe__file_writer_options *o, floe__file_writer **out,
                          floe_error *err);
/* Append a row; *path and *pos (either may be NULL) receive the file and
 * the 0-based position the row went to (path valid until the writer is
 * closed or aborted). */
int floe__file_writer_write(floe__file_writer *w, const uint8_t *row, size_t len,
                            const char **path, uint64_t *pos, floe_error *err);
uint64_t floe__file_writer_rows(const floe__file_writer *w);
/* Finish every file and append them to `out`.  Frees w either way; on
 * failure the files it wrote are removed. */
int floe__file_writer_close(floe__file_writer *w, floe__content_list *out, floe_error *err);
/* Discard: removes every file written, frees w.  Accepts NULL. */
void floe__file_writer_abort(floe__file_writer *w);

/* Position deletes: (data file path, position) pairs gathered in memory,
 * sorted by path then position at close (as the spec requires) and written
 * as position delete files (schema: file_path 2147483546, pos 2147483545). */
typedef struct floe__posdel_writer floe__posdel_writer;
int floe__posdel_writer_new(floe__table *t, const floe__file_writer_options *o,
                            floe__posdel_writer **out, floe_error *err);
int floe__posdel_add(floe__posdel_writer *w, const char *data_path, uint64_t pos,
                     floe_error *err);
uint64_t floe__posdel_count(const floe__posdel_writer *w);
int floe__posdel_writer_close(floe__posdel_writer *w, floe__content_list *out, floe_error *err);
void floe__posdel_writer_abort(floe__posdel_writer *w);

/* ---- commits (commit.c, manifest.c) ---------------------------------------------------
 * One snapshot adding `files`: a data manifest and/or a delete manifest, a
 * manifest list carrying every manifest of the current snapshot forward,
 * and a summary with the standard totals plus `summary` (extra string
 * properties, e.g. floe.frontier).  Operation "append" when only data files
 * (or nothing) are added, "delete" when only delete files are, "overwrite"
 * when both are.  The commit asserts the
 * table uuid and that main still points at `base_snapshot_id` (-1: that the
 * table has no snapshot), so any concurrent change is a conflict, never a
 * silent duplicate.  No rebasing.
 *
 * Results: FLOE_OK (t->loaded is the new metadata; *snapshot_id set);
 * FLOE_ECONFLICT (nothing changed; the manifests written are removed);
 * FLOE_EUNKNOWN_OUTCOME (it may have landed: reload and look);
 * other codes are failures before or without a commit.  (When the catalog
 * reports a failure other than a conflict, the table is reloaded to tell
 * whether the snapshot landed anyway: if so the result is FLOE_OK, if that
 * cannot be told FLOE_EUNKNOWN_OUTCOME.)  The content files themselves are
 * never removed here: they are the caller's.  Partitioned or non-v2 tables:
 * FLOE_EUNSUPPORTED.  Summary keys floe computes (floe__summary_key_reserved)
 * may not appear in req->summary: FLOE_EINVAL. */
typedef struct floe__commit_request {
    const floe__content_file *files;
    size_t n_files;
    const json_t *summary;            /* object of strings, or NULL */
    int64_t base_snapshot_id;
    const char *tag;                  /* NULL, or a tag ref moved to the new snapshot in
                                         the same metadata update */
} floe__commit_request;

int floe__table_commit(floe__table *t, const floe__commit_request *req, int64_t *snapshot_id,
                       floe_error *err);

/* Whether `key` is a summary property floe__table_commit computes itself
 * ("operation", "added-*", "total-*", "changed-partition-count"): such
 * keys in req->summary are FLOE_EINVAL. */
bool floe__summary_key_reserved(const char *key);

/* The internal table behind a public handle (table_api.c), for the public
 * functions layers above implement (the sink's progress readers). */
floe__table *floe__table_of(const floe_table *t);

#endif /* FLOE_TABLE_INTERNAL_H */
