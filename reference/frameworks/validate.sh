#!/bin/bash
# The framework programs of this folder, traced and untraced, on a GPU machine (docs/trace.md, "Programs we
# did not write"). BIN_DIR holds async-lab and libasync_lab_inject.so (`cargo xtask bundle`); everything
# written goes to OUT_DIR: log.txt and frameworks.tar.xz (each traced program's trace and output, and each
# untraced run's output: the program's own step timings are its `async-lab-step` lines).
# Usage: reference/frameworks/validate.sh BIN_DIR OUT_DIR [PROGRAM...]   (default: every program; NAME_all-calls
# traces NAME with --all-calls)
set -u
here=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${1:?usage: validate.sh BIN_DIR OUT_DIR}" && pwd)
OUT=$(mkdir -p "${2:?usage: validate.sh BIN_DIR OUT_DIR}" && cd "$2" && pwd)
shift 2
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
W=$(mktemp -d)
exec > >(tee "$OUT/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import sys, torch, cupy, jax; print(sys.version.split()[0], "torch", torch.__version__, "cupy", cupy.__version__, "jax", jax.__version__)'
AL="$BIN/async-lab"
programs=("$@")
[ ${#programs[@]} -eq 0 ] && programs=(torch_transfers torch_threads torch_train torch_train_all-calls cupy_program jax_program native_program)
cd "$here"
for p in "${programs[@]}"; do
  name=${p%% *}
  extra=()
  if [ "${name%_all-calls}" != "$name" ]; then
    # The same program traced with every call, the getters and queries too (--all-calls).
    extra=(--all-calls); p=${name%_all-calls}
  fi
  if [ "$p" = native_program ]; then
    # Built with symbols, so its held calls carry native frames.
    "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" -g -O2 -arch=sm_90 -o "$W/native_program" native_program.cu || { echo "=== nvcc failed"; continue; }
    cmd=("$W/native_program")
  else
    cmd=(python3 $p.py)
  fi
  echo "=== untraced $p"; t0=$SECONDS
  timeout -k 10 120 "${cmd[@]}" > "$W/untraced-$name.txt" 2>&1; echo "=== rc=$? after $((SECONDS-t0)) s"
  grep -v '^async-lab-step' "$W/untraced-$name.txt" | tail -5
  echo "=== traced $p"; t0=$SECONDS
  timeout -s INT -k 20 150 "$AL" trace "${extra[@]}" --out "$W/trace-$name.jsonl" --top 12 -- "${cmd[@]}" > "$W/traced-$name.txt" 2>&1
  echo "=== rc=$? after $((SECONDS-t0)) s"; grep -v '^async-lab-step' "$W/traced-$name.txt" | head -60
done
(cd "$W" && tar cf - . | xz -T0 -6 > "$OUT/frameworks.tar.xz"); ls -la "$OUT"
date -u
