"""`floe sink`, `floe append` and `floe inspect` against Apache Iceberg's REST
catalog server (tests/restserver.py), started once per session on loopback,
in two set-ups: a warehouse of local files, and a warehouse in a bucket of
the S3 server (versitygw, tests/s3server.py) whose credentials the catalog
vends (floe itself is given wrong keys there).

The model-based test (sinkmodel.py) and the SIGKILL restart test run over
REST unchanged but for --catalog http://...; every snapshot is read back by
Java (RESTCatalog + IcebergGenerics) and DuckDB (ATTACH ... TYPE iceberg to
the same REST endpoint) and compared with the model.
"""
import json
import random
import subprocess

import pytest

from conftest import floe_bin, maintain_auto
from restserver import (check_rest_snapshots, duckdb_rest_rows, rest_s3_server,  # noqa: F401
                        rest_server, snapshots)
from s3server import s3  # noqa: F401
from sinkmodel import COLS, INF, SCHEMA, Stream, frontier_value


def rest_sink_args(uri, table, mode, stream, interval, maintain=None):
    """maintain: None (off), "keep" or "all" (as test_sink_model.sink_args)."""
    args = ["sink", "--table", table, "--schema", SCHEMA, "--mode", mode, "--catalog", uri,
            "--commit-interval", str(interval), "--as-of", str(stream.as_of), "--quiet", "--close",
            *(maintain_auto(expire=maintain == "all") if maintain else [])]
    if mode == "upsert":
        args += ["--key", "id"]
    return args


@pytest.fixture(params=["local", "s3"])
def rest(request):
    """The REST server of one set-up: local files or S3 with vended credentials."""
    return request.getfixturevalue({"local": "rest_server", "s3": "rest_s3_server"}[request.param])


@pytest.mark.parametrize("rest,mode,seed", [
    ("local", "upsert", 0), ("local", "upsert", 2), ("local", "append", 1), ("local", "append", 5),
    ("s3", "upsert", 2), ("s3", "append", 1)], indirect=["rest"])
def test_model_over_rest(floe, rest, tmp_path, mode, seed):
    stream = Stream(seed, steps=50, as_of=[0, 0, 20, 5, 0, 100][seed],
                    initial=[0, 30, 40, 0, 10, 60][seed])
    src = tmp_path / "changes.ndjson"
    src.write_text(stream.text())
    table = f"{rest.namespace()}.orders"
    floe(*rest_sink_args(rest.uri, table, mode, stream, [15, 20, 10, 50, 25, 8][seed],
                         maintain="keep"),
         "--input", src, env=rest.floe_env)
    snaps = check_rest_snapshots(rest, table, stream, mode)
    assert 3 <= len(snaps) <= 60, len(snaps)


@pytest.mark.parametrize("rest", ["s3"], indirect=True)
def test_copy_on_write_over_rest_and_s3(floe, rest, tmp_path):
    """A copy-on-write table (write.update.mode) over REST with its warehouse
    on S3: the commits that rewrite files remove them through the catalog,
    and every snapshot equals the model."""
    stream = Stream(2, steps=50, as_of=20, initial=40)
    src = tmp_path / "changes.ndjson"
    src.write_text(stream.text())
    table = f"{rest.namespace()}.orders"
    floe(*rest_sink_args(rest.uri, table, "upsert", stream, 10, maintain="keep"),
         "--property", "write.update.mode=copy-on-write", "--input", src, env=rest.floe_env)
    snaps = check_rest_snapshots(rest, table, stream, "upsert")
    rewrites = [s for s in snaps if int(s[1].get("deleted-data-files", 0)) > 0
                and "floe.frontier" in s[1]]
    assert rewrites, [s[1] for s in snaps]


