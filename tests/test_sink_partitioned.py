"""`floe sink` into partitioned tables (SPEC.md sections 4 and 6).

The model streams of test_sink_model.py (every update draws a new row, so
keys move between partitions across batches and within one) are sunk into
tables partitioned on the columns updates change; every snapshot is read
by Java, DuckDB and pyiceberg and equals the model.  The manifests are
checked through pyiceberg: every data file holds one partition (its tuple
is pyiceberg's own transform of each of its rows), and every delete file
and deletion vector carries its data file's partition tuple and spec id.
A table pyiceberg creates with its own spec is written as it is, and
pyiceberg prunes by what floe wrote.  floe maintain compacts within
partitions.  A run killed with SIGKILL again and
again ends equal to the model.
"""
import datetime
import json
import random

import fastavro
import pyarrow.parquet as pq
import pytest

from conftest import floe_bin, maintain_auto
from iceberg_readers import duck, pyiceberg_catalog
from sinkmodel import Stream, kill_until_done, metadata_location
from test_sink_model import TABLE, check_snapshots, mode_of, sink_args
from test_sink_restart import check_final

pytest.importorskip("pyiceberg")
from pyiceberg import expressions as E  # noqa: E402

SPEC = "bucket(4, name), truncate(10, qty)"


def local(path):
    """A file: URI as a path (floe writes file://, Spark file:/)."""
    return path.removeprefix("file://").removeprefix("file:")


def data_rows(path):
    return pq.read_table(local(path)).to_pylist()


def days(v):
    """A manifest's date (the Avro date of day(), as fastavro gives it) as
    the transform's value: days from 1970-01-01."""
    return (v - datetime.date(1970, 1, 1)).days if isinstance(v, datetime.date) else v


def row_tuple(table, spec_id, row):
    """The partition tuple pyiceberg's own transforms give a row (by name)."""
    spec = table.specs()[spec_id]
    schema = table.schema()
    out = []
    for f in spec.fields:
        src = schema.find_field(f.source_id)
        v = f.transform.transform(src.field_type)(row[src.name])
        if isinstance(v, int) and str(src.field_type) == "int":
            # truncate near -2^31: Java's int arithmetic (and floe) wraps,
            # pyiceberg's unbounded ints do not
            v = (v + 2 ** 31) % 2 ** 32 - 2 ** 31
        out.append(v)
    return tuple(out)


def check_partitions(db, wh, table):
    """Over every file any snapshot lists live (manifests read as written,
    with fastavro; an entry of status DELETED may name a file that expiry
    already removed): a data file's rows all have its tuple, and each delete
    file / DV has referenced_data_file set, its data file's tuple and spec id.
    Returns ({data path: (spec id, tuple)}, {delete path: (spec id, tuple)})."""
    t = pyiceberg_catalog(db, wh).load_table(table)
    data, deletes, refs = {}, {}, {}
    for snap in t.snapshots():
        for m in snap.manifests(t.io):
            names = [f.name for f in t.specs()[m.partition_spec_id].fields]
            with open(local(m.manifest_path), "rb") as fh:
                for e in fastavro.reader(fh):
                    if e["status"] == 2:
                        continue
                    f = e["data_file"]
                    part = tuple(days(f["partition"][n]) for n in names)
                    kind = data if f["content"] == 0 else deletes
                    kind[f["file_path"]] = (m.partition_spec_id, part)
                    if f["content"] != 0:
                        assert f["content"] == 1, f"{f['file_path']}: content {f['content']}"
                        refs[f["file_path"]] = f.get("referenced_data_file")
    for path, (spec_id, part) in data.items():
        rows = data_rows(path)
        assert rows, path
        tuples = {row_tuple(t, spec_id, r) for r in rows}
        assert tuples == {part}, f"{path}: manifest tuple {part}, rows {tuples}"
    for path, (spec_id, part) in deletes.items():
        ref = refs[path]
        assert ref in data, f"delete {path} references {ref}"
        assert (spec_id, part) == data[ref], f"delete {path} is not in {ref}'s partition"
    return data, deletes


def rewrites_across_partitions(db, wh, table, data):
    """Sink snapshots (copy-on-write) whose rewrite removed data files of
    more than one partition: [(snapshot id, partitions)]."""
    t = pyiceberg_catalog(db, wh).load_table(table)
    by_id = {s.snapshot_id: s for s in t.snapshots()}

    def live(sid):
        return {task.file.file_path for task in t.scan(snapshot_id=sid).plan_files()}

    out = []
    for s in t.snapshots():
        props = s.summary.additional_properties
        if "floe.frontier" not in props or int(props.get("deleted-data-files", 0)) == 0:
            continue
        removed = live(by_id[s.parent_snapshot_id].snapshot_id) - live(s.snapshot_id)
        parts = {data[p][1] for p in removed}
        if len(parts) > 1:
            out.append((s.snapshot_id, parts))
    return out


