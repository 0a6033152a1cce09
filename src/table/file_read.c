/*
 * file_read.c - reading a table's files back through its FileIO: a data
 * file's rows for a projection (the Parquet reader over a random-access
 * input), and the row positions a plan's deletion vectors and position
 * delete files delete from each data file.
 *
 * Position delete files are read with Iceberg's reserved projection
 * (file_path 2147483546, pos 2147483545).  A file-scoped one (v2 with
 * referenced_data_file, as floe and Java write them) applies to one data
 * file and is read when that file asks; an unscoped one (Spark's, one per
 * partition) may apply to many and is read once into a position set by
 * path, kept while the reader of the plan lives.
 */
#include <inttypes.h>

#include "table/table_internal.h"

struct floe__file_reader {
    floe__input *in;
    floe__pq_reader *pq;
};

static int input_read_at(void *ctx, uint64_t off, size_t len, uint8_t *dst, floe_error *err)
{
    return floe__input_read_at(ctx, off, len, dst, err);
}

int floe__file_reader_open(floe__fileio *io, const char *uri, const floe__schema *projection,
                           floe__file_reader **out, floe_error *err)
{
    *out = NULL;
    floe__file_reader *r = floe__calloc(1, sizeof *r);
    if (!r)
        return FLOE_OOM(err);
    int rc = floe__fileio_open_input(io, uri, &r->in, err);
    if (rc == FLOE_OK) {
        floe__pq_source src = {.read_at = input_read_at, .size = r->in->size, .ctx = r->in};
        rc = floe__pq_reader_open(&src, projection, NULL, &r->pq, err);
    }
    if (rc != FLOE_OK) {
        floe__file_reader_free(r);
        return floe__err_wrap(err, rc, "reading %s", uri);
    }
    *out = r;
    return FLOE_OK;
}

floe__pq_reader *floe__file_reader_pq(floe__file_reader *r) { return r->pq; }

void floe__file_reader_free(floe__file_reader *r)
{
    if (!r)
        return;
    floe__pq_reader_free(r->pq);
    floe__input_close(r->in);
    floe__free(r);
}

#define BATCH_ROWS 4096

int floe__file_rows_each(floe__fileio *io, const char *uri, const floe__schema *projection,
                         floe__row_fn fn, void *ctx, floe_error *err)
{
    floe__file_reader *r;
    FLOE_FORWARD(floe__file_reader_open(io, uri, projection, &r, err));
    size_t *ends = floe__calloc(BATCH_ROWS, sizeof *ends), n = 0;
    floe__buf rows;
    floe__buf_init(&rows, 0);
    int rc = ends ? FLOE_OK : FLOE_OOM(err);
    while (rc == FLOE_OK) {
        uint64_t first = 0;
        floe__buf_reset(&rows);
        rc = floe__pq_reader_next_batch(r->pq, &rows, ends, BATCH_ROWS, &n, &first, err);
        if (rc != FLOE_OK || n == 0)
            break;
        for (size_t i = 0, at = 0; rc == FLOE_OK && i < n; at = ends[i++])
            rc = fn(ctx, rows.data + at, ends[i] - at, first + i, err);
    }
    floe__buf_free(&rows);
    floe__free(ends);
    floe__file_reader_free(r);
    return rc;
}

/* ---- position delete files ------------------------------------------------------------------ */

/* One row of the reserved projection: tag, u32 length, path, tag, i64 pos. */
static int posdel_row(const uint8_t *p, size_t n, const char **path, size_t *plen,
                      uint64_t *pos)
{
    if (n < 5 || p[0] == 0)
        return FLOE_EFORMAT;
    uint32_t len = floe__get_le32(p + 1);
    if (len > n - 5 || n - 5 - len < 9 || p[5 + len] == 0)
        return FLOE_EFORMAT;
    int64_t v = (int64_t)floe__get_le64(p + 6 + len);
    if (v < 0)
        return FLOE_EFORMAT;
    *path = (const char *)p + 5;
    *plen = len;
    *pos = (uint64_t)v;
    return FLOE_OK;
}

typedef struct posdel_read {
    const char *only;                /* NULL: every file into set; else only its rows */
    size_t only_len;
    floe__posdel_set *set;
    floe__posbitmap *one;
    floe__buf path;
} posdel_read;

