/*
 * fuzz_manifest_read.c - arbitrary bytes into the manifest list and
 * manifest readers (iceberg/manifest.c), then everything they produced
 * through the writers again: a parsed list is written back as a manifest
 * list and re-read, parsed entries are written back as a manifest and
 * re-read, both in memory.  Corrupt input must end in an error code, never
 * a crash, a leak or an out-of-bounds read; what the readers accept must
 * round-trip.
 */
#include "avro/avro_internal.h"
#include "iceberg/manifest_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A FileIO whose only object lives in one memory buffer. */
typedef struct mem_io {
    floe__fileio base;
    floe__buf obj;
} mem_io;

static int mem_open(floe__fileio *io, const char *uri, floe__output **out, floe_error *err)
{
    (void)uri;
    mem_io *m = (mem_io *)io;
    floe__buf_free(&m->obj);
    *out = floe__output_memory(&m->obj);
    return *out ? FLOE_OK : FLOE_OOM(err);
}

static int mem_read(floe__fileio *io, const char *uri, floe__buf *dst, floe_error *err)
{
    (void)uri;
    mem_io *m = (mem_io *)io;
    return floe__buf_append(dst, m->obj.data, m->obj.len, err);
}

static int mem_exists(floe__fileio *io, const char *uri, bool *exists, floe_error *err)
{
    (void)io, (void)uri, (void)err;
    *exists = true;
    return FLOE_OK;
}

static int mem_remove(floe__fileio *io, const char *uri, floe_error *err)
{
    (void)uri, (void)err;
    floe__buf_free(&((mem_io *)io)->obj);
    return FLOE_OK;
}

static void mem_free(floe__fileio *io) { (void)io; }

static const floe__fileio_ops MEM_OPS = {
    .name = "memory", .open_output = mem_open, .read_all = mem_read, .exists = mem_exists,
    .remove = mem_remove, .free = mem_free,
};

static void list_round_trip(mem_io *io, const floe__manifest_list *l)
{
    if (floe__manifest_list_write(&io->base, "mem://l", l, 1, -1, 1, NULL, NULL) != FLOE_OK)
        return;
    floe__manifest_list back = {0};
    if (floe__manifest_list_parse(io->obj.data, io->obj.len, &back, NULL) != FLOE_OK ||
        back.n != l->n)
        __builtin_trap();
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(back.items[i].path, l->items[i].path) != 0 ||
            back.items[i].added_rows != l->items[i].added_rows ||
            back.items[i].n_partitions != l->items[i].n_partitions)
            __builtin_trap();
    floe__manifest_list_clear(&back);
}

static void manifest_round_trip(mem_io *io, const floe__manifest_entries *e)
{
    floe__content_file *files = floe__calloc(e->n ? e->n : 1, sizeof *files);
    if (!files)
        return;
    size_t n = 0;
    for (size_t i = 0; i < e->n; i++) {
        const floe__content_file *f = &e->items[i].file;
        if (f->content == FLOE_CONTENT_EQUALITY_DELETES && f->n_equality_ids == 0)
            continue;               /* the writer refuses those, rightly */
        files[n++] = *f;            /* shallow: borrowed for the write */
    }
    json_t *schema = json_pack("{s:s, s:i, s:[]}", "type", "struct", "schema-id", 0, "fields");
    json_t *spec = json_pack("{s:i, s:[]}", "spec-id", 0, "fields");
    floe__manifest_meta m = {schema, spec, false, 5, 2};
    floe__manifest_file entry = {0};
    if (schema && spec &&
        floe__manifest_write(&io->base, "mem://m", &m, files, n, &entry, NULL) == FLOE_OK) {
        floe__manifest_entries back = {0};
        if (floe__manifest_parse(io->obj.data, io->obj.len, &back, NULL) != FLOE_OK ||
            back.n != (size_t)entry.added_files)
            __builtin_trap();
        floe__manifest_entries_clear(&back);
    }
    floe__manifest_file_clear(&entry);
    json_decref(schema);
    json_decref(spec);
    floe__free(files);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mem_io io = {.base = {&MEM_OPS}};
    floe__buf_init(&io.obj, (size_t)16 << 20);
    floe__manifest_list l = {0};
    if (floe__manifest_list_parse(data, size, &l, NULL) == FLOE_OK)
        list_round_trip(&io, &l);
    floe__manifest_list_clear(&l);
    floe__manifest_entries e = {0};
    if (floe__manifest_parse(data, size, &e, NULL) == FLOE_OK)
        manifest_round_trip(&io, &e);
    floe__manifest_entries_clear(&e);
    floe__buf_free(&io.obj);
    return 0;
}
