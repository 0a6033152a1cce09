/*
 * compress.c - page compression: none, snappy (raw snappy blocks), gzip
 * (zlib deflate with a gzip header, as Parquet's GZIP codec requires) and
 * zstd (one frame per page).  The zstd and zlib contexts are made once per
 * writer and reset between pages.
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
