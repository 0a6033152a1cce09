"""floe's partition transforms (src/iceberg/partition.c) against pyiceberg's
and Java Iceberg's (org.apache.iceberg.transforms.Transforms, run by
tests/java's floe.Transforms in one JVM for every case) over many random
values of every type: bucket (the spec's Murmur3 of each
type's single-value serialization), truncate, year/month/day/hour,
identity and void.  Values include negatives, dates and timestamps before
1970, unicode strings (truncation by code point), empty strings and null.
The C side is build*/tests/test_partition_tool."""
import datetime
import decimal
import json
import random
import subprocess
import uuid

import pytest

from conftest import tool_bin

pytest.importorskip("pyiceberg")
from pyiceberg import transforms as T  # noqa: E402
from pyiceberg import types as IT  # noqa: E402

N = 400
EPOCH = datetime.datetime(1970, 1, 1)
MIN_DAY = (datetime.date(1, 1, 1) - datetime.date(1970, 1, 1)).days
MAX_DAY = (datetime.date(9999, 12, 31) - datetime.date(1970, 1, 1)).days
US_DAY = 86_400_000_000
ALPHABET = "abcXYZ09 é漢字🙂\u0301"


def rand_int(rng, bits):
    edge = [0, 1, -1, 2 ** (bits - 1) - 1, -(2 ** (bits - 1)), 34, -34]
    return rng.choice(edge) if rng.random() < 0.1 else rng.randint(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def gen(kind, rng):
    """(pyiceberg type, list of (python value, JSON single-value text))."""
    vals = []
    if kind == "int":
        for _ in range(N):
            v = rand_int(rng, 32)
            vals.append((v, json.dumps(v)))
        return IT.IntegerType(), vals
    if kind == "long":
        for _ in range(N):
            v = rand_int(rng, 64)
            vals.append((v, json.dumps(v)))
        return IT.LongType(), vals
    if kind == "decimal(9,2)":
        for _ in range(N):
            v = decimal.Decimal(rng.randint(-999999999, 999999999)).scaleb(-2)
            vals.append((v, json.dumps(f"{v:.2f}")))
        return IT.DecimalType(9, 2), vals
    if kind == "decimal(38,5)":
        for _ in range(N):
            v = decimal.Decimal(rng.randint(-(10 ** 38) + 1, 10 ** 38 - 1)).scaleb(
                -5, context=decimal.Context(prec=50))
            vals.append((v, json.dumps(f"{v:.5f}")))
        return IT.DecimalType(38, 5), vals
    if kind == "date":
        for _ in range(N):
            d = rng.choice([0, -1, 1, -365, 17486]) if rng.random() < 0.1 else rng.randint(MIN_DAY, MAX_DAY)
            s = (datetime.date(1970, 1, 1) + datetime.timedelta(days=d)).isoformat()
            vals.append((d, json.dumps(s)))
        return IT.DateType(), vals
    if kind == "time":
        for _ in range(N):
            us = rng.randint(0, US_DAY - 1)
            t = (EPOCH + datetime.timedelta(microseconds=us)).time().isoformat(timespec="microseconds")
            vals.append((us, json.dumps(t)))
        return IT.TimeType(), vals
    if kind in ("timestamp", "timestamptz"):
        for _ in range(N):
            us = rng.choice([0, -1, 1, -US_DAY, -3_600_000_000 - 1]) if rng.random() < 0.1 else \
                rng.randint(MIN_DAY * US_DAY, (MAX_DAY + 1) * US_DAY - 1)
            s = (EPOCH + datetime.timedelta(microseconds=us)).isoformat(timespec="microseconds")
            if kind == "timestamptz":
                s += "+00:00"
            vals.append((us, json.dumps(s)))
        return (IT.TimestampType() if kind == "timestamp" else IT.TimestamptzType()), vals
    if kind == "string":
        for _ in range(N):
            v = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12)))
            vals.append((v, json.dumps(v)))
        return IT.StringType(), vals
    if kind == "uuid":
        for _ in range(N):
            u = uuid.UUID(int=rng.getrandbits(128))
            vals.append((u, json.dumps(str(u))))
        return IT.UUIDType(), vals
    if kind == "binary":
        for _ in range(N):
            b = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 20)))
            vals.append((b, json.dumps(b.hex())))
        return IT.BinaryType(), vals
    if kind == "fixed[5]":
        for _ in range(N):
            b = bytes(rng.getrandbits(8) for _ in range(5))
            vals.append((b, json.dumps(b.hex())))
        return IT.FixedType(5), vals
    raise AssertionError(kind)


