/*
 * test_parquet_read_tool.c - drives floe's Parquet reader for the Python
 * cross-checks against pyarrow (tests/test_parquet_reader.py).  Not a unit
 * test itself: the test runner skips programs ending in "_tool".
 *
 *   test_parquet_read_tool read FILE [SCHEMA.json] [--batch N] [--max-page N]
 *       every row as a line {"pos": P, "row": {...}}, the row in floe's JSON
 *       encodings (floe__datum_to_json), read with the Iceberg schema in
 *       SCHEMA.json as the projection, or the file's own schema; --batch
 *       reads N rows per call (floe__pq_reader_next_batch)
 *   test_parquet_read_tool read-deletes FILE [--batch N]
 *       the same with Iceberg's position delete projection: file_path
 *       (string, id 2147483546) and pos (long, id 2147483545), ids Iceberg
 *       schema JSON in floe cannot carry
 *   test_parquet_read_tool schema FILE
 *       the file's schema as Iceberg JSON (what the reader derives)
 *   test_parquet_read_tool info FILE
 *       {"rows": N, "row_groups": [[first_row, rows], ...]}
 *
 * The file is read through a pread source, the way a reader of local files
 * would.  Failures print the code name and message on stderr and exit 1.
 */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parquet/parquet_internal.h"

int main(int argc, char **argv);

typedef struct file_src {
    int fd;
} file_src;

static int pread_at(void *ctx, uint64_t off, size_t len, uint8_t *dst, floe_error *err)
{
    file_src *f = ctx;
    while (len) {
        ssize_t n = pread(f->fd, dst, len, (off_t)off);
        if (n <= 0)
            return floe__err_set(err, FLOE_EIO, "pread at %llu failed",
                                 (unsigned long long)off);
        dst += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return FLOE_OK;
}

static int fail(floe_error *err)
{
    fprintf(stderr, "%s: %s\n", floe_code_name(floe_error_code(err)), floe_error_message(err));
    floe_error_free(err);
    return 1;
}

static int load_schema(const char *path, floe__schema **out, floe_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return floe__err_set(err, FLOE_EIO, "cannot open %s", path);
    floe__buf b;
    floe__buf_init(&b, 0);
    char chunk[4096];
    size_t n;
    int rc = FLOE_OK;
    while (rc == FLOE_OK && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        rc = floe__buf_append(&b, chunk, n, err);
    fclose(f);
    if (rc == FLOE_OK)
        rc = floe__schema_from_json((const char *)b.data, b.len, out, err);
    floe__buf_free(&b);
    return rc;
}

static int delete_schema(floe__schema **out, floe_error *err)
{
    static const struct { const char *name; int32_t id; floe__kind kind; } cols[2] = {
        {"file_path", 2147483546, FLOE_K_STRING}, {"pos", 2147483545, FLOE_K_LONG}};
    floe__schema *s;
    FLOE_FORWARD(floe__schema_new(&s, err));
    s->root.children = floe__calloc(2, sizeof *s->root.children);
    for (int i = 0; s->root.children && i < 2; i++) {
        floe__field *f = &s->root.children[i];
        f->name = floe__strdup(cols[i].name);
        f->id = cols[i].id;
        f->kind = cols[i].kind;
        f->required = true;
        s->root.n_children++;
    }
    s->highest_id = 2147483546;
    *out = s;
    return s->root.n_children == 2 ? FLOE_OK : FLOE_OOM(err);
}

static int print_rows(floe__pq_reader *r, size_t batch, floe_error *err)
{
    const floe__schema *s = floe__pq_reader_schema(r);
    floe__buf rows, js;
    floe__buf_init(&rows, 0);
    floe__buf_init(&js, 0);
    size_t *ends = malloc((batch ? batch : 1) * sizeof *ends);
    int rc = FLOE_OK;
    for (;;) {
        size_t n = 0;
        uint64_t first = 0;
        rows.len = 0;
        rc = floe__pq_reader_next_batch(r, &rows, ends, batch ? batch : 1, &n, &first, err);
        if (rc || n == 0)
            break;
        for (size_t i = 0; i < n && rc == FLOE_OK; i++) {
            size_t start = i ? ends[i - 1] : 0;
            js.len = 0;
            rc = floe__datum_to_json(s, rows.data + start, ends[i] - start, &js, err);
            if (rc == FLOE_OK)
                printf("{\"pos\": %llu, \"row\": %.*s}\n", (unsigned long long)(first + i),
                       (int)js.len, (const char *)js.data);
        }
        if (rc)
            break;
    }
    free(ends);
    floe__buf_free(&rows);
    floe__buf_free(&js);
    return rc;
}

static int print_schema(floe__pq_reader *r, floe_error *err)
{
    json_t *j = NULL;
    FLOE_FORWARD(floe__schema_to_jansson(floe__pq_reader_schema(r), &j, err));
    char *text = json_dumps(j, JSON_INDENT(1));
    printf("%s\n", text ? text : "null");
    free(text);
    json_decref(j);
    return FLOE_OK;
}

static void print_info(floe__pq_reader *r)
{
    printf("{\"rows\": %llu, \"row_groups\": [", (unsigned long long)floe__pq_reader_num_rows(r));
    for (size_t i = 0; i < floe__pq_reader_num_row_groups(r); i++) {
        floe__pq_row_group g = floe__pq_reader_row_group(r, i);
        printf("%s[%llu, %llu]", i ? ", " : "", (unsigned long long)g.first_row,
               (unsigned long long)g.num_rows);
    }
    printf("]}\n");
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s read|read-deletes|schema|info FILE [SCHEMA.json] "
                "[--batch N] [--max-page N]\n", argv[0]);
        return 2;
    }
    const char *cmd = argv[1], *schema_path = NULL;
    size_t batch = 0;
    floe__pq_read_options o;
    floe__pq_read_options_init(&o);
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc)
            batch = (size_t)strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--max-page") == 0 && i + 1 < argc)
            o.max_page = (size_t)strtoull(argv[++i], NULL, 10);
        else
            schema_path = argv[i];
    }
    floe_error *err = floe_error_new();
    file_src f = {.fd = open(argv[2], O_RDONLY)};
    struct stat st;
    if (f.fd < 0 || fstat(f.fd, &st) != 0) {
        perror(argv[2]);
        return 1;
    }
    floe__schema *proj = NULL;
    if (schema_path && load_schema(schema_path, &proj, err) != FLOE_OK)
        return fail(err);
    if (strcmp(cmd, "read-deletes") == 0 && delete_schema(&proj, err) != FLOE_OK)
        return fail(err);
    floe__pq_source src = {.read_at = pread_at, .size = (uint64_t)st.st_size, .ctx = &f};
    floe__pq_reader *r = NULL;
    int rc = floe__pq_reader_open(&src, proj, &o, &r, err);
    if (rc == FLOE_OK && strncmp(cmd, "read", 4) == 0)
        rc = print_rows(r, batch, err);
    else if (rc == FLOE_OK && strcmp(cmd, "schema") == 0)
        rc = print_schema(r, err);
    else if (rc == FLOE_OK)
        print_info(r);
    floe__pq_reader_free(r);
    floe_schema_free(proj);
    close(f.fd);
    if (rc)
        return fail(err);
    floe_error_free(err);
    return 0;
}
