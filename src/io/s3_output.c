/*
 * s3_output.c - writing one S3 object as a floe__output.
 *
 * Bytes gather in a part buffer.  If close() comes before the buffer
 * overflows, the object is one PUT.  Otherwise the first overflow starts a
 * multipart upload (CreateMultipartUpload) and every full buffer becomes a
 * part (UploadPart); close() sends the rest as the last part and
 * CompleteMultipartUpload.  The part size doubles after every 1000 parts,
 * so S3's limit of 10000 parts allows objects of terabytes.
 *
 * Invariant: nothing is visible under the key until close() succeeds.  A
 * failed part, a failed completion or abort() aborts the multipart upload
 * (AbortMultipartUpload), so no parts are left behind either (best effort:
 * when even the abort fails, S3's lifecycle rules for incomplete uploads
 * are the last resort; the object itself never appears).
 *
 * Integrity: every PUT and part carries its CRC32 (x-amz-checksum-crc32);
 * S3 refuses a body that does not match (BadDigest, retried), so bytes
 * damaged on the way never land, even over plain HTTP with an unsigned
 * payload.  A multipart upload declares the algorithm when it starts and
 * lists each part's checksum when it completes.
 *
 * A CompleteMultipartUpload whose reply was lost is retried; if the retry
 * says NoSuchUpload, the first attempt landed when an object of exactly
 * the bytes written is there (HEAD).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#include "io/s3_internal.h"

typedef struct s3_output {
    floe__output base;
    floe__s3 *s3;
    s3_loc loc;
    floe__buf part;               /* the part being filled */
    size_t part_size;
    char *upload_id;              /* NULL until a multipart upload starts */
    char *upload_q;               /* "uploadId=<encoded id>" */
    floe__buf parts_xml;          /* <Part> elements of the parts sent */
    int n_parts;
    uint64_t total;               /* bytes accepted */
    int failed;                   /* the code of an earlier failure, else FLOE_OK */
} s3_output;

/* The x-amz-checksum-crc32 value of n bytes: base64 of the big-endian CRC. */
static void crc32_header(const uint8_t *p, size_t n, char out[16])
{
    uLong crc = crc32_z(0L, Z_NULL, 0);
    if (n)
        crc = crc32_z(crc, p, n);
    uint8_t be[4] = {(uint8_t)(crc >> 24), (uint8_t)(crc >> 16), (uint8_t)(crc >> 8),
                     (uint8_t)crc};
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint32_t v = (uint32_t)be[0] << 16 | (uint32_t)be[1] << 8 | be[2];
    out[0] = b64[v >> 18];
    out[1] = b64[(v >> 12) & 63];
    out[2] = b64[(v >> 6) & 63];
    out[3] = b64[v & 63];
    v = (uint32_t)be[3] << 16;
    out[4] = b64[v >> 18];
    out[5] = b64[(v >> 12) & 63];
    out[6] = '=';
    out[7] = '=';
    out[8] = '\0';
}

/* One request under the current settings. */
static int request(s3_output *so, const s3_req *r, floe__http_response *resp, floe_error *err)
{
    s3_conf *c = floe__s3_conf_get(so->s3);
    int rc = floe__s3_request(so->s3, c, r, resp, err);
    floe__s3_conf_put(so->s3, c);
    return rc;
}

static int create_upload(s3_output *so, floe_error *err)
{
    static const floe__http_header h[] = {{"Content-Type", "application/octet-stream"},
                                          {"x-amz-checksum-algorithm", "CRC32"}};
    floe__http_response resp;
    floe__http_response_init(&resp);
    s3_req r = {.method = "POST", .loc = &so->loc, .query = "uploads=", .body = "",
                .body_len = 0, .headers = h, .n_headers = 2,
                .what = "CreateMultipartUpload"};
    int rc = request(so, &r, &resp, err);
    floe__buf id, q;
    floe__buf_init(&id, 4096);
    floe__buf_init(&q, 0);
    if (rc == FLOE_OK &&
        !floe__s3_xml_text((const char *)resp.body.data, resp.body.len, "UploadId", &id))
        rc = floe__err_set(err, FLOE_EIO,
                           "S3 CreateMultipartUpload s3://%s/%s: the reply has no UploadId",
                           so->loc.bucket, so->loc.key);
    if (rc == FLOE_OK && !id.len)
        rc = floe__err_set(err, FLOE_EIO,
                           "S3 CreateMultipartUpload s3://%s/%s: the UploadId is empty",
                           so->loc.bucket, so->loc.key);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(&q, err, "uploadId=");
    if (rc == FLOE_OK)
        rc = floe__url_encode((const char *)id.data, &q, err);
    if (rc == FLOE_OK) {
        so->upload_id = floe__buf_strdup(&id);
        so->upload_q = floe__buf_strdup(&q);
        if (!so->upload_id || !so->upload_q)
            rc = FLOE_OOM(err);
    }
    floe__buf_free(&id);
    floe__buf_free(&q);
    floe__http_response_free(&resp);
    return rc;
}

