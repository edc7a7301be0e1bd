"""The tests of the ``async_lab`` package that need no GPU. ``cargo xtask test`` runs them from the installed
wheel with ``ASYNC_LAB_EXPECT_INSTALLED=1``, where a test that needs the wheel's binary fails instead of
skipping."""

import os

import pytest

pytest_plugins = ["pytester"]

INSTALLED = os.environ.get("ASYNC_LAB_EXPECT_INSTALLED") == "1"


def needs_installed_package():
    """Skips (fails where the wheel must be installed) when the package has no binary (run from the source)."""
    from async_lab import _binary

    if not os.access(_binary.BINARY, os.X_OK):
        message = f"the package has no binary at {_binary.BINARY}: install the wheel (cargo xtask wheel)"
        if INSTALLED:
            pytest.fail(message)
        pytest.skip(message)
