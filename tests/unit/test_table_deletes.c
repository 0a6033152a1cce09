/*
 * test_table_deletes.c - the table layer's position deletes, deletion
 * vectors, file removals, v3 row lineage and scan planning.  Without
 * arguments it runs its unit tests on a SQLite catalog in a temporary
 * directory; with arguments it is the tool tests/test_v3_*.py and
 * tests/test_deletes_*.py drive:
 *
 *   test_table_deletes URI CATALOG_NAME WAREHOUSE COMMAND ARGS...
 *     create NS.T COLUMNS VERSION        open or create (format VERSION)
 *     commit NS.T SPEC_FILE              one commit: {"insert": [rows],
 *                                        "deletes": [[path, pos], ...],
 *                                        "delete_inserted": [i, ...],
 *                                        "remove": [path, ...], "operation",
 *                                        "data_sequence_number"}
 *     plan NS.T [SNAPSHOT]               live files and their deletes (JSON)
 *     dv NS.T DATA_PATH                  the positions of a data file's DV
 *     changes NS.T SNAPSHOT              what a snapshot added and removed
 * Each prints one JSON line; exit status 0 or the floe result code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "source/source_internal.h"
#include "table/table_internal.h"
#include "unit.h"

typedef struct tool {
    floe__fileio *io;
    floe__catalog *cat;
    floe_error *err;
} tool;

static void print_json(json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT);
    printf("%s\n", s ? s : "null");
    free(s);
    fflush(stdout);
}

static int open_table(tool *t, const char *ident, const char *columns, int version,
                      floe__table **out)
{
    char ns[256], name[256];
    const char *dot = strrchr(ident, '.');
    if (!dot || (size_t)(dot - ident) >= sizeof ns)
        return floe__err_set(t->err, FLOE_EINVAL, "bad table name %s", ident);
    memcpy(ns, ident, (size_t)(dot - ident));
    ns[dot - ident] = '\0';
    snprintf(name, sizeof name, "%s", dot + 1);
    floe_schema *declared = NULL;
    if (columns)
        FLOE_FORWARD(floe_schema_parse(columns, &declared, t->err));
    int rc = floe__table_open_v(t->cat, t->io, ns, name, declared, NULL, version, out, t->err);
    floe_schema_free(declared);
    return rc;
}

/* ---- commit ---------------------------------------------------------------------------- */

typedef struct commit {
    tool *t;
    floe__table *tb;
    const json_t *spec;
    floe__content_list files;
    json_t *inserted;
    floe__posdel_set *deletes;
} commit;

static int write_inserts(commit *c)
{
    const json_t *rows = json_object_get(c->spec, "insert");
    if (json_array_size(rows) == 0)
        return FLOE_OK;
    floe__file_writer *w;
    FLOE_FORWARD(floe__file_writer_new(c->tb, FLOE_CONTENT_DATA, c->tb->schema, NULL, 0, NULL,
                                       &w, c->t->err));
    floe__buf row;
    floe__buf_init(&row, 0);
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < json_array_size(rows); i++) {
        char *text = json_dumps(json_array_get(rows, i), JSON_COMPACT);
        const char *end, *path;
        uint64_t pos;
        floe__buf_reset(&row);
        rc = floe__json_parse_row(c->tb->schema, text, text + strlen(text), &end, &row,
                                  c->t->err);
        free(text);
        if (rc == FLOE_OK)
            rc = floe__file_writer_write(w, row.data, row.len, &path, &pos, c->t->err);
        if (rc == FLOE_OK)
            json_array_append_new(c->inserted, json_pack("[s, I]", path, (json_int_t)pos));
    }
    floe__buf_free(&row);
    if (rc != FLOE_OK) {
        floe__file_writer_abort(w);
        return rc;
    }
    return floe__file_writer_close(w, &c->files, c->t->err);
}

