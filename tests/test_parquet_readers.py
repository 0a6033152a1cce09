"""Parquet files written by floe, read back by pyarrow, DuckDB and polars.

Each case is written by build/tests/test_parquet_files (FLOE_BUILD picks the
build directory) from Python values; every reader must return exactly those
values (NaN, -0.0, extremes, nested nulls included).
"""
import datetime
import decimal
import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from test_parquet_support import (ALL_TYPES, NESTED, READERS, Big, all_fields, all_types_rows,
                                  assert_rows_equal, expected_rows, nested_rows, parse_schema,
                                  write_case)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_all_types(tmp_path, reader):
    rows = all_types_rows()
    path, _ = write_case(tmp_path, "all", ALL_TYPES, rows)
    assert_rows_equal(READERS[reader](path), expected_rows(ALL_TYPES, rows), reader)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_nested_nulls_at_every_level(tmp_path, reader):
    rows = nested_rows()
    path, _ = write_case(tmp_path, "nested", NESTED, rows)
    assert_rows_equal(READERS[reader](path), expected_rows(NESTED, rows), reader)


def _field_ids(field, out):
    md = field.metadata or {}
    out.append((field.name, int(md[b"PARQUET:field_id"]) if b"PARQUET:field_id" in md else None))
    t = field.type
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            _field_ids(t.field(i), out)
    elif pa.types.is_map(t):
        _field_ids(t.key_field, out)
        _field_ids(t.item_field, out)
    elif pa.types.is_list(t):
        _field_ids(t.value_field, out)


@pytest.mark.parametrize("schema", [ALL_TYPES, NESTED])
def test_field_ids_on_every_field(tmp_path, schema):
    path, _ = write_case(tmp_path, "ids", schema, [])
    got = []
    for f in pq.read_schema(path):
        _field_ids(f, got)
    want = [(f.name, f.id) for f in all_fields(parse_schema(schema))]
    assert got == want


def test_parquet_schema_shape(tmp_path):
    """3-level lists, MAP key_value groups, logical and converted types."""
    path, _ = write_case(tmp_path, "shape", NESTED + ", t time, ts timestamp, d decimal(12,2)", [])
    text = str(pq.ParquetFile(path).schema)
    assert "optional group field_id=2 tags (List) {" in text
    assert "repeated group field_id=-1 list {" in text
    assert "optional binary field_id=3 element (String);" in text
    assert "required group field_id=4 req_tags (List)" in text
    assert "repeated group field_id=-1 key_value {" in text
    assert "required binary field_id=13 key (String);" in text
    assert "Time(isAdjustedToUTC=false, timeUnit=microseconds" in text
    assert "Timestamp(isAdjustedToUTC=false, timeUnit=microseconds" in text
    assert "int64 field_id=" in text and "(Decimal(precision=12, scale=2))" in text
    arrow = pq.read_schema(path)
    assert arrow.field("ts").type == pa.timestamp("us")
    assert arrow.field("t").type == pa.time64("us")
    assert arrow.field("d").type == pa.decimal128(12, 2)
    col = pq.ParquetFile(path).schema.column(0)
    assert col.physical_type == "INT32" and col.max_definition_level == 0


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("codec", ["none", "snappy", "gzip", "zstd"])
def test_every_codec(tmp_path, reader, codec):
    rnd = random.Random(7)
    schema = "id long!, name string, score double, tags list<string>"
    rows = [[i, rnd.choice(["alpha", "beta", None, "gamma " * rnd.randint(0, 5)]),
             rnd.random() if i % 11 else None,
             [rnd.choice("xyz") for _ in range(i % 4)] if i % 5 else None]
            for i in range(3000)]
    path, _ = write_case(tmp_path, codec, schema, rows, compression=codec, page_size=4096)
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == (
        "UNCOMPRESSED" if codec == "none" else codec.upper())
    assert_rows_equal(READERS[reader](path), expected_rows(schema, rows), reader)


@pytest.mark.parametrize("codec,level", [("zstd", 1), ("zstd", 19), ("gzip", 1), ("gzip", 9)])
def test_compression_levels(tmp_path, codec, level):
    schema = "s string"
    rows = [[f"value {i % 97}"] for i in range(2000)]
    path, _ = write_case(tmp_path, "lvl", schema, rows, compression=codec, level=level)
    assert_rows_equal(READERS["pyarrow"](path), expected_rows(schema, rows))


@pytest.mark.parametrize("reader", sorted(READERS))
def test_zero_rows(tmp_path, reader):
    path, m = write_case(tmp_path, "empty", NESTED, [])
    assert READERS[reader](path) == []
    md = pq.ParquetFile(path).metadata
    assert md.num_rows == 0 and md.num_row_groups == 0
    assert pq.read_table(path).schema.names == [f.name for f in parse_schema(NESTED)]
    assert m["record_count"] == 0 and m["split_offsets"] == []
    assert m["file_size"] == os.path.getsize(path)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_big_binary_value(tmp_path, reader):
    schema = "id int!, blob binary, s string"
    big = Big(0xAB, 5 * 1024 * 1024)
    rows = [[1, b"small", "a"], [2, big, "z" * 5000], [3, None, None], [4, b"", "c"]]
    path, m = write_case(tmp_path, "big", schema, rows, compression="zstd")
    assert_rows_equal(READERS[reader](path), expected_rows(schema, rows), reader)
    md = pq.ParquetFile(path).metadata
    # min/max of the 5 MB column (and of the 5000-byte string) are not in the footer
    assert not md.row_group(0).column(1).statistics.has_min_max
    assert not md.row_group(0).column(2).statistics.has_min_max
    assert md.row_group(0).column(1).statistics.null_count == 1
    assert md.serialized_size < 4096


