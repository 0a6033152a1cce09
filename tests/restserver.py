"""Apache Iceberg's REST catalog server for floe's tests, on loopback.

The server is the reference implementation from the iceberg-open-api test
fixtures (RESTCatalogServer's catalog adapter and servlet), started by
tests/rest (LoopbackRESTCatalogServer: the same pieces, bound to 127.0.0.1)
with a JdbcCatalog on a SQLite file and a warehouse of local files.  The
`rest_server` fixture starts one JVM per test session on a free port, waits
until /v1/config answers, and stops it at the end.  Tests isolate
themselves by namespace (`rest_server.namespace()` gives a fresh one).

Build the classpath once with `cd tests/rest && mvn -q -B package`
(scripts/install-deps.sh does it).
"""
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
import uuid

import pytest
from conftest import free_port, stop_process

HERE = os.path.dirname(os.path.abspath(__file__))
REST_DIR = os.path.join(HERE, "rest")
MAIN = "org.apache.iceberg.rest.LoopbackRESTCatalogServer"




class RestServer:
    """One REST catalog server process: .uri, .warehouse (its local root)."""

    def __init__(self, root, extra_env=None, client_props=None, duck_setup=()):
        self.root = root
        # what readers need beyond the URI: Java catalog properties (dict) and
        # DuckDB statements run before ATTACH (e.g. S3 settings)
        self.client_props = client_props or {}
        self.duck_setup = list(duck_setup)
        self.duck_attach = ""
        self.floe_env = None          # the environment floe runs in (None: the test's)
        self.warehouse = os.path.join(root, "wh")
        self.port = free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        os.makedirs(self.warehouse, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CATALOG_")}
        env.update({
            "CATALOG_REST_PORT": str(self.port),
            "CATALOG_URI": f"jdbc:sqlite:{root}/catalog.db",
            "CATALOG_JDBC_SCHEMA__VERSION": "V1",
            "CATALOG_WAREHOUSE": f"file://{self.warehouse}",
        })
        env.update(extra_env or {})
        cp = os.path.join(REST_DIR, "target", "classes") + ":" + \
            os.path.join(REST_DIR, "target", "lib", "*")
        if not os.path.isdir(os.path.join(REST_DIR, "target", "lib")):
            raise RuntimeError("tests/rest is not built: cd tests/rest && mvn -q -B package")
        self.log_path = os.path.join(root, "server.log")
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(["java", "-Xmx512m", "-cp", cp, MAIN], env=env,
                                     stdout=self._log, stderr=subprocess.STDOUT)
        self._wait()

    def _wait(self, timeout=90):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the REST server exited: {self.log()[-3000:]}")
            try:
                with urllib.request.urlopen(self.uri + "/v1/config", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"the REST server did not answer in {timeout}s: {self.log()[-3000:]}")

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def namespace(self, stem="t"):
        """A namespace name no other test uses."""
        return f"{stem}_{uuid.uuid4().hex[:10]}"

    def request(self, method, path, body=None):
        """A raw request to the server (path under /v1/), returning (status,
        parsed JSON or None)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{self.uri}/v1/{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                text = r.read()
                return r.status, json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            text = e.read()
            return e.code, json.loads(text) if text else None

    def load(self, table):
        ns, name = table.rsplit(".", 1)
        status, doc = self.request("GET", f"namespaces/{ns}/tables/{name}")
        assert status == 200, (status, doc)
        return doc

    def stop(self):
        stop_process(self.proc, 20)
        self._log.close()


@pytest.fixture(scope="session")
def rest_server():
    root = tempfile.mkdtemp(prefix="floe-rest-")
    server = RestServer(root)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def s3_rest_server(s3, root):
    """A REST catalog server whose warehouse is a bucket on the S3 server
    `s3` (s3server.S3Server), vending that server's credentials with every
    table (include-credentials).  Its `floe_env` gives floe the endpoint and
    region only, with keys that S3 refuses: floe must use the vended ones."""
    from s3server import REGION
    bucket = s3.new_bucket()
    server = RestServer(root, extra_env={
        "CATALOG_WAREHOUSE": f"s3://{bucket}/wh",
        "CATALOG_IO__IMPL": "org.apache.iceberg.aws.s3.S3FileIO",
        "CATALOG_S3_ENDPOINT": s3.endpoint,
        "CATALOG_S3_PATH__STYLE__ACCESS": "true",
        "CATALOG_CLIENT_REGION": REGION,
        "CATALOG_S3_ACCESS__KEY__ID": s3.access_key,
        "CATALOG_S3_SECRET__ACCESS__KEY": s3.secret_key,
        "CATALOG_INCLUDE__CREDENTIALS": "true",
        "AWS_ACCESS_KEY_ID": s3.access_key,
        "AWS_SECRET_ACCESS_KEY": s3.secret_key,
        "AWS_REGION": REGION,
    }, client_props={
        "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        "s3.endpoint": s3.endpoint,
        "s3.path-style-access": "true",
        "client.region": REGION,
    })
    host = s3.endpoint.split("://", 1)[1]
    server.duck_setup = [
        "LOAD httpfs",
        f"CREATE SECRET s3 (TYPE s3, KEY_ID '{s3.access_key}', SECRET '{s3.secret_key}', "
        f"ENDPOINT '{host}', URL_STYLE 'path', USE_SSL false, REGION '{REGION}')"]
    server.duck_attach = ", ACCESS_DELEGATION_MODE 'none'"   # its own S3 secret
    server.bucket = bucket
    server.floe_env = s3.env(AWS_ACCESS_KEY_ID="AKWRONGWRONGWRONG",
                             AWS_SECRET_ACCESS_KEY="not-the-secret")
    return server


@pytest.fixture(scope="session")
def rest_s3_server(s3):
    root = tempfile.mkdtemp(prefix="floe-rest-s3-")
    server = s3_rest_server(s3, root)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


# ---- reading tables back over REST --------------------------------------------------------

def duckdb_rest_rows(uri, table, cols, snapshot_ids, setup=(), attach=""):
    """[rows at each snapshot id] (None: the current one) of `table`, read by
    DuckDB's iceberg extension attached to the REST catalog at `uri` (with
    the ATTACH options `attach`, e.g. ", DEFAULT_REGION 'x'"), after the
    `setup` statements."""
    from iceberg_readers import duck
    from readers import canon_rows
    con = duck()
    out = []
    try:
        for stmt in setup:
            con.execute(stmt)
        con.execute(f"ATTACH 'floe' AS rc (TYPE iceberg, ENDPOINT '{uri}', "
                    f"AUTHORIZATION_TYPE 'none'{attach})")
        ns, name = table.rsplit(".", 1)
        for sid in snapshot_ids:
            at = f" AT (VERSION => {int(sid)})" if sid is not None else ""
            rows = con.execute(f'SELECT * FROM rc."{ns}"."{name}"{at}').fetchall()
            out.append(canon_rows(cols, rows))
    finally:
        con.close()
    return out


def snapshots(server, table):
    """The table's snapshots as the server reports them, by sequence number."""
    md = server.load(table)["metadata"]
    return sorted(md.get("snapshots", []), key=lambda s: s["sequence-number"])


