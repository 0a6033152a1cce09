/*
 * pq_internal.h - the pieces of the Parquet encoder, shared between the
 * files of src/parquet/ only.
 *
 *   thrift.c    Thrift compact protocol writer (footer, page headers)
 *   rle.c       RLE / bit-packed hybrid encoder, bit packing
 *   dict.c      per-chunk dictionaries (open addressing hash)
 *   compress.c  page compression (none, snappy, gzip, zstd) with reused contexts
 *   stats.c     min/max/null/NaN statistics, Iceberg bounds and truncation
 *   schema.c    floe schema -> Parquet schema, leaf columns, shredding plan
 *   shred.c     row format -> leaf columns (repetition/definition levels)
 *   column.c    data pages, dictionary page, column chunks
 *   writer.c    the file: row groups, footer, metrics
 *   api.c       the public floe_parquet_* functions
 * The Parquet enums below are shared with the reader, whose pieces are in
 * parquet/pqr_internal.h.
 */
#ifndef FLOE_PQ_INTERNAL_H
#define FLOE_PQ_INTERNAL_H

#include "parquet/parquet_internal.h"

/* ---- Parquet enums (parquet.thrift) ---------------------------------------- */
enum {
    PQ_T_BOOLEAN = 0, PQ_T_INT32 = 1, PQ_T_INT64 = 2, PQ_T_INT96 = 3, PQ_T_FLOAT = 4,
    PQ_T_DOUBLE = 5, PQ_T_BYTE_ARRAY = 6, PQ_T_FLBA = 7,
};
enum {
    PQ_ENC_PLAIN = 0, PQ_ENC_PLAIN_DICTIONARY = 2, PQ_ENC_RLE = 3, PQ_ENC_BIT_PACKED = 4,
    PQ_ENC_DELTA_BINARY_PACKED = 5, PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
    PQ_ENC_DELTA_BYTE_ARRAY = 7, PQ_ENC_RLE_DICTIONARY = 8, PQ_ENC_BYTE_STREAM_SPLIT = 9,
};
enum { PQ_PAGE_DATA = 0, PQ_PAGE_INDEX = 1, PQ_PAGE_DICTIONARY = 2, PQ_PAGE_DATA_V2 = 3 };
enum { PQ_REQUIRED = 0, PQ_OPTIONAL = 1, PQ_REPEATED = 2 };
enum {
    PQ_CT_UTF8 = 0, PQ_CT_MAP = 1, PQ_CT_MAP_KEY_VALUE = 2, PQ_CT_LIST = 3, PQ_CT_ENUM = 4,
    PQ_CT_DECIMAL = 5, PQ_CT_DATE = 6, PQ_CT_TIME_MILLIS = 7, PQ_CT_TIME_MICROS = 8,
    PQ_CT_TIMESTAMP_MILLIS = 9, PQ_CT_TIMESTAMP_MICROS = 10, PQ_CT_UINT_8 = 11,
    PQ_CT_UINT_16 = 12, PQ_CT_UINT_32 = 13, PQ_CT_UINT_64 = 14, PQ_CT_INT_8 = 15,
    PQ_CT_INT_16 = 16, PQ_CT_INT_32 = 17, PQ_CT_INT_64 = 18, PQ_CT_JSON = 19, PQ_CT_BSON = 20,
    PQ_CT_INTERVAL = 21,
};
enum {
    PQ_CODEC_UNCOMPRESSED = 0, PQ_CODEC_SNAPPY = 1, PQ_CODEC_GZIP = 2, PQ_CODEC_LZO = 3,
    PQ_CODEC_BROTLI = 4, PQ_CODEC_LZ4 = 5, PQ_CODEC_ZSTD = 6, PQ_CODEC_LZ4_RAW = 7,
};

/* Statistics min/max of byte arrays longer than this are left out of the
 * footer (as Arrow and parquet-java do), so a huge value cannot bloat it. */
