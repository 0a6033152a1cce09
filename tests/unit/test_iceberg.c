/*
 * test_iceberg.c - the table layer: schema compatibility and declared-type
 * carry-over, projections, rolling file writers, position delete sorting,
 * manifests and manifest lists (written, then read back by floe's readers,
 * including corrupt and v1-shaped input), commits (summaries and totals,
 * conflicts and what they leave on disk, refusals), the public table API,
 * and out-of-memory walks through manifests and commits.
 * (Peer checks against pyiceberg, DuckDB and Java live in
 * tests/test_iceberg_*.py.)
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "avro/avro_internal.h"
#include "table/table_internal.h"
#include "source/source_internal.h"
#include "iceberg/partition_internal.h"
#include "unit.h"

static char tmp_root[256];

static void make_tmp(void)
{
    unit_make_tmp(tmp_root, sizeof tmp_root, "iceberg");
}

static void remove_tmp(void)
{
    unit_remove_tmp(tmp_root);
}

/* Files in `dir` whose name contains `part` (all when NULL). */
static int count_files(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.' && (!part || strstr(e->d_name, part));
    closedir(d);
    return n;
}

static floe__schema *S(const char *cols)
{
    floe__schema *s = NULL;
    if (floe_schema_parse(cols, &s, NULL) != FLOE_OK)
        fprintf(stderr, "bad test schema: %s\n", cols);
    return s;
}

static floe__schema *SJ(const char *json)
{
    floe__schema *s = NULL;
    if (floe__schema_from_json(json, strlen(json), &s, NULL) != FLOE_OK)
        fprintf(stderr, "bad test schema JSON: %s\n", json);
    return s;
}

/* A test environment: a SQLite catalog and FileIO under a fresh directory. */
typedef struct env {
    char dir[320];
    floe__fileio *io;
    floe__catalog *cat;
    floe_error *err;
} env;

static int env_open(env *e, const char *name)
{
    memset(e, 0, sizeof *e);
    snprintf(e->dir, sizeof e->dir, "%s/%s", tmp_root, name);
    char uri[400], wh[400];
    snprintf(uri, sizeof uri, "sqlite:%s/catalog.db", e->dir);
    snprintf(wh, sizeof wh, "file://%s/wh", e->dir);
    e->err = floe_error_new();
    int rc = floe__fileio_local_new(&e->io, e->err);
    if (rc == FLOE_OK)
        rc = floe__catalog_sql_open(uri, "floe", wh, e->io, &e->cat, e->err);
    return rc;
}

static void env_close(env *e)
{
    floe__catalog_free(e->cat);
    floe__fileio_free(e->io);
    floe_error_free(e->err);
}

static const char *env_path(const env *e, const char *sub)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", e->dir, sub);
    return buf;
}

/* Parse one JSON row of s into `row`. */
static int row_of(const floe__schema *s, const char *json, floe__buf *row, floe_error *err)
{
    floe__buf_reset(row);
    const char *end;
    return floe__json_parse_row(s, json, json + strlen(json), &end, row, err);
}

/* Write JSON rows into one data file list through a fresh writer. */
static int write_rows(floe__table *t, const char *const *rows, size_t n,
                      const floe__file_writer_options *o, floe__content_list *out)
{
    floe__file_writer *w;
    int rc = floe__file_writer_new(t, FLOE_CONTENT_DATA, t->schema, NULL, 0, o, &w, NULL);
    if (rc != FLOE_OK)
        return rc;
    floe__buf row;
    floe__buf_init(&row, 0);
    for (size_t i = 0; rc == FLOE_OK && i < n; i++) {
        rc = row_of(t->schema, rows[i], &row, NULL);
        if (rc == FLOE_OK)
            rc = floe__file_writer_write(w, row.data, row.len, NULL, NULL, NULL);
    }
    floe__buf_free(&row);
    if (rc != FLOE_OK) {
        floe__file_writer_abort(w);
        return rc;
    }
    return floe__file_writer_close(w, out, NULL);
}

/* ---- compatibility -------------------------------------------------------------------- */

static int compat(const char *declared, const char *table_json, char *msg, size_t cap)
{
    floe__schema *d = S(declared), *t = SJ(table_json);
    floe_error *err = floe_error_new();
    int rc = d && t ? floe__schema_compatible(d, t, err) : -1;
    snprintf(msg, cap, "%s", floe_error_message(err));
    floe_error_free(err);
    floe_schema_free(d);
    floe_schema_free(t);
    return rc;
}

#define TBL(fields) "{\"type\":\"struct\",\"fields\":[" fields "]}"
#define F(id, name, req, type) \
    "{\"id\":" #id ",\"name\":\"" name "\",\"required\":" #req ",\"type\":" type "}"

TEST(compatible_ignores_field_ids)
{
    char msg[4096];
    /* breadth-first ids: addr=2, tags=3, street=4, zip=5, element=6 */
    const char *t = TBL(F(1, "id", true, "\"long\"") ","
                        F(2, "addr", false, "{\"type\":\"struct\",\"fields\":["
                          F(4, "street", false, "\"string\"") ","
                          F(5, "zip", true, "\"int\"") "]}") ","
                        F(3, "tags", false, "{\"type\":\"list\",\"element-id\":6,"
                          "\"element\":\"string\",\"element-required\":false}") ","
                        F(7, "m", false, "{\"type\":\"map\",\"key-id\":8,\"key\":\"string\","
                          "\"value-id\":9,\"value\":\"decimal(20, 0)\",\"value-required\":true}"));
    CHECK_EQ_INT(compat("id bigint not null, addr record(street text, zip integer not null), "
                        "tags text[], m map[text=>uint8 not null]", t, msg, sizeof msg), FLOE_OK);
    CHECK_EQ_INT(compat("id bigint not null, addr record(street text, zip integer not null), "
                        "tags text[], m map[text=>uint8]", t, msg, sizeof msg),
                 FLOE_EINCOMPATIBLE);
    CHECK(strstr(msg, "column \"m.value\": declared nullable") != NULL);
    CHECK(strstr(msg, "declared: id bigint not null, addr record(street text, zip integer not "
                      "null), tags text[], m map[text=>uint8]") != NULL);
    CHECK(strstr(msg, "table: id: long not null, addr: struct<street: string, zip: int not "
                      "null>, tags: list<string>, m: map<string, decimal(20,0) not null>") != NULL);
}

TEST(incompatible_names_the_first_difference)
{
    char msg[4096];
    const char *t = TBL(F(1, "id", true, "\"long\"") "," F(2, "p", false, "\"decimal(12, 2)\"") ","
                        F(3, "r", false, "{\"type\":\"struct\",\"fields\":["
                          F(4, "a", false, "\"int\"") "]}"));
    struct {
        const char *decl, *where;
    } cases[] = {
        {"id integer not null, p numeric(12,2), r record(a integer)", "column \"id\": declared type int"},
        {"id bigint not null, p numeric(12,3), r record(a integer)", "decimal(12,3), the table has decimal(12,2)"},
        {"id bigint not null, p numeric(11,2), r record(a integer)", "column \"p\""},
        {"id bigint not null, p numeric(12,2), r record(b integer)", "declared column \"b\", the table has \"a\""},
        {"id bigint not null, p numeric(12,2), r record(a integer, b text)", "column \"r.b\": declared, but"},
        {"id bigint not null, p numeric(12,2)", "column \"r\": the table has this column"},
        {"id bigint not null, p numeric(12,2), r record(a integer not null)", "column \"r.a\": declared not null"},
        {"id bigint not null, p numeric(12,2), r integer[]", "declared type list<int>, the table has struct<a: int>"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_EQ_INT(compat(cases[i].decl, t, msg, sizeof msg), FLOE_EINCOMPATIBLE);
        if (!strstr(msg, cases[i].where)) {
            fprintf(stderr, "case %zu: %s\n", i, msg);
            CHECK(0);
        }
    }
}

TEST(uuid_alternatives)
{
    char msg[2048];
    const char *fixed = TBL(F(1, "u", false, "\"fixed[16]\""));
    const char *uuid = TBL(F(1, "u", false, "\"uuid\""));
    const char *fixed8 = TBL(F(1, "u", false, "\"fixed[8]\""));
    CHECK_EQ_INT(compat("u uuid", fixed, msg, sizeof msg), FLOE_OK);
    CHECK_EQ_INT(compat("u uuid", uuid, msg, sizeof msg), FLOE_OK);
    CHECK_EQ_INT(compat("u text", uuid, msg, sizeof msg), FLOE_OK);
    CHECK_EQ_INT(compat("u jsonb", fixed, msg, sizeof msg), FLOE_EINCOMPATIBLE);
    CHECK_EQ_INT(compat("u uuid", fixed8, msg, sizeof msg), FLOE_EINCOMPATIBLE);
    CHECK_EQ_INT(compat("u bytea", fixed, msg, sizeof msg), FLOE_EINCOMPATIBLE);
}

TEST(project_keeps_ids)
{
    floe__schema *s = SJ(TBL(F(3, "a", true, "\"long\"") "," F(1, "b", false, "\"string\"") ","
                             F(7, "c", false, "{\"type\":\"list\",\"element-id\":9,"
                               "\"element\":\"int\",\"element-required\":true}")));
    floe__schema *p = NULL;
    const char *names[] = {"c", "a"};
    CHECK_EQ_INT(floe__schema_project(s, names, 2, &p, NULL), FLOE_OK);
    if (p) {
        CHECK_EQ_INT(p->root.n_children, 2);
        CHECK_EQ_STR(p->root.children[0].name, "c");
        CHECK_EQ_INT(p->root.children[0].id, 7);
        CHECK_EQ_INT(p->root.children[0].children[0].id, 9);
        CHECK_EQ_INT(p->root.children[1].id, 3);
        CHECK_EQ_INT(p->highest_id, 9);
    }
    floe_schema_free(p);
    floe_error *err = floe_error_new();
    const char *bad[] = {"a", "zz"}, *twice[] = {"a", "a"};
    CHECK_EQ_INT(floe__schema_project(s, bad, 2, &p, err), FLOE_EINVAL);
    CHECK(strstr(floe_error_message(err), "\"zz\"") != NULL);
    CHECK_EQ_INT(floe__schema_project(s, twice, 2, &p, err), FLOE_EINVAL);
    CHECK_EQ_INT(floe__schema_project(s, names, 0, &p, err), FLOE_EINVAL);
    floe_error_free(err);
    floe_schema_free(s);
}

/* ---- tables and writers ------------------------------------------------------------------- */

static floe__table *open_t(env *e, const char *name, const char *cols, const char *props)
{
    floe__schema *d = cols ? S(cols) : NULL;
    json_t *p = props ? json_loads(props, 0, NULL) : NULL;
    floe__table *t = NULL;
    int rc = floe__table_open(e->cat, e->io, "db", name, d, p, &t, e->err);
    if (rc != FLOE_OK)
        fprintf(stderr, "open %s: %s\n", name, floe_error_message(e->err));
    json_decref(p);
    floe_schema_free(d);
    return t;
}

TEST(open_creates_and_carries_declared_types)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "open"), FLOE_OK);
    floe__table *t = open_t(&e, "t", "id uint2 not null, j jsonb", "{\"write.data.path\": "
                            "\"file:///somewhere/else//\"}");
    CHECK(t != NULL);
    if (t) {
        CHECK_EQ_STR(t->data_location, "file:///somewhere/else");
        CHECK_EQ_INT(t->schema->root.children[0].decl, FLOE_D_UINT2);
        CHECK_EQ_INT(t->schema->root.children[1].decl, FLOE_D_JSONB);
        floe__buf row;
        floe__buf_init(&row, 0);
        /* uint2 accepts 65535 (an Iceberg int), jsonb takes any JSON value */
        CHECK_EQ_INT(row_of(t->schema, "{\"id\": 65535, \"j\": {\"a\": [1]}}", &row, NULL),
                     FLOE_OK);
        CHECK_EQ_INT(row_of(t->schema, "{\"id\": 65536}", &row, NULL), FLOE_EINPUT);
        floe__buf_free(&row);
    }
    floe__table_free(t);
    /* reopened without a declaration: the table's own schema, decl none */
    t = open_t(&e, "t", NULL, NULL);
    CHECK(t && t->schema->root.children[0].decl == FLOE_D_NONE);
    CHECK(t && t->schema_id == 0 && t->spec_id == 0);
    floe__table_free(t);
    floe__table *missing = NULL;
    CHECK_EQ_INT(floe__table_open(e.cat, e.io, "db", "nope", NULL, NULL, &missing, e.err),
                 FLOE_ENOTFOUND);
    floe__schema *other = S("id bigint");
    CHECK_EQ_INT(floe__table_open(e.cat, e.io, "db", "t", other, NULL, &missing, e.err),
                 FLOE_EINCOMPATIBLE);
    floe_schema_free(other);
    env_close(&e);
}

