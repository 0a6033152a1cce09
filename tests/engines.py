"""What other engines do to floe's tables, with Iceberg's own Java API
(tests/java: floe.Engine; no Spark): compaction, snapshot expiry, rollback,
foreign appends (also to branches), merge-on-read and copy-on-write deletes,
manifest and position delete rewrites, orphan file removal, properties.

Every function takes the table as java_reader does (db, warehouse, table,
catalog="floe", props=None: db is the SQLite catalog file or a REST catalog
URI, props extra catalog properties such as io-impl / s3.endpoint), commits
one Iceberg operation and returns the JSON object floe.Engine printed.  A
commit that lost against another writer (Iceberg's validation failed, or the
catalog's compare-and-swap was lost every retry: exit status 3) raises
Conflict; the table is then unchanged and the call may be retried.  Any
other failure raises EngineError (an AssertionError, so a test fails).

By default the calls share one JVM per Python process (`Engine serve`, one
JVM start instead of one per call; each call still opens the catalog and
loads the table afresh).  FLOE_ENGINE_SERVER=0 runs one JVM per call.

hold(op, ...) starts an operation that plans and writes its files, then
waits before its commit until released: a test commits something else in
between (floe, or another engine operation) to race it deterministically.
"""
import atexit
import json
import os
import subprocess
import tempfile
import threading

import java_reader

CONFLICT = 3


class EngineError(AssertionError):
    def __init__(self, op, status, stderr):
        super().__init__(f"floe.Engine {op} failed (exit {status}): {stderr.strip()[-4000:]}")
        self.op, self.status, self.stderr = op, status, stderr


class Conflict(Exception):
    """Another writer's commit made this operation's commit impossible."""

    def __init__(self, op, stderr):
        super().__init__(stderr.strip())
        self.op, self.stderr = op, stderr


def _use_server():
    return os.environ.get("FLOE_ENGINE_SERVER", "1") != "0"


def _java_cmd(main_class, *args):
    return ["java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", java_reader._classpath(),
            main_class, *args]


def _props_env(props):
    env = dict(os.environ)
    if props:
        env["FLOE_JAVA_CATALOG_PROPS"] = "\n".join(f"{k}={v}" for k, v in props.items())
    return env


# ---- the shared JVM ------------------------------------------------------------------------

class _Request:
    def __init__(self):
        self.held = threading.Event()
        self.done = threading.Event()
        self.reply = None


class Server:
    """One `floe.Engine serve` JVM running Engine and Reader command lines."""

    def __init__(self):
        self._log = tempfile.TemporaryFile(mode="w+")
        self._proc = subprocess.Popen(_java_cmd("floe.Engine", "serve"), stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._log, text=True,
                                      bufsize=1, encoding="utf-8")
        self._lock = threading.Lock()
        self._next = 0
        self._pending = {}
        self._dead = None
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        for line in self._proc.stdout:
            msg = json.loads(line)
            with self._lock:
                req = self._pending.get(msg["id"])
            if req is None:
                continue
            if msg.get("held"):
                req.held.set()
            else:
                req.reply = msg
                with self._lock:
                    self._pending.pop(msg["id"], None)
                req.done.set()
                req.held.set()
        self._log.seek(0)
        self._dead = f"the engine server ended (exit {self._proc.wait()}): {self._log.read()[-4000:]}"
        with self._lock:
            pending, self._pending = list(self._pending.values()), {}
        for req in pending:
            req.done.set()
            req.held.set()

    def alive(self):
        return self._dead is None and self._proc.poll() is None

    def submit(self, main, args, props=None, hold=False):
        """Send one command line; returns (id, request) to wait on."""
        req = _Request()
        with self._lock:
            if self._dead:
                raise RuntimeError(self._dead)
            self._next += 1
            rid = self._next
            self._pending[rid] = req
            self._proc.stdin.write(json.dumps({"id": rid, "main": main, "args": [str(a) for a in args],
                                               "props": props or {}, "hold": hold}) + "\n")
            self._proc.stdin.flush()
        return rid, req

    def wait(self, req, timeout=600):
        if not req.done.wait(timeout):
            raise TimeoutError("the engine server did not answer")
        if req.reply is None:
            raise RuntimeError(self._dead or "the engine server ended")
        r = req.reply
        return r["status"], r["stdout"], r["stderr"]

    def release(self, rid):
        with self._lock:
            self._proc.stdin.write(json.dumps({"release": rid}) + "\n")
            self._proc.stdin.flush()

    def run(self, main, args, props=None):
        """(status, stdout, stderr) of one command line (main: "engine" or "reader")."""
        return self.wait(self.submit(main, args, props)[1])

    def close(self):
        try:
            self._proc.stdin.close()
            self._proc.wait(timeout=30)
        except Exception:                       # noqa: BLE001 - best effort at exit
            self._proc.kill()


