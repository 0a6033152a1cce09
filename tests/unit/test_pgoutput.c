/*
 * test_pgoutput.c - the Postgres source's pure parts (src/source/pg_*.c):
 * LSN text, the replication CopyData envelope and the standby status
 * update, every pgoutput message kind (and truncated or malformed ones),
 * protocol 2's stream blocks (Stream Start/Stop/Commit/Abort, and the xid
 * that messages inside a block carry), and COPY text lines.  Messages are built byte by byte here as the
 * protocol documentation lays them out.
 */
#include <stdio.h>

#include "source/pg_internal.h"
#include "unit.h"

/* ---- a message builder ----------------------------------------------------------------- */

typedef struct msg {
    uint8_t b[4096];
    size_t n;
} msg;

static void u8(msg *m, uint8_t v) { m->b[m->n++] = v; }
static void be(msg *m, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--)
        m->b[m->n++] = (uint8_t)(v >> (8 * i));
}
static void str(msg *m, const char *s)
{
    size_t n = strlen(s) + 1;
    memcpy(m->b + m->n, s, n);
    m->n += n;
}
static void text(msg *m, const char *s)
{
    u8(m, 't');
    be(m, strlen(s), 4);
    memcpy(m->b + m->n, s, strlen(s));
    m->n += strlen(s);
}

static int decode(floe__pgo_decoder *d, const msg *m, floe__pgo_msg *out)
{
    return floe__pgo_decode(d, m->b, m->n, out, NULL);
}

/* Every proper prefix of a valid message is refused with FLOE_EINPUT. */
static void check_truncations(floe__pgo_decoder *d, const msg *m)
{
    for (size_t n = 0; n < m->n; n++) {
        floe__pgo_msg out;
        uint8_t *copy = malloc(n ? n : 1);
        memcpy(copy, m->b, n);
        floe_error *e = floe_error_new();
        int rc = floe__pgo_decode(d, copy, n, &out, e);
        if (rc != FLOE_EINPUT || !*floe_error_message(e))
            fprintf(stderr, "prefix %zu of '%c': rc %d\n", n, m->b[0], rc);
        CHECK_EQ_INT(rc, FLOE_EINPUT);
        floe_error_free(e);
        free(copy);
    }
}

TEST(lsn_text)
{
    char buf[32];
    floe__lsn_format(0x16B374D848ull, buf, sizeof buf);
    CHECK_EQ_STR(buf, "16/B374D848");
    floe__lsn_format(0, buf, sizeof buf);
    CHECK_EQ_STR(buf, "0/0");
    uint64_t v = 0;
    CHECK_EQ_INT(floe__lsn_parse("16/B374D848", &v), 0);
    CHECK(v == 0x16B374D848ull);
    CHECK_EQ_INT(floe__lsn_parse("FFFFFFFF/ffffffff", &v), 0);
    CHECK(v == UINT64_MAX);
    const char *bad[] = {"", "/", "1/", "/1", "1/2/3", "x/1", "123456789/1", "1 /2", NULL};
    for (int i = 0; bad[i]; i++)
        CHECK_EQ_INT(floe__lsn_parse(bad[i], &v), -1);
    CHECK_EQ_INT(floe__lsn_parse(NULL, &v), -1);
}

TEST(copydata_envelope_and_status)
{
    msg m = {{0}, 0};
    u8(&m, 'w');
    be(&m, 0x100, 8);
    be(&m, 0x200, 8);
    be(&m, 12345, 8);
    str(&m, "B");                           /* payload bytes, whatever they are */
    floe__pg_copymsg c;
    CHECK_EQ_INT(floe__pg_copymsg_decode(m.b, m.n, &c, NULL), FLOE_OK);
    CHECK(c.kind == 'w' && c.wal_start == 0x100 && c.wal_end == 0x200 && c.send_time == 12345);
    CHECK(c.len == 2 && c.data == m.b + 25);
    msg k = {{0}, 0};
    u8(&k, 'k');
    be(&k, 0xABCDEF, 8);
    be(&k, 7, 8);
    u8(&k, 1);
    CHECK_EQ_INT(floe__pg_copymsg_decode(k.b, k.n, &c, NULL), FLOE_OK);
    CHECK(c.kind == 'k' && c.wal_end == 0xABCDEF && c.reply_requested);
    CHECK_EQ_INT(floe__pg_copymsg_decode(k.b, k.n - 1, &c, NULL), FLOE_EINPUT);
    CHECK_EQ_INT(floe__pg_copymsg_decode(m.b, 24, &c, NULL), FLOE_EINPUT);
    k.b[0] = 'z';
    CHECK_EQ_INT(floe__pg_copymsg_decode(k.b, k.n, &c, NULL), FLOE_EINPUT);
    uint8_t st[FLOE__PG_STATUS_LEN];
    floe__pg_status_encode(0x0102030405060708ull, 2, 3, -1, true, st);
    CHECK(st[0] == 'r' && st[1] == 1 && st[8] == 8 && st[16] == 2 && st[24] == 3);
    CHECK(st[25] == 0xff && st[32] == 0xff && st[33] == 1);
}