static int posdel_each(void *ctx, const uint8_t *row, size_t len, uint64_t at, floe_error *err)
{
    posdel_read *x = ctx;
    const char *p;
    size_t plen;
    uint64_t pos;
    if (posdel_row(row, len, &p, &plen, &pos) != FLOE_OK)
        return floe__err_set(err, FLOE_EFORMAT, "row %" PRIu64 ": a null or negative position "
                             "delete", at);
    if (x->only)
        return plen == x->only_len && memcmp(p, x->only, plen) == 0
                   ? floe__posbitmap_add(x->one, pos, err) : FLOE_OK;
    floe__buf_reset(&x->path);
    FLOE_FORWARD(floe__buf_append(&x->path, p, plen, err));
    FLOE_FORWARD(floe__buf_putc(&x->path, 0, err));
    return floe__posdel_set_add(x->set, (const char *)x->path.data, pos, err);
}

/* Every (path, pos) of a position delete file into `set`, or only those
 * of `only` (not NULL) into `one`. */
static int read_posdel_file(floe__fileio *io, const floe__schema *proj, const char *uri,
                            const char *only, floe__posdel_set *set, floe__posbitmap *one,
                            floe_error *err)
{
    posdel_read x = {only, only ? strlen(only) : 0, set, one, {0}};
    floe__buf_init(&x.path, 0);
    int rc = floe__file_rows_each(io, uri, proj, posdel_each, &x, err);
    floe__buf_free(&x.path);
    return rc == FLOE_OK ? FLOE_OK : floe__err_wrap(err, rc, "position delete file %s", uri);
}

int floe__posdel_file_read(floe__fileio *io, const char *uri, floe__posdel_set *out,
                           floe_error *err)
{
    floe__schema *proj;
    FLOE_FORWARD(floe__posdel_schema_new(&proj, err));
    int rc = read_posdel_file(io, proj, uri, NULL, out, NULL, err);
    floe_schema_free(proj);
    return rc;
}

/* ---- what a plan deletes by position ---------------------------------------------------------- */

struct floe__deleted {
    floe__fileio *io;
    const floe__plan *plan;
    floe__schema *proj;              /* the reserved position delete projection */
    floe__posdel_set **unscoped;     /* per plan->deletes index: read unscoped files */
    floe__posbitmap positions;       /* the last answer */
};

int floe__deleted_new(floe__fileio *io, const floe__plan *p, floe__deleted **out,
                      floe_error *err)
{
    floe__deleted *d = floe__calloc(1, sizeof *d);
    if (!d)
        return FLOE_OOM(err);
    d->io = io;
    d->plan = p;
    d->unscoped = floe__calloc(p->n_deletes ? p->n_deletes : 1, sizeof *d->unscoped);
    int rc = d->unscoped ? floe__posdel_schema_new(&d->proj, err) : FLOE_OOM(err);
    if (rc != FLOE_OK) {
        floe__deleted_free(d);
        return rc;
    }
    *out = d;
    return FLOE_OK;
}

void floe__deleted_free(floe__deleted *d)
{
    if (!d)
        return;
    for (size_t i = 0; d->unscoped && i < d->plan->n_deletes; i++)
        floe__posdel_set_free(d->unscoped[i]);
    floe__free(d->unscoped);
    floe__posbitmap_clear(&d->positions);
    floe_schema_free(d->proj);
    floe__free(d);
}

/* Position delete file k of the plan, for data file `path`. */
static int add_posdel(floe__deleted *d, size_t k, const char *path, floe_error *err)
{
    const floe__content_file *f = &d->plan->deletes[k].file;
    if (f->referenced_data_file)          /* scoped: it names this file only */
        return read_posdel_file(d->io, d->proj, f->path, path, NULL, &d->positions, err);
    if (!d->unscoped[k]) {
        floe__posdel_set *s;
        FLOE_FORWARD(floe__posdel_set_new(&s, err));
        int rc = read_posdel_file(d->io, d->proj, f->path, NULL, s, NULL, err);
        if (rc != FLOE_OK) {
            floe__posdel_set_free(s);
            return rc;
        }
        d->unscoped[k] = s;
    }
    const floe__posbitmap *b = floe__posdel_set_find(d->unscoped[k], path);
    return b ? floe__posbitmap_or(&d->positions, b, err) : FLOE_OK;
}

int floe__deleted_positions(floe__deleted *d, size_t i, const floe__posbitmap **out,
                            floe_error *err)
{
    const floe__plan_data *pd = &d->plan->data[i];
    floe__posbitmap_clear(&d->positions);
    *out = NULL;
    if (pd->dv != SIZE_MAX)
        FLOE_FORWARD(floe__dv_read(d->io, &d->plan->deletes[pd->dv].file, &d->positions, err));
    for (size_t k = 0; k < pd->n_pos; k++)
        FLOE_FORWARD(add_posdel(d, pd->pos[k], pd->f.file.path, err));
    if (floe__posbitmap_count(&d->positions))
        *out = &d->positions;
    return FLOE_OK;
}
