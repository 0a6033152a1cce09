/*
 * bench_keyindex.c - the key index of position mode at scale (issue P6):
 * memory per key, and peak RSS under a memory limit when it spills.
 *
 *   build/bench/bench_keyindex KEYS MEMORY_LIMIT_MIB [SPILL_DIR]
 *
 * Inserts KEYS bigint keys (the sink's row format: a tag byte and 8 bytes,
 * so 9 key bytes) at positions of 64 files, then takes 1% of them at random
 * (a retraction each) and probes 1% more (a primary-key check).  Prints one
 * JSON line: keys, the memory tier's bytes and bytes per key, the disk
 * tier's bytes, spills, the process's peak RSS (VmHWM), and the insert and
 * take rates.  Targets: at most 64 bytes + the key per key in memory (20M
 * keys, a limit above what they need); peak RSS bounded by the limit plus
 * the process's base when spilling (50M keys).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "keyindex/keyindex_internal.h"

int main(int argc, char **argv);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static long peak_rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return kib;
}

static void key_of(uint64_t k, uint8_t out[9])
{
    out[0] = 1;                       /* present */
    floe__put_le64(out + 1, k);
}

static int fail(floe_error *err)
{
    fprintf(stderr, "bench_keyindex: %s\n", floe_error_message(err));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s KEYS MEMORY_LIMIT_MIB [SPILL_DIR]\n", argv[0]);
        return 2;
    }
    uint64_t n = strtoull(argv[1], NULL, 10);
    floe__kx_options o = {.memory_limit = (size_t)strtoull(argv[2], NULL, 10) << 20,
                          .spill_dir = argc > 3 ? argv[3] : NULL};
    floe_error *err = floe_error_new();
    floe__kx *kx = NULL;
    if (floe__kx_new(&o, &kx, err) != FLOE_OK)
        return fail(err);
    uint32_t files[64];
    for (int i = 0; i < 64; i++) {
        char path[64];
        snprintf(path, sizeof path, "file:///wh/data/data-%02d.parquet", i);
        if (floe__kx_file(kx, path, &files[i], err) != FLOE_OK)
            return fail(err);
    }
    uint8_t key[9];
    double t0 = now();
    for (uint64_t k = 0; k < n; k++) {
        key_of(k, key);
        floe__kx_loc loc = {files[k % 64], k / 64, k * 0x9E3779B97F4A7C15ull};
        if (floe__kx_insert(kx, key, sizeof key, loc, err) != FLOE_OK)
            return fail(err);
    }
    double t1 = now();
    floe__kx_stats st;
    floe__kx_get_stats(kx, &st);
    uint64_t mem_bytes = st.memory_bytes;
    uint64_t probes = n / 100, found_n = 0;
    for (uint64_t i = 0; i < probes; i++) {
        uint64_t k = i * 100 + (i * 37) % 100;          /* distinct keys, spread out */
        key_of(k, key);
        bool found = false;
        floe__kx_loc loc;
        if (floe__kx_take(kx, key, sizeof key, 0, &found, &loc, err) != FLOE_OK)
            return fail(err);
        found_n += found;
        bool live;
        key_of((k + n / 2) % n, key);
        if (floe__kx_has(kx, key, sizeof key, &live, err) != FLOE_OK)
            return fail(err);
    }
    double t2 = now();
    floe__kx_get_stats(kx, &st);
    printf("{\"keys\": %llu, \"memory_limit_mib\": %s, \"memory_bytes\": %llu, "
           "\"memory_bytes_per_key\": %.1f, \"key_bytes\": 9, \"disk_bytes\": %llu, "
           "\"spills\": %llu, \"peak_rss_mib\": %.1f, \"inserts_per_s\": %.0f, "
           "\"takes_and_probes_per_s\": %.0f, \"taken\": %llu}\n",
           (unsigned long long)n, argv[2], (unsigned long long)mem_bytes,
           st.disk_entries ? (double)mem_bytes / (double)(n - st.disk_entries)
                           : (double)mem_bytes / (double)n,
           (unsigned long long)st.disk_bytes, (unsigned long long)st.spills,
           (double)peak_rss_kib() / 1024.0, (double)n / (t1 - t0),
           (double)(2 * probes) / (t2 - t1), (unsigned long long)found_n);
    floe__kx_free(kx);
    floe_error_free(err);
    return found_n == probes ? 0 : 1;
}
