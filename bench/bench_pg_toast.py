#!/usr/bin/env python3
"""TOASTed values left out of updates: what REPLICA IDENTITY DEFAULT costs
floe, and what FULL costs Postgres (issue P10, "TOAST without FULL").

    python3 bench/bench_pg_toast.py [--rows N] [--updates M] [--rounds K]

A PostgreSQL started for the run (tests/pgserver.py) holds one table of N
rows (default 200,000): id bigint primary key, a integer, body text of
2,560 bytes stored out of line (STORAGE EXTERNAL).  M updates (default
500,000, 1000 per transaction, random keys) change `a` only, so pgoutput
leaves `body` out of each ('u') unless the identity is FULL.  The same
workload runs on two copies of the table:

  DEFAULT  floe fills `body` from the key's row in its data files (read
           back once per file and round, projected to the column)
  FULL     Postgres logs every old row whole, `body` included, and sends it

For each: the WAL the updates wrote, floe pg draining them (1 s commits)
against pg_recvlogical draining the same changes to /dev/null (the
decoder's own rate).  Wall time, CPU and peak RSS per process
(bench/procstat.py), medians over K rounds taken A B A B.  Results also go
to bench/out/pg_toast.json.
"""
import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_pg import OUT, drop_slot, med, measured, pg_server, sql  # noqa: E402
from bench_pg import FLOE  # noqa: E402


def load(dsn, table, rows, full):
    sql(dsn, f"""
        DROP TABLE IF EXISTS {table};
        CREATE TABLE {table} (id bigint PRIMARY KEY, a integer, body text);
        ALTER TABLE {table} ALTER COLUMN body SET STORAGE EXTERNAL;
        {"ALTER TABLE " + table + " REPLICA IDENTITY FULL;" if full else ""}""")
    sql(dsn, f"""
        INSERT INTO {table}
        SELECT g, 0, (SELECT string_agg(md5(g::text || ':' || i), '')
                      FROM generate_series(1, 80) i)
        FROM generate_series(1, {rows}) g""")
    sql(dsn, f"VACUUM ANALYZE {table}")


def floe_pg(dsn, d, table, slot, *extra):
    return [FLOE, "pg", "--source", dsn, "--tables", f"public.{table}", "--slot", slot,
            "--publication", f"pub_{table}", "--catalog", f"sqlite:{d}/catalog.db",
            "--warehouse", f"{d}/wh", "--index-dir", f"{d}/index", "--quiet", *extra]


def update(dsn, table, updates, rows):
    """Returns the WAL bytes written."""
    start = sql(dsn, "SELECT pg_current_wal_insert_lsn()::text")[0][0]
    sql(dsn, f"""
        DO $$
        DECLARE i int;
        BEGIN
          FOR i IN 0 .. {updates // 1000 - 1} LOOP
            UPDATE {table} SET a = a + 1
              WHERE id IN (SELECT 1 + ((i * 1000 + g)::bigint * 7919) % {rows}
                           FROM generate_series(1, 1000) g);
            COMMIT;
          END LOOP;
        END $$;""")
    return sql(dsn, f"SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '{start}')")[0][0]


def rounds_of(dsn, table, rows, updates, rounds):
    base = os.path.join(OUT, f"toast-{table}")
    tpl = base + "-template"
    shutil.rmtree(tpl, ignore_errors=True)
    os.makedirs(tpl)
    for s in (f"{table}_f", f"{table}_r", f"{table}_ft", f"{table}_rt"):
        drop_slot(dsn, s)
    sql(dsn, f"CREATE PUBLICATION pub_{table} FOR TABLE {table}")
    import subprocess
    subprocess.run(floe_pg(dsn, tpl, table, f"{table}_f", "--stop-at", "now"), check=True)
    sql(dsn, f"SELECT pg_create_logical_replication_slot('{table}_r', 'pgoutput')")
    wal = update(dsn, table, updates, rows)
    end = sql(dsn, "SELECT pg_current_wal_insert_lsn()::text")[0][0]
    sql(dsn, f"SELECT pg_copy_logical_replication_slot('{table}_f', '{table}_ft');"
             f"SELECT pg_copy_logical_replication_slot('{table}_r', '{table}_rt')")
    recv = shutil.which("pg_recvlogical") or "/usr/lib/postgresql/15/bin/pg_recvlogical"
    out = {"wal_bytes": int(wal), "floe": [], "pg_recvlogical": []}
    for _ in range(rounds):
        for s in (f"{table}_f", f"{table}_r"):
            drop_slot(dsn, s)
        sql(dsn, f"SELECT pg_copy_logical_replication_slot('{table}_ft', '{table}_f');"
                 f"SELECT pg_copy_logical_replication_slot('{table}_rt', '{table}_r')")
        shutil.rmtree(base, ignore_errors=True)
        shutil.copytree(tpl, base)
        out["floe"].append(measured(floe_pg(dsn, base, table, f"{table}_f", "--stop-at", end,
                                            "--commit-interval", "1s")))
        out["pg_recvlogical"].append(measured(
            [recv, "-d", dsn, "--slot", f"{table}_r", "--start", "-o", "proto_version=1",
             "-o", f"publication_names=pub_{table}", "-E", end, "-f", "/dev/null"]))
    for s in (f"{table}_f", f"{table}_r", f"{table}_ft", f"{table}_rt"):
        drop_slot(dsn, s)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200000)
    ap.add_argument("--updates", type=int, default=500000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    srv = pg_server()
    dsn = srv.dsn
    res = {"rows": args.rows, "updates": args.updates}
    try:
        for table, full in (("tdefault", False), ("tfull", True)):
            load(dsn, table, args.rows, full)
            res[table] = rounds_of(dsn, table, args.rows, args.updates, args.rounds)
    finally:
        srv.stop()
    with open(os.path.join(OUT, "..", "pg_toast.json"), "w") as f:
        json.dump(res, f, indent=1)
    m = args.updates
    print(f"{m} updates leaving a 2,560-byte TOASTed value out, {args.rows} rows, 1 s commits "
          f"(median of {args.rounds}):")
    for table, name in (("tdefault", "DEFAULT"), ("tfull", "FULL")):
        r = res[table]
        print(f"  {name:8s} WAL {r['wal_bytes'] / 2**20:8.1f} MiB")
        for k in ("floe", "pg_recvlogical"):
            print(f"    {k:14s} {m / med(r[k]):10,.0f} updates/s  wall {med(r[k]):6.2f}s  "
                  f"cpu {med(r[k], 'cpu'):6.2f}s  rss {med(r[k], 'rss'):6.0f} MiB")
        print(f"    floe / pg_recvlogical: {med(r['pg_recvlogical']) / med(r['floe']):.2f}")
    d, f = res["tdefault"], res["tfull"]
    print(f"  WAL, FULL / DEFAULT: {f['wal_bytes'] / d['wal_bytes']:.2f}")
    print(f"  floe wall, DEFAULT / FULL: {med(d['floe']) / med(f['floe']):.2f}")


if __name__ == "__main__":
    main()
