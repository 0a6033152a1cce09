/*
 * commit.c - one snapshot adding a set of content files (SPEC.md section 7,
 * step 3): manifests, the manifest list, the summary, and the catalog
 * commit that swaps the table to it.
 *
 * How a commit is built (against t->loaded, the metadata the caller last
 * loaded):
 *   1. main must still be at the caller's base snapshot (else
 *      FLOE_ECONFLICT at once: the caller reloads and decides).
 *   2. A fresh positive snapshot id; sequence number = the table's
 *      last-sequence-number + 1.
 *   3. With position deletes or removals: the parent is planned and the
 *      deletes written for the table's format (commit_files.c).
 *   4. A data manifest for the data files and a delete manifest for the
 *      delete files (none for an empty commit), entries ADDED with
 *      inherited sequence numbers (the data sequence number explicit when
 *      the caller sets one); the parent's manifests holding removed files,
 *      rewritten.
 *   5. The manifest list: the new manifests first, then every other
 *      manifest of the parent snapshot exactly as the parent's list
 *      describes it; v3: first_row_id for data manifests without one.
 *   6. The summary: operation (the caller's, or append / delete /
 *      overwrite), the added-* and deleted-* / removed-* counts (when not
 *      zero, as Java's SnapshotSummary writes them), changed-partition-count,
 *      the total-* counts from the parent's summary plus what is added
 *      minus what is removed (a total the parent lacks is left out, as Java
 *      does), then the caller's properties.
 *   6. Requirements assert-table-uuid and assert-ref-snapshot-id(main, or
 *      the request's branch, = base, or absent), updates add-snapshot,
 *      set-snapshot-ref(main, or the branch: its head is the parent) and,
 *      when asked, set-snapshot-ref of a tag to the new snapshot (floe's
 *      progress tag: one atomic metadata update moves both).
 * Failure classes: FLOE_ECONFLICT (nothing changed: the manifests and list
 * are removed); FLOE_EUNKNOWN_OUTCOME (may have landed: everything is
 * kept, since the new metadata may reference it); any other failure the
 * catalog reports is checked by reloading the table: if main points at the
 * new snapshot after all, the commit succeeded; if the snapshot is absent,
 * the files are removed and the failure returned; if that cannot be told,
 * the result is FLOE_EUNKNOWN_OUTCOME and the files are kept (an orphan
 * file is harmless, a missing manifest is not).  Failures before the catalog call remove what was written.
 */
#include <stdio.h>

#include "table/commit_internal.h"

/* Summary keys floe computes; callers may not set them. */
static const char *const STANDARD_KEYS[] = {
    "operation", "added-data-files", "added-records", "added-files-size",
    "added-delete-files", "added-position-delete-files", "added-equality-delete-files",
    "added-position-deletes", "added-equality-deletes", "changed-partition-count",
    "total-records", "total-files-size", "total-data-files", "total-delete-files",
    "total-position-deletes", "total-equality-deletes", "added-dvs", "removed-dvs",
    "deleted-data-files", "deleted-records", "removed-files-size", "removed-delete-files",
    "removed-position-delete-files", "removed-equality-delete-files",
    "removed-position-deletes", "removed-equality-deletes",
};
#define N_STANDARD (sizeof STANDARD_KEYS / sizeof STANDARD_KEYS[0])

typedef floe__attempt attempt;
typedef floe__commit_counts counts;

static void attempt_cleanup(attempt *a, bool remove_files)
{
    if (remove_files) {
        for (size_t i = 0; i < a->n_new; i++)
            floe__fileio_remove(a->t->io, a->list.items[i].path, NULL);
        for (size_t i = 0; i < a->n_merged; i++)
            floe__fileio_remove(a->t->io, a->list.items[a->merged[i]].path, NULL);
        if (a->list_written)
            floe__fileio_remove(a->t->io, a->list_path, NULL);
        for (size_t i = 0; i < a->written.n; i++)    /* DVs share a file: removed again is fine */
            floe__fileio_remove(a->t->io, a->written.files[i].path, NULL);
    }
    floe__manifest_list_clear(&a->list);
    floe__content_list_clear(&a->written);
    floe__free(a->written_specs);
    floe__pathmap_clear(&a->added_data);
    floe__plan_free(a->plan);
    json_decref(a->new_schema);
    json_decref(a->new_spec);
    json_decref(a->eq_spec_new);
    floe__free(a->removed);
    floe__free(a->merged);
    floe__free(a->dir);
    floe__free(a->list_path);
    json_decref(a->summary);
}

/* ---- checks ------------------------------------------------------------------------ */

bool floe__summary_key_reserved(const char *key)
{
    for (size_t i = 0; i < N_STANDARD; i++)
        if (strcmp(key, STANDARD_KEYS[i]) == 0)
            return true;
    return false;
}

static int check_summary(const json_t *summary, floe_error *err)
{
    if (!summary)
        return FLOE_OK;
    FLOE_RETURN_IF(!json_is_object(summary), err, FLOE_EINVAL,
                   "commit summary properties must be a JSON object");
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)summary, key, v) {
        FLOE_RETURN_IF(!json_is_string(v), err, FLOE_EINVAL,
                       "commit summary property \"%s\" is not a string", key);
        FLOE_RETURN_IF(floe__summary_key_reserved(key), err, FLOE_EINVAL,
                       "commit summary property \"%s\" is computed by floe", key);
    }
    return FLOE_OK;
}

