#!/bin/bash
# The Python frame reader on a GPU machine's own Python (the H200's: CPython 3.12 with torch and jax).
# 1. The ctypes test of tests/python/frames_ctypes.py with its cost measured (2000 rounds: a location's read
#    under 60 library frames and with the program's frame innermost, warm and first; every other thread's
#    from a thread without Python), alone, with torch imported first and with jax imported first; and
#    tests/python/frames_sites.py's cost (a program held at five places in turn, under 0 to 40 library frames
#    each: every read's time and system calls), the same three ways. A run still going at 220 s prints every
#    thread's Python stack and ends (one with torch imported first once ran past 400 s): the others stand.
# 2. torch_train.py and jax_program.py traced with native frames off (ASYNC_LAB_NATIVE_FRAMES=0), so that
#    each location's took_ns is what reading Python frames cost in a framework process, deep stacks and all:
#    the median and largest per program, for the calling thread's frames and for the other threads' (the
#    locations of threads that run no Python: XLA's, the autograd thread), which threads were named, and how
#    many of those threads' locations found a Python thread at a line of the program.
# 3. torch_train.py traced as by default (native frames within their budget), for comparison (FRAMES_COMPARE=0
#    leaves it out).
# BIN_DIR holds async-lab and libasync_lab_inject.so (`cargo xtask bundle`); everything written goes to OUT_DIR:
# log.txt (all of the output), frames_ctypes.json and frames_sites.json (one line per run of step 1), the traces
# (trace-<program>[-native].jsonl.gz) and frames-summary.json (step 2 and 3, per trace). About five minutes.
# Usage: reference/frameworks/frames_check.sh BIN_DIR OUT_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${1:?usage: frames_check.sh BIN_DIR OUT_DIR}" && pwd)
OUT=$(mkdir -p "${2:?usage: frames_check.sh BIN_DIR OUT_DIR}" && cd "$2" && pwd)
LIB="$BIN/libasync_lab_inject.so"
TEST="$here/../../tests/python/frames_ctypes.py"
SITES="$here/../../tests/python/frames_sites.py"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
exec > >(tee "$OUT/log.txt") 2>&1
date -u
python3 -c 'import sys, torch, jax; print(sys.version.split()[0], "torch", torch.__version__, "jax", jax.__version__)'

echo "=== 1. ctypes test and cost: alone, after torch, after jax"
: > "$OUT/frames_ctypes.json"
: > "$OUT/frames_sites.json"
run_first() { # FIRST SCRIPT ARGS...: the script run as __main__ after importing FIRST (none where empty); a run
  # still going at 220 s prints every thread's Python stack (faulthandler) and exits, so a hang says where
  local first=$1; shift
  timeout -s INT -k 10 240 python3 -c 'import faulthandler, importlib, runpy, sys
faulthandler.dump_traceback_later(220, exit=True)
if sys.argv[1]:
    importlib.import_module(sys.argv[1])
sys.argv = sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")' "$first" "$@"
}
summarize() { # FIRST FILE: FILE's JSON line tagged with what was imported first, on stdout; its summary on stderr
  python3 - "$1" "$2" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[2]))
except ValueError:
    sys.exit(0)
r["imported_first"] = sys.argv[1] or None
print(json.dumps(r))
if "sites" in r:
    sites = ", ".join(f'{s["depth"]} frames {s["median_ns"] / 1000:.1f} µs ({s["calls_median"]} calls)' for s in r["sites"])
    print(f'  five places in turn: {sites}; all {r["median_ns"] / 1000:.1f} µs, in place: {r["in_place"]}',
          file=sys.stderr)
    sys.exit(0)
for case in ("deep", "shallow"):
    c = r[f"cost_{case}"]
    us = lambda m: f'{m["median"] / 1000:.1f} µs (max {m["max"] / 1000:.0f} µs, {m["calls"]} calls)'
    print(f'  {case}: own {c["frames"]} frames {us(c["own_ns"])}, first {us(c["own_first_ns"])}; others '
          f'{c["threads"]} threads {c["other_frames"]} frames {us(c["others_ns"])}, first {us(c["others_first_ns"])}',
          file=sys.stderr)
