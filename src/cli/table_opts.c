/*
 * table_opts.c - what the table commands (append, inspect, and the sources
 * pg and kafka) share: opening the catalog their options name, the sinks'
 * numbers and maintenance options, and JSON string output.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"

void cli_connect_options(const cli_opt *opts, floe_connect_options *o)
{
    floe_connect_options_init(o, sizeof *o);
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
    if (cli_age_opt(opts, "maintain-final", &o->maintain_final_ms) != 0)
        return -1;
    if (cli_has(opts, "maintain-final") && o->maintain_final_ms == 0)
        o->maintain_final_ms = -1;                     /* 0: no final pass */
    return 0;
}

int cli_source_sink_options(const cli_opt *opts, floe_sink_options *o,
                            floe_connect_options *connect,
                            void (*on_warning)(void *ctx, const char *message), void *ctx)
{
    floe_sink_options_init(o, sizeof *o);
    cli_connect_options(opts, connect);
    o->connect = connect;
    o->index_dir = cli_get(opts, "index-dir");
    o->spill_dir = cli_get(opts, "spill-dir");
    o->on_warning = on_warning;
    o->warning_ctx = ctx;
    return cli_sink_numbers(opts, o);
}

int cli_sink_numbers(const cli_opt *opts, floe_sink_options *o)
{
    size_t mem = 0, target = 0;
    const char *codec = cli_get(opts, "compression"), *dm = cli_get(opts, "delete-mode");
    if (codec) {
        int c = floe_compression_from_name(codec);
        if (c < 0) {
            cli_say("floe: unknown compression '%s' (zstd, snappy, gzip, none)\n", codec);
            return -1;
        }
        o->compression = (floe_compression)c;
    }
    if (dm && strcmp(dm, "position") != 0 && strcmp(dm, "equality") != 0) {
        cli_say("floe: --delete-mode must be position or equality, not '%s'\n", dm);
        return -1;
    }
    if (dm)
        o->delete_mode = strcmp(dm, "equality") == 0 ? FLOE_DELETE_EQUALITY
                                                     : FLOE_DELETE_POSITION;
    uint64_t fv = 0, timeout_ns = 0;
    if (cli_wall_duration_opt(opts, "commit-timeout", false, &timeout_ns) != 0)
        return -1;
    o->commit_timeout_ms = (int64_t)(timeout_ns / 1000000u);
    if (timeout_ns && !o->commit_timeout_ms)
        o->commit_timeout_ms = 1;
    if (cli_size_opt(opts, "target-file-size", &target) != 0 ||
        cli_size_opt(opts, "memory-limit", &mem) != 0 ||
        cli_u64_opt(opts, "sink-version", &o->sink_version) != 0 ||
        cli_u64_opt(opts, "format-version", &fv) != 0 || cli_maintain_opts(opts, o) != 0)
        return -1;
    if (cli_has(opts, "sink-version") && o->sink_version == 0) {
        cli_say("floe: --sink-version must be at least 1\n");
        return -1;
    }
    if (cli_has(opts, "format-version") && fv != 2 && fv != 3) {
        cli_say("floe: --format-version must be 2 or 3, not %" PRIu64 "\n", fv);
        return -1;
    }
    o->format_version = (int)fv;
    o->target_file_size = target;
    o->memory_limit = mem;
    return 0;
}
