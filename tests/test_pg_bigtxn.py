"""Large transactions in bounded memory: pgoutput protocol 2 with
`streaming 'on'`.  The walsender of these tests runs with
logical_decoding_work_mem = 64kB (set through the connection's options), so
any transaction of more than a few hundred rows comes while it is still in
progress, in stream blocks that floe writes to a spill file and replays at
the Stream Commit.

  - a streamed transaction (inserts, updates of a key twice, deletes, a
    key moved, rows of two tables, REPLICA IDENTITY DEFAULT and FULL) is
    mirrored exactly (DuckDB and pyiceberg read the Iceberg tables);
  - an aborted streamed transaction is never visible;
  - a subtransaction rolled back (ROLLBACK TO SAVEPOINT, nested too) loses
    exactly its rows, the rest commits;
  - two sessions' streamed transactions interleaved, and small
    transactions between their blocks, all land;
  - floe killed (SIGKILL) while a transaction is half streamed, or after
    it was replayed but before its commit into Iceberg, then run again:
    the exact result (the slot sends the transaction again);
  - --txn-streaming off still mirrors (protocol 1);
  - the metrics count streamed transactions, aborts and spill bytes.
"""
import copy
import signal
import subprocess
import time
import urllib.request

import psycopg

from pgserver import SCALE, Mirror, iceberg_rows, pg_rows, pgdb, wait_until  # noqa: F401
from rowgen import Col
from conftest import free_port

COLS = {
    "big": [Col("id", "integer", True), Col("a", "integer"), Col("t", "text")],
    "bfull": [Col("id", "integer", True), Col("v", "integer")],
}
DDL = """
CREATE TABLE big (id int PRIMARY KEY, a int, t text);
CREATE TABLE bfull (id int PRIMARY KEY, v int);
ALTER TABLE bfull REPLICA IDENTITY FULL;
INSERT INTO big SELECT g, g, 'seed' || g FROM generate_series(1, 100) g;
INSERT INTO bfull SELECT g, g FROM generate_series(1, 100) g;
"""
SMALL_WORK_MEM = "?options=-c%20logical_decoding_work_mem%3D64kB"


def streaming_db(db):
    """db, with floe's connections asking for a 64kB logical_decoding_work_mem."""
    d = copy.copy(db)
    d.url = db.url + SMALL_WORK_MEM
    return d


def mirror(pgdb, tmp_path, *extra):
    pgdb.sql(DDL)
    m = Mirror(streaming_db(pgdb), tmp_path, ["public.big", "public.bfull"],
               "--create-publication", *extra)
    m.catch_up()
    return m


def check_equal(db, m, tables=COLS):
    for t in tables:
        want = pg_rows(db, t, COLS[t])
        for reader, rows in iceberg_rows(m, f"public.{t}", COLS[t]).items():
            assert rows == want, (t, reader, len(rows), len(want))


def streamed(stderr):
    """(streamed transactions, aborted) from floe's summary line."""
    for line in stderr.splitlines():
        if " streamed transactions (" in line:
            head, tail = line.split(" streamed transactions (")
            return int(head.rsplit(" ", 1)[1]), int(tail.split(" ", 1)[0])
    return 0, 0


BIG_TXN = """
BEGIN;
INSERT INTO big SELECT g, g, repeat('x', 20) || g FROM generate_series(1000, 6000) g;
UPDATE big SET a = -a WHERE id BETWEEN 1000 AND 1500;
UPDATE big SET a = a - 1, t = 'twice' WHERE id BETWEEN 1000 AND 1200;
DELETE FROM big WHERE id BETWEEN 5000 AND 5100;
UPDATE big SET id = id + 100000 WHERE id BETWEEN 1 AND 20;
UPDATE big SET a = 7 WHERE id = 100003;
INSERT INTO big VALUES (9000000, 1, 'gone');
DELETE FROM big WHERE id = 9000000;
INSERT INTO bfull SELECT g, g FROM generate_series(1000, 4000) g;
UPDATE bfull SET v = v * 2 WHERE id BETWEEN 1000 AND 2000;
UPDATE bfull SET v = v + 1 WHERE id BETWEEN 1000 AND 1100;
DELETE FROM bfull WHERE id BETWEEN 3000 AND 3500;
COMMIT;
"""


def test_a_streamed_transaction_is_mirrored_exactly(pgdb, tmp_path):
    m = mirror(pgdb, tmp_path)
    pgdb.sql(BIG_TXN)
    pgdb.sql("UPDATE big SET t = 'after' WHERE id = 1001")      # a small one after it
    r = m.catch_up()
    assert streamed(r.stderr) == (1, 0), r.stderr
    check_equal(pgdb, m)


def test_an_aborted_streamed_transaction_is_never_visible(pgdb, tmp_path):
    m = mirror(pgdb, tmp_path)
    with pgdb.conn() as c:
        c.execute("BEGIN")
        c.execute("INSERT INTO big SELECT g, g, 'no' FROM generate_series(1000, 5000) g")
        c.execute("UPDATE big SET t = 'no' WHERE id <= 100")
        c.execute("ROLLBACK")
    pgdb.sql("INSERT INTO big VALUES (500, 500, 'yes')")
    r = m.catch_up()
    assert streamed(r.stderr) == (0, 1), r.stderr
    check_equal(pgdb, m)
    assert len(pg_rows(pgdb, "big", COLS["big"])) == 101


