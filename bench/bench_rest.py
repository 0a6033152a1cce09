#!/usr/bin/env python3
"""The REST + S3 benchmark of issue P4: commit latency (p50/p99) and rows/s
of `floe sink` over a REST catalog with an S3 warehouse, against the local
default, reported as ratios.

    python3 bench/bench_rest.py [--rows N] [--commits K] [--modes append,upsert]
                                [--repeat R] [--skip-rest-files] [--poll-ms MS]

One change stream (bench/sinkdata.py; N default 1000000 updates, 100k per
second of input time) is cut into about K commits (default 100) by
--commit-interval, and sunk by separate `floe sink` processes into
  local       --catalog sqlite:... --warehouse DIR (the default set-up)
  rest+files  Apache Iceberg's REST catalog server (tests/restserver.py), its
              warehouse local files: the catalog's cost alone
  rest+s3     the same server with its warehouse in a bucket of versitygw
              (tests/s3server.py, SigV4-verifying S3 on loopback), floe using
              the credentials the catalog vends: catalog plus storage cost
in each mode of --modes (append: every update a row; upsert: --key
l_orderkey, 10% of the updates replace an earlier key).  Before any timed
run, every set-up takes an untimed warm-up run per mode (the first 10% of
the stream into another table, at a tenth of the commit interval: about K
commits), so that the REST server's JVM has loaded and compiled its hot
paths.  Even so the first mode timed on a server measured slower (its
commits 30-40% longer in trials), so the timed runs come in R rounds (default
2), the order of the modes reversed in every other round; rows/s is over
the summed wall time, latency percentiles over the pooled samples.

Per run: wall time, rows/s (input updates per wall second, so in upsert mode
change records, not table rows), floe's CPU time (wait4), its peak RSS (VmHWM
from /proc, read at every scrape: wait4's ru_maxrss would include this
script's own peak RSS, which a child inherits until exec), and the CPU
time the servers used meanwhile (/proc).  Commit latency comes from
floe's own metrics: floe exposes no per-commit timings, only the summaries
floe_commit_duration_seconds (catalog commit: manifests, manifest list,
metadata, catalog swap, retries included) and floe_close_duration_seconds
(closing a batch's data files; on S3 that includes uploading what is still
buffered, here each whole file, as files stay below one 8 MiB part) as _sum
and _count without quantiles.  Commits are synchronous and floe republishes its stats
right after each one, so the script scrapes --metrics-addr every --poll-ms
and turns each step of _count into one sample (its step of _sum); when one
scrape sees k > 1 new commits, each gets their mean (counted as "merged" in
the output).  The last commits can land after the last scrape (the process
exits at the end of the input): "seen" says how many were sampled.
p50/p99 are over those samples (linear interpolation).

Results also go to bench/out/rest.json.  Numbers from a loaded machine (the
servers share its cores with floe) are noisy; compare ratios, not absolutes.
"""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
import sinkdata  # noqa: E402
from procstat import peak_rss_mib  # noqa: E402
from restserver import RestServer, s3_rest_server  # noqa: E402
from s3server import S3Server  # noqa: E402

FLOE = os.path.join(ROOT, os.environ.get("FLOE_BUILD", "build"), "floe")
OUT = os.path.join(HERE, "out")
WORK = os.path.join(OUT, "rest")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fresh(name):
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def proc_cpu(pid):
    """CPU seconds (user + system, all threads) a live process has used."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def percentile(xs, p):
    """The p-th percentile of xs, interpolating linearly between ranks."""
    s = sorted(xs)
    if not s:
        return float("nan")
    k = (len(s) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


# ---- commit latencies from the metrics endpoint ------------------------------------------

SAMPLE = re.compile(r"^(floe_(?:commit|close)_duration_seconds_(?:sum|count))\{[^}]*\} (\S+)$",
                    re.M)


def scrape(port):
    """{name: value} of the duration summaries, or None if nobody answers."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as c:
            c.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            data = b""
            while chunk := c.recv(65536):
                data += chunk
    except OSError:
        return None
    vals = {m.group(1): float(m.group(2)) for m in SAMPLE.finditer(data.decode())}
    return vals if len(vals) == 4 else None


class Steps:
    """Per-event durations from a cumulative (_sum, _count) pair."""

    def __init__(self, name):
        self.name = name
        self.sum = self.count = 0.0
        self.samples, self.merged = [], 0

    def update(self, vals):
        s, n = vals[self.name + "_sum"], vals[self.name + "_count"]
        k = int(n - self.count)
        if k > 0:
            self.samples += [(s - self.sum) / k] * k
            self.merged += k if k > 1 else 0
        self.sum, self.count = s, n


