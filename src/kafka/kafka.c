/*
 * kafka.c - Kafka topics into Iceberg tables, exactly once from the table
 * alone (floe_kafka_*, docs/kafka.md).
 *
 * One librdkafka consumer, its partitions assigned by hand (every partition
 * of every topic named, or matched by topic_pattern, new ones as they
 * appear), feeds one sink per topic; the formats upsert, append and changes
 * are read here, Debezium's events in debezium.c.  A topic's messages take
 * consecutive times of its table's input, from the table's resume frontier
 * (1 on a fresh table: time 0 is the empty snapshot batch's); changes
 * records bring their own times, and the table's frontier is the least of
 * its partitions' progress.  Every commit_interval_ms each topic with new
 * messages advances its sink (commit_on_advance); whichever commit lands,
 * the sink asks offsets_summary for the floe.kafka.offsets of its frontier
 * (cluster id, topic, per partition the first offset the commit does not
 * hold).  At open each table's last record says where to seek; a record
 * from another cluster, or offsets outside what the partition holds, is
 * refused rather than skipped or read twice.  Kafka's group offsets follow
 * each commit, for monitoring only.  Messages that do not parse halt the
 * run, are skipped, or are copied to a dead-letter topic first
 * (dead_letter.c).  A member of a group (group.c) reads the partitions
 * Kafka assigns it instead of all of them.  With Debezium's transaction
 * topic (transactions.c), events are held until their transaction is
 * whole and given to the tables a transaction at a time.
 */
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <poll.h>
#include <regex.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/kafka_internal.h"
#include "sink/sink_internal.h"

#define KEY_PROP "floe.kafka.key"
#define DEFAULT_TIMEOUT_MS 30000u
#define DEFAULT_REFRESH_MS 30000u
#define BATCH 1024
/* kafka_columns: what each appended row gets (filled by with_kafka_columns) */
#define KAFKA_COLUMNS "_kafka_partition integer, _kafka_offset bigint, " \
                      "_kafka_timestamp timestamptz"

typedef floe__kafka_held held;
typedef floe__kafka_part part;
typedef floe__kafka_topic topic;

/* ---- options --------------------------------------------------------------------------------- */

static int own(floe_kafka *k, const char **s)
{
    return floe__arena_own_str(k->strings, s);
}

/* The table of `name` by table_map ("t=ns.name,..."), else NAMESPACE.name
 * with the topic's dots made underscores (dbz.public.items: items of the
 * namespace, not a namespace of its own). */
static char *table_of(const floe_kafka *k, const char *name)
{
    const char *map = k->o.table_map;
    size_t n = strlen(name);
    for (const char *p = map; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (eq && (size_t)(eq - p) == n && memcmp(p, name, n) == 0)
            return floe__strndup(eq + 1, len - (size_t)(eq - p) - 1);
        p = comma ? comma + 1 : p + len;
    }
    const char *ns = k->o.namespace_name ? k->o.namespace_name : "kafka";
    char *t = floe__sprintf("%s.%s", ns, name);
    for (char *p = t ? t + strlen(ns) + 1 : NULL; p && *p; p++)
        if (*p == '.')
            *p = '_';
    return t;
}

static bool matches(const floe_kafka *k, const char *name)
{
    return strncmp(name, "__", 2) != 0 && regexec(&k->pattern, name, 0, NULL, 0) == 0;
}

/* Every table_map entry names a topic read here (or one topic_pattern matches). */
static int check_map(const floe_kafka *k, floe_error *err)
{
    for (const char *p = k->o.table_map; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        FLOE_RETURN_IF(!eq || eq == p || eq + 1 == p + len, err, FLOE_EINVAL,
                       "table_map: '%.*s' is not TOPIC=NS.NAME", (int)len, p);
        bool known = false;
        for (size_t i = 0; i < k->n_topics; i++)
            known |= strlen(k->topics[i]->name) == (size_t)(eq - p) &&
                     memcmp(k->topics[i]->name, p, (size_t)(eq - p)) == 0;
        if (k->has_pattern) {
            char *name = floe__strndup(p, (size_t)(eq - p));
            if (!name)
                return FLOE_OOM(err);
            known = matches(k, name);
            floe__free(name);
        }
        FLOE_RETURN_IF(!known, err, FLOE_EINVAL, "table_map names topic '%.*s', which is not "
                       "one of the topics read", (int)(eq - p), p);
        p = comma ? comma + 1 : p + len;
    }
    return FLOE_OK;
}

/* A topic to read, added to k->topics. */
static int topic_new(floe_kafka *k, const char *name, size_t len, topic **out, floe_error *err)
{
    for (size_t i = 0; i < k->n_topics; i++)
        FLOE_RETURN_IF(strlen(k->topics[i]->name) == len &&
                           memcmp(k->topics[i]->name, name, len) == 0,
                       err, FLOE_EINVAL, "topics: '%.*s' is named twice", (int)len, name);
    if (k->n_topics == k->cap_topics) {
        size_t cap = k->cap_topics ? 2 * k->cap_topics : 8;
        topic **more = floe__realloc(k->topics, cap * sizeof *more);
        if (!more)
            return FLOE_OOM(err);
        k->topics = more;
        k->cap_topics = cap;
    }
    topic *t = floe__calloc(1, sizeof *t);
    if (!t)
        return FLOE_OOM(err);
    k->topics[k->n_topics++] = t;
    t->k = k;
    t->tx_next = -1;
    if (!(t->name = floe__strndup(name, len)))
        return FLOE_OOM(err);
    *out = t;
    return FLOE_OK;
}

static int split_topics(floe_kafka *k, floe_error *err)
{
    const char *t = k->o.topics;
    FLOE_RETURN_IF(!t || !*t, err, FLOE_EINVAL, "no topics to read");
    for (const char *p = t; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        FLOE_RETURN_IF(!len, err, FLOE_EINVAL, "topics: an empty name in '%s'", t);
        topic *tp = NULL;
        FLOE_FORWARD(topic_new(k, p, len, &tp, err));
        p = comma ? comma + 1 : p + len;
    }
    return FLOE_OK;
}

/* topic_pattern, anchored at both ends: it matches whole names. */
static int compile_pattern(floe_kafka *k, floe_error *err)
{
    char *re = floe__sprintf("^(%s)$", k->o.topic_pattern);
    if (!re)
        return FLOE_OOM(err);
    int e = regcomp(&k->pattern, re, REG_EXTENDED | REG_NOSUB);
    floe__free(re);
    if (e) {
        char why[256];
        regerror(e, &k->pattern, why, sizeof why);
        return floe__err_set(err, FLOE_EINVAL, "topic_pattern '%s' is not a POSIX extended "
                             "regular expression: %s", k->o.topic_pattern, why);
    }
    k->has_pattern = true;
    return FLOE_OK;
}

/* ---- the consumer ------------------------------------------------------------------------------ */

int floe__kafka_conf_set(rd_kafka_conf_t *c, const char *key, const char *value,
                         floe_error *err)
{
    char why[512];
    if (rd_kafka_conf_set(c, key, value, why, sizeof why) != RD_KAFKA_CONF_OK)
        return floe__err_set(err, FLOE_EINVAL, "Kafka property %s: %s", key, why);
    return FLOE_OK;
}

/* librdkafka's own log lines stay out of stderr: what matters reaches
 * on_error (below) or comes back as an error of a call. */
void floe__kafka_on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk, (void)level, (void)fac, (void)buf;
}

/* A client-level error (a broker down, a connection refused): librdkafka
 * retries by itself; said once until a message comes again. */
static void on_error(rd_kafka_t *rk, int e, const char *reason, void *opaque)
{
    (void)rk;
    floe_kafka *k = opaque;
    if (e == k->last_transient)
        return;
    k->last_transient = e;
    floe__tell(k->o.on_notice, k->o.notice_ctx, "Kafka: %s (waiting; librdkafka reconnects "
               "and retries)", reason);
}

