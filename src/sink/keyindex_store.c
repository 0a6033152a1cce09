/*
 * keyindex_store.c - the key index on local disk, so a restart resumes
 * with the index as it was at the last commit (see keyindex_internal.h).
 *
 * Directory <dir>/<table uuid>-<sink id escaped>/:
 *   checkpoint   the whole index as of a mark (frontier, snapshot):
 *                "FLOEKXC1", u32 version (2), the mark, u64 key
 *                fingerprint, u32 file count, then per file u8 live + i32
 *                hash schema + u32 length + path, then entries (u32 key
 *                length, key, u32 file, u64 pos, u64 rowhash) until a length
 *                of 0xFFFFFFFF, then u64 entry count and the CRC-32 of
 *                everything before it.  Written to a temporary name, synced
 *                and renamed.  A checkpoint of another version, or of
 *                another key fingerprint (the key columns or their types
 *                changed), is not loaded: the index is rebuilt.
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
#include "sink/keyindex_internal.h"

#define CHECKPOINT_MAGIC "FLOEKXC1"
#define VERSION 2
#define END_OF_ENTRIES 0xFFFFFFFFu
#define OP_INSERT 1
#define OP_REMOVE 2
#define MAX_RECORD FLOE__KX_MAX_RECORD
#define RECORD_HEAD 25              /* token, upper empty, upper, path count, hash schema */

struct floe__kx_store {
    char *dir;
    uint64_t fingerprint;           /* of the keys it holds */
    int lock_fd, log_fd;
    uint64_t log_bytes, checkpoint_bytes;
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
    for (size_t i = 0; i < l->n_paths; i++)
        floe__free(l->paths[i]);
    floe__free(l->paths);
    memset(l, 0, sizeof *l);
    l->hash_schema = -1;
}

