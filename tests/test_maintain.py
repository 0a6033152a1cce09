"""`floe maintain` (issue P7): compaction, snapshot expiry and orphan removal
on tables floe sink wrote, checked with real readers (DuckDB, Java
IcebergGenerics, pyiceberg) and with Iceberg's own Java maintenance
(ExpireSnapshots, orphan detection with Java's reachability) run afterwards:
they must find nothing floe should have removed, and every file they reach
must still be there.  Manifest merging and metadata-file cleanup, which
happen on every commit, are checked here too.
"""
import json
import os
import subprocess
import threading
import time

import pytest

import engines
import java_reader
from conftest import floe_bin, run_floe
from iceberg_readers import duckdb_rows, pyiceberg_catalog, pyiceberg_snapshot_rows
from sinkmodel import COLS, INF, SCHEMA, Stream, frontier_value, metadata_location

TABLE = "demo.orders"

VARIANTS = {
    "position-v2": [],
    "position-v3": ["--format-version", "3"],
    "equality": ["--delete-mode", "equality"],
}


class T:
    """A table floe sink wrote (maintenance off, so the debt is there)."""

    def __init__(self, tmp_path, variant="position-v2", seed=7, steps=60, keys=40, props=(),
                 close=True):
        tmp_path.mkdir(parents=True, exist_ok=True)
        self.dir = tmp_path
        self.db = f"{tmp_path}/catalog.db"
        self.wh = f"file://{tmp_path}/wh"
        self.variant = variant
        self.stream = Stream(seed, steps=steps, keys=keys, burst=0.4)
        src = tmp_path / "changes.ndjson"
        src.write_text(self.stream.text())
        extra = [a for p in props for a in ("--property", p)]
        run_floe("sink", "--table", TABLE, "--schema", SCHEMA, "--key", "id",
                 "--catalog", f"sqlite:{self.db}", "--warehouse", f"{tmp_path}/wh",
                 "--commit-interval", "15", *(["--close"] if close else []), "--maintain", "off",
                 "--quiet",
                 "--index-dir", str(tmp_path / "index"), *VARIANTS[variant], *extra,
                 "--input", src)

    def maintain(self, *args, check=True):
        res = run_floe("maintain", "--table", TABLE, "--catalog", f"sqlite:{self.db}",
                       "--warehouse", f"{self.dir}/wh", "--json", *args, check=check)
        return json.loads(res.stdout), res

    def want(self):
        return self.stream.expected(INF, "upsert")

    def duck(self, snapshot_id=None):
        return sorted(duckdb_rows(metadata_location(self.db, TABLE), COLS, snapshot_id), key=repr)

    def java(self, snapshot_id=None):
        rows = java_reader.read_rows(self.db, self.wh, TABLE, snapshot_id,
                                     server=engines.server())
        return sorted(rows, key=repr)

    def py(self, snapshot_id=None):
        return sorted(pyiceberg_snapshot_rows(self.db, self.wh, TABLE, COLS, [snapshot_id])[0],
                      key=repr)

    def snaps(self):
        return engines.snapshots_json(self.db, self.wh, TABLE)

    def files(self, **kw):
        return engines.files_json(self.db, self.wh, TABLE, **kw)

    def disk(self):
        out = set()
        for root, _, names in os.walk(f"{self.dir}/wh"):
            out.update(os.path.join(root, n) for n in names if not n.startswith("."))
        return out

    def java_reachable(self):
        """Every file Java reaches from the metadata (its orphan finder's
        reachability), and what it finds unreached (dry run, no age limit)."""
        r = engines.remove_orphans(self.db, self.wh, TABLE, dry_run=True)
        return r


def local(path):
    return path.removeprefix("file://").removeprefix("file:")


def floe_snapshots(t):
    return [s for s in t.snaps()["snapshots"] if "floe.frontier" in s["summary"]]


