/*
 * test_iceberg_tool.c - a command-line driver of floe's table layer
 * (table/table_internal.h) for the peer tests (tests/test_iceberg_*.py):
 * it writes data files, position deletes and equality deletes and commits
 * them, so pyiceberg, DuckDB and Java can check row deltas the CLI cannot
 * make yet.  Without arguments it runs a short self-test (so `make unit`
 * can run it like every other unit-test program).
 *
 *   test_iceberg_tool URI CATALOG_NAME WAREHOUSE COMMAND ARGS...
 *     create NS.T COLUMNS [PROPS [LOCATION]]   open/create (LOCATION: create
 *                                              through the catalog there; PROPS
 *                                              "partition-by": a spec as DDL text,
 *                                              "day(ts), bucket(16, id)")
 *     delta NS.T SPEC_FILE                     one commit, see below
 *     race NS.T ROUNDS WORKER SYNC_DIR         lock-step commits with a peer
 *     increment NS.T COUNT WORKER              free-running commits, retried
 *     read-manifest-list URI | read-manifest URI   floe's readers, as JSON
 *
 * delta's SPEC_FILE is a JSON object:
 *   columns            declared column list (optional: else the table's schema)
 *   base               "current" (default), a snapshot id, or null (no snapshot)
 *   target_file_size   roll data files over at this size (optional)
 *   insert             [row objects]                    data rows
 *   delete_inserted    [indexes into insert]            position deletes of
 *                                                       rows of this commit
 *   position_deletes   [[data file path, pos], ...]
 *   equality_deletes   {"columns": [...], "rows": [key row objects]}
 *   summary            {extra summary properties}
 * and it prints {"result": "FLOE_OK"|code, "message", "snapshot_id",
 * "inserted": [[path, pos], ...], "files": [{"path","content","records"}]}.
 * Exit status: 0, or the floe result code.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "iceberg/partition_internal.h"
#include "table/table_internal.h"
#include "source/source_internal.h"
#include "unit.h"

typedef struct tool {
    floe__fileio *io;
    floe__catalog *cat;
    floe_error *err;
} tool;

static int fail(tool *t, int rc)
{
    fprintf(stderr, "ERROR %s: %s\n", floe_code_name(rc), floe_error_message(t->err));
    return rc;
}

static void print_json(json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT);
    printf("%s\n", s ? s : "null");
    free(s);
    fflush(stdout);
}

static int split(const char *ident, char *ns, char *name)
{
    const char *dot = strrchr(ident, '.');
    if (!dot || (size_t)(dot - ident) >= 256 || strlen(dot + 1) >= 256)
        return -1;
    memcpy(ns, ident, (size_t)(dot - ident));
    ns[dot - ident] = '\0';
    snprintf(name, 256, "%s", dot + 1);
    return 0;
}

static int open_table(tool *t, const char *ident, const char *columns, const json_t *props,
                      floe__table **out)
{
    char ns[256], name[256];
    if (split(ident, ns, name) != 0)
        return floe__err_set(t->err, FLOE_EINVAL, "bad table name %s", ident);
    floe_schema *declared = NULL;
    if (columns)
        FLOE_FORWARD(floe_schema_parse(columns, &declared, t->err));
    int rc = floe__table_open(t->cat, t->io, ns, name, declared, props, out, t->err);
    floe_schema_free(declared);
    return rc;
}

/* Parse a JSON row object (jansson) into the row format of s. */
static int parse_row(tool *t, const floe__schema *s, const json_t *obj, floe__buf *row)
{
    char *text = json_dumps(obj, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!text)
        return FLOE_OOM(t->err);
    floe__buf_reset(row);
    const char *end;
    int rc = floe__json_parse_row(s, text, text + strlen(text), &end, row, t->err);
    free(text);
    return rc;
}

/* ---- create ---------------------------------------------------------------------- */

/* The partition spec JSON of DDL text `by` over the declared columns. */
static int spec_json(tool *t, const floe_schema *s, const char *by, json_t **out)
{
    floe__partition_spec *ps = NULL;
    int rc = floe__partition_spec_parse(by, s, 1000, &ps, t->err);
    if (rc == FLOE_OK)
        rc = floe__partition_spec_to_json(ps, out, t->err);
    floe__partition_spec_free(ps);
    return rc;
}

