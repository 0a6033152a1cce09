/*
 * avro_codec.c - the block codecs of Avro object container files.
 *
 *   null       the bytes as they are
 *   deflate    raw deflate (RFC 1951: no zlib header, no checksum).  Bytes
 *              after the end of the deflate stream are ignored, as Java's
 *              and Python's readers do: pyiceberg writes zlib's output minus
 *              its first two and last byte, leaving 3 bytes of the adler32
 *              trailer behind every block.
 *   snappy     raw snappy, then the big-endian CRC32 of the uncompressed
 *              bytes (checked on reading)
 *   zstandard  zstd frames
 *
 * Decompression never writes past the destination buffer's hard maximum:
 * a block that would is FLOE_EFORMAT, so a small hostile block cannot
 * expand into a huge allocation.  zstd's window is limited for the same
 * reason.
 */
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "avro/avro_internal.h"

#define ZSTD_WINDOW_LOG_MAX 24     /* 16 MiB: above any sane block */
#define INFLATE_CHUNK (64u * 1024)

static const char *const codec_names[] = {"null", "deflate", "snappy", "zstandard"};

const char *floe__avro_codec_name(floe__avro_codec c)
{
    return (unsigned)c < 4 ? codec_names[c] : "?";
}

int floe__avro_codec_parse(const char *name, size_t n, floe__avro_codec *out, floe_error *err)
{
    for (unsigned i = 0; i < 4; i++) {
        if (strlen(codec_names[i]) == n && memcmp(codec_names[i], name, n) == 0) {
            *out = (floe__avro_codec)i;
            return FLOE_OK;
        }
    }
    return floe__err_set(err, FLOE_EUNSUPPORTED, "avro: unsupported codec \"%.*s\"",
                         (int)(n > 40 ? 40 : n), name);
}

/* Room for `extra` more output bytes, where running into the buffer's
 * maximum means the block is bigger than we accept. */
static int room(floe__buf *dst, size_t extra, floe_error *err)
{
    if (extra > dst->max || dst->len > dst->max - extra)
        return floe__err_set(err, FLOE_EFORMAT,
                             "avro: block decompresses to more than %zu bytes", dst->max);
    return floe__buf_reserve(dst, extra, err);
}

/* ---- deflate ------------------------------------------------------------ */

static int deflate_block(int level, const uint8_t *src, size_t n, floe__buf *dst,
                         floe_error *err)
{
    FLOE_RETURN_IF(n > UINT32_MAX, err, FLOE_ELIMIT, "avro: deflate block too large");
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, level ? level : Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
        return floe__err_set(err, FLOE_ENOMEM, "avro: deflateInit2 failed");
    size_t bound = deflateBound(&zs, (uLong)n);
    int rc = floe__buf_reserve(dst, bound, err);
    if (rc == FLOE_OK) {
        zs.next_in = (Bytef *)(uintptr_t)src;
        zs.avail_in = (uInt)n;
        zs.next_out = dst->data + dst->len;
        zs.avail_out = (uInt)bound;
        if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
            rc = floe__err_set(err, FLOE_EINTERNAL, "avro: deflate did not finish");
        else
            dst->len += bound - zs.avail_out;
    }
    deflateEnd(&zs);
    return rc;
}

static int inflate_loop(z_stream *zs, floe__buf *dst, floe_error *err)
{
    for (;;) {
        FLOE_FORWARD(room(dst, INFLATE_CHUNK, err));
        zs->next_out = dst->data + dst->len;
        zs->avail_out = INFLATE_CHUNK;
        int z = inflate(zs, Z_NO_FLUSH);
        dst->len += INFLATE_CHUNK - zs->avail_out;
        if (z == Z_STREAM_END)          /* bytes after the end are ignored (see top) */
            return FLOE_OK;
        if (z == Z_MEM_ERROR)
            return FLOE_OOM(err);
        FLOE_RETURN_IF(z != Z_OK, err, FLOE_EFORMAT, "avro: corrupt deflate block (%s)",
                       zs->msg ? zs->msg : "truncated");
        FLOE_RETURN_IF(zs->avail_in == 0 && zs->avail_out != 0, err, FLOE_EFORMAT,
                       "avro: truncated deflate block");
    }
}

