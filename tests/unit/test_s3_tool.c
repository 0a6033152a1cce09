/*
 * test_s3_tool.c - a command-line driver of floe's S3 FileIO for the tests
 * against a real S3 server (tests/test_s3*.py).  Settings come from the
 * environment as for the floe program (AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL_S3, FLOE_CA_FILE),
 * then from -c JSON (floe__fileio_s3_configure properties, e.g.
 * {"floe.s3.part-size": "5242880"}).
 *
 *   test_s3_tool [-c JSON] put URI FILE [CHUNK [ABORT_AFTER]]
 *       stream FILE ("-": stdin) into URI in writes of CHUNK bytes
 *       (default 65536); with ABORT_AFTER, abort() the output once that
 *       many bytes are written instead of closing it
 *   test_s3_tool [-c JSON] get URI FILE      the whole object into FILE
 *   test_s3_tool [-c JSON] exists URI        prints true or false
 *   test_s3_tool [-c JSON] rm URI
 *   test_s3_tool [-c JSON] read-range URI OFF N [OFF N ...]
 *       open_input, then read_at per range: prints "size SIZE", then per
 *       range "OFF N HEX" (the bytes read, in lowercase hex)
 *   test_s3_tool [-c JSON] list URI
 *       prints "URI SIZE MTIME_MS" per object listed under URI, as
 *       reported (floe.s3.list-page-size in -c makes pages small)
 *
 * Failures print "ERROR <FLOE_CODE> retryable=<0|1>: <message>" on stderr;
 * the exit status is the floe result code.  Without arguments it runs a
 * short self-test through the same FileIO on local files (so `make unit`
 * can run it like every other unit-test program).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "catalog/catalog_internal.h"
#include "unit.h"

static int fail(floe_error *err, int rc)
{
    fprintf(stderr, "ERROR %s retryable=%d: %s\n", floe_code_name(rc),
            floe_error_retryable(err), floe_error_message(err));
    return rc;
}

static int open_io(const char *config, floe__fileio **io, floe_error *err)
{
    floe_connect_options o;
    floe__connect_resolve(NULL, &o);
    FLOE_FORWARD(floe__fileio_for_connect(&o, io, err));
    if (!config)
        return FLOE_OK;
    json_error_t je;
    json_t *j = json_loads(config, 0, &je);
    int rc = j ? floe__fileio_s3_configure(*io, j, err)
               : floe__err_set(err, FLOE_EINVAL, "bad -c JSON: %s", je.text);
    json_decref(j);
    if (rc != FLOE_OK) {
        floe__fileio_free(*io);
        *io = NULL;
    }
    return rc;
}

static int cmd_put(floe__fileio *io, const char *uri, const char *file, size_t chunk,
                   long long abort_after, floe_error *err)
{
    FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "rb");
    if (!f)
        return floe__err_set(err, FLOE_EIO, "cannot open %s", file);
    uint8_t *buf = floe__malloc(chunk);
    floe__output *o = NULL;
    int rc = buf ? floe__fileio_open_output(io, uri, &o, err) : FLOE_OOM(err);
    long long written = 0;
    while (rc == FLOE_OK) {
        if (abort_after >= 0 && written >= abort_after)
            break;
        size_t n = fread(buf, 1, chunk, f);
        if (n == 0)
            break;
        rc = floe__output_write(o, buf, n, err);
        written += (long long)n;
    }
    if (rc == FLOE_OK && ferror(f))
        rc = floe__err_set(err, FLOE_EIO, "reading %s", file);
    if (o && (rc != FLOE_OK || abort_after >= 0))
        o->abort(o);
    else if (o)
        rc = o->close(o, err);
    if (f != stdin)
        fclose(f);
    floe__free(buf);
    if (rc == FLOE_OK)
        printf("%s %lld bytes\n", abort_after >= 0 ? "aborted after" : "wrote", written);
    return rc;
}

static int cmd_get(floe__fileio *io, const char *uri, const char *file, floe_error *err)
{
    floe__buf b;
    floe__buf_init(&b, 0);
    int rc = floe__fileio_read_all(io, uri, &b, err);
    if (rc == FLOE_OK) {
        FILE *f = fopen(file, "wb");
        if (!f || (b.len && fwrite(b.data, 1, b.len, f) != b.len))
            rc = floe__err_set(err, FLOE_EIO, "cannot write %s", file);
        if (f && fclose(f) != 0 && rc == FLOE_OK)
            rc = floe__err_set(err, FLOE_EIO, "cannot write %s", file);
    }
    if (rc == FLOE_OK)
        printf("read %zu bytes\n", b.len);
    floe__buf_free(&b);
    return rc;
}

static int cmd_read_range(floe__fileio *io, const char *uri, int n_args, char **args,
                          floe_error *err)
{
    FLOE_RETURN_IF(n_args % 2 != 0, err, FLOE_EINVAL, "read-range wants OFF N pairs");
    floe__input *in = NULL;
    FLOE_FORWARD(floe__fileio_open_input(io, uri, &in, err));
    printf("size %llu\n", (unsigned long long)in->size);
    int rc = FLOE_OK;
    for (int i = 0; rc == FLOE_OK && i < n_args; i += 2) {
        uint64_t off = strtoull(args[i], NULL, 10);
        size_t n = strtoull(args[i + 1], NULL, 10);
        uint8_t *buf = floe__malloc(n ? n : 1);
        rc = buf ? floe__input_read_at(in, off, n, buf, err) : FLOE_OOM(err);
        if (rc == FLOE_OK) {
            printf("%llu %zu ", (unsigned long long)off, n);
            for (size_t j = 0; j < n; j++)
                printf("%02x", buf[j]);
            printf("\n");
        }
        floe__free(buf);
    }
    floe__input_close(in);
    return rc;
}

static int print_listed(void *ctx, const floe__listed *obj, floe_error *err)
{
    (void)ctx;
    (void)err;
    printf("%s %llu %lld\n", obj->uri, (unsigned long long)obj->size, (long long)obj->mtime_ms);
    return FLOE_OK;
}

static int run(int argc, char **argv, floe_error *err)
{
    const char *config = NULL;
    if (argc >= 3 && strcmp(argv[1], "-c") == 0) {
        config = argv[2];
        argv += 2;
        argc -= 2;
    }
    if (argc < 3)
        return floe__err_set(err, FLOE_EINVAL, "usage: see tests/unit/test_s3_tool.c");
    floe__fileio *io;
    FLOE_FORWARD(open_io(config, &io, err));
    const char *cmd = argv[1], *uri = argv[2];
    int rc;
    if (strcmp(cmd, "put") == 0 && argc >= 4) {
        size_t chunk = argc >= 5 ? strtoull(argv[4], NULL, 10) : 65536;
        long long abort_after = argc >= 6 ? strtoll(argv[5], NULL, 10) : -1;
        rc = chunk ? cmd_put(io, uri, argv[3], chunk, abort_after, err)
                   : floe__err_set(err, FLOE_EINVAL, "CHUNK must be positive");
    } else if (strcmp(cmd, "get") == 0 && argc >= 4) {
        rc = cmd_get(io, uri, argv[3], err);
    } else if (strcmp(cmd, "exists") == 0) {
        bool e = false;
        rc = floe__fileio_exists(io, uri, &e, err);
        if (rc == FLOE_OK)
            printf("%s\n", e ? "true" : "false");
    } else if (strcmp(cmd, "rm") == 0) {
        rc = floe__fileio_remove(io, uri, err);
    } else if (strcmp(cmd, "read-range") == 0) {
        rc = cmd_read_range(io, uri, argc - 3, argv + 3, err);
    } else if (strcmp(cmd, "list") == 0) {
        rc = floe__fileio_list(io, uri, print_listed, NULL, err);
    } else {
        rc = floe__err_set(err, FLOE_EINVAL, "unknown command %s", cmd);
    }
    floe__fileio_free(io);
    return rc;
}

/* ---- self-test: the same FileIO on local files ------------------------------- */

