"""Partitioned tables written by floe's table layer (the partitioned writer
and commit, through build*/tests/test_iceberg_tool) read back by real
readers: pyiceberg and DuckDB return the right rows, and pyiceberg's
partition pruning proves floe's partition tuples and manifest-list
summaries right (a filter on a partition source column returns exactly
the matching rows while planning only some of the files; a wrong tuple or
bound would prune a file that holds matching rows).  Every tuple is also
compared with pyiceberg's own transforms of the file's rows.
"""
import datetime
import decimal
import json
import random
from pathlib import Path

import fastavro
import pytest

from iceberg_env import env  # noqa: F401  (fixture)

pytest.importorskip("pyiceberg")
from pyiceberg import expressions as E  # noqa: E402

DECL = ("id bigint not null, ts timestamptz, d date, name text, amount numeric(12,2), "
        "k integer")
UTC = datetime.timezone.utc
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)
NAMES = ["alpha", "alps", "beta", "bet", "été", "漢字かな", "", "zz"]

SPECS = {
    "mixed": "day(ts), bucket(8, id), truncate(3, name), month(d), truncate(100, amount)",
    "coarse": "year(d), hour(ts), k, void(name)",
}


def gen_rows(n, seed):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        us = rng.randint(-3 * 86400 * 10 ** 6, 40 * 86400 * 10 ** 6)
        ts = EPOCH + datetime.timedelta(microseconds=us)
        d = datetime.date(1970, 1, 1) + datetime.timedelta(days=rng.randint(-800, 800))
        amount = decimal.Decimal(rng.randint(-99999, 99999)).scaleb(-2)
        rows.append({
            "id": i * 7 - 300,
            "ts": None if i % 11 == 0 else ts,
            "d": None if i % 13 == 0 else d,
            "name": None if i % 9 == 0 else rng.choice(NAMES),
            "amount": None if i % 17 == 0 else amount,
            "k": None if i % 5 == 0 else rng.randint(-2, 2),
        })
    return rows


def to_json(r):
    return {
        "id": r["id"],
        "ts": r["ts"].isoformat().replace("+00:00", "Z") if r["ts"] else None,
        "d": r["d"].isoformat() if r["d"] else None,
        "name": r["name"],
        "amount": str(r["amount"]) if r["amount"] is not None else None,
        "k": r["k"],
    }


def norm(v):
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=UTC)
        return v.astimezone(UTC).isoformat()
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return f"{v:.2f}"
    return v


def key(r):
    return tuple(repr(norm(r[c])) for c in ("id", "ts", "d", "name", "amount", "k"))


def canon(rows):
    return sorted((tuple(norm(r[c]) for c in ("id", "ts", "d", "name", "amount", "k"))
                   for r in rows), key=repr)


def make_table(env, name, spec, rows):
    out = env.tool("create", name, DECL, json.dumps({"partition-by": spec}))
    assert out.returncode == 0, out.stderr
    res = env.delta(name, {"insert": [to_json(r) for r in rows]})
    return res


def pyiceberg_tuple(table, row):
    """The partition tuple pyiceberg computes for a row (by its own transforms)."""
    spec = table.spec()
    schema = table.schema()
    out = []
    for f in spec.fields:
        src = schema.find_field(f.source_id)
        v = row[src.name]
        if isinstance(v, datetime.datetime):
            v = (v - EPOCH) // datetime.timedelta(microseconds=1)
        elif isinstance(v, datetime.date):
            v = (v - datetime.date(1970, 1, 1)).days
        r = f.transform.transform(src.field_type)(v)
        out.append(norm(r) if not isinstance(r, datetime.date) else (r - datetime.date(1970, 1, 1)).days)
    return tuple(out)


