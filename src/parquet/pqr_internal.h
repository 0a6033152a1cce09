/*
 * pqr_internal.h - the pieces of the Parquet reader, shared between the
 * files of src/parquet/ only (the Parquet enums are in pq_internal.h).
 *
 *   thrift_read.c  Thrift compact protocol decoder: bounded, skips what it
 *                  does not know
 *   meta_read.c    FileMetaData, SchemaElement (logical and converted types),
 *                  RowGroup, ColumnChunk, ColumnMetaData, PageHeader
 *   fschema.c      the file's schema as a tree: levels, list and map shapes
 *                  (with the legacy forms), the derived Iceberg schema
 *   project.c      projection -> read plan: field ids, nodes, columns
 *   convert.c      stored types -> projected kinds: what reads as what, and
 *                  the conversions (promotions, units, decimals, NaN, uuid)
 *   rle_read.c     RLE / bit-packed hybrid and BIT_PACKED decoding, unpacking
 *   delta.c        DELTA_BINARY_PACKED (and the byte-array encodings' lengths)
 *   decompress.c   page decompression: snappy, gzip, zstd
 *   values.c       a data page's values, per encoding, into batches
 *   chunk_read.c   a column chunk: pages read through a window, headers,
 *                  levels, the dictionary, batch refills
 *   assemble.c     rows from the columns' batches (flat fast path, Dremel
 *                  assembly of structs, lists and maps)
 *   reader.c       the reader: footer, row groups, next / next_batch, sources
 */
#ifndef FLOE_PQR_INTERNAL_H
#define FLOE_PQR_INTERNAL_H

#include <assert.h>

#include "parquet/pq_internal.h"

/* Level entries decoded per column per batch. */
#define PQ_BATCH 4096
/* Deepest Parquet schema read (levels are kept in one byte each). */
#define PQ_MAX_LEVEL 255

/* ---- thrift_read.c: compact protocol decoder --------------------------------
 * Every read checks its bounds; nesting deeper than FLOE__TR_MAX_DEPTH is an
 * error, so skipping unknown fields cannot recurse without bound.  A list
 * may not claim more elements than bytes remain.  Failures are FLOE_EFORMAT
 * "<what> at byte N of M: ..."; `truncated` tells a failure that ran out of
 * bytes (more input may help) from malformed bytes. */
#define FLOE__TR_MAX_DEPTH 32

typedef struct floe__tr {
    const uint8_t *p, *end, *base;
    const char *what;           /* "footer", "page header" */
    int depth;
    bool truncated;
    floe_error *err;
} floe__tr;

