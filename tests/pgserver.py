"""A real PostgreSQL for floe's Postgres tests: Debian's postgresql package
(initdb, pg_ctl), a cluster in a temporary data directory on a loopback port
with wal_level = logical, started once per test process and stopped at its
end.  initdb refuses root, so as root the cluster runs as the `postgres`
OS user (runuser).  Each test gets a database of its own (`pgdb`).

Also here: running `floe pg` against it, reading a table back with psycopg
in rowgen's canonical form (readers.py gives the Iceberg readers' side),
and reading the Iceberg tables with DuckDB, pyiceberg and Java.
"""
import atexit
import datetime as dt
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid

import psycopg
import pytest

import readers
from conftest import SCALE, free_port, run_floe  # noqa: F401 (SCALE: for the tests)
from rowgen import Col

PG_BIN = None
for _v in ("15", "16", "17", "14", "13"):
    if os.path.exists(f"/usr/lib/postgresql/{_v}/bin/initdb"):
        PG_BIN = f"/usr/lib/postgresql/{_v}/bin"
        break

CONF = """
wal_level = logical
max_replication_slots = 64
max_wal_senders = 64
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{dir}'
fsync = off
full_page_writes = off
synchronous_commit = on
max_connections = 200
shared_buffers = 64MB
wal_sender_timeout = 60s
log_min_messages = warning
"""




class PgServer:
    def __init__(self, extra_conf=""):
        if not PG_BIN:
            pytest.fail("PostgreSQL is not installed: scripts/install-deps.sh installs it "
                        "(apt-get install postgresql)")
        self.root = tempfile.mkdtemp(prefix="floe-pg-")
        self.data = os.path.join(self.root, "data")
        self.port = free_port()
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            shutil.chown(self.root, "postgres")
            os.chmod(self.root, 0o755)
        self._run("initdb", "-D", self.data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
                  "--no-sync", "--locale=C.UTF-8")
        conf = os.path.join(self.data, "postgresql.conf")
        with open(conf, "a") as f:
            f.write(CONF.format(port=self.port, dir=self.root) + extra_conf)
        self._run("pg_ctl", "-D", self.data, "-l", os.path.join(self.root, "log"), "-w", "start")
        self.dsn = f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres"
        atexit.register(self.stop)

    def _run(self, prog, *args):
        cmd = [os.path.join(PG_BIN, prog), *args]
        if self.as_postgres:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        subprocess.run(cmd, check=True, capture_output=True, timeout=120)

    def stop(self):
        if self.data and os.path.exists(self.data):
            try:
                self._run("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")
            except subprocess.CalledProcessError:
                pass
            shutil.rmtree(self.root, ignore_errors=True)
            self.data = None

    def down(self, mode="fast"):
        """Stop the server (immediate: as a crash); up() starts it again."""
        self._run("pg_ctl", "-D", self.data, "-m", mode, "-w", "stop")

    def up(self):
        self._run("pg_ctl", "-D", self.data, "-l", os.path.join(self.root, "log"), "-w", "start")

    def restart(self, mode="immediate"):
        """Stop (immediate: as a crash) and start again."""
        self.down(mode)
        self.up()

    def log(self):
        with open(os.path.join(self.root, "log")) as f:
            return f.read()


_server = None


def server():
    global _server
    if _server is None:
        _server = PgServer()
    return _server


