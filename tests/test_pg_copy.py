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
  - kills during ranged copies (--copy-workers 2) while a writer changes
    the tables (rows widened onto other pages, keys changed, deleted and
    inserted again), for a keyed table and a keyless one: each rerun copies
    the tables without a commit inside a temporary slot's snapshot, the
    keyed one resumed from the ranges staged on the branch floe-copy (only
    the other ranges and the keys changed since are read from Postgres;
    a kill during the resume leaves the staged ranges as they were), the
    keyless one whole; each table's first snapshot equals the source at its
    frontier, no key twice, and the branch is gone once main holds the copy;
  - a value a worker cannot convert stops every worker and commits nothing;
  - --copy-workers 1 (one connection, one range per table).
"""
import json
import random
import re
import sqlite3
import signal
import subprocess
import threading
import time

import psycopg
import pytest

from iceberg_readers import duckdb_snapshot_rows

from pgserver import (SCALE, Mirror, Run, commit_bracketed, iceberg_rows, lsn_int,  # noqa
                      pg_rows, pgdb, snapshots, frontier_of)
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
    m.catch_up()                  # the index loaded in sorted runs too
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


# ---- kills during ranged copies while a writer changes the tables -----------------------------

RK = [Col("id", "integer", True), Col("v", "integer"), Col("pad", "text")]
RF = [Col("x", "integer"), Col("y", "text")]
RK_ROWS, RF_ROWS = 300000, 200000
RESUME_ROWS = 800000


class CopyWriter(threading.Thread):
    """Small transactions on rk (a primary key) and rf (no key: REPLICA
    IDENTITY FULL, keyed by the whole row; x is unique by construction so the
    test can follow it) as fast as they go, some rolled back (most on keys
    below `hot`, when given: the first pages, the ranges copied first).  Rows widened
    by an UPDATE do not fit their full page: the new tuple lands on another
    page, often in another range.  Keys change, are deleted, and deleted keys
    come back.  `log` holds (before, after, effects) per committed
    transaction, effects [(table, key, row | None)], as in test_pg_kill."""

    def __init__(self, dsn, seed, hot=None):
        super().__init__(daemon=True)
        self.dsn, self.r, self.hot = dsn, random.Random(seed), hot
        self.stop = threading.Event()
        self.state, self.log, self.gone = {}, [], []
        self.fresh = {"rk": 1, "rf": 1}
        self.error = None

    def load(self, conn):
        for t in ("rk", "rf"):
            for row in conn.execute(f"SELECT * FROM {t}").fetchall():
                self.state[(t, row[0])] = tuple(row)
                self.fresh[t] = max(self.fresh[t], row[0] + 1)

    def pick(self, mine, t):
        for _ in range(20):
            top = self.hot if self.hot and self.r.random() < 0.6 else self.fresh[t]
            k = (t, self.r.randrange(1, top))
            if mine.get(k, self.state.get(k)) is not None:
                return k[1]
        return None

    def op(self, c, mine, effects):
        r = self.r
        t = r.choice(("rk", "rf"))
        col = "id" if t == "rk" else "x"
        kind = r.random()
        k = self.pick(mine, t)
        if kind < 0.2 or k is None:                           # insert: a new key, or one gone
            back = [g for g in self.gone if g[0] == t and mine.get(g, self.state.get(g)) is None]
            nk = r.choice(back)[1] if back and r.random() < 0.3 else self.fresh[t]
            self.fresh[t] = max(self.fresh[t], nk + 1)
            row = (nk, r.randrange(1000), "new " + str(nk)) if t == "rk" else (nk, f"y{nk}")
            c.execute(f"INSERT INTO {t} VALUES ({', '.join(['%s'] * len(row))})", row)
        elif kind < 0.6:                                      # widen: the tuple moves
            old = mine.get((t, k), self.state.get((t, k)))
            row = old[:-1] + (old[-1] + "w" * r.randrange(30, 90),)
            c.execute(f"UPDATE {t} SET {'pad' if t == 'rk' else 'y'} = %s WHERE {col} = %s",
                      (row[-1], k))
            effects.append((t, k, row))
            mine[(t, k)] = row
            return
        elif kind < 0.75:                                     # a key changes
            old = mine.get((t, k), self.state.get((t, k)))
            nk = self.fresh[t]
            self.fresh[t] += 1
            row = (nk,) + old[1:]
            c.execute(f"UPDATE {t} SET {col} = %s WHERE {col} = %s", (nk, k))
            effects += [(t, k, None)]
            mine[(t, k)] = None
            self.gone.append((t, k))
        else:                                                 # delete
            c.execute(f"DELETE FROM {t} WHERE {col} = %s", (k,))
            effects.append((t, k, None))
            mine[(t, k)] = None
            self.gone.append((t, k))
            return
        effects.append((t, row[0], row))
        mine[(t, row[0])] = row

    def txn(self, c):
        mine, effects = {}, []
        c.execute("BEGIN")
        for _ in range(self.r.randint(1, 4)):
            self.op(c, mine, effects)
        if self.r.random() < 0.1:
            c.execute("ROLLBACK")                             # never visible
            return
        before, after = commit_bracketed(c)
        for k, row in mine.items():
            if row is None:
                self.state.pop(k, None)
            else:
                self.state[k] = row
        self.log.append((before, after, effects))

    def run(self):
        try:
            with psycopg.connect(self.dsn, autocommit=True) as c:
                while not self.stop.is_set():
                    self.txn(c)
                    time.sleep(self.r.random() * 0.004)
        except Exception as e:                                # reported by the test
            self.error = e


def state_at(base, log, frontier):
    """The source as of `frontier` (the transactions surely before it), and a
    second answer with the one whose commit window holds it, if any."""
    state, maybe = dict(base), None
    for before, after, effects in log:
        if after <= frontier or (before < frontier < after):
            if after > frontier:
                maybe = dict(state)
            target = state if after <= frontier else maybe
            for t, k, row in effects:
                if row is None:
                    target.pop((t, k), None)
                else:
                    target[(t, k)] = row
    return state, maybe


class CopyRun(Run):
    """A Run whose status lines (ended by CR) are read too: `rows` is the
    copy's rows so far as the last one said."""

    def __init__(self, m):
        self.rows = 0
        super().__init__(m)

    def _read(self):
        buf = ""
        while ch := self.p.stderr.read(1):
            buf += ch
            if ch in "\r\n":
                self.lines.append(buf)
                got = re.search(r"copying: \d+ of \d+ tables, (\d+) rows", buf)
                if got:
                    self.rows = int(got.group(1))
                buf = ""


