/*
 * mirror_stage.c - an initial copy resumable range by range.  This file
 * owns the copy's record on the Iceberg branch floe-copy (what a range
 * copy staged there says, and whether a later run may build on it), and
 * the set of keys that changed since the staged ranges were read.
 *
 * Recording: while a table is copied in ranges inside a snapshot
 * consistent at C, each finished range's data files are committed to the
 * table's branch floe-copy (main does not see them), the snapshot's
 * summary saying the sink, the relation, C, the table's catalog shape in
 * the snapshot, the plan (pages per range, ranges) and the ranges done.
 * The branch goes once main holds the whole copy.
 *
 * Resuming, exact for a table with a key (its primary key or replica
 * identity index), in a new snapshot consistent at C2 > C:
 *
 *   rows = (staged rows at C, key not in K)
 *        + (the ranges not staged, read at C2, key not in K)
 *        + (the rows of the keys in K, read at C2 by key)
 *
 * where K holds every key that an INSERT, UPDATE (old and new key) or
 * DELETE of the table names in the main slot's changes from its confirmed
 * LSN (at most C) up to C2.  A key outside K had no change in [C, C2), so
 * its tuple (if any) is the same at C and C2, at the same TID (a tuple
 * moves only by an UPDATE, or a rewrite, which changes the shape compared
 * below): it is read once, either in a staged range at C or in a range
 * read at C2, with the same value.  A key in K is taken as C2 has it,
 * once (a unique key).  So the rows are the table at C2, and the copy
 * commits with frontier C2 as any copy in a temporary slot's snapshot.
 * K may hold more keys than changed (changes before C): those are read
 * again at C2, which is still exact.
 *
 * The record is not used (the table is copied whole) when: the table has
 * no key (keyed by the whole row: a duplicate read twice cannot be told
 * from two equal rows), the slot was created by this run or is confirmed
 * past C (the changes in between are gone), the relation or its shape
 * changed (a rewrite moves tuples: VACUUM FULL, CLUSTER, TRUNCATE, an
 * ALTER TABLE), a TRUNCATE of it is among the changes, or K outgrows its
 * memory.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "mirror/mirror_internal.h"

#define FETCH_ROWS 10000
#define KEYS_PER_QUERY 500

/* ---- the set of changed keys ------------------------------------------------------------ */

/* An entry in keys: u32 key length, the key bytes, then per key column
 * u32 text length and the text (for the query that reads them again). */

static uint64_t hash_key(const uint8_t *k, size_t n) { return floe__hash64(k, n, 7); }

static const uint8_t *entry_key(const floe__mstage *s, size_t i, uint32_t *len)
{
    const uint8_t *p = s->keys.data + s->offs[i];
    *len = floe__get_le32(p);
    return p + 4;
}

bool floe__mirror_stage_changed(const floe__mstage *s, const uint8_t *key, size_t len)
{
    if (!s || !s->nkeys)
        return false;
    for (size_t h = hash_key(key, len) & (s->nslots - 1);; h = (h + 1) & (s->nslots - 1)) {
        uint64_t v = s->slots[h];
        if (!v)
            return false;
        uint32_t l;
        const uint8_t *k = entry_key(s, (size_t)(v - 1), &l);
        if (l == len && memcmp(k, key, len) == 0)
            return true;
    }
}

static int grow_slots(floe__mstage *s, floe_error *err)
{
    size_t n = s->nslots ? s->nslots * 2 : 1024;
    uint64_t *slots = floe__calloc(n, sizeof *slots);
    if (!slots)
        return FLOE_OOM(err);
    for (size_t i = 0; i < s->nkeys; i++) {
        uint32_t l;
        const uint8_t *k = entry_key(s, i, &l);
        size_t h = hash_key(k, l) & (n - 1);
        while (slots[h])
            h = (h + 1) & (n - 1);
        slots[h] = i + 1;
    }
    floe__free(s->slots);
    s->slots = slots;
    s->nslots = n;
    return FLOE_OK;
}

