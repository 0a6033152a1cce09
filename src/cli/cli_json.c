/*
 * cli_json.c - JSON in the program, through jansson (the library's JSON
 * parser too): writing a string value, and reading the members of the JSON
 * texts floe.h hands out (schemas, partition specs, debt).
 */
#include "cli/cli_internal.h"

void cli_json_string(FILE *f, const char *s)
{
    json_t *j = json_string(s);            /* NULL: not UTF-8 */
    if (!j || json_dumpf(j, f, JSON_ENCODE_ANY) != 0)
        fputs("null", f);
    json_decref(j);
}

const char *cli_json_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

const char *cli_json_text(const json_t *x, char *buf, size_t cap)
{
    if (!x)
        return NULL;
    if (json_is_string(x))
        return json_string_value(x);
    size_t n = json_dumpb(x, buf, cap - 1, JSON_ENCODE_ANY | JSON_COMPACT);
    if (n == 0 || n >= cap)
        return NULL;
    buf[n] = '\0';
    return buf;
}
