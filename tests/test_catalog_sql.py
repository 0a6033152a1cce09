"""floe's SQLite catalog against pyiceberg's SqlCatalog on the same database.

floe is driven through build/tests/test_catalog_tool (FLOE_BUILD picks the
build directory, default "build").  pyiceberg is the independent reader and
writer: what floe creates, pyiceberg must list, load and write to; what
pyiceberg creates, floe must load and commit to, and pyiceberg must still
read it afterwards.  Two floe processes race commits on one table.
"""
import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / os.environ.get("FLOE_BUILD", "build") / "tests" / "test_catalog_tool"
CATALOG = "floe"

RICH_SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "identifier-field-ids": [1],
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "name", "required": False, "type": "string"},
        {"id": 3, "name": "price", "required": False, "type": "decimal(12, 2)"},
        {"id": 4, "name": "ts", "required": False, "type": "timestamptz"},
        {"id": 5, "name": "tags", "required": False,
         "type": {"type": "list", "element-id": 8, "element": "string", "element-required": False}},
        {"id": 6, "name": "attrs", "required": False,
         "type": {"type": "map", "key-id": 9, "key": "string", "value-id": 10,
                  "value": {"type": "struct", "fields": [
                      {"id": 11, "name": "v", "required": False, "type": "int"}]},
                  "value-required": False}},
        {"id": 7, "name": "addr", "required": False,
         "type": {"type": "struct", "fields": [
             {"id": 12, "name": "zip", "required": True, "type": "int"}]}},
    ],
}

SIMPLE_SCHEMA = {
    "type": "struct",
    "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "s", "required": False, "type": "string"},
    ],
}


class Env:
    def __init__(self, tmp: Path):
        self.dir = tmp
        self.db = tmp / "catalog.db"
        self.warehouse = f"file://{tmp}/warehouse"
        # the SQLAlchemy form pyiceberg uses; floe must accept it too
        self.uri = f"sqlite:///{self.db}"

    def floe(self, *args, check=True):
        if not TOOL.exists():
            pytest.fail(f"{TOOL} is not built (make {TOOL.relative_to(ROOT)})")
        p = subprocess.run([str(TOOL), self.uri, CATALOG, self.warehouse, *args],
                           capture_output=True, text=True, timeout=300)
        if check and p.returncode != 0:
            raise AssertionError(f"floe {args[0]} failed ({p.returncode}): {p.stderr}")
        return p

    def floe_json(self, *args):
        return json.loads(self.floe(*args).stdout)

    def pyiceberg(self):
        return SqlCatalog(CATALOG, uri=self.uri, warehouse=self.warehouse)

    def rows(self, sql):
        con = sqlite3.connect(self.db)
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()


@pytest.fixture
def env(tmp_path):
    return Env(tmp_path)


def arrow_simple(ids, strs):
    return pa.table({"id": pa.array(ids, pa.int64()), "s": pa.array(strs, pa.string())},
                    schema=pa.schema([pa.field("id", pa.int64(), nullable=False),
                                      pa.field("s", pa.string())]))


