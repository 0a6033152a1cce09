/*
 * keyindex_internal.h - the key index of position-delete upserts: for the
 * sink's key columns, key -> (data file, row position, row hash) of every
 * live row of the table (SPEC.md section 6).
 *
 * A retraction takes one of its key's live rows and becomes a position
 * delete (v2) or a deletion-vector bit (v3) of that row; an insertion adds
 * the row it wrote.  Keys of the whole row (no declared key) may have many
 * live rows, one per duplicate; declared keys have at most one (a second is
 * a primary-key violation the writer reports).
 *
 * Parts:
 *   keyindex.c        the index: a memory tier (open addressing, a
 *                     multiset) over an optional disk tier, within a
 *                     memory limit; the data-file table
 *   keyindex_run.c    the disk tier: one file of entries sorted by key
 *                     hash in blocks, found through in-memory fences and
 *                     pread (the kernel caches it, not floe's heap)
 *   keyindex_store.c  durability: checkpoints and a write-ahead log of each
 *                     batch's changes, tied to the frontier and snapshot
 *                     they reflect
 *   keybuild.c        the index read from a table's data files: key
 *                     columns read back, their DVs, position deletes and
 *                     equality deletes on the key applied
 *
 * It knows tables (their plans and files) and nothing of sinks: the sink
 * keeps it true to its table (sink/keeper.c).
 *
 * Files are known by a small id (the file table); a data file a compaction
 * removed is retired, and its entries are ignored from then on (and dropped
 * when the index is next written out).
 *
 * Not thread-safe: one sink uses its index from one thread.
 */
#ifndef FLOE_KEYINDEX_INTERNAL_H
#define FLOE_KEYINDEX_INTERNAL_H

#include "util/util_internal.h"
#include "table/table_internal.h"

/* The largest key the index takes (bytes of the row format: a key of the
 * whole row can be as long as a row). */
#define FLOE_KX_MAX_KEY ((size_t)1 << 30)
/* File ids are below this (23 bits); positions below 2^40. */
#define FLOE_KX_MAX_FILES ((uint32_t)1 << 23)
#define FLOE_KX_MAX_POS (((uint64_t)1 << 40) - 1)

/* Where one live row is. */
typedef struct floe__kx_loc {
    uint32_t file;          /* file id */
    uint64_t pos;           /* 0-based row position in the file */
    uint64_t rowhash;       /* floe__hash64 of the whole row: tells a retraction's row
                               from the live row it retracts */
} floe__kx_loc;

typedef struct floe__kx floe__kx;

#define FLOE_KX_MIN_MEMORY ((size_t)4 << 20)

typedef struct floe__kx_options {
    size_t memory_limit;    /* the memory tier's budget in bytes; 0: 256 MiB; at least
                               FLOE_KX_MIN_MEMORY (smaller budgets are raised to it) */
    const char *spill_dir;  /* where the disk tier goes when the memory tier is full;
                               NULL: $TMPDIR or /tmp */
} floe__kx_options;

typedef struct floe__kx_stats {
    uint64_t keys;          /* live rows indexed (memory and disk) */
    uint64_t memory_bytes;  /* the memory tier */
    uint64_t disk_entries, disk_bytes;   /* the disk tier */
    uint64_t spills;        /* merges of the memory tier into the disk tier */
    uint64_t files, retired_files;
} floe__kx_stats;

int floe__kx_new(const floe__kx_options *o, floe__kx **out, floe_error *err);
void floe__kx_free(floe__kx *kx);      /* accepts NULL */

/* ---- the file table -------------------------------------------------------------- */

/* The id of data file `path`, added (live) when new. */
int floe__kx_file(floe__kx *kx, const char *path, uint32_t *id, floe_error *err);
/* The id of `path` when it is a live file: true and *id, else false. */
bool floe__kx_file_find(const floe__kx *kx, const char *path, uint32_t *id);
const char *floe__kx_file_path(const floe__kx *kx, uint32_t id);
/* The file is gone from the table (a compaction rewrote it): its rows stop
 * counting at once.  Its path may come back later under a new id. */
void floe__kx_retire(floe__kx *kx, uint32_t id);
bool floe__kx_file_live(const floe__kx *kx, uint32_t id);
/* The schema id the row hashes of a file's rows were taken in (-1 when
 * unknown: no hash of them may be compared with one of another schema's
 * row; a schema change gives rows new bytes). */
