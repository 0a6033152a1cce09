/*
 * write.c - the writer: consolidated updates into data and delete files,
 * one set per batch (SPEC.md section 6).
 *
 * Batches arrive from the minter in order and stay open until the frontier
 * reaches their upper; updates arrive consolidated, a key's updates
 * together in (time, row) order, and go to the batch whose [lower, upper)
 * holds their time.  Upsert mode gathers one key's updates within one batch
 * (a "group") and hands it to write_upsert.c when the key or the batch
 * changes; append mode writes each update at once as |diff| rows with
 * _diff (+1/-1) and _timestamp (the time, saturated at 2^63-1).  This file
 * owns the batches, their files and sealing.
 */
#include <stdarg.h>
#include <stdio.h>

#include "sink/write_internal.h"

typedef floe__open_batch open_batch;

/* ---- batches ------------------------------------------------------------------- */

static void batch_free(const floe__writer *w, open_batch *b, bool abort_files)
{
    if (!b)
        return;
    if (abort_files) {
        floe__part_writer_abort(b->data);
        floe__part_writer_abort(b->eqdel);
        for (size_t i = 0; i < b->adopted.n; i++)
            floe__fileio_remove(w->cfg->table->io, b->adopted.files[i].path, NULL);
    }
    floe__content_list_clear(&b->adopted);
    floe__delrecs_free(&b->dels);
    floe__writer_fills_free(b);
    floe__kx_free(b->mem);
    if (b->log) {
        floe__kx_log_free(b->log);
        floe__free(b->log);
    }
    floe__free(b);
}

int floe__writer_new(const floe__writer_config *cfg, floe__writer **out, floe_error *err)
{
    floe__writer *w = floe__calloc(1, sizeof *w);
    if (!w)
        return FLOE_OOM(err);
    w->cfg = cfg;
    w->budget.limit = cfg->data_memory;
    floe__buf_init(&w->g_key, 0);
    floe__buf_init(&w->g_rows, 0);
    floe__buf_init(&w->scratch, 0);
    *out = w;
    return FLOE_OK;
}

void floe__writer_free(floe__writer *w)
{
    if (!w)
        return;
    for (open_batch *b = w->head, *next; b; b = next) {
        next = b->next;
        batch_free(w, b, true);
    }
    floe__buf_free(&w->g_key);
    floe__buf_free(&w->g_rows);
    floe__buf_free(&w->scratch);
    floe__arena_free(w->fill_arena);
    floe__free(w->pending);
    floe__free(w->g_items);
    floe__free(w);
}

int floe__writer_add_batch(floe__writer *w, const floe__batch *b, floe_error *err)
{
    if (w->tail && floe__frontier_cmp(w->tail->desc.upper, b->lower) != 0)
        return floe__err_set(err, FLOE_EINTERNAL, "batch descriptions are not contiguous");
    open_batch *ob = floe__calloc(1, sizeof *ob);
    if (!ob)
        return FLOE_OOM(err);
    ob->desc = *b;
    floe__delrecs_init(&ob->dels);
    floe__delrecs_init(&ob->fill_paths);
    floe__buf_init(&ob->fills, 0);
    int rc = w->cfg->upsert && !w->cfg->kx && !b->snapshot ? floe__kx_new(NULL, &ob->mem, err)
                                                           : FLOE_OK;
    if (rc != FLOE_OK) {
        floe__free(ob);
        return rc;
    }
    if (w->cfg->kx) {
        ob->log = floe__malloc(sizeof *ob->log);
        if (!ob->log) {
            floe__free(ob);
            return FLOE_OOM(err);
        }
        floe__kx_log_init(ob->log);
        ob->log->hash_schema = w->cfg->schema_id;
        ob->log->max = w->cfg->kx_log_max;
    }
    if (w->tail)
        w->tail->next = ob;
    else
        w->head = ob;
    w->tail = ob;
    return FLOE_OK;
}

static open_batch *batch_for(const floe__writer *w, uint64_t t)
{
    for (open_batch *b = w->head; b; b = b->next)
        if (t >= b->desc.lower.t && floe__frontier_passed(b->desc.upper, t))
            return b;
    return NULL;
}

