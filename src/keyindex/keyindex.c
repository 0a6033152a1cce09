/*
 * keyindex.c - the key index: key -> the live rows of the table (file id,
 * position, row hash), a multiset, within a memory budget.
 *
 * Memory tier: open addressing with linear probing over 24-byte slots,
 *
 *   word 0: key reference (48 bits) | 16 bits of the key's hash (a filter)
 *   word 1: file field (24 bits) | position (40 bits)
 *   word 2: row hash
 *
 * where the file field is a file id, DEAD (a free slot that keeps its key
 * so probing stays correct) or a file id with the TOMB bit: "this row of
 * the disk tier is no longer live".  Keys live back to back in 1 MiB
 * blocks behind a u32 length (a larger key gets a block of its own); slots
 * of one key share its bytes.  Nothing is removed from the probe paths, so
 * a probe that reaches an empty slot has seen every slot of its key.  At
 * 0.375-0.75 load a key costs 32-64 bytes plus 4 + its own bytes.
 *
 * Disk tier (keyindex_run.c): when the memory tier outgrows the budget it
 * is merged into a new run (live slots added, tombstones cancelling their
 * rows, rows of retired files dropped) and emptied.  A key's live rows are
 * then its memory rows plus its run rows not cancelled by a tombstone.
 */
#include <stdio.h>
#include <stdlib.h>

#include "keyindex/keyindex_internal.h"

#define BLOCK_BITS 20
#define BLOCK_SIZE ((size_t)1 << BLOCK_BITS)
#define POS_BITS 40
#define FILE_DEAD 0xFFFFFFu
#define FILE_TOMB 0x800000u
#define DEFAULT_LIMIT ((size_t)256 << 20)

typedef struct slot {
    uint64_t ref_hash;
    uint64_t file_pos;
    uint64_t rowhash;
} slot;

typedef struct kfile {
    char *path;
    bool live;
    bool uncommitted;                   /* written by a batch not committed yet */
    int32_t hash_schema;                /* the schema its rows' hashes were taken in; -1 */
} kfile;

struct floe__kx {
    size_t limit;
    char *spill_dir;
    slot *slots;
    size_t cap, used;                   /* slots holding a key (any state) */
    uint64_t live, tombs;               /* live rows / tombstones in memory */
    uint8_t **blocks;
    size_t n_blocks, block_used, block_bytes;
    floe__kx_run *run;                  /* the disk tier, or NULL */
    uint64_t run_live;                  /* live rows in the run (entries - tombstoned) */
    kfile *files;
    size_t n_files, cap_files;
    uint32_t *by_path;                  /* open addressing: id + 1, 0 empty */
    size_t cap_by_path;
    uint64_t spills, retired;
};

static uint64_t hash_key(const uint8_t *k, size_t n) { return floe__hash64(k, n, 0x5bd1e995); }
uint64_t floe__kx_key_hash(const uint8_t *key, size_t len) { return hash_key(key, len); }
static uint16_t filter_of(uint64_t h) { return (uint16_t)(h >> 48); }
static uint32_t file_of(const slot *s) { return (uint32_t)(s->file_pos >> POS_BITS); }
static uint64_t pos_of(const slot *s) { return s->file_pos & FLOE_KX_MAX_POS; }
static bool is_dead(const slot *s) { return file_of(s) == FILE_DEAD; }
static bool is_tomb(const slot *s) { return !is_dead(s) && (file_of(s) & FILE_TOMB); }

static uint64_t pack(uint32_t file, uint64_t pos) { return (uint64_t)file << POS_BITS | pos; }

/* ---- the file table ------------------------------------------------------------------- */

static size_t path_slot(const floe__kx *kx, const char *path)
{
    size_t mask = kx->cap_by_path - 1, i = floe__hash64(path, strlen(path), 0) & mask;
    while (kx->by_path[i] && strcmp(kx->files[kx->by_path[i] - 1].path, path) != 0)
        i = (i + 1) & mask;
    return i;
}

static int grow_paths(floe__kx *kx, floe_error *err)
{
    size_t cap = kx->cap_by_path ? kx->cap_by_path * 2 : 256;
    uint32_t *old = kx->by_path;
    size_t old_cap = kx->cap_by_path;
    kx->by_path = floe__calloc(cap, sizeof *kx->by_path);
    if (!kx->by_path) {
        kx->by_path = old;
        return FLOE_OOM(err);
    }
    kx->cap_by_path = cap;
    for (size_t i = 0; i < old_cap; i++)         /* live paths only: a retired one may come back */
        if (old[i] && kx->files[old[i] - 1].live)
            kx->by_path[path_slot(kx, kx->files[old[i] - 1].path)] = old[i];
    floe__free(old);
    return FLOE_OK;
}

