"""``async_lab.no_blocking`` inside ``torch.profiler`` (reference/frameworks/wheel_check.sh): with a CUPTI that takes
one subscriber the gate cannot watch, and says CUPTI is taken; with one that takes several (13.2 and later)
it attaches. Prints which, and exits 1 on anything else."""

import sys

import torch
from torch.profiler import ProfilerActivity, profile

import async_lab

host = torch.ones(32 << 18)
torch.zeros(1, device="cuda")
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
    host.to("cuda")
    try:
        with async_lab.no_blocking(over="1ms"):
            host.to("cuda", non_blocking=True)
        print("ATTACHED beside torch.profiler, and no HeldError: FAIL")
        sys.exit(1)
    except async_lab.GateUnavailable as e:
        print("REFUSED:", e)
        ok = "CUPTI is taken" in str(e)
    except async_lab.HeldError as e:
        print("ATTACHED beside torch.profiler (CUPTI took a second subscriber) and raised:", str(e).splitlines()[0])
        ok = True
print("profiler:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
