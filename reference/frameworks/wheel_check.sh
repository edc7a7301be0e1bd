#!/bin/bash
# The Python wheel on a GPU machine (docs/python.md): installed with `pip install --no-deps --target` into a
# folder of its own, then from there: `python3 -m async_lab --version`; the pytest plugin on a PyTorch test file
# (wheel/test_torch_transfers.py: with --async-lab-fail-on-held=1ms the pageable test fails naming its line,
# `blocking` and pinned memory, the pinned test passes; without the option both pass); `no_blocking` raising
# at the right line in a program that used torch before the block (wheel/gate_no_blocking.py); `watch`
# returning a block's held calls, and what a late subscriber misses (wheel/gate_watch.py); the gate inside
# torch.profiler (wheel/gate_profiler.py). Everything it prints goes to OUT_DIR/wheel-check.log; it exits 1 if
# any check failed. About a minute on an H200 (five Python processes that import torch). Where python3 has no
# pytest, WHEELS_DIR may hold the wheels of pytest and its dependencies (`pip download -d WHEELS_DIR pytest`),
# installed the same way.
# Usage: reference/frameworks/wheel_check.sh WHEEL OUT_DIR [WHEELS_DIR]
set -u
here=$(cd "$(dirname "$0")" && pwd)
WHEEL=$(realpath "${1:?usage: wheel_check.sh WHEEL OUT_DIR}")
OUT=$(mkdir -p "${2:?usage: wheel_check.sh WHEEL OUT_DIR}" && cd "$2" && pwd)
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
W=$(mktemp -d)
exec > >(tee "$OUT/wheel-check.log") 2>&1
failed=()
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
echo "=== pip install --no-deps --target $W/site $(basename "$WHEEL")"
python3 -m pip install --quiet --no-deps --target "$W/site" "$WHEEL" || { echo "FAIL pip install"; exit 1; }
export PYTHONPATH="$W/site${PYTHONPATH:+:$PYTHONPATH}"
if ! python3 -m pytest --version 2>/dev/null && [ -n "${3:-}" ]; then
  echo "=== pytest from $3"
  python3 -m pip install --quiet --no-deps --target "$W/site" "$3"/*.whl
fi
if ! python3 -m pytest --version; then
  echo "FAIL pytest is not installed for python3 here: carry the wheels of pytest, pluggy, iniconfig and packaging"
  echo "     (pip download pytest) and pip install --no-deps --target them beside this one"
  exit 1
fi

echo "=== python3 -m async_lab --version"
python3 -m async_lab --version || failed+=(version)

cd "$here/wheel"
echo "=== pytest --async-lab-fail-on-held=1ms test_torch_transfers.py"
timeout -k 10 120 python3 -m pytest -p no:cacheprovider -rA --async-lab-fail-on-held=1ms test_torch_transfers.py > "$W/pytest-gated.txt" 2>&1
rc=$?
cat "$W/pytest-gated.txt"
line=$(grep -n '# the held call' test_torch_transfers.py | cut -d: -f1)
out=$(cat "$W/pytest-gated.txt")
check() { if eval "$2"; then echo "PASS $1"; else echo "FAIL $1"; failed+=("$1"); fi; }
check "pytest exits 1 (a test failed)" '[ $rc -eq 1 ]'
check "the pageable test failed" 'grep -q "^FAILED test_torch_transfers.py::test_pageable_copies" <<<"$out"'
check "the pinned test passed" 'grep -q "^PASSED test_torch_transfers.py::test_pinned_copies" <<<"$out"'
check "the failure names the line of the copy ($line)" 'grep -q "test_torch_transfers.py:$line test_pageable_copies: cudaMemcpyAsync held this thread" <<<"$out"'
check "the failure says blocking" 'grep -q "class blocking" <<<"$out"'
check "the failure names pinned memory as the remedy" 'grep -q "remedy: pin the host memory" <<<"$out"'

echo "=== pytest test_torch_transfers.py (no limit)"
timeout -k 10 120 python3 -m pytest -p no:cacheprovider -q test_torch_transfers.py; rc=$?
check "without the option both tests pass" '[ $rc -eq 0 ]'

for program in gate_no_blocking gate_watch gate_profiler; do
  echo "=== python3 $program.py"
  timeout -k 10 120 python3 "$program.py"; rc=$?
  check "$program.py" '[ $rc -eq 0 ]'
done

rm -rf "$W"
echo "=== ${#failed[@]} failed${failed[*]:+: ${failed[*]}}"
[ ${#failed[@]} -eq 0 ]
