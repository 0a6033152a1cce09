/*
 * sink_evolve.c - schema changes of a sink (floe_sink_evolve, and --schema
 * against an existing table; SPEC.md section 4): the table's schema
 * evolves at a time T of the input, so every snapshot holds the input as
 * of its frontier in the schema the input had then.
 *
 * A change at T past the sink's start (the first time not committed):
 *   1. plan it: the declaration matched against the schema the sink writes
 *      with (iceberg/schema_evolve.c); a refusal changes nothing;
 *   2. cut at T: the frontier moves to T (every batch below it is written
 *      and committed), the batch that holds T ends there and is committed,
 *      later (empty) batches go, and the minter starts again at T;
 *   3. switch: the updates held at T and later (in memory and spilled) are
 *      carried into the new shape (schema/convert.c); rows are read, keyed
 *      and written in the new schema from now on; the key index carries
 *      over, or is rebuilt from the table when the key columns or their
 *      types changed (its stored form is keyed by a fingerprint of them);
 *   4. the next commit (the batch [T, ...)) makes the new schema the
 *      table's current one in the same metadata update as its files
 *      (committer.c, table_commit.c), so the schema change and the first
 *      rows of the new shape land together.
 * A change at or below the start needs no cut (nothing after the start is
 * written yet): it is planned against the table's schema and switched to
 * at once.  Below a resuming sink's start the input is a replay of what is
 * committed, and a later line may undo what an earlier one declares: a
 * change Iceberg refuses there is kept (s->refused) and raised only at the
 * first update or frontier past the start.
 */
#include <inttypes.h>
#include <stdio.h>

#include "iceberg/partition_internal.h"
#include "sink/sink_state_internal.h"

/* ---- the declaration ------------------------------------------------------------------------ */

static int add_extra(floe__schema *s, const char *name, floe__kind kind, floe__decl decl,
                     floe_error *err)
{
    floe__field *root = &s->root;
    floe__field *v = floe__realloc(root->children, (root->n_children + 1) * sizeof *v);
    if (!v)
        return FLOE_OOM(err);
    root->children = v;
    v[root->n_children] = (floe__field){.name = floe__strdup(name), .kind = kind, .decl = decl,
                                        .required = true};
    if (!v[root->n_children].name)
        return FLOE_OOM(err);
    root->n_children++;
    return FLOE_OK;
}

/* The table's columns for a declaration of the input's: append mode's end
 * with _diff and _timestamp. */
static int table_declaration(const floe_sink *s, const floe__schema *user, floe__schema **out,
                             floe_error *err)
{
    FLOE_FORWARD(floe__schema_copy(user, out, err));
    int rc = FLOE_OK;
    if (!s->upsert) {
        rc = add_extra(*out, "_diff", FLOE_K_INT, FLOE_D_INTEGER, err);
        if (rc == FLOE_OK)
            rc = add_extra(*out, "_timestamp", FLOE_K_LONG, FLOE_D_BIGINT, err);
    }
    if (rc != FLOE_OK) {
        floe_schema_free(*out);
        *out = NULL;
    }
    return rc;
}

/* ---- switching ------------------------------------------------------------------------------- */

static int reserve_retired(floe_sink *s, size_t more, floe_error *err)
{
    floe__schema **v = floe__realloc(s->retired, (s->n_retired + more) * sizeof *v);
    if (!v)
        return FLOE_OOM(err);
    s->retired = v;
    return FLOE_OK;
}

/* "a,b": the names the key columns (of s->data) have in `data`, by field id. */
static int key_names(const floe_sink *s, const floe__schema *data, floe__buf *out,
                     floe_error *err)
{
    for (size_t k = 0; k < s->n_key; k++) {
        const floe__field *old = &s->data->root.children[s->key_cols[k]], *f = NULL;
        for (uint32_t i = 0; !f && i < data->root.n_children; i++)
            if (data->root.children[i].id == old->id)
                f = &data->root.children[i];
        if (!f)
            return floe__err_set(err, FLOE_EINCOMPATIBLE, "key column \"%s\" is dropped: name "
                                 "the key columns of the new schema", old->name);
        FLOE_FORWARD(floe__buf_printf(out, err, "%s%s", k ? "," : "", f->name));
    }
    return floe__buf_putc(out, 0, err);
}

typedef struct carrying {
    const floe__schema *from, *from_key;     /* the old input and key schemas */
    floe__stash *into;
    floe__buf row, key;
} carrying;

