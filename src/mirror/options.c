/*
 * options.c - the Postgres source's functions that need no server (its
 * options' defaults, LSNs as text): in every build, WITH_PG=0 too.
 */
#include "source/pg_internal.h"

void floe_pg_options_init(floe_pg_options *o, size_t size)
{
    floe_pg_options d = {.size = sizeof d, .commit_interval_ms = 10000,
                         .idle_commit_interval_ms = 60000, .stop_fd = -1,
                         .reconnect_timeout_ms = 300000, .txn_streaming = 1};
    floe__abi_init(o, size, &d, sizeof d);
}

void floe_pg_lsn_format(uint64_t lsn, char *out, size_t n) { floe__lsn_format(lsn, out, n); }

int floe_pg_lsn_parse(const char *text, uint64_t *out) { return floe__lsn_parse(text, out); }
