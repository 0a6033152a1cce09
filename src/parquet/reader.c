/*
 * reader.c - the Parquet reader of parquet_internal.h: opening a file
 * (magic, footer, schema tree, plan), row groups, and handing out rows.
 *
 *   file := "PAR1" column-chunks... footer u32(footer length) "PAR1"
 *
 * Opening reads the file's last 64 KiB in one read (the footer nearly
 * always fits; a larger one is read on its own), checks the magic at both
 * ends, decodes and checks the footer: every row group must have a chunk
 * per column, the row counts must add up to the file's, and no chunk may
 * hold fewer level entries than its row group has rows.  Encrypted files
 * are FLOE_EUNSUPPORTED.  Nothing else is read until the first row is
 * asked for; then each row group's projected chunks are started
 * (chunk_read.c) and rows assembled (assemble.c).  A row group's last row
 * also checks that every column used exactly its chunk's entries.
 */
#include "parquet/pqr_internal.h"

#define TAIL ((size_t)64 << 10)

void floe__pq_read_options_init(floe__pq_read_options *o)
{
    memset(o, 0, sizeof *o);
    o->max_footer = (size_t)64 << 20;
    o->max_page = (size_t)256 << 20;
}

static int mem_read_at(void *ctx, uint64_t off, size_t len, uint8_t *dst, floe_error *err)
{
    (void)err;
    if (len)
        memcpy(dst, (const uint8_t *)ctx + off, len);
    return FLOE_OK;
}

floe__pq_source floe__pq_source_memory(const void *data, size_t len)
{
    floe__pq_source s = {.read_at = mem_read_at, .size = len, .ctx = (void *)(uintptr_t)data};
    return s;
}

static int read_src(floe__pq_reader *r, uint64_t off, size_t len, uint8_t *dst, floe_error *err)
{
    assert(off <= r->src.size && len <= r->src.size - off);
    int rc = r->src.read_at(r->src.ctx, off, len, dst, err);
    if (rc)
        return floe__err_wrap(err, rc, "parquet: reading bytes %llu..%llu",
                              (unsigned long long)off, (unsigned long long)(off + len));
    return FLOE_OK;
}

/* ---- the footer ----------------------------------------------------------------------- */

static int tail_checks(floe__pq_reader *r, const uint8_t *tail, size_t n, uint32_t *flen,
                       floe_error *err)
{
    uint64_t size = r->src.size;
    FLOE_RETURN_IF(memcmp(tail + n - 4, "PARE", 4) == 0, err, FLOE_EUNSUPPORTED,
                   "parquet: encrypted footers are not supported");
    FLOE_RETURN_IF(memcmp(tail + n - 4, "PAR1", 4) != 0, err, FLOE_EFORMAT,
                   "parquet: no PAR1 magic at the end of the file");
    *flen = floe__get_le32(tail + n - 8);
    FLOE_RETURN_IF(*flen > size - 12, err, FLOE_EFORMAT,
                   "parquet: a footer of %u bytes in a file of %llu", *flen,
                   (unsigned long long)size);
    FLOE_RETURN_IF(*flen > r->opts.max_footer, err, FLOE_ELIMIT,
                   "parquet: a footer of %u bytes is over the limit of %zu", *flen,
                   r->opts.max_footer);
    return FLOE_OK;
}

static int read_footer(floe__pq_reader *r, floe_error *err)
{
    uint64_t size = r->src.size;
    FLOE_RETURN_IF(size < 12, err, FLOE_EFORMAT, "parquet: a file of %llu bytes is too small",
                   (unsigned long long)size);
    size_t n = size < TAIL ? (size_t)size : TAIL;
    uint8_t *tail = floe__malloc(n), *big = NULL, head[4];
    if (!tail)
        return FLOE_OOM(err);
    uint32_t flen = 0;
    int rc = read_src(r, size - n, n, tail, err);
    if (rc == FLOE_OK)
        rc = tail_checks(r, tail, n, &flen, err);
    if (rc == FLOE_OK)
        rc = read_src(r, 0, 4, head, err);
    if (rc == FLOE_OK && memcmp(head, "PAR1", 4) != 0)
        rc = floe__err_set(err, FLOE_EFORMAT, "parquet: no PAR1 magic at the start of the file");
    const uint8_t *footer = tail + n - 8 - (flen <= n - 8 ? flen : 0);
    if (rc == FLOE_OK && flen > n - 8) {
        big = floe__malloc(flen);
        rc = big ? read_src(r, size - 8 - flen, flen, big, err) : FLOE_OOM(err);
        footer = big;
    }
    if (rc == FLOE_OK)
        rc = floe__pq_meta_decode(footer, flen, &r->meta, err);
    r->data_end = size - 8 - flen;
    floe__free(big);
    floe__free(tail);
    return rc;
}

