/*
 * value_text.c - text -> value parsers for scalar types: exact decimals,
 * correctly rounded floats, dates, times and timestamps.
 *
 * These see only a span of text (a JSON number token or a string's
 * contents); the JSON structure around them is the caller's business (json_row.c for
 * input rows, type.c for Iceberg's default values).
 *
 * Floats: a number with at most 19 significant digits whose mantissa is
 * below 2^53 and whose decimal exponent is within +-22 is converted with one
 * exactly rounded multiplication or division (both operands are exact
 * doubles; Clinger's fast path).  Everything else goes to strtod/strtof on
 * a NUL-terminated copy.  floe assumes the "C" numeric locale (the library
 * never calls setlocale; a program that does must keep LC_NUMERIC "C").
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "schema/schema_internal.h"

static inline bool is_digit(char c) { return (unsigned)(c - '0') <= 9; }

/* ---- decimals ------------------------------------------------------------ */

/* The i-th digit of the concatenation a[0..na) b[0..nb). */
static inline int digit_at(const char *a, size_t na, const char *b, size_t i)
{
    return (i < na ? a[i] : b[i - na]) - '0';
}

static floe__i128 pow10_i128(int n)
{
    floe__i128 v = 1;
    while (n-- > 0)
        v *= 10;
    return v;
}

const char *floe__parse_decimal(const char *s, size_t n, int precision, int scale,
                                floe__i128 *out, bool *inexact)
{
    const char *p = s, *end = s + n;
    bool neg = false;
    if (p < end && (*p == '+' || *p == '-'))
        neg = *p++ == '-';
    const char *ip = p;
    while (p < end && is_digit(*p))
        p++;
    size_t ni = (size_t)(p - ip), nf = 0;
    const char *fp = p;
    if (p < end && *p == '.') {
        fp = ++p;
        while (p < end && is_digit(*p))
            p++;
        nf = (size_t)(p - fp);
    }
    if (ni + nf == 0)
        return "not a number";
    int64_t exp = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        bool eneg = false;
        if (p < end && (*p == '+' || *p == '-'))
            eneg = *p++ == '-';
        const char *ep = p;
        for (; p < end && is_digit(*p); p++)
            if (exp < 1000000000000000LL)          /* saturate: far beyond any scale */
                exp = exp * 10 + (*p - '0');
        if (p == ep)
            return "not a number (no digits in the exponent)";
        if (eneg)
            exp = -exp;
    }
    if (p != end)
        return "not a number";
    /* value = D * 10^(exp - nf) where D is the digit string; the unscaled
     * result is D * 10^k with k = exp - nf + scale. */
    size_t total = ni + nf, z = 0;
    while (z < total && digit_at(ip, ni, fp, z) == 0)
        z++;
    *inexact = false;
    if (z == total) {
        *out = 0;
        return NULL;
    }
    int64_t nsig = (int64_t)(total - z);
    int64_t k = exp - (int64_t)nf + scale;
    int64_t keep = nsig + k;            /* digits of the unscaled result */
    if (keep > precision)
        return "overflow";
    floe__i128 v = 0;
    if (k >= 0) {
        for (size_t i = z; i < total; i++)
            v = v * 10 + digit_at(ip, ni, fp, i);
        v *= pow10_i128((int)k);
    } else if (keep >= 0) {
        for (int64_t i = 0; i < keep; i++)
            v = v * 10 + digit_at(ip, ni, fp, z + (size_t)i);
        size_t first = z + (size_t)keep;    /* the first dropped digit */
        for (size_t i = first; i < total && !*inexact; i++)
            *inexact = digit_at(ip, ni, fp, i) != 0;
        if (digit_at(ip, ni, fp, first) >= 5)
            v += 1;                         /* half away from zero */
        if (v >= pow10_i128(precision))
            return "overflow";
    } else {
        *inexact = true;                    /* below half a unit: rounds to 0 */
    }
    *out = neg ? -v : v;
    return NULL;
}