bool floe__kx_file_find(const floe__kx *kx, const char *path, uint32_t *id)
{
    if (!kx->cap_by_path)
        return false;
    uint32_t v = kx->by_path[path_slot(kx, path)];
    if (!v || !kx->files[v - 1].live)
        return false;
    *id = v - 1;
    return true;
}

int floe__kx_file(floe__kx *kx, const char *path, uint32_t *id, floe_error *err)
{
    if (floe__kx_file_find(kx, path, id))
        return FLOE_OK;
    FLOE_RETURN_IF(kx->n_files + 1 >= FLOE_KX_MAX_FILES, err, FLOE_ELIMIT,
                   "the key index knows %zu data files, its limit", kx->n_files);
    if ((kx->n_files + 1) * 2 > kx->cap_by_path)
        FLOE_FORWARD(grow_paths(kx, err));
    if (kx->n_files == kx->cap_files) {
        size_t cap = kx->cap_files ? kx->cap_files * 2 : 64;
        kfile *f = floe__realloc(kx->files, cap * sizeof *f);
        if (!f)
            return FLOE_OOM(err);
        kx->files = f;
        kx->cap_files = cap;
    }
    char *copy = floe__strdup(path);
    if (!copy)
        return FLOE_OOM(err);
    kx->files[kx->n_files] = (kfile){copy, true, false, -1};
    kx->by_path[path_slot(kx, path)] = (uint32_t)kx->n_files + 1;
    *id = (uint32_t)kx->n_files++;
    return FLOE_OK;
}

const char *floe__kx_file_path(const floe__kx *kx, uint32_t id)
{
    return id < kx->n_files ? kx->files[id].path : NULL;
}

bool floe__kx_file_live(const floe__kx *kx, uint32_t id)
{
    return id < kx->n_files && kx->files[id].live;
}

size_t floe__kx_file_count(const floe__kx *kx) { return kx->n_files; }

void floe__kx_file_set_schema(floe__kx *kx, uint32_t id, int32_t schema_id)
{
    if (id < kx->n_files)
        kx->files[id].hash_schema = schema_id;
}

int32_t floe__kx_file_schema(const floe__kx *kx, uint32_t id)
{
    return id < kx->n_files ? kx->files[id].hash_schema : -1;
}

void floe__kx_file_set_committed(floe__kx *kx, uint32_t id, bool committed)
{
    if (id < kx->n_files)
        kx->files[id].uncommitted = !committed;
}

static bool committed_file(const floe__kx *kx, uint32_t id)
{
    return floe__kx_file_live(kx, id) && !kx->files[id].uncommitted;
}

bool floe__kx_file_committed(const floe__kx *kx, uint32_t id) { return committed_file(kx, id); }

void floe__kx_retire(floe__kx *kx, uint32_t id)
{
    if (id >= kx->n_files || !kx->files[id].live)
        return;
    size_t i = path_slot(kx, kx->files[id].path);
    kx->files[id].live = false;
    kx->retired++;
    /* take it out of the path map (re-insert the probe cluster after it) */
    size_t mask = kx->cap_by_path - 1;
    kx->by_path[i] = 0;
    for (size_t j = (i + 1) & mask; kx->by_path[j]; j = (j + 1) & mask) {
        uint32_t v = kx->by_path[j];
        kx->by_path[j] = 0;
        kx->by_path[path_slot(kx, kx->files[v - 1].path)] = v;
    }
}

/* ---- life cycle ------------------------------------------------------------------------- */

static int alloc_slots(floe__kx *kx, size_t cap, floe_error *err)
{
    slot *s = floe__calloc(cap, sizeof *s);
    if (!s)
        return FLOE_OOM(err);
    kx->slots = s;
    kx->cap = cap;
    return FLOE_OK;
}

int floe__kx_new(const floe__kx_options *o, floe__kx **out, floe_error *err)
{
    floe__kx *kx = floe__calloc(1, sizeof *kx);
    if (!kx)
        return FLOE_OOM(err);
    kx->limit = o && o->memory_limit ? o->memory_limit : DEFAULT_LIMIT;
    if (kx->limit < FLOE_KX_MIN_MEMORY)           /* a key block alone is 1 MiB */
        kx->limit = FLOE_KX_MIN_MEMORY;
    const char *dir = o && o->spill_dir ? o->spill_dir : getenv("TMPDIR");
    kx->spill_dir = floe__strdup(dir && *dir ? dir : "/tmp");
    if (!kx->spill_dir || alloc_slots(kx, 1024, err) != FLOE_OK) {
        floe__kx_free(kx);
        return FLOE_OOM(err);
    }
    *out = kx;
    return FLOE_OK;
}

