/*
 * test_writer.c - the writer (src/sink/write.c): consolidated updates into
 * data, position delete and equality delete files per batch (SPEC 6), for
 * declared keys, keys of the whole row (with duplicates), equality and
 * position mode (the key index), the snapshot batch, append mode, and the
 * end of an input (truncation).
 */
#include <stdio.h>

#include "scripted_catalog.h"
#include "keyindex/keyindex_internal.h"
#include "source/source_internal.h"
#include "unit.h"

static char tmp_root[256];

typedef struct wfix {
    char dir[400];
    floe__fileio *io;
    scripted *sc;
    floe__table *t;
    floe__schema *eq;
    int32_t eq_ids[2];
    floe__writer_config cfg;
    floe__writer *w;
    floe__buf row, key;
    floe__kx *kx;
    int warnings;
} wfix;

static void on_warn(void *ctx, const char *msg)
{
    (void)msg;
    ((wfix *)ctx)->warnings++;
}

/* A writer on table ns.t (schema `columns`, "id bigint not null, v text"
 * for upsert): upsert keyed by `key` ("id", or NULL: the whole row), or
 * append mode when !upsert. */
static int wfix_open(wfix *f, const char *name, const char *columns, bool upsert,
                     const char *key, bool positions)
{
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s/%s", tmp_root, name);
    floe__buf_init(&f->row, 0);
    floe__buf_init(&f->key, 0);
    f->sc = sc_open(f->dir, &f->io, NULL);
    floe__schema *d = NULL;
    if (!f->sc || floe_schema_parse(columns, &d, NULL) != FLOE_OK ||
        floe__table_open(&f->sc->base, f->io, "ns", "t", d, NULL, &f->t, NULL) != FLOE_OK) {
        floe_schema_free(d);
        return -1;
    }
    floe_schema_free(d);
    f->cfg.table = f->t;
    f->cfg.upsert = upsert;
    f->cfg.synthetic_key = upsert && !key;
    f->cfg.data_schema = f->t->schema;
    if (positions)
        CHECK_EQ_INT(floe__kx_new(NULL, &f->kx, NULL), FLOE_OK);
    f->cfg.kx = f->kx;
    f->cfg.warn = on_warn;
    f->cfg.warn_ctx = f;
    CHECK_EQ_INT(floe__table_file_options(f->t, FLOE_CONTENT_DATA, &f->cfg.file_opts, NULL),
                 FLOE_OK);
    CHECK_EQ_INT(floe__table_file_options(f->t, FLOE_CONTENT_EQUALITY_DELETES,
                                          &f->cfg.eqdel_opts, NULL), FLOE_OK);
    if (upsert) {                 /* equality deletes on the key, or on every column */
        const char *names[] = {"id", "v"};
        size_t n = key ? 1 : 2;
        CHECK_EQ_INT(floe__schema_project(f->t->schema, names, n, &f->eq, NULL), FLOE_OK);
        for (size_t i = 0; i < n; i++)
            f->eq_ids[i] = f->eq->root.children[i].id;
        f->cfg.eq_schema = f->eq;
        f->cfg.eq_ids = f->eq_ids;
        f->cfg.n_eq_ids = n;
    }
    return floe__writer_new(&f->cfg, &f->w, NULL);
}

static void wfix_close(wfix *f)
{
    floe__writer_free(f->w);
    floe__kx_free(f->kx);
    floe_schema_free(f->eq);
    floe__table_free(f->t);
    if (f->sc)
        floe__catalog_free(&f->sc->base);
    floe__fileio_free(f->io);
    floe__buf_free(&f->row);
    floe__buf_free(&f->key);
}

static void add_batch(wfix *f, uint64_t lo, uint64_t hi, bool snapshot)
{
    floe__batch b = {floe__frontier_at(lo), floe__frontier_at(hi), snapshot, 0, false, 0};
    CHECK_EQ_INT(floe__writer_add_batch(f->w, &b, NULL), FLOE_OK);
}

/* One consolidated update of the JSON row; the key is the first column's
 * slot for a declared key (every test keys by its first column). */
