"""Cross-checks of floe's Avro object container files against real readers
and writers: fastavro (every codec) and pyiceberg (Iceberg manifests).

floe's side is driven through build/tests/test_avro_tool (the build dir
comes from $FLOE_BUILD, default "build"):
  write-sample OUT CODEC       4 objects using every Avro type
  write-many OUT CODEC N BLOCK N small objects in BLOCK-byte blocks
  write-manifest OUT CODEC     an Iceberg v2 manifest with 3 entries
  dump IN                      the decoded file as JSON
"""
import datetime
import decimal
import io
import json
import os
import struct
import subprocess

import fastavro
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, os.environ.get("FLOE_BUILD", "build"), "tests", "test_avro_tool")
CODECS = ["null", "deflate", "snappy", "zstandard"]

INT64_MAX = 2**63 - 1
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
DAY0 = datetime.date(1970, 1, 1)


def tool(*args, check=True):
    assert os.path.exists(TOOL), f"{TOOL} is missing: run make first"
    p = subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def dump(path):
    return json.loads(tool("dump", path).stdout)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def longlist(n):
    node = None
    for v in range(1, n + 1):
        node = {"value": v, "next": node}
    return node


def ts(micros):
    return EPOCH + datetime.timedelta(microseconds=micros)


# The 4 objects test_avro_tool's write-sample writes, as fastavro reads them
# (spelled out independently of the C code).
SAMPLE = [
    {"n": None, "b": True, "i": -2**31, "l": -2**63, "f": 1.5, "d": -0.0, "by": b"",
     "s": "héllo ✓", "fx": b"abcd", "e": "RED", "arr": [], "m": {"a": "x", "b": ""},
     "opt": None, "u": None,
     "nested": {"pts": [{"x": 1, "y": 2}, {"x": -3, "y": 4}],
                "imap": [{"key": 1, "value": None}, {"key": 2, "value": b"\x01"}]},
     "dec": decimal.Decimal("123.45"), "dt": DAY0 + datetime.timedelta(days=19000),
     "ts": ts(1700000000123456), "decf": decimal.Decimal("0.0000"), "list": longlist(1)},
    {"n": None, "b": False, "i": 2**31 - 1, "l": INT64_MAX, "f": float("-inf"), "d": 1e300,
     "by": b"\x00", "s": "", "fx": b"\x00\x01\x02\xff", "e": "GREEN", "arr": [INT64_MAX],
     "m": {}, "opt": "present", "u": 42, "nested": {"pts": [], "imap": []},
     "dec": decimal.Decimal("-2.56"), "dt": datetime.date(1, 1, 1), "ts": ts(-1),
     "decf": decimal.Decimal("-0.0001"), "list": longlist(2)},
    {"n": None, "b": True, "i": 0, "l": 1, "f": 0.0, "d": 2.5, "by": b"\x00\xff", "s": "plain",
     "fx": b"abcd", "e": "BLUE", "arr": [INT64_MAX, -1000000007], "m": {}, "opt": None,
     "u": "str", "nested": {"pts": [], "imap": []}, "dec": decimal.Decimal("0.00"),
     "dt": DAY0 + datetime.timedelta(days=19002), "ts": ts(1700000000123458),
     "decf": decimal.Decimal("0.0002"), "list": longlist(3)},
    {"n": None, "b": False, "i": -1, "l": -64, "f": f32(3.4028235e38), "d": -1.0 / 3.0,
     "by": b"\x00\xff\x10", "s": "\U0001f41f", "fx": b"\x00\x01\x02\xff", "e": "RED",
     "arr": [INT64_MAX, -1000000007, -2000000014], "m": {}, "opt": "present",
     "u": {"x": 7, "y": -8}, "nested": {"pts": [], "imap": []},
     "dec": decimal.Decimal("327.67"), "dt": DAY0 + datetime.timedelta(days=19003),
     "ts": ts(1700000000123459), "decf": decimal.Decimal("0.0003"), "list": longlist(4)},
]

