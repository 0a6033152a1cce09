#!/usr/bin/env python3
"""Compaction against Apache Spark: `floe maintain --compact-all` and
Iceberg's `rewrite_data_files` procedure on Spark, on the same table.

    python3 bench/bench_compact_spark.py [--keys N] [--commits C] [--update-share F]
                                         [--rounds R] [--target-file-size BYTES]
                                         [--format-version 2|3] [--spark-cores K]
                                         [--spark-memory M] [--keep-dangling-deletes]

The table: N keys (default 1,000,000) inserted at time 0, then C commits
(default 200) each updating a share F of the keys (default 1%), written by
`floe sink` in upsert mode with position deletes (format 2 unless
--format-version 3), `--commit-interval 1` and `--maintain off`: C + 1 small
data files and C position delete files of debt.  The same input goes into two
tables (bench/out/compact_spark/floe and .../spark, each a SQLite catalog
file and a local warehouse, catalog name floe), one for each tool.

floe:   `floe maintain --compact-all --target-file-size T --json` (T default
        512 MiB, so one output file), the whole process timed: wall time and
        CPU time (user + sys, wait4).  floe runs on one thread.
Spark:  pyspark 4.1.1, local[K] (default 2 cores, a 4g driver), Iceberg's
        Spark runtime 1.12.0 and a JdbcCatalog `floe` on the same kind of
        SQLite file (jdbc.schema-version=V1).  The session is started and
        warmed first (SELECT 1, SHOW TABLES; its start-up time is reported
        apart), then `CALL floe.system.rewrite_data_files(table => ..., options
        => map('rewrite-all','true', 'target-file-size-bytes', T,
        'remove-dangling-deletes','true'))` is timed alone: wall time, and the
        CPU time of the Spark JVM during the call (utime + stime from
        /proc/<jvm pid>/stat; it covers every thread: executors, GC, JIT).
        remove-dangling-deletes makes Spark drop the position delete files
        the rewrite left applying to nothing, as floe's compaction does
        (--keep-dangling-deletes leaves them, as Spark does by default).

Each of R rounds (default 3) runs both tools on their table; before each
round after the first the table is put back as it was before the compaction:
the catalog row is pointed at the earlier metadata file again (neither tool
deletes data files or manifests while compacting, and Spark's catalog cache
is off, so every round starts from the same table).  The best of the rounds
is reported (the least wall time and the least CPU time of any round;
Spark's first round, with a cold JIT, is much slower and is reported too);
every round goes to the JSON.

Checks: before and after, each table is read by DuckDB (iceberg_scan, the
count of rows, sum(id), sum(v)), which must equal the input's model; after
the rounds Spark reads both compacted tables too.  Each table's debt afterwards (data and delete
files, from `floe inspect --json`) and the size of the files written.

Reported: wall and CPU seconds of each; Spark / floe wall; Spark / floe CPU
(the per-core figure: floe uses one core, Spark up to K); rows per second
(rows read, deleted ones included, and live rows).  Target (issue): floe at
least 3x faster per core (CPU ratio >= 3).  Results go to
bench/out/compact_spark.json.

The jars come from Maven Central through tests/spark/pom.xml into
tests/spark/jars/ (fetched on the first run; `pip install pyspark==4.1.1`
first).  A small run to check the set-up: --keys 50000 --commits 30.
"""
import argparse
import glob
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from icebench import FLOE, SCHEMA, TABLE, metadata_location, stream  # noqa: E402
from procstat import PeakWatcher, peak_rss_mib, run_measured  # noqa: E402
OUT = os.path.join(HERE, "out", "compact_spark")
SPARK_DIR = os.path.join(os.path.dirname(HERE), "tests", "spark")   # shared with the tests
JARS = os.path.join(SPARK_DIR, "jars")


# ---- the table ---------------------------------------------------------------------------------

def catalog_args(d):
    return ["--catalog", f"sqlite:{d}/catalog.db", "--warehouse", f"{d}/wh"]


def sink(d, src, format_version):
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cmd = [FLOE, "sink", "--table", TABLE, "--schema", SCHEMA, "--key", "id", "--input", src,
           "--commit-interval", "1", *catalog_args(d), "--index-dir", f"{d}/index",
           "--maintain", "off", "--delete-mode", "position",
           "--format-version", str(format_version), "--quiet"]
    wall, cpu, _, _ = run_measured(cmd)
    return wall, cpu


