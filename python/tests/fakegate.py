"""A stand-in for the injection library's gate (``async_lab._native.Native``), for the tests without a GPU: a
"CUDA call" made through ``framework.py`` (written under a ``site-packages`` folder, as an installed
framework's file) is listed on its thread where it held past that thread's limit, as the library's callback
lists it, and a report answers as the library does: the JSON report's fields and the core's words of each call
(``message``; the words here are the stand-in's, shaped like the core's), a call named ``lost...`` missing from
the trace, one named ``load...`` paid once (warm-up) unless warm-up is asked for."""

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
            reason = "taken" if "taken" in self.unavailable else "missing"
            raise GateUnavailable(self.unavailable, reason=reason)

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

    def report(self, since, asked, warm_up=False):
        self.asked.extend(asked)
        held, paid_once, missing = [], [], []
        for a in asked:
            call = self.calls[a["corr"]]
            name = call["name"]
            user = next(f for f in a["python"] if "site-packages" not in f["file"])
            words = f"{os.path.basename(user['file'])}:{user['line']} {user['function']}"
            first = f"{words}: {name} held this thread {call['held_ns'] / 1e6:.1f} ms (over {a['over_ns'] / 1e6:.1f} ms)"
            if name.startswith("lost"):
                missing.append({"corr": a["corr"], "message": f"{first}, class unknown"})
                continue
            once = name.startswith("load")
            entry = {
                "corr": a["corr"],
                "name": name,
                "held_ns": call["held_ns"],
                "class": "driver-work" if once else "blocking",
                "kind": "loading-code" if once else "pageable-copy",
                "once": "loading-code" if once else None,
                "warm_up": once,
                "location": {"kind": "python", "words": words},
                "message": f"{first}, class {'driver-work' if once else 'blocking'}\n  what held it: the stand-in's words"
                "\n  remedy: the stand-in's remedy",
            }
            (paid_once if once and not warm_up else held).append(entry)
        return {"held_calls": held, "paid_once": paid_once, "missing": missing}


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
