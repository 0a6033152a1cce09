/*
 * mirror_part.c - partitioned Postgres tables (relkind 'p'), mirrored as one
 * Iceberg table under the root's name and columns.
 *
 * It owns what is particular to them; the copy (mirror_copy.c: COPY
 * (SELECT ...), since Postgres refuses COPY of a partitioned table), the
 * stream and resyncs treat the root as any table.
 *
 * The publication must publish through the root (publish_via_partition_root
 * = true): then every change of a partition comes under the root's relid,
 * its tuple in the root's column order, and an UPDATE that moves a row to
 * another partition comes as a DELETE and an INSERT (Postgres 15).  The old
 * tuple of an update or delete is what the *partition's* replica identity
 * logged, marked by the *root's* identity: a FULL root over a DEFAULT
 * partition sends 'O' tuples holding only the key (the other columns null),
 * so a FULL root needs FULL partitions; a DEFAULT root (its primary key,
 * which holds the partition columns) takes DEFAULT or FULL partitions.
 *
 * What the stream does not tell: ATTACH, DETACH and DROP of a partition
 * change the root's rows without a change in the stream, and a TRUNCATE of
 * one partition is not sent at all (only a TRUNCATE of the root is, naming
 * the root).  So each root's partitions are kept as a fingerprint (every
 * partition's oid and relfilenode: TRUNCATE gives a partition a new
 * relfilenode) read in the snapshot the table was copied in, recorded in
 * every commit as floe.pg.partitions (a count and a hash), compared at start
 * with what the catalog holds (a difference resyncs the table), and
 * verified before every round of commits, so that no commit records a
 * frontier past such a change without it:
 *
 *   1. the frontier F to commit to is fixed (everything committed below F
 *      was received);
 *   2. pg_locks: a DDL on the tree (ATTACH, DETACH, CREATE ... PARTITION OF,
 *      DROP, TRUNCATE, VACUUM FULL hold a lock of SHARE UPDATE EXCLUSIVE or
 *      stronger on the root or the partition until after they are visible)
 *      still running defers the table's commit to the next round;
 *   3. else, read after that, the catalog shows every such change that
 *      committed below F: a partition gone, a new one holding rows, or an
 *      unexplained new relfilenode resyncs the table (floe__mirror_resync_mark:
 *      it is not committed again before its copy); a new empty partition is
 *      taken in (its rows come through the root); a relfilenode changed by a
 *      TRUNCATE of the root the stream brought (its xid) is explained, and
 *      one that may be explained by such a TRUNCATE not received yet waits
 *      until the stream passes the WAL position read with it.
 */
#include <inttypes.h>
#include <stdio.h>

#include "mirror/mirror_internal.h"

static bool yes(const char *v) { return v && v[0] == 't'; }

static const char *ident_name(char ri)
{
    return ri == 'f' ? "FULL" : ri == 'd' ? "DEFAULT" : ri == 'n' ? "NOTHING" : "USING INDEX";
}

/* Whether a partition with identity `leaf` logs what a root with `root`
 * announces: FULL needs FULL; DEFAULT (the key) takes DEFAULT or FULL. */
static bool identity_fits(char root, char leaf)
{
    return root == 'f' ? leaf == 'f' : leaf == 'd' || leaf == 'f';
}

static int identity_refusal(const floe__mtable *t, const char *leaf, char ri, floe_error *err)
{
    return floe__err_set(err, FLOE_EUNSUPPORTED, "%s: partition %s has REPLICA IDENTITY %s "
                         "while %s has %s: Postgres sends the old rows of its updates and "
                         "deletes as the partition logged them (%s): run ALTER TABLE %s "
                         "REPLICA IDENTITY %s", t->source, leaf, ident_name(ri), t->source,
                         ident_name(t->replident), t->replident == 'f' ? "only the key, under "
                         "a FULL root" : "no key at all", leaf,
                         t->replident == 'f' ? "FULL" : "DEFAULT");
}

