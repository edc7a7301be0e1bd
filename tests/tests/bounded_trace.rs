//! The bounded trace (`trace-format/src/bounded.rs`, what the injection library writes by default) against the
//! whole one: every committed trace is fed line by line, in the order its file holds them, through the same
//! filter the library runs, with the calls in flight given as the library gives them; the bounded trace must
//! replay to the same tables, held calls, explanations, places and JSON report, and be smaller.

use async_lab_core::trace::analysis::Analysis;
use async_lab_core::trace::bounded::{Config, Filter};
use async_lab_core::trace::format::{Line, ProcessTrace, Trace};
use async_lab_core::trace::scene::Program;
use async_lab_core::trace::{json, text, trim};
use async_lab_tests::trace_files;
use std::path::PathBuf;

const MIN_HELD: u64 = 20_000;

/// Every committed trace: the recordings' and the framework programs' crash and profiler traces.
fn traces() -> Vec<PathBuf> {
    trace_files()
}

/// `p` through the filter: its lines in the file's order, and every 64 lines the calls then in flight (as the
/// library's thread sees them between two hand-overs); `hinted`: with each `api` line, whether it is a call of
/// its own, as the library says (else the filter finds it out).
fn bounded(p: &ProcessTrace, cfg: Config, hinted: bool) -> ProcessTrace {
    let program = Program::of(p);
    let mut starts: Vec<(i64, i64, u64)> = program.calls.iter().map(|c| (c.span.start, c.span.end, c.tid)).collect();
    starts.sort_unstable();
    let longest = starts.iter().map(|c| c.1 - c.0).max().unwrap_or(0);
    // Which `api` lines are a call of their own (not a driver call inside another): what the library knows.
    let outermost: std::collections::HashSet<(u64, u32, u64)> =
        program.calls.iter().map(|c| (c.tid, c.corr, c.span.start as u64)).collect();
    let mut filter = Filter::new(cfg);
    let mut out = Vec::new();
    filter.start(&mut out);
    let mut now = 0i64;
    for (n, line) in p.lines.iter().enumerate() {
        if let Line::Api { end, .. } = line {
            now = now.max(*end as i64);
        }
        let hint = match line {
            Line::Api { tid, corr, start, .. } if hinted => Some(outermost.contains(&(*tid, *corr, *start))),
            _ => None,
        };
        filter.push(line.clone(), hint, &mut out);
        if n % 64 == 63 {
            let from = starts.partition_point(|c| c.0 < now - longest);
            let to = starts.partition_point(|c| c.0 < now);
            let open: Vec<(u64, u64)> =
                starts[from..to].iter().filter(|c| c.1 > now).map(|c| (c.2, c.0 as u64)).collect();
            filter.open(&open, &mut out);
        }
    }
    // A process cut short ends without an `end` line: what the filter still holds is written at the end.
    if p.partial {
        filter.finish(&mut out);
    }
    ProcessTrace { lines: out, ..p.clone() }
}

/// What a reader sees of one process: the tables, each held call explained and placed, the JSON report.
fn answer(p: &ProcessTrace) -> Vec<String> {
    let a = Analysis::of(p);
    let min = MIN_HELD as i64;
    let view =
        |after_startup| text::View { min_held_ns: min, top: usize::MAX, after_startup, skip_first: 0, width: None };
    let mut out = vec![
        text::process(&a, &view(false)),
        text::process(&a, &view(true)),
        serde_json::to_string_pretty(&json::process(&a, min, false, 0)).unwrap(),
    ];
    for t in a.held(min, false) {
        let c = &a.program.calls[t.index];
        out.push(text::explain(&a.program, t));
        out.push(text::explain_location(&a.locations, c, &a.places[t.index]));
    }
    out
}

/// The bytes of a bounded trace as the library writes it (its repeated stacks once), not as read back.
fn written(t: &Trace) -> usize {
    t.processes.iter().map(|p| p.lines.iter().map(|l| serde_json::to_string(l).unwrap().len() + 1).sum::<usize>()).sum()
}