static void put(wfix *f, uint64_t time, int64_t diff, const char *json)
{
    floe__buf_reset(&f->row);
    const char *end;
    CHECK_EQ_INT(floe__json_parse_row(f->t->schema, json, json + strlen(json), &end, &f->row,
                                      NULL), FLOE_OK);
    floe__buf_reset(&f->key);
    if (!f->cfg.synthetic_key && f->cfg.upsert) {
        const uint8_t *k = floe__datum_skip(&f->t->schema->root.children[0], f->row.data,
                                            f->row.data + f->row.len);
        floe__buf_append(&f->key, f->row.data, (size_t)(k - f->row.data), NULL);
    }
    floe__upd u = {time, diff, f->key.data, f->row.data, (uint32_t)f->key.len,
                   (uint32_t)f->row.len, false};
    CHECK_EQ_INT(floe__writer_write(f->w, &u, NULL), FLOE_OK);
}

static floe__sealed *seal(wfix *f, uint64_t frontier)
{
    floe__sealed *s = NULL;
    CHECK_EQ_INT(floe__writer_seal_next(f->w, floe__frontier_at(frontier), &s, NULL), FLOE_OK);
    return s;
}

static size_t files_of(const floe__sealed *s, floe__content c)
{
    size_t n = 0;
    for (size_t i = 0; s && i < s->files.n; i++)
        n += s->files.files[i].content == c;
    return n;
}

/* ---- upsert with a declared key ---------------------------------------------------------- */

TEST(a_key_updated_within_a_batch_writes_only_what_survives)
{
    wfix f;
    if (wfix_open(&f, "keyed", "id bigint not null, v text", true, "id", false) != 0)
        goto out;
    add_batch(&f, 0, 10, false);
    put(&f, 1, 1, "{\"id\": 1, \"v\": \"a\"}");
    put(&f, 2, -1, "{\"id\": 1, \"v\": \"a\"}");         /* update at 2 */
    put(&f, 2, 1, "{\"id\": 1, \"v\": \"b\"}");
    put(&f, 3, -1, "{\"id\": 1, \"v\": \"b\"}");         /* delete at 3 */
    put(&f, 3, -1, "{\"id\": 2, \"v\": \"z\"}");         /* a key of an earlier snapshot */
    put(&f, 4, 1, "{\"id\": 3, \"v\": \"c\"}");
    put(&f, 5, -1, "{\"id\": 3, \"v\": \"c\"}");         /* updated twice: one row left */
    put(&f, 5, 1, "{\"id\": 3, \"v\": \"d\"}");
    put(&f, 6, -1, "{\"id\": 3, \"v\": \"d\"}");
    put(&f, 6, 1, "{\"id\": 3, \"v\": \"e\"}");
    floe__sealed *s = seal(&f, 10);
    CHECK(s != NULL);
    if (s) {
        CHECK_EQ_INT(s->rows_written, 1);               /* only (3, e) */
        CHECK_EQ_INT(s->position_deletes, 0);           /* a batch never deletes its own rows */
        CHECK_EQ_INT(s->equality_deletes, 1);           /* id 2 */
        CHECK_EQ_INT(files_of(s, FLOE_CONTENT_DATA), 1);
        CHECK_EQ_INT(files_of(s, FLOE_CONTENT_EQUALITY_DELETES), 1);
    }
    floe__sealed_free(s);
    CHECK_EQ_INT(f.warnings, 0);
out:
    wfix_close(&f);
}

TEST(two_insertions_of_a_key_at_one_time_warn_and_both_can_be_retracted)
{
    wfix f;
    if (wfix_open(&f, "pk", "id bigint not null, v text", true, "id", false) != 0)
        goto out;
    add_batch(&f, 0, 10, false);
    put(&f, 1, 1, "{\"id\": 1, \"v\": \"a\"}");
    put(&f, 1, 1, "{\"id\": 1, \"v\": \"b\"}");
    put(&f, 4, -1, "{\"id\": 1, \"v\": \"a\"}");
    put(&f, 4, -1, "{\"id\": 1, \"v\": \"b\"}");
    floe__sealed *s = seal(&f, 10);
    if (s) {
        CHECK_EQ_INT(s->rows_written, 0);
        CHECK_EQ_INT(s->position_deletes + s->equality_deletes, 0);
    }
    floe__sealed_free(s);
    floe__writer_stats st;
    floe__writer_get_stats(f.w, &st);
    CHECK_EQ_INT(st.pk_violations, 1);
    CHECK_EQ_INT(f.warnings, 1);
out:
    wfix_close(&f);
}

/* A batch's updates of one key can come in two closes (the frontier passed
 * part of the batch first): the second retracts a row the first wrote,
 * which only a position delete of the batch's own file removes. */
