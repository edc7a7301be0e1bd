//! The tracer without a GPU: each cause it names, on a synthetic trace, through the same attribution and
//! classes as the experiments; and the committed traces (`recordings/traces/trace-*.jsonl.gz`, made on real GPUs)
//! replayed, one insta snapshot each, so their classification cannot change unseen.

use async_lab_core::attribution::Cause;
use async_lab_core::trace::analysis::Analysis;
use async_lab_core::trace::calls::{self, Traced};
use async_lab_core::trace::format::{Line, Trace};
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
            "lazy module load waited for the 2 GiB host → device copy (pinned → device) ahead in its stream"
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
    assert!(t[0].cause.starts_with("pageable memory: the driver staged"), "{}", t[0].cause);
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
    // The free has no stream: what it waited for is the device.
    assert_eq!(t[0].cause, "waited for the device: the kernel spin on stream 14, correlation 10");
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

/// Threads go by the names the trace gives them (format 5): the other thread's call in the words, the held
/// table's thread column, `--explain`'s first line.
#[test]
fn the_other_thread_goes_by_its_name() {
    let text = syn::launch_waits_for_another_thread();
    let names =
        [Line::Thread { tid: 100, name: "python3".into() }, Line::Thread { tid: 200, name: "pt_worker".into() }]
            .iter()
            .map(|l| serde_json::to_string(l).unwrap() + "\n")
            .collect::<String>();
    let at = text.find('\n').unwrap() + 1;
    let named = format!("{}{names}{}", &text[..at], &text[at..]);
    let (p, t) = classified(&named);
    let launch = t.iter().find(|t| p.calls[t.index].name == "cudaLaunchKernel").unwrap();
    assert!(
        launch.cause.starts_with("waited for another thread's call (cudaMallocHost on pt_worker"),
        "{}",
        launch.cause
    );
    let table = async_lab_core::trace::text::held_table(&p, &t, 20_000, 20, None);
    assert!(table.contains("200 pt_worker") && table.contains("100 python3"), "{table}");
    let explained = async_lab_core::trace::text::explain(&p, launch);
    assert!(explained.starts_with("cudaLaunchKernel (python3, --explain 11)"), "{explained}");
}

#[test]
fn a_launch_behind_a_long_kernel_returned_at_once() {
    let (p, t) = classified(&syn::launch_is_async());
    let second = t.iter().find(|t| p.calls[t.index].corr == 11).unwrap();
    assert_eq!(second.held.ns(Cause::Stream), 0);
    assert_eq!(second.class, async_lab_core::classify::Class::Async);
    assert_eq!(second.cause, "driver work on this thread");
}

#[test]
fn an_event_wait_waited_for_the_stream_the_event_was_recorded_in() {
    let (p, t) = classified(&syn::event_wait(true));
    let wait = t.iter().find(|t| p.calls[t.index].name == "cudaEventSynchronize").unwrap();
    assert_eq!(wait.class, async_lab_core::classify::Class::WaitedForStream, "{}", wait.cause);
    assert_eq!(wait.cause, "waited for the kernel spin ahead in its stream, correlation 10");
    // Without the event's record the wait names no stream. The lab has seen an event wait wait for its
    // stream, never for the device: the kernels it waited for are its stream's, which the trace cannot name.
    let (p, t) = classified(&syn::event_wait(false));
    let wait = t.iter().find(|t| p.calls[t.index].name == "cudaEventSynchronize").unwrap();
    assert_eq!(wait.class, async_lab_core::classify::Class::WaitedForStream, "{}", wait.cause);
    assert!(wait.cause.contains("the trace does not say which stream"), "{}", wait.cause);
    assert_eq!(wait.basis.as_ref().unwrap().function, "cudaEventSynchronize");
}

