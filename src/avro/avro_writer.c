/*
 * avro_writer.c - writes Avro object container files.
 *
 * File layout: "Obj\1", the metadata map (avro.schema = the schema text as
 * given, avro.codec, then the caller's entries), a 16-byte sync marker, and
 * blocks of (object count, byte size, the objects' bytes after the codec,
 * the sync marker).
 *
 * The streaming encoder keeps a stack of open containers (records, arrays,
 * maps) and always knows which schema node the next value must match:
 *   - inside a record, the type of the next unwritten field;
 *   - inside an array, the item type while items remain;
 *   - inside a map, the key (a string) and the value type in turn;
 *   - right after put_union, the chosen branch;
 *   - with nothing open, the root (a new object).
 * A value is checked against that node before any byte of it is encoded,
 * so a rejected call leaves the encoding as it was; the writer is poisoned
 * all the same, because the caller's object is now incomplete.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/random.h>

#include "avro/avro_internal.h"

#define DEFAULT_BLOCK_SIZE (256u * 1024)
#define BLOCK_BUF_MAX ((size_t)256 << 20)     /* one object may not exceed this */
#define PATH_MAX_LEN 400

typedef struct frame {
    const floe__avro_node *node;     /* RECORD, ARRAY or MAP */
    size_t next;                     /* record: next field; array/map: items done */
    size_t count;                    /* array/map: items declared */
    bool want_key;                   /* map: the key of item `next` comes next */
} frame;

struct floe__avro_writer {
    floe__avro_schema *schema;
    floe__output *out;
    floe__avro_codec codec;
    int level;
    size_t block_size;
    uint8_t sync[16];
    floe__buf block;                 /* encoded objects of the open block */
    floe__buf packed;                /* the block after the codec */
    uint64_t block_objects, objects;
    frame stack[FLOE_AVRO_MAX_DEPTH];
    size_t depth;
    const floe__avro_node *pending;  /* branch chosen by put_union */
    int failed;                      /* first failure's code, sticky */
    char *msg;                       /* and its message */
    floe_error *scratch;             /* receives errors of lower layers */
};

static const floe__avro_node map_key_node = {
    .type = FLOE_AVRO_STRING, .element_id = -1, .key_id = -1, .value_id = -1, .min_size = 1};

/* ---- failure and paths ---------------------------------------------------- */

/* Where the next value goes: "r.data_file.partition", "r.tags[2]". */
static void format_path(const floe__avro_writer *w, char *buf, size_t cap)
{
    const floe__avro_node *root = floe__avro_schema_root(w->schema);
    size_t len = (size_t)snprintf(buf, cap, "%s", root->name ? root->name : "(root)");
    for (size_t i = 0; i < w->depth && len < cap; i++) {
        const frame *f = &w->stack[i];
        if (f->node->type == FLOE_AVRO_RECORD && f->next < f->node->n)
            len += (size_t)snprintf(buf + len, cap - len, ".%s", f->node->fields[f->next].name);
        else if (f->node->type == FLOE_AVRO_ARRAY)
            len += (size_t)snprintf(buf + len, cap - len, "[%zu]", f->next);
        else if (f->node->type == FLOE_AVRO_MAP)
            len += (size_t)snprintf(buf + len, cap - len, "[%zu].%s", f->next,
                                    f->want_key ? "key" : "value");
    }
}

__attribute__((format(printf, 3, 4)))
static int poison(floe__avro_writer *w, int code, const char *fmt, ...)
{
    if (w->failed)
        return w->failed;
    char path[PATH_MAX_LEN];
    format_path(w, path, sizeof path);
    va_list ap;
    va_start(ap, fmt);
    char *what = floe__vsprintf(fmt, ap);
    va_end(ap);
    w->msg = floe__sprintf("avro writer: at %s: %s", path, what ? what : "error");
    floe__free(what);
    w->failed = code;
    return code;
}

/* Poison with the message a lower layer left in w->scratch. */
static int poison_scratch(floe__avro_writer *w, int code)
{
    return poison(w, code, "%s", floe_error_message(w->scratch));
}

