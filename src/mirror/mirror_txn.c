/*
 * mirror_txn.c - the row each key was left with by the open transaction,
 * for tables whose updates and deletes Postgres sends without the old row.
 *
 * An open-addressing hash table of (table, key) -> (row or "deleted"),
 * whose key and row bytes are appended to one bounded buffer (an entry
 * set again appends its new row; the old bytes stay until the commit
 * clears everything).  The buffer's maximum is the transaction memory of
 * floe_pg_options: a transaction that needs more is FLOE_ELIMIT, with a
 * message saying what to do.
 *
 * Also here, the filter that spares the map the keys a streamed
 * transaction touches once (floe__netfilter): before a spilled
 * transaction is replayed, a first pass over it registers every change's
 * key hash (the text of the columns its Relation message flags as the
 * replica identity) in two bit arrays, Bloom filters with four bits per
 * key: `seen`, and `again` for a key whose bits were all set in `seen`
 * already.  A key touched twice always lands in `again`; a key touched
 * once only when its bits collided (about 0.6% at 12 bits per key).
 * During the replay a change whose keys are not in `again` is the only
 * change of its key, so its entry would never be read: the map is not
 * given it.  A 10-million-row INSERT thus needs two 15 MB arrays instead
 * of a map entry per row.  Relations with full old rows, a change before
 * its relation's Relation message in the transaction, a Relation message
 * that moves a relation's key, and TRUNCATE make the filter answer "maybe
 * twice" (the map as before) for that relation or for the transaction.
 */
#include "mirror/mirror_internal.h"

#define NO_ROW UINT32_MAX

typedef struct entry {
    uint64_t hash;            /* 0: empty slot */
    uint32_t table;
    uint32_t klen, rlen;      /* rlen NO_ROW: deleted */
    size_t koff, roff;
} entry;

struct floe__txnmap {
    entry *slots;
    size_t cap, n;            /* cap: a power of two */
    floe__buf bytes;
};

int floe__txnmap_new(size_t max_bytes, floe__txnmap **out, floe_error *err)
{
    floe__txnmap *m = floe__calloc(1, sizeof *m);
    if (!m)
        return FLOE_OOM(err);
    floe__buf_init(&m->bytes, max_bytes);
    *out = m;
    return FLOE_OK;
}

void floe__txnmap_free(floe__txnmap *m)
{
    if (!m)
        return;
    floe__free(m->slots);
    floe__buf_free(&m->bytes);
    floe__free(m);
}

void floe__txnmap_clear(floe__txnmap *m)
{
    if (m->n)
        memset(m->slots, 0, m->cap * sizeof *m->slots);
    m->n = 0;
    floe__buf_reset(&m->bytes);
}

void floe__txnmap_truncate(floe__txnmap *m, uint32_t table)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].hash && m->slots[i].table == table)
            m->slots[i].rlen = NO_ROW;
}

size_t floe__txnmap_bytes(const floe__txnmap *m) { return m->bytes.len + m->cap * sizeof(entry); }
size_t floe__txnmap_count(const floe__txnmap *m) { return m->n; }

static uint64_t hash_of(uint32_t table, const uint8_t *key, size_t klen)
{
    uint64_t h = floe__hash64(key, klen, table);
    return h ? h : 1;
}

/* The slot of (table, key), or the empty slot where it would go. */
static entry *find(const floe__txnmap *m, uint64_t h, uint32_t table, const uint8_t *key,
                   size_t klen)
{
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        entry *e = &m->slots[i];
        if (!e->hash || (e->hash == h && e->table == table && e->klen == klen &&
                         memcmp(m->bytes.data + e->koff, key, klen) == 0))
            return e;
    }
}

void floe__txnmap_get(const floe__txnmap *m, uint32_t table, const uint8_t *key, size_t klen,
                      bool *found, const uint8_t **row, size_t *rlen)
{
    *found = false;
    *row = NULL;
    *rlen = 0;
    if (!m->n)
        return;
    const entry *e = find(m, hash_of(table, key, klen), table, key, klen);
    if (!e->hash)
        return;
    *found = true;
    if (e->rlen != NO_ROW) {
        *row = m->bytes.data + e->roff;
        *rlen = e->rlen;
    }
}

static int grow(floe__txnmap *m, floe_error *err)
{
    size_t cap = m->cap ? m->cap * 2 : 256;
    entry *slots = floe__calloc(cap, sizeof *slots);
    if (!slots)
        return FLOE_OOM(err);
    entry *old = m->slots;
    size_t old_cap = m->cap;
    m->slots = slots;
    m->cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].hash)
            continue;
        size_t j = old[i].hash & (cap - 1);
        while (slots[j].hash)
            j = (j + 1) & (cap - 1);
        slots[j] = old[i];
    }
    floe__free(old);
    return FLOE_OK;
}

static int too_big(floe__txnmap *m, int rc, floe_error *err)
{
    if (rc != FLOE_ELIMIT)
        return rc;
    return floe__err_set(err, FLOE_ELIMIT, "one transaction changed more than %zu bytes of rows "
                         "of tables whose old rows Postgres does not send (REPLICA IDENTITY "
                         "DEFAULT or USING INDEX): raise the transaction memory "
                         "(--txn-memory) or set REPLICA IDENTITY FULL on those tables",
                         m->bytes.max);
}

