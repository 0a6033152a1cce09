/*
 * main.c - the floe program: dispatches to one command per file.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "cli/cli_internal.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command COMMANDS[] = {
    {"append", cmd_append, "append NDJSON rows to an Iceberg table as one snapshot"},
    {"inspect", cmd_inspect, "show a table's snapshots, summaries and floe frontier"},
    {"maintain", cmd_maintain, "compact a table, expire its snapshots, remove orphan files"},
    {"kafka", cmd_kafka, "stream Kafka topics into Iceberg tables, exactly once"},
    {"pg", cmd_pg, "mirror Postgres tables into Iceberg tables through logical replication"},
    {"sink", cmd_sink, "stream an NDJSON changelog into an Iceberg table, exactly once"},
    {"to-parquet", cmd_to_parquet, "write NDJSON rows to one Parquet file with Iceberg field ids"},
};

static void usage(FILE *f)
{
    fprintf(f, "floe %s - stream a changelog into Apache Iceberg tables, exactly once\n\n"
               "usage: floe COMMAND [OPTIONS]   (floe COMMAND --help for its options)\n\n"
               "commands:\n", FLOE_VERSION_STRING);
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        fprintf(f, "  %-12s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(f, "  %-12s %s\n", "version", "print the version");
}

/* The soft limit of open files up to the hard one: a partitioned table
 * keeps a file open per partition of a batch (the library takes an eighth
 * of the soft limit for them). */
static void raise_open_files_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int main(int argc, char **argv)
{
    raise_open_files_limit();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(name, "version") == 0 || strcmp(name, "--version") == 0) {
        printf("floe %s\n", FLOE_VERSION_STRING);
        return 0;
    }
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (strcmp(name, COMMANDS[i].name) == 0)
            return COMMANDS[i].run(argc - 2, argv + 2);
    const char *near = NULL;
    size_t best = SIZE_MAX, score;
    for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
        if (cli_is_close(name, strlen(name), COMMANDS[i].name, &score) && score < best) {
            near = COMMANDS[i].name;
            best = score;
        }
    if (near)
        fprintf(stderr, "floe: unknown command '%s'; did you mean '%s'? (floe --help lists the "
                        "commands)\n", name, near);
    else
        fprintf(stderr, "floe: unknown command '%s' (floe --help lists the commands)\n", name);
    return 2;
}