bool floe__writer_holds(const floe__writer *w, uint64_t t) { return batch_for(w, t) != NULL; }

int floe__writer_adopt(floe__writer *w, uint64_t t, floe__content_list *files, uint64_t rows,
                       floe_error *err)
{
    open_batch *b = batch_for(w, t);
    FLOE_RETURN_IF(!b || !b->desc.snapshot, err, FLOE_EINTERNAL,
                   "files written in bulk at time %llu, which no snapshot batch holds",
                   (unsigned long long)t);
    FLOE_FORWARD(floe__content_list_take(&b->adopted, files, err));
    b->rows += rows;
    b->unlogged = true;
    w->stats.rows_written += rows;
    return FLOE_OK;
}

/* ---- files -------------------------------------------------------------------------- */

int floe__writer_data_row(floe__writer *w, open_batch *b, const uint8_t *row, size_t len,
                          const char **path, uint64_t *pos, floe_error *err)
{
    if (!b->data)
        FLOE_FORWARD(floe__part_writer_new(w->cfg->table, w->cfg->data_schema, w->cfg->spec,
                                           &w->cfg->file_opts, &w->budget, &b->data, err));
    FLOE_FORWARD(floe__part_writer_write(b->data, row, len, path, pos, err));
    b->rows++;
    w->stats.rows_written++;
    return FLOE_OK;
}

int floe__writer_eq_delete(floe__writer *w, open_batch *b, const uint8_t *key, size_t len,
                           floe_error *err)
{
    if (!b->eqdel)
        FLOE_FORWARD(floe__part_writer_new_deletes(w->cfg->table, w->cfg->eq_schema,
                                                   w->cfg->eq_ids, w->cfg->n_eq_ids,
                                                   w->cfg->spec, &w->cfg->eqdel_opts,
                                                   &w->budget, &b->eqdel, err));
    FLOE_FORWARD(floe__part_writer_write(b->eqdel, key, len, NULL, NULL, err));
    b->eqdels++;
    w->stats.equality_deletes++;
    return FLOE_OK;
}

void floe__writer_warn(floe__writer *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    floe__vtell(w->cfg->warn, w->cfg->warn_ctx, fmt, ap);
    va_end(ap);
}

/* ---- append mode ------------------------------------------------------------------------ */

static uint64_t magnitude(int64_t d) { return d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d; }

/* The row, then _diff (int) and _timestamp (long: the time, saturated at
 * 2^63-1, never wrapped to a negative). */
static int write_append(floe__writer *w, open_batch *b, const floe__upd *u, floe_error *err)
{
    floe__buf_reset(&w->scratch);
    FLOE_FORWARD(floe__buf_reserve(&w->scratch, (size_t)u->row_len + 14, err));
    floe__buf_put_unchecked(&w->scratch, u->row, u->row_len);
    uint8_t tail[14];
    tail[0] = FLOE_SLOT_PRESENT;
    floe__put_le32(tail + 1, u->diff < 0 ? (uint32_t)-1 : 1u);
    tail[5] = FLOE_SLOT_PRESENT;
    floe__put_le64(tail + 6, u->time > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : u->time);
    floe__buf_put_unchecked(&w->scratch, tail, sizeof tail);
    for (uint64_t i = magnitude(u->diff); i > 0; i--)
        FLOE_FORWARD(floe__writer_data_row(w, b, w->scratch.data, w->scratch.len, NULL, NULL,
                                           err));
    return FLOE_OK;
}

/* ---- gathering upsert groups -------------------------------------------------------------- */

static int group_add(floe__writer *w, const floe__upd *u, floe_error *err)
{
    if (w->g_n == w->g_cap) {
        size_t cap = w->g_cap ? w->g_cap * 2 : 8;
        floe__group_item *g = floe__realloc(w->g_items, cap * sizeof *g);
        if (!g)
            return FLOE_OOM(err);
        w->g_items = g;
        w->g_cap = cap;
    }
    floe__group_item *it = &w->g_items[w->g_n++];
    it->row_len = u->row_len;
    it->time = u->time;
    it->diff = u->diff;
    it->row = u->stable ? u->row : NULL;     /* a big row is not copied again */
    it->row_off = w->g_rows.len;
    return u->stable ? FLOE_OK : floe__buf_append(&w->g_rows, u->row, u->row_len, err);
}

