"""floe pg against a real PostgreSQL (tests/pgserver.py): tables mirrored
into Iceberg through logical replication, read back by DuckDB, pyiceberg
and Java and compared with what psycopg reads from the source.

Covers: inserts, updates, deletes, multi-statement transactions, rolled
back transactions, a row updated many times in one transaction and across
transactions, key changes, tables with REPLICA IDENTITY FULL and DEFAULT,
every mapped type, reruns that resume, a copy cut short by a crash, and the
clear errors of docs/postgres.md (no key, TOAST without FULL, a
slot that is gone, wal_level, privileges, the publication).  ALTER TABLE is
tests/test_pg_ddl.py's, TRUNCATE tests/test_pg_truncate.py's.
"""
import json
import signal
import subprocess
import time

import psycopg
import pytest

from conftest import run_floe

from pgserver import (SCALE, Mirror, committed_past, iceberg_rows, lsn_int, pg_rows, pgdb,  # noqa: F401
                      snapshots, wait_until,
                      frontier_of)
from rowgen import Col

ITEMS = [Col("id", "bigint", True), Col("name", "text"), Col("price", "numeric", p=10, s=2),
         Col("tags", "list", elem=Col("e", "text"))]
COUNTS = [Col("id", "integer", True), Col("n", "bigint"), Col("at", "timestamptz"),
          Col("ok", "boolean")]


def setup_tables(db):
    db.sql("""
        CREATE TABLE items (id bigint PRIMARY KEY, name text, price numeric(10,2), tags text[]);
        ALTER TABLE items REPLICA IDENTITY FULL;
        CREATE TABLE counts (id integer PRIMARY KEY, n bigint, at timestamptz, ok boolean);
        INSERT INTO items SELECT g, 'item ' || g, g * 1.25, ARRAY['a' || g, NULL]
          FROM generate_series(1, 500) g;
        INSERT INTO counts SELECT g, g * 10, '2024-01-01'::timestamptz + g * interval '1 min',
          g % 2 = 0 FROM generate_series(1, 300) g;
    """)


def check_equal(db, m, readers_=("duckdb", "pyiceberg")):
    for table, cols in (("items", ITEMS), ("counts", COUNTS)):
        want = pg_rows(db, table, cols)
        got = iceberg_rows(m, f"public.{table}", cols, readers_=readers_)
        for reader, rows in got.items():
            assert rows == want, (table, reader)


def changes(db):
    with db.conn() as c:
        with c.transaction():                                      # many statements
            c.execute("UPDATE items SET price = price + 1 WHERE id <= 50")
            c.execute("DELETE FROM items WHERE id > 480")
            c.execute("INSERT INTO items VALUES (1000, 'new', 9.99, '{x,y}')")
            c.execute("UPDATE counts SET n = -1 WHERE id = 1")
            c.execute("DELETE FROM counts WHERE id BETWEEN 290 AND 300")
        with c.transaction():                                      # one row, many times
            for i in range(20):
                c.execute("UPDATE items SET name = %s WHERE id = 7", (f"seven {i}",))
                c.execute("UPDATE counts SET n = %s WHERE id = 2", (i,))
            c.execute("INSERT INTO counts VALUES (5000, 1, now(), true)")
            c.execute("UPDATE counts SET n = 2 WHERE id = 5000")
            c.execute("DELETE FROM counts WHERE id = 5000")        # in and out again
            c.execute("DELETE FROM counts WHERE id = 3")
            c.execute("INSERT INTO counts VALUES (3, 33, now(), false)")   # out and in again
            c.execute("UPDATE counts SET id = 7000 WHERE id = 4")  # a key change
            c.execute("UPDATE items SET id = 7000 WHERE id = 8")
        try:
            with c.transaction():                                  # never visible
                c.execute("INSERT INTO items VALUES (666, 'rolled back', 1, NULL)")
                c.execute("DELETE FROM counts")
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
        for i in range(5):                                         # across transactions
            c.execute("UPDATE items SET price = %s WHERE id = 9", (i,))
            c.execute("UPDATE counts SET ok = NOT ok WHERE id = 9")


def test_changes_are_mirrored_exactly(pgdb, tmp_path):
    setup_tables(pgdb)
    m = Mirror(pgdb, tmp_path, ["public.items", "public.counts"], "--create-publication")
    r = m.catch_up()
    assert "copied public.items: 500 rows" in r.stderr
    check_equal(pgdb, m)
    changes(pgdb)
    lsn = pgdb.lsn()
    m.catch_up()
    check_equal(pgdb, m, ("duckdb", "pyiceberg", "java"))
    for ident in ("public.items", "public.counts"):
        snaps = snapshots(m, ident)
        assert snaps[-1][1]["floe.pg.slot"] == pgdb.slot
        assert snaps[-1][1]["floe.sink-id"] == f"pg:{pgdb.slot}:{ident}"
        assert frontier_of(snaps[-1][1]) >= lsn_int(lsn)
        assert lsn_int(pgdb.slot_lsn()) <= frontier_of(snaps[-1][1])
    assert "rolled back" not in json.dumps(pg_rows(pgdb, "items", ITEMS))
    # A rerun with no new changes writes no file (it may record progress).
    before = [len(snapshots(m, t)) for t in ("public.items", "public.counts")]
    m.catch_up()
    check_equal(pgdb, m)
    for t, n in zip(("public.items", "public.counts"), before):
        for _, summary in snapshots(m, t)[n:]:
            assert "added-data-files" not in summary and "added-delete-files" not in summary


