"""Exactly once under SIGKILL while the tables change shape: a writer makes
random transactions on two tables (REPLICA IDENTITY FULL and DEFAULT) and,
every few of them, a random ALTER TABLE (add a column, nullable or NOT NULL
DEFAULT; rename; int -> bigint; drop; bigint -> int, which Iceberg cannot
take in place: a resync), while `floe pg` is killed at random moments and
started again, FLOE_PG_DDL_KILLS times (50 by default).  At the end:

  - every Iceberg table equals its Postgres table (DuckDB and pyiceberg);
  - every snapshot, read in its own schema, equals the source as of its
    frontier: the writer's log is replayed up to it on a model keyed by
    attnum (Postgres's identity of a column), and each field of the
    snapshot's schema is the column its floe.pg.columns names;
  - the slot's confirmed_flush_lsn never ran ahead of a table.
"""
import os
import random
import threading
import time

import psycopg

from iceberg_readers import duckdb_snapshot_rows
from pgserver import Mirror, iceberg_rows, lsn_int, pg_rows, pgdb, snapshots, frontier_of  # noqa
from rowgen import Col
from test_pg_kill import check_slot_never_ahead, kill_while_writing

KILLS = int(os.environ.get("FLOE_PG_DDL_KILLS", "50"))
KEYS = 50
TABLES = ("sfull", "sdef")
SETUP = """
CREATE TABLE sfull (id int PRIMARY KEY, a int, b int);
ALTER TABLE sfull REPLICA IDENTITY FULL;
CREATE TABLE sdef (id int PRIMARY KEY, a int, b int);
INSERT INTO sfull SELECT g, g, g FROM generate_series(1, 20) g;
INSERT INTO sdef SELECT g, g, g FROM generate_series(1, 20) g;
"""


class Writer(threading.Thread):
    """Random transactions and DDL.  `log` holds, in commit order,
    ("txn", before, after, [(table, id, {attnum: value} | None)]) and
    ("ddl", before, after, table, attnum, default) for a column added with
    a default every earlier row reads (None: nothing to replay)."""

    def __init__(self, dsn, seed):
        super().__init__(daemon=True)
        self.dsn, self.r = dsn, random.Random(seed)
        self.stop = threading.Event()
        self.log, self.error = [], None
        self.shape = {}                                   # table -> {name: (attnum, kind)}
        self.live = {t: {} for t in TABLES}               # id -> {attnum: value}
        self.added = 0

    def load(self, c):
        for t in TABLES:
            rows = c.execute("SELECT attname, attnum, format_type(atttypid, NULL) FROM "
                             "pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 AND "
                             "NOT attisdropped ORDER BY attnum", (t,)).fetchall()
            self.shape[t] = {n: (a, k) for n, a, k in rows}
            names = list(self.shape[t])
            for row in c.execute(f"SELECT {', '.join(names)} FROM {t}").fetchall():
                self.live[t][row[0]] = {self.shape[t][n][0]: v for n, v in zip(names, row)}

    def txn(self, c):
        r = self.r
        effects = []
        c.execute("BEGIN")
        for _ in range(r.randint(1, 5)):
            t = r.choice(TABLES)
            shape, live = self.shape[t], self.live[t]
            cols = [n for n in shape if n != "id"]
            k = r.random()
            if k < 0.4 or not live:
                rid = r.randrange(KEYS)
                if rid in live:
                    continue
                vals = {n: r.randrange(-1000, 1000) for n in cols}
                names = ", ".join(["id"] + cols)
                c.execute(f"INSERT INTO {t} ({names}) VALUES ({', '.join(['%s'] * (1 + len(cols)))})",
                          [rid] + list(vals.values()))
                row = {shape["id"][0]: rid, **{shape[n][0]: v for n, v in vals.items()}}
            elif k < 0.8 and cols:
                rid = r.choice(list(live))
                n, v = r.choice(cols), r.randrange(-1000, 1000)
                c.execute(f"UPDATE {t} SET {n} = %s WHERE id = %s", (v, rid))
                row = dict(live[rid])
                row[shape[n][0]] = v
            else:
                rid = r.choice(list(live))
                c.execute(f"DELETE FROM {t} WHERE id = %s", (rid,))
                del live[rid]
                effects.append((t, rid, None))
                continue
            live[rid] = row
            effects.append((t, rid, dict(row)))
        before = c.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        c.execute("COMMIT")
        after = c.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        self.log.append(("txn", lsn_int(before), lsn_int(after), effects))

    def attnum(self, c, t, name):
        return c.execute("SELECT attnum FROM pg_attribute WHERE attrelid = %s::regclass AND "
                         "attname = %s", (t, name)).fetchone()[0]

    def ddl(self, c):
        r = self.r
        t = r.choice(TABLES)
        shape = self.shape[t]
        cols = [n for n in shape if n != "id"]
        ints = [n for n in cols if shape[n][1] == "integer"]
        bigs = [n for n in cols if shape[n][1] == "bigint"]
        k = r.random()
        default = None
        before = c.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        if k < 0.3 or len(cols) < 2:
            self.added += 1
            name = f"c{self.added}"
            if r.random() < 0.5:
                default = r.randrange(100)
                c.execute(f"ALTER TABLE {t} ADD COLUMN {name} integer NOT NULL DEFAULT {default}")
            else:
                c.execute(f"ALTER TABLE {t} ADD COLUMN {name} integer")
            shape[name] = (self.attnum(c, t, name), "integer")
            for row in self.live[t].values():
                row[shape[name][0]] = default
        elif k < 0.5:
            old = r.choice(cols)
            self.added += 1
            new = f"r{self.added}"
            c.execute(f"ALTER TABLE {t} RENAME COLUMN {old} TO {new}")
            shape[new] = shape.pop(old)
        elif k < 0.65 and ints:
            n = r.choice(ints)
            c.execute(f"ALTER TABLE {t} ALTER COLUMN {n} TYPE bigint")
            shape[n] = (shape[n][0], "bigint")
        elif k < 0.8 and bigs:
            n = r.choice(bigs)
            c.execute(f"ALTER TABLE {t} ALTER COLUMN {n} TYPE integer")
            shape[n] = (shape[n][0], "integer")
        else:
            n = r.choice(cols)
            c.execute(f"ALTER TABLE {t} DROP COLUMN {n}")
            del shape[n]                        # its values stay in the rows: a snapshot
                                                # still in the old schema reads them
        after = c.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        self.log.append(("ddl", lsn_int(before), lsn_int(after), t,
                         shape[name][0] if default is not None else None, default))

    def run(self):
        try:
            with psycopg.connect(self.dsn, autocommit=True) as c:
                n = 0
                while not self.stop.is_set():
                    n += 1
                    if n % 25 == 0:
                        self.ddl(c)
                    else:
                        self.txn(c)
                    time.sleep(self.r.random() * 0.01)
        except Exception as e:                            # reported by the test
            self.error = e


