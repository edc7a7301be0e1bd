//! `async-lab compare`: a recording's classes beside those of the CUDA C++ reference program
//! (`reference/async_ref.cu`), case by case, for the cases both measured.

use crate::record::Recording;
use crate::report;
use anyhow::Context as _;
use serde::Deserialize;
use std::fmt::Write as _;
use std::path::Path;

#[derive(Deserialize)]
struct RefOutput {
    tool: String,
    cases: Vec<RefCase>,
}

#[derive(Deserialize)]
struct RefCase {
    id: String,
    class: Option<String>,
    host_call_us: Option<RefSpread>,
    error: Option<String>,
}

#[derive(Deserialize)]
struct RefSpread {
    median: Option<f64>,
}

/// One compared case.
pub struct Row {
    pub id: String,
    pub ours: String,
    pub theirs: String,
    pub ours_us: Option<f64>,
    pub theirs_us: Option<f64>,
}

impl Row {
    pub fn agrees(&self) -> bool {
        self.ours == self.theirs
    }
}

/// Joins a recording with the reference's JSON output by experiment id.
pub fn compare(recording: &Path, reference: &Path) -> anyhow::Result<Vec<Row>> {
    let rec = Recording::load(recording)?;
    let text = std::fs::read_to_string(reference).with_context(|| format!("cannot read {}", reference.display()))?;
    let refs: RefOutput = serde_json::from_str(&text)
        .with_context(|| format!("{} is not async_ref's JSON output", reference.display()))?;
    anyhow::ensure!(refs.tool == "async_ref", "{} was written by {:?}, not async_ref", reference.display(), refs.tool);
    let report = report::build(&rec);
    let mut rows = Vec::new();
    for r in &report.results {
        let Some(c) = refs.cases.iter().find(|c| c.id == r.id) else { continue };
        rows.push(Row {
            id: r.id.clone(),
            ours: r.class.map_or_else(|| format!("error: {}", r.error.clone().unwrap_or_default()), |c| c.to_string()),
            theirs: match (&c.class, &c.error) {
                (Some(class), _) => class.clone(),
                (None, e) => format!("error: {}", e.clone().unwrap_or_default()),
            },
            ours_us: r.host_call_us.map(|s| s.median),
            theirs_us: c.host_call_us.as_ref().and_then(|s| s.median),
        });
    }
    anyhow::ensure!(!rows.is_empty(), "the recording and the reference output have no experiment id in common");
    Ok(rows)
}

/// A Markdown table of the comparison, disagreements marked, with a count at the end.
pub fn markdown(rows: &[Row]) -> String {
    let us = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.1}"));
    let mut out = String::from(
        "| case | async-lab class | reference class | async-lab µs | reference µs | |\n|---|---|---|---:|---:|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} |",
            r.id,
            r.ours,
            r.theirs,
            us(r.ours_us),
            us(r.theirs_us),
            if r.agrees() { "" } else { "**differs**" }
        );
    }
    let differ = rows.iter().filter(|r| !r.agrees()).count();
    let _ = writeln!(out, "\n{} cases compared, {} agree, {differ} differ.", rows.len(), rows.len() - differ);
    out
}