@pytest.mark.parametrize("variant", ["upsert", "upsert-v3", "upsert-cow", "append"])
@pytest.mark.parametrize("seed", range(2))
def test_partitioned_model(floe, tmp_path, variant, seed):
    stream = Stream(seed + 300, steps=40, keys=30, as_of=[0, 10][seed], initial=[10, 25][seed],
                    burst=0.3)
    src = tmp_path / "changes.ndjson"
    src.write_text(stream.text())
    floe(*sink_args(tmp_path, variant, stream, [15, 25][seed], maintain="keep"),
         "--partition-by", SPEC, "--input", src)
    db, wh = f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh"
    check_snapshots(tmp_path, stream, variant)
    data, deletes = check_partitions(db, wh, TABLE)
    assert len({d[1] for d in data.values()}) > 4, "the rows span few partitions"
    if variant == "upsert-cow":
        # updates rewrite the files they delete from, several partitions'
        # in one commit, each into files of its own partition (checked above)
        assert rewrites_across_partitions(db, wh, TABLE, data)
    elif variant != "append":
        assert deletes, "no update deleted a row"
        # a key's old row is deleted in its old partition while its new row
        # is written elsewhere: some delete's partition differs from that of
        # a data file the same snapshot added
        assert len({d[1] for d in deletes.values()}) > 1


def test_partition_by_on_an_existing_table(floe, tmp_path):
    """--partition-by applies to a table the sink creates; the same spec
    again is fine; another on a rerun that commits nothing leaves the table
    as it is (a spec change lands with a snapshot: test_sink_repartition.py);
    equality mode writes it too (test_sink_partitioned_equality.py)."""
    stream = Stream(7, steps=10, keys=10)
    src = tmp_path / "changes.ndjson"
    src.write_text(stream.text())
    args = sink_args(tmp_path, "upsert", stream, 20, close=False)
    floe(*args, "--partition-by", SPEC, "--input", src)
    md = metadata_location(f"{tmp_path}/catalog.db", TABLE)
    assert md
    floe(*args, "--partition-by", SPEC, "--input", src)              # the same: fine
    floe(*args, "--partition-by", "bucket(8, name)", "--input", src)
    assert metadata_location(f"{tmp_path}/catalog.db", TABLE) == md
    floe(*args, "--delete-mode", "equality", "--input", src)
    assert metadata_location(f"{tmp_path}/catalog.db", TABLE) == md   # nothing new to commit


