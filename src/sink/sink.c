/*
 * sink.c - the public sink (floe_sink_*): wires the parts together.
 *
 *   push     -> input checks, as-of / resume handling, key extraction -> stash
 *   advance  -> minter (new batch descriptions) -> writer
 *               stash (closed interval, consolidated) -> writer
 *               writer (sealed batches, oldest first) -> committer
 *   end      -> the last batch ends just past the newest update (or at the
 *               input frontier, if later); everything is committed
 *   finish   -> advance to the empty frontier (the input is complete)
 *
 * Setup checks every option, then resolves the table (created with the
 * declared schema, plus _diff and _timestamp in append mode), the key
 * (declared columns, or the whole row) and the resume point (resume.c),
 * and fences an older sink version at once.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "sink/sink_state_internal.h"
#include "source/source_internal.h"

#define PUBLISH_EVERY 4096
#define ROW_GROUP_FLOOR ((size_t)4 << 20)   /* the smallest row group a memory limit makes */



void floe_sink_options_init(floe_sink_options *o, size_t size)
{
    floe_sink_options d = {.size = sizeof d, .commit_interval = 10000, .sink_version = 1,
                           .compression = FLOE_COMPRESSION_DEFAULT};
    floe__abi_init(o, size, &d, sizeof d);
}

/* ---- stats ------------------------------------------------------------------------------ */

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* p50 and p99 of the last commits' durations (nearest rank). */
static void commit_quantiles(const floe__committer_stats *cs, floe_sink_stats *st)
{
    size_t n = cs->snapshots < FLOE__COMMIT_WINDOW ? (size_t)cs->snapshots : FLOE__COMMIT_WINDOW;
    if (n == 0)
        return;
    uint64_t v[FLOE__COMMIT_WINDOW];
    memcpy(v, cs->recent_ns, n * sizeof *v);
    qsort(v, n, sizeof *v, cmp_u64);
    st->commit_p50_us = v[(n - 1) / 2] / 1000;
    st->commit_p99_us = v[(n * 99 + 99) / 100 - 1] / 1000;
}

void floe__sink_publish(floe_sink *s)
{
    floe_sink_stats st = {0};
    if (s->stash) {
        floe__stash_stats ss;
        floe__stash_get_stats(s->stash, &ss);
        st.updates_stashed = ss.rows;
    }
    if (s->writer) {
        floe__writer_stats ws;
        floe__writer_get_stats(s->writer, &ws);
        st.pk_violations = ws.pk_violations;
        st.retractions_missing = ws.retract_missing;
        st.retractions_mismatched = ws.retract_mismatch;
    }
    if (s->keeper) {
        floe__keeper_stats ks;
        floe__keeper_get_stats(s->keeper, &ks);
        st.index_keys = ks.kx.keys;
        st.index_memory_bytes = ks.kx.memory_bytes;
        st.index_disk_bytes = ks.kx.disk_bytes;
        st.index_rebuilds = ks.rebuilds;
        st.index_snapshots_synced = ks.synced;
        st.index_rows_read = ks.built.rows;
        st.index_rows_moved = ks.moved_rows;
        st.deletes_retargeted = ks.retargeted;
    }
    if (s->committer) {
        floe__committer_stats cs;
        floe__committer_get_stats(s->committer, &cs);
        st.snapshots_committed = cs.snapshots;
        st.lost_responses = cs.lost_responses;
        st.commit_conflicts = cs.conflicts;
        st.commit_failures = cs.failures;
        st.data_files = cs.data_files;
        st.delete_files = cs.delete_files;
        st.rows_committed = cs.rows;
        st.bytes_committed = cs.bytes;
        st.commit_seconds_total_us = cs.commit_ns_total / 1000;
        commit_quantiles(&cs, &st);
        st.batches_skipped = cs.covered;
        st.files_rewritten = cs.rewritten_files;
        st.rewrites_reused = cs.rewrites_reused;
        st.rows_rewritten = cs.rewritten_rows;
        st.has_committed_frontier = cs.has_frontier;
        st.committed_frontier_empty = cs.frontier.empty;
        st.committed_frontier = cs.frontier.t;
    }
    if (!st.has_committed_frontier && s->resume.has) {
        st.has_committed_frontier = 1;
        st.committed_frontier_empty = s->resume.frontier.empty;
        st.committed_frontier = s->resume.frontier.t;
    }
    st.close_seconds_total_us = s->close_ns_total / 1000;
    st.batches_sealed = s->batches_sealed;
    pthread_mutex_lock(&s->lock);
    s->published = st;
    pthread_mutex_unlock(&s->lock);
    s->since_publish = 0;
}

/* The input frontier and freshness, published for other threads at once. */
static void note_input(floe_sink *s, uint64_t t)
{
    floe__fresh_note(&s->fresh, t, floe__monotonic_ns());
    atomic_store_explicit(&s->oldest_uncommitted_ns, floe__fresh_oldest_ns(&s->fresh),
                          memory_order_relaxed);
}

/* Other threads see the input frontier once the updates below it are
 * written (their batches may still be committing). */
static void show_frontier(floe_sink *s, floe__frontier f)
{
    atomic_store_explicit(&s->live_frontier, f.t, memory_order_relaxed);
    atomic_store_explicit(&s->live_closed, f.empty, memory_order_relaxed);
}

static void note_frontier(floe_sink *s, floe__frontier f)
{
    s->input_frontier = f;
    show_frontier(s, f);
}

static void maintenance_stats(floe__maintainer *m, floe_sink_stats *out)
{
    floe__maintainer_stats ms;
    floe__maintainer_stats_get(m, &ms);
    out->maintenance_runs = ms.runs;
    out->maintenance_failures = ms.failures;
    out->maintenance_us = ms.busy_ns / 1000;
    out->compactions = ms.compactions;
    out->files_compacted = ms.files_compacted;
    out->deletes_carried = ms.deletes_carried;
    out->snapshots_expired = ms.snapshots_expired;
    out->files_removed = ms.files_removed;
    out->bytes_removed = ms.bytes_removed;
    out->orphans_removed = ms.orphans_removed;
}

void floe_sink_stats_get(const floe_sink *sink, floe_sink_stats *dst, size_t size)
{
    floe_sink *s = (floe_sink *)sink;     /* the lock and the atomics are all that is touched */
    floe_sink_stats st, *out = &st;
    pthread_mutex_lock(&s->lock);
    st = s->published;
    pthread_mutex_unlock(&s->lock);
    out->updates_in = atomic_load_explicit(&s->updates_in, memory_order_relaxed);
    out->bytes_in = atomic_load_explicit(&s->bytes_in, memory_order_relaxed);
    out->input_frontier = atomic_load_explicit(&s->live_frontier, memory_order_relaxed);
    out->input_frontier_empty = atomic_load_explicit(&s->live_closed, memory_order_relaxed);
    uint64_t oldest = atomic_load_explicit(&s->oldest_uncommitted_ns, memory_order_relaxed);
    uint64_t now = floe__monotonic_ns();
    out->freshness_seconds = oldest && now > oldest ? (double)(now - oldest) / 1e9 : 0.0;
    if (s->maintainer)
        maintenance_stats(s->maintainer, out);
    floe__abi_out(dst, size, &st, sizeof st);
}

int floe_sink_debt_get(const floe_sink *s, floe_table_debt *out, size_t size)
{
    if (!s->maintainer)
        return 0;
    floe__maintainer_stats ms;
    floe__maintainer_stats_get(s->maintainer, &ms);
    if (!ms.debt_known)
        return 0;
    floe__abi_out(out, size, &ms.debt, sizeof ms.debt);
    return 1;
}

