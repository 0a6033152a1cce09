#!/usr/bin/env python3
"""NDJSON to Parquet end to end: `floe to-parquet` against DuckDB's
read_json -> COPY (one thread), on the same lineitem-like rows, zstd and
snappy, in one run.  Reports rows/s, bytes written and the ratio.

    python3 bench/bench_ndjson.py [--rows N] [--rounds R]

Each writer runs R times (default 3), taking turns; the best run counts
(the machine may be shared).  Times are wall clock of the whole process /
statement, parsing included.
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import duckdb  # noqa: E402
import sinkdata  # noqa: E402

FLOE = os.path.join(ROOT, os.environ.get("FLOE_BUILD", "build"), "floe")
COLUMNS = {"l_orderkey": "BIGINT", "l_partkey": "BIGINT", "l_suppkey": "BIGINT",
           "l_linenumber": "INTEGER", "l_quantity": "DECIMAL(12,2)",
           "l_extendedprice": "DECIMAL(12,2)", "l_discount": "DECIMAL(12,2)",
           "l_tax": "DECIMAL(12,2)", "l_returnflag": "VARCHAR", "l_linestatus": "VARCHAR",
           "l_shipdate": "DATE", "l_commitdate": "DATE", "l_receiptdate": "DATE",
           "l_shipinstruct": "VARCHAR", "l_shipmode": "VARCHAR", "l_comment": "VARCHAR"}


def floe(src, out, codec):
    t0 = time.perf_counter()
    subprocess.run([FLOE, "to-parquet", "--schema", sinkdata.SCHEMA, "--input", src, "--output",
                    out, "--compression", codec], check=True, capture_output=True)
    return time.perf_counter() - t0


def duck(src, out, codec):
    con = duckdb.connect()
    con.execute("SET threads = 1")
    cols = ", ".join(f"'{k}': '{v}'" for k, v in COLUMNS.items())
    t0 = time.perf_counter()
    con.execute(f"COPY (SELECT * FROM read_json('{src}', format = 'newline_delimited', "
                f"columns = {{{cols}}})) TO '{out}' (FORMAT parquet, COMPRESSION {codec})")
    secs = time.perf_counter() - t0
    con.close()
    return secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    out = os.path.join(HERE, "out")
    src = sinkdata.generate(os.path.join(out, "data"), a.rows)["rows"]
    mb = os.path.getsize(src) / 1e6
    print(f"{a.rows:,} rows, {mb:,.0f} MB of NDJSON")
    for codec in ("zstd", "snappy"):
        best = {}
        for _ in range(a.rounds):
            for name, fn in (("floe to-parquet", floe), ("DuckDB read_json+COPY", duck)):
                path = os.path.join(out, f"ndjson-{name.split()[0]}.{codec}.parquet")
                secs = fn(src, path, codec)
                if name not in best or secs < best[name][0]:
                    best[name] = (secs, os.path.getsize(path))
        for name, (secs, size) in best.items():
            print(f"  {codec:6s} {name:24s} {a.rows / secs:12,.0f} rows/s  {mb / secs:7.0f} MB/s"
                  f"  {size / 1e6:8.1f} MB written")
        ratio = best["DuckDB read_json+COPY"][0] / best["floe to-parquet"][0]
        print(f"  {codec:6s} floe / DuckDB rows/s: {ratio:.2f}x")


if __name__ == "__main__":
    main()
