/*
 * test_maint.c - table maintenance against a SQLite catalog in a temporary
 * directory: compaction (deletes applied, deletes committed while it ran
 * carried onto the new files, a group given up when its rows came back),
 * manifest merging, expiry (refs, tags, minimum kept, files deleted only
 * when nothing reaches them) and orphan removal (the window, what metadata
 * reaches), and path normalization.  Rows are read back by an independent
 * path: the plan's live files with their position deletes applied.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "maint/maint_internal.h"
#include "scripted_catalog.h"
#include "source/source_internal.h"
#include "unit.h"

static char tmp_root[256];

typedef struct env {
    char dir[320];
    floe__fileio *io;
    floe__catalog *cat;
    floe__table *t;
    floe_error *err;
} env;

/* A table ns.t of (id, v) at format `version`; on a scripted catalog
 * (scripted_catalog.h, every commit passing until scripted) when `sc`. */
static int env_open_on(env *e, const char *name, int version, scripted **sc)
{
    memset(e, 0, sizeof *e);
    snprintf(e->dir, sizeof e->dir, "%s/%s", tmp_root, name);
    char uri[400], wh[400];
    snprintf(uri, sizeof uri, "sqlite:%s/catalog.db", e->dir);
    snprintf(wh, sizeof wh, "file://%s/wh", e->dir);
    e->err = floe_error_new();
    floe__schema *s = NULL;
    int rc = FLOE_OK;
    if (sc) {
        mkdir(e->dir, 0755);
        *sc = sc_open(e->dir, &e->io, e->err);
        e->cat = *sc ? &(*sc)->base : NULL;
        rc = *sc ? FLOE_OK : FLOE_EIO;
    } else {
        rc = floe__fileio_local_new(&e->io, e->err);
        if (rc == FLOE_OK)
            rc = floe__catalog_sql_open(uri, "floe", wh, e->io, &e->cat, e->err);
    }
    if (rc == FLOE_OK)
        rc = floe_schema_parse("id bigint not null, v bigint", &s, e->err);
    if (rc == FLOE_OK)
        rc = floe__table_open_v(e->cat, e->io, "ns", "t", s, NULL, version, &e->t, e->err);
    floe_schema_free(s);
    if (rc != FLOE_OK)
        fprintf(stderr, "env %s: %s\n", name, floe_error_message(e->err));
    return rc;
}

static int env_open(env *e, const char *name, int version)
{
    return env_open_on(e, name, version, NULL);
}

static void env_close(env *e)
{
    floe__table_free(e->t);
    floe__catalog_free(e->cat);
    floe__fileio_free(e->io);
    floe_error_free(e->err);
}

/* One data file of rows (id, id * 10) for ids [from, to), committed. */
static int add_rows(env *e, int from, int to, char *path_out, size_t cap)
{
    floe__file_writer *w;
    FLOE_FORWARD(floe__file_writer_new(e->t, FLOE_CONTENT_DATA, e->t->schema, NULL, 0, NULL, &w,
                                       e->err));
    floe__buf row;
    floe__buf_init(&row, 0);
    int rc = FLOE_OK;
    for (int id = from; rc == FLOE_OK && id < to; id++) {
        char text[64];
        const char *end, *path;
        snprintf(text, sizeof text, "{\"id\": %d, \"v\": %d}", id, id * 10);
        floe__buf_reset(&row);
        rc = floe__json_parse_row(e->t->schema, text, text + strlen(text), &end, &row, e->err);
        if (rc == FLOE_OK)
            rc = floe__file_writer_write(w, row.data, row.len, &path, NULL, e->err);
        if (rc == FLOE_OK && path_out)
            snprintf(path_out, cap, "%s", path);
    }
    floe__buf_free(&row);
    floe__content_list files = {0};
    if (rc == FLOE_OK)
        rc = floe__file_writer_close(w, &files, e->err);
    else
        floe__file_writer_abort(w);
    floe__commit_request req = {.files = files.files, .n_files = files.n,
                                .base_snapshot_id = floe__metadata_current_snapshot_id(
                                    e->t->loaded->metadata)};
    if (rc == FLOE_OK)
        rc = floe__table_commit(e->t, &req, NULL, e->err);
    floe__content_list_clear(&files);
    return rc;
}

