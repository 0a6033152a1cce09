/*
 * kafka_internal.h - the Kafka source's pieces shared between its files:
 * Debezium's change events (debezium.c), and the consumer's state
 * (kafka.c) that its group membership (group.c), dead-letter topic
 * (dead_letter.c) and Debezium's transactions (transactions.c) work on.
 */
#ifndef FLOE_KAFKA_INTERNAL_H
#define FLOE_KAFKA_INTERNAL_H

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <regex.h>
#include <stdatomic.h>

#include "schema/schema_internal.h"
#include "sink/sink_internal.h"
#include "util/util_internal.h"

/* The embedded schema parsed last, kept while the next event carries the
 * same bytes (one per topic for events, one for keys). */
typedef struct floe__dbz_cache {
    uint64_t hash;
    size_t len;
    json_t *schema;
} floe__dbz_cache;
void floe__dbz_cache_free(floe__dbz_cache *c);

/* One Debezium change event.  before/after: the row objects' bytes in the
 * message (NULL when absent or null); *_fields: the embedded schema's
 * fields of each (NULL without one), owned by the cache. */
typedef struct floe__dbz {
    char op;                        /* c, r, u, d, t (truncate), m (message) */
    const char *before, *after;
    size_t before_len, after_len;
    const json_t *before_fields, *after_fields;
    const char *txn;                /* transaction.id's bytes, or NULL */
    size_t txn_len;
} floe__dbz;

/* Scan a message value: the envelope, bare or inside JsonConverter's
 * {"schema", "payload"}.  FLOE_EINPUT saying why when it is not one. */
int floe__dbz_parse(floe__dbz_cache *c, const char *value, size_t n, floe__dbz *out,
                    floe_error *err);
/* Row object row[0..n) (with its schema's `fields`, or NULL) as floe's JSON
 * row text for schema s, into out; values rewritten by their Debezium
 * logical types (see debezium.c), the others copied.  A column s does not
 * have is FLOE_EINPUT naming it.  scratch: the caller's, for decoding. */
int floe__dbz_row(const floe_schema *s, const char *row, size_t n, const json_t *fields,
                  floe__buf *scratch, floe__buf *out, floe_error *err);
/* A message key (the key columns' object, bare or inside {"schema",
 * "payload"}) the same way. */
int floe__dbz_key(const floe_schema *s, floe__dbz_cache *c, const char *key, size_t n,
                  floe__buf *scratch, floe__buf *out, floe_error *err);
/* The key column names "a,b" that a message key's embedded schema
 * declares, into out (NUL-terminated); FLOE_EINPUT when it has none. */
int floe__dbz_key_columns(floe__dbz_cache *c, const char *key, size_t n, floe__buf *out,
                          floe_error *err);
/* The column list (SPEC 3) that a row schema's fields declare, into out
 * (NUL-terminated); FLOE_EUNSUPPORTED for a field type floe does not map. */
int floe__dbz_columns(const json_t *fields, floe__buf *out, floe_error *err);
/* Whether `fields` name a column s does not have. */
bool floe__dbz_new_columns(const json_t *fields, const floe_schema *s);


/* ---- the consumer (kafka.c), its group membership (group.c) and its
 * dead-letter topic (dead_letter.c) ---------------------------------------- */

#define FLOE__KAFKA_OFFSETS_PROP "floe.kafka.offsets"
#define FLOE__KAFKA_COMMIT_MS 10000u     /* commit_interval_ms's default */
#define FLOE__KAFKA_POLL_MS 100

/* changes: a message read whose change is not committed yet (its time is
 * at or past the table's frontier). */
typedef struct floe__kafka_held {
    int64_t offset;
    uint64_t time;
} floe__kafka_held;

/* transaction_topic: consecutive messages of a partition held for one
 * transaction (id: bytes in the messages; NULL: of none). */
typedef struct floe__kafka_run {
    const char *id;
    size_t id_len;
    uint64_t n;
} floe__kafka_run;

/* transaction_topic: the events of the transaction whose END is at offset
 * `end` are times [a, b) of a topic's table (b UINT64_MAX while they are
 * being given: `given` of them so far; base: those a table held already). */
typedef struct floe__kafka_mark {
    uint64_t a, b;
    int64_t end;
    char *id;
    uint64_t base, given;
} floe__kafka_mark;

