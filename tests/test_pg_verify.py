"""floe pg --verify against a real PostgreSQL (tests/pgserver.py): every
mirrored table compared with Postgres at one LSN.  Equal tables exit 0;
rows deleted, changed or added behind floe's back by a foreign writer
(pyiceberg) are reported by key as missing, different (with the column)
or extra, exit 3; changes that keep arriving while it verifies are not
differences (the tables are committed at exactly the LSN of the snapshot
Postgres is read in); every mapped type compares equal.  What it reports
is checked against DuckDB and psycopg reading both sides.
"""
import re
import threading
import time

import pyarrow as pa
import pytest

from pgserver import Mirror, SCALE, iceberg_rows, lsn_int, pg_rows, pgdb, snapshots  # noqa: F401
from pgserver import frontier_of
from rowgen import Col
import test_pg

COLS = [Col("id", "integer", True), Col("v", "text"), Col("n", "integer")]
DDL = """
CREATE TABLE t (id int PRIMARY KEY, v text, n int);
ALTER TABLE t REPLICA IDENTITY FULL;
INSERT INTO t SELECT g, 'v' || g, g FROM generate_series(1, 3000) g;
CREATE TABLE k (a int, b bigint, x double precision, PRIMARY KEY (b, a));
INSERT INTO k SELECT g % 10, g / 10, g / 3.0 FROM generate_series(1, 500) g;
"""


def verify(m, *more):
    r = m.run("--verify", *more, check=False, timeout=600 * SCALE)
    assert r.returncode in (0, 3), r
    return r


def table_line(r, source):
    return next(line for line in r.stdout.splitlines() + r.stderr.splitlines()
                if line.startswith(source + ":"))


def at_of(line):
    return lsn_int(re.search(r" at (\w+/\w+)", line).group(1))


def test_a_mirrored_table_verifies_equal(pgdb, tmp_path):
    pgdb.sql(DDL)
    m = Mirror(pgdb, tmp_path, ["public.t", "public.k"], "--create-publication")
    m.catch_up()
    pgdb.sql("UPDATE t SET v = 'changed' WHERE id % 7 = 0; DELETE FROM t WHERE id % 11 = 0;"
             "INSERT INTO k VALUES (1, 1000, 1); UPDATE k SET x = -x WHERE a = 3")
    before = lsn_int(pgdb.lsn())
    r = verify(m)                    # the changes since the last run stream in first
    assert r.returncode == 0, r
    line = table_line(r, "public.t")
    assert line.startswith(f"public.t: equal, {len(pg_rows(pgdb, 't', COLS))} rows at "), line
    assert table_line(r, "public.k").startswith("public.k: equal, 501 rows at "), r
    assert "all 2 tables equal" in r.stderr, r
    at = at_of(line)
    assert at >= before
    # the tables are committed at exactly that point, and the slot confirmed there
    for ident in ("public.t", "public.k"):
        assert frontier_of(snapshots(m, ident)[-1][1]) == at
    assert lsn_int(pgdb.slot_lsn()) == at
    assert iceberg_rows(m, "public.t", COLS)["duckdb"] == pg_rows(pgdb, "t", COLS)


def foreign(m):
    return m.pyiceberg_table("public.t")


def test_foreign_writes_are_reported_by_key(pgdb, tmp_path):
    from pyiceberg.expressions import EqualTo
    pgdb.sql(DDL)
    m = Mirror(pgdb, tmp_path, ["public.t"], "--create-publication")
    m.catch_up()
    assert verify(m).returncode == 0

    # a row deleted behind floe's back: missing
    foreign(m).delete(delete_filter=EqualTo("id", 5))
    assert (5, "v5", 5) not in iceberg_rows(m, "public.t", COLS)["duckdb"]
    r = verify(m)
    assert r.returncode == 3, r
    line = table_line(r, "public.t")
    assert "1 difference at" in line and line.endswith(': missing {"id":5}'), line
    assert "1 of 1 tables differ (1 differences)" in r.stderr, r

    # a row overwritten with another value: different, naming the column
    t = foreign(m)
    schema = t.schema().as_arrow()
    t.overwrite(pa.Table.from_pylist([{"id": 7, "v": "v7", "n": -7}], schema=schema),
                overwrite_filter=EqualTo("id", 7))
    # and a row Postgres never had: extra
    foreign(m).append(pa.Table.from_pylist([{"id": 100000, "v": "x", "n": 0}], schema=schema))
    pgdb.sql("INSERT INTO t VALUES (3001, 'new', 1)")     # the mirror still follows
    r = verify(m)
    assert r.returncode == 3, r
    line = table_line(r, "public.t")
    assert "3 differences at" in line, line
    assert "(1 missing in public.t, 1 extra, 1 different; 3001 rows in Postgres, 3001 in " \
           "Iceberg)" in line, line
    found = sorted(line.split("): ", 1)[1].split(", "))
    assert found == sorted(['missing {"id":5}', 'different {"id":7} ("n")',
                            'extra {"id":100000}']), line
    # what it says is what the readers see
    ice = {r[0]: r for r in iceberg_rows(m, "public.t", COLS)["duckdb"]}
    src = {r[0]: r for r in pg_rows(pgdb, "t", COLS)}
    assert 5 not in ice and 5 in src and ice[7] != src[7] and 100000 not in src
    assert ice[3001] == src[3001]

    # --resync repairs it, and verify says so
    pgdb.sql("UPDATE t SET n = 0 WHERE id = 1")
    r = m.catch_up("--resync", "public.t")
    assert "resynced public.t" in r.stderr, r
    r = verify(m)
    assert r.returncode == 0 and "all 1 tables equal" in r.stderr, r


