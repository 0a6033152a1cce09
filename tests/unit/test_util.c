/* test_util.c - errors, buffers, arena, varints, base64, utf8, uuid, paths. */
#include <stdlib.h>

#include "unit.h"
#include "util/util_internal.h"

TEST(error_chain)
{
    floe_error *e = floe_error_new();
    CHECK_EQ_INT(floe_error_code(e), FLOE_OK);
    CHECK_EQ_STR(floe_error_message(e), "");
    CHECK_EQ_INT(floe__err_set(e, FLOE_EINPUT, "bad value %d", 7), FLOE_EINPUT);
    CHECK_EQ_INT(floe__err_wrap(e, FLOE_EIO, "line %d", 3), FLOE_EINPUT);
    CHECK_EQ_INT(floe__err_wrap(e, FLOE_OK, "file %s", "x"), FLOE_EINPUT);
    CHECK_EQ_STR(floe_error_message(e), "file x: line 3: bad value 7");
    CHECK_EQ_INT(floe_error_depth(e), 3);
    CHECK_EQ_STR(floe_error_frame(e, 2), "bad value 7");
    CHECK(!floe_error_retryable(e));
    floe__err_set(e, FLOE_ECONFLICT, "lost race");
    CHECK(floe_error_retryable(e));
    CHECK_EQ_STR(floe_error_message(e), "lost race");
    CHECK_EQ_STR(floe_code_name(FLOE_EFENCED), "FLOE_EFENCED");
    CHECK_EQ_STR(floe_code_string(FLOE_ENOMEM), "out of memory");
    for (int i = 0; i < 100; i++)                  /* deep chains stay bounded */
        floe__err_wrap(e, FLOE_OK, "ctx %d", i);
    CHECK(floe_error_depth(e) <= 32);
    CHECK_EQ_STR(floe_error_frame(e, 0), "ctx 99");
    floe_error_free(e);
    CHECK_EQ_INT(floe__err_set(NULL, FLOE_EIO, "ignored"), FLOE_EIO);
}

/* A layer that knows better reclassifies a failure: the code changes, the
 * cause chain stays, and retryability follows the new code's class. */
TEST(error_recode_and_classes)
{
    floe_error *e = floe_error_new();
    floe__err_set(e, FLOE_ECATALOG, "HTTP 400");
    CHECK(!floe_error_retryable(e));
    CHECK_EQ_INT(floe__err_recode(e, FLOE_EUNKNOWN_OUTCOME, "cannot tell"),
                 FLOE_EUNKNOWN_OUTCOME);
    CHECK_EQ_INT(floe_error_code(e), FLOE_EUNKNOWN_OUTCOME);
    CHECK_EQ_STR(floe_error_message(e), "cannot tell: HTTP 400");
    CHECK(floe_error_retryable(e));
    CHECK_EQ_INT(floe__err_wrap(e, FLOE_ECATALOG, "outer"), FLOE_EUNKNOWN_OUTCOME);
    floe_error_free(e);
    CHECK_EQ_INT(floe_code_class(FLOE_EUNKNOWN_OUTCOME), FLOE_FAIL_UNKNOWN);
    CHECK_EQ_INT(floe_code_class(FLOE_ECONFLICT), FLOE_FAIL_RETRY);
    CHECK_EQ_INT(floe_code_class(FLOE_ENET), FLOE_FAIL_RETRY);
    CHECK_EQ_INT(floe_code_class(FLOE_ETLS), FLOE_FAIL_FINAL);
    CHECK_EQ_INT(floe_code_class(FLOE_EFENCED), FLOE_FAIL_FINAL);
    CHECK_EQ_INT(floe_code_class(12345), FLOE_FAIL_FINAL);
    CHECK_EQ_INT(floe__err_recode(NULL, FLOE_EIO, "x"), FLOE_EIO);
}

TEST(urls_for_messages_keep_no_secrets)
{
    char out[128];
    floe__url_for_message("https://user:pw@host:81/a/b?token=s#f", out, sizeof out);
    CHECK_EQ_STR(out, "https://host:81/a/b");
    floe__url_for_message("http://host/p", out, sizeof out);
    CHECK_EQ_STR(out, "http://host/p");
    floe__url_for_message("host/x@y?q", out, sizeof out);   /* '@' past the host stays */
    CHECK_EQ_STR(out, "host/x@y");
    floe__url_for_message("https://a@b", out, 6);
    CHECK_EQ_STR(out, "https");
}

TEST(buffer_limit)
{
    floe__buf b;
    floe__buf_init(&b, 100);
    floe_error *e = floe_error_new();
    CHECK_EQ_INT(floe__buf_append(&b, "0123456789", 10, e), FLOE_OK);
    CHECK_EQ_INT(floe__buf_printf(&b, e, "%05d", 42), FLOE_OK);
    CHECK_EQ_INT(b.len, 15);
    CHECK_MEM(b.data, "012345678900042", 15);
    uint8_t big[100] = {0};
    CHECK_EQ_INT(floe__buf_append(&b, big, 90, e), FLOE_ELIMIT);
    CHECK_EQ_INT(b.len, 15);
    floe__buf_free(&b);
    floe_error_free(e);
}

TEST(alloc_fault_injection)
{
    floe__alloc_fail_after(1);
    void *a = floe__malloc(8);
    void *b = floe__malloc(8);
    void *c = floe__malloc(8);
    CHECK(a != NULL);
    CHECK(b == NULL);
    CHECK(c != NULL);
    floe__free(a);
    floe__free(c);
    floe__buf buf;
    floe__buf_init(&buf, 0);
    floe__alloc_fail_after(0);
    CHECK_EQ_INT(floe__buf_append(&buf, "x", 1, NULL), FLOE_ENOMEM);
    floe__buf_free(&buf);
}

