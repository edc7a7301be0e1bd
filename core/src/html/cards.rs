//! Each experiment's card: its timeline, class, rule, expectation, verdict and explanation; the seed's steps
//! of one memory kind on one card and one timeline.

use super::{axis, draw, element_id, escape, timeline, Ids};
use crate::record::{CaseRecord, Recording};
use crate::report::{CaseResult, Report};
use crate::rules::Verdict;
use std::fmt::Write as _;

/// The seed program a record belongs to, by id (`seed/pageable` for the step `seed/pageable/1-htod`), from
/// its facts (`Case::template`); a whole program's own record (one that was not run) is its own group, and so
/// is a record whose facts are unknown.
pub(super) fn seed_group(record: &CaseRecord) -> String {
    record.setup.case.as_ref().map_or_else(|| record.setup.id.clone(), |c| c.template().id())
}

/// A seed step's name on its card and timeline ("1-htod"), from its facts; its id where they are unknown.
pub(super) fn step_name(record: &CaseRecord) -> String {
    record.setup.case.as_ref().and_then(|c| c.step_slug()).map_or_else(|| record.setup.id.clone(), str::to_owned)
}

pub(super) fn verdict_word(r: &CaseResult) -> (&'static str, String) {
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

pub(super) fn verdict_badge(r: &CaseResult) -> String {
    let (class, word) = verdict_word(r);
    format!("<span class=\"verdict {class}\">{}</span>", escape(&word))
}

pub(super) fn class_word(r: &CaseResult) -> String {
    r.class.map_or("-".to_owned(), |c| c.to_string())
}

/// A size as the seed program states it: "10 MB" for its 10⁷ bytes, "2GiB" for the answer's buffer.
pub(super) fn human_size(bytes: u64) -> String {
    if bytes >= 1_000_000 && bytes % 1_000_000 == 0 {
        format!("{} MB", bytes / 1_000_000)
    } else {
        crate::units::format_size(bytes)
    }
}

/// The API, as a learner reads it.
pub(super) fn api_words(api: crate::api::Api) -> &'static str {
    match api {
        crate::api::Api::Driver => "driver API (libcuda)",
        crate::api::Api::Runtime => "runtime API (libcudart), as nvcc-built programs, PyTorch and JAX call it",
    }
}

pub(super) fn call_time(r: &CaseResult) -> String {
    r.host_call_us.map_or("-".into(), |s| {
        format!(
            "{} [{} – {}]",
            axis::duration(s.median * 1e3),
            axis::duration(s.min * 1e3),
            axis::duration(s.max * 1e3)
        )
    })
}

/// The figure of a timeline: its SVG, or a box with the same id saying why there is none; then which
/// repetition it is and what is missing.
pub(super) fn timeline_figure(o: &mut String, id: &str, t: &timeline::Timeline) {
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

pub(super) fn rule_text(rule: &str) -> String {
    match crate::rules::rule(rule) {
        Some(r) => format!("<strong>{}</strong> ({}): {}", escape(r.id), escape(r.case), escape(r.documented)),
        None => format!("<strong>{}</strong>", escape(rule)),
    }
}

pub(super) fn case_card(
    o: &mut String,
    timeline_id: &str,
    case_id: &str,
    record: &CaseRecord,
    r: &CaseResult,
    rec: &Recording,
) {
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
        ("held for", escape(&r.held_for)),
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
pub(super) fn seed_card(
    o: &mut String,
    ids: &mut Ids,
    number: usize,
    rec: &Recording,
    report: &Report,
    group: &str,
    case_ids: &[String],
    first: usize,
) {
    let members: Vec<usize> = (0..rec.cases.len()).filter(|&i| seed_group(&rec.cases[i]) == group).collect();
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
    // The memory kind is the copies' host memory (the launch and the callback have none); a group that was not
    // run has only its own record, which carries it too.
    let kind = records.iter().map(|r| &r.setup).chain([&rec.cases[first].setup]).find_map(|s| s.layout.host_memory);
    let memory = kind.map_or("host memory".to_owned(), |k| format!("{} host memory", k.slug()));
    let bytes = records.iter().map(|r| r.setup.layout.bytes).max().unwrap_or(0);
    let calls: Vec<String> = records.iter().map(|r| format!("<code>{}</code>", escape(&r.setup.call))).collect();
    let _ = writeln!(
        o,
        "<p class=\"what\">{}, on one non-blocking stream, with {} of {}: where each call returned, against \
         where its work ran.</p>",
        calls.join(", "),
        escape(&human_size(bytes)),
        escape(&memory)
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
    o.push_str("<div>\n<table class=\"steps\">\n<tr><th>step</th><th>call</th><th>class</th><th>held for</th><th>expected</th><th>verdict</th></tr>\n");
    for (r, record) in results.iter().zip(&records) {
        let step = step_name(record);
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td><code>{}</code> {}</td><td class=\"class\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&step),
            escape(&r.call),
            escape(&r.host_call_us.map_or(String::new(), |s| axis::duration(s.median * 1e3))),
            escape(&class_word(r)),
            escape(&r.held_for),
            escape(&r.expected.to_string()),
            verdict_badge(r)
        );
    }
    o.push_str("</table>\n");
    if let Some(last) = results.last() {
        let yes_no = |v: Option<bool>| v.map(|v| if v { "yes" } else { "no" });
        let m = &last.metrics;
        if let (Some(enqueued), Some(synced)) = (yes_no(m.concluded_after_enqueue), yes_no(m.concluded_after_sync)) {
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

    fn record(id: &str) -> CaseRecord {
        let case = crate::catalogue::presets::by_id(id).unwrap_or_else(|| panic!("{id} is in the catalogue"));
        let setup = crate::record::CaseSetup::of(&case);
        CaseRecord { setup, blocker_ns: None, warmup: None, reps: vec![], series: None, error: None, skipped: None }
    }

    #[test]
    fn seed_groups_and_steps_come_from_the_facts() {
        let step = record("seed/pageable/1-htod");
        assert_eq!((seed_group(&step), step_name(&step)), ("seed/pageable".to_owned(), "1-htod".to_owned()));
        let step = record("runtime/seed-answer/pinned/0-cudafree");
        assert_eq!(seed_group(&step), "runtime/seed-answer/pinned");
        assert_eq!(step_name(&step), "0-cudafree");
        // A whole program's own record is its group; a record without facts is its own group and step.
        let whole = record("seed/pinned");
        assert_eq!(seed_group(&whole), "seed/pinned");
        let mut unknown = record("seed/pinned/2-launch");
        unknown.setup.case = None;
        assert_eq!((seed_group(&unknown), step_name(&unknown)), (unknown.setup.id.clone(), unknown.setup.id.clone()));
        assert_eq!(human_size(10_000_000), "10 MB");
        assert_eq!(human_size(2 << 30), "2GiB");
    }
}
