"""Each framework program's own timing of the calls it is about, for `async-lab trace --steps`.

A step is one Python statement that a user expects to return at once (or that is known to wait), timed with
`time.perf_counter_ns()` (CLOCK_MONOTONIC on Linux, the clock the tracer's header pairs with CUPTI's) right
around it. Each step is one JSON line on stdout, prefixed by `async-lab-step `, so that a trace can be put
beside the program's own numbers without the program knowing anything of the tracer.

Steps are also NVTX ranges (where the framework offers NVTX), named like the step, so a trace that records
NVTX shows which calls each step made.
"""

import contextlib
import json
import sys
import threading
import time

PREFIX = "async-lab-step "


def _nvtx():
    """The framework's NVTX push/pop, where one is loaded; no-ops otherwise."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        return torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            from cupy.cuda import nvtx

            return nvtx.RangePush, nvtx.RangePop
        except Exception:  # a CuPy built without NVTX
            pass
    return (lambda _name: None), (lambda: None)


@contextlib.contextmanager
def step(program, name, call, about=""):
    """Times the statements inside as one step: `call` names the CUDA call the step is about."""
    push, pop = _nvtx()
    push(name)
    start = time.perf_counter_ns()
    try:
        yield
    finally:
        end = time.perf_counter_ns()
        pop()
        record(program, name, call, start, end, about)
        print(f"{program}: {name}: {(end - start) / 1e6:.3f} ms ({call})", file=sys.stderr, flush=True)


def record(program, name, call, start_ns, end_ns, about=""):
    """Prints one step the program timed itself (`time.perf_counter_ns()` at its start and end), on this
    thread, without an NVTX range: for programs written the way users write them."""
    line = {
        "program": program,
        "step": name,
        "call": call,
        "tid": threading.get_native_id(),
        "start_ns": start_ns,
        "end_ns": end_ns,
        "about": about,
    }
    print(PREFIX + json.dumps(line), flush=True)