#define PQ_STATS_MAX_VALUE 4096
/* Iceberg's default metrics mode: truncate(16). */
#define PQ_ICEBERG_TRUNCATE 16

/* ---- thrift.c: compact protocol writer ------------------------------------ */
enum {
    TC_TRUE = 1, TC_FALSE = 2, TC_BYTE = 3, TC_I16 = 4, TC_I32 = 5, TC_I64 = 6,
    TC_DOUBLE = 7, TC_BINARY = 8, TC_LIST = 9, TC_SET = 10, TC_MAP = 11, TC_STRUCT = 12,
};
#define FLOE__TC_MAX_DEPTH 16

/* Appends to `out`.  The first failure (out of memory, nesting too deep) is
 * remembered in `rc` and turns every later call into a no-op, so encoders
 * write a whole structure and check once with floe__tc_finish. */
typedef struct floe__tc {
    floe__buf *out;
    int16_t last_id;
    int depth;
    int16_t stack[FLOE__TC_MAX_DEPTH];
    int rc;
} floe__tc;

void floe__tc_init(floe__tc *t, floe__buf *out);
void floe__tc_i32(floe__tc *t, int16_t id, int32_t v);
void floe__tc_i64(floe__tc *t, int16_t id, int64_t v);
void floe__tc_i16(floe__tc *t, int16_t id, int16_t v);
void floe__tc_bool(floe__tc *t, int16_t id, bool v);
void floe__tc_binary(floe__tc *t, int16_t id, const void *p, size_t n);
void floe__tc_string(floe__tc *t, int16_t id, const char *s);
/* A struct-valued field; its fields follow, then floe__tc_struct_end. */
void floe__tc_struct_begin(floe__tc *t, int16_t id);
void floe__tc_struct_end(floe__tc *t);
/* A list field of n elements of thrift type elem_type; the elements follow
 * (floe__tc_elem_*; struct elements with floe__tc_elem_struct_begin/_end). */
void floe__tc_list_begin(floe__tc *t, int16_t id, uint8_t elem_type, size_t n);
void floe__tc_elem_i32(floe__tc *t, int32_t v);
void floe__tc_elem_i64(floe__tc *t, int64_t v);
void floe__tc_elem_string(floe__tc *t, const char *s);
void floe__tc_elem_struct_begin(floe__tc *t);
/* FLOE_OK, or the first failure (with a message in err). */
int floe__tc_finish(const floe__tc *t, floe_error *err);

/* ---- rle.c: RLE / bit-packed hybrid ----------------------------------------- */
static inline int floe__bit_width(uint64_t max)
{
    return max ? 64 - __builtin_clzll(max) : 0;
}
/* Bytes the hybrid encoding of n values of bit width bw can take at most. */
size_t floe__rle_bound(size_t n, int bw);
/* Encode v[0..n) (each < 2^bw, 1 <= bw <= 32) into out, which has room for
 * floe__rle_bound(n, bw) bytes; returns the bytes written.  Runs of 8 or
 * more equal values become RLE runs, the rest bit-packed groups of 8 (the
 * last group padded with zeros). */
size_t floe__rle_encode_u8(const uint8_t *v, size_t n, int bw, uint8_t *out);
size_t floe__rle_encode_u32(const uint32_t *v, size_t n, int bw, uint8_t *out);
/* PLAIN booleans: v[i] != 0 as bits, LSB first; returns (n + 7) / 8. */
size_t floe__pack_bools(const uint8_t *v, size_t n, uint8_t *out);

/* ---- dict.c: dictionary of one column chunk --------------------------------- */
typedef struct floe__pq_slot8 {
    uint64_t value;
    uint64_t entry;       /* entry index + 1, 0 = empty */
} floe__pq_slot8;

/* A byte-array slot: the value's first 16 bytes (all of a value of at most
 * 16 bytes, packed), its length and 32 bits of its hash. */
typedef struct floe__pq_bslot {
    uint64_t k0, k1;
    uint64_t meta;        /* length << 32 | hash bits */
    uint64_t entry;       /* entry index + 1, 0 = empty */
} floe__pq_bslot;

