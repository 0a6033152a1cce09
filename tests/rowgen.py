"""Column-list schemas and rows for floe's tests, with the values every reader
must return.

A schema is a list of Col trees.  `render()` turns it into floe's column-list
syntax.  `gen_value()` makes a random value as NDJSON input (SPEC.md section 2
encodings) together with its *canonical* expected form; readers.py turns what
pyarrow, DuckDB and polars return into the same canonical form, so the two
can be compared with ==.

Canonical forms: None; bool; int; ("f32"|"f64", big-endian bytes) for floats
(keeps NaN and -0.0 exact); ("dec", unscaled int) for numerics; str; bytes;
("date", days since 1970-01-01); ("time", microseconds since midnight);
("ts", microseconds since the epoch, UTC for timestamptz); lists as lists;
records and ranges as tuples of their fields in order; maps as lists of
(key, value) tuples in key order (floe stores map entries sorted by key, so
that equal maps are equal rows).
"""
import base64
import datetime as dt
import json
import random
import struct
import uuid as uuidlib
import decimal
from decimal import Decimal

decimal.getcontext().prec = 200      # exact arithmetic for numeric(38,s)

EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH = dt.datetime(1970, 1, 1)

PRIMITIVES = ["boolean", "smallint", "integer", "bigint", "uint2", "uint4", "uint8", "real",
              "double precision", "numeric", "text", "jsonb", "interval", "uuid", "bytea", "date",
              "time", "timestamp", "timestamptz"]
RANGES = {"int4range": "integer", "int8range": "bigint", "daterange": "date",
          "tsrange": "timestamp", "tstzrange": "timestamptz"}


class Col:
    """kind: a primitive name, "list", "record", "map" or a range name."""

    def __init__(self, name, kind, not_null=False, p=None, s=None, elem=None, fields=None):
        self.name, self.kind, self.not_null = name, kind, not_null
        self.p, self.s = p, s
        self.elem = elem            # list element / map value (a Col, name unused)
        self.fields = fields or []  # record fields

    def type_text(self):
        k = self.kind
        if k == "numeric":
            return f"numeric({self.p},{self.s})"
        if k == "list":
            return f"{self.elem.type_text()}[]"
        if k == "record":
            return "record(" + ", ".join(f.decl() for f in self.fields) + ")"
        if k == "map":
            return f"map[text=>{self.elem.type_text()}]"
        return k

    def decl(self):
        return f"{quote(self.name)} {self.type_text()}" + (" not null" if self.not_null else "")


def quote(name):
    if name.replace("_", "a").isalnum() and not name[0].isdigit():
        return name
    return '"' + name.replace('"', '""') + '"'


def render(cols):
    return ", ".join(c.decl() for c in cols)


# ---- values -------------------------------------------------------------------
INT_RANGES = {"smallint": (-2**15, 2**15 - 1), "integer": (-2**31, 2**31 - 1),
              "bigint": (-2**63, 2**63 - 1), "uint2": (0, 2**16 - 1), "uint4": (0, 2**32 - 1),
              "uint8": (0, 2**64 - 1)}
TEXTS = ["", "a", "hello world", "Zoë", "日本語テキスト", "emoji 😀 ok", "quote \" back \\ slash",
         "tab\tnew\nline", "\u0001ctrl", "x" * 300]


def f32(v):
    return ("f32", struct.pack(">f", v))


def f64(v):
    return ("f64", struct.pack(">d", v))


def rand_int(r, kind):
    lo, hi = INT_RANGES[kind]
    pick = r.random()
    if pick < 0.2:
        return r.choice([lo, hi, 0])
    if pick < 0.4:
        return r.randint(max(lo, -100), min(hi, 100))
    return r.randint(lo, hi)


