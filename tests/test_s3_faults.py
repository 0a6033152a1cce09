"""floe's S3 storage when the network and the server misbehave: a fault proxy
(s3server.FaultProxy) between floe and versitygw throttles, fails, drops
connections, corrupts bodies, loses replies and stalls.  floe must retry what
is transient, give up after a bounded number of attempts with a clear error,
and never leave a partial object where a table could reference it."""
import hashlib
import json

from s3server import bucket, proxy, s3  # noqa: F401  (fixtures)
from test_s3 import (big_ndjson, duck, floe_s3, metadata_location, pyiceberg_table,
                     random_file, run_tool, sha256_file, table_keys)

FAST = json.dumps({"floe.s3.retry-base-ms": "20", "floe.s3.retry-max-ms": "200"})


def test_throttling_errors_and_dropped_connections_are_retried(s3, bucket, proxy, tmp_path):
    proxy.add("PutObject", "slowdown", times=2)
    proxy.add("GetObject", "500", times=1)
    proxy.add("PutObject", "drop", times=1, after=1)
    proxy.add("CreateMultipartUpload", "slowdown", times=1)
    proxy.add("UploadPart", "drop", times=1, part=2)
    proxy.add("CompleteMultipartUpload", "500", times=1)
    env = s3.env(endpoint=proxy.endpoint)
    big_ndjson(tmp_path / "a.ndjson", 120000)                  # an 18 MB data file: 3 parts
    floe_s3(env, tmp_path, "append", "--table", "ns.t", "--schema", "id bigint, s text",
            "--input", "a.ndjson", "--warehouse", f"s3://{bucket}/wh")
    acted = proxy.kinds("slowdown") + proxy.kinds("500") + proxy.kinds("drop")
    assert sorted(acted) == sorted(["PutObject", "PutObject", "GetObject", "PutObject",
                                    "CreateMultipartUpload", "UploadPart",
                                    "CompleteMultipartUpload"]), proxy.log
    loc = metadata_location(tmp_path / "catalog.db", "ns.t")
    con = duck(s3)
    src = f"read_json('{tmp_path / 'a.ndjson'}', columns = {{'id': 'BIGINT', 's': 'VARCHAR'}})"
    assert con.execute(f"SELECT count(*) FROM (SELECT * FROM iceberg_scan(?) EXCEPT ALL "
                       f"SELECT * FROM {src})", [loc]).fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM iceberg_scan(?)", [loc]).fetchone()[0] == 120000
    assert s3.uploads(bucket) == []


def committed_state(s3, bucket, tmp_path, table):
    """What the table holds: (rows by DuckDB, snapshot ids, the data files of its
    manifests with their recorded sizes)."""
    loc = metadata_location(tmp_path / "catalog.db", table)
    rows = sorted(duck(s3).execute("SELECT * FROM iceberg_scan(?)", [loc]).fetchall())
    t = pyiceberg_table(s3, tmp_path / "catalog.db", table, f"s3://{bucket}/wh")
    files = sorted((task.file.file_path, task.file.file_size_in_bytes)
                   for task in t.scan().plan_files())
    return rows, [s.snapshot_id for s in t.snapshots()], files


def assert_files_complete(s3, bucket, files):
    """Every data file a manifest references exists whole on the server."""
    for path, size in files:
        key = path.split(f"s3://{bucket}/", 1)[1]
        assert s3.client().head_object(Bucket=bucket, Key=key)["ContentLength"] == size


