//! The programs written the way users write them (`reference/frameworks/`: the ResNet-18 training loop with a
//! DataLoader, Hugging Face `generate()`, CuPy, JAX, the C++ cuBLAS program), traced on the H200 by
//! `validate.sh` at `26adb99` and committed as `recordings/traces/trace-<program>-*-26adb99.jsonl.gz`: each such trace is
//! placed by the program's own lines. What every one of them must hold:
//! - of the calls held past 1 ms (past 200 µs where the trace located calls from 200 µs: `--locate-over`'s
//!   default since then), at least 95% are placed: on a thread that runs Python, its location carries Python
//!   frames, or it has none and is placed at a Python line as the same call site was; on a thread that runs
//!   none, it carries the Python line that waited for it or native frames; in a native program, its location
//!   carries a source line of the program's own;
//! - where the trace read every Python thread's frames when a call of a thread that runs no Python returned
//!   (format 5: XLA's threads, PyTorch's autograd thread), at least 90% of those threads' calls held past 1 ms
//!   are placed at the Python line that was waiting then (a Python thread inside a call of its own, or waiting
//!   outside one), and none is placed at "the latest call" where a Python thread was waiting;
//! - every call held 10 ms or more has a location;
//! - the by-location table's first rows (of the calls held past the trace's location threshold, after
//!   start-up) are the program's own lines, with their text.
//!
//! Start-up (the context's creation and the libraries' first loads, reported apart) and a Python thread's
//! located calls after its last one with Python frames (the interpreter ending: JAX's and PyTorch's frees and
//! unloads at exit, which no Python line made) are left out of the first and last checks.
//!
//! The checks run on every committed trace that matches, and on synthetic traces that pass them and that break
//! each of them, so they are exercised whether or not a trace is committed.

use async_lab_core::trace::analysis::Analysis;
use async_lab_core::trace::format::{Line, Trace};
use async_lab_core::trace::location::{user_native, Kind};
use async_lab_tests::synthetic_places as syn;
use std::path::PathBuf;

/// The programs whose committed traces are checked.
const PROGRAMS: [&str; 6] =
    ["torch_resnet_train", "hf_generate", "cupy_program", "jax_program", "jax_train", "cublas_program"];
/// Calls held past this must be placed (or past the trace's location threshold, where it is higher).
const PLACED_OVER_NS: i64 = 200_000;
/// A native program's calls held past this must be placed (its native frames are walked within a budget).
const NATIVE_PLACED_OVER_NS: i64 = 1_000_000;
/// The calls of threads that run no Python held past this must be placed at the line that waited.
const HELPERS_OVER_NS: i64 = 1_000_000;
/// The share of them that must be.
const HELPERS_SHARE: f64 = 0.90;
/// The share of them that must be.
const PLACED_SHARE: f64 = 0.95;
/// Calls held this long or longer must have a location.
const LOCATED_FROM_NS: i64 = 10_000_000;
/// How many of the by-location table's first rows must be the program's own lines.
const FIRST_ROWS: usize = 3;