fn check(cfg: Config, hinted: bool, what: &str) {
    let mut checked = 0;
    for path in traces() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let whole = Trace::load(&path).unwrap();
        let cut = Trace { processes: whole.processes.iter().map(|p| bounded(p, cfg, hinted)).collect() };
        let raw = written(&cut);
        // Through the file format and back, as a reader gets it.
        let cut = Trace::parse(&trim::to_text(&cut)).unwrap();
        for (w, c) in whole.processes.iter().zip(&cut.processes) {
            let (a, b) = (answer(w), answer(c));
            assert_eq!(a.len(), b.len(), "{name} ({what}): held calls");
            for (x, y) in a.iter().zip(&b) {
                if x != y {
                    let at = x.lines().zip(y.lines()).position(|(l, m)| l != m).unwrap_or(0);
                    let near = |s: &str| s.lines().skip(at.saturating_sub(2)).take(5).collect::<Vec<_>>().join("\n");
                    panic!("{name} ({what}), process {}: line {at}\nwhole:\n{}\nbounded:\n{}", w.pid, near(x), near(y));
                }
            }
            assert_eq!(w.partial, c.partial, "{name}");
            checked += 1;
        }
        let size = |t: &Trace| trim::to_text(t).len();
        eprintln!("{name} ({what}): {raw} of {} bytes", size(&whole));
        assert!(raw <= size(&whole) + 4096, "{name} ({what}): {raw} > {}", size(&whole));
    }
    assert!(checked >= 20, "only {checked} processes checked");
}

#[test]
fn the_bounded_trace_gives_the_whole_traces_answer() {
    check(Config::with_threshold(MIN_HELD), true, "the library's window");
}

/// A window far shorter than the traces' calls, GPU records and batches: what is held back is decided by the
/// calls in flight, not by the window's length.
#[test]
fn a_short_window_gives_the_same_answer() {
    let cfg = Config { window_ns: 2_000_000, counts_every_ns: 100_000_000, ..Config::with_threshold(MIN_HELD) };
    check(cfg, true, "a 2 ms window");
}

/// Without the library's word on which calls are their own, the filter folds them as the reader does.
#[test]
fn without_the_librarys_hints_the_answer_is_the_same() {
    check(Config::with_threshold(MIN_HELD), false, "no hints");
}

/// `p`'s lines in the order the library gets them: each call as it returns, each GPU record half a second after
/// it ended (CUPTI's buffers handed over on the periodic flush), not at the end of the file as the older
/// library wrote them.
fn as_they_come(p: &ProcessTrace) -> ProcessTrace {
    let mut at = 0u64;
    let mut timed: Vec<(u64, usize, Line)> = Vec::new();
    for (n, line) in p.lines.iter().enumerate() {
        let gpu = match line {
            Line::Api { end, .. } | Line::Nvtx { end, .. } => {
                at = at.max(*end);
                None
            }
            Line::Resource { t, .. } | Line::End { t } | Line::Signal { t, .. } => {
                at = at.max(*t);
                None
            }
            Line::Memcpy { end, .. } | Line::Memset { end, .. } | Line::Kernel { end, .. } | Line::Sync { end, .. } => {
                Some(end + 500_000_000)
            }
            _ => None,
        };
        timed.push((gpu.unwrap_or(at), n, line.clone()));
    }
    // The end line last, whatever came before it.
    timed.sort_by_key(|(t, n, l)| (matches!(l, Line::End { .. }), *t, *n));
    ProcessTrace { lines: timed.into_iter().map(|(_, _, l)| l).collect(), ..p.clone() }
}

