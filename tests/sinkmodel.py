"""A model of floe's sink for tests: it generates change streams and says
what the table must hold at every committed frontier.

The generator keeps an upstream table (key -> row) and emits consistent CDC
over time: inserts, updates (retract the old row, insert the new one at the
same time), deletes, keys updated several times within one batch and across
batches, rows inserted and retracted within one batch, same-time insert +
retract pairs that cancel, bursts, idle periods and progress jumps.  Updates
of a time still open arrive in shuffled order before the progress record
that closes it (SPEC.md section 2).

With `truncates` > 0 some steps begin with a truncation record
{"time": T, "truncate": true}: the upstream table is emptied at T.

expected(F) is the table after every update with time < F (times below
as_of count as as_of) and not below the last truncation before F: in upsert
mode the live rows, in append mode the consolidated updates as rows plus
_diff and _timestamp.
"""
import collections
import json
import random
import sqlite3

from rowgen import Col, gen_value, render

COLS = [Col("id", "bigint", not_null=True), Col("name", "text"), Col("qty", "integer"),
        Col("price", "numeric", p=10, s=2), Col("tags", "list", elem=Col("", "text")),
        Col("at", "timestamptz")]
APPEND_EXTRA = [Col("_diff", "integer", not_null=True), Col("_timestamp", "bigint", not_null=True)]
SCHEMA = render(COLS)
INF = float("inf")


class Stream:
    def __init__(self, seed, steps=60, keys=40, as_of=0, burst=0.1, idle=0.1, initial=0,
                 truncates=0.0):
        self.r = random.Random(seed)
        self.as_of = as_of
        self.truncates = truncates
        self.truncations = []           # times of the truncation records
        self.lines = []                 # NDJSON lines, in input order
        self.updates = []               # (time, diff, canonical row)
        self.live = {}                  # key -> (json row, canonical row)
        self.frontier = 0
        self.pending = []               # (time, line) not yet emitted
        self._generate(steps, keys, burst, idle, initial)

    # ---- generation ------------------------------------------------------------
    def _row(self, key):
        vals = {"id": key}
        canon = [key]
        for c in COLS[1:]:
            v, e = gen_value(self.r, c, null_rate=0.2)
            vals[c.name] = v
            canon.append(e)
        return vals, tuple(canon)

    def _emit(self, time, diff, row_json, row_canon):
        self.pending.append((time, json.dumps({"time": time, "diff": diff, "row": row_json})))
        self.updates.append((time, diff, row_canon))

    def _op(self, time, keys):
        r = self.r
        key = r.randrange(keys)
        if key in self.live:
            old = self.live[key]
            self._emit(time, -1, *old)
            if r.random() < 0.75:                         # update, else delete
                new = self._row(key)
                self._emit(time, 1, *new)
                self.live[key] = new
            else:
                del self.live[key]
        else:
            new = self._row(key)
            self._emit(time, 1, *new)
            self.live[key] = new
        if r.random() < 0.05:                             # an insert + retract that cancel
            ghost = self._row(keys + r.randrange(1000))
            self._emit(time, 1, *ghost)
            self._emit(time, -1, *ghost)

    def _progress(self, to):
        """Emit every pending update below `to` (shuffled), then the progress."""
        now = [p for p in self.pending if p[0] < to]
        self.pending = [p for p in self.pending if p[0] >= to]
        self.r.shuffle(now)
        self.lines.extend(line for _, line in now)
        self.lines.append(json.dumps({"progress": to}))
        self.frontier = to

    def _truncate(self, t):
        """Emit every pending update below t (shuffled), then the truncation
        (which moves the frontier to t, as a schema record does)."""
        now = [p for p in self.pending if p[0] < t]
        self.pending = [p for p in self.pending if p[0] >= t]
        self.r.shuffle(now)
        self.lines.extend(line for _, line in now)
        self.lines.append(json.dumps({"time": t, "truncate": True}))
        self.frontier = max(self.frontier, t)
        self.truncations.append(t)
        self.live = {}

    def _generate(self, steps, keys, burst, idle, initial):
        r = self.r
        t = 0
        for _ in range(initial):                          # the initial snapshot
            self._op(r.randrange(max(self.as_of, 1)), keys)
        if initial:
            t = self.as_of
        for _ in range(steps):
            if self.truncates and t > self.as_of and r.random() < self.truncates:
                self._truncate(t)
            n = r.randint(20, 60) if r.random() < burst else r.randint(0, 4)
            for _ in range(n):
                self._op(t, keys)
            step = r.randint(100, 3000) if r.random() < idle else r.randint(1, 6)
            if r.random() < 0.6:                          # progress now and then, maybe ahead
                self._progress(t + r.randint(1, step))
            t += step
        self.lines.extend(line for _, line in sorted(self.pending))
        self.pending = []

    # ---- the model --------------------------------------------------------------------
    def text(self):
        return "\n".join(self.lines) + "\n"

    def expected(self, frontier, mode):
        """The table at committed frontier `frontier` (INF for [])."""
        sums, rows = collections.Counter(), {}
        cut = max((t for t in self.truncations if t < frontier), default=-1)
        for time, diff, row in self.updates:
            t = max(time, self.as_of)
            if cut <= time and t < frontier:  # upsert: the live rows; append: per time
                sums[(t if mode == "append" else 0, repr(row))] += diff
                rows[repr(row)] = row
        out = []
        for (t, key), d in sums.items():
            row = rows[key]
            if d == 0:
                continue
            if mode == "upsert":
                assert d == 1, (row, d)
                out.append(row)
            else:
                out.extend([row + (1 if d > 0 else -1, t)] * abs(d))
        return sorted(out, key=repr)


