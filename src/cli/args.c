/*
 * args.c - option parsing for the floe program: options by name (with a
 * "did you mean" for a mistyped one), their values (sizes, durations,
 * integers), the --schema text.  Messages go through cli_say.
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

size_t cli_edit_distance(const char *a, size_t alen, const char *b)
{
    enum { CAP = 99, MAXLEN = 64 };
    size_t blen = strlen(b);
    if (alen > MAXLEN || blen > MAXLEN)
        return CAP;
    size_t d[MAXLEN + 1][MAXLEN + 1];
    for (size_t i = 0; i <= alen; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= blen; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= alen; i++) {
        for (size_t j = 1; j <= blen; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t best = d[i - 1][j - 1] + cost;
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;      /* two neighbours swapped */
            d[i][j] = best;
        }
    }
    return d[alen][blen] < CAP ? d[alen][blen] : CAP;
}

bool cli_is_close(const char *a, size_t alen, const char *b, size_t *score)
{
    size_t d = cli_edit_distance(a, alen, b);
    size_t allowed = alen <= 3 ? 1 : alen <= 8 ? 2 : 3;
    if (alen >= 3 && strncmp(b, a, alen) == 0 && d > 1)
        d = 1;                                 /* a prefix of it: "--commit" */
    *score = d;
    return d <= allowed;
}

/* The option closest to the typed name, or NULL when none is close. */
static const char *closest_opt(const cli_opt *opts, const char *name, size_t len)
{
    const char *best = NULL;
    size_t best_score = SIZE_MAX, score;
    for (const cli_opt *o = opts; o->name; o++)
        if (cli_is_close(name, len, o->name, &score) && score < best_score) {
            best = o->name;
            best_score = score;
        }
    if (!best && cli_is_close(name, len, "help", &score))
        best = "help";
    return best;
}

void cli_usage(FILE *f, const cli_command *cmd, const cli_opt *opts)
{
    fprintf(f, "usage: %s\n\noptions:\n", cmd->usage);
    for (const cli_opt *o = opts; o->name; o++)
        fprintf(f, "  --%-22s %s\n", o->name, o->help);
    fprintf(f, "  --%-22s %s\n", "help", "show this help");
    if (cmd->notes)
        fprintf(f, "\n%s", cmd->notes);
}

static void unknown_option(const cli_command *cmd, const cli_opt *opts, const char *name,
                           size_t len)
{
    const char *near = closest_opt(opts, name, len);
    if (near)
        cli_say("floe: unknown option '--%.*s'; did you mean '--%s'? (floe %s --help lists the "
                "options)\n", (int)len, name, near, cmd->name);
    else
        cli_say("floe: unknown option '--%.*s' (floe %s --help lists the options)\n", (int)len,
                name, cmd->name);
}

static void stray_argument(const cli_command *cmd, const cli_opt *opts, const char *a)
{
    const char *name = a[0] == '-' ? a + 1 : a;
    size_t len = strcspn(name, "=");
    if (len > 0 && find_opt((cli_opt *)opts, name, len))
        cli_say("floe: unexpected argument '%s'; did you mean '--%s'? (floe %s --help lists the "
                "options)\n", a, name, cmd->name);
    else
        cli_say("floe: unexpected argument '%s': options start with '--' (floe %s --help lists "
                "them)\n", a, cmd->name);
}

int cli_parse(const cli_command *cmd, int argc, char **argv, cli_opt *opts)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            cli_usage(stdout, cmd, opts);
            return 1;
        }
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            stray_argument(cmd, opts, a);
            return -1;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        cli_opt *o = find_opt(opts, name, len);
        if (!o) {
            unknown_option(cmd, opts, name, len);
            return -1;
        }
        if (!o->takes_value) {
            if (eq) {
                cli_say("floe: option '--%s' takes no value\n", o->name);
                return -1;
            }
            o->value = "";
        } else if (eq) {
            o->value = eq + 1;
        } else if (i + 1 < argc) {
            o->value = argv[++i];
        } else {
            cli_say("floe: option '--%s' needs a value (floe %s --help)\n", o->name, cmd->name);
            return -1;
        }
    }
    return 0;
}