TEST(a_row_written_in_an_earlier_close_of_the_batch_is_deleted_by_position)
{
    for (int positions = 0; positions < 2; positions++) {
        wfix f;
        if (wfix_open(&f, positions ? "two-closes-pos" : "two-closes", "id bigint not null, v text",
                      true, "id", positions) != 0) {
            wfix_close(&f);
            continue;
        }
        add_batch(&f, 0, 10, false);
        put(&f, 1, 1, "{\"id\": 1, \"v\": \"a\"}");
        CHECK_EQ_INT(floe__writer_flush(f.w, NULL), FLOE_OK);        /* the first close */
        put(&f, 5, -1, "{\"id\": 1, \"v\": \"a\"}");
        put(&f, 5, 1, "{\"id\": 1, \"v\": \"b\"}");
        floe__sealed *s = seal(&f, 10);
        if (s) {
            CHECK_EQ_INT(s->rows_written, 2);
            CHECK_EQ_INT(s->position_deletes, 1);
            CHECK_EQ_INT(s->equality_deletes, 0);
            CHECK(s->dels.paths.n == 1 && strcmp(s->dels.paths.s[0], s->files.files[0].path) == 0);
            floe__posdel_set *set = NULL;
            CHECK_EQ_INT(floe__delrecs_set(&s->dels, &set, NULL), FLOE_OK);
            CHECK(set && floe__posdel_set_count(set) == 1);
            floe__posdel_set_free(set);
        }
        floe__sealed_free(s);
        CHECK_EQ_INT(f.warnings, 0);
        wfix_close(&f);
    }
}

static uint64_t keys_in(wfix *f)
{
    floe__kx_stats st;
    floe__kx_get_stats(f->kx, &st);
    return st.keys;
}

/* The JSON row into f->row, its first column's slot (the key) into f->key. */
static void parse_keyed(wfix *f, const char *json)
{
    floe__buf_reset(&f->row);
    const char *end;
    CHECK_EQ_INT(floe__json_parse_row(f->t->schema, json, json + strlen(json), &end, &f->row,
                                      NULL), FLOE_OK);
    const uint8_t *k = floe__datum_skip(&f->t->schema->root.children[0], f->row.data,
                                        f->row.data + f->row.len);
    floe__buf_reset(&f->key);
    floe__buf_append(&f->key, f->row.data, (size_t)(k - f->row.data), NULL);
}

/* A retraction by key (floe_sink_retract_key): the key with an empty row. */
static void put_by_key(wfix *f, uint64_t time, int64_t id)
{
    char json[64];
    snprintf(json, sizeof json, "{\"id\": %lld}", (long long)id);
    parse_keyed(f, json);
    floe__upd u = {time, -1, f->key.data, f->row.data + f->row.len, (uint32_t)f->key.len, 0,
                   false};
    CHECK_EQ_INT(floe__writer_write(f->w, &u, NULL), FLOE_OK);
}

/* Position mode: a retraction by key takes the live row of an earlier batch
 * (whatever it holds, without a "differs" warning), or a row the batch
 * inserted at an earlier time; never one inserted at the same time. */
TEST(a_retraction_by_key_takes_the_live_row_without_a_warning)
{
    wfix f;
    if (wfix_open(&f, "by-key", "id bigint not null, v text", true, "id", true) != 0)
        goto out;
    add_batch(&f, 0, 10, false);
    add_batch(&f, 10, 20, false);
    put(&f, 1, 1, "{\"id\": 1, \"v\": \"a\"}");
    put(&f, 2, 1, "{\"id\": 2, \"v\": \"b\"}");
    put(&f, 3, 1, "{\"id\": 3, \"v\": \"c\"}");
    put_by_key(&f, 5, 3);                                 /* deletes (3, c) of this batch */
    put_by_key(&f, 11, 1);                                /* update of key 1: by key ... */
    put(&f, 11, 1, "{\"id\": 1, \"v\": \"a2\"}");     /* ... then the new row */
    put_by_key(&f, 13, 1);                                /* updated again, a later time */
    put(&f, 13, 1, "{\"id\": 1, \"v\": \"a3\"}");     /* (a key's updates come together) */
    put_by_key(&f, 12, 2);                                /* delete of key 2 */
    put_by_key(&f, 14, 9);                                /* no live row: warned */
    floe__sealed *a = seal(&f, 10), *b = seal(&f, 20);
    CHECK(a && b);
    if (a && b) {
        CHECK_EQ_INT(a->rows_written, 2);                 /* (1, a), (2, b) */
        CHECK_EQ_INT(a->position_deletes, 0);
        CHECK_EQ_INT(b->rows_written, 1);                 /* only (1, a3) */
        CHECK_EQ_INT(b->position_deletes, 2);             /* (1, a) and (2, b) of batch 1 */
        CHECK_EQ_INT(b->equality_deletes, 0);
    }
    floe__writer_stats st;
    floe__writer_get_stats(f.w, &st);
    CHECK_EQ_INT(st.retract_mismatch, 0);
    CHECK_EQ_INT(st.retract_missing, 1);
    CHECK_EQ_INT(st.pk_violations, 0);
    CHECK_EQ_INT(f.warnings, 1);
    CHECK_EQ_INT(keys_in(&f), 1);                         /* (1, a3) */
    floe__sealed_free(a);
    floe__sealed_free(b);
out:
    wfix_close(&f);
}

