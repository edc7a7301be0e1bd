"""A PyTorch program that dies right after a call that held its thread, each way a traced program can die:
what the tracer must keep (docs/trace.md, "Nothing lost").

Each mode makes a held call first: a ~10 ms GPU sleep, then `torch.cuda.synchronize()` (a
`cudaDeviceSynchronize` held for the sleep), inside the NVTX range "held-call" (popped before dying), and
prints one JSON line saying so. Then it dies:
  segv   a read of address 0 (SIGSEGV)          bus    a read past a truncated mapping (SIGBUS)
  abrt   os.abort() (SIGABRT)                   term   SIGTERM to itself
  int    SIGINT to itself (Python's KeyboardInterrupt, then Python ends by SIGINT)
  exit   sys.exit(3)                            _exit  os._exit(5), which skips atexit
  kill   SIGKILL to itself 1.2 s later (the tracer's periodic flush must have the held call by then)

Usage: python3 crash.py MODE
"""

import ctypes
import json
import mmap
import os
import signal
import sys
import tempfile
import time

import torch

MODES = ("segv", "bus", "abrt", "term", "int", "exit", "_exit", "kill")


def held_call():
    x = torch.ones(1 << 20, device="cuda")
    torch.cuda.nvtx.range_push("warm-up")
    for _ in range(10):
        x.add_(1.0)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("held-call")
    torch.cuda._sleep(20_000_000)  # about 10 ms of GPU time at the H200's clock
    t0 = time.perf_counter_ns()
    torch.cuda.synchronize()
    t1 = time.perf_counter_ns()
    torch.cuda.nvtx.range_pop()
    return (t1 - t0) / 1e6


def die(mode):
    if mode == "segv":
        ctypes.string_at(0)
    elif mode == "bus":
        with tempfile.TemporaryFile() as f:
            f.write(b"\0" * mmap.PAGESIZE)
            f.flush()
            m = mmap.mmap(f.fileno(), mmap.PAGESIZE)
            f.truncate(0)
            m[0]
    elif mode == "abrt":
        os.abort()
    elif mode == "term":
        os.kill(os.getpid(), signal.SIGTERM)
    elif mode == "int":
        os.kill(os.getpid(), signal.SIGINT)
    elif mode == "exit":
        sys.exit(3)
    elif mode == "_exit":
        os._exit(5)
    elif mode == "kill":
        time.sleep(1.2)
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(5)
    print("crash.py: still alive after", mode, file=sys.stderr)
    sys.exit(9)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode not in MODES:
        print("usage: crash.py " + "|".join(MODES), file=sys.stderr)
        sys.exit(2)
    ms = held_call()
    print(json.dumps({"program": "crash", "mode": mode, "held_call": "cudaDeviceSynchronize", "held_ms": ms}),
          flush=True)
    die(mode)


if __name__ == "__main__":
    main()
