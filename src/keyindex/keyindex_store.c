/*
 * keyindex_store.c - the key index on local disk, so a restart resumes
 * with the index as it was at the last commit (see keyindex_internal.h).
 *
 * Directory <dir>/<table uuid>-<sink id escaped>/:
 *   checkpoint   the whole index as of a mark (frontier, snapshot):
 *                "FLOEKXC1", u32 version (3), then entries (uvarint key
 *                length + 1, key, uvarint file, uvarint pos, u64 rowhash)
 *                until a 0 byte, then the trailer: u8 empty frontier, u64
 *                frontier, u64 snapshot id, u64 key fingerprint, u32 file
 *                count, per file u8 live + i32 hash schema + u32 length +
 *                path, u64 entry count; then u64 the trailer's offset and
 *                the CRC-32 of everything before it.  The trailer comes
 *                last so that entries can be written as they come (a bulk
 *                copy's, while its rows are written: floe__kx_ckpt) before
 *                the file table and the mark are known.  Written to a
 *                temporary name, synced and renamed.  A checkpoint of
 *                another version, or of another key fingerprint (the key
 *                columns or their types changed), is not loaded: the index
 *                is rebuilt.
 *   log          the commit attempts after the checkpoint: records of u32
 *                payload length, u32 CRC-32 of the payload, payload = u64
 *                attempt token, u8 upper empty, u64 upper, u32 path count,
 *                i32 hash schema, paths (u32 length + bytes), u32 op count,
 *                ops.  Synced after each append.  A torn tail is where the
 *                log ends; a record that does not verify is not used.  The
 *                log belongs to the checkpoint (emptied by each new one).
 * Op: u8 kind (1 insert, 2 remove), u32 path index, u64 pos, u64 rowhash
 * (0 for removes), u32 key length, key.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "io/io_internal.h"
#include "keyindex/keyindex_internal.h"

#define CHECKPOINT_MAGIC "FLOEKXC1"
#define VERSION 3
#define FOOTER 12                   /* u64 trailer offset, u32 CRC */
#define OP_INSERT 1
#define OP_REMOVE 2
#define MAX_RECORD FLOE__KX_MAX_RECORD
#define RECORD_HEAD 25              /* token, upper empty, upper, path count, hash schema */

struct floe__kx_store {
    char *dir;
    uint64_t fingerprint;           /* of the keys it holds */
    int lock_fd, log_fd;
    uint64_t log_bytes, checkpoint_bytes;
    bool writing;                   /* a floe__kx_ckpt is open */
};

/* ---- batch logs ---------------------------------------------------------------------- */

void floe__kx_log_init(floe__kx_log *l)
{
    memset(l, 0, sizeof *l);
    floe__buf_init(&l->ops, 0);
    l->hash_schema = -1;
}

void floe__kx_log_free(floe__kx_log *l)
{
    floe__buf_free(&l->ops);
    floe__strtab_free(&l->paths);
    memset(l, 0, sizeof *l);
    l->hash_schema = -1;
}

static int path_index(floe__kx_log *l, const char *path, uint32_t *out, floe_error *err)
{
    return floe__strtab_intern(&l->paths, path, out, err);
}

static int put_op(floe__kx_log *l, uint8_t kind, const uint8_t *key, size_t len,
                  const char *path, uint64_t pos, uint64_t rowhash, floe_error *err)
{
    if (l->dropped)
        return FLOE_OK;
    if (l->max && l->ops.len + 25 + len > l->max) {     /* too big to log: checkpoint */
        floe__buf_free(&l->ops);
        l->n_ops = 0;
        l->dropped = true;
        return FLOE_OK;
    }
    uint32_t pi = 0;
    FLOE_FORWARD(path_index(l, path, &pi, err));
    uint8_t head[29];
    head[0] = kind;
    floe__put_le32(head + 1, pi);
    floe__put_le64(head + 5, pos);
    floe__put_le64(head + 13, rowhash);
    floe__put_le32(head + 21, (uint32_t)len);
    FLOE_FORWARD(floe__buf_reserve(&l->ops, 25 + len, err));
    floe__buf_put_unchecked(&l->ops, head, 25);
    floe__buf_put_unchecked(&l->ops, key, len);
    l->n_ops++;
    return FLOE_OK;
}

int floe__kx_log_insert(floe__kx_log *l, const uint8_t *key, size_t len, const char *path,
                        uint64_t pos, uint64_t rowhash, floe_error *err)
{
    return put_op(l, OP_INSERT, key, len, path, pos, rowhash, err);
}

int floe__kx_log_remove(floe__kx_log *l, const uint8_t *key, size_t len, const char *path,
                        uint64_t pos, floe_error *err)
{
    return put_op(l, OP_REMOVE, key, len, path, pos, 0, err);
}

