"""Inputs that broke `floe sink` (issue P5): keys of the whole row whose
retraction came before its insertion, times past 2^63, multiplicities that
hung or wrapped, a huge text value's memory, secrets in an S3 endpoint, and
options that were checked only after the table was created.  Each test names
the defect it covers; tables are read back by Java and DuckDB."""
import json
import os
import sqlite3

import pytest

import java_reader
from conftest import ROOT, run_floe
from iceberg_readers import duckdb_rows
from rowgen import Col
from sinkmodel import metadata_location

TABLE = "demo.t"
KV = "id bigint not null, v text"
KV_COLS = [Col("id", "bigint", not_null=True), Col("v", "text")]


def sink(tmp_path, lines, *extra, check=True, env=None, binary=None):
    src = tmp_path / "in.ndjson"
    src.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n"
                           for line in lines))
    args = ["sink", "--table", TABLE, "--catalog", f"sqlite:{tmp_path}/catalog.db", "--warehouse",
            f"{tmp_path}/wh", "--input", src, "--quiet", *extra]
    return run_floe(*args, check=check, env=env)


def upd(t, d, row):
    return {"time": t, "diff": d, "row": row}


def rows(tmp_path, cols=KV_COLS):
    db = f"{tmp_path}/catalog.db"
    java = sorted(java_reader.read_rows(db, f"file://{tmp_path}/wh", TABLE), key=repr)
    duck = sorted(duckdb_rows(metadata_location(db, TABLE), cols), key=repr)
    assert java == duck, (java, duck)
    return java


def tables_in(db):
    if not os.path.exists(db):
        return []
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT table_namespace, table_name FROM iceberg_tables").fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        con.close()


# ---- P5 #5: keys of the whole row -------------------------------------------------------------

@pytest.mark.parametrize("interval", ["1", "7", "100000"])
def test_a_whole_row_key_retracted_later_leaves_only_the_new_row(tmp_path, interval):
    """P5 #5: without --key the retraction at 20 reached the writer before
    the insertion at 10 it cancels; Java and DuckDB read both rows."""
    lines = [{"progress": 5}, upd(10, 1, {"id": 4, "v": "d"}), upd(20, -1, {"id": 4, "v": "d"}),
             upd(20, 1, {"id": 4, "v": "e"}), {"progress": 30}]
    sink(tmp_path, lines, "--schema", KV, "--mode", "upsert", "--commit-interval", interval)
    assert rows(tmp_path) == [(4, "e")]


def test_duplicates_under_a_whole_row_key_within_a_batch(tmp_path):
    """P5 #5: +2 then -2 in one batch left two rows; +2 then -1 must leave one."""
    lines = [upd(10, 2, {"id": 1, "v": "a"}), upd(12, -2, {"id": 1, "v": "a"}),
             upd(10, 2, {"id": 2, "v": "b"}), upd(15, -1, {"id": 2, "v": "b"}), {"progress": 30}]
    sink(tmp_path, lines, "--schema", KV, "--mode", "upsert", "--commit-interval", "100")
    assert rows(tmp_path) == [(2, "b")]


# ---- P5 #6: times past 2^63 --------------------------------------------------------------------

def test_an_empty_closed_input_commits_the_empty_frontier(tmp_path):
    """Nothing read, then --close: one commit recording [] (the freshness
    bookkeeping once passed NULL to memmove here, caught by UBSan)."""
    sink(tmp_path, [], "--schema", KV, "--key", "id", "--close")
    assert rows(tmp_path) == []
    from sinkmodel import committed_frontier
    assert committed_frontier(f"{tmp_path}/catalog.db", TABLE) == float("inf")


def test_timestamp_saturates_instead_of_wrapping(tmp_path):
    """P5 #6: append mode stored the u64 bit pattern: 2^64-1 became -1."""
    big = 2**64 - 1
    lines = [upd(2**63, 1, {"id": 1, "v": "a"}), upd(big, 1, {"id": 2, "v": "b"}),
             upd(5, 1, {"id": 3, "v": "c"})]
    sink(tmp_path, lines, "--schema", KV, "--mode", "append")
    cols = KV_COLS + [Col("_diff", "integer"), Col("_timestamp", "bigint")]
    got = rows(tmp_path, cols)
    assert sorted(r[3] for r in got) == [5, 2**63 - 1, 2**63 - 1]


# ---- P5 #10: multiplicities ---------------------------------------------------------------------

def test_a_huge_diff_is_refused_at_once(tmp_path):
    """P5 #10: a diff of 2^62 in append mode hung the sink writing rows."""
    res = sink(tmp_path, [upd(1, 2**62, {"id": 1, "v": "a"})], "--schema", KV, "--mode",
               "append", check=False)
    assert res.returncode != 0
    assert "in.ndjson:1" in res.stderr and "largest multiplicity" in res.stderr, res.stderr


