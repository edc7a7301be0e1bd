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
//! - This file: the page, its legend and one section per recording; `header.rs`: a section's machine and
//!   overview; `cards.rs`: each experiment's card (and the seed's, one per memory kind).
//! - `timeline.rs`: what a timeline shows, from a repetition's raw fields; `draw.rs`: drawing it as SVG;
//!   `axis.rs`: ticks and numbers.
//! - `plots.rs`: the plots, with plotters' SVG backend.
//! - `clocks.rs`: the clock-alignment paragraph.

mod axis;
mod cards;
mod clocks;
mod draw;
mod header;
mod plots;
mod timeline;

use crate::record::Recording;
use crate::report;
use crate::setup::Family;
use anyhow::{ensure, Context as _};
use cards::{case_card, seed_card, seed_group};
use header::{machine, overview};
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
    if sources.iter().any(|s| has_other_thread(&s.recording)) {
        o.push_str(LEGEND_OTHER_THREAD);
    }
    o.push_str(LEGEND_REST);
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
<tr><th>class</th><th>what held the host thread</th></tr>
<tr><td class="class">async</td><td>nothing: it returned without waiting for earlier work or a second thread, before most of its own work ran</td></tr>
<tr><td class="class">staged</td><td>nothing, and it had copied its data into the driver's staging buffer before returning</td></tr>
<tr><td class="class">waited-for-stream</td><td>the work ahead of it in its own stream, until that finished</td></tr>
<tr><td class="class">waited-for-thread</td><td>a call on a second thread of the program, until that ended</td></tr>
<tr><td class="class">blocking</td><td>its own work: held through at least 85% of its own transfer or kernel</td></tr>
<tr><td class="class">device-sync</td><td>work on another stream, work it does not depend on: the whole device drained</td></tr>
</table>
<table>
<tr><th>on a timeline</th><th>means</th></tr>
<tr><td><span class="swatch host"></span>host thread</td><td>the calling thread inside the call under test (host clock)</td></tr>
<tr><td><span class="swatch held-stream"></span>held by its stream</td><td>the thread waited for the work ahead of the call in its stream</td></tr>
<tr><td><span class="swatch held-device"></span>held by other streams</td><td>the thread waited for work on another stream (the device drained)</td></tr>
<tr><td><span class="swatch held-thread"></span>held by a second thread</td><td>the thread waited for a call made on a second thread of the program</td></tr>
<tr><td><span class="swatch held-own"></span>held by its own work</td><td>the call's own GPU work ran while the thread was held</td></tr>
<tr><td><span class="swatch held-call"></span>the call itself</td><td>the rest: the driver's own host-side work</td></tr>
"#;

/// The legend's row for the threads family's second host lane, on pages that draw one.
const LEGEND_OTHER_THREAD: &str = r#"<tr><td><span class="swatch other"></span>other thread</td><td>threads family: another thread inside its slow call while the call under test was made (its own host times, same clock)</td></tr>
"#;

const LEGEND_REST: &str = r#"<tr><td><span class="swatch blocker"></span>GPU: blocker</td><td>the blocker kernel enqueued before the call (its <code>%globaltimer</code> stamps)</td></tr>
<tr><td><span class="swatch work"></span>GPU: the call's work</td><td>from the event before the call's work to the one after it (CUDA events)</td></tr>
<tr><td><span class="swatch returned"></span>call returned</td><td>the host thread had control again</td></tr>
<tr><td><span class="swatch finished"></span>operation finished</td><td>the call's own work was done on the GPU</td></tr>
<tr><td><span class="swatch approx"></span>dashed</td><td>placed by an estimate: the recording has no measured clock offset</td></tr>
</table>
</div>
"#;

/// Whether a recording has a repetition with another thread's call to draw (the threads family).
fn has_other_thread(rec: &Recording) -> bool {
    rec.cases.iter().flat_map(|c| &c.reps).any(timeline::has_other_thread)
}

fn recording_section(o: &mut String, ids: &mut Ids, number: usize, source: &Source) {
    let rec = &source.recording;
    let report = report::build(rec);
    let _ = writeln!(o, "<section class=\"recording\" id=\"recording-{number}\">");
    let _ = writeln!(o, "<h2>Recording {number}: <code>{}</code></h2>", escape(&source.label));
    machine(o, &report, rec);
    let s = &report.summary;
    let count = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let inconclusive = if s.inconclusive > 0 {
        format!(
            " {} nothing the readings decide to hold against its rule (no class, or a hold of its own work too \
             short to measure).",
            count(s.inconclusive, "has", "have")
        )
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
                let group = seed_group(record);
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
}
