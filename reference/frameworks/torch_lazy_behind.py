"""A kernel's first launch behind long work, in PyTorch, for `async-lab trace`: under lazy loading (CUDA's
default since 12.2) the first launch of a kernel loads its code, and the load waits for the work running on
the GPU. The lab measured it with its own small module (`runtime/load/first-launch/lazy/*`); here the module
is PyTorch's, whose load takes milliseconds after the wait.

- same-stream: a ~50 ms kernel (`torch.cuda._sleep`) on the current stream, then the program's first
  `g.sum()`: its launch waits for the kernel ahead in its own stream, then loads the reduction's code.
- other-thread: a ~50 ms kernel launched by another thread on its own stream, then this thread's first
  `g.max()` on the default stream: the load waits for the other stream's kernel too (a device-wide wait).

Each case is printed as an `async-lab-step` line (steps.py), timed around the first launch's statement.

Usage: python3 torch_lazy_behind.py [same-stream|other-thread|both]   (default both)
"""

import sys
import threading
import time

import torch

from steps import record

P = "torch_lazy_behind"
# About 50 ms on an H200 (torch.cuda._sleep spins this many GPU cycles).
CYCLES = 100_000_000


def same_stream(g):
    torch.cuda._sleep(CYCLES)
    t0 = time.perf_counter_ns()
    s = g.sum()
    t1 = time.perf_counter_ns()
    record(P, "same-stream", "cudaLaunchKernel", t0, t1, "the first g.sum() behind a 50 ms kernel in its stream")
    torch.cuda.synchronize()
    return s


def other_thread(g):
    started = threading.Event()

    def spin():
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            torch.cuda._sleep(CYCLES)
        started.set()
        side.synchronize()

    worker = threading.Thread(target=spin, name="spinner")
    worker.start()
    started.wait()
    t0 = time.perf_counter_ns()
    m = g.max()
    t1 = time.perf_counter_ns()
    record(P, "other-thread", "cudaLaunchKernel", t0, t1, "the first g.max() while another thread's stream runs a 50 ms kernel")
    worker.join()
    torch.cuda.synchronize()
    return m


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "both"
    if which not in ("same-stream", "other-thread", "both"):
        sys.exit(f"usage: {sys.argv[0]} [same-stream|other-thread|both]")
    g = torch.ones(1 << 20, device="cuda")
    # The context, the sleep kernel's own first launch and the allocator's first block, before anything is timed.
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    out = []
    if which in ("same-stream", "both"):
        out.append(float(same_stream(g)))
    if which in ("other-thread", "both"):
        out.append(float(other_thread(g)))
    print(f"{P}: done {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
