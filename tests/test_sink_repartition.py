"""Partition evolution while `floe sink` runs (SPEC.md section 4).

The model streams of test_sink_model.py carry two records
{"time": T, "partition-by": SPEC}: the table starts unpartitioned, turns
to day(at) a third of the way in and to day(at), bucket(8, id) two thirds
in.  Every snapshot, read by Java, DuckDB and pyiceberg, equals the model;
the files written before each change keep their spec, those after it have
the new one (each data file holding one partition of it, every delete its
data file's tuple and spec id); the field day(at) keeps its field id in
the third spec; pyiceberg prunes the files of both partitioned specs by a
filter on one day.  The same under SIGKILLs, and `--partition-by` on a
rerun changes an existing table's spec.  `floe maintain --compact-old-specs`
rewrites the older specs' files into the current spec, and the sink goes
on exactly after it.
"""
import datetime
import json
import random

import pytest

from conftest import floe_bin
from sinkmodel import Stream, kill_until_done
from test_sink_model import TABLE, check_snapshots, mode_of, sink_args
from test_sink_partitioned import check_partitions
from test_sink_restart import check_final

pytest.importorskip("pyiceberg")
from pyiceberg import expressions as E  # noqa: E402

from iceberg_readers import pyiceberg_catalog  # noqa: E402

SPECS = ["day(at)", "day(at), bucket(8, id)"]