def test_many_differences_are_all_counted_and_the_first_reported(pgdb, tmp_path):
    from pyiceberg.expressions import And, GreaterThanOrEqual, LessThanOrEqual
    pgdb.sql(DDL)
    m = Mirror(pgdb, tmp_path, ["public.t"], "--create-publication")
    m.catch_up()
    t = foreign(m)
    t.delete(delete_filter=LessThanOrEqual("id", 1500))
    t = foreign(m)
    rows = [{"id": i, "v": f"v{i}", "n": -i} for i in range(2000, 2101)]
    t.overwrite(pa.Table.from_pylist(rows, schema=t.schema().as_arrow()),
                overwrite_filter=And(GreaterThanOrEqual("id", 2000), LessThanOrEqual("id", 2100)))
    r = verify(m)
    assert r.returncode == 3, r
    line = table_line(r, "public.t")
    assert "1601 differences at" in line, line
    assert "(1500 missing in public.t, 0 extra, 101 different; 3000 rows in Postgres, 1500 in " \
           "Iceberg)" in line, line
    shown = line.split("): ", 1)[1]
    assert shown.endswith(", ... (1501 more)"), line
    items = re.findall(r'(missing|different) \{"id":(\d+)\}', shown)
    assert len(items) == 100, shown
    for kind, key in items:
        assert (kind == "missing" and int(key) <= 1500) or \
               (kind == "different" and 2000 <= int(key) <= 2100), (kind, key)


def writer(db, stop, commits):
    """Transactions until stopped; for each commit (its monotonic time, the
    WAL positions before and after it: its commit LSN lies between) into
    `commits`."""
    with db.conn() as c:
        i = 0
        while not stop.is_set():
            i += 1
            c.execute("BEGIN")
            c.execute("INSERT INTO t VALUES (%s, 'w', %s)", (100000 + i, i))
            c.execute("UPDATE t SET n = n + 1, v = 'u' || %s WHERE id = %s", (i, 1 + i % 3000))
            c.execute("DELETE FROM t WHERE id = %s", (100000 + i - 5,))
            before = c.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
            c.execute("COMMIT")
            after = c.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
            commits.append((time.monotonic(), lsn_int(before), lsn_int(after)))


def test_changes_arriving_while_it_verifies_are_not_differences(pgdb, tmp_path):
    """Verifies run while a writer commits: each is equal, and (retried
    until it happened, at most 10 times) one of them ran while commits
    landed both below its point (streamed in, committed) and above it
    (received, not committed, not compared)."""
    pgdb.sql(DDL)
    m = Mirror(pgdb, tmp_path, ["public.t"], "--create-publication")
    m.catch_up()
    stop, commits = threading.Event(), []
    th = threading.Thread(target=writer, args=(pgdb, stop, commits))
    th.start()
    points, both = [], False
    try:
        while not both and len(points) < 10:
            t0 = time.monotonic()
            r = verify(m, "--commit-interval", "200ms")
            t1 = time.monotonic()
            assert r.returncode == 0, r
            at = at_of(table_line(r, "public.t"))
            points.append(at)
            during = [(b, a) for t, b, a in list(commits) if t0 < t < t1]
            both = any(a < at for b, a in during) and any(b > at for b, a in during)
    finally:
        stop.set()
        th.join()
    assert both, points
    assert points == sorted(points) and len(set(points)) == len(points), points
    r = verify(m)
    assert r.returncode == 0 and "all 1 tables equal" in r.stderr, r
    assert pg_rows(pgdb, "t", COLS) == iceberg_rows(m, "public.t", COLS)["duckdb"]


def test_every_mapped_type_verifies_equal(pgdb, tmp_path):
    pgdb.sql(test_pg.TYPES_DDL)
    test_pg.insert_types(pgdb, test_pg.VALUES[:2])
    m = Mirror(pgdb, tmp_path, ["public.types"], "--create-publication")
    m.catch_up()
    test_pg.insert_types(pgdb, [(i + 10,) + v[1:] for i, v in enumerate(test_pg.VALUES)])
    test_pg.insert_types(pgdb, test_pg.VALUES[2:])
    pgdb.sql("UPDATE types SET i4 = 42 WHERE id IN (4, 13)")
    r = verify(m)
    assert r.returncode == 0, r
    assert table_line(r, "public.types").startswith("public.types: equal, 8 rows at"), r
    # a value changed behind floe's back in one column is named
    t = m.pyiceberg_table("public.types")
    from pyiceberg.expressions import EqualTo
    rows = t.scan(row_filter=EqualTo("id", 13)).to_arrow().to_pylist()
    rows[0]["f8"] = 2.5
    t.overwrite(pa.Table.from_pylist(rows, schema=t.schema().as_arrow()),
                overwrite_filter=EqualTo("id", 13))
    r = verify(m)
    assert r.returncode == 3, r
    assert table_line(r, "public.types").endswith(': different {"id":13} ("f8")'), r


def test_verify_refuses_what_it_cannot_verify(pgdb, tmp_path):
    pgdb.sql(DDL)
    m = Mirror(pgdb, tmp_path, ["public.t"], "--create-publication")
    r = m.run("--verify", check=False)
    assert r.returncode == 1 and "has no copy in public.t yet" in r.stderr, r
    r = m.run("--verify", "--stop-at", "now", check=False)
    assert r.returncode == 2 and "--verify" in r.stderr, r