/* A key of the whole row: the group is one row's updates. */
static bool same_key(const floe__writer *w, const floe__upd *u)
{
    if (!w->cfg->synthetic_key)
        return u->key_len == w->g_key.len && memcmp(u->key, w->g_key.data, u->key_len) == 0;
    return u->row_len == w->g_key.len && memcmp(u->row, w->g_key.data, u->row_len) == 0;
}

static int end_group(floe__writer *w, floe_error *err)
{
    if (!w->in_group)
        return FLOE_OK;
    w->in_group = false;
    return floe__writer_resolve_group(w, err);
}

int floe__writer_flush(floe__writer *w, floe_error *err)
{
    FLOE_FORWARD(end_group(w, err));
    return floe__writer_fill(w, err);
}

int floe__writer_write(floe__writer *w, const floe__upd *u, floe_error *err)
{
    open_batch *b = batch_for(w, u->time);
    FLOE_RETURN_IF(!b, err, FLOE_EINTERNAL, "no batch holds time %llu",
                   (unsigned long long)u->time);
    if (u->time < b->desc.from)
        return FLOE_OK;                  /* truncated away */
    if (!w->cfg->upsert)
        return write_append(w, b, u, err);
    if (!w->in_group || b != w->g_batch || !same_key(w, u)) {
        FLOE_FORWARD(end_group(w, err));
        w->in_group = true;
        w->g_batch = b;
        w->g_n = 0;
        floe__buf_reset(&w->g_rows);
        floe__buf_reset(&w->g_key);
        if (w->cfg->synthetic_key)
            FLOE_FORWARD(floe__buf_append(&w->g_key, u->row, u->row_len, err));
        else
            FLOE_FORWARD(floe__buf_append(&w->g_key, u->key, u->key_len, err));
    }
    return group_add(w, u, err);
}

/* ---- the end of an input ------------------------------------------------------------- */

int floe__writer_truncate(floe__writer *w, floe__frontier end, floe_error *err)
{
    FLOE_FORWARD(floe__writer_flush(w, err));
    open_batch **link = &w->head, *last = NULL;
    while (*link) {
        open_batch *b = *link;
        if (floe__frontier_cmp(b->desc.lower, end) >= 0) {
            FLOE_RETURN_IF(b->rows || b->posdels || b->eqdels, err, FLOE_EINTERNAL,
                           "a batch past the end of the input holds rows");
            *link = b->next;
            batch_free(w, b, true);
            continue;
        }
        if (floe__frontier_cmp(b->desc.upper, end) > 0)
            b->desc.upper = end;
        last = b;
        link = &b->next;
    }
    w->tail = last;
    return FLOE_OK;
}

/* ---- sealing ------------------------------------------------------------------------- */

void floe__delrecs_init(floe__delrecs *d)
{
    memset(d, 0, sizeof *d);
    floe__buf_init(&d->recs, 0);
}

void floe__delrecs_free(floe__delrecs *d)
{
    floe__buf_free(&d->recs);
    floe__strtab_free(&d->paths);
    floe__delrecs_init(d);
}

int floe__delrecs_path(floe__delrecs *d, const char *path, uint32_t *slot, floe_error *err)
{
    return floe__strtab_intern(&d->paths, path, slot, err);
}

int floe__delrecs_add(floe__delrecs *d, const char *path, uint64_t pos, uint64_t rowhash,
                      const uint8_t *key, uint32_t len, floe_error *err)
{
    uint32_t slot = 0;
    FLOE_FORWARD(floe__delrecs_path(d, path, &slot, err));
    uint8_t head[FLOE__DELETE_HEAD];
    floe__put_le32(head, slot);
    floe__put_le64(head + 4, pos);
    floe__put_le64(head + 12, rowhash);
    floe__put_le32(head + 20, len);
    FLOE_FORWARD(floe__buf_append(&d->recs, head, sizeof head, err));
    return floe__buf_append(&d->recs, key, len, err);
}

