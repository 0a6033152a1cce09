"""Walk the pages of a Parquet column chunk, reading page headers with a small
Thrift compact-protocol decoder written from the Thrift spec.  Used to show
that files really hold many pages and what encodings those pages use."""
import struct


class Compact:
    def __init__(self, buf, pos=0):
        self.buf, self.pos = buf, pos

    def byte(self):
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self):
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def zigzag(self):
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, ttype):
        if ttype in (1, 2):                       # bool true / false (in a field header)
            return ttype == 1
        if ttype == 3:
            return struct.unpack("b", bytes([self.byte()]))[0]
        if ttype in (4, 5, 6):
            return self.zigzag()
        if ttype == 7:
            v = struct.unpack("<d", self.buf[self.pos:self.pos + 8])[0]
            self.pos += 8
            return v
        if ttype == 8:
            n = self.varint()
            v = bytes(self.buf[self.pos:self.pos + n])
            self.pos += n
            return v
        if ttype in (9, 10):
            head = self.byte()
            n, etype = head >> 4, head & 0x0F
            if n == 15:
                n = self.varint()
            return [self.value(etype) if etype not in (1, 2) else self.byte() == 1
                    for _ in range(n)]
        if ttype == 12:
            return self.struct()
        raise ValueError(f"thrift type {ttype}")

    def struct(self):
        fields, last = {}, 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            delta, ttype = head >> 4, head & 0x0F
            fid = last + delta if delta else self.zigzag()
            fields[fid] = self.value(ttype)
            last = fid


PAGE_TYPES = {0: "DATA_PAGE", 1: "INDEX_PAGE", 2: "DICTIONARY_PAGE", 3: "DATA_PAGE_V2"}
ENCODINGS = {0: "PLAIN", 2: "PLAIN_DICTIONARY", 3: "RLE", 4: "BIT_PACKED",
             5: "DELTA_BINARY_PACKED", 6: "DELTA_LENGTH_BYTE_ARRAY", 7: "DELTA_BYTE_ARRAY",
             8: "RLE_DICTIONARY", 9: "BYTE_STREAM_SPLIT"}


def pages(path, column_meta):
    """[(page type, encoding, num_values)] for one pyarrow ColumnChunkMetaData."""
    with open(path, "rb") as f:
        data = f.read()
    start = column_meta.dictionary_page_offset or column_meta.data_page_offset
    if column_meta.has_dictionary_page and column_meta.dictionary_page_offset:
        start = min(start, column_meta.dictionary_page_offset)
    end = start + column_meta.total_compressed_size
    out, pos = [], start
    while pos < end:
        c = Compact(data, pos)
        hdr = c.struct()
        kind = PAGE_TYPES[hdr[1]]
        sub = hdr.get(5) or hdr.get(7) or hdr.get(8) or {}
        encoding = sub.get(4) if kind == "DATA_PAGE_V2" else sub.get(2)
        out.append((kind, ENCODINGS.get(encoding, encoding), sub.get(1)))
        pos = c.pos + hdr[3]
    return out
