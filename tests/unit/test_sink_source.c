/*
 * test_sink_source.c - the parts of the public sink API that sources other
 * than NDJSON lean on (the Postgres mirror): retractions by key
 * (floe_sink_retract_key), commits the caller times (commit_on_advance), an
 * as-of set after opening (floe_sink_set_as_of) and summary properties of
 * the caller's (floe_sink_set_property), the snapshot batch written in
 * bulk by parts on threads (sink_bulk.c).  A real sink on a SQLite catalog
 * in a temporary directory; what landed is read back through floe_table.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "floe.h"
#include "sink/sink_internal.h"
#include "unit.h"

static char tmp_root[256];

typedef struct fix {
    char catalog[400], warehouse[400], index[400];
    floe_sink *sink;
    floe_row *row;
    floe_error *err;
} fix;

static int fix_open_mem(fix *f, const char *name, floe_delete_mode mode, uint64_t as_of,
                        size_t memory)
{
    memset(f, 0, sizeof *f);
    snprintf(f->catalog, sizeof f->catalog, "sqlite:%s/%s.db", tmp_root, name);
    snprintf(f->warehouse, sizeof f->warehouse, "%s/%s-wh", tmp_root, name);
    snprintf(f->index, sizeof f->index, "%s/%s-index", tmp_root, name);
    f->err = floe_error_new();
    /* every string the caller's own, scribbled over and freed after open:
     * the sink must have copied what it uses later (the committer, the
     * maintenance thread's catalog connection) */
    char *str[] = {strdup("ns.t"), strdup("id bigint not null, v text not null"), strdup("id"),
                   strdup(f->catalog), strdup(f->warehouse), strdup(f->index),
                   strdup("commit.manifest.min-count-to-merge"), strdup("3")};
    const char *props[] = {str[6], str[7], NULL};
    floe_sink_options o;
    floe_sink_options_init(&o, sizeof o);
    o.table = str[0];
    o.schema = str[1];
    o.key = str[2];
    floe_connect_options co;
    floe_connect_options_init(&co, sizeof co);
    co.catalog = str[3];
    co.warehouse = str[4];
    o.connect = &co;
    o.index_dir = str[5];
    o.properties = props;
    o.delete_mode = mode;
    o.commit_on_advance = 1;
    o.commit_interval = 0;             /* not used */
    o.as_of = as_of;
    o.memory_limit = memory;
    int rc = floe_sink_open(&o, &f->sink, f->err);
    memset(&co, 0x5a, sizeof co);       /* the connect options too: copied */
    for (size_t i = 0; i < sizeof str / sizeof *str; i++) {
        memset(str[i], 'x', strlen(str[i]));
        free(str[i]);
    }
    if (rc != FLOE_OK) {
        fprintf(stderr, "open: %s\n", floe_error_message(f->err));
        return rc;
    }
    return floe_row_new(floe_sink_row_schema(f->sink), &f->row, f->err);
}

static int fix_open(fix *f, const char *name, floe_delete_mode mode, uint64_t as_of)
{
    return fix_open_mem(f, name, mode, as_of, 0);
}

static void fix_close(fix *f)
{
    floe_row_free(f->row);
    floe_sink_free(f->sink);
    floe_error_free(f->err);
}

static int push(fix *f, uint64_t time, int64_t diff, const char *json)
{
    int rc = floe_row_set_json(f->row, json, strlen(json), f->err);
    return rc == FLOE_OK ? floe_sink_push(f->sink, f->row, time, diff, f->err) : rc;
}

/* A retraction by key: the row's other columns are not read. */
static int by_key(fix *f, uint64_t time, int id)
{
    char json[64];
    snprintf(json, sizeof json, "{\"id\": %d, \"v\": \"not read\"}", id);
    int rc = floe_row_set_json(f->row, json, strlen(json), f->err);
    return rc == FLOE_OK ? floe_sink_retract_key(f->sink, f->row, time, f->err) : rc;
}

/* The table's current total-records and the summary property `key` of its
 * last snapshot (copied into val). */