/* ---- setup ------------------------------------------------------------------------------ */

static int split_ident(floe_sink *s, const char *ident, floe_error *err)
{
    const char *dot = ident ? strrchr(ident, '.') : NULL;
    FLOE_RETURN_IF(!dot || dot == ident || !dot[1], err, FLOE_EINVAL,
                   "--table must be NS.NAME, got '%s'", ident ? ident : "");
    s->ns = floe__strndup(ident, (size_t)(dot - ident));
    s->name = floe__strdup(dot + 1);
    return s->ns && s->name ? FLOE_OK : FLOE_OOM(err);
}

static bool equality_capable(const floe__field *f)
{
    return f->kind != FLOE_K_STRUCT && f->kind != FLOE_K_LIST && f->kind != FLOE_K_MAP &&
           f->kind != FLOE_K_FLOAT && f->kind != FLOE_K_DOUBLE;
}

static int key_column_error(const floe__field *f, bool synthetic, floe_error *err)
{
    char type[128];
    floe__type_name(f, false, type, sizeof type);
    return floe__err_set(err, FLOE_EINVAL,
                         "%s column \"%s\" (%s) cannot be compared in equality deletes (no "
                         "float, double, record, list or map)%s",
                         synthetic ? "upsert without --key keys by the whole row, but" : "key",
                         f->name, type, synthetic ? "; declare --key" : "");
}

static int find_column(const floe__schema *sch, const char *name, size_t len, size_t *idx)
{
    for (size_t i = 0; i < sch->root.n_children; i++) {
        const char *n = sch->root.children[i].name;
        if (strlen(n) == len && memcmp(n, name, len) == 0) {
            *idx = i;
            return FLOE_OK;
        }
    }
    return FLOE_ENOTFOUND;
}

/* One --key column (spaces around it ignored): its top-level index. */
static int add_key_column(floe_sink *s, char *tok, size_t cap, floe_error *err)
{
    while (*tok == ' ')
        tok++;
    size_t len = strlen(tok);
    while (len && tok[len - 1] == ' ')
        len--;
    size_t idx;
    if (find_column(s->input, tok, len, &idx) != FLOE_OK)
        return floe__err_set(err, FLOE_EINVAL, "--key column \"%.*s\" is not in the schema",
                             (int)len, tok);
    for (size_t k = 0; k < s->n_key; k++)
        if (s->key_cols[k] == idx)
            return floe__err_set(err, FLOE_EINVAL, "--key names \"%.*s\" twice", (int)len, tok);
    if (s->n_key == cap)
        return floe__err_set(err, FLOE_EINVAL, "--key names more columns than the schema has");
    s->key_cols[s->n_key++] = idx;
    if (idx + 1 > s->key_span)
        s->key_span = idx + 1;
    return FLOE_OK;
}

/* The key columns (declared, or all of them) and the equality-delete schema. */
int floe__sink_setup_key(floe_sink *s, const char *key_text, floe_error *err)
{
    const floe__schema *in = s->input;
    size_t cap = in->root.n_children;
    s->key_cols = floe__calloc(cap ? cap : 1, sizeof *s->key_cols);
    s->spans = floe__calloc(cap + 1, sizeof *s->spans);
    const char **names = floe__calloc(cap ? cap : 1, sizeof *names);
    char *copy = key_text ? floe__strdup(key_text) : NULL;
    int rc = (!s->key_cols || !s->spans || !names || (key_text && !copy)) ? FLOE_OOM(err)
                                                                          : FLOE_OK;
    char *save = NULL;
    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; rc == FLOE_OK && tok;
         tok = strtok_r(NULL, ",", &save))
        rc = add_key_column(s, tok, cap, err);
    s->synthetic = s->n_key == 0;
    for (size_t i = 0; rc == FLOE_OK && i < (s->synthetic ? cap : s->n_key); i++) {
        const floe__field *f = &in->root.children[s->synthetic ? i : s->key_cols[i]];
        if (!equality_capable(f))
            rc = key_column_error(f, s->synthetic, err);
        names[i] = f->name;
    }
    size_t n = s->synthetic ? cap : s->n_key;
    if (rc == FLOE_OK)
        rc = floe__schema_project(in, names, n, &s->eq_schema_owned, err);
    floe__buf kn;
    floe__buf_init(&kn, 1 << 20);
    for (size_t i = 0; rc == FLOE_OK && !s->synthetic && i < n; i++)
        rc = floe__buf_printf(&kn, err, "%s%s", i ? "," : "", names[i]);
    if (rc == FLOE_OK && !s->synthetic && !(s->key_names = floe__buf_strdup(&kn)))
        rc = FLOE_OOM(err);
    floe__buf_free(&kn);
    if (rc == FLOE_OK) {
        s->eq_schema = s->eq_schema_owned;
        s->n_eq = n;
        s->eq_ids = floe__calloc(n ? n : 1, sizeof *s->eq_ids);
        if (!s->eq_ids)
            rc = FLOE_OOM(err);
        for (size_t i = 0; rc == FLOE_OK && i < n; i++)
            s->eq_ids[i] = s->eq_schema->root.children[i].id;
    }
    floe__free(names);
    floe__free(copy);
    return rc;
}

/* The declared schema to create or check the table with (+ append extras). */
static int declared_schema(floe_sink *s, floe__schema **out, floe_error *err)
{
    *out = NULL;
    if (!s->opts.schema)
        return FLOE_OK;
    char *text = s->upsert ? floe__strdup(s->opts.schema)
                           : floe__sprintf("%s, _diff integer not null, _timestamp bigint not null",
                                           s->opts.schema);
    if (!text)
        return FLOE_OOM(err);
    int rc = floe_schema_parse(text, out, err);
    floe__free(text);
    return rc;
}

/* Append mode: the table ends with _diff int, _timestamp long; rows are
 * parsed with the columns before them. */
int floe__sink_append_input(floe_sink *s, floe_error *err)
{
    const floe__schema *t = s->data;
    size_t n = t->root.n_children;
    if (n < 3 || strcmp(t->root.children[n - 2].name, "_diff") != 0 ||
        strcmp(t->root.children[n - 1].name, "_timestamp") != 0 ||
        t->root.children[n - 2].kind != FLOE_K_INT || t->root.children[n - 1].kind != FLOE_K_LONG)
        return floe__err_set(err, FLOE_EINCOMPATIBLE,
                             "append mode needs a table whose last columns are _diff int and "
                             "_timestamp long; %s.%s has none", s->ns, s->name);
    const char **names = floe__calloc(n, sizeof *names);
    if (!names)
        return FLOE_OOM(err);
    for (size_t i = 0; i + 2 < n; i++)
        names[i] = t->root.children[i].name;
    int rc = floe__schema_project(t, names, n - 2, &s->input_owned, err);
    floe__free(names);
    s->input = s->input_owned;
    return rc;
}

static void on_warning(void *ctx, const char *msg)
{
    floe_sink *s = ctx;
    if (s->opts.on_warning)
        s->opts.on_warning(s->opts.warning_ctx, msg);
}

void floe__sink_notice(floe_sink *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    floe__vtell(s->opts.on_notice, s->opts.notice_ctx, fmt, ap);
    va_end(ap);
}

