/*
 * part_writer.c - data files of a table under one partition spec: each
 * row's partition tuple (iceberg/partition_spec.c) picks the file it goes
 * to, and every file holds one tuple, stamped on it for the commit.
 *
 * An unpartitioned spec has one tuple: rows stream into one rolling file
 * writer (file_writer.c).  A partitioned spec writes clustered, as a
 * sorting writer would but without sorting: each tuple (a slot, found by
 * hash) holds its rows as row bytes, and is written out as one complete
 * file when the writer closes, when its rows reach the target file size,
 * when a caller must read the file (floe__part_writer_roll_path), or,
 * holding the most of a shared budget that is exceeded, early.  One file
 * writer writes every tuple's files in turn, so a batch touching 10,000
 * partitions has one Parquet writer open, not 10,000.  A slot's file is
 * named (floe__file_writer_name) when its first row arrives and rows take
 * positions 0, 1, ... in arrival order, so each write reports the row's
 * file and position at once, as a streaming writer does (the key index
 * needs them); the file is written with exactly those rows in that order
 * and never rolls over mid-way (floe__file_writer_open_at).  Rows are
 * validated when held (floe__datum_validate), so a bad row is refused at
 * its write, not when its tuple is written out.
 *
 * Equality delete rows (the key columns) go the same way when every source
 * column of the spec is a key column, so each delete file holds the keys
 * of one partition; otherwise they stream into files without a tuple,
 * which the commit makes global (table_commit.c: an unpartitioned spec's,
 * applying to every data file).
 *
 * It does not commit (table_commit.c writes the manifests, which carry
 * the tuples) and never decides the spec: it is the table's (t->spec_id)
 * or the one its caller's commit makes the table's.
 */
#include "iceberg/partition_internal.h"
#include "table/table_internal.h"

typedef struct slot {
    floe__buf tuple;
    uint64_t hash;
    char *path;                      /* the file its held rows go to; NULL: none yet */
    floe__buf rows;                  /* held rows: u32 length, row bytes */
    uint64_t n_rows;                 /* held rows: positions 0 .. n_rows-1 of path */
    uint64_t held;                   /* its bytes, as counted in the budget */
} slot;

struct floe__part_writer {
    floe__table *t;                  /* borrowed */
    const floe__schema *schema;      /* borrowed */
    floe__partition_spec *spec;
    floe__part_budget *budget;       /* borrowed, or NULL */
    floe__file_writer *fw;           /* unpartitioned: the open file; partitioned: writes the
                                        tuples' files one at a time */
    uint64_t fw_held;                /* unpartitioned: fw's row group, as counted */
    uint64_t target;                 /* a tuple's held row bytes past it start another file */
    slot *slots;
    size_t n_slots, cap_slots;
    uint32_t *index;                 /* slot number + 1 by tuple hash (linear probing) */
    size_t index_cap;                /* a power of two, at least twice n_slots */
    size_t n_holding;                /* slots holding rows */
    floe__content_list done;         /* finished files, tuples set */
    floe__buf scratch;               /* the tuple of the row being written */
    uint64_t early_closes;           /* files written early to keep within the budget */
    int broken;
};

#define HEAD 4                       /* a held row's length prefix */

/* Count `now` bytes for *held (a slot's or the unpartitioned file's). */
static void recount(floe__part_writer *w, uint64_t *held, uint64_t now)
{
    if (w->budget)
        w->budget->used = w->budget->used - *held + now;
    *held = now;
}

static void free_writer(floe__part_writer *w, bool remove_files)
{
    floe__file_writer_abort(w->fw);
    recount(w, &w->fw_held, 0);
    for (size_t i = 0; i < w->n_slots; i++) {
        slot *s = &w->slots[i];
        recount(w, &s->held, 0);
        floe__buf_free(&s->tuple);
        floe__buf_free(&s->rows);
        floe__free(s->path);
    }
    if (remove_files)
        for (size_t i = 0; i < w->done.n; i++)
            floe__fileio_remove(w->t->io, w->done.files[i].path, NULL);
    floe__content_list_clear(&w->done);
    floe__free(w->slots);
    floe__free(w->index);
    floe__buf_free(&w->scratch);
    floe__partition_spec_free(w->spec);
    floe__free(w);
}

