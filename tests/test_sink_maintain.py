"""`floe sink --maintain auto` (issue P7): the sink keeps its table healthy
while it streams, on a thread of its own, and loses no update doing it.

Maintenance is made due within each test (tests/conftest.py maintain_auto:
manifests merged early, snapshots expired when a second old, orphans looked
for every second).  Every snapshot the sink and its maintenance left on
main's history, and the final table, are checked against the model with Java
IcebergGenerics and DuckDB, the final table with pyiceberg; Java's own
maintenance (ExpireSnapshots, its orphan finder) then runs on the table and
must find nothing floe should have removed, nor remove anything floe needs.
(The model and restart tests in test_sink_model.py, test_sink_restart.py and
test_rest_sink.py run with maintenance on too.)
"""
import json
import os
import re
import time

import pytest

import engines
from conftest import maintain_auto, run_floe
from sinkmodel import Stream
from test_sink_engines import TABLE, check, lines_until, main_history, progress_points
from test_sink_position import (JavaCompactor, PositionSink, Running, check_position, metric,
                                stream_beside)


class AutoSink(PositionSink):
    """A PositionSink with maintenance on (expire: snapshots go when a second old)."""

    def __init__(self, *a, expire=True, **kw):
        super().__init__(*a, **kw)
        self.expire = expire

    def args(self, *extra):
        return super().args(*maintain_auto(self.expire), *extra)


def rounds(err):
    m = re.search(r"maintenance: (\d+) compactions \((\d+) files rewritten\), (\d+) snapshots "
                  r"expired, (\d+) files removed", err)
    return [int(x) for x in m.groups()] if m else [0, 0, 0, 0]


@pytest.mark.parametrize("version", [2, 3])
def test_a_streaming_sink_keeps_its_table_small_and_exact(tmp_path, version):
    stream = Stream(31, steps=160, keys=50, burst=0.3)
    sink = AutoSink(tmp_path, stream, version=version, interval=10)
    run = Running(sink, "--close", "--quiet")
    for i in range(0, len(stream.lines), 20):
        run.send(stream.lines[i:i + 20])
        time.sleep(0.02)
    run.wait_for(lambda: metric(run.port, "floe_maintenance_compactions_total") >= 2)
    run.wait_for(lambda: metric(run.port, "floe_maintenance_snapshots_expired_total") >= 10)
    # the debt comes down to a bound, however far behind a loaded machine left maintenance
    run.wait_for(lambda: metric(run.port, "floe_table_data_files") < 20)
    data_files = metric(run.port, "floe_table_data_files")
    snapshots = metric(run.port, "floe_table_snapshots")
    made = metric(run.port, "floe_snapshots_committed_total")
    err = run.finish()
    assert "warning" not in err, err
    committed = len([s for s in main_history(sink.db) if "floe.frontier" in s["summary"]])
    files = engines.files_json(sink.db, sink.wh, TABLE)
    # the debt stays bounded while the sink committed many small batches
    assert data_files is not None and data_files < 20, data_files
    assert len(files["manifests"]) <= 12, len(files["manifests"])
    assert snapshots < made / 2, (snapshots, made)
    assert committed >= 1
    assert check(sink) >= 1
    check_position(sink)