/* Whether the publication exists and publishes through partition roots. */
static int via_root(floe_pg *pg, bool *exists, bool *via, floe_error *err)
{
    const char *params[1] = {pg->pub_name};
    floe__pg_result *r = NULL;
    FLOE_FORWARD(floe__pg_query(pg->conn, "SELECT pubviaroot FROM pg_publication WHERE "
                                "pubname = $1", params, 1, &r, err));
    *exists = floe__pg_rows(r) > 0;
    *via = *exists && yes(floe__pg_get(r, 0, 0));
    floe__pg_result_free(r);
    return FLOE_OK;
}

bool floe__mirror_part_via_root(const floe_pg *pg)
{
    for (size_t i = 0; i < pg->ntables; i++)
        if (pg->tables[i].partitioned)
            return true;
    return false;
}

/* The partitions of root t: each leaf's identity fits the root's. */
static int check_leaves(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    char rel[16];
    snprintf(rel, sizeof rel, "%u", t->relid);
    const char *params[1] = {rel};
    floe__pg_result *r = NULL;
    FLOE_FORWARD(floe__pg_query(pg->conn, "SELECT format('%I.%I', n.nspname, c.relname), "
                                "c.relkind, c.relreplident FROM pg_partition_tree($1) p JOIN "
                                "pg_class c ON c.oid = p.relid JOIN pg_namespace n ON n.oid = "
                                "c.relnamespace WHERE p.isleaf AND p.relid <> $1 ORDER BY c.oid",
                                params, 1, &r, err));
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < floe__pg_rows(r); i++) {
        const char *leaf = floe__pg_get(r, i, 0), *kind = floe__pg_get(r, i, 1);
        char ri = floe__pg_get(r, i, 2)[0];
        if (kind[0] != 'r')
            rc = floe__err_set(err, FLOE_EUNSUPPORTED, "%s: partition %s is not a plain table "
                               "(relkind '%s': a foreign table's rows are not in Postgres's "
                               "WAL): floe cannot mirror %s", t->source, leaf, kind, t->source);
        else if (!identity_fits(t->replident, ri))
            rc = identity_refusal(t, leaf, ri, err);
    }
    floe__pg_result_free(r);
    return rc;
}

/* A root: Postgres 13 or later, an identity floe reads, partitions that
 * fit it, a publication that publishes through it (or will). */
static int describe_root(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    FLOE_RETURN_IF(pg->server_version < 130000, err, FLOE_EUNSUPPORTED, "%s is partitioned: "
                   "Postgres %d cannot publish a partitioned table through its root (Postgres "
                   "13 or later can); publish and mirror its partitions instead", t->source,
                   pg->server_version / 10000);
    FLOE_RETURN_IF(t->replident == 'i', err, FLOE_EUNSUPPORTED, "%s is partitioned and has "
                   "REPLICA IDENTITY USING INDEX, which its partitions do not share: ALTER "
                   "TABLE %s REPLICA IDENTITY DEFAULT (its primary key), or FULL", t->source,
                   t->source);
    t->partitioned = true;
    if (t->replident != 'n')
        FLOE_FORWARD(check_leaves(pg, t, err));
    bool exists, via;
    FLOE_FORWARD(via_root(pg, &exists, &via, err));
    FLOE_RETURN_IF(exists && !via && !pg->opts.create_publication, err, FLOE_ESTATE,
                   "%s is partitioned, and publication \"%s\" publishes its partitions under "
                   "their own names (publish_via_partition_root is off), so its changes would "
                   "not name %s: ALTER PUBLICATION \"%s\" SET (publish_via_partition_root = "
                   "true), or pass --create-publication", t->source, pg->pub_name, t->source,
                   pg->pub_name);
    return floe__mirror_part_read(pg, pg->conn, t, err);
}

/* A partition mirrored by itself: not when its root is mirrored too, nor
 * when the publication publishes it through an ancestor (its changes then
 * carry the ancestor's relid). */