@pytest.mark.parametrize("mode", ["append", "upsert"])
def test_diffs_that_sum_past_the_bound_are_refused_not_wrapped(tmp_path, mode):
    """P5 #10: diffs summing past 2^63 wrapped (append: one row with _diff
    +1; upsert: the row vanished)."""
    lines = [upd(1, 1, {"id": 9, "v": "z"})] + [upd(3, 999_999, {"id": 1, "v": "a"})] * 3
    res = sink(tmp_path, lines, "--schema", KV, "--mode", mode, check=False)
    assert res.returncode != 0
    assert "sum to a multiplicity beyond" in res.stderr, res.stderr


def test_a_huge_text_value_costs_a_small_multiple_of_its_size(tmp_path):
    """P5 #10: a 200 MB text value cost 1.8 GB (9x).  Measured on the
    release build (ASan's quarantine would hide the figure) as the child's
    own peak resident set."""
    import subprocess
    import sys
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from procstat import PeakWatcher
    floe = os.path.join(ROOT, "build", "floe")
    size = 64 << 20
    src = tmp_path / "big.ndjson"
    with open(src, "w") as f:
        f.write('{"time": 1, "diff": 1, "row": {"id": 1, "v": "' + "x" * size + '"}}\n')
    proc = subprocess.Popen([floe, "sink", "--table", TABLE, "--schema", KV, "--key", "id",
                             "--catalog", f"sqlite:{tmp_path}/catalog.db", "--warehouse",
                             f"{tmp_path}/wh", "--input", str(src), "--quiet"],
                            stderr=subprocess.PIPE, text=True)
    watcher = PeakWatcher(proc.pid)
    watcher.start()
    _, err = proc.communicate(timeout=300)
    peak_mib = watcher.stop()
    assert proc.returncode == 0, err
    assert peak_mib < 6 * size / (1 << 20), f"peak {peak_mib:.0f} MiB for a {size >> 20} MiB value"


# ---- P5 #13: secrets -------------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["flag", "env"])
def test_an_s3_endpoint_with_credentials_is_refused_without_echoing_them(tmp_path, how):
    endpoint = "http://user:hunter2@127.0.0.1:9/?X-Amz-Credential=qwerty"
    extra = ["--s3-endpoint", endpoint] if how == "flag" else []
    env = dict(os.environ, AWS_ENDPOINT_URL_S3=endpoint) if how == "env" else None
    res = sink(tmp_path, [upd(1, 1, {"id": 1, "v": "a"})], "--schema", KV, "--key", "id",
               "--warehouse", "s3://bucket/wh", *extra, check=False, env=env)
    assert res.returncode != 0
    assert "S3 endpoint" in res.stderr, res.stderr
    assert "hunter2" not in res.stderr and "qwerty" not in res.stderr, res.stderr


# ---- options checked before anything is made ---------------------------------------------------------

@pytest.mark.parametrize("case", ["bad key", "missing input", "ftp warehouse", "no schema",
                                  "equality without key"])
def test_a_refused_option_leaves_nothing_behind(tmp_path, case):
    extra = {"bad key": ["--schema", KV, "--key", "nope"],
             "equality without key": ["--schema", KV, "--mode", "upsert", "--delete-mode",
                                      "equality"],
             "missing input": ["--schema", KV, "--key", "id"],
             "ftp warehouse": ["--schema", KV, "--key", "id", "--warehouse", "ftp://h/wh"],
             "no schema": ["--key", "id"]}[case]
    src = tmp_path / ("absent.ndjson" if case == "missing input" else "in.ndjson")
    if case != "missing input":
        src.write_text(json.dumps(upd(1, 1, {"id": 1, "v": "a"})) + "\n")
    args = ["sink", "--table", TABLE, "--catalog", f"sqlite:{tmp_path}/catalog.db", "--quiet",
            "--input", src, *extra]
    if "--warehouse" not in extra:
        args += ["--warehouse", f"{tmp_path}/wh"]
    res = run_floe(*args, check=False)
    assert res.returncode != 0
    want = {"bad key": '--key column "nope" is not in the schema',
            "missing input": "absent.ndjson", "ftp warehouse": "floe stores files",
            "no schema": "pass --schema",
            "equality without key": "--delete-mode equality needs --key"}[case]
    assert want in res.stderr, res.stderr
    assert tables_in(f"{tmp_path}/catalog.db") == []
    assert not os.path.exists(f"{tmp_path}/wh")


def test_inspect_creates_no_catalog(tmp_path):
    res = run_floe("inspect", "--table", TABLE, "--catalog", f"sqlite:{tmp_path}/c.db",
                   check=False)
    assert res.returncode != 0 and "no catalog database" in res.stderr
    assert os.listdir(tmp_path) == []
