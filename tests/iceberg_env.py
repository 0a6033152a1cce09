"""A floe catalog in a temporary directory, and the real readers of its tables.

floe writes through the `floe` program (append, inspect) or through
build*/tests/test_iceberg_tool (row deltas with deletes, races).  What it
writes is read back by pyiceberg (SqlCatalog on the same SQLite file and
catalog name), DuckDB's iceberg extension (iceberg_scan on the current
metadata file) and Java Iceberg (JdbcCatalog + IcebergGenerics), and every
reader's rows are put into rowgen's canonical form so tests compare with ==.
"""
import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog

import iceberg_readers
import java_reader
import readers
from conftest import BUILD, run_floe, tool_bin
from rowgen import RANGES, write_ndjson

CATALOG = "floe"


def _duck():
    return iceberg_readers.duck()


def row_key(row):
    """A sort key for canonical rows (which mix None and values)."""
    return repr(row)


def fix_java(col, v):
    """Java returns jsonb as its stored text: canonicalise it like readers.canon."""
    if v is None:
        return None
    k = col.kind
    if k == "jsonb":
        return ("json", json.dumps(json.loads(v), sort_keys=True))
    if k == "list":
        return [fix_java(col.elem, x) for x in v]
    if k == "record":
        return tuple(fix_java(f, x) for f, x in zip(col.fields, v))
    if k == "map":
        return [(key, fix_java(col.elem, x)) for key, x in v]
    return v


class Env:
    def __init__(self, tmp: Path):
        self.dir = tmp
        self.db = tmp / "catalog.db"
        self.warehouse = f"file://{tmp}/warehouse"
        self.uri = f"sqlite:///{self.db}"          # SQLAlchemy form: absolute path

    # ---- floe ------------------------------------------------------------------
    def cat_args(self):
        return ["--catalog", self.uri, "--warehouse", self.warehouse,
                "--catalog-name", CATALOG]

    def append(self, table, rows, schema=None, check=True, extra=()):
        path = self.dir / f"in-{os.urandom(4).hex()}.ndjson"
        write_ndjson(path, rows)
        args = ["append", "--table", table, "--input", path, *self.cat_args(), *extra]
        if schema is not None:
            args += ["--schema", schema]
        return run_floe(*args, check=check)

    def inspect(self, table, as_json=True):
        args = ["inspect", "--table", table, *self.cat_args()] + (["--json"] if as_json else [])
        res = run_floe(*args)
        return json.loads(res.stdout) if as_json else res.stdout

    def tool(self, *args, check=True):
        exe = tool_bin("test_iceberg_tool")
        if not os.path.exists(exe):
            pytest.fail(f"{exe} is not built (make)")
        p = subprocess.run([exe, self.uri, CATALOG, self.warehouse, *map(str, args)],
                           capture_output=True, text=True, timeout=600)
        assert "runtime error" not in p.stderr and "Sanitizer" not in p.stderr, p.stderr
        if check:
            assert p.returncode == 0, p.stderr
        return p

    def delta(self, table, spec, check=True):
        path = self.dir / f"delta-{os.urandom(4).hex()}.json"
        path.write_text(json.dumps(spec))
        p = self.tool("delta", table, path, check=False)
        out = json.loads(p.stdout.splitlines()[-1])
        if check:
            assert out["result"] == "FLOE_OK", out
        return out

    # ---- catalog state ----------------------------------------------------------
    def metadata_location(self, table):
        ns, name = table.rsplit(".", 1)
        con = sqlite3.connect(self.db)
        try:
            (loc,), = con.execute(
                "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND"
                " table_namespace = ? AND table_name = ?", (CATALOG, ns, name)).fetchall()
        finally:
            con.close()
        return loc

    def metadata(self, table):
        loc = self.metadata_location(table)
        return json.loads(Path(loc.removeprefix("file://")).read_text())

    def pyiceberg(self):
        return SqlCatalog(CATALOG, uri=self.uri, warehouse=self.warehouse)

    # ---- readers (canonical rows, sorted) ------------------------------------------
    def read_pyiceberg(self, table, cols, snapshot_id=None):
        t = self.pyiceberg().load_table(table)
        scan = t.scan(snapshot_id=snapshot_id) if snapshot_id else t.scan()
        return sorted(readers.canon_rows(cols, scan.to_arrow().to_pylist()), key=row_key)

    def read_duckdb(self, table, cols, snapshot_id=None):
        con = _duck()
        loc = self.metadata_location(table)
        if snapshot_id:
            rows = con.execute(f"SELECT * FROM iceberg_scan(?, snapshot_from_id={snapshot_id})",
                               [loc]).fetchall()
        else:
            rows = con.execute("SELECT * FROM iceberg_scan(?)", [loc]).fetchall()
        con.close()
        return sorted(readers.canon_rows(cols, rows), key=row_key)

    def read_java(self, table, cols, snapshot_id=None):
        rows = java_reader.read_rows(self.db, self.warehouse, table, snapshot_id=snapshot_id,
                                     catalog=CATALOG)
        return sorted([tuple(fix_java(c, v) for c, v in zip(cols, r)) for r in rows], key=row_key)

    def read_all(self, table, cols, snapshot_id=None, java=True, pyiceberg=True):
        out = {"duckdb": self.read_duckdb(table, cols, snapshot_id)}
        if pyiceberg:
            out["pyiceberg"] = self.read_pyiceberg(table, cols, snapshot_id)
        if java:
            out["java"] = self.read_java(table, cols, snapshot_id)
        return out


def _struct_items(col):
    return col.kind in ("list", "map") and (col.elem.kind == "record" or col.elem.kind in RANGES)


def pyiceberg_view(col, v):
    """pyiceberg 0.12 reads a null list or map whose items are structs as an
    empty one (the Parquet files hold null: pyarrow, DuckDB and Java read it
    so).  Expected values are adjusted to that for pyiceberg alone."""
    if v is None:
        return [] if _struct_items(col) else None
    k = col.kind
    if k == "list":
        return [pyiceberg_view(col.elem, x) for x in v]
    if k == "record":
        return tuple(pyiceberg_view(f, x) for f, x in zip(col.fields, v))
    if k == "map":
        return [(key, pyiceberg_view(col.elem, x)) for key, x in v]
    return v


def assert_all_read(env, table, cols, expected, snapshot_id=None, java=True, pyiceberg=True):
    for name, got in env.read_all(table, cols, snapshot_id, java, pyiceberg).items():
        rows = expected
        if name == "pyiceberg":
            rows = [tuple(pyiceberg_view(c, v) for c, v in zip(cols, r)) for r in expected]
        want = sorted(rows, key=row_key)
        assert len(got) == len(want), f"{name}: {len(got)} rows, expected {len(want)}"
        for g, w in zip(got, want):
            assert g == w, f"{name} differs:\n got  {g}\n want {w}"


def parquet_rows(path, cols):
    return readers.canon_rows(cols, pq.read_table(path.removeprefix("file://")).to_pylist())


@pytest.fixture
def env(tmp_path):
    return Env(tmp_path)


__all__ = ["Env", "env", "assert_all_read", "row_key", "parquet_rows", "BUILD", "CATALOG"]
