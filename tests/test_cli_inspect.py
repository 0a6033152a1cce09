"""`floe inspect` on tables written by `floe sink`: the header, one line per
snapshot (the newest --limit), the schema, the live row count and where each
sink id stands, as text and as JSON with numbers as numbers; it never
creates anything."""
import datetime as dt
import json
import os
import re

import pytest

from iceberg_readers import pyiceberg_catalog
from sinkmodel import INF, Stream, metadata_location, table_snapshots
from test_cli_sink import TABLE, db_of, sink_args


def inspect(floe, tmp_path, *extra):
    return floe("inspect", "--table", TABLE, "--catalog", f"sqlite:{db_of(tmp_path)}",
                "--warehouse", f"{tmp_path}/wh", *extra)


def inspect_json(floe, tmp_path, *extra):
    return json.loads(inspect(floe, tmp_path, "--json", *extra).stdout)


@pytest.fixture(scope="module")
def upsert_table(tmp_path_factory):
    """An upsert table in equality mode (equality deletes: the live count is
    an upper bound)."""
    from conftest import run_floe
    tmp = tmp_path_factory.mktemp("upsert")
    stream = Stream(81, steps=60)
    src = tmp / "in.ndjson"
    src.write_text(stream.text())
    run_floe(*sink_args(tmp, "upsert-equality", stream, 20), "--input", src)
    return tmp, stream


@pytest.fixture(scope="module")
def append_table(tmp_path_factory):
    from conftest import run_floe
    tmp = tmp_path_factory.mktemp("append")
    stream = Stream(82, steps=40)
    src = tmp / "in.ndjson"
    src.write_text(stream.text())
    run_floe(*sink_args(tmp, "append", stream, 20), "--input", src)
    return tmp, stream


def snapshot_lines(text):
    rows = [line for line in text.splitlines() if re.match(r"^  -?\d{6,} ", line)]
    return [line.split() for line in rows]


