/* test_mint.c - frontiers and the minter (SPEC.md section 5). */
#include "sink/sink_internal.h"
#include "unit.h"

#define MAXB 64

typedef struct seen {
    floe__batch b[MAXB];
    size_t n;
} seen;

static void drain(floe__minter *m, seen *s)
{
    floe__batch b;
    while (floe__minter_next(m, &b) && s->n < MAXB)
        s->b[s->n++] = b;
}

static bool is(const floe__batch *b, uint64_t lo, int64_t hi /* -1 = empty */)
{
    if (b->lower.empty || b->lower.t != lo)
        return false;
    return hi < 0 ? b->upper.empty : (!b->upper.empty && b->upper.t == (uint64_t)hi);
}

static void check_contiguous(const seen *s)
{
    for (size_t i = 1; i < s->n; i++)
        CHECK(floe__frontier_cmp(s->b[i].lower, s->b[i - 1].upper) == 0);
}

TEST(frontier_text)
{
    char buf[32];
    floe__frontier f;
    floe__frontier_format(floe__frontier_at(18446744073709551615ull), buf, sizeof buf);
    CHECK_EQ_STR(buf, "[18446744073709551615]");
    floe__frontier_format(floe__frontier_closed(), buf, sizeof buf);
    CHECK_EQ_STR(buf, "[]");
    CHECK_EQ_INT(floe__frontier_parse(" [ 42 ] ", &f, NULL), FLOE_OK);
    CHECK(!f.empty && f.t == 42);
    CHECK_EQ_INT(floe__frontier_parse("[]", &f, NULL), FLOE_OK);
    CHECK(f.empty);
    const char *bad[] = {"", "[", "42", "[1,2]", "[-1]", "[18446744073709551616]", "[01]", "[]x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_EQ_INT(floe__frontier_parse(bad[i], &f, NULL), FLOE_EFORMAT);
    CHECK(floe__frontier_cmp(floe__frontier_closed(), floe__frontier_at(UINT64_MAX)) > 0);
    CHECK(floe__frontier_passed(floe__frontier_at(5), 4));
    CHECK(!floe__frontier_passed(floe__frontier_at(5), 5));
}

TEST(fresh_start_mints_snapshot_batch_at_once)
{
    floe__minter *m = NULL;
    seen s = {0};
    CHECK_EQ_INT(floe__minter_new(100, 10, false, floe__frontier_at(0), &m, NULL), FLOE_OK);
    drain(m, &s);
    CHECK_EQ_INT(s.n, 1);
    CHECK(is(&s.b[0], 100, 101) && s.b[0].snapshot);
    /* No empty commits while waiting: frontier not past the catch-up start. */
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(100), NULL), FLOE_OK);
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(101), NULL), FLOE_OK);
    drain(m, &s);
    CHECK_EQ_INT(s.n, 1);
    /* The frontier passes the start: catch-up [101, 150) and two future batches. */
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(150), NULL), FLOE_OK);
    drain(m, &s);
    CHECK_EQ_INT(s.n, 4);
    CHECK(is(&s.b[1], 101, 150) && !s.b[1].snapshot);
    CHECK(is(&s.b[2], 150, 160) && is(&s.b[3], 160, 170));
    /* Steady: each retired batch mints one more at the end. */
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(165), NULL), FLOE_OK);
    drain(m, &s);
    CHECK_EQ_INT(s.n, 5);
    CHECK(is(&s.b[4], 170, 180));
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(170), NULL), FLOE_OK);
    drain(m, &s);
    CHECK_EQ_INT(s.n, 6);
    CHECK(is(&s.b[5], 180, 190));
    /* The input closes: a final batch with an empty upper. */
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_closed(), NULL), FLOE_OK);
    drain(m, &s);
    CHECK_EQ_INT(s.n, 7);
    CHECK(is(&s.b[6], 190, -1));
    CHECK(floe__minter_done(m));
    check_contiguous(&s);
    for (size_t i = 0; i < s.n; i++)
        CHECK_EQ_INT(s.b[i].seq, i);
    floe__minter_free(m);
}

