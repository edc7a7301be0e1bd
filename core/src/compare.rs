//! `async-lab compare`: the same case through the two APIs side by side (driver and runtime classes from
//! one recording), and, given the CUDA C++ reference program's output (`reference/async_ref.cu`, a
//! runtime-API program), async-lab's classes beside the reference's, case by case.
//!
//! The reference calls the runtime, so it is compared with async-lab's runtime records (`runtime/<id>`);
//! a recording without them (made before the runtime was measured) is compared through its driver records,
//! and each row says which API it compared.

use crate::async_ref::RefOutput;
use crate::record::Recording;
use crate::report;
pub use crate::result::{between_apis_results, ApiRow};
use std::fmt::Write as _;
use std::path::Path;

/// One compared case.
pub struct Row {
    pub id: String,
    /// Which of async-lab's APIs the row compares with the reference.
    pub api: crate::api::Api,
    pub ours: String,
    /// What held the thread in async-lab's median repetition.
    pub ours_held: String,
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
    let refs = RefOutput::load(reference)?;
    let report = report::build(&rec);
    let mut rows = Vec::new();
    let default_kind = refs.memcpy_kind.as_deref() == Some("default");
    let mut unmatched = 0;
    for c in &refs.cases {
        let Some(r) = counterpart(&report.results, &c.id, default_kind) else {
            unmatched += 1;
            continue;
        };
        rows.push(Row {
            id: c.id.clone(),
            api: r.api,
            ours: r.class.map_or_else(|| format!("error: {}", r.error.clone().unwrap_or_default()), |c| c.to_string()),
            ours_held: r.held_for.clone(),
            theirs: match (&c.class, &c.error) {
                // The reference names classes in the vocabulary before they named what held the thread:
                // its `waited-then-staged` is `waited-for-stream`.
                (Some(class), _) => {
                    crate::class::Class::from_legacy_word(class).map_or_else(|| class.clone(), |c| c.to_string())
                }
                (None, e) => format!("error: {}", e.clone().unwrap_or_default()),
            },
            ours_us: r.host_call_us.map(|s| s.median),
            theirs_us: c.host_call_us.as_ref().and_then(|s| s.median),
        });
    }
    anyhow::ensure!(!rows.is_empty(), "the recording and the reference output have no experiment id in common");
    if unmatched > 0 {
        eprintln!(
            "async-lab: {unmatched} of the reference's cases have no measured case of the same API and copy form in {}",
            recording.display()
        );
    }
    Ok(rows)
}

/// async-lab's measured case that does what the reference's case `id` did: through the runtime where the
/// recording has it (the reference is a runtime program), with the copy named the same way. A reference run
/// with explicit kinds matches the runtime cases whose call passes one (`.../typed` for managed memory); a
/// run with `cudaMemcpyDefault` matches those that pass `cudaMemcpyDefault` (`.../unified` for the others).
/// A recording without runtime cases (older) is compared through its driver cases.
fn counterpart<'r>(results: &'r [report::CaseResult], id: &str, default_kind: bool) -> Option<&'r report::CaseResult> {
    let measured = |id: &str| results.iter().find(|r| r.id == id && r.not_run.is_none());
    let runtime = crate::api::Api::Runtime.id_prefix();
    let same_form = |r: &&report::CaseResult| {
        let is_copy =
            async_lab_trace_format::functions::does(&r.call) == async_lab_trace_format::functions::Does::Copies;
        !is_copy || r.call.contains("(Default)") == default_kind
    };
    let candidates = [format!("{runtime}{id}"), format!("{runtime}{id}/typed"), format!("{runtime}{id}/unified")];
    let any_runtime = results.iter().any(|r| r.api == crate::api::Api::Runtime);
    if any_runtime {
        candidates.iter().filter_map(|c| measured(c)).find(same_form)
    } else {
        measured(id)
    }
}

/// A Markdown table of the comparison, disagreements marked, with a count at the end.
pub fn markdown(rows: &[Row]) -> String {
    let us = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.1}"));
    let mut out = String::from(
        "| case | async-lab API | async-lab class | async-lab held for | reference class | async-lab µs | reference µs | |\n\
         |---|---|---|---|---|---:|---:|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
            r.id,
            r.api,
            r.ours,
            r.ours_held,
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

/// The driver and runtime classes of every case a recording measured through both APIs.
pub fn between_apis(rec: &Recording) -> Vec<ApiRow> {
    between_apis_results(&report::build(rec).results)
}

/// A Markdown table of `between_apis`, differences marked, with a count at the end.
pub fn api_markdown(rows: &[ApiRow]) -> String {
    let us = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.1}"));
    let mut out = String::from(
        "| case | driver call | class | µs | held for | runtime call | class | µs | held for | |\n\
         |---|---|---|---:|---|---|---|---:|---|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            out,
            "| `{}` | `{}` | {} | {} | {} | `{}` | {} | {} | {} | {} |",
            r.id,
            r.driver_call,
            r.driver,
            us(r.driver_us),
            r.driver_held,
            r.runtime_call,
            r.runtime,
            us(r.runtime_us),
            r.runtime_held,
            match (r.both_classified, r.same_class()) {
                (false, _) => "",
                (true, true) => "",
                (true, false) => "**differs**",
            }
        );
    }
    let compared: Vec<&ApiRow> = rows.iter().filter(|r| r.both_classified).collect();
    let differ = compared.iter().filter(|r| !r.same_class()).count();
    let _ = writeln!(
        out,
        "\n{} cases measured through both APIs: {} in the same class, {differ} differ.",
        compared.len(),
        compared.len() - differ
    );
    let unmeasured = rows.len() - compared.len();
    if unmeasured > 0 {
        let _ = writeln!(out, "{unmeasured} more were not run or failed through one API (their rows say which).");
    }
    out
}
