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
# pyiceberg opens the same catalog and reads the table too (position
# deletes: no equality deletes in floe's default mode), and finds the
# frontier floe recorded in its last snapshot (a later one may be the
# sink's own compaction, which records no progress).
table = SqlCatalog("floe", uri="sqlite:///warehouse/catalog.db", warehouse="file://warehouse") \
    .load_table("shop.orders")
ours = [s for s in table.snapshots() if s.summary and s.summary.get("floe.frontier")]
last = table.current_snapshot()
print(f"pyiceberg: shop.orders has {len(table.metadata.snapshots)} snapshots, the current one a "
      f"{last.summary.operation.value}; floe's last records floe.frontier="
      f"{ours[-1].summary['floe.frontier']}; pyiceberg reads "
      f"{table.scan().to_arrow().num_rows} live orders, DuckDB "
      f"{con.sql('SELECT count(*) FROM orders').fetchone()[0]}")
PY