/* Properties a producer does not take (the consumer's, passed through). */
static bool consumer_only(const char *key)
{
    static const char *const prefixes[] = {"group.", "fetch.", "consume", "auto.",
                                           "isolation.", "partition.assignment",
                                           "session.", "heartbeat.", "max.poll."};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(key, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

int floe__kafka_client(floe_kafka *k, rd_kafka_conf_t *c, rd_kafka_type_t type,
                       const char *const *fixed, rd_kafka_t **out, floe_error *err)
{
    rd_kafka_conf_set_opaque(c, k);
    rd_kafka_conf_set_log_cb(c, floe__kafka_on_log);
    int rc = floe__kafka_conf_set(c, "bootstrap.servers", k->o.brokers, err);
    for (const char *const *p = k->o.kafka_properties; rc == FLOE_OK && p && p[0]; p += 2) {
        if (!p[1])
            rc = floe__err_set(err, FLOE_EINVAL, "Kafka property %s has no value", p[0]);
        else if (type == RD_KAFKA_CONSUMER || !consumer_only(p[0]))
            rc = floe__kafka_conf_set(c, p[0], p[1], err);
    }
    for (const char *const *p = fixed; rc == FLOE_OK && p && p[0]; p += 2)
        rc = floe__kafka_conf_set(c, p[0], p[1], err);
    char why[512];
    if (rc == FLOE_OK && !(*out = rd_kafka_new(type, c, why, sizeof why)))
        rc = floe__err_set(err, FLOE_EINVAL, "Kafka %s: %s",
                           type == RD_KAFKA_CONSUMER ? "consumer" : "producer", why);
    if (rc != FLOE_OK)
        rd_kafka_conf_destroy(c);           /* (rd_kafka_new took it when it succeeded) */
    return rc;
}

static int consumer_new(floe_kafka *k, floe_error *err)
{
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    if (!c)
        return FLOE_OOM(err);
    rd_kafka_conf_set_error_cb(c, on_error);
    if (k->member)
        rd_kafka_conf_set_rebalance_cb(c, floe__kafka_on_rebalance);
    /* floe's own, over any property: where reading resumes is the tables'
     * record, and an offset out of range is never jumped over */
    const char *fixed[] = {"group.id", k->o.group ? k->o.group : "floe",
                           "enable.auto.commit", "false", "enable.auto.offset.store", "false",
                           "enable.partition.eof", "false", "auto.offset.reset", "error",
                           k->member ? "group.instance.id" : NULL, k->o.member, NULL};
    FLOE_FORWARD(floe__kafka_client(k, c, RD_KAFKA_CONSUMER, fixed, &k->rk, err));
    rd_kafka_poll_set_consumer(k->rk);
    k->queue = rd_kafka_queue_get_consumer(k->rk);
    return k->queue ? FLOE_OK : floe__err_set(err, FLOE_EINTERNAL, "Kafka: no consumer queue");
}

int floe__kafka_timeout_ms(const floe_kafka *k)
{
    uint64_t t = k->o.timeout_ms ? k->o.timeout_ms : DEFAULT_TIMEOUT_MS;
    return t > INT32_MAX ? INT32_MAX : (int)t;
}

int floe__kafka_err(floe_error *err, rd_kafka_resp_err_t e, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int code = e == RD_KAFKA_RESP_ERR__TRANSPORT || e == RD_KAFKA_RESP_ERR__TIMED_OUT ||
                       e == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN ||
                       e == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE ||
                       e == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION
                   ? FLOE_ENET
                   : e == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ? FLOE_ENOTFOUND
                   : e == RD_KAFKA_RESP_ERR__AUTHENTICATION ||
                           e == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
                           e == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED
                       ? FLOE_EAUTH
                       : FLOE_ENET;
    return floe__err_set(err, code, "%s: %s", what, rd_kafka_err2str(e));
}

/* A topic's partitions, from its metadata. */
static int set_parts(topic *t, const rd_kafka_metadata_topic_t *mt, floe_error *err)
{
    t->n_parts = (size_t)mt->partition_cnt;
    t->parts = floe__calloc(t->n_parts, sizeof *t->parts);
    if (!t->parts)
        return FLOE_OOM(err);
    for (size_t p = 0; p < t->n_parts; p++) {
        t->parts[p].id = mt->partitions[p].id;
        t->parts[p].owned = t->parts[p].taking = !t->k->member;
    }
    return FLOE_OK;
}

/* Topic `name`'s metadata (*md: the caller's to destroy); FLOE_ENOTFOUND
 * when it does not exist or has no partitions. */
static int describe(floe_kafka *k, const char *name, const struct rd_kafka_metadata **md,
                    floe_error *err)
{
    rd_kafka_topic_t *h = rd_kafka_topic_new(k->rk, name, NULL);
    if (!h)
        return floe__kafka_err(err, rd_kafka_last_error(), "Kafka topic %s", name);
    *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(k->rk, 0, h, md, floe__kafka_timeout_ms(k));
    const struct rd_kafka_metadata *m = *md;
    int rc = FLOE_OK;
    if (e)
        rc = floe__kafka_err(err, e, "Kafka metadata of topic %s", name);
    else if (m->topic_cnt != 1 || m->topics[0].err)
        rc = m->topic_cnt == 1 && m->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART
                 ? floe__err_set(err, FLOE_ENOTFOUND, "Kafka topic %s does not exist (the "
                                 "brokers %s)", name, k->o.brokers)
                 : floe__kafka_err(err, m->topic_cnt ? m->topics[0].err
                                                     : RD_KAFKA_RESP_ERR__FAIL,
                                   "Kafka metadata of topic %s", name);
    else if (!m->topics[0].partition_cnt)
        rc = floe__err_set(err, FLOE_ENOTFOUND, "Kafka topic %s has no partitions", name);
    rd_kafka_topic_destroy(h);
    if (rc != FLOE_OK && *md) {
        rd_kafka_metadata_destroy(*md);
        *md = NULL;
    }
    return rc;
}

int floe__kafka_partition_count(floe_kafka *k, const char *name, int *n, floe_error *err)
{
    const struct rd_kafka_metadata *md = NULL;
    FLOE_FORWARD(describe(k, name, &md, err));
    *n = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    return FLOE_OK;
}

/* Each named topic's partitions. */
static int learn_topics(floe_kafka *k, floe_error *err)
{
    for (size_t i = 0; i < k->n_topics; i++) {
        const struct rd_kafka_metadata *md = NULL;
        FLOE_FORWARD(describe(k, k->topics[i]->name, &md, err));
        int rc = set_parts(k->topics[i], &md->topics[0], err);
        rd_kafka_metadata_destroy(md);
        FLOE_FORWARD(rc);
    }
    return FLOE_OK;
}

/* topic_pattern: the cluster's topics that match it and are not read yet
 * (with their partitions; one whose metadata is not ready, a topic being
 * created, waits for the next look). */
static int discover(floe_kafka *k, floe_error *err)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(k->rk, 1, NULL, &md, floe__kafka_timeout_ms(k));
    if (e)
        return floe__kafka_err(err, e, "Kafka: listing the topics (topic_pattern)");
    int rc = FLOE_OK;
    for (int i = 0; rc == FLOE_OK && i < md->topic_cnt; i++) {
        const rd_kafka_metadata_topic_t *mt = &md->topics[i];
        bool known = false;
        for (size_t j = 0; j < k->n_topics; j++)
            known |= strcmp(k->topics[j]->name, mt->topic) == 0;
        if (known || mt->err || !mt->partition_cnt || !matches(k, mt->topic))
            continue;
        bool led = true;
        for (int p = 0; p < mt->partition_cnt; p++)
            led &= mt->partitions[p].leader >= 0;
        if (!led)
            continue;
        topic *t = NULL;
        rc = topic_new(k, mt->topic, strlen(mt->topic), &t, err);
        if (rc == FLOE_OK)
            rc = set_parts(t, mt, err);
    }
    rd_kafka_metadata_destroy(md);
    k->last_refresh_ns = floe__monotonic_ns();
    return rc;
}

/* The cluster id (asked after a metadata request of our own, which
 * connects at once and brings it along; asked first, it waits for the
 * client's first metadata refresh, a second away). */
static int learn_cluster(floe_kafka *k, floe_error *err)
{
    char *id = rd_kafka_clusterid(k->rk, floe__kafka_timeout_ms(k));
    FLOE_RETURN_IF(!id, err, FLOE_ENET, "Kafka: no cluster id from %s within %d ms (are the "
                   "brokers up?)", k->o.brokers, floe__kafka_timeout_ms(k));
    k->cluster = floe__strdup(id);
    rd_kafka_mem_free(k->rk, id);
    return k->cluster ? FLOE_OK : FLOE_OOM(err);
}

int floe__kafka_watermarks(floe_kafka *k, const topic *t, part *p, int64_t *low, floe_error *err)
{
    int64_t lo = 0, hi = 0;
    rd_kafka_resp_err_t e =
        rd_kafka_query_watermark_offsets(k->rk, t->name, p->id, &lo, &hi,
                                         floe__kafka_timeout_ms(k));
    if (e)
        return floe__kafka_err(err, e, "Kafka offsets of %s partition %" PRId32, t->name, p->id);
    p->end = hi;
    if (low)
        *low = lo;
    return FLOE_OK;
}

/* ---- where each table stands -------------------------------------------------------------- */

/* The offsets the table recorded, j = {"cluster": ..., "topic": ...,
 * "partitions": {"0": next, ...}}, for the partitions being taken:
 * refused when they cannot be where reading goes on (another cluster, a
 * topic re-created, messages deleted unread).  A partition the record
 * does not name starts at its beginning. */
int floe__kafka_recorded_offsets(floe_kafka *k, topic *t, const json_t *j, const char *text,
                                 floe_error *err)
{
    int rc = FLOE_OK;
    const char *cluster = json_string_value(json_object_get(j, "cluster"));
    const char *name = json_string_value(json_object_get(j, "topic"));
    json_t *parts = json_object_get(j, "partitions");
    if (!j || !cluster || !name || !json_is_object(parts)) {
        rc = floe__err_set(err, FLOE_EFORMAT, "table %s: its %s property is malformed: %s",
                           t->table, FLOE__KAFKA_OFFSETS_PROP, text);
    } else if (strcmp(cluster, k->cluster) != 0) {
        rc = floe__err_set(err, FLOE_ESTATE, "table %s was fed from Kafka cluster %s, but the "
                           "brokers %s are cluster %s (a cluster replaced or rebuilt: the "
                           "offsets the table records mean nothing there); to read topic %s "
                           "of this cluster from its start, give it another table (--table "
                           "or --table-map)", t->table, cluster, k->o.brokers, k->cluster,
                           t->name);
    } else if (strcmp(name, t->name) != 0) {
        rc = floe__err_set(err, FLOE_ESTATE, "table %s records offsets of topic %s, not %s "
                           "(each table is fed by one topic; see table_map)", t->table, name,
                           t->name);
    } else if (json_object_size(parts) > t->n_parts) {
        rc = floe__err_set(err, FLOE_ESTATE, "table %s records offsets of %zu partitions of "
                           "topic %s, which has %zu now: the topic was deleted and created "
                           "again, or partitions were lost (to read the topic as it is now "
                           "from its start, give it another table: --table or --table-map)",
                           t->table, json_object_size(parts), t->name, t->n_parts);
    }
    for (size_t i = 0; rc == FLOE_OK && i < t->n_parts; i++) {
        part *p = &t->parts[i];
        if (!p->taking)
            continue;
        char id[16];
        snprintf(id, sizeof id, "%" PRId32, p->id);
        json_t *v = json_object_get(parts, id);
        int64_t low = 0;
        rc = floe__kafka_watermarks(k, t, p, &low, err);
        if (rc != FLOE_OK)
            break;
        p->unrecorded = !v;
        if (!v) {                      /* a partition added since: from its start */
            p->next = p->committed = low;
            continue;
        }
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            rc = floe__err_set(err, FLOE_EFORMAT, "table %s: %s: partition %s is not an "
                               "offset", t->table, FLOE__KAFKA_OFFSETS_PROP, id);
            break;
        }
        p->next = p->committed = json_integer_value(v);
        if (p->next > p->end)
            rc = floe__err_set(err, FLOE_ESTATE, "table %s has read topic %s partition %s up "
                               "to offset %" PRId64 ", but the partition ends at %" PRId64
                               ": the topic was deleted and created again (or its messages "
                               "lost); reading on would skip messages (to read the topic as it "
                               "is now from its start, give it another table: --table or "
                               "--table-map)", t->table, t->name, id, p->next, p->end);
        else if (p->next < low)
            rc = floe__err_set(err, FLOE_ESTATE, "table %s has read topic %s partition %s up "
                               "to offset %" PRId64 ", but the partition now starts at %"
                               PRId64 ": the messages between were deleted (retention) "
                               "before floe read them", t->table, t->name, id, p->next, low);
    }
    if (rc == FLOE_OK && k->o.transaction_topic)
        rc = floe__kafka_tx_resume(k, t, j, err);
    return rc;
}

