//! The framework programs of `reference/frameworks/` (PyTorch, CuPy, JAX, a C++ program built with symbols),
//! traced on the H200: each committed trace (`recordings/traces/trace-<program>-*-40b2499.jsonl.gz`, cut to its held
//! calls and the calls inside the program's steps) beside the program's own timing of its steps
//! (`recordings/steps-<program>-*.txt`). What these tests hold:
//! - no wait is claimed without the evidence rules: every call classed as waiting names the lab's
//!   experiment that shows its function waits that way, and `--explain` prints it;
//! - each step's row (its own time, the held time of the calls inside it, the longest call's class and what
//!   held it) is pinned by a snapshot and is the row docs/trace-validation.md shows;
//! - the calls inside a step never held longer than the step took (the clock pair puts them inside it).

use async_lab_core::classify::Class;
use async_lab_core::trace::format::Trace;
use async_lab_core::trace::scene::Program;
use async_lab_core::trace::{calls, steps, text};
use std::path::PathBuf;

/// The commit and date of the framework run, as the files are named.
const RUN: &str = "h200-driver580.159.04-2026-12-04-40b2499";

/// Each framework trace with its program's steps.
fn runs() -> Vec<(String, PathBuf, PathBuf)> {
    let dir = async_lab_tests::project_root().join("recordings");
    let programs = [
        "torch_transfers",
        "torch_threads",
        "torch_train",
        "torch_train-all-calls",
        "cupy_program",
        "jax_program",
        "native_program",
    ];
    programs
        .iter()
        .map(|p| {
            let trace = dir.join(format!("traces/trace-{p}-{RUN}.jsonl.gz"));
            let steps = dir.join(format!("steps-{p}-{RUN}.txt"));
            assert!(trace.exists() && steps.exists(), "{} or {} is missing", trace.display(), steps.display());
            (p.to_string(), trace, steps)
        })
        .collect()
}

#[test]
fn every_wait_claimed_in_a_framework_trace_names_the_lab_experiment_behind_it() {
    let mut claims = 0;
    for (name, trace, _) in runs() {
        let trace = Trace::load(&trace).unwrap();
        for process in &trace.processes {
            let p = Program::of(process);
            for t in calls::classify(&p) {
                let waits = matches!(t.class, Class::WaitedForStream | Class::DeviceSync | Class::WaitedForThread);
                if !waits {
                    continue;
                }
                claims += 1;
                let c = &p.calls[t.index];
                let basis = t.basis.as_ref().unwrap_or_else(|| panic!("{name}: {} ({}) has no basis", c.name, c.corr));
                let words = text::explain(&p, &t);
                assert!(words.contains(&format!("experiment {}", basis.case)), "{name}: {words}");
                // The release is shown: the call's wait ends at a holder's end.
                let released = t.held.released_by().unwrap();
                assert!(released.span.end <= c.span.end, "{name}: {words}");
            }
        }
    }
    assert!(claims > 20, "only {claims} wait claims in the framework traces");
}

#[test]
fn each_programs_steps_beside_the_trace_are_as_docs_trace_validation_md_shows() {
    let doc = std::fs::read_to_string(async_lab_tests::project_root().join("docs/trace-validation.md")).unwrap();
    let mut missing: Vec<String> = Vec::new();
    for (name, trace_path, steps_path) in runs() {
        let trace = Trace::load(&trace_path).unwrap();
        let steps = steps::parse(&std::fs::read_to_string(&steps_path).unwrap()).unwrap();
        assert!(!steps.is_empty(), "{name}");
        let process = &trace.processes[0];
        let p = Program::of(process);
        let traced = calls::classify(&p);
        let rows = steps::compare(process, &p, &traced, &steps).expect("a trace of format 3 has its clock pair");
        assert_eq!(rows.len(), steps.len(), "{name}");
        for r in &rows {
            // The calls inside a step ran inside it: together they cannot have held longer.
            assert!(r.all_held_ns <= r.own_ns, "{name} {}: held {} of {}", r.step.step, r.all_held_ns, r.own_ns);
        }
        let table = steps::markdown(&rows);
        insta::assert_snapshot!(format!("frameworks-steps-{name}"), table);
        if name != "torch_train-all-calls" {
            missing.extend(table.lines().skip(2).filter(|line| !doc.contains(line)).map(str::to_owned));
        }
    }
    assert!(missing.is_empty(), "docs/trace-validation.md does not show these steps' rows:\n{}", missing.join("\n"));
}
