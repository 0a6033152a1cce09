/*
 * puffin.c - Iceberg deletion vectors (Puffin `deletion-vector-v1` blobs)
 * and the Puffin files that hold them: writing a file of DVs, parsing a
 * footer, decoding one DV at the offset a manifest entry names.
 *
 * A Puffin file is "PFA1", the blobs, then the footer "PFA1", the JSON
 * FileMetadata, its length (4 bytes, little-endian), 4 bytes of flags
 * (bit 0: footer compressed) and "PFA1".  A DV blob is the big-endian
 * length of magic + vector, the magic D1 D3 39 64, the vector (the
 * portable 64-bit Roaring serialization of roaring.c) and a big-endian
 * CRC-32 of magic + vector.  Nothing here knows manifests or tables.
 */
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

#include "iceberg/puffin_internal.h"

static const uint8_t PUFFIN_MAGIC[4] = {0x50, 0x46, 0x41, 0x31};
static const uint8_t DV_MAGIC[4] = {0xD1, 0xD3, 0x39, 0x64};
#define POS_FIELD_ID 2147483545

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint32_t crc_of(const uint8_t *p, size_t n)
{
    uLong c = crc32(0L, Z_NULL, 0);
    while (n) {
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, k);
        p += k;
        n -= k;
    }
    return (uint32_t)c;
}

/* ---- one deletion vector ------------------------------------------------------------ */

int floe__dv_encode(const floe__posbitmap *b, floe__buf *out, floe_error *err)
{
    size_t start = out->len;
    uint8_t four[4] = {0};
    FLOE_FORWARD(floe__buf_append(out, four, 4, err));
    int rc = floe__buf_append(out, DV_MAGIC, 4, err);
    if (rc == FLOE_OK)
        rc = floe__posbitmap_serialize(b, out, err);
    size_t body = out->len - start - 4;               /* magic + vector */
    if (rc == FLOE_OK && body > INT32_MAX - 8)
        rc = floe__err_set(err, FLOE_ELIMIT, "deletion vector larger than 2 GiB");
    if (rc == FLOE_OK) {
        put_be32(out->data + start, (uint32_t)body);
        put_be32(four, crc_of(out->data + start + 4, body));
        rc = floe__buf_append(out, four, 4, err);
    }
    if (rc != FLOE_OK)
        out->len = start;
    return rc;
}

int floe__dv_decode(const uint8_t *p, size_t n, floe__posbitmap *out, floe_error *err)
{
    FLOE_RETURN_IF(n < 12, err, FLOE_EFORMAT, "deletion vector: %zu bytes is too short", n);
    uint32_t body = get_be32(p);
    FLOE_RETURN_IF(body != n - 8, err, FLOE_EFORMAT,
                   "deletion vector: length field %u does not match the blob (%zu bytes)", body,
                   n);
    FLOE_RETURN_IF(memcmp(p + 4, DV_MAGIC, 4) != 0, err, FLOE_EFORMAT,
                   "deletion vector: bad magic %02x %02x %02x %02x", p[4], p[5], p[6], p[7]);
    uint32_t want = get_be32(p + n - 4), have = crc_of(p + 4, body);
    FLOE_RETURN_IF(want != have, err, FLOE_EFORMAT,
                   "deletion vector: CRC-32 is 0x%08x, the blob says 0x%08x", have, want);
    size_t used = 0;
    FLOE_FORWARD(floe__posbitmap_deserialize(p + 8, body - 4, out, &used, err));
    if (used != body - 4) {
        floe__posbitmap_clear(out);
        return floe__err_set(err, FLOE_EFORMAT, "deletion vector: %zu bytes after the bitmap",
                             (size_t)(body - 4 - used));
    }
    return FLOE_OK;
}

int floe__dv_read_at(const uint8_t *p, size_t n, int64_t offset, int64_t length,
                     int64_t cardinality, floe__posbitmap *out, floe_error *err)
{
    FLOE_RETURN_IF(offset < 4 || length < 12 || (uint64_t)offset > n ||
                   (uint64_t)length > n - (uint64_t)offset, err, FLOE_EFORMAT,
                   "deletion vector at [%lld, +%lld) is outside the %zu-byte Puffin file",
                   (long long)offset, (long long)length, n);
    FLOE_FORWARD(floe__dv_decode(p + offset, (size_t)length, out, err));
    if (cardinality >= 0 && floe__posbitmap_count(out) != (uint64_t)cardinality) {
        uint64_t have = floe__posbitmap_count(out);
        floe__posbitmap_clear(out);
        return floe__err_set(err, FLOE_EFORMAT, "deletion vector holds %llu positions, its "
                             "manifest entry says %lld", (unsigned long long)have,
                             (long long)cardinality);
    }
    return FLOE_OK;
}

/* ---- footers ---------------------------------------------------------------------------- */

void floe__puffin_footer_clear(floe__puffin_footer *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++) {
        floe__free(f->blobs[i].type);
        floe__free(f->blobs[i].compression);
        floe__free(f->blobs[i].referenced_data_file);
    }
    floe__free(f->blobs);
    memset(f, 0, sizeof *f);
}