int floe__txnmap_put(floe__txnmap *m, uint32_t table, const uint8_t *key, size_t klen,
                     const uint8_t *row, size_t rlen, floe_error *err)
{
    FLOE_RETURN_IF(klen >= NO_ROW || (row && rlen >= NO_ROW), err, FLOE_ELIMIT,
                   "row too large");
    if ((m->n + 1) * 4 > m->cap * 3)
        FLOE_FORWARD(grow(m, err));
    uint64_t h = hash_of(table, key, klen);
    entry *e = find(m, h, table, key, klen);
    if (!e->hash) {
        size_t koff = m->bytes.len;
        FLOE_FORWARD(too_big(m, floe__buf_append(&m->bytes, key, klen, err), err));
        *e = (entry){h, table, (uint32_t)klen, NO_ROW, koff, 0};
        m->n++;
    }
    if (!row) {
        e->rlen = NO_ROW;
        return FLOE_OK;
    }
    size_t roff = m->bytes.len;
    FLOE_FORWARD(too_big(m, floe__buf_append(&m->bytes, row, rlen, err), err));
    e->roff = roff;
    e->rlen = (uint32_t)rlen;
    return FLOE_OK;
}

int floe__txnmap_rewrite(floe__txnmap *m, uint32_t table,
                         int (*fn)(void *ctx, const uint8_t *key, size_t klen,
                                   const uint8_t *row, size_t rlen, floe__buf *nkey,
                                   floe__buf *nrow, floe_error *err),
                         void *ctx, floe_error *err)
{
    if (!m->n)
        return FLOE_OK;
    /* take everything out, then put it back (table's entries rewritten) */
    entry *old = m->slots;
    size_t cap = m->cap;
    floe__buf bytes = m->bytes, nkey, nrow;
    floe__buf_init(&m->bytes, bytes.max);
    m->slots = NULL;
    m->cap = m->n = 0;
    floe__buf_init(&nkey, bytes.max);
    floe__buf_init(&nrow, bytes.max);
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < cap; i++) {
        const entry *e = &old[i];
        if (!e->hash)
            continue;
        const uint8_t *key = bytes.data + e->koff;
        const uint8_t *row = e->rlen == NO_ROW ? NULL : bytes.data + e->roff;
        size_t rlen = e->rlen == NO_ROW ? 0 : e->rlen;
        if (e->table != table) {
            rc = floe__txnmap_put(m, e->table, key, e->klen, row, rlen, err);
            continue;
        }
        floe__buf_reset(&nkey);
        floe__buf_reset(&nrow);
        rc = fn(ctx, key, e->klen, row, rlen, &nkey, &nrow, err);
        if (rc == FLOE_OK)
            rc = floe__txnmap_put(m, table, nkey.data, nkey.len, row ? nrow.data : NULL,
                                  nrow.len, err);
    }
    floe__buf_free(&nkey);
    floe__buf_free(&nrow);
    floe__buf_free(&bytes);
    floe__free(old);
    return rc;
}

/* ---- the keys a streamed transaction touches once ------------------------------------------ */

#define NET_BITS_PER_KEY 12
#define NET_PROBES 4
#define NET_MAX_KEYCOLS 32

typedef struct net_rel {
    uint32_t relid;
    bool bad;                     /* sticky: answer "maybe twice" */
    bool known;                   /* a Relation message came in this pass */
    uint16_t nkeys;
    uint16_t keys[NET_MAX_KEYCOLS];
} net_rel;

struct floe__netfilter {
    uint64_t *seen, *again;
    uint64_t bits;                /* per array */
    net_rel *rels;
    size_t nrels, cap_rels;
    bool off;                     /* the whole transaction: maybe twice */
};

int floe__netfilter_new(uint64_t changes, size_t max_bytes, floe__netfilter **out,
                        floe_error *err)
{
    floe__netfilter *f = floe__calloc(1, sizeof *f);
    if (!f)
        return FLOE_OOM(err);
    uint64_t bits = changes * NET_BITS_PER_KEY;
    uint64_t most = (uint64_t)max_bytes * 8 / 2;
    if (bits > most)
        bits = most;                     /* more false "twice": more map entries, still right */
    bits = (bits + 63) / 64 * 64;
    if (bits < 64)
        bits = 64;
    f->bits = bits;
    f->seen = floe__calloc(bits / 64, sizeof *f->seen);
    f->again = floe__calloc(bits / 64, sizeof *f->again);
    if (!f->seen || !f->again) {
        floe__netfilter_free(f);
        return FLOE_OOM(err);
    }
    *out = f;
    return FLOE_OK;
}

void floe__netfilter_free(floe__netfilter *f)
{
    if (!f)
        return;
    floe__free(f->seen);
    floe__free(f->again);
    floe__free(f->rels);
    floe__free(f);
}

