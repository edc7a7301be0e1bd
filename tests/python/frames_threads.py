"""What a location holds of Python frames, checked in a real interpreter (frames_ctypes.py runs these): the
calling thread's frames stop at the program's own frame, past 60 frames of a library (a module under a
`site-packages` folder, as an installed framework is); and a thread that runs no Python (one the library
starts, as XLA's and PyTorch's autograd threads are) reads every Python thread: each one's id, whether it held
the GIL, and its frames to its own frame, compared with what Python says of each thread
(`sys._current_frames`) while it stands still, and read over and over while a thread's stack changes under
the reader (each frame read must be one the thread can be at: no frame read half-changed). With `--cost`, the
median and largest time of a read, in a deep stack and with several threads.
"""

import ctypes
import json
import os
import re
import sys
import tempfile
import threading
import traceback

HERE = os.path.abspath(__file__)
DEPTH = 60


def marks(path):
    """The line of each `# here:NAME` mark in a file."""
    found = {}
    with open(path) as f:
        for number, text in enumerate(f, 1):
            if "# here:" in text:
                found[text.split("# here:")[1].strip()] = number
    return found


LINE = marks(HERE)


def library(path):
    """The analysis's rule (trace-analysis/src/library_paths.rs): installed packages and the interpreter's library."""
    return (
        "site-packages/" in path
        or "dist-packages/" in path
        or path.startswith("<")
        or re.search(r"(^|/)lib(64)?/python\d", path) is not None
    )


def to_user(frames):
    """Innermost-first (file, function, line) frames, cut after the program's own frame."""
    for i, f in enumerate(frames):
        if not library(f[0]):
            return frames[: i + 1]
    return frames


def make_library():
    """A module of DEPTH nested functions under a `site-packages` folder, and `bounce`, a recursion whose depth
    changes all the time; the line of each function's call."""
    folder = os.path.join(tempfile.mkdtemp(prefix="async-lab-frames-"), "site-packages")
    os.makedirs(folder)
    lines = ["def level_0(fn, *args):", "    return fn(*args)"]
    for i in range(1, DEPTH):
        lines += [f"def level_{i}(fn, *args):", f"    return level_{i - 1}(fn, *args)"]
    bounce = len(lines) + 1
    lines += ["def bounce(n):", "    if n:", "        return bounce(n - 1)", "    return n"]
    path = os.path.join(folder, "deeplib.py")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    sys.path.insert(0, folder)
    import deeplib

    return deeplib, os.path.realpath(path), bounce


def call(lib, name):
    fn = getattr(lib, name)
    fn.restype = ctypes.c_ssize_t
    buf = ctypes.create_string_buffer(1 << 20)
    return fn, buf


def as_frames(got):
    return [(os.path.realpath(f["file"]) if not f["file"].startswith("<") else f["file"], f["function"], f["line"]) for f in got]


def python_says(thread_id):
    """The thread's frames as Python says, innermost first, to its own frame."""
    frame = sys._current_frames()[thread_id]
    stack = traceback.extract_stack(frame)[::-1]
    return to_user([(os.path.realpath(s.filename) if not s.filename.startswith("<") else s.filename, s.name, s.lineno) for s in stack])


def location(lib):
    fn, buf = call(lib, "async_lab_python_location")
    n = DEEP.level_59(fn, buf, ctypes.c_size_t(len(buf)))  # here:location
    if n <= 0:
        raise AssertionError(f"async_lab_python_location returned {n}")
    return json.loads(buf.raw[:n])


def read_others(lib):
    """The location line of a thread that runs no Python: its `others`, and no frames of its own."""
    fn, buf = call(lib, "async_lab_python_others")
    n = fn(buf, ctypes.c_size_t(len(buf)))  # here:read_others
    if n <= 0:
        raise AssertionError(f"async_lab_python_others returned {n}")
    line = json.loads(buf.raw[:n])
    if line is None or line.get("python") or line["gil"] != "not-held" or not line.get("others"):
        raise AssertionError(f"a thread without Python located as: {line}")
    return line


def waiter(ev, ids):
    ids["waiter"] = threading.get_native_id()
    DEEP.level_59(ev.wait)  # here:waiter


def idle(ev, ids, name):
    ids[name] = threading.get_native_id()
    ev.wait()  # here:idle


def spinner(done, ids):
    ids["spinner"] = threading.get_native_id()
    n = 0
    while not done[0]: n += 1  # here:spinner


def churner(done, ids):
    ids["churner"] = threading.get_native_id()
    while not done[0]:  # here:churner_loop
        DEEP.bounce(30)  # here:churner_call


def start(target, *args):
    t = threading.Thread(target=target, args=args, daemon=True)
    t.start()
    return t


def by_tid(got):
    return {o["tid"]: o for o in got["others"]}


def expect(have, want, what):
    if have != want:
        lines = "\n".join(f"  {h}" for h in have)
        wants = "\n".join(f"  {w}" for w in want)
        raise AssertionError(f"{what}: frames differ\nread:\n{lines}\nexpected:\n{wants}")


def wait_for(ids, *names):
    while any(n not in ids for n in names):
        threading.Event().wait(0.001)