def debt(d):
    p = subprocess.run([FLOE, "inspect", "--table", TABLE, *catalog_args(d), "--json",
                        "--limit", "1"], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)["debt"]


def pointer(d):
    con = sqlite3.connect(f"{d}/catalog.db")
    row = con.execute("SELECT metadata_location, previous_metadata_location FROM iceberg_tables"
                      ).fetchone()
    con.close()
    return row


def restore(d, row):
    """Point the catalog at the table as it was before the compaction."""
    con = sqlite3.connect(f"{d}/catalog.db")
    with con:
        n = con.execute("UPDATE iceberg_tables SET metadata_location = ?, "
                        "previous_metadata_location = ?", row).rowcount
    con.close()
    assert n == 1, n


def duckdb_check(d):
    """(count(*), sum(id), sum(v)) of the table by DuckDB's iceberg_scan."""
    import duckdb
    con = duckdb.connect()
    con.execute("LOAD iceberg")
    res = con.execute("SELECT count(*), sum(id), sum(v) FROM iceberg_scan(?)",
                      [metadata_location(d)]).fetchone()
    con.close()
    return tuple(int(x) for x in res)


# ---- floe ----------------------------------------------------------------------------------------

def floe_compact(d, target):
    """`floe maintain --compact-all`, the whole process: wall, CPU (wait4), peak RSS."""
    cmd = [FLOE, "maintain", "--table", TABLE, *catalog_args(d), "--compact-all",
           "--target-file-size", str(target), "--json"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    watcher = PeakWatcher(proc.pid)
    watcher.start()
    pipes = {}
    readers = [threading.Thread(target=lambda n=n: pipes.__setitem__(n, getattr(proc, n).read()),
                                daemon=True) for n in ("stdout", "stderr")]
    for r in readers:
        r.start()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    peak = watcher.stop()
    for r in readers:
        r.join()
    proc.stdout.close()
    proc.stderr.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"floe maintain failed: {pipes['stderr'].decode()[-3000:]}")
    rep = json.loads(pipes["stdout"])
    assert rep["ok"], rep
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_rss_mib": peak,
            "compact_ms": rep["report"]["compact_ms"], "report": rep["report"]}


# ---- Spark ---------------------------------------------------------------------------------------

def spark_jars():
    jars = sorted(glob.glob(os.path.join(JARS, "*.jar")))
    if len(jars) < 2:
        subprocess.run(["mvn", "-q", "-f", os.path.join(SPARK_DIR, "pom.xml"),
                        "dependency:copy-dependencies"], check=True)
        jars = sorted(glob.glob(os.path.join(JARS, "*.jar")))
    assert any("iceberg-spark-runtime" in j for j in jars) and \
        any("sqlite-jdbc" in j for j in jars), jars
    return jars