static int make(floe__table *t, floe__content content, const floe__schema *schema,
                const int32_t *eq_ids, size_t n_eq_ids, const json_t *spec,
                const floe__file_writer_options *o, floe__part_budget *budget,
                floe__part_writer **out, floe_error *err)
{
    FLOE_RETURN_IF(!t || !schema || !out, err, FLOE_EINVAL, "partition writer: NULL argument");
    FLOE_FORWARD(floe__table_check_format(t, err));
    if (!spec)
        spec = floe__metadata_spec_by_id(t->loaded->metadata, t->spec_id);
    FLOE_RETURN_IF(!spec, err, FLOE_EFORMAT, "table %s.%s has no partition spec %d", t->ns,
                   t->name, (int)t->spec_id);
    floe__part_writer *w = floe__calloc(1, sizeof *w);
    if (!w)
        return FLOE_OOM(err);
    w->t = t;
    w->schema = schema;
    w->budget = budget;
    floe__buf_init(&w->scratch, 0);
    int rc = floe__partition_spec_from_json(spec, schema, &w->spec, err);
    if (rc != FLOE_OK)
        rc = floe__err_wrap(err, rc, "table %s.%s: partition spec %d", t->ns, t->name,
                            (int)json_integer_value(json_object_get(spec, "spec-id")));
    if (rc == FLOE_OK)
        rc = floe__file_writer_new(t, content, schema, eq_ids, n_eq_ids, o, &w->fw, err);
    if (rc != FLOE_OK) {
        free_writer(w, false);
        return rc;
    }
    w->target = floe__file_writer_target(w->fw);
    *out = w;
    return FLOE_OK;
}

int floe__part_writer_new(floe__table *t, const floe__schema *schema, const json_t *spec,
                          const floe__file_writer_options *o, floe__part_budget *budget,
                          floe__part_writer **out, floe_error *err)
{
    return make(t, FLOE_CONTENT_DATA, schema, NULL, 0, spec, o, budget, out, err);
}

bool floe__spec_covered_by(const json_t *spec, const int32_t *ids, size_t n)
{
    const json_t *f;
    size_t i;
    json_array_foreach(json_object_get(spec, "fields"), i, f) {
        json_int_t src = json_integer_value(json_object_get(f, "source-id"));
        bool found = false;
        for (size_t k = 0; !found && k < n; k++)
            found = ids[k] == src;
        if (!found)
            return false;
    }
    return true;
}

int floe__part_writer_new_deletes(floe__table *t, const floe__schema *eq_schema,
                                  const int32_t *eq_ids, size_t n_eq_ids, const json_t *spec,
                                  const floe__file_writer_options *o, floe__part_budget *budget,
                                  floe__part_writer **out, floe_error *err)
{
    if (!spec && t)
        spec = floe__metadata_spec_by_id(t->loaded->metadata, t->spec_id);
    if (spec && floe__spec_covered_by(spec, eq_ids, n_eq_ids))
        return make(t, FLOE_CONTENT_EQUALITY_DELETES, eq_schema, eq_ids, n_eq_ids, spec, o,
                    budget, out, err);
    json_t *global = json_pack("{s:i, s:[]}", "spec-id", 0, "fields");
    if (!global)
        return FLOE_OOM(err);
    int rc = make(t, FLOE_CONTENT_EQUALITY_DELETES, eq_schema, eq_ids, n_eq_ids, global, o,
                  budget, out, err);
    json_decref(global);
    return rc;
}

/* ---- slots by tuple ---------------------------------------------------------------------- */

static void index_put(uint32_t *index, size_t cap, uint64_t hash, uint32_t number)
{
    size_t i = (size_t)hash & (cap - 1);
    while (index[i])
        i = (i + 1) & (cap - 1);
    index[i] = number + 1;
}

