/*
 * fuzz_parquet_read.c - arbitrary bytes into the Parquet reader.
 *
 * The input is a Parquet file.  It is opened with the file's own schema and
 * read through next and next_batch, then read again through a projection
 * made from that schema: the top-level fields in reverse order, ints and
 * floats promoted to long and double, every struct's fields replaced by one
 * the file lacks (so the struct reads a column for its levels only), and a
 * missing column.  Invariants:
 *  - every row the reader hands out is a valid row of its schema
 *    (floe__datum_validate) and positions count up from 0;
 *  - failures are FLOE_EFORMAT, FLOE_EUNSUPPORTED, FLOE_EINCOMPATIBLE,
 *    FLOE_ELIMIT or FLOE_ENOMEM, with a message; nothing crashes or leaks.
 * Limits are small (1 MiB pages and footers, 20,000 rows read) so fuzzing
 * stays fast; a few bytes of RLE can stand for billions of rows.
 */
#include <stdlib.h>

#include "parquet/parquet_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ROWS 20000

static bool expected_failure(int rc)
{
    return rc == FLOE_EFORMAT || rc == FLOE_EUNSUPPORTED || rc == FLOE_EINCOMPATIBLE ||
           rc == FLOE_ELIMIT || rc == FLOE_ENOMEM;
}

static void check_failure(int rc, const floe_error *err)
{
    if (rc == FLOE_OK)
        return;
    if (!expected_failure(rc) || floe_error_message(err)[0] == '\0')
        __builtin_trap();
}

/* Read up to MAX_ROWS rows, alternating batches and single rows. */
static void read_rows(floe__pq_reader *r, floe_error *err)
{
    const floe__schema *s = floe__pq_reader_schema(r);
    floe__buf rows;
    floe__buf_init(&rows, 1 << 24);
    size_t ends[7], n = 0;
    uint64_t next_pos = 0, first;
    int rc = FLOE_OK;
    for (int k = 0; rc == FLOE_OK && next_pos < MAX_ROWS; k++) {
        rows.len = 0;
        rc = floe__pq_reader_next_batch(r, &rows, ends, k % 2 ? 7 : 1, &n, &first, err);
        if (rc != FLOE_OK || n == 0)
            break;
        if (first != next_pos)
            __builtin_trap();
        for (size_t i = 0; i < n; i++) {
            size_t start = i ? ends[i - 1] : 0;
            if (floe__datum_validate(s, rows.data + start, ends[i] - start, NULL) != FLOE_OK)
                __builtin_trap();
        }
        next_pos += n;
    }
    check_failure(rc, err);
    floe__buf_free(&rows);
}

static void promote(floe__field *f, int32_t *next_id)
{
    if (f->kind == FLOE_K_INT)
        f->kind = FLOE_K_LONG;
    else if (f->kind == FLOE_K_FLOAT)
        f->kind = FLOE_K_DOUBLE;
    if (f->kind == FLOE_K_STRUCT) {
        for (uint32_t i = 0; i < f->n_children; i++)
            floe__field_clear(&f->children[i]);
        f->n_children = 1;
        floe__field *c = &f->children[0];
        c->name = floe__strdup("absent");
        c->id = (*next_id)++;
        c->kind = FLOE_K_STRING;
        return;
    }
    for (uint32_t i = 0; i < f->n_children; i++)
        promote(&f->children[i], next_id);
}

/* The second projection (see the top); NULL when memory runs out. */
static floe__schema *projection(const floe__schema *s)
{
    floe__schema *p;
    if (floe__schema_new(&p, NULL) != FLOE_OK)
        return NULL;
    uint32_t n = s->root.n_children;
    p->root.children = floe__calloc(n + 1, sizeof(floe__field));
    int32_t next_id = s->highest_id + 1;
    for (uint32_t i = 0; p->root.children && i < n; i++) {
        if (floe__field_copy(&p->root.children[i], &s->root.children[n - 1 - i], NULL))
            break;
        p->root.n_children = i + 1;
        promote(&p->root.children[i], &next_id);
    }
    if (!p->root.children || p->root.n_children != n) {
        floe_schema_free(p);
        return NULL;
    }
    floe__field *m = &p->root.children[n];
    m->name = floe__strdup("missing");
    m->id = next_id++;
    m->kind = FLOE_K_LONG;
    p->root.n_children = n + 1;
    p->highest_id = next_id;
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    floe__pq_source src = floe__pq_source_memory(data, size);
    floe__pq_read_options o;
    floe__pq_read_options_init(&o);
    o.max_page = 1 << 20;
    o.max_footer = 1 << 20;
    floe_error *err = floe_error_new();
    floe__pq_reader *r = NULL;
    int rc = floe__pq_reader_open(&src, NULL, &o, &r, err);
    check_failure(rc, err);
    if (rc == FLOE_OK) {
        read_rows(r, err);
        floe__schema *p = projection(floe__pq_reader_schema(r));
        floe__pq_reader *r2 = NULL;
        if (p) {
            rc = floe__pq_reader_open(&src, p, &o, &r2, err);
            check_failure(rc, err);
        }
        if (r2)
            read_rows(r2, err);
        floe__pq_reader_free(r2);
        floe_schema_free(p);
    }
    floe__pq_reader_free(r);
    floe_error_free(err);
    return 0;
}
