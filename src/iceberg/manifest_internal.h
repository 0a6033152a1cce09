/*
 * manifest_internal.h - Iceberg v2 manifests and manifest lists (Avro
 * object container files), written and read back.
 *
 * A manifest lists content files (data, or deletes) with their metrics; a
 * manifest list lists the manifests of one snapshot.  floe writes both with
 * the field ids of the Iceberg spec (manifest_entry / manifest_file
 * schemas), deflate-compressed, and reads lists written by any writer
 * (pyiceberg, Java, floe) by field id, so that a commit can carry every
 * manifest of its parent forward unchanged.
 *
 * Each content file carries its partition tuple (content_file.partition,
 * a row of the spec's partition type); manifests are written with the
 * spec's partition record and the list entry with its partition field
 * summaries (manifest_partition.c).  Reading keeps every file's tuple in
 * the file's field order.  Parsers take untrusted bytes: malformed input
 * is FLOE_EFORMAT, never a crash.
 */
#ifndef FLOE_MANIFEST_INTERNAL_H
#define FLOE_MANIFEST_INTERNAL_H

#include "iceberg/iceberg_internal.h"
#include "io/io_internal.h"

/* Manifest lists and manifests larger than this are refused when read. */
#define FLOE_MANIFEST_MAX_BYTES ((size_t)256 << 20)

/* ---- manifest lists ------------------------------------------------------------ */

/* One field_summary of a manifest_file's `partitions` (kept as bytes). */
typedef struct floe__partition_summary {
    bool contains_null;
    int8_t contains_nan;              /* -1 unknown (null), 0, 1 */
    bool has_lower, has_upper;
    floe__buf lower, upper;
} floe__partition_summary;

/* One manifest_file entry of a manifest list (field ids 500-519). */
typedef struct floe__manifest_file {
    char *path;                       /* 500 manifest_path */
    int64_t length;                   /* 501 manifest_length */
    int32_t spec_id;                  /* 502 partition_spec_id */
    int32_t content;                  /* 517 content: 0 data, 1 deletes */
    int64_t sequence_number;          /* 515 */
    int64_t min_sequence_number;      /* 516 */
    int64_t added_snapshot_id;        /* 503 */
    int32_t added_files, existing_files, deleted_files;     /* 504, 505, 506 */
    int64_t added_rows, existing_rows, deleted_rows;        /* 512, 513, 514 */
    bool has_partitions;              /* 507 partitions: null vs a (maybe empty) list */
    size_t n_partitions;
    floe__partition_summary *partitions;
    bool has_key_metadata;            /* 519 key_metadata */
    floe__buf key_metadata;
    bool has_first_row_id;            /* 520 first_row_id (v3 data manifests) */
    int64_t first_row_id;
} floe__manifest_file;

void floe__manifest_file_clear(floe__manifest_file *m);   /* frees what it holds */

typedef struct floe__manifest_list {
    floe__manifest_file *items;
    size_t n, cap;
} floe__manifest_list;

void floe__manifest_list_clear(floe__manifest_list *l);
/* Appends a zeroed entry and returns it (NULL on out of memory). */
floe__manifest_file *floe__manifest_list_push(floe__manifest_list *l);

/* Parse a manifest list (any writer, format v1 or v2) and append its
 * entries to `out`.  Fields are found by field id; v1 defaults apply
 * (content 0, sequence numbers 0).  A v1 entry without file counts is
 * FLOE_EUNSUPPORTED: re-writing it with invented counts could hide files
 * from readers.  Malformed input: FLOE_EFORMAT (out keeps what it had). */
int floe__manifest_list_parse(const uint8_t *data, size_t len, floe__manifest_list *out,
                              floe_error *err);

/* What a manifest list's header says. */
typedef struct floe__list_meta {
    int64_t snapshot_id;
    int64_t parent_id;                /* -1: the snapshot has no parent */
    int64_t sequence_number;
    int format_version;               /* 2 or 3 (v3: field 520 and "first-row-id") */
    int64_t first_row_id;             /* v3: the snapshot's first-row-id */
} floe__list_meta;

/* Write a manifest list of `l` (in order) as the whole object `uri`; v3
 * lists carry each entry's first_row_id (null for delete manifests and
 * entries without one: assigning them is the caller's job).  *length (may
 * be NULL) receives the file size. */
int floe__manifest_list_write_v(floe__fileio *io, const char *uri, const floe__manifest_list *l,
                                const floe__list_meta *lm, uint64_t *length, floe_error *err);
