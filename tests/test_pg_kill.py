"""Exactly once under SIGKILL: a writer makes random transactions on three
tables (REPLICA IDENTITY FULL, DEFAULT and USING INDEX; inserts, updates,
deletes and now and then a TRUNCATE of one or two of them; the DEFAULT one
has a TOASTed column that most updates leave out of the stream), and a
second one changes a large table, while `floe pg`, reaching Postgres
through a TCP proxy, is killed FLOE_PG_KILLS times (at least 200 by
default) and started again:

  - during the initial copy (the large table is copied last; each kill
    lands after the copy began, until a run completes it);
  - while it reconnects (the proxy cuts every connection and refuses new
    ones; floe is killed once it said it is reconnecting);
  - at random moments of the stream (some inside a TRUNCATE's transaction).

At the end:

  - every Iceberg table equals its Postgres table (DuckDB and pyiceberg);
  - every snapshot of the three small tables equals the source as of the
    LSN it records (its floe.frontier), by replaying the writer's log of
    committed transactions (each logged with the WAL position before and
    after its COMMIT, which brackets its commit record);
  - the slot's confirmed_flush_lsn, sampled all along, was never ahead of a
    frontier every table had committed by then (each sample is checked
    against the snapshots committed before it was read).
"""
import os
import random
import signal
import subprocess
import threading
import time

import psycopg
import pytest

from iceberg_readers import duckdb_snapshot_rows
from pgserver import (Mirror, Proxy, Run, commit_bracketed, iceberg_rows, lsn_int,  # noqa
                      pg_rows, pgdb, snapshots, frontier_of)
from rowgen import Col

