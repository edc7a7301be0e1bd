#!/bin/bash
# What `async-lab trace` costs (docs/trace.md, "Cost"): the PyTorch loop of small ops (torch_add_loop.py,
# µs per `x.add_(1.0)`) and the C loop of launches (reference/enqueue_loop.cu, ns per launch), each run
# untraced, traced (the defaults: the calls that may hold, held calls located past --locate-over 1ms), traced
# with every held call past 20 µs located (--locate-over 20us), traced without locations (--locate-over 10s)
# and traced with --all-calls, interleaved, PAIRS rounds. $COST_VARIANTS and $COST_PROGRAMS ("torch c") pick
# fewer.
# BIN_DIR holds async-lab and libasync_lab_inject.so (`cargo xtask bundle`); nvcc builds the C loop.
# Prints each run's JSON line, then a summary: each variant's median over the rounds, its spread (min-max),
# and traced / untraced.
# Usage: reference/frameworks/cost.sh BIN_DIR [PAIRS]   (default 3)
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${1:?usage: cost.sh BIN_DIR [PAIRS]}" && pwd)
PAIRS=${2:-3}
AL="$BIN/async-lab"
W=$(mktemp -d)
nvcc -O2 -g -arch=sm_90 -o "$W/enqueue_loop" "$here/../enqueue_loop.cu" || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
run() { # variant program...
  local v=$1; shift
  case $v in
    untraced) "$@" ;;
    traced) "$AL" trace --out "$W/t.jsonl" --top 0 -- "$@" 2>/dev/null | grep '^{' ;;
    located-20us) "$AL" trace --locate-over 20us --out "$W/t.jsonl" --top 0 -- "$@" 2>/dev/null | grep '^{' ;;
    no-locations) "$AL" trace --locate-over 10s --out "$W/t.jsonl" --top 0 -- "$@" 2>/dev/null | grep '^{' ;;
    all-calls) "$AL" trace --all-calls --out "$W/t.jsonl" --top 0 -- "$@" 2>/dev/null | grep '^{' ;;
  esac
}
for i in $(seq "$PAIRS"); do
  for v in ${COST_VARIANTS:-untraced traced located-20us no-locations all-calls}; do
    case " ${COST_PROGRAMS:-torch c} " in *" torch "*) echo "torch $v $(run $v python3 "$here/torch_add_loop.py" 20000 10 | tail -1)" ;; esac
    case " ${COST_PROGRAMS:-torch c} " in *" c "*) echo "c $v $(run $v "$W/enqueue_loop" 100000 | tail -1)" ;; esac
  done
done | tee "$W/runs.txt"
python3 - "$W/runs.txt" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    prog, variant, js = line.split(" ", 2)
    try:
        d = json.loads(js)
    except ValueError:
        continue
    v = d["median_us_per_op"] if prog == "torch" else d["median_ns"] / 1e3
    runs.setdefault((prog, variant), []).append(v)
for prog, unit in (("torch", "us per op"), ("c", "us per launch")):
    base = statistics.median(runs.get((prog, "untraced"), [float("nan")]))
    for variant in ("untraced", "traced", "located-20us", "no-locations", "all-calls"):
        r = runs.get((prog, variant), [])
        if not r:
            continue
        m = statistics.median(r)
        print(f"{prog:5} {variant:12} median {m:7.2f} {unit}  spread {min(r):.2f}-{max(r):.2f}  n={len(r)}  "
              f"ratio {m / base:.3f}  +{m - base:.2f} us")
PY