/* Equality mode: a retraction by key of an earlier snapshot's row is an
 * equality delete on the key; one of a row the batch wrote in an earlier
 * close is a position delete. */
TEST(a_retraction_by_key_in_equality_mode)
{
    wfix f;
    if (wfix_open(&f, "by-key-eq", "id bigint not null, v text", true, "id", false) != 0)
        goto out;
    add_batch(&f, 0, 10, false);
    put(&f, 1, 1, "{\"id\": 1, \"v\": \"a\"}");
    CHECK_EQ_INT(floe__writer_flush(f.w, NULL), FLOE_OK);          /* a first close */
    put_by_key(&f, 4, 1);
    put(&f, 4, 1, "{\"id\": 1, \"v\": \"b\"}");
    put_by_key(&f, 5, 7);                                 /* an older snapshot's key */
    floe__sealed *s = seal(&f, 10);
    if (s) {
        CHECK_EQ_INT(s->rows_written, 2);
        CHECK_EQ_INT(s->position_deletes, 1);
        CHECK_EQ_INT(s->equality_deletes, 1);
    }
    floe__sealed_free(s);
    CHECK_EQ_INT(f.warnings, 0);
out:
    wfix_close(&f);
}

/* ---- keys of the whole row ----------------------------------------------------------- */

TEST(duplicates_under_a_whole_row_key_keep_their_multiplicity)
{
    wfix f;
    if (wfix_open(&f, "synthetic", "id bigint not null, v text", true, NULL, false) != 0)
        goto out;
    add_batch(&f, 0, 10, false);
    add_batch(&f, 10, 20, false);
    put(&f, 1, 2, "{\"id\": 4, \"v\": \"d\"}");           /* +2 */
    put(&f, 5, -1, "{\"id\": 4, \"v\": \"d\"}");          /* -1 later: one copy stays */
    put(&f, 6, 2, "{\"id\": 5, \"v\": \"e\"}");           /* +2, -2 in one batch */
    put(&f, 7, -2, "{\"id\": 5, \"v\": \"e\"}");
    put(&f, 12, -1, "{\"id\": 9, \"v\": \"q\"}");         /* an earlier snapshot's row */
    floe__sealed *s = seal(&f, 10);
    if (s) {
        CHECK_EQ_INT(s->rows_written, 1);
        CHECK_EQ_INT(s->position_deletes + s->equality_deletes, 0);
    }
    floe__sealed_free(s);
    s = seal(&f, 20);
    if (s) {
        CHECK_EQ_INT(s->rows_written, 0);
        CHECK_EQ_INT(s->equality_deletes, 1);
    }
    floe__sealed_free(s);
    CHECK_EQ_INT(f.warnings, 0);                          /* duplicates are no violation */
out:
    wfix_close(&f);
}

/* ---- position mode: the key index ----------------------------------------------------------- */

