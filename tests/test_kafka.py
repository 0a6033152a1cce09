"""`floe kafka` against a real Kafka broker (KRaft, tests/kafkaserver.py):
upsert and append topics read back by DuckDB, pyiceberg and Java equal to a
model of the messages; the offsets each snapshot records (its
floe.kafka.offsets summary property) move forward without gap or overlap
and end at the partitions' ends; SIGKILLs mid-run lose and double nothing;
a replaced cluster, a topic deleted and created again, and a message that
does not parse are refused with messages that say where and why."""
import json
import os
import random
import signal
import subprocess
import time

import pytest

import java_reader
from conftest import SCALE, floe_bin, free_port
from iceberg_readers import duck, pyiceberg_catalog
from kafkaserver import KafkaServer, broker

SCHEMA = "id bigint not null, v text, n integer"


class Run:
    """A catalog and warehouse of one test, and `floe kafka` on them."""

    def __init__(self, tmp_path, brokers):
        self.dir = str(tmp_path)
        self.db = os.path.join(self.dir, "catalog.db")
        self.wh = os.path.join(self.dir, "wh")
        self.brokers = brokers

    def args(self, topic, fmt, *extra):
        a = [floe_bin(), "kafka", "--brokers", self.brokers, "--topics", topic, "--format", fmt,
             "--catalog", f"sqlite:{self.db}", "--warehouse", self.wh, "--maintain", "off",
             "--timeout", f"{int(60 * SCALE)}s", *extra]
        if fmt in ("upsert", "debezium") and "--key" not in extra:
            a += ["--key", "id"]
        if "--schema" not in extra:
            a += ["--schema", SCHEMA]
        return [str(x) for x in a]

    def run(self, topic, fmt, *extra, check=True):
        p = subprocess.run(self.args(topic, fmt, "--stop-at", "end", *extra),
                           capture_output=True, text=True, timeout=300 * SCALE)
        if check:
            assert p.returncode == 0, p.stderr
        return p

    def table(self, name):
        return pyiceberg_catalog(self.db, self.wh).load_table(name)

    def rows(self, name, cols=("id", "v", "n")):
        """{reader: sorted rows} by DuckDB, pyiceberg and Java."""
        t = self.table(name)
        sel = ", ".join(cols)
        con = duck()
        try:
            d = con.execute(f"SELECT {sel} FROM iceberg_scan(?)", [t.metadata_location]).fetchall()
        finally:
            con.close()
        p = [tuple(r[c] for c in cols) for r in t.scan().to_arrow().to_pylist()]
        j = [tuple(r[list(t.schema().column_names).index(c)] for c in cols)
             for r in java_reader.read_rows(self.db, f"file://{self.wh}", name)]
        return {"duckdb": sorted(d, key=repr), "pyiceberg": sorted(p, key=repr),
                "java": sorted(j, key=repr)}

    def offsets_or_none(self, name):
        try:
            return self.offsets(name)
        except Exception:  # noqa: BLE001 - no catalog or table yet
            return None

    def kafka_snapshots(self, name):
        """[(snapshot id, summary properties, {partition: next offset})] of the
        snapshots recording Kafka offsets, oldest first."""
        t = self.table(name)
        out = []
        for s in sorted(t.snapshots(), key=lambda s: s.sequence_number):
            props = s.summary.additional_properties if s.summary else {}
            if "floe.kafka.offsets" in props:
                offs = json.loads(props["floe.kafka.offsets"])["partitions"]
                out.append((s.snapshot_id, props, {int(k): v for k, v in offs.items()}))
        return out

    def offsets(self, name):
        """[(snapshot id, {partition: next offset})], oldest first."""
        return [(i, offs) for i, _, offs in self.kafka_snapshots(name)]


def assert_rows(got, want):
    for reader, rows in got.items():
        assert rows == sorted(want, key=repr), f"{reader} differs from the model"


def assert_offsets_chain(offs, ends):
    """Each snapshot's offsets at or past the previous one's; the last at the ends."""
    for (_, a), (_, b) in zip(offs, offs[1:]):
        assert all(b[p] >= a[p] for p in a), (a, b)
    assert offs[-1][1] == ends, (offs[-1][1], ends)