# ---- compaction --------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", list(VARIANTS))
def test_compaction_keeps_every_row_and_drops_the_deletes(tmp_path, variant):
    t = T(tmp_path, variant)
    want = t.want()
    before = t.files()
    assert len(before["data-files"]) >= 4 and before["delete-files"], "the table needs debt"
    old = [s["snapshot-id"] for s in floe_snapshots(t)]
    report, _ = t.maintain("--compact")
    r = report["report"]
    assert report["ok"] and r["compact_groups"] >= 1
    assert r["files_rewritten"] == len(before["data-files"]) and r["files_written"] == 1
    assert report["after"]["data_files"] == 1 and report["after"]["delete_files"] == 0
    assert report["before"]["delete_files"] == len(before["delete-files"])
    assert t.duck() == want and t.java() == want
    # equality deletes are gone with the files they applied to: pyiceberg reads it now
    assert t.py() == want
    last = t.snaps()["snapshots"][-1]
    assert last["operation"] == "replace"
    assert last["summary"]["floe.maintenance"] == "compaction"
    assert "floe.sink-id" not in last["summary"], "maintenance is no sink's progress"
    after = t.files()
    assert [f["data-sequence-number"] for f in after["data-files"]] == \
        [t.snaps()["snapshots"][-2]["sequence-number"]], "the new file keeps the start's age"
    # time travel to older snapshots still reads them as they were
    for sid in old[-3:]:
        assert t.duck(sid) == t.java(sid)


def test_compaction_of_a_v3_table_writes_no_dangling_dv(tmp_path):
    t = T(tmp_path, "position-v3")
    report, _ = t.maintain("--compact-all")
    assert report["after"]["deletion_vectors"] == 0 and report["after"]["data_files"] == 1
    assert t.java() == t.want() == t.py()


def java_lineage(t):
    """{repr(row): (_row_id, _last_updated_sequence_number)} of every live
    row, as Java's reader resolves them (stored in the file, else inherited)."""
    out = java_reader.java("lineage", t.db, t.wh, TABLE, server=engines.server())
    return {repr(java_reader.canon(r[0])): (r[1], r[2]) for r in out}


def test_compaction_keeps_v3_row_lineage(tmp_path):
    """A row compaction moves keeps its identity: the _row_id and
    _last_updated_sequence_number of every live row are the same before and
    after, through a second compaction too (which reads the values the first
    one wrote into its file rather than inheriting new ones)."""
    t = T(tmp_path, "position-v3")
    want = t.want()
    before = java_lineage(t)
    assert sorted(before) == sorted(map(repr, want))
    ids = [v[0] for v in before.values()]
    assert None not in ids and len(set(ids)) == len(ids)
    assert len({v[1] for v in before.values()}) > 3, "rows of many commits"
    for _ in range(2):
        report, _ = t.maintain("--compact-all")
        assert report["report"]["files_written"] == 1
        assert java_lineage(t) == before
    assert t.duck() == want and t.py() == want


def parquet_facts(path):
    """(the codecs of its column chunks, its row groups) of a Parquet file."""
    import pyarrow.parquet as pq
    md = pq.ParquetFile(local(path)).metadata
    codecs = {md.row_group(g).column(c).compression
              for g in range(md.num_row_groups) for c in range(md.num_columns)}
    return codecs, md.num_row_groups


def test_files_follow_the_tables_write_properties(tmp_path):
    """What a Spark-configured table asks of every writer: data files,
    delete files and compaction's output come out with the codec its
    write.parquet.* / write.delete.parquet.* properties name and row groups
    of the size it sets."""
    t = T(tmp_path, props=["write.parquet.compression-codec=snappy",
                           "write.delete.parquet.compression-codec=gzip",
                           "write.parquet.row-group-size-bytes=1024"])
    files = t.files()
    data = [parquet_facts(f["path"]) for f in files["data-files"]]
    assert data and all(codecs == {"SNAPPY"} for codecs, _ in data)
    assert max(groups for _, groups in data) > 1, "1 KiB row groups split the larger files"
    assert files["delete-files"]
    assert all(parquet_facts(f["path"])[0] == {"GZIP"} for f in files["delete-files"])
    t.maintain("--compact-all")
    (f,) = t.files()["data-files"]
    codecs, groups = parquet_facts(f["path"])
    assert codecs == {"SNAPPY"} and groups > 1
    assert t.duck() == t.want() == t.java()


