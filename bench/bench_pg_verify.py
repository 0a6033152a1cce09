#!/usr/bin/env python3
"""floe pg --verify against the initial copy of the same table.

    python3 bench/bench_pg_verify.py [--rows N] [--with-difference]

A PostgreSQL started for the run (tests/pgserver.py) holds bench_pg.py's
table of N rows (default 10,000,000: id bigint primary key, a integer,
b text, c numeric(12,2), d timestamptz; REPLICA IDENTITY FULL).  Each step
is one floe process run under /usr/bin/time -v (wall time, CPU, peak RSS):

  copy     floe pg --stop-at now: a new slot, COPY, one snapshot
  verify   floe pg --verify on the copied table: a temporary slot's
           snapshot, the stream up to it, both sides read into bucket
           digests (no bucket differs, no second read)
  verify with a difference (--with-difference): one row deleted behind
           floe's back by pyiceberg first, so one bucket is read again
           from both sides

Results go to bench/out/pg_verify.json.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
import bench_pg  # noqa: E402

OUT = os.path.join(HERE, "out", "pg_verify")


def timed(cmd, ok=(0,)):
    p = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    assert p.returncode in ok, p.stderr[-3000:]
    err = p.stderr

    def field(name):
        return re.search(rf"{re.escape(name)}: (.*)", err).group(1).strip()

    h, m, s = ([0, 0] + field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":"))[-3:]
    return {"wall": int(h) * 3600 + int(m) * 60 + float(s),
            "cpu": float(field("User time (seconds)")) + float(field("System time (seconds)")),
            "rss_mib": int(field("Maximum resident set size (kbytes)")) / 1024,
            "status": p.returncode,
            "lines": [line for line in err.splitlines()
                      if line.startswith(("public.", "floe: verified", "floe: copied"))]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10000000)
    ap.add_argument("--with-difference", action="store_true")
    args = ap.parse_args()
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    srv = bench_pg.pg_server()
    dsn = srv.dsn
    res = {"rows": args.rows}
    try:
        bench_pg.load(dsn, args.rows)
        bench_pg.sql(dsn, "CREATE PUBLICATION benchpub FOR TABLE bench")
        cmd = bench_pg.floe_pg(dsn, OUT, "b_verify")
        cmd.remove("--quiet")
        res["copy"] = timed(cmd + ["--stop-at", "now"])
        res["verify"] = timed(cmd + ["--verify"])
        if args.with_difference:
            from iceberg_readers import pyiceberg_catalog
            from pyiceberg.expressions import EqualTo
            t = pyiceberg_catalog(f"{OUT}/catalog.db", f"file://{OUT}/wh").load_table(
                "public.bench")
            t.delete(delete_filter=EqualTo("id", 4242))
            res["verify_difference"] = timed(cmd + ["--verify"], ok=(3,))
    finally:
        srv.stop()
    with open(os.path.join(HERE, "out", "pg_verify.json"), "w") as f:
        json.dump(res, f, indent=1)
    for k in ("copy", "verify", "verify_difference"):
        if k in res:
            r = res[k]
            print(f"{k:18s} wall {r['wall']:7.2f}s  cpu {r['cpu']:7.2f}s  "
                  f"peak RSS {r['rss_mib']:6.0f} MiB  {args.rows / r['wall']:12,.0f} rows/s")
            for line in r["lines"]:
                print("    " + line[:200])


if __name__ == "__main__":
    main()