def test_pyiceberg_created_table(floe, tmp_path):
    """A table pyiceberg creates with identity and bucket fields (ids and
    names its own) is written by floe sink with that spec; readers see the
    model's rows, and a filter on a partition source column makes pyiceberg
    plan fewer files."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import BucketTransform, IdentityTransform
    from pyiceberg.types import IntegerType, LongType, NestedField, StringType
    db, wh = f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh"
    cat = pyiceberg_catalog(db, wh)
    cat.create_namespace("demo")
    schema = Schema(NestedField(1, "id", LongType(), required=True),
                    NestedField(2, "name", StringType(), required=False),
                    NestedField(3, "qty", IntegerType(), required=False))
    spec = PartitionSpec(PartitionField(3, 1000, IdentityTransform(), "qty"),
                         PartitionField(1, 1001, BucketTransform(8), "id_b8"), spec_id=0)
    cat.create_table("demo.py", schema=schema, partition_spec=spec,
                     properties={"format-version": "2"})
    rng = random.Random(5)
    live, lines, t = {}, [], 1
    for step in range(30):
        for _ in range(rng.randrange(1, 12)):
            k = rng.randrange(40)
            if k in live:
                lines.append({"time": t, "diff": -1, "row": live.pop(k)})
            if rng.random() < 0.8:
                live[k] = {"id": k, "name": rng.choice(["a", "b", None]), "qty": rng.randrange(6)}
                lines.append({"time": t, "diff": 1, "row": live[k]})
            t += rng.randrange(0, 3)
        lines.append({"progress": t + 1})
        t += 1
    src = tmp_path / "py.ndjson"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    floe("sink", "--table", "demo.py", "--key", "id", "--catalog", f"sqlite:{db}",
         "--warehouse", wh, "--commit-interval", "4", "--quiet", "--close", "--input", src,
         *maintain_auto(expire=False))
    want = sorted((r["id"], r["name"], r["qty"]) for r in live.values())
    tbl = pyiceberg_catalog(db, wh).load_table("demo.py")
    assert tbl.spec().spec_id == 0 and len(tbl.spec().fields) == 2
    got = sorted((r["id"], r["name"], r["qty"]) for r in tbl.scan().to_arrow().to_pylist())
    assert got == want
    con = duck()
    try:
        rows = con.execute("SELECT id, name, qty FROM iceberg_scan(?)",
                           [metadata_location(db, "demo.py")]).fetchall()
    finally:
        con.close()
    assert sorted(rows) == want, "DuckDB"
    data, deletes = check_partitions(db, wh, "demo.py")
    assert deletes
    files = list(tbl.scan().plan_files())
    some = want[0][2]
    planned = list(tbl.scan(row_filter=E.EqualTo("qty", some)).plan_files())
    assert 0 < len(planned) < len(files)
    got = sorted((r["id"], r["name"], r["qty"])
                 for r in tbl.scan(row_filter=E.EqualTo("qty", some)).to_arrow().to_pylist())
    assert got == [r for r in want if r[2] == some]


@pytest.mark.parametrize("variant", ["upsert", "upsert-v3"])
def test_compaction_per_partition(floe, tmp_path, variant):
    """floe maintain --compact-all on a partitioned table the sink wrote in
    many small batches: each group stays within one partition, so the table
    ends with one data file per partition, every file's tuple its rows',
    and the rows are still the model's (Java and DuckDB)."""
    stream = Stream(21, steps=40, keys=40, burst=0.3)
    db, wh = f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh"
    src = tmp_path / "changes.ndjson"
    src.write_text(stream.text())
    floe(*sink_args(tmp_path, variant, stream, 5), "--partition-by", SPEC, "--maintain", "off",
         "--input", src)
    n_before = len(list(pyiceberg_catalog(db, wh).load_table(TABLE).scan().plan_files()))
    r = floe("maintain", "--table", TABLE, "--catalog", f"sqlite:{db}", "--warehouse", wh,
             "--compact-all", "--json")
    assert json.loads(r.stdout)["report"]["compact_groups"] > 0, r.stdout
    files = list(pyiceberg_catalog(db, wh).load_table(TABLE).scan().plan_files())
    parts = {tuple(t.file.partition[i] for i in range(len(t.file.partition))) for t in files}
    assert len(files) == len(parts) < n_before, (len(files), len(parts), n_before)
    assert all(not t.delete_files for t in files)
    check_final(tmp_path, stream, mode_of(variant))
    check_partitions(db, wh, TABLE)


