"""A PyTorch program killed by SIGKILL 0.3 s after its last held call: what a killed program's trace keeps
(docs/trace.md, "Nothing lost"; issue: its calls and their GPU records, not the calls alone).

Six held device → host copies: each is a GPU sleep of about 250 ms on the current stream, then
`x.to("cpu")` of a 4 MiB tensor (a `cudaMemcpyAsync` into pageable memory, which holds the thread until the
sleep ahead of it in its stream has ended, then copies). Each copy prints one JSON line with its own time;
0.3 s after the last, the program sends itself SIGKILL, which no handler sees: only the tracer's periodic
flush can have handed the calls and their GPU records to the trace by then.

Usage: python3 killed.py [COPIES] [HOLD_MS] [KILL_AFTER_S]   (default 6 250 0.3)
"""

import json
import os
import signal
import sys
import time

import torch


def cycles_per_ms():
    """The GPU sleep's cycles per ms, measured on this GPU (the clock differs between GPUs)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)
    torch.cuda.synchronize()
    cycles = 50_000_000
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    end.synchronize()
    return cycles / start.elapsed_time(end)


def main():
    copies = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    hold_ms = float(sys.argv[2]) if len(sys.argv) > 2 else 250.0
    kill_after = float(sys.argv[3]) if len(sys.argv) > 3 else 0.3
    x = torch.ones(1 << 20, device="cuda")
    x.to("cpu")  # the copy's own first use, outside the held calls
    per_ms = cycles_per_ms()
    for k in range(copies):
        torch.cuda._sleep(int(hold_ms * per_ms))
        t0 = time.perf_counter_ns()
        y = x.to("cpu")
        t1 = time.perf_counter_ns()
        print(json.dumps({"program": "killed", "copy": k, "held_ms": (t1 - t0) / 1e6, "sum": float(y[0])}),
              flush=True)
    time.sleep(kill_after)
    os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(5)
    print("killed.py: still alive after SIGKILL", file=sys.stderr)
    sys.exit(9)


if __name__ == "__main__":
    main()