def own_late_commit(err, table):
    """A REST server finishes a commit whose client was killed: it may land
    after the next run loaded the table.  That run then finds its catch-up
    batch partly covered by its own sink id and version and stops, keeping
    the table at the killed run's frontier (nothing is duplicated); the next
    run resumes from there.  With SQLite the commit dies with the process,
    so this only happens over REST."""
    return (f"sink '{table}' version 1 committed frontier" in err
            and "an earlier run's commit landed late" in err and "run again to resume" in err)


@pytest.mark.parametrize("mode,seed", [("upsert", 1), ("append", 3)])
def test_sigkill_and_rerun_over_rest(rest, tmp_path, mode, seed):
    r = random.Random(seed)
    stream = Stream(seed, steps=300, keys=60, burst=0.3)
    src = tmp_path / "changes.ndjson"
    src.write_text(stream.text())
    table = f"{rest.namespace()}.orders"
    args = [floe_bin(), *rest_sink_args(rest.uri, table, mode, stream, 8, maintain="all"),
            "--input", str(src)]
    kills = late = 0
    for attempt in range(200):
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=rest.floe_env)
        try:
            _, err = proc.communicate(timeout=r.uniform(0.2, 1.2) * (1 + attempt // 20))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            kills += 1
            continue
        assert "AddressSanitizer" not in err and "runtime error" not in err, err
        if proc.returncode != 0 and own_late_commit(err, table):
            late += 1
            continue
        if proc.returncode == 1 and kills and "an earlier run closed this sink's input" in err:
            break        # killed after its last commit landed: the rerun's updates are refused
        assert proc.returncode == 0, err
        break
    else:
        pytest.fail("the sink never finished")
    print(f"killed {kills} times; {late} runs met a late commit of a killed run")
    assert kills >= 2, "the input finished too fast to be interrupted; make it larger"
    fronts = [frontier_value(s["summary"]["floe.frontier"]) for s in snapshots(rest, table)
              if "floe.frontier" in s["summary"]]
    assert fronts == sorted(set(fronts)), f"frontiers not strictly increasing: {fronts}"
    check_rest_snapshots(rest, table, stream, mode, final_only=True)


def test_append_and_inspect_over_rest(floe, rest, tmp_path):
    table = f"{rest.namespace()}.plain"
    src = tmp_path / "rows.ndjson"
    src.write_text("".join(json.dumps({"id": i, "name": f"n{i}"}) + "\n" for i in range(5)))
    env = rest.floe_env
    floe("append", "--table", table, "--schema", "id bigint not null, name text", "--input", src,
         "--catalog", rest.uri, env=env)
    floe("append", "--table", table, "--input", src, "--catalog", rest.uri, env=env)
    out = floe("inspect", "--table", table, "--catalog", rest.uri, "--json", env=env).stdout
    info = json.loads(out)
    assert len(info["snapshots"]) == 2, info
    md = rest.load(table)["metadata"]
    assert sorted(s["snapshot-id"] for s in md["snapshots"]) == \
        sorted(s["snapshot_id"] for s in info["snapshots"])
    cols = COLS[:2]
    rows = duckdb_rest_rows(rest.uri, table, cols, [None], rest.duck_setup, rest.duck_attach)[0]
    assert sorted(rows) == sorted([(i, f"n{i}") for i in range(5)] * 2)


def test_the_sink_resumes_over_rest_from_the_recorded_frontier(floe, rest_server, tmp_path):
    """A first run over part of the input records its frontier; a second run
    over the whole input skips what is below it and closes the table; a third
    run is refused and commits nothing."""
    stream = Stream(7, steps=20)
    src = tmp_path / "changes.ndjson"
    # an input file ends at a progress line (a file's end closes its last time)
    cut = next(i for i in range(len(stream.lines) // 2, len(stream.lines))
               if stream.lines[i].startswith('{"progress"'))
    src.write_text("\n".join(stream.lines[:cut + 1]) + "\n")
    table = f"{rest_server.namespace()}.orders"
    args = rest_sink_args(rest_server.uri, table, "upsert", stream, 10)
    open_args = [a for a in args if a != "--close"]
    floe(*open_args, "--input", src)
    first = snapshots(rest_server, table)
    mid = frontier_value(first[-1]["summary"]["floe.frontier"])
    assert 0 < mid < INF
    src.write_text(stream.text())
    res = floe(*args, "--input", src)
    assert f"resuming {table} at frontier [{mid}]" in res.stderr
    check_rest_snapshots(rest_server, table, stream, "upsert")
    snaps = snapshots(rest_server, table)
    assert snaps[:len(first)] == first and len(snaps) > len(first)
    assert frontier_value(snaps[-1]["summary"]["floe.frontier"]) == INF
    res = floe(*args, "--input", src, check=False)
    assert res.returncode == 1 and "its input was closed" in res.stderr, res
    assert snapshots(rest_server, table) == snaps


def test_a_missing_table_without_schema_is_a_clear_error(floe, rest_server):
    res = floe("inspect", "--table", f"{rest_server.namespace()}.nope", "--catalog",
               rest_server.uri, check=False)
    assert res.returncode != 0
    assert "does not exist" in res.stderr and "HTTP 404" in res.stderr, res.stderr
    assert "\tat org.apache" not in res.stderr, "no Java stack traces in messages"


def test_an_unreachable_catalog_is_a_network_error(floe):
    import restserver
    port = restserver.free_port()
    res = floe("inspect", "--table", "a.b", "--catalog", f"http://127.0.0.1:{port}", check=False)
    assert res.returncode != 0
    assert f"127.0.0.1:{port}" in res.stderr and "v1/config" in res.stderr, res.stderr


@pytest.mark.parametrize("rest", ["local"], indirect=True)
def test_partition_spec_changes_over_rest(floe, rest, tmp_path):
    """Partition records evolve the spec through Apache's REST server: three
    changes, the last back to the first partitioned spec, which the server
    makes the default again under its own id; every snapshot, read by Java
    and DuckDB through the server, equals the model."""
    from test_sink_repartition import with_respecs
    stream = Stream(41, steps=45, keys=30, burst=0.3)
    src = tmp_path / "changes.ndjson"
    src.write_text(with_respecs(stream, ["day(at)", "day(at), bucket(8, id)", "day(at)"]))
    table = f"{rest.namespace()}.orders"
    floe(*rest_sink_args(rest.uri, table, "upsert", stream, 15, maintain="keep"),
         "--input", src, env=rest.floe_env)
    check_rest_snapshots(rest, table, stream, "upsert")
    md = rest.load(table)["metadata"]
    specs = {s["spec-id"]: [(f["field-id"], f["transform"]) for f in s["fields"]]
             for s in md["partition-specs"]}
    assert specs == {0: [], 1: [(1000, "day")], 2: [(1000, "day"), (1001, "bucket[8]")]}, specs
    assert md["default-spec-id"] == 1 and md["last-partition-id"] == 1001, md


def test_global_equality_deletes_over_rest(floe, rest_server, tmp_path):
    """Equality mode on a table partitioned by a non-key column: the first
    commit with a delete adds an unpartitioned spec through Apache's REST
    server (not the default) and the deletes go in it; every snapshot,
    read by Java and DuckDB through the server, equals the model."""
    stream = Stream(43, steps=40, keys=30, burst=0.3)
    src = tmp_path / "changes.ndjson"
    src.write_text(stream.text())
    table = f"{rest_server.namespace()}.orders"
    floe(*rest_sink_args(rest_server.uri, table, "upsert", stream, 15),
         "--delete-mode", "equality", "--partition-by", "bucket(4, name)", "--input", src,
         env=rest_server.floe_env)
    check_rest_snapshots(rest_server, table, stream, "upsert")
    md = rest_server.load(table)["metadata"]
    specs = {s["spec-id"]: [f["transform"] for f in s["fields"]] for s in md["partition-specs"]}
    assert specs == {0: ["bucket[4]"], 1: []} and md["default-spec-id"] == 0, md
