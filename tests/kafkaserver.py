"""A real Apache Kafka for floe's Kafka tests: a single KRaft node (broker and
controller in one JVM) from the jars tests/kafka/pom.xml lists
(scripts/install-deps.sh copies them into tests/kafka/jars), on loopback
ports, its log in a temporary directory.  One broker per test process
(`broker()`), stopped at exit.  `replace()` starts a new cluster (a fresh
log directory: a new cluster id) on the same port, as a rebuilt Kafka
cluster looks to its clients.  Producing and creating topics go through
confluent-kafka (its bundled librdkafka), not through floe.
"""
import atexit
import base64
import glob
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid

import pytest

from conftest import SCALE, free_port, stop_process

HERE = os.path.dirname(os.path.abspath(__file__))
JARS = os.path.join(HERE, "kafka", "jars")

PROPS = """
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:{cport}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={logs}
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
group.min.session.timeout.ms=1000
auto.create.topics.enable=false
log.flush.interval.messages=1000000
"""




def log4j_config(path, appender="stderr"):
    """A log4j 1 (reload4j) configuration at `path`: warnings and errors to
    stderr, or to the file `appender` names."""
    out = ("log4j.appender.out=org.apache.log4j.ConsoleAppender\nlog4j.appender.out.Target=System.err\n"
           if appender == "stderr" else
           f"log4j.appender.out=org.apache.log4j.FileAppender\nlog4j.appender.out.File={appender}\n")
    with open(path, "w") as f:
        f.write("log4j.rootLogger=WARN, out\n" + out +
                "log4j.appender.out.layout=org.apache.log4j.PatternLayout\n"
                "log4j.appender.out.layout.ConversionPattern=%d %p %c: %m%n\n")
    return path


class KafkaServer:
    def __init__(self):
        if not glob.glob(os.path.join(JARS, "kafka_2.13-*.jar")):
            pytest.fail("Kafka's jars are missing: scripts/install-deps.sh fetches them "
                        "(mvn -f tests/kafka/pom.xml dependency:copy-dependencies)")
        self.root = tempfile.mkdtemp(prefix="floe-kafka-")
        self.port, self.cport = free_port(), free_port()
        self.proc = None
        self.generation = 0
        self._start_new()
        atexit.register(self.stop)

    @property
    def brokers(self):
        return f"127.0.0.1:{self.port}"

    def _java(self, *args, **kw):
        env = dict(os.environ, KAFKA_HEAP_OPTS="-Xmx512m")
        log4j = log4j_config(os.path.join(self.root, "log4j.properties"))
        cmd = ["java", "-Xmx512m", "-XX:+UseSerialGC", f"-Dlog4j.configuration=file:{log4j}",
               "-cp", os.path.join(JARS, "*"), *args]
        return cmd, env

    def _start_new(self):
        """A fresh log directory, formatted with a new cluster id, then started."""
        self.generation += 1
        self.logs = os.path.join(self.root, f"logs-{self.generation}")
        self.props = os.path.join(self.root, f"server-{self.generation}.properties")
        with open(self.props, "w") as f:
            f.write(PROPS.format(port=self.port, cport=self.cport, logs=self.logs))
        # as Kafka's own ids: never one starting with '-' (read as an option)
        self.cluster_id = "-"
        while self.cluster_id.startswith("-"):
            self.cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        cmd, env = self._java("kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c",
                              self.props, "--standalone")
        subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=120 * SCALE)
        self.up()

    def up(self):
        cmd, env = self._java("kafka.Kafka", self.props)
        self.log_file = open(os.path.join(self.root, f"broker-{self.generation}.log"), "a")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self.log_file, stderr=subprocess.STDOUT)
        self._wait_ready()

    def _wait_ready(self):
        from confluent_kafka.admin import AdminClient
        deadline = time.time() + 120 * SCALE
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the Kafka broker exited: {self.log()}")
            try:
                md = AdminClient({"bootstrap.servers": self.brokers, "log_level": 0}).list_topics(timeout=2)
                if md.brokers:
                    return
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.3)
        raise RuntimeError(f"the Kafka broker did not start: {self.log()}")

    def log(self):
        try:
            with open(os.path.join(self.root, f"broker-{self.generation}.log")) as f:
                return f.read()[-4000:]
        except OSError:
            return "(no log)"

    def down(self):
        if self.proc:
            stop_process(self.proc, 60)
        self.proc = None

    def replace(self):
        """Another cluster on the same address: the old one's data is gone."""
        self.down()
        self._start_new()

    def stop(self):
        self.down()
        shutil.rmtree(self.root, ignore_errors=True)

    # ---- clients (confluent-kafka, not floe) ----

    def create_topic(self, name, partitions=1):
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": self.brokers})
        fs = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
        fs[name].result(timeout=60 * SCALE)
        deadline = time.time() + 60 * SCALE       # its partitions have leaders
        while time.time() < deadline:
            md = admin.list_topics(topic=name, timeout=5).topics.get(name)
            if md and not md.error and len(md.partitions) == partitions and all(
                    p.leader >= 0 for p in md.partitions.values()):
                return
            time.sleep(0.2)
        raise RuntimeError(f"topic {name} has no leaders")

    def delete_topic(self, name):
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": self.brokers})
        admin.delete_topics([name])[name].result(timeout=60 * SCALE)
        deadline = time.time() + 60 * SCALE
        while time.time() < deadline and name in admin.list_topics(timeout=5).topics:
            time.sleep(0.2)

    def produce(self, topic, messages):
        """messages: (partition, key, value) with key/value str, bytes, dict or None
        (dicts as JSON); flushed before returning."""
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": self.brokers, "linger.ms": 5,
                      "enable.idempotence": True})

        def enc(v):
            if v is None or isinstance(v, bytes):
                return v
            return (json.dumps(v) if not isinstance(v, str) else v).encode()

        for part, key, value in messages:
            p.produce(topic, value=enc(value), key=enc(key), partition=part)
            p.poll(0)
        left = p.flush(60 * SCALE)
        assert left == 0, f"{left} messages not delivered"

    def group_offsets(self, group, topic, partitions):
        from confluent_kafka import Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": self.brokers, "group.id": group})
        try:
            got = c.committed([TopicPartition(topic, p) for p in range(partitions)],
                              timeout=30 * SCALE)
            return {tp.partition: tp.offset for tp in got}
        finally:
            c.close()


_BROKER = None


def broker():
    global _BROKER
    if _BROKER is None or _BROKER.proc is None:
        _BROKER = KafkaServer()
    return _BROKER
