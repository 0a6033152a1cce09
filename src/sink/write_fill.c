/*
 * write_fill.c - partial rows (partial.c) whose unchanged columns are in a
 * data file: the row their insertion replaces was not held by the batch,
 * so the key index gave its file and position.  write_upsert.c defers
 * them here; at the end of each round of updates (floe__writer_flush)
 * each open batch's are sorted by file and position, each file is read
 * once for the columns its rows need (row groups without one are
 * skipped), and the filled rows are written to the batch's data file and
 * indexed like the others.  A source row in a file a batch is still
 * writing (a key updated in two rounds of one batch) closes that file
 * first, so it can be read.
 *
 * A key with a row waiting that comes again in a later group (a close with
 * spilled runs brings updates in time order, so one key can come in
 * several groups of one round, in this batch or the next) fills every
 * waiting row first: its row must be in the key index before the group
 * looks there.
 *
 * Record in b->fills: u32 path slot (b->fill_paths), u64 pos, u32 key
 * length, u32 row length, key, row.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "sink/write_internal.h"

#define HEAD 20

/* ---- the keys waiting ---------------------------------------------------------------------- */

static uint64_t key_hash(const uint8_t *key, size_t klen)
{
    uint64_t h = floe__hash64(key, klen, 0x70656e64);
    return h ? h : 1;
}

static void pending_put(uint64_t *slots, size_t cap, uint64_t h)
{
    size_t i = (size_t)h & (cap - 1);
    while (slots[i] && slots[i] != h)
        i = (i + 1) & (cap - 1);
    slots[i] = h;
}

static int pending_add(floe__writer *w, const uint8_t *key, size_t klen, floe_error *err)
{
    if ((w->pending_n + 1) * 2 > w->pending_cap) {
        size_t cap = w->pending_cap ? w->pending_cap * 2 : 64;
        uint64_t *slots = floe__calloc(cap, sizeof *slots);
        if (!slots)
            return FLOE_OOM(err);
        for (size_t i = 0; i < w->pending_cap; i++)
            if (w->pending[i])
                pending_put(slots, cap, w->pending[i]);
        floe__free(w->pending);
        w->pending = slots;
        w->pending_cap = cap;
    }
    pending_put(w->pending, w->pending_cap, key_hash(key, klen));
    w->pending_n++;                    /* counts a repeated key twice: only sizes the table */
    return FLOE_OK;
}

bool floe__writer_fill_pending(const floe__writer *w, const uint8_t *key, size_t klen)
{
    if (!w->pending_n)
        return false;
    uint64_t h = key_hash(key, klen);
    for (size_t i = (size_t)h & (w->pending_cap - 1); w->pending[i];
         i = (i + 1) & (w->pending_cap - 1))
        if (w->pending[i] == h)
            return true;               /* or a collision: filling early is only earlier */
    return false;
}

/* ---- deferring -------------------------------------------------------------------------- */

int floe__writer_defer_fill(floe__writer *w, floe__open_batch *b, const uint8_t *key,
                            size_t klen, const uint8_t *row, size_t len, const char *path,
                            uint64_t pos, floe_error *err)
{
    FLOE_FORWARD(pending_add(w, key, klen, err));
    uint32_t slot;
    FLOE_FORWARD(floe__delrecs_path(&b->fill_paths, path, &slot, err));
    uint8_t head[HEAD];
    floe__put_le32(head, slot);
    floe__put_le64(head + 4, pos);
    floe__put_le32(head + 12, (uint32_t)klen);
    floe__put_le32(head + 16, (uint32_t)len);
    FLOE_FORWARD(floe__buf_append(&b->fills, head, HEAD, err));
    FLOE_FORWARD(floe__buf_append(&b->fills, key, klen, err));
    return floe__buf_append(&b->fills, row, len, err);
}

void floe__writer_fills_free(floe__open_batch *b)
{
    floe__buf_free(&b->fills);
    floe__delrecs_free(&b->fill_paths);
}

typedef struct rec {
    uint32_t slot;
    uint64_t pos;
    const uint8_t *key, *row;
    uint32_t klen, rlen;
} rec;

