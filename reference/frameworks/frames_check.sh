#!/bin/bash
# The Python frame reader on a GPU machine's own Python (the H200's: CPython 3.12 with torch): the ctypes test
# of tests/python/frames_ctypes.py with its cost measured, alone and with torch imported first, then
# torch_transfers.py traced, counting its held calls' locations that carry Python frames while the GIL was
# released. BIN_DIR holds async-lab and libasync_lab_inject.so (`cargo xtask bundle`); everything written goes
# to OUT_DIR: log.txt, frames_ctypes.json, frames_ctypes-torch.json, trace-torch_transfers.jsonl (with the
# command's output in traced-torch_transfers.txt) and
# frames-torch_transfers.json. About a minute.
# Usage: reference/frameworks/frames_check.sh BIN_DIR OUT_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
BIN=$(cd "${1:?usage: frames_check.sh BIN_DIR OUT_DIR}" && pwd)
OUT=$(mkdir -p "${2:?usage: frames_check.sh BIN_DIR OUT_DIR}" && cd "$2" && pwd)
LIB="$BIN/libasync_lab_inject.so"
TEST="$here/../../tests/python/frames_ctypes.py"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
exec > >(tee "$OUT/log.txt") 2>&1
date -u; python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)'
echo "=== ctypes test and cost"
python3 "$TEST" "$LIB" --cost > "$OUT/frames_ctypes.json"; echo "=== rc=$?"; cat "$OUT/frames_ctypes.json"
echo "=== the same with torch imported first"
python3 -c 'import runpy, sys, torch; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name="__main__")' \
  "$TEST" "$LIB" --cost > "$OUT/frames_ctypes-torch.json"; echo "=== rc=$?"; cat "$OUT/frames_ctypes-torch.json"
echo "=== torch_transfers.py traced"
cd "$here"
timeout -s INT -k 20 150 "$BIN/async-lab" trace --out "$OUT/trace-torch_transfers.jsonl" --top 12 -- \
  python3 torch_transfers.py > "$OUT/traced-torch_transfers.txt" 2>&1; echo "=== rc=$?"
grep -v '^async-lab-step' "$OUT/traced-torch_transfers.txt" | head -30
python3 - "$OUT/trace-torch_transfers.jsonl" > "$OUT/frames-torch_transfers.json" <<'PY'
import collections, json, sys
setup, counts, places = None, collections.Counter(), collections.Counter()
for text in open(sys.argv[1]):
    line = json.loads(text)
    if line.get("type") == "setup":
        setup = line.get("python")
    if line.get("type") == "location":
        frames = line.get("python", [])
        counts[(line["gil"], bool(frames))] += 1
        if frames:
            places[f'{frames[0]["file"].rsplit("/", 1)[-1]}:{frames[0]["line"]} {frames[0]["function"]}'] += 1
print(json.dumps({"setup": setup, "locations_by_gil_and_frames": {f"{g} frames={f}": n for (g, f), n in counts.items()},
                  "innermost_python_frames": places.most_common(12)}, indent=1))
PY
cat "$OUT/frames-torch_transfers.json"
date -u