static int add_deletes(commit *c)
{
    const json_t *pairs = json_object_get(c->spec, "deletes");
    const json_t *idx = json_object_get(c->spec, "delete_inserted");
    FLOE_FORWARD(floe__posdel_set_new(&c->deletes, c->t->err));
    for (size_t i = 0; i < json_array_size(pairs) + json_array_size(idx); i++) {
        const json_t *e = i < json_array_size(pairs)
                              ? json_array_get(pairs, i)
                              : json_array_get(c->inserted, (size_t)json_integer_value(
                                                                json_array_get(idx, i - json_array_size(pairs))));
        FLOE_RETURN_IF(!e, c->t->err, FLOE_EINVAL, "delete %zu: no such row", i);
        FLOE_FORWARD(floe__posdel_set_add(c->deletes, json_string_value(json_array_get(e, 0)),
                                          (uint64_t)json_integer_value(json_array_get(e, 1)),
                                          c->t->err));
    }
    return FLOE_OK;
}

static int run_commit(commit *c, int64_t *id)
{
    FLOE_FORWARD(write_inserts(c));
    FLOE_FORWARD(add_deletes(c));
    const json_t *rm = json_object_get(c->spec, "remove");
    const char *paths[256];
    size_t n = json_array_size(rm) < 256 ? json_array_size(rm) : 256;
    for (size_t i = 0; i < n; i++)
        paths[i] = json_string_value(json_array_get(rm, i));
    const json_t *dsn = json_object_get(c->spec, "data_sequence_number");
    floe__commit_request req = {
        .files = c->files.files, .n_files = c->files.n,
        .base_snapshot_id = floe__metadata_current_snapshot_id(c->tb->loaded->metadata),
        .deletes = c->deletes, .remove = paths, .n_remove = n,
        .operation = json_string_value(json_object_get(c->spec, "operation")),
        .has_data_sequence_number = json_is_integer(dsn),
        .data_sequence_number = json_integer_value(dsn),
    };
    return floe__table_commit(c->tb, &req, id, c->t->err);
}

static int cmd_commit(tool *t, const char *ident, const char *spec_path)
{
    json_error_t je;
    json_t *spec = json_load_file(spec_path, 0, &je);
    if (!spec)
        return floe__err_set(t->err, FLOE_EINVAL, "bad spec %s: %s", spec_path, je.text);
    commit c = {.t = t, .spec = spec, .inserted = json_array()};
    int64_t id = -1;
    int rc = open_table(t, ident, NULL, 0, &c.tb);
    if (rc == FLOE_OK)
        rc = run_commit(&c, &id);
    json_t *o = json_pack("{s:s, s:s, s:o, s:O}", "result", floe_code_name(rc), "message",
                          floe_error_message(t->err), "snapshot_id",
                          rc == FLOE_OK ? json_integer(id) : json_null(), "inserted", c.inserted);
    print_json(o);
    json_decref(o);
    if (rc != FLOE_OK)
        for (size_t i = 0; i < c.files.n; i++)
            floe__fileio_remove(t->io, c.files.files[i].path, NULL);
    floe__content_list_clear(&c.files);
    floe__posdel_set_free(c.deletes);
    floe__table_free(c.tb);
    json_decref(c.inserted);
    json_decref(spec);
    return rc;
}

/* ---- plan, dv, changes ------------------------------------------------------------------- */

static json_t *file_json(const floe__plan_file *f)
{
    const floe__content_file *c = &f->file;
    json_t *o = json_pack("{s:s, s:i, s:s, s:I, s:I, s:I, s:I, s:I}", "path", c->path, "content",
                          (int)c->content, "format", c->format ? c->format : "PARQUET",
                          "records", (json_int_t)c->metrics.record_count, "size",
                          (json_int_t)c->metrics.file_size, "data_seq", (json_int_t)f->data_seq,
                          "file_seq", (json_int_t)f->file_seq, "snapshot_id",
                          (json_int_t)f->snapshot_id);
    if (c->referenced_data_file)
        json_object_set_new(o, "referenced", json_string(c->referenced_data_file));
    if (c->has_content_offset) {
        json_object_set_new(o, "offset", json_integer(c->content_offset));
        json_object_set_new(o, "content_size", json_integer(c->content_size));
    }
    if (c->has_first_row_id)
        json_object_set_new(o, "first_row_id", json_integer(c->first_row_id));
    return o;
}

