"""floe pg follows ALTER TABLE (docs/postgres.md, "Tables that change shape").

A large table (FLOE_PG_DDL_ROWS rows, 100k by default) has a writer making
transactions all along while every kind of DDL is run on it, first while
`floe pg` runs, then each one while it is stopped.  Nothing halts; at the
end the Iceberg table equals what psycopg reads, in DuckDB, pyiceberg and
Java.  After each DDL the writer's first transaction inserts a marker row
with every column set; the snapshot that makes the new schema current is
the first to hold it, and its parent's frontier is that transaction's
commit LSN (pgoutput has no DDL message: a change of shape is seen with the
table's next change, which is where it lands).  A change Iceberg cannot
take in place is a resync: one overwrite snapshot whose frontier is past
that transaction.  A DDL made while floe is down with no row changed after
it is found in the catalog at start.

Then: a resync of one table while another keeps streaming (its snapshots
go on during the copy), --resync on demand, and ADD COLUMN ... DEFAULT on
format 3 (the Iceberg initial-default, read by every reader that honours
it) and format 2 (a resync).
"""
import os
import random
import signal
import subprocess
import threading
import time
from decimal import Decimal

import psycopg
import pytest

from iceberg_readers import duckdb_rows
from pgserver import (SCALE, Mirror, iceberg_rows, lsn_int, pg_rows, pgdb, snapshots,  # noqa
                      frontier_of, wait_until)
from rowgen import Col

ROWS = int(os.environ.get("FLOE_PG_DDL_ROWS", "100000"))
# the resync that another table's commits must overlap copies more
RESYNC_ROWS = max(ROWS, 300000)


# ---- the table and its writer -------------------------------------------------------------------

def value(kind, r):
    if kind in ("integer", "bigint"):
        return r.randrange(-10**6, 10**6)
    if kind in ("real", "double precision"):
        return r.randrange(-1000, 1000) / 4          # exact in float4 too
    if kind == "numeric":
        return Decimal(r.randrange(-10**6, 10**6)).scaleb(-2)
    return f"v{r.randrange(10**6)}"


class Writer(threading.Thread):
    """Transactions on `big` (update, insert, delete) while the test holds
    `lock` for nothing; `shape` is {column: kind}.  Each committed
    transaction is logged as (before, after, marker id or None); a marker
    row (id < 0, every column set) is the first transaction after a DDL."""

    def __init__(self, dsn, shape, first_new):
        super().__init__(daemon=True)
        self.dsn, self.shape = dsn, dict(shape)
        self.r = random.Random(9)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.next_id = first_new
        self.marker = None
        self.log = []
        self.error = None

    def row(self, rid):
        cols = list(self.shape)
        return cols, [rid] + [value(self.shape[c], self.r) for c in cols]

    def txn(self, c):
        r = self.r
        c.execute("BEGIN")
        if self.marker is not None:
            cols, vals = self.row(self.marker)
            names = ", ".join(f'"{n}"' for n in ["id"] + cols)
            c.execute(f"INSERT INTO big ({names}) VALUES ({', '.join(['%s'] * len(vals))})", vals)
        for _ in range(r.randint(1, 4)):
            k = r.random()
            if k < 0.5:
                col = r.choice(list(self.shape))
                c.execute(f'UPDATE big SET "{col}" = %s WHERE id = %s',
                          (value(self.shape[col], r), r.randrange(1, ROWS)))
            elif k < 0.8:
                cols, vals = self.row(self.next_id)
                self.next_id += 1
                names = ", ".join(f'"{n}"' for n in ["id"] + cols)
                c.execute(f"INSERT INTO big ({names}) VALUES ({', '.join(['%s'] * len(vals))})",
                          vals)
            else:
                c.execute("DELETE FROM big WHERE id = %s", (r.randrange(1, ROWS),))
        before = c.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        c.execute("COMMIT")
        after = c.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        self.log.append((lsn_int(before), lsn_int(after), self.marker))
        self.marker = None

    def run(self):
        try:
            with psycopg.connect(self.dsn, autocommit=True) as c:
                while not self.stop.is_set():
                    with self.lock:
                        self.txn(c)
                    time.sleep(0.005)
        except Exception as e:                            # reported by the test
            self.error = e

    def ddl(self, db, stmt, change, marker):
        """Run `stmt` between two transactions; `change(shape)` follows it;
        the next transaction inserts marker row `marker`."""
        with self.lock:
            db.sql(stmt)
            change(self.shape)
            self.marker = marker

    def marker_txn(self, marker):
        for before, after, m in self.log:
            if m == marker:
                return before, after
        raise AssertionError(f"marker {marker} was never written")


