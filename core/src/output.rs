//! The report as a terminal table (grouped by family), JSON, Markdown or CSV.

use crate::report::{common_not_run, CaseResult, Report};
use crate::setup::Family;
use comfy_table::{presets::UTF8_BORDERS_ONLY, Cell, Table};
use std::fmt::Write as _;

/// `--format`: how to print a report (a command-line value where the `clap` feature is on).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Format {
    Table,
    Json,
    Md,
    Csv,
}

pub fn render(report: &Report, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Table => table(report),
        Format::Json => serde_json::to_string_pretty(report)? + "\n",
        Format::Md => markdown(report),
        Format::Csv => csv(report)?,
    })
}

fn fmt_us(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{:.1} ms", v / 1000.0)
    } else if v >= 100.0 {
        format!("{v:.0} µs")
    } else {
        format!("{v:.1} µs")
    }
}

fn call_time(r: &CaseResult) -> String {
    r.host_call_us.map_or("-".into(), |s| format!("{} [{}–{}]", fmt_us(s.median), fmt_us(s.min), fmt_us(s.max)))
}

/// What held the thread in the median repetition ("-" where nothing was measured).
fn held_for(r: &CaseResult) -> String {
    if r.held_for.is_empty() || r.class.is_none() {
        "-".into()
    } else {
        r.held_for.clone()
    }
}

fn notes(r: &CaseResult) -> String {
    if let Some(e) = &r.error {
        return format!("ERROR: {e}");
    }
    if let Some(reason) = &r.not_run {
        return format!("not run: {reason}");
    }
    let mut n = Vec::new();
    if let Some(bw) = r.bandwidth_gb_s {
        n.push(format!("{bw:.1} GB/s"));
    }
    if r.agreement < 1.0 && !r.classes.is_empty() {
        n.push(format!("{:.0}% of reps agree", r.agreement * 100.0));
    }
    if let Some(w) = r.wait_style {
        n.push(format!("waits {w}"));
    }
    for (k, v) in r.metrics.entries() {
        n.push(format!("{k}={v:.1}"));
    }
    n.join("; ")
}

fn header(report: &Report) -> String {
    let m = &report.machine;
    format!(
        "async-lab {} ({}) · preset {} · {} · {} (cc {}) · driver {} (CUDA {}) · PCIe {} · {}{}\n",
        m.tool_version,
        m.git_commit,
        report.preset,
        report.created,
        m.gpu_name,
        m.compute_capability,
        m.driver_release.as_deref().unwrap_or("?"),
        m.cuda_driver_api,
        m.pcie_link.as_deref().unwrap_or("?"),
        m.host_cpu,
        if report.partial { " · PARTIAL (interrupted)" } else { "" }
    )
}

fn families(report: &Report) -> Vec<(Family, Vec<&CaseResult>)> {
    let mut out: Vec<(Family, Vec<&CaseResult>)> = Vec::new();
    for r in &report.results {
        match out.iter_mut().find(|(f, _)| *f == r.family) {
            Some((_, v)) => v.push(r),
            None => out.push((r.family, vec![r])),
        }
    }
    out
}

/// The verdict column: "not run" where the machine could not run the experiment.
fn verdict_word(r: &CaseResult) -> String {
    if r.not_run.is_some() {
        return "not run".into();
    }
    r.verdict.map_or("-".into(), |v| v.to_string())
}

fn footer(report: &Report) -> String {
    let s = &report.summary;
    let not_run = if s.not_run > 0 {
        format!(", {} not run ({})", s.not_run, s.not_run_reasons.join("; "))
    } else {
        String::new()
    };
    let inconclusive = if s.inconclusive > 0 { format!(", {} inconclusive", s.inconclusive) } else { String::new() };
    let mut t = format!(
        "{} matches, {} deviates, {} undocumented{inconclusive}, {} errors{not_run} ({} repetitions each; call time: median [min–max])\n",
        s.matches, s.deviates, s.undocumented, s.errors, report.reps_per_case
    );
    for f in &s.findings {
        let _ = writeln!(t, "- {f}");
    }
    t
}