# ---- every mapped type --------------------------------------------------------------------------

TYPES_DDL = """
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN posint AS integer CHECK (VALUE > 0);
CREATE DOMAIN amount AS numeric(12,2);
CREATE TABLE types (
  id bigint PRIMARY KEY, b boolean, i2 smallint, i4 integer, i8 bigint, o oid,
  f4 real, f8 double precision, n numeric(12,3), nbig numeric(38,0), nneg numeric(5,-2),
  nfree numeric, t text, vc varchar(20), ch char(5), nm name, j json, jb jsonb,
  iv interval, u uuid, by bytea, d date, tm time, ts timestamp, tstz timestamptz,
  ai integer[], atx text[], an numeric(6,2)[], ajb jsonb[],
  r4 int4range, r8 int8range, rd daterange, rts tsrange, rtstz tstzrange,
  e mood, dom posint, dm amount, ip inet);
ALTER TABLE types REPLICA IDENTITY FULL;
ALTER TABLE types ALTER COLUMN t SET STORAGE EXTERNAL;    -- long values out of line, as is
"""

TYPES = [
    Col("id", "bigint", True), Col("b", "boolean"), Col("i2", "smallint"), Col("i4", "integer"),
    Col("i8", "bigint"), Col("o", "uint4"), Col("f4", "real"), Col("f8", "double precision"),
    Col("n", "numeric", p=12, s=3), Col("nbig", "numeric", p=38, s=0),
    Col("nneg", "numeric", p=7, s=0), Col("nfree", "text"), Col("t", "text"), Col("vc", "text"),
    Col("ch", "text"), Col("nm", "text"), Col("j", "jsonb"), Col("jb", "jsonb"),
    Col("iv", "interval"), Col("u", "uuid"), Col("by", "bytea"), Col("d", "date"),
    Col("tm", "time"), Col("ts", "timestamp"), Col("tstz", "timestamptz"),
    Col("ai", "list", elem=Col("e", "integer")), Col("atx", "list", elem=Col("e", "text")),
    Col("an", "list", elem=Col("e", "numeric", p=6, s=2)),
    Col("ajb", "list", elem=Col("e", "jsonb")),
    Col("r4", "int4range"), Col("r8", "int8range"), Col("rd", "daterange"),
    Col("rts", "tsrange"), Col("rtstz", "tstzrange"), Col("e", "text"), Col("dom", "integer"),
    Col("dm", "numeric", p=12, s=2), Col("ip", "text"),
]

BIG = "".join(chr(0x41 + (i * 7919) % 26) + chr(0x3b1 + i % 20) for i in range(60000))  # TOASTed

VALUES = [
    # id, b, i2, i4, i8, o, f4, f8, n, nbig, nneg, nfree, t, vc, ch, nm, j, jb, iv, u, by,
    # d, tm, ts, tstz, ai, atx, an, ajb, r4, r8, rd, rts, rtstz, e, dom, dm, ip
    (1, True, -32768, -2147483648, -9223372036854775808, 0, 1.5, -0.0, "-123456789.125",
     "99999999999999999999999999999999999999", "9999900", "1e-40", "plain", "vc", "ab",
     "name", '{"b": 1, "a": [1, 2, {"x": null}]}', '{"k": "välue", "n": 1.50}',
     "1 year 2 mons 3 days 04:05:06.789", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
     b"\x00\x01\xff\\x", "0001-01-01", "23:59:59.999999", "2024-02-29 12:34:56.123456",
     "1999-12-31 23:59:59.5+05:30", [1, None, -3], ["a,b", 'q"uote', "back\\slash", None, "",
                                                   "NULL", " sp "],
     ["1.25", None], ['{"a": 1}', "[]"], "[1,5)", "(,100]", "empty",
     "[2020-01-01 00:00:00,2020-01-02 00:00:00)", "(2020-01-01 00:00:00+00,)", "happy", 7,
     "12.34", "192.168.0.1"),
    (2, False, 32767, 2147483647, 9223372036854775807, 4294967295, float("nan"), float("inf"),
     "0.001", "-1", "-100", "NaN", "tab\there\nnewline\\ and \"quotes\" \u0001", "日本語", "ü",
     "n", "[]", "null", "P-1D", None, b"", "9999-12-31", "00:00:00", "0001-01-01 00:00:00",
     "9999-12-31 23:59:59.999999+00", [], [], [], [], "empty", "[-5,-5]", "[2000-01-01,)",
     "empty", "empty", "sad", 1, "-0.01", "::1"),
    (3,) + (None,) * 37,
    (4, True, 0, 0, 0, 1, float("-inf"), 1e-308, "0", "0", "0", "12345678901234567890.123456789",
     BIG, "x", "", "", '"s"', "1.5e3", "P0D", "00000000-0000-0000-0000-000000000000",
     bytes(range(256)), "1970-01-01", "12:00:00", "1970-01-01 00:00:00",
     "1970-01-01 00:00:00+00", [0], ["x" * 3000], ["-9999.99"], ['{"deep": {"deeper": [1]}}'],
     "[-2147483648,2147483647)", "[0,1)", "[1970-01-01,1970-01-02)",
     "(,)", "[1970-01-01 00:00:00+00,1970-01-01 00:00:00.000001+00]", "ok", 2147483647,
     "9999999999.99", "10.0.0.0/8"),
]