/* n data files of `per` rows each (ids 0, 1, ...), one commit each. */
static int add_files(env *e, int n, int per)
{
    int rc = FLOE_OK;
    for (int f = 0; rc == FLOE_OK && f < n; f++)
        rc = add_rows(e, f * per, f * per + per, NULL, 0);
    return rc;
}

/* A position delete of row `pos` of data file `path`, committed through t. */
static int delete_row(env *e, floe__table *t, const char *path, uint64_t pos)
{
    floe__posdel_set *d;
    FLOE_FORWARD(floe__posdel_set_new(&d, e->err));
    int rc = floe__posdel_set_add(d, path, pos, e->err);
    floe__commit_request req = {.deletes = d, .base_snapshot_id = floe__metadata_current_snapshot_id(
                                                  t->loaded->metadata)};
    if (rc == FLOE_OK)
        rc = floe__table_commit(t, &req, NULL, e->err);
    floe__posdel_set_free(d);
    return rc;
}

/* ---- reading the table back ---------------------------------------------------------------- */

typedef struct reading {
    const floe__posbitmap *deleted;
    int64_t sum, rows;
} reading;

static int count_row(void *ctx, const uint8_t *row, size_t len, uint64_t pos, floe_error *err)
{
    (void)err;
    reading *r = ctx;
    if (r->deleted && floe__posbitmap_contains(r->deleted, pos))
        return FLOE_OK;
    CHECK(len >= 9);
    r->rows++;
    r->sum += (int64_t)floe__get_le64(row + 1);         /* id: the first slot's payload */
    return FLOE_OK;
}

/* Live rows and the sum of their ids, as a reader applying position
 * deletes and DVs sees the current snapshot. */
static int live(env *e, int64_t *rows, int64_t *sum)
{
    FLOE_FORWARD(floe__table_refresh(e->t, e->err));
    floe__plan *p = NULL;
    floe__deleted *d = NULL;
    int rc = floe__table_plan(e->t, -1, &p, e->err);
    if (rc == FLOE_OK)
        rc = floe__deleted_new(e->io, p, &d, e->err);
    reading r = {0};
    for (size_t i = 0; rc == FLOE_OK && p && i < p->n_data; i++) {
        rc = floe__deleted_positions(d, i, &r.deleted, e->err);
        if (rc == FLOE_OK)
            rc = floe__file_rows_each(e->io, p->data[i].f.file.path, e->t->schema, count_row,
                                      &r, e->err);
    }
    floe__deleted_free(d);
    floe__plan_free(p);
    *rows = r.rows;
    *sum = r.sum;
    return rc;
}

static size_t data_files(env *e)
{
    floe__plan *p = NULL;
    size_t n = floe__table_plan(e->t, -1, &p, NULL) == FLOE_OK ? p->n_data : (size_t)-1;
    floe__plan_free(p);
    return n;
}

/* ---- compaction ---------------------------------------------------------------------------- */

TEST(compaction_applies_deletes_and_drops_them)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "compact", 2), FLOE_OK);
    char path[512];
    for (int f = 0; f < 4; f++)
        CHECK_EQ_INT(add_rows(&e, f * 100, f * 100 + 100, path, sizeof path), FLOE_OK);
    CHECK_EQ_INT(delete_row(&e, e.t, path, 7), FLOE_OK);      /* id 307 */
    int64_t rows, sum;
    CHECK_EQ_INT(live(&e, &rows, &sum), FLOE_OK);
    CHECK_EQ_INT(rows, 399);
    floe__compact_options o = {.min_input_files = 2};
    floe__compact_result r;
    CHECK_EQ_INT(floe__compact(e.t, &o, &r, e.err), FLOE_OK);
    CHECK_EQ_INT(r.groups, 1);
    CHECK_EQ_INT(r.files_rewritten, 4);
    CHECK_EQ_INT(r.files_written, 1);
    CHECK_EQ_INT(r.rows_written, 399);
    CHECK_EQ_INT(r.delete_files_dropped, 1);
    int64_t rows2, sum2;
    CHECK_EQ_INT(live(&e, &rows2, &sum2), FLOE_OK);
    CHECK_EQ_INT(rows2, 399);
    CHECK_EQ_INT(sum2, sum);
    CHECK_EQ_INT(data_files(&e), 1);
    const floe__snapshot *s = floe__metadata_current_snapshot(e.t->loaded->metadata);
    CHECK(s && strcmp(s->operation, "replace") == 0);
    env_close(&e);
}

