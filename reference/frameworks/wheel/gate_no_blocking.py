"""``async_lab.no_blocking`` in a program that used torch before the block (reference/frameworks/wheel_check.sh):
a pageable ``to("cuda", non_blocking=True)`` inside the block raises HeldError at its line, class blocking,
remedy pinned memory; pinned copies pass; ``mode="warn"`` warns at the line and goes on; another thread's
held calls do not raise in this one, and its own block raises in it. Prints PASS or FAIL lines; exits 1 on
any FAIL."""

import sys
import threading
import time
import traceback
import warnings

import torch

import async_lab

failures = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def line_of(marker):
    with open(__file__) as f:
        return next(i for i, text in enumerate(f, 1) if marker in text and "line_of" not in text)


host = torch.ones(32 << 18)  # 32 MiB, pageable
pinned = host.pin_memory()
y = host.to("cuda")  # torch used: the context exists before any block
for _ in range(3):
    y = pinned.to("cuda", non_blocking=True)
torch.cuda.synchronize()

# 1. A pageable copy raises at its line.
t0 = time.perf_counter()
try:
    with async_lab.no_blocking(over="1ms"):
        z = host.to("cuda", non_blocking=True)  # marker: raise here
    check(False, "no_blocking raised nothing for a pageable copy")
except async_lab.HeldError as e:
    want = line_of("marker: raise here")
    ours = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == __file__]
    print(e)
    print("held call:", {k: e.held.get(k) for k in ("name", "class", "held_ns", "what_held_it", "location")})
    check(ours and ours[-1].lineno == want, f"the traceback ends at line {want} (got {ours[-1].lineno if ours else None})")
    check(f"gate_no_blocking.py:{want}" in str(e), "the error names the line")
    check(e.held.get("class") == "blocking", f"class blocking (got {e.held.get('class')})")
    check("pin" in str(e), "the remedy is pinned memory")
print(f"(first block, attaching included: {(time.perf_counter() - t0) * 1e3:.0f} ms)")

# 2. Pinned copies pass (warmed up under CUPTI first: its first use of a copy costs ms).
with async_lab.watch(over="1ms") as warm:
    for _ in range(3):
        y = pinned.to("cuda", non_blocking=True)
    torch.cuda.synchronize()
print("warm-up under CUPTI held:", [(h["name"], h["held_ns"]) for h in warm.held])
try:
    with async_lab.no_blocking(over="1ms"):
        for _ in range(5):
            y = pinned.to("cuda", non_blocking=True)
    check(True, "pinned copies pass no_blocking(over=1ms)")
except async_lab.HeldError as e:
    check(False, f"pinned copies raised: {e}")
torch.cuda.synchronize()

# 3. mode="warn" warns at the line and goes on.
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with async_lab.no_blocking(over="1ms", mode="warn"):
        z = host.to("cuda", non_blocking=True)  # marker: warn here
        went_on = True
held_warnings = [w for w in caught if issubclass(w.category, async_lab.HeldWarning)]
check(went_on and len(held_warnings) >= 1, f"mode=warn warned ({len(held_warnings)}) and went on")
if held_warnings:
    check(held_warnings[0].lineno == line_of("marker: warn here"), f"the warning is at line {held_warnings[0].lineno}")

# 4. Per thread: another thread's held copies do not raise here; its own block raises in it.
errors = []


def other():
    for _ in range(5):
        host.to("cuda", non_blocking=True)
    try:
        with async_lab.no_blocking(over="1ms"):
            host.to("cuda", non_blocking=True)
    except async_lab.HeldError as e:
        errors.append(e)


try:
    with async_lab.no_blocking(over="1ms"):
        t = threading.Thread(target=other)
        t.start()
        t.join()
    check(True, "another thread's held calls did not raise in this thread")
except async_lab.HeldError as e:
    check(False, f"another thread's call raised here: {e}")
check(len(errors) == 1, f"the other thread's own block raised in it ({len(errors)})")

print("no_blocking:", "FAIL" if failures else "PASS")
sys.exit(1 if failures else 0)
