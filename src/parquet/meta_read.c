/*
 * meta_read.c - Parquet's thrift structures as the reader needs them:
 * FileMetaData (schema, row groups, created_by), SchemaElement with its
 * LogicalType / ConvertedType normalised into one annotation, RowGroup,
 * ColumnChunk, ColumnMetaData, and PageHeader (data page v1 and v2,
 * dictionary page; index pages and every field not listed here skipped).
 *
 * Field numbers are parquet.thrift's.  Fields the reader relies on are
 * checked for presence and sign; lists are bounded by the bytes left (see
 * thrift_read.c) and by PQ_MAX_SCHEMA, so a footer cannot make the reader
 * allocate more than a small multiple of its own size.  Errors carry the
 * path, e.g. "footer: row group 3: column 5: meta_data: at byte ...".
 */
#include "parquet/pqr_internal.h"

/* The most schema elements a footer may declare. */
#define PQ_MAX_SCHEMA ((size_t)1 << 20)

/* Fields of a struct seen so far, as bits by field id. */
#define SEEN(id) ((uint32_t)1 << (id))

/* Decode the struct at t into *x, field by field (fn handles one field). */
typedef int (*field_fn)(floe__tr *t, void *x, int16_t id, uint8_t type, uint32_t *seen);

static int read_struct(floe__tr *t, uint8_t type, void *x, field_fn fn, uint32_t *seen)
{
    FLOE_FORWARD(floe__tr_enter(t, type));
    int16_t last = 0, id;
    uint8_t ft;
    int rc;
    for (;;) {
        if ((rc = floe__tr_field(t, &last, &id, &ft)) != FLOE_OK || ft == 0)
            break;
        if ((rc = fn(t, x, id, ft, seen)) != FLOE_OK)
            break;
        if (id >= 0 && id < 32)
            *seen |= SEEN(id);
    }
    floe__tr_leave(t);
    return rc;
}

static int require(floe__tr *t, uint32_t seen, uint32_t want, const char *names)
{
    if ((seen & want) != want)
        return floe__tr_fail(t, "missing a required field (one of: %s)", names);
    return FLOE_OK;
}

static int skip_field(floe__tr *t, void *x, int16_t id, uint8_t type, uint32_t *seen)
{
    (void)x, (void)id, (void)seen;
    return floe__tr_skip(t, type);
}

/* An empty marker struct (StringType, DateType, MILLIS, ...). */
static int read_marker(floe__tr *t, uint8_t type)
{
    uint32_t seen = 0;
    return read_struct(t, type, NULL, skip_field, &seen);
}

/* ---- SchemaElement ------------------------------------------------------------------ */

static int unit_field(floe__tr *t, void *x, int16_t id, uint8_t type, uint32_t *seen)
{
    (void)seen;
    floe__pq_selem *e = x;
    if (id >= 1 && id <= 3) {
        e->unit = (uint8_t)id;           /* MILLIS 1, MICROS 2, NANOS 3 */
        return read_marker(t, type);
    }
    return floe__tr_skip(t, type);
}

static int time_field(floe__tr *t, void *x, int16_t id, uint8_t type, uint32_t *seen)
{
    floe__pq_selem *e = x;
    (void)seen;
    if (id == 1)
        return floe__tr_bool(t, type, &e->utc);
    if (id == 2) {
        uint32_t s = 0;
        return read_struct(t, type, e, unit_field, &s);
    }
    return floe__tr_skip(t, type);
}

static int int_field(floe__tr *t, void *x, int16_t id, uint8_t type, uint32_t *seen)
{
    floe__pq_selem *e = x;
    (void)seen;
    if (id == 1) {
        int8_t bits;
        FLOE_FORWARD(floe__tr_i8(t, type, &bits));
        e->bits = (uint8_t)bits;
        return FLOE_OK;
    }
    if (id == 2)
        return floe__tr_bool(t, type, &e->is_signed);
    return floe__tr_skip(t, type);
}

static int decimal_field(floe__tr *t, void *x, int16_t id, uint8_t type, uint32_t *seen)
{
    floe__pq_selem *e = x;
    (void)seen;
    if (id == 1)
        return floe__tr_i32(t, type, &e->scale);
    if (id == 2)
        return floe__tr_i32(t, type, &e->precision);
    return floe__tr_skip(t, type);
}