@pytest.mark.parametrize("version", [2, 3])
def test_the_key_index_follows_its_own_compactions_without_reading_them(tmp_path, version):
    """The sink's own compactions hand the key index where they moved each
    row, so the index re-points its rows instead of reading the new files
    back; deletes of rows compaction moved land on the new files.  Checked
    at every snapshot against the model, and again after a restart (which
    reads the compactions' snapshots from the table: the moves are gone)."""
    stream = Stream(37, steps=200, keys=60, burst=0.3)
    sink = AutoSink(tmp_path, stream, version=version, interval=10, expire=False)
    pv = progress_points(stream)
    half = lines_until(stream, pv[len(pv) // 2])
    run = Running(sink, "--quiet")
    for i in range(0, len(half), 20):
        run.send(half[i:i + 20])
        time.sleep(0.02)
    run.wait_for(lambda: (metric(run.port, "floe_index_rows_moved_total") or 0) > 0)
    run.wait_for(lambda: metric(run.port, "floe_maintenance_compactions_total") >= 1)
    moved = metric(run.port, "floe_index_rows_moved_total")
    read = metric(run.port, "floe_index_rows_read_total")
    run.finish()
    assert moved > 0 and read < moved, (moved, read)   # a new table: nothing else to read
    assert check(sink) >= 1
    res = sink.run(stream.lines, "--close")
    assert "warning" not in res.stderr, res.stderr
    check(sink)
    check_position(sink)


def settled(run):
    """Wait until the sink committed what it will of the input sent (the
    interval holding the last progress waits for more)."""
    seen = []

    def still():
        seen.append(metric(run.port, "floe_snapshots_committed_total"))
        return len(seen) > 30 and seen[-1] == seen[-31]     # unchanged for 1.5 s
    run.wait_for(still)


def test_after_a_pause_the_key_index_walks_on_instead_of_reading_back(tmp_path):
    """While the sink waits for input, other snapshots come after its last
    commit (Java's RewriteManifests, twice, then its own compactions) and grow
    older than the table's age limit (1 s, two kept).  Expiring them would
    cut the history between the sink's last commit and main's head, and the
    key index would have to compare plans and read files back at the next
    commit.  The sink's own expiry keeps its last commit and everything after
    it, so the index walks forward without reading; the table stays exact."""
    stream = Stream(38, steps=200, keys=60, burst=0.3)
    sink = AutoSink(tmp_path, stream, interval=10)
    pv = progress_points(stream)
    half = lines_until(stream, pv[len(pv) // 2])
    run = Running(sink, "--quiet")
    run.send(half)
    settled(run)
    last = [s for s in main_history(sink.db) if "floe.frontier" in s["summary"]][-1]
    rebuilds = metric(run.port, "floe_index_rebuilds_total")
    read = metric(run.port, "floe_index_rows_read_total")
    for _ in range(2):
        engines.rewrite_manifests(sink.db, sink.wh, TABLE)
    time.sleep(max(0.0, last["timestamp-ms"] / 1000 + 1.5 - time.time()))
    runs = metric(run.port, "floe_maintenance_runs_total")
    run.wait_for(lambda: metric(run.port, "floe_maintenance_runs_total") >= runs + 2)
    history = [s["snapshot-id"] for s in main_history(sink.db)]
    assert last["snapshot-id"] in history, "main's history no longer reaches the sink's commit"
    assert metric(run.port, "floe_maintenance_snapshots_expired_total") > 0
    run.send(stream.lines[len(half):])
    settled(run)
    assert metric(run.port, "floe_index_rebuilds_total") == rebuilds
    assert metric(run.port, "floe_index_rows_read_total") == read    # only walked forward
    assert "warning" not in run.finish()
    check(sink)
    check_position(sink)


def test_java_maintenance_afterwards_finds_nothing_and_breaks_nothing(tmp_path):
    """After an auto-maintained run: Java's ExpireSnapshots with the table's
    own settings and its orphan finder (files older than floe's window) have
    nothing left to do.  Then Java expires everything it may and deletes every
    unreached file; the sink resumes on that table and ends exact."""
    stream = Stream(32, steps=120, keys=40, burst=0.3)
    sink = AutoSink(tmp_path, stream, interval=10)
    pv = progress_points(stream)
    first = lines_until(stream, pv[len(pv) // 2])
    sink.run(first)
    now = int(time.time() * 1000)                   # Java's cutoff: never after floe's
    run_floe("maintain", "--table", TABLE, "--catalog", f"sqlite:{sink.db}", "--warehouse",
             f"{tmp_path}/wh", "--expire")           # what is due by the table's settings
    j = engines.expire(sink.db, sink.wh, TABLE, retain_last=2, older_than_ms=now - 1000)
    assert j["expired-snapshot-ids"] == [] and j["deleted-files"] == [], j
    o = engines.remove_orphans(sink.db, sink.wh, TABLE, older_than_ms=now - 60_000, dry_run=True)
    assert o["removed"] == [], o
    # Java does what it may; nothing floe needs may go
    engines.expire(sink.db, sink.wh, TABLE, retain_last=1, older_than_ms=int(time.time() * 1000))
    engines.remove_orphans(sink.db, sink.wh, TABLE, older_than_ms=int(time.time() * 1000))
    res = sink.run(stream.lines, "--close")
    assert f"resuming {TABLE} at frontier [" in res.stderr, res.stderr
    check_position(sink)


def test_orphans_of_a_killed_run_go_once_past_the_window(tmp_path):
    """A killed run leaves files no metadata reaches; the next run's
    maintenance deletes them once they are past --orphan-age, and Java's
    orphan finder agrees nothing unreached is left."""
    stream = Stream(33, steps=120, keys=40, burst=0.4)
    sink = AutoSink(tmp_path, stream, interval=10)
    run = Running(sink, "--close", "--quiet")
    pv = progress_points(stream)
    run.send(lines_until(stream, pv[len(pv) // 3]))
    run.proc.kill()
    run.proc.wait()
    data = tmp_path / "wh" / "demo" / "orders" / "data"
    planted = data / "data-killed-writer-0.parquet"
    planted.write_bytes(b"PAR1 half written")
    old = time.time() - 3 * 86400
    for name in os.listdir(data):                 # everything old: only the window protects
        os.utime(data / name, (old, old))
    o = engines.remove_orphans(sink.db, sink.wh, TABLE, dry_run=True)
    assert str(planted) in {p.removeprefix("file:").removeprefix("//") for p in o["removed"]}
    run = Running(sink, "--close", "--quiet", "--orphan-age", "1d", "--maintain-budget", "1")
    run.send(stream.lines)
    run.wait_for(lambda: metric(run.port, "floe_maintenance_orphans_removed_total") >= 1)
    run.finish()
    assert not planted.exists()
    left = engines.remove_orphans(sink.db, sink.wh, TABLE,
                                  older_than_ms=int((time.time() - 86400) * 1000), dry_run=True)
    assert left["removed"] == [], left
    check_position(sink)


def test_a_java_compactor_racing_auto_maintenance(tmp_path):
    """Java's RewriteFiles in a loop, floe's own compaction and the sink's
    commits all race: every snapshot and the final table are exact.  (No
    expiry here: expiring the snapshot a running Java job planned from fails
    that job, as it would fail Spark's.)"""
    stream = Stream(34, steps=120, keys=40, burst=0.3)
    sink = AutoSink(tmp_path, stream, interval=30, expire=False)
    head = len(lines_until(stream, progress_points(stream)[3]))
    sink.run(stream.lines[:head])
    with JavaCompactor(sink) as java:
        stream_beside(sink, stream, head, "--quiet", until=lambda run: metric(
            run.port, "floe_maintenance_compactions_total") >= 1)
    assert java.ok >= 2 and not java.errors, (java.ok, java.conflict, java.errors[:3])
    check_position(sink)


def test_metrics_and_inspect_show_the_debt(tmp_path):
    stream = Stream(35, steps=80, keys=40, burst=0.3)
    sink = AutoSink(tmp_path, stream, interval=10)
    run = Running(sink, "--quiet")
    run.send(stream.lines)
    run.wait_for(lambda: metric(run.port, "floe_maintenance_runs_total") >= 1)
    run.wait_for(lambda: metric(run.port, "floe_table_data_files") ==
                 len(engines.files_json(sink.db, sink.wh, TABLE)["data-files"]))
    assert metric(run.port, "floe_table_metadata_bytes") > 0
    run.finish()
    out = json.loads(run_floe("inspect", "--table", TABLE, "--catalog", f"sqlite:{sink.db}",
                              "--warehouse", f"{tmp_path}/wh", "--json").stdout)
    files = engines.files_json(sink.db, sink.wh, TABLE)
    d = out["debt"]
    assert d["data_files"] == len(files["data-files"])
    assert d["delete_files"] == len(files["delete-files"])
    assert d["data_manifests"] + d["delete_manifests"] == len(files["manifests"])
    assert d["snapshots"] == out["snapshot_count"]
    text = run_floe("inspect", "--table", TABLE, "--catalog", f"sqlite:{sink.db}",
                    "--warehouse", f"{tmp_path}/wh").stdout
    assert f"  data files      {d['data_files']} (" in text


def test_maintenance_off_leaves_the_debt(tmp_path):
    stream = Stream(36, steps=60, keys=40, burst=0.3)
    sink = PositionSink(tmp_path, stream, interval=10)
    res = sink.run(stream.lines, "--close", "--maintain", "off")
    assert "maintenance:" not in res.stderr
    snaps = main_history(sink.db)
    assert all("floe.maintenance" not in s["summary"] for s in snaps)
    assert len(engines.files_json(sink.db, sink.wh, TABLE)["data-files"]) >= 5


@pytest.mark.parametrize("version", [2, 3])
def test_a_burst_is_left_compacted_when_the_run_ends(tmp_path, version):
    """Input fed faster than real time (60 steps in one go) outruns a
    maintenance budget kept tiny here (0.01% of wall time: after its first
    round, which comes with the first commit, the thread may not work again
    for ten thousand times that round's length, longer than the run on any
    machine); the final pass when the run ends compacts what is due
    regardless: after exit the table has one data file and no delete file,
    and equals the model.  With --maintain-final 0 the debt stays."""
    stream = Stream(37, steps=60, keys=40, burst=0.3)
    left = {}
    for final in ("0", "10s"):
        (tmp_path / f"final-{final}").mkdir()
        sink = AutoSink(tmp_path / f"final-{final}", stream, version=version, interval=10,
                        expire=False)
        res = sink.run(stream.lines, "--close", "--maintain-budget", "0.01%",
                       "--maintain-final", final)
        assert "warning" not in res.stderr, res.stderr
        files = engines.files_json(sink.db, sink.wh, TABLE)
        left[final] = (len(files["data-files"]), len(files["delete-files"]))
        assert check(sink) >= 1
        check_position(sink)
    assert left["10s"] == (1, 0), left
    # without it debt stays
    assert sum(left["0"]) >= 3, left