TEST(arena)
{
    floe__arena *a = floe__arena_new(64);
    char *s = floe__arena_strndup(a, "hello", 5);
    CHECK_EQ_STR(s, "hello");
    void *big = floe__arena_alloc(a, 1000);           /* larger than a block */
    CHECK(big != NULL);
    CHECK(((uintptr_t)big & 15) == 0);
    CHECK(floe__arena_used(a) >= 1000);
    floe__arena_reset(a);
    CHECK_EQ_INT(floe__arena_used(a), 0);
    CHECK(floe__arena_alloc(a, 10) != NULL);
    floe__arena_free(a);
    floe__arena_free(NULL);
}

TEST(varints)
{
    uint8_t b[10];
    uint64_t vals[] = {0, 1, 127, 128, 300, UINT32_MAX, UINT64_MAX};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        size_t n = floe__put_uvarint(b, vals[i]);
        uint64_t back = 0;
        CHECK_EQ_INT(floe__get_uvarint(b, b + n, &back), n);
        CHECK(back == vals[i]);
        CHECK_EQ_INT(floe__get_uvarint(b, b + n - 1, &back), 0);   /* truncated */
    }
    CHECK_EQ_INT(floe__put_uvarint(b, 300), 2);
    CHECK(b[0] == 0xAC && b[1] == 0x02);
    CHECK(floe__zigzag64(-1) == 1 && floe__zigzag64(1) == 2);
    CHECK(floe__unzigzag64(floe__zigzag64(INT64_MIN)) == INT64_MIN);
}

TEST(base64)
{
    const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    const char *enc[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (int i = 0; i < 7; i++) {
        floe__buf b;
        floe__buf_init(&b, 0);
        CHECK_EQ_INT(floe__base64_encode((const uint8_t *)plain[i], strlen(plain[i]), &b, NULL),
                     FLOE_OK);
        CHECK(b.len == strlen(enc[i]) && (b.len == 0 || memcmp(b.data, enc[i], b.len) == 0));
        floe__buf_reset(&b);
        CHECK_EQ_INT(floe__base64_decode(enc[i], strlen(enc[i]), &b, NULL), FLOE_OK);
        CHECK(b.len == strlen(plain[i]) && (b.len == 0 || memcmp(b.data, plain[i], b.len) == 0));
        floe__buf_free(&b);
    }
    floe__buf b;
    floe__buf_init(&b, 0);
    CHECK_EQ_INT(floe__base64_decode("Zm9", 3, &b, NULL), FLOE_EINPUT);
    CHECK_EQ_INT(floe__base64_decode("Zm9!", 4, &b, NULL), FLOE_EINPUT);
    floe__buf_free(&b);
}

TEST(utf8)
{
    CHECK(floe__utf8_valid((const uint8_t *)"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80", 15));
    CHECK(!floe__utf8_valid((const uint8_t *)"\xc3", 1));              /* truncated */
    CHECK(!floe__utf8_valid((const uint8_t *)"\xc0\xaf", 2));          /* overlong */
    CHECK(!floe__utf8_valid((const uint8_t *)"\xed\xa0\x80", 3));      /* surrogate */
    CHECK(!floe__utf8_valid((const uint8_t *)"\xf4\x90\x80\x80", 4));  /* > U+10FFFF */
}

TEST(uuid)
{
    uint8_t u[16], v[16];
    char s[37];
    CHECK_EQ_INT(floe__uuid_random(u, NULL), FLOE_OK);
    CHECK((u[6] >> 4) == 4 && (u[8] & 0xC0) == 0x80);
    floe__uuid_format(u, s);
    CHECK_EQ_INT(strlen(s), 36);
    CHECK_EQ_INT(floe__uuid_parse(s, 36, v), 0);
    CHECK_MEM(u, v, 16);
    CHECK_EQ_INT(floe__uuid_parse("not-a-uuid", 10, v), -1);
    CHECK_EQ_INT(floe__uuid_parse("123e4567-e89b-12d3-a456-42661417400G", 36, v), -1);
}

TEST(path_join)
{
    struct { const char *a, *b, *want; } cases[] = {
        {"s3://bucket/wh/", "data", "s3://bucket/wh/data"},
        {"s3://bucket/wh///", "/data", "s3://bucket/wh/data"},
        {"file:///tmp/wh", "t/data/", "file:///tmp/wh/t/data/"},
        {"file:///", "x", "file:///x"},
        {"s3://", "bucket", "s3://bucket"},
        {"/tmp/wh/", "x", "/tmp/wh/x"},
        {"rel", "x", "rel/x"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *j = floe__path_join(cases[i].a, cases[i].b);
        CHECK_EQ_STR(j, cases[i].want);
        floe__free(j);
    }
}

TEST(memory_output)
{
    floe__buf b;
    floe__buf_init(&b, 0);
    floe__output *o = floe__output_memory(&b);
    CHECK_EQ_INT(floe__output_write(o, "abc", 3, NULL), FLOE_OK);
    CHECK_EQ_INT(o->offset, 3);
    CHECK_EQ_INT(o->close(o, NULL), FLOE_OK);
    CHECK(b.len == 3 && memcmp(b.data, "abc", 3) == 0);
    floe__buf_free(&b);
}

int main(void)
{
    RUN(error_chain);
    RUN(error_recode_and_classes);
    RUN(urls_for_messages_keep_no_secrets);
    RUN(buffer_limit);
    RUN(alloc_fault_injection);
    RUN(arena);
    RUN(varints);
    RUN(base64);
    RUN(utf8);
    RUN(uuid);
    RUN(path_join);
    RUN(memory_output);
    return UNIT_DONE();
}
