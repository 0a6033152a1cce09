/*
 * fuzz_schema_parse.c - arbitrary text -> floe_schema_parse.  A schema that
 * parses must serialise to Iceberg JSON, read back from it to the same JSON,
 * copy to the same JSON, and name every column's type; a failure must be
 * FLOE_ESCHEMA (or ENOMEM) with a message.
 */
#include <stdlib.h>

#include "schema/schema_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_schema(const floe_schema *s)
{
    char *j = NULL;
    if (floe_schema_to_json(s, &j, NULL) != FLOE_OK)
        __builtin_trap();
    floe__schema *back = NULL, *copy = NULL;
    if (floe__schema_from_json(j, strlen(j), &back, NULL) != FLOE_OK ||
        floe__schema_copy(s, &copy, NULL) != FLOE_OK)
        __builtin_trap();
    char *j2 = NULL, *j3 = NULL;
    if (floe_schema_to_json(back, &j2, NULL) != FLOE_OK ||
        floe_schema_to_json(copy, &j3, NULL) != FLOE_OK || strcmp(j, j2) != 0 ||
        strcmp(j, j3) != 0 || back->highest_id != s->highest_id)
        __builtin_trap();
    for (uint32_t i = 0; i < s->root.n_children; i++) {
        char name[32];
        const floe__field *f = &s->root.children[i];
        size_t need = floe__type_name(f, true, name, sizeof name);
        if (strlen(name) != (need < sizeof name ? need : sizeof name - 1))
            __builtin_trap();
        if (floe__schema_find_id(s, f->id) != f)
            __builtin_trap();
    }
    floe_free(j);
    floe_free(j2);
    floe_free(j3);
    floe_schema_free(back);
    floe_schema_free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    floe_error *e = floe_error_new();
    floe_schema *s = NULL;
    int rc = floe_schema_parse(text, &s, e);
    if (rc == FLOE_OK) {
        check_schema(s);
        floe_schema_free(s);
    } else if ((rc != FLOE_ESCHEMA && rc != FLOE_ENOMEM && rc != FLOE_ELIMIT) ||
               !*floe_error_message(e) || s != NULL) {
        __builtin_trap();
    }
    floe_error_free(e);
    free(text);
    return 0;
}
