import json
import os
import subprocess
import sys

from async_lab import held
from async_lab.held import HeldError

from conftest import needs_installed_package

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRACES = os.path.join(ROOT, "recordings", "traces")
PAGEABLE = os.path.join(TRACES, "trace-seed_program-pageable-lazy-h200-driver580.159.04-2026-12-03-761b4dc.jsonl.gz")
PINNED = os.path.join(TRACES, "trace-seed_program-pinned-lazy-h200-driver580.159.04-2026-12-03-761b4dc.jsonl.gz")


def copy(what, cls="blocking", held_ns=2_800_000, name="cudaMemcpyAsync"):
    """A held copy as the JSON report gives it (fields of docs/trace-report.schema.json)."""
    return {
        "corr": 121,
        "name": name,
        "domain": "runtime",
        "thread": 809,
        "start_ns": 1_000,
        "end_ns": 1_000 + held_ns,
        "held_ns": held_ns,
        "class": cls,
        "what_held_it": f"its own transfer, staged by the driver on the calling thread: {what}",
        "startup": False,
        "location": {"kind": "python", "words": "test_copy.py:12 test_copy"},
        "stream": 7,
        "bytes": 32 << 20,
        "segments": [{"cause": "own", "start_ns": 1_100, "end_ns": held_ns, "what": ""}],
        "evidence": {
            "own_work": [{"kind": "copy", "what": what, "stream": 7, "corr": 121, "start_ns": 1_100, "end_ns": held_ns, "bytes": 32 << 20}],
            "driver_calls": ["cuMemcpyHtoDAsync_v2"],
            "module_loads": 0,
            "released_by": None,
            "own_share": 0.99,
            "summary": "own work 99%",
        },
    }


def test_a_pageable_copy_names_its_line_call_time_class_cause_and_pinned_memory():
    h = copy("the 32MiB host → device copy (pageable → device)")
    text = str(HeldError(h, 1_000_000))
    first = text.splitlines()[0]
    assert first == "test_copy.py:12 test_copy: cudaMemcpyAsync held this thread 2.8 ms (over 1.0 ms), class blocking"
    assert "what held it: its own transfer, staged by the driver" in text
    assert "remedy: pin the host memory" in text and "pin_memory()" in text


def test_a_copy_into_pageable_memory_says_copy_into_pinned_memory():
    h = copy("the 32MiB device → host copy (device → pageable)")
    assert "copy into pinned host memory" in held.remedy(h)


def test_a_lazy_first_launch_says_warm_up_or_eager_loading():
    h = copy("the kernel k", cls="waited-for-stream", name="cudaLaunchKernel")
    h["evidence"]["own_work"] = [{"kind": "kernel", "what": "the kernel k"}]
    h["evidence"]["module_loads"] = 1
    h["what_held_it"] = "lazy module load waited for the 2GiB host → device copy ahead in its stream"
    assert "CUDA_MODULE_LOADING=EAGER" in held.remedy(h)


def test_waits_allocations_and_other_causes_have_their_own_remedies():
    sync = copy("", cls="waited-for-stream", name="cudaStreamSynchronize")
    sync["evidence"]["own_work"] = []
    sync["segments"] = [{"cause": "stream"}]
    assert "by design" in held.remedy(sync)
    free = dict(sync, name="cudaFree", **{"class": "device-sync"})
    free["segments"] = [{"cause": "device"}]
    assert "empty_cache" in held.remedy(free)
    ctx = dict(sync, name="cudaMalloc", what_held_it="the call itself: context creation", **{"class": "async"})
    assert "created the CUDA context" in held.remedy(ctx)
    launch = dict(sync, name="cudaLaunchKernel", what_held_it="the call itself", **{"class": "async"})
    launch["segments"] = [{"cause": "call"}]
    assert held.remedy(launch) is None
    assert "remedy" not in held.message(launch, 1_000_000)


def test_a_call_without_a_location_is_named_by_its_function():
    h = copy("the 1MiB host → device copy (pageable → device)")
    del h["location"]
    assert held.message(h, 1_000).startswith("cudaMemcpyAsync: cudaMemcpyAsync held")


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


def test_the_held_calls_of_a_real_report_read_as_their_class_cause_and_remedy():
    calls = report(PAGEABLE)["processes"][0]["held_calls"]
    copies = [h for h in calls if h["name"] == "cudaMemcpyAsync" and h["class"] == "blocking"]
    assert len(copies) >= 2, [(h["name"], h["class"]) for h in calls]
    for h in copies:
        text = held.message(h, 1_000_000)
        assert "class blocking" in text and "the driver staged" in text
        assert "pinned" in held.remedy(h) or "pin the host memory" in held.remedy(h)
    creation = [h for h in calls if "context creation" in h["what_held_it"]]
    assert creation and "created the CUDA context" in held.remedy(creation[0])


def test_a_lazy_launch_of_a_real_report_gets_the_warm_up_remedy():
    calls = report(PINNED)["processes"][0]["held_calls"]
    launch = next(h for h in calls if h["name"] == "cudaLaunchKernel")
    assert launch["class"] == "waited-for-stream" and launch["evidence"]["module_loads"] >= 1
    assert "CUDA_MODULE_LOADING=EAGER" in held.remedy(launch)
