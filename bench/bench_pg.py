#!/usr/bin/env python3
"""The Postgres benchmarks of issue P8, reported as ratios.

    python3 bench/bench_pg.py [--rows N] [--changes M] [--rounds K]

A PostgreSQL started for the run (tests/pgserver.py: Debian's postgresql,
wal_level = logical, a temporary cluster) holds one table of N rows
(default 2,000,000): id bigint primary key, a integer, b text,
c numeric(12,2), d timestamptz, REPLICA IDENTITY FULL.

  initial copy   floe pg copying the table into a fresh Iceberg table (a
                 new slot, its exported snapshot, COPY, one snapshot)
                 against COPY ... TO '/dev/null' on the server (no client at
                 all) and psql's \\copy to /dev/null (the rows through a
                 client, as floe gets them)
  change stream  M changes (default 1,000,000: 60% updates, 20% inserts,
                 20% deletes, 1000 per transaction) drained from a slot by
                 floe pg with 1 s commits into the copied table, against
                 pg_recvlogical with pgoutput draining the same changes from
                 a slot of its own to /dev/null: the decoder's own rate, the
                 most any client can get

Each round restores the slots (pg_copy_logical_replication_slot from a
template) and floe's warehouse, outside the timing; the runs alternate
A B A B.  Each run is one process: wall time, CPU time and peak RSS
(bench/procstat.py).  Medians over K rounds (default 3).  Target: the stream
at least 0.7 x pg_recvlogical.  Results also go to bench/out/pg.json.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
import procstat  # noqa: E402

FLOE = os.path.join(ROOT, os.environ.get("FLOE_BUILD", "build"), "floe")
OUT = os.path.join(HERE, "out", "pg")


def pg_server():
    import pgserver
    return pgserver.PgServer()


def sql(dsn, stmt):
    import psycopg
    with psycopg.connect(dsn, autocommit=True) as c:
        cur = c.execute(stmt)
        return cur.fetchall() if cur.description else None


def measured(cmd):
    wall, cpu, rss, _ = procstat.run_measured(cmd)
    return {"wall": wall, "cpu": cpu, "rss": rss}


def load(dsn, rows):
    sql(dsn, """
        DROP TABLE IF EXISTS bench;
        CREATE TABLE bench (id bigint PRIMARY KEY, a integer, b text, c numeric(12,2),
                            d timestamptz);
        ALTER TABLE bench REPLICA IDENTITY FULL;""")
    sql(dsn, f"""
        INSERT INTO bench SELECT g, g % 1000, 'row number ' || g, g * 0.01,
               '2024-01-01'::timestamptz + g * interval '1 second'
        FROM generate_series(1, {rows}) g""")
    sql(dsn, "VACUUM ANALYZE bench")


def floe_pg(dsn, d, slot, *extra):
    return [FLOE, "pg", "--source", dsn, "--tables", "public.bench", "--slot", slot,
            "--publication", "benchpub", "--catalog", f"sqlite:{d}/catalog.db",
            "--warehouse", f"{d}/wh", "--index-dir", f"{d}/index", "--quiet", *extra]


def drop_slot(dsn, slot):
    sql(dsn, f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
             f"WHERE slot_name = '{slot}'")


def copy_rounds(dsn, rounds):
    psql = shutil.which("psql")
    out = {"floe": [], "server_copy": [], "psql_copy": []}
    for _ in range(rounds):
        d = os.path.join(OUT, "copy")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        drop_slot(dsn, "b_copy")
        out["floe"].append(measured(floe_pg(dsn, d, "b_copy", "--stop-at", "now")))
        drop_slot(dsn, "b_copy")
        out["server_copy"].append(measured([psql, dsn, "-qc", "COPY bench TO '/dev/null'"]))
        out["psql_copy"].append(measured([psql, dsn, "-qc", "\\copy bench TO '/dev/null'"]))
    return out


def write_changes(dsn, changes, rows):
    per = 1000
    sql(dsn, f"""
        DO $$
        DECLARE i int; base bigint;
        BEGIN
          FOR i IN 0 .. {changes // per - 1} LOOP
            base := (i * 997) % ({rows} - 1000);
            UPDATE bench SET a = a + 1, b = b || 'x' WHERE id > base AND id <= base + 600;
            INSERT INTO bench SELECT {rows} + i * 200 + g, g, 'new', g, now()
              FROM generate_series(1, 200) g;
            DELETE FROM bench WHERE id > base + 600 AND id <= base + 800;
            COMMIT;
          END LOOP;
        END $$;""")


def stream_rounds(dsn, rows, changes, rounds):
    tpl = os.path.join(OUT, "stream-template")
    shutil.rmtree(tpl, ignore_errors=True)
    os.makedirs(tpl)
    for s in ("b_stream", "b_recv", "t_stream", "t_recv"):
        drop_slot(dsn, s)
    subprocess.run(floe_pg(dsn, tpl, "b_stream", "--stop-at", "now"), check=True)
    sql(dsn, "SELECT pg_create_logical_replication_slot('b_recv', 'pgoutput')")
    write_changes(dsn, changes, rows)
    end = sql(dsn, "SELECT pg_current_wal_insert_lsn()::text")[0][0]
    sql(dsn, "SELECT pg_copy_logical_replication_slot('b_stream', 't_stream');"
             "SELECT pg_copy_logical_replication_slot('b_recv', 't_recv')")
    recv = shutil.which("pg_recvlogical") or "/usr/lib/postgresql/15/bin/pg_recvlogical"
    out = {"floe": [], "pg_recvlogical": [], "end_lsn": end}
    d = os.path.join(OUT, "stream")
    for _ in range(rounds):
        for s in ("b_stream", "b_recv"):
            drop_slot(dsn, s)
        sql(dsn, "SELECT pg_copy_logical_replication_slot('t_stream', 'b_stream');"
                 "SELECT pg_copy_logical_replication_slot('t_recv', 'b_recv')")
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(tpl, d)
        out["floe"].append(measured(floe_pg(dsn, d, "b_stream", "--stop-at", end,
                                            "--commit-interval", "1s")))
        out["pg_recvlogical"].append(measured(
            [recv, "-d", dsn, "--slot", "b_recv", "--start", "-o", "proto_version=1",
             "-o", "publication_names=benchpub", "-E", end, "-f", "/dev/null"]))
    return out


def med(runs, key="wall"):
    return statistics.median(r[key] for r in runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2000000)
    ap.add_argument("--changes", type=int, default=1000000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    srv = pg_server()
    dsn = srv.dsn
    try:
        load(dsn, args.rows)
        sql(dsn, "CREATE PUBLICATION benchpub FOR TABLE bench")
        copy = copy_rounds(dsn, args.rounds)
        stream = stream_rounds(dsn, args.rows, args.changes, args.rounds)
    finally:
        srv.stop()
    n, m = args.rows, args.changes
    res = {"rows": n, "changes": m, "copy": copy, "stream": stream}
    with open(os.path.join(OUT, "..", "pg.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(f"initial copy of {n} rows (median of {args.rounds}):")
    for k in ("floe", "server_copy", "psql_copy"):
        print(f"  {k:14s} {n / med(copy[k]):12,.0f} rows/s  wall {med(copy[k]):6.2f}s  "
              f"cpu {med(copy[k], 'cpu'):6.2f}s  rss {med(copy[k], 'rss'):6.0f} MiB")
    print(f"  floe / COPY TO '/dev/null' on the server: {med(copy['server_copy']) / med(copy['floe']):.2f}")
    print(f"  floe / \\copy to /dev/null through psql:  {med(copy['psql_copy']) / med(copy['floe']):.2f}")
    print(f"change stream of {m} changes, 1 s commits (median of {args.rounds}):")
    for k in ("floe", "pg_recvlogical"):
        print(f"  {k:14s} {m / med(stream[k]):12,.0f} changes/s  wall {med(stream[k]):6.2f}s  "
              f"cpu {med(stream[k], 'cpu'):6.2f}s  rss {med(stream[k], 'rss'):6.0f} MiB")
    print(f"  floe / pg_recvlogical: {med(stream['pg_recvlogical']) / med(stream['floe']):.2f} "
          f"(target >= 0.7)")


if __name__ == "__main__":
    main()
