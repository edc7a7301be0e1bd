"""A small PyTorch training loop, as users write one, for `async-lab trace`.

An MLP on random data: batches made on the host (pageable, or pinned with `--pin`), moved with
`non_blocking=True`, forward, loss, backward, an optimizer step, and `loss.item()` to print the loss, which is
where the loop waits for the GPU. `--nvtx` wraps the loop in `torch.autograd.profiler.emit_nvtx()`, so every
operator is an NVTX range (`aten::item`, ...).

Usage: python3 torch_train.py [--steps N] [--pin] [--nvtx]
"""

import argparse
import contextlib
import sys

import torch

from steps import step

P = "torch_train"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--pin", action="store_true")
    ap.add_argument("--nvtx", action="store_true")
    args = ap.parse_args()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(4096, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
        torch.nn.Linear(4096, 1)
    ).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    nvtx = torch.autograd.profiler.emit_nvtx() if args.nvtx else contextlib.nullcontext()
    with nvtx:
        for i in range(args.steps):
            xb = torch.randn(8192, 4096)
            yb = torch.randn(8192, 1)
            if args.pin:
                xb, yb = xb.pin_memory(), yb.pin_memory()
            with step(P, f"batch-to-gpu-{i}", "cudaMemcpyAsync", "the batch to the GPU, non_blocking=True"):
                xb, yb = xb.to(dev, non_blocking=True), yb.to(dev, non_blocking=True)
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with step(P, f"loss-item-{i}", "cudaStreamSynchronize", "loss.item() waits for the step's kernels"):
                v = loss.item()
            print(f"{P}: step {i} loss {v:.4f}", file=sys.stderr)
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
