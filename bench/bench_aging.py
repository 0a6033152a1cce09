#!/usr/bin/env python3
"""The aging benchmark of issue P7: an upsert table streamed into for an hour
of 1 s commits, with the sink's own maintenance (--maintain auto) and without
(--maintain off), in one run, reported as ratios.

    python3 bench/bench_aging.py [--keys N] [--commits C] [--update-share F]
                                 [--every E] [--rounds R] [--max-age-ms MS]
                                 [--modes auto,off] [--off-commits K] [--pace S]
                                 [--update-mode merge-on-read|copy-on-write]
                                 [--property KEY=VALUE]...

N keys (default 1,000,000) inserted at time 0, then C commits (default
3,600) of input time each updating a share F of the keys (default 1%); the
input is generated once into bench/out/aging/input/ and replayed into
`floe sink --commit-interval 1` through a pipe for each mode.  Every E
commits (default 600) the input pauses until the sink committed that far,
and then:
  - the table is read by DuckDB (iceberg_scan count(*) + sum(id), one
    thread, best of R, default 3) and by Java IcebergGenerics (rows counted
    and keys summed in the JVM, best of R), and so are the same rows
    written as one data file (a fresh table from floe's snapshot batch):
    read cost = table / compacted; and so is the compacted table after one
    more commit (every data file then has deletes: the least a
    merge-on-read table costs between two compactions);
  - the debt (data files, delete files, manifests, snapshots, metadata
    bytes) from `floe inspect --json`, after the reads, and the files and
    manifests the readers met (just before them: maintenance goes on);
  - commit latency: p50 and p99 of the last 100 commits (the sink's metrics),
    and the rows the key index read back from data files or moved without
    reading (after the sink's own compactions).
Without --pace the input runs as fast as the sink takes it, far faster
than one commit a second, so snapshots would never reach the default hour
of age in the run: the auto run's table keeps --max-age-ms of snapshots
(default 10 s, a couple of hundred commits at that speed).
--pace S feeds one commit of input every S seconds of wall time, the
first 100 included (--pace 1: real time, as a sink at a 1 s interval sees it; the
budget of wall time is then what it would be in production), results in
bench/out/aging-paced.json.
The off run stops after K commits (default 1,800): without maintenance
every commit writes a delete file for each data file it deletes from, and
with 1% of the keys updated at random that is every data file, so its
commits slow down as the files pile up (the growth it is there to show).
Throughput: updates read per second while the input flows (pauses left
out), auto against off over the same commits.  Targets (auto, at every checkpoint): read cost at
most 1.3x the compacted table for DuckDB and Java; commit p50 over the last
100 commits at most 1.5x that over the first 100; metadata bytes and
manifest count bounded; throughput at least 0.8x the off run's.
--update-mode copy-on-write makes both runs' table rewrite the files each
commit deletes from (write.update.mode) instead of adding deletes; results
then go to bench/out/aging[-paced]-cow.json.
--property sets a table property for the auto run (e.g.
floe.compact.delete-ratio, to try another compaction threshold).
Results go to bench/out/aging.json (a mode run alone, --modes off, is
added to the other mode's results of an earlier run with the same
parameters, and the ratios are computed over both).
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
from icebench import (FLOE, SCHEMA, TABLE, duckdb_read, inserts, java_read,  # noqa: E402
                      keyed_table, metadata_location, update_commit)
OUT = os.path.join(HERE, "out", "aging")


# ---- input ---------------------------------------------------------------------------------

def generate(a):
    """The input as segment files (inserts, then every `every` commits) and
    the values after each segment."""
    d = os.path.join(OUT, "input", f"{a.keys}-{a.commits}-{a.update_share}-{a.every}")
    done = os.path.join(d, "values.json")
    if os.path.exists(done):
        with open(done) as f:
            return d, json.load(f)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    r = random.Random(1)
    value = [0] * a.keys
    with open(os.path.join(d, "seg-0000.ndjson"), "w") as f:
        f.write(inserts(value))
    values, n = [], int(a.keys * a.update_share)
    for seg in range(1, a.commits // a.every + 1):
        with open(os.path.join(d, f"seg-{seg:04d}.ndjson"), "w") as f:
            for t in range((seg - 1) * a.every + 1, seg * a.every + 1):
                f.write(update_commit(r, value, t, n))
        values.append(sum(value))
        print(f"input: segment {seg} written", flush=True)
    with open(done, "w") as f:
        json.dump(values, f)
    return d, values


# ---- the sink --------------------------------------------------------------------------------

def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def metrics(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\w+)\{([^}]*)\} (\S+)$", line)
        if m:
            q = re.search(r'quantile="([^"]+)"', m.group(2))
            out[m.group(1) + (f"@{q.group(1)}" if q else "")] = float(m.group(3))
    return out


def wait_committed(port, frontier, proc):
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"floe sink exited: {proc.stderr.read()[-3000:]}")
        try:
            if metrics(port).get("floe_committed_frontier", -2) >= frontier:
                return
        except OSError:
            pass
        time.sleep(0.05)


def start_sink(d, mode, a, port):
    os.makedirs(d, exist_ok=True)
    extra = ["--property", f"write.update.mode={a.update_mode}"]
    if mode == "auto":
        extra += ["--property", f"history.expire.max-snapshot-age-ms={a.max_age_ms}"]
        extra += [x for p in a.property for x in ("--property", p)]
    cmd = [FLOE, "sink", "--table", TABLE, "--schema", SCHEMA, "--key", "id", "--input", "-",
           "--commit-interval", "1", "--catalog", f"sqlite:{d}/catalog.db", "--warehouse",
           f"{d}/wh", "--index-dir", f"{d}/index", "--maintain", mode, "--quiet",
           "--metrics-addr", f"127.0.0.1:{port}", *extra]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=subprocess.PIPE)


def feed(proc, path, start=0, end=None):
    """Copy bytes [start, end) of the file to the sink's stdin."""
    with open(path, "rb") as f:
        f.seek(start)
        left = (end if end is not None else os.path.getsize(path)) - start
        while left > 0:
            chunk = f.read(min(left, 1 << 20))
            proc.stdin.write(chunk)
            left -= len(chunk)
    proc.stdin.flush()