/* Best effort: the upload and its parts go.  Cannot fail. */
static void abort_upload(s3_output *so)
{
    if (!so->upload_id)
        return;
    floe__http_response resp;
    floe__http_response_init(&resp);
    s3_req r = {.method = "DELETE", .loc = &so->loc, .query = so->upload_q,
                .what = "AbortMultipartUpload"};
    request(so, &r, &resp, NULL);
    floe__http_response_free(&resp);
    floe__free(so->upload_id);
    floe__free(so->upload_q);
    so->upload_id = so->upload_q = NULL;
}

/* PUT the buffered bytes (an object, or a part with `query`) with their
 * CRC32; the reply's ETag goes to etag[cap] when etag is not NULL.  The
 * CRC used goes to crc[16]. */
static int put_buffer(s3_output *so, const char *query, const char *what, char crc[16],
                      char *etag, size_t cap, floe_error *err)
{
    crc32_header(so->part.data, so->part.len, crc);
    floe__http_header h[] = {{"Content-Type", "application/octet-stream"},
                             {"x-amz-checksum-crc32", crc}};
    floe__http_response resp;
    floe__http_response_init(&resp);
    s3_req r = {.method = "PUT", .loc = &so->loc, .query = query,
                .body = so->part.data ? (const void *)so->part.data : "",
                .body_len = so->part.len, .headers = h, .n_headers = 2, .what = what};
    int rc = request(so, &r, &resp, err);
    if (rc == FLOE_OK && etag && !floe__http_response_header(&resp, "ETag", etag, cap))
        rc = floe__err_set(err, FLOE_EIO, "S3 %s s3://%s/%s: the reply has no ETag", what,
                           so->loc.bucket, so->loc.key);
    floe__http_response_free(&resp);
    return rc;
}

/* Send the buffer as the next part. */
static int send_part(s3_output *so, floe_error *err)
{
    FLOE_RETURN_IF(so->n_parts >= S3_MAX_PARTS, err, FLOE_ELIMIT,
                   "s3://%s/%s: more than %d parts", so->loc.bucket, so->loc.key, S3_MAX_PARTS);
    if (!so->upload_id)
        FLOE_FORWARD(create_upload(so, err));
    int number = so->n_parts + 1;
    char query[64 + 1024], what[48];
    int ql = snprintf(query, sizeof query, "partNumber=%d&%s", number, so->upload_q);
    FLOE_RETURN_IF(ql < 0 || (size_t)ql >= sizeof query, err, FLOE_EIO,
                   "s3://%s/%s: the upload id is too long", so->loc.bucket, so->loc.key);
    snprintf(what, sizeof what, "UploadPart %d", number);
    char crc[16], etag[256];
    int rc = put_buffer(so, query, what, crc, etag, sizeof etag, err);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(&so->parts_xml, err, "<Part><PartNumber>%d</PartNumber><ETag>",
                              number);
    if (rc == FLOE_OK)
        rc = floe__s3_xml_escape(etag, &so->parts_xml, err);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(&so->parts_xml, err,
                              "</ETag><ChecksumCRC32>%s</ChecksumCRC32></Part>", crc);
    FLOE_FORWARD(rc);
    so->n_parts = number;
    floe__buf_reset(&so->part);
    if (so->n_parts % 1000 == 0 && so->part_size <= S3_MAX_PART_SIZE / 2)
        so->part_size *= 2;
    return FLOE_OK;
}

/* After a failure: the upload goes at once, later calls fail. */
static int fail(s3_output *so, int rc)
{
    so->failed = rc;
    abort_upload(so);
    floe__buf_free(&so->part);
    return rc;
}

