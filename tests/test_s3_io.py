"""floe's S3 FileIO reading at random and listing, against a real S3 server
(versitygw, tests/s3server.py), checked against the bytes written and an
independent client (boto3).

The C tool build*/tests/test_s3_tool drives the FileIO: `put` writes with
floe, `read-range URI OFF N ...` opens the object (HEAD) and reads each range
(one ranged GET each), printing the bytes in hex, and `list URI` prints
"URI SIZE MTIME_MS" per object.  floe.s3.list-page-size makes listing pages
small, so a few dozen keys take several pages; the fault proxy counts the
requests and injects failures.
"""
import json
import os
import random

from s3server import REGION, bucket, proxy, s3  # noqa: F401  (fixtures)
from test_s3 import random_file, run_tool

# Keys that need escaping in XML, in URLs, or both.
ODD_NAMES = ["a&b.parquet", "<lt>&gt;.bin", 'quo"te', "apos'trophe", "sp ace", "plus+eq=",
             "pct%41", "unicode-\u00e9\u263a", "semi;colon", "tilde~dot.", "x" * 200]


def read_ranges(env, uri, ranges, *cfg, check=True):
    """{(off, n): bytes} and the size the tool saw (or the failed Result)."""
    args = [a for r in ranges for a in r]
    res = run_tool(env, *cfg, "read-range", uri, *args, check=check)
    if res.returncode != 0:
        return res, None
    lines = res.stdout.splitlines()
    assert lines[0].startswith("size "), res
    got = {}
    for line in lines[1:]:
        off, n, *hexed = line.split(" ")
        got[(int(off), int(n))] = bytes.fromhex(hexed[0] if hexed else "")
    return got, int(lines[0].split()[1])


def listing(env, uri, *cfg):
    """[(uri, size, mtime_ms)] as the tool printed them."""
    res = run_tool(env, *cfg, "list", uri)
    out = []
    for line in res.stdout.splitlines():
        u, size, mtime = line.rsplit(" ", 2)
        out.append((u, int(size), int(mtime)))
    return out


def boto_listing(server, bucket, prefix, scheme="s3"):
    """The same listing through boto3: [(uri, size, mtime_ms)]."""
    out, token = [], None
    while True:
        kw = {"Bucket": bucket, "Prefix": prefix}
        if token:
            kw["ContinuationToken"] = token
        page = server.client().list_objects_v2(**kw)
        out += [(f"{scheme}://{bucket}/{o['Key']}", o["Size"],
                 round(o["LastModified"].timestamp() * 1000)) for o in page.get("Contents", [])]
        if not page.get("IsTruncated"):
            return out
        token = page["NextContinuationToken"]


def put(env, uri, path):
    run_tool(env, "put", uri, path)


# ---- reads at random ----------------------------------------------------------------------

def test_ranged_reads_match_the_object_byte_for_byte(s3, bucket, tmp_path):
    env = s3.env()
    big = random_file(tmp_path / "big.bin", 12 * 1000 * 1000 + 321)   # two parts of 8 MiB
    small = random_file(tmp_path / "small.bin", 4097)
    put(env, f"s3://{bucket}/r/big.bin", big)
    put(env, f"s3://{bucket}/r/small one.bin", small)
    data = big.read_bytes()
    size = len(data)
    rng = random.Random(7)
    ranges = [(0, 1), (size - 1, 1), (0, 100), ((8 << 20) - 3, 6), (size, 0), (5, 3 << 20),
              ((8 << 20) - (1 << 20), 2 << 20), (size - (1 << 20), 1 << 20), (size - 4096, 4096)]
    for _ in range(20):
        off = rng.randrange(size)
        ranges.append((off, rng.randrange(min(size - off, 1 << 21)) + 1))
    got, seen_size = read_ranges(env, f"s3://{bucket}/r/big.bin", ranges)
    assert seen_size == size
    for off, n in ranges:
        assert got[(off, n)] == data[off:off + n], (off, n)
    sdata = small.read_bytes()
    got, seen_size = read_ranges(env, f"s3a://{bucket}/r/small one.bin", [(0, 4097), (4000, 97)])
    assert seen_size == 4097
    assert got[(0, 4097)] == sdata and got[(4000, 97)] == sdata[4000:]


