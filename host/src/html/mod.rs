//! `async-lab report`: one self-contained HTML page from one or more recordings — see it, don't just read it.
//!
//! The page has inline CSS and inline SVG only: no script, no font, image or style sheet from anywhere else,
//! so it opens the same from a file, an e-mail or a CI artifact. Each recording is a section with its machine
//! header, its summary and findings, a paragraph on how its clocks were aligned, the plots its data allows
//! (size sweep, launch queue, scheduling flags) and, for every experiment, a timeline of one representative
//! repetition beside its class, rule, expectation, verdict and explanation.
//!
//! Element ids, for tests and links: `timeline-<experiment id with / replaced by ->` for each timeline (the
//! seed's steps are `<g>` groups with their own ids inside their sequence's timeline, `timeline-seed-pageable`),
//! `case-<...>` for each experiment's card, and `plot-sweep`, `plot-queue`, `plot-wait` for the plots. When
//! several recordings hold the same experiment, later ones get `--r<N>` appended (N: the recording's number).
//!
//! - `timeline.rs`: what a timeline shows, from a repetition's raw fields; `draw.rs`: drawing it as SVG;
//!   `axis.rs`: ticks and numbers.
//! - `plots.rs`: the plots, with plotters' SVG backend.
//! - `clocks.rs`: the clock-alignment paragraph.

mod axis;
mod clocks;
mod draw;
mod plots;
mod timeline;

use crate::record::{CaseRecord, Family, Recording};
use crate::report::{self, CaseResult, Report};
use crate::rules::Verdict;
use anyhow::{ensure, Context as _};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const CSS: &str = include_str!("page.css");

/// A recording and the name it goes by on the page (its file name).
pub struct Source {
    pub label: String,
    pub recording: Recording,
}

/// `async-lab report --replay FILE... --out PATH`: loads the recordings and writes the page.
pub fn write(paths: &[PathBuf], out: &Path) -> anyhow::Result<()> {
    ensure!(!paths.is_empty(), "a report needs at least one recording (--replay FILE; make one with --record FILE)");
    let mut sources = Vec::new();
    for path in paths {
        sources.push(Source { label: path.display().to_string(), recording: Recording::load(path)? });
    }
    let page = render(&sources);
    std::fs::write(out, page).with_context(|| format!("cannot write {}", out.display()))?;
    Ok(())
}

/// Text for HTML: `&`, `<`, `>`, `"` and `'` escaped (safe in text and in quoted attributes).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `prefix-` and the experiment id with `/` (and anything not allowed in an id) replaced by `-`.
pub fn element_id(prefix: &str, experiment: &str) -> String {
    let slug: String =
        experiment.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '-' }).collect();
    format!("{prefix}-{slug}")
}

/// The element ids handed out so far: one page never has the same id twice.
#[derive(Default)]
struct Ids(HashSet<String>);

impl Ids {
    /// `base`, or where it is taken `base--r<recording>` (then a counter).
    fn take(&mut self, base: String, recording: usize) -> String {
        let mut id = base.clone();
        let mut n = 1;
        while self.0.contains(&id) {
            id = if n == 1 { format!("{base}--r{recording}") } else { format!("{base}--r{recording}-{n}") };
            n += 1;
        }
        self.0.insert(id.clone());
        id
    }
}