void floe__kx_file_set_schema(floe__kx *kx, uint32_t id, int32_t schema_id);
int32_t floe__kx_file_schema(const floe__kx *kx, uint32_t id);
/* Files a batch wrote are uncommitted until its commit lands; a row is
 * re-targeted after a compaction only onto committed files. */
void floe__kx_file_set_committed(floe__kx *kx, uint32_t id, bool committed);
/* Live and committed. */
bool floe__kx_file_committed(const floe__kx *kx, uint32_t id);
size_t floe__kx_file_count(const floe__kx *kx);       /* ids handed out */

/* ---- rows ------------------------------------------------------------------------------ */

/* A hint: key's slots will be wanted soon (a build inserting row after row
 * prefetches a few rows ahead, so the cache misses overlap). */
void floe__kx_prefetch(const floe__kx *kx, const uint8_t *key, size_t len);
/* An empty index about to take `rows` rows: its slot array sized for them
 * at once (within the memory budget) instead of doubling its way there.
 * Does nothing once the index holds a row. */
int floe__kx_reserve(floe__kx *kx, uint64_t rows, floe_error *err);
/* One more live row of key. */
int floe__kx_insert(floe__kx *kx, const uint8_t *key, size_t len, floe__kx_loc loc,
                    floe_error *err);
/* The same, telling whether key already had a live row (one probe). */
int floe__kx_insert_checked(floe__kx *kx, const uint8_t *key, size_t len, floe__kx_loc loc,
                            bool *was_live, floe_error *err);
/* Take one live row of key (one whose rowhash is `rowhash` when there is
 * such a row, else any): *found and *loc.  The row is no longer live. */
int floe__kx_take(floe__kx *kx, const uint8_t *key, size_t len, uint64_t rowhash, bool *found,
                  floe__kx_loc *loc, floe_error *err);
/* The same among rows of committed files only (re-targeting a delete). */
int floe__kx_take_committed(floe__kx *kx, const uint8_t *key, size_t len, uint64_t rowhash,
                            bool *found, floe__kx_loc *loc, floe_error *err);
/* Remove the live row (file, pos) of key, if it is there: *found. */
int floe__kx_remove(floe__kx *kx, const uint8_t *key, size_t len, uint32_t file, uint64_t pos,
                    bool *found, floe_error *err);
/* Whether key has a live row. */
int floe__kx_has(floe__kx *kx, const uint8_t *key, size_t len, bool *live, floe_error *err);

void floe__kx_get_stats(const floe__kx *kx, floe__kx_stats *out);

/* Where a row is now (floe__kx_repoint): where it was, at (*loc) a new file
 * and position, or gone from the table. */
typedef enum floe__kx_move { FLOE_KX_STAYS, FLOE_KX_MOVED, FLOE_KX_GONE } floe__kx_move;
typedef floe__kx_move (*floe__kx_move_fn)(void *ctx, floe__kx_loc *loc);
/* Whether every row is in the memory tier (no disk tier), which
 * floe__kx_repoint requires. */
bool floe__kx_in_memory(const floe__kx *kx);
/* Ask fn where each live row is now and put it there (keys and row hashes
 * stay): one pass over the memory tier, for rows a compaction moved. */
void floe__kx_repoint(floe__kx *kx, floe__kx_move_fn fn, void *ctx);

/* Visit every live row, in no particular order (a checkpoint, a test).
 * The callback's pointers are valid during the call only; a non-FLOE_OK
 * result stops the walk and is returned. */
typedef int (*floe__kx_visit_fn)(void *ctx, const uint8_t *key, size_t len, floe__kx_loc loc,
                                 floe_error *err);
int floe__kx_each(floe__kx *kx, floe__kx_visit_fn fn, void *ctx, floe_error *err);

/* ---- the disk tier (keyindex_run.c) -------------------------------------------------------
 * A run: entries sorted by (key hash, key, file, pos) in blocks of
 * FLOE_KX_RUN_BLOCK bytes; the first hash of every block is a fence kept in
 * memory.  Entry: u64 hash, u32 key length, key, u32 file, u64 pos, u64
 * rowhash.  Writing is streaming (in sorted order); reading a key's entries
 * is one binary search of the fences and a pread or two. */
#define FLOE_KX_RUN_BLOCK ((size_t)16 << 10)

