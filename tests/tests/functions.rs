//! The function table (`trace::functions`) over every function the tracer has met: each distinct function of
//! the committed traces (their calls, the driver calls inside them, the calls a bounded trace only counted)
//! listed with what the table says it does, as a snapshot a reader checks once; none of them may be missing
//! from the table, and none that the tracer subscribes to may read as a getter that never holds.

use async_lab_core::trace::format::{Line, Trace};
use async_lab_core::trace::functions::{self, Does};
use async_lab_core::trace::subscribed::may_hold;
use std::collections::BTreeSet;

/// Every function name of the committed traces, as the table knows it (without suffixes).
fn traced_functions() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for path in async_lab_tests::trace_files() {
        let trace = Trace::load(&path).unwrap();
        for line in trace.processes.iter().flat_map(|p| &p.lines) {
            match line {
                Line::Api { name, .. } => {
                    names.insert(functions::function_of(name).to_owned());
                }
                Line::Counts { calls, .. } => {
                    names.extend(calls.iter().map(|c| functions::function_of(&c.name).to_owned()));
                }
                _ => {}
            }
        }
    }
    names
}

#[test]
fn every_traced_function_has_its_category() {
    let names = traced_functions();
    assert!(names.len() > 100, "{}", names.len());
    let missing: Vec<&String> = names.iter().filter(|n| functions::does(n) == Does::Other).collect();
    assert!(missing.is_empty(), "not in the function table (trace-format/src/functions.rs): {missing:?}");
    let mut listing = String::new();
    for name in &names {
        let does = functions::does(name);
        // A getter the tracer leaves out appears only in a trace of every call.
        assert!(!(does == Does::Answers && may_hold(name)), "{name}: a subscribed call read as a getter");
        listing.push_str(&format!("{name:<56} {:?}: {}\n", does, does.words()));
    }
    insta::assert_snapshot!("traced-functions", listing);
}
