"""SPEC.md section 4: compatibility of a declared schema with an existing
table (field ids not compared, legacy uuid columns), where data files go
(write.data.path, write.folder-storage.path, trailing slashes, a catalog
reporting a metadata file as the table location), and no URI with "//"
after its scheme anywhere in what floe writes.
"""
import glob
import re
import uuid
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import (FixedType, IntegerType, ListType, LongType, MapType, NestedField,
                             StringType, StructType, UUIDType)

from iceberg_env import assert_all_read, env  # noqa: F401  (fixture)
from rowgen import Col, render

BASE = "id bigint not null, name text, price numeric(12,2), addr record(street text, zip integer not null)"


def snapshot_count(env, table):
    return len(env.inspect(table)["snapshots"])


@pytest.mark.parametrize("declared, where, why", [
    ("id integer not null, name text, price numeric(12,2), addr record(street text, zip integer not null)",
     'column "id"', "declared type int, the table has long"),
    ("id bigint, name text, price numeric(12,2), addr record(street text, zip integer not null)",
     'column "id"', "declared nullable, the table's column is required"),
    ("id bigint not null, name text, price numeric(12,3), addr record(street text, zip integer not null)",
     'column "price"', "declared type decimal(12,3), the table has decimal(12,2)"),
    ("id bigint not null, name text, price numeric(12,2), addr record(street text, zip bigint not null)",
     'column "addr.zip"', "declared type long, the table has int"),
    ("id bigint not null, name text, price numeric(12,2), addr record(street text)",
     'column "addr.zip"', "the table has this column, the declaration does not"),
    ("id bigint not null, name text, price numeric(12,2), addr record(street text, zip integer not null), x text",
     'column "x"', "declared, but the table has no such column"),
    ("id bigint not null, price numeric(12,2), name text, addr record(street text, zip integer not null)",
     'column "price"', 'declared column "price", the table has "name" in its place'),
    ("id bigint not null, name text[], price numeric(12,2), addr record(street text, zip integer not null)",
     'column "name"', "declared type list<string>, the table has string"),
])
def test_incompatible_declarations_are_refused(env, declared, where, why):
    env.append("db.t", [{"id": 1, "name": "a", "addr": {"zip": 1}}], schema=BASE)
    files_before = sorted(glob.glob(str(env.dir / "warehouse/db/t/**/*"), recursive=True))
    res = env.append("db.t", [{"id": 2}], schema=declared, check=False)
    assert res.returncode == 1
    assert "incompatible" not in res.stdout
    err = res.stderr
    assert where in err and why in err, err
    assert "declared: " in err and "table: " in err                 # both schemas shown
    assert "table: id: long not null, name: string, price: decimal(12,2)" in err
    assert snapshot_count(env, "db.t") == 1
    assert sorted(glob.glob(str(env.dir / "warehouse/db/t/**/*"), recursive=True)) == files_before


def test_compatible_declaration_and_table_schema(env):
    cols = [Col("id", "bigint", not_null=True), Col("name", "text"), Col("price", "numeric", p=12, s=2),
            Col("addr", "record", fields=[Col("street", "text"), Col("zip", "integer", not_null=True)])]
    env.append("db.t", [{"id": 1, "name": "a", "price": "1.50", "addr": {"zip": 9}}], schema=BASE)
    env.append("db.t", [{"id": 2, "price": 3}], schema=render(cols))       # same, re-declared
    env.append("db.t", [{"id": 3, "addr": {"street": "s", "zip": 1}}])       # the table's own
    assert_all_read(env, "db.t", cols, [(1, "a", ("dec", 150), (None, 9)), (2, None, ("dec", 300), None),
                                        (3, None, None, ("s", 1))])