static int cmp_rec(const void *x, const void *y)
{
    const rec *a = x, *b = y;
    if (a->slot != b->slot)
        return a->slot < b->slot ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

/* A file some batch is still writing is closed, so it can be read. */
static int readable(floe__writer *w, const char *path, floe_error *err)
{
    for (floe__open_batch *b = w->head; b; b = b->next)
        if (b->data)
            FLOE_FORWARD(floe__part_writer_roll_path(b->data, path, err));
    return FLOE_OK;
}

/* The columns the records [r, end) need, as a projection of the data schema. */
static int projection(const floe__schema *s, const rec *r, const rec *end, floe__schema **out,
                      floe_error *err)
{
    uint32_t n = s->root.n_children, k = 0;
    const char **names = floe__calloc(n ? n : 1, sizeof *names);
    if (!names)
        return FLOE_OOM(err);
    int rc = FLOE_OK;
    for (uint32_t c = 0; rc == FLOE_OK && c < n; c++) {
        bool need = false;
        for (const rec *q = r; !need && q < end; q++) {
            floe__partial p;
            rc = floe__partial_view(q->row, q->rlen, &p, err);
            need = rc == FLOE_OK && floe__partial_unchanged(&p, c);
        }
        if (need)
            names[k++] = s->root.children[c].name;
    }
    if (rc == FLOE_OK)
        rc = floe__schema_project(s, names, k, out, err);
    floe__free(names);
    return rc;
}

/* The row at `pos` of the reader (positions asked in increasing order). */
static int row_at(floe__pq_reader *pq, uint64_t pos, uint64_t *next, floe__buf *row,
                  floe_error *err)
{
    size_t groups = floe__pq_reader_num_row_groups(pq);
    for (size_t g = 0; g < groups; g++) {
        floe__pq_row_group rg = floe__pq_reader_row_group(pq, g);
        if (pos < rg.first_row || pos >= rg.first_row + rg.num_rows)
            continue;
        if (*next > pos || *next < rg.first_row) {
            FLOE_FORWARD(floe__pq_reader_seek(pq, g, err));
            *next = rg.first_row;
        }
        break;
    }
    for (;;) {
        uint64_t at = 0;
        bool got = false;
        floe__buf_reset(row);
        FLOE_FORWARD(floe__pq_reader_next(pq, row, &at, &got, err));
        FLOE_RETURN_IF(!got, err, FLOE_EINCOMPATIBLE, "the file has no row %" PRIu64
                       " (a row the key index names)", pos);
        *next = at + 1;
        if (at == pos)
            return FLOE_OK;
    }
}

/* The records [r, end) of one file, filled and written into batch b. */
static int fill_file(floe__writer *w, floe__open_batch *b, const char *path, const rec *r,
                     const rec *end, floe_error *err)
{
    FLOE_FORWARD(readable(w, path, err));
    const floe__schema *s = w->cfg->data_schema;
    floe__schema *proj = NULL;
    FLOE_FORWARD(projection(s, r, end, &proj, err));
    floe__file_reader *fr = NULL;
    int rc = floe__file_reader_open(w->cfg->table->io, path, proj, &fr, err);
    floe__buf row, out;
    floe__buf_init(&row, 0);
    floe__buf_init(&out, 0);
    uint64_t next = 0;
    for (const rec *q = r; rc == FLOE_OK && q < end; q++) {
        floe__partial p;
        rc = floe__partial_view(q->row, q->rlen, &p, err);
        if (rc == FLOE_OK && (q == r || q->pos != q[-1].pos))
            rc = row_at(floe__file_reader_pq(fr), q->pos, &next, &row, err);
        floe__buf_reset(&out);
        if (rc == FLOE_OK)
            rc = floe__partial_fill_projected(s, proj, &p, row.data, row.len, &out, err);
        const char *to = NULL;
        uint64_t pos = 0;
        if (rc == FLOE_OK)
            rc = floe__writer_data_row(w, b, out.data, out.len, &to, &pos, err);
        if (rc == FLOE_OK)
            rc = floe__writer_index_row(w, b, q->key, q->klen, to, pos, out.data, out.len, NULL,
                                        err);
        if (rc == FLOE_OK)
            w->stats.rows_filled++;
    }
    if (rc != FLOE_OK)
        rc = floe__err_wrap(err, rc, "filling the unchanged columns of %zu updated rows from "
                            "%s", (size_t)(end - r), path);
    w->stats.fill_reads++;
    floe__buf_free(&row);
    floe__buf_free(&out);
    floe__file_reader_free(fr);
    floe_schema_free(proj);
    return rc;
}

static int fill_batch(floe__writer *w, floe__open_batch *b, floe_error *err)
{
    size_t n = 0;
    for (size_t at = 0; at < b->fills.len; n++)
        at += HEAD + floe__get_le32(b->fills.data + at + 12) +
              floe__get_le32(b->fills.data + at + 16);
    rec *v = floe__calloc(n, sizeof *v);
    if (!v)
        return FLOE_OOM(err);
    for (size_t i = 0, at = 0; i < n; i++) {
        const uint8_t *p = b->fills.data + at;
        v[i] = (rec){floe__get_le32(p), floe__get_le64(p + 4), p + HEAD, NULL,
                     floe__get_le32(p + 12), floe__get_le32(p + 16)};
        v[i].row = v[i].key + v[i].klen;
        at += HEAD + v[i].klen + v[i].rlen;
    }
    qsort(v, n, sizeof *v, cmp_rec);
    int rc = FLOE_OK;
    for (size_t i = 0, j; rc == FLOE_OK && i < n; i = j) {
        for (j = i + 1; j < n && v[j].slot == v[i].slot; j++)
            ;
        rc = fill_file(w, b, b->fill_paths.paths.s[v[i].slot], v + i, v + j, err);
    }
    floe__free(v);
    return rc;
}

int floe__writer_fill(floe__writer *w, floe_error *err)
{
    if (w->pending_n)
        memset(w->pending, 0, w->pending_cap * sizeof *w->pending);
    w->pending_n = 0;
    for (floe__open_batch *b = w->head; b; b = b->next) {
        if (!b->fills.len)
            continue;
        FLOE_FORWARD(fill_batch(w, b, err));
        floe__buf_reset(&b->fills);
        floe__delrecs_free(&b->fill_paths);
    }
    return FLOE_OK;
}
