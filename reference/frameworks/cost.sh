#!/bin/bash
# What `async-lab trace` costs (docs/trace.md, "Cost"), part by part, on three programs:
#   torch-train-step  torch_resnet_train.py --pin: a ResNet-18 training step with a DataLoader, median ms a step
#   torch-small-ops   torch_add_loop.py: 20,000 `x.add_(1.0)`, µs per op, the mean over the whole loop
#   c-launch-loop     reference/enqueue_loop.cu: 20,000 launches of an empty kernel, µs per launch, the mean
# each untraced, traced with the defaults, and traced with one part switched off or changed (the injection
# library's variables, read once at its start: trace-inject/src/switches.rs), interleaved, ROUNDS rounds:
#   all-records     --all-records: every call and GPU record written (the trace before the bounded one)
#   no-locations    --locate-over 10s: no call located
#   writer-unwritten  lines made on the library's thread, none written
#   writer-none     the callbacks take their times and record nothing (CUPTI's callbacks and records alone)
#   no-gpu-records  no activity record (CUPTI's callbacks and the writer alone)
#   kernels-only    the kernel records alone among the GPU records
#   no-kernels      every GPU record kind but the kernels'
#   per-thread-buffers  CUPTI's activity buffers one per thread (ASYNC_LAB_CUPTI_PER_THREAD_BUFFERS=1)
#   with-api-records  the defaults, and CUPTI's API records of every call as well (read by nothing)
#   no-callbacks    no callback domain (the GPU records alone)
#   runtime-only    the runtime's callbacks, not the driver's (each launch is a runtime call and a driver call)
#   api-records     CUPTI's API records of every call in place of the API callbacks (read by nothing): beside
#                   no-callbacks, what taking calls from records instead of callbacks would cost
# $COST_VARIANTS (default "untraced traced no-locations writer-none no-gpu-records no-callbacks api-records
# all-records")
# and $COST_PROGRAMS (default "torch-train-step torch-small-ops c-launch-loop") pick which.
#
# BIN_DIR holds async-lab and libasync_lab_inject.so (`cargo xtask bundle`); nvcc builds the C loop. Writes
# into OUT (default: a new temporary folder): runs.txt (each run's JSON line), cost.log, and
# trace-cost-<card>-<driver>-<date>-<commit>.json, a list of {"program", "variant", "median", "unit", "ratio",
# "min", "max", "n"} (+ "delta_us" for the C loop): the median over the rounds, its spread, the ratio to
# untraced's median. <commit> is $COST_COMMIT (the commit the bundle was built from), else "unknown".
#
# Then (unless COST_TRACES=0) the training loop traced once bounded (200 steps) and once with --all-records (10
# steps), both written by `--out NAME.jsonl.gz` (compressed) into OUT (trace-torch_resnet_train-bounded.jsonl.gz,
# trace-torch_resnet_train-all-records.jsonl.gz), their bytes per second in the log: as stored, and as the lines
# themselves, over the whole trace and over its second half (the loop's steady state, start-up and lazy loading
# over; there the stored bytes are the lines' at the compression the whole file got).
#
# Time on the H200 (estimated, not yet run): about 100 s a round with the default variants (the training step
# about 8 s a run, the small ops 4 s, the C loop 1 s), 3 rounds about 5 minutes, the two traces 30 s more.
# Each run is cut at 90 s.
# Usage: reference/frameworks/cost.sh BIN_DIR [ROUNDS] [OUT]   (default 3 rounds)
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${1:?usage: cost.sh BIN_DIR [ROUNDS] [OUT]}" && pwd)
ROUNDS=${2:-3}
OUT=${3:-$(mktemp -d)}
mkdir -p "$OUT"
AL="$BIN/async-lab"
W=$(mktemp -d)
VARIANTS=${COST_VARIANTS:-untraced traced no-locations writer-none no-gpu-records no-callbacks api-records all-records}
PROGRAMS=${COST_PROGRAMS:-torch-train-step torch-small-ops c-launch-loop}
exec > >(tee "$OUT/cost.log") 2>&1
tee_pid=$!
start=$SECONDS
nvcc -O2 -g -arch=sm_90 -o "$W/enqueue_loop" "$here/../enqueue_loop.cu" || exit 1
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
echo "$GPU"
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
"$AL" --version
traced() { # env... -- program...
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" timeout 90 "$AL" trace --out "$W/t.jsonl" --top 0 "${TRACE_ARGS[@]}" -- "$@" 2>"$W/trace.err" | grep '^{'
  ls -l "$W/t.jsonl" | awk '{print "trace bytes", $5}' >&2
}
run() { # variant program...
  local v=$1; shift
  TRACE_ARGS=()
  case $v in
    untraced) timeout 90 "$@" ;;
    traced) traced -- "$@" ;;
    all-records) TRACE_ARGS=(--all-records); traced -- "$@" ;;
    no-locations) TRACE_ARGS=(--locate-over 10s); traced -- "$@" ;;
    writer-unwritten) traced ASYNC_LAB_TRACE_WRITER=unwritten -- "$@" ;;
    writer-none) traced ASYNC_LAB_TRACE_WRITER=none -- "$@" ;;
    no-gpu-records) traced ASYNC_LAB_TRACE_KINDS=none -- "$@" ;;
    kernels-only) traced ASYNC_LAB_TRACE_KINDS=kernel -- "$@" ;;
    no-kernels) traced ASYNC_LAB_TRACE_KINDS=memcpy,memset,sync,event,overhead -- "$@" ;;
    per-thread-buffers) traced ASYNC_LAB_CUPTI_PER_THREAD_BUFFERS=1 -- "$@" ;;
    with-api-records) traced ASYNC_LAB_TRACE_KINDS=memcpy,memset,kernel,sync,event,overhead,api -- "$@" ;;
    no-callbacks) traced ASYNC_LAB_TRACE_DOMAINS=none -- "$@" ;;
    runtime-only) traced ASYNC_LAB_TRACE_DOMAINS=runtime,resource,nvtx -- "$@" ;;
    api-records) traced ASYNC_LAB_TRACE_DOMAINS=resource,nvtx \
      ASYNC_LAB_TRACE_KINDS=memcpy,memset,kernel,sync,event,overhead,api -- "$@" ;;
    *) echo "unknown variant $v" >&2; return 1 ;;
  esac
}
program() { # name
  case $1 in
    torch-train-step) echo python3 "$here/torch_resnet_train.py" --pin --steps 30 --warmup 5 ;;
    torch-small-ops) echo python3 "$here/torch_add_loop.py" 20000 10 ;;
    c-launch-loop) echo "$W/enqueue_loop" 20000 ;;
  esac
}
for i in $(seq "$ROUNDS"); do
  for v in $VARIANTS; do
    for p in $PROGRAMS; do
      t0=$(date +%s.%N)
      line=$(run "$v" $(program "$p") | tail -1)
      echo "$p $v $line"
      echo "# round $i $p $v: $(awk "BEGIN{print $(date +%s.%N) - $t0}") s" >&2
    done
  done