TEST(resume_from_recorded_frontier)
{
    floe__minter *m = NULL;
    seen s = {0};
    CHECK_EQ_INT(floe__minter_new(0, 5, true, floe__frontier_at(40), &m, NULL), FLOE_OK);
    drain(m, &s);
    CHECK_EQ_INT(s.n, 0);                      /* no snapshot batch when resuming */
    CHECK(floe__minter_catchup_start(m).t == 40);
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(40), NULL), FLOE_OK);
    drain(m, &s);
    CHECK_EQ_INT(s.n, 0);
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(41), NULL), FLOE_OK);
    drain(m, &s);
    CHECK_EQ_INT(s.n, 3);
    CHECK(is(&s.b[0], 40, 41) && is(&s.b[1], 41, 46) && is(&s.b[2], 46, 51));
    floe__minter_free(m);
}

TEST(table_already_complete)
{
    floe__minter *m = NULL;
    seen s = {0};
    CHECK_EQ_INT(floe__minter_new(0, 5, true, floe__frontier_closed(), &m, NULL), FLOE_OK);
    CHECK(floe__minter_done(m));
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(10), NULL), FLOE_OK);
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_closed(), NULL), FLOE_OK);
    drain(m, &s);
    CHECK_EQ_INT(s.n, 0);
    floe__minter_free(m);
}

TEST(input_closes_before_initialization)
{
    floe__minter *m = NULL;
    seen s = {0};
    CHECK_EQ_INT(floe__minter_new(7, 5, false, floe__frontier_at(0), &m, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_closed(), NULL), FLOE_OK);
    drain(m, &s);
    CHECK_EQ_INT(s.n, 2);
    CHECK(is(&s.b[0], 7, 8) && s.b[0].snapshot && is(&s.b[1], 8, -1));
    CHECK(floe__minter_done(m));
    floe__minter_free(m);

    s.n = 0;                                   /* resuming, closed before passing */
    CHECK_EQ_INT(floe__minter_new(0, 5, true, floe__frontier_at(30), &m, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(30), NULL), FLOE_OK);
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_closed(), NULL), FLOE_OK);
    drain(m, &s);
    CHECK_EQ_INT(s.n, 1);
    CHECK(is(&s.b[0], 30, -1));
    floe__minter_free(m);
}

TEST(compacted_input_is_an_error)
{
    floe__minter *m = NULL;
    floe_error *e = floe_error_new();
    CHECK_EQ_INT(floe__minter_new(50, 5, true, floe__frontier_at(40), &m, e), FLOE_ESTATE);
    CHECK(strstr(floe_error_message(e), "compacted past resume upper") != NULL);
    CHECK(m == NULL);
    CHECK_EQ_INT(floe__minter_new(40, 5, true, floe__frontier_at(40), &m, e), FLOE_OK);
    floe__minter_free(m);
    floe_error_free(e);
}

TEST(frontier_jump_costs_a_bounded_number_of_batches)
{
    floe__minter *m = NULL;
    seen s = {0};
    CHECK_EQ_INT(floe__minter_new(0, 10, true, floe__frontier_at(0), &m, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(5), NULL), FLOE_OK);
    drain(m, &s);
    CHECK_EQ_INT(s.n, 3);                       /* [0,5) [5,15) [15,25) */
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(1000000), NULL), FLOE_OK);
    drain(m, &s);
    CHECK(s.n <= 7);
    check_contiguous(&s);
    /* Everything below the frontier is covered and two batches lie ahead. */
    CHECK(!s.b[s.n - 1].upper.empty && s.b[s.n - 1].upper.t == 1000020);
    CHECK(s.b[s.n - 2].upper.t == 1000010);
    floe__minter_free(m);
}

