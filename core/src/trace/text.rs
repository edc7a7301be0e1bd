//! A traced program in the terminal: the headline (`headline`), the findings with their remedies
//! (`findings`), then the calls that held the thread longest (with what held each), a summary per API
//! function, the held calls by place (`by_location`), and one call explained segment by segment. Tables and
//! sentences fit the width they are given (`layout`).

use super::analysis::Analysis;
use super::calls::{Summary, Traced};
use super::layout;
use super::scene::Program;
use super::words::{shorten, shorten_words};
use crate::attribution::Cause;
use comfy_table::{Cell, CellAlignment, Table};
use std::fmt::Write as _;

pub use super::words::duration;

/// What the text of a process shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct View {
    /// Calls held longer than this are listed.
    pub min_held_ns: i64,
    /// Rows of each table, findings of each part.
    pub top: usize,
    /// Start-up left out of every table (`--after-startup`).
    pub after_startup: bool,
    /// The first steps counted as warm-up (`--skip-first`).
    pub skip_first: usize,
    /// The width to fit (`None`: `--wide`).
    pub width: Option<u16>,
}

/// A process in the terminal: the headline, the findings, then the tables.
pub fn process(a: &Analysis, v: &View) -> String {
    let warm = super::warmup::warm_up(a, v.skip_first);
    let headline = super::headline::headline(a, &warm, &super::headline::totals(&a.program));
    let findings = super::findings::findings(a, &warm, v.after_startup);
    let mut out = super::headline_text::text(&headline, v.width);
    out.push('\n');
    if findings.is_empty() {
        out.push_str(&layout::wrap("No call was held by CUDA: nothing to change.", v.width, "", "  "));
        out.push('\n');
    } else {
        out.push_str(&super::findings_text::text(&findings, v.width, v.top));
    }
    let traced: Vec<Traced> = a.shown(v.after_startup);
    out.push_str(&held_tables(&a.program, &traced, &|i| a.paid_once(i), v.min_held_ns, v.top, v.width));
    out.push_str("\nPer API function:\n");
    out.push_str(&summary_table(&super::calls::summary(&a.program, &traced, v.min_held_ns), v.min_held_ns, v.width));
    out.push_str("\nBy place in the program:\n");
    out.push_str(&super::by_location_table::table(
        &a.by_location(v.min_held_ns, v.after_startup),
        v.min_held_ns,
        v.top,
        v.width,
    ));
    out
}

/// The calls that held the thread longer than `min_held_ns`, in two tables, longest first, at most `top` rows
/// each: first the calls that enqueued GPU work (the trace holds work with their correlation id: kernels,
/// copies, memsets), the calls a program expects to return at once; then the others (allocation, free,
/// synchronization, loading...), which a program expects to take their time.
pub fn held_table(p: &Program, traced: &[Traced], min_held_ns: i64, top: usize, width: Option<u16>) -> String {
    held_tables(p, traced, &|_| false, min_held_ns, top, width)
}