fn table(report: &Report) -> String {
    let mut out = header(report);
    for (family, results) in families(report) {
        if let Some(reason) = common_not_run(results.iter().copied()) {
            let _ = writeln!(out, "\n{}: {} experiments not run: {reason}", family.title(), results.len());
            continue;
        }
        let mut t = Table::new();
        t.load_preset(UTF8_BORDERS_ONLY);
        t.set_header(["id", "rule", "class", "expected", "verdict", "call time", "held for", "device", "notes"]);
        for r in results {
            t.add_row([
                Cell::new(&r.id),
                Cell::new(&r.rule),
                Cell::new(r.class.map_or("-".into(), |c| c.to_string())),
                Cell::new(r.expected.to_string()),
                Cell::new(verdict_word(r)),
                Cell::new(call_time(r)),
                Cell::new(held_for(r)),
                Cell::new(r.device_us.map_or("-".into(), fmt_us)),
                Cell::new(notes(r)),
            ]);
        }
        let _ = write!(out, "\n{}\n{t}\n", family.title());
    }
    out.push('\n');
    out + &footer(report)
}

fn markdown(report: &Report) -> String {
    let mut out = format!("# async-lab results\n\n{}\n", header(report));
    for (family, results) in families(report) {
        let _ = writeln!(out, "## {}\n", family.title());
        if let Some(reason) = common_not_run(results.iter().copied()) {
            let _ = writeln!(out, "{} experiments not run: {reason}.\n", results.len());
            continue;
        }
        out.push_str("| id | rule | class | expected | verdict | call time | held for | device | notes |\n|---|---|---|---|---|---|---|---|---|\n");
        for r in results {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.id,
                r.rule,
                r.class.map_or("-".into(), |c| c.to_string()),
                r.expected,
                verdict_word(r),
                call_time(r),
                held_for(r),
                r.device_us.map_or("-".into(), fmt_us),
                notes(r).replace('|', "\\|")
            );
        }
        out.push('\n');
    }
    out + &footer(report)
}

fn csv(report: &Report) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(vec![]);
    w.write_record([
        "id",
        "family",
        "call",
        "rule",
        "class",
        "expected",
        "verdict",
        "call_us_median",
        "call_us_min",
        "call_us_max",
        "n",
        "held_for",
        "cpu_us",
        "waited_for_prior_work",
        "complete_at_return",
        "data_captured_at_return",
        "device_us",
        "bytes",
        "bandwidth_gb_s",
        "src_gpu",
        "dst_gpu",
        "peer_access",
        "error",
        "not_run",
    ])?;
    let opt = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x:.3}"));
    let b = |v: Option<bool>| v.map_or(String::new(), |x| x.to_string());
    for r in &report.results {
        let s = r.host_call_us;
        w.write_record([
            r.id.clone(),
            format!("{:?}", r.family).to_lowercase(),
            r.call.clone(),
            r.rule.clone(),
            r.class.map_or(String::new(), |c| c.to_string()),
            r.expected.to_string(),
            r.verdict.map_or(String::new(), |v| v.to_string()),
            opt(s.map(|s| s.median)),
            opt(s.map(|s| s.min)),
            opt(s.map(|s| s.max)),
            s.map_or(String::new(), |s| s.n.to_string()),
            r.held_for.clone(),
            opt(r.host_cpu_us),
            b(r.waited_for_prior_work),
            b(r.complete_at_return),
            b(r.data_captured_at_return),
            opt(r.device_us),
            r.bytes.to_string(),
            opt(r.bandwidth_gb_s),
            r.peer.and_then(|p| p.src_gpu).map_or(String::new(), |g| g.to_string()),
            r.peer.and_then(|p| p.dst_gpu).map_or(String::new(), |g| g.to_string()),
            r.peer.map_or(String::new(), |p| p.access.to_string()),
            r.error.clone().unwrap_or_default(),
            r.not_run.clone().unwrap_or_default(),
        ])?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}
