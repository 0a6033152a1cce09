/*
 * bench_parquet.c - how fast floe writes a lineitem-like table to Parquet.
 *
 *   bench_parquet [ROWS] [CODEC] [OUT.parquet] [REPEAT]
 *       ROWS   rows to write (default 6000000, TPC-H SF1)
 *       CODEC  zstd | snappy | gzip | none (default zstd)
 *       OUT    where to write (default /tmp/floe_bench_lineitem.parquet)
 *       REPEAT write the file this many times (default 1; for profiling)
 *   BENCH_NULLABLE=1 in the environment makes every column nullable, with
 *   about 1 value in 20 null in the l_comment, l_shipmode and l_discount
 *   columns (the shape of most CDC tables: nullable, mostly present).
 *
 * The rows (16 columns: keys, decimal(12,2) amounts, dates, one-letter flags,
 * low-cardinality strings and 10..43-character comments) are generated in
 * floe's row format with a fixed seed before the clock starts; the timed part
 * is floe__pq_writer_new .. floe__pq_writer_close into a plain file (no
 * fsync, like the peers in bench_parquet_peers.py).  Prints rows/s and bytes,
 * by wall clock and by process CPU time (the CPU figure is the one to trust
 * on a busy machine: the writer is single-threaded).
 */
#include <errno.h>
#include <time.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "parquet/parquet_internal.h"

/* ---- schema ------------------------------------------------------------------------- */

static const struct {
    const char *name;
    floe__kind kind;
} COLS[16] = {
    {"l_orderkey", FLOE_K_LONG},       {"l_partkey", FLOE_K_LONG},
    {"l_suppkey", FLOE_K_LONG},        {"l_linenumber", FLOE_K_INT},
    {"l_quantity", FLOE_K_DECIMAL},    {"l_extendedprice", FLOE_K_DECIMAL},
    {"l_discount", FLOE_K_DECIMAL},    {"l_tax", FLOE_K_DECIMAL},
    {"l_returnflag", FLOE_K_STRING},   {"l_linestatus", FLOE_K_STRING},
    {"l_shipdate", FLOE_K_DATE},       {"l_commitdate", FLOE_K_DATE},
    {"l_receiptdate", FLOE_K_DATE},    {"l_shipinstruct", FLOE_K_STRING},
    {"l_shipmode", FLOE_K_STRING},     {"l_comment", FLOE_K_STRING},
};

static bool nullable;

static floe__schema *make_schema(void)
{
    floe__schema *s = calloc(1, sizeof *s);
    floe__field *f = calloc(16, sizeof *f);
    for (int i = 0; i < 16; i++) {
        f[i].name = (char *)COLS[i].name;
        f[i].id = i + 1;
        f[i].required = !nullable;
        f[i].kind = COLS[i].kind;
        f[i].precision = 12;
        f[i].scale = 2;
    }
    s->root.name = (char *)"";
    s->root.kind = FLOE_K_STRUCT;
    s->root.required = true;
    s->root.n_children = 16;
    s->root.children = f;
    s->highest_id = 16;
    return s;
}

/* ---- data ----------------------------------------------------------------------------- */

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)((rng >> 11) % n);
}

typedef struct rows {
    uint8_t *data;
    size_t len, cap;
    size_t *off;          /* row i is data[off[i] .. off[i+1]) */
} rows;

static void put(rows *r, const void *p, size_t n)
{
    if (r->len + n > r->cap) {
        r->cap = r->cap ? r->cap * 2 : (1 << 20);
        r->data = realloc(r->data, r->cap);
        if (!r->data) {
            perror("realloc");
            exit(1);
        }
    }
    memcpy(r->data + r->len, p, n);
    r->len += n;
}

static void put_i64(rows *r, int64_t v) { put(r, "\x01", 1); put(r, &v, 8); }
static void put_i32(rows *r, int32_t v) { put(r, "\x01", 1); put(r, &v, 4); }
static void put_dec(rows *r, int64_t v)
{
    __int128 x = v;
    put(r, "\x01", 1);
    put(r, &x, 16);
}
static void put_str(rows *r, const char *s, uint32_t n)
{
    put(r, "\x01", 1);
    put(r, &n, 4);
    put(r, s, n);
}

