/*
 * sink_internal.h - the exactly-once sink: frontiers, batch descriptions and
 * the parts that turn a changelog into Iceberg snapshots (SPEC.md 5-7).
 *
 *   minter     decides the batch descriptions [lower, upper) (one snapshot each)
 *   writer     turns consolidated updates into data and delete files per batch
 *   committer  commits sealed batches in order, with fencing and retries
 *
 * Each part sees only the narrow types below, so more writers, other input
 * adapters and other catalogs plug in without touching the others.
 */
#ifndef FLOE_SINK_INTERNAL_H
#define FLOE_SINK_INTERNAL_H

#include "maint/maint_internal.h"
#include "source/source_internal.h"
#include "table/table_internal.h"
#include "util/util_internal.h"

/* ---- frontiers (frontier.c) ------------------------------------------------
 * Either one time t ("every update still to come has time >= t") or empty
 * ("the input is complete").  JSON: [t] or []. */
typedef struct floe__frontier {
    bool empty;
    uint64_t t;              /* meaningful when !empty */
} floe__frontier;

static inline floe__frontier floe__frontier_at(uint64_t t)
{
    floe__frontier f = {false, t};
    return f;
}
static inline floe__frontier floe__frontier_closed(void)
{
    floe__frontier f = {true, 0};
    return f;
}
/* -1, 0, 1 as a is below, equal to, above b; the empty frontier is above all. */
static inline int floe__frontier_cmp(floe__frontier a, floe__frontier b)
{
    if (a.empty || b.empty)
        return a.empty == b.empty ? 0 : (a.empty ? 1 : -1);
    return a.t < b.t ? -1 : a.t > b.t;
}
/* Whether time t lies below frontier f (t is closed once f passes it). */
static inline bool floe__frontier_passed(floe__frontier f, uint64_t t)
{
    return f.empty || t < f.t;
}
/* "[t]" or "[]" into out (at least 24 bytes). */
void floe__frontier_format(floe__frontier f, char *out, size_t n);
/* Parses "[t]" / "[]" (whitespace allowed); FLOE_EFORMAT when malformed. */
int floe__frontier_parse(const char *s, floe__frontier *out, floe_error *err);

/* ---- batch descriptions and the minter (mint.c) ---------------------------- */
typedef struct floe__batch {
    floe__frontier lower;    /* never empty */
    floe__frontier upper;    /* empty: runs to the end of input */
    bool snapshot;           /* the initial snapshot batch [as_of, as_of+1), or a replacing one:
                                its rows start from an empty table */
    uint64_t seq;            /* 0, 1, 2, ... in mint order */
    bool replace;            /* its commit removes every file the table has (a resync, a
                                truncation) */
    uint64_t from;           /* a truncation: its rows below this time are gone (0: none) */
} floe__batch;

typedef struct floe__minter floe__minter;

/* Start minting.  `resume` is the table's recorded frontier (`has_resume`
 * false for a table without floe progress).  Errors: FLOE_ESTATE "input
 * compacted past resume upper" when resume < as_of.  A table that records
 * [] (complete) gives a minter that is done at once (floe__minter_done). */
int floe__minter_new(uint64_t as_of, uint64_t commit_interval, bool has_resume,
                     floe__frontier resume, floe__minter **out, floe_error *err);
void floe__minter_free(floe__minter *m);
/* Per-advance mode (call before the first advance): no future batches;
 * each advance past the end of what is minted mints one batch [end, F), so
 * the caller's advances decide when snapshots are made. */
void floe__minter_per_advance(floe__minter *m);

/* Tell the minter the input frontier moved to `f` (non-decreasing; the
 * empty frontier means the input closed).  New descriptions become available
 * through floe__minter_next. */
int floe__minter_advance(floe__minter *m, floe__frontier f, floe_error *err);
/* The input ends at `end` without closing (SPEC 5.7): the last batch ends
 * there.  Mints what is missing up to it; batches already handed out that
 * reach past it are the writer's to cut (floe__writer_truncate).  Nothing
 * is minted afterwards. */
int floe__minter_end(floe__minter *m, floe__frontier end, floe_error *err);
/* The next minted description not yet handed out: 1 and *out set, or 0. */
int floe__minter_next(floe__minter *m, floe__batch *out);
/* Whether every time is covered by a handed-out batch (the final batch with
 * an empty upper was minted, or the table was already complete). */
bool floe__minter_done(const floe__minter *m);
/* Where writing starts: times below it are already committed (or belong to
 * the snapshot batch when fresh). */
floe__frontier floe__minter_catchup_start(const floe__minter *m);

/* ---- the stash: updates waiting for the frontier (stash.c) -------------------
 * Holds updates (time, diff, key bytes, row bytes) until the frontier passes
 * their time, then hands out each closed interval consolidated: sorted by
 * (time, key, row), equal (time, key, row) summed, zero sums dropped.  Memory
 * is bounded: past `memory_limit` bytes the held updates are sorted and
 * spilled as a run to an anonymous temporary file; closing an interval
 * merges the runs' closed prefixes with what is in memory. */