static json_t *plan_json(const floe__plan *p)
{
    json_t *data = json_array();
    for (size_t i = 0; i < p->n_data; i++) {
        json_t *o = file_json(&p->data[i].f), *ds = json_array();
        const floe__plan_file **ap;
        size_t n = 0;
        if (floe__plan_applicable(p, i, &ap, &n, NULL) == FLOE_OK) {
            for (size_t j = 0; j < n; j++)
                json_array_append_new(ds, file_json(ap[j]));
            floe__free(ap);
        }
        json_object_set_new(o, "deletes", ds);
        json_array_append_new(data, o);
    }
    json_t *dels = json_array();
    for (size_t i = 0; i < p->n_deletes; i++)
        json_array_append_new(dels, file_json(&p->deletes[i]));
    const floe__plan_totals *t = &p->totals;
    return json_pack("{s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}}", "data", data,
                     "delete_files", dels, "totals", "data_files", (json_int_t)t->data_files,
                     "data_rows", (json_int_t)t->data_rows, "delete_files",
                     (json_int_t)t->delete_files, "pos_delete_files",
                     (json_int_t)t->pos_delete_files, "dvs", (json_int_t)t->dvs,
                     "eq_delete_files", (json_int_t)t->eq_delete_files, "pos_deletes",
                     (json_int_t)t->pos_deletes);
}

static int cmd_plan(tool *t, const char *ident, const char *what, const char *arg)
{
    floe__table *tb = NULL;
    floe__plan *p = NULL;
    floe__snapshot_changes *ch = NULL;
    int rc = open_table(t, ident, NULL, 0, &tb);
    int64_t sid = arg && strcmp(what, "dv") != 0 ? strtoll(arg, NULL, 10) : -1;
    json_t *out = NULL;
    if (rc == FLOE_OK && strcmp(what, "changes") == 0) {
        rc = floe__snapshot_changes_read(tb->io, tb->loaded->metadata, sid, &ch, t->err);
        if (rc == FLOE_OK) {
            json_t *l[4] = {json_array(), json_array(), json_array(), json_array()};
            for (size_t i = 0; i < ch->n_added_data; i++)
                json_array_append_new(l[0], file_json(&ch->added_data[i]));
            for (size_t i = 0; i < ch->n_removed_data; i++)
                json_array_append_new(l[1], file_json(&ch->removed_data[i]));
            for (size_t i = 0; i < ch->n_added_deletes; i++)
                json_array_append_new(l[2], file_json(&ch->added_deletes[i]));
            for (size_t i = 0; i < ch->n_removed_deletes; i++)
                json_array_append_new(l[3], file_json(&ch->removed_deletes[i]));
            out = json_pack("{s:o, s:o, s:o, s:o}", "added_data", l[0], "removed_data", l[1],
                            "added_deletes", l[2], "removed_deletes", l[3]);
        }
    } else if (rc == FLOE_OK) {
        rc = floe__table_plan(tb, sid, &p, t->err);
    }
    if (rc == FLOE_OK && p && strcmp(what, "dv") == 0) {
        size_t i;
        out = json_array();
        if (floe__pathmap_get(&p->data_index, arg, &i) && p->data[i].dv != SIZE_MAX) {
            floe__posbitmap b = {0};
            rc = floe__dv_read(tb->io, &p->deletes[p->data[i].dv].file, &b, t->err);
            floe__posbitmap_iter it = {&b, 0, 0, 0};
            uint64_t pos;
            while (rc == FLOE_OK && floe__posbitmap_next(&it, &pos))
                json_array_append_new(out, json_integer((json_int_t)pos));
            floe__posbitmap_clear(&b);
        }
    } else if (rc == FLOE_OK && p) {
        out = plan_json(p);
    }
    if (rc == FLOE_OK)
        print_json(out);
    else
        fprintf(stderr, "ERROR %s: %s\n", floe_code_name(rc), floe_error_message(t->err));
    json_decref(out);
    floe__plan_free(p);
    floe__snapshot_changes_free(ch);
    floe__table_free(tb);
    return rc;
}

