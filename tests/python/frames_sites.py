"""A program held at several places in turn, as a training loop is (a copy under one library chain, a
`.item()` right at the program's line, a backward pass a few frames down, a jit dispatch a few dozen down):
the injection library's reader reads the calling thread's frames to the program's own frame at each place,
round after round, the way a location reads them (a foreign call that released the GIL, as ctypes.CDLL makes
it). Every read is compared with the frames the place has; with `--cost[=N]` each read is timed too (N
rounds, 2000 by default) and the medians printed, with the system calls a read made.

    python3 frames_sites.py LIBRARY [--cost[=N]]

Prints one JSON line: {"python", "sites": [{depth, median_ns, max_ns, calls_median, calls_max}], "median_ns",
"calls_median", "reads", "in_place"} (in_place: whether the thread's own frames were read where they lie). Exits non-zero, naming the read, if any frame read is wrong.
"""

import ctypes
import json
import os
import platform
import sys
import tempfile

HERE = os.path.abspath(__file__)
# The library frames between each place's call and the program's line.
DEPTHS = (0, 3, 8, 20, 40)


def make_library():
    """A module under a `site-packages` folder with one chain of distinct functions per place (`s<k>_<i>`, the
    innermost `s<k>_0` making the foreign call), and `churn`, which runs other frames where the places' were."""
    folder = os.path.join(tempfile.mkdtemp(prefix="async-lab-sites-"), "site-packages")
    os.makedirs(folder)
    lines, at = [], {}
    for k, depth in enumerate(DEPTHS):
        for i in range(depth):
            at[(k, i)] = len(lines) + 2
            inner = f"s{k}_{i - 1}(fn, *args)" if i else "fn(*args)"
            lines += [f"def s{k}_{i}(fn, *args):", f"    return {inner}"]
    lines += ["def churn(n):", "    return churn(n - 1) + 1 if n else 0"]
    path = os.path.join(folder, "siteslib.py")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    sys.path.insert(0, folder)
    import siteslib

    return siteslib, os.path.realpath(path), at


def place(lib, k, fn, buf):
    """Place `k`: its library chain, then the read; the program's line is this one."""
    if DEPTHS[k] == 0:
        return fn(buf, ctypes.c_size_t(len(buf)))  # here:place
    return getattr(lib, f"s{k}_{DEPTHS[k] - 1}")(fn, buf, ctypes.c_size_t(len(buf)))  # here:place_lib


def marks():
    found = {}
    with open(HERE) as f:
        for number, text in enumerate(f, 1):
            if "# here:" in text:
                found[text.split("# here:")[1].strip()] = number
    return found


def main(library, rounds):
    marks_at = marks()
    dll = ctypes.CDLL(library)
    fn = dll.async_lab_python_read_timed
    fn.restype = ctypes.c_ssize_t
    buf = ctypes.create_string_buffer(1 << 16)
    lib, path, at = make_library()
    want = []
    for k, depth in enumerate(DEPTHS):
        frames = [(path, f"s{k}_{i}", at[(k, i)]) for i in range(depth)]
        mark = "place" if depth == 0 else "place_lib"
        want.append(frames + [(HERE, "place", marks_at[mark])])
    taken = [[] for _ in DEPTHS]
    reads = 0
    for r in range(rounds):
        for k in range(len(DEPTHS)):
            n = place(lib, k, fn, buf)
            if n <= 0:
                raise AssertionError(f"async_lab_python_read_timed returned {n}")
            got = json.loads(buf.raw[:n])
            have = [(os.path.realpath(f["file"]), f["function"], f["line"]) for f in got["python"]]
            if have != want[k]:
                raise AssertionError(f"round {r}, place {k}: read {have}, expected {want[k]}")
            reads += 1
            # The first round reads every code object for the first time: not a warm read.
            if r:
                taken[k].append((got["ns"], got["calls"]))
            in_place = got["in_place"]
            lib.churn(r % 30)
    median = lambda v: sorted(v)[len(v) // 2]
    sites = [
        {
            "depth": DEPTHS[k] + 1,
            "median_ns": median([t[0] for t in taken[k]]),
            "max_ns": max(t[0] for t in taken[k]),
            "calls_median": median([t[1] for t in taken[k]]),
            "calls_max": max(t[1] for t in taken[k]),
        }
        for k in range(len(DEPTHS))
    ]
    every = [t for ts in taken for t in ts]
    print(
        json.dumps(
            {
                "python": platform.python_version(),
                "sites": sites,
                "median_ns": median([t[0] for t in every]),
                "calls_median": median([t[1] for t in every]),
                "reads": reads,
                "in_place": in_place,
            }
        )
    )


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    costs = [int(a.partition("=")[2] or 2000) for a in sys.argv[2:] if a.startswith("--cost")]
    main(sys.argv[1], costs[0] if costs else 50)
