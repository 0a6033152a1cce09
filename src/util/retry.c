/*
 * retry.c - the one policy of floe's retry loops (commits, compaction, the
 * REST catalog, S3, the Postgres reconnect): whether a failure is tried
 * again is read from its code's class (floe_code_class, the single table in
 * floe.h), and the waits grow exponentially with jitter, so that writers
 * and clients failing together do not come back together.
 */
#include <time.h>

#include "util/util_internal.h"

void floe__retry_init(floe__retry *r, unsigned first_ms, unsigned max_ms)
{
    memset(r, 0, sizeof *r);
    r->first_ms = first_ms ? first_ms : 1;
    r->max_ms = max_ms > r->first_ms ? max_ms : r->first_ms;
    r->rng = floe__monotonic_ns() ^ ((uint64_t)(uintptr_t)r << 16) ^ 0x9E3779B97F4A7C15ull;
    if (!r->rng)
        r->rng = 1;
}

unsigned floe__retry_delay(floe__retry *r)
{
    if (!r->failures++)
        r->since_ns = floe__monotonic_ns();
    uint64_t d = r->first_ms;
    for (int i = 1; i < r->failures && d < r->max_ms; i++)
        d *= 2;
    if (d > r->max_ms)
        d = r->max_ms;
    uint64_t x = r->rng;                          /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    r->rng = x;
    return (unsigned)(d / 2 + x % (d / 2 + 1));
}

void floe__retry_sleep_ms(unsigned ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

bool floe__retry_again(floe__retry *r, int rc)
{
    int cls = floe_code_class(rc);
    if (rc == FLOE_OK || !(cls == FLOE_FAIL_RETRY || (r->unknown_too && cls == FLOE_FAIL_UNKNOWN)))
        return false;
    if (r->max_attempts && r->failures + 1 >= r->max_attempts)
        return false;
    if (r->max_ns && r->failures && floe__monotonic_ns() - r->since_ns >= r->max_ns)
        return false;
    floe__retry_sleep_ms(floe__retry_delay(r));
    return true;
}

double floe__retry_seconds(const floe__retry *r)
{
    return r->failures ? (double)(floe__monotonic_ns() - r->since_ns) / 1e9 : 0.0;
}
