"""Helpers for the Parquet encoder's reader tests (no tests here).

Cases are written by the C program build/tests/test_parquet_files (or
$FLOE_BUILD/tests/...): Python describes a schema in the same short text form
the C test helpers parse, gives rows as Python values, and gets back the
Parquet file and the Iceberg metrics floe computed for it.

Python values by type: bool, int, float, decimal.Decimal, datetime.date,
datetime.time, datetime.datetime (naive for timestamp, UTC-aware for
timestamptz), str, bytes (binary/fixed), uuid.UUID, dict (struct), list
(list), list of (key, value) tuples (map), None.  `Big(byte, n)` is n copies
of one byte for binary columns.
"""
import datetime
import decimal
import json
import math
import os
import re
import struct
import subprocess
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("FLOE_BUILD", "build")
PROG = os.path.join(ROOT, BUILD, "tests", "test_parquet_files")

EPOCH = datetime.datetime(1970, 1, 1)
EPOCH_TZ = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
US = datetime.timedelta(microseconds=1)


class Big:
    """n copies of one byte (a binary value too large to spell out)."""

    def __init__(self, byte, n):
        self.byte, self.n = byte, n

    def bytes(self):
        return bytes([self.byte]) * self.n


# ---- schema text -------------------------------------------------------------------

PRIMS = {"boolean", "int", "long", "float", "double", "date", "time", "timestamp",
         "timestamptz", "string", "uuid", "binary"}


class Field:
    def __init__(self, name, typ, required, fid):
        self.name, self.type, self.required, self.id = name, typ, required, fid

    def __repr__(self):
        return f"Field({self.name}, {self.type}, {self.required}, {self.id})"


class _Parser:
    def __init__(self, text):
        self.toks = re.findall(r"[A-Za-z_][A-Za-z_0-9]*|\d+|[<>(),!]", text)
        self.i = 0
        self.next_id = 1

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, want=None):
        t = self.toks[self.i]
        if want is not None and t != want:
            raise ValueError(f"expected {want!r}, got {t!r}")
        self.i += 1
        return t

    def field(self, name):
        fid = self.next_id
        self.next_id += 1
        typ = self.type()
        req = False
        if self.peek() == "!":
            self.take()
            req = True
        return Field(name, typ, req, fid)

    def fields(self, end):
        out = []
        while self.peek() not in (None, end):
            name = self.take()
            out.append(self.field(name))
            if self.peek() != ",":
                break
            self.take()
        return out

    def type(self):
        w = self.take()
        if w == "decimal":
            self.take("(")
            p = int(self.take())
            self.take(",")
            s = int(self.take())
            self.take(")")
            return ("decimal", p, s)
        if w == "fixed":
            self.take("(")
            n = int(self.take())
            self.take(")")
            return ("fixed", n)
        if w == "struct":
            self.take("<")
            fs = self.fields(">")
            self.take(">")
            return ("struct", fs)
        if w == "list":
            self.take("<")
            el = self.field("element")
            self.take(">")
            return ("list", el)
        if w == "map":
            self.take("<")
            k = self.field("key")
            k.required = True
            self.take(",")
            v = self.field("value")
            self.take(">")
            return ("map", k, v)
        if w not in PRIMS:
            raise ValueError(f"unknown type {w}")
        return (w,)


def parse_schema(text):
    p = _Parser(text)
    fs = p.fields(None)
    if p.peek() is not None:
        raise ValueError(f"trailing schema text at {p.peek()!r}")
    return fs


def leaves(fields, inside_repeated=False, path=()):
    """(Field, path, inside list/map) for every primitive field, in column order."""
    out = []
    for f in fields:
        k = f.type[0]
        if k == "struct":
            out += leaves(f.type[1], inside_repeated, path + (f.name,))
        elif k == "list":
            out += leaves([f.type[1]], True, path + (f.name, "list"))
        elif k == "map":
            out += leaves([f.type[1], f.type[2]], True, path + (f.name, "key_value"))
        else:
            out.append((f, path + (f.name,), inside_repeated))
    return out


def all_fields(fields):
    for f in fields:
        yield f
        k = f.type[0]
        if k == "struct":
            yield from all_fields(f.type[1])
        elif k == "list":
            yield from all_fields([f.type[1]])
        elif k == "map":
            yield from all_fields([f.type[1], f.type[2]])


# ---- values ------------------------------------------------------------------------

WIDE = decimal.Context(prec=200)


def unscaled(v, scale):
    """The unscaled integer of a decimal value (exact: no 28-digit rounding)."""
    return int(decimal.Decimal(v).scaleb(scale, context=WIDE))