def rand_numeric(r, p, s):
    if r.random() < 0.15:
        unscaled = r.choice([10**p - 1, -(10**p - 1), 0])
    else:
        digits = r.randint(1, p)
        unscaled = r.randint(-(10**digits - 1), 10**digits - 1)
    d = Decimal(unscaled).scaleb(-s)
    style = r.random()
    if style < 0.4:
        text = format(d, "f")
        value = text
    elif style < 0.6 and abs(unscaled) < 2**53 and s == 0:
        value = int(unscaled)                       # a JSON integer
    elif style < 0.8:
        value = "{:E}".format(d)                     # exponent form
        if Decimal(value).scaleb(s) != unscaled:
            value = format(d, "f")
    else:
        value = format(d, "f")
    return value, ("dec", unscaled)


def rand_date(r):
    days = r.randint((dt.date(1, 1, 1) - EPOCH_DATE).days, (dt.date(9999, 12, 31) - EPOCH_DATE).days)
    if r.random() < 0.3:
        days = r.randint(-30000, 30000)
    d = EPOCH_DATE + dt.timedelta(days=days)
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}", ("date", days)


def rand_time(r):
    us = r.randint(0, 86400 * 10**6 - 1)
    t = (dt.datetime(2000, 1, 1) + dt.timedelta(microseconds=us)).time()
    text = t.strftime("%H:%M:%S")
    if t.microsecond or r.random() < 0.3:
        text += f".{t.microsecond:06d}"
    return text, ("time", us)


def rand_ts(r, tz):
    us = r.randint(-2208988800 * 10**6, 4102444800 * 10**6)       # 1900..2100
    if r.random() < 0.2:
        us = r.choice([0, -1, 1, 10**12])
    t = EPOCH + dt.timedelta(microseconds=us)
    sep = r.choice([" ", "T"])
    if tz:
        off_min = r.choice([0, 60, -300, 330, 765, -720])
        local = t + dt.timedelta(minutes=off_min)
        base = local.strftime("%Y-%m-%d") + sep + local.strftime("%H:%M:%S")
        if local.microsecond:
            base += f".{local.microsecond:06d}"
        if off_min == 0 and r.random() < 0.5:
            return base + "Z", ("ts", us)
        sign = "+" if off_min >= 0 else "-"
        return base + f"{sign}{abs(off_min) // 60:02d}:{abs(off_min) % 60:02d}", ("ts", us)
    base = t.strftime("%Y-%m-%d") + sep + t.strftime("%H:%M:%S")
    if t.microsecond:
        base += f".{t.microsecond:06d}"
    return base, ("ts", us)


def rand_jsonb(r, depth=0):
    pick = r.random()
    if depth > 2 or pick < 0.5:
        return r.choice([1, -7, 2.5, "s", "ünï", True, False, None, 12345678901234])
    if pick < 0.75:
        return [rand_jsonb(r, depth + 1) for _ in range(r.randint(0, 3))]
    return {f"k{i}": rand_jsonb(r, depth + 1) for i in range(r.randint(0, 3))}


def gen_primitive(r, col):
    k = col.kind
    if k == "boolean":
        v = r.random() < 0.5
        return v, v
    if k in INT_RANGES:
        v = rand_int(r, k)
        return v, (("dec", v) if k == "uint8" else v)
    if k in ("real", "double precision"):
        pick = r.random()
        if pick < 0.15:
            s = r.choice(["NaN", "Infinity", "-Infinity"])
            v = float(s.replace("Infinity", "inf"))
            return s, (f32(v) if k == "real" else f64(v))
        if pick < 0.25:
            v = r.choice([-0.0, 0.0, 1.5, -2.25, 1e-300 if k != "real" else 1e-30])
        else:
            v = r.uniform(-1e6, 1e6) if r.random() < 0.5 else r.uniform(-1, 1)
        if k == "real":
            v32 = struct.unpack(">f", struct.pack(">f", v))[0]
            return v32, f32(v32)
        return v, f64(v)
    if k == "numeric":
        return rand_numeric(r, col.p, col.s)
    if k in ("text", "interval"):
        v = r.choice(TEXTS) if k == "text" else r.choice(["1 day", "02:00:00", "1 year 2 mons", ""])
        return v, v
    if k == "jsonb":
        v = rand_jsonb(r)                            # JSON null is SQL NULL
        while v is None and col.not_null:
            v = rand_jsonb(r)
        return v, (None if v is None else ("json", json.dumps(v, sort_keys=True)))
    if k == "uuid":
        u = uuidlib.UUID(int=r.getrandbits(128))
        text = str(u).upper() if r.random() < 0.3 else str(u)
        return text, str(u)
    if k == "bytea":
        b = bytes(r.getrandbits(8) for _ in range(r.randint(0, 40)))
        return base64.b64encode(b).decode(), b
    if k == "date":
        return rand_date(r)
    if k == "time":
        return rand_time(r)
    if k == "timestamp":
        return rand_ts(r, False)
    if k == "timestamptz":
        return rand_ts(r, True)
    raise ValueError(k)


