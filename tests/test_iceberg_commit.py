"""The commit path under contention and failure: two committers racing
through floe__table_commit (one wins each round, the other gets a conflict
and no snapshot is lost), stale bases, and what is left on disk when a
commit or an append fails (nothing visible, no orphan manifests).
"""
import glob
import json
import os
import subprocess

import fastavro

from conftest import tool_bin
from iceberg_env import CATALOG, assert_all_read, env  # noqa: F401  (fixture)
from rowgen import Col

RACE_DECL = "id bigint not null, worker integer not null, round integer not null"
RACE_COLS = [Col("id", "bigint"), Col("worker", "integer"), Col("round", "integer")]


def run_pair(env, args_for):
    exe = tool_bin("test_iceberg_tool")
    procs = [subprocess.Popen([exe, env.uri, CATALOG, env.warehouse, *map(str, args_for(w))],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in range(2)]
    outs = [p.communicate(timeout=900) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert err == "", err
    return [[json.loads(line) for line in out.splitlines()] for out, _ in outs]


def chain(info):
    by_id = {s["snapshot_id"]: s for s in info["snapshots"]}
    out, cur = [], info["current_snapshot_id"]
    while cur is not None:
        out.append(by_id[cur])
        cur = by_id[cur]["parent_snapshot_id"]
    return out[::-1]


def local(uri):
    return uri.removeprefix("file://")


def referenced_files(env, table):
    """(manifest lists, manifests, data and delete files) the table references."""
    md = env.metadata(table)
    lists = {local(s["manifest-list"]) for s in md["snapshots"]}
    manifests, files = set(), set()
    for lst in lists:
        with open(lst, "rb") as f:
            for m in fastavro.reader(f):
                manifests.add(local(m["manifest_path"]))
    for m in manifests:
        with open(m, "rb") as f:
            for e in fastavro.reader(f):
                files.add(local(e["data_file"]["file_path"]))
    return lists, manifests, files


def assert_no_orphans(env, table):
    root = env.dir / "warehouse" / table.replace(".", "/")
    lists, manifests, files = referenced_files(env, table)
    on_disk = set(glob.glob(str(root / "metadata" / "*.avro")))
    assert on_disk == lists | manifests, on_disk ^ (lists | manifests)
    assert set(glob.glob(str(root / "data" / "*"))) == files


def test_two_committers_in_lock_step(env):
    env.tool("create", "db.race", RACE_DECL)
    rounds = 15
    sync = env.dir / "sync"
    sync.mkdir()
    w0, w1 = run_pair(env, lambda w: ["race", "db.race", rounds, w, sync])
    assert len(w0) == len(w1) == rounds
    for a, b in zip(w0, w1):
        assert sorted([a["result"], b["result"]]) == ["conflict", "won"], (a, b)
        loser = a if a["result"] == "conflict" else b
        assert loser["retry"] == "FLOE_OK", loser
        msg = loser["message"]
        assert "main" in msg or "concurrent commit" in msg, loser
        assert any(w in msg for w in ("has changed", "created concurrently", "concurrent commit"))
    info = env.inspect("db.race")
    snaps = chain(info)
    assert len(snaps) == len(info["snapshots"]) == 2 * rounds       # nothing lost, no extra
    assert [s["sequence_number"] for s in snaps] == list(range(1, 2 * rounds + 1))
    assert [s["summary"]["total-records"] for s in snaps] == [str(i) for i in range(1, 2 * rounds + 1)]
    want = [(1000 * r + w, w, r) for r in range(rounds) for w in range(2)]
    assert_all_read(env, "db.race", RACE_COLS, want)
    assert_no_orphans(env, "db.race")          # the losers' manifests and lists were removed


def test_two_committers_free_running(env):
    env.tool("create", "db.inc", RACE_DECL)
    n = 20
    r0, r1 = run_pair(env, lambda w: ["increment", "db.inc", n, w + 1])
    assert r0[0]["commits"] == r1[0]["commits"] == n
    print("conflicts:", r0[0]["conflicts"], r1[0]["conflicts"])
    info = env.inspect("db.inc")
    snaps = chain(info)
    assert len(snaps) == len(info["snapshots"]) == 2 * n
    assert sorted(s["summary"]["worker"] for s in snaps) == ["1"] * n + ["2"] * n
    want = [(1000000 * w + i, w, i) for w in (1, 2) for i in range(n)]
    assert_all_read(env, "db.inc", RACE_COLS, want)
    assert_no_orphans(env, "db.inc")


def test_stale_base_is_a_conflict(env):
    kv = [Col("id", "bigint")]
    env.tool("create", "db.s", "id bigint not null")
    first = env.delta("db.s", {"insert": [{"id": 1}]})
    env.delta("db.s", {"insert": [{"id": 2}]})
    before = sorted(os.listdir(env.dir / "warehouse/db/s/metadata"))
    for base in (first["snapshot_id"], None, 12345):
        out = env.delta("db.s", {"insert": [{"id": 3}], "base": base}, check=False)
        assert out["result"] == "FLOE_ECONFLICT", out
        assert "main is at snapshot" in out["message"]
    assert sorted(os.listdir(env.dir / "warehouse/db/s/metadata")) == before
    assert_all_read(env, "db.s", kv, [(1,), (2,)])
    assert_no_orphans(env, "db.s")


def test_reserved_summary_keys_are_refused(env):
    env.tool("create", "db.r", "id bigint not null")
    for key in ("operation", "total-records", "added-data-files"):
        out = env.delta("db.r", {"insert": [{"id": 1}], "summary": {key: "1"}}, check=False)
        assert out["result"] == "FLOE_EINVAL" and "computed by floe" in out["message"]
    assert env.inspect("db.r")["snapshots"] == []
    assert_no_orphans(env, "db.r")


def test_bad_input_commits_nothing(env):
    env.append("db.b", [{"id": 1, "s": "x"}], schema="id bigint not null, s text")
    rows = [{"id": 2, "s": "ok"}, {"id": 3}, {"id": "three"}, {"id": 4}]
    res = env.append("db.b", rows, check=False, extra=["--target-file-size", "1"])
    assert res.returncode == 1
    assert ".ndjson:3:" in res.stderr and '"id"' in res.stderr, res.stderr
    res = env.append("db.b", [{"id": 5, "t": 1}], check=False)
    assert res.returncode == 1 and ".ndjson:1:" in res.stderr and "t" in res.stderr
    res = env.append("db.b", [{"s": "no id"}], check=False)
    assert res.returncode == 1 and "not-null" in res.stderr.replace("not null", "not-null")
    assert len(env.inspect("db.b")["snapshots"]) == 1
    assert_no_orphans(env, "db.b")             # the rolled files of the failed run are gone
    assert_all_read(env, "db.b", [Col("id", "bigint"), Col("s", "text")], [(1, "x")])


def test_empty_input_commits_nothing(env):
    res = env.append("db.e", [], schema="id bigint not null")
    assert "nothing committed" in res.stderr
    assert env.inspect("db.e")["snapshots"] == []