#[test]
fn a_lazy_load_beside_another_threads_wait_names_the_kernel_both_waited_for() {
    let (p, t) = classified(&syn::lazy_load_beside_another_threads_wait());
    let launch = t.iter().find(|t| p.calls[t.index].corr == 12).unwrap();
    assert_eq!(launch.class, async_lab_core::classify::Class::DeviceSync, "{}", launch.cause);
    assert!(launch.cause.contains("the kernel spin on stream 14"), "{}", launch.cause);
    assert!(launch.cause.contains("thread 200's cudaStreamSynchronize waited for it too"), "{}", launch.cause);
    assert!(launch.cause.starts_with("lazy module load waited for"), "{}", launch.cause);
    assert_eq!(launch.held.released_by().unwrap().cause, Cause::Device);
    assert_eq!(launch.basis.as_ref().unwrap().condition, async_lab_core::trace::capability::Condition::ModuleLoad);
}

#[test]
fn work_that_ended_inside_a_call_without_a_sign_of_release_is_not_its_cause() {
    // A 130 ms pinned allocation during which a kernel on another stream ended at 50 ms; nothing on the
    // thread until the return, 80 ms later.
    let text = syn::trace(vec![
        syn::call("cudaLaunchKernel", 10, 0, 5 * syn::US),
        syn::kernel("spin", 14, 10, 10 * syn::US, 50 * MS),
        syn::call("cudaHostAlloc", 11, 20 * syn::US, 130 * MS),
    ]);
    let (p, t) = classified(&text);
    let alloc = t.iter().find(|t| p.calls[t.index].corr == 11).unwrap();
    // Held 130 ms by nothing but its own work in the driver: not `async`, which would read "returned at once".
    assert_eq!(alloc.class, async_lab_core::classify::Class::DriverWork, "{}", alloc.cause);
    assert_eq!(alloc.cause, "driver work on this thread");
    assert_eq!(alloc.held.overlapped.len(), 1);
    let words = async_lab_core::trace::text::explain(&p, alloc);
    assert!(words.contains("ran during it, not waited for: the kernel spin on stream 14"), "{words}");
}

#[test]
fn a_programs_own_steps_are_put_beside_the_calls_they_are_about() {
    use async_lab_core::trace::format::{ApiCalls, ClockPair, Line};
    use async_lab_core::trace::steps;
    // The program's CLOCK_MONOTONIC reads 5 s where the trace's clock reads T0.
    let mono = 5_000_000_000u64;
    let mut lines = vec![Line::Setup {
        clock: ClockPair { cupti_ns: syn::T0, monotonic_ns: mono },
        api_calls: ApiCalls::All,
        locate_over_ns: 20_000,
        python: None,
        several_subscribers: None,
    }];
    lines.extend(syn::trace_lines_copy_waits_for_its_stream());
    let text = syn::trace(lines);
    let trace = Trace::parse(&text).unwrap();
    let p = Program::of(&trace.processes[0]);
    let traced = calls::classify(&p);
    // The step began 5 µs before the copy's call and ended 10 µs after it returned.
    let out = format!(
        "{}{{\"program\":\"t\",\"step\":\"h2d\",\"call\":\"cudaMemcpyAsync\",\"tid\":100,\"start_ns\":{},\"end_ns\":{}}}\n",
        steps::PREFIX,
        mono + 5 * syn::US,
        mono + 20 * MS + 40 * syn::US
    );
    let rows = steps::compare(&trace.processes[0], &p, &traced, &steps::parse(&out).unwrap()).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].corrs, [11]);
    assert_eq!(rows[0].held_ns, 20 * MS as i64 + 20_000);
    assert_eq!(rows[0].own_ns, 20 * MS as i64 + 35_000);
    assert_eq!(rows[0].class.as_deref(), Some("waited-for-stream"));
    assert!(rows[0].basis.as_deref().unwrap().contains("pageable"), "{:?}", rows[0].basis);
    // Without the clock pair, the steps cannot be placed.
    let old = Trace::parse(&syn::copy_waits_for_its_stream()).unwrap();
    let q = Program::of(&old.processes[0]);
    assert!(steps::compare(&old.processes[0], &q, &calls::classify(&q), &[]).is_none());
}

