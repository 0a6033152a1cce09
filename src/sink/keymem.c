/*
 * keymem.c - the per-batch key memory of upsert mode (SPEC.md section 6).
 *
 * Maps key bytes to the (file, position) of every row this batch inserted
 * for the key (a multiset: a key inserted twice, as a key of the whole row
 * with duplicates can be, has two), so that each later retraction in the
 * same batch becomes a position delete of one of them.  Open addressing
 * with linear probing over 16-byte slots:
 *
 *   word 0: key reference (48 bits) | 16 bits of the key's hash (a filter)
 *   word 1: file (24 bits) | position (40 bits); file DEAD = tombstone
 *
 * Keys live back to back in 1 MiB blocks, each behind a u32 length; a key
 * reference is (block << 20 | offset) + 1, 0 meaning an empty slot.  A taken
 * key leaves a tombstone (its slot keeps the key) so probing stays correct,
 * and a later put for the same key revives the slot; a put for a key whose
 * slot is live takes a further slot sharing the key's bytes.  All slots of
 * a key lie on its probe path before the first empty slot (nothing is ever
 * removed), so a probe that reaches an empty slot has seen them all.
 * Memory per key: a slot / load factor (0.375..0.75 -> 21..43 bytes) plus
 * 4 + the key bytes.
 */
#include "sink/sink_internal.h"

#define BLOCK_BITS 20
#define BLOCK_SIZE ((size_t)1 << BLOCK_BITS)
#define DEAD 0xFFFFFFu
#define POS_BITS 40
#define MAX_POS (((uint64_t)1 << POS_BITS) - 1)

typedef struct slot {
    uint64_t ref_hash;        /* key reference << 16 | hash16; 0: empty */
    uint64_t file_pos;        /* file << 40 | pos */
} slot;

struct floe__keymem {
    slot *slots;
    size_t cap;               /* power of two */
    size_t used;              /* slots holding a key (live or dead) */
    size_t live;
    uint8_t **blocks;         /* key storage */
    size_t n_blocks, block_used;
};

/* The low bits pick the slot, the top 16 bits are the slot's filter. */
static uint64_t hash_bytes(const uint8_t *p, size_t n) { return floe__hash64(p, n, 0); }

static int alloc_slots(floe__keymem *km, size_t cap, floe_error *err)
{
    slot *s = floe__calloc(cap, sizeof *s);
    if (!s)
        return FLOE_OOM(err);
    km->slots = s;
    km->cap = cap;
    return FLOE_OK;
}

int floe__keymem_new(floe__keymem **out, floe_error *err)
{
    floe__keymem *km = floe__calloc(1, sizeof *km);
    if (!km)
        return FLOE_OOM(err);
    if (alloc_slots(km, 1024, err) != FLOE_OK) {
        floe__free(km);
        return FLOE_ENOMEM;
    }
    *out = km;
    return FLOE_OK;
}

void floe__keymem_free(floe__keymem *km)
{
    if (!km)
        return;
    for (size_t i = 0; i < km->n_blocks; i++)
        floe__free(km->blocks[i]);
    floe__free(km->blocks);
    floe__free(km->slots);
    floe__free(km);
}

static const uint8_t *key_at(const floe__keymem *km, uint64_t ref)
{
    ref -= 1;
    return km->blocks[ref >> BLOCK_BITS] + (ref & (BLOCK_SIZE - 1));
}

static bool key_eq(const floe__keymem *km, const slot *s, uint16_t h, const uint8_t *key,
                   size_t len)
{
    if ((uint16_t)s->ref_hash != h)
        return false;
    const uint8_t *k = key_at(km, s->ref_hash >> 16);
    return floe__get_le32(k) == len && memcmp(k + 4, key, len) == 0;
}

static uint16_t filter_of(uint64_t h) { return (uint16_t)(h >> 48); }

static bool is_dead(const slot *s) { return (s->file_pos >> POS_BITS) == DEAD; }

/* Along key's probe path: the first of its slots that is live (want_live)
 * or dead (!want_live), else the empty slot ending the path; *ref gets the
 * key's reference when any slot holds it (0 otherwise). */
