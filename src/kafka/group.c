/*
 * group.c - a member of a consumer group (floe_kafka_options.member): the
 * partitions Kafka assigns it taken at the offsets their tables record,
 * revocations committed first, every commit checked against the table
 * (another member may have taken a partition over), and the member that
 * maintains each table elected through the table (docs/kafka.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/kafka_internal.h"

#define MAINT_PROP "floe.kafka.maintainer"
#define MIN_LEASE_MS 10000
#define MAX_HISTORY_WALK 100000    /* snapshots looked back through for a record */

typedef floe__kafka_part part;
typedef floe__kafka_topic topic;

typedef struct look {
    const topic *t;
    json_t *rec;
} look;

/* The newest floe.kafka.offsets of topic t on main's history of md (its
 * current snapshot back through the parents), parsed; NULL when none.
 * *at: the snapshot holding it. */
static json_t *latest_record(const topic *t, const floe__metadata *md,
                             const floe__snapshot **at)
{
    const floe__snapshot *s = floe__metadata_current_snapshot(md);
    for (size_t hops = 0; s && hops < MAX_HISTORY_WALK; hops++) {
        const char *v = floe__snapshot_summary_get(s, FLOE__KAFKA_OFFSETS_PROP);
        json_t *j = v ? json_loads(v, 0, NULL) : NULL;
        const char *name = json_string_value(json_object_get(j, "topic"));
        if (name && strcmp(name, t->name) == 0) {
            if (at)
                *at = s;
            return j;
        }
        json_decref(j);
        s = s->has_parent ? floe__metadata_snapshot_by_id(md, s->parent_snapshot_id) : NULL;
    }
    return NULL;
}

/* Members elect the one that maintains a table through the table: every
 * member's commit carries floe.kafka.maintainer, "NAME UNTIL" (wall-clock
 * ms); a member takes it over when it is its own, absent or expired, and
 * otherwise carries it on.  Its holder keeps renewing it while it commits;
 * when it stops (gone, or idle past the lease), the next member to commit
 * takes over.  Two maintaining at once for a moment is harmless (their
 * commits race like any writers'). */
static int maintainer_lease(topic *t, const char *had, json_t *summary, floe_error *err)
{
    floe_kafka *k = t->k;
    int64_t now = floe__now_ms(), until = 0;
    size_t n = had ? strcspn(had, " ") : 0;
    if (had && had[n])
        until = strtoll(had + n + 1, NULL, 10);
    bool mine = !had || until < now ||
                (n == strlen(k->o.member) && memcmp(had, k->o.member, n) == 0);
    uint64_t interval = k->o.commit_interval_ms ? k->o.commit_interval_ms : FLOE__KAFKA_COMMIT_MS;
    int64_t lease = (int64_t)(3 * interval > MIN_LEASE_MS ? 3 * interval : MIN_LEASE_MS);
    char *v = mine ? floe__sprintf("%s %" PRId64, k->o.member, now + lease) : floe__strdup(had);
    json_t *j = v ? json_string(v) : NULL;
    floe__free(v);
    if (!j || json_object_set_new(summary, MAINT_PROP, j) != 0)
        return FLOE_OOM(err);
    if (mine != t->maintains)
        floe__tell(k->o.on_notice, k->o.notice_ctx, "member %s %s table %s", k->o.member,
                   mine ? "maintains" : "leaves the maintenance of", t->table);
    t->maintains = mine;
    floe__sink_maintain(t->sink, mine);
    return FLOE_OK;
}

/* A member's commit lands only where the table records, for each partition
 * it reads, the offset it started reading that partition at: else another
 * member read and committed the partition meanwhile (a rebalance moved it,
 * this process was paused past its session), and committing would double
 * those messages. */