typedef struct racing {
    env *e;
    floe__table *other;            /* a second handle: another writer */
    const char *path;
    uint64_t pos;
    bool undo;                     /* roll main back instead */
} racing;

/* While the compaction's files are written: another writer deletes a row
 * of a file the compaction rewrites. */
static int delete_meanwhile(void *ctx, floe_error *err)
{
    (void)err;
    racing *x = ctx;
    FLOE_FORWARD(floe__table_refresh(x->other, x->e->err));
    return delete_row(x->e, x->other, x->path, x->pos);
}

static int open_other(env *e, floe__table **out)
{
    return floe__table_open(e->cat, e->io, "ns", "t", NULL, NULL, out, e->err);
}

/* Table `name`: three files of ids [0, 300), id 3 deleted; *first (cap
 * 512) the first file. */
static void three_files(env *e, const char *name, int version, char *first)
{
    CHECK_EQ_INT(env_open(e, name, version), FLOE_OK);
    char path[512];
    CHECK_EQ_INT(add_rows(e, 0, 100, first, 512), FLOE_OK);
    for (int f = 1; f < 3; f++)
        CHECK_EQ_INT(add_rows(e, f * 100, f * 100 + 100, path, sizeof path), FLOE_OK);
    CHECK_EQ_INT(delete_row(e, e->t, first, 3), FLOE_OK);     /* id 3, before */
}

/* Compact e's table with options o while another writer deletes id 50 of
 * file `first`: the group conflicts once, carries that delete, and neither
 * id 3 nor 50 is back. */
static floe__compact_result compact_racing(env *e, const char *first, floe__compact_options o)
{
    racing x = {e, NULL, first, 50, false};                  /* id 50, meanwhile */
    CHECK_EQ_INT(open_other(e, &x.other), FLOE_OK);
    o.before_commit = delete_meanwhile;
    o.hook_ctx = &x;
    floe__compact_result r;
    CHECK_EQ_INT(floe__compact(e->t, &o, &r, e->err), FLOE_OK);
    CHECK_EQ_INT(r.groups, 1);
    CHECK_EQ_INT(r.conflicts, 1);
    CHECK_EQ_INT(r.deletes_carried, 1);
    int64_t rows, sum;
    CHECK_EQ_INT(live(e, &rows, &sum), FLOE_OK);
    CHECK_EQ_INT(rows, 298);                                  /* neither 3 nor 50 is back */
    CHECK_EQ_INT(sum, (int64_t)299 * 300 / 2 - 3 - 50);
    floe__table_free(x.other);
    return r;
}

static void carried(int version)
{
    env e;
    char first[512];
    three_files(&e, version == 3 ? "carry3" : "carry2", version, first);
    compact_racing(&e, first, (floe__compact_options){.min_input_files = 2});
    CHECK_EQ_INT(data_files(&e), 1);
    env_close(&e);
}

TEST(compaction_carries_deletes_committed_meanwhile_v2) { carried(2); }
TEST(compaction_carries_deletes_committed_meanwhile_v3) { carried(3); }

/* The table's spec becomes bucket(4, id) (spec 1); files written before
 * keep spec 0.  e->t is opened again (a handle writes the spec it opened). */
static int bucket_spec(env *e)
{
    json_t *ups = json_pack("[{s:s, s:{s:i, s:[{s:i, s:i, s:s, s:s}]}}, {s:s, s:i}]", "action",
                            "add-spec", "spec", "spec-id", 1, "fields", "source-id", 1,
                            "field-id", 1000, "name", "id_bucket", "transform", "bucket[4]",
                            "action", "set-default-spec", "spec-id", -1);
    int rc = floe__table_update(e->t, NULL, ups, e->err);
    json_decref(ups);
    floe__table_free(e->t);
    e->t = NULL;
    return rc == FLOE_OK ? floe__table_open(e->cat, e->io, "ns", "t", NULL, NULL, &e->t, e->err)
                         : rc;
}

/* Files of the older spec: left alone unless asked; asked, rewritten into
 * the current spec's partitions (a file per bucket), with a delete
 * committed meanwhile carried onto the row's new file and position. */