#[test]
fn a_trace_cut_to_its_held_calls_replays_to_the_same_held_calls() {
    use async_lab_core::trace::trim;
    let path = async_lab_tests::trace_files()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("trace-async-lab-seed-"))
        .expect("the committed trace of the seed preset");
    let text = async_lab_tests::trace_text(&path);
    let (cut, kept) =
        trim::calls_where(&Analysis::all(&Trace::parse(&text).unwrap()), |_, p, i| p.calls[i].span.len() > 20_000);
    let cut = Trace::parse(&trim::to_text(&cut)).unwrap();
    assert!(kept > 100);
    assert_eq!(rows(&text, 20_000).len(), rows(&trim::to_text(&cut), 20_000).len());
    let whole = serde_json::to_string(&rows(&text, 20_000)).unwrap();
    assert_eq!(whole, serde_json::to_string(&rows(&trim::to_text(&cut), 20_000)).unwrap());
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
    // The framework programs' traces of `26adb99` and `b38fd50` are checked by their own tests
    // (`user_programs.rs`, `lifetime_traces.rs`, `crash_traces.rs`), not snapshotted here.
    let snapshotted = async_lab_tests::trace_files()
        .into_iter()
        .filter(|p| !["-26adb99.", "-b38fd50-"].iter().any(|run| p.to_string_lossy().contains(run)));
    for path in snapshotted {
        let text = async_lab_tests::trace_text(&path);
        let name = async_lab_tests::trace_name(&path);
        insta::assert_yaml_snapshot!(format!("replay-{name}"), rows(&text, 20_000));
    }
}

/// A recording's repetitions as the calls of a trace, `offset` ns later on the trace's clock.
fn trace_of_recording(rec: &async_lab_core::record::Recording, offset: u64) -> String {
    use async_lab_core::trace::format::{header, Domain, Line};
    let mut lines = vec![header(1, vec!["async-lab".into()], None)];
    let mut corr = 0;
    for case in &rec.cases {
        let name = async_lab_core::trace::timed_calls::base_name(&case.setup.call).to_owned();
        for r in &case.reps {
            let call = |corr: u32, start: u64, len: u64| Line::Api {
                domain: Domain::Runtime,
                name: format!("{name}_v2"),
                cbid: 0,
                tid: 1,
                corr,
                start,
                end: start + len,
            };
            // A call between the repetitions' that the matching must not take: same name, 300 µs earlier.
            lines.push(call(corr + 1, r.host_call_start_ns + offset - 300_000, 1_000));
            lines.push(call(corr + 2, r.host_call_start_ns + offset + 3_000, r.host_call_ns));
            corr += 2;
        }
    }
    lines.push(Line::End { t: u64::MAX / 2 });
    lines.iter().map(|l| serde_json::to_string(l).unwrap() + "\n").collect()
}

#[test]
fn a_traced_lab_run_is_matched_to_its_recording_repetition_by_repetition() {
    let path = async_lab_tests::project_root()
        .join("recordings/async-lab-seed-both-apis-h200-driver580.159.04-2026-12-03.json");
    let rec = async_lab_core::record::Recording::load(&path).unwrap();
    let trace = Trace::parse(&trace_of_recording(&rec, 1_700_000_000_000_000_000)).unwrap();
    let rows = async_lab_core::trace::against_recording::compare(&rec, &Analysis::all(&trace));
    assert_eq!(rows.len(), rec.cases.len());
    for r in &rows {
        assert_eq!(r.traced_classes.len(), r.reps, "{}: every repetition's call found", r.id);
        // The synthetic calls have no GPU work around them: the tracer says async.
        assert_eq!(r.traced, Some(async_lab_core::classify::Class::Async), "{}", r.id);
    }
    let md = async_lab_core::trace::against_recording::markdown(&rows);
    assert!(md.contains("cases whose timed call the trace holds"), "{md}");
}

#[test]
fn a_long_program_classifies_call_by_call_without_looking_at_every_other_call() {
    // 40,000 launches, each with its kernel: every call's scene is built from indexes, not a scan.
    let mut lines = Vec::new();
    for i in 0..40_000u64 {
        let t = i * 10 * syn::US;
        lines.push(syn::call("cudaLaunchKernel", i as u32 + 1, t, t + 3 * syn::US));
        lines.push(syn::kernel("k", 13, i as u32 + 1, t + 5 * syn::US, t + 9 * syn::US));
    }
    let started = std::time::Instant::now();
    let (p, t) = classified(&syn::trace(lines));
    assert_eq!((p.calls.len(), t.len()), (40_000, 40_000));
    assert!(t.iter().all(|t| t.class == async_lab_core::classify::Class::Async));
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "{:?}", started.elapsed());
}

