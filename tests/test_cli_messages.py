"""What every floe command says when something is off: an unknown option is
named with the closest one instead of the whole help, a bad input line is
one readable report (file:line, the error chain once, what to do), and
--help documents the signals and exit statuses."""
import json

import pytest

from sinkmodel import SCHEMA, Stream, committed_frontier
from test_cli_sink import TABLE, db_of, sink_args, upd

TABLE_ARGS = ["--table", "ns.t"]


@pytest.mark.parametrize("argv,typo,near", [
    (["sink", *TABLE_ARGS, "--comit-interval", "1s"], "--comit-interval", "--commit-interval"),
    (["sink", *TABLE_ARGS, "--metrics-adr=:9091"], "--metrics-adr", "--metrics-addr"),
    (["sink", *TABLE_ARGS, "--sinkid", "x"], "--sinkid", "--sink-id"),
    (["sink", "--tabel", "ns.t"], "--tabel", "--table"),
    (["append", *TABLE_ARGS, "--inptu", "x"], "--inptu", "--input"),
    (["inspect", *TABLE_ARGS, "--jsno"], "--jsno", "--json"),
    (["inspect", *TABLE_ARGS, "--limt", "3"], "--limt", "--limit"),
    (["to-parquet", "--ouput", "x"], "--ouput", "--output"),
])
def test_an_unknown_option_names_the_closest(floe, tmp_path, argv, typo, near):
    res = floe(*argv, check=False, cwd=tmp_path)
    assert res.returncode == 2
    cmd = argv[0]
    assert res.stderr == (f"floe: unknown option '{typo}'; did you mean '{near}'? "
                          f"(floe {cmd} --help lists the options)\n"), res.stderr
    assert list(tmp_path.iterdir()) == [], "nothing is created"


def test_an_unknown_option_without_a_close_one(floe, tmp_path):
    res = floe("sink", *TABLE_ARGS, "--frobnicate", check=False, cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr == "floe: unknown option '--frobnicate' (floe sink --help lists the options)\n"


def test_stray_arguments_commands_and_missing_options(floe, tmp_path):
    res = floe("sink", "-table", "ns.t", check=False, cwd=tmp_path)
    assert res.returncode == 2 and "did you mean '--table'?" in res.stderr, res.stderr
    res = floe("snk", check=False)
    assert res.returncode == 2
    assert res.stderr == "floe: unknown command 'snk'; did you mean 'sink'? (floe --help lists " \
                         "the commands)\n"
    res = floe("inspect", check=False)
    assert res.returncode == 2
    assert res.stderr == "floe: --table is required (floe inspect --help lists the options)\n"
    res = floe("append", "--table", "ns.t", check=False)
    assert res.returncode == 2 and "--input is required" in res.stderr
    assert "usage:" not in res.stderr, "no whole help on a mistake"
    res = floe("sink", *TABLE_ARGS, "--commit-interval", check=False, cwd=tmp_path)
    assert res.returncode == 2 and "'--commit-interval' needs a value" in res.stderr
    res = floe("sink", *TABLE_ARGS, "--progress-interval", "soon", check=False, cwd=tmp_path)
    assert res.returncode == 2 and "--progress-interval: 'soon'" in res.stderr
    res = floe("sink", *TABLE_ARGS, "--metrics-linger", "5s", check=False, cwd=tmp_path)
    assert res.returncode == 2 and "--metrics-linger needs --metrics-addr" in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_sink_help_documents_signals_health_and_exit_statuses(floe):
    out = floe("sink", "--help").stdout
    for words in ("SIGTERM", "SIGINT", "SIGHUP", "129, 130, 143", "GET /health", "GET /metrics",
                  "exit status:", "--metrics-linger", "--progress-interval", "freshness",
                  "--quiet"):
        assert words in out, words
    assert "--progress " not in out


def test_a_bad_line_is_one_readable_report(floe, tmp_path):
    src = tmp_path / "in.ndjson"
    src.write_text("\n".join([upd(1, 1, {"id": 1, "name": "a"}), '{"progress": 5}',
                              upd(6, 1, {"id": 2, "nope": 3}), '{"progress": 9}']) + "\n")
    res = floe(*sink_args(tmp_path, "upsert", Stream(0, steps=0), 2), "--input", src,
               check=False)
    assert res.returncode == 1
    lines = res.stderr.splitlines()
    assert len(lines) == 2, res.stderr
    assert lines[0].startswith(f"floe: {src}:3: ") and 'unknown column "nope"' in lines[0]
    assert res.stderr.count("nope") == 1 and res.stderr.count(f"{src}:3") == 1
    frames = lines[0][len(f"floe: {src}:3: "):].split(": ")
    for a, b in zip(frames, frames[1:]):
        assert not b.startswith(a) and not a.startswith(b), frames
    assert lines[1] == ("floe: fix the input and run again: the table stays at its last "
                        "committed frontier [5] (nothing of this run after it is visible)")
    assert "run again to resume" not in res.stderr
    assert committed_frontier(db_of(tmp_path), TABLE) == 5


def test_a_bad_first_line_has_nothing_committed(floe, tmp_path):
    res = floe(*sink_args(tmp_path, "upsert", Stream(0, steps=0), 2), "--input", "-",
               input='{"time": 1, "row": {"id": 1}}\n', check=False)
    assert res.returncode == 1
    assert res.stderr.startswith("floe: <stdin>:1: ") and "diff" in res.stderr, res.stderr
    assert "fix the input and run again: nothing is committed for this sink yet" in res.stderr


def test_append_and_to_parquet_still_work_and_report_lines(floe, tmp_path):
    rows = tmp_path / "rows.ndjson"
    rows.write_text('{"id": 1, "name": "a"}\n\n{"id": 2, "name": "b"}\n')
    cat = ["--catalog", f"sqlite:{tmp_path}/cat.db", "--warehouse", f"{tmp_path}/wh"]
    res = floe("append", "--table", "ns.t", "--schema", "id bigint not null, name text",
               "--input", rows, *cat)
    assert "appended 2 rows in 1 files to ns.t as snapshot" in res.stderr
    info = json.loads(floe("inspect", "--table", "ns.t", "--json", *cat).stdout)
    assert info["live_rows"]["rows"] == 2
    bad = tmp_path / "bad.ndjson"
    bad.write_text('{"id": 3}\n{"id": "x"}\n')
    res = floe("append", "--table", "ns.t", "--input", bad, *cat, check=False)
    assert res.returncode == 1 and f"floe: {bad}:2: " in res.stderr
    assert "nothing of this run was committed" in res.stderr
    out = tmp_path / "o.parquet"
    res = floe("to-parquet", "--schema", SCHEMA, "--input", rows, "--output", out)
    assert "wrote 2 rows" in res.stderr and out.exists()
    res = floe("to-parquet", "--schema", "id bigint", "--input", bad, "--output",
               tmp_path / "p.parquet", check=False)
    assert res.returncode == 1 and f"{bad}:2: " in res.stderr
    assert not (tmp_path / "p.parquet").exists()