/// [`held_table`] without the calls `paid_once` says the program paid once (by index into `Program::calls`),
/// which the warm-up findings show, counted in its first line.
pub fn held_tables(
    p: &Program,
    traced: &[Traced],
    paid_once: &dyn Fn(usize) -> bool,
    min_held_ns: i64,
    top: usize,
    width: Option<u16>,
) -> String {
    let (once, mut held): (Vec<&Traced>, Vec<&Traced>) =
        traced.iter().filter(|t| t.held.total_ns > min_held_ns).partition(|t| paid_once(t.index));
    held.sort_by(|a, b| b.held.total_ns.cmp(&a.held.total_ns).then(a.index.cmp(&b.index)));
    let over = duration(min_held_ns);
    let apart = match once.len() {
        0 => String::new(),
        1 => " (and 1 call paid once, in the warm-up findings above)".into(),
        n => format!(" (and {n} calls paid once, in the warm-up findings above)"),
    };
    if held.is_empty() && once.is_empty() {
        return format!("No call held its thread longer than {over}.\n");
    }
    if held.is_empty() {
        return format!("No call of the steady state held its thread longer than {over}{apart}.\n");
    }
    // A call whose GPU records were lost enqueued work too.
    let (enqueued, other): (Vec<&Traced>, Vec<&Traced>) = held
        .iter()
        .partition(|t| !p.own_work(t.index).is_empty() || p.missing_records().binary_search(&t.index).is_ok());
    let longest = |n: usize| if n > top { format!(" (the {top} longest shown)") } else { String::new() };
    let mut out = layout::wrap(
        &format!(
            "{} of {} calls held their thread longer than {over}{apart}.",
            held.len(),
            p.calls_made(p.calls.len() - traced.len())
        ),
        width,
        "",
        "",
    );
    out.push('\n');
    if enqueued.is_empty() {
        out.push_str(&layout::wrap(
            "No call that enqueued GPU work (a kernel, a copy, a memset) held its thread that long.",
            width,
            "",
            "",
        ));
    } else {
        out.push_str(&layout::wrap(
            &format!(
                "{} that enqueued GPU work (a kernel, a copy, a memset), longest first{}:",
                calls_word(enqueued.len()),
                longest(enqueued.len())
            ),
            width,
            "",
            "",
        ));
        let _ = writeln!(out, "{}", rows(p, &enqueued, top, width));
    }
    if !other.is_empty() {
        out.push('\n');
        out.push_str(&layout::wrap(
            &format!(
                "{} without GPU work of {} own (allocation, free, synchronization, loading...), longest first{}:",
                calls_word(other.len()),
                if other.len() == 1 { "its" } else { "their" },
                longest(other.len())
            ),
            width,
            "",
            "",
        ));
        let _ = writeln!(out, "{}", rows(p, &other, top, width));
    }
    if p.dropped > 0 {
        let words = format!("CUPTI dropped {} GPU records: some work is missing from the trace.", p.dropped);
        out.push_str(&layout::wrap(&words, width, "", ""));
    }
    let unknown = traced.iter().filter(|t| t.class == crate::class::Class::Unknown).count();
    if let (Some(lost), true) = (&p.lost, unknown > 0) {
        let words = format!(
            "{unknown} of {} calls read unknown: the GPU records {} would rest on are missing ({}).",
            traced.len(),
            if unknown == 1 { "its class" } else { "their classes" },
            lost.words()
        );
        out.push_str(&layout::wrap(&words, width, "", ""));
    }
    out
}

/// "1 call", "3 calls".
fn calls_word(n: usize) -> String {
    format!("{n} call{}", if n == 1 { "" } else { "s" })
}

/// One table of held calls, at most `top` rows: what held each first, its `--explain` id last.
fn rows(p: &Program, held: &[&Traced], top: usize, width: Option<u16>) -> Table {
    let mut t = layout::table(width);
    t.set_header(["held", "class", "what held it", "call", "thread", "--explain"]);
    for h in held.iter().take(top) {
        let c = &p.calls[h.index];
        t.add_row([
            Cell::new(duration(h.held.total_ns)).set_alignment(CellAlignment::Right),
            Cell::new(h.class.as_str()),
            Cell::new(shorten_words(&h.cause, layout::name_limit(width))),
            Cell::new(shorten(&c.name, layout::name_limit(width))),
            Cell::new(p.threads.cell(c.tid)),
            Cell::new(c.corr),
        ]);
    }
    t
}