static void respec(int version)
{
    env e;
    char first[512];
    three_files(&e, version == 3 ? "respec3" : "respec2", version, first);
    floe__table *stale = NULL;                                /* opened before the change */
    CHECK_EQ_INT(open_other(&e, &stale), FLOE_OK);
    CHECK_EQ_INT(bucket_spec(&e), FLOE_OK);
    CHECK_EQ_INT(e.t->spec_id, 1);
    floe__compact_options o = {.respec = true};
    floe__compact_result r;
    CHECK_EQ_INT(floe__compact(stale, &o, &r, e.err), FLOE_ESTATE);
    CHECK(strstr(floe_error_message(e.err), "open the table again") != NULL);
    floe_error_clear(e.err);
    floe__table_free(stale);
    o = (floe__compact_options){.min_input_files = 2};
    CHECK_EQ_INT(floe__compact(e.t, &o, &r, e.err), FLOE_OK);
    CHECK_EQ_INT(r.groups, 0);                                /* not asked: kept */
    r = compact_racing(&e, first, (floe__compact_options){.respec = true});
    CHECK_EQ_INT(r.files_rewritten, 3);
    floe__plan *p = NULL;
    CHECK_EQ_INT(floe__table_plan(e.t, -1, &p, e.err), FLOE_OK);
    CHECK_EQ_INT(p->n_data, 4);                               /* a file per bucket */
    int other_spec = 0, tuples = 0;
    for (size_t i = 0; i < p->n_data; i++) {
        other_spec += p->data[i].f.spec_id != 1;
        tuples += p->data[i].f.file.partition.len > 0;
    }
    CHECK_EQ_INT(other_spec, 0);
    CHECK_EQ_INT(tuples, 4);
    floe__plan_free(p);
    env_close(&e);
}

TEST(compaction_rewrites_older_specs_into_the_current_v2) { respec(2); }
TEST(compaction_rewrites_older_specs_into_the_current_v3) { respec(3); }

/* Meanwhile main goes back to before the delete of row 3: rows the
 * compaction left out are live again, so its group is given up. */
static int rollback_meanwhile(void *ctx, floe_error *err)
{
    racing *x = ctx;
    FLOE_FORWARD(floe__table_refresh(x->other, err));
    const floe__snapshot *s = floe__metadata_current_snapshot(x->other->loaded->metadata);
    json_t *ups = json_pack("[{s:s, s:s, s:s, s:I}]", "action", "set-snapshot-ref", "ref-name",
                            "main", "type", "branch", "snapshot-id",
                            (json_int_t)s->parent_snapshot_id);
    int rc = floe__table_update(x->other, NULL, ups, err);
    json_decref(ups);
    return rc;
}

/* What the compaction handed over of its moves, and when. */
typedef struct handing {
    env *e;
    floe__table *other;            /* a second handle, to look at the table meanwhile */
    char id[37], abandoned[37];
    int handed, n_abandoned;
    size_t old_files;
    bool seen_before;              /* the snapshot was on the table when handed */
} handing;

static void moves_handed(void *ctx, const floe__compact_moved *m)
{
    handing *h = ctx;
    h->handed++;
    snprintf(h->id, sizeof h->id, "%s", m->id);
    h->old_files = m->map->n;
    CHECK_EQ_INT(floe__table_refresh(h->other, h->e->err), FLOE_OK);
    h->seen_before |= floe__table_has_maintenance_id(h->other, m->id);
}

static void moves_abandoned(void *ctx, const char *id)
{
    handing *h = ctx;
    h->n_abandoned++;
    snprintf(h->abandoned, sizeof h->abandoned, "%s", id);
}

