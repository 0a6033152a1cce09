"""A model of floe's sink over an input whose schema changes (SPEC.md
section 4): it generates NDJSON change streams with schema records
({"time": T, "schema": "COLUMNS"}) interleaved with updates, and says what
each snapshot must hold.

Columns have a stable identity (cid, as an Iceberg field id) across renames.
Random changes: columns added (nullable, or on format 3 with a default,
some of them not null), dropped, renamed (`b ... was a`), widened (integer
-> bigint, real -> double precision, numeric precision up) and reordered.
Updates at the change's time T that arrive before its record are in the old
shape (the sink carries them into the new one); those after it in the new.

The schema a row is *written* in is the one in effect at its time (the
latest change at T <= t: the batch holding T is cut there); a snapshot with
frontier F *reads* in the latest change at T < F.  A row written before a
column existed reads the column's default (initial-default), else null.
"""
import collections
import json
import random
import struct

from rowgen import Col, gen_value, quote

INF = float("inf")
ADD_KINDS = ["text", "bigint", "double precision", "boolean", "date", "integer", "real"]


class SCol:
    def __init__(self, cid, name, kind, not_null=False, p=None, s=None, default=None):
        self.cid, self.name, self.kind, self.not_null = cid, name, kind, not_null
        self.p, self.s = p, s
        self.default = default          # (json value, canonical) or None
        self.was = None                 # renamed from, in the record that renames it

    def copy(self):
        c = SCol(self.cid, self.name, self.kind, self.not_null, self.p, self.s, self.default)
        return c

    def col(self):
        return Col(self.name, self.kind, self.not_null, self.p, self.s)

    def decl(self):
        t = f"numeric({self.p},{self.s})" if self.kind == "numeric" else self.kind
        out = f"{quote(self.name)} {t}" + (" not null" if self.not_null else "")
        if self.default is not None:
            out += " default " + json.dumps(self.default[0])
        if self.was:
            out += f" was {quote(self.was)}"
        return out


def render(cols):
    return ", ".join(c.decl() for c in cols)


def widen_value(col, v):
    """A canonical value of an earlier type of col, as col's type reads it."""
    if v is not None and col.kind == "double precision" and v[0] == "f32":
        return ("f64", struct.pack(">d", struct.unpack(">f", v[1])[0]))
    return v


def json_of(col, canon, was_json):
    """The NDJSON value that gives `canon` in col's type now."""
    if canon is None:
        return None
    if col.kind == "double precision" and canon[0] == "f64":
        x = struct.unpack(">d", canon[1])[0]
        if x != x or x in (INF, -INF):
            return "NaN" if x != x else ("Infinity" if x > 0 else "-Infinity")
        return x
    return was_json