TEST(file_writer_rolls_names_and_aborts)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "roll"), FLOE_OK);
    floe__table *t = open_t(&e, "t", "id bigint not null, s text", NULL);
    if (!t) {
        env_close(&e);
        return;
    }
    floe__file_writer_options o = {.target_file_size = 1, .prefix = "part"};
    floe_parquet_options_init(&o.parquet, sizeof o.parquet);
    floe__file_writer *w = NULL;
    CHECK_EQ_INT(floe__file_writer_new(t, FLOE_CONTENT_DATA, t->schema, NULL, 0, &o, &w, NULL),
                 FLOE_OK);
    floe__buf row;
    floe__buf_init(&row, 0);
    const char *paths[3];
    uint64_t pos = 99;
    for (int i = 0; i < 3 && w; i++) {
        char json[64];
        snprintf(json, sizeof json, "{\"id\": %d}", i);
        row_of(t->schema, json, &row, NULL);
        CHECK_EQ_INT(floe__file_writer_write(w, row.data, row.len, &paths[i], &pos, NULL),
                     FLOE_OK);
        CHECK_EQ_INT(pos, 0);                 /* each row its own file */
    }
    /* a bad row is refused and leaves the writer usable */
    uint8_t junk[3] = {1, 2, 3};
    CHECK_EQ_INT(floe__file_writer_write(w, junk, 3, NULL, NULL, NULL), FLOE_EINPUT);
    CHECK(strstr(paths[0], "/wh/db/t/data/part-") != NULL);
    CHECK(floe__str_ends(paths[0], "-00001.parquet") && floe__str_ends(paths[2], "-00003.parquet"));
    CHECK(strncmp(paths[0], paths[2], strlen(paths[0]) - 14) == 0);  /* one uuid per writer */
    CHECK_EQ_INT(count_files(env_path(&e, "wh/db/t/data"), "part-"), 3);
    floe__content_list files = {0};
    CHECK_EQ_INT(floe__file_writer_close(w, &files, NULL), FLOE_OK);
    CHECK_EQ_INT(files.n, 3);
    for (size_t i = 0; i < files.n; i++) {
        CHECK_EQ_INT(files.files[i].metrics.record_count, 1);
        CHECK_EQ_INT(files.files[i].content, FLOE_CONTENT_DATA);
    }
    /* abort removes everything a writer wrote; an empty writer writes nothing */
    CHECK_EQ_INT(floe__file_writer_new(t, FLOE_CONTENT_DATA, t->schema, NULL, 0, &o, &w, NULL),
                 FLOE_OK);
    row_of(t->schema, "{\"id\": 7}", &row, NULL);
    floe__file_writer_write(w, row.data, row.len, NULL, NULL, NULL);
    floe__file_writer_write(w, row.data, row.len, NULL, NULL, NULL);
    CHECK_EQ_INT(count_files(env_path(&e, "wh/db/t/data"), "part-"), 5);
    floe__file_writer_abort(w);
    CHECK_EQ_INT(count_files(env_path(&e, "wh/db/t/data"), "part-"), 3);
    CHECK_EQ_INT(floe__file_writer_new(t, FLOE_CONTENT_DATA, t->schema, NULL, 0, NULL, &w, NULL),
                 FLOE_OK);
    CHECK_EQ_INT(floe__file_writer_close(w, &files, NULL), FLOE_OK);
    CHECK_EQ_INT(files.n, 3);
    /* equality deletes need primitive key columns that are in the file */
    int32_t ids[] = {2};
    CHECK_EQ_INT(floe__file_writer_new(t, FLOE_CONTENT_EQUALITY_DELETES, t->schema, NULL, 0, NULL,
                                       &w, NULL), FLOE_EINVAL);
    int32_t missing[] = {42};
    CHECK_EQ_INT(floe__file_writer_new(t, FLOE_CONTENT_EQUALITY_DELETES, t->schema, missing, 1,
                                       NULL, &w, NULL), FLOE_EINVAL);
    CHECK_EQ_INT(floe__file_writer_new(t, FLOE_CONTENT_EQUALITY_DELETES, t->schema, ids, 1, NULL,
                                       &w, NULL), FLOE_OK);
    floe__file_writer_abort(w);
    floe__buf_free(&row);
    floe__content_list_clear(&files);
    floe__table_free(t);
    env_close(&e);
}

TEST(position_deletes_sorted_and_bounded)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "posdel"), FLOE_OK);
    floe__table *t = open_t(&e, "t", "id bigint not null", NULL);
    if (!t) {
        env_close(&e);
        return;
    }
    floe__posdel_writer *w = NULL;
    CHECK_EQ_INT(floe__posdel_writer_new(t, NULL, &w, NULL), FLOE_OK);
    /* 3000 deletes over 40 paths in scrambled order, with duplicates */
    char path[64];
    uint64_t seen = 0;
    for (int i = 0; i < 3000; i++) {
        int j = i % 1500;                     /* every pair twice */
        snprintf(path, sizeof path, "file:///data/f-%02d.parquet", (j * 7919) % 40);
        CHECK_EQ_INT(floe__posdel_add(w, path, (uint64_t)((j * 104729) % 1500), NULL), FLOE_OK);
        seen++;
    }
    CHECK_EQ_INT(floe__posdel_count(w), seen);
    CHECK_EQ_INT(floe__posdel_add(w, "", 1, NULL), FLOE_EINVAL);
    floe__content_list files = {0};
    CHECK_EQ_INT(floe__posdel_writer_close(w, &files, NULL), FLOE_OK);
    CHECK_EQ_INT(files.n, 1);
    if (files.n == 1) {
        floe__file_metrics *m = &files.files[0].metrics;
        CHECK_EQ_INT(files.files[0].content, FLOE_CONTENT_POSITION_DELETES);
        CHECK_EQ_INT(m->record_count, 1500);  /* duplicates dropped */
        CHECK_EQ_INT(m->n_columns, 2);
        CHECK_EQ_INT(m->columns[0].field_id, 2147483546);
        CHECK_EQ_INT(m->columns[1].field_id, 2147483545);
        const char *lo = "file:///data/f-00.parquet", *hi = "file:///data/f-39.parquet";
        CHECK(m->columns[0].lower.len == strlen(lo) &&
              memcmp(m->columns[0].lower.data, lo, strlen(lo)) == 0);
        CHECK(m->columns[0].upper.len == strlen(hi) &&
              memcmp(m->columns[0].upper.data, hi, strlen(hi)) == 0);
        CHECK_EQ_INT(floe__get_le64(m->columns[1].lower.data), 0);
        CHECK_EQ_INT(floe__get_le64(m->columns[1].upper.data), 1499);
    }
    /* an empty position delete writer writes no file */
    CHECK_EQ_INT(floe__posdel_writer_new(t, NULL, &w, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__posdel_writer_close(w, &files, NULL), FLOE_OK);
    CHECK_EQ_INT(files.n, 1);
    floe__content_list_clear(&files);
    floe__table_free(t);
    env_close(&e);
}

/* ---- manifests ------------------------------------------------------------------------------- */

static void fake_file(floe__content_file *f, floe__content c, const char *path, uint64_t rows)
{
    memset(f, 0, sizeof *f);
    f->content = c;
    f->path = floe__strdup(path);
    f->metrics.record_count = rows;
    f->metrics.file_size = 1000 + rows;
    f->metrics.n_columns = 2;
    f->metrics.columns = floe__calloc(2, sizeof(floe__col_metrics));
    floe__col_metrics *a = &f->metrics.columns[0], *b = &f->metrics.columns[1];
    a->field_id = 1;
    a->column_size = 10;
    a->has_counts = true;
    a->value_count = rows;
    a->null_count = 1;
    a->has_lower = a->has_upper = true;
    floe__buf_init(&a->lower, 0);
    floe__buf_init(&a->upper, 0);
    floe__buf_append(&a->lower, "\x01\0\0\0\0\0\0\0", 8, NULL);
    floe__buf_append(&a->upper, "\x09\0\0\0\0\0\0\0", 8, NULL);
    b->field_id = 5;
    b->column_size = 20;
    b->has_nan_count = true;
    b->nan_count = 3;
    f->metrics.n_splits = 2;
    f->metrics.split_offsets = floe__malloc(2 * sizeof(uint64_t));
    f->metrics.split_offsets[0] = 4;
    f->metrics.split_offsets[1] = 500;
    if (c == FLOE_CONTENT_EQUALITY_DELETES) {
        f->equality_ids = floe__malloc(2 * sizeof(int32_t));
        f->equality_ids[0] = 1;
        f->equality_ids[1] = 5;
        f->n_equality_ids = 2;
    }
}