static slot *find(floe__keymem *km, uint64_t h, const uint8_t *key, size_t len, bool want_live,
                  uint64_t *ref)
{
    size_t mask = km->cap - 1;
    *ref = 0;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        slot *s = &km->slots[i];
        if (s->ref_hash == 0)
            return s;
        if (!key_eq(km, s, filter_of(h), key, len))
            continue;
        *ref = s->ref_hash >> 16;
        if (is_dead(s) != want_live)
            return s;
    }
}

static int grow(floe__keymem *km, floe_error *err)
{
    slot *old = km->slots;
    size_t old_cap = km->cap;
    FLOE_FORWARD(alloc_slots(km, old_cap * 2, err));
    size_t mask = km->cap - 1;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].ref_hash == 0)
            continue;
        const uint8_t *k = key_at(km, old[i].ref_hash >> 16);
        size_t j = hash_bytes(k + 4, floe__get_le32(k)) & mask;
        while (km->slots[j].ref_hash != 0)
            j = (j + 1) & mask;
        km->slots[j] = old[i];
    }
    floe__free(old);
    return FLOE_OK;
}

/* Copy a key into block storage; *ref receives its reference. */
static int store_key(floe__keymem *km, const uint8_t *key, size_t len, uint64_t *ref,
                     floe_error *err)
{
    size_t need = 4 + len;
    if (km->n_blocks == 0 || km->block_used + need > BLOCK_SIZE) {
        uint8_t **b = floe__realloc(km->blocks, (km->n_blocks + 1) * sizeof *b);
        if (!b)
            return FLOE_OOM(err);
        km->blocks = b;
        if (!(b[km->n_blocks] = floe__malloc(BLOCK_SIZE)))
            return FLOE_OOM(err);
        km->n_blocks++;
        km->block_used = 0;
    }
    uint8_t *dst = km->blocks[km->n_blocks - 1] + km->block_used;
    floe__put_le32(dst, (uint32_t)len);
    if (len)
        memcpy(dst + 4, key, len);
    *ref = ((uint64_t)(km->n_blocks - 1) << BLOCK_BITS | km->block_used) + 1;
    km->block_used += need;
    return FLOE_OK;
}

int floe__keymem_put(floe__keymem *km, const uint8_t *key, size_t len, floe__keypos at,
                     floe_error *err)
{
    FLOE_RETURN_IF(len > BLOCK_SIZE - 4, err, FLOE_ELIMIT,
                   "key of %zu bytes is too long for the key memory (at most 1 MiB)", len);
    FLOE_RETURN_IF(at.file >= DEAD || at.pos > MAX_POS, err, FLOE_ELIMIT,
                   "row position out of the key memory's range");
    if ((km->used + 1) * 4 > km->cap * 3)
        FLOE_FORWARD(grow(km, err));
    uint64_t h = hash_bytes(key, len), ref = 0;
    slot *s = find(km, h, key, len, false, &ref);
    if (s->ref_hash == 0) {                 /* no dead slot of the key: a new one */
        if (ref == 0)
            FLOE_FORWARD(store_key(km, key, len, &ref, err));
        s->ref_hash = ref << 16 | filter_of(h);
        km->used++;
    }
    km->live++;
    s->file_pos = (uint64_t)at.file << POS_BITS | at.pos;
    return FLOE_OK;
}

bool floe__keymem_take(floe__keymem *km, const uint8_t *key, size_t len, floe__keypos *at)
{
    uint64_t ref;
    slot *s = find(km, hash_bytes(key, len), key, len, true, &ref);
    if (s->ref_hash == 0)
        return false;
    at->file = (uint32_t)(s->file_pos >> POS_BITS);
    at->pos = s->file_pos & MAX_POS;
    s->file_pos = (uint64_t)DEAD << POS_BITS;
    km->live--;
    return true;
}

size_t floe__keymem_count(const floe__keymem *km) { return km->live; }

size_t floe__keymem_bytes(const floe__keymem *km)
{
    return km->cap * sizeof(slot) + km->n_blocks * (BLOCK_SIZE + sizeof(uint8_t *)) + sizeof *km;
}