static int describe_partition(floe_pg *pg, floe__mtable *t, floe_error *err)
{
    char rel[16];
    snprintf(rel, sizeof rel, "%u", t->relid);
    const char *params[2] = {rel, pg->pub_name};
    floe__pg_result *r = NULL;
    FLOE_FORWARD(floe__pg_query(pg->conn, pg->server_version < 130000
                                ? "SELECT n.nspname, c.relname, false FROM pg_partition_ancestors"
                                  "($1) a JOIN pg_class c ON c.oid = a.relid JOIN pg_namespace n "
                                  "ON n.oid = c.relnamespace WHERE a.relid <> $1 AND $2 <> ''"
                                : "SELECT n.nspname, c.relname, EXISTS (SELECT 1 FROM "
                                  "pg_publication_tables pt JOIN pg_publication pb ON "
                                  "pb.pubname = pt.pubname WHERE pt.pubname = $2 AND "
                                  "pb.pubviaroot AND pt.schemaname = n.nspname AND pt.tablename "
                                  "= c.relname) FROM pg_partition_ancestors($1) a JOIN pg_class "
                                  "c ON c.oid = a.relid JOIN pg_namespace n ON n.oid = "
                                  "c.relnamespace WHERE a.relid <> $1", params, 2, &r, err));
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < floe__pg_rows(r); i++) {
        const char *nsp = floe__pg_get(r, i, 0), *name = floe__pg_get(r, i, 1);
        bool mirrored = false;
        for (size_t k = 0; k < pg->ntables && !mirrored; k++)
            mirrored = strcmp(pg->tables[k].nsp, nsp) == 0 &&
                       strcmp(pg->tables[k].rel, name) == 0;
        if (mirrored)
            rc = floe__err_set(err, FLOE_EINVAL, "%s is a partition of %s.%s, which is mirrored "
                               "too: its rows are in %s.%s's Iceberg table; leave %s out of "
                               "--tables", t->source, nsp, name, nsp, name, t->source);
        else if (yes(floe__pg_get(r, i, 2)))
            rc = floe__err_set(err, FLOE_EINVAL, "%s is a partition of %s.%s, and publication "
                               "\"%s\" publishes it through %s.%s (publish_via_partition_root): "
                               "its changes carry %s.%s's name, never %s's; mirror %s.%s "
                               "instead (--tables %s.%s)", t->source, nsp, name, pg->pub_name,
                               nsp, name, nsp, name, t->source, nsp, name, nsp, name);
    }
    floe__pg_result_free(r);
    return rc;
}

int floe__mirror_part_describe(floe_pg *pg, floe__mtable *t, char kind, bool is_partition,
                               floe_error *err)
{
    if (kind == 'p')
        FLOE_FORWARD(describe_root(pg, t, err));
    return is_partition ? describe_partition(pg, t, err) : FLOE_OK;
}

int floe__mirror_part_publication(floe_pg *pg, floe_error *err)
{
    bool exists, via;
    if (!floe__mirror_part_via_root(pg))
        return FLOE_OK;
    FLOE_FORWARD(via_root(pg, &exists, &via, err));
    if (!exists || via)
        return FLOE_OK;
    floe__buf sql;
    floe__buf_init(&sql, 4096);
    int rc = floe__buf_printf(&sql, err, "ALTER PUBLICATION ");
    if (rc == FLOE_OK)
        rc = floe__pg_quote_ident(pg->pub_name, &sql, err);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(&sql, err, " SET (publish_via_partition_root = true)%c", 0);
    if (rc == FLOE_OK)
        rc = floe__pg_exec(pg->conn, (const char *)sql.data, err);
    if (rc == FLOE_OK)
        floe__mirror_notice(pg, "%s (a partitioned table is mirrored)", (const char *)sql.data);
    else
        floe__err_wrap(err, rc, "%s", (const char *)sql.data);
    floe__buf_free(&sql);
    return rc;
}

/* ---- the fingerprint ------------------------------------------------------------------------- */

int floe__mirror_part_read(floe_pg *pg, floe__pg_conn *c, floe__mtable *t, floe_error *err)
{
    (void)pg;
    if (!t->partitioned)
        return FLOE_OK;
    char rel[16];
    snprintf(rel, sizeof rel, "%u", t->relid);
    const char *params[1] = {rel};
    floe__pg_result *r = NULL;
    FLOE_FORWARD(floe__pg_query(c, "SELECT coalesce(string_agg(c.oid || ':' || c.relfilenode, "
                                "',' ORDER BY c.oid), '') FROM pg_partition_tree($1) p JOIN "
                                "pg_class c ON c.oid = p.relid WHERE p.relid <> $1", params, 1,
                                &r, err));
    const char *v = floe__pg_rows(r) ? floe__pg_get(r, 0, 0) : "";
    char *parts = floe__strdup(v ? v : "");
    floe__pg_result_free(r);
    if (!parts)
        return FLOE_OOM(err);
    floe__free(t->parts);
    t->parts = parts;
    t->part_wait = 0;
    return t->sink ? floe__mirror_part_record(t, err) : FLOE_OK;
}

