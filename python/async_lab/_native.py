"""The injection library loaded into this process (``ctypes``) and its gate's entry points
(``trace-inject/src/attach.rs``); and which CUPTI it loads.

The library's CUPTI binding opens CUPTI by its usual names (``libcupti.so``, then ``libcupti.so.13``, ...)
and checks that they resolve to the file it was given: so the file is the one the loader finds by those
names where it finds one (a CUPTI this process already loaded answers to its own name: PyTorch loads its
own). Only where it finds none, the file is looked for as ``async-lab trace`` looks: ``ASYNC_LAB_CUPTI``
(which also comes first, and is refused by the library where the names resolve elsewhere), the ``nvidia``
wheels (``pip install async-lab[cupti]``), ``CUDA_HOME`` and ``/usr/local/cuda``. The variable, the wheels' and the
toolkit's folders are those of the binary's search (``driver/src/runtime/locate.rs``'s ``CUPTI``), which a test
of ``tests/tests/python_package.rs`` compares them with; the order differs where a library loaded into a
running process must take the CUPTI the loader already resolves."""

import ctypes
import glob
import json
import os
import site
import sys
import threading

from . import _binary
from .held import GateUnavailable

#: Names the CUPTI library (a file, or a folder holding one), as for ``async-lab trace``.
CUPTI_VAR = "ASYNC_LAB_CUPTI"
#: How to get CUPTI, for the words of a gate that cannot start without it.
HOW_TO_GET_CUPTI = (
    "pip install async-lab[cupti] (NVIDIA's CUPTI wheel), or set ASYNC_LAB_CUPTI to a libcupti.so or its folder"
)
#: What the injection library reads: the file it loads.
_CUPTI_LIB_VAR = "ASYNC_LAB_CUPTI_LIB"
_WHEEL_DIRS = ("nvidia/cu13/lib", "nvidia/cuda_cupti/lib", "nvidia/cu12/lib")
_TOOLKIT_DIRS = ("lib64", "extras/CUPTI/lib64", "lib", "targets/x86_64-linux/lib")

_FAILURES = {
    1: "CUPTI could not be loaded",
    2: "CUPTI is taken",
    3: "CUPTI failed",
    4: "the gate's trace cannot be written",
    5: "the injection library failed",
}


def _newest(pattern):
    found = sorted(glob.glob(pattern))
    return found[-1] if found else None


def _in_folder(path):
    if os.path.isdir(path):
        return _newest(os.path.join(path, "libcupti.so*"))
    return path if os.path.isfile(path) else None


def loaded_cupti(maps="/proc/self/maps"):
    """The ``libcupti.so*`` this process has mapped, or None."""
    try:
        with open(maps) as f:
            for line in f:
                path = line.split(None, 5)[-1].strip()
                if os.path.basename(path).startswith("libcupti.so"):
                    return path
    except OSError:
        pass
    return None


def site_folders():
    """Python's site-packages folders, and the folders on ``sys.path``."""
    folders = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    user = site.getusersitepackages() if hasattr(site, "getusersitepackages") else None
    if user:
        folders.append(user)
    folders.extend(p for p in sys.path if p)
    return list(dict.fromkeys(folders))


#: The names the binding opens CUPTI by, in its order (cudarc's candidates that exist on Linux).
_BINDING_NAMES = ("libcupti.so", "libcupti.so.13", "libcupti.so.12", "libcupti.so.11")


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


def loader_cupti():
    """The file the loader opens for the binding's first name that it finds, or None. (Opening it loads it
    into this process, as attaching would next.)"""
    for name in _BINDING_NAMES:
        try:
            lib = ctypes.CDLL(name)
            address = ctypes.cast(lib.cuptiGetVersion, ctypes.c_void_p)
        except (OSError, AttributeError):
            continue
        info = _DlInfo()
        if ctypes.CDLL(None).dladdr(address, ctypes.byref(info)) and info.dli_fname:
            return os.path.realpath(info.dli_fname.decode())
    return None


