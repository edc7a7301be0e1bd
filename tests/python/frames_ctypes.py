"""The injection library's Python frame reader, called the way a framework's CUDA call reaches it: through a
foreign call that released the GIL (ctypes.CDLL releases it around every call, as PyTorch, JAX and CuPy do
around theirs). The frames it returns are compared with what Python says of itself: each frame's file,
function and line, from inside nested functions, a method, a generator, a call made from C (`map`), another
module, another thread, a deep recursion and names that are not ASCII; then what a location holds
(frames_threads.py): the calling thread's frames to its own frame under a deep library, and every Python
thread's, read from a thread that runs no Python. Exits non-zero, naming what differs, if any frame is wrong.

    python3 frames_ctypes.py LIBRARY              the checks
    python3 frames_ctypes.py LIBRARY --cost[=N]   also the reader's cost in this process (N rounds, 2000 by
                                                  default): medians and largest, in ns, as JSON
"""

import ctypes
import json
import os
import platform
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frames_ctypes_other as other  # noqa: E402
import frames_threads  # noqa: E402

HERE = os.path.abspath(__file__)
OTHER = os.path.abspath(other.__file__)


def marks(path):
    """The line of each `# here:NAME` mark in a file."""
    found = {}
    with open(path) as f:
        for number, text in enumerate(f, 1):
            if "# here:" in text:
                found[text.split("# here:")[1].strip()] = number
    return found


LINE = marks(HERE)
LINE.update(marks(OTHER))


def read(lib):
    buf = ctypes.create_string_buffer(1 << 20)
    n = lib.async_lab_python_frames(buf, ctypes.c_size_t(len(buf)))  # here:read
    if n <= 0:
        raise AssertionError(f"async_lab_python_frames returned {n}")
    return json.loads(buf.raw[:n])


def innermost(lib):
    return read(lib)  # here:innermost


def numbers():
    yield innermost(LIB)  # here:numbers


class Model:
    def forward(self, lib):
        return list(map(lambda _: next(numbers()), [0]))[0]  # here:forward


def outer(lib):
    return other.call_through(Model().forward, lib)  # here:outer


def deep(n, lib):
    if n == 0:
        return read(lib)  # here:deep_read
    return deep(n - 1, lib)  # here:deep


def in_thread(lib, out):
    out.append(innermost(lib))  # here:in_thread


def frames_of(got):
    return [(os.path.abspath(f["file"]), f["function"], f["line"]) for f in got["python"]]


def expect(got, expected, what):
    have = frames_of(got)
    if have[: len(expected)] != expected:
        lines = "\n".join(f"  {h}" for h in have)
        want = "\n".join(f"  {e}" for e in expected)
        raise AssertionError(f"{what}: frames differ\nread:\n{lines}\nexpected first:\n{want}")


def nested_frames(read_line):
    return [
        (HERE, "read", read_line),
        (HERE, "innermost", LINE["innermost"]),
        (HERE, "numbers", LINE["numbers"]),
        (HERE, "<lambda>", LINE["forward"]),
        (HERE, "forward", LINE["forward"]),
        (OTHER, "call_through", LINE["call_through"]),
        (HERE, "outer", LINE["outer"]),
        (HERE, "main", LINE["main"]),
    ]


def main(path, cost):
    global LIB
    checks = 0
    released = ctypes.CDLL(path)
    held = ctypes.PyDLL(path)
    for lib in (released, held):
        lib.async_lab_python_frames.restype = ctypes.c_ssize_t
    for lib, gil in [(released, "not-held"), (held, "held")]:
        LIB = lib
        got = outer(lib)  # here:main
        setup = got["setup"]
        if setup is None or setup["version"] != platform.python_version():
            raise AssertionError(f"the setup names another interpreter: {setup}")
        if setup["reader"] not in ("layout", "debug-offsets"):
            raise AssertionError(f"no reader for Python {platform.python_version()}: {setup}")
        if got["gil"] != gil:
            raise AssertionError(f"gil: read {got['gil']}, the call was made with it {gil}")
        expect(got, nested_frames(LINE["read"]), f"nested calls, gil {gil}")
        checks += 2

    LIB = released
    out = []
    t = threading.Thread(target=in_thread, args=(released, out), name="reader-thread")
    t.start()
    t.join()
    thread = [(HERE, "read", LINE["read"]), (HERE, "innermost", LINE["innermost"]), (HERE, "in_thread", LINE["in_thread"])]
    expect(out[0], thread, "another thread")
    if any(f[1] == "main" for f in frames_of(out[0])):
        raise AssertionError("another thread's frames include the main thread's")
    checks += 1

    got = deep(200, released)
    have = frames_of(got)
    want = [(HERE, "read", LINE["read"]), (HERE, "deep", LINE["deep_read"])]
    want += [(HERE, "deep", LINE["deep"])] * (len(have) - 2)
    if len(have) < 60 or have != want:
        raise AssertionError(f"deep recursion: {len(have)} frames read, first {have[:4]}")
    checks += 1

    # Names that are not ASCII: a file name of 2-byte characters, a function name of Latin-1 ones, each as
    # CPython keeps them (its compact strings of each width).
    source = "def gr\u00fc\u00dfe(read, lib):\n    return read(lib)\n"
    scope = {}
    exec(compile(source, "donn\u00e9es/\u30d5\u30a1\u30a4\u30eb.py", "exec"), scope)
    got = scope["gr\u00fc\u00dfe"](read, released)
    want = [(HERE, "read", LINE["read"]), (os.path.abspath("donn\u00e9es/\u30d5\u30a1\u30a4\u30eb.py"), "gr\u00fc\u00dfe", 2)]
    expect(got, want, "names that are not ASCII")
    checks += 1

    if got["setup"].get("note"):
        raise AssertionError(f"the setup says something is not read: {got['setup']}")
    passed, costs = frames_threads.checks(released, cost)
    checks += passed
    result = {"python": platform.python_version(), "reader": got["setup"]["reader"], "checks": checks}
    result.update({f"cost_{k}": v for k, v in costs.items()})
    print(json.dumps(result))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rounds = [int(a.partition("=")[2] or 2000) for a in sys.argv[2:] if a.startswith("--cost")]
    main(sys.argv[1], rounds[0] if rounds else 0)
