/*
 * without_pg.c - the Postgres source in a library built without it (make
 * WITH_PG=0: no libpq linked).  Every other function of floe.h's Postgres
 * part is here, so the library exports the same symbols whatever the build
 * (docs/api.md); each refuses with FLOE_EUNSUPPORTED, saying why.  It takes
 * the place of the mirror*.c files and source/pg_conn.c (Makefile).
 */
#include "util/util_internal.h"

#define WITHOUT "this libfloe was built without the Postgres source (make WITH_PG=0)"

static int refuse(floe_error *err) { return floe__err_set(err, FLOE_EUNSUPPORTED, WITHOUT); }

int floe_pg_open(const floe_pg_options *opts, floe_pg **out, floe_error *err)
{
    (void)opts;
    if (out)
        *out = NULL;
    return refuse(err);
}

/* No floe_pg is ever made: these are never reached with one. */
int floe_pg_run(floe_pg *pg, floe_error *err)
{
    (void)pg;
    return refuse(err);
}

void floe_pg_stop(floe_pg *pg) { (void)pg; }

void floe_pg_free(floe_pg *pg) { (void)pg; }

int floe_pg_drop_tables(const floe_pg_options *opts, const char *tables, int purge,
                        floe_error *err)
{
    (void)opts, (void)tables, (void)purge;
    return refuse(err);
}

int floe_pg_retire(floe_pg *pg, floe_error *err)
{
    (void)pg;
    return refuse(err);
}

int floe_pg_verify(floe_pg *pg, void (*on_table)(void *ctx, const floe_pg_verify_table *t),
                   void *ctx, uint64_t *at, uint64_t *differences, floe_error *err)
{
    (void)pg, (void)on_table, (void)ctx, (void)at, (void)differences;
    return refuse(err);
}

size_t floe_pg_table_count(const floe_pg *pg)
{
    (void)pg;
    return 0;
}

int floe_pg_table_info_get(const floe_pg *pg, size_t i, floe_pg_table_info *out, size_t size,
                           floe_error *err)
{
    (void)pg, (void)i, (void)out, (void)size;
    return refuse(err);
}

const char *floe_pg_slot_name(const floe_pg *pg)
{
    (void)pg;
    return "";
}

const char *floe_pg_publication_name(const floe_pg *pg)
{
    (void)pg;
    return "";
}

void floe_pg_stats_get(const floe_pg *pg, floe_pg_stats *out, size_t size)
{
    (void)pg;
    floe_pg_stats none = {.size = sizeof none};
    floe__abi_out(out, size, &none, sizeof none);
}

int floe_pg_metrics(const floe_pg *pg, char **out, floe_error *err)
{
    (void)pg, (void)out;
    return refuse(err);
}

int floe_pg_slot_info_get(const char *source, const char *slot, floe_pg_slot_info *out,
                          size_t size, floe_error *err)
{
    (void)source, (void)slot, (void)out, (void)size;
    return refuse(err);
}
