/*
 * keeper_internal.h - the key index of position mode kept true to the
 * table (SPEC.md section 6): built from the table's files, recovered from
 * its checkpoint and log at a restart, brought up to date with what other
 * writers did, and the position deletes of each commit attempt moved onto
 * the rows' current files.
 *
 *   keeper.c    the lifecycle (the index built from files by
 *               keyindex/keybuild.c): open (load + replay, or rebuild), sync per
 *               commit attempt, commit bookkeeping, checkpoints
 *
 * The invariant: outside a commit attempt the index holds exactly the live
 * rows of the table as of the snapshot it is synced to, plus the rows of
 * the open batches (in uncommitted files), minus the rows the open and
 * sealed batches' delete records take.  Every delete record names a row
 * the index no longer holds; after a sync every record names a live file
 * (or is dropped because its row is gone).  When the index cannot be
 * brought up to date it is rebuilt: a stale index never produces a delete.
 *
 * Not thread-safe: the sink's thread only.
 */
#ifndef FLOE_KEEPER_INTERNAL_H
#define FLOE_KEEPER_INTERNAL_H

#include "keyindex/keyindex_internal.h"
#include "sink/moves_internal.h"
#include "sink/sink_internal.h"

/* ---- the keeper (keeper.c) ------------------------------------------------------------------ */

typedef enum floe__keeper_start {
    FLOE__KEEPER_EMPTY,          /* the table had no rows: an empty index */
    FLOE__KEEPER_LOADED,         /* checkpoint + log (+ other writers' snapshots read) */
    FLOE__KEEPER_REBUILT,        /* read from the table's files */
} floe__keeper_start;

typedef struct floe__keeper_config {
    floe__table *table;
    const char *sink_id;
    floe__kx_source src;                /* io: the table's */
    floe__kx_options kx;
    const char *dir;                    /* where the index is kept between runs; NULL: nowhere
                                           (rebuilt at every start) */
    floe__warn_fn warn;                 /* may be NULL */
    void *warn_ctx;
    /* The sink's own compactions' moves (taken when their snapshots are
     * synced, instead of reading the new files); NULL: none. */
    floe__moves *moves;
} floe__keeper_config;

typedef struct floe__keeper_stats {
    floe__kx_stats kx;
    floe__keeper_start start;
    char why[320];                      /* REBUILT: why the stored index was not used */
    uint64_t start_ns;                  /* opening took */
    uint64_t replayed;                  /* logged batches replayed at the start */
    uint64_t synced;                    /* other writers' snapshots read (start and run) */
    uint64_t compared;                  /* snapshots compared file by file with the current
                                           one (history between them gone) */
    uint64_t rebuilds;                  /* full re-reads of the table (start and run) */
    floe__kx_build_stats built;         /* files read (all of the above) */
    uint64_t moved_files, moved_rows;   /* re-pointed after the sink's own compactions and
                                           copy-on-write commits */
    uint64_t retargeted;                /* deletes moved onto a rewritten file */
    uint64_t dropped;                   /* deletes of rows another writer deleted already */
    uint64_t checkpoints;
} floe__keeper_stats;

typedef struct floe__keeper floe__keeper;

/* Open the index for the table as loaded (cfg and what it points to must
 * outlive the keeper): the stored one when it can be verified against
 * main's history and brought up to date, else rebuilt from the table.
 * Errors: FLOE_ESTATE when another process holds the index directory; the
 * table's read errors. */
int floe__keeper_open(const floe__keeper_config *cfg, floe__keeper **out, floe_error *err);
void floe__keeper_free(floe__keeper *k);                 /* accepts NULL */
floe__kx *floe__keeper_kx(floe__keeper *k);
/* For rows about to be indexed into an index that holds none (a bulk
 * snapshot batch): start a checkpoint that each row indexed is added to
 * (floe__kx_ckpt_add on floe__keeper_streamed), so that the checkpoint
 * after the batch's commit is only its trailer, with no walk of the index.
 * The keeper owns it: the next checkpoint finishes it when it holds
 * exactly the index's rows, else discards it (then streamed is NULL).
 * Nothing started without a store, or when the index is not empty. */
int floe__keeper_stream_checkpoint(floe__keeper *k, floe_error *err);
floe__kx_ckpt *floe__keeper_streamed(floe__keeper *k);
/* Before a commit attempt of s, on the table as just reloaded: read the
 * snapshots other writers added since the last sync, move the delete
 * records of s and of the writer's open batches onto the rows' files, log
 * s's index changes under the attempt's token, and give its position deletes (*deletes owned by the
 * keeper until the next call; NULL: none). */
int floe__keeper_prepare(floe__keeper *k, floe__sealed *s, floe__writer *w, uint64_t token,
                         floe__posdel_set **deletes, floe_error *err);
/* A copy-on-write attempt's rewrite (committer's `rewrote`): its moves kept
 * under the attempt's token, taken when its snapshot is committed; w NULL:
 * the attempt cannot have landed, forget them. */
void floe__keeper_rewrote(floe__keeper *k, uint64_t token, const floe__cow *w);
/* s is in the table as snapshot_id (committed, or found landed); a
 * copy-on-write snapshot's moved rows are re-pointed (by its moves, else
 * by reading what it changed). */
int floe__keeper_committed(floe__keeper *k, const floe__sealed *s, int64_t snapshot_id,
                           floe__writer *w, floe_error *err);
/* s was skipped: an earlier run had committed it (its files are gone). */
int floe__keeper_covered(floe__keeper *k, const floe__sealed *s, floe__writer *w,
                         floe_error *err);
/* Read the index again from the table as just committed (a commit that
 * replaced every file), and checkpoint it.  The kx pointer changes. */
int floe__keeper_rebuild(floe__keeper *k, floe__writer *w, floe_error *err);
/* Write a checkpoint now (the input ended). */
int floe__keeper_checkpoint(floe__keeper *k, floe__writer *w, floe_error *err);
void floe__keeper_get_stats(const floe__keeper *k, floe__keeper_stats *out);
/* The snapshot the index reflects (-1: the table had none). */
int64_t floe__keeper_synced_to(const floe__keeper *k);

#endif /* FLOE_KEEPER_INTERNAL_H */
