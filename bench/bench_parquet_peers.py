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
floe's numbers come from bench_parquet (which times only the writing).

Times are wall clock and process CPU time; CPU is what to compare on a busy
machine.  The writers take turns for $BENCH_ROUNDS rounds (default 5) so
they see the same conditions; the best (least CPU) and median runs are
reported.
"""
import os
import statistics
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
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))


def timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def run_floe(codec, rows, path):
    res = subprocess.run([BENCH, str(rows), codec, path], capture_output=True, text=True,
                         check=True)
    # "floe zstd: N rows, wall W s (...), cpu C s (...), ..."
    line = res.stdout.strip().splitlines()[-1]
    return (float(line.split("wall ")[1].split(" s")[0]),
            float(line.split("cpu ")[1].split(" s")[0]))


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

    def path(tool, codec):
        return os.path.join(OUT, f"bench_{tool}_{codec}.parquet")

    writers = {
        "floe": lambda c: run_floe(c, rows, path("floe", c)),
        "duckdb": lambda c: timed(lambda: con.execute(
            f"COPY lineitem TO '{path('duckdb', c)}' (FORMAT parquet, COMPRESSION {c})")),
        "polars": lambda c: timed(lambda: df.write_parquet(path("polars", c), compression=c)),
    }
    runs = {(t, c): [] for t in writers for c in codecs}
    order = list(writers)
    for r in range(ROUNDS):
        for codec in codecs:
            for tool in order[r % 3:] + order[:r % 3]:
                runs[(tool, codec)].append(writers[tool](codec))

    best = {}
    for codec in codecs:
        for tool in writers:
            rs = runs[(tool, codec)]
            wall, cpu = min(rs, key=lambda x: x[1])
            med = statistics.median(x[1] for x in rs)
            size = os.path.getsize(path(tool, codec))
            best[(tool, codec)] = (rows / cpu, rows / med, size)
            print(f"{tool:7s} {codec:7s} best cpu {cpu:6.3f} s ({rows / cpu:9.0f} rows/s, "
                  f"wall {wall:6.3f} s)  median cpu {med:6.3f} s  {size / 1e6:7.1f} MB",
                  flush=True)
    for codec in codecs:
        f_best, f_med, f_size = best[("floe", codec)]
        for peer in ("duckdb", "polars"):
            p_best, p_med, p_size = best[(peer, codec)]
            print(f"{codec}: floe / {peer}: {f_best / p_best:.2f}x rows/s (best), "
                  f"{f_med / p_med:.2f}x (median), size {f_size / p_size:.2f}x")


if __name__ == "__main__":
    main()
