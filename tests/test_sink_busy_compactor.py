"""A sink committing every second beside Java's RewriteFiles committing
every 100 ms (SPEC 7.4): the sink's commits lose race after race and are
rebased and tried again, merge-on-read (deletes moved onto the compactor's
files) and copy-on-write (the rewrite redone for the files the compactor
replaced); the sink never halts and every snapshot is exact.

How often the compactor wins a race is the machine's business, so the
counts of conflicts rebased and of rewrites taken over are printed, not
asserted (tests/unit/test_committer.c and test_sink_faults.py make those
races happen on purpose).  The run lasts FLOE_BUSY_COMPACTOR_SECONDS
(default 30; docs/sink.md records a 300-second run:
`FLOE_BUSY_COMPACTOR_SECONDS=300 pytest -rP test_sink_busy_compactor.py`).
"""
import json
import os
import time

import pytest

from conftest import SCALE
from sinkmodel import Stream
from test_sink_cow import COW, live_delete_files
from test_sink_engines import check
from test_sink_position import JavaCompactor, PositionSink, Running, check_position, metric

SECONDS = float(os.environ.get("FLOE_BUSY_COMPACTOR_SECONDS", "30"))
UNIT = 0.1                    # wall seconds per unit of input time: --commit-interval 10 is 1 s


class CowTable(PositionSink):
    def args(self, *extra):
        return super().args(*COW, *extra)


def feed_in_real_time(run, stream, head):
    """stream.lines[head:], each progress record's lines sent when the wall
    clock reaches its time (UNIT seconds a unit after the first)."""
    rest = stream.lines[head:]
    start, t0 = time.monotonic(), None
    chunk = []
    for line in rest:
        chunk.append(line)
        if '"progress"' not in line:
            continue
        t = json.loads(line)["progress"]
        t0 = t if t0 is None else t0
        wait = start + (t - t0) * UNIT - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        run.send(chunk)
        chunk = []
    if chunk:
        run.send(chunk)


@pytest.mark.parametrize("cow", [False, True], ids=["merge-on-read", "copy-on-write"])
def test_a_sink_beside_a_compactor_committing_every_100ms(tmp_path, cow):
    # about 3.5 units a step: SECONDS of input
    stream = Stream(91 + cow, steps=int(SECONDS / UNIT / 3.5), keys=400, burst=0.2, idle=0)
    sink = (CowTable if cow else PositionSink)(tmp_path, stream, interval=10)
    head = next(i for i, x in enumerate(stream.lines) if '"progress"' in x) + 1
    sink.run(stream.lines[:head])                               # the table exists
    run = Running(sink, "--close")
    # RewriteFiles of the smallest files every 100 ms, whatever the sink does
    with JavaCompactor(sink, patient=False, pause=(0.1, 0.1), files=4, order="smallest") as java:
        feed_in_real_time(run, stream, head)
        conflicts = metric(run.port, "floe_commit_conflicts_total")
        reused = metric(run.port, "floe_rewrites_reused_total")
        committed = metric(run.port, "floe_snapshots_committed_total")
    err = run.finish()
    print(f"\n{'copy-on-write' if cow else 'merge-on-read'}, {SECONDS:.0f} s: "
          f"{committed:.0f} sink commits, {conflicts:.0f} conflicts rebased, "
          f"{reused:.0f} files' rewrites taken over; Java: {java.ok} compactions, "
          f"{java.conflict} lost to the sink")
    assert not java.errors, java.errors[:3]
    assert "warning" not in err, err
    assert java.ok >= SECONDS / SCALE / 4, (java.ok, java.conflict)
    if cow:
        assert live_delete_files(sink) == []
    assert check(sink) >= committed
    check_position(sink)
