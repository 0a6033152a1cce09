/*
 * error.c - result codes and the error object: a code and a chain of
 * message frames (outermost context first).
 *
 * The code table is generated from FLOE_ERRNO_MAP in floe.h, so names,
 * numbers, descriptions and failure classes cannot drift apart: whether a
 * failure is retryable or leaves the outcome unknown is decided there and
 * nowhere else.  Recording an error never fails: when memory runs out the
 * frame is dropped but the code is kept.
 */
#include <stdio.h>
#include <stdlib.h>

#include "util/util_internal.h"

#define MAX_FRAMES 32

struct floe_error {
    int code;
    size_t depth;                 /* frames[0] is the outermost */
    char *frames[MAX_FRAMES];
    char *joined;                 /* cache for floe_error_message */
};

const char *floe_code_name(int code)
{
    switch (code) {
#define NAME_CASE(name, num, desc, cls) case num: return "FLOE_" #name;
        FLOE_ERRNO_MAP(NAME_CASE)
#undef NAME_CASE
    }
    return "FLOE_UNKNOWN";
}

const char *floe_code_string(int code)
{
    switch (code) {
#define DESC_CASE(name, num, desc, cls) case num: return desc;
        FLOE_ERRNO_MAP(DESC_CASE)
#undef DESC_CASE
    }
    return "unknown error code";
}

int floe_code_class(int code)
{
    switch (code) {
#define CLASS_CASE(name, num, desc, cls) case num: return cls;
        FLOE_ERRNO_MAP(CLASS_CASE)
#undef CLASS_CASE
    }
    return FLOE_FAIL_FINAL;
}

floe_error *floe_error_new(void) { return floe__calloc(1, sizeof(floe_error)); }

void floe_error_clear(floe_error *err)
{
    if (!err)
        return;
    for (size_t i = 0; i < err->depth; i++)
        floe__free(err->frames[i]);
    floe__free(err->joined);
    memset(err, 0, sizeof *err);
}

void floe_error_free(floe_error *err)
{
    floe_error_clear(err);
    floe__free(err);
}

int floe_error_code(const floe_error *err) { return err ? err->code : FLOE_OK; }
int floe_error_retryable(const floe_error *err)
{
    return err && floe_code_class(err->code) != FLOE_FAIL_FINAL;
}
size_t floe_error_depth(const floe_error *err) { return err ? err->depth : 0; }

const char *floe_error_frame(const floe_error *err, size_t i)
{
    return (err && i < err->depth) ? err->frames[i] : "";
}

const char *floe_error_message(const floe_error *err)
{
    if (!err || err->depth == 0)
        return err && err->code ? floe_code_string(err->code) : "";
    struct floe_error *e = (struct floe_error *)err;   /* cache only */
    if (e->joined)
        return e->joined;
    size_t n = 1;
    for (size_t i = 0; i < e->depth; i++)
        n += strlen(e->frames[i]) + 2;
    e->joined = floe__malloc(n);
    if (!e->joined)
        return e->frames[0];
    e->joined[0] = '\0';
    char *p = e->joined;
    for (size_t i = 0; i < e->depth; i++) {
        if (i) {
            memcpy(p, ": ", 2);
            p += 2;
        }
        size_t len = strlen(e->frames[i]);
        memcpy(p, e->frames[i], len + 1);
        p += len;
    }
    return e->joined;
}

static void invalidate(floe_error *err)
{
    floe__free(err->joined);
    err->joined = NULL;
}

int floe__err_set(floe_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    floe_error_clear(err);
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    char *msg = floe__vsprintf(fmt, ap);
    va_end(ap);
    if (msg)
        err->frames[err->depth++] = msg;
    return code;
}

/* Add msg as the outermost frame (takes it; NULL: nothing added). */
static void push_frame(floe_error *err, char *msg)
{
    invalidate(err);
    if (!msg)
        return;
    if (err->depth == MAX_FRAMES) {          /* drop the innermost context */
        floe__free(err->frames[MAX_FRAMES - 2]);
        err->frames[MAX_FRAMES - 2] = err->frames[MAX_FRAMES - 1];
        err->depth--;
    }
    memmove(err->frames + 1, err->frames, err->depth * sizeof(char *));
    err->frames[0] = msg;
    err->depth++;
}

int floe__err_wrap(floe_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    if (err->code == FLOE_OK)
        err->code = code;
    va_list ap;
    va_start(ap, fmt);
    push_frame(err, floe__vsprintf(fmt, ap));
    va_end(ap);
    return err->code;
}

int floe__err_recode(floe_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    push_frame(err, floe__vsprintf(fmt, ap));
    va_end(ap);
    return code;
}

void floe__err_move(floe_error *dst, floe_error *src)
{
    if (!dst || !src || dst == src)
        return;
    floe_error_clear(dst);
    *dst = *src;
    memset(src, 0, sizeof *src);
}
