/*
 * puffin_internal.h - row positions as a 64-bit Roaring-style bitmap
 * (roaring.c), Iceberg deletion vectors (`deletion-vector-v1` blobs) and
 * the Puffin files that hold them (puffin.c).
 *
 * A floe__posbitmap is a set of row positions in [0, 2^63): positions are
 * grouped by their high 48 bits into containers of 2^16 positions, each a
 * sorted array of 16-bit offsets (up to 4096 of them) or a 65536-bit bitmap,
 * so a sparse set costs about 2 bytes a position and a dense one 1 bit.
 * It serializes to the Roaring "portable" 64-bit format the Iceberg spec
 * prescribes for deletion vectors (a count of 32-bit buckets, each a key and
 * a 32-bit portable Roaring bitmap with array, bitmap and run containers,
 * whichever is smallest) and reads any valid one back.
 *
 * Readers take untrusted bytes: malformed input is FLOE_EFORMAT, never a
 * crash, and no input can make them allocate more than a small multiple of
 * its own size.
 */
#ifndef FLOE_PUFFIN_INTERNAL_H
#define FLOE_PUFFIN_INTERNAL_H

#include <jansson.h>

#include "io/io_internal.h"
#include "util/util_internal.h"

/* ---- position bitmaps (roaring.c) ----------------------------------------------- */

/* The highest position a bitmap holds (deletion vectors: the top bit is 0). */
#define FLOE_POS_MAX ((uint64_t)INT64_MAX)

typedef struct floe__pb_container {
    uint64_t key;                    /* position >> 16 */
    uint32_t card;                   /* positions held, 1..65536 */
    uint32_t cap;                    /* array capacity in items; 0 for a bitmap */
    uint16_t *array;                 /* sorted low 16 bits (card <= 4096), or NULL */
    uint64_t *bits;                  /* 1024 words (card > 4096), or NULL */
} floe__pb_container;

/* Zero-initialized ({0}) is the empty set; owns its containers. */
typedef struct floe__posbitmap {
    floe__pb_container *c;           /* sorted by key, none empty */
    size_t n, cap;
    uint64_t count;                  /* positions held */
    size_t last;                     /* container of the last add (a cache) */
} floe__posbitmap;

void floe__posbitmap_clear(floe__posbitmap *b);       /* frees; b is empty after */
/* Add one position (<= FLOE_POS_MAX, else FLOE_EINVAL); adding a position
 * already held changes nothing.  Adding in ascending order is O(1). */
int floe__posbitmap_add(floe__posbitmap *b, uint64_t pos, floe_error *err);
bool floe__posbitmap_contains(const floe__posbitmap *b, uint64_t pos);
static inline uint64_t floe__posbitmap_count(const floe__posbitmap *b) { return b->count; }
/* dst |= src. */
int floe__posbitmap_or(floe__posbitmap *dst, const floe__posbitmap *src, floe_error *err);
/* Move src's contents into an empty dst (src ends empty). */
void floe__posbitmap_move(floe__posbitmap *dst, floe__posbitmap *src);

/* Ascending iteration: `floe__posbitmap_iter it = {b}; while (next(&it, &pos))`. */
typedef struct floe__posbitmap_iter {
    const floe__posbitmap *b;
    size_t ci;                       /* container */
    uint32_t i;                      /* item (array), bit (bitmap), offset in run */
    uint32_t r;                      /* run (run containers) */
} floe__posbitmap_iter;
bool floe__posbitmap_next(floe__posbitmap_iter *it, uint64_t *pos);
/* Whether a and b hold the same positions (NULL: empty). */
bool floe__posbitmap_equal(const floe__posbitmap *a, const floe__posbitmap *b);

/* Membership for ascending queries (a file's rows in order), O(1) a query
 * amortized: `floe__posbitmap_seq q; floe__posbitmap_seq_init(&q, b);` then
 * floe__posbitmap_seq_has(&q, pos) with pos never below the last one asked.
 * b NULL is the empty set. */