/* "count:hash" of a fingerprint: what the commits record. */
static void short_form(const char *parts, char *out, size_t n)
{
    size_t count = 0;
    for (const char *p = parts; *p; p++)
        count += *p == ',';
    count += parts[0] != 0;
    snprintf(out, n, "%zu:%016" PRIx64, count, floe__hash64(parts, strlen(parts), 0));
}

int floe__mirror_part_record(floe__mtable *t, floe_error *err)
{
    if (!t->partitioned || !t->parts)
        return FLOE_OK;
    char v[48];
    short_form(t->parts, v, sizeof v);
    return floe_sink_set_property(t->sink, "floe.pg.partitions", v, err);
}

int floe__mirror_part_resumed(floe_pg *pg, floe__mtable *t, const char *recorded,
                              floe_error *err)
{
    (void)err;
    if (!t->partitioned || !t->parts || !recorded)
        return FLOE_OK;
    char now[48];
    short_form(t->parts, now, sizeof now);
    if (strcmp(now, recorded) != 0)
        floe__mirror_resync_mark(pg, t, "its partitions changed since its last commit (ATTACH, "
                                 "DETACH, DROP or TRUNCATE of a partition, which the change "
                                 "stream does not carry, or a rewrite)");
    return FLOE_OK;
}

void floe__mirror_part_truncated(floe_pg *pg, floe__mtable *t)
{
    if (t->partitioned)
        t->trunc_xids[t->ntrunc_xids++ % 8] = pg->txn_xid;
}

/* ---- verified before each round of commits ---------------------------------------------------- */

typedef struct leaf_now {
    uint32_t oid, node, xmin;
    char kind, ident;
    bool empty;
    const char *name;
} leaf_now;

/* The relfilenode fingerprint `parts` had for oid; false when absent. */
static bool old_node(const char *parts, uint32_t oid, uint32_t *node)
{
    for (const char *p = parts; p && *p;) {
        char *e;
        unsigned long o = strtoul(p, &e, 10);
        unsigned long n = *e == ':' ? strtoul(e + 1, &e, 10) : 0;
        if (o == oid) {
            *node = (uint32_t)n;
            return true;
        }
        p = *e == ',' ? e + 1 : e + strlen(e);
    }
    return false;
}

static bool explained(const floe__mtable *t, uint32_t xmin)
{
    uint32_t n = t->ntrunc_xids < 8 ? t->ntrunc_xids : 8;
    for (uint32_t i = 0; i < n; i++)
        if (t->trunc_xids[i] == xmin)
            return true;
    return false;
}

typedef enum verdict { PARTS_SAME, PARTS_TAKEN, PARTS_WAIT, PARTS_RESYNC } verdict;

/* Judge one partition of the catalog now against t->parts: *why when it
 * makes a resync. */
static int judge(floe__mtable *t, const leaf_now *l, verdict *v, char *why, size_t n,
                 floe_error *err)
{
    uint32_t node;
    if (!old_node(t->parts, l->oid, &node)) {
        if (l->kind == 'p')
            *v = *v > PARTS_TAKEN ? *v : PARTS_TAKEN;
        else if (l->kind != 'r')
            return floe__err_set(err, FLOE_EUNSUPPORTED, "%s: partition %s, added while floe "
                                 "ran, is not a plain table (relkind '%c'): floe cannot mirror "
                                 "%s (detach it, then run floe again)", t->source, l->name,
                                 l->kind, t->source);
        else if (!identity_fits(t->replident, l->ident))
            return floe__err_set(err, FLOE_EUNSUPPORTED, "%s: partition %s, added while floe "
                                 "ran, has REPLICA IDENTITY %s while %s has %s: run ALTER TABLE "
                                 "%s REPLICA IDENTITY %s, then run floe again (it copies %s "
                                 "again)", t->source, l->name, ident_name(l->ident), t->source,
                                 ident_name(t->replident), l->name,
                                 t->replident == 'f' ? "FULL" : "DEFAULT", t->source);
        else if (l->empty)
            *v = *v > PARTS_TAKEN ? *v : PARTS_TAKEN;
        else {
            *v = PARTS_RESYNC;
            snprintf(why, n, "partition %s joined it holding rows the change stream never "
                     "carried (ATTACH PARTITION)", l->name);
        }
    } else if (node != l->node && !explained(t, l->xmin)) {
        *v = *v > PARTS_WAIT ? *v : PARTS_WAIT;
        if (!why[0])
            snprintf(why, n, "partition %s was truncated or rewritten (TRUNCATE of the "
                     "partition, which the change stream does not carry; VACUUM FULL, CLUSTER)",
                     l->name);
    }
    return FLOE_OK;
}