TEST(backwards_frontier_is_rejected)
{
    floe__minter *m = NULL;
    CHECK_EQ_INT(floe__minter_new(0, 10, false, floe__frontier_at(0), &m, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(20), NULL), FLOE_OK);
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(19), NULL), FLOE_EINPUT);
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_closed(), NULL), FLOE_OK);
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(30), NULL), FLOE_EINPUT);
    floe__minter_free(m);
}

TEST(random_walks_stay_contiguous)
{
    uint64_t x = 88172645463325252ull;
    for (int round = 0; round < 200; round++) {
        floe__minter *m = NULL;
        seen s = {0};
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        uint64_t ci = 1 + x % 20, as_of = x % 50;
        CHECK_EQ_INT(floe__minter_new(as_of, ci, false, floe__frontier_at(0), &m, NULL), FLOE_OK);
        uint64_t f = 0;
        for (int step = 0; step < 10; step++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            f += x % (step % 3 == 0 ? 200 : 15);
            CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(f), NULL), FLOE_OK);
            s.n = s.n > MAXB - 10 ? 0 : s.n;
            drain(m, &s);
        }
        CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_closed(), NULL), FLOE_OK);
        drain(m, &s);
        check_contiguous(&s);
        CHECK(s.n > 0 && s.b[s.n - 1].upper.empty);
        floe__minter_free(m);
    }
}

/* Per-advance mode: each advance past the end mints one batch up to it,
 * with no future batches in flight. */
TEST(per_advance_mode_mints_one_batch_per_advance)
{
    floe__minter *m = NULL;
    seen s = {0};
    CHECK_EQ_INT(floe__minter_new(99, 1, false, floe__frontier_at(0), &m, NULL), FLOE_OK);
    floe__minter_per_advance(m);
    drain(m, &s);
    CHECK(s.n == 1 && is(&s.b[0], 99, 100) && s.b[0].snapshot);
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(100), NULL), FLOE_OK);
    drain(m, &s);
    CHECK_EQ_INT(s.n, 1);                                  /* nothing past the catch-up start */
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(5000), NULL), FLOE_OK);
    drain(m, &s);
    CHECK(s.n == 2 && is(&s.b[1], 100, 5000));
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(5000), NULL), FLOE_OK);
    drain(m, &s);
    CHECK_EQ_INT(s.n, 2);                                  /* no empty batch */
    for (uint64_t f = 6000; f <= 20000; f += 1000)
        CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(f), NULL), FLOE_OK);
    drain(m, &s);
    CHECK_EQ_INT(s.n, 17);
    CHECK(is(&s.b[16], 19000, 20000));
    CHECK_EQ_INT(floe__minter_end(m, floe__frontier_at(20500), NULL), FLOE_OK);
    drain(m, &s);
    CHECK(s.n == 18 && is(&s.b[17], 20000, 20500));
    check_contiguous(&s);
    floe__minter_free(m);
    s.n = 0;                                               /* resuming, then closing */
    CHECK_EQ_INT(floe__minter_new(0, 1, true, floe__frontier_at(40), &m, NULL), FLOE_OK);
    floe__minter_per_advance(m);
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(30), NULL), FLOE_OK);
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_at(41), NULL), FLOE_OK);
    CHECK_EQ_INT(floe__minter_advance(m, floe__frontier_closed(), NULL), FLOE_OK);
    drain(m, &s);
    CHECK(s.n == 2 && is(&s.b[0], 40, 41) && is(&s.b[1], 41, -1));
    CHECK(floe__minter_done(m));
    floe__minter_free(m);
}

int main(void)
{
    RUN(per_advance_mode_mints_one_batch_per_advance);
    RUN(frontier_text);
    RUN(fresh_start_mints_snapshot_batch_at_once);
    RUN(resume_from_recorded_frontier);
    RUN(table_already_complete);
    RUN(input_closes_before_initialization);
    RUN(compacted_input_is_an_error);
    RUN(frontier_jump_costs_a_bounded_number_of_batches);
    RUN(backwards_frontier_is_rejected);
    RUN(random_walks_stay_contiguous);
    return UNIT_DONE();
}
