"""`floe kafka --format debezium` on real Debezium output: the Postgres
connector in Kafka Connect (tests/debezium_connect.py) streams a live
Postgres table's snapshot, inserts, updates, deletes, a TRUNCATE and an
ADD COLUMN into the test broker; floe's table, read by DuckDB and pyiceberg,
equals the Postgres table after each round.  Both with JsonConverter's
embedded schema and without it (values then read by the columns' types)."""
import os
import subprocess

import pytest

from conftest import SCALE, floe_bin
from debezium_connect import Debezium
from kafkaserver import broker
from pgserver import iceberg_rows, pg_rows, pgdb  # noqa: F401 (pgdb: a fixture)
from rowgen import Col

COLS = [Col("id", "integer", True), Col("name", "text"), Col("price", "numeric", p=10, s=2),
        Col("day", "date"), Col("at", "timestamp"), Col("atz", "timestamptz"),
        Col("doc", "jsonb"), Col("u", "uuid"), Col("ok", "boolean"),
        Col("f", "double precision")]
DDL = ", ".join(c.decl() for c in COLS) + ", PRIMARY KEY (id)"


class Tables:
    """What pgserver.iceberg_rows reads through (a Mirror's catalog and warehouse)."""

    def __init__(self, tmp_path):
        self.catalog, self.wh = f"{tmp_path}/catalog.db", f"{tmp_path}/wh"

    def pyiceberg_table(self, ident):
        from iceberg_readers import pyiceberg_catalog
        return pyiceberg_catalog(self.catalog, f"file://{self.wh}").load_table(ident)

    def metadata(self, ident):
        return self.pyiceberg_table(ident).metadata_location


def floe_kafka(b, tabs, topic, *extra, declare=True):
    """A run to the topic's end; with `declare`, the first declares the
    table's columns and every run its key (without, the table is made from
    the first event's schema and the message key's)."""
    if declare and not os.path.exists(tabs.catalog):
        extra = ("--schema", ", ".join(c.decl() for c in COLS), *extra)
    if declare:
        extra = ("--key", "id", *extra)
    p = subprocess.run([floe_bin(), "kafka", "--brokers", b.brokers, "--topics", topic,
                        "--format", "debezium", "--table", "dbz.items",
                        "--stop-at", "end", "--maintain", "off",
                        "--catalog", f"sqlite:{tabs.catalog}", "--warehouse", tabs.wh, *extra],
                       capture_output=True, text=True, timeout=300 * SCALE)
    assert p.returncode == 0, p.stderr
    return p


def assert_offsets_match_frontiers(tabs):
    """Message i of the topic is time i + 1 (one partition from offset 0), so
    every snapshot, those a schema change or TRUNCATE cuts on its own
    included, records the offset its frontier says: frontier - 1."""
    import json
    t = tabs.pyiceberg_table("dbz.items")
    seen = 0
    for s in t.snapshots():
        props = s.summary.additional_properties if s.summary else {}
        if "floe.kafka.offsets" in props:
            f = json.loads(props["floe.frontier"])[0]
            offs = json.loads(props["floe.kafka.offsets"])["partitions"]
            assert offs == {"0": f - 1}, (s.snapshot_id, f, offs)
            seen += 1
    assert seen >= 4


def assert_equal(db, tabs, cols):
    want = pg_rows(db, "items", cols)
    for reader, rows in iceberg_rows(tabs, "dbz.items", cols).items():
        assert rows == want, f"{reader} differs from Postgres"