SAMPLE_FIELD_IDS = set(range(1, 12)) | {13} | set(range(16, 21)) | set(range(22, 31))


def walk_attrs(schema, key, found):
    """Every value of attribute `key` anywhere in a JSON schema."""
    if isinstance(schema, dict):
        if key in schema:
            found.append(schema[key])
        for v in schema.values():
            walk_attrs(v, key, found)
    elif isinstance(schema, list):
        for v in schema:
            walk_attrs(v, key, found)
    return found


def fields_by_name(record):
    return {f["name"]: f for f in record["fields"]}


@pytest.fixture(scope="module")
def schema_text(tmp_path_factory):
    path = tmp_path_factory.mktemp("avro") / "schema.avro"
    return tool("write-sample", path, "null").stdout


# ---- floe writes, fastavro reads ---------------------------------------------

@pytest.mark.parametrize("codec", CODECS)
def test_fastavro_reads_floe_sample(tmp_path, codec):
    path = tmp_path / f"sample-{codec}.avro"
    schema_text = tool("write-sample", path, codec).stdout
    with open(path, "rb") as f:
        r = fastavro.reader(f)
        objects = list(r)
        assert r.codec == codec
        assert r.metadata["avro.schema"] == schema_text      # byte for byte
        assert r.metadata["floe.test"] == "sample"
        parsed = r.writer_schema
    assert objects == SAMPLE
    # the Iceberg id attributes survive, in the raw text and in fastavro's schema
    for schema in (json.loads(schema_text), parsed):
        assert set(walk_attrs(schema, "field-id", [])) == SAMPLE_FIELD_IDS
        assert sorted(walk_attrs(schema, "element-id", [])) == [12, 21]
        assert walk_attrs(schema, "key-id", []) == [14]
        assert walk_attrs(schema, "value-id", []) == [15]
    assert fields_by_name(parsed)["s"]["doc"] == "text"


@pytest.mark.parametrize("codec", ["null", "deflate", "zstandard"])
def test_fastavro_reads_many_blocks(tmp_path, codec):
    path = tmp_path / "many.avro"
    n = 5000
    tool("write-many", path, codec, n, 2048)
    with open(path, "rb") as f:
        blocks = list(fastavro.block_reader(f))
    assert len(blocks) > 20
    assert sum(b.num_records for b in blocks) == n
    with open(path, "rb") as f:
        rows = list(fastavro.reader(f))
    assert len(rows) == n
    for i in (0, 1, 2, 3, 1234, n - 1):
        assert rows[i] == {"id": i * 7919 - 5000000, "name": f"row-{i}",
                           "score": None if i % 3 == 0 else i / 4.0}
    # and floe reads its own file back the same way
    objs = dump(path)["objects"]
    assert len(objs) == n
    assert objs[4] == {"id": 4 * 7919 - 5000000, "name": "row-4",
                       "score": {"$union": 1, "value": 1.0}}


def read_varint(data, pos):
    shift = z = 0
    while True:
        b = data[pos]
        pos += 1
        z |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (z >> 1) ^ -(z & 1), pos


def raw_blocks(data):
    """(count, stored bytes) of each block, parsed by hand from the spec."""
    assert data[:4] == b"Obj\x01"
    pos = 4
    while True:                                    # the metadata map
        count, pos = read_varint(data, pos)
        if count == 0:
            break
        if count < 0:
            count = -count
            _, pos = read_varint(data, pos)
        for _ in range(2 * count):
            n, pos = read_varint(data, pos)
            pos += n
    sync = data[pos:pos + 16]
    pos += 16
    blocks = []
    while pos < len(data):
        count, pos = read_varint(data, pos)
        size, pos = read_varint(data, pos)
        blocks.append((count, data[pos:pos + size]))
        pos += size
        assert data[pos:pos + 16] == sync
        pos += 16
    return blocks


