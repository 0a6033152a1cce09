/*
 * pgoutput.c - the logical replication stream, decoded in place.
 *
 * Two layers, both from the Postgres protocol documentation:
 *  - the walsender's CopyData envelope: XLogData ('w': WAL start, WAL end,
 *    send time, then one pgoutput message) and the primary keepalive
 *    ('k': WAL end, send time, reply requested); the client's standby
 *    status update ('r') is encoded here too;
 *  - the pgoutput plugin's messages, protocol version 1: Begin, Commit,
 *    Origin, Relation, Type, Insert, Update, Delete, Truncate, and logical
 *    decoding Messages; and those of protocol version 2 for streamed
 *    (in-progress) transactions: Stream Start (xid, first-segment flag),
 *    Stream Stop, Stream Commit (xid, flags, commit LSN, end LSN, commit
 *    time), Stream Abort (xid, subtransaction xid).  Between Stream Start
 *    and Stream Stop, Relation, Type, Insert, Update, Delete, Truncate and
 *    Message carry the xid of the (sub)transaction that made them right
 *    after their kind byte: the decoder remembers whether it is inside
 *    such a block (d->in_stream) and reads it into m->xid.  Parallel
 *    apply's Stream Abort fields (protocol 4) are never asked for.
 *
 * Integers are big-endian; strings are NUL-terminated, and the decoder
 * hands out pointers into the message after checking the NUL lies inside
 * it.  Values of a TupleData are (kind, bytes) pairs; what they mean is the
 * caller's business (pg_types.c).  Every read is bounds-checked: a
 * truncated or malformed message is FLOE_EINPUT naming the message kind,
 * the field and the byte offset, never a read past its end.  Column and
 * value arrays live in the decoder and are reused; a message has at most
 * 1664 columns (Postgres's own limit), so they stay small.
 */
#include "source/pg_internal.h"

#define MAX_COLUMNS 1664             /* MaxTupleAttributeNumber */

typedef struct rd {
    const uint8_t *start, *p, *end;
    char kind;
    floe_error *err;
} rd;

static int bad(rd *r, const char *what)
{
    return floe__err_set(r->err, FLOE_EINPUT, "pgoutput message '%c': %s at byte %zu",
                         r->kind >= 0x20 && r->kind < 0x7f ? r->kind : '?', what,
                         (size_t)(r->p - r->start));
}

static int need(rd *r, size_t n, const char *what)
{
    return (size_t)(r->end - r->p) >= n ? FLOE_OK : bad(r, what);
}

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

static int u8(rd *r, uint8_t *v, const char *what)
{
    FLOE_FORWARD(need(r, 1, what));
    *v = *r->p++;
    return FLOE_OK;
}

static int u16(rd *r, uint16_t *v, const char *what)
{
    FLOE_FORWARD(need(r, 2, what));
    *v = (uint16_t)be(r->p, 2);
    r->p += 2;
    return FLOE_OK;
}

static int u32(rd *r, uint32_t *v, const char *what)
{
    FLOE_FORWARD(need(r, 4, what));
    *v = (uint32_t)be(r->p, 4);
    r->p += 4;
    return FLOE_OK;
}

static int u64(rd *r, uint64_t *v, const char *what)
{
    FLOE_FORWARD(need(r, 8, what));
    *v = be(r->p, 8);
    r->p += 8;
    return FLOE_OK;
}

static int i64(rd *r, int64_t *v, const char *what)
{
    uint64_t u;
    FLOE_FORWARD(u64(r, &u, what));
    *v = (int64_t)u;
    return FLOE_OK;
}

/* A NUL-terminated string inside the message. */
static int str(rd *r, const char **s, const char *what)
{
    const uint8_t *z = memchr(r->p, 0, (size_t)(r->end - r->p));
    if (!z)
        return bad(r, what);
    *s = (const char *)r->p;
    r->p = z + 1;
    return FLOE_OK;
}

static int done(rd *r)
{
    return r->p == r->end ? FLOE_OK : bad(r, "bytes left over");
}

/* ---- the CopyData envelope ----------------------------------------------------------- */

int floe__pg_copymsg_decode(const uint8_t *p, size_t n, floe__pg_copymsg *out, floe_error *err)
{
    memset(out, 0, sizeof *out);
    FLOE_RETURN_IF(n < 1, err, FLOE_EINPUT, "empty replication message");
    rd r = {p, p + 1, p + n, (char)p[0], err};
    out->kind = (char)p[0];
    if (out->kind == 'w') {
        FLOE_FORWARD(u64(&r, &out->wal_start, "XLogData WAL start"));
        FLOE_FORWARD(u64(&r, &out->wal_end, "XLogData WAL end"));
        FLOE_FORWARD(i64(&r, &out->send_time, "XLogData send time"));
        out->data = r.p;
        out->len = (size_t)(r.end - r.p);
        return FLOE_OK;
    }
    if (out->kind == 'k') {
        uint8_t reply;
        FLOE_FORWARD(u64(&r, &out->wal_end, "keepalive WAL end"));
        FLOE_FORWARD(i64(&r, &out->send_time, "keepalive send time"));
        FLOE_FORWARD(u8(&r, &reply, "keepalive reply flag"));
        out->reply_requested = reply != 0;
        return done(&r);
    }
    return floe__err_set(err, FLOE_EINPUT, "unknown replication message kind 0x%02x", p[0]);
}