static int check_request(const attempt *a, floe_error *err)
{
    const floe__commit_request *req = a->req;
    static const char *const ops[] = {"append", "replace", "overwrite", "delete"};
    bool known = !req->operation;
    for (size_t i = 0; !known && i < 4; i++)
        known = strcmp(req->operation, ops[i]) == 0;
    FLOE_RETURN_IF(!known, err, FLOE_EINVAL, "commit: operation \"%s\" is not append, replace, "
                   "overwrite or delete", req->operation);
    FLOE_RETURN_IF(req->n_remove && !req->remove, err, FLOE_EINVAL, "commit: NULL remove list");
    for (size_t i = 0; i < req->n_files; i++) {
        const floe__content_file *f = &req->files[i];
        FLOE_RETURN_IF(!f->path, err, FLOE_EINVAL, "commit: file %zu has no path", i);
        FLOE_RETURN_IF(f->content > FLOE_CONTENT_EQUALITY_DELETES, err, FLOE_EINVAL,
                       "commit: file %s has unknown content %d", f->path, (int)f->content);
        FLOE_RETURN_IF(a->version >= 3 && f->content == FLOE_CONTENT_POSITION_DELETES &&
                       !floe__content_is_dv(f), err, FLOE_EINVAL, "commit: %s is a position "
                       "delete file; a v3 table takes position deletes as deletion vectors "
                       "(the request's deletes)", f->path);
    }
    return FLOE_OK;
}

/* ---- ids ------------------------------------------------------------------------------- */

static int new_snapshot_id(const floe__metadata *md, int64_t *out, floe_error *err)
{
    for (int tries = 0; tries < 16; tries++) {
        uint8_t u[16];
        FLOE_FORWARD(floe__uuid_random(u, err));
        uint64_t v = floe__get_le64(u) ^ floe__get_le64(u + 8);
        int64_t id = (int64_t)(v & (uint64_t)INT64_MAX);
        if (id > 0 && !floe__metadata_snapshot_by_id(md, id)) {
            *out = id;
            return FLOE_OK;
        }
    }
    return floe__err_set(err, FLOE_EINTERNAL, "could not pick an unused snapshot id");
}

/* ---- manifests ----------------------------------------------------------------------------- */

/* Whether the caller's file f is a global equality delete (attempt_eq_scope). */
static bool eq_global(const attempt *a, const floe__content_file *f)
{
    return a->eq_spec >= 0 && f->content == FLOE_CONTENT_EQUALITY_DELETES &&
           (a->eq_unscoped || f->partition.len == 0);
}

/* The spec id of the i-th file new_entries considers: the caller's are of
 * the table's spec (global equality deletes of an unpartitioned one), the
 * deletes this attempt wrote of their data file's. */
static int32_t new_spec(const attempt *a, size_t i)
{
    if (i >= a->req->n_files)
        return a->written_specs[i - a->req->n_files];
    return eq_global(a, &a->req->files[i]) ? a->eq_spec : a->spec_id;
}

/* Spec `id` as JSON: the request's new one, else the table's. */
static const json_t *spec_json(const attempt *a, int32_t id)
{
    if (a->new_spec && id == a->spec_id)
        return a->new_spec;
    if (a->eq_spec_new && id == a->eq_spec)
        return a->eq_spec_new;
    return floe__metadata_spec_by_id(a->md, id);
}

/* The ADDED entries of a new manifest of spec `spec_id`: the caller's
 * files of that kind, and (deletes) the ones this attempt wrote.  Shallow
 * copies. */
static int new_entries(attempt *a, bool deletes, int32_t spec_id, floe__manifest_entry **out,
                       size_t *n, floe_error *err)
{
    size_t cap = a->req->n_files + (deletes ? a->written.n : 0);
    *n = 0;
    *out = floe__calloc(cap ? cap : 1, sizeof **out);
    if (!*out)
        return FLOE_OOM(err);
    const floe__commit_request *r = a->req;
    for (size_t i = 0; i < r->n_files + (deletes ? a->written.n : 0); i++) {
        const floe__content_file *f = i < r->n_files ? &r->files[i]
                                                     : &a->written.files[i - r->n_files];
        if ((f->content != FLOE_CONTENT_DATA) != deletes || new_spec(a, i) != spec_id)
            continue;
        floe__manifest_entry *e = &(*out)[(*n)++];
        *e = (floe__manifest_entry){.status = 1, .has_snapshot_id = true,
                                    .snapshot_id = a->snapshot_id};
        e->file = *f;
        if (i < r->n_files && eq_global(a, f))
            floe__buf_init(&e->file.partition, 0);   /* the unpartitioned spec's: no tuple */
        e->file.has_first_row_id = false;       /* new data files inherit (v3) */
        if (!deletes && r->has_data_sequence_number) {
            e->has_sequence_number = true;
            e->sequence_number = r->data_sequence_number;
        }
    }
    return FLOE_OK;
}