def insert_types(db, rows):
    cols = ", ".join(f'"{c.name}"' for c in TYPES)
    marks = ", ".join(["%s"] * len(TYPES))
    with db.conn() as c:
        for row in rows:
            c.execute(f"INSERT INTO types ({cols}) VALUES ({marks})", row)


def test_every_mapped_type_reads_back_equal(pgdb, tmp_path):
    pgdb.sql(TYPES_DDL)
    insert_types(pgdb, VALUES[:2])                                 # through the copy
    m = Mirror(pgdb, tmp_path, ["public.types"], "--create-publication")
    m.catch_up()
    insert_types(pgdb, [(i + 10,) + v[1:] for i, v in enumerate(VALUES)])   # the stream
    insert_types(pgdb, VALUES[2:])
    pgdb.sql("UPDATE types SET i4 = 42 WHERE id IN (4, 13)")       # the TOASTed t unchanged
    pgdb.sql("UPDATE types SET t = t || 'more' WHERE id = 14")
    pgdb.sql("DELETE FROM types WHERE id = 12")
    m.catch_up()
    want = pg_rows(pgdb, "types", TYPES)
    assert len(want) == 7
    got = iceberg_rows(m, "public.types", TYPES, readers_=("duckdb", "pyiceberg", "java"))
    for reader, rows in got.items():
        assert rows == want, reader
    t = m.pyiceberg_table("public.types")
    types = {f.name: str(f.field_type) for f in t.schema().fields}
    assert types["n"] == "decimal(12, 3)" and types["nneg"] == "decimal(7, 0)"
    assert types["nfree"] == "string" and types["iv"] == "string" and types["e"] == "string"
    assert types["o"] == "long" and types["dom"] == "int" and types["by"] == "binary"
    assert types["tstz"] == "timestamptz" and types["ai"].startswith("list<int")
    assert types["r4"].startswith("struct<")


# ---- clear errors, nothing committed half-way -----------------------------------------------------

def test_tables_floe_cannot_mirror_are_refused_up_front(pgdb, tmp_path):
    pgdb.sql("""
        CREATE TABLE nokey (a int, b int);
        CREATE TABLE nothing (id int PRIMARY KEY);
        ALTER TABLE nothing REPLICA IDENTITY NOTHING;
        CREATE TABLE toasty (id int PRIMARY KEY, body text);
        CREATE TABLE fullnokey (x double precision);
        ALTER TABLE fullnokey REPLICA IDENTITY FULL;
        CREATE TABLE parted (id int PRIMARY KEY) PARTITION BY RANGE (id);
        CREATE TABLE parted1 PARTITION OF parted FOR VALUES FROM (0) TO (10);
        ALTER TABLE parted REPLICA IDENTITY FULL;
        CREATE TABLE ok (id int PRIMARY KEY);
    """)
    cases = {
        "public.nokey": "no primary key and no replica identity",
        "public.nothing": "REPLICA IDENTITY NOTHING",
        "public.fullnokey": "keys it by the whole row",
        "public.parted": "ALTER TABLE public.parted1 REPLICA IDENTITY FULL",
        "public.missing": "does not exist",
    }
    for table, why in cases.items():
        m = Mirror(pgdb, tmp_path / table, ["public.ok", table], "--create-publication")
        r = m.run("--stop-at", "now", check=False)
        assert r.returncode == 1 and why in r.stderr, (table, r)
        assert pgdb.slot_lsn() is None                    # no slot was made
    m = Mirror(pgdb, tmp_path / "nopub", ["public.ok"])  # no publication and not asked to
    r = m.run("--stop-at", "now", check=False)
    assert r.returncode == 1 and 'CREATE PUBLICATION "s_' in r.stderr, r
    pgdb.sql(f'CREATE PUBLICATION "{pgdb.slot}" FOR TABLE nothing')
    r = m.run("--stop-at", "now", check=False)
    assert r.returncode == 1 and "ALTER PUBLICATION" in r.stderr and "ADD TABLE" in r.stderr, r
    r = m.run("--stop-at", "now", "--publication", "nope", check=False)
    assert r.returncode == 1 and 'publication "nope" does not exist' in r.stderr


