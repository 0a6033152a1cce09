/*
 * compact_rewrite.c - rewriting one compaction group: every row of its
 * data files that no delete deletes, read back through the table's FileIO
 * and written to new data files of the target size, each run of files of
 * one partition into files of that partition; or, for files of an older
 * partition spec, each row into the files of its partition under the
 * current spec (a partition writer, within RESPEC_MEMORY of held rows),
 * where each row went recorded row by row.
 *
 * Deletes applied per data file, as a reader would apply them: the
 * table layer's live rows (floe__live: its DV or position delete files,
 * and the equality delete files whose data sequence number is above the
 * file's), plus a copy-on-write commit's own deletes.
 *
 * Row lineage (v3): a row keeps its identity when it moves.  Its _row_id
 * and _last_updated_sequence_number are written into the new file: the
 * values the old file stores, or, where it stores none (null, or no such
 * column), what a reader would have inherited there (the old file's
 * first_row_id plus the row's position; the old file's data sequence
 * number).  A file with no first_row_id (written before an upgrade to v3)
 * has no row ids to keep: its rows' _row_id stays null and the new file
 * assigns them.
 */
#include <inttypes.h>

#include "maint/compact_internal.h"

/* Rows a partition writer holds while rewriting files of an older spec
 * (the partition holding the most is written out early past it). */
#define RESPEC_MEMORY ((uint64_t)256 << 20)
/* out_row while the group is written: the output file's index in the
 * group's path table above POS_BITS, its position below. */
#define POS_BITS 40

/* ---- row lineage ------------------------------------------------------------------------ */

#define ROW_ID_FIELD 2147483540
#define LAST_UPDATED_FIELD 2147483539

static int add_long_field(floe__schema *s, const char *name, int32_t id, floe_error *err)
{
    floe__field *f = &s->root.children[s->root.n_children];
    *f = (floe__field){.name = floe__strdup(name), .id = id, .kind = FLOE_K_LONG,
                       .decl = FLOE_D_BIGINT};
    if (!f->name)
        return FLOE_OOM(err);
    s->root.n_children++;
    return FLOE_OK;
}

int floe__compact_row_schema(floe__compaction *c, floe_error *err)
{
    FLOE_FORWARD(floe__schema_copy(c->schema, &c->rows, err));
    if (floe__metadata_format_version(c->t->loaded->metadata) < 3)
        return FLOE_OK;
    floe__field *root = &c->rows->root;
    floe__field *v = floe__realloc(root->children, (root->n_children + 2) * sizeof *v);
    if (!v)
        return FLOE_OOM(err);
    root->children = v;
    FLOE_FORWARD(add_long_field(c->rows, "_row_id", ROW_ID_FIELD, err));
    return add_long_field(c->rows, "_last_updated_sequence_number", LAST_UPDATED_FIELD, err);
}

static bool has_lineage(const floe__compaction *c)
{
    return c->rows->root.n_children > c->schema->root.n_children;
}

/* A long slot of the row format: present with v, or null when !present. */
static int put_long_slot(floe__buf *b, bool present, int64_t v, floe_error *err)
{
    uint8_t slot[9] = {present ? FLOE_SLOT_PRESENT : FLOE_SLOT_NULL};
    floe__put_le64(slot + 1, (uint64_t)v);
    return floe__buf_append(b, slot, present ? 9 : 1, err);
}

/* A lineage slot read back at *p: true and *v when present (*p moves on). */
static bool take_long_slot(const uint8_t **p, const uint8_t *end, int64_t *v)
{
    if (*p < end && **p == FLOE_SLOT_PRESENT && end - *p >= 9) {
        *v = (int64_t)floe__get_le64(*p + 1);
        *p += 9;
        return true;
    }
    *p += *p < end;
    return false;
}

/* row (read with c->rows) into out with its lineage made explicit. */
static int with_lineage(const floe__compaction *c, const floe__plan_file *from,
                        const uint8_t *row, size_t len, uint64_t pos, floe__buf *out,
                        floe_error *err)
{
    const floe__schema *s = c->schema;
    const uint8_t *p = row, *end = row + len;
    for (uint32_t i = 0; i < s->root.n_children && p; i++)
        p = floe__datum_skip(&s->root.children[i], p, end);
    FLOE_RETURN_IF(!p, err, FLOE_EINTERNAL, "a row read back is not of the table schema");
    size_t columns = (size_t)(p - row);
    int64_t row_id = 0, seq = 0;
    bool has_id = take_long_slot(&p, end, &row_id), has_seq = take_long_slot(&p, end, &seq);
    assert(p == end);
    if (!has_id && from->file.has_first_row_id) {
        row_id = from->file.first_row_id + (int64_t)pos;
        has_id = true;
    }
    floe__buf_reset(out);
    FLOE_FORWARD(floe__buf_append(out, row, columns, err));
    FLOE_FORWARD(put_long_slot(out, has_id, row_id, err));
    return put_long_slot(out, true, has_seq ? seq : from->data_seq, err);
}