class Replay:
    """The source as of ascending frontiers: the writer's log applied once
    (frontiers of one table's history only grow)."""

    def __init__(self, base, log):
        self.state = {t: {k: dict(v) for k, v in rows.items()} for t, rows in base.items()}
        self.log, self.at = log, 0

    @staticmethod
    def apply(st, e):
        if e[0] == "ddl":
            _, _, _, t, attnum, default = e
            if attnum is not None:
                for row in st[t].values():
                    row[attnum] = default
            return
        for t, rid, row in e[3]:
            if row is None:
                st[t].pop(rid, None)
            else:
                st[t][rid] = dict(row)

    def to(self, frontier):
        """(the state as of frontier, and the state with the transaction
        whose commit window holds it, or None)."""
        while self.at < len(self.log) and self.log[self.at][2] <= frontier:
            self.apply(self.state, self.log[self.at])
            self.at += 1
        maybe = None
        for e in self.log[self.at:self.at + 3]:
            if e[1] < frontier < e[2]:
                other = {t: {k: dict(v) for k, v in rows.items()} for t, rows in self.state.items()}
                self.apply(other, e)
                if e[0] == "ddl":        # a column's default shows only in a later schema
                    return other, None
                maybe = other
        return self.state, maybe


def snapshot_columns(m, ident, sid, summary):
    """[(name, attnum, kind)] of the snapshot's schema, by floe.pg.columns."""
    t = m.pyiceberg_table(ident)
    s = t.snapshot_by_id(sid)
    schema = t.schemas()[s.schema_id]
    attnums = dict(tuple(map(int, p.split(":"))) for p in summary["floe.pg.columns"].split(","))
    return [(f.name, attnums[f.field_id], "bigint" if str(f.field_type) == "long" else "integer")
            for f in schema.fields]


def projected(state, table, cols):
    return sorted((tuple(row.get(a) for _, a, _ in cols) for row in state[table].values()),
                  key=repr)


def test_kill_floe_while_tables_change_shape(pgdb, tmp_path):
    pgdb.sql(SETUP)
    m = Mirror(pgdb, tmp_path, [f"public.{t}" for t in TABLES], "--create-publication",
               "--commit-interval", "100ms", "--idle-commit-interval", "300ms", "--quiet")
    m.run("--stop-at", "now")
    writer = Writer(pgdb.dsn, seed=4321)
    with psycopg.connect(pgdb.dsn) as c:
        writer.load(c)
    base = {t: {k: dict(v) for k, v in rows.items()} for t, rows in writer.live.items()}
    samples = kill_while_writing(m, pgdb, writer, KILLS, random.Random(77), 1.0)
    ddls = [e for e in writer.log if e[0] == "ddl"]
    assert len(ddls) >= 5 and len(writer.log) > 100

    for table in TABLES:
        ident = f"public.{table}"
        cols = [Col(n, k, n == "id") for n, (_, k) in
                sorted(writer.shape[table].items(), key=lambda c: c[1][0])]
        want = pg_rows(pgdb, table, cols)
        for reader, rows in iceberg_rows(m, ident, cols).items():
            assert rows == want, (table, reader)
        snaps = snapshots(m, ident)
        shapes = [tuple(snapshot_columns(m, ident, sid, summ)) for sid, summ in snaps]
        read = {}
        for shape in set(shapes):                 # one DuckDB connection per schema
            ids = [sid for (sid, _), sh in zip(snaps, shapes) if sh == shape]
            cols_s = [Col(n, k) for n, _, k in shape]
            for sid, rows in zip(ids, duckdb_snapshot_rows(m.metadata(ident), cols_s, ids)):
                read[sid] = sorted(rows, key=repr)
        replay = Replay(base, writer.log)
        for (sid, summ), shape in zip(snaps, shapes):
            f = frontier_of(summ)
            st, maybe = replay.to(f)
            assert read[sid] == projected(st, table, shape) or \
                (maybe and read[sid] == projected(maybe, table, shape)), (table, sid, f, summ)

    check_slot_never_ahead(m, TABLES, samples)
    print(f"kills {KILLS}, transactions {len(writer.log)}, DDL {len(ddls)}, snapshots "
          f"{[len(snapshots(m, f'public.{tb}')) for tb in TABLES]}")
