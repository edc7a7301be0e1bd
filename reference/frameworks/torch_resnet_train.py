"""A ResNet-18 training loop written the way users write one, for `async-lab trace`: no NVTX, no tracer in
mind.

Random 3×160×160 images and labels come from a `Dataset` through a `DataLoader` with two worker processes,
64 a batch; each batch goes to the GPU with `.cuda(non_blocking=True)` (from pageable memory by default,
from pinned memory with `--pin`, the loader's `pin_memory=True`); torchvision's ResNet-18, cross entropy,
SGD; `loss.item()` logged every step.

Each step (the next batch from the loader through `loss.item()`) is timed with `time.perf_counter` and
printed as an `async-lab-step` line (steps.py); the last line is one JSON object: the median step time after
the warm-up steps, and how many steps it is the median of.

Usage: python3 torch_resnet_train.py [--steps N] [--warmup N] [--pin]
"""

import argparse
import json
import statistics
import time

import torch
import torchvision
from torch.utils.data import DataLoader, Dataset

from steps import record

P = "torch_resnet_train"


class RandomImages(Dataset):
    """Random images and labels, as a stand-in for a folder of JPEGs: `n` items drawn from a pool of 256."""

    def __init__(self, n, size=160, classes=1000, pool=256):
        g = torch.Generator().manual_seed(0)
        self.n = n
        self.images = torch.randn(pool, 3, size, size, generator=g)
        self.labels = torch.randint(classes, (pool,), generator=g)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        k = i % len(self.images)
        return self.images[k], int(self.labels[k])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--pin", action="store_true")
    args = ap.parse_args()
    if args.steps < 1 or args.warmup < 0:
        ap.error("--steps must be at least 1 and --warmup at least 0")

    batch = 64
    dataset = RandomImages((args.warmup + args.steps) * batch)
    loader = DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=2, pin_memory=args.pin, drop_last=True)
    model = torchvision.models.resnet18(num_classes=1000).cuda()
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    model.train()

    times = []
    start = time.perf_counter_ns()
    for i, (images, labels) in enumerate(loader):
        images = images.cuda(non_blocking=True)
        labels = labels.cuda(non_blocking=True)
        outputs = model(images)
        loss = criterion(outputs, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        value = loss.item()
        end = time.perf_counter_ns()
        record(P, f"step-{i}", "cudaStreamSynchronize", start, end, "the next batch through loss.item()")
        print(f"step {i}: loss {value:.4f}")
        if i >= args.warmup:
            times.append((end - start) / 1e6)
        start = time.perf_counter_ns()

    print(json.dumps({"median_step_ms": round(statistics.median(times), 3), "steps": len(times)}))


if __name__ == "__main__":
    main()
