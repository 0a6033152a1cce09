"""Partitioned Postgres tables, mirrored as one Iceberg table each through
their root (publish_via_partition_root), on a real Postgres:

  - a range-partitioned table (REPLICA IDENTITY DEFAULT, its primary key
    holding the partition column), a list-partitioned one (FULL on the root
    and every partition, with text that may be TOASTed) and a
    hash-partitioned one, copied and streamed; rows moved between
    partitions by UPDATE of the partition key (Postgres sends a DELETE and
    an INSERT naming the root); a partition created while floe runs (taken
    in without a resync once it is seen empty, its rows streamed);
  - ATTACH (with rows), DETACH, DROP and TRUNCATE of one partition, which
    the change stream does not carry (a TRUNCATE of one partition is not
    sent at all), resynced while floe runs and while it is stopped; a
    TRUNCATE of the root;
  - SIGKILLs while a writer moves rows between partitions;
  - what is refused, with the statement that fixes it, and that following
    the advice works.

Every check compares the Iceberg table, read with DuckDB and pyiceberg,
with `SELECT ... FROM root` row by row, once every table has committed past
the WAL position after the last change (a snapshot recording a frontier
past an ATTACH or DETACH must already show it).
"""
import random
import signal
import subprocess
import threading
import time

import psycopg

from pgserver import (SCALE, Mirror, committed_past, iceberg_rows, pg_rows, pgdb,  # noqa
                      wait_until)
from rowgen import Col

COLS = {
    "r": [Col("id", "integer", True), Col("k", "date", True), Col("n", "integer")],
    "l": [Col("id", "integer", True), Col("region", "text", True), Col("note", "text")],
    "h": [Col("id", "integer", True), Col("v", "bigint")],
}
DDL = """
CREATE TABLE r (id int, k date, n int, PRIMARY KEY (id, k)) PARTITION BY RANGE (k);
CREATE TABLE r2020 PARTITION OF r FOR VALUES FROM ('2020-01-01') TO ('2021-01-01');
CREATE TABLE r2021 PARTITION OF r FOR VALUES FROM ('2021-01-01') TO ('2022-01-01');
CREATE TABLE r2022 PARTITION OF r FOR VALUES FROM ('2022-01-01') TO ('2023-01-01');
INSERT INTO r SELECT g, date '2020-01-01' + (g * 3) % 1000, g FROM generate_series(1, 900) g;

CREATE TABLE l (id int, region text, note text, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE l_eu PARTITION OF l FOR VALUES IN ('eu');
CREATE TABLE l_us PARTITION OF l FOR VALUES IN ('us');
CREATE TABLE l_asia PARTITION OF l FOR VALUES IN ('asia');
ALTER TABLE l REPLICA IDENTITY FULL;
ALTER TABLE l_eu REPLICA IDENTITY FULL;
ALTER TABLE l_us REPLICA IDENTITY FULL;
ALTER TABLE l_asia REPLICA IDENTITY FULL;
INSERT INTO l SELECT g, (ARRAY['eu', 'us', 'asia'])[g % 3 + 1], repeat('n' || g, 1 + g % 7)
  FROM generate_series(1, 600) g;
-- a value stored out of line: an update that leaves it alone
INSERT INTO l VALUES (1000, 'eu', (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 400) g));

CREATE TABLE h (id int PRIMARY KEY, v bigint) PARTITION BY HASH (id);
CREATE TABLE h0 PARTITION OF h FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE h1 PARTITION OF h FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE h2 PARTITION OF h FOR VALUES WITH (MODULUS 3, REMAINDER 2);
INSERT INTO h SELECT g, g * 10 FROM generate_series(1, 300) g;
"""
ALL = [f"public.{t}" for t in COLS]


def check_equal(db, m, tables=tuple(COLS)):
    for t in tables:
        want = pg_rows(db, t, COLS[t])
        for reader, rows in iceberg_rows(m, f"public.{t}", COLS[t]).items():
            assert rows == want, (t, reader, len(rows), len(want))


def settle(db, m, tables=tuple(COLS)):
    """Wait until every table committed past the WAL position now, then
    compare: the snapshots recording a frontier past a change show it."""
    end = db.horizon()
    wait_until(lambda: committed_past(m, [f"public.{t}" for t in tables], end),
               f"every table committed past {end:x}", timeout=180)
    check_equal(db, m, tables)


def log_has(path, text):
    with open(path) as f:
        return text in f.read()


def start(m, tmp_path, name):
    log = tmp_path / f"{name}.log"
    f = open(log, "w")
    p = m.popen("--commit-interval", "100ms", "--idle-commit-interval", "200ms", stderr=f,
                text=True)
    # streaming, and a round of commits (its partitions verified) behind it
    wait_until(lambda: log_has(log, "streaming from slot"), "floe streaming")
    end = m.db.horizon()
    wait_until(lambda: committed_past(m, m.tables, end), "a round of commits")
    return p, f, log


