/*
 * moves_internal.h - where the sink's own compactions moved rows, handed
 * from the maintenance thread to the key index (moves.c).
 *
 * When the sink's maintenance compacts files, the key index would have to
 * read the new files back to learn where each key's row is now (0.2-0.5 s
 * for a million rows, on the sink's thread, before its next commit).  The
 * compaction knows it already: old file k's row p went to output row
 * first_out[k] + p - |skipped rows of k below p|.  The maintenance thread
 * puts each group's moves here before the group's first commit attempt,
 * under the snapshot's floe.maintenance-id, and takes them back when the
 * group gives up; the keeper takes them when it syncs that snapshot and
 * re-points its rows instead of reading (keeper.c).  A move the keeper
 * never takes (the snapshot was not the next one it saw, or an attempt
 * whose outcome was unknown never landed) only costs memory until pushed
 * out: the registry keeps the latest MOVES_KEPT.
 *
 * floe__moves is thread-safe (a mutex); a floe__moved taken from it belongs
 * to the taker.
 */
#ifndef FLOE_MOVES_INTERNAL_H
#define FLOE_MOVES_INTERNAL_H

#include "maint/maint_internal.h"

/* The rows of one old file not copied, as a bitmap with the count below
 * each word beside it: whether a row was skipped and how many below it
 * were, in O(1) and without a branch to mispredict (a million rows are
 * asked in random order).  16 bytes per 64 rows up to the last skipped
 * row: 250 KB for a million. */
typedef struct floe__skipped {
    uint64_t *bits;                  /* bit p: row p was skipped */
    uint64_t *below;                 /* per word: skipped rows in the words before it */
    size_t n_words;                  /* rows past the last word: none skipped */
    uint64_t count;
} floe__skipped;

/* One compaction group's moves: a copy of what floe__compact_moved says. */
typedef struct floe__moved {
    char *id;                        /* the snapshot's floe.maintenance-id */
    size_t n_old, n_out;
    char **old, **out;               /* the removed and the added data files */
    uint64_t *first_out;             /* per old file: output rows before its rows */
    floe__skipped *skipped;          /* per old file */
    uint64_t *out_start;             /* per output file: output rows before it; [n_out] total */
} floe__moved;

void floe__moved_free(floe__moved *m);                  /* accepts NULL */

/* Where row `pos` of old file k went: true with the output file's index
 * and the row's position in it, false when the row was not copied (it
 * was deleted when the compaction read it). */
bool floe__moved_where(const floe__moved *m, size_t k, uint64_t pos, size_t *out, uint64_t *at);

typedef struct floe__moves floe__moves;

int floe__moves_new(floe__moves **out, floe_error *err);
void floe__moves_free(floe__moves *r);                  /* accepts NULL */
/* Keep a copy of a group's moves (best effort: out of memory, it
 * is not kept and the keeper reads the files instead). */
void floe__moves_put(floe__moves *r, const floe__compact_moved *moved);
/* The moves of the snapshot with maintenance id `id`, taken out (the
 * caller frees them), or NULL. */
floe__moved *floe__moves_take(floe__moves *r, const char *id);

#endif /* FLOE_MOVES_INTERNAL_H */