static int cmd_create(tool *t, int n, char **a)
{
    json_t *props = n > 2 ? json_loads(a[2], 0, NULL) : NULL;
    floe__table *tb = NULL;
    int rc = FLOE_OK;
    char *by = NULL;                          /* PROPS "partition-by": DDL text (removed) */
    if (json_is_string(json_object_get(props, "partition-by"))) {
        by = strdup(json_string_value(json_object_get(props, "partition-by")));
        json_object_del(props, "partition-by");
    }
    if (n > 3 || by) {                        /* at an explicit location, or partitioned */
        char ns[256], name[256];
        floe_schema *s = NULL;
        json_t *sj = NULL;
        floe__loaded_table *lt = NULL;
        bool exists = false;
        rc = split(a[0], ns, name) == 0 ? floe_schema_parse(a[1], &s, t->err) : FLOE_EINVAL;
        json_t *pj = NULL;
        if (rc == FLOE_OK)
            rc = floe__schema_to_jansson(s, &sj, t->err);
        if (rc == FLOE_OK && by)
            rc = spec_json(t, s, by, &pj);
        if (rc == FLOE_OK)
            rc = floe__catalog_namespace_exists(t->cat, ns, &exists, t->err);
        if (rc == FLOE_OK && !exists)
            rc = floe__catalog_create_namespace(t->cat, ns, NULL, t->err);
        floe__table_def def = {.schema = sj, .partition_spec = pj,
                               .location = n > 3 ? a[3] : NULL, .properties = props};
        if (rc == FLOE_OK)
            rc = floe__catalog_create_table(t->cat, ns, name, &def, &lt, t->err);
        floe__loaded_table_free(lt);
        json_decref(pj);
        json_decref(sj);
        floe_schema_free(s);
    }
    free(by);
    if (rc == FLOE_OK)
        rc = open_table(t, a[0], a[1], props, &tb);
    json_decref(props);
    if (rc != FLOE_OK)
        return fail(t, rc);
    json_t *o = json_pack("{s:s, s:s}", "metadata_location", tb->loaded->metadata_location,
                          "data_location", tb->data_location);
    print_json(o);
    json_decref(o);
    floe__table_free(tb);
    return 0;
}

/* ---- delta ------------------------------------------------------------------------ */

typedef struct delta {
    tool *t;
    floe__table *tb;
    const json_t *spec;
    floe__file_writer_options o;
    floe__content_list files;
    json_t *inserted;                /* [[path, pos], ...] */
} delta;

/* Inserts into a partitioned table: through the partitioned writer. */
static int write_partitioned(delta *d, const json_t *rows)
{
    floe__part_writer *w;
    FLOE_FORWARD(floe__part_writer_new(d->tb, d->tb->schema, NULL, &d->o, NULL, &w, d->t->err));
    floe__buf row;
    floe__buf_init(&row, 0);
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < json_array_size(rows); i++) {
        rc = parse_row(d->t, d->tb->schema, json_array_get(rows, i), &row);
        if (rc == FLOE_OK)
            rc = floe__part_writer_write(w, row.data, row.len, NULL, NULL, d->t->err);
    }
    floe__buf_free(&row);
    if (rc != FLOE_OK) {
        floe__part_writer_abort(w);
        return rc;
    }
    return floe__part_writer_close(w, &d->files, d->t->err);
}

