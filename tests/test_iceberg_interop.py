"""floe and pyiceberg writing to the same tables, and what `floe inspect` shows.

A table pyiceberg creates and appends to is loaded by floe, passes the
compatibility check, takes floe commits (pyiceberg's manifests carried
forward exactly), and pyiceberg then reads every row and appends on top of
floe's snapshot.  floe's manifest readers agree with fastavro on files
written by pyiceberg and by floe.
"""
import json

import fastavro
import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import DecimalType, LongType, NestedField, StringType, TimestamptzType

from iceberg_env import assert_all_read, env  # noqa: F401  (fixture)
from rowgen import Col

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True),
                NestedField(2, "name", StringType()),
                NestedField(3, "price", DecimalType(10, 2)),
                NestedField(4, "ts", TimestamptzType()))
COLS = [Col("id", "bigint"), Col("name", "text"), Col("price", "numeric", p=10, s=2),
        Col("ts", "timestamptz")]
DECL = "id bigint not null, name text, price numeric(10,2), ts timestamptz"


def avro(path):
    with open(path.removeprefix("file://"), "rb") as f:
        r = fastavro.reader(f)
        return r.metadata, list(r)


def pyiceberg_table(env):
    import datetime as dt
    import decimal
    cat = env.pyiceberg()
    cat.create_namespace("db")
    t = cat.create_table("db.py", schema=SCHEMA)
    t.append(pa.Table.from_pylist(
        [{"id": 1, "name": "py-a", "price": decimal.Decimal("1.25"),
          "ts": dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)},
         {"id": 2, "name": None, "price": None, "ts": None}],
        schema=t.schema().as_arrow()))
    return t


def test_floe_commits_to_a_pyiceberg_table(env):
    t = pyiceberg_table(env)
    py_list = avro(t.current_snapshot().manifest_list)[1]
    env.append("db.py", [{"id": 3, "name": "floe-own-schema", "price": "2.50"}])
    env.append("db.py", [{"id": 4, "name": "floe-declared", "ts": "2024-05-06 07:08:09.5+02:00"}],
               schema=DECL)
    want = [(1, "py-a", ("dec", 125), ("ts", 1704164645000000)), (2, None, None, None),
            (3, "floe-own-schema", ("dec", 250), None),
            (4, "floe-declared", None, ("ts", 1714972089500000))]
    assert_all_read(env, "db.py", COLS, want)
    # pyiceberg's manifest is carried forward exactly
    t = env.pyiceberg().load_table("db.py")
    meta, entries = avro(t.current_snapshot().manifest_list)
    assert meta["format-version"] == "2" and meta["avro.codec"] == "deflate"
    assert meta["parent-snapshot-id"] == str(t.current_snapshot().parent_snapshot_id)
    assert meta["sequence-number"] == str(t.current_snapshot().sequence_number) == "3"
    assert len(entries) == 3
    assert entries[2] == py_list[0]
    assert [e["sequence_number"] for e in entries] == [3, 2, 1]
    assert [e["added_rows_count"] for e in entries] == [1, 1, 2]
    # a floe manifest, as pyiceberg writes them
    mmeta, mentries = avro(entries[0]["manifest_path"])
    assert mmeta["content"] == "data" and mmeta["format-version"] == "2"
    assert json.loads(mmeta["schema"])["fields"][0] == {"id": 1, "name": "id", "required": True,
                                                       "type": "long"}
    assert mmeta["partition-spec"] == "[]" and mmeta["partition-spec-id"] == "0"
    assert mentries[0]["status"] == 1
    assert mentries[0]["snapshot_id"] == t.current_snapshot().snapshot_id
    assert mentries[0]["sequence_number"] is None and mentries[0]["file_sequence_number"] is None
    # pyiceberg appends on top of floe's snapshot, and reads everything
    t.append(pa.Table.from_pylist([{"id": 5, "name": "py-b", "price": None, "ts": None}],
                                  schema=t.schema().as_arrow()))
    want.append((5, "py-b", None, None))
    assert_all_read(env, "db.py", COLS, want)
    summaries = [s["summary"] for s in env.inspect("db.py")["snapshots"]]
    assert [s["total-records"] for s in summaries] == ["2", "3", "4", "5"]
    assert [s["total-data-files"] for s in summaries] == ["1", "2", "3", "4"]