def test_a_publication_that_filters_rows_or_columns_is_refused(pgdb, tmp_path):
    pgdb.sql("CREATE TABLE f (id int PRIMARY KEY, a int); INSERT INTO f VALUES (1, 1)")
    for i, (clause, why) in enumerate([("FOR TABLE f WHERE (a > 0)", "filters the rows of"),
                                       ("FOR TABLE f (id, a)", "publishes a column list of")]):
        pub = f"p{i}"
        pgdb.sql(f"CREATE PUBLICATION {pub} {clause}")
        m = Mirror(pgdb, tmp_path / pub, ["public.f"], "--publication", pub)
        r = m.run("--stop-at", "now", check=False)
        assert r.returncode == 1 and why in r.stderr and "public.f" in r.stderr, r
        assert pgdb.slot_lsn() is None
    pgdb.sql("CREATE PUBLICATION everything FOR ALL TABLES")
    m = Mirror(pgdb, tmp_path / "all", ["public.f"], "--publication", "everything")
    m.run("--stop-at", "now")
    cols = [Col("id", "integer", True), Col("a", "integer")]
    assert iceberg_rows(m, "public.f", cols)["duckdb"] == [(1, 1)]


def test_privileges_are_checked(pgdb, tmp_path):
    pgdb.sql("""
        CREATE TABLE secret (id int PRIMARY KEY);
        CREATE TABLE open (id int PRIMARY KEY);
        DO $$ BEGIN
          IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'plain') THEN
            CREATE ROLE plain LOGIN; END IF;
          IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'replicator') THEN
            CREATE ROLE replicator LOGIN REPLICATION; END IF;
        END $$;
        GRANT SELECT ON open TO plain, replicator;
    """)
    pgdb.sql(f'CREATE PUBLICATION "{pgdb.slot}" FOR TABLE secret, open')
    base = pgdb.url
    for user, tables, why in (("plain", ["public.open"], "REPLICATION"),
                              ("replicator", ["public.open", "public.secret"],
                               "no SELECT privilege on public.secret")):
        pgdb.url = base.replace("postgres@", f"{user}@")
        m = Mirror(pgdb, tmp_path / user, tables)
        r = m.run("--stop-at", "now", check=False)
        assert r.returncode == 1 and why in r.stderr, (user, r)
        assert "password" not in r.stderr
    pgdb.url = base


def test_a_slot_that_is_gone_is_an_error_not_a_fresh_start(pgdb, tmp_path):
    pgdb.sql("CREATE TABLE g (id int PRIMARY KEY); INSERT INTO g VALUES (1)")
    m = Mirror(pgdb, tmp_path, ["public.g"], "--create-publication")
    m.catch_up()
    pgdb.sql(f"SELECT pg_drop_replication_slot('{pgdb.slot}')")
    pgdb.sql("INSERT INTO g VALUES (2)")
    r = m.catch_up(check=False)
    assert r.returncode == 1 and "does not exist" in r.stderr and "records progress" in r.stderr
    assert pgdb.slot_lsn() is None


def test_wal_level_must_be_logical(tmp_path):
    import pgserver
    srv = pgserver.PgServer(extra_conf="wal_level = replica\n")     # the last setting wins
    try:
        r = run_floe("pg", "--source", srv.dsn, "--tables", "public.x", "--catalog",
                     f"sqlite:{tmp_path}/c.db", "--warehouse", f"{tmp_path}/wh", check=False)
        assert r.returncode == 1 and "wal_level is 'replica'" in r.stderr, r
    finally:
        srv.stop()


def test_an_invalidated_slot_is_an_error(tmp_path):
    import pgserver
    srv = pgserver.PgServer(extra_conf="max_slot_wal_keep_size = 1MB\nmax_wal_size = 32MB\n"
                                       "min_wal_size = 32MB\n")
    try:
        db = pgserver.Db(srv, "postgres")
        db.sql("CREATE TABLE inv (id int PRIMARY KEY); INSERT INTO inv VALUES (1)")
        m = Mirror(db, tmp_path, ["public.inv"], "--create-publication")
        m.catch_up()
        for _ in range(8):                                  # WAL the slot cannot keep
            if db.sql("SELECT wal_status FROM pg_replication_slots")[0][0] == "lost":
                break
            db.sql("INSERT INTO inv SELECT g FROM generate_series(1000000 * (1 + "
                   "(SELECT count(*) FROM inv)), 1000000 * (1 + (SELECT count(*) FROM inv)) "
                   "+ 200000) g")
            db.sql("SELECT pg_switch_wal()")
            db.sql("CHECKPOINT")
        assert db.sql("SELECT wal_status FROM pg_replication_slots")[0][0] == "lost"
        r = m.catch_up(check=False)
        assert r.returncode == 1 and "was invalidated" in r.stderr, r
    finally:
        srv.stop()


# ---- crashes and stops ------------------------------------------------------------------------------

def wait_for_line(p, text, timeout=120):
    """Read p's stderr until a line holds `text`; the lines read."""
    seen = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = p.stderr.readline()
        if not line:
            break
        seen.append(line)
        if text in line:
            return seen
    raise AssertionError(f"no line with {text!r} in {''.join(seen)}")


