"""floe's S3 storage against a real S3 server (versitygw, which verifies every
SigV4 signature), checked with independent clients: boto3 and pyarrow for
objects, DuckDB (httpfs + iceberg) and pyiceberg for tables.

The C tool build*/tests/test_s3_tool drives the FileIO directly (byte-level
checks); the floe program is driven end to end with an s3:// warehouse and a
local SQLite catalog.  A fault proxy (s3server.FaultProxy) injects throttling,
server errors, dropped connections, corrupted bodies, lost replies and stalls.
"""
import base64
import hashlib
import json
import os
import sqlite3
import subprocess

import pyarrow.fs
import pytest
import iceberg_readers

from conftest import Result, run_floe, tool_bin
from s3server import REGION, bucket, proxy, s3, s3_tls  # noqa: F401  (fixtures)
from sinkmodel import COLS, APPEND_EXTRA, INF, SCHEMA, Stream, frontier_value
from readers import canon_rows

TOOL = "test_s3_tool"


def run_tool(env, *args, check=True, input=None):
    proc = subprocess.run([tool_bin(TOOL), *map(str, args)], env=env, capture_output=True,
                          timeout=300, input=input)
    res = Result(proc)
    res.stdout, res.stderr = proc.stdout.decode(), proc.stderr.decode()
    assert "runtime error" not in res.stderr, res
    assert "AddressSanitizer" not in res.stderr and "LeakSanitizer" not in res.stderr, res
    if check:
        assert res.returncode == 0, res
    return res


def floe_s3(env, tmp_path, *args, check=True, input=None, catalog=None):
    """floe with a local SQLite catalog; the table's files on S3."""
    return run_floe(*args, "--catalog", f"sqlite:{catalog or tmp_path / 'catalog.db'}",
                    env=env, check=check, input=input, cwd=tmp_path)


def metadata_location(db, table):
    ns, name = table.rsplit(".", 1)
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT metadata_location FROM iceberg_tables WHERE "
                           "table_namespace = ? AND table_name = ?", (ns, name)).fetchone()[0]
    finally:
        con.close()


def split_uri(uri):
    assert uri.startswith("s3://"), uri
    b, _, k = uri[5:].partition("/")
    return b, k


def duck(server):
    """DuckDB reading S3 through httpfs, with the server's credentials."""
    con = iceberg_readers.duck()
    host = server.endpoint.split("://", 1)[1]
    con.execute(f"CREATE SECRET s3 (TYPE s3, KEY_ID '{server.access_key}', "
                f"SECRET '{server.secret_key}', ENDPOINT '{host}', URL_STYLE 'path', "
                f"USE_SSL false, REGION '{REGION}')")
    return con


def pyiceberg_table(server, db, table, warehouse):
    from pyiceberg.catalog.sql import SqlCatalog
    cat = SqlCatalog("floe", uri=f"sqlite:///{db}", warehouse=warehouse, **{
        "s3.endpoint": server.endpoint, "s3.access-key-id": server.access_key,
        "s3.secret-access-key": server.secret_key, "s3.region": REGION,
        "s3.path-style-access": "true"})
    return cat.load_table(table)


def arrow_fs(server):
    host = server.endpoint.split("://", 1)[1]
    return pyarrow.fs.S3FileSystem(access_key=server.access_key, secret_key=server.secret_key,
                                   endpoint_override=host, scheme="http", region=REGION)


