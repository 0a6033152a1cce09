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
#include "iceberg/puffin_internal.h"
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
    bool created;                /* by this open (from the declared schema) */
    bool compare;                /* an existing table's schema is checked against the
                                    declared one at open */
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
/* floe__table_open, creating the table (when it must) with format version
 * `format_version`: 2, 3, or 0 for the default (2, or the "format-version"
 * of create_properties).  An existing table keeps its version. */
int floe__table_open_v(floe__catalog *c, floe__fileio *io, const char *ns, const char *name,
                       const floe__schema *declared, const json_t *create_properties,
                       int format_version, floe__table **out, floe_error *err);
/* floe__table_open_v; compare false: an existing table is opened with its
 * own schema whatever `declared` says (the caller evolves it: SPEC 4), and
 * t->created tells whether this open created it. */
int floe__table_open_x(floe__catalog *c, floe__fileio *io, const char *ns, const char *name,
                       const floe__schema *declared, const json_t *create_properties,
                       int format_version, bool compare, floe__table **out, floe_error *err);
/* Reload the current metadata from the catalog (schema and spec unchanged
 * in the struct: the caller compares ids to detect evolution). */
int floe__table_refresh(floe__table *t, floe_error *err);
/* A handle on t as it is now, for file writers on other threads while t's
 * owner commits and reloads it: its own copy of the metadata, schema and
 * data location; t's catalog and FileIO borrowed (t must outlive it).
 * Nothing refreshes it.  Free with floe__table_free. */
int floe__table_pin(const floe__table *t, floe__table **out, floe_error *err);
void floe__table_free(floe__table *t);
/* Commit metadata updates without a new snapshot (REST shapes, e.g.
 * remove-snapshots): `requirements` are checked against the catalog's
 * current metadata.  On success t->loaded is the result; FLOE_ECONFLICT
 * changed nothing; other failures as floe__catalog_commit_table's. */
int floe__table_update(floe__table *t, const json_t *requirements, const json_t *updates,
                       floe_error *err);
/* Whether floe writes files of the table as loaded: format version 2 or 3
 * (FLOE_EUNSUPPORTED otherwise).  File writers and commits check this;
 * files of a partitioned spec must carry their partition tuples (the
 * partitioned writer below), else the commit is FLOE_EINVAL. */
int floe__table_check_format(const floe__table *t, floe_error *err);
/* Whether the table's spec (t->spec_id) has partition fields. */
bool floe__table_partitioned(const floe__table *t);
/* Whether the default spec of t as loaded has the fields of `spec` (JSON:
 * the same sources and transforms, in order; ids and names aside). */
bool floe__table_default_spec_is(const floe__table *t, const json_t *spec);
/* Whether specs a and b (JSON) have the same sources and transforms, in order. */
bool floe__spec_same_fields(const json_t *a, const json_t *b);

/* ---- file writers (file_writer.c) ---------------------------------------------------
 * Rows of one schema into Parquet files under the table's data location,
 * rolled over at a target size.  File names are unique across workers and
 * restarts: "<location>/<prefix>-<uuid>-<n>.parquet". */
/* write.target-file-size-bytes when a table does not set it. */
#define FLOE__DEFAULT_TARGET_FILE_SIZE ((uint64_t)512 << 20)

typedef struct floe__file_writer_options {
    floe_parquet_options parquet;
    uint64_t target_file_size;        /* roll over at this estimated size; 0 = the default */
    const char *prefix;               /* file name prefix; NULL = "data" / "delete" */
} floe__file_writer_options;

typedef struct floe__file_writer floe__file_writer;

/* The options the table's properties ask of files of `content`
 * (write_props.c: Iceberg's write.parquet.* and write.target-file-size-bytes;
 * for delete files their write.delete.* forms first), floe's defaults where
 * they say nothing.  FLOE_EUNSUPPORTED / FLOE_EINVAL naming the property
 * when one asks for what floe cannot write or is not valid. */
int floe__table_file_options(const floe__table *t, floe__content content,
                             floe__file_writer_options *out, floe_error *err);

/* content DATA: `file_schema` is t->schema (or a superset for append mode).
 * o NULL: the table's options (floe__table_file_options).
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
/* The estimated size at which a file rolls over. */
uint64_t floe__file_writer_target(const floe__file_writer *w);
/* The estimated size of the file being written (0: none open). */
uint64_t floe__file_writer_open_bytes(const floe__file_writer *w);
/* The bytes of its open row group held in memory (0: none open). */
uint64_t floe__file_writer_buffered(const floe__file_writer *w);
/* The path of the file being written, once it holds a row (NULL: none);
 * valid until the next write. */
