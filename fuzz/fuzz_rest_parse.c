/*
 * fuzz_rest_parse.c - arbitrary bytes as a REST catalog's reply: a
 * LoadTableResult / CommitTableResponse, a ConfigResponse, a namespace list
 * page, a table list page, and an HTTP error body (ErrorModel).  Nothing may
 * crash or leak; whatever parses must keep its promises (a loaded table has
 * metadata, a location string and a config object or none; config values
 * are strings; list entries are strings), else abort() so the fuzzer
 * reports it.
 */
#include <stdlib.h>

#include "catalog/rest_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void table(const uint8_t *data, size_t size)
{
    floe__loaded_table *t = NULL;
    if (floe__rest_parse_table(data, size, &t, NULL) != FLOE_OK)
        return;
    if (!t->metadata || !t->metadata_location || (t->config && !json_is_object(t->config)))
        abort();
    const char *k;
    json_t *v;
    json_object_foreach(t->config, k, v) {
        if (!json_is_string(v))
            abort();
    }
    floe__loaded_table_free(t);
}

static void config(const uint8_t *data, size_t size)
{
    json_t *client = json_pack("{s:s}", "warehouse", "w");
    json_t *out = NULL;
    if (floe__rest_parse_config(data, size, client, &out, NULL) == FLOE_OK) {
        const char *k;
        json_t *v;
        json_object_foreach(out, k, v) {
            if (!json_is_string(v))
                abort();
        }
        if (!json_object_get(out, "warehouse"))
            abort();
        json_decref(out);
    }
    json_decref(client);
}

static void pages(const uint8_t *data, size_t size)
{
    for (int tables = 0; tables < 2; tables++) {
        json_t *names = json_array();
        char *next = NULL;
        if (floe__rest_parse_page(data, size, tables, names, &next, NULL) == FLOE_OK) {
            size_t i;
            json_t *e;
            json_array_foreach(names, i, e) {
                if (!json_is_string(e) || !*json_string_value(e))
                    abort();
            }
            if (next && !*next)
                abort();
        }
        floe__free(next);
        json_decref(names);
    }
}

static void error_body(const uint8_t *data, size_t size)
{
    floe__buf b = {.data = (uint8_t *)data, .len = size, .cap = size, .max = size};
    floe_error *err = floe_error_new();
    if (!err)
        return;
    int code = floe__rest_error(err, "POST", "http://h/v1/x", 400 + (long)(size % 200), &b,
                                FLOE_REST_COMMIT);
    if (code != floe_error_code(err) || code == FLOE_OK)
        abort();
    (void)floe_error_message(err);
    floe_error_free(err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    table(data, size);
    config(data, size);
    pages(data, size);
    error_body(data, size);
    return 0;
}
