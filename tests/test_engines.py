"""Engine operations on floe's tables, done with Iceberg's own Java API
(tests/engines.py -> tests/java floe.Engine), checked with independent
readers: DuckDB's iceberg_scan and Java IcebergGenerics (tests/java_reader.py).

Each test builds a small table with the real `floe sink` (several snapshots,
equality and position deletes), runs one engine operation (or races one
against another writer) and checks what the table holds afterwards.  These
tests check the operations themselves, not how floe resumes afterwards.
"""
import json
import os
import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import engines
import java_reader
from conftest import floe_bin, run_floe
from iceberg_readers import duck
from readers import canon_rows
from restserver import duckdb_rest_rows, rest_s3_server  # noqa: F401
from rowgen import gen_value
from s3server import s3  # noqa: F401
from sinkmodel import COLS, SCHEMA, Stream, committed_frontier, metadata_location

TABLE = "demo.orders"
_duck = []


def duckdb_rows(metadata_location, snapshot_id=None):
    """DuckDB's iceberg_scan, on one connection per process (loading the extension is the slow part)."""
    if not _duck:
        _duck.append(duck())
    con = _duck[0]
    if snapshot_id is None:
        rows = con.execute("SELECT * FROM iceberg_scan(?)", [metadata_location]).fetchall()
    else:
        rows = con.execute("SELECT * FROM iceberg_scan(?, snapshot_from_id = ?)",
                           [metadata_location, snapshot_id]).fetchall()
    return canon_rows(COLS, rows)


class Table:
    """A floe table in a temporary directory and its independent readers."""

    def __init__(self, tmp_path, seed=1, steps=20, keys=25, interval=15, stream=True):
        self.dir = tmp_path
        self.db = f"{tmp_path}/catalog.db"
        self.wh = f"file://{tmp_path}/wh"
        if stream:
            self.stream = Stream(seed, steps=steps, keys=keys, burst=0.3)
            src = tmp_path / "changes.ndjson"
            src.write_text(self.stream.text())
            run_floe(*self.sink_args(interval), "--input", src)

    def sink_args(self, interval=15):
        """Equality mode: the fixture's table holds both delete kinds."""
        return ["sink", "--table", TABLE, "--schema", SCHEMA, "--key", "id",
                "--catalog", f"sqlite:{self.db}", "--warehouse", f"{self.dir}/wh",
                "--commit-interval", str(interval), "--delete-mode", "equality", "--quiet"]

    def __getattr__(self, name):
        """t.compact(...) is engines.compact(db, warehouse, TABLE, ...)."""
        fn = getattr(engines, name)
        return lambda *a, **kw: fn(self.db, self.wh, TABLE, *a, **kw)

    def hold(self, op, *args):
        return engines.hold(op, self.db, self.wh, TABLE, *args)

    def duck(self, snapshot_id=None):
        return sorted(duckdb_rows(metadata_location(self.db, TABLE), snapshot_id), key=repr)

    def java(self, snapshot_id=None):
        """Java IcebergGenerics (tests/java Reader, run in the shared JVM; the table is loaded afresh)."""
        rows = java_reader.read_rows(self.db, self.wh, TABLE, snapshot_id, server=engines.server())
        return sorted(rows, key=repr)

    def rows(self, snapshot_id=None):
        """The rows, read by DuckDB and by Java, which must agree."""
        d, j = self.duck(snapshot_id), self.java(snapshot_id)
        assert d == j, f"DuckDB and Java disagree:\n{d}\n{j}"
        return d

    def files(self, **kw):
        f = engines.files_json(self.db, self.wh, TABLE, **kw)
        for x in f["data-files"] + f["delete-files"] + f["manifests"]:
            assert "//" not in x["path"].split("://", 1)[-1], f"an empty path segment: {x['path']}"
        return f

    def snaps(self):
        return engines.snapshots_json(self.db, self.wh, TABLE)


def without(rows, col, values):
    i = [c.name for c in COLS].index(col)
    return [r for r in rows if r[i] not in values]