/// One row per API function, the most time first.
pub fn summary_table(rows: &[Summary], min_held_ns: i64, width: Option<u16>) -> String {
    let mut t = layout::table(width);
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
            Cell::new(shorten(&r.name, layout::name_limit(width))),
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
    let v = p.view(t.index);
    let c = v.call;
    let mut out = format!(
        "{} ({}, --explain {}) held its thread {}: {}.\nclass: {}\n",
        c.name,
        p.threads.words(c.tid),
        c.corr,
        duration(t.held.total_ns),
        t.cause,
        t.class
    );
    if !c.inner.is_empty() {
        let _ = writeln!(out, "driver calls inside it: {}", c.inner.join(", "));
    }
    if let Some(s) = v.stream {
        let _ = writeln!(out, "stream: {} (CUPTI's id {s})", p.stream_words(s));
    }
    for w in &v.own_work {
        let _ = writeln!(
            out,
            "its own work: {}, {} on the GPU, from {} after the call began",
            w.words_for(&c.name),
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
    for o in &v.overheads {
        let _ = writeln!(
            out,
            "{}, from {} to {} after the call began",
            o.words(),
            duration(o.span.start - c.span.start),
            duration(o.span.end - c.span.start)
        );
    }
    if let Some(l) = p.lazy_load(t.index) {
        out.push_str(&lazy_words(&l, c));
    }
    out.push_str("its time:\n");
    for s in &t.held.segments {
        let what = match s.cause {
            Cause::Own | Cause::Call => super::words::cause(s.cause).to_string(),
            _ => format!("{}: {}", super::words::cause(s.cause), s.what),
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
        let _ = writeln!(out, "a wait for {} not claimed: {}", super::words::cause(n.cause), n.why);
    }
    if let Some(share) = t.held.own_share() {
        let _ = writeln!(out, "held for {:.0}% of its own GPU work", share * 100.0);
    }
    let _ = writeln!(out, "(times within {} of each other are not told apart)", duration(t.held.resolution_ns));
    out
}

/// What `--explain` says of a lazy module load behind work (`lazy`): when the work it waited for ended and the
/// load's own time after it, against the trace's loads with nothing to wait for; or, where the rule does not take
/// that end as the release, why not.
fn lazy_words(l: &super::lazy::LazyLoad, c: &super::scene::Call) -> String {
    let Some(end) = l.waited_until else { return String::new() };
    let after = |t: i64| duration(t - c.span.start);
    match (l.rest_ns(c.span.end), l.alone_ns) {
        (Some(rest), Some(alone)) if rest > alone => format!(
            "lazy module load: it waited for the work under way when it began, until {}, then loaded for {}: longer \
             than any lazy load of this trace with nothing to wait for (the longest {}), so part of it may be \
             something the trace does not show\n",
            after(end),
            duration(rest),
            duration(alone)
        ),
        (Some(rest), Some(alone)) => format!(
            "lazy module load: it waited for the work under way when it began, until {}, then loaded for {} (the \
             trace's lazy loads with nothing to wait for took up to {})\n",
            after(end),
            duration(rest),
            duration(alone)
        ),
        (Some(rest), None) => format!(
            "lazy module load: it waited for the work under way when it began, until {}, then loaded for {} (the \
             trace holds no lazy load with nothing to wait for to compare it with)\n",
            after(end),
            duration(rest)
        ),
        (None, alone) => format!(
            "lazy module load: the work under way when it began ended {} after the call began, before the load, but \
             the call held {}, no longer than the trace's lazy loads with nothing to wait for (up to {}): the trace \
             cannot tell that it waited for that work\n",
            after(end),
            duration(c.span.len()),
            alone.map_or("?".into(), duration)
        ),
    }
}

/// The finding a call is part of and its remedy, for `--explain` (nothing for a call that returned at once):
/// whole, names uncut.
pub fn explain_finding(a: &Analysis, t: &Traced, skip_first: usize) -> String {
    let corr = a.program.calls[t.index].corr;
    let warm = super::warmup::warm_up(a, skip_first);
    let findings = super::findings::findings(a, &warm, false);
    let Some(f) = findings.iter().find(|f| f.calls_explain.contains(&corr)) else { return String::new() };
    let mut out = format!(
        "finding: {} {}{}: {} call{}{}, median {}, total {}\n",
        f.title,
        super::location::at(&f.where_words),
        if f.warm_up { " (warm-up)" } else { "" },
        f.calls,
        if f.calls == 1 { "" } else { "s" },
        super::findings::inferred_words(f),
        duration(f.median_ns),
        duration(f.total_ns)
    );
    let _ = writeln!(out, "what held them: {}", f.what);
    let _ = writeln!(out, "fix: {}", f.remedy.words);
    for e in &f.remedy.lab {
        let _ =
            writeln!(out, "the lab: {} (async-lab explain {} --replay recordings/{})", e.words, e.case, e.recording);
    }
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
    if let Some(i) = &place.inferred {
        let _ = writeln!(
            out,
            "(placed as the same call {}, --explain {}: this call has no location of its own)",
            if i.earlier { "earlier" } else { "later" },
            i.corr
        );
    }
    let chain = place.chain_words();
    match (&place.via, place.chain.is_empty()) {
        (Some(via), false) => {
            let _ = match (via.how, via.corr) {
                (super::location::ViaHow::Waiting, _) | (_, None) => writeln!(
                    out,
                    "thread {} was there, outside any CUDA call, when this call returned: {chain}",
                    via.thread
                ),
                (super::location::ViaHow::Before, Some(corr)) if via.none_waiting => writeln!(
                    out,
                    "from there to thread {}'s call {corr}, its latest before this one (every Python thread's \
                     frames were read when this call returned: none was waiting): {chain}",
                    via.thread
                ),
                (_, Some(corr)) => writeln!(out, "from there to thread {}'s call {corr}: {chain}", via.thread),
            };
        }
        (None, false) => {
            let _ = writeln!(out, "from there to the call: {chain}");
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
            let function = fr.function.as_deref().map_or("?", super::library_paths::without_parameters);
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
