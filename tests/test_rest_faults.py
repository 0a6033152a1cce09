"""The commit protocol of SPEC.md section 7 against a real REST catalog with
faults injected at the HTTP level (tests/faultproxy.py between floe and
Apache's REST server): a commit that lands but whose response is lost
(502), a 409 after another writer committed, a 500 that applied nothing, a
server that hangs past floe's timeout, and a 400.

Each case runs the real `floe sink` through the proxy and checks the table
the server holds, read by Java and DuckDB: every snapshot equals the model
at its frontier, frontiers strictly increase, and each commit request that
landed made exactly one snapshot (nothing repeated).
"""
import json
import random
import time

import pytest

import java_reader
from faultproxy import FaultProxy
from restserver import check_rest_snapshots, rest_server, snapshots  # noqa: F401
from sinkmodel import INF, SCHEMA, Stream, frontier_value


@pytest.fixture
def proxy(rest_server):
    p = FaultProxy(rest_server.uri)
    yield p
    p.close()


def run_sink(floe, proxy, table, tmp_path, stream, interval=20, env=None, check=True):
    src = tmp_path / "in.ndjson"
    src.write_text(stream.text())
    import os
    full_env = dict(os.environ, **(env or {}))
    return floe("sink", "--table", table, "--schema", SCHEMA, "--key", "id", "--catalog",
                proxy.uri, "--commit-interval", str(interval), "--input", src, "--close",
                env=full_env, check=check)


def floe_snapshots(server, table):
    return [s for s in snapshots(server, table) if "floe.frontier" in s.get("summary", {})]


def assert_each_batch_once(server, table):
    fronts = [s["summary"]["floe.frontier"] for s in floe_snapshots(server, table)]
    assert len(fronts) == len(set(fronts)), f"a batch was committed twice: {fronts}"
    vals = [frontier_value(f) for f in fronts]
    assert vals == sorted(vals), vals


def test_a_lost_response_is_found_on_reload_not_repeated(floe, rest_server, proxy, tmp_path):
    table = f"{rest_server.namespace()}.orders"
    stream = Stream(31, steps=25)
    proxy.arm("lost-response", after=3)
    run_sink(floe, proxy, table, tmp_path, stream)
    assert proxy.fired == 1
    assert_each_batch_once(rest_server, table)
    snaps = check_rest_snapshots(rest_server, table, stream, "upsert")
    assert len(snaps) == proxy.commits, "every commit request landed once; none was repeated"


def test_a_conflict_after_a_concurrent_compaction_rechecks_and_retries(floe, rest_server, proxy,
                                                                      tmp_path):
    table = f"{rest_server.namespace()}.orders"
    stream = Stream(33, steps=25)

    def compaction():                   # another writer, straight to the server
        java_reader.replace_one_file(rest_server.uri, "", table)

    proxy.arm("conflict", after=4, concurrent=compaction)
    run_sink(floe, proxy, table, tmp_path, stream)
    assert proxy.fired == 1
    ops = [s["summary"]["operation"] for s in snapshots(rest_server, table)]
    assert ops.count("replace") == 1, ops
    assert_each_batch_once(rest_server, table)
    snaps = check_rest_snapshots(rest_server, table, stream, "upsert")
    assert len(snaps) == proxy.commits, "the refused commit made no snapshot; the " \
                                        "compaction made one"


def fence(server, table):
    """Commit a snapshot of a newer version of the same sink straight to the
    server: same data (the current manifest list), same frontier."""
    doc = server.load(table)
    md = doc["metadata"]
    cur = next(s for s in md["snapshots"] if s["snapshot-id"] == md["current-snapshot-id"])
    summary = dict(cur["summary"], **{"operation": "append", "floe.sink-version": "2"})
    sid = random.randrange(1, 2**62)
    ns, name = table.rsplit(".", 1)
    status, reply = server.request("POST", f"namespaces/{ns}/tables/{name}", {
        "identifier": {"namespace": [ns], "name": name},
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main",
                          "snapshot-id": cur["snapshot-id"]}],
        "updates": [
            {"action": "add-snapshot", "snapshot": {
                "snapshot-id": sid, "parent-snapshot-id": cur["snapshot-id"],
                "sequence-number": md["last-sequence-number"] + 1,
                "timestamp-ms": int(time.time() * 1000), "manifest-list": cur["manifest-list"],
                "summary": summary, "schema-id": md["current-schema-id"]}},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
             "snapshot-id": sid}]})
    assert status == 200, (status, reply)