@pytest.mark.parametrize("reader", sorted(READERS))
def test_dictionary_overflow_mid_file(tmp_path, reader):
    """Early pages dictionary-encoded, later ones PLAIN, in one column chunk."""
    schema = "k int!, s string, n long"
    rows = [[i, f"value-{i // 2:06d}" if i % 9 else None, i // 3] for i in range(40000)]
    path, _ = write_case(tmp_path, "overflow", schema, rows, page_size=8192,
                         dictionary_limit=30000, compression="snappy")
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups == 1
    for j in (1, 2):
        col = md.row_group(0).column(j)
        assert col.has_dictionary_page
        assert "RLE_DICTIONARY" in col.encodings and "PLAIN" in col.encodings, col.encodings
        assert col.dictionary_page_offset < col.data_page_offset
    assert_rows_equal(READERS[reader](path), expected_rows(schema, rows), reader)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_many_row_groups_and_pages(tmp_path, reader):
    rnd = random.Random(3)
    schema = ("id long!, cat string!, price decimal(12,2)!, d date, comment string, "
              "vals list<int>")
    cats = ["R", "A", "N", "MAIL", "SHIP"]
    rows = []
    for i in range(60000):
        rows.append([i, rnd.choice(cats), decimal.Decimal(rnd.randint(-10**7, 10**7)) / 100,
                     datetime.date(1992, 1, 1) + datetime.timedelta(days=rnd.randint(0, 2500)),
                     "".join(rnd.choice("abcdefgh ") for _ in range(rnd.randint(0, 40))),
                     [rnd.randint(-5, 5) for _ in range(rnd.randint(0, 3))] if i % 13 else None])
    path, m = write_case(tmp_path, "many", schema, rows, row_group_size=256 * 1024,
                         page_size=16 * 1024)
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups >= 4, md.num_row_groups
    assert sum(md.row_group(i).num_rows for i in range(md.num_row_groups)) == len(rows)
    assert_rows_equal(READERS[reader](path), expected_rows(schema, rows), reader)
    assert len(m["split_offsets"]) == md.num_row_groups


def test_pages_counted(tmp_path):
    """Small pages really produce many pages (offset index is not written,
    so count page headers by walking the chunk)."""
    schema = "id long!"
    rows = [[i] for i in range(10000)]
    path, _ = write_case(tmp_path, "pages", schema, rows, page_size=1024, compression="none",
                         dictionary=0)
    col = pq.ParquetFile(path).metadata.row_group(0).column(0)
    assert col.encodings == ("PLAIN", "RLE")
    # 1024-byte pages of 8-byte values: about 80 pages of ~128 values
    assert col.total_compressed_size > 10000 * 8
    assert col.total_compressed_size < 10000 * 8 + 100 * 40
    assert_rows_equal(READERS["duckdb"](path), expected_rows(schema, rows))


@pytest.mark.parametrize("reader", sorted(READERS))
def test_required_columns_and_no_dictionary(tmp_path, reader):
    schema = "a int!, b string!, c double!, d boolean!"
    rows = [[i, str(i % 10), i / 7, i % 3 == 0] for i in range(5000)]
    path, _ = write_case(tmp_path, "req", schema, rows, dictionary=0)
    md = pq.ParquetFile(path).metadata
    for j in range(4):
        assert not md.row_group(0).column(j).has_dictionary_page
    assert_rows_equal(READERS[reader](path), expected_rows(schema, rows), reader)


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("codec", ["zstd", "snappy"])
def test_incompressible_pages_stored(tmp_path, reader, codec):
    """Random dictionary indices do not compress: after two such pages floe
    stores pages in the codec's raw form; every reader must still decode
    them."""
    rnd = random.Random(5)
    schema = "k int!, v int, s string"
    rows = [[i, rnd.randrange(4000) if i % 17 else None, f"s{rnd.randrange(3000)}"]
            for i in range(300000)]
    path, _ = write_case(tmp_path, "stored", schema, rows, compression=codec)
    col = pq.ParquetFile(path).metadata.row_group(0).column(1)
    assert col.has_dictionary_page and "RLE_DICTIONARY" in col.encodings
    assert_rows_equal(READERS[reader](path), expected_rows(schema, rows), reader)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_page_with_many_levels(tmp_path, reader):
    """A row whose list holds 100000 elements, every other one null: the
    page's levels do not fit the room kept before its values, so the PLAIN
    page is assembled by copying (the other path from the in-place one)."""
    schema = "id int!, xs list<string>, ys list<long>"
    big = [None if i % 2 else f"v{i % 7}" for i in range(100000)]
    rows = [[1, big, list(range(50000))], [2, [], None], [3, None, [None, 5]]]
    path, _ = write_case(tmp_path, "levels", schema, rows, compression="snappy", dictionary=0)
    assert_rows_equal(READERS[reader](path), expected_rows(schema, rows), reader)