static int s3o_write(floe__output *o, const void *p, size_t n, floe_error *err)
{
    s3_output *so = (s3_output *)o;
    FLOE_RETURN_IF(so->failed, err, so->failed, "s3://%s/%s: an earlier write failed",
                   so->loc.bucket, so->loc.key);
    const uint8_t *b = p;
    while (n > 0) {
        if (so->part.len == so->part_size) {  /* full, and more is coming */
            int rc = send_part(so, err);
            if (rc != FLOE_OK)
                return fail(so, rc);
        }
        size_t take = so->part_size - so->part.len;
        take = take < n ? take : n;
        int rc = floe__buf_append(&so->part, b, take, err);
        if (rc != FLOE_OK)
            return fail(so, rc);
        b += take;
        n -= take;
        so->total += take;
    }
    return FLOE_OK;
}

static int put_object(s3_output *so, floe_error *err)
{
    char crc[16];
    return put_buffer(so, NULL, "PUT", crc, NULL, 0, err);
}

/* After NoSuchUpload on completion: did an earlier attempt complete it? */
static bool landed(s3_output *so)
{
    floe__http_response resp;
    floe__http_response_init(&resp);
    s3_req r = {.method = "HEAD", .loc = &so->loc, .what = "HEAD (after completing)"};
    char len[32];
    bool ok = request(so, &r, &resp, NULL) == FLOE_OK &&
              floe__http_response_header(&resp, "Content-Length", len, sizeof len) &&
              strtoull(len, NULL, 10) == so->total;
    floe__http_response_free(&resp);
    return ok;
}

static int complete_upload(s3_output *so, floe_error *err)
{
    floe__buf body;
    floe__buf_init(&body, 0);
    int rc = floe__buf_printf(&body, err, "<CompleteMultipartUpload>");
    if (rc == FLOE_OK)
        rc = floe__buf_append(&body, so->parts_xml.data, so->parts_xml.len, err);
    if (rc == FLOE_OK)
        rc = floe__buf_printf(&body, err, "</CompleteMultipartUpload>");
    static const floe__http_header h[] = {{"Content-Type", "application/xml"}};
    floe__http_response resp;
    floe__http_response_init(&resp);
    s3_req r = {.method = "POST", .loc = &so->loc, .query = so->upload_q, .body = body.data,
                .body_len = body.len, .headers = h, .n_headers = 1,
                .what = "CompleteMultipartUpload", .error_in_200 = true};
    if (rc == FLOE_OK)
        rc = request(so, &r, &resp, err);
    if (rc == FLOE_ENOTFOUND && landed(so))
        rc = FLOE_OK;
    if (rc == FLOE_OK) {                   /* complete: nothing left to abort */
        floe__free(so->upload_id);
        floe__free(so->upload_q);
        so->upload_id = so->upload_q = NULL;
    }
    floe__http_response_free(&resp);
    floe__buf_free(&body);
    return rc;
}

static void destroy(s3_output *so)
{
    floe__s3_loc_free(&so->loc);
    floe__buf_free(&so->part);
    floe__buf_free(&so->parts_xml);
    floe__free(so->upload_id);
    floe__free(so->upload_q);
    floe__free(so);
}

static void s3o_abort(floe__output *o)
{
    s3_output *so = (s3_output *)o;
    abort_upload(so);
    destroy(so);
}

static int s3o_close(floe__output *o, floe_error *err)
{
    s3_output *so = (s3_output *)o;
    int rc = so->failed;
    if (rc != FLOE_OK)
        rc = floe__err_set(err, rc, "s3://%s/%s: an earlier write failed", so->loc.bucket,
                           so->loc.key);
    else if (!so->upload_id)
        rc = put_object(so, err);
    else {
        if (so->part.len > 0)
            rc = send_part(so, err);
        if (rc == FLOE_OK)
            rc = complete_upload(so, err);
    }
    if (rc != FLOE_OK)
        abort_upload(so);
    destroy(so);
    return rc;
}

int floe__s3_output_open(floe__s3 *s, const char *uri, floe__output **out, floe_error *err)
{
    s3_output *so = floe__calloc(1, sizeof *so);
    if (!so)
        return FLOE_OOM(err);
    int rc = floe__s3_parse_uri(uri, &so->loc, err);
    if (rc != FLOE_OK) {
        floe__free(so);
        return rc;
    }
    s3_conf *c = floe__s3_conf_get(s);
    so->part_size = c->part_size;
    floe__s3_conf_put(s, c);
    so->s3 = s;
    floe__buf_init(&so->part, 0);
    floe__buf_init(&so->parts_xml, 0);
    so->base.write = s3o_write;
    so->base.close = s3o_close;
    so->base.abort = s3o_abort;
    *out = &so->base;
    return FLOE_OK;
}