def stop(p, f):
    p.send_signal(signal.SIGINT)
    p.wait(timeout=300 * SCALE)
    f.close()
    assert p.returncode == 130, p.returncode


def test_partitioned_tables_are_copied_and_streamed(pgdb, tmp_path):
    pgdb.sql(DDL)
    m = Mirror(pgdb, tmp_path, ALL, "--create-publication")
    r = m.catch_up()
    assert "WITH (publish_via_partition_root = true)" in r.stderr, r.stderr
    assert "copied public.r: 900 rows" in r.stderr, r.stderr
    check_equal(pgdb, m)
    assert pgdb.sql("SELECT pubviaroot FROM pg_publication WHERE pubname = %s",
                    (pgdb.slot,)) == [(True,)]

    p, f, log = start(m, tmp_path, "run")
    try:
        # within a partition, across partitions (UPDATE of the partition key:
        # a DELETE and an INSERT of the root), inserted and moved in one
        # transaction, moved twice, deleted after a move
        pgdb.sql("UPDATE r SET n = -n WHERE id % 10 = 0")
        pgdb.sql("UPDATE r SET k = k + 365 WHERE id % 7 = 0 AND k < '2022-01-01'")
        pgdb.sql("BEGIN; INSERT INTO r VALUES (5000, '2020-06-01', 1);"
                 "UPDATE r SET k = '2022-06-01' WHERE id = 5000;"
                 "UPDATE r SET k = '2021-06-01', n = 2 WHERE id = 5000;"
                 "UPDATE r SET k = k + 366 WHERE id = 3; DELETE FROM r WHERE id = 3; COMMIT")
        pgdb.sql("UPDATE l SET region = 'us' WHERE region = 'eu' AND id % 5 = 0")
        pgdb.sql("UPDATE l SET region = 'asia', id = id + 10000 WHERE id % 11 = 0")
        pgdb.sql("UPDATE l SET region = 'us' WHERE id = 1000")      # the TOASTed value moves
        pgdb.sql("UPDATE l SET region = 'asia' WHERE id = 1000")
        pgdb.sql("DELETE FROM l WHERE id % 13 = 0")
        pgdb.sql("UPDATE h SET id = id + 1000 WHERE id % 4 = 0")    # moves between hash partitions
        pgdb.sql("UPDATE h SET v = -v WHERE id % 3 = 0")
        settle(pgdb, m)

        # a partition created while floe runs: once floe has seen it (empty,
        # taken in without a resync), rows inserted into it and moved into it
        # come through the root
        pgdb.sql("CREATE TABLE r2023 PARTITION OF r FOR VALUES FROM ('2023-01-01') TO "
                 "('2024-01-01')")
        wait_until(lambda: log_has(log, "public.r has a new partition"), "the new partition")
        pgdb.sql("INSERT INTO r SELECT g, date '2023-01-01' + (g - 2000), g FROM "
                 "generate_series(2000, 2100) g")
        pgdb.sql("UPDATE r SET k = k + 730 WHERE id BETWEEN 100 AND 150 AND k >= '2021-01-01' "
                 "AND k < '2022-01-01'")
        pgdb.sql("UPDATE r2023 SET n = 0 WHERE id < 2050")          # named by the partition
        settle(pgdb, m)
    finally:
        stop(p, f)
    text = open(log).read()
    assert "resync" not in text, text
    assert pg_rows(pgdb, "r2023", COLS["r"]), "rows moved into the new partition"
    check_equal(pgdb, m)


def wait_resynced(log, table, count):
    wait_until(lambda: open(log).read().count(f"resynced public.{table}:") >= count,
               f"resync {count} of {table}", timeout=180)


