"""Iceberg tables read back by real engines: DuckDB's iceberg extension
(iceberg_scan on a metadata file, time travel by snapshot id) and pyiceberg
(SqlCatalog on floe's SQLite file)."""
import duckdb
from duckdb_extensions import import_extension

from readers import canon_rows

# Every DuckDB extension any test loads.  scripts/install-deps.sh installs
# them too; importing all of them here, whichever test comes first, means no
# test depends on what another left behind (DuckDB would otherwise try to
# download an extension it autoloads, e.g. httpfs for REST catalogs).
EXTENSIONS = ("avro", "iceberg", "httpfs")
_loaded = False


def duck():
    """A DuckDB connection with the iceberg and httpfs extensions loaded."""
    global _loaded
    if not _loaded:
        for ext in EXTENSIONS:
            import_extension(ext)
        _loaded = True
    con = duckdb.connect()
    con.execute("LOAD iceberg")
    con.execute("LOAD httpfs")
    con.execute("SET TimeZone = 'UTC'")
    return con


def duckdb_rows(metadata_location, cols, snapshot_id=None):
    """The table's rows (at a snapshot, when given) in rowgen's canonical form."""
    return duckdb_snapshot_rows(metadata_location, cols, [snapshot_id])[0]


def duckdb_snapshot_rows(metadata_location, cols, snapshot_ids):
    """[rows at each snapshot id] (None: the current one), on one connection."""
    con = duck()
    out = []
    try:
        for sid in snapshot_ids:
            if sid is None:
                rows = con.execute("SELECT * FROM iceberg_scan(?)", [metadata_location]).fetchall()
            else:
                rows = con.execute("SELECT * FROM iceberg_scan(?, snapshot_from_id = ?)",
                                   [metadata_location, sid]).fetchall()
            out.append(canon_rows(cols, rows))
    finally:
        con.close()
    return out


def pyiceberg_catalog(db, warehouse, name="floe"):
    from pyiceberg.catalog.sql import SqlCatalog
    return SqlCatalog(name, uri=f"sqlite:///{db}", warehouse=warehouse)


def pyiceberg_snapshot_rows(db, warehouse, table, cols, snapshot_ids):
    """[rows at each snapshot id] read with pyiceberg (its own planning and
    delete application; it refuses equality deletes)."""
    t = pyiceberg_catalog(db, warehouse).load_table(table)
    return [canon_rows(cols, t.scan(snapshot_id=sid).to_arrow().to_pylist())
            for sid in snapshot_ids]


def files_ever_added(db, warehouse, table):
    """Every file any snapshot's manifests list, with pyiceberg:
    {path: (content, file_format)} (EQUALITY_DELETES, POSITION_DELETES, DATA;
    PARQUET, PUFFIN)."""
    t = pyiceberg_catalog(db, warehouse).load_table(table)
    out = {}
    for snap in t.snapshots():
        for m in snap.manifests(t.io):
            for e in m.fetch_manifest_entry(t.io, discard_deleted=False):
                out[e.data_file.file_path] = (e.data_file.content.name,
                                              e.data_file.file_format.name)
    return out