TEST(begin_commit_origin_type_message)
{
    floe__pgo_decoder d;
    floe__pgo_decoder_init(&d);
    floe__pgo_msg out;
    msg b = {{0}, 0};
    u8(&b, 'B');
    be(&b, 0x1000, 8);
    be(&b, 777, 8);
    be(&b, 42, 4);
    CHECK_EQ_INT(decode(&d, &b, &out), FLOE_OK);
    CHECK(out.kind == 'B' && out.lsn == 0x1000 && out.time == 777 && out.xid == 42);
    check_truncations(&d, &b);
    msg c = {{0}, 0};
    u8(&c, 'C');
    u8(&c, 0);
    be(&c, 0x1000, 8);
    be(&c, 0x1040, 8);
    be(&c, 778, 8);
    CHECK_EQ_INT(decode(&d, &c, &out), FLOE_OK);
    CHECK(out.kind == 'C' && out.lsn == 0x1000 && out.end_lsn == 0x1040 && out.time == 778);
    check_truncations(&d, &c);
    u8(&c, 0);                                                  /* a byte too many */
    CHECK_EQ_INT(decode(&d, &c, &out), FLOE_EINPUT);
    msg o = {{0}, 0};
    u8(&o, 'O');
    be(&o, 5, 8);
    str(&o, "origin1");
    CHECK_EQ_INT(decode(&d, &o, &out), FLOE_OK);
    CHECK_EQ_STR(out.relname, "origin1");
    check_truncations(&d, &o);
    msg y = {{0}, 0};
    u8(&y, 'Y');
    be(&y, 16400, 4);
    str(&y, "public");
    str(&y, "mood");
    CHECK_EQ_INT(decode(&d, &y, &out), FLOE_OK);
    CHECK(out.relid == 16400 && strcmp(out.nspname, "public") == 0);
    msg mm = {{0}, 0};
    u8(&mm, 'M');
    u8(&mm, 1);
    be(&mm, 9, 8);
    str(&mm, "prefix");
    be(&mm, 3, 4);
    memcpy(mm.b + mm.n, "abc", 3);
    mm.n += 3;
    CHECK_EQ_INT(decode(&d, &mm, &out), FLOE_OK);
    CHECK(out.content_len == 3 && memcmp(out.content, "abc", 3) == 0);
    check_truncations(&d, &mm);
    floe__pgo_decoder_free(&d);
}

static void relation_msg(msg *r)
{
    u8(r, 'R');
    be(r, 16385, 4);
    str(r, "public");
    str(r, "items");
    u8(r, 'd');
    be(r, 3, 2);
    u8(r, 1);
    str(r, "id");
    be(r, 20, 4);
    be(r, 0xffffffffu, 4);                    /* typmod -1 */
    u8(r, 0);
    str(r, "name");
    be(r, 25, 4);
    be(r, 0xffffffffu, 4);
    u8(r, 0);
    str(r, "price");
    be(r, 1700, 4);
    be(r, (10 << 16 | 2) + 4, 4);
}

TEST(relation)
{
    floe__pgo_decoder d;
    floe__pgo_decoder_init(&d);
    floe__pgo_msg out;
    msg r = {{0}, 0};
    relation_msg(&r);
    CHECK_EQ_INT(decode(&d, &r, &out), FLOE_OK);
    CHECK(out.relid == 16385 && out.replident == 'd' && out.ncols == 3);
    CHECK(strcmp(out.nspname, "public") == 0 && strcmp(out.relname, "items") == 0);
    CHECK(out.cols[0].key && !out.cols[1].key && out.cols[0].type == 20);
    CHECK(out.cols[0].typmod == -1 && out.cols[2].typmod == (10 << 16 | 2) + 4);
    CHECK_EQ_STR(out.cols[2].name, "price");
    check_truncations(&d, &r);
    r.b[r.n - 9] = 'x';                         /* "price" loses its NUL: runs into the type */
    floe__pgo_decoder_free(&d);
}

