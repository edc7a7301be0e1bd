"""The installed package: its files, the environment its binary starts in, and the injection library loaded
into this process where there is no CUPTI."""

import os
import subprocess
import sys

import pytest

import async_lab
from async_lab import _binary, _native

from conftest import INSTALLED, needs_installed_package


def test_the_tests_run_on_the_installed_copy_where_they_should():
    if INSTALLED:
        assert "site-packages" in async_lab.__file__, async_lab.__file__
        assert async_lab.__version__ != "0+unknown"


def test_the_binary_the_injection_library_and_the_ptx_are_in_the_package():
    needs_installed_package()
    assert os.access(_binary.INJECTION_LIBRARY, os.R_OK)
    assert open(_binary.PTX).read().lstrip().startswith("//")
    assert os.path.exists(os.path.join(_binary.NO_DRIVER, "libcuda.so.1"))


def test_the_binary_starts_where_the_loader_finds_the_driver_or_on_the_stand_in():
    env = _binary.environment({"LD_LIBRARY_PATH": "/x"}, finds_driver=lambda: True)
    assert env["LD_LIBRARY_PATH"] == "/x" and _binary.STAND_IN_VAR not in env
    assert env["ASYNC_LAB_KERNELS_PTX"] == _binary.PTX
    env = _binary.environment({}, finds_driver=lambda: False, folders=["/a", "/b"], exists=lambda p: p == "/b/libcuda.so.1")
    assert env["LD_LIBRARY_PATH"] == "/b" and _binary.STAND_IN_VAR not in env
    env = _binary.environment({"LD_LIBRARY_PATH": "/x"}, finds_driver=lambda: False, folders=[])
    assert env["LD_LIBRARY_PATH"] == _binary.NO_DRIVER + ":/x"
    assert env[_binary.STAND_IN_VAR] == _binary.NO_DRIVER


def test_python_m_async_lab_is_the_binary_with_the_same_arguments():
    needs_installed_package()
    out = subprocess.run([sys.executable, "-m", "async_lab", "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"async-lab {async_lab.__version__}"
    # Nothing but the version: the stand-in, where it is started on one, is said only where a command needs the GPU.
    assert out.stderr == "", out.stderr
    bad = subprocess.run([sys.executable, "-m", "async_lab", "no-such-command"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "no-such-command" in bad.stderr


def test_a_bare_async_lab_without_a_gpu_shows_what_the_h200_recorded():
    needs_installed_package()
    # On the stand-in, as the package starts it where there is no driver (first on the loader's path, whatever
    # this machine has).
    env = dict(os.environ, LD_LIBRARY_PATH=_binary.NO_DRIVER, ASYNC_LAB_KERNELS_PTX=_binary.PTX)
    env[_binary.STAND_IN_VAR] = _binary.NO_DRIVER
    out = subprocess.run([_binary.BINARY], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    [line] = out.stderr.splitlines()
    assert "no NVIDIA driver here" in line and "NVIDIA H200" in line and "cargo xtask" not in line, line
    assert "The seed program" in out.stdout

def test_cupti_is_the_file_the_loader_finds_by_the_bindings_names_else_one_looked_for(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text(
        "7f0000-7f1000 r-xp 00000000 08:01 1234 /venv/site-packages/nvidia/cu13/lib/libcupti.so.13\n"
        "7f2000-7f3000 r-xp 00000000 00:00 0\n"
    )
    none = lambda: None  # noqa: E731
    # What the loader finds by name comes first: the binding will open that one.
    assert _native.find_cupti(env={}, maps=str(maps), folders=[], by_name=lambda: "/cuda/lib64/libcupti.so.13.0") == "/cuda/lib64/libcupti.so.13.0"
    assert _native.find_cupti(env={}, maps=str(maps), folders=[], by_name=none) == "/venv/site-packages/nvidia/cu13/lib/libcupti.so.13"
    wheel = tmp_path / "site" / "nvidia" / "cuda_cupti" / "lib"
    wheel.mkdir(parents=True)
    (wheel / "libcupti.so.13").write_text("")
    empty = tmp_path / "empty-maps"
    empty.write_text("")
    found = _native.find_cupti(env={}, maps=str(empty), folders=[str(tmp_path / "site")], by_name=none)
    assert found == str(wheel / "libcupti.so.13")
    assert _native.find_cupti(env={"ASYNC_LAB_CUPTI": str(wheel)}, maps=str(maps), folders=[], by_name=none) == found
    with pytest.raises(async_lab.GateUnavailable, match="no libcupti"):
        _native.find_cupti(env={"ASYNC_LAB_CUPTI": str(tmp_path / "nothing")}, maps=str(empty), folders=[], by_name=none)


def test_the_loader_finds_no_cupti_by_name_here_or_names_a_file():
    found = _native.loader_cupti()
    assert found is None or os.path.basename(found).startswith("libcupti.so")


def test_without_cupti_the_gate_says_why_on_entering():
    needs_installed_package()
    if _native.find_cupti() is not None:
        pytest.skip("this machine has a CUPTI: the gate would attach")
    # In a process of its own: the injection library stays loaded in the process that loads it.
    code = (
        "import async_lab\n"
        "try:\n"
        "    with async_lab.no_blocking():\n"
        "        pass\n"
        "except async_lab.GateUnavailable as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "async-lab cannot gate this process: CUPTI could not be loaded" in out.stdout, out.stdout
