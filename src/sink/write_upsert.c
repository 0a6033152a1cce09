/*
 * write_upsert.c - one key's updates within one batch, resolved (SPEC.md
 * section 6).
 *
 * The group holds the key's consolidated updates of one batch in (time,
 * row) order.  Time by time, retractions before insertions:
 *
 *   retraction of a row this batch inserted earlier  -> that row is dropped
 *                                                     (it is never written)
 *   retraction of another row                        -> position mode: the
 *       key index gives its row (of an earlier batch, or written by this
 *       batch before: the key's updates of one batch can come in several
 *       closes), which becomes a position delete; equality mode: a row this
 *       batch wrote (the batch's own small index) becomes a position
 *       delete, else an equality delete on the key
 *   insertion                                         -> kept for the end
 *
 * What is left at the end is written to the batch's data file and indexed
 * (the key index, or the batch's own).  Equality deletes apply to earlier
 * snapshots only, position deletes to their own too, so a key updated many
 * times in one batch ends with exactly one row.  With a key of the whole row every copy counts: +2 then
 * -1 leaves one copy.  A retraction by key (floe_sink_retract_key) has an
 * empty row: it takes whichever row the key holds (a survivor of an
 * earlier time of the batch, else the live row), with no "differs"
 * warning.  Checks that only warn (and count): an insertion for
 * a key that is still live (a primary-key violation; not for whole-row
 * keys, where duplicates are legal), a retraction with no live row to
 * take, and (position mode) a retraction whose row differs from the live
 * row it takes.
 */
#include <stdio.h>

#include "sink/write_internal.h"

/* Where the unchanged columns of a partial row come from: a row the
 * batch holds, or a row of a data file. */
typedef struct source {
    const uint8_t *row;                /* NULL: none, or a file's */
    uint32_t len;
    const char *path;                  /* the file (the index's string), or NULL */
    uint64_t pos;
} source;

/* A row the batch inserted and still holds, with its multiplicity; a
 * partial one (still partial once filled from the batch) with the file row
 * its unchanged columns come from. */
typedef struct survivor {
    const uint8_t *row;
    uint32_t len;
    uint64_t count;
    uint64_t time;
    source from;
} survivor;

typedef struct resolving {
    floe__writer *w;
    floe__open_batch *b;
    const uint8_t *key;
    size_t klen;
    survivor *s;
    size_t n, cap;
    bool eq_written;
    source replaced;                   /* the row retracted at the current time */
} resolving;

static const uint8_t *item_row(const floe__writer *w, const floe__group_item *it)
{
    static const uint8_t none[1];
    if (it->row_len == 0)
        return none;                      /* a retraction by key */
    return it->row ? it->row : w->g_rows.data + it->row_off;
}

static uint64_t magnitude(int64_t d) { return d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d; }

/* The key as JSON (cut at 300 bytes), for warnings. */
static const char *key_text(resolving *r)
{
    floe__buf *b = &r->w->scratch;
    floe__buf_reset(b);
    if (floe__datum_to_json(r->w->cfg->eq_schema, r->key, r->klen, b, NULL) != FLOE_OK)
        floe__buf_reset(b);
    if (b->len > 300)
        b->len = 300;
    if (floe__buf_putc(b, 0, NULL) != FLOE_OK)
        return "?";
    return (const char *)b->data;
}

static void pk_violation(resolving *r, uint64_t time)
{
    r->w->stats.pk_violations++;
    floe__writer_warn(r->w, "primary key violation: key %s inserted at time %llu while it is "
                      "live", key_text(r), (unsigned long long)time);
}

/* ---- retractions ----------------------------------------------------------------------- */

/* Drop one copy of a row the batch holds: the same row, else (a declared
 * key) any row of the key. */
static bool cancel_survivor(resolving *r, const uint8_t *row, uint32_t len)
{
    size_t pick = r->n;
    for (size_t i = 0; i < r->n; i++) {
        if (!r->s[i].count)
            continue;
        bool same = r->s[i].len == len && memcmp(r->s[i].row, row, len) == 0;
        if (same || (pick == r->n && !r->w->cfg->synthetic_key))
            pick = i;
        if (same)
            break;
    }
    if (pick == r->n)
        return false;
    r->s[pick].count--;
    r->replaced = (source){r->s[pick].row, r->s[pick].len, r->s[pick].from.path,
                           r->s[pick].from.pos};
    return true;
}

/* Where the batch's rows are known: the key index, or its own. */
static floe__kx *index_of(const resolving *r)
{
    return r->w->cfg->kx ? r->w->cfg->kx : r->b->mem;
}