int floe__avro_writer_error(floe__avro_writer *w, floe_error *err)
{
    if (!w->failed)
        return FLOE_OK;
    return floe__err_set(err, w->failed, "%s", w->msg ? w->msg : "avro writer failed");
}

/* ---- blocks ---------------------------------------------------------------- */

static int write_out(floe__avro_writer *w, const void *p, size_t n)
{
    return floe__output_write(w->out, p, n, w->scratch);
}

static int flush_block(floe__avro_writer *w)
{
    if (w->block_objects == 0)
        return FLOE_OK;
    floe__buf_reset(&w->packed);
    int rc = floe__avro_compress(w->codec, w->level, w->block.data, w->block.len, &w->packed,
                                 w->scratch);
    uint8_t hdr[20];
    size_t h = floe__avro_put_varint(hdr, (int64_t)w->block_objects);
    h += floe__avro_put_varint(hdr + h, (int64_t)w->packed.len);
    if (rc == FLOE_OK)
        rc = write_out(w, hdr, h);
    if (rc == FLOE_OK)
        rc = write_out(w, w->packed.data, w->packed.len);
    if (rc == FLOE_OK)
        rc = write_out(w, w->sync, 16);
    if (rc != FLOE_OK)
        return poison_scratch(w, rc);
    floe__buf_reset(&w->block);
    w->block_objects = 0;
    return FLOE_OK;
}

/* ---- the expected-value state machine ------------------------------------- */

static const floe__avro_node *expected(const floe__avro_writer *w)
{
    if (w->pending)
        return w->pending;
    if (w->depth == 0)
        return floe__avro_schema_root(w->schema);
    const frame *f = &w->stack[w->depth - 1];
    switch (f->node->type) {
    case FLOE_AVRO_RECORD:
        return f->next < f->node->n ? f->node->fields[f->next].type : NULL;
    case FLOE_AVRO_ARRAY:
        return f->next < f->count ? f->node->items : NULL;
    default:
        return f->next < f->count ? (f->want_key ? &map_key_node : f->node->values) : NULL;
    }
}

/* The branch of union u that can hold a value of `kind` (and, for fixed,
 * of `size` bytes): its index, or a poisoning failure when none or several
 * can. */
static int pick_branch(floe__avro_writer *w, const floe__avro_node *u, floe__avro_type kind,
                       size_t size, int32_t *out)
{
    int found = -1, matches = 0;
    for (size_t i = 0; i < u->n; i++) {
        const floe__avro_node *b = u->branches[i];
        if (b->type == kind && (kind != FLOE_AVRO_FIXED || b->size == size)) {
            found = (int)i;
            matches++;
        }
    }
    if (matches == 1) {
        *out = found;
        return FLOE_OK;
    }
    if (matches == 0)
        return poison(w, FLOE_EINVAL, "the union has no %s branch", floe__avro_type_name(kind));
    return poison(w, FLOE_EINVAL, "the union has %d %s branches: call put_union first",
                  matches, floe__avro_type_name(kind));
}

/* Find the node the next value must match and check its type; *branch is
 * the union branch to encode first, or -1.  Writes nothing. */
static int resolve(floe__avro_writer *w, floe__avro_type kind, size_t size,
                   const floe__avro_node **node, int32_t *branch)
{
    if (w->failed)
        return w->failed;
    const floe__avro_node *e = expected(w);
    if (!e)
        return poison(w, FLOE_EINVAL, "no value expected here (got %s)",
                      floe__avro_type_name(kind));
    *branch = -1;
    if (e->type == FLOE_AVRO_UNION) {
        FLOE_FORWARD(pick_branch(w, e, kind, size, branch));
        e = e->branches[*branch];
    }
    if (e->type != kind)
        return poison(w, FLOE_EINVAL, "expected %s, got %s", floe__avro_type_name(e->type),
                      floe__avro_type_name(kind));
    *node = e;
    return FLOE_OK;
}

