/*
 * test_abi.c - the public structs can grow (include/floe.h, "Growing";
 * docs/api.md): a program built against an older, smaller struct, or a
 * newer, larger one, works with this library.  Only floe.h is used.
 *
 * An older program's struct is simulated by a heap block of exactly the
 * bytes its header had (an offsetof into today's struct): under ASan, a
 * library that read or wrote one byte past it fails here.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "floe.h"
#include "unit.h"

static char tmp_root[256];

/* An older header's struct: the first `size` bytes of today's. */
static void *older(size_t size)
{
    void *p = malloc(size);
    if (!p) {
        perror("malloc");
        exit(2);
    }
    memset(p, 0xa5, size);               /* what the program's stack held */
    return p;
}

TEST(an_older_program_s_smaller_structs_work_and_get_the_defaults)
{
    char catalog[400], warehouse[400];
    snprintf(catalog, sizeof catalog, "sqlite:%s/old.db", tmp_root);
    snprintf(warehouse, sizeof warehouse, "%s/old-wh", tmp_root);
    floe_error *err = floe_error_new();

    /* a header from before must_exist, and one from before maintain_final_ms */
    size_t connect_size = offsetof(floe_connect_options, must_exist);
    floe_connect_options *co = older(connect_size);
    floe_connect_options_init(co, connect_size);
    CHECK_EQ_INT(co->size, connect_size);
    CHECK_EQ_INT(co->s3_path_style, -1);          /* the defaults, in its bytes */
    CHECK(co->catalog == NULL);
    co->catalog = catalog;
    co->warehouse = warehouse;
    size_t sink_size = offsetof(floe_sink_options, maintain_final_ms);
    floe_sink_options *o = older(sink_size);
    floe_sink_options_init(o, sink_size);
    CHECK_EQ_INT(o->commit_interval, 10000);
    o->table = "ns.old";
    o->schema = "id bigint not null, v text";
    o->key = "id";
    o->connect = co;
    o->commit_interval = 1;
    o->index_dir = "";
    o->maintain = FLOE_MAINTAIN_OFF;

    floe_sink *sink = NULL;
    int rc = floe_sink_open(o, &sink, err);
    CHECK_EQ_INT(rc, FLOE_OK);
    if (rc != FLOE_OK) {
        fprintf(stderr, "open: %s\n", floe_error_message(err));
        goto done;
    }
    floe_row *row = NULL;
    CHECK_EQ_INT(floe_row_new(floe_sink_row_schema(sink), &row, err), FLOE_OK);
    for (int t = 0; t < 3; t++) {
        char json[64];
        snprintf(json, sizeof json, "{\"id\": %d, \"v\": \"at %d\"}", t, t);
        CHECK_EQ_INT(floe_row_set_json(row, json, strlen(json), err), FLOE_OK);
        CHECK_EQ_INT(floe_sink_push(sink, row, (uint64_t)t, 1, err), FLOE_OK);
        CHECK_EQ_INT(floe_sink_advance(sink, (uint64_t)t + 1, err), FLOE_OK);
    }
    floe_row_free(row);

    /* an older floe_sink_stats: the fields up to updates_stashed only */
    size_t stats_size = offsetof(floe_sink_stats, snapshots_committed);
    floe_sink_stats *st = older(stats_size);
    floe_sink_stats_get(sink, st, stats_size);
    CHECK_EQ_INT(st->size, stats_size);
    CHECK_EQ_INT(st->updates_in, 3);
    CHECK(FLOE_HAS_FIELD(floe_sink_stats, st, updates_stashed));
    CHECK(!FLOE_HAS_FIELD(floe_sink_stats, st, snapshots_committed));
    free(st);
    floe_sink_free(sink);

    /* what landed, read through older snapshot and progress structs */
    floe_catalog *cat = NULL;
    floe_table *table = NULL;
    CHECK_EQ_INT(floe_catalog_open(co, &cat, err), FLOE_OK);
    CHECK_EQ_INT(floe_table_open(cat, "ns.old", NULL, NULL, &table, err), FLOE_OK);
    size_t n = table ? floe_table_snapshot_count(table) : 0;
    CHECK_EQ_INT(n, 3);
    size_t info_size = offsetof(floe_snapshot_info, operation);
    floe_snapshot_info *info = older(info_size);
    for (size_t i = 0; table && i < n; i++) {
        CHECK_EQ_INT(floe_table_snapshot(table, i, info, info_size, err), FLOE_OK);
        CHECK_EQ_INT(info->size, info_size);
        CHECK(info->snapshot_id > 0);
        CHECK_EQ_INT(info->sequence_number, (int64_t)i + 1);
    }
    free(info);
    size_t progress_size = offsetof(floe_sink_progress, snapshot_id);
    floe_sink_progress *p = older(progress_size);
    CHECK_EQ_INT(floe_table_sink_progress(table, "ns.old", p, progress_size, err), FLOE_OK);
    CHECK_EQ_INT(p->state, FLOE_PROGRESS_FOUND);
    CHECK_EQ_STR(p->frontier, "[3]");
    free(p);
    floe_table_free(table);
    floe_catalog_free(cat);
done:
    free(o);
    free(co);
    floe_error_free(err);
}

