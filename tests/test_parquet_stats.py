"""Footer statistics and Iceberg metrics of Parquet files written by floe.

 - The Statistics of every column chunk must equal what pyarrow.compute finds
   over the values of that row group (min/max in the column's sort order, the
   Parquet zero rule for floats, NaN left out, null counts).
 - The Iceberg metrics floe returns at close must match an independent Python
   computation from the rows (value/null/NaN counts, single-value serialized
   bounds with truncate(16)) and the footer (column sizes, split offsets).
"""
import datetime
import decimal
import math
import os
import random
import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from test_parquet_support import (ALL_TYPES, NESTED, Big, all_types_rows, expected,
                                  iceberg_sort_key, iceberg_value, leaves, nested_rows, norm,
                                  parse_schema, truncate_lower, truncate_upper, write_case)


def _flat_leaf_array(table, path):
    """The values of a leaf under structs only, with parent nulls applied."""
    arr = table.column(path[0]).combine_chunks()
    for name in path[1:]:
        arr = arr.flatten()[arr.type.get_field_index(name)] if pa.types.is_struct(arr.type) else arr
    return arr


def _zero_rule(v, is_min):
    if isinstance(v, float) and v == 0:
        return -0.0 if is_min else 0.0
    return v


def check_footer_stats(path, schema):
    """Every struct-only leaf's chunk statistics equal pyarrow.compute's."""
    pf = pq.ParquetFile(path)
    md = pf.metadata
    table = pf.read()
    start = 0
    checked = 0
    for r in range(md.num_row_groups):
        n = md.row_group(r).num_rows
        part = table.slice(start, n)
        start += n
        for j, (f, p, repeated) in enumerate(leaves(parse_schema(schema))):
            if repeated:
                continue
            st = md.row_group(r).column(j).statistics
            assert st is not None and st.has_null_count
            arr = _flat_leaf_array(part, p)
            assert st.null_count == arr.null_count, (p, r)
            if pa.types.is_floating(arr.type):
                valid = pc.drop_null(arr)
                nonnan = pc.filter(valid, pc.invert(pc.is_nan(valid)))
                if len(nonnan) == 0:
                    assert not st.has_min_max, p
                    continue
            elif arr.null_count == len(arr):
                assert not st.has_min_max, p
                continue
            if pa.types.is_fixed_size_binary(arr.type) or isinstance(arr.type, pa.UuidType):
                # pyarrow.compute has no min/max for these: unsigned bytes
                vals = [bytes(norm(v)) for v in arr.to_pylist() if v is not None]
                want_min, want_max = min(vals), max(vals)
            else:
                mm = pc.min_max(arr)
                want_min, want_max = mm["min"].as_py(), mm["max"].as_py()
            too_big = any(isinstance(v, (str, bytes)) and len(v if isinstance(v, bytes) else v.encode()) > 4096
                          for v in (want_min, want_max))
            if too_big:
                assert not st.has_min_max, p
                continue
            assert st.has_min_max, p
            assert norm(st.min) == norm(_zero_rule(want_min, True)), (p, r, st.min, want_min)
            assert norm(st.max) == norm(_zero_rule(want_max, False)), (p, r, st.max, want_max)
            checked += 1
    return checked


def _entries(typ, v, path):
    """The Dremel level entries of one leaf for one value: a list with the
    value, or None for every entry that has no value."""
    k = typ[0]
    if not path:
        return [v]
    if v is None:
        return [None]
    if k == "struct":
        child = next(f for f in typ[1] if f.name == path[0])
        return _entries(child.type, v.get(path[0]), path[1:])
    if k == "list":
        if not v:
            return [None]
        out = []
        for x in v:
            out += _entries(typ[1].type, x, path[2:])
        return out
    if k == "map":
        if not v:
            return [None]
        f = typ[1] if path[1] == "key" else typ[2]
        out = []
        for a, b in v:
            out += _entries(f.type, a if path[1] == "key" else b, path[2:])
        return out
    raise ValueError(k)