_server = None
_server_lock = threading.Lock()


def server():
    """The shared Server of this process (started on first use), or None with FLOE_ENGINE_SERVER=0."""
    global _server
    if not _use_server():
        return None
    with _server_lock:
        if _server is None or not _server.alive():
            _server = Server()
            atexit.register(_server.close)
        return _server


# ---- running operations ------------------------------------------------------------------

def _argv(op, db, warehouse, table, extra, catalog):
    return [op, str(db), warehouse, catalog, table, *map(str, extra)]


def _result(op, status, stdout, stderr):
    if status == CONFLICT:
        raise Conflict(op, stderr)
    if status != 0:
        raise EngineError(op, status, stderr)
    lines = [json.loads(x) for x in stdout.splitlines() if x.strip()]
    return lines


def run_all(op, db, warehouse, table, *extra, catalog="floe", props=None):
    """Run one Engine command; every JSON line it printed."""
    argv = _argv(op, db, warehouse, table, extra, catalog)
    srv = server()
    if srv is not None:
        return _result(op, *srv.run("engine", argv, props))
    p = subprocess.run(_java_cmd("floe.Engine", *argv), capture_output=True, text=True, timeout=600,
                       env=_props_env(props))
    return _result(op, p.returncode, p.stdout, p.stderr)


def run(op, db, warehouse, table, *extra, catalog="floe", props=None):
    """Run one Engine command; its JSON line as a dict."""
    return run_all(op, db, warehouse, table, *extra, catalog=catalog, props=props)[-1]


def _opt(name, value):
    return [] if value is None else [name, value]


def compact(db, warehouse, table, files=None, target_size=None, order=None, catalog="floe", props=None):
    return run("compact", db, warehouse, table, *_opt("--files", files),
               *_opt("--target-size", target_size), *_opt("--order", order), catalog=catalog, props=props)


def expire(db, warehouse, table, retain_last=None, older_than_ms=None, catalog="floe", props=None):
    return run("expire", db, warehouse, table, *_opt("--retain-last", retain_last),
               *_opt("--older-than-ms", older_than_ms), catalog=catalog, props=props)


def rollback(db, warehouse, table, snapshot_id, catalog="floe", props=None):
    return run("rollback", db, warehouse, table, snapshot_id, catalog=catalog, props=props)


def rollback_to_frontier(db, warehouse, table, frontier, catalog="floe", props=None):
    """frontier: the floe.frontier text (e.g. "[11]") or a list ([11])."""
    if not isinstance(frontier, str):
        frontier = json.dumps(frontier, separators=(",", ":"))
    return run("rollback-to-frontier", db, warehouse, table, frontier, catalog=catalog, props=props)


def set_current(db, warehouse, table, snapshot_id, catalog="floe", props=None):
    return run("set-current", db, warehouse, table, snapshot_id, catalog=catalog, props=props)


def _rows_file(rows):
    """A path to NDJSON rows: `rows` itself when it is a path, else a temporary file."""
    if isinstance(rows, (str, os.PathLike)):
        return str(rows), None
    f = tempfile.NamedTemporaryFile("w", suffix=".ndjson", delete=False, encoding="utf-8")
    with f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return f.name, f.name


def append(db, warehouse, table, rows, branch=None, catalog="floe", props=None):
    """rows: an NDJSON file or a list of dicts keyed by column name (floe's JSON encodings)."""
    path, tmp = _rows_file(rows)
    try:
        return run("append", db, warehouse, table, path, *_opt("--branch", branch), catalog=catalog,
                   props=props)
    finally:
        if tmp:
            os.unlink(tmp)


def delete_mor(db, warehouse, table, column, values, equality=False, in_partition_of=None,
               catalog="floe", props=None):
    """in_partition_of (equality only): values of the same column whose rows'
    partitions the delete files go to, instead of the deleted rows' own."""
    scope = [] if in_partition_of is None else ["--in-partition-of", json.dumps(in_partition_of)]
    return run("delete-mor", db, warehouse, table, column, json.dumps(values),
               *(["--equality"] if equality else []), *scope, catalog=catalog, props=props)


def delete_cow(db, warehouse, table, column, values, catalog="floe", props=None):
    return run("delete-cow", db, warehouse, table, column, json.dumps(values), catalog=catalog, props=props)