/* LogicalType is a union: exactly one member is set. */
static int logical_field(floe__tr *t, void *x, int16_t id, uint8_t type, uint32_t *seen)
{
    static const uint8_t markers[19] = {
        [1] = PQ_A_STRING, [2] = PQ_A_MAP, [3] = PQ_A_LIST, [4] = PQ_A_ENUM, [6] = PQ_A_DATE,
        [11] = PQ_A_NULL, [12] = PQ_A_JSON, [13] = PQ_A_BSON, [14] = PQ_A_UUID,
        [15] = PQ_A_FLOAT16,
    };
    floe__pq_selem *e = x;
    uint32_t s = 0;
    (void)seen;
    switch (id) {
    case 5:
        e->ann = PQ_A_DECIMAL;
        FLOE_FORWARD(read_struct(t, type, e, decimal_field, &s));
        return require(t, s, SEEN(1) | SEEN(2), "scale, precision");
    case 7:
    case 8:
        e->ann = id == 7 ? PQ_A_TIME : PQ_A_TIMESTAMP;
        return read_struct(t, type, e, time_field, &s);
    case 10:
        e->ann = PQ_A_INT;
        return read_struct(t, type, e, int_field, &s);
    default:
        e->ann = id > 0 && id < 19 && markers[id] ? markers[id] : PQ_A_OTHER;
        return floe__tr_skip(t, type);
    }
}

/* A ConvertedType as an annotation (for elements without a LogicalType). */
static void from_converted(floe__pq_selem *e, int32_t ct)
{
    static const uint8_t plain[22] = {
        [PQ_CT_UTF8] = PQ_A_STRING, [PQ_CT_MAP] = PQ_A_MAP,
        [PQ_CT_MAP_KEY_VALUE] = PQ_A_MAP_KEY_VALUE, [PQ_CT_LIST] = PQ_A_LIST,
        [PQ_CT_ENUM] = PQ_A_ENUM, [PQ_CT_DECIMAL] = PQ_A_DECIMAL, [PQ_CT_DATE] = PQ_A_DATE,
        [PQ_CT_JSON] = PQ_A_JSON, [PQ_CT_BSON] = PQ_A_BSON, [PQ_CT_INTERVAL] = PQ_A_INTERVAL,
    };
    if (ct < 0 || ct > PQ_CT_INTERVAL)
        return;
    if (ct >= PQ_CT_TIME_MILLIS && ct <= PQ_CT_TIMESTAMP_MICROS) {
        e->ann = ct <= PQ_CT_TIME_MICROS ? PQ_A_TIME : PQ_A_TIMESTAMP;
        e->unit = (ct == PQ_CT_TIME_MILLIS || ct == PQ_CT_TIMESTAMP_MILLIS) ? PQ_UNIT_MILLIS
                                                                         : PQ_UNIT_MICROS;
        e->utc = true;                   /* what the converted types mean */
    } else if (ct >= PQ_CT_UINT_8 && ct <= PQ_CT_INT_64) {
        static const uint8_t bits[4] = {8, 16, 32, 64};
        e->ann = PQ_A_INT;
        e->is_signed = ct >= PQ_CT_INT_8;
        e->bits = bits[(ct - PQ_CT_UINT_8) % 4];
    } else {
        e->ann = plain[ct];
    }
}

typedef struct selem_ctx {
    floe__pq_selem *e;
    floe__arena *arena;
    int32_t converted;
    bool has_logical;
} selem_ctx;

static int selem_name(floe__tr *t, selem_ctx *c, uint8_t type)
{
    const uint8_t *p;
    size_t n;
    FLOE_FORWARD(floe__tr_binary(t, type, &p, &n));
    c->e->name = floe__arena_strndup(c->arena, (const char *)p, n);
    return c->e->name ? FLOE_OK : FLOE_OOM(t->err);
}

static int selem_field(floe__tr *t, void *x, int16_t id, uint8_t type, uint32_t *seen)
{
    selem_ctx *c = x;
    floe__pq_selem *e = c->e;
    uint32_t s = 0;
    (void)seen;
    switch (id) {
    case 1: return floe__tr_i32(t, type, &e->type);
    case 2: return floe__tr_i32(t, type, &e->type_length);
    case 3: return floe__tr_i32(t, type, &e->repetition);
    case 4: return selem_name(t, c, type);
    case 5: return floe__tr_i32(t, type, &e->num_children);
    case 6: return floe__tr_i32(t, type, &c->converted);
    case 7: return floe__tr_i32(t, type, &e->scale);
    case 8: return floe__tr_i32(t, type, &e->precision);
    case 9:
        e->has_id = true;
        return floe__tr_i32(t, type, &e->field_id);
    case 10:
        c->has_logical = true;
        return read_struct(t, type, e, logical_field, &s);
    default: return floe__tr_skip(t, type);
    }
}