typedef struct floe__upd {
    uint64_t time;
    int64_t diff;
    const uint8_t *key;       /* key bytes (empty in append mode) */
    const uint8_t *row;       /* row in the row format */
    uint32_t key_len, row_len;
    bool stable;              /* from floe__stash_next: key and row stay valid until
                                 floe__stash_end_close (else only until the next call) */
} floe__upd;

typedef struct floe__stash floe__stash;
typedef struct floe__stash_stats {
    uint64_t rows;            /* updates held (in memory and spilled) */
    uint64_t bytes;           /* their key and row bytes */
    uint64_t runs;            /* spilled runs not yet consumed */
    uint64_t spilled_rows;    /* updates ever spilled */
} floe__stash_stats;

/* spill_dir NULL: $TMPDIR or /tmp.  memory_limit 0: 512 MiB. */
int floe__stash_new(const char *spill_dir, size_t memory_limit, floe__stash **out,
                    floe_error *err);
void floe__stash_free(floe__stash *st);
int floe__stash_push(floe__stash *st, uint64_t time, int64_t diff, const uint8_t *key,
                     uint32_t key_len, const uint8_t *row, uint32_t row_len, floe_error *err);
/* Start handing out the consolidated updates with time below `f` (all of
 * them when f is empty).  Call floe__stash_next until it returns 0, then
 * floe__stash_end_close.  No push may happen in between.  Order: equal
 * (time, key, row) are merged; the updates of one key (of one row, when the
 * key is empty) come together, in (time, row) order; different keys come
 * in no particular order. */
int floe__stash_begin_close(floe__stash *st, floe__frontier f, floe_error *err);
/* The next consolidated update: *got true and *u set (its pointers stay
 * valid until the next call, or until floe__stash_end_close when
 * u->stable), or *got false at the end. */
int floe__stash_next(floe__stash *st, floe__upd *u, bool *got, floe_error *err);
void floe__stash_end_close(floe__stash *st);
void floe__stash_get_stats(const floe__stash *st, floe__stash_stats *out);

/* ---- partial rows (partial.c) -----------------------------------------------------------
 * An upsert's insertion some of whose top-level columns are "unchanged":
 * they take the values of the row it replaces, the key's row retracted at
 * the same time (a Postgres update that leaves TOASTed values out).  The
 * writer fills them (write_upsert.c, write_fill.c).  Bytes: the tag, u32
 * n, a mask of n bits (column c unchanged), the row with null slots
 * there.  Whole rows never start with the tag. */
#define FLOE__PARTIAL_TAG 0xFF
typedef struct floe__partial {
    uint32_t n;                         /* columns */
    const uint8_t *mask;
    const uint8_t *row;                 /* its unchanged slots null */
    size_t len;
} floe__partial;

bool floe__partial_is(const uint8_t *p, size_t len);
int floe__partial_view(const uint8_t *p, size_t len, floe__partial *out, floe_error *err);
bool floe__partial_unchanged(const floe__partial *v, size_t c);
/* mask: ceil(n / 8) bytes. */
int floe__partial_pack(const uint8_t *mask, uint32_t n, const uint8_t *row, size_t len,
                       floe__buf *out, floe_error *err);
/* p's unchanged columns from `src`, a row of s (whole, or partial: what
 * it leaves unchanged stays so), appended to out: a whole row, or a
 * partial one when columns stay unchanged. */
int floe__partial_fill(const floe__schema *s, const floe__partial *p, const uint8_t *src,
                       size_t slen, floe__buf *out, floe_error *err);
/* The same from a row of `proj`, a projection of s (by field id) holding
 * at least p's unchanged columns (read back with it): a whole row. */
int floe__partial_fill_projected(const floe__schema *s, const floe__schema *proj,
                                 const floe__partial *p, const uint8_t *vals, size_t vlen,
                                 floe__buf *out, floe_error *err);
/* A row (whole or partial) of `from` in schema `to` (columns matched by
 * field id, as floe__datum_convert does). */
int floe__partial_convert(const floe__schema *from, const floe__schema *to, const uint8_t *row,
                          size_t len, floe__buf *out, floe_error *err);

/* ---- the writer (write.c, write_upsert.c) ------------------------------------------------
 * Pairs consolidated updates with batch descriptions and turns them into
 * data and delete files, one set per batch (SPEC.md section 6).
 *
 * Upsert: the updates of one key within one batch are resolved together,
 * in time order, retractions before insertions at each time: a retraction
 * cancels a row the same batch inserted earlier (it is never written); one
 * of a row of an earlier batch becomes a position delete of its row, found
 * in the key index (position mode), or an equality delete on the key
 * (equality mode).  What survives is written and, in position mode, added
 * to the index.  So a batch never deletes a row it writes, and a key
 * updated several times in one batch ends with exactly one row.  The
 * snapshot batch only inserts.  Append: every update becomes |diff| rows
 * with _diff = +1/-1 and _timestamp = its time. */