/* Encode the chosen branch index (if any) and clear a put_union choice. */
static int emit_branch(floe__avro_writer *w, int32_t branch)
{
    w->pending = NULL;
    if (branch < 0)
        return FLOE_OK;
    int rc = floe__avro_enc_long(&w->block, branch, w->scratch);
    return rc == FLOE_OK ? rc : poison_scratch(w, rc);
}

/* A value is complete: advance the enclosing container, or finish the
 * object when it was the root. */
static int complete(floe__avro_writer *w)
{
    if (w->depth == 0) {
        w->objects++;
        w->block_objects++;
        return w->block.len >= w->block_size ? flush_block(w) : FLOE_OK;
    }
    frame *f = &w->stack[w->depth - 1];
    if (f->node->type == FLOE_AVRO_MAP && f->want_key) {
        f->want_key = false;
        return FLOE_OK;
    }
    f->next++;
    f->want_key = true;
    return FLOE_OK;
}

static int check(floe__avro_writer *w, int rc)
{
    return rc == FLOE_OK ? rc : poison_scratch(w, rc);
}

/* ---- primitives ------------------------------------------------------------ */

int floe__avro_put_null(floe__avro_writer *w)
{
    const floe__avro_node *n;
    int32_t br;
    FLOE_FORWARD(resolve(w, FLOE_AVRO_NULL, 0, &n, &br));
    FLOE_FORWARD(emit_branch(w, br));
    return complete(w);
}

int floe__avro_put_boolean(floe__avro_writer *w, bool v)
{
    const floe__avro_node *n;
    int32_t br;
    FLOE_FORWARD(resolve(w, FLOE_AVRO_BOOLEAN, 0, &n, &br));
    FLOE_FORWARD(emit_branch(w, br));
    FLOE_FORWARD(check(w, floe__avro_enc_boolean(&w->block, v, w->scratch)));
    return complete(w);
}

static int put_varint(floe__avro_writer *w, floe__avro_type kind, int64_t v)
{
    const floe__avro_node *n;
    int32_t br;
    FLOE_FORWARD(resolve(w, kind, 0, &n, &br));
    FLOE_FORWARD(emit_branch(w, br));
    FLOE_FORWARD(check(w, floe__avro_enc_long(&w->block, v, w->scratch)));
    return complete(w);
}

int floe__avro_put_int(floe__avro_writer *w, int32_t v) { return put_varint(w, FLOE_AVRO_INT, v); }
int floe__avro_put_long(floe__avro_writer *w, int64_t v) { return put_varint(w, FLOE_AVRO_LONG, v); }

int floe__avro_put_float(floe__avro_writer *w, float v)
{
    const floe__avro_node *n;
    int32_t br;
    FLOE_FORWARD(resolve(w, FLOE_AVRO_FLOAT, 0, &n, &br));
    FLOE_FORWARD(emit_branch(w, br));
    FLOE_FORWARD(check(w, floe__avro_enc_float(&w->block, v, w->scratch)));
    return complete(w);
}

int floe__avro_put_double(floe__avro_writer *w, double v)
{
    const floe__avro_node *n;
    int32_t br;
    FLOE_FORWARD(resolve(w, FLOE_AVRO_DOUBLE, 0, &n, &br));
    FLOE_FORWARD(emit_branch(w, br));
    FLOE_FORWARD(check(w, floe__avro_enc_double(&w->block, v, w->scratch)));
    return complete(w);
}

int floe__avro_put_bytes(floe__avro_writer *w, const void *p, size_t n)
{
    const floe__avro_node *node;
    int32_t br;
    FLOE_FORWARD(resolve(w, FLOE_AVRO_BYTES, 0, &node, &br));
    FLOE_FORWARD(emit_branch(w, br));
    FLOE_FORWARD(check(w, floe__avro_enc_bytes(&w->block, p, n, w->scratch)));
    return complete(w);
}