static void free_memory_tier(floe__kx *kx)
{
    for (size_t i = 0; i < kx->n_blocks; i++)
        floe__free(kx->blocks[i]);
    floe__free(kx->blocks);
    floe__free(kx->slots);
    kx->blocks = NULL;
    kx->slots = NULL;
    kx->n_blocks = kx->block_used = kx->block_bytes = 0;
    kx->cap = kx->used = 0;
    kx->live = kx->tombs = 0;
}

void floe__kx_free(floe__kx *kx)
{
    if (!kx)
        return;
    free_memory_tier(kx);
    floe__kx_run_free(kx->run);
    for (size_t i = 0; i < kx->n_files; i++)
        floe__free(kx->files[i].path);
    floe__free(kx->files);
    floe__free(kx->by_path);
    floe__free(kx->spill_dir);
    floe__free(kx);
}

/* ---- the memory tier ----------------------------------------------------------------------- */

static const uint8_t *key_at(const floe__kx *kx, uint64_t ref, size_t *len)
{
    ref -= 1;
    const uint8_t *k = kx->blocks[ref >> BLOCK_BITS] + (ref & (BLOCK_SIZE - 1));
    *len = floe__get_le32(k);
    return k + 4;
}

static bool key_eq(const floe__kx *kx, const slot *s, uint16_t f, const uint8_t *key, size_t len)
{
    if ((uint16_t)s->ref_hash != f)
        return false;
    size_t n;
    const uint8_t *k = key_at(kx, s->ref_hash >> 16, &n);
    return n == len && memcmp(k, key, len) == 0;
}

static size_t memory_bytes(const floe__kx *kx)
{
    return kx->cap * sizeof(slot) + kx->block_bytes + kx->n_blocks * sizeof(uint8_t *);
}

static int merge_into_run(floe__kx *kx, floe_error *err);

/* What a spill needs besides the tier: one sort entry per used slot. */
#define SORT_ENTRY_BYTES 16

/* The most the memory tier may take before it must spill: its own bytes
 * plus what spilling them takes, so that the peak stays within the budget. */
static size_t peak_bytes(const floe__kx *kx)
{
    return memory_bytes(kx) + kx->used * SORT_ENTRY_BYTES;
}

static int grow(floe__kx *kx, floe_error *err)
{
    slot *old = kx->slots;
    size_t old_cap = kx->cap;
    FLOE_FORWARD(alloc_slots(kx, old_cap * 2, err));
    size_t mask = kx->cap - 1;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].ref_hash == 0)
            continue;
        size_t n;
        const uint8_t *k = key_at(kx, old[i].ref_hash >> 16, &n);
        size_t j = hash_key(k, n) & mask;
        while (kx->slots[j].ref_hash != 0)
            j = (j + 1) & mask;
        kx->slots[j] = old[i];
    }
    floe__free(old);
    return FLOE_OK;
}

int floe__kx_reserve(floe__kx *kx, uint64_t rows, floe_error *err)
{
    if (kx->used)
        return FLOE_OK;
    size_t cap = kx->cap;
    /* room for `rows` below the 3/4 load, the array within half the budget
     * (a spill's sort entries and the keys need the rest) */
    while ((uint64_t)cap * 3 < rows * 4 && cap * 2 * sizeof(slot) <= kx->limit / 2)
        cap *= 2;
    if (cap == kx->cap)
        return FLOE_OK;
    slot *old = kx->slots;
    FLOE_FORWARD(alloc_slots(kx, cap, err));
    floe__free(old);
    return FLOE_OK;
}

static int new_block(floe__kx *kx, size_t need, floe_error *err)
{
    FLOE_RETURN_IF(kx->n_blocks >= ((size_t)1 << 27), err, FLOE_ELIMIT,
                   "the key index's memory tier is full");
    uint8_t **b = floe__realloc(kx->blocks, (kx->n_blocks + 1) * sizeof *b);
    if (!b)
        return FLOE_OOM(err);
    kx->blocks = b;
    size_t size = need > BLOCK_SIZE ? need : BLOCK_SIZE;
    if (!(b[kx->n_blocks] = floe__malloc(size)))
        return FLOE_OOM(err);
    kx->n_blocks++;
    kx->block_used = need > BLOCK_SIZE ? size : 0;   /* an oversized block holds one key */
    kx->block_bytes += size;
    return FLOE_OK;
}