int floe__delrecs_set(const floe__delrecs *d, floe__posdel_set **out, floe_error *err)
{
    *out = NULL;
    if (d->recs.len == 0)
        return FLOE_OK;
    floe__posdel_set *set;
    FLOE_FORWARD(floe__posdel_set_new(&set, err));
    int rc = FLOE_OK;
    for (size_t at = 0; rc == FLOE_OK && at < d->recs.len;) {
        const uint8_t *p = d->recs.data + at;
        uint32_t slot = floe__get_le32(p);
        assert(slot == FLOE__DELETE_DROPPED || slot < d->paths.n);
        if (slot != FLOE__DELETE_DROPPED)
            rc = floe__posdel_set_add(set, d->paths.s[slot], floe__get_le64(p + 4), err);
        at += FLOE__DELETE_HEAD + floe__get_le32(p + 20);
    }
    if (rc == FLOE_OK && floe__posdel_set_count(set) == 0) {
        floe__posdel_set_free(set);
        set = NULL;
    }
    if (rc != FLOE_OK) {
        floe__posdel_set_free(set);
        return rc;
    }
    *out = set;
    return FLOE_OK;
}

void floe__sealed_free(floe__sealed *s)
{
    if (!s)
        return;
    floe__content_list_clear(&s->files);
    floe__delrecs_free(&s->dels);
    if (s->kx_log) {
        floe__kx_log_free(s->kx_log);
        floe__free(s->kx_log);
    }
    floe__free(s);
}

static int close_files(open_batch *b, floe__content_list *out, floe_error *err)
{
    floe__part_writer *data = b->data;
    floe__part_writer *eq = b->eqdel;
    b->data = NULL;
    b->eqdel = NULL;
    int rc = data ? floe__part_writer_close(data, out, err) : FLOE_OK;
    if (rc == FLOE_OK)
        rc = floe__content_list_take(out, &b->adopted, err);
    if (eq && rc == FLOE_OK)
        rc = floe__part_writer_close(eq, out, err);
    else if (eq)
        floe__part_writer_abort(eq);
    return rc;
}

/* Move what the batch gathered into the sealed batch. */
static void hand_over(open_batch *b, floe__sealed *s)
{
    s->desc = b->desc;
    s->rows_written = b->rows;
    s->position_deletes = b->posdels;
    s->equality_deletes = b->eqdels;
    s->dels = b->dels;
    floe__delrecs_init(&b->dels);
    s->kx_log = b->log;
    s->unlogged = b->unlogged;
    b->log = NULL;
}

int floe__writer_seal_next(floe__writer *w, floe__frontier f, floe__sealed **out,
                           floe_error *err)
{
    *out = NULL;
    open_batch *b = w->head;
    if (!b || floe__frontier_cmp(b->desc.upper, f) > 0)
        return FLOE_OK;
    FLOE_FORWARD(floe__writer_flush(w, err));
    floe__sealed *s = floe__calloc(1, sizeof *s);
    if (!s)
        return FLOE_OOM(err);
    floe__delrecs_init(&s->dels);
    int rc = close_files(b, &s->files, err);
    hand_over(b, s);
    w->head = b->next;
    if (!w->head)
        w->tail = NULL;
    batch_free(w, b, rc != FLOE_OK);
    if (rc != FLOE_OK) {
        floe__sealed_free(s);
        return rc;
    }
    for (size_t i = 0; i < s->files.n; i++) {
        if (s->files.files[i].content == FLOE_CONTENT_DATA)
            w->stats.data_files++;
        else
            w->stats.delete_files++;
    }
    *out = s;
    return FLOE_OK;
}

void floe__writer_get_stats(const floe__writer *w, floe__writer_stats *out) { *out = w->stats; }

int floe__writer_each_open(floe__writer *w,
                           int (*fn)(void *ctx, floe__delrecs *d, floe_error *err), void *ctx,
                           floe_error *err)
{
    for (open_batch *b = w->head; b; b = b->next)
        FLOE_FORWARD(fn(ctx, &b->dels, err));
    return FLOE_OK;
}
