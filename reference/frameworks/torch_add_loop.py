"""What the tracer costs a PyTorch program: N in-place adds of a small tensor, one kernel each.

Prints one JSON line: the median, best and mean µs per op over R rounds of N/R ops (after a warm-up), with the
stream synchronized after each round. Run it with and without `async-lab trace`, interleaved, and compare.

Usage: python3 torch_add_loop.py [N] [R]   (default 20000 ops in 10 rounds)
"""

import json
import statistics
import sys
import time

import torch


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    x = torch.zeros(1024, device="cuda")
    for _ in range(2000):
        x.add_(1.0)
    torch.cuda.synchronize()
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
        "program": "torch_add_loop", "ops": per * rounds, "rounds": rounds,
        "median_us_per_op": statistics.median(us), "best_us_per_op": min(us),
        "mean_us_per_op": statistics.fmean(us), "rounds_us_per_op": us,
    }), flush=True)


if __name__ == "__main__":
    main()
