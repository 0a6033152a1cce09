"""Reading a benchmark's Iceberg table back, timed: DuckDB's iceberg_scan on
one thread and Java's IcebergGenerics (tests/java Reader "count", timed
inside the JVM), each the best of a few rounds.  Shared by bench_upsert.py
and bench_aging.py; `d` is a directory holding catalog.db and wh/."""
import json
import os
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))


def metadata_location(d):
    con = sqlite3.connect(f"{d}/catalog.db")
    (loc,) = con.execute("SELECT metadata_location FROM iceberg_tables").fetchone()
    con.close()
    return loc


def duckdb_read(d, rounds):
    """(best seconds, (count, sum(id))) of SELECT count(*), sum(id)."""
    import duckdb
    con = duckdb.connect()
    con.execute("LOAD iceberg")
    con.execute("SET threads = 1")
    loc, best, res = metadata_location(d), None, None
    for _ in range(rounds):
        t0 = time.perf_counter()
        res = con.execute("SELECT count(*), sum(id) FROM iceberg_scan(?)", [loc]).fetchone()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    con.close()
    return best, res


def java_read(d, table, rounds):
    """(best seconds, (rows, sum of the first column, heap MiB)), one JVM a round."""
    import java_reader
    best, res = None, None
    for _ in range(rounds):
        p = subprocess.run(["java", "-cp", java_reader._classpath(), "floe.Reader", "count",
                            f"{d}/catalog.db", f"file://{d}/wh", "floe", table],
                           capture_output=True, text=True, timeout=3600)
        if p.returncode != 0:
            raise SystemExit(f"Java reader failed: {p.stderr[-2000:]}")
        out = json.loads(p.stdout)
        best = out["ms"] / 1e3 if best is None else min(best, out["ms"] / 1e3)
        res = (out["rows"], out["sum"], out["heap_mb"])
    return best, res