static int write_inserts(delta *d)
{
    const json_t *rows = json_object_get(d->spec, "insert");
    if (json_array_size(rows) == 0)
        return FLOE_OK;
    const json_t *spec = floe__metadata_spec_by_id(d->tb->loaded->metadata, d->tb->spec_id);
    if (json_array_size(json_object_get(spec, "fields")) > 0)
        return write_partitioned(d, rows);
    floe__file_writer *w;
    FLOE_FORWARD(floe__file_writer_new(d->tb, FLOE_CONTENT_DATA, d->tb->schema, NULL, 0, &d->o,
                                       &w, d->t->err));
    floe__buf row;
    floe__buf_init(&row, 0);
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < json_array_size(rows); i++) {
        const char *path;
        uint64_t pos;
        rc = parse_row(d->t, d->tb->schema, json_array_get(rows, i), &row);
        if (rc == FLOE_OK)
            rc = floe__file_writer_write(w, row.data, row.len, &path, &pos, d->t->err);
        if (rc == FLOE_OK)
            json_array_append_new(d->inserted, json_pack("[s, I]", path, (json_int_t)pos));
    }
    floe__buf_free(&row);
    if (rc != FLOE_OK) {
        floe__file_writer_abort(w);
        return rc;
    }
    return floe__file_writer_close(w, &d->files, d->t->err);
}

static int add_posdels(delta *d, floe__posdel_writer *w)
{
    const json_t *idx = json_object_get(d->spec, "delete_inserted");
    const json_t *pairs = json_object_get(d->spec, "position_deletes");
    for (size_t i = 0; i < json_array_size(idx); i++) {
        const json_t *e = json_array_get(d->inserted,
                                         (size_t)json_integer_value(json_array_get(idx, i)));
        if (!e)
            return floe__err_set(d->t->err, FLOE_EINVAL, "delete_inserted[%zu] out of range", i);
        FLOE_FORWARD(floe__posdel_add(w, json_string_value(json_array_get(e, 0)),
                                      (uint64_t)json_integer_value(json_array_get(e, 1)),
                                      d->t->err));
    }
    for (size_t i = 0; i < json_array_size(pairs); i++) {
        const json_t *e = json_array_get(pairs, i);
        FLOE_FORWARD(floe__posdel_add(w, json_string_value(json_array_get(e, 0)),
                                      (uint64_t)json_integer_value(json_array_get(e, 1)),
                                      d->t->err));
    }
    return FLOE_OK;
}

static int write_posdels(delta *d)
{
    if (json_array_size(json_object_get(d->spec, "delete_inserted")) == 0 &&
        json_array_size(json_object_get(d->spec, "position_deletes")) == 0)
        return FLOE_OK;
    floe__posdel_writer *w;
    FLOE_FORWARD(floe__posdel_writer_new(d->tb, &d->o, &w, d->t->err));
    int rc = add_posdels(d, w);
    if (rc != FLOE_OK) {
        floe__posdel_writer_abort(w);
        return rc;
    }
    return floe__posdel_writer_close(w, &d->files, d->t->err);
}

static int write_eqdels(delta *d)
{
    const json_t *eq = json_object_get(d->spec, "equality_deletes");
    if (!eq)
        return FLOE_OK;
    const json_t *cols = json_object_get(eq, "columns"), *rows = json_object_get(eq, "rows");
    size_t n = json_array_size(cols);
    const char *names[64];
    int32_t ids[64];
    for (size_t i = 0; i < n && i < 64; i++)
        names[i] = json_string_value(json_array_get(cols, i));
    floe__schema *key;
    FLOE_FORWARD(floe__schema_project(d->tb->schema, names, n > 64 ? 64 : n, &key, d->t->err));
    for (uint32_t i = 0; i < key->root.n_children; i++)
        ids[i] = key->root.children[i].id;
    floe__file_writer *w = NULL;
    int rc = floe__file_writer_new(d->tb, FLOE_CONTENT_EQUALITY_DELETES, key, ids,
                                   key->root.n_children, &d->o, &w, d->t->err);
    floe__buf row;
    floe__buf_init(&row, 0);
    for (size_t i = 0; rc == FLOE_OK && i < json_array_size(rows); i++) {
        rc = parse_row(d->t, key, json_array_get(rows, i), &row);
        if (rc == FLOE_OK)
            rc = floe__file_writer_write(w, row.data, row.len, NULL, NULL, d->t->err);
    }
    floe__buf_free(&row);
    if (w && rc == FLOE_OK)
        rc = floe__file_writer_close(w, &d->files, d->t->err);
    else
        floe__file_writer_abort(w);
    floe_schema_free(key);
    return rc;
}