def feed_paced(proc, path, pace, start=0, end=None):
    """Copy bytes [start, end) of the file, one commit of input every `pace`
    seconds of wall time (each progress record ends one); the seconds spent
    waiting for the clock are returned (they are not the sink's)."""
    waited, due, at = 0.0, time.perf_counter(), start
    with open(path, "rb") as f:
        f.seek(start)
        for line in f:
            at += len(line)
            if end is not None and at > end:
                break
            proc.stdin.write(line)
            if line.startswith(b'{"progress"'):
                proc.stdin.flush()
                due += pace
                left = due - time.perf_counter()
                if left > 0:
                    time.sleep(left)
                    waited += left
    proc.stdin.flush()
    return waited


def offset_after(path, line):
    """The byte offset just past `line` in the file."""
    with open(path, "rb") as f:
        data = f.read()
    i = data.index(line.encode())
    return i + len(line)


# ---- reading ----------------------------------------------------------------------------------

def compacted(d, keys, commit, share):
    """The same rows as one data file: the values at `commit` (each key's v
    is the last commit that updated it), as floe's snapshot batch; and the
    same table after one more commit updating a share of the keys (the
    least any merge-on-read table holds between compactions: every data
    file has deletes).  Returns the sum of the values."""
    import duckdb
    con = duckdb.connect()
    con.execute("LOAD iceberg")
    rows = con.execute("SELECT id, v FROM iceberg_scan(?) ORDER BY id",
                       [metadata_location(os.path.join(d, "table"))]).fetchall()
    con.close()
    assert len(rows) == keys, (len(rows), keys)
    assert [k for k, _ in rows] == list(range(keys))
    value = [v for _, v in rows]
    base = inserts(value)
    keyed_table(os.path.join(d, "compacted"), base)
    one = update_commit(random.Random(commit), list(value), 1, int(keys * share))
    keyed_table(os.path.join(d, "one-commit"), base + one)
    return sum(value)


