"""Real Debezium: its Postgres connector (io.debezium 3.6.1.Final) in a
standalone Kafka Connect 4.1 worker, from the jars tests/debezium/pom.xml
lists (scripts/install-deps.sh copies them into tests/debezium/jars),
writing JSON change events (JsonConverter, schemas embedded) of a test
Postgres database (pgserver.py) into the test broker (kafkaserver.py),
topics PREFIX.<schema>.<table> (PREFIX: dbz_<database>, so
tests sharing a broker never share a topic).  Started per test, stopped by stop()."""
import glob
import os
import shutil
import subprocess
import tempfile
import time

import pytest

from conftest import SCALE, free_port, stop_process
from kafkaserver import log4j_config

HERE = os.path.dirname(os.path.abspath(__file__))
JARS = os.path.join(HERE, "debezium", "jars")

WORKER = """
bootstrap.servers={brokers}
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable={schemas}
value.converter.schemas.enable={schemas}
offset.storage.file.filename={dir}/offsets
offset.flush.interval.ms=500
listeners=http://127.0.0.1:{rest}
plugin.discovery=only_scan
"""

CONNECTOR = """
name=dbz
connector.class=io.debezium.connector.postgresql.PostgresConnector
tasks.max=1
database.hostname=127.0.0.1
database.port={pgport}
database.user=postgres
database.password=
database.dbname={db}
topic.prefix={prefix}
plugin.name=pgoutput
slot.name=dbz_{db}
publication.name=dbz_{db}
publication.autocreate.mode=filtered
table.include.list={tables}
skipped.operations=none
snapshot.mode=initial
topic.creation.default.replication.factor=1
topic.creation.default.partitions=1
"""




class Debezium:
    def __init__(self, broker, db, tables, schemas=True, extra=None):
        if not glob.glob(os.path.join(JARS, "debezium-connector-postgres-*.jar")):
            pytest.fail("Debezium's jars are missing: scripts/install-deps.sh fetches them "
                        "(mvn -f tests/debezium/pom.xml dependency:copy-dependencies)")
        self.dir = tempfile.mkdtemp(prefix="floe-dbz-")
        self.prefix = f"dbz_{db.name}"
        worker = os.path.join(self.dir, "worker.properties")
        conn = os.path.join(self.dir, "connector.properties")
        with open(worker, "w") as f:
            f.write(WORKER.format(brokers=broker.brokers, dir=self.dir, rest=free_port(),
                                  schemas="true" if schemas else "false"))
        with open(conn, "w") as f:
            f.write(CONNECTOR.format(pgport=db.srv.port, db=db.name, tables=",".join(tables),
                                     prefix=self.prefix))
            f.writelines(f"{k}={v}\n" for k, v in (extra or {}).items())
        log4j = log4j_config(os.path.join(self.dir, "log4j.properties"))
        self.log = open(os.path.join(self.dir, "connect.log"), "w")
        self.proc = subprocess.Popen(
            ["java", "-Xmx768m", "-XX:+UseSerialGC", f"-Dlog4j.configuration=file:{log4j}",
             "-cp", os.path.join(JARS, "*"), "org.apache.kafka.connect.cli.ConnectStandalone",
             worker, conn], stdout=self.log, stderr=subprocess.STDOUT)
        self.broker = broker

    def logs(self):
        with open(os.path.join(self.dir, "connect.log")) as f:
            return f.read()[-6000:]

    def wait_messages(self, topic, count):
        """Until `topic` (one partition) holds at least `count` messages."""
        from confluent_kafka import Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": self.broker.brokers, "group.id": "dbz-watch",
                      "log_level": 0})
        deadline = time.time() + 240 * SCALE
        try:
            while time.time() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"Kafka Connect exited: {self.logs()}")
                try:
                    hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=5)[1]
                except Exception:  # noqa: BLE001 - the topic is not there yet
                    hi = -1
                if hi >= count:
                    return hi
                time.sleep(0.5)
        finally:
            c.close()
        raise RuntimeError(f"{topic} never held {count} messages: {self.logs()}")

    def stop(self):
        stop_process(self.proc, 60)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