/* The new manifest of `deletes` files of spec `spec_id` (the k-th of its kind). */
static int write_manifest_of(attempt *a, bool deletes, int32_t spec_id, size_t k,
                             floe_error *err)
{
    floe__manifest_entry *es;
    size_t n;
    FLOE_FORWARD(new_entries(a, deletes, spec_id, &es, &n, err));
    if (n == 0) {
        floe__free(es);
        return FLOE_OK;
    }
    floe__manifest_meta m = {
        .schema = a->schema_json,
        .spec = spec_json(a, spec_id),                             /* the files' spec */
        .deletes = deletes,
        .snapshot_id = a->snapshot_id,
        .sequence_number = a->seq,
    };
    if (!m.spec) {
        floe__free(es);
        return floe__err_set(err, FLOE_EFORMAT, "the table has no partition spec %d",
                             (int)spec_id);
    }
    char name[96];
    if (k == 0)
        snprintf(name, sizeof name, "%s-m%d.avro", a->uuid, deletes ? 1 : 0);
    else
        snprintf(name, sizeof name, "%s-m%d-%zu.avro", a->uuid, deletes ? 1 : 0, k);
    char *path = floe__path_join(a->dir, name);
    floe__manifest_file *e = path ? floe__manifest_list_push(&a->list) : NULL;
    int rc = e ? floe__manifest_write_entries(a->t->io, path, &m, a->version, es, n, e, err)
               : FLOE_OOM(err);
    floe__free(path);
    floe__free(es);
    if (rc != FLOE_OK) {
        if (e)
            a->list.n--;                 /* the pushed entry was left zeroed */
        return rc;
    }
    a->n_new++;
    return FLOE_OK;
}

/* The new manifests of one kind, one per spec their files are of (the
 * table's first, then global equality deletes'): a manifest describes
 * files of one spec. */
static int write_manifest(attempt *a, bool deletes, floe_error *err)
{
    FLOE_FORWARD(write_manifest_of(a, deletes, a->spec_id, 0, err));
    size_t k = 1;
    if (deletes && a->eq_spec >= 0 && a->eq_spec != a->spec_id)
        FLOE_FORWARD(write_manifest_of(a, deletes, a->eq_spec, k++, err));
    for (size_t i = a->req->n_files; deletes && i < a->req->n_files + a->written.n; i++) {
        int32_t spec = new_spec(a, i);
        bool seen = spec == a->spec_id || spec == a->eq_spec;
        for (size_t j = a->req->n_files; !seen && j < i; j++)
            seen = new_spec(a, j) == spec;
        if (!seen)
            FLOE_FORWARD(write_manifest_of(a, deletes, spec, k++, err));
    }
    return FLOE_OK;
}

/* A manifest whose entries are all DELETED (the files a removal of an
 * earlier snapshot took out) lists nothing live: the snapshot that removed
 * them keeps it, later ones drop it, as Java does. */
static bool only_deleted(const floe__manifest_file *m)
{
    return m->added_files == 0 && m->existing_files == 0 && m->deleted_files > 0;
}

/* Append the manifests snapshot s's list names to out. */
static int read_list(const attempt *a, const floe__snapshot *s, floe__manifest_list *out,
                     floe_error *err)
{
    floe__buf data;
    floe__buf_init(&data, FLOE_MANIFEST_MAX_BYTES);
    int rc = floe__fileio_read_all(a->t->io, s->manifest_list, &data, err);
    if (rc == FLOE_OK)
        rc = floe__manifest_list_parse(data.data, data.len, out, err);
    floe__buf_free(&data);
    return rc;
}

/* Append every manifest of the parent snapshot, as its list has them,
 * except those rewritten[i] replaced and those with nothing live. */
static int carry_parent(attempt *a, const bool *rewritten, floe_error *err)
{
    if (a->parent < 0)
        return FLOE_OK;
    const floe__snapshot *s = floe__metadata_snapshot_by_id(a->md, a->parent);
    FLOE_RETURN_IF(!s, err, FLOE_EFORMAT, "the current snapshot %lld is missing from the "
                   "table metadata", (long long)a->parent);
    FLOE_RETURN_IF(!s->manifest_list, err, FLOE_EUNSUPPORTED,
                   "snapshot %lld has no manifest list (a v1 snapshot with inline manifests)",
                   (long long)a->parent);
    size_t from = a->list.n;
    int rc = read_list(a, s, &a->list, err);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "carrying the manifests of snapshot %lld forward (%s)",
                              (long long)a->parent, s->manifest_list);
    size_t k = from;
    for (size_t i = from; i < a->list.n; i++) {
        if ((rewritten && rewritten[i - from]) || only_deleted(&a->list.items[i]))
            floe__manifest_file_clear(&a->list.items[i]);
        else
            a->list.items[k++] = a->list.items[i];
    }
    a->list.n = k;
    return FLOE_OK;
}

/* v3 row lineage: data manifests without a first_row_id get the next
 * ids, counting their added and existing rows (the spec's simple way). */