/* Copy a key into block storage; *ref receives its reference. */
static int store_key(floe__kx *kx, const uint8_t *key, size_t len, uint64_t *ref, floe_error *err)
{
    size_t need = 4 + len;
    bool big = need > BLOCK_SIZE;
    if (big || kx->n_blocks == 0 || kx->block_used + need > BLOCK_SIZE)
        FLOE_FORWARD(new_block(kx, need, err));
    size_t at = big ? 0 : kx->block_used;
    uint8_t *dst = kx->blocks[kx->n_blocks - 1] + at;
    floe__put_le32(dst, (uint32_t)len);
    if (len)
        memcpy(dst + 4, key, len);
    *ref = ((uint64_t)(kx->n_blocks - 1) << BLOCK_BITS | at) + 1;
    if (!big)
        kx->block_used += need;
    return FLOE_OK;
}

typedef struct probe {
    slot *empty;                        /* the empty slot ending the path */
    slot *dead;                         /* a dead slot of the key, to reuse */
    slot *live;                         /* a live row of the key (rowhash match first) */
    uint64_t ref;                       /* the key's stored bytes, 0: none */
} probe;

/* Walk key's probe path.  want != NULL: stop at a live row whose row hash
 * is *want (else remember the first live one). */
static void walk(floe__kx *kx, uint64_t h, const uint8_t *key, size_t len, const uint64_t *want,
                 bool committed, probe *p)
{
    memset(p, 0, sizeof *p);
    size_t mask = kx->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        slot *s = &kx->slots[i];
        if (s->ref_hash == 0) {
            p->empty = s;
            return;
        }
        if (!key_eq(kx, s, filter_of(h), key, len))
            continue;
        p->ref = s->ref_hash >> 16;
        if (is_dead(s) || (!is_tomb(s) && !floe__kx_file_live(kx, file_of(s)))) {
            if (!is_dead(s)) {          /* a row of a retired file: free the slot */
                s->file_pos = pack(FILE_DEAD, 0);
                kx->live--;
            }
            if (!p->dead)
                p->dead = s;
        } else if (!is_tomb(s) && (!committed || committed_file(kx, file_of(s))) &&
                   (!p->live || (want && s->rowhash == *want && p->live->rowhash != *want))) {
            p->live = s;
            if (want && s->rowhash == *want)
                return;
        }
    }
}

/* Put (file field, pos, rowhash) in a slot of key: a dead one, else a new
 * one.  *was_live (when not NULL): the memory tier held a live row of key. */
static int put_slot(floe__kx *kx, const uint8_t *key, size_t len, uint64_t h, uint32_t file,
                    uint64_t pos, uint64_t rowhash, bool *was_live, floe_error *err)
{
    if ((kx->used + 1) * 4 > kx->cap * 3) {
        /* growing holds the old and the new slot arrays at once: spill
         * instead when that would pass the budget */
        if (peak_bytes(kx) + 2 * kx->cap * sizeof(slot) > kx->limit)
            FLOE_FORWARD(merge_into_run(kx, err));
        else
            FLOE_FORWARD(grow(kx, err));
    }
    probe p;
    walk(kx, h, key, len, NULL, false, &p);
    if (was_live)
        *was_live = p.live != NULL;
    slot *s = p.dead;
    if (!s) {
        uint64_t ref = p.ref;
        if (!ref)
            FLOE_FORWARD(store_key(kx, key, len, &ref, err));
        s = p.empty;
        s->ref_hash = ref << 16 | filter_of(h);
        kx->used++;
    }
    s->file_pos = pack(file, pos);
    s->rowhash = rowhash;
    return FLOE_OK;
}

int floe__kx_adopt_run(floe__kx *kx, floe__kx_run *run, floe_error *err)
{
    FLOE_RETURN_IF(kx->used || kx->run, err, FLOE_EINTERNAL,
                   "a built run given to a key index that holds rows");
    kx->run = run;
    kx->run_live = floe__kx_run_entries(run);
    return FLOE_OK;
}

size_t floe__kx_memory_limit(const floe__kx *kx) { return kx->limit; }
const char *floe__kx_spill_dir(const floe__kx *kx) { return kx->spill_dir; }

#define MEMORY_ROW_BYTES 80

bool floe__kx_build_pays(const floe__kx *kx, uint64_t rows)
{
    return !kx->used && !kx->run && rows > kx->limit / MEMORY_ROW_BYTES;
}

static int maybe_spill(floe__kx *kx, floe_error *err);

