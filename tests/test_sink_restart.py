"""Restart tests: `floe sink` is killed with SIGKILL at random points and run
again over the same input until it finishes.  The final table, and every
snapshot on the way, must equal the model: nothing duplicated, nothing lost,
frontiers strictly increasing."""
import random

import pytest

from conftest import floe_bin
import java_reader
from iceberg_readers import duckdb_rows
from sinkmodel import (APPEND_EXTRA, COLS, INF, Stream, frontier_value, kill_until_done,
                       metadata_location, table_snapshots)
from test_sink_model import TABLE, mode_of, sink_args


def check_final(tmp_path, stream, mode):
    """Frontiers strictly increasing; the final table equals the model (Java
    and DuckDB), so no row is duplicated or lost."""
    db = f"{tmp_path}/catalog.db"
    fronts = [frontier_value(s["summary"]["floe.frontier"]) for s in table_snapshots(db, TABLE)
              if "floe.frontier" in s["summary"]]
    assert fronts == sorted(set(fronts)), f"frontiers not strictly increasing: {fronts}"
    assert fronts[-1] == INF
    want = stream.expected(INF, mode)
    java = java_reader.read_rows(db, f"file://{tmp_path}/wh", TABLE)
    assert sorted(java, key=repr) == want, "Java"
    cols = COLS + (APPEND_EXTRA if mode == "append" else [])
    duck = duckdb_rows(metadata_location(db, TABLE), cols)
    assert sorted(duck, key=repr) == want, "DuckDB"
    return fronts


@pytest.mark.parametrize("variant,seed,truncates", [
    ("upsert", 1, 0), ("upsert", 2, 0), ("append", 3, 0), ("append", 4, 0), ("upsert-cow", 5, 0),
    ("upsert-v3", 6, 0.03), ("append", 7, 0.03)])
def test_sigkill_and_rerun_until_done(tmp_path, variant, seed, truncates):
    """(with truncates: truncation records now and then, some replayed below
    a killed run's last commit)"""
    mode = mode_of(variant)
    r = random.Random(seed)
    stream = Stream(seed, steps=300, keys=60, burst=0.3, truncates=truncates)
    assert not truncates or len(stream.truncations) >= 5
    src = tmp_path / "changes.ndjson"
    src.write_text(stream.text())
    args = [floe_bin(), *sink_args(tmp_path, variant, stream, 8, maintain="all"), "--input",
            str(src)]
    kills = kill_until_done(args, r, 0.05, 0.6)
    print(f"seed {seed}: killed {kills} times")
    fronts = check_final(tmp_path, stream, mode)
    print(f"{len(fronts)} snapshots")