/* Add the key of tuple `tup` of t (a key tuple or a whole row). */
static int add_key(floe_pg *pg, floe__mtable *t, floe__mstage *s, const floe__pgo_tuple *tup,
                   floe_error *err)
{
    FLOE_FORWARD(floe__mirror_tuple_row(pg, t, tup, NULL, true, t->keyrow, err));
    FLOE_FORWARD(floe__mirror_row_key(t, t->keyrow, &pg->keybuf, err));
    const uint8_t *key = pg->keybuf.data;
    size_t len = pg->keybuf.len;
    if (floe__mirror_stage_changed(s, key, len))
        return FLOE_OK;
    if ((s->nkeys + 1) * 2 > s->nslots)
        FLOE_FORWARD(grow_slots(s, err));
    if (s->nkeys == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        uint64_t *o = floe__realloc(s->offs, cap * sizeof *o);
        if (!o)
            return FLOE_OOM(err);
        s->offs = o;
        s->cap = cap;
    }
    uint64_t off = s->keys.len;
    uint8_t n4[4];
    floe__put_le32(n4, (uint32_t)len);
    FLOE_FORWARD(floe__buf_append(&s->keys, n4, 4, err));
    FLOE_FORWARD(floe__buf_append(&s->keys, key, len, err));
    for (size_t k = 0; k < t->nkeys; k++) {
        const floe__pgo_value *v = &tup->vals[t->keys[k]];
        floe__put_le32(n4, v->len);
        FLOE_FORWARD(floe__buf_append(&s->keys, n4, 4, err));
        FLOE_FORWARD(floe__buf_append(&s->keys, v->data, v->len, err));
    }
    s->offs[s->nkeys++] = off;
    size_t h = hash_key(key, len) & (s->nslots - 1);
    while (s->slots[h])
        h = (h + 1) & (s->nslots - 1);
    s->slots[h] = s->nkeys;
    return FLOE_OK;
}

static int unhex(const char *x, floe__buf *out, floe_error *err)
{
    floe__buf_reset(out);
    FLOE_RETURN_IF(x[0] != '\\' || x[1] != 'x', err, FLOE_EINPUT, "a bytea value not in hex");
    for (const char *p = x + 2; p[0] && p[1]; p += 2) {
        unsigned v;
        FLOE_RETURN_IF(sscanf(p, "%2x", &v) != 1, err, FLOE_EINPUT, "a bad hex digit");
        FLOE_FORWARD(floe__buf_putc(out, (uint8_t)v, err));
    }
    return FLOE_OK;
}

/* Whether tup's key columns all came as text (an unchanged TOASTed key
 * value comes as 'u', and names no key). */
static bool key_sent(const floe__mtable *t, const floe__pgo_tuple *tup)
{
    for (size_t k = 0; k < t->nkeys; k++)
        if (t->keys[k] >= tup->n || tup->vals[t->keys[k]].kind != 't')
            return false;
    return true;
}

/* One pgoutput message of the changes: the keys of t's changes into s;
 * *truncated at a TRUNCATE of t. */
static int take_message(floe_pg *pg, floe__mtable *t, floe__mstage *s, floe__pgo_decoder *d,
                        const floe__buf *msg, bool *truncated, floe_error *err)
{
    floe__pgo_msg m;
    FLOE_FORWARD(floe__pgo_decode(d, msg->data, msg->len, &m, err));
    if (m.kind == 'T') {
        for (uint32_t i = 0; i < m.nrels; i++)
            *truncated = *truncated || floe__pgo_relid(&m, i) == t->relid;
        return FLOE_OK;
    }
    if ((m.kind != 'I' && m.kind != 'U' && m.kind != 'D') || m.relid != t->relid)
        return FLOE_OK;
    FLOE_RETURN_IF((m.kind != 'I' && m.old_kind && !key_sent(t, &m.old_tuple)) ||
                   (m.kind != 'D' && !key_sent(t, &m.new_tuple)), err, FLOE_EUNSUPPORTED,
                   "a change of it names its key by a value left out (TOAST)");
    if (m.kind != 'I' && m.old_kind)
        FLOE_FORWARD(add_key(pg, t, s, &m.old_tuple, err));
    if (m.kind != 'D')
        FLOE_FORWARD(add_key(pg, t, s, &m.new_tuple, err));
    return FLOE_OK;
}


/* K: the keys t's changes name, from the main slot's confirmed LSN up to
 * `upto` (peeked: the slot does not move).  *usable false when it cannot
 * be used (why says so). */
