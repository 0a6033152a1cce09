"""Measuring one benchmark process: wall time, CPU time and peak memory.

Peak memory is the child's own high-water mark (VmHWM in /proc/PID/status),
read every few milliseconds while it runs: the mark only grows, so a late
reading still sees an earlier peak.  wait4's ru_maxrss is not used because
Linux carries the parent's peak into a child across fork and exec, so a
large benchmark driver would inflate every child's figure.
"""
import os
import re
import subprocess
import threading
import time


def peak_rss_mib(pid):
    """The peak resident set (VmHWM) of a live process, in MiB, or 0."""
    try:
        with open(f"/proc/{pid}/status") as f:
            m = re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M)
        return int(m.group(1)) / 1024 if m else 0.0
    except OSError:
        return 0.0


class PeakWatcher(threading.Thread):
    """Keeps the highest VmHWM of `pid` seen until stop()."""

    def __init__(self, pid, every=0.005):
        super().__init__(daemon=True)
        self.pid, self.every, self.peak = pid, every, 0.0
        self._done = threading.Event()

    def run(self):
        while not self._done.is_set():
            self.peak = max(self.peak, peak_rss_mib(self.pid))
            self._done.wait(self.every)

    def stop(self):
        self._done.set()
        self.join()
        return self.peak


def run_measured(cmd, cwd=None, env=None, timeout=None):
    """Run cmd to completion: (wall s, CPU s, peak RSS MiB, stderr text).
    A non-zero exit raises SystemExit with the command and its stderr; one
    past `timeout` seconds is killed and raises TimeoutError."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    timer = threading.Timer(timeout, proc.kill) if timeout else None
    if timer:
        timer.start()
    watcher = PeakWatcher(proc.pid)
    watcher.start()
    err_chunks = []
    reader = threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()), daemon=True)
    reader.start()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    peak = watcher.stop()
    reader.join()
    proc.stderr.close()
    err = b"".join(err_chunks).decode(errors="replace")
    if timer:
        timer.cancel()
        if not timer.is_alive() and wall >= timeout:
            raise TimeoutError(f"past {timeout} s: {' '.join(map(str, cmd))}")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(map(str, cmd))}\n{err}")
    return wall, ru.ru_utime + ru.ru_stime, peak, err