/// What one process's trace breaks of the checks, in words (empty: it holds all of them).
fn broken(trace: &Trace) -> Vec<String> {
    let mut out = Vec::new();
    for p in &trace.processes {
        let a = Analysis::of(p);
        let python = p.lines.iter().any(|l| matches!(l, Line::Location { python, .. } if !python.is_empty()));
        let (mut held, mut placed) = (0usize, 0usize);
        // A thread's calls after its last call with Python frames ran while the interpreter was ending (JAX's
        // and PyTorch's frees and unloads at exit): no Python line exists to place them by.
        let last_python: std::collections::HashMap<u64, i64> = a.traced.iter().fold(Default::default(), |mut m, t| {
            let c = &a.program.calls[t.index];
            if !a.locations.frames(c).python.is_empty() {
                let e = m.entry(c.tid).or_insert(c.span.start);
                *e = (*e).max(c.span.start);
            }
            m
        });
        let stated = p.lines.iter().find_map(|l| match l {
            Line::Setup { locate_over_ns, .. } => Some(*locate_over_ns as i64),
            _ => None,
        });
        let threshold = stated.unwrap_or(20_000);
        // (Calls whose location was taken and held no Python frame; or, where Python frames are read for every
        // call held past the location threshold (format 5's 200 µs), calls past it with no location at all: they
        // had none to read.)
        let every_python_frame_read = stated.is_some_and(|t| t <= PLACED_OVER_NS);
        let at_exit = |c: &async_lab_core::trace::scene::Call, held: i64| {
            let f = a.locations.frames(c);
            let frameless = !f.native.is_empty() || (every_python_frame_read && held > threshold);
            python && f.python.is_empty() && frameless && last_python.get(&c.tid).is_some_and(|&t| c.span.start > t)
        };
        // Python frames are read for every call held past the threshold; a native program's frames only within
        // their budget, so its calls are checked from 1 ms, as before the threshold came down.
        let placed_over = if python { PLACED_OVER_NS.max(threshold) } else { NATIVE_PLACED_OVER_NS.max(threshold) };
        // Start-up (the context's creation, the libraries' first loads) is reported apart, before the program's
        // own code runs: its calls are not the places the checks are about.
        for t in a.traced.iter().filter(|t| t.held.total_ns > placed_over && !a.startup[t.index]) {
            let c = &a.program.calls[t.index];
            if at_exit(c, t.held.total_ns) {
                continue;
            }
            let f = a.locations.frames(c);
            held += 1;
            let ok = if !python {
                user_native(f.native).is_some_and(|i| f.native[i].line.is_some())
            } else if a.locations.runs_no_python(c.tid) {
                a.places[t.index].via.is_some() || !f.native.is_empty()
            } else {
                let place = &a.places[t.index];
                !f.python.is_empty() || (place.kind == Kind::Python && place.inferred.is_some())
            };
            placed += usize::from(ok);
        }
        if held > 0 && (placed as f64) < PLACED_SHARE * held as f64 {
            out.push(format!(
                "process {}: {placed} of {held} calls held past {} are placed",
                p.pid,
                async_lab_core::trace::text::duration(placed_over)
            ));
        }
        out.extend(helpers_broken(&a));
        for t in a.traced.iter().filter(|t| t.held.total_ns >= LOCATED_FROM_NS) {
            let c = &a.program.calls[t.index];
            let f = a.locations.frames(c);
            if f.python.is_empty() && f.native.is_empty() {
                out.push(format!(
                    "process {}: {} (corr {}) held {} ns without a location",
                    p.pid, c.name, c.corr, t.held.total_ns
                ));
            }
        }
        // The table of the calls held past the trace's location threshold (a call held less has no location
        // to place it by, and is grouped under its API function's name).
        let table = a.by_location(threshold, true);
        // Rows of calls made while the interpreter was ending name their API function: not among the first.
        let ending = |r: &&async_lab_core::trace::by_location::Row| {
            r.place.kind == Kind::Api
                && a.traced.iter().any(|t| {
                    let c = &a.program.calls[t.index];
                    c.name == r.place.words && at_exit(c, t.held.total_ns)
                })
        };
        for r in table.rows.iter().filter(|r| !ending(r)).take(FIRST_ROWS) {
            let own = matches!(r.place.kind, Kind::Python | Kind::Native) && r.place.own && r.place.text.is_some();
            if !own {
                out.push(format!(
                    "process {}: the row {:?} is not a line of the program's own with its text",
                    p.pid,
                    r.place.shown()
                ));
            }
        }
    }
    out
}

/// What a process breaks of the check of its threads that run no Python (see the module's doc), where the trace
/// read the Python threads' frames when their calls returned (format 5; nothing to check before).
fn helpers_broken(a: &Analysis) -> Vec<String> {
    use async_lab_core::trace::location::ViaHow;
    use async_lab_core::trace::waiting::waited;
    let mut out = Vec::new();
    let read = a.program.calls.iter().any(|c| !a.locations.others(c).is_empty());
    if !read {
        return out;
    }
    let (mut held, mut placed) = (0usize, 0usize);
    for t in a.traced.iter().filter(|t| t.held.total_ns > HELPERS_OVER_NS && !a.startup[t.index]) {
        let c = &a.program.calls[t.index];
        if !a.locations.runs_no_python(c.tid) {
            continue;
        }
        held += 1;
        let place = &a.places[t.index];
        let how = place.via.as_ref().map(|v| v.how);
        placed += usize::from(matches!(how, Some(ViaHow::Containing | ViaHow::Waiting)));
        if how == Some(ViaHow::Before) && a.locations.others(c).iter().any(waited) {
            out.push(format!(
                "process {}: {} (corr {}) is placed at the latest call though a Python thread was waiting",
                a.process.pid, c.name, c.corr
            ));
        }
    }
    if held > 0 && (placed as f64) < HELPERS_SHARE * held as f64 {
        out.push(format!(
            "process {}: {placed} of {held} calls of threads that run no Python held past 1 ms are placed at the line \
             that waited",
            a.process.pid
        ));
    }
    out
}