def breadth_first_table(env):
    """A pyiceberg table: pyiceberg numbers field ids breadth-first."""
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "addr", StructType(NestedField(3, "street", StringType()),
                                          NestedField(4, "zip", IntegerType(), required=True))),
        NestedField(5, "tags", ListType(6, StringType(), element_required=False)),
        NestedField(7, "attrs", MapType(8, StringType(), 9, LongType(), value_required=False)),
        NestedField(10, "name", StringType()),
    )
    cat = env.pyiceberg()
    cat.create_namespace("db")
    return cat.create_table("db.bf", schema=schema)


def test_renumbered_field_ids(env):
    t = breadth_first_table(env)
    ids = {f.name: f.field_id for f in t.schema().fields}
    assert ids == {"id": 1, "addr": 2, "tags": 3, "attrs": 4, "name": 5}   # not depth-first
    arrow = t.schema().as_arrow()
    t.append(pa.Table.from_pylist([{"id": 1, "addr": {"street": "p", "zip": 5}, "tags": ["x"],
                                    "attrs": [("k", 1)], "name": "py"}], schema=arrow))
    decl = ("id bigint not null, addr record(street text, zip integer not null), tags text[],"
            " attrs map[text=>bigint], name text")
    env.append("db.bf", [{"id": 2, "addr": {"street": "f", "zip": 6}, "tags": ["y", None],
                          "attrs": {"a": 2, "b": None}, "name": "floe"}], schema=decl)
    env.append("db.bf", [{"id": 3, "tags": [], "attrs": {}, "name": "own schema"}])
    cols = [Col("id", "bigint"), Col("addr", "record", fields=[Col("street", "text"), Col("zip", "integer")]),
            Col("tags", "list", elem=Col("", "text")), Col("attrs", "map", elem=Col("", "bigint")),
            Col("name", "text")]
    assert_all_read(env, "db.bf", cols, [
        (1, ("p", 5), ["x"], [("k", 1)], "py"),
        (2, ("f", 6), ["y", None], [("a", 2), ("b", None)], "floe"),
        (3, None, [], [], "own schema"),
    ])
    # floe's data files carry the table's (breadth-first) ids: counts for the
    # primitive columns outside lists and maps, sizes for every leaf
    sch = env.pyiceberg().load_table("db.bf").schema()
    want = sorted(sch.find_field(n).field_id for n in ("id", "addr.street", "addr.zip", "name"))
    leaves = sorted(want + [sch.find_field(n).field_id for n in
                            ("tags.element", "attrs.key", "attrs.value")])
    assert want == [1, 5, 6, 7]
    files = env.pyiceberg().load_table("db.bf").inspect.files().to_pylist()
    floe_files = [f for f in files if "/data-" in f["file_path"]]
    assert len(floe_files) == 2
    for f in floe_files:
        assert sorted(k for k, _ in f["value_counts"]) == want, f["value_counts"]
        assert sorted(k for k, _ in f["column_sizes"]) == leaves, f["column_sizes"]


@pytest.mark.parametrize("legacy", [FixedType(16), UUIDType()])
def test_legacy_uuid_column(env, legacy):
    cat = env.pyiceberg()
    cat.create_namespace("db")
    cat.create_table("db.u", schema=Schema(NestedField(1, "id", LongType(), required=True),
                                           NestedField(2, "u", legacy)))
    u1, u2 = uuid.UUID(int=0x0123456789abcdef0123456789abcdef), uuid.uuid4()
    env.append("db.u", [{"id": 1, "u": str(u1).upper()}, {"id": 2, "u": str(u2)}, {"id": 3}],
               schema="id bigint not null, u uuid")
    bad = env.append("db.u", [{"id": 4, "u": "not-a-uuid"}], schema="id bigint not null, u uuid",
                     check=False)
    assert bad.returncode == 1 and ":1:" in bad.stderr and '"u"' in bad.stderr
    rows = env.pyiceberg().load_table("db.u").scan().to_arrow().to_pylist()
    got = sorted((r["id"], r["u"]) for r in rows)
    norm = [(i, uuid.UUID(bytes=bytes(v)) if isinstance(v, (bytes, bytearray)) else
             (uuid.UUID(str(v)) if v is not None else None)) for i, v in got]
    assert norm == [(1, u1), (2, u2), (3, None)]
    # text declared where the table holds fixed[16]/uuid: accepted, values must be uuids
    env.append("db.u", [{"id": 5, "u": str(u2)}], schema="id bigint not null, u text")
    assert len(env.pyiceberg().load_table("db.u").scan().to_arrow()) == 4