typedef struct floe__kafka_part {
    int32_t id;
    int64_t next;                 /* the next offset to read */
    int64_t stop;                 /* stop_at_end: the end at open */
    /* changes: the partition's progress (its frontier), whether it closed,
     * and its messages past the table's frontier, in offset order */
    uint64_t progress;
    bool closed;
    floe__kafka_held *held;
    size_t n_held, cap_held;
    /* a member of a group reads only the partitions it is assigned */
    bool owned;
    bool taking;                  /* being assigned: recorded_offsets sets it up */
    bool unrecorded;              /* owned, and the table recorded no offset for it */
    /* transaction_topic: messages read (below next) and held until their
     * transactions are whole, queue[q_head..q_len), in runs */
    rd_kafka_message_t **queue;
    size_t q_head, q_len, q_cap;
    floe__kafka_run *runs;
    size_t r_head, r_len, r_cap;
    /* read by floe_kafka_metrics from other threads: */
    _Atomic int64_t end;          /* the partition's end when last looked at */
    _Atomic int64_t committed;    /* the next offset the table records */
} floe__kafka_part;

typedef struct floe__kafka_topic {
    floe_kafka *k;
    char *name, *table, *sink_id;
    floe_sink *sink;
    floe_row *row, *keyrow;
    floe__kafka_part *parts;
    size_t n_parts;
    uint64_t time;                /* the time of the next message (not changes) */
    uint64_t committed_time;      /* the frontier committed */
    bool complete;                /* changes: every partition closed, the table's input too */
    char *key_col;                /* the single key column, for bare keys; NULL: several */
    char *declared;               /* kafka_columns: the schema with them */
    char *key;                    /* the key columns, "a,b" (upsert, debezium, changes) */
    bool pending;                 /* debezium: the table is made from the first event */
    bool maintains;               /* a member: it holds the table's maintenance lease */
    floe__dbz_cache values, keys; /* debezium: the embedded schemas parsed last */
    /* transaction_topic: the offset from which the table needs the
     * transaction topic's ENDs (-1: no record): past the last transaction
     * it holds whole, or the END of tx_partial, of which it holds
     * tx_partial_n events; and marks of those given since the last commit */
    int64_t tx_next;
    char *tx_partial;
    uint64_t tx_partial_n;
    floe__kafka_mark *marks;
    size_t n_marks, cap_marks;
} floe__kafka_topic;

struct floe_kafka {
    floe_kafka_options o;         /* o.sink points to `sink` */
    floe_sink_options sink;       /* its strings and connect options in `strings` */
    floe__arena *strings;
    floe_catalog *catalog;        /* to look at tables before their sinks open */
    rd_kafka_t *rk;
    rd_kafka_queue_t *queue;
    rd_kafka_t *dlq;              /* FLOE_KAFKA_BAD_DEAD_LETTER's producer */
    uint64_t dlq_sent;            /* copies produced and not yet acknowledged */
    char *dlq_failed;             /* the first copy the brokers refused, why */
    char *cluster;
    floe__kafka_topic **topics;
    size_t n_topics, cap_topics;
    struct floe__kafka_tx *tx;    /* transaction_topic (transactions.c) */
    regex_t pattern;              /* topic_pattern, compiled */
    bool has_pattern;
    uint64_t last_refresh_ns;
    atomic_bool stop;
    bool member;                  /* o.member: partitions come from the group */
    bool closing;                 /* floe_kafka_free: revocations commit nothing */
    int cb_rc;                    /* the first failure inside a rebalance callback */
    floe_error *run_err;          /* floe_kafka_run's, for the callback to fill */
    uint64_t last_commit_ns;
    int last_transient;           /* a transient error said once, until a message comes */
    floe__buf text, key;
    floe__buf row, scratch;       /* a Debezium row rewritten, and decoding room */
    _Atomic uint64_t messages, bytes, bad, tombstones, truncates, evolved, snapshots, lag;
};

/* A Kafka error as a floe error (its class: network, not found, auth). */
int floe__kafka_err(floe_error *err, rd_kafka_resp_err_t e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int floe__kafka_timeout_ms(const floe_kafka *k);
int floe__kafka_conf_set(rd_kafka_conf_t *c, const char *key, const char *value,
                         floe_error *err);
void floe__kafka_on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf);
/* A client of the brokers from c (taken: destroyed on failure) with floe's
 * log callback and k as opaque: the brokers, the caller's properties (a
 * producer leaves out the consumer's), then `fixed` ({"k", "v", ..., NULL};
 * a NULL key ends it early), which no property overrides. */