def check_iceberg_metrics(path, schema, rows, metrics):
    fields = parse_schema(schema)
    md = pq.ParquetFile(path).metadata
    assert metrics["record_count"] == len(rows) == md.num_rows
    assert metrics["file_size"] == os.path.getsize(path)
    splits = []
    for r in range(md.num_row_groups):
        c0 = md.row_group(r).column(0)
        splits.append(c0.dictionary_page_offset if c0.has_dictionary_page else c0.data_page_offset)
    assert metrics["split_offsets"] == splits
    cols = metrics["columns"]
    lv = leaves(fields)
    assert len(cols) == len(lv)
    for j, (f, p, repeated) in enumerate(lv):
        m = cols[j]
        assert m["field_id"] == f.id
        assert m["column_size"] == sum(md.row_group(r).column(j).total_compressed_size
                                       for r in range(md.num_row_groups))
        if repeated:
            assert set(m) == {"field_id", "column_size"}, m
            continue
        top = next(i for i, t in enumerate(fields) if t.name == p[0])
        ents = []
        for row in rows:
            ents += _entries(fields[top].type, row[top], p[1:])
        assert m["value_count"] == len(ents), p
        assert m["null_count"] == sum(e is None for e in ents), p
        vals = [e for e in ents if e is not None]
        if f.type[0] in ("float", "double"):
            vals = [expected(f.type, v) for v in vals]
            assert m["nan_count"] == sum(math.isnan(v) for v in vals), p
            vals = [v for v in vals if not math.isnan(v)]
        else:
            assert "nan_count" not in m
        if not vals:
            assert "lower" not in m and "upper" not in m, p
            continue
        lo = min(vals, key=lambda v: iceberg_sort_key(f.type, v))
        hi = max(vals, key=lambda v: iceberg_sort_key(f.type, v))
        assert m["lower"] == truncate_lower(f.type, iceberg_value(f.type, lo)).hex(), p
        up = truncate_upper(f.type, iceberg_value(f.type, hi))
        if up is None:
            assert "upper" not in m, p
        else:
            assert m["upper"] == up.hex(), p