typedef struct floe__posbitmap_seq {
    floe__posbitmap_iter it;
    uint64_t next;                   /* the smallest held position not yet passed */
    bool more;                       /* next is valid */
} floe__posbitmap_seq;
void floe__posbitmap_seq_init(floe__posbitmap_seq *q, const floe__posbitmap *b);
static inline bool floe__posbitmap_seq_has(floe__posbitmap_seq *q, uint64_t pos)
{
    while (q->more && q->next < pos)
        q->more = floe__posbitmap_next(&q->it, &q->next);
    return q->more && q->next == pos;
}

/* Append the Roaring portable 64-bit serialization of b to out. */
int floe__posbitmap_serialize(const floe__posbitmap *b, floe__buf *out, floe_error *err);
/* Parse a portable 64-bit serialization from p[0..n) into the empty `out`
 * (positions above FLOE_POS_MAX are FLOE_EFORMAT); *used receives the bytes
 * it took.  On failure out is left empty. */
int floe__posbitmap_deserialize(const uint8_t *p, size_t n, floe__posbitmap *out, size_t *used,
                                floe_error *err);

/* ---- deletion vectors and Puffin files (puffin.c) --------------------------------- */

#define FLOE_DV_BLOB_TYPE "deletion-vector-v1"
/* Puffin files and DV blobs larger than this are refused when read. */
#define FLOE_PUFFIN_MAX_BYTES ((size_t)1 << 30)

/* Append one deletion-vector-v1 blob of b to out: the big-endian length of
 * magic + vector, the magic D1 D3 39 64, the vector (portable 64-bit
 * Roaring), the big-endian CRC-32 of magic + vector. */
int floe__dv_encode(const floe__posbitmap *b, floe__buf *out, floe_error *err);
/* Parse one whole blob (exactly p[0..n)) into the empty `out`: lengths,
 * magic and CRC checked, FLOE_EFORMAT otherwise. */
int floe__dv_decode(const uint8_t *p, size_t n, floe__posbitmap *out, floe_error *err);

/* One blob of a Puffin footer.  Strings are owned by the footer. */
typedef struct floe__puffin_blob {
    char *type;
    int64_t offset, length;
    char *compression;               /* "compression-codec", or NULL */
    char *referenced_data_file;      /* properties["referenced-data-file"], or NULL */
    bool has_cardinality;
    int64_t cardinality;             /* properties["cardinality"] */
} floe__puffin_blob;

typedef struct floe__puffin_footer {
    floe__puffin_blob *blobs;
    size_t n;
} floe__puffin_footer;

void floe__puffin_footer_clear(floe__puffin_footer *f);
/* Parse the footer of a whole Puffin file p[0..n): both magics, payload
 * size, flags (a compressed footer is FLOE_EUNSUPPORTED), the JSON
 * FileMetadata, every blob's range inside the file.  Malformed: FLOE_EFORMAT. */
int floe__puffin_footer_parse(const uint8_t *p, size_t n, floe__puffin_footer *out,
                              floe_error *err);

/* One DV to write: the data file it applies to and its positions (both
 * borrowed; positions not empty).  The writer fills offset / length (the
 * blob's range, the manifest entry's content_offset / content_size_in_bytes). */
typedef struct floe__puffin_dv {
    const char *referenced_data_file;
    const floe__posbitmap *positions;
    int64_t offset, length;
} floe__puffin_dv;

/* Write a Puffin file at `uri` (atomically, through io) holding one
 * deletion-vector-v1 blob per dvs[i], in order, and the footer describing
 * them (snapshot-id and sequence-number -1, fields [2147483545],
 * properties referenced-data-file and cardinality; created-by floe).
 * *file_size receives the file's size.  On failure nothing is left. */
int floe__puffin_write_dvs(floe__fileio *io, const char *uri, floe__puffin_dv *dvs, size_t n,
                           uint64_t *file_size, floe_error *err);

/* Decode the DV blob at [offset, offset + length) of the Puffin file
 * p[0..n) into the empty `out`; `cardinality` >= 0 must match (the manifest
 * entry's record_count), -1 skips that check.  FLOE_EFORMAT otherwise. */
int floe__dv_read_at(const uint8_t *p, size_t n, int64_t offset, int64_t length,
                     int64_t cardinality, floe__posbitmap *out, floe_error *err);

#endif /* FLOE_PUFFIN_INTERNAL_H */
