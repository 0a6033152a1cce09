/*
 * transactions.c - Debezium's transaction metadata topic
 * (floe_kafka_options.transaction_topic): change events held until the
 * source transaction they belong to is whole in every topic of the run,
 * then given to the sinks in the order the transactions ended, so that
 * every snapshot holds whole transactions; and where each table stands in
 * that topic, recorded with its offsets (docs/kafka.md, "Source
 * transactions").
 *
 * Debezium writes, per transaction, an END message to the topic
 * PREFIX.transaction naming, per data collection SCHEMA.TABLE, how many
 * events it wrote to topic PREFIX.SCHEMA.TABLE; each event names its
 * transaction.  A partition's events come in the order their transactions
 * ended, so a transaction's events are at the head of each partition's
 * held queue once those of the transactions before it are given away.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/kafka_internal.h"

typedef floe__kafka_part part;
typedef floe__kafka_topic topic;
typedef floe__kafka_run run;
typedef floe__kafka_mark mark;

/* A transaction that ended, whose events are not all given to the sinks. */
typedef struct end {
    char *id;
    int64_t offset;             /* of its END message */
    uint64_t *expect;           /* per topic of the run: its events there still to read */
} end;

#define DEFAULT_MEMORY ((size_t)1 << 30)
#define HELD_OVERHEAD 96            /* librdkafka's message, our slot and run, roughly */

struct floe__kafka_tx {
    char *name;
    size_t held, most;          /* bytes of events held; the bound (txn_memory) */
    size_t prefix_len;          /* of name up to its last '.': PREFIX */
    int64_t next;               /* the next offset to read */
    int64_t stop;               /* stop_at_end: the end at open */
    end *ends;                  /* in the order they ended, from head */
    size_t head, n, cap;
};

bool floe__kafka_tx_is(const floe_kafka *k, const char *name)
{
    return k->tx && strcmp(k->tx->name, name) == 0;
}

/* ---- where a table stands ---------------------------------------------------------------------- */

int floe__kafka_tx_resume(floe_kafka *k, topic *t, const json_t *rec, floe_error *err)
{
    const json_t *tx = json_object_get(rec, "transactions");
    FLOE_RETURN_IF(!tx, err, FLOE_ESTATE, "table %s was fed from topic %s without its "
                   "transactions (transaction_topic): its offsets need not fall between "
                   "transactions; feed it as before, or read the topic into another table "
                   "(--table or --table-map)", t->table, t->name);
    const char *name = json_string_value(json_object_get(tx, "topic"));
    const json_t *next = json_object_get(tx, "next");
    const json_t *partial = json_object_get(tx, "partial");
    const char *pid = json_string_value(json_object_get(partial, "id"));
    const json_t *pn = json_object_get(partial, "events");
    FLOE_RETURN_IF(!name || !json_is_integer(next) || json_integer_value(next) < 0 ||
                       (partial && (!pid || !json_is_integer(pn) || json_integer_value(pn) < 0)),
                   err, FLOE_EFORMAT, "table %s: the transactions of its %s record are "
                   "malformed", t->table, FLOE__KAFKA_OFFSETS_PROP);
    FLOE_RETURN_IF(strcmp(name, k->o.transaction_topic) != 0, err, FLOE_ESTATE, "table %s "
                   "was fed with the transactions of topic %s, not %s", t->table, name,
                   k->o.transaction_topic);
    t->tx_next = json_integer_value(next);
    floe__free(t->tx_partial);
    t->tx_partial = NULL;
    t->tx_partial_n = 0;
    if (partial) {
        t->tx_partial = floe__strdup(pid);
        t->tx_partial_n = (uint64_t)json_integer_value(pn);
        if (!t->tx_partial)
            return FLOE_OOM(err);
    }
    return FLOE_OK;
}

/* Where t stands after a commit of frontier f: the first transaction not
 * wholly in it (its END's offset) and how many of its events are. */
static int64_t stand(const topic *t, floe__frontier f, const char **partial, uint64_t *n)
{
    int64_t next = t->tx_next;
    *partial = t->tx_partial;
    *n = t->tx_partial_n;
    for (size_t i = 0; !f.empty && i < t->n_marks; i++) {
        const mark *m = &t->marks[i];
        if (m->b <= f.t) {
            next = m->end + 1;
            *partial = NULL;
            *n = 0;
        } else {
            /* being given when the sink cut a batch of its own (a schema
             * change): its events given so far are those before f */
            if (m->a < f.t && m->given) {
                next = m->end;
                *partial = m->id;
                *n = m->base + m->given;
            }
            break;
        }
    }
    return next;
}