def test_floe_creates_pyiceberg_reads(env):
    env.floe("create-namespace", "ns", json.dumps({"owner": "floe"}))
    env.floe("create-namespace", "ns.sub")
    props = {"write.format.default": "parquet", "floe.test": "1"}
    made = env.floe_json("create-table", "ns", "t", json.dumps(RICH_SCHEMA), json.dumps(props))
    assert made["location"] == f"{env.warehouse}/ns/t"
    assert made["metadata_location"].startswith(f"{env.warehouse}/ns/t/metadata/00000-")
    assert made["last_column_id"] == 12

    # the rows pyiceberg and JdbcCatalog (V1 schema) expect
    assert env.rows("SELECT catalog_name, table_namespace, table_name, metadata_location,"
                    " previous_metadata_location, iceberg_type FROM iceberg_tables") == [
        (CATALOG, "ns", "t", made["metadata_location"], None, "TABLE")]
    cols = [r[1] for r in env.rows("PRAGMA table_info(iceberg_tables)")]
    assert cols == ["catalog_name", "table_namespace", "table_name", "metadata_location",
                    "previous_metadata_location", "iceberg_type"]
    assert sorted(env.rows("SELECT namespace, property_key, property_value"
                           " FROM iceberg_namespace_properties")) == [
        ("ns", "exists", "true"), ("ns", "owner", "floe"), ("ns.sub", "exists", "true")]

    cat = env.pyiceberg()
    assert cat.list_namespaces() == [("ns",)]
    assert cat.list_namespaces("ns") == [("ns", "sub")]
    assert cat.load_namespace_properties("ns") == {"owner": "floe", "exists": "true"}
    assert cat.list_tables("ns") == [("ns", "t")]
    t = cat.load_table("ns.t")
    assert t.metadata_location == made["metadata_location"]
    assert str(t.metadata.table_uuid) == made["table_uuid"]
    assert t.format_version == 2
    assert t.location() == f"{env.warehouse}/ns/t"
    assert t.properties == props
    got = json.loads(t.schema().model_dump_json())
    assert got["fields"] == RICH_SCHEMA["fields"]
    assert got["identifier-field-ids"] == [1]
    assert t.metadata.last_column_id == 12
    assert t.spec().is_unpartitioned() and t.sort_order().is_unsorted
    assert t.current_snapshot() is None

    # floe's listings agree
    assert env.floe_json("list-namespaces") == ["ns"]
    assert env.floe_json("list-namespaces", "ns") == ["ns.sub"]
    assert env.floe_json("list-tables", "ns") == ["t"]


def test_pyiceberg_writes_to_floe_table(env):
    env.floe("create-namespace", "ns")
    env.floe("create-table", "ns", "t", json.dumps(SIMPLE_SCHEMA))
    cat = env.pyiceberg()
    t = cat.load_table("ns.t")
    t.append(arrow_simple([1, 2], ["a", None]))
    t = cat.load_table("ns.t")
    assert t.scan().to_arrow().sort_by("id").to_pylist() == [
        {"id": 1, "s": "a"}, {"id": 2, "s": None}]
    # floe reads back what pyiceberg committed on top of floe's metadata
    d = env.floe_json("load", "ns", "t")
    assert len(d["snapshots"]) == 1
    assert d["current_snapshot_id"] == t.current_snapshot().snapshot_id
    assert d["metadata_log"][0]["metadata_file"].split("/")[-1].startswith("00000-")


