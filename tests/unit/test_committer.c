/*
 * test_committer.c - the committer (src/sink/committer.c) and where a sink
 * resumes (progress.c, resume.c), against a scripted catalog over a real
 * SQLite catalog: lost responses, conflicts with other writers, fencing,
 * late commits of an earlier run, rollbacks, expired history, and the
 * decisions at open (fresh, refused, --new-sink, --resume-from).
 */
#include <stdio.h>
#include <unistd.h>

#include "scripted_catalog.h"
#include "source/source_internal.h"
#include "unit.h"

static char tmp_root[256];

typedef struct fix {
    char dir[400];
    floe__fileio *io;
    scripted *sc;
    floe__table *t;
    floe__committer *c;
    floe__committer_config cfg;
    floe_error *err;
    char warned[600];
} fix;

static void warned(void *ctx, const char *msg)
{
    fix *f = ctx;
    snprintf(f->warned, sizeof f->warned, "%s", msg);
}

static void committer_for(fix *f, const char *sink_id, uint64_t version)
{
    floe__committer_free(f->c);
    memset(&f->cfg, 0, sizeof f->cfg);
    f->cfg.table = f->t;
    f->cfg.sink_id = sink_id;
    f->cfg.sink_version = version;
    f->cfg.backoff_ms = 1;
    f->cfg.max_tries = 3;
    f->cfg.warn = warned;
    f->cfg.warn_ctx = f;
    f->c = NULL;
    CHECK_EQ_INT(floe__committer_new(&f->cfg, &f->c, NULL), FLOE_OK);
}

/* A new committer with f->cfg as it is now. */
static void renew(fix *f)
{
    floe__committer_free(f->c);
    f->c = NULL;
    CHECK_EQ_INT(floe__committer_new(&f->cfg, &f->c, NULL), FLOE_OK);
}