static int fresh_offsets(floe_kafka *k, topic *t, floe_error *err)
{
    for (size_t i = 0; i < t->n_parts; i++) {
        int64_t low = 0;
        t->parts[i].unrecorded = true;
        FLOE_FORWARD(floe__kafka_watermarks(k, t, &t->parts[i], &low, err));
        t->parts[i].next = t->parts[i].committed = low;
    }
    return FLOE_OK;
}

/* ---- the offsets a commit records ----------------------------------------------------------- */

/* Where a partition's reading resumes after a commit of frontier f.
 * changes: its first message not in the commit, the first held at or
 * past f.  The other formats number the messages read consecutively: a
 * commit covers every message read (f is the next time) or none since the
 * last commit (a fresh table's empty batch of time 0, committed first). */
static int64_t offset_for(const topic *t, const part *p, floe__frontier f)
{
    if (t->k->o.format != FLOE_KAFKA_CHANGES && !f.empty && f.t <= t->committed_time)
        return p->committed;
    for (size_t i = 0; !f.empty && i < p->n_held; i++)
        if (p->held[i].time >= f.t)
            return p->held[i].offset;
    return floe__kafka_resume_at(p);
}

/* floe.kafka.offsets for a commit of frontier f, into k->text: the
 * partitions this process reads, over `others` (a member: the partitions
 * object of the table's last record, those of the other members). */
static int offsets_text(floe_kafka *k, const topic *t, floe__frontier f, const json_t *others,
                        floe_error *err)
{
    json_t *parts = others ? json_deep_copy(others) : json_object();
    json_t *j = parts ? json_pack("{s:s, s:s, s:o}", "cluster", k->cluster, "topic", t->name,
                                  "partitions", parts) : NULL;
    if (!j)
        return FLOE_OOM(err);
    for (size_t i = 0; i < t->n_parts; i++) {
        if (!t->parts[i].owned)
            continue;
        char id[16];
        snprintf(id, sizeof id, "%" PRId32, t->parts[i].id);
        if (json_object_set_new(parts, id, json_integer(offset_for(t, &t->parts[i], f))) != 0) {
            json_decref(j);
            return FLOE_OOM(err);
        }
    }
    if (k->tx) {
        int rc = floe__kafka_tx_record(t, f, j, err);
        if (rc != FLOE_OK) {
            json_decref(j);
            return rc;
        }
    }
    size_t n = json_dumpb(j, NULL, 0, JSON_COMPACT | JSON_SORT_KEYS);
    floe__buf_reset(&k->text);
    int rc = floe__buf_reserve(&k->text, n + 1, err);
    if (rc == FLOE_OK) {
        k->text.len = json_dumpb(j, (char *)k->text.data, n, JSON_COMPACT | JSON_SORT_KEYS);
        k->text.data[k->text.len] = 0;
    }
    json_decref(j);
    return rc;
}

/* The sink's summary hook: every snapshot of a topic's table records the
 * offsets that go with its frontier, whichever call committed it (a
 * schema change or truncation cuts a batch of its own). */
static int offsets_summary(void *ctx, floe__frontier upper, const floe__metadata *base,
                           json_t *summary, floe_error *err)
{
    topic *t = ctx;
    FLOE_FORWARD(floe__kafka_dlq_flush(t->k, err));
    json_t *rec = NULL;
    int rc = t->k->member ? floe__kafka_member_commit(t, base, summary, &rec, err) : FLOE_OK;
    if (rc == FLOE_OK)
        rc = offsets_text(t->k, t, upper, json_object_get(rec, "partitions"), err);
    json_decref(rec);
    FLOE_FORWARD(rc);
    json_t *v = json_string((const char *)t->k->text.data);
    if (!v || json_object_set_new(summary, FLOE__KAFKA_OFFSETS_PROP, v) != 0)
        return FLOE_OOM(err);
    return FLOE_OK;
}

/* kafka_columns: the table has them (it was made with them). */
static int check_kafka_columns(const topic *t, floe_error *err)
{
    static const char *const names[] = {"_kafka_partition", "_kafka_offset",
                                        "_kafka_timestamp"};
    const floe__schema *s = floe_sink_row_schema(t->sink);
    for (size_t i = 0; i < 3; i++) {
        bool found = false;
        for (uint32_t c = 0; c < s->root.n_children; c++)
            found |= strcmp(s->root.children[c].name, names[i]) == 0;
        FLOE_RETURN_IF(!found, err, FLOE_EINVAL, "table %s has no column %s, which "
                       "kafka_columns fills (a table made without them: add the columns, or "
                       "give the topic another table)", t->table, names[i]);
    }
    return FLOE_OK;
}

/* Open topic t's sink, creating its table from `declared` when it does
 * not exist (NULL: it must). */