def check_rest_snapshots(server, table, stream, mode, final_only=False):
    """Every snapshot carrying a frontier, and every maintenance snapshot
    (the rows of the sink snapshot before it), or only the last, equals the
    model at its frontier, read by Java (RESTCatalog) and DuckDB (ATTACH ...
    TYPE iceberg); the sink's frontiers strictly increase and end at [].
    Returns the Java snapshots [(id, summary, rows)]."""
    import java_reader
    from sinkmodel import APPEND_EXTRA, COLS, INF, frontier_value, model_frontiers
    cols = COLS + (APPEND_EXTRA if mode == "append" else [])
    if final_only:              # summaries of all, rows of the current snapshot only
        snaps = [(s["snapshot-id"], s["summary"], None)
                 for s in java_reader.snapshots(server.uri, "", table, props=server.client_props)]
    else:
        snaps = java_reader.read_snapshots(server.uri, "", table, props=server.client_props)
    assert snaps, "no snapshot committed"
    frontiers = [frontier_value(s[1]["floe.frontier"]) for s in snaps if "floe.frontier" in s[1]]
    assert frontiers == sorted(set(frontiers)), f"frontiers not strictly increasing: {frontiers}"
    assert frontiers[-1] == INF, "the closed input must end at frontier []"
    check = [(s, f) for s, f in zip(snaps, model_frontiers([s[1] for s in snaps]))
             if f is not None]
    if final_only:
        (sid, summary, _), f = check[-1]
        assert sid == snaps[-1][0], "the current snapshot is the sink's or its maintenance's"
        check = [((sid, summary, java_reader.read_rows(server.uri, "", table,
                                                       props=server.client_props)), f)]
    duck = duckdb_rest_rows(server.uri, table, cols, [s[0] for s, _ in check], server.duck_setup,
                            server.duck_attach)
    for ((snap_id, summary, java_rows), f), duck_rows in zip(check, duck):
        want = stream.expected(f, mode)
        assert sorted(java_rows, key=repr) == want, f"Java, snapshot {snap_id} at {summary}"
        assert sorted(duck_rows, key=repr) == want, f"DuckDB, snapshot {snap_id} at {summary}"
    return snaps