def test_attach_detach_drop_truncate_resync(pgdb, tmp_path):
    pgdb.sql(DDL)
    m = Mirror(pgdb, tmp_path, ALL, "--create-publication")
    m.catch_up()
    p, f, log = start(m, tmp_path, "run")
    try:
        # ATTACH a table that holds rows: no change in the stream
        pgdb.sql("CREATE TABLE r2030 (id int NOT NULL, k date NOT NULL, n int);"
                 "INSERT INTO r2030 SELECT g, date '2030-03-01', g FROM generate_series(1, 77) g")
        pgdb.sql("ALTER TABLE r ATTACH PARTITION r2030 FOR VALUES FROM ('2030-01-01') TO "
                 "('2031-01-01')")
        wait_resynced(log, "r", 1)
        assert log_has(log, "partition public.r2030 joined it holding rows")
        pgdb.sql("INSERT INTO r VALUES (9000, '2030-05-05', 1)")
        settle(pgdb, m)

        # DETACH: its rows leave the root
        pgdb.sql("ALTER TABLE r DETACH PARTITION r2020")
        pgdb.sql("INSERT INTO r2020 VALUES (9001, '2020-02-02', 1)")   # not r's any more
        wait_resynced(log, "r", 2)
        settle(pgdb, m)

        # TRUNCATE of one partition: Postgres sends nothing at all
        pgdb.sql("TRUNCATE l_us")
        wait_resynced(log, "l", 1)
        assert log_has(log, "partition public.l_us was truncated or rewritten")
        pgdb.sql("INSERT INTO l VALUES (7000, 'us', 'after')")
        settle(pgdb, m)

        # DROP of a partition
        pgdb.sql("DROP TABLE h1")
        wait_resynced(log, "h", 1)
        settle(pgdb, m)

        # TRUNCATE of the root is in the stream (with rows after it in the
        # same transaction)
        pgdb.sql("BEGIN; TRUNCATE h; INSERT INTO h SELECT g, g FROM generate_series(1, 30) g "
                 "WHERE NOT satisfies_hash_partition('h'::regclass, 3, 1, g); COMMIT")
        settle(pgdb, m)
        # its partitions' new relfilenodes are the stream's own TRUNCATE's
        # (the xid that rewrote them): no resync
        assert open(log).read().count("resynced public.h:") == 1
    finally:
        stop(p, f)

    # while floe is stopped: the next start sees the partitions changed
    pgdb.sql("ALTER TABLE l DETACH PARTITION l_asia")
    pgdb.sql("TRUNCATE r2021")
    pgdb.sql("UPDATE r SET n = 0 WHERE id < 500")
    r = m.catch_up()
    for t in ("l", "r"):
        assert f"public.{t}: its partitions changed since its last commit" in r.stderr, r.stderr
        assert f"resynced public.{t}:" in r.stderr, r.stderr
    assert "resynced public.h" not in r.stderr, r.stderr
    check_equal(pgdb, m)


class Mover(threading.Thread):
    """Transactions that insert, move rows between partitions and delete."""

    def __init__(self, dsn):
        super().__init__(daemon=True)
        self.dsn, self.stop, self.error, self.count = dsn, threading.Event(), None, 0

    def run(self):
        rnd = random.Random(7)
        try:
            with psycopg.connect(self.dsn, autocommit=True) as c:
                while not self.stop.is_set():
                    a = rnd.randrange(1, 1200)
                    with c.transaction():
                        d = rnd.randrange(0, 1090)
                        c.execute("UPDATE r SET k = date '2020-01-01' + %s WHERE id = %s AND NOT "
                                  "EXISTS (SELECT FROM r x WHERE x.id = %s AND x.k = date "
                                  "'2020-01-01' + %s)", (d, a, a, d))
                        c.execute("INSERT INTO r SELECT %s, date '2020-01-01' + %s, 0 WHERE "
                                  "NOT EXISTS (SELECT FROM r WHERE id = %s)",
                                  (a + 1000, rnd.randrange(0, 1090), a + 1000))
                        c.execute("UPDATE l SET region = (ARRAY['eu', 'us', 'asia'])[%s] "
                                  "WHERE id = %s", (rnd.randrange(1, 4), rnd.randrange(1, 600)))
                        b = rnd.randrange(1, 2000)
                        c.execute("UPDATE h SET id = id + 500, v = v + 1 WHERE id = %s AND NOT "
                                  "EXISTS (SELECT FROM h x WHERE x.id = %s)", (b, b + 500))
                        if rnd.random() < 0.2:
                            c.execute("DELETE FROM r WHERE id = %s", (rnd.randrange(1, 2200),))
                    self.count += 1
                    time.sleep(0.002)
        except Exception as e:              # noqa: BLE001 (reported by the test)
            self.error = e


def test_kill_while_rows_move_between_partitions(pgdb, tmp_path):
    pgdb.sql(DDL)
    m = Mirror(pgdb, tmp_path, ALL, "--create-publication")
    m.catch_up()
    w = Mover(pgdb.dsn)
    w.start()
    rnd = random.Random(3)
    try:
        for _ in range(10):
            p = m.popen("--commit-interval", "50ms", stderr=subprocess.DEVNULL)
            time.sleep(rnd.uniform(0.3, 1.5) * SCALE)
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=60)
            assert p.returncode == -signal.SIGKILL
    finally:
        w.stop.set()
        w.join(timeout=60)
    assert w.error is None, w.error
    assert w.count > 20, w.count
    m.catch_up()
    check_equal(pgdb, m)


