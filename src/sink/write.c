/*
 * write.c - the writer: consolidated updates into data and delete files,
 * one set per batch (SPEC.md section 6).
 *
 * Batches arrive from the minter in order and stay open until the frontier
 * reaches their upper; updates arrive consolidated in (time, key, row)
 * order and go to the batch whose [lower, upper) holds their time.  In
 * upsert mode the updates of one (key, time) form a diff pair: the writer
 * gathers them (the "group") and, when the next key or time starts, emits
 * the retractions first, then the insertions:
 *
 *   retraction, key inserted earlier in this batch -> position delete
 *   retraction, otherwise                           -> equality delete
 *   insertion                                       -> data row, remembered
 *
 * Equality deletes apply to data of lower sequence numbers and position
 * deletes to data of the same or lower, so a key updated several times in
 * one batch ends with exactly one live row.  The snapshot batch only
 * inserts.  Append mode writes |diff| rows per update with _diff and
 * _timestamp appended.
 */
#include <stdio.h>

#include "sink/sink_internal.h"

typedef struct open_batch {
    floe__batch desc;
    floe__file_writer *data, *eqdel;
    floe__posdel_writer *posdel;
    floe__keymem *mem;            /* upsert, not the snapshot batch */
    char **paths;                 /* data file paths, indexed by floe__keypos.file */
    const char *last_path;        /* the writer's pointer for paths[n_paths-1] */
    size_t n_paths;
    uint64_t rows, posdels, eqdels;
    struct open_batch *next;
} open_batch;

typedef struct group_item {
    const uint8_t *row;           /* the stash's bytes (stable), or NULL: copied */
    size_t row_off;               /* copied: the offset in g_rows */
    uint32_t row_len;
    int64_t diff;
} group_item;

struct floe__writer {
    const floe__writer_config *cfg;
    open_batch *head, *tail;      /* open batches, oldest first */
    /* the (time, key) group being gathered */
    bool in_group;
    uint64_t g_time;
    floe__buf g_key, g_rows, scratch;
    group_item *g_items;
    size_t g_n, g_cap;
    floe__writer_stats stats;
    bool warned_snapshot_retraction;
};

/* ---- batches ------------------------------------------------------------------- */

static void batch_free(open_batch *b, bool abort_files)
{
    if (!b)
        return;
    if (abort_files) {
        floe__file_writer_abort(b->data);
        floe__file_writer_abort(b->eqdel);
        floe__posdel_writer_abort(b->posdel);
    }
    floe__keymem_free(b->mem);
    for (size_t i = 0; i < b->n_paths; i++)
        floe__free(b->paths[i]);
    floe__free(b->paths);
    floe__free(b);
}

int floe__writer_new(const floe__writer_config *cfg, floe__writer **out, floe_error *err)
{
    floe__writer *w = floe__calloc(1, sizeof *w);
    if (!w)
        return FLOE_OOM(err);
    w->cfg = cfg;
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
        batch_free(b, true);
    }
    floe__buf_free(&w->g_key);
    floe__buf_free(&w->g_rows);
    floe__buf_free(&w->scratch);
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
    if (w->cfg->upsert && !b->snapshot) {
        int rc = floe__keymem_new(&ob->mem, err);
        if (rc != FLOE_OK) {
            floe__free(ob);
            return rc;
        }
    }
    if (w->tail)
        w->tail->next = ob;
    else
        w->head = ob;
    w->tail = ob;
    return FLOE_OK;
}

static open_batch *batch_for(floe__writer *w, uint64_t t)
{
    for (open_batch *b = w->head; b; b = b->next)
        if (t >= b->desc.lower.t && floe__frontier_passed(b->desc.upper, t))
            return b;
    return NULL;
}

/* ---- writing rows ------------------------------------------------------------------ */

static int write_data(floe__writer *w, open_batch *b, const uint8_t *row, size_t len,
                      floe__keypos *at, floe_error *err)
{
    if (!b->data)
        FLOE_FORWARD(floe__file_writer_new(w->cfg->table, FLOE_CONTENT_DATA,
                                           w->cfg->data_schema, NULL, 0, &w->cfg->file_opts,
                                           &b->data, err));
    const char *path = NULL;
    uint64_t pos = 0;
    FLOE_FORWARD(floe__file_writer_write(b->data, row, len, &path, &pos, err));
    if (path != b->last_path) {
        char **p = floe__realloc(b->paths, (b->n_paths + 1) * sizeof *p);
        if (!p)
            return FLOE_OOM(err);
        b->paths = p;
        if (!(b->paths[b->n_paths] = floe__strdup(path)))
            return FLOE_OOM(err);
        b->n_paths++;
        b->last_path = path;
    }
    at->file = (uint32_t)(b->n_paths - 1);
    at->pos = pos;
    b->rows++;
    w->stats.rows_written++;
    return FLOE_OK;
}

