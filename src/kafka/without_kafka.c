/*
 * without_kafka.c - the Kafka source in a library built without it (make
 * WITH_KAFKA=0: no librdkafka linked).  Every other function of floe.h's
 * Kafka part is here, so the library exports the same symbols whatever the
 * build (docs/api.md); each refuses with FLOE_EUNSUPPORTED, saying why.  It
 * takes the place of the other files of src/kafka/ but options.c
 * (Makefile).
 */
#include "util/util_internal.h"

#define WITHOUT "this libfloe was built without the Kafka source (make WITH_KAFKA=0)"

static int refuse(floe_error *err) { return floe__err_set(err, FLOE_EUNSUPPORTED, WITHOUT); }

int floe_kafka_open(const floe_kafka_options *opts, floe_kafka **out, floe_error *err)
{
    (void)opts;
    if (out)
        *out = NULL;
    return refuse(err);
}

/* No floe_kafka is ever made: these are never reached with one. */
int floe_kafka_run(floe_kafka *k, floe_error *err)
{
    (void)k;
    return refuse(err);
}

void floe_kafka_stop(floe_kafka *k) { (void)k; }

void floe_kafka_free(floe_kafka *k) { (void)k; }

void floe_kafka_stats_get(const floe_kafka *k, floe_kafka_stats *out, size_t size)
{
    (void)k;
    floe_kafka_stats none = {.size = sizeof none};
    floe__abi_out(out, size, &none, sizeof none);
}

int floe_kafka_metrics(const floe_kafka *k, char **out, floe_error *err)
{
    (void)k, (void)out;
    return refuse(err);
}

floe_sink *floe_kafka_sink(floe_kafka *k, size_t i)
{
    (void)k, (void)i;
    return NULL;
}

const char *floe_kafka_topic(const floe_kafka *k, size_t i)
{
    (void)k, (void)i;
    return NULL;
}

const char *floe_kafka_table(const floe_kafka *k, size_t i)
{
    (void)k, (void)i;
    return NULL;
}