static int assign_row_ids(attempt *a, floe_error *err)
{
    if (a->version < 3)
        return FLOE_OK;
    int64_t next = floe__metadata_next_row_id(a->md);
    a->first_row_id = next;
    for (size_t i = 0; i < a->list.n; i++) {
        floe__manifest_file *m = &a->list.items[i];
        if (m->content != 0 || m->has_first_row_id)
            continue;
        int64_t rows = m->added_rows + m->existing_rows;
        FLOE_RETURN_IF(rows < 0 || rows > INT64_MAX - next, err, FLOE_ELIMIT,
                       "row ids would overflow");
        m->has_first_row_id = true;
        m->first_row_id = next;
        next += rows;
    }
    a->added_rows = next - a->first_row_id;
    return FLOE_OK;
}

static int write_list(attempt *a, floe_error *err)
{
    char name[96];
    snprintf(name, sizeof name, "snap-%lld-1-%s.avro", (long long)a->snapshot_id, a->uuid);
    a->list_path = floe__path_join(a->dir, name);
    if (!a->list_path)
        return FLOE_OOM(err);
    floe__list_meta lm = {a->snapshot_id, a->parent, a->seq, a->version, a->first_row_id};
    FLOE_FORWARD(floe__manifest_list_write_v(a->t->io, a->list_path, &a->list, &lm, NULL, err));
    a->list_written = true;
    return FLOE_OK;
}

/* ---- summary --------------------------------------------------------------------------------- */

static int put_str(json_t *o, const char *key, const char *v, floe_error *err)
{
    return json_object_set_new(o, key, json_string(v)) == 0 ? FLOE_OK : FLOE_OOM(err);
}

static int put_count(json_t *o, const char *key, uint64_t v, bool always, floe_error *err)
{
    if (!always && v == 0)
        return FLOE_OK;
    char s[24];
    snprintf(s, sizeof s, "%llu", (unsigned long long)v);
    return put_str(o, key, s, err);
}

/* A parent total as a non-negative integer; false when absent or not one. */
static bool parent_total(const floe__snapshot *p, const char *key, uint64_t *out)
{
    const char *s = p ? floe__snapshot_summary_get(p, key) : NULL;
    if (!p) {
        *out = 0;
        return true;
    }
    if (!s || !*s)
        return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return true;
}

/* A total: the parent's plus what is added minus what is removed (never
 * below zero); left out when the parent lacks it. */
static int put_total(json_t *o, const floe__snapshot *parent, const char *key, uint64_t added,
                     uint64_t removed, floe_error *err)
{
    uint64_t prev;
    if (!parent_total(parent, key, &prev))
        return FLOE_OK;
    uint64_t v = prev + added;
    return put_count(o, key, v > removed ? v - removed : 0, true, err);
}

/* As Java's AppendFiles / RowDelta / DeleteFiles / OverwriteFiles name
 * them, unless the caller chose one (a compaction's "replace"). */
static const char *operation(const attempt *a)
{
    if (a->req->operation)
        return a->req->operation;
    const counts *add = &a->added, *gone = &a->gone;
    if (add->delete_files == 0 && gone->data_files + gone->delete_files == 0)
        return "append";
    return add->data_files ? "overwrite" : "delete";
}

static int put_counts(json_t *o, const counts *c, bool added, floe_error *err)
{
    static const char *const keys[2][9] = {
        {"deleted-data-files", "deleted-records", "removed-files-size", "removed-delete-files",
         "removed-position-delete-files", "removed-dvs", "removed-equality-delete-files",
         "removed-position-deletes", "removed-equality-deletes"},
        {"added-data-files", "added-records", "added-files-size", "added-delete-files",
         "added-position-delete-files", "added-dvs", "added-equality-delete-files",
         "added-position-deletes", "added-equality-deletes"}};
    const uint64_t v[9] = {c->data_files, c->records, c->files_size, c->delete_files,
                           c->pos_files, c->dvs, c->eq_files, c->pos_deletes, c->eq_deletes};
    for (int i = 0; i < 9; i++)
        FLOE_FORWARD(put_count(o, keys[added][i], v[i], false, err));
    return FLOE_OK;
}

/* The distinct partition tuples of the files the commit adds (0 when
 * unpartitioned). */
static int count_partitions(const attempt *a, size_t *out, floe_error *err)
{
    floe__byteset *set;
    FLOE_FORWARD(floe__byteset_new(&set, err));
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < a->req->n_files; i++) {
        const floe__buf *t = &a->req->files[i].partition;
        if (t->len)
            rc = floe__byteset_add(set, t->data, t->len, err);
    }
    *out = floe__byteset_count(set);
    floe__byteset_free(set);
    return rc;
}