static int read_selem(floe__tr *t, uint8_t type, floe__arena *a, floe__pq_selem *e)
{
    memset(e, 0, sizeof *e);
    e->type = e->repetition = e->num_children = -1;
    selem_ctx c = {.e = e, .arena = a, .converted = -1};
    uint32_t seen = 0;
    FLOE_FORWARD(read_struct(t, type, &c, selem_field, &seen));
    FLOE_FORWARD(require(t, seen, SEEN(4), "name"));
    if (!c.has_logical || e->ann == PQ_A_OTHER)
        from_converted(e, c.converted);
    if (c.has_logical && c.converted == PQ_CT_MAP_KEY_VALUE && e->ann == PQ_A_NONE)
        e->ann = PQ_A_MAP_KEY_VALUE;
    return FLOE_OK;
}

/* ---- ColumnChunk, RowGroup ----------------------------------------------------------- */

static int cmeta_field(floe__tr *t, void *x, int16_t id, uint8_t type, uint32_t *seen)
{
    floe__pq_cmeta *c = x;
    (void)seen;
    switch (id) {
    case 1: return floe__tr_i32(t, type, &c->type);
    case 4: return floe__tr_i32(t, type, &c->codec);
    case 5: return floe__tr_i64(t, type, &c->num_values);
    case 7: return floe__tr_i64(t, type, &c->total_compressed);
    case 9: return floe__tr_i64(t, type, &c->data_page_offset);
    case 11: return floe__tr_i64(t, type, &c->dict_page_offset);
    default: return floe__tr_skip(t, type);
    }
}

static int read_cmeta(floe__tr *t, uint8_t type, floe__pq_cmeta *c)
{
    uint32_t seen = 0;
    FLOE_FORWARD(read_struct(t, type, c, cmeta_field, &seen));
    FLOE_FORWARD(require(t, seen, SEEN(1) | SEEN(4) | SEEN(5) | SEEN(7) | SEEN(9),
                         "type, codec, num_values, total_compressed_size, data_page_offset"));
    if (c->num_values < 0 || c->total_compressed < 0 || c->data_page_offset < 0)
        return floe__tr_fail(t, "negative count or offset");
    c->has_meta = true;
    return FLOE_OK;
}

static int chunk_field(floe__tr *t, void *x, int16_t id, uint8_t type, uint32_t *seen)
{
    floe__pq_cmeta *c = x;
    (void)seen;
    switch (id) {
    case 1:
        c->external = true;
        return floe__tr_skip(t, type);
    case 3: {
        int rc = read_cmeta(t, type, c);
        return rc ? floe__err_wrap(t->err, rc, "meta_data") : FLOE_OK;
    }
    case 8:
    case 9:
        c->encrypted = true;
        return floe__tr_skip(t, type);
    default:
        return floe__tr_skip(t, type);
    }
}

typedef struct rg_ctx {
    floe__pq_rgmeta *rg;
    floe__arena *arena;
} rg_ctx;

static int read_chunks(floe__tr *t, uint8_t type, rg_ctx *c)
{
    uint8_t elem;
    size_t n;
    FLOE_FORWARD(floe__tr_list(t, type, &elem, &n));
    /* a ColumnChunk with its meta_data takes well over 16 bytes */
    if (n > (size_t)(t->end - t->p) / 16)
        return floe__tr_fail(t, "%zu column chunks cannot fit in the bytes left", n);
    c->rg->cols = floe__arena_alloc(c->arena, (n ? n : 1) * sizeof *c->rg->cols);
    if (!c->rg->cols)
        return FLOE_OOM(t->err);
    c->rg->n_cols = n;
    for (size_t i = 0; i < n; i++) {
        floe__pq_cmeta *cm = &c->rg->cols[i];
        memset(cm, 0, sizeof *cm);
        cm->dict_page_offset = -1;
        uint32_t seen = 0;
        int rc = read_struct(t, elem, cm, chunk_field, &seen);
        if (rc)
            return floe__err_wrap(t->err, rc, "column %zu", i);
    }
    return FLOE_OK;
}

static int rg_field(floe__tr *t, void *x, int16_t id, uint8_t type, uint32_t *seen)
{
    rg_ctx *c = x;
    (void)seen;
    if (id == 1)
        return read_chunks(t, type, c);
    if (id == 3)
        return floe__tr_i64(t, type, &c->rg->num_rows);
    return floe__tr_skip(t, type);
}

/* ---- FileMetaData -------------------------------------------------------------------- */

