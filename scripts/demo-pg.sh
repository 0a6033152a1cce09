#!/usr/bin/env bash
# A local Postgres mirrored into the embedded default (a SQLite catalog and a
# local warehouse under out/demo-pg/), on a fresh machine: installs what it
# needs (Debian's postgresql, libpq), builds floe, starts a throwaway
# Postgres cluster (a temporary directory, a loopback port, wal_level =
# logical; stopped and removed at the end), creates a small shop, runs
# `floe pg` (which creates the publication and the replication slot, copies
# both tables inside the slot's snapshot and follows the change stream),
# changes rows, runs it again (it resumes where the slot stopped), and shows
# the Iceberg tables as DuckDB and pyiceberg read them next to Postgres.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/install-deps.sh --demo >/dev/null
make -j"$(nproc)" build/floe >/dev/null
rm -rf out/demo-pg && mkdir -p out/demo-pg && cd out/demo-pg
export FLOE_STATE_DIR=$PWD/state               # the key indexes, here rather than in $HOME

bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
pgdir=$(mktemp -d /tmp/floe-demo-pg.XXXXXX)
as=()
if [ "$(id -u)" = 0 ]; then                     # initdb refuses root
    chown postgres "$pgdir"
    as=(runuser -u postgres --)
fi
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${as[@]}" "$bin/initdb" -D "$pgdir/data" -U postgres -A trust -E UTF8 >/dev/null
cat >>"$pgdir/data/postgresql.conf" <<EOF
wal_level = logical
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$pgdir'
EOF
"${as[@]}" "$bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/log" -w start >/dev/null
stop_pg() { "${as[@]}" "$bin/pg_ctl" -D "$pgdir/data" -m fast -w stop >/dev/null; rm -rf "$pgdir"; }
trap stop_pg EXIT

src="postgres://postgres@127.0.0.1:$port/shop"
psql -q "postgres://postgres@127.0.0.1:$port/postgres" -c "CREATE DATABASE shop"
psql -q "$src" <<'SQL'
CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL, email text,
                        since date, tags text[]);
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id integer NOT NULL, amount numeric(10,2),
                     status text, placed timestamptz, items jsonb);
-- A primary key is all floe needs: values Postgres stores out of line
-- (TOAST) and leaves out of updates are taken from the key's row.
INSERT INTO customers SELECT g, 'customer ' || g, 'c' || g || '@example.com',
       DATE '2020-01-01' + g, ARRAY['tier' || g % 3] FROM generate_series(1, 1000) g;
INSERT INTO orders SELECT g, 1 + g % 1000, (g % 500) + 0.99, 'placed',
       TIMESTAMPTZ '2024-01-01 00:00:00+00' + g * INTERVAL '1 minute',
       jsonb_build_object('sku', 'sku-' || g % 40, 'qty', 1 + g % 5)
       FROM generate_series(1, 20000) g;
SQL

echo "== floe pg: Postgres shop (customers, orders) -> Iceberg public.customers, public.orders"
"$root/build/floe" pg --source "$src" --tables public.customers,public.orders \
    --create-publication --stop-at now

echo; echo "== meanwhile in Postgres: orders ship and get cancelled, new customers sign up"
psql -q "$src" <<'SQL'
UPDATE orders SET status = 'shipped' WHERE id % 3 = 0;
BEGIN;
DELETE FROM orders WHERE status = 'placed' AND id % 7 = 0;
INSERT INTO customers VALUES (1001, 'newcomer', 'new@example.com', CURRENT_DATE, '{tier1}');
INSERT INTO orders VALUES (20001, 1001, 42.00, 'placed', now(), '{"sku": "sku-1", "qty": 2}');
COMMIT;
SQL

echo; echo "== floe pg again: it resumes at the slot's position and streams the changes"
"$root/build/floe" pg --source "$src" --tables public.customers,public.orders --stop-at now

echo; echo "== floe inspect public.orders (with the slot's state read from Postgres)"
"$root/build/floe" inspect --table public.orders --source "$src" | tail -n 8

echo; echo "== the Iceberg tables, read by DuckDB and pyiceberg, against Postgres"
SRC=$src python3 - <<'PY'
import os
import psycopg
import duckdb
from duckdb_extensions import import_extension
from pyiceberg.catalog.sql import SqlCatalog

catalog = SqlCatalog("floe", uri="sqlite:///warehouse/catalog.db", warehouse="file://warehouse")
import_extension("avro"); import_extension("iceberg")
con = duckdb.connect(); con.execute("LOAD iceberg")
for name in ("customers", "orders"):
    t = catalog.load_table(f"public.{name}")
    con.execute(f"CREATE VIEW {name} AS SELECT * FROM iceberg_scan('{t.metadata_location}')")
print(con.sql("SELECT status, count(*) AS orders, sum(amount) AS amount FROM orders "
              "GROUP BY status ORDER BY status"))
with psycopg.connect(os.environ["SRC"]) as pg:
    want = pg.execute("SELECT status, count(*), sum(amount) FROM orders GROUP BY status "
                      "ORDER BY status").fetchall()
got = con.execute("SELECT status, count(*), sum(amount) FROM orders GROUP BY status "
                  "ORDER BY status").fetchall()
print("Postgres says the same:", [tuple(r) for r in want] == [tuple(r) for r in got])
orders = catalog.load_table("public.orders")
arrow = orders.scan().to_arrow()
# floe's last snapshot (a later one may be the table maintenance's compaction)
last = [s for s in orders.snapshots() if s.summary and s.summary.get("floe.pg.lsn")][-1]
print(f"pyiceberg: public.orders has {arrow.num_rows} rows in "
      f"{len(orders.metadata.snapshots)} snapshots; floe's last records "
      f"floe.pg.lsn={last.summary['floe.pg.lsn']} from slot {last.summary['floe.pg.slot']}")
PY