const char *floe__file_writer_open_path(const floe__file_writer *w);
/* Close the file being written now (it becomes readable); the next row
 * opens another. */
int floe__file_writer_roll(floe__file_writer *w, floe_error *err);
/* A new name for one of the writer's files (*path owned by the caller), to
 * be written later through floe__file_writer_open_at. */
int floe__file_writer_name(floe__file_writer *w, char **path, floe_error *err);
/* Open the next file under `path` (from floe__file_writer_name; taken
 * either way): no file may be open.  It takes rows without rolling over
 * at the target size until floe__file_writer_roll finishes it. */
int floe__file_writer_open_at(floe__file_writer *w, char *path, floe_error *err);
/* Move the files finished so far to the end of `out`. */
int floe__file_writer_take(floe__file_writer *w, floe__content_list *out, floe_error *err);
/* Finish every file and append them to `out`.  Frees w either way; on
 * failure the files it wrote are removed. */
int floe__file_writer_close(floe__file_writer *w, floe__content_list *out, floe_error *err);
/* Discard: removes every file written, frees w.  Accepts NULL. */
void floe__file_writer_abort(floe__file_writer *w);

/* ---- partitioned data files (part_writer.c) --------------------------------------------
 * Rows routed by their partition tuple under a spec (the table's,
 * t->spec_id, unless the caller gives the one its commit adds); every
 * finished file holds one tuple and carries it (content_file.partition) to
 * the commit.  An unpartitioned spec gives one writer, like
 * floe__file_writer.  A partitioned one writes clustered: each tuple's
 * rows are held (as row bytes) until the writer closes or they reach the
 * target file size, and then written as one file, one file at a time; the
 * file's name and each row's position in it are fixed when the row
 * arrives, so floe__part_writer_write reports them at once.
 *
 * Memory: the writers sharing a budget (e.g. every open batch of a sink)
 * count what they hold (row bytes of a partitioned writer, the open row
 * group of an unpartitioned one) in budget->used; before a row is written,
 * while used exceeds budget->limit (0: no bound), a partitioned writer
 * writes out the tuple holding the most as a file (an early close).  So
 * used stays within limit plus a row per writer plus one unpartitioned
 * writer's row group, and writing out a tuple needs one file's row group
 * more while it runs. */
typedef struct floe__part_budget {
    uint64_t limit;                   /* bytes; 0: unbounded */
    uint64_t used;                    /* what the sharing writers buffer now */
} floe__part_budget;
typedef struct floe__part_writer floe__part_writer;
/* `schema` (t->schema or a superset, outliving the writer) holds the
 * spec's source columns; spec (partition spec JSON, read here only) NULL:
 * the table's (t->spec_id); o NULL: the table's options; budget (borrowed,
 * outliving the writer) NULL: unbounded. */
int floe__part_writer_new(floe__table *t, const floe__schema *schema, const json_t *spec,
                          const floe__file_writer_options *o, floe__part_budget *budget,
                          floe__part_writer **out, floe_error *err);
/* Equality delete rows of eq_schema (the key columns, field ids eq_ids):
 * routed by `spec` (NULL: the table's) when every source column of it is a
 * key column (floe__spec_covered_by), each file then holding one
 * partition's keys; else written without a tuple, as a global delete (the
 * commit puts such files in an unpartitioned spec). */
int floe__part_writer_new_deletes(floe__table *t, const floe__schema *eq_schema,
                                  const int32_t *eq_ids, size_t n_eq_ids, const json_t *spec,
                                  const floe__file_writer_options *o, floe__part_budget *budget,
                                  floe__part_writer **out, floe_error *err);
/* Whether every source column of partition spec `spec` (JSON) is among ids. */
bool floe__spec_covered_by(const json_t *spec, const int32_t *ids, size_t n);
/* Append a row; *path and *pos (either may be NULL) as floe__file_writer_write's
 * (the path stays valid until the writer is closed or aborted). */
int floe__part_writer_write(floe__part_writer *w, const uint8_t *row, size_t len,
                            const char **path, uint64_t *pos, floe_error *err);