def floe_results(kind, transform, texts):
    proc = subprocess.run([tool_bin("test_partition_tool"), kind, transform],
                          input="\n".join(texts + ["null"]) + "\n", capture_output=True,
                          text=True, check=True)
    return proc.stdout.splitlines()


def normalise(kind, ptype, v):
    """pyiceberg's result as the tool prints it."""
    if v is None:
        return None
    if isinstance(v, decimal.Decimal):
        return f"{v:.{ptype.scale}f}"
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, datetime.date):
        return (v - datetime.date(1970, 1, 1)).days
    return v


def expected_text(kind, ptype, transform, value):
    r = normalise(kind, ptype, transform.transform(ptype)(value))
    return json.dumps(r) if r is not None else "null"


LIMIT = {"int": 32, "long": 64}
CASES = []
for kind in ["int", "long", "decimal(9,2)", "decimal(38,5)", "date", "time", "timestamp",
             "timestamptz", "string", "uuid", "binary", "fixed[5]"]:
    CASES.append((kind, "bucket[16]"))
    CASES.append((kind, "bucket[2147483647]"))
    CASES.append((kind, "identity"))
    CASES.append((kind, "void"))
    if kind in ("int", "long", "decimal(9,2)", "decimal(38,5)", "string", "binary"):
        CASES.append((kind, "truncate[1]"))
        CASES.append((kind, "truncate[3]"))
        CASES.append((kind, "truncate[1000]"))
    if kind in ("date", "timestamp", "timestamptz"):
        for t in ("year", "month", "day"):
            CASES.append((kind, t))
    if kind in ("timestamp", "timestamptz"):
        CASES.append((kind, "hour"))


def py_transform(text):
    if text.startswith("bucket["):
        return T.BucketTransform(int(text[7:-1]))
    if text.startswith("truncate["):
        return T.TruncateTransform(int(text[9:-1]))
    return {"identity": T.IdentityTransform(), "void": T.VoidTransform(),
            "year": T.YearTransform(), "month": T.MonthTransform(), "day": T.DayTransform(),
            "hour": T.HourTransform()}[text]


@pytest.mark.parametrize("kind,transform", CASES)
def test_transform_matches_pyiceberg(kind, transform):
    rng = random.Random(f"{kind}/{transform}")
    ptype, vals = gen(kind, rng)
    got = floe_results(kind, transform, [t for _, t in vals])
    pt = py_transform(transform)
    assert len(got) == len(vals) + 1
    assert got[-1] == "null"
    bad = []
    for (v, text), g in zip(vals, got):
        want = expected_text(kind, ptype, pt, v)
        if transform.startswith("truncate") and kind in ("int", "long") and \
                not -(2 ** (LIMIT[kind] - 1)) <= json.loads(want) < 2 ** (LIMIT[kind] - 1):
            # The minimum value truncates below the type's range: Java wraps
            # around (as floe does), pyiceberg gives the exact integer.
            continue
        if g.startswith("ERROR") or json.loads(g) != json.loads(want):
            bad.append((text, g, want))
    assert not bad, f"{len(bad)} of {len(vals)} differ, e.g. {bad[:5]}"


@pytest.fixture(scope="module")
def java_results():
    """{(kind, transform): Java's results}, every case in one JVM."""
    from java_reader import _classpath
    cases = []
    for kind, transform in CASES:
        _, vals = gen(kind, random.Random(f"{kind}/{transform}"))
        cases.append(json.dumps({"type": kind, "transform": transform,
                                 "values": [json.loads(t) for _, t in vals] + [None]}))
    proc = subprocess.run(["java", "-cp", _classpath(), "floe.Transforms"],
                          input="\n".join(cases) + "\n", capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == len(CASES), proc.stdout[-2000:]
    return {case: json.loads(line) for case, line in zip(CASES, lines)}


@pytest.mark.parametrize("kind,transform", CASES)
def test_transform_matches_java(java_results, kind, transform):
    """The same values through Java's Transforms: equal, the minimum int and
    long under truncate included (both wrap around), and null to null."""
    _, vals = gen(kind, random.Random(f"{kind}/{transform}"))
    got = floe_results(kind, transform, [t for _, t in vals])
    want = java_results[(kind, transform)]
    assert len(got) == len(want) == len(vals) + 1
    assert want[-1] == "null" and got[-1] == "null"
    bad = [(text, g, w) for (_, text), g, w in zip(vals, got, want)
           if w.startswith("ERROR") or g.startswith("ERROR") or json.loads(g) != json.loads(w)]
    assert not bad, f"{len(bad)} of {len(vals)} differ (value, floe, Java), e.g. {bad[:5]}"
