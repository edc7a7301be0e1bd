"""The pytest plugin (the wheel's ``pytest11`` entry point ``async_lab``).

``pytest --async-lab-fail-on-held=1ms`` fails each test in which a CUDA call made by the test's thread held
it longer than 1 ms; ``@pytest.mark.async_lab(fail_on_held="1ms")`` sets the limit for one test
(``fail_on_held=None``: none for it). The failure names each such call: its line, how long it held, its
class, what held it and the remedy (``async_lab.held.message``).

What is gated is the test's own call (its body), not its fixtures' setup and teardown, which build models
and warm up (and allocate, and load modules) on purpose. The process subscribes to CUPTI at the first gated
test's setup, which errors there, naming why, where CUPTI is missing or taken."""

import pytest

from . import duration
from .gate import backend, watch
from .held import GateUnavailable, message

OPTION = "--async-lab-fail-on-held"
MARKER = "async_lab"


def pytest_addoption(parser):
    group = parser.getgroup("async-lab", "async-lab: CUDA calls that hold the test's thread")
    group.addoption(
        OPTION,
        metavar="DURATION",
        default=None,
        help="fail each test in which a CUDA call made by the test's thread held it longer than DURATION "
        "(20us, 1ms, 0.5s), naming the line, the call, its class, what held it and the remedy",
    )


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        f"{MARKER}(fail_on_held='1ms'): fail the test if a CUDA call made by its thread held it longer than "
        "that (None: no limit for this test, whatever the command line says)",
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


def failure(held, limit_ns):
    """The failure's words for the held calls of one test."""
    n = len(held)
    head = (
        f"async-lab: {n} CUDA call{'s' if n != 1 else ''} held this test's thread longer than "
        f"{duration.words(limit_ns)}:"
    )
    return "\n".join([head] + [message(h, limit_ns) for h in held])


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # Before the fixtures: CUPTI's first use of a kind of call costs milliseconds, which warm-ups in fixtures
    # then pay outside the gate.
    if limit_of(item) is None:
        return
    try:
        backend().attach()
    except GateUnavailable as e:
        pytest.fail(str(e), pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    limit = limit_of(item)
    if limit is None:
        yield
        return
    block = watch(over=f"{limit}ns")
    block.__enter__()
    try:
        outcome = yield
    finally:
        block.__exit__(None, None, None)
    if not block.held:
        return
    text = failure(block.held, limit)
    if outcome.excinfo is not None:
        # The test failed on its own: the held calls go beside its failure.
        item.add_report_section("call", "async-lab", text)
        return
    exc = pytest.fail.Exception(text, pytrace=False)
    if hasattr(outcome, "force_exception"):
        outcome.force_exception(exc)
    else:
        raise exc
