#!/usr/bin/env python3
"""After a burst (issue P13): input that arrives faster than real time
outruns maintenance paced by wall time; the final pass when the run ends
(--maintain-final, default 10 s) leaves the table compacted.

    python3 bench/bench_burst.py [--keys N] [--commits C] [--update-share F] [--rounds R]

N keys (default 200,000) inserted at time 0, then C commits (default 60) each
updating a share F of the keys (default 1%), one file fed to `floe sink
--commit-interval 1` at once, so the commits come as fast as floe takes them.
Default options otherwise (maintenance on), format versions 2 and 3, each
with the final pass (the default) and without it (--maintain-final 0).
After the process exits, DuckDB (one thread, best of R, default 5) reads
the table and the same rows written as one data file: read cost = table /
compacted.  Target: at most 1.5x with the default; and the data and delete
files left, and the seconds the run took, beside it.  Results in
bench/out/burst.json.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from icebench import FLOE, SCHEMA, TABLE, duckdb_read, inserts, keyed_table, stream  # noqa: E402

OUT = os.path.join(HERE, "out", "burst")


def files_left(d):
    p = subprocess.run([FLOE, "inspect", "--table", TABLE, "--catalog", f"sqlite:{d}/catalog.db",
                        "--warehouse", f"{d}/wh", "--json", "--limit", "1"],
                       capture_output=True, text=True, check=True)
    debt = json.loads(p.stdout)["debt"]
    return debt["data_files"], debt["delete_files"]


def run(d, src, version, final):
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cmd = [FLOE, "sink", "--table", TABLE, "--schema", SCHEMA, "--key", "id", "--input", src,
           "--commit-interval", "1", "--catalog", f"sqlite:{d}/catalog.db", "--warehouse",
           f"{d}/wh", "--index-dir", f"{d}/index", "--format-version", str(version), "--quiet"]
    if final is not None:
        cmd += ["--maintain-final", final]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=200_000)
    ap.add_argument("--commits", type=int, default=60)
    ap.add_argument("--update-share", type=float, default=0.01)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    src = os.path.join(OUT, "input.ndjson")
    values = stream(src, a.keys, a.commits, a.update_share)
    base = os.path.join(OUT, "compacted")
    keyed_table(base, inserts(values))
    bd, bres = duckdb_read(base, a.rounds)
    result = {"keys": a.keys, "commits": a.commits, "update_share": a.update_share,
              "duckdb_compacted_s": bd, "runs": []}
    for version in (2, 3):
        for final in (None, "0"):
            d = os.path.join(OUT, f"v{version}-{'default' if final is None else 'final-0'}")
            took = run(d, src, version, final)
            dd, dres = duckdb_read(d, a.rounds)
            assert dres == bres, (dres, bres)          # the same rows
            data, deletes = files_left(d)
            row = {"format_version": version, "final_pass": final is None, "run_s": took,
                   "duckdb_s": dd, "duckdb_ratio": dd / bd, "data_files": data,
                   "delete_files": deletes}
            result["runs"].append(row)
            print(f"v{version} {'final pass   ' if final is None else '--maintain-final 0'}: "
                  f"DuckDB reads {dd / bd:.2f}x the compacted table (target <= 1.5 with the "
                  f"default), {data} data / {deletes} delete files left, run {took:.1f} s",
                  flush=True)
    with open(os.path.join(HERE, "out", "burst.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