def drop(col):
    return lambda s: s.pop(col)


def retype(col, kind):
    return lambda s: s.__setitem__(col, kind)


def rename(old, new):
    def f(s):
        s[new] = s.pop(old)
    return f


def add(col, kind):
    return lambda s: s.__setitem__(col, kind)


def nothing(_):
    pass


# Every kind of DDL, on columns of its own: (statement, shape change, how
# floe takes it: "place" in place, "resync", or "same" when the Iceberg
# schema does not change).
def ddls(p):
    return [
        (f"ALTER TABLE big ADD COLUMN {p}x integer", add(f"{p}x", "integer"), "place"),
        (f"ALTER TABLE big RENAME COLUMN {p}a TO {p}a2", rename(f"{p}a", f"{p}a2"), "place"),
        (f"ALTER TABLE big ALTER COLUMN {p}a2 TYPE bigint", retype(f"{p}a2", "bigint"), "place"),
        (f"ALTER TABLE big ALTER COLUMN {p}f TYPE double precision",
         retype(f"{p}f", "double precision"), "place"),
        (f"ALTER TABLE big ALTER COLUMN {p}n TYPE numeric(12,2)", nothing, "place"),
        # strings stay strings: the Iceberg schema does not change
        (f"ALTER TABLE big ALTER COLUMN {p}vc TYPE text", nothing, "same"),
        # Relation messages do not say which columns may be null: the catalog
        # does, when floe next looks, which may be before this DDL's position
        (f"ALTER TABLE big ALTER COLUMN {p}k DROP NOT NULL", nothing, f"relax {p}k"),
        (f"ALTER TABLE big ALTER COLUMN {p}k SET NOT NULL", nothing, "same"),
        (f"ALTER TABLE big DROP COLUMN {p}d", drop(f"{p}d"), "place"),
        # Postgres keeps 7 for the rows before it: no initial-default on format 2
        (f"ALTER TABLE big ADD COLUMN {p}y integer NOT NULL DEFAULT 7", add(f"{p}y", "integer"),
         "resync"),
        # a volatile default rewrites every row
        (f"ALTER TABLE big ADD COLUMN {p}z integer DEFAULT (random() * 100)::int",
         add(f"{p}z", "integer"), "resync"),
        # narrowing: copied again, in a new column of the same name
        (f"ALTER TABLE big ALTER COLUMN {p}a2 TYPE integer", retype(f"{p}a2", "integer"),
         "resync"),
    ]


def base_columns(p):
    return {f"{p}a": "integer", f"{p}f": "real", f"{p}n": "numeric", f"{p}vc": "varchar",
            f"{p}k": "integer", f"{p}d": "integer"}


def create_big(db, rows=ROWS):
    cols = []
    for p in ("r", "s"):
        cols += [f"{p}a integer", f"{p}f real", f"{p}n numeric(10,2)", f"{p}vc varchar(10)",
                 f"{p}k integer NOT NULL", f"{p}d integer"]
    gen = ", ".join(["g % 1000", "g / 4.0", "g % 10000 / 100.0", "'v' || (g % 1000)", "g",
                     "g % 7"] * 2)
    db.sql(f"CREATE TABLE big (id integer PRIMARY KEY, {', '.join(cols)});"
           "ALTER TABLE big REPLICA IDENTITY FULL;"
           f"INSERT INTO big SELECT g, {gen} FROM generate_series(1, {rows}) g;"
           "CREATE TABLE other (id integer PRIMARY KEY, v integer);"
           "INSERT INTO other VALUES (1, 1)")


