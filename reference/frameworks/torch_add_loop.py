"""What the tracer costs a PyTorch program: N in-place adds of a small tensor, one kernel each.

Prints one JSON line: the median, best and mean µs per op over R rounds of N/R ops (after a warm-up), with the
stream synchronized after each round. Run it with and without `async-lab trace`, interleaved, and compare.

With `--gate LIB` (the injection library, `libasync_lab_inject.so`; the `async_lab` package on PYTHONPATH),
the in-process gate is attached after the warm-up and one `async_lab.no_blocking` block runs (an op and a
synchronization inside it) before the timed loop: the loop then measures what the gate costs outside its
blocks, against the same program never attached.

Usage: python3 torch_add_loop.py [N] [R] [--gate LIB]   (default 20000 ops in 10 rounds)
"""

import json
import statistics
import sys
import time

import torch


def gate_once(lib):
    """Attaches the gate from `lib` and runs one `no_blocking` block, which ends before the timed loop."""
    import async_lab
    from async_lab import gate
    from async_lab._native import Native

    gate.set_backend(Native(lib))
    x = torch.zeros(1024, device="cuda")
    with async_lab.no_blocking(over="1s"):
        x.add_(1.0)
        torch.cuda.synchronize()


def main():
    args = sys.argv[1:]
    lib = None
    if "--gate" in args:
        k = args.index("--gate")
        lib = args[k + 1]
        del args[k : k + 2]
    n = int(args[0]) if len(args) > 0 else 20_000
    rounds = int(args[1]) if len(args) > 1 else 10
    x = torch.zeros(1024, device="cuda")
    for _ in range(2000):
        x.add_(1.0)
    torch.cuda.synchronize()
    if lib is not None:
        gate_once(lib)
    per = n // rounds
    us = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(per):
            x.add_(1.0)
        t1 = time.perf_counter_ns()
        torch.cuda.synchronize()
        us.append((t1 - t0) / per / 1e3)
    print(json.dumps({
        "program": "torch_add_loop", "ops": per * rounds, "rounds": rounds, "gate": lib is not None,
        "median_us_per_op": statistics.median(us), "best_us_per_op": min(us),
        "mean_us_per_op": statistics.fmean(us), "rounds_us_per_op": us,
    }), flush=True)


if __name__ == "__main__":
    main()