typedef struct floe__pq_dict {
    uint32_t width;       /* fixed value width in bytes; 0 = byte arrays (u32 length + bytes) */
    uint32_t n;           /* entries */
    size_t mask;          /* number of slots - 1 (slots are a power of two) */
    unsigned shift;       /* 64 - log2(number of slots): multiplicative hashing */
    bool wide;            /* width 8: a value >= 2^32 was seen, slots8 in use */
    uint64_t *slots4;     /* width 4, and width 8 until a value needs more than
                             32 bits: value << 32 | (entry index + 1); 0 = empty */
    floe__pq_slot8 *slots8; /* width 8 once wide */
    floe__pq_bslot *bslots; /* byte arrays */
    uint32_t *slots;      /* other widths: entry index + 1, 0 = empty */
    floe__buf values;     /* the entries PLAIN-encoded: the dictionary page */
    /* integers in a small range: dense[v - dense_base] = entry index + 1 */
    uint32_t *dense;
    int64_t dense_base;
    size_t dense_len;
    bool no_dense;        /* the values spread too far: hashing only (until reset) */
    uint32_t *offsets;    /* byte arrays: where entry i starts in values */
    size_t offsets_cap;
} floe__pq_dict;

void floe__pq_dict_init(floe__pq_dict *d, uint32_t width);
void floe__pq_dict_free(floe__pq_dict *d);
void floe__pq_dict_reset(floe__pq_dict *d);    /* empty; keeps memory */
/* Map the n PLAIN values at `vals` (fixed width, or u32 length + bytes;
 * vals_len bytes in all) to dictionary indices in idx[], inserting new
 * values.  Stops before the first value whose insertion would make the
 * dictionary page exceed `limit` bytes; *done says how many values were
 * mapped (n when all fit). */
int floe__pq_dict_encode(floe__pq_dict *d, const uint8_t *vals, size_t vals_len, size_t n,
                         size_t limit, uint32_t *idx, size_t *done, floe_error *err);
/* 64-bit hash of a byte string (also used by tests). */
uint64_t floe__pq_hash_bytes(const uint8_t *p, size_t n);

/* ---- compress.c ------------------------------------------------------------- */
typedef struct floe__pq_codec {
    int compression;      /* floe_compression */
    int level;
    void *zstd;           /* ZSTD_CCtx */
    void *zlib;           /* z_stream */
} floe__pq_codec;

int floe__pq_codec_init(floe__pq_codec *c, int compression, int level, floe_error *err);
void floe__pq_codec_free(floe__pq_codec *c);
int floe__pq_codec_id(int compression);        /* the Parquet CompressionCodec */
/* Append the compressed form of [src, src+n) to dst. */
int floe__pq_compress(floe__pq_codec *c, const uint8_t *src, size_t n, floe__buf *dst,
                      floe_error *err);
/* Append [src, src+n) stored uncompressed in the codec's format (zstd raw
 * blocks, snappy literals); other codecs compress as usual. */
int floe__pq_store(floe__pq_codec *c, const uint8_t *src, size_t n, floe__buf *dst,
                   floe_error *err);
bool floe__pq_can_store(const floe__pq_codec *c);
/* At most how many bytes compressing or storing n bytes appends. */
size_t floe__pq_compress_bound(const floe__pq_codec *c, size_t n);

/* ---- stats.c ---------------------------------------------------------------- */
/* How a column's values compare (Parquet's TypeDefinedOrder). */
typedef enum floe__pq_order {
    PQ_ORD_BOOL,          /* false < true */
    PQ_ORD_INT32,         /* signed */
    PQ_ORD_INT64,         /* signed */
    PQ_ORD_FLOAT,         /* IEEE value; NaN excluded, -0.0 before +0.0 */
    PQ_ORD_DOUBLE,
    PQ_ORD_UNSIGNED,      /* byte arrays / FLBA: unsigned lexicographic */
    PQ_ORD_SIGNED_BE,     /* FLBA decimal: big-endian two's complement */
} floe__pq_order;

