/*
 * maint_internal.h - table maintenance: what keeps a table that is
 * committed to every second healthy (issue P7).
 *
 *   reach.c     the files snapshots reach (manifest lists, manifests, data
 *               and delete files), compared by a normalized path
 *   expire.c    snapshot expiry with Iceberg's properties and ref rules, and
 *               removal of the files only expired snapshots reached
 *   orphans.c   files under the table location no metadata reaches
 *   compact.c   bin-packing compaction of data files with their deletes
 *               applied, committed as a validated `replace`
 *   debt.c      table-debt figures (small files, deletes, manifests, ...)
 *   maintain.c  the public floe_table_maintain / floe_table_debt_get
 *
 * It sits above table/ (plans, commits, file readers and writers) and
 * below sink/, whose maintenance thread uses it.  Manifest merging and
 * metadata-file cleanup happen on every commit and live with the commit
 * (table/merge.c) and the catalog (catalog/sql.c).
 */
#ifndef FLOE_MAINT_INTERNAL_H
#define FLOE_MAINT_INTERNAL_H

#include <pthread.h>

#include "table/table_internal.h"

/* ---- reachability (reach.c) ----------------------------------------------------
 * A set of files, keyed by a normalized path: "file:/x", "file:///x",
 * "file://localhost/x" and "/x" are all "/x"; "s3a://" and "s3n://" are
 * "s3://".  Each file remembers what it is. */
typedef enum floe__reach_kind {
    FLOE_REACH_METADATA = 0,          /* a table metadata file */
    FLOE_REACH_LIST,                  /* a manifest list */
    FLOE_REACH_MANIFEST,
    FLOE_REACH_DATA,
    FLOE_REACH_DELETE,                /* position / equality delete file, Puffin of DVs */
    FLOE_REACH_STATS,                 /* statistics or partition statistics */
    FLOE_REACH_KINDS
} floe__reach_kind;

typedef struct floe__reach floe__reach;

int floe__reach_new(floe__reach **out, floe_error *err);
void floe__reach_free(floe__reach *r);                       /* accepts NULL */
/* The normalized form of a path (caller floe__free()s); NULL on OOM. */
char *floe__reach_key(const char *uri);
/* Add one file; adding it again keeps the first kind. */
int floe__reach_add(floe__reach *r, const char *uri, floe__reach_kind kind, uint64_t size,
                    floe_error *err);
bool floe__reach_has(const floe__reach *r, const char *uri);
size_t floe__reach_count(const floe__reach *r);
/* Everything a snapshot reaches: its manifest list, its manifests and every
 * file their live (ADDED or EXISTING) entries name; a DELETED entry records
 * that the snapshot let the file go.  Manifests already in r are not read
 * again, nor those in `known` (may be NULL): their files were gathered
 * already. */
int floe__reach_snapshot(floe__reach *r, const floe__reach *known, floe__fileio *io,
                         const floe__snapshot *s, floe_error *err);
/* What the table metadata itself reaches: every snapshot (as above), the
 * current metadata file (`location`) and those of its metadata-log, and the
 * statistics and partition-statistics files. */
int floe__reach_metadata(floe__reach *r, floe__fileio *io, const floe__metadata *md,
                         const char *location, floe_error *err);
/* Call fn for every file of r (in no particular order) with its original
 * URI, kind and size; fn's failure stops the walk. */
typedef int (*floe__reach_fn)(void *ctx, const char *uri, floe__reach_kind kind, uint64_t size,
                              floe_error *err);
int floe__reach_each(const floe__reach *r, floe__reach_fn fn, void *ctx, floe_error *err);
/* The kind's name, for messages ("manifest list", ...). */
const char *floe__reach_kind_name(floe__reach_kind k);

/* What deleting a set of files did, by kind. */
typedef struct floe__removal {
    uint64_t files[FLOE_REACH_KINDS];
    uint64_t bytes;
    uint64_t failed;                  /* files that could not be deleted (kept) */
} floe__removal;

/* ---- snapshot expiry (expire.c) ------------------------------------------------ */
typedef struct floe__expire_options {
    int64_t now_ms;                   /* 0: the clock */
    /* Branches keep ancestors newer than this age; unreferenced snapshots
     * go once older.  -1: the table's history.expire.max-snapshot-age-ms
     * (default 5 days; a branch's own max-snapshot-age-ms wins). */
    int64_t older_than_ms;
    /* Branches keep at least this many ancestors.  0: the table's
     * history.expire.min-snapshots-to-keep (default 1; a branch's own
     * min-snapshots-to-keep wins). */
    int retain_last;
    /* 0, or a snapshot id: on a branch whose head it is or one of the 100
     * newest ancestors of, it and every snapshot after it stay (the sink's
     * own maintenance passes its last commit: its key index walks forward
     * from there at the next commit). */
    int64_t keep_since;
    bool dry_run;                     /* decide and count, change nothing */
    bool clean_files;                 /* delete what only expired snapshots reached */
    /* NULL, or a lock held while deciding and committing (not while
     * deleting files): a sink's commit gate, so that its own maintenance
     * never races its commits. */
    pthread_mutex_t *gate;
} floe__expire_options;

