/*
 * fuzz_pgoutput.c - the Postgres source's decoders (src/source/pgoutput.c,
 * pg_copy.c, pg_types.c), which read what a server sends.
 *
 * The input is a sequence of records, each a little-endian u16 length and
 * that many bytes.  Each record is decoded as a walsender CopyData message
 * and, when it is XLogData, its payload as a pgoutput message; the record
 * itself is also decoded as a bare pgoutput message and split as a COPY
 * text line.  Every text value of a decoded tuple is read as a value of a
 * type picked by its column's position (scalars, arrays, ranges), and
 * what reads must be a valid row slot.  Refusals must be FLOE_EINPUT (or a
 * limit) with a message, and leave nothing behind.  Each record is copied
 * to a buffer of exactly its size so that any read past its end is caught
 * by AddressSanitizer.
 *
 * The seed corpus (fuzz/corpus/fuzz_pgoutput/) holds real pgoutput
 * messages, from pg_logical_slot_peek_binary_changes on a Postgres 15 with
 * the same tables and changes as tests/test_pg.py, wrapped as XLogData,
 * plus keepalives and hand-made damaged ones.
 */
#include <stdio.h>
#include <stdlib.h>

#include "source/pg_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct { uint32_t oid; int32_t typmod; int wrap; } TYPES[] = {
    {20, -1, 0}, {25, -1, 0}, {1700, (10 << 16 | 2) + 4, 0}, {16, -1, 0}, {701, -1, 0},
    {3802, -1, 0}, {2950, -1, 0}, {17, -1, 0}, {1082, -1, 0}, {1083, -1, 0}, {1114, -1, 0},
    {1184, -1, 0}, {23, -1, 1}, {25, -1, 1}, {23, -1, 2}, {1184, -1, 2}, {1186, -1, 0},
    {700, -1, 0}, {21, -1, 0}, {1700, (10 << 16 | 2) + 4, 1},
};
#define NTYPES (sizeof TYPES / sizeof TYPES[0])

typedef struct ctx {
    floe__pg_type types[NTYPES];
    floe_schema *schema;
    floe__pgo_decoder dec;
    floe__buf out, scratch;
} ctx;

static int setup(ctx *c)
{
    char cols[2048];
    size_t n = 0;
    for (size_t i = 0; i < NTYPES; i++) {
        floe__pg_type *t = &c->types[i];
        floe__pg_scalar_type(TYPES[i].oid, TYPES[i].typmod, t);
        if (TYPES[i].wrap == 1)
            floe__pg_array_of(t);
        else if (TYPES[i].wrap == 2)
            floe__pg_range_of(t);
        char decl[96];
        floe__pg_type_decl(t, decl, sizeof decl);
        n += (size_t)snprintf(cols + n, sizeof cols - n, "%sc%zu %s", i ? ", " : "", i, decl);
    }
    floe__pgo_decoder_init(&c->dec);
    floe__buf_init(&c->out, 1 << 24);
    floe__buf_init(&c->scratch, 1 << 24);
    return floe_schema_parse(cols, &c->schema, NULL);
}

static void teardown(ctx *c)
{
    floe_schema_free(c->schema);
    floe__pgo_decoder_free(&c->dec);
    floe__buf_free(&c->out);
    floe__buf_free(&c->scratch);
}

static void refused(int rc, const floe_error *e, size_t out_len)
{
    if ((rc != FLOE_EINPUT && rc != FLOE_ELIMIT && rc != FLOE_ENOMEM) ||
        !*floe_error_message(e) || out_len != 0)
        __builtin_trap();
}

/* One value as the type of its column's position. */
static void read_value(ctx *c, size_t col, const floe__pgo_value *v)
{
    if (v->kind != 't')
        return;
    size_t k = col % NTYPES;
    const floe__field *f = &c->schema->root.children[k];
    floe__buf_reset(&c->out);
    floe_error *e = floe_error_new();
    int rc = floe__pg_value_put(&c->types[k], f, v->data, v->len, &c->out, &c->scratch, e);
    if (rc == FLOE_OK) {
        const uint8_t *end = floe__datum_skip(f, c->out.data, c->out.data + c->out.len);
        if (end != c->out.data + c->out.len)
            __builtin_trap();
    } else {
        refused(rc, e, c->out.len);
    }
    floe_error_free(e);
}

static void read_tuple(ctx *c, const floe__pgo_tuple *t)
{
    for (size_t i = 0; i < t->n; i++)
        read_value(c, i, &t->vals[i]);
}

static void pgoutput(ctx *c, const uint8_t *p, size_t n)
{
    floe__pgo_msg m;
    floe_error *e = floe_error_new();
    int rc = floe__pgo_decode(&c->dec, p, n, &m, e);
    if (rc == FLOE_OK) {
        if (m.kind == 'R')
            for (size_t i = 0; i < m.ncols; i++)
                if (strlen(m.cols[i].name) > n)
                    __builtin_trap();
        if (m.old_kind)
            read_tuple(c, &m.old_tuple);
        if (m.kind == 'I' || m.kind == 'U')
            read_tuple(c, &m.new_tuple);
        for (uint32_t i = 0; m.kind == 'T' && i < m.nrels; i++)
            (void)floe__pgo_relid(&m, i);
    } else {
        refused(rc, e, 0);
    }
    floe_error_free(e);
}

static void copy_line(ctx *c, const uint8_t *p, size_t n)
{
    size_t tabs = 1;
    for (size_t i = 0; i < n; i++)
        tabs += p[i] == '\t';
    floe__pg_field *f = malloc((tabs + 1) * sizeof *f);
    if (floe__pg_copy_split((const char *)p, n, tabs, &c->scratch, f, NULL) != FLOE_OK)
        __builtin_trap();
    for (size_t i = 0; i < tabs; i++)
        if (!f[i].null)
            read_value(c, i, &(floe__pgo_value){'t', f[i].s, f[i].len});
    if (floe__pg_copy_split((const char *)p, n, tabs + 1, &c->scratch, f, NULL) == FLOE_OK)
        __builtin_trap();
    free(f);
}

static void record(ctx *c, const uint8_t *p, size_t n)
{
    floe__pg_copymsg m;
    floe_error *e = floe_error_new();
    int rc = floe__pg_copymsg_decode(p, n, &m, e);
    if (rc == FLOE_OK && m.kind == 'w')
        pgoutput(c, m.data, m.len);
    else if (rc != FLOE_OK)
        refused(rc, e, 0);
    floe_error_free(e);
    pgoutput(c, p, n);
    copy_line(c, p, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ctx c;
    if (setup(&c) != FLOE_OK)
        __builtin_trap();
    for (size_t at = 0; at + 2 <= size;) {
        size_t n = (size_t)data[at] | (size_t)data[at + 1] << 8;
        at += 2;
        if (n > size - at)
            n = size - at;
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, data + at, n);
        record(&c, copy, n);
        free(copy);
        at += n;
    }
    teardown(&c);
    return 0;
}