static void put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

void floe__pg_status_encode(uint64_t write, uint64_t flush, uint64_t apply, int64_t now,
                            bool reply, uint8_t out[FLOE__PG_STATUS_LEN])
{
    out[0] = 'r';
    put_be64(out + 1, write);
    put_be64(out + 9, flush);
    put_be64(out + 17, apply);
    put_be64(out + 25, (uint64_t)now);
    out[33] = reply ? 1 : 0;
}

/* ---- pgoutput messages ------------------------------------------------------------------- */

void floe__pgo_decoder_init(floe__pgo_decoder *d) { memset(d, 0, sizeof *d); }

void floe__pgo_decoder_free(floe__pgo_decoder *d)
{
    floe__free(d->vals);
    floe__free(d->cols);
    memset(d, 0, sizeof *d);
}

static int room(void **arr, size_t *cap, size_t want, size_t size, floe_error *err)
{
    if (*cap >= want)
        return FLOE_OK;
    void *a = floe__realloc(*arr, want * size);
    if (!a)
        return FLOE_OOM(err);
    *arr = a;
    *cap = want;
    return FLOE_OK;
}

/* A TupleData into vals[0..n). */
static int tuple(rd *r, floe__pgo_value *vals, size_t cap, floe__pgo_tuple *t)
{
    FLOE_FORWARD(u16(r, &t->n, "tuple column count"));
    if (t->n > cap)
        return bad(r, "tuple with more columns than a table can have");
    for (uint16_t i = 0; i < t->n; i++) {
        floe__pgo_value *v = &vals[i];
        uint8_t k;
        FLOE_FORWARD(u8(r, &k, "tuple column kind"));
        v->kind = (char)k;
        v->data = NULL;
        v->len = 0;
        if (k == 'n' || k == 'u')
            continue;
        if (k != 't' && k != 'b')
            return bad(r, "unknown tuple column kind");
        FLOE_FORWARD(u32(r, &v->len, "tuple value length"));
        FLOE_FORWARD(need(r, v->len, "tuple value"));
        v->data = (const char *)r->p;
        r->p += v->len;
    }
    t->vals = vals;
    return FLOE_OK;
}

static int relation(rd *r, floe__pgo_decoder *d, floe__pgo_msg *m)
{
    FLOE_FORWARD(u32(r, &m->relid, "relation id"));
    FLOE_FORWARD(str(r, &m->nspname, "namespace"));
    FLOE_FORWARD(str(r, &m->relname, "relation name"));
    FLOE_FORWARD(u8(r, &m->replident, "replica identity"));
    FLOE_FORWARD(u16(r, &m->ncols, "column count"));
    if (m->ncols > MAX_COLUMNS)
        return bad(r, "more columns than a table can have");
    FLOE_FORWARD(room((void **)&d->cols, &d->cap_cols, m->ncols ? m->ncols : 1,
                      sizeof *d->cols, r->err));
    for (uint16_t i = 0; i < m->ncols; i++) {
        floe__pgo_column *c = &d->cols[i];
        uint8_t flags;
        uint32_t typmod;
        FLOE_FORWARD(u8(r, &flags, "column flags"));
        FLOE_FORWARD(str(r, &c->name, "column name"));
        FLOE_FORWARD(u32(r, &c->type, "column type"));
        FLOE_FORWARD(u32(r, &typmod, "column type modifier"));
        c->key = flags & 1;
        c->typmod = (int32_t)typmod;
    }
    m->cols = d->cols;
    return done(r);
}

/* Insert, Update, Delete: relation id, then tuples tagged K, O, N. */
static int change(rd *r, floe__pgo_decoder *d, floe__pgo_msg *m)
{
    FLOE_FORWARD(room((void **)&d->vals, &d->cap_vals, 2 * MAX_COLUMNS, sizeof *d->vals,
                      r->err));
    FLOE_FORWARD(u32(r, &m->relid, "relation id"));
    uint8_t tag;
    FLOE_FORWARD(u8(r, &tag, "tuple tag"));
    if (m->kind != 'I' && (tag == 'K' || tag == 'O')) {
        m->old_kind = (char)tag;
        FLOE_FORWARD(tuple(r, d->vals, MAX_COLUMNS, &m->old_tuple));
        if (m->kind == 'D')
            return done(r);
        FLOE_FORWARD(u8(r, &tag, "tuple tag"));
    }
    if (m->kind == 'D')
        return bad(r, "a delete without a key or old tuple");
    if (tag != 'N')
        return bad(r, "expected a new tuple ('N')");
    FLOE_FORWARD(tuple(r, d->vals + MAX_COLUMNS, MAX_COLUMNS, &m->new_tuple));
    return done(r);
}

