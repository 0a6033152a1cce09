"""SIGTERM, SIGINT and SIGHUP stop `floe sink` cleanly: it stops reading
(even a read blocked on an idle stdin), keeps what it committed, says where
a rerun resumes and exits 128 + the signal number; the same command over the
same input then ends with exactly the model's table."""
import re
import signal
import subprocess
import time

import pytest

from conftest import floe_bin
from sinkmodel import Stream, committed_frontier
from test_cli_sink import (Live, TABLE, check_table, db_of, free_port, lines_until, loud,
                           progress_values, sanitizer_clean, sink_args)

SIGNALS = [(signal.SIGTERM, 143, "SIGTERM"), (signal.SIGINT, 130, "SIGINT"),
           (signal.SIGHUP, 129, "SIGHUP")]


def rerun(tmp_path, stream, mode):
    src = tmp_path / "in.ndjson"
    src.write_text(stream.text())
    p = subprocess.run([floe_bin(), *sink_args(tmp_path, mode, stream, 20), "--input", str(src)],
                       capture_output=True, text=True, timeout=120)
    sanitizer_clean(p.stderr)
    assert p.returncode == 0, p.stderr
    return p.stderr


@pytest.mark.parametrize("sig,status,name", SIGNALS, ids=[s[2] for s in SIGNALS])
def test_a_stop_signal_on_an_idle_stdin(tmp_path, sig, status, name):
    mode = "upsert" if sig != signal.SIGINT else "append"
    stream = Stream(60 + status, steps=60)
    pv = progress_values(stream)
    port = free_port()
    run = Live([*loud(sink_args(tmp_path, mode, stream, 20)), "--metrics-addr",
                f"127.0.0.1:{port}"])
    fed = lines_until(stream, pv[len(pv) // 2])
    run.feed(fed)
    run.wait_frontier(tmp_path, pv[len(pv) // 2] - 20)
    time.sleep(0.3)                      # the input is idle: the sink sits in read()
    at = committed_frontier(db_of(tmp_path), TABLE)
    t0 = time.monotonic()
    run.proc.send_signal(sig)
    code, err = run.wait(timeout=20)
    assert time.monotonic() - t0 < 5, "a blocking read must be interrupted"
    assert code == status, err
    assert f"floe: {name}: stopped reading <stdin> after line {len(fed)}" in err, err
    assert f"{TABLE} is at committed frontier [{at}]: the same command resumes there" in err
    assert committed_frontier(db_of(tmp_path), TABLE) == at, "nothing committed after the stop"
    assert "done in" not in err
    out = rerun(tmp_path, stream, mode)
    assert f"resuming {TABLE} at frontier [{at}]" in out
    check_table(tmp_path, stream, mode)


def test_sigterm_while_the_input_flows(tmp_path):
    """Stopped in the middle of a large file: the committed frontier it
    names is the table's, and the rerun ends exact."""
    stream = Stream(71, steps=60, keys=80, burst=0.3)
    src = tmp_path / "in.ndjson"
    src.write_text(stream.text())
    args = [floe_bin(), *loud(sink_args(tmp_path, "upsert", stream, 4)), "--input", str(src)]
    for delay in (0.3, 0.15, 0.05, 0.02):
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        sanitizer_clean(err)
        if proc.returncode == 143:
            break
        assert proc.returncode == 0, err          # it finished first: try sooner
        (tmp_path / "catalog.db").unlink()
        subprocess.run(["rm", "-rf", str(tmp_path / "wh")], check=True)
    else:
        pytest.skip("the input always finished before the signal")
    m = re.search(r"committed frontier (\[\d*\])", err)
    if m:
        want = committed_frontier(db_of(tmp_path), TABLE)
        assert m.group(1) == f"[{want}]", err
        assert "resume" in err
    else:
        assert "nothing is committed for this sink yet" in err, err
    rerun(tmp_path, stream, "upsert")
    check_table(tmp_path, stream, "upsert")


def test_a_stop_signal_before_any_commit(tmp_path):
    """Nothing committed yet: the rerun starts from the beginning."""
    stream = Stream(72, steps=20)
    run = Live(sink_args(tmp_path, "upsert", stream, 20))
    first = [line for line in stream.lines if '"time"' in line][:5]
    run.feed(first)
    run.wait_for(lambda: len(first) == 5)
    time.sleep(0.5)
    run.proc.send_signal(signal.SIGTERM)
    code, err = run.wait(timeout=20)
    assert code == 143, err
    assert "nothing is committed for this sink yet: the same command resumes from the start" \
        in err, err
    assert committed_frontier(db_of(tmp_path), TABLE) is None
    rerun(tmp_path, stream, "upsert")
    check_table(tmp_path, stream, "upsert")