/// The seed's program traced on the H200 (pinned, lazy loading): the first launch is the longest-held call
/// that enqueues work, held by a module load that waited for the 2 GiB copy ahead in its stream.
#[test]
fn on_the_h200_the_seeds_first_launch_waited_for_the_copy_through_a_lazy_module_load() {
    let path = async_lab_tests::trace_files()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("trace-seed_program-pinned-lazy-"))
        .expect("the committed trace of the seed's program");
    let (p, t) = classified(&async_lab_tests::trace_text(&path));
    let launch = t.iter().find(|t| p.calls[t.index].name == "cudaLaunchKernel").unwrap();
    assert_eq!(launch.class.to_string(), "waited-for-stream");
    assert!(launch.cause.starts_with("lazy module load waited for the 2 GiB host → device copy"), "{}", launch.cause);
    assert!(launch.held.ns(Cause::Stream) > 30 * MS as i64, "{:?}", launch.held);
}

/// A traced run of the C++ reference: every repetition of a traced case is found (the two clocks an unknown
/// offset apart, a launch of the same name 8 µs before each timed launch), and each case stands to the
/// reference's class as its shape makes it.
#[test]
fn a_traced_reference_run_is_matched_repetition_by_repetition_and_its_classes_counted() {
    use async_lab_core::async_ref::RefOutput;
    use async_lab_core::trace::against_reference::{self, Verdict};
    use async_lab_core::trace::timed_calls::{self, Timed};
    let reps = 3;
    let run = syn::reference_run(reps);
    let refs = RefOutput::parse(&run.json).unwrap();
    against_reference::check(&refs).unwrap();
    let trace = Trace::parse(&run.trace).unwrap();

    // Each repetition's call is the timed one, not the blocker's launch just before it.
    let p = Program::of(&trace.processes[0]);
    let timed: Vec<Timed> = refs
        .cases
        .iter()
        .enumerate()
        .flat_map(|(ci, c)| {
            c.host_call_start_ns.iter().zip(&c.host_call_ns).enumerate().map(move |(ri, (&s, &n))| Timed {
                start_ns: s as i64,
                len_ns: n as i64,
                call: c.call.as_deref().unwrap(),
                key: (ci, ri),
            })
        })
        .collect();
    let mut found: Vec<((usize, usize), u32)> =
        timed_calls::locate(&timed, &p).into_iter().map(|(key, i)| (key, p.calls[i].corr)).collect();
    found.sort_unstable();
    assert_eq!(found, run.timed);

    let specs = syn::reference_cases();
    let rows = against_reference::compare(&refs, &Analysis::all(&trace));
    let compared: Vec<&syn::RefCaseSpec> = specs.iter().filter(|s| s.expect.is_some()).collect();
    assert_eq!(rows.len(), compared.len());
    assert_eq!(against_reference::left_out(&refs), specs.len() - compared.len());
    for (row, spec) in rows.iter().zip(&compared) {
        assert_eq!(row.id, spec.id);
        assert_eq!(
            Some(row.verdict),
            spec.expect,
            "{}: reference {:?}, tracer {:?}",
            row.id,
            row.reference,
            row.traced
        );
        let traced = spec.shape != syn::RepShape::Untraced;
        assert_eq!(row.traced_classes.len(), if traced { reps } else { 0 }, "{}", row.id);
    }

    // The counts, in the order the table gives them.
    let count = |f: fn(&Verdict) -> bool| compared.iter().filter(|s| f(&s.expect.unwrap())).count();
    let equal = count(|v| *v == Verdict::Equal);
    let compatible = count(|v| matches!(v, Verdict::Compatible(_)));
    let disagree = count(|v| *v == Verdict::Disagrees);
    let not_found = count(|v| *v == Verdict::NotFound);
    let md = against_reference::markdown(&rows, against_reference::left_out(&refs));
    let head = format!(
        "{equal} of {} cases whose timed call the trace holds have the same class from the tracer as from the reference",
        compared.len() - not_found
    );
    assert!(md.starts_with(&head), "{md}");
    assert!(md.contains(&format!("; {compatible} more differ only as the two vocabularies do; {disagree} ")), "{md}");
    assert!(md.contains(&format!("{not_found} not found in the trace")), "{md}");
    for reason in against_reference::Reason::ALL {
        let n = compared.iter().filter(|s| s.expect == Some(Verdict::Compatible(reason))).count();
        assert!(md.contains(&format!("- compatible ({}), {n}: {}.", reason.tag(), reason.words())), "{md}");
    }
    // Equal rows first, then the compatible, the disagreements (marked), the cases not found.
    let order: Vec<&str> =
        md.lines().filter(|l| l.starts_with("| `")).map(|l| l.rsplit(" | ").next().unwrap()).collect();
    let rank = |cell: &str| {
        ["equal", "compatible", "**disagrees**", "not found"].iter().position(|w| cell.starts_with(w)).unwrap()
    };
    assert!(order.windows(2).all(|w| rank(w[0]) <= rank(w[1])), "{md}");
    assert!(md.contains("| **async** | 3/3 | **disagrees** |"), "{md}");
}