/* The bound spec the writer partitions by (owned by the writer). */
const struct floe__partition_spec *floe__part_writer_spec(const floe__part_writer *w);
/* How many tuples hold rows not yet written (unpartitioned: 0 or 1). */
size_t floe__part_writer_open_count(const floe__part_writer *w);
/* How many files it wrote early to stay within its budget. */
uint64_t floe__part_writer_early_closes(const floe__part_writer *w);
/* Close the file `path` now if one of its open writers is writing it (so
 * it can be read); the next row of its tuple opens another.  No such file:
 * nothing happens. */
int floe__part_writer_roll_path(floe__part_writer *w, const char *path, floe_error *err);
/* Finish every file and append them (with their tuples) to out.  Frees w
 * either way; on failure every file it wrote is removed. */
int floe__part_writer_close(floe__part_writer *w, floe__content_list *out, floe_error *err);
void floe__part_writer_abort(floe__part_writer *w);   /* removes its files; accepts NULL */

/* Position deletes: (data file path, position) pairs gathered in memory,
 * sorted by path then position at close (as the spec requires) and written
 * as position delete files (schema: file_path 2147483546, pos 2147483545). */
typedef struct floe__posdel_writer floe__posdel_writer;
/* o NULL: the table's options for position delete files. */
int floe__posdel_writer_new(floe__table *t, const floe__file_writer_options *o,
                            floe__posdel_writer **out, floe_error *err);
int floe__posdel_add(floe__posdel_writer *w, const char *data_path, uint64_t pos,
                     floe_error *err);
uint64_t floe__posdel_count(const floe__posdel_writer *w);
int floe__posdel_writer_close(floe__posdel_writer *w, floe__content_list *out, floe_error *err);
void floe__posdel_writer_abort(floe__posdel_writer *w);

/* ---- paths -> indexes (posdel_set.c) ---------------------------------------------------
 * An open-addressing hash map from a path (borrowed: it must outlive the
 * map) to a size_t.  Zero-initialized is empty. */
typedef struct floe__pathmap_slot {
    const char *path;                 /* NULL: empty slot */
    size_t value;
} floe__pathmap_slot;
typedef struct floe__pathmap {
    floe__pathmap_slot *slots;
    size_t n, cap;
} floe__pathmap;
void floe__pathmap_clear(floe__pathmap *m);
bool floe__pathmap_get(const floe__pathmap *m, const char *path, size_t *value);
/* Insert path -> value; a path already there keeps its value (*existed true). */
int floe__pathmap_put(floe__pathmap *m, const char *path, size_t value, bool *existed,
                      floe_error *err);

/* ---- interned strings (strtab.c) ---------------------------------------------------------
 * Each distinct string its dense index (0, 1, ...) in t->s (owned copies),
 * found again through a floe__pathmap.  Zero-initialized is empty. */
typedef struct floe__strtab {
    char **s;                         /* by index */
    size_t n, cap;
    floe__pathmap index;              /* string -> index */
} floe__strtab;
void floe__strtab_free(floe__strtab *t);      /* and leaves it empty, ready for use */
/* The index of s, added when new. */
int floe__strtab_intern(floe__strtab *t, const char *s, uint32_t *index, floe_error *err);
/* Append s[0, len) as the next index even if present (a list read back
 * that must keep its indexes; finding a repeated string gives the first). */
int floe__strtab_push(floe__strtab *t, const char *s, size_t len, floe_error *err);

/* ---- position delete sets (posdel_set.c) ---------------------------------------------------
 * Data file path -> the set of deleted row positions (sorted, unique; a
 * Roaring-style bitmap: about 2 bytes a position when sparse, 1 bit when
 * dense).  The set owns copies of the paths and the bitmaps.  A commit
 * request may carry one (floe__commit_request.deletes): the commit writes it
 * for the table's format at each attempt. */
typedef struct floe__posdel_set floe__posdel_set;
int floe__posdel_set_new(floe__posdel_set **out, floe_error *err);
void floe__posdel_set_free(floe__posdel_set *s);               /* accepts NULL */
/* Add one position (<= 2^63 - 1) of data file `data_path`; duplicates are no-ops. */
int floe__posdel_set_add(floe__posdel_set *s, const char *data_path, uint64_t pos,
                         floe_error *err);
/* Add every position of `positions` (borrowed) to data_path's set. */
int floe__posdel_set_add_all(floe__posdel_set *s, const char *data_path,
                             const floe__posbitmap *positions, floe_error *err);