@pytest.mark.parametrize("which", sorted(SPECS))
def test_partitioned_table_read_and_pruned(env, which):
    rows = gen_rows(400, which)
    res = make_table(env, "db.p", SPECS[which], rows)
    md = env.metadata("db.p")
    assert md["default-spec-id"] == 0
    fields = md["partition-specs"][0]["fields"]
    assert [f["field-id"] for f in fields] == list(range(1000, 1000 + len(fields)))
    assert md["last-partition-id"] == 999 + len(fields)
    info = env.inspect("db.p")
    assert info["partition_specs"] == {"default-spec-id": 0, "specs": md["partition-specs"]}
    assert info["live_rows"]["rows"] == len(rows)
    text = env.inspect("db.p", as_json=False)
    assert "partitioning: spec 0 (1 spec in all)" in text, text
    for f in fields:                     # field id, name, transform, the source column's name
        src = next(c["name"] for c in md["schemas"][-1]["fields"] if c["id"] == f["source-id"])
        assert f"{f['field-id']}  {f['name']} = {f['transform']}({src})" in text, text
    want = canon(rows)
    # every reader sees every row
    t = env.pyiceberg().load_table("db.p")
    got = canon(t.scan().to_arrow().to_pylist())
    assert got == want
    con = __import__("iceberg_env")._duck()
    cols = [d[0] for d in con.execute("SELECT * FROM iceberg_scan(?) LIMIT 0",
                                      [env.metadata_location("db.p")]).description]
    drows = con.execute("SELECT * FROM iceberg_scan(?)", [env.metadata_location("db.p")]).fetchall()
    con.close()
    assert canon([dict(zip(cols, r)) for r in drows]) == want
    # each file's tuple is pyiceberg's tuple of every row in it
    files = list(t.scan().plan_files())
    assert len(files) == len(res["files"]) and len(files) > 1
    by_tuple = {}
    for r in rows:
        by_tuple.setdefault(pyiceberg_tuple(t, r), []).append(r)
    seen = set()
    for task in files:
        part = task.file.partition
        tup = tuple(norm(part[i]) if not isinstance(part[i], datetime.date) else
                    (part[i] - datetime.date(1970, 1, 1)).days for i in range(len(fields)))
        assert tup in by_tuple, (tup, task.file.file_path)
        seen.add(tup)
    assert seen == set(by_tuple)
    # pruning: filters on each partition source column
    some = [r for r in rows if r["d"] is not None][0]["d"]
    zero = EPOCH
    filters = [
        (E.EqualTo("id", rows[5]["id"]), lambda r: r["id"] == rows[5]["id"]),
        (E.EqualTo("id", rows[123]["id"]), lambda r: r["id"] == rows[123]["id"]),
        (E.IsNull("k"), lambda r: r["k"] is None),
        (E.EqualTo("k", 1), lambda r: r["k"] == 1),
        (E.GreaterThanOrEqual("d", some.isoformat()), lambda r: r["d"] is not None and r["d"] >= some),
        (E.LessThan("ts", "1970-01-01T00:00:00+00:00"), lambda r: r["ts"] is not None and r["ts"] < zero),
        (E.EqualTo("name", "alps"), lambda r: r["name"] == "alps"),
        (E.StartsWith("name", "be"), lambda r: r["name"] is not None and r["name"].startswith("be")),
    ]
    pruned_any = False
    for flt, pred in filters:
        scan = t.scan(row_filter=flt)
        planned = list(scan.plan_files())
        pruned_any |= len(planned) < len(files)
        got = canon(scan.to_arrow().to_pylist())
        expect = canon([r for r in rows if pred(r)])
        assert got == expect, f"{flt}: {len(got)} rows, expected {len(expect)}"
    assert pruned_any
    # DuckDB with filters on partition source columns (it may prune by the
    # manifests' summaries and tuples too): the right rows
    con = __import__("iceberg_env")._duck()
    loc = env.metadata_location("db.p")
    for sql, pred in [(f"id = {rows[5]['id']}", lambda r: r["id"] == rows[5]["id"]),
                      ("name = 'alps'", lambda r: r["name"] == "alps"),
                      ("k = 1", lambda r: r["k"] == 1),
                      ("ts < TIMESTAMPTZ '1970-01-01 00:00:00+00'",
                       lambda r: r["ts"] is not None and r["ts"] < EPOCH),
                      (f"d >= DATE '{some.isoformat()}'", lambda r: r["d"] is not None and r["d"] >= some)]:
        cur = con.execute(f"SELECT * FROM iceberg_scan(?) WHERE {sql}", [loc])
        cols = [d[0] for d in cur.description]
        got = canon([dict(zip(cols, r)) for r in cur.fetchall()])
        assert got == canon([r for r in rows if pred(r)]), sql
    con.close()


