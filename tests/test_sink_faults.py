"""The commit protocol of SPEC.md section 7 under injected catalog faults: a
real sink over a catalog that loses a response, loses a race to a concurrent
compaction, fails before sending, or rejects a request.  Every case ends
with the table equal to the model (read by Java Iceberg)."""
import json
import re
import subprocess
import time

import pytest

import java_reader
from conftest import tool_bin
from sinkmodel import INF, SCHEMA, Stream, frontier_value, table_snapshots

TABLE = "demo.orders"


def run_tool(tmp_path, fault, when, stream, interval=20, *extra):
    src = tmp_path / "in.ndjson"
    src.write_text(stream.text())
    proc = subprocess.run([tool_bin("test_sink_tool"), fault, str(when),
                           f"sqlite:{tmp_path}/catalog.db", f"{tmp_path}/wh", TABLE, SCHEMA, "id",
                           str(src), str(interval), *extra], capture_output=True, text=True,
                          timeout=300)
    assert "AddressSanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    stats = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, stats, proc.stderr


def final_rows_match(tmp_path, stream):
    snaps = java_reader.read_snapshots(f"{tmp_path}/catalog.db", f"file://{tmp_path}/wh", TABLE)
    fronts = [frontier_value(s[1]["floe.frontier"]) for s in snaps if "floe.frontier" in s[1]]
    assert fronts == sorted(set(fronts)), fronts
    for snap_id, summary, rows in snaps:
        if "floe.frontier" in summary:
            want = stream.expected(frontier_value(summary["floe.frontier"]), "upsert")
            assert sorted(rows, key=repr) == want, summary
    return snaps


def test_a_lost_commit_response_is_recognised_not_repeated(tmp_path):
    stream = Stream(31, steps=30)
    code, stats, err = run_tool(tmp_path, "lost-response", 3, stream)
    assert code == 0, err
    assert stats["lost_responses"] == 1
    snaps = final_rows_match(tmp_path, stream)
    fronts = [s[1]["floe.frontier"] for s in snaps]
    assert len(fronts) == len(set(fronts)), "the batch was committed once"
    assert fronts[-1] == "[]"
    assert stats["snapshots"] == len(snaps)


def test_a_busy_compactor_is_rebased_on_past_five_conflicts(tmp_path):
    """Another writer compacts before each of 8 commit attempts in a row:
    every conflict is rebased onto and tried again (a count of 5 bounds
    other failures, not these), and the run ends exact with the
    compactions kept."""
    stream = Stream(34, steps=30)
    code, stats, err = run_tool(tmp_path, "busy-compactor", 8, stream)
    assert code == 0, err
    assert stats["conflicts"] == 8, stats
    snaps = final_rows_match(tmp_path, stream)
    ops = [s["summary"]["operation"] for s in table_snapshots(f"{tmp_path}/catalog.db", TABLE)]
    assert ops.count("replace") == 8
    assert snaps[-1][1]["floe.frontier"] == "[]"


def test_a_compactor_always_first_is_rebased_on_until_the_commit_timeout(tmp_path):
    """A compaction before every commit attempt after the first, forever:
    the run gives up once commit_timeout_ms (here 3 s) has passed since the
    conflicts began, saying so, with what it committed before intact."""
    stream = Stream(35, steps=30)
    start = time.monotonic()
    code, stats, err = run_tool(tmp_path, "busy-compactor", 0, stream, 20, "3000")
    took = time.monotonic() - start
    assert code != 0, err
    m = re.search(r"other writers committed first (\d+) times in (\d+) s; giving up", err)
    assert m and int(m.group(1)) >= 2 and int(m.group(2)) >= 3, err
    assert stats["conflicts"] == int(m.group(1)) and stats["snapshots"] == 1, stats
    assert took >= 3, took
    snaps = final_rows_match(tmp_path, stream)
    assert len([s for s in snaps if "floe.frontier" in s[1]]) == 1


def test_a_conflict_reloads_rechecks_and_retries(tmp_path):
    stream = Stream(32, steps=30)
    code, stats, err = run_tool(tmp_path, "conflict", 4, stream)
    assert code == 0, err
    assert stats["conflicts"] == 1
    snaps = final_rows_match(tmp_path, stream)
    ops = [s["summary"]["operation"] for s in table_snapshots(f"{tmp_path}/catalog.db", TABLE)]
    assert "replace" in ops, "the concurrent compaction is kept"
    assert snaps[-1][1]["floe.frontier"] == "[]"


def test_a_failure_before_sending_is_retried(tmp_path):
    stream = Stream(33, steps=25)
    code, stats, err = run_tool(tmp_path, "unsent", 2, stream)
    assert code == 0, err
    assert stats["failures"] == 1 and stats["lost_responses"] == 0
    snaps = final_rows_match(tmp_path, stream)
    assert snaps[-1][1]["floe.frontier"] == "[]"


def test_a_bad_request_is_fatal_and_commits_nothing_more(tmp_path):
    stream = Stream(34, steps=30)
    code, stats, err = run_tool(tmp_path, "bad-request", 3, stream)
    assert code == 1
    assert "400 Bad Request" in err
    snaps = final_rows_match(tmp_path, stream)
    assert len(snaps) == 2, "two commits landed before the rejected third"
    assert frontier_value(snaps[-1][1]["floe.frontier"]) < INF


def test_endless_conflicts_give_up_after_five_tries(tmp_path):
    stream = Stream(35, steps=30)
    code, stats, err = run_tool(tmp_path, "always-conflict", 2, stream)
    assert code == 1
    assert "failed 5 times" in err
    assert stats["conflicts"] == 5
    snaps = final_rows_match(tmp_path, stream)
    assert len(snaps) == 1