uint64_t floe__posdel_set_count(const floe__posdel_set *s);   /* positions, all files */
size_t floe__posdel_set_files(const floe__posdel_set *s);     /* data files */
/* The i-th data file (in the order first added) and its positions; both
 * owned by the set, valid until it changes.  NULL past the end. */
const char *floe__posdel_set_path(const floe__posdel_set *s, size_t i);
const floe__posbitmap *floe__posdel_set_positions(const floe__posdel_set *s, size_t i);
/* The positions of `path`, or NULL when the set has none for it. */
const floe__posbitmap *floe__posdel_set_find(const floe__posdel_set *s, const char *path);
/* A new array of the file indexes in path (byte) order; caller floe__free()s. */
int floe__posdel_set_sorted(const floe__posdel_set *s, size_t **order, floe_error *err);

/* ---- what a snapshot holds (plan.c) ---------------------------------------------------------
 * Scan planning without filters: every live (ADDED or EXISTING) file of a
 * snapshot, read from its manifest list and manifests (v1/v2/v3, any
 * writer) through the table's FileIO, with inherited values resolved (data
 * and file sequence numbers, the adding snapshot, v3 first_row_id), and for
 * each data file the delete files that apply to it by the spec's rules:
 *   - a deletion vector: referenced_data_file equal to the data file's
 *     path and data sequence number >= the data file's; at most one
 *     (two are FLOE_EFORMAT); when there is one, no position delete file
 *     applies;
 *   - a position delete file: referenced_data_file equal to the path when
 *     set (file-scoped), else any data file whose path lies within the
 *     delete file's file_path bounds (2147483546; all when it has none);
 *     data sequence number >= the data file's;
 *   - an equality delete file: data sequence number > the data file's
 *     and, for a delete of a partitioned spec, the same spec and partition
 *     tuple (floe__plan_eq_applies; unpartitioned deletes are global).
 * Matching is one pass over the manifests plus an index by referenced path
 * (DVs, file-scoped deletes), binary searches over the data files sorted by
 * path (bounded unscoped deletes) and one suffix of the equality deletes
 * sorted by sequence number per data file: nothing is quadratic except
 * unscoped position delete files, which are per file lists by nature. */
typedef struct floe__plan_file {
    floe__content_file file;          /* owned; data files: first_row_id resolved when the
                                         manifest assigns one (v3) */
    int64_t data_seq, file_seq;       /* resolved sequence numbers */
    int64_t snapshot_id;              /* the snapshot that added (or removed) the file */
    int32_t spec_id;                  /* of its manifest */
    uint32_t manifest;                /* index into floe__plan.manifests */
    uint32_t entry;                   /* entry index within that manifest */
} floe__plan_file;

typedef struct floe__plan_data {
    floe__plan_file f;
    size_t dv;                        /* index into plan->deletes of its DV, or SIZE_MAX */
    size_t *pos;                      /* indexes into plan->deletes of the position delete
                                         files that apply (none when dv is set); owned */
    size_t n_pos;
    size_t eq_from;                   /* plan->eq[eq_from .. n_eq) apply, those for which
                                         floe__plan_eq_applies says so */
} floe__plan_data;

/* Whether equality delete file `del` (data sequence number already above
 * the data file's) applies to data file `data` by partition: a delete of
 * an unpartitioned spec applies to every data file, one of a partitioned
 * spec only to files of the same spec and partition tuple. */
bool floe__plan_eq_applies(const floe__plan_file *data, const floe__plan_file *del);

typedef struct floe__plan_totals {
    uint64_t data_files, data_rows, data_size;
    uint64_t delete_files, pos_delete_files, dvs, eq_delete_files;
    uint64_t pos_deletes, eq_deletes;                 /* rows (DV cardinalities included) */
} floe__plan_totals;

/* Everything is owned by the plan (floe__plan_free). */
typedef struct floe__plan {
    int64_t snapshot_id;              /* -1: the table had no snapshot (all empty) */
    floe__manifest_list manifests;    /* the snapshot's manifest list, as read */
    floe__plan_data *data;            /* live data files, in manifest order */
    size_t n_data;
    floe__plan_file *deletes;         /* live delete files and DVs, in manifest order */
    size_t n_deletes;
    size_t *eq;                       /* indexes into deletes of the equality delete
                                         files, by data sequence number ascending */
    size_t n_eq;
    floe__pathmap data_index;         /* data file path -> index into data */
    floe__plan_totals totals;
} floe__plan;

