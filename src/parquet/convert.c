/*
 * convert.c - what a stored Parquet type reads as, and the conversions.
 *
 * floe__pq_choose_cv decides, once per column, how the file's physical type
 * and annotation become the projected field's row-format payload:
 *
 *   projected      stored as
 *   boolean        BOOLEAN
 *   int            INT32 (plain, INT(8/16/32 signed), INT(8/16 unsigned))
 *   long           INT64 (plain, INT(64 signed)); INT32 promoted (INT(32) unsigned too)
 *   float          FLOAT                    double  DOUBLE, FLOAT promoted
 *   date           INT32 DATE
 *   time           INT64 TIME(MICROS|NANOS), INT32 TIME(MILLIS); to micros
 *   timestamp(tz)  INT64 TIMESTAMP(MILLIS|MICROS|NANOS), either UTC flag; INT96
 *   decimal(P,S)   DECIMAL(p,S) with p <= P in INT32, INT64, FLBA or BYTE_ARRAY
 *   string         BYTE_ARRAY (plain, STRING, ENUM, JSON), UTF-8 checked; a
 *                  uuid-declared string also FLBA(16), as canonical text
 *   binary         BYTE_ARRAY (plain, STRING, ENUM, JSON, BSON)
 *   uuid           FLBA(16) (plain or UUID)  fixed(L)  FLBA(L) (not DECIMAL)
 *   any primitive  the UNKNOWN (null) logical type: only nulls
 *
 * Anything else is FLOE_EINCOMPATIBLE naming the column.  The conversions
 * work on whole batches; values the row format cannot hold (a decimal over
 * its precision, a time outside the day, a timestamp unit overflowing
 * micros, invalid UTF-8) are FLOE_EFORMAT.  NaNs become the canonical quiet
 * NaN the row format requires; nanoseconds are floored to micros.
 */
#include <stdio.h>

#include "parquet/pqr_internal.h"

typedef __int128 i128;

static uint32_t stored_width(const floe__pq_selem *e)
{
    switch (e->type) {
    case PQ_T_BOOLEAN: return 1;
    case PQ_T_INT32: case PQ_T_FLOAT: return 4;
    case PQ_T_INT64: case PQ_T_DOUBLE: return 8;
    case PQ_T_INT96: return 12;
    case PQ_T_FLBA: return (uint32_t)e->type_length;
    default: return 0;
    }
}

static const char *ann_name(const floe__pq_selem *e)
{
    static const char *names[] = {
        "", " STRING", " ENUM", " JSON", " BSON", " UUID", " DECIMAL", " DATE", " TIME",
        " TIMESTAMP", " INT", " LIST", " MAP", " MAP_KEY_VALUE", " UNKNOWN", " INTERVAL",
        " FLOAT16", " (another logical type)",
    };
    return e->ann < sizeof names / sizeof names[0] ? names[e->ann] : "";
}

static int incompatible(const floe__pq_rcol *c, const floe__field *f, const char *path,
                        floe_error *err)
{
    char t[128], extra[48] = "";
    floe__type_name(f, false, t, sizeof t);
    const floe__pq_selem *e = c->e;
    if (e->ann == PQ_A_DECIMAL)
        snprintf(extra, sizeof extra, "(%d,%d)", (int)e->precision, (int)e->scale);
    else if (e->ann == PQ_A_INT)
        snprintf(extra, sizeof extra, "(%d, %s)", e->bits, e->is_signed ? "signed" : "unsigned");
    else if (e->type == PQ_T_FLBA)
        snprintf(extra, sizeof extra, " of %d bytes", (int)e->type_length);
    return floe__err_set(err, FLOE_EINCOMPATIBLE,
                         "column %s (field id %d): the file stores %s%s%s, which does not read "
                         "as %s", path, (int)f->id, floe__pq_type_name(e->type), ann_name(e), extra,
                         t);
}

static bool plain_int(const floe__pq_selem *e, bool is_signed, int max_bits)
{
    if (e->ann == PQ_A_NONE)
        return true;
    return e->ann == PQ_A_INT && (e->is_signed == is_signed) && e->bits <= max_bits;
}

