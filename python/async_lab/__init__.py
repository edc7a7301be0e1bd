"""async-lab for Python: which CUDA call held your thread, for how long, and by what.

- ``async-lab trace -- python3 train.py`` (or ``python -m async_lab trace ...``): the whole program traced.
- ``with async_lab.no_blocking(over="1ms"):`` a CUDA call made by this thread inside the block that holds it
  longer than ``over`` raises ``HeldError`` at the line that made it (``mode="warn"`` warns).
- ``with async_lab.watch() as w:`` ``w.held`` lists the block's held calls, as the JSON report gives them.
- ``pytest --async-lab-fail-on-held=1ms``, or ``@pytest.mark.async_lab(fail_on_held="1ms")``: a test in which a
  CUDA call held longer fails.

docs/python.md tells the details."""

from .gate import no_blocking, watch
from .held import GateUnavailable, HeldError, HeldWarning


def attach():
    """Subscribes to CUPTI in this process now, rather than at the first block: the GPU work enqueued before
    CUPTI subscribes has no records, so a block's first call that waits for such work cannot name it.
    Raises ``GateUnavailable`` where CUPTI is missing or taken."""
    from .gate import backend

    backend().attach()


def _version():
    try:
        from importlib.metadata import version

        return version("async-lab")
    except Exception:  # not installed (the source tree)
        return "0+unknown"


__version__ = _version()
__all__ = ["no_blocking", "watch", "attach", "HeldError", "HeldWarning", "GateUnavailable", "__version__"]