static int run_has(floe__kx *kx, uint64_t h, const uint8_t *key, size_t len, bool *live,
                   floe_error *err);

int floe__kx_insert_checked(floe__kx *kx, const uint8_t *key, size_t len, floe__kx_loc loc,
                            bool *was_live, floe_error *err)
{
    FLOE_RETURN_IF(len > FLOE_KX_MAX_KEY, err, FLOE_ELIMIT,
                   "a key of %zu bytes is longer than the key index takes", len);
    FLOE_RETURN_IF(loc.file >= kx->n_files || loc.pos > FLOE_KX_MAX_POS, err, FLOE_EINTERNAL,
                   "key index: row of an unknown file or past 2^40");
    uint64_t h = hash_key(key, len);
    FLOE_FORWARD(put_slot(kx, key, len, h, loc.file, loc.pos, loc.rowhash, was_live, err));
    kx->live++;
    if (was_live && !*was_live && kx->run)
        FLOE_FORWARD(run_has(kx, h, key, len, was_live, err));
    return maybe_spill(kx, err);
}

void floe__kx_prefetch(const floe__kx *kx, const uint8_t *key, size_t len)
{
    if (kx->cap)                        /* 0 only after a failed allocation */
        __builtin_prefetch(&kx->slots[hash_key(key, len) & (kx->cap - 1)]);
}

int floe__kx_insert(floe__kx *kx, const uint8_t *key, size_t len, floe__kx_loc loc,
                    floe_error *err)
{
    return floe__kx_insert_checked(kx, key, len, loc, NULL, err);
}

/* ---- the disk tier, seen through the tombstones ---------------------------------------------- */

/* A key's live rows in the run: those of live files no tombstone cancels
 * (at most 64 gathered: enough to take one, or to tell one is there). */
typedef struct gathered {
    floe__kx *kx;
    uint64_t h;
    const uint8_t *key;
    size_t len;
    bool only;                      /* gather only the row (file, pos) */
    uint32_t file;
    uint64_t pos;
    floe__kx_loc locs[64];
    size_t n;
} gathered;

/* Whether a tombstone of key cancels (file, pos). */
static bool tombed(floe__kx *kx, uint64_t h, const uint8_t *key, size_t len, floe__kx_loc loc)
{
    size_t mask = kx->cap - 1;
    for (size_t i = h & mask; kx->slots[i].ref_hash; i = (i + 1) & mask) {
        const slot *s = &kx->slots[i];
        if (is_tomb(s) && (file_of(s) & ~FILE_TOMB) == loc.file && pos_of(s) == loc.pos &&
            key_eq(kx, s, filter_of(h), key, len))
            return true;
    }
    return false;
}

static int gather(void *ctx, floe__kx_loc loc, floe_error *err)
{
    (void)err;
    gathered *g = ctx;
    if (g->only && (loc.file != g->file || loc.pos != g->pos))
        return FLOE_OK;
    if (g->n < sizeof g->locs / sizeof g->locs[0] && floe__kx_file_live(g->kx, loc.file) &&
        !tombed(g->kx, g->h, g->key, g->len, loc))
        g->locs[g->n++] = loc;
    return FLOE_OK;
}

/* g zeroed by the caller (or set up by run_row). */
static int run_live(floe__kx *kx, uint64_t h, const uint8_t *key, size_t len, gathered *g,
                    floe_error *err)
{
    g->kx = kx;
    g->h = h;
    g->key = key;
    g->len = len;
    g->n = 0;
    return floe__kx_run_find(kx->run, h, key, len, gather, g, err);
}

static int run_row(floe__kx *kx, uint64_t h, const uint8_t *key, size_t len, uint32_t file,
                   uint64_t pos, gathered *g, floe_error *err)
{
    g->only = true;
    g->file = file;
    g->pos = pos;
    return run_live(kx, h, key, len, g, err);
}

static int take_from_run(floe__kx *kx, const uint8_t *key, size_t len, uint64_t h,
                         uint64_t rowhash, bool committed, bool *found, floe__kx_loc *loc,
                         floe_error *err)
{
    gathered g = {0};
    FLOE_FORWARD(run_live(kx, h, key, len, &g, err));
    size_t pick = g.n;
    for (size_t i = 0; i < g.n; i++) {
        if (committed && !committed_file(kx, g.locs[i].file))
            continue;
        if (pick == g.n || g.locs[i].rowhash == rowhash)
            pick = i;
        if (g.locs[i].rowhash == rowhash)
            break;
    }
    if (pick == g.n)
        return FLOE_OK;
    *loc = g.locs[pick];
    *found = true;
    FLOE_FORWARD(put_slot(kx, key, len, h, loc->file | FILE_TOMB, loc->pos, loc->rowhash, NULL,
                          err));
    kx->tombs++;
    kx->run_live--;
    return maybe_spill(kx, err);
}