int floe__avro_put_string(floe__avro_writer *w, const char *s, size_t n)
{
    const floe__avro_node *node;
    int32_t br;
    FLOE_FORWARD(resolve(w, FLOE_AVRO_STRING, 0, &node, &br));
    if (!floe__utf8_valid((const uint8_t *)s, n))
        return poison(w, FLOE_EINVAL, "string is not valid UTF-8");
    FLOE_FORWARD(emit_branch(w, br));
    FLOE_FORWARD(check(w, floe__avro_enc_bytes(&w->block, s, n, w->scratch)));
    return complete(w);
}

int floe__avro_put_cstr(floe__avro_writer *w, const char *s)
{
    return floe__avro_put_string(w, s, strlen(s));
}

int floe__avro_put_fixed(floe__avro_writer *w, const void *p, size_t n)
{
    const floe__avro_node *node;
    int32_t br;
    FLOE_FORWARD(resolve(w, FLOE_AVRO_FIXED, n, &node, &br));
    if (node->size != n)
        return poison(w, FLOE_EINVAL, "fixed %s holds %zu bytes, got %zu", node->name,
                      node->size, n);
    FLOE_FORWARD(emit_branch(w, br));
    FLOE_FORWARD(check(w, floe__buf_append(&w->block, p, n, w->scratch)));
    return complete(w);
}

int floe__avro_put_enum(floe__avro_writer *w, int32_t index)
{
    const floe__avro_node *node;
    int32_t br;
    FLOE_FORWARD(resolve(w, FLOE_AVRO_ENUM, 0, &node, &br));
    if (index < 0 || (size_t)index >= node->n)
        return poison(w, FLOE_EINVAL, "enum %s has no symbol %d", node->name, (int)index);
    FLOE_FORWARD(emit_branch(w, br));
    FLOE_FORWARD(check(w, floe__avro_enc_long(&w->block, index, w->scratch)));
    return complete(w);
}

int floe__avro_put_union(floe__avro_writer *w, int32_t branch)
{
    if (w->failed)
        return w->failed;
    const floe__avro_node *e = w->pending ? NULL : expected(w);
    if (!e || e->type != FLOE_AVRO_UNION)
        return poison(w, FLOE_EINVAL, "put_union where %s is expected",
                      e ? floe__avro_type_name(e->type) : "no union");
    if (branch < 0 || (size_t)branch >= e->n)
        return poison(w, FLOE_EINVAL, "the union has no branch %d", (int)branch);
    FLOE_FORWARD(check(w, floe__avro_enc_long(&w->block, branch, w->scratch)));
    w->pending = e->branches[branch];
    return FLOE_OK;
}

/* ---- containers -------------------------------------------------------------- */

static int check_depth(floe__avro_writer *w)
{
    if (w->depth == FLOE_AVRO_MAX_DEPTH)
        return poison(w, FLOE_EINVAL, "values nested deeper than %d", FLOE_AVRO_MAX_DEPTH);
    return FLOE_OK;
}

static void push(floe__avro_writer *w, const floe__avro_node *node, size_t count)
{
    w->stack[w->depth++] = (frame){.node = node, .count = count, .want_key = true};
}

/* The innermost open container must be of `type` with nothing pending. */
static frame *top_of(floe__avro_writer *w, floe__avro_type type)
{
    if (w->depth == 0 || w->pending || w->stack[w->depth - 1].node->type != type)
        return NULL;
    return &w->stack[w->depth - 1];
}

int floe__avro_begin_record(floe__avro_writer *w)
{
    const floe__avro_node *node;
    int32_t br;
    FLOE_FORWARD(resolve(w, FLOE_AVRO_RECORD, 0, &node, &br));
    FLOE_FORWARD(check_depth(w));
    FLOE_FORWARD(emit_branch(w, br));
    push(w, node, 0);
    return FLOE_OK;
}

int floe__avro_end_record(floe__avro_writer *w, floe_error *err)
{
    if (!w->failed) {
        frame *f = top_of(w, FLOE_AVRO_RECORD);
        if (!f)
            poison(w, FLOE_EINVAL, "end_record without an open record");
        else if (f->next < f->node->n)
            poison(w, FLOE_EINVAL, "end_record before field \"%s\" was written",
                   f->node->fields[f->next].name);
        else {
            w->depth--;
            complete(w);
        }
    }
    return floe__avro_writer_error(w, err);
}

