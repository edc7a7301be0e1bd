//! The tracer without a GPU: each cause it names, on a synthetic trace, through the same attribution and
//! classes as the experiments; and the committed traces (`recordings/trace-*.jsonl`, made on real GPUs)
//! replayed, one insta snapshot each, so their classification cannot change unseen.

use async_lab_core::attribution::Cause;
use async_lab_core::trace::calls::{self, Traced};
use async_lab_core::trace::format::Trace;
use async_lab_core::trace::scene::Program;
use async_lab_tests::trace_synthetic::{self as syn, MS};
use serde::Serialize;

/// The program's calls, classified, longest first.
fn classified(text: &str) -> (Program, Vec<Traced>) {
    let trace = Trace::parse(text).expect("a synthetic trace parses");
    let program = Program::of(&trace.processes[0]);
    let mut traced = calls::classify(&program);
    traced.sort_by_key(|t| std::cmp::Reverse(t.held.total_ns));
    (program, traced)
}

#[test]
fn a_lazy_first_launch_waited_for_the_copy_ahead_in_its_stream() {
    let (p, t) = classified(&syn::lazy_launch_waits_for_the_copy());
    let top = &t[0];
    assert_eq!(p.calls[top.index].name, "cudaLaunchKernel");
    // The driver's library load inside it is folded into the launch.
    assert_eq!(p.calls.len(), 2);
    assert_eq!(p.calls[top.index].inner, ["cuLibraryLoadData"]);
    assert_eq!(top.module_loads, 1);
    assert!(
        top.cause.starts_with(
            "lazy module load waited for the 2GiB host → device copy (pinned → device) ahead in its stream"
        ),
        "{}",
        top.cause
    );
    assert!(top.held.ns(Cause::Stream) > 37 * MS as i64);
}

#[test]
fn an_eager_launch_held_nothing() {
    let (_, t) = classified(&syn::eager_launch_returns());
    assert!(t.iter().all(|t| t.held.total_ns < 20_000), "{t:?}");
    assert!(t.iter().all(|t| t.held.released_by().is_none()));
}

#[test]
fn a_pageable_copy_held_its_thread_for_its_whole_transfer() {
    let (_, t) = classified(&syn::pageable_copy_staged());
    assert_eq!(t[0].held.held_through_own_work(), Some(true));
    assert!(t[0].cause.contains("its own transfer") && t[0].cause.contains("pageable"), "{}", t[0].cause);
}

#[test]
fn a_copy_waited_for_the_kernel_ahead_in_its_stream() {
    let (_, t) = classified(&syn::copy_waits_for_its_stream());
    assert_eq!(t[0].cause, "waited for the kernel spin ahead in its stream, correlation 10");
    assert_eq!(t[0].held.released_by().unwrap().cause, Cause::Stream);
}

#[test]
fn a_free_waited_for_another_streams_kernel() {
    let (_, t) = classified(&syn::free_drains_the_device());
    assert_eq!(t[0].cause, "waited for other streams' work: the kernel spin on stream 14, correlation 10");
    assert_eq!(t[0].held.released_by().unwrap().cause, Cause::Device);
}

#[test]
fn a_launch_waited_for_another_threads_call() {
    let (p, t) = classified(&syn::launch_waits_for_another_thread());
    let launch = t.iter().find(|t| p.calls[t.index].name == "cudaLaunchKernel").unwrap();
    assert!(
        launch.cause.starts_with("waited for another thread's call (cudaMallocHost on thread 200"),
        "{}",
        launch.cause
    );
    assert_eq!(launch.held.released_by().unwrap().cause, Cause::Thread);
}

#[test]
fn a_launch_behind_a_long_kernel_returned_at_once() {
    let (p, t) = classified(&syn::launch_is_async());
    let second = t.iter().find(|t| p.calls[t.index].corr == 11).unwrap();
    assert_eq!(second.held.ns(Cause::Stream), 0);
    assert_eq!(second.cause, "the call itself");
}

/// One call as a snapshot pins it.
#[derive(Serialize)]
struct Row {
    call: String,
    corr: u32,
    thread: u64,
    held_us: f64,
    class: String,
    cause: String,
    /// Each cause's time, in µs.
    segments: Vec<(String, f64)>,
}

fn rows(text: &str, min_held_ns: i64) -> Vec<Row> {
    let trace = Trace::parse(text).expect("the trace parses");
    let mut out = Vec::new();
    for process in &trace.processes {
        let p = Program::of(process);
        for t in calls::classify(&p).into_iter().filter(|t| t.held.total_ns > min_held_ns) {
            let c = &p.calls[t.index];
            out.push(Row {
                call: c.name.clone(),
                corr: c.corr,
                thread: c.tid,
                held_us: (t.held.total_ns as f64 / 100.0).round() / 10.0,
                class: t.class.to_string(),
                cause: t.cause.clone(),
                segments: t
                    .held
                    .segments
                    .iter()
                    .map(|s| (format!("{:?}", s.cause), (s.span.len() as f64 / 100.0).round() / 10.0))
                    .collect(),
            });
        }
    }
    out
}

#[test]
fn each_synthetic_trace_classifies_as_its_snapshot_says() {
    for (name, text) in syn::all() {
        insta::assert_yaml_snapshot!(format!("synthetic-{name}"), rows(&text, 0));
    }
}

#[test]
fn the_committed_traces_replay_as_their_snapshots_say() {
    for path in async_lab_tests::trace_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        insta::assert_yaml_snapshot!(format!("replay-{name}"), rows(&text, 20_000));
    }
}