/* The group is given up; the moves it handed over are taken back. */
TEST(compaction_gives_up_when_rows_come_back)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "giveup", 2), FLOE_OK);
    char first[512], path[512];
    CHECK_EQ_INT(add_rows(&e, 0, 100, first, sizeof first), FLOE_OK);
    CHECK_EQ_INT(add_rows(&e, 100, 200, path, sizeof path), FLOE_OK);
    CHECK_EQ_INT(delete_row(&e, e.t, first, 3), FLOE_OK);
    racing x = {&e, NULL, first, 0, true};
    CHECK_EQ_INT(open_other(&e, &x.other), FLOE_OK);
    handing h = {.e = &e, .other = x.other};
    floe__compact_options o = {.min_input_files = 2, .before_commit = rollback_meanwhile,
                               .hook_ctx = &x, .on_moves = moves_handed,
                               .on_abandoned = moves_abandoned, .moves_ctx = &h};
    floe__compact_result r;
    CHECK_EQ_INT(floe__compact(e.t, &o, &r, e.err), FLOE_OK);
    CHECK_EQ_INT(r.groups, 0);
    CHECK_EQ_INT(r.groups_failed, 1);
    CHECK_EQ_INT(h.handed, 1);                                /* its moves were withdrawn */
    CHECK_EQ_INT(h.n_abandoned, 1);
    CHECK(strcmp(h.abandoned, h.id) == 0);
    int64_t rows, sum;
    CHECK_EQ_INT(live(&e, &rows, &sum), FLOE_OK);
    CHECK_EQ_INT(rows, 200);                                  /* the rollback's table, whole */
    CHECK_EQ_INT(data_files(&e), 2);
    floe__table_free(x.other);
    env_close(&e);
}

TEST(compaction_hands_its_moves_over_before_its_snapshot_can_be_seen)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "handed", 2), FLOE_OK);
    CHECK_EQ_INT(add_files(&e, 3, 100), FLOE_OK);
    handing h = {.e = &e};
    CHECK_EQ_INT(open_other(&e, &h.other), FLOE_OK);
    floe__compact_options o = {.min_input_files = 2, .on_moves = moves_handed,
                               .on_abandoned = moves_abandoned, .moves_ctx = &h};
    floe__compact_result r;
    CHECK_EQ_INT(floe__compact(e.t, &o, &r, e.err), FLOE_OK);
    CHECK_EQ_INT(r.groups, 1);
    CHECK_EQ_INT(h.handed, 1);
    CHECK_EQ_INT(h.old_files, 3);
    CHECK(!h.seen_before);
    CHECK_EQ_INT(h.n_abandoned, 0);
    const floe__snapshot *s = floe__metadata_current_snapshot(e.t->loaded->metadata);
    const char *id = s ? floe__snapshot_summary_get(s, "floe.maintenance-id") : NULL;
    CHECK(id && strcmp(id, h.id) == 0);                      /* the moves name the snapshot */
    floe__table_free(h.other);
    env_close(&e);
}

/* Two data files of rows 0..199 on a scripted catalog, row 3 deleted: one
 * compaction group. */
static void two_files_on_script(env *e, const char *name, scripted **sc)
{
    CHECK_EQ_INT(env_open_on(e, name, 2, sc), FLOE_OK);
    char first[512], path[512];
    CHECK_EQ_INT(add_rows(e, 0, 100, first, sizeof first), FLOE_OK);
    CHECK_EQ_INT(add_rows(e, 100, 200, path, sizeof path), FLOE_OK);
    CHECK_EQ_INT(delete_row(e, e->t, first, 3), FLOE_OK);
}

/* The group's last attempt lands but its response is lost: its files are
 * the table's now and must stay. */
TEST(compaction_keeps_its_files_when_its_last_attempt_may_have_landed)
{
    env e;
    scripted *sc = NULL;
    two_files_on_script(&e, "lastlost", &sc);
    for (int i = 0; i < 9; i++)
        sc_script(sc, SC_CONFLICT);
    sc_script(sc, SC_LOST);
    floe__compact_options o = {.min_input_files = 2};
    floe__compact_result r;
    int rc = floe__compact(e.t, &o, &r, e.err);
    CHECK_EQ_INT(rc, FLOE_EUNKNOWN_OUTCOME);
    CHECK_EQ_INT(sc->calls, 3 + 10);
    floe_error_clear(e.err);
    int64_t rows, sum;
    CHECK_EQ_INT(live(&e, &rows, &sum), FLOE_OK);            /* every file it names is there */
    CHECK_EQ_INT(rows, 199);
    CHECK_EQ_INT(sum, (int64_t)199 * 200 / 2 - 3);
    CHECK_EQ_INT(data_files(&e), 1);                          /* it landed */
    env_close(&e);
}

/* A network failure before anything was sent (the class says: try again)
 * is retried like a conflict, not the end of the group. */