/* One held update into the new shape, and into the new stash. */
static int carry(floe_sink *s, carrying *c, const floe__upd *u, floe_error *err)
{
    floe__buf_reset(&c->row);
    if (u->row_len == 0) {                 /* a retraction by key: its key alone */
        floe__buf_reset(&c->key);
        if (!c->from_key || floe__schema_fingerprint(c->from_key) !=
                                floe__schema_fingerprint(s->eq_schema))
            return floe__err_set(err, FLOE_EINCOMPATIBLE, "the key columns change while a "
                                 "retraction by key at time %" PRIu64 " is held: it cannot "
                                 "name its row in the new key", u->time);
        FLOE_FORWARD(floe__datum_convert(c->from_key, s->eq_schema, u->key, u->key_len, &c->key,
                                         err));
        return floe__stash_push(c->into, u->time, u->diff, c->key.data, (uint32_t)c->key.len,
                                c->row.data, 0, err);
    }
    FLOE_FORWARD(floe__partial_convert(c->from, s->input, u->row, u->row_len, &c->row, err));
    FLOE_RETURN_IF(c->row.len > UINT32_MAX, err, FLOE_ELIMIT, "a row grew too large");
    floe__partial p = {.row = c->row.data, .len = c->row.len};
    if (floe__partial_is(c->row.data, c->row.len))        /* its key is whole */
        FLOE_FORWARD(floe__partial_view(c->row.data, c->row.len, &p, err));
    FLOE_FORWARD(floe__sink_extract_key(s, p.row, p.len, err));
    return floe__stash_push(c->into, u->time, u->diff, s->key.data, (uint32_t)s->key.len,
                            c->row.data, (uint32_t)c->row.len, err);
}

static uint64_t held(const floe_sink *s)
{
    floe__stash_stats st = {0};
    if (s->stash)
        floe__stash_get_stats(s->stash, &st);
    return st.rows;
}

/* The updates the stash holds (all at or after the change), carried from
 * the old input schema into the new one. */
static int carry_stash(floe_sink *s, const floe__schema *from, const floe__schema *from_key,
                       floe_error *err)
{
    if (held(s) == 0)
        return FLOE_OK;
    carrying c = {from, from_key, NULL, {0}, {0}};
    floe__buf_init(&c.row, 0);
    floe__buf_init(&c.key, 0);
    int rc = floe__stash_new(s->opts.spill_dir, s->stash_memory, &c.into, err);
    if (rc == FLOE_OK)
        rc = floe__stash_begin_close(s->stash, floe__frontier_closed(), err);
    for (bool got = true; rc == FLOE_OK && got;) {
        floe__upd u;
        rc = floe__stash_next(s->stash, &u, &got, err);
        if (rc == FLOE_OK && got)
            rc = carry(s, &c, &u, err);
    }
    floe__stash_end_close(s->stash);
    floe__buf_free(&c.row);
    floe__buf_free(&c.key);
    if (rc != FLOE_OK) {
        floe__stash_free(c.into);
        return floe__err_wrap(err, rc, "carrying the updates held across the schema change");
    }
    floe__stash_free(s->stash);
    s->stash = c.into;
    return FLOE_OK;
}

/* The key index after a switch: kept when the keys' bytes mean what they
 * did, else read again from the table (which holds everything before the
 * change and nothing after it). */
static int rekey_index(floe_sink *s, uint64_t old_fp, bool was_synthetic, floe_error *err)
{
    s->kcfg.src.key_schema = s->eq_schema;
    s->kcfg.src.whole_row = s->synthetic;
    s->kcfg.src.hash_schema = s->data->schema_id;
    s->kcfg.src.table_schema = s->data;
    if (!s->keeper ||
        (floe__schema_fingerprint(s->eq_schema) == old_fp && s->synthetic == was_synthetic))
        return FLOE_OK;
    floe__keeper_free(s->keeper);
    s->keeper = NULL;
    FLOE_FORWARD(floe__sink_open_keeper(s, err));
    s->wcfg.kx = floe__keeper_kx(s->keeper);
    floe__sink_notice(s, "%s.%s: the key columns changed shape: %s", s->ns, s->name,
                      s->index_report);
    return FLOE_OK;
}

/* From now on the sink reads, keys and writes rows of `data` (taken), an
 * evolution of its schema; `key` names new key columns (NULL: the same
 * ones, followed through renames). */