def test_empty_objects_open_and_read_nothing(s3, bucket, tmp_path):
    env = s3.env()
    (tmp_path / "empty").write_bytes(b"")
    put(env, f"s3://{bucket}/e", tmp_path / "empty")
    got, size = read_ranges(env, f"s3://{bucket}/e", [(0, 0)])
    assert size == 0 and got == {(0, 0): b""}


def test_read_errors_are_clear(s3, bucket, tmp_path):
    env = s3.env()
    src = random_file(tmp_path / "a.bin", 1000)
    put(env, f"s3://{bucket}/k", src)
    res, _ = read_ranges(env, f"s3://{bucket}/missing", [(0, 1)], check=False)
    assert res.returncode == 9 and "FLOE_ENOTFOUND" in res.stderr, res
    assert f"S3 HEAD (to open) s3://{bucket}/missing" in res.stderr, res
    res, _ = read_ranges(env, f"s3://{bucket}/k", [(990, 11)], check=False)
    assert res.returncode == 2 and "FLOE_EINVAL" in res.stderr and "past its end" in res.stderr
    secret = "Wr0ngSecret-" + "Q" * 20
    res, _ = read_ranges(s3.env(AWS_SECRET_ACCESS_KEY=secret), f"s3://{bucket}/k", [(0, 1)],
                         check=False)
    # a HEAD reply has no body to name S3's error code: the status says it
    assert res.returncode == 18 and "HTTP 403 Forbidden" in res.stderr, res
    assert secret not in res.stderr + res.stdout


def test_transient_failures_of_ranged_gets_are_retried(s3, bucket, proxy, tmp_path):
    env = s3.env()
    src = random_file(tmp_path / "a.bin", 3 << 20)
    put(env, f"s3://{bucket}/k", src)
    proxy.add("GetObject", "slowdown", times=1)
    proxy.add("GetObject", "drop", times=1, after=1)
    proxy.add("HeadObject", "500", times=1)
    cfg = ("-c", json.dumps({"floe.s3.retry-base-ms": "10"}))
    got, _ = read_ranges(s3.env(endpoint=proxy.endpoint), f"s3://{bucket}/k",
                         [(10, 2 << 20), (7, 5)], *cfg)
    data = src.read_bytes()
    assert got[(10, 2 << 20)] == data[10:10 + (2 << 20)] and got[(7, 5)] == data[7:12]
    assert proxy.kinds() == ["HeadObject"] * 2 + ["GetObject"] * 4
    ranges = [t for k, _, _, t in proxy.log if k == "GetObject"]
    assert all(t == f"/{bucket}/k" for t in ranges)


# ---- listings -------------------------------------------------------------------------------

def fill(env, bucket, tmp_path, keys):
    """Write each key with floe; sizes differ per key."""
    for i, key in enumerate(keys):
        src = random_file(tmp_path / "obj", i * 37)
        put(env, f"s3://{bucket}/{key}", src)


def test_listing_pages_through_every_object_under_the_prefix(s3, bucket, proxy, tmp_path):
    env = s3.env()
    inside = [f"wh/t/data/f{i:02d}.parquet" for i in range(17)] + \
        [f"wh/t/metadata/{n}" for n in ODD_NAMES] + ["wh/t/deep/er/still/x.json"]
    outside = ["wh/t2/x.parquet", "wh/tx", "wh/other/t/y", "top.bin"]
    fill(env, bucket, tmp_path, inside + outside)
    want = boto_listing(s3, bucket, "wh/t/")
    assert sorted(u for u, _, _ in want) == sorted(f"s3://{bucket}/{k}" for k in inside)
    cfg = ("-c", json.dumps({"floe.s3.list-page-size": "4"}))
    got = listing(s3.env(endpoint=proxy.endpoint), f"s3://{bucket}/wh/t", *cfg)
    assert sorted(got) == sorted(want)
    assert len(got) == len(inside)                     # each object once
    pages = [t for k, _, _, t in proxy.log if k == "GetObject"]
    assert len(pages) == (len(inside) + 3) // 4, pages
    assert pages[0] == f"/{bucket}/?list-type=2&max-keys=4&prefix=wh%2Ft%2F", pages
    assert all("continuation-token=" in p for p in pages[1:])
    # the same with a trailing '/', with s3a://, and S3's own page size
    assert sorted(listing(env, f"s3://{bucket}/wh/t/")) == sorted(want)
    assert sorted(listing(env, f"s3a://{bucket}/wh/t", *cfg)) == \
        sorted(boto_listing(s3, bucket, "wh/t/", scheme="s3a"))
    # the whole bucket; nothing under a prefix that holds nothing
    assert sorted(listing(env, f"s3://{bucket}", *cfg)) == sorted(boto_listing(s3, bucket, ""))
    assert listing(env, f"s3://{bucket}/wh/none", *cfg) == []
    assert listing(env, f"s3://{bucket}/wh/t/data/f0", *cfg) == []   # a key prefix, no dir