static int read_file(floe__fileio *io, const char *uri, floe__buf *b)
{
    floe__buf_init(b, 0);
    return floe__fileio_read_all(io, uri, b, NULL);
}

TEST(manifest_round_trip)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "manifest"), FLOE_OK);
    floe__content_file files[3];
    fake_file(&files[0], FLOE_CONTENT_DATA, "file:///d/a.parquet", 10);
    fake_file(&files[1], FLOE_CONTENT_EQUALITY_DELETES, "file:///d/eq.parquet", 4);
    fake_file(&files[2], FLOE_CONTENT_DATA, "file:///d/b.parquet", 5);
    files[2].has_sort_order_id = true;          /* Java's rewrites set it: an Avro int */
    files[2].sort_order_id = 7;
    json_t *schema = json_loads(TBL(F(1, "id", true, "\"long\"") "," F(5, "x", false, "\"double\"")),
                                0, NULL);
    json_object_set_new(schema, "schema-id", json_integer(3));
    json_t *spec = json_loads("{\"spec-id\": 0, \"fields\": []}", 0, NULL);
    floe__manifest_meta m = {schema, spec, false, 77, 5};
    char uri[512];
    snprintf(uri, sizeof uri, "file://%s/m0.avro", e.dir);
    floe__manifest_file entry = {0};
    CHECK_EQ_INT(floe__manifest_write(e.io, uri, &m, files, 3, &entry, e.err), FLOE_OK);
    CHECK_EQ_STR(entry.path, uri);
    CHECK_EQ_INT(entry.added_files, 2);
    CHECK_EQ_INT(entry.added_rows, 15);
    CHECK_EQ_INT(entry.sequence_number, 5);
    CHECK_EQ_INT(entry.min_sequence_number, 5);
    CHECK_EQ_INT(entry.added_snapshot_id, 77);
    CHECK_EQ_INT(entry.content, 0);
    floe__buf data;
    CHECK_EQ_INT(read_file(e.io, uri, &data), FLOE_OK);
    CHECK_EQ_INT(entry.length, data.len);
    floe__manifest_entries es = {0};
    CHECK_EQ_INT(floe__manifest_parse(data.data, data.len, &es, e.err), FLOE_OK);
    CHECK_EQ_INT(es.n, 2);
    CHECK_EQ_STR(es.content, "data");
    if (es.n == 2) {
        floe__manifest_entry *x = &es.items[1];
        CHECK_EQ_INT(x->status, 1);
        CHECK(x->has_snapshot_id && x->snapshot_id == 77);
        CHECK(!x->has_sequence_number && !x->has_file_sequence_number);
        CHECK_EQ_STR(x->file.path, "file:///d/b.parquet");
        CHECK_EQ_STR(x->file_format, "PARQUET");
        CHECK_EQ_INT(x->file.metrics.record_count, 5);
        CHECK_EQ_INT(x->file.metrics.file_size, 1005);
        CHECK_EQ_INT(x->file.metrics.n_columns, 2);
        CHECK_EQ_INT(x->file.metrics.columns[0].value_count, 5);
        CHECK_EQ_INT(x->file.metrics.columns[0].null_count, 1);
        CHECK_EQ_INT(x->file.metrics.columns[0].lower.data[0], 1);
        CHECK_EQ_INT(x->file.metrics.columns[0].upper.data[0], 9);
        CHECK(!x->file.metrics.columns[1].has_counts && x->file.metrics.columns[1].has_nan_count);
        CHECK_EQ_INT(x->file.metrics.columns[1].nan_count, 3);
        CHECK_EQ_INT(x->file.metrics.columns[1].column_size, 20);
        CHECK_EQ_INT(x->file.metrics.n_splits, 2);
        CHECK_EQ_INT(x->file.metrics.split_offsets[1], 500);
        CHECK_EQ_INT(x->file.n_equality_ids, 0);
        CHECK(x->file.has_sort_order_id && x->file.sort_order_id == 7);
        CHECK(!es.items[0].file.has_sort_order_id);
    }
    floe__manifest_entries_clear(&es);
    floe__avro_reader *ar = NULL;
    CHECK_EQ_INT(floe__avro_reader_open(data.data, data.len, NULL, &ar, NULL), FLOE_OK);
    if (ar) {
        CHECK_EQ_STR(floe__avro_reader_meta(ar, "schema-id", NULL), "3");
        CHECK_EQ_STR(floe__avro_reader_meta(ar, "partition-spec", NULL), "[]");
        CHECK_EQ_STR(floe__avro_reader_meta(ar, "format-version", NULL), "2");
        CHECK(floe__avro_reader_codec(ar) == FLOE_AVRO_CODEC_DEFLATE);
        const char *sj = floe__avro_reader_meta(ar, "schema", NULL);
        CHECK(sj && strstr(sj, "\"name\":\"x\"") != NULL);
    }
    floe__avro_reader_free(ar);
    /* every truncation of the file is an error (or an empty manifest when
     * cut right after the header), never a crash */
    for (size_t cut = 0; cut < data.len; cut += 3) {
        floe__manifest_entries t = {0};
        int prc = floe__manifest_parse(data.data, cut, &t, NULL);
        CHECK_EQ_INT(t.n, 0);
        CHECK(prc != FLOE_OK || cut > 16);
        floe__manifest_entries_clear(&t);
    }
    floe__buf_free(&data);
    /* the delete manifest */
    m.deletes = true;
    snprintf(uri, sizeof uri, "file://%s/m1.avro", e.dir);
    floe__manifest_file dentry = {0};
    CHECK_EQ_INT(floe__manifest_write(e.io, uri, &m, files, 3, &dentry, e.err), FLOE_OK);
    CHECK_EQ_INT(dentry.content, 1);
    CHECK_EQ_INT(dentry.added_files, 1);
    CHECK_EQ_INT(read_file(e.io, uri, &data), FLOE_OK);
    CHECK_EQ_INT(floe__manifest_parse(data.data, data.len, &es, NULL), FLOE_OK);
    CHECK_EQ_STR(es.content, "deletes");
    CHECK(es.n == 1 && es.items[0].file.n_equality_ids == 2 &&
          es.items[0].file.equality_ids[1] == 5 &&
          es.items[0].file.content == FLOE_CONTENT_EQUALITY_DELETES);
    floe__manifest_entries_clear(&es);
    floe__buf_free(&data);
    /* files without a partition tuple are refused by a partitioned spec */
    json_t *pspec = json_loads("{\"spec-id\": 1, \"fields\": [{\"source-id\": 1, \"field-id\": "
                               "1000, \"name\": \"id\", \"transform\": \"identity\"}]}", 0, NULL);
    floe__manifest_meta pm = {schema, pspec, false, 77, 5};
    floe__manifest_file pentry = {0};
    snprintf(uri, sizeof uri, "file://%s/m2.avro", e.dir);
    CHECK_EQ_INT(floe__manifest_write(e.io, uri, &pm, files, 3, &pentry, NULL), FLOE_EINVAL);
    CHECK_EQ_INT(count_files(e.dir, "m2.avro"), 0);
    json_decref(pspec);
    floe__manifest_file_clear(&entry);
    floe__manifest_file_clear(&dentry);
    for (int i = 0; i < 3; i++)
        floe__content_file_clear(&files[i]);
    json_decref(schema);
    json_decref(spec);
    env_close(&e);
}