def test_the_sinks_compression_option_wins_over_the_table_and_a_codec_floe_lacks_is_an_error(
        tmp_path):
    def sink(name, *extra):
        return run_floe("sink", "--table", name, "--schema", SCHEMA, "--key", "id", "--catalog",
                        f"sqlite:{tmp_path}/catalog.db", "--warehouse", f"{tmp_path}/wh",
                        "--index-dir", "", "--input", src, *extra, check=False)
    src = tmp_path / "changes.ndjson"
    src.write_text(Stream(3, steps=5, keys=10).text())
    res = sink("demo.z", "--property", "write.parquet.compression-codec=snappy",
               "--compression", "zstd")
    assert res.returncode == 0, res.stderr
    files = engines.files_json(f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh", "demo.z")
    assert {c for f in files["data-files"] for c in parquet_facts(f["path"])[0]} == {"ZSTD"}
    res = sink("demo.l", "--property", "write.parquet.compression-codec=lz4")
    assert res.returncode != 0
    assert "write.parquet.compression-codec" in res.stderr and "lz4" in res.stderr
    assert not os.path.exists(f"{tmp_path}/wh/demo/l/data"), "no file written"


def test_floe_append_follows_the_table_write_properties_unless_told(tmp_path):
    db, wh = f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh"
    src = tmp_path / "rows.ndjson"
    src.write_text('{"id": 1}\n{"id": 2}\n')
    seen = set()

    def append(*extra):
        """The codecs of the file this append added."""
        run_floe("append", "--table", "demo.a", "--schema", "id bigint", "--input", src,
                 "--catalog", f"sqlite:{db}", "--warehouse", f"{tmp_path}/wh", *extra)
        files = {f["path"] for f in engines.files_json(db, wh, "demo.a")["data-files"]}
        (new,) = files - seen
        seen.update(files)
        return parquet_facts(new)[0]
    assert append() == {"ZSTD"}
    engines.set_property(db, wh, "demo.a", "write.parquet.compression-codec", "gzip")
    assert append() == {"GZIP"}
    assert append("--compression", "snappy") == {"SNAPPY"}


def test_compaction_leaves_files_that_need_nothing(tmp_path):
    """A target below the files' size makes them all big enough: nothing to do."""
    t = T(tmp_path, "position-v2", steps=20)
    before = t.snaps()["current-snapshot-id"]
    sizes = [f["size"] for f in t.files()["data-files"]]
    report, _ = t.maintain("--compact", "--target-file-size", str(min(sizes) // 2 or 1))
    deleted = [f for f in t.files()["data-files"]]
    # only files with at least 30% deleted rows may be rewritten
    assert report["report"]["files_rewritten"] <= len(deleted)
    if report["report"]["compact_groups"] == 0:
        assert t.snaps()["current-snapshot-id"] == before
    assert t.duck() == t.want()


def test_dry_run_changes_nothing(tmp_path):
    t = T(tmp_path)
    loc = metadata_location(t.db, TABLE)
    disk = t.disk()
    report, _ = t.maintain("--dry-run", "--compact-all", "--expire-older-than", "0s",
                           "--retain-last", "1", "--remove-orphans-older-than", "0s")
    r = report["report"]
    assert report["dry_run"] and r["files_rewritten"] > 0 and r["snapshots_expired"] > 0
    assert metadata_location(t.db, TABLE) == loc and t.disk() == disk


# ---- expiry ------------------------------------------------------------------------------------

def test_expiry_keeps_the_last_snapshots_and_java_finds_nothing_more(tmp_path):
    t = T(tmp_path)
    want = t.want()
    t.maintain("--compact")
    n = len(t.snaps()["snapshots"])
    report, _ = t.maintain("--expire-older-than", "0s", "--retain-last", "3")
    r = report["report"]
    snaps = t.snaps()
    kept = [s["snapshot-id"] for s in snaps["snapshots"]]
    tag = snaps["refs"][f"floe-{TABLE}"]["snapshot-id"]
    assert r["snapshots_expired"] == n - len(kept) and len(kept) <= 4 and tag in kept
    assert r["manifest_lists_deleted"] == r["snapshots_expired"]
    assert r["data_files_deleted"] == 0, "the progress tag's snapshot still reaches the old files"
    assert t.duck() == want == t.java()
    for sid in kept:                                   # every kept snapshot still reads
        assert t.duck(sid) == t.java(sid)
    on_disk = {local(p) for p in t.disk()}
    for sid in kept:
        f = t.files(snapshot_id=sid)
        for x in f["data-files"] + f["delete-files"] + f["manifests"]:
            assert local(x["path"]) in on_disk, f"snapshot {sid} lost {x['path']}"
    # Java's ExpireSnapshots with the same settings finds nothing left to do
    j = engines.expire(t.db, t.wh, TABLE, retain_last=3, older_than_ms=int(time.time() * 1000))
    assert j["expired-snapshot-ids"] == [] and j["deleted-files"] == [], j


def test_expiry_after_the_sink_moves_on_deletes_the_compacted_files(tmp_path):
    """The sink's progress tag keeps its last snapshot, and with it the files
    that snapshot reaches; once the sink commits again (the tag moves past
    the compaction) the compacted files are reached by no snapshot, and
    expiry deletes them, and only them."""
    t = T(tmp_path, close=False)
    t.maintain("--compact")
    old = {local(f["path"]) for s in t.snaps()["snapshots"][:-1]
           for f in t.files(snapshot_id=s["snapshot-id"])["data-files"]}
    live = {local(f["path"]) for f in t.files()["data-files"]}
    report, _ = t.maintain("--expire-older-than", "0s", "--retain-last", "1")
    assert report["report"]["data_files_deleted"] == 0, "the tag still reaches them"
    base = t.stream.frontier + 10_000
    more = [json.dumps({"time": base + i, "diff": 1, "row": {"id": 1000 + i, "name": "n"}})
            for i in range(5)] + [json.dumps({"progress": base + 10})]
    run_floe("sink", "--table", TABLE, "--catalog", f"sqlite:{t.db}", "--warehouse",
             f"{tmp_path}/wh", "--key", "id", "--maintain", "off", "--quiet",
             "--index-dir", str(tmp_path / "index"), "--input", "-", input="\n".join(more) + "\n")
    report, _ = t.maintain("--expire-older-than", "0s", "--retain-last", "1")
    gone = {p for p in old - live if not os.path.exists(p)}
    assert report["report"]["data_files_deleted"] == len(old - live) and gone == old - live
    for f in t.files()["data-files"] + t.files()["delete-files"]:
        assert os.path.exists(local(f["path"]))
    assert len(t.duck()) == len(t.want()) + 5
    j = engines.expire(t.db, t.wh, TABLE, retain_last=1, older_than_ms=int(time.time() * 1000))
    assert j["deleted-files"] == [], j


# ---- orphans -----------------------------------------------------------------------------------

def test_orphans_of_a_killed_writer_are_removed_after_the_window(tmp_path):
    t = T(tmp_path, steps=30)
    data = f"{tmp_path}/wh/demo/orders/data"
    meta = f"{tmp_path}/wh/demo/orders/metadata"
    old = [f"{data}/data-killed-{i}.parquet" for i in range(3)] + [f"{meta}/lost-m0.avro"]
    young = f"{data}/data-in-flight.parquet"
    for p in old + [young]:
        with open(p, "wb") as f:
            f.write(b"PAR1 not really")
    two_days_ago = time.time() - 2 * 86400
    for p in old:
        os.utime(p, (two_days_ago, two_days_ago))
    want = t.want()
    report, _ = t.maintain("--remove-orphans")          # default window: one day
    r = report["report"]
    assert r["orphans_found"] == 5 and r["orphans_deleted"] == 4 and r["orphans_too_young"] == 1
    assert not any(os.path.exists(p) for p in old) and os.path.exists(young)
    assert t.duck() == want == t.java()
    # Java's reachability finds exactly the young file unreached, and reaches
    # nothing floe removed
    j = t.java_reachable()
    assert [local(p) for p in j["removed"]] == [young], j
    report, _ = t.maintain("--remove-orphans-older-than", "0s")
    assert report["report"]["orphans_deleted"] == 1
    assert engines.remove_orphans(t.db, t.wh, TABLE, dry_run=True)["removed"] == []


def test_metadata_files_past_the_log_are_orphans_and_the_log_is_bounded(tmp_path):
    """previous-versions-max bounds the log; with delete-after-commit off the
    files past it stay until orphan removal takes them."""
    t = T(tmp_path, steps=40, props=["write.metadata.previous-versions-max=5",
                                     "write.metadata.delete-after-commit.enabled=false"])
    meta = f"{tmp_path}/wh/demo/orders/metadata"
    files = [n for n in os.listdir(meta) if n.endswith(".metadata.json")]
    snaps = t.snaps()["snapshots"]
    assert len(files) > 7 and len(snaps) > 7
    report, _ = t.maintain("--remove-orphans-older-than", "0s")
    left = [n for n in os.listdir(meta) if n.endswith(".metadata.json")]
    assert len(left) == 6, left                        # the current one and its log of 5
    assert report["report"]["orphans_deleted"] == len(files) - 6
    assert t.duck() == t.want() == t.java()


def test_delete_after_commit_keeps_only_the_logged_metadata_files(tmp_path):
    """floe's sink-created default, with a small log: old files go at commit time."""
    t = T(tmp_path, steps=40, props=["write.metadata.previous-versions-max=3"])
    meta = f"{tmp_path}/wh/demo/orders/metadata"
    left = sorted(n for n in os.listdir(meta) if n.endswith(".metadata.json"))
    assert len(left) == 4, left
    cat = pyiceberg_catalog(t.db, t.wh).load_table(TABLE)
    assert len(cat.metadata.metadata_log) == 3
    assert t.py() == t.want()


# ---- manifest merging --------------------------------------------------------------------------

def test_manifests_are_merged_on_commit(tmp_path):
    merged = T(tmp_path / "merged", steps=80,
               props=["commit.manifest.min-count-to-merge=4"])
    plain = T(tmp_path / "plain", steps=80, props=["commit.manifest-merge.enabled=false"])
    m, p = merged.files()["manifests"], plain.files()["manifests"]
    # unmerged, every commit that added data left its own data manifest
    adds = [s for s in floe_snapshots(plain) if int(s["summary"].get("added-data-files", 0))]
    assert len([x for x in p if x["content"] == "data"]) == len(adds) > 20, (len(adds), len(p))
    assert len(m) <= 12, (len(m), len(p))
    assert merged.duck() == merged.want() == merged.java() == merged.py()
    # every snapshot of the merged table reads as the plain one's at the same frontier
    fm = {s["summary"]["floe.frontier"]: s["snapshot-id"] for s in floe_snapshots(merged)}
    fp = {s["summary"]["floe.frontier"]: s["snapshot-id"] for s in floe_snapshots(plain)}
    for f in list(fm)[::7]:
        assert merged.duck(fm[f]) == plain.duck(fp[f]), f


# ---- racing a live sink ------------------------------------------------------------------------

def test_maintain_racing_a_live_sink_loses_nothing(tmp_path):
    """A sink commits every interval while `floe maintain` compacts, expires
    and removes orphans again and again: every snapshot the sink left on main
    equals the model at its frontier, and the final table too."""
    db, wh = f"{tmp_path}/catalog.db", f"{tmp_path}/wh"
    stream = Stream(21, steps=400, keys=60, burst=0.3)
    proc = subprocess.Popen([floe_bin(), "sink", "--table", TABLE, "--schema", SCHEMA, "--key",
                             "id", "--catalog", f"sqlite:{db}", "--warehouse", wh,
                             "--commit-interval", "10", "--close", "--maintain", "off",
                             "--quiet", "--index-dir", str(tmp_path / "index"), "--format-version",
                             "3", "--input", "-"], stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    stop = threading.Event()
    runs = []

    def maintainer():
        while not stop.is_set():
            res = subprocess.run([floe_bin(), "maintain", "--table", TABLE, "--catalog",
                                  f"sqlite:{db}", "--warehouse", wh, "--json", "--compact-all",
                                  "--expire-older-than", "0s", "--retain-last", "5",
                                  "--remove-orphans-older-than", "5s"],
                                 capture_output=True, text=True)
            if res.returncode == 0:
                runs.append(json.loads(res.stdout)["report"])
            elif "does not exist" not in res.stderr and "no catalog database" not in res.stderr:
                runs.append({"error": res.stderr})
            time.sleep(0.05)

    th = threading.Thread(target=maintainer)
    th.start()
    try:
        lines = stream.lines
        half = len(lines) // 80 * 40
        for i in range(0, len(lines), 40):
            if i == half:
                # halfway, the feed waits until a compaction has landed (on a loaded
                # machine a sink committing flat out can win every race for a while);
                # the sink, still running, then has to take it in and go on deleting
                end = time.time() + 120
                while time.time() < end and not any(r.get("compact_groups") for r in runs):
                    time.sleep(0.1)
            proc.stdin.write("\n".join(lines[i:i + 40]) + "\n")
            proc.stdin.flush()
            time.sleep(0.02)
        proc.stdin.close()
        assert proc.wait(timeout=300) == 0, proc.stderr.read()
    finally:
        stop.set()
        th.join()
    errors = [r for r in runs if "error" in r]
    assert not errors, errors
    assert sum(r["compact_groups"] for r in runs) >= 1, runs
    assert sum(r["snapshots_expired"] for r in runs) >= 3, runs
    whf = f"file://{wh}"
    snaps = java_reader.read_snapshots(db, whf, TABLE)
    checked = 0
    for sid, summary, rows in snaps:
        if "floe.frontier" in summary:
            want = stream.expected(frontier_value(summary["floe.frontier"]), "upsert")
            assert sorted(rows, key=repr) == want, f"snapshot {sid} at {summary['floe.frontier']}"
            checked += 1
    assert checked >= 1
    want = stream.expected(INF, "upsert")
    assert sorted(duckdb_rows(metadata_location(db, TABLE), COLS), key=repr) == want
    assert sorted(pyiceberg_snapshot_rows(db, whf, TABLE, COLS, [None])[0], key=repr) == want
