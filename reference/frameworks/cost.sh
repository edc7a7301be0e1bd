#!/bin/bash
# What `async-lab trace` costs (docs/trace.md, "Cost"), part by part, in one run of at most ~8.5 minutes on the
# H200, on three programs and the in-process gate:
#   torch-train-step  torch_resnet_train.py --pin: a ResNet-18 training step with a DataLoader, median ms a step
#   torch-small-ops   torch_add_loop.py: 20,000 `x.add_(1.0)`, µs per op, the mean over the whole loop
#   c-launch-loop     reference/enqueue_loop.cu: 20,000 launches of an empty kernel, µs per launch, the mean
# each untraced and traced in several ways (the injection library's variables, read once at its start:
# trace-inject/src/switches.rs), interleaved, ROUNDS rounds (default 5; each round starts at the next variant):
#   traced          the defaults: bounded trace, the launch log, copies, memsets and overheads recorded,
#                   kernels in windows (start-up, after a held call)
#   all-kernels     --all-kernels: every record kind, every kernel (the trace before the launch log)
#   no-records      no activity record at all (callbacks, the launch log, the writer)
#   kernels         the kernel records alone, every kernel (against no-records: what they cost)
#   syncs           the synchronization records alone
#   events          the event records alone
#   copies          copies', memsets' and overheads' records alone (what the default records; one a copy)
#   gate-idle       torch-small-ops only, not traced: the in-process gate attached and one `no_blocking`
#                   block run before the loop (torch_add_loop.py --gate), against untraced (never attached)
# and, picked with $COST_VARIANTS, the older ones: no-locations (--locate-over 10s), writer-unwritten,
# writer-none, no-callbacks, runtime-only, api-records, all-records, memcpy-only, memset-only, overhead-only,
# per-thread-buffers.
# Which variant runs on which program: $COST_PLAN, lines of "program: variant ..." (default below: the record
# kinds one by one on the training step, where every kind occurs; the small ops and the C loop only launch and
# synchronize, so there all-kernels is the kernels' cost).
#
# BIN_DIR holds async-lab and libasync_lab_inject.so (`cargo xtask bundle`); nvcc builds the C loop; the gate
# loads the `async_lab` package from this checkout's python/. Writes into OUT (default: a new temporary
# folder): runs.txt (each run: program, variant, round, its JSON line), cost.log, and
# trace-cost-<card>-driver<version>-<date>-<commit>.json, a list of {"program", "variant", "unit", "median",
# "min", "max", "n", "ratio", "ratio_min", "ratio_max"} (+ "delta_us", "delta_min_us", "delta_max_us" for the
# C loop): the median over the rounds and its spread; `ratio` the variant's median over untraced's, and
# ratio_min/ratio_max the smallest and largest of the rounds' own ratios (each round's run over the same
# round's untraced run). <commit> is $COST_COMMIT (the commit the bundle was built from), else "unknown".
# It prints the table as docs/trace.md gives it, and each goal met or missed (by how much).
#
# Then (unless COST_TRACES=0) the training loop traced once with the defaults for 200 steps, written as
# stored (`--out NAME.jsonl.gz`), its bytes a second as stored over the trace and over its second half (goal
# <= 50 KB/s), what its launch log holds (held calls with an `ahead` line, the kernels they name, the windows
# of kernel records, any `note` line) and its findings as `--replay` prints them; and for 10 steps with
# --all-records (the default record kinds, every line: a format-5 trace for tests/tests/bounded_trace.rs).
#
# Time on the H200 (estimated from the runs of aa4b1e1, not yet run this way): a training-step run about 6 s
# untraced and 8 s traced, a small-ops run 4 s, a C-loop run 1 s: about 90 s a round with the default plan, 5
# rounds 7.5 minutes, nvcc, the two traces and the summary 35 s more (about 8.1 minutes). Each run is cut at
# 90 s; a round is started only while the rounds so far leave it room before $COST_BUDGET_S (default 470 s of
# rounds), so that the traces and the summary still come within one 10-minute device call: the log says how
# many rounds were run. The progress of each run goes to the log with the time spent so far.
# Usage: reference/frameworks/cost.sh BIN_DIR [ROUNDS] [OUT]   (default 5 rounds)
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${1:?usage: cost.sh BIN_DIR [ROUNDS] [OUT]}" && pwd)
ROUNDS=${2:-5}
OUT=${3:-$(mktemp -d)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
AL="$BIN/async-lab"
LIB="$BIN/libasync_lab_inject.so"
W=$(mktemp -d)
BUDGET=${COST_BUDGET_S:-470}
PLAN=${COST_PLAN:-"torch-train-step: untraced traced all-kernels no-records kernels syncs events copies
torch-small-ops: untraced traced all-kernels no-records gate-idle
c-launch-loop: untraced traced all-kernels no-records"}
# $COST_VARIANTS, where set, replaces every program's list (untraced always first).
if [ -n "${COST_VARIANTS:-}" ]; then
  PLAN=$(echo "$PLAN" | while IFS=: read -r p _; do echo "$p: untraced ${COST_VARIANTS//untraced/}"; done)
fi
if [ -n "${COST_PROGRAMS:-}" ]; then
  PLAN=$(echo "$PLAN" | while IFS=: read -r p v; do [[ " $COST_PROGRAMS " == *" $p "* ]] && echo "$p:$v"; done)
fi
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
exec > >(tee "$OUT/cost.log") 2>&1
tee_pid=$!
start=$SECONDS
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$NVCC" -O2 -g -arch=sm_90 -o "$W/enqueue_loop" "$here/../enqueue_loop.cu" || exit 1
GPU=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
echo "$GPU"
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
"$AL" --version
echo "plan ($ROUNDS rounds, budget ${BUDGET} s of rounds):"
echo "$PLAN" | sed 's/^/  /'
traced() { # env... -- program...
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" timeout 90 "$AL" trace --out "$W/t.jsonl" --top 0 "${TRACE_ARGS[@]}" -- "$@" 2>"$W/trace.err" | grep '^{'
  ls -l "$W/t.jsonl" 2>/dev/null | awk '{print "  trace bytes", $5}' >&2
  grep -h '"type":"note"' "$W/t.jsonl" 2>/dev/null | head -3 | sed 's/^/  note: /' >&2
}
run() { # variant program...
  local v=$1; shift
  TRACE_ARGS=()
  case $v in
    untraced) timeout 90 "$@" ;;
    traced) traced -- "$@" ;;
    all-kernels) TRACE_ARGS=(--all-kernels); traced -- "$@" ;;
    no-records) traced ASYNC_LAB_TRACE_KINDS=none -- "$@" ;;
    kernels) traced ASYNC_LAB_TRACE_KINDS=kernel -- "$@" ;;
    syncs) traced ASYNC_LAB_TRACE_KINDS=sync -- "$@" ;;
    events) traced ASYNC_LAB_TRACE_KINDS=event -- "$@" ;;
    copies) traced ASYNC_LAB_TRACE_KINDS=memcpy,memset,overhead -- "$@" ;;
    memcpy-only) traced ASYNC_LAB_TRACE_KINDS=memcpy -- "$@" ;;
    memset-only) traced ASYNC_LAB_TRACE_KINDS=memset -- "$@" ;;
    overhead-only) traced ASYNC_LAB_TRACE_KINDS=overhead -- "$@" ;;
    gate-idle) PYTHONPATH="$here/../../python${PYTHONPATH:+:$PYTHONPATH}" timeout 90 "$@" --gate "$LIB" ;;
    all-records) TRACE_ARGS=(--all-records); traced -- "$@" ;;
    no-locations) TRACE_ARGS=(--locate-over 10s); traced -- "$@" ;;
    writer-unwritten) traced ASYNC_LAB_TRACE_WRITER=unwritten -- "$@" ;;
    writer-none) traced ASYNC_LAB_TRACE_WRITER=none -- "$@" ;;
    per-thread-buffers) traced ASYNC_LAB_CUPTI_PER_THREAD_BUFFERS=1 -- "$@" ;;
    no-callbacks) traced ASYNC_LAB_TRACE_DOMAINS=none -- "$@" ;;
    runtime-only) traced ASYNC_LAB_TRACE_DOMAINS=runtime,resource,nvtx -- "$@" ;;
    api-records) traced ASYNC_LAB_TRACE_DOMAINS=resource,nvtx ASYNC_LAB_TRACE_KINDS=memcpy,memset,kernel,api -- "$@" ;;
    *) echo "unknown variant $v" >&2; return 1 ;;
  esac
}
program() { # name
  case $1 in
    torch-train-step) echo python3 "$here/torch_resnet_train.py" --pin --steps 20 --warmup 3 ;;
    torch-small-ops) echo python3 "$here/torch_add_loop.py" 20000 10 ;;
    c-launch-loop) echo "$W/enqueue_loop" 20000 ;;
  esac
}
# Every (program, variant) of the plan, in one list; each round starts one further along it.
pairs=()
while IFS=: read -r p vs; do
  [ -z "$p" ] && continue
  for v in $vs; do pairs+=("$p $v"); done