typedef struct floe__kx_run floe__kx_run;
typedef struct floe__kx_run_writer floe__kx_run_writer;

/* A new run in an unnamed temporary file of `dir` (gone when closed). */
int floe__kx_run_writer_new(const char *dir, floe__kx_run_writer **out, floe_error *err);
/* Append an entry; entries must come in (hash, key, file, pos) order. */
int floe__kx_run_put(floe__kx_run_writer *w, uint64_t hash, const uint8_t *key, size_t len,
                     floe__kx_loc loc, floe_error *err);
/* Finish: *out is the readable run (the writer is freed either way). */
int floe__kx_run_finish(floe__kx_run_writer *w, floe__kx_run **out, floe_error *err);
void floe__kx_run_writer_abort(floe__kx_run_writer *w);
void floe__kx_run_free(floe__kx_run *r);
uint64_t floe__kx_run_entries(const floe__kx_run *r);
uint64_t floe__kx_run_bytes(const floe__kx_run *r);

/* The entries of `key` (hash h): fn for each, in file/pos order. */
typedef int (*floe__kx_run_fn)(void *ctx, floe__kx_loc loc, floe_error *err);
int floe__kx_run_find(const floe__kx_run *r, uint64_t h, const uint8_t *key, size_t len,
                      floe__kx_run_fn fn, void *ctx, floe_error *err);

/* Sequential reading, in order (merges, checkpoints). */
typedef struct floe__kx_run_cursor {
    const floe__kx_run *run;
    uint64_t offset;                /* of the next block to read */
    floe__buf block;
    size_t at;                      /* in block */
    bool has;                       /* the current entry: */
    uint64_t hash;
    const uint8_t *key;
    size_t len;
    floe__kx_loc loc;
} floe__kx_run_cursor;

int floe__kx_run_cursor_init(floe__kx_run_cursor *c, const floe__kx_run *r, floe_error *err);
int floe__kx_run_cursor_next(floe__kx_run_cursor *c, floe_error *err);
void floe__kx_run_cursor_free(floe__kx_run_cursor *c);

/* The index's hash of a key, and the order runs are sorted in: (key hash,
 * key, file, pos). */
uint64_t floe__kx_key_hash(const uint8_t *key, size_t len);
int floe__kx_cmp_row(uint64_t ha, const uint8_t *ka, size_t la, uint32_t fa, uint64_t pa,
                     uint64_t hb, const uint8_t *kb, size_t lb, uint32_t fb, uint64_t pb);
/* An index without rows takes `run` (entries of its files' ids) as its disk
 * tier; FLOE_EINTERNAL when it holds rows. */
int floe__kx_adopt_run(floe__kx *kx, floe__kx_run *run, floe_error *err);
size_t floe__kx_memory_limit(const floe__kx *kx);
const char *floe__kx_spill_dir(const floe__kx *kx);
/* Whether an index without rows is better given `rows` rows by a builder
 * (below) than by inserts: more than its memory tier holds (a row costs
 * it about 80 bytes: slots at 3/4 load at most, the key, a spill's sort
 * entry), which would spill it again and again. */
bool floe__kx_build_pays(const floe__kx *kx, uint64_t rows);

/* ---- building an empty index in sorted runs (keyindex_build.c) -----------------------------
 * Many rows into an empty index in bounded memory (a bulk copy whose rows
 * the memory tier cannot hold): rows are gathered in chunks within the
 * index's memory limit, each chunk sorted (radix on the key hash) and
 * written as a run, and the runs merged once into the index's disk tier at
 * the end.  Cheaper than inserting into the memory tier and spilling it
 * again and again.  Not thread-safe (the index's thread). */
typedef struct floe__kx_builder floe__kx_builder;
int floe__kx_builder_new(floe__kx *kx, floe__kx_builder **out, floe_error *err);
int floe__kx_builder_add(floe__kx_builder *b, const uint8_t *key, size_t len, floe__kx_loc loc,
                         floe_error *err);
/* The rows into the index (empty until then); the builder is freed either
 * way. */
int floe__kx_builder_finish(floe__kx_builder *b, floe_error *err);
void floe__kx_builder_free(floe__kx_builder *b);   /* accepts NULL */

/* The largest log record the store writes (one commit attempt's changes). */
#define FLOE__KX_MAX_RECORD ((uint64_t)1 << 31)