/* One op at ops[*at]: apply it. */
static int apply_op(const floe__kx_log *l, floe__kx *kx, size_t *at, floe_error *err)
{
    const uint8_t *p = l->ops.data + *at;
    FLOE_RETURN_IF(*at + 25 > l->ops.len, err, FLOE_EFORMAT, "key index log: truncated op");
    uint32_t pi = floe__get_le32(p + 1), len = floe__get_le32(p + 21);
    uint64_t pos = floe__get_le64(p + 5), rowhash = floe__get_le64(p + 13);
    FLOE_RETURN_IF(pi >= l->paths.n || len > l->ops.len - *at - 25, err, FLOE_EFORMAT,
                   "key index log: bad op");
    const uint8_t *key = p + 25;
    *at += 25 + len;
    uint32_t id;
    if (p[0] == OP_INSERT) {
        FLOE_FORWARD(floe__kx_file(kx, l->paths.s[pi], &id, err));
        floe__kx_file_set_schema(kx, id, l->hash_schema);
        return floe__kx_insert(kx, key, len, (floe__kx_loc){id, pos, rowhash}, err);
    }
    FLOE_RETURN_IF(p[0] != OP_REMOVE, err, FLOE_EFORMAT, "key index log: unknown op %d", p[0]);
    bool found;
    if (!floe__kx_file_find(kx, l->paths.s[pi], &id))
        return FLOE_OK;                              /* its file is retired: nothing to remove */
    return floe__kx_remove(kx, key, len, id, pos, &found, err);
}

int floe__kx_log_append(floe__kx_log *dst, const floe__kx_log *src, floe_error *err)
{
    dst->hash_schema = src->hash_schema;
    if (src->dropped) {
        floe__buf_free(&dst->ops);
        dst->n_ops = 0;
        dst->dropped = true;
        return FLOE_OK;
    }
    for (size_t at = 0, i = 0; i < src->n_ops; i++) {
        const uint8_t *p = src->ops.data + at;
        uint32_t pi = floe__get_le32(p + 1), len = floe__get_le32(p + 21);
        assert(at + 25 + len <= src->ops.len && pi < src->paths.n);
        FLOE_FORWARD(put_op(dst, p[0], p + 25, len, src->paths.s[pi], floe__get_le64(p + 5),
                            floe__get_le64(p + 13), err));
        at += 25 + len;
    }
    return FLOE_OK;
}

int floe__kx_log_apply(const floe__kx_log *l, floe__kx *kx, floe_error *err)
{
    size_t at = 0;
    for (uint32_t i = 0; i < l->n_ops; i++)
        FLOE_FORWARD(apply_op(l, kx, &at, err));
    return FLOE_OK;
}

/* ---- files ---------------------------------------------------------------------------------- */

static char *in_dir(const floe__kx_store *s, const char *name)
{
    return floe__path_join(s->dir, name);
}

/* "<uuid>-<sink id>" with anything but [A-Za-z0-9._-] as %XX. */
static char *store_name(const char *uuid, const char *sink_id)
{
    floe__buf b;
    floe__buf_init(&b, 4096);
    int rc = floe__buf_printf(&b, NULL, "%s-", uuid);
    for (const unsigned char *p = (const unsigned char *)sink_id; rc == FLOE_OK && *p; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-';
        rc = plain ? floe__buf_putc(&b, *p, NULL) : floe__buf_printf(&b, NULL, "%%%02X", *p);
    }
    char *out = rc == FLOE_OK ? floe__buf_strdup(&b) : NULL;
    floe__buf_free(&b);
    return out;
}

