"""A PyTorch program's first reduction behind a long kernel, for `async-lab trace`: under lazy loading (the
default since CUDA 12.2) the reduction's first launch loads its module, and the load waits for the work
already running (the lab's K4), then loads (several ms for PyTorch's modules, of which CUPTI's record of the
function's load covers only the end).

- same: `torch.cuda._sleep` (about 50 ms) on the current stream, then the first `g.sum()` on it;
- other: another thread puts the sleep on a stream of its own, then the main thread's first `g.sum()` on the
  default stream.

Usage: python3 lazy_torch.py same|other
"""

import sys
import threading
import time

import torch

CYCLES = 100_000_000  # about 50 ms on an H200


def main():
    where = sys.argv[1] if len(sys.argv) > 1 else "same"
    dev = torch.device("cuda")
    g = torch.rand(1 << 20, device=dev)
    torch.cuda._sleep(1000)  # the sleep kernel's own first launch: its module loads here, with nothing ahead
    torch.cuda.synchronize()
    if where == "same":
        torch.cuda._sleep(CYCLES)
    else:
        started = threading.Event()

        def sleeper():
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                torch.cuda._sleep(CYCLES)
            started.set()

        t = threading.Thread(target=sleeper)
        t.start()
        started.wait()
    t0 = time.perf_counter_ns()
    total = g.sum()  # the first reduction: its module loads lazily, behind the sleep
    held = time.perf_counter_ns() - t0
    torch.cuda.synchronize()
    print(f"lazy_torch {where}: the first g.sum() returned after {held / 1e6:.1f} ms ({float(total):.0f})")
    if where != "same":
        t.join()


if __name__ == "__main__":
    main()