static void on_committed(void *ctx, floe__frontier upper, int64_t snapshot_id)
{
    floe_sink *s = ctx;
    s->last_snapshot = snapshot_id;
    floe__fresh_committed(&s->fresh, upper);
    atomic_store_explicit(&s->oldest_uncommitted_ns, floe__fresh_oldest_ns(&s->fresh),
                          memory_order_relaxed);
    floe__sink_publish(s);
    floe__maintainer_committed(s->maintainer, s->keeper ? snapshot_id : 0);
    if (s->opts.on_commit) {
        char f[32];
        floe__frontier_format(upper, f, sizeof f);
        s->opts.on_commit(s->opts.commit_ctx, f, snapshot_id);
    }
}

static int prepare_attempt(void *ctx, floe__sealed *sealed, uint64_t token,
                           floe__posdel_set **deletes, floe_error *err)
{
    floe_sink *s = ctx;
    return floe__keeper_prepare(s->keeper, sealed, s->writer, token, deletes, err);
}

static void rewrote_attempt(void *ctx, uint64_t token, const floe__cow *w)
{
    floe_sink *s = ctx;
    floe__keeper_rewrote(s->keeper, token, w);
}

/* --index-dir, or the state directory of the environment; NULL: none. */
static int resolve_index_dir(floe_sink *s, floe_error *err)
{
    const char *given = s->opts.index_dir, *env;
    if (given)
        s->index_dir = given[0] ? floe__strdup(given) : NULL;
    else if ((env = getenv("FLOE_STATE_DIR")) && env[0])
        s->index_dir = floe__strdup(env);
    else if ((env = getenv("XDG_STATE_HOME")) && env[0])
        s->index_dir = floe__path_join(env, "floe");
    else if ((env = getenv("HOME")) && env[0])
        s->index_dir = floe__path_join(env, ".local/state/floe");
    else
        return FLOE_OK;
    return s->index_dir || (given && !given[0]) ? FLOE_OK : FLOE_OOM(err);
}

static void report_index(floe_sink *s)
{
    floe__keeper_stats ks;
    floe__keeper_get_stats(s->keeper, &ks);
    double secs = (double)ks.start_ns / 1e9;
    char where[320];
    snprintf(where, sizeof where, "%s", s->index_dir ? s->index_dir : "memory only");
    if (ks.start == FLOE__KEEPER_LOADED)
        snprintf(s->index_report, sizeof s->index_report,
                 "key index loaded from %s: %" PRIu64 " keys, %" PRIu64 " logged commit(s) "
                 "replayed, %" PRIu64 " snapshot(s) of other writers read%s, in %.1fs (no "
                 "rebuild)", where, ks.kx.keys, ks.replayed, ks.synced,
                 ks.compared ? ", its snapshot compared with the current one" : "", secs);
    else if (ks.start == FLOE__KEEPER_REBUILT)
        snprintf(s->index_report, sizeof s->index_report,
                 "key index rebuilt from the table (%s): %" PRIu64 " keys from %" PRIu64
                 " data files in %.2fs", ks.why, ks.kx.keys, ks.built.files, secs);
    else
        snprintf(s->index_report, sizeof s->index_report,
                 "key index started empty (the table holds no rows), kept in %s", where);
}

/* Position mode: the key index of s->eq_schema, true to the table as
 * loaded (opened again after a schema change of the key columns). */
int floe__sink_open_keeper(floe_sink *s, floe_error *err)
{
    const floe_sink_options *o = &s->opts;
    floe__keeper_config *k = &s->kcfg;
    k->table = s->table;
    k->sink_id = s->sink_id;
    k->src.io = s->table->io;
    k->src.key_schema = s->eq_schema;
    k->src.whole_row = s->synthetic;
    k->src.hash_schema = s->data->schema_id;
    k->src.table_schema = s->data;
    k->kx.memory_limit = o->memory_limit ? o->memory_limit / 2 : 0;
    k->kx.spill_dir = o->spill_dir;
    k->dir = s->index_dir;
    k->warn = on_warning;
    k->warn_ctx = s;
    k->moves = s->moves;
    FLOE_FORWARD(floe__keeper_open(k, &s->keeper, err));
    report_index(s);
    return FLOE_OK;
}

static int setup_keeper(floe_sink *s, floe_error *err)
{
    const floe_sink_options *o = &s->opts;
    if (!s->upsert || o->delete_mode == FLOE_DELETE_EQUALITY || s->complete)
        return FLOE_OK;
    FLOE_FORWARD(resolve_index_dir(s, err));
    if (o->maintain != FLOE_MAINTAIN_OFF)
        FLOE_FORWARD(floe__moves_new(&s->moves, err));
    return floe__sink_open_keeper(s, err);
}

/* The table's write properties for files of `content`, under what the
 * options set explicitly (a codec, a level, a data file size). */
static int file_options(floe_sink *s, floe__content content, floe__file_writer_options *out,
                        floe_error *err)
{
    const floe_sink_options *o = &s->opts;
    FLOE_FORWARD(floe__table_file_options(s->table, content, out, err));
    if (o->compression != FLOE_COMPRESSION_DEFAULT) {
        out->parquet.compression = o->compression;
        out->parquet.compression_level = o->compression_level;
    } else if (o->compression_level) {
        out->parquet.compression_level = o->compression_level;
    }
    if (content == FLOE_CONTENT_DATA && o->target_file_size)
        out->target_file_size = o->target_file_size;
    /* a row group is buffered whole: at most an eighth of the memory */
    size_t most = o->memory_limit / 8 > ROW_GROUP_FLOOR ? o->memory_limit / 8 : ROW_GROUP_FLOOR;
    if (o->memory_limit && out->parquet.row_group_size > most)
        out->parquet.row_group_size = most;
    return FLOE_OK;
}

/* The committer's summary hook: the source's, when it set one. */
static int summary_hook(void *ctx, floe__frontier upper, const floe__metadata *base,
                        json_t *summary, floe_error *err)
{
    floe_sink *s = ctx;
    return s->summary_fn ? s->summary_fn(s->summary_ctx, upper, base, summary, err) : FLOE_OK;
}