static int run_delta(delta *d, int64_t *snapshot_id)
{
    d->o.target_file_size = (uint64_t)json_integer_value(json_object_get(d->spec,
                                                                         "target_file_size"));
    floe_parquet_options_init(&d->o.parquet, sizeof d->o.parquet);
    FLOE_FORWARD(write_inserts(d));
    FLOE_FORWARD(write_posdels(d));
    FLOE_FORWARD(write_eqdels(d));
    const json_t *base = json_object_get(d->spec, "base");
    int64_t b = floe__metadata_current_snapshot_id(d->tb->loaded->metadata);
    if (json_is_null(base))
        b = -1;
    else if (json_is_integer(base))
        b = json_integer_value(base);
    floe__commit_request req = {.files = d->files.files, .n_files = d->files.n,
                                .summary = json_object_get(d->spec, "summary"),
                                .base_snapshot_id = b, .tag = NULL};
    return floe__table_commit(d->tb, &req, snapshot_id, d->t->err);
}

static json_t *files_json(const floe__content_list *l)
{
    json_t *a = json_array();
    for (size_t i = 0; i < l->n; i++)
        json_array_append_new(a, json_pack("{s:s, s:i, s:I}", "path", l->files[i].path,
                                           "content", (int)l->files[i].content, "records",
                                           (json_int_t)l->files[i].metrics.record_count));
    return a;
}

static int cmd_delta(tool *t, char **a)
{
    json_error_t je;
    json_t *spec = json_load_file(a[1], 0, &je);
    if (!spec) {
        fprintf(stderr, "bad spec file %s: %s\n", a[1], je.text);
        return 2;
    }
    delta d = {.t = t, .spec = spec, .inserted = json_array()};
    int64_t id = -1;
    const char *columns = json_string_value(json_object_get(spec, "columns"));
    int rc = open_table(t, a[0], columns, NULL, &d.tb);
    if (rc == FLOE_OK)
        rc = run_delta(&d, &id);
    json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:o}", "result", floe_code_name(rc), "message",
                          floe_error_message(t->err), "snapshot_id",
                          rc == FLOE_OK ? json_integer(id) : json_null(), "inserted",
                          d.inserted, "files", files_json(&d.files));
    print_json(o);
    json_decref(o);
    if (rc != FLOE_OK)     /* nothing references the data and delete files */
        for (size_t i = 0; i < d.files.n; i++)
            floe__fileio_remove(t->io, d.files.files[i].path, NULL);
    floe__content_list_clear(&d.files);
    floe__table_free(d.tb);
    json_decref(spec);
    return rc;
}

/* ---- races ------------------------------------------------------------------------- */

/* Wait until every worker has created "<dir>/<tag>-<round>-<w>". */
static int barrier(const char *dir, const char *tag, int round, int me, int workers)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%d-%d", dir, tag, round, me);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fclose(f);
    for (int waited = 0; waited < 120000; waited++) {
        int ready = 0;
        for (int w = 0; w < workers; w++) {
            snprintf(path, sizeof path, "%s/%s-%d-%d", dir, tag, round, w);
            ready += access(path, F_OK) == 0;
        }
        if (ready == workers)
            return 0;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return -1;
}

/* One data file holding the row {"id": id, "worker": worker, "round": round}. */
static int one_file(tool *t, floe__table *tb, int64_t id, int worker, int round,
                    floe__content_list *out)
{
    char text[160];
    snprintf(text, sizeof text, "{\"id\": %lld, \"worker\": %d, \"round\": %d}", (long long)id,
             worker, round);
    floe__buf row;
    floe__buf_init(&row, 0);
    const char *end;
    floe__file_writer *w;
    int rc = floe__json_parse_row(tb->schema, text, text + strlen(text), &end, &row, t->err);
    if (rc == FLOE_OK)
        rc = floe__file_writer_new(tb, FLOE_CONTENT_DATA, tb->schema, NULL, 0, NULL, &w, t->err);
    if (rc == FLOE_OK) {
        rc = floe__file_writer_write(w, row.data, row.len, NULL, NULL, t->err);
        if (rc == FLOE_OK)
            rc = floe__file_writer_close(w, out, t->err);
        else
            floe__file_writer_abort(w);
    }
    floe__buf_free(&row);
    return rc;
}

