"""The lifecycle of a `floe pg` mirror on a live Postgres (docs/postgres.md,
"Dropping tables and retiring a mirror"), and its small defects:

- `--drop-table` takes tables out of floe's publication (or prints the
  ALTER PUBLICATION that does, which the test runs), keeps the Iceberg
  table (or drops it and its files with --purge), and the next run neither
  copies it nor is held back by it; listed again, a kept table is copied
  again in place (its history kept), a purged one afresh.  Refused while
  a floe pg streams from the slot.
- `--retire` commits everything up to now, drops the slot and floe's
  publication; the next run is refused with advice (--new-mirror) that
  works: every table copied again in place, equal to Postgres.
- A stored generated column (Postgres 15's pgoutput does not send them) is
  left out with a warning; the other columns equal Postgres.
- Two floe pg processes copying the same new table into one catalog: the
  loser says so in the mirror's terms.
- Messages name Postgres types as Postgres does (format_type).

Every table is read back with DuckDB and pyiceberg and compared with
psycopg's reading of Postgres.
"""
import glob
import os
import re
import signal
import subprocess

import psycopg

from pgserver import (SCALE, Mirror, committed_past, iceberg_rows, lsn_int, pg_rows,  # noqa
                      pgdb, snapshots, frontier_of, wait_until)
from rowgen import Col

COLS = [Col("id", "integer", True), Col("v", "integer")]
DDL = """
CREATE TABLE a (id int PRIMARY KEY, v int);
CREATE TABLE b (id int PRIMARY KEY, v int);
CREATE TABLE c (id int PRIMARY KEY, v int);
INSERT INTO a SELECT g, g FROM generate_series(1, 300) g;
INSERT INTO b SELECT g, g FROM generate_series(1, 200) g;
INSERT INTO c SELECT g, g FROM generate_series(1, 100) g;
"""


def write(db, v):
    db.sql(f"UPDATE a SET v = {v} WHERE id % 7 = 0; UPDATE b SET v = {v} WHERE id % 5 = 0;"
           f"UPDATE c SET v = {v} WHERE id % 3 = 0; DELETE FROM a WHERE id = {v};"
           f"INSERT INTO b VALUES ({1000 + v}, {v})")


def equal(db, m, t, cols=COLS):
    want = pg_rows(db, t, cols)
    for reader, rows in iceberg_rows(m, f"public.{t}", cols).items():
        assert rows == want, (t, reader)


def published(db):
    return sorted(r[0] for r in db.sql("SELECT tablename FROM pg_publication_tables WHERE "
                                       "pubname = %s", (db.slot,)))


def iceberg_exists(m, ident):
    from iceberg_readers import pyiceberg_catalog
    return pyiceberg_catalog(m.catalog, f"file://{m.wh}").table_exists(ident)


def slot_row(db):
    rows = db.sql("SELECT confirmed_flush_lsn::text, active FROM pg_replication_slots WHERE "
                  "slot_name = %s", (db.slot,))
    return rows[0] if rows else None