typedef struct floe__expire_result {
    uint64_t snapshots_expired, refs_removed;
    floe__removal removed;            /* files deleted (dry run: that would be) */
} floe__expire_result;

/* Expire t's snapshots as Java's ExpireSnapshots does: refs older than
 * their max-ref-age-ms (a ref's own, else history.expire.max-ref-age-ms,
 * default forever; never main) are removed; each branch keeps its head and
 * the ancestors that are newer than the age limit or among the newest
 * min-snapshots-to-keep; tags keep their snapshot; snapshots no ref reaches
 * are kept while newer than the age limit.  The rest are removed in one
 * metadata update that asserts main has not moved (a conflict is retried
 * against the reloaded table).  Then, with clean_files, the manifest lists,
 * manifests, data files, delete files and statistics only the removed
 * snapshots reached are deleted; a file any remaining snapshot reaches is
 * never deleted.  t is reloaded. */
int floe__expire(floe__table *t, const floe__expire_options *o, floe__expire_result *res,
                 floe_error *err);

/* ---- orphan files (orphans.c) -------------------------------------------------- */
typedef struct floe__orphan_options {
    int64_t now_ms;                   /* 0: the clock */
    int64_t older_than_ms;            /* only files last modified before now - this */
    bool dry_run;
} floe__orphan_options;

typedef struct floe__orphan_result {
    uint64_t listed, orphans;         /* files under the table's locations; unreached ones */
    uint64_t too_young;               /* unreached but inside the safety window (kept) */
    floe__removal removed;
} floe__orphan_result;

/* Delete the files under the table location (and its data and metadata
 * locations when they lie elsewhere) that the table's metadata does not
 * reach (floe__reach_metadata) and that were last modified before the
 * safety window: leftovers of killed writers, metadata files past the
 * metadata-log, files of expired snapshots nobody deleted.  A
 * version-hint file is never an orphan. */
int floe__remove_orphans(floe__table *t, const floe__orphan_options *o, floe__orphan_result *res,
                         floe_error *err);

/* ---- compaction (compact.c) ----------------------------------------------------- */
/* How a group's rows moved (to carry deletes committed while it was being
 * rewritten onto the new files, and to tell a key index where rows went):
 * old file k's row p went to output row first_out[k] + p - |skipped[k]
 * below p| unless p is in skipped[k]; or, when rows were spread over the
 * partitions of another spec (out_row not NULL), to output row
 * out_row[k][p].  Output rows run through the group's new files in order. */
typedef struct floe__compact_map {
    size_t n;                        /* the group's files */
    uint64_t *first_out;             /* rows written before old file k's */
    floe__posbitmap *skipped;        /* rows not copied (deleted when read) */
    floe__posbitmap *pos_deleted;    /* of them, those its DV / position deletes deleted */
    uint64_t **out_row;              /* NULL, or per old file per row (skipped: UINT64_MAX) */
} floe__compact_map;

void floe__compact_map_clear(floe__compact_map *m);

/* What a group's snapshot `id` (its floe.maintenance-id) does once it
 * lands: it removes data files old[0..map->n) and adds `files`, whose rows
 * came from them as `map` says.  All borrowed for the call. */
typedef struct floe__compact_moved {
    const char *id;
    const char *const *old;
    const floe__compact_map *map;
    const floe__content_list *files;
} floe__compact_moved;

typedef struct floe__compact_options {
    uint64_t target_file_size;        /* 0: write.target-file-size-bytes (512 MiB) */
    /* A file is rewritten when smaller than min_file_ratio x target, larger
     * than max_file_ratio x target, or when at least delete_ratio of its
     * rows are deleted (0: 0.75, 1.8 and 0.3, Java's defaults; the table
     * properties floe.compact.min-file-ratio, floe.compact.max-file-ratio
     * and floe.compact.delete-ratio override them). */
    double min_file_ratio, max_file_ratio, delete_ratio;
    /* A group of small files is rewritten once it has this many (0: 5). */
    int min_input_files;
    bool all;                         /* rewrite every live data file (into the current spec) */
    /* Rewrite the data files of older partition specs into the table's
     * current one (each row into the file of its partition there). */
    bool respec;
    bool tiered;                      /* group only files of one size class (4x wide) */
    /* Stop starting new groups once this many bytes were read (0: no
     * limit); the groups most in need go first. */
    uint64_t max_bytes;
    bool dry_run;
    /* Tests: called once per group after its files are written and before
     * its first commit attempt (to commit something concurrently). */
    int (*before_commit)(void *ctx, floe_error *err);
    void *hook_ctx;
    /* Called on the compacting thread with each group's moves before its
     * first commit attempt, so that whoever syncs the snapshot finds them
     * the moment it lands (the sink hands its key index the moves), and
     * with the group's id when it gave up with no commit that may have
     * landed (its moves will never be asked for); either may be NULL. */
    void (*on_moves)(void *ctx, const floe__compact_moved *moved);
    void (*on_abandoned)(void *ctx, const char *id);
    void *moves_ctx;
    /* NULL, or a mutex held around each group's commit attempt (the table
     * reloaded first): a writer of the same process that holds it around
     * its own attempts (the sink's committer beside its maintenance
     * thread) then never loses a race to this compaction, however many
     * groups it commits, nor this compaction to it. */
    pthread_mutex_t *gate;
} floe__compact_options;