void floe__tr_init(floe__tr *t, const uint8_t *p, size_t n, const char *what, floe_error *err);
int floe__tr_fail(floe__tr *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The next field header of the struct being read; *type is 0 at its stop.
 * *last is the previous field id of that struct (0 at its start). */
int floe__tr_field(floe__tr *t, int16_t *last, int16_t *id, uint8_t *type);
/* Values of a field (or list element) of thrift type `type`, which must be
 * the expected one. */
int floe__tr_i8(floe__tr *t, uint8_t type, int8_t *v);
int floe__tr_i32(floe__tr *t, uint8_t type, int32_t *v);
int floe__tr_i64(floe__tr *t, uint8_t type, int64_t *v);
int floe__tr_bool(floe__tr *t, uint8_t type, bool *v);
int floe__tr_binary(floe__tr *t, uint8_t type, const uint8_t **p, size_t *n);
/* A list (or set) header: element type and count. */
int floe__tr_list(floe__tr *t, uint8_t type, uint8_t *elem, size_t *n);
/* Enter a struct value (checks the type and the depth); leave after its stop. */
int floe__tr_enter(floe__tr *t, uint8_t type);
void floe__tr_leave(floe__tr *t);
/* Skip a value of any type. */
int floe__tr_skip(floe__tr *t, uint8_t type);

/* ---- meta_read.c: the footer and page headers ---------------------------------- */

/* What a SchemaElement is annotated as: its LogicalType when it has one,
 * else its ConvertedType (with scale and precision). */
typedef enum floe__pq_ann {
    PQ_A_NONE = 0, PQ_A_STRING, PQ_A_ENUM, PQ_A_JSON, PQ_A_BSON, PQ_A_UUID, PQ_A_DECIMAL,
    PQ_A_DATE, PQ_A_TIME, PQ_A_TIMESTAMP, PQ_A_INT, PQ_A_LIST, PQ_A_MAP, PQ_A_MAP_KEY_VALUE,
    PQ_A_NULL, PQ_A_INTERVAL, PQ_A_FLOAT16, PQ_A_OTHER,
} floe__pq_ann;
enum { PQ_UNIT_MILLIS = 1, PQ_UNIT_MICROS = 2, PQ_UNIT_NANOS = 3 };

typedef struct floe__pq_selem {
    char *name;                 /* NUL-terminated (in the metadata arena) */
    int32_t type;               /* PQ_T_*, -1 for groups */
    int32_t type_length;        /* FLBA width */
    int32_t repetition;         /* PQ_REQUIRED/OPTIONAL/REPEATED, -1 when absent */
    int32_t num_children;       /* -1 when absent (a primitive) */
    int32_t field_id;
    bool has_id;
    uint8_t ann;                /* floe__pq_ann */
    uint8_t unit;               /* TIME, TIMESTAMP: PQ_UNIT_* */
    bool utc;                   /* TIME, TIMESTAMP: isAdjustedToUTC */
    uint8_t bits;               /* INT: 8, 16, 32, 64 */
    bool is_signed;             /* INT */
    int32_t precision, scale;   /* DECIMAL */
} floe__pq_selem;

/* A column chunk, as much of its ColumnMetaData as reading needs. */
typedef struct floe__pq_cmeta {
    int32_t type;               /* physical type */
    int32_t codec;
    int64_t num_values;         /* level entries */
    int64_t total_compressed;   /* bytes, page headers included */
    int64_t data_page_offset;
    int64_t dict_page_offset;   /* -1 when absent */
    bool external;              /* ColumnChunk.file_path: in another file */
    bool encrypted;             /* crypto or encrypted metadata */
    bool has_meta;              /* meta_data was present */
} floe__pq_cmeta;

typedef struct floe__pq_rgmeta {
    int64_t num_rows;
    size_t n_cols;
    floe__pq_cmeta *cols;
} floe__pq_rgmeta;

typedef struct floe__pq_meta {
    floe__arena *arena;         /* everything below */
    int64_t num_rows;
    size_t n_schema;
    floe__pq_selem *schema;     /* pre-order; element 0 is the root */
    size_t n_rgs;
    floe__pq_rgmeta *rgs;
    const char *created_by;     /* NULL when absent */
    bool encrypted;             /* FileMetaData.encryption_algorithm */
} floe__pq_meta;

/* Decode FileMetaData from [p, p + n).  On failure m holds nothing. */
int floe__pq_meta_decode(const uint8_t *p, size_t n, floe__pq_meta *m, floe_error *err);
void floe__pq_meta_free(floe__pq_meta *m);

typedef struct floe__pq_page_hdr {
    int32_t type;               /* PQ_PAGE_* */
    int32_t uncompressed, compressed;   /* body bytes */
    int32_t num_values;         /* data: level entries; dictionary: entries */
    int32_t encoding;           /* values (data), entries (dictionary) */
    int32_t def_encoding, rep_encoding;  /* v1 */
    int32_t num_nulls, num_rows;         /* v2 */
    int32_t def_len, rep_len;   /* v2: bytes of levels, stored uncompressed */
    bool is_compressed;         /* v2 */
} floe__pq_page_hdr;

/* Decode a PageHeader at the start of [p, p + n); *used receives its size.
 * When the bytes end before the header does, *truncated is set (and the
 * call fails): the caller may retry with more. */
int floe__pq_page_hdr_decode(const uint8_t *p, size_t n, floe__pq_page_hdr *h, size_t *used,
                             bool *truncated, floe_error *err);

const char *floe__pq_codec_name(int codec);
const char *floe__pq_encoding_name(int encoding);
const char *floe__pq_type_name(int type);

/* ---- fschema.c: the file's schema tree ---------------------------------------- */
#define PQ_NONE UINT32_MAX

typedef struct floe__pq_fnode {
    const floe__pq_selem *e;
    uint32_t *children;         /* node indices */
    uint32_t n_children;
    uint32_t parent;            /* PQ_NONE for the root */
    uint8_t def, rep;           /* levels at this node, itself included */
    int32_t leaf;               /* column index; -1 for groups */
    uint32_t leaf_begin, leaf_end;   /* the columns under it */
} floe__pq_fnode;

typedef struct floe__pq_fschema {
    floe__pq_fnode *nodes;      /* node 0 is the root */
    size_t n_nodes;
    uint32_t *leaves;           /* column index -> node */
    size_t n_leaves;
    bool has_ids;               /* some element has a field_id */
} floe__pq_fschema;

/* Build the tree from m->schema (allocations from m->arena). */
int floe__pq_fschema_build(const floe__pq_meta *m, floe__pq_fschema *fs, floe_error *err);

/* How a list or a map is laid out in the file. */
typedef struct floe__pq_shape {
    uint32_t outer;             /* the node the field matched */
    uint32_t rep;               /* its repeated node (== outer for a bare repeated field) */
    uint32_t elem;              /* list: the element (may be rep); map: the key */
    uint32_t value;             /* map: the value, PQ_NONE when the file has none */
} floe__pq_shape;

/* The shape of node i as a list: a LIST group (3-level, or the legacy
 * 2-level forms of LogicalTypes.md), or a bare repeated field (a required
 * list of required elements).  False when i is no list. */
bool floe__pq_list_shape(const floe__pq_fschema *fs, uint32_t i, floe__pq_shape *sh);
/* The shape of node i as a map (MAP or MAP_KEY_VALUE group holding one
 * repeated group of key and value).  False when i is no map. */
bool floe__pq_map_shape(const floe__pq_fschema *fs, uint32_t i, floe__pq_shape *sh);
/* Whether node i is a repeated field standing for a list by itself. */
bool floe__pq_bare_repeated(const floe__pq_fschema *fs, uint32_t i);

/* The Iceberg schema of the file (see floe__pq_reader_open). */
int floe__pq_fschema_derive(const floe__pq_fschema *fs, floe__schema **out, floe_error *err);

/* ---- the read plan (project.c builds it, assemble.c walks it) -------------------- */

typedef enum floe__pq_shape_kind {
    PQ_R_ABSENT = 0,            /* not in the file: null */
    PQ_R_PRIM, PQ_R_STRUCT, PQ_R_LIST, PQ_R_MAP,
} floe__pq_shape_kind;

/* One projected field.  Definition levels at its anchor column (the first
 * column under it) below d_null mean null; LIST/MAP: below d_elem (and not
 * below d_null) mean empty, and entries continue at repetition level rep. */
typedef struct floe__pq_rnode {
    const floe__field *f;
    uint8_t shape;              /* floe__pq_shape_kind */
    bool required;              /* null in the file is an error */
    bool own_anchor;            /* STRUCT: its only column is read for levels, by it */
    uint8_t d_null, d_elem, rep;
    uint8_t frep;               /* repetition level of the file node it matched */
    uint32_t col_begin, col_end;   /* the plan's columns under it */
    uint32_t child, n_children;    /* nodes */
} floe__pq_rnode;

/* How a stored value becomes a row-format payload (convert.c). */
typedef enum floe__pq_cv {
    PQ_CV_COPY = 0,             /* same bytes: ints, dates, longs, micros, FLBA */
    PQ_CV_BOOL,                 /* unpacked 0/1 bytes */
    PQ_CV_F32, PQ_CV_F64,       /* NaN made canonical */
    PQ_CV_F32_F64,              /* float -> double */
    PQ_CV_I32_I64, PQ_CV_U32_I64,
    PQ_CV_I32_DEC, PQ_CV_I64_DEC,   /* unscaled ints -> int128 */
    PQ_CV_BE_DEC,               /* big-endian two's complement (FLBA, byte arrays) -> int128 */
    PQ_CV_MS_US, PQ_CV_NS_US,   /* int64 timestamps/times to micros */
    PQ_CV_MS32_US,              /* int32 TIME(MILLIS) -> int64 micros */
    PQ_CV_TIME_US,              /* int64 TIME(MICROS), range checked */
    PQ_CV_INT96,                /* legacy nanosecond timestamps -> micros */
    PQ_CV_BYTES,                /* byte arrays as they are */
    PQ_CV_STRING,               /* byte arrays, UTF-8 checked */
    PQ_CV_UUID_TEXT,            /* byte arrays holding canonical uuid text, checked */
    PQ_CV_UUID_STR,             /* FLBA(16) -> canonical 36-character text */
    PQ_CV_NULL,                 /* UNKNOWN (null) logical type: no values */
} floe__pq_cv;

/* How a payload is written into a row. */
enum { PQ_W_FIXED = 0, PQ_W_BYTES, PQ_W_UUID_STR, PQ_W_NONE };

typedef struct floe__pq_bv {
    const uint8_t *p;
    uint32_t n;
} floe__pq_bv;

/* RLE / bit-packed hybrid decoder (rle_read.c). */
typedef struct floe__pq_rle {
    const uint8_t *p, *end;     /* the runs not yet started */
    int bw;
    uint32_t left;              /* values left in the current run */
    bool packed;                /* the current run is bit-packed */
    uint32_t value;             /* RLE run: its value */
    const uint8_t *bits;        /* bit-packed run: its bytes */
    size_t bits_len;
    uint32_t bit_i;             /* bit-packed run: next value's index */
    bool msb;                   /* deprecated BIT_PACKED levels: one run, MSB first */
} floe__pq_rle;

/* DELTA_BINARY_PACKED decoder (delta.c); values come out as 64-bit words. */
typedef struct floe__pq_delta {
    const uint8_t *p, *end;     /* next block header */
    uint64_t block, n_mini, per_mini;
    uint64_t total, left;       /* values in the stream / not yet returned */
    uint64_t last;              /* the previous value */
    bool first;                 /* the header's first value is next */
    int64_t min_delta;
    const uint8_t *widths;      /* the block's miniblock bit widths */
    uint64_t mini;              /* current miniblock in the block */
    uint64_t in_mini;           /* values used of it */
    const uint8_t *mini_p;      /* its bytes */
    bool in_block;
} floe__pq_delta;

/* The values of the data page being read (values.c). */
typedef struct floe__pq_vdec {
    int encoding;
    const uint8_t *p, *end;     /* PLAIN: next value; BSS: the streams */
    uint64_t bit;               /* PLAIN booleans: next bit */
    floe__pq_rle rle;           /* dictionary indices; RLE booleans */
    floe__pq_delta d1, d2;      /* DBP values; DLBA lengths; DBA prefixes (d1) and
                                   suffix lengths (d2) */
    const uint8_t *data;        /* DLBA, DBA: next value bytes */
    size_t bss_n, bss_i;        /* BYTE_STREAM_SPLIT: values in the page, next */
    floe__buf prev;             /* DBA: the previous value */
} floe__pq_vdec;

/* A column chunk's bytes, read through a window (chunk_read.c). */
typedef struct floe__pq_in {
    uint64_t next;              /* file offset of the first byte not in the window */
    uint64_t end;               /* file offset after the chunk */
    floe__buf win;
    size_t at;                  /* window bytes used */
} floe__pq_in;

/* Decompression contexts shared by a reader's columns (decompress.c). */
typedef struct floe__pq_dctx {
    void *zstd;                 /* ZSTD_DCtx */
    void *zlib;                 /* z_stream */
} floe__pq_dctx;

struct floe__pq_reader;

/* One column read: a file leaf with its conversion, chunk, page and batch. */
typedef struct floe__pq_rcol {
    /* plan */
    char *path;                 /* the projected field's path, for messages */
    uint32_t leaf;              /* file column index */
    const floe__pq_selem *e;    /* its schema element */
    const floe__field *field;   /* projected field; NULL: read for its levels only */
    int ptype;
    uint32_t pwidth;            /* stored fixed width (booleans 1 once unpacked; 0 byte arrays) */
    uint8_t cv;                 /* floe__pq_cv */
    uint8_t wop;                /* PQ_W_* */
    uint32_t width;             /* payload bytes (PQ_W_FIXED, PQ_W_UUID_STR) */
    uint8_t max_def, max_rep;
    int32_t precision;          /* decimals: of the projected field */

    /* the chunk of the current row group */
    int codec;
    uint64_t chunk_values, entries;  /* level entries: the chunk's, taken into batches */
    floe__pq_in in;

    /* dictionary */
    bool has_dict;
    uint32_t dict_n;
    floe__buf dict_raw;         /* the decompressed dictionary page */
    floe__buf dict_vals;        /* its payloads: fixed, or floe__pq_bv (byte arrays) */

    /* the data page */
    uint32_t page_left;         /* level entries not yet in a batch */
    floe__pq_rle defs, reps;
    floe__pq_vdec vd;
    floe__buf page;             /* decompressed body */

    /* the batch */
    size_t batch;               /* most entries per batch (fewer for wide values) */
    uint8_t *def, *rep;         /* PQ_BATCH entries each (NULL when the level is 0) */
    size_t n, at;               /* entries in the batch, the next one */
    const uint8_t *vals;        /* fixed payloads of the batch's values */
    const floe__pq_bv *bv;      /* byte-array payloads */
    size_t vat;                 /* the next value */
    floe__buf vbuf, pbuf, sbuf; /* payloads, stored values, DBA value bytes */
    uint32_t *idx;              /* PQ_BATCH dictionary indices */
    uint64_t *words;            /* PQ_BATCH delta values */
} floe__pq_rcol;

struct floe__pq_reader {
    floe__pq_source src;
    floe__pq_read_options opts;
    floe__pq_meta meta;
    floe__pq_fschema fs;
    uint64_t data_end;          /* where the footer starts: chunks end before it */
    const floe__schema *schema;
    floe__schema *owned;        /* the derived schema, when no projection was given */
    int broken;

    /* plan */
    floe__pq_rnode *nodes;      /* node 0 is the root */
    size_t n_nodes;
    floe__pq_rcol *cols;
    size_t n_cols;
    bool flat;                  /* every top-level field is primitive or absent */
    uint8_t *flat_ops;          /* flat plans: how each top-level field is written */

    /* position */
    size_t rg;                  /* current row group; n_rgs at the end */
    bool rg_open;               /* its chunks are set up */
    uint64_t rg_first;          /* position of its first row */
    uint64_t rg_left;           /* its rows not yet read */
    uint64_t *rg_first_rows;    /* per row group */
    floe__pq_dctx dctx;
};

/* project.c */
/* Build r->nodes and r->cols for r->schema against r->fs. */
int floe__pq_plan_read(struct floe__pq_reader *r, floe_error *err);
void floe__pq_plan_read_free(struct floe__pq_reader *r);

/* convert.c */
/* Choose how column c (c->e, c->ptype set) reads as field f: sets cv, wop,
 * width, pwidth.  FLOE_EINCOMPATIBLE (or FLOE_EUNSUPPORTED) naming `path`. */
int floe__pq_choose_cv(floe__pq_rcol *c, const floe__field *f, const char *path,
                       floe_error *err);
/* Convert n stored fixed-width values at `in` (c->pwidth bytes each) to
 * payloads at `out` (c->width bytes each). */
int floe__pq_convert_fixed(const floe__pq_rcol *c, const uint8_t *in, size_t n, uint8_t *out,
                           floe_error *err);
/* Byte arrays: check them in place (PQ_CV_STRING, PQ_CV_UUID_TEXT), or
 * convert them to fixed payloads at `out` (PQ_CV_BE_DEC). */
int floe__pq_convert_bytes(const floe__pq_rcol *c, const floe__pq_bv *in, size_t n, uint8_t *out,
                           floe_error *err);
/* Whether the conversion of column c changes no bytes (fixed widths). */
bool floe__pq_cv_identity(const floe__pq_rcol *c);

/* rle_read.c */
void floe__pq_rle_init(floe__pq_rle *d, const uint8_t *p, size_t n, int bw);
/* Deprecated BIT_PACKED levels: n values, MSB first, no header. */
void floe__pq_bitpacked_init(floe__pq_rle *d, const uint8_t *p, size_t n, int bw);
/* Exactly n values into out (FLOE_EFORMAT when the runs end first). */
int floe__pq_rle_u8(floe__pq_rle *d, uint8_t *out, size_t n, floe_error *err);
int floe__pq_rle_u32(floe__pq_rle *d, uint32_t *out, size_t n, floe_error *err);
/* Values [first, first + n) of a run of bw-bit values (LSB first) in
 * [p, p + len); false when they are not all inside. */
bool floe__pq_unpack32(const uint8_t *p, size_t len, uint64_t first, size_t n, int bw,
                       uint32_t *out);
bool floe__pq_unpack64(const uint8_t *p, size_t len, uint64_t first, size_t n, int bw,
                       uint64_t *out);

/* delta.c */
int floe__pq_delta_init(floe__pq_delta *d, const uint8_t *p, size_t n, floe_error *err);
/* The next n values (n <= d->left). */
int floe__pq_delta_next(floe__pq_delta *d, uint64_t *out, size_t n, floe_error *err);
/* Where the stream ends (scanning its block headers, decoding nothing). */
int floe__pq_delta_end(const floe__pq_delta *d, const uint8_t **end, floe_error *err);

/* decompress.c */
void floe__pq_dctx_free(floe__pq_dctx *d);
bool floe__pq_codec_supported(int codec);
/* Whether [src, src + n) can plausibly decompress to out_len bytes (checked
 * before allocating them: declared lengths, the codec's largest ratio). */
bool floe__pq_decompress_bound(int codec, const uint8_t *src, size_t n, size_t out_len);
/* Decompress [src, src + n) into exactly `out_len` bytes at dst. */
int floe__pq_decompress(floe__pq_dctx *d, int codec, const uint8_t *src, size_t n, uint8_t *dst,
                        size_t out_len, floe_error *err);

/* values.c */
/* Start decoding the values section [p, p + n) of a data page. */
int floe__pq_values_begin(floe__pq_rcol *c, int encoding, const uint8_t *p, size_t n,
                          floe_error *err);
/* Decode the next k values of the page into the batch (c->vals / c->bv). */
int floe__pq_values_read(floe__pq_rcol *c, size_t k, floe_error *err);
/* Decode a dictionary page of n PLAIN entries at [p, p + len) into
 * c->dict_vals. */
int floe__pq_dict_load(floe__pq_rcol *c, const uint8_t *p, size_t len, uint32_t n,
                       floe_error *err);
void floe__pq_vdec_free(floe__pq_vdec *v);

/* chunk_read.c */
/* Allocate c's batch arrays and buffers (c's plan fields set). */
int floe__pq_col_init(floe__pq_rcol *c, const floe__pq_read_options *o, floe_error *err);
void floe__pq_col_release(floe__pq_rcol *c);
/* Start reading column c's chunk in row group rg. */
int floe__pq_col_start(struct floe__pq_reader *r, floe__pq_rcol *c, size_t rg, floe_error *err);
/* Decode the next batch (c->at == c->n before): at least one entry, or
 * FLOE_EFORMAT when the chunk has no more. */
int floe__pq_col_refill(struct floe__pq_reader *r, floe__pq_rcol *c, floe_error *err);
/* Whether the chunk has level entries not yet in a batch. */
static inline bool floe__pq_col_more(const floe__pq_rcol *c)
{
    return c->entries < c->chunk_values;
}

/* assemble.c */
/* Flat plans: decide r->flat_ops (allocated by the caller, one per field). */
void floe__pq_flat_ops(struct floe__pq_reader *r);
/* Append the next row of the open row group (r->rg_left > 0) to out. */
int floe__pq_assemble_row(struct floe__pq_reader *r, floe__buf *out, floe_error *err);
/* Flat plans: append up to max rows of the open row group; *n gets how many. */
int floe__pq_assemble_flat(struct floe__pq_reader *r, floe__buf *out, size_t *ends, size_t max,
                           size_t *n, floe_error *err);

#endif /* FLOE_PQR_INTERNAL_H */