static int write_eqdel(floe__writer *w, open_batch *b, const uint8_t *key, size_t len,
                       floe_error *err)
{
    if (!b->eqdel)
        FLOE_FORWARD(floe__file_writer_new(w->cfg->table, FLOE_CONTENT_EQUALITY_DELETES,
                                           w->cfg->eq_schema, w->cfg->eq_ids, w->cfg->n_eq_ids,
                                           &w->cfg->file_opts, &b->eqdel, err));
    FLOE_FORWARD(floe__file_writer_write(b->eqdel, key, len, NULL, NULL, err));
    b->eqdels++;
    w->stats.equality_deletes++;
    return FLOE_OK;
}

static int write_posdel(floe__writer *w, open_batch *b, floe__keypos at, floe_error *err)
{
    if (!b->posdel)
        FLOE_FORWARD(floe__posdel_writer_new(w->cfg->table, &w->cfg->file_opts, &b->posdel,
                                             err));
    FLOE_FORWARD(floe__posdel_add(b->posdel, b->paths[at.file], at.pos, err));
    b->posdels++;
    w->stats.position_deletes++;
    return FLOE_OK;
}

static uint64_t magnitude(int64_t d) { return d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d; }

/* Append mode: the row, then _diff (int) and _timestamp (long: the time,
 * saturated at 2^63-1, never wrapped to a negative). */
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
    floe__keypos at;
    for (uint64_t i = magnitude(u->diff); i > 0; i--)
        FLOE_FORWARD(write_data(w, b, w->scratch.data, w->scratch.len, &at, err));
    return FLOE_OK;
}

/* ---- upsert groups ------------------------------------------------------------------ */