static int setup_parts(floe_sink *s, floe_error *err)
{
    const floe_sink_options *o = &s->opts;
    s->wcfg.table = s->table;
    s->wcfg.upsert = s->upsert;
    s->wcfg.synthetic_key = s->synthetic;
    s->wcfg.data_schema = s->data;
    s->wcfg.schema_id = s->data->schema_id;
    s->wcfg.eq_schema = s->eq_schema;
    s->wcfg.eq_ids = s->eq_ids;
    s->wcfg.n_eq_ids = s->n_eq;
    FLOE_FORWARD(file_options(s, FLOE_CONTENT_DATA, &s->wcfg.file_opts, err));
    FLOE_FORWARD(file_options(s, FLOE_CONTENT_EQUALITY_DELETES, &s->wcfg.eqdel_opts, err));
    s->wcfg.warn = on_warning;
    s->wcfg.warn_ctx = s;
    s->ccfg.table = s->table;
    s->ccfg.sink_id = s->sink_id;
    s->ccfg.sink_version = s->version;
    s->ccfg.on_commit = on_committed;
    s->ccfg.on_commit_ctx = s;
    s->ccfg.has_base = s->resume.has;
    s->ccfg.base_frontier = s->resume.frontier;
    s->ccfg.base_snapshot = s->resume.snapshot_id;
    s->ccfg.warn = on_warning;
    s->ccfg.warn_ctx = s;
    s->ccfg.gate = &s->commit_gate;
    s->ccfg.conflict_patience_ms = o->commit_timeout_ms > 0 ? (unsigned)o->commit_timeout_ms : 0;
    s->ccfg.extra_props = s->props;
    s->ccfg.summary_hook = summary_hook;
    s->ccfg.summary_ctx = s;
    size_t stash_memory = o->memory_limit;
    const char *um = floe__metadata_property(s->table->loaded->metadata, "write.update.mode");
    if (s->upsert && !s->keeper && um && strcmp(um, "copy-on-write") == 0)
        on_warning(s, "the table's write.update.mode is copy-on-write, which needs the key index "
                      "of position mode: this sink writes equality deletes (merge-on-read)");
    const json_t *spec = floe__metadata_spec_by_id(s->table->loaded->metadata,
                                                   s->table->spec_id);
    if (s->upsert && !s->keeper && floe__table_partitioned(s->table) && spec) {
        bool scoped = floe__spec_covered_by(spec, s->wcfg.eq_ids, s->wcfg.n_eq_ids);
        floe__sink_notice(s, "%s.%s is partitioned by %s: its equality deletes are %s", s->ns,
                          s->name, scoped ? "key columns only" : "a column outside the key",
                          scoped ? "per partition (global while files of an older spec are "
                                   "live)"
                                 : "global (an unpartitioned spec's: readers check them "
                                   "against every data file)");
    }
    if (s->keeper) {
        s->wcfg.kx = floe__keeper_kx(s->keeper);
        /* a batch's index log past a sixteenth of the memory is dropped, the
         * index checkpointed after its commit instead (keyindex_internal.h) */
        s->wcfg.kx_log_max = (o->memory_limit ? o->memory_limit : (size_t)512 << 20) / 16;
        s->ccfg.prepare = prepare_attempt;
        s->ccfg.prepare_ctx = s;
        s->ccfg.rewrote = rewrote_attempt;
        s->ccfg.rewrote_ctx = s;
        stash_memory -= s->kcfg.kx.memory_limit;
    }
    size_t group = s->wcfg.file_opts.parquet.row_group_size;  /* buffered by the writer */
    /* rows held per partition until a batch is sealed: a quarter of the
     * memory, the partition holding the most written early past it
     * (part_writer.c; also for a spec the sink's own change brings) */
    size_t total = o->memory_limit ? o->memory_limit : (size_t)512 << 20;
    s->wcfg.data_memory = total / 4 > group ? total / 4 : group;
    size_t data_memory = floe__table_partitioned(s->table) ? s->wcfg.data_memory : group;
    if (o->memory_limit && stash_memory > 2 * data_memory)
        stash_memory -= data_memory;
    FLOE_FORWARD(floe__minter_new(s->as_of, o->commit_on_advance ? 1 : o->commit_interval,
                                  s->resume.has, s->resume.frontier, &s->minter, err));
    if (o->commit_on_advance)
        floe__minter_per_advance(s->minter);
    s->stash_memory = stash_memory;
    FLOE_FORWARD(floe__stash_new(o->spill_dir, stash_memory, &s->stash, err));
    FLOE_FORWARD(floe__writer_new(&s->wcfg, &s->writer, err));
    return floe__committer_new(&s->ccfg, &s->committer, err);
}

#define HOUR_NS ((uint64_t)3600 * 1000000000)
#define FINAL_MS 10000                  /* maintain_final_ms's default */

/* FLOE_MAINTAIN_AUTO: a thread of its own on a catalog connection of its
 * own, made from opts->connect (also when floe__sink_open_with gave the
 * sink a catalog: that one is the sink thread's). */
static int setup_maintainer(floe_sink *s, floe_error *err)
{
    const floe_sink_options *o = &s->opts;
    if (o->maintain == FLOE_MAINTAIN_OFF)
        return FLOE_OK;
    floe__maintainer_config mc = {.connect = *o->connect, .ns = s->ns, .name = s->name,
                                  .budget = o->maintain_budget, .orphan_age_ms = o->orphan_age_ms,
                                  .on_warning = on_warning, .warning_ctx = s,
                                  .moves = s->moves, .gate = &s->commit_gate};
    int64_t at = s->keeper ? floe__keeper_synced_to(s->keeper) : 0;
    mc.index_at = at > 0 ? at : 0;
    mc.connect.must_exist = 1;
    if (o->orphan_interval_ms >= 0) {
        mc.orphan_interval_ns = o->orphan_interval_ms ? (uint64_t)o->orphan_interval_ms * 1000000
                                                      : HOUR_NS;
        mc.orphan_first_ns = mc.orphan_interval_ns < 60 * 1000000000ull
                                 ? mc.orphan_interval_ns : 60 * 1000000000ull;
    }
    return floe__maintainer_start(&mc, &s->maintainer, err);
}

/* --resume-from: "[t]", "t" or "[]". */
static int parse_resume_from(const char *text, floe__frontier *out, floe_error *err)
{
    char buf[48];
    snprintf(buf, sizeof buf, text[0] == '[' ? "%s" : "[%s]", text);
    if (strlen(text) < 32 && floe__frontier_parse(buf, out, NULL) == FLOE_OK)
        return FLOE_OK;
    return floe__err_set(err, FLOE_EINVAL, "--resume-from '%.40s' is not a frontier ([t], t or "
                         "[])", text);
}

static int read_resume(floe_sink *s, floe_error *err)
{
    char table[512];
    snprintf(table, sizeof table, "%s.%s", s->ns, s->name);
    floe__resume_ask ask = {.table = table, .sink_id = s->sink_id, .version = s->version,
                            .new_sink = s->opts.new_sink != 0};
    if (s->opts.resume_from) {
        ask.has_resume_from = true;
        FLOE_FORWARD(parse_resume_from(s->opts.resume_from, &ask.resume_from, err));
    }
    FLOE_FORWARD(floe__resume_decide(&ask, s->table->loaded->metadata, s->table->io, &s->resume,
                                     err));
    if (!s->resume.has)
        return FLOE_OK;
    floe__frontier_format(s->resume.frontier, s->resume_text, sizeof s->resume_text);
    s->complete = s->resume.frontier.empty;
    return FLOE_OK;
}

void floe__sink_clear_key(floe_sink *s)
{
    floe_schema_free(s->eq_schema_owned);
    floe__free(s->eq_ids);
    floe__free(s->key_cols);
    floe__free((void *)s->spans);
    floe__free(s->key_names);
    s->key_names = NULL;
    s->eq_schema_owned = NULL;
    s->eq_schema = NULL;
    s->eq_ids = NULL;
    s->key_cols = NULL;
    s->spans = NULL;
    s->n_key = s->n_eq = s->key_span = 0;
}

/* Everything that can be checked without the table, checked before the
 * catalog or the table is touched, so a refused option leaves nothing
 * behind (the key against a declared schema, --resume-from). */
static int preflight(floe_sink *s, const floe__schema *declared, floe_error *err)
{
    const floe_sink_options *o = &s->opts;
    FLOE_FORWARD(split_ident(s, o->table, err));
    FLOE_RETURN_IF(o->commit_interval == 0 && !o->commit_on_advance, err, FLOE_EINVAL,
                   "the commit interval must be positive");
    FLOE_RETURN_IF(!s->upsert && o->key, err, FLOE_EINVAL, "--key needs upsert mode");
    FLOE_RETURN_IF(o->format_version && o->format_version != 2 && o->format_version != 3, err,
                   FLOE_EINVAL, "--format-version must be 2 or 3, not %d", o->format_version);
    FLOE_RETURN_IF(o->delete_mode != FLOE_DELETE_POSITION && o->delete_mode != FLOE_DELETE_EQUALITY,
                   err, FLOE_EINVAL, "unknown delete mode %d", (int)o->delete_mode);
    FLOE_RETURN_IF(o->commit_timeout_ms < 0 || o->commit_timeout_ms > UINT32_MAX, err,
                   FLOE_EINVAL, "the commit timeout must be between 0 and %u ms, not %lld",
                   UINT32_MAX, (long long)o->commit_timeout_ms);
    FLOE_RETURN_IF(s->upsert && !o->key && o->delete_mode == FLOE_DELETE_EQUALITY, err,
                   FLOE_EINVAL, "--delete-mode equality needs --key: without one the whole row "
                   "is the key and copies of a row are legal, but an equality delete removes "
                   "every copy (position mode deletes exactly as many as retracted)");
    floe__frontier f;
    if (o->resume_from)
        FLOE_FORWARD(parse_resume_from(o->resume_from, &f, err));
    if (!declared || !s->upsert)
        return FLOE_OK;
    s->input = declared;
    int rc = floe__sink_setup_key(s, s->opts.key, err);
    floe__sink_clear_key(s);
    s->input = NULL;
    return rc;
}