static int commit_files(tool *t, floe__table *tb, const floe__content_list *files, int worker,
                        int64_t *id)
{
    char wk[16];
    snprintf(wk, sizeof wk, "%d", worker);
    json_t *summary = json_pack("{s:s}", "worker", wk);
    floe__commit_request req = {.files = files->files, .n_files = files->n, .summary = summary,
                                .base_snapshot_id = floe__metadata_current_snapshot_id(tb->loaded->metadata),
                                .tag = NULL};
    int rc = floe__table_commit(tb, &req, id, t->err);
    json_decref(summary);
    return rc;
}

/* Lock-step rounds against one peer: both refresh and write a file, meet,
 * then commit on the same base: one must win, the other must see
 * FLOE_ECONFLICT.  The loser then refreshes and commits its file again. */
static int cmd_race(tool *t, char **a)
{
    int rounds = atoi(a[1]), me = atoi(a[2]);
    floe__table *tb = NULL;
    int rc = open_table(t, a[0], NULL, NULL, &tb);
    for (int r = 0; rc == FLOE_OK && r < rounds; r++) {
        floe__content_list files = {0};
        int64_t id = -1;
        rc = floe__table_refresh(tb, t->err);
        if (rc == FLOE_OK)
            rc = one_file(t, tb, 1000 * r + me, me, r, &files);
        if (rc == FLOE_OK && barrier(a[3], "ready", r, me, 2) != 0)
            rc = floe__err_set(t->err, FLOE_EINTERNAL, "barrier timeout");
        if (rc == FLOE_OK)
            rc = commit_files(t, tb, &files, me, &id);
        bool won = rc == FLOE_OK;
        json_t *line = json_pack("{s:i, s:s, s:s}", "round", r, "result",
                                 won ? "won" : rc == FLOE_ECONFLICT ? "conflict" : "error",
                                 "message", won ? "" : floe_error_message(t->err));
        if (rc == FLOE_ECONFLICT) {
            rc = barrier(a[3], "winner-done", r, me, 2) == 0 ? FLOE_OK : FLOE_EINTERNAL;
            if (rc == FLOE_OK)
                rc = floe__table_refresh(tb, t->err);
            if (rc == FLOE_OK)
                rc = commit_files(t, tb, &files, me, &id);
            json_object_set_new(line, "retry", json_string(floe_code_name(rc)));
        } else if (rc == FLOE_OK) {
            rc = barrier(a[3], "winner-done", r, me, 2) == 0 ? FLOE_OK : FLOE_EINTERNAL;
        }
        print_json(line);
        json_decref(line);
        if (rc != FLOE_OK)
            for (size_t i = 0; i < files.n; i++)
                floe__fileio_remove(t->io, files.files[i].path, NULL);
        floe__content_list_clear(&files);
        if (rc == FLOE_OK && barrier(a[3], "done", r, me, 2) != 0)
            rc = floe__err_set(t->err, FLOE_EINTERNAL, "barrier timeout");
    }
    floe__table_free(tb);
    return rc == FLOE_OK ? 0 : fail(t, rc);
}

/* `count` commits of one row each, refreshing and retrying on conflict. */
static int cmd_increment(tool *t, char **a)
{
    int count = atoi(a[1]), me = atoi(a[2]), conflicts = 0;
    floe__table *tb = NULL;
    int rc = open_table(t, a[0], NULL, NULL, &tb);
    for (int i = 0; rc == FLOE_OK && i < count; i++) {
        floe__content_list files = {0};
        int64_t id;
        rc = one_file(t, tb, 1000000 * (int64_t)me + i, me, i, &files);
        for (int tries = 0; rc == FLOE_OK && tries < 1000; tries++) {
            rc = commit_files(t, tb, &files, me, &id);
            if (rc != FLOE_ECONFLICT)
                break;
            conflicts++;
            floe_error_clear(t->err);
            rc = floe__table_refresh(tb, t->err);   /* FLOE_OK: try again */
            if (rc == FLOE_OK && tries == 999)
                rc = floe__err_set(t->err, FLOE_ECONFLICT, "1000 conflicts in a row");
        }
        floe__content_list_clear(&files);
    }
    floe__table_free(tb);
    if (rc != FLOE_OK)
        return fail(t, rc);
    json_t *r = json_pack("{s:i, s:i}", "commits", count, "conflicts", conflicts);
    print_json(r);
    json_decref(r);
    return 0;
}