PY
}
for first in "" torch jax; do
  echo "--- imported first: ${first:-nothing}"
  run_first "$first" "$SITES" "$LIB" --cost > "$OUT/sites.json"
  echo "sites rc=$?"
  summarize "$first" "$OUT/sites.json" >> "$OUT/frames_sites.json"
  run_first "$first" "$TEST" "$LIB" --cost > "$OUT/run.json"
  echo "rc=$?"
  summarize "$first" "$OUT/run.json" >> "$OUT/frames_ctypes.json"
done
rm -f "$OUT/run.json" "$OUT/sites.json"

cd "$here"
trace() { # NAME NATIVE(0|1) PROGRAM ARGS...
  local name=$1 native=$2; shift 2
  echo "=== trace $name (native frames: $native)"
  ASYNC_LAB_NATIVE_FRAMES=$native timeout -s INT -k 20 150 "$BIN/async-lab" trace --out "$OUT/trace-$name.jsonl.gz" \
    --top 12 -- python3 "$@" > "$OUT/traced.txt" 2>&1
  echo "rc=$?"
  grep -v '^async-lab-step' "$OUT/traced.txt" | head -40
}
echo "=== 2. framework programs traced, Python frames alone"
trace torch_train 0 torch_train.py --steps 30
trace jax_program 0 jax_program.py
if [ "${FRAMES_COMPARE:-1}" != 0 ]; then
  echo "=== 3. torch_train.py traced as by default"
  trace torch_train-native 1 torch_train.py --steps 30
fi
rm -f "$OUT/traced.txt"

python3 - "$OUT"/trace-*.jsonl.gz > "$OUT/frames-summary.json" <<'PY'
import collections, gzip, json, os, re, sys

def library(path):  # the analysis's rule (trace-analysis/src/library_paths.rs)
    return ("site-packages/" in path or "dist-packages/" in path or path.startswith("<")
            or re.search(r"(^|/)lib(64)?/python\d", path) is not None)

def stats(ns):
    ns = sorted(ns)
    return {"n": len(ns), "median_us": round(ns[len(ns) // 2] / 1000, 1), "max_us": round(ns[-1] / 1000, 1)} if ns else {"n": 0}

out = {}
for path in sys.argv[1:]:
    setup, names, frames_of = None, {}, {}
    own_ns, others_ns, threads_read, placed, unplaced, gil = [], [], [], 0, 0, collections.Counter()
    for text in gzip.open(path, "rt"):
        line = json.loads(text)
        kind = line.get("type")
        if kind == "setup":
            setup = line.get("python")
        elif kind == "thread":
            names[line["tid"]] = line["name"]
        elif kind in ("location", "same-location"):
            if kind == "location":
                frames_of[line["corr"]] = (line.get("python", []), line.get("others", []))
            python, others = frames_of.get(line.get("as_corr", line["corr"]), ([], []))
            took = line.get("took_ns")
            if python and took:
                own_ns.append(took)
            elif others:
                if took:
                    others_ns.append(took)
                threads_read.append(len(others))
                for o in others:
                    gil[o["gil"]] += 1
                # A Python thread at a line of the program's own (its last frame, the walk's stop).
                own_line = any(o.get("python") and not library(o["python"][-1]["file"]) for o in others)
                placed += own_line
                unplaced += not own_line
    out[os.path.basename(path)] = {
        "python": setup,
        "python_frames_took": stats(own_ns),
        "others_took": stats(others_ns),
        "others_threads_per_location_median": sorted(threads_read)[len(threads_read) // 2] if threads_read else 0,
        "others_gil": {str(k): v for k, v in gil.items()},
        "others_at_a_program_line": placed,
        "others_not_at_a_program_line": unplaced,
        "thread_names": {str(k): v for k, v in sorted(names.items())},
    }
print(json.dumps(out, indent=1))
PY
cat "$OUT/frames-summary.json"
date -u