static int build_summary(attempt *a, floe_error *err)
{
    json_t *o = a->summary = json_object();
    if (!o)
        return FLOE_OOM(err);
    const floe__snapshot *p = a->parent < 0 ? NULL : floe__metadata_snapshot_by_id(a->md,
                                                                                a->parent);
    const counts *c = &a->added, *g = &a->gone;
    FLOE_FORWARD(put_str(o, "operation", operation(a), err));
    FLOE_FORWARD(put_counts(o, c, true, err));
    FLOE_FORWARD(put_counts(o, g, false, err));
    bool changed = c->data_files + c->delete_files + g->data_files + g->delete_files > 0;
    size_t parts = 0;
    FLOE_FORWARD(count_partitions(a, &parts, err));
    FLOE_FORWARD(put_count(o, "changed-partition-count", changed ? (parts ? parts : 1) : 0,
                           true, err));
    FLOE_FORWARD(put_total(o, p, "total-records", c->records, g->records, err));
    FLOE_FORWARD(put_total(o, p, "total-files-size", c->files_size, g->files_size, err));
    FLOE_FORWARD(put_total(o, p, "total-data-files", c->data_files, g->data_files, err));
    FLOE_FORWARD(put_total(o, p, "total-delete-files", c->delete_files, g->delete_files, err));
    FLOE_FORWARD(put_total(o, p, "total-position-deletes", c->pos_deletes, g->pos_deletes,
                           err));
    FLOE_FORWARD(put_total(o, p, "total-equality-deletes", c->eq_deletes, g->eq_deletes, err));
    if (a->req->summary && json_object_update(o, (json_t *)a->req->summary) != 0)
        return FLOE_OOM(err);
    return FLOE_OK;
}

/* ---- the catalog commit ---------------------------------------------------------------------- */

static int insert_at(json_t *arr, size_t at, json_t *v, floe_error *err)
{
    return v && json_array_insert_new(arr, at, v) == 0 ? FLOE_OK : FLOE_OOM(err);
}

/* The request's schema change: its updates before add-snapshot, so the
 * snapshot names a schema the metadata has, and the requirements that
 * nobody evolved the table meanwhile. */
static int schema_change(attempt *a, json_t *reqs, json_t *ups, floe_error *err)
{
    const floe__metadata *md = a->md;
    int32_t last = floe__metadata_last_column_id(md);
    if (a->req->last_column_id > last)
        last = a->req->last_column_id;
    FLOE_FORWARD(insert_at(ups, 0, json_pack("{s:s, s:O, s:i}", "action", "add-schema",
                                             "schema", a->new_schema, "last-column-id",
                                             (int)last), err));
    FLOE_FORWARD(insert_at(ups, 1, json_pack("{s:s, s:i}", "action", "set-current-schema",
                                             "schema-id", -1), err));
    const char *mapping = floe__metadata_property(md, "schema.name-mapping.default");
    char *updated = NULL;
    FLOE_FORWARD(floe__name_mapping_update(mapping, a->req->schema, &updated, err));
    if (updated) {
        int rc = insert_at(ups, 2, json_pack("{s:s, s:{s:s}}", "action", "set-properties",
                                             "updates", "schema.name-mapping.default", updated),
                           err);
        floe__free(updated);
        FLOE_FORWARD(rc);
    }
    FLOE_FORWARD(insert_at(reqs, json_array_size(reqs),
                           json_pack("{s:s, s:i}", "type", "assert-current-schema-id",
                                     "current-schema-id",
                                     (int)floe__metadata_current_schema_id(md)), err));
    return insert_at(reqs, json_array_size(reqs),
                     json_pack("{s:s, s:i}", "type", "assert-last-assigned-field-id",
                               "last-assigned-field-id",
                               (int)floe__metadata_last_column_id(md)), err);
}

/* The request's spec change before add-snapshot (a schema change's
 * updates go before it): add-spec and set-default-spec to it, or only the
 * latter for a spec the table has (a catalog does not add it again), and
 * the requirements that nobody changed the table's specs meanwhile. */
static int spec_change(attempt *a, json_t *reqs, json_t *ups, floe_error *err)
{
    size_t at = 0;
    if (a->new_spec && !a->spec_known)
        FLOE_FORWARD(insert_at(ups, at++, json_pack("{s:s, s:O}", "action", "add-spec", "spec",
                                                    a->new_spec), err));
    if (a->eq_spec_new)                 /* not the default: global equality deletes' */
        FLOE_FORWARD(insert_at(ups, at++, json_pack("{s:s, s:O}", "action", "add-spec", "spec",
                                                    a->eq_spec_new), err));
    if (a->new_spec)                    /* -1 is the last added: name it when that is not it */
        FLOE_FORWARD(insert_at(ups, at, json_pack("{s:s, s:i}", "action", "set-default-spec",
                                                  "spec-id", a->spec_known || a->eq_spec_new
                                                                 ? (int)a->spec_id : -1),
                               err));
    FLOE_FORWARD(insert_at(reqs, json_array_size(reqs),
                           json_pack("{s:s, s:i}", "type", "assert-default-spec-id",
                                     "default-spec-id",
                                     (int)floe__metadata_default_spec_id(a->md)), err));
    return insert_at(reqs, json_array_size(reqs),
                     json_pack("{s:s, s:i}", "type", "assert-last-assigned-partition-id",
                               "last-assigned-partition-id",
                               (int)floe__metadata_last_partition_id(a->md)), err);
}

static const char *ref_of(const attempt *a)
{
    return a->req->branch ? a->req->branch : "main";
}

