"""floe pg keeps running through lost connections: Postgres restarted
FLOE_PG_RESTARTS times (fast and immediate shutdowns) and the connection cut
FLOE_PG_CUTS times by a TCP proxy between floe and Postgres, while a writer
keeps changing two tables; floe never exits, and at the end every Iceberg
table equals its Postgres table.  While Postgres is down, /health answers
503 "reconnecting" and the status says so; a run that cannot reconnect
within --reconnect-timeout exits 75 (transient), and the same command
resumes once Postgres is back.
"""
import os
import random
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import psycopg

from conftest import SCALE
from pgserver import (Mirror, Proxy, Run, committed_past, iceberg_rows, pg_rows,  # noqa
                      pgdb, wait_until)
from rowgen import Col

RESTARTS = int(os.environ.get("FLOE_PG_RESTARTS", "20"))
CUTS = int(os.environ.get("FLOE_PG_CUTS", "20"))
COLS = [Col("id", "integer", True), Col("v", "integer")]
DDL = """
CREATE TABLE a (id int PRIMARY KEY, v int);
CREATE TABLE b (id int PRIMARY KEY, v int);
ALTER TABLE b REPLICA IDENTITY FULL;
INSERT INTO a SELECT g, g FROM generate_series(1, 100) g;
INSERT INTO b SELECT g, g FROM generate_series(1, 100) g;
"""


class Writer(threading.Thread):
    """Random transactions on a and b, straight to Postgres; a broken
    connection (a restart) is opened again.  Postgres is the truth."""

    def __init__(self, dsn):
        super().__init__(daemon=True)
        self.dsn, self.stop, self.r, self.done = dsn, threading.Event(), random.Random(7), 0

    def run(self):
        c = None
        while not self.stop.is_set():
            try:
                if c is None:
                    c = psycopg.connect(self.dsn, autocommit=True)
                with c.transaction():
                    for _ in range(self.r.randint(1, 5)):
                        t, k = self.r.choice("ab"), self.r.randrange(300)
                        op = self.r.random()
                        if op < 0.5:
                            c.execute(f"INSERT INTO {t} VALUES (%s, %s) ON CONFLICT (id) DO "
                                      f"UPDATE SET v = excluded.v", (k, self.r.randrange(10**6)))
                        elif op < 0.8:
                            c.execute(f"UPDATE {t} SET v = v + 1 WHERE id = %s", (k,))
                        else:
                            c.execute(f"DELETE FROM {t} WHERE id = %s", (k,))
                self.done += 1
            except psycopg.Error:
                if c is not None:
                    try:
                        c.close()
                    except psycopg.Error:
                        pass
                c = None
                self.stop.wait(0.2)
            self.stop.wait(0.005)
        if c is not None:
            c.close()


def finish(m, db, p, writer):
    """Stop the writer, wait for floe to commit past the last transaction,
    SIGINT it; every table equals Postgres."""
    writer.stop.set()
    writer.join()
    end = db.horizon()
    wait_until(lambda: committed_past(m, ["public.a", "public.b"], end),
               "every table committed past the writer's last transaction", timeout=300)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=300 * SCALE)
    assert p.returncode == 130, err
    for t in ("a", "b"):
        want = pg_rows(db, t, COLS)
        for reader, rows in iceberg_rows(m, f"public.{t}", COLS).items():
            assert rows == want, (t, reader)
    return err


def start(m):
    return m.popen("--commit-interval", "200ms", "--idle-commit-interval", "300ms",
                   "--reconnect-timeout", "0", stderr=subprocess.PIPE, text=True)


def test_postgres_restarted_again_and_again(pgdb, tmp_path):
    pgdb.sql(DDL)
    m = Mirror(pgdb, tmp_path, ["public.a", "public.b"], "--create-publication")
    m.catch_up()
    writer = Writer(pgdb.dsn)
    writer.start()
    p = start(m)
    r = random.Random(3)
    for i in range(RESTARTS):
        time.sleep(r.uniform(0.2, 1.0))
        pgdb.srv.restart("fast" if i % 2 else "immediate")
        assert p.poll() is None, p.communicate()[1]
    time.sleep(1)
    err = finish(m, pgdb, p, writer)
    assert writer.done > 100
    assert err.count("reconnected to Postgres") >= RESTARTS // 2, err