/* The properties of a table the sink creates: floe's defaults for a table
 * committed to every few seconds, then the caller's. */
static int create_properties(const floe_sink *s, json_t **out, floe_error *err)
{
    json_t *p = json_pack("{s:s, s:s}", "write.metadata.delete-after-commit.enabled", "true",
                          "history.expire.max-snapshot-age-ms", "3600000");
    const char *const *kv = s->opts.properties;
    for (; p && kv && kv[0]; kv += 2) {
        if (!kv[1]) {
            json_decref(p);
            return floe__err_set(err, FLOE_EINVAL, "table property %s has no value", kv[0]);
        }
        if (json_object_set_new(p, kv[0], json_string(kv[1])) != 0) {
            json_decref(p);
            p = NULL;
        }
    }
    /* the creation property table.c reads the spec from (never kept) */
    if (p && s->opts.partition_by &&
        json_object_set_new(p, "floe.partition-by", json_string(s->opts.partition_by)) != 0) {
        json_decref(p);
        p = NULL;
    }
    *out = p;
    return p ? FLOE_OK : FLOE_OOM(err);
}

static int open_table(floe_sink *s, const floe__schema *declared, floe_error *err)
{
    int v = s->opts.format_version;
    json_t *props = NULL;
    FLOE_FORWARD(create_properties(s, &props, err));
    int rc = floe__table_open_x(s->catalog, s->io, s->ns, s->name, declared, props, v, false,
                                &s->table, err);
    json_decref(props);
    if (rc == FLOE_ENOTFOUND && !declared)
        return floe__err_set(err, rc, "table %s.%s does not exist: pass --schema to create it",
                             s->ns, s->name);
    FLOE_FORWARD(rc);
    int has = floe__metadata_format_version(s->table->loaded->metadata);
    if (v && has != v)
        return floe__err_set(err, FLOE_EINVAL, "%s.%s exists at format version %d; "
                             "--format-version %d applies only to a table floe creates",
                             s->ns, s->name, has, v);
    return floe__table_check_format(s->table, err);
}

static int sink_setup(floe_sink *s, floe_error *err)
{
    const floe_sink_options *o = &s->opts;
    s->upsert = o->mode == FLOE_SINK_MODE_UPSERT || (o->mode == FLOE_SINK_MODE_AUTO && o->key);
    floe__schema *declared = NULL;
    int rc = declared_schema(s, &declared, err);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "--schema");
    rc = preflight(s, declared, err);
    s->sink_id = rc == FLOE_OK ? floe__strdup(o->sink_id ? o->sink_id : o->table) : NULL;
    if (rc == FLOE_OK && !s->sink_id)
        rc = FLOE_OOM(err);
    if (rc == FLOE_OK && s->own_catalog) {
        floe_connect_options co = *o->connect;
        co.must_exist = co.must_exist || !declared;    /* nothing to create without a schema */
        rc = floe__catalog_open(&co, &s->io, &s->catalog, err);
        if (rc == FLOE_ENOTFOUND)
            rc = floe__err_set(err, rc, "table %s.%s does not exist (there is no catalog "
                               "yet): pass --schema to create it", s->ns, s->name);
    }
    if (rc == FLOE_OK)
        rc = open_table(s, declared, err);
    if (rc == FLOE_OK)
        rc = read_resume(s, err);
    if (rc == FLOE_OK)
        rc = floe__sink_declare(s, declared, err);
    if (rc == FLOE_OK && o->partition_by && !s->table->created)
        rc = floe__sink_declare_spec(s, o->partition_by, err);
    floe_schema_free(declared);
    FLOE_FORWARD(rc);
    FLOE_FORWARD(setup_keeper(s, err));
    FLOE_FORWARD(setup_parts(s, err));
    FLOE_FORWARD(setup_maintainer(s, err));
    floe__sink_publish(s);
    return FLOE_OK;
}

int floe__sink_options_in(floe_sink_options *dst, floe_connect_options *connect,
                          const floe_sink_options *src, floe_error *err)
{
    FLOE_FORWARD(FLOE__OPTIONS_IN(floe_sink_options, dst, src, err));
    FLOE_FORWARD(FLOE__OPTIONS_IN(floe_connect_options, connect, dst->connect, err));
    dst->connect = connect;
    return FLOE_OK;
}

int floe_sink_open(const floe_sink_options *opts, floe_sink **out, floe_error *err)
{
    FLOE_RETURN_IF(!opts || !out, err, FLOE_EINVAL, "floe_sink_open: NULL argument");
    floe_sink_options o;
    floe_connect_options c;
    FLOE_FORWARD(floe__sink_options_in(&o, &c, opts, err));
    return floe__sink_open_with(&o, NULL, NULL, out, err);
}

/* Point every string of o (its connect options, as a copy of their own,
 * and properties too) at a copy in `a`, so the caller may free its own
 * after open. */
int floe__sink_options_own(floe_sink_options *o, floe__arena *a, floe_error *err)
{
    floe_connect_options *c = floe__arena_alloc(a, sizeof *c);
    if (!c)
        return FLOE_OOM(err);
    if (o->connect)
        *c = *o->connect;
    else
        floe_connect_options_init(c, sizeof *c);
    o->connect = c;
    const char **fields[] = {
        &o->table, &o->schema, &o->key, &o->sink_id, &o->spill_dir, &o->index_dir,
        &o->resume_from, &o->partition_by, &c->catalog, &c->catalog_name, &c->warehouse, &c->token,
        &c->credential, &c->oauth2_uri, &c->scope, &c->sigv4_region, &c->sigv4_service,
        &c->s3_endpoint, &c->s3_region, &c->s3_access_key_id, &c->s3_secret_access_key,
        &c->s3_session_token, &c->ca_file,
    };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        if (floe__arena_own_str(a, fields[i]) != 0)
            return FLOE_OOM(err);
    if (!o->properties)
        return FLOE_OK;
    size_t n = 0;
    while (o->properties[n])
        n++;
    const char **props = floe__arena_alloc(a, (n + 1) * sizeof *props);
    if (!props)
        return FLOE_OOM(err);
    for (size_t i = 0; i <= n; i++) {
        props[i] = o->properties[i];
        if (floe__arena_own_str(a, &props[i]) != 0)
            return FLOE_OOM(err);
    }
    o->properties = props;
    return FLOE_OK;
}