/// The whole page.
pub fn render(sources: &[Source]) -> String {
    let mut ids = Ids::default();
    let mut o = String::new();
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    o.push_str("<title>async-lab report</title>\n<style>\n");
    o.push_str(CSS);
    o.push_str("</style>\n</head>\n<body>\n<header>\n<h1>async-lab: which CUDA calls made the host thread wait</h1>\n");
    let _ = writeln!(
        o,
        "<p class=\"muted\">Written by async-lab {} from {} recording{}: {}. Every class and verdict below is \
         recomputed from the raw repetitions; nothing on this page is fetched from anywhere.</p>",
        escape(env!("CARGO_PKG_VERSION")),
        sources.len(),
        if sources.len() == 1 { "" } else { "s" },
        sources
            .iter()
            .enumerate()
            .map(|(i, s)| format!("<a href=\"#recording-{}\"><code>{}</code></a>", i + 1, escape(&s.label)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    o.push_str(LEGEND);
    o.push_str("</header>\n<main>\n");
    for (i, source) in sources.iter().enumerate() {
        recording_section(&mut o, &mut ids, i + 1, source);
    }
    o.push_str(
        "</main>\n<footer><p>async-lab report · inline HTML, CSS and SVG only.</p></footer>\n</body>\n</html>\n",
    );
    o
}

const LEGEND: &str = r#"<div class="legend">
<table>
<tr><th>class</th><th>what the host thread did</th></tr>
<tr><td class="class">async</td><td>returned while the work ahead of the call was still running, without waiting for it</td></tr>
<tr><td class="class">staged</td><td>returned before its own transfer ran, after copying the data into the driver's staging buffer</td></tr>
<tr><td class="class">waited-then-staged</td><td>waited for the work ahead of it in its stream, then returned before its own work finished</td></tr>
<tr><td class="class">blocking</td><td>returned only after its own work had finished</td></tr>
<tr><td class="class">device-sync</td><td>waited for work on another stream, work it does not depend on: the whole device drained</td></tr>
</table>
<table>
<tr><th>on a timeline</th><th>means</th></tr>
<tr><td><span class="swatch host"></span>host thread</td><td>the calling thread inside the call under test (host clock)</td></tr>
<tr><td><span class="swatch blocker"></span>GPU: blocker</td><td>the blocker kernel enqueued before the call (its <code>%globaltimer</code> stamps)</td></tr>
<tr><td><span class="swatch work"></span>GPU: the call's work</td><td>from the event before the call's work to the one after it (CUDA events)</td></tr>
<tr><td><span class="swatch returned"></span>call returned</td><td>the host thread had control again</td></tr>
<tr><td><span class="swatch finished"></span>operation finished</td><td>the call's own work was done on the GPU</td></tr>
<tr><td><span class="swatch approx"></span>dashed</td><td>placed by an estimate: the recording has no measured clock offset</td></tr>
</table>
</div>
"#;

fn recording_section(o: &mut String, ids: &mut Ids, number: usize, source: &Source) {
    let rec = &source.recording;
    let report = report::build(rec);
    let _ = writeln!(o, "<section class=\"recording\" id=\"recording-{number}\">");
    let _ = writeln!(o, "<h2>Recording {number}: <code>{}</code></h2>", escape(&source.label));
    machine(o, &report, rec);
    let s = &report.summary;
    let count = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let inconclusive = if s.inconclusive > 0 {
        format!(" {} no class the readings could decide.", count(s.inconclusive, "has", "have"))
    } else {
        String::new()
    };
    let not_run = if s.not_run > 0 {
        format!(" {} not run on this machine ({}).", count(s.not_run, "was", "were"), s.not_run_reasons.join("; "))
    } else {
        String::new()
    };
    let _ = writeln!(
        o,
        "<p class=\"summary\">{}: {} the documented rule, {} from it, {} no rule, {} not measured.{}{}</p>",
        count(report.results.len(), "experiment", "experiments"),
        count(s.matches, "matches", "match"),
        count(s.deviates, "deviates", "deviate"),
        count(s.undocumented, "has", "have"),
        count(s.errors, "was", "were"),
        escape(&inconclusive),
        escape(&not_run)
    );
    if !s.findings.is_empty() {
        o.push_str("<ul class=\"findings\">\n");
        for f in &s.findings {
            let _ = writeln!(o, "<li>{}</li>", escape(f));
        }
        o.push_str("</ul>\n");
    }
    o.push_str("<h3>How the clocks were aligned</h3>\n");
    o.push_str(&clocks::paragraph(rec));
    o.push('\n');

    let figures = [
        ("plot-sweep", "The size sweep", plots::sweep(&report.results)),
        ("plot-queue", "The launch queue", plots::queue(&rec.cases, &report.results)),
        ("plot-wait", "Scheduling flags: how the host waits", plots::wait(&report.results)),
        ("plot-peer", "Copies between GPUs", plots::peer(&report.results)),
    ];
    for (base, title, figure) in figures {
        if let Some(f) = figure {
            let id = ids.take(base.to_owned(), number);
            plot(o, &id, title, &f);
        }
    }

    let mut case_ids = Vec::new();
    for r in &report.results {
        case_ids.push(ids.take(element_id("case", &r.id), number));
    }
    overview(o, &report, &case_ids);

    // Grouped by family, the families in the order they first appear.
    let mut families: Vec<Family> = Vec::new();
    for r in &report.results {
        if !families.contains(&r.family) {
            families.push(r.family);
        }
    }
    let mut done_seed: HashSet<String> = HashSet::new();
    for family in families {
        let _ = writeln!(o, "<h3>{}</h3>", escape(family.title()));
        let members: Vec<usize> = (0..report.results.len()).filter(|&i| report.results[i].family == family).collect();
        if let Some(reason) = report::common_not_run(members.iter().map(|&i| &report.results[i])) {
            // Nothing of this family ran: one line, not a card per experiment. The overview's links land here.
            let _ = write!(o, "<p class=\"missing\" id=\"{}\">", escape(&case_ids[members[0]]));
            for &i in &members[1..] {
                let _ = write!(o, "<span id=\"{}\"></span>", escape(&case_ids[i]));
            }
            let _ = writeln!(o, "Not run on this machine ({} experiments): {}.</p>", members.len(), escape(reason));
            continue;
        }
        for (i, (record, result)) in rec.cases.iter().zip(&report.results).enumerate() {
            if result.family != family {
                continue;
            }
            if family == Family::Seed {
                let group = seed_group(&result.id);
                if done_seed.insert(group.clone()) {
                    seed_card(o, ids, number, rec, &report, &group, &case_ids, i);
                }
            } else {
                let id = ids.take(element_id("timeline", &result.id), number);
                case_card(o, &id, &case_ids[i], record, result, rec);
            }
        }
    }
    o.push_str("</section>\n");
}

/// `seed/pageable` for `seed/pageable/1-htod`: a step's id ends in its number; a group's own record (one
/// that was not run, `runtime/seed/pageable`) is its group.
fn seed_group(id: &str) -> String {
    match id.rsplit_once('/') {
        Some((group, step)) if step.starts_with(|c: char| c.is_ascii_digit()) => group.to_owned(),
        _ => id.to_owned(),
    }
}

fn machine(o: &mut String, report: &Report, rec: &Recording) {
    let m = &report.machine;
    let unknown = || "unknown".to_owned();
    let gib = |b: u64| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64);
    let rows = [
        (
            "GPU",
            format!(
                "{} (compute capability {}, {} SMs, {})",
                m.gpu_name,
                m.compute_capability,
                m.sm_count,
                gib(m.memory_total_bytes)
            ),
        ),
        (
            "driver",
            format!("{} (CUDA driver API {})", m.driver_release.clone().unwrap_or_else(unknown), m.cuda_driver_api),
        ),
        (
            "PCIe",
            format!(
                "{} now, {} max (bus {})",
                m.pcie_link.clone().unwrap_or_else(unknown),
                m.pcie_max_link.clone().unwrap_or_else(unknown),
                m.pci_bus_id
            ),
        ),
        ("host", format!("{} ({} CPUs), {}", m.host_cpu, m.host_cpus, m.os)),
        ("async-lab", format!("{} ({})", m.tool_version, m.git_commit)),
        (
            "run",
            format!(
                "preset {}, {} repetitions per experiment, {}{}",
                report.preset,
                report.reps_per_case,
                report.created,
                if rec.args.is_empty() { String::new() } else { format!(", arguments: {}", rec.args.join(" ")) }
            ),
        ),
    ];
    o.push_str("<dl class=\"machine\">\n");
    for (k, v) in rows {
        let _ = writeln!(o, "<dt>{k}</dt><dd>{}</dd>", escape(&v));
    }
    o.push_str("</dl>\n");
    if report.partial {
        o.push_str("<p class=\"missing\"><strong>Partial recording:</strong> the run was interrupted; what was measured is shown, the rest is missing.</p>\n");
    }
}

fn plot(o: &mut String, id: &str, title: &str, f: &plots::Figure) {
    let _ = writeln!(
        o,
        "<figure class=\"plot\" id=\"{}\">\n<h3>{}</h3>\n<div class=\"plot-row\">",
        escape(id),
        escape(title)
    );
    let wide = f.svgs.len() == 1;
    for svg in &f.svgs {
        match svg {
            Ok(svg) if wide => o.push_str(&svg.replacen("<svg ", "<svg class=\"wide\" ", 1)),
            Ok(svg) => o.push_str(svg),
            Err(e) => {
                let _ = write!(o, "<p class=\"missing\">This plot could not be drawn: {}</p>", escape(e));
            }
        }
        o.push('\n');
    }
    let _ = writeln!(o, "</div>\n<figcaption>{}</figcaption>\n</figure>", escape(&f.caption));
}

fn verdict_word(r: &CaseResult) -> (&'static str, String) {
    if r.not_run.is_some() {
        return ("not-run", "not run".into());
    }
    match (r.verdict, &r.error) {
        (_, Some(_)) => ("error", "error".into()),
        (Some(v), None) => (
            match v {
                Verdict::Matches => "matches",
                Verdict::Deviates => "deviates",
                Verdict::Undocumented => "undocumented",
                Verdict::Inconclusive => "inconclusive",
            },
            v.to_string(),
        ),
        (None, None) => ("undocumented", "-".into()),
    }
}

fn verdict_badge(r: &CaseResult) -> String {
    let (class, word) = verdict_word(r);
    format!("<span class=\"verdict {class}\">{}</span>", escape(&word))
}

fn class_word(r: &CaseResult) -> String {
    r.class.map_or("-".to_owned(), |c| c.to_string())
}

/// A size as the seed program states it: "10 MB" for its 10⁷ bytes, "2GiB" for the answer's buffer.
fn human_size(bytes: u64) -> String {
    if bytes >= 1_000_000 && bytes % 1_000_000 == 0 {
        format!("{} MB", bytes / 1_000_000)
    } else {
        crate::units::format_size(bytes)
    }
}

/// The API, as a learner reads it.
fn api_words(api: crate::api::Api) -> &'static str {
    match api {
        crate::api::Api::Driver => "driver API (libcuda)",
        crate::api::Api::Runtime => "runtime API (libcudart), as nvcc-built programs, PyTorch and JAX call it",
    }
}

fn call_time(r: &CaseResult) -> String {
    r.host_call_us.map_or("-".into(), |s| {
        format!(
            "{} [{} – {}]",
            axis::duration(s.median * 1e3),
            axis::duration(s.min * 1e3),
            axis::duration(s.max * 1e3)
        )
    })
}

/// One line per experiment, linking to its card.
fn overview(o: &mut String, report: &Report, case_ids: &[String]) {
    o.push_str("<h3>All experiments</h3>\n<table class=\"overview\">\n");
    o.push_str("<tr><th>experiment</th><th>rule</th><th>class</th><th>expected</th><th>verdict</th><th>call time: median [min – max]</th></tr>\n");
    for (r, id) in report.results.iter().zip(case_ids) {
        let _ = writeln!(
            o,
            "<tr><td><a href=\"#{}\"><code>{}</code></a></td><td>{}</td><td class=\"class\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(id),
            escape(&r.id),
            escape(&r.rule),
            escape(&class_word(r)),
            escape(&r.expected.to_string()),
            verdict_badge(r),
            escape(&call_time(r))
        );
    }
    o.push_str("</table>\n");
}

/// The figure of a timeline: its SVG, or a box with the same id saying why there is none; then which
/// repetition it is and what is missing.
fn timeline_figure(o: &mut String, id: &str, t: &timeline::Timeline) {
    o.push_str("<figure class=\"timeline\">\n");
    let svg = draw::svg(t, id);
    if svg.is_empty() {
        let why = t.notes.first().cloned().unwrap_or_else(|| "Nothing to draw.".into());
        let _ = writeln!(o, "<div class=\"timeline-missing\" id=\"{}\">{}</div>", escape(id), escape(&why));
    } else {
        o.push_str(&svg);
        o.push('\n');
    }
    let notes: Vec<&String> = if svg.is_empty() { t.notes.iter().skip(1).collect() } else { t.notes.iter().collect() };
    if !t.caption.is_empty() || !notes.is_empty() {
        o.push_str("<figcaption>");
        o.push_str(&escape(&t.caption));
        for n in notes {
            let _ = write!(o, " <span class=\"missing\">{}</span>", escape(n));
        }
        o.push_str("</figcaption>\n");
    }
    o.push_str("</figure>\n");
}

fn rule_text(rule: &str) -> String {
    match crate::rules::rule(rule) {
        Some(r) => format!("<strong>{}</strong> ({}): {}", escape(r.id), escape(r.case), escape(r.documented)),
        None => format!("<strong>{}</strong>", escape(rule)),
    }
}

fn case_card(o: &mut String, timeline_id: &str, case_id: &str, record: &CaseRecord, r: &CaseResult, rec: &Recording) {
    let (verdict_class, _) = verdict_word(r);
    let _ = writeln!(o, "<article class=\"case {verdict_class}\" id=\"{}\">", escape(case_id));
    let _ = writeln!(o, "<h4><a href=\"#{}\"><code>{}</code></a></h4>", escape(case_id), escape(&r.id));
    let _ = writeln!(o, "<p class=\"what\">{}.</p>", escape(&r.what));
    o.push_str("<div class=\"case-body\">\n");
    let t = timeline::for_case(record, rec.clock_fit().as_ref());
    timeline_figure(o, timeline_id, &t);
    o.push_str("<div>\n<dl class=\"facts\">\n");
    let agree = if r.classes.is_empty() {
        String::new()
    } else {
        let n = r.class.map_or(0, |c| r.classes.iter().filter(|&&x| x == c).count());
        format!(" ({n} of {} repetitions)", r.classes.len())
    };
    let rows = [
        ("call", format!("<code>{}</code>", escape(&r.call))),
        ("API", escape(api_words(r.api))),
        ("class", format!("<span class=\"class\">{}</span>{}", escape(&class_word(r)), escape(&agree))),
        ("rule", rule_text(&r.rule)),
        ("expected", escape(&r.expected.to_string())),
        ("verdict", verdict_badge(r)),
        ("call time", escape(&call_time(r))),
    ];
    for (k, v) in rows {
        let _ = writeln!(o, "<dt>{k}</dt><dd>{v}</dd>");
    }
    o.push_str("</dl>\n");
    let _ = writeln!(o, "<p class=\"explanation\">{}</p>", escape(&r.explanation));
    o.push_str("</div>\n</div>\n</article>\n");
}

/// The seed's four steps of one memory kind: one card, one timeline, a row per step.
#[allow(clippy::too_many_arguments)]
fn seed_card(
    o: &mut String,
    ids: &mut Ids,
    number: usize,
    rec: &Recording,
    report: &Report,
    group: &str,
    case_ids: &[String],
    first: usize,
) {
    let prefix = format!("{group}/");
    let members: Vec<usize> = (0..rec.cases.len()).filter(|&i| rec.cases[i].setup.id.starts_with(&prefix)).collect();
    let records: Vec<&CaseRecord> = members.iter().map(|&i| &rec.cases[i]).collect();
    let results: Vec<&CaseResult> = members.iter().map(|&i| &report.results[i]).collect();
    let worst = if results.iter().any(|r| r.error.is_some()) {
        "error"
    } else if results.iter().any(|r| r.verdict == Some(Verdict::Deviates)) {
        "deviates"
    } else if results.iter().all(|r| r.verdict == Some(Verdict::Matches)) {
        "matches"
    } else {
        "undocumented"
    };
    let _ = writeln!(o, "<article class=\"case {worst}\" id=\"{}\">", escape(&case_ids[first]));
    // The other steps' cards are this one: their anchors point here too.
    for &i in members.iter().filter(|&&i| i != first) {
        let _ = write!(o, "<span id=\"{}\"></span>", escape(&case_ids[i]));
    }
    let _ = writeln!(o, "<h4><code>{}</code>: the seed program, step by step</h4>", escape(group));
    let kind = group.rsplit('/').next().unwrap_or(group);
    let bytes = records.iter().map(|r| r.setup.bytes).max().unwrap_or(0);
    let calls: Vec<String> = records.iter().map(|r| format!("<code>{}</code>", escape(&r.setup.call))).collect();
    let _ = writeln!(
        o,
        "<p class=\"what\">{}, on one non-blocking stream, with {} of {} host memory: where each call returned, \
         against where its work ran.</p>",
        calls.join(", "),
        escape(&human_size(bytes)),
        escape(kind)
    );
    o.push_str("<div class=\"case-body\">\n");
    let mut t = timeline::for_seed(&records, rec.clock_fit().as_ref());
    let timeline_id = ids.take(element_id("timeline", group), number);
    let step_ids: Vec<(String, String)> =
        records.iter().map(|r| (r.setup.id.clone(), ids.take(element_id("timeline", &r.setup.id), number))).collect();
    for span in &mut t.spans {
        if let Some(g) = span.group.as_mut() {
            if let Some((_, id)) = step_ids.iter().find(|(exp, _)| exp == g) {
                *g = id.clone();
            }
        }
    }
    timeline_figure(o, &timeline_id, &t);
    o.push_str("<div>\n<table class=\"steps\">\n<tr><th>step</th><th>call</th><th>class</th><th>expected</th><th>verdict</th></tr>\n");
    for r in &results {
        let step = r.id.rsplit('/').next().unwrap_or(&r.id);
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td><code>{}</code> {}</td><td class=\"class\">{}</td><td>{}</td><td>{}</td></tr>",
            escape(step),
            escape(&r.call),
            escape(&r.host_call_us.map_or(String::new(), |s| axis::duration(s.median * 1e3))),
            escape(&class_word(r)),
            escape(&r.expected.to_string()),
            verdict_badge(r)
        );
    }
    o.push_str("</table>\n");
    if let Some(last) = results.last() {
        let yes_no = |k: &str| last.metrics.get(k).map(|v| if *v >= 0.5 { "yes" } else { "no" });
        if let (Some(enqueued), Some(synced)) = (yes_no("concluded_after_enqueue"), yes_no("concluded_after_sync")) {
            let _ = writeln!(
                o,
                "<p><strong>Had the stream concluded when the last call returned?</strong> {enqueued} (the callback \
                 {} run yet); after synchronizing the stream: {synced}.</p>",
                if enqueued == "yes" { "had" } else { "had not" }
            );
        }
    }
    o.push_str("</div>\n</div>\n<ol class=\"explanation\">\n");
    for r in &results {
        let _ = writeln!(o, "<li>{}</li>", escape(&r.explanation));
    }
    o.push_str("</ol>\n</article>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_text_and_attributes() {
        assert_eq!(
            escape(r#"<a href="x">Tom & 'Jerry'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn ids_are_slugs_and_unique() {
        assert_eq!(element_id("timeline", "copy/async/htod/pinned/1MiB"), "timeline-copy-async-htod-pinned-1MiB");
        assert_eq!(element_id("case", "a b\"c"), "case-a-b-c");
        let mut ids = Ids::default();
        assert_eq!(ids.take("plot-sweep".into(), 1), "plot-sweep");
        assert_eq!(ids.take("plot-sweep".into(), 2), "plot-sweep--r2");
        assert_eq!(ids.take("plot-sweep".into(), 2), "plot-sweep--r2-2");
    }

    #[test]
    fn seed_groups() {
        assert_eq!(seed_group("seed/pageable/1-htod"), "seed/pageable");
        assert_eq!(seed_group("seed/pinned"), "seed/pinned");
        assert_eq!(seed_group("runtime/seed-answer/pinned/0-cudafree"), "runtime/seed-answer/pinned");
        assert_eq!(seed_group("runtime/seed/pageable"), "runtime/seed/pageable");
        assert_eq!(human_size(10_000_000), "10 MB");
        assert_eq!(human_size(2 << 30), "2GiB");
    }
}