/// On the H200: the C++ reference run under the tracer (`recordings/reference-async_ref-traced-*-daa644a.json`,
/// and its trace cut to the calls `--against` matched, `traces/trace-async_ref-matched-*-daa644a.jsonl.gz`). Every
/// repetition of its 109 cases is found, and the counts are the ones docs/trace-validation.md explains.
#[test]
fn on_the_h200_the_traced_reference_is_counted_as_docs_trace_validation_md_says() {
    use async_lab_core::async_ref::RefOutput;
    use async_lab_core::trace::against_reference::{self, Verdict};
    let dir = async_lab_tests::project_root().join("recordings");
    let json =
        std::fs::read_to_string(dir.join("reference-async_ref-traced-h200-driver580.159.04-2026-12-03-daa644a.json"))
            .unwrap();
    let refs = RefOutput::parse(&json).unwrap();
    let trace =
        Trace::load(&dir.join("traces/trace-async_ref-matched-h200-driver580.159.04-2026-12-03-daa644a.jsonl.gz"))
            .unwrap();
    let rows = against_reference::compare(&refs, &Analysis::all(&trace));
    assert_eq!(rows.len(), 109);
    assert!(rows.iter().all(|r| r.traced_classes.len() == r.reps && r.reps == 5), "every repetition found");
    let count = |f: fn(&Verdict) -> bool| rows.iter().filter(|r| f(&r.verdict)).count();
    assert_eq!(count(|v| *v == Verdict::Equal), 76);
    assert_eq!(count(|v| matches!(v, Verdict::Compatible(_))), 25);
    assert_eq!(count(|v| *v == Verdict::Disagrees), 8);
    insta::assert_snapshot!(
        "h200-async_ref-against",
        against_reference::markdown(&rows, against_reference::left_out(&refs))
    );
}

/// On the H200: async-lab's default run traced with event records (`recordings/async-lab-default-both-apis-
/// traced-*-4b029c4.json`, and its trace cut to the calls `--against` matched). Every repetition of the 332
/// cases is found, and the tracer agrees with the lab on the count docs/trace-validation.md explains.
#[test]
fn on_the_h200_the_traced_default_run_is_counted_as_docs_trace_validation_md_says() {
    use async_lab_core::record::Recording;
    use async_lab_core::trace::against_recording;
    let dir = async_lab_tests::project_root().join("recordings");
    let rec =
        Recording::load(&dir.join("async-lab-default-both-apis-traced-h200-driver580.159.04-2026-12-03-4b029c4.json"))
            .unwrap();
    let trace = Trace::load(
        &dir.join("traces/trace-async-lab-default-matched-h200-driver580.159.04-2026-12-03-4b029c4.jsonl.gz"),
    )
    .unwrap();
    let rows = against_recording::compare(&rec, &Analysis::all(&trace));
    assert_eq!(rows.len(), 332);
    assert!(rows.iter().all(|r| r.traced_classes.len() == r.reps && r.reps == 5), "every repetition found");
    assert_eq!(rows.iter().filter(|r| r.agrees() == Some(true)).count(), 292);
    // No event wait among the differences: the tracer takes its stream from the event's record.
    assert!(rows
        .iter()
        .filter(|r| r.agrees() == Some(false))
        .all(|r| !r.id.starts_with("wait/") && !r.id.starts_with("runtime/wait/")));
    insta::assert_snapshot!("h200-default-against", against_recording::markdown(&rows));
}