static int run(tool *t, const char *cmd, char **a, int n)
{
    if (strcmp(cmd, "create") == 0 && n >= 3) {
        floe__table *tb = NULL;
        int rc = open_table(t, a[0], a[1], atoi(a[2]), &tb);
        if (rc == FLOE_OK) {
            json_t *o = json_pack("{s:s}", "metadata_location", tb->loaded->metadata_location);
            print_json(o);
            json_decref(o);
        } else {
            fprintf(stderr, "ERROR %s: %s\n", floe_code_name(rc), floe_error_message(t->err));
        }
        floe__table_free(tb);
        return rc;
    }
    if (strcmp(cmd, "commit") == 0 && n >= 2)
        return cmd_commit(t, a[0], a[1]);
    if ((strcmp(cmd, "plan") == 0 && n >= 1) || (strcmp(cmd, "dv") == 0 && n >= 2) ||
        (strcmp(cmd, "changes") == 0 && n >= 2))
        return cmd_plan(t, a[0], cmd, n >= 2 ? a[1] : NULL);
    fprintf(stderr, "unknown command or missing arguments: %s\n", cmd);
    return 2;
}

/* ---- unit tests ------------------------------------------------------------------------------ */

typedef struct env {
    char dir[256];
    tool t;
    floe__table *tb;
} env;

static void env_open(env *e, int version)
{
    unit_make_tmp(e->dir, sizeof e->dir, "table-deletes");
    char uri[300], wh[300];
    snprintf(uri, sizeof uri, "sqlite:%s/catalog.db", e->dir);
    snprintf(wh, sizeof wh, "file://%s/wh", e->dir);
    e->t.err = floe_error_new();
    CHECK_EQ_INT(floe__fileio_local_new(&e->t.io, e->t.err), FLOE_OK);
    CHECK_EQ_INT(floe__catalog_sql_open(uri, "floe", wh, e->t.io, &e->t.cat, e->t.err), FLOE_OK);
    CHECK_EQ_INT(open_table(&e->t, "ns.t", "id bigint not null", version, &e->tb), FLOE_OK);
}

static void env_close(env *e)
{
    floe__table_free(e->tb);
    floe__catalog_free(e->t.cat);
    floe__fileio_free(e->t.io);
    floe_error_free(e->t.err);
    unit_remove_tmp(e->dir);
}

/* A commit through the tool's spec format; the JSON spec text is given. */
static int env_commit(env *e, const char *spec_text, json_t **inserted)
{
    json_t *spec = json_loads(spec_text, 0, NULL);
    CHECK(spec != NULL);
    commit c = {.t = &e->t, .spec = spec, .inserted = json_array()};
    int64_t id;
    CHECK_EQ_INT(floe__table_refresh(e->tb, e->t.err), FLOE_OK);
    c.tb = e->tb;
    int rc = run_commit(&c, &id);
    if (rc != FLOE_OK)
        for (size_t i = 0; i < c.files.n; i++)
            floe__fileio_remove(e->t.io, c.files.files[i].path, NULL);
    floe__content_list_clear(&c.files);
    floe__posdel_set_free(c.deletes);
    if (inserted)
        *inserted = c.inserted;
    else
        json_decref(c.inserted);
    json_decref(spec);
    return rc;
}

static const char *summary(env *e, const char *key)
{
    const floe__snapshot *s = floe__metadata_current_snapshot(e->tb->loaded->metadata);
    return s ? floe__snapshot_summary_get(s, key) : NULL;
}

static floe__plan *plan(env *e)
{
    floe__plan *p = NULL;
    CHECK_EQ_INT(floe__table_plan(e->tb, -1, &p, e->t.err), FLOE_OK);
    return p;
}