def find_cupti(env=os.environ, maps="/proc/self/maps", folders=None, by_name=loader_cupti):
    """The CUPTI library to load, or None (the library then says none was found)."""
    explicit = env.get(CUPTI_VAR)
    if explicit:
        found = _in_folder(explicit)
        if not found:
            raise GateUnavailable(f"{CUPTI_VAR}={explicit}: no libcupti.so* there", reason="missing")
        return found
    named = by_name()
    if named:
        return named
    loaded = loaded_cupti(maps)
    if loaded:
        return loaded
    for folder in folders if folders is not None else site_folders():
        for sub in _WHEEL_DIRS:
            found = _newest(os.path.join(folder, sub, "libcupti.so*"))
            if found:
                return found
    homes = [env.get("CUDA_HOME"), env.get("CUDA_PATH"), "/usr/local/cuda"]
    for home in filter(None, homes):
        for sub in _TOOLKIT_DIRS:
            found = _newest(os.path.join(home, sub, "libcupti.so*"))
            if found:
                return found
    return None


class Native:
    """The gate's entry points of the injection library (one per process)."""

    def __init__(self, path=_binary.INJECTION_LIBRARY):
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise GateUnavailable(f"cannot load the injection library {path}: {e}", reason="missing") from None
        lib.async_lab_attach.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        lib.async_lab_attach.restype = ctypes.c_int
        lib.async_lab_gate.argtypes = [ctypes.c_uint64]
        lib.async_lab_gate.restype = None
        lib.async_lab_take.argtypes = []
        lib.async_lab_take.restype = ctypes.c_void_p
        lib.async_lab_begin.argtypes = []
        lib.async_lab_begin.restype = ctypes.c_uint64
        lib.async_lab_end.argtypes = [ctypes.c_uint64]
        lib.async_lab_end.restype = None
        lib.async_lab_report.argtypes = [ctypes.c_char_p]
        lib.async_lab_report.restype = ctypes.c_void_p
        lib.async_lab_free.argtypes = [ctypes.c_void_p]
        lib.async_lab_free.restype = None
        self._lib = lib
        self._held = ctypes.c_uint64.in_dll(lib, "ASYNC_LAB_HELD")
        self._attached = False
        self._lock = threading.Lock()

    def _string(self, pointer):
        if not pointer:
            return ""
        try:
            return ctypes.string_at(pointer).decode("utf-8", "replace")
        finally:
            self._lib.async_lab_free(pointer)

    def attach(self):
        """Subscribes to CUPTI now (once); raises ``GateUnavailable`` with the reason where it cannot."""
        with self._lock:
            if self._attached:
                return
            cupti = find_cupti()
            if cupti:
                os.environ[_CUPTI_LIB_VAR] = cupti
            why = ctypes.c_void_p()
            code = self._lib.async_lab_attach(ctypes.byref(why))
            if code != 0:
                reason = self._string(why.value)
                what = _FAILURES.get(code, "CUPTI failed")
                if code == 1:
                    reason += f" (to get CUPTI: {HOW_TO_GET_CUPTI})"
                if code == 2:
                    reason += (
                        " (a profiler: torch.profiler, nsys, ncu, compute-sanitizer; CUPTI 13.2 and later take "
                        "several subscribers: pip install async-lab[cupti])"
                    )
                kind = {1: "missing", 2: "taken"}.get(code, "failed")
                raise GateUnavailable(f"async-lab cannot gate this process: {what}: {reason}", reason=kind)
            self._attached = True

    def counter(self):
        return self._held.value

    def gate(self, limit_ns):
        self._lib.async_lab_gate(limit_ns)

    def take(self):
        return json.loads(self._string(self._lib.async_lab_take()) or "[]")

    def begin(self):
        return self._lib.async_lab_begin()

    def end(self, since):
        self._lib.async_lab_end(since)

    def report(self, since, calls, warm_up=False):
        """What held ``calls`` (the library's answer: ``held_calls``, ``paid_once`` and ``missing``, each call
        worded by the core under ``"message"``)."""
        request = json.dumps({"since": since, "warm_up": warm_up, "calls": calls}).encode()
        answer = json.loads(self._string(self._lib.async_lab_report(request)) or "{}")
        if "error" in answer:
            raise GateUnavailable(f"async-lab cannot read its trace: {answer['error']}")
        return answer