# ---- locations -----------------------------------------------------------------------------

def strip_scheme(s):
    return re.sub(r"^[a-z][a-z0-9+.-]*:///?", "", s)


def assert_no_double_slash(value, where):
    if isinstance(value, str):
        if "://" in value or value.startswith("file:"):
            assert "//" not in strip_scheme(value), f"{where}: {value}"
    elif isinstance(value, dict):
        for k, v in value.items():
            assert_no_double_slash(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            assert_no_double_slash(v, f"{where}[{i}]")


def assert_clean_uris(env, table):
    md = env.metadata(table)
    md.pop("properties")                  # the user's own values, as given
    assert_no_double_slash(md, "metadata")
    for snap in md["snapshots"]:
        with open("/" + strip_scheme(snap["manifest-list"]), "rb") as f:
            lists = list(fastavro.reader(f))
        for m in lists:
            assert_no_double_slash(m["manifest_path"], "manifest_path")
            with open("/" + strip_scheme(m["manifest_path"]), "rb") as f:
                for e in fastavro.reader(f):
                    assert_no_double_slash(e["data_file"]["file_path"], "file_path")


@pytest.mark.parametrize("props, sub", [
    ({"write.data.path": "{d}/elsewhere///"}, "elsewhere"),
    ({"write.folder-storage.path": "{d}/folder/"}, "folder"),
    ({"write.data.path": "{d}/wins/", "write.folder-storage.path": "{d}/loses"}, "wins"),
])
def test_data_location_properties(env, props, sub):
    import json
    props = {k: v.format(d=f"file://{env.dir}") for k, v in props.items()}
    env.tool("create", "db.loc", "id bigint not null", json.dumps(props))
    env.append("db.loc", [{"id": 1}, {"id": 2}])
    files = glob.glob(str(env.dir / sub / "*.parquet"))
    assert len(files) == 1
    assert not glob.glob(str(env.dir / "warehouse/db/loc/data/*"))
    assert_clean_uris(env, "db.loc")
    info = env.inspect("db.loc")
    assert info["data_location"] == f"file://{env.dir}/{sub}"
    assert_all_read(env, "db.loc", [Col("id", "bigint")], [(1,), (2,)])


def test_trailing_slash_warehouse(env):
    env.warehouse = f"file://{env.dir}/wh///"
    env.append("db.w", [{"id": 1}], schema="id bigint not null")
    assert glob.glob(str(env.dir / "wh/db/w/data/*.parquet"))
    assert_clean_uris(env, "db.w")
    env.warehouse = f"file://{env.dir}/wh"
    assert_all_read(env, "db.w", [Col("id", "bigint")], [(1,)])


def test_metadata_file_as_table_location(env):
    root = env.dir / "tables" / "odd"
    loc = f"file://{root}/metadata/00000-3a6ae4bd-5b28-4a4f-9d62-2f2d3b4a4e8b.metadata.json"
    env.tool("create", "db.odd", "id bigint not null", "{}", loc)
    assert env.metadata("db.odd")["location"] == loc
    env.append("db.odd", [{"id": 7}])
    assert len(glob.glob(str(root / "data" / "*.parquet"))) == 1
    assert len(glob.glob(str(root / "metadata" / "snap-*.avro"))) == 1
    assert env.inspect("db.odd")["data_location"] == f"file://{root}/data"
    assert_clean_uris(env, "db.odd")
    assert_all_read(env, "db.odd", [Col("id", "bigint")], [(7,)])