int floe__kafka_client(floe_kafka *k, rd_kafka_conf_t *c, rd_kafka_type_t type,
                       const char *const *fixed, rd_kafka_t **out, floe_error *err);
/* The partition's end (p->end) and, when low is not NULL, its start. */
int floe__kafka_watermarks(floe_kafka *k, const floe__kafka_topic *t, floe__kafka_part *p,
                           int64_t *low, floe_error *err);
/* The partitions being taken (p->taking) set up at the offsets record j
 * names (text: how to name it in errors), or refused (kafka.c). */
int floe__kafka_recorded_offsets(floe_kafka *k, floe__kafka_topic *t, const json_t *j,
                                 const char *text, floe_error *err);
/* Every table with messages read commits them. */
int floe__kafka_commit_all(floe_kafka *k, floe_error *err);
/* The topic and partition of a message; NULL when not read here. */
floe__kafka_topic *floe__kafka_topic_of(floe_kafka *k, const char *name, int32_t partition,
                                        floe__kafka_part **p);

/* Where a partition's reading resumes when every message given to its
 * table is committed: its first held message, or the next to read. */
static inline int64_t floe__kafka_resume_at(const floe__kafka_part *p)
{
    return p->q_head < p->q_len ? p->queue[p->q_head]->offset : p->next;
}
/* A message of topic t's partition p given to its table (a bad one as
 * on_bad_message says), taking the table's next time. */
int floe__kafka_take(floe_kafka *k, floe__kafka_topic *t, floe__kafka_part *p,
                     const rd_kafka_message_t *m, floe_error *err);
/* The number of partitions of topic `name` (FLOE_ENOTFOUND: no such topic). */
int floe__kafka_partition_count(floe_kafka *k, const char *name, int *n, floe_error *err);

/* transactions.c: Debezium's transaction topic */
/* After the tables are open (their records read by tx_resume): the
 * transaction topic checked and read from the earliest table's stand. */
int floe__kafka_tx_open(floe_kafka *k, floe_error *err);
void floe__kafka_tx_free(floe_kafka *k);
/* Table t's stand in the transaction topic, from its offsets record. */
int floe__kafka_tx_resume(floe_kafka *k, floe__kafka_topic *t, const json_t *rec,
                          floe_error *err);
bool floe__kafka_tx_is(const floe_kafka *k, const char *name);
int floe__kafka_tx_assign(floe_kafka *k, rd_kafka_topic_partition_list_t *l);
bool floe__kafka_tx_at_end(const floe_kafka *k);
/* A message of the transaction topic. */
int floe__kafka_tx_message(floe_kafka *k, const rd_kafka_message_t *m, floe_error *err);
/* A change event of t's partition p: given to the table at once (no
 * transaction, nothing held before it) or held (*kept: m is the
 * queue's now). */
int floe__kafka_tx_event(floe_kafka *k, floe__kafka_topic *t, floe__kafka_part *p,
                         rd_kafka_message_t *m, bool *kept, floe_error *err);
/* The whole transactions, in the order they ended, given to the tables. */
int floe__kafka_tx_release(floe_kafka *k, floe_error *err);
/* "transactions" of the offsets record of a commit of frontier f. */
int floe__kafka_tx_record(const floe__kafka_topic *t, floe__frontier f, json_t *rec,
                          floe_error *err);
/* After t's commit of its committed_time: its stand moves there. */
int floe__kafka_tx_committed(floe__kafka_topic *t, floe_error *err);

/* group.c */
void floe__kafka_on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t e,
                              rd_kafka_topic_partition_list_t *l, void *opaque);
int floe__kafka_subscribe(floe_kafka *k, floe_error *err);
/* A member's part of a commit of t's table on `base`: refused
 * (FLOE_EFENCED) when the table records, for a partition it reads, another
 * offset than the one it started at; the maintenance lease taken or
 * carried on in `summary`; *rec (the caller's): the table's last record,
 * whose partitions the commit's record writes over. */
int floe__kafka_member_commit(floe__kafka_topic *t, const floe__metadata *base,
                              json_t *summary, json_t **rec, floe_error *err);

/* dead_letter.c */
int floe__kafka_dlq_open(floe_kafka *k, floe_error *err);
int floe__kafka_dlq_copy(floe_kafka *k, const rd_kafka_message_t *m, const char *why,
                         floe_error *err);
int floe__kafka_dlq_flush(floe_kafka *k, floe_error *err);

#endif /* FLOE_KAFKA_INTERNAL_H */
