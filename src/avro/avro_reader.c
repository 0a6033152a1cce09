/*
 * avro_reader.c - reads Avro object container files from memory and
 * decodes their objects, by the writer's schema, into value trees.
 *
 * Trust nothing in the file: every count and length is checked against the
 * bytes that remain before anything is allocated for it, decompression
 * stops at the block limit, nesting stops at FLOE_AVRO_MAX_DEPTH, and an
 * object may hold at most `max_values` values (an array of nulls costs no
 * bytes per item, so byte counts alone cannot bound it).
 *
 * Memory: the current block's decompressed bytes live in `block`; decoded
 * values and copies of their strings and bytes live in `arena`, which is
 * reset for every object.
 */
#include "avro/avro_internal.h"

#define DEFAULT_MAX_BLOCK ((size_t)64 << 20)
#define DEFAULT_MAX_VALUES ((size_t)1 << 20)
#define MAX_META 10000

struct floe__avro_reader {
    floe__avro_cursor file;          /* the rest of the file */
    floe__avro_schema *schema;
    floe__avro_codec codec;
    uint8_t sync[16];
    size_t n_meta;
    char **meta_keys, **meta_values;
    size_t *meta_lens;
    floe__buf block;                 /* the current block, decompressed */
    floe__avro_cursor cur;           /* position in `block` */
    uint64_t block_left;             /* objects still to decode from `block` */
    uint64_t blocks;
    floe__arena *arena;
    size_t max_values, values;       /* per object: limit, used */
    uint64_t objects;
    int failed;
};

/* Where cursors point when there are no bytes at all (a NULL base would
 * make even `p + 0` undefined). */
static const uint8_t no_bytes[1];

static const floe__avro_node map_key_node = {
    .type = FLOE_AVRO_STRING, .element_id = -1, .key_id = -1, .value_id = -1, .min_size = 1};

/* ---- header ----------------------------------------------------------------- */

static int add_meta(floe__avro_reader *r, const uint8_t *k, size_t kn, const uint8_t *v,
                    size_t vn, floe_error *err)
{
    FLOE_RETURN_IF(r->n_meta >= MAX_META, err, FLOE_EFORMAT,
                   "avro: more than %d metadata entries", MAX_META);
    size_t i = r->n_meta;
    char **keys = floe__realloc(r->meta_keys, (i + 1) * sizeof *keys);
    if (keys)
        r->meta_keys = keys;
    char **vals = keys ? floe__realloc(r->meta_values, (i + 1) * sizeof *vals) : NULL;
    if (vals)
        r->meta_values = vals;
    size_t *lens = vals ? floe__realloc(r->meta_lens, (i + 1) * sizeof *lens) : NULL;
    if (!lens)
        return FLOE_OOM(err);
    r->meta_lens = lens;
    r->meta_keys[i] = floe__strndup((const char *)k, kn);
    r->meta_values[i] = floe__strndup((const char *)v, vn);
    r->meta_lens[i] = vn;
    r->n_meta++;                     /* counted even when a copy failed: freed alike */
    if (!r->meta_keys[i] || !r->meta_values[i])
        return FLOE_OOM(err);
    return FLOE_OK;
}

static int read_meta(floe__avro_reader *r, floe_error *err)
{
    for (;;) {
        uint64_t count;
        FLOE_FORWARD(floe__avro_dec_block_count(&r->file, MAX_META, &count, err));
        if (count == 0)
            return FLOE_OK;
        for (uint64_t i = 0; i < count; i++) {
            const uint8_t *k = NULL, *v = NULL;
            size_t kn = 0, vn = 0;
            FLOE_FORWARD(floe__avro_dec_bytes(&r->file, &k, &kn, err));
            FLOE_FORWARD(floe__avro_dec_bytes(&r->file, &v, &vn, err));
            FLOE_FORWARD(add_meta(r, k, kn, v, vn, err));
        }
    }
}

static int read_header(floe__avro_reader *r, floe_error *err)
{
    const uint8_t *p = NULL;
    FLOE_RETURN_IF(floe__avro_left(&r->file) < 4 || memcmp(r->file.p, "Obj\x01", 4) != 0, err,
                   FLOE_EFORMAT, "avro: not an Avro object container file (bad magic)");
    r->file.p += 4;
    FLOE_FORWARD_CTX(read_meta(r, err), err, "avro: file metadata");
    FLOE_FORWARD_CTX(floe__avro_dec_raw(&r->file, 16, &p, err), err, "avro: sync marker");
    memcpy(r->sync, p, 16);
    size_t n;
    const char *schema = floe__avro_reader_meta(r, "avro.schema", &n);
    FLOE_RETURN_IF(!schema, err, FLOE_EFORMAT, "avro: the file has no avro.schema");
    FLOE_FORWARD_CTX(floe__avro_schema_parse(schema, n, &r->schema, err), err,
                     "avro: the file's avro.schema");
    const char *codec = floe__avro_reader_meta(r, "avro.codec", &n);
    r->codec = FLOE_AVRO_CODEC_NULL;
    if (codec)
        FLOE_FORWARD(floe__avro_codec_parse(codec, n, &r->codec, err));
    return FLOE_OK;
}

