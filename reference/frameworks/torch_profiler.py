"""A PyTorch program that runs torch.profiler (which subscribes to CUPTI) after CUDA started: under
`async-lab trace` with a CUPTI that takes one subscriber (13.0, the H200's toolkit) the profiler finds CUPTI
taken, and the tracer says so at the end; with `--yield-cupti` the tracer steps aside. With a CUPTI of 13.2 or
later (`--cupti .../nvidia/cu13/lib/libcupti.so.13` of the nvidia-cuda-cupti wheel) the tracer subscribes as
one of several, and the profiler may subscribe beside it (reference/frameworks/lifetime.sh checks both).

Prints one JSON line: how many CUDA kernels the profiler saw (0 when it could not subscribe).

Usage: python3 torch_profiler.py
"""

import json

import torch
from torch.profiler import ProfilerActivity, profile


def main():
    x = torch.ones(1 << 20, device="cuda")
    for _ in range(10):
        x.add_(1.0)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            x.mul_(1.0001)
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA]
    print(json.dumps({"program": "torch_profiler", "cuda_events": len(kernels)}), flush=True)


if __name__ == "__main__":
    main()
