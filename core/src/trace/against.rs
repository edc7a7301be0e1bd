//! A traced run of async-lab beside the recording it made (`async-lab trace --replay TRACE --against
//! RECORDING`): for each case whose timed call the trace contains, the tracer's class next to the lab's.
//!
//! A repetition's call is found in the trace by its name and its start: the recording's host clock
//! (`CLOCK_MONOTONIC`) and CUPTI's differ by an offset, found as the one most repetitions agree on, then
//! followed from repetition to repetition; a call that starts within [`WINDOW_NS`] of where the offset puts
//! it, with the same name, is that repetition's call. A process's section is searched for each repetition
//! (the lab runs some cases in child processes).

use super::calls;
use super::format::Trace;
use super::scene::Program;
use crate::classify::{majority, Class};
use crate::record::Recording;
use crate::report;
use std::collections::HashMap;
use std::fmt::Write as _;

/// How far from where the offset puts it a repetition's call may start.
pub const WINDOW_NS: i64 = 100_000;
/// The width of the buckets the offsets are counted in.
const BUCKET_NS: i64 = 20_000;

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

/// The leading identifier of a call as the lab names it (`cudaMemcpyAsync(Default)`) or CUPTI does
/// (`cuMemcpyHtoDAsync_v2`, `cudaLaunchKernel_ptsz`): `cudaMemcpyAsync`, `cuMemcpyHtoDAsync`.
pub fn base_name(name: &str) -> &str {
    let ident = name.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').next().unwrap_or(name);
    for suffix in ["_ptsz", "_ptds", "_v2", "_v3"] {
        if let Some(stem) = ident.strip_suffix(suffix) {
            return base_name(stem);
        }
    }
    ident
}

/// The rows, one per measured case of `rec`, in its order.
pub fn compare(rec: &Recording, trace: &Trace) -> Vec<Row> {
    let fit = rec.clock_fit();
    let programs: Vec<Program> = trace.processes.iter().map(Program::of).collect();
    let mut classes: Vec<HashMap<usize, Class>> = vec![HashMap::new(); programs.len()];
    // (case, rep) → its call: (program, call index).
    let mut found: HashMap<(usize, usize), (usize, usize)> = HashMap::new();
    for (pi, p) in programs.iter().enumerate() {
        for (key, call) in locate(rec, p) {
            found.entry(key).or_insert((pi, call));
        }
    }
    rec.cases
        .iter()
        .enumerate()
        .filter(|(_, c)| c.error.is_none() && c.skipped.is_none() && !c.reps.is_empty())
        .map(|(ci, case)| {
            let mut traced_classes = Vec::new();
            for ri in 0..case.reps.len() {
                if let Some(&(pi, call)) = found.get(&(ci, ri)) {
                    let class = *classes[pi].entry(call).or_insert_with(|| calls::traced(&programs[pi], call).class);
                    traced_classes.push(class);
                }
            }
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

/// Each repetition of `rec` whose call `p` holds: ((case, rep), call index).
fn locate(rec: &Recording, p: &Program) -> Vec<((usize, usize), usize)> {
    let mut by_name: HashMap<&str, Vec<(i64, usize)>> = HashMap::new();
    for (i, c) in p.calls.iter().enumerate() {
        by_name.entry(base_name(&c.name)).or_default().push((c.span.start, i));
    }
    for v in by_name.values_mut() {
        v.sort_unstable();
    }
    let mut reps: Vec<(i64, i64, &str, (usize, usize))> = Vec::new();
    for (ci, case) in rec.cases.iter().enumerate() {
        for (ri, r) in case.reps.iter().enumerate() {
            reps.push((r.host_call_start_ns as i64, r.host_call_ns as i64, base_name(&case.setup.call), (ci, ri)));
        }
    }
    reps.sort_unstable_by_key(|r| r.0);
    // The offset most repetitions agree on, among calls of the same name and about the same length.
    let mut votes: HashMap<i64, (usize, i64)> = HashMap::new();
    for &(start, len, name, _) in &reps {
        for &(t, i) in by_name.get(name).into_iter().flatten() {
            let d = p.calls[i].span.len();
            if (d - len).abs() <= (len / 10).max(10_000) {
                let e = votes.entry((t - start).div_euclid(BUCKET_NS)).or_insert((0, t - start));
                e.0 += 1;
            }
        }
    }
    let Some(&(_, mut offset)) = votes.values().max_by_key(|(n, off)| (*n, std::cmp::Reverse(*off))) else {
        return vec![];
    };
    let mut out = Vec::new();
    for (start, _, name, key) in reps {
        let Some(cands) = by_name.get(name) else { continue };
        let at = start + offset;
        let lo = cands.partition_point(|&(t, _)| t < at - WINDOW_NS);
        let best = cands[lo..].iter().take_while(|&&(t, _)| t <= at + WINDOW_NS).min_by_key(|&&(t, _)| (t - at).abs());
        if let Some(&(t, i)) = best {
            offset = t - start;
            out.push((key, i));
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::base_name;

    #[test]
    fn names_compare_by_their_leading_identifier() {
        assert_eq!(base_name("cudaMemcpyAsync(Default)"), "cudaMemcpyAsync");
        assert_eq!(base_name("cuMemcpyHtoDAsync_v2"), "cuMemcpyHtoDAsync");
        assert_eq!(base_name("cudaLaunchKernel_ptsz"), "cudaLaunchKernel");
        assert_eq!(base_name("cudaFree(0)"), "cudaFree");
        assert_eq!(base_name("cuMemcpyAsync_ptsz"), "cuMemcpyAsync");
    }
}
