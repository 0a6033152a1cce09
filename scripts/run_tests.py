#!/usr/bin/env python3
"""Runs floe's whole test suite and prints one closing line for CI.

Stages (each counts its tests as passed or failed):
  checksrc  scripts/check-src.sh: no raw allocation, exit or unbounded strings
  unit      every C unit-test program, ASan+UBSan build (and the release
            build under valgrind, below)
  fuzz      every fuzz target replaying its corpus, ASan+UBSan build
  valgrind  the unit tests and fuzz replays of the release build under memcheck
  pytest    the Python suite (real readers: pyarrow, DuckDB, polars, ...)
            against the ASan+UBSan build of the floe program, on one
            pytest-xdist worker per core (at most four)

Usage: scripts/run_tests.py [--quick] [pytest args...]
  --quick   skip valgrind and run pytest against the release build only
The last line reads "N passed, N failed".
"""
import glob
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUMMARY_RE = re.compile(r"(\d+) passed, (\d+) failed")
totals = {"passed": 0, "failed": 0}
failures = []


def record(name, ok, count=1):
    totals["passed" if ok else "failed"] += count
    if not ok:
        failures.append(name)


def run(cmd, env=None, timeout=None):
    print("+", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=timeout)
    sys.stdout.write(p.stdout)
    return p.returncode, p.stdout


def unit_stage(build):
    for prog in sorted(glob.glob(os.path.join(ROOT, build, "tests", "test_*"))):
        if prog.endswith("_tool"):        # helper programs driven by pytest
            continue
        rc, out = run([prog])
        m = SUMMARY_RE.search(out)
        if m:
            totals["passed"] += int(m.group(1))
            totals["failed"] += int(m.group(2))
            if rc != 0 and int(m.group(2)) == 0:
                record(f"{prog} (exit {rc})", False)
            elif rc != 0:
                failures.append(prog)
        else:
            record(f"{prog} (no summary, exit {rc})", False)


def fuzz_progs(build):
    return sorted(glob.glob(os.path.join(ROOT, build, "fuzz", "fuzz_*")))


def corpus_of(prog):
    return os.path.join(ROOT, "fuzz", "corpus", os.path.basename(prog))


def fuzz_stage(build):
    for prog in fuzz_progs(build):
        corpus = corpus_of(prog)
        if not os.path.isdir(corpus):
            record(f"{prog}: no corpus at fuzz/corpus/{os.path.basename(prog)}", False)
            continue
        rc, _ = run([prog, corpus])
        record(f"fuzz replay {os.path.basename(prog)}", rc == 0)


def valgrind_stage(build):
    vg = ["valgrind", "--error-exitcode=99", "--leak-check=full",
          "--errors-for-leak-kinds=definite,indirect", "-q"]
    progs = [p for p in sorted(glob.glob(os.path.join(ROOT, build, "tests", "test_*")))
             if not p.endswith("_tool")]
    for prog in progs:
        rc, _ = run(vg + [prog])
        record(f"valgrind {os.path.basename(prog)}", rc == 0)
    for prog in fuzz_progs(build):
        if os.path.isdir(corpus_of(prog)):
            rc, _ = run(vg + [prog, corpus_of(prog)])
            record(f"valgrind {os.path.basename(prog)}", rc == 0)


def pytest_stage(build, extra):
    env = dict(os.environ, FLOE_BUILD=build,
               ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=86",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    workers = str(max(1, min(4, os.cpu_count() or 1)))     # pytest-xdist
    rc, out = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", workers,
                   "--durations=25", "tests"] + extra, env=env)
    tail = out.strip().splitlines()[-1] if out.strip() else ""
    p = re.search(r"(\d+) passed", tail)
    f = re.search(r"(\d+) failed", tail)
    e = re.search(r"(\d+) error", tail)
    passed = int(p.group(1)) if p else 0
    failed = (int(f.group(1)) if f else 0) + (int(e.group(1)) if e else 0)
    totals["passed"] += passed
    totals["failed"] += failed
    if rc != 0 and failed == 0:
        record(f"pytest ({build}) exit {rc}", False)
    elif failed:
        failures.append(f"pytest ({build})")


def timed(name, fn, *args):
    t0 = time.monotonic()
    fn(*args)
    took.append((name, time.monotonic() - t0))


took = []


def main():
    args = sys.argv[1:]
    quick = "--quick" in args
    extra = [a for a in args if a != "--quick"]
    rc, _ = run(["scripts/check-src.sh"])
    record("check-src", rc == 0)
    if not quick:
        timed("unit (asan)", unit_stage, "build-asan")
        timed("fuzz (asan)", fuzz_stage, "build-asan")
        timed("unit and fuzz (valgrind, release)", valgrind_stage, "build")
    else:
        timed("unit", unit_stage, "build")
        timed("fuzz", fuzz_stage, "build")
    timed("pytest", pytest_stage, "build" if quick else "build-asan", extra)
    print("stages: " + ", ".join(f"{n} {s:.0f}s" for n, s in took))
    if failures:
        print("failed:", ", ".join(failures))
    print(f"{totals['passed']} passed, {totals['failed']} failed")
    return 1 if totals["failed"] or failures else 0


if __name__ == "__main__":
    sys.exit(main())