typedef struct floe__pq_stats {
    bool has_minmax;      /* a non-null, non-NaN value was seen */
    int64_t imin, imax;   /* BOOL, INT32, INT64 */
    double fmin, fmax;    /* FLOAT, DOUBLE (floats are exact in a double) */
    floe__buf bmin, bmax; /* byte orders: copies of the extreme values */
    uint64_t nulls, nans;
} floe__pq_stats;

void floe__pq_stats_init(floe__pq_stats *s);
void floe__pq_stats_free(floe__pq_stats *s);
void floe__pq_stats_reset(floe__pq_stats *s);
/* Fold n fixed-width PLAIN values (width bytes each) into s. */
int floe__pq_stats_fixed(floe__pq_stats *s, floe__pq_order ord, const uint8_t *vals, size_t n,
                         size_t width, floe_error *err);
/* Fold n PLAIN byte arrays (u32 length + bytes each) into s. */
int floe__pq_stats_bytes(floe__pq_stats *s, floe__pq_order ord, const uint8_t *vals, size_t n,
                         floe_error *err);
/* Fold one byte string into s. */
int floe__pq_stats_one(floe__pq_stats *s, floe__pq_order ord, const uint8_t *p, size_t n,
                       floe_error *err);
/* Fold the whole of src into dst (counts and extremes). */
int floe__pq_stats_merge(floe__pq_stats *dst, const floe__pq_stats *src, floe__pq_order ord,
                         floe_error *err);
/* Compare two byte strings in order ord (UNSIGNED or SIGNED_BE). */
int floe__pq_cmp_bytes(floe__pq_order ord, const uint8_t *a, size_t an, const uint8_t *b,
                       size_t bn);
/* The Parquet Statistics min_value / max_value of s (PLAIN, byte arrays
 * without length).  Returns false when they are to be left out: no value,
 * or one longer than PQ_STATS_MAX_VALUE.  Float zeros follow the spec: a
 * zero min is written -0.0, a zero max +0.0.  mn/mx point into s or into
 * the 8-byte scratch arrays. */
bool floe__pq_stats_minmax(const floe__pq_stats *s, floe__pq_order ord, int ptype,
                           uint8_t scratch_min[8], uint8_t scratch_max[8],
                           const uint8_t **mn, size_t *mn_len, const uint8_t **mx, size_t *mx_len);
/* Iceberg lower/upper bounds (single-value serialization, truncate(16))
 * of a field of `kind` from its file-level stats into m. */
int floe__pq_iceberg_bounds(const floe__pq_stats *s, floe__pq_order ord, int ptype,
                            floe__kind kind, floe__col_metrics *m, floe_error *err);
/* Iceberg truncation of UTF-8 strings (to `len` code points) and binary (to
 * `len` bytes).  Upper returns false when no upper bound exists. */
int floe__pq_truncate_lower(bool utf8, const uint8_t *p, size_t n, size_t len, floe__buf *out,
                            floe_error *err);
int floe__pq_truncate_upper(bool utf8, const uint8_t *p, size_t n, size_t len, floe__buf *out,
                            bool *ok, floe_error *err);

/* ---- columns (schema.c builds them, shred.c fills them, column.c encodes) --- */

/* How a value is copied from the row format into the page buffer. */
typedef enum floe__pq_op {
    PQ_OP_BOOL,           /* 1 byte */
    PQ_OP_FIX4,           /* int, date, float */
    PQ_OP_FIX8,           /* long, time, timestamps, double */
    PQ_OP_DEC32,          /* int128 -> int32 */
    PQ_OP_DEC64,          /* int128 -> int64 */
    PQ_OP_DECFLBA,        /* int128 -> big-endian FLBA of type_len bytes */
    PQ_OP_FLBA,           /* uuid, fixed(L): type_len bytes as they are */
    PQ_OP_BYTES,          /* string, binary: u32 length + bytes, as they are */
} floe__pq_op;