static int read_schema(floe__tr *t, uint8_t type, floe__pq_meta *m)
{
    uint8_t elem;
    size_t n;
    FLOE_FORWARD(floe__tr_list(t, type, &elem, &n));
    if (n == 0 || n > PQ_MAX_SCHEMA || n > (size_t)(t->end - t->p) / 4)
        return floe__tr_fail(t, "a schema of %zu elements", n);
    m->schema = floe__arena_alloc(m->arena, n * sizeof *m->schema);
    if (!m->schema)
        return FLOE_OOM(t->err);
    for (size_t i = 0; i < n; i++) {
        int rc = read_selem(t, elem, m->arena, &m->schema[i]);
        if (rc)
            return floe__err_wrap(t->err, rc, "schema element %zu", i);
        m->n_schema = i + 1;
    }
    return FLOE_OK;
}

static int read_rgs(floe__tr *t, uint8_t type, floe__pq_meta *m)
{
    uint8_t elem;
    size_t n;
    FLOE_FORWARD(floe__tr_list(t, type, &elem, &n));
    if (n > (size_t)(t->end - t->p) / 4)
        return floe__tr_fail(t, "%zu row groups cannot fit in the bytes left", n);
    m->rgs = floe__arena_alloc(m->arena, (n ? n : 1) * sizeof *m->rgs);
    if (!m->rgs)
        return FLOE_OOM(t->err);
    for (size_t i = 0; i < n; i++) {
        floe__pq_rgmeta *rg = &m->rgs[i];
        memset(rg, 0, sizeof *rg);
        rg_ctx c = {.rg = rg, .arena = m->arena};
        uint32_t seen = 0;
        int rc = read_struct(t, elem, &c, rg_field, &seen);
        if (rc == FLOE_OK)
            rc = require(t, seen, SEEN(1) | SEEN(3), "columns, num_rows");
        if (rc == FLOE_OK && rg->num_rows < 0)
            rc = floe__tr_fail(t, "negative num_rows");
        if (rc)
            return floe__err_wrap(t->err, rc, "row group %zu", i);
        m->n_rgs = i + 1;
    }
    return FLOE_OK;
}

static int meta_field(floe__tr *t, void *x, int16_t id, uint8_t type, uint32_t *seen)
{
    floe__pq_meta *m = x;
    (void)seen;
    switch (id) {
    case 2: return read_schema(t, type, m);
    case 3: return floe__tr_i64(t, type, &m->num_rows);
    case 4: return read_rgs(t, type, m);
    case 6: {
        const uint8_t *p;
        size_t n;
        FLOE_FORWARD(floe__tr_binary(t, type, &p, &n));
        m->created_by = floe__arena_strndup(m->arena, (const char *)p, n);
        return m->created_by ? FLOE_OK : FLOE_OOM(t->err);
    }
    case 8:
        m->encrypted = true;
        return floe__tr_skip(t, type);
    default:
        return floe__tr_skip(t, type);
    }
}

int floe__pq_meta_decode(const uint8_t *p, size_t n, floe__pq_meta *m, floe_error *err)
{
    memset(m, 0, sizeof *m);
    m->arena = floe__arena_new(0);
    if (!m->arena)
        return FLOE_OOM(err);
    floe__tr t;
    floe__tr_init(&t, p, n, "footer", err);
    uint32_t seen = 0;
    int rc = read_struct(&t, TC_STRUCT, m, meta_field, &seen);
    if (rc == FLOE_OK)
        rc = require(&t, seen, SEEN(2) | SEEN(3) | SEEN(4), "schema, num_rows, row_groups");
    if (rc == FLOE_OK && m->num_rows < 0)
        rc = floe__tr_fail(&t, "negative num_rows");
    if (rc != FLOE_OK) {
        floe__pq_meta_free(m);
        return floe__err_wrap(err, rc, "parquet footer");
    }
    return FLOE_OK;
}

void floe__pq_meta_free(floe__pq_meta *m)
{
    if (!m)
        return;
    floe__arena_free(m->arena);
    memset(m, 0, sizeof *m);
}

/* ---- PageHeader ------------------------------------------------------------------------ */

static int v1_field(floe__tr *t, void *x, int16_t id, uint8_t type, uint32_t *seen)
{
    floe__pq_page_hdr *h = x;
    (void)seen;
    switch (id) {
    case 1: return floe__tr_i32(t, type, &h->num_values);
    case 2: return floe__tr_i32(t, type, &h->encoding);
    case 3: return floe__tr_i32(t, type, &h->def_encoding);
    case 4: return floe__tr_i32(t, type, &h->rep_encoding);
    default: return floe__tr_skip(t, type);
    }
}

