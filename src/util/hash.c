/*
 * hash.c - a fast 64-bit hash for byte strings (keys, rows): FNV-1a over
 * 8-byte words with a mixing step, then a 64-bit finalizer, so both the low
 * bits (table slots) and the high bits (filters) are well spread.  Not for
 * adversarial input or cryptography.
 */
#include "util/util_internal.h"

uint64_t floe__hash64(const void *data, size_t n, uint64_t seed)
{
    const uint8_t *p = data;
    uint64_t h = 1469598103934665603ull ^ seed;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}
