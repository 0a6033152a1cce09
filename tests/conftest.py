"""Shared fixtures for floe's Python test suite.

The suite drives the real `floe` program (and small C tools under
build*/tests/) and checks what they write with real readers: pyarrow,
DuckDB, polars, pyiceberg, Java Iceberg.  FLOE_BUILD selects the build
directory ("build" = release, "build-asan" = ASan+UBSan); sanitizer reports
make the program exit non-zero, which the helpers below turn into failures.
"""
import atexit
import os
import shutil
import socket
import subprocess
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, os.environ.get("FLOE_BUILD", "build"))

# Position mode keeps each sink's key index in a state directory: one per
# test process, not the user's.
STATE_DIR = tempfile.mkdtemp(prefix="floe-state-")
os.environ["FLOE_STATE_DIR"] = STATE_DIR
atexit.register(shutil.rmtree, STATE_DIR, True)

# `floe sink` maintains its table while it runs (--maintain auto, the
# default).  Tests about other things count snapshots, commits and files
# exactly, so they run with it off; the tests that exercise it (the model
# and restart tests, test_maintain.py, test_sink_maintain.py) turn it on
# with --maintain auto (maintain_auto()), which wins over this.
os.environ["FLOE_MAINTAIN"] = "off"
# Timeouts in the tests are multiplied by it (a slow or busy machine).
SCALE = float(os.environ.get("FLOE_TIMEOUT_SCALE", "1"))


def stop_process(proc, timeout):
    """Ask a server process to end (SIGTERM); kill it if it has not within
    `timeout` seconds (scaled)."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout * SCALE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def free_port():
    """A loopback TCP port nothing listens on now (for a server a test starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def maintain_auto(expire=True):
    """`floe sink` options that turn maintenance on and make it due within a
    short test: manifests merged early, orphans looked for every second
    (only files older than a minute are removed: in-flight batch files are
    younger) and, with `expire`, snapshots expired once a second old (beyond
    the newest two).  No final pass at exit (--maintain-final 0: up to 10 s
    per run otherwise); the tests of that pass give --maintain-final after
    these (the last one given wins)."""
    args = ["--maintain", "auto", "--property", "commit.manifest.min-count-to-merge=3",
            "--orphan-interval", "1s", "--orphan-age", "60s", "--maintain-final", "0"]
    if expire:
        args += ["--property", "history.expire.max-snapshot-age-ms=1000",
                 "--property", "history.expire.min-snapshots-to-keep=2"]
    return args


def floe_bin():
    return os.path.join(BUILD, "floe")


def tool_bin(name):
    return os.path.join(BUILD, "tests", name)


class Result:
    def __init__(self, proc):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    def __repr__(self):
        return f"<exit {self.returncode}\nstdout: {self.stdout[-2000:]}\nstderr: {self.stderr[-4000:]}>"


def run_floe(*args, input=None, check=True, timeout=600, cwd=None, env=None):
    """Run the floe program; with check=True a non-zero exit fails the test."""
    proc = subprocess.run([floe_bin(), *map(str, args)], input=input, capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, env=env)
    res = Result(proc)
    assert "runtime error" not in res.stderr, res          # UBSan
    assert "AddressSanitizer" not in res.stderr, res
    assert "LeakSanitizer" not in res.stderr, res
    if check:
        assert res.returncode == 0, res
    return res


@pytest.fixture
def floe():
    return run_floe


@pytest.fixture(scope="session", autouse=True)
def built():
    if not os.path.exists(floe_bin()):
        pytest.exit(f"{floe_bin()} is missing: run make (and make MODE=asan) first", 2)