static int fix_open_with(fix *f, const char *name, const json_t *props)
{
    memset(f, 0, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s/%s", tmp_root, name);
    f->err = floe_error_new();
    f->sc = sc_open(f->dir, &f->io, f->err);
    if (!f->sc)
        return -1;
    floe__schema *d = NULL;
    int rc = floe_schema_parse("id bigint not null, v text", &d, f->err);
    if (rc == FLOE_OK)
        rc = floe__table_open(&f->sc->base, f->io, "ns", "t", d, props, &f->t, f->err);
    floe_schema_free(d);
    if (rc != FLOE_OK)
        return -1;
    committer_for(f, "s", 1);
    return 0;
}

static int fix_open(fix *f, const char *name) { return fix_open_with(f, name, NULL); }

static void fix_close(fix *f)
{
    floe__committer_free(f->c);
    floe__table_free(f->t);
    if (f->sc)
        floe__catalog_free(&f->sc->base);
    floe__fileio_free(f->io);
    floe_error_free(f->err);
}

/* A sealed batch [lo, hi) holding n data rows (ids from first). */
static floe__sealed *batch(fix *f, uint64_t lo, uint64_t hi, int n, int first)
{
    floe__sealed *s = floe__calloc(1, sizeof *s);
    s->desc.lower = floe__frontier_at(lo);
    s->desc.upper = floe__frontier_at(hi);
    if (n == 0)
        return s;
    floe__file_writer *w = NULL;
    CHECK_EQ_INT(floe__file_writer_new(f->t, FLOE_CONTENT_DATA, f->t->schema, NULL, 0, NULL, &w,
                                       NULL), FLOE_OK);
    floe__buf row;
    floe__buf_init(&row, 0);
    for (int i = 0; i < n; i++) {
        char json[64];
        snprintf(json, sizeof json, "{\"id\": %d, \"v\": \"x\"}", first + i);
        floe__buf_reset(&row);
        const char *end;
        CHECK_EQ_INT(floe__json_parse_row(f->t->schema, json, json + strlen(json), &end, &row,
                                          NULL), FLOE_OK);
        CHECK_EQ_INT(floe__file_writer_write(w, row.data, row.len, NULL, NULL, NULL), FLOE_OK);
    }
    floe__buf_free(&row);
    CHECK_EQ_INT(floe__file_writer_close(w, &s->files, NULL), FLOE_OK);
    s->rows_written = (uint64_t)n;
    return s;
}

/* Commit [lo, hi) with n rows; the committer's result. */
static int commit(fix *f, uint64_t lo, uint64_t hi, int n)
{
    floe__sealed *s = batch(f, lo, hi, n, (int)lo * 100);
    floe_error_clear(f->err);
    int rc = floe__committer_commit(f->c, s, f->err);
    floe__sealed_free(s);
    return rc;
}

static const floe__metadata *md(fix *f)
{
    CHECK_EQ_INT(floe__table_refresh(f->t, NULL), FLOE_OK);
    return f->t->loaded->metadata;
}

static const char *current_frontier(fix *f)
{
    const floe__snapshot *s = floe__metadata_current_snapshot(md(f));
    return s ? floe__snapshot_summary_get(s, FLOE_PROP_FRONTIER) : NULL;
}

static bool msg_has(fix *f, const char *needle)
{
    if (strstr(floe_error_message(f->err), needle))
        return true;
    fprintf(stderr, "message \"%s\" lacks \"%s\"\n", floe_error_message(f->err), needle);
    return false;
}

/* ---- committing -------------------------------------------------------------------- */

TEST(each_commit_moves_main_and_the_progress_tag)
{
    fix f;
    if (fix_open(&f, "tag") != 0)
        goto out;
    CHECK_EQ_INT(commit(&f, 0, 1, 2), FLOE_OK);
    CHECK_EQ_INT(commit(&f, 1, 5, 0), FLOE_OK);              /* an empty batch records progress */
    CHECK_EQ_STR(current_frontier(&f), "[5]");
    int64_t tag = -1;
    const char *type = NULL;
    CHECK(floe__metadata_ref(md(&f), "floe-s", &tag, &type) && strcmp(type, "tag") == 0);
    CHECK_EQ_INT(tag, floe__metadata_current_snapshot_id(md(&f)));
    floe__progress p;
    CHECK_EQ_INT(floe__progress_read(md(&f), f.io, "s", &p, NULL), FLOE_OK);
    CHECK(p.state == FLOE__PROGRESS_FOUND && p.frontier.t == 5 && p.tag_on_main);
    floe__committer_stats st;
    floe__committer_get_stats(f.c, &st);
    CHECK_EQ_INT(st.snapshots, 2);
    CHECK_EQ_INT(st.rows, 2);
out:
    fix_close(&f);
}

TEST(a_lost_response_is_recognised_not_repeated)
{
    fix f;
    if (fix_open(&f, "lost") != 0)
        goto out;
    sc_script(f.sc, SC_LOST);
    CHECK_EQ_INT(commit(&f, 0, 1, 1), FLOE_OK);
    floe__committer_stats st;
    floe__committer_get_stats(f.c, &st);
    CHECK_EQ_INT(st.lost_responses, 1);
    CHECK_EQ_INT(f.sc->applied, 1);
    CHECK_EQ_INT(floe__metadata_snapshot_count(md(&f)), 1);  /* no duplicate */
out:
    fix_close(&f);
}

TEST(unknown_and_unsent_failures_are_retried_once_landed)
{
    fix f;
    if (fix_open(&f, "unknown") != 0)
        goto out;
    sc_script(f.sc, SC_UNKNOWN);
    sc_script(f.sc, SC_UNSENT);
    CHECK_EQ_INT(commit(&f, 0, 1, 1), FLOE_OK);
    CHECK_EQ_INT(f.sc->calls, 3);
    CHECK_EQ_INT(f.sc->applied, 1);
    CHECK_EQ_INT(floe__metadata_snapshot_count(md(&f)), 1);
out:
    fix_close(&f);
}

TEST(another_writers_commit_is_a_conflict_then_passed_over)
{
    fix f;
    if (fix_open(&f, "foreign") != 0)
        goto out;
    CHECK_EQ_INT(commit(&f, 0, 1, 1), FLOE_OK);
    sc_script(f.sc, SC_FOREIGN_FIRST);
    CHECK_EQ_INT(sc_sink_commit(f.sc, "ns", "t", "other", 7, "[900]", NULL, NULL), FLOE_OK);
    CHECK_EQ_INT(commit(&f, 1, 5, 1), FLOE_OK);
    floe__committer_stats st;
    floe__committer_get_stats(f.c, &st);
    CHECK_EQ_INT(st.conflicts, 1);
    const floe__snapshot *cur = floe__metadata_current_snapshot(md(&f));
    const floe__snapshot *parent = floe__metadata_snapshot_by_id(md(&f), cur->parent_snapshot_id);
    CHECK(parent && strcmp(parent->operation, "append") == 0 &&
          !floe__snapshot_summary_get(parent, FLOE_PROP_SINK_ID));     /* rebased on it */
    CHECK_EQ_STR(current_frontier(&f), "[5]");
out:
    fix_close(&f);
}

TEST(a_refusal_is_fatal_and_a_lasting_conflict_gives_up)
{
    fix f;
    if (fix_open(&f, "refuse") != 0)
        goto out;
    sc_script(f.sc, SC_REJECT);
    CHECK_EQ_INT(commit(&f, 0, 1, 1), FLOE_ECATALOG);
    CHECK_EQ_INT(f.sc->calls, 1);                                   /* not retried */
    f.sc->after = SC_CONFLICT;
    CHECK_EQ_INT(commit(&f, 0, 1, 1), FLOE_ECONFLICT);
    CHECK_EQ_INT(f.sc->calls, 4);
    CHECK(msg_has(&f, "failed 3 times"));
    CHECK_EQ_INT(floe__metadata_snapshot_count(md(&f)), 0);
out:
    fix_close(&f);
}

static void patience(fix *f, unsigned ms)
{
    f->cfg.conflict_patience_ms = ms;
    renew(f);
}

TEST(races_lost_to_other_writers_are_retried_past_max_tries_within_the_patience)
{
    fix f;
    if (fix_open(&f, "races") != 0)
        goto out;
    CHECK_EQ_INT(commit(&f, 0, 1, 1), FLOE_OK);
    for (int i = 0; i < 6; i++)                                     /* max_tries is 3 */
        sc_script(f.sc, SC_FOREIGN_FIRST);
    CHECK_EQ_INT(commit(&f, 1, 2, 1), FLOE_OK);
    floe__committer_stats st;
    floe__committer_get_stats(f.c, &st);
    CHECK_EQ_INT(st.conflicts, 6);
    CHECK_EQ_INT(st.failures, 0);
    CHECK_EQ_STR(current_frontier(&f), "[2]");
    CHECK_EQ_INT(floe__metadata_snapshot_count(md(&f)), 8);         /* ours, 6 foreign, ours */
out:
    fix_close(&f);
    if (fix_open(&f, "endless-races") != 0)
        goto out2;
    patience(&f, 30);
    CHECK_EQ_INT(commit(&f, 0, 1, 1), FLOE_OK);
    f.sc->after = SC_FOREIGN_FIRST;
    CHECK_EQ_INT(commit(&f, 1, 2, 1), FLOE_ECONFLICT);
    CHECK(msg_has(&f, "other writers committed first"));
    floe__committer_get_stats(f.c, &st);
    CHECK(st.conflicts >= 1);          /* as many as fit in the patience on this machine */
    CHECK_EQ_INT(st.failures, 0);
out2:
    fix_close(&f);
}

TEST(a_newer_version_fences_on_main_and_by_its_tag)
{
    fix f;
    if (fix_open(&f, "fence") != 0)
        goto out;
    CHECK_EQ_INT(commit(&f, 0, 1, 1), FLOE_OK);
    int64_t v2 = 0;
    CHECK_EQ_INT(sc_sink_commit(f.sc, "ns", "t", "s", 2, "[3]", &v2, NULL), FLOE_OK);
    CHECK_EQ_INT(commit(&f, 1, 5, 1), FLOE_EFENCED);
    CHECK(msg_has(&f, "version 2"));
    /* rolled back below version 2's commit, its tag still fences version 1 */
    CHECK_EQ_INT(sc_apply(f.sc, "ns", "t",
                          json_pack("[{s:s, s:s, s:s, s:I}]", "action", "set-snapshot-ref",
                                    "ref-name", "floe-s", "type", "tag", "snapshot-id",
                                    (json_int_t)v2), NULL), FLOE_OK);
    const floe__snapshot *cur = floe__metadata_current_snapshot(md(&f));
    CHECK_EQ_INT(sc_rollback(f.sc, "ns", "t", cur->parent_snapshot_id, NULL), FLOE_OK);
    CHECK_EQ_INT(commit(&f, 1, 5, 1), FLOE_EFENCED);
out:
    fix_close(&f);
}

TEST(batches_an_earlier_run_committed_late_are_skipped)
{
    fix f;
    if (fix_open(&f, "late") != 0)
        goto out;
    CHECK_EQ_INT(commit(&f, 0, 1, 1), FLOE_OK);
    int64_t late = 0;           /* the killed run's commit of [1, 9) lands after we started */
    CHECK_EQ_INT(sc_sink_commit(f.sc, "ns", "t", "s", 1, "[9]", &late, NULL), FLOE_OK);
    floe__sealed *b = batch(&f, 1, 5, 2, 100);
    char *path = floe__strdup(floe__local_path(b->files.files[0].path));
    CHECK(access(path, F_OK) == 0);
    CHECK_EQ_INT(floe__committer_commit(f.c, b, f.err), FLOE_OK);
    floe__sealed_free(b);
    CHECK(access(path, F_OK) != 0);                           /* its files are not needed */
    CHECK(strstr(f.warned, "already committed by another run") != NULL);
    CHECK_EQ_INT(commit(&f, 5, 9, 1), FLOE_OK);     /* ends where it did: as a lost response */
    floe__committer_stats st;
    floe__committer_get_stats(f.c, &st);
    CHECK_EQ_INT(st.covered, 1);
    CHECK_EQ_INT(st.lost_responses, 1);
    CHECK_EQ_INT(floe__metadata_current_snapshot_id(md(&f)), late);
    CHECK_EQ_INT(commit(&f, 9, 12, 1), FLOE_OK);               /* and on it goes */
    CHECK_EQ_STR(current_frontier(&f), "[12]");
    CHECK_EQ_INT(floe__metadata_current_snapshot(md(&f))->parent_snapshot_id, late);
    floe__free(path);
out:
    fix_close(&f);
}

TEST(a_batch_partly_in_the_table_stops_the_sink)
{
    fix f;
    if (fix_open(&f, "partly") != 0)
        goto out;
    CHECK_EQ_INT(commit(&f, 0, 1, 1), FLOE_OK);
    CHECK_EQ_INT(sc_sink_commit(f.sc, "ns", "t", "s", 1, "[3]", NULL, NULL), FLOE_OK);
    CHECK_EQ_INT(commit(&f, 1, 5, 1), FLOE_ESTATE);
    CHECK(msg_has(&f, "partly in the table") && msg_has(&f, "after this run started"));
    CHECK_EQ_STR(current_frontier(&f), "[3]");
out:
    fix_close(&f);
}

TEST(a_rollback_past_our_commits_stops_the_sink)
{
    fix f;
    if (fix_open(&f, "rollback") != 0)
        goto out;
    CHECK_EQ_INT(commit(&f, 0, 1, 1), FLOE_OK);
    int64_t first = floe__metadata_current_snapshot_id(md(&f));
    CHECK_EQ_INT(commit(&f, 1, 5, 1), FLOE_OK);
    CHECK_EQ_INT(sc_rollback(f.sc, "ns", "t", first, NULL), FLOE_OK);
    CHECK_EQ_INT(commit(&f, 5, 9, 1), FLOE_ESTATE);
    CHECK(msg_has(&f, "rolled back") && msg_has(&f, "records [1]"));
out:
    fix_close(&f);
}

TEST(another_process_of_the_sink_is_not_called_a_rollback)
{
    fix f;
    if (fix_open(&f, "twin") != 0)
        goto out;
    /* nothing of ours committed when a twin process of sink s commits [3] */
    CHECK_EQ_INT(sc_sink_commit(f.sc, "ns", "t", "s", 1, "[3]", NULL, NULL), FLOE_OK);
    CHECK_EQ_INT(commit(&f, 5, 9, 1), FLOE_ESTATE);
    CHECK(msg_has(&f, "since this run started, from another process") &&
          msg_has(&f, "two processes are writing this table with the same sink id"));
    CHECK(!strstr(floe_error_message(f.err), "rolled back"));
    CHECK_EQ_STR(current_frontier(&f), "[3]");
out:
    fix_close(&f);
}

/* Foreign appends on top of our commit, then the parent of the newest
 * expired: the walk must go through the older metadata files. */
static void expire_between(fix *f, int64_t *cut)
{
    CHECK_EQ_INT(sc_foreign_append(f->sc, "ns", "t", NULL), FLOE_OK);
    int64_t a1 = floe__metadata_current_snapshot_id(md(f));
    CHECK_EQ_INT(sc_foreign_append(f->sc, "ns", "t", NULL), FLOE_OK);
    CHECK_EQ_INT(sc_expire(f->sc, "ns", "t", &a1, 1, NULL), FLOE_OK);
    *cut = a1;
}

TEST(expired_history_is_walked_through_older_metadata_files)
{
    fix f;
    if (fix_open(&f, "expired") != 0)
        goto out;
    CHECK_EQ_INT(commit(&f, 0, 1, 1), FLOE_OK);
    CHECK_EQ_INT(commit(&f, 1, 5, 1), FLOE_OK);
    int64_t cut;
    expire_between(&f, &cut);
    CHECK(floe__metadata_snapshot_by_id(md(&f), cut) == NULL);
    floe__progress p;
    CHECK_EQ_INT(floe__progress_read(md(&f), NULL, "s", &p, NULL), FLOE_OK);
    CHECK(p.state == FLOE__PROGRESS_UNKNOWN && p.missing == cut);  /* without the old files */
    CHECK_EQ_INT(floe__progress_read(md(&f), f.io, "s", &p, NULL), FLOE_OK);
    CHECK(p.state == FLOE__PROGRESS_FOUND && p.frontier.t == 5);
    CHECK_EQ_INT(commit(&f, 5, 9, 1), FLOE_OK);
    CHECK_EQ_STR(current_frontier(&f), "[9]");
out:
    fix_close(&f);
}

TEST(history_nobody_can_vouch_for_stops_the_sink)
{
    fix f;
    if (fix_open(&f, "unverifiable") != 0)
        goto out;
    CHECK_EQ_INT(commit(&f, 0, 1, 1), FLOE_OK);
    CHECK_EQ_INT(commit(&f, 1, 5, 1), FLOE_OK);
    int64_t cut;
    expire_between(&f, &cut);
    const floe__metadata *m = md(&f);               /* the older files are cleaned up */
    for (size_t i = 0; i < floe__metadata_metadata_log_count(m); i++)
        unlink(floe__local_path(floe__metadata_metadata_log_at(m, i)->metadata_file));
    CHECK_EQ_INT(commit(&f, 5, 9, 1), FLOE_ESTATE);
    CHECK(msg_has(&f, "can no longer be verified") && msg_has(&f, "--resume-from '[5]'"));
out:
    fix_close(&f);
}

/* ---- where a sink starts ----------------------------------------------------------------- */

static int decide(fix *f, const char *sink_id, bool new_sink, const char *resume_from,
                  floe__resume *r)
{
    floe__resume_ask a = {.table = "ns.t", .sink_id = sink_id, .version = 1,
                          .new_sink = new_sink};
    if (resume_from) {
        a.has_resume_from = true;
        CHECK_EQ_INT(floe__frontier_parse(resume_from, &a.resume_from, NULL), FLOE_OK);
    }
    floe_error_clear(f->err);
    return floe__resume_decide(&a, md(f), f->io, r, f->err);
}

TEST(resume_decisions)
{
    fix f;
    floe__resume r;
    if (fix_open(&f, "resume") != 0)
        goto out;
    CHECK_EQ_INT(decide(&f, "s", false, NULL, &r), FLOE_OK);          /* empty table: fresh */
    CHECK(!r.has);
    CHECK_EQ_INT(commit(&f, 0, 1, 3), FLOE_OK);
    CHECK_EQ_INT(commit(&f, 1, 7, 0), FLOE_OK);
    CHECK_EQ_INT(decide(&f, "s", false, NULL, &r), FLOE_OK);
    CHECK(r.has && r.frontier.t == 7 && r.snapshot_id == floe__metadata_current_snapshot_id(md(&f)));
    CHECK_EQ_INT(decide(&f, "s", false, "[6]", &r), FLOE_EINVAL);      /* disagrees */
    CHECK_EQ_INT(decide(&f, "other", false, NULL, &r), FLOE_ESTATE);   /* rows it cannot explain */
    CHECK(msg_has(&f, "--new-sink") && msg_has(&f, "'s'"));
    CHECK_EQ_INT(decide(&f, "other", true, NULL, &r), FLOE_OK);
    CHECK(!r.has);
    CHECK_EQ_INT(decide(&f, "other", false, "[40]", &r), FLOE_OK);
    CHECK(r.has && r.frontier.t == 40 && r.snapshot_id == -1);
    int64_t cut;                                    /* history cut, old files gone */
    expire_between(&f, &cut);
    const floe__metadata *m = md(&f);
    for (size_t i = 0; i < floe__metadata_metadata_log_count(m); i++)
        unlink(floe__local_path(floe__metadata_metadata_log_at(m, i)->metadata_file));
    CHECK_EQ_INT(decide(&f, "s", false, NULL, &r), FLOE_ESTATE);
    CHECK(msg_has(&f, "cannot be recovered") && msg_has(&f, "--resume-from '[7]'"));
    CHECK_EQ_INT(decide(&f, "s", true, NULL, &r), FLOE_ESTATE);       /* its tag says it wrote */
    CHECK_EQ_INT(decide(&f, "s", false, "[7]", &r), FLOE_OK);
    CHECK(r.has && r.frontier.t == 7);
out:
    fix_close(&f);
}

/* ---- copy-on-write ------------------------------------------------------------------------ */

/* What the hooks saw: the deletes to give, the rewrites handed over (their
 * first new file) and withdrawn. */
typedef struct cow_probe {
    floe__posdel_set *deletes;
    char handed[4][512];
    char all[4][4][512];             /* every new file of each rewrite handed over */
    int n_handed, withdrawn;
} cow_probe;

static int cow_prepare(void *ctx, floe__sealed *s, uint64_t token, floe__posdel_set **deletes,
                       floe_error *err)
{
    (void)s, (void)token, (void)err;
    *deletes = ((cow_probe *)ctx)->deletes;
    return FLOE_OK;
}

static void cow_rewrote(void *ctx, uint64_t token, const floe__cow *w)
{
    (void)token;
    cow_probe *p = ctx;
    if (!w)
        p->withdrawn++;
    else if (p->n_handed < 4) {
        for (size_t i = 0; i < w->files.n && i < 4; i++)
            snprintf(p->all[p->n_handed][i], sizeof p->all[0][0], "%s", w->files.files[i].path);
        snprintf(p->handed[p->n_handed++], sizeof p->handed[0], "%s",
                 w->files.n ? w->files.files[0].path : "");
    }
}

static bool exists(const char *uri)
{
    return access(floe__local_path(uri), F_OK) == 0;
}

/* The rows and delete files of the current snapshot. */
static void current_files(fix *f, uint64_t *rows, size_t *n_data, size_t *n_deletes)
{
    floe__plan *p = NULL;
    CHECK_EQ_INT(floe__table_refresh(f->t, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__table_plan(f->t, -1, &p, NULL), FLOE_OK);
    *rows = 0;
    for (size_t i = 0; p && i < p->n_data; i++)
        *rows += p->data[i].f.file.metrics.record_count;
    *n_data = p ? p->n_data : 0;
    *n_deletes = p ? p->n_deletes : 0;
    floe__plan_free(p);
}

/* Commit 10 rows (ids 0..9, one file), then give the committer hooks that
 * delete positions pos[0..n) of that file at every attempt and record the
 * rewrites; *old: the file's path. */
static void probed(fix *f, cow_probe *probe, const uint64_t *pos, size_t n, char *old,
                   size_t cap)
{
    CHECK_EQ_INT(commit(f, 0, 1, 10), FLOE_OK);
    floe__plan *p = NULL;
    CHECK_EQ_INT(floe__table_plan(f->t, -1, &p, NULL), FLOE_OK);
    snprintf(old, cap, "%s", p && p->n_data ? p->data[0].f.file.path : "");
    floe__plan_free(p);
    CHECK_EQ_INT(floe__posdel_set_new(&probe->deletes, NULL), FLOE_OK);
    for (size_t i = 0; i < n; i++)
        CHECK_EQ_INT(floe__posdel_set_add(probe->deletes, old, pos[i], NULL), FLOE_OK);
    f->cfg.prepare = cow_prepare;
    f->cfg.prepare_ctx = probe;
    f->cfg.rewrote = cow_rewrote;
    f->cfg.rewrote_ctx = probe;
    renew(f);
}

TEST(copy_on_write_rewrites_again_after_a_conflict_and_keeps_a_rewrite_that_may_have_landed)
{
    fix f;
    json_t *props = json_pack("{s:s}", "write.update.mode", "copy-on-write");
    cow_probe probe = {0};
    if (fix_open_with(&f, "cow", props) != 0)
        goto out;
    char old[512];
    probed(&f, &probe, (const uint64_t[]){2, 7}, 2, old, sizeof old);
    sc_script(f.sc, SC_CONFLICT);                              /* attempt 1: refused */
    sc_script(f.sc, SC_LOST);                                  /* attempt 2: lands, no answer */
    CHECK_EQ_INT(commit(&f, 1, 2, 1), FLOE_OK);
    CHECK_EQ_INT(probe.n_handed, 2);
    CHECK_EQ_INT(probe.withdrawn, 1);
    /* nothing changed in between: attempt 2 took attempt 1's rewrite over */
    CHECK_EQ_STR(probe.handed[0], probe.handed[1]);
    CHECK(exists(probe.handed[1]));
    uint64_t rows;
    size_t n_data, n_deletes;
    current_files(&f, &rows, &n_data, &n_deletes);
    CHECK_EQ_INT(rows, 9);                                     /* 10 - 2 + the batch's 1 */
    CHECK_EQ_INT(n_data, 2);
    CHECK_EQ_INT(n_deletes, 0);
    const floe__snapshot *cur = floe__metadata_current_snapshot(md(&f));
    CHECK_EQ_STR(cur->operation, "overwrite");
    CHECK_EQ_STR(floe__snapshot_summary_get(cur, "deleted-data-files"), "1");
    floe__committer_stats st;
    floe__committer_get_stats(f.c, &st);
    CHECK_EQ_INT(st.lost_responses, 1);
out:
    floe__posdel_set_free(probe.deletes);
    json_decref(props);
    fix_close(&f);
}

/* The hook's other writer: a position delete of its own, of row 5 of
 * data file `path`. */
typedef struct other_writer {
    fix *f;
    char path[512];
} other_writer;

static int other_deletes(scripted *sc, const char *ns, const char *name, floe_error *err)
{
    other_writer *o = sc->hook_ctx;
    floe__table *t = NULL;
    FLOE_FORWARD(floe__table_open(sc->inner, o->f->io, ns, name, NULL, NULL, &t, err));
    floe__posdel_set *d = NULL;
    int rc = floe__posdel_set_new(&d, err);
    if (rc == FLOE_OK)
        rc = floe__posdel_set_add(d, o->path, 5, err);
    floe__commit_request req = {
        .deletes = d, .base_snapshot_id = floe__metadata_current_snapshot_id(t->loaded->metadata)};
    int64_t id;
    if (rc == FLOE_OK)
        rc = floe__table_commit(t, &req, &id, err);
    floe__posdel_set_free(d);
    floe__table_free(t);
    return rc;
}

/* Two files the commit deletes from; before its first attempt lands
 * another writer deletes a row of one of them: the next attempt takes over
 * the other file's rewrite and rewrites only the changed one (with both
 * writers' deletes applied). */
TEST(copy_on_write_after_a_conflict_rewrites_only_the_files_the_other_writer_changed)
{
    fix f;
    json_t *props = json_pack("{s:s}", "write.update.mode", "copy-on-write");
    cow_probe probe = {0};
    other_writer other = {.f = &f};
    if (fix_open_with(&f, "cow-partial", props) != 0)
        goto out;
    CHECK_EQ_INT(commit(&f, 0, 1, 10), FLOE_OK);                /* ids 0..9 */
    CHECK_EQ_INT(commit(&f, 1, 2, 10), FLOE_OK);                /* ids 100..109 */
    floe__plan *p = NULL;
    CHECK_EQ_INT(floe__table_plan(f.t, -1, &p, NULL), FLOE_OK);
    CHECK_EQ_INT(p ? p->n_data : 0, 2);
    CHECK_EQ_INT(floe__posdel_set_new(&probe.deletes, NULL), FLOE_OK);
    for (size_t i = 0; p && i < p->n_data; i++)
        CHECK_EQ_INT(floe__posdel_set_add(probe.deletes, p->data[i].f.file.path, 2, NULL),
                     FLOE_OK);
    snprintf(other.path, sizeof other.path, "%s", p && p->n_data ? p->data[1].f.file.path : "");
    floe__plan_free(p);
    f.cfg.prepare = cow_prepare;
    f.cfg.prepare_ctx = &probe;
    f.cfg.rewrote = cow_rewrote;
    f.cfg.rewrote_ctx = &probe;
    renew(&f);
    f.sc->hook = other_deletes;
    f.sc->hook_ctx = &other;
    sc_script(f.sc, SC_HOOK);                                   /* attempt 1: raced */
    CHECK_EQ_INT(commit(&f, 2, 3, 1), FLOE_OK);
    CHECK_EQ_INT(probe.n_handed, 2);
    CHECK_EQ_INT(probe.withdrawn, 1);
    int same = 0, gone = 0;                                     /* attempt 1's files */
    for (int i = 0; i < 2; i++) {
        bool taken = strcmp(probe.all[0][i], probe.all[1][0]) == 0 ||
                     strcmp(probe.all[0][i], probe.all[1][1]) == 0;
        same += taken;
        gone += !taken && !exists(probe.all[0][i]);
    }
    CHECK_EQ_INT(same, 1);                                      /* the untouched file's */
    CHECK_EQ_INT(gone, 1);                                      /* the other: removed */
    floe__committer_stats st;
    floe__committer_get_stats(f.c, &st);
    CHECK_EQ_INT(st.rewrites_reused, 1);
    CHECK_EQ_INT(st.rewritten_files, 2);
    CHECK_EQ_INT(st.conflicts, 1);
    uint64_t rows;
    size_t n_data, n_deletes;
    current_files(&f, &rows, &n_data, &n_deletes);
    CHECK_EQ_INT(rows, 18);                            /* 20 - 2 - the other's 1 + the batch's 1 */
    CHECK_EQ_INT(n_data, 3);
    CHECK_EQ_INT(n_deletes, 0);                        /* the other's went with its file */
out:
    floe__posdel_set_free(probe.deletes);
    json_decref(props);
    fix_close(&f);
}

TEST(merge_on_read_tables_get_deletes_not_rewrites)
{
    fix f;
    cow_probe probe = {0};
    if (fix_open(&f, "mor") != 0)
        goto out;
    char old[512];
    probed(&f, &probe, (const uint64_t[]){2}, 1, old, sizeof old);
    CHECK_EQ_INT(commit(&f, 1, 2, 1), FLOE_OK);
    CHECK_EQ_INT(probe.n_handed, 0);
    uint64_t rows;
    size_t n_data, n_deletes;
    current_files(&f, &rows, &n_data, &n_deletes);
    CHECK_EQ_INT(rows, 11);                                    /* records, deletes aside */
    CHECK_EQ_INT(n_deletes, 1);
out:
    floe__posdel_set_free(probe.deletes);
    fix_close(&f);
}

int main(void)
{
    unit_make_tmp(tmp_root, sizeof tmp_root, "committer");
    RUN(each_commit_moves_main_and_the_progress_tag);
    RUN(a_lost_response_is_recognised_not_repeated);
    RUN(unknown_and_unsent_failures_are_retried_once_landed);
    RUN(another_writers_commit_is_a_conflict_then_passed_over);
    RUN(a_refusal_is_fatal_and_a_lasting_conflict_gives_up);
    RUN(races_lost_to_other_writers_are_retried_past_max_tries_within_the_patience);
    RUN(a_newer_version_fences_on_main_and_by_its_tag);
    RUN(batches_an_earlier_run_committed_late_are_skipped);
    RUN(a_batch_partly_in_the_table_stops_the_sink);
    RUN(a_rollback_past_our_commits_stops_the_sink);
    RUN(another_process_of_the_sink_is_not_called_a_rollback);
    RUN(expired_history_is_walked_through_older_metadata_files);
    RUN(history_nobody_can_vouch_for_stops_the_sink);
    RUN(resume_decisions);
    RUN(copy_on_write_rewrites_again_after_a_conflict_and_keeps_a_rewrite_that_may_have_landed);
    RUN(copy_on_write_after_a_conflict_rewrites_only_the_files_the_other_writer_changed);
    RUN(merge_on_read_tables_get_deletes_not_rewrites);
    unit_remove_tmp(tmp_root);
    return UNIT_DONE();
}
