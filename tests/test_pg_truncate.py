"""TRUNCATE on a live Postgres, mirrored: the snapshot that holds the
TRUNCATE's transaction removes every file of each truncated table (no row
is read) and adds what the transaction wrote after it; the snapshots before
it still read the old rows; the key index starts again from the rows that
are left (a key truncated and inserted again is neither a duplicate nor
deleted by a stale position).  Alone, several tables in one statement,
CASCADE, RESTART IDENTITY, twice in one transaction with rows between,
while floe runs and while it is stopped.  Under SIGKILLs: test_pg_kill.py's
writer truncates now and then.
"""
import signal
import subprocess

from pgserver import (SCALE, Mirror, committed_past, iceberg_rows, lsn_int, pg_rows,  # noqa
                      pgdb, snapshots, frontier_of, wait_until)
from rowgen import Col

COLS = {
    "a": [Col("id", "integer", True), Col("v", "text")],
    "b": [Col("id", "integer", True), Col("v", "integer")],
    "c": [Col("id", "integer", True), Col("a_id", "integer")],
    "s": [Col("id", "integer", True), Col("v", "text")],
}
DDL = """
CREATE TABLE a (id int PRIMARY KEY, v text);
ALTER TABLE a REPLICA IDENTITY FULL;
CREATE TABLE b (id int PRIMARY KEY, v int);
CREATE TABLE c (id int PRIMARY KEY, a_id int REFERENCES a (id));
CREATE TABLE s (id serial PRIMARY KEY, v text);
ALTER TABLE s REPLICA IDENTITY FULL;
INSERT INTO a SELECT g, 'a' || g FROM generate_series(1, 2000) g;
INSERT INTO b SELECT g, g FROM generate_series(1, 300) g;
INSERT INTO c SELECT g, g FROM generate_series(1, 100) g;
INSERT INTO s (v) SELECT 's' || g FROM generate_series(1, 50) g;
"""


def check_equal(db, m, tables=COLS, readers_=("duckdb", "pyiceberg")):
    for t in tables:
        want = pg_rows(db, t, COLS[t])
        for reader, rows in iceberg_rows(m, f"public.{t}", COLS[t], readers_=readers_).items():
            assert rows == want, (t, reader)


def truncating(m, t, since):
    """The snapshots of t committed after `since` (a count) whose commit
    removed every data file the table had."""
    out = []
    snaps = snapshots(m, f"public.{t}")
    for i in range(max(since, 1), len(snaps)):
        summ, prev = snaps[i][1], snaps[i - 1][1]
        if int(summ.get("deleted-data-files", 0)) and \
                int(summ["deleted-data-files"]) == int(prev.get("total-data-files", 0)):
            out.append(snaps[i])
    return out


