"""`floe kafka --format debezium --transaction-topic PREFIX.transaction`:
real Debezium (provide.transaction.metadata) streams transactions that
each touch two tables while floe commits every 50 ms and is SIGKILLed now
and then; every snapshot of both tables, read by pyiceberg, must hold whole
source transactions only, and the tables must end equal to Postgres."""
import json
import random
import signal
import subprocess
import time

from conftest import SCALE, floe_bin
from debezium_connect import Debezium
from kafkaserver import broker
from pgserver import pgdb  # noqa: F401 (a fixture)
from test_kafka_debezium import Tables

A_ROWS, L_ROWS = 120, 80        # rows each transaction inserts into acct and line


def floe_args(b, tabs, prefix, *extra):
    return [floe_bin(), "kafka", "--brokers", b.brokers,
            "--topics", f"{prefix}.public.acct,{prefix}.public.line",
            "--table-map", f"{prefix}.public.acct=dbz.acct,{prefix}.public.line=dbz.line",
            "--transaction-topic", f"{prefix}.transaction", "--format", "debezium",
            "--maintain", "off", "--catalog", f"sqlite:{tabs.catalog}", "--warehouse", tabs.wh,
            *extra]


def transaction(db, k, alter=False):
    """Transaction k: A_ROWS rows of txn k into acct (v 0), L_ROWS into line;
    acct's rows of txn k-1 get v 1; line's rows of txn k-2 are deleted."""
    import psycopg
    with psycopg.connect(db.dsn) as c:
        c.execute("INSERT INTO acct (id, txn, v) SELECT %s::int * 1000 + g, %s::int, 0 "
                  "FROM generate_series(1, %s::int) g", (k, k, A_ROWS // 2))
        if alter:                                  # a schema change inside it
            c.execute("ALTER TABLE acct ADD COLUMN extra integer")
        c.execute("INSERT INTO acct (id, txn, v) SELECT %s::int * 1000 + g, %s::int, 0 "
                  "FROM generate_series(%s::int, %s::int) g", (k, k, A_ROWS // 2 + 1, A_ROWS))
        c.execute("INSERT INTO line (id, txn, v) SELECT %s::int * 1000 + g, %s::int, 0 "
                  "FROM generate_series(1, %s::int) g", (k, k, L_ROWS))
        c.execute("UPDATE acct SET v = 1 WHERE txn = %s", (k - 1,))
        c.execute("DELETE FROM line WHERE txn = %s", (k - 2,))
        c.commit()


def snapshot_rows(table):
    """[(snapshot, summary properties, [(txn, v), ...])], oldest first."""
    out = []
    for s in table.snapshots():
        props = s.summary.additional_properties if s.summary else {}
        rows = table.scan(snapshot_id=s.snapshot_id, selected_fields=("txn", "v")).to_arrow()
        out.append((s, props, list(zip(rows["txn"].to_pylist(), rows["v"].to_pylist()))))
    return out


def assert_whole(tabs, last):
    """Every snapshot holds whole transactions: all or none of a
    transaction's rows, its update applied to all of them or none."""
    acct, line = tabs.pyiceberg_table("dbz.acct"), tabs.pyiceberg_table("dbz.line")
    cut = 0
    for s, props, rows in snapshot_rows(acct):
        by = {}
        for txn, v in rows:
            by.setdefault(txn, []).append(v)
        rec = json.loads(props.get("floe.kafka.offsets", "{}")).get("transactions", {})
        partial = rec.get("partial")
        for txn, vs in by.items():
            if txn < 0:                            # the snapshot's read
                continue
            if partial and txn == last:            # the schema change's own cut
                assert len(vs) == partial["events"], (s.snapshot_id, len(vs), partial)
                cut += 1
                continue
            assert len(vs) == A_ROWS, (s.snapshot_id, txn, len(vs))
            assert len(set(vs)) == 1, (s.snapshot_id, txn, sorted(set(vs)))
            # the update by txn+1 is there exactly when txn+1 is whole there
            whole_next = txn + 1 in by and not (partial and txn + 1 == last)
            assert (vs[0] == 1) == whole_next, (s.snapshot_id, txn)
    for s, props, rows in snapshot_rows(line):
        counts = {}
        for txn, _ in rows:
            counts[txn] = counts.get(txn, 0) + 1
        assert all(n == L_ROWS for n in counts.values()), (s.snapshot_id, counts)
        assert "transactions" in json.loads(props["floe.kafka.offsets"]), props
    return cut


def test_every_snapshot_holds_whole_source_transactions(pgdb, tmp_path):  # noqa: F811
    b = broker()
    pgdb.sql("CREATE TABLE acct (id integer PRIMARY KEY, txn integer, v integer)")
    pgdb.sql("CREATE TABLE line (id integer PRIMARY KEY, txn integer, v integer)")
    pgdb.sql("ALTER TABLE line REPLICA IDENTITY FULL")
    pgdb.sql("INSERT INTO acct VALUES (0, -1, 1)")  # a snapshot read (no transaction)
    dbz = Debezium(b, pgdb, ["public.acct", "public.line"],
                   extra={"provide.transaction.metadata": "true"})
    tabs = Tables(tmp_path)
    prefix = dbz.prefix
    log = open(tmp_path / "floe.log", "a")
    rng = random.Random(7)
    n_txn = 24
    p = None
    try:
        dbz.wait_messages(f"{prefix}.public.acct", 1)  # streaming from here
        transaction(pgdb, 1)                       # the topics exist before floe starts
        dbz.wait_messages(f"{prefix}.transaction", 2)
        dbz.wait_messages(f"{prefix}.public.line", L_ROWS)
        kills = 0
        p = subprocess.Popen(floe_args(b, tabs, prefix, "--commit-interval", "50ms"),
                             stdout=subprocess.DEVNULL, stderr=log)
        for k in range(2, n_txn + 1):
            transaction(pgdb, k)
            time.sleep(rng.uniform(0, 0.4) * SCALE)
            if k % 4 == 0:                         # killed at any moment, started again
                p.send_signal(signal.SIGKILL)
                p.wait()
                kills += 1
                p = subprocess.Popen(floe_args(b, tabs, prefix, "--commit-interval", "50ms"),
                                     stdout=subprocess.DEVNULL, stderr=log)
        transaction(pgdb, n_txn + 1, alter=True)
        dbz.wait_messages(f"{prefix}.transaction", 2 * (n_txn + 1))
        # every event in its topic too: Debezium may write a transaction's END
        # before its events reach their topics, and --stop-at end stops at the
        # ends the topics have when floe starts.  acct: the snapshot's row, then
        # A_ROWS inserts and (from txn 2) A_ROWS updates a transaction; line:
        # L_ROWS inserts and (from txn 3) L_ROWS deletes with their tombstones
        dbz.wait_messages(f"{prefix}.public.acct", 1 + A_ROWS + n_txn * 2 * A_ROWS)
        dbz.wait_messages(f"{prefix}.public.line", 2 * L_ROWS + (n_txn - 1) * 3 * L_ROWS)
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=120 * SCALE)
        done = subprocess.run(floe_args(b, tabs, prefix, "--stop-at", "end"),
                              capture_output=True, text=True, timeout=300 * SCALE)
        assert done.returncode == 0, done.stderr
    finally:
        if p and p.poll() is None:
            p.kill()
        log.close()
        dbz.stop()
    assert kills >= 5
    want_acct = sorted(pgdb.sql("SELECT txn, v FROM acct"))
    want_line = sorted(pgdb.sql("SELECT txn, v FROM line"))
    acct, line = tabs.pyiceberg_table("dbz.acct"), tabs.pyiceberg_table("dbz.line")
    got = acct.scan(selected_fields=("txn", "v")).to_arrow()
    assert sorted(zip(got["txn"].to_pylist(), got["v"].to_pylist())) == want_acct
    got = line.scan(selected_fields=("txn", "v")).to_arrow()
    assert sorted(zip(got["txn"].to_pylist(), got["v"].to_pylist())) == want_line
    assert len(acct.snapshots()) > 5, "too few snapshots to show anything"
    assert assert_whole(tabs, n_txn + 1) >= 1      # the schema change cut one


def ev(key_id, txn, v="x"):
    """A bare Debezium create event of transaction `txn` (None: none)."""
    e = {"op": "c" if txn else "r", "after": {"id": key_id, "v": v, "n": 0}}
    if txn:
        e["transaction"] = {"id": txn, "total_order": 1, "data_collection_order": 1}
    return e


def boundary(status, txn, counts=None):
    return {"status": status, "id": txn, "event_count": sum((counts or {}).values()) or None,
            "data_collections": [{"data_collection": dc, "event_count": n}
                                 for dc, n in counts.items()] if counts else None}


def test_transactions_over_partitions_wait_for_their_last_event(tmp_path):
    """Synthetic events over a 3-partition topic and a 1-partition one:
    a transaction is given to the tables only once every event its END
    counts has arrived, and the ones after it wait for it.  Ids in
    PostgreSQL's form, TXID:LSN with each event's own LSN."""
    from test_kafka import Run
    b = broker()
    pre = f"app{random.randrange(1 << 30)}"
    ta, tb, tx = f"{pre}.public.a", f"{pre}.public.b", f"{pre}.transaction"
    b.create_topic(ta, 3)
    b.create_topic(tb, 1)
    b.create_topic(tx, 1)
    r = Run(tmp_path, b.brokers)
    args = ("--topics", f"{ta},{tb}", "--table-map", f"{ta}=t.a,{tb}=t.b",
            "--transaction-topic", tx)
    b.produce(tb, [(0, None, ev(0, None))])                        # a snapshot read
    b.produce(ta, [(0, None, ev(1, "501:10")), (1, None, ev(2, "501:11")),
                   (2, None, ev(3, "501:12")), (0, None, ev(4, "501:13")),
                   (1, None, ev(5, "502:20")), (2, None, ev(6, "502:21")),
                   (0, None, ev(8, "503:30"))])
    b.produce(tb, [(0, None, ev(100, "501:14")), (0, None, ev(101, "501:15")),
                   (0, None, ev(102, "502:22"))])
    b.produce(tx, [(0, None, boundary("BEGIN", "501:10")),
                   (0, None, boundary("END", "501:16", {"public.a": 4, "public.b": 2})),
                   (0, None, boundary("BEGIN", "502:20")),
                   (0, None, boundary("END", "502:24", {"public.a": 3, "public.b": 1})),
                   (0, None, boundary("BEGIN", "503:30")),
                   (0, None, boundary("END", "503:31", {"public.a": 1}))])
    # 502 lacks one event of a: neither it nor 503 after it may show
    r.run(ta, "debezium", *args[2:], "--topics", f"{ta},{tb}")
    ids = lambda name: sorted(row[0] for row in r.rows(name)["pyiceberg"])  # noqa: E731
    assert ids("t.a") == [1, 2, 3, 4]
    assert ids("t.b") == [0, 100, 101]
    recs = [offs for _, _, offs in r.kafka_snapshots("t.a")]
    assert recs[-1] == {0: 2, 1: 1, 2: 1}, recs          # from 502 on held (503 behind it)
    last = json.loads(r.table("t.a").current_snapshot().summary
                      .additional_properties["floe.kafka.offsets"])
    assert last["transactions"] == {"topic": tx, "next": 2}, last  # past 501's END
    b.produce(ta, [(2, None, ev(7, "502:23"))])                     # its last event
    r.run(ta, "debezium", *args[2:], "--topics", f"{ta},{tb}")
    assert ids("t.a") == [1, 2, 3, 4, 5, 6, 7, 8]
    assert ids("t.b") == [0, 100, 101, 102]
    last = json.loads(r.table("t.a").current_snapshot().summary
                      .additional_properties["floe.kafka.offsets"])
    assert last["transactions"]["next"] == 6 and last["partitions"] == {"0": 3, "1": 2, "2": 3}
    # refused with clear reasons
    p = r.run(ta, "debezium", "--table-map", f"{ta}=t.a,{tb}=t.b", "--topics", f"{ta},{tb}",
              "--transaction-topic", f"{pre}.nope", check=False)
    assert p.returncode == 1 and f"fed with the transactions of topic {tx}, not" in p.stderr, \
        p.stderr
    p = r.run(ta, "debezium", "--table-map", f"{ta}=t.x,{tb}=t.y", "--topics", f"{ta},{tb}",
              "--transaction-topic", f"{pre}.nope", check=False)
    assert p.returncode != 0 and f"{pre}.nope does not exist" in p.stderr, p.stderr
    p = r.run(ta, "debezium", "--table", "t.other", "--transaction-topic", "other.transaction",
              check=False)
    assert p.returncode == 2 and "is not one of transaction topic" in p.stderr, p.stderr
    p = r.run(ta, "upsert", "--table", "t.other", "--transaction-topic", tx, check=False)
    assert p.returncode == 2 and "goes with --format debezium" in p.stderr, p.stderr
    p = r.run(ta, "debezium", "--table-map", f"{ta}=t.m,{tb}=t.n", "--topics", f"{ta},{tb}",
              "--transaction-topic", tx, "--txn-memory", "600", check=False)
    assert p.returncode == 1 and "take more than 600 bytes" in p.stderr, p.stderr
    assert "--txn-memory" in p.stderr, p.stderr
    r.run(ta, "debezium", "--table", "t.z")                       # fed without them first
    p = r.run(ta, "debezium", "--table", "t.z", "--transaction-topic", tx, check=False)
    assert p.returncode == 1 and "without its transactions" in p.stderr, p.stderr