static int check_row_groups(floe__pq_reader *r, floe_error *err)
{
    const floe__pq_meta *m = &r->meta;
    r->rg_first_rows = floe__malloc((m->n_rgs + 1) * sizeof *r->rg_first_rows);
    if (!r->rg_first_rows)
        return FLOE_OOM(err);
    uint64_t sum = 0;
    for (size_t g = 0; g < m->n_rgs; g++) {
        const floe__pq_rgmeta *rg = &m->rgs[g];
        FLOE_RETURN_IF(rg->n_cols != r->fs.n_leaves, err, FLOE_EFORMAT,
                       "parquet footer: row group %zu has %zu column chunks for %zu columns", g,
                       rg->n_cols, r->fs.n_leaves);
        for (size_t i = 0; i < rg->n_cols; i++)
            FLOE_RETURN_IF(rg->cols[i].has_meta && rg->cols[i].num_values < rg->num_rows, err,
                           FLOE_EFORMAT, "parquet footer: row group %zu, column %zu: %lld "
                           "values for %lld rows", g, i, (long long)rg->cols[i].num_values,
                           (long long)rg->num_rows);
        r->rg_first_rows[g] = sum;
        sum += (uint64_t)rg->num_rows;        /* each is below 2^63: no wrap for 2 of them */
        FLOE_RETURN_IF(sum > (uint64_t)INT64_MAX, err, FLOE_EFORMAT,
                       "parquet footer: more than 2^63 rows");
    }
    r->rg_first_rows[m->n_rgs] = sum;
    FLOE_RETURN_IF(sum != (uint64_t)m->num_rows, err, FLOE_EFORMAT,
                   "parquet footer: the row groups hold %llu rows, the file says %lld",
                   (unsigned long long)sum, (long long)m->num_rows);
    return FLOE_OK;
}

static int open_file(floe__pq_reader *r, const floe__schema *projection, floe_error *err)
{
    FLOE_FORWARD(read_footer(r, err));
    FLOE_RETURN_IF(r->meta.encrypted, err, FLOE_EUNSUPPORTED,
                   "parquet: encrypted files are not supported");
    FLOE_FORWARD(floe__pq_fschema_build(&r->meta, &r->fs, err));
    FLOE_FORWARD(check_row_groups(r, err));
    if (!projection) {
        FLOE_FORWARD(floe__pq_fschema_derive(&r->fs, &r->owned, err));
        projection = r->owned;
    }
    r->schema = projection;
    return floe__pq_plan_read(r, err);
}

int floe__pq_reader_open(const floe__pq_source *src, const floe__schema *projection,
                         const floe__pq_read_options *o, floe__pq_reader **out,
                         floe_error *err)
{
    FLOE_RETURN_IF(!src || !src->read_at || !out, err, FLOE_EINVAL,
                   "floe__pq_reader_open: no source or out");
    floe__pq_reader *r = floe__calloc(1, sizeof *r);
    if (!r)
        return FLOE_OOM(err);
    r->src = *src;
    if (o)
        r->opts = *o;
    else
        floe__pq_read_options_init(&r->opts);
    int rc = FLOE_OK;
    if (r->opts.max_page < 4096 || r->opts.max_page > ((size_t)1 << 40) ||
        r->opts.max_footer < 16)
        rc = floe__err_set(err, FLOE_EINVAL, "parquet reader: max_page or max_footer too small");
    if (rc == FLOE_OK)
        rc = open_file(r, projection, err);
    if (rc != FLOE_OK) {
        floe__pq_reader_free(r);
        return rc;
    }
    *out = r;
    return FLOE_OK;
}

void floe__pq_reader_free(floe__pq_reader *r)
{
    if (!r)
        return;
    floe__pq_plan_read_free(r);
    floe__pq_meta_free(&r->meta);
    floe_schema_free(r->owned);
    floe__pq_dctx_free(&r->dctx);
    floe__free(r->rg_first_rows);
    floe__free(r);
}

/* ---- accessors ----------------------------------------------------------------------------- */

const floe__schema *floe__pq_reader_schema(const floe__pq_reader *r) { return r->schema; }

uint64_t floe__pq_reader_num_rows(const floe__pq_reader *r) { return (uint64_t)r->meta.num_rows; }

size_t floe__pq_reader_num_row_groups(const floe__pq_reader *r) { return r->meta.n_rgs; }

floe__pq_row_group floe__pq_reader_row_group(const floe__pq_reader *r, size_t i)
{
    assert(i < r->meta.n_rgs);
    const floe__pq_rgmeta *rg = &r->meta.rgs[i];
    floe__pq_row_group g = {.first_row = r->rg_first_rows[i], .num_rows = (uint64_t)rg->num_rows};
    for (size_t c = 0; c < r->n_cols; c++)
        if (r->cols[c].leaf < rg->n_cols)
            g.compressed += (uint64_t)rg->cols[r->cols[c].leaf].total_compressed;
    return g;
}