static int open_sink(floe_kafka *k, topic *t, const char *declared, floe_error *err)
{
    floe_sink_options so = k->sink;
    so.table = t->table;
    so.sink_id = t->sink_id;
    so.key = t->key;
    bool by_key = k->o.format == FLOE_KAFKA_UPSERT || k->o.format == FLOE_KAFKA_DEBEZIUM;
    so.mode = t->key ? FLOE_SINK_MODE_UPSERT : FLOE_SINK_MODE_APPEND;
    so.commit_on_advance = 1;
    so.as_of = 0;
    so.new_sink = so.new_sink || k->member;  /* a member joins a table the others fill */
    /* The schema is for a table floe creates: an existing one is read with
     * its own columns, those its stream added since (a schema record, a
     * Debezium ADD COLUMN) included, never evolved back to it. */
    so.schema = NULL;
    if (declared && k->o.kafka_columns) {
        if (!(t->declared = floe__sprintf("%s, %s", declared, KAFKA_COLUMNS)))
            return FLOE_OOM(err);
        declared = t->declared;
    }
    int rc = floe_sink_open(&so, &t->sink, err);
    if (rc == FLOE_ENOTFOUND && declared) {
        floe_error_clear(err);
        so.schema = declared;
        rc = floe_sink_open(&so, &t->sink, err);
    }
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "topic %s -> table %s", t->name, t->table);
    FLOE_RETURN_IF(floe_sink_complete(t->sink), err, FLOE_ESTATE,
                   "table %s records that its input was closed: nothing more can go in",
                   t->table);
    if (by_key) {
        floe__sink_expect_absent_keys(t->sink);
        FLOE_FORWARD(floe_sink_set_property(t->sink, KEY_PROP, t->key, err));
    }
    if (k->o.kafka_columns)
        FLOE_FORWARD(check_kafka_columns(t, err));
    floe__sink_summary_hook(t->sink, offsets_summary, t);
    if (k->member)                            /* until it holds the lease */
        floe__sink_maintain(t->sink, false);
    if (t->key && !strchr(t->key, ',') && !(t->key_col = floe__strdup(t->key)))
        return FLOE_OOM(err);
    FLOE_FORWARD(floe_row_new(floe_sink_row_schema(t->sink), &t->row, err));
    return floe_row_new(floe_sink_row_schema(t->sink), &t->keyrow, err);
}

/* Where the table stands: the offsets its last commit records, or each
 * partition's start for a fresh table. */
static int resume_offsets(floe_kafka *k, topic *t, floe_error *err)
{
    const char *resume = floe_sink_resume_frontier(t->sink);
    if (!resume) {                         /* time 0 is the (empty) snapshot batch's */
        t->time = t->committed_time = k->o.format == FLOE_KAFKA_CHANGES ? 0 : 1;
        return k->member ? FLOE_OK : fresh_offsets(k, t, err);
    }
    t->time = t->committed_time = strtoull(resume + 1, NULL, 10);
    for (size_t i = 0; i < t->n_parts; i++)  /* changes: no partition is behind the table */
        t->parts[i].progress = t->committed_time;
    if (k->member)                         /* offsets come with each assignment */
        return FLOE_OK;
    const char *rec = floe__sink_resume_property(t->sink, FLOE__KAFKA_OFFSETS_PROP);
    FLOE_RETURN_IF(!rec, err, FLOE_ESTATE, "table %s records progress of sink %s at %s but no "
                   "Kafka offsets (%s): it was not written by floe kafka", t->table,
                   t->sink_id, resume, FLOE__KAFKA_OFFSETS_PROP);
    json_t *j = json_loads(rec, 0, NULL);
    int rc = floe__kafka_recorded_offsets(k, t, j, rec, err);
    json_decref(j);
    FLOE_FORWARD(rc);
    floe__tell(k->o.on_notice, k->o.notice_ctx, "topic %s: table %s resumes at its recorded "
               "offsets (frontier %s)", t->name, t->table, resume);
    return FLOE_OK;
}

/* Whether topic t's table exists with snapshots, and the key columns its
 * sink recorded (*key, the caller's; NULL when none).  A table without a
 * snapshot (made by a run killed before its first commit, which records
 * the key) counts as not made yet: the first event makes it again. */
static int look_at_table(floe_kafka *k, topic *t, bool *exists, char **key, floe_error *err)
{
    *exists = false;
    *key = NULL;
    if (!k->catalog)
        FLOE_FORWARD(floe_catalog_open(k->sink.connect, &k->catalog, err));
    floe_table *tbl = NULL;
    int rc = floe_table_open(k->catalog, t->table, NULL, NULL, &tbl, err);
    if (rc == FLOE_ENOTFOUND) {
        floe_error_clear(err);
        return FLOE_OK;
    }
    FLOE_FORWARD(rc);
    *exists = floe_table_snapshot_count(tbl) > 0;
    floe_sink_progress pr;
    rc = floe_table_sink_progress(tbl, t->sink_id, &pr, sizeof pr, err);
    for (size_t i = 0; rc == FLOE_OK && pr.state == FLOE_PROGRESS_FOUND &&
                       i < floe_table_snapshot_count(tbl); i++) {
        floe_snapshot_info si;
        rc = floe_table_snapshot(tbl, i, &si, sizeof si, err);
        const char *v = rc == FLOE_OK && si.snapshot_id == pr.snapshot_id
                            ? floe_table_snapshot_property(tbl, i, KEY_PROP) : NULL;
        if (v && !(*key = floe__strdup(v)))
            rc = FLOE_OOM(err);
    }
    floe_table_free(tbl);
    return rc;
}

/* A topic's key columns and table at open: the sink opened and its
 * offsets found, or (debezium, a table that does not exist yet, without
 * --schema or --key) left to the first event, which names its columns and
 * the message key's. */
static int open_topic(floe_kafka *k, topic *t, floe_error *err)
{
    t->table = table_of(k, t->name);
    t->sink_id = k->member ? floe__sprintf("kafka:%s@%s", t->name, k->o.member)
                           : floe__sprintf("kafka:%s", t->name);
    if (!t->table || !t->sink_id)
        return FLOE_OOM(err);
    const char *fmt = k->o.format == FLOE_KAFKA_UPSERT ? "upsert" : "debezium";
    bool by_key = k->o.format == FLOE_KAFKA_UPSERT || k->o.format == FLOE_KAFKA_DEBEZIUM;
    bool dbz = k->o.format == FLOE_KAFKA_DEBEZIUM;
    FLOE_RETURN_IF(k->o.format == FLOE_KAFKA_APPEND && k->sink.key, err, FLOE_EINVAL,
                   "the append format takes no key columns");
    if (k->sink.key && !(t->key = floe__strdup(k->sink.key)))
        return FLOE_OOM(err);
    if (by_key && (!t->key || (dbz && !k->sink.schema))) {
        bool exists = false;
        char *recorded = NULL;
        FLOE_FORWARD(look_at_table(k, t, &exists, &recorded, err));
        if (!t->key)
            t->key = recorded;
        else
            floe__free(recorded);
        if (!exists && dbz) {                /* made from its first event */
            t->pending = true;
            t->time = t->committed_time = 1;
            return k->member ? FLOE_OK : fresh_offsets(k, t, err);
        }
        FLOE_RETURN_IF(!t->key, err, FLOE_EINVAL, "topic %s: the %s format needs the key "
                       "columns (the message key is the row's key) and table %s records none: "
                       "name them (--key)", t->name, fmt, t->table);
    }
    FLOE_FORWARD(open_sink(k, t, k->sink.schema, err));
    return resume_offsets(k, t, err);
}

/* debezium: topic t's table, made from its first event: the event's
 * columns (or --schema), the key columns of --key or the message key's
 * schema.  Not the message's fault when it cannot be: FLOE_EINVAL. */
static int open_from_event(floe_kafka *k, topic *t, const rd_kafka_message_t *m,
                           const floe__dbz *ev, floe_error *err)
{
    const json_t *fields = ev->after_fields ? ev->after_fields : ev->before_fields;
    char *columns = NULL;
    int rc = FLOE_OK;
    if (!k->sink.schema) {
        FLOE_RETURN_IF(!fields, err, FLOE_EINVAL, "table %s does not exist and the events of "
                       "topic %s carry no schema to make it from (JsonConverter with "
                       "schemas.enable=false): declare its columns (--schema) and key (--key)",
                       t->table, t->name);
        rc = floe__dbz_columns(fields, &k->text, err);
        if (rc == FLOE_OK && !(columns = floe__strdup((const char *)k->text.data)))
            rc = FLOE_OOM(err);
    }
    if (rc == FLOE_OK && !t->key) {
        rc = m->key ? floe__dbz_key_columns(&t->keys, m->key, m->key_len, &k->text, err)
                    : floe__err_set(err, FLOE_EINPUT, "the message has no key");
        if (rc == FLOE_OK && !(t->key = floe__strdup((const char *)k->text.data)))
            rc = FLOE_OOM(err);
        if (rc != FLOE_OK)
            rc = floe__err_wrap(err, FLOE_EINVAL, "table %s does not exist and its key "
                                "columns are not known: name them (--key)", t->table);
    }
    if (rc == FLOE_OK)
        rc = open_sink(k, t, columns ? columns : k->sink.schema, err);
    if (rc == FLOE_OK) {
        t->pending = false;
        floe__tell(k->o.on_notice, k->o.notice_ctx, "topic %s: table %s made from its first "
                   "event: %s, key %s", t->name, t->table,
                   columns ? columns : k->sink.schema, t->key);
    }
    floe__free(columns);
    return rc;
}

/* The partitions of topics [from, n_topics) join the assignment, each at
 * its table's offset. */