static int inflate_block(const uint8_t *src, size_t n, floe__buf *dst, floe_error *err)
{
    FLOE_RETURN_IF(n > UINT32_MAX, err, FLOE_EFORMAT, "avro: deflate block too large");
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -15) != Z_OK)
        return FLOE_OOM(err);
    zs.next_in = (Bytef *)(uintptr_t)src;
    zs.avail_in = (uInt)n;
    int rc = inflate_loop(&zs, dst, err);
    inflateEnd(&zs);
    return rc;
}

/* ---- snappy ------------------------------------------------------------- */

static uint32_t crc32_of(const uint8_t *p, size_t n)
{
    uLong crc = crc32(0L, Z_NULL, 0);
    while (n > 0) {
        uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
        crc = crc32(crc, p, chunk);
        p += chunk;
        n -= chunk;
    }
    return (uint32_t)crc;
}

static int snappy_block(const uint8_t *src, size_t n, floe__buf *dst, floe_error *err)
{
    size_t bound = snappy_max_compressed_length(n);
    FLOE_FORWARD(floe__buf_reserve(dst, bound + 4, err));
    size_t out = bound;
    if (snappy_compress((const char *)src, n, (char *)dst->data + dst->len, &out) != SNAPPY_OK)
        return floe__err_set(err, FLOE_EINTERNAL, "avro: snappy_compress failed");
    dst->len += out;
    uint32_t crc = crc32_of(src, n);
    uint8_t be[4] = {(uint8_t)(crc >> 24), (uint8_t)(crc >> 16), (uint8_t)(crc >> 8),
                     (uint8_t)crc};
    floe__buf_put_unchecked(dst, be, 4);
    return FLOE_OK;
}

static int unsnappy_block(const uint8_t *src, size_t n, floe__buf *dst, floe_error *err)
{
    FLOE_RETURN_IF(n < 4, err, FLOE_EFORMAT, "avro: snappy block shorter than its CRC");
    n -= 4;
    size_t len;
    FLOE_RETURN_IF(snappy_uncompressed_length((const char *)src, n, &len) != SNAPPY_OK, err,
                   FLOE_EFORMAT, "avro: corrupt snappy block header");
    FLOE_FORWARD(room(dst, len, err));
    FLOE_FORWARD(floe__buf_reserve(dst, 1, err));   /* a real base even for len 0 */
    size_t got = len;
    FLOE_RETURN_IF(snappy_uncompress((const char *)src, n, (char *)dst->data + dst->len, &got) !=
                           SNAPPY_OK ||
                       got != len,
                   err, FLOE_EFORMAT, "avro: corrupt snappy block");
    const uint8_t *c = src + n;
    uint32_t want = (uint32_t)c[0] << 24 | (uint32_t)c[1] << 16 | (uint32_t)c[2] << 8 | c[3];
    uint32_t have = crc32_of(dst->data + dst->len, len);
    FLOE_RETURN_IF(want != have, err, FLOE_EFORMAT,
                   "avro: snappy block CRC32 mismatch (stored %08x, computed %08x)", want, have);
    dst->len += len;
    return FLOE_OK;
}

/* ---- zstandard ------------------------------------------------------------ */

static int zstd_block(int level, const uint8_t *src, size_t n, floe__buf *dst, floe_error *err)
{
    size_t bound = ZSTD_compressBound(n);
    FLOE_FORWARD(floe__buf_reserve(dst, bound, err));
    size_t out = ZSTD_compress(dst->data + dst->len, bound, src, n, level ? level : 3);
    if (ZSTD_isError(out))
        return floe__err_set(err, FLOE_EINTERNAL, "avro: zstd: %s", ZSTD_getErrorName(out));
    dst->len += out;
    return FLOE_OK;
}

