#!/usr/bin/env python3
"""The upsert benchmarks of issue P6, in one run, reported as ratios.

    python3 bench/bench_upsert.py [--keys N] [--commits C] [--update-share F]
                                  [--skip-equality] [--rounds R]

read     A table of N keys (default 1,000,000) after C commits (default 100)
         that each update F of the keys (default 1%), written by floe sink
         (maintenance off: the tables as the deletes alone leave them; see
         bench_aging.py for maintenance) in position mode on format 2 and
         on format 3 (and, unless
         --skip-equality, in equality mode), against the same final rows
         compacted into one data file (floe's snapshot batch).  Each is read
         by DuckDB (iceberg_scan, count(*) + sum(key), threads = 1, the best
         of R rounds, default 3) and by Java Iceberg (IcebergGenerics, rows
         counted and the key summed inside the JVM, timed there; one JVM per
         read).  Ratios: table / compacted.  Targets: <= 3x on v2, <= 2x on v3.
rebuild  The position v2 table's key index rebuilt cold (floe sink with an
         empty --index-dir: the time the program reports for the rebuild,
         which reads every live data file's key column and applies its
         deletes), against pyarrow reading the same key column of the same
         data files (pyarrow.parquet.read_table(columns=[key]), one thread),
         as rows per second.
Results also go to bench/out/upsert.json.  Throughput (upsert against
append) is bench/bench_sink.py's; the index's memory per key and its
spilling are bench/bench_keyindex.c's (docs/benchmarks.md).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
from icebench import FLOE, SCHEMA, TABLE, duckdb_read, inserts, java_read, stream  # noqa: E402
OUT = os.path.join(HERE, "out", "upsert")


def sink(d, src, *extra, index_dir=None):
    os.makedirs(d, exist_ok=True)
    cmd = [FLOE, "sink", "--table", TABLE, "--schema", SCHEMA, "--key", "id", "--input", src,
           "--commit-interval", "1", "--catalog", f"sqlite:{d}/catalog.db", "--warehouse",
           f"{d}/wh", "--index-dir", index_dir or f"{d}/index", "--maintain", "off", *extra]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"floe sink failed: {p.stderr}")
    return time.perf_counter() - t0, p.stderr








def data_files(d):
    from iceberg_readers import pyiceberg_catalog
    t = pyiceberg_catalog(f"{d}/catalog.db", f"file://{d}/wh").load_table(TABLE)
    return [task.file.file_path for task in t.scan().plan_files()]


def pyarrow_keys(paths):
    import pyarrow.parquet as pq
    t0 = time.perf_counter()
    n = 0
    for p in paths:
        n += pq.read_table(p.removeprefix("file://"), columns=["id"], use_threads=False).num_rows
    return n, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--commits", type=int, default=100)
    ap.add_argument("--update-share", type=float, default=0.01)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-equality", action="store_true")
    a = ap.parse_args()
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    src, flat = f"{OUT}/changes.ndjson", f"{OUT}/compacted.ndjson"
    value = stream(src, a.keys, a.commits, a.update_share)
    with open(flat, "w") as f:
        f.write(inserts(value))
    tables = {"compacted": ("compacted", [flat]), "position-v2": ("v2", [src]),
              "position-v3": ("v3", [src, "--format-version", "3"])}
    if not a.skip_equality:
        tables["equality-v2"] = ("eq", [src, "--delete-mode", "equality"])
    result = {"keys": a.keys, "commits": a.commits, "update_share": a.update_share}
    for name, (sub, args) in tables.items():
        secs, _ = sink(f"{OUT}/{sub}", *args)
        duck, dres = duckdb_read(f"{OUT}/{sub}", a.rounds)
        java, jres = java_read(f"{OUT}/{sub}", TABLE, a.rounds)
        result[name] = {"sink_s": secs, "duckdb_s": duck, "java_s": java, "duckdb": dres,
                        "java": jres}
        print(f"{name:12} sink {secs:7.2f}s  duckdb {duck:8.3f}s  java {java:8.3f}s "
              f"(rows {jres[0]}, heap {jres[2]} MiB)", flush=True)
    base = result["compacted"]
    for name in tables:
        if name == "compacted":
            continue
        r = result[name]
        assert r["duckdb"] == base["duckdb"], (name, r["duckdb"], base["duckdb"])
        assert r["java"][:2] == base["java"][:2], (name, r["java"], base["java"])
        r["duckdb_ratio"] = r["duckdb_s"] / base["duckdb_s"]
        r["java_ratio"] = r["java_s"] / base["java_s"]
        print(f"{name:12} read / compacted: DuckDB {r['duckdb_ratio']:.2f}x, "
              f"Java {r['java_ratio']:.2f}x")
    # the cold rebuild of the v2 table's index, against pyarrow on the same files
    files = data_files(f"{OUT}/v2")
    empty = f"{OUT}/rebuild-index"
    shutil.rmtree(empty, ignore_errors=True)
    with open(f"{OUT}/none.ndjson", "w"):
        pass
    _, err = sink(f"{OUT}/v2", f"{OUT}/none.ndjson", index_dir=empty)
    m = re.search(r"rebuilt .*?: (\d+) keys from (\d+) data files in ([\d.]+)s", err)
    assert m, err
    keys, secs = int(m.group(1)), float(m.group(3))
    rows, pa_secs = pyarrow_keys(files)
    result["rebuild"] = {"keys": keys, "files": int(m.group(2)), "rows_read": rows,
                         "floe_s": secs, "pyarrow_s": pa_secs,
                         "floe_rows_per_s": rows / max(secs, 1e-9),
                         "pyarrow_rows_per_s": rows / pa_secs}
    print(f"rebuild      floe reads {rows:,} rows of {len(files)} files into {keys:,} keys in "
          f"{secs:.2f}s ({rows / max(secs, 1e-9):,.0f} rows/s); pyarrow reads their key column "
          f"in {pa_secs:.2f}s ({rows / pa_secs:,.0f} rows/s): floe / pyarrow "
          f"{pa_secs / max(secs, 1e-9):.2f}x")
    with open(os.path.join(HERE, "out", "upsert.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