int floe__sink_open_with(const floe_sink_options *opts, floe__catalog *catalog,
                         floe__fileio *io, floe_sink **out, floe_error *err)
{
    FLOE_RETURN_IF(!opts || !out, err, FLOE_EINVAL, "floe_sink_open: NULL argument");
    FLOE_RETURN_IF(!catalog != !io, err, FLOE_EINVAL, "give both a catalog and a FileIO, or neither");
    floe_sink *s = floe__calloc(1, sizeof *s);
    if (!s)
        return FLOE_OOM(err);
    s->own_catalog = !catalog;
    s->catalog = catalog;
    s->io = io;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->commit_gate, NULL);
    s->opts = *opts;
    s->version = opts->sink_version ? opts->sink_version : 1;
    s->as_of = opts->as_of;
    note_frontier(s, floe__frontier_at(0));
    floe__fresh_init(&s->fresh);
    s->props = json_object();
    if (!s->props) {
        pthread_mutex_destroy(&s->lock);
        pthread_mutex_destroy(&s->commit_gate);
        floe__free(s);
        return FLOE_OOM(err);
    }
    floe__buf_init(&s->row, 0);
    floe__buf_init(&s->key, 0);
    s->strings = floe__arena_new(1024);
    int rc = s->strings ? floe__sink_options_own(&s->opts, s->strings, err) : FLOE_OOM(err);
    if (rc == FLOE_OK)
        rc = sink_setup(s, err);
    if (rc != FLOE_OK) {
        floe_sink_free(s);
        return rc;
    }
    *out = s;
    return FLOE_OK;
}

void floe_sink_free(floe_sink *s)
{
    if (!s)
        return;
    /* the run ends: what maintenance did not keep up with, compacted now */
    if (s->maintainer && s->advanced_ok && s->opts.maintain_final_ms >= 0)
        floe__maintainer_final(s->maintainer, (uint64_t)(s->opts.maintain_final_ms
                                                             ? s->opts.maintain_final_ms
                                                             : FINAL_MS) * 1000000u);
    floe__maintainer_stop(s->maintainer);
    floe__committer_free(s->committer);
    floe__writer_free(s->writer);
    floe__keeper_free(s->keeper);
    floe__moves_free(s->moves);
    floe__free(s->index_dir);
    floe__fresh_free(&s->fresh);
    floe__stash_free(s->stash);
    floe__minter_free(s->minter);
    floe__table_free(s->table);
    json_decref(s->props);
    if (s->own_catalog) {
        floe__catalog_free(s->catalog);
        floe__fileio_free(s->io);
    }
    floe_schema_free(s->input_owned);
    floe_schema_free(s->data);
    for (size_t i = 0; i < s->n_retired; i++)
        floe_schema_free(s->retired[i]);
    floe__free(s->retired);
    floe__free(s->refused);
    floe__free(s->truncations);
    json_decref(s->spec_change);
    floe__sink_clear_key(s);
    floe__buf_free(&s->row);
    floe__buf_free(&s->key);
    floe__free(s->ns);
    floe__free(s->name);
    floe__free(s->sink_id);
    floe__arena_free(s->strings);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->commit_gate);
    floe__free(s);
}

const char *floe_sink_resume_frontier(const floe_sink *s)
{
    return s->resume.has ? s->resume_text : NULL;
}

int floe__sink_format_version(const floe_sink *s)
{
    return floe__metadata_format_version(s->table->loaded->metadata);
}

const char *floe__sink_key_text(const floe_sink *s) { return s->key_names; }

const char *floe__sink_resume_property(const floe_sink *s, const char *key)
{
    if (!s->resume.has || s->resume.snapshot_id < 0)
        return NULL;
    const floe__snapshot *snap = floe__metadata_snapshot_by_id(s->table->loaded->metadata,
                                                                s->resume.snapshot_id);
    return snap ? floe__snapshot_summary_get(snap, key) : NULL;
}

void floe__sink_expect_absent_keys(floe_sink *s) { s->wcfg.absent_keys_expected = true; }

void floe__sink_maintain(floe_sink *s, bool on) { floe__maintainer_pause(s->maintainer, !on); }

int floe__sink_look(floe_sink *s, int (*fn)(void *ctx, const floe__metadata *md, floe_error *err),
                    void *ctx, floe_error *err)
{
    pthread_mutex_lock(&s->commit_gate);
    int rc = floe__table_refresh(s->table, err);
    if (rc == FLOE_OK)
        rc = fn(ctx, s->table->loaded->metadata, err);
    pthread_mutex_unlock(&s->commit_gate);
    return rc;
}

int floe_sink_complete(const floe_sink *s) { return s->complete; }

const char *floe_sink_index_report(const floe_sink *s)
{
    return s->keeper ? s->index_report : NULL;
}
const floe_schema *floe_sink_row_schema(const floe_sink *s) { return s->input; }

/* ---- input -------------------------------------------------------------------------------- */

/* The key bytes of a row: its key columns' slots, in key order. */
int floe__sink_key_bytes(const floe_sink *s, const uint8_t *row, size_t len,
                         const uint8_t **spans, floe__buf *key, floe_error *err)
{
    floe__buf_reset(key);
    if (!s->upsert || s->synthetic)
        return FLOE_OK;
    const floe__field *f = s->input->root.children;
    const uint8_t *p = row, *end = row + len;
    size_t n = s->key_span;                 /* walk only as far as the last key column */
    for (size_t i = 0; i < n; i++) {
        spans[i] = p;
        p = floe__datum_skip(&f[i], p, end);
        FLOE_RETURN_IF(!p, err, FLOE_EINVAL, "row is not of the sink's schema");
    }
    spans[n] = p;
    for (size_t k = 0; k < s->n_key; k++) {
        size_t c = s->key_cols[k];
        FLOE_FORWARD(floe__buf_append(key, spans[c], (size_t)(spans[c + 1] - spans[c]), err));
    }
    return FLOE_OK;
}

int floe__sink_extract_key(floe_sink *s, const uint8_t *row, size_t len, floe_error *err)
{
    return floe__sink_key_bytes(s, row, len, s->spans, &s->key, err);
}

/* Updates the sink must refuse, whatever their row. */
static int check_update(const floe_sink *s, uint64_t time, int64_t diff, floe_error *err)
{
    char f[32];
    FLOE_RETURN_IF(s->ended, err, FLOE_EINVAL, "the sink's input has ended (floe_sink_end)");
    if (s->complete)
        return floe__err_set(err, FLOE_ESTATE,
                             "%s.%s records frontier [] for sink '%s': its input was closed, "
                             "so it takes no more updates (use another --sink-id for a new "
                             "stream)", s->ns, s->name, s->sink_id);
    if (s->input_frontier.empty)
        return floe__err_set(err, FLOE_EINPUT, "an update after the input was closed");
    if (time < s->input_frontier.t) {
        floe__frontier_format(s->input_frontier, f, sizeof f);
        return floe__err_set(err, FLOE_EINPUT, "time %" PRIu64 " is behind the frontier %s",
                             time, f);
    }
    if (diff > FLOE_SINK_MAX_DIFF || diff < -FLOE_SINK_MAX_DIFF)
        return floe__err_set(err, FLOE_ELIMIT, "diff %" PRId64 " is beyond the largest "
                             "multiplicity of one update, %d", diff, FLOE_SINK_MAX_DIFF);
    return FLOE_OK;
}

/* One update into the stash.  key_only: a retraction by key (floe_sink_retract_key):
 * the key of `row` is stashed with an empty row, which the writer reads as
 * "whichever row the key has live" (an empty row is never a real one: every
 * row has a slot per column). */
