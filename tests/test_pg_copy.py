"""floe pg's initial copy in bulk (src/sink/sink_bulk.c, src/mirror/mirror_copy.c):
several connections in the slot's exported snapshot, tables in parallel, a
large table in CTID page ranges (--copy-range-pages forces small ranges
here), rows written straight into data files and the key index built from
them.

  - the copied tables equal the source, read by DuckDB and pyiceberg, and
    each is one snapshot at the slot's consistent point that records
    floe.pg.lsn and floe.pg.slot-confirmed-lsn;
  - updates, deletes and key changes after the copy hit the copied rows
    (the key index was built right: an update of a copied key deletes the
    copied row, no key twice), for a declared key and for a whole-row key
    (REPLICA IDENTITY FULL without a primary key), also after a restart
    that loads the index checkpointed after the copy;
  - a kill -9 in the middle of the copy of a run's only table, then a rerun:
    the rerun is not refused and copies it exactly (its key index built in
    sorted runs: more rows than the index's memory holds);
  - a value a worker cannot convert stops every worker and commits nothing;
  - --copy-workers 1 (one connection, one range per table).
"""
import re
import signal
import subprocess
import time

import pytest

from pgserver import (SCALE, Mirror, iceberg_rows, lsn_int, pg_rows, pgdb,  # noqa: F401
                      snapshots, frontier_of)
from rowgen import Col

BIG = [Col("id", "bigint", True), Col("a", "integer"), Col("b", "text"),
       Col("c", "numeric", p=12, s=2), Col("d", "timestamptz")]
PAIR = [Col("k1", "integer", True), Col("k2", "text", True), Col("v", "bigint")]
FULL = [Col("x", "integer"), Col("y", "text")]
SMALL = [Col("id", "integer", True), Col("v", "integer")]

BIG_ROWS = 60000


def load(db):
    db.sql(f"""
        CREATE TABLE big (id bigint PRIMARY KEY, a integer, b text, c numeric(12,2),
                          d timestamptz);
        INSERT INTO big SELECT g, CASE WHEN g % 7 = 0 THEN NULL ELSE g % 1000 END,
               CASE WHEN g % 11 = 0 THEN NULL ELSE 'row ' || g || repeat('x', g % 40) END,
               g * 0.01, '2024-01-01'::timestamptz + g * interval '1 second'
          FROM generate_series(1, {BIG_ROWS}) g;
        CREATE TABLE pair (k1 int NOT NULL, k2 text NOT NULL, v bigint,
                           PRIMARY KEY (k1, k2));
        INSERT INTO pair SELECT g % 500, 'k' || (g / 500), g FROM generate_series(1, 20000) g;
        CREATE TABLE fullrow (x int, y text);
        ALTER TABLE fullrow REPLICA IDENTITY FULL;
        INSERT INTO fullrow SELECT g % 300, 'y' || (g % 5) FROM generate_series(1, 9000) g;
        CREATE TABLE small (id int PRIMARY KEY, v int);
        INSERT INTO small SELECT g, g FROM generate_series(1, 50) g;
        CREATE TABLE empty (id int PRIMARY KEY, v int);
    """)
    db.sql("VACUUM ANALYZE big, pair, fullrow, small")


TABLES = {"big": BIG, "pair": PAIR, "fullrow": FULL, "small": SMALL, "empty": SMALL}


def check_equal(db, m, tables=TABLES):
    for table, cols in tables.items():
        want = pg_rows(db, table, cols)
        for reader, rows in iceberg_rows(m, f"public.{table}", cols).items():
            assert len(rows) == len(want), (table, reader, len(rows), len(want))
            assert rows == want, (table, reader)


def ranges_of(stderr, table):
    m = re.search(rf"copied public\.{table}: (\d+) rows .* \((\d+) ranges?\)", stderr)
    assert m, stderr
    return int(m.group(1)), int(m.group(2))


def change_copied_rows(db):
    with db.conn() as c:
        with c.transaction():
            c.execute("UPDATE big SET a = -a, b = 'changed' WHERE id % 97 = 0")
            c.execute("DELETE FROM big WHERE id % 89 = 0")
            c.execute("UPDATE big SET id = id + 10000000 WHERE id % 1013 = 5")    # key changes
            c.execute(f"INSERT INTO big SELECT g, 1, 'new', 1, now() "
                      f"FROM generate_series({BIG_ROWS + 1}, {BIG_ROWS + 500}) g")
            c.execute("UPDATE pair SET v = -v WHERE k1 < 50")
            c.execute("DELETE FROM pair WHERE k1 = 499")
            c.execute("UPDATE fullrow SET y = 'changed' WHERE x < 20")    # whole-row key
            c.execute("DELETE FROM fullrow WHERE x = 299")
            c.execute("UPDATE small SET v = 0")
            c.execute("INSERT INTO empty VALUES (1, 1)")
        for i in range(3):                                 # copied keys, again and again
            c.execute("UPDATE big SET c = %s WHERE id IN (1, 2, 3, 30000, %s)", (i, BIG_ROWS))