/* floe_parquet_options as a header declared it before `dictionary` was
 * added: a copy of that declaration, as an older program has it compiled
 * in (on its stack: ASan's redzones catch a byte past it). */
typedef struct parquet_options_before_dictionary {
    size_t size;
    floe_compression compression;
    int compression_level;
    size_t page_size;
    size_t row_group_size;
    size_t dictionary_limit;
} parquet_options_before_dictionary;

TEST(an_older_declaration_compiled_in_still_works)
{
    _Static_assert(sizeof(parquet_options_before_dictionary) <= sizeof(floe_parquet_options),
                   "an older declaration is a prefix");
    parquet_options_before_dictionary old;
    floe_parquet_options_init((floe_parquet_options *)&old, sizeof old);
    CHECK_EQ_INT(old.size, sizeof old);
    CHECK_EQ_INT(old.compression, FLOE_COMPRESSION_ZSTD);
    CHECK_EQ_INT(old.page_size, (size_t)1 << 20);
    old.compression = FLOE_COMPRESSION_SNAPPY;
    old.row_group_size = 4096;

    floe_error *err = floe_error_new();
    floe_schema *schema = NULL;
    floe_row *row = NULL;
    CHECK_EQ_INT(floe_schema_parse("id bigint, v text", &schema, err), FLOE_OK);
    CHECK_EQ_INT(floe_row_new(schema, &row, err), FLOE_OK);
    char path[400];
    snprintf(path, sizeof path, "%s/older.parquet", tmp_root);
    floe_parquet_writer *w = NULL;
    CHECK_EQ_INT(floe_parquet_writer_open(schema, path, (const floe_parquet_options *)&old, &w,
                                          err), FLOE_OK);
    for (int i = 0; w && i < 1000; i++) {
        char json[64];
        snprintf(json, sizeof json, "{\"id\": %d, \"v\": \"row %d\"}", i, i % 10);
        CHECK_EQ_INT(floe_row_set_json(row, json, strlen(json), err), FLOE_OK);
        CHECK_EQ_INT(floe_parquet_writer_write(w, row, err), FLOE_OK);
    }
    CHECK_EQ_INT(w ? floe_parquet_writer_rows(w) : 0, 1000);
    uint64_t size = 0;
    CHECK_EQ_INT(floe_parquet_writer_close(w, &size, err), FLOE_OK);
    CHECK(size > 0);
    floe_row_free(row);
    floe_schema_free(schema);
    floe_error_free(err);
}

/* A program built against a newer header: its larger struct works while
 * the fields this library does not know are left zero, and is refused,
 * saying why, once it sets one.  Structs the library fills are zeroed
 * past what it knows. */