typedef struct floe__writer floe__writer;

typedef void (*floe__warn_fn)(void *ctx, const char *message);

typedef struct floe__writer_config {
    floe__table *table;
    bool upsert;
    bool synthetic_key;                 /* upsert keyed by the whole row */
    struct floe__kx *kx;                /* position mode: the key index; NULL: equality mode */
    const floe__schema *data_schema;    /* data file rows (append: + _diff, _timestamp) */
    int32_t schema_id;                  /* its id in the table (its rows' hashes are of it) */
    const floe__schema *eq_schema;      /* upsert: the key columns, in key order */
    const int32_t *eq_ids;
    size_t n_eq_ids;
    /* The partition spec data files are written in (JSON, as the commit
     * request's spec): NULL the table's (table->spec_id), else a change of
     * the sink's that its next commit makes the table's. */
    const json_t *spec;
    floe__file_writer_options file_opts;    /* data files */
    floe__file_writer_options eqdel_opts;   /* equality delete files */
    /* A partitioned table: the row bytes the open batches' data writers
     * may hold together (0: unbounded) before the partition holding the
     * most is written out early (part_writer.c). */
    uint64_t data_memory;
    floe__warn_fn warn;                 /* primary-key violations etc.; may be NULL */
    void *warn_ctx;
    /* A retraction by key of a key with no live row is how its source says
     * "insert or replace" (a Kafka upsert topic): counted, not warned. */
    bool absent_keys_expected;
    size_t kx_log_max;                  /* bytes of a batch's key index log (floe__kx_log) */
} floe__writer_config;

/* The position deletes a batch makes: per delete the row and the key it
 * was taken for, so the delete can follow the row when a compaction moves
 * it before the batch commits.  Records in `recs`: u32 index into `paths`
 * (FLOE__DELETE_DROPPED: the row turned out deleted already), u64 pos, u64
 * rowhash, u32 key length, key. */
#define FLOE__DELETE_HEAD 24
#define FLOE__DELETE_DROPPED UINT32_MAX
typedef struct floe__delrecs {
    floe__buf recs;
    floe__strtab paths;                 /* the data files they are in */
} floe__delrecs;
void floe__delrecs_init(floe__delrecs *d);
void floe__delrecs_free(floe__delrecs *d);
/* The index of `path` in d->paths.s, added when new. */
int floe__delrecs_path(floe__delrecs *d, const char *path, uint32_t *slot, floe_error *err);
int floe__delrecs_add(floe__delrecs *d, const char *path, uint64_t pos, uint64_t rowhash,
                      const uint8_t *key, uint32_t len, floe_error *err);
/* The records as a position delete set (*out NULL when there are none;
 * the caller frees it). */
int floe__delrecs_set(const floe__delrecs *d, floe__posdel_set **out, floe_error *err);

/* A batch whose files are complete, ready to commit. */
typedef struct floe__sealed {
    floe__batch desc;
    floe__content_list files;
    uint64_t rows_written;              /* data rows */
    uint64_t position_deletes, equality_deletes;
    floe__delrecs dels;                 /* the rows it deletes by position */
    struct floe__kx_log *kx_log;        /* position mode: the rows it indexed (owned) */
    bool unlogged;                      /* rows indexed without kx_log (a bulk snapshot
                                           batch): the attempt is not logged, the index is
                                           checkpointed after its commit */
    /* The schema its files are written in when the table's current one is
     * another (a schema change of the sink: its commit makes it current);
     * NULL otherwise.  Borrowed from the sink. */
    const floe__schema *schema;
    int32_t last_column_id;             /* with schema: the table's last-column-id */
    /* Likewise the partition spec its files are written in (the commit
     * request's spec) when it is not the table's default; NULL otherwise. */
    const json_t *spec;
} floe__sealed;
void floe__sealed_free(floe__sealed *s);   /* frees files and s; accepts NULL */

typedef struct floe__writer_stats {
    uint64_t data_files, delete_files;  /* sealed so far */
    uint64_t rows_written, position_deletes, equality_deletes;
    uint64_t pk_violations;             /* an insertion for a key already live */
    uint64_t retract_missing;           /* a retraction of a key with no live row */
    uint64_t retract_mismatch;          /* a retraction whose row is not the live row */
    uint64_t rows_filled, fill_reads;   /* partial rows filled from data files; files read */
} floe__writer_stats;

