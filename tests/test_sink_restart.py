"""Restart tests: `floe sink` is killed with SIGKILL at random points and run
again over the same input until it finishes.  The final table, and every
snapshot on the way, must equal the model: nothing duplicated, nothing lost,
frontiers strictly increasing."""
import random
import subprocess

import pytest

from conftest import floe_bin
from test_sink_model import check_snapshots, sink_args
from sinkmodel import Stream


@pytest.mark.parametrize("mode,seed", [("upsert", 1), ("upsert", 2), ("append", 3),
                                       ("append", 4)])
def test_sigkill_and_rerun_until_done(tmp_path, mode, seed):
    r = random.Random(seed)
    stream = Stream(seed, steps=400, keys=60)
    src = tmp_path / "changes.ndjson"
    src.write_text(stream.text())
    args = [floe_bin(), *sink_args(tmp_path, mode, stream, 2), "--input", str(src)]
    kills = 0
    for attempt in range(200):
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(timeout=r.uniform(0.05, 0.6) * (1 + attempt // 20))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            kills += 1
            continue
        assert proc.returncode == 0, err
        assert "AddressSanitizer" not in err and "runtime error" not in err, err
        break
    else:
        pytest.fail("the sink never finished")
    print(f"seed {seed}: killed {kills} times")
    assert kills >= 2, "the input finished too fast to be interrupted; make it larger"
    check_snapshots(tmp_path, stream, mode)