/* The conversion for integer-like kinds; -1 when none applies. */
static int int_cv(const floe__pq_selem *e, const floe__field *f)
{
    int t = e->type;
    switch (f->kind) {
    case FLOE_K_INT:
        return t == PQ_T_INT32 && (plain_int(e, true, 32) || plain_int(e, false, 16))
                   ? PQ_CV_COPY : -1;
    case FLOE_K_LONG:
        if (t == PQ_T_INT64 && plain_int(e, true, 64))
            return PQ_CV_COPY;
        if (t == PQ_T_INT32 && plain_int(e, true, 32))
            return PQ_CV_I32_I64;
        return t == PQ_T_INT32 && plain_int(e, false, 32) ? PQ_CV_U32_I64 : -1;
    case FLOE_K_DATE:
        return t == PQ_T_INT32 && e->ann == PQ_A_DATE ? PQ_CV_COPY : -1;
    case FLOE_K_TIME:
        if (e->ann != PQ_A_TIME)
            return -1;
        if (t == PQ_T_INT32)
            return e->unit == PQ_UNIT_MILLIS ? PQ_CV_MS32_US : -1;
        if (t != PQ_T_INT64 || e->unit == PQ_UNIT_MILLIS)
            return -1;
        return e->unit == PQ_UNIT_NANOS ? PQ_CV_NS_US : PQ_CV_TIME_US;
    case FLOE_K_TIMESTAMP:
    case FLOE_K_TIMESTAMPTZ:
        if (t == PQ_T_INT96)
            return e->ann == PQ_A_NONE ? PQ_CV_INT96 : -1;
        if (t != PQ_T_INT64 || e->ann != PQ_A_TIMESTAMP)
            return -1;
        return e->unit == PQ_UNIT_MILLIS ? PQ_CV_MS_US
               : e->unit == PQ_UNIT_NANOS ? PQ_CV_NS_US : PQ_CV_COPY;
    default:
        return -1;
    }
}

static bool text_like(const floe__pq_selem *e, bool binary)
{
    return e->ann == PQ_A_NONE || e->ann == PQ_A_STRING || e->ann == PQ_A_ENUM ||
           e->ann == PQ_A_JSON || (binary && e->ann == PQ_A_BSON);
}

/* The conversion for the other kinds; -1 when none applies. */
static int other_cv(const floe__pq_selem *e, const floe__field *f)
{
    int t = e->type;
    bool flba16 = t == PQ_T_FLBA && e->type_length == 16 &&
                  (e->ann == PQ_A_NONE || e->ann == PQ_A_UUID);
    switch (f->kind) {
    case FLOE_K_BOOLEAN: return t == PQ_T_BOOLEAN && e->ann == PQ_A_NONE ? PQ_CV_BOOL : -1;
    case FLOE_K_FLOAT: return t == PQ_T_FLOAT && e->ann == PQ_A_NONE ? PQ_CV_F32 : -1;
    case FLOE_K_DOUBLE:
        if (e->ann != PQ_A_NONE)
            return -1;
        return t == PQ_T_DOUBLE ? PQ_CV_F64 : t == PQ_T_FLOAT ? PQ_CV_F32_F64 : -1;
    case FLOE_K_DECIMAL:
        if (e->ann != PQ_A_DECIMAL || e->scale != f->scale || e->precision > f->precision ||
            e->precision < 1)
            return -1;
        return t == PQ_T_INT32 ? PQ_CV_I32_DEC : t == PQ_T_INT64 ? PQ_CV_I64_DEC
               : (t == PQ_T_FLBA || t == PQ_T_BYTE_ARRAY) ? PQ_CV_BE_DEC : -1;
    case FLOE_K_STRING:
        if (f->decl == FLOE_D_UUID && flba16)
            return PQ_CV_UUID_STR;
        if (t != PQ_T_BYTE_ARRAY || !text_like(e, false))
            return -1;
        return f->decl == FLOE_D_UUID ? PQ_CV_UUID_TEXT : PQ_CV_STRING;
    case FLOE_K_BINARY: return t == PQ_T_BYTE_ARRAY && text_like(e, true) ? PQ_CV_BYTES : -1;
    case FLOE_K_UUID: return flba16 ? PQ_CV_COPY : -1;
    case FLOE_K_FIXED:
        return t == PQ_T_FLBA && e->type_length == f->length && e->ann != PQ_A_DECIMAL
                   ? PQ_CV_COPY : -1;
    default: return int_cv(e, f);
    }
}

static int payload_op(int cv, const floe__field *f)
{
    if (cv == PQ_CV_UUID_STR)
        return PQ_W_UUID_STR;
    return (f->kind == FLOE_K_STRING || f->kind == FLOE_K_BINARY) ? PQ_W_BYTES : PQ_W_FIXED;
}