static int changed_keys(floe_pg *pg, floe__mtable *t, floe__mstage *s, uint64_t upto,
                        bool *usable, char *why, size_t cap, floe_error *err)
{
    char lsn[24];
    floe__lsn_format(upto, lsn, sizeof lsn);
    floe__buf sql, msg;
    floe__buf_init(&sql, 1 << 16);
    floe__buf_init(&msg, (size_t)1 << 30);
    floe__pgo_decoder d;
    floe__pgo_decoder_init(&d);
    int rc = floe__pg_exec(pg->conn, "BEGIN", err);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(&sql, err, "DECLARE floe_changes NO SCROLL CURSOR FOR SELECT "
                              "data FROM pg_logical_slot_peek_binary_changes(");
    if (rc == FLOE_OK)
        rc = floe__pg_quote_literal(pg->slot_name, &sql, err);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(&sql, err, ", '%s', NULL, 'proto_version', '1', "
                              "'publication_names', ", lsn);
    if (rc == FLOE_OK)
        rc = floe__pg_quote_literal(pg->pub_name, &sql, err);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(&sql, err, ")%c", 0);
    if (rc == FLOE_OK)
        rc = floe__pg_exec(pg->conn, (const char *)sql.data, err);
    bool truncated = false;
    size_t budget = pg->sink.memory_limit / 8;
    for (size_t got = FETCH_ROWS; rc == FLOE_OK && got == FETCH_ROWS && !truncated;) {
        floe__pg_result *r = NULL;
        rc = floe__pg_query(pg->conn, "FETCH 10000 FROM floe_changes", NULL, 0, &r, err);
        got = rc == FLOE_OK ? floe__pg_rows(r) : 0;
        for (size_t i = 0; rc == FLOE_OK && i < got; i++) {
            rc = unhex(floe__pg_get(r, i, 0), &msg, err);
            if (rc == FLOE_OK)
                rc = take_message(pg, t, s, &d, &msg, &truncated, err);
        }
        floe__pg_result_free(r);
        if (rc == FLOE_OK && s->keys.len + s->nslots * 8 > budget) {
            snprintf(why, cap, "more keys changed since than a part of --memory-limit holds");
            *usable = false;
            break;
        }
    }
    if (truncated) {
        snprintf(why, cap, "it was truncated since");
        *usable = false;
    }
    int end = floe__pg_exec(pg->conn, "ROLLBACK", rc == FLOE_OK ? err : NULL);
    floe__pgo_decoder_free(&d);
    floe__buf_free(&sql);
    floe__buf_free(&msg);
    return rc != FLOE_OK ? rc : end;
}

/* ---- the record -------------------------------------------------------------------------- */

void floe__mirror_stage_free(floe__mstage *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nfiles; i++)
        floe__free(s->files[i]);
    floe__free(s->files);
    floe__free(s->done);
    floe__buf_free(&s->keys);
    floe__free(s->offs);
    floe__free(s->slots);
    floe__free(s);
}

static const char *get(const floe__snapshot *snap, const char *key)
{
    const char *v = floe__snapshot_summary_get(snap, key);
    return v ? v : "";
}

/* The head of the branch: its record, when it is this mirror's for t. */
static int read_record(floe_pg *pg, floe__mtable *t, floe__mstage *s, char **shape,
                       bool *usable, char *why, size_t cap, floe_error *err)
{
    floe__table *tb = NULL;
    FLOE_FORWARD(floe__mirror_open_iceberg(pg, t, &tb, err));
    int64_t head = -1;
    const floe__snapshot *snap = NULL;
    if (floe__metadata_ref(tb->loaded->metadata, FLOE__MIRROR_COPY_BRANCH, &head, NULL))
        snap = floe__metadata_snapshot_by_id(tb->loaded->metadata, head);
    *usable = snap && strcmp(get(snap, "floe.copy.sink-id"), t->sink_id) == 0 &&
              strtoul(get(snap, "floe.copy.relid"), NULL, 10) == t->relid;
    if (!*usable) {
        floe__table_free(tb);
        snprintf(why, cap, "nothing of it is staged");
        return FLOE_OK;
    }
    s->at = strtoull(get(snap, "floe.copy.lsn"), NULL, 10);
    s->per = strtoull(get(snap, "floe.copy.range-pages"), NULL, 10);
    s->nranges = strtoull(get(snap, "floe.copy.ranges"), NULL, 10);
    *shape = floe__strdup(get(snap, "floe.copy.shape"));
    int rc = *shape ? FLOE_OK : FLOE_OOM(err);
    if (rc == FLOE_OK && (!s->at || !s->per || s->nranges < 2 || s->nranges > (1u << 24)))
        rc = floe__err_set(err, FLOE_EFORMAT, "branch %s of %s: a malformed copy record",
                           FLOE__MIRROR_COPY_BRANCH, t->ident);
    if (rc == FLOE_OK && !(s->done = floe__calloc(s->nranges, sizeof *s->done)))
        rc = FLOE_OOM(err);
    for (const char *p = get(snap, "floe.copy.done"); rc == FLOE_OK && *p;) {
        char *end;
        unsigned long long r = strtoull(p, &end, 10);
        if (end == p || r >= s->nranges) {
            rc = floe__err_set(err, FLOE_EFORMAT, "branch %s of %s: a malformed copy record",
                               FLOE__MIRROR_COPY_BRANCH, t->ident);
            break;
        }
        s->done[r] = true;
        s->ndone++;
        p = *end == ',' ? end + 1 : end;
    }
    floe__plan *plan = NULL;
    if (rc == FLOE_OK)
        rc = floe__table_plan(tb, head, &plan, err);
    if (rc == FLOE_OK && plan->n_deletes)
        rc = floe__err_set(err, FLOE_EFORMAT, "branch %s of %s holds delete files",
                           FLOE__MIRROR_COPY_BRANCH, t->ident);
    if (rc == FLOE_OK && !(s->files = floe__calloc(plan->n_data + 1, sizeof *s->files)))
        rc = FLOE_OOM(err);
    for (size_t i = 0; rc == FLOE_OK && i < plan->n_data; i++) {
        if (!(s->files[i] = floe__strdup(plan->data[i].f.file.path)))
            rc = FLOE_OOM(err);
        s->nfiles = i + 1;
    }
    floe__plan_free(plan);
    floe__table_free(tb);
    return rc;
}