TEST(compaction_retries_a_network_failure)
{
    env e;
    scripted *sc = NULL;
    two_files_on_script(&e, "unsent", &sc);
    sc_script(sc, SC_UNSENT);
    sc_script(sc, SC_CONFLICT);
    sc_script(sc, SC_UNSENT);
    floe__compact_options o = {.min_input_files = 2};
    floe__compact_result r;
    CHECK_EQ_INT(floe__compact(e.t, &o, &r, e.err), FLOE_OK);
    CHECK_EQ_INT(sc->calls, 3 + 4);
    CHECK_EQ_INT(r.groups, 1);
    CHECK_EQ_INT(r.groups_failed, 0);
    int64_t rows, sum;
    CHECK_EQ_INT(live(&e, &rows, &sum), FLOE_OK);
    CHECK_EQ_INT(rows, 199);
    CHECK_EQ_INT(sum, (int64_t)199 * 200 / 2 - 3);
    CHECK_EQ_INT(data_files(&e), 1);
    env_close(&e);
}

/* ---- manifest merging -------------------------------------------------------------------- */

TEST(manifests_merge_once_the_newest_bin_is_full)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "merge", 2), FLOE_OK);
    json_t *ups = json_pack("[{s:s, s:{s:s}}]", "action", "set-properties", "updates",
                            "commit.manifest.min-count-to-merge", "4");
    CHECK_EQ_INT(floe__table_update(e.t, NULL, ups, e.err), FLOE_OK);
    json_decref(ups);
    size_t most = 0;
    for (int f = 0; f < 20; f++) {
        CHECK_EQ_INT(add_rows(&e, f * 10, f * 10 + 10, NULL, 0), FLOE_OK);
        floe__plan *p = NULL;
        CHECK_EQ_INT(floe__table_plan(e.t, -1, &p, e.err), FLOE_OK);
        if (p && p->manifests.n > most)
            most = p->manifests.n;
        floe__plan_free(p);
    }
    CHECK(most <= 6);                     /* the new one, up to 4 carried, a merged one */
    int64_t rows, sum;
    CHECK_EQ_INT(live(&e, &rows, &sum), FLOE_OK);
    CHECK_EQ_INT(rows, 200);
    CHECK_EQ_INT(sum, (int64_t)199 * 200 / 2);
    env_close(&e);
}

/* ---- expiry ---------------------------------------------------------------------------------- */

TEST(expiry_keeps_tags_and_the_newest_and_deletes_what_only_they_reached)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "expire", 2), FLOE_OK);
    CHECK_EQ_INT(add_files(&e, 6, 10), FLOE_OK);
    const floe__metadata *md = e.t->loaded->metadata;
    int64_t tagged = floe__metadata_snapshot_at(md, 1)->snapshot_id;
    json_t *ups = json_pack("[{s:s, s:s, s:s, s:I}]", "action", "set-snapshot-ref", "ref-name",
                            "keep-me", "type", "tag", "snapshot-id", (json_int_t)tagged);
    CHECK_EQ_INT(floe__table_update(e.t, NULL, ups, e.err), FLOE_OK);
    json_decref(ups);
    floe__compact_options co = {.all = true};
    floe__compact_result cr;
    CHECK_EQ_INT(floe__compact(e.t, &co, &cr, e.err), FLOE_OK);  /* old files now unneeded */
    floe__expire_options o = {.older_than_ms = 0, .retain_last = 1, .clean_files = true,
                              .now_ms = floe__now_ms() + 1000};
    floe__expire_result r;
    CHECK_EQ_INT(floe__expire(e.t, &o, &r, e.err), FLOE_OK);
    md = e.t->loaded->metadata;
    CHECK_EQ_INT(floe__metadata_snapshot_count(md), 2);        /* the newest and the tag's */
    CHECK(floe__metadata_snapshot_by_id(md, tagged) != NULL);
    CHECK_EQ_INT(r.snapshots_expired, 5);
    CHECK_EQ_INT(r.removed.files[FLOE_REACH_LIST], 5);
    /* the tag's snapshot holds files 0 and 1: only files 2..5 went */
    CHECK_EQ_INT(r.removed.files[FLOE_REACH_DATA], 4);
    int64_t rows, sum;
    CHECK_EQ_INT(live(&e, &rows, &sum), FLOE_OK);
    CHECK_EQ_INT(rows, 60);
    /* expiring again finds nothing */
    CHECK_EQ_INT(floe__expire(e.t, &o, &r, e.err), FLOE_OK);
    CHECK_EQ_INT(r.snapshots_expired, 0);
    CHECK_EQ_INT(r.removed.files[FLOE_REACH_DATA], 0);
    env_close(&e);
}