def test_rolled_back_subtransactions_lose_exactly_their_rows(pgdb, tmp_path):
    m = mirror(pgdb, tmp_path)
    with pgdb.conn() as c:
        c.execute("BEGIN")
        c.execute("INSERT INTO big SELECT g, g, 'top' FROM generate_series(1000, 3000) g")
        c.execute("SAVEPOINT s1")
        c.execute("INSERT INTO big SELECT g, g, 's1' FROM generate_series(3001, 5000) g")
        c.execute("UPDATE big SET t = 's1' WHERE id BETWEEN 1000 AND 1500")
        c.execute("DELETE FROM big WHERE id BETWEEN 1 AND 50")
        c.execute("ROLLBACK TO SAVEPOINT s1")
        c.execute("UPDATE big SET t = 'top2' WHERE id BETWEEN 1400 AND 1600")
        c.execute("SAVEPOINT s2")
        c.execute("INSERT INTO big SELECT g, g, 's2' FROM generate_series(6001, 7000) g")
        c.execute("SAVEPOINT s3")
        c.execute("INSERT INTO big SELECT g, g, 's3' FROM generate_series(7001, 9000) g")
        c.execute("ROLLBACK TO SAVEPOINT s2")               # s3 and s2 both go
        c.execute("SAVEPOINT s4")
        c.execute("INSERT INTO big SELECT g, g, 's4' FROM generate_series(9001, 11000) g")
        c.execute("RELEASE SAVEPOINT s4")                   # s4 stays
        c.execute("INSERT INTO bfull SELECT g, g FROM generate_series(1000, 2000) g")
        c.execute("COMMIT")
    r = m.catch_up()
    assert streamed(r.stderr) == (1, 0), r.stderr
    check_equal(pgdb, m)
    ts = {row[2] for row in pg_rows(pgdb, "big", COLS["big"])}
    assert "s1" not in ts and "s2" not in ts and "s3" not in ts and "s4" in ts


def test_interleaved_streamed_transactions_of_two_sessions(pgdb, tmp_path):
    m = mirror(pgdb, tmp_path)
    a = psycopg.connect(pgdb.dsn)
    b = psycopg.connect(pgdb.dsn)
    try:
        for i in range(6):
            a.execute("INSERT INTO big SELECT g, g, 'a' FROM generate_series(%s::int, %s::int) g",
                      (10000 + i * 1000, 10999 + i * 1000))
            b.execute("INSERT INTO big SELECT g, g, 'b' FROM generate_series(%s::int, %s::int) g",
                      (50000 + i * 1000, 50999 + i * 1000))
            b.execute("UPDATE big SET t = 'b' || %s WHERE id BETWEEN 1 AND 10", (str(i),))
            pgdb.sql(f"INSERT INTO bfull VALUES ({1000 + i}, {i})")   # small, between blocks
        b.commit()
        a.execute("UPDATE big SET a = -a WHERE id BETWEEN 10000 AND 10500")
        a.commit()
    finally:
        a.close()
        b.close()
    r = m.catch_up()
    assert streamed(r.stderr) == (2, 0), r.stderr
    check_equal(pgdb, m)


def metrics_of(port):
    """The metrics summed over labels ({} while floe is not serving them yet)."""
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                      timeout=10).read().decode()
    except OSError:                          # refused, or 503 while it opens the tables
        return {}
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name.split("{")[0]] = out.get(name.split("{")[0], 0) + float(value)
    return out




def test_kill_while_streaming_then_rerun_is_exact_and_metrics_count(pgdb, tmp_path):
    m = mirror(pgdb, tmp_path)
    port = free_port()
    c = psycopg.connect(pgdb.dsn)
    try:
        # 1. killed while a transaction is half streamed (spilled, not committed)
        p = m.popen("--commit-interval", "200ms", "--metrics-addr", f"127.0.0.1:{port}",
                    stderr=subprocess.DEVNULL)
        c.execute("INSERT INTO big SELECT g, g, 'k1' FROM generate_series(1000, 6000) g")
        wait_until(lambda: metrics_of(port).get("floe_pg_spill_bytes", 0) > 0,
                   "a spilled transaction", timeout=60)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=60 * SCALE)
        c.execute("UPDATE big SET t = 'k1b' WHERE id BETWEEN 1000 AND 2000")
        c.commit()
        # 2. killed after the replay of a streamed transaction, before its commit
        p = m.popen("--commit-interval", "60m", "--metrics-addr", f"127.0.0.1:{port}",
                    stderr=subprocess.DEVNULL)
        wait_until(lambda: metrics_of(port).get("floe_pg_streamed_transactions_total", 0) >= 1,
                   "the streamed transaction replayed", timeout=120)
        mt = metrics_of(port)
        assert mt["floe_pg_spill_bytes"] == 0 and mt["floe_pg_streamed_aborts_total"] == 0
        c.execute("INSERT INTO big SELECT g, g, 'k2' FROM generate_series(7000, 9000) g")
        c.rollback()
        wait_until(lambda: metrics_of(port).get("floe_pg_streamed_aborts_total", 0) >= 1,
                   "the streamed abort", timeout=60)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=60 * SCALE)
    finally:
        c.close()
    r = m.catch_up()
    assert streamed(r.stderr)[0] == 1, r.stderr
    check_equal(pgdb, m)


def test_txn_streaming_off_still_mirrors(pgdb, tmp_path):
    m = mirror(pgdb, tmp_path, "--txn-streaming", "off")
    pgdb.sql(BIG_TXN)
    r = m.catch_up()
    assert streamed(r.stderr) == (0, 0), r.stderr
    check_equal(pgdb, m)
    r = m.run("--txn-streaming", "maybe", check=False)
    assert r.returncode != 0 and "--txn-streaming takes on or off" in r.stderr