def upsert_messages(rng, model, n, parts, keys=50):
    """n messages over `keys` keys, each key always in partition key % parts
    (Kafka's rule: a key's order is its partition's); about a tenth are
    tombstones.  `model` {id: row} follows them."""
    out = []
    for i in range(n):
        k = rng.randrange(keys)
        if rng.random() < 0.1:
            out.append((k % parts, {"id": k}, None))
            model.pop(k, None)
        else:
            row = {"id": k, "v": f"v{i}", "n": rng.randrange(1000)}
            out.append((k % parts, {"id": k}, row))
            model[k] = (k, row["v"], row["n"])
    return out


def test_upsert_topic_equals_the_model_and_records_its_offsets(tmp_path):
    b = broker()
    b.create_topic("up1", 3)
    r = Run(tmp_path, b.brokers)
    rng = random.Random(1)
    model = {}
    sent = 0
    for rnd in range(3):
        msgs = upsert_messages(rng, model, 300, 3)
        if rnd == 1:                          # bare keys: the JSON value of the one key column
            msgs = [(p, k["id"], v) for p, k, v in msgs]
        b.produce("up1", msgs)
        sent += len(msgs)
        p = r.run("up1", "upsert", "--group", "g-up1")
        assert "warning" not in p.stderr      # an insert of a new key is no retraction to warn of
        assert_rows(r.rows("kafka.up1"), list(model.values()))
    offs = r.offsets("kafka.up1")
    assert sum(offs[-1][1].values()) == sent
    ends = offs[-1][1]
    assert_offsets_chain(offs, ends)
    assert b.group_offsets("g-up1", "up1", 3) == ends      # the group follows the table
    # message i is time i + 1: every snapshot (a fresh table's empty batch of
    # time 0 first) records the offsets its frontier says
    for f, offs in frontiers_and_offsets(r, "kafka.up1"):
        assert sum(offs.values()) == f - 1, (f, offs)
    # a run with nothing new commits nothing
    before = len(r.table("kafka.up1").snapshots())
    r.run("up1", "upsert")
    assert len(r.table("kafka.up1").snapshots()) == before


def test_append_topic_with_table_map_and_null_values_skipped(tmp_path):
    b = broker()
    b.create_topic("ap1", 2)
    r = Run(tmp_path, b.brokers)
    msgs = [(i % 2, None, {"id": i, "v": f"r{i}", "n": i % 7}) for i in range(500)]
    msgs += [(0, None, None), (1, None, None)]
    b.produce("ap1", msgs)
    p = r.run("ap1", "append", "--table", "events.ap")
    assert "2 tombstones" in p.stderr
    want = [(i, f"r{i}", i % 7) for i in range(500)]
    assert_rows(r.rows("events.ap"), want)
    assert r.offsets("events.ap")[-1][1] == {0: 251, 1: 251}