def test_truncate_is_mirrored_at_its_place_in_the_stream(pgdb, tmp_path):
    pgdb.sql(DDL)
    m = Mirror(pgdb, tmp_path, [f"public.{t}" for t in COLS], "--create-publication")
    m.catch_up()
    seen = {t: len(snapshots(m, f"public.{t}")) for t in COLS}
    before = {t: pg_rows(pgdb, t, COLS[t]) for t in COLS}

    # Rows written before it in the same transaction go too; rows after it
    # stay, the keys it removed come back as new rows, and are updated.
    before_lsn = lsn_int(pgdb.lsn())
    pgdb.sql("BEGIN; INSERT INTO a VALUES (5000, 'gone'); UPDATE a SET v = 'x' WHERE id = 7;"
             "TRUNCATE a, b, c;"
             "INSERT INTO a VALUES (7, 'seven'), (8, 'eight'), (9, 'nine');"
             "UPDATE a SET v = 'eight!' WHERE id = 8; DELETE FROM a WHERE id = 9;"
             "INSERT INTO b VALUES (1, -1), (2, -2); UPDATE b SET v = 0 WHERE id = 2; COMMIT")
    after_lsn = lsn_int(pgdb.lsn())
    pgdb.sql("UPDATE a SET v = 'seven!' WHERE id = 7; DELETE FROM b WHERE id = 1;"
             "INSERT INTO a VALUES (10, 'ten')")
    r = m.catch_up()
    assert "3 truncates" in r.stderr, r.stderr
    check_equal(pgdb, m, readers_=("duckdb", "pyiceberg", "java"))
    assert pg_rows(pgdb, "a", COLS["a"]) == sorted([(7, "seven!"), (8, "eight!"), (10, "ten")],
                                                   key=repr)
    for t in ("a", "b", "c"):
        (sid, summ), = truncating(m, t, seen[t])
        f = frontier_of(summ)
        assert before_lsn < f, (t, f)
        assert summ["operation"] == ("delete" if t == "c" else "overwrite"), summ
        assert int(summ["deleted-records"]) >= len(before[t]), summ
        # the snapshot before it still reads what the table held
        snaps = snapshots(m, f"public.{t}")
        prev = [s for s, _ in snaps][[s for s, _ in snaps].index(sid) - 1]
        assert iceberg_rows(m, f"public.{t}", COLS[t], prev)["duckdb"] == before[t]
    assert truncating(m, "s", seen["s"]) == []
    assert frontier_of(snapshots(m, "public.a")[-1][1]) >= after_lsn

    # CASCADE reaches c through its foreign key; RESTART IDENTITY; a table
    # truncated to nothing commits a `delete`.  This time floe is running.
    pgdb.sql("INSERT INTO c VALUES (1, 7), (2, 8)")
    m.catch_up()
    seen = {t: len(snapshots(m, f"public.{t}")) for t in COLS}
    p = m.popen("--commit-interval", "100ms", "--idle-commit-interval", "300ms",
                stderr=subprocess.PIPE, text=True)
    pgdb.sql("TRUNCATE a CASCADE")
    pgdb.sql("TRUNCATE s RESTART IDENTITY; INSERT INTO s (v) VALUES ('first')")
    pgdb.sql("INSERT INTO a VALUES (1, 'one'); INSERT INTO c VALUES (1, 1)")
    end = pgdb.horizon()
    wait_until(lambda: committed_past(m, [f"public.{t}" for t in COLS], end),
               "every table committed past the last transaction")
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=300 * SCALE)
    assert p.returncode == 130, err
    check_equal(pgdb, m)
    assert pg_rows(pgdb, "s", COLS["s"]) == [(1, "first")]
    for t in ("a", "c", "s"):
        assert len(truncating(m, t, seen[t])) == 1, t
    assert truncating(m, "b", seen["b"]) == []


def test_truncates_in_one_transaction_and_while_stopped(pgdb, tmp_path):
    pgdb.sql(DDL)
    m = Mirror(pgdb, tmp_path, ["public.a", "public.b"], "--create-publication")
    m.catch_up()
    seen = len(snapshots(m, "public.a"))
    # floe is stopped: the slot keeps the transactions for the next run
    # (CASCADE reaches c, which is not mirrored)
    pgdb.sql("BEGIN; INSERT INTO a VALUES (3000, 'x'); TRUNCATE a CASCADE; INSERT INTO a VALUES "
             "(1, 'y'), (2, 'z'); TRUNCATE a CASCADE; INSERT INTO a VALUES (2, 'last');"
             "UPDATE b SET v = 0; COMMIT")
    pgdb.sql("BEGIN; TRUNCATE b; ROLLBACK")                    # never visible
    pgdb.sql("UPDATE a SET v = 'last!' WHERE id = 2")
    r = m.catch_up()
    assert "2 truncates" in r.stderr, r.stderr
    check_equal(pgdb, m, ("a", "b"), readers_=("duckdb", "pyiceberg", "java"))
    assert pg_rows(pgdb, "a", COLS["a"]) == [(2, "last!")]
    assert len(truncating(m, "a", seen)) == 1