/* cfg (and what it points to) must outlive the writer. */
int floe__writer_new(const floe__writer_config *cfg, floe__writer **out, floe_error *err);
/* Aborts the files of every unsealed batch. */
void floe__writer_free(floe__writer *w);
/* Descriptions in mint order; each lower must equal the previous upper. */
int floe__writer_add_batch(floe__writer *w, const floe__batch *b, floe_error *err);
/* One consolidated update; updates come in (time, key, row) order and their
 * times must lie in a known batch. */
int floe__writer_write(floe__writer *w, const floe__upd *u, floe_error *err);
/* Write out the (key, batch) group being gathered: it may point at rows of
 * the stash (floe__upd.stable), so call it before floe__stash_end_close. */
int floe__writer_flush(floe__writer *w, floe_error *err);
/* Whether an open batch holds time t. */
bool floe__writer_holds(const floe__writer *w, uint64_t t);
/* Data files written outside the writer (sink_bulk.c: `rows` insertions
 * of the snapshot batch, indexed without a log) join the snapshot batch
 * holding t; *files is emptied. */
int floe__writer_adopt(floe__writer *w, uint64_t t, floe__content_list *files, uint64_t rows,
                       floe_error *err);
/* The input ended at `end` (floe__minter_end): the open batch holding end
 * ends there, later ones (which can hold no update) are dropped. */
int floe__writer_truncate(floe__writer *w, floe__frontier end, floe_error *err);
/* Seal (close the files of) the next batch whose upper <= f, oldest first:
 * *out is it (caller frees), or NULL when no batch can be sealed yet. */
int floe__writer_seal_next(floe__writer *w, floe__frontier f, floe__sealed **out,
                           floe_error *err);
void floe__writer_get_stats(const floe__writer *w, floe__writer_stats *out);
/* Visit the delete records of every open (unsealed) batch, oldest first:
 * the key index moves them when the rows they delete move. */
int floe__writer_each_open(floe__writer *w,
                           int (*fn)(void *ctx, floe__delrecs *d, floe_error *err), void *ctx,
                           floe_error *err);

/* ---- the committer (committer.c) ----------------------------------------------------
 * SPEC.md sections 5.1 and 7: where the table says we are, and committing
 * sealed batches in order, one snapshot each, with fencing, lost-response
 * detection and the retry classes. */
#define FLOE_PROP_FRONTIER "floe.frontier"
#define FLOE_PROP_SINK_ID "floe.sink-id"
#define FLOE_PROP_SINK_VERSION "floe.sink-version"
#define FLOE_PROP_ATTEMPT "floe.attempt-id"         /* position mode: the key index's log */
#define FLOE__ATTEMPT_ID_LEN 17
/* An attempt token as its floe.attempt-id (16 hex digits). */
void floe__attempt_id(uint64_t token, char out[FLOE__ATTEMPT_ID_LEN]);

/* ---- progress (progress.c) ------------------------------------------------------
 * SPEC 5.1: where this sink id stands in a table.  Every floe commit also
 * points the tag "floe-<sink id>" at its snapshot, so expiry keeps it. */
#define FLOE_PROGRESS_TAG_PREFIX "floe-"

typedef enum floe__progress_state {
    FLOE__PROGRESS_NONE,        /* main's whole history walked: no snapshot of this sink id */
    FLOE__PROGRESS_FOUND,       /* the newest snapshot of this sink id on main's history */
    FLOE__PROGRESS_UNKNOWN,     /* main's history is cut (an expired parent) before one */
} floe__progress_state;

typedef struct floe__progress {
    floe__progress_state state;
    floe__frontier frontier;    /* FOUND: its floe.frontier */
    uint64_t sink_version;      /* FOUND: its floe.sink-version */
    int64_t snapshot_id;        /* FOUND: the snapshot; else -1 */
    int64_t cut_at, missing;    /* UNKNOWN: the snapshot whose parent `missing` is gone */
    bool has_tag;               /* the tag floe-<sink id> exists ... */
    int64_t tag_snapshot_id;    /* ... and points here */
    bool tag_has_progress;      /* that snapshot exists and carries this sink id: */
    floe__frontier tag_frontier;
    uint64_t tag_version;
    bool tag_on_main;           /* the walk passed the tag's snapshot */
} floe__progress;

/* "floe-<sink id>" into out. */
void floe__progress_tag(const char *sink_id, char *out, size_t n);
/* Walk main's history in `md` for `sink_id` (SPEC 5.1).  io, when not NULL,
 * lets the walk look up expired parents in the older metadata files of the
 * metadata-log.  Errors: FLOE_EFORMAT for malformed floe properties on a
 * snapshot of this sink id, or a parent chain that never ends. */
int floe__progress_read(const floe__metadata *md, floe__fileio *io, const char *sink_id,
                        floe__progress *out, floe_error *err);
/* A snapshot's floe properties: FLOE_ENOTFOUND when it has none,
 * FLOE_EFORMAT when they are malformed.  *sink_id points into the snapshot. */
