/*
 * options.c - the Kafka source's options' defaults: in every build,
 * WITH_KAFKA=0 too (no librdkafka here).
 */
#include "util/util_internal.h"

void floe_kafka_options_init(floe_kafka_options *o, size_t size)
{
    floe_kafka_options d = {.size = sizeof d, .stop_fd = -1};
    floe__abi_init(o, size, &d, sizeof d);
}