static int assign(floe_kafka *k, size_t from, floe_error *err)
{
    size_t n = 0;
    for (size_t i = from; i < k->n_topics; i++)
        n += k->topics[i]->n_parts;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)n + 1);
    if (!l)
        return FLOE_OOM(err);
    if (from == 0 && k->tx)
        floe__kafka_tx_assign(k, l);
    for (size_t i = from; i < k->n_topics; i++) {
        topic *t = k->topics[i];
        for (size_t p = 0; p < t->n_parts; p++) {
            rd_kafka_topic_partition_t *tp =
                rd_kafka_topic_partition_list_add(l, t->name, t->parts[p].id);
            tp->offset = t->parts[p].next;
            t->parts[p].stop = t->parts[p].end;
        }
    }
    rd_kafka_error_t *e = rd_kafka_incremental_assign(k->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (!e)
        return FLOE_OK;
    int rc = floe__kafka_err(err, rd_kafka_error_code(e), "Kafka: assigning the partitions");
    rd_kafka_error_destroy(e);
    return rc;
}

int floe_kafka_open(const floe_kafka_options *caller, floe_kafka **out, floe_error *err)
{
    *out = NULL;
    FLOE_RETURN_IF(!caller, err, FLOE_EINVAL, "floe_kafka_open: NULL options");
    floe_kafka_options o;
    FLOE_FORWARD(FLOE__OPTIONS_IN(floe_kafka_options, &o, caller, err));
    const floe_kafka_options *opts = &o;
    FLOE_RETURN_IF(!opts->brokers || !*opts->brokers, err, FLOE_EINVAL, "Kafka: no brokers");
    FLOE_RETURN_IF(opts->kafka_columns && opts->format != FLOE_KAFKA_APPEND, err, FLOE_EINVAL,
                   "kafka_columns is for the append format (the others keep one row per key)");
    FLOE_RETURN_IF((opts->on_bad_message == FLOE_KAFKA_BAD_DEAD_LETTER) !=
                       (opts->dead_letter_topic && *opts->dead_letter_topic), err, FLOE_EINVAL,
                   "dead_letter_topic goes with on_bad_message FLOE_KAFKA_BAD_DEAD_LETTER");
    FLOE_RETURN_IF(opts->member && (!*opts->member || !opts->group), err, FLOE_EINVAL,
                   "Kafka: a member (member) needs its group (group)");
    FLOE_RETURN_IF(opts->member && opts->format == FLOE_KAFKA_CHANGES, err, FLOE_EINVAL,
                   "Kafka: the changes format's frontier is the least progress of all the "
                   "partitions: one process reads them (no member)");
    /* members rebalance eagerly (group.c says why) */
    for (const char *const *p = opts->kafka_properties; opts->member && p && p[0] && p[1]; p += 2)
        FLOE_RETURN_IF(strcmp(p[0], "partition.assignment.strategy") == 0 &&
                           strstr(p[1], "cooperative"), err, FLOE_EINVAL,
                       "Kafka property partition.assignment.strategy=%s: floe's members "
                       "rebalance eagerly; use range or roundrobin", p[1]);
    FLOE_RETURN_IF(opts->transaction_topic && opts->format != FLOE_KAFKA_DEBEZIUM, err,
                   FLOE_EINVAL, "transaction_topic is Debezium's (the debezium format)");
    FLOE_RETURN_IF(opts->transaction_topic && (opts->member || opts->topic_pattern), err,
                   FLOE_EINVAL, "transaction_topic needs every topic a transaction touches "
                   "read by this process from the start: not with member or topic_pattern");
    FLOE_RETURN_IF(!opts->topics == !opts->topic_pattern, err, FLOE_EINVAL,
                   "Kafka: give topics or topic_pattern (one of them)");
    FLOE_RETURN_IF(opts->format != FLOE_KAFKA_UPSERT && opts->format != FLOE_KAFKA_APPEND &&
                   opts->format != FLOE_KAFKA_DEBEZIUM && opts->format != FLOE_KAFKA_CHANGES,
                   err, FLOE_EINVAL, "Kafka: unknown format %d", (int)opts->format);
    floe_kafka *k = floe__calloc(1, sizeof *k);
    if (!k)
        return FLOE_OOM(err);
    k->strings = floe__arena_new(0);
    floe__buf_init(&k->text, 0);
    floe__buf_init(&k->key, 0);
    floe__buf_init(&k->row, 0);
    floe__buf_init(&k->scratch, 0);
    k->o = *opts;
    k->member = opts->member != NULL;
    k->o.kafka_properties = NULL;           /* read only here, by consumer_new */
    floe_connect_options connect;           /* until floe__sink_options_own copies it */
    int rc = k->strings ? floe__sink_options_in(&k->sink, &connect, opts->sink, err)
                        : FLOE_OOM(err);
    k->o.sink = &k->sink;
    if (rc == FLOE_OK &&
        (own(k, &k->o.brokers) || own(k, &k->o.topics) || own(k, &k->o.namespace_name) ||
         own(k, &k->o.table_map) || own(k, &k->o.group) || own(k, &k->o.dead_letter_topic) ||
         own(k, &k->o.topic_pattern) || own(k, &k->o.member) ||
         own(k, &k->o.transaction_topic)))
        rc = FLOE_OOM(err);
    if (rc == FLOE_OK)
        rc = floe__sink_options_own(&k->sink, k->strings, err);
    if (rc == FLOE_OK)
        rc = k->o.topic_pattern ? compile_pattern(k, err) : split_topics(k, err);
    if (rc == FLOE_OK)
        rc = check_map(k, err);
    if (rc == FLOE_OK) {
        k->o.kafka_properties = opts->kafka_properties;
        rc = consumer_new(k, err);
        if (rc == FLOE_OK && k->o.dead_letter_topic)
            rc = floe__kafka_dlq_open(k, err);
        k->o.kafka_properties = NULL;
    }
    if (rc == FLOE_OK)
        rc = k->has_pattern ? discover(k, err) : learn_topics(k, err);
    if (rc == FLOE_OK)
        rc = learn_cluster(k, err);
    for (size_t i = 0; rc == FLOE_OK && i < k->n_topics; i++)
        rc = open_topic(k, k->topics[i], err);
    if (rc == FLOE_OK && k->o.transaction_topic)
        rc = floe__kafka_tx_open(k, err);
    if (rc == FLOE_OK)
        rc = k->member ? floe__kafka_subscribe(k, err) : assign(k, 0, err);
    if (rc != FLOE_OK) {
        floe_kafka_free(k);
        return rc;
    }
    floe__tell(k->o.on_notice, k->o.notice_ctx, "Kafka cluster %s: %zu topic%s", k->cluster,
               k->n_topics, k->n_topics == 1 ? "" : "s");
    k->last_commit_ns = floe__monotonic_ns();
    *out = k;
    return FLOE_OK;
}

void floe_kafka_free(floe_kafka *k)
{
    if (!k)
        return;
    floe__kafka_tx_free(k);                    /* (its messages before the client) */
    if (k->queue)
        rd_kafka_queue_destroy(k->queue);
    k->closing = true;                         /* (revocations in the close commit nothing) */
    k->run_err = NULL;
    if (k->rk) {
        rd_kafka_consumer_close(k->rk);
        rd_kafka_destroy(k->rk);
    }
    if (k->dlq)
        rd_kafka_destroy(k->dlq);
    floe__free(k->dlq_failed);
    for (size_t i = 0; i < k->n_topics; i++) {
        topic *t = k->topics[i];
        floe_row_free(t->row);
        floe_row_free(t->keyrow);
        floe_sink_free(t->sink);
        for (size_t p = 0; p < t->n_parts; p++)
            floe__free(t->parts[p].held);
        floe__free(t->parts);
        floe__free(t->name);
        floe__free(t->table);
        floe__free(t->sink_id);
        floe__free(t->key_col);
        floe__free(t->declared);
        floe__free(t->key);
        floe__dbz_cache_free(&t->values);
        floe__dbz_cache_free(&t->keys);
        floe__free(t);
    }
    floe__free(k->topics);
    floe_catalog_free(k->catalog);
    if (k->has_pattern)
        regfree(&k->pattern);
    floe__free(k->cluster);
    floe__buf_free(&k->text);
    floe__buf_free(&k->key);
    floe__buf_free(&k->row);
    floe__buf_free(&k->scratch);
    floe__arena_free(k->strings);
    floe__free(k);
}

void floe_kafka_stop(floe_kafka *k) { atomic_store(&k->stop, true); }

/* ---- messages ---------------------------------------------------------------------------------- */

topic *floe__kafka_topic_of(floe_kafka *k, const char *name, int32_t partition, part **p)
{
    for (size_t i = 0; i < k->n_topics; i++) {
        topic *t = k->topics[i];
        if (strcmp(t->name, name) != 0)
            continue;
        for (size_t j = 0; j < t->n_parts; j++)
            if (t->parts[j].id == partition) {
                *p = &t->parts[j];
                return t;
            }
    }
    return NULL;
}