static int begin_items(floe__avro_writer *w, floe__avro_type type, size_t n)
{
    const floe__avro_node *node;
    int32_t br;
    FLOE_FORWARD(resolve(w, type, 0, &node, &br));
    if (n > (size_t)INT64_MAX)
        return poison(w, FLOE_EINVAL, "%zu items", n);
    FLOE_FORWARD(check_depth(w));
    FLOE_FORWARD(emit_branch(w, br));
    if (n > 0)
        FLOE_FORWARD(check(w, floe__avro_enc_long(&w->block, (int64_t)n, w->scratch)));
    push(w, node, n);
    return FLOE_OK;
}

static int end_items(floe__avro_writer *w, floe__avro_type type)
{
    if (w->failed)
        return w->failed;
    frame *f = top_of(w, type);
    if (!f)
        return poison(w, FLOE_EINVAL, "end_%s without an open %s", floe__avro_type_name(type),
                      floe__avro_type_name(type));
    if (f->next != f->count)
        return poison(w, FLOE_EINVAL, "%s declared %zu items but %zu were written",
                      floe__avro_type_name(type), f->count, f->next);
    FLOE_FORWARD(check(w, floe__avro_enc_long(&w->block, 0, w->scratch)));
    w->depth--;
    return complete(w);
}

int floe__avro_begin_array(floe__avro_writer *w, size_t n) { return begin_items(w, FLOE_AVRO_ARRAY, n); }
int floe__avro_end_array(floe__avro_writer *w) { return end_items(w, FLOE_AVRO_ARRAY); }
int floe__avro_begin_map(floe__avro_writer *w, size_t n) { return begin_items(w, FLOE_AVRO_MAP, n); }
int floe__avro_end_map(floe__avro_writer *w) { return end_items(w, FLOE_AVRO_MAP); }

/* ---- lifecycle ----------------------------------------------------------------- */

static int check_meta(const floe__avro_meta *meta, size_t n, floe_error *err)
{
    for (size_t i = 0; i < n; i++) {
        FLOE_RETURN_IF(!meta[i].key || !meta[i].value, err, FLOE_EINVAL,
                       "avro writer: metadata entry %zu has no key or value", i);
        FLOE_RETURN_IF(floe__str_starts(meta[i].key, "avro."), err, FLOE_EINVAL,
                       "avro writer: metadata key \"%s\" is reserved", meta[i].key);
        for (size_t k = 0; k < i; k++)
            FLOE_RETURN_IF(strcmp(meta[k].key, meta[i].key) == 0, err, FLOE_EINVAL,
                           "avro writer: metadata key \"%s\" given twice", meta[i].key);
    }
    return FLOE_OK;
}

static int meta_entry(floe__buf *b, const char *key, const char *value, size_t len,
                      floe_error *err)
{
    FLOE_FORWARD(floe__avro_enc_bytes(b, key, strlen(key), err));
    return floe__avro_enc_bytes(b, value, len == FLOE_AVRO_STRLEN ? strlen(value) : len, err);
}

/* The header goes through w->packed, then to the output in one write. */
static int write_header(floe__avro_writer *w, const floe__avro_meta *meta, size_t n,
                        floe_error *err)
{
    floe__buf *b = &w->packed;
    const char *text = floe__avro_schema_text(w->schema);
    const char *codec = floe__avro_codec_name(w->codec);
    FLOE_FORWARD(floe__buf_append(b, "Obj\x01", 4, err));
    FLOE_FORWARD(floe__avro_enc_long(b, (int64_t)n + 2, err));
    FLOE_FORWARD(meta_entry(b, "avro.schema", text, FLOE_AVRO_STRLEN, err));
    FLOE_FORWARD(meta_entry(b, "avro.codec", codec, FLOE_AVRO_STRLEN, err));
    for (size_t i = 0; i < n; i++)
        FLOE_FORWARD(meta_entry(b, meta[i].key, meta[i].value, meta[i].value_len, err));
    FLOE_FORWARD(floe__avro_enc_long(b, 0, err));
    FLOE_FORWARD(floe__buf_append(b, w->sync, 16, err));
    return floe__output_write(w->out, b->data, b->len, err);
}