def range_parts(col):
    return Col("lower", RANGES[col.kind])


def gen_value(r, col, null_rate=0.2):
    """(json value, canonical expected) for one value of col."""
    if not col.not_null and r.random() < null_rate:
        return None, None
    k = col.kind
    if k == "list":
        items = [gen_value(r, col.elem, null_rate) for _ in range(r.choice([0, 1, 2, 3, 5]))]
        return [i[0] for i in items], [i[1] for i in items]
    if k == "record":
        out, exp = {}, []
        for f in col.fields:
            v, e = gen_value(r, f, null_rate)
            if v is not None or r.random() < 0.5:
                out[f.name] = v
            exp.append(e)
        return out, tuple(exp)
    if k == "map":
        out, exp = {}, []
        for i in range(r.choice([0, 1, 2, 4])):
            key = r.choice(["a", "b", "ключ", "", "k" + str(i)]) + str(i)
            v, e = gen_value(r, col.elem, null_rate)
            out[key] = v
            exp.append((key, e))
        return out, sorted(exp, key=lambda kv: kv[0].encode())  # floe keeps map keys sorted
    if k in RANGES:
        if r.random() < 0.2:
            return {"empty": True}, (None, None, None, None, True)
        sub = range_parts(col)
        lo, elo = gen_value(r, sub, 0.3)
        hi, ehi = gen_value(r, sub, 0.3)
        li, ui = r.random() < 0.5, r.random() < 0.5
        return ({"lower": lo, "upper": hi, "lower_inclusive": li, "upper_inclusive": ui,
                 "empty": False}, (elo, ehi, li, ui, False))
    return gen_primitive(r, col)


def gen_row(r, cols, null_rate=0.2):
    row, exp = {}, []
    for c in cols:
        v, e = gen_value(r, c, null_rate)
        if v is not None or c.not_null or r.random() < 0.7:
            row[c.name] = v
        exp.append(e)
    return row, tuple(exp)


# ---- random schemas ------------------------------------------------------------
def rand_type(r, depth, max_depth):
    pick = r.random()
    if depth < max_depth and pick < 0.12:
        return Col("", "list", elem=rand_type(r, depth + 1, max_depth))
    if depth < max_depth and pick < 0.22:
        n = r.randint(1, 3)
        return Col("", "record", fields=[named(rand_type(r, depth + 1, max_depth), f"f{i}", r)
                                         for i in range(n)])
    if depth < max_depth and pick < 0.30:
        return Col("", "map", elem=rand_type(r, depth + 1, max_depth))
    if pick < 0.34:
        return Col("", r.choice(list(RANGES)))
    k = r.choice(PRIMITIVES)
    if k == "numeric":
        p = r.choice([1, 5, 9, 10, 18, 19, 20, 28, 38])
        return Col("", k, p=p, s=r.randint(0, p))
    return Col("", k)


def named(col, name, r):
    col.name = name
    col.not_null = r.random() < 0.15
    return col


def rand_schema(r, ncols=None, max_depth=3):
    n = ncols or r.randint(1, 8)
    return [named(rand_type(r, 0, max_depth), f"c{i}", r) for i in range(n)]


def write_ndjson(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
