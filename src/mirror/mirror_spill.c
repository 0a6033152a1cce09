/*
 * mirror_spill.c - streamed transactions held on local disk until they
 * commit or abort (pgoutput protocol 2, `streaming 'on'`).
 *
 * Postgres sends a transaction larger than logical_decoding_work_mem while
 * it is still in progress, in blocks (Stream Start .. Stream Stop) that
 * interleave with other transactions, and later a Stream Commit or Stream
 * Abort.  Each such transaction, keyed by its top-level xid, gets one
 * unnamed file (O_TMPFILE in the spill directory, or a file unlinked as
 * soon as it is made): nothing is left behind by a crash, and a restart
 * does not need it (the slot sends the transaction again).  A record is
 *
 *     u32 length (of what follows the subxid), u32 subxid, u8 kind, body
 *
 * little-endian: the pgoutput message as protocol 1 has it (its streamed
 * xid taken out), so a replay decodes it as if it had come between a
 * Begin and a Commit, and the xid of the (sub)transaction that made it.
 * A subtransaction's abort adds its xid to the transaction's sorted set of
 * aborted ones; the reader says which records belong to one (the caller
 * skips their changes).  Writes go through a buffer per transaction
 * (flushed at Stream Stop and before a read), reads through one buffer.
 *
 * What is not here: what the messages mean, when to replay them
 * (mirror_stream.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "mirror/mirror_internal.h"

#define RECORD_HEAD 8
#define FLUSH_AT ((size_t)256 << 10)
#define READ_CHUNK ((size_t)1 << 20)
#define MAX_RECORD ((size_t)1 << 30)         /* a pgoutput message is less */

typedef struct stxn {
    uint32_t xid;
    int fd;
    uint64_t bytes;              /* written to fd */
    floe__buf wbuf;              /* not written yet */
    uint32_t *aborted;           /* sorted subxids */
    size_t naborted, cap_aborted;
    uint64_t records;
} stxn;

struct floe__spill {
    char *dir;
    stxn *txns;
    size_t n, cap;
    uint64_t bytes;              /* over every transaction, buffered included */
};

struct floe__spill_reader {
    floe__spill *s;
    uint32_t xid;
    uint64_t off;                /* in the file, of buf's first byte */
    floe__buf buf;
    size_t at;                   /* in buf */
};

int floe__spill_new(const char *dir, floe__spill **out, floe_error *err)
{
    floe__spill *s = floe__calloc(1, sizeof *s);
    if (!s)
        return FLOE_OOM(err);
    const char *d = dir ? dir : getenv("TMPDIR");
    if (!(s->dir = floe__strdup(d && *d ? d : "/tmp"))) {
        floe__free(s);
        return FLOE_OOM(err);
    }
    *out = s;
    return FLOE_OK;
}

static void txn_release(stxn *t)
{
    if (t->fd >= 0)
        close(t->fd);
    floe__buf_free(&t->wbuf);
    floe__free(t->aborted);
}

void floe__spill_clear(floe__spill *s)
{
    for (size_t i = 0; i < s->n; i++)
        txn_release(&s->txns[i]);
    s->n = 0;
    s->bytes = 0;
}

void floe__spill_free(floe__spill *s)
{
    if (!s)
        return;
    floe__spill_clear(s);
    floe__free(s->txns);
    floe__free(s->dir);
    floe__free(s);
}

static stxn *find(const floe__spill *s, uint32_t xid)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->txns[i].xid == xid)
            return &s->txns[i];
    return NULL;
}

bool floe__spill_has(const floe__spill *s, uint32_t xid) { return find(s, xid) != NULL; }
uint64_t floe__spill_bytes(const floe__spill *s) { return s->bytes; }
size_t floe__spill_count(const floe__spill *s) { return s->n; }

uint64_t floe__spill_records(const floe__spill *s, uint32_t xid)
{
    const stxn *t = find(s, xid);
    return t ? t->records : 0;
}