static int check_ownership(const topic *t, const json_t *rec, floe_error *err)
{
    const json_t *parts = json_object_get(rec, "partitions");
    for (size_t i = 0; i < t->n_parts; i++) {
        const part *p = &t->parts[i];
        if (!p->owned)
            continue;
        char id[16];
        snprintf(id, sizeof id, "%" PRId32, p->id);
        const json_t *v = json_object_get(parts, id);
        if (v ? json_integer_value(v) == p->committed : p->unrecorded)
            continue;
        char had[32] = "none";
        if (v)
            snprintf(had, sizeof had, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return floe__err_set(err, FLOE_EFENCED, "topic %s partition %" PRId32 ": table %s "
                             "records offset %s, but this member (%s) read it from %" PRId64
                             ": another member of the group committed the partition since (a "
                             "rebalance moved it); nothing of this commit lands, and a rerun "
                             "reads on from what the table records", t->name, p->id, t->table,
                             had, t->k->o.member, p->committed);
    }
    return FLOE_OK;
}

static int look_record(void *ctx, const floe__metadata *md, floe_error *err)
{
    (void)err;
    look *l = ctx;
    l->rec = latest_record(l->t, md, NULL);
    return FLOE_OK;
}

static part *part_of(topic *t, int32_t id)
{
    for (size_t i = 0; i < t->n_parts; i++)
        if (t->parts[i].id == id)
            return &t->parts[i];
    return NULL;
}

/* Partitions assigned to this member: each starts at the offset its
 * table records now (the member that had it committed what it read
 * before giving it up). */
static int take(floe_kafka *k, rd_kafka_topic_partition_list_t *l, floe_error *err)
{
    size_t taken = 0;
    for (size_t i = 0; i < k->n_topics; i++) {
        topic *t = k->topics[i];
        bool any = false;
        for (int j = 0; j < l->cnt; j++) {
            if (strcmp(l->elems[j].topic, t->name) != 0)
                continue;
            part *p = part_of(t, l->elems[j].partition);
            FLOE_RETURN_IF(!p, err, FLOE_ESTATE, "topic %s partition %" PRId32 " was added "
                           "after floe started: run it again to read it", t->name,
                           l->elems[j].partition);
            p->taking = any = true;
        }
        if (!any)
            continue;
        look lk = {t, NULL};
        int rc = t->sink ? floe__sink_look(t->sink, look_record, &lk, err) : FLOE_OK;
        if (rc == FLOE_OK && lk.rec)
            rc = floe__kafka_recorded_offsets(k, t, lk.rec, "(the table's last record)", err);
        for (size_t p = 0; rc == FLOE_OK && !lk.rec && p < t->n_parts; p++) {
            int64_t low = 0;
            if (!t->parts[p].taking)
                continue;
            rc = floe__kafka_watermarks(k, t, &t->parts[p], &low, err);
            t->parts[p].next = t->parts[p].committed = low;
            t->parts[p].unrecorded = true;
        }
        json_decref(lk.rec);
        FLOE_FORWARD(rc);
        for (size_t p = 0; p < t->n_parts; p++) {
            part *pt = &t->parts[p];
            if (!pt->taking)
                continue;
            pt->taking = false;
            pt->owned = true;
            pt->stop = pt->end;
            pt->n_held = 0;
            taken++;
        }
    }
    for (int j = 0; j < l->cnt; j++) {
        part *p = NULL;
        topic *t = floe__kafka_topic_of(k, l->elems[j].topic, l->elems[j].partition, &p);
        if (t)
            l->elems[j].offset = p->next;
    }
    floe__tell(k->o.on_notice, k->o.notice_ctx, "member %s of group %s: %zu partition%s "
               "assigned", k->o.member, k->o.group, taken, taken == 1 ? "" : "s");
    return FLOE_OK;
}

/* Whether anything of the partitions in l was read and not committed. */
static bool read_since_commit(floe_kafka *k, const rd_kafka_topic_partition_list_t *l)
{
    for (int j = 0; j < l->cnt; j++) {
        part *p = NULL;
        if (floe__kafka_topic_of(k, l->elems[j].topic, l->elems[j].partition, &p) && p->owned &&
            p->next != p->committed)
            return true;
    }
    return false;
}

/* Partitions revoked (what was read is committed first) or lost. */
static void give_up(floe_kafka *k, rd_kafka_topic_partition_list_t *l)
{
    for (int j = 0; j < l->cnt; j++) {
        part *p = NULL;
        if (floe__kafka_topic_of(k, l->elems[j].topic, l->elems[j].partition, &p)) {
            p->owned = false;
            p->n_held = 0;
        }
    }
}

/* The group's rebalances, inside floe_kafka_run's polls.  Eager ones:
 * every rebalance revokes the whole assignment and hands out a new one, and
 * each assignment sets every partition's position, at its table's record
 * (librdkafka 2.0's incremental assignments were seen to drop messages it
 * had fetched for the partitions kept).  A revocation commits everything
 * read first, so the next owner starts where this one stopped; a lost
 * assignment (a session timed out) commits nothing, another member may own
 * the partitions already.  A failure halts the run (cb_rc). */
void floe__kafka_on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t e,
                              rd_kafka_topic_partition_list_t *l, void *opaque)
{
    floe_kafka *k = opaque;
    int rc = FLOE_OK;
    rd_kafka_resp_err_t x;
    if (e == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        if (k->run_err && k->cb_rc == FLOE_OK)
            rc = take(k, l, k->run_err);
        x = rd_kafka_assign(rk, rc == FLOE_OK ? l : NULL);
    } else {
        if (rd_kafka_assignment_lost(rk)) {
            /* what was read of them waits uncommitted in the sinks, and
             * their new owners read it again: it must never be committed */
            if (k->run_err && !k->closing && k->cb_rc == FLOE_OK && read_since_commit(k, l))
                rc = floe__err_set(k->run_err, FLOE_EFENCED, "member %s of group %s lost its "
                                   "partitions (its session expired: the process was paused "
                                   "or cut off): what it read of them since its last commit is "
                                   "left to their new owners; run it again", k->o.member,
                                   k->o.group);
        } else if (k->run_err && !k->closing && k->cb_rc == FLOE_OK) {
            rc = floe__kafka_commit_all(k, k->run_err);
        }
        give_up(k, l);
        x = rd_kafka_assign(rk, NULL);
    }
    if (x && rc == FLOE_OK && k->run_err)
        rc = floe__kafka_err(k->run_err, x, "Kafka: the group's assignment");
    if (rc != FLOE_OK && k->cb_rc == FLOE_OK)
        k->cb_rc = rc;
}

