/*
 * bench_json_row.c - throughput of the JSON -> row-format parser on
 * TPC-H lineitem-like NDJSON rows.
 *
 *   bench_json_row [ROWS] [--write FILE] [--passes N]
 *
 * Generates ROWS lines (default 1000000) in memory with a fixed seed, parses
 * each with floe__json_parse_row into one reused buffer, and prints the best
 * of five passes in MB/s of JSON and rows/s, by the thread's CPU time (so a
 * busy machine disturbs the number less) and by the wall clock.  --write also saves the lines
 * as NDJSON so other readers (e.g. DuckDB's read_json) can be timed on the
 * same input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "source/source_internal.h"

int main(int argc, char **argv);

static const char *const COLUMNS =
    "l_orderkey bigint not null, l_partkey bigint not null, l_suppkey bigint not null, "
    "l_linenumber integer not null, l_quantity numeric(15,2) not null, "
    "l_extendedprice numeric(15,2) not null, l_discount numeric(15,2) not null, "
    "l_tax numeric(15,2) not null, l_returnflag text not null, l_linestatus text not null, "
    "l_shipdate date not null, l_commitdate date not null, l_receiptdate date not null, "
    "l_shipinstruct text not null, l_shipmode text not null, l_comment text not null";

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void date_text(int64_t days, char *out)
{
    int64_t y;
    unsigned m, d;
    floe__civil_from_days(days, &y, &m, &d);
    sprintf(out, "%04d-%02u-%02u", (int)y, m, d);
}

/* One lineitem-like JSON line (without the newline) into b. */
static void make_line(uint64_t *rng, uint64_t i, floe__buf *b)
{
    static const char *const instr[] = {"DELIVER IN PERSON", "COLLECT COD", "NONE",
                                        "TAKE BACK RETURN"};
    static const char *const modes[] = {"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"};
    static const char *const words[] = {"furiously", "quickly", "carefully", "regular",
                                        "ironic", "final", "pending", "deposits", "accounts",
                                        "packages", "requests", "blithely", "slyly", "even"};
    char ship[16], commit[16], receipt[16], comment[64];
    int64_t sd = 8036 + (int64_t)(next_rand(rng) % 2500);
    date_text(sd, ship);
    date_text(sd + 30 - (int64_t)(next_rand(rng) % 60), commit);
    date_text(sd + 1 + (int64_t)(next_rand(rng) % 30), receipt);
    size_t n = 0;
    int nw = 2 + (int)(next_rand(rng) % 5);
    for (int w = 0; w < nw; w++)
        n += (size_t)sprintf(comment + n, "%s%s", w ? " " : "", words[next_rand(rng) % 14]);
    unsigned qty = 1 + (unsigned)(next_rand(rng) % 50);
    uint64_t price = qty * (90000 + next_rand(rng) % 1000000);
    floe__buf_printf(b, NULL,
                     "{\"l_orderkey\":%llu,\"l_partkey\":%llu,\"l_suppkey\":%llu,"
                     "\"l_linenumber\":%u,\"l_quantity\":%u.00,\"l_extendedprice\":%llu.%02llu,"
                     "\"l_discount\":0.%02u,\"l_tax\":0.%02u,\"l_returnflag\":\"%c\","
                     "\"l_linestatus\":\"%c\",\"l_shipdate\":\"%s\",\"l_commitdate\":\"%s\","
                     "\"l_receiptdate\":\"%s\",\"l_shipinstruct\":\"%s\",\"l_shipmode\":\"%s\","
                     "\"l_comment\":\"%s\"}\n",
                     (unsigned long long)(i / 4 + 1), (unsigned long long)(next_rand(rng) % 200000),
                     (unsigned long long)(next_rand(rng) % 10000), (unsigned)(i % 7 + 1), qty,
                     (unsigned long long)(price / 100), (unsigned long long)(price % 100),
                     (unsigned)(next_rand(rng) % 11), (unsigned)(next_rand(rng) % 9),
                     "RAN"[next_rand(rng) % 3], "OF"[next_rand(rng) % 2], ship, commit, receipt,
                     instr[next_rand(rng) % 4], modes[next_rand(rng) % 7], comment);
}

int main(int argc, char **argv)
{
    uint64_t rows = 1000000;
    const char *write_path = NULL;
    int passes = 5;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--write") == 0 && i + 1 < argc)
            write_path = argv[++i];
        else if (strcmp(argv[i], "--passes") == 0 && i + 1 < argc)
            passes = atoi(argv[++i]);
        else
            rows = strtoull(argv[i], NULL, 10);
    }
    floe_schema *s;
    floe_error *err = floe_error_new();
    if (floe_schema_parse(COLUMNS, &s, err) != FLOE_OK) {
        fprintf(stderr, "%s\n", floe_error_message(err));
        return 1;
    }
    floe__buf text;
    floe__buf_init(&text, 0);
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (uint64_t i = 0; i < rows; i++)
        make_line(&rng, i, &text);
    if (write_path) {
        FILE *f = fopen(write_path, "wb");
        if (!f || fwrite(text.data, 1, text.len, f) != text.len || fclose(f) != 0) {
            perror(write_path);
            return 1;
        }
    }
    floe__buf row;
    floe__buf_init(&row, 0);
    double best = 1e30, best_wall = 1e30;
    uint64_t checksum = 0;
    for (int pass = 0; pass < passes; pass++) {
        const char *p = (const char *)text.data, *end = p + text.len;
        uint64_t t0 = floe__monotonic_ns();
        double c0 = cpu_seconds();
        while (p < end) {
            floe__buf_reset(&row);
            const char *q;
            if (floe__json_parse_row(s, p, end, &q, &row, err) != FLOE_OK) {
                fprintf(stderr, "parse failed: %s\n", floe_error_message(err));
                return 1;
            }
            checksum += row.len;
            p = q + 1;                        /* the newline */
        }
        double secs = cpu_seconds() - c0, wall = (double)(floe__monotonic_ns() - t0) / 1e9;
        if (secs < best)
            best = secs;
        if (wall < best_wall)
            best_wall = wall;
    }
    printf("rows %llu, JSON %.1f MB (%.0f bytes/row), row format %.0f bytes/row\n",
           (unsigned long long)rows, (double)text.len / 1e6, (double)text.len / (double)rows,
           (double)checksum / (passes > 0 ? passes : 1) / (double)rows);
    printf("best of %d: %.3f s CPU, %.0f MB/s, %.2f M rows/s (wall clock: %.0f MB/s)\n", passes, best,
           (double)text.len / 1e6 / best, (double)rows / 1e6 / best,
           (double)text.len / 1e6 / best_wall);
    floe__buf_free(&row);
    floe__buf_free(&text);
    floe_schema_free(s);
    floe_error_free(err);
    return 0;
}