/* The message key as a row of the key columns: a JSON object, or the bare
 * JSON value of a single key column. */
static int key_row(floe_kafka *k, topic *t, const char *key, size_t len, floe_error *err)
{
    size_t i = 0;
    while (i < len && (key[i] == ' ' || key[i] == '\t' || key[i] == '\n' || key[i] == '\r'))
        i++;
    if (i < len && key[i] == '{')
        return floe_row_set_json(t->keyrow, key, len, err);
    FLOE_RETURN_IF(!t->key_col, err, FLOE_EINPUT, "the key is not a JSON object of the key "
                   "columns (%s)", t->key);
    floe__buf_reset(&k->key);
    FLOE_FORWARD(floe__buf_append(&k->key, "{\"", 2, err));
    FLOE_FORWARD(floe__buf_append(&k->key, t->key_col, strlen(t->key_col), err));
    FLOE_FORWARD(floe__buf_append(&k->key, "\":", 2, err));
    FLOE_FORWARD(floe__buf_append(&k->key, key, len, err));
    FLOE_FORWARD(floe__buf_append(&k->key, "}", 1, err));
    return floe_row_set_json(t->keyrow, (const char *)k->key.data, k->key.len, err);
}

/* The table's schema becomes the columns a Debezium event declares, at
 * `time` (a column added at the source). */
static int evolve(floe_kafka *k, topic *t, const json_t *fields, uint64_t time, floe_error *err)
{
    FLOE_FORWARD(floe__dbz_columns(fields, &k->text, err));
    floe_schema *s = NULL;
    int rc = floe_schema_parse((const char *)k->text.data, &s, err);
    if (rc == FLOE_OK)
        rc = floe_sink_evolve(t->sink, time, s, NULL, err);
    floe_schema_free(s);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "table %s: the columns of a Debezium event (%s)",
                              t->table, (const char *)k->text.data);
    floe_row_free(t->row);
    floe_row_free(t->keyrow);
    t->row = t->keyrow = NULL;
    FLOE_FORWARD(floe_row_new(floe_sink_row_schema(t->sink), &t->row, err));
    FLOE_FORWARD(floe_row_new(floe_sink_row_schema(t->sink), &t->keyrow, err));
    atomic_fetch_add(&k->evolved, 1);
    floe__tell(k->o.on_notice, k->o.notice_ctx, "topic %s: table %s takes the columns of a "
               "Debezium event: %s", t->name, t->table, (const char *)k->text.data);
    return FLOE_OK;
}

static int debezium_event(floe_kafka *k, topic *t, const rd_kafka_message_t *m,
                          const floe__dbz *ev, floe_error *err)
{
    uint64_t time = t->time;
    const floe_schema *s = floe_sink_row_schema(t->sink);
    switch (ev->op) {
    case 'm':
        return FLOE_OK;
    case 't':
        atomic_fetch_add(&k->truncates, 1);
        return floe_sink_truncate(t->sink, time, err);
    case 'd':
        if (m->key)
            FLOE_FORWARD(floe__dbz_key(s, &t->keys, m->key, m->key_len, &k->scratch, &k->row,
                                       err));
        else if (ev->before)
            FLOE_FORWARD(floe__dbz_row(s, ev->before, ev->before_len, ev->before_fields,
                                       &k->scratch, &k->row, err));
        else
            return floe__err_set(err, FLOE_EINPUT, "a Debezium delete without a key or "
                                 "\"before\"");
        FLOE_FORWARD(floe_row_set_json(t->keyrow, (const char *)k->row.data, k->row.len, err));
        return floe_sink_retract_key(t->sink, t->keyrow, time, err);
    default:                                   /* c, r, u: the key's row is "after" */
        if (ev->after_fields && floe__dbz_new_columns(ev->after_fields, s)) {
            FLOE_FORWARD(evolve(k, t, ev->after_fields, time, err));
            s = floe_sink_row_schema(t->sink);
        }
        FLOE_FORWARD(floe__dbz_row(s, ev->after, ev->after_len, ev->after_fields, &k->scratch,
                                   &k->row, err));
        FLOE_FORWARD(floe_row_set_json(t->row, (const char *)k->row.data, k->row.len, err));
        FLOE_FORWARD(floe_sink_retract_key(t->sink, t->row, time, err));
        return floe_sink_push(t->sink, t->row, time, 1, err);
    }
}

static int hold(part *p, int64_t offset, uint64_t time, floe_error *err)
{
    if (p->n_held == p->cap_held) {
        size_t cap = p->cap_held ? 2 * p->cap_held : 64;
        held *more = floe__realloc(p->held, cap * sizeof *more);
        if (!more)
            return FLOE_OOM(err);
        p->held = more;
        p->cap_held = cap;
    }
    p->held[p->n_held++] = (held){offset, time};
    return FLOE_OK;
}

/* A changes message: one change record (SPEC 2) at its own time; a
 * progress record moves only its partition's frontier (the table's is the
 * least of its partitions', commit_changes). */
static int change(floe_kafka *k, topic *t, part *p, const rd_kafka_message_t *m,
                  floe_error *err)
{
    if (!m->payload) {
        atomic_fetch_add(&k->tombstones, 1);
        return FLOE_OK;
    }
    floe__change ch;
    FLOE_FORWARD(floe__sink_parse_change(t->sink, m->payload, m->len, &ch, err));
    if (ch.kind == FLOE__CHANGE_PROGRESS) {
        if (ch.closed)
            p->closed = true;
        else if (ch.time > p->progress)
            p->progress = ch.time;
        return FLOE_OK;
    }
    FLOE_RETURN_IF(p->closed, err, FLOE_EINPUT, "a change after the partition's {\"progress\": "
                   "null}, which closed it");
    bool replay = ch.time < t->committed_time;       /* committed before a restart */
    FLOE_RETURN_IF(!replay && ch.time < p->progress, err, FLOE_EINPUT, "time %" PRIu64 " is "
                   "behind the partition's progress %" PRIu64, ch.time, p->progress);
    if (ch.kind != FLOE__CHANGE_UPDATE) {
        /* a schema, partition-by or truncate record at T ends the input
         * before T (the sink cuts its batch there): a partition's word, so
         * only a topic of one partition can say it */
        FLOE_RETURN_IF(t->n_parts > 1, err, FLOE_EINPUT, "a schema, partition-by or truncate "
                       "record in a topic of %zu partitions: its time would end the other "
                       "partitions' input too (give such a stream a topic of one partition)",
                       t->n_parts);
    }
    FLOE_FORWARD(floe__sink_apply_change(t->sink, &ch, err));
    if (replay)
        return FLOE_OK;
    if (ch.kind != FLOE__CHANGE_UPDATE && ch.time > p->progress)
        p->progress = ch.time;
    return hold(p, m->offset, ch.time, err);
}

/* The value's object with the message's partition, offset and timestamp
 * put first, into k->row. */
