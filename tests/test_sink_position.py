"""Upsert by position (SPEC 6, issue P6): the key index behind position
deletes and deletion vectors, across restarts and what other engines do.

Each test runs `floe sink` (default delete mode: position) on a SQLite
catalog, lets Iceberg's Java API (tests/engines.py) change the table between
or during runs, and checks every snapshot of the sink on main's history and
the final table against the model with Java IcebergGenerics and DuckDB
(test_sink_engines.check), and the final table with pyiceberg.  floe itself
never writes an equality delete in this mode: checked from the manifests.
"""
import json
import re
import shutil
import subprocess
import time
import urllib.request

import pytest

import engines
from conftest import SCALE, floe_bin, run_floe, free_port
from iceberg_readers import duck, pyiceberg_catalog, pyiceberg_snapshot_rows
from sinkmodel import COLS, Stream, metadata_location, table_snapshots
from test_sink_engines import (FOREIGN_ID, TABLE, Sink, canon_foreign, check, foreign_row,
                               lines_until, main_history, progress_points)


class PositionSink(Sink):
    """A Sink with its own index directory and format version."""

    def __init__(self, tmp_path, stream, version=2, **kw):
        super().__init__(tmp_path, stream, "upsert", **kw)
        self.index_dir = tmp_path / "index"
        self.version = version

    def args(self, *extra):
        a = super().args(*extra)
        a.remove("--quiet")
        return a + ["--index-dir", str(self.index_dir), "--format-version", str(self.version),
                    "--progress-interval", "60m"]


def floe_equality_deletes(sink):
    """Equality delete files added by snapshots of the sink (there must be none)."""
    t = pyiceberg_catalog(sink.db, sink.wh).load_table(TABLE)
    ours = {s.snapshot_id for s in t.snapshots()
            if (s.summary or {}).get("floe.sink-id") == sink.sink_id}
    out = []
    for snap in t.snapshots():
        for m in snap.manifests(t.io):
            for e in m.fetch_manifest_entry(t.io, discard_deleted=False):
                if e.data_file.content.name == "EQUALITY_DELETES" and e.snapshot_id in ours:
                    out.append(e.data_file.file_path)
    return out


def check_position(sink, added=(), gone=()):
    """check() plus pyiceberg on the current snapshot and no floe equality delete."""
    check(sink, added, gone)
    assert floe_equality_deletes(sink) == []
    want = sorted([r for r in sink.stream.expected(float("inf"), "upsert") + [a for _, a in added]
                   if r[0] not in {k for _, k in gone}], key=repr)
    cur = main_history(sink.db)[-1]["snapshot-id"]
    py = pyiceberg_snapshot_rows(sink.db, sink.wh, TABLE, COLS, [cur])[0]
    assert sorted(py, key=repr) == want, "pyiceberg, the current snapshot"