def test_a_crash_during_the_initial_copy_neither_loses_nor_doubles(pgdb, tmp_path):
    pgdb.sql("""
        CREATE TABLE small (id int PRIMARY KEY, v int);
        CREATE TABLE big (id int PRIMARY KEY, v int);
        INSERT INTO small SELECT g, g FROM generate_series(1, 100) g;
        INSERT INTO big SELECT g, g FROM generate_series(1, 400000) g;
    """)
    m = Mirror(pgdb, tmp_path, ["public.small", "public.big"], "--create-publication")
    p = m.popen(stderr=subprocess.PIPE, text=True)
    wait_for_line(p, "copied public.small")
    pgdb.sql("UPDATE small SET v = -v WHERE id <= 10; UPDATE big SET v = -v WHERE id <= 10;"
             "DELETE FROM big WHERE id > 399990")
    p.send_signal(signal.SIGKILL)                       # while big is being copied
    p.wait()
    pgdb.sql("INSERT INTO small VALUES (1000, 1); INSERT INTO big VALUES (1000000, 1);"
             "UPDATE big SET v = 0 WHERE id = 500")
    r = m.catch_up()
    assert "temporary slot" in r.stderr and "copied public.big" in r.stderr, r.stderr
    assert "copied public.small" not in r.stderr                # it resumes, it is not copied again
    cols = [Col("id", "integer", True), Col("v", "integer")]
    for table in ("small", "big"):
        assert iceberg_rows(m, f"public.{table}", cols)["duckdb"] == pg_rows(pgdb, table, cols)
    small = snapshots(m, "public.small")
    big = snapshots(m, "public.big")
    assert frontier_of(big[0][1]) > frontier_of(small[0][1])   # copied later, at its own point
    assert lsn_int(pgdb.slot_lsn()) <= min(frontier_of(small[-1][1]), frontier_of(big[-1][1]))


def test_a_stop_signal_commits_what_was_received_and_confirms_the_slot(pgdb, tmp_path):
    pgdb.sql("CREATE TABLE st (id int PRIMARY KEY, v int); INSERT INTO st VALUES (1, 1)")
    m = Mirror(pgdb, tmp_path, ["public.st"], "--create-publication")
    p = m.popen("--commit-interval", "60m", "--idle-commit-interval", "60m",
                stderr=subprocess.PIPE, text=True)
    wait_for_line(p, "streaming from slot")
    pgdb.sql("INSERT INTO st SELECT g, g FROM generate_series(2, 50) g")
    lsn = pgdb.lsn()
    time.sleep(1.5)                                     # received; the commit would wait an hour
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143, err
    assert "SIGTERM: stopped" in err
    cols = [Col("id", "integer", True), Col("v", "integer")]
    assert iceberg_rows(m, "public.st", cols)["duckdb"] == pg_rows(pgdb, "st", cols)
    assert lsn_int(pgdb.slot_lsn()) >= lsn_int(lsn)
    assert lsn_int(pgdb.slot_lsn()) <= frontier_of(snapshots(m, "public.st")[-1][1])


def test_postgres_restarting_under_the_mirror(pgdb, tmp_path):
    pgdb.sql("CREATE TABLE pr (id int PRIMARY KEY, v int); INSERT INTO pr VALUES (1, 1)")
    m = Mirror(pgdb, tmp_path, ["public.pr"], "--create-publication")
    p = m.popen("--commit-interval", "100ms", stderr=subprocess.PIPE, text=True)
    wait_for_line(p, "streaming from slot")
    pgdb.sql("INSERT INTO pr SELECT g, g FROM generate_series(2, 1000) g")
    time.sleep(0.5)
    pgdb.srv.restart("immediate")                         # a crash of Postgres
    pgdb.sql("UPDATE pr SET v = v + 1 WHERE id % 3 = 0")  # the run reconnects and goes on
    end = pgdb.horizon()
    from pgserver import committed_past, wait_until
    wait_until(lambda: committed_past(m, ["public.pr"], end), "the update committed")
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "reconnected to Postgres" in err, err
    cols = [Col("id", "integer", True), Col("v", "integer")]
    assert iceberg_rows(m, "public.pr", cols)["duckdb"] == pg_rows(pgdb, "pr", cols)


# ---- observability ----------------------------------------------------------------------------------

def test_status_line_metrics_and_inspect(pgdb, tmp_path):
    import socket
    import urllib.request
    pgdb.sql("CREATE TABLE ob (id int PRIMARY KEY, v int); INSERT INTO ob VALUES (1, 1);"
             "CREATE TABLE ob2 (id int PRIMARY KEY)")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    m = Mirror(pgdb, tmp_path, ["public.ob", "public.ob2"], "--create-publication")
    p = m.popen("--commit-interval", "60m", "--idle-commit-interval", "60m",
                "--metrics-addr", f"127.0.0.1:{port}", "--progress-interval", "200ms",
                stderr=subprocess.PIPE, text=True)
    wait_for_line(p, "streaming from slot")
    pgdb.sql("INSERT INTO ob SELECT g, g FROM generate_series(2, 100) g")
    time.sleep(1.5)                                      # received, not committed (60m)
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    metrics = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            metrics[name] = float(value)
    slot = f'{{slot="{pgdb.slot}"}}'
    assert metrics[f"floe_pg_inserts_total{slot}"] == 99
    assert metrics[f"floe_pg_lag_bytes{slot}"] > 0
    assert metrics[f"floe_pg_lag_seconds{slot}"] > 0.5
    assert metrics[f'floe_messages_staged_total{{sink="pg:{pgdb.slot}:public.ob"}}'] == 100
    assert f'floe_snapshots_committed_total{{sink="pg:{pgdb.slot}:public.ob2"}}' in metrics
    assert text.count("# TYPE floe_snapshots_committed_total ") == 1     # one group per name
    health = urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10)
    assert health.status == 200
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "changes (" in err and ", lag " in err and "committed" in err
    r = run_floe("inspect", "--table", "public.ob", "--catalog", f"sqlite:{m.catalog}",
                 "--source", pgdb.url)
    assert f"slot {pgdb.slot} (publication {pgdb.slot})" in r.stdout
    assert f"slot {pgdb.slot} now: confirmed flush LSN {pgdb.slot_lsn()}" in r.stdout
    j = json.loads(run_floe("inspect", "--table", "public.ob", "--catalog",
                            f"sqlite:{m.catalog}", "--json").stdout)
    pgsrc = j["sinks"][0]["postgres"]
    assert pgsrc["slot"] == pgdb.slot and pgsrc["table"] == "public.ob"
    assert lsn_int(pgsrc["frontier_lsn"]) >= lsn_int(pgdb.slot_lsn())


