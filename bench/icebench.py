"""The keyed upsert benchmarks' common parts (bench_upsert.py,
bench_aging.py, bench_compact_spark.py): their input, rows (id, v, name)
updated at random, and reading their Iceberg table back, timed: DuckDB's
iceberg_scan on one thread and Java's IcebergGenerics (tests/java Reader
"count", timed inside the JVM), each the best of a few rounds; Java both
cold (a JVM a read, as a one-off query pays) and warm (the reads after the
first in one JVM, as a long-running engine pays).  `d` is a
directory holding catalog.db and wh/."""
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
FLOE = os.path.join(os.path.dirname(HERE), os.environ.get("FLOE_BUILD", "build"), "floe")
SCHEMA = "id bigint not null, v bigint not null, name text"
TABLE = "bench.t"


def inserts(values, t=0):
    """Every key k inserted at time t with v = values[k], then progress t + 1."""
    return "".join('{"time":%d,"diff":1,"row":{"id":%d,"v":%d,"name":"n%d"}}\n' % (t, k, v, k)
                   for k, v in enumerate(values)) + '{"progress":%d}\n' % (t + 1)


def update_commit(r, value, t, n):
    """One commit at time t: n keys drawn by r retracted and inserted with
    v = t (value[] follows), then progress t + 1."""
    out = []
    for k in r.sample(range(len(value)), n):
        out.append('{"time":%d,"diff":-1,"row":{"id":%d,"v":%d,"name":"n%d"}}\n'
                   '{"time":%d,"diff":1,"row":{"id":%d,"v":%d,"name":"n%d"}}\n'
                   % (t, k, value[k], k, t, k, t, k))
        value[k] = t
    out.append('{"progress":%d}\n' % (t + 1))
    return "".join(out)


def stream(path, keys, commits, share, seed=1):
    """Inserts of every key at time 0, then `commits` commits updating a
    share of the keys each; returns each key's final v."""
    r = random.Random(seed)
    value = [0] * keys
    with open(path, "w") as f:
        f.write(inserts(value))
        for t in range(1, commits + 1):
            f.write(update_commit(r, value, t, int(keys * share)))
    return value


def keyed_table(d, text, *extra):
    """A fresh table in d (catalog.db, wh/) from the input text, one commit
    per second of input time, maintenance off, no stored key index."""
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    src = os.path.join(d, "rows.ndjson")
    with open(src, "w") as f:
        f.write(text)
    subprocess.run([FLOE, "sink", "--table", TABLE, "--schema", SCHEMA, "--key", "id", "--input",
                    src, "--catalog", f"sqlite:{d}/catalog.db", "--warehouse", f"{d}/wh",
                    "--commit-interval", "1", "--index-dir", "", "--maintain", "off", "--quiet",
                    *extra], check=True)


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


def _java_count(d, table, reads=1):
    """The Java Reader's "count" of the table, `reads` times in one JVM."""
    import java_reader
    p = subprocess.run(["java", "-cp", java_reader._classpath(), "floe.Reader", "count",
                        f"{d}/catalog.db", f"file://{d}/wh", "floe", table, str(reads)],
                       capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise SystemExit(f"Java reader failed: {p.stderr[-2000:]}")
    return json.loads(p.stdout)


def java_read(d, table, rounds):
    """(best seconds, (rows, sum of the first column, heap MiB)), one JVM a round."""
    best, res = None, None
    for _ in range(rounds):
        out = _java_count(d, table)
        best = out["ms"] / 1e3 if best is None else min(best, out["ms"] / 1e3)
        res = (out["rows"], out["sum"], out["heap_mb"])
    return best, res


def java_read_warm(d, table, rounds):
    """(best seconds of 3 x `rounds` reads in one JVM after a first, cold one
    (the JIT compiler still works through the first few), (rows, sum))."""
    out = _java_count(d, table, 3 * rounds + 1)
    return out["warm_ms"] / 1e3, (out["rows"], out["sum"])