def pg_columns(db, table):
    """Col()s of the table as the catalog has it now."""
    kinds = {"integer": "integer", "bigint": "bigint", "real": "real",
             "double precision": "double precision", "text": "text",
             "character varying": "text"}
    out = []
    for name, typ, prec, scale in db.sql(
            "SELECT attname, format_type(atttypid, NULL), information_schema._pg_numeric_"
            "precision(atttypid, atttypmod), information_schema._pg_numeric_scale(atttypid, "
            "atttypmod) FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 AND "
            "NOT attisdropped ORDER BY attnum", (table,)):
        if typ == "numeric":
            out.append(Col(name, "numeric", p=prec, s=scale))
        else:
            out.append(Col(name, kinds[typ], name == "id"))
    return out


def replaces_all(summary):
    """A resync's snapshot: every file of the table before it is gone, the
    table is the files it adds (a row delta with position deletes is an
    "overwrite" too, so the operation does not tell)."""
    return (int(summary.get("deleted-data-files", 0)) > 0 and
            summary.get("total-data-files") == summary.get("added-data-files"))


def schema_changes(m, ident):
    """[(snapshot id, parent's frontier, its frontier, a resync's?, schema)]
    of the snapshots of main whose schema is not their parent's."""
    t = m.pyiceberg_table(ident)
    md = t.metadata
    by_id = {s.snapshot_id: s for s in md.snapshots}
    schemas = {s.schema_id: s for s in md.schemas}
    out = []
    for sid, summary in snapshots(m, ident, t):
        s = by_id[sid]
        parent = by_id.get(s.parent_snapshot_id)
        if parent is not None and parent.schema_id != s.schema_id:
            pf = frontier_of(dict(parent.summary.additional_properties))
            out.append((sid, pf, frontier_of(summary), replaces_all(summary),
                        schemas[s.schema_id]))
    return out


def committed_past(m, ident, lsn):
    snaps = snapshots(m, ident)
    return bool(snaps) and frontier_of(snaps[-1][1]) > lsn


def has_marker(m, ident, sid, marker):
    from iceberg_readers import duck
    con = duck()
    try:
        return con.execute("SELECT count(*) FROM iceberg_scan(?, snapshot_from_id = ?) WHERE "
                           "id = ?", [m.metadata(ident), sid, marker]).fetchone()[0] == 1
    finally:
        con.close()


def check_landed(m, w, marker, how, changes):
    """The change of marker `marker`'s DDL is in the table where it belongs:
    the snapshot that makes it current holds the marker, the first row of
    the new shape, and its parent's frontier is the marker's commit (in
    place), or it replaces every file at a frontier past it (a resync)."""
    before, after = w.marker_txn(marker)
    if how == "same":
        assert not [c for c in changes if before <= c[1] <= after], marker
        return
    if how.startswith("relax "):
        col = how.split()[1]
        hits = [c for c in changes if c[1] <= after and not c[4].find_field(col).required]
        assert hits, (marker, how)
        return
    if how == "place":
        hits = [c for c in changes if before <= c[1] <= after]
        assert len(hits) == 1 and not hits[0][3], (marker, how, before, after)
    else:
        hits = [c for c in changes if c[1] <= after <= c[2] and c[3]]
        assert len(hits) == 1, (marker, how, before, after)
    assert has_marker(m, "public.big", hits[0][0], marker), marker


def check_equal(db, m, readers_=("duckdb", "pyiceberg", "java")):
    cols = pg_columns(db, "big")
    want = pg_rows(db, "big", cols)
    got = iceberg_rows(m, "public.big", cols, readers_=readers_)
    for reader, rows in got.items():
        assert len(rows) == len(want), reader
        assert rows == want, reader