def test_drop_table_keeps_or_purges_and_the_next_runs(pgdb, tmp_path):
    pgdb.sql(DDL)
    m = Mirror(pgdb, tmp_path, ["public.a", "public.b", "public.c"], "--create-publication")
    m.catch_up()
    write(pgdb, 10)
    m.catch_up()
    assert published(pgdb) == ["a", "b", "c"]
    b_rows = pg_rows(pgdb, "b", COLS)
    b_snaps = snapshots(m, "public.b")
    c_files = glob.glob(f"{m.wh}/public/c/**/*", recursive=True)
    assert any(f.endswith(".parquet") for f in c_files)

    # A floe pg streaming from the slot: refused, nothing changed.
    d = Mirror(pgdb, tmp_path, None, "--create-publication")
    p = m.popen("--commit-interval", "200ms", stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: (slot_row(pgdb) or (0, False))[1], "the slot in use")
        r = d.run("--drop-table", "public.b", check=False)
        assert r.returncode == 1, r
        assert "is in use" in r.stderr and "Stop it first" in r.stderr, r.stderr
        assert published(pgdb) == ["a", "b", "c"]
    finally:
        p.send_signal(signal.SIGINT)
        p.wait(timeout=120 * SCALE)

    # b kept, c purged: both leave floe's publication.
    r = d.run("--drop-table", "public.b")
    assert "public.b is no longer mirrored; its Iceberg table public.b stays" in r.stderr, r
    assert f'ALTER PUBLICATION "{pgdb.slot}" DROP TABLE "public"."b"' in r.stderr, r
    r = d.run("--drop-table", "public.c", "--purge")
    assert "its Iceberg table public.c was dropped and its" in r.stderr, r
    assert "copied afresh" in r.stderr, r
    assert published(pgdb) == ["a"]
    assert iceberg_exists(m, "public.b") and not iceberg_exists(m, "public.c")
    assert [f for f in c_files if os.path.exists(f) and os.path.isfile(f)] == []
    for reader, rows in iceberg_rows(m, "public.b", COLS).items():
        assert rows == b_rows, reader

    # The next run mirrors a alone: b is not copied and does not hold the
    # slot back (its frontier stays behind the slot's confirmed LSN).
    write(pgdb, 20)
    ma = Mirror(pgdb, tmp_path, ["public.a"], "--create-publication")
    r = ma.catch_up()
    assert "public.b" not in r.stderr and "public.c" not in r.stderr, r.stderr
    equal(pgdb, ma, "a")
    b_frontier = frontier_of(snapshots(m, "public.b")[-1][1])
    assert lsn_int(slot_row(pgdb)[0]) > b_frontier
    assert snapshots(m, "public.b") == b_snaps
    assert published(pgdb) == ["a"]

    # Listed again: b is copied again in place (its history kept), c afresh.
    write(pgdb, 30)
    r = m.catch_up()
    assert "listed again after floe pg --drop-table" in r.stderr, r.stderr
    assert "public.c -> public.c: new to this mirror, copied first" in r.stderr, r.stderr
    for t in ("a", "b", "c"):
        equal(pgdb, m, t)
    after = snapshots(m, "public.b")
    assert after[:len(b_snaps)] == b_snaps and len(after) > len(b_snaps)
    assert published(pgdb) == ["a", "b", "c"]

    # A publication floe does not manage: the statement it prints works.
    write(pgdb, 40)
    m.catch_up()
    r = Mirror(pgdb, tmp_path, None).run("--drop-table", "public.a")
    stmt = f'ALTER PUBLICATION "{pgdb.slot}" DROP TABLE "public"."a"'
    assert f"run {stmt}" in r.stderr, r.stderr
    assert published(pgdb) == ["a", "b", "c"]
    pgdb.sql(stmt)
    assert published(pgdb) == ["b", "c"]


def test_retire_then_new_mirror(pgdb, tmp_path):
    pgdb.sql(DDL)
    m = Mirror(pgdb, tmp_path, ["public.a", "public.b"], "--create-publication")
    m.catch_up()
    kept = {t: snapshots(m, f"public.{t}") for t in ("a", "b")}
    write(pgdb, 10)                     # committed by the retire itself
    r = m.run("--retire", "--commit-interval", "200ms")
    assert "retired: replication slot" in r.stderr, r.stderr
    assert "--new-mirror" in r.stderr, r.stderr
    assert slot_row(pgdb) is None
    assert pgdb.sql("SELECT count(*) FROM pg_publication WHERE pubname = %s",
                    (pgdb.slot,))[0][0] == 0
    for t in ("a", "b"):
        equal(pgdb, m, t)

    # Run again: refused with advice, which works.
    write(pgdb, 20)
    r = m.catch_up(check=False)
    assert r.returncode == 1, r
    assert f"replication slot {pgdb.slot} does not exist" in r.stderr, r.stderr
    assert "pass --new-mirror" in r.stderr, r.stderr
    assert slot_row(pgdb) is None
    r = m.catch_up("--new-mirror")
    for t in ("a", "b"):
        equal(pgdb, m, t)
        after = snapshots(m, f"public.{t}")
        assert after[:len(kept[t])] == kept[t], t          # the history stays
        assert "overwrite" in [s["operation"] for _, s in after[len(kept[t]):]], t
    assert slot_row(pgdb) is not None


def test_generated_columns_are_left_out_with_a_warning(pgdb, tmp_path):
    pgdb.sql("CREATE TABLE g (id int PRIMARY KEY, v int, twice int GENERATED ALWAYS AS (v * 2) "
             "STORED, w bigint, label text GENERATED ALWAYS AS ('#' || id) STORED);"
             "ALTER TABLE g REPLICA IDENTITY FULL;"
             "INSERT INTO g (id, v, w) SELECT i, i, -i FROM generate_series(1, 500) i")
    cols = [Col("id", "integer", True), Col("v", "integer"), Col("w", "bigint")]
    m = Mirror(pgdb, tmp_path, ["public.g"], "--create-publication")
    r = m.catch_up()
    warning = ('floe: warning: public.g: generated columns "twice", "label" are left out of '
               'the Iceberg table')
    assert warning in r.stderr, r.stderr
    # the stream, a restart (the warning again) and the copy agree
    pgdb.sql("UPDATE g SET v = v + 1 WHERE id % 3 = 0; DELETE FROM g WHERE id % 11 = 0;"
             "INSERT INTO g (id, v, w) VALUES (1000, 7, 8)")
    r = m.catch_up()
    assert warning in r.stderr, r.stderr
    equal(pgdb, m, "g", cols)
    schema = m.pyiceberg_table("public.g").schema()
    assert [f.name for f in schema.fields] == ["id", "v", "w"]