typedef struct floe__compact_result {
    uint64_t groups, groups_failed;   /* committed; given up (conflicts) */
    uint64_t files_rewritten, files_written, delete_files_dropped;
    uint64_t rows_read, rows_written, bytes_read, bytes_written;
    uint64_t conflicts;               /* commits that met a concurrent change and rebased */
    uint64_t deletes_carried;         /* rows deleted meanwhile, deleted from the new files */
} floe__compact_result;

/* Bin-pack t's data files that need it into files of the target size, with
 * every delete that applies to them (DVs, position and equality deletes)
 * applied, and commit each group as a `replace` snapshot that removes the
 * old files (their DVs and file-scoped deletes with them) and every delete
 * file no live data file needs any more.  The new files keep the start
 * snapshot's sequence number as their data sequence number, so equality
 * deletes committed later still apply.  A commit that meets a concurrent
 * change is rebased: rows of the group deleted meanwhile (a DV or position
 * delete committed since) are deleted from the new files in the same
 * commit; a group whose files were removed meanwhile, or whose deletes
 * went away, is given up (its files removed) and counted; a later run
 * picks it again. */
/* The table's floe.compact.delete-ratio when it is a valid ratio, else dflt. */
double floe__compact_delete_ratio(const floe__metadata *md, double dflt);
/* Whether a snapshot of t's loaded metadata carries floe.maintenance-id `id`
 * (a compaction group's commit landed). */
bool floe__table_has_maintenance_id(const floe__table *t, const char *id);
int floe__compact(floe__table *t, const floe__compact_options *o, floe__compact_result *res,
                  floe_error *err);

/* One `replace` snapshot on main's head that only merges t's manifests,
 * every bin of them (as commit.manifest.min-count-to-merge 1 would; bins
 * merge.c leaves alone stay), under `gate` when not NULL (t reloaded
 * first).  Nothing when the table has no snapshot. */
int floe__merge_manifests(floe__table *t, pthread_mutex_t *gate, floe_error *err);

/* ---- copy-on-write (cow.c) ------------------------------------------------------ */
/* A commit's position deletes turned into rewritten data files: the
 * snapshot the commit asserts loses remove[0..n_old) (the data files the
 * deletes name, with their DVs and file-scoped deletes) and the delete
 * files nothing needs once they are gone (remove[n_old..n_remove)), and
 * gains `files`, holding every row of the old files that no delete
 * deletes (map says where each went).  Deletes on files the snapshot does
 * not hold (the commit's own new files) are left in `rest`. */
typedef struct floe__cow {
    floe__content_list files;        /* the new data files (none when every row went); the
                                        list is the rewrite's, the files its pieces' */
    const char **old, **remove;      /* the files rewritten, in order; the paths to remove
                                        (owned by the rewrite) */
    size_t n_old, n_remove;
    size_t reused;                   /* of old, those taken over from `prev` */
    floe__posdel_set *rest;          /* NULL: none */
    floe__compact_map map;
    floe__compact_result stats;      /* rows and bytes read and written */
    struct floe__cow_state *state;
} floe__cow;

/* Rewrite the data files of t's current snapshot, as loaded (not
 * reloaded), that `deletes` (borrowed) deletes rows from, each into a file
 * of its own.  prev (NULL: none), the rewrite of an attempt that did not
 * land, gives up each file's rewrite that is still what this one would
 * write; the caller frees prev after (with remove_files: what is left of
 * it was never committed).  The caller commits against t's snapshot and
 * frees the result. */
int floe__cow_rewrite(floe__table *t, const floe__posdel_set *deletes, floe__cow *prev,
                      floe__cow **out, floe_error *err);
/* The rewrite's moves, as a compaction group's, under snapshot id `id`
 * (borrowed, valid while w is). */
void floe__cow_moved(const floe__cow *w, const char *id, floe__compact_moved *out);
/* Free w (accepts NULL); remove_files: delete its new files too (no commit
 * that names them may have landed). */
void floe__cow_free(floe__cow *w, bool remove_files);

/* ---- table debt (debt.c) ---------------------------------------------------------- */
/* Figures of a table's current state, public as floe_table_debt. */
int floe__debt(floe__table *t, floe_table_debt *out, floe_error *err);
/* The debt per partition as floe_table_partition_debt's JSON. */
int floe__partition_debt(floe__table *t, size_t max, char **out, floe_error *err);

#endif /* FLOE_MAINT_INTERNAL_H */
