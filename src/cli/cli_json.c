/*
 * cli_json.c - a small JSON reader for the program: it parses the JSON
 * texts floe.h hands out (the Iceberg schema of floe_schema_to_json) into a
 * tree, so `floe inspect` can show them to people.  Not for input data (the
 * library parses NDJSON itself).  Strings are unescaped to UTF-8; numbers
 * keep their text.  Depth is bounded.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"

#define MAX_DEPTH 64

typedef struct parser {
    const char *p;
    int depth;
} parser;

static void skip_ws(parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
        ps->p++;
}

static bool parse_value(parser *ps, cli_json *out);

static int hex4(const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* One escape after the backslash at *pp; the bytes go to o.  0 when bad. */
static size_t unescape(const char **pp, char *o)
{
    const char *p = *pp;
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *e = *p ? strchr(from, *p) : NULL;
    if (e) {
        *o = to[e - from];
        *pp = p + 1;
        return 1;
    }
    if (*p != 'u')
        return 0;
    int cp = hex4(p + 1);
    if (cp < 0)
        return 0;
    p += 5;
    if (cp >= 0xD800 && cp < 0xDC00 && p[0] == '\\' && p[1] == 'u') {
        int lo = hex4(p + 2);
        if (lo >= 0xDC00 && lo < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
        }
    }
    *pp = p;
    return put_utf8(o, (unsigned)cp);
}

static char *parse_string(parser *ps)
{
    const char *p = ps->p + 1;               /* after the quote */
    size_t cap = strcspn(p, "\"") * 2 + 8;   /* escapes never grow the text more */
    char *out = malloc(cap), *o = out;
    if (!out)
        return NULL;
    while (*p && *p != '"') {
        if ((size_t)(o - out) + 4 >= cap) {
            size_t used = (size_t)(o - out);
            char *bigger = realloc(out, cap * 2);
            if (!bigger)
                break;
            out = bigger;
            o = out + used;
            cap *= 2;
        }
        if (*p == '\\') {
            p++;
            size_t n = unescape(&p, o);
            if (n == 0)
                break;
            o += n;
        } else if ((unsigned char)*p < 0x20) {
            break;
        } else {
            *o++ = *p++;
        }
    }
    if (*p != '"') {
        free(out);
        return NULL;
    }
    *o = '\0';
    ps->p = p + 1;
    return out;
}

static bool parse_number(parser *ps, cli_json *out)
{
    const char *s = ps->p;
    size_t n = strspn(s, "-+0123456789.eE");
    if (n == 0)
        return false;
    out->type = CLI_JSON_NUMBER;
    out->text = strndup(s, n);
    ps->p += n;
    return out->text != NULL;
}

/* Append one item to an array or object being built. */
static cli_json *grow(cli_json *v, bool with_key)
{
    cli_json *items = realloc(v->items, (v->n + 1) * sizeof *items);
    if (!items)
        return NULL;
    v->items = items;
    if (with_key) {
        char **keys = realloc(v->keys, (v->n + 1) * sizeof *keys);
        if (!keys)
            return NULL;
        v->keys = keys;
        v->keys[v->n] = NULL;
    }
    memset(&v->items[v->n], 0, sizeof *items);
    return &v->items[v->n++];
}

static bool parse_members(parser *ps, cli_json *out, bool object)
{
    char close_ch = object ? '}' : ']';
    out->type = object ? CLI_JSON_OBJECT : CLI_JSON_ARRAY;
    ps->p++;
    skip_ws(ps);
    if (*ps->p == close_ch) {
        ps->p++;
        return true;
    }
    for (;;) {
        skip_ws(ps);
        char *key = NULL;
        if (object) {
            if (*ps->p != '"' || !(key = parse_string(ps)))
                return false;
            skip_ws(ps);
            if (*ps->p++ != ':') {
                free(key);
                return false;
            }
        }
        cli_json *item = grow(out, object);
        if (!item) {
            free(key);
            return false;
        }
        if (object)
            out->keys[out->n - 1] = key;
        if (!parse_value(ps, item))
            return false;
        skip_ws(ps);
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p++ != close_ch)
            return false;
        return true;
    }
}

static bool parse_value(parser *ps, cli_json *out)
{
    skip_ws(ps);
    const char *p = ps->p;
    if (*p == '{' || *p == '[') {
        if (++ps->depth > MAX_DEPTH)
            return false;
        bool ok = parse_members(ps, out, *p == '{');
        ps->depth--;
        return ok;
    }
    if (*p == '"') {
        out->type = CLI_JSON_STRING;
        return (out->text = parse_string(ps)) != NULL;
    }
    static const struct { const char *word; cli_json_type type; bool b; } words[] = {
        {"null", CLI_JSON_NULL, false}, {"true", CLI_JSON_BOOL, true},
        {"false", CLI_JSON_BOOL, false},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strncmp(p, words[i].word, strlen(words[i].word)) == 0) {
            out->type = words[i].type;
            out->boolean = words[i].b;
            ps->p += strlen(words[i].word);
            return true;
        }
    return parse_number(ps, out);
}

static void free_members(cli_json *v)
{
    for (size_t i = 0; i < v->n; i++) {
        free_members(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->text);
}

cli_json *cli_json_parse(const char *text)
{
    cli_json *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    parser ps = {text, 0};
    bool ok = parse_value(&ps, v);
    skip_ws(&ps);
    if (!ok || *ps.p) {
        cli_json_free(v);
        return NULL;
    }
    return v;
}

void cli_json_free(cli_json *v)
{
    if (!v)
        return;
    free_members(v);
    free(v);
}

const cli_json *cli_json_get(const cli_json *obj, const char *key)
{
    if (!obj || obj->type != CLI_JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (obj->keys[i] && strcmp(obj->keys[i], key) == 0)
            return &obj->items[i];
    return NULL;
}

const char *cli_json_str(const cli_json *obj, const char *key)
{
    const cli_json *v = cli_json_get(obj, key);
    return v && v->type == CLI_JSON_STRING ? v->text : NULL;
}
