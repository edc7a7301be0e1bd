"""A held call in words: what a ``HeldError``, a ``HeldWarning`` and the pytest plugin's failure say of one held
call (a dict shaped like the JSON report's held calls, ``docs/trace-report.schema.json``): where it was made,
the call, how long it held its thread, its class, what held it, and what to change.

The remedies are the lab's measured ones (README, docs/): pinned memory for copies the driver stages through
pageable memory, eager module loading or a warm-up for a kernel's first launch, and moving a wait out of
the loop where the program asked to wait."""

from .duration import words as duration_words

#: Functions that wait by design: their program asked to wait for the GPU.
_WAITS = ("Synchronize", "cudaStreamQuery", "cuStreamQuery", "EventQuery")
#: Functions that free or allocate device memory (some drain the whole device).
_MEMORY = ("Free", "Malloc", "MemAlloc", "HostAlloc", "HostRegister")


class HeldError(RuntimeError):
    """A CUDA call made by this thread inside ``no_blocking(over=...)`` held it longer than ``over``.

    ``held`` is the call as the JSON report gives it (a dict), with its Python frames under ``"python"``.
    """

    def __init__(self, held, over_ns):
        self.held = held
        self.over_ns = over_ns
        super().__init__(message(held, over_ns))


class HeldWarning(RuntimeWarning):
    """What ``no_blocking(mode="warn")`` warns with: the words of a ``HeldError``."""


class GateUnavailable(RuntimeError):
    """The gate cannot watch this process: CUPTI is missing, or taken by another tool (a profiler)."""


def place(held):
    """Where the call was made: the report's innermost user frame (``test_copy.py:12 test_copy``)."""
    location = held.get("location") or {}
    return location.get("words") or held.get("name", "?")


def _own_work(held):
    return (held.get("evidence") or {}).get("own_work") or []


def pageable(held):
    """Whether the call's own work is a copy from or to pageable host memory."""
    return any(w.get("kind") == "copy" and "pageable" in w.get("what", "") for w in _own_work(held))


def remedy(held):
    """What to change so that the call returns at once, in one sentence; ``None`` where it held for nothing
    the lab can name a change for."""
    name = held.get("name", "")
    cls = held.get("class", "")
    causes = {s.get("cause") for s in held.get("segments") or []}
    if pageable(held):
        if any("device → host" in w.get("what", "") for w in _own_work(held)):
            return (
                "copy into pinned host memory (torch: a pin_memory() destination with non_blocking=True, then "
                "an event or synchronize where the data is read): the driver stages a copy to pageable memory "
                "on the calling thread"
            )
        return (
            "pin the host memory (torch: x.pin_memory(), DataLoader(pin_memory=True); cudaHostAlloc): the "
            "driver stages a copy from pageable memory on the calling thread, and a pinned copy returns at "
            "once (4-24 µs on the H200)"
        )
    what = held.get("what_held_it") or ""
    if "context creation" in what:
        return (
            "this call created the CUDA context: create it before the block (torch: torch.cuda.init(), or any "
            "CUDA operation at start-up)"
        )
    module_loads = (held.get("evidence") or {}).get("module_loads", 0)
    if module_loads > 0 and cls in ("waited-for-stream", "device-sync"):
        return (
            "the kernel's first launch loaded its module lazily and waited for the work ahead: run the kernel "
            "once before the loop (a warm-up), or set CUDA_MODULE_LOADING=EAGER"
        )
    if module_loads > 0 or "module load" in what:
        return (
            "the call loaded a module (a kernel's first launch under lazy loading, or a library's first use): "
            "run it once before the block (a warm-up), or set CUDA_MODULE_LOADING=EAGER"
        )
    if any(w in name for w in _WAITS):
        return (
            "this call waits for the GPU by design: wait less often (read a value back every N steps, not every "
            "step), or record an event and wait on it where the result is needed"
        )
    if any(w in name for w in _MEMORY):
        return (
            "allocate and free outside the loop (reuse buffers; torch: avoid torch.cuda.empty_cache() and "
            "tensors made in pinned memory at every step): freeing device memory can drain the whole device"
        )
    if "thread" in causes:
        return "another thread's CUDA call held the driver: move that thread's slow calls (allocation, loading) out of the loop"
    if "device" in causes:
        return "it waited for work on other streams (the whole device drained): find the call that drains it"
    if "stream" in causes:
        return "it waited for the work ahead in its stream: if that wait is not wanted, give the call a stream of its own"
    return None


def message(held, over_ns):
    """The words of one held call (the first line says where, the call, how long, its class; then what held
    it and the remedy)."""
    lines = [
        f"{place(held)}: {held.get('name', '?')} held this thread {duration_words(held.get('held_ns', 0))} "
        f"(over {duration_words(over_ns)}), class {held.get('class', '?')}",
        f"  what held it: {held.get('what_held_it') or 'the call itself'}",
    ]
    fix = remedy(held)
    if fix:
        lines.append(f"  remedy: {fix}")
    return "\n".join(lines)
