"""floe pg --partition-by: Iceberg tables partitioned as asked, from the
initial copy (in parallel page ranges: every copy worker fans its rows out
to one file per partition) through a stream that moves rows between
partitions (an update of the partition source column deletes the row from
its old partition's file and writes it into the new one).  Read back by
DuckDB and pyiceberg, equal to Postgres; every data file holds one
partition and every delete file is in its data file's partition
(test_sink_partitioned.check_partitions, over every snapshot).  Errors name
the option and the table.
"""
from pgserver import Mirror, iceberg_rows, pg_rows, pgdb  # noqa
from rowgen import Col
from test_sink_partitioned import check_partitions

EVENTS = [Col("id", "integer", True), Col("ts", "timestamptz"), Col("kind", "text"),
          Col("v", "integer")]
PLAIN = [Col("id", "integer", True), Col("v", "integer")]
DDL = """
CREATE TABLE events (id int PRIMARY KEY, ts timestamptz, kind text, v int);
INSERT INTO events SELECT g, timestamptz '2026-01-01 00:00:00+00' + g * interval '97 seconds',
    'k' || (g % 7), g FROM generate_series(1, 30000) g;
CREATE TABLE plain (id int PRIMARY KEY, v int);
INSERT INTO plain SELECT g, g FROM generate_series(1, 100) g;
"""
SPEC = "day(ts), bucket(4, id)"


def check_equal(db, m):
    for t, cols in (("events", EVENTS), ("plain", PLAIN)):
        want = pg_rows(db, t, cols)
        for reader, rows in iceberg_rows(m, f"public.{t}", cols).items():
            assert rows == want, (t, reader)


def test_partition_by_from_the_copy_through_rows_moving_between_partitions(pgdb, tmp_path):
    pgdb.sql(DDL)
    m = Mirror(pgdb, tmp_path, ["public.events", "public.plain"], "--create-publication",
               "--copy-workers", "2", "--copy-range-pages", "20",
               "--partition-by", f"public.events={SPEC}")
    r = m.catch_up()
    assert "copied public.events: 30000 rows" in r.stderr, r.stderr
    tbl = m.pyiceberg_table("public.events")
    assert [(str(f.transform), f.name) for f in tbl.spec().fields] == \
        [("day", "ts_day"), ("bucket[4]", "id_bucket")], tbl.spec()
    assert not m.pyiceberg_table("public.plain").spec().fields
    data, _ = check_partitions(m.catalog, f"file://{m.wh}", "public.events")
    days = {part[0] for _, part in data.values()}
    assert len(days) == 34 and len(data) >= len(days) * 4, (len(days), len(data))
    check_equal(pgdb, m)

    # Rows move to other days and buckets (the partition source columns
    # change), others are deleted or updated in place; a key comes back.
    pgdb.sql("UPDATE events SET ts = ts + interval '3 days' WHERE id % 10 = 1;"
             "UPDATE events SET id = id + 100000 WHERE id % 50 = 2;"
             "UPDATE events SET v = -v WHERE id % 13 = 0;"
             "DELETE FROM events WHERE id % 17 = 3;"
             "INSERT INTO events VALUES (3, now(), 'back', 3);"
             "UPDATE plain SET v = 0 WHERE id < 10")
    m.catch_up()
    check_equal(pgdb, m)
    data, deletes = check_partitions(m.catalog, f"file://{m.wh}", "public.events")
    assert deletes, "the moves deleted rows from their old partitions' files"
    # A rerun without the option keeps the table's spec.
    pgdb.sql("UPDATE events SET ts = ts - interval '1 day' WHERE id % 10 = 5")
    Mirror(pgdb, tmp_path, ["public.events", "public.plain"]).catch_up()
    check_equal(pgdb, m)
    check_partitions(m.catalog, f"file://{m.wh}", "public.events")


def test_partition_by_errors_name_the_option_and_the_table(pgdb, tmp_path):
    pgdb.sql(DDL)
    tables = ["public.events", "public.plain"]
    r = Mirror(pgdb, tmp_path, tables, "--create-publication",
               "--partition-by", "public.nope=day(ts)").catch_up(check=False)
    assert r.returncode != 0
    assert "--partition-by names public.nope, which is not one of the mirrored tables" in \
        r.stderr, r.stderr
    r = Mirror(pgdb, tmp_path, tables, "--create-publication",
               "--partition-by", "day(ts)").catch_up(check=False)
    assert r.returncode != 0 and "does not start with SCHEMA.TABLE=" in r.stderr, r.stderr
    r = Mirror(pgdb, tmp_path, tables, "--create-publication",
               "--partition-by", "events=day(nosuch)").catch_up(check=False)
    assert r.returncode != 0 and "nosuch" in r.stderr, r.stderr
    # a table created unpartitioned takes a rerun's spec from its next snapshot
    m = Mirror(pgdb, tmp_path, tables, "--create-publication")
    m.catch_up()
    pgdb.sql("UPDATE events SET ts = ts + interval '3 days' WHERE id % 100 = 7")
    r = Mirror(pgdb, tmp_path, tables, "--partition-by", f"events={SPEC}").catch_up()
    assert f"public.events: its partition spec becomes '{SPEC}' with its next snapshot" in \
        r.stderr, r.stderr
    t = m.pyiceberg_table("public.events")
    assert t.spec().spec_id == 1 and len(t.spec().fields) == 2, t.spec()
    check_equal(pgdb, m)
    data, deletes = check_partitions(m.catalog, f"file://{m.wh}", "public.events")
    assert {d[0] for d in data.values()} == {0, 1}
    assert deletes and all(spec_id == 0 for spec_id, _ in deletes.values())
