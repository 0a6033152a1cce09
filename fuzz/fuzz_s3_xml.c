/*
 * fuzz_s3_xml.c - arbitrary bytes as an S3 reply -> the S3 XML reader
 * (element text, repeated elements, root name), a ListObjectsV2 page and
 * a LastModified time, and, read as an object key, -> the URL the request
 * would use.  Checks: no read outside the input; decoded text is never
 * longer than the input and survives escape + decode unchanged; repeated
 * elements lie inside the input and move forward; a page either fails
 * having reported nothing or reports NUL-free keys no longer than the
 * input, under the prefix; a parsed time lies within years 0..9999 (give
 * or take a day); a root named Error really starts the document; a URL
 * holds only the characters SigV4 leaves unencoded plus %XX, '/', ':' and
 * '?'.
 */
#include <stdlib.h>

#include "io/s3_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const char *xml, size_t n, const char *tag)
{
    floe__buf out;
    floe__buf_init(&out, 0);
    if (floe__s3_xml_text(xml, n, tag, &out)) {
        if (out.len > n || out.data[out.len] != 0)
            __builtin_trap();
        if (memchr(out.data, 0, out.len) == NULL) {   /* round trip through escaping */
            floe__buf esc, back;
            floe__buf_init(&esc, 0);
            floe__buf_init(&back, 0);
            floe__buf_printf(&esc, NULL, "<%s>", tag);
            floe__s3_xml_escape((const char *)out.data, &esc, NULL);
            floe__buf_printf(&esc, NULL, "</%s>", tag);
            if (!floe__s3_xml_text((const char *)esc.data, esc.len, tag, &back) ||
                back.len != out.len || memcmp(back.data, out.data, out.len) != 0)
                __builtin_trap();
            floe__buf_free(&esc);
            floe__buf_free(&back);
        }
    }
    floe__buf_free(&out);
}

static void check_next(const char *xml, size_t n)
{
    size_t pos = 0, count = 0;
    const char *in;
    size_t len;
    int found;
    while ((found = floe__s3_xml_next(xml, n, "Contents", &pos, &in, &len)) == 1) {
        if (in < xml || in + len > xml + n || pos > n || (size_t)(in - xml) > pos)
            __builtin_trap();
        if (++count > n / 11)             /* "<Contents/>" is the shortest */
            __builtin_trap();
    }
    if (pos != n)
        __builtin_trap();
}

typedef struct page_check {
    size_t n, count;
    const char *prefix;
} page_check;

static int on_object(void *ctx, const char *key, uint64_t size, int64_t mtime, floe_error *err)
{
    (void)size;
    (void)mtime;
    (void)err;
    page_check *pc = ctx;
    size_t kl = strlen(key);
    if (kl == 0 || kl > pc->n || !floe__str_starts(key, pc->prefix) || ++pc->count > pc->n)
        __builtin_trap();
    return FLOE_OK;
}

static void check_page(const char *xml, size_t n, const char *prefix)
{
    page_check pc = {n, 0, prefix};
    floe__buf tok;
    floe__buf_init(&tok, 0);
    bool more = false;
    int rc = floe__s3_list_page(xml, n, prefix, on_object, &pc, &more, &tok, NULL);
    if (rc != FLOE_OK && pc.count != 0)
        __builtin_trap();                 /* checked whole before anything is reported */
    if (rc == FLOE_OK && more && (tok.len == 0 || tok.len > n || tok.data[tok.len] != 0))
        __builtin_trap();
    floe__buf_free(&tok);
}

static void check_time(const uint8_t *data, size_t size)
{
    char text[64];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, data, n);
    text[n] = 0;
    int64_t ms;
    const int64_t lo = -62167219200000LL - 86400000LL, hi = 253402300800000LL + 86400000LL;
    if (floe__s3_parse_time(text, &ms) && (ms < lo || ms > hi))
        __builtin_trap();
}

static void check_url(const uint8_t *data, size_t size)
{
    char *key = floe__strndup((const char *)data, size);
    if (!key || !*key) {
        floe__free(key);
        return;
    }
    s3_loc l = {"bucket", key};
    s3_conf c = {.endpoint = "http://127.0.0.1:9000", .region = "us-east-1", .path_style = -1};
    for (int style = -1; style <= 0; style++) {
        c.path_style = style;
        char *u = floe__s3_url(&c, &l, "uploads=");
        if (!u)
            __builtin_trap();
        for (const char *p = u; *p; p++) {
            char ch = *p;
            bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                      (ch >= '0' && ch <= '9') || strchr("-_.~/%:?=", ch);
            if (!ok)
                __builtin_trap();
        }
        floe__free(u);
    }
    floe__free(key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *xml = floe__malloc(size ? size : 1);      /* exact size: overreads show */
    if (!xml)
        return 0;
    if (size)
        memcpy(xml, data, size);
    static const char *const tags[] = {"Code", "Message", "UploadId", "ETag", "Error"};
    for (size_t i = 0; i < sizeof tags / sizeof *tags; i++)
        check_text(xml, size, tags[i]);
    if (floe__s3_xml_root_is(xml, size, "Error") && !memmem(xml, size, "<Error", 6))
        __builtin_trap();
    check_next(xml, size);
    check_page(xml, size, "");
    check_page(xml, size, "wh/");
    floe__free(xml);
    check_time(data, size);
    check_url(data, size);
    return 0;
}
