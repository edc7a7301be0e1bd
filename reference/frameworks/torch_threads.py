"""Two Python threads and one kernel, for `async-lab trace`: who waited for what.

Thread "syncer" puts a 50 ms kernel on its own stream and synchronizes that stream. Thread "first-op" starts
5 ms later and runs the program's first `torch.cumsum`: its kernel's module loads lazily, and the load waits
for the device, which is busy with the same 50 ms kernel. Both threads waited for that kernel: the tracer
should name the kernel as what held the first-op thread, not the other thread's synchronize.

Usage: python3 torch_threads.py
"""

import sys
import threading
import time

import torch

from steps import step

P = "torch_threads"
CYCLES = 100_000_000  # about 50 ms on an H200


def main():
    dev = torch.device("cuda")
    torch.zeros(1, device=dev)
    torch.cuda._sleep(1000)
    x = torch.rand(1 << 20, device=dev)
    torch.cuda.synchronize()
    ready = threading.Barrier(2)

    def syncer():
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            ready.wait()
            torch.cuda._sleep(CYCLES)
            with step(P, "stream-synchronize", "cudaStreamSynchronize", "waits for its own 50 ms kernel"):
                s.synchronize()

    def first_op():
        ready.wait()
        time.sleep(0.005)
        with step(P, "first-cumsum", "cudaLaunchKernel", "the first cumsum while the other thread's kernel runs"):
            y = torch.cumsum(x, 0)
        torch.cuda.current_stream().synchronize()
        print(f"{P}: cumsum {y[-1].item():.0f}", file=sys.stderr)

    threads = [threading.Thread(target=syncer, name="syncer"), threading.Thread(target=first_op, name="first-op")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