def test_pyiceberg_creates_floe_commits(env):
    cat = env.pyiceberg()
    cat.create_namespace("db")
    t = cat.create_table("db.events", schema=arrow_simple([], []).schema,
                         properties={"keep": "me"})
    t.append(arrow_simple([1, 2], ["x", "y"]))
    t = cat.load_table("db.events")
    t.append(arrow_simple([3], ["z"]))
    t = cat.load_table("db.events")
    before = t.metadata_location

    d = env.floe_json("load", "db", "events")
    assert d["metadata_location"] == before
    assert d["table_uuid"] == str(t.metadata.table_uuid)
    assert d["last_sequence_number"] == 2
    assert d["current_snapshot_id"] == t.current_snapshot().snapshot_id
    assert d["data_location"] == f"{env.warehouse}/db/events/data"
    theirs = t.metadata.snapshots
    assert [s["snapshot_id"] for s in d["snapshots"]] == [s.snapshot_id for s in theirs]
    assert [s["sequence_number"] for s in d["snapshots"]] == [1, 2]
    assert d["snapshots"][0]["parent_snapshot_id"] is None
    assert d["snapshots"][1]["parent_snapshot_id"] == theirs[0].snapshot_id
    assert [s["operation"] for s in d["snapshots"]] == ["append", "append"]
    assert d["snapshots"][1]["summary"]["total-records"] == "3"
    assert [s["manifest_list"] for s in d["snapshots"]] == [s.manifest_list for s in theirs]
    assert [e["snapshot_id"] for e in d["snapshot_log"]] == [s.snapshot_id for s in theirs]
    assert len(d["metadata_log"]) == 2

    # a property commit by floe
    after = env.floe_json("set-props", "db", "events", json.dumps({"floe.sink-id": "s1"}))
    assert after["metadata_location"].split("/")[-1].startswith("00003-")
    assert env.rows("SELECT metadata_location, previous_metadata_location FROM iceberg_tables") \
        == [(after["metadata_location"], before)]
    t = cat.load_table("db.events")
    assert t.metadata_location == after["metadata_location"]
    assert t.properties == {"keep": "me", "floe.sink-id": "s1"}
    assert t.metadata.metadata_log[-1].metadata_file == before
    assert len(t.metadata.metadata_log) == 3
    assert t.current_snapshot().snapshot_id == theirs[1].snapshot_id
    assert t.scan().to_arrow().num_rows == 3

    # a snapshot commit by floe (same manifests, floe's summary properties)
    summary = {"operation": "append", "floe.frontier": "[5]", "floe.sink-id": "s1",
               "floe.sink-version": "1"}
    snap = env.floe_json("add-snapshot", "db", "events", "77", theirs[1].manifest_list,
                         json.dumps(summary))
    assert snap["current_snapshot_id"] == 77
    t = cat.load_table("db.events")
    cur = t.current_snapshot()
    assert cur.snapshot_id == 77
    assert cur.parent_snapshot_id == theirs[1].snapshot_id
    assert cur.sequence_number == 3
    assert cur.summary["floe.frontier"] == "[5]"
    assert cur.summary.operation.value == "append"
    assert t.metadata.last_sequence_number == 3
    assert t.metadata.snapshot_log[-1].snapshot_id == 77
    assert t.metadata.refs["main"].snapshot_id == 77
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]

    # pyiceberg keeps writing on top of floe's commits, floe follows
    t.append(arrow_simple([4], ["w"]))
    d = env.floe_json("load", "db", "events")
    assert [s["sequence_number"] for s in d["snapshots"]] == [1, 2, 3, 4]
    assert d["snapshots"][3]["parent_snapshot_id"] == 77
    assert cat.load_table("db.events").scan().to_arrow().num_rows == 4


def test_errors_are_reported_with_codes(env):
    env.floe("create-namespace", "ns")
    p = env.floe("load", "ns", "missing", check=False)
    assert p.returncode == 9 and "FLOE_ENOTFOUND" in p.stderr
    p = env.floe("create-table", "nons", "t", json.dumps(SIMPLE_SCHEMA), check=False)
    assert p.returncode == 9 and "namespace nons does not exist" in p.stderr
    env.floe("create-table", "ns", "t", json.dumps(SIMPLE_SCHEMA))
    p = env.floe("create-table", "ns", "t", json.dumps(SIMPLE_SCHEMA), check=False)
    assert p.returncode == 10 and "already exists" in p.stderr
    p = env.floe("create-namespace", "ns", check=False)
    assert p.returncode == 10
    req = [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 5}]
    ups = [{"action": "set-properties", "updates": {"a": "b"}}]
    p = env.floe("commit", "ns", "t", json.dumps(req), json.dumps(ups), check=False)
    assert p.returncode == 12 and "branch or tag main is missing" in p.stderr
    files = list((env.dir / "warehouse" / "ns" / "t" / "metadata").iterdir())
    assert len(files) == 1          # a failed requirement writes nothing
    env.floe("drop", "ns", "t")
    assert env.floe_json("list-tables", "ns") == []
    assert env.pyiceberg().list_tables("ns") == []


def test_v0_catalog_database(env):
    # a database made by an older JdbcCatalog/pyiceberg: no iceberg_type column
    con = sqlite3.connect(env.db)
    con.execute("CREATE TABLE iceberg_tables(catalog_name VARCHAR(255) NOT NULL,"
                "table_namespace VARCHAR(255) NOT NULL,table_name VARCHAR(255) NOT NULL,"
                "metadata_location VARCHAR(1000),previous_metadata_location VARCHAR(1000),"
                "PRIMARY KEY (catalog_name, table_namespace, table_name))")
    con.execute("CREATE TABLE iceberg_namespace_properties(catalog_name VARCHAR(255) NOT NULL,"
                "namespace VARCHAR(255) NOT NULL,property_key VARCHAR(255),"
                "property_value VARCHAR(1000),"
                "PRIMARY KEY (catalog_name, namespace, property_key))")
    con.commit()
    con.close()
    env.floe("create-namespace", "ns")
    env.floe("create-table", "ns", "t", json.dumps(SIMPLE_SCHEMA))
    env.floe("set-props", "ns", "t", json.dumps({"x": "1"}))
    cols = [r[1] for r in env.rows("PRAGMA table_info(iceberg_tables)")]
    assert "iceberg_type" not in cols            # never migrated behind the user's back
    t = env.pyiceberg().load_table("ns.t")
    assert t.properties == {"x": "1"}