static int take(floe__kx *kx, const uint8_t *key, size_t len, uint64_t rowhash, bool committed,
                bool *found, floe__kx_loc *loc, floe_error *err);

int floe__kx_take(floe__kx *kx, const uint8_t *key, size_t len, uint64_t rowhash, bool *found,
                  floe__kx_loc *loc, floe_error *err)
{
    return take(kx, key, len, rowhash, false, found, loc, err);
}

int floe__kx_take_committed(floe__kx *kx, const uint8_t *key, size_t len, uint64_t rowhash,
                            bool *found, floe__kx_loc *loc, floe_error *err)
{
    return take(kx, key, len, rowhash, true, found, loc, err);
}

static int take(floe__kx *kx, const uint8_t *key, size_t len, uint64_t rowhash, bool committed,
                bool *found, floe__kx_loc *loc, floe_error *err)
{
    *found = false;
    uint64_t h = hash_key(key, len);
    probe p;
    walk(kx, h, key, len, &rowhash, committed, &p);
    if (p.live) {
        loc->file = file_of(p.live);
        loc->pos = pos_of(p.live);
        loc->rowhash = p.live->rowhash;
        p.live->file_pos = pack(FILE_DEAD, 0);
        kx->live--;
        *found = true;
        return FLOE_OK;
    }
    return kx->run ? take_from_run(kx, key, len, h, rowhash, committed, found, loc, err) : FLOE_OK;
}

/* The memory slot holding the live row (file, pos) of key, or NULL. */
static slot *find_row(floe__kx *kx, uint64_t h, const uint8_t *key, size_t len, uint32_t file,
                      uint64_t pos)
{
    size_t mask = kx->cap - 1;
    for (size_t i = h & mask; kx->slots[i].ref_hash; i = (i + 1) & mask) {
        slot *s = &kx->slots[i];
        if (!is_dead(s) && !is_tomb(s) && file_of(s) == file && pos_of(s) == pos &&
            key_eq(kx, s, filter_of(h), key, len))
            return s;
    }
    return NULL;
}

int floe__kx_remove(floe__kx *kx, const uint8_t *key, size_t len, uint32_t file, uint64_t pos,
                    bool *found, floe_error *err)
{
    *found = false;
    uint64_t h = hash_key(key, len);
    slot *s = find_row(kx, h, key, len, file, pos);
    if (s) {
        s->file_pos = pack(FILE_DEAD, 0);
        kx->live--;
        *found = true;
        return FLOE_OK;
    }
    if (!kx->run || !floe__kx_file_live(kx, file))
        return FLOE_OK;
    gathered g = {0};
    FLOE_FORWARD(run_row(kx, h, key, len, file, pos, &g, err));
    if (g.n == 0)
        return FLOE_OK;
    FLOE_FORWARD(put_slot(kx, key, len, h, file | FILE_TOMB, pos, g.locs[0].rowhash, NULL,
                          err));
    kx->tombs++;
    kx->run_live--;
    *found = true;
    return maybe_spill(kx, err);
}

static int run_has(floe__kx *kx, uint64_t h, const uint8_t *key, size_t len, bool *live,
                   floe_error *err)
{
    gathered g = {0};
    FLOE_FORWARD(run_live(kx, h, key, len, &g, err));
    *live = g.n > 0;
    return FLOE_OK;
}

int floe__kx_has(floe__kx *kx, const uint8_t *key, size_t len, bool *live, floe_error *err)
{
    uint64_t h = hash_key(key, len);
    probe p;
    walk(kx, h, key, len, NULL, false, &p);
    *live = p.live != NULL;
    if (*live || !kx->run)
        return FLOE_OK;
    return run_has(kx, h, key, len, live, err);
}

/* ---- merging the memory tier into a new run ---------------------------------------------- */

typedef struct mem_entry {
    uint64_t hash;
    const slot *s;
} mem_entry;

static int cmp_key(uint64_t ha, const uint8_t *ka, size_t la, uint64_t hb, const uint8_t *kb,
                   size_t lb)
{
    if (ha != hb)
        return ha < hb ? -1 : 1;
    int c = memcmp(ka, kb, la < lb ? la : lb);
    if (c)
        return c;
    return la < lb ? -1 : la > lb;
}