done <<< "$PLAN"
n=${#pairs[@]}
rounds_done=0
longest=0
: > "$OUT/runs.txt"
for i in $(seq "$ROUNDS"); do
  elapsed=$((SECONDS - start))
  if [ "$i" -gt 1 ] && [ $((elapsed + longest)) -gt "$BUDGET" ]; then
    echo "# stopped after $rounds_done rounds: round $i (about $longest s) would end past the budget of $BUDGET s"
    break
  fi
  r0=$SECONDS
  for k in $(seq 0 $((n - 1))); do
    read -r p v <<< "${pairs[$(((k + i - 1) % n))]}"
    t0=$(date +%s.%N)
    line=$(run "$v" $(program "$p") | tail -1)
    echo "$p $v $i $line" >> "$OUT/runs.txt"
    printf '# [%4d s] round %d/%d %-17s %-12s %5.1f s %s\n' $((SECONDS - start)) "$i" "$ROUNDS" "$p" "$v" \
      "$(awk "BEGIN{print $(date +%s.%N) - $t0}")" "$([ -z "$line" ] && echo 'NO RESULT')"
  done
  rounds_done=$i
  took=$((SECONDS - r0))
  [ "$took" -gt "$longest" ] && longest=$took
done
echo "# $rounds_done rounds in $((SECONDS - start)) s"
card=$(echo "$GPU" | cut -d, -f1 | awk '{print tolower($NF)}')
driver=$(echo "$GPU" | cut -d, -f2 | tr -d ' ')
name="trace-cost-$card-driver$driver-$(date +%F)-${COST_COMMIT:-unknown}.json"
python3 - "$OUT/runs.txt" "$OUT/$name" <<'PY'
import json, statistics, sys
runs = {}   # (prog, variant) -> {round: value}
units = {}
for line in open(sys.argv[1]):
    parts = line.rstrip("\n").split(" ", 3)
    if len(parts) < 4:
        continue
    prog, variant, rnd, js = parts
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
    runs.setdefault((prog, variant), {})[int(rnd)] = v
    units[prog] = unit
out = []
rows = {}
for (prog, variant), by_round in sorted(runs.items()):
    base_runs = runs.get((prog, "untraced"), {})
    if not base_runs:
        continue
    r = list(by_round.values())
    base = statistics.median(base_runs.values())
    m = statistics.median(r)
    paired = [by_round[k] / base_runs[k] for k in by_round if k in base_runs]
    row = {"program": prog, "variant": variant, "unit": units[prog], "median": round(m, 4), "min": round(min(r), 4),
           "max": round(max(r), 4), "n": len(r), "ratio": round(m / base, 4),
           "ratio_min": round(min(paired), 4) if paired else None,
           "ratio_max": round(max(paired), 4) if paired else None}
    if prog == "c-launch-loop":
        deltas = [by_round[k] - base_runs[k] for k in by_round if k in base_runs]
        row["delta_us"] = round(m - base, 4)
        row["delta_min_us"] = round(min(deltas), 4) if deltas else None
        row["delta_max_us"] = round(max(deltas), 4) if deltas else None
    out.append(row)
    rows[(prog, variant)] = row
json.dump(out, open(sys.argv[2], "w"), indent=1)
print("written", sys.argv[2])
# The table as docs/trace.md gives it: median (smallest–largest round), then against untraced (the rounds'
# own ratios' spread in brackets).
what = {
    "untraced": "",
    "traced": "the defaults: bounded trace, launch log, copies/memsets/overheads, kernels in windows",
    "all-kernels": "`--all-kernels`: every record kind, every kernel",
    "no-records": "callbacks, launch log and writer, no activity record",
    "kernels": "every kernel's record alone",
    "syncs": "synchronization records alone",
    "events": "event records alone",
    "copies": "copies', memsets' and overheads' records alone",
    "gate-idle": "`no_blocking` ran once, then outside any block (not traced)",
}
progs = [("torch-train-step", "ResNet-18 step, ms"), ("torch-small-ops", "small ops, µs per op"),
         ("c-launch-loop", "C loop, µs per launch")]
variants = []
for (_, v) in rows:
    if v not in variants:
        variants.append(v)
order = list(what) + [v for v in variants if v not in what]
print()
print("| variant | what runs | " + " | ".join(h for _, h in progs) + " |")
print("| --- | --- | " + " | ".join("---" for _ in progs) + " |")
for v in order:
    if v not in variants:
        continue
    cells = []
    for p, _ in progs:
        r = rows.get((p, v))
        if r is None:
            cells.append("")
            continue
        cell = f"{r['median']:.2f} ({r['min']:.2f}–{r['max']:.2f})"
        if v != "untraced":
            if p == "c-launch-loop":
                cell += f" **{r['delta_us']:+.2f} µs** ({r['delta_min_us']:+.2f} to {r['delta_max_us']:+.2f})"
            else:
                cell += f" **{r['ratio']:.2f}×** ({r['ratio_min']:.2f}–{r['ratio_max']:.2f})"
        if r["n"] < 5:
            cell += f", n={r['n']}"
        cells.append(cell)
    print(f"| {v} | {what.get(v, '')} | " + " | ".join(cells) + " |")
print()
goals = [("torch-train-step", "traced", "ratio", 1.05, "the training step"),
         ("torch-small-ops", "traced", "ratio", 1.15, "the small ops"),
         ("c-launch-loop", "traced", "delta_us", 1.0, "the C loop (µs a launch)"),
         ("torch-small-ops", "gate-idle", "ratio", 1.15, "the gate outside its blocks")]
for p, v, key, goal, words in goals:
    r = rows.get((p, v))
    if r is None:
        print(f"goal {words} <= {goal}: not measured")
        continue
    got = r[key]
    lo, hi = (r["delta_min_us"], r["delta_max_us"]) if key == "delta_us" else (r["ratio_min"], r["ratio_max"])
    verdict = "met" if got <= goal else f"MISSED by {got - goal:.3f}"
    print(f"goal {words} <= {goal}: {got:.3f} (rounds {lo} to {hi}) {verdict}")
# The parts: each variant against no records at all (the callbacks, the launch log and the writer alone).
base = {p: rows.get((p, "no-records")) for p, _ in progs}
for v in ("traced", "all-kernels", "kernels", "syncs", "events", "copies"):
    parts = []
    for p, _ in progs:
        r, b = rows.get((p, v)), base[p]
        if r and b:
            parts.append(f"{p} {r['median'] - b['median']:+.3f} {r['unit']}")
    if parts:
        print(f"{v} over no-records: " + ", ".join(parts))
PY
if [ "${COST_TRACES:-1}" != 0 ]; then
  for shape in bounded all-records; do
    args=(); steps=(--steps 200 --warmup 5)
    [ $shape = all-records ] && args=(--all-records) && steps=(--steps 10 --warmup 2)
    t0=$(date +%s.%N)
    f="$OUT/trace-torch_resnet_train-$shape.jsonl.gz"
    echo "=== [$((SECONDS - start)) s] the training loop traced, $shape, ${steps[*]}"
    timeout 120 "$AL" trace "${args[@]}" --out "$f" --top 0 -- \
      python3 "$here/torch_resnet_train.py" --pin "${steps[@]}" 2>/dev/null | grep '^{'
    secs=$(awk "BEGIN{print $(date +%s.%N) - $t0}")
    [ -f "$f" ] || { echo "trace $shape: none written"; continue; }
    python3 - "$f" "$secs" <<'PY'
import collections, gzip, json, os, sys
# Each line at the time of the last timed line before it (a location, a count or a source line carries none;
# the writer writes in passes of 2 ms, so a line is near the lines around it).
stored = os.path.getsize(sys.argv[1])
lines, t = [], None
kinds, aheads, kernels, windows, notes, held = collections.Counter(), 0, collections.Counter(), [], [], 0
for raw in gzip.open(sys.argv[1], "rb"):
    d = json.loads(raw)
    t = d.get("start", d.get("t", t))
    lines.append((t, raw))
    kinds[d["type"]] += 1
    if d["type"] == "ahead":
        aheads += 1
        for w in d.get("work", []):
            kernels[w.get("kernel") or w["kind"]] += 1
    elif d["type"] == "kernel-window":
        windows.append((d["why"], (d["end"] - d["start"]) / 1e6))
    elif d["type"] == "note":
        notes.append(d["message"])
    elif d["type"] == "record-kinds":
        print("record kinds:", d["kinds"], "kernels:", d["kernels"])
    elif d["type"] == "api" and d["end"] - d["start"] > 20_000:
        held += 1
times = [t for t, _ in lines if t is not None]
t0, t1 = min(times), max(times)
mid = t0 + (t1 - t0) / 2
total = sum(len(r) for _, r in lines)
def rate(sel, secs):
    raw = sum(len(r) for _, r in sel)
    return f"{raw * stored / total / secs / 1e3:.1f} KB/s stored ({raw / secs / 1e3:.1f} KB/s of lines)"
whole = rate(lines, (t1 - t0) / 1e9)
late = rate([l for l in lines if l[0] is not None and l[0] >= mid], (t1 - mid) / 1e9)
print(f"trace {os.path.basename(sys.argv[1])}: {stored} bytes stored, {total} of lines, the command took "
      f"{float(sys.argv[2]):.1f} s, the trace spans {(t1 - t0) / 1e9:.2f} s: {whole} over it, {late} over its "
      f"second half (goal <= 50 KB/s stored)")
print("lines by type:", dict(kinds.most_common()))
print(f"launch log: {aheads} ahead lines for {held} api lines held over 20 µs; work named most:",
      [f"{k[:60]} x{n}" for k, n in kernels.most_common(5)])
print(f"kernel windows: {len(windows)}:", [f"{w} {ms:.1f} ms" for w, ms in windows[:12]])
print("notes:", notes[:5] if notes else "none")
PY
    if [ $shape = bounded ]; then
      echo "=== the findings, as --replay prints them (120 columns)"
      COLUMNS=120 timeout 60 "$AL" trace --replay "$f" --top 8 2>&1 | head -60
    fi
  done
fi
echo "=== done after $((SECONDS-start)) s"
ls -la "$OUT"
# The log is whole once tee has read everything: close its input, then wait for it (never a bare `wait`).
exec >&- 2>&-
wait "$tee_pid" 2>/dev/null
exit 0