/* An empty append: one more snapshot on main. */
static int empty_commit(env *e)
{
    floe__commit_request req = {.base_snapshot_id = floe__metadata_current_snapshot_id(
                                    e->t->loaded->metadata)};
    return floe__table_commit(e->t, &req, NULL, e->err);
}

/* keep_since: that snapshot and everything after it on its branch stay,
 * whatever their age, while it is among the newest 100; an id on no
 * branch, or further back, keeps nothing. */
TEST(expiry_keeps_what_follows_keep_since)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "keepsince", 2), FLOE_OK);
    CHECK_EQ_INT(add_files(&e, 5, 10), FLOE_OK);
    const floe__metadata *md = e.t->loaded->metadata;
    int64_t since = floe__metadata_snapshot_at(md, 2)->snapshot_id;
    floe__expire_options o = {.older_than_ms = 0, .retain_last = 1, .keep_since = since,
                              .now_ms = floe__now_ms() + 1000};
    floe__expire_result r;
    CHECK_EQ_INT(floe__expire(e.t, &o, &r, e.err), FLOE_OK);
    md = e.t->loaded->metadata;
    CHECK_EQ_INT(r.snapshots_expired, 2);                     /* the two before it */
    CHECK_EQ_INT(floe__metadata_snapshot_count(md), 3);
    CHECK(floe__metadata_snapshot_by_id(md, since) != NULL);
    for (int i = 0; i < 97; i++)                              /* since: the 100th newest */
        CHECK_EQ_INT(empty_commit(&e), FLOE_OK);
    o.now_ms = floe__now_ms() + 1000;
    CHECK_EQ_INT(floe__expire(e.t, &o, &r, e.err), FLOE_OK);
    CHECK_EQ_INT(r.snapshots_expired, 0);
    CHECK_EQ_INT(empty_commit(&e), FLOE_OK);                  /* the 101st: held back no more */
    o.now_ms = floe__now_ms() + 1000;
    CHECK_EQ_INT(floe__expire(e.t, &o, &r, e.err), FLOE_OK);
    CHECK_EQ_INT(r.snapshots_expired, 100);
    CHECK_EQ_INT(floe__metadata_snapshot_count(e.t->loaded->metadata), 1);
    CHECK_EQ_INT(empty_commit(&e), FLOE_OK);
    o.keep_since = 12345;                                     /* on no branch */
    o.now_ms = floe__now_ms() + 1000;
    CHECK_EQ_INT(floe__expire(e.t, &o, &r, e.err), FLOE_OK);
    CHECK_EQ_INT(r.snapshots_expired, 1);
    CHECK_EQ_INT(floe__metadata_snapshot_count(e.t->loaded->metadata), 1);
    int64_t rows, sum;
    CHECK_EQ_INT(live(&e, &rows, &sum), FLOE_OK);
    CHECK_EQ_INT(rows, 50);
    env_close(&e);
}

TEST(expiry_drops_refs_past_their_age_but_never_main)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "refs", 2), FLOE_OK);
    CHECK_EQ_INT(add_files(&e, 3, 1), FLOE_OK);
    int64_t first = floe__metadata_snapshot_at(e.t->loaded->metadata, 0)->snapshot_id;
    json_t *ups = json_pack("[{s:s, s:s, s:s, s:I, s:I}]", "action", "set-snapshot-ref",
                            "ref-name", "old", "type", "tag", "snapshot-id", (json_int_t)first,
                            "max-ref-age-ms", (json_int_t)1);
    CHECK_EQ_INT(floe__table_update(e.t, NULL, ups, e.err), FLOE_OK);
    json_decref(ups);
    floe__expire_options o = {.older_than_ms = 0, .retain_last = 1, .clean_files = true,
                              .now_ms = floe__now_ms() + 1000};
    floe__expire_result r;
    CHECK_EQ_INT(floe__expire(e.t, &o, &r, e.err), FLOE_OK);
    CHECK_EQ_INT(r.refs_removed, 1);
    CHECK(!floe__metadata_ref(e.t->loaded->metadata, "old", NULL, NULL));
    CHECK(floe__metadata_ref(e.t->loaded->metadata, "main", NULL, NULL));
    CHECK_EQ_INT(floe__metadata_snapshot_count(e.t->loaded->metadata), 1);
    env_close(&e);
}

