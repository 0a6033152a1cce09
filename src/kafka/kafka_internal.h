/*
 * kafka_internal.h - the Kafka source's pieces shared between its files:
 * Debezium's change events (debezium.c) for the consumer (kafka.c).
 */
#ifndef FLOE_KAFKA_INTERNAL_H
#define FLOE_KAFKA_INTERNAL_H

#include <jansson.h>

#include "schema/schema_internal.h"
#include "util/util_internal.h"

/* One Debezium change event.  before/after: the row objects (NULL when
 * absent or null); *_fields: the embedded schema's fields of each (NULL
 * without an embedded schema).  All borrowed from root. */
typedef struct floe__dbz {
    json_t *root;
    char op;                        /* c, r, u, d, t (truncate), m (message) */
    json_t *before, *after;
    json_t *before_fields, *after_fields;
} floe__dbz;

/* Parse a message value: the envelope, bare or inside JsonConverter's
 * {"schema", "payload"}.  FLOE_EINPUT saying why when it is not one.
 * Release with floe__dbz_clear (also after a failure). */
int floe__dbz_parse(const char *value, size_t n, floe__dbz *out, floe_error *err);
void floe__dbz_clear(floe__dbz *m);
/* Row object `row` (with its schema's `fields`, or NULL) as floe's JSON row
 * text for schema s, into out; values rewritten by their Debezium logical
 * types (see debezium.c).  A column s does not have is FLOE_EINPUT naming
 * it.  scratch: the caller's, for decoding. */
int floe__dbz_row(const floe_schema *s, json_t *row, const json_t *fields, floe__buf *scratch,
                  floe__buf *out, floe_error *err);
/* A message key (the key columns' object, bare or inside {"schema",
 * "payload"}) the same way. */
int floe__dbz_key(const floe_schema *s, const char *key, size_t n, floe__buf *scratch,
                  floe__buf *out, floe_error *err);
/* The column list (SPEC 3) that a row schema's fields declare, into out
 * (NUL-terminated); FLOE_EUNSUPPORTED for a field type floe does not map. */
int floe__dbz_columns(const json_t *fields, floe__buf *out, floe_error *err);
/* Whether `fields` name a column s does not have. */
bool floe__dbz_new_columns(const json_t *fields, const floe_schema *s);

#endif /* FLOE_KAFKA_INTERNAL_H */