def test_floe_reads_pyiceberg_and_its_own_manifests(env):
    t = pyiceberg_table(env)
    env.append("db.py", [{"id": 3, "name": "x"}])
    t = env.pyiceberg().load_table("db.py")
    lst = t.current_snapshot().manifest_list
    ours = json.loads(env.tool("read-manifest-list", lst).stdout)
    theirs = avro(lst)[1]
    assert len(ours) == len(theirs) == 2
    for o, e in zip(ours, theirs):
        assert o["partitions"] == len(e["partitions"])
        for k, v in o.items():
            if k != "partitions":
                assert v == e[k], k
        mine = json.loads(env.tool("read-manifest", e["manifest_path"]).stdout)
        ref = avro(e["manifest_path"])[1]
        assert len(mine) == len(ref) == 1
        m, r = mine[0], ref[0]
        d = r["data_file"]
        assert (m["status"], m["snapshot_id"], m["file_path"], m["record_count"], m["file_size"]) == \
            (r["status"], r["snapshot_id"], d["file_path"], d["record_count"], d["file_size_in_bytes"])
        assert m["split_offsets"] == (d["split_offsets"] or [])
        for kv in d["value_counts"]:
            assert m["columns"][str(kv["key"])]["value_count"] == kv["value"]
        for kv in d["lower_bounds"]:
            assert m["columns"][str(kv["key"])]["lower"] == kv["value"].hex()
        for kv in d["column_sizes"]:
            assert m["columns"][str(kv["key"])]["column_size"] == kv["value"]


def test_inspect_text_and_json(env):
    env.tool("create", "db.i", "id bigint not null")
    env.delta("db.i", {"insert": [{"id": 1}], "summary": {"floe.frontier": "[5]",
                                                         "floe.sink-id": "db.i",
                                                         "floe.sink-version": "2"}})
    env.delta("db.i", {"insert": [{"id": 2}]})
    info = env.inspect("db.i")
    s1, s2 = info["snapshots"]
    assert info["current_snapshot_id"] == s2["snapshot_id"]
    assert s2["parent_snapshot_id"] == s1["snapshot_id"] and s1["parent_snapshot_id"] is None
    assert (s1["sequence_number"], s2["sequence_number"]) == (1, 2)
    assert s1["operation"] == "append" and s1["summary"]["floe.sink-version"] == "2"
    assert s1["manifest_list"].startswith("file://") and s1["timestamp_ms"] > 1.6e12
    assert info["frontier"] == {"snapshot_id": s1["snapshot_id"], "frontier": "[5]",
                                "sink_id": "db.i", "sink_version": "2"}
    assert info["metadata_location"].endswith(".metadata.json")
    text = env.inspect("db.i", as_json=False)
    assert f"current   {s2['snapshot_id']} (main)" in text
    rows = [l.split() for l in text.splitlines() if l.strip().startswith(str(s1["snapshot_id"]))
            or l.strip().startswith(str(s2["snapshot_id"]))]
    assert [r[0] for r in rows] == [str(s1["snapshot_id"]), str(s2["snapshot_id"])]
    assert rows[0][2:8] == ["append", "1", "1", "0", "[5]", "db.i"] and rows[1][-1] == "main"
    assert "live rows: 2 (total-records 2" in text
    assert f"  db.i  frontier [5], version 2, snapshot {s1['snapshot_id']}" in text