def column(rows, col):
    i = [c.name for c in COLS].index(col)
    return [r[i] for r in rows]


def local(path):
    return path.removeprefix("file://").removeprefix("file:")


def deletes_needed(files):
    """Every delete file must still apply to some live data file."""
    data = files["data-files"]
    live = {local(f["path"]) for f in data}
    for d in files["delete-files"]:
        if d["content"] == "equality":
            assert any(f["data-sequence-number"] < d["data-sequence-number"] for f in data), \
                f"an equality delete no data file needs: {d}"
        elif d["referenced-data-file"] is not None:
            assert local(d["referenced-data-file"]) in live, f"a dangling position delete: {d}"


@pytest.fixture
def table(tmp_path):
    t = Table(tmp_path)
    f = t.files()
    kinds = {d["content"] for d in f["delete-files"]}
    assert len(f["data-files"]) >= 4 and kinds == {"equality", "position"}, \
        "the fixture must hold several data files and both delete kinds"
    return t


# ---- compaction ------------------------------------------------------------------------------

def test_compact_all_keeps_rows_and_drops_deletes(table):
    before = table.rows()
    snap = table.snaps()
    res = table.compact()
    assert res["operation"] == "replace" and res["rows"] == len(before)
    assert res["data-sequence-number"] == snap["last-sequence-number"]
    assert table.rows() == before
    f = table.files()
    assert len(f["data-files"]) == 1 and f["delete-files"] == []
    assert f["data-files"][0]["data-sequence-number"] == res["data-sequence-number"]
    assert all(os.path.exists(local(p)) for p in res["added-data-files"])


def test_compact_some_files_keeps_the_deletes_others_need(table):
    before = table.rows()
    f0 = table.files()
    res = table.compact(files=3)
    added = len(res["added-data-files"])
    assert len(res["rewritten-data-files"]) == 3 and added == (1 if res["rows"] else 0)
    assert res["removed-delete-files"], "the rewritten files' own deletes must go"
    assert table.rows() == before
    f = table.files()
    assert len(f["data-files"]) == len(f0["data-files"]) - 3 + added
    kept = {local(p) for p in res["kept-delete-files"]}
    assert kept <= {local(d["path"]) for d in f["delete-files"]}
    deletes_needed(f)
    res = table.compact(files=2, order="smallest")
    assert len(res["rewritten-data-files"]) == 2
    assert table.rows() == before
    deletes_needed(table.files())


