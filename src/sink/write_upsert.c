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

/* A row the batch inserted and still holds, with its multiplicity. */
typedef struct survivor {
    const uint8_t *row;
    uint32_t len;
    uint64_t count;
    uint64_t time;
} survivor;

typedef struct resolving {
    floe__writer *w;
    floe__open_batch *b;
    const uint8_t *key;
    size_t klen;
    survivor *s;
    size_t n, cap;
    bool eq_written;
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
        floe__writer_warn(w, "a retraction of key %s at time %llu has no live row to retract; "
                          "ignored", key_text(r), (unsigned long long)time);
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
    return record_delete(r, loc, err);
}

static int retract(resolving *r, const floe__group_item *it, floe_error *err)
{
    const uint8_t *row = item_row(r->w, it);
    for (uint64_t n = magnitude(it->diff); n > 0; n--) {
        if (cancel_survivor(r, row, it->row_len))
            continue;
        if (r->b->desc.snapshot) {
            if (!r->w->warned_snapshot_retraction)
                floe__writer_warn(r->w, "retractions in the snapshot batch (time %llu) have "
                                  "nothing to retract; ignored", (unsigned long long)it->time);
            r->w->warned_snapshot_retraction = true;
            continue;
        }
        FLOE_FORWARD(retract_older(r, row, it->row_len, it->time, err));
    }
    return FLOE_OK;
}

/* ---- insertions -------------------------------------------------------------------------- */

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
    r->s[r->n++] = (survivor){item_row(w, it), it->row_len, n, it->time};
    return FLOE_OK;
}

/* ---- the rows that are left --------------------------------------------------------------- */

/* Index a written row; the group's first also tells whether the key was
 * live before (not in the snapshot batch, which starts from nothing). */
static int index_row(resolving *r, const char *path, uint64_t pos, const survivor *s, bool first,
                     floe_error *err)
{
    floe__kx *kx = index_of(r);
    uint32_t id;
    FLOE_FORWARD(floe__kx_file(kx, path, &id, err));
    floe__kx_file_set_committed(kx, id, false);
    floe__kx_file_set_schema(kx, id, r->w->cfg->schema_id);
    uint64_t rh = floe__hash64(s->row, s->len, 0);
    bool check = first && !r->w->cfg->synthetic_key && !r->b->desc.snapshot, was_live = false;
    FLOE_FORWARD(floe__kx_insert_checked(kx, r->key, r->klen, (floe__kx_loc){id, pos, rh},
                                         check ? &was_live : NULL, err));
    if (was_live)
        pk_violation(r, s->time);
    return r->b->log ? floe__kx_log_insert(r->b->log, r->key, r->klen, path, pos, rh, err)
                     : FLOE_OK;
}

static int write_survivors(resolving *r, floe_error *err)
{
    bool first = true;
    for (size_t i = 0; i < r->n; i++) {
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
    return rc;
}