def race(env, args_for):
    procs = [subprocess.Popen([str(TOOL), env.uri, CATALOG, env.warehouse, *args_for(w)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, errtext) in zip(procs, outs):
        assert p.returncode == 0, errtext
        assert errtext == ""                      # no "database is locked", no retries shown
    return [[json.loads(line) for line in out.splitlines()] for out, _ in outs]


def chain(d):
    """The main branch from the current snapshot back to the first."""
    by_id = {s["snapshot_id"]: s for s in d["snapshots"]}
    out, cur = [], d["current_snapshot_id"]
    while cur is not None:
        out.append(by_id[cur])
        cur = by_id[cur]["parent_snapshot_id"]
    return out[::-1]


def test_two_processes_race_in_lock_step(env):
    env.floe("create-namespace", "ns")
    env.floe("create-table", "ns", "t", json.dumps(SIMPLE_SCHEMA))
    rounds = 30
    sync = env.dir / "sync"
    sync.mkdir()
    w0, w1 = race(env, lambda w: ["race", "ns", "t", str(rounds), str(w), str(sync)])
    assert len(w0) == len(w1) == rounds
    winners = []
    for a, b in zip(w0, w1):
        assert {a["result"], b["result"]} == {"won", "conflict"}, (a, b)
        loser = a if a["result"] == "conflict" else b
        # the CAS lost, or the requirement failed on the peer's new state
        # ("main ... has changed", or "was created concurrently" in round 0)
        assert ("concurrent" in loser["message"] or "has changed" in loser["message"]), loser
        winners.append(0 if a["result"] == "won" else 1)

    d = env.floe_json("load", "ns", "t")
    snaps = chain(d)
    assert len(snaps) == len(d["snapshots"]) == rounds            # nothing lost, nothing extra
    assert [s["summary"]["counter"] for s in snaps] == [str(i + 1) for i in range(rounds)]
    assert [s["snapshot_id"] for s in snaps] == [1000 * (r + 1) + w for r, w in enumerate(winners)]
    assert [s["sequence_number"] for s in snaps] == list(range(1, rounds + 1))
    # the losers' metadata files were removed: one file per version
    files = sorted(p.name for p in (env.dir / "warehouse/ns/t/metadata").iterdir())
    assert len(files) == rounds + 1
    assert [f[:5] for f in files] == [f"{i:05d}" for i in range(rounds + 1)]
    t = env.pyiceberg().load_table("ns.t")
    assert [s.snapshot_id for s in t.snapshots()] == [s["snapshot_id"] for s in snaps]


def test_two_processes_free_running_commits(env):
    env.floe("create-namespace", "ns")
    env.floe("create-table", "ns", "t", json.dumps(SIMPLE_SCHEMA))
    n = 30
    r0, r1 = race(env, lambda w: ["increment", "ns", "t", str(n), str(w + 1)])
    assert r0[0]["commits"] == r1[0]["commits"] == n
    d = env.floe_json("load", "ns", "t")
    snaps = chain(d)
    assert len(snaps) == len(d["snapshots"]) == 2 * n
    assert [s["summary"]["counter"] for s in snaps] == [str(i + 1) for i in range(2 * n)]
    assert sorted(s["summary"]["worker"] for s in snaps) == ["1"] * n + ["2"] * n
    assert len(d["metadata_log"]) == 2 * n
    assert env.pyiceberg().load_table("ns.t").current_snapshot().summary["counter"] == str(2 * n)
