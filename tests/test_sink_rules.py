"""The rules of SPEC.md sections 5 and 7, each with its own test, on the
embedded default (SQLite catalog, local warehouse), read back by Java
Iceberg and DuckDB."""
import json
import subprocess
import time

import pyarrow as pa
import pytest
from pyiceberg.types import StringType

import java_reader
from conftest import floe_bin, run_floe, tool_bin
from iceberg_readers import pyiceberg_catalog
from sinkmodel import (COLS, INF, SCHEMA, Stream, committed_frontier, frontier_value,
                       table_snapshots)
from test_sink_model import TABLE, check_snapshots, sink_args


def db_of(tmp_path):
    return f"{tmp_path}/catalog.db"


def frontiers(tmp_path):
    return [frontier_value(s["summary"]["floe.frontier"]) for s in table_snapshots(db_of(tmp_path), TABLE)
            if "floe.frontier" in s.get("summary", {})]


def lines_until(stream, progress):
    """The stream's lines up to and including the progress record `progress`."""
    out = []
    for line in stream.lines:
        out.append(line)
        if json.loads(line).get("progress") == progress:
            return out
    raise AssertionError(f"no progress {progress} in the stream")


class Running:
    """A sink reading stdin, so a test can feed it in steps and stop it."""

    def __init__(self, tmp_path, mode, stream, interval, *extra):
        self.tmp_path = tmp_path
        self.proc = subprocess.Popen([floe_bin(), *sink_args(tmp_path, mode, stream, interval),
                                      *extra, "--input", "-"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def feed(self, lines):
        try:
            self.proc.stdin.write("".join(line + "\n" for line in lines))
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass                                  # it stopped; close() reports why

    def wait_for_frontier(self, at_least, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            f = committed_frontier(db_of(self.tmp_path), TABLE)
            if f is not None and f >= at_least:
                return f
            assert self.proc.poll() is None, self.proc.communicate()[1]
            time.sleep(0.05)
        raise AssertionError(f"frontier {at_least} not committed in time")

    def wait_settled(self, at_least):
        """Wait for `at_least`, then until the frontier stops moving (the
        sink has committed all it was fed)."""
        f = self.wait_for_frontier(at_least)
        while True:
            time.sleep(0.5)
            now = committed_frontier(db_of(self.tmp_path), TABLE)
            if now == f:
                return f
            f = now

    def kill(self):
        self.proc.kill()
        self.proc.communicate()

    def close(self):
        """Close stdin (the input ends) and wait: (exit code, stderr)."""
        out, err = self.proc.communicate(timeout=120)
        return self.proc.returncode, err


def progress_values(stream):
    return [json.loads(l)["progress"] for l in stream.lines if "progress" in l]


def test_fresh_start_commits_the_snapshot_batch_first(floe, tmp_path):
    stream = Stream(11, steps=30, as_of=50, initial=40)
    src = tmp_path / "in.ndjson"
    src.write_text(stream.text())
    floe(*sink_args(tmp_path, "upsert", stream, 10), "--input", src)
    snaps = check_snapshots(tmp_path, stream, "upsert")
    first = snaps[0][1]
    assert first["floe.frontier"] == "[51]", "the snapshot batch is [as_of, as_of+1)"
    assert first["floe.sink-id"] == TABLE and first["floe.sink-version"] == "1"
    assert len(snaps[0][2]) == len(stream.expected(51, "upsert")) > 0


def test_resume_from_the_recorded_frontier(tmp_path):
    stream = Stream(12, steps=80)
    stop = progress_values(stream)[len(progress_values(stream)) // 2]
    run = Running(tmp_path, "upsert", stream, 20)
    run.feed(lines_until(stream, stop))
    reached = run.wait_for_frontier(stop - 20)
    run.kill()
    before = frontiers(tmp_path)
    src = tmp_path / "in.ndjson"
    src.write_text(stream.text())
    res = run_floe(*sink_args(tmp_path, "upsert", stream, 20), "--input", src)
    assert f"resuming {TABLE} at frontier [" in res.stderr
    after = frontiers(tmp_path)
    assert after[:len(before)] == before, "committed snapshots are kept"
    assert min(after[len(before):]) > reached
    check_snapshots(tmp_path, stream, "upsert")


def test_a_closed_table_takes_no_more_updates(floe, tmp_path):
    """SPEC 2: once a sink's input was closed ([] recorded), a run without
    updates has nothing to do and a run with updates is an error, never a
    silent no-op."""
    stream = Stream(13, steps=20)
    src = tmp_path / "in.ndjson"
    src.write_text(stream.text())
    floe(*sink_args(tmp_path, "upsert", stream, 20), "--input", src)
    n = len(table_snapshots(db_of(tmp_path), TABLE))
    res = floe(*sink_args(tmp_path, "upsert", stream, 20), "--input", "-",
               input='{"progress": 99999}\n')
    assert "its input was closed" in res.stderr
    res = floe(*sink_args(tmp_path, "upsert", stream, 20), "--input", src, check=False)
    assert res.returncode != 0
    assert "takes no more updates" in res.stderr and "in.ndjson:" in res.stderr, res.stderr
    assert len(table_snapshots(db_of(tmp_path), TABLE)) == n


def test_input_closing_before_initialization(floe, tmp_path):
    lines = [json.dumps({"time": 0, "diff": 1, "row": {"id": i, "name": f"n{i}"}}) for i in range(5)]
    floe("sink", "--table", TABLE, "--schema", SCHEMA, "--key", "id", "--catalog",
         f"sqlite:{db_of(tmp_path)}", "--warehouse", f"{tmp_path}/wh", "--input", "-", "--close",
         input="\n".join(lines) + "\n")
    snaps = java_reader.read_snapshots(db_of(tmp_path), f"file://{tmp_path}/wh", TABLE)
    assert [s[1]["floe.frontier"] for s in snaps] == ["[1]", "[]"]
    assert len(snaps[0][2]) == 5 and len(snaps[1][2]) == 5


def test_input_closing_in_steady_state_commits_the_rest(floe, tmp_path):
    stream = Stream(14, steps=40)
    tail = [json.dumps({"time": stream.frontier + 1000, "diff": 1,
                        "row": {"id": 10**6, "name": "last"}})]
    stream.lines.extend(tail)
    stream.updates.append((stream.frontier + 1000, 1, (10**6, "last", None, None, None, None)))
    src = tmp_path / "in.ndjson"
    src.write_text(stream.text())
    floe(*sink_args(tmp_path, "upsert", stream, 20), "--input", src)
    snaps = check_snapshots(tmp_path, stream, "upsert")
    assert (10**6, "last", None, None, None, None) in snaps[-1][2]


def test_a_newer_sink_version_fences_an_older_one_at_start(floe, tmp_path):
    stream = Stream(15, steps=30)
    src = tmp_path / "in.ndjson"
    src.write_text(stream.text())
    floe(*sink_args(tmp_path, "upsert", stream, 20), "--sink-version", "2", "--input", src)
    n = len(table_snapshots(db_of(tmp_path), TABLE))
    res = floe(*sink_args(tmp_path, "upsert", stream, 20), "--sink-version", "1", "--input", src,
               check=False)
    assert res.returncode != 0
    assert "fenced" in res.stderr and "version 2" in res.stderr
    assert len(table_snapshots(db_of(tmp_path), TABLE)) == n


def test_a_running_older_sink_is_fenced_and_stops(floe, tmp_path):
    stream = Stream(16, steps=80)
    pv = progress_values(stream)
    old = Running(tmp_path, "upsert", stream, 20, "--sink-version", "1")
    old.feed(lines_until(stream, pv[6]))
    old.wait_settled(pv[6] - 20)
    src = tmp_path / "in.ndjson"
    src.write_text(stream.text())
    floe(*sink_args(tmp_path, "upsert", stream, 20), "--sink-version", "2", "--input", src)
    n = len(table_snapshots(db_of(tmp_path), TABLE))
    old.feed(stream.lines[len(lines_until(stream, pv[6])):])
    code, err = old.close()
    assert code != 0 and "fenced" in err, err
    assert len(table_snapshots(db_of(tmp_path), TABLE)) == n, "the fenced sink commits nothing"
    check_snapshots(tmp_path, stream, "upsert")


def test_a_foreign_append_between_runs_is_passed_over(floe, tmp_path):
    """SPEC 5.1: a pyiceberg INSERT (a snapshot without floe's properties)
    between two runs does not stop the sink: it resumes from its own
    progress, and the foreign row stays."""
    stream = Stream(17, steps=20)
    run = Running(tmp_path, "upsert", stream, 20)
    pv = progress_values(stream)
    run.feed(lines_until(stream, pv[2]))
    reached = run.wait_for_frontier(pv[2] - 20)
    run.kill()
    table = pyiceberg_catalog(db_of(tmp_path), f"file://{tmp_path}/wh").load_table(TABLE)
    row = {c.name: None for c in COLS}
    row["id"] = 123456
    table.append(pa.Table.from_pylist([row], schema=table.schema().as_arrow()))
    src = tmp_path / "in.ndjson"
    src.write_text(stream.text())
    res = floe(*sink_args(tmp_path, "upsert", stream, 20), "--input", src)
    assert f"resuming {TABLE} at frontier [" in res.stderr
    snaps = java_reader.read_snapshots(db_of(tmp_path), f"file://{tmp_path}/wh", TABLE)
    foreign = (123456, None, None, None, None, None)
    assert sorted(snaps[-1][2], key=repr) == sorted(stream.expected(INF, "upsert") + [foreign],
                                                    key=repr)
    assert committed_frontier(db_of(tmp_path), TABLE) == INF and reached is not None


def test_a_replace_snapshot_is_skipped(floe, tmp_path):
    stream = Stream(18, steps=60)
    pv = progress_values(stream)
    run = Running(tmp_path, "append", stream, 20)
    run.feed(lines_until(stream, pv[4]))
    run.wait_for_frontier(pv[4] - 20)
    run.kill()
    java_reader.replace_one_file(db_of(tmp_path), f"file://{tmp_path}/wh", TABLE)
    ops = [s["summary"]["operation"] for s in table_snapshots(db_of(tmp_path), TABLE)]
    assert ops[-1] == "replace"
    src = tmp_path / "in.ndjson"
    src.write_text(stream.text())
    res = floe(*sink_args(tmp_path, "append", stream, 20), "--input", src)
    assert "resuming" in res.stderr
    snaps = java_reader.read_snapshots(db_of(tmp_path), f"file://{tmp_path}/wh", TABLE)
    last = snaps[-1]
    assert last[1]["floe.frontier"] == "[]"
    assert sorted(last[2], key=repr) == stream.expected(INF, "append")


def test_schema_change_under_a_running_sink_is_an_error(tmp_path):
    stream = Stream(19, steps=60)
    pv = progress_values(stream)
    run = Running(tmp_path, "upsert", stream, 20)
    run.feed(lines_until(stream, pv[2]))
    run.wait_for_frontier(pv[2] - 20)
    table = pyiceberg_catalog(db_of(tmp_path), f"file://{tmp_path}/wh").load_table(TABLE)
    with table.update_schema() as upd:
        upd.add_column("extra", StringType())
    n = len(table_snapshots(db_of(tmp_path), TABLE))
    run.feed(stream.lines[len(lines_until(stream, pv[2])):])
    code, err = run.close()
    assert code != 0
    assert "schema or partition spec changed" in err, err
    assert len(table_snapshots(db_of(tmp_path), TABLE)) == n


def test_input_compacted_past_the_resume_point_is_an_error(floe, tmp_path):
    stream = Stream(20, steps=60)
    pv = progress_values(stream)
    run = Running(tmp_path, "upsert", stream, 20)
    run.feed(lines_until(stream, pv[2]))
    reached = run.wait_for_frontier(pv[2] - 20)
    run.kill()
    src = tmp_path / "in.ndjson"
    src.write_text(stream.text())
    args = sink_args(tmp_path, "upsert", stream, 20)
    args[args.index("--as-of") + 1] = str(int(reached) + 100)
    res = floe(*args, "--input", src, check=False)
    assert res.returncode != 0
    assert "compacted past resume upper" in res.stderr


def test_truncations_ahead_of_the_frontier_wait_for_the_batch_holding_them(tmp_path):
    """Committing at each advance (as floe pg does), truncations pushed
    ahead of the frontier land in the batch that holds each of them: a batch
    holding one starts from nothing at it, even when a later truncation
    already waits for the next batch (read by Java Iceberg)."""
    def row(t, k):
        return json.dumps({"time": t, "diff": 1, "row": {"id": k, "name": f"r{k}"}})
    lines = [row(1, 1), row(2, 2), row(3, 3), json.dumps({"progress": 10}),
             row(12, 4), json.dumps({"time": 15, "truncate": True}), row(16, 5),
             json.dumps({"time": 18, "truncate": True}), row(18, 6),
             json.dumps({"time": 25, "truncate": True}), row(26, 7),
             json.dumps({"progress": 20}), row(27, 8), json.dumps({"progress": 30})]
    src = tmp_path / "in.ndjson"
    src.write_text("\n".join(lines) + "\n")
    proc = subprocess.run([tool_bin("test_sink_tool"), "none", "1",
                           f"sqlite:{tmp_path}/catalog.db", f"{tmp_path}/wh", TABLE, SCHEMA, "id",
                           str(src), "advance"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    snaps = java_reader.read_snapshots(db_of(tmp_path), f"file://{tmp_path}/wh", TABLE)
    ops = {s["snapshot-id"]: s["summary"]["operation"]
           for s in table_snapshots(db_of(tmp_path), TABLE)}
    got = {s[1]["floe.frontier"]: (ops[s[0]], sorted(r[0] for r in s[2])) for s in snaps}
    assert got["[10]"] == ("append", [1, 2, 3]), got
    assert got["[20]"] == ("overwrite", [6]), got     # from the truncation at 18 on
    assert got["[30]"] == ("overwrite", [7, 8]), got  # from the one at 25 on