static int switch_to(floe_sink *s, floe__schema *data, int32_t last_column_id, const char *key,
                     floe_error *err)
{
    floe__buf names;
    floe__buf_init(&names, 1 << 16);
    int rc = reserve_retired(s, 2, err);
    if (rc == FLOE_OK)
        rc = floe__table_schema_id_for(s->table, data, &data->schema_id, err);
    if (rc == FLOE_OK && s->upsert && !key && !s->synthetic)
        rc = key_names(s, data, &names, err);
    if (rc != FLOE_OK) {
        floe__buf_free(&names);
        floe_schema_free(data);
        return rc;
    }
    const floe__schema *old_in = s->input;
    floe__schema *old_key = s->eq_schema_owned;
    uint64_t old_fp = old_key ? floe__schema_fingerprint(old_key) : 0;
    bool was_synthetic = s->synthetic;
    s->retired[s->n_retired++] = s->data;         /* callers' rows may point at them */
    if (s->input_owned)
        s->retired[s->n_retired++] = s->input_owned;
    s->data = data;
    s->data_last_column_id = last_column_id;
    s->input_owned = NULL;
    s->input = data;
    s->eq_schema_owned = NULL;
    floe__sink_clear_key(s);
    if (!s->upsert)
        rc = floe__sink_append_input(s, err);
    else
        rc = floe__sink_setup_key(s, key ? key : names.data ? (const char *)names.data : NULL,
                                  err);
    floe__buf_free(&names);
    if (rc == FLOE_OK)
        rc = carry_stash(s, old_in, old_key, err);
    floe_schema_free(old_key);
    s->wcfg.data_schema = s->data;
    s->wcfg.schema_id = s->data->schema_id;
    s->wcfg.eq_schema = s->eq_schema;
    s->wcfg.eq_ids = s->eq_ids;
    s->wcfg.n_eq_ids = s->n_eq;
    s->wcfg.synthetic_key = s->synthetic;
    if (rc == FLOE_OK && s->upsert)
        rc = rekey_index(s, old_fp, was_synthetic, err);
    return rc;
}

/* ---- planning --------------------------------------------------------------------------------- */

/* The evolution of `base` (last-column-id `last`) into the user's
 * declaration (replace: a table written again whole). */
static int plan_as(floe_sink *s, const floe__schema *base, int32_t last, const floe__schema *user,
                   bool replace, floe__evolution *evo, floe_error *err)
{
    floe__schema *decl;
    FLOE_FORWARD(table_declaration(s, user, &decl, err));
    int v = floe__metadata_format_version(s->table->loaded->metadata);
    int rc = replace ? floe__schema_replace(base, last, v, decl, evo, err)
                     : floe__schema_evolve(base, last, v, decl, evo, err);
    floe_schema_free(decl);
    return rc;
}

static int plan(floe_sink *s, const floe__schema *base, int32_t last, const floe__schema *user,
                floe__evolution *evo, floe_error *err)
{
    return plan_as(s, base, last, user, false, evo, err);
}

static void announce(floe_sink *s, const floe__evolution *evo, const char *when)
{
    if (evo->changed)
        floe__sink_notice(s, "%s.%s: schema change %s: %.*s (committed with the first snapshot "
                          "after it)", s->ns, s->name, when, (int)evo->summary.len,
                          (const char *)evo->summary.data);
}

/* Lines of the input are read by `user` until a later declaration below
 * the start is accepted (the sink's own schemas stay the table's). */
static int parse_as(floe_sink *s, const floe__schema *user, floe_error *err)
{
    FLOE_FORWARD(reserve_retired(s, 1, err));
    floe__schema *copy;
    FLOE_FORWARD(floe__schema_copy(user, &copy, err));
    s->retired[s->n_retired++] = copy;
    s->input = copy;
    return FLOE_OK;
}

/* A declaration below the start, planned against the table's schema: the
 * sink switches to it at once (nothing after the start is written yet). */