/* Plan snapshot `snapshot_id` of md (-1: the current one; a table without
 * snapshots gives an empty plan).  Unknown snapshot: FLOE_ENOTFOUND;
 * malformed manifests: FLOE_EFORMAT; a v1 snapshot without a manifest
 * list: FLOE_EUNSUPPORTED. */
int floe__plan_snapshot(floe__fileio *io, const floe__metadata *md, int64_t snapshot_id,
                        floe__plan **out, floe_error *err);
/* The same for t's loaded metadata and FileIO. */
int floe__table_plan(floe__table *t, int64_t snapshot_id, floe__plan **out, floe_error *err);
void floe__plan_free(floe__plan *p);
/* Rows of data file i its DV or file-scoped position deletes delete. */
uint64_t floe__plan_deleted_rows(const floe__plan *p, size_t i);
/* The delete files that apply to data file i (DV first, then position
 * delete files, then equality deletes), as a new array of pointers into
 * p->deletes (caller floe__free()s the array; *n may be 0). */
int floe__plan_applicable(const floe__plan *p, size_t i, const floe__plan_file ***out,
                          size_t *n, floe_error *err);

/* What one snapshot changed relative to its parent: the files its own
 * manifests (added_snapshot_id = the snapshot) list as ADDED or DELETED by
 * it.  Only those manifests are read.  Owned by the struct. */
typedef struct floe__snapshot_changes {
    int64_t snapshot_id;
    floe__plan_file *added_data, *removed_data, *added_deletes, *removed_deletes;
    size_t n_added_data, n_removed_data, n_added_deletes, n_removed_deletes;
} floe__snapshot_changes;
int floe__snapshot_changes_read(floe__fileio *io, const floe__metadata *md, int64_t snapshot_id,
                                floe__snapshot_changes **out, floe_error *err);
void floe__snapshot_changes_free(floe__snapshot_changes *c);

/* Read one manifest of a list and resolve what its entries inherit: every
 * entry ends with snapshot id and both sequence numbers set, v3 data
 * entries with first_row_id (when mf has one).  Appends to out. */
int floe__manifest_read_resolved(floe__fileio *io, const floe__manifest_file *mf,
                                 floe__manifest_entries *out, floe_error *err);

/* Read the deletion vector `dv` (a content file with format PUFFIN and a
 * content range, as planned) into the empty `out`, through io: the blob is
 * checked (magic, lengths, CRC, cardinality = record_count). */
int floe__dv_read(floe__fileio *io, const floe__content_file *dv, floe__posbitmap *out,
                  floe_error *err);

/* ---- reading files back (file_read.c) -------------------------------------------------------
 * A data or delete file of the table read through its FileIO for a
 * projection (see the Parquet reader in parquet_internal.h). */
typedef struct floe__file_reader floe__file_reader;
/* Errors: the FileIO's (FLOE_ENOTFOUND, FLOE_EIO, ...) and the reader's, with
 * the file named. */
int floe__file_reader_open(floe__fileio *io, const char *uri, const floe__schema *projection,
                           floe__file_reader **out, floe_error *err);
floe__pq_reader *floe__file_reader_pq(floe__file_reader *r);    /* owned by r */
/* Every row of `uri` read with `projection`, in order: fn(ctx, row, len,
 * position); fn's failure stops the walk and is returned. */
typedef int (*floe__row_fn)(void *ctx, const uint8_t *row, size_t len, uint64_t pos,
                            floe_error *err);
int floe__file_rows_each(floe__fileio *io, const char *uri, const floe__schema *projection,
                         floe__row_fn fn, void *ctx, floe_error *err);
void floe__file_reader_free(floe__file_reader *r);               /* accepts NULL */
/* Iceberg's reserved position delete schema {2147483546 file_path: string,
 * 2147483545 pos: long} (caller frees). */
int floe__posdel_schema_new(floe__schema **out, floe_error *err);
/* Every (data file, position) of a position delete file into `out`. */
int floe__posdel_file_read(floe__fileio *io, const char *uri, floe__posdel_set *out,
                           floe_error *err);

/* The positions a plan's DVs and position delete files delete from each of
 * its data files.  Unscoped position delete files are read once and kept;
 * the plan must outlive it.  Equality deletes are not its business. */