/* ---- reading manifests back --------------------------------------------------------------- */

static json_t *bytes_hex(const floe__buf *b)
{
    char *s = malloc(b->len * 2 + 1);
    for (size_t i = 0; s && i < b->len; i++)
        snprintf(s + 2 * i, 3, "%02x", b->data[i]);
    if (s)
        s[b->len * 2] = '\0';
    json_t *v = json_string(s ? s : "");
    free(s);
    return v;
}

static json_t *entry_json(const floe__manifest_entry *e)
{
    const floe__file_metrics *m = &e->file.metrics;
    json_t *cols = json_object();
    for (size_t i = 0; i < m->n_columns; i++) {
        const floe__col_metrics *c = &m->columns[i];
        char key[16];
        snprintf(key, sizeof key, "%d", (int)c->field_id);
        json_t *o = json_pack("{s:I}", "column_size", (json_int_t)c->column_size);
        if (c->has_counts) {
            json_object_set_new(o, "value_count", json_integer((json_int_t)c->value_count));
            json_object_set_new(o, "null_count", json_integer((json_int_t)c->null_count));
        }
        if (c->has_nan_count)
            json_object_set_new(o, "nan_count", json_integer((json_int_t)c->nan_count));
        if (c->has_lower)
            json_object_set_new(o, "lower", bytes_hex(&c->lower));
        if (c->has_upper)
            json_object_set_new(o, "upper", bytes_hex(&c->upper));
        json_object_set_new(cols, key, o);
    }
    json_t *eq = json_array(), *splits = json_array();
    for (size_t i = 0; i < e->file.n_equality_ids; i++)
        json_array_append_new(eq, json_integer(e->file.equality_ids[i]));
    for (size_t i = 0; i < m->n_splits; i++)
        json_array_append_new(splits, json_integer((json_int_t)m->split_offsets[i]));
    return json_pack("{s:o, s:i, s:o, s:o, s:o, s:i, s:s, s:s, s:I, s:I, s:o, s:o, s:o}",
                     "partition", bytes_hex(&e->file.partition), "status",
                     (int)e->status, "snapshot_id",
                     e->has_snapshot_id ? json_integer(e->snapshot_id) : json_null(),
                     "sequence_number",
                     e->has_sequence_number ? json_integer(e->sequence_number) : json_null(),
                     "file_sequence_number",
                     e->has_file_sequence_number ? json_integer(e->file_sequence_number)
                                                 : json_null(),
                     "content", (int)e->file.content, "file_path", e->file.path, "file_format",
                     e->file_format, "record_count", (json_int_t)m->record_count,
                     "file_size", (json_int_t)m->file_size, "columns", cols, "equality_ids", eq,
                     "split_offsets", splits);
}

static json_t *list_entry_json(const floe__manifest_file *m)
{
    return json_pack("{s:s, s:I, s:i, s:i, s:I, s:I, s:I, s:i, s:i, s:i, s:I, s:I, s:I, s:o}",
                     "manifest_path", m->path, "manifest_length", (json_int_t)m->length,
                     "partition_spec_id", (int)m->spec_id, "content", (int)m->content,
                     "sequence_number", (json_int_t)m->sequence_number, "min_sequence_number",
                     (json_int_t)m->min_sequence_number, "added_snapshot_id",
                     (json_int_t)m->added_snapshot_id, "added_files_count",
                     (int)m->added_files, "existing_files_count", (int)m->existing_files,
                     "deleted_files_count", (int)m->deleted_files, "added_rows_count",
                     (json_int_t)m->added_rows, "existing_rows_count",
                     (json_int_t)m->existing_rows, "deleted_rows_count",
                     (json_int_t)m->deleted_rows, "partitions",
                     m->has_partitions ? json_integer((json_int_t)m->n_partitions)
                                       : json_null());
}

