import sys
import threading
import traceback
import warnings

import pytest

import async_lab
from async_lab import HeldError, HeldWarning, GateUnavailable, gate, no_blocking, watch

from fakegate import Fake, install


@pytest.fixture
def fake():
    f = Fake()
    old = gate.set_backend(f)
    yield f
    gate.set_backend(old)
    # Each thread keeps the backend it entered its first block with.
    gate._threads.state = None


@pytest.fixture
def framework(tmp_path, fake):
    return install(tmp_path, fake)


def here():
    """The line after the caller's."""
    return sys._getframe(1).f_lineno + 1


def test_a_call_held_past_the_limit_raises_at_the_line_that_made_it(framework, fake):
    ran_on = False
    with pytest.raises(HeldError) as e:
        with no_blocking(over="1ms"):
            line = here()
            framework.to_cuda(2_000_000)
            ran_on = True
    assert not ran_on
    err = e.value
    assert err.held["location"]["words"] == f"test_gate.py:{line} test_a_call_held_past_the_limit_raises_at_the_line_that_made_it"
    assert err.held["class"] == "blocking" and err.held["held_ns"] == 2_000_000
    # The Python frames the library was given: the framework's, then the test's line.
    assert [(f["function"], f["line"]) for f in err.held["python"][:2]] == [("to_cuda", 9), (sys._getframe().f_code.co_name, line)]
    ours = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == __file__]
    assert ours[-1].lineno == line
    # Its words are the library's (the core's), as they came.
    assert str(err) == err.held["message"]
    assert str(err).startswith(f"test_gate.py:{line} test_a_call_held_past_the_limit_raises_at_the_line_that_made_it: cudaMemcpyAsync held this thread 2.0 ms (over 1.0 ms), class blocking")
    # The library was asked with the block's limit and what the callback saw.
    [asked] = fake.asked
    assert (asked["over_ns"], asked["name"], asked["held_ns"]) == (1_000_000, "cudaMemcpyAsync", 2_000_000)
    # The profile function is gone with the block.
    assert sys.getprofile() is None


def test_calls_under_the_limit_pass(framework, fake):
    with no_blocking(over="1ms"):
        for _ in range(5):
            framework.to_cuda(900_000)
    assert fake.asked == []


def test_warn_mode_warns_at_the_line_and_goes_on(framework, fake):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with no_blocking(over="1ms", mode="warn"):
            line = here()
            framework.to_cuda(3_000_000)
            went_on = True
    assert went_on
    [w] = [w for w in caught if issubclass(w.category, HeldWarning)]
    assert (w.filename, w.lineno) == (__file__, line)
    assert "class blocking" in str(w.message)


def test_watch_collects_the_blocks_held_calls_as_report_entries(framework, fake):
    with watch() as w:
        first = here()
        framework.to_cuda(30_000)
        framework.to_cuda(10_000)  # under 20 us
        second = here()
        framework.to_cuda(5_000_000, name="cudaMemcpy")
    assert [(h["name"], h["held_ns"]) for h in w.held] == [("cudaMemcpyAsync", 30_000), ("cudaMemcpy", 5_000_000)]
    assert [h["python"][1]["line"] for h in w.held] == [first, second]
    assert all(h["class"] == "blocking" for h in w.held)


def test_a_call_the_trace_lacks_is_kept_with_its_line_and_class_unknown(framework, fake):
    with watch(over="1ms") as w:
        line = here()
        framework.to_cuda(2_000_000, name="lost-call")
    [h] = w.held
    assert h["class"] == "unknown" and h["name"] == "lost-call" and h["held_ns"] == 2_000_000
    assert h["message"].startswith(f"test_gate.py:{line} test_a_call_the_trace_lacks_is_kept_with_its_line_and_class_unknown: lost-call held")


def test_what_is_paid_once_gates_nothing_unless_asked(framework, fake):
    with no_blocking(over="1ms"):
        framework.to_cuda(5_000_000, name="load-module")
    with no_blocking(over="1ms") as b:
        framework.to_cuda(5_000_000, name="load-module")
    assert b.held == [] and [h["name"] for h in b.paid_once] == ["load-module"]
    with pytest.raises(HeldError, match="class driver-work"):
        with no_blocking(over="1ms", warm_up=True):
            framework.to_cuda(5_000_000, name="load-module")
    with watch(over="1ms") as w:
        framework.to_cuda(5_000_000, name="load-module")
        framework.to_cuda(5_000_000)
    assert [h["name"] for h in w.held] == ["cudaMemcpyAsync"] and len(w.paid_once) == 1


def test_each_thread_gates_its_own_calls(framework, fake):
    started, done = threading.Event(), threading.Event()
    errors = []

    def other():
        started.wait()
        framework.to_cuda(50_000_000)  # no block on this thread: not listed
        try:
            with no_blocking(over="1ms"):
                framework.to_cuda(4_000_000)
        except HeldError as e:
            errors.append(e)
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with no_blocking(over="1ms"):
        started.set()
        done.wait(10)
        framework.to_cuda(10_000)
    t.join()
    [e] = errors
    assert e.held["held_ns"] == 4_000_000
    assert fake.count == 1


def test_a_held_error_caught_inside_the_block_lets_the_block_end_raise_the_next(framework, fake):
    with pytest.raises(HeldError) as e:
        with no_blocking(over="1ms"):
            with pytest.raises(HeldError):
                framework.to_cuda(2_000_000)
            framework.to_cuda(3_000_000)
    assert e.value.held["held_ns"] == 3_000_000


def test_blocks_nest_and_each_gets_the_calls_past_its_own_limit(framework, fake):
    with watch(over="1ms") as outer:
        with watch(over="10ms") as inner:
            framework.to_cuda(5_000_000)
            framework.to_cuda(20_000_000)
        assert [h["held_ns"] for h in inner.held] == [20_000_000]
    assert [h["held_ns"] for h in outer.held] == [5_000_000, 20_000_000]
    # The thread's limit is off once no block is open.
    assert fake.limits[threading.get_ident()] == 0


def test_the_profile_function_in_place_before_comes_back(framework, fake):
    def mine(frame, event, arg):
        pass

    sys.setprofile(mine)
    try:
        with watch():
            framework.to_cuda(1)
        assert sys.getprofile() is mine
    finally:
        sys.setprofile(None)


def test_cupti_taken_is_said_on_entering():
    old = gate.set_backend(Fake(unavailable="async-lab cannot gate this process: CUPTI is taken: nsys"))
    try:
        with pytest.raises(GateUnavailable, match="CUPTI is taken"):
            with no_blocking():
                pass
    finally:
        gate.set_backend(old)
        gate._threads.state = None


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="not a duration"):
        no_blocking(over="soon")
    with pytest.raises(ValueError, match="mode"):
        no_blocking(mode="loud")


def test_library_files_are_told_from_the_programs_own():
    assert gate.library_file("/venv/lib/python3.12/site-packages/torch/_tensor.py")
    assert gate.library_file("/usr/lib/python3.11/threading.py")
    assert gate.library_file("<frozen runpy>")
    assert gate.library_file(gate.__file__)
    assert not gate.library_file("/home/me/lib/train.py")
    assert not gate.library_file("test_copy.py")
    assert async_lab.no_blocking is no_blocking
