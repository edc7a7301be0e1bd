#!/bin/bash
# The validation of `async-lab trace` on a GPU (docs/trace.md): builds the seed's program, the enqueue loop and
# async_ref from this folder with nvcc, traces them and async-lab itself, and measures what the trace adds per
# call. BIN_DIR holds async-lab and libasync_lab_inject.so (`cargo xtask bundle`); everything written goes
# to OUT_DIR: log.txt and three archives (a: the seed's program and the cost per call; b: async_ref and the
# seed preset; c: the default run). Takes about 6 minutes on an H200; the default run gets what is left of 395 s.
# Usage: reference/trace_validation.sh BIN_DIR OUT_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${1:?usage: trace_validation.sh BIN_DIR OUT_DIR}" && pwd)
OUT=$(mkdir -p "${2:?usage: trace_validation.sh BIN_DIR OUT_DIR}" && cd "$2" && pwd)
export PATH=/usr/local/cuda/bin:$PATH
W=$(mktemp -d); B=$(mktemp -d)
exec > >(tee "$OUT/log.txt") 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader; ls /usr/local/cuda/lib64/ | grep -i cupti
nvcc -O2 -arch=sm_90 -o "$B/seed_program" "$here/seed_program.cu" &
nvcc -O2 -arch=sm_90 -o "$B/enqueue_loop" "$here/enqueue_loop.cu" &
nvcc -O2 -std=c++17 -arch=sm_90 -o "$B/async_ref" "$here/async_ref.cu" -lcuda &
wait
echo "built after $SECONDS s"; ls "$B/seed_program" "$B/enqueue_loop" "$B/async_ref" || exit 1
AL="$BIN/async-lab"
T() { local name=$1; shift; echo "=== trace $name: $*"; local t0=$SECONDS; timeout -s INT -k 20 "${LIMIT:-120}" "$AL" trace --out "$W/trace-$name.jsonl" "$@"; echo "=== rc=$? after $((SECONDS-t0)) s (at $SECONDS s)"; }
pack() { local name=$1; shift; (cd "$W" && tar cf - "$@" 2>/dev/null | xz -T0 -6 > "$OUT/$name.tar.xz"); ls -la "$OUT/$name.tar.xz"; }
# (a) the seed's program, pinned and pageable, lazy and eager loading
for mode in pinned pageable; do
  for ml in LAZY EAGER; do
    CUDA_MODULE_LOADING=$ml T "seed-$mode-${ml,,}" -- "$B/seed_program" $mode
  done
done
echo "=== untraced seed_program (its own timings)"
CUDA_MODULE_LOADING=LAZY "$B/seed_program" pinned; CUDA_MODULE_LOADING=LAZY "$B/seed_program" pageable
"$AL" report --replay "$W/trace-seed-pinned-lazy.jsonl" --out "$W/seed-pinned-lazy.html"
echo "=== CUPTI taken by another tool"
T taken -- compute-sanitizer --print-limit 1 "$B/seed_program" pinned 1048576
# what the trace adds per call: the C++ loop and the overhead preset, without and with the trace
echo "=== enqueue_loop untraced"; "$B/enqueue_loop"; "$B/enqueue_loop"
T enqueue-loop --min-held 1ms --top 3 -- "$B/enqueue_loop"
T enqueue-loop2 --min-held 1ms --top 3 -- "$B/enqueue_loop"
echo "=== enqueue_loop untraced again"; "$B/enqueue_loop"
"$AL" --preset overhead -q --record "$W/async-lab-overhead-untraced.json" > "$W/overhead-untraced.txt"; tail -5 "$W/overhead-untraced.txt"
T lab-overhead --min-held 1ms --top 5 -- "$AL" --preset overhead -q --record "$W/async-lab-overhead-traced.json"
pack a trace-seed-* trace-taken.jsonl seed-pinned-lazy.html trace-enqueue-loop.jsonl async-lab-overhead-*.json overhead-untraced.txt
# (b) the C++ reference
T async-ref --min-held 1ms --top 10 -- "$B/async_ref" --out "$W/async_ref.json"
echo "=== async_ref's classes beside the tracer's"
"$AL" trace --replay "$W/trace-async-ref.jsonl" --against "$W/async_ref.json" --min-held 1ms --top 3 | tee "$W/async-ref-against.txt"
# (c) async-lab's seed preset, traced
T lab-seed --top 15 -- "$AL" --preset seed -q --record "$W/async-lab-seed-traced.json"
pack b trace-async-ref.jsonl async_ref.json async-ref-against.txt trace-lab-seed.jsonl async-lab-seed-traced.json trace-lab-overhead.jsonl
# (c) async-lab's default run, traced, in the time left
LIMIT=$((395 - SECONDS)) T lab-default --min-held 1ms --top 10 -- "$AL" -q --record "$W/async-lab-default-traced.json"
pack c trace-lab-default.jsonl async-lab-default-traced.json
echo "=== sizes"; ls -la "$W"; date -u