TEST(position_mode_deletes_rows_of_earlier_batches_by_position)
{
    wfix f;
    if (wfix_open(&f, "position", "id bigint not null, v text", true, "id", true) != 0)
        goto out;
    add_batch(&f, 0, 10, false);
    add_batch(&f, 10, 20, false);
    put(&f, 1, 1, "{\"id\": 1, \"v\": \"a\"}");
    put(&f, 2, 1, "{\"id\": 2, \"v\": \"b\"}");
    put(&f, 11, -1, "{\"id\": 1, \"v\": \"a\"}");        /* an update of batch 1's row */
    put(&f, 11, 1, "{\"id\": 1, \"v\": \"aa\"}");
    put(&f, 12, -1, "{\"id\": 2, \"v\": \"not b\"}");    /* differs from the live row */
    put(&f, 13, -1, "{\"id\": 7, \"v\": \"x\"}");        /* nothing to retract */
    put(&f, 14, 1, "{\"id\": 1, \"v\": \"again\"}");     /* key 1 is live: a violation */
    floe__sealed *a = seal(&f, 10), *b = seal(&f, 20);
    CHECK(a && b);
    if (a && b) {
        CHECK_EQ_INT(a->rows_written, 2);
        CHECK_EQ_INT(b->rows_written, 2);
        CHECK_EQ_INT(b->position_deletes, 2);
        CHECK_EQ_INT(b->equality_deletes, 0);
        CHECK_EQ_INT(b->dels.recs.len, 2 * (FLOE__DELETE_HEAD + 9));   /* key: slot of id */
        CHECK(b->kx_log && b->kx_log->n_ops == 2);                 /* the 2 rows it indexed */
        CHECK(b->dels.paths.n == 1 && floe__get_le32(b->dels.recs.data) == 0);
        CHECK_EQ_STR(b->dels.paths.s[0], a->files.files[0].path);
        CHECK_EQ_INT(floe__get_le64(b->dels.recs.data + 4), 0);    /* (1, a) was row 0 */
    }
    floe__writer_stats st;
    floe__writer_get_stats(f.w, &st);
    CHECK_EQ_INT(st.retract_mismatch, 1);
    CHECK_EQ_INT(st.retract_missing, 1);
    CHECK_EQ_INT(st.pk_violations, 1);
    CHECK_EQ_INT(f.warnings, 3);
    CHECK_EQ_INT(keys_in(&f), 2);                                   /* (1, aa), (1, again) */
    floe__sealed_free(a);
    floe__sealed_free(b);
out:
    wfix_close(&f);
}

TEST(position_mode_whole_row_duplicates_across_batches)
{
    wfix f;
    if (wfix_open(&f, "position-synthetic", "id bigint not null, v text", true, NULL, true) != 0)
        goto out;
    add_batch(&f, 0, 10, true);                                     /* the snapshot batch */
    add_batch(&f, 10, 20, false);
    put(&f, 0, 3, "{\"id\": 4, \"v\": \"d\"}");                      /* +3, indexed */
    put(&f, 15, -1, "{\"id\": 4, \"v\": \"d\"}");                    /* -1: one copy goes */
    floe__sealed *a = seal(&f, 10), *b = seal(&f, 20);
    if (a && b) {
        CHECK_EQ_INT(a->rows_written, 3);
        CHECK_EQ_INT(b->position_deletes, 1);
        CHECK_EQ_INT(b->equality_deletes, 0);
    }
    CHECK_EQ_INT(keys_in(&f), 2);
    CHECK_EQ_INT(f.warnings, 0);
    floe__sealed_free(a);
    floe__sealed_free(b);
out:
    wfix_close(&f);
}

TEST(the_snapshot_batch_only_inserts)
{
    wfix f;
    if (wfix_open(&f, "snapshot", "id bigint not null, v text", true, "id", false) != 0)
        goto out;
    add_batch(&f, 5, 6, true);
    put(&f, 5, 1, "{\"id\": 1, \"v\": \"a\"}");
    put(&f, 5, -1, "{\"id\": 2, \"v\": \"b\"}");
    floe__sealed *s = seal(&f, 6);
    if (s) {
        CHECK_EQ_INT(s->rows_written, 1);
        CHECK_EQ_INT(s->position_deletes + s->equality_deletes, 0);
    }
    floe__sealed_free(s);
    CHECK_EQ_INT(f.warnings, 1);                          /* the retraction is reported */
out:
    wfix_close(&f);
}

/* ---- append mode ------------------------------------------------------------------------ */

static int64_t upper_long(const floe__sealed *s, int32_t field_id)
{
    for (size_t i = 0; s && i < s->files.n; i++) {
        const floe__file_metrics *m = &s->files.files[i].metrics;
        for (size_t c = 0; c < m->n_columns; c++)
            if (m->columns[c].field_id == field_id && m->columns[c].has_upper)
                return (int64_t)floe__get_le64(m->columns[c].upper.data);
    }
    return -1;
}