/* ---- one data file ----------------------------------------------------------------------- */

typedef struct filtering {
    floe__compaction *c;
    const floe__plan_file *from;     /* the old file */
    floe__posbitmap *skipped;        /* rows left out, recorded */
    floe__file_writer *w;            /* into one partition's files, or */
    floe__part_writer *pw;           /* into the current spec's partitions: */
    uint64_t *out_row;               /* per old row: where it went (POS_BITS) */
    uint64_t n_rows;                 /* the old file's */
    floe__strtab *paths;             /* the output files seen so far */
} filtering;

/* A row of an old file that a delete deletes: left out, recorded. */
static int skip_row(void *ctx, const uint8_t *row, size_t len, uint64_t pos, floe_error *err)
{
    (void)row;
    (void)len;
    filtering *x = ctx;
    x->c->res->rows_read++;
    return floe__posbitmap_add(x->skipped, pos, err);
}

/* A live row of an old file: copied. */
static int copy_row(void *ctx, const uint8_t *row, size_t len, uint64_t pos, floe_error *err)
{
    filtering *x = ctx;
    x->c->res->rows_read++;
    x->c->res->rows_written++;
    if (has_lineage(x->c)) {
        FLOE_FORWARD(with_lineage(x->c, x->from, row, len, pos, &x->c->row, err));
        row = x->c->row.data;
        len = x->c->row.len;
    }
    if (!x->pw)
        return floe__file_writer_write(x->w, row, len, NULL, NULL, err);
    FLOE_RETURN_IF(pos >= x->n_rows, err, FLOE_EFORMAT, "%s: row %" PRIu64 " past its %" PRIu64
                   " records", x->from->file.path, pos, x->n_rows);
    const char *path = NULL;
    uint64_t at = 0;
    uint32_t id = 0;
    FLOE_FORWARD(floe__part_writer_write(x->pw, row, len, &path, &at, err));
    FLOE_FORWARD(floe__strtab_intern(x->paths, path, &id, err));
    x->out_row[pos] = (uint64_t)id << POS_BITS | at;
    return FLOE_OK;
}

/* Old file k (plan index i) of the group through x (its writer set). */
static int rewrite_file(floe__compaction *c, size_t i, floe__compact_map *map, size_t k,
                        filtering *xp, floe_error *err)
{
    const floe__plan *p = c->plan;
    const floe__plan_data *pd = &p->data[i];
    filtering x = *xp;
    x.c = c;
    x.from = &pd->f;
    x.skipped = &map->skipped[k];
    const floe__posbitmap *deleted;
    FLOE_FORWARD(floe__live_positions(c->live, i, &deleted, err));
    if (deleted)
        FLOE_FORWARD(floe__posbitmap_or(&map->pos_deleted[k], deleted, err));
    /* copy-on-write: the commit's deletes too */
    const floe__posbitmap *extra = c->extra ? floe__posdel_set_find(c->extra, pd->f.file.path)
                                            : NULL;
    int rc = floe__live_file_rows(c->live, i, c->rows, extra, copy_row, skip_row, &x, err);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "compacting %s", pd->f.file.path);
    c->res->bytes_read += pd->f.file.metrics.file_size;
    return FLOE_OK;
}

void floe__compact_map_clear(floe__compact_map *m)
{
    for (size_t k = 0; k < m->n; k++) {
        if (m->skipped)
            floe__posbitmap_clear(&m->skipped[k]);
        if (m->pos_deleted)
            floe__posbitmap_clear(&m->pos_deleted[k]);
        if (m->out_row)
            floe__free(m->out_row[k]);
    }
    floe__free(m->out_row);
    floe__free(m->first_out);
    floe__free(m->skipped);
    floe__free(m->pos_deleted);
    memset(m, 0, sizeof *m);
}

/* Close writer w, its files appended to `out` with the partition tuple of
 * the files it copied (empty when it wrote nothing: every row deleted). */
static int close_writer(floe__file_writer *w, const floe__buf *part, floe__content_list *out,
                        floe_error *err)
{
    if (floe__file_writer_rows(w) == 0) {
        floe__file_writer_abort(w);
        return FLOE_OK;
    }
    size_t from = out->n;
    FLOE_FORWARD(floe__file_writer_close(w, out, err));
    int rc = FLOE_OK;
    for (size_t i = from; rc == FLOE_OK && i < out->n; i++)
        rc = floe__buf_append(&out->files[i].partition, part->data, part->len, err);
    return rc;
}