typedef struct floe__deleted floe__deleted;
int floe__deleted_new(floe__fileio *io, const floe__plan *p, floe__deleted **out,
                      floe_error *err);
void floe__deleted_free(floe__deleted *d);                       /* accepts NULL */
/* Data file i's deleted positions: *out NULL when none, else valid until
 * the next call.  Errors name the delete file. */
int floe__deleted_positions(floe__deleted *d, size_t i, const floe__posbitmap **out,
                            floe_error *err);

/* ---- live rows (live_rows.c) ---------------------------------------------------------------
 * The rows of a plan's data files that no delete deletes, as a reader sees
 * them: a file's DV or position delete files, and the equality delete
 * files the plan applies to it (each read once into a set of its rows'
 * projection onto its columns; null equals null).  `schema` is the table's
 * columns (the current schema: files of older ones read into it by field
 * id); io, plan and schema must outlive it. */
typedef struct floe__live floe__live;
int floe__live_new(floe__fileio *io, const floe__plan *p, const floe__schema *schema,
                   floe__live **out, floe_error *err);
void floe__live_free(floe__live *l);                             /* accepts NULL */
/* Data file i's positions its DV or position delete files delete (*out
 * NULL when none), valid until the next call. */
int floe__live_positions(floe__live *l, size_t i, const floe__posbitmap **out,
                         floe_error *err);
/* Every row of data file i, in order, read with `rows` (NULL: the schema;
 * else the schema's columns followed by more fields): live(ctx, row, len,
 * pos) for each live row, gone (NULL: none) for each deleted one; extra
 * (NULL: none): more positions to count as deleted.  A callback's failure
 * stops the walk and is returned. */
int floe__live_file_rows(floe__live *l, size_t i, const floe__schema *rows,
                         const floe__posbitmap *extra, floe__row_fn live, floe__row_fn gone,
                         void *ctx, floe_error *err);
/* Every live row of the plan, file by file, read with the schema. */
int floe__live_rows_each(floe__live *l, floe__row_fn fn, void *ctx, floe_error *err);

/* ---- commits (table_commit.c, commit_files.c) ---------------------------------------------
 * One snapshot adding `files` (data files go in a data manifest, delete
 * files in a delete manifest), writing `deletes` for the table's format,
 * removing the files `remove` names, and carrying every other manifest of
 * the current snapshot forward; with a summary holding the standard counts
 * plus `summary` (extra string properties, e.g. floe.frontier).
 *
 * deletes (optional, borrowed): position deletes, written at each attempt
 * against the metadata then loaded: on a v2 table one file-scoped position
 * delete Parquet file per data file (referenced_data_file set); on a v3
 * table one Puffin file with a deletion vector per data file, each merged
 * with that file's current DV, whose entry the commit removes (at most one
 * DV per data file).  Each delete file and DV carries its data file's
 * partition tuple and goes in a delete manifest of that file's spec (one
 * manifest per spec).  Every data file named must be live in the current
 * snapshot: else FLOE_ECONFLICT naming it (a compaction rewrote it).  v3
 * tables take position deletes only this way (Parquet position delete
 * files in `files` are FLOE_EINVAL there).
 * remove (optional): paths of live content files to remove - data files,
 * delete files, or a Puffin file (all its DVs); removing a data file also
 * removes its DV and file-scoped position deletes.  The manifests holding
 * them are rewritten (removed entries DELETED, the rest EXISTING with their
 * sequence numbers).  A path not live in the current snapshot:
 * FLOE_ECONFLICT naming it (nothing written stays).
 * operation (optional): "append", "replace", "overwrite" or "delete"; by
 * default "append" when only data files (or nothing) are added, "delete"
 * when no data file is added but deletes are or files are removed,
 * "overwrite" when data files are added and deletes added or files removed.
 * has_data_sequence_number: the added data files keep this data sequence
 * number (written explicitly in their entries, e.g. a compaction's output
 * keeping the rows' age so equality deletes still apply); at most the new
 * snapshot's sequence number.
 *
 * The commit asserts the table uuid and that main still points at
 * `base_snapshot_id` (-1: that the table has no snapshot), so any
 * concurrent change is a conflict, never a silent duplicate.  No rebasing.
 * v3 tables get row lineage: first-row-id = next-row-id, data manifests
 * without a first_row_id get one, added-rows their added + existing rows.
 *
 * Results: FLOE_OK (t->loaded is the new metadata; *snapshot_id set);
 * FLOE_ECONFLICT (nothing changed; what this attempt wrote is removed);
 * FLOE_EUNKNOWN_OUTCOME (it may have landed: reload and look; what this
 * attempt wrote is kept); other codes are failures before or without a
 * commit.  (When the catalog reports a failure other than a conflict, the
 * table is reloaded to tell whether the snapshot landed anyway: if so the
 * result is FLOE_OK, if that cannot be told FLOE_EUNKNOWN_OUTCOME.)  The
 * files in `files` are never removed here: they are the caller's; the
 * delete files the commit writes for `deletes` are its own.  The files in
 * `files` are of the table's spec (t->spec_id) and carry its tuples.
 * Tables not v2/v3: FLOE_EUNSUPPORTED.  Summary keys floe
 * computes (floe__summary_key_reserved) may not appear in req->summary:
 * FLOE_EINVAL. */
