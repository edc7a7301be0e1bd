"""PyTorch's transfers and the calls that wait in them, each behind a 50 ms kernel, for `async-lab trace`.

Each step puts a clock-spinning kernel (`torch.cuda._sleep`) ahead of the statement a user writes, in the
same stream or on a side stream, and times the statement (steps.py). What each step shows:

- h2d-pageable: `x.to("cuda", non_blocking=True)` from pageable memory: the driver stages the copy on the
  calling thread, so the call waits for the kernel ahead and then for its own transfer.
- h2d-pinned: the same from pinned memory: returns at once.
- d2h-pinned-alloc: `y.to("cpu", non_blocking=True)`: PyTorch first allocates pinned memory (cudaHostAlloc)
  while a kernel runs on a side stream; the allocation does not wait for it.
- d2h-pageable: `cpu.copy_(y, non_blocking=True)` into pageable memory: waits for the kernel ahead and its copy.
- item: `.item()` waits for the kernel ahead in its stream.
- nonzero: `torch.nonzero` waits for the kernel ahead (it must read the count back).
- empty-cache: `torch.cuda.empty_cache()` frees cached blocks (cudaFree), which waits for the whole device,
  here a kernel on a side stream.
- first-op-side-stream: the first `torch.sort` of the program while a kernel runs on a side stream: its kernels'
  module is loaded lazily, and loading waits for the device.

Usage: python3 torch_transfers.py [MiB]   (default 256)
"""

import sys

import torch

from steps import step

P = "torch_transfers"
CYCLES = 100_000_000  # about 50 ms on an H200 at 1.98 GHz


def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    n = mib * (1 << 20) // 4
    dev = torch.device("cuda")
    with step(P, "first-cuda-call", "cuDevicePrimaryCtxRetain", "the first CUDA call creates the context"):
        torch.cuda.init()
        torch.zeros(1, device=dev)
    side = torch.cuda.Stream()
    # Warm-up, untimed: the sleep kernel's and the copies' first use.
    torch.cuda._sleep(1000)
    torch.ones(1024, device=dev).cpu()
    torch.cuda.synchronize()

    pageable = torch.ones(n)
    pinned = torch.ones(n).pin_memory()
    torch.cuda.synchronize()

    torch.cuda._sleep(CYCLES)
    with step(P, "h2d-pageable", "cudaMemcpyAsync", "pageable host → device behind a 50 ms kernel"):
        a = pageable.to(dev, non_blocking=True)
    torch.cuda.synchronize()

    torch.cuda._sleep(CYCLES)
    with step(P, "h2d-pinned", "cudaMemcpyAsync", "pinned host → device behind a 50 ms kernel"):
        b = pinned.to(dev, non_blocking=True)
    torch.cuda.synchronize()

    with torch.cuda.stream(side):
        torch.cuda._sleep(CYCLES)
    with step(P, "d2h-pinned-alloc", "cudaHostAlloc", "to(cpu, non_blocking) allocates pinned memory first"):
        c = a.to("cpu", non_blocking=True)
    torch.cuda.synchronize()

    out = torch.empty(n)
    torch.cuda._sleep(CYCLES)
    with step(P, "d2h-pageable", "cudaMemcpyAsync", "device → pageable host behind a 50 ms kernel"):
        out.copy_(b, non_blocking=True)
    torch.cuda.synchronize()

    s = a.sum()
    torch.cuda._sleep(CYCLES)
    with step(P, "item", "cudaStreamSynchronize", ".item() behind a 50 ms kernel"):
        v = s.item()
    torch.cuda.synchronize()

    mask = a > 0.5
    torch.cuda._sleep(CYCLES)
    with step(P, "nonzero", "cudaStreamSynchronize", "torch.nonzero behind a 50 ms kernel"):
        nz = torch.nonzero(mask[:1024])
    torch.cuda.synchronize()

    del a, b
    junk = torch.empty(n, device=dev)
    del junk
    with torch.cuda.stream(side):
        torch.cuda._sleep(CYCLES)
    with step(P, "empty-cache", "cudaFree", "empty_cache while a kernel runs on a side stream"):
        torch.cuda.empty_cache()
    torch.cuda.synchronize()

    x = torch.rand(1 << 20, device=dev)
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(CYCLES)
    with step(P, "first-op-side-stream", "cudaLaunchKernel", "the program's first sort while a side stream works"):
        torch.sort(x)
    torch.cuda.synchronize()
    print(f"{P}: done ({v:.0f}, {nz.shape[0]}, {c.shape[0]}, {out[0].item():.0f})", file=sys.stderr)


if __name__ == "__main__":
    main()