def test_every_ddl_is_followed_while_running_and_while_stopped(pgdb, tmp_path):
    create_big(pgdb)
    m = Mirror(pgdb, tmp_path, ["public.big", "public.other"], "--create-publication")
    r = m.catch_up()
    assert f"copied public.big: {ROWS} rows" in r.stderr
    w = Writer(pgdb.dsn, {**base_columns("r"), **base_columns("s")}, ROWS + 1)
    w.start()
    marker = 0
    done = []                                           # (marker, how)
    # While floe runs.
    p = m.popen("--commit-interval", "100ms", stderr=subprocess.PIPE, text=True)
    for stmt, change, how in ddls("r"):
        marker -= 1
        w.ddl(pgdb, stmt, change, marker)
        done.append((marker, how))
        wait_until(lambda: any(mm == marker for *_, mm in w.log), "the marker")
        # one change at a time: a resync copies the table as it is when it
        # starts, taking in any change made before
        after = w.marker_txn(marker)[1]
        wait_until(lambda: committed_past(m, "public.big", after), "floe", timeout=600)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=300 * SCALE)
    assert p.returncode == 130, err
    assert "changed shape" in err and "resynced public.big" in err, err
    # Each while it is stopped: the next run meets it in the stream.
    for stmt, change, how in ddls("s"):
        marker -= 1
        w.ddl(pgdb, stmt, change, marker)
        done.append((marker, how))
        wait_until(lambda: any(mm == marker for *_, mm in w.log), "the marker")
        r = m.catch_up()
        assert r.returncode == 0, r.stderr
    # Found at start: no row changes after it before floe runs again.
    with w.lock:
        pgdb.sql("ALTER TABLE big ADD COLUMN late integer; ALTER TABLE big RENAME COLUMN rx "
                 "TO rx2")
        late_at = lsn_int(pgdb.lsn())
        r = m.catch_up()
        assert "changed shape" in r.stderr, r.stderr
        w.shape["late"] = "integer"
        w.shape["rx2"] = w.shape.pop("rx")
    w.stop.set()
    w.join()
    assert w.error is None, w.error
    m.catch_up()
    assert "halt" not in r.stderr
    check_equal(pgdb, m)
    changes = schema_changes(m, "public.big")
    for mk, how in done:
        check_landed(m, w, mk, how, changes)
    last = changes[-1]
    assert last[1] >= late_at or last[2] >= late_at
    assert {f.name for f in last[4].fields} >= {"late", "rx2"}
    # Renamed columns keep their field ids; a narrowed one gets a new one.
    ids = {s.schema_id: {f.name: f.field_id for f in s.fields}
           for s in m.pyiceberg_table("public.big").metadata.schemas}
    first, now = ids[0], ids[max(ids)]
    assert now["rx2"] == [s for s in ids.values() if "rx" in s][0]["rx"]
    assert now["ra2"] != first["ra"] and now["sa2"] != first["sa"]
    assert now["rf"] == first["rf"] and now["rvc"] == first["rvc"]
    # The other table went on untouched.
    one = [Col("id", "integer", True), Col("v", "integer")]
    assert iceberg_rows(m, "public.other", one)["duckdb"] == pg_rows(pgdb, "other", one)


# ---- a resync while another table streams -------------------------------------------------------

class Inserter(threading.Thread):
    """Inserts into `other` all along (a table that must keep streaming)."""

    def __init__(self, dsn):
        super().__init__(daemon=True)
        self.dsn, self.stop, self.error = dsn, threading.Event(), None

    def run(self):
        try:
            with psycopg.connect(self.dsn, autocommit=True) as c:
                i = 2
                while not self.stop.is_set():
                    c.execute("INSERT INTO other VALUES (%s, %s)", (i, i))
                    i += 1
                    time.sleep(0.01)
        except Exception as e:
            self.error = e


