/*
 * bench_parquet_read.c - how fast floe reads Parquet back into rows, beside
 * pyarrow reading the same file on one thread.
 *
 *   bench_parquet_read [FILE] [REPEAT] [CASE]
 *       FILE    a lineitem-like file (default /tmp/floe_bench_lineitem.parquet;
 *               made with bench_parquet, 6M rows, zstd, when it is missing)
 *       REPEAT  runs of each case; the one with the least CPU time counts
 *               (default 3)
 *       CASE    run only case 1..5 (for profiling), without pyarrow
 *   BENCH_PYARROW=0 skips the pyarrow runs.
 *
 * Cases: the upsert key of lineitem (l_orderkey, l_linenumber) and its first
 * column alone, as the key index rebuild reads them (next_batch of a whole
 * row group, positions included), and all 16 columns, by next_batch (64Ki
 * rows a call) and by next (one call per row).  The file is read through a
 * pread source (it is in the page cache after the first run, as for
 * pyarrow).  Each case runs in a child process, so its peak RSS is its own
 * (the rows buffer included).  Prints rows/s by wall clock and by process
 * CPU time, and pyarrow's `pq.read_table(path, columns=[...],
 * use_threads=False)` on the same columns, best of REPEAT.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "parquet/parquet_internal.h"

static const char *NAMES[16] = {
    "l_orderkey", "l_partkey", "l_suppkey", "l_linenumber", "l_quantity", "l_extendedprice",
    "l_discount", "l_tax", "l_returnflag", "l_linestatus", "l_shipdate", "l_commitdate",
    "l_receiptdate", "l_shipinstruct", "l_shipmode", "l_comment",
};

typedef struct file_src {
    int fd;
} file_src;

static int pread_at(void *ctx, uint64_t off, size_t len, uint8_t *dst, floe_error *err)
{
    file_src *f = ctx;
    while (len) {
        ssize_t n = pread(f->fd, dst, len, (off_t)off);
        if (n <= 0)
            return floe__err_set(err, FLOE_EIO, "pread failed");
        dst += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return FLOE_OK;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The projection: the file's schema, its fields k with keep[k] only. */
static floe__schema *projection(const floe__schema *full, const int *keep, int n)
{
    floe__schema *s;
    if (floe__schema_new(&s, NULL) != FLOE_OK)
        exit(1);
    s->root.children = floe__calloc((size_t)n, sizeof(floe__field));
    for (int i = 0; i < n; i++)
        if (floe__field_copy(&s->root.children[i], &full->root.children[keep[i]], NULL))
            exit(1);
    s->root.n_children = (uint32_t)n;
    return s;
}

typedef struct result {
    double wall, cpu;
    uint64_t rows, sum;
} result;

/* The caller's buffers, kept from one run to the next as a reader of many
 * files would keep them. */
typedef struct bufs {
    floe__buf rows;
    size_t *ends;
} bufs;

static int read_once(const floe__pq_source *src, const floe__schema *proj, size_t max, bufs *b,
                     result *res)
{
    floe_error *err = floe_error_new();
    floe__pq_reader *r = NULL;
    bool per_row = max == 0;
    size_t n = 0;
    max = max ? max : 1;
    uint64_t t0 = floe__monotonic_ns(), first = 0, pos_sum = 0;
    double c0 = cpu_seconds();
    int rc = floe__pq_reader_open(src, proj, NULL, &r, err);
    memset(res, 0, sizeof *res);
    while (rc == FLOE_OK) {
        b->rows.len = 0;
        if (per_row) {
            bool got;
            rc = floe__pq_reader_next(r, &b->rows, &first, &got, err);
            n = got;
        } else {
            rc = floe__pq_reader_next_batch(r, &b->rows, b->ends, max, &n, &first, err);
        }
        if (rc || n == 0)
            break;
        res->rows += n;
        pos_sum += first;
        res->sum += b->rows.len ? b->rows.data[b->rows.len - 1] : 0;
    }
    res->cpu = cpu_seconds() - c0;
    res->wall = (double)(floe__monotonic_ns() - t0) / 1e9;
    res->sum += pos_sum;
    if (rc)
        fprintf(stderr, "read failed: %s\n", floe_error_message(err));
    floe__pq_reader_free(r);
    floe_error_free(err);
    return rc;
}

static void run_case(const char *name, const floe__pq_source *src, const floe__schema *proj,
                     size_t max, int repeat)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        result best = {0}, res;
        bufs b = {.ends = malloc((max ? max : 1) * sizeof(size_t))};
        floe__buf_init(&b.rows, 0);
        for (int k = 0; k < repeat; k++) {
            if (read_once(src, proj, max, &b, &res) != FLOE_OK)
                _exit(1);
            if (k == 0 || res.cpu < best.cpu)
                best = res;
        }
        printf("floe    %-30s %8llu rows  wall %.3f s (%11.0f rows/s)  cpu %.3f s (%11.0f "
               "rows/s)", name, (unsigned long long)best.rows, best.wall,
               (double)best.rows / best.wall, best.cpu, (double)best.rows / best.cpu);
        fflush(stdout);
        _exit(0);
    }
    int status = 1;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) < 0 || status != 0) {
        fprintf(stderr, "%s failed\n", name);
        exit(1);
    }
    printf("  peak RSS %.0f MB\n", (double)ru.ru_maxrss / 1024.0);
    fflush(stdout);
}