/* Every partition of t in the catalog now (rows [*at, ...) of r for t),
 * judged; partitions that left it make a resync. */
static int judge_table(floe_pg *pg, floe__mtable *t, floe__pg_result *r, size_t *at,
                       uint64_t wal, floe__buf *now, floe_error *err)
{
    verdict v = PARTS_SAME;
    char why[400] = "";
    size_t seen = 0;
    floe__buf_reset(now);
    for (; *at < floe__pg_rows(r); (*at)++) {
        size_t i = *at;
        if ((uint32_t)strtoul(floe__pg_get(r, i, 0), NULL, 10) != t->relid)
            break;
        leaf_now l = {(uint32_t)strtoul(floe__pg_get(r, i, 1), NULL, 10),
                      (uint32_t)strtoul(floe__pg_get(r, i, 2), NULL, 10),
                      (uint32_t)strtoul(floe__pg_get(r, i, 3), NULL, 10),
                      floe__pg_get(r, i, 4)[0], floe__pg_get(r, i, 5)[0],
                      yes(floe__pg_get(r, i, 6)), floe__pg_get(r, i, 7)};
        uint32_t node;
        seen += old_node(t->parts, l.oid, &node);
        FLOE_FORWARD(judge(t, &l, &v, why, sizeof why, err));
        FLOE_FORWARD(floe__buf_printf(now, err, "%s%u:%u", now->len ? "," : "", l.oid, l.node));
    }
    size_t before = 0;
    for (const char *p = t->parts; p && *p; p++)
        before += *p == ',';
    before += t->parts && t->parts[0];
    if (seen < before) {
        v = PARTS_RESYNC;
        snprintf(why, sizeof why, "%zu of its partitions left it (DETACH PARTITION or DROP "
                 "TABLE, which the change stream does not carry)", before - seen);
    }
    if (v == PARTS_WAIT && !t->part_wait)
        t->part_wait = wal;                /* a TRUNCATE of it not received yet may explain it */
    if (v == PARTS_WAIT && pg->frontier >= t->part_wait)
        v = PARTS_RESYNC;
    if (v == PARTS_RESYNC) {
        floe__mirror_resync_mark(pg, t, why);
        return FLOE_OK;
    }
    if (v == PARTS_WAIT)
        return FLOE_OK;
    if (v == PARTS_TAKEN)
        floe__mirror_notice(pg, "%s has a new partition (empty: its rows come through %s)",
                            t->source, t->source);
    FLOE_FORWARD(floe__buf_putc(now, 0, err));
    if (strcmp(t->parts, (const char *)now->data) != 0) {
        char *parts = floe__strdup((const char *)now->data);
        if (!parts)
            return FLOE_OOM(err);
        floe__free(t->parts);
        t->parts = parts;
        FLOE_FORWARD(floe__mirror_part_record(t, err));
    }
    t->part_wait = 0;
    t->parts_ok = true;
    return FLOE_OK;
}

static bool to_verify(const floe__mtable *t)
{
    return t->partitioned && t->parts && !t->resync_due && !t->resyncing;
}

/* The roots to verify as an oid[] literal; *any when there is one. */
static int roots(floe_pg *pg, floe__buf *b, bool *any, floe_error *err)
{
    *any = false;
    FLOE_FORWARD(floe__buf_putc(b, '{', err));
    for (size_t i = 0; i < pg->ntables; i++) {
        floe__mtable *t = &pg->tables[i];
        t->parts_ok = false;
        if (!to_verify(t))
            continue;
        FLOE_FORWARD(floe__buf_printf(b, err, "%s%u", *any ? "," : "", t->relid));
        *any = true;
    }
    return floe__buf_printf(b, err, "}%c", 0);
}

