/* test_local_io.c - atomic local writes: nothing visible until close. */
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io_internal.h"
#include "unit.h"

static char dir[256];

static int count_entries(const char *path)
{
    DIR *d = opendir(path);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (e->d_name[0] != '.' || (e->d_name[1] && e->d_name[1] != '.'))
            n++;
    if (d)
        closedir(d);
    return n;
}

TEST(write_then_close_is_visible)
{
    char path[512];
    snprintf(path, sizeof path, "file://%s/a/b/obj.bin", dir);
    floe__output *o = NULL;
    CHECK_EQ_INT(floe__local_output_open(path, &o, NULL), FLOE_OK);
    CHECK_EQ_INT(floe__output_write(o, "hello", 5, NULL), FLOE_OK);
    struct stat st;
    CHECK(stat(floe__local_path(path), &st) != 0);          /* not yet visible */
    CHECK_EQ_INT(o->close(o, NULL), FLOE_OK);
    floe__buf b;
    floe__buf_init(&b, 0);
    CHECK_EQ_INT(floe__local_read_all(path, &b, NULL), FLOE_OK);
    CHECK(b.len == 5 && memcmp(b.data, "hello", 5) == 0);
    floe__buf_free(&b);
    char sub[512];
    snprintf(sub, sizeof sub, "%s/a/b", dir);
    CHECK_EQ_INT(count_entries(sub), 1);                    /* no temp file left */
}

TEST(abort_leaves_nothing)
{
    char path[512], sub[512];
    snprintf(path, sizeof path, "%s/c/obj.bin", dir);
    snprintf(sub, sizeof sub, "%s/c", dir);
    floe__output *o = NULL;
    CHECK_EQ_INT(floe__local_output_open(path, &o, NULL), FLOE_OK);
    size_t n = 3 << 20;                                   /* crosses the write chunk */
    uint8_t *big = malloc(n);
    memset(big, 7, n);
    CHECK_EQ_INT(floe__output_write(o, big, n, NULL), FLOE_OK);
    free(big);
    o->abort(o);
    CHECK_EQ_INT(count_entries(sub), 0);
}

TEST(read_missing_is_not_found)
{
    floe__buf b;
    floe__buf_init(&b, 0);
    floe_error *e = floe_error_new();
    CHECK_EQ_INT(floe__local_read_all("/nonexistent/floe/x", &b, e), FLOE_ENOTFOUND);
    CHECK(strstr(floe_error_message(e), "/nonexistent/floe/x") != NULL);
    floe_error_free(e);
    floe__buf_free(&b);
}

TEST(open_in_unwritable_place_fails_cleanly)
{
    floe__output *o = NULL;
    floe_error *e = floe_error_new();
    CHECK_EQ_INT(floe__local_output_open("/proc/floe-test/x.bin", &o, e), FLOE_EIO);
    CHECK(o == NULL);
    CHECK(strstr(floe_error_message(e), "/proc/floe-test") != NULL);
    floe_error_free(e);
}

int main(void)
{
    unit_make_tmp(dir, sizeof dir, "io");
    RUN(write_then_close_is_visible);
    RUN(abort_leaves_nothing);
    RUN(read_missing_is_not_found);
    RUN(open_in_unwritable_place_fails_cleanly);
    unit_remove_tmp(dir);
    return UNIT_DONE();
}