static void warn(floe__writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(floe__writer *w, const char *fmt, ...)
{
    if (!w->cfg->warn)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    w->cfg->warn(w->cfg->warn_ctx, msg);
}

static const uint8_t *item_row(const floe__writer *w, const group_item *it)
{
    return it->row ? it->row : w->g_rows.data + it->row_off;
}

/* The group's key bytes: the key columns, or the whole row for a synthetic key. */
static const uint8_t *group_key(const floe__writer *w, size_t *len)
{
    if (!w->cfg->synthetic_key) {
        *len = w->g_key.len;
        return w->g_key.data;
    }
    *len = w->g_items[0].row_len;
    return item_row(w, &w->g_items[0]);
}

static int emit_retractions(floe__writer *w, open_batch *b, const uint8_t *key, size_t klen,
                            floe_error *err)
{
    bool eq_written = false;
    for (size_t i = 0; i < w->g_n; i++) {
        if (w->g_items[i].diff > 0)
            continue;
        for (uint64_t n = magnitude(w->g_items[i].diff); n > 0; n--) {
            floe__keypos at;
            if (floe__keymem_take(b->mem, key, klen, &at))
                FLOE_FORWARD(write_posdel(w, b, at, err));
            else if (!eq_written) {
                FLOE_FORWARD(write_eqdel(w, b, key, klen, err));
                eq_written = true;
            }
        }
    }
    return FLOE_OK;
}

static int emit_insertions(floe__writer *w, open_batch *b, const uint8_t *key, size_t klen,
                           floe_error *err)
{
    uint64_t inserted = 0;
    for (size_t i = 0; i < w->g_n; i++) {
        if (w->g_items[i].diff < 0)
            continue;
        const uint8_t *row = item_row(w, &w->g_items[i]);
        for (uint64_t n = magnitude(w->g_items[i].diff); n > 0; n--, inserted++) {
            floe__keypos at;
            FLOE_FORWARD(write_data(w, b, row, w->g_items[i].row_len, &at, err));
            if (b->mem)
                FLOE_FORWARD(floe__keymem_put(b->mem, key, klen, at, err));
        }
    }
    if (inserted > 1 && !w->cfg->synthetic_key) {
        w->stats.pk_violations++;
        floe__buf_reset(&w->scratch);
        if (floe__datum_to_json(w->cfg->eq_schema, key, klen, &w->scratch, NULL) != FLOE_OK)
            floe__buf_reset(&w->scratch);
        warn(w, "primary key violation: %llu rows inserted for key %.*s at time %llu",
             (unsigned long long)inserted, (int)(w->scratch.len > 300 ? 300 : w->scratch.len),
             (const char *)w->scratch.data, (unsigned long long)w->g_time);
    }
    return FLOE_OK;
}

static int flush_group(floe__writer *w, floe_error *err)
{
    if (!w->in_group)
        return FLOE_OK;
    w->in_group = false;
    open_batch *b = batch_for(w, w->g_time);
    FLOE_RETURN_IF(!b, err, FLOE_EINTERNAL, "no batch holds time %llu",
                   (unsigned long long)w->g_time);
    size_t klen;
    const uint8_t *key = group_key(w, &klen);
    if (b->desc.snapshot) {
        for (size_t i = 0; i < w->g_n; i++) {
            if (w->g_items[i].diff < 0 && !w->warned_snapshot_retraction) {
                w->warned_snapshot_retraction = true;
                warn(w, "retractions in the snapshot batch (time %llu) have nothing to retract; "
                        "ignored", (unsigned long long)w->g_time);
            }
        }
    } else {
        FLOE_FORWARD(emit_retractions(w, b, key, klen, err));
    }
    return emit_insertions(w, b, key, klen, err);
}

static int group_add(floe__writer *w, const floe__upd *u, floe_error *err)
{
    if (w->g_n == w->g_cap) {
        size_t cap = w->g_cap ? w->g_cap * 2 : 8;
        group_item *g = floe__realloc(w->g_items, cap * sizeof *g);
        if (!g)
            return FLOE_OOM(err);
        w->g_items = g;
        w->g_cap = cap;
    }
    group_item *it = &w->g_items[w->g_n++];
    it->row_len = u->row_len;
    it->diff = u->diff;
    it->row = u->stable ? u->row : NULL;     /* a big row is not copied again */
    it->row_off = w->g_rows.len;
    return u->stable ? FLOE_OK : floe__buf_append(&w->g_rows, u->row, u->row_len, err);
}

static bool same_group(const floe__writer *w, const floe__upd *u)
{
    if (!w->in_group || u->time != w->g_time)
        return false;
    if (w->cfg->synthetic_key)
        return false;          /* consolidation already merged equal rows */
    return u->key_len == w->g_key.len && memcmp(u->key, w->g_key.data, u->key_len) == 0;
}

int floe__writer_write(floe__writer *w, const floe__upd *u, floe_error *err)
{
    if (!w->cfg->upsert) {
        open_batch *b = batch_for(w, u->time);
        FLOE_RETURN_IF(!b, err, FLOE_EINTERNAL, "no batch holds time %llu",
                       (unsigned long long)u->time);
        return write_append(w, b, u, err);
    }
    if (!same_group(w, u)) {
        FLOE_FORWARD(flush_group(w, err));
        w->in_group = true;
        w->g_time = u->time;
        w->g_n = 0;
        floe__buf_reset(&w->g_rows);
        floe__buf_reset(&w->g_key);
        FLOE_FORWARD(floe__buf_append(&w->g_key, u->key, u->key_len, err));
    }
    return group_add(w, u, err);
}

int floe__writer_flush(floe__writer *w, floe_error *err)
{
    return flush_group(w, err);
}

/* ---- the end of an input ------------------------------------------------------------- */

int floe__writer_truncate(floe__writer *w, floe__frontier end, floe_error *err)
{
    FLOE_FORWARD(flush_group(w, err));
    open_batch **link = &w->head, *last = NULL;
    while (*link) {
        open_batch *b = *link;
        if (floe__frontier_cmp(b->desc.lower, end) >= 0) {
            FLOE_RETURN_IF(b->rows || b->posdels || b->eqdels, err, FLOE_EINTERNAL,
                           "a batch past the end of the input holds rows");
            *link = b->next;
            batch_free(b, true);
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

void floe__sealed_free(floe__sealed *s)
{
    if (!s)
        return;
    floe__content_list_clear(&s->files);
    floe__free(s);
}

static int close_files(open_batch *b, floe__content_list *out, floe_error *err)
{
    int rc = FLOE_OK;
    floe__file_writer *data = b->data, *eq = b->eqdel;
    floe__posdel_writer *pd = b->posdel;
    b->data = b->eqdel = NULL;
    b->posdel = NULL;
    if (data)
        rc = floe__file_writer_close(data, out, err);
    if (eq) {
        if (rc == FLOE_OK)
            rc = floe__file_writer_close(eq, out, err);
        else
            floe__file_writer_abort(eq);
    }
    if (pd) {
        if (rc == FLOE_OK)
            rc = floe__posdel_writer_close(pd, out, err);
        else
            floe__posdel_writer_abort(pd);
    }
    return rc;
}

int floe__writer_seal_next(floe__writer *w, floe__frontier f, floe__sealed **out,
                           floe_error *err)
{
    *out = NULL;
    open_batch *b = w->head;
    if (!b || floe__frontier_cmp(b->desc.upper, f) > 0)
        return FLOE_OK;
    FLOE_FORWARD(flush_group(w, err));
    floe__sealed *s = floe__calloc(1, sizeof *s);
    if (!s)
        return FLOE_OOM(err);
    s->desc = b->desc;
    s->rows_written = b->rows;
    s->position_deletes = b->posdels;
    s->equality_deletes = b->eqdels;
    int rc = close_files(b, &s->files, err);
    w->head = b->next;
    if (!w->head)
        w->tail = NULL;
    batch_free(b, rc != FLOE_OK);
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

void floe__writer_get_stats(const floe__writer *w, floe__writer_stats *out)
{
    *out = w->stats;
    out->keys_remembered = out->keymem_bytes = 0;
    for (const open_batch *b = w->head; b; b = b->next) {
        if (b->mem) {
            out->keys_remembered += floe__keymem_count(b->mem);
            out->keymem_bytes += floe__keymem_bytes(b->mem);
        }
    }
}
