"""Where the package's files are (the ``async-lab`` binary, the injection library, the kernels' PTX, the
stand-in driver library), and the environment the binary starts in: the NVIDIA driver's library where the
loader will not find it on its own, else the stand-in, so that what needs no GPU (``--version``,
``trace --replay``, ``report``) works on any machine, as the bundle's ``run.sh`` does. On the stand-in, the
binary is told so (``ASYNC_LAB_STAND_IN``) and says it once, where it matters: a command that needs the GPU."""

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


#: Set where the binary starts on the stand-in: it then says, where a command needs the GPU, that the package
#: found no driver library.
STAND_IN_VAR = "ASYNC_LAB_STAND_IN"


def environment(env, finds_driver=loader_finds_driver, folders=DRIVER_FOLDERS, exists=os.path.exists):
    """The environment to start the binary in, from ``env``.

    Where the loader finds the driver, ``env`` as it is; else the first of ``folders`` that holds
    ``libcuda.so.1`` first on ``LD_LIBRARY_PATH``; else the stand-in's folder, with ``ASYNC_LAB_STAND_IN`` set.
    """
    env = dict(env)
    env.setdefault("ASYNC_LAB_KERNELS_PTX", PTX)
    if finds_driver():
        return env
    old = env.get("LD_LIBRARY_PATH", "")
    for folder in folders:
        if exists(os.path.join(folder, "libcuda.so.1")):
            env["LD_LIBRARY_PATH"] = folder + (":" + old if old else "")
            return env
    env["LD_LIBRARY_PATH"] = NO_DRIVER + (":" + old if old else "")
    env[STAND_IN_VAR] = NO_DRIVER
    return env


def exec_binary(args):
    """Replaces this process with ``async-lab ARGS`` (it never returns)."""
    if not os.access(BINARY, os.X_OK):
        sys.stderr.write(f"async-lab: the package's binary is missing or not executable: {BINARY}\n")
        sys.exit(2)
    env = environment(os.environ)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(BINARY, [BINARY, *args], env)
