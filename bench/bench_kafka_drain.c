/*
 * bench_kafka_drain.c - the Kafka client's own limit, for bench/bench_kafka.py:
 * librdkafka (the library floe links) consumes every partition of one topic
 * from its start to the end it had when the program started, touching each
 * message's bytes and keeping nothing.  Prints the messages and bytes read.
 *
 *   bench_kafka_drain BROKERS TOPIC
 */
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s BROKERS TOPIC\n", argv[0]);
        return 2;
    }
    char why[512];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    if (rd_kafka_conf_set(c, "bootstrap.servers", argv[1], why, sizeof why) ||
        rd_kafka_conf_set(c, "group.id", "drain", why, sizeof why) ||
        rd_kafka_conf_set(c, "enable.auto.commit", "false", why, sizeof why)) {
        fprintf(stderr, "%s\n", why);
        return 1;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, why, sizeof why);
    if (!rk) {
        fprintf(stderr, "%s\n", why);
        return 1;
    }
    rd_kafka_poll_set_consumer(rk);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, argv[2], NULL);
    if (rd_kafka_metadata(rk, 0, t, &md, 30000) || md->topic_cnt != 1) {
        fprintf(stderr, "no metadata for %s\n", argv[2]);
        return 1;
    }
    int n = md->topics[0].partition_cnt;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n);
    int64_t *end = calloc((size_t)n, sizeof *end), want = 0;
    for (int p = 0; p < n; p++) {
        int64_t lo, hi;
        rd_kafka_query_watermark_offsets(rk, argv[2], md->topics[0].partitions[p].id, &lo, &hi,
                                         30000);
        end[p] = hi;
        want += hi - lo;
        rd_kafka_topic_partition_list_add(l, argv[2], md->topics[0].partitions[p].id)->offset = lo;
    }
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(t);
    rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
    rd_kafka_message_t *msgs[1024];
    int64_t got = 0;
    uint64_t bytes = 0, sum = 0;
    while (got < want) {
        ssize_t k = rd_kafka_consume_batch_queue(q, 1000, msgs, 1024);
        for (ssize_t i = 0; i < k; i++) {
            if (!msgs[i]->err) {
                got++;
                bytes += msgs[i]->len + msgs[i]->key_len;
                if (msgs[i]->len)                  /* touch the bytes, as a reader would */
                    sum += ((const unsigned char *)msgs[i]->payload)[msgs[i]->len - 1];
            }
            rd_kafka_message_destroy(msgs[i]);
        }
    }
    printf("%" PRId64 " messages, %" PRIu64 " bytes (%" PRIu64 ")\n", got, bytes, sum);
    rd_kafka_queue_destroy(q);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    free(end);
    return 0;
}
