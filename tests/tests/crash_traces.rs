//! The traces of `reference/frameworks/crash.py` killed each way on a GPU machine
//! (`recordings/traces/trace-crash-MODE-*.jsonl.gz`): each must replay and hold the program's last held
//! call (a `cudaDeviceSynchronize` held ~10 ms for a GPU sleep, inside the NVTX range "held-call"), with the
//! way it ended: the signal, `_exit`, an `end` line for `exit`, nothing for SIGKILL (its periodic flush had
//! the call by then) and for SIGINT (Python handles it).

use async_lab_core::class::Class;
use async_lab_core::trace::calls;
use async_lab_core::trace::format::{Line, Trace};
use async_lab_core::trace::scene::Program;
use async_lab_tests::project_root;

const MODES: [&str; 8] = ["segv", "bus", "abrt", "term", "int", "exit", "_exit", "kill"];

fn trace_of(mode: &str) -> (String, Trace) {
    let dir = project_root().join(async_lab_tests::TRACES);
    let prefix = format!("trace-crash-{mode}-");
    let mut found: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&prefix))
        .collect();
    found.sort();
    let path = found.pop().unwrap_or_else(|| panic!("no {prefix}*.jsonl.gz in {}", dir.display()));
    (async_lab_tests::trace_name(&path), Trace::load(&path).unwrap())
}

#[test]
fn each_way_of_dying_leaves_a_trace_that_holds_its_last_held_call() {
    for mode in MODES {
        let (name, trace) = trace_of(mode);
        let p = &trace.processes[0];
        let program = Program::of(p);
        let traced = calls::classify(&program);
        // The held call: the last call that held its thread 5 ms or more.
        let held = traced
            .iter()
            .filter(|t| t.held.total_ns >= 5_000_000)
            .max_by_key(|t| program.calls[t.index].span.start)
            .unwrap_or_else(|| panic!("{name}: no call held 5 ms"));
        let call = &program.calls[held.index];
        assert_eq!(call.name, "cudaDeviceSynchronize", "{name}");
        // It was made inside the NVTX range the program pushed for it.
        let (start, end) = p
            .lines
            .iter()
            .find_map(|l| match l {
                Line::Api { corr, start, end, .. } if *corr == call.corr => Some((*start, *end)),
                _ => None,
            })
            .unwrap();
        let in_range = p.lines.iter().any(|l| {
            matches!(l, Line::Nvtx { name, start: s, end: e, .. } if name == "held-call" && *s <= start && *e >= end)
        });
        assert!(in_range, "{name}: the call is in no \"held-call\" range");
        let want = match mode {
            "segv" => Some("SIGSEGV"),
            "bus" => Some("SIGBUS"),
            "abrt" => Some("SIGABRT"),
            "term" => Some("SIGTERM"),
            "_exit" => Some("_exit"),
            _ => None,
        };
        assert_eq!(p.ended_by.as_deref(), want, "{name}");
        assert_eq!(p.partial, mode != "exit", "{name}");
        // Every way but SIGKILL flushed CUPTI's records first: the held call reads the wait they show. Killed
        // (traced at b38fd50, before CUPTI's buffers were handed back on the periodic flush), the trace holds no
        // GPU record, and the call says so instead of reading as a call that waited for nothing.
        let want = if mode == "kill" { Class::Unknown } else { Class::DeviceSync };
        assert_eq!(held.class, want, "{name}: {}", held.cause);
    }
}

fn load(name: &str) -> Trace {
    Trace::load(&project_root().join(async_lab_tests::TRACES).join(name)).unwrap()
}

/// `reference/frameworks/torch_profiler.py` traced: torch's profiler asked CUPTI for a subscriber after CUDA
/// started; by default it was refused and the tracer names it; with `--yield-cupti` the tracer stepped aside
/// and wrote no call after that.
#[test]
fn the_profiler_that_tried_to_take_cupti_is_named() {
    let refused = load("trace-torch_profiler-h200-driver580.159.04-b38fd50-2026-12-04.jsonl.gz");
    let words = async_lab::trace::conflicts::words(&refused);
    assert_eq!(words.len(), 1, "{words:?}");
    assert!(words[0].starts_with("torch's profiler (libkineto / libtorch_cpu.so) tried to subscribe"), "{}", words[0]);
    assert!(words[0].ends_with("its CUDA activity was not recorded; use --yield-cupti"), "{}", words[0]);

    let yielded = load("trace-torch_profiler-yield-cupti-h200-driver580.159.04-b38fd50-2026-12-04.jsonl.gz");
    let words = async_lab::trace::conflicts::words(&yielded);
    assert_eq!(words.len(), 1, "{words:?}");
    assert!(words[0].contains("the tracer stepped aside (--yield-cupti): the trace ends there"), "{}", words[0]);
    let p = &yielded.processes[0];
    let at = p.lines.iter().find_map(|l| if let Line::Conflict { t, .. } = l { Some(*t) } else { None }).unwrap();
    let after = p.lines.iter().filter(|l| matches!(l, Line::Api { start, .. } if *start > at)).count();
    assert_eq!(after, 0, "calls traced after the tracer stepped aside");
}
