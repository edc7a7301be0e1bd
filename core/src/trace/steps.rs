//! A program's own timing of its calls beside the tracer's: a program may print *steps*, one JSON line each
//! prefixed by `async-lab-step ` (`reference/frameworks/steps.py` does, around the one statement each step is
//! about), with its thread (`gettid`), the CUDA call it is about and its start and end on `CLOCK_MONOTONIC`
//! (Python's `time.perf_counter_ns`, C++'s `steady_clock`). [`compare`] puts each step on the trace's clock
//! (the clock pair of the trace's setup line, format 3) and finds the calls of that name the thread made inside it: the
//! program's own time beside the time the tracer says those calls held the thread, their class, and what the
//! class rests on.

use super::calls::Traced;
use super::capability::function_of;
use super::format::{ClockPair, Line, ProcessTrace};
use super::scene::Program;
use crate::attribution::Span;
use serde::{Deserialize, Serialize};

/// What starts a step's line.
pub const PREFIX: &str = "async-lab-step ";

/// One step, as the program printed it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub program: String,
    pub step: String,
    /// The CUDA API function the step is about (`cudaMemcpyAsync`).
    pub call: String,
    /// The thread (`gettid`).
    pub tid: u64,
    /// On `CLOCK_MONOTONIC`, ns.
    pub start_ns: u64,
    pub end_ns: u64,
    #[serde(default)]
    pub about: String,
}

/// The steps among a program's output lines (other lines are left alone); a step line that does not parse
/// is an error naming its line.
pub fn parse(output: &str) -> anyhow::Result<Vec<Step>> {
    let mut steps = Vec::new();
    for (k, line) in output.lines().enumerate() {
        if let Some(json) = line.trim_start().strip_prefix(PREFIX) {
            let step: Step = serde_json::from_str(json)
                .map_err(|e| anyhow::anyhow!("line {}: a step line that is not a step ({e}): {line}", k + 1))?;
            steps.push(step);
        }
    }
    Ok(steps)
}

/// One step beside the trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub step: Step,
    /// The program's own time, ns.
    pub own_ns: i64,
    /// The correlation ids of the calls of the step's function that the thread made inside the step, longest
    /// first.
    pub corrs: Vec<u32>,
    /// The time those calls held the thread, together, ns.
    pub held_ns: i64,
    /// The time every call the thread made inside the step held it, together, ns (what the program's own
    /// time should be, less the interpreter's own work between the calls).
    pub all_held_ns: i64,
    /// How many calls the thread made inside the step.
    pub all_calls: usize,
    /// The step's thread made no call inside it: the calls above are every thread's that ran during it.
    pub other_threads: bool,
    /// The longest call the thread made inside the step (whatever its function): its name, correlation id,
    /// held time, class and words.
    pub longest: Option<String>,
    pub longest_corr: Option<u32>,
    pub longest_ns: i64,
    pub class: Option<String>,
    pub cause: Option<String>,
    /// What its class rests on: the lab's experiment, or none where it waited for nothing.
    pub basis: Option<String>,
}

impl Row {
    /// The held time of every call in the step over the program's own time.
    pub fn share(&self) -> f64 {
        if self.own_ns > 0 {
            self.all_held_ns as f64 / self.own_ns as f64
        } else {
            0.0
        }
    }
}

/// The clock pair of a process's trace (format 3), to put `CLOCK_MONOTONIC` times on the trace's clock.
pub fn clock(p: &ProcessTrace) -> Option<ClockPair> {
    p.lines.iter().find_map(|l| match l {
        Line::Setup { clock, .. } => Some(*clock),
        _ => None,
    })
}

