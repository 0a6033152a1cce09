/*
 * bench_keymem.c - memory per key held in the upsert key memory.
 *
 *   bench_keymem [KEYS] [KEY_BYTES]      (default 10000000 keys of 9 bytes,
 *                                         a present bigint slot)
 *
 * Puts KEYS distinct keys, as one batch of upserts would, and reports the
 * key memory's peak bytes per key, the overhead beyond the key's own bytes,
 * and the rate.  Target (issue P3): 64 bytes plus the key's bytes, or less.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sink/sink_internal.h"

int main(int argc, char **argv);

int main(int argc, char **argv)
{
    size_t keys = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
    size_t klen = argc > 2 ? strtoull(argv[2], NULL, 10) : 9;
    if (klen < 9 || klen > 4096) {
        fprintf(stderr, "KEY_BYTES must be 9..4096\n");
        return 2;
    }
    floe__keymem *km = NULL;
    if (floe__keymem_new(&km, NULL) != FLOE_OK)
        return 1;
    uint8_t *key = calloc(1, klen);
    size_t peak = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t i = 0; i < keys; i++) {
        key[0] = FLOE_SLOT_PRESENT;                      /* a bigint key slot */
        uint64_t k = i * 0x9E3779B97F4A7C15ull;
        memcpy(key + 1, &k, 8);
        floe__keypos at = {(uint32_t)(i >> 20), i};
        if (floe__keymem_put(km, key, klen, at, NULL) != FLOE_OK)
            return 1;
        size_t b = floe__keymem_bytes(km);
        if (b > peak)
            peak = b;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    double per_key = (double)peak / (double)keys;
    printf("keymem: %zu keys of %zu bytes: peak %.1f MiB, %.1f bytes per key, %.1f beyond the "
           "key itself (target <= 64), %.2f M puts/s\n", keys, klen, (double)peak / 1048576.0,
           per_key, per_key - (double)klen, (double)keys / secs / 1e6);
    floe__keymem_free(km);
    free(key);
    return 0;
}