static int build_change(attempt *a, json_t **reqs, json_t **ups, floe_error *err)
{
    int64_t now = floe__now_ms(), last = floe__metadata_last_updated_ms(a->md);
    json_t *snap = json_pack("{s:I, s:I, s:I, s:s, s:O, s:i}", "snapshot-id",
                             (json_int_t)a->snapshot_id, "sequence-number", (json_int_t)a->seq,
                             "timestamp-ms", (json_int_t)(now > last ? now : last),
                             "manifest-list", a->list_path, "summary", a->summary,
                             "schema-id", (int)a->schema_id);
    if (snap && a->version >= 3 &&
        (json_object_set_new(snap, "first-row-id", json_integer(a->first_row_id)) != 0 ||
         json_object_set_new(snap, "added-rows", json_integer(a->added_rows)) != 0)) {
        json_decref(snap);
        snap = NULL;
    }
    if (snap && a->parent >= 0 &&
        json_object_set_new(snap, "parent-snapshot-id", json_integer(a->parent)) != 0) {
        json_decref(snap);
        snap = NULL;
    }
    if (!snap)
        return FLOE_OOM(err);
    *ups = json_pack("[{s:s, s:o}, {s:s, s:s, s:s, s:I}]", "action", "add-snapshot", "snapshot",
                     snap, "action", "set-snapshot-ref", "ref-name", ref_of(a), "type", "branch",
                     "snapshot-id", (json_int_t)a->snapshot_id);
    if (*ups && a->req->tag &&
        json_array_append_new(*ups, json_pack("{s:s, s:s, s:s, s:I}", "action",
                                              "set-snapshot-ref", "ref-name", a->req->tag,
                                              "type", "tag", "snapshot-id",
                                              (json_int_t)a->snapshot_id)) != 0) {
        json_decref(*ups);
        *ups = NULL;
    }
    const char *uuid = floe__metadata_table_uuid(a->md);
    *reqs = json_pack("[{s:s, s:s}, {s:s, s:s, s:o}]", "type", "assert-table-uuid", "uuid",
                      uuid ? uuid : "", "type", "assert-ref-snapshot-id", "ref", ref_of(a),
                      "snapshot-id", a->parent < 0 ? json_null() : json_integer(a->parent));
    int rc = *ups && *reqs ? FLOE_OK : FLOE_OOM(err);
    if (rc == FLOE_OK && (a->req->spec || a->eq_spec_new))
        rc = spec_change(a, *reqs, *ups, err);
    if (rc == FLOE_OK && a->req->schema)
        rc = schema_change(a, *reqs, *ups, err);
    if (rc != FLOE_OK) {
        json_decref(*ups);
        json_decref(*reqs);
        *ups = *reqs = NULL;
    }
    return rc;
}

/* A failure the catalog reports as such (not a conflict, not an unknown
 * outcome) may still have happened after the swap (e.g. out of memory
 * while building the result).  Reload and look: 1 when main points at our
 * snapshot (*next is the loaded table), 0 when the snapshot is absent (it
 * did not land), -1 when that cannot be told (the reload failed, or the
 * snapshot exists but main moved on). */
static int check_landed(floe__table *t, const char *ref, int64_t id, floe__loaded_table **next)
{
    floe__loaded_table *l = NULL;
    if (floe__catalog_load_table(t->catalog, t->ns, t->name, &l, NULL) != FLOE_OK)
        return -1;
    int64_t head = -1;
    if (floe__metadata_ref(l->metadata, ref, &head, NULL) && head == id) {
        *next = l;
        return 1;
    }
    bool known = floe__metadata_snapshot_by_id(l->metadata, id) != NULL;
    floe__loaded_table_free(l);
    return known ? -1 : 0;
}

/* The schema the snapshot and its manifests name: the request's new one
 * (with the id the table gives it), else the table's current one, as Java
 * records it (files of an older schema read in it by field id). */
static int attempt_schema(attempt *a, floe_error *err)
{
    const floe__commit_request *r = a->req;
    if (!r->schema) {
        a->schema_id = floe__metadata_current_schema_id(a->md);
        a->schema_json = floe__metadata_current_schema(a->md);
        return FLOE_OK;
    }
    FLOE_FORWARD(floe__schema_to_jansson(r->schema, &a->new_schema, err));
    a->schema_id = floe__metadata_schema_id_for(a->md, a->new_schema);
    if (json_object_set_new(a->new_schema, "schema-id", json_integer(a->schema_id)) != 0)
        return FLOE_OOM(err);
    a->schema_json = a->new_schema;
    return FLOE_OK;
}

/* The field id some spec of the table gives (source, transform), or -1. */
static int32_t known_field_id(const floe__metadata *md, json_int_t source, const char *transform)
{
    const json_t *spec, *f;
    size_t i, k;
    json_array_foreach(floe__metadata_specs(md), i, spec)
        json_array_foreach(json_object_get(spec, "fields"), k, f)
            if (json_integer_value(json_object_get(f, "source-id")) == source &&
                json_is_string(json_object_get(f, "transform")) &&
                strcmp(json_string_value(json_object_get(f, "transform")), transform) == 0)
                return (int32_t)json_integer_value(json_object_get(f, "field-id"));
    return -1;
}