def test_injected_failure_mid_upload_leaves_no_referenced_partial_object(s3, bucket, proxy,
                                                                         tmp_path):
    (tmp_path / "first.ndjson").write_text("".join(
        json.dumps({"id": i, "s": f"row {i}"}) + "\n" for i in range(10)))
    schema = "id bigint, s text"
    floe_s3(s3.env(), tmp_path, "append", "--table", "ns.t", "--schema", schema, "--input",
            "first.ndjson", "--warehouse", f"s3://{bucket}/wh")
    before = committed_state(s3, bucket, tmp_path, "ns.t")
    keys_before = table_keys(s3, bucket)
    assert len(before[0]) == 10 and len(before[1]) == 1

    # every attempt at part 2 of the big data file fails: floe gives up and aborts
    proxy.add("UploadPart", "500", times=None, part=2)
    big_ndjson(tmp_path / "big.ndjson", 120000)
    res = floe_s3(s3.env(endpoint=proxy.endpoint), tmp_path, "append", "--table", "ns.t",
                  "--input", "big.ndjson", "--warehouse", f"s3://{bucket}/wh", check=False)
    assert res.returncode != 0
    assert "UploadPart 2" in res.stderr and "InternalError" in res.stderr, res
    assert "gave up after 5 attempts" in res.stderr and ".parquet" in res.stderr, res
    assert proxy.kinds().count("UploadPart") == 1 + 5          # part 1, then part 2 five times
    assert "AbortMultipartUpload" in proxy.kinds()
    assert s3.uploads(bucket) == []                            # no parts left behind
    assert table_keys(s3, bucket) == keys_before               # no object, no manifest
    after = committed_state(s3, bucket, tmp_path, "ns.t")
    assert after == before                                     # the table is as committed
    assert_files_complete(s3, bucket, after[2])

    # the completion fails for good: aborted the same way
    proxy.rules.clear()
    proxy.add("CompleteMultipartUpload", "500", times=None)
    res = floe_s3(s3.env(endpoint=proxy.endpoint), tmp_path, "append", "--table", "ns.t",
                  "--input", "big.ndjson", "--warehouse", f"s3://{bucket}/wh", check=False)
    assert res.returncode != 0 and "CompleteMultipartUpload" in res.stderr, res
    assert s3.uploads(bucket) == []
    assert table_keys(s3, bucket) == keys_before
    assert committed_state(s3, bucket, tmp_path, "ns.t") == before

    # and with the faults gone the same append lands
    proxy.rules.clear()
    floe_s3(s3.env(endpoint=proxy.endpoint), tmp_path, "append", "--table", "ns.t",
            "--input", "big.ndjson", "--warehouse", f"s3://{bucket}/wh")
    rows, snaps, files = committed_state(s3, bucket, tmp_path, "ns.t")
    assert len(rows) == 120010 and len(snaps) == 2
    assert_files_complete(s3, bucket, files)


def put_through(s3, proxy, bucket, tmp_path, size, config=FAST, check=True):
    src = random_file(tmp_path / "src.bin", size)
    res = run_tool(s3.env(endpoint=proxy.endpoint), "-c", config, "put",
                   f"s3://{bucket}/obj", src, 1 << 20, check=check)
    return src, res


def test_lost_reply_to_complete_is_recognised(s3, bucket, proxy, tmp_path):
    # versitygw answers the retry as a success
    proxy.add("CompleteMultipartUpload", "lose-reply", times=1)
    src, _ = put_through(s3, proxy, bucket, tmp_path, 20 << 20)
    assert proxy.kinds().count("CompleteMultipartUpload") == 2
    assert hashlib.sha256(s3.get(bucket, "obj")).hexdigest() == sha256_file(src)
    # AWS may answer it NoSuchUpload: then the object (of the right size) tells
    proxy.rules.clear()
    proxy.log.clear()
    proxy.add("CompleteMultipartUpload", "lose-reply", times=1)
    proxy.add("CompleteMultipartUpload", "no-such-upload", times=1)
    src, _ = put_through(s3, proxy, bucket, tmp_path, 20 << 20)
    kinds = proxy.kinds()
    assert kinds.count("CompleteMultipartUpload") == 2 and kinds[-1] == "HeadObject", kinds
    assert "AbortMultipartUpload" not in kinds
    assert hashlib.sha256(s3.get(bucket, "obj")).hexdigest() == sha256_file(src)
    # NoSuchUpload without an earlier success is an error, and the upload is aborted
    proxy.rules.clear()
    proxy.add("CompleteMultipartUpload", "no-such-upload", times=1)
    res = run_tool(s3.env(endpoint=proxy.endpoint), "-c", FAST, "put", f"s3://{bucket}/other",
                   src, 1 << 20, check=False)
    assert res.returncode == 9 and "NoSuchUpload" in res.stderr, res
    assert proxy.kinds()[-2:] == ["HeadObject", "AbortMultipartUpload"]
    assert s3.keys(bucket) == ["obj"]
    assert s3.uploads(bucket) == []


