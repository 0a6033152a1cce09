/*
 * pg_lsn.c - Postgres LSNs as text and the replication protocol's clock.
 *
 * An LSN is a 64-bit WAL position that Postgres prints as two hex numbers,
 * the upper and the lower 32 bits: "16/B374D848".  The replication
 * protocol's timestamps count microseconds from 2000-01-01 00:00:00 UTC.
 */
#include <stdio.h>
#include <time.h>

#include "source/pg_internal.h"

void floe__lsn_format(uint64_t lsn, char *out, size_t n)
{
    snprintf(out, n, "%X/%X", (unsigned)(lsn >> 32), (unsigned)(lsn & 0xffffffffu));
}

/* Up to 8 hex digits into *v; the pointer after them, NULL when none. */
static const char *hex32(const char *s, uint32_t *v)
{
    uint32_t x = 0;
    int k = 0;
    for (; k < 8; k++, s++) {
        char c = *s;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            break;
        x = x << 4 | (uint32_t)d;
    }
    *v = x;
    return k ? s : NULL;
}

int floe__lsn_parse(const char *s, uint64_t *out)
{
    uint32_t hi, lo;
    if (!s || !(s = hex32(s, &hi)) || *s != '/' || !(s = hex32(s + 1, &lo)) || *s)
        return -1;
    *out = (uint64_t)hi << 32 | lo;
    return 0;
}

int64_t floe__pg_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 - FLOE__PG_EPOCH_UNIX_US;
}
