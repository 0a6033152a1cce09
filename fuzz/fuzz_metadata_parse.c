/*
 * fuzz_metadata_parse.c - arbitrary bytes into the table-metadata parser.
 *
 * Whatever parses must: answer every accessor, serialize, parse back to an
 * equal document, pass a requirement naming its own uuid, and take a
 * property update (v2) whose result serializes and parses again.  Any
 * broken promise aborts, so the fuzzer reports it.
 */
#include <stdlib.h>

#include "iceberg/metadata_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void touch(const floe__metadata *md)
{
    size_t n = floe__metadata_snapshot_count(md);
    for (size_t i = 0; i < n; i++) {
        const floe__snapshot *s = floe__metadata_snapshot_at(md, i);
        if (floe__metadata_snapshot_by_id(md, s->snapshot_id) == NULL)
            abort();
        (void)floe__snapshot_summary_get(s, "operation");
    }
    for (size_t i = 0; i < floe__metadata_snapshot_log_count(md); i++)
        (void)floe__metadata_snapshot_log_at(md, i)->timestamp_ms;
    for (size_t i = 0; i < floe__metadata_metadata_log_count(md); i++)
        (void)floe__metadata_metadata_log_at(md, i)->metadata_file;
    if (!floe__metadata_current_schema(md) || !floe__metadata_default_spec(md))
        abort();
    int64_t id;
    if (floe__metadata_ref(md, "main", &id, NULL) && id != floe__metadata_current_snapshot_id(md))
        abort();
    char *loc = NULL;
    if (floe__metadata_data_location(md, &loc, NULL) == FLOE_OK)
        floe__free(loc);
    if (floe__metadata_new_file_location(md, "x/metadata/00001-a.metadata.json", &loc, NULL) ==
        FLOE_OK)
        floe__free(loc);
}

/* Serialize and parse again: the document must come back equal. */
static void roundtrip(const floe__metadata *md)
{
    char *text = NULL;
    if (floe__metadata_to_json(md, &text, NULL) != FLOE_OK)
        return;                                 /* out of memory only */
    floe__metadata *again = NULL;
    if (floe__metadata_parse(text, strlen(text), &again, NULL) != FLOE_OK)
        abort();
    if (!json_equal((json_t *)floe__metadata_json(md), (json_t *)floe__metadata_json(again)))
        abort();
    floe__metadata_free(again);
    floe__free(text);
}

static void update(const floe__metadata *md)
{
    const char *uuid = floe__metadata_table_uuid(md);
    if (uuid) {
        json_t *req = json_pack("[{s:s, s:s}]", "type", "assert-table-uuid", "uuid", uuid);
        if (floe__metadata_check(md, req, NULL) != FLOE_OK)
            abort();
        json_decref(req);
    }
    json_t *ups = json_pack("[{s:s, s:{s:s}}]", "action", "set-properties", "updates",
                            "fuzz", "1");
    floe__metadata *next = NULL;
    int rc = floe__metadata_apply(md, "x/metadata/00001-a.metadata.json", ups, 1, &next, NULL,
                                  NULL);
    json_decref(ups);
    if (floe__metadata_format_version(md) >= 2 && rc != FLOE_OK)
        abort();
    if (rc == FLOE_OK) {
        if (strcmp(floe__metadata_property(next, "fuzz"), "1") != 0)
            abort();
        roundtrip(next);
    }
    floe__metadata_free(next);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    floe__metadata *md = NULL;
    if (floe__metadata_parse(data, size, &md, NULL) != FLOE_OK)
        return 0;
    touch(md);
    roundtrip(md);
    update(md);
    floe__metadata_free(md);
    return 0;
}