/// The lab's K4: a first launch under lazy loading waits for the device before its module loads. The module's
/// load shows in the trace (its module-loaded event 11 ms after the kernel ended, or CUPTI's overhead record of
/// it right after the kernel ended), the kernel was under way when the launch began and ended before the load,
/// and no load of the trace that had nothing to wait for took as long as the launch: the launch waited for the
/// kernel, for its stream or for the device, as the lab's experiment shows, then loaded.
#[test]
fn a_lazy_load_after_a_drain_waited_for_the_kernel_that_ended_right_before_it() {
    use async_lab_core::class::Class;
    let cases = [
        (
            false,
            Class::WaitedForStream,
            "lazy module load waited for the kernel spin ahead in its stream",
            "load/first-launch/lazy/same",
        ),
        (
            true,
            Class::DeviceSync,
            "lazy module load waited for other streams' work: the kernel spin on stream 14",
            "load/first-launch/lazy/other",
        ),
    ];
    for (other_stream, class, words, case) in cases {
        // Without the record, the module-loaded event shows the load, 11 ms after the kernel ended.
        let (p, t) = classified(&syn::lazy_load_after_drain(other_stream, false));
        let launch = t.iter().find(|t| p.calls[t.index].corr == 11).unwrap();
        assert_eq!(launch.class, class, "without the record: {}", launch.cause);
        assert!(launch.held.overlapped.is_empty(), "{:?}", launch.held.overlapped);
        let explained = async_lab_core::trace::text::explain(&p, launch);
        assert!(explained.contains("the trace holds no lazy load with nothing to wait for to compare it with"));

        let (p, t) = classified(&syn::lazy_load_after_drain(other_stream, true));
        let launch = t.iter().find(|t| p.calls[t.index].corr == 11).unwrap();
        assert_eq!(launch.class, class, "{}", launch.cause);
        assert!(launch.cause.starts_with(&format!("33.2 ms {words}")), "{}", launch.cause);
        assert!(launch.cause.ends_with("; after it, 11.3 ms lazy module load"), "{}", launch.cause);
        assert!(launch.held.overlapped.is_empty(), "{:?}", launch.held.overlapped);
        assert!(launch.basis.as_ref().unwrap().case.ends_with(case), "{:?}", launch.basis);
        let explained = async_lab_core::trace::text::explain(&p, launch);
        assert!(
            explained.contains(
                "CUPTI's overhead record LAZY_FUNCTION_LOADING: a function's code loaded at its first use (lazy \
                 loading), from 33.2 ms to 44.4 ms after the call began"
            ),
            "{explained}"
        );
    }
}

/// CUPTI's `COMMAND_BUFFER_FULL` record names the full queue: the launch waited for room, which the kernel
/// ahead made as it ended, as the lab's K5 shows; without the record the trace shows no full queue, and a
/// launch is not known to wait for its stream otherwise.
#[test]
fn a_full_queue_record_names_the_wait_for_room() {
    use async_lab_core::class::Class;
    let (p, t) = classified(&syn::launch_into_a_full_queue(false));
    let launch = t.iter().find(|t| p.calls[t.index].corr == 11).unwrap();
    // Held milliseconds by nothing the trace shows: the driver's own work.
    assert_eq!(launch.class, Class::DriverWork, "{}", launch.cause);
    let (p, t) = classified(&syn::launch_into_a_full_queue(true));
    let launch = t.iter().find(|t| p.calls[t.index].corr == 11).unwrap();
    assert_eq!(launch.class, Class::WaitedForStream, "{}", launch.cause);
    assert!(
        launch.cause.starts_with("launch queue full: waited for the kernel spin ahead in its stream, correlation 10"),
        "{}",
        launch.cause
    );
    assert!(launch.basis.as_ref().unwrap().case.contains("launch/queue-depth"), "{:?}", launch.basis);
    let explained = async_lab_core::trace::text::explain(&p, launch);
    assert!(
        explained.contains("COMMAND_BUFFER_FULL: the launch queue (a command buffer of 1024) was full"),
        "{explained}"
    );
}