def test_connections_cut_again_and_again(pgdb, tmp_path):
    pgdb.sql(DDL)
    proxy = Proxy(pgdb.srv.port)
    proxy.start()
    try:
        m = Mirror(pgdb, tmp_path, ["public.a", "public.b"], "--create-publication")
        m.catch_up()
        m.source = proxy.url(pgdb)
        writer = Writer(pgdb.dsn)
        writer.start()
        p = start(m)
        r = random.Random(4)
        for _ in range(CUTS):
            time.sleep(r.uniform(0.3, 1.0))
            proxy.cut()
            assert p.poll() is None, p.communicate()[1]
        time.sleep(1)
        err = finish(m, pgdb, p, writer)
        assert err.count("reconnected to Postgres") >= CUTS // 2, err
        assert proxy.accepted > CUTS
    finally:
        proxy.close()


def health(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, OSError):             # not listening (yet, or any more)
        return 0, ""


def test_reconnecting_is_visible_and_a_give_up_exits_75(pgdb, tmp_path):
    pgdb.sql(DDL)
    m = Mirror(pgdb, tmp_path, ["public.a", "public.b"], "--create-publication")
    m.catch_up()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    p = m.popen("--commit-interval", "200ms", "--idle-commit-interval", "500ms",
                "--metrics-addr", f"127.0.0.1:{port}", "--reconnect-timeout", "0",
                stderr=subprocess.PIPE, text=True)
    wait_until(lambda: health(port)[0] == 200, "/health answering 200")
    srv = pgdb.srv
    srv.down()
    try:
        wait_until(lambda: health(port)[0] == 503 and "reconnecting" in health(port)[1],
                   "/health saying reconnecting")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
        assert "floe_pg_reconnecting" in text
    finally:
        srv.up()
    wait_until(lambda: health(port)[0] == 200, "/health answering 200 again")
    pgdb.sql("INSERT INTO a VALUES (1000, 1)")
    end = pgdb.horizon()
    wait_until(lambda: committed_past(m, ["public.a", "public.b"], end), "the insert committed")
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=300 * SCALE)
    assert p.returncode == 130 and "reconnected to Postgres" in err, err

    # a give-up: Postgres stays down past --reconnect-timeout
    p = m.popen("--metrics-addr", f"127.0.0.1:{port}", "--reconnect-timeout", "2s",
                stderr=subprocess.PIPE, text=True)
    wait_until(lambda: health(port)[0] == 200, "/health answering 200")
    srv.down()
    try:
        _, err = p.communicate(timeout=300 * SCALE)
    finally:
        srv.up()
    assert p.returncode == 75, err
    assert "gave up reconnecting after" in err and "run the same command again" in err, err
    # Postgres down from the start: floe waits for it the same way
    srv.down()
    try:
        r = m.run("--reconnect-timeout", "2s", check=False)
        assert r.returncode == 75 and "reconnecting in" in r.stderr, r
        assert "gave up reconnecting after" in r.stderr, r
        # ... and starts once it is up
        run = Run(m, "--commit-interval", "200ms", "--idle-commit-interval", "500ms")
        run.wait_for("reconnecting in")
    finally:
        srv.up()
    pgdb.sql("INSERT INTO a VALUES (1002, 2)")
    end = pgdb.horizon()
    wait_until(lambda: committed_past(m, ["public.a"], end), "the insert committed")
    assert run.stop() == 130, "".join(run.lines)
    pgdb.sql("INSERT INTO a VALUES (1001, 1)")
    m.catch_up()                                         # the advice works
    assert iceberg_rows(m, "public.a", COLS)["duckdb"] == pg_rows(pgdb, "a", COLS)