/* ---- values --------------------------------------------------------------------- */

static int decode(floe__avro_reader *r, const floe__avro_node *node, floe__avro_value *v,
                  int depth, floe_error *err);

static int copy_bytes(floe__avro_reader *r, floe__avro_value *v, const uint8_t *p, size_t n,
                      floe_error *err)
{
    uint8_t *d = floe__arena_alloc(r->arena, n + 1);
    if (!d)
        return FLOE_OOM(err);
    if (n)
        memcpy(d, p, n);
    d[n] = 0;
    v->u.bytes = d;
    v->n = n;
    return FLOE_OK;
}

/* Grow an arena array of `cap` slots (of `per` values each) holding `n`
 * to at least `need` slots; the old copy stays in the arena until reset. */
static int grow_items(floe__avro_reader *r, floe__avro_value **items, size_t *cap, size_t n,
                      size_t need, size_t per, floe_error *err)
{
    if (need <= *cap)
        return FLOE_OK;
    size_t c = *cap * 2 > need ? *cap * 2 : need;
    floe__avro_value *p = floe__arena_alloc(r->arena, c * per * sizeof *p);
    if (!p)
        return FLOE_OOM(err);
    if (n)
        memcpy(p, *items, n * per * sizeof *p);
    *items = p;
    *cap = c;
    return FLOE_OK;
}

/* Arrays and maps: blocks of items until a zero count.  Before a block's
 * slots are allocated its count is bounded by the bytes left (when an item
 * takes at least one byte) and by the values the object may still hold. */
static int decode_items(floe__avro_reader *r, const floe__avro_node *node, floe__avro_value *v,
                        int depth, floe_error *err)
{
    bool map = node->type == FLOE_AVRO_MAP;
    size_t per = map ? 2 : 1;
    size_t min = map ? 1 + node->values->min_size : node->items->min_size;
    floe__avro_value *items = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        uint64_t count;
        FLOE_FORWARD(floe__avro_dec_block_count(&r->cur, r->max_values - r->values, &count, err));
        if (count == 0)
            break;
        FLOE_RETURN_IF(min > 0 && count > floe__avro_left(&r->cur) / min, err, FLOE_EFORMAT,
                       "avro: %s of %llu items cannot fit the %zu bytes left",
                       floe__avro_type_name(node->type), (unsigned long long)count,
                       floe__avro_left(&r->cur));
        FLOE_FORWARD(grow_items(r, &items, &cap, n, n + (size_t)count, per, err));
        for (uint64_t i = 0; i < count; i++, n++) {
            if (map)
                FLOE_FORWARD(decode(r, &map_key_node, &items[2 * n], depth + 1, err));
            FLOE_FORWARD(decode(r, map ? node->values : node->items, &items[per * n + per - 1],
                                depth + 1, err));
        }
    }
    v->u.items = items;
    v->n = n;
    return FLOE_OK;
}

static int decode_record(floe__avro_reader *r, const floe__avro_node *node,
                         floe__avro_value *v, int depth, floe_error *err)
{
    floe__avro_value *fields = floe__arena_alloc(r->arena, (node->n ? node->n : 1) * sizeof *fields);
    if (!fields)
        return FLOE_OOM(err);
    for (size_t i = 0; i < node->n; i++)
        FLOE_FORWARD_CTX(decode(r, node->fields[i].type, &fields[i], depth + 1, err), err,
                         "%s", node->fields[i].name);
    v->u.items = fields;
    v->n = node->n;
    return FLOE_OK;
}

