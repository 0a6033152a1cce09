/*
 * fuzz_avro_read.c - arbitrary bytes into the Avro container reader: open,
 * decode every object, walk every value through the lookup API, free.
 * Corrupt input must end in an error code, never a crash, a leak, or an
 * allocation beyond the reader's limits (kept small here so fuzzing stays
 * fast: 1 MiB blocks, 64 Ki values per object).
 */
#include "avro/avro_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads every value the way manifest code would, so lookups and typed
 * reads run on whatever the decoder produced. */
static size_t walk(const floe__avro_value *v, int depth)
{
    size_t n = 1;
    int64_t l;
    double d;
    bool b;
    const char *s;
    const uint8_t *p;
    size_t len;
    (void)floe__avro_long(v, &l);
    (void)floe__avro_double(v, &d);
    (void)floe__avro_boolean(v, &b);
    if (floe__avro_string(v, &s, &len) && len != strlen(s) && memchr(s, 0, len) == NULL)
        __builtin_trap();                      /* strings are NUL-terminated */
    (void)floe__avro_bytes(v, &p, &len);
    if (v->type == FLOE_AVRO_RECORD) {
        for (size_t i = 0; i < v->n; i++) {
            const floe__avro_field *f = &v->schema->fields[i];
            if (floe__avro_get(v, f->name) == NULL)
                __builtin_trap();
            (void)floe__avro_get_id(v, f->field_id);
            n += walk(&v->u.items[i], depth + 1);
        }
    } else if (v->type == FLOE_AVRO_ARRAY) {
        for (size_t i = 0; i < v->n; i++)
            n += walk(floe__avro_item(v, i), depth + 1);
    } else if (v->type == FLOE_AVRO_MAP) {
        for (size_t i = 0; i < v->n; i++)
            n += walk(floe__avro_map_key(v, i), depth + 1) +
                 walk(floe__avro_map_value(v, i), depth + 1);
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    floe__avro_reader_options opts = {.max_block_bytes = 1u << 20, .max_values = 1u << 16};
    floe__avro_reader *r = NULL;
    floe_error *err = floe_error_new();
    if (floe__avro_reader_open(data, size, &opts, &r, err) == FLOE_OK) {
        (void)floe__avro_reader_meta(r, "schema", NULL);
        const floe__avro_value *v;
        while (floe__avro_reader_next(r, &v, err) == FLOE_OK && v)
            if (walk(v, 0) > opts.max_values)
                __builtin_trap();              /* the value limit held */
        floe__avro_reader_free(r);
    }
    floe_error_free(err);
    return 0;
}
