/*
 * args.c - option parsing and error reporting for the floe program.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli_internal.h"

static cli_opt *find_opt(cli_opt *opts, const char *name, size_t len)
{
    for (cli_opt *o = opts; o->name; o++)
        if (strlen(o->name) == len && memcmp(o->name, name, len) == 0)
            return o;
    return NULL;
}

void cli_usage(FILE *f, const cli_opt *opts, const char *usage)
{
    fprintf(f, "usage: %s\n\noptions:\n", usage);
    for (const cli_opt *o = opts; o->name; o++)
        fprintf(f, "  --%-22s %s\n", o->name, o->help);
    fprintf(f, "  --%-22s %s\n", "help", "show this help");
}

int cli_parse(int argc, char **argv, cli_opt *opts, const char *usage)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            cli_usage(stdout, opts, usage);
            return 1;
        }
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "floe: unexpected argument '%s'\n", a);
            cli_usage(stderr, opts, usage);
            return -1;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        cli_opt *o = find_opt(opts, name, len);
        if (!o) {
            fprintf(stderr, "floe: unknown option '--%.*s'\n", (int)len, name);
            cli_usage(stderr, opts, usage);
            return -1;
        }
        if (!o->takes_value) {
            if (eq) {
                fprintf(stderr, "floe: option '--%s' takes no value\n", o->name);
                return -1;
            }
            o->value = "";
        } else if (eq) {
            o->value = eq + 1;
        } else if (i + 1 < argc) {
            o->value = argv[++i];
        } else {
            fprintf(stderr, "floe: option '--%s' needs a value\n", o->name);
            return -1;
        }
    }
    return 0;
}

const char *cli_get(const cli_opt *opts, const char *name)
{
    for (const cli_opt *o = opts; o->name; o++)
        if (strcmp(o->name, name) == 0)
            return o->value;
    return NULL;
}

bool cli_has(const cli_opt *opts, const char *name) { return cli_get(opts, name) != NULL; }

int cli_size_opt(const cli_opt *opts, const char *name, size_t *out)
{
    const char *v = cli_get(opts, name);
    if (!v)
        return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (end == v || errno != 0 || v[0] == '-')
        goto bad;
    static const struct { const char *suffix; unsigned shift; } units[] = {
        {"", 0}, {"b", 0}, {"k", 10}, {"kb", 10}, {"kib", 10}, {"m", 20}, {"mb", 20},
        {"mib", 20}, {"g", 30}, {"gb", 30}, {"gib", 30},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(end, units[i].suffix) == 0) {
            if (n > (SIZE_MAX >> units[i].shift))
                goto bad;
            *out = (size_t)n << units[i].shift;
            return 0;
        }
    }
bad:
    fprintf(stderr, "floe: --%s: '%s' is not a size (a number, optionally with k, m or g)\n",
            name, v);
    return -1;
}

int cli_u64_opt(const cli_opt *opts, const char *name, uint64_t *out)
{
    const char *v = cli_get(opts, name);
    if (!v)
        return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (end == v || *end || errno != 0 || v[0] == '-') {
        fprintf(stderr, "floe: --%s: '%s' is not an integer from 0 to 2^64-1\n", name, v);
        return -1;
    }
    *out = n;
    return 0;
}

int cli_duration_opt(const cli_opt *opts, const char *name, uint64_t *out)
{
    const char *v = cli_get(opts, name);
    if (!v)
        return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    uint64_t unit = 0;
    if (strcmp(end, "") == 0 || strcmp(end, "ms") == 0)
        unit = 1;
    else if (strcmp(end, "s") == 0)
        unit = 1000;
    else if (strcmp(end, "m") == 0)
        unit = 60000;
    if (end == v || v[0] == '-' || errno != 0 || unit == 0 || n == 0 || n > UINT64_MAX / unit) {
        fprintf(stderr, "floe: --%s: '%s' is not a positive duration (a number with ms, s or "
                        "m; a bare number counts input time units)\n", name, v);
        return -1;
    }
    *out = n * unit;
    return 0;
}

char *cli_schema_text(const char *arg)
{
    if (arg[0] != '@')
        return strdup(arg);
    FILE *f = fopen(arg + 1, "rb");
    if (!f) {
        fprintf(stderr, "floe: cannot open schema file '%s': %s\n", arg + 1, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *text = malloc(cap);
    size_t n;
    while (text && (n = fread(text + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2) {
            char *bigger = realloc(text, cap * 2);
            if (!bigger) {
                free(text);
                text = NULL;
                break;
            }
            text = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (!text) {
        fprintf(stderr, "floe: out of memory reading '%s'\n", arg + 1);
        return NULL;
    }
    text[len] = '\0';
    return text;
}

void cli_report(const char *what, const floe_error *err)
{
    fprintf(stderr, "floe: %s: %s\n", what, floe_error_message(err));
}