int floe__snapshot_progress(const floe__snapshot *s, floe__frontier *frontier, uint64_t *version,
                            const char **sink_id, floe_error *err);
/* Whether main's current snapshot holds rows (by its totals; true when it
 * has none to tell). */
bool floe__table_holds_rows(const floe__metadata *md);
/* The sink ids a table knows (from floe-* tags and main's history as far
 * as it reaches): a new JSON array of strings, and the same as text
 * ("'a', 'b'") appended to out. */
int floe__progress_sink_ids(const floe__metadata *md, json_t **out, floe_error *err);
int floe__progress_known_ids(const floe__metadata *md, floe__buf *out, floe_error *err);

/* ---- where a sink starts (resume.c) ---------------------------------------------- */
typedef struct floe__resume_ask {
    const char *table;          /* "NS.NAME", for messages */
    const char *sink_id;
    uint64_t version;
    bool has_resume_from;       /* the user says where this sink stands */
    floe__frontier resume_from;
    bool new_sink;              /* the user says this sink id is new to the table */
} floe__resume_ask;

typedef struct floe__resume {
    bool has;                   /* false: a fresh start */
    floe__frontier frontier;
    int64_t snapshot_id;        /* the snapshot recording it; -1 when given by the user */
} floe__resume;

/* SPEC 5.1-5.2 for a sink opening `md`: resume from this sink id's
 * progress on main's history, from the user's frontier, or fresh; refused
 * (FLOE_ESTATE, saying what happened and how to go on) when the table holds
 * rows this sink cannot account for, or its progress cannot be recovered;
 * FLOE_EFENCED when a newer version of the sink wrote it; FLOE_EINVAL when
 * --resume-from disagrees with what the table records. */
int floe__resume_decide(const floe__resume_ask *a, const floe__metadata *md, floe__fileio *io,
                        floe__resume *out, floe_error *err);

typedef struct floe__committer floe__committer;
typedef void (*floe__committed_fn)(void *ctx, floe__frontier upper, int64_t snapshot_id);

typedef struct floe__committer_config {
    floe__table *table;
    const char *sink_id;
    uint64_t sink_version;
    /* Where the sink starts: has_base false for a fresh start (nothing of
     * this sink id in the table); else base_frontier, and base_snapshot the
     * snapshot that recorded it (-1 when the user gave it with
     * --resume-from).  The committer checks each attempt against it. */
    bool has_base;
    floe__frontier base_frontier;
    int64_t base_snapshot;
    int max_tries;                      /* failures other than conflicts; 0: 5 */
    unsigned backoff_ms;                /* first retry delay; 0: 50 ms, doubling, max 2 s */
    floe__committed_fn on_commit;       /* after each commit (SPEC 7.5); may be NULL */
    void *on_commit_ctx;
    floe__warn_fn warn;                 /* may be NULL */
    void *warn_ctx;
    /* Called before each attempt's commit (after the reload and the
     * checks) with the attempt's token (its snapshot carries it as
     * floe.attempt-id): gives the position deletes to commit (*deletes,
     * owned by the hook's side until the next call; NULL: none).  NULL:
     * the batch's delete records as they are (floe__delrecs_set). */
    int (*prepare)(void *ctx, floe__sealed *s, uint64_t token, floe__posdel_set **deletes,
                   floe_error *err);
    void *prepare_ctx;
    /* With a prepare hook and the table's write.update.mode copy-on-write
     * (read at each attempt), the data files an attempt deletes rows from
     * are rewritten without them (floe__cow_rewrite) instead of getting
     * deletes.  Called with the rewrite before the attempt's commit (the
     * key index re-points the rows when the snapshot lands), and with NULL
     * when no commit of it can have landed; may be NULL. */
    void (*rewrote)(void *ctx, uint64_t token, const floe__cow *w);
    void *rewrote_ctx;
    /* Further summary properties (string values) for every snapshot, read
     * at each attempt; borrowed, may be NULL. */
    const json_t *extra_props;
    /* Called at each attempt with the frontier its snapshot records and
     * the metadata it commits on (the table as just reloaded): sets the
     * summary properties that belong to exactly that frontier (a source's
     * read positions) on `summary`, or refuses the attempt (an error: it
     * ends the commit unless its code is one retried); may be NULL. */
    int (*summary_hook)(void *ctx, floe__frontier upper, const floe__metadata *base,
                        json_t *summary, floe_error *err);
    void *summary_ctx;
    /* NULL, or a mutex held around each attempt (reload to commit), which
     * the sink's own maintenance holds around its commits too. */
    pthread_mutex_t *gate;
    /* Conflicts (another writer committed first) are retried, not counted
     * against max_tries, for this long from the batch's first attempt: a
     * busy compactor delays a commit, it does not halt the sink.  0: 10
     * minutes. */
    unsigned conflict_patience_ms;
} floe__committer_config;

