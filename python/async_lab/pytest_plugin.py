"""The pytest plugin (the wheel's ``pytest11`` entry point ``async_lab``).

``pytest --async-lab-fail-on-held=1ms`` fails each test in which a CUDA call made by the test's thread held it
longer than 1 ms; ``@pytest.mark.async_lab(fail_on_held="1ms")`` sets the limit for one test
(``fail_on_held=None``: none for it). The failure gives each such call in the analysis's words: its line, how
long it held, its class, what held it and the remedy in the program's framework.

What is gated is the test's own call (its body), not its fixtures' setup and teardown, which build models and
warm up (and allocate, and load modules) on purpose; and in the body, not what the program pays once (a first
use: the context, a kernel's or a library's first load, the caching allocator's growth, a model's upload),
unless ``--async-lab-fail-on-warm-up`` or the marker's ``fail_on_warm_up=True``. The process subscribes to CUPTI
at the first gated test's setup. Where it cannot (no CUPTI, no GPU, or another tool holds CUPTI), the gate is
off: every test runs ungated, and one warning says why and how to get CUPTI."""

import warnings

import pytest

from . import duration
from .gate import backend, watch
from .held import GateUnavailable

OPTION = "--async-lab-fail-on-held"
WARM_UP_OPTION = "--async-lab-fail-on-warm-up"
MARKER = "async_lab"

#: Why the gate is off in this process, once known (None: not known to be off).
_off = None


class GateOffWarning(pytest.PytestWarning):
    """The gate could not start: the tests ran ungated."""


def pytest_addoption(parser):
    group = parser.getgroup("async-lab", "async-lab: CUDA calls that hold the test's thread")
    group.addoption(
        OPTION,
        metavar="DURATION",
        default=None,
        help="fail each test in which a CUDA call made by the test's thread held it longer than DURATION "
        "(20us, 1ms, 0.5s), naming the line, the call, its class, what held it and the remedy",
    )
    group.addoption(
        WARM_UP_OPTION,
        action="store_true",
        default=False,
        help="with --async-lab-fail-on-held: gate also what the program pays once (the context, a kernel's or a "
        "library's first load, the caching allocator's growth, a model's upload)",
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        f"{MARKER}(fail_on_held='1ms', fail_on_warm_up=False): fail the test if a CUDA call made by its thread held "
        "it longer than that (None: no limit for this test, whatever the command line says)",
    )
    value = config.getoption(OPTION)
    if value is not None:
        try:
            duration.parse(value)
        except ValueError as e:
            raise pytest.UsageError(f"{OPTION}: {e}") from None


def limit_of(item):
    """The test's limit in ns, or None: its marker's ``fail_on_held`` where it has one, else the option's."""
    marker = item.get_closest_marker(MARKER)
    if marker is not None and "fail_on_held" in marker.kwargs:
        value = marker.kwargs["fail_on_held"]
        if value is None:
            return None
        try:
            return duration.parse(value)
        except ValueError as e:
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{MARKER}(fail_on_held=...): {e}") from None
    value = item.config.getoption(OPTION)
    return None if value is None else duration.parse(value)


def warm_up_of(item):
    """Whether the test gates warm-up too: its marker's ``fail_on_warm_up`` where it has one, else the option."""
    marker = item.get_closest_marker(MARKER)
    if marker is not None and "fail_on_warm_up" in marker.kwargs:
        return bool(marker.kwargs["fail_on_warm_up"])
    return bool(item.config.getoption(WARM_UP_OPTION))


def failure(held):
    """The failure's words for the held calls of one test: the analysis's words of each."""
    n = len(held)
    head = f"async-lab: {n} CUDA call{'s' if n != 1 else ''} held this test's thread past its limit:"
    return "\n".join([head] + [h["message"] for h in held])


def _gate_off(e):
    """Turns the gate off for the rest of the run, with one warning saying why (and how to get CUPTI where it is
    missing)."""
    global _off
    _off = str(e)
    from ._native import HOW_TO_GET_CUPTI

    how = ""
    if getattr(e, "reason", None) == "missing" and HOW_TO_GET_CUPTI not in str(e):
        how = f" To gate them: {HOW_TO_GET_CUPTI}."
    message = f"async-lab: the gate is off, CUDA calls are not gated: {e}.{how}"
    warnings.warn(GateOffWarning(message), stacklevel=1)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # Before the fixtures: CUPTI's first use of a kind of call costs milliseconds, which warm-ups in fixtures
    # then pay outside the gate.
    if _off is not None or limit_of(item) is None:
        return
    try:
        backend().attach()
    except GateUnavailable as e:
        _gate_off(e)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    limit = limit_of(item)
    if limit is None or _off is not None:
        yield
        return
    block = watch(over=f"{limit}ns", warm_up=warm_up_of(item))
    block.__enter__()
    try:
        outcome = yield
    finally:
        block.__exit__(None, None, None)
    if not block.held:
        return
    text = failure(block.held)
    if outcome.excinfo is not None:
        # The test failed on its own: the held calls go beside its failure.
        item.add_report_section("call", "async-lab", text)
        return
    exc = pytest.fail.Exception(text, pytrace=False)
    if hasattr(outcome, "force_exception"):
        outcome.force_exception(exc)
    else:
        raise exc