def test_error_inside_a_200_reply_is_retried(s3, bucket, proxy, tmp_path):
    proxy.add("CompleteMultipartUpload", "error-in-200", times=1)
    src, _ = put_through(s3, proxy, bucket, tmp_path, 20 << 20)
    assert proxy.kinds("error-in-200") == ["CompleteMultipartUpload"]
    assert proxy.kinds().count("CompleteMultipartUpload") == 2
    assert hashlib.sha256(s3.get(bucket, "obj")).hexdigest() == sha256_file(src)


def test_corrupted_bodies_are_refused_and_sent_again(s3, bucket, proxy, tmp_path):
    proxy.add("UploadPart", "corrupt", times=1, part=2)
    src, _ = put_through(s3, proxy, bucket, tmp_path, 20 << 20)
    assert proxy.kinds("corrupt") == ["UploadPart"]
    assert proxy.kinds().count("UploadPart") == 4
    assert hashlib.sha256(s3.get(bucket, "obj")).hexdigest() == sha256_file(src)
    proxy.add("PutObject", "corrupt", times=1)
    small = random_file(tmp_path / "small.bin", 1000)
    run_tool(s3.env(endpoint=proxy.endpoint), "-c", FAST, "put", f"s3://{bucket}/small", small)
    assert proxy.kinds("corrupt") == ["UploadPart", "PutObject"]
    assert s3.get(bucket, "small") == small.read_bytes()


def test_stalled_request_times_out_and_is_retried(s3, bucket, proxy, tmp_path):
    src = random_file(tmp_path / "a.bin", 1000)
    run_tool(s3.env(), "put", f"s3://{bucket}/a", src)
    proxy.add("GetObject", "stall", times=1)
    cfg = json.dumps({"floe.s3.request-timeout-ms": "500", "floe.s3.retry-base-ms": "10"})
    res = run_tool(s3.env(endpoint=proxy.endpoint), "-c", cfg, "get", f"s3://{bucket}/a",
                   tmp_path / "back.bin")
    assert "read 1000 bytes" in res.stdout
    assert proxy.kinds() == ["GetObject", "GetObject"]
    assert (tmp_path / "back.bin").read_bytes() == src.read_bytes()


def test_gives_up_after_the_configured_attempts(s3, bucket, proxy, tmp_path):
    proxy.add("PutObject", "slowdown", times=None)
    _, res = put_through(s3, proxy, bucket, tmp_path, 1000, check=False)
    assert res.returncode == 5 and "FLOE_EIO retryable=1" in res.stderr, res
    assert "SlowDown" in res.stderr and "gave up after 5 attempts" in res.stderr
    assert proxy.kinds().count("PutObject") == 5
    cfg = json.dumps({"floe.s3.max-attempts": "2", "floe.s3.retry-base-ms": "10"})
    _, res = put_through(s3, proxy, bucket, tmp_path, 1000, config=cfg, check=False)
    assert "gave up after 2 attempts" in res.stderr
    assert proxy.kinds().count("PutObject") == 7
    assert s3.keys(bucket) == []


def test_path_style_and_virtual_hosted_addressing(s3, bucket, proxy, tmp_path):
    src = random_file(tmp_path / "a.bin", 100)
    run_tool(s3.env(endpoint=proxy.endpoint), "put", f"s3://{bucket}/p/a b", src)
    vhost = proxy.endpoint.replace("127.0.0.1", "localhost")
    run_tool(s3.env(endpoint=vhost), "-c", '{"s3.path-style-access": "false"}', "put",
             f"s3://{bucket}/v/a b", src)
    run_tool(s3.env(endpoint=vhost), "-c", '{"s3.path-style-access": false}', "get",
             f"s3://{bucket}/v/a b", tmp_path / "back")
    hosts = [(h, t) for _, _, h, t in proxy.log]
    assert hosts[0] == (f"127.0.0.1:{proxy.port}", f"/{bucket}/p/a%20b")
    assert hosts[1] == (f"{bucket}.localhost:{proxy.port}", "/v/a%20b")
    assert hosts[2] == hosts[1]
    assert s3.keys(bucket) == ["p/a b", "v/a b"]
    assert (tmp_path / "back").read_bytes() == src.read_bytes()