static int decode_scalar(floe__avro_reader *r, const floe__avro_node *node, floe__avro_value *v,
                         floe_error *err)
{
    floe__avro_cursor *c = &r->cur;
    const uint8_t *p = NULL;
    size_t n = 0;
    int32_t i32 = 0;
    switch (node->type) {
    case FLOE_AVRO_NULL: return FLOE_OK;
    case FLOE_AVRO_BOOLEAN: return floe__avro_dec_boolean(c, &v->u.b, err);
    case FLOE_AVRO_INT:
        FLOE_FORWARD(floe__avro_dec_int(c, &i32, err));
        v->u.i = i32;
        return FLOE_OK;
    case FLOE_AVRO_LONG: return floe__avro_dec_long(c, &v->u.i, err);
    case FLOE_AVRO_FLOAT: return floe__avro_dec_float(c, &v->u.f, err);
    case FLOE_AVRO_DOUBLE: return floe__avro_dec_double(c, &v->u.d, err);
    case FLOE_AVRO_BYTES: FLOE_FORWARD(floe__avro_dec_bytes(c, &p, &n, err)); break;
    case FLOE_AVRO_STRING:
        FLOE_FORWARD(floe__avro_dec_bytes(c, &p, &n, err));
        FLOE_RETURN_IF(!floe__utf8_valid(p, n), err, FLOE_EFORMAT,
                       "avro: string is not valid UTF-8");
        break;
    case FLOE_AVRO_FIXED: FLOE_FORWARD(floe__avro_dec_raw(c, node->size, &p, err)); n = node->size; break;
    case FLOE_AVRO_ENUM:
        FLOE_FORWARD(floe__avro_dec_int(c, &i32, err));
        FLOE_RETURN_IF(i32 < 0 || (size_t)i32 >= node->n, err, FLOE_EFORMAT,
                       "avro: enum %s has no symbol %d", node->name, (int)i32);
        v->u.i = i32;
        return FLOE_OK;
    default: return floe__err_set(err, FLOE_EINTERNAL, "avro: not a scalar");
    }
    return copy_bytes(r, v, p, n, err);
}

static int decode(floe__avro_reader *r, const floe__avro_node *node, floe__avro_value *v,
                  int depth, floe_error *err)
{
    FLOE_RETURN_IF(depth > FLOE_AVRO_MAX_DEPTH, err, FLOE_EFORMAT,
                   "avro: values nested deeper than %d", FLOE_AVRO_MAX_DEPTH);
    FLOE_RETURN_IF(r->values >= r->max_values, err, FLOE_EFORMAT,
                   "avro: an object holds more than %zu values", r->max_values);
    r->values++;
    memset(v, 0, sizeof *v);
    v->branch = -1;
    if (node->type == FLOE_AVRO_UNION) {
        int64_t b;
        FLOE_FORWARD(floe__avro_dec_long(&r->cur, &b, err));
        FLOE_RETURN_IF(b < 0 || (uint64_t)b >= node->n, err, FLOE_EFORMAT,
                       "avro: union branch %lld of %zu", (long long)b, node->n);
        v->branch = (int32_t)b;
        node = node->branches[b];
    }
    v->type = node->type;
    v->schema = node;
    switch (node->type) {
    case FLOE_AVRO_RECORD: return decode_record(r, node, v, depth, err);
    case FLOE_AVRO_ARRAY:
    case FLOE_AVRO_MAP: return decode_items(r, node, v, depth, err);
    default: return decode_scalar(r, node, v, err);
    }
}

/* ---- blocks ---------------------------------------------------------------------- */

/* Read the next block: count, size, data, sync; decompress into `block`. */
static int load_block(floe__avro_reader *r, floe_error *err)
{
    int64_t count, size;
    const uint8_t *data = NULL, *sync = NULL;
    FLOE_FORWARD(floe__avro_dec_long(&r->file, &count, err));
    FLOE_FORWARD(floe__avro_dec_long(&r->file, &size, err));
    FLOE_RETURN_IF(count < 0 || size < 0, err, FLOE_EFORMAT,
                   "avro: negative object count or size");
    FLOE_RETURN_IF((uint64_t)size > floe__avro_left(&r->file), err, FLOE_EFORMAT,
                   "avro: truncated block: %lld bytes declared, %zu left", (long long)size,
                   floe__avro_left(&r->file));
    FLOE_FORWARD(floe__avro_dec_raw(&r->file, (size_t)size, &data, err));
    FLOE_FORWARD(floe__avro_dec_raw(&r->file, 16, &sync, err));
    FLOE_RETURN_IF(memcmp(sync, r->sync, 16) != 0, err, FLOE_EFORMAT,
                   "avro: sync marker mismatch");
    floe__buf_reset(&r->block);
    FLOE_FORWARD(floe__avro_decompress(r->codec, data, (size_t)size, &r->block, err));
    r->cur.p = r->block.data ? r->block.data : no_bytes;
    r->cur.end = r->cur.p + r->block.len;
    size_t min = floe__avro_schema_root(r->schema)->min_size;
    uint64_t cap = min ? r->block.len / min : r->max_values;
    FLOE_RETURN_IF((uint64_t)count > cap, err, FLOE_EFORMAT,
                   "avro: %lld objects cannot fit a block of %zu bytes", (long long)count,
                   r->block.len);
    FLOE_RETURN_IF(count == 0 && r->block.len > 0, err, FLOE_EFORMAT,
                   "avro: a block of no objects holds %zu bytes", r->block.len);
    r->block_left = (uint64_t)count;
    return FLOE_OK;
}

