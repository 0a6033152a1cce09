#!/usr/bin/env python3
"""The initial snapshot of a large table while a writer keeps changing it:
no gap, no overlap (issue P8).  Too slow for the CI suite under ASan: run
it by hand against the release build.

    python3 bench/pg_snapshot_5m.py [--rows 5000000] [--seconds-after 20]

A PostgreSQL started for the run (tests/pgserver.py) holds `snap (id bigint
primary key, v bigint)` with N rows (v = id; REPLICA IDENTITY DEFAULT, so
updates and deletes arrive as keys).  A writer thread starts random
transactions (updates of random rows, deletes, inserts of new ids, some
rolled back) before floe starts and goes on while floe creates its slot,
copies the table inside the exported snapshot and follows the stream, and
for --seconds-after seconds more.  Every committed transaction is logged
with the WAL positions before and after its COMMIT.  Then floe catches up
(--stop-at) and the checks run, with DuckDB reading the Iceberg table:

  - the copy's snapshot (frontier C, the slot's consistent point) equals
    the initial rows plus exactly the writer's transactions that committed
    before C: nothing missing (a gap) and nothing of a later transaction (an
    overlap), and no id twice;
  - every snapshot after it equals the source as of its frontier;
  - the table at the end equals the Postgres table.

Tables are compared by fingerprint: count, distinct ids, sum(id), sum(v)
and sum((id * 31 + v * 17) mod 1000000007), computed the same way from the
replayed log and by DuckDB (and by Postgres for the end state).
"""
import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
os.environ.setdefault("FLOE_BUILD", "build")
import psycopg  # noqa: E402

import pgserver  # noqa: E402
from iceberg_readers import duck  # noqa: E402

FLOE = os.path.join(ROOT, os.environ["FLOE_BUILD"], "floe")
P = 1000000007


def fp_row(i, v):
    return (i * 31 + v * 17) % P


class Fingerprint:
    def __init__(self, count=0, ids=0, sid=0, sv=0, fp=0):
        self.count, self.ids, self.sid, self.sv, self.fp = count, ids, sid, sv, fp

    def add(self, i, v, sign):
        self.count += sign
        self.ids += sign
        self.sid += sign * i
        self.sv += sign * v
        self.fp += sign * fp_row(i, v)

    def t(self):
        return (self.count, self.ids, self.sid, self.sv, self.fp)


def base_fingerprint(n):
    f = Fingerprint(n, n, n * (n + 1) // 2, n * (n + 1) // 2, 0)
    f.fp = sum(fp_row(i, i) for i in range(1, n + 1))
    return f


class Writer(threading.Thread):
    def __init__(self, dsn, rows, seed=7):
        super().__init__(daemon=True)
        self.dsn, self.rows, self.r = dsn, rows, random.Random(seed)
        self.stop = threading.Event()
        self.log = []                      # (before, after, [(id, old v|None, new v|None)])
        self.cur = {}                      # id -> v for ids the writer changed (None: deleted)
        self.next_id = rows + 1
        self.error = None

    def value(self, i):
        return self.cur.get(i, i if i <= self.rows else None)

    def txn(self, c):
        r = self.r
        effects, mine = [], {}
        c.execute("BEGIN")
        for _ in range(r.randint(1, 10)):
            k = r.random()
            i = r.randint(1, self.rows) if k < 0.85 else self.next_id
            old = mine.get(i, self.value(i))
            if k < 0.6 and old is not None:
                v = r.randrange(10**9)
                c.execute("UPDATE snap SET v = %s WHERE id = %s", (v, i))
            elif k < 0.85 and old is not None:
                v = None
                c.execute("DELETE FROM snap WHERE id = %s", (i,))
            elif k >= 0.85:
                v = r.randrange(10**9)
                self.next_id += 1
                c.execute("INSERT INTO snap VALUES (%s, %s)", (i, v))
            else:
                continue
            effects.append((i, old, v))
            mine[i] = v
        if r.random() < 0.05:
            c.execute("ROLLBACK")
            self.next_id += 0
            return
        before = lsn(c.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])
        c.execute("COMMIT")
        after = lsn(c.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])
        self.cur.update(mine)
        self.log.append((before, after, effects))

    def run(self):
        try:
            with psycopg.connect(self.dsn, autocommit=True) as c:
                while not self.stop.is_set():
                    self.txn(c)
        except Exception as e:
            self.error = e


def lsn(text):
    a, b = text.split("/")
    return int(a, 16) << 32 | int(b, 16)


