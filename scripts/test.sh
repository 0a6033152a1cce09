#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what it needs, builds the
# release and the ASan+UBSan variants, runs every stage, and ends with the
# line "N passed, N failed".  Extra arguments go to scripts/run_tests.py.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
make -j"$(nproc)"
make -j"$(nproc)" MODE=asan
exec python3 scripts/run_tests.py "$@"