@pytest.mark.parametrize("variant,seed", [("upsert", 11), ("upsert-v3", 12)])
def test_sigkill_and_rerun_partitioned(tmp_path, variant, seed):
    """Killed with SIGKILL at random points and run again until done: the
    final table equals the model and every file keeps its partition."""
    r = random.Random(seed)
    stream = Stream(seed, steps=300, keys=60, burst=0.3)
    src = tmp_path / "changes.ndjson"
    src.write_text(stream.text())
    args = [floe_bin(), *sink_args(tmp_path, variant, stream, 8, maintain="all"),
            "--partition-by", SPEC, "--input", str(src)]
    kills = kill_until_done(args, r, 0.05, 0.6)
    print(f"seed {seed}: killed {kills} times")
    check_final(tmp_path, stream, mode_of(variant))
    check_partitions(f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh", TABLE)


def _ts_stream(seed, keys, steps, t0, live):
    """Upserts of keys 0..keys-1 as NDJSON lines from time t0, rows
    {id, name, ts} over five days (an update may move a row to another day
    and bucket); `live` (key -> row) is the model, updated in place.
    Returns (lines, next time)."""
    rng = random.Random(seed)
    lines, t = [], t0
    for _ in range(steps):
        for _ in range(rng.randrange(1, 10)):
            k = rng.randrange(keys)
            if k in live:
                lines.append({"time": t, "diff": -1, "row": live.pop(k)})
            if rng.random() < 0.85:
                day, hour = rng.randrange(1, 6), rng.randrange(24)
                live[k] = {"id": k, "name": rng.choice(["a", "b", None]),
                           "ts": f"2026-03-0{day}T{hour:02d}:30:00Z"}
                lines.append({"time": t, "diff": 1, "row": live[k]})
        t += 1
        lines.append({"progress": t})
    return "".join(json.dumps(x) + "\n" for x in lines), t


def test_spark_created_table_with_spark_writes_between_runs(floe, tmp_path):
    """A table Spark creates PARTITIONED BY (days(ts), bucket(16, id)):
    floe sink writes it with Spark's spec, Spark INSERTs and DELETEs rows of
    its own and compacts one day's partitions (rewrite_data_files with a
    filter) between two floe runs, and the second run goes on exactly:
    Spark, DuckDB and pyiceberg read floe's model plus Spark's rows left,
    and every file (Spark's too) holds one partition."""
    import spark_engine
    db, wh = f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh"
    s = spark_engine.on(db, wh)
    s.sql("CREATE NAMESPACE IF NOT EXISTS floe.demo").collect()
    s.sql("CREATE TABLE floe.demo.sp (id BIGINT NOT NULL, name STRING, ts TIMESTAMP) "
          "USING iceberg PARTITIONED BY (days(ts), bucket(16, id)) "
          "TBLPROPERTIES ('format-version' = '2')").collect()
    live = {}
    text, t = _ts_stream(3, 60, 25, 1, live)
    src = tmp_path / "a.ndjson"
    src.write_text(text)
    args = ["sink", "--table", "demo.sp", "--key", "id", "--catalog", f"sqlite:{db}",
            "--warehouse", wh, "--commit-interval", "3", "--quiet", *maintain_auto(expire=False)]
    floe(*args, "--input", src)
    s = spark_engine.on(db, wh)
    s.sql("INSERT INTO floe.demo.sp VALUES (1000, 'spark', TIMESTAMP '2026-03-02 10:00:00'), "
          "(1001, 'spark', TIMESTAMP '2026-03-04 11:00:00'), "
          "(1002, 'spark', TIMESTAMP '2026-03-02 12:00:00')").collect()
    s.sql("DELETE FROM floe.demo.sp WHERE id = 1001").collect()
    r = s.sql("CALL floe.system.rewrite_data_files(table => 'demo.sp', where => "
              "\"ts >= TIMESTAMP '2026-03-02 00:00:00' AND ts < TIMESTAMP '2026-03-03 00:00:00'\", "
              "options => map('rewrite-all', 'true'))").collect()[0]
    assert r.rewritten_data_files_count > 0, r
    tbl = pyiceberg_catalog(db, wh).load_table("demo.sp")
    snap = tbl.current_snapshot()
    added = [e.data_file.partition[0] for m in snap.manifests(tbl.io)
             if m.added_snapshot_id == snap.snapshot_id
             for e in m.fetch_manifest_entry(tbl.io) if e.status.name == "ADDED"]
    day = (datetime.date(2026, 3, 2) - datetime.date(1970, 1, 1)).days
    assert added and set(added) == {day}, (snap.summary, added)
    text, _ = _ts_stream(4, 60, 25, t, live)
    src = tmp_path / "b.ndjson"
    src.write_text(text)
    floe(*args, "--close", "--input", src)

    def canon(i, name, ts):
        if isinstance(ts, datetime.datetime):
            ts = ts.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return (i, name, ts)
    want = sorted([canon(r["id"], r["name"], r["ts"]) for r in live.values()] +
                  [(1000, "spark", "2026-03-02T10:00:00Z"), (1002, "spark", "2026-03-02T12:00:00Z")],
                  key=repr)
    s = spark_engine.on(db, wh)
    got = [canon(r.id, r.name, r.ts.replace(tzinfo=datetime.timezone.utc))
           for r in s.sql("SELECT id, name, ts FROM floe.demo.sp").collect()]
    assert sorted(got, key=repr) == want, "Spark"
    tbl = pyiceberg_catalog(db, wh).load_table("demo.sp")
    assert [str(f.transform) for f in tbl.spec().fields] == ["day", "bucket[16]"]
    got = [canon(r["id"], r["name"], r["ts"]) for r in tbl.scan().to_arrow().to_pylist()]
    assert sorted(got, key=repr) == want, "pyiceberg"
    con = duck()
    try:
        rows = con.execute("SELECT id, name, ts FROM iceberg_scan(?)",
                           [tbl.metadata_location]).fetchall()
    finally:
        con.close()
    assert sorted([canon(*r) for r in rows], key=repr) == want, "DuckDB"
    check_partitions(db, wh, "demo.sp")


def test_append_partitioned_by_the_update_time(floe, tmp_path):
    """Append mode partitions by its _timestamp column (the update's time, a
    long) with truncate; every snapshot equals the model for Java, DuckDB
    and pyiceberg and every file holds one partition.  hour() on it is
    refused with what to use instead."""
    stream = Stream(305, steps=30, keys=20)
    src = tmp_path / "changes.ndjson"
    src.write_text(stream.text())
    floe(*sink_args(tmp_path, "append", stream, 15), "--partition-by", "truncate(10, _timestamp)",
         "--input", src)
    check_snapshots(tmp_path, stream, "append")
    data, _ = check_partitions(f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh", TABLE)
    assert len({d[1] for d in data.values()}) > 2, data
    other = sink_args(tmp_path / "x", "append", stream, 15)
    (tmp_path / "x").mkdir()
    r = floe(*other, "--partition-by", "hour(_timestamp)", "--input", src, check=False)
    assert r.returncode != 0 and "truncate(W, col)" in r.stderr, r.stderr
