/*
 * util_internal.h - the bottom layer of libfloe: allocation, errors,
 * growable buffers, arenas, small string and byte helpers, uuids, clocks.
 *
 * Nothing here depends on any other part of floe.  Every other module
 * includes this header.
 */
#ifndef FLOE_UTIL_INTERNAL_H
#define FLOE_UTIL_INTERNAL_H

#include <assert.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "floe.h"

/* ---- allocation (alloc.c) ------------------------------------------------
 * All library memory goes through these.  floe__alloc_fail_after() makes the
 * n-th allocation of the calling thread fail, so tests can check every
 * out-of-memory path. */
void *floe__malloc(size_t n);
void *floe__calloc(size_t count, size_t size);
void *floe__realloc(void *p, size_t n);
void floe__free(void *p);
char *floe__strdup(const char *s);
char *floe__strndup(const char *s, size_t n);
/* Test hook: make the allocation after the next `n` fail (n < 0: never). */
void floe__alloc_fail_after(long n);

/* ---- errors (error.c) ----------------------------------------------------
 * floe__err_set() records a root cause with its code; floe__err_wrap() adds
 * an outer context frame to the chain and keeps the root cause's code (the
 * given one only when none was set); floe__err_recode() adds a frame and
 * replaces the code: a layer that knows better reclassifies a failure (a
 * catalog failure after which nobody can tell whether the commit landed
 * becomes FLOE_EUNKNOWN_OUTCOME).  All accept err == NULL and return the
 * code in force, so call sites read:
 *     return floe__err_set(err, FLOE_EINPUT, "line %zu: bad value", line);
 * Whether a code is retryable or leaves the outcome unknown is its class in
 * FLOE_ERRNO_MAP (floe_code_class), decided nowhere else.
 */