def history(m, ident):
    """[(snapshot id, frontier, a resync's?, timestamp ms)] of main, oldest first."""
    t = m.pyiceberg_table(ident)
    by_id = {s.snapshot_id: s for s in t.metadata.snapshots}
    return [(sid, frontier_of(summ) if "floe.frontier" in summ else None, replaces_all(summ),
             by_id[sid].timestamp_ms) for sid, summ in snapshots(m, ident, t)]


def test_a_resync_copies_one_table_while_another_streams(pgdb, tmp_path):
    create_big(pgdb, RESYNC_ROWS)
    pgdb.sql("ALTER TABLE big ALTER COLUMN ra TYPE bigint")
    m = Mirror(pgdb, tmp_path, ["public.big", "public.other"], "--create-publication")
    m.catch_up()
    cols = pg_columns(pgdb, "big")
    before = pg_rows(pgdb, "big", cols)
    ins = Inserter(pgdb.dsn)
    ins.start()
    p = m.popen("--commit-interval", "100ms", stderr=subprocess.PIPE, text=True)
    # bigint -> integer: Iceberg cannot narrow, so big is copied again
    pgdb.sql("ALTER TABLE big ALTER COLUMN ra TYPE integer; UPDATE big SET ra = -1 WHERE id = 1")
    wait_until(lambda: any(h[2] for h in history(m, "public.big")),
               "the resync's commit", timeout=600)
    time.sleep(1)
    ins.stop.set()
    ins.join()
    assert ins.error is None, ins.error
    end = pgdb.lsn()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=300 * SCALE)
    assert p.returncode == 130, err
    assert "is copied again in place (a resync)" in err and "ra" in err, err
    m.catch_up()
    check_equal(pgdb, m, ("duckdb", "pyiceberg"))
    one = [Col("id", "integer", True), Col("v", "integer")]
    assert iceberg_rows(m, "public.other", one)["duckdb"] == pg_rows(pgdb, "other", one)
    big = history(m, "public.big")
    (i, (sid, frontier, _, done_ms)), = [(i, h) for i, h in enumerate(big) if h[2]]
    # the other table committed past the resync's consistent point before it ended
    during = [h for h in history(m, "public.other") if h[1] > frontier and h[3] < done_ms]
    assert during, "no snapshot of public.other during the resync"
    assert frontier <= lsn_int(end)
    # the older snapshots still read, in their own schema
    old = sorted(duckdb_rows(m.metadata("public.big"), cols, big[i - 1][0]), key=repr)
    assert old == before
    tbl = m.pyiceberg_table("public.big")
    assert sorted(tbl.scan(snapshot_id=big[i - 1][0]).to_arrow().column("id").to_pylist()) == \
        sorted(r[0] for r in before)
    assert tbl.schema().find_field("ra").field_id != \
        tbl.schemas()[tbl.snapshot_by_id(big[i - 1][0]).schema_id].find_field("ra").field_id