int floe__mirror_stage_resume(floe_pg *pg, floe__mtable *t, uint64_t at, floe__mstage **out,
                              floe_error *err)
{
    *out = NULL;
    if (pg->slot.created || t->partitioned || !t->nkeys || pg->server_version < 140000)
        return FLOE_OK;
    floe__mstage *s = floe__calloc(1, sizeof *s);
    if (!s)
        return FLOE_OOM(err);
    floe__buf_init(&s->keys, (size_t)1 << 40);
    char why[200] = "", *then = NULL, *now = NULL, lsn[24];
    bool usable = false;
    int rc = read_record(pg, t, s, &then, &usable, why, sizeof why, err);
    if (rc == FLOE_OK && usable && s->at < pg->slot.confirmed) {
        usable = false;
        snprintf(why, sizeof why, "slot %s is confirmed past the point its staged ranges were "
                 "read at", pg->slot_name);
    }
    if (rc == FLOE_OK && usable)
        rc = floe__mirror_shape(pg->rconn, t, &now, err);
    if (rc == FLOE_OK && usable && strcmp(then, now) != 0) {
        usable = false;
        snprintf(why, sizeof why, "it changed since its staged ranges were read (an ALTER "
                 "TABLE, or a rewrite: TRUNCATE, VACUUM FULL, CLUSTER)");
    }
    if (rc == FLOE_OK && usable &&
        changed_keys(pg, t, s, at, &usable, why, sizeof why, err) != FLOE_OK) {
        usable = false;                  /* e.g. changes of an older shape: copied whole */
        snprintf(why, sizeof why, "its changes since cannot be read: %s",
                 floe_error_message(err));
        floe_error_clear(err);
    }
    floe__free(then);
    floe__free(now);
    if (rc != FLOE_OK) {
        floe__mirror_stage_free(s);
        return floe__err_wrap(err, rc, "resuming the copy of %s from branch %s of %s",
                              t->source, FLOE__MIRROR_COPY_BRANCH, t->ident);
    }
    floe__lsn_format(s->at, lsn, sizeof lsn);
    if (!usable) {
        if (s->at)
            floe__mirror_notice(pg, "%s: the ranges staged at %s are not used (%s); it is "
                                "copied whole", t->source, lsn, why);
        floe__mirror_stage_free(s);
        return FLOE_OK;
    }
    floe__mirror_notice(pg, "%s: resuming its copy: %zu of %" PRIu64 " ranges staged at %s "
                        "(%zu files), %zu keys changed since are read again", t->source,
                        s->ndone, s->nranges, lsn, s->nfiles, s->nkeys);
    *out = s;
    return FLOE_OK;
}