/* A v2 list (floe__manifest_list_write_v with format_version 2). */
int floe__manifest_list_write(floe__fileio *io, const char *uri, const floe__manifest_list *l,
                              int64_t snapshot_id, int64_t parent_id, int64_t sequence_number,
                              uint64_t *length, floe_error *err);

/* ---- manifests -------------------------------------------------------------------- */

/* What a new manifest describes. */
typedef struct floe__manifest_meta {
    const json_t *schema;             /* the table schema the files were written with */
    const json_t *spec;               /* its partition spec (bound to `schema`; every file
                                         carries a tuple of it) */
    bool deletes;                     /* a delete manifest (else data) */
    int64_t snapshot_id;              /* the snapshot adding the files */
    int64_t sequence_number;          /* that snapshot's sequence number */
} floe__manifest_meta;

/* Write a manifest at `uri` holding the files of `files` whose content
 * matches m->deletes (data files, or position and equality delete files),
 * each as an ADDED entry with null sequence numbers (inherited from the
 * manifest list).  `entry` receives the manifest list entry describing it
 * (path copied, counts, sequence numbers, partition summaries).  A file
 * whose tuple does not fit the spec is FLOE_EINVAL. */
int floe__manifest_write(floe__fileio *io, const char *uri, const floe__manifest_meta *m,
                         const floe__content_file *files, size_t n_files,
                         floe__manifest_file *entry, floe_error *err);

/* One manifest_entry (read back, or to write with
 * floe__manifest_write_entries).  has_* false: null (inherited). */
typedef struct floe__manifest_entry {
    int32_t status;                   /* 0 existing, 1 added, 2 deleted */
    bool has_snapshot_id, has_sequence_number, has_file_sequence_number;
    int64_t snapshot_id, sequence_number, file_sequence_number;
    char *file_format;                /* "PARQUET", ... (read back; file.format too) */
    floe__content_file file;          /* metrics columns sorted by field id */
} floe__manifest_entry;

/* Write a manifest at `uri` holding `entries` as given (status, snapshot
 * id, sequence numbers, the whole data_file: format, key metadata, sort
 * order, first_row_id, referenced_data_file, content range), all of the
 * manifest's content kind (m->deletes).  `entry` receives its manifest list
 * entry: counts by status, min_sequence_number over live entries (null
 * sequence numbers count as m->sequence_number), sequence_number and
 * added_snapshot_id from m.  v2 delete manifests carry
 * referenced_data_file; v3 manifests (format_version 3, written with
 * "format-version" "3") also first_row_id (data files only) and
 * content_offset / content_size_in_bytes. */
int floe__manifest_write_entries(floe__fileio *io, const char *uri, const floe__manifest_meta *m,
                                 int format_version, const floe__manifest_entry *entries,
                                 size_t n, floe__manifest_file *entry, floe_error *err);

typedef struct floe__manifest_entries {
    floe__manifest_entry *items;
    size_t n, cap;
    char *content;                    /* the "content" metadata value, or NULL */
} floe__manifest_entries;

void floe__manifest_entries_clear(floe__manifest_entries *e);

/* Parse a manifest (v1 or v2, any writer) and append its entries to
 * `out`.  Malformed input: FLOE_EFORMAT. */
int floe__manifest_parse(const uint8_t *data, size_t len, floe__manifest_entries *out,
                         floe_error *err);

/* ---- partitions (manifest_partition.c) ------------------------------------------------ */

struct floe__partition_spec;
struct floe__avro_writer;
struct floe__avro_value;

/* The fields of the `partition` record (102) for spec ps (NULL or no
 * fields: none), appended to out as Avro schema JSON. */
int floe__manifest_partition_schema(const struct floe__partition_spec *ps, floe__buf *out,
                                    floe_error *err);
/* Begin the partition record of f and put its tuple's values (the caller
 * ends the record).  A tuple that does not fit ps is FLOE_EINVAL / EFORMAT. */
int floe__manifest_put_partition(struct floe__avro_writer *w,
                                 const struct floe__partition_spec *ps,
                                 const floe__content_file *f, floe_error *err);
/* A read partition record (NULL or null: none) as a tuple into out. */
int floe__manifest_read_partition(const struct floe__avro_value *rec, floe__buf *out,
                                  floe_error *err);
/* e's partition field summaries over entries (has_partitions set; an empty
 * list for an unpartitioned spec). */
int floe__manifest_partition_summaries(const struct floe__partition_spec *ps,
                                       const floe__manifest_entry *entries, size_t n,
                                       floe__manifest_file *e, floe_error *err);

#endif /* FLOE_MANIFEST_INTERNAL_H */