int floe__kafka_tx_record(const topic *t, floe__frontier f, json_t *rec, floe_error *err)
{
    const char *partial;
    uint64_t n;
    int64_t next = stand(t, f, &partial, &n);
    json_t *tx = json_pack("{s:s, s:I}", "topic", t->k->o.transaction_topic, "next",
                           (json_int_t)next);
    if (tx && partial &&
        json_object_set_new(tx, "partial", json_pack("{s:s, s:I}", "id", partial, "events",
                                                     (json_int_t)n)) != 0) {
        json_decref(tx);
        tx = NULL;
    }
    if (!tx || json_object_set_new(rec, "transactions", tx) != 0)
        return FLOE_OOM(err);
    return FLOE_OK;
}

static void marks_clear(topic *t)
{
    for (size_t i = 0; i < t->n_marks; i++)
        floe__free(t->marks[i].id);
    t->n_marks = 0;
}

int floe__kafka_tx_committed(topic *t, floe_error *err)
{
    const char *partial;
    uint64_t n;
    int64_t next = stand(t, floe__frontier_at(t->committed_time), &partial, &n);
    char *p = partial ? floe__strdup(partial) : NULL;
    if (partial && !p)
        return FLOE_OOM(err);
    floe__free(t->tx_partial);
    t->tx_partial = p;
    t->tx_partial_n = n;
    t->tx_next = next;
    marks_clear(t);
    return FLOE_OK;
}

/* ---- opening ----------------------------------------------------------------------------------- */

int floe__kafka_tx_open(floe_kafka *k, floe_error *err)
{
    const char *name = k->o.transaction_topic;
    const char *dot = strrchr(name, '.');
    FLOE_RETURN_IF(!dot || dot == name, err, FLOE_EINVAL, "Kafka: transaction topic %s: "
                   "Debezium names it PREFIX.transaction, and its tables' topics "
                   "PREFIX.SCHEMA.TABLE", name);
    size_t prefix_len = (size_t)(dot - name);
    for (size_t i = 0; i < k->n_topics; i++) {
        const char *tn = k->topics[i]->name;
        FLOE_RETURN_IF(strcmp(tn, name) == 0, err, FLOE_EINVAL, "Kafka: transaction topic %s "
                       "is not a topic of change events (topics)", name);
        FLOE_RETURN_IF(strncmp(tn, name, prefix_len) != 0 || tn[prefix_len] != '.' ||
                           !tn[prefix_len + 1], err, FLOE_EINVAL,
                       "Kafka: topic %s is not one of transaction topic %s's (named %.*s.SCHEMA.TABLE)",
                       tn, name, (int)prefix_len, name);
    }
    int n_parts = 0;
    FLOE_FORWARD(floe__kafka_partition_count(k, name, &n_parts, err));
    FLOE_RETURN_IF(n_parts != 1, err, FLOE_EINVAL, "Kafka: transaction topic %s has %d "
                   "partitions; Debezium's has one (its order is the order transactions "
                   "ended)", name, n_parts);
    int64_t low = 0, high = 0;
    rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(k->rk, name, 0, &low, &high,
                                                             floe__kafka_timeout_ms(k));
    if (e)
        return floe__kafka_err(err, e, "Kafka offsets of %s", name);
    int64_t from = high;
    for (size_t i = 0; i < k->n_topics; i++) {
        topic *t = k->topics[i];
        if (t->tx_next < 0)                  /* a table without a record: from the start */
            t->tx_next = low;
        FLOE_RETURN_IF(t->tx_next > high, err, FLOE_ESTATE, "table %s has read transaction "
                       "topic %s up to offset %" PRId64 ", but it ends at %" PRId64 ": the "
                       "topic was deleted and created again", t->table, name, t->tx_next, high);
        FLOE_RETURN_IF(t->tx_next < low, err, FLOE_ESTATE, "table %s has read transaction "
                       "topic %s up to offset %" PRId64 ", but it now starts at %" PRId64
                       ": the ends of transactions it still needs were deleted (retention)",
                       t->table, name, t->tx_next, low);
        if (t->tx_next < from)
            from = t->tx_next;
    }
    struct floe__kafka_tx *tx = floe__calloc(1, sizeof *tx);
    if (!tx || !(tx->name = floe__strdup(name))) {
        floe__free(tx);
        return FLOE_OOM(err);
    }
    tx->prefix_len = prefix_len;
    tx->most = k->o.txn_memory ? k->o.txn_memory : DEFAULT_MEMORY;
    tx->next = from;
    tx->stop = high;
    k->tx = tx;
    return FLOE_OK;
}

