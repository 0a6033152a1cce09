#!/usr/bin/env bash
# The main job on the embedded default, on a fresh machine: installs what it
# needs, builds floe, sinks the bundled order-book change stream into an
# Iceberg table (SQLite catalog + local warehouse, the defaults), and shows
# the result as DuckDB and pyiceberg read it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/install-deps.sh --demo >/dev/null
make -j"$(nproc)" build/floe >/dev/null
rm -rf out/demo && mkdir -p out/demo && cd out/demo

echo "== floe sink: examples/orders.changes.ndjson -> shop.orders (1 s commit interval)"
"$root/build/floe" sink --table shop.orders --schema @"$root/examples/orders.schema" \
    --key order_id --commit-interval 1s --input "$root/examples/orders.changes.ndjson"

echo; echo "== floe inspect: the last snapshots"
"$root/build/floe" inspect --table shop.orders | tail -n 12

echo; echo "== the table, read by DuckDB's iceberg extension and by pyiceberg"
python3 - <<'PY'
import sqlite3
import duckdb
from duckdb_extensions import import_extension
from pyiceberg.catalog.sql import SqlCatalog

meta = sqlite3.connect("warehouse/catalog.db").execute(
    "SELECT metadata_location FROM iceberg_tables WHERE table_name = 'orders'").fetchone()[0]
import_extension("avro"); import_extension("iceberg")
con = duckdb.connect(); con.execute("LOAD iceberg")
con.execute(f"CREATE VIEW orders AS SELECT * FROM iceberg_scan('{meta}')")
print(con.sql("SELECT status, count(*) AS orders, sum(qty) AS qty, sum(filled) AS filled "
              "FROM orders GROUP BY status ORDER BY status"))
print(con.sql("SELECT symbol, side, count(*) AS open_orders, round(avg(price), 2) AS avg_price "
              "FROM orders WHERE status <> 'filled' GROUP BY ALL ORDER BY symbol, side"))
# pyiceberg opens the same catalog; it cannot scan tables with equality
# deletes yet, so it shows the snapshots and the frontier floe recorded.
table = SqlCatalog("floe", uri="sqlite:///warehouse/catalog.db", warehouse="file://warehouse") \
    .load_table("shop.orders")
last = table.current_snapshot()
print(f"pyiceberg: shop.orders has {len(table.metadata.snapshots)} snapshots; the last "
      f"({last.summary.operation.value}) records floe.frontier={last.summary['floe.frontier']} "
      f"and {last.summary['total-records']} rows in data files, "
      f"{last.summary['total-equality-deletes']} equality and "
      f"{last.summary['total-position-deletes']} position deletes; "
      f"DuckDB counts {con.sql('SELECT count(*) FROM orders').fetchone()[0]} live orders")
PY
