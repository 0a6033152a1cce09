#!/usr/bin/env python3
"""Restarts of a sink with a large key index (issue P6), timed and checked.

    python3 bench/bench_index_restart.py [--keys N] [--updates U]

A position-mode upsert table of N keys (default 10,000,000), then:
  1. a run of U updates (default 1% of N per batch, 10 batches) killed with
     SIGKILL halfway; the rerun over the same input must load the index
     (checkpoint + logged attempts, "no rebuild" in its report) and end
     exact;
  2. the index directory deleted: the next run rebuilds it from the table
     and ends exact;
  3. Java's RewriteFiles compacts the table and a merge-on-read delete
     (RowDelta) removes keys between runs: the next run sees that other
     writers rewrote most of the table, rebuilds rather than re-pointing
     every key of its loaded index, and ends exact.
"Exact": DuckDB's count(*), count(DISTINCT id), sum(id) and sum(v) equal the
model's.  Times are the program's own report (load / rebuild) and the run's
wall time.  Results go to bench/out/index_restart.json.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
FLOE = os.path.join(ROOT, os.environ.get("FLOE_BUILD", "build"), "floe")
OUT = os.path.join(HERE, "out", "index_restart")
SCHEMA = "id bigint not null, v bigint not null"
TABLE = "bench.t"


class Model:
    def __init__(self, keys):
        self.value = [0] * keys
        self.live = bytearray(b"\x01") * keys
        self.t = 0

    def inserts(self, path, per_batch=1_000_000):
        with open(path, "w") as f:
            for k in range(len(self.value)):
                f.write('{"time":%d,"diff":1,"row":{"id":%d,"v":0}}\n' % (k // per_batch, k))
            self.t = len(self.value) // per_batch + 1
            f.write('{"progress":%d}\n' % self.t)

    def updates(self, path, batches, per_batch, r):
        with open(path, "w") as f:
            for _ in range(batches):
                t = self.t
                out = []
                for k in r.sample(range(len(self.value)), per_batch):
                    if not self.live[k]:
                        continue
                    out.append('{"time":%d,"diff":-1,"row":{"id":%d,"v":%d}}\n'
                               '{"time":%d,"diff":1,"row":{"id":%d,"v":%d}}\n'
                               % (t, k, self.value[k], t, k, t))
                    self.value[k] = t
                out.append('{"progress":%d}\n' % (t + 1))
                f.write("".join(out))
                self.t = t + 1

    def expected(self):
        ids = [k for k in range(len(self.value)) if self.live[k]]
        return (len(ids), len(ids), sum(ids), sum(self.value[k] for k in ids))


def sink(d, src, kill_after=None):
    cmd = [FLOE, "sink", "--table", TABLE, "--schema", SCHEMA, "--key", "id", "--input", src,
           "--commit-interval", "1", "--catalog", f"sqlite:{d}/catalog.db", "--warehouse",
           f"{d}/wh", "--index-dir", f"{d}/index", "--maintain", "off"]   # not --quiet: it hides "loaded"
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    if kill_after is not None:
        time.sleep(kill_after)
        p.send_signal(signal.SIGKILL)
        p.wait()
        return time.perf_counter() - t0, "killed"
    err = p.communicate()[1]
    if p.returncode != 0:
        raise SystemExit(f"floe sink failed: {err[-3000:]}")
    return time.perf_counter() - t0, err


def index_line(err):
    for line in err.splitlines():
        if "key index" in line:
            return line
    raise SystemExit(f"no key index report: {err}")


def exact(d, model):
    import duckdb
    con = duckdb.connect()
    con.execute("LOAD iceberg")
    (loc,) = sqlite3.connect(f"{d}/catalog.db").execute(
        "SELECT metadata_location FROM iceberg_tables").fetchone()
    got = con.execute("SELECT count(*), count(DISTINCT id), sum(id), sum(v) FROM iceberg_scan(?)",
                      [loc]).fetchone()
    want = model.expected()
    assert tuple(int(x) for x in got) == want, (got, want)
    return True


def step(name, d, src, model, result, want):
    secs, err = sink(d, src)
    line = index_line(err)
    assert want in line, f"{name}: expected '{want}' in: {line}"
    exact(d, model)
    m = re.search(r"in ([\d.]+)s", line)
    result[name] = {"wall_s": secs, "index": line, "index_s": float(m.group(1)) if m else None}
    print(f"{name:10} {secs:7.1f}s  {line}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=10_000_000)
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--per-batch", type=int, default=0, help="default 1%% of the keys")
    a = ap.parse_args()
    per = a.per_batch or a.keys // 100
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    d, r, model, result = f"{OUT}/t", random.Random(7), Model(a.keys), {"keys": a.keys}
    model.inserts(f"{OUT}/0.ndjson")
    secs, _ = sink(d, f"{OUT}/0.ndjson")
    exact(d, model)
    result["load"] = {"wall_s": secs}
    print(f"load       {secs:7.1f}s  {a.keys:,} keys", flush=True)
    # 1: killed halfway, rerun loads the index
    model.updates(f"{OUT}/1.ndjson", a.batches, per, r)
    killed, _ = sink(d, f"{OUT}/1.ndjson", kill_after=max(2.0, a.keys / 2e6))
    result["killed_after_s"] = killed
    step("restart", d, f"{OUT}/1.ndjson", model, result, "no rebuild")
    # 2: the index lost: rebuilt from the table
    shutil.rmtree(f"{d}/index")
    model.updates(f"{OUT}/2.ndjson", a.batches, per, r)
    step("rebuild", d, f"{OUT}/2.ndjson", model, result, "rebuilt from the table")
    # 3: Java compacts and deletes between runs
    import engines
    wh = f"file://{d}/wh"
    engines.compact(f"{d}/catalog.db", wh, TABLE)
    gone = r.sample([k for k in range(0, a.keys, 97)], 1000)
    engines.delete_mor(f"{d}/catalog.db", wh, TABLE, "id", gone)
    for k in gone:
        model.live[k] = 0
    model.updates(f"{OUT}/3.ndjson", a.batches, per, r)
    step("engines", d, f"{OUT}/3.ndjson", model, result, "a rebuild is cheaper")
    with open(os.path.join(HERE, "out", "index_restart.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