TEST(append_writes_multiplicities_and_saturates_timestamps)
{
    wfix f;
    if (wfix_open(&f, "append", "id bigint not null, _diff integer not null, "
                                "_timestamp bigint not null", false, NULL, false) != 0)
        goto out;
    floe__batch b = {floe__frontier_at(0), floe__frontier_closed(), false, 0, false, 0};
    CHECK_EQ_INT(floe__writer_add_batch(f.w, &b, NULL), FLOE_OK);
    floe__schema *in = NULL;                  /* rows come without the two extra columns */
    const char *names[] = {"id"};
    CHECK_EQ_INT(floe__schema_project(f.t->schema, names, 1, &in, NULL), FLOE_OK);
    const char *end, *json = "{\"id\": 3}";
    floe__buf_reset(&f.row);
    CHECK_EQ_INT(floe__json_parse_row(in, json, json + strlen(json), &end, &f.row, NULL), FLOE_OK);
    floe__upd u = {UINT64_MAX, 3, NULL, f.row.data, 0, (uint32_t)f.row.len, false};
    CHECK_EQ_INT(floe__writer_write(f.w, &u, NULL), FLOE_OK);
    u.time = 7;
    u.diff = -2;
    CHECK_EQ_INT(floe__writer_write(f.w, &u, NULL), FLOE_OK);
    floe__sealed *s = NULL;
    CHECK_EQ_INT(floe__writer_seal_next(f.w, floe__frontier_closed(), &s, NULL), FLOE_OK);
    if (s) {
        CHECK_EQ_INT(s->rows_written, 5);
        CHECK_EQ_INT(upper_long(s, f.t->schema->root.children[2].id), INT64_MAX);  /* never wraps */
    }
    floe__sealed_free(s);
    floe_schema_free(in);
out:
    wfix_close(&f);
}

/* ---- the end of an input --------------------------------------------------------------------- */

TEST(truncation_ends_the_last_batch_at_the_end_of_the_input)
{
    wfix f;
    if (wfix_open(&f, "truncate", "id bigint not null, v text", true, "id", false) != 0)
        goto out;
    add_batch(&f, 0, 10, false);
    add_batch(&f, 10, 20, false);
    add_batch(&f, 20, 30, false);
    put(&f, 3, 1, "{\"id\": 1, \"v\": \"a\"}");
    put(&f, 12, 1, "{\"id\": 2, \"v\": \"b\"}");
    CHECK_EQ_INT(floe__writer_truncate(f.w, floe__frontier_at(13), NULL), FLOE_OK);
    floe__sealed *a = seal(&f, 13), *b = seal(&f, 13), *c = seal(&f, 13);
    CHECK(a && b && !c);
    if (a && b) {
        CHECK(a->desc.upper.t == 10 && b->desc.lower.t == 10 && b->desc.upper.t == 13);
        CHECK_EQ_INT(a->rows_written + b->rows_written, 2);
    }
    floe__sealed_free(a);
    floe__sealed_free(b);
    add_batch(&f, 13, 40, false);                         /* contiguous after the cut */
out:
    wfix_close(&f);
}

/* Set table property k to v (v NULL: remove it). */
static int set_property(wfix *f, const char *k, const char *v)
{
    json_t *up = v ? json_pack("[{s:s, s:{s:s}}]", "action", "set-properties", "updates", k, v)
                   : json_pack("[{s:s, s:[s]}]", "action", "remove-properties", "removals", k);
    json_t *req = json_array();
    int rc = up && req ? floe__table_update(f->t, req, up, NULL) : FLOE_ENOMEM;
    json_decref(up);
    json_decref(req);
    return rc;
}

/* The table's write properties as file options: floe's defaults, the
 * data forms, the delete forms over them, and clear errors. */
