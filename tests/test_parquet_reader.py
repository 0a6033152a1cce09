"""floe's Parquet reader on files other writers made: pyarrow (every encoding,
both data page versions, every codec, many pages and row groups, nested
types), DuckDB (its V1 and V2 writers, FIELD_IDS) and Java Iceberg
(Parquet.write + GenericParquetWriter, the tests/pqjava program).

build/tests/test_parquet_read_tool (FLOE_BUILD picks the build) prints each
row as floe's JSON with its position; every value is compared with what
pyarrow reads from the same file, after both sides are put in one canonical
form (floats as bits, temporal values as integers, decimals unscaled, bytes
as bytes).  Projections are Iceberg schema JSON, so fields are matched by
field id, by name only when the file has no ids.
"""
import base64
import datetime
import decimal
import json
import math
import os
import random
import struct
import subprocess
import uuid

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import ROOT, tool_bin

TOOL = tool_bin("test_parquet_read_tool")
PQJAVA = os.path.join(ROOT, "tests", "pqjava", "target")

EPOCH = datetime.datetime(1970, 1, 1)
EPOCH_DAY = datetime.date(1970, 1, 1)
US = datetime.timedelta(microseconds=1)


def run_tool(*args, check=True):
    p = subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True, timeout=600)
    for bad in ("runtime error", "AddressSanitizer", "LeakSanitizer"):
        assert bad not in p.stderr, p.stderr[-4000:]
    if check:
        assert p.returncode == 0, p.stderr[-4000:]
    return p


def floe_read(path, schema=None, tmp_path=None, batch=None):
    """Rows as floe reads them (positions checked) and the schema used."""
    args = ["read", path]
    if schema is not None:
        spath = os.path.join(tmp_path, "projection.json")
        with open(spath, "w") as f:
            json.dump(schema, f)
        args.append(spath)
    else:
        schema = json.loads(run_tool("schema", path).stdout)
    if batch:
        args += ["--batch", batch]
    lines = run_tool(*args).stdout.splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["pos"] for r in rows] == list(range(len(rows)))
    return [r["row"] for r in rows], schema


# ---- one canonical form for both sides ---------------------------------------------------

def f32(x):
    return ("f", struct.pack("<f", x)) if not math.isnan(x) else ("f", "nan")


def f64(x):
    return ("d", struct.pack("<d", x)) if not math.isnan(x) else ("d", "nan")


def float_from_json(v):
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(v, v) \
        if isinstance(v, str) else float(v)


def micros_from_text(s):
    """floe's timestamp text ('YYYY-MM-DD HH:MM:SS[.f][Z]') to micros."""
    s = s.rstrip("Z")
    day, _, tod = s.partition(" ")
    days = (datetime.date.fromisoformat(day) - EPOCH_DAY).days
    return days * 86400000000 + time_micros(tod)


def time_micros(s):
    hms, _, frac = s.partition(".")
    h, m, sec = (int(x) for x in hms.split(":"))
    return ((h * 60 + m) * 60 + sec) * 1000000 + (int(frac.ljust(6, "0")) if frac else 0)


def canon_floe(v, t):
    """A value of floe's JSON, of Iceberg type t, in canonical form."""
    if v is None:
        return None
    if isinstance(t, dict):
        if t["type"] == "struct":
            return {f["name"]: canon_floe(v[f["name"]], f["type"]) for f in t["fields"]}
        if t["type"] == "list":
            return [canon_floe(x, t["element"]) for x in v]
        if isinstance(v, dict):
            return [(canon_floe(k, t["key"]), canon_floe(x, t["value"])) for k, x in v.items()]
        return [(canon_floe(e["key"], t["key"]), canon_floe(e["value"], t["value"])) for e in v]
    if t == "float":
        return f32(float_from_json(v))
    if t == "double":
        return f64(float_from_json(v))
    if t.startswith("decimal"):
        scale = int(t.split(",")[1].rstrip(")"))
        return int(decimal.Decimal(v).scaleb(scale))
    if t == "date":
        return (datetime.date.fromisoformat(v) - EPOCH_DAY).days
    if t == "time":
        return time_micros(v)
    if t in ("timestamp", "timestamptz"):
        assert v.endswith("Z") == (t == "timestamptz"), v
        return micros_from_text(v)
    if t == "binary" or t.startswith("fixed"):
        return base64.b64decode(v)
    if t == "uuid":
        assert v == str(uuid.UUID(v)), v          # canonical lower-case text
        return uuid.UUID(v).bytes
    return v