CASES = {
    "all_types": (ALL_TYPES, all_types_rows, {}),
    "nested": (NESTED, nested_rows, {}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_footer_stats_and_metrics(tmp_path, case):
    schema, rows_fn, opts = CASES[case]
    rows = rows_fn()
    path, m = write_case(tmp_path, case, schema, rows, **opts)
    assert check_footer_stats(path, schema) > 0
    check_iceberg_metrics(path, schema, rows, m)


def test_float_specials(tmp_path):
    schema = "f float, d double, g double, z double, nz double, allnan double"
    NAN, INF = float("nan"), float("inf")
    rows = [
        [NAN, -0.0, 1.0, 0.0, -0.0, NAN],
        [INF, NAN, -INF, 0.0, -0.0, None],
        [-0.0, 0.0, None, 0.0, -0.0, NAN],
        [1.5, -2.5, 3.0, None, None, None],
    ]
    path, m = write_case(tmp_path, "floats", schema, rows)
    check_footer_stats(path, schema)
    check_iceberg_metrics(path, schema, rows, m)
    st = pq.ParquetFile(path).metadata.row_group(0)
    # zero-only columns: min -0.0, max +0.0 in the footer ...
    assert math.copysign(1, st.column(3).statistics.min) == -1
    assert math.copysign(1, st.column(3).statistics.max) == 1
    assert math.copysign(1, st.column(4).statistics.max) == 1
    # ... while Iceberg keeps what was there: z has only +0.0, nz only -0.0
    cols = m["columns"]
    assert cols[3]["lower"] == cols[3]["upper"] == "0000000000000000"
    assert cols[4]["lower"] == cols[4]["upper"] == "0000000000000080"
    # d has -0.0 and +0.0 and NaN: lower -2.5, upper 0.0, one NaN
    assert cols[1]["nan_count"] == 1
    assert "lower" not in cols[5] and cols[5]["nan_count"] == 2
    assert not st.column(5).statistics.has_min_max


def test_string_and_binary_truncation(tmp_path):
    schema = "s string, b binary, fx fixed(20), top string"
    top = "\U0010ffff" * 20
    rows = [
        ["abcdefghijklmnopqrstuvwxyz", b"\x01" + b"\xff" * 30, b"\xff" * 20, top],
        ["ééééééééééééééééééé", b"\x00" * 17, b"\x00" * 20, "a"],
        ["😀" * 17, b"\xff" * 17, b"\x01" * 20, None],
        ["日本語" * 7, None, None, "\U0010ffff" * 16 + "x"],
    ]
    path, m = write_case(tmp_path, "trunc", schema, rows)
    check_footer_stats(path, schema)
    check_iceberg_metrics(path, schema, rows, m)
    cols = m["columns"]
    assert bytes.fromhex(cols[0]["upper"]).decode() == "😀" * 15 + "😁"
    assert "upper" not in cols[1]          # 0xff x 17: no upper bound
    assert len(bytes.fromhex(cols[2]["lower"])) == 20   # fixed is not truncated
    assert "upper" not in cols[3]


def test_stats_per_row_group(tmp_path):
    rnd = random.Random(11)
    schema = ("i int, l long!, d double, s string, dec decimal(30,3), dt date, "
              "ts timestamp, u uuid, b boolean")
    rows = []
    for k in range(30000):
        rows.append([
            rnd.randint(-2**31, 2**31 - 1) if k % 7 else None,
            rnd.randint(-2**63, 2**63 - 1),
            rnd.choice([rnd.uniform(-1e6, 1e6), float("nan"), -0.0, None]),
            rnd.choice(["", "a", "zz", "Ω", "mañana", None, str(rnd.random())]),
            decimal.Decimal(rnd.randint(-10**29, 10**29)).scaleb(-3) if k % 5 else None,
            datetime.date(1800, 1, 1) + datetime.timedelta(days=rnd.randint(0, 150000)),
            datetime.datetime(1960, 1, 1) + datetime.timedelta(microseconds=rnd.randint(0, 10**16)),
            uuid.UUID(int=rnd.getrandbits(128)) if k % 3 else None,
            rnd.random() < 0.5,
        ])
    path, m = write_case(tmp_path, "rg", schema, rows, row_group_size=200 * 1024,
                         page_size=8 * 1024, compression="snappy")
    assert pq.ParquetFile(path).metadata.num_row_groups > 3
    assert check_footer_stats(path, schema) >= 9 * 3
    check_iceberg_metrics(path, schema, rows, m)


def test_dictionary_chunks_stats(tmp_path):
    """Statistics stay right when pages switch from dictionary to PLAIN."""
    schema = "s string, n long, f fixed(4)"
    rows = [[f"k{(k // 4) % 5000:05d}", (k * 31) % 7001 - 3500, (k % 300).to_bytes(4, "big")]
            for k in range(20000)]
    path, m = write_case(tmp_path, "dictstats", schema, rows, page_size=4096,
                         dictionary_limit=16 * 1024)
    col = pq.ParquetFile(path).metadata.row_group(0).column(0)
    assert "RLE_DICTIONARY" in col.encodings and "PLAIN" in col.encodings
    check_footer_stats(path, schema)
    check_iceberg_metrics(path, schema, rows, m)


def test_big_value_bounds(tmp_path):
    schema = "blob binary, s string"
    rows = [[Big(0x61, 5 * 1024 * 1024), "x" * 5000], [b"a", "b"]]
    path, m = write_case(tmp_path, "bigb", schema, rows)
    check_footer_stats(path, schema)
    check_iceberg_metrics(path, schema, rows, m)
    assert m["columns"][0]["lower"] == "61"
    assert m["columns"][0]["upper"] == ("61" * 15) + "62"
