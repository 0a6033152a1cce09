"""Format v3 tables: created by pyiceberg and written by floe (row lineage,
deletion vectors), and floe's own v3 tables' lineage numbers as Java, DuckDB
and pyiceberg see them."""
import json

import pytest

from iceberg_env import assert_all_read, env  # noqa: F401  (fixture)
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType
from test_deletes_readers import COLS, DECL, check_manifests, commit, metadata, tool


def test_pyiceberg_cannot_create_v3(env):
    """pyiceberg 0.12 reads v3 tables but refuses to write v3 metadata."""
    cat = env.pyiceberg()
    cat.create_namespace("db")
    schema = Schema(NestedField(1, "id", LongType(), required=True),
                    NestedField(2, "name", StringType(), required=False))
    with pytest.raises(NotImplementedError):
        cat.create_table("db.py3", schema=schema, properties={"format-version": "3"})


def test_java_upgraded_v3_table_written_by_floe(env):
    """A table with Java-written data, upgraded to v3 by Java, then written
    by floe: carried manifests get first_row_ids, deletes become DVs."""
    import engines
    tool(env, "create", "db.j3", DECL, 2)
    engines.append(env.db, env.warehouse, "db.j3", [{"id": i, "name": str(i)} for i in range(4)])
    engines.set_property(env.db, env.warehouse, "db.j3", "format-version", "3")
    md = metadata(env, "db.j3")
    assert md["format-version"] == 3 and md["next-row-id"] == 0
    java_file = json.loads(tool(env, "plan", "db.j3").stdout)["data"][0]["path"]
    a = commit(env, "db.j3", {"insert": [{"id": 10, "name": "a"}, {"id": 11, "name": "b"}]})
    commit(env, "db.j3", {"deletes": [[java_file, 1], [a["inserted"][0][0], 0]]})
    commit(env, "db.j3", {"deletes": [[java_file, 3]]})
    md = metadata(env, "db.j3")
    ours = md["snapshots"][-3:]
    assert [s["first-row-id"] for s in ours] == [0, 6, 6]
    assert [s["added-rows"] for s in ours] == [6, 0, 0]  # the Java manifest got ids too
    assert md["next-row-id"] == 6
    check_manifests(env, "db.j3", 3)
    assert json.loads(tool(env, "dv", "db.j3", java_file).stdout) == [1, 3]
    assert_all_read(env, "db.j3", COLS, [(0, "0"), (2, "2"), (11, "b")])


def test_floe_v3_lineage_numbers(env):
    tool(env, "create", "db.l3", DECL, 3)
    commit(env, "db.l3", {"insert": [{"id": i, "name": None} for i in range(3)]})
    commit(env, "db.l3", {"insert": [{"id": 3, "name": "z"}]})
    md = metadata(env, "db.l3")
    assert "format-version" not in md.get("properties", {})
    assert [(s["first-row-id"], s["added-rows"]) for s in md["snapshots"]] == [(0, 3), (3, 1)]
    assert md["next-row-id"] == 4
    plan = json.loads(tool(env, "plan", "db.l3").stdout)
    assert sorted(d["first_row_id"] for d in plan["data"]) == [0, 3]
    t = env.pyiceberg().load_table("db.l3")
    assert t.metadata.format_version == 3
    assert_all_read(env, "db.l3", COLS, [(0, None), (1, None), (2, None), (3, "z")])