def test_floe_snappy_blocks_carry_big_endian_crc32(tmp_path):
    """fastavro does not verify the snappy checksum, so check it here."""
    import zlib

    import cramjam

    path = tmp_path / "crc.avro"
    tool("write-many", path, "snappy", 3000, 4096)
    blocks = raw_blocks(path.read_bytes())
    assert len(blocks) > 5
    assert sum(c for c, _ in blocks) == 3000
    for _, stored in blocks:
        plain = bytes(cramjam.snappy.decompress_raw(stored[:-4]))
        assert stored[-4:] == struct.pack(">I", zlib.crc32(plain))


# ---- fastavro writes, floe reads -----------------------------------------------

def from_dump(schema, v, names):
    """floe's dump JSON -> the values fastavro would return for `schema`."""
    if isinstance(schema, list):
        assert set(v) == {"$union", "value"}, v
        return from_dump(schema[v["$union"]], v["value"], names)
    if isinstance(schema, str):
        if schema in names:
            return from_dump(names[schema], v, names)
        schema = {"type": schema}
    t = schema["type"]
    if isinstance(t, (dict, list)) or (isinstance(t, str) and t in names):
        return from_dump(t, v, names)
    lt = schema.get("logicalType")
    if t in ("record", "enum", "fixed"):
        names[schema["name"]] = schema
    if t == "record":
        assert list(v) == [f["name"] for f in schema["fields"]]
        return {f["name"]: from_dump(f["type"], v[f["name"]], names) for f in schema["fields"]}
    if t == "array":
        return [from_dump(schema["items"], x, names) for x in v]
    if t == "map":
        return {k: from_dump(schema["values"], x, names) for k, x in v.items()}
    if t in ("bytes", "fixed"):
        raw = bytes.fromhex(v["$bytes"])
        if lt == "decimal":
            unscaled = int.from_bytes(raw, "big", signed=True)
            return decimal.Decimal(unscaled).scaleb(-schema.get("scale", 0))
        return raw
    if t in ("float", "double") and isinstance(v, dict):
        return float(v["$float"].replace("Infinity", "inf"))
    if t == "int" and lt == "date":
        return DAY0 + datetime.timedelta(days=v)
    if t == "long" and lt == "timestamp-micros":
        return ts(v)
    return v


@pytest.mark.parametrize("codec", CODECS)
def test_floe_reads_fastavro_files(tmp_path, codec, schema_text):
    schema = json.loads(schema_text)
    path = tmp_path / f"fa-{codec}.avro"
    records = SAMPLE * 50                       # 200 objects
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), records, codec=codec,
                        sync_interval=1024, metadata={"written-by": "fastavro"})
    with open(path, "rb") as f:
        assert len(list(fastavro.block_reader(f))) > 5   # several blocks
    d = dump(path)
    assert d["codec"] == codec
    assert d["meta"]["written-by"] == "fastavro"
    got = [from_dump(schema, o, {}) for o in d["objects"]]
    assert got == records


def test_floe_reads_fastavro_special_floats(tmp_path):
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "f", "type": "float"}, {"name": "d", "type": "double"}]}
    path = tmp_path / "nan.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, schema, [{"f": float("nan"), "d": float("inf")},
                                    {"f": float("-inf"), "d": float("nan")},
                                    {"f": 1e-45, "d": 5e-324}])
    objs = dump(path)["objects"]
    assert objs[0] == {"f": {"$float": "NaN"}, "d": {"$float": "Infinity"}}
    assert objs[1] == {"f": {"$float": "-Infinity"}, "d": {"$float": "NaN"}}
    assert objs[2] == {"f": f32(1e-45), "d": 5e-324}


def test_floe_rejects_corrupt_fastavro_file(tmp_path):
    schema = {"type": "record", "name": "r", "fields": [{"name": "s", "type": "string"}]}
    buf = io.BytesIO()
    fastavro.writer(buf, schema, [{"s": "x" * 100}] * 10, codec="snappy")
    data = bytearray(buf.getvalue())
    good = tmp_path / "good.avro"
    good.write_bytes(bytes(data))
    assert len(dump(good)["objects"]) == 10
    data[-20] ^= 0xFF                           # inside the snappy CRC
    bad = tmp_path / "bad.avro"
    bad.write_bytes(bytes(data))
    p = tool("dump", bad, check=False)
    assert p.returncode == 1
    assert "FLOE_EFORMAT" in p.stderr
    bad.write_bytes(bytes(data[:-5]))           # truncated sync marker
    p = tool("dump", bad, check=False)
    assert p.returncode == 1 and "FLOE_EFORMAT" in p.stderr


