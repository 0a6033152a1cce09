/*
 * append.c - `floe append`: NDJSON rows appended to an Iceberg table as one
 * snapshot.
 *
 * Each input line is one JSON object of column values (SPEC.md section 2
 * encodings); blank lines are skipped.  With --schema the table is created
 * when missing, and an existing table must be compatible with it; without,
 * the table must exist and its own schema is used.  A bad line stops the
 * run with an error naming the line: nothing is committed and the files
 * written so far are removed.  An append does not depend on what the table
 * holds, so a commit that loses a race to another writer is retried on the
 * new snapshot (a few times).
 */
#include <stdlib.h>
#include <string.h>

#include "cli/cli_internal.h"

#define COMMIT_TRIES 5

static const char USAGE[] =
    "floe append --table NS.NAME [--schema \"COLUMNS\"|@FILE] [--partition-by SPEC] "
    "--input PATH|- "
    "[--catalog URI] [--warehouse URI] [--catalog-name NAME] "
    "[--compression zstd|snappy|gzip|none] [--compression-level N] [--target-file-size BYTES]";

static const cli_command CMD = {"append", USAGE, NULL};

typedef struct job {
    floe_catalog *catalog;
    floe_schema *declared;
    floe_table *table;
    floe_file_writer *writer;
    floe_row *row;
    cli_lines *lines;
    floe_commit *commit;
    floe_error *err;
} job;

static void job_free(job *j)
{
    floe_commit_free(j->commit);
    floe_file_writer_abort(j->writer);
    cli_lines_close(j->lines);
    floe_row_free(j->row);
    floe_table_free(j->table);
    floe_schema_free(j->declared);
    floe_catalog_free(j->catalog);
    floe_error_free(j->err);
}

/* The table's write options, with what the command line gives instead. */
static int write_options(const cli_opt *opts, floe_table *t, floe_write_options *wo,
                         floe_parquet_options *po, floe_error *err)
{
    const char *codec = cli_get(opts, "compression");
    int c = codec ? floe_compression_from_name(codec) : 0;
    if (c < 0) {
        cli_say("floe: unknown compression '%s' (zstd, snappy, gzip, none)\n", codec);
        return -1;
    }
    size_t level = 0, target = 0;
    if (cli_size_opt(opts, "compression-level", &level) != 0 ||
        cli_size_opt(opts, "target-file-size", &target) != 0)
        return -1;
    floe_write_options_init(wo, sizeof *wo);
    floe_parquet_options_init(po, sizeof *po);
    if (floe_table_write_options(t, wo, po, err) != FLOE_OK) {
        cli_report("append", err);
        return -1;
    }
    if (codec) {
        po->compression = (floe_compression)c;
        po->compression_level = 0;
    }
    if (level)
        po->compression_level = (int)level;
    if (target)
        wo->target_file_size = target;
    return 0;
}

static int setup(job *j, const cli_opt *opts)
{
    const char *schema = cli_get(opts, "schema");
    if (schema) {
        char *text = cli_schema_text(schema);
        if (!text)
            return -1;
        int rc = floe_schema_parse(text, &j->declared, j->err);
        free(text);
        if (rc != FLOE_OK) {
            cli_report("--schema", j->err);
            return -1;
        }
    }
    const char *ident = cli_get(opts, "table");
    if (cli_open_catalog(opts, false, &j->catalog, j->err) != FLOE_OK)
        return -1;
    const char *by = cli_get(opts, "partition-by");
    const char *create_props[] = {"floe.partition-by", by, NULL};
    if (floe_table_open(j->catalog, ident, j->declared, by ? create_props : NULL, &j->table,
                        j->err) != FLOE_OK) {
        if (floe_error_code(j->err) == FLOE_ENOTFOUND && !j->declared)
            cli_say("floe: table %s does not exist; give --schema to create it\n",
                    ident);
        cli_report("append", j->err);
        return -1;
    }
    floe_write_options wo;
    floe_parquet_options po;
    if (write_options(opts, j->table, &wo, &po, j->err) != 0)
        return -1;
    if (floe_data_writer_new(j->table, &wo, &j->writer, j->err) != FLOE_OK ||
        floe_row_new(floe_table_schema(j->table), &j->row, j->err) != FLOE_OK) {
        cli_report("append", j->err);
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
            floe_file_writer_write(j->writer, j->row, NULL, NULL, j->err) != FLOE_OK) {
            char chain[16384];
            cli_chain(j->err, chain, sizeof chain);
            cli_say("floe: %s:%zu: %s\n", cli_lines_name(j->lines), lineno, chain);
            cli_say("floe: fix the input and run again: nothing of this run was committed\n");
            return -1;
        }
    }
    return got;
}

/* Commit the files; a lost race is retried on the new current snapshot. */
static int commit(job *j, int64_t *snapshot_id)
{
    int64_t base = floe_table_current_snapshot_id(j->table);
    for (int attempt = 1;; attempt++) {
        int rc = floe_commit_submit(j->commit, base, snapshot_id, j->err);
        if (rc == FLOE_OK)
            return 0;
        if (rc != FLOE_ECONFLICT || attempt == COMMIT_TRIES) {
            cli_report("append", j->err);
            return -1;
        }
        if (floe_table_refresh(j->table, j->err) != FLOE_OK) {
            cli_report("append", j->err);
            return -1;
        }
        base = floe_table_current_snapshot_id(j->table);
    }
}

static int finish(job *j, const char *ident)
{
    uint64_t rows = floe_file_writer_rows(j->writer);
    if (rows == 0) {
        cli_say("floe: no rows in the input; nothing committed to %s\n", ident);
        return 0;
    }
    if (floe_commit_new(j->table, &j->commit, j->err) != FLOE_OK) {
        cli_report("append", j->err);
        return -1;
    }
    floe_file_writer *w = j->writer;
    j->writer = NULL;                   /* the commit takes it, success or not */
    if (floe_commit_add_files(j->commit, w, j->err) != FLOE_OK) {
        cli_report("append", j->err);
        return -1;
    }
    size_t files = floe_commit_file_count(j->commit);
    int64_t id = -1;
    if (commit(j, &id) != 0)
        return -1;
    cli_say("floe: appended %llu rows in %zu files to %s as snapshot %lld\n",
            (unsigned long long)rows, files, ident, (long long)id);
    return 0;
}

int cmd_append(int argc, char **argv)
{
    cli_opt opts[] = {
        CLI_TABLE_OPTS,
        {"schema", true, "column list, or @FILE holding it (needed to create the table)", NULL},
        CLI_PARTITION_BY_OPT,
        {"input", true, "NDJSON rows, one JSON object per line; - for stdin (required)", NULL},
        {"compression", true, "zstd, snappy, gzip or none (default: the table's "
                              "write.parquet.compression-codec, else zstd)", NULL},
        {"compression-level", true, "codec level (default: the table's, else the codec's)",
         NULL},
        {"target-file-size", true, "roll data files over at this size (default: the table's "
                                   "write.target-file-size-bytes, else 512 MiB)", NULL},
        {NULL, false, NULL, NULL},
    };
    int p = cli_parse(&CMD, argc, argv, opts);
    if (p != 0)
        return p > 0 ? 0 : 2;
    if (cli_require(&CMD, opts, (const char *const[]){"table", "input", NULL}) != 0)
        return 2;
    job j = {0};
    j.err = floe_error_new();
    if (!j.err)
        return 1;
    int status = 1;
    if (setup(&j, opts) == 0 && copy_rows(&j) == 0 &&
        finish(&j, cli_get(opts, "table")) == 0)
        status = 0;
    job_free(&j);
    return status;
}