TEST(insert_update_delete_truncate)
{
    floe__pgo_decoder d;
    floe__pgo_decoder_init(&d);
    floe__pgo_msg out;
    msg i = {{0}, 0};
    u8(&i, 'I');
    be(&i, 16385, 4);
    u8(&i, 'N');
    be(&i, 3, 2);
    text(&i, "1");
    u8(&i, 'n');
    text(&i, "9.50");
    CHECK_EQ_INT(decode(&d, &i, &out), FLOE_OK);
    CHECK(out.kind == 'I' && out.relid == 16385 && out.new_tuple.n == 3 && !out.old_kind);
    CHECK(out.new_tuple.vals[0].kind == 't' && out.new_tuple.vals[0].len == 1);
    CHECK(out.new_tuple.vals[1].kind == 'n' && out.new_tuple.vals[2].len == 4);
    CHECK(memcmp(out.new_tuple.vals[2].data, "9.50", 4) == 0);
    check_truncations(&d, &i);
    msg u = {{0}, 0};                          /* update with an old row, TOAST unchanged */
    u8(&u, 'U');
    be(&u, 16385, 4);
    u8(&u, 'O');
    be(&u, 2, 2);
    text(&u, "1");
    text(&u, "long");
    u8(&u, 'N');
    be(&u, 2, 2);
    text(&u, "2");
    u8(&u, 'u');
    CHECK_EQ_INT(decode(&d, &u, &out), FLOE_OK);
    CHECK(out.old_kind == 'O' && out.old_tuple.n == 2 && out.new_tuple.n == 2);
    CHECK(out.new_tuple.vals[1].kind == 'u' && out.old_tuple.vals[1].len == 4);
    CHECK(memcmp(out.old_tuple.vals[0].data, "1", 1) == 0 && out.new_tuple.vals[0].data[0] == '2');
    check_truncations(&d, &u);
    msg u2 = {{0}, 0};                         /* update without an old tuple */
    u8(&u2, 'U');
    be(&u2, 1, 4);
    u8(&u2, 'N');
    be(&u2, 1, 2);
    text(&u2, "x");
    CHECK_EQ_INT(decode(&d, &u2, &out), FLOE_OK);
    CHECK(!out.old_kind && out.new_tuple.n == 1);
    msg del = {{0}, 0};
    u8(&del, 'D');
    be(&del, 1, 4);
    u8(&del, 'K');
    be(&del, 2, 2);
    text(&del, "7");
    u8(&del, 'n');
    CHECK_EQ_INT(decode(&d, &del, &out), FLOE_OK);
    CHECK(out.old_kind == 'K' && out.old_tuple.n == 2);
    check_truncations(&d, &del);
    msg badkind = del;
    badkind.b[5] = 'N';                        /* a delete must name its old row */
    CHECK_EQ_INT(decode(&d, &badkind, &out), FLOE_EINPUT);
    msg t = {{0}, 0};
    u8(&t, 'T');
    be(&t, 2, 4);
    u8(&t, 1);
    be(&t, 100, 4);
    be(&t, 200, 4);
    CHECK_EQ_INT(decode(&d, &t, &out), FLOE_OK);
    CHECK(out.nrels == 2 && floe__pgo_relid(&out, 0) == 100 && floe__pgo_relid(&out, 1) == 200);
    check_truncations(&d, &t);
    msg huge = {{0}, 0};                       /* more relations than bytes */
    u8(&huge, 'T');
    be(&huge, 0x40000000u, 4);
    u8(&huge, 0);
    CHECK_EQ_INT(decode(&d, &huge, &out), FLOE_EINPUT);
    msg wide = {{0}, 0};                       /* more columns than a table has */
    u8(&wide, 'I');
    be(&wide, 1, 4);
    u8(&wide, 'N');
    be(&wide, 5000, 2);
    CHECK_EQ_INT(decode(&d, &wide, &out), FLOE_EINPUT);
    msg kind = {{0}, 0};
    u8(&kind, 'S');                            /* streamed transactions are not asked for */
    be(&kind, 1, 4);
    CHECK_EQ_INT(decode(&d, &kind, &out), FLOE_EINPUT);
    floe__pgo_decoder_free(&d);
}

/* ---- COPY text ---------------------------------------------------------------------------- */