def debt(d):
    p = subprocess.run([FLOE, "inspect", "--table", TABLE, "--catalog", f"sqlite:{d}/catalog.db",
                        "--warehouse", f"{d}/wh", "--json", "--limit", "1"],
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout)["debt"]


# ---- a run ------------------------------------------------------------------------------------

def checkpoint(mode, d, a, commit, port, first_p50, value_sum):
    table = os.path.join(d, "table")
    m = metrics(port)                         # the last 100 commits' p50, before reading
    at_read = debt(table)                     # what the readers meet (maintenance goes on)
    dd, dres = duckdb_read(table, a.rounds)
    jj, jres = java_read(table, TABLE, a.rounds)
    csum = compacted(d, a.keys, commit, a.update_share)
    base, one = os.path.join(d, "compacted"), os.path.join(d, "one-commit")
    bd, bdres = duckdb_read(base, a.rounds)
    bj, _ = java_read(base, TABLE, a.rounds)
    od, odres = duckdb_read(one, a.rounds)
    oj, _ = java_read(one, TABLE, a.rounds)
    assert dres == bdres and jres[:2] == tuple(bdres), (dres, jres, bdres)
    assert odres[0] == a.keys, odres
    assert csum == value_sum, "the table must hold the model's values"
    b = debt(table)
    p50 = m.get("floe_commit_duration_seconds@0.5", 0.0)
    p99 = m.get("floe_commit_duration_seconds@0.99", 0.0)
    row = {"commit": commit, "duckdb_s": dd, "java_s": jj, "duckdb_compacted_s": bd,
           "java_compacted_s": bj, "duckdb_ratio": dd / bd, "java_ratio": jj / bj,
           "duckdb_one_commit_ratio": od / bd, "java_one_commit_ratio": oj / bj,
           "commit_p50_s": p50, "commit_p50_ratio": p50 / first_p50, "commit_p99_s": p99,
           "index_rows_read": m.get("floe_index_rows_read_total", 0.0),
           "index_rows_moved": m.get("floe_index_rows_moved_total", 0.0),
           "metadata_bytes": b["metadata_bytes"],
           "manifests": b["data_manifests"] + b["delete_manifests"],
           "data_files": b["data_files"], "delete_files": b["delete_files"],
           "snapshots": b["snapshots"], "deleted_ratio": b["deleted_ratio"],
           "data_files_at_read": at_read["data_files"],
           "delete_files_at_read": at_read["delete_files"],
           "manifests_at_read": at_read["data_manifests"] + at_read["delete_manifests"],
           "maintenance_s": m.get("floe_maintenance_seconds_total", 0.0),
           "compactions": m.get("floe_maintenance_compactions_total", 0.0)}
    print(f"{mode:4} @{commit:5}: read/compacted DuckDB {row['duckdb_ratio']:.2f}x Java "
          f"{row['java_ratio']:.2f}x (one commit on the compacted table: DuckDB "
          f"{od / bd:.2f}x Java {oj / bj:.2f}x) | commit p50 {p50 * 1e3:.1f} ms "
          f"({row['commit_p50_ratio']:.2f}x the first 100), p99 {p99 * 1e3:.0f} ms | metadata {b['metadata_bytes']:,} B,"
          f" {row['manifests']} manifests, {b['data_files']} data / {b['delete_files']} delete "
          f"files, {b['snapshots']} snapshots (when read: {row['manifests_at_read']} manifests, "
          f"{row['data_files_at_read']} / {row['delete_files_at_read']} files)", flush=True)
    return row