static int with_kafka_columns(floe_kafka *k, const rd_kafka_message_t *m, floe_error *err)
{
    const char *v = m->payload, *end = v + m->len;
    while (v < end && (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r'))
        v++;
    FLOE_RETURN_IF(v == end || *v != '{', err, FLOE_EINPUT, "the value is not a JSON object");
    const char *rest = v + 1;
    while (rest < end && (*rest == ' ' || *rest == '\t' || *rest == '\n' || *rest == '\r'))
        rest++;
    rd_kafka_timestamp_type_t type;
    int64_t ms = rd_kafka_message_timestamp(m, &type);
    char ts[64] = "null";
    if (type != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE && ms >= 0) {
        ts[0] = '"';
        size_t n = 1 + floe__format_timestamp(ms * 1000, true, ts + 1);
        ts[n] = '"';
        ts[n + 1] = 0;
    }
    floe__buf_reset(&k->row);
    FLOE_FORWARD(floe__buf_printf(&k->row, err, "{\"_kafka_partition\":%" PRId32
                                  ",\"_kafka_offset\":%" PRId64 ",\"_kafka_timestamp\":%s%s",
                                  m->partition, m->offset, ts,
                                  rest < end && *rest == '}' ? "" : ","));
    return floe__buf_append(&k->row, rest, (size_t)(end - rest), err);
}

/* One message at time t->time: its updates, or FLOE_EINPUT saying why not. */
static int apply(floe_kafka *k, topic *t, part *p, const rd_kafka_message_t *m,
                 floe_error *err)
{
    const char *value = m->payload;
    uint64_t time = t->time;
    if (k->o.format == FLOE_KAFKA_CHANGES)
        return change(k, t, p, m, err);
    if (k->o.format == FLOE_KAFKA_DEBEZIUM) {
        if (!value) {                          /* the tombstone after a delete */
            atomic_fetch_add(&k->tombstones, 1);
            return FLOE_OK;
        }
        floe__dbz ev;
        FLOE_FORWARD(floe__dbz_parse(&t->values, value, m->len, &ev, err));
        if (t->pending && (ev.op == 't' || ev.op == 'm'))
            return FLOE_OK;                    /* nothing to truncate yet */
        if (t->pending)
            FLOE_FORWARD(open_from_event(k, t, m, &ev, err));
        return debezium_event(k, t, m, &ev, err);
    }
    if (k->o.format == FLOE_KAFKA_APPEND) {
        if (!value) {
            atomic_fetch_add(&k->tombstones, 1);
            return FLOE_OK;
        }
        if (k->o.kafka_columns) {
            FLOE_FORWARD(with_kafka_columns(k, m, err));
            FLOE_FORWARD(floe_row_set_json(t->row, (const char *)k->row.data, k->row.len, err));
            return floe_sink_push(t->sink, t->row, time, 1, err);
        }
        FLOE_FORWARD(floe_row_set_json(t->row, value, m->len, err));
        return floe_sink_push(t->sink, t->row, time, 1, err);
    }
    FLOE_RETURN_IF(!m->key, err, FLOE_EINPUT, "a message without a key (the upsert format "
                   "keys rows by the message key)");
    if (!value) {
        atomic_fetch_add(&k->tombstones, 1);
        FLOE_FORWARD(key_row(k, t, m->key, m->key_len, err));
        return floe_sink_retract_key(t->sink, t->keyrow, time, err);
    }
    FLOE_FORWARD(floe_row_set_json(t->row, value, m->len, err));
    FLOE_FORWARD(floe_sink_retract_key(t->sink, t->row, time, err));
    return floe_sink_push(t->sink, t->row, time, 1, err);
}

/* An error the consumer hands out as a message.  librdkafka reconnects
 * and retries by itself: a broker down or restarting is waited out (and
 * said once); what reading on cannot mend halts the run. */
static int consumer_error(floe_kafka *k, const rd_kafka_message_t *m, floe_error *err)
{
    const char *name = m->rkt ? rd_kafka_topic_name(m->rkt) : "(no topic)";
    char why[512];
    if (rd_kafka_fatal_error(k->rk, why, sizeof why))
        return floe__err_set(err, FLOE_ESTATE, "Kafka: %s", why);
    switch (m->err) {
    case RD_KAFKA_RESP_ERR__PARTITION_EOF:
        return FLOE_OK;
    case RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET:
    case RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE:
        return floe__err_set(err, FLOE_ESTATE, "Kafka topic %s partition %" PRId32 ": the "
                             "next offset to read is out of the partition's range (messages "
                             "deleted by retention before floe read them, or the topic "
                             "deleted and created again): %s", name, m->partition,
                             rd_kafka_message_errstr(m));
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
        return floe__kafka_err(err, m->err, "Kafka: reading %s", name);
    default:
        on_error(k->rk, m->err, rd_kafka_message_errstr(m), k);
        return FLOE_OK;
    }
}

int floe__kafka_take(floe_kafka *k, topic *t, part *p, const rd_kafka_message_t *m,
                     floe_error *err)
{
    const char *name = t->name;
    int rc = apply(k, t, p, m, err);
    if (rc == FLOE_EINPUT) {
        if (k->o.on_bad_message == FLOE_KAFKA_BAD_FAIL)
            return floe__err_wrap(err, rc, "topic %s partition %" PRId32 " offset %" PRId64
                                  " (--on-bad-message skip or dead-letter=TOPIC passes over "
                                  "such messages)", name, m->partition, m->offset);
        if (k->o.on_bad_message == FLOE_KAFKA_BAD_DEAD_LETTER) {
            char why[1024];
            snprintf(why, sizeof why, "%s", floe_error_message(err));
            floe_error_clear(err);
            FLOE_FORWARD(floe__kafka_dlq_copy(k, m, why, err));
        }
        atomic_fetch_add(&k->bad, 1);
        floe_error_clear(err);
        rc = FLOE_OK;
    }
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "topic %s partition %" PRId32 " offset %" PRId64, name,
                              m->partition, m->offset);
    if (k->o.format != FLOE_KAFKA_CHANGES)
        t->time++;
    return FLOE_OK;
}

/* One message read; *kept: it is held (transaction_topic), not the
 * caller's to destroy. */
static int message(floe_kafka *k, rd_kafka_message_t *m, bool *kept, floe_error *err)
{
    *kept = false;
    if (m->err)
        return consumer_error(k, m, err);
    k->last_transient = 0;
    const char *name = rd_kafka_topic_name(m->rkt);
    if (floe__kafka_tx_is(k, name))
        return floe__kafka_tx_message(k, m, err);
    part *p = NULL;
    topic *t = floe__kafka_topic_of(k, name, m->partition, &p);
    FLOE_RETURN_IF(!t, err, FLOE_EINTERNAL, "Kafka: a message of %s partition %" PRId32
                   ", which is not assigned", name, m->partition);
    if (!p->owned || m->offset < p->next)
        return FLOE_OK;                     /* revoked, or read before (a seek back) */
    atomic_fetch_add(&k->messages, 1);
    atomic_fetch_add(&k->bytes, m->len + m->key_len);
    FLOE_FORWARD(k->tx ? floe__kafka_tx_event(k, t, p, m, kept, err)
                       : floe__kafka_take(k, t, p, m, err));
    p->next = m->offset + 1;
    return FLOE_OK;
}

/* Kafka's group offsets, for monitoring: what the tables record. */
static void commit_group(floe_kafka *k)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
    if (!l)
        return;
    for (size_t i = 0; i < k->n_topics; i++)
        for (size_t p = 0; p < k->topics[i]->n_parts; p++)
            if (k->topics[i]->parts[p].owned)
                rd_kafka_topic_partition_list_add(l, k->topics[i]->name,
                                                  k->topics[i]->parts[p].id)->offset =
                    k->topics[i]->parts[p].committed;
    rd_kafka_commit(k->rk, l, 1);            /* async: its outcome changes nothing */
    rd_kafka_topic_partition_list_destroy(l);
}

static void update_lag(floe_kafka *k)
{
    uint64_t lag = 0;
    for (size_t i = 0; i < k->n_topics; i++)
        for (size_t p = 0; p < k->topics[i]->n_parts; p++) {
            part *pt = &k->topics[i]->parts[p];
            int64_t lo = 0, hi = 0;
            if (!pt->owned)
                continue;
            if (rd_kafka_get_watermark_offsets(k->rk, k->topics[i]->name, pt->id, &lo, &hi) ==
                    RD_KAFKA_RESP_ERR_NO_ERROR && hi > pt->end)
                pt->end = hi;
            if (pt->end > pt->committed)
                lag += (uint64_t)(pt->end - pt->committed);
        }
    atomic_store(&k->lag, lag);
}

/* changes: the table's frontier moves to the least of its partitions'
 * progress; when every partition has closed, the table's input is
 * complete.  Whether it committed, in *done. */
static int commit_changes(topic *t, bool *done, floe_error *err)
{
    uint64_t f = UINT64_MAX;
    bool closed = true;
    for (size_t i = 0; i < t->n_parts; i++)
        if (!t->parts[i].closed) {
            closed = false;
            if (t->parts[i].progress < f)
                f = t->parts[i].progress;
        }
    *done = false;
    if (t->complete || (!closed && f <= t->committed_time))
        return FLOE_OK;
    FLOE_FORWARD(closed ? floe_sink_finish(t->sink, err) : floe_sink_advance(t->sink, f, err));
    t->complete = closed;
    t->committed_time = f;
    for (size_t i = 0; i < t->n_parts; i++) {      /* what the commit covers is not held */
        part *p = &t->parts[i];
        size_t n = 0;
        for (size_t j = 0; j < p->n_held; j++)
            if (!closed && p->held[j].time >= f)
                p->held[n++] = p->held[j];
        p->n_held = n;
    }
    *done = true;
    return FLOE_OK;
}

int floe__kafka_commit_all(floe_kafka *k, floe_error *err)
{
    bool any = false;
    for (size_t i = 0; i < k->n_topics; i++) {
        topic *t = k->topics[i];
        bool done = false;
        int rc = FLOE_OK;
        if (k->o.format == FLOE_KAFKA_CHANGES) {
            rc = commit_changes(t, &done, err);
        } else if (t->sink && t->time != t->committed_time) {
            rc = floe_sink_advance(t->sink, t->time, err);
            t->committed_time = t->time;
            done = true;
        }
        if (rc == FLOE_OK && done && k->tx)
            rc = floe__kafka_tx_committed(t, err);
        if (rc != FLOE_OK)
            return floe__err_wrap(err, rc, "table %s", t->table);
        if (!done)
            continue;
        floe__frontier f = t->complete ? (floe__frontier){.empty = true}
                                       : floe__frontier_at(t->committed_time);
        for (size_t p = 0; p < t->n_parts; p++)   /* (not changes: every message read) */
            if (t->parts[p].owned) {
                t->parts[p].committed = k->o.format == FLOE_KAFKA_CHANGES
                                            ? offset_for(t, &t->parts[p], f)
                                            : floe__kafka_resume_at(&t->parts[p]);
                t->parts[p].unrecorded = false;
            }
        atomic_fetch_add(&k->snapshots, 1);
        any = true;
    }
    if (any)
        commit_group(k);
    update_lag(k);
    k->last_commit_ns = floe__monotonic_ns();
    return FLOE_OK;
}