TEST(file_options_follow_the_tables_write_properties)
{
    wfix f;
    if (wfix_open(&f, "props", "id bigint not null, v text", false, NULL, false) != 0)
        goto out;
    floe__file_writer_options d, e;
    CHECK_EQ_INT(floe__table_file_options(f.t, FLOE_CONTENT_DATA, &d, NULL), FLOE_OK);
    CHECK_EQ_INT(d.parquet.compression, FLOE_COMPRESSION_ZSTD);
    CHECK(d.target_file_size == (uint64_t)512 << 20 && d.parquet.dictionary_limit == 2u << 20);
    CHECK_EQ_INT(floe__table_file_options(f.t, FLOE_CONTENT_POSITION_DELETES, &e, NULL), FLOE_OK);
    CHECK(e.target_file_size == (uint64_t)64 << 20);
    CHECK_EQ_INT(set_property(&f, "write.parquet.compression-codec", "GZIP"), FLOE_OK);
    CHECK_EQ_INT(set_property(&f, "write.parquet.compression-level", "9"), FLOE_OK);
    CHECK_EQ_INT(set_property(&f, "write.delete.parquet.compression-codec", "uncompressed"),
                 FLOE_OK);
    CHECK_EQ_INT(set_property(&f, "write.parquet.page-size-bytes", "4096"), FLOE_OK);
    CHECK_EQ_INT(floe__table_file_options(f.t, FLOE_CONTENT_DATA, &d, NULL), FLOE_OK);
    CHECK(d.parquet.compression == FLOE_COMPRESSION_GZIP && d.parquet.compression_level == 9);
    CHECK(d.parquet.page_size == 4096);
    CHECK_EQ_INT(floe__table_file_options(f.t, FLOE_CONTENT_EQUALITY_DELETES, &e, NULL), FLOE_OK);
    CHECK(e.parquet.compression == FLOE_COMPRESSION_NONE && e.parquet.page_size == 4096);
    CHECK_EQ_INT(e.parquet.compression_level, 0);          /* the data level is gzip's */
    floe_error *err = floe_error_new();
    CHECK_EQ_INT(set_property(&f, "write.parquet.compression-level", "12"), FLOE_OK);
    CHECK_EQ_INT(floe__table_file_options(f.t, FLOE_CONTENT_DATA, &d, err), FLOE_EINVAL);
    CHECK(strstr(floe_error_message(err), "write.parquet.compression-level is 12") != NULL);
    CHECK_EQ_INT(set_property(&f, "write.parquet.compression-level", NULL), FLOE_OK);
    CHECK_EQ_INT(set_property(&f, "write.delete.target-file-size-bytes", "0"), FLOE_OK);
    CHECK_EQ_INT(floe__table_file_options(f.t, FLOE_CONTENT_DATA, &d, err), FLOE_OK);
    CHECK_EQ_INT(floe__table_file_options(f.t, FLOE_CONTENT_POSITION_DELETES, &e, err),
                 FLOE_EINVAL);
    CHECK(strstr(floe_error_message(err), "write.delete.target-file-size-bytes") != NULL);
    floe_error_free(err);
out:
    wfix_close(&f);
}

/* ---- partial rows (sink/partial.c, write_fill.c) ------------------------------------------ */

/* A partial row of the JSON row: `unchanged` (a bit per column) null in it. */
static void put_partial(wfix *f, uint64_t time, const char *json, uint8_t unchanged)
{
    parse_keyed(f, json);
    floe__buf packed;
    floe__buf_init(&packed, 0);
    CHECK_EQ_INT(floe__partial_pack(&unchanged, f->t->schema->root.n_children, f->row.data,
                                    f->row.len, &packed, NULL), FLOE_OK);
    floe__upd u = {time, 1, f->key.data, packed.data, (uint32_t)f->key.len,
                   (uint32_t)packed.len, false};
    CHECK_EQ_INT(floe__writer_write(f->w, &u, NULL), FLOE_OK);
    floe__buf_free(&packed);
}

/* The live row of key `id` (read back from its data file) equals the JSON row. */
static void live_row_is(wfix *f, int64_t id, const char *json)
{
    char kj[64];
    snprintf(kj, sizeof kj, "{\"id\": %lld, \"v\": null, \"w\": null}", (long long)id);
    floe__buf want, got;
    floe__buf_init(&want, 0);
    floe__buf_init(&got, 0);
    const char *end;
    CHECK_EQ_INT(floe__json_parse_row(f->t->schema, kj, kj + strlen(kj), &end, &want, NULL),
                 FLOE_OK);
    const uint8_t *k = floe__datum_skip(&f->t->schema->root.children[0], want.data,
                                        want.data + want.len);
    bool found = false;
    floe__kx_loc loc = {0};
    CHECK_EQ_INT(floe__kx_take(f->kx, want.data, (size_t)(k - want.data), 0, &found, &loc, NULL),
                 FLOE_OK);
    CHECK(found);
    floe__buf_reset(&want);
    CHECK_EQ_INT(floe__json_parse_row(f->t->schema, json, json + strlen(json), &end, &want,
                                      NULL), FLOE_OK);
    floe__file_reader *fr = NULL;
    if (found && floe__file_reader_open(f->io, floe__kx_file_path(f->kx, loc.file),
                                        f->t->schema, &fr, NULL) == FLOE_OK) {
        uint64_t at = 0;
        bool more = true;
        while (more) {
            floe__buf_reset(&got);
            CHECK_EQ_INT(floe__pq_reader_next(floe__file_reader_pq(fr), &got, &at, &more, NULL),
                         FLOE_OK);
            if (more && at == loc.pos)
                break;
        }
        CHECK(more && got.len == want.len && memcmp(got.data, want.data, want.len) == 0);
    } else {
        CHECK(!"the live row's file opens");
    }
    floe__file_reader_free(fr);
    floe__buf_free(&want);
    floe__buf_free(&got);
}