int floe__kafka_tx_assign(floe_kafka *k, rd_kafka_topic_partition_list_t *l)
{
    rd_kafka_topic_partition_t *tp = rd_kafka_topic_partition_list_add(l, k->tx->name, 0);
    tp->offset = k->tx->next;
    return FLOE_OK;
}

bool floe__kafka_tx_at_end(const floe_kafka *k)
{
    return !k->tx || k->tx->next >= k->tx->stop;
}

/* ---- holding events ---------------------------------------------------------------------------- */

/* The part of a transaction id that names the transaction: Debezium's
 * PostgreSQL connector writes "TXID:LSN" with the LSN of each event (the
 * END's that of the commit), so the digits before the colon; any other
 * id whole. */
static size_t key_len(const char *id, size_t n)
{
    size_t i = 0;
    while (i < n && id[i] >= '0' && id[i] <= '9')
        i++;
    if (i == 0 || i + 1 >= n || id[i] != ':')
        return n;
    for (size_t j = i + 1; j < n; j++)
        if (id[j] < '0' || id[j] > '9')
            return n;
    return i;
}

static bool same(const char *a, size_t an, const char *b, size_t bn)
{
    return an == bn && memcmp(a, b, an) == 0;
}

static int grow(void **a, size_t *cap, size_t need, size_t size, floe_error *err)
{
    if (need <= *cap)
        return FLOE_OK;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    void *n = floe__realloc(*a, c * size);
    if (!n)
        return FLOE_OOM(err);
    *a = n;
    *cap = c;
    return FLOE_OK;
}

/* The queue's first live slot moved to 0 when half of it is spent. */
static void compact(part *p)
{
    if (p->q_head && p->q_head * 2 >= p->q_len) {
        memmove(p->queue, p->queue + p->q_head, (p->q_len - p->q_head) * sizeof *p->queue);
        p->q_len -= p->q_head;
        p->q_head = 0;
    }
    if (p->r_head && p->r_head * 2 >= p->r_len) {
        memmove(p->runs, p->runs + p->r_head, (p->r_len - p->r_head) * sizeof *p->runs);
        p->r_len -= p->r_head;
        p->r_head = 0;
    }
}

static int hold(part *p, rd_kafka_message_t *m, const char *id, size_t id_len, floe_error *err)
{
    FLOE_FORWARD(grow((void **)&p->queue, &p->q_cap, p->q_len + 1, sizeof *p->queue, err));
    run *last = p->r_len > p->r_head ? &p->runs[p->r_len - 1] : NULL;
    if (!last || (last->id == NULL) != (id == NULL) ||
        (id && !same(last->id, last->id_len, id, id_len))) {
        FLOE_FORWARD(grow((void **)&p->runs, &p->r_cap, p->r_len + 1, sizeof *p->runs, err));
        p->runs[p->r_len++] = (run){.id = id, .id_len = id_len, .n = 0};
        last = &p->runs[p->r_len - 1];
    }
    last->n++;
    p->queue[p->q_len++] = m;
    return FLOE_OK;
}

/* The head run of p given to the sink, message by message; those of a
 * transaction counted in m (the mark of the one being given). */
static int take_run(floe_kafka *k, topic *t, part *p, mark *m, floe_error *err)
{
    run *r = &p->runs[p->r_head];
    int rc = FLOE_OK;
    for (; r->n > 0; r->n--) {
        rd_kafka_message_t *msg = p->queue[p->q_head];
        k->tx->held -= msg->len + msg->key_len + HELD_OVERHEAD;
        if (rc == FLOE_OK)
            rc = floe__kafka_take(k, t, p, msg, err);
        if (rc == FLOE_OK && m && r->id)
            m->given++;
        rd_kafka_message_destroy(msg);
        p->q_head++;
    }
    p->r_head++;
    compact(p);
    return rc;
}

int floe__kafka_tx_event(floe_kafka *k, topic *t, part *p, rd_kafka_message_t *m, bool *kept,
                         floe_error *err)
{
    floe__dbz ev = {0};
    *kept = false;
    /* (a message that is not an event has no transaction: taking it says why) */
    if (m->payload && floe__dbz_parse(&t->values, m->payload, m->len, &ev, err) != FLOE_OK) {
        ev.txn = NULL;
        floe_error_clear(err);
    }
    if (p->r_head == p->r_len && !ev.txn)
        return floe__kafka_take(k, t, p, m, err);
    struct floe__kafka_tx *tx = k->tx;
    size_t bytes = m->len + m->key_len + HELD_OVERHEAD;
    FLOE_RETURN_IF(tx->held + bytes > tx->most, err, FLOE_ELIMIT, "topic %s partition %" PRId32
                   " offset %" PRId64 ": events held until their transactions are whole "
                   "take more than %zu bytes (txn_memory); raise it (--txn-memory), or read "
                   "without the transaction topic", t->name, m->partition, m->offset, tx->most);
    FLOE_FORWARD(hold(p, m, ev.txn, ev.txn ? key_len(ev.txn, ev.txn_len) : 0, err));
    tx->held += bytes;
    *kept = true;
    return FLOE_OK;
}