int floe__pq_choose_cv(floe__pq_rcol *c, const floe__field *f, const char *path,
                       floe_error *err)
{
    c->pwidth = stored_width(c->e);
    int cv = c->e->ann == PQ_A_NULL ? PQ_CV_NULL : other_cv(c->e, f);
    if (cv < 0)
        return incompatible(c, f, path, err);
    c->cv = (uint8_t)cv;
    c->wop = (uint8_t)payload_op(cv, f);
    c->width = c->wop == PQ_W_UUID_STR ? 16 : (uint32_t)floe__kind_width(f);
    c->precision = f->kind == FLOE_K_DECIMAL ? f->precision : 0;
    FLOE_RETURN_IF(c->wop == PQ_W_FIXED && c->width == 0, err, FLOE_EINCOMPATIBLE,
                   "column %s: a field of no width", path);
    return FLOE_OK;
}

bool floe__pq_cv_identity(const floe__pq_rcol *c)
{
    return c->cv == PQ_CV_COPY || c->cv == PQ_CV_BOOL || c->cv == PQ_CV_UUID_STR;
}

/* ---- fixed-width conversions -------------------------------------------------------------- */

static i128 pow10_i128(int p)
{
    i128 v = 1;
    while (p-- > 0)
        v *= 10;
    return v;
}

/* Messages leave the column out: chunk_read.c names it. */
static int bad_value(const floe__pq_rcol *c, const char *what, floe_error *err)
{
    (void)c;
    return floe__err_set(err, FLOE_EFORMAT, "%s", what);
}

static void put_i128(uint8_t *out, i128 v) { memcpy(out, &v, 16); }

static int decimals(const floe__pq_rcol *c, const uint8_t *in, size_t n, uint8_t *out,
                    floe_error *err)
{
    i128 lim = pow10_i128(c->precision);
    bool wide = c->cv == PQ_CV_I64_DEC;
    for (size_t i = 0; i < n; i++) {
        i128 v = wide ? (int64_t)floe__get_le64(in + 8 * i) : (int32_t)floe__get_le32(in + 4 * i);
        if (v <= -lim || v >= lim)
            return bad_value(c, "a decimal value over its precision", err);
        put_i128(out + 16 * i, v);
    }
    return FLOE_OK;
}

static void floats(const uint8_t *in, size_t n, uint8_t *out)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t b = floe__get_le32(in + 4 * i);
        if ((b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu))
            b = 0x7fc00000u;
        floe__put_le32(out + 4 * i, b);
    }
}

static void doubles(const uint8_t *in, size_t n, uint8_t *out, bool from_float)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t b;
        if (from_float) {
            float f;
            memcpy(&f, in + 4 * i, 4);
            double d = f;
            memcpy(&b, &d, 8);
        } else {
            b = floe__get_le64(in + 8 * i);
        }
        if ((b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (b & 0x000fffffffffffffull))
            b = 0x7ff8000000000000ull;
        floe__put_le64(out + 8 * i, b);
    }
}

static bool time_ok(const floe__pq_rcol *c, int64_t us)
{
    return c->field->kind != FLOE_K_TIME || (us >= 0 && us < 86400000000LL);
}

static int int64s(const floe__pq_rcol *c, const uint8_t *in, size_t n, uint8_t *out,
                  floe_error *err)
{
    for (size_t i = 0; i < n; i++) {
        int64_t v;
        switch (c->cv) {
        case PQ_CV_I32_I64: v = (int32_t)floe__get_le32(in + 4 * i); break;
        case PQ_CV_U32_I64: v = floe__get_le32(in + 4 * i); break;
        case PQ_CV_MS32_US: v = (int64_t)(int32_t)floe__get_le32(in + 4 * i) * 1000; break;
        case PQ_CV_MS_US:
            if (__builtin_mul_overflow((int64_t)floe__get_le64(in + 8 * i), 1000, &v))
                return bad_value(c, "a millisecond timestamp out of range", err);
            break;
        case PQ_CV_NS_US: {
            int64_t ns = (int64_t)floe__get_le64(in + 8 * i);
            v = ns / 1000 - (ns % 1000 < 0);          /* floor */
            break;
        }
        default:
            assert(c->cv == PQ_CV_TIME_US);
            v = (int64_t)floe__get_le64(in + 8 * i);
            break;
        }
        if (!time_ok(c, v))
            return bad_value(c, "a time of day out of range", err);
        floe__put_le64(out + 8 * i, (uint64_t)v);
    }
    return FLOE_OK;
}

/* INT96: nanoseconds of the day (8 bytes), then the Julian day (4 bytes). */
static int int96s(const floe__pq_rcol *c, const uint8_t *in, size_t n, uint8_t *out,
                  floe_error *err)
{
    for (size_t i = 0; i < n; i++) {
        int64_t ns = (int64_t)floe__get_le64(in + 12 * i);
        int64_t day = (int64_t)floe__get_le32(in + 12 * i + 8) - 2440588;   /* 1970-01-01 */
        int64_t us;
        if (__builtin_mul_overflow(day, 86400000000LL, &us) ||
            __builtin_add_overflow(us, ns / 1000 - (ns % 1000 < 0), &us))
            return bad_value(c, "an INT96 timestamp out of range", err);
        floe__put_le64(out + 8 * i, (uint64_t)us);
    }
    return FLOE_OK;
}