/* ---- orphans ----------------------------------------------------------------------------------- */

static void touch(const char *path, int64_t age_s)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("junk", f);
        fclose(f);
    }
    char cmd[700];
    snprintf(cmd, sizeof cmd, "touch -d '@%lld' '%s'", (long long)(time(NULL) - age_s), path);
    CHECK(system(cmd) == 0);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

TEST(orphans_go_only_past_the_window_and_only_unreached)
{
    env e;
    CHECK_EQ_INT(env_open(&e, "orphans", 2), FLOE_OK);
    char live_path[512], old[600], young[600];
    CHECK_EQ_INT(add_rows(&e, 0, 10, live_path, sizeof live_path), FLOE_OK);
    const char *data = floe__local_path(e.t->data_location);
    snprintf(old, sizeof old, "%s/data-killed.parquet", data);
    snprintf(young, sizeof young, "%s/data-in-flight.parquet", data);
    touch(old, 7200);
    touch(young, 0);
    char cmd[700];                    /* the live file is old too: only reach protects it */
    snprintf(cmd, sizeof cmd, "touch -d '@%lld' '%s'", (long long)(time(NULL) - 7200),
             floe__local_path(live_path));
    CHECK(system(cmd) == 0);
    floe__orphan_options o = {.older_than_ms = 3600 * 1000};
    floe__orphan_result r;
    CHECK_EQ_INT(floe__remove_orphans(e.t, &o, &r, e.err), FLOE_OK);
    CHECK_EQ_INT(r.orphans, 2);
    CHECK_EQ_INT(r.too_young, 1);
    CHECK(!exists(old) && exists(young) && exists(floe__local_path(live_path)));
    int64_t rows, sum;
    CHECK_EQ_INT(live(&e, &rows, &sum), FLOE_OK);
    CHECK_EQ_INT(rows, 10);
    env_close(&e);
}

TEST(paths_are_compared_normalized)
{
    char *a = floe__reach_key("file:/w/x.parquet"), *b = floe__reach_key("file:///w/x.parquet"),
         *c = floe__reach_key("/w/x.parquet"), *d = floe__reach_key("s3a://b/k"),
         *f = floe__reach_key("s3://b/k");
    CHECK_EQ_STR(a, "/w/x.parquet");
    CHECK_EQ_STR(b, "/w/x.parquet");
    CHECK_EQ_STR(c, "/w/x.parquet");
    CHECK_EQ_STR(d, f);
    floe__free(a);
    floe__free(b);
    floe__free(c);
    floe__free(d);
    floe__free(f);
}

int main(void)
{
    unit_make_tmp(tmp_root, sizeof tmp_root, "maint");
    RUN(compaction_applies_deletes_and_drops_them);
    RUN(compaction_carries_deletes_committed_meanwhile_v2);
    RUN(compaction_carries_deletes_committed_meanwhile_v3);
    RUN(compaction_rewrites_older_specs_into_the_current_v2);
    RUN(compaction_rewrites_older_specs_into_the_current_v3);
    RUN(compaction_gives_up_when_rows_come_back);
    RUN(compaction_hands_its_moves_over_before_its_snapshot_can_be_seen);
    RUN(compaction_keeps_its_files_when_its_last_attempt_may_have_landed);
    RUN(compaction_retries_a_network_failure);
    RUN(manifests_merge_once_the_newest_bin_is_full);
    RUN(expiry_keeps_tags_and_the_newest_and_deletes_what_only_they_reached);
    RUN(expiry_keeps_what_follows_keep_since);
    RUN(expiry_drops_refs_past_their_age_but_never_main);
    RUN(orphans_go_only_past_the_window_and_only_unreached);
    RUN(paths_are_compared_normalized);
    unit_remove_tmp(tmp_root);
    return UNIT_DONE();
}