/* Runs without a transaction at the heads of the queues (a tombstone, a
 * snapshot's read) given away. */
static int take_free(floe_kafka *k, floe_error *err)
{
    for (size_t i = 0; i < k->n_topics; i++)
        for (size_t j = 0; j < k->topics[i]->n_parts; j++) {
            part *p = &k->topics[i]->parts[j];
            while (p->r_head < p->r_len && !p->runs[p->r_head].id)
                FLOE_FORWARD(take_run(k, k->topics[i], p, NULL, err));
        }
    return FLOE_OK;
}

/* Events of transaction e at the head of p (with the runs without a
 * transaction among them). */
static uint64_t at_head(const part *p, const end *e, size_t *runs)
{
    uint64_t n = 0;
    size_t r = p->r_head;
    for (; r < p->r_len; r++) {
        const run *x = &p->runs[r];
        if (x->id && !same(x->id, x->id_len, e->id, strlen(e->id)))
            break;
        if (x->id)
            n += x->n;
    }
    *runs = r - p->r_head;
    return n;
}

/* A mark for e in t, open (b = UINT64_MAX) while e's events are given. */
static int open_mark(topic *t, const end *e, floe_error *err)
{
    FLOE_FORWARD(grow((void **)&t->marks, &t->cap_marks, t->n_marks + 1, sizeof *t->marks, err));
    mark m = {.a = t->time, .b = UINT64_MAX, .end = e->offset};
    if (!(m.id = floe__strdup(e->id)))
        return FLOE_OOM(err);
    m.base = t->tx_partial && strcmp(t->tx_partial, e->id) == 0 ? t->tx_partial_n : 0;
    t->marks[t->n_marks++] = m;
    return FLOE_OK;
}

/* The open mark closed; one that holds nothing merges with the one before
 * when that holds nothing either. */
static void close_mark(topic *t)
{
    mark *m = &t->marks[t->n_marks - 1];
    m->b = t->time;
    mark *prev = t->n_marks > 1 ? m - 1 : NULL;
    if (m->a == m->b && prev && prev->a == prev->b && prev->b == m->a) {
        prev->end = m->end;
        floe__free(m->id);
        t->n_marks--;
    }
}

/* Every transaction at the head of the ends whose events are all read,
 * given to the sinks, in the order they ended. */
static int release(floe_kafka *k, floe_error *err)
{
    struct floe__kafka_tx *tx = k->tx;
    for (;;) {
        FLOE_FORWARD(take_free(k, err));
        if (tx->head == tx->n)
            return FLOE_OK;
        end *e = &tx->ends[tx->head];
        for (size_t i = 0; i < k->n_topics; i++) {
            uint64_t have = 0;
            size_t runs;
            for (size_t j = 0; j < k->topics[i]->n_parts; j++)
                have += at_head(&k->topics[i]->parts[j], e, &runs);
            if (have < e->expect[i])
                return FLOE_OK;                    /* not whole yet */
        }
        for (size_t i = 0; i < k->n_topics; i++) {
            topic *t = k->topics[i];
            FLOE_FORWARD(open_mark(t, e, err));
            for (size_t j = 0; j < t->n_parts; j++) {
                size_t runs = 0;
                at_head(&t->parts[j], e, &runs);
                while (runs--)
                    FLOE_FORWARD(take_run(k, t, &t->parts[j], &t->marks[t->n_marks - 1], err));
            }
            close_mark(t);
        }
        floe__free(e->id);
        floe__free(e->expect);
        if (++tx->head * 2 >= tx->n) {
            memmove(tx->ends, tx->ends + tx->head, (tx->n - tx->head) * sizeof *tx->ends);
            tx->n -= tx->head;
            tx->head = 0;
        }
    }
}

int floe__kafka_tx_release(floe_kafka *k, floe_error *err)
{
    return k->tx ? release(k, err) : FLOE_OK;
}

/* ---- the transaction topic's messages ------------------------------------------------------- */

/* An END message's counts, per topic of the run (0 for a table that holds
 * the transaction already). */
