/*
 * table_opts.c - what the table commands (append, inspect) share: opening
 * the catalog their options name, and JSON string output.
 */
#include "cli/cli_internal.h"

int cli_open_catalog(const cli_opt *opts, floe_catalog **out, floe_error *err)
{
    const char *uri = cli_get(opts, "catalog");
    int rc = floe_catalog_open(uri, cli_get(opts, "warehouse"), cli_get(opts, "catalog-name"),
                               out, err);
    if (rc != FLOE_OK)
        cli_report(uri ? uri : "opening the catalog", err);
    return rc;
}

void cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}