/// The seed's traced run of async-lab (20 s, every call written; a fifth of its calls held, by design), its lines
/// in the order the library gets them: the same answer from fewer bytes.
#[test]
fn the_bounded_trace_of_a_whole_run_is_small() {
    let path = trace_files().into_iter().find(|p| p.to_string_lossy().contains("trace-async-lab-seed-")).unwrap();
    let whole = Trace::load(&path).unwrap();
    let whole = Trace { processes: whole.processes.iter().map(as_they_come).collect() };
    let cut = Trace {
        processes: whole.processes.iter().map(|p| bounded(p, Config::with_threshold(MIN_HELD), true)).collect(),
    };
    let cut = Trace::parse(&trim::to_text(&cut)).unwrap();
    for (w, c) in whole.processes.iter().zip(&cut.processes) {
        assert_eq!(answer(w), answer(c));
    }
    let (w, c) = (trim::to_text(&whole).len(), trim::to_text(&cut).len());
    eprintln!("{}: {w} bytes whole, {c} bounded", path.display());
    assert!(c * 5 < w * 4, "{c} of {w} bytes");
}

/// A training loop as a trace: each step 100 launches (each a runtime call, its driver call and a kernel) and
/// one `cudaStreamSynchronize` held by the last kernels. The bounded trace grows with the held calls, not with
/// the calls: 500 steps write less per step than 50 (start-up aside: the first step is kept whole, before the
/// first GPU record came), and a tenth of the whole.
#[test]
fn a_long_loop_writes_its_held_calls_and_counts() {
    let loop_of = |steps: u64| -> ProcessTrace {
        let mut lines = vec![];
        let (mut t, mut corr) = (1_000_000_000u64, 1u32);
        for _ in 0..steps {
            let mut gpu = vec![];
            let mut gpu_at = t;
            for _ in 0..100 {
                let api = |domain, name: &str, start, end| Line::Api {
                    domain,
                    name: name.into(),
                    cbid: 0,
                    tid: 7,
                    corr,
                    start,
                    end,
                };
                lines.push(api(async_lab_core::trace::format::Domain::Driver, "cuLaunchKernel", t + 1_000, t + 4_000));
                lines.push(api(async_lab_core::trace::format::Domain::Runtime, "cudaLaunchKernel", t, t + 5_000));
                gpu_at = gpu_at.max(t + 8_000);
                gpu.push(Line::Kernel { name: "k".into(), start: gpu_at, end: gpu_at + 12_000, stream: 13, corr });
                gpu_at += 12_000;
                t += 10_000;
                corr += 1;
            }
            let sync = Line::Api {
                domain: async_lab_core::trace::format::Domain::Runtime,
                name: "cudaStreamSynchronize".into(),
                cbid: 0,
                tid: 7,
                corr,
                start: t,
                end: gpu_at + 3_000,
            };
            lines.push(sync);
            gpu.push(Line::Sync { sync_type: 3, start: t, end: gpu_at + 2_000, stream: Some(13), corr, event: None });
            corr += 1;
            t = gpu_at + 10_000;
            lines.extend(gpu);
        }
        lines.push(Line::End { t });
        ProcessTrace { pid: 1, program: vec!["loop".into()], lines, ..Default::default() }
    };
    let size = |p: &ProcessTrace| trim::to_text(&Trace { processes: vec![p.clone()] }).len();
    let mut per_step = vec![];
    for steps in [50, 500] {
        let whole = loop_of(steps);
        let cut = bounded(&whole, Config::with_threshold(MIN_HELD), true);
        let cut = Trace::parse(&trim::to_text(&Trace { processes: vec![cut] })).unwrap().processes.remove(0);
        if steps == 50 {
            // (The whole trace's answer takes long to compute for many calls.)
            assert_eq!(answer(&whole), answer(&cut), "{steps} steps");
        }
        per_step.push(size(&cut) as f64 / steps as f64);
        eprintln!("{steps} steps: {} of {} bytes", size(&cut), size(&whole));
        assert!(steps < 500 || size(&cut) * 10 < size(&whole), "{steps} steps: {} of {}", size(&cut), size(&whole));
    }
    assert!(per_step[1] < per_step[0], "bytes per step: {per_step:?}");
}
