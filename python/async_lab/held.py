"""The gate's errors and warning: ``HeldError`` (a CUDA call held its thread past a block's limit),
``HeldWarning`` and ``GateUnavailable``.

Their words are the trace analysis's: the injection library words each held call as ``async-lab trace`` does
(where it was made, the call, how long it held past the limit, its class, what held it, whether it is paid once,
and the remedy in the program's framework: ``trace-analysis/src/held_message.rs``) and hands the words over with
the call, under ``"message"``. Nothing here classifies a call or words a remedy."""


class HeldError(RuntimeError):
    """A CUDA call made by this thread inside ``no_blocking(over=...)`` held it longer than ``over``.

    ``held`` is the call as the JSON report gives it (a dict), with its Python frames under ``"python"`` and the
    analysis's words under ``"message"``.
    """

    def __init__(self, held, over_ns):
        self.held = held
        self.over_ns = over_ns
        super().__init__(held["message"])


class HeldWarning(RuntimeWarning):
    """What ``no_blocking(mode="warn")`` warns with: the words of a ``HeldError``."""


class GateUnavailable(RuntimeError):
    """The gate cannot watch this process: CUPTI is missing, or taken by another tool (a profiler).

    ``reason`` says which: ``"missing"`` (CUPTI, or the injection library, could not be loaded), ``"taken"`` (another
    tool subscribed to CUPTI) or ``"failed"``."""

    def __init__(self, message, reason="failed"):
        super().__init__(message)
        self.reason = reason