/* (hash, key, file, pos) order, as runs are sorted. */
static int cmp_row(uint64_t ha, const uint8_t *ka, size_t la, uint32_t fa, uint64_t pa,
                   uint64_t hb, const uint8_t *kb, size_t lb, uint32_t fb, uint64_t pb)
{
    int c = cmp_key(ha, ka, la, hb, kb, lb);
    if (c)
        return c;
    if (fa != fb)
        return fa < fb ? -1 : 1;
    return pa < pb ? -1 : pa > pb;
}

int floe__kx_cmp_row(uint64_t ha, const uint8_t *ka, size_t la, uint32_t fa, uint64_t pa,
                     uint64_t hb, const uint8_t *kb, size_t lb, uint32_t fb, uint64_t pb)
{
    return cmp_row(ha, ka, la, fa, pa, hb, kb, lb, fb, pb);
}

static uint32_t id_of(const slot *s) { return file_of(s) & ~FILE_TOMB; }

static int cmp_mem(const void *a, const void *b, void *arg)
{
    const floe__kx *kx = arg;
    const mem_entry *x = a, *y = b;
    size_t lx, ly;
    const uint8_t *kx_ = key_at(kx, x->s->ref_hash >> 16, &lx);
    const uint8_t *ky = key_at(kx, y->s->ref_hash >> 16, &ly);
    return cmp_row(x->hash, kx_, lx, id_of(x->s), pos_of(x->s), y->hash, ky, ly, id_of(y->s),
                   pos_of(y->s));
}

/* The memory tier's live rows and tombstones, sorted; *n of them. */
static int sorted_memory(floe__kx *kx, mem_entry **out, size_t *n, floe_error *err)
{
    mem_entry *m = floe__malloc((kx->used ? kx->used : 1) * sizeof *m);
    if (!m)
        return FLOE_OOM(err);
    size_t k = 0;
    for (size_t i = 0; i < kx->cap; i++) {
        const slot *s = &kx->slots[i];
        if (s->ref_hash == 0 || is_dead(s) || (!is_tomb(s) && !floe__kx_file_live(kx, id_of(s))))
            continue;
        size_t len;
        const uint8_t *key = key_at(kx, s->ref_hash >> 16, &len);
        m[k++] = (mem_entry){hash_key(key, len), s};
    }
    qsort_r(m, k, sizeof *m, cmp_mem, kx);
    *out = m;
    *n = k;
    return FLOE_OK;
}

typedef struct merge {
    floe__kx *kx;
    mem_entry *mem;
    size_t n, i;
    floe__kx_run_cursor cur;
    floe__kx_run_writer *w;
    uint64_t written;
} merge;

static int put_mem(merge *g, const slot *s, uint64_t h, floe_error *err)
{
    size_t len;
    const uint8_t *key = key_at(g->kx, s->ref_hash >> 16, &len);
    floe__kx_loc loc = {id_of(s), pos_of(s), s->rowhash};
    g->written++;
    return floe__kx_run_put(g->w, h, key, len, loc, err);
}

/* One step: the smaller of the run's next row and the memory tier's next. */
static int merge_step(merge *g, floe_error *err)
{
    floe__kx_run_cursor *c = &g->cur;
    const mem_entry *m = g->i < g->n ? &g->mem[g->i] : NULL;
    int order = !c->has ? 1 : !m ? -1 : 0;
    if (order == 0) {
        size_t ml;
        const uint8_t *mk = key_at(g->kx, m->s->ref_hash >> 16, &ml);
        order = cmp_row(c->hash, c->key, c->len, c->loc.file, c->loc.pos, m->hash, mk, ml,
                        id_of(m->s), pos_of(m->s));
    }
    if (order <= 0) {                    /* the run's row: kept unless retired or tombed */
        bool keep = floe__kx_file_live(g->kx, c->loc.file) && !(order == 0 && is_tomb(m->s));
        if (keep) {
            g->written++;
            FLOE_FORWARD(floe__kx_run_put(g->w, c->hash, c->key, c->len, c->loc, err));
        }
        if (order == 0)
            g->i++;
        return floe__kx_run_cursor_next(c, err);
    }
    g->i++;
    return is_tomb(m->s) ? FLOE_OK : put_mem(g, m->s, m->hash, err);
}