/* ---- durability (keyindex_store.c) -----------------------------------------------------------
 * A directory per (table, sink id) holds a checkpoint (the whole index, as
 * of a snapshot) and a write-ahead log of the commit attempts after it:
 * each attempt's index changes are logged (and synced) under a random
 * token before the attempt, and the snapshot it commits carries the token,
 * so after a restart the index is the checkpoint plus the logged attempts
 * whose tokens main's history shows (keeper.c); attempts that never landed
 * are passed over.  Files are named by path in
 * the log (ids are per process).  A checkpoint or log that does not verify
 * (magic, lengths, CRC) is not used: the caller rebuilds from the table.
 * The directory is locked (flock) while a store is open. */

/* One batch's changes, in order.  A batch's log is bounded: past `max`
 * bytes of operations (0: no bound) it drops them and says so (`dropped`):
 * a batch that big is cheaper to checkpoint after its commit than to log
 * (keeper.c), and one transaction can make a batch of any size. */
typedef struct floe__kx_log {
    floe__buf ops;                  /* encoded operations */
    floe__strtab paths;             /* the data files they name */
    uint32_t n_ops;
    int32_t hash_schema;            /* the schema its inserts' row hashes are of (-1) */
    size_t max;
    bool dropped;
} floe__kx_log;

void floe__kx_log_init(floe__kx_log *l);
void floe__kx_log_free(floe__kx_log *l);         /* releases what it holds */
int floe__kx_log_insert(floe__kx_log *l, const uint8_t *key, size_t len, const char *path,
                        uint64_t pos, uint64_t rowhash, floe_error *err);
int floe__kx_log_remove(floe__kx_log *l, const uint8_t *key, size_t len, const char *path,
                        uint64_t pos, floe_error *err);
/* Append src's operations to dst. */
int floe__kx_log_append(floe__kx_log *dst, const floe__kx_log *src, floe_error *err);
/* Apply a log's operations to kx (replay): inserts add their file when
 * new; removes of a retired file's rows are no-ops. */
int floe__kx_log_apply(const floe__kx_log *l, floe__kx *kx, floe_error *err);

/* Where an index stands: the frontier of the last batch it reflects and
 * the snapshot that recorded it. */
typedef struct floe__kx_mark {
    bool empty_frontier;
    uint64_t frontier;
    int64_t snapshot_id;
} floe__kx_mark;

typedef struct floe__kx_store floe__kx_store;

/* Open (creating) dir/<table uuid>-<sink id, escaped>; FLOE_ESTATE when
 * another process holds it.  key_fingerprint identifies what keys are
 * (floe__schema_fingerprint of the key columns): a checkpoint written for
 * another is not loaded. */
int floe__kx_store_open(const char *dir, const char *table_uuid, const char *sink_id,
                        uint64_t key_fingerprint, floe__kx_store **out, floe_error *err);
void floe__kx_store_free(floe__kx_store *s);
const char *floe__kx_store_path(const floe__kx_store *s);
/* Load the checkpoint into the empty kx: *have false when there is none (or
 * it does not verify: *why says so).  *at: where it stands. */
int floe__kx_store_load(floe__kx_store *s, floe__kx *kx, bool *have, floe__kx_mark *at,
                        char *why, size_t why_len, floe_error *err);
/* The checkpoint's mark and entry count, read from its head and tail
 * without loading (or verifying) it: whether a load is worth its time.
 * *have false when there is none or its head is not one. */
int floe__kx_store_peek(floe__kx_store *s, bool *have, floe__kx_mark *at, uint64_t *entries,
                        floe_error *err);
/* Log one commit attempt's index changes, named by the attempt's token
 * (the snapshot it commits carries it), and make them durable. */
int floe__kx_store_log(floe__kx_store *s, const floe__kx_log *l, uint64_t token,
                       bool upper_empty, uint64_t upper, floe_error *err);
/* What the log holds, in order, by the records' heads (verified only when
 * read).  A torn tail is trimmed, so later records follow the whole ones.
 * *out is the caller's (floe__free). */
typedef struct floe__kx_logged {
    uint64_t off;
    uint64_t token;
    bool upper_empty;
    uint64_t upper;
} floe__kx_logged;
int floe__kx_store_list(floe__kx_store *s, floe__kx_logged **out, size_t *n, floe_error *err);
/* The record at off into the empty l: *ok false when it does not verify. */
int floe__kx_store_read(floe__kx_store *s, uint64_t off, floe__kx_log *l, bool *ok,
                        floe_error *err);