TEST(a_newer_program_s_larger_structs_work_until_they_set_an_unknown_field)
{
    struct {
        floe_parquet_options o;
        uint64_t added_later;
    } newer;
    memset(&newer, 0xa5, sizeof newer);
    floe_parquet_options_init(&newer.o, sizeof newer);
    CHECK_EQ_INT(newer.o.size, sizeof newer);
    CHECK_EQ_INT(newer.added_later, 0);                /* init zeroes what it does not know */
    CHECK_EQ_INT(newer.o.compression, FLOE_COMPRESSION_ZSTD);

    floe_schema *schema = NULL;
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(floe_schema_parse("id bigint", &schema, err), FLOE_OK);
    char path[400];
    snprintf(path, sizeof path, "%s/newer.parquet", tmp_root);
    floe_parquet_writer *w = NULL;
    CHECK_EQ_INT(floe_parquet_writer_open(schema, path, &newer.o, &w, err), FLOE_OK);
    floe_parquet_writer_abort(w);

    newer.added_later = 1;
    w = NULL;
    CHECK_EQ_INT(floe_parquet_writer_open(schema, path, &newer.o, &w, err), FLOE_EUNSUPPORTED);
    CHECK(w == NULL);
    CHECK(strstr(floe_error_message(err), "floe_parquet_options") != NULL);
    CHECK(strstr(floe_error_message(err), "needs a newer libfloe") != NULL);
    floe_schema_free(schema);

    /* nested: a newer connect struct behind a sink's options */
    struct {
        floe_connect_options c;
        uint64_t added_later;
    } where;
    floe_connect_options_init(&where.c, sizeof where);
    where.added_later = 7;
    floe_sink_options so;
    floe_sink_options_init(&so, sizeof so);
    so.table = "ns.never";
    so.connect = &where.c;
    floe_sink *sink = NULL;
    CHECK_EQ_INT(floe_sink_open(&so, &sink, err), FLOE_EUNSUPPORTED);
    CHECK(strstr(floe_error_message(err), "floe_connect_options") != NULL);
    CHECK(sink == NULL);

    struct {
        floe_maintain_report r;
        uint64_t added_later;
    } report;
    memset(&report, 0xa5, sizeof report);
    floe_maintain_options mo;
    floe_maintain_options_init(&mo, sizeof mo);
    char catalog[400], warehouse[400];
    snprintf(catalog, sizeof catalog, "sqlite:%s/newer.db", tmp_root);
    snprintf(warehouse, sizeof warehouse, "%s/newer-wh", tmp_root);
    floe_connect_options c;
    floe_connect_options_init(&c, sizeof c);
    c.catalog = catalog;
    c.warehouse = warehouse;
    floe_catalog *cat = NULL;
    floe_table *t = NULL;
    CHECK_EQ_INT(floe_schema_parse("id bigint", &schema, err), FLOE_OK);
    CHECK_EQ_INT(floe_catalog_open(&c, &cat, err), FLOE_OK);
    CHECK_EQ_INT(floe_table_open(cat, "ns.m", schema, NULL, &t, err), FLOE_OK);
    mo.expire = 1;
    CHECK_EQ_INT(floe_table_maintain(t, &mo, &report.r, sizeof report, err), FLOE_OK);
    CHECK_EQ_INT(report.r.size, sizeof report.r);       /* the bytes it filled */
    CHECK_EQ_INT(report.added_later, 0);
    CHECK_EQ_INT(report.r.snapshots_expired, 0);
    floe_table_free(t);
    floe_catalog_free(cat);
    floe_schema_free(schema);
    floe_error_free(err);
}

/* A struct never set up by its _init is refused, naming the struct and
 * the call that sets it up. */
TEST(options_never_set_up_are_refused)
{
    floe_error *err = floe_error_new();
    floe_connect_options c;
    memset(&c, 0, sizeof c);
    floe_catalog *cat = NULL;
    CHECK_EQ_INT(floe_catalog_open(&c, &cat, err), FLOE_EINVAL);
    CHECK(cat == NULL);
    CHECK(strstr(floe_error_message(err), "floe_connect_options was not set up by its "
                                          "_init(&o, sizeof o)") != NULL);
    floe_error_free(err);
}

int main(void)
{
    unit_make_tmp(tmp_root, sizeof tmp_root, "abi");
    RUN(an_older_program_s_smaller_structs_work_and_get_the_defaults);
    RUN(an_older_declaration_compiled_in_still_works);
    RUN(a_newer_program_s_larger_structs_work_until_they_set_an_unknown_field);
    RUN(options_never_set_up_are_refused);
    unit_remove_tmp(tmp_root);
    return UNIT_DONE();
}
