#!/usr/bin/env python3
"""The job `floe sink` does, done with pyiceberg, for the sink benchmark.

    pyiceberg_sink.py append|upsert STREAM CATALOG_DB WAREHOUSE INTERVAL_MS

Reads the NDJSON change stream, groups the updates into batches of the
commit interval (by input time) and commits each batch when the frontier
passes its end: append mode with table.append (rows plus _diff and
_timestamp), upsert mode with table.upsert(after-images, join_cols) - the
way a Python pipeline would use pyiceberg today.
"""
import datetime as dt
import decimal
import json
import sys

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog

DEC = pa.decimal128(12, 2)
FIELDS = [("l_orderkey", pa.int64(), False), ("l_partkey", pa.int64(), True),
          ("l_suppkey", pa.int64(), True), ("l_linenumber", pa.int32(), True),
          ("l_quantity", DEC, True), ("l_extendedprice", DEC, True), ("l_discount", DEC, True),
          ("l_tax", DEC, True), ("l_returnflag", pa.string(), True),
          ("l_linestatus", pa.string(), True), ("l_shipdate", pa.date32(), True),
          ("l_commitdate", pa.date32(), True), ("l_receiptdate", pa.date32(), True),
          ("l_shipinstruct", pa.string(), True), ("l_shipmode", pa.string(), True),
          ("l_comment", pa.string(), True)]
CONVERT = {DEC: decimal.Decimal, pa.date32(): dt.date.fromisoformat}


def arrow_schema(append):
    fields = [pa.field(n, t, nullable=null) for n, t, null in FIELDS]
    if append:
        fields += [pa.field("_diff", pa.int32(), nullable=False),
                   pa.field("_timestamp", pa.int64(), nullable=False)]
    return pa.schema(fields)


def to_table(batch, schema):
    cols = {f.name: [] for f in schema}
    for row in batch:
        for f in schema:
            v = row.get(f.name)
            conv = CONVERT.get(f.type)
            cols[f.name].append(conv(v) if conv and v is not None else v)
    return pa.Table.from_pydict(cols, schema=schema)


def main():
    mode, stream, db, warehouse, interval = sys.argv[1:6]
    interval = int(interval)
    append = mode == "append"
    schema = arrow_schema(append)
    cat = SqlCatalog("bench", uri=f"sqlite:///{db}", warehouse=warehouse)
    cat.create_namespace_if_not_exists("bench")
    table = cat.create_table("bench.lineitem", schema=schema)
    batch, after, upper, commits = [], {}, interval, 0

    def commit():
        nonlocal batch, after, commits
        if append and batch:
            table.append(to_table(batch, schema))
        elif not append and after:
            table.upsert(to_table(list(after.values()), schema), join_cols=["l_orderkey"])
        batch, after = [], {}
        commits += 1

    with open(stream) as f:
        for line in f:
            rec = json.loads(line)
            if "progress" in rec:
                while rec["progress"] >= upper:
                    commit()
                    upper += interval
                continue
            if append:
                row = dict(rec["row"], _diff=1 if rec["diff"] > 0 else -1, _timestamp=rec["time"])
                batch.extend([row] * abs(rec["diff"]))
            elif rec["diff"] > 0:
                after[rec["row"]["l_orderkey"]] = rec["row"]
    commit()
    print(json.dumps({"commits": commits}))


if __name__ == "__main__":
    main()
