"""The gate inside the program: ``no_blocking`` and ``watch``, per thread.

The injection library, loaded into this process and subscribed to CUPTI (``_native``), lists each CUDA call
that held a gated thread longer than its block's limit, on that thread, from inside CUPTI's callback, where
Python cannot be entered (the framework released the GIL around the call). The Python side sees the list
when control comes back to Python: while a block is open, a profile function (``sys.setprofile``, this
thread only) compares the library's count of listed calls at every call and return; when it moved, it takes
this thread's list with the Python frames of that moment (the line that made the call, or the line just
after it where the call was made by an operator rather than a call) and asks the library what held each
call: the same analysis and JSON entries as ``async-lab trace --format json``, from the process's trace since
the block began, with the analysis's words of each (``HeldError``'s message). What the program pays once (the
context, loading code, a library's setup, the allocator's growth, a model's upload: warm-up, by its cause)
gates nothing unless ``warm_up=True``: it is kept in ``paid_once``. ``no_blocking`` raises ``HeldError`` at the
first return into the program's own code (not an installed package's), so the traceback ends at the user's
line, or at the block's end; ``watch`` keeps the calls for ``w.held``.

Calls made by other threads (PyTorch's autograd runs backward's kernels on a thread of its own) are not this
thread's: each thread gates its own calls."""

import sys
import threading
import warnings

from . import duration
from .held import HeldError, HeldWarning

#: Python frames kept per held call, innermost first (as the tracer keeps).
DEPTH = 8

_backend = None
_backend_lock = threading.Lock()
_threads = threading.local()


def backend():
    """The injection library's gate (loaded once per process)."""
    global _backend
    with _backend_lock:
        if _backend is None:
            from ._native import Native

            _backend = Native()
        return _backend


def set_backend(b):
    """Puts another backend in the injection library's place (the tests' stand-in); returns the old one."""
    global _backend
    with _backend_lock:
        old, _backend = _backend, b
        return old


_OWN_FOLDER = __file__.rsplit("/", 1)[0] + "/"


def library_file(path):
    """A file of an installed package, of Python's own library, or of this package: not the program's code.
    The rule is the analysis's (``trace-analysis/src/library_paths.rs``'s ``library_python``, which a test of
    ``tests/tests/python_package.rs`` compares this with), here because the profile function asks at every
    return."""
    if path.startswith(_OWN_FOLDER) or path.startswith("<"):
        return True
    if "site-packages/" in path or "dist-packages/" in path:
        return True
    parts = path.split("/")
    return any(
        a in ("lib", "lib64") and b.startswith("python") and b[6:7].isdigit() for a, b in zip(parts, parts[1:])
    )


def frames_of(frame):
    """The Python frames from ``frame`` outwards, innermost first, this package's own left out."""
    out = []
    while frame is not None and len(out) < DEPTH:
        code = frame.f_code
        if not code.co_filename.startswith(_OWN_FOLDER):
            out.append({"file": code.co_filename, "line": frame.f_lineno, "function": code.co_name})
        frame = frame.f_back
    return out


class _Thread:
    """One thread's open blocks and what its profile function knows."""

    def __init__(self):
        self.blocks = []
        self.saved_profile = None
        self.seen = 0
        self.backend = None


def _thread():
    t = getattr(_threads, "state", None)
    if t is None:
        t = _threads.state = _Thread()
    return t


def _where(frame, event):
    """The frame whose line made the held call, for a profile event at ``frame``: the frame calling a C
    function, or the caller of a Python function about to run."""
    if event == "call" and frame.f_back is not None:
        return frame.f_back
    return frame


def _collect(t, frame, event):
    """Takes this thread's listed calls and hands each to the open blocks whose limit it passed."""
    calls = t.backend.take()
    if not calls:
        return
    python = frames_of(_where(frame, event))
    for call in calls:
        for block in t.blocks:
            if call.get("held_ns", 0) > block.over_ns:
                block._listed.append({"corr": call["corr"], "python": python, "call": call})


def _raises_here(frame, event):
    """Whether an exception raised from the profile function at this event surfaces in the program's own code:
    returning from a C function to it, about to call one from it, or a Python function returning into it."""
    if event in ("c_return", "c_call"):
        return not library_file(frame.f_code.co_filename)
    if event == "return":
        back = frame.f_back
        return back is not None and not library_file(back.f_code.co_filename)
    return False


def _profile(frame, event, arg):
    __tracebackhide__ = True  # pytest leaves this frame out of a failure's traceback
    t = _thread()
    if t.backend is None:
        return
    n = t.backend.counter()
    if n == t.seen:
        return
    t.seen = n
    _collect(t, frame, event)
    for block in list(t.blocks):
        if block._listed and block.mode == "warn":
            block._warn_all()
    if _raises_here(frame, event):
        for block in reversed(t.blocks):
            if block.mode == "raise" and block._listed:
                block._raise_first()