/* Every partition read up to its end when it was taken (a member: all of
 * them assigned to it). */
static bool at_end(const floe_kafka *k)
{
    for (size_t i = 0; i < k->n_topics; i++)
        for (size_t p = 0; p < k->topics[i]->n_parts; p++)
            if (!k->topics[i]->parts[p].owned ||
                k->topics[i]->parts[p].next < k->topics[i]->parts[p].stop)
                return false;
    return (k->n_topics > 0 || !k->member) && floe__kafka_tx_at_end(k);
}

static bool stop_asked(floe_kafka *k)
{
    if (atomic_load(&k->stop))
        return true;
    if (k->o.stop_fd < 0)
        return false;
    struct pollfd pf = {.fd = k->o.stop_fd, .events = POLLIN};
    return poll(&pf, 1, 0) > 0;
}

/* topic_pattern: topics created since the last look join the run. */
static int new_topics(floe_kafka *k, floe_error *err)
{
    size_t from = k->n_topics;
    FLOE_FORWARD(discover(k, err));
    for (size_t i = from; i < k->n_topics; i++) {
        FLOE_FORWARD(open_topic(k, k->topics[i], err));
        floe__tell(k->o.on_notice, k->o.notice_ctx, "topic %s matches the topic pattern: "
                   "it goes to table %s", k->topics[i]->name, k->topics[i]->table);
    }
    if (from == k->n_topics)
        return FLOE_OK;
    return k->member ? floe__kafka_subscribe(k, err) : assign(k, from, err);
}

static int run(floe_kafka *k, floe_error *err)
{
    uint64_t interval_ns = (k->o.commit_interval_ms ? k->o.commit_interval_ms
                                                    : FLOE__KAFKA_COMMIT_MS) * 1000000u;
    uint64_t refresh_ns = (k->o.topic_refresh_ms ? k->o.topic_refresh_ms
                                                 : DEFAULT_REFRESH_MS) * 1000000u;
    rd_kafka_message_t *msgs[BATCH];
    for (;;) {
        if (stop_asked(k)) {
            FLOE_FORWARD(floe__kafka_commit_all(k, err));
            return floe__err_set(err, FLOE_EINTERRUPTED, "stopped; everything read is "
                                 "committed");
        }
        if (k->o.stop_at_end && at_end(k))
            return floe__kafka_commit_all(k, err);
        ssize_t n = rd_kafka_consume_batch_queue(k->queue, FLOE__KAFKA_POLL_MS, msgs, BATCH);
        FLOE_RETURN_IF(n < 0, err, FLOE_EINTERNAL, "Kafka: %s",
                       rd_kafka_err2str(rd_kafka_last_error()));
        if (k->cb_rc != FLOE_OK) {            /* a rebalance failed (err says why) */
            for (ssize_t i = 0; i < n; i++)
                rd_kafka_message_destroy(msgs[i]);
            return k->cb_rc;
        }
        int rc = FLOE_OK;
        for (ssize_t i = 0; i < n; i++) {
            bool kept = false;
            if (rc == FLOE_OK)
                rc = message(k, msgs[i], &kept, err);
            if (!kept)
                rd_kafka_message_destroy(msgs[i]);
        }
        FLOE_FORWARD(rc);
        FLOE_FORWARD(floe__kafka_tx_release(k, err));
        if (floe__monotonic_ns() - k->last_commit_ns >= interval_ns)
            FLOE_FORWARD(floe__kafka_commit_all(k, err));
        if (k->has_pattern && floe__monotonic_ns() - k->last_refresh_ns >= refresh_ns)
            FLOE_FORWARD(new_topics(k, err));
    }
}

int floe_kafka_run(floe_kafka *k, floe_error *err)
{
    k->run_err = err;
    int rc = run(k, err);
    k->run_err = NULL;
    return rc;
}

/* ---- what it did ------------------------------------------------------------------------------- */

void floe_kafka_stats_get(const floe_kafka *k, floe_kafka_stats *dst, size_t size)
{
    floe_kafka_stats st = {.size = sizeof st}, *out = &st;
    out->topics = k->n_topics;
    for (size_t i = 0; i < k->n_topics; i++)
        out->partitions += k->topics[i]->n_parts;
    floe_kafka *m = (floe_kafka *)k;             /* the counters are atomic */
    out->messages = atomic_load(&m->messages);
    out->bytes = atomic_load(&m->bytes);
    out->bad_messages = atomic_load(&m->bad);
    out->tombstones = atomic_load(&m->tombstones);
    out->truncates = atomic_load(&m->truncates);
    out->schema_changes = atomic_load(&m->evolved);
    out->snapshots_committed = atomic_load(&m->snapshots);
    out->lag_messages = atomic_load(&m->lag);
    floe__abi_out(dst, size, &st, sizeof st);
}

static int metric(floe__buf *b, const char *name, const char *type, const char *help, double v,
                  floe_error *err)
{
    return floe__buf_printf(b, err, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name,
                            type, name, v);
}

int floe_kafka_metrics(const floe_kafka *k, char **out, floe_error *err)
{
    floe_kafka_stats st;
    floe_kafka_stats_get(k, &st, sizeof st);
    struct { const char *name, *type, *help; double v; } m[] = {
        {"floe_kafka_messages_total", "counter", "Messages read.", (double)st.messages},
        {"floe_kafka_bytes_total", "counter", "Key and value bytes of the messages read.", (double)st.bytes},
        {"floe_kafka_bad_messages_total", "counter", "Messages that did not parse, skipped.", (double)st.bad_messages},
        {"floe_kafka_tombstones_total", "counter", "Messages with a null value.", (double)st.tombstones},
        {"floe_kafka_truncates_total", "counter", "Debezium TRUNCATE events.", (double)st.truncates},
        {"floe_kafka_schema_changes_total", "counter", "Tables evolved to a Debezium event's columns.", (double)st.schema_changes},
        {"floe_kafka_lag_messages", "gauge", "Messages in the partitions past what the tables have committed.", (double)st.lag_messages},
    };
    floe__buf b;
    floe__buf_init(&b, (size_t)1 << 26);
    int rc = FLOE_OK;
    for (size_t i = 0; rc == FLOE_OK && i < sizeof m / sizeof m[0]; i++)
        rc = metric(&b, m[i].name, m[i].type, m[i].help, m[i].v, err);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(&b, err, "# HELP floe_kafka_partition_lag Messages of a partition "
                              "past the offset its table has committed.\n"
                              "# TYPE floe_kafka_partition_lag gauge\n");
    for (size_t i = 0; rc == FLOE_OK && i < k->n_topics; i++)
        for (size_t p = 0; rc == FLOE_OK && p < k->topics[i]->n_parts; p++) {
            const part *pt = &k->topics[i]->parts[p];
            int64_t lag = atomic_load(&pt->end) - atomic_load(&pt->committed);
            rc = floe__buf_printf(&b, err, "floe_kafka_partition_lag{topic=\"%s\",partition=\"%"
                                  PRId32 "\"} %" PRId64 "\n", k->topics[i]->name, pt->id,
                                  lag > 0 ? lag : 0);
        }
    const floe_sink **sinks = floe__calloc(k->n_topics ? k->n_topics : 1, sizeof *sinks);
    if (rc == FLOE_OK && !sinks)
        rc = FLOE_OOM(err);
    size_t n = 0;
    for (size_t i = 0; rc == FLOE_OK && i < k->n_topics; i++)
        if (k->topics[i]->sink)                  /* (not a table waiting for its first event) */
            sinks[n++] = k->topics[i]->sink;
    if (rc == FLOE_OK)
        rc = floe__sinks_metrics(sinks, n, &b, err);
    if (rc == FLOE_OK && !(*out = floe__buf_strdup(&b)))
        rc = FLOE_OOM(err);
    floe__free(sinks);
    floe__buf_free(&b);
    return rc;
}

floe_sink *floe_kafka_sink(floe_kafka *k, size_t i)
{
    return i < k->n_topics ? k->topics[i]->sink : NULL;
}
const char *floe_kafka_topic(const floe_kafka *k, size_t i)
{
    return i < k->n_topics ? k->topics[i]->name : NULL;
}
const char *floe_kafka_table(const floe_kafka *k, size_t i)
{
    return i < k->n_topics ? k->topics[i]->table : NULL;
}
