/*
 * to_parquet.c - `floe to-parquet`: NDJSON rows into one Parquet file with
 * Iceberg field ids.
 *
 * Each input line is one JSON object of column values (SPEC.md section 2
 * encodings); blank lines are skipped.  A bad line stops the run with an
 * error naming the line, and no output file is left behind.
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"

static const char USAGE[] =
    "floe to-parquet --schema \"COLUMNS\"|@FILE --input PATH|- --output FILE "
    "[--compression zstd|snappy|gzip|none] [--compression-level N] [--page-size BYTES] "
    "[--row-group-size BYTES] [--dictionary-limit BYTES] [--no-dictionary]";

static const cli_command CMD = {"to-parquet", USAGE, NULL};

typedef struct job {
    floe_schema *schema;
    floe_row *row;
    floe_parquet_writer *writer;
    cli_lines *lines;
    floe_error *err;
} job;

static void job_free(job *j)
{
    floe_parquet_writer_abort(j->writer);
    cli_lines_close(j->lines);
    floe_row_free(j->row);
    floe_schema_free(j->schema);
    floe_error_free(j->err);
}

static int setup(job *j, const cli_opt *opts)
{
    floe_parquet_options po;
    floe_parquet_options_init(&po, sizeof po);
    size_t level = 0;
    const char *codec = cli_get(opts, "compression");
    if (codec) {
        int c = floe_compression_from_name(codec);
        if (c < 0) {
            cli_say("floe: unknown compression '%s' (zstd, snappy, gzip, none)\n", codec);
            return -1;
        }
        po.compression = (floe_compression)c;
    }
    if (cli_size_opt(opts, "compression-level", &level) != 0 ||
        cli_size_opt(opts, "page-size", &po.page_size) != 0 ||
        cli_size_opt(opts, "row-group-size", &po.row_group_size) != 0 ||
        cli_size_opt(opts, "dictionary-limit", &po.dictionary_limit) != 0)
        return -1;
    po.compression_level = (int)level;
    if (cli_has(opts, "no-dictionary"))
        po.dictionary = 0;
    char *text = cli_schema_text(cli_get(opts, "schema"));
    if (!text)
        return -1;
    int rc = floe_schema_parse(text, &j->schema, j->err);
    free(text);
    if (rc != FLOE_OK) {
        cli_report("--schema", j->err);
        return -1;
    }
    if (floe_row_new(j->schema, &j->row, j->err) != FLOE_OK ||
        floe_parquet_writer_open(j->schema, cli_get(opts, "output"), &po, &j->writer,
                                 j->err) != FLOE_OK) {
        cli_report(cli_get(opts, "output"), j->err);
        return -1;
    }
    return cli_lines_open(cli_get(opts, "input"), &j->lines) == FLOE_OK ? 0 : -1;
}

static int copy_rows(job *j)
{
    const char *line;
    size_t len, lineno;
    int got;
    while ((got = cli_lines_next(j->lines, &line, &len, &lineno)) == 1) {
        if (cli_blank(line, len))
            continue;
        if (floe_row_set_json(j->row, line, len, j->err) != FLOE_OK ||
            floe_parquet_writer_write(j->writer, j->row, j->err) != FLOE_OK) {
            char chain[16384];
            cli_chain(j->err, chain, sizeof chain);
            cli_say("floe: %s:%zu: %s\n", cli_lines_name(j->lines), lineno, chain);
            cli_say("floe: fix the input and run again: no output file was written\n");
            return -1;
        }
    }
    return got;
}

int cmd_to_parquet(int argc, char **argv)
{
    cli_opt opts[] = {
        {"schema", true, "column list, or @FILE holding it (required)", NULL},
        {"input", true, "NDJSON rows, one JSON object per line; - for stdin (required)", NULL},
        {"output", true, "the Parquet file to write (required)", NULL},
        {"compression", true, "zstd (default), snappy, gzip or none", NULL},
        {"compression-level", true, "codec level (0 = the codec's default)", NULL},
        {"page-size", true, "target uncompressed data page size (default 1 MiB)", NULL},
        {"row-group-size", true, "target row group size (default 128 MiB)", NULL},
        {"dictionary-limit", true, "dictionary bytes per column chunk before plain (1 MiB)", NULL},
        {"no-dictionary", false, "never use dictionary encoding", NULL},
        {NULL, false, NULL, NULL},
    };
    int p = cli_parse(&CMD, argc, argv, opts);
    if (p != 0)
        return p > 0 ? 0 : 2;
    if (cli_require(&CMD, opts, (const char *const[]){"schema", "input", "output", NULL}) != 0)
        return 2;
    job j = {0};
    j.err = floe_error_new();
    if (!j.err)
        return 1;
    int status = 1;
    if (setup(&j, opts) == 0 && copy_rows(&j) == 0) {
        uint64_t rows = floe_parquet_writer_rows(j.writer), size = 0;
        floe_parquet_writer *w = j.writer;
        j.writer = NULL;                       /* close frees it, success or not */
        if (floe_parquet_writer_close(w, &size, j.err) == FLOE_OK) {
            cli_say("floe: wrote %llu rows, %llu bytes to %s\n",
                    (unsigned long long)rows, (unsigned long long)size, cli_get(opts, "output"));
            status = 0;
        } else {
            cli_report(cli_get(opts, "output"), j.err);
        }
    }
    job_free(&j);
    return status;
}