/* An unnamed file in the spill directory. */
static int open_file(const floe__spill *s, int *fd, floe_error *err)
{
#ifdef O_TMPFILE
    *fd = open(s->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (*fd >= 0)
        return FLOE_OK;
#endif
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/floe-txn-XXXXXX", s->dir);
    FLOE_RETURN_IF(n < 0 || (size_t)n >= sizeof path, err, FLOE_EINVAL,
                   "spill directory name too long");
    *fd = mkostemp(path, O_CLOEXEC);
    FLOE_RETURN_IF(*fd < 0, err, FLOE_EIO, "cannot make a spill file in %s: %s", s->dir,
                   strerror(errno));
    unlink(path);
    return FLOE_OK;
}

void floe__spill_drop(floe__spill *s, uint32_t xid)
{
    stxn *t = find(s, xid);
    if (!t)
        return;
    s->bytes -= t->bytes + t->wbuf.len;
    txn_release(t);
    *t = s->txns[--s->n];
}

int floe__spill_start(floe__spill *s, uint32_t xid, bool first, floe_error *err)
{
    if (!first) {
        FLOE_RETURN_IF(!find(s, xid), err, FLOE_EINPUT, "a stream segment of transaction %u "
                       "whose first segment was not received", xid);
        return FLOE_OK;
    }
    floe__spill_drop(s, xid);                   /* a first segment starts it afresh */
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        stxn *v = floe__realloc(s->txns, cap * sizeof *v);
        if (!v)
            return FLOE_OOM(err);
        s->txns = v;
        s->cap = cap;
    }
    stxn *t = &s->txns[s->n];
    memset(t, 0, sizeof *t);
    t->xid = xid;
    FLOE_FORWARD(open_file(s, &t->fd, err));
    floe__buf_init(&t->wbuf, FLUSH_AT + MAX_RECORD + RECORD_HEAD + 1);
    s->n++;
    return FLOE_OK;
}

static int flush(const floe__spill *s, stxn *t, floe_error *err)
{
    size_t done = 0;
    while (done < t->wbuf.len) {
        ssize_t w = pwrite(t->fd, t->wbuf.data + done, t->wbuf.len - done,
                           (off_t)(t->bytes + done));
        if (w < 0 && errno == EINTR)
            continue;
        FLOE_RETURN_IF(w <= 0, err, FLOE_EIO, "writing a streamed transaction to %s: %s",
                       s->dir, w < 0 ? strerror(errno) : "nothing written");
        done += (size_t)w;
    }
    t->bytes += done;
    floe__buf_reset(&t->wbuf);
    return FLOE_OK;
}

int floe__spill_add(floe__spill *s, uint32_t xid, uint32_t subxid, char kind,
                    const uint8_t *body, size_t n, floe_error *err)
{
    stxn *t = find(s, xid);
    FLOE_RETURN_IF(!t, err, FLOE_EINPUT, "a streamed change of transaction %u outside its "
                   "stream", xid);
    FLOE_RETURN_IF(n >= MAX_RECORD, err, FLOE_ELIMIT, "a streamed message of %zu bytes", n);
    uint8_t head[RECORD_HEAD + 1];
    floe__put_le32(head, (uint32_t)(n + 1));
    floe__put_le32(head + 4, subxid);
    head[8] = (uint8_t)kind;
    FLOE_FORWARD(floe__buf_append(&t->wbuf, head, sizeof head, err));
    FLOE_FORWARD(floe__buf_append(&t->wbuf, body, n, err));
    s->bytes += sizeof head + n;
    t->records++;
    return t->wbuf.len >= FLUSH_AT ? flush(s, t, err) : FLOE_OK;
}

int floe__spill_stop(floe__spill *s, uint32_t xid, floe_error *err)
{
    stxn *t = find(s, xid);
    return t && t->wbuf.len ? flush(s, t, err) : FLOE_OK;
}