def temporal_micros(v):
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return (v - EPOCH) // US
    if isinstance(v, datetime.time):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1000000 + v.microsecond
    return (v - EPOCH_DAY).days


def canon_arrow(v, t):
    """A pyarrow Python value of arrow type t in canonical form (temporal
    values with sub-microsecond units arrive as raw integers, see table_rows)."""
    if v is None:
        return None
    if pa.types.is_struct(t):
        return {t.field(i).name: canon_arrow(v[t.field(i).name], t.field(i).type)
                for i in range(t.num_fields)}
    if pa.types.is_map(t):
        return [(canon_arrow(k, t.key_type), canon_arrow(x, t.item_type)) for k, x in v]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [canon_arrow(x, t.value_type) for x in v]
    if pa.types.is_float32(t):
        return f32(v)
    if pa.types.is_float64(t):
        return f64(v)
    if pa.types.is_decimal(t):
        return int(v.scaleb(t.scale))
    if isinstance(v, uuid.UUID):
        return v.bytes
    if isinstance(v, (datetime.date, datetime.time)):
        return temporal_micros(v)
    if pa.types.is_dictionary(t):
        return canon_arrow(v, t.value_type)
    return v


def raw_micros(col):
    """Timestamps and times of any unit as integer micros (floored), dates as days."""
    t = col.type
    ints = col.cast(pa.int32() if pa.types.is_date32(t) or pa.types.is_time32(t)
                    else pa.int64()).to_pylist()
    per = {"s": 1000000, "ms": 1000, "us": 1, "ns": None}.get(getattr(t, "unit", "us"))
    if pa.types.is_date32(t):
        return ints
    if per is None:
        return [None if x is None else x // 1000 for x in ints]
    return [None if x is None else x * per for x in ints]


def table_rows(table):
    cols = []
    for name in table.column_names:
        col = table.column(name)
        t = col.type
        if pa.types.is_timestamp(t) or pa.types.is_time(t) or pa.types.is_date32(t):
            cols.append(raw_micros(col))
        else:
            cols.append([canon_arrow(v, t) for v in col.to_pylist()])
    return [dict(zip(table.column_names, vals)) for vals in zip(*cols)]


def fields_of(schema):
    return {f["name"]: f["type"] for f in schema["fields"]}


def check_file(path, tmp_path, schema=None, batch=None, columns=None):
    """floe's rows of path equal pyarrow's, value by value."""
    got, used = floe_read(path, schema, tmp_path, batch)
    types = fields_of(used)
    got = [{k: canon_floe(v, types[k]) for k, v in row.items()} for row in got]
    table = pq.read_table(path, columns=columns or [f["name"] for f in used["fields"]],
                          use_threads=False)
    want = table_rows(table)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"row {i}:\n floe    {g}\n pyarrow {w}"
    return got


# ---- tables ---------------------------------------------------------------------------------

def with_ids(schema):
    """The arrow schema with Iceberg field ids on every field, depth-first from 1."""
    next_id = [1]

    def field(f):
        fid = next_id[0]
        next_id[0] += 1
        t = f.type
        if pa.types.is_struct(t):
            t = pa.struct([field(t.field(i)) for i in range(t.num_fields)])
        elif pa.types.is_map(t):
            t = pa.map_(field(t.key_field), field(t.item_field))
        elif pa.types.is_list(t):
            t = pa.list_(field(t.value_field))
        return pa.field(f.name, t, f.nullable, {b"PARQUET:field_id": str(fid).encode()})

    return pa.schema([field(f) for f in schema])


def strip_ids(schema):
    """The arrow schema without field metadata, nested fields included."""
    def field(f):
        t = f.type
        if pa.types.is_struct(t):
            t = pa.struct([field(t.field(i)) for i in range(t.num_fields)])
        elif pa.types.is_map(t):
            t = pa.map_(field(t.key_field), field(t.item_field))
        elif pa.types.is_list(t):
            t = pa.list_(field(t.value_field))
        return pa.field(f.name, t, f.nullable)
    return pa.schema([field(f) for f in schema])


def maybe(rng, v, pct=15):
    return None if rng.random() * 100 < pct else v


def flat_table(n=2500, seed=1):
    rng = random.Random(seed)
    words = ["", "a", "hello", "wörld", "☃ snow", "x" * 40]
    base = datetime.datetime(2001, 2, 3, 4, 5, 6)
    floats = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.5, -3.25, 1e-40, 3.4e38]
    cols = {
        "i8": (pa.int8(), lambda i: rng.randint(-128, 127)),
        "i16": (pa.int16(), lambda i: rng.randint(-32768, 32767)),
        "i32": (pa.int32(), lambda i: rng.choice([-2**31, 2**31 - 1, 0, rng.randint(-9, 9)])),
        "i64": (pa.int64(), lambda i: rng.choice([-2**63, 2**63 - 1, i, rng.getrandbits(40)])),
        "u8": (pa.uint8(), lambda i: rng.randint(0, 255)),
        "u16": (pa.uint16(), lambda i: rng.randint(0, 65535)),
        "u32": (pa.uint32(), lambda i: rng.randint(0, 2**32 - 1)),
        "b": (pa.bool_(), lambda i: rng.random() < 0.3),
        "f": (pa.float32(), lambda i: rng.choice(floats + [rng.uniform(-1e6, 1e6)])),
        "d": (pa.float64(), lambda i: rng.choice(floats + [rng.uniform(-1e300, 1e300)])),
        "s": (pa.string(), lambda i: rng.choice(words) if i % 3 else f"v{rng.getrandbits(30)}"),
        "bin": (pa.binary(), lambda i: bytes(rng.getrandbits(8) for _ in range(i % 9))),
        "fx": (pa.binary(5), lambda i: bytes(rng.getrandbits(8) for _ in range(5))),
        "dt": (pa.date32(), lambda i: datetime.date(1, 1, 1) + datetime.timedelta(rng.randint(0, 3000000))),
        "t32": (pa.time32("ms"), lambda i: datetime.time(rng.randint(0, 23), rng.randint(0, 59), 1, 1000 * rng.randint(0, 999))),
        "t64": (pa.time64("us"), lambda i: datetime.time(23, 59, 59, rng.randint(0, 999999))),
        "tns": (pa.time64("ns"), lambda i: rng.randint(0, 86399999999999)),
        "ts_ms": (pa.timestamp("ms"), lambda i: base + datetime.timedelta(milliseconds=rng.randint(-10**12, 10**12))),
        "ts_us": (pa.timestamp("us", tz="UTC"), lambda i: (base + i * US).replace(tzinfo=datetime.timezone.utc)),
        "ts_ns": (pa.timestamp("ns"), lambda i: rng.randint(-2**62, 2**62)),
        "d7": (pa.decimal128(7, 2), lambda i: decimal.Decimal(rng.randint(-9999999, 9999999)).scaleb(-2)),
        "d18": (pa.decimal128(18, 4), lambda i: decimal.Decimal(rng.randint(-10**18 + 1, 10**18 - 1)).scaleb(-4)),
        "d38": (pa.decimal128(38, 9), lambda i: decimal.Decimal(rng.randint(-10**38 + 1, 10**38 - 1)).scaleb(-9)),
        "u": (pa.uuid(), lambda i: uuid.UUID(int=rng.getrandbits(128)).bytes),
    }
    data = {}
    for name, (t, make) in cols.items():
        vals = [maybe(rng, make(i)) for i in range(n)]
        data[name] = pa.array(vals, t) if name != "u" \
            else pa.ExtensionArray.from_storage(t, pa.array(vals, pa.binary(16)))
    data["nul"] = pa.nulls(n)                    # the UNKNOWN logical type
    table = pa.table(data)
    return table.cast(with_ids(table.schema))


