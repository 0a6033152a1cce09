"""Bad input to `floe sink`: each case is a clear error naming the line, and
the table stays at its last committed frontier (SPEC.md section 2)."""
import json

import pytest

import java_reader
from sinkmodel import INF, Stream, frontier_value, table_snapshots
from test_sink_model import TABLE, sink_args

GOOD = [json.dumps({"time": t, "diff": 1, "row": {"id": t, "name": f"n{t}"}}) for t in range(1, 6)]
PROGRESS = [json.dumps({"progress": 10})]


CASES = [
    ("malformed JSON", '{"time": 11, "diff": 1, "row": {"id": 1}', "malformed JSON"),
    ("unknown column", '{"time": 11, "diff": 1, "row": {"id": 1, "nope": 2}}', "nope"),
    ("wrong type", '{"time": 11, "diff": 1, "row": {"id": 1, "qty": "many"}}', "qty"),
    ("null in a not-null column", '{"time": 11, "diff": 1, "row": {"id": null}}', "id"),
    ("time behind the frontier", '{"time": 9, "diff": 1, "row": {"id": 1}}', "behind the frontier"),
    ("frontier moving backwards", '{"progress": 8}', "backwards"),
    ("not an update", '{"time": 11, "row": {"id": 1}}', "diff"),
    ("truncation behind the frontier", '{"time": 9, "truncate": true}', "behind the frontier"),
    ("truncation not true", '{"time": 11, "truncate": 1}', '"truncate" must be true'),
    ("truncation with a row", '{"time": 11, "truncate": true, "diff": 1}',
     "a truncation is {\"time\", \"truncate\": true} and nothing else"),
    ("partition spec behind the frontier", '{"time": 9, "partition-by": "bucket(4, id)"}',
     "behind the frontier"),
    ("partition spec not a string", '{"time": 11, "partition-by": 4}',
     '"partition-by" must be a partition spec'),
    ("partition spec with a row", '{"time": 11, "partition-by": "id", "diff": 1}',
     'a partition spec change is {"time", "partition-by"} and nothing else'),
    ("partition spec of no column", '{"time": 11, "partition-by": "day(nosuch)"}', "nosuch"),
]


@pytest.mark.parametrize("name,bad,words", CASES, ids=[c[0] for c in CASES])
def test_bad_line_stops_with_a_clear_error(floe, tmp_path, name, bad, words):
    lines = GOOD + PROGRESS + [json.dumps({"time": 12, "diff": 1, "row": {"id": 99}})] + [bad]
    lines += [json.dumps({"progress": 20})]
    src = tmp_path / "in.ndjson"
    src.write_text("\n".join(lines) + "\n")
    stream = Stream(0, steps=0)
    res = floe(*sink_args(tmp_path, "upsert", stream, 5), "--input", src, check=False)
    assert res.returncode != 0
    bad_line = len(GOOD) + len(PROGRESS) + 2
    assert f"{src}:{bad_line}:" in res.stderr, res.stderr
    assert words.lower() in res.stderr.lower(), res.stderr
    assert "last committed frontier" in res.stderr
    snaps = table_snapshots(f"{tmp_path}/catalog.db", TABLE)
    fronts = [frontier_value(s["summary"]["floe.frontier"]) for s in snaps]
    assert fronts and fronts[-1] <= 10 and INF not in fronts, fronts
    rows = java_reader.read_rows(f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh", TABLE)
    ids = sorted(r[0] for r in rows)
    assert ids == [t for t in range(1, 6) if t < fronts[-1]], (ids, fronts)