int floe__pq_convert_fixed(const floe__pq_rcol *c, const uint8_t *in, size_t n, uint8_t *out,
                           floe_error *err)
{
    switch (c->cv) {
    case PQ_CV_COPY:
    case PQ_CV_BOOL:
    case PQ_CV_UUID_STR:
        if (n)
            memcpy(out, in, n * c->width);
        return FLOE_OK;
    case PQ_CV_F32: floats(in, n, out); return FLOE_OK;
    case PQ_CV_F64: doubles(in, n, out, false); return FLOE_OK;
    case PQ_CV_F32_F64: doubles(in, n, out, true); return FLOE_OK;
    case PQ_CV_I32_DEC:
    case PQ_CV_I64_DEC: return decimals(c, in, n, out, err);
    case PQ_CV_BE_DEC: {
        floe__pq_bv bv;
        for (size_t i = 0; i < n; i++) {
            bv.p = in + i * c->pwidth;
            bv.n = c->pwidth;
            FLOE_FORWARD(floe__pq_convert_bytes(c, &bv, 1, out + 16 * i, err));
        }
        return FLOE_OK;
    }
    case PQ_CV_INT96: return int96s(c, in, n, out, err);
    case PQ_CV_I32_I64:
    case PQ_CV_U32_I64:
    case PQ_CV_MS32_US:
    case PQ_CV_MS_US:
    case PQ_CV_NS_US:
    case PQ_CV_TIME_US: return int64s(c, in, n, out, err);
    default:
        assert(!"no fixed-width conversion");
        return floe__err_set(err, FLOE_EINTERNAL, "conversion %d of fixed values", c->cv);
    }
}

/* ---- byte arrays ---------------------------------------------------------------------------- */

/* Big-endian two's complement of any length: bytes beyond 16 must only
 * extend the sign. */
static int be_decimal(const floe__pq_rcol *c, const floe__pq_bv *v, uint8_t *out,
                      floe_error *err)
{
    const uint8_t *p = v->p;
    size_t n = v->n;
    uint8_t sign = n && (p[0] & 0x80) ? 0xff : 0x00;
    for (; n > 16; n--, p++)
        if (*p != sign)
            return bad_value(c, "a decimal value over 16 bytes", err);
    i128 x = sign ? -1 : 0;
    for (size_t i = 0; i < n; i++)
        x = (i128)(((unsigned __int128)x << 8) | p[i]);
    i128 lim = pow10_i128(c->precision);
    if (x <= -lim || x >= lim)
        return bad_value(c, "a decimal value over its precision", err);
    put_i128(out, x);
    return FLOE_OK;
}

/* UTF-8, eight ASCII bytes at a time before the full check. */
static bool utf8_ok(const uint8_t *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        if (floe__get_le64(p + i) & 0x8080808080808080ull)
            return floe__utf8_valid(p + i, n - i);
    for (; i < n; i++)
        if (p[i] & 0x80)
            return floe__utf8_valid(p + i, n - i);
    return true;
}

static bool uuid_text_ok(const floe__pq_bv *v)
{
    uint8_t u[16];
    char canon[37];
    if (v->n != 36 || floe__uuid_parse((const char *)v->p, 36, u) != 0)
        return false;
    floe__uuid_format(u, canon);
    return memcmp(canon, v->p, 36) == 0;
}

int floe__pq_convert_bytes(const floe__pq_rcol *c, const floe__pq_bv *in, size_t n, uint8_t *out,
                           floe_error *err)
{
    switch (c->cv) {
    case PQ_CV_BE_DEC:
        for (size_t i = 0; i < n; i++)
            FLOE_FORWARD(be_decimal(c, &in[i], out + 16 * i, err));
        return FLOE_OK;
    case PQ_CV_STRING:
        for (size_t i = 0; i < n; i++)
            if (!utf8_ok(in[i].p, in[i].n))
                return bad_value(c, "a string that is not valid UTF-8", err);
        return FLOE_OK;
    case PQ_CV_UUID_TEXT:
        for (size_t i = 0; i < n; i++)
            if (!uuid_text_ok(&in[i]))
                return bad_value(c, "a uuid that is not in canonical text form", err);
        return FLOE_OK;
    default:
        return FLOE_OK;
    }
}