#define FLOE__COMMIT_WINDOW 100         /* commit duration quantiles are over these */

typedef struct floe__committer_stats {
    uint64_t snapshots;                 /* batches committed (incl. recognised lost responses) */
    uint64_t lost_responses;            /* commits found to have landed on a reload */
    uint64_t covered;                   /* batches an earlier run of this sink had committed */
    uint64_t conflicts, failures;       /* attempts that ended in a conflict / another failure */
    uint64_t commit_ns_total, commit_ns_last;
    uint64_t recent_ns[FLOE__COMMIT_WINDOW];   /* the last commits' durations, a ring */
    uint64_t data_files, delete_files, rows, bytes;   /* committed */
    uint64_t rewritten_files, rewritten_rows;         /* copy-on-write, committed */
    uint64_t rewrites_reused;         /* files' rewrites taken over after a conflict */
    floe__frontier frontier;            /* last committed upper */
    bool has_frontier;
} floe__committer_stats;

int floe__committer_new(const floe__committer_config *cfg, floe__committer **out,
                        floe_error *err);
void floe__committer_free(floe__committer *c);
/* Commit one sealed batch (after every older one), one snapshot that also
 * moves the tag floe-<sink id> to it.  Before each attempt the table is
 * reloaded and this sink id's progress read (SPEC 7.2): our own earlier
 * attempt that landed is success; a batch an earlier run of this sink
 * (same id and version) already committed entirely is skipped with a
 * warning.  A batch with a schema (s->schema) makes it the table's
 * current one in the same commit (SPEC 4); the table handle adopts it once
 * it landed.  Fatal errors: FLOE_EFENCED; FLOE_ESTATE (schema/spec changed
 * by another writer,
 * a range another writer covered, a rollback of main past what this sink
 * committed, progress that can no longer be verified); the last failure
 * after max_tries. */
int floe__committer_commit(floe__committer *c, floe__sealed *s, floe_error *err);
void floe__committer_get_stats(const floe__committer *c, floe__committer_stats *out);

/* ---- freshness (freshness.c) ---------------------------------------------------------------
 * The wall-clock age of the oldest input no commit covers yet. */
typedef struct floe__fresh_mark {
    uint64_t max_time;                  /* the largest input time seen up to this arrival */
    uint64_t arrived_ns;                /* monotonic clock */
} floe__fresh_mark;

typedef struct floe__freshness {
    floe__fresh_mark *marks;            /* max_time and arrived_ns both increasing */
    size_t n, cap;
} floe__freshness;

void floe__fresh_init(floe__freshness *f);
void floe__fresh_free(floe__freshness *f);
/* An input covering time t arrived at now_ns (an update at t; a progress
 * record to F counts as t = F - 1).  Never fails: without memory it
 * coalesces, which can only make the answer older. */
void floe__fresh_note(floe__freshness *f, uint64_t t, uint64_t now_ns);
/* Everything below frontier c is committed. */
void floe__fresh_committed(floe__freshness *f, floe__frontier c);
/* When the oldest uncommitted input arrived (monotonic ns), 0 when none. */
uint64_t floe__fresh_oldest_ns(const floe__freshness *f);

/* ---- table maintenance while the sink runs (maintainer.c) ----------------------------------
 * A thread with its own catalog connection and table handle that keeps the
 * table healthy within a share of wall time (see maintainer.c). */
typedef struct floe__maintainer floe__maintainer;

typedef struct floe__maintainer_config {
    floe_connect_options connect;      /* strings borrowed: they outlive the maintainer */
    const char *ns, *name;             /* borrowed */
    double budget;                     /* share of wall time, (0, 1]; 0: 0.2 */
    int64_t orphan_age_ms;             /* orphan safety window; 0: one day */
    uint64_t orphan_interval_ns;       /* how often orphans are removed; 0: never */
    uint64_t orphan_first_ns;          /* the first removal this long after start */
    /* Called from the maintenance thread with a failed round's message. */
    void (*on_warning)(void *ctx, const char *message);
    void *warning_ctx;
    /* Where compactions put their moves for the key index (borrowed; it
     * outlives the maintainer); NULL: nowhere. */
    struct floe__moves *moves;
    /* The snapshot the sink's key index starts from (0: no index): expiry
     * keeps it and what follows it until a commit of the sink moves on. */
    int64_t index_at;
    /* The sink's commit gate (borrowed): compactions commit under it, so
     * the sink and its own maintenance never race each other. */
    pthread_mutex_t *gate;
} floe__maintainer_config;

typedef struct floe__maintainer_stats {
    bool debt_known;
    floe_table_debt debt;              /* as of the last round */
    uint64_t runs, failures, busy_ns;
    uint64_t compactions, files_compacted, deletes_carried;
    uint64_t snapshots_expired, files_removed, bytes_removed, orphans_removed;
} floe__maintainer_stats;