/* Whether specs a and b have the same fields (ids, names, sources, transforms). */
static bool same_spec(const json_t *a, const json_t *b)
{
    return json_equal(json_object_get(a, "fields"), json_object_get(b, "fields"));
}

/* The spec the request's files are written in: the request's new one
 * (field and spec ids as the table gives them), else the table's. */
static int attempt_spec(attempt *a, floe_error *err)
{
    a->spec_id = a->t->spec_id;
    if (!a->req->spec)
        return FLOE_OK;
    const floe__metadata *md = a->md;
    int32_t last = floe__metadata_last_partition_id(md);
    if (last < 999)
        last = 999;
    json_t *fields = json_array();
    const json_t *f;
    size_t i;
    json_array_foreach(json_object_get(a->req->spec, "fields"), i, f) {
        json_int_t src = json_integer_value(json_object_get(f, "source-id"));
        const char *tr = json_string_value(json_object_get(f, "transform"));
        const char *name = json_string_value(json_object_get(f, "name"));
        FLOE_RETURN_IF(!tr || !name, err, FLOE_EINVAL, "commit: partition field %zu has no "
                       "transform or name", i);
        int32_t id = known_field_id(md, src, tr);
        if (id < 0)
            id = ++last;
        if (!fields || json_array_append_new(fields, json_pack("{s:I, s:i, s:s, s:s}",
                                                               "source-id", src, "field-id",
                                                               (int)id, "name", name,
                                                               "transform", tr)) != 0) {
            json_decref(fields);
            return FLOE_OOM(err);
        }
    }
    a->new_spec = json_pack("{s:i, s:o}", "spec-id", 0, "fields", fields);
    if (!a->new_spec)
        return FLOE_OOM(err);
    int32_t id = -1, max = -1;
    const json_t *spec;
    json_array_foreach(floe__metadata_specs(md), i, spec) {
        int32_t sid = (int32_t)json_integer_value(json_object_get(spec, "spec-id"));
        if (sid > max)
            max = sid;
        if (id < 0 && same_spec(spec, a->new_spec))
            id = sid;
    }
    a->spec_known = id >= 0;
    a->spec_id = id >= 0 ? id : max + 1;
    return json_object_set_new(a->new_spec, "spec-id", json_integer(a->spec_id)) == 0
               ? FLOE_OK : FLOE_OOM(err);
}

/* Whether the parent snapshot has live data files of a spec other than
 * the request's. */
static int other_specs_live(attempt *a, bool *out, floe_error *err)
{
    *out = false;
    const floe__snapshot *s = a->parent < 0 ? NULL : floe__metadata_snapshot_by_id(a->md,
                                                                                   a->parent);
    if (!s || !s->manifest_list)
        return FLOE_OK;                /* carry_parent says what is wrong with it */
    floe__manifest_list l = {0};
    int rc = read_list(a, s, &l, err);
    for (size_t i = 0; rc == FLOE_OK && i < l.n; i++) {
        const floe__manifest_file *m = &l.items[i];
        if (m->content == 0 && m->added_files + m->existing_files > 0 && m->spec_id != a->spec_id)
            *out = true;
    }
    floe__manifest_list_clear(&l);
    return rc;
}

/* Equality deletes on a partitioned spec.  A file holding one partition's
 * keys (a tuple) applies to that partition's data files of the same spec
 * only, which finds every row of its keys when the spec's source columns
 * are key columns (part_writer.c writes tuples only then) and every live
 * data file is of that spec.  Otherwise (a file without a tuple, or a
 * parent with live data files of another spec, after an evolution) the
 * delete is global: it goes in an unpartitioned spec, which applies to
 * every data file, the table's or one this commit adds (next free id,
 * after the request's new spec, as a catalog numbers them). */
static int attempt_eq_scope(attempt *a, floe_error *err)
{
    a->eq_spec = -1;
    bool any = false, tuples = false, bare = false;
    for (size_t i = 0; i < a->req->n_files; i++) {
        const floe__content_file *f = &a->req->files[i];
        if (f->content != FLOE_CONTENT_EQUALITY_DELETES)
            continue;
        any = true;
        tuples |= f->partition.len > 0;
        bare |= f->partition.len == 0;
    }
    if (!any || json_array_size(json_object_get(spec_json(a, a->spec_id), "fields")) == 0)
        return FLOE_OK;
    if (tuples)
        FLOE_FORWARD(other_specs_live(a, &a->eq_unscoped, err));
    if (!bare && !a->eq_unscoped)
        return FLOE_OK;
    int32_t max = a->new_spec && !a->spec_known ? a->spec_id : -1;
    const json_t *spec;
    size_t i;
    json_array_foreach(floe__metadata_specs(a->md), i, spec) {
        int32_t sid = (int32_t)json_integer_value(json_object_get(spec, "spec-id"));
        if (json_array_size(json_object_get(spec, "fields")) == 0) {
            a->eq_spec = sid;
            return FLOE_OK;
        }
        max = sid > max ? sid : max;
    }
    a->eq_spec = max + 1;
    a->eq_spec_new = json_pack("{s:i, s:[]}", "spec-id", (int)a->eq_spec, "fields");
    return a->eq_spec_new ? FLOE_OK : FLOE_OOM(err);
}

