"""A ResNet-18 training loop as users write one, for what `async-lab trace` costs a training step.

torchvision's ResNet-18 (random weights) on random images (batch 64 of 3x160x160, 10 classes) served by a
`DataLoader` with 2 worker processes (pinned batches with `--pin`), moved with `non_blocking=True`; forward,
cross-entropy, backward, an SGD step with momentum, and `loss.item()`, where the loop waits for the GPU. About
400 kernel launches a step: on an H200 the loop is bound by how fast the host launches them.

Each step is timed from the batch's arrival to `loss.item()`'s return (`time.perf_counter_ns`); the first
`--warmup` steps (cuDNN's choices, the caching allocator's first blocks, lazy module loading) are left out.
Prints one JSON line at the end: `{"median_step_ms": ..., "steps": ..., ...}`.

Usage: python3 torch_resnet_train.py [--steps N] [--warmup N] [--pin]
"""

import argparse
import json
import statistics
import time

import torch
import torchvision


class RandomImages(torch.utils.data.Dataset):
    """Images and labels from a pool of 256 random ones, so that the workers keep ahead of the GPU and the
    step's time is the model's."""

    def __init__(self, n, size):
        g = torch.Generator().manual_seed(0)
        self.n = n
        self.images = torch.randn(256, 3, size, size, generator=g)
        self.labels = torch.randint(0, 10, (256,), generator=g)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.images[i % 256], int(self.labels[i % 256])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--pin", action="store_true")
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    if args.steps <= 0 or args.warmup < 0:
        ap.error("--steps must be positive and --warmup not negative")
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    total = args.warmup + args.steps
    data = RandomImages(total * args.batch, 160)
    loader = torch.utils.data.DataLoader(
        data, batch_size=args.batch, num_workers=2, pin_memory=args.pin, persistent_workers=False
    )
    model.train()
    ms = []
    t0 = time.perf_counter_ns()
    for i, (xb, yb) in enumerate(loader):
        xb, yb = xb.to(dev, non_blocking=True), yb.to(dev, non_blocking=True)
        out = model(xb)
        loss = torch.nn.functional.cross_entropy(out, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()
        t1 = time.perf_counter_ns()
        if i >= args.warmup:
            ms.append((t1 - t0) / 1e6)
        t0 = t1
    torch.cuda.synchronize()
    print(json.dumps({
        "program": "torch_resnet_train", "median_step_ms": statistics.median(ms), "steps": len(ms),
        "mean_step_ms": statistics.fmean(ms), "min_step_ms": min(ms), "max_step_ms": max(ms),
        "batch": args.batch, "pin": args.pin,
    }), flush=True)


if __name__ == "__main__":
    main()