static int cmd_read(tool *t, const char *what, const char *uri)
{
    floe__buf data;
    floe__buf_init(&data, FLOE_MANIFEST_MAX_BYTES);
    int rc = floe__fileio_read_all(t->io, uri, &data, t->err);
    json_t *out = json_array();
    if (rc == FLOE_OK && strcmp(what, "read-manifest-list") == 0) {
        floe__manifest_list l = {0};
        rc = floe__manifest_list_parse(data.data, data.len, &l, t->err);
        for (size_t i = 0; rc == FLOE_OK && i < l.n; i++)
            json_array_append_new(out, list_entry_json(&l.items[i]));
        floe__manifest_list_clear(&l);
    } else if (rc == FLOE_OK) {
        floe__manifest_entries e = {0};
        rc = floe__manifest_parse(data.data, data.len, &e, t->err);
        for (size_t i = 0; rc == FLOE_OK && i < e.n; i++)
            json_array_append_new(out, entry_json(&e.items[i]));
        floe__manifest_entries_clear(&e);
    }
    floe__buf_free(&data);
    if (rc == FLOE_OK)
        print_json(out);
    json_decref(out);
    return rc == FLOE_OK ? 0 : fail(t, rc);
}

static int run(tool *t, const char *cmd, char **a, int n)
{
    if (strcmp(cmd, "create") == 0 && n >= 2)
        return cmd_create(t, n, a);
    if (strcmp(cmd, "delta") == 0 && n >= 2)
        return cmd_delta(t, a);
    if (strcmp(cmd, "race") == 0 && n >= 4)
        return cmd_race(t, a);
    if (strcmp(cmd, "increment") == 0 && n >= 3)
        return cmd_increment(t, a);
    if ((strcmp(cmd, "read-manifest-list") == 0 || strcmp(cmd, "read-manifest") == 0) && n >= 1)
        return cmd_read(t, cmd, a[0]);
    fprintf(stderr, "unknown command or missing arguments: %s\n", cmd);
    return 2;
}

/* ---- self-test: a create + delta round trip in a temporary directory --------------- */

TEST(self_test)
{
    char dir[] = "/tmp/floe-iceberg-tool-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char uri[128], wh[128], spec[160];
    snprintf(uri, sizeof uri, "sqlite:%s/catalog.db", dir);
    snprintf(wh, sizeof wh, "file://%s/wh", dir);
    snprintf(spec, sizeof spec, "%s/spec.json", dir);
    FILE *f = fopen(spec, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs("{\"insert\": [{\"id\": 1}, {\"id\": 2}], \"delete_inserted\": [1]}", f);
    fclose(f);
    tool t = {.err = floe_error_new()};
    CHECK_EQ_INT(floe__fileio_local_new(&t.io, t.err), FLOE_OK);
    CHECK_EQ_INT(floe__catalog_sql_open(uri, "floe", wh, t.io, &t.cat, t.err), FLOE_OK);
    char *create[] = {"ns.t", "id bigint not null"}, *delta_args[] = {"ns.t", spec};
    if (t.cat) {
        CHECK_EQ_INT(cmd_create(&t, 2, create), 0);
        CHECK_EQ_INT(cmd_delta(&t, delta_args), 0);
        CHECK_EQ_INT(cmd_delta(&t, delta_args), 0);
        floe__table *tb = NULL;
        CHECK_EQ_INT(open_table(&t, "ns.t", NULL, NULL, &tb), FLOE_OK);
        CHECK(tb && floe__metadata_snapshot_count(tb->loaded->metadata) == 2);
        floe__table_free(tb);
    }
    floe__catalog_free(t.cat);
    floe__fileio_free(t.io);
    floe_error_free(t.err);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

int main(int argc, char **argv)
{
    if (argc == 1) {
        RUN(self_test);
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
    rc = rc == FLOE_OK ? run(&t, argv[4], argv + 5, argc - 5) : fail(&t, rc);
    floe__catalog_free(t.cat);
    floe__fileio_free(t.io);
    floe_error_free(t.err);
    return rc;
}
