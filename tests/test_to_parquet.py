"""`floe to-parquet` end to end: NDJSON rows in, Parquet out, read back by
pyarrow, DuckDB and polars, which must return exactly the values written."""
import json
import os
import random
import struct

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import pqpages
from readers import READERS, canon_rows
from rowgen import Col, f32, f64, gen_row, rand_schema, render, write_ndjson

ALL_TYPES = [
    Col("b", "boolean"), Col("si", "smallint"), Col("i", "integer"), Col("bi", "bigint"),
    Col("u2", "uint2"), Col("u4", "uint4"), Col("u8", "uint8"), Col("r", "real"),
    Col("d", "double precision"), Col("n", "numeric", p=12, s=2), Col("n38", "numeric", p=38, s=10),
    Col("n9", "numeric", p=9, s=0), Col("n18", "numeric", p=18, s=6), Col("t", "text"),
    Col("j", "jsonb"), Col("iv", "interval"), Col("u", "uuid"), Col("by", "bytea"),
    Col("dt", "date"), Col("tm", "time"), Col("ts", "timestamp"), Col("tz", "timestamptz"),
]


def to_parquet(floe, tmp_path, cols, rows, *extra, name="out.parquet"):
    src = tmp_path / "rows.ndjson"
    write_ndjson(src, rows)
    out = tmp_path / name
    floe("to-parquet", "--schema", render(cols), "--input", src, "--output", out, *extra)
    return str(out)


def check_all_readers(path, cols, expected):
    for name, read in READERS.items():
        got = read(path, cols)
        assert len(got) == len(expected), name
        for i, (g, e) in enumerate(zip(got, expected)):
            assert g == e, f"{name}: row {i}: got {g!r}, want {e!r}"


def roundtrip(floe, tmp_path, cols, rows_and_expected, *extra):
    rows = [r for r, _ in rows_and_expected]
    expected = [e for _, e in rows_and_expected]
    path = to_parquet(floe, tmp_path, cols, rows, *extra)
    check_all_readers(path, cols, expected)
    return path


def test_every_type_random_values(floe, tmp_path):
    r = random.Random(1)
    roundtrip(floe, tmp_path, ALL_TYPES, [gen_row(r, ALL_TYPES) for _ in range(500)])


def test_zero_rows(floe, tmp_path):
    path = roundtrip(floe, tmp_path, ALL_TYPES, [])
    assert pq.ParquetFile(path).metadata.num_rows == 0


def test_nulls_at_every_level(floe, tmp_path):
    cols = [Col("l", "list", elem=Col("", "list", elem=Col("", "integer"))),
            Col("rec", "record", fields=[Col("a", "text"),
                                         Col("inner", "record", fields=[Col("x", "bigint")]),
                                         Col("m", "map", elem=Col("", "text"))]),
            Col("m", "map", elem=Col("", "list", elem=Col("", "text"))),
            Col("rng", "tstzrange")]
    rows = [
        ({}, (None, None, None, None)),
        ({"l": None, "rec": None, "m": None, "rng": None}, (None, None, None, None)),
        ({"l": [], "rec": {}, "m": {}}, ([], (None, None, None), [], None)),
        ({"l": [None, [], [None]], "rec": {"inner": {}, "m": {"k": None}},
          "m": {"a": None, "b": [], "c": [None, "x"]}},
         ([None, [], [None]], (None, (None,), [("k", None)]),
          [("a", None), ("b", []), ("c", [None, "x"])], None)),
        ({"l": [[1, None, 3]], "rec": {"a": "", "inner": {"x": -1}}, "rng": {"empty": True}},
         ([[1, None, 3]], ("", (-1,), None), None, (None, None, None, None, True))),
    ]
    roundtrip(floe, tmp_path, cols, rows * 3)


def test_empty_strings_lists_maps(floe, tmp_path):
    cols = [Col("s", "text"), Col("b", "bytea"), Col("l", "list", elem=Col("", "text")),
            Col("m", "map", elem=Col("", "text"))]
    rows = [({"s": "", "b": "", "l": [], "m": {}}, ("", b"", [], [])),
            ({"s": "", "b": "", "l": [""], "m": {"": ""}}, ("", b"", [""], [("", "")]))]
    roundtrip(floe, tmp_path, cols, rows)