def run_mode(mode, a, inputs, values):
    d = os.path.join(OUT, mode)
    shutil.rmtree(d, ignore_errors=True)
    port = free_port()
    proc = start_sink(os.path.join(d, "table"), mode, a, port)
    segs = sorted(n for n in os.listdir(inputs) if n.startswith("seg-"))
    feeding, rows = 0.0, []
    time.sleep(0.3)
    t0 = time.perf_counter()
    feed(proc, os.path.join(inputs, segs[0]))            # the inserts, at time 0
    wait_committed(port, 1, proc)
    first = os.path.join(inputs, segs[1])                # then 100 commits, for their p50
    cut = offset_after(first, '{"progress":101}\n')
    waited = 0.0
    if a.pace:
        waited = feed_paced(proc, first, a.pace, 0, cut)
    else:
        feed(proc, first, 0, cut)
    wait_committed(port, 101, proc)
    first_p50 = metrics(port)["floe_commit_duration_seconds@0.5"]
    feeding += time.perf_counter() - t0 - waited
    commits = a.off_commits if mode == "off" and a.off_commits else a.commits
    per_commit = int(a.keys * a.update_share) * 2
    for i, seg in enumerate(segs[1:commits // a.every + 1], 1):
        t0, waited = time.perf_counter(), 0.0
        if a.pace:
            waited = feed_paced(proc, os.path.join(inputs, seg), a.pace, cut if i == 1 else 0)
        else:
            feed(proc, os.path.join(inputs, seg), cut if i == 1 else 0)
        wait_committed(port, i * a.every + 1, proc)
        feeding += time.perf_counter() - t0 - waited
        row = checkpoint(mode, d, a, i * a.every, port, first_p50, values[i - 1])
        row["updates_per_s"] = (a.keys + i * a.every * per_commit) / feeding
        rows.append(row)
    proc.stdin.close()
    err = proc.stderr.read().decode()
    if proc.wait() != 0:
        raise SystemExit(f"floe sink failed: {err[-3000:]}")
    return {"checkpoints": rows, "first_commit_p50_s": first_p50, "feeding_s": feeding,
            "updates_per_s": rows[-1]["updates_per_s"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--commits", type=int, default=3600)
    ap.add_argument("--update-share", type=float, default=0.01)
    ap.add_argument("--every", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-age-ms", type=int, default=10_000)
    ap.add_argument("--pace", type=float, default=0.0,
                    help="wall seconds per commit of input after the first 100 (0: no pacing)")
    ap.add_argument("--modes", default="auto,off")
    ap.add_argument("--property", action="append", default=[],
                    help="KEY=VALUE: a table property of the auto run (repeatable)")
    ap.add_argument("--update-mode", default="merge-on-read",
                    choices=["merge-on-read", "copy-on-write"],
                    help="the table's write.update.mode, both runs")
    ap.add_argument("--off-commits", type=int, default=1800,
                    help="the off run stops here (its commits slow down as the table ages)")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    inputs, values = generate(a)
    result = {"keys": a.keys, "commits": a.commits, "update_share": a.update_share,
              "every": a.every, "max_age_ms": a.max_age_ms, "pace": a.pace,
              "properties": a.property, "update_mode": a.update_mode}
    name = "aging-paced" if a.pace else "aging"
    if a.update_mode == "copy-on-write":
        name += "-cow"
    path = os.path.join(HERE, "out", name + ".json")
    if os.path.exists(path):            # a mode run earlier with the same parameters is kept
        with open(path) as f:
            old = json.load(f)
        unset = {"pace": 0.0, "properties": [], "update_mode": "merge-on-read"}
        if all(old.get(k, unset.get(k)) == v for k, v in result.items()):
            result.update({m: old[m] for m in ("auto", "off") if m in old})
    for mode in a.modes.split(","):
        result[mode] = run_mode(mode, a, inputs, values)
    if "auto" in result and "off" in result:           # over the same commits
        for on, off in zip(result["auto"]["checkpoints"], result["off"]["checkpoints"]):
            r = on["updates_per_s"] / off["updates_per_s"]
            on["throughput_ratio"] = r
            print(f"throughput to commit {on['commit']}: auto {on['updates_per_s']:,.0f} "
                  f"updates/s, off {off['updates_per_s']:,.0f}: {r:.2f}x (target >= 0.8)")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
