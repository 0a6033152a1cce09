/*
 * part_writer.c - data files of a partitioned table: each row's partition
 * tuple (iceberg/partition_spec.c) picks one of a bounded set of open file
 * writers (file_writer.c), one per tuple; closing a writer stamps its
 * tuple on every file it finished.  The open writers are bounded in number
 * (a new tuple past the bound first closes the open file with the largest
 * estimated size) and, when given a budget, in memory: before a row is
 * written, while the row groups the writers sharing the budget hold exceed
 * its limit, this writer closes its open file holding the most (never its
 * last one: a single file's row group is bounded by the row group size).
 *
 * It does not commit (table_commit.c writes the manifests, which carry
 * the tuples) and never decides the spec: it is the table's (t->spec_id)
 * or the one its caller's commit makes the table's.
 */
#include "iceberg/partition_internal.h"
#include "table/table_internal.h"

#include <sys/resource.h>

/* Open files by default: as many as a batch's partitions are likely to
 * be, within an eighth of the process's file descriptors (each open local
 * file holds one; a mirror has a writer per table).  Fewer open files than
 * a batch's partitions make every row close one file and open another. */
#define MIN_MAX_OPEN 64
#define MAX_MAX_OPEN 1024

static size_t default_max_open(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return MAX_MAX_OPEN;
    rlim_t n = rl.rlim_cur / 8;
    return n < MIN_MAX_OPEN ? MIN_MAX_OPEN : n > MAX_MAX_OPEN ? MAX_MAX_OPEN : (size_t)n;
}

typedef struct slot {
    floe__buf tuple;
    uint64_t hash;
    floe__file_writer *w;
    uint64_t held;                   /* its buffered bytes, as last counted in the budget */
} slot;

struct floe__part_writer {
    floe__table *t;                  /* borrowed */
    const floe__schema *schema;      /* borrowed */
    floe__partition_spec *spec;
    floe__file_writer_options o;
    bool has_o;
    size_t max_open;
    floe__part_budget *budget;       /* borrowed, or NULL */
    slot *open;
    size_t n_open;
    floe__content_list done;         /* finished files, tuples set */
    floe__buf scratch;               /* the tuple of the row being written */
    uint64_t early_closes;           /* files closed to keep within the budget */
    int broken;
};

/* Count slot s's buffered bytes anew in the budget. */
static void recount(floe__part_writer *w, slot *s, uint64_t now)
{
    if (w->budget)
        w->budget->used = w->budget->used - s->held + now;
    s->held = now;
}

static void free_slot(floe__part_writer *w, slot *s, bool abort_files)
{
    recount(w, s, 0);
    if (abort_files)
        floe__file_writer_abort(s->w);
    floe__buf_free(&s->tuple);
    s->w = NULL;
}

static void free_writer(floe__part_writer *w, bool remove_files)
{
    for (size_t i = 0; i < w->n_open; i++)
        free_slot(w, &w->open[i], true);
    if (remove_files)
        for (size_t i = 0; i < w->done.n; i++)
            floe__fileio_remove(w->t->io, w->done.files[i].path, NULL);
    floe__content_list_clear(&w->done);
    floe__free(w->open);
    floe__buf_free(&w->scratch);
    floe__partition_spec_free(w->spec);
    floe__free(w);
}

int floe__part_writer_new(floe__table *t, const floe__schema *schema, const json_t *spec,
                          const floe__file_writer_options *o, size_t max_open,
                          floe__part_budget *budget, floe__part_writer **out, floe_error *err)
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
    w->max_open = max_open ? max_open : default_max_open();
    w->budget = budget;
    w->has_o = o != NULL;
    if (o)
        w->o = *o;
    floe__buf_init(&w->scratch, 0);
    w->open = floe__calloc(w->max_open, sizeof *w->open);
    int rc = w->open ? floe__partition_spec_from_json(spec, schema, &w->spec, err)
                     : FLOE_OOM(err);
    if (rc != FLOE_OK) {
        free_writer(w, false);
        return floe__err_wrap(err, rc, "table %s.%s: partition spec %d", t->ns, t->name,
                              (int)json_integer_value(json_object_get(spec, "spec-id")));
    }
    *out = w;
    return FLOE_OK;
}

/* Close open writer i, stamping its tuple on its files, and drop the slot. */
static int close_slot(floe__part_writer *w, size_t i, floe_error *err)
{
    slot *s = &w->open[i];
    floe__content_list files = {0};
    int rc = floe__file_writer_close(s->w, &files, err);
    s->w = NULL;
    for (size_t k = 0; rc == FLOE_OK && k < files.n; k++)
        rc = floe__buf_append(&files.files[k].partition, s->tuple.data, s->tuple.len, err);
    if (rc == FLOE_OK)
        rc = floe__content_list_take(&w->done, &files, err);
    if (rc != FLOE_OK)
        for (size_t k = 0; k < files.n; k++)
            floe__fileio_remove(w->t->io, files.files[k].path, NULL);
    floe__content_list_clear(&files);
    free_slot(w, s, false);
    w->open[i] = w->open[--w->n_open];
    return rc;
}