# ---- Iceberg manifests ---------------------------------------------------------

# Field ids of the v2 manifest_entry / data_file structs (Iceberg spec).
ENTRY_IDS = {"status": 0, "snapshot_id": 1, "sequence_number": 3, "file_sequence_number": 4,
             "data_file": 2}
DATA_FILE_IDS = {"content": 134, "file_path": 100, "file_format": 101, "partition": 102,
                 "record_count": 103, "file_size_in_bytes": 104, "column_sizes": 108,
                 "value_counts": 109, "null_value_counts": 110, "nan_value_counts": 137,
                 "lower_bounds": 125, "upper_bounds": 128, "key_metadata": 131,
                 "split_offsets": 132, "equality_ids": 135, "sort_order_id": 140,
                 "referenced_data_file": 143}
MAP_IDS = {"column_sizes": (117, 118), "value_counts": (119, 120),
           "null_value_counts": (121, 122), "nan_value_counts": (138, 139),
           "lower_bounds": (126, 127), "upper_bounds": (129, 130)}


def inner(t):
    return [b for b in t if b != "null"][0] if isinstance(t, list) else t


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_manifest_read_by_fastavro(tmp_path, codec):
    path = tmp_path / "manifest.avro"
    size = int(tool("write-manifest", path, codec).stdout)
    assert size == os.path.getsize(path)
    with open(path, "rb") as f:
        r = fastavro.reader(f)
        entries = list(r)
        meta, schema = r.metadata, r.writer_schema
    assert meta["format-version"] == "2"
    assert meta["content"] == "data"
    assert meta["partition-spec-id"] == "0"
    assert json.loads(meta["partition-spec"])[0]["field-id"] == 1000
    assert json.loads(meta["schema"])["fields"][1]["name"] == "category"
    top = fields_by_name(schema)
    assert {n: f["field-id"] for n, f in top.items()} == ENTRY_IDS
    df = fields_by_name(inner(top["data_file"]["type"]))
    assert {n: f["field-id"] for n, f in df.items()} == DATA_FILE_IDS
    for name, (kid, vid) in MAP_IDS.items():
        arr = inner(df[name]["type"])
        assert arr["logicalType"] == "map"
        kv = fields_by_name(arr["items"])
        assert (kv["key"]["field-id"], kv["value"]["field-id"]) == (kid, vid)
    assert inner(df["split_offsets"]["type"])["element-id"] == 133
    assert inner(df["equality_ids"]["type"])["element-id"] == 136
    assert fields_by_name(df["partition"]["type"])["category"]["field-id"] == 1000

    assert len(entries) == 3
    for k, e in enumerate(entries):
        rows = 100 * (k + 1)
        assert e["status"] == 1 and e["snapshot_id"] == 5551234
        assert e["sequence_number"] is None and e["file_sequence_number"] is None
        d = e["data_file"]
        assert d["file_path"] == f"s3://bucket/warehouse/db/t/data/category=cat{k}/{k:05d}.parquet"
        assert d["file_format"] == "PARQUET" and d["content"] == 0
        assert d["partition"] == {"category": f"cat{k}"}
        assert d["record_count"] == rows and d["file_size_in_bytes"] == 4096 + k
        assert d["column_sizes"] == [{"key": 1, "value": 8 * rows}, {"key": 2, "value": 5 * rows}]
        assert d["null_value_counts"] == [{"key": 1, "value": 0}, {"key": 2, "value": k}]
        assert d["nan_value_counts"] is None
        assert d["lower_bounds"] == [{"key": 1, "value": struct.pack("<q", k * 1000)},
                                     {"key": 2, "value": f"cat{k}".encode()}]
        assert d["upper_bounds"][0]["value"] == struct.pack("<q", k * 1000 + rows - 1)
        assert d["split_offsets"] == [4] and d["sort_order_id"] == 0
        assert d["equality_ids"] is None and d["key_metadata"] is None