static int record_delete(resolving *r, floe__kx_loc loc, floe_error *err)
{
    const char *path = floe__kx_file_path(index_of(r), loc.file);
    FLOE_FORWARD(floe__delrecs_add(&r->b->dels, path, loc.pos, loc.rowhash, r->key,
                                   (uint32_t)r->klen, err));
    r->b->posdels++;
    r->w->stats.position_deletes++;
    return FLOE_OK;
}

/* One copy of a row of an earlier batch goes: a position delete of the
 * index's row (position mode) or an equality delete on the key. */
static int retract_older(resolving *r, const uint8_t *row, uint32_t len, uint64_t time,
                         floe_error *err)
{
    floe__writer *w = r->w;
    uint64_t rh = floe__hash64(row, len, 0);
    bool found = false;
    floe__kx_loc loc;
    FLOE_FORWARD(floe__kx_take(index_of(r), r->key, r->klen, rh, &found, &loc, err));
    if (!found && !w->cfg->kx) {          /* equality mode: rows of earlier snapshots */
        if (!r->eq_written)
            FLOE_FORWARD(floe__writer_eq_delete(w, r->b, r->key, r->klen, err));
        r->eq_written = true;
        return FLOE_OK;
    }
    if (!found) {
        w->stats.retract_missing++;
        if (!w->cfg->absent_keys_expected)
            floe__writer_warn(w, "a retraction of key %s at time %llu has no live row to "
                              "retract; ignored", key_text(r), (unsigned long long)time);
        return FLOE_OK;
    }
    /* len 0: by key, any row; a row hashed in another schema has other bytes */
    if (len && loc.rowhash && loc.rowhash != rh &&
        floe__kx_file_schema(index_of(r), loc.file) == w->cfg->schema_id) {
        w->stats.retract_mismatch++;
        floe__writer_warn(w, "a retraction of key %s at time %llu names a row that differs "
                          "from the key's live row; the live row is deleted", key_text(r),
                          (unsigned long long)time);
    }
    r->replaced = (source){NULL, 0, floe__kx_file_path(index_of(r), loc.file), loc.pos};
    return record_delete(r, loc, err);
}

static int retract(resolving *r, const floe__group_item *it, floe_error *err)
{
    const uint8_t *row = item_row(r->w, it);
    uint32_t len = it->row_len;
    if (floe__partial_is(row, len))
        len = 0;                          /* the row it stands for: the key's */
    for (uint64_t n = magnitude(it->diff); n > 0; n--) {
        if (cancel_survivor(r, row, len))
            continue;
        if (r->b->desc.snapshot) {
            if (!r->w->warned_snapshot_retraction)
                floe__writer_warn(r->w, "retractions in the snapshot batch (time %llu) have "
                                  "nothing to retract; ignored", (unsigned long long)it->time);
            r->w->warned_snapshot_retraction = true;
            continue;
        }
        FLOE_FORWARD(retract_older(r, row, len, it->time, err));
    }
    return FLOE_OK;
}

/* ---- insertions -------------------------------------------------------------------------- */

/* A partial insertion takes its unchanged columns from the row retracted
 * at its time: now when the batch holds that row, else later from its data
 * file (write_fill.c). */
static int fill_from_batch(resolving *r, survivor *s, floe_error *err)
{
    floe__writer *w = r->w;
    const source *from = &r->replaced;
    if (!from->row && !from->path)
        return floe__err_set(err, FLOE_EINPUT, "an update of key %s at time %llu leaves "
                             "columns unchanged, but the key has no row to take them from",
                             key_text(r), (unsigned long long)s->time);
    if (!from->row) {
        s->from = *from;
        return FLOE_OK;
    }
    floe__partial p;
    FLOE_FORWARD(floe__partial_view(s->row, s->len, &p, err));
    floe__buf *out = &w->scratch;
    floe__buf_reset(out);
    FLOE_FORWARD(floe__partial_fill(w->cfg->data_schema, &p, from->row, from->len, out, err));
    FLOE_RETURN_IF(out->len > UINT32_MAX, err, FLOE_ELIMIT, "a row grew too large");
    if (!w->fill_arena && !(w->fill_arena = floe__arena_new(1 << 16)))
        return FLOE_OOM(err);
    uint8_t *copy = floe__arena_alloc(w->fill_arena, out->len);
    if (!copy)
        return FLOE_OOM(err);
    memcpy(copy, out->data, out->len);
    s->row = copy;
    s->len = (uint32_t)out->len;
    if (floe__partial_is(copy, out->len))     /* the rest from the row's own source */
        s->from = (source){NULL, 0, from->path, from->pos};
    return FLOE_OK;
}

/* An insertion while the group still holds a row of the key is a
 * primary-key violation (a key live from an earlier group is found when
 * the first row is indexed: write_survivors). */