/* The open file holding the most memory. */
static size_t hungriest(const floe__part_writer *w)
{
    size_t best = 0;
    for (size_t i = 1; i < w->n_open; i++)
        if (w->open[i].held > w->open[best].held)
            best = i;
    return best;
}

static size_t largest(const floe__part_writer *w)
{
    size_t best = 0;
    uint64_t size = 0;
    for (size_t i = 0; i < w->n_open; i++) {
        uint64_t b = floe__file_writer_open_bytes(w->open[i].w);
        if (i == 0 || b > size)
            best = i, size = b;
    }
    return best;
}

/* The open writer of the scratch tuple, opened (after closing the largest
 * when at the bound) when there is none. */
static int writer_for(floe__part_writer *w, floe__file_writer **out, floe_error *err)
{
    uint64_t h = floe__hash64(w->scratch.data, w->scratch.len, 0);
    for (size_t i = 0; i < w->n_open; i++) {
        slot *s = &w->open[i];
        if (s->hash == h && s->tuple.len == w->scratch.len &&
            (s->tuple.len == 0 || memcmp(s->tuple.data, w->scratch.data, s->tuple.len) == 0)) {
            *out = s->w;
            return FLOE_OK;
        }
    }
    if (w->n_open == w->max_open)
        FLOE_FORWARD(close_slot(w, largest(w), err));
    slot *s = &w->open[w->n_open];
    floe__buf_init(&s->tuple, 0);
    FLOE_FORWARD(floe__buf_append(&s->tuple, w->scratch.data, w->scratch.len, err));
    int rc = floe__file_writer_new(w->t, FLOE_CONTENT_DATA, w->schema, NULL, 0,
                                   w->has_o ? &w->o : NULL, &s->w, err);
    if (rc != FLOE_OK) {
        floe__buf_free(&s->tuple);
        return rc;
    }
    s->hash = h;
    s->held = 0;
    w->n_open++;
    *out = s->w;
    return FLOE_OK;
}

int floe__part_writer_write(floe__part_writer *w, const uint8_t *row, size_t len,
                            const char **path, uint64_t *pos, floe_error *err)
{
    FLOE_RETURN_IF(w->broken, err, w->broken, "partition writer: an earlier failure broke it");
    floe__buf_reset(&w->scratch);
    FLOE_FORWARD(floe__partition_tuple(w->spec, w->schema, row, len, &w->scratch, err));
    int rc = FLOE_OK;
    while (rc == FLOE_OK && w->budget && w->budget->limit && w->n_open > 1 &&
           w->budget->used > w->budget->limit) {
        rc = close_slot(w, hungriest(w), err);
        w->early_closes++;
    }
    floe__file_writer *fw = NULL;
    if (rc == FLOE_OK)
        rc = writer_for(w, &fw, err);
    if (rc == FLOE_OK)
        rc = floe__file_writer_write(fw, row, len, path, pos, err);
    if (fw) {
        for (size_t i = 0; i < w->n_open; i++)
            if (w->open[i].w == fw)
                recount(w, &w->open[i], floe__file_writer_buffered(fw));
    }
    if (rc != FLOE_OK && rc != FLOE_EINPUT && rc != FLOE_EINVAL)
        w->broken = rc;
    return rc;
}

const floe__partition_spec *floe__part_writer_spec(const floe__part_writer *w)
{
    return w->spec;
}

size_t floe__part_writer_open_count(const floe__part_writer *w) { return w->n_open; }

uint64_t floe__part_writer_early_closes(const floe__part_writer *w) { return w->early_closes; }

int floe__part_writer_roll_path(floe__part_writer *w, const char *path, floe_error *err)
{
    for (size_t i = 0; i < w->n_open; i++) {
        const char *open = floe__file_writer_open_path(w->open[i].w);
        if (open && strcmp(open, path) == 0) {
            int rc = floe__file_writer_roll(w->open[i].w, err);
            recount(w, &w->open[i], 0);
            if (rc != FLOE_OK)
                w->broken = rc;
            return rc;
        }
    }
    return FLOE_OK;
}

int floe__part_writer_close(floe__part_writer *w, floe__content_list *out, floe_error *err)
{
    int rc = w->broken ? floe__err_set(err, w->broken, "partition writer: an earlier failure "
                                       "broke it") : FLOE_OK;
    while (rc == FLOE_OK && w->n_open)
        rc = close_slot(w, w->n_open - 1, err);
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