static const char *WORDS[] = {
    "furiously", "carefully", "quickly", "slyly", "blithely", "final", "regular", "express",
    "pending", "ironic", "bold", "even", "special", "unusual", "silent", "fluffy", "requests",
    "deposits", "packages", "accounts", "instructions", "theodolites", "pinto", "beans",
    "foxes", "ideas", "dependencies", "excuses", "platelets", "asymptotes", "courts", "dolphins",
    "across", "after", "against", "along", "among", "around", "above", "according", "to",
    "the", "haggle", "nag", "sleep", "wake", "cajole", "detect", "integrate", "use",
};

static void comment(rows *r)
{
    char buf[64];
    uint32_t want = 10 + rnd(34), n = 0;
    while (n < want) {
        const char *w = WORDS[rnd(sizeof WORDS / sizeof WORDS[0])];
        size_t l = strlen(w);
        if (n)
            buf[n++] = ' ';
        memcpy(buf + n, w, l);
        n += (uint32_t)l;
    }
    if (n > want)
        n = want;
    put_str(r, buf, n);
}

static void generate(rows *r, size_t n)
{
    static const char *instruct[] = {"DELIVER IN PERSON", "COLLECT COD", "NONE",
                                     "TAKE BACK RETURN"};
    static const char *mode[] = {"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"};
    static const char *flags = "RAN", *status = "OF";
    r->off = malloc((n + 1) * sizeof *r->off);
    int64_t order = 1;
    int32_t line = 1, lines_in_order = 1 + (int32_t)rnd(7);
    for (size_t i = 0; i < n; i++) {
        r->off[i] = r->len;
        if (line > lines_in_order) {
            order += 1 + rnd(4) / 3 * 4;   /* keys are sparse, as in dbgen */
            line = 1;
            lines_in_order = 1 + (int32_t)rnd(7);
        }
        int64_t part = 1 + rnd(200000), qty = 1 + rnd(50);
        int64_t price = 90000 + (part / 10) % 20001 + 100 * (part % 1000);
        int32_t ship = 8036 + (int32_t)rnd(2526);   /* 1992-01-02 .. 1998-12-01 */
        put_i64(r, order);
        put_i64(r, part);
        put_i64(r, 1 + rnd(10000));
        put_i32(r, line++);
        put_dec(r, qty * 100);
        put_dec(r, qty * price);
        if (nullable && rnd(20) == 0)
            put(r, "\x00", 1);
        else
            put_dec(r, rnd(11));
        put_dec(r, rnd(9));
        put_str(r, flags + rnd(3), 1);
        put_str(r, status + rnd(2), 1);
        put_i32(r, ship);
        put_i32(r, ship - 30 + (int32_t)rnd(61));
        put_i32(r, ship + 1 + (int32_t)rnd(30));
        const char *in = instruct[rnd(4)], *md = mode[rnd(7)];
        put_str(r, in, (uint32_t)strlen(in));
        if (nullable && rnd(20) == 0)
            put(r, "\x00", 1);
        else
            put_str(r, md, (uint32_t)strlen(md));
        if (nullable && rnd(20) == 0)
            put(r, "\x00", 1);
        else
            comment(r);
    }
    r->off[n] = r->len;
}

/* ---- a plain file output (no fsync, no rename) ---------------------------------------- */

typedef struct file_out {
    floe__output base;
    int fd;
    floe__buf pending;
} file_out;

static int flush_out(file_out *f, floe_error *err)
{
    size_t done = 0;
    while (done < f->pending.len) {
        ssize_t w = write(f->fd, f->pending.data + done, f->pending.len - done);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return floe__err_set(err, FLOE_EIO, "write: %s", strerror(errno));
        }
        done += (size_t)w;
    }
    f->pending.len = 0;
    return FLOE_OK;
}

