"""Read Parquet files back with real readers (pyarrow, DuckDB, polars) and put
what they return into the canonical form of rowgen.py, so tests compare with
== against the values that were written."""
import datetime as dt
import decimal
import json

import duckdb
import polars as pl
import pyarrow.parquet as pq

from rowgen import EPOCH, EPOCH_DATE, INT_RANGES, RANGES, Col, f32, f64

US = dt.timedelta(microseconds=1)
decimal.getcontext().prec = 200


def _map_items(v):
    if isinstance(v, dict):                                  # DuckDB
        return list(v.items())
    out = []
    for item in v:
        if isinstance(item, dict):                           # polars: {"key":..,"value":..}
            out.append((item["key"], item["value"]))
        else:                                                # pyarrow: (key, value)
            out.append((item[0], item[1]))
    return out


def _ts(v, tz):
    if tz:
        if v.tzinfo is None:
            return ("naive-timestamptz", v)                  # never equals an expected value
        v = v.astimezone(dt.timezone.utc).replace(tzinfo=None)
    elif v.tzinfo is not None:
        return ("aware-timestamp", v)
    return ("ts", (v - EPOCH) // US)


def canon(col, v):
    if v is None:
        return None
    k = col.kind
    if k == "boolean":
        return bool(v)
    if k == "uint8":
        return ("dec", int(v))
    if k in INT_RANGES:
        return int(v)
    if k == "real":
        return f32(v)
    if k == "double precision":
        return f64(v)
    if k == "numeric":
        return ("dec", int(v.scaleb(col.s)))
    if k in ("text", "interval", "uuid"):
        return str(v)
    if k == "jsonb":
        return ("json", json.dumps(json.loads(v), sort_keys=True))
    if k == "bytea":
        return bytes(v)
    if k == "date":
        return ("date", (v - EPOCH_DATE).days)
    if k == "time":
        return ("time", ((v.hour * 60 + v.minute) * 60 + v.second) * 10**6 + v.microsecond)
    if k in ("timestamp", "timestamptz"):
        return _ts(v, k == "timestamptz")
    if k == "list":
        return [canon(col.elem, x) for x in v]
    if k == "record":
        return tuple(canon(f, v.get(f.name)) for f in col.fields)
    if k == "map":
        return [(key, canon(col.elem, val)) for key, val in _map_items(v)]
    if k in RANGES:
        sub = Col("lower", RANGES[k])
        return (canon(sub, v.get("lower")), canon(sub, v.get("upper")),
                v.get("lower_inclusive"), v.get("upper_inclusive"), v.get("empty"))
    raise ValueError(k)


def canon_rows(cols, rows):
    """rows: a list of dicts (column name -> value) or tuples in column order."""
    out = []
    for row in rows:
        vals = [row.get(c.name) for c in cols] if isinstance(row, dict) else list(row)
        out.append(tuple(canon(c, v) for c, v in zip(cols, vals)))
    return out


def read_pyarrow(path, cols):
    return canon_rows(cols, pq.read_table(path).to_pylist())


def read_duckdb(path, cols):
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    rows = con.execute("SELECT * FROM read_parquet(?)", [path]).fetchall()
    con.close()
    return canon_rows(cols, rows)


def read_polars(path, cols):
    return canon_rows(cols, pl.read_parquet(path).rows())


READERS = {"pyarrow": read_pyarrow, "duckdb": read_duckdb, "polars": read_polars}
