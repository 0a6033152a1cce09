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

#endif /* FLOE_SINK_INTERNAL_H */