def copy_source(db, tmp_path, rk_rows, range_pages):
    """rk (a key, rk_rows rows) and rf (keyless) and a mirror of both copied
    by two workers in ranges of range_pages pages."""
    db.sql(f"""
        CREATE TABLE rk (id int PRIMARY KEY, v int, pad text);
        INSERT INTO rk SELECT g, g % 1000, md5(g::text) FROM generate_series(1, {rk_rows}) g;
        CREATE TABLE rf (x int, y text);
        ALTER TABLE rf REPLICA IDENTITY FULL;
        INSERT INTO rf SELECT g, 'y' || g FROM generate_series(1, {RF_ROWS}) g;
    """)
    db.sql("VACUUM ANALYZE rk, rf")
    return Mirror(db, tmp_path, ["public.rk", "public.rf"], "--create-publication",
                  "--copy-workers", "2", "--copy-range-pages", str(range_pages),
                  "--progress-interval", "50ms", "--commit-interval", "200ms")


def test_kills_during_ranged_copies_under_writes_then_the_first_snapshots_are_exact(
        pgdb, tmp_path):
    """A copy cut short, under a writer: each rerun copies every table
    without a commit inside a temporary slot's snapshot at C2 (rk from the
    ranges staged before when there are some, rf, keyless, whole).  Three
    kills: during the first run's copy of rk, during a rerun's copy of rk,
    and (once rk committed) during rf's.  The first snapshot of each table
    equals the source at its frontier, the end state equals Postgres."""
    m = copy_source(pgdb, tmp_path, RK_ROWS, 100)
    w = CopyWriter(pgdb.dsn, seed=20)
    with psycopg.connect(pgdb.dsn) as c:
        w.load(c)
    base = dict(w.state)
    w.start()
    try:
        run = CopyRun(m)                                   # 1: in rk's copy, at C
        run.wait_until(lambda: run.rows >= 65536, "65536 rows copied")
        err = run.kill()
        assert "copied public" not in err, err
        assert snapshots(m, "public.rk") == [] and snapshots(m, "public.rf") == []
        run = CopyRun(m)                                   # 2: in rk's copy again, at C2
        run.wait_until(lambda: run.said("temporary slot") and run.rows >= 65536,
                 "a copy in a temporary slot's snapshot")
        err = run.kill()
        assert "copied public" not in err, err
        assert snapshots(m, "public.rk") == [] and snapshots(m, "public.rf") == []
        run = CopyRun(m)                                   # 3: rk committed, in rf's copy
        run.wait_until(lambda: run.said("copied public.rk"), "rk's commit")
        rk_rows = int(re.search(r"copied public\.rk: (\d+) rows", "".join(run.lines)).group(1))
        run.wait_until(lambda: run.rows > rk_rows or run.said("copied public.rf"), "rf's copy")
        run.kill()
        assert len(snapshots(m, "public.rk")) == 1
        rf_done = len(snapshots(m, "public.rf")) == 1       # it may commit before the kill
        time.sleep(0.5)                                    # more changes after the kill
        r = m.catch_up()                                   # 4: rf again (unless it was done)
        assert ("copied public.rf" in r.stderr) != rf_done, r.stderr
        assert "copied public.rk" not in r.stderr, r.stderr
    finally:
        w.stop.set()
        w.join()
    assert w.error is None, w.error
    assert len(w.log) > 50, len(w.log)

    m.catch_up()
    for table, cols in (("rk", RK), ("rf", RF)):
        want = pg_rows(pgdb, table, cols)
        assert want == sorted((row for (t, _), row in w.state.items() if t == table), key=repr)
        for reader, rows in iceberg_rows(m, f"public.{table}", cols).items():
            assert rows == want, (table, reader)
        sid, s = snapshots(m, f"public.{table}")[0]       # the copy: the source at C2
        f = frontier_of(s)
        exact, maybe = state_at(base, w.log, f)
        got = duckdb_snapshot_rows(m.metadata(f"public.{table}"), cols, [sid])[0]
        got = sorted(got, key=repr)
        assert got == sorted((row for (t, _), row in exact.items() if t == table), key=repr) \
            or (maybe and got == sorted((row for (t, _), row in maybe.items() if t == table),
                                        key=repr)), (table, f)
        assert int(s["added-records"]) == len(got)         # one snapshot holds the copy
        assert lsn_int(s["floe.pg.lsn"]) == f


