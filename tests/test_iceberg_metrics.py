"""Manifest metrics: what pyiceberg sees for floe's files (value, null and NaN
counts, lower and upper bounds, column sizes) equals what pyarrow computes
from the same Parquet files; position delete files carry exact file_path
bounds; split offsets are the row groups'.
"""
import math
import random

import fastavro
import pyarrow.parquet as pq

from iceberg_env import env  # noqa: F401  (fixture)
from rowgen import PRIMITIVES, Col, gen_row, render

TRUNC = 16


def lower_str(s):
    return s[:TRUNC]


def upper_str(s):
    if len(s) <= TRUNC:
        return s
    cps = list(s[:TRUNC])
    while cps:
        c = ord(cps[-1]) + 1
        if 0xD800 <= c <= 0xDFFF:
            c = 0xE000
        if c <= 0x10FFFF:
            cps[-1] = chr(c)
            return "".join(cps)
        cps.pop()
    return None


def upper_bin(b):
    if len(b) <= TRUNC:
        return b
    a = bytearray(b[:TRUNC])
    while a:
        if a[-1] < 0xFF:
            a[-1] += 1
            return bytes(a)
        a.pop()
    return None


def expected_metrics(values, kind):
    """(value_count, null_count, nan_count, lower, upper) like Iceberg's Parquet metrics."""
    floats = kind in ("real", "double precision")
    present = [v for v in values if v is not None]
    nans = sum(1 for v in present if floats and math.isnan(v))
    ordered = [v for v in present if not (floats and math.isnan(v))]
    lo = min(ordered) if ordered else None
    hi = max(ordered) if ordered else None
    if isinstance(lo, str):
        lo, hi = lower_str(lo), upper_str(hi)
    elif isinstance(lo, bytes):
        lo, hi = lo[:TRUNC], upper_bin(hi)
    return len(values), len(values) - len(present), nans if floats else None, lo, hi


def test_bounds_and_counts_match_pyarrow(env):
    cols = [Col(f"c{i}", k, p=18, s=4) if k == "numeric" else Col(f"c{i}", k)
            for i, k in enumerate(PRIMITIVES)]
    cols.append(Col("rec", "record", fields=[Col("a", "integer"), Col("b", "text")]))
    r = random.Random(5)
    rows = [gen_row(r, cols, null_rate=0.3)[0] for _ in range(400)]
    rows += [{"c0": None}] * 3                                  # all-null tails
    env.append("db.m", rows, schema=render(cols), extra=["--target-file-size", "16k"])
    tbl = env.pyiceberg().load_table("db.m")
    ids = {n: tbl.schema().find_field(n).field_id for n in ("rec.a", "rec.b")}
    files = tbl.inspect.files().to_pylist()
    assert len(files) > 2
    checked = 0
    for f in files:
        table = pq.read_table(f["file_path"].removeprefix("file://"))
        assert table.num_rows == f["record_count"]
        meta = pq.ParquetFile(f["file_path"].removeprefix("file://")).metadata
        assert f["split_offsets"] == sorted(
            min(o for o in (meta.row_group(g).column(0).dictionary_page_offset,
                            meta.row_group(g).column(0).data_page_offset) if o is not None)
            for g in range(meta.num_row_groups))
        rm = f["readable_metrics"]
        for c in cols[:-1]:
            want = expected_metrics(table.column(c.name).to_pylist(), c.kind)
            got = rm[c.name]
            assert got["column_size"] > 0
            assert (got["value_count"], got["null_value_count"], got["nan_value_count"]) == want[:3], c.kind
            if c.kind == "uint8":                               # decimal(20,0)
                want = want[:3] + tuple(None if v is None else int(v) for v in want[3:])
                got = dict(got, lower_bound=None if got["lower_bound"] is None else int(got["lower_bound"]),
                           upper_bound=None if got["upper_bound"] is None else int(got["upper_bound"]))
            assert got["lower_bound"] == want[3], (c.name, c.kind, got, want)
            assert got["upper_bound"] == want[4], (c.name, c.kind, got, want)
            checked += 1
        # nested struct fields: pyiceberg's readable view stops at the top
        # level, so read the raw maps by field id
        recs = table.column("rec").to_pylist()
        raw = {k: dict(f[k]) for k in ("value_counts", "null_value_counts", "lower_bounds",
                                        "upper_bounds")}
        a_vals = [None if x is None else x["a"] for x in recs]
        b_vals = [None if x is None else x["b"] for x in recs]
        wa, wb = expected_metrics(a_vals, "integer"), expected_metrics(b_vals, "text")
        for fid, want in ((ids["rec.a"], wa), (ids["rec.b"], wb)):
            assert (raw["value_counts"][fid], raw["null_value_counts"][fid]) == want[:2]
        if wa[3] is not None:
            assert int.from_bytes(raw["lower_bounds"][ids["rec.a"]], "little", signed=True) == wa[3]
            assert int.from_bytes(raw["upper_bounds"][ids["rec.a"]], "little", signed=True) == wa[4]
        if wb[3] is not None:
            assert raw["lower_bounds"][ids["rec.b"]].decode() == wb[3]
            assert raw["upper_bounds"][ids["rec.b"]].decode() == wb[4]
    assert checked == len(files) * (len(cols) - 1)


def test_position_delete_files_have_exact_path_bounds(env):
    env.tool("create", "db.pd", "id bigint not null")
    s1 = env.delta("db.pd", {"insert": [{"id": i} for i in range(50)], "target_file_size": 700})
    paths = sorted({p for p, _ in s1["inserted"]})
    assert len(paths) > 2
    deletes = [pair for pair in s1["inserted"] if pair[0] in (paths[0], paths[-1])]
    env.delta("db.pd", {"position_deletes": deletes[::-1]})
    t = env.pyiceberg().load_table("db.pd")
    with open(t.current_snapshot().manifest_list.removeprefix("file://"), "rb") as f:
        lists = list(fastavro.reader(f))
    assert [m["content"] for m in lists] == [1, 0]
    with open(lists[0]["manifest_path"].removeprefix("file://"), "rb") as f:
        r = fastavro.reader(f)
        assert r.metadata["content"] == "deletes"
        (entry,) = list(r)
    df = entry["data_file"]
    assert df["content"] == 1 and df["record_count"] == len(deletes)
    lower = dict((kv["key"], kv["value"]) for kv in df["lower_bounds"])
    upper = dict((kv["key"], kv["value"]) for kv in df["upper_bounds"])
    assert lower[2147483546] == paths[0].encode() and upper[2147483546] == paths[-1].encode()
    pos = sorted(p for path, p in deletes if path == paths[0])
    assert int.from_bytes(lower[2147483545], "little") == min(p for _, p in deletes)
    assert int.from_bytes(upper[2147483545], "little") == max(p for _, p in deletes)
    # the file itself: sorted by path, then position, required reserved fields
    dt = pq.read_table(df["file_path"].removeprefix("file://"))
    assert dt.column_names == ["file_path", "pos"]
    pairs = list(zip(dt.column("file_path").to_pylist(), dt.column("pos").to_pylist()))
    assert pairs == sorted(map(tuple, deletes))
    assert [p for path, p in pairs if path == paths[0]] == pos
    fields = dt.schema
    assert not fields.field("file_path").nullable and not fields.field("pos").nullable
    assert fields.field("file_path").metadata[b"PARQUET:field_id"] == b"2147483546"
    assert fields.field("pos").metadata[b"PARQUET:field_id"] == b"2147483545"
    rows = sorted(r["id"] for r in t.scan().to_arrow().to_pylist())
    assert len(rows) == 50 - len(deletes)