def test_manifest_list_summaries(env):
    rows = gen_rows(200, "summaries")
    make_table(env, "db.s", SPECS["mixed"], rows)
    md = env.metadata("db.s")
    snap = [s for s in md["snapshots"] if s["snapshot-id"] == md["current-snapshot-id"]][0]
    with open(snap["manifest-list"].removeprefix("file://"), "rb") as f:
        entries = list(fastavro.reader(f))
    assert len(entries) == 1
    parts = entries[0]["partitions"]
    assert len(parts) == 5
    t = env.pyiceberg().load_table("db.s")
    tuples = [pyiceberg_tuple(t, r) for r in rows]
    # ts_day (date, 4-byte little-endian days): bounds and nulls
    days = [x[0] for x in tuples if x[0] is not None]
    assert parts[0]["contains_null"] is True
    assert int.from_bytes(parts[0]["lower_bound"], "little", signed=True) == min(days)
    assert int.from_bytes(parts[0]["upper_bound"], "little", signed=True) == max(days)
    # id_bucket: never null
    b = [x[1] for x in tuples]
    assert parts[1]["contains_null"] is False
    assert int.from_bytes(parts[1]["lower_bound"], "little") == min(b)
    assert int.from_bytes(parts[1]["upper_bound"], "little") == max(b)
    # name_trunc (UTF-8 bytes)
    names = [x[2] for x in tuples if x[2] is not None]
    assert parts[2]["lower_bound"] == min(n.encode() for n in names)
    assert parts[2]["upper_bound"] == max(n.encode() for n in names)
    # amount_trunc: decimal as minimal big-endian two's complement of the unscaled value
    amounts = [decimal.Decimal(x[4]) for x in tuples if x[4] is not None]
    lo = int(min(amounts).scaleb(2))
    assert int.from_bytes(parts[4]["lower_bound"], "big", signed=True) == lo
    assert parts[3]["contains_nan"] is None
    # the manifest's header carries the spec
    with open(entries[0]["manifest_path"].removeprefix("file://"), "rb") as f:
        r = fastavro.reader(f)
        assert json.loads(r.metadata["partition-spec"]) == md["partition-specs"][0]["fields"]
        assert r.metadata["partition-spec-id"] == "0"


def java_value(v):
    """A Java partition value (tagged JSON) as pyiceberg_tuple gives it."""
    if isinstance(v, dict):
        (tag, x), = v.items()
        if tag == "date":
            return x
        if tag == "dec":
            return f"{decimal.Decimal(int(x)).scaleb(-2):.2f}"
    return v


def test_java_reads_rows_and_partitions(env):
    """Java Iceberg reads the rows, each planned file's partition values
    (which must be pyiceberg's tuple of its rows), and prunes by floe's
    partitions with a filter on the bucket source column."""
    java_reader = pytest.importorskip("java_reader")
    rows = gen_rows(150, "java")
    make_table(env, "db.j", SPECS["mixed"], rows)
    t = env.pyiceberg().load_table("db.j")
    want_tuples = {pyiceberg_tuple(t, r) for r in rows}
    files = java_reader.java("partitions", env.db, env.warehouse, "db.j")
    assert {tuple(java_value(v) for v in f["partition"]) for f in files} == want_tuples
    assert all(f["spec"] == 0 for f in files)
    one = rows[17]["id"]
    pruned = java_reader.java("partitions", env.db, env.warehouse, "db.j", "id", one)
    bucket = pyiceberg_tuple(t, rows[17])[1]
    assert 0 < len(pruned) < len(files)
    assert all(f["partition"][1] == bucket for f in pruned)
    got = java_reader.read_rows(env.db, env.warehouse, "db.j")
    assert sorted(r[0] for r in got) == sorted(r["id"] for r in rows)
    names = sorted((r[0], r[3]) for r in got)
    assert names == sorted((r["id"], r["name"]) for r in rows)


def test_floe_append_partition_by(env):
    """`floe append --partition-by` creates a partitioned table (the spec
    never kept as a property) and routes rows; a transform that does not
    fit its column is an error naming the partition field."""
    rows = gen_rows(120, "append")
    env.append("db.a", [to_json(r) for r in rows], schema=DECL,
               extra=["--partition-by", "hours(ts), bucket(4, id), truncate(2, name)"])
    md = env.metadata("db.a")
    assert [f["name"] for f in md["partition-specs"][0]["fields"]] == \
        ["ts_hour", "id_bucket", "name_trunc"]
    assert "floe.partition-by" not in md.get("properties", {})
    t = env.pyiceberg().load_table("db.a")
    assert canon(t.scan().to_arrow().to_pylist()) == canon(rows)
    one = rows[3]["id"]
    assert len(list(t.scan(row_filter=E.EqualTo("id", one)).plan_files())) < \
        len(list(t.scan().plan_files()))
    assert [r["id"] for r in t.scan(row_filter=E.EqualTo("id", one)).to_arrow().to_pylist()] == [one]
    res = env.append("db.b", [{"id": 1}], schema="id bigint not null", check=False,
                     extra=["--partition-by", "day(id)"])
    assert res.returncode == 1 and "partition field id_day" in res.stderr
    assert "does not apply to column id of type long" in res.stderr