/// Each step beside the calls its thread made inside it, in the order printed; `None` where the trace has no clock pair
/// (a trace made before format 3).
pub fn compare(process: &ProcessTrace, p: &Program, traced: &[Traced], steps: &[Step]) -> Option<Vec<Row>> {
    let clock = clock(process)?;
    let by_index: std::collections::HashMap<usize, &Traced> = traced.iter().map(|t| (t.index, t)).collect();
    Some(
        steps
            .iter()
            .map(|s| {
                let span = Span::new(clock.to_trace(s.start_ns), clock.to_trace(s.end_ns));
                let within = |c: &super::scene::Call| c.span.start >= span.start && c.span.end <= span.end;
                let mut all: Vec<(usize, &Traced)> = p
                    .calls
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.tid == s.tid && within(c))
                    .filter_map(|(i, _)| by_index.get(&i).map(|t| (i, *t)))
                    .collect();
                // A framework that makes its CUDA calls on threads of its own (JAX's runtime) leaves the
                // step's thread none: every thread's calls that ran during the step, then (a runtime thread's
                // wait may have begun before the step did).
                let other_threads = all.is_empty();
                if other_threads {
                    all = p
                        .calls
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| c.span.overlap(&span) > 0)
                        .filter_map(|(i, _)| by_index.get(&i).map(|t| (i, *t)))
                        .collect();
                }
                let mut inside: Vec<&Traced> = all
                    .iter()
                    .filter(|(i, _)| function_of(&p.calls[*i].name) == function_of(&s.call))
                    .map(|(_, t)| *t)
                    .collect();
                inside.sort_by_key(|t| std::cmp::Reverse(t.held.total_ns));
                let longest = all.iter().map(|(_, t)| *t).max_by_key(|t| (t.held.total_ns, std::cmp::Reverse(t.index)));
                Row {
                    step: s.clone(),
                    own_ns: span.len(),
                    corrs: inside.iter().map(|t| p.calls[t.index].corr).collect(),
                    held_ns: inside.iter().map(|t| t.held.total_ns).sum(),
                    all_held_ns: all.iter().map(|(_, t)| t.held.total_ns).sum(),
                    all_calls: all.len(),
                    other_threads,
                    longest: longest.map(|t| p.calls[t.index].name.clone()),
                    longest_corr: longest.map(|t| p.calls[t.index].corr),
                    longest_ns: longest.map_or(0, |t| t.held.total_ns),
                    class: longest.map(|t| t.class.to_string()),
                    cause: longest.map(|t| t.cause.clone()),
                    basis: longest.and_then(|t| t.basis.as_ref()).map(|e| format!("{} ({})", e.case, e.rule)),
                }
            })
            .collect(),
    )
}

/// The rows as a Markdown table, for docs/trace-validation.md: each step's own time, the held time of every call its
/// thread made inside it, and the longest of those calls with its class, what held it and the experiment
/// of the lab's that shows its function can wait that way.
pub fn markdown(rows: &[Row]) -> String {
    let us = |ns: i64| crate::units::duration(ns as f64);
    let mut out = String::from(
        "| program | step | own time | held by its calls | the longest call | held | class | what held it | the lab's experiment |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} ({} calls{}, {:.0}%) | {} | {} | {} | {} | {} |\n",
            r.step.program,
            r.step.step,
            us(r.own_ns),
            us(r.all_held_ns),
            r.all_calls,
            if r.other_threads { " of other threads, during it" } else { "" },
            r.share() * 100.0,
            r.longest.as_deref().map_or("none".to_string(), |n| format!("`{n}` ({})", r.longest_corr.unwrap_or(0))),
            us(r.longest_ns),
            r.class.as_deref().unwrap_or("-"),
            r.cause.as_deref().unwrap_or("").replace('|', "\\|"),
            r.basis.as_deref().map_or(String::new(), |b| format!("`{b}`")),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_lines_are_picked_from_a_programs_output() {
        let out = "hello\nasync-lab-step {\"program\":\"p\",\"step\":\"item\",\"call\":\"cudaMemcpyAsync\",\"tid\":7,\"start_ns\":10,\"end_ns\":30}\nbye\n";
        let steps = parse(out).unwrap();
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].step, "item");
        assert_eq!(steps[0].end_ns - steps[0].start_ns, 20);
        let err = parse("async-lab-step {\"program\":1}").unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");
    }
}
