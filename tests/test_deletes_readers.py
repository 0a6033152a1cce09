"""Position deletes, deletion vectors and file removals written by floe's
table layer (driven through build*/tests/test_table_deletes), read back by
DuckDB's iceberg_scan, pyiceberg and Java Iceberg (IcebergGenerics), on v2
and v3 tables floe creates.  The manifests are checked too: v2 position
deletes are file-scoped (referenced_data_file set), a v3 table has at most
one live DV per data file, and a DV's content range is its Puffin blob.
"""
import json
import os
import subprocess

import fastavro
import pytest

from conftest import tool_bin
from iceberg_env import CATALOG, assert_all_read, env  # noqa: F401  (fixture)
from rowgen import Col

DECL = "id bigint not null, name text"
COLS = [Col("id", "bigint"), Col("name", "text")]


def tool(env, *args, check=True):
    exe = tool_bin("test_table_deletes")
    if not os.path.exists(exe):
        pytest.fail(f"{exe} is not built (make)")
    p = subprocess.run([exe, env.uri, CATALOG, env.warehouse, *map(str, args)],
                       capture_output=True, text=True, timeout=300)
    assert "runtime error" not in p.stderr and "Sanitizer" not in p.stderr, p.stderr
    if check:
        assert p.returncode == 0, p.stderr + p.stdout
    return p


def commit(env, table, spec, ok=True):
    path = env.dir / f"spec-{os.urandom(4).hex()}.json"
    path.write_text(json.dumps(spec))
    out = json.loads(tool(env, "commit", table, path, check=False).stdout.splitlines()[-1])
    if ok:
        assert out["result"] == "FLOE_OK", out
    return out


def plan(env, table):
    return json.loads(tool(env, "plan", table).stdout)


def local(uri):
    """A local path from file:///x or Java's file:/x."""
    return "/" + uri.removeprefix("file:").lstrip("/")


def metadata(env, table):
    with open(local(env.metadata_location(table))) as f:
        return json.load(f)


def live_delete_entries(env, table):
    """The live entries of the current snapshot's delete manifests."""
    md = metadata(env, table)
    cur = md["current-snapshot-id"]
    snap = next(s for s in md["snapshots"] if s["snapshot-id"] == cur)
    out = []
    with open(local(snap["manifest-list"]), "rb") as f:
        manifests = list(fastavro.reader(f))
    for m in manifests:
        if m["content"] != 1:
            continue
        with open(local(m["manifest_path"]), "rb") as f:
            out += [e for e in fastavro.reader(f) if e["status"] != 2]
    return md, out


def rows_of(ids_names):
    return [(i, n) for i, n in ids_names]


def check_manifests(env, table, version):
    md, dels = live_delete_entries(env, table)
    assert md["format-version"] == version
    refs = [e["data_file"]["referenced_data_file"] for e in dels]
    assert all(refs), dels                           # file-scoped (v2) / DVs (v3)
    if version == 3:
        assert all(e["data_file"]["file_format"].upper() == "PUFFIN" for e in dels)
        assert len(refs) == len(set(refs)), refs     # at most one DV per data file
        for e in dels:
            df = e["data_file"]
            blob = open(local(df["file_path"]), "rb").read()
            off, size = df["content_offset"], df["content_size_in_bytes"]
            length = int.from_bytes(blob[off:off + 4], "big")
            assert length == size - 8 and blob[off + 4:off + 8] == bytes([0xD1, 0xD3, 0x39, 0x64])
            assert df["record_count"] > 0
    else:
        assert all(e["data_file"]["file_format"].upper() == "PARQUET" for e in dels)
    return md, dels


@pytest.mark.parametrize("version", [2, 3])
def test_deletes_and_removals_read_by_every_reader(env, version):
    table = f"db.del{version}"
    tool(env, "create", table, DECL, version)
    first = commit(env, table, {"insert": [{"id": i, "name": f"n{i}"} for i in range(6)]})
    path_a = first["inserted"][0][0]
    # three commits deleting from the same data file: v3 merges them into one DV
    commit(env, table, {"deletes": [[path_a, 1]]})
    commit(env, table, {"deletes": [[path_a, 3], [path_a, 4]]})
    second = commit(env, table, {"insert": [{"id": 10, "name": "x"}, {"id": 11, "name": "y"}],
                                 "delete_inserted": [0]})
    path_b = second["inserted"][0][0]
    commit(env, table, {"deletes": [[path_a, 0]]})
    expected = [(2, "n2"), (5, "n5"), (11, "y")]
    assert_all_read(env, table, COLS, expected)
    md, dels = check_manifests(env, table, version)
    if version == 3:
        assert len(dels) == 2                         # one DV for a, one for b
        assert json.loads(tool(env, "dv", table, path_a).stdout) == [0, 1, 3, 4]
    snap = md["snapshots"][-1]
    assert snap["summary"]["total-position-deletes"] == "5"
    assert snap["summary"]["total-data-files"] == "2"
    # a compaction: a's live rows into a new file, a (and its deletes) removed
    commit(env, table, {"insert": [{"id": 2, "name": "n2"}, {"id": 5, "name": "n5"}],
                        "remove": [path_a], "operation": "replace", "data_sequence_number": 1})
    assert_all_read(env, table, COLS, expected, java=False)
    md, dels = check_manifests(env, table, version)
    summ = md["snapshots"][-1]["summary"]
    assert summ["operation"] == "replace" and summ["deleted-data-files"] == "1"
    assert summ["total-data-files"] == "2"
    assert all(e["data_file"]["referenced_data_file"] != path_a for e in dels)
    # a removed file cannot be removed again or given deletes: a conflict naming it
    out = commit(env, table, {"remove": [path_a]}, ok=False)
    assert out["result"] == "FLOE_ECONFLICT" and path_a in out["message"]
    out = commit(env, table, {"deletes": [[path_a, 2]]}, ok=False)
    assert out["result"] == "FLOE_ECONFLICT" and path_a in out["message"]
    # removing b drops its rows and its deletes
    commit(env, table, {"remove": [path_b]})
    assert_all_read(env, table, COLS, [(2, "n2"), (5, "n5")])
    p = plan(env, table)
    assert p["totals"]["data_files"] == 1 and p["totals"]["delete_files"] == 0


def test_plan_matches_pyiceberg_scan_tasks(env):
    """floe's planning and pyiceberg's agree on which deletes apply to which file."""
    table = "db.planv2"
    tool(env, "create", table, DECL, 2)
    a = commit(env, table, {"insert": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]})
    commit(env, table, {"deletes": [[a["inserted"][0][0], 0]]})
    commit(env, table, {"insert": [{"id": 3, "name": "c"}]})
    ours = {d["path"]: sorted(x["path"] for x in d["deletes"]) for d in plan(env, table)["data"]}
    t = env.pyiceberg().load_table(table)
    theirs = {task.file.file_path: sorted(d.file_path for d in task.delete_files)
              for task in t.scan().plan_files()}
    assert ours == theirs
