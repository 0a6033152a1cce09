/*
 * fuzz_parquet.c - the Parquet writer on arbitrary rows.
 *
 * The first line of the input is a column list (floe_schema_parse); the
 * rest is a sequence of rows, each a u16 little-endian length and that many
 * bytes (each copied to a buffer of exactly its size, so AddressSanitizer
 * catches any read past a row).  Small pages, row groups and dictionary
 * limit make every flush path run.  Invariants:
 *  - a row the row-format validator accepts is written;
 *  - any row the writer refuses is refused with FLOE_EINPUT and leaves the
 *    writer usable;
 *  - the file closes, starts and ends with PAR1, and its metrics count the
 *    rows written.
 */
#include <stdlib.h>

#include "parquet/parquet_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void write_rows(const floe_schema *s, const uint8_t *p, const uint8_t *end)
{
    floe_parquet_options o;
    floe_parquet_options_init(&o, sizeof o);
    o.page_size = 64;
    o.row_group_size = 512;
    o.dictionary_limit = 256;
    o.compression = FLOE_COMPRESSION_SNAPPY;
    floe__buf file;
    floe__buf_init(&file, 1 << 26);
    floe__pq_writer *w = NULL;
    if (floe__pq_writer_new(s, &o, floe__output_memory(&file), &w, NULL) != FLOE_OK) {
        floe__buf_free(&file);
        return;
    }
    uint64_t written = 0;
    while (end - p >= 2) {
        size_t n = (size_t)p[0] | (size_t)p[1] << 8;
        p += 2;
        if (n > (size_t)(end - p))
            n = (size_t)(end - p);
        uint8_t *row = malloc(n ? n : 1);
        memcpy(row, p, n);
        p += n;
        bool valid = floe__datum_validate(s, row, n, NULL) == FLOE_OK;
        int rc = floe__pq_write_row(w, row, n, NULL);
        free(row);
        if (valid && rc != FLOE_OK)
            __builtin_trap();
        if (rc != FLOE_OK && rc != FLOE_EINPUT)
            __builtin_trap();
        if (rc == FLOE_OK)
            written++;
        if (floe__pq_writer_rows(w) != written)
            __builtin_trap();
    }
    floe__file_metrics m;
    if (floe__pq_writer_close(w, &m, NULL) != FLOE_OK)
        __builtin_trap();
    if (m.record_count != written || m.file_size != file.len || file.len < 12 ||
        memcmp(file.data, "PAR1", 4) != 0 || memcmp(file.data + file.len - 4, "PAR1", 4) != 0)
        __builtin_trap();
    floe__file_metrics_free(&m);
    floe__buf_free(&file);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    if (!nl)
        return 0;
    char *cols = malloc((size_t)(nl - data) + 1);
    memcpy(cols, data, (size_t)(nl - data));
    cols[nl - data] = '\0';
    floe_schema *s = NULL;
    if (floe_schema_parse(cols, &s, NULL) == FLOE_OK) {
        write_rows(s, nl + 1, data + size);
        floe_schema_free(s);
    }
    free(cols);
    return 0;
}