def test_resync_on_demand_repairs_one_table(pgdb, tmp_path):
    pgdb.sql("CREATE TABLE t (id int PRIMARY KEY, v text); ALTER TABLE t REPLICA IDENTITY FULL;"
             "INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 1000) g;"
             "CREATE TABLE other (id int PRIMARY KEY, v int); INSERT INTO other VALUES (1, 1)")
    m = Mirror(pgdb, tmp_path, ["public.t", "public.other"], "--create-publication")
    m.catch_up()
    cols = [Col("id", "integer", True), Col("v", "text")]
    # Something outside floe damages the Iceberg table (a wrong delete).
    from pyiceberg.expressions import LessThan
    m.pyiceberg_table("public.t").delete(LessThan("id", 100))
    assert len(iceberg_rows(m, "public.t", cols)["duckdb"]) == 901
    pgdb.sql("UPDATE t SET v = 'new' WHERE id = 500; INSERT INTO other VALUES (2, 2)")
    r = m.run("--resync", "nope.t", check=False)
    assert r.returncode == 2 or r.returncode == 1
    assert "--resync names nope.t, which is not one of the mirrored tables" in r.stderr, r
    hist_other = history(m, "public.other")
    hist_t = history(m, "public.t")
    r = m.catch_up("--resync", "t")
    assert "resynced public.t: 1000 rows" in r.stderr, r.stderr
    assert "0 schema changes, 1 resyncs" in r.stderr, r.stderr
    got = iceberg_rows(m, "public.t", cols, readers_=("duckdb", "pyiceberg", "java"))
    for reader, rows in got.items():
        assert rows == pg_rows(pgdb, "t", cols), reader
    after = history(m, "public.t")
    assert after[:len(hist_t)] == hist_t                      # its history is kept
    assert [h[2] for h in after[len(hist_t):]].count(True) == 1
    assert len(iceberg_rows(m, "public.t", cols, after[len(hist_t) - 1][0])["duckdb"]) == 901
    other = history(m, "public.other")
    assert other[:len(hist_other)] == hist_other and True not in [h[2] for h in other]


# ---- ADD COLUMN ... DEFAULT --------------------------------------------------------------------

def spark_rows(m, ident, names):
    import spark_engine
    s = spark_engine.on(m.catalog, f"file://{m.wh}")
    return sorted(tuple(r[n] for n in names) for r in s.sql(f"SELECT * FROM floe.{ident}")
                  .collect())


@pytest.mark.parametrize("version", [2, 3])
def test_add_column_with_a_default_reads_the_default_for_older_rows(pgdb, tmp_path, version):
    pgdb.sql("CREATE TABLE d (id int PRIMARY KEY, a int);"
             "INSERT INTO d SELECT g, g FROM generate_series(1, 50) g")
    m = Mirror(pgdb, tmp_path, ["public.d"], "--create-publication", "--format-version",
               str(version))
    m.catch_up()
    pgdb.sql("ALTER TABLE d ADD COLUMN n integer NOT NULL DEFAULT 42;"
             "ALTER TABLE d ADD COLUMN s text DEFAULT 'x';"
             "INSERT INTO d VALUES (51, 51, 1, 'y')")
    r = m.catch_up()
    assert ("resynced public.d" in r.stderr) == (version == 2), r.stderr
    cols = [Col("id", "integer", True), Col("a", "integer"), Col("n", "integer"),
            Col("s", "text")]
    want = pg_rows(pgdb, "d", cols)
    assert (1, 1, 42, "x") in want
    got = iceberg_rows(m, "public.d", cols, readers_=("duckdb", "pyiceberg", "java"))
    for reader, rows in got.items():
        assert rows == want, reader
    assert spark_rows(m, "public.d", ["id", "a", "n", "s"]) == sorted(want)
    schema = m.pyiceberg_table("public.d").schema()
    if version == 3:                   # in place: the older files lack n and s
        assert schema.find_field("n").initial_default == 42
        assert schema.find_field("n").required
        assert schema.find_field("s").initial_default == "x"
        assert True not in [h[2] for h in history(m, "public.d")]