TEST(manifest_list_round_trip)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "list"), FLOE_OK);
    floe__manifest_list l = {0};
    for (int i = 0; i < 3; i++) {
        floe__manifest_file *m = floe__manifest_list_push(&l);
        char p[64];
        snprintf(p, sizeof p, "file:///m/%d.avro", i);
        m->path = floe__strdup(p);
        m->length = 100 + i;
        m->spec_id = i;
        m->content = i == 1;
        m->sequence_number = 10 - i;
        m->min_sequence_number = 9 - i;
        m->added_snapshot_id = 1000 + i;
        m->added_files = 1;
        m->existing_files = 2;
        m->deleted_files = 3;
        m->added_rows = 4;
        m->existing_rows = 5;
        m->deleted_rows = (int64_t)1 << 40;
        m->has_partitions = i != 2;
        if (i == 0) {
            m->n_partitions = 2;
            m->partitions = floe__calloc(2, sizeof *m->partitions);
            m->partitions[0].contains_null = true;
            m->partitions[0].contains_nan = -1;
            m->partitions[1].contains_nan = 1;
            m->partitions[1].has_lower = true;
            floe__buf_init(&m->partitions[1].lower, 0);
            floe__buf_append(&m->partitions[1].lower, "\0\x01\x02", 3, NULL);
            m->has_key_metadata = true;
            floe__buf_init(&m->key_metadata, 0);
            floe__buf_append(&m->key_metadata, "k", 1, NULL);
        }
    }
    char uri[512];
    snprintf(uri, sizeof uri, "file://%s/snap.avro", e.dir);
    uint64_t len = 0;
    CHECK_EQ_INT(floe__manifest_list_write(e.io, uri, &l, 42, -1, 10, &len, e.err), FLOE_OK);
    floe__buf data;
    CHECK_EQ_INT(read_file(e.io, uri, &data), FLOE_OK);
    CHECK_EQ_INT(len, data.len);
    floe__manifest_list r = {0};
    CHECK_EQ_INT(floe__manifest_list_parse(data.data, data.len, &r, e.err), FLOE_OK);
    CHECK_EQ_INT(r.n, 3);
    for (size_t i = 0; i < r.n && i < 3; i++) {
        floe__manifest_file *a = &l.items[i], *b = &r.items[i];
        CHECK_EQ_STR(a->path, b->path);
        CHECK(a->length == b->length && a->spec_id == b->spec_id && a->content == b->content);
        CHECK(a->sequence_number == b->sequence_number &&
              a->min_sequence_number == b->min_sequence_number);
        CHECK(a->added_snapshot_id == b->added_snapshot_id && a->added_files == b->added_files &&
              a->existing_files == b->existing_files && a->deleted_files == b->deleted_files);
        CHECK(a->added_rows == b->added_rows && a->existing_rows == b->existing_rows &&
              a->deleted_rows == b->deleted_rows);
        CHECK(a->has_partitions == b->has_partitions && a->n_partitions == b->n_partitions);
        CHECK(a->has_key_metadata == b->has_key_metadata);
    }
    if (r.n == 3) {
        floe__partition_summary *p = r.items[0].partitions;
        CHECK(p[0].contains_null && p[0].contains_nan == -1 && !p[0].has_lower);
        CHECK(!p[1].contains_null && p[1].contains_nan == 1 && p[1].has_lower && !p[1].has_upper);
        CHECK(p[1].lower.len == 3 && memcmp(p[1].lower.data, "\0\x01\x02", 3) == 0);
        CHECK(r.items[0].key_metadata.len == 1 && r.items[0].key_metadata.data[0] == 'k');
    }
    floe__avro_reader *ar = NULL;
    CHECK_EQ_INT(floe__avro_reader_open(data.data, data.len, NULL, &ar, NULL), FLOE_OK);
    if (ar) {
        CHECK_EQ_STR(floe__avro_reader_meta(ar, "snapshot-id", NULL), "42");
        CHECK_EQ_STR(floe__avro_reader_meta(ar, "parent-snapshot-id", NULL), "null");
        CHECK_EQ_STR(floe__avro_reader_meta(ar, "sequence-number", NULL), "10");
    }
    floe__avro_reader_free(ar);
    /* truncations fail cleanly (or, cut right after the header, read as an
     * empty list), and a failed parse leaves the list as it was */
    for (size_t cut = 0; cut < data.len; cut += 5) {
        floe__manifest_list t = {0};
        int prc = floe__manifest_list_parse(data.data, cut, &t, NULL);
        CHECK_EQ_INT(t.n, 0);
        CHECK(prc != FLOE_OK || cut > 16);
        floe__manifest_list_clear(&t);
        CHECK(floe__manifest_list_parse(data.data, cut, &r, NULL) != FLOE_OK || r.n == 3);
        CHECK_EQ_INT(r.n, 3);
    }
    floe__buf_free(&data);
    floe__manifest_list_clear(&r);
    floe__manifest_list_clear(&l);
    env_close(&e);
}

/* A v1 manifest list: no content or sequence numbers, counts optional. */
static int write_v1_list(const char *path, bool with_counts, floe__buf *out)
{
    static const char schema[] =
        "{\"type\":\"record\",\"name\":\"manifest_file\",\"fields\":["
        "{\"name\":\"manifest_path\",\"type\":\"string\",\"field-id\":500},"
        "{\"name\":\"manifest_length\",\"type\":\"long\",\"field-id\":501},"
        "{\"name\":\"partition_spec_id\",\"type\":\"int\",\"field-id\":502},"
        "{\"name\":\"added_snapshot_id\",\"type\":[\"null\",\"long\"],\"field-id\":503},"
        "{\"name\":\"added_data_files_count\",\"type\":[\"null\",\"int\"],\"field-id\":504},"
        "{\"name\":\"existing_data_files_count\",\"type\":[\"null\",\"int\"],\"field-id\":505},"
        "{\"name\":\"deleted_data_files_count\",\"type\":[\"null\",\"int\"],\"field-id\":506},"
        "{\"name\":\"added_rows_count\",\"type\":[\"null\",\"long\"],\"field-id\":512},"
        "{\"name\":\"existing_rows_count\",\"type\":[\"null\",\"long\"],\"field-id\":513},"
        "{\"name\":\"deleted_rows_count\",\"type\":[\"null\",\"long\"],\"field-id\":514}]}";
    floe__buf_init(out, 0);
    floe__output *o = floe__output_memory(out);
    floe__avro_writer *w;
    int rc = floe__avro_writer_new(schema, NULL, NULL, 0, o, &w, NULL);
    if (rc != FLOE_OK)
        return rc;
    floe__avro_begin_record(w);
    floe__avro_put_cstr(w, path);
    floe__avro_put_long(w, 10);
    floe__avro_put_int(w, 0);
    floe__avro_put_long(w, 5);
    for (int i = 0; i < 3; i++)
        with_counts ? floe__avro_put_int(w, i) : floe__avro_put_null(w);
    for (int i = 0; i < 3; i++)
        with_counts ? floe__avro_put_long(w, 7 + i) : floe__avro_put_null(w);
    floe__avro_end_record(w, NULL);
    return floe__avro_writer_close(w, NULL, NULL);
}

TEST(manifest_list_v1_shapes)
{
    floe__buf b;
    floe__manifest_list l = {0};
    CHECK_EQ_INT(write_v1_list("file:///m/v1.avro", true, &b), FLOE_OK);
    CHECK_EQ_INT(floe__manifest_list_parse(b.data, b.len, &l, NULL), FLOE_OK);
    CHECK(l.n == 1 && l.items[0].content == 0 && l.items[0].sequence_number == 0 &&
          l.items[0].existing_files == 1 && l.items[0].deleted_rows == 9 &&
          !l.items[0].has_partitions);
    floe__buf_free(&b);
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(write_v1_list("file:///m/v1.avro", false, &b), FLOE_OK);
    CHECK_EQ_INT(floe__manifest_list_parse(b.data, b.len, &l, err), FLOE_EUNSUPPORTED);
    CHECK(strstr(floe_error_message(err), "field 504") != NULL);
    CHECK_EQ_INT(l.n, 1);
    floe__buf_free(&b);
    floe_error_free(err);
    floe__manifest_list_clear(&l);
}

/* ---- commits ------------------------------------------------------------------------------------ */

static int commit_rows(floe__table *t, const char *const *rows, size_t n, json_t *summary,
                       int64_t base, int64_t *id, floe_error *err)
{
    floe__content_list files = {0};
    int rc = n ? write_rows(t, rows, n, NULL, &files) : FLOE_OK;
    floe__commit_request req = {.files = files.files, .n_files = files.n, .summary = summary,
                                .base_snapshot_id = base, .tag = NULL};
    if (rc == FLOE_OK)
        rc = floe__table_commit(t, &req, id, err);
    if (rc != FLOE_OK)
        for (size_t i = 0; i < files.n; i++)
            floe__fileio_remove(t->io, files.files[i].path, NULL);
    floe__content_list_clear(&files);
    return rc;
}

static const char *summary_of(floe__table *t, const char *key)
{
    const floe__snapshot *s = floe__metadata_current_snapshot(t->loaded->metadata);
    return s ? floe__snapshot_summary_get(s, key) : NULL;
}

TEST(commit_summaries_and_totals)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "commit"), FLOE_OK);
    floe__table *t = open_t(&e, "t", "id bigint not null", NULL);
    if (!t) {
        env_close(&e);
        return;
    }
    const char *rows[] = {"{\"id\": 1}", "{\"id\": 2}", "{\"id\": 3}"};
    int64_t id1 = 0, id2 = 0;
    json_t *props = json_pack("{s:s}", "floe.frontier", "[3]");
    CHECK_EQ_INT(commit_rows(t, rows, 3, props, -1, &id1, e.err), FLOE_OK);
    CHECK(id1 > 0);
    CHECK_EQ_INT(floe__metadata_current_snapshot_id(t->loaded->metadata), id1);
    CHECK_EQ_STR(summary_of(t, "operation"), "append");
    CHECK_EQ_STR(summary_of(t, "added-records"), "3");
    CHECK_EQ_STR(summary_of(t, "total-records"), "3");
    CHECK_EQ_STR(summary_of(t, "total-delete-files"), "0");
    CHECK_EQ_STR(summary_of(t, "changed-partition-count"), "1");
    CHECK_EQ_STR(summary_of(t, "floe.frontier"), "[3]");
    CHECK(summary_of(t, "added-delete-files") == NULL);
    const floe__snapshot *s1 = floe__metadata_current_snapshot(t->loaded->metadata);
    CHECK(s1 && s1->sequence_number == 1 && !s1->has_parent && s1->has_schema_id);
    /* only a position delete: operation "delete" (Java RowDelta), totals carried */
    floe__posdel_writer *pw = NULL;
    floe__content_list files = {0};
    CHECK_EQ_INT(floe__posdel_writer_new(t, NULL, &pw, NULL), FLOE_OK);
    floe__posdel_add(pw, "file:///x.parquet", 0, NULL);
    floe__posdel_add(pw, "file:///x.parquet", 1, NULL);
    CHECK_EQ_INT(floe__posdel_writer_close(pw, &files, NULL), FLOE_OK);
    floe__commit_request req = {.files = files.files, .n_files = files.n, .summary = NULL,
                                .base_snapshot_id = id1, .tag = NULL};
    CHECK_EQ_INT(floe__table_commit(t, &req, &id2, e.err), FLOE_OK);
    CHECK_EQ_STR(summary_of(t, "operation"), "delete");
    CHECK_EQ_STR(summary_of(t, "added-position-deletes"), "2");
    CHECK_EQ_STR(summary_of(t, "added-delete-files"), "1");
    CHECK_EQ_STR(summary_of(t, "total-position-deletes"), "2");
    CHECK_EQ_STR(summary_of(t, "total-records"), "3");
    CHECK_EQ_STR(summary_of(t, "total-data-files"), "1");
    CHECK_EQ_STR(summary_of(t, "total-delete-files"), "1");
    CHECK(summary_of(t, "added-records") == NULL);
    floe__content_list_clear(&files);
    const floe__snapshot *s2 = floe__metadata_current_snapshot(t->loaded->metadata);
    CHECK(s2 && s2->sequence_number == 2 && s2->has_parent && s2->parent_snapshot_id == id1);
    /* the manifest list carries the parent's manifest after the new one */
    floe__buf data;
    floe__manifest_list l = {0};
    CHECK_EQ_INT(read_file(e.io, s2->manifest_list, &data), FLOE_OK);
    CHECK_EQ_INT(floe__manifest_list_parse(data.data, data.len, &l, NULL), FLOE_OK);
    CHECK(l.n == 2 && l.items[0].content == 1 && l.items[0].sequence_number == 2 &&
          l.items[1].content == 0 && l.items[1].sequence_number == 1 &&
          l.items[1].added_snapshot_id == id1 && l.items[1].added_rows == 3);
    floe__manifest_list_clear(&l);
    floe__buf_free(&data);
    /* reserved keys, stale bases */
    json_t *bad = json_pack("{s:s}", "total-records", "9");
    CHECK_EQ_INT(commit_rows(t, rows, 0, bad, id2, NULL, e.err), FLOE_EINVAL);
    int lists = count_files(env_path(&e, "wh/db/t/metadata"), NULL);
    CHECK_EQ_INT(commit_rows(t, rows, 1, NULL, id1, NULL, e.err), FLOE_ECONFLICT);
    CHECK(strstr(floe_error_message(e.err), "main is at snapshot") != NULL);
    CHECK_EQ_INT(commit_rows(t, rows, 1, NULL, -1, NULL, e.err), FLOE_ECONFLICT);
    CHECK_EQ_INT(count_files(env_path(&e, "wh/db/t/metadata"), NULL), lists);
    /* an empty commit still makes a snapshot */
    int64_t id3 = 0;
    CHECK_EQ_INT(commit_rows(t, rows, 0, NULL, id2, &id3, e.err), FLOE_OK);
    CHECK_EQ_STR(summary_of(t, "total-records"), "3");
    CHECK(summary_of(t, "added-data-files") == NULL);
    CHECK_EQ_STR(summary_of(t, "changed-partition-count"), "0");
    json_decref(bad);
    json_decref(props);
    floe__table_free(t);
    env_close(&e);
}