/* Roots with a DDL in flight on their tree (a lock that ATTACH, DETACH,
 * CREATE ... PARTITION OF, DROP, TRUNCATE or a rewrite takes): their
 * commits wait for the next round. */
static int busy(floe_pg *pg, const char *list, floe__pg_result **r, floe_error *err)
{
    const char *params[1] = {list};
    return floe__pg_query(pg->conn, "SELECT DISTINCT r.root FROM unnest($1::oid[]) r(root) "
                          "CROSS JOIN LATERAL pg_partition_tree(r.root) p JOIN pg_locks l ON "
                          "l.locktype = 'relation' AND l.relation = p.relid AND l.database = "
                          "(SELECT oid FROM pg_database WHERE datname = current_database()) "
                          "AND l.granted AND l.pid <> pg_backend_pid() AND (l.mode IN "
                          "('AccessExclusiveLock', 'ExclusiveLock', 'ShareRowExclusiveLock') OR "
                          "(l.mode = 'ShareUpdateExclusiveLock' AND NOT p.isleaf))", params, 1,
                          r, err);
}

static bool listed(const floe__pg_result *r, uint32_t relid)
{
    for (size_t i = 0; i < floe__pg_rows(r); i++)
        if ((uint32_t)strtoul(floe__pg_get(r, i, 0), NULL, 10) == relid)
            return true;
    return false;
}

static int judge_all(floe_pg *pg, const char *list, const floe__pg_result *held,
                     floe_error *err)
{
    const char *params[1] = {list};
    floe__pg_result *r = NULL, *w = NULL;
    FLOE_FORWARD(floe__pg_query(pg->conn, "SELECT r.root, c.oid, c.relfilenode, c.xmin::text, "
                                "c.relkind, c.relreplident, c.relkind <> 'r' OR "
                                "pg_relation_size(c.oid) = 0, format('%I.%I', n.nspname, "
                                "c.relname) FROM unnest($1::oid[]) r(root) CROSS JOIN LATERAL "
                                "pg_partition_tree(r.root) p JOIN pg_class c ON c.oid = p.relid "
                                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE p.relid <> "
                                "r.root ORDER BY r.root, c.oid", params, 1, &r, err));
    /* every transaction the query saw committed below this position */
    int rc = floe__pg_query(pg->conn, "SELECT pg_current_wal_lsn()", NULL, 0, &w, err);
    uint64_t wal = 0;
    if (rc == FLOE_OK && floe__lsn_parse(floe__pg_get(w, 0, 0), &wal))
        rc = floe__err_set(err, FLOE_EFORMAT, "pg_current_wal_lsn() answered no LSN");
    floe__buf now;
    floe__buf_init(&now, 1 << 24);
    for (size_t i = 0; rc == FLOE_OK && i < pg->ntables; i++) {
        floe__mtable *t = &pg->tables[i];
        if (!to_verify(t) || listed(held, t->relid))
            continue;
        size_t at = 0;                     /* its rows (none: no partition left) */
        while (at < floe__pg_rows(r) &&
               (uint32_t)strtoul(floe__pg_get(r, at, 0), NULL, 10) != t->relid)
            at++;
        rc = judge_table(pg, t, r, &at, wal, &now, err);
    }
    floe__buf_free(&now);
    floe__pg_result_free(w);
    floe__pg_result_free(r);
    return rc;
}

int floe__mirror_part_verify(floe_pg *pg, floe_error *err)
{
    floe__buf list;
    floe__buf_init(&list, 1 << 20);
    bool any = false;
    int rc = roots(pg, &list, &any, err);
    floe__pg_result *held = NULL;
    if (rc == FLOE_OK && any)
        rc = busy(pg, (const char *)list.data, &held, err);
    if (rc == FLOE_OK && any)
        rc = judge_all(pg, (const char *)list.data, held, err);
    floe__pg_result_free(held);
    floe__buf_free(&list);
    return rc == FLOE_OK ? FLOE_OK
                         : floe__err_wrap(err, rc, "verifying the partitions of the mirrored "
                                          "partitioned tables");
}