static bool is_aborted(const stxn *t, uint32_t subxid)
{
    size_t lo = 0, hi = t->naborted;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->aborted[mid] == subxid)
            return true;
        if (t->aborted[mid] < subxid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

int floe__spill_abort_sub(floe__spill *s, uint32_t xid, uint32_t subxid, floe_error *err)
{
    stxn *t = find(s, xid);
    if (!t || is_aborted(t, subxid))
        return FLOE_OK;                /* a subtransaction with nothing streamed */
    if (t->naborted == t->cap_aborted) {
        size_t cap = t->cap_aborted ? t->cap_aborted * 2 : 8;
        uint32_t *v = floe__realloc(t->aborted, cap * sizeof *v);
        if (!v)
            return FLOE_OOM(err);
        t->aborted = v;
        t->cap_aborted = cap;
    }
    size_t i = t->naborted;
    while (i > 0 && t->aborted[i - 1] > subxid) {
        t->aborted[i] = t->aborted[i - 1];
        i--;
    }
    t->aborted[i] = subxid;
    t->naborted++;
    return FLOE_OK;
}

/* ---- reading -------------------------------------------------------------------------------- */

int floe__spill_read(floe__spill *s, uint32_t xid, floe__spill_reader **out, floe_error *err)
{
    stxn *t = find(s, xid);
    FLOE_RETURN_IF(!t, err, FLOE_EINPUT, "a Stream Commit of transaction %u, which was not "
                   "streamed", xid);
    FLOE_FORWARD(flush(s, t, err));
    floe__spill_reader *r = floe__calloc(1, sizeof *r);
    if (!r)
        return FLOE_OOM(err);
    r->s = s;
    r->xid = xid;
    floe__buf_init(&r->buf, MAX_RECORD + READ_CHUNK + RECORD_HEAD);
    *out = r;
    return FLOE_OK;
}

void floe__spill_rewind(floe__spill_reader *r)
{
    r->off = 0;
    r->at = 0;
    floe__buf_reset(&r->buf);
}

void floe__spill_reader_free(floe__spill_reader *r)
{
    if (!r)
        return;
    floe__buf_free(&r->buf);
    floe__free(r);
}

/* At least `want` bytes from r->at in the buffer, or *short_ when the file
 * has fewer. */
static int fill(floe__spill_reader *r, const stxn *t, size_t want, bool *short_,
                floe_error *err)
{
    *short_ = false;
    if (r->buf.len - r->at >= want)
        return FLOE_OK;
    size_t keep = r->buf.len - r->at;                 /* move what is left to the front */
    if (keep)
        memmove(r->buf.data, r->buf.data + r->at, keep);
    r->off += r->at;
    r->at = 0;
    r->buf.len = keep;
    uint64_t end = t->bytes;
    while (r->buf.len < want) {
        uint64_t pos = r->off + r->buf.len;
        if (pos >= end) {
            *short_ = true;
            return FLOE_OK;
        }
        size_t ask = want - r->buf.len > READ_CHUNK ? want - r->buf.len : READ_CHUNK;
        if (ask > end - pos)
            ask = (size_t)(end - pos);
        FLOE_FORWARD(floe__buf_reserve(&r->buf, ask, err));
        ssize_t got = pread(t->fd, r->buf.data + r->buf.len, ask, (off_t)pos);
        if (got < 0 && errno == EINTR)
            continue;
        FLOE_RETURN_IF(got <= 0, err, FLOE_EIO, "reading a streamed transaction back from %s: "
                       "%s", r->s->dir, got < 0 ? strerror(errno) : "the file is short");
        r->buf.len += (size_t)got;
    }
    return FLOE_OK;
}

int floe__spill_next(floe__spill_reader *r, const uint8_t **msg, size_t *n, uint32_t *subxid,
                     bool *aborted, bool *end, floe_error *err)
{
    const stxn *t = find(r->s, r->xid);
    FLOE_RETURN_IF(!t, err, FLOE_ESTATE, "streamed transaction %u was dropped while read",
                   r->xid);
    bool short_;
    FLOE_FORWARD(fill(r, t, RECORD_HEAD, &short_, err));
    *end = short_ && r->buf.len == r->at;
    if (*end)
        return FLOE_OK;
    FLOE_RETURN_IF(short_, err, FLOE_EFORMAT, "a spilled record is cut short");
    uint32_t len = floe__get_le32(r->buf.data + r->at);
    FLOE_RETURN_IF(len == 0 || len > MAX_RECORD, err, FLOE_EFORMAT, "a spilled record of %u "
                   "bytes", len);
    FLOE_FORWARD(fill(r, t, RECORD_HEAD + (size_t)len, &short_, err));
    FLOE_RETURN_IF(short_, err, FLOE_EFORMAT, "a spilled record is cut short");
    *subxid = floe__get_le32(r->buf.data + r->at + 4);
    *aborted = is_aborted(t, *subxid);
    *msg = r->buf.data + r->at + RECORD_HEAD;
    *n = len;
    r->at += RECORD_HEAD + (size_t)len;
    return FLOE_OK;
}