/* ---- floats -------------------------------------------------------------- */

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Clinger's fast path; false when it does not apply. */
static bool fast_double(const char *p, const char *end, double *out)
{
    bool neg = p < end && *p == '-';
    p += neg;
    uint64_t m = 0;
    int nd = 0;
    int64_t e10 = 0;
    for (; p < end && is_digit(*p); p++) {
        if (m == 0 && *p == '0')
            continue;
        if (++nd > 19)
            return false;
        m = m * 10 + (uint64_t)(*p - '0');
    }
    if (p < end && *p == '.') {
        for (p++; p < end && is_digit(*p); p++) {
            e10--;
            if (m == 0 && *p == '0')
                continue;
            if (++nd > 19)
                return false;
            m = m * 10 + (uint64_t)(*p - '0');
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        bool eneg = p < end && *p == '-';
        p += (p < end && (*p == '-' || *p == '+'));
        int64_t e = 0;
        for (; p < end && is_digit(*p); p++)
            if (e < 100000)
                e = e * 10 + (*p - '0');
        e10 += eneg ? -e : e;
    }
    if (p != end)
        return false;
    double v;
    if (m == 0)
        v = 0.0;
    else if (m <= (1ull << 53) && e10 >= -22 && e10 <= 22)
        v = e10 < 0 ? (double)m / POW10[-e10] : (double)m * POW10[e10];
    else
        return false;
    *out = neg ? -v : v;
    return true;
}

/* A NUL-terminated copy of [s, s+n) in buf (or on the heap when longer). */
static char *terminated(const char *s, size_t n, char *buf, size_t cap)
{
    char *c = n < cap ? buf : floe__malloc(n + 1);
    if (c) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

const char *floe__parse_double(const char *s, size_t n, double *out)
{
    if (fast_double(s, s + n, out))
        return NULL;
    char buf[128];
    char *c = terminated(s, n, buf, sizeof buf);
    if (!c)
        return "out of memory";
    char *e;
    errno = 0;
    double v = strtod(c, &e);
    bool whole = e == c + n, over = errno == ERANGE && isinf(v);
    if (c != buf)
        floe__free(c);
    if (!whole)
        return "not a number";
    if (over)
        return "out of range for double precision";
    *out = v;
    return NULL;
}

const char *floe__parse_float(const char *s, size_t n, float *out)
{
    char buf[128];
    char *c = terminated(s, n, buf, sizeof buf);
    if (!c)
        return "out of memory";
    char *e;
    errno = 0;
    float v = strtof(c, &e);
    bool whole = e == c + n, over = errno == ERANGE && isinf(v);
    if (c != buf)
        floe__free(c);
    if (!whole)
        return "not a number";
    if (over)
        return "out of range for real";
    *out = v;
    return NULL;
}

static bool ieq(const char *s, size_t n, const char *lit)
{
    size_t m = strlen(lit);
    if (n != m)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != lit[i])
            return false;
    }
    return true;
}

bool floe__parse_float_special(const char *s, size_t n, double *out)
{
    if (ieq(s, n, "nan")) {
        *out = NAN;
        return true;
    }
    bool neg = n > 0 && s[0] == '-';
    if (n > 0 && (s[0] == '-' || s[0] == '+'))
        s++, n--;
    if (ieq(s, n, "infinity") || ieq(s, n, "inf")) {
        *out = neg ? -INFINITY : INFINITY;
        return true;
    }
    return false;
}

/* ---- dates and times ----------------------------------------------------- */

