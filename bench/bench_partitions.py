#!/usr/bin/env python3
"""Sink throughput into partitioned tables, side by side with the
unpartitioned table in one run (issue P11):

    python3 bench/bench_partitions.py [--rows N] [--timeout S]

On bench/sinkdata.py's upsert stream (N updates, default 300000, 100k per
second of input time, a 10 s commit interval: 300,000 updates fill one
batch, 3,000,000 three of a million each), `floe sink --key l_orderkey`
into a table that is unpartitioned, partitioned by bucket(100, l_orderkey)
and by bucket(10000, l_orderkey) (every batch touches every bucket).  Each
run is a separate process: wall time, CPU time and peak RSS
(bench/procstat.py), data and delete files written, and the ratio of the unpartitioned
wall time to each.  Targets: 100 partitions at least 0.7x, 10,000 at least
0.4x.  A run past --timeout seconds (default 600) is reported as such.
Results also go to bench/out/partitions-ROWS.json.
"""
import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import procstat  # noqa: E402
import sinkdata  # noqa: E402

FLOE = os.path.join(ROOT, os.environ.get("FLOE_BUILD", "build"), "floe")
OUT = os.path.join(HERE, "out")
SPECS = [None, "bucket(100, l_orderkey)", "bucket(10000, l_orderkey)"]


def one(stream, spec, timeout, k):
    # a directory of its own per run, all removed at the end: a run must not
    # pay for the file system reclaiming the previous run's files
    d = os.path.join(OUT, f"partitions-{k}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cmd = [FLOE, "sink", "--table", "bench.lineitem", "--schema", sinkdata.SCHEMA,
           "--key", "l_orderkey", "--input", stream, "--commit-interval", "10s", "--quiet",
           "--maintain", "off", "--catalog", f"sqlite:{d}/catalog.db", "--warehouse", f"{d}/wh"]
    if spec:
        cmd += ["--partition-by", spec]
    try:
        wall, cpu, rss = procstat.run_measured(cmd, timeout=timeout)[:3]
    except TimeoutError:
        return {"spec": spec, "timeout": timeout}
    names = [f for top, _, fs in os.walk(f"{d}/wh") if "/data" in top for f in fs]
    data = sum(1 for f in names if f.startswith("data") and f.endswith(".parquet"))
    deletes = sum(1 for f in names if f.startswith("delete"))
    return {"spec": spec, "wall_s": wall, "cpu_s": cpu, "peak_rss_mib": rss, "data_files": data,
            "delete_files": deletes}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=300000)
    ap.add_argument("--timeout", type=float, default=600)
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    data = os.path.join(OUT, "data")
    stream = sinkdata.generate(data, a.rows)["upsert"]
    results = [one(stream, spec, a.timeout, k) for k, spec in enumerate(SPECS)]
    for k in range(len(SPECS)):
        shutil.rmtree(os.path.join(OUT, f"partitions-{k}"), ignore_errors=True)
    base = results[0]["wall_s"]
    for r in results:
        name = r["spec"] or "unpartitioned"
        if "timeout" in r:
            print(f"{name:28s} did not finish within {r['timeout']:.0f} s")
            continue
        r["ratio"] = base / r["wall_s"]
        print(f"{name:28s} {r['wall_s']:7.2f} s wall {r['cpu_s']:7.2f} s cpu "
              f"{r['peak_rss_mib']:6.0f} MiB  {r['data_files']:6d} data {r['delete_files']:6d} "
              f"delete files  {r['ratio']:.2f}x")
    with open(os.path.join(OUT, f"partitions-{a.rows}.json"), "w") as f:
        json.dump({"rows": a.rows, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