int floe__maintainer_start(const floe__maintainer_config *cfg, floe__maintainer **out,
                           floe_error *err);
/* A commit of the sink landed: look again soon.  index_at: the snapshot
 * its key index now reflects (0: no index); expiry keeps it and those
 * after it (the index walks them at the next commit; with them gone it
 * would compare plans and read files back).  Accepts NULL. */
void floe__maintainer_committed(floe__maintainer *m, int64_t index_at);
/* Paused, the thread runs no rounds (one under way finishes) until let go
 * on.  Accepts NULL. */
void floe__maintainer_pause(floe__maintainer *m, bool paused);
/* Safe from any thread. */
void floe__maintainer_stats_get(floe__maintainer *m, floe__maintainer_stats *out);
/* Stop the thread (a round under way finishes first) and free.  Accepts NULL. */
void floe__maintainer_stop(floe__maintainer *m);
/* The thread stopped, then compaction of what is still due, in the
 * caller's thread, for at most max_ns (not while paused); a failure is a
 * warning.  Then floe__maintainer_stop. */
void floe__maintainer_final(floe__maintainer *m, uint64_t max_ns);

/* ---- the sink (sink.c) ------------------------------------------------------------------
 * Every string of o, its connect options (a copy, the defaults for NULL)
 * and its properties pointed at copies in `a`. */
int floe__sink_options_own(floe_sink_options *o, floe__arena *a, floe_error *err);
/* The caller's options (and the connect options they point to) read into
 * the library's (floe_sink_open, and the sources' options' sink):
 * dst->connect then points to `connect`.  floe__abi_in's errors. */
int floe__sink_options_in(floe_sink_options *dst, floe_connect_options *connect,
                          const floe_sink_options *src, floe_error *err);
/* A summary property of the snapshot the sink resumes from (what its
 * source recorded with it, e.g. floe.pg.attnums); NULL when there is none.
 * Owned by the sink's table, valid until its next commit. */
const char *floe__sink_resume_property(const floe_sink *s, const char *key);
/* The table's format version, and the key columns' names "a,b" in the
 * sink's row schema (NULL: the whole row), owned by the sink. */
int floe__sink_format_version(const floe_sink *s);
const char *floe__sink_key_text(const floe_sink *s);
/* A resync (see floe__sink_replace in sink_state_internal.h), for sources:
 * `user` is a column list schema (floe_schema_parse). */
int floe__sink_resync(floe_sink *s, uint64_t at, const floe_schema *user, const char *key,
                      floe_error *err);
/* floe_sink_push of row bytes in the sink's row schema, which may be a
 * partial row (position or copy-on-write upsert mode with declared key
 * columns only; a retraction of one is a retraction of its key's row). */
int floe__sink_push_bytes(floe_sink *s, const uint8_t *row, size_t len, uint64_t time,
                          int64_t diff, floe_error *err);
/* floe_sink_open of the library's options (floe__sink_options_in), with a
 * catalog and FileIO of the caller's (borrowed; they must outlive the
 * sink), or neither: how tests put a fault-injecting catalog under a real
 * sink. */
int floe__sink_open_with(const floe_sink_options *opts, floe__catalog *catalog,
                         floe__fileio *io, floe_sink **out, floe_error *err);
/* Whether a partition spec change (e.g. a rerun's --partition-by) waits
 * for the sink's next snapshot. */
bool floe__sink_spec_pending(const floe_sink *s);
/* Whether the sink's own maintenance (maintain FLOE_MAINTAIN_AUTO) runs:
 * a source with several processes on one table lets one maintain it.  No
 * effect without maintenance. */
void floe__sink_maintain(floe_sink *s, bool on);
/* fn on the sink's table as the catalog has it now (reloaded), while no
 * commit of the sink or its maintenance runs. */
int floe__sink_look(floe_sink *s, int (*fn)(void *ctx, const floe__metadata *md, floe_error *err),
                    void *ctx, floe_error *err);
/* Every snapshot the sink commits from now on gets the summary
 * properties fn sets for the frontier it records (called at each commit
 * attempt with the metadata it commits on, on the thread committing: the
 * sink's), after those of floe_sink_set_property; an error from fn ends
 * the commit.  For a source whose read position must match the frontier
 * of whichever commit lands, including the ones the sink makes on its own
 * (a schema change cuts a batch), and that checks the table before
 * (another process took its input over).  fn NULL: none. */
void floe__sink_summary_hook(floe_sink *s,
                             int (*fn)(void *ctx, floe__frontier upper,
                                       const floe__metadata *base, json_t *summary,
                                       floe_error *err),
                             void *ctx);
/* One NDJSON change line (SPEC 2), parsed into *ch (its row or strings
 * kept by the sink until the next parse), then applied as
 * floe_sink_push_json applies it: for a source that looks at a change
 * before it goes in (a progress record of one of several streams). */