def checks(lib, cost):
    """The checks; with `cost` (a number of rounds), the costs too. Returns (checks passed, costs)."""
    global DEEP
    DEEP, deep_path, bounce = make_library()
    done = 0

    # The calling thread: 60 library frames and the program's own frame, nothing outside it.
    got = location(lib)
    want = [(deep_path, f"level_{i}", 2 * i + 2) for i in range(DEPTH)] + [(HERE, "location", LINE["location"])]
    expect(as_frames(got["python"]), want, "a location's frames")
    if got["gil"] != "not-held" or got.get("others"):
        raise AssertionError(f"a location with frames of its own: {dict(got, python='...')}")
    done += 1

    # Other threads, standing still: a waiter under the library, a spinner holding the GIL, this thread in
    # the call, two idle threads.
    ids, ev, stop = {}, threading.Event(), [False]
    threads = [start(waiter, ev, ids), start(spinner, stop, ids)]
    threads += [start(idle, ev, ids, "idle_a"), start(idle, ev, ids, "idle_b")]
    wait_for(ids, "waiter", "spinner", "idle_a", "idle_b")
    threading.Event().wait(0.05)
    got = read_others(lib)
    seen = by_tid(got)
    me = threading.get_native_id()
    if got["tid"] in seen:
        raise AssertionError("the reading thread runs no Python but is among the threads read")
    for name in ("waiter", "idle_a", "idle_b"):
        if ids[name] not in seen:
            raise AssertionError(f"thread {name} ({ids[name]}) not read: {got}")
    if me not in seen:
        raise AssertionError(f"the calling thread ({me}) not read: {got}")
    expect(as_frames(seen[me]["python"]), [(HERE, "read_others", LINE["read_others"])], "the calling thread, waiting")
    by_ident = {t.native_id: t.ident for t in threads}
    for name in ("waiter", "idle_a", "idle_b"):
        expect(as_frames(seen[ids[name]]["python"]), python_says(by_ident[ids[name]]), f"thread {name}")
    if len(seen[ids["waiter"]]["python"]) < DEPTH + 1:
        raise AssertionError(f"the waiter's frames stop short: {seen[ids['waiter']]}")
    # The spinner takes the GIL once this thread lets it go in the call, as soon as the system runs it: read
    # until it is seen holding it. No other thread ever is.
    for _ in range(200):
        spin = seen.get(ids["spinner"])
        if spin is None or as_frames(spin["python"]) != [(HERE, "spinner", LINE["spinner"])]:
            raise AssertionError(f"the spinner read wrong: {spin}")
        gils = {name: seen[ids[name]]["gil"] for name in ("waiter", "idle_a", "idle_b")}
        gils["caller"] = seen[me]["gil"]
        if any(gils.values()):
            raise AssertionError(f"a thread read as holding the GIL that waits: {gils}")
        if spin["gil"]:
            break
        seen = by_tid(read_others(lib))
    else:
        raise AssertionError("the spinner, the one thread running Python, never read as holding the GIL")
    done += 3

    # A thread whose stack changes all the time: every frame read of it is one it can be at.
    stop[0] = True
    threads[1].join()
    stop = [False]
    threads.append(start(churner, stop, ids))
    wait_for(ids, "churner")
    valid = {(deep_path, "bounce", bounce + k) for k in range(4)}
    valid |= {(HERE, "churner", LINE["churner_loop"]), (HERE, "churner", LINE["churner_call"])}
    reads, deepest = 0, 0
    for _ in range(300):
        seen = by_tid(read_others(lib))
        waiting = seen.get(ids["waiter"])
        if waiting is None or len(waiting["python"]) != len(python_says(by_ident[ids["waiter"]])):
            raise AssertionError(f"the waiter read wrong while another thread ran: {waiting}")
        c = seen.get(ids["churner"])
        if c is None:
            continue
        frames = as_frames(c["python"])
        wrong = [f for f in frames if f not in valid]
        if wrong or frames[-1][1] != "churner" or len(frames) > 32:
            raise AssertionError(f"the changing thread read as frames it cannot be at: {wrong or frames}")
        if sum(1 for o in seen.values() if o["gil"]) > 1:
            raise AssertionError(f"more than one thread read as holding the GIL: {seen}")
        reads += 1
        deepest = max(deepest, len(frames))
    # 3.10's frames are objects read one by one, so a running thread's chain often changes between two reads:
    # such a read is dropped, never kept half-changed. Later versions' frames are copied at once.
    least = 60 if sys.version_info < (3, 11) else 250
    if reads < least or deepest < 3:
        raise AssertionError(f"the changing thread was read {reads} times, {deepest} frames at most")
    stop[0] = True
    done += 1

    costs = {}
    if cost:
        threads[-1].join()
        fn, buf = call(lib, "async_lab_python_read_cost")
        n = DEEP.level_59(fn, ctypes.c_uint32(cost), buf, ctypes.c_size_t(len(buf)))
        if n <= 0:
            raise AssertionError(f"async_lab_python_read_cost returned {n}")
        costs["deep"] = json.loads(buf.raw[:n])
        n = fn(ctypes.c_uint32(cost), buf, ctypes.c_size_t(len(buf)))
        costs["shallow"] = json.loads(buf.raw[:n])
    ev.set()
    return done, costs