static int unzstd_loop(ZSTD_DCtx *dc, const uint8_t *src, size_t n, floe__buf *dst,
                       floe_error *err)
{
    ZSTD_inBuffer in = {src, n, 0};
    size_t last = 0;
    while (in.pos < in.size) {
        FLOE_FORWARD(room(dst, INFLATE_CHUNK, err));
        ZSTD_outBuffer out = {dst->data + dst->len, INFLATE_CHUNK, 0};
        size_t before = in.pos;
        last = ZSTD_decompressStream(dc, &out, &in);
        FLOE_RETURN_IF(ZSTD_isError(last), err, FLOE_EFORMAT, "avro: corrupt zstd block: %s",
                       ZSTD_getErrorName(last));
        dst->len += out.pos;
        FLOE_RETURN_IF(out.pos == 0 && in.pos == before, err, FLOE_EFORMAT,
                       "avro: zstd block makes no progress");
    }
    /* Flush what the decoder still holds once the input is used up. */
    while (last != 0) {
        FLOE_FORWARD(room(dst, INFLATE_CHUNK, err));
        ZSTD_outBuffer out = {dst->data + dst->len, INFLATE_CHUNK, 0};
        last = ZSTD_decompressStream(dc, &out, &in);
        FLOE_RETURN_IF(ZSTD_isError(last), err, FLOE_EFORMAT, "avro: corrupt zstd block: %s",
                       ZSTD_getErrorName(last));
        dst->len += out.pos;
        FLOE_RETURN_IF(out.pos == 0 && last != 0, err, FLOE_EFORMAT,
                       "avro: truncated zstd block");
    }
    return FLOE_OK;
}

static int unzstd_block(const uint8_t *src, size_t n, floe__buf *dst, floe_error *err)
{
    ZSTD_DCtx *dc = ZSTD_createDCtx();
    if (!dc)
        return FLOE_OOM(err);
    int rc = FLOE_OK;
    if (ZSTD_isError(ZSTD_DCtx_setParameter(dc, ZSTD_d_windowLogMax, ZSTD_WINDOW_LOG_MAX)))
        rc = floe__err_set(err, FLOE_EINTERNAL, "avro: cannot limit the zstd window");
    if (rc == FLOE_OK)
        rc = unzstd_loop(dc, src, n, dst, err);
    ZSTD_freeDCtx(dc);
    return rc;
}

/* ---- dispatch ------------------------------------------------------------- */

int floe__avro_compress(floe__avro_codec c, int level, const uint8_t *src, size_t n,
                        floe__buf *dst, floe_error *err)
{
    switch (c) {
    case FLOE_AVRO_CODEC_NULL: return floe__buf_append(dst, src, n, err);
    case FLOE_AVRO_CODEC_DEFLATE: return deflate_block(level, src, n, dst, err);
    case FLOE_AVRO_CODEC_SNAPPY: return snappy_block(src, n, dst, err);
    case FLOE_AVRO_CODEC_ZSTD: return zstd_block(level, src, n, dst, err);
    }
    return floe__err_set(err, FLOE_EINVAL, "avro: unknown codec %d", (int)c);
}

int floe__avro_decompress(floe__avro_codec c, const uint8_t *src, size_t n, floe__buf *dst,
                          floe_error *err)
{
    switch (c) {
    case FLOE_AVRO_CODEC_NULL:
        FLOE_FORWARD(room(dst, n, err));
        if (n)
            floe__buf_put_unchecked(dst, src, n);
        return FLOE_OK;
    case FLOE_AVRO_CODEC_DEFLATE: return inflate_block(src, n, dst, err);
    case FLOE_AVRO_CODEC_SNAPPY: return unsnappy_block(src, n, dst, err);
    case FLOE_AVRO_CODEC_ZSTD: return unzstd_block(src, n, dst, err);
    }
    return floe__err_set(err, FLOE_EINVAL, "avro: unknown codec %d", (int)c);
}
