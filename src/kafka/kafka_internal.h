/*
 * kafka_internal.h - the Kafka source's pieces shared between its files:
 * Debezium's change events (debezium.c) for the consumer (kafka.c).
 */
#ifndef FLOE_KAFKA_INTERNAL_H
#define FLOE_KAFKA_INTERNAL_H

#include <jansson.h>

#include "schema/schema_internal.h"
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

#endif /* FLOE_KAFKA_INTERNAL_H */
