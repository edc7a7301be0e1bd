#!/bin/bash
# What a trace keeps over a program's life, on a GPU machine (docs/trace.md: "The driver's own word", "Nothing
# lost", "Room for torch.profiler"):
#  1. lazy_load.cu under CUDA_MODULE_LOADING=LAZY: a first launch right behind a 50 ms kernel in its own stream
#     and on another stream, the kernel launched first in the same module (function) or its own (module),
#     untraced and traced: CUPTI's overhead records of the loads, and what the tracer reads of each launch;
#     then lazy_torch.py: PyTorch's first g.sum() behind a 50 ms torch.cuda._sleep on its stream (same) and
#     behind another thread's on that thread's stream (other), traced as trace-lazy_torch-{same,other}.jsonl;
#  2. killed.py: six held 250 ms device -> host copies, then SIGKILL 0.3 s after the last, traced with the
#     toolkit's CUPTI and with the newer one: the calls and their GPU records must be in the trace;
#  3. torch_profiler.py (torch.profiler started after CUDA) untraced with the newer CUPTI preloaded, traced
#     with the toolkit's CUPTI (one subscriber: the notice) and with the newer one (several subscribers): how
#     many CUDA kernels the profiler saw, and whether the tracer's trace still holds the profiled kernels;
#  4. what handing CUPTI's buffers back on the 200 ms flush costs: the C loop of launches and the PyTorch loop
#     of small ops, untraced and traced with the defaults (hand-back, 1 MiB buffers), without hand-back
#     (ASYNC_LAB_FLUSH_RECORDS=0), with 4 MiB buffers, and with both as before (4 MiB, no hand-back),
#     interleaved.
# BIN_DIR holds async-lab and libasync_lab_inject.so (`cargo xtask bundle`); CUPTI_SITE is the folder
# `pip install --no-deps --target CUPTI_SITE nvidia-cuda-cupti==13.5.25` filled (its
# nvidia/cu13/lib/libcupti.so.13); without it the runs that need the newer CUPTI are skipped (and say so).
# Writes OUT_DIR/log.txt and OUT_DIR/lifetime.tar.xz (every trace, every program's output, the replays).
# About 3 minutes (under 2 with LIFETIME_COST=0, which leaves part 4 out). Usage: reference/frameworks/lifetime.sh BIN_DIR OUT_DIR [CUPTI_SITE]
set -u
here=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${1:?usage: lifetime.sh BIN_DIR OUT_DIR [CUPTI_SITE]}" && pwd)
OUT=$(mkdir -p "${2:?usage: lifetime.sh BIN_DIR OUT_DIR [CUPTI_SITE]}" && cd "$2" && pwd)
SITE=${3:-}
NEW_CUPTI=""
[ -n "$SITE" ] && [ -f "$SITE/nvidia/cu13/lib/libcupti.so.13" ] && NEW_CUPTI=$(cd "$SITE/nvidia/cu13/lib" && pwd)/libcupti.so.13
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
W=$(mktemp -d)
exec > >(tee "$OUT/log.txt") 2>&1
tee_pid=$!
AL="$BIN/async-lab"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
start=$SECONDS
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
echo "newer CUPTI: ${NEW_CUPTI:-none (no CUPTI_SITE given, or no nvidia/cu13/lib/libcupti.so.13 in it)}"

# What a trace holds: its CUPTI, how the tracer subscribed, its line types, overhead records, conflicts, and
# whether it ended.
facts() {
  python3 - "$1" <<'PY'
import collections, json, sys
kinds, overheads, conflicts, setup, header, end = collections.Counter(), [], [], None, None, False
for raw in open(sys.argv[1]):
    try:
        l = json.loads(raw)
    except ValueError:
        continue
    kinds[l["type"]] += 1
    if l["type"] == "header" and header is None: header = l
    if l["type"] == "setup" and setup is None: setup = l
    if l["type"] == "overhead": overheads.append(l)
    if l["type"] == "conflict": conflicts.append(l)
    if l["type"] == "end": end = True
print("  trace:", sys.argv[1].rsplit("/", 1)[-1], "| cupti", header and header.get("cupti_version"),
      "| several_subscribers", setup and setup.get("several_subscribers"), "| ended" if end else "| partial (no end line)")
print("  lines:", dict(sorted(kinds.items())))
for o in overheads[:12]:
    print("  overhead:", o["kind"], "corr", o.get("corr"), "stream", o.get("stream"), "queue", o.get("queue_length"),
          "%.3f ms" % ((o["end"] - o["start"]) / 1e6))
for c in conflicts:
    print("  conflict:", c)
PY
}

