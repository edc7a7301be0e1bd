#!/bin/bash
# The Python wheel on a GPU machine (docs/python.md): installed with `pip install --no-deps --target` into a
# folder of its own, then from there: `python3 -m async_lab --version`; the pytest plugin on a PyTorch test file
# (wheel/test_torch_transfers.py: with --async-lab-fail-on-held=1ms the pageable test fails naming its line,
# `blocking` and pinned memory, the pinned test passes; without the option both pass); the plugin on a test file
# as people write one (wheel/test_torch_model.py: exactly the pageable copy and the .item() behind the model's
# work fail, with PyTorch's remedies, none for what is paid once; with --async-lab-fail-on-warm-up the pinned
# test's cudaHostAlloc fails it too); `no_blocking` raising
# at the right line in a program that used torch before the block (wheel/gate_no_blocking.py); `watch`
# returning a block's held calls, and what a late subscriber misses (wheel/gate_watch.py); the gate inside
# torch.profiler (wheel/gate_profiler.py). Everything it prints goes to OUT_DIR/wheel-check.log; it exits 1 if
# any check failed. About two minutes on an H200 (seven Python processes that import torch). Where python3 has no
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
check "the failure names pinned memory as the remedy" 'grep -q "remedy: Pin the host memory: DataLoader" <<<"$out"'

echo "=== pytest --async-lab-fail-on-held=1ms test_torch_model.py"
timeout -k 10 180 python3 -m pytest -p no:cacheprovider -rA --async-lab-fail-on-held=1ms test_torch_model.py > "$W/pytest-model.txt" 2>&1
rc=$?
cat "$W/pytest-model.txt"
out=$(cat "$W/pytest-model.txt")
check "model: pytest exits 1 (a test failed)" '[ $rc -eq 1 ]'
for t in test_pageable_copy test_item_after_the_models_work; do
  check "model: $t failed" 'grep -q "^FAILED test_torch_model.py::$t" <<<"$out"'
done
for t in test_pinned_copy test_item_with_the_limit_lifted test_on_the_cpu_only; do
  check "model: $t passed" 'grep -q "^PASSED test_torch_model.py::$t" <<<"$out"'
done
check "model: exactly two tests failed" '[ "$(grep -c "^FAILED test_torch_model.py::" <<<"$out")" -eq 2 ]'
check "model: the pageable copy reads blocking, with PyTorch's pinned memory" 'grep -q "class blocking" <<<"$out" && grep -q "remedy: Pin the host memory: DataLoader" <<<"$out"'
check "model: the .item() is a synchronization, with PyTorch's remedy" 'grep -qE "test_item_after_the_models_work: (cudaMemcpyAsync|cudaStreamSynchronize) held this thread" <<<"$out" && grep -q "remedy: Synchronize less often, only where the host needs a value: .item()" <<<"$out"'
check "model: no test failed for a load or an allocation paid once" '! grep -qE "held this thread.*class driver-work|cuLibraryLoadData|cuModuleLoad|cudaHostAlloc held|cudaMalloc held" <<<"$out"'

echo "=== pytest --async-lab-fail-on-held=1ms --async-lab-fail-on-warm-up test_torch_model.py"
timeout -k 10 180 python3 -m pytest -p no:cacheprovider -rA --async-lab-fail-on-held=1ms --async-lab-fail-on-warm-up test_torch_model.py > "$W/pytest-warm.txt" 2>&1
cat "$W/pytest-warm.txt"
out=$(cat "$W/pytest-warm.txt")
check "model, warm-up gated: the pinned test fails on its cudaHostAlloc, paid once" 'grep -q "^FAILED test_torch_model.py::test_pinned_copy" <<<"$out" && grep -q "paid once" <<<"$out"'

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