static int next_object(floe__avro_reader *r, const floe__avro_value **out, floe_error *err)
{
    while (r->block_left == 0) {
        if (floe__avro_left(&r->file) == 0) {
            *out = NULL;
            return FLOE_OK;
        }
        r->blocks++;
        FLOE_FORWARD_CTX(load_block(r, err), err, "block %llu", (unsigned long long)r->blocks);
    }
    floe__arena_reset(r->arena);
    r->values = 0;
    floe__avro_value *v = floe__arena_alloc(r->arena, sizeof *v);
    if (!v)
        return FLOE_OOM(err);
    FLOE_FORWARD_CTX(decode(r, floe__avro_schema_root(r->schema), v, 0, err), err,
                     "object %llu", (unsigned long long)r->objects + 1);
    r->block_left--;
    FLOE_RETURN_IF(r->block_left == 0 && r->cur.p != r->cur.end, err, FLOE_EFORMAT,
                   "avro: block %llu: %zu bytes after its last object",
                   (unsigned long long)r->blocks, floe__avro_left(&r->cur));
    r->objects++;
    *out = v;
    return FLOE_OK;
}

int floe__avro_reader_next(floe__avro_reader *r, const floe__avro_value **out, floe_error *err)
{
    if (r->failed)
        return floe__err_set(err, r->failed, "avro reader: failed earlier");
    int rc = next_object(r, out, err);
    if (rc != FLOE_OK)
        r->failed = rc;
    return rc;
}

/* ---- lifecycle and metadata ------------------------------------------------------- */

void floe__avro_reader_free(floe__avro_reader *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_meta; i++) {
        floe__free(r->meta_keys[i]);
        floe__free(r->meta_values[i]);
    }
    floe__free(r->meta_keys);
    floe__free(r->meta_values);
    floe__free(r->meta_lens);
    floe__avro_schema_free(r->schema);
    floe__buf_free(&r->block);
    floe__arena_free(r->arena);
    floe__free(r);
}

int floe__avro_reader_open(const uint8_t *data, size_t len,
                           const floe__avro_reader_options *opts,
                           floe__avro_reader **out, floe_error *err)
{
    FLOE_RETURN_IF(!out || (!data && len), err, FLOE_EINVAL, "avro reader: missing argument");
    floe__avro_reader *r = floe__calloc(1, sizeof *r);
    if (!r || !(r->arena = floe__arena_new(64 * 1024))) {
        floe__free(r);
        return FLOE_OOM(err);
    }
    size_t max_block = opts && opts->max_block_bytes ? opts->max_block_bytes : DEFAULT_MAX_BLOCK;
    r->max_values = opts && opts->max_values ? opts->max_values : DEFAULT_MAX_VALUES;
    floe__buf_init(&r->block, max_block);
    r->file.p = data ? data : no_bytes;
    r->file.end = r->file.p + len;
    int rc = read_header(r, err);
    if (rc != FLOE_OK) {
        floe__avro_reader_free(r);
        return rc;
    }
    *out = r;
    return FLOE_OK;
}

const floe__avro_schema *floe__avro_reader_schema(const floe__avro_reader *r) { return r->schema; }
floe__avro_codec floe__avro_reader_codec(const floe__avro_reader *r) { return r->codec; }
uint64_t floe__avro_reader_objects(const floe__avro_reader *r) { return r->objects; }
size_t floe__avro_reader_meta_count(const floe__avro_reader *r) { return r->n_meta; }

const char *floe__avro_reader_meta_key(const floe__avro_reader *r, size_t i)
{
    return i < r->n_meta ? r->meta_keys[i] : NULL;
}

const char *floe__avro_reader_meta_value(const floe__avro_reader *r, size_t i, size_t *len)
{
    if (i >= r->n_meta)
        return NULL;
    if (len)
        *len = r->meta_lens[i];
    return r->meta_values[i];
}

const char *floe__avro_reader_meta(const floe__avro_reader *r, const char *key, size_t *len)
{
    for (size_t i = 0; i < r->n_meta; i++)
        if (strcmp(r->meta_keys[i], key) == 0)
            return floe__avro_reader_meta_value(r, i, len);
    return NULL;
}
