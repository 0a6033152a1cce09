"""`floe kafka --group G --member NAME`: processes sharing a topic's
partitions (Kafka's eager rebalancing), each writing the same table
through its own sink id, against the test broker.  Append mode shows a
message committed twice as a doubled row, one lost as a missing one; the
snapshots' floe.kafka.offsets must never give a partition back an offset
it had passed, and the group's Kafka offsets never run ahead of the table."""
import random
import signal
import subprocess
import threading
import time

from conftest import SCALE
from iceberg_readers import duck
from kafkaserver import broker
from test_kafka import Run

PARTS = 12


def member_args(r, topic, name, *extra):
    args = r.args(topic, "append", "--group", f"g-{topic}", "--member", name,
                  "--commit-interval", "100ms", "--kafka-property", "session.timeout.ms=3000",
                  "--kafka-property", "heartbeat.interval.ms=300", *extra)
    return args


def start(r, topic, name, log=False):
    """A member; with `log`, its stderr appended to NAME.log (runs killed
    leave what they said there)."""
    if log:
        with open(f"{r.dir}/{name}.log", "a") as f:
            return subprocess.Popen(member_args(r, topic, name), stdout=subprocess.DEVNULL,
                                    stderr=f, text=True)
    return subprocess.Popen(member_args(r, topic, name), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def ids_and_counts(r, table):
    con = duck()
    try:
        return con.execute("SELECT count(*), count(DISTINCT id), min(id), max(id) "
                           "FROM iceberg_scan(?)", [r.table(table).metadata_location]).fetchone()
    finally:
        con.close()


def records(r, table):
    """[(sink id, {partition: offset})], oldest first."""
    return [(props.get("floe.sink-id"), offs) for _, props, offs in r.kafka_snapshots(table)]


def assert_offsets_never_go_back(recs):
    seen = {}
    for sink, offs in recs:
        for p, o in offs.items():
            assert o >= seen.get(p, 0), (sink, p, o, seen.get(p))
            seen[p] = o
    return seen


def wait_rows(r, table, n, procs):
    deadline = time.time() + 180 * SCALE
    while time.time() < deadline:
        for p in procs:
            assert p.poll() is None, p.stderr.read()
        try:
            if ids_and_counts(r, table)[0] >= n:
                return
        except Exception:  # noqa: BLE001 - not created yet
            pass
        time.sleep(0.3)
    raise AssertionError(f"{table} never reached {n} rows")


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    try:
        return p.communicate(timeout=120 * SCALE)[1]
    except subprocess.TimeoutExpired:
        p.kill()
        return p.communicate()[1]


def drain(r, topic, total):
    """One member alone takes every partition and reads to the end: every id
    (from -1, the first message, on) exactly once."""
    p = subprocess.run(member_args(r, topic, "m1", "--stop-at", "end"), capture_output=True,
                       text=True, timeout=300 * SCALE)
    assert p.returncode == 0, p.stderr
    assert ids_and_counts(r, f"kafka.{topic}") == (total, total, -1, total - 2)


def test_two_members_share_a_topic_and_write_one_table(tmp_path):
    b = broker()
    b.create_topic("grp1", PARTS)
    r = Run(tmp_path, b.brokers)
    total = 6000
    b.produce("grp1", [(i % PARTS, None, {"id": i, "v": "x", "n": i % 7}) for i in range(total)])
    m1 = start(r, "grp1", "m1")
    wait_rows(r, "kafka.grp1", 1, [m1])          # the table exists before the second joins
    m2 = start(r, "grp1", "m2")
    try:
        wait_rows(r, "kafka.grp1", total, [m1, m2])
        more = [(i % PARTS, None, {"id": i, "v": "y", "n": 0}) for i in range(total, 2 * total)]
        b.produce("grp1", more)
        wait_rows(r, "kafka.grp1", 2 * total, [m1, m2])
    finally:
        e1, e2 = stop(m1), stop(m2)
    assert "partitions assigned" in e1 + e2
    assert ids_and_counts(r, "kafka.grp1") == (2 * total, 2 * total, 0, 2 * total - 1)
    recs = records(r, "kafka.grp1")
    sinks = {s for s, _ in recs}
    assert {"kafka:grp1@m1", "kafka:grp1@m2"} <= sinks, sinks     # both wrote
    final = assert_offsets_never_go_back(recs)
    assert final == {p: 2 * total // PARTS for p in range(PARTS)}
    assert all(len(offs) == PARTS for _, offs in recs[1:])       # every record is whole
    assert b.group_offsets("g-grp1", "grp1", PARTS) == final


def test_a_cooperative_assignment_strategy_is_refused_for_members(tmp_path):
    b = broker()
    b.create_topic("grp0", 2)
    r = Run(tmp_path, b.brokers)
    p = subprocess.run(member_args(r, "grp0", "m1", "--kafka-property",
                                   "partition.assignment.strategy=cooperative-sticky"),
                       capture_output=True, text=True, timeout=120 * SCALE)
    assert p.returncode == 2, p.stderr                  # a bad option
    assert "partition.assignment.strategy=cooperative-sticky" in p.stderr, p.stderr
    assert "range or roundrobin" in p.stderr, p.stderr


def test_a_member_that_lost_its_partitions_cannot_commit_them(tmp_path):
    """m1 is stopped dead (SIGSTOP) past its session: m2 takes its partitions
    and commits them; m1, let go on, must not commit what it had read."""
    b = broker()
    b.create_topic("grp2", 4)
    r = Run(tmp_path, b.brokers)
    b.produce("grp2", [(i % 4, None, {"id": i, "v": "x", "n": 0}) for i in range(400)])
    m1 = subprocess.Popen(member_args(r, "grp2", "m1", "--commit-interval", "600s"),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60 * SCALE
        while time.time() < deadline:                      # m1 has read (not committed)
            time.sleep(0.5)
            try:
                if r.table("kafka.grp2") and m1.poll() is None:
                    break
            except Exception:  # noqa: BLE001
                pass
        time.sleep(2 * SCALE)
        m1.send_signal(signal.SIGSTOP)
        m2 = start(r, "grp2", "m2")
        wait_rows(r, "kafka.grp2", 400, [m2])
        err2 = stop(m2)
        assert "4 partitions assigned" in err2, err2
    finally:
        m1.send_signal(signal.SIGCONT)
        err1 = stop(m1)
    # refused, either way it learns of it: the loss reported by the group, or
    # the table found to record another member's offsets at its commit
    assert m1.returncode == 1, err1
    assert ("another member of the group committed the partition" in err1 or
            "lost its partitions" in err1), err1
    assert ids_and_counts(r, "kafka.grp2") == (400, 400, 0, 399)


def test_sigkills_and_rebalances_in_a_group_lose_and_double_nothing(tmp_path):
    """At least 200 SIGKILLs of two members over a 12-partition topic while a
    producer writes; every twentieth killed member stays away past its session
    (the other takes its partitions: a rebalance, and another when it
    comes back); the broker restarted twice.  Every id exactly once, no
    partition's recorded offset ever going back, the group's offsets never
    ahead of the table."""
    b = broker()
    b.create_topic("grpk", PARTS)
    r = Run(tmp_path, b.brokers)
    rng = random.Random(12)
    kills, total = 200, 24000
    produced = [0]
    halt = threading.Event()

    def producer():
        while produced[0] < total and not halt.is_set():
            base, n = produced[0], min(60, total - produced[0])
            b.produce("grpk", [((base + i) % PARTS, None, {"id": base + i, "v": "k", "n": 0})
                               for i in range(n)])
            produced[0] += n
            time.sleep(0.05)

    b.produce("grpk", [(0, None, {"id": -1, "v": "first", "n": 0})])
    members = {"m1": start(r, "grpk", "m1", log=True)}
    wait_rows(r, "kafka.grpk", 1, list(members.values()))   # the table, made by one
    members["m2"] = start(r, "grpk", "m2", log=True)
    th = threading.Thread(target=producer)
    th.start()
    done = 0
    try:
        while done < kills:
            time.sleep(rng.uniform(0.05, 0.35) * SCALE)
            name = rng.choice(sorted(members))
            p = members[name]
            if p.poll() is not None:                   # it halted by itself: say why
                with open(f"{r.dir}/{name}.log") as f:
                    err = f.read()[-4000:]
                assert p.returncode in (1, 75), err
                assert ("another member of the group committed" in err or
                        "lost its partitions" in err or p.returncode == 75), err
            else:
                p.send_signal(signal.SIGKILL)
                p.wait()
                done += 1
                if done % 20 == 0:                     # away past its session: a rebalance
                    time.sleep(4 * SCALE)
                if done in (70, 140):
                    b.down()
                    time.sleep(1 * SCALE)
                    b.up()
            members[name] = start(r, "grpk", name, log=True)
    finally:
        halt.set()
        th.join()
        for p in members.values():
            if p.poll() is None:
                p.kill()
            p.wait()
    logs = "".join(open(f"{r.dir}/{m}.log").read() for m in ("m1", "m2"))
    assert logs.count("12 partitions assigned") >= 5, logs[-3000:]   # rebalances happened
    recs = records(r, "kafka.grpk")
    assert len({s for s, _ in recs}) == 2                # both members committed
    assert_offsets_never_go_back(recs)
    group = b.group_offsets("g-grpk", "grpk", PARTS)
    last = recs[-1][1]
    assert all(group[p] <= last.get(p, 0) for p in range(PARTS)), (group, last)
    drain(r, "grpk", produced[0] + 1)
    final = assert_offsets_never_go_back(records(r, "kafka.grpk"))
    assert sum(final.values()) == produced[0] + 1


def test_one_member_maintains_the_table_elected_through_it(tmp_path):
    """With --maintain auto in every member, the table's floe.kafka.maintainer
    lease names one of them at a time; when its holder is gone past the
    lease, the other takes it over at its next commit."""
    b = broker()
    b.create_topic("grpm", 4)
    r = Run(tmp_path, b.brokers)

    def member(name):
        args = member_args(r, "grpm", name)
        args[args.index("--maintain") + 1] = "auto"
        with open(f"{r.dir}/{name}.log", "a") as f:
            return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=f, text=True)

    def leases():
        return [props.get("floe.kafka.maintainer")
                for _, props, _ in r.kafka_snapshots("kafka.grpm")]

    b.produce("grpm", [(i % 4, None, {"id": i, "v": "x", "n": 0}) for i in range(400)])
    m1 = member("m1")
    wait_rows(r, "kafka.grpm", 400, [m1])
    m2 = member("m2")
    try:
        for k in range(3):                   # both commit, several times
            b.produce("grpm", [(i % 4, None, {"id": i, "v": "y", "n": 0})
                               for i in range(400 + 40 * k, 440 + 40 * k)])
            wait_rows(r, "kafka.grpm", 440 + 40 * k, [m1, m2])
        held = {v.split()[0] for v in leases()}
        assert held == {"m1"}, leases()      # the first to commit holds it
        m1.kill()
        m1.wait()
        deadline, j = time.time() + 120 * SCALE, 0
        while time.time() < deadline:        # m2 commits on until the lease is its own
            b.produce("grpm", [(i % 4, None, {"id": 10000 + 4 * j + i, "v": "z", "n": 0})
                               for i in range(4)])
            j += 1
            time.sleep(1)
            if leases()[-1].split()[0] == "m2":
                break
        assert leases()[-1].split()[0] == "m2", leases()[-5:]
    finally:
        for p in (m1, m2):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait()
    log1, log2 = (open(f"{r.dir}/{m}.log").read() for m in ("m1", "m2"))
    assert "member m1 maintains table kafka.grpm" in log1, log1
    assert "member m2 maintains table kafka.grpm" in log2, log2