def nested_table(n=1500, seed=2):
    rng = random.Random(seed)

    def lst(make, k=4):
        return maybe(rng, [maybe(rng, make()) for _ in range(rng.randint(0, k))], 20)

    point = pa.struct([("x", pa.int64()), ("y", pa.string()), ("z", pa.list_(pa.float64()))])
    types = {
        "id": pa.int64(),
        "tags": pa.list_(pa.string()),
        "pts": pa.list_(point),
        "m": pa.map_(pa.string(), pa.int32()),
        "mi": pa.map_(pa.int32(), pa.list_(pa.int16())),
        "ll": pa.list_(pa.list_(pa.string())),
        "st": pa.struct([("a", pa.int32()), ("b", pa.struct([("c", pa.list_(pa.bool_())),
                                                              ("d", pa.date32())]))]),
    }

    def pt():
        return {"x": rng.getrandbits(50), "y": maybe(rng, f"p{rng.randint(0, 9)}"),
                "z": lst(lambda: rng.uniform(-1, 1), 3)}

    rows = {
        "id": lambda i: i,
        "tags": lambda i: lst(lambda: rng.choice(["a", "bb", "", "ccc"])),
        "pts": lambda i: lst(pt, 3),
        "m": lambda i: maybe(rng, [(f"k{j}", maybe(rng, j * i % 1000)) for j in range(rng.randint(0, 3))]),
        "mi": lambda i: maybe(rng, [(j, lst(lambda: rng.randint(-99, 99), 2)) for j in range(rng.randint(0, 2))]),
        "ll": lambda i: lst(lambda: lst(lambda: rng.choice(["x", "yy"]), 2), 3),
        "st": lambda i: maybe(rng, {"a": maybe(rng, i), "b": maybe(rng, {
            "c": lst(lambda: rng.random() < 0.5, 3),
            "d": maybe(rng, EPOCH_DAY + datetime.timedelta(i))})}),
    }
    table = pa.table({k: pa.array([rows[k](i) for i in range(n)], types[k]) for k in types})
    return table.cast(with_ids(table.schema))