TEST(commit_conflict_removes_what_it_wrote)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "conflict"), FLOE_OK);
    floe__table *a = open_t(&e, "t", "id bigint not null", NULL);
    floe__table *b = open_t(&e, "t", NULL, NULL);
    if (!a || !b) {
        floe__table_free(a);
        floe__table_free(b);
        env_close(&e);
        return;
    }
    const char *rows[] = {"{\"id\": 1}"};
    CHECK_EQ_INT(commit_rows(a, rows, 1, NULL, -1, NULL, e.err), FLOE_OK);
    /* b still sees no snapshot: its commit on base -1 passes the local check
     * and then loses at the catalog */
    const char *meta = env_path(&e, "wh/db/t/metadata");
    int before = count_files(meta, ".avro");
    CHECK_EQ_INT(commit_rows(b, rows, 1, NULL, -1, NULL, e.err), FLOE_ECONFLICT);
    CHECK(strstr(floe_error_message(e.err), "created concurrently") != NULL);
    CHECK_EQ_INT(count_files(meta, ".avro"), before);
    CHECK_EQ_INT(count_files(meta, ".metadata.json"), 2);
    CHECK_EQ_INT(floe__table_refresh(b, e.err), FLOE_OK);
    int64_t cur = floe__metadata_current_snapshot_id(b->loaded->metadata);
    CHECK_EQ_INT(commit_rows(b, rows, 1, NULL, cur, NULL, e.err), FLOE_OK);
    CHECK_EQ_INT(count_files(meta, ".avro"), before + 2);
    floe__table_free(a);
    floe__table_free(b);
    env_close(&e);
}

/* A manifest of a spec with several transforms: every file's tuple read
 * back, the manifest list's summaries (nulls, bounds) right. */
TEST(partitioned_manifest_round_trip)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "pmanifest"), FLOE_OK);
    json_t *schema = json_loads(TBL(F(1, "id", true, "\"long\"") "," F(2, "ts", false,
                                "\"timestamptz\"") "," F(3, "name", false, "\"string\"") ","
                                F(4, "d", false, "\"decimal(20,2)\"")), 0, NULL);
    json_object_set_new(schema, "schema-id", json_integer(0));
    json_t *spec = json_loads(
        "{\"spec-id\": 2, \"fields\": ["
        "{\"source-id\": 2, \"field-id\": 1000, \"name\": \"ts_day\", \"transform\": \"day\"},"
        "{\"source-id\": 1, \"field-id\": 1001, \"name\": \"id.b\", \"transform\": \"bucket[8]\"},"
        "{\"source-id\": 3, \"field-id\": 1002, \"name\": \"name\", \"transform\": \"identity\"},"
        "{\"source-id\": 4, \"field-id\": 1003, \"name\": \"d_t\", \"transform\": \"truncate[100]\"}"
        "]}", 0, NULL);
    floe__content_file files[3];
    /* tuples: (day -1, bucket 3, "b", -1.00), (day 5, bucket 0, null, 2.00),
     * (null, bucket 7, "a", null) */
    static const uint8_t t0[] = {1, 0xff, 0xff, 0xff, 0xff, 1, 3, 0, 0, 0, 1, 1, 0, 0, 0, 'b',
                                 1, 0x9c, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    static const uint8_t t1[] = {1, 5, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 200, 0, 0, 0, 0, 0, 0, 0, 0,
                                 0, 0, 0, 0, 0, 0, 0};
    static const uint8_t t2[] = {0, 1, 7, 0, 0, 0, 1, 1, 0, 0, 0, 'a', 0};
    const uint8_t *ts[3] = {t0, t1, t2};
    size_t tl[3] = {sizeof t0, sizeof t1, sizeof t2};
    for (int i = 0; i < 3; i++) {
        char path[64];
        snprintf(path, sizeof path, "file:///d/p%d.parquet", i);
        fake_file(&files[i], FLOE_CONTENT_DATA, path, 3);
        floe__buf_append(&files[i].partition, ts[i], tl[i], NULL);
    }
    floe__manifest_meta m = {schema, spec, false, 78, 6};
    char uri[512];
    snprintf(uri, sizeof uri, "file://%s/pm.avro", e.dir);
    floe__manifest_file entry = {0};
    CHECK_EQ_INT(floe__manifest_write(e.io, uri, &m, files, 3, &entry, e.err), FLOE_OK);
    CHECK_EQ_INT(entry.spec_id, 2);
    CHECK(entry.has_partitions && entry.n_partitions == 4);
    if (entry.n_partitions == 4) {
        floe__partition_summary *p = entry.partitions;
        CHECK(p[0].contains_null && p[0].contains_nan == -1);
        CHECK(p[0].lower.len == 4 && (int32_t)floe__get_le32(p[0].lower.data) == -1);
        CHECK(p[0].upper.len == 4 && (int32_t)floe__get_le32(p[0].upper.data) == 5);
        CHECK(!p[1].contains_null && floe__get_le32(p[1].lower.data) == 0 &&
              floe__get_le32(p[1].upper.data) == 7);
        CHECK(p[2].contains_null && p[2].lower.len == 1 && p[2].lower.data[0] == 'a' &&
              p[2].upper.data[0] == 'b');
        CHECK(p[3].contains_null && p[3].lower.len == 1 && p[3].lower.data[0] == 0x9c &&
              p[3].upper.len == 2 && p[3].upper.data[0] == 0 && p[3].upper.data[1] == 200);
    }
    floe__buf data;
    CHECK_EQ_INT(read_file(e.io, uri, &data), FLOE_OK);
    floe__manifest_entries es = {0};
    CHECK_EQ_INT(floe__manifest_parse(data.data, data.len, &es, e.err), FLOE_OK);
    CHECK_EQ_INT(es.n, 3);
    for (size_t i = 0; i < es.n && i < 3; i++)
        CHECK(es.items[i].file.partition.len == tl[i] &&
              memcmp(es.items[i].file.partition.data, ts[i], tl[i]) == 0);
    /* the list entry carries the summaries through a manifest list */
    floe__manifest_list l = {0};
    floe__manifest_file *le = floe__manifest_list_push(&l);
    if (le)
        *le = entry, entry = (floe__manifest_file){0};
    snprintf(uri, sizeof uri, "file://%s/pl.avro", e.dir);
    CHECK_EQ_INT(floe__manifest_list_write(e.io, uri, &l, 78, -1, 6, NULL, e.err), FLOE_OK);
    floe__buf_free(&data);
    CHECK_EQ_INT(read_file(e.io, uri, &data), FLOE_OK);
    floe__manifest_list back = {0};
    CHECK_EQ_INT(floe__manifest_list_parse(data.data, data.len, &back, e.err), FLOE_OK);
    CHECK(back.n == 1 && back.items[0].n_partitions == 4 &&
          back.items[0].partitions[2].upper.data[0] == 'b');
    floe__manifest_list_clear(&back);
    floe__manifest_list_clear(&l);
    floe__manifest_entries_clear(&es);
    floe__buf_free(&data);
    floe__manifest_file_clear(&entry);
    for (int i = 0; i < 3; i++)
        floe__content_file_clear(&files[i]);
    json_decref(schema);
    json_decref(spec);
    env_close(&e);
}

/* The partitioned writer's memory budget, shared by two writers: past its
 * limit each closes its hungriest open file before a row, down to one; the
 * budget counts what is open and ends at zero; a generous budget closes
 * nothing early. */
/* Create db.NAME in e's catalog: one column "id" (long, required)
 * partitioned by bucket[n] of it (the namespace is created too). */
static int create_bucketed(env *e, const char *name, int n)
{
    char text[160];
    snprintf(text, sizeof text, "{\"spec-id\": 0, \"fields\": [{\"source-id\": 1, "
             "\"field-id\": 1000, \"name\": \"id_bucket\", \"transform\": \"bucket[%d]\"}]}",
             n);
    json_t *owned[2] = {json_loads(TBL(F(1, "id", true, "\"long\"")), 0, NULL),
                        json_loads(text, 0, NULL)};
    floe__table_def def = {.schema = owned[0], .partition_spec = owned[1]};
    floe__loaded_table *lt = NULL;
    int rc = floe__catalog_create_namespace(e->cat, "db", NULL, NULL);
    rc = rc == FLOE_OK ? floe__catalog_create_table(e->cat, "db", name, &def, &lt, e->err) : rc;
    floe__loaded_table_free(lt);
    for (int i = 0; i < 2; i++)
        json_decref(owned[i]);
    return rc;
}