def temp_slots(db):
    return db.sql("SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'floe_copy_%%' "
                  "AND database = %s", (db.name,))[0][0]


def test_two_processes_copying_one_new_table(pgdb, tmp_path):
    """Table b is added to a running mirror's --tables by two processes at
    once (the same command started twice).  A transaction holding a
    transaction id keeps both in the creation of their temporary slots, so
    both have opened b (with nothing committed) before either copies it;
    then both copy and commit, and whichever commits second loses, with
    the mirror's message (not the commit layer's "main was rolled back"),
    unless both copies were read at the same point."""
    pgdb.sql(DDL)
    pgdb.sql(f'CREATE PUBLICATION "{pgdb.slot}" FOR TABLE a, b')
    Mirror(pgdb, tmp_path, ["public.a"]).catch_up()
    pgdb.sql("UPDATE b SET v = -v WHERE id < 50")
    m = Mirror(pgdb, tmp_path, ["public.a", "public.b"])
    stop = pgdb.lsn()
    hold = psycopg.connect(pgdb.dsn)
    hold.execute("SELECT txid_current()")              # a running transaction with an xid
    procs = []
    try:
        for k in (1, 2):
            procs.append(m.popen("--stop-at", stop, "--commit-interval", "200ms",
                                 stderr=subprocess.PIPE, text=True))
            wait_until(lambda: temp_slots(pgdb) == k, f"process {k} creating its slot")
        assert all(p.poll() is None for p in procs)
        hold.commit()
        out = [p.communicate(timeout=300 * SCALE) for p in procs]
    finally:
        hold.close()
        for p in procs:
            if p.poll() is None:
                p.kill()
    codes = sorted(p.returncode for p in procs)
    points = [re.search(r"consistent at (\S+)", e) for _, e in out]
    assert all(points), out
    assert codes in ([0, 0], [0, 1]), out
    loser = next((e for p, (_, e) in zip(procs, out) if p.returncode == 1), None)
    if points[0].group(1) == points[1].group(1):
        # both slots became consistent at one point (a busy machine lets both
        # read the same record): the two copies hold the same rows, so the
        # second commit of b changes nothing; a loser, if any, is fenced by
        # the other's later commit (of a or b)
        assert loser is None or "run again to resume there" in loser \
            or "another floe pg process is mirroring" in loser, out
    else:
        assert codes == [0, 1], out
        assert "another floe pg process is mirroring public.b into public.b in the same " \
            "catalog" in loser, loser
        assert "rolled back" not in loser, loser
    for t in ("a", "b"):
        equal(pgdb, m, t)
    # the loser's command, run again, resumes from the winner's commit
    r = m.catch_up()
    assert "public.b -> public.b: resuming at" in r.stderr, r.stderr
    for t in ("a", "b"):
        equal(pgdb, m, t)


def test_messages_name_postgres_types_as_postgres_does(pgdb, tmp_path):
    pgdb.sql("CREATE TABLE ty (id int PRIMARY KEY, o oid, s varchar(20), ts timestamptz);"
             "ALTER TABLE ty REPLICA IDENTITY FULL;"
             "INSERT INTO ty SELECT g, g, 's' || g, '2026-01-01' FROM generate_series(1, 50) g;"
             "CREATE VIEW tv AS SELECT id FROM ty")
    m = Mirror(pgdb, tmp_path, ["public.ty"], "--create-publication")
    m.catch_up()
    # while floe runs (it knows the old types: a DDL made while it is
    # stopped is compared with the catalog, which no longer has them)
    p = m.popen("--commit-interval", "100ms", stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: (slot_row(pgdb) or (0, False))[1], "streaming")
        pgdb.sql("ALTER TABLE ty ALTER COLUMN o TYPE integer, ALTER COLUMN s TYPE bigint USING "
                 "length(s), ALTER COLUMN ts TYPE timestamp;"
                 "INSERT INTO ty VALUES (100, 1, 2, '2026-02-02')")
        end = pgdb.horizon()
        wait_until(lambda: committed_past(m, ["public.ty"], end), "the resync committed")
    finally:
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=120 * SCALE)
    for words in ('"o" oid -> integer', '"s" character varying(20) -> bigint',
                  '"ts" timestamp with time zone -> timestamp without time zone'):
        assert words in err, (words, err)
    assert "uint4" not in err, err                          # floe's own name for oid
    equal(pgdb, m, "ty", [Col("id", "integer", True), Col("o", "integer"), Col("s", "bigint")])
    r = Mirror(pgdb, tmp_path / "v", ["public.tv"], "--create-publication").run(
        "--stop-at", "now", check=False)
    assert r.returncode == 1 and "public.tv is a view, not a table" in r.stderr, r
    assert "relkind" not in r.stderr, r.stderr