static int dup_opt(const json_t *s, char **out, floe_error *err)
{
    *out = NULL;
    if (!json_is_string(s))
        return FLOE_OK;
    *out = floe__strdup(json_string_value(s));
    return *out ? FLOE_OK : FLOE_OOM(err);
}

/* One BlobMetadata; its range must lie between the magic and the footer. */
static int parse_blob(const json_t *o, size_t i, size_t footer_at, floe__puffin_blob *b,
                      floe_error *err)
{
    const json_t *type = json_object_get(o, "type"), *off = json_object_get(o, "offset");
    const json_t *len = json_object_get(o, "length"), *props = json_object_get(o, "properties");
    FLOE_RETURN_IF(!json_is_object(o) || !json_is_string(type) || !json_is_integer(off) ||
                   !json_is_integer(len) || !json_is_array(json_object_get(o, "fields")), err,
                   FLOE_EFORMAT, "Puffin footer: blob %zu lacks type, fields, offset or length",
                   i);
    b->offset = json_integer_value(off);
    b->length = json_integer_value(len);
    FLOE_RETURN_IF(b->offset < 4 || b->length < 0 || (uint64_t)b->offset > footer_at ||
                   (uint64_t)b->length > footer_at - (uint64_t)b->offset, err, FLOE_EFORMAT,
                   "Puffin footer: blob %zu at [%lld, +%lld) is outside the blob area", i,
                   (long long)b->offset, (long long)b->length);
    FLOE_RETURN_IF(props && !json_is_object(props), err, FLOE_EFORMAT,
                   "Puffin footer: blob %zu properties is not an object", i);
    FLOE_FORWARD(dup_opt(type, &b->type, err));
    FLOE_FORWARD(dup_opt(json_object_get(o, "compression-codec"), &b->compression, err));
    FLOE_FORWARD(dup_opt(json_object_get(props, "referenced-data-file"),
                         &b->referenced_data_file, err));
    const char *card = json_string_value(json_object_get(props, "cardinality"));
    if (card) {
        char *end;
        long long v = strtoll(card, &end, 10);
        FLOE_RETURN_IF(!*card || *end || v < 0, err, FLOE_EFORMAT,
                       "Puffin footer: blob %zu cardinality \"%s\" is not a count", i, card);
        b->has_cardinality = true;
        b->cardinality = v;
    }
    return FLOE_OK;
}

static int parse_payload(const uint8_t *p, size_t len, size_t footer_at, floe__puffin_footer *out,
                         floe_error *err)
{
    json_error_t je;
    json_t *doc = json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, &je);
    FLOE_RETURN_IF(!doc, err, FLOE_EFORMAT, "Puffin footer: invalid JSON: %s", je.text);
    const json_t *blobs = json_object_get(doc, "blobs");
    int rc = json_is_array(blobs) ? FLOE_OK
                                  : floe__err_set(err, FLOE_EFORMAT, "Puffin footer: no blobs");
    size_t n = json_array_size(blobs);
    if (rc == FLOE_OK && n) {
        out->blobs = floe__calloc(n, sizeof *out->blobs);
        rc = out->blobs ? FLOE_OK : FLOE_OOM(err);
    }
    for (size_t i = 0; rc == FLOE_OK && i < n; i++) {
        out->n = i + 1;
        rc = parse_blob(json_array_get(blobs, i), i, footer_at, &out->blobs[i], err);
    }
    json_decref(doc);
    return rc;
}

int floe__puffin_footer_parse(const uint8_t *p, size_t n, floe__puffin_footer *out,
                              floe_error *err)
{
    memset(out, 0, sizeof *out);
    FLOE_RETURN_IF(n < 4 + 4 + 12 || memcmp(p, PUFFIN_MAGIC, 4) != 0 ||
                   memcmp(p + n - 4, PUFFIN_MAGIC, 4) != 0, err, FLOE_EFORMAT,
                   "not a Puffin file (magic missing, or %zu bytes is too short)", n);
    uint32_t flags = floe__get_le32(p + n - 8);
    int32_t size = (int32_t)floe__get_le32(p + n - 12);
    FLOE_RETURN_IF(size < 0 || (size_t)size > n - 4 - 4 - 12, err, FLOE_EFORMAT,
                   "Puffin footer: payload size %d does not fit the file", (int)size);
    size_t footer_at = n - 12 - (size_t)size - 4;        /* where the footer's magic starts */
    FLOE_RETURN_IF(memcmp(p + footer_at, PUFFIN_MAGIC, 4) != 0, err, FLOE_EFORMAT,
                   "Puffin footer: no magic before the payload");
    FLOE_RETURN_IF(flags & 1, err, FLOE_EUNSUPPORTED, "Puffin footer: compressed footers are "
                   "not supported");
    int rc = parse_payload(p + footer_at + 4, (size_t)size, footer_at, out, err);
    if (rc != FLOE_OK)
        floe__puffin_footer_clear(out);
    return rc;
}

