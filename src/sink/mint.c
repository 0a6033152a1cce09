/*
 * mint.c - the minter: decides batch descriptions, one Iceberg snapshot
 * each (SPEC.md section 5).
 *
 * Fresh table: the snapshot batch [as_of, as_of+1) is minted at once and the
 * catch-up starts at as_of+1.  Resuming: the catch-up starts at the recorded
 * frontier.  Nothing more is minted until the input frontier F passes the
 * catch-up start; then the catch-up batch [start, F) and two future batches
 * [F, F+ci), [F+ci, F+2ci) are minted, so three are in flight.  Whenever the
 * oldest future batch's upper <= F it is retired and one more is minted at
 * the end of the window, so the window keeps two batches ahead of the one
 * being filled.  When the input closes, a final batch with an empty
 * upper covers the rest.  When an input ends without closing (SPEC 5.7),
 * the final batch ends at the frontier the sink chose (just past the newest
 * update): minted up to it, or, when batches reaching past it were handed
 * out already, the writer cuts them there (floe__writer_truncate).
 *
 * One refinement keeps a long idle jump cheap: when the frontier has already
 * passed end+ci, the next batch is minted as [end, F) rather than [end,
 * end+ci), so a jump of many intervals costs one batch, not one per interval.
 * Descriptions stay contiguous: every lower equals the previous upper, which
 * mint() checks.
 *
 * Per-advance mode (floe__minter_per_advance) is for callers that choose
 * the moment of each commit themselves (a wall-clock interval over an LSN
 * time line, where commit_interval time units mean nothing): no future
 * batches are minted; every advance that moves the frontier past the end of
 * what is minted mints exactly one batch [end, F).
 */
#include "sink/sink_internal.h"

#define WINDOW 2          /* future batches in flight beside the one being filled */

typedef enum phase { WAITING, STEADY, DONE } phase;

struct floe__minter {
    uint64_t as_of;
    uint64_t ci;
    phase phase;
    floe__frontier catchup_start;
    floe__frontier frontier;          /* last input frontier seen */
    bool have_last;
    floe__frontier last_upper;        /* end of everything minted */
    uint64_t next_seq;
    bool per_advance;                 /* one batch [end, F) per advance */
    floe__frontier inflight[WINDOW + 2]; /* uppers of batches not yet retired, oldest first */
    size_t n_inflight;
    floe__batch *pending;             /* minted, not yet handed out */
    size_t n_pending, cap_pending, head;
};

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static int mint(floe__minter *m, floe__frontier lower, floe__frontier upper, bool snapshot,
                floe_error *err)
{
    FLOE_RETURN_IF(m->have_last && floe__frontier_cmp(lower, m->last_upper) != 0, err,
                   FLOE_EINTERNAL, "minted batch lower does not equal the previous upper");
    FLOE_RETURN_IF(lower.empty || floe__frontier_cmp(lower, upper) >= 0, err, FLOE_EINTERNAL,
                   "minted an empty or inverted batch");
    if (m->n_pending == m->cap_pending) {
        size_t cap = m->cap_pending ? m->cap_pending * 2 : 8;
        floe__batch *p = floe__realloc(m->pending, cap * sizeof *p);
        if (!p)
            return FLOE_OOM(err);
        m->pending = p;
        m->cap_pending = cap;
    }
    floe__batch b = {lower, upper, snapshot, m->next_seq++, false, 0};
    m->pending[m->n_pending++] = b;
    m->last_upper = upper;
    m->have_last = true;
    m->inflight[m->n_inflight++] = upper;
    return FLOE_OK;
}

static void retire_oldest(floe__minter *m)
{
    memmove(m->inflight, m->inflight + 1, (m->n_inflight - 1) * sizeof m->inflight[0]);
    m->n_inflight--;
}

int floe__minter_new(uint64_t as_of, uint64_t commit_interval, bool has_resume,
                     floe__frontier resume, floe__minter **out, floe_error *err)
{
    FLOE_RETURN_IF(commit_interval == 0, err, FLOE_EINVAL, "commit interval must be positive");
    if (has_resume && !resume.empty && resume.t < as_of)
        return floe__err_set(err, FLOE_ESTATE,
                             "input compacted past resume upper: the table records frontier "
                             "[%llu] but the input starts at as-of %llu",
                             (unsigned long long)resume.t, (unsigned long long)as_of);
    floe__minter *m = floe__calloc(1, sizeof *m);
    if (!m)
        return FLOE_OOM(err);
    m->as_of = as_of;
    m->ci = commit_interval;
    m->frontier = floe__frontier_at(0);
    int rc = FLOE_OK;
    if (has_resume && resume.empty) {
        m->phase = DONE;
    } else if (has_resume) {
        m->catchup_start = resume;
        m->last_upper = resume;
        m->have_last = true;
    } else if (as_of == UINT64_MAX) {
        rc = floe__err_set(err, FLOE_EINVAL, "as-of must be below 2^64-1");
    } else {
        m->catchup_start = floe__frontier_at(as_of + 1);
        rc = mint(m, floe__frontier_at(as_of), m->catchup_start, true, err);
    }
    if (rc != FLOE_OK) {
        floe__minter_free(m);
        return rc;
    }
    *out = m;
    return FLOE_OK;
}

