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

/// The calls that held the thread longer than `min_held_ns`, in two tables, longest first, at most `top` rows
/// each: first the calls that enqueued GPU work (the trace holds work with their correlation id: kernels,
/// copies, memsets), the calls a program expects to return at once; then the others (allocation, free,
/// synchronization, loading...), which a program expects to take their time.
pub fn held_table(p: &Program, traced: &[Traced], min_held_ns: i64, top: usize) -> String {
    let mut held: Vec<&Traced> = traced.iter().filter(|t| t.held.total_ns > min_held_ns).collect();
    held.sort_by(|a, b| b.held.total_ns.cmp(&a.held.total_ns).then(a.index.cmp(&b.index)));
    let over = duration(min_held_ns);
    if held.is_empty() {
        return format!("No call held its thread longer than {over}.\n");
    }
    // A call whose GPU records were lost enqueued work too.
    let (enqueued, other): (Vec<&Traced>, Vec<&Traced>) = held
        .iter()
        .partition(|t| !p.own_work(t.index).is_empty() || p.missing_records().binary_search(&t.index).is_ok());
    let longest = |n: usize| if n > top { format!(" (the {top} longest shown)") } else { String::new() };
    let mut out = format!(
        "{} of {} calls held their thread longer than {over}.\n\n",
        held.len(),
        p.calls_made(p.calls.len() - traced.len())
    );
    if enqueued.is_empty() {
        let _ = writeln!(out, "No call that enqueued GPU work (a kernel, a copy, a memset) held its thread that long.");
    } else {
        let _ = writeln!(
            out,
            "{} that enqueued GPU work (a kernel, a copy, a memset), longest first{}:\n{}",
            calls_word(enqueued.len()),
            longest(enqueued.len()),
            rows(p, &enqueued, top)
        );
    }
    if !other.is_empty() {
        let _ = writeln!(
            out,
            "\n{} without GPU work of {} own (allocation, free, synchronization, loading...), longest first{}:\n{}",
            calls_word(other.len()),
            if other.len() == 1 { "its" } else { "their" },
            longest(other.len()),
            rows(p, &other, top)
        );
    }
    if p.dropped > 0 {
        let _ = writeln!(out, "CUPTI dropped {} GPU records: some work is missing from the trace.", p.dropped);
    }
    let unknown = traced.iter().filter(|t| t.class == crate::class::Class::Unknown).count();
    if let (Some(lost), true) = (&p.lost, unknown > 0) {
        let _ = writeln!(
            out,
            "{unknown} of {} calls read unknown: the GPU records {} would rest on are missing ({}).",
            traced.len(),
            if unknown == 1 { "its class" } else { "their classes" },
            lost.words()
        );
    }
    out
}

/// "1 call", "3 calls".
fn calls_word(n: usize) -> String {
    format!("{n} call{}", if n == 1 { "" } else { "s" })
}