/* The slot of the scratch tuple, made when there is none. */
static int slot_for(floe__part_writer *w, slot **out, floe_error *err)
{
    uint64_t h = floe__hash64(w->scratch.data, w->scratch.len, 0);
    if (w->index_cap)
        for (size_t i = (size_t)h & (w->index_cap - 1); w->index[i];
             i = (i + 1) & (w->index_cap - 1)) {
            slot *s = &w->slots[w->index[i] - 1];
            if (s->hash == h && s->tuple.len == w->scratch.len &&
                memcmp(s->tuple.data, w->scratch.data, s->tuple.len) == 0) {
                *out = s;
                return FLOE_OK;
            }
        }
    FLOE_RETURN_IF(w->n_slots >= UINT32_MAX - 1, err, FLOE_ELIMIT,
                   "partition writer: more than 2^32 partitions in one batch");
    if (w->n_slots == w->cap_slots) {
        size_t cap = w->cap_slots ? w->cap_slots * 2 : 16;
        slot *slots = floe__realloc(w->slots, cap * sizeof *slots);
        if (!slots)
            return FLOE_OOM(err);
        w->slots = slots;
        w->cap_slots = cap;
    }
    if ((w->n_slots + 1) * 2 > w->index_cap) {
        size_t cap = w->index_cap ? w->index_cap * 2 : 64;
        uint32_t *index = floe__calloc(cap, sizeof *index);
        if (!index)
            return FLOE_OOM(err);
        for (size_t k = 0; k < w->n_slots; k++)
            index_put(index, cap, w->slots[k].hash, (uint32_t)k);
        floe__free(w->index);
        w->index = index;
        w->index_cap = cap;
    }
    slot *s = &w->slots[w->n_slots];
    memset(s, 0, sizeof *s);
    floe__buf_init(&s->tuple, 0);
    floe__buf_init(&s->rows, 0);
    FLOE_FORWARD(floe__buf_append(&s->tuple, w->scratch.data, w->scratch.len, err));
    s->hash = h;
    index_put(w->index, w->index_cap, h, (uint32_t)w->n_slots);
    w->n_slots++;
    *out = s;
    return FLOE_OK;
}

/* Finished files (rc: how making them went) into w->done, stamped with
 * `tuple` (NULL: unpartitioned); on any failure they are removed.  Clears
 * files either way. */
static int keep(floe__part_writer *w, floe__content_list *files, const floe__buf *tuple, int rc,
                floe_error *err)
{
    for (size_t k = 0; rc == FLOE_OK && tuple && k < files->n; k++)
        rc = floe__buf_append(&files->files[k].partition, tuple->data, tuple->len, err);
    if (rc == FLOE_OK)
        rc = floe__content_list_take(&w->done, files, err);
    if (rc != FLOE_OK)
        for (size_t k = 0; k < files->n; k++)
            floe__fileio_remove(w->t->io, files->files[k].path, NULL);
    floe__content_list_clear(files);
    return rc;
}

/* Write slot s's held rows as its file, stamped with its tuple; the slot
 * stays, empty, for the tuple's next rows (a new file). */
static int write_out(floe__part_writer *w, slot *s, floe_error *err)
{
    if (!s->n_rows)
        return FLOE_OK;
    char *path = s->path;
    s->path = NULL;
    int rc = floe__file_writer_open_at(w->fw, path, err);
    for (size_t at = 0; rc == FLOE_OK && at < s->rows.len;) {
        uint32_t len = floe__get_le32(s->rows.data + at);
        rc = floe__file_writer_write(w->fw, s->rows.data + at + HEAD, len, NULL, NULL, err);
        at += HEAD + (size_t)len;
    }
    if (rc == FLOE_OK)
        rc = floe__file_writer_roll(w->fw, err);
    floe__content_list files = {0};
    if (rc == FLOE_OK)
        rc = floe__file_writer_take(w->fw, &files, err);
    rc = keep(w, &files, &s->tuple, rc, err);
    floe__buf_free(&s->rows);
    s->n_rows = 0;
    recount(w, &s->held, 0);
    w->n_holding--;
    return rc;
}

/* The slot holding the most bytes (NULL: none holds any). */
static slot *hungriest(floe__part_writer *w)
{
    slot *best = NULL;
    for (size_t i = 0; i < w->n_slots; i++)
        if (w->slots[i].held && (!best || w->slots[i].held > best->held))
            best = &w->slots[i];
    return best;
}