def staged(m, ident):
    """The ranges floe-copy records as staged for `ident` (None: no branch),
    read straight from the catalog and the metadata file (quick enough to
    poll while a copy runs)."""
    ns, name = ident.split(".")
    try:
        with sqlite3.connect(m.catalog) as db:
            row = db.execute("SELECT metadata_location FROM iceberg_tables WHERE "
                             "table_namespace = ? AND table_name = ?", (ns, name)).fetchone()
    except sqlite3.OperationalError:                       # no catalog yet
        return None
    if not row:
        return None
    with open(row[0].removeprefix("file://")) as f:
        md = json.load(f)
    ref = md.get("refs", {}).get("floe-copy")
    if ref is None:
        return None
    snap = next(s for s in md["snapshots"] if s["snapshot-id"] == ref["snapshot-id"])
    return [int(x) for x in snap["summary"]["floe.copy.done"].split(",") if x]


def test_a_killed_ranged_copy_resumes_from_its_staged_ranges_under_writes(pgdb, tmp_path):
    """Ranges finished at C are staged on the branch floe-copy; after a kill
    the rerun reads the other ranges and the keys changed since at C2 (in a
    temporary slot's snapshot) and stages nothing more, so a kill during the
    resume leaves the staged ranges as they were; the next run resumes from
    them again.  The keyed table's first snapshot equals the source at its
    frontier C2 though a writer moved, changed, deleted and inserted rows
    all along; the keyless table is copied whole; the branches go."""
    m = copy_source(pgdb, tmp_path, RESUME_ROWS, 50)
    w = CopyWriter(pgdb.dsn, seed=21, hot=40000)
    with psycopg.connect(pgdb.dsn) as c:
        w.load(c)
    base = dict(w.state)
    w.start()
    try:
        run = CopyRun(m)                                   # 1: stages ranges of rk at C
        run.wait_until(lambda: len(staged(m, "public.rk") or []) >= 6, "six ranges of rk staged")
        err = run.kill()
        assert "copied public" not in err, err
        assert snapshots(m, "public.rk") == []
        done = staged(m, "public.rk")
        assert len(done) >= 6, done
        time.sleep(0.5)                                    # changes to the staged rows
        run = CopyRun(m)                                   # 2: resumes at C2, killed in it
        run.wait_until(lambda: run.said("public.rk: resuming its copy") and run.rows > 30000,
                 "a resume")
        err = run.kill()
        assert snapshots(m, "public.rk") == []
        assert staged(m, "public.rk") == done               # a resume stages nothing
        time.sleep(0.3)
        r = m.catch_up()                                   # 3: resumes again, commits at C3
    finally:
        w.stop.set()
        w.join()
    assert w.error is None, w.error
    assert "public.rk: resuming its copy" in r.stderr, r.stderr
    got = re.search(r"copied public\.rk: (\d+) rows .*resumed: (\d+) rows from (\d+) ranges "
                    r"staged before", r.stderr)
    assert got, r.stderr
    rows, restaged, ranges = map(int, got.groups())
    assert ranges == len(done) and 0 < restaged < rows, (rows, restaged, ranges)
    assert "public.rf: resuming" not in r.stderr and "public.rf: the ranges" not in r.stderr

    m.catch_up()
    for table, cols in (("rk", RK), ("rf", RF)):
        want = pg_rows(pgdb, table, cols)
        for reader, rows_ in iceberg_rows(m, f"public.{table}", cols).items():
            assert rows_ == want, (table, reader)
        assert staged(m, f"public.{table}") is None      # the branch went with the copy
        sid, s = snapshots(m, f"public.{table}")[0]
        f = frontier_of(s)
        exact, maybe = state_at(base, w.log, f)
        got = sorted(duckdb_snapshot_rows(m.metadata(f"public.{table}"), cols, [sid])[0],
                     key=repr)
        assert got == sorted((x for (t, _), x in exact.items() if t == table), key=repr) \
            or (maybe and got == sorted((x for (t, _), x in maybe.items() if t == table),
                                        key=repr)), (table, f, r.stderr)
        ids = [x[0] for x in got]
        assert len(ids) == len(set(ids)), table         # no key twice
        assert lsn_int(s["floe.pg.lsn"]) == f