def test_float_specials(floe, tmp_path):
    cols = [Col("r", "real"), Col("d", "double precision")]
    inf, nan = float("inf"), float("nan")
    reals = [("NaN", nan), ("Infinity", inf), ("-Infinity", -inf), (-0.0, -0.0), (0.0, 0.0),
             (3.4028234663852886e38, 3.4028234663852886e38), (1.401298464324817e-45, 1.401298464324817e-45)]
    doubles = [("NaN", nan), ("Infinity", inf), ("-Infinity", -inf), (-0.0, -0.0), (0.0, 0.0),
               (1.7976931348623157e308, 1.7976931348623157e308), (5e-324, 5e-324)]
    rows = [({"r": rt, "d": dt_}, (f32(rv), f64(dv)))
            for (rt, rv), (dt_, dv) in zip(reals, doubles)]
    path = roundtrip(floe, tmp_path, cols, rows)
    stats = pq.ParquetFile(path).metadata.row_group(0).column(1).statistics
    assert stats.has_min_max                                    # NaN never in min/max
    assert stats.min == -inf and stats.max == inf


def test_integer_extremes(floe, tmp_path):
    cols = [Col("si", "smallint"), Col("i", "integer"), Col("bi", "bigint"), Col("u2", "uint2"),
            Col("u4", "uint4"), Col("u8", "uint8")]
    lo = {"si": -32768, "i": -2**31, "bi": -2**63, "u2": 0, "u4": 0, "u8": 0}
    hi = {"si": 32767, "i": 2**31 - 1, "bi": 2**63 - 1, "u2": 65535, "u4": 2**32 - 1,
          "u8": 18446744073709551615}
    rows = [(v, tuple(("dec", v[c.name]) if c.kind == "uint8" else v[c.name] for c in cols))
            for v in (lo, hi)]
    roundtrip(floe, tmp_path, cols, rows)


def test_numeric_extremes_and_exponents(floe, tmp_path):
    cols = [Col("a", "numeric", p=38, s=0), Col("b", "numeric", p=38, s=38),
            Col("c", "numeric", p=10, s=0), Col("d", "numeric", p=20, s=5)]
    big = "9" * 38
    rows = [
        ({"a": big, "b": "0." + big, "c": "1.2E+3", "d": "-123456789012345.12345"},
         (("dec", int(big)), ("dec", int(big)), ("dec", 1200), ("dec", -12345678901234512345))),
        ({"a": "-" + big, "b": "-0." + big, "c": "-5E+2", "d": "1e-5"},
         (("dec", -int(big)), ("dec", -int(big)), ("dec", -500), ("dec", 1))),
        ({"a": 0, "b": "0", "c": 12e2, "d": "-0.00000"},
         (("dec", 0), ("dec", 0), ("dec", 1200), ("dec", 0))),
    ]
    roundtrip(floe, tmp_path, cols, rows)


def test_dates_times_timestamps(floe, tmp_path):
    cols = [Col("d", "date"), Col("t", "time"), Col("ts", "timestamp"), Col("tz", "timestamptz")]
    rows = [
        ({"d": "1969-12-31", "t": "00:00:00", "ts": "1969-12-31 23:59:59.999999",
          "tz": "1970-01-01T00:59:59.999999+01:00"},
         (("date", -1), ("time", 0), ("ts", -1), ("ts", -1))),
        ({"d": "0001-01-01", "t": "23:59:59.999999", "ts": "2024-02-29T12:34:56.000001",
          "tz": "2024-02-29 12:34:56.5Z"},
         (("date", -719162), ("time", 86399999999), ("ts", 1709210096000001),
          ("ts", 1709210096500000))),
        ({"d": "1900-03-01", "t": "12:00:00.5", "ts": "1900-01-01 00:00:00",
          "tz": "2000-01-01 00:00:00-05:30"},
         (("date", -25508), ("time", 43200500000), ("ts", -2208988800000000),
          ("ts", 946704600000000))),
    ]
    roundtrip(floe, tmp_path, cols, rows)


def test_non_ascii_text(floe, tmp_path):
    cols = [Col("t", "text"), Col("m", "map", elem=Col("", "text"))]
    texts = ["Zoë", "日本語", "😀🎉", "Ωmega", "ľščťžýáíé", "\u00e9\u0301"]
    rows = [({"t": t, "m": {t: t}}, (t, [(t, t)])) for t in texts]
    roundtrip(floe, tmp_path, cols, rows)


