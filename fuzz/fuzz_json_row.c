/*
 * fuzz_json_row.c - JSON rows.  The first line of the input is a column
 * list, the rest a JSON row.  A row that parses must validate, print as
 * JSON, and parse back from that JSON to the very same bytes.  The scanner
 * is exercised on the same text: skip and compact must agree, and
 * compacting compact text must change nothing.
 *
 * The JSON is copied to a buffer of exactly its size so that any read past
 * its end is caught by AddressSanitizer.
 */
#include <stdlib.h>

#include "source/source_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_scanner(const char *p, const char *end)
{
    const char *q1 = NULL, *q2 = NULL;
    floe__buf c1, c2;
    floe__buf_init(&c1, 1 << 24);
    floe__buf_init(&c2, 1 << 24);
    int rs = floe__json_skip_value(p, end, &q1, NULL);
    int rc = floe__json_compact_value(p, end, &q2, &c1, NULL);
    if (rs != rc || (rs == FLOE_OK && q1 != q2))
        __builtin_trap();
    if (rc == FLOE_OK) {
        char *copy = malloc(c1.len ? c1.len : 1);
        memcpy(copy, c1.data, c1.len);
        const char *q3;
        if (floe__json_compact_value(copy, copy + c1.len, &q3, &c2, NULL) != FLOE_OK ||
            q3 != copy + c1.len || c2.len != c1.len || memcmp(c1.data, c2.data, c1.len) != 0)
            __builtin_trap();
        free(copy);
    }
    floe__buf_free(&c1);
    floe__buf_free(&c2);
}

static void check_row(const floe_schema *s, const char *p, const char *end)
{
    floe__buf row, again, text;
    floe__buf_init(&row, 1 << 24);
    floe__buf_init(&again, 1 << 24);
    floe__buf_init(&text, 1 << 26);
    floe_error *e = floe_error_new();
    const char *q = NULL;
    int rc = floe__json_parse_row(s, p, end, &q, &row, e);
    if (rc == FLOE_OK) {
        if (q <= p || q > end || floe__datum_validate(s, row.data, row.len, NULL) != FLOE_OK)
            __builtin_trap();
        if (floe__datum_to_json(s, row.data, row.len, &text, NULL) != FLOE_OK)
            __builtin_trap();
        char *t = malloc(text.len ? text.len : 1);
        memcpy(t, text.data, text.len);
        const char *q2;
        if (floe__json_parse_row(s, t, t + text.len, &q2, &again, e) != FLOE_OK ||
            q2 != t + text.len || again.len != row.len ||
            memcmp(again.data, row.data, row.len) != 0)
            __builtin_trap();
        free(t);
    } else if ((rc != FLOE_EINPUT && rc != FLOE_ELIMIT && rc != FLOE_ENOMEM) ||
               !*floe_error_message(e) || row.len != 0) {
        __builtin_trap();
    }
    floe_error_free(e);
    floe__buf_free(&row);
    floe__buf_free(&again);
    floe__buf_free(&text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    if (!nl)
        return 0;
    size_t ncols = (size_t)(nl - data);
    char *cols = malloc(ncols + 1);
    memcpy(cols, data, ncols);
    cols[ncols] = '\0';
    floe_schema *s = NULL;
    if (floe_schema_parse(cols, &s, NULL) == FLOE_OK) {
        size_t n = size - ncols - 1;
        char *json = malloc(n ? n : 1);
        memcpy(json, nl + 1, n);
        check_row(s, json, json + n);
        check_scanner(json, json + n);
        free(json);
        floe_schema_free(s);
    }
    free(cols);
    return 0;
}