def frontier_value(text):
    vals = json.loads(text)
    return vals[0] if vals else INF


def model_frontiers(summaries):
    """For snapshots in commit order (their summaries), the frontier whose
    model each must equal: a sink snapshot's own floe.frontier (as a value);
    a maintenance snapshot's (floe.maintenance: it moves rows, never changes
    them) that of the sink snapshot before it; None for other writers'
    snapshots and for maintenance before any remaining sink snapshot."""
    out, last = [], None
    for summ in summaries:
        if "floe.frontier" in summ:
            last = frontier_value(summ["floe.frontier"])
            out.append(last)
        else:
            out.append(last if "floe.maintenance" in summ else None)
    return out


def metadata_location(db, table):
    ns, name = table.rsplit(".", 1)
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)    # never create it
    except sqlite3.OperationalError:
        return None
    try:
        row = con.execute("SELECT metadata_location FROM iceberg_tables WHERE table_namespace = ? "
                          "AND table_name = ?", (ns, name)).fetchone()
    except sqlite3.OperationalError:                               # not created yet
        row = None
    finally:
        con.close()
    return row[0] if row else None


def table_snapshots(db, table):
    """The snapshots of the table's current metadata file (for polling)."""
    loc = metadata_location(db, table)
    if not loc:
        return []
    path = loc[len("file://"):] if loc.startswith("file://") else loc[len("file:"):] \
        if loc.startswith("file:") else loc
    with open(path) as f:
        md = json.load(f)
    return sorted(md.get("snapshots", []), key=lambda s: s["sequence-number"])


def committed_frontier(db, table):
    """The floe.frontier of the newest snapshot, or None."""
    snaps = table_snapshots(db, table)
    for s in reversed(snaps):
        f = s.get("summary", {}).get("floe.frontier")
        if f is not None:
            return frontier_value(f)
    return None


def kill_until_done(args, r, lo, hi, attempts=200):
    """Run the sink command `args` with a random time limit (lo..hi seconds,
    growing every 20 attempts), SIGKILLed when it runs past, until a run
    finishes by itself; that run must exit 0 (or 1 refusing a rerun's
    updates after a killed run's last commit landed).  Returns the kills;
    at least 2, else the input was too small to be interrupted."""
    import subprocess
    kills = 0
    for attempt in range(attempts):
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _, err = proc.communicate(timeout=r.uniform(lo, hi) * (1 + attempt // 20))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            kills += 1
            continue
        assert "AddressSanitizer" not in err and "runtime error" not in err, err
        if proc.returncode == 1 and kills and "an earlier run closed this sink's input" in err:
            break        # killed after its last commit landed: the rerun's updates are refused
        assert proc.returncode == 0, err
        break
    else:
        raise AssertionError("the sink never finished")
    assert kills >= 2, "the input finished too fast to be interrupted; make it larger"
    return kills