def test_five_megabyte_binary(floe, tmp_path):
    import base64
    cols = [Col("id", "integer"), Col("blob", "bytea")]
    big = os.urandom(5 * 1024 * 1024)
    rows = [({"id": 1, "blob": base64.b64encode(big).decode()}, (1, big)),
            ({"id": 2, "blob": "AAE="}, (2, b"\x00\x01"))]
    path = roundtrip(floe, tmp_path, cols, rows)
    meta = pq.ParquetFile(path).metadata
    assert meta.serialized_size < 64 * 1024, "a 5 MB value must not bloat the footer"


def test_dictionary_overflows_mid_file(floe, tmp_path):
    cols = [Col("id", "integer"), Col("s", "text")]
    rows = []
    for i in range(60000):
        s = f"value-{i:08d}-" + "x" * 30 if i >= 20000 else f"low-{i % 7}"
        rows.append(({"id": i, "s": s}, (i, s)))
    path = roundtrip(floe, tmp_path, cols, rows, "--page-size", "64k",
                     "--dictionary-limit", "256k")
    col = pq.ParquetFile(path).metadata.row_group(0).column(1)
    kinds = pqpages.pages(path, col)
    assert kinds[0][0] == "DICTIONARY_PAGE"
    data_encodings = [enc for kind, enc, _ in kinds if kind.startswith("DATA_PAGE")]
    assert data_encodings[0] in ("PLAIN_DICTIONARY", "RLE_DICTIONARY")
    assert data_encodings[-1] == "PLAIN", data_encodings
    assert sum(n for kind, _, n in kinds if kind.startswith("DATA_PAGE")) == 60000


def test_many_pages_and_row_groups(floe, tmp_path):
    r = random.Random(5)
    cols = [Col("id", "bigint", not_null=True), Col("name", "text"),
            Col("tags", "list", elem=Col("", "text")), Col("price", "numeric", p=12, s=2)]
    rows = [gen_row(r, cols) for _ in range(40000)]
    path = roundtrip(floe, tmp_path, cols, rows, "--page-size", "4k", "--row-group-size", "256k")
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups >= 3
    assert sum(meta.row_group(i).num_rows for i in range(meta.num_row_groups)) == 40000
    pages = pqpages.pages(path, meta.row_group(0).column(0))
    assert sum(1 for kind, _, _ in pages if kind.startswith("DATA_PAGE")) >= 5


@pytest.mark.parametrize("codec", ["none", "snappy", "gzip", "zstd"])
def test_codecs(floe, tmp_path, codec):
    r = random.Random(9)
    path = roundtrip(floe, tmp_path, ALL_TYPES, [gen_row(r, ALL_TYPES) for _ in range(300)],
                     "--compression", codec)
    want = {"none": "UNCOMPRESSED", "snappy": "SNAPPY", "gzip": "GZIP", "zstd": "ZSTD"}[codec]
    meta = pq.ParquetFile(path).metadata
    assert all(meta.row_group(0).column(j).compression == want for j in range(meta.num_columns))


def field_ids(field, out):
    md = field.metadata or {}
    out.append((field.name, int(md[b"PARQUET:field_id"]) if b"PARQUET:field_id" in md else None))
    t = field.type
    if pa.types.is_list(t):
        field_ids(t.value_field, out)
    elif pa.types.is_map(t):
        field_ids(t.key_field, out)
        field_ids(t.item_field, out)
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            field_ids(t.field(i), out)


def test_field_ids_depth_first_preorder(floe, tmp_path):
    cols = [Col("a", "integer"),
            Col("b", "record", fields=[Col("x", "text"), Col("y", "list", elem=Col("", "bigint"))]),
            Col("c", "map", elem=Col("", "record", fields=[Col("p", "date")])),
            Col("d", "int4range"), Col("e", "text")]
    path = to_parquet(floe, tmp_path, cols, [{"a": 1}])
    ids = []
    for f in pq.read_schema(path):
        field_ids(f, ids)
    # a=1 b=2 x=3 y=4 element=5 c=6 key=7 value=8 p=9 d=10 lower..empty=11..15 e=16
    assert [i for _, i in ids] == list(range(1, 17)), ids
    assert [n for n, _ in ids][:3] == ["a", "b", "x"]