class Poller(threading.Thread):
    """Scrapes a running floe's metrics and its peak RSS until `done`."""

    def __init__(self, pid, port, every):
        super().__init__(daemon=True)
        self.pid, self.port, self.every = pid, port, every
        self.done = threading.Event()
        self.commit = Steps("floe_commit_duration_seconds")
        self.close = Steps("floe_close_duration_seconds")
        self.scrapes = 0
        self.rss = 0.0

    def run(self):
        while not self.done.is_set():
            self.rss = max(self.rss, peak_rss_mib(self.pid))
            vals = scrape(self.port)
            if vals:
                self.scrapes += 1
                self.commit.update(vals)
                self.close.update(vals)
            self.done.wait(self.every)


# ---- one run -------------------------------------------------------------------------

def sink(cmd, env, servers, poll_s):
    """Run one `floe sink` (cmd without --metrics-addr): its measurements."""
    port = free_port()
    cpu0 = sum(proc_cpu(p) for p in servers)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd + ["--metrics-addr", f"127.0.0.1:{port}"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    poller = Poller(proc.pid, port, poll_s)
    poller.start()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    poller.done.set()
    poller.join()
    server_cpu = sum(proc_cpu(p) for p in servers) - cpu0
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{err}")
    m = re.search(r"(\d+) snapshots committed", err)
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_rss_mib": poller.rss,
            "server_cpu_s": server_cpu, "snapshots": int(m.group(1)) if m else None,
            "scrapes": poller.scrapes, "commit": poller.commit, "close": poller.close}


def latency(samples, merged):
    ms = [x * 1000 for x in samples]
    return {"seen": len(ms), "merged": merged, "p50_ms": percentile(ms, 50),
            "p99_ms": percentile(ms, 99), "mean_ms": sum(ms) / len(ms) if ms else float("nan"),
            "max_ms": max(ms) if ms else float("nan")}


def combine(runs, updates):
    """One result from the repeated runs of a set-up and mode: rows/s over the
    summed wall time, latency percentiles over the pooled samples."""
    wall = sum(r["wall_s"] for r in runs)
    out = {"repeats": len(runs), "updates": updates, "wall_s": wall / len(runs),
           "rows_per_s": updates * len(runs) / wall,
           "cpu_s": sum(r["cpu_s"] for r in runs) / len(runs),
           "peak_rss_mib": max(r["peak_rss_mib"] for r in runs),
           "server_cpu_s": sum(r["server_cpu_s"] for r in runs) / len(runs),
           "snapshots": sum(r["snapshots"] or 0 for r in runs)}
    for k in ("commit", "close"):
        out[k] = latency([x for r in runs for x in r[k].samples], sum(r[k].merged for r in runs))
    out["rounds"] = [{"wall_s": r["wall_s"], "cpu_s": r["cpu_s"], "server_cpu_s": r["server_cpu_s"],
                      "commit": latency(r["commit"].samples, r["commit"].merged)} for r in runs]
    return out


class Setup:
    """Where a run sinks to: a fresh table and its catalog arguments each
    time, the environment, the server processes whose CPU time counts."""

    def __init__(self, name, env, pids, new_table):
        self.name, self.env, self.pids = name, env, pids
        self.new_table = new_table              # () -> (table, catalog args)


def clean_env(env=None):
    env = dict(env or os.environ)
    for k in ("FLOE_CATALOG", "FLOE_WAREHOUSE", "FLOE_CATALOG_TOKEN", "FLOE_CATALOG_CREDENTIAL"):
        env.pop(k, None)
    return env


def local_setup():
    def new_table():
        d = fresh("local")
        return "bench.lineitem", ["--catalog", f"sqlite:{d}/catalog.db", "--warehouse", f"{d}/wh"]
    return Setup("local", clean_env(), [], new_table)


def rest_setup(name, server, pids, env):
    def new_table():
        return f"{server.namespace('bench')}.lineitem", ["--catalog", server.uri]
    return Setup(name, clean_env(env), [server.proc.pid] + pids, new_table)


def run_one(setup, stream, mode, interval_ms, poll_s):
    table, cat = setup.new_table()
    cmd = [FLOE, "sink", "--table", table, "--schema", sinkdata.SCHEMA, "--input", stream,
           "--commit-interval", f"{interval_ms}ms", "--quiet", *cat]
    cmd += ["--key", "l_orderkey"] if mode == "upsert" else ["--mode", "append"]
    return sink(cmd, setup.env, setup.pids, poll_s)


def head_of(stream, updates, path):
    """The first `updates` updates of a stream (with their progress lines)."""
    n = 0
    with open(stream) as src, open(path, "w") as dst:
        for line in src:
            if n >= updates and '"progress"' in line:
                break
            dst.write(line)
            n += '"progress"' not in line
    return path