int cli_require(const cli_command *cmd, const cli_opt *opts, const char *const *names)
{
    for (; *names; names++)
        if (!cli_has(opts, *names)) {
            cli_say("floe: --%s is required (floe %s --help lists the options)\n", *names,
                    cmd->name);
            return -1;
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
    cli_say("floe: --%s: '%s' is not a size (a number, optionally with k, m or g)\n", name, v);
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
        cli_say("floe: --%s: '%s' is not an integer from 0 to 2^64-1\n", name, v);
        return -1;
    }
    *out = n;
    return 0;
}

typedef struct unit {
    const char *suffix;              /* "" for a bare number */
    uint64_t scale;
} unit;

/* "<digits><suffix>" with a suffix of `units`: 0 and *out = n * scale, or
 * -1 (nothing printed) when malformed or above `max`. */
static int scaled(const char *v, const unit *units, size_t n_units, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    uint64_t scale = 0;
    for (size_t i = 0; i < n_units && !scale; i++)
        if (strcmp(end, units[i].suffix) == 0)
            scale = units[i].scale;
    if (end == v || v[0] == '-' || errno != 0 || scale == 0 || n > max / scale)
        return -1;
    *out = n * scale;
    return 0;
}

int cli_duration_opt(const cli_opt *opts, const char *name, uint64_t *out)
{
    static const unit units[] = {{"", 1}, {"ms", 1}, {"s", 1000}, {"m", 60000}};
    const char *v = cli_get(opts, name);
    uint64_t t = 0;
    if (!v)
        return 0;
    if (scaled(v, units, 4, UINT64_MAX, &t) != 0 || t == 0) {
        cli_say("floe: --%s: '%s' is not a positive duration (a number with ms, s or "
                "m; a bare number counts input time units)\n", name, v);
        return -1;
    }
    *out = t;
    return 0;
}

int cli_wall_duration_opt(const cli_opt *opts, const char *name, bool allow_zero,
                          uint64_t *out_ns)
{
    static const unit units[] = {
        {"", 1000000000u}, {"s", 1000000000u}, {"ms", 1000000u}, {"m", 60000000000u}};
    const char *v = cli_get(opts, name);
    uint64_t t = 0;
    if (!v)
        return 0;
    if (scaled(v, units, 4, 86400000000000u, &t) != 0 || (t == 0 && !allow_zero)) {
        cli_say("floe: --%s: '%s' is not a %sduration of wall-clock time (a number with ms, s "
                "or m, at most a day; a bare number counts seconds)\n", name, v,
                allow_zero ? "" : "positive ");
        return -1;
    }
    *out_ns = t;
    return 0;
}

int cli_age_opt(const cli_opt *opts, const char *name, int64_t *out_ms)
{
    static const unit units[] = {
        {"ms", 1}, {"s", 1000}, {"", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
    const char *v = cli_get(opts, name);
    uint64_t t = 0;
    if (!v)
        return 0;
    if (scaled(v, units, 6, (uint64_t)INT64_MAX, &t) != 0) {
        cli_say("floe: --%s: '%s' is not an age (a number with ms, s, m, h or d; a bare "
                "number counts seconds)\n", name, v);
        return -1;
    }
    *out_ms = (int64_t)t;
    return 0;
}

size_t cli_get_all(const cli_opt *opts, int argc, char **argv, const char *name,
                   const char **out, size_t cap)
{
    size_t n = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i] + 2;
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const cli_opt *o = find_opt((cli_opt *)opts, a, len);
        const char *v = !o || !o->takes_value ? NULL : eq ? eq + 1 : argv[++i];
        if (v && strcmp(o->name, name) == 0 && n < cap)
            out[n++] = v;
    }
    return n;
}

char *cli_schema_text(const char *arg)
{
    if (arg[0] != '@')
        return strdup(arg);
    FILE *f = fopen(arg + 1, "rb");
    if (!f) {
        cli_say("floe: cannot open schema file '%s': %s\n", arg + 1, strerror(errno));
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
        cli_say("floe: out of memory reading '%s'\n", arg + 1);
        return NULL;
    }
    text[len] = '\0';
    return text;
}

bool cli_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}
