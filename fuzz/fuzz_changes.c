/*
 * fuzz_changes.c - the NDJSON change-record parser (src/source/changes.c),
 * floe sink's main untrusted input.  The first line of the input is a
 * column list, every further line one change record.  A record that
 * parses as an update must hold a valid row, and the update written back
 * as {"time","diff","row"} (members in another order) must parse to the
 * same time, diff and row bytes; a progress record must say a time or
 * closed; a refused record must be FLOE_EINPUT (or a limit) with a message
 * and leave the row buffer as it was.
 *
 * Each line is copied to a buffer of exactly its size so that any read
 * past its end is caught by AddressSanitizer.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "source/source_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The update written back with its members in another order. */
static void check_round_trip(const floe_schema *s, const floe__change *ch, const floe__buf *row)
{
    floe__buf text, again;
    floe__buf_init(&text, 1 << 26);
    floe__buf_init(&again, 1 << 24);
    if (floe__buf_printf(&text, NULL, "{\"row\": ") != FLOE_OK ||
        floe__datum_to_json(s, row->data, row->len, &text, NULL) != FLOE_OK ||
        floe__buf_printf(&text, NULL, ", \"diff\": %" PRId64 ", \"time\": %" PRIu64 "}",
                         ch->diff, ch->time) != FLOE_OK)
        __builtin_trap();
    char *copy = malloc(text.len);
    memcpy(copy, text.data, text.len);
    floe__change back;
    if (floe__change_parse(s, copy, text.len, &back, &again, NULL) != FLOE_OK ||
        back.kind != FLOE__CHANGE_UPDATE || back.time != ch->time || back.diff != ch->diff ||
        again.len != row->len || memcmp(again.data, row->data, row->len) != 0)
        __builtin_trap();
    free(copy);
    floe__buf_free(&text);
    floe__buf_free(&again);
}

static void check_line(const floe_schema *s, const char *line, size_t n)
{
    floe__buf row;
    floe__buf_init(&row, 1 << 24);
    floe_error *e = floe_error_new();
    floe__change ch;
    int rc = floe__change_parse(s, line, n, &ch, &row, e);
    if (rc == FLOE_OK && ch.kind == FLOE__CHANGE_UPDATE) {
        if (floe__datum_validate(s, row.data, row.len, NULL) != FLOE_OK)
            __builtin_trap();
        check_round_trip(s, &ch, &row);
    } else if (rc == FLOE_OK) {
        if (ch.kind != FLOE__CHANGE_PROGRESS || row.len != 0 || (ch.closed && ch.time != 0))
            __builtin_trap();
    } else if ((rc != FLOE_EINPUT && rc != FLOE_ELIMIT && rc != FLOE_ENOMEM) ||
               !*floe_error_message(e) || row.len != 0) {
        __builtin_trap();
    }
    floe_error_free(e);
    floe__buf_free(&row);
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
        const uint8_t *p = nl + 1, *end = data + size;
        while (p < end) {
            const uint8_t *e = memchr(p, '\n', (size_t)(end - p));
            size_t n = (size_t)((e ? e : end) - p);
            char *line = malloc(n ? n : 1);
            memcpy(line, p, n);
            check_line(s, line, n);
            free(line);
            p += n + 1;
        }
        floe_schema_free(s);
    }
    free(cols);
    return 0;
}