def expected(base, log, frontier):
    """Fingerprints as of frontier: (sure, or with the transaction whose
    commit window holds it)."""
    f = Fingerprint(*base.t())
    maybe = None
    for before, after, effects in log:
        if after <= frontier or (before < frontier < after):
            g = f if after <= frontier else Fingerprint(*f.t())
            for i, old, new in effects:
                if old is not None:
                    g.add(i, old, -1)
                if new is not None:
                    g.add(i, new, 1)
            if g is not f:
                maybe = g
    return f.t(), maybe.t() if maybe else None


FP_SQL = ("SELECT count(*), count(DISTINCT id), sum(id)::HUGEINT, sum(v)::HUGEINT, "
          "sum((id * 31 + v * 17) % 1000000007)::HUGEINT FROM {src}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5000000)
    ap.add_argument("--seconds-after", type=float, default=20)
    args = ap.parse_args()
    n = args.rows
    work = os.path.join(HERE, "out", "pg-snapshot")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    srv = pgserver.PgServer()
    dsn = srv.dsn
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("CREATE TABLE snap (id bigint PRIMARY KEY, v bigint)")
            c.execute(f"INSERT INTO snap SELECT g, g FROM generate_series(1, {n}) g")
            c.execute("VACUUM ANALYZE snap")
        base = base_fingerprint(n)
        writer = Writer(dsn, n)
        writer.start()
        time.sleep(2)
        cmd = [FLOE, "pg", "--source", dsn, "--tables", "public.snap", "--create-publication",
               "--catalog", f"sqlite:{work}/catalog.db", "--warehouse", f"{work}/wh",
               "--index-dir", f"{work}/index", "--commit-interval", "1s"]
        t0 = time.time()
        p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
        for line in p.stderr:
            sys.stderr.write(line)
            if "copied public.snap" in line:
                break
        copy_s = time.time() - t0
        time.sleep(args.seconds_after)
        writer.stop.set()
        writer.join()
        assert writer.error is None, writer.error
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=300)
        end = subprocess.run(["psql", dsn, "-Atc", "SELECT pg_current_wal_insert_lsn()"],
                             capture_output=True, text=True, check=True).stdout.strip()
        subprocess.run(cmd + ["--stop-at", end, "--quiet"], check=True)
        with psycopg.connect(dsn) as c:
            pg_end = tuple(int(x) for x in c.execute(FP_SQL.format(src="snap").replace(
                "HUGEINT", "numeric")).fetchone())
        verify(work, base, writer, pg_end, copy_s)
    finally:
        srv.stop()


def verify(work, base, writer, pg_end, copy_s):
    from pyiceberg.catalog.sql import SqlCatalog
    t = SqlCatalog("floe", uri=f"sqlite:///{work}/catalog.db",
                   warehouse=f"file://{work}/wh").load_table("public.snap")
    snaps, sid = [], t.metadata.current_snapshot_id
    by_id = {s.snapshot_id: s for s in t.snapshots()}
    while sid is not None:
        snaps.append(by_id[sid])
        sid = by_id[sid].parent_snapshot_id
    snaps.reverse()
    con = duck()
    meta = t.metadata_location
    print(f"floe started, created the slot and copied the table in {copy_s:.1f}s; "
          f"{len(snaps)} snapshots; {len(writer.log)} writer transactions")
    during = sum(1 for b, a, _ in writer.log if a <= int(snaps[0].summary["floe.frontier"][1:-1]))
    print(f"transactions committed before the copy's consistent point: {during}")
    for k in range(len(snaps)):
        s = snaps[k]
        f = int(s.summary["floe.frontier"][1:-1])
        got = tuple(int(x) for x in con.execute(FP_SQL.format(
            src=f"iceberg_scan('{meta}', snapshot_from_id = {s.snapshot_id})")).fetchone())
        want, maybe = expected(base, writer.log, f)
        ok = got == want or got == maybe
        print(f"snapshot {k} (frontier {f}): rows {got[0]}, distinct {got[1]}: "
              f"{'equal' if ok else 'DIFFERENT'}")
        assert ok, (k, got, want, maybe)
        assert got[0] == got[1], "an id twice"
    got = tuple(int(x) for x in con.execute(FP_SQL.format(src=f"iceberg_scan('{meta}')")).fetchone())
    assert got == pg_end, (got, pg_end)
    print(f"the end: {got[0]} rows, equal to Postgres: no gap, no overlap")


if __name__ == "__main__":
    main()
