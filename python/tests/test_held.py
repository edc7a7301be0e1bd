"""The held calls' words come from the core: ``HeldError`` carries the library's message as it is, and the JSON
report of a committed trace (from the installed package's binary) gives each held call what the gate's words are
made of: its class, what held it as a finding names it (``kind``), whether it is paid once, its framework and its
remedy."""

import json
import os
import subprocess
import sys

from async_lab.held import GateUnavailable, HeldError

from conftest import needs_installed_package

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRACES = os.path.join(ROOT, "recordings", "traces")
PAGEABLE = os.path.join(TRACES, "trace-seed_program-pageable-lazy-h200-driver580.159.04-2026-12-03-761b4dc.jsonl.gz")
PINNED = os.path.join(TRACES, "trace-seed_program-pinned-lazy-h200-driver580.159.04-2026-12-03-761b4dc.jsonl.gz")


def test_a_held_error_says_the_librarys_words_as_they_came():
    held = {"corr": 121, "name": "cudaMemcpyAsync", "held_ns": 2_800_000, "message": "t.py:12 f: the core's words"}
    err = HeldError(held, 1_000_000)
    assert str(err) == "t.py:12 f: the core's words"
    assert (err.held, err.over_ns) == (held, 1_000_000)


def test_gate_unavailable_says_why_it_is():
    assert GateUnavailable("no CUPTI", reason="missing").reason == "missing"
    assert GateUnavailable("no").reason == "failed"


def report(trace):
    """The JSON report of a committed trace, from the installed package's binary (`python -m async_lab`)."""
    needs_installed_package()
    out = subprocess.run(
        [sys.executable, "-m", "async_lab", "trace", "--replay", trace, "--format", "json", "--out", os.devnull],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_real_reports_held_calls_carry_kind_framework_and_remedy():
    calls = report(PAGEABLE)["processes"][0]["held_calls"]
    copies = [h for h in calls if h["name"] == "cudaMemcpyAsync" and h["class"] == "blocking"]
    assert len(copies) >= 2, [(h["name"], h["class"]) for h in calls]
    for h in copies:
        assert h["kind"] in ("pageable-copy", "stream-wait"), h["kind"]
        assert h["framework"] == "native" and h["remedy"]["words"]
    creation = [h for h in calls if h.get("once") == "context-creation"]
    assert creation and all(h["warm_up"] for h in creation)


def test_a_lazy_launch_of_a_real_report_is_paid_once_with_the_warm_up_remedy():
    calls = report(PINNED)["processes"][0]["held_calls"]
    launch = next(h for h in calls if h["name"] == "cudaLaunchKernel")
    assert launch["once"] == "loading-code" and launch["warm_up"] and launch["kind"] == "loading-code"
    assert "CUDA_MODULE_LOADING=EAGER" in launch["remedy"]["words"]