static void table_state(fix *f, uint64_t *records, char *val, size_t cap, const char *key)
{
    floe_connect_options co;
    floe_connect_options_init(&co, sizeof co);
    co.catalog = f->catalog;
    co.warehouse = f->warehouse;
    floe_catalog *c = NULL;
    floe_table *t = NULL;
    *records = UINT64_MAX;
    val[0] = '\0';
    if (floe_catalog_open(&co, &c, NULL) != FLOE_OK ||
        floe_table_open(c, "ns.t", NULL, NULL, &t, NULL) != FLOE_OK)
        goto out;
    size_t n = floe_table_snapshot_count(t);
    if (n == 0)
        goto out;
    const char *r = floe_table_snapshot_property(t, n - 1, "total-records");
    const char *d = floe_table_snapshot_property(t, n - 1, "total-position-deletes");
    if (r)
        *records = strtoull(r, NULL, 10) - (d ? strtoull(d, NULL, 10) : 0);
    const char *v = floe_table_snapshot_property(t, n - 1, key);
    if (v)
        snprintf(val, cap, "%s", v);
out:
    floe_table_free(t);
    floe_catalog_free(c);
}

TEST(retractions_by_key_update_and_delete_the_live_rows)
{
    fix f;
    if (fix_open(&f, "bykey", FLOE_DELETE_POSITION, 99) != FLOE_OK)
        goto out;
    CHECK_EQ_INT(floe_sink_set_property(f.sink, "floe.source", "test", f.err), FLOE_OK);
    CHECK_EQ_INT(push(&f, 5, 1, "{\"id\": 1, \"v\": \"a\"}"), FLOE_OK);   /* the snapshot */
    CHECK_EQ_INT(push(&f, 5, 1, "{\"id\": 2, \"v\": \"b\"}"), FLOE_OK);
    CHECK_EQ_INT(floe_sink_advance(f.sink, 100, f.err), FLOE_OK);
    floe_sink_stats st;
    floe_sink_stats_get(f.sink, &st, sizeof st);
    CHECK_EQ_INT(st.snapshots_committed, 1);
    CHECK(st.has_committed_frontier && st.committed_frontier == 100);
    CHECK_EQ_INT(by_key(&f, 150, 1), FLOE_OK);                          /* update of 1 */
    CHECK_EQ_INT(push(&f, 150, 1, "{\"id\": 1, \"v\": \"a2\"}"), FLOE_OK);
    CHECK_EQ_INT(by_key(&f, 160, 2), FLOE_OK);                          /* delete of 2 */
    CHECK_EQ_INT(by_key(&f, 170, 3), FLOE_OK);                          /* no such key */
    CHECK_EQ_INT(floe_sink_advance(f.sink, 200, f.err), FLOE_OK);       /* one commit */
    floe_sink_stats_get(f.sink, &st, sizeof st);
    CHECK_EQ_INT(st.snapshots_committed, 2);
    CHECK_EQ_INT(st.retractions_missing, 1);
    CHECK_EQ_INT(st.retractions_mismatched, 0);
    CHECK_EQ_INT(floe_sink_advance(f.sink, 200, f.err), FLOE_OK);       /* nothing new */
    CHECK_EQ_INT(floe_sink_advance(f.sink, 250, f.err), FLOE_OK);       /* an empty commit */
    floe_sink_stats_get(f.sink, &st, sizeof st);
    CHECK_EQ_INT(st.snapshots_committed, 3);
    uint64_t records;
    char val[64];
    table_state(&f, &records, val, sizeof val, "floe.source");
    CHECK_EQ_INT(records, 1);                                           /* (1, a2) */
    CHECK_EQ_STR(val, "test");
    table_state(&f, &records, val, sizeof val, "floe.frontier");
    CHECK_EQ_STR(val, "[250]");
out:
    fix_close(&f);
}

TEST(retractions_by_key_in_equality_mode)
{
    fix f;
    if (fix_open(&f, "bykey-eq", FLOE_DELETE_EQUALITY, 0) != FLOE_OK)
        goto out;
    CHECK_EQ_INT(push(&f, 0, 1, "{\"id\": 1, \"v\": \"a\"}"), FLOE_OK);
    CHECK_EQ_INT(floe_sink_advance(f.sink, 10, f.err), FLOE_OK);
    CHECK_EQ_INT(by_key(&f, 10, 1), FLOE_OK);
    CHECK_EQ_INT(floe_sink_advance(f.sink, 11, f.err), FLOE_OK);
    floe_sink_stats st;
    floe_sink_stats_get(f.sink, &st, sizeof st);
    CHECK_EQ_INT(st.delete_files, 1);                                  /* an equality delete */
out:
    fix_close(&f);
}