def rewrite_manifests(db, warehouse, table, catalog="floe", props=None):
    return run("rewrite-manifests", db, warehouse, table, catalog=catalog, props=props)


def rewrite_position_deletes(db, warehouse, table, catalog="floe", props=None):
    return run("rewrite-position-deletes", db, warehouse, table, catalog=catalog, props=props)


def remove_orphans(db, warehouse, table, older_than_ms=None, dry_run=False, catalog="floe", props=None):
    return run("remove-orphans", db, warehouse, table, *_opt("--older-than-ms", older_than_ms),
               *(["--dry-run"] if dry_run else []), catalog=catalog, props=props)


def set_property(db, warehouse, table, key, value, catalog="floe", props=None):
    return run("set-property", db, warehouse, table, key, value, catalog=catalog, props=props)


def remove_property(db, warehouse, table, key, catalog="floe", props=None):
    return run("remove-property", db, warehouse, table, key, catalog=catalog, props=props)


def create_branch(db, warehouse, table, name, snapshot_id=None, catalog="floe", props=None):
    extra = [] if snapshot_id is None else [snapshot_id]
    return run("create-branch", db, warehouse, table, name, *extra, catalog=catalog, props=props)


def create_tag(db, warehouse, table, name, snapshot_id, catalog="floe", props=None):
    return run("create-tag", db, warehouse, table, name, snapshot_id, catalog=catalog, props=props)


def snapshots_json(db, warehouse, table, catalog="floe", props=None):
    return run("snapshots-json", db, warehouse, table, catalog=catalog, props=props)


def files_json(db, warehouse, table, snapshot_id=None, branch=None, catalog="floe", props=None):
    return run("files-json", db, warehouse, table, *_opt("--snapshot", snapshot_id),
               *_opt("--branch", branch), catalog=catalog, props=props)


def batch(ops, props=None):
    """Run several Engine command lines in order in one JVM (`Engine batch`): `ops` are
    argument lists [OP, DB, WAREHOUSE, CATALOG, NS.TABLE, ...]; returns one dict per op.
    Stops at the first failure (Conflict / EngineError)."""
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8")
    with f:
        json.dump([[str(a) for a in op] for op in ops], f)
    try:
        srv = server()
        if srv is not None:
            return _result("batch", *srv.run("engine", ["batch", f.name], props))
        p = subprocess.run(_java_cmd("floe.Engine", "batch", f.name), capture_output=True, text=True,
                           timeout=600, env=_props_env(props))
        return _result("batch", p.returncode, p.stdout, p.stderr)
    finally:
        os.unlink(f.name)


# ---- held operations ------------------------------------------------------------------------

class Held:
    """An operation stopped just before its commit (see hold())."""

    def __init__(self, op, argv, props, timeout):
        self.op = op
        self._srv = server()
        self._timeout = timeout
        if self._srv is not None:
            self._rid, self._req = self._srv.submit("engine", argv, props, hold=True)
        else:
            self._dir = tempfile.mkdtemp(prefix="engine-hold-")
            self._go = os.path.join(self._dir, "go")
            self._proc = subprocess.Popen(_java_cmd("floe.Engine", *argv, "--hold", self._go),
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          env=_props_env(props))
        self._wait_held()

    def _wait_held(self):
        if self._srv is not None:
            if not self._req.held.wait(self._timeout):
                raise TimeoutError(f"{self.op} never reached its commit")
            if self._req.done.is_set():          # it ended before its commit (nothing to do, or failed)
                self.result = self.release()
            return
        import time
        deadline = time.monotonic() + self._timeout
        while not os.path.exists(self._go + ".ready"):
            if self._proc.poll() is not None:
                self.result = self.release()
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.op} never reached its commit")
            time.sleep(0.01)

    def release(self):
        """Let it commit; its JSON result, or Conflict."""
        if self._srv is not None:
            if not self._req.done.is_set():
                self._srv.release(self._rid)
            return _result(self.op, *self._srv.wait(self._req, self._timeout))[-1]
        if self._proc.poll() is None:
            open(self._go, "w").close()
        out, err = self._proc.communicate(timeout=self._timeout)
        return _result(self.op, self._proc.returncode, out, err)[-1]


def hold(op, db, warehouse, table, *extra, catalog="floe", props=None, timeout=300):
    """Start `op` and return once it has planned and written its files and waits to
    commit; .release() lets it commit and returns its result (or raises Conflict)."""
    return Held(op, _argv(op, db, warehouse, table, extra, catalog), props, timeout)