/* Build and write everything up to the catalog call. */
static int prepare(attempt *a, floe_error *err)
{
    FLOE_FORWARD(check_request(a, err));
    FLOE_FORWARD(attempt_schema(a, err));
    FLOE_FORWARD(attempt_spec(a, err));
    FLOE_FORWARD(attempt_eq_scope(a, err));
    for (size_t i = 0; i < a->req->n_files; i++)
        floe__commit_count(&a->added, &a->req->files[i]);
    FLOE_FORWARD(new_snapshot_id(a->md, &a->snapshot_id, err));
    a->seq = floe__metadata_last_sequence_number(a->md) + 1;
    const floe__commit_request *r = a->req;
    FLOE_RETURN_IF(r->has_data_sequence_number && (r->data_sequence_number < 0 ||
                   r->data_sequence_number > a->seq), err, FLOE_EINVAL, "commit: data sequence "
                   "number %lld is not in [0, %lld]", (long long)r->data_sequence_number,
                   (long long)a->seq);
    uint8_t u[16];
    FLOE_FORWARD(floe__uuid_random(u, err));
    floe__uuid_format(u, a->uuid);
    FLOE_FORWARD(floe__metadata_metadata_location_dir(a->md, &a->dir, err));
    if (r->n_remove || floe__posdel_set_files(r->deletes))
        FLOE_FORWARD(floe__attempt_files(a, err));
    FLOE_FORWARD(write_manifest(a, false, err));
    FLOE_FORWARD(write_manifest(a, true, err));
    bool *rewritten = NULL;
    int rc = floe__attempt_rewrite(a, &rewritten, err);
    if (rc == FLOE_OK)
        rc = carry_parent(a, rewritten, err);
    floe__free(rewritten);
    FLOE_FORWARD(rc);
    FLOE_FORWARD(floe__attempt_merge(a, err));
    FLOE_FORWARD(assign_row_ids(a, err));
    FLOE_FORWARD(write_list(a, err));
    return build_summary(a, err);
}

int floe__table_commit(floe__table *t, const floe__commit_request *req, int64_t *snapshot_id,
                       floe_error *err)
{
    FLOE_RETURN_IF(!t || !req || (req->n_files && !req->files), err, FLOE_EINVAL,
                   "commit: NULL argument");
    FLOE_FORWARD(floe__table_check_format(t, err));
    FLOE_FORWARD(check_summary(req->summary, err));
    attempt a = {.t = t, .req = req, .md = t->loaded->metadata};
    a.version = floe__metadata_format_version(a.md);
    a.parent = -1;
    if (!floe__metadata_ref(a.md, ref_of(&a), &a.parent, NULL))
        a.parent = -1;
    int64_t base = req->base_snapshot_id < 0 ? -1 : req->base_snapshot_id;
    FLOE_RETURN_IF(a.parent != base, err, FLOE_ECONFLICT,
                   "table %s.%s: %s is at snapshot %lld, the commit expects %lld (reload "
                   "the table)", t->ns, t->name, ref_of(&a), (long long)a.parent,
                   (long long)base);
    int rc = prepare(&a, err);
    if (rc == FLOE_OK)                  /* data files and manifests durable before the commit */
        rc = floe__fileio_sync(t->io, err);
    if (rc != FLOE_OK) {
        attempt_cleanup(&a, true);
        return floe__err_wrap(err, rc, "committing to %s.%s", t->ns, t->name);
    }
    json_t *reqs = NULL, *ups = NULL;
    rc = build_change(&a, &reqs, &ups, err);
    if (rc != FLOE_OK) {
        attempt_cleanup(&a, true);
        return rc;
    }
    floe__loaded_table *next = NULL;
    rc = floe__catalog_commit_table(t->catalog, t->ns, t->name, reqs, ups, &next, err);
    json_decref(reqs);
    json_decref(ups);
    bool remove = rc == FLOE_ECONFLICT;
    if (rc != FLOE_OK && rc != FLOE_ECONFLICT && rc != FLOE_EUNKNOWN_OUTCOME) {
        int landed = check_landed(t, ref_of(&a), a.snapshot_id, &next);
        if (landed == 1) {
            floe_error_clear(err);
            rc = FLOE_OK;
        } else if (landed < 0) {
            rc = floe__err_recode(err, FLOE_EUNKNOWN_OUTCOME, "the catalog failed and whether the "
                                "commit landed cannot be told");
        }
        remove = landed == 0;
    }
    /* remove what this attempt wrote only when it certainly did not land */
    attempt_cleanup(&a, remove);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "committing snapshot %lld to %s.%s",
                              (long long)a.snapshot_id, t->ns, t->name);
    floe__loaded_table_free(t->loaded);
    t->loaded = next;
    if (snapshot_id)
        *snapshot_id = a.snapshot_id;
    if (req->spec)
        t->spec_id = floe__metadata_default_spec_id(t->loaded->metadata);
    /* the commit landed: a failure to copy the schema leaves the handle on
     * the old one, which the next commit's checks refuse */
    return req->schema ? floe__table_adopt_schema(t, req->schema, err) : FLOE_OK;
}