void floe__minter_free(floe__minter *m)
{
    if (!m)
        return;
    floe__free(m->pending);
    floe__free(m);
}

/* Retire in-flight batches the frontier has passed, minting one at the end
 * for each. */
static int steady(floe__minter *m, uint64_t f, floe_error *err)
{
    while (m->n_inflight > 0 && !m->inflight[0].empty && m->inflight[0].t <= f) {
        retire_oldest(m);
        uint64_t end = m->last_upper.t;
        if (end == UINT64_MAX)
            continue;                           /* nothing left to mint but the final */
        uint64_t upper = sat_add(end, m->ci);
        if (upper <= f && end < f)
            upper = f;                          /* a jump: one batch for the gap */
        FLOE_FORWARD(mint(m, m->last_upper, floe__frontier_at(upper), false, err));
    }
    return FLOE_OK;
}

static int close_input(floe__minter *m, floe_error *err)
{
    FLOE_FORWARD(mint(m, m->last_upper, floe__frontier_closed(), false, err));
    m->n_inflight = 0;
    m->phase = DONE;
    return FLOE_OK;
}

void floe__minter_per_advance(floe__minter *m) { m->per_advance = true; }

/* Per-advance mode after the catch-up start: one batch up to f. */
static int per_advance(floe__minter *m, uint64_t f, floe_error *err)
{
    m->n_inflight = 0;
    if (f <= m->last_upper.t)
        return FLOE_OK;
    FLOE_FORWARD(mint(m, m->last_upper, floe__frontier_at(f), false, err));
    m->n_inflight = 0;
    m->phase = STEADY;
    return FLOE_OK;
}

int floe__minter_advance(floe__minter *m, floe__frontier f, floe_error *err)
{
    FLOE_RETURN_IF(floe__frontier_cmp(f, m->frontier) < 0, err, FLOE_EINPUT,
                   "frontier moved backwards");
    m->frontier = f;
    if (m->phase == DONE)
        return FLOE_OK;
    if (f.empty)
        return close_input(m, err);
    if (m->phase == WAITING) {
        if (f.t <= m->catchup_start.t) {
            while (m->n_inflight > 0 && m->inflight[0].t <= f.t)   /* the snapshot batch */
                retire_oldest(m);
            return FLOE_OK;
        }
        if (m->per_advance)
            return per_advance(m, f.t, err);
        FLOE_FORWARD(mint(m, m->catchup_start, f, false, err));
        m->n_inflight = 0;               /* the window holds only future batches */
        uint64_t a = sat_add(f.t, m->ci), b = sat_add(a, m->ci);
        if (a > f.t)
            FLOE_FORWARD(mint(m, f, floe__frontier_at(a), false, err));
        if (b > a)
            FLOE_FORWARD(mint(m, floe__frontier_at(a), floe__frontier_at(b), false, err));
        m->phase = STEADY;
    }
    return m->per_advance ? per_advance(m, f.t, err) : steady(m, f.t, err);
}

int floe__minter_end(floe__minter *m, floe__frontier end, floe_error *err)
{
    FLOE_RETURN_IF(end.empty || floe__frontier_cmp(end, m->frontier) < 0, err, FLOE_EINTERNAL,
                   "the end of an input must be a frontier at or past the input's");
    m->frontier = end;
    if (m->phase == DONE)
        return FLOE_OK;
    phase was = m->phase;
    m->phase = DONE;
    m->n_inflight = 0;
    if (was == WAITING && end.t <= m->catchup_start.t)
        return FLOE_OK;                 /* nothing past the catch-up start */
    if (floe__frontier_cmp(m->last_upper, end) < 0)
        return mint(m, m->last_upper, end, false, err);
    return FLOE_OK;                     /* minted past it: the writer cuts there */
}

int floe__minter_next(floe__minter *m, floe__batch *out)
{
    if (m->head == m->n_pending) {
        m->head = m->n_pending = 0;
        return 0;
    }
    *out = m->pending[m->head++];
    return 1;
}

bool floe__minter_done(const floe__minter *m) { return m->phase == DONE; }

floe__frontier floe__minter_catchup_start(const floe__minter *m) { return m->catchup_start; }