static int truncate_msg(rd *r, floe__pgo_msg *m)
{
    FLOE_FORWARD(u32(r, &m->nrels, "relation count"));
    FLOE_FORWARD(u8(r, &m->flags, "truncate options"));
    if (m->nrels > (size_t)(r->end - r->p) / 4)
        return bad(r, "relation ids");
    m->relids = r->p;
    r->p += (size_t)m->nrels * 4;
    return done(r);
}

static int logical_message(rd *r, floe__pgo_msg *m)
{
    FLOE_FORWARD(u8(r, &m->flags, "message flags"));
    FLOE_FORWARD(u64(r, &m->lsn, "message LSN"));
    FLOE_FORWARD(str(r, &m->relname, "message prefix"));
    FLOE_FORWARD(u32(r, &m->content_len, "message length"));
    FLOE_FORWARD(need(r, m->content_len, "message content"));
    m->content = r->p;
    r->p += m->content_len;
    return done(r);
}

/* Stream Start, Stop, Commit, Abort (protocol 2). */
static int stream_control(rd *r, floe__pgo_decoder *d, floe__pgo_msg *m)
{
    uint8_t first;
    switch (m->kind) {
    case 'S':
        if (d->in_stream)
            return bad(r, "a Stream Start inside a stream block");
        FLOE_FORWARD(u32(r, &m->xid, "transaction id"));
        FLOE_FORWARD(u8(r, &first, "first segment flag"));
        m->flags = first;
        FLOE_FORWARD(done(r));
        d->in_stream = true;
        return FLOE_OK;
    case 'E':
        if (!d->in_stream)
            return bad(r, "a Stream Stop outside a stream block");
        FLOE_FORWARD(done(r));
        d->in_stream = false;
        return FLOE_OK;
    case 'c':
        FLOE_FORWARD(u32(r, &m->xid, "transaction id"));
        FLOE_FORWARD(u8(r, &m->flags, "commit flags"));
        FLOE_FORWARD(u64(r, &m->lsn, "commit LSN"));
        FLOE_FORWARD(u64(r, &m->end_lsn, "end LSN"));
        FLOE_FORWARD(i64(r, &m->time, "commit time"));
        return done(r);
    default:                                     /* 'A' */
        FLOE_FORWARD(u32(r, &m->xid, "transaction id"));
        FLOE_FORWARD(u32(r, &m->subxid, "subtransaction id"));
        return done(r);
    }
}

static int body(rd *r, floe__pgo_decoder *d, floe__pgo_msg *m)
{
    if (m->kind == 'S' || m->kind == 'E' || m->kind == 'c' || m->kind == 'A')
        return stream_control(r, d, m);
    if (d->in_stream && memchr("RYIUDTM", m->kind, 7)) {
        FLOE_FORWARD(u32(r, &m->xid, "transaction id"));
        m->streamed = true;
    }
    switch (m->kind) {
    case 'B':
        FLOE_FORWARD(u64(r, &m->lsn, "final LSN"));
        FLOE_FORWARD(i64(r, &m->time, "commit time"));
        FLOE_FORWARD(u32(r, &m->xid, "transaction id"));
        return done(r);
    case 'C':
        FLOE_FORWARD(u8(r, &m->flags, "commit flags"));
        FLOE_FORWARD(u64(r, &m->lsn, "commit LSN"));
        FLOE_FORWARD(u64(r, &m->end_lsn, "end LSN"));
        FLOE_FORWARD(i64(r, &m->time, "commit time"));
        return done(r);
    case 'O':
        FLOE_FORWARD(u64(r, &m->lsn, "origin LSN"));
        FLOE_FORWARD(str(r, &m->relname, "origin name"));
        return done(r);
    case 'R':
        return relation(r, d, m);
    case 'Y':
        FLOE_FORWARD(u32(r, &m->relid, "type id"));
        FLOE_FORWARD(str(r, &m->nspname, "type namespace"));
        FLOE_FORWARD(str(r, &m->relname, "type name"));
        return done(r);
    case 'I': case 'U': case 'D':
        return change(r, d, m);
    case 'T':
        return truncate_msg(r, m);
    case 'M':
        return logical_message(r, m);
    default:
        return bad(r, "unknown message kind");
    }
}

int floe__pgo_decode(floe__pgo_decoder *d, const uint8_t *p, size_t n, floe__pgo_msg *out,
                     floe_error *err)
{
    memset(out, 0, sizeof *out);
    FLOE_RETURN_IF(n < 1, err, FLOE_EINPUT, "empty pgoutput message");
    rd r = {p, p + 1, p + n, (char)p[0], err};
    out->kind = (char)p[0];
    return body(&r, d, out);
}

uint32_t floe__pgo_relid(const floe__pgo_msg *m, uint32_t i)
{
    return (uint32_t)be(m->relids + (size_t)i * 4, 4);
}