def test_append_to_a_pyiceberg_partitioned_table(env):
    """floe append routes rows to one file per partition of a table pyiceberg
    made (identity and bucket), interleaved with pyiceberg's own appends:
    every reader sees every row, and pyiceberg prunes floe's files by their
    partition tuples.  (pyiceberg writes bucket and truncate partitions only
    with pyiceberg-core installed, which is not here: identity alone.)"""
    import pyarrow as pa
    from pyiceberg.expressions import EqualTo
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform
    cat = env.pyiceberg()
    cat.create_namespace("db")
    t = cat.create_table("db.part", schema=SCHEMA, partition_spec=PartitionSpec(
        PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="name")))
    env.append("db.part", [{"id": i, "name": "ab"[i % 2] if i % 3 else None} for i in range(12)])
    t.refresh()
    t.append(pa.Table.from_pylist([{"id": 100, "name": "a", "price": None, "ts": None}],
                                  schema=t.schema().as_arrow()))
    env.append("db.part", [{"id": 200, "name": "c"}])
    t.refresh()
    names = {i: ("ab"[i % 2] if i % 3 else None) for i in range(12)}
    names.update({100: "a", 200: "c"})
    got = sorted((r["id"], r["name"]) for r in t.scan().to_arrow().to_pylist())
    assert got == sorted(names.items())
    files = list(t.scan().plan_files())
    only_a = list(t.scan(row_filter=EqualTo("name", "a")).plan_files())
    assert 0 < len(only_a) < len(files)
    assert sorted(r["id"] for r in t.scan(row_filter=EqualTo("name", "a")).to_arrow().to_pylist()) \
        == sorted(i for i, n in names.items() if n == "a")
    con = __import__("iceberg_env")._duck()
    rows = con.execute("SELECT id, name FROM iceberg_scan(?)",
                       [env.metadata_location("db.part")]).fetchall()
    con.close()
    assert sorted(rows, key=repr) == sorted(names.items(), key=repr)
    info = env.inspect("db.part")
    assert info["live_rows"]["rows"] == len(names) and len(info["snapshots"]) == 3


def test_inspect_and_append_refuse_what_they_cannot_do(env):
    res = env.append("db.nope", [{"id": 1}], check=False)
    assert res.returncode == 1 and "does not exist" in res.stderr and "--schema" in res.stderr
    from conftest import run_floe
    res = run_floe("append", "--table", "db.x", "--schema", "id bigint", "--input", "/dev/null",
                   "--catalog", "mysql://127.0.0.1/catalog", check=False)
    assert res.returncode == 1 and "unknown catalog URI" in res.stderr
    res = run_floe("inspect", "--table", "nodot", *env.cat_args(), check=False)
    assert res.returncode == 1 and "NS.NAME" in res.stderr


@pytest.mark.parametrize("uri_form", ["sqlite:{db}", "sqlite:///{db}"])
def test_catalog_uri_forms(env, uri_form):
    env.uri = uri_form.format(db=env.db)
    env.append("db.u", [{"id": 1}], schema="id bigint not null")
    env.uri = f"sqlite:///{env.db}"
    assert_all_read(env, "db.u", [Col("id", "bigint")], [(1,)])


def test_default_catalog_and_warehouse(env):
    from conftest import run_floe
    (env.dir / "rows.ndjson").write_text('{"id": 1}\n{"id": 2}\n')
    run_floe("append", "--table", "db.d", "--schema", "id bigint not null", "--input",
             "rows.ndjson", cwd=env.dir)
    assert (env.dir / "warehouse/catalog.db").exists()
    assert len(list((env.dir / "warehouse/db/d/data").glob("*.parquet"))) == 1
    out = json.loads(run_floe("inspect", "--table", "db.d", "--json", cwd=env.dir).stdout)
    assert out["data_location"] == f"file://{env.dir}/warehouse/db/d/data"
    env.db = env.dir / "warehouse/catalog.db"
    env.uri = f"sqlite:///{env.db}"
    env.warehouse = f"file://{env.dir}/warehouse"
    assert_all_read(env, "db.d", [Col("id", "bigint")], [(1,), (2,)])


def test_append_schema_file_and_stdin(env):
    from conftest import run_floe
    (env.dir / "cols.txt").write_text("id bigint not null,\n  tags text[]\n")
    rows = "\n".join(json.dumps(r) for r in [{"id": 1, "tags": ["a"]}, {"id": 2}]) + "\n\n"
    res = run_floe("append", "--table", "db.stdin", "--schema", f"@{env.dir / 'cols.txt'}",
                   "--input", "-", *env.cat_args(), input=rows)
    assert "appended 2 rows in 1 files to db.stdin" in res.stderr
    assert_all_read(env, "db.stdin", [Col("id", "bigint"), Col("tags", "list", elem=Col("", "text"))],
                    [(1, ["a"]), (2, None)])
    res = run_floe("append", "--table", "db.stdin", "--input", "-", *env.cat_args(),
                   input='{"id": 3}\n{"id": 4, "tags": 5}\n', check=False)
    assert res.returncode == 1 and "<stdin>:2:" in res.stderr
    res = run_floe("append", "--table", "db.stdin", *env.cat_args(), check=False)
    assert res.returncode == 2 and "--input is required" in res.stderr
