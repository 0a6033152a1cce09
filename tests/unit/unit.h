/*
 * unit.h - a tiny harness for floe's C unit tests.
 *
 * A test file defines test functions with TEST(name) and lists them in
 * main() with RUN(name).  CHECK* macros record a failure with file and line
 * and go on; the program prints "<file>: N passed, N failed" and exits
 * non-zero when anything failed.
 */
#ifndef FLOE_UNIT_H
#define FLOE_UNIT_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct unit_state {
    int failures;         /* in the current test */
    int passed, failed;   /* tests */
} unit_state;

static unit_state unit_;

#define TEST(name) static void name(void)

/* A fresh directory "$TMPDIR/floe-test-<tag>-XXXXXX" (default /tmp) into
 * out[cap]; exits with 2 when it cannot be made (the test cannot run). */
static inline void unit_make_tmp(char *out, size_t cap, const char *tag)
{
    const char *base = getenv("TMPDIR");
    snprintf(out, cap, "%s/floe-test-%s-XXXXXX", base ? base : "/tmp", tag);
    if (!mkdtemp(out)) {
        perror("mkdtemp");
        exit(2);
    }
}

/* Remove a directory made by unit_make_tmp, with everything in it. */
static inline void unit_remove_tmp(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            unit_.failures++;                                                  \
        }                                                                      \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                     \
    do {                                                                       \
        long long a_ = (long long)(a), b_ = (long long)(b);                    \
        if (a_ != b_) {                                                        \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, \
                    __LINE__, #a, #b, a_, b_);                                 \
            unit_.failures++;                                                  \
        }                                                                      \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                     \
    do {                                                                       \
        const char *a_ = (a), *b_ = (b);                                       \
        if (!a_ || !b_ || strcmp(a_, b_) != 0) {                               \
            fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n",     \
                    __FILE__, __LINE__, #a, #b, a_ ? a_ : "(null)",            \
                    b_ ? b_ : "(null)");                                       \
            unit_.failures++;                                                  \
        }                                                                      \
    } while (0)

#define CHECK_MEM(a, b, n) CHECK(memcmp((a), (b), (n)) == 0)

#define RUN(name)                                                              \
    do {                                                                       \
        unit_.failures = 0;                                                    \
        name();                                                                \
        if (unit_.failures) {                                                  \
            fprintf(stderr, "FAIL %s\n", #name);                               \
            unit_.failed++;                                                    \
        } else {                                                               \
            unit_.passed++;                                                    \
        }                                                                      \
    } while (0)

#define UNIT_DONE()                                                            \
    (printf("%s: %d passed, %d failed\n", __FILE__, unit_.passed, unit_.failed), \
     unit_.failed ? 1 : 0)

#endif
