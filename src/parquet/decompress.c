/*
 * decompress.c - page decompression for the reader: snappy (raw snappy
 * blocks), gzip (zlib inflate; gzip or zlib headers, several gzip members
 * one after another) and zstd (any number of frames), through the same
 * libraries compress.c uses.  The zstd and zlib contexts are made on first
 * use and kept for the reader's life.
 *
 * Output must come out exactly as long as the page header says; anything
 * else is FLOE_EFORMAT.  Before the caller allocates that much, it asks
 * floe__pq_decompress_bound whether the compressed bytes could plausibly
 * expand to it, so a tiny page cannot make the reader allocate its claimed
 * gigabyte.  LZO, BROTLI, LZ4 (the Hadoop framing) and LZ4_RAW are not
 * linked into floe: FLOE_EUNSUPPORTED naming the codec.
 */
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "parquet/pqr_internal.h"

bool floe__pq_codec_supported(int codec)
{
    return codec == PQ_CODEC_UNCOMPRESSED || codec == PQ_CODEC_SNAPPY ||
           codec == PQ_CODEC_GZIP || codec == PQ_CODEC_ZSTD;
}

void floe__pq_dctx_free(floe__pq_dctx *d)
{
    if (!d)
        return;
    if (d->zstd)
        ZSTD_freeDCtx(d->zstd);
    if (d->zlib) {
        inflateEnd(d->zlib);
        floe__free(d->zlib);
    }
    d->zstd = d->zlib = NULL;
}

bool floe__pq_decompress_bound(int codec, const uint8_t *src, size_t n, size_t out_len)
{
    switch (codec) {
    case PQ_CODEC_UNCOMPRESSED:
        return out_len == n;
    case PQ_CODEC_SNAPPY: {
        size_t len;
        return snappy_uncompressed_length((const char *)src, n, &len) == SNAPPY_OK &&
               len == out_len;
    }
    case PQ_CODEC_GZIP:
        return out_len / 1032 <= n + 64;        /* deflate expands at most 1032:1 */
    case PQ_CODEC_ZSTD: {
        unsigned long long len = ZSTD_getFrameContentSize(src, n);
        if (len == ZSTD_CONTENTSIZE_ERROR)
            return false;
        if (len != ZSTD_CONTENTSIZE_UNKNOWN && len > out_len)
            return false;
        return out_len / 32768 <= n + 64;       /* a raw 3-byte block header per 128 KiB RLE */
    }
    default:
        return false;
    }
}

static int snappy_page(const uint8_t *src, size_t n, uint8_t *dst, size_t out_len,
                       floe_error *err)
{
    size_t len = out_len;
    if (snappy_uncompress((const char *)src, n, (char *)dst, &len) != SNAPPY_OK)
        return floe__err_set(err, FLOE_EFORMAT, "snappy: corrupt page");
    FLOE_RETURN_IF(len != out_len, err, FLOE_EFORMAT,
                   "snappy: page of %zu bytes where its header says %zu", len, out_len);
    return FLOE_OK;
}

static int zlib_ctx(floe__pq_dctx *d, floe_error *err)
{
    if (d->zlib)
        return inflateReset(d->zlib) == Z_OK ? FLOE_OK
                                             : floe__err_set(err, FLOE_EINTERNAL, "zlib reset");
    z_stream *z = floe__calloc(1, sizeof *z);
    if (!z)
        return FLOE_OOM(err);
    /* windowBits 15 + 32: gzip or zlib headers, detected */
    if (inflateInit2(z, 15 + 32) != Z_OK) {
        floe__free(z);
        return floe__err_set(err, FLOE_ENOMEM, "zlib: cannot initialise inflate");
    }
    d->zlib = z;
    return FLOE_OK;
}

static int gzip_page(floe__pq_dctx *d, const uint8_t *src, size_t n, uint8_t *dst,
                     size_t out_len, floe_error *err)
{
    FLOE_RETURN_IF(n > UINT32_MAX || out_len > UINT32_MAX, err, FLOE_ELIMIT,
                   "gzip: page too large");
    FLOE_FORWARD(zlib_ctx(d, err));
    z_stream *z = d->zlib;
    uint8_t none[1];
    z->next_in = (Bytef *)(uintptr_t)src;
    z->avail_in = (uInt)n;
    z->next_out = out_len ? dst : none;        /* inflate wants room to finish in */
    z->avail_out = out_len ? (uInt)out_len : 1;
    for (;;) {
        int zrc = inflate(z, Z_FINISH);
        size_t got = (size_t)(z->next_out - (out_len ? dst : none));
        if (zrc == Z_STREAM_END && z->avail_in > 0 && got < out_len) {
            if (inflateReset(z) != Z_OK)       /* another gzip member follows */
                return floe__err_set(err, FLOE_EINTERNAL, "zlib reset");
            continue;
        }
        if (zrc == Z_STREAM_END && got == out_len)
            return FLOE_OK;
        if (zrc == Z_STREAM_END)
            return floe__err_set(err, FLOE_EFORMAT, "gzip: page of %zu bytes where its "
                                 "header says %zu", got, out_len);
        return floe__err_set(err, FLOE_EFORMAT, "gzip: corrupt page (%s)",
                             z->msg ? z->msg : zrc == Z_BUF_ERROR ? "longer than its header says"
                                                                 : "inflate failed");
    }
}

static int zstd_page(floe__pq_dctx *d, const uint8_t *src, size_t n, uint8_t *dst,
                     size_t out_len, floe_error *err)
{
    if (!d->zstd && !(d->zstd = ZSTD_createDCtx()))
        return FLOE_OOM(err);
    size_t r = ZSTD_decompressDCtx(d->zstd, dst, out_len, src, n);
    if (ZSTD_isError(r))
        return floe__err_set(err, FLOE_EFORMAT, "zstd: %s", ZSTD_getErrorName(r));
    FLOE_RETURN_IF(r != out_len, err, FLOE_EFORMAT,
                   "zstd: page of %zu bytes where its header says %zu", r, out_len);
    return FLOE_OK;
}

int floe__pq_decompress(floe__pq_dctx *d, int codec, const uint8_t *src, size_t n, uint8_t *dst,
                        size_t out_len, floe_error *err)
{
    switch (codec) {
    case PQ_CODEC_UNCOMPRESSED:
        FLOE_RETURN_IF(n != out_len, err, FLOE_EFORMAT,
                       "uncompressed page of %zu bytes where its header says %zu", n, out_len);
        if (n)
            memcpy(dst, src, n);
        return FLOE_OK;
    case PQ_CODEC_SNAPPY: return snappy_page(src, n, dst, out_len, err);
    case PQ_CODEC_GZIP: return gzip_page(d, src, n, dst, out_len, err);
    case PQ_CODEC_ZSTD: return zstd_page(d, src, n, dst, out_len, err);
    default:
        return floe__err_set(err, FLOE_EUNSUPPORTED,
                             "parquet compression codec %s is not supported (floe reads "
                             "UNCOMPRESSED, SNAPPY, GZIP and ZSTD)", floe__pq_codec_name(codec));
    }
}
