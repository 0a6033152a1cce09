#!/usr/bin/env python3
"""Time DuckDB's and polars' single-threaded Parquet writers on the same
lineitem-like data bench_parquet.c writes, for comparison with floe.

    python3 bench/bench_parquet_peers.py [ROWS] [CODECS]
        ROWS    default 6000000
        CODECS  comma-separated, default zstd,snappy

The data is produced by floe's own benchmark (build/bench/bench_parquet, or
$FLOE_BUILD/bench/...) with codec none, loaded into DuckDB and polars
untimed, then each peer writes it with one thread:
    DuckDB: SET threads=1; COPY lineitem TO ... (FORMAT parquet, COMPRESSION c)
    polars: POLARS_MAX_THREADS=1, DataFrame.write_parquet(..., compression=c)
floe's own numbers come from running bench_parquet with each codec.  Times are
wall clock and process CPU time (CPU is what to compare on a busy machine);
each writer runs $BENCH_REPEAT times (default 3) and the fastest run counts.
"""
import os
import subprocess
import sys
import time

os.environ["POLARS_MAX_THREADS"] = "1"   # must precede the import

import duckdb  # noqa: E402
import polars as pl  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("FLOE_BUILD", "build")
BENCH = os.path.join(ROOT, BUILD, "bench", "bench_parquet")
OUT = os.environ.get("BENCH_DIR", "/tmp")
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))


def timed(fn):
    """(wall, cpu) of the run with the least CPU time."""
    best = None
    for _ in range(REPEAT):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        run = (time.perf_counter() - w0, time.process_time() - c0)
        if best is None or run[1] < best[1]:
            best = run
    return best


def report(name, codec, rows, wall, cpu, path):
    size = os.path.getsize(path)
    print(f"{name:7s} {codec:7s} wall {wall:7.3f} s ({rows / wall:10.0f} rows/s)  "
          f"cpu {cpu:7.3f} s ({rows / cpu:10.0f} rows/s)  {size / 1e6:8.1f} MB", flush=True)
    return rows / cpu, size


def floe(codec, rows):
    path = os.path.join(OUT, f"bench_floe_{codec}.parquet")
    res = subprocess.run([BENCH, str(rows), codec, path, str(REPEAT)], capture_output=True,
                         text=True, check=True)
    # one line per run: "floe zstd: N rows, wall W s (...), cpu C s (...), ..."
    runs = [(float(line.split("wall ")[1].split(" s")[0]),
             float(line.split("cpu ")[1].split(" s")[0]))
            for line in res.stdout.strip().splitlines()]
    wall, cpu = min(runs, key=lambda r: r[1])
    return report("floe", codec, rows, wall, cpu, path)


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 6000000
    codecs = sys.argv[2].split(",") if len(sys.argv) > 2 else ["zstd", "snappy"]
    src = os.path.join(OUT, "bench_source_lineitem.parquet")
    subprocess.run([BENCH, str(rows), "none", src], check=True, capture_output=True)

    con = duckdb.connect()
    con.execute("SET threads = 1")
    con.execute(f"CREATE TABLE lineitem AS SELECT * FROM read_parquet('{src}')")
    df = pl.read_parquet(src)
    assert df.height == rows

    results = {}
    for codec in codecs:
        results[("floe", codec)] = floe(codec, rows)
        path = os.path.join(OUT, f"bench_duckdb_{codec}.parquet")
        wall, cpu = timed(lambda: con.execute(
            f"COPY lineitem TO '{path}' (FORMAT parquet, COMPRESSION {codec})"))
        results[("duckdb", codec)] = report("duckdb", codec, rows, wall, cpu, path)
        path = os.path.join(OUT, f"bench_polars_{codec}.parquet")
        wall, cpu = timed(lambda: df.write_parquet(path, compression=codec))
        results[("polars", codec)] = report("polars", codec, rows, wall, cpu, path)
    for codec in codecs:
        f_rate, f_size = results[("floe", codec)]
        for peer in ("duckdb", "polars"):
            p_rate, p_size = results[(peer, codec)]
            print(f"{codec}: floe / {peer} = {f_rate / p_rate:.2f}x rows/s (cpu), "
                  f"size {f_size / p_size:.2f}x")


if __name__ == "__main__":
    main()