static bool same_part(const floe__buf *a, const floe__buf *b)
{
    return a->len == b->len && (!a->len || memcmp(a->data, b->data, a->len) == 0);
}

/* Files of an older spec: each row into its partition's file under the
 * current spec, where it went recorded in map->out_row (as output file and
 * position while written, then as the output row: the rows of the files
 * of `out` before it plus its position). */
static int rewrite_respec(floe__compaction *c, const floe__compact_group *g,
                          floe__compact_map *map, floe__content_list *out, floe_error *err)
{
    map->out_row = floe__calloc(g->n, sizeof *map->out_row);
    if (!map->out_row)
        return FLOE_OOM(err);
    floe__part_budget budget = {RESPEC_MEMORY, 0};
    floe__strtab paths = {0};
    filtering x = {.paths = &paths};
    int rc = floe__part_writer_new(c->t, c->rows, NULL, &c->wopts, &budget, &x.pw, err);
    for (size_t k = 0; rc == FLOE_OK && k < g->n; k++) {
        x.n_rows = c->plan->data[g->files[k]].f.file.metrics.record_count;
        x.out_row = map->out_row[k] = floe__malloc((x.n_rows ? x.n_rows : 1) * sizeof *x.out_row);
        if (!x.out_row) {
            rc = FLOE_OOM(err);
            break;
        }
        memset(x.out_row, 0xFF, x.n_rows * sizeof *x.out_row);         /* UINT64_MAX: skipped */
        rc = rewrite_file(c, g->files[k], map, k, &x, err);
    }
    size_t from = out->n;
    if (rc == FLOE_OK)
        rc = floe__part_writer_close(x.pw, out, err);             /* frees it either way */
    else
        floe__part_writer_abort(x.pw);
    uint64_t *start = rc == FLOE_OK ? floe__calloc(paths.n + 1, sizeof *start) : NULL;
    if (rc == FLOE_OK && !start)
        rc = FLOE_OOM(err);
    for (size_t i = from, rows = 0; rc == FLOE_OK && i < out->n; i++) {
        size_t id;                    /* every file written was named by a row */
        if (floe__pathmap_get(&paths.index, out->files[i].path, &id) && id < paths.n)
            start[id] = rows;
        rows += out->files[i].metrics.record_count;
    }
    for (size_t k = 0; rc == FLOE_OK && k < g->n; k++) {
        uint64_t n = c->plan->data[g->files[k]].f.file.metrics.record_count;
        for (uint64_t p = 0; p < n; p++) {
            uint64_t v = map->out_row[k][p];
            if (v != UINT64_MAX)
                map->out_row[k][p] = start[v >> POS_BITS] + (v & (((uint64_t)1 << POS_BITS) - 1));
        }
    }
    floe__free(start);
    floe__strtab_free(&paths);
    return rc;                        /* on failure the caller removes the files in out */
}

int floe__compact_rewrite(floe__compaction *c, const floe__compact_group *g,
                          floe__compact_map *map, floe__content_list *out, floe_error *err)
{
    map->n = g->n;
    map->first_out = floe__calloc(g->n, sizeof *map->first_out);
    map->skipped = floe__calloc(g->n, sizeof *map->skipped);
    map->pos_deleted = floe__calloc(g->n, sizeof *map->pos_deleted);
    if (!map->first_out || !map->skipped || !map->pos_deleted)
        return FLOE_OOM(err);
    if (g->respec)
        return rewrite_respec(c, g, map, out, err);
    /* A compaction group holds one partition; copy-on-write's may hold
     * several, each run of files of one partition written by a writer of
     * its own.  Rows are counted across them (first_out), so that a row's
     * place is found in `out` by the files' record counts, in order. */
    filtering x = {0};
    const floe__buf *part = NULL;
    uint64_t before = 0;                       /* rows of the writers closed */
    int rc = FLOE_OK;
    for (size_t k = 0; rc == FLOE_OK && k < g->n; k++) {
        const floe__buf *fp = &c->plan->data[g->files[k]].f.file.partition;
        if (x.w && !same_part(part, fp)) {
            before += floe__file_writer_rows(x.w);
            rc = close_writer(x.w, part, out, err);
            x.w = NULL;
        }
        if (rc == FLOE_OK && !x.w)
            rc = floe__file_writer_new(c->t, FLOE_CONTENT_DATA, c->rows, NULL, 0, &c->wopts,
                                       &x.w, err);
        part = fp;
        if (rc == FLOE_OK) {
            map->first_out[k] = before + floe__file_writer_rows(x.w);
            rc = rewrite_file(c, g->files[k], map, k, &x, err);
        }
    }
    if (rc != FLOE_OK) {
        if (x.w)
            floe__file_writer_abort(x.w);
        return rc;
    }
    return x.w ? close_writer(x.w, part, out, err) : FLOE_OK;
}