class Spark:
    """One Spark session for the run, its catalog `floe` on table dir `d`."""

    def __init__(self, d, cores, memory):
        jars = spark_jars()
        t0 = time.perf_counter()
        from pyspark.sql import SparkSession
        c = "spark.sql.catalog.floe"
        self.spark = (
            SparkSession.builder.master(f"local[{cores}]").appName("floe-bench-compact")
            .config("spark.jars", ",".join(jars))
            .config("spark.driver.memory", memory)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.extensions",
                    "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
            .config(c, "org.apache.iceberg.spark.SparkCatalog")
            .config(f"{c}.type", "jdbc")
            .config(f"{c}.uri", f"jdbc:sqlite:{d}/catalog.db")
            .config(f"{c}.jdbc.schema-version", "V1")
            .config(f"{c}.warehouse", f"file://{d}/wh")
            .config(f"{c}.cache-enabled", "false")
            .getOrCreate())
        self.spark.sparkContext.setLogLevel("ERROR")
        self.session_s = time.perf_counter() - t0
        self.spark.sql("SELECT 1").collect()
        self.spark.sql(f"SHOW TABLES IN floe.{TABLE.split('.')[0]}").collect()
        self.startup_s = time.perf_counter() - t0
        self.pid = int(self.spark._jvm.java.lang.ProcessHandle.current().pid())
        self.tick = os.sysconf("SC_CLK_TCK")

    def cpu(self):
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / self.tick   # utime, stime

    def rewrite(self, target, dangling):
        opts = {"rewrite-all": "true", "target-file-size-bytes": str(target),
                "remove-dangling-deletes": "true" if dangling else "false"}
        m = ", ".join(f"'{k}', '{v}'" for k, v in opts.items())
        sql = f"CALL floe.system.rewrite_data_files(table => '{TABLE}', options => map({m}))"
        c0 = self.cpu()
        t0 = time.perf_counter()
        row = self.spark.sql(sql).collect()[0].asDict()
        wall = time.perf_counter() - t0
        cpu = self.cpu() - c0
        return {"wall_s": wall, "cpu_s": cpu, "report": row}

    def check(self, d=None):
        """count(*), sum(id), sum(v) of the table by Spark; with `d`, of the
        table in that directory (a new session of the same JVM, its catalog
        `floe` pointed there)."""
        s = self.spark
        if d is not None:
            s = s.newSession()
            s.conf.set("spark.sql.catalog.floe.uri", f"jdbc:sqlite:{d}/catalog.db")
            s.conf.set("spark.sql.catalog.floe.warehouse", f"file://{d}/wh")
        r = s.sql(f"SELECT count(*), sum(id), sum(v) FROM floe.{TABLE}").collect()[0]
        return tuple(int(x) for x in r)

    def peak_rss_mib(self):
        return peak_rss_mib(self.pid)

    def stop(self):
        self.spark.stop()


# ---- the run -------------------------------------------------------------------------------------

