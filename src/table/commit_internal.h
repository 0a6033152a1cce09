/*
 * commit_internal.h - one commit attempt, shared by table_commit.c (ids,
 * manifests, list, summary, the catalog call) and commit_files.c (what an
 * attempt writes and removes for position deletes and file removals).
 */
#ifndef FLOE_COMMIT_INTERNAL_H
#define FLOE_COMMIT_INTERNAL_H

#include "table/table_internal.h"

/* Added or removed counts, by kind (Java's SnapshotSummary names). */
typedef struct floe__commit_counts {
    uint64_t data_files, records, files_size, delete_files, pos_files, dvs, eq_files,
        pos_deletes, eq_deletes;
} floe__commit_counts;

/* Everything one attempt writes, for cleanup, and what it removes. */
typedef struct floe__attempt {
    floe__table *t;
    const floe__commit_request *req;
    const floe__metadata *md;
    int version;                     /* the table's format version (2 or 3) */
    int64_t parent;                  /* -1: none */
    int64_t snapshot_id;
    int64_t seq;
    int64_t first_row_id, added_rows; /* v3 lineage */
    char uuid[37];
    char *dir;                       /* metadata directory */
    char *list_path;
    floe__manifest_list list;        /* new manifests first, then carried ones */
    size_t n_new;                    /* how many of list.items this attempt wrote */
    size_t *merged;                  /* list.items indexes of the manifests merging wrote */
    size_t n_merged, n_merged_from;  /* how many, and how many manifests they replaced */
    bool list_written;
    json_t *summary;
    floe__plan *plan;                /* the parent's plan, when deletes or removals ask */
    floe__pathmap added_data;        /* the request's data files: path -> index in req->files */
    floe__content_list written;      /* delete files and DVs this attempt wrote (owned),
                                        each with its data file's partition tuple */
    int32_t *written_specs;          /* per written file: its data file's spec id */
    size_t n_written_specs;          /* room in written_specs */
    uint64_t *removed;               /* (manifest << 32 | entry) of the parent's plan,
                                        sorted: entries this commit marks DELETED */
    size_t n_removed;
    floe__commit_counts added, gone;
    int32_t schema_id;               /* the snapshot's schema: the request's (added), else
                                        the table's current one */
    const json_t *schema_json;       /* ... as JSON, for the manifests */
    json_t *new_schema;              /* the request's schema as JSON with its id (owned) */
    int32_t spec_id;                 /* the request's files' spec: the request's (added),
                                        else the table's (t->spec_id) */
    json_t *new_spec;                /* the request's spec as JSON with its ids (owned) */
    bool spec_known;                 /* ... is one the table has (made default again) */
    int32_t eq_spec;                 /* the unpartitioned spec global equality deletes go in
                                        (-1: none need one) */
    json_t *eq_spec_new;             /* ... when this commit adds it (owned), else NULL */
    bool eq_unscoped;                /* the parent has live data files of another spec than
                                        spec_id: every equality delete is global */
} floe__attempt;

/* Plan the parent, find the files req->remove names (and the DVs and
 * file-scoped deletes of removed data files), check the targets of
 * req->deletes, write the deletes (v2: a file-scoped position delete file
 * per data file; v3: one Puffin file of DVs, merged with the data files'
 * current DVs, which are removed) into a->written, and count what goes.
 * A file to remove or a delete target missing from the parent is
 * FLOE_ECONFLICT naming it. */
int floe__attempt_files(floe__attempt *a, floe_error *err);
/* Write a rewritten copy of every parent manifest holding a removed entry
 * (removed entries DELETED, the other live ones EXISTING, sequence numbers
 * and first_row_id kept) and append it to a->list; *rewritten[i] tells
 * which of the parent's manifests were replaced. */
int floe__attempt_rewrite(floe__attempt *a, bool **rewritten, floe_error *err);
/* Merge the manifests carried from the parent, as the table's
 * commit.manifest-* properties ask (merge.c): merged manifests replace
 * their bins in a->list and are recorded in a->merged. */
int floe__attempt_merge(floe__attempt *a, floe_error *err);
/* Count one file into c (DVs by their content size, as Java does). */
void floe__commit_count(floe__commit_counts *c, const floe__content_file *f);

#endif /* FLOE_COMMIT_INTERNAL_H */
