"""Model-based randomized tests of `floe sink` (SPEC.md sections 2-7).

A Python model (sinkmodel.py) generates change streams and computes the
expected table at every committed frontier.  After the run, every snapshot
is read back by time travel with DuckDB's iceberg extension, with Java
Iceberg (IcebergGenerics, which applies every delete kind) and, where the
table has no equality deletes, with pyiceberg: upsert by position on format
2 and 3 (the default), upsert by position on a copy-on-write table, upsert
by equality, and append.  The seed is in the
test id: rerun one with -k.
"""
import pytest

import java_reader
from iceberg_readers import duckdb_snapshot_rows, files_ever_added, pyiceberg_snapshot_rows
from conftest import maintain_auto
from sinkmodel import (APPEND_EXTRA, COLS, INF, SCHEMA, Stream, frontier_value, metadata_location,
                       model_frontiers)

TABLE = "demo.orders"

# variant -> (mode, extra options)
VARIANTS = {
    "upsert": ("upsert", []),                                  # position deletes, v2
    "upsert-v3": ("upsert", ["--format-version", "3"]),        # deletion vectors
    "upsert-equality": ("upsert", ["--delete-mode", "equality"]),
    "upsert-cow": ("upsert", ["--property", "write.update.mode=copy-on-write"]),  # rewrites
    "append": ("append", []),
}


def mode_of(variant):
    return VARIANTS[variant][0]


def sink_args(tmp_path, variant, stream, interval, close=True, maintain=None):
    """The model's streams are complete inputs: --close records [] at their
    end.  maintain: None (off), "keep" (maintenance on, no expiry) or "all"
    (on, and snapshots expire within the test)."""
    mode, extra = VARIANTS[variant]
    args = ["sink", "--table", TABLE, "--schema", SCHEMA, "--mode", mode,
            "--catalog", f"sqlite:{tmp_path}/catalog.db", "--warehouse", f"{tmp_path}/wh",
            "--commit-interval", str(interval), "--as-of", str(stream.as_of), "--quiet", *extra,
            *(maintain_auto(expire=maintain == "all") if maintain else [])]
    if close:
        args.append("--close")
    if mode == "upsert":
        args += ["--key", "id"]
    return args


def check_files(tmp_path, variant):
    """Position mode never writes an equality delete: v2 writes Parquet
    position delete files, v3 deletion vectors in Puffin files."""
    kinds = set(files_ever_added(f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh",
                                 TABLE).values())
    deletes = {k for k in kinds if k[0] != "DATA"}
    if variant in ("upsert", "upsert-cow"):    # copy-on-write: deletes of a commit's own rows
        assert deletes <= {("POSITION_DELETES", "PARQUET")}, kinds
    elif variant == "upsert-v3":
        assert deletes <= {("POSITION_DELETES", "PUFFIN")}, kinds
    elif variant == "append":
        assert not deletes, kinds
    return deletes


def check_snapshots(tmp_path, stream, variant):
    """Every snapshot (the sink's, and its maintenance's, which must hold the
    same rows as the sink snapshot before it) equals the model at its
    frontier, for Java, DuckDB and (no equality deletes) pyiceberg.  Returns
    the sink's snapshots."""
    mode = mode_of(variant)
    cols = COLS + (APPEND_EXTRA if mode == "append" else [])
    db, wh = f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh"
    snaps = java_reader.read_snapshots(db, wh, TABLE)
    assert snaps, "no snapshot committed"
    own = [frontier_value(s[1]["floe.frontier"]) for s in snaps if "floe.frontier" in s[1]]
    assert own == sorted(set(own)), f"frontiers not strictly increasing: {own}"
    assert own[-1] == INF, "the closed input must end at frontier []"
    frontiers = model_frontiers([s[1] for s in snaps])
    snaps = [s for s, f in zip(snaps, frontiers) if f is not None]
    frontiers = [f for f in frontiers if f is not None]
    ids = [s[0] for s in snaps]
    duck = duckdb_snapshot_rows(metadata_location(db, TABLE), cols, ids)
    deletes = check_files(tmp_path, variant)
    py = (pyiceberg_snapshot_rows(db, wh, TABLE, cols, ids) if variant != "upsert-equality"
          else [None] * len(ids))
    for (snap_id, summary, java_rows), f, duck_rows, py_rows in zip(snaps, frontiers, duck, py):
        want = stream.expected(f, mode)
        assert sorted(java_rows, key=repr) == want, f"Java, snapshot {snap_id} at {summary}"
        assert sorted(duck_rows, key=repr) == want, f"DuckDB, snapshot {snap_id} at {summary}"
        if py_rows is not None:
            assert sorted(py_rows, key=repr) == want, f"pyiceberg, snapshot {snap_id}"
    if variant == "upsert-equality":                  # the streams retract across batches
        assert ("EQUALITY_DELETES", "PARQUET") in deletes, deletes
    return [s for s in snaps if "floe.frontier" in s[1]]


@pytest.mark.parametrize("mode", list(VARIANTS))
@pytest.mark.parametrize("seed", range(6))
def test_model(floe, tmp_path, mode, seed):
    stream = Stream(seed, steps=40, as_of=[0, 0, 20, 5, 0, 100][seed],
                    initial=[0, 30, 40, 0, 10, 60][seed])
    src = tmp_path / "changes.ndjson"
    src.write_text(stream.text())
    interval = [25, 30, 20, 60, 40, 15][seed]
    floe(*sink_args(tmp_path, mode, stream, interval, maintain="keep"), "--input", src)
    snaps = check_snapshots(tmp_path, stream, mode)
    # one snapshot per interval that saw updates (at most one per interval the
    # input spans), plus the snapshot batch and the closing one
    times = [t for t, _, _ in stream.updates]
    most = (max(times) - min(times + [stream.as_of])) // interval + 3
    assert 3 <= len(snaps) <= most, (len(snaps), most)


@pytest.mark.parametrize("mode", list(VARIANTS))
@pytest.mark.parametrize("seed", range(3))
def test_model_with_truncations(floe, tmp_path, mode, seed):
    """Truncation records now and then (inside a batch minted ahead, at its
    start, several in one interval): every snapshot is the model's, for
    Java, DuckDB and pyiceberg; one removed every file the table had."""
    stream = Stream(seed + 50, steps=60, as_of=[0, 10, 0][seed], initial=[0, 20, 5][seed],
                    truncates=0.12)
    assert len(stream.truncations) >= 3
    src = tmp_path / "changes.ndjson"
    src.write_text(stream.text())
    floe(*sink_args(tmp_path, mode, stream, [20, 7, 50][seed]), "--input", src)
    snaps = check_snapshots(tmp_path, stream, mode)
    emptied = [s for s in snaps if int(s[1].get("deleted-data-files", 0)) and
               s[1].get("total-data-files") == s[1].get("added-data-files", "0")]
    assert emptied, "no snapshot removed the table's files"


@pytest.mark.parametrize("mode", list(VARIANTS))
def test_model_over_stdin_with_small_files(floe, tmp_path, mode):
    """Data files roll over at a tiny target size; input comes on stdin."""
    stream = Stream(99, steps=20, keys=200, burst=0.5)
    floe(*sink_args(tmp_path, mode, stream, 20, maintain="all"), "--target-file-size", "4k",
         "--input", "-", input=stream.text())
    check_snapshots(tmp_path, stream, mode)