/* Partial insertions take their unchanged columns from the row retracted
 * with them: a row of the batch (same round), a row of this batch's own
 * file still being written (an earlier round: the file is closed to read
 * it), a row of an earlier batch's file; and a key coming in two groups of
 * one round finds its row filled before its second group resolves. */
TEST(partial_rows_are_filled_from_the_row_they_replace)
{
    wfix f;
    if (wfix_open(&f, "partial", "id bigint not null, v text, w text", true, "id", true) != 0)
        goto out;
    uint8_t w_only = 1 << 2, v_and_w = (1 << 1) | (1 << 2);
    add_batch(&f, 0, 10, false);
    add_batch(&f, 10, 20, false);
    put(&f, 1, 1, "{\"id\": 1, \"v\": \"a\", \"w\": \"big1\"}");
    put(&f, 1, 1, "{\"id\": 2, \"v\": \"a\", \"w\": \"big2\"}");
    put_by_key(&f, 2, 2);                                  /* same round: from the batch */
    put_partial(&f, 2, "{\"id\": 2, \"v\": \"b\", \"w\": null}", w_only);
    CHECK_EQ_INT(floe__writer_flush(f.w, NULL), FLOE_OK);
    put_by_key(&f, 3, 1);                                  /* a later round: from the open file */
    put_partial(&f, 3, "{\"id\": 1, \"v\": \"c\", \"w\": null}", w_only);
    put_by_key(&f, 3, 2);
    put_partial(&f, 3, "{\"id\": 2, \"v\": null, \"w\": null}", v_and_w);
    CHECK_EQ_INT(floe__writer_flush(f.w, NULL), FLOE_OK);
    floe__sealed *s = seal(&f, 10);
    CHECK(s != NULL);
    floe__sealed_free(s);
    live_row_is(&f, 2, "{\"id\": 2, \"v\": \"b\", \"w\": \"big2\"}");
    /* the next batch: key 1 in two groups of one round (another key between) */
    put_by_key(&f, 11, 1);
    put_partial(&f, 11, "{\"id\": 1, \"v\": \"d\", \"w\": null}", w_only);
    put(&f, 11, 1, "{\"id\": 5, \"v\": \"x\", \"w\": \"y\"}");
    put_by_key(&f, 12, 1);
    put_partial(&f, 12, "{\"id\": 1, \"v\": null, \"w\": \"big3\"}", 1 << 1);
    CHECK_EQ_INT(floe__writer_flush(f.w, NULL), FLOE_OK);
    s = seal(&f, 20);
    CHECK(s != NULL);
    floe__sealed_free(s);
    live_row_is(&f, 1, "{\"id\": 1, \"v\": \"d\", \"w\": \"big3\"}");
    floe__writer_stats st;
    floe__writer_get_stats(f.w, &st);
    CHECK_EQ_INT(st.rows_filled, 4);                    /* 1 and 2 at 3, 1 at 11 and 12 */
    CHECK_EQ_INT(st.retract_missing, 0);
    CHECK_EQ_INT(f.warnings, 0);
out:
    wfix_close(&f);
}

int main(void)
{
    unit_make_tmp(tmp_root, sizeof tmp_root, "writer");
    RUN(a_key_updated_within_a_batch_writes_only_what_survives);
    RUN(two_insertions_of_a_key_at_one_time_warn_and_both_can_be_retracted);
    RUN(a_row_written_in_an_earlier_close_of_the_batch_is_deleted_by_position);
    RUN(a_retraction_by_key_takes_the_live_row_without_a_warning);
    RUN(a_retraction_by_key_in_equality_mode);
    RUN(duplicates_under_a_whole_row_key_keep_their_multiplicity);
    RUN(position_mode_deletes_rows_of_earlier_batches_by_position);
    RUN(position_mode_whole_row_duplicates_across_batches);
    RUN(the_snapshot_batch_only_inserts);
    RUN(append_writes_multiplicities_and_saturates_timestamps);
    RUN(truncation_ends_the_last_batch_at_the_end_of_the_input);
    RUN(file_options_follow_the_tables_write_properties);
    RUN(partial_rows_are_filled_from_the_row_they_replace);
    unit_remove_tmp(tmp_root);
    return UNIT_DONE();
}
