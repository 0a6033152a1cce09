"""floe sink on tables other engines change (SPEC 5.1): between two runs of a
sink, Iceberg's own Java API (tests/engines.py) compacts, expires, rolls
back, rewrites manifests and position deletes, removes orphans, inserts,
deletes (merge-on-read and copy-on-write) and writes to a branch; then floe
runs again over the same input plus more.  The final table and every
snapshot of the sink still on main's history must equal the model (plus
what the other writers did), read by Java IcebergGenerics and DuckDB.

Each test names the defect of issue P5 it covers.
"""
import json

import pytest

import engines
import java_reader
from conftest import run_floe
from iceberg_readers import duckdb_rows
from sinkmodel import APPEND_EXTRA, COLS, INF, SCHEMA, Stream, frontier_value, metadata_location

TABLE = "demo.orders"
FOREIGN_ID = 10**6              # ids other writers use: the streams never touch them


def progress_points(stream):
    return [json.loads(line)["progress"] for line in stream.lines if '"progress"' in line]


def lines_until(stream, progress):
    out = []
    for line in stream.lines:
        out.append(line)
        if json.loads(line).get("progress") == progress:
            return out
    raise AssertionError(f"no progress {progress}")


class Sink:
    """A table fed by `floe sink` from a model stream, run by run."""

    def __init__(self, tmp_path, stream, mode="upsert", interval=20, sink_id=None):
        self.dir, self.stream, self.mode, self.interval = tmp_path, stream, mode, interval
        self.db, self.wh = f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh"
        self.sink_id = sink_id or TABLE
        self.runs = 0
        self.cols = COLS + (APPEND_EXTRA if mode == "append" else [])

    def args(self, *extra):
        a = ["sink", "--table", TABLE, "--schema", SCHEMA, "--mode", self.mode, "--catalog",
             f"sqlite:{self.db}", "--warehouse", f"{self.dir}/wh", "--commit-interval",
             str(self.interval), "--quiet", "--sink-id", self.sink_id]
        if self.mode == "upsert":
            a += ["--key", "id"]
        return a + list(extra)

    def run(self, lines, *extra, check=True):
        self.runs += 1
        src = self.dir / f"in-{self.sink_id.replace('/', '_')}-{self.runs}.ndjson"
        src.write_text("".join(line + "\n" for line in lines))
        return run_floe(*self.args(*extra), "--input", src, check=check)

    def engine(self, op, *args, **kw):
        return getattr(engines, op)(self.db, self.wh, TABLE, *args, **kw)


def foreign_row(i, mode):
    row = {c.name: None for c in COLS}
    row["id"] = FOREIGN_ID + i
    row["name"] = f"foreign-{i}"
    if mode == "append":
        row.update({"_diff": 1, "_timestamp": 7})
    return row


def canon_foreign(row, mode):
    out = (row["id"], row["name"], None, None, None, None)
    return out + ((1, 7) if mode == "append" else ())


def main_history(db):
    """The snapshots on main's history in the current metadata, oldest first."""
    loc = metadata_location(db, TABLE)
    path = loc[len("file://"):] if loc.startswith("file://") else loc.removeprefix("file:")
    with open(path) as f:
        md = json.load(f)
    by_id = {s["snapshot-id"]: s for s in md.get("snapshots", [])}
    out, sid = [], md.get("current-snapshot-id", -1)
    while sid in by_id:
        out.append(by_id[sid])
        sid = by_id[sid].get("parent-snapshot-id")
    return list(reversed(out))


def check(sink, foreign_added=(), foreign_gone=(), sinks=None):
    """Every snapshot of the sinks on main's history, and the final table, equal
    the models plus the rows other writers added (foreign_added: [(snapshot
    id, canonical row)]) minus the keys they removed (foreign_gone: [(snapshot
    id, key)])."""
    sinks = sinks or [sink]
    java = {sid: rows for sid, _, rows in java_reader.read_snapshots(sink.db, sink.wh, TABLE)}
    state = {s.sink_id: -1.0 for s in sinks}          # each sink's frontier so far
    history = main_history(sink.db)
    on = {snap["snapshot-id"] for snap in history}    # expiry may have cut what came before
    added = [r for s, r in foreign_added if s not in on]
    gone, checked = {k for s, k in foreign_gone if s not in on}, 0
    for snap in history:
        summary = snap.get("summary", {})
        sid = snap["snapshot-id"]
        added += [r for s, r in foreign_added if s == sid]
        gone |= {k for s, k in foreign_gone if s == sid}
        if summary.get("floe.sink-id") in state:
            state[summary["floe.sink-id"]] = frontier_value(summary["floe.frontier"])
        want = sorted([r for s in sinks for r in s.stream.expected(state[s.sink_id], s.mode)
                       + (added if s is sinks[0] else []) if r[0] not in gone], key=repr)
        known = all(v != -1.0 for v in state.values())   # expiry may cut history before
        if summary.get("floe.sink-id") in state or (known and summary.get("operation") == "replace"):
            assert sorted(java[sid], key=repr) == want, f"Java, snapshot {sid} {summary}"
            checked += 1
    final = duckdb_rows(metadata_location(sink.db, TABLE), sink.cols)
    assert sorted(final, key=repr) == want, "DuckDB, the current snapshot"
    return checked