/// The runs of `validate.sh` whose traces are checked, by the commit they were made at (the file name's end): a
/// new run's traces are checked once its commit is added here.
const RUNS: [&str; 2] = ["26adb99", "0b9db24"];

/// The committed traces of [`PROGRAMS`] from `validate.sh`'s run at `26adb99` (the framework programs' traces
/// of `40b2499`, some of the same programs, were made before their locations were checked: `frameworks.rs`).
fn committed() -> Vec<PathBuf> {
    let dir = async_lab_tests::project_root().join(async_lab_tests::TRACES);
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            PROGRAMS.iter().any(|prog| name.starts_with(&format!("trace-{prog}-")))
                && RUNS.iter().any(|run| name.ends_with(&format!("-{run}.jsonl.gz")))
        })
        .collect();
    found.sort();
    found
}

#[test]
fn every_committed_trace_of_a_users_program_is_placed_by_its_own_lines() {
    let traces = committed();
    let mut failures = Vec::new();
    for path in &traces {
        let trace = Trace::load(path).unwrap();
        failures.extend(broken(&trace).into_iter().map(|b| format!("{}: {b}", path.display())));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Which were checked, for the log (none until the H200's traces are committed; the synthetic ones below
    // exercise the checks either way).
    eprintln!("checked {} committed trace(s): {traces:?}", traces.len());
}

#[test]
fn the_checks_pass_on_programs_placed_by_their_lines() {
    for text in [
        syn::python_training_step(),
        syn::native_program_with_source(),
        syn::jax_training_loop(),
        syn::backward_while_the_main_thread_waits(),
    ] {
        let trace = Trace::parse(&text).unwrap();
        assert_eq!(broken(&trace), Vec::<String>::new());
    }
}

/// Each check, broken on its own, is found.
#[test]
fn the_checks_find_what_a_trace_lacks() {
    let lines = |text: &str| -> Vec<String> { text.lines().map(str::to_owned).collect() };
    let join = |l: &[String]| l.iter().map(|l| format!("{l}\n")).collect::<String>();
    let step = lines(&syn::python_training_step());
    let broken_by = |keep: &dyn Fn(&str) -> bool, edit: &dyn Fn(&str) -> String| {
        let kept: Vec<String> = step.iter().filter(|l| keep(l)).map(|l| edit(l)).collect();
        broken(&Trace::parse(&join(&kept)).unwrap())
    };
    let all = |_: &str| true;
    let same = |l: &str| l.to_owned();
    // The 12 ms copy's location lost: not located, and fewer placed.
    let b = broken_by(&|l| !(l.contains(r#""type":"location""#) && l.contains(r#""corr":30"#)), &same);
    assert!(b.iter().any(|s| s.contains("cudaMemcpyAsync (corr 30) held")), "{b:?}");
    assert!(b.iter().any(|s| s.contains("3 of 4 calls held past 200 µs are placed")), "{b:?}");
    // No source lines: the first rows have no text.
    let b = broken_by(&|l| !l.contains(r#""type":"source""#), &same);
    assert!(b.iter().any(|s| s.contains("not a line of the program's own")), "{b:?}");
    // Frames of the installed packages only: a library's line leads the table.
    let b = broken_by(&all, &|l| l.replace("/home/me/train.py", "/usr/lib/python3.12/site-packages/train.py"));
    assert!(b.iter().any(|s| s.contains("not a line of the program's own")), "{b:?}");
    // A native program whose frames carry no source line is not placed.
    let native: Vec<String> = lines(&syn::native_program_with_source())
        .iter()
        .map(|l| {
            if l.contains(r#""type":"location""#) {
                l.replace(r#""file":"/home/me/app/main.cu","#, "")
            } else {
                l.clone()
            }
        })
        .collect();
    let b = broken(&Trace::parse(&join(&native)).unwrap());
    assert!(b.iter().any(|s| s.contains("0 of 1 calls held past 1.0 ms are placed")), "{b:?}");
    // XLA's calls while the main thread ran Python (it held the GIL): none placed at a line that waited.
    let jax = syn::jax_training_loop()
        .replace(r#""gil":false,"python":[{"file":"/usr/local"#, r#""gil":true,"python":[{"file":"/usr/local"#);
    let b = broken(&Trace::parse(&jax).unwrap());
    assert!(
        b.iter().any(|s| s.contains("calls of threads that run no Python held past 1 ms are placed at the line")),
        "{b:?}"
    );
}