@pytest.mark.parametrize("workers,range_pages", [(3, 40), (1, None)])
def test_a_parallel_ranged_copy_equals_the_source_and_its_index_takes_changes(
        pgdb, tmp_path, workers, range_pages):
    load(pgdb)
    extra = ["--copy-workers", str(workers)]
    if range_pages:
        extra += ["--copy-range-pages", str(range_pages)]
    m = Mirror(pgdb, tmp_path, [f"public.{t}" for t in TABLES], "--create-publication", *extra)
    r = m.run("--stop-at", "now")
    rows, ranges = ranges_of(r.stderr, "big")
    assert rows == BIG_ROWS
    pages = pgdb.sql("SELECT pg_relation_size('big') / 8192")[0][0]
    if range_pages:
        assert ranges == pages // range_pages + 1 and ranges > 3, (ranges, pages)
    else:
        assert ranges == 1
    check_equal(pgdb, m)
    consistent = None
    for table in TABLES:
        snaps = snapshots(m, f"public.{table}")
        s = snaps[0][1]                                   # the copy is one snapshot
        assert int(s.get("added-records", 0)) == len(pg_rows(pgdb, table, TABLES[table]))
        assert all(int(x.get("added-records", 0)) == 0 for _, x in snaps[1:]), snaps
        assert lsn_int(s["floe.pg.lsn"]) == frontier_of(s), s
        assert "floe.pg.slot-confirmed-lsn" in s, s
        if table == "big":                                # a part, so a file, per range
            assert int(s["added-data-files"]) == ranges, s
        consistent = consistent or frontier_of(s)
        assert frontier_of(s) == consistent               # one exported snapshot for all
    change_copied_rows(pgdb)
    m.catch_up()
    check_equal(pgdb, m)
    ids = [row[0] for row in iceberg_rows(m, "public.big", BIG, readers_=("duckdb",))["duckdb"]]
    assert len(ids) == len(set(ids))                      # no key twice
    pgdb.sql("UPDATE big SET b = 'after a restart' WHERE id % 3 = 0; DELETE FROM pair WHERE k1 = 7;"
             "UPDATE fullrow SET y = 'again' WHERE x BETWEEN 100 AND 120")
    r = m.catch_up()                                      # the index from its checkpoint
    assert "copied public" not in r.stderr, r.stderr
    check_equal(pgdb, m)


def wait_for_rows(p, at_least, timeout=120):
    """Read stderr until the status line shows the copy past `at_least` rows."""
    deadline = time.time() + timeout * SCALE
    seen = []
    buf = ""
    while time.time() < deadline:
        ch = p.stderr.read(1)
        if not ch:
            break
        buf += ch
        if ch in "\r\n":
            seen.append(buf)
            m = re.search(r"copying: \d+ of \d+ tables, (\d+) rows", buf)
            buf = ""
            if m and int(m.group(1)) >= at_least:
                return
    raise AssertionError(f"the copy never passed {at_least} rows: {''.join(seen)[-2000:]}")


@pytest.mark.parametrize("workers", [2, 1])
def test_a_kill_during_the_copy_of_the_only_table_then_a_rerun_is_exact(pgdb, tmp_path, workers):
    pgdb.sql("""
        CREATE TABLE only1 (id bigint PRIMARY KEY, v text);
        INSERT INTO only1 SELECT g, repeat(md5(g::text), 3) FROM generate_series(1, 400000) g;
    """)
    pgdb.sql("VACUUM ANALYZE only1")
    # 32 MiB: the key index gets 16, less than 400,000 rows take in its memory
    # tier, so it is built in sorted runs (and read from its disk tier after)
    m = Mirror(pgdb, tmp_path, ["public.only1"], "--create-publication", "--copy-workers",
               str(workers), "--copy-range-pages", "200", "--progress-interval", "50ms",
               "--memory-limit", "32m")
    p = m.popen(stderr=subprocess.PIPE, text=True)
    wait_for_rows(p, 65536)
    p.send_signal(signal.SIGKILL)                          # rows written, nothing committed
    p.wait()
    assert snapshots(m, "public.only1") == []
    pgdb.sql("UPDATE only1 SET v = 'later' WHERE id % 1000 = 0; DELETE FROM only1 WHERE id < 100;"
             "INSERT INTO only1 VALUES (1000000, 'new')")
    r = m.catch_up()                                       # not refused: it copies again
    assert "temporary slot" in r.stderr and "copied public.only1" in r.stderr, r.stderr
    cols = [Col("id", "bigint", True), Col("v", "text")]
    want = pg_rows(pgdb, "only1", cols)
    for reader, rows in iceberg_rows(m, "public.only1", cols).items():
        assert rows == want, reader
    pgdb.sql("UPDATE only1 SET v = 'after' WHERE id % 777 = 0")
    m.catch_up()
    assert iceberg_rows(m, "public.only1", cols)["duckdb"] == pg_rows(pgdb, "only1", cols)


def test_a_value_a_worker_cannot_convert_stops_the_copy_and_commits_nothing(pgdb, tmp_path):
    pgdb.sql("""
        CREATE TABLE bad (id int PRIMARY KEY, n numeric(12,2));
        INSERT INTO bad SELECT g, g FROM generate_series(1, 100000) g;
        UPDATE bad SET n = 'NaN' WHERE id = 77777;
        CREATE TABLE fine (id int PRIMARY KEY);
        INSERT INTO fine SELECT generate_series(1, 10);
    """)
    pgdb.sql("VACUUM ANALYZE bad, fine")
    m = Mirror(pgdb, tmp_path, ["public.bad", "public.fine"], "--create-publication",
               "--copy-workers", "3", "--copy-range-pages", "30")
    t0 = time.time()
    r = m.run("--stop-at", "now", check=False, timeout=120 * SCALE)
    assert r.returncode == 1, r.stderr
    assert "NaN" in r.stderr and "the initial copy of public.bad" in r.stderr, r.stderr
    assert time.time() - t0 < 60 * SCALE
    assert snapshots(m, "public.bad") == []
    pgdb.sql("UPDATE bad SET n = 0 WHERE id = 77777")
    m.catch_up()
    cols = [Col("id", "integer", True), Col("n", "numeric", p=12, s=2)]
    assert iceberg_rows(m, "public.bad", cols)["duckdb"] == pg_rows(pgdb, "bad", cols)