class _Block:
    """An open block of one thread: the calls it listed, and what held them once asked."""

    mode = "watch"

    def __init__(self, over, warm_up=False):
        self.over_ns = max(duration.parse(over), 1)
        self.warm_up = bool(warm_up)
        #: The held calls of the block, as the JSON report gives them, with their Python frames and the analysis's
        #: words (``"message"``).
        self.held = []
        #: The calls past the limit that the program pays once (warm-up), which gate nothing unless ``warm_up``.
        self.paid_once = []
        self._listed = []
        self._since = None
        self._thread = None

    def _report(self):
        """Asks the library what held the calls listed so far; appends them to ``held`` (the warm-up to
        ``paid_once``); returns those appended to ``held``."""
        if not self._listed:
            return []
        listed, self._listed = self._listed, []
        asked = [
            {
                "corr": c["corr"],
                "python": c["python"],
                "over_ns": self.over_ns,
                "name": c["call"]["name"],
                "held_ns": c["call"]["held_ns"],
            }
            for c in listed
        ]
        answer = self._thread.backend.report(self._since, asked, self.warm_up)
        held = {h["corr"]: h for h in answer.get("held_calls", [])}
        once = {h["corr"]: h for h in answer.get("paid_once", [])}
        missing = {m["corr"]: m for m in answer.get("missing", [])}
        out = []
        for c in listed:
            corr = c["corr"]
            if corr in once:
                self.paid_once.append(dict(once[corr], python=c["python"]))
                continue
            h = held.get(corr)
            if h is None:
                # Its line is not in the trace (it cannot be classified): what the callback saw, with the analysis's
                # words of it.
                call = c["call"]
                h = dict(call, **{"class": "unknown"}, message=missing.get(corr, {}).get("message", call["name"]))
            out.append(dict(h, python=c["python"]))
        self.held.extend(out)
        return out

    def _warn_all(self):
        for h in self._report():
            python = h.get("python") or []
            user = next((f for f in python if not library_file(f["file"])), python[0] if python else None)
            filename, lineno = (user["file"], user["line"]) if user else ("<unknown>", 0)
            warnings.warn_explicit(HeldError(h, self.over_ns).args[0], HeldWarning, filename, lineno)

    def _raise_first(self):
        __tracebackhide__ = True
        new = self._report()
        if not new:
            # Only what the program pays once: nothing to raise.
            return
        self._raised = True
        raise HeldError(new[0], self.over_ns)

    def __enter__(self):
        t = _thread()
        if t.backend is None:
            t.backend = backend()
        t.backend.attach()
        self._thread = t
        self._since = t.backend.begin()
        self._raised = False
        t.blocks.append(self)
        if len(t.blocks) == 1:
            t.saved_profile = sys.getprofile()
            t.seen = t.backend.counter()
            sys.setprofile(_profile)
        t.backend.gate(min(b.over_ns for b in t.blocks))
        return self

    def __exit__(self, exc_type, exc, tb):
        __tracebackhide__ = True
        t = self._thread
        # No profile events from this package's own work below.
        sys.setprofile(None)
        try:
            _collect(t, sys._getframe(1), "exit")
            if self.mode == "warn":
                self._warn_all()
            new = self._report()
        finally:
            t.blocks.remove(self)
            t.backend.gate(min((b.over_ns for b in t.blocks), default=0))
            t.backend.end(self._since)
            if t.blocks:
                sys.setprofile(_profile)
            else:
                sys.setprofile(t.saved_profile)
                t.saved_profile = None
        if self.mode == "raise" and new and exc_type is None:
            raise HeldError(new[0], self.over_ns)
        return False


class no_blocking(_Block):
    """``with async_lab.no_blocking(over="1ms"):`` a CUDA call made by this thread inside the block that holds it
    longer than ``over`` raises ``HeldError`` (``mode="warn"``: warns ``HeldWarning``) naming the line, the call,
    how long it held, its class, what held it and the remedy. What the program pays once (a first use: the
    context, loading code, the allocator's growth, a model's upload) does not, unless ``warm_up=True``; it is kept
    in ``paid_once``. Raises ``GateUnavailable`` on entering where CUPTI is missing or taken by another tool."""

    def __init__(self, over="1ms", mode="raise", warm_up=False):
        if mode not in ("raise", "warn"):
            raise ValueError(f"mode is 'raise' or 'warn', not {mode!r}")
        super().__init__(over, warm_up)
        self.mode = mode


class watch(_Block):
    """``with async_lab.watch() as w:`` collects the CUDA calls this thread made inside the block that held it
    longer than ``over`` (default 20 µs, as ``async-lab trace``'s ``--min-held``): ``w.held`` is a list of dicts
    shaped like the JSON report's held calls (``docs/trace-report.schema.json``), each with its Python frames
    (``"python"``, innermost first); the calls the program pays once are in ``w.paid_once`` instead, unless
    ``warm_up=True``."""

    def __init__(self, over="20us", warm_up=False):
        super().__init__(over, warm_up)