def test_manifest_read_by_pyiceberg(tmp_path):
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import (DataFileContent, FileFormat, ManifestContent,
                                    ManifestEntryStatus, ManifestFile)

    path = tmp_path / "manifest.avro"
    size = int(tool("write-manifest", path, "deflate").stdout)
    mf = ManifestFile.from_args(manifest_path=str(path), manifest_length=size,
                                partition_spec_id=0, content=ManifestContent.DATA,
                                sequence_number=7, min_sequence_number=7,
                                added_snapshot_id=5551234)
    entries = mf.fetch_manifest_entry(PyArrowFileIO(), discard_deleted=True)
    assert len(entries) == 3
    for k, e in enumerate(entries):
        rows = 100 * (k + 1)
        assert e.status == ManifestEntryStatus.ADDED
        assert e.snapshot_id == 5551234
        assert e.sequence_number == 7             # inherited from the manifest list
        df = e.data_file
        assert df.content == DataFileContent.DATA
        assert df.file_format == FileFormat.PARQUET
        assert df.partition[0] == f"cat{k}"
        assert df.record_count == rows
        assert dict(df.column_sizes) == {1: 8 * rows, 2: 5 * rows}
        assert dict(df.value_counts) == {1: rows, 2: rows}
        assert df.lower_bounds == {1: struct.pack("<q", k * 1000), 2: f"cat{k}".encode()}
        assert df.split_offsets == [4]


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_floe_reads_pyiceberg_manifest(tmp_path, codec):
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import (DataFile, DataFileContent, FileFormat, ManifestEntry,
                                    ManifestEntryStatus, write_manifest)
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.typedef import Record
    from pyiceberg.types import LongType, NestedField, StringType

    schema = Schema(NestedField(1, "id", LongType(), required=True),
                    NestedField(2, "category", StringType(), required=False))
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000,
                                        transform=IdentityTransform(), name="category"))
    path = tmp_path / "py-manifest.avro"
    out = PyArrowFileIO().new_output(str(path))
    with write_manifest(format_version=2, spec=spec, schema=schema, output_file=out,
                        snapshot_id=42, avro_compression=codec) as w:
        for k in range(3):
            df = DataFile.from_args(
                content=DataFileContent.DATA, file_path=f"s3://b/{k}.parquet",
                file_format=FileFormat.PARQUET, partition=Record(f"c{k}"),
                record_count=10 + k, file_size_in_bytes=1000 + k,
                column_sizes={1: 80, 2: 50}, value_counts={1: 10, 2: 10},
                null_value_counts={1: 0, 2: k}, nan_value_counts={},
                lower_bounds={1: struct.pack("<q", k)}, upper_bounds={1: struct.pack("<q", 9)},
                split_offsets=[4], sort_order_id=0)
            w.add_entry(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED,
                                                snapshot_id=42, data_file=df))
    d = dump(path)
    assert d["codec"] == codec
    assert d["meta"]["format-version"] == "2"
    assert json.loads(d["meta"]["partition-spec"])[0]["field-id"] == 1000
    assert json.loads(d["meta"]["schema"])["fields"][0]["name"] == "id"
    assert len(d["objects"]) == 3
    for k, e in enumerate(d["objects"]):
        assert e["status"] == 1
        assert e["snapshot_id"] == {"$union": 1, "value": 42}
        df = e["data_file"]
        assert df["file_path"] == f"s3://b/{k}.parquet"
        assert df["record_count"] == 10 + k
        assert df["partition"]["category"]["value"] == f"c{k}"
        assert df["null_value_counts"]["value"] == [{"key": 1, "value": 0},
                                                   {"key": 2, "value": k}]
        assert df["lower_bounds"]["value"] == [
            {"key": 1, "value": {"$bytes": struct.pack("<q", k).hex()}}]