TEST(stream_blocks)
{
    floe__pgo_decoder d;
    floe__pgo_decoder_init(&d);
    floe__pgo_msg out;
    msg start = {{0}, 0}, ins = {{0}, 0}, stop = {{0}, 0}, commit = {{0}, 0}, abort_ = {{0}, 0};
    u8(&start, 'S');
    be(&start, 77, 4);
    u8(&start, 1);
    u8(&ins, 'I');
    be(&ins, 78, 4);                            /* the subtransaction's xid */
    be(&ins, 16384, 4);
    u8(&ins, 'N');
    be(&ins, 1, 2);
    text(&ins, "5");
    u8(&stop, 'E');
    CHECK_EQ_INT(decode(&d, &stop, &out), FLOE_EINPUT);        /* no block open */
    CHECK_EQ_INT(decode(&d, &start, &out), FLOE_OK);
    CHECK(out.kind == 'S' && out.xid == 77 && out.flags == 1 && d.in_stream);
    CHECK_EQ_INT(decode(&d, &start, &out), FLOE_EINPUT);       /* nested */
    CHECK_EQ_INT(decode(&d, &ins, &out), FLOE_OK);
    CHECK(out.kind == 'I' && out.streamed && out.xid == 78 && out.relid == 16384);
    CHECK(out.new_tuple.n == 1 && out.new_tuple.vals[0].len == 1);
    CHECK_EQ_INT(decode(&d, &stop, &out), FLOE_OK);
    CHECK(out.kind == 'E' && !d.in_stream);
    /* outside a block the same bytes read the xid as the relation id */
    CHECK_EQ_INT(decode(&d, &ins, &out), FLOE_EINPUT);
    u8(&commit, 'c');
    be(&commit, 77, 4);
    u8(&commit, 0);
    be(&commit, 0x1000, 8);
    be(&commit, 0x1050, 8);
    be(&commit, 123456, 8);
    CHECK_EQ_INT(decode(&d, &commit, &out), FLOE_OK);
    CHECK(out.kind == 'c' && out.xid == 77 && out.lsn == 0x1000 && out.end_lsn == 0x1050 &&
          out.time == 123456 && !out.streamed);
    check_truncations(&d, &commit);
    u8(&abort_, 'A');
    be(&abort_, 77, 4);
    be(&abort_, 78, 4);
    CHECK_EQ_INT(decode(&d, &abort_, &out), FLOE_OK);
    CHECK(out.kind == 'A' && out.xid == 77 && out.subxid == 78);
    check_truncations(&d, &abort_);
    check_truncations(&d, &start);
    CHECK(!d.in_stream);
    floe__pgo_decoder_free(&d);
}

static int split(const char *line, size_t ncols, floe__pg_field *f, floe__buf *scratch)
{
    return floe__pg_copy_split(line, strlen(line), ncols, scratch, f, NULL);
}

TEST(copy_lines)
{
    floe__buf scratch;
    floe__buf_init(&scratch, 1 << 20);
    floe__pg_field f[8];
    CHECK_EQ_INT(split("1\tabc\t\\N", 3, f, &scratch), FLOE_OK);
    CHECK(f[0].len == 1 && f[0].s[0] == '1' && !f[0].null);
    CHECK(f[1].len == 3 && memcmp(f[1].s, "abc", 3) == 0);
    CHECK(f[2].null);
    CHECK_EQ_INT(split("a\\tb\\nc\\\\d\\N\t\\101\\x41\\x4g\\q", 2, f, &scratch), FLOE_OK);
    CHECK(f[0].len == 8 && memcmp(f[0].s, "a\tb\nc\\dN", 8) == 0);
    CHECK(!f[0].null);
    CHECK(f[1].len == 5 && memcmp(f[1].s, "AA\x04gq", 5) == 0);
    CHECK_EQ_INT(split("", 1, f, &scratch), FLOE_OK);
    CHECK(f[0].len == 0 && !f[0].null);
    CHECK_EQ_INT(split("\t", 2, f, &scratch), FLOE_OK);
    CHECK(f[0].len == 0 && f[1].len == 0);
    CHECK_EQ_INT(split("1\t2", 3, f, &scratch), FLOE_EINPUT);
    CHECK_EQ_INT(split("1\t2\t3", 2, f, &scratch), FLOE_EINPUT);
    CHECK_EQ_INT(split("\\b\\f\\r\\v\\", 1, f, &scratch), FLOE_OK);
    CHECK(f[0].len == 5 && memcmp(f[0].s, "\b\f\r\v\\", 5) == 0);
    floe__buf_free(&scratch);
}

int main(void)
{
    RUN(lsn_text);
    RUN(copydata_envelope_and_status);
    RUN(begin_commit_origin_type_message);
    RUN(relation);
    RUN(insert_update_delete_truncate);
    RUN(stream_blocks);
    RUN(copy_lines);
    return UNIT_DONE();
}
