/*
 * test_mirror_plan.c - how the initial copy splits a table into heap page
 * ranges (floe__mirror_range_pages, src/mirror/mirror_copy.c): small tables
 * in ranges of at least 8192 pages, a table whose Parquet would not fill a
 * data file per range in one range per worker, a large one in about four
 * per worker; the ranges always cover the table.
 */
#include <stdio.h>

#include "mirror/mirror_internal.h"
#include "unit.h"

#define MIB ((uint64_t)1 << 20)

/* How many ranges pages / size + 1 makes (the plan's count). */
static uint64_t ranges(uint64_t pages, int workers, uint64_t target)
{
    uint64_t size = floe__mirror_range_pages(pages, workers, target);
    CHECK(size > 0);
    uint64_t n = pages / size + 1;
    CHECK(n * size > pages);                     /* the last range reaches the end */
    return n;
}

TEST(a_mid_size_table_gets_one_range_per_worker)
{
    /* 10M narrow rows: 93,458 pages (730 MiB of heap, 53 MB of Parquet) */
    CHECK_EQ_INT(ranges(93458, 2, 512 * MIB), 2);
    CHECK_EQ_INT(ranges(93458, 4, 512 * MIB), 4);
    CHECK_EQ_INT(ranges(121324, 2, 512 * MIB), 2);
}

TEST(a_large_table_gets_about_four_ranges_per_worker)
{
    /* 36 GiB of heap: each of 8 ranges fills more than a 512 MiB file */
    CHECK_EQ_INT(ranges(4718592, 2, 512 * MIB), 8);
    /* a smaller target file fills sooner: the same table, more ranges */
    CHECK_EQ_INT(ranges(4718592, 2, 64 * MIB), 8);
    CHECK_EQ_INT(ranges(1048576, 2, 64 * MIB), 8);
    /* 8 GiB: 2 GiB ranges fill a 512 MiB file each; 4 of them, then the
     * open-ended last range (pages added since the size was read) */
    CHECK_EQ_INT(ranges(1048576, 2, 512 * MIB), 5);
}

TEST(a_small_table_keeps_ranges_of_8192_pages)
{
    CHECK_EQ_INT(floe__mirror_range_pages(100, 2, 512 * MIB), 8192);
    CHECK_EQ_INT(ranges(100, 2, 512 * MIB), 1);
    CHECK_EQ_INT(ranges(10000, 8, 512 * MIB), 2);
}

int main(void)
{
    RUN(a_mid_size_table_gets_one_range_per_worker);
    RUN(a_large_table_gets_about_four_ranges_per_worker);
    RUN(a_small_table_keeps_ranges_of_8192_pages);
    return UNIT_DONE();
}
