#!/usr/bin/env python3
"""The initial copy of floe pg against psql's \\copy to /dev/null, with the
same number of connections (issue P10, "the initial copy at the speed of
Postgres").

    python3 bench/bench_pg_copy.py [--rows N] [--lineitem-rows M] [--workers W]
                                   [--rounds K] [--memory-limit SIZE]

A PostgreSQL started for the run (tests/pgserver.py) holds two tables:

  bench     N rows (default 10,000,000): id bigint primary key, a integer,
            b text, c numeric(12,2), d timestamptz (bench_pg.py's table)
  lineitem  M rows (default 6,000,000): TPC-H's lineitem, 16 columns, key
            (l_orderkey, l_linenumber), values generated in SQL in TPC-H's
            shapes (not dbgen's text)

Each is copied by `floe pg --copy-workers W --stop-at now` into a fresh
warehouse (a new slot, its exported snapshot, W connections copying CTID
page ranges, one snapshot committed with the key index checkpointed) and
read by W psql processes at once, each `\\copy (SELECT * FROM t WHERE ctid
>= '(a,0)' AND ctid < '(b,0)') TO '/dev/null'` over W equal page ranges:
the rows through clients as floe gets them, nothing written.  Runs
alternate floe, psql; medians of K rounds (default 3).  Reported: rows/s,
the ratio floe / psql (target >= 0.6), floe's rows per CPU-second of its
own process (the server's backends are not counted, for either side), and
floe's peak RSS.  Results also go to bench/out/pg_copy.json.
"""
import argparse
import json
import os
import shutil
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
import procstat  # noqa: E402

FLOE = os.path.join(ROOT, os.environ.get("FLOE_BUILD", "build"), "floe")
OUT = os.path.join(HERE, "out", "pg_copy")

BENCH = """
CREATE TABLE bench (id bigint PRIMARY KEY, a integer, b text, c numeric(12,2), d timestamptz);
INSERT INTO bench SELECT g, g % 1000, 'row number ' || g, g * 0.01,
       '2024-01-01'::timestamptz + g * interval '1 second' FROM generate_series(1, {n}) g;
"""

# TPC-H lineitem: about 4 lines per order; values in dbgen's ranges.
LINEITEM = """
CREATE TABLE lineitem (
  l_orderkey bigint NOT NULL, l_partkey bigint NOT NULL, l_suppkey bigint NOT NULL,
  l_linenumber integer NOT NULL, l_quantity numeric(15,2) NOT NULL,
  l_extendedprice numeric(15,2) NOT NULL, l_discount numeric(15,2) NOT NULL,
  l_tax numeric(15,2) NOT NULL, l_returnflag char(1) NOT NULL, l_linestatus char(1) NOT NULL,
  l_shipdate date NOT NULL, l_commitdate date NOT NULL, l_receiptdate date NOT NULL,
  l_shipinstruct char(25) NOT NULL, l_shipmode char(10) NOT NULL, l_comment varchar(44) NOT NULL,
  PRIMARY KEY (l_orderkey, l_linenumber));
INSERT INTO lineitem SELECT
  g / 4 + 1, (g * 7919) % 200000 + 1, (g * 104729) % 10000 + 1, g % 4 + 1,
  (g % 50) + 1, ((g % 50) + 1) * (900 + (g * 31) % 100000 / 100.0), (g % 11) / 100.0,
  (g % 9) / 100.0, (ARRAY['A','N','R'])[g % 3 + 1], (ARRAY['F','O'])[g % 2 + 1],
  date '1992-01-01' + ((g * 13) % 2500)::int, date '1992-01-01' + ((g * 17) % 2500 + 30)::int,
  date '1992-01-01' + ((g * 13) % 2500 + (g % 30) + 1)::int,
  (ARRAY['DELIVER IN PERSON','COLLECT COD','NONE','TAKE BACK RETURN'])[g % 4 + 1],
  (ARRAY['REG AIR','AIR','RAIL','SHIP','TRUCK','MAIL','FOB'])[g % 7 + 1],
  substr(md5(g::text) || md5((g * 3)::text), 1, (10 + g % 34)::int)
FROM generate_series(0::bigint, {n} - 1) g;
"""