enum { PQ_DICT_OFF = 0, PQ_DICT_ON, PQ_DICT_FELL_BACK };

/* Footer data of one written column chunk. */
typedef struct floe__pq_chunk {
    uint64_t start;                 /* file offset of its first page */
    uint64_t data_page_offset;
    bool has_dict;
    uint32_t n_dict_pages;          /* data pages RLE_DICTIONARY-encoded */
    uint32_t n_plain_pages;         /* data pages PLAIN-encoded */
    uint64_t num_values;            /* level entries (values + nulls) */
    uint64_t uncompressed, compressed;  /* page headers included */
    uint64_t nulls, nans;
    bool has_minmax;
    uint8_t *min, *max;             /* in the writer's arena */
    uint32_t min_len, max_len;
} floe__pq_chunk;

typedef struct floe__pq_col {
    /* schema */
    const floe__field *field;
    int ptype;
    int32_t type_len;               /* FLBA width */
    uint32_t width;                 /* PLAIN value width, 0 for byte arrays */
    floe__pq_op op;
    uint8_t fast;                   /* flat shredding case (shred.c) */
    floe__pq_order order;
    uint8_t max_def, max_rep;
    bool in_repeated;               /* under a list or map */
    const char **path;              /* path_in_schema */
    size_t path_len;

    /* the page being filled */
    floe__buf vals;                 /* vpre spare bytes, then the PLAIN values
                                       (booleans: one byte each) */
    size_t vpre;                    /* room kept before the values for the page's
                                       encoded levels (columns with levels) */
    floe__buf defs, reps;           /* one byte per level entry, when max > 0 */
    size_t n_levels, n_vals;        /* flat writers: derived (floe__pq_col_sync) */
    uint64_t page_row0;             /* flat writers: w->rows when the page started */

    /* the column chunk being filled */
    floe__buf pages;                /* encoded pages: header + compressed body */
    int dict_state;
    bool dict_checked;              /* the "stops paying" test was made */
    uint8_t flat_pages;             /* pages in a row the codec could not shrink */
    uint16_t store_next;            /* pages to store uncompressed before trying again */
    uint32_t n_dict_pages, n_plain_pages;
    uint64_t chunk_levels, chunk_uncompressed;
    uint64_t raw_encoded;           /* buffered bytes the chunk's pages came from */
    floe__pq_dict dict;
    floe__pq_stats stats;           /* this chunk */

    /* the whole file (Iceberg metrics) */
    floe__pq_stats file_stats;
    uint64_t file_values, file_compressed;
} floe__pq_col;

/* Shredding plan: one node per schema field (the root first). */
typedef struct floe__pq_node {
    const floe__field *f;
    floe__kind kind;
    bool required;
    uint8_t def;                    /* definition level when the field is present */
    uint8_t rep;                    /* LIST/MAP: repetition level of its entries */
    uint32_t col;                   /* primitive: its column */
    uint32_t col_begin, col_end;    /* the columns under this node */
    uint32_t child;                 /* index of the first child node */
    uint32_t n_children;
} floe__pq_node;

/* A column's page fill, saved at the start of a row to undo a bad row. */
typedef struct floe__pq_snap {
    size_t n_levels, n_vals, vals_len;
} floe__pq_snap;

#define FLOE__PQ_MAX_KV 4

struct floe__pq_writer {
    const floe__schema *schema;
    floe_parquet_options opts;
    floe__output *out;
    int broken;                     /* a failure left the file unusable: its code */

    /* schema */
    size_t n_cols;
    floe__pq_col *cols;
    size_t n_nodes;
    floe__pq_node *nodes;
    bool flat;                      /* every top-level field is primitive */
    size_t headroom;                /* flat: row bytes accepted before the next check */
    uint64_t rows_left;             /* flat: rows accepted before the next check */
    floe__pq_snap *snap;            /* per column, for nested rows */
    size_t page_limit;

