//! A traced program in the terminal: the calls that held the thread longest (with what held each), a
//! summary per API function, and one call explained segment by segment.

use super::calls::{Summary, Traced};
use super::scene::Program;
use crate::attribution::Cause;
use comfy_table::{presets::UTF8_BORDERS_ONLY, Cell, CellAlignment, Table};
use std::fmt::Write as _;

/// A duration for people, from integer ns (`units::duration`).
pub fn duration(ns: i64) -> String {
    crate::units::duration(ns as f64)
}

/// The calls that held the thread longer than `min_held_ns`, longest first, at most `top` of them.
pub fn held_table(p: &Program, traced: &[Traced], min_held_ns: i64, top: usize) -> String {
    let mut held: Vec<&Traced> = traced.iter().filter(|t| t.held.total_ns > min_held_ns).collect();
    held.sort_by(|a, b| b.held.total_ns.cmp(&a.held.total_ns).then(a.index.cmp(&b.index)));
    if held.is_empty() {
        return format!("No call held its thread longer than {}.\n", duration(min_held_ns));
    }
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY);
    t.set_header(["held", "call", "corr", "thread", "class", "what held it"]);
    for h in held.iter().take(top) {
        let c = &p.calls[h.index];
        t.add_row([
            Cell::new(duration(h.held.total_ns)).set_alignment(CellAlignment::Right),
            Cell::new(&c.name),
            Cell::new(c.corr),
            Cell::new(c.tid),
            Cell::new(h.class.as_str()),
            Cell::new(&h.cause),
        ]);
    }
    let mut out = format!(
        "{} of {} calls held their thread longer than {}{}:\n{t}\n",
        held.len(),
        traced.len(),
        duration(min_held_ns),
        if held.len() > top { format!(" (the {top} longest)") } else { String::new() }
    );
    if p.dropped > 0 {
        let _ = writeln!(out, "CUPTI dropped {} GPU records: some work is missing from the trace.", p.dropped);
    }
    out
}

/// One row per API function, the most time first.
pub fn summary_table(rows: &[Summary], min_held_ns: i64) -> String {
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY);
    t.set_header([
        "API function".to_string(),
        "calls".into(),
        format!("held > {}", duration(min_held_ns)),
        "total".into(),
        "median".into(),
        "longest".into(),
    ]);
    for r in rows {
        t.add_row([
            Cell::new(&r.name),
            Cell::new(r.calls).set_alignment(CellAlignment::Right),
            Cell::new(r.held_calls).set_alignment(CellAlignment::Right),
            Cell::new(duration(r.total_ns)).set_alignment(CellAlignment::Right),
            Cell::new(duration(r.median_ns)).set_alignment(CellAlignment::Right),
            Cell::new(duration(r.max_ns)).set_alignment(CellAlignment::Right),
        ]);
    }
    format!("{t}\n")
}

/// One call in words: when, its own work, and its time segment by segment.
pub fn explain(p: &Program, t: &Traced) -> String {
    let c = &p.calls[t.index];
    let mut out = format!(
        "{} (correlation {}, thread {}) held its thread {}: {}.\nclass: {}\n",
        c.name,
        c.corr,
        c.tid,
        duration(t.held.total_ns),
        t.cause,
        t.class
    );
    if !c.inner.is_empty() {
        let _ = writeln!(out, "driver calls inside it: {}", c.inner.join(", "));
    }
    if let Some(s) = p.stream_of(t.index) {
        let _ = writeln!(out, "stream: {s}");
    }
    for w in p.own_work(t.index) {
        let _ = writeln!(
            out,
            "its own work: {}, {} on the GPU, from {} after the call began",
            w.words(),
            duration(w.span.len()),
            duration(w.span.start - c.span.start)
        );
    }
    if t.module_loads > 0 {
        let _ = writeln!(out, "module loads inside it: {} (lazy loading)", t.module_loads);
    }
    out.push_str("its time:\n");
    for s in &t.held.segments {
        let what = match s.cause {
            Cause::Own | Cause::Call => s.cause.words().to_string(),
            _ => format!("{}: {}", s.cause.words(), s.what),
        };
        let _ = writeln!(out, "  {:>10}  {what}", duration(s.span.len()));
    }
    if let Some(share) = t.held.own_share() {
        let _ = writeln!(out, "held for {:.0}% of its own GPU work", share * 100.0);
    }
    let _ = writeln!(out, "(times within {} of each other are not told apart)", duration(t.held.resolution_ns));
    out
}
