//! A traced run of async-lab beside the recording it made (`async-lab trace --replay TRACE --against
//! RECORDING`): for each case whose timed call the trace contains, the tracer's class next to the lab's.
//! Each repetition's call is found in the trace by its name and its start (`timed_calls`).

use super::analysis::Analysis;
use super::timed_calls::{self, Timed};
use crate::classify::{majority, Class};
use crate::record::Recording;
use crate::report;
use std::fmt::Write as _;

/// One case: the lab's class and the tracer's, over the repetitions found.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub id: String,
    pub call: String,
    pub lab: Option<Class>,
    /// The majority of the tracer's classes of the repetitions found.
    pub traced: Option<Class>,
    pub traced_classes: Vec<Class>,
    pub reps: usize,
}

impl Row {
    /// Whether the two classes agree, where the trace holds the case's call.
    pub fn agrees(&self) -> Option<bool> {
        Some(self.lab? == self.traced?)
    }
}

/// The rows, one per measured case of `rec`, in its order.
pub fn compare(rec: &Recording, analyses: &[Analysis]) -> Vec<Row> {
    let fit = rec.clock_fit();
    let timed = timed(rec);
    let classes = timed_calls::traced_classes(&timed, analyses);
    rec.cases
        .iter()
        .enumerate()
        .filter(|(_, c)| c.error.is_none() && c.skipped.is_none() && !c.reps.is_empty())
        .map(|(ci, case)| {
            let traced_classes: Vec<Class> =
                (0..case.reps.len()).filter_map(|ri| classes.get(&(ci, ri)).copied()).collect();
            Row {
                id: case.setup.id.clone(),
                call: case.setup.call.clone(),
                lab: report::result(case, fit.as_ref()).class,
                traced: majority(&traced_classes).map(|(c, _)| c),
                traced_classes,
                reps: case.reps.len(),
            }
        })
        .collect()
}

/// Every repetition's timed call of `rec`, keyed by (case index, repetition).
pub fn timed(rec: &Recording) -> Vec<Timed<'_>> {
    rec.cases
        .iter()
        .enumerate()
        .flat_map(|(ci, case)| {
            case.reps.iter().enumerate().map(move |(ri, r)| Timed {
                start_ns: r.host_call_start_ns as i64,
                len_ns: r.host_call_ns as i64,
                call: &case.setup.call,
                key: (ci, ri),
            })
        })
        .collect()
}

/// The rows as a Markdown table, with the agreement count first.
pub fn markdown(rows: &[Row]) -> String {
    let held: Vec<&Row> = rows.iter().filter(|r| r.traced.is_some()).collect();
    let agree = held.iter().filter(|r| r.agrees() == Some(true)).count();
    let mut out = format!(
        "{agree} of {} cases whose timed call the trace holds have the same class from the tracer as from the lab \
         ({} cases measured, {} not found in the trace).\n\n| id | call | lab | tracer | reps found |\n|---|---|---|---|---|\n",
        held.len(),
        rows.len(),
        rows.len() - held.len()
    );
    for r in rows {
        let _ = writeln!(
            out,
            "| `{}` | `{}` | {} | {} | {}/{} |",
            r.id,
            r.call,
            r.lab.map_or("-".into(), |c| c.to_string()),
            match (r.traced, r.agrees()) {
                (Some(c), Some(false)) => format!("**{c}**"),
                (Some(c), _) => c.to_string(),
                (None, _) => "-".into(),
            },
            r.traced_classes.len(),
            r.reps
        );
    }
    out
}