static int v2_field(floe__tr *t, void *x, int16_t id, uint8_t type, uint32_t *seen)
{
    floe__pq_page_hdr *h = x;
    (void)seen;
    switch (id) {
    case 1: return floe__tr_i32(t, type, &h->num_values);
    case 2: return floe__tr_i32(t, type, &h->num_nulls);
    case 3: return floe__tr_i32(t, type, &h->num_rows);
    case 4: return floe__tr_i32(t, type, &h->encoding);
    case 5: return floe__tr_i32(t, type, &h->def_len);
    case 6: return floe__tr_i32(t, type, &h->rep_len);
    case 7: return floe__tr_bool(t, type, &h->is_compressed);
    default: return floe__tr_skip(t, type);
    }
}

static int dict_field(floe__tr *t, void *x, int16_t id, uint8_t type, uint32_t *seen)
{
    floe__pq_page_hdr *h = x;
    (void)seen;
    if (id == 1)
        return floe__tr_i32(t, type, &h->num_values);
    if (id == 2)
        return floe__tr_i32(t, type, &h->encoding);
    return floe__tr_skip(t, type);
}

/* The sub-header that goes with the page type; the others are skipped. */
static int page_field(floe__tr *t, void *x, int16_t id, uint8_t type, uint32_t *seen)
{
    floe__pq_page_hdr *h = x;
    uint32_t s = 0;
    switch (id) {
    case 1: return floe__tr_i32(t, type, &h->type);
    case 2: return floe__tr_i32(t, type, &h->uncompressed);
    case 3: return floe__tr_i32(t, type, &h->compressed);
    case 5:
        FLOE_FORWARD(read_struct(t, type, h, v1_field, &s));
        return require(t, s, SEEN(1) | SEEN(2) | SEEN(3) | SEEN(4),
                       "num_values, encodings of the data page");
    case 7:
        FLOE_FORWARD(read_struct(t, type, h, dict_field, &s));
        return require(t, s, SEEN(1) | SEEN(2), "num_values, encoding of the dictionary");
    case 8:
        FLOE_FORWARD(read_struct(t, type, h, v2_field, &s));
        return require(t, s, 0x7e, "counts, encoding, level lengths of the v2 data page");
    default:
        (void)seen;
        return floe__tr_skip(t, type);
    }
}

static int check_page_hdr(floe__tr *t, const floe__pq_page_hdr *h, uint32_t seen)
{
    FLOE_FORWARD(require(t, seen, SEEN(1) | SEEN(2) | SEEN(3), "type, page sizes"));
    if (h->uncompressed < 0 || h->compressed < 0 || h->num_values < 0 || h->num_nulls < 0 ||
        h->num_rows < 0 || h->def_len < 0 || h->rep_len < 0)
        return floe__tr_fail(t, "negative size or count");
    static const uint32_t sub[4] = {SEEN(5), 0, SEEN(7), SEEN(8)};
    if (h->type >= 0 && h->type < 4 && !(seen & sub[h->type]))
        return floe__tr_fail(t, "page of type %d without its header", (int)h->type);
    return FLOE_OK;
}

int floe__pq_page_hdr_decode(const uint8_t *p, size_t n, floe__pq_page_hdr *h, size_t *used,
                             bool *truncated, floe_error *err)
{
    memset(h, 0, sizeof *h);
    h->is_compressed = true;         /* the v2 default */
    floe__tr t;
    floe__tr_init(&t, p, n, "page header", err);
    uint32_t seen = 0;
    int rc = read_struct(&t, TC_STRUCT, h, page_field, &seen);
    *truncated = rc != FLOE_OK && t.truncated;
    if (rc == FLOE_OK)
        rc = check_page_hdr(&t, h, seen);
    *used = (size_t)(t.p - p);
    return rc;
}

/* ---- names for messages ---------------------------------------------------------------- */

const char *floe__pq_codec_name(int codec)
{
    static const char *names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                  "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"};
    return codec >= 0 && codec < 8 ? names[codec] : "an unknown codec";
}

const char *floe__pq_encoding_name(int encoding)
{
    static const char *names[] = {"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE",
                                  "BIT_PACKED", "DELTA_BINARY_PACKED",
                                  "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
                                  "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
    return encoding >= 0 && encoding < 10 ? names[encoding] : "an unknown encoding";
}

const char *floe__pq_type_name(int type)
{
    static const char *names[] = {"BOOLEAN", "INT32", "INT64", "INT96",
                                  "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
    return type >= 0 && type < 8 ? names[type] : "an unknown type";
}