    /* scratch reused by every page */
    floe__buf page;                 /* uncompressed page */
    floe__buf cpage;                /* compressed page */
    floe__buf hdr;                  /* page header */
    uint32_t *idx;                  /* dictionary indices */
    size_t idx_cap;
    floe__pq_codec own_codec;       /* unless it shares one (floe__pq_writer_new_shared) */
    floe__pq_codec *codec;          /* &own_codec or the shared one */

    /* rows */
    uint64_t rows;                  /* accepted in the file */
    uint64_t rg_rows;               /* in the open row group */
    size_t since_check;             /* row bytes since the last row group size check */
    size_t check_every;             /* row bytes between those checks */
    bool page_full;                 /* a column reached page_limit during this row */

    /* written row groups */
    floe__arena *arena;             /* footer statistics */
    size_t n_rgs, cap_rgs;
    floe__pq_chunk **rg_chunks;     /* per row group: n_cols chunks */
    uint64_t *rg_rows_list;

    /* key_value_metadata of the footer (strings in `arena`) */
    const char *kv[2 * FLOE__PQ_MAX_KV];
    size_t n_kv;
};

/* The page's PLAIN values in c->vals. */
static inline const uint8_t *floe__pq_vdata(const floe__pq_col *c)
{
    return c->vals.data + c->vpre;
}
static inline size_t floe__pq_vbytes(const floe__pq_col *c)
{
    return c->vals.len - c->vpre;
}
/* Bytes kept before a page's values: its levels usually fit there, so a
 * PLAIN page is compressed in place, without copying the values. */
#define PQ_LEVEL_ROOM 8192

/* Data pages end at opts.page_size bytes of buffered values and levels, or
 * at PQ_PAGE_MAX_VALUES level entries (parquet-java and Arrow cap rows per
 * page the same way), which also keeps a page's working set in cache. */
#define PQ_PAGE_MAX_VALUES 20000
static inline bool floe__pq_page_full(const floe__pq_writer *w, const floe__pq_col *c)
{
    return floe__pq_vbytes(c) + c->n_levels >= w->page_limit || c->n_levels >= PQ_PAGE_MAX_VALUES;
}

/* schema.c */
int floe__pq_plan(floe__pq_writer *w, floe_error *err);
void floe__pq_plan_free(floe__pq_writer *w);
/* The Parquet schema (list<SchemaElement>, FileMetaData field 2). */
void floe__pq_schema_thrift(const floe__pq_writer *w, floe__tc *t);

/* shred.c */
/* The column's case in the flat shredding loop (set once by schema.c). */
uint8_t floe__pq_fast_case(const floe__pq_col *c);
/* Append one row.  Flat writers: the caller guarantees every column has
 * room for `len` more value bytes and one more level (see writer.c). */
int floe__pq_shred(floe__pq_writer *w, const uint8_t *row, size_t len, floe_error *err);

/* column.c */
/* Flat writers keep no per-value counters: derive n_levels (and n_vals,
 * except for optional byte arrays, which the page flush counts). */
void floe__pq_col_sync(const floe__pq_writer *w, floe__pq_col *c);
/* Encode the column's buffered page (if any) into its chunk. */
int floe__pq_col_flush_page(floe__pq_writer *w, floe__pq_col *c, floe_error *err);
/* Start a new column chunk (dictionary and statistics emptied). */
void floe__pq_col_begin_chunk(floe__pq_writer *w, floe__pq_col *c);
/* Write the column chunk (dictionary page, then data pages) to the output
 * and describe it in *ch. */
int floe__pq_col_write_chunk(floe__pq_writer *w, floe__pq_col *c, floe__pq_chunk *ch,
                             floe_error *err);
/* Bytes the column holds for the open row group (estimate). */
size_t floe__pq_col_buffered(const floe__pq_col *c);
void floe__pq_col_free(floe__pq_col *c);

#endif /* FLOE_PQ_INTERNAL_H */
