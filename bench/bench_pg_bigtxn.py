#!/usr/bin/env python3
"""One very large transaction in bounded memory (issue P10, "Large
transactions in bounded memory").

    python3 bench/bench_pg_bigtxn.py [--rows N] [--memory-limit SIZE] [--rounds K]

A PostgreSQL started for the run (tests/pgserver.py, logical_decoding_work_mem
left at its default of 64MB) holds an empty table
(id bigint primary key, a integer, b text, c integer; REPLICA IDENTITY
DEFAULT).  One transaction inserts N rows (default 10,000,000):

    INSERT INTO big SELECT g, g % 1000, 'row number ' || g, g FROM generate_series(1, N) g

The walsender streams it while it runs (pgoutput protocol 2, streaming
'on'): floe writes it to a spill file, and at its commit replays it into
the table's sink under --memory-limit (default 256MiB).  Beside it,
pg_recvlogical drains the same changes (a slot of its own, also protocol 2
with streaming on) to /dev/null: the decoder's own rate.  Wall time, CPU
and peak RSS per process (bench/procstat.py: VmHWM), medians over K rounds
(default 1), taken A B A B; the Iceberg table's row count is checked.
Results also go to bench/out/pg_bigtxn.json.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_pg import FLOE, OUT, drop_slot, med, measured, pg_server, sql  # noqa: E402


def floe_pg(dsn, d, slot, *extra):
    return [FLOE, "pg", "--source", dsn, "--tables", "public.big", "--slot", slot,
            "--publication", "pub_big", "--catalog", f"sqlite:{d}/catalog.db",
            "--warehouse", f"{d}/wh", "--index-dir", f"{d}/index", "--spill-dir", f"{d}/spill",
            "--quiet", *extra]


def iceberg_count(d):
    """Rows of the Iceberg table as DuckDB reads them (its current metadata)."""
    from iceberg_readers import duck, pyiceberg_catalog
    meta = pyiceberg_catalog(f"{d}/catalog.db", f"file://{d}/wh").load_table(
        "public.big").metadata_location
    return duck().execute("SELECT count(*) FROM iceberg_scan(?)", [meta]).fetchone()[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--memory-limit", default="256MiB")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    srv = pg_server()
    dsn = srv.dsn
    base = os.path.join(OUT, "bigtxn")
    tpl = base + "-template"
    res = {"rows": args.rows, "memory_limit": args.memory_limit, "floe": [],
           "pg_recvlogical": []}
    try:
        sql(dsn, """DROP TABLE IF EXISTS big;
                    CREATE TABLE big (id bigint PRIMARY KEY, a integer, b text, c integer);
                    CREATE PUBLICATION pub_big FOR TABLE big""")
        shutil.rmtree(tpl, ignore_errors=True)
        os.makedirs(tpl)
        subprocess.run(floe_pg(dsn, tpl, "big_f", "--stop-at", "now"), check=True)
        sql(dsn, "SELECT pg_create_logical_replication_slot('big_r', 'pgoutput')")
        start = sql(dsn, "SELECT pg_current_wal_insert_lsn()::text")[0][0]
        sql(dsn, f"INSERT INTO big SELECT g, g % 1000, 'row number ' || g, g "
                 f"FROM generate_series(1, {args.rows}) g")
        end = sql(dsn, "SELECT pg_current_wal_insert_lsn()::text")[0][0]
        res["wal_bytes"] = int(sql(dsn, f"SELECT pg_wal_lsn_diff('{end}', '{start}')")[0][0])
        sql(dsn, "SELECT pg_copy_logical_replication_slot('big_f', 'big_ft');"
                 "SELECT pg_copy_logical_replication_slot('big_r', 'big_rt')")
        recv = shutil.which("pg_recvlogical") or "/usr/lib/postgresql/15/bin/pg_recvlogical"
        for _ in range(args.rounds):
            for s in ("big_f", "big_r"):
                drop_slot(dsn, s)
            sql(dsn, "SELECT pg_copy_logical_replication_slot('big_ft', 'big_f');"
                     "SELECT pg_copy_logical_replication_slot('big_rt', 'big_r')")
            shutil.rmtree(base, ignore_errors=True)
            shutil.copytree(tpl, base)
            os.makedirs(f"{base}/spill", exist_ok=True)
            res["floe"].append(measured(floe_pg(dsn, base, "big_f", "--stop-at", end,
                                                "--commit-interval", "1s",
                                                "--memory-limit", args.memory_limit)))
            res["pg_recvlogical"].append(measured(
                [recv, "-d", dsn, "--slot", "big_r", "--start", "-o", "proto_version=2",
                 "-o", "streaming=on", "-o", "publication_names=pub_big", "-E", end,
                 "-f", "/dev/null"]))
        res["iceberg_rows"] = iceberg_count(base)
        for s in ("big_f", "big_r", "big_ft", "big_rt"):
            drop_slot(dsn, s)
    finally:
        srv.stop()
    with open(os.path.join(OUT, "..", "pg_bigtxn.json"), "w") as f:
        json.dump(res, f, indent=1)
    n = args.rows
    print(f"one transaction of {n:,} inserted rows, --memory-limit {args.memory_limit}, "
          f"WAL {res['wal_bytes'] / 2**20:.0f} MiB (median of {args.rounds}):")
    for k in ("floe", "pg_recvlogical"):
        r = res[k]
        print(f"  {k:14s} {n / med(r):10,.0f} rows/s  wall {med(r):7.2f}s  "
              f"cpu {med(r, 'cpu'):7.2f}s  peak rss {med(r, 'rss'):6.0f} MiB")
    print(f"  floe / pg_recvlogical (wall): {med(res['floe']) / med(res['pg_recvlogical']):.2f}")
    print(f"  rows in the Iceberg table: {res['iceberg_rows']:,}"
          f"{'' if res['iceberg_rows'] == n else '  (WRONG)'}")


if __name__ == "__main__":
    main()