/* ---- row groups ------------------------------------------------------------------------------ */

static int broken_error(const floe__pq_reader *r, floe_error *err)
{
    return floe__err_set(err, r->broken, "parquet reader: unusable after an earlier failure");
}

int floe__pq_reader_seek(floe__pq_reader *r, size_t row_group, floe_error *err)
{
    if (r->broken)
        return broken_error(r, err);
    FLOE_RETURN_IF(row_group > r->meta.n_rgs, err, FLOE_EINVAL,
                   "parquet reader: row group %zu of %zu", row_group, r->meta.n_rgs);
    r->rg = row_group;
    r->rg_open = false;
    r->rg_left = 0;
    return FLOE_OK;
}

static int open_rg(floe__pq_reader *r, floe_error *err)
{
    for (size_t i = 0; i < r->n_cols; i++)
        FLOE_FORWARD(floe__pq_col_start(r, &r->cols[i], r->rg, err));
    r->rg_open = true;
    r->rg_first = r->rg_first_rows[r->rg];
    r->rg_left = (uint64_t)r->meta.rgs[r->rg].num_rows;
    return FLOE_OK;
}

/* After a row group's last row: every column must be at its chunk's end. */
static int finish_rg(floe__pq_reader *r, floe_error *err)
{
    for (size_t i = 0; i < r->n_cols; i++) {
        const floe__pq_rcol *c = &r->cols[i];
        FLOE_RETURN_IF(c->at != c->n || c->entries != c->chunk_values, err, FLOE_EFORMAT,
                       "column %s, row group %zu: values left over after its %lld rows",
                       c->path, r->rg, (long long)r->meta.rgs[r->rg].num_rows);
    }
    r->rg_open = false;
    r->rg++;
    return FLOE_OK;
}

/* Open row groups until one has a row to read; *more false at the end. */
static int advance(floe__pq_reader *r, bool *more, floe_error *err)
{
    while (!r->rg_open) {
        if (r->rg >= r->meta.n_rgs) {
            *more = false;
            return FLOE_OK;
        }
        if (r->meta.rgs[r->rg].num_rows == 0) {
            r->rg++;
            continue;
        }
        FLOE_FORWARD(open_rg(r, err));
    }
    *more = true;
    return FLOE_OK;
}

/* Up to max rows of the open row group; finishes it after its last. */
static int read_rows(floe__pq_reader *r, floe__buf *out, size_t *ends, size_t max, size_t *n,
                     floe_error *err)
{
    if (r->flat) {
        *n = 0;
        while (*n < max && r->rg_left > 0) {    /* as many as the batches hold, again */
            size_t k;
            FLOE_FORWARD(floe__pq_assemble_flat(r, out, ends + *n, max - *n, &k, err));
            r->rg_left -= k;
            *n += k;
        }
    } else {
        size_t k = 0;
        while (k < max && r->rg_left > 0) {
            FLOE_FORWARD(floe__pq_assemble_row(r, out, err));
            r->rg_left--;
            ends[k++] = out->len;
        }
        *n = k;
    }
    return r->rg_left == 0 ? finish_rg(r, err) : FLOE_OK;
}

int floe__pq_reader_next_batch(floe__pq_reader *r, floe__buf *rows, size_t *ends, size_t max,
                               size_t *n, uint64_t *first_pos, floe_error *err)
{
    if (r->broken)
        return broken_error(r, err);
    FLOE_RETURN_IF(max == 0, err, FLOE_EINVAL, "floe__pq_reader_next_batch: max is 0");
    size_t start = rows->len;
    bool more = false;
    *n = 0;
    int rc = advance(r, &more, err);
    uint64_t pos = more ? r->rg_first + ((uint64_t)r->meta.rgs[r->rg].num_rows - r->rg_left) : 0;
    size_t got = 0;
    if (rc == FLOE_OK && more)
        rc = read_rows(r, rows, ends, max, &got, err);
    if (rc != FLOE_OK) {
        rows->len = start;
        r->broken = rc;
        return rc;
    }
    *n = got;
    *first_pos = pos;
    return FLOE_OK;
}

int floe__pq_reader_next(floe__pq_reader *r, floe__buf *row, uint64_t *pos, bool *got,
                         floe_error *err)
{
    size_t end, n;
    uint64_t first;
    *got = false;
    FLOE_FORWARD(floe__pq_reader_next_batch(r, row, &end, 1, &n, &first, err));
    if (n) {
        *pos = first;
        *got = true;
    }
    return FLOE_OK;
}
