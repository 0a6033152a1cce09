"""Equality mode (`--delete-mode equality`) on partitioned tables (SPEC.md
section 6).

A key's rows all live in one partition when every partition source column
is a key column: then each equality delete file holds one partition's keys
and carries that partition's tuple, so readers apply it to that
partition's files only.  Otherwise a key's old row may be in any
partition, and the deletes are global: they go in an unpartitioned spec
(the sink's commit adds one to a table that has none), which applies to
every data file.  The same when the table has live data files of another
spec (after a partition evolution): a tuple would miss them.  Every
snapshot of the model streams, read by Java and DuckDB, equals the model
(pyiceberg does not read equality deletes).
"""
import fastavro
import pytest

from sinkmodel import Stream
from test_sink_model import TABLE, check_snapshots, sink_args
from test_sink_partitioned import data_rows, local
from test_sink_repartition import with_respecs

pytest.importorskip("pyiceberg")
from pyiceberg.transforms import BucketTransform  # noqa: E402
from pyiceberg.types import LongType  # noqa: E402

from iceberg_readers import pyiceberg_catalog  # noqa: E402

VARIANT = "upsert-equality"


def equality_deletes(tmp_path):
    """Every equality delete file any snapshot lists live:
    {path: (spec id, partition tuple as a dict)}."""
    t = pyiceberg_catalog(f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh").load_table(TABLE)
    out = {}
    for snap in t.snapshots():
        for m in snap.manifests(t.io):
            with open(local(m.manifest_path), "rb") as fh:
                for e in fastavro.reader(fh):
                    f = e["data_file"]
                    if e["status"] != 2 and f["content"] == 2:
                        out[f["file_path"]] = (m.partition_spec_id, f["partition"])
    return t, out


def run(floe, tmp_path, stream, text, spec=None):
    src = tmp_path / "changes.ndjson"
    src.write_text(text)
    extra = ["--partition-by", spec] if spec else []
    floe(*sink_args(tmp_path, VARIANT, stream, 15, maintain="keep"), *extra, "--input", src)
    check_snapshots(tmp_path, stream, VARIANT)
    return equality_deletes(tmp_path)


def test_a_key_covering_spec_scopes_each_delete_to_its_partition(floe, tmp_path):
    stream = Stream(300, steps=40, keys=30, burst=0.3)
    t, eq = run(floe, tmp_path, stream, stream.text(), "bucket(4, id)")
    assert eq, "no equality delete written"
    assert set(t.specs()) == {0}, "a global spec was added"
    bucket = BucketTransform(4).transform(LongType())
    for path, (spec_id, part) in eq.items():
        assert spec_id == 0 and part["id_bucket"] is not None, (path, spec_id, part)
        ids = {r["id"] for r in data_rows(path)}
        assert ids and {bucket(i) for i in ids} == {part["id_bucket"]}, (path, part, ids)
    assert len({p["id_bucket"] for _, p in eq.values()}) > 1


def test_a_spec_on_other_columns_makes_the_deletes_global(floe, tmp_path):
    stream = Stream(301, steps=40, keys=30, burst=0.3)
    t, eq = run(floe, tmp_path, stream, stream.text(), "bucket(4, name), truncate(10, qty)")
    assert eq, "no equality delete written"
    specs = t.specs()
    assert t.spec().spec_id == 0 and specs[0].fields, "the default spec changed"
    assert set(specs) == {0, 1} and not specs[1].fields, specs
    assert {s for s, _ in eq.values()} == {1}, eq


def test_after_an_evolution_deletes_are_global(floe, tmp_path):
    """Unpartitioned, then bucket(4, id), then bucket(8, id): the table keeps
    live files of the earlier specs, so even key-covered deletes go in the
    unpartitioned spec the table already has (no spec added for them)."""
    stream = Stream(302, steps=45, keys=30, burst=0.3)
    t, eq = run(floe, tmp_path, stream, with_respecs(stream, ["bucket(4, id)", "bucket(8, id)"]))
    specs = t.specs()
    assert set(specs) == {0, 1, 2} and not specs[0].fields and t.spec().spec_id == 2, specs
    assert eq and {s for s, _ in eq.values()} == {0}, eq
