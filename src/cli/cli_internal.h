/*
 * cli_internal.h - shared pieces of the floe program: option parsing, line
 * reading and error reporting.  The program uses only the public API
 * (include/floe.h); nothing here reaches into src/ internals.
 */
#ifndef FLOE_CLI_INTERNAL_H
#define FLOE_CLI_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "floe.h"

/* ---- options (args.c) ------------------------------------------------------ */
typedef struct cli_opt {
    const char *name;        /* without the leading "--" */
    bool takes_value;
    const char *help;        /* one line for --help; never shows a secret's value */
    const char *value;       /* filled by cli_parse: NULL when absent, "" for flags */
} cli_opt;

/* Parse argv (after the command word) against `opts` (terminated by a NULL
 * name).  Accepts "--name value" and "--name=value".  On an unknown option or
 * a missing value, prints the problem and usage to stderr and returns -1;
 * "--help" prints usage and returns 1; otherwise 0. */
int cli_parse(int argc, char **argv, cli_opt *opts, const char *usage);
const char *cli_get(const cli_opt *opts, const char *name);
bool cli_has(const cli_opt *opts, const char *name);
void cli_usage(FILE *f, const cli_opt *opts, const char *usage);

/* A byte count or number option ("1048576", "64k", "1MiB", "512m"): leaves
 * *out unchanged when absent; 0 on success, -1 (reported) when malformed. */
int cli_size_opt(const cli_opt *opts, const char *name, size_t *out);

/* The column list of --schema: the text itself, or the contents of FILE for
 * "@FILE" (caller frees).  NULL with a message printed on error. */
char *cli_schema_text(const char *arg);

/* Print "floe: <what>: <whole error chain>" to stderr. */
void cli_report(const char *what, const floe_error *err);

/* ---- catalogs and tables (table_opts.c) -----------------------------------------
 * The options every table command shares (CLI_TABLE_OPTS expands to their
 * cli_opt entries): --table and where the table lives.  Secrets are best
 * passed in the environment (see floe.h), which every option falls back to. */
#define CLI_TABLE_OPTS                                                                     \
    {"table", true, "the table, NS.NAME (required)", NULL},                               \
    {"catalog", true, "catalog URI: sqlite:PATH, sqlite:///PATH or http(s)://... "         \
                      "(default sqlite:warehouse/catalog.db; env FLOE_CATALOG)", NULL},    \
    {"warehouse", true, "where new tables go: a path, file:// or s3:// URI "              \
                        "(default ./warehouse; env FLOE_WAREHOUSE)", NULL},               \
    {"catalog-name", true, "the catalog's name, as other readers open it (default floe)",  \
     NULL},                                                                                \
    {"catalog-token", true, "REST catalog bearer token (env FLOE_CATALOG_TOKEN)", NULL},   \
    {"catalog-credential", true, "REST catalog OAuth2 client id:secret "                   \
                                 "(env FLOE_CATALOG_CREDENTIAL)", NULL},                   \
    {"catalog-oauth2-uri", true, "OAuth2 token endpoint (default CATALOG/v1/oauth/tokens)", \
     NULL},                                                                                \
    {"catalog-scope", true, "OAuth2 scope (default catalog)", NULL},                        \
    {"catalog-sigv4-region", true, "sign REST catalog requests with SigV4 for this region", \
     NULL},                                                                                \
    {"s3-endpoint", true, "S3 endpoint URL (env AWS_ENDPOINT_URL_S3)", NULL},               \
    {"s3-region", true, "S3 region (env AWS_REGION)", NULL},                               \
    {"s3-path-style", false, "address S3 buckets path-style", NULL},                       \
    {"ca-file", true, "trust this CA bundle (PEM) too (env FLOE_CA_FILE)", NULL}
/* Fill `o` from those options (pointers into argv). */
void cli_connect_options(const cli_opt *opts, floe_connect_options *o);
/* Open the catalog the options name (must_exist: never create one);
 * reports failures on stderr. */
int cli_open_catalog(const cli_opt *opts, bool must_exist, floe_catalog **out, floe_error *err);
/* Write s as a JSON string (quoted, escaped) to f. */
void cli_json_string(FILE *f, const char *s);

/* ---- line reading (lines.c) ----------------------------------------------------
 * Reads a file (or stdin for "-") in large blocks and hands out lines without
 * copying when they lie inside one block.  Lines may be any length up to a
 * hard limit. */
typedef struct cli_lines cli_lines;
/* Open PATH ("-" = stdin); a failure is reported on stderr. */
int cli_lines_open(const char *path, cli_lines **out);
/* Next line (without its '\n' or "\r\n"): 1 with *line and *len set, 0 at end of
 * input, -1 on a read error or an over-long line (reported on stderr).  The line stays
 * valid until the next call.  *lineno counts from 1. */
int cli_lines_next(cli_lines *r, const char **line, size_t *len, size_t *lineno);
void cli_lines_close(cli_lines *r);

/* A DURATION ("500ms", "10s", "2m", or a bare number of time units): the
 * count of input time units (milliseconds by default).  0 on success, -1
 * (reported) when malformed, zero or too large. */
int cli_duration_opt(const cli_opt *opts, const char *name, uint64_t *out);
/* An unsigned integer option; leaves *out unchanged when absent. */
int cli_u64_opt(const cli_opt *opts, const char *name, uint64_t *out);

/* ---- the metrics endpoint (metrics_server.c) ---------------------------------- */
typedef struct metrics_server metrics_server;
/* Listen on HOST:PORT and serve GET /metrics; NULL (reported) on failure. */
metrics_server *metrics_server_start(const char *addr, const floe_sink *sink);
void metrics_server_stop(metrics_server *m);     /* accepts NULL */

/* ---- commands --------------------------------------------------------------- */
int cmd_to_parquet(int argc, char **argv);
int cmd_append(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_sink(int argc, char **argv);

#endif
