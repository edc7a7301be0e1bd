"""The pytest plugin, run in a pytest of its own (``pytester``) with the stand-in gate of ``fakegate``."""

import os
import sys

import pytest

from conftest import INSTALLED

HERE = os.path.dirname(os.path.abspath(__file__))

CONFTEST = f"""
import sys
sys.path.insert(0, {HERE!r})
import pytest
from async_lab import gate
from fakegate import Fake, install

FAKE = Fake(unavailable={{unavailable!r}})
gate.set_backend(FAKE)


@pytest.fixture
def framework(tmp_path):
    return install(tmp_path, FAKE)
"""

TESTS = """
import pytest


def test_slow_copy(framework):
    x = 1
    framework.to_cuda(3_000_000)


def test_fast_copy(framework):
    framework.to_cuda(200_000)


@pytest.mark.async_lab(fail_on_held=None)
def test_off_for_this_test(framework):
    framework.to_cuda(9_000_000)


@pytest.mark.async_lab(fail_on_held="5ms")
def test_its_own_limit(framework):
    framework.to_cuda(3_000_000)


def test_failing_on_its_own(framework):
    framework.to_cuda(3_000_000)
    assert False, "its own failure"


def test_a_first_load(framework):
    framework.to_cuda(8_000_000, name="load-module")


def test_on_the_cpu():
    assert sum(range(10)) == 45
"""


def entry_point_installed():
    from importlib.metadata import entry_points

    eps = entry_points()
    group = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
    return any(ep.value == "async_lab.pytest_plugin" for ep in group)


def plugin_args():
    """The plugin by its entry point where the wheel is installed, else by name."""
    if INSTALLED:
        assert entry_point_installed(), "the installed wheel has no pytest11 entry point for async_lab"
    return [] if entry_point_installed() else ["-p", "async_lab.pytest_plugin"]


def run(pytester, *args, unavailable=None):
    pytester.makeconftest(CONFTEST.format(unavailable=unavailable))
    pytester.makepyfile(test_transfers=TESTS)
    return pytester.runpytest_subprocess(*plugin_args(), "-p", "no:cacheprovider", *args)


def test_help_lists_the_option(pytester):
    result = pytester.runpytest_subprocess(*plugin_args(), "--help")
    result.stdout.fnmatch_lines(["*--async-lab-fail-on-held=DURATION*"])


def test_a_test_whose_call_held_past_the_limit_fails_naming_line_class_cause_and_remedy(pytester):
    result = run(pytester, "--async-lab-fail-on-held=1ms", "-rA")
    # The first load is paid once (warm-up): it fails nothing unless asked.
    result.assert_outcomes(passed=5, failed=2)
    out = result.stdout.str()
    failed = [line for line in result.stdout.lines if line.startswith("FAILED")]
    assert any("test_slow_copy" in line for line in failed) and any("test_failing_on_its_own" in line for line in failed)
    # The line is the test's own: its framework.to_cuda(3_000_000).
    line = TESTS.strip().splitlines().index("    framework.to_cuda(3_000_000)") + 1
    assert f"test_transfers.py:{line} test_slow_copy: cudaMemcpyAsync held this thread 3.0 ms (over 1.0 ms), class blocking" in out
    # The words are the library's, as they came.
    assert "what held it: the stand-in's words" in out and "remedy: the stand-in's remedy" in out
    assert "held this test's thread past its limit" in out
    # A test that failed on its own keeps its failure; the held call is beside it.
    assert "its own failure" in out and "async-lab" in out


def test_without_the_option_only_marked_tests_are_gated(pytester):
    result = run(pytester)
    # Only test_failing_on_its_own fails (its assert); the marker's 5 ms lets 3 ms pass.
    result.assert_outcomes(passed=6, failed=1)


def test_warm_up_fails_a_test_only_where_asked(pytester):
    result = run(pytester, "--async-lab-fail-on-held=1ms", "--async-lab-fail-on-warm-up", "-rA")
    result.assert_outcomes(passed=4, failed=3)
    failed = [line for line in result.stdout.lines if line.startswith("FAILED")]
    assert any("test_a_first_load" in line for line in failed)


def test_a_bad_duration_is_a_usage_error(pytester):
    result = run(pytester, "--async-lab-fail-on-held=soon")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--async-lab-fail-on-held*'soon' is not a duration*"])


def test_without_cupti_every_test_runs_ungated_with_one_warning_saying_how_to_get_it(pytester):
    why = "async-lab cannot gate this process: CUPTI could not be loaded: no libcupti.so"
    result = run(pytester, "--async-lab-fail-on-held=1ms", "-W", "default", unavailable=why)
    # Nothing is gated: only the test that fails on its own fails; the CPU-only test passes.
    result.assert_outcomes(passed=6, failed=1, warnings=1)
    out = result.stdout.str()
    assert out.count("the gate is off") == 1, out
    assert "CUPTI could not be loaded" in out and "pip install async-lab[cupti]" in out and "ASYNC_LAB_CUPTI" in out
    assert "Traceback" not in out and "during handling" not in out.lower(), out


def test_cupti_taken_turns_the_gate_off_with_one_warning_saying_why(pytester):
    result = run(pytester, "--async-lab-fail-on-held=1ms", unavailable="async-lab cannot gate this process: CUPTI is taken: nsys")
    result.assert_outcomes(passed=6, failed=1, warnings=1)
    out = result.stdout.str()
    assert "CUPTI is taken: nsys" in out and "pip install" not in out, out