KILLS = int(os.environ.get("FLOE_PG_KILLS", "200"))
COPY_KILLS = max(1, KILLS // 10)          # at most this many during the copy
RECONNECT_KILLS = max(1, KILLS * 3 // 20)
BIG_ROWS = int(os.environ.get("FLOE_PG_BIG_ROWS", "400000"))
KEYS = 60

TABLES = {
    "kfull": [Col("id", "integer", True), Col("v", "integer"), Col("s", "text")],
    "kdef": [Col("id", "integer", True), Col("v", "bigint"), Col("doc", "text")],
    "kidx": [Col("a", "integer", True), Col("b", "integer", True), Col("v", "integer")],
}
DDL = """
CREATE TABLE kfull (id int PRIMARY KEY, v int, s text);
ALTER TABLE kfull REPLICA IDENTITY FULL;
CREATE TABLE kdef (id int PRIMARY KEY, v bigint, doc text);
ALTER TABLE kdef ALTER COLUMN doc SET STORAGE EXTERNAL;
CREATE TABLE kidx (a int NOT NULL, b int NOT NULL, v int);
CREATE UNIQUE INDEX kidx_ab ON kidx (a, b);
ALTER TABLE kidx REPLICA IDENTITY USING INDEX kidx_ab;
INSERT INTO kfull SELECT g, g, 'row ' || g FROM generate_series(1, 20) g;
INSERT INTO kdef SELECT g, g, repeat(md5(g::text), 80) FROM generate_series(1, 20) g;
INSERT INTO kidx SELECT g, g % 3, g FROM generate_series(1, 20) g;
"""
BIG = [Col("id", "integer", True), Col("v", "integer"), Col("pad", "text")]
BIG_DDL = f"""
CREATE TABLE kbig (id int PRIMARY KEY, v int, pad text);
INSERT INTO kbig SELECT g, g, md5(g::text) FROM generate_series(1, {BIG_ROWS}) g;
"""


def big(r):
    """A value Postgres stores out of line (2560 bytes, doc's storage EXTERNAL)."""
    return "".join(f"{r.getrandbits(128):032x}" for _ in range(80))


def key_of(table, row):
    return (row[0], row[1]) if table == "kidx" else row[0]


class Writer(threading.Thread):
    """Random transactions; `log` holds (before, after, [(table, key, row|None)])
    for each committed one, in commit order."""

    def __init__(self, dsn, seed):
        super().__init__(daemon=True)
        self.dsn, self.r = dsn, random.Random(seed)
        self.stop = threading.Event()
        self.log = []
        self.state = {}                                   # (table, key) -> row
        self.truncates = 0                                # tables truncated (some rolled back)
        self.error = None

    def load(self, conn):
        for t in TABLES:
            for row in conn.execute(f"SELECT * FROM {t}").fetchall():
                self.state[(t, key_of(t, row))] = tuple(row)

    def op(self, c, mine, effects):
        r = self.r
        t = r.choice(list(TABLES))
        keys = [k for (tt, k) in mine if tt == t]
        kind = r.random()
        if kind < 0.01:                                   # TRUNCATE (sometimes two tables)
            both = [t] + ([r.choice([x for x in TABLES if x != t])] if r.random() < 0.3 else [])
            c.execute("TRUNCATE " + ", ".join(both))
            self.truncates += len(both)
            for tt, k in [tk for tk in mine if tk[0] in both]:
                del mine[(tt, k)]
                effects.append((tt, k, None))
            return
        if kind < 0.35 or not keys:                       # insert a new key
            k = (r.randrange(KEYS), r.randrange(3)) if t == "kidx" else r.randrange(KEYS)
            if (t, k) in mine:
                return
            row = (k[0], k[1], r.randrange(1000)) if t == "kidx" else \
                  (k, r.randrange(1000), f"s{r.randrange(99)}" if t == "kfull" else big(r))
            c.execute(f"INSERT INTO {t} VALUES (%s, %s, %s)", row)
        elif kind < 0.75:                                 # update (sometimes the key)
            k = r.choice(keys)
            old = mine[(t, k)]
            new = (old[0], old[1], r.randrange(1000)) if t == "kidx" else \
                  (old[0], r.randrange(10**6), old[2])
            if r.random() < 0.15:
                nk = (r.randrange(KEYS), r.randrange(3)) if t == "kidx" else r.randrange(KEYS)
                if (t, nk) not in mine:
                    new = (nk[0], nk[1], new[2]) if t == "kidx" else (nk,) + new[1:]
            if t == "kidx":
                c.execute("UPDATE kidx SET a = %s, b = %s, v = %s WHERE a = %s AND b = %s",
                          (*new, k[0], k[1]))
            elif t == "kdef":        # doc left out of the stream, unless it changes
                if new[0] != k or r.random() < 0.2:
                    new = new[:2] + (big(r),)
                    c.execute("UPDATE kdef SET id = %s, v = %s, doc = %s WHERE id = %s",
                              (*new, k))
                else:
                    c.execute("UPDATE kdef SET v = %s WHERE id = %s", (new[1], k))
            else:
                cols = "id = %s, v = %s, s = %s"
                c.execute(f"UPDATE {t} SET {cols} WHERE id = %s", (*new, k))
            del mine[(t, k)]
            mine[(t, key_of(t, new))] = new
            effects += [(t, k, None), (t, key_of(t, new), new)]
            return
        else:                                             # delete
            k = r.choice(keys)
            if t == "kidx":
                c.execute("DELETE FROM kidx WHERE a = %s AND b = %s", k)
            else:
                c.execute(f"DELETE FROM {t} WHERE id = %s", (k,))
            del mine[(t, k)]
            effects.append((t, k, None))
            return
        mine[(t, key_of(t, row))] = row
        effects.append((t, key_of(t, row), row))

    def txn(self, c):
        mine = dict(self.state)
        effects = []
        c.execute("BEGIN")
        for _ in range(self.r.randint(1, 8)):
            self.op(c, mine, effects)
        if self.r.random() < 0.1:
            c.execute("ROLLBACK")                         # never visible
            return
        before, after = commit_bracketed(c)
        self.state = mine
        self.log.append((before, after, effects))

    def run(self):
        try:
            with psycopg.connect(self.dsn, autocommit=True) as c:
                self.load(c)
                while not self.stop.is_set():
                    self.txn(c)
                    time.sleep(self.r.random() * 0.01)
        except Exception as e:                            # reported by the test
            self.error = e


class BigWriter(threading.Thread):
    """Small transactions upserting and deleting random keys of kbig
    (Postgres is the truth: the table is compared at the end)."""

    def __init__(self, dsn, seed):
        super().__init__(daemon=True)
        self.dsn, self.r = dsn, random.Random(seed)
        self.stop = threading.Event()
        self.error, self.done = None, 0

    def run(self):
        r = self.r
        try:
            with psycopg.connect(self.dsn, autocommit=True) as c:
                while not self.stop.is_set():
                    with c.transaction():
                        for _ in range(r.randint(1, 5)):
                            k = r.randrange(1, BIG_ROWS + 1000)
                            if r.random() < 0.7:
                                c.execute("INSERT INTO kbig VALUES (%s, %s, %s) ON CONFLICT (id) "
                                          "DO UPDATE SET v = excluded.v",
                                          (k, r.randrange(10**6), f"w{k}"))
                            else:
                                c.execute("DELETE FROM kbig WHERE id = %s", (k,))
                    self.done += 1
                    time.sleep(r.random() * 0.02)
        except Exception as e:                            # reported by the test
            self.error = e


class SlotSampler(threading.Thread):
    """(confirmed_flush_lsn, unix ms once read) every few ms."""

    def __init__(self, dsn, slot):
        super().__init__(daemon=True)
        self.dsn, self.slot = dsn, slot
        self.stop = threading.Event()
        self.samples = []

    def run(self):
        with psycopg.connect(self.dsn, autocommit=True) as c:
            while not self.stop.is_set():
                row = c.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                                "WHERE slot_name = %s", (self.slot,)).fetchone()
                if row and row[0]:
                    self.samples.append((lsn_int(row[0]), int(time.time() * 1000)))
                time.sleep(0.02)


def state_at(base, log, frontier, ambiguous_in):
    """The source as of `frontier`: the transactions surely before it, and
    (a second answer) also the one whose commit window holds it, if any."""
    state = dict(base)
    maybe = None
    for before, after, effects in log:
        if after <= frontier:
            for t, k, row in effects:
                if row is None:
                    state.pop((t, k), None)
                else:
                    state[(t, k)] = row
        elif before < frontier < after and ambiguous_in:
            maybe = dict(state)
            for t, k, row in effects:
                if row is None:
                    maybe.pop((t, k), None)
                else:
                    maybe[(t, k)] = row
    return state, maybe


def kill_many(m, kills, r, longest):
    """Start the mirror and SIGKILL it after a random while (up to `longest`
    seconds), `kills` times; it must die of the signal each time (what each
    run said is kept in m.dir/runs.log, for a failure)."""
    for n in range(kills):
        p = m.popen(stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(r.random() * longest)
        p.send_signal(signal.SIGKILL)
        _, err = p.communicate()
        with open(m.dir / "runs.log", "ab") as f:
            f.write(b"---- run %d\n" % n + err)
        assert b"AddressSanitizer" not in err and b"runtime error" not in err, err
        if p.returncode != -signal.SIGKILL:             # all of it: the cause may be early
            pytest.fail(f"exit {p.returncode}:\n" + err.decode(errors="replace")[-20000:])


def kill_during_the_copy(m, r, kills, longest, last):
    """Kill the mirror a random while (up to `longest` s) after it began
    its copies, until a run completes the copy of `last` (the last table
    it copies) or `kills` kills; returns the kills that came first and the
    LSN the slot was created at."""
    created = None
    for n in range(kills):
        run = Run(m)
        said = run.wait_for("copied first", "streaming from slot")
        if created is None:
            line = next(x for x in run.lines if "created replication slot" in x)
            created = lsn_int(line.split("consistent at ")[1].split()[0])
        if said == "copied first":
            time.sleep(r.uniform(0, longest))
        done = run.said(f"copied {last}") or said != "copied first"
        run.kill()
        if done:
            return n, created
    return kills, created


def kill_while_reconnecting(m, proxy, r, kills):
    """Run the mirror a random while, take Postgres away (the proxy cuts
    every connection and refuses new ones), and kill the mirror a random
    while after it said it is reconnecting, `kills` times."""
    for _ in range(kills):
        run = Run(m)
        time.sleep(r.uniform(0, 0.6))
        proxy.down()
        try:
            run.wait_for("reconnecting in")
            time.sleep(r.uniform(0, 0.3))
            assert not run.said("reconnected to Postgres"), "".join(run.lines)
            run.kill()
        finally:
            proxy.up()


def kill_while_writing(m, db, writer, kills, r, longest, first=(), others=()):
    """kill_many while `writer` and `others` (threads with `stop` and
    `error`) write and the slot is sampled, after the kill phases `first`
    (callables); then the mirror catches up.  Returns the samples,
    (confirmed LSN, unix ms)."""
    writers = [writer, *others]
    for w in writers:
        w.start()
    sampler = SlotSampler(db.dsn, db.slot)
    sampler.start()
    try:
        try:
            for phase in first:
                phase()
            kill_many(m, kills, r, longest)
        finally:
            for w in writers:
                w.stop.set()
            for w in writers:
                w.join()
        for w in writers:
            assert w.error is None, w.error
        m.catch_up_log = m.catch_up().stderr            # its warnings, for a failure
        time.sleep(0.2)
    finally:
        sampler.stop.set()                # before the server goes, on a failure too
        sampler.join()
    return sampler.samples


def check_slot_never_ahead(m, tables, samples, created=0):
    """The slot's confirmed LSN, sampled as (lsn, unix ms), was never ahead
    of a frontier every table had committed by then (before a table's first
    commit, of `created`: where the slot was created, as its copy comes from
    there or later)."""
    t = {tb: m.pyiceberg_table(f"public.{tb}") for tb in tables}
    commits = {tb: sorted((s.timestamp_ms, frontier_of(s.summary.additional_properties))
                          for s in t[tb].snapshots()) for tb in tables}
    for confirmed, read_ms in samples:
        for tb in tables:
            done = max((f for ts, f in commits[tb] if ts <= read_ms + 1), default=created)
            assert confirmed <= done, (tb, confirmed, done)


def explain(m, table, cols, snaps, i, base, log):
    """Why snapshot i of `table` differs from the source at its frontier:
    its summary and its parent's, the rows it has too many or too few (by
    DuckDB and by pyiceberg), and the writer's transactions on the table
    around its frontier."""
    from iceberg_readers import pyiceberg_snapshot_rows
    sid, summary = snaps[i]
    f = frontier_of(summary)
    prev = frontier_of(snaps[i - 1][1]) if i else 0
    want, maybe = state_at(base, log, f, True)
    want = set(rows_of(want, table))
    duck = set(duckdb_snapshot_rows(m.metadata(f"public.{table}"), cols, [sid])[0])
    py = set(pyiceberg_snapshot_rows(m.catalog, f"file://{m.wh}", f"public.{table}", cols,
                                     [sid])[0])
    out = [f"snapshot {i} ({sid}) of {table} at frontier {f} (parent's {prev}): {summary}",
           f"parent: {snaps[i - 1][1] if i else None}",
           f"duckdb: {len(duck)} rows, too many {sorted(duck - want, key=repr)[:20]}, missing "
           f"{sorted(want - duck, key=repr)[:20]}",
           f"pyiceberg: {len(py)} rows, same as duckdb: {py == duck}",
           f"ambiguous transaction at the frontier: {maybe is not None}"]
    for before, after, effects in log:
        if after >= prev - 200000 and before <= f + 200000:
            mine = [e for e in effects if e[0] == table]
            if mine:
                out.append(f"  txn [{before}, {after}]: {mine}")
    return "\n".join(out)


def rows_of(state, table):
    return sorted((row for (t, _), row in state.items() if t == table), key=repr)


def psql_copy_seconds(db, table):
    """How long Postgres takes to COPY `table` out to a client that drops it."""
    t0 = time.monotonic()
    with db.conn() as c, c.cursor().copy(f"COPY {table} TO STDOUT") as cp:
        for _ in cp:
            pass
    return time.monotonic() - t0


def test_kill_floe_at_random_moments(pgdb, tmp_path):
    pgdb.sql(DDL)
    pgdb.sql(BIG_DDL)
    proxy = Proxy(pgdb.srv.port)
    proxy.start()
    m = Mirror(pgdb, tmp_path, [f"public.{t}" for t in TABLES] + ["public.kbig"],
               "--create-publication", "--commit-interval", "100ms",
               "--idle-commit-interval", "300ms")
    m.source = proxy.url(pgdb)
    writer = Writer(pgdb.dsn, seed=1234)
    with psycopg.connect(pgdb.dsn) as c:
        writer.load(c)
    base = dict(writer.state)
    r = random.Random(99)
    copy_s = max(0.05, psql_copy_seconds(pgdb, "kbig"))   # floe's copy takes longer
    copy_kills = []
    phases = (lambda: copy_kills.append(kill_during_the_copy(m, r, COPY_KILLS, copy_s,
                                                             "public.kbig")),
              lambda: kill_while_reconnecting(m, proxy, r, RECONNECT_KILLS))
    big = BigWriter(pgdb.dsn, seed=5)
    try:
        samples = kill_while_writing(m, pgdb, writer, KILLS - COPY_KILLS - RECONNECT_KILLS, r,
                                     0.6, first=phases, others=[big])
    finally:
        proxy.close()
    assert len(writer.log) > 100 and big.done > 100
    copy_kills, created = copy_kills[0]
    assert copy_kills > 0                                 # some kills came during the copy

    # Every table equals its source now.
    for table, cols in TABLES.items():
        want = pg_rows(pgdb, table, cols)
        assert want == rows_of(writer.state, table)
        for reader, rows in iceberg_rows(m, f"public.{table}", cols).items():
            assert rows == want, (table, reader)

    # Every snapshot equals the source as of its frontier.
    history = {}
    for table, cols in TABLES.items():
        snaps = snapshots(m, f"public.{table}")
        history[table] = snaps
        got = duckdb_snapshot_rows(m.metadata(f"public.{table}"), cols, [s for s, _ in snaps])
        for i, ((sid, summary), rows) in enumerate(zip(snaps, got)):
            f = frontier_of(summary)
            want, maybe = state_at(base, writer.log, f, True)
            rows = sorted(rows, key=repr)
            if not (rows == rows_of(want, table) or (maybe and rows == rows_of(maybe, table))):
                pytest.fail(explain(m, table, cols, snaps, i, base, writer.log) +
                            f"\n(what the runs said: {tmp_path}/runs.log)\n" +
                            m.catch_up_log[-3000:])

    want = pg_rows(pgdb, "kbig", BIG)
    for reader, rows in iceberg_rows(m, "public.kbig", BIG).items():
        assert rows == want, ("kbig", reader)

    check_slot_never_ahead(m, [*TABLES, "kbig"], samples, created)
    assert len(samples) > 100
    assert writer.truncates > 0
    print(f"kills {KILLS} ({copy_kills} during the copy, {RECONNECT_KILLS} while reconnecting), "
          f"transactions {len(writer.log)} + {big.done}, truncates {writer.truncates}, samples "
          f"{len(samples)}, snapshots {[len(h) for h in history.values()]}")
