#!/usr/bin/env python3
"""What one commit of updates costs readers of a compacted upsert table:
the floor under the read-cost ratios of bench_aging.py.

    python3 bench/bench_read_floor.py [--keys N] [--updates U,U,...]
                                      [--format-versions 2,3] [--rounds R]

N keys (default 1,000,000) written as one data file (floe's snapshot
batch: the compacted table), then, for each U (default 1, 100, 10,000:
one row, 0.01% and 1% of the keys) and format version, the same table
after one more commit updating U keys at random (position deletes on v2,
a deletion vector on v3: every merge-on-read writer leaves that much), and
that table again after `floe maintain --compact-all`.  Each is read by
DuckDB (iceberg_scan count(*) + sum(id), one thread) and Java
IcebergGenerics (rows counted and keys summed in the JVM: cold, a JVM a
read, and warm, the reads after the first in one JVM), the best of R rounds
(default 5), as a ratio to the compacted table.  Results also go to
bench/out/read_floor.json.
"""
import argparse
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from icebench import (FLOE, TABLE, duckdb_read, inserts, java_read,  # noqa: E402
                      java_read_warm, keyed_table, update_commit)
OUT = os.path.join(HERE, "out", "read_floor")


def read(d, rounds):
    dd, dres = duckdb_read(d, rounds)
    jj, jres = java_read(d, TABLE, rounds)
    jw, wres = java_read_warm(d, TABLE, rounds)
    assert tuple(dres) == tuple(jres[:2]) == tuple(wres), (dres, jres, wres)
    return dd, jj, jw, tuple(dres)


def compact(d):
    subprocess.run([FLOE, "maintain", "--table", TABLE, "--catalog", f"sqlite:{d}/catalog.db",
                    "--warehouse", f"{d}/wh", "--compact-all"], check=True,
                   capture_output=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--updates", default="1,100,10000")
    ap.add_argument("--format-versions", default="2,3")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    value = [0] * a.keys
    base = inserts(value)
    rows = []
    for fv in a.format_versions.split(","):
        extra = ("--format-version", fv)
        keyed_table(os.path.join(OUT, f"v{fv}-compacted"), base, *extra)
        bd, bj, bw, want = read(os.path.join(OUT, f"v{fv}-compacted"), a.rounds)
        for u in map(int, a.updates.split(",")):
            d = os.path.join(OUT, f"v{fv}-{u}")
            keyed_table(d, base + update_commit(random.Random(u), list(value), 1, u), *extra)
            od, oj, ow, got = read(d, a.rounds)
            assert got == want, (got, want)        # the updates keep every key and its id
            compact(d)
            cd, cj, cw, got = read(d, a.rounds)
            assert got == want, (got, want)
            row = {"format_version": int(fv), "updates": u, "duckdb_compacted_s": bd,
                   "java_compacted_s": bj, "java_warm_compacted_s": bw,
                   "duckdb_ratio": od / bd, "java_ratio": oj / bj, "java_warm_ratio": ow / bw,
                   "duckdb_after_compaction_ratio": cd / bd,
                   "java_after_compaction_ratio": cj / bj,
                   "java_warm_after_compaction_ratio": cw / bw}
            rows.append(row)
            print(f"v{fv}, one commit of {u:,} updates on {a.keys:,} keys: DuckDB "
                  f"{row['duckdb_ratio']:.2f}x, Java {row['java_ratio']:.2f}x (warm "
                  f"{row['java_warm_ratio']:.2f}x) the compacted table; after floe maintain "
                  f"--compact-all: DuckDB {row['duckdb_after_compaction_ratio']:.2f}x, Java "
                  f"{row['java_after_compaction_ratio']:.2f}x (warm "
                  f"{row['java_warm_after_compaction_ratio']:.2f}x)", flush=True)
    with open(os.path.join(HERE, "out", "read_floor.json"), "w") as f:
        json.dump({"keys": a.keys, "rounds": a.rounds, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