/* Hold the row in its tuple's slot: its file and position are fixed now. */
static int hold(floe__part_writer *w, const uint8_t *row, size_t len, const char **path,
                uint64_t *pos, floe_error *err)
{
    FLOE_RETURN_IF(len > UINT32_MAX - HEAD, err, FLOE_ELIMIT, "row of %zu bytes", len);
    FLOE_FORWARD(floe__datum_validate(w->schema, row, len, err));
    floe__buf_reset(&w->scratch);
    FLOE_FORWARD(floe__partition_tuple(w->spec, w->schema, row, len, &w->scratch, err));
    while (w->budget && w->budget->limit && w->budget->used > w->budget->limit) {
        slot *big = hungriest(w);
        if (!big)
            break;                   /* what others hold: theirs to write out */
        FLOE_FORWARD(write_out(w, big, err));
        w->early_closes++;
    }
    slot *s = NULL;
    FLOE_FORWARD(slot_for(w, &s, err));
    if (s->n_rows && s->held + HEAD + len > w->target)
        FLOE_FORWARD(write_out(w, s, err));
    if (!s->path)
        FLOE_FORWARD(floe__file_writer_name(w->fw, &s->path, err));
    uint8_t head[HEAD];
    floe__put_le32(head, (uint32_t)len);
    FLOE_FORWARD(floe__buf_append(&s->rows, head, HEAD, err));
    FLOE_FORWARD(floe__buf_append(&s->rows, row, len, err));
    if (!s->n_rows)
        w->n_holding++;
    if (path)
        *path = s->path;
    if (pos)
        *pos = s->n_rows;
    s->n_rows++;
    recount(w, &s->held, s->held + HEAD + len);
    return FLOE_OK;
}

/* ---- the writer ----------------------------------------------------------------------------- */

static bool partitioned(const floe__part_writer *w) { return w->spec->n > 0; }

int floe__part_writer_write(floe__part_writer *w, const uint8_t *row, size_t len,
                            const char **path, uint64_t *pos, floe_error *err)
{
    FLOE_RETURN_IF(w->broken, err, w->broken, "partition writer: an earlier failure broke it");
    int rc;
    if (partitioned(w)) {
        rc = hold(w, row, len, path, pos, err);
    } else {
        rc = floe__file_writer_write(w->fw, row, len, path, pos, err);
        recount(w, &w->fw_held, floe__file_writer_buffered(w->fw));
    }
    if (rc != FLOE_OK && rc != FLOE_EINPUT && rc != FLOE_EINVAL)
        w->broken = rc;
    return rc;
}

const floe__partition_spec *floe__part_writer_spec(const floe__part_writer *w)
{
    return w->spec;
}

size_t floe__part_writer_open_count(const floe__part_writer *w)
{
    return partitioned(w) ? w->n_holding : floe__file_writer_open_path(w->fw) != NULL;
}

uint64_t floe__part_writer_early_closes(const floe__part_writer *w) { return w->early_closes; }

int floe__part_writer_roll_path(floe__part_writer *w, const char *path, floe_error *err)
{
    FLOE_RETURN_IF(w->broken, err, w->broken, "partition writer: an earlier failure broke it");
    int rc = FLOE_OK;
    if (!partitioned(w)) {
        const char *open = floe__file_writer_open_path(w->fw);
        if (open && strcmp(open, path) == 0) {
            rc = floe__file_writer_roll(w->fw, err);
            recount(w, &w->fw_held, 0);
        }
    } else {
        for (size_t i = 0; i < w->n_slots; i++)
            if (w->slots[i].path && strcmp(w->slots[i].path, path) == 0) {
                rc = write_out(w, &w->slots[i], err);
                break;
            }
    }
    if (rc != FLOE_OK)
        w->broken = rc;
    return rc;
}

int floe__part_writer_close(floe__part_writer *w, floe__content_list *out, floe_error *err)
{
    int rc = w->broken ? floe__err_set(err, w->broken, "partition writer: an earlier failure "
                                       "broke it") : FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < w->n_slots; i++)
        rc = write_out(w, &w->slots[i], err);
    if (rc == FLOE_OK) {
        floe__content_list files = {0};
        floe__file_writer *fw = w->fw;
        w->fw = NULL;
        recount(w, &w->fw_held, 0);
        rc = floe__file_writer_close(fw, &files, err);
        rc = keep(w, &files, NULL, rc, err);
    }
    if (rc == FLOE_OK)
        rc = floe__content_list_take(out, &w->done, err);
    free_writer(w, rc != FLOE_OK);
    return rc;
}

void floe__part_writer_abort(floe__part_writer *w)
{
    if (w)
        free_writer(w, true);
}