class Db:
    """A database of its own on the test server, with its slot name."""

    def __init__(self, srv, name):
        self.srv, self.name = srv, name
        self.dsn = f"host=127.0.0.1 port={srv.port} user=postgres dbname={name}"
        self.url = f"postgresql://postgres@127.0.0.1:{srv.port}/{name}"
        self.slot = "s_" + name

    def conn(self, **kw):
        return psycopg.connect(self.dsn, autocommit=True, **kw)

    def sql(self, stmt, params=None):
        with self.conn() as c:
            cur = c.execute(stmt, params)
            return cur.fetchall() if cur.description else None

    def lsn(self):
        return self.sql("SELECT pg_current_wal_insert_lsn()::text")[0][0]

    def horizon(self):
        """The WAL position now (an int), and a commit written after it, so
        that a mirror's frontier soon passes it: an idle server may write no
        WAL for a long while."""
        end = lsn_int(self.lsn())
        self.sql("SELECT pg_logical_emit_message(true, 'floe-test', 'tick')")
        return end

    def slot_lsn(self):
        rows = self.sql("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE "
                        "slot_name = %s", (self.slot,))
        return rows[0][0] if rows else None

    def drop(self):
        with psycopg.connect(self.srv.dsn, autocommit=True) as c:
            for _ in range(50):
                c.execute("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                          "WHERE database = %s AND active_pid IS NOT NULL", (self.name,))
                left = 0
                for (slot,) in c.execute("SELECT slot_name FROM pg_replication_slots WHERE "
                                         "database = %s", (self.name,)).fetchall():
                    try:
                        c.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
                    except psycopg.Error:
                        left += 1
                if not left:
                    break
                time.sleep(0.1)
            c.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


@pytest.fixture
def pgdb():
    srv = server()
    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(srv.dsn, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    db = Db(srv, name)
    yield db
    db.drop()


class Proxy(threading.Thread):
    """A TCP proxy to a Postgres port: cut() closes every connection it
    carries at once; down() also refuses new ones (closed as accepted)
    until up()."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.target = port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.lock, self.socks, self.accepted, self.refusing = threading.Lock(), [], 0, False

    def url(self, db):
        """db's URL through this proxy."""
        return db.url.replace(f":{db.srv.port}/", f":{self.port}/")

    def run(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                refusing = self.refusing
            try:
                if refusing:
                    raise OSError("down")
                server = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            with self.lock:
                self.socks += [client, server]
                self.accepted += 1
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self):
        with self.lock:
            socks, self.socks = self.socks, []
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass

    def down(self):
        with self.lock:
            self.refusing = True
        self.cut()

    def up(self):
        with self.lock:
            self.refusing = False

    def close(self):
        self.listener.close()
        self.cut()


# ---- floe pg --------------------------------------------------------------------------------

class Mirror:
    """`floe pg` from a database into a catalog and warehouse of a test."""

    def __init__(self, db, tmp_path, tables, *extra):
        self.db, self.dir = db, tmp_path
        self.catalog, self.wh = f"{tmp_path}/catalog.db", f"{tmp_path}/wh"
        self.tables, self.extra = tables, list(extra)
        self.index = f"{tmp_path}/index"
        self.source = db.url                  # floe's way to Postgres (a Proxy's url)

    def args(self, *more):
        a = ["pg", "--source", self.source, "--slot", self.db.slot, "--catalog",
             f"sqlite:{self.catalog}", "--warehouse", self.wh, "--index-dir", self.index]
        if self.tables:
            a += ["--tables", ",".join(self.tables)]
        return a + self.extra + list(more)

    def run(self, *more, check=True, timeout=300):
        return run_floe(*self.args(*more), check=check, timeout=timeout)

    def catch_up(self, *more, check=True):
        """Run until every table has committed everything up to now."""
        return self.run("--stop-at", self.db.lsn(), "--commit-interval", "200ms", *more,
                        check=check)

    def popen(self, *more, **kw):
        import conftest
        return subprocess.Popen([conftest.floe_bin(), *self.args(*more)], **kw)

    def pyiceberg_table(self, ident):
        from iceberg_readers import pyiceberg_catalog
        return pyiceberg_catalog(self.catalog, f"file://{self.wh}").load_table(ident)

    def metadata(self, ident):
        return self.pyiceberg_table(ident).metadata_location


def commit_bracketed(c):
    """COMMIT on psycopg connection c, bracketed: (WAL insert position
    before, after), between which its commit record lies."""
    before = c.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
    c.execute("COMMIT")
    after = c.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
    return lsn_int(before), lsn_int(after)


# ---- values as psycopg returns them, in rowgen's canonical form -------------------------------

class Run:
    """One `floe pg` process whose stderr lines are collected as they come."""

    def __init__(self, m, *more):
        self.p = m.popen(*more, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.p.stderr:
            self.lines.append(line)

    def said(self, text):
        return any(text in line for line in list(self.lines))

    def wait_until(self, done, what):
        """Until done() (it must not exit first)."""
        deadline = time.monotonic() + 120 * SCALE
        while not done():
            if self.p.poll() is not None or time.monotonic() > deadline:
                self.p.kill()
                self.p.wait()
                self.reader.join()
                lines = [x for x in self.lines if "changes (" not in x and "copying:" not in x]
                pytest.fail(f"waiting for {what}: exit {self.p.returncode}:\n" +
                            "".join(lines)[-20000:])
            time.sleep(0.005)

    def wait_for(self, *texts):
        """The first of `texts` it says (it must not exit first)."""
        self.wait_until(lambda: any(self.said(t) for t in texts), texts)
        return next(t for t in texts if self.said(t))

    def stop(self):
        """SIGINT; its exit status."""
        self.p.send_signal(signal.SIGINT)
        self.p.wait(timeout=300 * SCALE)
        self.reader.join()
        return self.p.returncode

    def kill(self):
        """SIGKILL; it must die of the signal, without a sanitizer report.
        Returns what it said."""
        self.p.send_signal(signal.SIGKILL)
        self.p.wait()
        self.reader.join()
        err = "".join(self.lines)
        assert "AddressSanitizer" not in err and "runtime error" not in err, err
        if self.p.returncode != -signal.SIGKILL:
            pytest.fail(f"exit {self.p.returncode}:\n" + err[-20000:])
        return err


class _Range:
    """A psycopg Range in the shape readers.canon reads ranges in."""

    @staticmethod
    def as_dict(r):
        if r is None:
            return None
        if r.isempty:
            return {"lower": None, "upper": None, "lower_inclusive": False,
                    "upper_inclusive": False, "empty": True}
        return {"lower": r.lower, "upper": r.upper, "lower_inclusive": r.lower_inc,
                "upper_inclusive": r.upper_inc, "empty": False}


def pg_canon(col, v):
    if v is None:
        return None
    if col.kind in readers.RANGES:
        return readers.canon(col, _Range.as_dict(v))
    if col.kind == "list":
        return [pg_canon(col.elem, x) for x in v]
    if col.kind == "uuid":
        return str(v)
    return readers.canon(col, v)


def pg_rows(db, table, cols, order="1", at_lsn=None):
    """The table's rows, read with psycopg, canonical.  Columns whose kind is
    text but whose Postgres type is not (interval, unconstrained numeric,
    enums, inet...) are read as their text output (format('%s', ...))."""
    select = []
    for c in cols:
        if c.kind == "jsonb":
            select.append(f'"{c.name}"::text')
        elif c.kind == "list" and c.elem.kind == "jsonb":
            select.append(f'"{c.name}"::text[]')
        elif c.kind in ("interval", "text"):
            select.append(f"CASE WHEN \"{c.name}\" IS NOT NULL THEN format('%s', \"{c.name}\") END")
        else:
            select.append(f'"{c.name}"')
    with db.conn() as conn:
        conn.execute("SET intervalstyle = iso_8601")
        conn.execute("SET timezone = 'UTC'")
        rows = conn.execute(f"SELECT {', '.join(select)} FROM {table} ORDER BY {order}").fetchall()
    return sorted((tuple(pg_canon(c, v) for c, v in zip(cols, r)) for r in rows), key=repr)


def iceberg_rows(mirror, ident, cols, snapshot_id=None, readers_=("duckdb", "pyiceberg")):
    """{reader: sorted canonical rows} of the Iceberg table (at a snapshot)."""
    from iceberg_readers import duckdb_rows
    out = {}
    if "duckdb" in readers_:
        out["duckdb"] = sorted(duckdb_rows(mirror.metadata(ident), cols, snapshot_id), key=repr)
    if "pyiceberg" in readers_:
        t = mirror.pyiceberg_table(ident)
        rows = t.scan(snapshot_id=snapshot_id).to_arrow().to_pylist()
        out["pyiceberg"] = sorted(readers.canon_rows(cols, rows), key=repr)
    if "java" in readers_:
        import java_reader
        rows = java_reader.read_rows(mirror.catalog, f"file://{mirror.wh}", ident, snapshot_id)
        out["java"] = sorted((tuple(java_fix(c, v) for c, v in zip(cols, r)) for r in rows),
                             key=repr)
    return out


def java_fix(col, v):
    """The Java reader's canonical values are typed by Iceberg alone: a jsonb
    column is a plain string there."""
    if v is None:
        return None
    if col.kind == "jsonb":
        return ("json", json.dumps(json.loads(v), sort_keys=True))
    if col.kind == "list":
        return [java_fix(col.elem, x) for x in v]
    return v


def snapshots(mirror, ident, t=None):
    """[(snapshot id, summary dict with its "operation")] of main's history, oldest first (in `t`, the table
    as loaded, when given: it may commit meanwhile)."""
    t = t or mirror.pyiceberg_table(ident)
    out = []
    sid = t.metadata.current_snapshot_id
    by_id = {s.snapshot_id: s for s in t.snapshots()}
    while sid is not None and sid in by_id:
        s = by_id[sid]
        out.append((sid, {**s.summary.additional_properties,
                          "operation": s.summary.operation.value}))
        sid = s.parent_snapshot_id
    return out[::-1]


def wait_until(pred, what, timeout=120):
    """Poll pred every 0.1 s for up to `timeout` seconds (times FLOE_TIMEOUT_SCALE)."""
    end = time.time() + timeout * SCALE
    while time.time() < end:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def committed_past(mirror, idents, lsn):
    """Whether every table's last snapshot records a frontier past `lsn` (an int)."""
    for ident in idents:
        snaps = snapshots(mirror, ident)
        if not snaps or (frontier_of(snaps[-1][1]) or 0) <= lsn:
            return False
    return True


def lsn_int(text):
    hi, lo = text.split("/")
    return int(hi, 16) << 32 | int(lo, 16)


def frontier_of(summary):
    f = json.loads(summary["floe.frontier"])
    return f[0] if f else None