@pytest.mark.parametrize("version", [2, 3])
def test_other_engines_between_runs_need_no_rebuild(tmp_path, version):
    """Compaction, expiry, a foreign insert and merge-on-read (position and
    equality on the key) and copy-on-write deletes between runs: the next
    run loads its index, reads only the snapshots it did not write, and
    ends exact."""
    sink = PositionSink(tmp_path, Stream(71, steps=60, keys=30), version)
    pv = progress_points(sink.stream)
    sink.run(lines_until(sink.stream, pv[len(pv) // 3]))
    added, gone = [], []
    rows = [foreign_row(i, "upsert") for i in range(4)]
    sink.engine("append", rows)
    sid = main_history(sink.db)[-1]["snapshot-id"]
    added += [(sid, canon_foreign(r, "upsert")) for r in rows]
    sink.engine("compact")
    res = sink.run(lines_until(sink.stream, pv[2 * len(pv) // 3]))
    assert "key index loaded" in res.stderr and "rebuilt" not in res.stderr, res.stderr
    assert re.search(r"[1-9]\d* snapshot\(s\) of other writers read", res.stderr), res.stderr
    for key, op in [(FOREIGN_ID, ("delete_mor", False)), (FOREIGN_ID + 1, ("delete_mor", True)),
                    (FOREIGN_ID + 2, ("delete_cow", None))]:
        if op[0] == "delete_mor":
            sink.engine("delete_mor", "id", [key], equality=op[1])
        else:
            sink.engine("delete_cow", "id", [key])
        gone.append((main_history(sink.db)[-1]["snapshot-id"], key))
    sink.engine("compact")
    sink.engine("expire", retain_last=3)
    res = sink.run(sink.stream.lines, "--close")
    assert "key index loaded" in res.stderr and "rebuilt" not in res.stderr, res.stderr
    check_position(sink, added, gone)


@pytest.mark.parametrize("version", [2, 3])
def test_an_equality_delete_by_other_columns_is_applied_to_the_index(tmp_path, version):
    """Another writer deletes rows by equality on a column that is not the
    key (Java's equality delete on name): the index, read again from the
    table, applies it as a reader does (the table layer's walker of live
    rows, the same compaction uses), reading that column too, and the run
    goes on exact: the rows it deleted stay deleted, the others stay."""
    sink = PositionSink(tmp_path, Stream(79, steps=60, keys=30), version)
    pv = progress_points(sink.stream)
    sink.run(lines_until(sink.stream, pv[len(pv) // 2]))
    rows = [foreign_row(i, "upsert") for i in range(4)]
    sink.engine("append", rows)
    sid = main_history(sink.db)[-1]["snapshot-id"]
    added = [(sid, canon_foreign(r, "upsert")) for r in rows]
    sink.engine("delete_mor", "name", ["foreign-1", "foreign-2"], equality=True)
    sid = main_history(sink.db)[-1]["snapshot-id"]
    gone = [(sid, FOREIGN_ID + 1), (sid, FOREIGN_ID + 2)]
    res = sink.run(sink.stream.lines, "--close")
    assert res.returncode == 0, res.stderr
    assert "equality delete" not in res.stderr, res.stderr
    sink.engine("compact")               # pyiceberg reads no equality deletes
    check_position(sink, added, gone)


@pytest.mark.parametrize("version", [2, 3])
def test_a_lost_index_is_rebuilt_from_the_table(tmp_path, version):
    """A new machine: the index directory is gone; the sink rebuilds it
    from the table's files (written by floe and by Java's compaction, with
    their position deletes or DVs applied) and ends exact."""
    sink = PositionSink(tmp_path, Stream(72, steps=60, keys=40), version)
    pv = progress_points(sink.stream)
    sink.run(lines_until(sink.stream, pv[len(pv) // 2]))
    sink.engine("compact", files=3)
    shutil.rmtree(sink.index_dir)
    res = sink.run(sink.stream.lines, "--close")
    assert re.search(r"key index rebuilt from the table \(there is no checkpoint\): [1-9]\d* "
                     r"keys from [1-9]\d* data files", res.stderr), res.stderr
    check_position(sink)


def test_a_rollback_under_the_index_is_read_by_comparing_snapshots(tmp_path):
    """main rolled back past the snapshot the stored index reflects: the
    log's commits are not on main any more, so the index is brought to
    main's state by comparing that snapshot (kept by the sink's tag) with
    the current one, file by file, not by replaying its log."""
    sink = PositionSink(tmp_path, Stream(73, steps=50, keys=20))
    pv = progress_points(sink.stream)
    sink.run(lines_until(sink.stream, pv[len(pv) // 3]))
    back = main_history(sink.db)[-1]["summary"]["floe.frontier"]
    sink.run(lines_until(sink.stream, pv[2 * len(pv) // 3]))
    sink.engine("rollback_to_frontier", back)
    res = sink.run(sink.stream.lines, "--close")
    assert "its snapshot compared with the current one" in res.stderr, res.stderr
    assert "rebuilt" not in res.stderr, res.stderr
    check_position(sink)


def test_a_killed_run_replays_its_log_and_an_expired_checkpoint_rebuilds(tmp_path):
    """A run killed after some commits left no checkpoint of its own: the
    next run loads the older checkpoint and replays the killed run's logged
    commits (no rebuild).  When expiry then removes the checkpoint's
    snapshot, the index is rebuilt from the table, never guessed."""
    stream = Stream(78, steps=60, keys=20)
    sink = PositionSink(tmp_path, stream, interval=30)
    pv = progress_points(stream)
    sink.run(lines_until(stream, pv[len(pv) // 4]))               # checkpoint at its end
    first = len(lines_until(stream, pv[len(pv) // 4]))

    def killed_run(upto):
        run = Running(sink)
        done = len(lines_until(stream, pv[upto]))
        run.send(stream.lines[:done])
        run.wait_for(lambda: metric(run.port, "floe_snapshots_committed_total") >= 2)
        run.proc.kill()
        run.proc.wait()
    killed_run(len(pv) // 2)
    res = sink.run(lines_until(stream, pv[3 * len(pv) // 4]))
    m = re.search(r"key index loaded .*: \d+ keys, ([1-9]\d*) logged commit\(s\) replayed",
                  res.stderr)
    assert m and "rebuilt" not in res.stderr, res.stderr
    killed_run(len(pv) - 2)
    sink.engine("expire", retain_last=1)          # the checkpoint's snapshot goes
    res = sink.run(stream.lines, "--close")
    assert "which the table no longer has (expired)" in res.stderr, res.stderr
    assert "key index rebuilt" in res.stderr, res.stderr
    assert first > 0
    check_position(sink)


def test_a_damaged_checkpoint_is_not_trusted(tmp_path):
    sink = PositionSink(tmp_path, Stream(74, steps=30, keys=20))
    pv = progress_points(sink.stream)
    sink.run(lines_until(sink.stream, pv[len(pv) // 2]))
    (ckpt,) = list(sink.index_dir.glob("*/checkpoint"))
    data = bytearray(ckpt.read_bytes())
    data[len(data) // 2] ^= 0x55
    ckpt.write_bytes(bytes(data))
    res = sink.run(sink.stream.lines, "--close")
    assert "key index rebuilt" in res.stderr, res.stderr
    check_position(sink)


def test_keys_of_the_whole_row_delete_one_copy_each(tmp_path):
    """Without --key the whole row is the key and copies are legal: +2 then
    -1 in a later batch leaves one copy, deleted by position."""
    lines = [
        {"time": 1, "diff": 2, "row": {"id": 1, "name": "a"}},
        {"time": 1, "diff": 1, "row": {"id": 2, "name": "b"}},
        {"progress": 10},
        {"time": 12, "diff": -1, "row": {"id": 1, "name": "a"}},
        {"time": 13, "diff": 3, "row": {"id": 2, "name": "b"}},
        {"progress": 20},
        {"time": 25, "diff": -2, "row": {"id": 2, "name": "b"}},
        {"time": 25, "diff": 1, "row": {"id": 1, "name": "a"}},
        {"progress": 30},
    ]
    src = tmp_path / "in.ndjson"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    db, wh = f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh"
    run_floe("sink", "--table", TABLE, "--schema", "id bigint not null, name text", "--mode",
             "upsert", "--catalog", f"sqlite:{db}", "--warehouse", f"{tmp_path}/wh",
             "--commit-interval", "10", "--input", src, "--close", "--quiet",
             "--index-dir", tmp_path / "index")
    t = pyiceberg_catalog(db, wh).load_table(TABLE)
    rows = sorted((r["id"], r["name"]) for r in t.scan().to_arrow().to_pylist())
    assert rows == [(1, "a"), (1, "a"), (2, "b"), (2, "b")]
    # one copy of (1, a) and two of (2, b) deleted by position (a data file's
    # position deletes are folded into one file as they come)
    totals = [(s.summary or {}).get("total-position-deletes") for s in t.snapshots()]
    assert totals[-1] == "3" and "1" in totals, totals


def test_checks_the_index_makes_possible(tmp_path):
    """A retraction of a row other than the key's live row, a retraction of
    a key with no live row, and an insertion for a key that is live in an
    earlier batch are warnings with key and time, counted in metrics."""
    lines = [
        {"time": 1, "diff": 1, "row": {"id": 1, "name": "a"}},
        {"progress": 10},
        {"time": 11, "diff": -1, "row": {"id": 1, "name": "not-a"}},
        {"time": 11, "diff": 1, "row": {"id": 1, "name": "b"}},
        {"time": 12, "diff": -1, "row": {"id": 7, "name": "x"}},
        {"progress": 20},
        {"time": 21, "diff": 1, "row": {"id": 1, "name": "c"}},
        {"progress": 30},
    ]
    src = tmp_path / "in.ndjson"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    db = f"{tmp_path}/catalog.db"
    res = run_floe("sink", "--table", TABLE, "--schema", "id bigint not null, name text",
                   "--key", "id", "--catalog", f"sqlite:{db}", "--warehouse", f"{tmp_path}/wh",
                   "--commit-interval", "10", "--input", src, "--close", "--quiet",
                   "--index-dir", tmp_path / "index")
    err = res.stderr
    assert re.search(r"retraction of key \{\"id\": ?1\} at time 11 names a row that differs", err), err
    assert re.search(r"retraction of key \{\"id\": ?7\} at time 12 has no live row", err), err
    assert re.search(r"primary key violation: key \{\"id\": ?1\} inserted at time 21", err), err
    t = pyiceberg_catalog(db, f"file://{tmp_path}/wh").load_table(TABLE)
    assert sorted(r["name"] for r in t.scan().to_arrow().to_pylist()) == ["b", "c"]


# ---- a compaction racing the running sink ------------------------------------------------------



def metric(port, name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    m = re.search(rf"^{name}{{[^}}]*}} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


class Running:
    """floe sink fed line by line on stdin, its /metrics polled."""

    def __init__(self, sink, *extra):
        self.port = free_port()
        self.sent = 0
        self.proc = subprocess.Popen(
            [floe_bin(), *sink.args(*extra), "--input", "-", "--metrics-addr",
             f"127.0.0.1:{self.port}"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self.wait_for(lambda: metric(self.port, "floe_messages_staged_total") is not None)

    def wait_for(self, cond, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            try:
                if cond():
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                out, err = self.proc.communicate()
                raise AssertionError(f"the sink exited with {self.proc.returncode}:\n{err}")
            time.sleep(0.05)
        raise AssertionError("timed out waiting for the sink")

    def send(self, lines):
        """Send lines and wait until the sink has read them (updates counted,
        progress applied)."""
        updates = sum('"time"' in x for x in lines)
        self.proc.stdin.write("".join(x + "\n" for x in lines))
        self.proc.stdin.flush()
        self.sent += updates
        self.wait_for(lambda: metric(self.port, "floe_messages_staged_total") >= self.sent)
        last = [json.loads(x)["progress"] for x in lines if '"progress"' in x]
        if last:
            self.wait_for(lambda: metric(self.port, "floe_input_frontier") >= last[-1])

    def finish(self):
        out, err = self.proc.communicate(timeout=300)
        assert self.proc.returncode == 0, err
        return err


def test_a_compaction_between_write_and_commit_moves_the_deletes(tmp_path):
    """Deterministic race: the sink has written a batch's deletes against
    files that Java's RewriteFiles replaces before the batch commits.  The
    commit reads the compaction and moves every delete onto the rows' new
    files (or drops it when the row is gone); nothing is lost, and Java's
    own compaction never overwrites a delete floe committed first."""
    stream = Stream(75, steps=80, keys=40, burst=0.3)
    sink = PositionSink(tmp_path, stream, interval=50)
    pv = progress_points(stream)
    start = len(lines_until(stream, pv[len(pv) // 4]))
    sink.run(stream.lines[:start])
    run = Running(sink, "--close")
    rest = stream.lines[start:]
    compactions = 0
    while rest:
        # send up to the next progress point: the open batch now holds
        # deletes of rows in committed files
        cut = next((i for i, x in enumerate(rest) if '"progress"' in x), len(rest) - 1)
        run.send(rest[:cut + 1])
        rest = rest[cut + 1:]
        try:
            sink.engine("compact")
            compactions += 1
        except engines.Conflict:
            pass                                 # floe committed first: Java retries later
    err = run.finish()
    assert compactions >= 3
    retargeted = re.search(r"(\d+) deletes moved onto rewritten files", err)
    assert retargeted and int(retargeted.group(1)) > 0, err
    check_position(sink)


class JavaCompactor:
    """Java's RewriteFiles on the sink's table in a loop on a thread, while
    the `with` block runs; by default after each compaction that lands it
    waits for the sink's next commit (up to a while), then a short random
    pause: a compactor committing back to back, for ever, would leave the
    sink's own commits no window before the commit timeout, and on a slow
    or busy machine a fixed pause can be shorter than one of the sink's
    attempts.  patient=False: every `pause` seconds whatever the sink does.
    `compact` goes to engines.compact.  ok/conflict count how its commits
    went; errors holds any other failure."""

    def __init__(self, sink, patient=True, pause=(0.1, 0.4), **compact):
        import random
        import threading
        self.sink, self.ok, self.conflict, self.errors = sink, 0, 0, []
        self.patient, self.pause, self.compact = patient, pause, compact
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop)
        self.r = random.Random(1)

    def _sink_commits(self):
        try:
            return sum(1 for s in table_snapshots(self.sink.db, TABLE)
                       if "floe.frontier" in s["summary"])
        except Exception:                                 # not created yet, or mid-commit
            return 0

    def _loop(self):
        while not self.stop.is_set():
            seen = self._sink_commits() if self.patient else 0
            try:
                self.sink.engine("compact", **self.compact)
                self.ok += 1
                end = time.time() + 30 * SCALE
                while self.patient and not self.stop.is_set() and time.time() < end and \
                        self._sink_commits() <= seen:
                    self.stop.wait(0.05)
            except engines.Conflict:
                self.conflict += 1
            except Exception as e:
                self.errors.append(str(e))
            self.stop.wait(self.r.uniform(*self.pause))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def stream_beside(sink, stream, head, *extra, until=None):
    """Run the sink on stdin over stream.lines[head:] in small slices; with
    `until`, wait for it (a check on the running sink) before the end."""
    run = Running(sink, "--close", *extra)
    rest = stream.lines[head:]
    for i in range(0, len(rest), 12):
        run.send(rest[i:i + 12])
        time.sleep(0.1)
    if until:
        run.wait_for(lambda: until(run))
    return run.finish()


def test_a_compactor_running_beside_the_sink(tmp_path):
    """A compactor (RewriteFiles) runs in a loop while the sink commits
    every few hundred milliseconds: every snapshot and the final table are
    exact."""
    stream = Stream(76, steps=120, keys=40, burst=0.3)
    sink = PositionSink(tmp_path, stream, interval=30)
    head = len(lines_until(stream, progress_points(stream)[3]))
    sink.run(stream.lines[:head])
    with JavaCompactor(sink) as java:
        stream_beside(sink, stream, head)
    assert java.ok >= 2 and not java.errors, (java.ok, java.conflict, java.errors[:3])
    check_position(sink)


def test_another_process_of_the_sink_keeps_a_private_index(tmp_path):
    """The index directory is locked while a sink uses it: a second process
    of the same sink id (an older version being fenced, say) warns and keeps
    its index in memory instead."""
    stream = Stream(77, steps=20, keys=10)
    sink = PositionSink(tmp_path, stream)
    run = Running(sink)
    res = sink.run([], check=False)
    run.proc.stdin.close()
    run.proc.wait(timeout=60)
    assert "in use by another process" in res.stderr and "in memory only" in res.stderr, res


def test_many_files_with_merged_deletion_vectors_read_by_every_reader(tmp_path):
    """A v3 table whose commits each update keys spread over a dozen files,
    so most data files get a DV that later commits merge: every snapshot is
    read by DuckDB, pyiceberg and Java and equals the model.  (DuckDB 1.5.5
    misapplied DVs sharing one Puffin file here: floe writes one per file.)"""
    import random
    from iceberg_readers import duckdb_snapshot_rows
    import java_reader
    from rowgen import Col
    cols = [Col("id", "bigint", not_null=True), Col("v", "bigint", not_null=True)]
    r = random.Random(5)
    keys, value = 20000, {}
    lines = [json.dumps({"time": 0, "diff": 1, "row": {"id": k, "v": 0}}) for k in range(keys)]
    value = {k: 0 for k in range(keys)}
    lines.append('{"progress": 1}')
    expected = {1: sorted(value.items())}
    for t in range(1, 11):
        for k in r.sample(range(keys), 200):
            lines.append(json.dumps({"time": t, "diff": -1, "row": {"id": k, "v": value[k]}}))
            value[k] = t
            lines.append(json.dumps({"time": t, "diff": 1, "row": {"id": k, "v": t}}))
        lines.append(json.dumps({"progress": t + 1}))
        expected[t + 1] = sorted(value.items())
    src = tmp_path / "in.ndjson"
    src.write_text("\n".join(lines) + "\n")
    db, wh = f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh"
    run_floe("sink", "--table", TABLE, "--schema", "id bigint not null, v bigint not null",
             "--key", "id", "--catalog", f"sqlite:{db}", "--warehouse", f"{tmp_path}/wh",
             "--commit-interval", "1", "--format-version", "3", "--input", src, "--quiet",
             "--index-dir", tmp_path / "index")
    snaps = java_reader.read_snapshots(db, wh, TABLE)
    ids = [s[0] for s in snaps]
    fronts = [int(s[1]["floe.frontier"].strip("[]")) for s in snaps]
    duck = duckdb_snapshot_rows(metadata_location(db, TABLE), cols, ids)
    py = pyiceberg_snapshot_rows(db, wh, TABLE, cols, ids)
    for (sid, _, java_rows), f, d, p in zip(snaps, fronts, duck, py):
        want = expected[f]
        assert sorted(java_rows) == want, f"Java, snapshot {sid} at [{f}]"
        assert sorted(d) == want, f"DuckDB, snapshot {sid} at [{f}]"
        assert sorted(p) == want, f"pyiceberg, snapshot {sid} at [{f}]"
    t = pyiceberg_catalog(db, wh).load_table(TABLE)
    dvs = [task for task in t.scan().plan_files() if task.delete_files]
    assert len(dvs) >= 8, "the commits should leave most data files with a DV"


def garble(path):
    """Bytes in the middle of a file overwritten, its head and tail intact."""
    body = bytearray(path.read_bytes())
    middle = len(body) // 2
    body[middle:middle + 64] = bytes(range(200, 232)) * 2
    path.write_bytes(bytes(body))


def test_an_index_most_of_whose_table_others_rewrote_is_rebuilt(tmp_path):
    """Java compacts the whole table (120,000 rows) between runs: re-pointing
    every key of the stored index would cost more than building a new one,
    so the next run rebuilds (and says why) without loading the stored index
    first (its entries are garbled here: a load would say the checkpoint is
    unusable) and ends exact; a run after a small foreign change still loads
    its index.  The index's memory tier (half of --memory-limit 16m) holds
    about 100,000 keys: every load and rebuild here goes through sorted
    runs."""
    db, wh, index = f"{tmp_path}/catalog.db", f"{tmp_path}/wh", tmp_path / "index"
    n = 120_000
    value = {k: 0 for k in range(n)}

    def run(lines):
        src = tmp_path / "in.ndjson"
        src.write_text("".join(lines))
        return run_floe("sink", "--table", TABLE, "--schema", "id bigint not null, v bigint",
                        "--key", "id", "--catalog", f"sqlite:{db}", "--warehouse", wh,
                        "--index-dir", index, "--maintain", "off", "--memory-limit", "16m",
                        "--input", src)

    def updates(t, keys):
        out = []
        for k in keys:
            out.append('{"time":%d,"diff":-1,"row":{"id":%d,"v":%d}}\n' % (t, k, value[k]))
            out.append('{"time":%d,"diff":1,"row":{"id":%d,"v":%d}}\n' % (t, k, t))
            value[k] = t
        return out + ['{"progress":%d}\n' % (t + 1)]

    run(['{"time":0,"diff":1,"row":{"id":%d,"v":0}}\n' % k for k in range(n)] +
        ['{"progress":1}\n'] + updates(1, range(0, n, 7)))
    engines.compact(db, f"file://{wh}", TABLE)
    (checkpoint,) = index.glob("*/checkpoint")
    garble(checkpoint)
    res = run(updates(2, range(3, n, 11)))
    assert re.search(r"key index rebuilt from the table \(other writers added 1\d{5} rows since "
                     r"the stored index, most of the table: a rebuild is cheaper\)", res.stderr), \
        res.stderr
    engines.delete_mor(db, f"file://{wh}", TABLE, "id", [5, 6])
    del value[5], value[6]
    res = run(updates(3, range(1, n, 13)))
    assert "key index loaded" in res.stderr and "rebuilt" not in res.stderr, res.stderr
    garble(checkpoint)                 # a load notices (CRC) and the run rebuilds
    res = run(updates(4, range(2, n, 17)))
    assert re.search(r"key index rebuilt from the table \(the checkpoint is unusable", res.stderr), \
        res.stderr
    got = duck().execute("SELECT count(*), count(DISTINCT id), sum(id), sum(v) FROM iceberg_scan(?)",
                      [metadata_location(db, TABLE)]).fetchone()
    assert tuple(got) == (len(value), len(value), sum(value), sum(value.values()))


def test_an_equality_delete_scoped_to_another_partition_keeps_the_row(tmp_path):
    """Java's equality delete on the key, placed in a partition where the
    key has no row: Iceberg applies it to that partition's files only, so
    the key's row (in another partition) stays.  The kept key index, which
    reads the delete without a rebuild, keeps it too: the next update of
    the key deletes that row (one row per key, no retraction missing).
    Java reads the table (DuckDB 1.x applies such a delete to every
    partition; pyiceberg reads no equality delete)."""
    import java_reader
    sink = PositionSink(tmp_path, Stream(95, steps=1, keys=1))
    part = ("--partition-by", "name")

    def line(t, d, i, name, qty):
        return json.dumps({"time": t, "diff": d, "row": {"id": i, "name": name, "qty": qty}})

    def java_now():
        return sorted(java_reader.read_snapshots(sink.db, sink.wh, TABLE)[-1][2])

    sink.run([line(0, 1, 1, "a", 1), line(0, 1, 2, "b", 2), '{"progress": 1}'], *part)
    sink.engine("delete_mor", "id", [1], equality=True, in_partition_of=[2])
    assert java_now() == [(1, "a", 1, None, None, None), (2, "b", 2, None, None, None)]
    res = sink.run([line(1, -1, 1, "a", 1), line(1, 1, 1, "a", 10), '{"progress": 2}'], *part)
    assert "key index loaded" in res.stderr and "rebuilt" not in res.stderr, res.stderr
    assert "missing" not in res.stderr, res.stderr
    assert java_now() == [(1, "a", 10, None, None, None), (2, "b", 2, None, None, None)]
