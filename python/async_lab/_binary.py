"""Where the package's files are (the ``async-lab`` binary, the injection library, the kernels' PTX, the
stand-in driver library), and the environment the binary starts in: the NVIDIA driver's library where the
loader will not find it on its own, else the stand-in, so that what needs no GPU (``--version``,
``trace --replay``, ``report``) works on any machine, as the bundle's ``run.sh`` does."""

import ctypes
import os
import sys

#: The folder of the package's binaries.
BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin")
#: The ``async-lab`` binary; the injection library beside it is where ``async-lab trace`` looks first.
BINARY = os.path.join(BIN, "async-lab")
INJECTION_LIBRARY = os.path.join(BIN, "libasync_lab_inject.so")
PTX = os.path.join(BIN, "async_lab_kernels.ptx")
#: A ``libcuda.so.1`` whose every function answers "stub library": the binary links the driver's library and
#: could not start without one.
NO_DRIVER = os.path.join(BIN, "no-driver")

#: Folders that container images and distributions keep the driver's library in, outside the loader's
#: cache and ``LD_LIBRARY_PATH``.
DRIVER_FOLDERS = (
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib/wsl/lib",
    "/usr/local/cuda/compat",
)


def loader_finds_driver():
    """Whether the dynamic loader finds ``libcuda.so.1`` as the binary will look for it."""
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def environment(env, finds_driver=loader_finds_driver, folders=DRIVER_FOLDERS, exists=os.path.exists):
    """The environment to start the binary in, from ``env``; and a note for stderr, or None.

    Where the loader finds the driver, ``env`` as it is; else the first of ``folders`` that holds
    ``libcuda.so.1`` first on ``LD_LIBRARY_PATH``; else the stand-in's folder, with a note saying so.
    """
    env = dict(env)
    env.setdefault("ASYNC_LAB_KERNELS_PTX", PTX)
    if finds_driver():
        return env, None
    old = env.get("LD_LIBRARY_PATH", "")
    for folder in folders:
        if exists(os.path.join(folder, "libcuda.so.1")):
            env["LD_LIBRARY_PATH"] = folder + (":" + old if old else "")
            return env, None
    env["LD_LIBRARY_PATH"] = NO_DRIVER + (":" + old if old else "")
    note = (
        "async-lab: no NVIDIA driver library (libcuda.so.1) in the loader's paths or the usual folders: "
        "starting on the package's stand-in (commands that need no GPU work; if this machine has a driver, "
        "add its folder to LD_LIBRARY_PATH)"
    )
    return env, note


def exec_binary(args):
    """Replaces this process with ``async-lab ARGS`` (it never returns)."""
    if not os.access(BINARY, os.X_OK):
        sys.stderr.write(f"async-lab: the package's binary is missing or not executable: {BINARY}\n")
        sys.exit(2)
    env, note = environment(os.environ)
    if note:
        sys.stderr.write(note + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(BINARY, [BINARY, *args], env)