TEST(v3_lineage)
{
    env e;
    env_open(&e, 3);
    const floe__metadata *md = e.tb->loaded->metadata;
    CHECK_EQ_INT(floe__metadata_format_version(md), 3);
    CHECK_EQ_INT(floe__metadata_next_row_id(md), 0);
    CHECK(floe__metadata_property(md, "format-version") == NULL);
    CHECK_EQ_INT(env_commit(&e, "{\"insert\": [{\"id\": 1}, {\"id\": 2}, {\"id\": 3}]}", NULL),
                 FLOE_OK);
    md = e.tb->loaded->metadata;
    const floe__snapshot *s = floe__metadata_current_snapshot(md);
    CHECK(s && s->has_first_row_id && s->first_row_id == 0 && s->added_rows == 3);
    CHECK_EQ_INT(floe__metadata_next_row_id(md), 3);
    CHECK_EQ_INT(env_commit(&e, "{\"insert\": [{\"id\": 4}, {\"id\": 5}]}", NULL), FLOE_OK);
    md = e.tb->loaded->metadata;
    s = floe__metadata_current_snapshot(md);
    CHECK(s && s->first_row_id == 3 && s->added_rows == 2);
    CHECK_EQ_INT(floe__metadata_next_row_id(md), 5);
    floe__plan *p = plan(&e);
    CHECK(p && p->n_data == 2);
    for (size_t i = 0; p && i < p->n_data; i++) {
        CHECK(p->data[i].f.file.has_first_row_id);
        int64_t want = p->data[i].f.file.metrics.record_count == 2 ? 3 : 0;
        CHECK_EQ_INT(p->data[i].f.file.first_row_id, want);
        CHECK_EQ_INT(p->data[i].f.data_seq, want ? 2 : 1);
    }
    CHECK(p && p->manifests.n == 2 && p->manifests.items[0].has_first_row_id &&
          p->manifests.items[0].first_row_id == 3);
    floe__plan_free(p);
    env_close(&e);
}

/* Three commits deleting from one data file: one DV, the union, the old ones removed. */
TEST(v3_dvs_merge)
{
    env e;
    env_open(&e, 3);
    json_t *ins = NULL;
    CHECK_EQ_INT(env_commit(&e, "{\"insert\": [{\"id\": 1}, {\"id\": 2}, {\"id\": 3}, "
                                "{\"id\": 4}]}", &ins), FLOE_OK);
    const char *path = json_string_value(json_array_get(json_array_get(ins, 0), 0));
    char spec[1024];
    for (int k = 0; k < 3; k++) {
        snprintf(spec, sizeof spec, "{\"deletes\": [[\"%s\", %d]]}", path, k);
        CHECK_EQ_INT(env_commit(&e, spec, NULL), FLOE_OK);
        CHECK_EQ_STR(summary(&e, "operation"), "delete");
        CHECK_EQ_STR(summary(&e, "added-dvs"), "1");
        CHECK_EQ_STR(summary(&e, "added-position-deletes"), k == 0 ? "1" : k == 1 ? "2" : "3");
        CHECK_EQ_STR(summary(&e, "total-delete-files"), "1");
        CHECK_EQ_STR(summary(&e, "total-position-deletes"), k == 0 ? "1" : k == 1 ? "2" : "3");
        if (k)
            CHECK_EQ_STR(summary(&e, "removed-dvs"), "1");
    }
    floe__plan *p = plan(&e);
    CHECK(p && p->n_data == 1 && p->n_deletes == 1 && p->totals.dvs == 1);
    if (p && p->n_data == 1 && p->data[0].dv != SIZE_MAX) {
        floe__posbitmap b = {0};
        CHECK_EQ_INT(floe__dv_read(e.t.io, &p->deletes[p->data[0].dv].file, &b, e.t.err),
                     FLOE_OK);
        CHECK_EQ_INT(floe__posbitmap_count(&b), 3);
        CHECK(floe__posbitmap_contains(&b, 0) && floe__posbitmap_contains(&b, 2) &&
              !floe__posbitmap_contains(&b, 3));
        floe__posbitmap_clear(&b);
    }
    /* the last snapshot removed the previous DV: a DELETED entry in a rewritten manifest */
    floe__snapshot_changes *ch = NULL;
    CHECK_EQ_INT(floe__snapshot_changes_read(e.t.io, e.tb->loaded->metadata,
                                             floe__metadata_current_snapshot_id(
                                                 e.tb->loaded->metadata), &ch, e.t.err), FLOE_OK);
    CHECK(ch && ch->n_added_deletes == 1 && ch->n_removed_deletes == 1 && ch->n_added_data == 0);
    if (ch && ch->n_removed_deletes == 1) {
        CHECK_EQ_INT(ch->removed_deletes[0].file.metrics.record_count, 2);
        CHECK_EQ_INT(ch->removed_deletes[0].data_seq, 3);      /* kept, not inherited */
    }
    floe__snapshot_changes_free(ch);
    floe__plan_free(p);
    json_decref(ins);
    env_close(&e);
}

