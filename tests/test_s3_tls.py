"""S3 over TLS: certificates are always verified; a private CA is trusted only
when given (--ca-file or FLOE_CA_FILE).  The server is versitygw with a
certificate issued by a CA made for the test run (s3server.s3_tls)."""
import json

from s3server import s3_tls  # noqa: F401  (fixture)
from test_s3 import floe_s3, metadata_location, run_tool


def append_args(bucket, *extra):
    return ["append", "--table", "ns.t", "--schema", "id bigint, name text", "--input",
            "in.ndjson", "--warehouse", f"s3://{bucket}/wh", *extra]


def write_input(tmp_path):
    (tmp_path / "in.ndjson").write_text("".join(
        json.dumps({"id": i, "name": f"n{i}"}) + "\n" for i in range(5)))


def test_untrusted_certificate_fails_with_a_clear_error(s3_tls, tmp_path):
    bucket = s3_tls.new_bucket()
    write_input(tmp_path)
    res = floe_s3(s3_tls.env(), tmp_path, *append_args(bucket), check=False)
    assert res.returncode != 0
    assert "TLS certificate verification failed" in res.stderr, res
    assert "--ca-file" in res.stderr and s3_tls.endpoint in res.stderr
    assert "gave up" not in res.stderr                  # not retried: it cannot get better
    assert s3_tls.keys(bucket) == []


def test_ca_file_option_trusts_the_private_ca(s3_tls, tmp_path):
    bucket = s3_tls.new_bucket()
    write_input(tmp_path)
    floe_s3(s3_tls.env(), tmp_path, *append_args(bucket, "--ca-file", s3_tls.ca_file))
    res = floe_s3(s3_tls.env(), tmp_path, "inspect", "--table", "ns.t", "--json", "--ca-file",
                  s3_tls.ca_file)
    loc = metadata_location(tmp_path / "catalog.db", "ns.t")
    assert json.loads(res.stdout)["snapshots"][0]["summary"]["added-records"] == "5"
    key = loc.split(f"s3://{bucket}/", 1)[1]
    body = s3_tls.client(verify=s3_tls.ca_file).get_object(Bucket=bucket, Key=key)["Body"].read()
    assert json.loads(body)["current-snapshot-id"] > 0
    # the environment variable works as well, for the FileIO itself
    src = tmp_path / "in.ndjson"
    run_tool(s3_tls.env(FLOE_CA_FILE=s3_tls.ca_file), "put", f"s3://{bucket}/x", src)
    assert s3_tls.client(verify=s3_tls.ca_file).get_object(
        Bucket=bucket, Key="x")["Body"].read() == src.read_bytes()


def test_unreadable_ca_file_is_reported(s3_tls, tmp_path):
    bucket = s3_tls.new_bucket()
    (tmp_path / "x").write_text("x")
    res = run_tool(s3_tls.env(FLOE_CA_FILE=str(tmp_path / "missing.pem")), "put",
                   f"s3://{bucket}/x", tmp_path / "x", check=False)
    assert res.returncode == 20 and "CA file cannot be read" in res.stderr, res
    (tmp_path / "junk.pem").write_text("not a certificate\n")
    res = run_tool(s3_tls.env(FLOE_CA_FILE=str(tmp_path / "junk.pem")), "put",
                   f"s3://{bucket}/x", tmp_path / "x", check=False)
    assert res.returncode == 20, res
    assert s3_tls.keys(bucket) == []
