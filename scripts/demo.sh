#!/usr/bin/env bash
# The main job on the embedded default, on a fresh machine: installs what it
# needs, builds floe, writes the bundled sample to Parquet with `floe
# to-parquet`, and shows the result read back by DuckDB.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
make -j"$(nproc)" build/floe
mkdir -p out
build/floe to-parquet --schema @examples/orders.schema --input examples/orders.ndjson \
    --output out/orders.parquet
python3 - <<'PY'
import duckdb
con = duckdb.connect()
print(con.sql("SELECT * FROM 'out/orders.parquet' ORDER BY order_id LIMIT 10"))
print(con.sql("SELECT status, count(*) AS orders, sum(amount) AS amount "
              "FROM 'out/orders.parquet' GROUP BY status ORDER BY status"))
PY