static int push_bytes(floe_sink *s, const uint8_t *row, size_t len, uint64_t time, int64_t diff,
                      bool key_only, floe_error *err)
{
    FLOE_FORWARD(check_update(s, time, diff, err));
    s->touched = true;
    atomic_fetch_add_explicit(&s->updates_in, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->bytes_in, len, memory_order_relaxed);
    if (++s->since_publish >= PUBLISH_EVERY)
        floe__sink_publish(s);
    if (s->resume.has && time < s->resume.frontier.t)
        return FLOE_OK;                       /* committed before a restart */
    if (time < s->as_of)
        time = s->as_of;
    FLOE_FORWARD(floe__sink_reconcile(s, err));
    note_input(s, time);
    if (!s->has_newest || time > s->newest)
        s->newest = time;
    s->has_newest = true;
    FLOE_RETURN_IF(len > UINT32_MAX, err, FLOE_ELIMIT, "row of %zu bytes is too large", len);
    if (floe__partial_is(row, len)) {
        floe__partial p;
        FLOE_FORWARD(floe__partial_view(row, len, &p, err));
        FLOE_FORWARD(floe__sink_extract_key(s, p.row, p.len, err));
    } else {
        FLOE_FORWARD(floe__sink_extract_key(s, row, len, err));
    }
    if (key_only)
        len = 0;
    return floe__stash_push(s->stash, time, diff, s->key.data, (uint32_t)s->key.len, row,
                            (uint32_t)len, err);
}

int floe_sink_push(floe_sink *s, const floe_row *row, uint64_t time, int64_t diff,
                   floe_error *err)
{
    FLOE_RETURN_IF(row->schema != s->input, err, FLOE_EINVAL,
                   "the row is not of floe_sink_row_schema()");
    return push_bytes(s, row->data.data, row->data.len, time, diff, false, err);
}

int floe__sink_push_bytes(floe_sink *s, const uint8_t *row, size_t len, uint64_t time,
                          int64_t diff, floe_error *err)
{
    if (floe__partial_is(row, len)) {
        FLOE_RETURN_IF(!s->upsert || s->synthetic || s->opts.delete_mode == FLOE_DELETE_EQUALITY,
                       err, FLOE_EINVAL,
                       "a partial row needs upsert mode with declared key columns and "
                       "position deletes (or copy-on-write)");
        floe__partial p;
        FLOE_FORWARD(floe__partial_view(row, len, &p, err));
        FLOE_RETURN_IF(p.n != s->input->root.n_children, err, FLOE_EINVAL,
                       "a partial row of %u columns for a table of %u", (unsigned)p.n,
                       (unsigned)s->input->root.n_children);
        for (size_t k = 0; k < s->n_key; k++)
            FLOE_RETURN_IF(floe__partial_unchanged(&p, s->key_cols[k]), err, FLOE_EINVAL,
                           "a partial row leaves key column \"%s\" unchanged",
                           s->input->root.children[s->key_cols[k]].name);
    }
    return push_bytes(s, row, len, time, diff, false, err);
}

int floe_sink_retract_key(floe_sink *s, const floe_row *row, uint64_t time, floe_error *err)
{
    FLOE_RETURN_IF(row->schema != s->input, err, FLOE_EINVAL,
                   "the row is not of floe_sink_row_schema()");
    FLOE_RETURN_IF(!s->upsert || s->synthetic, err, FLOE_EINVAL,
                   "a retraction by key needs upsert mode with declared key columns");
    return push_bytes(s, row->data.data, row->data.len, time, -1, true, err);
}

int floe_sink_set_as_of(floe_sink *s, uint64_t as_of, floe_error *err)
{
    FLOE_RETURN_IF(s->resume.has || s->touched || s->ended, err, FLOE_ESTATE,
                   "the as-of time can only be set on a fresh sink before any input");
    FLOE_RETURN_IF(as_of == UINT64_MAX, err, FLOE_EINVAL, "as-of must be below 2^64-1");
    floe__minter *m = NULL;
    FLOE_FORWARD(floe__minter_new(as_of, s->opts.commit_on_advance ? 1 : s->opts.commit_interval,
                                  false, s->resume.frontier, &m, err));
    if (s->opts.commit_on_advance)
        floe__minter_per_advance(m);
    floe__minter_free(s->minter);
    s->minter = m;
    s->as_of = as_of;
    return FLOE_OK;
}

static bool reserved_property(const char *key)
{
    static const char *const own[] = {FLOE_PROP_FRONTIER, FLOE_PROP_SINK_ID,
                                      FLOE_PROP_SINK_VERSION, FLOE_PROP_ATTEMPT};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (strcmp(key, own[i]) == 0)
            return true;
    return strncmp(key, "floe.", 5) != 0 || !key[5];
}

int floe_sink_set_property(floe_sink *s, const char *key, const char *value, floe_error *err)
{
    FLOE_RETURN_IF(!key || !value || reserved_property(key), err, FLOE_EINVAL,
                   "summary property '%s' is not one a caller may set (a floe.* key other "
                   "than the sink's own)", key ? key : "(null)");
    json_t *v = json_string(value);
    if (!v)
        return floe__err_set(err, FLOE_EINVAL, "summary property '%s': the value is not UTF-8",
                             key);
    if (json_object_set_new(s->props, key, v) != 0)
        return FLOE_OOM(err);
    return FLOE_OK;
}

void floe__sink_summary_hook(floe_sink *s,
                             int (*fn)(void *ctx, floe__frontier upper,
                                       const floe__metadata *base, json_t *summary,
                                       floe_error *err),
                             void *ctx)
{
    s->summary_fn = fn;
    s->summary_ctx = ctx;
}


/* ---- the frontier --------------------------------------------------------------------------- */

/* The truncations batch b holds (several may fall into one batch, and
 * one pushed ahead of the frontier waits for a later batch): b starts from
 * nothing at the last of them. */
static void take_truncations(floe_sink *s, floe__batch *b)
{
    size_t n = 0;
    while (n < s->n_truncations && floe__frontier_passed(b->upper, s->truncations[n]))
        n++;
    if (!n)
        return;
    uint64_t last = s->truncations[n - 1];
    if (last >= b->lower.t) {              /* cut_at keeps earlier ones out of a batch */
        b->snapshot = b->replace = true;
        b->from = last;
    }
    memmove(s->truncations, s->truncations + n, (s->n_truncations - n) * sizeof *s->truncations);
    s->n_truncations -= n;
}

static int take_batches(floe_sink *s, floe_error *err)
{
    floe__batch b;
    while (floe__minter_next(s->minter, &b)) {
        if (s->replace_at && b.lower.t < s->replace_at)    /* a resync's: from nothing */
            b.snapshot = b.replace = true;
        take_truncations(s, &b);
        FLOE_FORWARD(floe__writer_add_batch(s->writer, &b, err));
        if (s->bulk)
            FLOE_FORWARD(floe__bulk_adopt(s->bulk, err));
    }
    return FLOE_OK;
}

static int write_closed(floe_sink *s, floe__frontier f, floe_error *err)
{
    FLOE_FORWARD(floe__stash_begin_close(s->stash, f, err));
    int rc = FLOE_OK;
    for (;;) {
        floe__upd u;
        bool got = false;
        rc = floe__stash_next(s->stash, &u, &got, err);
        if (rc != FLOE_OK || !got)
            break;
        rc = floe__writer_write(s->writer, &u, err);
        if (rc != FLOE_OK)
            break;
    }
    if (rc == FLOE_OK)          /* the writer may hold the stash's rows until then */
        rc = floe__writer_flush(s->writer, err);
    floe__stash_end_close(s->stash);
    return rc;
}

/* Commit one batch; the key index learns how it went.  A batch written
 * in a schema or partition spec the table does not have yet carries it (a
 * change of the sink, sink_evolve.c): its commit makes it the table's. */