TEST(partitioned_writer_memory_budget)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "pbudget"), FLOE_OK);
    CHECK_EQ_INT(create_bucketed(&e, "pb", 8), FLOE_OK);
    floe__table *t = open_t(&e, "pb", NULL, NULL);
    for (int round = 0; t && round < 2; round++) {
        floe__part_budget budget = {.limit = round == 0 ? 1 : (uint64_t)1 << 30};
        floe__part_writer *w[2] = {NULL, NULL};
        for (int k = 0; k < 2; k++)
            CHECK_EQ_INT(floe__part_writer_new(t, t->schema, NULL, NULL, &budget, &w[k], e.err),
                         FLOE_OK);
        if (!w[0] || !w[1]) {
            floe__part_writer_abort(w[0]);
            floe__part_writer_abort(w[1]);
            break;
        }
        for (int64_t i = 0; i < 400; i++) {
            uint8_t row[9] = {1};
            floe__put_le64(row + 1, (uint64_t)i);
            CHECK_EQ_INT(floe__part_writer_write(w[i % 2], row, 9, NULL, NULL, e.err), FLOE_OK);
            if (round == 0)                  /* the row's tuple only: the rest written out */
                CHECK(floe__part_writer_open_count(w[i % 2]) <= 1);
        }
        CHECK(budget.used > 0);
        uint64_t early = floe__part_writer_early_closes(w[0]) +
                         floe__part_writer_early_closes(w[1]);
        CHECK(round == 0 ? early > 100 : early == 0);
        CHECK(round == 1 ? floe__part_writer_open_count(w[0]) == 8 : true);
        floe__content_list files = {0};
        for (int k = 0; k < 2; k++)
            CHECK_EQ_INT(floe__part_writer_close(w[k], &files, e.err), FLOE_OK);
        CHECK_EQ_INT(budget.used, 0);
        uint64_t rows = 0;
        for (size_t i = 0; i < files.n; i++)
            rows += files.files[i].metrics.record_count;
        CHECK_EQ_INT(rows, 400);
        CHECK(round == 0 ? files.n > 100 : files.n == 16);
        for (size_t i = 0; i < files.n; i++)
            floe__fileio_remove(t->io, files.files[i].path, NULL);
        floe__content_list_clear(&files);
    }
    floe__table_free(t);
    env_close(&e);
}

/* The partitioned writer: rows routed by bucket[4] and identity, one file
 * per tuple (two where a tuple's rows pass the target size), every row at
 * the file and position its write reported, tuples committed and read back. */
TEST(partitioned_writer_commits_tuples)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "pwriter"), FLOE_OK);
    CHECK_EQ_INT(floe__catalog_create_namespace(e.cat, "db", NULL, NULL), FLOE_OK);
    json_t *schema = json_loads(TBL(F(1, "id", true, "\"long\"") "," F(2, "k", false, "\"int\"")),
                                0, NULL);
    json_t *spec = json_loads("{\"spec-id\": 0, \"fields\": [{\"source-id\": 1, \"field-id\": "
                              "1000, \"name\": \"id_bucket\", \"transform\": \"bucket[4]\"},"
                              "{\"source-id\": 2, \"field-id\": 1001, \"name\": \"k\", "
                              "\"transform\": \"identity\"}]}", 0, NULL);
    floe__table_def def = {.schema = schema, .partition_spec = spec};
    floe__loaded_table *lt = NULL;
    CHECK_EQ_INT(floe__catalog_create_table(e.cat, "db", "pw", &def, &lt, e.err), FLOE_OK);
    floe__loaded_table_free(lt);
    floe__table *t = open_t(&e, "pw", NULL, NULL);
    floe__part_writer *w = NULL;
    /* a target of 300 row bytes: about 17 rows of 14 bytes per file */
    floe__file_writer_options o = {.target_file_size = 300};
    floe_parquet_options_init(&o.parquet, sizeof o.parquet);
    if (t)
        CHECK_EQ_INT(floe__part_writer_new(t, t->schema, NULL, &o, NULL, &w, e.err), FLOE_OK);
    floe__content_list files = {0};
    enum { N = 200 };
    char *paths[N] = {0};
    uint64_t poss[N] = {0};
    if (w) {
        for (int64_t i = 0; i < N; i++) {
            uint8_t row[14] = {1};
            floe__put_le64(row + 1, (uint64_t)i);
            row[9] = i % 5 ? 1 : 0;              /* k null for every fifth row */
            floe__put_le32(row + 10, (uint32_t)(i % 2));
            size_t len = row[9] ? 14 : 10;
            const char *path = NULL;
            CHECK_EQ_INT(floe__part_writer_write(w, row, len, &path, &poss[i], e.err), FLOE_OK);
            paths[i] = path ? floe__strdup(path) : NULL;
            CHECK(floe__part_writer_open_count(w) <= 12);
        }
        uint8_t bad[2] = {0, 0};                 /* id null: refused, the writer goes on */
        CHECK_EQ_INT(floe__part_writer_write(w, bad, 2, NULL, NULL, e.err), FLOE_EINPUT);
        CHECK_EQ_INT(floe__part_writer_close(w, &files, e.err), FLOE_OK);
    }
    /* 4 buckets x (k 0, 1, null) = 12 tuples, a few split at the target */
    CHECK(files.n >= 12 && files.n <= 24);
    uint64_t rows = 0;
    for (size_t i = 0; i < files.n; i++) {
        const floe__content_file *f = &files.files[i];
        rows += f->metrics.record_count;
        CHECK(f->partition.len > 0);
        uint64_t n = 0, top = 0;             /* the rows reported in it: positions 0 .. n-1 */
        for (int r = 0; r < N; r++)
            if (paths[r] && strcmp(paths[r], f->path) == 0) {
                n++;
                top = poss[r] > top ? poss[r] : top;
            }
        CHECK_EQ_INT(n, f->metrics.record_count);
        CHECK_EQ_INT(top + 1, n);
    }
    for (int r = 0; r < N; r++)
        floe__free(paths[r]);
    CHECK_EQ_INT(rows, N);
    int64_t snap = -1;
    floe__commit_request req = {.files = files.files, .n_files = files.n, .summary = NULL,
                                .base_snapshot_id = -1, .tag = NULL};
    if (t)
        CHECK_EQ_INT(floe__table_commit(t, &req, &snap, e.err), FLOE_OK);
    floe__plan *p = NULL;
    if (t && snap >= 0)
        CHECK_EQ_INT(floe__table_plan(t, snap, &p, e.err), FLOE_OK);
    if (p) {
        CHECK_EQ_INT(p->n_data, files.n);
        for (size_t i = 0; i < p->n_data && i < files.n; i++) {
            bool found = false;
            for (size_t k = 0; k < files.n; k++)
                if (strcmp(files.files[k].path, p->data[i].f.file.path) == 0)
                    found = p->data[i].f.file.partition.len == files.files[k].partition.len &&
                            memcmp(p->data[i].f.file.partition.data,
                                   files.files[k].partition.data,
                                   files.files[k].partition.len) == 0;
            CHECK(found);
        }
        CHECK(p->manifests.n == 1 && p->manifests.items[0].n_partitions == 2 &&
              p->manifests.items[0].partitions[1].contains_null);
        floe__plan_free(p);
    }
    if (!p)
        fprintf(stderr, "%s\n", floe_error_message(e.err));
    floe__content_list_clear(&files);
    floe__table_free(t);
    json_decref(schema);
    json_decref(spec);
    env_close(&e);
}

TEST(refuses_partitioned_and_v1_tables)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "refuse"), FLOE_OK);
    CHECK_EQ_INT(create_bucketed(&e, "p", 4), FLOE_OK);
    floe__table *t = open_t(&e, "p", "id bigint not null", NULL);
    CHECK(t != NULL);                      /* opening (and inspecting) is fine */
    floe__file_writer *w = NULL;
    if (t) {
        /* a plain data file (no partition tuple) cannot be committed to it */
        CHECK_EQ_INT(floe__file_writer_new(t, FLOE_CONTENT_DATA, t->schema, NULL, 0, NULL, &w,
                                           e.err), FLOE_OK);
        uint8_t row[9] = {1, 7, 0, 0, 0, 0, 0, 0, 0};
        floe__content_list files = {0};
        if (w) {
            CHECK_EQ_INT(floe__file_writer_write(w, row, 9, NULL, NULL, e.err), FLOE_OK);
            CHECK_EQ_INT(floe__file_writer_close(w, &files, e.err), FLOE_OK);
        }
        floe__commit_request req = {.files = files.files, .n_files = files.n, .summary = NULL,
                                    .base_snapshot_id = -1, .tag = NULL};
        CHECK_EQ_INT(floe__table_commit(t, &req, NULL, e.err), FLOE_EINVAL);
        CHECK(strstr(floe_error_message(e.err), "no partition tuple") != NULL);
        floe__content_list_clear(&files);
    }
    floe__table_free(t);
    env_close(&e);
}

/* ---- the public API ------------------------------------------------------------------------------ */

