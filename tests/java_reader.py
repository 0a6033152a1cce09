"""Run the Java reader (tests/java: Iceberg's JdbcCatalog and generic reader:
the scan planning, GenericDeleteFilter and file readers IcebergGenerics is
made of, with each delete file loaded once per scan) and turn its tagged JSON
values into rowgen's canonical form."""
import base64
import json
import os
import struct
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
JAVA_DIR = os.path.join(HERE, "java")


def _classpath():
    return os.path.join(JAVA_DIR, "target", "classes") + ":" + os.path.join(JAVA_DIR, "target", "lib", "*")


def java(mode, db, warehouse, table, *extra, catalog="floe", props=None, server=None):
    """Run one Reader mode; `props` are extra catalog properties (a dict),
    e.g. io-impl and s3.endpoint for a table on S3.  It runs in an already
    started JVM (`server`, else this process's shared engines.Server) instead
    of a new one: the same Reader code, the table loaded afresh; a JVM of its
    own only with FLOE_ENGINE_SERVER=0."""
    if server is None:                     # the shared JVM of this process, when there is one
        import engines
        server = engines.server()
    if server is not None:
        status, out, err = server.run("reader", [mode, str(db), warehouse, catalog, table,
                                                 *map(str, extra)], props)
        assert status == 0, err[-4000:]
        return [json.loads(line) for line in out.splitlines() if line.strip()]
    env = dict(os.environ)
    if props:
        env["FLOE_JAVA_CATALOG_PROPS"] = "\n".join(f"{k}={v}" for k, v in props.items())
    proc = subprocess.run(["java", "-cp", _classpath(), "floe.Reader", mode, str(db), warehouse,
                           catalog, table, *map(str, extra)], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def canon(v):
    """Tagged Java JSON -> rowgen canonical (records become tuples)."""
    if isinstance(v, list):
        return [canon(x) for x in v]
    if not isinstance(v, dict):
        return v
    (tag, x), = v.items()
    if tag == "rec":
        return tuple(canon(i) for i in x)
    if tag == "map":
        return [(canon(k), canon(val)) for k, val in x]
    if tag == "f32":
        return ("f32", struct.pack(">I", int(x, 16)))
    if tag == "f64":
        return ("f64", struct.pack(">Q", int(x, 16)))
    if tag == "dec":
        return ("dec", int(x))
    if tag.startswith("unknown:"):
        raise ValueError(f"the Java reader met a value it cannot tag: {v}")
    if tag == "bin":
        return base64.b64decode(x)
    if tag == "date":
        return ("date", x)
    if tag == "time":
        return ("time", x)
    if tag in ("ts", "tstz"):
        return ("ts", x)
    raise ValueError(f"unknown tag {tag}")


def read_rows(db, warehouse, table, snapshot_id=None, catalog="floe", props=None, server=None):
    extra = [snapshot_id] if snapshot_id is not None else []
    return [canon(r) for r in java("read", db, warehouse, table, *extra, catalog=catalog,
                                   props=props, server=server)]


def snapshots(db, warehouse, table, catalog="floe", props=None, server=None):
    return java("snapshots", db, warehouse, table, catalog=catalog, props=props, server=server)


def read_snapshots(db, warehouse, table, catalog="floe", props=None, server=None):
    """[(snapshot id, summary dict, rows)] for every snapshot, in one JVM."""
    return [(s["snapshot-id"], s["summary"], [canon(r) for r in s["rows"]])
            for s in java("read-snapshots", db, warehouse, table, catalog=catalog, props=props,
                          server=server)]


def replace_one_file(db, warehouse, table, catalog="floe"):
    """Commit a `replace` snapshot (a no-op compaction) with Iceberg's own API."""
    java("replace", db, warehouse, table, catalog=catalog)
