#!/usr/bin/env python3
"""The sink benchmarks of issue P3, in one run, reported as ratios.

    python3 bench/bench_sink.py [--rows N] [--pyiceberg-rows N] [--skip-pyiceberg]

On the same lineitem-like rows (bench/sinkdata.py; N default 1000000):
  to-parquet   floe to-parquet on the plain rows (the encoder's rate)
  append       floe sink --mode append on the same rows as a change stream
  upsert       floe sink --key l_orderkey on a stream with 10% updates
  pyiceberg    the same jobs with pyiceberg (table.append / table.upsert per
               batch; bench/pyiceberg_sink.py), on --pyiceberg-rows updates
at a 1 s and a 10 s commit interval (100k updates per second of input time).
Each run is a separate process: wall time, CPU time (wait4) and peak RSS (VmHWM, bench/procstat.py).
Targets: append >= 0.8 x to-parquet; upsert >= 0.5 x append; floe faster
than pyiceberg.  Results also go to bench/out/sink.json.
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


def run(cmd, cwd=None):
    """(wall s, cpu s, peak RSS MiB) of one process (bench/procstat.py);
    fails loudly."""
    return procstat.run_measured(cmd, cwd=cwd)[:3]


def fresh(name):
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def floe_sink(stream, interval_ms, key):
    d = fresh("sink")
    cmd = [FLOE, "sink", "--table", "bench.lineitem", "--schema", sinkdata.SCHEMA,
           "--input", stream, "--commit-interval", f"{interval_ms}ms", "--quiet",
           "--catalog", f"sqlite:{d}/catalog.db", "--warehouse", f"{d}/wh"]
    cmd += ["--key", "l_orderkey"] if key else ["--mode", "append"]
    return run(cmd)


def pyiceberg_sink(mode, stream, interval_ms):
    d = fresh("pyiceberg")
    return run([sys.executable, os.path.join(HERE, "pyiceberg_sink.py"), mode, stream,
                f"{d}/catalog.db", f"file://{d}/wh", str(interval_ms)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--pyiceberg-rows", type=int, default=200_000)
    ap.add_argument("--skip-pyiceberg", action="store_true")
    a = ap.parse_args()
    data = sinkdata.generate(os.path.join(OUT, "data"), a.rows)
    n = a.rows
    res = {}

    def show(name, r, count):
        wall, cpu, rss = r
        res[name] = {"wall_s": wall, "cpu_s": cpu, "peak_rss_mib": rss, "updates": count,
                     "updates_per_s": count / wall}
        print(f"{name:34s} {count / wall:12,.0f} updates/s  wall {wall:7.2f} s  cpu {cpu:7.2f} s"
              f"  peak RSS {rss:7.1f} MiB", flush=True)

    d = fresh("parquet")
    show("floe to-parquet", run([FLOE, "to-parquet", "--schema", sinkdata.SCHEMA, "--input",
                                 data["rows"], "--output", f"{d}/rows.parquet"]), n)
    upsert_updates = sum(1 for line in open(data["upsert"]) if '"progress"' not in line)
    for ci in (1000, 10000):
        show(f"floe sink append @{ci // 1000}s", floe_sink(data["append"], ci, False), n)
        show(f"floe sink upsert @{ci // 1000}s", floe_sink(data["upsert"], ci, True),
             upsert_updates)
    if not a.skip_pyiceberg:
        small = sinkdata.generate(os.path.join(OUT, "data"), a.pyiceberg_rows)
        small_upserts = sum(1 for line in open(small["upsert"]) if '"progress"' not in line)
        for ci in (1000, 10000):
            show(f"floe sink append @{ci // 1000}s (small)", floe_sink(small["append"], ci, False),
                 a.pyiceberg_rows)
            show(f"pyiceberg append @{ci // 1000}s (small)",
                 pyiceberg_sink("append", small["append"], ci), a.pyiceberg_rows)
            show(f"floe sink upsert @{ci // 1000}s (small)", floe_sink(small["upsert"], ci, True),
                 small_upserts)
            show(f"pyiceberg upsert @{ci // 1000}s (small)",
                 pyiceberg_sink("upsert", small["upsert"], ci), small_upserts)

    def ratio(a_, b_):
        return res[a_]["updates_per_s"] / res[b_]["updates_per_s"]

    print("\nratios (updates per second):")
    lines = [("sink append @10s / to-parquet (target >= 0.8)", "floe sink append @10s", "floe to-parquet"),
             ("sink append @1s / to-parquet", "floe sink append @1s", "floe to-parquet"),
             ("upsert @10s / append @10s (target >= 0.5)", "floe sink upsert @10s", "floe sink append @10s"),
             ("upsert @1s / append @1s", "floe sink upsert @1s", "floe sink append @1s")]
    if not a.skip_pyiceberg:
        for ci in ("1s", "10s"):
            lines.append((f"floe / pyiceberg append @{ci}", f"floe sink append @{ci} (small)",
                          f"pyiceberg append @{ci} (small)"))
            lines.append((f"floe / pyiceberg upsert @{ci}", f"floe sink upsert @{ci} (small)",
                          f"pyiceberg upsert @{ci} (small)"))
    res["ratios"] = {}
    for label, x, y in lines:
        res["ratios"][label] = ratio(x, y)
        print(f"  {label:50s} {ratio(x, y):8.2f}")
    with open(os.path.join(OUT, "sink.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