/* Write the index as the new checkpoint (atomically) and empty the log.
 * Rows of uncommitted files are left out; `extra` (may be NULL) adds rows
 * through `put` (rows a pending batch took, which are still live in the
 * table). */
typedef int (*floe__kx_extra_fn)(void *ctx, floe__kx_visit_fn put, void *put_ctx,
                                 floe_error *err);
int floe__kx_store_checkpoint(floe__kx_store *s, floe__kx *kx, floe__kx_mark at,
                              floe__kx_extra_fn extra, void *extra_ctx, floe_error *err);
/* A checkpoint written entry by entry as rows are indexed (a bulk copy's,
 * while its rows are still being written), finished with the file table
 * and the mark once its snapshot is committed: then the commit costs no
 * walk of the index.  Its entries must be exactly the rows the index holds
 * in committed files when it is finished (the caller checks, else aborts
 * and checkpoints the usual way).  One checkpoint of a store at a time.
 * finish and abort free it; abort (accepts NULL) removes what was written. */
typedef struct floe__kx_ckpt floe__kx_ckpt;
int floe__kx_ckpt_begin(floe__kx_store *s, floe__kx_ckpt **out, floe_error *err);
int floe__kx_ckpt_add(floe__kx_ckpt *c, const uint8_t *key, size_t len, floe__kx_loc loc,
                      floe_error *err);
uint64_t floe__kx_ckpt_entries(const floe__kx_ckpt *c);
int floe__kx_ckpt_finish(floe__kx_ckpt *c, const floe__kx *kx, floe__kx_mark at,
                         floe_error *err);
void floe__kx_ckpt_abort(floe__kx_ckpt *c);
/* Bytes logged since the checkpoint, and the checkpoint's size. */
uint64_t floe__kx_store_log_bytes(const floe__kx_store *s);
uint64_t floe__kx_store_checkpoint_bytes(const floe__kx_store *s);

/* ---- building from files (keybuild.c) ----------------------------------------------------- */

/* What rows are indexed by. */
typedef struct floe__kx_source {
    floe__fileio *io;
    const floe__schema *key_schema;   /* the key columns in key order (the whole row when the
                                         key is the whole row) */
    bool whole_row;                   /* then rowhash is the row's hash, else 0 (unknown) */
    int32_t hash_schema;              /* whole_row: the schema id of key_schema's rows */
    /* The table's columns, key_schema's source: equality deletes by other
     * columns read those too. */
    const floe__schema *table_schema;
} floe__kx_source;

typedef struct floe__kx_build_stats {
    uint64_t files, rows, deleted;    /* data files indexed; rows read; rows their deletes drop */
    uint64_t bytes;                   /* file bytes of the files indexed */
} floe__kx_build_stats;

/* One plan being indexed (its delete files read once). */
typedef struct floe__kx_build floe__kx_build;
int floe__kx_build_new(floe__kx *kx, const floe__kx_source *src, const floe__plan *p,
                       floe__kx_build **out, floe_error *err);
void floe__kx_build_free(floe__kx_build *b);            /* accepts NULL */
/* Index the live rows of the plan's data file i under a new file id (the
 * caller retires an older id of the same path first): the rows the table
 * layer's walker (floe__live) finds live, as a reader would, every delete
 * applied (equality deletes by any columns: those not of the key are read
 * too). */
int floe__kx_build_file(floe__kx_build *b, size_t i, floe_error *err);
/* After the last floe__kx_build_file: the rows are in the index (an empty
 * index given more rows than its memory tier holds takes them in sorted
 * runs, at this call; else they went in as they came). */
int floe__kx_build_finish(floe__kx_build *b, floe_error *err);
void floe__kx_build_get_stats(const floe__kx_build *b, floe__kx_build_stats *out);
/* The keys of an equality delete file on the key columns, for `fn`. */
int floe__kx_build_eq_keys(floe__kx_build *b, const floe__plan_file *eq,
                           int (*fn)(void *ctx, const uint8_t *key, size_t len, floe_error *err),
                           void *ctx, floe_error *err);
/* Whether an equality delete file deletes by exactly the key's columns. */
bool floe__kx_eq_on_key(const floe__schema *key_schema, const floe__content_file *eq);

#endif /* FLOE_KEYINDEX_INTERNAL_H */
