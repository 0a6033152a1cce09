#!/usr/bin/env python3
"""Kafka into Iceberg (issue P12), side by side in one run on one broker:

    python3 bench/bench_kafka.py [--rows N] [--partitions P]

A single KRaft broker (tests/kafkaserver.py) and three topics of N
lineitem-like rows (bench/sinkdata.py, about 330 bytes of JSON each) over P
partitions: rows as values (append), rows keyed by l_orderkey with a tenth
of the messages updating an earlier key (upsert), and the same as Debezium
change events without an embedded schema (op c or u, "after" the row).
Measured, each a process of its own (wall time, CPU time, peak RSS,
bench/procstat.py): librdkafka draining the append topic to nothing
(bench_kafka_drain, the client's limit), `floe kafka --format append`,
`--format upsert` and `--format debezium` (--stop-at end, a 10 s commit
interval, maintenance off).  Reported as records per CPU-second and the
ratio of floe append to the drain (target at least 0.5x).  The peer:
Apache Iceberg's Kafka Connect sink (iceberg-kafka-connect 1.10.1 in a
standalone Kafka Connect 4.1.1 worker, JsonConverter without schemas, a
JdbcCatalog on a SQLite file, the same table created by floe beforehand,
a 10 s commit interval) appending the append topic; its whole process's CPU
time until the table holds every row (target: floe append at least 10x its
records per CPU-second).  Its jars are fetched into bench/kafka_connect/jars
on the first run.  Results also go to bench/out/kafka-N.json.
"""
import argparse
import glob
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
import procstat  # noqa: E402
import sinkdata  # noqa: E402

BUILD = os.path.join(ROOT, os.environ.get("FLOE_BUILD", "build"))
FLOE = os.path.join(BUILD, "floe")
DRAIN = os.path.join(BUILD, "bench", "bench_kafka_drain")
OUT = os.path.join(HERE, "out")


def produce(b, topic, parts, msgs):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": b.brokers, "linger.ms": 50, "batch.size": 1 << 20,
                  "compression.type": "none", "queue.buffering.max.messages": 1000000})
    for i, (key, value) in enumerate(msgs):
        part = (hash(key) if key is not None else i) % parts
        while True:
            try:
                p.produce(topic, value=value, key=key, partition=part)
                break
            except BufferError:
                p.poll(0.1)
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(300) == 0


def topics(b, n, parts):
    """The three topics, produced once per broker."""
    r = random.Random(42)
    rows = [sinkdata.row(r, i) for i in range(n)]
    enc = [json.dumps(x).encode() for x in rows]
    b.create_topic("append", parts)
    produce(b, "append", parts, ((None, v) for v in enc))
    live = []
    up, dbz = [], []
    for i in range(n):
        if live and r.random() < 0.10:
            k = r.choice(live)
            row = sinkdata.row(r, k)
            op = "u"
        else:
            k = i
            row = rows[i]
            live.append(k)
            op = "c"
        key = json.dumps({"l_orderkey": k}).encode()
        up.append((key, json.dumps(row).encode()))
        dbz.append((key, json.dumps({"op": op, "before": None, "after": row,
                                     "source": {"connector": "bench"}}).encode()))
    b.create_topic("upsert", parts)
    produce(b, "upsert", parts, up)
    b.create_topic("debezium", parts)
    produce(b, "debezium", parts, dbz)


def floe(b, fmt, d, n):
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cmd = [FLOE, "kafka", "--brokers", b.brokers, "--topics", fmt, "--format", fmt,
           "--schema", sinkdata.SCHEMA, "--stop-at", "end", "--commit-interval", "10s",
           "--maintain", "off", "--quiet", "--catalog", f"sqlite:{d}/catalog.db",
           "--warehouse", f"{d}/wh", "--index-dir", f"{d}/index"]
    if fmt != "append":
        cmd += ["--key", "l_orderkey"]
    wall, cpu, rss = procstat.run_measured(cmd, timeout=1800)[:3]
    return {"what": f"floe kafka --format {fmt}", "wall_s": wall, "cpu_s": cpu,
            "peak_rss_mib": rss, "records_per_cpu_s": n / cpu}


CONNECT = os.path.join(HERE, "kafka_connect")

WORKER = """
bootstrap.servers={brokers}
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
value.converter.schemas.enable=false
offset.storage.file.filename={dir}/offsets
offset.flush.interval.ms=10000
listeners=http://127.0.0.1:0
plugin.discovery=only_scan
consumer.max.poll.records=10000
"""

SINK = """
name=iceberg
connector.class=org.apache.iceberg.connect.IcebergSinkConnector
tasks.max=1
topics=append
iceberg.tables=bench.lineitem
iceberg.catalog=floe
iceberg.catalog.catalog-impl=org.apache.iceberg.jdbc.JdbcCatalog
iceberg.catalog.uri=jdbc:sqlite:{dir}/catalog.db
iceberg.catalog.jdbc.schema-version=V1
iceberg.catalog.warehouse=file://{dir}/wh
iceberg.control.topic=control-iceberg
iceberg.control.commit.interval-ms=10000
"""