done | tee "$OUT/runs.txt"
card=$(echo "$GPU" | cut -d, -f1 | awk '{print tolower($NF)}')
driver=$(echo "$GPU" | cut -d, -f2 | tr -d ' ')
name="trace-cost-$card-driver$driver-$(date +%F)-${COST_COMMIT:-unknown}.json"
python3 - "$OUT/runs.txt" "$OUT/$name" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    prog, variant, js = (line.rstrip("\n").split(" ", 2) + ["", ""])[:3]
    try:
        d = json.loads(js)
    except ValueError:
        continue
    if prog == "torch-train-step":
        v, unit = d["median_step_ms"], "ms per step"
    elif prog == "torch-small-ops":
        v, unit = d["mean_us_per_op"], "us per op"
    else:
        v, unit = d["mean_ns"] / 1e3, "us per launch"
    runs.setdefault((prog, variant), (unit, []))[1].append(v)
out = []
for (prog, variant), (unit, r) in runs.items():
    base = statistics.median(runs.get((prog, "untraced"), (unit, [float("nan")]))[1])
    m = statistics.median(r)
    row = {"program": prog, "variant": variant, "median": round(m, 4), "unit": unit,
           "ratio": round(m / base, 4), "min": round(min(r), 4), "max": round(max(r), 4), "n": len(r)}
    if prog == "c-launch-loop":
        row["delta_us"] = round(m - base, 4)
    out.append(row)
    print(f"{prog:17} {variant:17} median {m:8.3f} {unit:13} spread {min(r):.3f}-{max(r):.3f} n={len(r)} "
          f"ratio {m / base:.3f}")
json.dump(out, open(sys.argv[2], "w"), indent=1)
print("written", sys.argv[2])
PY
# The training loop traced bounded (its bytes per second, its trace kept) and, shorter, with --all-records (kept
# for tests/tests/bounded_trace.rs, which feeds every committed trace through the bounded trace's filter and
# checks that the answer is the same), unless COST_TRACES=0.
if [ "${COST_TRACES:-1}" != 0 ]; then
  for shape in bounded all-records; do
    args=(); steps=(--steps 200 --warmup 5)
    [ $shape = all-records ] && args=(--all-records) && steps=(--steps 10 --warmup 2)
    t0=$(date +%s.%N)
    f="$OUT/trace-torch_resnet_train-$shape.jsonl.gz"
    timeout 120 "$AL" trace "${args[@]}" --out "$f" --top 0 -- \
      python3 "$here/torch_resnet_train.py" --pin "${steps[@]}" 2>/dev/null | grep '^{'
    secs=$(awk "BEGIN{print $(date +%s.%N) - $t0}")
    [ -f "$f" ] || { echo "trace $shape: none written"; continue; }
    python3 - "$f" "$secs" <<'PY'
import gzip, json, os, sys
# Each line at the time of the last timed line before it (a location, a count or a source line carries none;
# the writer writes in passes of 2 ms, so a line is near the lines around it).
stored = os.path.getsize(sys.argv[1])
lines, t = [], None
for raw in gzip.open(sys.argv[1], "rb"):
    d = json.loads(raw)
    t = d.get("start", d.get("t", t))
    lines.append((t, raw))
times = [t for t, _ in lines if t is not None]
t0, t1 = min(times), max(times)
mid = t0 + (t1 - t0) / 2
total = sum(len(r) for _, r in lines)
def rate(sel, secs):
    raw = sum(len(r) for _, r in sel)
    return f"{raw * stored / total / secs / 1e3:.1f} KB/s stored ({raw / secs / 1e3:.1f} KB/s of lines)"
whole = rate(lines, (t1 - t0) / 1e9)
late = rate([l for l in lines if l[0] is not None and l[0] >= mid], (t1 - mid) / 1e9)
print(f"trace {sys.argv[1].rsplit('-', 1)[-1]}: {stored} bytes stored, {total} of lines, the command took "
      f"{float(sys.argv[2]):.1f} s, the trace spans {(t1 - t0) / 1e9:.2f} s: {whole} over it, {late} over its "
      f"second half")
PY
  done
fi
echo "=== done after $((SECONDS-start)) s"
ls -la "$OUT"
# The log is whole once tee has read everything: close its input, then wait for it (never a bare `wait`).
exec >&- 2>&-
wait "$tee_pid" 2>/dev/null
exit 0