def best(rounds):
    """The round with the least wall time, with the least CPU time of any round."""
    r = min(rounds, key=lambda r: r["wall_s"])
    return {**r, "cpu_s": min(x["cpu_s"] for x in rounds)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--commits", type=int, default=200)
    ap.add_argument("--update-share", type=float, default=0.01)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--target-file-size", type=int, default=512 << 20)
    ap.add_argument("--format-version", type=int, choices=(2, 3), default=2)
    ap.add_argument("--spark-cores", type=int, default=2)
    ap.add_argument("--spark-memory", default="4g")
    ap.add_argument("--keep-dangling-deletes", action="store_true",
                    help="Spark leaves the position delete files that apply to nothing")
    a = ap.parse_args()
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)

    src = os.path.join(OUT, "changes.ndjson")
    value = stream(src, a.keys, a.commits, a.update_share)
    model = (a.keys, a.keys * (a.keys - 1) // 2, sum(value))
    dirs = {"floe": os.path.join(OUT, "floe"), "spark": os.path.join(OUT, "spark")}
    result = {"keys": a.keys, "commits": a.commits, "update_share": a.update_share,
              "rounds": a.rounds, "target_file_size": a.target_file_size,
              "format_version": a.format_version, "spark_cores": a.spark_cores,
              "spark_memory": a.spark_memory,
              "remove_dangling_deletes": not a.keep_dangling_deletes}
    for tool, d in dirs.items():
        wall, _ = sink(d, src, a.format_version)
        got = duckdb_check(d)
        assert got == model, (tool, "before", got, model)
        result[f"{tool}_table_before"] = debt(d)
        print(f"table for {tool}: sink {wall:.2f}s, {got[0]:,} rows, debt "
              f"{result[f'{tool}_table_before']['data_files']} data / "
              f"{result[f'{tool}_table_before']['delete_files']} delete files", flush=True)
    before = result["floe_table_before"]
    same = ("data_files", "delete_files", "data_rows", "deleted_rows", "snapshots")
    assert all(before[k] == result["spark_table_before"][k] for k in same), \
        ("the two tables must hold the same files", before, result["spark_table_before"])
    start = {tool: pointer(d) for tool, d in dirs.items()}

    spark = Spark(dirs["spark"], a.spark_cores, a.spark_memory)
    result["spark_session_s"] = spark.session_s
    result["spark_startup_s"] = spark.startup_s
    print(f"spark: session {spark.session_s:.2f}s, warmed after {spark.startup_s:.2f}s "
          f"(JVM pid {spark.pid})", flush=True)
    floe_rounds, spark_rounds = [], []
    try:
        for i in range(a.rounds):
            if i:
                for tool, d in dirs.items():
                    restore(d, start[tool])
            f = floe_compact(dirs["floe"], a.target_file_size)
            floe_rounds.append(f)
            s = spark.rewrite(a.target_file_size, not a.keep_dangling_deletes)
            spark_rounds.append(s)
            print(f"round {i + 1}: floe {f['wall_s']:.2f}s wall, {f['cpu_s']:.2f}s CPU "
                  f"(compaction {f['compact_ms'] / 1e3:.2f}s) | spark {s['wall_s']:.2f}s wall, "
                  f"{s['cpu_s']:.2f}s CPU", flush=True)
        spark_peak = spark.peak_rss_mib()
        spark_reads = {tool: spark.check(d) for tool, d in dirs.items()}
    finally:
        spark.stop()

    # the results: DuckDB and Spark read both tables; the debt of each
    for tool, d in dirs.items():
        got = duckdb_check(d)
        assert got == model, (tool, "after, DuckDB", got, model)
        result[f"{tool}_table_after"] = debt(d)
        assert spark_reads[tool] == model, (tool, "after, Spark", spark_reads[tool], model)

    f, s = best(floe_rounds), best(spark_rounds)
    rows_read, live = before["data_rows"], a.keys
    result.update({
        "rows_read": rows_read, "live_rows": live, "model": list(model),
        "floe": {**f, "rows_read_per_s": rows_read / f["wall_s"],
                 "live_rows_per_s": live / f["wall_s"],
                 "rows_per_cpu_s": rows_read / max(f["cpu_s"], 1e-9)},
        "spark": {**s, "rows_read_per_s": rows_read / s["wall_s"],
                  "live_rows_per_s": live / s["wall_s"],
                  "rows_per_cpu_s": rows_read / max(s["cpu_s"], 1e-9),
                  "jvm_peak_rss_mib_session": spark_peak},
        "floe_rounds": floe_rounds, "spark_rounds": spark_rounds,
        "spark_first_round": {"wall_s": spark_rounds[0]["wall_s"],
                              "cpu_s": spark_rounds[0]["cpu_s"]},
        "wall_ratio": s["wall_s"] / f["wall_s"],
        "cpu_ratio_per_core": s["cpu_s"] / max(f["cpu_s"], 1e-9),
    })
    result["target_met"] = result["cpu_ratio_per_core"] >= 3.0

    fa, sa = result["floe_table_after"], result["spark_table_after"]
    print(f"checked: both compacted tables read {model[0]:,} rows, sum(id) {model[1]:,}, "
          f"sum(v) {model[2]:,} (DuckDB and Spark)")
    print(f"before:  {before['data_files']} data files ({before['data_bytes']:,} B, "
          f"{rows_read:,} rows), {before['delete_files']} delete files")
    print(f"after:   floe  {fa['data_files']} data files ({fa['data_bytes']:,} B), "
          f"{fa['delete_files']} delete files")
    print(f"         spark {sa['data_files']} data files ({sa['data_bytes']:,} B), "
          f"{sa['delete_files']} delete files")
    print(f"floe   {f['wall_s']:8.2f}s wall {f['cpu_s']:8.2f}s CPU  "
          f"{rows_read / f['wall_s']:>12,.0f} rows read/s  peak RSS {f['peak_rss_mib']:.0f} MiB")
    print(f"spark  {s['wall_s']:8.2f}s wall {s['cpu_s']:8.2f}s CPU  "
          f"{rows_read / s['wall_s']:>12,.0f} rows read/s  JVM peak RSS {spark_peak:.0f} MiB "
          f"(session)")
    print(f"       start-up {spark.startup_s:.2f}s (not counted); first round "
          f"{spark_rounds[0]['wall_s']:.2f}s wall {spark_rounds[0]['cpu_s']:.2f}s CPU (cold JIT)")
    print(f"spark / floe: wall {result['wall_ratio']:.2f}x, CPU (per core) "
          f"{result['cpu_ratio_per_core']:.2f}x (target >= 3: "
          f"{'met' if result['target_met'] else 'NOT met'})")
    with open(os.path.join(HERE, "out", "compact_spark.json"), "w") as fh:
        json.dump(result, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
