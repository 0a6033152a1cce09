"""`floe sink` as its operator meets it: the status line (on a terminal and
off one), --quiet, live figures while the input is idle, the metrics
endpoint (/metrics, /health) under awkward clients, and --metrics-addr
checked before anything is created.

The helpers here are shared by the other test_cli_*.py files."""
import json
import os
import pty
import select
import socket
import struct
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import floe_bin, run_floe, free_port
from iceberg_readers import duckdb_rows
from sinkmodel import (APPEND_EXTRA, COLS, INF, SCHEMA, Stream, committed_frontier,
                       frontier_value, metadata_location, table_snapshots)
from test_sink_model import TABLE, sink_args

ESC = "\x1b"


def db_of(tmp_path):
    return f"{tmp_path}/catalog.db"


def loud(args):
    """sink_args without --quiet."""
    return [a for a in args if a != "--quiet"]


def upd(t, d, row):
    return json.dumps({"time": t, "diff": d, "row": row})




def get(port, path, timeout=10, host="127.0.0.1"):
    """(status, body, seconds) of GET path."""
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=timeout) as r:
            return r.status, r.read().decode(), time.monotonic() - t0
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), time.monotonic() - t0
    except urllib.error.URLError as e:          # not listening (yet, or any more)
        return 0, str(e), time.monotonic() - t0


def metric(body, name):
    for line in body.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


def sanitizer_clean(err):
    assert "AddressSanitizer" not in err and "runtime error" not in err, err
    assert "LeakSanitizer" not in err, err