static int count_listed(void *ctx, const floe__listed *obj, floe_error *err)
{
    (void)err;
    *(size_t *)ctx += obj->size == 5 && strstr(obj->uri, "/sub/x.bin") != NULL;
    return FLOE_OK;
}

TEST(local_uris_go_to_local_files)
{
    char dir[] = "/tmp/floe-s3tool-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char *path = floe__sprintf("file://%s/sub/x.bin", dir);
    floe__fileio *io = NULL;
    floe_connect_options o;
    floe_connect_options_init(&o, sizeof o);
    o.s3_endpoint = "http://127.0.0.1:1";        /* never contacted */
    CHECK_EQ_INT(floe__fileio_for_connect(&o, &io, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__fileio_write_all(io, path, "hello", 5, NULL), FLOE_OK);
    bool e = false;
    CHECK_EQ_INT(floe__fileio_exists(io, path, &e, NULL), FLOE_OK);
    CHECK(e);
    floe__buf b;
    floe__buf_init(&b, 0);
    CHECK_EQ_INT(floe__fileio_read_all(io, path, &b, NULL), FLOE_OK);
    CHECK_EQ_INT(b.len, 5);
    CHECK(b.len == 5 && memcmp(b.data, "hello", 5) == 0);
    floe__buf_free(&b);
    floe__input *in = NULL;                       /* random access and listing, locally */
    CHECK_EQ_INT(floe__fileio_open_input(io, path, &in, NULL), FLOE_OK);
    uint8_t two[2];
    CHECK(in->size == 5 && floe__input_read_at(in, 3, 2, two, NULL) == FLOE_OK);
    CHECK(memcmp(two, "lo", 2) == 0);
    floe__input_close(in);
    char *top = floe__sprintf("file://%s", dir);
    size_t seen = 0;
    CHECK_EQ_INT(floe__fileio_list(io, top, count_listed, &seen, NULL), FLOE_OK);
    CHECK_EQ_INT(seen, 1);
    floe__free(top);
    CHECK_EQ_INT(floe__fileio_sync(io, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__fileio_remove(io, path, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__fileio_remove(io, path, NULL), FLOE_ENOTFOUND);
    floe__fileio_free(io);
    char *sub = floe__sprintf("%s/sub", dir);
    rmdir(sub);
    rmdir(dir);
    floe__free(sub);
    floe__free(path);
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        floe_error *err = floe_error_new();
        int rc = run(argc, argv, err);
        if (rc != FLOE_OK)
            fail(err, rc);
        floe_error_free(err);
        return rc;
    }
    RUN(local_uris_go_to_local_files);
    return UNIT_DONE();
}