static int end_of(floe_kafka *k, const json_t *j, int64_t offset, end *e, floe_error *err)
{
    const char *id = json_string_value(json_object_get(j, "id"));
    const json_t *cols = json_object_get(j, "data_collections");
    FLOE_RETURN_IF(!id || !json_is_array(cols), err, FLOE_EINPUT, "an END without \"id\" or "
                   "\"data_collections\"");
    e->offset = offset;
    e->expect = floe__calloc(k->n_topics ? k->n_topics : 1, sizeof *e->expect);
    e->id = floe__strndup(id, key_len(id, strlen(id)));
    if (!e->expect || !e->id)
        return FLOE_OOM(err);
    size_t i;
    const json_t *c;
    json_array_foreach(cols, i, c) {
        const char *dc = json_string_value(json_object_get(c, "data_collection"));
        const json_t *n = json_object_get(c, "event_count");
        FLOE_RETURN_IF(!dc || !json_is_integer(n) || json_integer_value(n) < 0, err,
                       FLOE_EINPUT, "a data collection without \"data_collection\" or "
                       "\"event_count\"");
        for (size_t t = 0; t < k->n_topics; t++) {
            topic *tp = k->topics[t];
            if (strcmp(tp->name + k->tx->prefix_len + 1, dc) != 0 || offset < tp->tx_next)
                continue;
            uint64_t want = (uint64_t)json_integer_value(n), had = 0;
            if (tp->tx_partial && strcmp(tp->tx_partial, id) == 0)
                had = tp->tx_partial_n;
            FLOE_RETURN_IF(had > want, err, FLOE_ESTATE, "table %s records %" PRIu64 " events "
                           "of transaction %s, which has %" PRIu64 " in topic %s", tp->table,
                           had, id, want, tp->name);
            e->expect[t] = want - had;
        }
    }
    return FLOE_OK;
}

static int tx_message(floe_kafka *k, const rd_kafka_message_t *m, floe_error *err)
{
    if (!m->payload)
        return FLOE_OK;                          /* (a tombstone) */
    json_error_t je;
    json_t *j = json_loadb(m->payload, m->len, 0, &je);
    FLOE_RETURN_IF(!j, err, FLOE_EINPUT, "not JSON: %s", je.text);
    const json_t *body = json_object_get(j, "payload");  /* JsonConverter's schema and payload */
    if (!json_is_object(body))
        body = j;
    const char *status = json_string_value(json_object_get(body, "status"));
    int rc = FLOE_OK;
    if (!status) {
        rc = floe__err_set(err, FLOE_EINPUT, "not a Debezium transaction event (no "
                           "\"status\")");
    } else if (strcmp(status, "END") == 0) {
        struct floe__kafka_tx *tx = k->tx;
        rc = grow((void **)&tx->ends, &tx->cap, tx->n + 1, sizeof *tx->ends, err);
        if (rc == FLOE_OK) {
            end e = {0};
            rc = end_of(k, body, m->offset, &e, err);
            if (rc == FLOE_OK)
                tx->ends[tx->n++] = e;
            else {
                floe__free(e.id);
                floe__free(e.expect);
            }
        }
    }
    json_decref(j);
    return rc;
}

int floe__kafka_tx_message(floe_kafka *k, const rd_kafka_message_t *m, floe_error *err)
{
    if (m->offset < k->tx->next)
        return FLOE_OK;                        /* read before */
    int rc = tx_message(k, m, err);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "transaction topic %s offset %" PRId64, k->tx->name,
                              m->offset);
    k->tx->next = m->offset + 1;
    return FLOE_OK;
}

/* ---- freeing ------------------------------------------------------------------------------------ */

void floe__kafka_tx_free(floe_kafka *k)
{
    for (size_t i = 0; i < k->n_topics; i++) {
        topic *t = k->topics[i];
        for (size_t j = 0; j < t->n_parts; j++) {
            part *p = &t->parts[j];
            for (size_t q = p->q_head; q < p->q_len; q++)
                rd_kafka_message_destroy(p->queue[q]);
            floe__free(p->queue);
            floe__free(p->runs);
            p->queue = NULL;
            p->runs = NULL;
            p->q_head = p->q_len = p->r_head = p->r_len = 0;
        }
        marks_clear(t);
        floe__free(t->marks);
        floe__free(t->tx_partial);
        t->marks = NULL;
        t->tx_partial = NULL;
    }
    if (!k->tx)
        return;
    for (size_t i = k->tx->head; i < k->tx->n; i++) {
        floe__free(k->tx->ends[i].id);
        floe__free(k->tx->ends[i].expect);
    }
    floe__free(k->tx->ends);
    floe__free(k->tx->name);
    floe__free(k->tx);
    k->tx = NULL;
}