TEST(v2_file_scoped)
{
    env e;
    env_open(&e, 2);
    json_t *ins = NULL;
    CHECK_EQ_INT(env_commit(&e, "{\"insert\": [{\"id\": 1}, {\"id\": 2}], \"delete_inserted\": "
                                "[1]}", &ins), FLOE_OK);
    CHECK_EQ_STR(summary(&e, "operation"), "overwrite");
    CHECK_EQ_STR(summary(&e, "added-position-delete-files"), "1");
    const char *path = json_string_value(json_array_get(json_array_get(ins, 0), 0));
    char spec[1024];
    snprintf(spec, sizeof spec, "{\"deletes\": [[\"%s\", 0]]}", path);
    CHECK_EQ_INT(env_commit(&e, spec, NULL), FLOE_OK);
    /* the data file's earlier delete file is folded into the new one */
    CHECK_EQ_STR(summary(&e, "added-position-delete-files"), "1");
    CHECK_EQ_STR(summary(&e, "removed-position-delete-files"), "1");
    CHECK_EQ_STR(summary(&e, "total-position-deletes"), "2");
    floe__plan *p = plan(&e);
    CHECK(p && p->n_data == 1 && p->n_deletes == 1 && p->totals.pos_delete_files == 1);
    if (p && p->n_data == 1 && p->n_deletes == 1) {
        CHECK_EQ_INT(p->data[0].n_pos, 1);
        CHECK_EQ_STR(p->deletes[0].file.referenced_data_file, path);
        CHECK(!floe__content_is_dv(&p->deletes[0].file));
        CHECK_EQ_INT(p->deletes[0].file.metrics.record_count, 2);
    }
    floe__plan_free(p);
    json_decref(ins);
    env_close(&e);
}