static int path_index(floe__kx_log *l, const char *path, uint32_t *out, floe_error *err)
{
    for (size_t i = l->n_paths; i-- > 0;)             /* a batch names few files */
        if (strcmp(l->paths[i], path) == 0) {
            *out = (uint32_t)i;
            return FLOE_OK;
        }
    char **p = floe__realloc(l->paths, (l->n_paths + 1) * sizeof *p);
    if (!p)
        return FLOE_OOM(err);
    l->paths = p;
    if (!(p[l->n_paths] = floe__strdup(path)))
        return FLOE_OOM(err);
    *out = (uint32_t)l->n_paths++;
    return FLOE_OK;
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
    FLOE_RETURN_IF(pi >= l->n_paths || len > l->ops.len - *at - 25, err, FLOE_EFORMAT,
                   "key index log: bad op");
    const uint8_t *key = p + 25;
    *at += 25 + len;
    uint32_t id;
    if (p[0] == OP_INSERT) {
        FLOE_FORWARD(floe__kx_file(kx, l->paths[pi], &id, err));
        floe__kx_file_set_schema(kx, id, l->hash_schema);
        return floe__kx_insert(kx, key, len, (floe__kx_loc){id, pos, rowhash}, err);
    }
    FLOE_RETURN_IF(p[0] != OP_REMOVE, err, FLOE_EFORMAT, "key index log: unknown op %d", p[0]);
    bool found;
    if (!floe__kx_file_find(kx, l->paths[pi], &id))
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
        assert(at + 25 + len <= src->ops.len && pi < src->n_paths);
        FLOE_FORWARD(put_op(dst, p[0], p + 25, len, src->paths[pi], floe__get_le64(p + 5),
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

static int write_all(int fd, const void *p, size_t n, const char *what, floe_error *err)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return floe__err_set(err, FLOE_EIO, "writing the key index %s: %s", what,
                                 strerror(errno));
        b += w;
        n -= (size_t)w;
    }
    return FLOE_OK;
}

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
    int rc = write_all(o->fd, o->buf.data, o->buf.len, "checkpoint", err);
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
        FLOE_FORWARD(write_all(o->fd, p, n, "checkpoint", err));
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

static int put_entry(void *ctx, const uint8_t *key, size_t len, floe__kx_loc loc,
                     floe_error *err)
{
    out *o = ctx;
    FLOE_FORWARD(out_u32(o, (uint32_t)len, err));
    FLOE_FORWARD(out_put(o, key, len, err));
    FLOE_FORWARD(out_u32(o, loc.file, err));
    FLOE_FORWARD(out_u64(o, loc.pos, err));
    return out_u64(o, loc.rowhash, err);
}

static int put_head(out *o, const floe__kx *kx, floe__kx_mark at, uint64_t fingerprint,
                    floe_error *err)
{
    FLOE_FORWARD(out_put(o, CHECKPOINT_MAGIC, 8, err));
    FLOE_FORWARD(out_u32(o, VERSION, err));
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
    return FLOE_OK;
}

typedef struct counted {
    out *o;
    const floe__kx *kx;
    uint64_t n;
} counted;

/* Rows of committed files only: what the table holds. */
static int count_entry(void *ctx, const uint8_t *key, size_t len, floe__kx_loc loc,
                       floe_error *err)
{
    counted *c = ctx;
    if (!floe__kx_file_committed(c->kx, loc.file))
        return FLOE_OK;
    c->n++;
    return put_entry(c->o, key, len, loc, err);
}

static int write_checkpoint(int fd, floe__kx *kx, floe__kx_mark at, uint64_t fingerprint,
                            floe__kx_extra_fn extra, void *extra_ctx, uint64_t *bytes,
                            floe_error *err)
{
    out o = {.fd = fd, .crc = crc32(0, Z_NULL, 0)};
    floe__buf_init(&o.buf, 0);
    counted c = {&o, kx, 0};
    int rc = put_head(&o, kx, at, fingerprint, err);
    if (rc == FLOE_OK)
        rc = floe__kx_each(kx, count_entry, &c, err);
    if (rc == FLOE_OK && extra)
        rc = extra(extra_ctx, count_entry, &c, err);
    if (rc == FLOE_OK)
        rc = out_u32(&o, END_OF_ENTRIES, err);
    if (rc == FLOE_OK)
        rc = out_u64(&o, c.n, err);
    if (rc == FLOE_OK)
        rc = out_flush(&o, err);
    if (rc == FLOE_OK) {
        uint8_t crc[4];
        floe__put_le32(crc, (uint32_t)o.crc);
        rc = write_all(fd, crc, 4, "checkpoint", err);
    }
    if (rc == FLOE_OK && fsync(fd) != 0)
        rc = floe__err_set(err, FLOE_EIO, "syncing the key index checkpoint: %s",
                           strerror(errno));
    *bytes = o.bytes + 4;
    floe__buf_free(&o.buf);
    return rc;
}

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

int floe__kx_store_checkpoint(floe__kx_store *s, floe__kx *kx, floe__kx_mark at,
                              floe__kx_extra_fn extra, void *extra_ctx, floe_error *err)
{
    char *tmp = in_dir(s, "checkpoint.tmp"), *final = in_dir(s, "checkpoint");
    int rc = tmp && final ? FLOE_OK : FLOE_OOM(err);
    int fd = rc == FLOE_OK ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
    if (rc == FLOE_OK && fd < 0)
        rc = floe__err_set(err, FLOE_EIO, "cannot write %s: %s", tmp, strerror(errno));
    uint64_t bytes = 0;
    if (rc == FLOE_OK)
        rc = write_checkpoint(fd, kx, at, s->fingerprint, extra, extra_ctx, &bytes, err);
    if (fd >= 0)
        close(fd);
    if (rc == FLOE_OK && rename(tmp, final) != 0)
        rc = floe__err_set(err, FLOE_EIO, "cannot rename %s: %s", tmp, strerror(errno));
    if (rc == FLOE_OK)
        rc = sync_dir(s->dir, err);
    if (rc == FLOE_OK && ftruncate(s->log_fd, 0) != 0)      /* the log is in the checkpoint now */
        rc = floe__err_set(err, FLOE_EIO, "cannot empty the key index log: %s", strerror(errno));
    if (rc == FLOE_OK) {
        s->log_bytes = 0;
        s->checkpoint_bytes = bytes;
    } else if (tmp) {
        unlink(tmp);
    }
    floe__free(tmp);
    floe__free(final);
    return rc;
}

/* ---- loading ------------------------------------------------------------------------------------ */

/* A buffered, CRC-summing reader over an fd. */
typedef struct in {
    int fd;
    uint8_t *buf;
    size_t len, at;
    uLong crc;
    bool eof;
} in;

#define IN_BUF ((size_t)1 << 20)

static bool in_fill(in *r)
{
    if (r->at < r->len || r->eof)
        return r->at < r->len;
    ssize_t got;
    do
        got = read(r->fd, r->buf, IN_BUF);
    while (got < 0 && errno == EINTR);
    r->len = got > 0 ? (size_t)got : 0;
    r->at = 0;
    r->eof = got <= 0;
    return r->len > 0;
}

/* n bytes into dst (dst NULL: skip them); false when the file ends first. */
static bool in_take(in *r, void *dst, size_t n, bool sum)
{
    uint8_t *d = dst;
    while (n) {
        if (!in_fill(r))
            return false;
        size_t k = r->len - r->at < n ? r->len - r->at : n;
        if (sum)
            r->crc = crc32(r->crc, r->buf + r->at, (uInt)k);
        if (d) {
            memcpy(d, r->buf + r->at, k);
            d += k;
        }
        r->at += k;
        n -= k;
    }
    return true;
}

static bool in_u32(in *r, uint32_t *v)
{
    uint8_t b[4];
    if (!in_take(r, b, 4, true))
        return false;
    *v = floe__get_le32(b);
    return true;
}

static bool in_u64(in *r, uint64_t *v)
{
    uint8_t b[8];
    if (!in_take(r, b, 8, true))
        return false;
    *v = floe__get_le64(b);
    return true;
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

static int read_files(loading *l, bool *ok, floe_error *err)
{
    uint32_t n;
    if (!(*ok = in_u32(&l->r, &n) && n < FLOE_KX_MAX_FILES))
        return bad(l, "file table"), FLOE_OK;
    l->ids = floe__calloc(n ? n : 1, sizeof *l->ids);
    if (!l->ids)
        return FLOE_OOM(err);
    l->n_ids = n;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t live;
        uint32_t len, schema;
        floe__buf_reset(&l->key);
        if (!(*ok = in_take(&l->r, &live, 1, true) && in_u32(&l->r, &schema) &&
                    in_u32(&l->r, &len) && len < 65536 &&
                    floe__buf_reserve(&l->key, len + 1, NULL) == FLOE_OK &&
                    in_take(&l->r, l->key.data, len, true)))
            return bad(l, "file path"), FLOE_OK;
        l->key.data[len] = '\0';
        l->ids[i] = UINT32_MAX;
        if (live) {
            FLOE_FORWARD(floe__kx_file(l->kx, (const char *)l->key.data, &l->ids[i], err));
            floe__kx_file_set_schema(l->kx, l->ids[i], (int32_t)schema);
        }
    }
    return FLOE_OK;
}

static int read_entries(loading *l, bool *ok, floe_error *err)
{
    uint64_t n = 0;
    for (;;) {
        uint32_t len, file;
        uint64_t pos, rowhash;
        if (!(*ok = in_u32(&l->r, &len)))
            return bad(l, "truncated"), FLOE_OK;
        if (len == END_OF_ENTRIES)
            break;
        floe__buf_reset(&l->key);
        if (!(*ok = len <= FLOE_KX_MAX_KEY && floe__buf_reserve(&l->key, len, NULL) == FLOE_OK &&
                    in_take(&l->r, l->key.data, len, true) && in_u32(&l->r, &file) &&
                    in_u64(&l->r, &pos) && in_u64(&l->r, &rowhash) && file < l->n_ids &&
                    pos <= FLOE_KX_MAX_POS))
            return bad(l, "entry"), FLOE_OK;
        if (l->ids[file] == UINT32_MAX)
            continue;
        floe__kx_loc loc = {l->ids[file], pos, rowhash};
        FLOE_FORWARD(floe__kx_insert(l->kx, l->key.data, len, loc, err));
        n++;
    }
    uint64_t count;
    uint8_t crc[4];
    uLong want = l->r.crc;
    *ok = in_u64(&l->r, &count) && (want = l->r.crc, in_take(&l->r, crc, 4, false)) &&
          count == n && floe__get_le32(crc) == (uint32_t)want;
    if (!*ok)
        bad(l, "count or CRC");
    return FLOE_OK;
}

/* The header: magic, version, the mark and the key fingerprint. */
static bool read_head(in *r, floe__kx_mark *at, uint64_t *fingerprint)
{
    char magic[8];
    uint32_t version;
    uint8_t empty;
    uint64_t snap;
    if (!(in_take(r, magic, 8, true) && memcmp(magic, CHECKPOINT_MAGIC, 8) == 0 &&
          in_u32(r, &version) && version == VERSION && in_take(r, &empty, 1, true) &&
          in_u64(r, &at->frontier) && in_u64(r, &snap) && in_u64(r, fingerprint)))
        return false;
    at->empty_frontier = empty != 0;
    at->snapshot_id = (int64_t)snap;
    return true;
}

static int load_from(loading *l, floe__kx_mark *at, uint64_t fingerprint, bool *ok,
                     floe_error *err)
{
    uint64_t fp = 0;
    if (!(*ok = read_head(&l->r, at, &fp)))
        return bad(l, "header, or written by an older floe"), FLOE_OK;
    if (!(*ok = fp == fingerprint)) {
        snprintf(l->why, l->why_len, "the stored index has other key columns or types");
        return FLOE_OK;
    }
    FLOE_FORWARD(read_files(l, ok, err));
    return *ok ? read_entries(l, ok, err) : FLOE_OK;
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
    uint8_t head[64], tail[12];
    in r = {.fd = fd, .buf = head};
    ssize_t got = read(fd, head, sizeof head);
    struct stat st;
    if (got > 0 && fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof tail &&
        pread(fd, tail, sizeof tail, st.st_size - (off_t)sizeof tail) == (ssize_t)sizeof tail) {
        r.len = (size_t)got;
        r.eof = true;                   /* in_fill must not read past the head */
        uint64_t fp = 0;
        *have = read_head(&r, at, &fp) && fp == s->fingerprint;
        *entries = floe__get_le64(tail);
    }
    close(fd);
    return FLOE_OK;
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
    floe__put_le32(head + 25, (uint32_t)l->n_paths);
    floe__put_le32(head + 29, (uint32_t)l->hash_schema);
    FLOE_FORWARD(floe__buf_append(b, head, sizeof head, err));
    for (size_t i = 0; i < l->n_paths; i++) {
        uint8_t n[4];
        floe__put_le32(n, (uint32_t)strlen(l->paths[i]));
        FLOE_FORWARD(floe__buf_append(b, n, 4, err));
        FLOE_FORWARD(floe__buf_append(b, l->paths[i], strlen(l->paths[i]), err));
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
        rc = write_all(s->log_fd, b.data, b.len, "log", err);
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
        char **v = floe__realloc(l->paths, (l->n_paths + 1) * sizeof *v);
        if (!v)
            return false;
        l->paths = v;
        if (!(v[l->n_paths] = floe__strndup((const char *)p + at + 4, len)))
            return false;
        l->n_paths++;
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