static int fo_write(floe__output *o, const void *p, size_t n, floe_error *err)
{
    /* like io/local.c: small writes gathered, large ones written through */
    file_out *f = (file_out *)o;
    if (f->pending.len + n > (1u << 20)) {
        FLOE_FORWARD(flush_out(f, err));
        if (n >= (1u << 20)) {
            floe__buf tmp = {.data = (uint8_t *)(uintptr_t)p, .len = n, .cap = n};
            floe__buf saved = f->pending;
            f->pending = tmp;
            int rc = flush_out(f, err);
            f->pending = saved;
            return rc;
        }
    }
    return floe__buf_append(&f->pending, p, n, err);
}

static int fo_close(floe__output *o, floe_error *err)
{
    file_out *f = (file_out *)o;
    int rc = flush_out(f, err);
    close(f->fd);
    floe__buf_free(&f->pending);
    free(f);
    return rc;
}

static void fo_abort(floe__output *o)
{
    file_out *f = (file_out *)o;
    close(f->fd);
    floe__buf_free(&f->pending);
    free(f);
}

static floe__output *file_output(const char *path)
{
    file_out *f = calloc(1, sizeof *f);
    f->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (f->fd < 0) {
        perror(path);
        exit(1);
    }
    floe__buf_init(&f->pending, 0);
    f->base.write = fo_write;
    f->base.close = fo_close;
    f->base.abort = fo_abort;
    return &f->base;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int write_once(const floe__schema *s, const floe_parquet_options *o, const rows *r,
                      size_t n, const char *codec, const char *path)
{
    floe_error *err = floe_error_new();
    uint64_t t0 = floe__monotonic_ns();
    double c0 = cpu_seconds();
    floe__pq_writer *w = NULL;
    int rc = floe__pq_writer_new(s, o, file_output(path), &w, err);
    for (size_t i = 0; rc == FLOE_OK && i < n; i++) {
        rc = floe__pq_write_row(w, r->data + r->off[i], r->off[i + 1] - r->off[i], err);
        if (rc)
            floe__pq_writer_abort(w);
    }
    floe__file_metrics m;
    if (rc == FLOE_OK)
        rc = floe__pq_writer_close(w, &m, err);
    uint64_t t1 = floe__monotonic_ns();
    double cpu = cpu_seconds() - c0;
    if (rc) {
        fprintf(stderr, "failed: %s\n", floe_error_message(err));
        return 1;
    }
    double secs = (double)(t1 - t0) / 1e9;
    printf("floe %s: %zu rows, wall %.3f s (%.0f rows/s), cpu %.3f s (%.0f rows/s), "
           "%llu bytes (%.1f MB), %zu row groups, row data %.1f MB\n",
           codec, n, secs, (double)n / secs, cpu, (double)n / cpu,
           (unsigned long long)m.file_size, (double)m.file_size / 1e6, m.n_splits,
           (double)r->len / 1e6);
    floe__file_metrics_free(&m);
    floe_error_free(err);
    return 0;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 6000000;
    const char *codec = argc > 2 ? argv[2] : "zstd";
    const char *path = argc > 3 ? argv[3] : "/tmp/floe_bench_lineitem.parquet";
    floe_parquet_options o;
    floe_parquet_options_init(&o, sizeof o);
    int c = floe_compression_from_name(codec);
    if (c < 0) {
        fprintf(stderr, "unknown codec %s\n", codec);
        return 2;
    }
    o.compression = (floe_compression)c;

    const char *nv = getenv("BENCH_NULLABLE");
    nullable = nv && *nv == '1';
    floe__schema *s = make_schema();
    rows r = {0};
    generate(&r, n);

    int repeat = argc > 4 ? atoi(argv[4]) : 1;
    for (int k = 0; k < repeat; k++)
        if (write_once(s, &o, &r, n, codec, path))
            return 1;
    free(r.data);
    free(r.off);
    free(s->root.children);
    free(s);
    return 0;
}
