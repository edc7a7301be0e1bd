#!/bin/bash
# The framework programs of this folder traced on a GPU machine (docs/trace.md, "Programs we did not write").
# By default the programs written the way users write them (no NVTX): the ResNet-18 training loop with a
# DataLoader, Hugging Face generate(), CuPy, JAX, the C++ cuBLAS program, a JAX training loop (jax_train.py:
# XLA's threads make the CUDA calls while Python waits in float(loss)) and a kernel's first launch behind long
# work (torch_lazy_behind.py); any other program of this folder by name (NAME_all-calls traces NAME with
# --all-calls; NAME_pin passes --pin).
# BIN_DIR holds async-lab and libasync_lab_inject.so (`cargo xtask bundle`). Everything written goes to OUT_DIR:
# - log.txt: the device log (machine, versions, each run's output, each trace's locations summed up);
# - frameworks.tar.xz: each program's trace cut to its held calls (--keep-held), named as recordings are
#   (trace-NAME-h200-driverVERSION-DATE-COMMIT.jsonl; COMMIT from $COMMIT, else git, else "unknown"), the
#   traced and untraced runs' output (the programs' own step timings are their `async-lab-step` lines);
# - full-traces.tar.xz: the whole traces.
# About 6 minutes on the H200 for the default programs.
# Usage: reference/frameworks/validate.sh BIN_DIR OUT_DIR [PROGRAM...]
set -u
here=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${1:?usage: validate.sh BIN_DIR OUT_DIR}" && pwd)
OUT=$(mkdir -p "${2:?usage: validate.sh BIN_DIR OUT_DIR}" && cd "$2" && pwd)
shift 2
# The machine has no network: Hugging Face must not try the hub.
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
W=$(mktemp -d)
mkdir -p "$W/keep" "$W/full" "$W/out"
exec > >(tee "$OUT/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import sys, torch, torchvision, transformers, cupy, jax; print(sys.version.split()[0], "torch", torch.__version__, "torchvision", torchvision.__version__, "transformers", transformers.__version__, "cupy", cupy.__version__, "jax", jax.__version__)'
AL="$BIN/async-lab"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
DRIVER=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1 | tr -d ' ')
COMMIT=${COMMIT:-$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)}
STAMP="h200-driver$DRIVER-$(date -u +%F)-$COMMIT"
# The programs also run untraced (their own step times beside the traced run's): $UNTRACED names them.
UNTRACED=${UNTRACED:-torch_resnet_train}
programs=("$@")
[ ${#programs[@]} -eq 0 ] && programs=(torch_resnet_train hf_generate cupy_program jax_program cublas_program jax_train torch_lazy_behind)
cd "$here"
for name in "${programs[@]}"; do
  p=$name extra=() args=()
  case $name in
    *_all-calls) p=${name%_all-calls}; extra=(--all-calls) ;;
    *_pin) p=${name%_pin}; args=(--pin) ;;
  esac
  case $p in
    native_program | cublas_program)
      # Built with symbols, so its held calls carry native frames and source lines.
      lib=(); [ "$p" = cublas_program ] && lib=(-lcublas)
      "$NVCC" -g -O2 -arch=sm_90 -o "$W/$p" "$p.cu" "${lib[@]}" || { echo "=== nvcc $p failed"; continue; }
      cmd=("$W/$p" "${args[@]}") ;;
    *) cmd=(python3 "$p.py" "${args[@]}") ;;
  esac
  if [[ " $UNTRACED " == *" $name "* ]]; then
    echo "=== untraced $name"; t0=$SECONDS
    timeout -k 10 150 "${cmd[@]}" > "$W/out/untraced-$name.txt" 2>&1; echo "=== rc=$? after $((SECONDS-t0)) s"
    grep -v '^async-lab-step' "$W/out/untraced-$name.txt" | tail -3
  fi
  echo "=== traced $name"; t0=$SECONDS
  timeout -s INT -k 20 180 "$AL" trace "${extra[@]}" --out "$W/full/trace-$name-$STAMP.jsonl" \
    --keep-held "$W/keep/trace-$name-$STAMP.jsonl" --top 12 -- "${cmd[@]}" > "$W/out/traced-$name.txt" 2>&1
  echo "=== rc=$? after $((SECONDS-t0)) s"
  grep -v '^async-lab-step' "$W/out/traced-$name.txt" | grep -v '^step [0-9]*: loss' | head -70
  # What the trace's locations cost and cover (the test in tests/tests/user_programs.rs checks the committed
  # traces exactly; this is the log's quick look).
  python3 - "$W/full/trace-$name-$STAMP.jsonl" <<'PY'
import json, statistics, sys
calls, locs, took = {}, {}, []
for raw in open(sys.argv[1]):
    try:
        line = json.loads(raw)
    except ValueError:
        continue
    if line.get("type") == "api":
        calls.setdefault(line["corr"], []).append(line)
    elif line.get("type") in ("location", "same-location"):
        # A same-location line stands for the location of call `as_corr` (a repeated stack written once).
        locs[line["corr"]] = locs.get(line["as_corr"], line) if line["type"] == "same-location" else line
        if line.get("took_ns") is not None:
            took.append(line["took_ns"])
python_threads = {l["tid"] for l in locs.values() if l.get("python")}
outer = [max(c, key=lambda a: a["end"] - a["start"]) for c in calls.values()]
held = lambda a, ns: a["end"] - a["start"] >= ns
long_unlocated = [a for a in outer if held(a, 10_000_000) and a["corr"] not in locs]
py_held = [a for a in outer if held(a, 1_000_000) and a["tid"] in python_threads]
with_py = [a for a in py_held if locs.get(a["corr"], {}).get("python")]
if took:
    print(f"locations: {len(locs)}, took_ns median {statistics.median(took):.0f} max {max(took)}")
else:
    print(f"locations: {len(locs)}, no took_ns")
print(f"held >= 1 ms on threads with Python frames: {len(py_held)}, of them with Python frames: {len(with_py)}")
short = [a for a in outer if held(a, 200_000) and a["tid"] in python_threads]
short_py = [a for a in short if locs.get(a["corr"], {}).get("python")]
print(f"held >= 200 us on threads with Python frames: {len(short)}, of them with Python frames: {len(short_py)}")
# Threads that run no Python: what the Python threads were doing when their held calls returned.
others = [a for a in outer if held(a, 1_000_000) and a["tid"] not in python_threads]
seen = [a for a in others if any(t.get("python") for t in locs.get(a["corr"], {}).get("others", []))]
print(f"held >= 1 ms on threads without Python: {len(others)}, of them with the Python threads' frames: {len(seen)}")
print(f"held >= 10 ms without a location: {len(long_unlocated)} {[(a['name'], a['corr']) for a in long_unlocated][:8]}")
# Format 5: the Python threads' frames when a call of a thread that runs no Python returned, the threads' names.
with_others = [l for l in locs.values() if l.get("others")]
waiting = [l for l in with_others if any(not o.get("gil") and o.get("python") for o in l["others"])]
print(f"locations with the Python threads' frames: {len(with_others)}, of them with a thread without the GIL: {len(waiting)}")
PY
  grep -c '"type":"thread"' "$W/full/trace-$name-$STAMP.jsonl" | sed 's/^/thread names: /' 
done
(cd "$W" && tar cf - keep out | xz -T0 -6 > "$OUT/frameworks.tar.xz")
(cd "$W" && tar cf - full | xz -T0 -6 > "$OUT/full-traces.tar.xz")
ls -la "$OUT"
date -u
