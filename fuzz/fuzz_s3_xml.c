/*
 * fuzz_s3_xml.c - arbitrary bytes as an S3 reply -> the S3 XML reader
 * (element text, root name) and, read as an object key, -> the URL the
 * request would use.  Checks: no read outside the input; decoded text is
 * never longer than the input and survives escape + decode unchanged; a
 * root named Error really starts the document; a URL holds only the
 * characters SigV4 leaves unencoded plus %XX, '/', ':' and '?'.
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
    floe__free(xml);
    check_url(data, size);
    return 0;
}