size_t floe__netfilter_bytes(const floe__netfilter *f) { return f ? f->bits / 4 : 0; }

static net_rel *net_rel_of(floe__netfilter *f, uint32_t relid, bool add)
{
    for (size_t i = 0; i < f->nrels; i++)
        if (f->rels[i].relid == relid)
            return &f->rels[i];
    if (!add)
        return NULL;
    if (f->nrels == f->cap_rels) {
        size_t cap = f->cap_rels ? f->cap_rels * 2 : 8;
        net_rel *v = floe__realloc(f->rels, cap * sizeof *v);
        if (!v) {
            f->off = true;                 /* no memory for it: the map does the work */
            return NULL;
        }
        f->rels = v;
        f->cap_rels = cap;
    }
    net_rel *r = &f->rels[f->nrels++];
    memset(r, 0, sizeof *r);
    r->relid = relid;
    return r;
}

void floe__netfilter_relation(floe__netfilter *f, const floe__pgo_msg *m)
{
    net_rel *r = net_rel_of(f, m->relid, true);
    if (!r)
        return;
    uint16_t keys[NET_MAX_KEYCOLS], n = 0;
    bool ok = m->replident != 'f';
    for (uint16_t c = 0; ok && c < m->ncols; c++)
        if (m->cols[c].key) {
            ok = n < NET_MAX_KEYCOLS;
            if (ok)
                keys[n++] = c;
        }
    ok = ok && n > 0;
    if (ok && r->known && (n != r->nkeys || memcmp(keys, r->keys, n * sizeof *keys) != 0))
        ok = false;                        /* its key moved within the transaction */
    if (!ok)
        r->bad = true;
    r->known = true;
    r->nkeys = n;
    memcpy(r->keys, keys, n * sizeof *keys);
}

void floe__netfilter_truncate(floe__netfilter *f) { f->off = true; }

void floe__netfilter_seal(floe__netfilter *f)
{
    for (size_t i = 0; i < f->nrels; i++)
        f->rels[i].known = false;          /* the replay tells them again, in the same order */
}

/* The hash of the key a tuple holds (*ok false: it cannot be read). */
static uint64_t tuple_key(const net_rel *r, const floe__pgo_tuple *t, bool *ok)
{
    uint64_t h = r->relid;
    *ok = true;
    for (uint16_t i = 0; i < r->nkeys; i++) {
        if (r->keys[i] >= t->n) {
            *ok = false;
            return 0;
        }
        const floe__pgo_value *v = &t->vals[r->keys[i]];
        if (v->kind == 'u') {
            *ok = false;
            return 0;
        }
        h = floe__hash64(v->data ? v->data : "", v->len, h ^ ((uint64_t)(uint8_t)v->kind << 56));
    }
    return h;
}

/* The key hashes of a change: one, or two when it moved its key. */
static size_t change_keys(floe__netfilter *f, const floe__pgo_msg *m, uint64_t h[2])
{
    net_rel *r = net_rel_of(f, m->relid, false);
    if (f->off || !r || r->bad || !r->known) {
        if (r && !r->known)
            r->bad = true;                 /* a change before its Relation message */
        else if (!r && !f->off)
            f->off = true;
        return 0;
    }
    bool ok1 = true, ok2 = true;
    size_t n = 0;
    if (m->kind != 'I' && m->old_kind)
        h[n++] = tuple_key(r, &m->old_tuple, &ok1);
    if (m->kind != 'D') {
        uint64_t k = tuple_key(r, &m->new_tuple, &ok2);
        if (!n || k != h[0])
            h[n++] = k;
    }
    if (!ok1 || !ok2 || !n) {
        r->bad = true;
        return 0;
    }
    return n;
}

static bool all_set(const uint64_t *a, uint64_t bits, uint64_t h)
{
    uint64_t h2 = (h >> 29) | (h << 35) | 1;
    for (int i = 0; i < NET_PROBES; i++) {
        uint64_t b = (h + (uint64_t)i * h2) % bits;
        if (!(a[b / 64] >> (b % 64) & 1))
            return false;
    }
    return true;
}

static void set_all(uint64_t *a, uint64_t bits, uint64_t h)
{
    uint64_t h2 = (h >> 29) | (h << 35) | 1;
    for (int i = 0; i < NET_PROBES; i++) {
        uint64_t b = (h + (uint64_t)i * h2) % bits;
        a[b / 64] |= (uint64_t)1 << (b % 64);
    }
}

void floe__netfilter_add(floe__netfilter *f, const floe__pgo_msg *m)
{
    uint64_t h[2];
    size_t n = change_keys(f, m, h);
    for (size_t i = 0; i < n; i++) {
        if (all_set(f->seen, f->bits, h[i]))
            set_all(f->again, f->bits, h[i]);
        else
            set_all(f->seen, f->bits, h[i]);
    }
}

bool floe__netfilter_once(floe__netfilter *f, const floe__pgo_msg *m)
{
    uint64_t h[2];
    size_t n = change_keys(f, m, h);
    for (size_t i = 0; i < n; i++)
        if (all_set(f->again, f->bits, h[i]))
            return false;
    return n > 0;
}