def test_a_stop_during_the_copy_commits_nothing_of_it(pgdb, tmp_path):
    pgdb.sql("CREATE TABLE sc (id int PRIMARY KEY, v int);"
             "INSERT INTO sc SELECT g, g FROM generate_series(1, 1000000) g")
    m = Mirror(pgdb, tmp_path, ["public.sc"], "--create-publication", "--progress-interval",
               "20ms")
    p = m.popen(stderr=subprocess.PIPE, text=True)
    wait_for_line(p, "copying: 0 of 1 tables")       # rows are coming: stop in the middle
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 143 and "stopped during the initial copy" in err, err
    assert snapshots(m, "public.sc") == []            # nothing of the copy is committed
    assert pgdb.slot_lsn() is not None                # the slot stays, for the next run


def test_passwords_are_never_printed(pgdb, tmp_path):
    pgdb.sql("CREATE TABLE pw (id int PRIMARY KEY)")
    secret = "s3cr3t-Pa55"
    port = pgdb.srv.port
    sources = [
        f"postgresql://postgres:{secret}@127.0.0.1:1/{pgdb.name}",          # refused
        f"host=127.0.0.1 port=1 user=postgres password={secret} dbname=x",
        f"host=127.0.0.1 password={secret} =broken",                          # malformed
        f"postgresql://postgres:{secret}@127.0.0.1:{port}/{pgdb.name}",       # works (trust)
    ]
    for src in sources:
        for args in (["pg", "--source", src, "--tables", "public.pw", "--create-publication",
                      "--slot", pgdb.slot, "--stop-at", "now", "--catalog",
                      f"sqlite:{tmp_path}/c.db", "--warehouse", f"{tmp_path}/wh",
                      "--index-dir", f"{tmp_path}/ix", "--reconnect-timeout", "1s"],
                     ["inspect", "--table", "public.pw", "--catalog", f"sqlite:{tmp_path}/c.db",
                      "--source", src]):
            r = run_floe(*args, check=False)
            assert secret not in r.stdout and secret not in r.stderr, (args, r)
    assert "fed by Postgres" in r.stdout                   # the last one worked


def test_a_table_dropped_and_created_again_or_swapped_is_resynced(pgdb, tmp_path):
    """Mirroring is by name: when the table a name denotes is not the one the
    Iceberg table records (floe.pg.relid), it is copied again in place."""
    one = [Col("id", "integer", True), Col("v", "integer")]
    pgdb.sql("CREATE TABLE s (id int PRIMARY KEY, v int); INSERT INTO s VALUES (1, 1), (2, 2);"
             "CREATE TABLE o (id int PRIMARY KEY, v int); INSERT INTO o VALUES (1, 1)")
    m = Mirror(pgdb, tmp_path, ["public.s", "public.o"], "--create-publication")
    m.catch_up()
    (_, first), = snapshots(m, "public.s")
    relid = pgdb.sql("SELECT 'public.s'::regclass::oid")[0][0]
    assert first["floe.pg.relid"] == str(relid) and first["floe.pg.system-id"].isdigit()
    assert first["floe.pg.lsn"] != "none", first          # the copy's snapshot has its LSN
    # dropped and created again with the same shape, other rows
    pgdb.sql("DROP TABLE s; CREATE TABLE s (id int PRIMARY KEY, v int);"
             "INSERT INTO s VALUES (1, 10), (3, 30); INSERT INTO o VALUES (2, 2)")
    r = m.catch_up()
    assert "is not the one mirrored" in r.stderr and "resynced public.s" in r.stderr, r.stderr
    for t in ("s", "o"):
        for reader, rows in iceberg_rows(m, f"public.{t}", one).items():
            assert rows == pg_rows(pgdb, t, one), (t, reader)
    # a rename swap
    pgdb.sql("CREATE TABLE s_new (id int PRIMARY KEY, v int); INSERT INTO s_new VALUES (7, 7);"
             "ALTER TABLE s RENAME TO s_old; ALTER TABLE s_new RENAME TO s;"
             "INSERT INTO s_old VALUES (8, 8)")
    r = m.catch_up()
    assert "is not the one mirrored" in r.stderr, r.stderr
    assert iceberg_rows(m, "public.s", one)["duckdb"] == [(7, 7)] == pg_rows(pgdb, "s", one)
    # the same table again: no resync
    pgdb.sql("INSERT INTO s VALUES (9, 9)")
    r = m.catch_up()
    assert "resync" not in r.stderr, r.stderr
    assert iceberg_rows(m, "public.s", one)["pyiceberg"] == pg_rows(pgdb, "s", one)


