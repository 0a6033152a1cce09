/*
 * compress.c - page compression: none, snappy (raw snappy blocks), gzip
 * (zlib deflate with a gzip header, as Parquet's GZIP codec requires) and
 * zstd (one frame per page).  The zstd and zlib contexts are made once per
 * writer and reset between pages.
 *
 * floe__pq_store writes the bytes as they are, in the codec's own format
 * (a zstd frame of raw blocks, a snappy stream of literals): a page that the
 * codec cannot shrink (bit-packed dictionary indices, say) then costs a copy
 * instead of a futile search for matches, and any reader still decodes it
 * with the ordinary codec.
 */
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "parquet/pq_internal.h"

int floe__pq_codec_id(int compression)
{
    switch (compression) {
    case FLOE_COMPRESSION_SNAPPY: return PQ_CODEC_SNAPPY;
    case FLOE_COMPRESSION_GZIP: return PQ_CODEC_GZIP;
    case FLOE_COMPRESSION_ZSTD: return PQ_CODEC_ZSTD;
    default: return PQ_CODEC_UNCOMPRESSED;
    }
}

int floe__pq_codec_init(floe__pq_codec *c, int compression, int level, floe_error *err)
{
    memset(c, 0, sizeof *c);
    c->compression = compression;
    c->level = level;
    switch (compression) {
    case FLOE_COMPRESSION_NONE:
    case FLOE_COMPRESSION_SNAPPY:
        return FLOE_OK;
    case FLOE_COMPRESSION_ZSTD:
        if (c->level == 0)
            c->level = 3;
        FLOE_RETURN_IF(c->level < ZSTD_minCLevel() || c->level > ZSTD_maxCLevel(), err,
                       FLOE_EINVAL, "zstd compression level %d is out of range %d..%d",
                       c->level, ZSTD_minCLevel(), ZSTD_maxCLevel());
        c->zstd = ZSTD_createCCtx();
        if (!c->zstd)
            return FLOE_OOM(err);
        if (ZSTD_isError(ZSTD_CCtx_setParameter(c->zstd, ZSTD_c_compressionLevel, c->level)))
            return floe__err_set(err, FLOE_EINTERNAL, "zstd: cannot set level %d", c->level);
        return FLOE_OK;
    case FLOE_COMPRESSION_GZIP: {
        if (c->level == 0)
            c->level = 6;
        FLOE_RETURN_IF(c->level < 1 || c->level > 9, err, FLOE_EINVAL,
                       "gzip compression level %d is out of range 1..9", c->level);
        z_stream *z = floe__calloc(1, sizeof *z);
        if (!z)
            return FLOE_OOM(err);
        /* windowBits 15 + 16: a gzip header and trailer around the deflate data */
        if (deflateInit2(z, c->level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
            floe__free(z);
            return floe__err_set(err, FLOE_ENOMEM, "zlib: cannot initialise deflate");
        }
        c->zlib = z;
        return FLOE_OK;
    }
    default:
        return floe__err_set(err, FLOE_EINVAL, "unknown compression %d", compression);
    }
}

void floe__pq_codec_free(floe__pq_codec *c)
{
    if (!c)
        return;
    if (c->zstd)
        ZSTD_freeCCtx(c->zstd);
    if (c->zlib) {
        deflateEnd(c->zlib);
        floe__free(c->zlib);
    }
    c->zstd = c->zlib = NULL;
}

static int gzip_page(floe__pq_codec *c, const uint8_t *src, size_t n, floe__buf *dst,
                     floe_error *err)
{
    z_stream *z = c->zlib;
    FLOE_RETURN_IF(n > UINT32_MAX, err, FLOE_ELIMIT, "gzip: page of %zu bytes is too large", n);
    size_t bound = deflateBound(z, (uLong)n) + 32;
    FLOE_FORWARD(floe__buf_reserve(dst, bound, err));
    if (deflateReset(z) != Z_OK)
        return floe__err_set(err, FLOE_EINTERNAL, "zlib: deflateReset failed");
    z->next_in = (Bytef *)(uintptr_t)src;
    z->avail_in = (uInt)n;
    z->next_out = dst->data + dst->len;
    z->avail_out = (uInt)(bound > UINT32_MAX ? UINT32_MAX : bound);
    int zrc = deflate(z, Z_FINISH);
    if (zrc != Z_STREAM_END)
        return floe__err_set(err, FLOE_EINTERNAL, "zlib: deflate failed (%d)", zrc);
    dst->len += z->total_out;
    return FLOE_OK;
}

size_t floe__pq_compress_bound(const floe__pq_codec *c, size_t n)
{
    size_t stored = 16 + 3 * (n / ((size_t)64 << 10) + 1) + n;   /* zstd and snappy raw forms */
    size_t b;
    switch (c->compression) {
    case FLOE_COMPRESSION_SNAPPY: b = snappy_max_compressed_length(n); break;
    case FLOE_COMPRESSION_ZSTD: b = ZSTD_compressBound(n); break;
    case FLOE_COMPRESSION_GZIP: b = deflateBound(c->zlib, (uLong)n) + 32; break;
    default: b = n; break;
    }
    return b > stored ? b : stored;
}

bool floe__pq_can_store(const floe__pq_codec *c)
{
    return c->compression == FLOE_COMPRESSION_ZSTD || c->compression == FLOE_COMPRESSION_SNAPPY;
}

/* RFC 8878: magic, a single-segment frame header with the content size,
 * then raw blocks of at most 128 KiB, the last one flagged. */
static int zstd_store(const uint8_t *src, size_t n, floe__buf *dst, floe_error *err)
{
    FLOE_RETURN_IF(n > UINT32_MAX, err, FLOE_ELIMIT, "zstd: page of %zu bytes is too large", n);
    const size_t block = (size_t)128 << 10;
    size_t blocks = n ? (n + block - 1) / block : 1;
    FLOE_FORWARD(floe__buf_reserve(dst, 9 + 3 * blocks + n, err));
    uint8_t *o = dst->data + dst->len;
    floe__put_le32(o, 0xFD2FB528u);
    o += 4;
    if (n < 256) {
        *o++ = 0x20;                       /* single segment, 1-byte content size */
        *o++ = (uint8_t)n;
    } else if (n < 65536 + 256) {
        *o++ = 0x60;                       /* 2 bytes, stored minus 256 */
        *o++ = (uint8_t)(n - 256);
        *o++ = (uint8_t)((n - 256) >> 8);
    } else {
        *o++ = 0xA0;                       /* 4 bytes */
        floe__put_le32(o, (uint32_t)n);
        o += 4;
    }
    size_t off = 0;
    do {
        size_t len = n - off < block ? n - off : block;
        uint32_t h = (uint32_t)(len << 3) | (off + len == n ? 1u : 0u);   /* raw block */
        o[0] = (uint8_t)h;
        o[1] = (uint8_t)(h >> 8);
        o[2] = (uint8_t)(h >> 16);
        memcpy(o + 3, src + off, len);
        o += 3 + len;
        off += len;
    } while (off < n);
    dst->len = (size_t)(o - dst->data);
    return FLOE_OK;
}

/* The snappy format: varint length, then literals of at most 64 KiB. */
static int snappy_store(const uint8_t *src, size_t n, floe__buf *dst, floe_error *err)
{
    FLOE_RETURN_IF(n > UINT32_MAX, err, FLOE_ELIMIT, "snappy: page of %zu bytes is too large", n);
    const size_t lit = (size_t)64 << 10;
    FLOE_FORWARD(floe__buf_reserve(dst, 5 + 3 * (n / lit + 1) + n, err));
    uint8_t *o = dst->data + dst->len;
    o += floe__put_uvarint(o, n);
    for (size_t off = 0; off < n;) {
        size_t len = n - off < lit ? n - off : lit;
        size_t m = len - 1;
        if (m < 60) {
            *o++ = (uint8_t)(m << 2);
        } else if (m < 256) {
            *o++ = 60 << 2;
            *o++ = (uint8_t)m;
        } else {
            *o++ = 61 << 2;
            *o++ = (uint8_t)m;
            *o++ = (uint8_t)(m >> 8);
        }
        memcpy(o, src + off, len);
        o += len;
        off += len;
    }
    dst->len = (size_t)(o - dst->data);
    return FLOE_OK;
}

int floe__pq_store(floe__pq_codec *c, const uint8_t *src, size_t n, floe__buf *dst,
                   floe_error *err)
{
    if (c->compression == FLOE_COMPRESSION_ZSTD)
        return zstd_store(src, n, dst, err);
    if (c->compression == FLOE_COMPRESSION_SNAPPY)
        return snappy_store(src, n, dst, err);
    return floe__pq_compress(c, src, n, dst, err);
}

int floe__pq_compress(floe__pq_codec *c, const uint8_t *src, size_t n, floe__buf *dst,
                      floe_error *err)
{
    switch (c->compression) {
    case FLOE_COMPRESSION_NONE:
        return floe__buf_append(dst, src, n, err);
    case FLOE_COMPRESSION_SNAPPY: {
        size_t cap = snappy_max_compressed_length(n);
        FLOE_FORWARD(floe__buf_reserve(dst, cap, err));
        size_t out_len = cap;
        if (snappy_compress((const char *)src, n, (char *)dst->data + dst->len, &out_len) !=
            SNAPPY_OK)
            return floe__err_set(err, FLOE_EINTERNAL, "snappy: compression failed");
        dst->len += out_len;
        return FLOE_OK;
    }
    case FLOE_COMPRESSION_ZSTD: {
        size_t cap = ZSTD_compressBound(n);
        FLOE_FORWARD(floe__buf_reserve(dst, cap, err));
        size_t r = ZSTD_compress2(c->zstd, dst->data + dst->len, cap, src, n);
        if (ZSTD_isError(r))
            return floe__err_set(err, FLOE_EINTERNAL, "zstd: %s", ZSTD_getErrorName(r));
        dst->len += r;
        return FLOE_OK;
    }
    case FLOE_COMPRESSION_GZIP:
        return gzip_page(c, src, n, dst, err);
    default:
        return floe__err_set(err, FLOE_EINTERNAL, "unknown compression %d", c->compression);
    }
}