TEST(as_of_can_be_set_only_on_a_fresh_untouched_sink)
{
    fix f;
    if (fix_open(&f, "asof", FLOE_DELETE_POSITION, 0) != FLOE_OK)
        goto out;
    CHECK_EQ_INT(floe_sink_set_as_of(f.sink, 1000, f.err), FLOE_OK);
    CHECK_EQ_INT(push(&f, 3, 1, "{\"id\": 1, \"v\": \"a\"}"), FLOE_OK);   /* advanced to 1000 */
    CHECK_EQ_INT(floe_sink_set_as_of(f.sink, 2000, f.err), FLOE_ESTATE);
    CHECK_EQ_INT(floe_sink_advance(f.sink, 1001, f.err), FLOE_OK);
    uint64_t records;
    char val[64];
    table_state(&f, &records, val, sizeof val, "floe.frontier");
    CHECK_EQ_STR(val, "[1001]");
    CHECK_EQ_INT(records, 1);
    CHECK_EQ_INT(floe_sink_set_property(f.sink, "floe.frontier", "[1]", f.err), FLOE_EINVAL);
    CHECK_EQ_INT(floe_sink_set_property(f.sink, "other", "x", f.err), FLOE_EINVAL);
    CHECK_EQ_INT(floe_sink_set_property(f.sink, "floe.", "x", f.err), FLOE_EINVAL);
out:
    fix_close(&f);
}

TEST(a_retraction_by_key_needs_declared_key_columns)
{
    char catalog[400], warehouse[400];
    snprintf(catalog, sizeof catalog, "sqlite:%s/append.db", tmp_root);
    snprintf(warehouse, sizeof warehouse, "%s/append-wh", tmp_root);
    floe_sink_options o;
    floe_sink_options_init(&o, sizeof o);
    o.table = "ns.a";
    o.schema = "id bigint not null";
    o.mode = FLOE_SINK_MODE_UPSERT;              /* keyed by the whole row */
    floe_connect_options co;
    floe_connect_options_init(&co, sizeof co);
    co.catalog = catalog;
    co.warehouse = warehouse;
    o.connect = &co;
    o.index_dir = "";
    floe_sink *s = NULL;
    floe_row *row = NULL;
    CHECK_EQ_INT(floe_sink_open(&o, &s, NULL), FLOE_OK);
    if (s && floe_row_new(floe_sink_row_schema(s), &row, NULL) == FLOE_OK) {
        CHECK_EQ_INT(floe_row_set_json(row, "{\"id\": 1}", 9, NULL), FLOE_OK);
        CHECK_EQ_INT(floe_sink_retract_key(s, row, 5, NULL), FLOE_EINVAL);
    }
    floe_row_free(row);
    floe_sink_free(s);
}

/* One part of a bulk snapshot batch on a thread of its own: ids from, +2, ... */
typedef struct part_arg {
    floe__bulk *bulk;
    floe_sink *sink;
    int from, n;
    int rc;
} part_arg;

static void *write_part(void *arg)
{
    part_arg *a = arg;
    floe_row *row = NULL;
    floe__bulk_part *p = NULL;
    a->rc = floe_row_new(floe_sink_row_schema(a->sink), &row, NULL);
    if (a->rc == FLOE_OK)
        a->rc = floe__bulk_part_new(a->bulk, 0, &p, NULL);
    for (int i = 0; a->rc == FLOE_OK && i < a->n; i++) {
        char json[64];
        int n = snprintf(json, sizeof json, "{\"id\": %d, \"v\": \"bulk\"}", a->from + 2 * i);
        a->rc = floe_row_set_json(row, json, (size_t)n, NULL);
        if (a->rc == FLOE_OK)
            a->rc = floe__bulk_part_write(p, row->data.data, row->data.len, NULL);
    }
    if (a->rc == FLOE_OK)
        a->rc = floe__bulk_part_finish(p, NULL);
    floe__bulk_part_free(p);
    floe_row_free(row);
    return NULL;
}