int floe__sink_parse_change(floe_sink *s, const char *line, size_t len, floe__change *ch,
                            floe_error *err);
int floe__sink_apply_change(floe_sink *s, const floe__change *ch, floe_error *err);
/* From now on a retraction by key that finds no live row is expected (a
 * source that upserts by key), not warned about. */
void floe__sink_expect_absent_keys(floe_sink *s);

/* ---- the snapshot batch in bulk (sink_bulk.c) ------------------------------------------
 * A fresh sink's snapshot batch (floe_sink_set_as_of(time) set, nothing
 * pushed) holds only insertions at one time: they need neither the stash's
 * consolidation nor the writer's groups, nor a logged key index.  Rows go
 * straight into data files through parts, one per writer thread; a part
 * hands its rows' (key, file, position, row hash) to the sink's thread in
 * bounded blocks, where floe__bulk_index puts them into the key index
 * (position mode).  After floe__bulk_seal, floe_sink_advance commits the
 * batch; the attempt is not logged and the index is checkpointed after it.
 *
 * Threads: the floe__bulk_part_* functions run on any thread (each part on
 * one thread at a time); everything else on the sink's thread.
 * The sink is not used otherwise while a bulk is open (its schema, key and
 * table are read by the parts). */
typedef struct floe__bulk floe__bulk;
typedef struct floe__bulk_part floe__bulk_part;

/* Open s's snapshot batch at `time` (its as-of) for at most max_parts parts
 * at once (their row groups share the sink's memory), about expect_rows
 * rows (an estimate: the key index is sized for them; 0 unknown).  Upsert
 * mode only. */
int floe__bulk_begin(floe_sink *s, uint64_t time, size_t max_parts, uint64_t expect_rows,
                     floe__bulk **out, floe_error *err);
/* Discard: the files of parts not committed are removed.  Every part must
 * be freed first.  Accepts NULL. */
void floe__bulk_free(floe__bulk *b);
/* Wake every part waiting for room (they fail with FLOE_EINTERRUPTED). */
void floe__bulk_cancel(floe__bulk *b);
/* tag: the caller's name for what the part holds (staging reports it). */
int floe__bulk_part_new(floe__bulk *b, uint64_t tag, floe__bulk_part **out, floe_error *err);
/* One row (of floe_sink_row_schema's bytes), an insertion at the time. */
int floe__bulk_part_write(floe__bulk_part *p, const uint8_t *row, size_t len, floe_error *err);
/* Close the part's files: they join the batch. */
int floe__bulk_part_finish(floe__bulk_part *p, floe_error *err);
/* Free a part (a part not finished has its files removed).  Accepts NULL. */
void floe__bulk_part_free(floe__bulk_part *p);
/* Index what parts handed over; when nothing is there, first wait up to
 * wait_ms for a block or a part to finish.  *finished: the parts finished
 * so far. */
int floe__bulk_index(floe__bulk *b, int wait_ms, size_t *finished, floe_error *err);
/* Every part finished: index the rest; the parts' files join the
 * snapshot batch when the next advance (floe_sink_advance past the time)
 * mints it, and commit with it.  The bulk stays the caller's to free. */
int floe__bulk_seal(floe__bulk *b, floe_error *err);
uint64_t floe__bulk_rows(const floe__bulk *b);
/* The size a data file of the batch rolls over at (the table's setting). */
uint64_t floe__bulk_target_file_size(const floe__bulk *b);
/* Staging (sink's thread): from now on each finished part's files wait to
 * be committed to `branch` (a static string), a new line of snapshots
 * whose first has no parent (a branch left by an earlier copy is replaced).
 * floe__bulk_stage_take takes the waiting files, *tags the tags of their
 * parts (valid until the next take); floe__bulk_stage_commit commits them
 * as one snapshot of the branch with the summary kv (nkv strings: key,
 * value, ...).  Once a commit may have landed, the bulk never removes its
 * files.  A failed commit stops the staging (the copy may go on). */
void floe__bulk_stage_to(floe__bulk *b, const char *branch);
int floe__bulk_stage_take(floe__bulk *b, const uint64_t **tags, size_t *n, floe_error *err);
int floe__bulk_stage_commit(floe__bulk *b, const char *const *kv, size_t nkv, floe_error *err);
/* Remove ref `branch` of s's table (nothing when absent). */
int floe__sink_drop_branch(floe_sink *s, const char *branch, floe_error *err);
/* The Prometheus text exposition of several sinks' metrics, appended to
 * out: each metric's HELP and TYPE once, then a sample per sink (labelled
 * with its sink id), as the format requires. */
int floe__sinks_metrics(const floe_sink *const *sinks, size_t n, floe__buf *out,
                        floe_error *err);

#endif /* FLOE_SINK_INTERNAL_H */
