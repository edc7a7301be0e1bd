"""CuPy's transfers, a kernel compiled at run time and the calls that wait, for `async-lab trace`.

A clock-spinning RawKernel (compiled by NVRTC and loaded with cuModuleLoadData at its first launch: a module
loaded at run time, whatever CUDA_MODULE_LOADING says) is the blocker. Steps (steps.py):

- spin-first-launch: the blocker's first launch: NVRTC compiles it, the driver loads the module.
- asarray-pageable: `cupy.asarray` of a pageable NumPy array behind a 50 ms kernel.
- asnumpy: `cupy.asnumpy` into pageable memory behind a 50 ms kernel: waits for the kernel, then its copy.
- elementwise-first-launch: the first launch of an ElementwiseKernel (compiled and loaded at run time) while
  the blocker runs on a side stream.
- synchronize: the null stream's synchronize behind a 50 ms kernel.

Usage: python3 cupy_program.py [MiB]   (default 256)
"""

import sys

import cupy as cp
import numpy as np

from steps import step

P = "cupy_program"
CYCLES = 100_000_000  # about 50 ms on an H200

SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}
"""


def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    n = mib * (1 << 20) // 4
    with step(P, "first-cuda-call", "cudaMalloc", "the first allocation creates the context"):
        cp.zeros(1, dtype=cp.float32)
    spin = cp.RawKernel(SPIN, "spin")
    with step(P, "spin-first-launch", "cuModuleLoadData", "NVRTC compiles the spin kernel, the driver loads it"):
        spin((1,), (1,), (np.int64(1000),))
    cp.cuda.Device().synchronize()
    host = np.ones(n, dtype=np.float32)

    spin((1,), (1,), (np.int64(CYCLES),))
    with step(P, "asarray-pageable", "cudaMemcpyAsync", "pageable host → device behind a 50 ms kernel"):
        a = cp.asarray(host)
    cp.cuda.Device().synchronize()

    spin((1,), (1,), (np.int64(CYCLES),))
    with step(P, "asnumpy", "cudaMemcpyAsync", "device → pageable host behind a 50 ms kernel"):
        back = cp.asnumpy(a)
    cp.cuda.Device().synchronize()

    twice = cp.ElementwiseKernel("float32 x", "float32 y", "y = 2 * x", "async_lab_twice")
    side = cp.cuda.Stream(non_blocking=True)
    with side:
        spin((1,), (1,), (np.int64(CYCLES),))
    with step(P, "elementwise-first-launch", "cuModuleLoadData", "the first launch of a kernel compiled at run time"):
        b = twice(a)
    cp.cuda.Device().synchronize()

    spin((1,), (1,), (np.int64(CYCLES),))
    with step(P, "synchronize", "cudaStreamSynchronize", "the null stream's synchronize behind a 50 ms kernel"):
        cp.cuda.Stream.null.synchronize()
    print(f"{P}: done ({float(back[0]):.0f}, {float(b[0]):.0f})", file=sys.stderr)


if __name__ == "__main__":
    main()