def test_a_conflict_with_a_newer_sink_version_is_fenced(floe, rest_server, proxy, tmp_path):
    table = f"{rest_server.namespace()}.orders"
    stream = Stream(36, steps=25)
    proxy.arm("conflict", after=3, concurrent=lambda: fence(rest_server, table))
    res = run_sink(floe, proxy, table, tmp_path, stream, check=False)
    assert res.returncode != 0
    assert "fenced" in res.stderr and "version 2" in res.stderr, res.stderr
    snaps = floe_snapshots(rest_server, table)
    assert snaps[-1]["summary"]["floe.sink-version"] == "2"
    assert len(snaps) == 3, "two batches of version 1, then the fence; nothing after it"
    java = java_reader.read_rows(rest_server.uri, "", table)
    want = stream.expected(frontier_value(snaps[-1]["summary"]["floe.frontier"]), "upsert")
    assert sorted(java, key=repr) == want


def test_a_500_that_applied_nothing_is_retried(floe, rest_server, proxy, tmp_path):
    table = f"{rest_server.namespace()}.orders"
    stream = Stream(35, steps=25)
    proxy.arm("error500", after=2)
    run_sink(floe, proxy, table, tmp_path, stream)
    assert proxy.fired == 1
    assert_each_batch_once(rest_server, table)
    snaps = check_rest_snapshots(rest_server, table, stream, "upsert")
    assert len(snaps) == proxy.commits - 1


@pytest.mark.parametrize("mode", ["hang", "slow-response"])
def test_a_commit_past_the_timeout_is_reconciled(floe, rest_server, proxy, tmp_path, mode):
    """hang: the commit reaches the server only after floe gave up (floe's
    retry wins and the late one is refused, or the late one lands and the
    retry finds it); slow-response: it lands at once but the answer comes
    too late.  Either way each batch is in the table exactly once."""
    table = f"{rest_server.namespace()}.orders"
    stream = Stream(33, steps=25)
    proxy.arm(mode, after=3, hang_s=3.0)
    run_sink(floe, proxy, table, tmp_path, stream, env={"FLOE_CATALOG_TIMEOUT_MS": "1000"})
    assert proxy.fired == 1
    deadline = time.monotonic() + 10     # let the late commit arrive before looking
    while not proxy.late and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(proxy.late) == 1 and proxy.late[0] in (200, 409), proxy.late
    assert_each_batch_once(rest_server, table)
    snaps = check_rest_snapshots(rest_server, table, stream, "upsert")
    landed_late = proxy.late[0] == 200
    assert len(snaps) == proxy.commits - (0 if landed_late else 1)


def test_a_400_is_fatal_with_the_servers_message(floe, rest_server, proxy, tmp_path):
    table = f"{rest_server.namespace()}.orders"
    stream = Stream(34, steps=25)
    proxy.arm("bad-request", after=3)
    res = run_sink(floe, proxy, table, tmp_path, stream, check=False)
    assert res.returncode == 1
    assert "HTTP 400 Bad Request" in res.stderr, res.stderr
    assert "BadRequestException: injected: the request is malformed" in res.stderr, res.stderr
    assert proxy.commits == 3, "no retry after a refusal"
    snaps = floe_snapshots(rest_server, table)
    assert len(snaps) == 2, "two commits landed before the rejected third"
    last = frontier_value(snaps[-1]["summary"]["floe.frontier"])
    assert last < INF
    assert f"[{last}]" in res.stderr, "the message names the frontier the table stays at"
    java = java_reader.read_rows(rest_server.uri, "", table)
    assert sorted(java, key=repr) == stream.expected(last, "upsert")
    assert json.dumps(snaps[-1]["summary"])  # readable summary