static int open_log(floe__kx_store *s, floe_error *err)
{
    char *path = in_dir(s, "log");
    if (!path)
        return FLOE_OOM(err);
    s->log_fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    int e = errno;
    floe__free(path);
    FLOE_RETURN_IF(s->log_fd < 0, err, FLOE_EIO, "cannot open the key index log in %s: %s",
                   s->dir, strerror(e));
    struct stat st;
    s->log_bytes = fstat(s->log_fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    return FLOE_OK;
}

int floe__kx_store_open(const char *dir, const char *table_uuid, const char *sink_id,
                        uint64_t key_fingerprint, floe__kx_store **out, floe_error *err)
{
    floe__kx_store *s = floe__calloc(1, sizeof *s);
    if (s)
        s->fingerprint = key_fingerprint;
    char *name = store_name(table_uuid ? table_uuid : "none", sink_id);
    if (!s || !name || !(s->dir = floe__path_join(dir, name))) {
        floe__free(s);
        floe__free(name);
        return FLOE_OOM(err);
    }
    floe__free(name);
    s->lock_fd = s->log_fd = -1;
    int rc = floe__local_mkdirs(s->dir, err);
    char *lock = rc == FLOE_OK ? in_dir(s, "lock") : NULL;
    if (rc == FLOE_OK && !lock)
        rc = FLOE_OOM(err);
    if (rc == FLOE_OK && (s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
        rc = floe__err_set(err, FLOE_EIO, "cannot open %s: %s", lock, strerror(errno));
    if (rc == FLOE_OK && flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0)
        rc = floe__err_set(err, FLOE_ESTATE, "the key index in %s is in use by another process",
                           s->dir);
    floe__free(lock);
    if (rc == FLOE_OK)
        rc = open_log(s, err);
    if (rc != FLOE_OK) {
        floe__kx_store_free(s);
        return rc;
    }
    *out = s;
    return FLOE_OK;
}

void floe__kx_store_free(floe__kx_store *s)
{
    if (!s)
        return;
    if (s->log_fd >= 0)
        close(s->log_fd);
    if (s->lock_fd >= 0)
        close(s->lock_fd);                      /* releases the lock */
    floe__free(s->dir);
    floe__free(s);
}

const char *floe__kx_store_path(const floe__kx_store *s) { return s->dir; }
uint64_t floe__kx_store_log_bytes(const floe__kx_store *s) { return s->log_bytes; }
uint64_t floe__kx_store_checkpoint_bytes(const floe__kx_store *s) { return s->checkpoint_bytes; }

/* ---- checkpoints ----------------------------------------------------------------------------- */

/* A buffered, CRC-summing writer over an fd. */
typedef struct out {
    int fd;
    floe__buf buf;
    uLong crc;
    uint64_t bytes;
} out;

static int out_flush(out *o, floe_error *err)
{
    int rc = floe__write_all(o->fd, o->buf.data, o->buf.len, "the key index checkpoint", err);
    o->crc = crc32(o->crc, o->buf.data, (uInt)o->buf.len);
    o->bytes += o->buf.len;
    floe__buf_reset(&o->buf);
    return rc;
}

static int out_put(out *o, const void *p, size_t n, floe_error *err)
{
    if (o->buf.len + n > ((size_t)1 << 20) && o->buf.len)
        FLOE_FORWARD(out_flush(o, err));
    if (n > ((size_t)1 << 20)) {                    /* a huge key: straight through */
        FLOE_FORWARD(floe__write_all(o->fd, p, n, "the key index checkpoint", err));
        o->crc = crc32(o->crc, p, (uInt)n);
        o->bytes += n;
        return FLOE_OK;
    }
    return floe__buf_append(&o->buf, p, n, err);
}

static int out_u32(out *o, uint32_t v, floe_error *err)
{
    uint8_t b[4];
    floe__put_le32(b, v);
    return out_put(o, b, 4, err);
}

static int out_u64(out *o, uint64_t v, floe_error *err)
{
    uint8_t b[8];
    floe__put_le64(b, v);
    return out_put(o, b, 8, err);
}

static int out_uvarint(out *o, uint64_t v, floe_error *err)
{
    uint8_t b[10];
    return out_put(o, b, floe__put_uvarint(b, v), err);
}

static int put_entry(out *o, const uint8_t *key, size_t len, floe__kx_loc loc, floe_error *err)
{
    FLOE_FORWARD(out_uvarint(o, (uint64_t)len + 1, err));
    FLOE_FORWARD(out_put(o, key, len, err));
    FLOE_FORWARD(out_uvarint(o, loc.file, err));
    FLOE_FORWARD(out_uvarint(o, loc.pos, err));
    return out_u64(o, loc.rowhash, err);
}

/* The trailer: the mark, the key fingerprint, the file table, the count. */
static int put_trailer(out *o, const floe__kx *kx, floe__kx_mark at, uint64_t fingerprint,
                       uint64_t entries, floe_error *err)
{
    uint8_t empty = at.empty_frontier;
    FLOE_FORWARD(out_put(o, &empty, 1, err));
    FLOE_FORWARD(out_u64(o, at.frontier, err));
    FLOE_FORWARD(out_u64(o, (uint64_t)at.snapshot_id, err));
    FLOE_FORWARD(out_u64(o, fingerprint, err));
    size_t n = floe__kx_file_count(kx);
    FLOE_FORWARD(out_u32(o, (uint32_t)n, err));
    for (uint32_t i = 0; i < n; i++) {
        const char *p = floe__kx_file_path(kx, i);
        uint8_t live = floe__kx_file_committed(kx, i);
        FLOE_FORWARD(out_put(o, &live, 1, err));
        FLOE_FORWARD(out_u32(o, (uint32_t)floe__kx_file_schema(kx, i), err));
        FLOE_FORWARD(out_u32(o, (uint32_t)strlen(p), err));
        FLOE_FORWARD(out_put(o, p, strlen(p), err));
    }
    return out_u64(o, entries, err);
}

struct floe__kx_ckpt {
    floe__kx_store *s;
    int fd;
    char *tmp;
    out o;
    uint64_t n;                     /* entries written */
};

void floe__kx_ckpt_abort(floe__kx_ckpt *c)
{
    if (!c)
        return;
    if (c->fd >= 0) {
        close(c->fd);
        unlink(c->tmp);
    }
    c->s->writing = false;
    floe__buf_free(&c->o.buf);
    floe__free(c->tmp);
    floe__free(c);
}

int floe__kx_ckpt_begin(floe__kx_store *s, floe__kx_ckpt **out_c, floe_error *err)
{
    *out_c = NULL;
    FLOE_RETURN_IF(s->writing, err, FLOE_EINTERNAL, "two key index checkpoints at once");
    floe__kx_ckpt *c = floe__calloc(1, sizeof *c);
    if (!c)
        return FLOE_OOM(err);
    c->s = s;
    c->fd = -1;
    c->o.crc = crc32(0, Z_NULL, 0);
    floe__buf_init(&c->o.buf, 0);
    s->writing = true;
    int rc = (c->tmp = in_dir(s, "checkpoint.tmp")) ? FLOE_OK : FLOE_OOM(err);
    if (rc == FLOE_OK &&
        (c->fd = open(c->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
        rc = floe__err_set(err, FLOE_EIO, "cannot write %s: %s", c->tmp, strerror(errno));
    if (rc == FLOE_OK) {
        c->o.fd = c->fd;
        rc = out_put(&c->o, CHECKPOINT_MAGIC, 8, err);
    }
    if (rc == FLOE_OK)
        rc = out_u32(&c->o, VERSION, err);
    if (rc != FLOE_OK) {
        floe__kx_ckpt_abort(c);
        return rc;
    }
    *out_c = c;
    return FLOE_OK;
}

int floe__kx_ckpt_add(floe__kx_ckpt *c, const uint8_t *key, size_t len, floe__kx_loc loc,
                      floe_error *err)
{
    c->n++;
    return put_entry(&c->o, key, len, loc, err);
}

uint64_t floe__kx_ckpt_entries(const floe__kx_ckpt *c) { return c->n; }

static int sync_dir(const char *dir, floe_error *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = fd >= 0 && fsync(fd) == 0 ? FLOE_OK
                                       : floe__err_set(err, FLOE_EIO, "syncing %s: %s", dir,
                                                       strerror(errno));
    if (fd >= 0)
        close(fd);
    return rc;
}

/* The trailer and the footer, synced, renamed over the checkpoint; the log
 * emptied (it is in the checkpoint now). */
static int finish(floe__kx_ckpt *c, const floe__kx *kx, floe__kx_mark at, floe_error *err)
{
    floe__kx_store *s = c->s;
    out *o = &c->o;
    int rc = out_put(o, "", 1, err);                          /* the entries end */
    uint64_t trailer = o->bytes + o->buf.len;
    if (rc == FLOE_OK)
        rc = put_trailer(o, kx, at, s->fingerprint, c->n, err);
    if (rc == FLOE_OK)
        rc = out_u64(o, trailer, err);
    if (rc == FLOE_OK)
        rc = out_flush(o, err);
    if (rc == FLOE_OK) {
        uint8_t crc[4];
        floe__put_le32(crc, (uint32_t)o->crc);
        rc = floe__write_all(c->fd, crc, 4, "the key index checkpoint", err);
    }
    if (rc == FLOE_OK && fsync(c->fd) != 0)
        rc = floe__err_set(err, FLOE_EIO, "syncing the key index checkpoint: %s",
                           strerror(errno));
    char *final = rc == FLOE_OK ? in_dir(s, "checkpoint") : NULL;
    if (rc == FLOE_OK && !final)
        rc = FLOE_OOM(err);
    if (rc == FLOE_OK && rename(c->tmp, final) != 0)
        rc = floe__err_set(err, FLOE_EIO, "cannot rename %s: %s", c->tmp, strerror(errno));
    floe__free(final);
    if (rc != FLOE_OK)
        return rc;
    close(c->fd);
    c->fd = -1;                                               /* renamed: not to unlink */
    rc = sync_dir(s->dir, err);
    if (rc == FLOE_OK && ftruncate(s->log_fd, 0) != 0)
        rc = floe__err_set(err, FLOE_EIO, "cannot empty the key index log: %s", strerror(errno));
    if (rc == FLOE_OK) {
        s->log_bytes = 0;
        s->checkpoint_bytes = o->bytes + 4;
    }
    return rc;
}

int floe__kx_ckpt_finish(floe__kx_ckpt *c, const floe__kx *kx, floe__kx_mark at,
                         floe_error *err)
{
    int rc = finish(c, kx, at, err);
    floe__kx_ckpt_abort(c);
    return rc;
}

typedef struct counted {
    floe__kx_ckpt *c;
    const floe__kx *kx;
} counted;

/* Rows of committed files only: what the table holds. */
static int count_entry(void *ctx, const uint8_t *key, size_t len, floe__kx_loc loc,
                       floe_error *err)
{
    counted *x = ctx;
    if (!floe__kx_file_committed(x->kx, loc.file))
        return FLOE_OK;
    return floe__kx_ckpt_add(x->c, key, len, loc, err);
}

int floe__kx_store_checkpoint(floe__kx_store *s, floe__kx *kx, floe__kx_mark at,
                              floe__kx_extra_fn extra, void *extra_ctx, floe_error *err)
{
    floe__kx_ckpt *c = NULL;
    FLOE_FORWARD(floe__kx_ckpt_begin(s, &c, err));
    counted x = {c, kx};
    int rc = floe__kx_each(kx, count_entry, &x, err);
    if (rc == FLOE_OK && extra)
        rc = extra(extra_ctx, count_entry, &x, err);
    if (rc != FLOE_OK) {
        floe__kx_ckpt_abort(c);
        return rc;
    }
    return floe__kx_ckpt_finish(c, kx, at, err);
}

/* ---- loading ------------------------------------------------------------------------------------ */

/* A buffered, CRC-summing reader over an fd: every byte taken is summed
 * (lazily, a buffer's worth at a time) except those taken by in_skip_sum. */
typedef struct in {
    int fd;
    uint8_t *buf;
    size_t len, at, summed;         /* buf[summed, at) is taken, not summed yet */
    uint64_t pos;                   /* bytes taken */
    uLong crc;
    bool eof;
} in;

#define IN_BUF ((size_t)1 << 20)

static void in_sum(in *r)
{
    r->crc = crc32(r->crc, r->buf + r->summed, (uInt)(r->at - r->summed));
    r->summed = r->at;
}

static bool in_fill(in *r)
{
    if (r->at < r->len || r->eof)
        return r->at < r->len;
    in_sum(r);
    ssize_t got;
    do
        got = read(r->fd, r->buf, IN_BUF);
    while (got < 0 && errno == EINTR);
    r->len = got > 0 ? (size_t)got : 0;
    r->at = r->summed = 0;
    r->eof = got <= 0;
    return r->len > 0;
}

/* n bytes into dst (dst NULL: skip them); false when the file ends first. */
static bool in_take(in *r, void *dst, size_t n)
{
    uint8_t *d = dst;
    while (n) {
        if (!in_fill(r))
            return false;
        size_t k = r->len - r->at < n ? r->len - r->at : n;
        if (d) {
            memcpy(d, r->buf + r->at, k);
            d += k;
        }
        r->at += k;
        r->pos += k;
        n -= k;
    }
    return true;
}

/* n bytes left out of the sum (the CRC itself), a byte at a time so that
 * no refill sums them. */
static bool in_take_unsummed(in *r, uint8_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        in_sum(r);
        if (!in_take(r, dst + i, 1))
            return false;
        r->summed = r->at;
    }
    return true;
}

static bool in_u64(in *r, uint64_t *v)
{
    uint8_t b[8];
    if (!in_take(r, b, 8))
        return false;
    *v = floe__get_le64(b);
    return true;
}

static bool in_uvarint(in *r, uint64_t *v)
{
    if (r->len - r->at >= 10) {                      /* the common case: in the buffer */
        size_t n = floe__get_uvarint(r->buf + r->at, r->buf + r->len, v);
        r->at += n;
        r->pos += n;
        return n > 0;
    }
    *v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        uint8_t b;
        if (!in_take(r, &b, 1))
            return false;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* The trailer, read into memory: a cursor over it. */
typedef struct cur {
    const uint8_t *p, *end;
} cur;

static bool cur_take(cur *c, void *dst, size_t n)
{
    if ((size_t)(c->end - c->p) < n)
        return false;
    memcpy(dst, c->p, n);
    c->p += n;
    return true;
}

static bool cur_u32(cur *c, uint32_t *v)
{
    uint8_t b[4];
    return cur_take(c, b, 4) && (*v = floe__get_le32(b), true);
}

static bool cur_u64(cur *c, uint64_t *v)
{
    uint8_t b[8];
    return cur_take(c, b, 8) && (*v = floe__get_le64(b), true);
}

/* A checkpoint's footer and trailer, read (not verified) from its end. */
typedef struct trailer {
    uint64_t offset;                /* where the trailer starts */
    uint8_t *bytes;                 /* the trailer */
    size_t len;
    floe__kx_mark at;
    uint64_t fingerprint;
    cur files;                      /* the file table, still to read */
    uint64_t entries;
} trailer;

/* *ok false when the file has no trailer of this version's form. */
static int read_trailer(int fd, trailer *t, bool *ok, floe_error *err)
{
    *ok = false;
    memset(t, 0, sizeof *t);
    struct stat st;
    uint8_t head[12], foot[FOOTER];
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)(sizeof head + 1 + FOOTER) ||
        pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head ||
        memcmp(head, CHECKPOINT_MAGIC, 8) != 0 || floe__get_le32(head + 8) != VERSION ||
        pread(fd, foot, FOOTER, st.st_size - FOOTER) != FOOTER)
        return FLOE_OK;
    uint64_t size = (uint64_t)st.st_size;
    t->offset = floe__get_le64(foot);
    if (t->offset < sizeof head + 1 || t->offset > size - FOOTER ||
        size - FOOTER - t->offset > ((uint64_t)1 << 30))
        return FLOE_OK;
    t->len = (size_t)(size - FOOTER - t->offset);
    if (!(t->bytes = floe__malloc(t->len)))
        return FLOE_OOM(err);
    if (pread(fd, t->bytes, t->len, (off_t)t->offset) != (ssize_t)t->len)
        return FLOE_OK;
    cur c = {t->bytes, t->bytes + t->len};
    uint8_t empty;
    uint64_t snap;
    if (!(cur_take(&c, &empty, 1) && cur_u64(&c, &t->at.frontier) && cur_u64(&c, &snap) &&
          cur_u64(&c, &t->fingerprint) && c.end - c.p >= 8))
        return FLOE_OK;
    t->at.empty_frontier = empty != 0;
    t->at.snapshot_id = (int64_t)snap;
    t->files = (cur){c.p, c.end - 8};
    t->entries = floe__get_le64(c.end - 8);
    *ok = true;
    return FLOE_OK;
}

typedef struct loading {
    in r;
    floe__kx *kx;
    uint32_t *ids;                      /* checkpoint file id -> index id (UINT32_MAX: retired) */
    uint32_t n_ids;
    floe__buf key;
    char *why;
    size_t why_len;
} loading;

static bool bad(loading *l, const char *what)
{
    snprintf(l->why, l->why_len, "the checkpoint is unusable (%s)", what);
    return false;
}

static int read_files(loading *l, cur *c, bool *ok, floe_error *err)
{
    uint32_t n;
    if (!(*ok = cur_u32(c, &n) && n < FLOE_KX_MAX_FILES))
        return bad(l, "file table"), FLOE_OK;
    l->ids = floe__calloc(n ? n : 1, sizeof *l->ids);
    if (!l->ids)
        return FLOE_OOM(err);
    l->n_ids = n;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t live;
        uint32_t len, schema;
        floe__buf_reset(&l->key);
        if (!(*ok = cur_take(c, &live, 1) && cur_u32(c, &schema) && cur_u32(c, &len) &&
                    len < 65536 && floe__buf_reserve(&l->key, len + 1, NULL) == FLOE_OK &&
                    cur_take(c, l->key.data, len)))
            return bad(l, "file path"), FLOE_OK;
        l->key.data[len] = '\0';
        l->ids[i] = UINT32_MAX;
        if (live) {
            FLOE_FORWARD(floe__kx_file(l->kx, (const char *)l->key.data, &l->ids[i], err));
            floe__kx_file_set_schema(l->kx, l->ids[i], (int32_t)schema);
        }
    }
    if (!(*ok = c->p == c->end))
        bad(l, "file table");
    return FLOE_OK;
}

/* The entries (into b, or inserted when b is NULL), from just after the
 * version to the trailer, then the trailer and footer for the CRC. */
static int read_entries(loading *l, const trailer *t, floe__kx_builder *b, bool *ok,
                        floe_error *err)
{
    if (!(*ok = in_take(&l->r, NULL, 12)))
        return bad(l, "truncated"), FLOE_OK;
    uint64_t n = 0;
    for (;;) {
        uint64_t len1, file, pos, rowhash;
        if (!(*ok = in_uvarint(&l->r, &len1)))
            return bad(l, "truncated"), FLOE_OK;
        if (len1 == 0)
            break;
        size_t len = (size_t)(len1 - 1);
        floe__buf_reset(&l->key);
        if (!(*ok = len1 - 1 <= FLOE_KX_MAX_KEY &&
                    floe__buf_reserve(&l->key, len, NULL) == FLOE_OK &&
                    in_take(&l->r, l->key.data, len) && in_uvarint(&l->r, &file) &&
                    in_uvarint(&l->r, &pos) && in_u64(&l->r, &rowhash) && file < l->n_ids &&
                    pos <= FLOE_KX_MAX_POS))
            return bad(l, "entry"), FLOE_OK;
        n++;
        if (l->ids[file] == UINT32_MAX)
            continue;
        floe__kx_loc loc = {l->ids[file], pos, rowhash};
        FLOE_FORWARD(b ? floe__kx_builder_add(b, l->key.data, len, loc, err)
                       : floe__kx_insert(l->kx, l->key.data, len, loc, err));
    }
    uint8_t crc[4];
    *ok = l->r.pos == t->offset && n == t->entries && in_take(&l->r, NULL, t->len + 8) &&
          in_take_unsummed(&l->r, crc, 4) && floe__get_le32(crc) == (uint32_t)l->r.crc;
    if (!*ok)
        bad(l, "count or CRC");
    return FLOE_OK;
}

/* The entries into the index: a checkpoint larger than the memory tier
 * into an empty index through a builder (sorted runs merged once), as a
 * bulk copy builds it, instead of inserts that spill the memory tier again
 * and again (a restart after a 10M-row copy: 1.6 s of CPU instead of 6). */
static int load_entries(loading *l, const trailer *t, bool *ok, floe_error *err)
{
    floe__kx_builder *b = NULL;
    if (floe__kx_build_pays(l->kx, t->entries))
        FLOE_FORWARD(floe__kx_builder_new(l->kx, &b, err));
    int rc = read_entries(l, t, b, ok, err);
    if (rc == FLOE_OK && *ok && b)
        return floe__kx_builder_finish(b, err);
    floe__kx_builder_free(b);
    return rc;
}

static int load_from(loading *l, floe__kx_mark *at, uint64_t fingerprint, bool *ok,
                     floe_error *err)
{
    trailer t;
    int rc = read_trailer(l->r.fd, &t, ok, err);
    if (rc == FLOE_OK && !*ok)
        bad(l, "its end, or written by an older floe");
    else if (rc == FLOE_OK && !(*ok = t.fingerprint == fingerprint))
        snprintf(l->why, l->why_len, "the stored index has other key columns or types");
    if (rc == FLOE_OK && *ok)
        rc = read_files(l, &t.files, ok, err);
    if (rc == FLOE_OK && *ok)
        rc = load_entries(l, &t, ok, err);
    if (rc == FLOE_OK && *ok)
        *at = t.at;
    floe__free(t.bytes);
    return rc;
}

/* The checkpoint, opened for reading: -1 when there is none. */
static int open_checkpoint(const floe__kx_store *s, int *fd, floe_error *err)
{
    *fd = -1;
    char *path = in_dir(s, "checkpoint");
    if (!path)
        return FLOE_OOM(err);
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    floe__free(path);
    return FLOE_OK;
}

int floe__kx_store_peek(floe__kx_store *s, bool *have, floe__kx_mark *at, uint64_t *entries,
                        floe_error *err)
{
    *have = false;
    int fd = -1;
    FLOE_FORWARD(open_checkpoint(s, &fd, err));
    if (fd < 0)
        return FLOE_OK;
    trailer t;
    bool ok = false;
    int rc = read_trailer(fd, &t, &ok, err);
    if (rc == FLOE_OK && ok && t.fingerprint == s->fingerprint) {
        *have = true;
        *at = t.at;
        *entries = t.entries;
    }
    floe__free(t.bytes);
    close(fd);
    return rc;
}

int floe__kx_store_load(floe__kx_store *s, floe__kx *kx, bool *have, floe__kx_mark *at,
                        char *why, size_t why_len, floe_error *err)
{
    *have = false;
    snprintf(why, why_len, "there is no checkpoint");
    int fd = -1;
    FLOE_FORWARD(open_checkpoint(s, &fd, err));
    if (fd < 0)
        return FLOE_OK;
    loading l = {.r = {.fd = fd, .crc = crc32(0, Z_NULL, 0)}, .kx = kx, .why = why,
                 .why_len = why_len};
    floe__buf_init(&l.key, 0);
    l.r.buf = floe__malloc(IN_BUF);
    int rc = l.r.buf ? load_from(&l, at, s->fingerprint, have, err) : FLOE_OOM(err);
    struct stat st;
    if (rc == FLOE_OK && *have && fstat(fd, &st) == 0)
        s->checkpoint_bytes = (uint64_t)st.st_size;
    close(fd);
    floe__free(l.r.buf);
    floe__free(l.ids);
    floe__buf_free(&l.key);
    return rc;
}

/* ---- the log ---------------------------------------------------------------------------------------- */

static int encode_record(const floe__kx_log *l, const floe__kx_logged *at, floe__buf *b,
                         floe_error *err)
{
    uint8_t head[8 + RECORD_HEAD];
    floe__put_le64(head + 8, at->token);
    head[16] = at->upper_empty;
    floe__put_le64(head + 17, at->upper);
    floe__put_le32(head + 25, (uint32_t)l->paths.n);
    floe__put_le32(head + 29, (uint32_t)l->hash_schema);
    FLOE_FORWARD(floe__buf_append(b, head, sizeof head, err));
    for (size_t i = 0; i < l->paths.n; i++) {
        uint8_t n[4];
        floe__put_le32(n, (uint32_t)strlen(l->paths.s[i]));
        FLOE_FORWARD(floe__buf_append(b, n, 4, err));
        FLOE_FORWARD(floe__buf_append(b, l->paths.s[i], strlen(l->paths.s[i]), err));
    }
    uint8_t n[4];
    floe__put_le32(n, l->n_ops);
    FLOE_FORWARD(floe__buf_append(b, n, 4, err));
    FLOE_FORWARD(floe__buf_append(b, l->ops.data, l->ops.len, err));
    FLOE_RETURN_IF(b->len - 8 > MAX_RECORD, err, FLOE_ELIMIT, "a key index log record over 2 GiB");
    floe__put_le32(b->data, (uint32_t)(b->len - 8));
    floe__put_le32(b->data + 4, (uint32_t)crc32(crc32(0, Z_NULL, 0), b->data + 8,
                                                (uInt)(b->len - 8)));
    return FLOE_OK;
}

int floe__kx_store_log(floe__kx_store *s, const floe__kx_log *l, uint64_t token,
                       bool upper_empty, uint64_t upper, floe_error *err)
{
    floe__buf b;
    floe__buf_init(&b, 0);
    floe__kx_logged at = {s->log_bytes, token, upper_empty, upper};
    int rc = encode_record(l, &at, &b, err);
    if (rc == FLOE_OK)
        rc = floe__write_all(s->log_fd, b.data, b.len, "the key index log", err);
    if (rc == FLOE_OK && fdatasync(s->log_fd) != 0)
        rc = floe__err_set(err, FLOE_EIO, "syncing the key index log: %s", strerror(errno));
    if (rc == FLOE_OK)
        s->log_bytes += b.len;
    floe__buf_free(&b);
    return rc;
}

/* Decode a record's payload (after its head) into a log; false when it is
 * malformed. */
static bool decode_record(const uint8_t *p, size_t n, floe__kx_log *l)
{
    uint32_t np = floe__get_le32(p + 17);
    l->hash_schema = (int32_t)floe__get_le32(p + 21);
    size_t at = RECORD_HEAD;
    for (uint32_t i = 0; i < np; i++) {
        if (at + 4 > n)
            return false;
        uint32_t len = floe__get_le32(p + at);
        if (len > n - at - 4)
            return false;
        if (floe__strtab_push(&l->paths, (const char *)p + at + 4, len, NULL) != FLOE_OK)
            return false;
        at += 4 + len;
    }
    if (at + 4 > n)
        return false;
    l->n_ops = floe__get_le32(p + at);
    return floe__buf_append(&l->ops, p + at + 4, n - at - 4, NULL) == FLOE_OK;
}

int floe__kx_store_list(floe__kx_store *s, floe__kx_logged **list, size_t *n, floe_error *err)
{
    *list = NULL;
    *n = 0;
    size_t cap = 0;
    uint64_t off = 0;
    for (;;) {
        uint8_t head[8 + RECORD_HEAD];
        if (pread(s->log_fd, head, sizeof head, (off_t)off) != (ssize_t)sizeof head)
            break;
        uint32_t len = floe__get_le32(head);
        if (len < RECORD_HEAD || off + 8 + len > s->log_bytes)
            break;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            floe__kx_logged *v = floe__realloc(*list, cap * sizeof *v);
            if (!v) {
                floe__free(*list);
                *list = NULL;
                *n = 0;
                return FLOE_OOM(err);
            }
            *list = v;
        }
        (*list)[(*n)++] = (floe__kx_logged){off, floe__get_le64(head + 8), head[16] != 0,
                                           floe__get_le64(head + 17)};
        off += 8 + len;
    }
    if (off < s->log_bytes) {                      /* a torn tail: appends go after the rest */
        FLOE_RETURN_IF(ftruncate(s->log_fd, (off_t)off) != 0, err, FLOE_EIO,
                       "cannot trim the key index log: %s", strerror(errno));
        s->log_bytes = off;
    }
    return FLOE_OK;
}

int floe__kx_store_read(floe__kx_store *s, uint64_t off, floe__kx_log *l, bool *ok,
                        floe_error *err)
{
    *ok = false;
    uint8_t head[8];
    if (pread(s->log_fd, head, 8, (off_t)off) != 8)
        return FLOE_OK;
    uint32_t n = floe__get_le32(head), crc = floe__get_le32(head + 4);
    if (n < RECORD_HEAD || off + 8 + n > s->log_bytes)
        return FLOE_OK;
    uint8_t *p = floe__malloc(n);
    if (!p)
        return FLOE_OOM(err);
    *ok = pread(s->log_fd, p, n, (off_t)(off + 8)) == (ssize_t)n &&
          (uint32_t)crc32(crc32(0, Z_NULL, 0), p, n) == crc && decode_record(p, n, l);
    floe__free(p);
    return FLOE_OK;
}
