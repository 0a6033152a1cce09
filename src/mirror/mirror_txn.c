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