static int at_start(floe_sink *s, const floe__schema *user, const char *key, const char *when,
                    floe_error *err)
{
    floe__evolution evo;
    int32_t last = floe__metadata_last_column_id(s->table->loaded->metadata);
    floe_error *why = floe_error_new();
    if (!why)
        return FLOE_OOM(err);
    int rc = plan(s, s->table->schema, last, user, &evo, why);
    if (rc == FLOE_EINCOMPATIBLE && s->resume.has && held(s) == 0) {
        /* a replayed line: a later one may set it right */
        floe__free(s->refused);
        s->refused = floe__sprintf("%s: %s", when, floe_error_message(why));
        s->refused_code = rc;
        floe_error_free(why);
        return s->refused ? parse_as(s, user, err) : FLOE_OOM(err);
    }
    if (rc != FLOE_OK) {
        rc = floe__err_set(err, rc, "%s", floe_error_message(why));
        floe_error_free(why);
        return rc;
    }
    floe_error_free(why);
    floe__free(s->refused);
    s->refused = NULL;
    announce(s, &evo, when);
    floe__schema *data = evo.schema;
    evo.schema = NULL;
    last = evo.last_column_id;
    floe__evolution_clear(&evo);
    return switch_to(s, data, last, key, err);
}

int floe__sink_reconcile(floe_sink *s, floe_error *err)
{
    if (!s->refused)
        return FLOE_OK;
    return floe__err_set(err, s->refused_code, "%s", s->refused);
}

/* ---- at open ---------------------------------------------------------------------------------- */

int floe__sink_declare(floe_sink *s, const floe__schema *declared, floe_error *err)
{
    FLOE_FORWARD(floe__schema_copy(s->table->schema, &s->data, err));
    s->data_last_column_id = floe__metadata_last_column_id(s->table->loaded->metadata);
    s->input = s->data;
    if (!s->upsert)
        FLOE_FORWARD(floe__sink_append_input(s, err));
    else
        FLOE_FORWARD(floe__sink_setup_key(s, s->opts.key, err));
    if (!declared || s->table->created)
        return FLOE_OK;
    floe__schema *user = NULL;
    int rc;
    if (!s->upsert) {                      /* the declaration without the extras again */
        const char **names = floe__calloc(declared->root.n_children, sizeof *names);
        for (uint32_t i = 0; names && i + 2 < declared->root.n_children; i++)
            names[i] = declared->root.children[i].name;
        rc = names ? floe__schema_project(declared, names, declared->root.n_children - 2, &user,
                                          err) : FLOE_OOM(err);
        floe__free(names);
    } else {
        rc = floe__schema_copy(declared, &user, err);
    }
    if (rc == FLOE_OK)
        rc = at_start(s, user, s->opts.key, "declared by --schema", err);
    floe_schema_free(user);
    return rc == FLOE_OK ? FLOE_OK : floe__err_wrap(err, rc, "--schema");
}

/* ---- a change at a time ----------------------------------------------------------------------- */

/* Everything below t is committed and the minter starts again at t: the
 * batch holding t ends there. */
static int cut_at(floe_sink *s, uint64_t t, floe_error *err)
{
    floe__frontier f = floe__frontier_at(t);
    if (floe__frontier_cmp(f, s->input_frontier) > 0)
        FLOE_FORWARD(floe__sink_advance(s, f, err));
    FLOE_FORWARD(floe__writer_truncate(s->writer, f, err));
    FLOE_FORWARD(floe__sink_seal_and_commit(s, f, err));
    floe__minter *m = NULL;
    FLOE_FORWARD(floe__minter_new(s->as_of, s->opts.commit_on_advance ? 1 : s->opts.commit_interval,
                                  true, f, &m, err));
    if (s->opts.commit_on_advance)
        floe__minter_per_advance(m);
    floe__minter_free(s->minter);
    s->minter = m;
    return FLOE_OK;
}

/* A change of `what` at `time` is possible now. */
static int check_change(const floe_sink *s, uint64_t time, const char *what, floe_error *err)
{
    FLOE_RETURN_IF(s->ended, err, FLOE_EINVAL, "the sink's input has ended (floe_sink_end)");
    if (s->complete)
        return floe__err_set(err, FLOE_ESTATE, "%s.%s records frontier [] for sink '%s': its "
                             "input was closed, so its %s no longer changes", s->ns, s->name,
                             s->sink_id, what);
    FLOE_RETURN_IF(s->input_frontier.empty, err, FLOE_EINPUT, "a %s change after the input "
                   "was closed", what);
    if (time < s->input_frontier.t)
        return floe__err_set(err, FLOE_EINPUT, "a %s change at time %" PRIu64 " is behind "
                             "the frontier [%" PRIu64 "]", what, time, s->input_frontier.t);
    return FLOE_OK;
}

static int check_evolve(const floe_sink *s, uint64_t time, const floe_schema *schema,
                        const char *key, floe_error *err)
{
    FLOE_RETURN_IF(!schema, err, FLOE_EINVAL, "floe_sink_evolve: no schema");
    FLOE_RETURN_IF(key && !s->upsert, err, FLOE_EINVAL, "key columns need upsert mode");
    return check_change(s, time, "schema", err);
}

