"""A PyTorch test file as users write one, for the async-lab pytest plugin (reference/frameworks/wheel_check.sh):
run with ``--async-lab-fail-on-held=1ms``, the pageable test fails at its copy's line (``blocking``, remedy:
pinned memory) and the pinned one passes. The fixtures create the context, pin the memory and warm the
allocator up: what is gated is the test's body."""

import pytest
import torch

MIB = 32


@pytest.fixture(scope="module")
def host():
    torch.zeros(1, device="cuda")  # the context, before any gate
    return torch.ones(MIB << 18)  # MIB MiB of float32, pageable


@pytest.fixture
def pinned(host):
    p = host.pin_memory()
    for _ in range(3):
        y = p.to("cuda", non_blocking=True)
    torch.cuda.synchronize()
    del y
    yield p
    torch.cuda.synchronize()


def test_pageable_copies(host):
    for _ in range(3):
        y = host.to("cuda", non_blocking=True)  # the held call
    assert y.shape == host.shape


def test_pinned_copies(pinned):
    for _ in range(3):
        y = pinned.to("cuda", non_blocking=True)
    assert y.shape == pinned.shape
