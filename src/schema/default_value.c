/*
 * default_value.c - Iceberg default values (initial-default, write-default;
 * format 3) of primitive fields, between their JSON single-value form (the
 * Iceberg spec's Appendix D) and the payload floe keeps on the field: the
 * bytes of a present slot in the row format, without the tag.
 *
 *   boolean  true/false            int, long   JSON integers
 *   float, double  JSON numbers ("NaN", "Infinity", "-Infinity" as strings)
 *   decimal  "12.30" (exact; a number is read from its text when given)
 *   date "2017-11-16"  time "22:31:08.123456"  timestamp "2017-11-16T22:31:08.123456"
 *   timestamptz "...+00:00" (any zone is read and stored as UTC)
 *   string, uuid  JSON strings      fixed, binary  lower-case hex strings
 *
 * Defaults of records, lists and maps are refused (only null): floe's
 * writers never need them, and no reader floe serves reads them.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "schema/schema_internal.h"

/* ---- reading -------------------------------------------------------------------- */

static int fail(floe_error *err, const floe__field *f, const char *why)
{
    char type[96];
    floe__type_name(f, false, type, sizeof type);
    return floe__err_set(err, FLOE_ESCHEMA, "default of \"%s\" (%s): %s", f->name ? f->name : "",
                         type, why);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* A payload of n bytes: *out allocated (with 4 more bytes in front for a
 * length when `counted`). */
static int payload(size_t n, bool counted, uint8_t **out, uint32_t *len, floe_error *err)
{
    size_t total = n + (counted ? 4 : 0);
    FLOE_RETURN_IF(total > UINT32_MAX / 2, err, FLOE_ELIMIT, "a default value is too large");
    *out = floe__malloc(total ? total : 1);
    if (!*out)
        return FLOE_OOM(err);
    if (counted)
        floe__put_le32(*out, (uint32_t)n);
    *len = (uint32_t)total;
    return FLOE_OK;
}

static int from_hex(const floe__field *f, const char *s, size_t n, uint8_t **out,
                    uint32_t *len, floe_error *err)
{
    if (n % 2)
        return fail(err, f, "a hex string has an even number of digits");
    if (f->kind == FLOE_K_FIXED && n / 2 != (size_t)f->length)
        return fail(err, f, "the value's length is not the type's");
    FLOE_FORWARD(payload(n / 2, f->kind == FLOE_K_BINARY, out, len, err));
    uint8_t *o = *out + (f->kind == FLOE_K_BINARY ? 4 : 0);
    for (size_t i = 0; i < n; i += 2) {
        int hi = hexval(s[i]), lo = hexval(s[i + 1]);
        if (hi < 0 || lo < 0) {
            floe__free(*out);
            *out = NULL;
            return fail(err, f, "not a hex string");
        }
        o[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return FLOE_OK;
}

static int from_string(const floe__field *f, const char *s, size_t n, uint8_t **out,
                       uint32_t *len, floe_error *err)
{
    uint8_t u[16];
    if (f->kind == FLOE_K_UUID || (f->kind == FLOE_K_STRING && f->decl == FLOE_D_UUID)) {
        if (floe__uuid_parse(s, n, u) != 0)
            return fail(err, f, "not a uuid");
        if (f->kind == FLOE_K_UUID) {
            FLOE_FORWARD(payload(16, false, out, len, err));
            memcpy(*out, u, 16);
            return FLOE_OK;
        }
        char canon[37];
        floe__uuid_format(u, canon);
        s = canon;
        n = 36;
        FLOE_FORWARD(payload(n, true, out, len, err));
        memcpy(*out + 4, s, n);
        return FLOE_OK;
    }
    FLOE_FORWARD(payload(n, true, out, len, err));
    memcpy(*out + 4, s, n);
    return FLOE_OK;
}

static int from_number(const floe__field *f, const json_t *v, const char *raw, size_t raw_len,
                       uint8_t **out, uint32_t *len, floe_error *err)
{
    if (f->kind == FLOE_K_INT || f->kind == FLOE_K_LONG) {
        if (!json_is_integer(v))
            return fail(err, f, "not an integer");
        json_int_t x = json_integer_value(v);
        if (f->kind == FLOE_K_INT && (x < INT32_MIN || x > INT32_MAX))
            return fail(err, f, "out of range");
        FLOE_FORWARD(payload(f->kind == FLOE_K_INT ? 4 : 8, false, out, len, err));
        if (f->kind == FLOE_K_INT)
            floe__put_le32(*out, (uint32_t)(int32_t)x);
        else
            floe__put_le64(*out, (uint64_t)(int64_t)x);
        return FLOE_OK;
    }
    if (f->kind == FLOE_K_DECIMAL) {
        char text[64];
        size_t n = raw ? raw_len : (size_t)snprintf(text, sizeof text, "%lld",
                                                    (long long)json_integer_value(v));
        if (!raw && !json_is_integer(v))
            return fail(err, f, "a decimal is a string, or a number written exactly");
        floe__i128 d;
        bool inexact = false;
        const char *why = floe__parse_decimal(raw ? raw : text, n, f->precision, f->scale, &d,
                                              &inexact);
        if (why || inexact)
            return fail(err, f, why ? why : "more fraction digits than the scale");
        FLOE_FORWARD(payload(16, false, out, len, err));
        memcpy(*out, &d, 16);
        return FLOE_OK;
    }
    if (f->kind != FLOE_K_FLOAT && f->kind != FLOE_K_DOUBLE)
        return fail(err, f, "a number does not fit this type");
    double x = json_number_value(v);
    if (raw && floe__parse_double(raw, raw_len, &x))
        return fail(err, f, "not a number");
    FLOE_FORWARD(payload(f->kind == FLOE_K_FLOAT ? 4 : 8, false, out, len, err));
    if (f->kind == FLOE_K_FLOAT) {
        float fv = (float)x;
        memcpy(*out, &fv, 4);
    } else {
        memcpy(*out, &x, 8);
    }
    return FLOE_OK;
}

static int from_special(const floe__field *f, double x, uint8_t **out, uint32_t *len,
                        floe_error *err)
{
    FLOE_FORWARD(payload(f->kind == FLOE_K_FLOAT ? 4 : 8, false, out, len, err));
    if (f->kind == FLOE_K_FLOAT) {
        uint32_t bits = 0x7fc00000u;
        float fv = (float)x;
        if (isnan(x))
            floe__put_le32(*out, bits);
        else
            memcpy(*out, &fv, 4);
    } else if (isnan(x)) {
        floe__put_le64(*out, 0x7ff8000000000000ull);
    } else {
        memcpy(*out, &x, 8);
    }
    return FLOE_OK;
}

static int from_text(const floe__field *f, const char *s, size_t n, uint8_t **out, uint32_t *len,
                     floe_error *err)
{
    const char *why = NULL;
    int32_t days;
    int64_t us;
    double x;
    switch (f->kind) {
    case FLOE_K_DATE:
        if ((why = floe__parse_date(s, n, &days)))
            return fail(err, f, why);
        FLOE_FORWARD(payload(4, false, out, len, err));
        floe__put_le32(*out, (uint32_t)days);
        return FLOE_OK;
    case FLOE_K_TIME:
    case FLOE_K_TIMESTAMP:
    case FLOE_K_TIMESTAMPTZ:
        why = f->kind == FLOE_K_TIME ? floe__parse_time(s, n, &us)
                                     : floe__parse_timestamp(s, n, f->kind == FLOE_K_TIMESTAMPTZ,
                                                             &us);
        if (why)
            return fail(err, f, why);
        FLOE_FORWARD(payload(8, false, out, len, err));
        floe__put_le64(*out, (uint64_t)us);
        return FLOE_OK;
    case FLOE_K_DECIMAL:
        return from_number(f, NULL, s, n, out, len, err);
    case FLOE_K_FLOAT:
    case FLOE_K_DOUBLE:
        if (!floe__parse_float_special(s, n, &x))
            return fail(err, f, "a string here must be \"NaN\", \"Infinity\" or \"-Infinity\"");
        return from_special(f, x, out, len, err);
    case FLOE_K_STRING:
    case FLOE_K_UUID:
        return from_string(f, s, n, out, len, err);
    case FLOE_K_FIXED:
    case FLOE_K_BINARY:
        return from_hex(f, s, n, out, len, err);
    default:
        return fail(err, f, "a string does not fit this type");
    }
}

int floe__default_from_json(const floe__field *f, const json_t *v, const char *raw,
                            size_t raw_len, uint8_t **out, uint32_t *out_len, floe_error *err)
{
    *out = NULL;
    *out_len = 0;
    if (!v || json_is_null(v))
        return FLOE_OK;
    if (f->kind == FLOE_K_STRUCT || f->kind == FLOE_K_LIST || f->kind == FLOE_K_MAP)
        return floe__err_set(err, FLOE_EUNSUPPORTED, "default of \"%s\": floe takes defaults "
                             "of primitive fields only (a record, list or map defaults to null)",
                             f->name ? f->name : "");
    if (json_is_boolean(v)) {
        if (f->kind != FLOE_K_BOOLEAN)
            return fail(err, f, "a boolean does not fit this type");
        FLOE_FORWARD(payload(1, false, out, out_len, err));
        **out = json_is_true(v) ? 1 : 0;
        return FLOE_OK;
    }
    if (f->kind == FLOE_K_BOOLEAN)
        return fail(err, f, "not true or false");
    if (json_is_number(v))
        return from_number(f, v, raw, raw_len, out, out_len, err);
    if (json_is_string(v))
        return from_text(f, json_string_value(v), json_string_length(v), out, out_len, err);
    return fail(err, f, "not a JSON value of this type");
}

/* ---- writing ------------------------------------------------------------------- */

static json_t *hex_json(const uint8_t *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    char *s = floe__malloc(2 * n + 1);
    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        s[2 * i] = digits[p[i] >> 4];
        s[2 * i + 1] = digits[p[i] & 15];
    }
    s[2 * n] = '\0';
    json_t *j = json_stringn(s, 2 * n);
    floe__free(s);
    return j;
}

static json_t *float_json(double x)
{
    if (isnan(x))
        return json_string("NaN");
    if (isinf(x))
        return json_string(x > 0 ? "Infinity" : "-Infinity");
    return json_real(x);
}

static json_t *timestamp_json(const floe__field *f, int64_t us)
{
    char buf[64];
    int64_t day = us / 86400000000LL, rem = us % 86400000000LL;
    if (rem < 0)
        rem += 86400000000LL, day--;
    size_t n = floe__format_date(day, buf);
    buf[n++] = 'T';
    n += floe__format_time(rem, buf + n);
    if (f->kind == FLOE_K_TIMESTAMPTZ)
        memcpy(buf + n, "+00:00", 7);
    else
        buf[n] = '\0';
    return json_string(buf);
}

json_t *floe__default_to_json(const floe__field *f, const uint8_t *p, uint32_t len)
{
    char buf[64];
    if (!p)
        return json_null();
    size_t w = floe__kind_width(f);
    if (w && len != w)
        return NULL;
    switch (f->kind) {
    case FLOE_K_BOOLEAN: return json_boolean(*p);
    case FLOE_K_INT: return json_integer((int32_t)floe__get_le32(p));
    case FLOE_K_LONG: return json_integer((json_int_t)(int64_t)floe__get_le64(p));
    case FLOE_K_FLOAT: {
        float x;
        memcpy(&x, p, 4);
        return float_json(x);
    }
    case FLOE_K_DOUBLE: {
        double x;
        memcpy(&x, p, 8);
        return float_json(x);
    }
    case FLOE_K_DECIMAL: {
        floe__i128 d;
        memcpy(&d, p, 16);
        floe__format_decimal(d, f->scale, buf);
        return json_string(buf);
    }
    case FLOE_K_DATE:
        floe__format_date((int32_t)floe__get_le32(p), buf);
        return json_string(buf);
    case FLOE_K_TIME:
        floe__format_time((int64_t)floe__get_le64(p), buf);
        return json_string(buf);
    case FLOE_K_TIMESTAMP:
    case FLOE_K_TIMESTAMPTZ:
        return timestamp_json(f, (int64_t)floe__get_le64(p));
    case FLOE_K_UUID:
        floe__uuid_format(p, buf);
        return json_string(buf);
    case FLOE_K_FIXED:
        return hex_json(p, len);
    case FLOE_K_STRING:
        return len >= 4 && floe__get_le32(p) == len - 4 ? json_stringn((const char *)p + 4,
                                                                        len - 4) : NULL;
    case FLOE_K_BINARY:
        return len >= 4 && floe__get_le32(p) == len - 4 ? hex_json(p + 4, len - 4) : NULL;
    default:
        return NULL;
    }
}

/* ---- on fields ------------------------------------------------------------------ */

static int dup_bytes(const uint8_t *p, uint32_t n, uint8_t **out, floe_error *err)
{
    *out = NULL;
    if (!p)
        return FLOE_OK;
    *out = floe__malloc(n ? n : 1);
    if (!*out)
        return FLOE_OOM(err);
    memcpy(*out, p, n);
    return FLOE_OK;
}

int floe__field_set_defaults(floe__field *f, const uint8_t *initial, uint32_t initial_len,
                             const uint8_t *write, uint32_t write_len, floe_error *err)
{
    uint8_t *i = NULL, *w = NULL;
    FLOE_FORWARD(dup_bytes(initial, initial_len, &i, err));
    if (dup_bytes(write, write_len, &w, err) != FLOE_OK) {
        floe__free(i);
        return FLOE_ENOMEM;
    }
    floe__free(f->initial_default);
    floe__free(f->write_default);
    f->initial_default = i;
    f->initial_default_len = i ? initial_len : 0;
    f->write_default = w;
    f->write_default_len = w ? write_len : 0;
    return FLOE_OK;
}

bool floe__default_equal(const uint8_t *a, uint32_t alen, const uint8_t *b, uint32_t blen)
{
    if (!a || !b)
        return !a && !b;
    return alen == blen && memcmp(a, b, alen) == 0;
}
