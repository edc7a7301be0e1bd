"""A stand-in for the injection library's gate (``async_lab._native.Native``), for the tests without a GPU: a
"CUDA call" made through ``framework.py`` (written under a ``site-packages`` folder, as an installed
framework's file) is listed on its thread where it held past that thread's limit, as the library's callback
lists it, and a report answers with the JSON report's fields."""

import os
import threading

from async_lab.held import GateUnavailable

FRAMEWORK = '''
BACKEND = None


def to_cuda(held_ns, name="cudaMemcpyAsync"):
    # The count moves here, after the stand-in's Python code ran, as the library's moves inside a C call.
    if BACKEND.call(name, held_ns):
        BACKEND.count += 1
    return "tensor"
'''


class Fake:
    def __init__(self, unavailable=None):
        self.unavailable = unavailable
        self.count = 0
        self.corr = 100
        self.limits = {}
        self.lists = {}
        self.asked = []
        self.open = []
        self.calls = {}
        # Re-entrant: the profile function runs inside these methods too (at their calls and returns).
        self.lock = threading.RLock()

    def attach(self):
        if self.unavailable:
            raise GateUnavailable(self.unavailable)

    def counter(self):
        return self.count

    def gate(self, limit_ns):
        self.limits[threading.get_ident()] = limit_ns

    def call(self, name, held_ns):
        tid = threading.get_ident()
        limit = self.limits.get(tid, 0)
        with self.lock:
            self.corr += 1
            if limit and held_ns > limit:
                call = {"corr": self.corr, "name": name, "start_ns": 0, "end_ns": held_ns, "held_ns": held_ns}
                self.lists.setdefault(tid, []).append(call)
                self.calls[self.corr] = call
                return True
        return False

    def take(self):
        with self.lock:
            return self.lists.pop(threading.get_ident(), [])

    def begin(self):
        self.open.append(len(self.open))
        return self.open[-1]

    def end(self, since):
        self.open.remove(since)

    def report(self, since, asked):
        self.asked.extend(asked)
        found, missing = [], []
        for a in asked:
            call = self.calls[a["corr"]]
            name = call["name"]
            if name.startswith("lost"):
                missing.append(a["corr"])
                continue
            user = next(f for f in a["python"] if "site-packages" not in f["file"])
            words = f"{os.path.basename(user['file'])}:{user['line']} {user['function']}"
            found.append(
                {
                    "corr": a["corr"],
                    "name": name,
                    "held_ns": call["held_ns"],
                    "class": "blocking",
                    "what_held_it": "its own transfer, staged by the driver on the calling thread: the 32MiB host → device copy (pageable → device)",
                    "location": {"kind": "python", "words": words},
                    "segments": [{"cause": "own"}],
                    "evidence": {"own_work": [{"kind": "copy", "what": "the 32MiB host → device copy (pageable → device)"}], "module_loads": 0},
                }
            )
        return found, missing


def install(tmp, fake):
    """Writes ``framework.py`` under ``tmp/site-packages`` and returns it imported, wired to ``fake``."""
    import importlib.util

    folder = os.path.join(str(tmp), "site-packages")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "framework.py")
    with open(path, "w") as f:
        f.write(FRAMEWORK)
    spec = importlib.util.spec_from_file_location("framework", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.BACKEND = fake
    return module
