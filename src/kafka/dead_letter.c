/*
 * dead_letter.c - on_bad_message FLOE_KAFKA_BAD_DEAD_LETTER: an idempotent
 * producer copies each message that does not parse, with headers saying
 * where it came from and why, to the dead-letter topic; every copy is
 * acknowledged before a commit records offsets past its message.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kafka/kafka_internal.h"

/* ---- the dead-letter topic ------------------------------------------------------------------ */

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    floe_kafka *k = opaque;
    if (m->err && !k->dlq_failed)
        k->dlq_failed = floe__sprintf("%s", rd_kafka_err2str(m->err));
}

/* An idempotent producer to the same brokers (the same properties: the
 * same security), and the topic checked to exist. */
int floe__kafka_dlq_open(floe_kafka *k, floe_error *err)
{
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    if (!c)
        return FLOE_OOM(err);
    rd_kafka_conf_set_dr_msg_cb(c, on_delivery);
    static const char *const fixed[] = {"enable.idempotence", "true", "linger.ms", "5", NULL};
    int rc = floe__kafka_client(k, c, RD_KAFKA_PRODUCER, fixed, &k->dlq, err);
    if (rc != FLOE_OK)
        return floe__err_wrap(err, rc, "the dead-letter topic");
    const char *name = k->o.dead_letter_topic;
    rd_kafka_topic_t *h = rd_kafka_topic_new(k->dlq, name, NULL);
    if (!h)
        return floe__kafka_err(err, rd_kafka_last_error(), "Kafka topic %s", name);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(k->dlq, 0, h, &md, floe__kafka_timeout_ms(k));
    if (e)
        rc = floe__kafka_err(err, e, "Kafka metadata of the dead-letter topic %s", name);
    else if (md->topic_cnt != 1 || md->topics[0].err || !md->topics[0].partition_cnt)
        rc = floe__err_set(err, FLOE_ENOTFOUND, "the dead-letter topic %s does not exist (the "
                           "brokers %s): create it first", name, k->o.brokers);
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(h);
    return rc;
}

static int header(rd_kafka_headers_t *h, const char *name, const char *value)
{
    return rd_kafka_header_add(h, name, -1, value, -1) ? -1 : 0;
}

/* A copy of message m (key, value, headers) with floe's headers saying
 * where it came from and why it did not parse, on its way to the
 * dead-letter topic; acknowledged before any commit passes it
 * (dead_letter_flush). */
int floe__kafka_dlq_copy(floe_kafka *k, const rd_kafka_message_t *m, const char *why,
                         floe_error *err)
{
    rd_kafka_headers_t *had = NULL, *h;
    if (rd_kafka_message_headers(m, &had) == RD_KAFKA_RESP_ERR_NO_ERROR && had)
        h = rd_kafka_headers_copy(had);
    else
        h = rd_kafka_headers_new(4);
    if (!h)
        return FLOE_OOM(err);
    char pid[16], off[24];
    snprintf(pid, sizeof pid, "%" PRId32, m->partition);
    snprintf(off, sizeof off, "%" PRId64, m->offset);
    if (header(h, "floe.topic", rd_kafka_topic_name(m->rkt)) || header(h, "floe.partition", pid) ||
        header(h, "floe.offset", off) || header(h, "floe.error", why)) {
        rd_kafka_headers_destroy(h);
        return FLOE_OOM(err);
    }
    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_producev(
            k->dlq, RD_KAFKA_V_TOPIC(k->o.dead_letter_topic),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(m->key, m->key_len),
            RD_KAFKA_V_VALUE(m->payload, m->len), RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
            break;
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            rd_kafka_headers_destroy(h);
            return floe__kafka_err(err, e, "Kafka: the dead-letter topic %s",
                                   k->o.dead_letter_topic);
        }
        rd_kafka_poll(k->dlq, FLOE__KAFKA_POLL_MS);   /* room comes as deliveries land */
    }
    k->dlq_sent++;
    rd_kafka_poll(k->dlq, 0);
    return FLOE_OK;
}

/* Every copy produced is acknowledged by the brokers (before a commit
 * records offsets past its message). */
int floe__kafka_dlq_flush(floe_kafka *k, floe_error *err)
{
    if (!k->dlq || !k->dlq_sent)
        return FLOE_OK;
    rd_kafka_resp_err_t e = rd_kafka_flush(k->dlq, floe__kafka_timeout_ms(k));
    FLOE_RETURN_IF(k->dlq_failed, err, FLOE_ENET, "Kafka: a copy to the dead-letter topic %s "
                   "was refused: %s", k->o.dead_letter_topic, k->dlq_failed);
    if (e)
        return floe__kafka_err(err, e, "Kafka: copies to the dead-letter topic %s not "
                               "acknowledged within %d ms", k->o.dead_letter_topic,
                               floe__kafka_timeout_ms(k));
    k->dlq_sent = 0;
    return FLOE_OK;
}