static int random_sync(uint8_t sync[16], floe_error *err)
{
    size_t got = 0;
    while (got < 16) {
        ssize_t n = getrandom(sync + got, 16 - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        FLOE_RETURN_IF(n < 0, err, FLOE_EIO, "getrandom: %s", strerror(errno));
        got += (size_t)n;
    }
    return FLOE_OK;
}

/* Frees everything but the output. */
static void writer_free(floe__avro_writer *w)
{
    floe__avro_schema_free(w->schema);
    floe__buf_free(&w->block);
    floe__buf_free(&w->packed);
    floe_error_free(w->scratch);
    floe__free(w->msg);
    floe__free(w);
}

static int writer_setup(floe__avro_writer *w, const char *schema_json,
                        const floe__avro_writer_options *opts, floe_error *err)
{
    FLOE_FORWARD(floe__avro_schema_parse(schema_json, strlen(schema_json), &w->schema, err));
    FLOE_FORWARD(floe__avro_schema_check_names(w->schema, err));
    if (opts) {
        FLOE_RETURN_IF((unsigned)opts->codec > FLOE_AVRO_CODEC_ZSTD, err, FLOE_EINVAL,
                       "avro writer: unknown codec %d", (int)opts->codec);
        w->codec = opts->codec;
        w->level = opts->level;
        w->block_size = opts->block_size;
    }
    if (!w->block_size)
        w->block_size = DEFAULT_BLOCK_SIZE;
    if (opts && opts->sync)
        memcpy(w->sync, opts->sync, 16);
    else
        FLOE_FORWARD(random_sync(w->sync, err));
    return FLOE_OK;
}

int floe__avro_writer_new(const char *schema_json, const floe__avro_writer_options *opts,
                          const floe__avro_meta *meta, size_t n_meta, floe__output *out,
                          floe__avro_writer **w_out, floe_error *err)
{
    FLOE_RETURN_IF(!schema_json || !out || !w_out || (n_meta && !meta), err, FLOE_EINVAL,
                   "avro writer: missing argument");
    FLOE_FORWARD(check_meta(meta, n_meta, err));
    floe__avro_writer *w = floe__calloc(1, sizeof *w);
    if (!w || !(w->scratch = floe_error_new())) {
        floe__free(w);
        return FLOE_OOM(err);
    }
    floe__buf_init(&w->block, BLOCK_BUF_MAX);
    floe__buf_init(&w->packed, 0);
    w->out = out;
    int rc = writer_setup(w, schema_json, opts, err);
    if (rc == FLOE_OK)
        rc = write_header(w, meta, n_meta, err);
    if (rc != FLOE_OK) {
        writer_free(w);
        return rc;
    }
    *w_out = w;
    return FLOE_OK;
}

const floe__avro_schema *floe__avro_writer_schema(const floe__avro_writer *w) { return w->schema; }
uint64_t floe__avro_writer_objects(const floe__avro_writer *w) { return w->objects; }
uint64_t floe__avro_writer_bytes(const floe__avro_writer *w) { return w->out->offset + w->block.len; }

int floe__avro_writer_close(floe__avro_writer *w, uint64_t *file_size, floe_error *err)
{
    if (!w->failed && (w->depth > 0 || w->pending))
        poison(w, FLOE_EINVAL, "close with an object half-written");
    if (!w->failed)
        flush_block(w);
    if (w->failed) {
        int rc = floe__avro_writer_error(w, err);
        floe__avro_writer_abort(w);
        return rc;
    }
    uint64_t size = w->out->offset;
    floe__output *out = w->out;
    writer_free(w);
    FLOE_FORWARD(out->close(out, err));
    if (file_size)
        *file_size = size;
    return FLOE_OK;
}

void floe__avro_writer_abort(floe__avro_writer *w)
{
    if (!w)
        return;
    w->out->abort(w->out);
    writer_free(w);
}