def f32(x):
    """x rounded to float32, as a Python float."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _float_json(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def encode(typ, v):
    """A Python value as the C program's JSON."""
    if v is None:
        return None
    k = typ[0]
    if k in ("boolean", "int", "long"):
        return v
    if k in ("float", "double"):
        return _float_json(v)
    if k == "decimal":
        return str(unscaled(v, typ[2]))
    if k == "date":
        return (v - datetime.date(1970, 1, 1)).days
    if k == "time":
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1000000 + v.microsecond
    if k == "timestamp":
        return (v - EPOCH) // US
    if k == "timestamptz":
        return (v - EPOCH_TZ) // US
    if k == "string":
        return v
    if k == "uuid":
        return v.bytes.hex()
    if k in ("binary", "fixed"):
        if isinstance(v, Big):
            return {"byte": v.byte, "n": v.n}
        return v.hex()
    if k == "struct":
        return [encode(f.type, v.get(f.name)) for f in typ[1]]
    if k == "list":
        return [encode(typ[1].type, x) for x in v]
    if k == "map":
        return [[encode(typ[1].type, a), encode(typ[2].type, b)] for a, b in v]
    raise ValueError(k)


def expected(typ, v):
    """What a reader should give back for a written Python value."""
    if v is None:
        return None
    k = typ[0]
    if k == "float":
        return f32(v)
    if k in ("binary", "fixed") and isinstance(v, Big):
        return v.bytes()
    if k == "struct":
        return {f.name: expected(f.type, v.get(f.name)) for f in typ[1]}
    if k == "list":
        return [expected(typ[1].type, x) for x in v]
    if k == "map":
        return [(expected(typ[1].type, a), expected(typ[2].type, b)) for a, b in v]
    return v


def norm(v):
    """A comparable form: NaN and -0.0 made explicit, uuids as bytes, maps as
    lists of pairs, aware datetimes in UTC."""
    if isinstance(v, float):
        if math.isnan(v):
            return ("nan",)
        if v == 0:
            return ("zero", math.copysign(1, v))
        return v
    if isinstance(v, uuid.UUID):
        return v.bytes
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, datetime.datetime) and v.tzinfo is not None:
        return ("tz", v.astimezone(datetime.timezone.utc).replace(tzinfo=None))
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    return v


# ---- writing -----------------------------------------------------------------------