def test_sigkills_lose_and_double_nothing(tmp_path):
    """Append mode shows a doubled message as a doubled row: every id must
    come exactly once however often floe is killed mid-run."""
    b = broker()
    b.create_topic("kill1", 4)
    r = Run(tmp_path, b.brokers)
    total, rounds = 20000, 8
    rng = random.Random(7)
    for k in range(rounds):
        chunk = range(k * total // rounds, (k + 1) * total // rounds)
        b.produce("kill1", [(i % 4, None, {"id": i, "v": "x" * (i % 13), "n": i % 100})
                            for i in chunk])
        # no --stop-at: it runs until killed, however fast it reads
        proc = subprocess.Popen(r.args("kill1", "append", "--commit-interval", "30ms"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(rng.uniform(0.2, 1.2) * SCALE)
        assert proc.poll() is None, proc.stderr.read()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    r.run("kill1", "append")
    con = duck()
    try:
        n, distinct, lo, hi = con.execute(
            "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM iceberg_scan(?)",
            [r.table("kafka.kill1").metadata_location]).fetchone()
    finally:
        con.close()
    assert (n, distinct, lo, hi) == (total, total, 0, total - 1)
    offs = r.offsets("kafka.kill1")
    assert_offsets_chain(offs, {p: total // 4 for p in range(4)})


def wait_offsets(r, table, want, proc):
    """Until the table's last commit records offsets `want` (floe still running)."""
    deadline = time.time() + 120 * SCALE
    while time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        try:
            offs = r.offsets(table)
        except Exception:  # noqa: BLE001 - the table may not exist yet
            offs = []
        if offs and offs[-1][1] == want:
            return
        time.sleep(0.2)
    raise AssertionError(f"{table} never recorded {want}")


def test_a_broker_restart_is_waited_out(tmp_path):
    """The broker goes down and comes back while floe runs: floe waits
    (librdkafka reconnects), then reads on from where it was; nothing is
    lost or doubled."""
    b = broker()
    b.create_topic("rs1", 2)
    r = Run(tmp_path, b.brokers)
    b.produce("rs1", [(i % 2, None, {"id": i, "v": "a", "n": 1}) for i in range(1000)])
    proc = subprocess.Popen(r.args("rs1", "append", "--commit-interval", "100ms"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_offsets(r, "kafka.rs1", {0: 500, 1: 500}, proc)
        b.down()
        time.sleep(3 * SCALE)
        assert proc.poll() is None              # it waits for the broker
        b.up()
        b.produce("rs1", [(i % 2, None, {"id": i, "v": "b", "n": 2}) for i in range(1000, 1600)])
        wait_offsets(r, "kafka.rs1", {0: 800, 1: 800}, proc)
        proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=120 * SCALE)[1]
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert "waiting; librdkafka reconnects" in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
    ids = sorted(x[0] for x in r.rows("kafka.rs1")["duckdb"])
    assert ids == list(range(1600))


def test_sigterm_commits_what_was_read(tmp_path):
    """A stop signal commits what was read (whatever that is when it comes):
    the offsets recorded then count the rows committed, and a rerun takes
    exactly the rest."""
    b = broker()
    b.create_topic("term1", 1)
    r = Run(tmp_path, b.brokers)
    b.produce("term1", [(0, None, {"id": i, "v": None, "n": None}) for i in range(3000)])
    proc = subprocess.Popen(r.args("term1", "append", "--commit-interval", "600s"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(2 * SCALE)
    assert proc.poll() is None                # no --stop-at: it waits for more
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=120 * SCALE)[1]
    assert proc.returncode == 128 + signal.SIGTERM, err
    offs = r.offsets("kafka.term1")
    read = offs[-1][1][0] if offs else 0
    assert len(r.rows("kafka.term1")["duckdb"]) == read
    r.run("term1", "append")
    assert sorted(x[0] for x in r.rows("kafka.term1")["duckdb"]) == list(range(3000))


def test_a_message_that_does_not_parse(tmp_path):
    b = broker()
    b.create_topic("bad1", 2)
    r = Run(tmp_path, b.brokers)
    b.produce("bad1", [(0, None, {"id": 1, "v": "a", "n": 1}), (1, None, {"id": 2, "v": "b", "n": 2})])
    r.run("bad1", "append")
    b.produce("bad1", [(1, None, {"id": 3, "v": "c", "n": 3}), (1, None, "not json"),
                       (1, None, {"id": 4, "v": "d", "n": 4}), (0, None, {"id": "x"})])
    p = r.run("bad1", "append", "--commit-interval", "600s", check=False)
    assert p.returncode == 1, p.stderr
    assert "topic bad1 partition" in p.stderr and "offset" in p.stderr, p.stderr
    assert "--on-bad-message skip" in p.stderr
    # nothing of the failed run is visible: the table still holds the first two rows
    assert_rows(r.rows("kafka.bad1"), [(1, "a", 1), (2, "b", 2)])
    p = r.run("bad1", "append", "--on-bad-message", "skip")
    assert "2 bad messages skipped" in p.stderr, p.stderr
    assert_rows(r.rows("kafka.bad1"), [(1, "a", 1), (2, "b", 2), (3, "c", 3), (4, "d", 4)])


def test_upsert_message_without_a_key(tmp_path):
    b = broker()
    b.create_topic("nokey1", 1)
    r = Run(tmp_path, b.brokers)
    b.produce("nokey1", [(0, None, {"id": 1, "v": "a", "n": 1})])
    p = r.run("nokey1", "upsert", check=False)
    assert p.returncode == 1
    assert "a message without a key" in p.stderr and "topic nokey1 partition 0 offset 0" in p.stderr


def test_a_topic_deleted_and_created_again_is_refused(tmp_path):
    b = broker()
    b.create_topic("re1", 1)
    r = Run(tmp_path, b.brokers)
    b.produce("re1", [(0, {"id": i}, {"id": i, "v": "a", "n": i}) for i in range(10)])
    r.run("re1", "upsert")
    b.delete_topic("re1")
    b.create_topic("re1", 1)
    b.produce("re1", [(0, {"id": 1}, {"id": 1, "v": "b", "n": 1})])
    p = r.run("re1", "upsert", check=False)
    assert p.returncode == 1, p.stderr
    assert "deleted and created again" in p.stderr and "offset 10" in p.stderr, p.stderr
    assert len(r.rows("kafka.re1")["duckdb"]) == 10
    assert "give it another table" in p.stderr               # the advice, followed:
    r.run("re1", "upsert", "--table", "kafka.re1_again")
    assert r.rows("kafka.re1_again")["duckdb"] == [(1, "b", 1)]


def test_a_replaced_cluster_is_refused(tmp_path):
    k = KafkaServer()                         # its own: replacing it loses every topic
    try:
        k.create_topic("rc1", 1)
        r = Run(tmp_path, k.brokers)
        k.produce("rc1", [(0, {"id": 1}, {"id": 1, "v": "a", "n": 1})])
        r.run("rc1", "upsert")
        old = k.cluster_id
        k.replace()
        assert k.cluster_id != old
        k.create_topic("rc1", 1)
        k.produce("rc1", [(0, {"id": 2}, {"id": 2, "v": "b", "n": 2}) for _ in range(3)])
        p = r.run("rc1", "upsert", check=False)
        assert p.returncode == 1, p.stderr
        assert f"fed from Kafka cluster {old}" in p.stderr and k.cluster_id in p.stderr, p.stderr
        assert r.rows("kafka.rc1")["duckdb"] == [(1, "a", 1)]
        # the advice: another table for this cluster's topic
        assert "give it another table (--table" in p.stderr
        r.run("rc1", "upsert", "--table", "kafka.rc1_new")
        assert r.rows("kafka.rc1_new")["duckdb"] == [(2, "b", 2)]
        assert r.rows("kafka.rc1")["duckdb"] == [(1, "a", 1)]
    finally:
        k.stop()


def test_bad_options_create_nothing(tmp_path):
    b = broker()
    r = Run(tmp_path, b.brokers)
    p = subprocess.run([floe_bin(), "kafka", "--brokers", b.brokers, "--topics", "a,b",
                        "--format", "append", "--table", "x.y"], capture_output=True, text=True)
    assert p.returncode == 2 and "--table-map" in p.stderr
    p = subprocess.run([floe_bin(), "kafka", "--brokers", b.brokers, "--topics", "a",
                        "--format", "debezium-ish"], capture_output=True, text=True)
    assert p.returncode == 2 and "upsert, changes or append" in p.stderr
    p = r.run("no_such_topic", "append", check=False)
    assert p.returncode == 1 and "no_such_topic does not exist" in p.stderr, p.stderr
    assert not os.path.exists(r.wh)
    p = subprocess.run([floe_bin(), "kafka", "--brokers", b.brokers, "--topics", "a",
                        "--format", "append", "--kafka-property", "sasl.password"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "KEY=VALUE" in p.stderr


@pytest.mark.parametrize("extra,word", [(["--sink-version", "0"], "at least 1"),
                                        (["--format-version", "4"], "2 or 3"),
                                        (["--compression", "lz4"], "compression"),
                                        (["--delete-mode", "both"], "position or equality")])
def test_sources_share_the_sink_options_rules(tmp_path, extra, word):
    """floe sink, floe pg and floe kafka check the sink options by one set of
    rules (floe pg took --sink-version 0 as 1 before), before connecting."""
    cat = ["--catalog", f"sqlite:{tmp_path}/c.db", "--warehouse", f"{tmp_path}/wh"]
    cmds = [["sink", "--table", "a.b", "--schema", "id bigint", "--key", "id"],
            ["pg", "--source", "postgres://nobody@127.0.0.1:1/none", "--tables", "public.t"],
            ["kafka", "--brokers", "127.0.0.1:1", "--topics", "t", "--format", "upsert",
             "--key", "id"]]
    for cmd in cmds:
        p = subprocess.run([floe_bin(), *cmd, *cat, *extra], capture_output=True, text=True,
                           input="", timeout=60 * SCALE)
        assert p.returncode == 2, (cmd, p.stderr)
        assert word in p.stderr, (cmd, p.stderr)
    assert not os.path.exists(f"{tmp_path}/wh")


def test_debezium_format_refuses_what_is_not_a_change_event(tmp_path):
    b = broker()
    b.create_topic("dbzbad1", 1)
    r = Run(tmp_path, b.brokers)
    ok = {"op": "c", "before": None, "after": {"id": 1, "v": "a", "n": 1}}
    b.produce("dbzbad1", [(0, {"id": 1}, ok), (0, {"id": 2}, {"id": 2, "v": "plain row"})])
    p = r.run("dbzbad1", "debezium", check=False)
    assert p.returncode == 1, p.stderr
    assert "not a Debezium change event" in p.stderr, p.stderr
    assert "topic dbzbad1 partition 0 offset 1" in p.stderr, p.stderr
    # a column the table lacks, in an event without a schema to add it from
    b.produce("dbzbad1", [(0, {"id": 3}, {"op": "u", "before": None,
                                          "after": {"id": 3, "v": "b", "n": 3, "new": 1}})])
    p = r.run("dbzbad1", "debezium", "--on-bad-message", "skip")
    assert "2 bad messages skipped" in p.stderr, p.stderr
    assert_rows(r.rows("kafka.dbzbad1"), [(1, "a", 1)])
    b.produce("dbzbad1", [(0, {"id": 4}, {"op": "u", "before": None,
                                          "after": {"id": 4, "v": "c", "n": 4, "new": 1}})])
    p = r.run("dbzbad1", "debezium", check=False)
    assert p.returncode == 1 and 'column "new" is not one of the table' in p.stderr, p.stderr


def test_a_dotted_topic_names_one_table(tmp_path):
    """dbz.public.items goes to kafka.dbz_public_items (a table, not namespaces)."""
    b = broker()
    b.create_topic("dot.ted.t1", 1)
    r = Run(tmp_path, b.brokers)
    b.produce("dot.ted.t1", [(0, None, {"id": 1, "v": "a", "n": 1})])
    r.run("dot.ted.t1", "append")
    assert_rows(r.rows("kafka.dot_ted_t1"), [(1, "a", 1)])


def test_metrics_show_each_partitions_lag(tmp_path):
    """/metrics: per-partition lag against the table's commits, the message
    counters and the sink's own metrics; the lag falls to 0 once committed."""
    import urllib.request
    b = broker()
    b.create_topic("met1", 3)
    r = Run(tmp_path, b.brokers)
    b.produce("met1", [(i % 3, None, {"id": i, "v": None, "n": None}) for i in range(300)])
    port = free_port()
    proc = subprocess.Popen(r.args("met1", "append", "--commit-interval", "200ms",
                                   "--metrics-addr", f"127.0.0.1:{port}"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_offsets(r, "kafka.met1", {0: 100, 1: 100, 2: 100}, proc)
        deadline = time.time() + 60 * SCALE
        while True:                 # the lag is looked at again after each commit
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                          timeout=30 * SCALE).read().decode()
            lags = [l for l in text.splitlines() if l.startswith("floe_kafka_partition_lag{")]
            if all(l.endswith(" 0") for l in lags) or time.time() > deadline:
                break
            time.sleep(0.2)
        assert sorted(lags) == [f'floe_kafka_partition_lag{{topic="met1",partition="{p}"}} 0'
                                for p in range(3)], text
        assert "floe_kafka_messages_total 300" in text
        assert 'sink="kafka:met1"' in text                 # the sink's own metrics
        b.produce("met1", [(0, None, {"id": 1000 + i, "v": None, "n": None}) for i in range(5)])
        wait_offsets(r, "kafka.met1", {0: 105, 1: 100, 2: 100}, proc)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=120 * SCALE)
    finally:
        if proc.poll() is None:
            proc.kill()


def change(t, row, diff=1):
    return {"time": t, "diff": diff, "row": row}


def assert_offsets_cover(offs_by_frontier, messages):
    """Nothing a commit passes over is left out of it: every change message
    before a partition's recorded offset has a time below the frontier.
    messages: {partition: [(offset, time or None for progress)]}."""
    for frontier, offs in offs_by_frontier:
        for p, rec in offs.items():
            late = [(o, t) for o, t in messages[p] if o < rec and t is not None and
                    frontier is not None and t >= frontier]
            assert not late, (frontier, p, rec, late)


def frontiers_and_offsets(r, name):
    """[(frontier time or None for [], {partition: offset})], oldest first."""
    out = []
    for _, props, offs in r.kafka_snapshots(name):
        f = json.loads(props["floe.frontier"])
        out.append((f[0] if f else None, offs))
    return out


def test_changes_topic_commits_up_to_the_least_progress_of_its_partitions(tmp_path):
    """floe's change records as messages: updates at their own times, a
    progress record per partition; the table holds exactly the updates
    below the least progress, and what is past it is read again (not lost,
    not doubled: append mode would show a doubled update as a doubled row)."""
    b = broker()
    b.create_topic("ch1", 2)
    r = Run(tmp_path, b.brokers)
    rng = random.Random(3)
    messages = {0: [], 1: []}
    updates = []                                  # (time, row)
    progress = {0: 0, 1: 0}

    def send(batch):
        b.produce("ch1", [(p, None, v) for p, v in batch])
        for p, v in batch:
            messages[p].append((len(messages[p]), v.get("time") if "row" in v else None))

    next_id = 0
    for rnd in range(4):
        batch = []
        for _ in range(200):
            p = rng.randrange(2)
            t = progress[p] + rng.randrange(30)
            row = {"id": next_id, "v": f"t{t}", "n": t}
            next_id += 1
            updates.append((t, (row["id"], row["v"], row["n"])))
            batch.append((p, change(t, row)))
            if rng.random() < 0.1:
                progress[p] += rng.randrange(1, 15)
                batch.append((p, {"progress": progress[p]}))
        send(batch)
        r.run("ch1", "changes")
        f = min(progress.values())
        want = [row for t, row in updates if t < f]
        assert_rows(r.rows("kafka.ch1"), want)
        fo = frontiers_and_offsets(r, "kafka.ch1")
        assert fo[-1][0] == f
        assert_offsets_cover(fo, messages)
    # a time behind its partition's progress is refused, naming where
    # (skipped, it is read again while the table records an offset before it: a
    # rerun must skip it again)
    b.produce("ch1", [(0, None, change(progress[0] - 1, {"id": -1, "v": "late", "n": 0}))])
    messages[0].append((len(messages[0]), None))      # never in the table
    progress = {p: v + 1 for p, v in progress.items()}
    send([(p, {"progress": v}) for p, v in progress.items()])
    p = r.run("ch1", "changes", check=False)
    assert p.returncode == 1 and "behind the partition's progress" in p.stderr, p.stderr
    assert "topic ch1 partition 0 offset" in p.stderr, p.stderr
    p = r.run("ch1", "changes", "--on-bad-message", "skip")
    assert "1 bad messages skipped" in p.stderr, p.stderr
    assert frontiers_and_offsets(r, "kafka.ch1")[-1][0] == min(progress.values())
    # both partitions close: everything goes in, and the table is complete
    send([(0, {"progress": None}), (1, {"progress": None})])
    p = r.run("ch1", "changes", "--on-bad-message", "skip")
    assert "1 bad messages skipped" in p.stderr, p.stderr
    assert_rows(r.rows("kafka.ch1"), [row for _, row in updates])
    fo = frontiers_and_offsets(r, "kafka.ch1")
    assert fo[-1][0] is None and fo[-1][1] == {0: len(messages[0]), 1: len(messages[1])}
    assert_offsets_cover(fo, messages)


def test_changes_topic_with_a_key_and_a_schema_change(tmp_path):
    """Upsert mode (--key): retractions and insertions by time; a schema
    record cuts a batch on its own, and that commit too records offsets that
    leave nothing behind."""
    b = broker()
    b.create_topic("ch2", 1)
    r = Run(tmp_path, b.brokers)
    msgs = [change(1, {"id": 1, "v": "a", "n": 1}), change(1, {"id": 2, "v": "b", "n": 2}),
            {"progress": 2},
            change(2, {"id": 1, "v": "a", "n": 1}, -1), change(2, {"id": 1, "v": "a2", "n": 10}),
            change(4, {"id": 3, "v": "c", "n": 3}),
            {"time": 3, "schema": "id bigint not null, v text, n integer, w integer"},
            change(3, {"id": 4, "v": "d", "n": 4, "w": 40}),
            change(5, {"id": 5, "v": "e", "n": 5, "w": 50}),
            {"progress": 5}]
    b.produce("ch2", [(0, None, m) for m in msgs])
    r.run("ch2", "changes", "--key", "id")
    assert_rows(r.rows("kafka.ch2", ("id", "v", "n", "w")),
                [(1, "a2", 10, None), (2, "b", 2, None), (3, "c", 3, None), (4, "d", 4, 40)])
    fo = frontiers_and_offsets(r, "kafka.ch2")
    times = {0: [(i, m.get("time") if "row" in m or "schema" in m else None)
                 for i, m in enumerate(msgs)]}
    # (a fresh table's batch of time 0 first), the schema record's cut, then progress
    assert [f for f, _ in fo] == [1, 3, 5], fo
    assert_offsets_cover(fo, times)
    assert fo[1][1] == {0: 5} and fo[2][1] == {0: 8}  # the first message each leaves
    b.produce("ch2", [(0, None, {"progress": 6})])
    r.run("ch2", "changes", "--key", "id")
    assert (5, "e", 5, 50) in r.rows("kafka.ch2", ("id", "v", "n", "w"))["duckdb"]


def test_append_with_kafka_columns(tmp_path):
    """--kafka-columns: each row carries its message's partition, offset and
    timestamp (the producer's, read back as the instant it was)."""
    b = broker()
    b.create_topic("kc1", 2)
    r = Run(tmp_path, b.brokers)
    from confluent_kafka import Producer
    prod = Producer({"bootstrap.servers": b.brokers})
    stamps = {}
    for i in range(20):
        ts = 1_700_000_000_000 + i * 1001                 # ms since 1970
        prod.produce("kc1", json.dumps({"id": i, "v": None, "n": i}).encode(), partition=i % 2,
                     timestamp=ts)
        stamps[i] = ts
    prod.flush(30 * SCALE)
    prod.produce("kc1", b"{}", partition=0, timestamp=1_700_000_100_000)  # an empty object
    prod.flush(30 * SCALE)
    r.run("kc1", "append", "--kafka-columns", "--schema", "id bigint, v text, n integer")
    cols = ("id", "_kafka_partition", "_kafka_offset", "_kafka_timestamp")
    got = r.rows("kafka.kc1", cols)
    import datetime
    want = []
    seen = {0: 0, 1: 0}
    for i in range(20):
        p = i % 2
        when = datetime.datetime.fromtimestamp(stamps[i] / 1000, datetime.timezone.utc)
        want.append((i, p, seen[p], when))
        seen[p] += 1
    want.append((None, 0, 10, datetime.datetime.fromtimestamp(1_700_000_100, datetime.timezone.utc)))
    for reader in ("duckdb", "pyiceberg"):
        rows = [(a, b_, c, d.astimezone(datetime.timezone.utc)) for a, b_, c, d in got[reader]]
        assert sorted(rows, key=repr) == sorted(want, key=repr), reader
    # a table made without them is refused with them
    nullable = ("--schema", "id bigint, v text, n integer")
    r.run("kc1", "append", "--table", "kafka.plain", *nullable)
    p = r.run("kc1", "append", "--kafka-columns", "--table", "kafka.plain", *nullable,
              check=False)
    assert p.returncode == 2 and "has no column _kafka_partition" in p.stderr, p.stderr


def test_bad_messages_go_to_a_dead_letter_topic(tmp_path):
    b = broker()
    b.create_topic("dl1", 2)
    r = Run(tmp_path, b.brokers)
    b.produce("dl1", [(0, None, {"id": 1, "v": "a", "n": 1}), (1, "k1", "not json"),
                      (0, None, {"id": "x"}), (1, None, {"id": 2, "v": "b", "n": 2})])
    p = r.run("dl1", "append", "--on-bad-message", "dead-letter=dl1_dead", check=False)
    assert p.returncode == 1 and "dead-letter topic dl1_dead does not exist" in p.stderr, p.stderr
    assert not r.offsets_or_none("kafka.dl1")
    b.create_topic("dl1_dead", 1)
    p = r.run("dl1", "append", "--on-bad-message", "dead-letter=dl1_dead")
    assert "2 bad messages skipped" in p.stderr, p.stderr
    assert_rows(r.rows("kafka.dl1"), [(1, "a", 1), (2, "b", 2)])
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": b.brokers, "group.id": "dl1-check",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition("dl1_dead", 0, 0)])
        got = []
        deadline = time.time() + 60 * SCALE
        while len(got) < 2 and time.time() < deadline:
            m = c.poll(1)
            if m is not None and not m.error():
                got.append((m.key(), m.value(), dict(m.headers() or [])))
    finally:
        c.close()
    assert len(got) == 2, got
    by_part = {h["floe.partition"]: (k, v, h) for k, v, h in got}
    k, v, h = by_part[b"1"]
    assert (k, v, h["floe.topic"], h["floe.offset"]) == (b"k1", b"not json", b"dl1", b"0")
    k, v, h = by_part[b"0"]
    assert (v, h["floe.offset"]) == (b'{"id": "x"}', b"1")
    assert b"id" in h["floe.error"], h


def test_a_topic_pattern_reads_matching_topics_new_ones_too(tmp_path):
    """--topic-pattern: every matching topic to its own table; a topic created
    while floe runs joins (within --topic-refresh); others are left alone."""
    b = broker()
    for t in ("pat.a", "pat.b", "other.c"):
        b.create_topic(t, 1)
    r = Run(tmp_path, b.brokers)
    for t in ("pat.a", "pat.b", "other.c"):
        b.produce(t, [(0, None, {"id": i, "v": t, "n": 0}) for i in range(5)])
    args = [a for a in r.args("x", "append", "--commit-interval", "100ms", "--topic-refresh",
                              "300ms")]
    i = args.index("--topics")
    args[i:i + 2] = ["--topic-pattern", r"pat\..*"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_offsets(r, "kafka.pat_a", {0: 5}, proc)
        wait_offsets(r, "kafka.pat_b", {0: 5}, proc)
        b.create_topic("pat.new", 1)
        b.produce("pat.new", [(0, None, {"id": 9, "v": "new", "n": 1})])
        wait_offsets(r, "kafka.pat_new", {0: 1}, proc)
        proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=120 * SCALE)[1]
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert "topic pat.new matches the topic pattern" in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
    assert_rows(r.rows("kafka.pat_new"), [(9, "new", 1)])
    assert len(r.rows("kafka.pat_a")["duckdb"]) == 5
    from pyiceberg.exceptions import NoSuchTableError
    with pytest.raises(NoSuchTableError):
        r.table("kafka.other_c")
    p = subprocess.run([floe_bin(), "kafka", "--brokers", b.brokers, "--topic-pattern", "(",
                        "--format", "append"], capture_output=True, text=True)
    assert p.returncode == 2 and "not a POSIX extended regular expression" in p.stderr, p.stderr
    p = subprocess.run([floe_bin(), "kafka", "--brokers", b.brokers, "--topic-pattern", "a",
                        "--topics", "a", "--format", "append"], capture_output=True, text=True)
    assert p.returncode == 2 and "one of them" in p.stderr, p.stderr


def test_the_key_columns_are_recorded_with_the_table(tmp_path):
    """A table records its key columns (floe.kafka.key): a rerun needs no
    --key; a table that records none, or a Debezium table without an
    embedded schema to make it from, is refused with what to pass."""
    b = broker()
    b.create_topic("key1", 1)
    r = Run(tmp_path, b.brokers)
    b.produce("key1", [(0, {"id": 1}, {"id": 1, "v": "a", "n": 1})])
    r.run("key1", "upsert")
    b.produce("key1", [(0, {"id": 1}, {"id": 1, "v": "b", "n": 2})])
    args = [a for a in r.args("key1", "upsert", "--stop-at", "end")]
    i = args.index("--key")
    del args[i:i + 2]
    p = subprocess.run(args, capture_output=True, text=True, timeout=300 * SCALE)
    assert p.returncode == 0, p.stderr
    assert_rows(r.rows("kafka.key1"), [(1, "b", 2)])
    p = subprocess.run(args + ["--table", "kafka.key1_other"], capture_output=True, text=True,
                       timeout=300 * SCALE)
    assert p.returncode == 2 and "name them (--key)" in p.stderr, p.stderr
    # Debezium events without a schema cannot make a table
    b.create_topic("key2", 1)
    b.produce("key2", [(0, {"id": 1}, {"op": "c", "before": None,
                                       "after": {"id": 1, "v": "a", "n": 1}})])
    p = subprocess.run([floe_bin(), "kafka", "--brokers", b.brokers, "--topics", "key2",
                        "--format", "debezium", "--stop-at", "end", "--catalog",
                        f"sqlite:{r.db}", "--warehouse", r.wh, "--maintain", "off"],
                       capture_output=True, text=True, timeout=300 * SCALE)
    assert p.returncode == 1, p.stderr            # (found at the first event, not at the start)
    assert "carry no schema to make it from" in p.stderr and "--schema" in p.stderr, p.stderr
    from pyiceberg.exceptions import NoSuchTableError
    with pytest.raises(NoSuchTableError):
        r.table("kafka.key2")