int floe__err_set(floe_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int floe__err_wrap(floe_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int floe__err_recode(floe_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Move the state of src into dst (dst is cleared first; src is cleared). */
void floe__err_move(floe_error *dst, floe_error *src);

/* Return early with an error when `cond` holds. */
#define FLOE_RETURN_IF(cond, err, code, ...)                                   \
    do {                                                                       \
        if (cond)                                                              \
            return floe__err_set((err), (code), __VA_ARGS__);                  \
    } while (0)
/* Return a non-OK result code as it is. */
#define FLOE_FORWARD(expr)                                                     \
    do {                                                                       \
        int floe__rc_ = (expr);                                                \
        if (floe__rc_ != FLOE_OK)                                              \
            return floe__rc_;                                                  \
    } while (0)
/* Return a non-OK result code after adding a context frame. */
#define FLOE_FORWARD_CTX(expr, err, ...)                                       \
    do {                                                                       \
        int floe__rc_ = (expr);                                                \
        if (floe__rc_ != FLOE_OK)                                              \
            return floe__err_wrap((err), floe__rc_, __VA_ARGS__);              \
    } while (0)
#define FLOE_OOM(err) floe__err_set((err), FLOE_ENOMEM, "out of memory")

/* ---- growable byte buffer (buf.c) -----------------------------------------
 * A buffer with a hard maximum: growing past `max` fails with FLOE_ELIMIT,
 * so bad input cannot eat the machine.  max == 0 means SIZE_MAX/2. */
typedef struct floe__buf {
    uint8_t *data;
    size_t len;
    size_t cap;
    size_t max;
} floe__buf;

void floe__buf_init(floe__buf *b, size_t max);
void floe__buf_free(floe__buf *b);             /* releases memory; reusable */
/* Give back the capacity past len (best effort): for small values kept
 * long and in numbers, e.g. a data file's column bounds. */
void floe__buf_shrink(floe__buf *b);
static inline void floe__buf_reset(floe__buf *b) { b->len = 0; }
int floe__buf_grow(floe__buf *b, size_t extra, floe_error *err);
static inline int floe__buf_reserve(floe__buf *b, size_t extra, floe_error *err)
{
    if (b->cap - b->len >= extra)
        return FLOE_OK;
    return floe__buf_grow(b, extra, err);
}
int floe__buf_append(floe__buf *b, const void *p, size_t n, floe_error *err);
int floe__buf_putc(floe__buf *b, uint8_t c, floe_error *err);
int floe__buf_printf(floe__buf *b, floe_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Append without growing: the caller reserved enough. */
static inline void floe__buf_put_unchecked(floe__buf *b, const void *p, size_t n)
{
    assert(b->cap - b->len >= n);
    memcpy(b->data + b->len, p, n);
    b->len += n;
}
/* A NUL-terminated copy of the contents (caller frees), or NULL on OOM. */
char *floe__buf_strdup(const floe__buf *b);

/* ---- arena (arena.c) --------------------------------------------------------
 * Bump allocation from chained blocks, freed or reset as a whole.  For
 * transient work: one batch, one commit attempt. */
typedef struct floe__arena floe__arena;
floe__arena *floe__arena_new(size_t block_size);
void floe__arena_free(floe__arena *a);
void floe__arena_reset(floe__arena *a);         /* keeps the first block */
void *floe__arena_alloc(floe__arena *a, size_t n);  /* 16-byte aligned; NULL on OOM */
char *floe__arena_strndup(floe__arena *a, const char *s, size_t n);
size_t floe__arena_used(const floe__arena *a);
/* Replace *s (unless NULL) by a copy in the arena; -1 on OOM. */
int floe__arena_own_str(floe__arena *a, const char **s);

/* ---- byte-string sets (byteset.c) --------------------------------------------
 * Copies of the strings added; membership by content. */
typedef struct floe__byteset floe__byteset;
int floe__byteset_new(floe__byteset **out, floe_error *err);
void floe__byteset_free(floe__byteset *s);      /* accepts NULL */
int floe__byteset_add(floe__byteset *s, const void *p, size_t len, floe_error *err);
bool floe__byteset_has(const floe__byteset *s, const void *p, size_t len);
size_t floe__byteset_count(const floe__byteset *s);

/* ---- byte order and varints (inline) ------------------------------------- */
static inline void floe__put_le32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void floe__put_le64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static inline uint32_t floe__get_le32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t floe__get_le64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* Unsigned LEB128.  put returns bytes written (at most 10). */
static inline size_t floe__put_uvarint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}
/* Decodes from [p, end); returns bytes read, 0 when truncated or too long. */
static inline size_t floe__get_uvarint(const uint8_t *p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < 10 && p + i < end; i++) {
        v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            *out = v;
            return i + 1;
        }
    }
    return 0;
}
static inline uint64_t floe__zigzag64(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t floe__unzigzag64(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* ---- hashing (hash.c) ------------------------------------------------------
 * 64-bit hash of a byte string, well mixed in every bit; `seed` chains
 * several parts (hash the second with the first's hash as seed). */
uint64_t floe__hash64(const void *data, size_t n, uint64_t seed);

/* ---- strings (str.c) ------------------------------------------------------- */
/* printf into a new string (caller frees with floe__free); NULL on OOM. */
char *floe__sprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *floe__vsprintf(const char *fmt, va_list ap);
/* A message for a callback (a notice, a warning): printf into a buffer of
 * 1 KiB (longer ones are cut) and call fn(ctx, message) unless fn is NULL. */
void floe__tell(void (*fn)(void *ctx, const char *message), void *ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void floe__vtell(void (*fn)(void *ctx, const char *message), void *ctx, const char *fmt,
                 va_list ap) __attribute__((format(printf, 3, 0)));
bool floe__str_starts(const char *s, const char *prefix);
bool floe__str_ends(const char *s, const char *suffix);
/* Join two URI/path parts with exactly one '/', trimming trailing '/' of a
 * and leading '/' of b (caller frees). */
char *floe__path_join(const char *a, const char *b);
/* A URL fit for a message or a log line: without its query string and
 * fragment and without user:password@ (either may hold a secret), cut to
 * cap bytes. */
void floe__url_for_message(const char *url, char *out, size_t cap);
/* Standard base64 (RFC 4648, with padding).  decode returns FLOE_EINPUT on
 * bad characters or padding. */
int floe__base64_decode(const char *s, size_t n, floe__buf *out, floe_error *err);
int floe__base64_encode(const uint8_t *p, size_t n, floe__buf *out, floe_error *err);
/* Whether [s, s+n) is well-formed UTF-8. */
bool floe__utf8_valid(const uint8_t *s, size_t n);
/* JSON strings: whether character c must be escaped in one (a control
 * character, '"' or '\\'), and its escape (\\n, \\u001f, ...) into o, at
 * most 6 bytes: their number.  Every JSON string floe writes uses these. */
static inline bool floe__json_needs_escape(uint32_t c)
{
    return c < 0x20 || c == '"' || c == '\\';
}
size_t floe__json_escape(uint32_t c, char *o);

/* ---- uuids and clocks (uuid.c, clock.c) ------------------------------------ */
/* A random (version 4) uuid, from the OS's random source. */
int floe__uuid_random(uint8_t out[16], floe_error *err);
/* Canonical lower-case 8-4-4-4-12 text, 36 chars + NUL. */
void floe__uuid_format(const uint8_t u[16], char out[37]);
int floe__uuid_parse(const char *s, size_t n, uint8_t out[16]);  /* 0 ok, -1 bad */
int64_t floe__now_ms(void);              /* wall clock, ms since the epoch */
uint64_t floe__monotonic_ns(void);       /* for durations */

/* ---- output streams (output.c) ---------------------------------------------
 * Where encoders (Parquet, Avro) write their bytes.  The storage layer (io/)
 * provides implementations: a local file written to a temporary name and
 * renamed into place on close, an S3 multipart upload.  The contract:
 *  - write appends bytes; `offset` counts every byte accepted so far.
 *  - close makes the whole object durable and visible under its final name,
 *    or fails and leaves nothing visible; it frees the stream either way.
 *  - abort discards everything written and frees the stream; it cannot fail.
 */
typedef struct floe__output floe__output;
struct floe__output {
    int (*write)(floe__output *o, const void *p, size_t n, floe_error *err);
    int (*close)(floe__output *o, floe_error *err);
    void (*abort)(floe__output *o);
    uint64_t offset;
};

static inline int floe__output_write(floe__output *o, const void *p, size_t n, floe_error *err)
{
    int rc = o->write(o, p, n, err);
    if (rc == FLOE_OK)
        o->offset += n;
    return rc;
}

/* An output into memory: on close the bytes stay in *dst (which the caller
 * owns and must floe__buf_free); abort empties it. */
floe__output *floe__output_memory(floe__buf *dst);
/* Write all n bytes to descriptor fd (short writes and EINTR continued);
 * FLOE_EIO "writing WHAT: <strerror>" otherwise. */
int floe__write_all(int fd, const void *p, size_t n, const char *what, floe_error *err);

/* ---- retries (retry.c) -----------------------------------------------------
 * Every retry loop's policy: a failure is tried again when its code's class
 * is FLOE_FAIL_RETRY (FLOE_FAIL_UNKNOWN too with unknown_too: the caller
 * looks before it repeats), within an attempt and a time limit; the wait
 * before attempt n+1 is a random time in [d/2, d], d = min(max_ms,
 * first_ms * 2^(n-1)).  One per loop, on its stack (it holds its own
 * jitter state). */
typedef struct floe__retry {
    unsigned first_ms, max_ms;
    int max_attempts;               /* attempts in all; 0: no limit */
    uint64_t max_ns;                /* since the first failure; 0: no limit */
    bool unknown_too;
    int failures;                   /* so far */
    uint64_t since_ns;              /* the first failure's (monotonic) */
    uint64_t rng;
} floe__retry;
void floe__retry_init(floe__retry *r, unsigned first_ms, unsigned max_ms);
/* After a failure: whether to try again (the class, the limits), having
 * waited if so. */
bool floe__retry_again(floe__retry *r, int rc);
/* Count a failure and return the wait before the next attempt, for loops
 * that decide for themselves and wait their own way (a stop to heed). */
unsigned floe__retry_delay(floe__retry *r);
void floe__retry_sleep_ms(unsigned ms);
/* Seconds since the first failure (0: none yet). */
double floe__retry_seconds(const floe__retry *r);

/* ---- the public structs' sizes (abi.c) -------------------------------------
 * Every public struct begins with a size_t holding its size as the caller
 * compiled it (include/floe.h, "Growing"). */
/* floe_x_options_init: the defaults (`full` bytes) into the caller's struct
 * of `size` bytes, whose size field then says `size`. */
void floe__abi_init(void *dst, size_t size, const void *defaults, size_t full);
/* A caller's struct (src, of the size its first field says) into the
 * library's own (dst, `full` bytes, holding the defaults): the fields the
 * caller's has replace the defaults.  FLOE_EINVAL when the size field was
 * never set; FLOE_EUNSUPPORTED when the caller's is larger and sets a byte
 * past `full` (a field of a newer header).  `what` names the struct. */
int floe__abi_in(void *dst, size_t full, const void *src, const char *what, floe_error *err);
/* The library's struct (src, `full` bytes) out into the caller's (dst, of
 * `size` bytes): at most `size` bytes written, the rest of a larger one
 * zeroed, its size field set to the bytes filled.  Nothing for a NULL dst
 * or a size below the size field's. */
void floe__abi_out(void *dst, size_t size, const void *src, size_t full);

/* Read the caller's options struct `src` (may be NULL: defaults) of type T
 * into the library's `dst` of type T, set up by T_init first. */
#define FLOE__OPTIONS_IN(T, dst, src, err)                                                  \
    (T##_init((dst), sizeof *(dst)),                                                      \
     (src) ? floe__abi_in((dst), sizeof *(dst), (src), #T, (err)) : FLOE_OK)

#endif /* FLOE_UTIL_INTERNAL_H */
