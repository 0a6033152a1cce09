"""`floe sink` as an operator sees it: primary-key warnings, the summary
line, the Prometheus metrics endpoint, bounded memory (spilling), and
options errors.  test_cli_*.py test the status line, /health, signals,
messages and inspect in depth."""
import json
import time
import urllib.request

import java_reader
from sinkmodel import SCHEMA, Stream, table_snapshots
from test_sink_model import TABLE, check_snapshots, sink_args
from test_sink_rules import Running, db_of, progress_values, lines_until
from conftest import free_port


def upd(t, d, row):
    return json.dumps({"time": t, "diff": d, "row": row})


def test_primary_key_violation_is_a_warning_with_key_and_time(floe, tmp_path):
    lines = [upd(3, 1, {"id": 7, "name": "a"}), upd(3, 1, {"id": 7, "name": "b"}),
             upd(4, 1, {"id": 8, "name": "c"})]
    res = floe("sink", "--table", TABLE, "--schema", SCHEMA, "--key", "id", "--catalog",
               f"sqlite:{db_of(tmp_path)}", "--warehouse", f"{tmp_path}/wh", input="\n".join(lines))
    assert "primary key violation" in res.stderr
    assert '"id":7' in res.stderr.replace(" ", "") and "time 3" in res.stderr
    rows = java_reader.read_rows(db_of(tmp_path), f"file://{tmp_path}/wh", TABLE)
    assert sorted(r[1] for r in rows) == ["a", "b", "c"]


def test_no_warning_for_a_synthetic_key(floe, tmp_path):
    lines = [upd(3, 1, {"id": 7, "name": "a"}), upd(3, 1, {"id": 7, "name": "a"})]
    res = floe("sink", "--table", TABLE, "--schema", "id bigint not null, name text", "--mode",
               "upsert", "--catalog", f"sqlite:{db_of(tmp_path)}", "--warehouse", f"{tmp_path}/wh",
               input="\n".join(lines))
    assert "violation" not in res.stderr
    rows = java_reader.read_rows(db_of(tmp_path), f"file://{tmp_path}/wh", TABLE)
    assert rows == [(7, "a"), (7, "a")]


def test_the_summary_shows_updates_snapshots_and_frontier(floe, tmp_path):
    """Off a terminal a short run prints only the summary, on its own line
    (the live status line is tested in test_cli_sink.py)."""
    stream = Stream(41, steps=30)
    res = floe(*[a for a in sink_args(tmp_path, "upsert", stream, 20) if a != "--quiet"],
               input=stream.text())
    assert "\r" not in res.stderr and "\x1b" not in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    n = sum(1 for l in stream.lines if '"time"' in l)
    assert last.startswith("floe: done in ") and f"{n} updates read" in last
    snaps = len(table_snapshots(db_of(tmp_path), TABLE))
    assert f"{snaps} snapshots committed" in last and "at frontier [] (input closed)" in last




def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.status == 200
        text = r.read().decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name.split("{")[0]] = float(value)
    return text, values


def test_metrics_endpoint(tmp_path):
    stream = Stream(42, steps=40)
    port = free_port()
    run = Running(tmp_path, "upsert", stream, 20, "--metrics-addr", f"127.0.0.1:{port}")
    pv = progress_values(stream)
    fed = lines_until(stream, pv[5])
    run.feed(fed)
    run.wait_settled(pv[5] - 20)
    text, m = scrape(port)
    assert '# TYPE floe_snapshots_committed_total counter' in text
    assert '# TYPE floe_commit_duration_seconds summary' in text
    assert 'sink="demo.orders"' in text
    assert m["floe_snapshots_committed_total"] == len(table_snapshots(db_of(tmp_path), TABLE))
    assert m["floe_messages_staged_total"] == sum(1 for l in fed if '"time"' in l)
    assert m["floe_input_frontier"] == pv[5]
    assert m["floe_commit_duration_seconds_count"] == m["floe_snapshots_committed_total"]
    assert m["floe_commit_duration_seconds_sum"] > 0
    for name in ("floe_data_files_written_total", "floe_delete_files_written_total",
                 "floe_close_duration_seconds_sum", "floe_stashed_rows",
                 "floe_commit_failures_total", "floe_commit_conflicts_total",
                 "floe_bytes_staged_total", "floe_messages_committed_total",
                 "floe_bytes_committed_total", "floe_committed_frontier"):
        assert name in m, name
    # every delete file and DV the commits added (written while committing)
    added = sum(int(s["summary"].get("added-delete-files", 0))
                for s in table_snapshots(db_of(tmp_path), TABLE))
    assert added > 0 and m["floe_delete_files_written_total"] == added, (added, m)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10):
        pass
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/nope", timeout=10)
        raise AssertionError("expected 404")
    except urllib.error.HTTPError as e:
        assert e.code == 404
    run.feed(stream.lines[len(fed):])
    code, err = run.close()
    assert code == 0, err


def test_bounded_memory_spills_and_stays_exact(floe, tmp_path):
    """A tiny memory limit forces the stash to spill runs to disk."""
    stream = Stream(43, steps=30, keys=300, burst=0.6)
    floe(*sink_args(tmp_path, "upsert", stream, 200), "--memory-limit", "16k",
         "--spill-dir", str(tmp_path), input=stream.text())
    check_snapshots(tmp_path, stream, "upsert")


def test_option_errors_are_clear(floe, tmp_path):
    base = ["sink", "--table", TABLE, "--schema", SCHEMA, "--catalog", f"sqlite:{db_of(tmp_path)}",
            "--warehouse", f"{tmp_path}/wh"]
    cases = [(["--commit-interval", "0s"], "commit-interval"),
             (["--commit-interval", "5h"], "duration"),
             (["--mode", "merge"], "upsert or append"),
             (["--key", "nope"], "nope"),
             (["--key", "tags"], "equality deletes"),
             (["--mode", "append", "--key", "id"], "upsert"),
             (["--sink-version", "0"], "sink-version"),
             (["--compression", "lz4"], "compression")]
    for extra, word in cases:
        res = floe(*base, *extra, input="", check=False)
        assert res.returncode != 0, extra
        assert word in res.stderr, (extra, res.stderr)
    res = floe("sink", "--table", "nodot", "--schema", SCHEMA, input="", check=False)
    assert res.returncode != 0 and "NS.NAME" in res.stderr