def test_a_table_dropped_or_replaced_while_floe_runs(pgdb, tmp_path):
    """Postgres sends nothing when a mirrored table is dropped and created
    again, or swapped by renames, while floe streams (the new table is not
    in the publication): floe notices at its next round of commits, opens
    the mirror again and resyncs the table; a table dropped for good stops
    the mirror with advice that works when followed."""
    one = [Col("id", "integer", True), Col("v", "integer")]
    pgdb.sql("CREATE TABLE s (id int PRIMARY KEY, v int); INSERT INTO s VALUES (1, 1), (2, 2);"
             "CREATE TABLE o (id int PRIMARY KEY, v int); INSERT INTO o VALUES (1, 1)")
    m = Mirror(pgdb, tmp_path, ["public.s", "public.o"], "--create-publication")
    m.catch_up()
    p = m.popen("--commit-interval", "100ms", "--idle-commit-interval", "300ms",
                stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: pgdb.sql("SELECT active FROM pg_replication_slots WHERE slot_name = "
                                    "%s", (pgdb.slot,))[0][0], "streaming")
        pgdb.sql("DROP TABLE s; CREATE TABLE s (id int PRIMARY KEY, v int);"
                 "INSERT INTO s VALUES (1, 10), (3, 30); INSERT INTO o VALUES (2, 2)")
        pgdb.sql("INSERT INTO s VALUES (4, 40)")
        end = pgdb.horizon()
        wait_until(lambda: committed_past(m, ["public.o", "public.s"], end), "the resync")
        for t in ("s", "o"):
            for reader, rows in iceberg_rows(m, f"public.{t}", one).items():
                assert rows == pg_rows(pgdb, t, one), (t, reader)
        # a rename swap, then changes of the new table
        pgdb.sql("CREATE TABLE s_new (id int PRIMARY KEY, v int); INSERT INTO s_new VALUES (7, 7);"
                 "ALTER TABLE s RENAME TO s_old; ALTER TABLE s_new RENAME TO s")
        end = pgdb.horizon()
        wait_until(lambda: committed_past(m, ["public.s"], end), "the second resync")
        pgdb.sql("INSERT INTO s VALUES (8, 8); INSERT INTO s_old VALUES (9, 9)")
        end = pgdb.horizon()
        wait_until(lambda: committed_past(m, ["public.s"], end), "the new table's change")
        assert iceberg_rows(m, "public.s", one)["duckdb"] == [(7, 7), (8, 8)] \
            == pg_rows(pgdb, "s", one)
        # dropped for good: the mirror stops, saying what to do
        pgdb.sql("DROP TABLE s")
        assert p.wait(timeout=120 * SCALE) == 1
    finally:
        if p.poll() is None:
            p.kill()
    err = p.communicate()[1]
    assert err.count("was replaced (dropped and created again, or another table renamed") == 2, err
    assert "public.s was dropped or renamed in Postgres while floe mirrored it" in err, err
    assert "floe pg --drop-table public.s stops mirroring it, then leave it out of --tables" \
        in err, err
    r = m.run("--drop-table", "public.s")
    assert r.returncode == 0, r
    pgdb.sql("INSERT INTO o VALUES (5, 5)")
    Mirror(pgdb, tmp_path, ["public.o"], "--create-publication").catch_up()
    assert iceberg_rows(m, "public.o", one)["pyiceberg"] == pg_rows(pgdb, "o", one)


def test_a_table_of_another_postgres_system_is_refused(pgdb, tmp_path):
    """The same catalog pointed at another cluster (a restored copy, another
    server) with the same table names: its frontiers are LSNs of the first
    one, so the run stops, naming both systems; the advice works."""
    from pgserver import Db, PgServer
    one = [Col("id", "integer", True), Col("v", "integer")]
    pgdb.sql("CREATE TABLE s (id int PRIMARY KEY, v int); INSERT INTO s VALUES (1, 1)")
    m = Mirror(pgdb, tmp_path, ["public.s"], "--create-publication")
    m.catch_up()
    other = PgServer()
    try:
        with psycopg.connect(other.dsn, autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{pgdb.name}"')
        db2 = Db(other, pgdb.name)
        db2.sql("CREATE TABLE s (id int PRIMARY KEY, v int); INSERT INTO s VALUES (2, 2)")
        m2 = Mirror(db2, tmp_path, ["public.s"], "--create-publication")
        r = m2.catch_up(check=False)
        assert r.returncode == 1 and "of another Postgres system" in r.stderr, r
        assert first_line_with(r.stderr, "another Postgres system").count("system identifier") \
            == 1, r.stderr
        assert iceberg_rows(m, "public.s", one)["duckdb"] == [(1, 1)]      # untouched
        m2 = Mirror(db2, tmp_path, ["public.s"], "--create-publication", "--namespace", "two")
        m2.catch_up()
        assert iceberg_rows(m2, "two.s", one)["duckdb"] == [(2, 2)]
    finally:
        other.stop()


def first_line_with(text, words):
    return next(line for line in text.splitlines() if words in line)


def test_an_iceberg_table_with_rows_of_another_writer_is_refused_with_pg_advice(pgdb, tmp_path):
    """The Iceberg table a Postgres table maps to holds rows floe pg did not
    write: refused, with advice in floe pg's own options, which works."""
    import pyarrow as pa
    from iceberg_readers import pyiceberg_catalog
    one = [Col("id", "integer", True), Col("v", "integer")]
    pgdb.sql("CREATE TABLE s (id int PRIMARY KEY, v int); INSERT INTO s VALUES (1, 1)")
    cat = pyiceberg_catalog(f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh")
    cat.create_namespace("public")
    schema = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("v", pa.int32())])
    cat.create_table("public.s", schema).append(pa.table({"id": [5], "v": [5]}, schema=schema))
    m = Mirror(pgdb, tmp_path, ["public.s"], "--create-publication")
    r = m.catch_up(check=False)
    assert r.returncode == 1 and "holds rows, but none this mirror recorded" in r.stderr, r
    assert "--new-sink" not in r.stderr and "--namespace" in r.stderr, r.stderr
    m = Mirror(pgdb, tmp_path, ["public.s"], "--create-publication", "--namespace", "mine")
    m.catch_up()
    assert iceberg_rows(m, "mine.s", one)["duckdb"] == [(1, 1)]


