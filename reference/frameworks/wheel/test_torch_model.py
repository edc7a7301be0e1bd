"""A PyTorch test file written the way people write them, for the async-lab pytest plugin on a GPU
(reference/frameworks/wheel_check.sh runs it with ``--async-lab-fail-on-held=1ms``): a fixture that builds a model
(not gated: fixtures build and warm up on purpose), a test copying a pageable batch to the GPU, one copying a
pinned one (its ``pin_memory()`` is the pinned-memory cache's growth: paid once), one reading ``.item()`` after
its model's work (its first forward loads cuBLAS's kernels: paid once; the read waits for the work: a
synchronization), the same with its limit lifted by the marker, and a test that makes no CUDA call.

What the plugin must do on the H200: fail exactly ``test_pageable_copy`` (class blocking, remedy pinned memory in
PyTorch's words) and ``test_item_after_the_models_work`` (a synchronization behind the work, remedy in PyTorch's
words), none of them for a one-time load or allocation; pass the others. With ``--async-lab-fail-on-warm-up``,
``test_pinned_copy`` fails too, on its ``cudaHostAlloc`` (paid once)."""

import pytest
import torch

#: A batch of this many MiB of float32: its pageable copy holds the thread for milliseconds on the H200.
MIB = 64
#: Rows of the activations the model runs on: each Linear layer is a large matrix product.
ROWS = 8192
WIDTH = 4096


@pytest.fixture(scope="module")
def model():
    # Built and moved to the GPU here, never run: its first forward pass is a test's.
    return torch.nn.Sequential(
        torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU()
    ).cuda()


@pytest.fixture(scope="module")
def batch():
    return torch.ones(MIB << 18)  # pageable, on the host


@pytest.fixture
def activations():
    return torch.randn(ROWS, WIDTH, device="cuda")


def test_pageable_copy(batch):
    x = batch.to("cuda", non_blocking=True)  # the held call: a pageable copy
    assert x.shape == batch.shape


def test_pinned_copy(batch):
    pinned = batch.pin_memory()  # cudaHostAlloc: the pinned-memory cache's growth, paid once
    x = pinned.to("cuda", non_blocking=True)
    assert x.shape == batch.shape


def test_item_after_the_models_work(model, activations):
    y = activations
    for _ in range(8):
        y = model(y)
    loss = y.mean().item()  # the held call: waits for the forward passes
    assert loss == loss


@pytest.mark.async_lab(fail_on_held=None)
def test_item_with_the_limit_lifted(model, activations):
    y = activations
    for _ in range(8):
        y = model(y)
    assert y.mean().item() == y.mean().item()


def test_on_the_cpu_only():
    assert sorted([3, 1, 2]) == [1, 2, 3]