/* ---- writing a file of deletion vectors --------------------------------------------------- */

static json_t *blob_json(const floe__puffin_dv *d)
{
    char card[24];
    snprintf(card, sizeof card, "%llu", (unsigned long long)floe__posbitmap_count(d->positions));
    return json_pack("{s:s, s:[i], s:i, s:i, s:I, s:I, s:{s:s, s:s}}", "type", FLOE_DV_BLOB_TYPE,
                     "fields", POS_FIELD_ID, "snapshot-id", -1, "sequence-number", -1,
                     "offset", (json_int_t)d->offset, "length", (json_int_t)d->length,
                     "properties", "referenced-data-file", d->referenced_data_file,
                     "cardinality", card);
}

/* jansson (2.14) ignores a failed dump callback in some paths: failures
 * are remembered here and checked after the dump. */
typedef struct dump_sink {
    floe__buf *out;
    bool failed;
} dump_sink;

static int dump_cb(const char *buffer, size_t size, void *data)
{
    dump_sink *d = data;
    if (!d->failed && floe__buf_append(d->out, buffer, size, NULL) != FLOE_OK)
        d->failed = true;
    return d->failed ? -1 : 0;
}

/* The footer of dvs (offsets and lengths known) appended to out. */
static int put_footer(floe__buf *out, const floe__puffin_dv *dvs, size_t n, floe_error *err)
{
    json_t *blobs = json_array();
    json_t *doc = blobs ? json_pack("{s:o, s:{s:s}}", "blobs", blobs, "properties",
                                    "created-by", "floe") : NULL;
    int rc = doc ? FLOE_OK : FLOE_OOM(err);
    for (size_t i = 0; rc == FLOE_OK && i < n; i++) {
        json_t *b = blob_json(&dvs[i]);
        rc = b && json_array_append_new(blobs, b) == 0 ? FLOE_OK : FLOE_OOM(err);
    }
    if (rc == FLOE_OK)
        rc = floe__buf_append(out, PUFFIN_MAGIC, 4, err);
    size_t start = out->len;
    dump_sink d = {out, false};
    if (rc == FLOE_OK && (json_dump_callback(doc, dump_cb, &d, JSON_COMPACT) != 0 || d.failed))
        rc = FLOE_OOM(err);
    json_decref(doc);
    size_t len = out->len - start;
    if (rc == FLOE_OK && len > INT32_MAX)
        rc = floe__err_set(err, FLOE_ELIMIT, "Puffin footer too large");
    uint8_t tail[8] = {0};
    floe__put_le32(tail, (uint32_t)len);
    if (rc == FLOE_OK)
        rc = floe__buf_append(out, tail, 8, err);
    if (rc == FLOE_OK)
        rc = floe__buf_append(out, PUFFIN_MAGIC, 4, err);
    return rc;
}

static int write_blobs(floe__output *o, floe__puffin_dv *dvs, size_t n, floe__buf *scratch,
                       uint64_t *at, floe_error *err)
{
    FLOE_FORWARD(floe__output_write(o, PUFFIN_MAGIC, 4, err));
    *at = 4;
    for (size_t i = 0; i < n; i++) {
        FLOE_RETURN_IF(!dvs[i].referenced_data_file || !dvs[i].positions ||
                       floe__posbitmap_count(dvs[i].positions) == 0, err, FLOE_EINVAL,
                       "deletion vector %zu has no data file or no positions", i);
        floe__buf_reset(scratch);
        FLOE_FORWARD(floe__dv_encode(dvs[i].positions, scratch, err));
        FLOE_FORWARD(floe__output_write(o, scratch->data, scratch->len, err));
        dvs[i].offset = (int64_t)*at;
        dvs[i].length = (int64_t)scratch->len;
        *at += scratch->len;
    }
    floe__buf_reset(scratch);
    FLOE_FORWARD(put_footer(scratch, dvs, n, err));
    FLOE_FORWARD(floe__output_write(o, scratch->data, scratch->len, err));
    *at += scratch->len;
    return FLOE_OK;
}

int floe__puffin_write_dvs(floe__fileio *io, const char *uri, floe__puffin_dv *dvs, size_t n,
                           uint64_t *file_size, floe_error *err)
{
    floe__output *o;
    FLOE_FORWARD_CTX(floe__fileio_open_output(io, uri, &o, err), err, "writing %s", uri);
    floe__buf scratch;
    floe__buf_init(&scratch, 0);
    uint64_t size = 0;
    int rc = write_blobs(o, dvs, n, &scratch, &size, err);
    floe__buf_free(&scratch);
    if (rc != FLOE_OK) {
        o->abort(o);
        return floe__err_wrap(err, rc, "writing %s", uri);
    }
    FLOE_FORWARD_CTX(o->close(o, err), err, "writing %s", uri);
    if (file_size)
        *file_size = size;
    return FLOE_OK;
}