PAGES = dict(data_page_size=512, row_group_size=700, write_batch_size=64)

FLAT_CASES = {
    "v1-dict-snappy": dict(use_dictionary=True, data_page_version="1.0", compression="snappy"),
    "v2-dict-zstd": dict(use_dictionary=True, data_page_version="2.0", compression="zstd"),
    "v1-plain-gzip": dict(use_dictionary=False, data_page_version="1.0", compression="gzip"),
    "v2-plain-none": dict(use_dictionary=False, data_page_version="2.0", compression="none"),
    "v2-delta-zstd": dict(use_dictionary=False, data_page_version="2.0", compression="zstd",
                          store_decimal_as_integer=True,      # decimals in INT32 / INT64
                          column_encoding={"i8": "DELTA_BINARY_PACKED", "i16": "DELTA_BINARY_PACKED",
                                           "i32": "DELTA_BINARY_PACKED", "i64": "DELTA_BINARY_PACKED",
                                           "u32": "DELTA_BINARY_PACKED", "ts_ns": "DELTA_BINARY_PACKED",
                                           "dt": "DELTA_BINARY_PACKED", "d18": "DELTA_BINARY_PACKED",
                                           "s": "DELTA_BYTE_ARRAY", "bin": "DELTA_LENGTH_BYTE_ARRAY",
                                           "fx": "DELTA_BYTE_ARRAY", "d38": "DELTA_BYTE_ARRAY",
                                           "b": "RLE"}),
    "v1-split-snappy": dict(use_dictionary=False, data_page_version="1.0", compression="snappy",
                            column_encoding={"f": "BYTE_STREAM_SPLIT", "d": "BYTE_STREAM_SPLIT",
                                             "i32": "BYTE_STREAM_SPLIT", "i64": "BYTE_STREAM_SPLIT",
                                             "fx": "BYTE_STREAM_SPLIT", "u": "BYTE_STREAM_SPLIT",
                                             "d7": "BYTE_STREAM_SPLIT", "b": "RLE"}),
    "v1-delta-v1": dict(use_dictionary=False, data_page_version="1.0", compression="none",
                        column_encoding={"i64": "DELTA_BINARY_PACKED", "s": "DELTA_LENGTH_BYTE_ARRAY",
                                         "bin": "DELTA_BYTE_ARRAY"}),
}


@pytest.mark.parametrize("case", sorted(FLAT_CASES))
def test_pyarrow_flat_every_encoding(tmp_path, case):
    path = str(tmp_path / "flat.parquet")
    pq.write_table(flat_table(), path, **PAGES, **FLAT_CASES[case])
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups > 2
    check_file(path, tmp_path)
    if case == "v2-delta-zstd":
        encodings = {e for rg in range(meta.num_row_groups)
                     for c in range(meta.num_columns)
                     for e in meta.row_group(rg).column(c).encodings}
        assert {"DELTA_BINARY_PACKED", "DELTA_BYTE_ARRAY", "DELTA_LENGTH_BYTE_ARRAY"} <= encodings


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
def test_pyarrow_nested(tmp_path, version, dictionary):
    path = str(tmp_path / "nested.parquet")
    pq.write_table(nested_table(), path, **PAGES, use_dictionary=dictionary,
                   data_page_version=version, compression="zstd" if dictionary else "snappy")
    check_file(path, tmp_path, batch=97 if dictionary else None)