TEST(remove_files_and_conflicts)
{
    env e;
    env_open(&e, 3);
    json_t *a = NULL, *b = NULL;
    CHECK_EQ_INT(env_commit(&e, "{\"insert\": [{\"id\": 1}, {\"id\": 2}]}", &a), FLOE_OK);
    CHECK_EQ_INT(env_commit(&e, "{\"insert\": [{\"id\": 3}]}", &b), FLOE_OK);
    const char *pa = json_string_value(json_array_get(json_array_get(a, 0), 0));
    const char *pb = json_string_value(json_array_get(json_array_get(b, 0), 0));
    char spec[2048];
    snprintf(spec, sizeof spec, "{\"deletes\": [[\"%s\", 1]]}", pa);
    CHECK_EQ_INT(env_commit(&e, spec, NULL), FLOE_OK);
    /* compaction: a's live row rewritten into a new file keeping data sequence number 1 */
    snprintf(spec, sizeof spec, "{\"insert\": [{\"id\": 1}], \"remove\": [\"%s\"], "
                                "\"operation\": \"replace\", \"data_sequence_number\": 1}", pa);
    CHECK_EQ_INT(env_commit(&e, spec, NULL), FLOE_OK);
    CHECK_EQ_STR(summary(&e, "operation"), "replace");
    CHECK_EQ_STR(summary(&e, "deleted-data-files"), "1");
    CHECK_EQ_STR(summary(&e, "removed-dvs"), "1");             /* its DV went with it */
    CHECK_EQ_STR(summary(&e, "total-data-files"), "2");
    CHECK_EQ_STR(summary(&e, "total-records"), "2");
    CHECK_EQ_STR(summary(&e, "total-delete-files"), "0");
    floe__plan *p = plan(&e);
    CHECK(p && p->n_data == 2 && p->n_deletes == 0);
    for (size_t i = 0; p && i < p->n_data; i++) {
        bool is_b = strcmp(p->data[i].f.file.path, pb) == 0;
        CHECK_EQ_INT(p->data[i].f.data_seq, is_b ? 2 : 1);    /* kept / explicit */
        CHECK(strcmp(p->data[i].f.file.path, pa) != 0);
    }
    floe__plan_free(p);
    /* the removed file again, and deletes targeting it: conflicts naming it */
    snprintf(spec, sizeof spec, "{\"remove\": [\"%s\"]}", pa);
    CHECK_EQ_INT(env_commit(&e, spec, NULL), FLOE_ECONFLICT);
    CHECK(strstr(floe_error_message(e.t.err), pa) != NULL);
    snprintf(spec, sizeof spec, "{\"deletes\": [[\"%s\", 0]]}", pa);
    CHECK_EQ_INT(env_commit(&e, spec, NULL), FLOE_ECONFLICT);
    CHECK(strstr(floe_error_message(e.t.err), pa) != NULL);
    /* removing b: its manifest is rewritten, nothing else changes */
    snprintf(spec, sizeof spec, "{\"remove\": [\"%s\"]}", pb);
    CHECK_EQ_INT(env_commit(&e, spec, NULL), FLOE_OK);
    CHECK_EQ_STR(summary(&e, "operation"), "delete");
    CHECK_EQ_STR(summary(&e, "total-data-files"), "1");
    p = plan(&e);
    CHECK(p && p->n_data == 1 && p->totals.data_rows == 1);
    floe__plan_free(p);
    json_decref(a);
    json_decref(b);
    env_close(&e);
}

/* Planning by the spec's rules: sequence numbers and DVs over position deletes. */
TEST(plan_rules)
{
    env e;
    env_open(&e, 2);
    json_t *a = NULL;
    CHECK_EQ_INT(env_commit(&e, "{\"insert\": [{\"id\": 1}, {\"id\": 2}]}", &a), FLOE_OK);
    const char *pa = json_string_value(json_array_get(json_array_get(a, 0), 0));
    char spec[1024];
    snprintf(spec, sizeof spec, "{\"deletes\": [[\"%s\", 0]]}", pa);
    CHECK_EQ_INT(env_commit(&e, spec, NULL), FLOE_OK);
    /* a data file added after the delete gets none of it */
    CHECK_EQ_INT(env_commit(&e, "{\"insert\": [{\"id\": 3}]}", NULL), FLOE_OK);
    floe__plan *p = plan(&e);
    for (size_t i = 0; p && i < p->n_data; i++)
        CHECK_EQ_INT(p->data[i].n_pos, strcmp(p->data[i].f.file.path, pa) == 0 ? 1 : 0);
    floe__plan_free(p);
    json_decref(a);
    env_close(&e);
}

int main(int argc, char **argv)
{
    if (argc == 1) {
        RUN(v3_lineage);
        RUN(v3_dvs_merge);
        RUN(v2_file_scoped);
        RUN(remove_files_and_conflicts);
        RUN(plan_rules);
        return UNIT_DONE();
    }
    if (argc < 5) {
        fprintf(stderr, "usage: %s URI CATALOG_NAME WAREHOUSE COMMAND ARGS...\n", argv[0]);
        return 2;
    }
    tool t = {.err = floe_error_new()};
    int rc = floe__fileio_local_new(&t.io, t.err);
    if (rc == FLOE_OK)
        rc = floe__catalog_sql_open(argv[1], argv[2], argv[3], t.io, &t.cat, t.err);
    if (rc == FLOE_OK)
        rc = run(&t, argv[4], argv + 5, argc - 5);
    else
        fprintf(stderr, "ERROR %s: %s\n", floe_code_name(rc), floe_error_message(t.err));
    floe__catalog_free(t.cat);
    floe__fileio_free(t.io);
    floe_error_free(t.err);
    return rc;
}
