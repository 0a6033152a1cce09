/*
 * uuid.c - random (v4) uuids and their canonical text form.
 */
#include <errno.h>
#include <sys/random.h>

#include "util/util_internal.h"

int floe__uuid_random(uint8_t out[16], floe_error *err)
{
    size_t got = 0;
    while (got < 16) {
        ssize_t n = getrandom(out + got, 16 - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return floe__err_set(err, FLOE_EIO, "getrandom: %s", strerror(errno));
        }
        got += (size_t)n;
    }
    out[6] = (uint8_t)((out[6] & 0x0F) | 0x40);
    out[8] = (uint8_t)((out[8] & 0x3F) | 0x80);
    return FLOE_OK;
}

void floe__uuid_format(const uint8_t u[16], char out[37])
{
    static const char hex[] = "0123456789abcdef";
    char *p = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *p++ = '-';
        *p++ = hex[u[i] >> 4];
        *p++ = hex[u[i] & 15];
    }
    *p = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int floe__uuid_parse(const char *s, size_t n, uint8_t out[16])
{
    if (n != 36)
        return -1;
    size_t j = 0;
    for (size_t i = 0; i < 36;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return -1;
            i++;
            continue;
        }
        int hi = hexval(s[i]), lo = hexval(s[i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[j++] = (uint8_t)(hi << 4 | lo);
        i += 2;
    }
    return 0;
}