static void pyarrow_case(const char *path, const char *name, const char *cols, int repeat)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import time, resource, pyarrow.parquet as pq\n"
             "best = None\n"
             "for _ in range(%d):\n"
             "    w = time.perf_counter(); c = time.process_time()\n"
             "    t = pq.read_table('%s', columns=%s, use_threads=False)\n"
             "    w = time.perf_counter() - w; c = time.process_time() - c\n"
             "    best = (w, c) if best is None or c < best[1] else best\n"
             "n = t.num_rows\n"
             "print('pyarrow %%-30s %%8d rows  wall %%.3f s (%%11.0f rows/s)  cpu %%.3f s (%%11.0f rows/s)'"
             " %% ('%s', n, best[0], n / best[0], best[1], n / best[1]))\"",
             repeat, path, cols, name);
    fflush(stdout);
    if (system(cmd) != 0)
        fprintf(stderr, "pyarrow run failed (is pyarrow installed?)\n");
}

static void make_file(const char *argv0, const char *path)
{
    char dir[1024], cmd[2300];
    snprintf(dir, sizeof dir, "%s", argv0);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    snprintf(cmd, sizeof cmd, "%s/bench_parquet 6000000 zstd '%s' > /dev/null", dir, path);
    printf("making %s with bench_parquet (6M rows, zstd)\n", path);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not make %s\n", path);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "/tmp/floe_bench_lineitem.parquet";
    int repeat = argc > 2 ? atoi(argv[2]) : 3;
    int only = argc > 3 ? atoi(argv[3]) : 0;
    if (access(path, R_OK) != 0)
        make_file(argv[0], path);
    file_src f = {.fd = open(path, O_RDONLY)};
    struct stat st;
    if (f.fd < 0 || fstat(f.fd, &st) != 0) {
        perror(path);
        return 1;
    }
    floe__pq_source src = {.read_at = pread_at, .size = (uint64_t)st.st_size, .ctx = &f};
    floe__pq_reader *r = NULL;
    if (floe__pq_reader_open(&src, NULL, NULL, &r, NULL) != FLOE_OK) {
        fprintf(stderr, "%s: not a Parquet file floe reads\n", path);
        return 1;
    }
    const floe__schema *full = floe__pq_reader_schema(r);
    static const int key1[1] = {0}, key2[2] = {0, 3};
    int all[16];
    for (int i = 0; i < 16; i++)
        all[i] = i;
    floe__schema *p1 = projection(full, key1, 1), *p2 = projection(full, key2, 2);
    floe__schema *p16 = projection(full, all, 16);
    printf("%s: %llu rows, %zu row groups, %.1f MB\n", path,
           (unsigned long long)floe__pq_reader_num_rows(r), floe__pq_reader_num_row_groups(r),
           (double)st.st_size / 1e6);
    size_t group = 1;                  /* a whole row group per call */
    for (size_t i = 0; i < floe__pq_reader_num_row_groups(r); i++)
        if (floe__pq_reader_row_group(r, i).num_rows > group)
            group = floe__pq_reader_row_group(r, i).num_rows;
    const struct { const char *name; const floe__schema *proj; size_t max; } cases[5] = {
        {"l_orderkey, 64Ki rows a call", p1, 65536}, {"key (2 columns), 64Ki rows", p2, 65536},
        {"key (2 columns), a row group", p2, group}, {"all 16 columns, 64Ki rows", p16, 65536},
        {"all 16 columns, a row a call", p16, 0},
    };
    for (int k = 0; k < 5; k++)
        if (!only || only == k + 1)
            run_case(cases[k].name, &src, cases[k].proj, cases[k].max, repeat);
    const char *py = getenv("BENCH_PYARROW");
    if (!only && (!py || *py != '0')) {
        char cols[1024] = "[";
        for (int i = 0; i < 16; i++)
            snprintf(cols + strlen(cols), sizeof cols - strlen(cols), "%s'%s'", i ? ", " : "",
                     NAMES[i]);
        strcat(cols, "]");
        pyarrow_case(path, "l_orderkey", "['l_orderkey']", repeat);
        pyarrow_case(path, "key (2 columns)", "['l_orderkey', 'l_linenumber']", repeat);
        pyarrow_case(path, "all 16 columns", cols, repeat);
    }
    floe_schema_free(p1);
    floe_schema_free(p2);
    floe_schema_free(p16);
    floe__pq_reader_free(r);
    close(f.fd);
    return 0;
}
