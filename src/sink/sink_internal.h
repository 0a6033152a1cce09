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
    bool snapshot;           /* the initial snapshot batch [as_of, as_of+1) */
    uint64_t seq;            /* 0, 1, 2, ... in mint order */
} floe__batch;

typedef struct floe__minter floe__minter;

/* Start minting.  `resume` is the table's recorded frontier (`has_resume`
 * false for a table without floe progress).  Errors: FLOE_ESTATE "input
 * compacted past resume upper" when resume < as_of.  A table that records
 * [] (complete) gives a minter that is done at once (floe__minter_done). */
int floe__minter_new(uint64_t as_of, uint64_t commit_interval, bool has_resume,
                     floe__frontier resume, floe__minter **out, floe_error *err);
void floe__minter_free(floe__minter *m);

/* Tell the minter the input frontier moved to `f` (non-decreasing; the
 * empty frontier means the input closed).  New descriptions become available
 * through floe__minter_next. */
int floe__minter_advance(floe__minter *m, floe__frontier f, floe_error *err);
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
 * floe__stash_end_close.  No push may happen in between. */
int floe__stash_begin_close(floe__stash *st, floe__frontier f, floe_error *err);
/* The next consolidated update: *got true and *u set (its pointers stay
 * valid until the next call), or *got false at the end. */
int floe__stash_next(floe__stash *st, floe__upd *u, bool *got, floe_error *err);
void floe__stash_end_close(floe__stash *st);
void floe__stash_get_stats(const floe__stash *st, floe__stash_stats *out);

#endif /* FLOE_SINK_INTERNAL_H */