/* Two parts write the snapshot batch at once while this thread indexes;
 * it commits as one snapshot, and retractions by key after it find every
 * row (position mode) or delete by key (equality mode). */
static void bulk_snapshot(floe_delete_mode mode, const char *name, size_t memory, uint64_t expect)
{
    enum { ROWS = 30000 };
    fix f;
    floe__bulk *b = NULL;
    if (fix_open_mem(&f, name, mode, 99, memory) != FLOE_OK)
        goto out;
    CHECK_EQ_INT(floe__bulk_begin(f.sink, 99, 2, expect, &b, f.err), FLOE_OK);
    CHECK_EQ_INT(floe__bulk_begin(f.sink, 99, 2, 0, &(floe__bulk *){NULL}, NULL), FLOE_ESTATE);
    if (!b)
        goto out;
    part_arg a[2] = {{b, f.sink, 0, ROWS, 0}, {b, f.sink, 1, ROWS, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        CHECK_EQ_INT(pthread_create(&th[i], NULL, write_part, &a[i]), 0);
    size_t finished = 0;
    while (finished < 2)
        CHECK_EQ_INT(floe__bulk_index(b, 20, &finished, f.err), FLOE_OK);
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(a[i].rc, FLOE_OK);
    }
    CHECK_EQ_INT(floe__bulk_rows(b), 2 * ROWS);
    CHECK_EQ_INT(floe__bulk_seal(b, f.err), FLOE_OK);
    CHECK_EQ_INT(floe_sink_advance(f.sink, 100, f.err), FLOE_OK);
    uint64_t records;
    char val[64];
    table_state(&f, &records, val, sizeof val, "floe.frontier");
    CHECK_EQ_STR(val, "[100]");
    CHECK_EQ_INT(records, 2 * ROWS);
    for (int id = 0; id < 2 * ROWS; id += 7)                        /* both parts' rows */
        CHECK_EQ_INT(by_key(&f, 150, id), FLOE_OK);
    CHECK_EQ_INT(push(&f, 150, 1, "{\"id\": 7, \"v\": \"again\"}"), FLOE_OK);
    CHECK_EQ_INT(floe_sink_advance(f.sink, 200, f.err), FLOE_OK);
    floe_sink_stats st;
    floe_sink_stats_get(f.sink, &st, sizeof st);
    CHECK_EQ_INT(st.retractions_missing, 0);
    CHECK_EQ_INT(st.snapshots_committed, 2);
    table_state(&f, &records, val, sizeof val, "floe.frontier");
    if (mode == FLOE_DELETE_POSITION)           /* equality deletes are not counted there */
        CHECK_EQ_INT(records, 2 * ROWS - (2 * ROWS + 6) / 7 + 1);
out:
    floe__bulk_free(b);
    fix_close(&f);
}

TEST(a_bulk_snapshot_batch_from_two_threads_indexes_every_row)
{
    bulk_snapshot(FLOE_DELETE_POSITION, "bulk", 0, 60000);
}

/* More rows expected than the index's memory holds: it is built in sorted
 * runs (keyindex_build.c), several chunks merged (an 8 MiB limit gives the
 * index 4 MiB: chunks of about 50,000 rows). */
TEST(a_bulk_snapshot_batch_larger_than_the_index_memory_builds_runs)
{
    bulk_snapshot(FLOE_DELETE_POSITION, "bulk-runs", (size_t)8 << 20, 1000000);
}

TEST(a_bulk_snapshot_batch_in_equality_mode)
{
    bulk_snapshot(FLOE_DELETE_EQUALITY, "bulk-eq", 0, 60000);
}

int main(void)
{
    unit_make_tmp(tmp_root, sizeof tmp_root, "sink-source");
    RUN(retractions_by_key_update_and_delete_the_live_rows);
    RUN(retractions_by_key_in_equality_mode);
    RUN(as_of_can_be_set_only_on_a_fresh_untouched_sink);
    RUN(a_retraction_by_key_needs_declared_key_columns);
    RUN(a_bulk_snapshot_batch_from_two_threads_indexes_every_row);
    RUN(a_bulk_snapshot_batch_larger_than_the_index_memory_builds_runs);
    RUN(a_bulk_snapshot_batch_in_equality_mode);
    unit_remove_tmp(tmp_root);
    return UNIT_DONE();
}
