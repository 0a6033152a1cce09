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
ratio of floe append to the drain (target at least 0.5x).  Results also go
to bench/out/kafka-N.json.  (Kafka Connect's Iceberg sink, the peer the
issue names for a 10x target, is not run here yet: docs/benchmarks.md.)
"""
import argparse
import json
import os
import random
import shutil
import sys

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=4)
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
    finally:
        b.stop()
    base = results[0]["records_per_cpu_s"]
    for r in results:
        r["vs_drain"] = r["records_per_cpu_s"] / base
        print(f"{r['what']:34s} {r['wall_s']:7.2f} s wall {r['cpu_s']:7.2f} s cpu "
              f"{r['peak_rss_mib']:6.0f} MiB {r['records_per_cpu_s']:10.0f} rec/cpu-s "
              f"{r['vs_drain']:.2f}x")
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, f"kafka-{a.rows}.json"), "w") as f:
        json.dump({"rows": a.rows, "partitions": a.partitions, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