int floe_sink_evolve(floe_sink *s, uint64_t time, const floe_schema *schema, const char *key,
                     floe_error *err)
{
    FLOE_FORWARD(check_evolve(s, time, schema, key, err));
    uint64_t t = time < s->as_of ? s->as_of : time;
    uint64_t start = s->resume.has ? s->resume.frontier.t : s->as_of;
    char when[64];
    snprintf(when, sizeof when, "at time %" PRIu64, time);
    s->touched = true;
    if (t <= start)
        return at_start(s, schema, key, when, err);
    FLOE_FORWARD(floe__sink_reconcile(s, err));
    floe__evolution evo;
    FLOE_FORWARD(plan(s, s->data, s->data_last_column_id, schema, &evo, err));
    if (!evo.changed && (!key || (s->key_names && strcmp(key, s->key_names) == 0))) {
        floe__evolution_clear(&evo);               /* the schema it has: nothing to do */
        return FLOE_OK;
    }
    int rc = cut_at(s, t, err);
    if (rc == FLOE_OK)
        announce(s, &evo, when);
    floe__schema *data = evo.schema;
    evo.schema = NULL;
    int32_t last = evo.last_column_id;
    floe__evolution_clear(&evo);
    if (rc != FLOE_OK) {
        floe_schema_free(data);
        return rc;
    }
    rc = switch_to(s, data, last, key, err);
    floe__sink_publish(s);
    return rc;
}

/* ---- a partition spec change ---------------------------------------------------------------- */

/* Data files are written in `spec` (JSON, taken) from now on: a change the
 * next commit makes the table's, or none when it is the table's default. */
static void switch_spec(floe_sink *s, json_t *spec)
{
    json_decref(s->spec_change);
    s->spec_change = NULL;
    if (floe__table_default_spec_is(s->table, spec))
        json_decref(spec);
    else
        s->spec_change = spec;
    s->wcfg.spec = s->spec_change;
}

static int repartition(floe_sink *s, uint64_t time, const char *text, const char *when,
                       floe_error *err)
{
    floe__partition_spec *ps = NULL;
    json_t *spec = NULL;
    bool blank = text[strspn(text, " \t\r\n")] == '\0';
    int rc = blank ? FLOE_OK : floe__partition_spec_parse(text, s->data, 1000, &ps, err);
    if (rc == FLOE_OK && ps)
        rc = floe__partition_spec_to_json(ps, &spec, err);
    else if (rc == FLOE_OK && !(spec = json_pack("{s:[]}", "fields")))
        rc = FLOE_OOM(err);                 /* "": unpartitioned */
    floe__partition_spec_free(ps);
    FLOE_FORWARD(rc);
    bool same = s->spec_change ? floe__spec_same_fields(s->spec_change, spec)
                               : floe__table_default_spec_is(s->table, spec);
    if (same) {                             /* the spec it writes in: nothing to do */
        json_decref(spec);
        return FLOE_OK;
    }
    uint64_t t = time < s->as_of ? s->as_of : time;
    uint64_t start = s->resume.has ? s->resume.frontier.t : s->as_of;
    s->touched = true;
    if (t > start) {                        /* files below t keep the spec they have */
        rc = floe__sink_reconcile(s, err);
        if (rc == FLOE_OK)
            rc = cut_at(s, t, err);
        if (rc != FLOE_OK) {
            json_decref(spec);
            return rc;
        }
    }
    switch_spec(s, spec);
    if (s->spec_change)
        floe__sink_notice(s, "%s.%s: partition spec change %s: '%s' (committed with the first "
                          "snapshot after it)", s->ns, s->name, when, text);
    floe__sink_publish(s);
    return FLOE_OK;
}

int floe_sink_repartition(floe_sink *s, uint64_t time, const char *spec, floe_error *err)
{
    FLOE_RETURN_IF(!s || !spec, err, FLOE_EINVAL, "floe_sink_repartition: NULL argument");
    FLOE_FORWARD(check_change(s, time, "partition spec", err));
    char when[64];
    snprintf(when, sizeof when, "at time %" PRIu64, time);
    return repartition(s, time, spec, when, err);
}

bool floe__sink_spec_pending(const floe_sink *s)
{
    return s->spec_change != NULL;
}