static int commit_sealed(floe_sink *s, floe__sealed *sealed, floe_error *err)
{
    floe__committer_stats before, after;
    floe__committer_get_stats(s->committer, &before);
    if (!floe__schema_equal(s->data, s->table->schema)) {
        sealed->schema = s->data;
        sealed->last_column_id = s->data_last_column_id;
    }
    sealed->spec = s->spec_change;
    FLOE_FORWARD(floe__committer_commit(s->committer, sealed, err));
    if (s->spec_change && floe__table_default_spec_is(s->table, s->spec_change)) {
        s->wcfg.spec = NULL;               /* the table's now */
        json_decref(s->spec_change);
        s->spec_change = NULL;
    }
    if (sealed->schema && s->data->schema_id != s->table->schema_id) {
        s->data->schema_id = s->table->schema_id;      /* the id the catalog gave it */
        s->wcfg.schema_id = s->kcfg.src.hash_schema = s->data->schema_id;
    }
    if (sealed->desc.replace)
        s->replace_at = 0;
    if (!s->keeper)
        return FLOE_OK;
    if (sealed->desc.replace) {            /* the table is these rows now: read it again */
        FLOE_FORWARD(floe__keeper_rebuild(s->keeper, s->writer, err));
        s->wcfg.kx = floe__keeper_kx(s->keeper);
        return FLOE_OK;
    }
    floe__committer_get_stats(s->committer, &after);
    if (after.covered != before.covered)
        return floe__keeper_covered(s->keeper, sealed, s->writer, err);
    return floe__keeper_committed(s->keeper, sealed, s->last_snapshot, s->writer, err);
}

int floe__sink_seal_and_commit(floe_sink *s, floe__frontier f, floe_error *err)
{
    for (;;) {
        floe__sealed *sealed = NULL;
        uint64_t t0 = floe__monotonic_ns();
        FLOE_FORWARD(floe__writer_seal_next(s->writer, f, &sealed, err));
        if (!sealed)
            return FLOE_OK;
        s->close_ns_total += floe__monotonic_ns() - t0;
        s->batches_sealed++;
        int rc = commit_sealed(s, sealed, err);
        floe__sealed_free(sealed);
        FLOE_FORWARD(rc);
    }
}

int floe__sink_advance(floe_sink *s, floe__frontier f, floe_error *err)
{
    FLOE_RETURN_IF(s->ended, err, FLOE_EINVAL, "the sink's input has ended (floe_sink_end)");
    s->advanced_ok = false;
    if (floe__frontier_cmp(f, s->input_frontier) < 0) {
        char have[32], want[32];
        floe__frontier_format(s->input_frontier, have, sizeof have);
        floe__frontier_format(f, want, sizeof want);
        return floe__err_set(err, FLOE_EINPUT, "the frontier moved backwards, from %s to %s",
                             have, want);
    }
    uint64_t start = s->resume.has ? s->resume.frontier.t : s->as_of;
    if (f.empty || f.t > start)
        FLOE_FORWARD(floe__sink_reconcile(s, err));
    s->input_frontier = f;
    s->touched = true;
    if (!f.empty && f.t > 0)
        note_input(s, f.t - 1);
    int rc = FLOE_OK;
    if (!s->complete) {
        rc = floe__minter_advance(s->minter, f, err);
        if (rc == FLOE_OK)
            rc = take_batches(s, err);
        if (rc == FLOE_OK)
            rc = write_closed(s, f, err);
    }
    show_frontier(s, f);
    if (rc == FLOE_OK && !s->complete)
        rc = floe__sink_seal_and_commit(s, f, err);
    floe__sink_publish(s);
    s->advanced_ok = rc == FLOE_OK;
    return rc;
}

int floe_sink_advance(floe_sink *s, uint64_t time, floe_error *err)
{
    return floe__sink_advance(s, floe__frontier_at(time), err);
}

/* After the input ended: the key index is checkpointed, so the next run
 * starts from it without replaying the log. */
static int index_at_end(floe_sink *s, int rc, floe_error *err)
{
    if (rc != FLOE_OK || !s->keeper)
        return rc;
    return floe__keeper_checkpoint(s->keeper, s->writer, err);
}

int floe_sink_finish(floe_sink *s, floe_error *err)
{
    return index_at_end(s, floe__sink_advance(s, floe__frontier_closed(), err), err);
}

/* SPEC 5.7: the last batch ends just past the newest update, or at the
 * input frontier when that is later. */
static floe__frontier end_frontier(const floe_sink *s)
{
    floe__frontier f = s->input_frontier;
    if (s->has_newest && !f.empty && s->newest >= f.t && s->newest < UINT64_MAX)
        f = floe__frontier_at(s->newest + 1);
    else if (s->has_newest && !f.empty && s->newest == UINT64_MAX)
        f = floe__frontier_closed();        /* nothing lies past 2^64-1 */
    return f;
}

int floe_sink_end(floe_sink *s, floe_error *err)
{
    FLOE_RETURN_IF(s->ended, err, FLOE_EINVAL, "the sink's input has ended already");
    floe__frontier f = end_frontier(s);
    if (f.empty || s->complete)
        return index_at_end(s, floe__sink_advance(s, f, err), err);
    note_frontier(s, f);
    int rc = floe__minter_end(s->minter, f, err);
    if (rc == FLOE_OK)
        rc = take_batches(s, err);
    if (rc == FLOE_OK)
        rc = write_closed(s, f, err);
    if (rc == FLOE_OK)
        rc = floe__writer_truncate(s->writer, f, err);
    if (rc == FLOE_OK)
        rc = floe__sink_seal_and_commit(s, f, err);
    s->ended = true;
    rc = index_at_end(s, rc, err);
    floe__sink_publish(s);
    return rc;
}

/* {"time": T, "schema": "COLUMNS"[, "key": "a,b"]}: floe_sink_evolve. */
static int evolve_json(floe_sink *s, const floe__change *ch, floe_error *err)
{
    floe_schema *schema = NULL;
    int rc = floe_schema_parse((const char *)s->row.data + ch->schema_at, &schema, err);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "\"schema\"");
    const char *key = ch->key_at == SIZE_MAX ? NULL : (const char *)s->row.data + ch->key_at;
    rc = floe_sink_evolve(s, ch->time, schema, key, err);
    floe_schema_free(schema);
    return rc;
}

int floe__sink_parse_change(floe_sink *s, const char *line, size_t len, floe__change *ch,
                            floe_error *err)
{
    floe__buf_reset(&s->row);
    return floe__change_parse(s->input, line, len, ch, &s->row, err);
}

int floe__sink_apply_change(floe_sink *s, const floe__change *ch, floe_error *err)
{
    if (ch->kind == FLOE__CHANGE_PROGRESS)
        return ch->closed ? floe_sink_finish(s, err) : floe_sink_advance(s, ch->time, err);
    if (ch->kind == FLOE__CHANGE_SCHEMA)
        return evolve_json(s, ch, err);
    if (ch->kind == FLOE__CHANGE_TRUNCATE)
        return floe_sink_truncate(s, ch->time, err);
    if (ch->kind == FLOE__CHANGE_PARTITION) {
        int rc = floe_sink_repartition(s, ch->time, (const char *)s->row.data + ch->schema_at,
                                       err);
        return rc == FLOE_OK ? FLOE_OK : floe__err_wrap(err, rc, "\"partition-by\"");
    }
    return push_bytes(s, s->row.data, s->row.len, ch->time, ch->diff, false, err);
}

int floe_sink_push_json(floe_sink *s, const char *line, size_t len, floe_error *err)
{
    floe__change ch;
    FLOE_FORWARD(floe__sink_parse_change(s, line, len, &ch, err));
    return floe__sink_apply_change(s, &ch, err);
}