def write_case(tmp_path, name, schema, rows, **options):
    """Write rows (lists of top-level values) with floe; returns (path, metrics)."""
    fields = parse_schema(schema)
    case = {
        "schema": schema,
        "options": options,
        "rows": [[encode(f.type, v) for f, v in zip(fields, row)] for row in rows],
    }
    cpath = os.path.join(tmp_path, name + ".json")
    ppath = os.path.join(tmp_path, name + ".parquet")
    mpath = os.path.join(tmp_path, name + ".metrics.json")
    with open(cpath, "w") as fh:
        json.dump(case, fh)
    res = subprocess.run([PROG, "write", cpath, ppath, mpath], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    with open(mpath) as fh:
        metrics = json.load(fh)
    return ppath, metrics


def expected_rows(schema, rows):
    fields = parse_schema(schema)
    return [{f.name: expected(f.type, v) for f, v in zip(fields, row)} for row in rows]


# ---- reading -----------------------------------------------------------------------

def read_pyarrow(path):
    import pyarrow.parquet as pq
    return pq.read_table(path).to_pylist()


def read_duckdb(path):
    import duckdb
    con = duckdb.connect()
    try:
        con.sql("set arrow_lossless_conversion = true")   # uuids as uuids
        tbl = con.sql(f"select * from read_parquet('{path}')").to_arrow_table()
    finally:
        con.close()
    return tbl.to_pylist()


def read_polars(path):
    import polars as pl
    return pl.read_parquet(path).to_arrow().to_pylist()


READERS = {"pyarrow": read_pyarrow, "duckdb": read_duckdb, "polars": read_polars}


def assert_rows_equal(got, want, reader=""):
    assert len(got) == len(want), f"{reader}: {len(got)} rows, want {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        ng, nw = norm(g), norm(w)
        if ng != nw:
            for k in nw:
                assert ng.get(k) == nw[k], f"{reader}: row {i} column {k}: {ng.get(k)!r} != {nw[k]!r}"
        assert ng == nw, f"{reader}: row {i}: {g!r} != {w!r}"


# ---- Iceberg single-value serialization (independent of the C code) ---------------

def iceberg_value(typ, v):
    k = typ[0]
    if k == "boolean":
        return b"\x01" if v else b"\x00"
    if k in ("int", "date"):
        if k == "date":
            v = (v - datetime.date(1970, 1, 1)).days
        return struct.pack("<i", v)
    if k in ("long", "time", "timestamp", "timestamptz"):
        return struct.pack("<q", encode(typ, v))
    if k == "float":
        return struct.pack("<f", v)
    if k == "double":
        return struct.pack("<d", v)
    if k == "decimal":
        n = unscaled(v, typ[2])
        size = 1
        while not (-(1 << (8 * size - 1)) <= n < (1 << (8 * size - 1))):
            size += 1
        return n.to_bytes(size, "big", signed=True)
    if k == "string":
        return v.encode()
    if k == "uuid":
        return v.bytes
    if k in ("binary", "fixed"):
        return v.bytes() if isinstance(v, Big) else v
    raise ValueError(k)


def truncate_lower(typ, b):
    if typ[0] == "string":
        return b.decode()[:16].encode()
    if typ[0] == "binary":
        return b[:16]
    return b


def truncate_upper(typ, b):
    """Iceberg's truncate(16) upper bound, or None when there is none."""
    if typ[0] == "string":
        s = b.decode()
        if len(s) <= 16:
            return b
        cps = [ord(c) for c in s[:16]]
        for i in range(15, -1, -1):
            c = cps[i]
            if c == 0x10FFFF:
                continue
            c = 0xE000 if c == 0xD7FF else c + 1
            return "".join(chr(x) for x in cps[:i] + [c]).encode()
        return None
    if typ[0] == "binary":
        if len(b) <= 16:
            return b
        t = bytearray(b[:16])
        for i in range(15, -1, -1):
            if t[i] != 0xFF:
                t[i] += 1
                return bytes(t[: i + 1])
        return None
    return b


def iceberg_sort_key(typ, v):
    """Iceberg's comparator: floats with -0.0 < +0.0, strings by code point,
    binary/fixed/uuid unsigned bytes, decimals by value."""
    k = typ[0]
    if k in ("float", "double"):
        return (v, math.copysign(1, v))
    if k in ("binary", "fixed"):
        return v.bytes() if isinstance(v, Big) else v
    if k == "uuid":
        return v.bytes
    if k == "timestamptz":
        return encode(typ, v)
    return v


# ---- shared cases -------------------------------------------------------------------

UTC = datetime.timezone.utc
NAN, INF = float("nan"), float("inf")

ALL_TYPES = ("b boolean, i int, l long, f float, d double, dec9 decimal(9,2), "
             "dec18 decimal(18,4), dec38 decimal(38,10), dec20 decimal(20,0), dt date, tm time, "
             "ts timestamp, tstz timestamptz, s string, u uuid, fx fixed(5), bin binary, "
             "req long!")


def all_types_rows():
    u1 = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    u2 = uuid.UUID("ffffffff-0000-0000-0000-000000000001")
    d38 = decimal.Decimal("9999999999999999999999999999.9999999999")
    return [
        [True, 2**31 - 1, 2**63 - 1, 3.4028234663852886e38, 1.7976931348623157e308,
         decimal.Decimal("9999999.99"), decimal.Decimal("99999999999999.9999"), d38,
         decimal.Decimal(10**20 - 1), datetime.date(1970, 1, 1),
         datetime.time(23, 59, 59, 999999), datetime.datetime(2024, 2, 29, 12, 34, 56, 789012),
         datetime.datetime(2024, 2, 29, 12, 34, 56, 789012, tzinfo=UTC),
         "héllo wörld ☃ 😀", u1, b"\x00\x01\x02\x03\x04", b"\x00\xff", 1],
        [False, -2**31, -2**63, -1.5, -0.0, decimal.Decimal("-9999999.99"),
         decimal.Decimal("-99999999999999.9999"), -d38, decimal.Decimal(-(10**20 - 1)),
         datetime.date(1900, 1, 1), datetime.time(0, 0, 0),
         datetime.datetime(1901, 12, 13, 20, 45, 52, 1),
         datetime.datetime(1950, 6, 1, 0, 0, 0, 5, tzinfo=UTC), "", u2, b"\xff" * 5, b"", 2],
        [None] * 17 + [3],
        [True, 0, 0, NAN, INF, decimal.Decimal("0.01"), decimal.Decimal("0.0000"),
         decimal.Decimal("-0.0000000001"), decimal.Decimal(0), datetime.date(9999, 12, 31),
         datetime.time(12, 0, 0, 1), datetime.datetime(1969, 12, 31, 23, 59, 59, 999999),
         datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), "日本語テキスト",
         u1, b"abcde", b"\x80" * 40, 4],
        [None, 7, None, -INF, -INF, None, decimal.Decimal("1.5"), decimal.Decimal(1), None,
         datetime.date(1969, 12, 31), None, None, None, "zzz", None, None, None, -5],
    ]


NESTED = ("id int!, tags list<string>, req_tags list<string!>!, "
          "pts list<struct<x double, y double!, labels list<string>>>, "
          "attrs map<string, list<int>>, "
          "o struct<a int, inner struct<b string, c list<long>>, m map<string, string>>")


def nested_rows():
    return [
        [1, ["a", None, ""], ["x"],
         [{"x": 1.0, "y": 2.0, "labels": ["p", None]}, None, {"x": None, "y": -0.0, "labels": []}],
         [("k1", [1, None, 3]), ("k2", None), ("k3", [])],
         {"a": 1, "inner": {"b": "deep", "c": [1, 2]}, "m": [("mk", "mv"), ("n", None)]}],
        [2, None, [], None, None, None],
        [3, [], ["y", "z"], [], [], {"a": None, "inner": None, "m": None}],
        [4, [None], ["w"], [None, None], [("only", [None])],
         {"a": None, "inner": {"b": None, "c": None}, "m": []}],
        [5, ["long " * 10], [""], [{"x": NAN, "y": INF, "labels": None}], None,
         {"a": 5, "inner": {"b": "", "c": []}, "m": [("", "")]}],
    ]