def test_refusals_say_what_fixes_them(pgdb, tmp_path):
    pgdb.sql(DDL)
    pgdb.sql("CREATE PUBLICATION mine FOR TABLE r, l")
    m = Mirror(pgdb, tmp_path, ["public.r", "public.l"], "--publication", "mine")
    # a publication that publishes the partitions under their own names
    r = m.catch_up(check=False)
    assert r.returncode == 1, r
    fix = 'ALTER PUBLICATION "mine" SET (publish_via_partition_root = true)'
    assert "2 of the 2 tables cannot be mirrored" in r.stderr, r.stderr
    assert fix in r.stderr, r.stderr
    assert "publish_via_partition_root is off" in r.stderr, r.stderr
    assert pgdb.sql("SELECT count(*) FROM pg_replication_slots") == [(0,)]

    # a partition whose identity does not fit a FULL root, and a partition
    # named beside its root: every refusal at once
    pgdb.sql(fix)
    pgdb.sql("ALTER TABLE l_us REPLICA IDENTITY DEFAULT")
    m2 = Mirror(pgdb, tmp_path, ["public.r", "public.l", "public.r2021"], "--publication",
                "mine")
    r = m2.catch_up(check=False)
    assert r.returncode == 1, r
    assert "2 of the 3 tables cannot be mirrored" in r.stderr, r.stderr
    assert "partition public.l_us has REPLICA IDENTITY DEFAULT while public.l has FULL" \
        in r.stderr, r.stderr
    assert "ALTER TABLE public.l_us REPLICA IDENTITY FULL" in r.stderr, r.stderr
    assert "public.r2021 is a partition of public.r, which is mirrored too" in r.stderr, r.stderr

    # a partition alone, while the publication publishes it through its root
    r = Mirror(pgdb, tmp_path, ["public.r2021"], "--publication", "mine").catch_up(check=False)
    assert r.returncode == 2, r                 # --tables names what cannot be mirrored
    assert 'publishes it through public.r (publish_via_partition_root)' in r.stderr, r.stderr

    # following the advice works
    pgdb.sql("ALTER TABLE public.l_us REPLICA IDENTITY FULL")
    r = m.catch_up()
    pgdb.sql("UPDATE r SET k = k + 365 WHERE id < 100 AND k < '2022-01-01';"
             "UPDATE l SET region = 'eu' WHERE id < 100")
    m.catch_up()
    check_equal(pgdb, m, ("r", "l"))


def test_create_publication_sets_publish_via_root(pgdb, tmp_path):
    pgdb.sql(DDL)
    pgdb.sql("CREATE TABLE plain (id int PRIMARY KEY)")
    pgdb.sql(f'CREATE PUBLICATION "{pgdb.slot}" FOR TABLE plain')
    m = Mirror(pgdb, tmp_path, ["public.h", "public.plain"], "--create-publication")
    r = m.catch_up()
    assert f'ALTER PUBLICATION "{pgdb.slot}" SET (publish_via_partition_root = true)' \
        in r.stderr, r.stderr
    pgdb.sql("UPDATE h SET id = id + 1000 WHERE id < 50; INSERT INTO plain VALUES (1)")
    m.catch_up()
    check_equal(pgdb, m, ("h",))


def test_a_partition_added_with_an_identity_that_does_not_fit(pgdb, tmp_path):
    """A FULL root's new partition starts at DEFAULT: its old rows would come
    with the key only.  The mirror stops with the statement that fixes it,
    and the next run copies the table again."""
    pgdb.sql(DDL)
    m = Mirror(pgdb, tmp_path, ["public.l"], "--create-publication")
    m.catch_up()
    p, f, log = start(m, tmp_path, "run")
    pgdb.sql("CREATE TABLE l_af PARTITION OF l FOR VALUES IN ('af')")
    try:
        p.wait(timeout=120 * SCALE)
    finally:
        if p.returncode is None:
            p.kill()
        f.close()
    text = open(log).read()
    assert p.returncode == 1, text
    assert "partition public.l_af, added while floe ran, has REPLICA IDENTITY DEFAULT while " \
        "public.l has FULL: run ALTER TABLE public.l_af REPLICA IDENTITY FULL" in text, text
    pgdb.sql("INSERT INTO l VALUES (1, 'af', 'x'), (2, 'af', 'y')")
    pgdb.sql("ALTER TABLE public.l_af REPLICA IDENTITY FULL")
    pgdb.sql("UPDATE l SET note = 'z' WHERE region = 'af'; UPDATE l SET region = 'af' WHERE id = 3")
    r = m.catch_up()
    assert "public.l: its partitions changed since its last commit" in r.stderr, r.stderr
    check_equal(pgdb, m, ("l",))