TEST(public_api)
{
    char uri[400], wh[400];
    snprintf(uri, sizeof uri, "sqlite:%s/api/catalog.db", tmp_root);
    snprintf(wh, sizeof wh, "%s/api/wh", tmp_root);          /* a plain path */
    floe_error *err = floe_error_new();
    floe_catalog *c = NULL;
    floe_connect_options co;
    floe_connect_options_init(&co, sizeof co);
    co.catalog = "ftp://example.com/catalog";
    CHECK_EQ_INT(floe_catalog_open(&co, &c, err), FLOE_EINVAL);
    CHECK(strstr(floe_error_message(err), "unknown catalog URI") != NULL);
    co.catalog = uri;
    co.warehouse = wh;
    co.catalog_name = "cat";
    CHECK_EQ_INT(floe_catalog_open(&co, &c, err), FLOE_OK);
    floe_schema *s = NULL;
    floe_table *t = NULL;
    CHECK_EQ_INT(floe_schema_parse("id bigint not null, v text", &s, err), FLOE_OK);
    CHECK_EQ_INT(floe_table_open(c, "nodot", s, NULL, &t, err), FLOE_EINVAL);
    CHECK_EQ_INT(floe_table_open(c, "a.b.", s, NULL, &t, err), FLOE_EINVAL);
    const char *props[] = {"k", "v", NULL};
    CHECK_EQ_INT(floe_table_open(c, "a.b.t", s, props, &t, err), FLOE_OK);
    if (!t) {
        floe_schema_free(s);
        floe_catalog_free(c);
        floe_error_free(err);
        return;
    }
    char want[512];
    snprintf(want, sizeof want, "file://%s/api/wh/a.b/t/data", tmp_root);
    CHECK_EQ_STR(floe_table_data_location(t), want);
    CHECK_EQ_INT(floe_table_current_snapshot_id(t), -1);
    CHECK_EQ_INT(floe_table_snapshot_count(t), 0);
    const floe_schema *ts = floe_table_schema(t);
    floe_row *row = NULL, *other = NULL;
    CHECK_EQ_INT(floe_row_new(ts, &row, err), FLOE_OK);
    CHECK_EQ_INT(floe_row_new(s, &other, err), FLOE_OK);
    floe_file_writer *w = NULL;
    CHECK_EQ_INT(floe_data_writer_new(t, NULL, &w, err), FLOE_OK);
    CHECK_EQ_INT(floe_row_set_json(row, "{\"id\": 5, \"v\": \"x\"}", 19, err), FLOE_OK);
    CHECK_EQ_INT(floe_row_set_json(other, "{\"id\": 6}", 9, err), FLOE_OK);
    const char *path = NULL;
    uint64_t pos = 9;
    CHECK_EQ_INT(floe_file_writer_write(w, row, &path, &pos, err), FLOE_OK);
    CHECK(path && pos == 0);
    CHECK_EQ_INT(floe_file_writer_write(w, other, NULL, NULL, err), FLOE_EINVAL);
    CHECK_EQ_INT(floe_file_writer_rows(w), 1);
    char data_dir[512];
    snprintf(data_dir, sizeof data_dir, "%s/api/wh/a.b/t/data", tmp_root);
    /* a commit freed without submitting removes its files */
    floe_commit *cm = NULL;
    CHECK_EQ_INT(floe_commit_new(t, &cm, err), FLOE_OK);
    CHECK_EQ_INT(floe_commit_add_files(cm, w, err), FLOE_OK);
    CHECK_EQ_INT(floe_commit_file_count(cm), 1);
    CHECK_EQ_INT(count_files(data_dir, NULL), 1);
    floe_commit_free(cm);
    CHECK_EQ_INT(count_files(data_dir, NULL), 0);
    /* data + equality deletes + position deletes, committed */
    CHECK_EQ_INT(floe_data_writer_new(t, NULL, &w, err), FLOE_OK);
    CHECK_EQ_INT(floe_file_writer_write(w, row, &path, &pos, err), FLOE_OK);
    floe_file_writer *eq = NULL;
    const char *key[] = {"id"}, *nested[] = {"nope"};
    CHECK_EQ_INT(floe_equality_delete_writer_new(t, nested, 1, NULL, &eq, err), FLOE_EINVAL);
    CHECK_EQ_INT(floe_equality_delete_writer_new(t, key, 1, NULL, &eq, err), FLOE_OK);
    floe_row *krow = NULL;
    CHECK_EQ_INT(floe_row_new(floe_file_writer_schema(eq), &krow, err), FLOE_OK);
    CHECK_EQ_INT(floe_row_set_json(krow, "{\"id\": 4}", 9, err), FLOE_OK);
    CHECK_EQ_INT(floe_file_writer_write(eq, krow, NULL, NULL, err), FLOE_OK);
    floe_position_delete_writer *pd = NULL;
    CHECK_EQ_INT(floe_position_delete_writer_new(t, NULL, &pd, err), FLOE_OK);
    CHECK_EQ_INT(floe_position_delete_add(pd, path, 0, err), FLOE_OK);
    CHECK_EQ_INT(floe_position_delete_count(pd), 1);
    CHECK_EQ_INT(floe_commit_new(t, &cm, err), FLOE_OK);
    CHECK_EQ_INT(floe_commit_add_files(cm, w, err), FLOE_OK);
    CHECK_EQ_INT(floe_commit_add_files(cm, eq, err), FLOE_OK);
    CHECK_EQ_INT(floe_commit_add_position_deletes(cm, pd, err), FLOE_OK);
    CHECK_EQ_INT(floe_commit_set_property(cm, "operation", "x", err), FLOE_EINVAL);
    CHECK_EQ_INT(floe_commit_set_property(cm, "floe.sink-id", "a.b.t", err), FLOE_OK);
    int64_t sid = 0;
    CHECK_EQ_INT(floe_commit_submit(cm, 12345, &sid, err), FLOE_ECONFLICT);
    CHECK_EQ_INT(floe_commit_submit(cm, -1, &sid, err), FLOE_OK);
    CHECK_EQ_INT(floe_commit_submit(cm, sid, NULL, err), FLOE_EINVAL);   /* spent */
    floe_commit_free(cm);
    CHECK_EQ_INT(count_files(data_dir, NULL), 3);                          /* kept */
    CHECK_EQ_INT(floe_table_current_snapshot_id(t), sid);
    CHECK_EQ_INT(floe_table_snapshot_count(t), 1);
    floe_snapshot_info si;
    CHECK_EQ_INT(floe_table_snapshot(t, 0, &si, sizeof si, err), FLOE_OK);
    CHECK(si.snapshot_id == sid && si.parent_id == -1 && si.sequence_number == 1);
    CHECK_EQ_STR(si.operation, "overwrite");
    CHECK_EQ_STR(floe_table_snapshot_property(t, 0, "floe.sink-id"), "a.b.t");
    CHECK_EQ_STR(floe_table_snapshot_property(t, 0, "added-equality-deletes"), "1");
    CHECK(floe_table_snapshot_property(t, 0, "nope") == NULL);
    const char *k = NULL, *v = NULL;
    CHECK_EQ_INT(floe_table_snapshot_property_at(t, 0, 0, &k, &v, err), FLOE_OK);
    CHECK(k && v && strcmp(k, "operation") == 0 && strcmp(v, "overwrite") == 0);
    CHECK_EQ_INT(floe_table_snapshot_property_at(t, 0, si.property_count, &k, &v, err),
                 FLOE_EINVAL);
    CHECK_EQ_INT(floe_table_snapshot(t, 1, &si, sizeof si, err), FLOE_EINVAL);
    CHECK_EQ_INT(floe_table_refresh(t, err), FLOE_OK);
    CHECK(floe__str_ends(floe_table_metadata_location(t), ".metadata.json"));
    floe_row_free(krow);
    floe_row_free(row);
    floe_row_free(other);
    floe_table_free(t);
    /* the table exists now: open without a declaration */
    CHECK_EQ_INT(floe_table_open(c, "a.b.t", NULL, NULL, &t, err), FLOE_OK);
    CHECK_EQ_INT(floe_table_current_snapshot_id(t), sid);
    floe_table_free(t);
    floe_schema_free(s);
    floe_catalog_free(c);
    floe_error_free(err);
}

/* The public writers on a partitioned table (bucket[4] of id): data rows
 * land one file per bucket; position deletes (of this commit's rows and of
 * an earlier one's) are written by the commit, each file-scoped to its data
 * file with that file's tuple; equality deletes on the key (which covers
 * the spec) carry their bucket.  The live rows are what is left. */
static int sum_ids(void *ctx, const uint8_t *row, size_t len, uint64_t pos, floe_error *err)
{
    (void)len;
    (void)pos;
    (void)err;
    *(int64_t *)ctx += (int64_t)floe__get_le64(row + 1);
    return FLOE_OK;
}

TEST(public_api_partitioned)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "papi"), FLOE_OK);
    CHECK_EQ_INT(create_bucketed(&e, "pp", 4), FLOE_OK);
    char uri[400], wh[400];
    snprintf(uri, sizeof uri, "sqlite:%s/catalog.db", e.dir);
    snprintf(wh, sizeof wh, "file://%s/wh", e.dir);
    floe_connect_options co;
    floe_connect_options_init(&co, sizeof co);
    co.catalog = uri;
    co.warehouse = wh;
    co.catalog_name = "floe";
    floe_catalog *c = NULL;
    floe_table *t = NULL;
    CHECK_EQ_INT(floe_catalog_open(&co, &c, e.err), FLOE_OK);
    if (c)
        CHECK_EQ_INT(floe_table_open(c, "db.pp", NULL, NULL, &t, e.err), FLOE_OK);
    floe_row *row = NULL;
    if (t)
        CHECK_EQ_INT(floe_row_new(floe_table_schema(t), &row, e.err), FLOE_OK);
    enum { N = 40 };
    char *paths[N] = {0};
    uint64_t poss[N];
    int64_t total = 0;
    for (int round = 0; row && round < 2; round++) {
        floe_commit *cm = NULL;
        CHECK_EQ_INT(floe_commit_new(t, &cm, e.err), FLOE_OK);
        floe_position_delete_writer *pd = NULL;
        CHECK_EQ_INT(floe_position_delete_writer_new(t, NULL, &pd, e.err), FLOE_OK);
        if (round == 0) {                /* 40 rows; rows 3 and 7 deleted in the same commit */
            floe_file_writer *w = NULL;
            CHECK_EQ_INT(floe_data_writer_new(t, NULL, &w, e.err), FLOE_OK);
            for (int i = 0; w && i < N; i++) {
                char json[32];
                int n = snprintf(json, sizeof json, "{\"id\": %d}", i);
                const char *path = NULL;
                CHECK_EQ_INT(floe_row_set_json(row, json, (size_t)n, e.err), FLOE_OK);
                CHECK_EQ_INT(floe_file_writer_write(w, row, &path, &poss[i], e.err), FLOE_OK);
                paths[i] = path ? floe__strdup(path) : NULL;
                total += i;
            }
            for (int i = 3; paths[i] && i <= 7; i += 4) {
                CHECK_EQ_INT(floe_position_delete_add(pd, paths[i], poss[i], e.err), FLOE_OK);
                total -= i;
            }
            CHECK_EQ_INT(floe_commit_add_files(cm, w, e.err), FLOE_OK);
            CHECK_EQ_INT(floe_commit_file_count(cm), 4);      /* one file per bucket */
        } else {                         /* rows 12 and 13 by position, 20 by key */
            for (int i = 12; paths[i] && i <= 13; i++) {
                CHECK_EQ_INT(floe_position_delete_add(pd, paths[i], poss[i], e.err), FLOE_OK);
                total -= i;
            }
            floe_file_writer *eq = NULL;
            const char *key[] = {"id"};
            CHECK_EQ_INT(floe_equality_delete_writer_new(t, key, 1, NULL, &eq, e.err), FLOE_OK);
            floe_row *k = NULL;
            if (eq)
                CHECK_EQ_INT(floe_row_new(floe_file_writer_schema(eq), &k, e.err), FLOE_OK);
            if (k) {
                CHECK_EQ_INT(floe_row_set_json(k, "{\"id\": 20}", 10, e.err), FLOE_OK);
                CHECK_EQ_INT(floe_file_writer_write(eq, k, NULL, NULL, e.err), FLOE_OK);
                total -= 20;
            }
            floe_row_free(k);
            CHECK_EQ_INT(floe_commit_add_files(cm, eq, e.err), FLOE_OK);
        }
        CHECK_EQ_INT(floe_position_delete_count(pd), 2);
        CHECK_EQ_INT(floe_commit_add_position_deletes(cm, pd, e.err), FLOE_OK);
        CHECK_EQ_INT(floe_commit_submit(cm, floe_table_current_snapshot_id(t), NULL, e.err),
                     FLOE_OK);
        floe_commit_free(cm);
    }
    floe__plan *p = NULL;
    if (t)
        CHECK_EQ_INT(floe__table_plan(floe__table_of(t), floe_table_current_snapshot_id(t), &p,
                                      e.err), FLOE_OK);
    if (p) {
        CHECK_EQ_INT(p->n_data, 4);
        size_t posfiles = 0, eqfiles = 0;
        for (size_t i = 0; i < p->n_deletes; i++) {
            const floe__plan_file *d = &p->deletes[i];
            if (d->file.content == FLOE_CONTENT_EQUALITY_DELETES) {
                eqfiles++;
                CHECK(d->file.partition.len > 0);         /* the key covers the spec */
                continue;
            }
            posfiles++;
            bool found = false;                           /* its data file's tuple */
            for (size_t k = 0; k < p->n_data; k++)
                if (d->file.referenced_data_file &&
                    strcmp(d->file.referenced_data_file, p->data[k].f.file.path) == 0)
                    found = d->spec_id == p->data[k].f.spec_id &&
                            d->file.partition.len == p->data[k].f.file.partition.len &&
                            memcmp(d->file.partition.data, p->data[k].f.file.partition.data,
                                   d->file.partition.len) == 0;
            CHECK(found);
        }
        CHECK(posfiles >= 1 && eqfiles == 1);
        floe__live *l = NULL;
        CHECK_EQ_INT(floe__live_new(e.io, p, floe__table_of(t)->schema, &l, e.err), FLOE_OK);
        int64_t sum = 0;
        if (l)
            CHECK_EQ_INT(floe__live_rows_each(l, sum_ids, &sum, e.err), FLOE_OK);
        CHECK_EQ_INT(sum, total);
        floe__live_free(l);
        floe__plan_free(p);
    }
    for (int i = 0; i < N; i++)
        floe__free(paths[i]);
    floe_row_free(row);
    floe_table_free(t);
    floe_catalog_free(c);
    env_close(&e);
}