def cpu_seconds(pid):
    """utime + stime of a live process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def table_rows(db):
    """total-records of bench.lineitem's current snapshot (0: none yet)."""
    try:
        con = sqlite3.connect(db)
        row = con.execute("SELECT metadata_location FROM iceberg_tables WHERE "
                          "table_name = 'lineitem'").fetchone()
        con.close()
    except sqlite3.Error:
        return 0
    if not row:
        return 0
    loc = row[0]
    path = loc[7:] if loc.startswith("file://") else loc[5:] if loc.startswith("file:") else loc
    with open(path) as f:
        md = json.load(f)
    cur = md.get("current-snapshot-id")
    for s in md.get("snapshots", []):
        if s["snapshot-id"] == cur:
            return int(s["summary"].get("total-records", 0))
    return 0


def kafka_connect(b, n, d):
    """Iceberg's Kafka Connect sink appending the append topic into a table
    floe created: the whole JVM's CPU until the table holds n rows."""
    if not glob.glob(os.path.join(CONNECT, "jars", "iceberg-kafka-connect-*.jar")):
        subprocess.run(["mvn", "-q", "-B", "-f", os.path.join(CONNECT, "pom.xml"),
                        "dependency:copy-dependencies"], check=True)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    subprocess.run([FLOE, "sink", "--table", "bench.lineitem", "--schema", sinkdata.SCHEMA,
                    "--key", "l_orderkey", "--input", "-", "--quiet", "--catalog",
                    f"sqlite:{d}/catalog.db", "--warehouse", f"{d}/wh"],
                   input=b'{"progress": 1}\n', check=True, capture_output=True)
    b.create_topic("control-iceberg", 1)
    with open(f"{d}/worker.properties", "w") as f:
        f.write(WORKER.format(brokers=b.brokers, dir=d))
    with open(f"{d}/sink.properties", "w") as f:
        f.write(SINK.format(dir=d))
    import kafkaserver
    kafkaserver.log4j_config(f"{d}/log4j.properties", f"{d}/connect.log")
    t0 = time.time()
    proc = subprocess.Popen(["java", "-Xmx2g", f"-Dlog4j.configuration=file:{d}/log4j.properties",
                             "-cp", os.path.join(CONNECT, "jars", "*"),
                             "org.apache.kafka.connect.cli.ConnectStandalone",
                             f"{d}/worker.properties", f"{d}/sink.properties"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    watch = procstat.PeakWatcher(proc.pid)
    watch.start()
    try:
        while table_rows(f"{d}/catalog.db") < n:
            if proc.poll() is not None or time.time() - t0 > 1800:
                with open(f"{d}/connect.log") as f:
                    raise RuntimeError("Kafka Connect did not finish: " + f.read()[-3000:])
            time.sleep(0.2)
        wall, cpu = time.time() - t0, cpu_seconds(proc.pid)
    finally:
        watch.stop()
        proc.terminate()
        proc.wait()
    return {"what": "Kafka Connect Iceberg sink (append)", "wall_s": wall, "cpu_s": cpu,
            "peak_rss_mib": watch.peak, "records_per_cpu_s": n / cpu}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--no-connect", action="store_true", help="leave out Kafka Connect")
    a = ap.parse_args()
    import kafkaserver
    b = kafkaserver.KafkaServer()
    try:
        topics(b, a.rows, a.partitions)
        wall, cpu, rss = procstat.run_measured([DRAIN, b.brokers, "append"], timeout=1800)[:3]
        results = [{"what": "librdkafka drain (client limit)", "wall_s": wall, "cpu_s": cpu,
                    "peak_rss_mib": rss, "records_per_cpu_s": a.rows / cpu}]
        for fmt in ("append", "upsert", "debezium"):
            results.append(floe(b, fmt, os.path.join(OUT, f"kafka-{fmt}"), a.rows))
            shutil.rmtree(os.path.join(OUT, f"kafka-{fmt}"), ignore_errors=True)
        if not a.no_connect:
            results.append(kafka_connect(b, a.rows, os.path.join(OUT, "kafka-connect")))
            shutil.rmtree(os.path.join(OUT, "kafka-connect"), ignore_errors=True)
    finally:
        b.stop()
    base = results[0]["records_per_cpu_s"]
    peer = [r for r in results if r["what"].startswith("Kafka Connect")]
    for r in results:
        r["vs_drain"] = r["records_per_cpu_s"] / base
        vs = f" {r['records_per_cpu_s'] / peer[0]['records_per_cpu_s']:6.1f}x Connect" if peer else ""
        print(f"{r['what']:36s} {r['wall_s']:7.2f} s wall {r['cpu_s']:7.2f} s cpu "
              f"{r['peak_rss_mib']:6.0f} MiB {r['records_per_cpu_s']:10.0f} rec/cpu-s "
              f"{r['vs_drain']:.2f}x drain{vs}")
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, f"kafka-{a.rows}.json"), "w") as f:
        json.dump({"rows": a.rows, "partitions": a.partitions, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