/// A program killed before CUPTI handed its records back: its held copies have no GPU record, so no class
/// that needs one; their synchronizes, which the attribution finds held by nothing, may have waited for the
/// lost work. With the records handed back, each copy reads what its record shows.
#[test]
fn calls_whose_gpu_records_were_lost_read_unknown() {
    use async_lab_core::class::Class;
    let (p, t) = classified(&syn::killed_after_held_copies(false));
    assert_eq!(t.len(), 12);
    for c in &t {
        assert_eq!(c.class, Class::Unknown, "{} {}", p.calls[c.index].name, c.cause);
        let want = if p.calls[c.index].name == "cudaMemcpyAsync" {
            "its GPU records were lost: the program was killed"
        } else {
            "what it waited for may be among the GPU records missing: the program was killed"
        };
        assert_eq!(c.cause, want);
    }
    let table = async_lab_core::trace::text::held_table(&p, &t, 20_000, 20, None);
    assert!(table.contains("6 calls that enqueued GPU work"), "{table}");
    assert!(
        table.contains("12 of 12 calls read unknown: the GPU records their classes would rest on are missing"),
        "{table}"
    );

    let (p, t) = classified(&syn::killed_after_held_copies(true));
    for c in &t {
        let want = if p.calls[c.index].name == "cudaMemcpyAsync" { Class::Blocking } else { Class::Async };
        assert_eq!(c.class, want, "{} {}", p.calls[c.index].name, c.cause);
    }
}

/// A committed trace cut as a killed program's would be: the GPU records that ended after some time are not
/// there, nor the `end` line. The calls whose records are missing read `unknown`: the copy back, whose record
/// ended after the cut, and the calls after it that the attribution finds held by nothing though they may
/// have waited for that copy (the synchronize, which did; the frees, which the lab has seen drain the
/// device); every other call keeps its class.
#[test]
fn a_cut_trace_says_which_calls_lost_their_records() {
    use async_lab_core::class::Class;
    use async_lab_core::trace::format::Line;
    let path = async_lab_tests::project_root()
        .join("recordings/traces/trace-seed_program-pinned-lazy-h200-driver580.159.04-2026-12-03-761b4dc.jsonl.gz");
    let whole = Trace::load(&path).unwrap();
    let before = Program::of(&whole.processes[0]);
    let classes_before = calls::classify(&before);
    // Cut right after the kernel's end: the 2 GiB copy back (correlation 127) and the synchronize's record
    // (129) ended later.
    let cut_at = whole.processes[0]
        .lines
        .iter()
        .find_map(|l| match l {
            Line::Kernel { end, .. } => Some(*end),
            _ => None,
        })
        .unwrap();
    let mut cut = whole.clone();
    cut.processes[0].lines.retain(|l| match l {
        Line::Memcpy { end, .. } | Line::Memset { end, .. } | Line::Kernel { end, .. } | Line::Sync { end, .. } => {
            *end <= cut_at
        }
        Line::End { .. } => false,
        _ => true,
    });
    let cut = Trace::parse(&async_lab_core::trace::trim::to_text(&cut)).unwrap();
    assert!(cut.partial());
    let after = Program::of(&cut.processes[0]);
    let classes_after = calls::classify(&after);
    assert_eq!(classes_before.len(), classes_after.len());
    let mut unknown = Vec::new();
    for (b, a) in classes_before.iter().zip(&classes_after) {
        let call = &after.calls[a.index];
        if a.class == Class::Unknown {
            unknown.push(call.corr);
        } else {
            assert_eq!(a.class, b.class, "{} {}: {}", call.name, call.corr, a.cause);
        }
    }
    assert_eq!(unknown, [127, 129, 131, 132]);
    let copy = classes_after.iter().find(|t| after.calls[t.index].corr == 127).unwrap();
    assert_eq!(copy.cause, "its GPU records were lost: the program was killed");
}