def with_respecs(stream, specs):
    """The stream's lines with a partition-by record after progress records
    spread over it, one per spec, at the progress's time."""
    lines = stream.lines
    prog = [i for i, line in enumerate(lines) if line.startswith('{"progress"')]
    at = {prog[(k + 1) * len(prog) // (len(specs) + 1)]: spec for k, spec in enumerate(specs)}
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        if i in at:
            out.append(json.dumps({"time": json.loads(line)["progress"], "partition-by": at[i]}))
    return "\n".join(out) + "\n"


def check_specs(tmp_path):
    """Three specs, the last the default; data files written in each; the
    day field's id kept.  Returns the table and its data files' specs."""
    db, wh = f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh"
    t = pyiceberg_catalog(db, wh).load_table(TABLE)
    specs = t.specs()
    got = {sid: [(f.field_id, f.name, str(f.transform)) for f in s.fields]
           for sid, s in specs.items()}
    assert got == {0: [], 1: [(1000, "at_day", "day")],
                   2: [(1000, "at_day", "day"), (1001, "id_bucket", "bucket[8]")]}, got
    assert t.spec().spec_id == 2
    data, _ = check_partitions(db, wh, TABLE)
    assert {d[0] for d in data.values()} == {0, 1, 2}, "a spec wrote no data file"
    return t, data


def check_pruning(t, data):
    """A filter on one day of `at` plans, of the partitioned specs' files,
    only that day's: some are pruned, and the rows are right."""
    rows = t.scan().to_arrow().to_pylist()
    days = sorted({r["at"].date() for r in rows if r.get("at") is not None})
    assert days
    day = days[len(days) // 2]
    lo = datetime.datetime.combine(day, datetime.time(), datetime.timezone.utc)
    hi = lo + datetime.timedelta(days=1)
    flt = E.And(E.GreaterThanOrEqual("at", lo.isoformat()), E.LessThan("at", hi.isoformat()))
    scan = t.scan(row_filter=flt)
    planned = [task.file.file_path for task in scan.plan_files()]
    live = [task.file.file_path for task in t.scan().plan_files()]
    want_day = (day - datetime.date(1970, 1, 1)).days
    for p in planned:
        spec_id, part = data[p]
        if spec_id:
            assert part[0] == want_day, f"{p} (spec {spec_id}, {part}) is not of day {day}"
    partitioned = [p for p in live if data[p][0]]
    assert len([p for p in planned if data[p][0]]) < len(partitioned), "nothing pruned"
    got = sorted(repr(r) for r in scan.to_arrow().to_pylist())
    assert got == sorted(repr(r) for r in rows if r.get("at") is not None and lo <= r["at"] < hi)


@pytest.mark.parametrize("variant", ["upsert", "upsert-v3", "upsert-cow", "append"])
def test_partition_spec_changes_mid_stream(floe, tmp_path, variant):
    stream = Stream(41, steps=45, keys=30, burst=0.3)
    src = tmp_path / "changes.ndjson"
    src.write_text(with_respecs(stream, SPECS))
    floe(*sink_args(tmp_path, variant, stream, 15, maintain="keep"), "--input", src)
    check_snapshots(tmp_path, stream, variant)
    t, data = check_specs(tmp_path)
    check_pruning(t, data)


@pytest.mark.parametrize("variant,seed", [("upsert", 21), ("append", 22)])
def test_partition_spec_changes_under_sigkills(tmp_path, variant, seed):
    """Killed again and again: the final table equals the model, each spec
    change landed once (three specs), every file keeps its partition."""
    r = random.Random(seed)
    stream = Stream(seed, steps=300, keys=60, burst=0.3)
    src = tmp_path / "changes.ndjson"
    src.write_text(with_respecs(stream, SPECS))
    args = [floe_bin(), *sink_args(tmp_path, variant, stream, 8, maintain="all"),
            "--input", str(src)]
    kills = kill_until_done(args, r, 0.05, 0.6)
    print(f"seed {seed}: killed {kills} times")
    check_final(tmp_path, stream, mode_of(variant))
    check_specs(tmp_path)


def test_partition_by_on_a_rerun_changes_the_spec(floe, tmp_path):
    """A rerun with another --partition-by writes its files in that spec
    from where the table stopped; the same spec again adds none; a spec
    that names no column is refused before anything is written."""
    stream = Stream(8, steps=30, keys=20, burst=0.3)
    lines = stream.text().splitlines()
    prog = [i for i, line in enumerate(lines) if line.startswith('{"progress"')]
    first = tmp_path / "first.ndjson"
    first.write_text("\n".join(lines[:prog[len(prog) // 2] + 1]) + "\n")
    whole = tmp_path / "whole.ndjson"
    whole.write_text(stream.text())
    db, wh = f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh"
    open_args = sink_args(tmp_path, "upsert", stream, 10, close=False)
    floe(*open_args, "--input", first)
    r = floe(*open_args, "--partition-by", "nosuch", "--input", whole, check=False)
    assert r.returncode != 0 and "nosuch" in r.stderr, r.stderr
    assert len(pyiceberg_catalog(db, wh).load_table(TABLE).specs()) == 1
    floe(*open_args, "--partition-by", "bucket(4, id)", "--input", whole)
    t = pyiceberg_catalog(db, wh).load_table(TABLE)
    assert t.spec().spec_id == 1 and [str(f.transform) for f in t.spec().fields] == ["bucket[4]"]
    data, _ = check_partitions(db, wh, TABLE)
    assert {d[0] for d in data.values()} == {0, 1}
    floe(*sink_args(tmp_path, "upsert", stream, 10), "--partition-by", "bucket(4, id)",
         "--input", whole)
    assert len(pyiceberg_catalog(db, wh).load_table(TABLE).specs()) == 2
    check_final(tmp_path, stream, "upsert")


def test_auto_maintenance_compacts_in_the_new_spec(tmp_path):
    """The sink's own maintenance follows the table's spec: after a change
    it compacts the files written in the new spec (a replace snapshot whose
    manifest of the new spec removes files), leaves the older spec's files
    (counted in floe_table_old_spec_data_files), and the table stays exact."""
    from test_sink_maintain import AutoSink
    from test_sink_position import Running, check_position, metric
    stream = Stream(43, steps=160, keys=30, burst=0.3)
    sink = AutoSink(tmp_path, stream, interval=3, expire=False)
    lines = with_respecs(stream, ["bucket(2, id)"]).splitlines()
    at = next(k for k, line in enumerate(lines) if '"partition-by"' in line)

    def compacted_in_new_spec():
        t = pyiceberg_catalog(sink.db, sink.wh).load_table(TABLE)
        return any(s.summary.operation.value == "replace" and
                   int(s.summary.get("deleted-data-files", 0)) > 0 and
                   any(m.partition_spec_id == 1 and m.added_snapshot_id == s.snapshot_id and
                       m.deleted_files_count for m in s.manifests(t.io))
                   for s in t.snapshots())

    run = Running(sink, "--maintain-budget", "1")
    run.send(lines[:at])
    run.proc.stdin.write(lines[at] + "\n")           # not an update: not counted as one
    run.send(lines[at + 1:])
    run.wait_for(compacted_in_new_spec, timeout=300)
    # the older spec's files stay (the sink does not rewrite them) and say so
    run.wait_for(lambda: (metric(run.port, "floe_table_old_spec_data_files") or 0) > 0,
                 timeout=300)
    run.finish()
    check_position(sink)


@pytest.mark.parametrize("variant", ["upsert", "upsert-v3"])
def test_old_specs_compacted_into_the_current_one(floe, tmp_path, variant):
    """`floe maintain --compact-old-specs` after two spec changes: every live
    data file is then of the current spec (each holding one of its
    partitions: rows checked against the manifest's tuple); plain
    compaction leaves the old specs' files alone.  Then the sink goes on
    from where it stopped (its key index finds the rows that moved, by
    reading the new files) and every snapshot, the rewrite's too, equals the
    model in Java, DuckDB and pyiceberg."""
    stream = Stream(44, steps=60, keys=30, burst=0.3)
    lines = with_respecs(stream, SPECS).splitlines()
    prog = [i for i, line in enumerate(lines) if line.startswith('{"progress"')]
    cut = prog[len(prog) * 5 // 6]                     # past the second change
    first = tmp_path / "first.ndjson"
    first.write_text("\n".join(lines[:cut + 1]) + "\n")
    whole = tmp_path / "whole.ndjson"
    whole.write_text("\n".join(lines) + "\n")
    db, wh = f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh"
    floe(*sink_args(tmp_path, variant, stream, 10, close=False), "--input", first)

    def live_specs():
        t = pyiceberg_catalog(db, wh).load_table(TABLE)
        return sorted(task.file.spec_id for task in t.scan().plan_files()), t

    where = ["--table", TABLE, "--catalog", f"sqlite:{db}", "--warehouse", wh]

    def inspected():
        text = floe("inspect", *where).stdout
        debt = json.loads(floe("inspect", *where, "--json").stdout)["debt"]
        return text, debt["old_spec_data_files"]

    before, _ = live_specs()
    assert {0, 1} & set(before) and 2 in before, before
    floe("maintain", *where, "--compact")
    kept, _ = live_specs()
    assert {0, 1} & set(kept), f"plain compaction rewrote the old specs' files: {kept}"
    text, old = inspected()                            # says so, and what to run
    assert old == len([s for s in kept if s != 2]), (old, kept)
    assert "floe maintain --compact-old-specs" in text, text
    r = floe("maintain", *where, "--compact-old-specs")
    after, t = live_specs()
    assert set(after) == {2}, (after, r.stdout)
    text, old = inspected()
    assert old == 0 and "older specs" not in text, text
    assert t.current_snapshot().summary.operation.value == "replace"
    check_partitions(db, wh, TABLE)
    floe(*sink_args(tmp_path, variant, stream, 10), "--input", whole)
    check_snapshots(tmp_path, stream, variant)
    check_final(tmp_path, stream, "upsert")
