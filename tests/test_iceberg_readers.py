"""Tables floe writes, read back by pyiceberg, DuckDB's iceberg extension and
Java Iceberg: appends (with time travel), every primitive and nested type,
row deltas with position deletes and with equality deletes (DuckDB and Java
only: pyiceberg cannot read equality deletes).
"""
import random

import pytest

from iceberg_env import assert_all_read, env  # noqa: F401  (fixture)
from rowgen import PRIMITIVES, RANGES, Col, gen_row, rand_schema, render

SIMPLE = [Col("id", "bigint", not_null=True), Col("name", "text"),
          Col("price", "numeric", p=12, s=2)]
SIMPLE_DECL = render(SIMPLE)


def rows_of(r, cols, n):
    return [gen_row(r, cols) for _ in range(n)]


def every_type_schema():
    cols = []
    for i, k in enumerate(PRIMITIVES):
        if k == "numeric":
            cols.append(Col(f"p{i}", k, p=38, s=9))
            cols.append(Col(f"p{i}b", k, p=9, s=2, not_null=True))
        else:
            cols.append(Col(f"p{i}", k))
    cols.append(Col("ids", "list", elem=Col("", "bigint")))
    cols.append(Col("tags", "list", elem=Col("", "text", not_null=True)))
    cols.append(Col("addr", "record", fields=[Col("street", "text"),
                                             Col("zip", "integer", not_null=True),
                                             Col("geo", "record", fields=[Col("lat", "double precision"),
                                                                          Col("lon", "double precision")])]))
    cols.append(Col("attrs", "map", elem=Col("", "text")))
    cols.append(Col("scores", "map", elem=Col("", "record", fields=[Col("v", "integer"),
                                                                   Col("w", "real")])))
    cols.append(Col("nested", "list", elem=Col("", "list", elem=Col("", "smallint"))))
    for k in RANGES:
        cols.append(Col(f"r_{k}", k))
    return cols


def test_several_appends_and_time_travel(env):
    r = random.Random(1)
    batches = [rows_of(r, SIMPLE, n) for n in (5, 1, 40, 7)]
    expected, snaps = [], []
    for i, b in enumerate(batches):
        env.append("db.orders", [row for row, _ in b], schema=SIMPLE_DECL if i == 0 else None)
        expected += [e for _, e in b]
        snaps.append((env.inspect("db.orders")["current_snapshot_id"], list(expected)))
    assert_all_read(env, "db.orders", SIMPLE, expected)
    # every snapshot, as of its own time
    for sid, want in snaps[:-1]:
        assert_all_read(env, "db.orders", SIMPLE, want, snapshot_id=sid)
    info = env.inspect("db.orders")
    assert [s["summary"]["total-records"] for s in info["snapshots"]] == ["5", "6", "46", "53"]
    assert [s["sequence_number"] for s in info["snapshots"]] == [1, 2, 3, 4]


@pytest.mark.parametrize("seed", [1, 2])
def test_every_primitive_and_nested_type(env, seed):
    cols = every_type_schema()
    r = random.Random(seed)
    decl = render(cols)
    expected = []
    for i in range(3):
        batch = rows_of(r, cols, 60)
        env.append("db.types", [row for row, _ in batch], schema=decl)
        expected += [e for _, e in batch]
    assert_all_read(env, "db.types", cols, expected)


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_random_schemas(env, seed):
    r = random.Random(seed)
    cols = rand_schema(r, ncols=6)
    batch = rows_of(r, cols, 80)
    env.append("db.rand", [row for row, _ in batch], schema=render(cols))
    assert_all_read(env, "db.rand", cols, [e for _, e in batch])


def test_rolling_files(env):
    r = random.Random(3)
    batch = rows_of(r, SIMPLE, 300)
    env.append("db.roll", [row for row, _ in batch], schema=SIMPLE_DECL,
               extra=["--target-file-size", "2k"])
    info = env.inspect("db.roll")
    files = int(info["snapshots"][0]["summary"]["added-data-files"])
    assert files > 3
    assert_all_read(env, "db.roll", SIMPLE, [e for _, e in batch])


KV = [Col("id", "bigint", not_null=True), Col("v", "text")]
KV_DECL = render(KV)


def kv_rows(ids, v):
    return [{"id": i, "v": v} for i in ids]