# ---- main -------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--commits", type=int, default=100, help="about this many commits per run")
    ap.add_argument("--modes", default="append,upsert")
    ap.add_argument("--skip-rest-files", action="store_true")
    ap.add_argument("--repeat", type=int, default=2,
                    help="timed runs per set-up and mode, alternating the order of the modes")
    ap.add_argument("--poll-ms", type=float, default=5.0)
    a = ap.parse_args()
    modes = a.modes.split(",")
    data = sinkdata.generate(os.path.join(OUT, "data"), a.rows)
    span_ms = a.rows * 1000 // sinkdata.RATE
    interval_ms = max(1, span_ms // a.commits)
    counts = {m: sum(1 for line in open(data[m]) if '"progress"' not in line) for m in modes}
    os.makedirs(WORK, exist_ok=True)
    warm = {m: head_of(data[m], max(1, a.rows // 10), os.path.join(WORK, f"warm-{m}.ndjson"))
            for m in modes}

    servers = []
    res = {"rows": a.rows, "commit_interval_ms": interval_ms, "poll_ms": a.poll_ms,
           "repeat": a.repeat, "runs": {}}
    try:
        setups = [local_setup()]
        if not a.skip_rest_files:
            rf = RestServer(fresh("server-files"))
            servers.append(rf)
            setups.append(rest_setup("rest+files", rf, [], None))
        s3 = S3Server()
        servers.append(s3)
        rs = s3_rest_server(s3, fresh("server-s3"))
        servers.append(rs)
        setups.append(rest_setup("rest+s3", rs, [s3.proc.pid], rs.floe_env))

        print(f"{a.rows:,} rows, commit interval {interval_ms} ms (~{a.commits} commits), "
              f"{a.repeat} round(s), metrics scraped every {a.poll_ms:g} ms", flush=True)
        for st in setups:
            for mode in modes:
                run_one(st, warm[mode], mode, max(1, interval_ms // 10), a.poll_ms / 1000)
        raw = {}
        for rnd in range(a.repeat):
            for mode in (modes if rnd % 2 == 0 else modes[::-1]):
                for st in setups:
                    r = run_one(st, data[mode], mode, interval_ms, a.poll_ms / 1000)
                    raw.setdefault(f"{st.name} {mode}", []).append(r)
                    c = latency(r["commit"].samples, r["commit"].merged)
                    print(f"  round {rnd + 1} {st.name:10s} {mode:6s} wall {r['wall_s']:6.2f} s"
                          f"  cpu {r['cpu_s']:5.2f} s  commit p50 {c['p50_ms']:6.1f} ms"
                          f"  mean {c['mean_ms']:6.1f} ms", flush=True)
    finally:
        for s in reversed(servers):
            s.stop()

    print(f"\n{'run':18s} {'rows/s':>9s} {'wall s':>6s} {'cpu s':>6s} {'RSS MiB':>7s} "
          f"{'srv cpu':>7s} {'commits':>9s} {'commit p50':>10s} {'p99':>6s} {'mean':>6s} "
          f"{'close p50':>9s} {'p99':>6s}  (ms)")
    for mode in modes:
        for st in setups:
            name = f"{st.name} {mode}"
            r = res["runs"][name] = combine(raw[name], counts[mode])
            c, z = r["commit"], r["close"]
            print(f"{name:18s} {r['rows_per_s']:9,.0f} {r['wall_s']:6.2f} {r['cpu_s']:6.2f} "
                  f"{r['peak_rss_mib']:7.1f} {r['server_cpu_s']:7.2f} "
                  f"{c['seen']:4d}/{r['snapshots']:<4d} {c['p50_ms']:10.1f} {c['p99_ms']:6.1f} "
                  f"{c['mean_ms']:6.1f} {z['p50_ms']:9.1f} {z['p99_ms']:6.1f}")

    print("\nratios (rows/s: higher is faster; latency: higher is slower):")
    res["ratios"] = {}
    pairs = [("rest+s3", "local"), ("rest+files", "local"), ("rest+s3", "rest+files")]
    for mode in modes:
        for x, y in pairs:
            rx, ry = res["runs"].get(f"{x} {mode}"), res["runs"].get(f"{y} {mode}")
            if not rx or not ry:
                continue
            q = {"rows_per_s": rx["rows_per_s"] / ry["rows_per_s"],
                 "commit_p50": rx["commit"]["p50_ms"] / ry["commit"]["p50_ms"],
                 "commit_p99": rx["commit"]["p99_ms"] / ry["commit"]["p99_ms"],
                 "close_p50": rx["close"]["p50_ms"] / ry["close"]["p50_ms"],
                 "close_p99": rx["close"]["p99_ms"] / ry["close"]["p99_ms"]}
            label = f"{mode}: {x} / {y}"
            res["ratios"][label] = q
            print(f"  {label:32s} rows/s {q['rows_per_s']:5.2f}   commit p50 {q['commit_p50']:6.2f}"
                  f"  p99 {q['commit_p99']:6.2f}   close p50 {q['close_p50']:6.2f}"
                  f"  p99 {q['close_p99']:6.2f}")
    with open(os.path.join(OUT, "rest.json"), "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