/* k decimal digits at s as a number, or -1. */
static int num(const char *s, int k)
{
    int v = 0;
    for (int i = 0; i < k; i++) {
        if (!is_digit(s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

static bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static int days_in_month(int y, int m)
{
    static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap(y) ? 29 : dim[m - 1];
}

/* The date in the first 10 bytes of s (n >= 10 checked by the caller). */
static const char *date10(const char *s, int64_t *days)
{
    int y = num(s, 4), m = num(s + 5, 2), d = num(s + 8, 2);
    if (y < 0 || m < 0 || d < 0 || s[4] != '-' || s[7] != '-')
        return "invalid date (expected YYYY-MM-DD)";
    if (y == 0)
        return "date out of range (years 0001..9999)";
    if (m < 1 || m > 12)
        return "invalid date (month out of range)";
    if (d < 1 || d > days_in_month(y, m))
        return "invalid date (no such day in that month)";
    *days = floe__days_from_civil(y, (unsigned)m, (unsigned)d);
    return NULL;
}

const char *floe__parse_date(const char *s, size_t n, int32_t *days)
{
    if (n != 10)
        return "invalid date (expected YYYY-MM-DD)";
    int64_t d;
    const char *why = date10(s, &d);
    if (!why)
        *days = (int32_t)d;
    return why;
}

/* "HH:MM:SS[.f]" at the start of s; *used receives the length consumed. */
static const char *time_prefix(const char *s, size_t n, int64_t *us, size_t *used)
{
    if (n < 8 || s[2] != ':' || s[5] != ':')
        return "invalid time (expected HH:MM:SS[.ffffff])";
    int h = num(s, 2), mi = num(s + 3, 2), se = num(s + 6, 2);
    if (h < 0 || mi < 0 || se < 0)
        return "invalid time (expected HH:MM:SS[.ffffff])";
    if (h > 23 || mi > 59 || se > 59)
        return "invalid time (hour, minute or second out of range)";
    int64_t frac = 0;
    size_t i = 8;
    if (i < n && s[i] == '.') {
        size_t start = ++i;
        while (i < n && is_digit(s[i]) && i - start < 7)
            frac = frac * 10 + (s[i++] - '0');
        size_t k = i - start;
        if (k == 0 || k > 6)
            return "invalid time (1 to 6 fraction digits)";
        for (; k < 6; k++)
            frac *= 10;
    }
    *us = ((int64_t)h * 3600 + mi * 60 + se) * 1000000 + frac;
    *used = i;
    return NULL;
}

const char *floe__parse_time(const char *s, size_t n, int64_t *us)
{
    size_t used;
    const char *why = time_prefix(s, n, us, &used);
    if (!why && used != n)
        return "invalid time (unexpected text after HH:MM:SS[.ffffff])";
    return why;
}

/* A zone "Z", "+HH", "+HHMM", "+HH:MM" (or '-') -> offset in seconds. */
static const char *zone(const char *s, size_t n, int64_t *offset)
{
    if (n == 1 && (s[0] == 'Z' || s[0] == 'z')) {
        *offset = 0;
        return NULL;
    }
    if (n < 3 || (s[0] != '+' && s[0] != '-'))
        return "invalid time zone (expected Z or +HH:MM)";
    int h = num(s + 1, 2), m = 0;
    if (n == 6 && s[3] == ':')
        m = num(s + 4, 2);
    else if (n == 5)
        m = num(s + 3, 2);
    else if (n != 3)
        return "invalid time zone (expected Z or +HH:MM)";
    if (h < 0 || m < 0)
        return "invalid time zone (expected Z or +HH:MM)";
    if (h > 18 || m > 59)
        return "time zone offset out of range";
    *offset = (s[0] == '-' ? -1 : 1) * ((int64_t)h * 3600 + m * 60);
    return NULL;
}

const char *floe__parse_timestamp(const char *s, size_t n, bool with_zone, int64_t *us)
{
    if (n < 19 || (s[10] != ' ' && s[10] != 'T' && s[10] != 't'))
        return "invalid timestamp (expected YYYY-MM-DD HH:MM:SS[.ffffff])";
    int64_t days, tod, offset = 0;
    size_t used;
    const char *why = date10(s, &days);
    if (!why)
        why = time_prefix(s + 11, n - 11, &tod, &used);
    if (why)
        return why;
    size_t rest = n - 11 - used;
    if (!with_zone && rest)
        return "a timestamp without time zone cannot have a zone or trailing text (declare "
               "the column timestamptz)";
    if (with_zone && !rest)
        return "a timestamptz needs a zone (Z or +HH:MM)";
    if (with_zone && (why = zone(s + 11 + used, rest, &offset)) != NULL)
        return why;
    int64_t v = days * 86400000000LL + tod - offset * 1000000;
    /* 0001-01-01 00:00:00 and 9999-12-31 23:59:59.999999 UTC */
    if (v < -62135596800000000LL || v > 253402300799999999LL)
        return "timestamp out of range (years 0001..9999 in UTC)";
    *us = v;
    return NULL;
}