# The held launch of a lazy_load trace explained: the cudaLaunchKernel that held longest.
explain_longest() { # trace name
  local corr
  corr=$(python3 - "$1" "$2" <<'PY'
import json, sys
best = None
for raw in open(sys.argv[1]):
    try:
        l = json.loads(raw)
    except ValueError:
        continue
    if l.get("type") == "api" and l.get("name", "").startswith(sys.argv[2]):
        d = l["end"] - l["start"]
        if best is None or d > best[0]:
            best = (d, l["corr"])
print(best[1] if best else "")
PY
)
  [ -n "$corr" ] && "$AL" trace --replay "$1" --explain "$corr"
}

echo "=== build"
"$NVCC" -O2 -g -arch=sm_90 -o "$W/lazy_load" "$here/lazy_load.cu" "$here/lazy_load_module.cu" || echo "=== nvcc lazy_load failed"
"$NVCC" -O2 -arch=sm_90 -o "$W/enqueue_loop" "$here/../enqueue_loop.cu" || echo "=== nvcc enqueue_loop failed"

echo "=== 1. lazy loading behind a long kernel ($((SECONDS-start)) s)"
if [ -x "$W/lazy_load" ]; then
  for kernel in function module; do
    for stream in same other; do
      name=lazy_load-$stream-$kernel
      echo "--- $name untraced"
      CUDA_MODULE_LOADING=LAZY timeout -k 5 30 "$W/lazy_load" "$stream" "$kernel" 50 > "$W/untraced-$name.txt" 2>&1
      echo "rc=$?"; cat "$W/untraced-$name.txt"
      echo "--- $name traced"
      CUDA_MODULE_LOADING=LAZY timeout -k 5 60 "$AL" trace --out "$W/trace-$name.jsonl" --top 6 -- \
        "$W/lazy_load" "$stream" "$kernel" 50 > "$W/traced-$name.txt" 2>&1
      echo "rc=$?"; head -40 "$W/traced-$name.txt"
      [ -f "$W/trace-$name.jsonl" ] && { facts "$W/trace-$name.jsonl"; explain_longest "$W/trace-$name.jsonl" cudaLaunchKernel > "$W/explain-$name.txt" 2>&1; cat "$W/explain-$name.txt"; }
    done
  done
fi

for where in same other; do
  name=lazy_torch-$where
  echo "--- $name untraced"
  timeout -k 5 60 python3 "$here/lazy_torch.py" "$where" 2>&1 | tail -3
  echo "--- $name traced"
  timeout -k 5 90 "$AL" trace --out "$W/trace-$name.jsonl" --top 6 -- python3 "$here/lazy_torch.py" "$where" \
    > "$W/traced-$name.txt" 2>&1
  echo "rc=$?"; head -40 "$W/traced-$name.txt"
  [ -f "$W/trace-$name.jsonl" ] && { facts "$W/trace-$name.jsonl"; explain_longest "$W/trace-$name.jsonl" cudaLaunchKernel > "$W/explain-$name.txt" 2>&1; cat "$W/explain-$name.txt"; }
done

echo "=== 2. killed by SIGKILL 0.3 s after its last held copy ($((SECONDS-start)) s)"
for cupti in toolkit newer; do
  args=()
  if [ $cupti = newer ]; then
    [ -n "$NEW_CUPTI" ] || { echo "--- killed-$cupti skipped: no newer CUPTI"; continue; }
    args=(--cupti "$NEW_CUPTI")
  fi
  name=killed-$cupti
  echo "--- $name traced"
  timeout -k 5 90 "$AL" trace "${args[@]}" --out "$W/trace-$name.jsonl" --top 12 -- python3 "$here/killed.py" > "$W/traced-$name.txt" 2>&1
  echo "rc=$?"; cat "$W/traced-$name.txt" | head -60
  [ -f "$W/trace-$name.jsonl" ] && facts "$W/trace-$name.jsonl"
done

echo "=== 3. torch.profiler under the tracer ($((SECONDS-start)) s)"
if [ -n "$NEW_CUPTI" ]; then
  echo "--- profiler untraced, the newer CUPTI preloaded"
  LD_PRELOAD="$NEW_CUPTI" timeout -k 5 90 python3 "$here/torch_profiler.py" > "$W/untraced-profiler-newer.txt" 2>&1
  echo "rc=$?"; tail -5 "$W/untraced-profiler-newer.txt"