def test_listing_sizes_and_times_are_the_objects(s3, bucket, tmp_path):
    env = s3.env()
    fill(env, bucket, tmp_path, ["d/a", "d/b", "d/c"])
    got = {u: (size, mtime) for u, size, mtime in listing(env, f"s3://{bucket}/d")}
    for i, key in enumerate(["d/a", "d/b", "d/c"]):
        head = s3.client().head_object(Bucket=bucket, Key=key)
        size, mtime = got[f"s3://{bucket}/{key}"]
        assert size == head["ContentLength"] == i * 37
        # HEAD's Last-Modified has whole seconds; the listing may carry ms
        assert abs(mtime - head["LastModified"].timestamp() * 1000) < 1000, (mtime, head)


def test_listing_and_reads_virtual_hosted(s3, bucket, proxy, tmp_path):
    env = s3.env()
    src = random_file(tmp_path / "a.bin", 5000)
    for k in ("v/a b", "v/c&d", "v/sub/e"):
        put(env, f"s3://{bucket}/{k}", src)
    vhost = proxy.endpoint.replace("127.0.0.1", "localhost")
    cfg = ("-c", json.dumps({"s3.path-style-access": "false", "floe.s3.list-page-size": "2"}))
    got = listing(s3.env(endpoint=vhost), f"s3://{bucket}/v", *cfg)
    assert sorted(got) == sorted(boto_listing(s3, bucket, "v/"))
    data, _ = read_ranges(s3.env(endpoint=vhost), f"s3://{bucket}/v/c&d", [(100, 200)], *cfg)
    assert data[(100, 200)] == src.read_bytes()[100:300]
    hosts = {h for _, _, h, _ in proxy.log}
    assert hosts == {f"{bucket}.localhost:{proxy.port}"}, proxy.log
    targets = [t for k, _, _, t in proxy.log if k == "GetObject"]
    assert targets[0] == "/?list-type=2&max-keys=2&prefix=v%2F", targets
    assert targets[1].startswith("/?continuation-token=") and len(targets) == 3
    assert targets[2] == "/v/c%26d"


def test_transient_failures_of_listing_pages_are_retried(s3, bucket, proxy, tmp_path):
    env = s3.env()
    fill(env, bucket, tmp_path, [f"p/{i}" for i in range(7)])
    proxy.add("GetObject", "slowdown", times=1, after=1)       # the second page
    proxy.add("GetObject", "500", times=1, after=2)   # page 3: rule 2 sees what rule 1 passed
    cfg = ("-c", json.dumps({"floe.s3.list-page-size": "3", "floe.s3.retry-base-ms": "10"}))
    got = listing(s3.env(endpoint=proxy.endpoint), f"s3://{bucket}/p", *cfg)
    assert sorted(got) == sorted(boto_listing(s3, bucket, "p/"))
    assert proxy.kinds("slowdown") == ["GetObject"] and proxy.kinds("500") == ["GetObject"]
    assert proxy.kinds().count("GetObject") == 3 + 2


def test_listing_errors(s3, bucket, tmp_path):
    res = run_tool(s3.env(), "list", "s3://no-such-bucket-here/x", check=False)
    assert res.returncode == 9 and "NoSuchBucket" in res.stderr, res
    assert "S3 ListObjectsV2 (page 1) of s3://no-such-bucket-here/x/" in res.stderr, res
    res = run_tool(s3.env(), "-c", '{"floe.s3.list-page-size": "0"}', "list",
                   f"s3://{bucket}/x", check=False)
    assert res.returncode == 2 and "floe.s3.list-page-size" in res.stderr, res
    res = run_tool(s3.env(), "list", "s3:///x", check=False)
    assert res.returncode == 2 and "s3://BUCKET[/PREFIX]" in res.stderr, res