typedef struct floe__commit_request {
    const floe__content_file *files;
    size_t n_files;
    const json_t *summary;            /* object of strings, or NULL */
    int64_t base_snapshot_id;
    const char *tag;                  /* NULL, or a tag ref moved to the new snapshot in
                                         the same metadata update */
    const char *branch;               /* NULL: main; else the branch the snapshot goes to
                                         (created when absent): base_snapshot_id is its
                                         head, asserted as main's is */
    const floe__posdel_set *deletes;  /* NULL, or position deletes to write (borrowed) */
    const char *const *remove;        /* paths of content files to remove (borrowed) */
    size_t n_remove;
    const char *operation;            /* NULL: derived (see above) */
    /* Merge every bin of carried manifests now (min-count-to-merge 1: a
     * final compaction leaving one manifest per content where it can). */
    bool merge_all;
    bool has_data_sequence_number;
    int64_t data_sequence_number;     /* for the added data files */
    /* A schema change in the same metadata update (the files are written
     * in it): add-schema with last_column_id, set-current-schema, and the
     * requirements assert-current-schema-id / assert-last-assigned-field-id
     * of the metadata as loaded; the table's schema.name-mapping.default,
     * when it has one, follows (floe__name_mapping_update).  The snapshot
     * and its manifests name the new schema's id.  NULL: none. */
    const floe__schema *schema;
    int32_t last_column_id;
    /* A partition spec change in the same metadata update (the files are
     * written in it): {"fields": [{"source-id", "transform", "name"}...]}.
     * A field some spec of the table has (same source and transform) keeps
     * its field id, others get ids above last-partition-id; the spec takes
     * the id of an equal spec the table has, else a new one.  add-spec and
     * set-default-spec, with the requirements assert-default-spec-id and
     * assert-last-assigned-partition-id of the metadata as loaded; t->spec_id
     * follows when it lands.  NULL: none. */
    const json_t *spec;
} floe__commit_request;

int floe__table_commit(floe__table *t, const floe__commit_request *req, int64_t *snapshot_id,
                       floe_error *err);

/* After a commit with req->schema landed (committed here, or found landed
 * on a reload, t->loaded showing it current): t->schema becomes a copy of
 * `schema` and t->schema_id t->loaded's current schema id.  The old schema
 * is freed: callers keep their own copies of what they write with. */
int floe__table_adopt_schema(floe__table *t, const floe__schema *schema, floe_error *err);
/* The schema id `s` has (or gets, when added) in t as loaded. */
int floe__table_schema_id_for(const floe__table *t, const floe__schema *s, int32_t *out,
                              floe_error *err);
/* The table's current schema as loaded (t->loaded), parsed; for work that
 * must read and write with it (compaction), not with t->schema (the one the
 * handle was opened or last evolved with).  Caller frees. */
int floe__table_current_schema(const floe__table *t, floe__schema **out, floe_error *err);

/* Whether `key` is a summary property floe__table_commit computes itself
 * ("operation", "added-*", "deleted-*", "removed-*", "total-*",
 * "changed-partition-count"): such
 * keys in req->summary are FLOE_EINVAL. */
bool floe__summary_key_reserved(const char *key);

/* The internal table behind a public handle (table_api.c), for the public
 * functions layers above implement (the sink's progress readers). */
floe__table *floe__table_of(const floe_table *t);

#endif /* FLOE_TABLE_INTERNAL_H */