def sql(dsn, stmt):
    import psycopg
    with psycopg.connect(dsn, autocommit=True) as c:
        cur = c.execute(stmt)
        return cur.fetchall() if cur.description else None


def measured(cmd):
    wall, cpu, rss, _ = procstat.run_measured(cmd)
    return {"wall": wall, "cpu": cpu, "rss": rss}


def floe_copy(dsn, table, workers, memory):
    d = os.path.join(OUT, "wh")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    sql(dsn, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
             "WHERE slot_name = 'b_copy'")
    cmd = [FLOE, "pg", "--source", dsn, "--tables", f"public.{table}", "--slot", "b_copy",
           "--publication", f"pub_{table}", "--catalog", f"sqlite:{d}/catalog.db",
           "--warehouse", f"{d}/wh", "--index-dir", f"{d}/index", "--quiet",
           "--copy-workers", str(workers), "--stop-at", "now"]
    if memory:
        cmd += ["--memory-limit", memory]
    r = measured(cmd)
    sql(dsn, "SELECT pg_drop_replication_slot('b_copy')")
    return r


def psql_copy(dsn, table, workers):
    pages = sql(dsn, f"SELECT pg_relation_size('{table}') / current_setting('block_size')::int")[0][0]
    per = pages // workers + 1
    psql = shutil.which("psql")
    parts = []
    for i in range(workers):
        where = [f"ctid >= '({i * per},0)'"] if i else []
        if i + 1 < workers:
            where.append(f"ctid < '({(i + 1) * per},0)'")
        cond = f" WHERE {' AND '.join(where)}" if where else ""
        q = f"\\copy (SELECT * FROM {table}{cond}) TO '/dev/null'"
        parts.append(f"{psql} '{dsn}' -qc \"{q}\" &")
    return measured(["sh", "-c", " ".join(parts) + " wait"])


def med(runs, key="wall"):
    return statistics.median(r[key] for r in runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10000000)
    ap.add_argument("--lineitem-rows", type=int, default=6000000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--memory-limit", default=None)
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    import pgserver
    srv = pgserver.PgServer()
    dsn = srv.dsn
    res = {"workers": args.workers, "tables": {}}
    try:
        sizes = {"bench": args.rows, "lineitem": args.lineitem_rows}
        for table, ddl in (("bench", BENCH), ("lineitem", LINEITEM)):
            if not sizes[table]:
                continue
            sql(dsn, ddl.format(n=sizes[table]))
            sql(dsn, f"VACUUM ANALYZE {table}")
            sql(dsn, f"CREATE PUBLICATION pub_{table} FOR TABLE {table}")
            runs = {"floe": [], "psql": []}
            for _ in range(args.rounds):
                runs["floe"].append(floe_copy(dsn, table, args.workers, args.memory_limit))
                runs["psql"].append(psql_copy(dsn, table, args.workers))
            res["tables"][table] = {"rows": sizes[table], **runs}
    finally:
        srv.stop()
    with open(os.path.join(OUT, "..", "pg_copy.json"), "w") as f:
        json.dump(res, f, indent=1)
    w = args.workers
    print(f"initial copy, {w} connection(s) each side, median of {args.rounds} "
          f"({os.cpu_count()} cores shared by the server and the client)")
    for table, r in res["tables"].items():
        n = r["rows"]
        f, p = r["floe"], r["psql"]
        print(f"  {table}: {n:,} rows")
        print(f"    floe pg  {n / med(f):12,.0f} rows/s  wall {med(f):6.2f}s  cpu {med(f, 'cpu'):6.2f}s"
              f"  {n / med(f, 'cpu'):10,.0f} rows/CPU-s  peak RSS {med(f, 'rss'):6.0f} MiB")
        print(f"    psql     {n / med(p):12,.0f} rows/s  wall {med(p):6.2f}s  cpu {med(p, 'cpu'):6.2f}s")
        print(f"    floe / psql: {med(p) / med(f):.2f} (target >= 0.6)")


if __name__ == "__main__":
    main()