def test_row_delta_with_position_deletes(env):
    env.tool("create", "db.pd", KV_DECL)
    # snapshot 1: ids 1..30 over several files
    s1 = env.delta("db.pd", {"insert": kv_rows(range(1, 31), "a"), "target_file_size": 900})
    paths = {p for p, _ in s1["inserted"]}
    assert len(paths) > 2
    pos_of = {i + 1: tuple(s1["inserted"][i]) for i in range(30)}
    # snapshot 2: delete ids 3, 7, 29 (earlier files), insert 31, 32 and delete 32 again
    gone = [3, 7, 29]
    s2 = env.delta("db.pd", {
        "insert": kv_rows([31, 32], "b"),
        "delete_inserted": [1],
        "position_deletes": [list(pos_of[i]) for i in reversed(gone)],
    })
    kinds = sorted(f["content"] for f in s2["files"])
    assert kinds == [0, 1]
    want = [(i, "a") for i in range(1, 31) if i not in gone] + [(31, "b")]
    assert_all_read(env, "db.pd", KV, want)
    assert_all_read(env, "db.pd", KV, [(i, "a") for i in range(1, 31)],
                    snapshot_id=s1["snapshot_id"])
    summary = env.inspect("db.pd")["snapshots"][-1]["summary"]
    assert summary["operation"] == "overwrite"
    assert summary["added-position-deletes"] == "4"
    assert summary["added-position-delete-files"] == "1"
    assert summary["total-position-deletes"] == "4"
    assert summary["total-records"] == "32"
    # snapshot 3: delete everything left of the first file by position
    first = sorted(paths)[0]
    left = [i for i in range(1, 31) if pos_of[i][0] == first and i not in gone]
    env.delta("db.pd", {"position_deletes": [list(pos_of[i]) for i in left]})
    want = [row for row in want if row[0] not in left]
    assert_all_read(env, "db.pd", KV, want)


def test_row_delta_with_equality_deletes(env):
    env.tool("create", "db.eq", KV_DECL)
    env.delta("db.eq", {"insert": kv_rows(range(1, 11), "a")})
    # upsert: key 2 gets a new value, key 5 goes away
    env.delta("db.eq", {"equality_deletes": {"columns": ["id"], "rows": [{"id": 2}, {"id": 5}]},
                        "insert": kv_rows([2], "b")})
    want = [(i, "a") for i in range(1, 11) if i not in (2, 5)] + [(2, "b")]
    assert_all_read(env, "db.eq", KV, want, pyiceberg=False)
    # a key updated twice in one batch ends with exactly one live row:
    # insert (3, x) then delete it by position, delete the old row by
    # equality, insert (3, y)
    env.delta("db.eq", {"insert": [{"id": 3, "v": "x"}, {"id": 3, "v": "y"}],
                        "delete_inserted": [0],
                        "equality_deletes": {"columns": ["id"], "rows": [{"id": 3}]}})
    want = [row for row in want if row[0] != 3] + [(3, "y")]
    assert_all_read(env, "db.eq", KV, want, pyiceberg=False)
    # deletes on a non-key text column, two key columns
    env.delta("db.eq", {"equality_deletes": {"columns": ["v"], "rows": [{"v": "b"}]}})
    env.delta("db.eq", {"equality_deletes": {"columns": ["id", "v"],
                                             "rows": [{"id": 1, "v": "a"}, {"id": 4, "v": "zzz"}]}})
    want = [row for row in want if row[1] != "b" and row != (1, "a")]
    assert_all_read(env, "db.eq", KV, want, pyiceberg=False)
    last = env.inspect("db.eq")["snapshots"][-1]["summary"]
    assert last["added-equality-delete-files"] == "1"
    assert last["added-equality-deletes"] == "2"
    assert last["total-equality-deletes"] == "6"


def test_empty_commit_records_properties(env):
    env.tool("create", "db.empty", KV_DECL)
    env.delta("db.empty", {"insert": kv_rows([1], "a")})
    out = env.delta("db.empty", {"summary": {"floe.frontier": "[7]", "floe.sink-id": "db.empty",
                                             "floe.sink-version": "1"}})
    info = env.inspect("db.empty")
    assert info["current_snapshot_id"] == out["snapshot_id"]
    last = info["snapshots"][-1]["summary"]
    assert last["operation"] == "append"
    assert "added-data-files" not in last
    assert last["total-records"] == "1"
    assert info["frontier"] == {"snapshot_id": out["snapshot_id"], "frontier": "[7]",
                                "sink_id": "db.empty", "sink_version": "1"}
    assert_all_read(env, "db.empty", KV, [(1, "a")])