/// One table of held calls, at most `top` rows.
fn rows(p: &Program, held: &[&Traced], top: usize) -> Table {
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
    t
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
        let _ = writeln!(out, "stream: {} (CUPTI's id {s})", p.stream_words(s));
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
    if t.contexts > 0 {
        let _ = writeln!(out, "contexts created inside it: {}", t.contexts);
    }
    if t.module_loads > 0 {
        let how = if super::calls::is_load(&c.name) { "loaded at run time" } else { "lazy loading" };
        let _ = writeln!(out, "module loads inside it: {} ({how})", t.module_loads);
    }
    // The driver's own records of what it did inside the call: the evidence for a load after a drain, a wait
    // for room in a full launch queue.
    for o in p.overheads_of(t.index) {
        let _ = writeln!(
            out,
            "{}, from {} to {} after the call began",
            o.words(),
            duration(o.span.start - c.span.start),
            duration(o.span.end - c.span.start)
        );
    }
    out.push_str("its time:\n");
    for s in &t.held.segments {
        let what = match s.cause {
            Cause::Own | Cause::Call => s.cause.words().to_string(),
            _ => format!("{}: {}", s.cause.words(), s.what),
        };
        let _ = writeln!(out, "  {:>10}  {what}", duration(s.span.len()));
    }
    if let Some(e) = &t.basis {
        let _ = writeln!(
            out,
            "the lab saw {} {}{}: experiment {} (rule {}), in recordings/{} (async-lab explain {} --replay recordings/{})",
            e.function,
            e.way.words(),
            if e.condition == super::capability::Condition::Always { String::new() } else { format!(" {}", e.condition.words()) },
            e.case,
            e.rule,
            e.recording,
            e.case,
            e.recording
        );
    }
    // A long call may overlap a whole stream's worth of work: the first few, then how many more (the JSON
    // report keeps every one).
    const OVERLAPPED_SHOWN: usize = 8;
    for s in t.held.overlapped.iter().take(OVERLAPPED_SHOWN) {
        let _ = writeln!(
            out,
            "ran during it, not waited for: {} (from {} to {} after the call began)",
            s.what,
            duration(s.span.start - c.span.start),
            duration(s.span.end - c.span.start)
        );
    }
    if let Some(last) = t.held.overlapped.last().filter(|_| t.held.overlapped.len() > OVERLAPPED_SHOWN) {
        let _ = writeln!(
            out,
            "... and {} more that ran during it, not waited for, the last ending {} after the call began",
            t.held.overlapped.len() - OVERLAPPED_SHOWN,
            duration(last.span.end - c.span.start)
        );
    }
    for n in &t.not_claimed {
        let _ = writeln!(out, "a wait for {} not claimed: {}", n.cause.words(), n.why);
    }
    if let Some(share) = t.held.own_share() {
        let _ = writeln!(out, "held for {:.0}% of its own GPU work", share * 100.0);
    }
    let _ = writeln!(out, "(times within {} of each other are not told apart)", duration(t.held.resolution_ns));
    out
}

/// Where one call was made (for `--explain`): its Python frames, its native frames and the NVTX ranges it
/// was made in, innermost first, and its place (`place`: the innermost user frame the by-location table
/// groups it by, with its text and the chain below it).
pub fn explain_location(
    locations: &super::location::Locations,
    call: &super::scene::Call,
    place: &super::location::Place,
) -> String {
    let f = locations.frames(call);
    let mut out = format!("where: {}\n", place.shown());
    match (&place.via, place.chain.is_empty()) {
        (Some(via), false) => {
            let _ = writeln!(out, "from there to thread {}'s call {}: {}", via.thread, via.corr, place.chain_words());
        }
        (None, false) => {
            let _ = writeln!(out, "from there to the call: {}", place.chain_words());
        }
        _ => {}
    }
    if let Some(ns) = f.took_ns {
        let _ = writeln!(out, "(taking its location cost the thread {})", duration(ns as i64));
    }
    if !f.python.is_empty() {
        out.push_str("Python frames, innermost first:\n");
        for fr in f.python {
            let _ = writeln!(out, "  {}:{} {}", fr.file, fr.line, fr.function);
        }
    }
    if !f.native.is_empty() {
        // The frames a reader needs come first; a deep C++ stack is cut (the trace and the JSON keep all).
        const SHOWN: usize = 16;
        out.push_str("native frames, innermost first:\n");
        for fr in f.native.iter().take(SHOWN) {
            let source = match (&fr.file, fr.line) {
                (Some(file), Some(line)) => format!(" at {file}:{line}"),
                (Some(file), None) => format!(" at {file}"),
                _ => String::new(),
            };
            let function = fr.function.as_deref().map_or("?", super::location::without_parameters);
            let module = fr.module.rsplit('/').next().unwrap_or(&fr.module);
            let _ = writeln!(out, "  {function} ({module}+{:#x}){source}", fr.offset);
        }
        if f.native.len() > SHOWN {
            let _ = writeln!(out, "  ... {} more", f.native.len() - SHOWN);
        }
    }
    if !f.nvtx.is_empty() {
        out.push_str("NVTX ranges, innermost first:\n");
        for r in &f.nvtx {
            let domain = r.domain.as_deref().map(|d| format!(" (domain {d})")).unwrap_or_default();
            let _ = writeln!(out, "  {}{domain}, {}", r.name, duration(r.end - r.start));
        }
    }
    if f.python.is_empty() && f.native.is_empty() && f.nvtx.is_empty() {
        out.push_str("(the trace holds no code location or NVTX range for it)\n");
    }
    out
}