def test_pyarrow_int96_and_legacy_names(tmp_path):
    """Spark's INT96 timestamps; arrow's non-compliant list element names."""
    path = str(tmp_path / "int96.parquet")
    flat = flat_table(300).select(["ts_ms", "ts_us", "i64"])
    nested = nested_table(300).select(["tags", "ll", "pts"])
    both = pa.table({c: t.column(c) for t in (flat, nested) for c in t.column_names})
    both = both.cast(with_ids(both.schema))
    pq.write_table(both, path, use_deprecated_int96_timestamps=True,
                   use_compliant_nested_type=False, data_page_size=256)
    text = str(pq.ParquetFile(path).schema)
    assert "int96" in text and "item" in text
    got = check_file(path, tmp_path)
    assert any(r["ts_ms"] is not None for r in got)


@pytest.mark.parametrize("codec", ["lz4", "brotli"])
def test_unsupported_codecs_are_named(tmp_path, codec):
    path = str(tmp_path / "c.parquet")
    pq.write_table(pa.table({"a": [1, 2, 3]}), path, compression=codec)
    p = run_tool("read", path, check=False)
    assert p.returncode == 1
    assert "FLOE_EUNSUPPORTED" in p.stderr
    assert {"lz4": "LZ4", "brotli": "BROTLI"}[codec] in p.stderr


# ---- projections -------------------------------------------------------------------------------

def test_projection_by_field_id(tmp_path):
    """Fields are found by id whatever their names; a missing one is null."""
    path = str(tmp_path / "ids.parquet")
    table = flat_table(600)
    pq.write_table(table, path, **PAGES)
    schema = json.loads(run_tool("schema", path).stdout)
    by_name = {f["name"]: f for f in schema["fields"]}
    proj = {"type": "struct", "schema-id": 0, "fields": [
        dict(by_name["s"], name="renamed_s"),
        dict(by_name["i32"], name="other", type="long"),            # int -> long
        {"id": 999, "name": "missing", "required": False, "type": "string"},
        dict(by_name["f"], name="ff", type="double"),                # float -> double
        dict(by_name["d7"], name="dec", type="decimal(20, 2)"),      # wider decimal
        dict(by_name["ts_us"]),
    ]}
    got, _ = floe_read(path, proj, str(tmp_path))
    want = table.select(["s", "i32", "f", "d7"]).to_pylist()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g["renamed_s"] == w["s"]
        assert g["other"] == w["i32"]
        assert g["missing"] is None
        if w["f"] is None:
            assert g["ff"] is None
        elif not math.isnan(w["f"]):
            assert float_from_json(g["ff"]) == w["f"]                # exactly the float's value
        assert (g["dec"] is None) == (w["d7"] is None)
        if w["d7"] is not None:
            assert decimal.Decimal(g["dec"]) == w["d7"]


def test_projection_by_name_without_ids(tmp_path):
    path = str(tmp_path / "names.parquet")
    table = nested_table(300)
    pq.write_table(table.cast(strip_ids(table.schema)), path)
    assert "field_id=" not in str(pq.ParquetFile(path).schema).replace("field_id=-1", "")
    check_file(path, tmp_path)


def test_projection_required_missing_and_incompatible(tmp_path):
    path = str(tmp_path / "p.parquet")
    pq.write_table(flat_table(50), path)
    proj = {"type": "struct", "fields": [{"id": 777, "name": "x", "required": True, "type": "int"}]}
    spath = tmp_path / "p.json"
    spath.write_text(json.dumps(proj))
    p = run_tool("read", path, spath, check=False)
    assert p.returncode == 1 and "FLOE_EINCOMPATIBLE" in p.stderr and "777" in p.stderr
    schema = json.loads(run_tool("schema", path).stdout)
    s_field = next(f for f in schema["fields"] if f["name"] == "s")
    spath.write_text(json.dumps({"type": "struct", "fields": [dict(s_field, type="long")]}))
    p = run_tool("read", path, spath, check=False)
    assert p.returncode == 1 and "FLOE_EINCOMPATIBLE" in p.stderr and "column s" in p.stderr


def test_position_delete_file(tmp_path):
    """file_path (id 2147483546) and pos (id 2147483545), as Iceberg writes them."""
    path = str(tmp_path / "deletes.parquet")
    schema = pa.schema([
        pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
        pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"}),
    ])
    files = [f"s3://bucket/t/data/{k:05d}.parquet" for k in range(3)]
    rows = [(files[k], p) for k in range(3) for p in range(0, 3000, 7)]
    pq.write_table(pa.table({"file_path": [r[0] for r in rows], "pos": [r[1] for r in rows]},
                            schema=schema), path, **PAGES)
    p = run_tool("read-deletes", path, "--batch", 1000)
    got = [json.loads(line) for line in p.stdout.splitlines()]
    assert [g["pos"] for g in got] == list(range(len(rows)))
    got = [g["row"] for g in got]
    assert [(g["file_path"], g["pos"]) for g in got] == rows