static int insert(resolving *r, const floe__group_item *it, floe_error *err)
{
    floe__writer *w = r->w;
    uint64_t n = magnitude(it->diff);
    if (!w->cfg->synthetic_key) {
        bool live = n > 1;
        for (size_t i = 0; i < r->n && !live; i++)
            live = r->s[i].count > 0;
        if (live)
            pk_violation(r, it->time);
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 4;
        survivor *s = floe__realloc(r->s, cap * sizeof *s);
        if (!s)
            return FLOE_OOM(err);
        r->s = s;
        r->cap = cap;
    }
    survivor *s = &r->s[r->n];
    *s = (survivor){item_row(w, it), it->row_len, n, it->time, {0}};
    if (floe__partial_is(s->row, s->len))
        FLOE_FORWARD(fill_from_batch(r, s, err));
    r->n++;
    return FLOE_OK;
}

/* ---- the rows that are left --------------------------------------------------------------- */

int floe__writer_index_row(floe__writer *w, floe__open_batch *b, const uint8_t *key,
                           size_t klen, const char *path, uint64_t pos, const uint8_t *row,
                           size_t len, bool *was_live, floe_error *err)
{
    floe__kx *kx = w->cfg->kx ? w->cfg->kx : b->mem;
    uint32_t id;
    FLOE_FORWARD(floe__kx_file(kx, path, &id, err));
    floe__kx_file_set_committed(kx, id, false);
    floe__kx_file_set_schema(kx, id, w->cfg->schema_id);
    uint64_t rh = floe__hash64(row, len, 0);
    FLOE_FORWARD(floe__kx_insert_checked(kx, key, klen, (floe__kx_loc){id, pos, rh}, was_live,
                                         err));
    return b->log ? floe__kx_log_insert(b->log, key, klen, path, pos, rh, err) : FLOE_OK;
}

/* Index a written row; the group's first also tells whether the key was
 * live before (not in the snapshot batch, which starts from nothing). */
static int index_row(resolving *r, const char *path, uint64_t pos, const survivor *s, bool first,
                     floe_error *err)
{
    bool check = first && !r->w->cfg->synthetic_key && !r->b->desc.snapshot, was_live = false;
    FLOE_FORWARD(floe__writer_index_row(r->w, r->b, r->key, r->klen, path, pos, s->row, s->len,
                                        check ? &was_live : NULL, err));
    if (was_live)
        pk_violation(r, s->time);
    return FLOE_OK;
}

static int write_survivors(resolving *r, floe_error *err)
{
    bool first = true;
    for (size_t i = 0; i < r->n; i++) {
        if (r->s[i].count && floe__partial_is(r->s[i].row, r->s[i].len)) {
            FLOE_RETURN_IF(r->s[i].count > 1 || !r->s[i].from.path, err, FLOE_EINTERNAL,
                           "a partial row without its source");
            FLOE_FORWARD(floe__writer_defer_fill(r->w, r->b, r->key, r->klen, r->s[i].row,
                                                 r->s[i].len, r->s[i].from.path,
                                                 r->s[i].from.pos, err));
            continue;
        }
        for (uint64_t c = r->s[i].count; c > 0; c--) {
            const char *path = NULL;
            uint64_t pos = 0;
            FLOE_FORWARD(floe__writer_data_row(r->w, r->b, r->s[i].row, r->s[i].len, &path, &pos,
                                               err));
            if (index_of(r))
                FLOE_FORWARD(index_row(r, path, pos, &r->s[i], first, err));
            first = false;
        }
    }
    return FLOE_OK;
}

/* Items [from, to) share one time: their retractions, then insertions. */
static int resolve_time(resolving *r, size_t from, size_t to, floe_error *err)
{
    r->replaced = (source){0};
    for (size_t i = from; i < to; i++)
        if (r->w->g_items[i].diff < 0)
            FLOE_FORWARD(retract(r, &r->w->g_items[i], err));
    for (size_t i = from; i < to; i++)
        if (r->w->g_items[i].diff > 0)
            FLOE_FORWARD(insert(r, &r->w->g_items[i], err));
    return FLOE_OK;
}

int floe__writer_resolve_group(floe__writer *w, floe_error *err)
{
    if (floe__writer_fill_pending(w, w->g_key.data, w->g_key.len))
        FLOE_FORWARD(floe__writer_fill(w, err));      /* the key's row first */
    resolving r = {.w = w, .b = w->g_batch, .key = w->g_key.data, .klen = w->g_key.len};
    int rc = FLOE_OK;
    for (size_t i = 0, j; rc == FLOE_OK && i < w->g_n; i = j) {
        for (j = i + 1; j < w->g_n && w->g_items[j].time == w->g_items[i].time; j++)
            ;
        rc = resolve_time(&r, i, j, err);
    }
    if (rc == FLOE_OK)
        rc = write_survivors(&r, err);
    floe__free(r.s);
    if (w->fill_arena)
        floe__arena_reset(w->fill_arena);
    return rc;
}