static int merge_into_run(floe__kx *kx, floe_error *err)
{
    merge g = {.kx = kx};
    int rc = sorted_memory(kx, &g.mem, &g.n, err);
    if (rc == FLOE_OK)
        rc = floe__kx_run_writer_new(kx->spill_dir, &g.w, err);
    if (rc == FLOE_OK)
        rc = floe__kx_run_cursor_init(&g.cur, kx->run, err);
    while (rc == FLOE_OK && (g.cur.has || g.i < g.n))
        rc = merge_step(&g, err);
    floe__kx_run *run = NULL;
    if (rc == FLOE_OK) {
        rc = floe__kx_run_finish(g.w, &run, err);
        g.w = NULL;
    }
    floe__kx_run_writer_abort(g.w);
    floe__kx_run_cursor_free(&g.cur);
    floe__free(g.mem);
    if (rc != FLOE_OK)
        return rc;
    floe__kx_run_free(kx->run);
    kx->run = run;
    kx->run_live = g.written;
    kx->spills++;
    free_memory_tier(kx);
    return alloc_slots(kx, 1024, err);
}

static int maybe_spill(floe__kx *kx, floe_error *err)
{
    _Static_assert(sizeof(mem_entry) == SORT_ENTRY_BYTES, "the sort entry's size");
    return peak_bytes(kx) > kx->limit ? merge_into_run(kx, err) : FLOE_OK;
}

/* ---- walking and stats ------------------------------------------------------------------------ */

#define EACH_AHEAD 16

static int each_memory(floe__kx *kx, floe__kx_visit_fn fn, void *ctx, floe_error *err)
{
    for (size_t i = 0; i < kx->cap; i++) {
        const slot *s = &kx->slots[i];
        if (i + EACH_AHEAD < kx->cap) {       /* slots are in hash order, keys are not */
            uint64_t ahead = kx->slots[i + EACH_AHEAD].ref_hash >> 16;
            if (ahead) {
                ahead -= 1;
                __builtin_prefetch(kx->blocks[ahead >> BLOCK_BITS] + (ahead & (BLOCK_SIZE - 1)));
            }
        }
        if (s->ref_hash == 0 || is_dead(s) || is_tomb(s) || !floe__kx_file_live(kx, id_of(s)))
            continue;
        size_t len;
        const uint8_t *key = key_at(kx, s->ref_hash >> 16, &len);
        FLOE_FORWARD(fn(ctx, key, len, (floe__kx_loc){id_of(s), pos_of(s), s->rowhash}, err));
    }
    return FLOE_OK;
}

int floe__kx_each(floe__kx *kx, floe__kx_visit_fn fn, void *ctx, floe_error *err)
{
    if (!kx->run)
        return each_memory(kx, fn, ctx, err);
    if (kx->used)                               /* one sorted run holds everything */
        FLOE_FORWARD(merge_into_run(kx, err));
    floe__kx_run_cursor c;
    int rc = floe__kx_run_cursor_init(&c, kx->run, err);
    while (rc == FLOE_OK && c.has) {
        if (floe__kx_file_live(kx, c.loc.file))     /* a merge drops the others */
            rc = fn(ctx, c.key, c.len, c.loc, err);
        if (rc == FLOE_OK)
            rc = floe__kx_run_cursor_next(&c, err);
    }
    floe__kx_run_cursor_free(&c);
    return rc;
}

bool floe__kx_in_memory(const floe__kx *kx) { return kx->run == NULL; }

void floe__kx_repoint(floe__kx *kx, floe__kx_move_fn fn, void *ctx)
{
    assert(!kx->run && kx->tombs == 0);       /* tombstones exist only over a disk tier */
    for (size_t i = 0; i < kx->cap; i++) {
        slot *s = &kx->slots[i];
        if (s->ref_hash == 0 || is_dead(s) || !floe__kx_file_live(kx, file_of(s)))
            continue;
        floe__kx_loc loc = {file_of(s), pos_of(s), s->rowhash};
        switch (fn(ctx, &loc)) {
        case FLOE_KX_STAYS:
            break;
        case FLOE_KX_MOVED:
            assert(loc.file < FILE_TOMB && loc.pos <= FLOE_KX_MAX_POS);
            s->file_pos = pack(loc.file, loc.pos);
            break;
        case FLOE_KX_GONE:
            s->file_pos = pack(FILE_DEAD, 0);
            kx->live--;
            break;
        }
    }
}

void floe__kx_get_stats(const floe__kx *kx, floe__kx_stats *out)
{
    memset(out, 0, sizeof *out);
    out->keys = kx->live + kx->run_live;
    out->memory_bytes = memory_bytes(kx);
    out->disk_entries = floe__kx_run_entries(kx->run);
    out->disk_bytes = floe__kx_run_bytes(kx->run);
    out->spills = kx->spills;
    out->files = kx->n_files;
    out->retired_files = kx->retired;
}