fi
for cupti in toolkit newer; do
  args=()
  if [ $cupti = newer ]; then
    [ -n "$NEW_CUPTI" ] || { echo "--- profiler-$cupti skipped: no newer CUPTI"; continue; }
    args=(--cupti "$NEW_CUPTI")
  fi
  name=torch_profiler-$cupti
  echo "--- $name traced"
  timeout -k 5 120 "$AL" trace "${args[@]}" --out "$W/trace-$name.jsonl" --top 6 -- python3 "$here/torch_profiler.py" > "$W/traced-$name.txt" 2>&1
  echo "rc=$?"; head -40 "$W/traced-$name.txt"
  if [ -f "$W/trace-$name.jsonl" ]; then
    facts "$W/trace-$name.jsonl"
    # Whole: the tracer's kernel records of the profiled loop (20 `mul_`) after the profiler subscribed.
    python3 - "$W/trace-$name.jsonl" <<'PY'
import json, sys
lines = []
for raw in open(sys.argv[1]):
    try:
        lines.append(json.loads(raw))
    except ValueError:
        pass
t = min((l["t"] for l in lines if l["type"] == "conflict"), default=None)
kernels = [l for l in lines if l["type"] == "kernel" and (t is None or l["start"] > t)]
launches = [l for l in lines if l["type"] == "api" and "LaunchKernel" in l["name"] and (t is None or l["start"] > t)]
print("  after the profiler subscribed:", len(launches), "launch calls,", len(kernels), "kernel records",
      "(whole)" if kernels and len(kernels) * 2 >= len(launches) else "(NOT whole)")
PY
  fi
done

# LIFETIME_COST=0 leaves part 4 out (a run that measures the cost elsewhere).
if [ "${LIFETIME_COST:-1}" != 0 ]; then
echo "=== 4. what handing buffers back costs ($((SECONDS-start)) s)"
run() { # variant program...
  local v=$1; shift
  local t=(timeout -k 5 60)
  case $v in
    untraced) "${t[@]}" "$@" ;;
    traced) "${t[@]}" "$AL" trace --out "$W/t.jsonl" --top 0 -- "$@" 2>/dev/null | grep '^{' ;;
    no-hand-back) ASYNC_LAB_FLUSH_RECORDS=0 "${t[@]}" "$AL" trace --out "$W/t.jsonl" --top 0 -- "$@" 2>/dev/null | grep '^{' ;;
    buffer-4MiB) ASYNC_LAB_BUFFER_KIB=4096 "${t[@]}" "$AL" trace --out "$W/t.jsonl" --top 0 -- "$@" 2>/dev/null | grep '^{' ;;
    before) ASYNC_LAB_FLUSH_RECORDS=0 ASYNC_LAB_BUFFER_KIB=4096 "${t[@]}" "$AL" trace --out "$W/t.jsonl" --top 0 -- "$@" 2>/dev/null | grep '^{' ;;
  esac
}
for i in 1 2 3; do
  for v in untraced traced no-hand-back buffer-4MiB before; do
    if [ -x "$W/enqueue_loop" ]; then echo "c $v $(run $v "$W/enqueue_loop" 50000 | tail -1)"; fi
    if [ "$i" -le 2 ]; then echo "torch $v $(run $v python3 "$here/torch_add_loop.py" 20000 10 | tail -1)"; fi
  done
done | tee "$W/cost-runs.txt"
python3 - "$W/cost-runs.txt" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    parts = line.split(" ", 2)
    if len(parts) < 3:
        continue
    prog, variant, js = parts
    try:
        d = json.loads(js)
    except ValueError:
        continue
    if prog == "torch":
        runs.setdefault((prog, variant, "mean us/op"), []).append(d["mean_us_per_op"])
        runs.setdefault((prog, variant, "median us/op"), []).append(d["median_us_per_op"])
    else:
        runs.setdefault((prog, variant, "median us/launch"), []).append(d["median_ns"] / 1e3)
        runs.setdefault((prog, variant, "p99 us/launch"), []).append(d["p99_ns"] / 1e3)
for (prog, variant, what), r in sorted(runs.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1])):
    base = statistics.median(runs.get((prog, "untraced", what), [float("nan")]))
    m = statistics.median(r)
    print(f"{prog:5} {what:17} {variant:13} median {m:8.3f}  spread {min(r):.3f}-{max(r):.3f}  n={len(r)}  ratio {m / base:.3f}")
PY

fi

echo "=== done after $((SECONDS-start)) s"
(cd "$W" && rm -f t.jsonl lazy_load enqueue_loop && tar cf - . | xz -T0 -6 > "$OUT/lifetime.tar.xz")
ls -la "$OUT"
date -u
# The log is whole once tee has read everything: close its input, then wait for it (never a bare `wait`).
exec >&- 2>&-
wait "$tee_pid" 2>/dev/null
exit 0
