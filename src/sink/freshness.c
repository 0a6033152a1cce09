/*
 * freshness.c - how stale the table is in wall-clock time: the age of the
 * oldest input (update or progress) that no commit covers yet, 0 when every
 * input read is committed.
 *
 * Inputs arrive in wall-clock order but carry input times in any order
 * above the frontier.  For a committed frontier C the answer is the arrival
 * of the first input whose time is >= C.  With M_k the largest time among
 * the first k inputs, that is the first k with M_k >= C, so it suffices to
 * keep the "staircase" of (M_k, arrival) at each k where M_k grows.  Marks
 * closer than COALESCE_NS to the previous one raise its M instead of adding
 * a mark (the answer is then at most that much too old, never too young),
 * and the staircase is bounded by MAX_MARKS the same way.  A commit drops
 * the marks below its frontier.
 */
#include "sink/sink_internal.h"

#define COALESCE_NS 100000000ull   /* 100 ms */
#define MAX_MARKS 4096

void floe__fresh_init(floe__freshness *f) { memset(f, 0, sizeof *f); }

void floe__fresh_free(floe__freshness *f)
{
    floe__free(f->marks);
    memset(f, 0, sizeof *f);
}

void floe__fresh_note(floe__freshness *f, uint64_t t, uint64_t now_ns)
{
    floe__fresh_mark *last = f->n ? &f->marks[f->n - 1] : NULL;
    if (last && t <= last->max_time)
        return;                         /* an older, still uncommitted input answers first */
    if (last && (now_ns - last->arrived_ns < COALESCE_NS || f->n == MAX_MARKS)) {
        last->max_time = t;
        return;
    }
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        floe__fresh_mark *m = floe__realloc(f->marks, cap * sizeof *m);
        if (!m) {                       /* no memory: coalesce into the last mark */
            if (last)
                last->max_time = t;
            return;
        }
        f->marks = m;
        f->cap = cap;
    }
    f->marks[f->n++] = (floe__fresh_mark){t, now_ns};
}

void floe__fresh_committed(floe__freshness *f, floe__frontier c)
{
    size_t drop = 0;
    while (drop < f->n && (c.empty || f->marks[drop].max_time < c.t))
        drop++;
    if (drop == 0)
        return;                        /* marks may be NULL: nothing arrived yet */
    memmove(f->marks, f->marks + drop, (f->n - drop) * sizeof *f->marks);
    f->n -= drop;
}

uint64_t floe__fresh_oldest_ns(const floe__freshness *f)
{
    return f->n ? f->marks[0].arrived_ns : 0;
}
