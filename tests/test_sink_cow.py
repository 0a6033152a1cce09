"""Copy-on-write upserts (write.update.mode=copy-on-write): each commit
rewrites the data files it deletes rows from, so readers of the table meet
no delete file from the sink at all, and the key index re-points the rows
the rewrite moved (by the rewrite's moves; after a restart, by reading the
snapshot back).

Every snapshot of the sink on main's history and the final table are checked
against the model with Java IcebergGenerics and DuckDB, the final table with
pyiceberg (check_position); the delete files are read from the manifests
by pyiceberg (the current snapshot's) and Java (what each snapshot added).
"""
import re
import time

import pytest

import engines
from conftest import maintain_auto
from iceberg_readers import pyiceberg_catalog
from sinkmodel import Stream
from test_sink_engines import TABLE, check, lines_until, main_history, progress_points
from test_sink_position import (JavaCompactor, PositionSink, Running, check_position, metric,
                                stream_beside)

COW = ["--property", "write.update.mode=copy-on-write"]


class CowSink(PositionSink):
    """A PositionSink on a table created with write.update.mode=copy-on-write."""

    def args(self, *extra):
        return super().args(*COW, *extra)


def live_delete_files(sink):
    """Delete files (position, equality, DVs) the current snapshot holds."""
    t = pyiceberg_catalog(sink.db, sink.wh).load_table(TABLE)
    snap = t.current_snapshot()
    out = []
    for m in snap.manifests(t.io):
        for e in m.fetch_manifest_entry(t.io, discard_deleted=True):
            if e.data_file.content.name != "DATA":
                out.append(e.data_file.file_path)
    return out


def deletes_of_committed_rows(sink):
    """Delete files a snapshot of the sink added against rows committed
    before it, as Java reads the manifests (copy-on-write leaves only
    deletes of rows the same commit wrote: a key updated twice within one
    batch)."""
    out = []
    for snap in sink_snapshots(sink):
        files = engines.files_json(sink.db, sink.wh, TABLE, snapshot_id=snap["snapshot-id"])
        seq = snap["sequence-number"]
        added = {f["path"] for f in files["data-files"] if f["data-sequence-number"] == seq}
        out += [d["path"] for d in files["delete-files"]
                if d["file-sequence-number"] == seq and d["referenced-data-file"] not in added]
    return out


def sink_snapshots(sink):
    return [s for s in main_history(sink.db) if s["summary"].get("floe.sink-id") == sink.sink_id]


@pytest.mark.parametrize("version", [2, 3])
def test_copy_on_write_commits_rewrite_instead_of_deleting(tmp_path, version):
    """Two runs: the commits that delete rows of earlier files are overwrites
    removing those files, no snapshot adds a delete of a row committed before
    it (as Java reads the manifests), the current snapshot holds no delete
    file after the first run, and every snapshot equals the model."""
    stream = Stream(41, steps=160, keys=40, burst=0.3)
    sink = CowSink(tmp_path, stream, version=version, interval=10)
    pv = progress_points(stream)
    first = lines_until(stream, pv[len(pv) // 2])
    res = sink.run(first, "--maintain", "off")
    assert "warning" not in res.stderr, res.stderr
    assert live_delete_files(sink) == []
    rewrites = [s for s in sink_snapshots(sink) if int(s["summary"].get("deleted-data-files", 0))]
    assert rewrites, "no commit rewrote a file"
    assert all(s["summary"]["operation"] == "overwrite" for s in rewrites)
    assert deletes_of_committed_rows(sink) == []
    check(sink)
    res = sink.run(stream.lines, "--maintain", "off", "--close")
    assert "warning" not in res.stderr, res.stderr
    assert deletes_of_committed_rows(sink) == []
    check(sink)
    check_position(sink)


def test_a_killed_run_s_rewrites_are_read_back_not_replayed(tmp_path):
    """A run killed after some copy-on-write commits left its log but no
    checkpoint: the next run loads the older checkpoint and reads those
    snapshots from the table (their log cannot say where the rewritten rows
    went), and ends exact."""
    stream = Stream(45, steps=80, keys=20)
    sink = CowSink(tmp_path, stream, interval=20)
    pv = progress_points(stream)
    sink.run(lines_until(stream, pv[len(pv) // 4]), "--maintain", "off")   # a checkpoint
    run = Running(sink, "--maintain", "off")
    run.send(lines_until(stream, pv[3 * len(pv) // 4]))
    run.wait_for(lambda: metric(run.port, "floe_snapshots_committed_total") >= 3)
    run.proc.kill()
    run.proc.wait()
    killed = [s for s in sink_snapshots(sink) if int(s["summary"].get("deleted-data-files", 0))]
    assert killed, "the killed run made no copy-on-write commit"
    res = sink.run(stream.lines, "--maintain", "off", "--close")
    m = re.search(r"key index loaded .*: \d+ keys, \d+ logged commit\(s\) replayed, ([1-9]\d*) "
                  r"snapshot\(s\) of other writers read", res.stderr)
    assert m and "rebuilt" not in res.stderr, res.stderr
    check(sink)
    check_position(sink)


def test_the_key_index_follows_the_rewrites_without_reading(tmp_path):
    """Within a run the index re-points the rows each rewrite moved from the
    rewrite's own account: nothing is read back."""
    stream = Stream(42, steps=200, keys=50, burst=0.3)
    sink = CowSink(tmp_path, stream, interval=10)
    run = Running(sink, "--close", "--maintain", "off")
    for i in range(0, len(stream.lines), 20):
        run.send(stream.lines[i:i + 20])
        time.sleep(0.01)
    run.wait_for(lambda: (metric(run.port, "floe_index_rows_moved_total") or 0) > 0)
    moved = metric(run.port, "floe_index_rows_moved_total")
    read = metric(run.port, "floe_index_rows_read_total")
    rewritten = metric(run.port, "floe_rewritten_files_total")
    err = run.finish()
    assert moved > 0 and read == 0, (moved, read)
    assert rewritten > 0 and "data files rewritten" in err, (rewritten, err)
    assert live_delete_files(sink) == []
    check_position(sink)


def test_copy_on_write_with_auto_maintenance_and_a_java_compactor_beside(tmp_path):
    """Java's RewriteFiles races the rewriting sink, and the sink's own
    maintenance runs too: commits conflict and are rewritten again; nothing
    is lost."""
    stream = Stream(43, steps=240, keys=50, burst=0.3)
    sink = CowSink(tmp_path, stream, interval=10)
    head = len(lines_until(stream, progress_points(stream)[3]))
    sink.run(stream.lines[:head])
    with JavaCompactor(sink) as java:
        err = stream_beside(sink, stream, head, *maintain_auto())
    assert java.ok >= 1 and not java.errors, (java.ok, java.conflict, java.errors[:3])
    assert "warning" not in err, err
    assert live_delete_files(sink) == []
    check(sink)
    check_position(sink)


def test_equality_mode_on_a_copy_on_write_table_says_it_merges_on_read(tmp_path):
    stream = Stream(44, steps=60, keys=20, burst=0.3)
    sink = CowSink(tmp_path, stream, interval=10)
    res = sink.run(stream.lines, "--delete-mode", "equality", "--maintain", "off", "--close")
    assert "write.update.mode is copy-on-write" in res.stderr, res.stderr
    check(sink)
