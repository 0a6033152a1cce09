/*
 * table_opts.c - what the table commands (append, inspect) share: opening
 * the catalog their options name, and JSON string output.
 */
#include "cli/cli_internal.h"

void cli_connect_options(const cli_opt *opts, floe_connect_options *o)
{
    floe_connect_options_init(o);
    o->catalog = cli_get(opts, "catalog");
    o->warehouse = cli_get(opts, "warehouse");
    o->catalog_name = cli_get(opts, "catalog-name");
    o->token = cli_get(opts, "catalog-token");
    o->credential = cli_get(opts, "catalog-credential");
    o->oauth2_uri = cli_get(opts, "catalog-oauth2-uri");
    o->scope = cli_get(opts, "catalog-scope");
    o->sigv4_region = cli_get(opts, "catalog-sigv4-region");
    o->s3_endpoint = cli_get(opts, "s3-endpoint");
    o->s3_region = cli_get(opts, "s3-region");
    if (cli_has(opts, "s3-path-style"))
        o->s3_path_style = 1;
    o->ca_file = cli_get(opts, "ca-file");
}

int cli_open_catalog(const cli_opt *opts, bool must_exist, floe_catalog **out, floe_error *err)
{
    floe_connect_options co;
    cli_connect_options(opts, &co);
    co.must_exist = must_exist;
    int rc = floe_catalog_open(&co, out, err);
    if (rc != FLOE_OK)              /* the message names the catalog (without secrets) */
        cli_report("opening the catalog", err);
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