int floe__mirror_stage_keys_sql(const floe__mstage *s, const floe__mtable *t, size_t lo,
                                size_t hi, floe__buf *b, floe_error *err)
{
    floe__buf_reset(b);
    FLOE_FORWARD(floe__mirror_select_sql(t, b, err));
    FLOE_FORWARD(floe__buf_printf(b, err, " WHERE ("));
    for (size_t k = 0; k < t->nkeys; k++) {
        if (k)
            FLOE_FORWARD(floe__buf_append(b, ", ", 2, err));
        FLOE_FORWARD(floe__pg_quote_ident(t->cols[t->keys[k]].name, b, err));
    }
    FLOE_FORWARD(floe__buf_printf(b, err, ") IN ("));
    floe__buf lit;
    floe__buf_init(&lit, (size_t)1 << 30);
    int rc = FLOE_OK;
    for (size_t i = lo; rc == FLOE_OK && i < hi; i++) {
        uint32_t klen;
        const uint8_t *p = entry_key(s, i, &klen) + klen;
        rc = floe__buf_printf(b, err, "%s(", i > lo ? ", " : "");
        for (size_t k = 0; rc == FLOE_OK && k < t->nkeys; k++) {
            uint32_t n = floe__get_le32(p);
            floe__buf_reset(&lit);
            rc = floe__buf_append(&lit, p + 4, n, err);
            if (rc == FLOE_OK)
                rc = floe__buf_putc(&lit, 0, err);
            if (rc == FLOE_OK && k)
                rc = floe__buf_append(b, ", ", 2, err);
            if (rc == FLOE_OK)
                rc = floe__pg_quote_literal((const char *)lit.data, b, err);
            p += 4 + n;
        }
        if (rc == FLOE_OK)
            rc = floe__buf_putc(b, ')', err);
    }
    floe__buf_free(&lit);
    FLOE_FORWARD(rc);
    FLOE_FORWARD(floe__buf_printf(b, err, ")) TO STDOUT"));
    return floe__buf_putc(b, 0, err);
}

size_t floe__mirror_stage_key_queries(const floe__mstage *s)
{
    return (s->nkeys + KEYS_PER_QUERY - 1) / KEYS_PER_QUERY;
}

void floe__mirror_stage_key_range(const floe__mstage *s, size_t q, size_t *lo, size_t *hi)
{
    *lo = q * KEYS_PER_QUERY;
    *hi = *lo + KEYS_PER_QUERY < s->nkeys ? *lo + KEYS_PER_QUERY : s->nkeys;
}

int floe__mirror_stage_record(floe_pg *pg, floe__mtable *t, floe__bulk *b, uint64_t at,
                              const char *shape, uint64_t per, uint64_t n, bool *done,
                              floe_error *err)
{
    const uint64_t *tags;
    size_t ntags;
    FLOE_FORWARD(floe__bulk_stage_take(b, &tags, &ntags, err));
    if (!ntags)
        return FLOE_OK;
    for (size_t i = 0; i < ntags; i++)
        if (tags[i] < n)
            done[tags[i]] = true;
    char lsn[24], rel[16], pages[24], count[24];
    snprintf(lsn, sizeof lsn, "%" PRIu64, at);
    snprintf(rel, sizeof rel, "%u", t->relid);
    snprintf(pages, sizeof pages, "%" PRIu64, per);
    snprintf(count, sizeof count, "%" PRIu64, n);
    floe__buf list;
    floe__buf_init(&list, (size_t)1 << 30);
    int rc = FLOE_OK;
    for (uint64_t r = 0; rc == FLOE_OK && r < n; r++)
        if (done[r])
            rc = floe__buf_printf(&list, err, "%s%" PRIu64, list.len ? "," : "", r);
    if (rc == FLOE_OK)
        rc = floe__buf_putc(&list, 0, err);
    const char *kv[] = {"floe.copy.sink-id", t->sink_id, "floe.copy.relid", rel,
                        "floe.copy.lsn", lsn, "floe.copy.shape", shape,
                        "floe.copy.range-pages", pages, "floe.copy.ranges", count,
                        "floe.copy.done", (const char *)list.data};
    if (rc == FLOE_OK)
        rc = floe__bulk_stage_commit(b, kv, sizeof kv / sizeof *kv, err);
    floe__buf_free(&list);
    if (rc != FLOE_OK) {
        floe__mirror_warn(pg, "%s: its copy goes on, but a kill from now on starts it over: %s",
                          t->source, floe_error_message(err));
        floe_error_clear(err);
    }
    return FLOE_OK;
}
