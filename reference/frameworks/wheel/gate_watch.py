"""``async_lab.watch`` in a program that used torch before (reference/frameworks/wheel_check.sh): the held calls of
a block, as the JSON report's entries with their Python lines. First, what CUPTI misses when it subscribes
after the work it would explain was enqueued: a synchronize behind a kernel enqueued before CUPTI subscribed,
beside the same behind a kernel enqueued after. Prints PASS or FAIL lines; exits 1 on any FAIL."""

import json
import sys

import torch

import async_lab

failures = []


def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


CYCLES = 100_000_000  # about 50 ms on an H200
host = torch.ones(32 << 18)
torch.zeros(1, device="cuda")
torch.cuda.synchronize()

# What a late subscriber misses: the kernel ahead was enqueued before CUPTI subscribed (long enough to outlast
# the subscribing).
torch.cuda._sleep(10 * CYCLES)
async_lab.attach()
with async_lab.watch(over="1ms") as before:
    torch.cuda.synchronize()
torch.cuda._sleep(CYCLES)
with async_lab.watch(over="1ms") as after:
    torch.cuda.synchronize()
for label, w in (("kernel enqueued before CUPTI subscribed", before), ("kernel enqueued after", after)):
    for h in w.held:
        print(f"{label}: {h['name']} held {h['held_ns'] / 1e6:.1f} ms, class {h['class']}: {h['what_held_it']}")
check(any(h["class"] == "waited-for-stream" for h in after.held), "a synchronize behind a kernel enqueued after subscribing waited for its stream")

# The held calls of a block.
with async_lab.watch() as w:
    y = host.to("cuda", non_blocking=True)  # marker: pageable copy
    s = y.sum().item()  # marker: item
print(json.dumps(w.held, indent=1)[:4000])
names = [(h["name"], h["class"], h["location"]["words"]) for h in w.held]
print("held:", names)
copy = [h for h in w.held if h["name"] == "cudaMemcpyAsync" and h["class"] == "blocking"]
check(len(copy) >= 1, "watch returned the pageable copy, class blocking")
if copy:
    check("gate_watch.py:" in copy[0]["location"]["words"], f"the copy is placed at its Python line ({copy[0]['location']['words']})")
    check(copy[0].get("python"), "the copy carries its Python frames")
    check(all(k in copy[0] for k in ("corr", "start_ns", "end_ns", "segments", "evidence")), "the entry has the JSON report's fields")
print("watch:", "FAIL" if failures else "PASS")
sys.exit(1 if failures else 0)