def test_text_header_snapshots_schema_live_rows_and_sinks(floe, upsert_table):
    tmp, stream = upsert_table
    snaps = table_snapshots(db_of(tmp), TABLE)
    assert len(snaps) > 5
    text = inspect(floe, tmp, "--limit", "5").stdout
    lines = text.splitlines()
    assert lines[0] == f"table     {TABLE}"
    assert lines[1] == f"metadata  {metadata_location(db_of(tmp), TABLE)}"
    assert lines[2] == f"data      file://{tmp}/wh/demo/orders/data"
    current = snaps[-1]
    assert lines[3] == f"current   {current['snapshot-id']} (main)"
    assert (f"snapshots: the newest 5 of {len(snaps)} ({len(snaps) - 5} older left out; "
            "--limit 0 shows all)") in text
    rows = snapshot_lines(text)
    assert [int(r[0]) for r in rows] == [s["snapshot-id"] for s in snaps[-5:]]
    for row, s in zip(rows, snaps[-5:]):
        summ = s["summary"]
        when = dt.datetime.fromtimestamp(s["timestamp-ms"] // 1000, dt.timezone.utc)
        assert row[1] == when.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert row[2] == summ["operation"]
        assert row[3:6] == [summ.get("added-data-files", "0"), summ.get("added-records", "0"),
                            summ.get("added-delete-files", "0")]
        assert row[6] == summ["floe.frontier"] and row[7:9] == [TABLE, "v1"]
    assert rows[-1][9:] == ["main,", f"floe-{TABLE}"]
    assert all(len(r) == 9 for r in rows[:-1]), "only the current one carries refs"
    assert "schema: 6 columns (schema id 0)" in text
    for col in ("   1  id     long not null", "   2  name   string", "   4  price  decimal(10,2)",
                "   5  tags   list<string>", "   7  at     timestamptz"):
        assert col in text, col
    total = current["summary"]
    records = int(total["total-records"]) - int(total["total-position-deletes"])
    assert int(total["total-equality-deletes"]) > 0
    assert f"live rows: at most {records} (" in text
    assert records >= len(stream.expected(INF, "upsert"))
    assert (f"sinks: 1 (where each stands on main's history)\n  {TABLE}  frontier [], "
            f"version 1, snapshot {current['snapshot-id']} (tag floe-{TABLE})") in text
    assert len(snapshot_lines(inspect(floe, tmp).stdout)) == min(20, len(snaps))
    assert len(snapshot_lines(inspect(floe, tmp, "--limit", "0").stdout)) == len(snaps)


def test_json_numbers_limits_counts_progress_and_live_rows(floe, upsert_table):
    tmp, stream = upsert_table
    snaps = table_snapshots(db_of(tmp), TABLE)
    info = inspect_json(floe, tmp)
    assert info["snapshot_count"] == len(snaps) and info["snapshots_omitted"] == 0
    assert len(info["snapshots"]) == len(snaps), "--json shows all unless --limit"
    assert info["current_snapshot_id"] == snaps[-1]["snapshot-id"]
    for got, s in zip(info["snapshots"], snaps):
        assert got["snapshot_id"] == s["snapshot-id"]
        assert got["sequence_number"] == s["sequence-number"]
        assert got["timestamp_ms"] == s["timestamp-ms"]
        assert got["summary"] == s["summary"], "the raw summary, strings as Iceberg writes them"
        assert all(isinstance(v, str) for v in got["summary"].values())
        want = {k: int(v) for k, v in s["summary"].items() if re.fullmatch(r"-?(0|[1-9]\d*)", v)}
        assert got["counts"] == want and all(type(v) is int for v in got["counts"].values())
        assert got["floe"] == {"frontier": json.loads(s["summary"]["floe.frontier"]),
                               "sink_id": TABLE, "sink_version": 1}
        assert got["on_main"] is True and got["current"] is (s is snaps[-1])
    assert info["snapshots"][-1]["refs"] == ["main", f"floe-{TABLE}"]
    assert info["snapshots"][-1]["committed_at"].endswith("Z")
    last = snaps[-1]["summary"]
    assert info["live_rows"] == {
        "rows": int(last["total-records"]) - int(last["total-position-deletes"]),
        "exact": False, "total_records": int(last["total-records"]),
        "total_position_deletes": int(last["total-position-deletes"]),
        "total_equality_deletes": int(last["total-equality-deletes"])}
    assert info["sinks"] == [{"sink_id": TABLE, "state": "found", "frontier": [],
                              "sink_version": 1, "snapshot_id": snaps[-1]["snapshot-id"],
                              "tag_snapshot_id": snaps[-1]["snapshot-id"]}]
    assert [c["name"] for c in info["columns"]] == ["id", "name", "qty", "price", "tags", "at"]
    assert info["columns"][0] == {"id": 1, "name": "id", "type": "long", "required": True}
    assert info["schema"]["type"] == "struct" and len(info["schema"]["fields"]) == 6
    assert info["frontier"]["frontier"] == "[]"            # kept as before
    limited = inspect_json(floe, tmp, "--limit", "3")
    assert [s["snapshot_id"] for s in limited["snapshots"]] == \
        [s["snapshot-id"] for s in snaps[-3:]]
    assert limited["limit"] == 3 and limited["snapshots_omitted"] == len(snaps) - 3


def test_an_append_table_has_an_exact_live_count(floe, append_table):
    tmp, stream = append_table
    info = inspect_json(floe, tmp)
    assert info["live_rows"]["exact"] is True
    assert info["live_rows"]["rows"] == len(stream.expected(INF, "append"))
    text = inspect(floe, tmp).stdout
    assert f"live rows: {len(stream.expected(INF, 'append'))} (total-records" in text
    assert "   9  _timestamp  long not null" in text


def test_a_position_mode_upsert_table_has_an_exact_live_count(floe, tmp_path):
    """Position deletes (the default mode) make the summary's count exact."""
    from conftest import run_floe
    stream = Stream(83, steps=40)
    src = tmp_path / "in.ndjson"
    src.write_text(stream.text())
    run_floe(*sink_args(tmp_path, "upsert", stream, 20), "--input", src)
    info = inspect_json(floe, tmp_path)
    want = len(stream.expected(INF, "upsert"))
    assert info["live_rows"]["exact"] is True and info["live_rows"]["rows"] == want
    assert info["live_rows"]["total_position_deletes"] > 0
    assert f"live rows: {want} (total-records" in inspect(floe, tmp_path).stdout

def test_two_sinks_a_rollback_and_refs(floe, tmp_path):
    """A second sink id, then main rolled back before its snapshots: they are
    not on main any more and that sink has no progress on main."""
    from conftest import run_floe
    first = Stream(83, steps=20)
    run_floe(*sink_args(tmp_path, "upsert", first, 20, close=False), "--input", "-",
             input=first.text())
    keep = table_snapshots(db_of(tmp_path), TABLE)[-1]["snapshot-id"]
    other = '{"time": 100000, "diff": 1, "row": {"id": 9999}}\n{"progress": 100001}\n'
    run_floe(*sink_args(tmp_path, "upsert", first, 20, close=False), "--sink-id", "other",
             "--new-sink", "--input", "-", input=other)
    info = inspect_json(floe, tmp_path)
    ids = {s["sink_id"]: s for s in info["sinks"]}
    assert set(ids) == {TABLE, "other"}
    assert ids["other"]["state"] == "found" and ids["other"]["frontier"] == [100001]
    assert ids[TABLE]["state"] == "found" and ids[TABLE]["snapshot_id"] == keep
    orphan = info["current_snapshot_id"]
    table = pyiceberg_catalog(db_of(tmp_path), f"file://{tmp_path}/wh").load_table(TABLE)
    table.manage_snapshots().rollback_to_snapshot(keep).commit()
    info = inspect_json(floe, tmp_path)
    ids = {s["sink_id"]: s for s in info["sinks"]}
    assert ids["other"] == {"sink_id": "other", "state": "none", "frontier": None,
                            "sink_version": None, "snapshot_id": None,
                            "tag_snapshot_id": orphan}
    assert info["current_snapshot_id"] == keep
    by_id = {s["snapshot_id"]: s for s in info["snapshots"]}
    assert by_id[orphan]["on_main"] is False and by_id[orphan]["refs"] == ["floe-other"]
    assert by_id[keep]["refs"] == ["main", f"floe-{TABLE}"]
    text = inspect(floe, tmp_path).stdout
    assert f"  other        none on main (tag floe-other at snapshot {orphan})" in text
    orphan_line = [line for line in text.splitlines() if line.startswith(f"  {orphan} ")]
    assert orphan_line and orphan_line[0].endswith("floe-other, not on main"), text


def test_an_empty_table_and_nothing_created(floe, tmp_path):
    res = floe("inspect", "--table", TABLE, "--catalog", f"sqlite:{tmp_path}/none.db",
               check=False)
    assert res.returncode == 1 and not os.path.exists(f"{tmp_path}/none.db")
    cat = ["--catalog", f"sqlite:{tmp_path}/c.db", "--warehouse", f"{tmp_path}/wh"]
    (tmp_path / "empty.ndjson").write_text("")
    floe("append", "--table", TABLE, "--schema", "id bigint", *cat, "--input",
         tmp_path / "empty.ndjson")
    info = json.loads(floe("inspect", "--table", TABLE, "--json", *cat).stdout)
    assert info["snapshots"] == [] and info["current_snapshot_id"] is None
    assert info["live_rows"] == {"rows": 0, "exact": True, "total_records": 0,
                                 "total_position_deletes": 0, "total_equality_deletes": 0}
    text = floe("inspect", "--table", TABLE, *cat).stdout
    assert "current   none (no snapshots)" in text and "snapshots: none" in text
    assert "sinks: none" in text and "live rows: 0" in text


def test_a_partitioned_table_lists_its_costliest_partitions(floe, tmp_path):
    """Per-partition debt: the partitions and each one's files and rows,
    as pyiceberg's plan of the table counts them, the worst first."""
    from conftest import run_floe
    stream = Stream(84, steps=60, keys=30, burst=0.3)
    src = tmp_path / "in.ndjson"
    src.write_text(stream.text())
    run_floe(*sink_args(tmp_path, "upsert", stream, 5), "--maintain", "off",
             "--partition-by", "bucket(4, id), truncate(10, qty)", "--input", src)
    info = inspect_json(floe, tmp_path)
    pd = info["partition_debt"]
    tbl = pyiceberg_catalog(db_of(tmp_path), f"file://{tmp_path}/wh").load_table(TABLE)
    names = [f.name for f in tbl.spec().fields]
    want = {}                                         # tuple -> [data files, rows, deletes]
    for task in tbl.scan().plan_files():
        key = tuple(task.file.partition[i] for i in range(len(names)))
        w = want.setdefault(key, [0, 0, set()])
        w[0] += 1
        w[1] += task.file.record_count
        w[2] |= {d.file_path for d in task.delete_files}
    assert pd["partitions"] == len(want) > 4, (pd["partitions"], len(want))
    assert len(pd["worst"]) == min(10, len(want))
    costs = []
    for p in pd["worst"]:
        key = tuple(p["partition"][n] for n in names)
        files, rows, deletes = want[key]
        assert (p["data_files"], p["data_rows"], p["delete_files"]) == \
            (files, rows, len(deletes)), (key, p)
        costs.append(files + len(deletes))
    assert costs == sorted(costs, reverse=True)
    assert max(costs) == max(w[0] + len(w[2]) for w in want.values())
    text = inspect(floe, tmp_path).stdout
    assert f"partitions      {len(want)}; the {len(pd['worst'])} with the most files" in text
    first = pd["worst"][0]
    shown = ", ".join(f"{n}={'null' if first['partition'][n] is None else first['partition'][n]}"
                      for n in names)
    assert shown in text, text