def test_a_second_catalog_for_the_same_slot_is_refused_unless_new_mirror(pgdb, tmp_path):
    """The same command from another directory (the default catalog is
    relative): refused before anything is copied, naming the slot; the
    first catalog then still resumes; --new-mirror copies into the second."""
    one = [Col("id", "integer", True), Col("v", "integer")]
    pgdb.sql("CREATE TABLE s (id int PRIMARY KEY, v int); INSERT INTO s VALUES (1, 1)")
    m = Mirror(pgdb, tmp_path / "one", ["public.s"], "--create-publication")
    m.catch_up()
    pgdb.sql("INSERT INTO s VALUES (2, 2)")
    other = Mirror(pgdb, tmp_path / "two", ["public.s"], "--create-publication")
    r = other.catch_up(check=False)
    assert r.returncode == 1 and f"replication slot {pgdb.slot} exists" in r.stderr, r
    assert "--new-mirror" in r.stderr and "absolute" in r.stderr, r.stderr
    m.catch_up()                                      # the first catalog goes on
    assert iceberg_rows(m, "public.s", one)["duckdb"] == pg_rows(pgdb, "s", one)
    r = other.catch_up("--new-mirror")
    assert iceberg_rows(other, "public.s", one)["duckdb"] == pg_rows(pgdb, "s", one)


def test_a_slot_of_another_database_is_refused(pgdb, tmp_path):
    from pgserver import Db
    pgdb.sql("CREATE TABLE s (id int PRIMARY KEY, v int); INSERT INTO s VALUES (1, 1)")
    Mirror(pgdb, tmp_path / "one", ["public.s"], "--create-publication").catch_up()
    name = pgdb.name + "_b"
    with psycopg.connect(pgdb.srv.dsn, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    db2 = Db(pgdb.srv, name)
    try:
        db2.slot = pgdb.slot
        db2.sql("CREATE TABLE s (id int PRIMARY KEY, v int)")
        r = Mirror(db2, tmp_path / "two", ["public.s"], "--create-publication").catch_up(
            check=False)
        assert r.returncode == 1, r
        assert f"replication slot {pgdb.slot} belongs to database {pgdb.name}, not {name}" \
            in r.stderr, r.stderr
    finally:
        db2.slot = "s_" + name
        db2.drop()


def test_every_refused_table_is_named_in_one_run_before_anything_is_created(pgdb, tmp_path):
    pgdb.sql("CREATE TABLE ok (id int PRIMARY KEY, v int);"
             "CREATE TABLE nokey (v int);"
             "CREATE TABLE toasty (id int PRIMARY KEY, doc text);"
             "CREATE VIEW aview AS SELECT 1 AS x")
    m = Mirror(pgdb, tmp_path, ["public.ok", "public.nokey", "public.toasty", "public.aview",
                                "public.missing"], "--create-publication", "--delete-mode",
               "equality")                       # toasty needs FULL in equality mode
    r = m.catch_up(check=False)
    assert r.returncode == 1, r
    assert "4 of the 5 tables cannot be mirrored" in r.stderr, r.stderr
    for words in ("public.nokey", "public.toasty", "REPLICA IDENTITY FULL", "public.aview",
                  "public.missing does not exist"):
        assert words in r.stderr, (words, r.stderr)
    # nothing was created: no slot, no publication, no Iceberg table
    assert pgdb.slot_lsn() is None
    assert pgdb.sql("SELECT count(*) FROM pg_publication")[0][0] == 0
    import os
    if os.path.exists(f"{tmp_path}/catalog.db"):
        from iceberg_readers import pyiceberg_catalog
        cat = pyiceberg_catalog(f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh")
        assert [t for ns in cat.list_namespaces() for t in cat.list_tables(ns)] == []