@pytest.mark.parametrize("schemas", [True, False], ids=["schema", "schemaless"])
def test_debezium_events_mirror_the_postgres_table(pgdb, tmp_path, schemas):  # noqa: F811
    b = broker()
    pgdb.sql(f"CREATE TABLE items ({DDL})")
    pgdb.sql("ALTER TABLE items REPLICA IDENTITY FULL")
    pgdb.sql("""INSERT INTO items SELECT g, 'n' || g, g * 1.25, DATE '1969-12-25' + g,
                TIMESTAMP '2024-02-29 12:34:56.123456' + g * INTERVAL '1 hour',
                TIMESTAMPTZ '2024-01-01 00:00:00+02' - g * INTERVAL '1 day',
                jsonb_build_object('g', g, 'tags', jsonb_build_array('a', g)),
                md5(g::text)::uuid, g % 2 = 0, g / 3.0
                FROM generate_series(1, 200) g""")
    pgdb.sql("INSERT INTO items (id) VALUES (1000)")              # nulls everywhere
    dbz = Debezium(b, pgdb, ["public.items"], schemas=schemas)
    tabs = Tables(tmp_path)
    topic = f"{dbz.prefix}.public.items"
    try:
        n = dbz.wait_messages(topic, 201)                         # the snapshot's reads
        p = floe_kafka(b, tabs, topic, declare=not schemas)
        assert_equal(pgdb, tabs, COLS)
        if schemas:                   # no --schema, no --key: Debezium's schemas say
            assert "made from its first event" in p.stderr and "key id" in p.stderr, p.stderr
            types = {f.name: str(f.field_type) for f in
                     tabs.pyiceberg_table("dbz.items").schema().fields}
            assert types == {"id": "int", "name": "string", "price": "decimal(10, 2)",
                             "day": "date", "at": "timestamp", "atz": "timestamptz",
                             "doc": "string", "u": "string", "ok": "boolean",
                             "f": "double"}, types
        # changes: updates (one of the key's every column), deletes, re-inserts
        changed = pgdb.sql("SELECT count(*) FROM items WHERE id % 5 = 0")[0][0]
        deleted = pgdb.sql("SELECT count(*) FROM items WHERE id % 7 = 0")[0][0]
        pgdb.sql("UPDATE items SET name = name || '!', price = -price, doc = '[1, 2.5, null]' "
                 "WHERE id % 5 = 0")
        pgdb.sql("DELETE FROM items WHERE id % 7 = 0")
        pgdb.sql("INSERT INTO items (id, name, price) VALUES (7, 'back', 0.01)")
        # each delete is two messages (the event and its tombstone)
        n = dbz.wait_messages(topic, n + changed + 2 * deleted + 1)
        floe_kafka(b, tabs, topic, declare=not schemas)
        assert_equal(pgdb, tabs, COLS)
        # TRUNCATE, then rows again
        pgdb.sql("TRUNCATE items")
        pgdb.sql("INSERT INTO items (id, name) VALUES (1, 'after truncate'), (2, 'x')")
        n = dbz.wait_messages(topic, n + 3)
        p = floe_kafka(b, tabs, topic, declare=not schemas)
        assert "1 truncates" in p.stderr, p.stderr
        assert_equal(pgdb, tabs, COLS)
        if schemas:
            # ADD COLUMN: the event's schema names it, and the table takes it
            pgdb.sql("ALTER TABLE items ADD COLUMN extra bigint")
            pgdb.sql("INSERT INTO items (id, name, extra) VALUES (3, 'with extra', 42)")
            pgdb.sql("UPDATE items SET extra = 7 WHERE id = 1")
            dbz.wait_messages(topic, n + 2)
            p = floe_kafka(b, tabs, topic, declare=not schemas)
            assert "takes the columns of a Debezium event" in p.stderr, p.stderr
            assert_equal(pgdb, tabs, COLS + [Col("extra", "bigint")])
            # a rerun keeps the column (--schema is for creating the table only)
            pgdb.sql("UPDATE items SET extra = 8 WHERE id = 2")
            dbz.wait_messages(topic, n + 3)
            floe_kafka(b, tabs, topic, "--schema", ", ".join(c.decl() for c in COLS),
                       declare=False)
            assert_equal(pgdb, tabs, COLS + [Col("extra", "bigint")])
        assert_offsets_match_frontiers(tabs)
    finally:
        dbz.stop()