int floe__sink_declare_spec(floe_sink *s, const char *text, floe_error *err)
{
    int rc = repartition(s, 0, text, "declared by --partition-by", err);
    return rc == FLOE_OK ? FLOE_OK : floe__err_wrap(err, rc, "--partition-by");
}

/* ---- a resync ------------------------------------------------------------------------------------ */

int floe__sink_replace(floe_sink *s, uint64_t at, const floe__schema *user, const char *key,
                       floe_error *err)
{
    uint64_t from = s->resume.has ? s->resume.frontier.t : 0;
    FLOE_RETURN_IF(s->touched || s->ended || s->complete || !s->resume.has || at == 0 ||
                   at - 1 < from, err, FLOE_ESTATE, "%s.%s: a resync at %" PRIu64 " needs a "
                   "sink that resumes below it and took nothing yet", s->ns, s->name, at);
    floe__evolution evo;
    int32_t last = floe__metadata_last_column_id(s->table->loaded->metadata);
    FLOE_FORWARD(plan_as(s, s->table->schema, last, user, true, &evo, err));
    char when[64];
    snprintf(when, sizeof when, "by a resync at %" PRIu64, at);
    announce(s, &evo, when);
    floe__schema *data = evo.schema;
    evo.schema = NULL;
    last = evo.last_column_id;
    floe__evolution_clear(&evo);
    FLOE_FORWARD(switch_to(s, data, last, key, err));
    s->replace_at = at;
    return FLOE_OK;
}

int floe__sink_resync(floe_sink *s, uint64_t at, const floe_schema *user, const char *key,
                      floe_error *err)
{
    return floe__sink_replace(s, at, user, key, err);
}

/* ---- a truncation --------------------------------------------------------------------------------- */

int floe_sink_truncate(floe_sink *s, uint64_t time, floe_error *err)
{
    FLOE_RETURN_IF(s->ended, err, FLOE_EINVAL, "the sink's input has ended (floe_sink_end)");
    if (s->complete)
        return floe__err_set(err, FLOE_ESTATE, "%s.%s records frontier [] for sink '%s': its "
                             "input was closed, so it is not truncated", s->ns, s->name,
                             s->sink_id);
    FLOE_RETURN_IF(s->input_frontier.empty, err, FLOE_EINPUT, "a truncation after the input "
                   "was closed");
    if (s->resume.has && time < s->resume.frontier.t)
        return FLOE_OK;                  /* a replay: the table holds it already */
    if (time < s->input_frontier.t)
        return floe__err_set(err, FLOE_EINPUT, "a truncation at time %" PRIu64 " is behind the "
                             "frontier [%" PRIu64 "]", time, s->input_frontier.t);
    if (!s->resume.has && s->as_of && time <= s->as_of)
        return floe__err_set(err, FLOE_EINPUT, "a truncation at time %" PRIu64 " is not past "
                             "the as-of time %" PRIu64 ", where earlier updates are gathered: "
                             "start the input at the truncation instead", time, s->as_of);
    FLOE_RETURN_IF(s->replace_at, err, FLOE_ESTATE, "%s.%s: a truncation during a resync",
                   s->ns, s->name);
    /* Committing on advance, the batch holding `time` is minted and
     * committed by one advance (no cut can shorten it after its rows below
     * `time` were dropped), so the truncation may land inside a batch: a
     * source's transaction stays whole.  It waits until that batch is
     * minted (take_truncations), which may be after the next advance: a
     * truncation may be pushed ahead of the frontier.  Otherwise batches
     * are minted ahead and may be cut: the frontier moves to `time`
     * (everything below it is committed, as for a schema change) and the
     * truncating batch begins there. */
    if (!s->opts.commit_on_advance || floe__writer_holds(s->writer, time))
        FLOE_FORWARD(cut_at(s, time, err));
    if (s->n_truncations && s->truncations[s->n_truncations - 1] == time) {
        s->touched = true;                 /* the same one again: nothing more to do */
        return FLOE_OK;
    }
    if (s->n_truncations == s->cap_truncations) {
        size_t cap = s->cap_truncations ? 2 * s->cap_truncations : 4;
        uint64_t *more = floe__realloc(s->truncations, cap * sizeof *more);
        if (!more)
            return FLOE_OOM(err);
        s->truncations = more;
        s->cap_truncations = cap;
    }
    s->truncations[s->n_truncations++] = time;    /* times only grow: the list stays sorted */
    s->touched = true;
    return FLOE_OK;
}