class Live:
    """A sink reading stdin, its stderr collected line by line as it comes
    (with the time each line arrived), so a test can watch it while it runs."""

    def __init__(self, args, stderr_fd=None):
        self.proc = subprocess.Popen([floe_bin(), *map(str, args), "--input", "-"],
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=stderr_fd if stderr_fd is not None else subprocess.PIPE,
                                     text=True)
        self.lines = []              # (monotonic time, line)
        self.reader = None
        if stderr_fd is None:
            self.reader = threading.Thread(target=self._read, daemon=True)
            self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append((time.monotonic(), line))

    def feed(self, lines):
        try:
            self.proc.stdin.write("".join(line + "\n" for line in lines))
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass

    def text(self):
        return "".join(line for _, line in self.lines)

    def wait_for(self, what, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if what():
                return
            assert self.proc.poll() is None, f"the sink exited: {self.text()}"
            time.sleep(0.05)
        raise AssertionError(f"timed out; stderr so far: {self.text()}")

    def wait_frontier(self, tmp_path, at_least, timeout=30):
        def reached():
            f = committed_frontier(db_of(tmp_path), TABLE)
            return f is not None and f >= at_least
        self.wait_for(reached, timeout)
        return committed_frontier(db_of(tmp_path), TABLE)

    def close(self, timeout=60):
        """End the input and wait: (exit status, stderr)."""
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        return self.wait(timeout)

    def wait(self, timeout=60):
        self.proc.wait(timeout=timeout)
        if self.reader:
            self.reader.join(timeout=10)
        err = self.text()
        sanitizer_clean(err)
        return self.proc.returncode, err


def lines_until(stream, progress):
    out = []
    for line in stream.lines:
        out.append(line)
        if json.loads(line).get("progress") == progress:
            return out
    raise AssertionError(f"no progress {progress}")


def progress_values(stream):
    return [json.loads(line)["progress"] for line in stream.lines if "progress" in line]


def check_table(tmp_path, stream, mode):
    """Frontiers strictly increasing, ending at [], and the table equals the
    model (DuckDB): nothing lost, nothing doubled."""
    db = db_of(tmp_path)
    fronts = [frontier_value(s["summary"]["floe.frontier"]) for s in table_snapshots(db, TABLE)]
    assert fronts == sorted(set(fronts)), f"frontiers not strictly increasing: {fronts}"
    assert fronts[-1] == INF
    cols = COLS + (APPEND_EXTRA if mode == "append" else [])
    got = duckdb_rows(metadata_location(db, TABLE), cols)
    assert sorted(got, key=repr) == stream.expected(INF, mode)


# ---- the status line --------------------------------------------------------------------

def test_off_a_terminal_plain_lines_and_the_summary_on_its_own_line(floe, tmp_path):
    stream = Stream(51, steps=40)
    res = floe(*loud(sink_args(tmp_path, "upsert", stream, 20)), input=stream.text())
    assert "\r" not in res.stderr and ESC not in res.stderr, repr(res.stderr)
    lines = res.stderr.splitlines()
    assert len(lines) == 1, "a short run off a terminal prints only the summary"
    n = sum(1 for line in stream.lines if '"time"' in line)
    snaps = len(table_snapshots(db_of(tmp_path), TABLE))
    assert lines[0].startswith("floe: done in "), lines
    assert f"{n} updates read" in lines[0] and f"{snaps} snapshots committed" in lines[0]
    assert f"{TABLE} at frontier [] (input closed)" in lines[0]


def test_quiet_prints_nothing_on_success(floe, tmp_path):
    stream = Stream(52, steps=30)
    res = floe(*sink_args(tmp_path, "upsert", stream, 20), input=stream.text())
    assert res.stderr == ""
    assert committed_frontier(db_of(tmp_path), TABLE) == INF


def test_quiet_still_shows_warnings_and_errors(floe, tmp_path):
    base = sink_args(tmp_path, "upsert", Stream(0, steps=0), 20)
    res = floe(*base, input=upd(3, 1, {"id": 7}) + "\n" + upd(3, 1, {"id": 7}) + "\n")
    assert "warning" in res.stderr and "primary key violation" in res.stderr
    res = floe(*base, "--new-sink", "--sink-id", "other", input='{"time": 1}\n', check=False)
    assert res.returncode == 1 and "<stdin>:1:" in res.stderr


def test_idle_input_the_figures_move_on_a_clock(tmp_path):
    """Off a terminal with --progress-interval 200ms the line comes on the
    clock even while stdin is idle; /metrics counts each update as it
    arrives, before any commit."""
    port = free_port()
    stream = Stream(53, steps=0)
    run = Live([*loud(sink_args(tmp_path, "upsert", stream, 1000)), "--progress-interval",
                "200ms", "--metrics-addr", f"127.0.0.1:{port}"])
    run.wait_for(lambda: get(port, "/health")[0] == 200)
    for i in range(1, 4):
        run.feed([upd(i, 1, {"id": i, "name": f"n{i}"})])
        run.wait_for(lambda: metric(get(port, "/metrics")[1], "floe_messages_staged_total") == i)
        run.wait_for(lambda: any(f" {i} updates (" in line for _, line in run.lines))
    assert metric(get(port, "/metrics")[1], "floe_snapshots_committed_total") == 0
    # nothing comes in now: the line keeps coming, freshness keeps growing
    seen = len(run.lines)
    time.sleep(1.2)
    idle = [line for _, line in run.lines[seen:]]
    assert len(idle) >= 3, idle
    fresh = [float(line.rsplit("freshness ", 1)[1].rstrip("s\n")) for line in idle]
    assert fresh == sorted(fresh) and fresh[-1] > fresh[0], idle
    assert all("committed none" in line and " 3 updates (" in line for line in idle), idle
    assert metric(get(port, "/metrics")[1], "floe_freshness_seconds") >= fresh[-1] - 0.05
    code, err = run.close()
    assert code == 0, err
    assert "\r" not in err and ESC not in err
    assert err.splitlines()[-1].startswith("floe: done in "), err


def test_on_a_terminal_one_live_line_redrawn_and_the_summary_apart(tmp_path):
    master, slave = pty.openpty()
    stream = Stream(54, steps=0)
    run = Live(loud(sink_args(tmp_path, "upsert", stream, 1000)), stderr_fd=slave)
    os.close(slave)
    out = bytearray()

    def drain(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            r, _, _ = select.select([master], [], [], 0.05)
            if r:
                try:
                    out.extend(os.read(master, 65536))
                except OSError:
                    return

    run.feed([upd(1, 1, {"id": 1, "name": "a"}), upd(2, 1, {"id": 2, "name": "b"})])
    drain(2.6)                       # idle: the line is redrawn on the clock
    run.proc.stdin.close()
    run.proc.wait(timeout=60)
    drain(0.3)
    os.close(master)
    text = out.decode()
    sanitizer_clean(text)
    assert run.proc.returncode == 0, text
    draws = text.split("\r\x1b[K")
    live = [d for d in draws if d.startswith("floe: ") and "updates (" in d]
    assert len(live) >= 2, repr(text)
    assert all("\n" not in d for d in live), "the live line never ends a line"
    assert live[0] != live[-1], "the line moves while the input is idle"
    summary = draws[-1]
    assert summary.startswith("floe: done in ") and summary.endswith("\r\n"), repr(text)
    assert "2 updates read" in summary


# ---- the metrics endpoint --------------------------------------------------------------------

def test_silent_and_vanishing_clients_delay_no_scrape(tmp_path):
    port = free_port()
    stream = Stream(55, steps=40)
    run = Live([*sink_args(tmp_path, "upsert", stream, 20), "--metrics-addr",
                f"127.0.0.1:{port}"])
    pv = progress_values(stream)
    run.feed(lines_until(stream, pv[3]))
    run.wait_frontier(tmp_path, pv[3] - 20)
    for _ in range(20):                                   # connect, close at once
        socket.create_connection(("127.0.0.1", port)).close()
    for _ in range(10):                                   # ask, then hang up with a reset
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    silent = socket.create_connection(("127.0.0.1", port))   # says nothing, stays
    half = socket.create_connection(("127.0.0.1", port))
    half.sendall(b"GET /metr")                               # half a request, stays
    try:
        for _ in range(3):
            status, body, secs = get(port, "/metrics", timeout=5)
            assert status == 200 and secs < 1.0, (status, secs)
            assert "floe_snapshots_committed_total" in body
            status, body, secs = get(port, "/health", timeout=5)
            assert (status, body) == (200, "ok\n") and secs < 1.0
    finally:
        silent.close()
        half.close()
    assert run.proc.poll() is None, "a client that hung up killed the sink"
    run.feed(stream.lines[len(lines_until(stream, pv[3])):])
    code, err = run.close()
    assert code == 0, err
    check_table(tmp_path, stream, "upsert")


def test_health_is_503_with_the_reason_after_a_halt(tmp_path):
    """--metrics-linger keeps the endpoint up after the run, so the halted
    state can be seen (and scraped) before the process exits."""
    port = free_port()
    stream = Stream(56, steps=0)
    run = Live([*sink_args(tmp_path, "upsert", stream, 10), "--metrics-addr",
                f"127.0.0.1:{port}", "--metrics-linger", "20s"])
    run.wait_for(lambda: get(port, "/health")[0] == 200)
    assert get(port, "/health")[1] == "ok\n"
    run.feed([upd(1, 1, {"id": 1}), '{"progress": 15}'])
    run.wait_frontier(tmp_path, 15)
    assert get(port, "/health")[:2] == (200, "ok\n")
    run.feed([upd(20, 1, {"id": 2, "nope": 1})])
    run.wait_for(lambda: get(port, "/health")[0] == 503)
    status, body, _ = get(port, "/health")
    assert body.startswith("halted: <stdin>:3: ") and "nope" in body, body
    status, body, _ = get(port, "/metrics")
    assert status == 200 and metric(body, "floe_committed_frontier") == 15
    assert run.proc.poll() is None, "lingering"
    run.proc.send_signal(15)                      # a signal ends the linger at once
    code, err = run.wait(timeout=10)
    assert code == 1, err
    assert "fix the input and run again: the table stays at its last committed frontier [15]" \
        in err


def test_health_is_200_finished_while_lingering_after_success(tmp_path):
    port = free_port()
    stream = Stream(57, steps=10)
    run = Live([*sink_args(tmp_path, "upsert", stream, 10), "--metrics-addr",
                f"127.0.0.1:{port}", "--metrics-linger", "3s"])
    run.feed(stream.lines)
    run.proc.stdin.close()
    run.wait_for(lambda: committed_frontier(db_of(tmp_path), TABLE) == INF)
    # "ok" until the program has seen floe_sink_finish return, just after the commit
    run.wait_for(lambda: get(port, "/health")[:2] != (200, "ok\n"), timeout=3)
    assert get(port, "/health")[:2] == (200, "finished\n")
    code, err = run.wait(timeout=30)
    assert code == 0 and err == "", err


def test_other_paths_and_methods(tmp_path):
    port = free_port()
    run = Live([*sink_args(tmp_path, "upsert", Stream(0, steps=0), 10), "--metrics-addr",
                f"127.0.0.1:{port}"])
    run.wait_for(lambda: get(port, "/health")[0] == 200)
    assert get(port, "/nope")[0] == 404
    assert get(port, "/metrics?name=x")[0] == 200
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
    assert s.recv(100).startswith(b"HTTP/1.1 405")
    s.close()
    run.feed(['{"progress": 5}'])
    code, err = run.close()
    assert code == 0, err


# ---- --metrics-addr is checked before anything is made ----------------------------------------

@pytest.mark.parametrize("addr,code,words", [
    (":99999", 2, "port must be a number from 1 to 65535"),
    ("127.0.0.1:0", 2, "port must be a number from 1 to 65535"),
    ("127.0.0.1:", 2, "port must be a number from 1 to 65535"),
    ("127.0.0.1:80x", 2, "port must be a number from 1 to 65535"),
    ("9091", 2, "expected HOST:PORT, [IPv6]:PORT or :PORT"),
    ("::1:9091", 2, "IPv6 address goes in brackets"),
    ("[::1]9091", 2, "expected HOST:PORT"),
    ("[]:9091", 2, "no IPv6 address"),
    ("192.0.2.1:9091", 1, "cannot listen there"),
    ("in-use", 1, "cannot listen there: Address already in use"),
])
def test_a_bad_metrics_addr_fails_with_nothing_created(floe, tmp_path, addr, code, words):
    holder = None
    if addr == "in-use":
        holder = socket.socket()
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        addr = f"127.0.0.1:{holder.getsockname()[1]}"
    try:
        res = floe(*sink_args(tmp_path, "upsert", Stream(0, steps=0), 10), "--metrics-addr",
                   addr, input='{"progress": 5}\n', check=False)
    finally:
        if holder:
            holder.close()
    assert res.returncode == code, res
    assert f"--metrics-addr '{addr}': " in res.stderr and words in res.stderr, res.stderr
    assert len(res.stderr.splitlines()) == 1, res.stderr
    assert not os.path.exists(db_of(tmp_path)), "no catalog may be created"
    assert not os.path.exists(f"{tmp_path}/wh"), "no warehouse may be created"


def ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.parametrize("form", ["host", "any", "ipv6"])
def test_the_address_forms(tmp_path, form):
    if form == "ipv6" and not ipv6_loopback():
        pytest.skip("no IPv6 loopback here")
    port = free_port()
    addr = {"host": f"localhost:{port}", "any": f":{port}", "ipv6": f"[::1]:{port}"}[form]
    host = "[::1]" if form == "ipv6" else "127.0.0.1"
    run = Live([*sink_args(tmp_path, "upsert", Stream(0, steps=0), 10), "--metrics-addr", addr])
    run.wait_for(lambda: get(port, "/health", host=host)[0] == 200)
    assert "floe_input_frontier" in get(port, "/metrics", host=host)[1]
    run.feed(['{"progress": 5}'])
    code, err = run.close()
    assert code == 0, err