def random_file(path, size, seed=0):
    with open(path, "wb") as f:
        f.write(os.urandom(size))
    return path


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def big_ndjson(path, rows, start=0, width=200):
    """Rows {"id", "s"} whose strings are random base64 (Parquet cannot shrink them
    much), so file sizes follow the row count."""
    raw = base64.b64encode(os.urandom(rows * width * 3 // 4 + 3)).decode()
    with open(path, "w") as f:
        f.write("\n".join('{"id":%d,"s":"%s"}' % (start + i, raw[i * width:(i + 1) * width])
                          for i in range(rows)) + "\n")
    return path


def table_keys(server, bucket, prefix="wh/"):
    return set(server.keys(bucket, prefix))


# ---- the FileIO, byte for byte --------------------------------------------------------------

def test_small_and_empty_objects_round_trip(s3, bucket, tmp_path):
    env = s3.env()
    src = tmp_path / "small.bin"
    src.write_bytes(b"hello \x00 world")
    run_tool(env, "put", f"s3://{bucket}/dir/a b+c=d.bin", src)
    assert s3.get(bucket, "dir/a b+c=d.bin") == b"hello \x00 world"
    (tmp_path / "empty.bin").write_bytes(b"")
    run_tool(env, "put", f"s3://{bucket}/empty", tmp_path / "empty.bin")
    assert s3.get(bucket, "empty") == b""
    run_tool(env, "get", f"s3://{bucket}/dir/a b+c=d.bin", tmp_path / "back.bin")
    assert (tmp_path / "back.bin").read_bytes() == b"hello \x00 world"
    assert run_tool(env, "exists", f"s3a://{bucket}/empty").stdout.strip() == "true"
    run_tool(env, "rm", f"s3://{bucket}/empty")
    assert run_tool(env, "exists", f"s3://{bucket}/empty").stdout.strip() == "false"
    res = run_tool(env, "rm", f"s3://{bucket}/empty", check=False)
    assert res.returncode == 9 and "FLOE_ENOTFOUND" in res.stderr, res
    res = run_tool(env, "get", f"s3://{bucket}/missing", tmp_path / "x", check=False)
    assert "FLOE_ENOTFOUND" in res.stderr and "NoSuchKey" in res.stderr, res
    assert s3.keys(bucket) == ["dir/a b+c=d.bin"]


def test_multipart_upload_of_120_mb_read_back_by_pyarrow(s3, bucket, tmp_path):
    src = random_file(tmp_path / "big.bin", 120 * 1000 * 1000 + 12345)
    res = run_tool(s3.env(), "put", f"s3://{bucket}/big/object.bin", src, 1000003)
    assert "wrote 120012345 bytes" in res.stdout
    head = s3.client().head_object(Bucket=bucket, Key="big/object.bin")
    assert head["ContentLength"] == 120012345
    assert head["ETag"].strip('"').endswith("-15"), head["ETag"]     # 15 parts of 8 MiB
    with arrow_fs(s3).open_input_stream(f"{bucket}/big/object.bin") as f:
        h = hashlib.sha256()
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    assert h.hexdigest() == sha256_file(src)
    assert s3.uploads(bucket) == []
    run_tool(s3.env(), "get", f"s3://{bucket}/big/object.bin", tmp_path / "back.bin")
    assert sha256_file(tmp_path / "back.bin") == sha256_file(src)


def test_part_size_is_configurable_and_object_exactly_one_part_is_one_put(s3, bucket, tmp_path):
    five = 5 << 20
    src = random_file(tmp_path / "f.bin", 2 * five + 1)
    cfg = json.dumps({"floe.s3.part-size": str(five)})
    run_tool(s3.env(), "-c", cfg, "put", f"s3://{bucket}/three", src, 65536)
    assert s3.client().head_object(Bucket=bucket, Key="three")["ETag"].strip('"').endswith("-3")
    assert hashlib.sha256(s3.get(bucket, "three")).hexdigest() == sha256_file(src)
    one = random_file(tmp_path / "one.bin", five)
    run_tool(s3.env(), "-c", cfg, "put", f"s3://{bucket}/one", one, 65536)
    assert "-" not in s3.client().head_object(Bucket=bucket, Key="one")["ETag"]
    res = run_tool(s3.env(), "-c", json.dumps({"floe.s3.part-size": "1000"}), "put",
                   f"s3://{bucket}/x", one, check=False)
    assert "FLOE_EINVAL" in res.stderr and "part-size" in res.stderr, res


def test_abort_leaves_no_object_and_no_upload(s3, bucket, tmp_path):
    src = random_file(tmp_path / "big.bin", 30 << 20)
    res = run_tool(s3.env(), "put", f"s3://{bucket}/aborted", src, 1 << 20, 20 << 20)
    assert "aborted after" in res.stdout
    assert s3.keys(bucket) == []
    assert s3.uploads(bucket) == []


# ---- errors -------------------------------------------------------------------------------

def test_wrong_credentials_are_a_clear_auth_error(s3, bucket, tmp_path):
    secret = "Wr0ngSecret-" + "Q" * 20
    src = tmp_path / "a.bin"
    src.write_bytes(b"x")
    res = run_tool(s3.env(AWS_SECRET_ACCESS_KEY=secret), "put", f"s3://{bucket}/k", src,
                   check=False)
    assert res.returncode == 18 and "FLOE_EAUTH retryable=0" in res.stderr, res
    assert "SignatureDoesNotMatch" in res.stderr and "AWS_SECRET_ACCESS_KEY" in res.stderr
    assert f"s3://{bucket}/k" in res.stderr and s3.endpoint in res.stderr
    assert secret not in res.stderr + res.stdout
    res = run_tool(s3.env(AWS_ACCESS_KEY_ID="AKNOBODY", AWS_SECRET_ACCESS_KEY=secret), "get",
                   f"s3://{bucket}/k", tmp_path / "o", check=False)
    assert res.returncode == 18 and "AWS_ACCESS_KEY_ID" in res.stderr, res
    assert secret not in res.stderr + res.stdout
    # the floe program: the table cannot be created, nothing is registered
    (tmp_path / "in.ndjson").write_text('{"id": 1}\n')
    res = floe_s3(s3.env(AWS_SECRET_ACCESS_KEY=secret), tmp_path, "append", "--table", "ns.t",
                  "--schema", "id bigint", "--input", "in.ndjson", "--warehouse",
                  f"s3://{bucket}/wh", check=False)
    assert res.returncode != 0
    assert "SignatureDoesNotMatch" in res.stderr and bucket in res.stderr, res
    assert s3.endpoint in res.stderr
    assert secret not in res.stderr + res.stdout
    assert s3.keys(bucket) == []


def test_secrets_never_printed(s3, s3_tls, bucket, tmp_path):
    secret, token = "S3cretNeverShown" + "z" * 16, "T0kenNeverShown" + "y" * 16
    (tmp_path / "in.ndjson").write_text('{"id": 1}\n')
    envs = [s3.env(AWS_SECRET_ACCESS_KEY=secret, AWS_SESSION_TOKEN=token),
            s3.env(endpoint="http://127.0.0.1:1", AWS_SECRET_ACCESS_KEY=secret,
                   AWS_SESSION_TOKEN=token),
            s3_tls.env(AWS_SECRET_ACCESS_KEY=secret, AWS_SESSION_TOKEN=token)]
    outputs = []
    for i, env in enumerate(envs):
        for cmd in (["append", "--schema", "id bigint", "--input", "in.ndjson"], ["inspect"]):
            res = floe_s3(env, tmp_path, *cmd, "--table", "ns.t", "--warehouse",
                          f"s3://{bucket}/wh{i}", catalog=tmp_path / f"c{i}.db", check=False)
            assert res.returncode != 0, res
            outputs.append(res.stdout + res.stderr)
        res = run_tool(env, "put", f"s3://{bucket}/k", tmp_path / "in.ndjson", check=False)
        assert res.returncode != 0
        outputs.append(res.stdout + res.stderr)
    for cmd in ("append", "sink", "inspect"):
        res = run_floe(cmd, "--help", env=envs[0], check=False)
        outputs.append(res.stdout + res.stderr)
        assert "--s3-endpoint" in res.stdout + res.stderr
    text = "\n".join(outputs)
    assert "SignatureDoesNotMatch" in text or "InvalidToken" in text or "ExpiredToken" in text
    assert "Couldn't connect" in text or "Failed to connect" in text
    assert "certificate" in text
    assert secret not in text and token not in text


def test_missing_bucket_and_unreachable_endpoint(s3, tmp_path):
    src = tmp_path / "a.bin"
    src.write_bytes(b"x")
    res = run_tool(s3.env(), "put", "s3://no-such-bucket-here/k", src, check=False)
    assert res.returncode == 9 and "NoSuchBucket" in res.stderr, res
    res = run_tool(s3.env(endpoint="http://127.0.0.1:1"), "-c",
                   '{"floe.s3.retry-base-ms": "10"}', "put", "s3://b/k", src, check=False)
    assert "FLOE_ENET retryable=1" in res.stderr and "gave up after 5 attempts" in res.stderr, res
    res = run_tool(s3.env(), "put", "s3://onlybucket", src, check=False)
    assert res.returncode == 2 and "s3://BUCKET/KEY" in res.stderr, res


# ---- tables: append, sink, inspect -----------------------------------------------------------

def test_append_and_inspect_with_an_s3_warehouse(s3, bucket, tmp_path):
    env = s3.env()
    wh = f"s3://{bucket}/wh"
    (tmp_path / "a.ndjson").write_text("".join(
        json.dumps({"id": i, "name": f"n{i}", "tags": [str(i), "x"]}) + "\n" for i in range(100)))
    (tmp_path / "b.ndjson").write_text("".join(
        json.dumps({"id": i, "name": None, "tags": None}) + "\n" for i in range(100, 150)))
    schema = "id bigint not null, name text, tags text[]"
    for f in ("a.ndjson", "b.ndjson"):
        floe_s3(env, tmp_path, "append", "--table", "ns.t", "--schema", schema, "--input", f,
                "--warehouse", wh)
    loc = metadata_location(tmp_path / "catalog.db", "ns.t")
    assert loc.startswith(f"{wh}/ns/t/metadata/"), loc
    keys = table_keys(s3, bucket)
    assert any(k.startswith("wh/ns/t/data/") and k.endswith(".parquet") for k in keys)
    assert split_uri(loc)[1] in keys
    con = duck(s3)
    rows = con.execute("SELECT id, name, tags FROM iceberg_scan(?) ORDER BY id", [loc]).fetchall()
    assert rows == [(i, f"n{i}", [str(i), "x"]) for i in range(100)] + \
        [(i, None, None) for i in range(100, 150)]
    t = pyiceberg_table(s3, tmp_path / "catalog.db", "ns.t", wh)
    got = sorted(t.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [r["id"] for r in got] == list(range(150)) and got[5]["tags"] == ["5", "x"]
    assert len(t.snapshots()) == 2
    res = floe_s3(env, tmp_path, "inspect", "--table", "ns.t", "--json")
    info = json.loads(res.stdout)
    assert info["metadata_location"] == loc and info["data_location"] == f"{wh}/ns/t/data"
    assert [s["summary"]["added-records"] for s in info["snapshots"]] == ["100", "50"]


def test_append_of_a_data_file_over_100_mb(s3, bucket, tmp_path):
    src = big_ndjson(tmp_path / "big.ndjson", 720000)
    floe_s3(s3.env(), tmp_path, "append", "--table", "ns.big", "--schema", "id bigint, s text",
            "--input", src, "--warehouse", f"s3://{bucket}/wh", "--target-file-size", "1000000000")
    data = [k for k in table_keys(s3, bucket) if k.endswith(".parquet")]
    assert len(data) == 1
    head = s3.client().head_object(Bucket=bucket, Key=data[0])
    assert head["ContentLength"] > 100 * 1000 * 1000, head["ContentLength"]
    parts = int(head["ETag"].strip('"').rsplit("-", 1)[1])       # a multipart upload
    assert parts == (head["ContentLength"] + (8 << 20) - 1) // (8 << 20)
    con = duck(s3)
    loc = metadata_location(tmp_path / "catalog.db", "ns.big")
    src_sql = f"read_json('{src}', columns = {{'id': 'BIGINT', 's': 'VARCHAR'}})"
    assert con.execute("SELECT count(*) FROM iceberg_scan(?)", [loc]).fetchone()[0] == 720000
    for q in (f"SELECT * FROM iceberg_scan(?) EXCEPT ALL SELECT * FROM {src_sql}",
              f"SELECT * FROM {src_sql} EXCEPT ALL SELECT * FROM iceberg_scan(?)"):
        assert con.execute(f"SELECT count(*) FROM ({q})", [loc]).fetchone()[0] == 0
    assert s3.uploads(bucket) == []


def s3_snapshots(server, loc):
    md = json.loads(server.get(*split_uri(loc)))
    return sorted(md.get("snapshots", []), key=lambda s: s["sequence-number"])


@pytest.mark.parametrize("mode", ["upsert", "append"])
def test_sink_into_an_s3_warehouse(s3, bucket, tmp_path, mode):
    stream = Stream(7, steps=40, initial=20, as_of=10)
    (tmp_path / "changes.ndjson").write_text(stream.text())
    wh = f"s3://{bucket}/wh"
    args = ["sink", "--table", "demo.orders", "--schema", SCHEMA, "--mode", mode,
            "--warehouse", wh, "--commit-interval", "15", "--as-of", str(stream.as_of),
            "--quiet", "--close", "--input", "changes.ndjson"]
    if mode == "upsert":
        args += ["--key", "id"]
    floe_s3(s3.env(), tmp_path, *args)
    loc = metadata_location(tmp_path / "catalog.db", "demo.orders")
    snaps = s3_snapshots(s3, loc)
    assert len(snaps) >= 3
    frontiers = [frontier_value(s["summary"]["floe.frontier"]) for s in snaps]
    assert frontiers == sorted(set(frontiers)) and frontiers[-1] == INF
    cols = COLS + (APPEND_EXTRA if mode == "append" else [])
    con = duck(s3)
    for s, f in zip(snaps, frontiers):
        rows = con.execute("SELECT * FROM iceberg_scan(?, snapshot_from_id = ?)",
                           [loc, s["snapshot-id"]]).fetchall()
        assert sorted(canon_rows(cols, rows), key=repr) == stream.expected(f, mode), s["summary"]
    if mode == "append":                       # pyiceberg reads append tables too
        t = pyiceberg_table(s3, tmp_path / "catalog.db", "demo.orders", wh)
        assert t.scan().to_arrow().num_rows == len(stream.expected(INF, mode))
    res = floe_s3(s3.env(), tmp_path, "inspect", "--table", "demo.orders")
    assert "frontier" in res.stdout and "[]" in res.stdout, res
    # the input was closed: a second run over it is refused and adds nothing
    res = floe_s3(s3.env(), tmp_path, *args, check=False)
    assert res.returncode == 1 and "its input was closed" in res.stderr, res
    assert len(s3_snapshots(s3, metadata_location(tmp_path / "catalog.db", "demo.orders"))) \
        == len(snaps)