class EvolvingStream:
    def __init__(self, seed, mode, version=2, steps=60, keys=30, as_of=0, changes=6):
        self.r = random.Random(seed)
        self.mode, self.version, self.as_of = mode, version, as_of
        self.next_cid = 6
        self.cols = [SCol(1, "id", "bigint", True), SCol(2, "name", "text"),
                     SCol(3, "qty", "integer"), SCol(4, "price", "numeric", p=10, s=2),
                     SCol(5, "score", "real")]
        self.initial = [c.copy() for c in self.cols]
        self.schemas = []               # (T, [SCol]) in time order
        self.lines = []
        self.updates = []               # (time, diff, {cid: canonical})
        self.live = {}                  # key -> {cid: (json, canonical)}
        self.pending = []               # (time, line)
        self.n = 0
        self._generate(steps, keys, changes)

    # ---- rows --------------------------------------------------------------------
    def _row(self, key):
        vals = {1: (key, key)}
        for c in self.cols[0:]:
            if c.cid == 1:
                continue
            v, e = gen_value(self.r, c.col(), null_rate=0.25)
            vals[c.cid] = (v, e)
        return vals

    def _json(self, vals):
        out = {}
        for c in self.cols:
            v, e = vals[c.cid]
            if c.default is not None and e == c.default[1] and self.r.random() < 0.5:
                continue                                    # left out: the write-default
            if v is None and c.default is None and self.r.random() < 0.3:
                continue                                    # left out: null
            out[c.name] = json_of(c, e, v)
        return out

    def _emit(self, time, diff, vals):
        line = json.dumps({"time": time, "diff": diff, "row": self._json(vals)})
        self.pending.append((time, line))
        self.updates.append((time, diff, {cid: e for cid, (_, e) in vals.items()}))

    def _op(self, time, keys):
        r = self.r
        key = r.randrange(keys)
        if key in self.live:
            self._emit(time, -1, self.live[key])
            if r.random() < 0.75:
                new = self._row(key)
                self._emit(time, 1, new)
                self.live[key] = new
            else:
                del self.live[key]
        else:
            new = self._row(key)
            self._emit(time, 1, new)
            self.live[key] = new

    def _flush(self, upto):
        """Emit the pending updates with time <= upto, shuffled."""
        now = [p for p in self.pending if p[0] <= upto]
        self.pending = [p for p in self.pending if p[0] > upto]
        self.r.shuffle(now)
        self.lines.extend(line for _, line in now)

    # ---- schema changes ------------------------------------------------------------
    def _fresh(self, prefix):
        self.n += 1
        return f"{prefix}{self.n}"

    def _add(self):
        r = self.r
        kind = r.choice(ADD_KINDS)
        c = SCol(self.next_cid, self._fresh("c"), kind)
        self.next_cid += 1
        if self.version >= 3 and r.random() < 0.5:
            d = gen_value(r, Col("", kind, True), null_rate=0)
            c.default = (json_of(c, d[1], d[0]), d[1])
            c.not_null = r.random() < 0.6
        self.cols.insert(r.randint(1, len(self.cols)), c)
        for vals in self.live.values():               # rows before it read its default
            vals[c.cid] = (c.default if c.default else (None, None))

    def _change(self):
        r = self.r
        for c in self.cols:
            c.was = None
        others = [c for c in self.cols if c.cid != 1]
        ops = r.sample(["add", "drop", "rename", "widen", "reorder"], r.randint(1, 2))
        for op in ops:
            if op == "add" or (op == "drop" and len(others) < 2):
                self._add()
            elif op == "drop":
                gone = r.choice(others)
                self.cols.remove(gone)
                for vals in self.live.values():
                    vals.pop(gone.cid, None)
            elif op == "rename":
                c = r.choice(others)
                if c.was is None:
                    c.was, c.name = c.name, self._fresh("r")
            elif op == "widen":
                wide = [c for c in others if c.kind in ("integer", "real")
                        or (c.kind == "numeric" and c.p + 2 <= 38)]
                if not wide:
                    self._add()
                    continue
                c = r.choice(wide)
                if c.kind == "numeric":
                    c.p += 2
                else:
                    c.kind = "bigint" if c.kind == "integer" else "double precision"
                for vals in self.live.values():
                    v, e = vals[c.cid]
                    e = widen_value(c, e)
                    vals[c.cid] = (json_of(c, e, v), e)
            else:
                rest = self.cols[1:]
                r.shuffle(rest)
                self.cols = self.cols[:1] + rest
            others = [c for c in self.cols if c.cid != 1]

    def _schema_record(self, t):
        self._change()
        self.schemas.append((t, [c.copy() for c in self.cols]))
        self.lines.append(json.dumps({"time": t, "schema": render(self.cols)}))

    # ---- generation ---------------------------------------------------------------------
    def _generate(self, steps, keys, changes):
        r = self.r
        t = self.as_of
        left = changes
        for step in range(steps):
            change = left > 0 and step > 2 and r.random() < changes / steps * 1.5
            if change:
                left -= 1
                for _ in range(r.randint(0, 3)):      # held at t in the old shape
                    self._op(t, keys)
                self._flush(t)
                self._schema_record(t)
            for _ in range(r.randint(20, 40) if r.random() < 0.15 else r.randint(0, 4)):
                self._op(t, keys)
            step_len = r.randint(1, 6)
            if r.random() < 0.5:
                self._flush(t)
                self.lines.append(json.dumps({"progress": t + r.randint(1, step_len)}))
            t += step_len
        self._flush(INF)

    def text(self):
        return "\n".join(self.lines) + "\n"

    def schema_text(self):
        return render(self.initial)

    # ---- the model ---------------------------------------------------------------------
    def _schema(self, t, strict):
        cols = self.initial
        for T, s in self.schemas:
            if T < t or (not strict and T == t):
                cols = s
        return cols

    def schema_at(self, frontier):
        """The columns a snapshot at `frontier` reads (rowgen Cols and SCols)."""
        return self._schema(frontier, True)

    @staticmethod
    def project(cols, row):
        out = []
        for c in cols:
            if c.cid in row:
                out.append(widen_value(c, row[c.cid]))
            else:
                out.append(c.default[1] if c.default else None)
        return tuple(out)

    def expected(self, frontier):
        """The rows a snapshot at `frontier` holds, in its schema, sorted."""
        read = self.schema_at(frontier)
        by_time = collections.defaultdict(collections.Counter)
        rows = {}
        for time, diff, row in self.updates:
            t = max(time, self.as_of)
            if t >= frontier:
                continue
            written = self.project(self._schema(t, False), row)
            by_time[t][written] += diff
            rows[(t, written)] = row
        out = []
        if self.mode == "append":
            for t, sums in by_time.items():
                for w, d in sums.items():
                    if d:
                        out.extend([self.project(read, rows[(t, w)]) + (1 if d > 0 else -1, t)]
                                   * abs(d))
            return sorted(out, key=repr)
        live = {}
        for t in sorted(by_time):
            sums = by_time[t]
            for w, d in sums.items():
                if d < 0:
                    live.pop(rows[(t, w)][1], None)
            for w, d in sums.items():
                if d > 0:
                    assert d == 1
                    live[rows[(t, w)][1]] = rows[(t, w)]
        return sorted((self.project(read, row) for row in live.values()), key=repr)