def test_statistics_match_pyarrow(floe, tmp_path):
    r = random.Random(3)
    cols = [c for c in ALL_TYPES if c.kind not in ("jsonb",)]
    path = roundtrip(floe, tmp_path, cols, [gen_row(r, cols) for _ in range(3000)],
                     "--row-group-size", "128k")
    f = pq.ParquetFile(path)
    table = f.read()
    offset = 0
    for g in range(f.metadata.num_row_groups):
        rg = f.metadata.row_group(g)
        part = table.slice(offset, rg.num_rows)
        offset += rg.num_rows
        for j, c in enumerate(cols):
            stats = rg.column(j).statistics
            values = part.column(j)
            assert stats is not None, c.name
            assert stats.null_count == values.null_count, c.name
            if c.kind in ("real", "double precision"):
                values = pc.filter(values, pc.invert(pc.is_nan(values)))
            values = values.drop_null()
            if len(values) == 0:
                continue
            assert stats.has_min_max, c.name
            if c.kind in ("text", "interval", "uuid", "bytea"):
                raw = [v.as_py() for v in values]
                enc = [v.encode() if isinstance(v, str) else v for v in raw]
                mn, mx = min(enc), max(enc)
                smin = stats.min.encode() if isinstance(stats.min, str) else stats.min
                smax = stats.max.encode() if isinstance(stats.max, str) else stats.max
                assert (smin, smax) == (mn, mx), c.name
            else:
                mm = pc.min_max(values)
                want_min, want_max = mm["min"].as_py(), mm["max"].as_py()
                if c.kind in ("real", "double precision") and want_min == 0:
                    want_min = -0.0
                assert stats.min == want_min and stats.max == want_max, \
                    (c.name, stats.min, stats.max, want_min, want_max)


@pytest.mark.parametrize("seed", range(40))
def test_random_schemas(floe, tmp_path, seed):
    """Random schemas with random nesting and random rows, every reader."""
    r = random.Random(seed)
    cols = rand_schema(r)
    rows = [gen_row(r, cols, null_rate=r.choice([0.0, 0.1, 0.5])) for _ in range(r.randint(0, 300))]
    print(f"seed {seed}: schema {render(cols)}")
    roundtrip(floe, tmp_path, cols, rows, "--page-size", r.choice(["2k", "64k", "1m"]),
              "--compression", r.choice(["none", "snappy", "gzip", "zstd"]))


BAD_INPUT = [
    ('{"id": 1, "name": "a"}\n{"id": 2, "name": "b"\n', 2, "JSON"),
    ('{"id": 1}\n{"id": 2}\n{"id": 3, "nope": 1}\n', 3, "nope"),
    ('{"id": "x"}\n', 1, "id"),
    ('{"id": 1}\n{"id": null}\n', 2, "id"),
    ('{"id": 1}\n{"id": 99999999999}\n', 2, "id"),
    ('{"id": 1, "name": 5}\n', 1, "name"),
    ('{"id": 1, "day": "2023-02-29"}\n', 1, "day"),
    ('[1, 2]\n', 1, ""),
]


@pytest.mark.parametrize("text,line,word", BAD_INPUT)
def test_bad_input_names_the_line(floe, tmp_path, text, line, word):
    src = tmp_path / "bad.ndjson"
    src.write_text(text)
    out = tmp_path / "bad.parquet"
    res = floe("to-parquet", "--schema", "id integer not null, name text, day date",
               "--input", src, "--output", out, check=False)
    assert res.returncode != 0
    assert f":{line}:" in res.stderr, res.stderr
    assert word.lower() in res.stderr.lower(), res.stderr
    assert not out.exists()
    assert os.listdir(tmp_path) == ["bad.ndjson"], "no partial or temporary file is left"


@pytest.mark.parametrize("schema,word", [
    ("id integr", "integr"), ("id numeric(39,2)", "39"), ("id numeric(5,6)", "scale"),
    ("a int, a text", "duplicate"), ("m map[int=>text]", "key"), ("x record(a int", ""),
])
def test_bad_schema_is_a_clear_error(floe, tmp_path, schema, word):
    src = tmp_path / "rows.ndjson"
    src.write_text("{}\n")
    res = floe("to-parquet", "--schema", schema, "--input", src, "--output",
               tmp_path / "o.parquet", check=False)
    assert res.returncode != 0
    assert "schema" in res.stderr.lower()
    assert word.lower() in res.stderr.lower(), res.stderr


def test_schema_from_file_and_stdin(floe, tmp_path):
    (tmp_path / "s.txt").write_text("id bigint not null,\n  name text\n")
    out = tmp_path / "o.parquet"
    floe("to-parquet", "--schema", "@" + str(tmp_path / "s.txt"), "--input", "-", "--output", out,
         input='{"id": 7, "name": "seven"}\n\n{"id": 8}\n')
    assert pq.read_table(out).to_pylist() == [{"id": 7, "name": "seven"}, {"id": 8, "name": None}]