@pytest.mark.parametrize("mode", ["position", "equality"])
def test_a_toastable_column_added_to_a_table_without_full_identity(pgdb, tmp_path, mode):
    """An update that leaves a TOASTed value out (REPLICA IDENTITY DEFAULT)
    of a column added later.  With position deletes floe takes the value
    from the key's row in the table (tests/test_pg_toast.py): nothing to
    warn about.  With equality deletes it cannot: warned about at the DDL,
    and the table is resynced at such an update instead of halting."""
    pgdb.sql("CREATE TABLE tt (id int PRIMARY KEY, a int);"
             "INSERT INTO tt SELECT g, g FROM generate_series(1, 20) g")
    m = Mirror(pgdb, tmp_path, ["public.tt"], "--create-publication", "--delete-mode", mode)
    m.catch_up()
    pgdb.sql("ALTER TABLE tt ADD COLUMN body text;"
             "UPDATE tt SET body = (SELECT string_agg(md5(random()::text || g), '') FROM "
             "generate_series(1, 400) g) WHERE id = 1")
    r = m.catch_up()
    warning = 'Postgres may leave values of "body" out of updates'
    assert (warning in r.stderr) == (mode == "equality"), r.stderr
    pgdb.sql("UPDATE tt SET a = -1 WHERE id = 1")         # body unchanged: not sent
    r = m.catch_up()
    if mode == "equality":
        assert "an update left this TOASTed value unchanged" in r.stderr, r.stderr
        assert "resynced public.tt: 20 rows" in r.stderr, r.stderr
    else:
        assert "resync" not in r.stderr and "TOAST" not in r.stderr, r.stderr
    cols = [Col("id", "integer", True), Col("a", "integer"), Col("body", "text")]
    want = pg_rows(pgdb, "tt", cols)
    assert want[0][1] == -1 and len(want[0][2]) == 12800
    readers_ = ("duckdb",) if mode == "equality" else ("duckdb", "pyiceberg")
    for reader, rows in iceberg_rows(m, "public.tt", cols, readers_=readers_).items():
        assert rows == want, reader
    # the next run starts with the same warning (or none), and goes on
    r = m.catch_up()
    assert (warning in r.stderr) == (mode == "equality"), r.stderr


def test_a_drop_with_no_row_changed_after_it_is_followed_by_a_short_run(pgdb, tmp_path):
    """A DROP COLUMN with no row of the table changed after it: no Relation
    message tells, so the next run finds it in the catalog.  A run told to
    stop at an LSN taken before it started must still follow it, both when
    the table's last commit is below the stream's end (floe was down when
    the DROP came, another table's change came after it) and when it is at
    the very end (floe streamed past the DROP and committed every table up
    to the server's last WAL record, as it usually does here: floe has the
    server write one)."""
    pgdb.sql("CREATE TABLE s (id int PRIMARY KEY, a int, b int, c int); CREATE TABLE o (id int "
             "PRIMARY KEY); INSERT INTO s SELECT g, g, g, g FROM generate_series(1, 5) g")
    m = Mirror(pgdb, tmp_path, ["public.s", "public.o"], "--create-publication",
               "--commit-interval", "100ms", "--idle-commit-interval", "200ms")
    m.catch_up()

    def names():
        return [f.name for f in m.pyiceberg_table("public.s").schema().fields]

    # floe streams past the DROP
    p = m.popen(stderr=subprocess.PIPE, text=True)
    pgdb.sql("INSERT INTO o VALUES (-1)")
    streaming = pgdb.horizon()
    wait_until(lambda: committed_past(m, "public.o", streaming), "floe streaming")
    pgdb.sql("ALTER TABLE s DROP COLUMN b")
    dropped = pgdb.horizon()
    wait_until(lambda: committed_past(m, "public.s", dropped) and
               committed_past(m, "public.o", dropped), "floe past the DROP")
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=300 * SCALE)
    assert p.returncode == 130, err
    assert names() == ["id", "a", "b", "c"]
    r = m.catch_up()
    assert 'public.s changed shape at' in r.stderr and 'dropped "b"' in r.stderr, r.stderr
    assert names() == ["id", "a", "c"]
    # floe down at the DROP, another table's change after it
    pgdb.sql("ALTER TABLE s DROP COLUMN a; INSERT INTO o VALUES (1)")
    r = m.catch_up()
    assert 'dropped "a"' in r.stderr, r.stderr
    assert names() == ["id", "c"]
    cols = [Col("id", "integer", True), Col("c", "integer")]
    for reader, rows in iceberg_rows(m, "public.s", cols).items():
        assert rows == pg_rows(pgdb, "s", cols), reader