def test_compact_with_a_small_target_size_rolls_files(table):
    rows, want = gen_rows(11, range(10000, 11100))
    table.append(rows)
    before = table.rows()
    res = table.compact(target_size=1)          # Iceberg checks the size every 1000 rows
    assert res["rows"] == len(before)
    assert len(res["added-data-files"]) == -(-len(before) // 1000)
    assert table.rows() == before


def feed(proc, lines):
    proc.stdin.write("".join(line + "\n" for line in lines))
    proc.stdin.flush()


def wait_frontier(db, at_least, proc, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        f = committed_frontier(db, TABLE)
        if f is not None and f >= at_least:
            return
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.02)
    raise AssertionError(f"floe did not commit frontier {at_least}")


def test_compact_while_floe_commits_equality_deletes(tmp_path):
    """floe updates rows of the files being compacted while the compaction is
    between planning and commit: the compaction commits (validated from its
    start snapshot) and floe's equality deletes still apply to the compacted
    rows (their data sequence number is the start snapshot's)."""
    t = Table(tmp_path, stream=False)
    proc = subprocess.Popen([floe_bin(), *t.sink_args(10), "--input", "-"], stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        r = random.Random(5)
        rows = {}

        def row(key):
            vals = {"id": key}
            for c in COLS[1:]:
                vals[c.name] = gen_value(r, c)[0]
            return vals

        lines = []
        for key in range(12):
            rows[key] = row(key)
            lines.append(json.dumps({"time": 1 + key % 3, "diff": 1, "row": rows[key]}))
        feed(proc, lines + [json.dumps({"progress": 15})])   # batches [1,15), then [15,25), [25,35)
        wait_frontier(t.db, 15, proc)
        lines = []
        for key in range(12, 20):
            rows[key] = row(key)
            lines.append(json.dumps({"time": 16, "diff": 1, "row": rows[key]}))
        feed(proc, lines + [json.dumps({"progress": 25})])
        wait_frontier(t.db, 17, proc)
        start = t.rows()

        held = t.hold("compact")                      # planned and written, not committed
        lines = []
        for key in list(range(0, 16, 2)):             # update rows of both compacted files
            lines.append(json.dumps({"time": 26, "diff": -1, "row": rows[key]}))
            rows[key] = row(key)
            lines.append(json.dumps({"time": 26, "diff": 1, "row": rows[key]}))
        for key in (1, 13):                           # and delete two
            lines.append(json.dumps({"time": 27, "diff": -1, "row": rows.pop(key)}))
        rows[100] = row(100)                          # a key inserted and updated in one batch,
        lines.append(json.dumps({"time": 26, "diff": 1, "row": rows[100]}))
        feed(proc, lines + [json.dumps({"progress": 27})])   # in two intervals of it:
        lines = [json.dumps({"time": 27, "diff": -1, "row": rows[100]})]
        rows[100] = row(100)                          # floe's own position delete
        lines.append(json.dumps({"time": 27, "diff": 1, "row": rows[100]}))
        feed(proc, lines + [json.dumps({"progress": 35})])
        wait_frontier(t.db, 28, proc)
        floe_snapshot = t.snaps()["current-snapshot-id"]
        want = t.rows()
        assert want != start and len(want) == len(rows)
        kinds = {d["content"] for d in t.files()["delete-files"]}
        assert kinds == {"equality", "position"}, kinds

        res = held.release()
        assert res["operation"] == "replace"
        history = t.snaps()["main-history"]
        assert res["snapshot-id"] == history[0] and floe_snapshot in history
        assert history.index(floe_snapshot) < history.index(res["start-snapshot-id"])
        assert t.rows() == want, "the compacted rows must stay deleted by floe's concurrent deletes"
        assert t.duck(floe_snapshot) == want
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def test_compact_conflicts_with_a_concurrent_position_delete_then_retries(table):
    before = table.rows()
    held = table.hold("compact")
    victim = column(before, "id")[:2]
    d = table.delete_mor("id", victim)            # position deletes on files being compacted
    assert d["rows"] == 2
    with pytest.raises(engines.Conflict, match="position delete|delete"):
        held.release()
    assert table.snaps()["current-snapshot-id"] == d["snapshot-id"], "a conflict must change nothing"
    want = without(before, "id", victim)
    assert table.rows() == want
    res = table.compact()
    assert res["start-snapshot-id"] == d["snapshot-id"]
    assert table.rows() == want
    assert table.files()["delete-files"] == []


def test_cli_exit_status_and_hold_file(table, tmp_path):
    """The command line itself: one JSON line, --hold PATH, exit status 3 on a conflict."""
    cmd = engines._java_cmd("floe.Engine", "compact", table.db, table.wh, "floe", TABLE,
                            "--hold", str(tmp_path / "go"))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (tmp_path / "go.ready").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.02)
    rows = table.rows()
    table.delete_cow("id", column(rows, "id")[:1])          # replaces a file the compaction rewrites
    (tmp_path / "go").touch()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == engines.CONFLICT, (proc.returncode, out, err)
    assert out == "" and err.startswith("conflict: compact: "), err
    with pytest.raises(engines.EngineError, match="exit 2.*unknown operation bogus"):
        engines.run("bogus", table.db, table.wh, TABLE)


# ---- expiry, rollback ------------------------------------------------------------------------

def test_expire_keeps_the_last_snapshots_and_deletes_unreachable_files(table):
    rows, want = gen_rows(2, range(9000, 9010))
    a = table.append(rows)                                    # a file only two snapshots see
    (path,) = map(local, a["added-data-files"])
    table.delete_cow("id", list(range(9000, 9010)))           # ... and that no longer holds rows
    before = table.rows()

    def expire(n):
        snap = table.snaps()
        res = table.expire(retain_last=n)
        keep = set(snap["main-history"][:n]) | {r["snapshot-id"] for r in snap["refs"].values()}
        assert set(res["retained-snapshot-ids"]) == keep
        assert set(res["expired-snapshot-ids"]) == {s["snapshot-id"] for s in snap["snapshots"]} - keep
        assert {s["snapshot-id"] for s in table.snaps()["snapshots"]} == keep
        assert table.rows() == before
        for sid in keep:                                      # what is left still reads
            f = table.files(snapshot_id=sid)
            for x in f["data-files"] + f["delete-files"] + f["manifests"]:
                assert os.path.exists(local(x["path"])), f"expiry deleted a file still needed: {x}"
        return res

    res = expire(3)
    assert res["expired-snapshot-ids"] and os.path.exists(path)
    res = expire(1)
    assert path in map(local, res["deleted-files"]) and not os.path.exists(path)
    for p in res["deleted-files"]:
        assert not os.path.exists(local(p))


def test_rollback_and_rollback_to_frontier_move_main(table):
    snap = table.snaps()
    history = snap["main-history"]
    by_id = {s["snapshot-id"]: s for s in snap["snapshots"]}
    target = history[len(history) // 2]
    want = table.duck(target)
    res = table.rollback(target)
    assert res["snapshot-id"] == target and res["previous-snapshot-id"] == history[0]
    assert table.snaps()["current-snapshot-id"] == target
    assert table.rows() == want
    # forward again (not an ancestor: set-current), then back by frontier
    table.set_current(history[0])
    assert table.snaps()["main-history"] == history
    older = history[-2]
    frontier = by_id[older]["summary"]["floe.frontier"]
    res = table.rollback_to_frontier(frontier)
    assert res["snapshot-id"] == older and res["frontier"] == frontier
    assert table.rows() == table.duck(older)
    with pytest.raises(engines.EngineError, match="no snapshot on main's history"):
        table.rollback_to_frontier([10**15])
    with pytest.raises(engines.EngineError, match="not an ancestor|ancestor"):
        table.rollback(history[0])                 # no longer on main's history


# ---- foreign writes ------------------------------------------------------------------------------

def gen_rows(seed, ids):
    r = random.Random(seed)
    out, want = [], []
    for key in ids:
        vals, exp = {"id": key}, [key]
        for c in COLS[1:]:
            v, e = gen_value(r, c)
            vals[c.name] = v
            exp.append(e)
        out.append(vals)
        want.append(tuple(exp))
    return out, want


def test_append_to_a_branch_leaves_main_alone(table):
    before = table.rows()
    main = table.snaps()["current-snapshot-id"]
    rows, want = gen_rows(3, range(5000, 5012))
    res = table.append(rows, branch="audit")
    assert res["branch"] == "audit" and res["branch-created"] and res["rows"] == len(rows)
    snap = table.snaps()
    assert snap["current-snapshot-id"] == main and snap["refs"]["audit"]["snapshot-id"] == res["snapshot-id"]
    assert table.rows() == before
    assert table.rows(res["snapshot-id"]) == sorted(before + want, key=repr)
    more, want2 = gen_rows(4, range(6000, 6003))
    res2 = table.append(more, branch="audit")
    assert not res2["branch-created"]
    assert table.rows(res2["snapshot-id"]) == sorted(before + want + want2, key=repr)
    assert table.snaps()["current-snapshot-id"] == main


def test_append_to_main_writes_every_value_encoding(table):
    before = table.rows()
    rows, want = gen_rows(7, range(7000, 7040))
    rows[0].update(price="1.5E+3", at="2024-02-29T23:59:59.999999-12:00", tags=["x", None], qty=None)
    want[0] = (7000, want[0][1], None, ("dec", 150000), ["x", None], ("ts", 1709294399999999))
    res = table.append(rows)
    assert res["operation"] == "append" and res["branch"] == "main"
    assert table.rows() == sorted(before + want, key=repr)
    with pytest.raises(engines.EngineError, match=r"ndjson:2: .*qty"):
        table.append([{"id": 1}, {"id": 2, "qty": "nope"}])
    with pytest.raises(engines.EngineError, match="unknown column color"):
        table.append([{"id": 1, "color": "red"}])


def test_delete_mor_position_removes_exactly_the_matching_rows(table):
    before = table.rows()
    names = sorted({n for n in column(before, "name") if n is not None})[:2]
    want = without(before, "name", names)
    deletes0 = len(table.files()["delete-files"])
    res = table.delete_mor("name", names)
    assert res["mode"] == "position" and res["rows"] == len(before) - len(want) > 0
    assert res["operation"] == "delete"
    assert table.rows() == want
    f = table.files()
    new = [d for d in f["delete-files"] if d["path"] in res["added-delete-files"]]
    assert len(new) == len(res["added-delete-files"]) == len(f["delete-files"]) - deletes0
    assert all(d["content"] == "position" and d["referenced-data-file"] for d in new)
    assert len({d["referenced-data-file"] for d in new}) == len(new), "one delete file per data file"
    nothing = table.delete_mor("name", ["no such name"])
    assert nothing["snapshot-id"] is None and nothing["rows"] == 0


def test_delete_mor_equality_and_null(table):
    before = table.rows()
    ids = column(before, "id")[::3]
    res = table.delete_mor("id", ids + [10**12], equality=True)
    assert res["mode"] == "equality" and res["rows"] == len(ids)
    (eq,) = [d for d in table.files()["delete-files"] if d["path"] in res["added-delete-files"]]
    assert eq["content"] == "equality" and eq["records"] == len(ids) + 1
    want = without(before, "id", ids)
    assert table.rows() == want
    res = table.delete_mor("qty", [None])               # null matches null
    want = without(want, "qty", [None])
    assert table.rows() == want and res["rows"] > 0


def test_delete_cow_rewrites_the_files_without_the_rows(table):
    before = table.rows()
    qtys = [q for q in column(before, "qty") if q is not None][:3]
    want = without(before, "qty", qtys)
    deletes0 = table.files()["delete-files"]
    res = table.delete_cow("qty", qtys)
    assert res["operation"] == "overwrite" and res["rows"] == len(before) - len(want)
    assert res["removed-data-files"] and len(res["added-data-files"]) <= len(res["removed-data-files"])
    assert table.rows() == want
    f = table.files()
    live = {local(x["path"]) for x in f["data-files"]}
    assert not live & {local(p) for p in res["removed-data-files"]}
    assert len(f["delete-files"]) == len(deletes0), "copy-on-write adds no delete file"


def test_delete_cow_conflicts_with_a_concurrent_delete(table):
    before = table.rows()
    ids = column(before, "id")
    held = table.hold("delete-cow", "id", json.dumps(ids[:1]))
    table.delete_mor("id", ids[1:2], equality=True)
    with pytest.raises(engines.Conflict):
        held.release()
    assert table.rows() == without(before, "id", ids[1:2])


def test_delete_cow_with_sparks_conflict_filter_loses_a_concurrent_equality_delete(table):
    """Not floe's behaviour, Iceberg's: with the DELETE condition as the conflict
    detection filter (as Spark's copy-on-write sets it), a concurrent equality
    delete of another row of a rewritten file is no conflict (its bounds miss the
    condition), but the rewritten file has a newer sequence number than that
    delete, so the row it deleted comes back.  floe writes such equality deletes
    all the time: a Spark copy-on-write DELETE racing floe can resurrect rows.
    (delete-cow without --spark-filter refuses this commit: see the test above.)"""
    rows, _ = gen_rows(9, [8000, 8001])
    assert len(table.append(rows)["added-data-files"]) == 1      # both rows in one file
    held = table.hold("delete-cow", "id", "[8000]", "--spark-filter")
    table.delete_mor("id", [8001], equality=True)
    assert 8001 not in column(table.rows(), "id")
    held.release()
    after = column(table.rows(), "id")
    assert 8000 not in after
    assert 8001 in after, "the concurrent equality delete was expected to be lost"


# ---- maintenance -----------------------------------------------------------------------------------

def test_rewrite_manifests_merges_them_one_per_content(table):
    table.delete_mor("id", column(table.rows(), "id")[:2])
    before = table.rows()
    f0 = table.files()
    assert len(f0["manifests"]) > 2
    res = table.rewrite_manifests()
    assert res["operation"] == "replace"
    f = table.files()
    assert sorted(m["content"] for m in f["manifests"]) == ["data", "deletes"]
    assert all(m["added"] == 0 and m["deleted"] == 0 for m in f["manifests"])
    assert table.rows() == before

    def seqs(files):
        return sorted((x["path"], x["data-sequence-number"], x["file-sequence-number"])
                      for x in files["data-files"] + files["delete-files"])
    assert seqs(f) == seqs(f0), "a manifest rewrite must keep every file's sequence numbers"


def test_rewrite_position_deletes_one_per_data_file(table):
    rows = table.rows()
    table.delete_mor("id", column(rows, "id")[:3])
    table.delete_mor("id", column(rows, "id")[3:6])        # a second file for the same data files
    rows = table.rows()
    ids = column(rows, "id")
    table.delete_cow("id", ids[: len(ids) // 2])           # leaves the old files' position deletes dangling
    before = table.rows()
    f0 = table.files()
    pos0 = [d for d in f0["delete-files"] if d["content"] == "position"]
    res = table.rewrite_position_deletes()
    assert sorted(res["rewritten-delete-files"]) == sorted(d["path"] for d in pos0)
    assert table.rows() == before
    f = table.files()
    pos = [d for d in f["delete-files"] if d["content"] == "position"]
    refs = [d["referenced-data-file"] for d in pos]
    assert None not in refs and len(set(refs)) == len(refs), "one position delete file per data file"
    deletes_needed(f)
    assert res["deletes"] == sum(d["records"] for d in pos)
    assert res["dropped-deletes"] > 0, "the copy-on-write delete should have left dangling deletes"


def test_remove_orphans_removes_only_unreferenced_files(table, tmp_path):
    table.compact(files=2)                                   # Java-written files too
    before = table.rows()
    loc = Path(local(table.snaps()["location"]))
    some = next(iter(loc.glob("data/*.parquet")))
    planted = [loc / "data" / "orphan-00001.parquet", loc / "metadata" / "stray-m0.avro",
               loc / "data" / "sub" / "deeper.parquet"]
    for p in planted:
        p.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(some, p)
    dry = table.remove_orphans(dry_run=True)
    assert sorted(map(local, dry["removed"])) == sorted(map(str, planted))
    assert all(p.exists() for p in planted)
    res = table.remove_orphans(older_than_ms=1)             # nothing is that old
    assert res["removed"] == []
    res = table.remove_orphans()
    assert sorted(map(local, res["removed"])) == sorted(map(str, planted))
    assert not any(p.exists() for p in planted)
    snap = table.snaps()
    every = engines.batch([["files-json", table.db, table.wh, "floe", TABLE, "--snapshot", s["snapshot-id"]]
                           for s in snap["snapshots"]])
    assert len(every) == len(snap["snapshots"])
    for s, f in zip(snap["snapshots"], every):
        for x in f["data-files"] + f["delete-files"] + f["manifests"]:
            assert os.path.exists(local(x["path"])), x
        assert os.path.exists(local(s["manifest-list"]))
    assert os.path.exists(local(snap["metadata-location"]))
    assert table.duck() == before
    assert table.java() == before, "Java reads the table after orphan removal"


def test_v3_deletion_vectors_and_compaction(table):
    before = table.rows()
    res = table.set_property("format-version", "3")
    assert res["format-version"] == 3
    ids = column(before, "id")
    d1 = table.delete_mor("id", ids[:2])
    assert d1["mode"] == "dv"
    d2 = table.delete_mor("id", ids[2:4])
    assert d2["mode"] == "dv"
    want = without(before, "id", ids[:4])
    assert table.rows() == want
    dvs = [d for d in table.files()["delete-files"] if d["content"] == "dv"]
    refs = [d["referenced-data-file"] for d in dvs]
    assert len(refs) == len(set(refs)), "at most one deletion vector per data file"
    res = table.compact()
    assert table.rows() == want
    assert table.files()["delete-files"] == []


def test_batch_set_property_and_metadata(table):
    ops = [["set-property", table.db, table.wh, "floe", TABLE, "commit.retry.num-retries", "7"],
           ["rewrite-manifests", table.db, table.wh, "floe", TABLE],
           ["snapshots-json", table.db, table.wh, "floe", TABLE]]
    a, b, c = engines.batch(ops)
    assert a["properties"]["commit.retry.num-retries"] == "7"
    assert c["current-snapshot-id"] == b["snapshot-id"] == c["main-history"][0]
    assert c["properties"]["commit.retry.num-retries"] == "7"
    assert table.remove_property("commit.retry.num-retries")["properties"].get(
        "commit.retry.num-retries") is None
    with pytest.raises(engines.EngineError, match="no top-level column nope"):
        table.delete_mor("nope", [1])
    with pytest.raises(engines.EngineError, match="unknown option --bogus"):
        engines.run("compact", table.db, table.wh, TABLE, "--bogus", "1")


# ---- REST catalog, S3 warehouse ---------------------------------------------------------------

def test_operations_over_rest_on_s3(rest_s3_server, s3, tmp_path):  # noqa: F811
    """The operations through Iceberg's RESTCatalog on an S3 warehouse (the
    catalog vends the credentials; S3FileIO writes, lists and deletes)."""
    srv = rest_s3_server
    table = f"{srv.namespace()}.orders"
    stream = Stream(3, steps=12, keys=20, burst=0.5)
    src = tmp_path / "changes.ndjson"
    src.write_text(stream.text())
    run_floe("sink", "--table", table, "--schema", SCHEMA, "--key", "id", "--catalog", srv.uri,
             "--commit-interval", "200", "--input", src, "--quiet", env=srv.floe_env)
    args = (srv.uri, "", table)
    props = srv.client_props

    def java():
        return sorted(java_reader.read_rows(*args, props=props, server=engines.server()), key=repr)

    before = java()
    ids = column(before, "id")
    res = engines.delete_mor(*args, "id", ids[:3], props=props)
    assert res["rows"] == 3 and all(p.startswith("s3://") and "//" not in p[5:]
                                    for p in res["added-delete-files"])
    want = without(before, "id", ids[:3])
    assert java() == want
    res = engines.compact(*args, props=props)
    assert res["rows"] == len(want)
    assert engines.files_json(*args, props=props)["delete-files"] == []
    loc = engines.snapshots_json(*args, props=props)["location"]
    key = loc.split(f"{srv.bucket}/", 1)[1] + "/data/orphan.parquet"
    s3.client().put_object(Bucket=srv.bucket, Key=key, Body=b"PAR1")
    res = engines.remove_orphans(*args, props=props)
    assert res["removed"] == [f"s3://{srv.bucket}/{key}"]
    assert s3.keys(srv.bucket, key) == []
    assert java() == want
    duck_rows = duckdb_rest_rows(srv.uri, table, COLS, [None], srv.duck_setup, srv.duck_attach)[0]
    assert sorted(duck_rows, key=repr) == want