# ---- DuckDB ---------------------------------------------------------------------------------------

DUCK_SELECT = """
SELECT i::INTEGER AS i, (i * 7919)::BIGINT AS l, 'v' || (i % 13) AS s,
       CASE WHEN i % 5 = 0 THEN NULL ELSE repeat('x', i % 17) END AS t,
       i % 3 = 0 AS b, (i / 7)::DOUBLE AS f, (i / 3)::FLOAT AS r,
       (i * 1.25)::DECIMAL(9,2) AS d9, (i * 3.001)::DECIMAL(18,3) AS d18,
       (i * 1.5)::DECIMAL(30,5) AS d30,
       DATE '1999-12-31' + i::INTEGER AS dt, TIME '01:02:03' + INTERVAL (i) SECOND AS tm,
       TIMESTAMP '2024-02-29 12:00:00' + INTERVAL (i * 1001) MILLISECOND AS ts,
       TIMESTAMPTZ '2024-02-29 12:00:00+00' + INTERVAL (i) MINUTE AS tz,
       CASE WHEN i % 4 = 0 THEN NULL ELSE [i, NULL, i + 1][1:(i % 4)] END AS li,
       {'a': i, 'b': CASE WHEN i % 6 = 0 THEN NULL ELSE 'n' || i END} AS st,
       CASE WHEN i % 9 = 0 THEN NULL ELSE MAP {'k' || (i % 3): i, 'z': NULL} END AS m,
       [[i], [], NULL] AS ll,
       ('00000000-0000-0000-0000-' || lpad(i::VARCHAR, 12, '0'))::UUID AS u
FROM range(4000) t(i)
"""
DUCK_IDS = ("i: 1, l: 2, s: 3, t: 4, b: 5, f: 6, r: 7, d9: 8, d18: 9, d30: 10, dt: 11, tm: 12, "
            "ts: 13, tz: 14, li: {__duckdb_field_id: 15, element: 16}, "
            "st: {__duckdb_field_id: 17, a: 18, b: 19}, "
            "m: {__duckdb_field_id: 20, key: 21, value: 22}, "
            "ll: {__duckdb_field_id: 23, element: {__duckdb_field_id: 24, element: 25}}, u: 26")


@pytest.mark.parametrize("version,codec", [("V1", "snappy"), ("V2", "zstd"), ("V1", "uncompressed"),
                                           ("V2", "gzip")])
def test_duckdb_files(tmp_path, version, codec):
    path = str(tmp_path / "duck.parquet")
    con = duckdb.connect()
    con.execute("SET threads = 1")
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"COPY ({DUCK_SELECT}) TO '{path}' (FORMAT parquet, COMPRESSION {codec}, "
                f"ROW_GROUP_SIZE 1500, PARQUET_VERSION {version}, FIELD_IDS {{{DUCK_IDS}}})")
    schema = json.loads(run_tool("schema", path).stdout)
    assert [f["id"] for f in schema["fields"]][:3] == [1, 2, 3]
    got = check_file(path, tmp_path)
    assert got[1]["li"] == [1]


# ---- Java Iceberg (tests/pqjava) ------------------------------------------------------------------

def pqjava_cmd():
    lib = os.path.join(PQJAVA, "lib")
    classes = os.path.join(PQJAVA, "classes")
    if not os.path.isdir(lib) or not os.path.isdir(classes):
        pytest.fail("tests/pqjava is not built: scripts/install-deps.sh builds it")
    return ["java", "-cp", f"{classes}:{lib}/*", "floe.pqjava.WriteFile"]


@pytest.mark.parametrize("codec,version,dictionary", [("zstd", "v1", True), ("snappy", "v2", True),
                                                      ("gzip", "v1", False),
                                                      ("uncompressed", "v2", False)])
def test_java_iceberg_files(tmp_path, codec, version, dictionary):
    path = str(tmp_path / "java.parquet")
    cmd = pqjava_cmd() + [path, "3000", codec, version, "true" if dictionary else "false"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    iceberg_schema = json.loads(p.stdout)            # the schema the program wrote with
    meta = pq.ParquetFile(path).metadata
    assert meta.created_by.startswith("parquet-mr") or "parquet" in meta.created_by
    check_file(path, tmp_path, schema=iceberg_schema)