/* ---- out of memory ------------------------------------------------------------------------------ */

/* Whether an armed allocation failure is still pending: probe up to n+1
 * allocations (disarming afterwards). */
static bool failure_pending(long n)
{
    bool pending = false;
    for (long i = 0; i <= n && !pending; i++) {
        void *p = floe__malloc(1);
        pending = p == NULL;
        floe__free(p);
    }
    floe__alloc_fail_after(-1);
    return pending;
}

/* Every allocation of writing and reading a manifest and a manifest list
 * fails in turn: each run ends in FLOE_ENOMEM (or succeeds), leaks nothing
 * and leaves no file behind on failure. */
TEST(out_of_memory_in_manifests)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "oom-manifest"), FLOE_OK);
    floe__content_file files[2];
    fake_file(&files[0], FLOE_CONTENT_DATA, "file:///d/a.parquet", 10);
    fake_file(&files[1], FLOE_CONTENT_EQUALITY_DELETES, "file:///d/e.parquet", 3);
    json_t *schema = json_loads(TBL(F(1, "id", true, "\"long\"") "," F(5, "x", false, "\"double\"")),
                                0, NULL);
    json_t *spec = json_loads("{\"spec-id\": 0, \"fields\": []}", 0, NULL);
    char uri[512], luri[512];
    snprintf(uri, sizeof uri, "file://%s/m.avro", e.dir);
    snprintf(luri, sizeof luri, "file://%s/l.avro", e.dir);
    bool done = false;
    int failures = 0;
    for (long n = 0; n < 100000 && !done; n++) {
        floe__manifest_meta m = {schema, spec, n % 2 == 1, 7, 3};
        floe__manifest_list l = {0}, back = {0};
        floe__manifest_entries es = {0};
        floe__buf data;
        floe__buf_init(&data, 0);
        floe__alloc_fail_after(n);
        floe__manifest_file *entry = floe__manifest_list_push(&l);
        int rc = entry ? floe__manifest_write(e.io, uri, &m, files, 2, entry, NULL) : FLOE_ENOMEM;
        if (!entry || rc != FLOE_OK)
            l.n = 0;
        if (rc == FLOE_OK)
            rc = floe__manifest_list_write(e.io, luri, &l, 7, 6, 3, NULL, NULL);
        if (rc == FLOE_OK)
            rc = floe__fileio_read_all(e.io, uri, &data, NULL);
        if (rc == FLOE_OK)
            rc = floe__manifest_parse(data.data, data.len, &es, NULL);
        floe__buf_reset(&data);
        if (rc == FLOE_OK)
            rc = floe__fileio_read_all(e.io, luri, &data, NULL);
        if (rc == FLOE_OK)
            rc = floe__manifest_list_parse(data.data, data.len, &back, NULL);
        done = failure_pending(n) && rc == FLOE_OK;
        if (rc != FLOE_OK) {
            failures++;
            CHECK(rc == FLOE_ENOMEM || rc == FLOE_ELIMIT || rc == FLOE_EIO);
        } else {
            CHECK_EQ_INT(es.n, 1);
            CHECK(back.n == 1 && back.items[0].added_rows == (n % 2 ? 3 : 10));
        }
        floe__buf_free(&data);
        floe__manifest_entries_clear(&es);
        floe__manifest_list_clear(&back);
        floe__manifest_list_clear(&l);
        floe__fileio_remove(e.io, uri, NULL);
        floe__fileio_remove(e.io, luri, NULL);
    }
    CHECK(done);
    CHECK(failures > 50);
    CHECK_EQ_INT(count_files(e.dir, ".avro"), 0);
    for (int i = 0; i < 2; i++)
        floe__content_file_clear(&files[i]);
    json_decref(schema);
    json_decref(spec);
    env_close(&e);
}

/* Every allocation of a whole commit (manifests, list, catalog) fails in
 * turn: a failed commit leaves no manifest behind, a landed one is reported
 * as landed (the failure hit after the swap), and the table stays readable.
 * Each attempt is the first commit of a fresh table, so every attempt makes
 * the same allocations. */
TEST(out_of_memory_in_commits)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "oom-commit"), FLOE_OK);
    floe__table *t = open_t(&e, "t", "id bigint not null, s text", NULL);
    if (!t) {
        env_close(&e);
        return;
    }
    const char *rows[] = {"{\"id\": 1, \"s\": \"a\"}", "{\"id\": 2}"};
    floe__content_list files = {0};
    CHECK_EQ_INT(write_rows(t, rows, 2, NULL, &files), FLOE_OK);
    floe__posdel_writer *pw = NULL;
    CHECK_EQ_INT(floe__posdel_writer_new(t, NULL, &pw, NULL), FLOE_OK);
    if (pw && files.n) {
        floe__posdel_add(pw, files.files[0].path, 1, NULL);
        CHECK_EQ_INT(floe__posdel_writer_close(pw, &files, NULL), FLOE_OK);
    }
    floe__table_free(t);
    bool done = false;
    int failures = 0, landed = 0;
    for (long n = 0; n < 100000 && !done; n++) {
        char name[32];
        snprintf(name, sizeof name, "t%ld", n);
        t = open_t(&e, name, "id bigint not null, s text", NULL);
        if (!t)
            break;
        floe__commit_request req = {.files = files.files, .n_files = files.n, .summary = NULL,
                                    .base_snapshot_id = -1, .tag = NULL};
        int64_t id = -1;
        floe__alloc_fail_after(n);
        int rc = floe__table_commit(t, &req, &id, e.err);
        done = failure_pending(n) && rc == FLOE_OK;
        char meta[64];
        snprintf(meta, sizeof meta, "wh/db/%s/metadata", name);
        int avro = count_files(env_path(&e, meta), ".avro");
        if (rc == FLOE_OK) {
            landed++;
            CHECK_EQ_INT(floe__metadata_current_snapshot_id(t->loaded->metadata), id);
            CHECK_EQ_INT(avro, 3);            /* two manifests and the list */
        } else {
            failures++;
            if (rc != FLOE_ENOMEM && rc != FLOE_ELIMIT && rc != FLOE_ECATALOG) {
                fprintf(stderr, "n=%ld: %s\n", n, floe_error_message(e.err));
                CHECK(0);
            }
            CHECK_EQ_INT(floe__table_refresh(t, e.err), FLOE_OK);
            CHECK_EQ_INT(floe__metadata_current_snapshot_id(t->loaded->metadata), -1);
            if (avro) fprintf(stderr, "n=%ld left %d: %s\n", n, avro, floe_error_message(e.err));
            CHECK_EQ_INT(avro, 0);            /* nothing left behind */
        }
        floe__table_free(t);
    }
    CHECK(done);
    CHECK(failures > 50);
    CHECK(landed >= 1);
    floe__content_list_clear(&files);
    env_close(&e);
}

int main(void)
{
    make_tmp();
    RUN(compatible_ignores_field_ids);
    RUN(incompatible_names_the_first_difference);
    RUN(uuid_alternatives);
    RUN(project_keeps_ids);
    RUN(open_creates_and_carries_declared_types);
    RUN(file_writer_rolls_names_and_aborts);
    RUN(position_deletes_sorted_and_bounded);
    RUN(manifest_round_trip);
    RUN(manifest_list_round_trip);
    RUN(manifest_list_v1_shapes);
    RUN(commit_summaries_and_totals);
    RUN(commit_conflict_removes_what_it_wrote);
    RUN(partitioned_manifest_round_trip);
    RUN(partitioned_writer_memory_budget);
    RUN(partitioned_writer_commits_tuples);
    RUN(refuses_partitioned_and_v1_tables);
    RUN(public_api);
    RUN(public_api_partitioned);
    RUN(out_of_memory_in_manifests);
    RUN(out_of_memory_in_commits);
    remove_tmp();
    return UNIT_DONE();
}