/* A member reads what the group assigns of its topics. */
int floe__kafka_subscribe(floe_kafka *k, floe_error *err)
{
    rd_kafka_topic_partition_list_t *l =
        rd_kafka_topic_partition_list_new(k->n_topics ? (int)k->n_topics : 1);
    if (!l)
        return FLOE_OOM(err);
    for (size_t i = 0; i < k->n_topics; i++)
        rd_kafka_topic_partition_list_add(l, k->topics[i]->name, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = k->n_topics ? rd_kafka_subscribe(k->rk, l) : RD_KAFKA_RESP_ERR_NO_ERROR;
    rd_kafka_topic_partition_list_destroy(l);
    return e ? floe__kafka_err(err, e, "Kafka: subscribing to the topics") : FLOE_OK;
}

int floe__kafka_member_commit(floe__kafka_topic *t, const floe__metadata *base,
                              json_t *summary, json_t **rec, floe_error *err)
{
    const floe__snapshot *at = NULL;
    *rec = latest_record(t, base, &at);
    FLOE_FORWARD(check_ownership(t, *rec, err));
    if (t->k->sink.maintain != FLOE_MAINTAIN_AUTO)
        return FLOE_OK;
    return maintainer_lease(t, at ? floe__snapshot_summary_get(at, MAINT_PROP) : NULL, summary,
                            err);
}