def half_then_rest(sink, between, upto=0.5):
    """Run the first part of the stream, call between(), run the whole stream."""
    pv = progress_points(sink.stream)
    first = lines_until(sink.stream, pv[int(len(pv) * upto)])
    sink.run(first)
    out = between()
    res = sink.run(sink.stream.lines, "--close")
    assert f"resuming {TABLE} at frontier [" in res.stderr, res.stderr
    return out


# ---- P5 #2: compaction, expiry and the other maintenance operations -------------------------

@pytest.mark.parametrize("mode", ["upsert", "append"])
def test_compaction_then_expiry_keeps_the_progress(tmp_path, mode):
    """P5 #2: rewrite_data_files + expire_snapshots(retain_last 1) used to
    leave no floe progress: floe re-inserted everything."""
    sink = Sink(tmp_path, Stream(51, steps=40, keys=30), mode)

    def maintain():
        sink.engine("compact")
        sink.engine("expire", retain_last=1)
        hist = main_history(sink.db)
        assert hist[-1]["summary"]["operation"] == "replace"
    half_then_rest(sink, maintain)
    assert check(sink) >= 3


def test_every_maintenance_operation_between_runs(tmp_path):
    """P5 #2: rewrite_manifests, rewrite_position_delete_files and orphan
    removal, then compaction of some files and expiry, between runs."""
    sink = Sink(tmp_path, Stream(52, steps=60, keys=25), "upsert", interval=10)
    pv = progress_points(sink.stream)
    for i, ops in enumerate([("rewrite_manifests",), ("rewrite_position_deletes",),
                             ("remove_orphans",), ("compact_some",), ("expire",)]):
        sink.run(lines_until(sink.stream, pv[(i + 1) * len(pv) // 7]))
        for op in ops:
            if op == "compact_some":
                sink.engine("compact", files=3)
            elif op == "expire":
                sink.engine("expire", retain_last=2)
            else:
                sink.engine(op)
    sink.run(sink.stream.lines, "--close")
    check(sink)


# ---- P5 #3: a rollback -------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["upsert", "append"])
def test_a_rollback_is_resumed_from_main_not_skipped(tmp_path, mode):
    """P5 #3: after rollback_to_snapshot floe resumed at the frontier of a
    snapshot no longer on main and lost the rows in between."""
    sink = Sink(tmp_path, Stream(53, steps=50, keys=30), mode)
    pv = progress_points(sink.stream)
    sink.run(lines_until(sink.stream, pv[len(pv) * 2 // 3]))
    floe_fronts = [s["summary"]["floe.frontier"] for s in main_history(sink.db)
                   if "floe.frontier" in s["summary"]]
    back = floe_fronts[len(floe_fronts) // 3]
    sink.engine("rollback_to_frontier", back)
    res = sink.run(sink.stream.lines, "--close")
    assert f"resuming {TABLE} at frontier {back}" in res.stderr, res.stderr
    check(sink)


def test_a_rollback_past_every_commit_of_the_sink_starts_it_again(tmp_path):
    """P5 #3: main rolled back to before the sink's first commit holds none
    of its rows, so the sink starts from the beginning (no option needed)."""
    sink = Sink(tmp_path, Stream(54, steps=30, keys=20), "upsert")
    sink.run([])                                  # creates the table, commits nothing
    empty = sink.engine("append", [])["snapshot-id"]       # another writer's empty append
    pv = progress_points(sink.stream)
    sink.run(lines_until(sink.stream, pv[len(pv) // 2]))
    assert len(main_history(sink.db)) > 2
    sink.engine("rollback", empty)
    res = sink.run(sink.stream.lines, "--close")
    assert "resuming" not in res.stderr, res.stderr          # a fresh start
    check(sink)


# ---- P5 #4: other writers ----------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["upsert", "append"])
def test_foreign_inserts_and_deletes_between_runs_are_passed_over(tmp_path, mode):
    """P5 #4: a Java INSERT, a merge-on-read DELETE, a copy-on-write DELETE
    and floe's own `floe append` between two runs made the second refuse."""
    sink = Sink(tmp_path, Stream(55, steps=50, keys=30), mode)
    added, gone = [], []

    def foreign():
        rows = [foreign_row(i, mode) for i in range(4)]
        sink.engine("append", rows[:3])
        sid = main_history(sink.db)[-1]["snapshot-id"]
        added.extend((sid, canon_foreign(r, mode)) for r in rows[:3])
        sink.engine("delete_mor", "id", [FOREIGN_ID])
        gone.append((main_history(sink.db)[-1]["snapshot-id"], FOREIGN_ID))
        sink.engine("delete_cow", "id", [FOREIGN_ID + 1])
        gone.append((main_history(sink.db)[-1]["snapshot-id"], FOREIGN_ID + 1))
        path = tmp_path / "append.ndjson"
        path.write_text(json.dumps(rows[3]) + "\n")
        run_floe("append", "--table", TABLE, "--input", path, "--catalog", f"sqlite:{sink.db}",
                 "--warehouse", f"{tmp_path}/wh")
        added.append((main_history(sink.db)[-1]["snapshot-id"], canon_foreign(rows[3], mode)))
    half_then_rest(sink, foreign)
    check(sink, added, gone)


def test_a_write_to_another_branch_is_ignored(tmp_path):
    """P5 #4: snapshots on other branches never count, and main is untouched."""
    sink = Sink(tmp_path, Stream(56, steps=40, keys=20), "upsert")
    half_then_rest(sink, lambda: sink.engine("append", [foreign_row(0, "upsert")],
                                             branch="audit"))
    check(sink)
    audit = engines.files_json(sink.db, sink.wh, TABLE, branch="audit")
    assert audit, "the branch still holds its write"


def test_two_sinks_with_their_own_ids_share_a_table(tmp_path):
    """P5 #4 and #12: each sink resumes from its own progress; the second
    needs --new-sink because the table already holds the first one's rows."""
    a = Sink(tmp_path, Stream(57, steps=40, keys=20), "upsert", sink_id="sink-a")
    b_stream = Stream(58, steps=40, keys=20)
    shift = lambda line: line.replace('{"id": ', '{"id": 500')    # noqa: E731 - keys 500..
    b_stream.lines = [shift(x) for x in b_stream.lines]
    b_stream.updates = [(t, d, (int(f"500{r[0]}"),) + r[1:]) for t, d, r in b_stream.updates]
    b = Sink(tmp_path, b_stream, "upsert", sink_id="sink-b")
    pa, pb = progress_points(a.stream), progress_points(b.stream)
    a.run(lines_until(a.stream, pa[len(pa) // 2]))
    res = b.run(lines_until(b.stream, pb[len(pb) // 3]), check=False)
    assert res.returncode != 0 and "'sink-a'" in res.stderr and "--new-sink" in res.stderr
    b.run(lines_until(b.stream, pb[len(pb) // 3]), "--new-sink")
    a.run(a.stream.lines, "--close")
    b.run(b.stream.lines, "--close")
    check(a, sinks=[a, b])


def test_an_unknown_sink_id_on_a_table_with_rows_is_refused(tmp_path):
    """P5 #12: a wrong --sink-id used to adopt another sink's frontier and
    drop its own rows; now it is refused, listing the ids the table knows."""
    sink = Sink(tmp_path, Stream(59, steps=20, keys=10), "upsert")
    sink.run(sink.stream.lines)
    before = len(main_history(sink.db))
    other = Sink(tmp_path, sink.stream, "upsert", sink_id="typo")
    res = other.run(sink.stream.lines, check=False)
    assert res.returncode != 0
    assert f"'{TABLE}'" in res.stderr and "has no snapshot on main's history" in res.stderr
    assert len(main_history(sink.db)) == before


# ---- P5 #9: the end of an input -----------------------------------------------------------------

def test_an_input_that_ends_is_continued_by_the_next_one(tmp_path):
    """P5 #9: the end of a file recorded [] and the next file was dropped."""
    stream = Stream(60, steps=40, keys=20)
    sink = Sink(tmp_path, stream, "upsert")
    pv = progress_points(stream)
    first = lines_until(stream, pv[len(pv) // 2])
    sink.run(first)
    newest = max(json.loads(x)["time"] for x in first if '"time"' in x)
    last = main_history(sink.db)[-1]["summary"]["floe.frontier"]
    assert frontier_value(last) == max(newest + 1, pv[len(pv) // 2]), last
    sink.run(stream.lines[len(first):])                     # the next file: the rest
    sink.run([], "--close")                                  # then the stream is complete
    assert main_history(sink.db)[-1]["summary"]["floe.frontier"] == "[]"
    check(sink)
    res = sink.run(['{"time": 999999, "diff": 1, "row": {"id": 1}}'], check=False)
    assert res.returncode != 0 and "takes no more updates" in res.stderr
