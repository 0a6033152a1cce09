/*
 * table_opts.c - what the table commands (append, inspect) share: opening
 * the catalog their options name, and JSON string output.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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

void cli_debt_json(const floe_table_debt *d)
{
    printf("{\"data_files\":%" PRIu64 ",\"small_data_files\":%" PRIu64 ",\"data_bytes\":%"
           PRIu64 ",\"data_rows\":%" PRIu64 ",\"delete_files\":%" PRIu64
           ",\"position_delete_files\":%" PRIu64 ",\"deletion_vectors\":%" PRIu64
           ",\"equality_delete_files\":%" PRIu64 ",\"deleted_rows\":%" PRIu64
           ",\"equality_deletes\":%" PRIu64 ",\"deleted_ratio\":%.6f,\"data_manifests\":%"
           PRIu64 ",\"delete_manifests\":%" PRIu64 ",\"snapshots\":%" PRIu64
           ",\"oldest_snapshot_age_ms\":%" PRId64 ",\"metadata_bytes\":%" PRIu64
           ",\"metadata_log_files\":%" PRIu64 ",\"target_file_size\":%" PRIu64
           ",\"old_spec_data_files\":%" PRIu64 "}",
           d->data_files, d->small_data_files, d->data_bytes, d->data_rows, d->delete_files,
           d->position_delete_files, d->deletion_vectors, d->equality_delete_files,
           d->deleted_rows, d->equality_deletes, d->deleted_ratio, d->data_manifests,
           d->delete_manifests, d->snapshots, d->oldest_snapshot_age_ms, d->metadata_bytes,
           d->metadata_log_files, d->target_file_size, d->old_spec_data_files);
}

int cli_maintain_opts(const cli_opt *opts, floe_sink_options *o)
{
    const char *v = cli_get(opts, "maintain"), *from = "--maintain";
    if (!v && (v = getenv("FLOE_MAINTAIN")) != NULL) {
        from = "FLOE_MAINTAIN";
        v = *v ? v : NULL;
    }
    if (v && strcmp(v, "auto") != 0 && strcmp(v, "off") != 0) {
        cli_say("floe: %s must be auto or off, not '%s'\n", from, v);
        return -1;
    }
    o->maintain = v && strcmp(v, "off") == 0 ? FLOE_MAINTAIN_OFF : FLOE_MAINTAIN_AUTO;
    const char *b = cli_get(opts, "maintain-budget");
    if (b) {
        char *end = NULL;
        double f = strtod(b, &end);
        if (end && *end == '%')
            f /= 100, end++;
        if (end == b || *end || !(f > 0 && f <= 1)) {
            cli_say("floe: --maintain-budget must be a share of wall time in (0, 1] or a "
                    "percentage, not '%s'\n", b);
            return -1;
        }
        o->maintain_budget = f;
    }
    if (cli_age_opt(opts, "orphan-age", &o->orphan_age_ms) != 0 ||
        cli_age_opt(opts, "orphan-interval", &o->orphan_interval_ms) != 0)
        return -1;
    if (cli_has(opts, "orphan-interval") && o->orphan_interval_ms == 0)
        o->orphan_interval_ms = -1;                    /* 0: never */
    return 0;
}
