//! A traced run of the C++ reference (`reference/async_ref.cu`) beside the reference's own classes
//! (`async-lab trace --replay TRACE --against async_ref.json`): each repetition's timed call found in the
//! trace by its name and its start (`timed_calls`), and the tracer's class of each case next to the reference's.
//!
//! The two name different things. The reference classifies by the order of events at the return (did the
//! blocker end, was the op done, was the source captured), in the vocabulary before the classes named what
//! held the thread (`async`, `staged`, `blocking`, `waited-then-staged`, `device-sync`); the tracer names what
//! held the thread. So a case is:
//! - *equal* where the tracer's class is the reference's, `waited-then-staged` read as `waited-for-stream`
//!   (`Class::from_legacy_word`);
//! - *compatible* where they differ as the two vocabularies do, with the reason ([`Reason`]);
//! - a *disagreement* otherwise.

use super::analysis::Analysis;
use super::timed_calls::{self, Timed};
use crate::async_ref::RefOutput;
use crate::classify::{majority, Class};
use anyhow::bail;
use std::fmt::Write as _;

/// Why two different classes are compatible.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// A trace has no staging probe (it never writes to the program's buffers): a copy the reference saw
    /// staged reads `async` there, or `blocking` where the call was held through its transfer
    /// (`docs/trace-validation.md`).
    NoStagingProbe,
    /// The reference's `blocking` is "everything had finished at the return"; with the blocker ahead in the
    /// call's stream, what held the thread was that stream's earlier work.
    BlockerAhead,
}

impl Reason {
    pub const ALL: [Reason; 2] = [Reason::NoStagingProbe, Reason::BlockerAhead];

    /// A few words, for a table's cell.
    pub fn tag(self) -> &'static str {
        match self {
            Reason::NoStagingProbe => "no staging probe",
            Reason::BlockerAhead => "blocker ahead",
        }
    }

    /// The reason in full.
    pub fn words(self) -> &'static str {
        match self {
            Reason::NoStagingProbe => {
                "reference staged, tracer async or blocking: a trace has no staging probe, so a copy that returned \
                 with its source captured reads async, or blocking where it was held through its transfer"
            }
            Reason::BlockerAhead => {
                "reference blocking, tracer waited-for-stream, the blocker ahead in the call's stream: the \
                 reference's blocking says everything had finished at the return, the tracer names what held the \
                 thread, the stream's earlier work"
            }
        }
    }
}

/// How the tracer's class of a case stands to the reference's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Equal,
    /// Different words where the two vocabularies tell things apart differently.
    Compatible(Reason),
    Disagrees,
    /// The trace holds none of the case's repetitions.
    NotFound,
}

/// One case of the reference: its class and the tracer's, over the repetitions found.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub id: String,
    /// The runtime function of the timed call.
    pub call: String,
    /// The reference's word for the case, as it wrote it.
    pub reference_word: String,
    /// The same, in today's vocabulary (`waited-then-staged` is `waited-for-stream`); none for a word the
    /// vocabulary does not have.
    pub reference: Option<Class>,
    /// The majority of the tracer's classes of the repetitions found.
    pub traced: Option<Class>,
    pub traced_classes: Vec<Class>,
    pub reps: usize,
    pub verdict: Verdict,
}

/// Where the two classes differ only as the two vocabularies do: why. `blocker_ahead`: the reference ran the
/// blocker in the call's own stream, ordered before it.
pub fn compatible(reference: Class, traced: Class, blocker_ahead: bool) -> Option<Reason> {
    match (reference, traced) {
        (Class::Staged, Class::Async | Class::Blocking) => Some(Reason::NoStagingProbe),
        (Class::Blocking, Class::WaitedForStream) if blocker_ahead => Some(Reason::BlockerAhead),
        _ => None,
    }
}

/// The verdict on one case.
pub fn verdict(reference: Option<Class>, traced: Option<Class>, blocker_ahead: bool) -> Verdict {
    match (reference, traced) {
        (_, None) => Verdict::NotFound,
        (Some(r), Some(t)) if r == t => Verdict::Equal,
        (Some(r), Some(t)) => compatible(r, t, blocker_ahead).map_or(Verdict::Disagrees, Verdict::Compatible),
        (None, Some(_)) => Verdict::Disagrees,
    }
}

/// Whether a trace of the run can be compared with `refs`: it holds the reference's cases (not its
/// `--overhead` mode) with each repetition's start.
pub fn check(refs: &RefOutput) -> anyhow::Result<()> {
    if let Some(mode) = refs.mode.as_deref() {
        bail!("it is async_ref's --{mode} output, which has no classes");
    }
    if refs.cases.iter().all(|c| c.host_call_start_ns.is_empty()) {
        bail!(
            "its cases have no host_call_start_ns: it was written by an async_ref that did not record when each \
             repetition's call began, so a trace cannot be searched for them (run reference/async_ref.cu again)"
        );
    }
    Ok(())
}

/// The rows, one per classified case of `refs` (no error, a class, a call, its repetitions' starts), in its
/// order. The cases left out are counted by [`left_out`].
pub fn compare(refs: &RefOutput, analyses: &[Analysis]) -> Vec<Row> {
    let compared: Vec<(usize, &crate::async_ref::RefCase)> =
        refs.cases.iter().enumerate().filter(|(_, c)| comparable(c)).collect();
    let timed = timed(refs);
    let classes = timed_calls::traced_classes(&timed, analyses);
    compared
        .into_iter()
        .map(|(ci, c)| {
            let reps = c.host_call_start_ns.len();
            let traced_classes: Vec<Class> = (0..reps).filter_map(|ri| classes.get(&(ci, ri)).copied()).collect();
            let word = c.class.clone().unwrap_or_default();
            let reference = Class::from_legacy_word(&word);
            let traced = majority(&traced_classes).map(|(c, _)| c);
            Row {
                id: c.id.clone(),
                call: c.call.clone().unwrap_or_default(),
                reference_word: word,
                reference,
                traced,
                traced_classes,
                reps,
                verdict: verdict(reference, traced, c.blocker_ahead == Some(true)),
            }
        })
        .collect()
}

/// The timed calls of the cases [`compare`] compares, keyed by (the case's index in `refs.cases`, repetition).
pub fn timed(refs: &RefOutput) -> Vec<Timed<'_>> {
    refs.cases
        .iter()
        .enumerate()
        .filter(|(_, c)| comparable(c))
        .flat_map(|(ci, c)| {
            let call = c.call.as_deref().unwrap_or_default();
            c.host_call_start_ns.iter().enumerate().map(move |(ri, &start)| Timed {
                start_ns: start as i64,
                len_ns: c.host_call_ns.get(ri).map_or(0, |&n| n as i64),
                call,
                key: (ci, ri),
            })
        })
        .collect()
}

/// Whether a case of the reference can be compared: it has a class, a call and its repetitions' starts.
fn comparable(c: &crate::async_ref::RefCase) -> bool {
    c.error.is_none() && c.class.is_some() && c.call.is_some() && !c.host_call_start_ns.is_empty()
}

/// The reference's cases [`compare`] leaves out: with an error, or without a class, a call or starts.
pub fn left_out(refs: &RefOutput) -> usize {
    refs.cases.iter().filter(|c| !comparable(c)).count()
}

/// The rows as a Markdown table: the counts first (equal, compatible with each reason, disagreements, not
/// found), then the cases in that order.
pub fn markdown(rows: &[Row], left_out: usize) -> String {
    let count = |f: &dyn Fn(&Verdict) -> bool| rows.iter().filter(|r| f(&r.verdict)).count();
    let equal = count(&|v| *v == Verdict::Equal);
    let compatible = count(&|v| matches!(v, Verdict::Compatible(_)));
    let disagree = count(&|v| *v == Verdict::Disagrees);
    let not_found = count(&|v| *v == Verdict::NotFound);
    let found = rows.len() - not_found;
    let mut out = format!(
        "{equal} of {found} cases whose timed call the trace holds have the same class from the tracer as from the \
         reference (its waited-then-staged read as waited-for-stream); {compatible} more differ only as the two \
         vocabularies do; {disagree} {}. {} cases compared, {not_found} not found in the trace{}.\n",
        if disagree == 1 { "disagrees" } else { "disagree" },
        rows.len(),
        if left_out > 0 {
            format!("; {left_out} of the reference's cases left out (an error, or no class)")
        } else {
            String::new()
        }
    );
    if compatible > 0 {
        out.push('\n');
    }
    for reason in Reason::ALL {
        let n = count(&|v| *v == Verdict::Compatible(reason));
        if n > 0 {
            let _ = writeln!(out, "- compatible ({}), {n}: {}.", reason.tag(), reason.words());
        }
    }
    out.push_str("\n| id | call | reference | tracer | reps found | |\n|---|---|---|---|---|---|\n");
    let group = |v: &Verdict| match v {
        Verdict::Equal => 0,
        Verdict::Compatible(_) => 1,
        Verdict::Disagrees => 2,
        Verdict::NotFound => 3,
    };
    let mut ordered: Vec<&Row> = rows.iter().collect();
    ordered.sort_by_key(|r| group(&r.verdict));
    for r in ordered {
        let _ = writeln!(
            out,
            "| `{}` | `{}` | {} | {} | {}/{} | {} |",
            r.id,
            r.call,
            r.reference.map_or_else(|| r.reference_word.clone(), |c| c.to_string()),
            match (r.traced, r.verdict) {
                (Some(c), Verdict::Disagrees) => format!("**{c}**"),
                (Some(c), _) => c.to_string(),
                (None, _) => "-".into(),
            },
            r.traced_classes.len(),
            r.reps,
            match r.verdict {
                Verdict::Equal => "equal".to_string(),
                Verdict::Compatible(reason) => format!("compatible ({})", reason.tag()),
                Verdict::Disagrees => "**disagrees**".into(),
                Verdict::NotFound => "not found".into(),
            }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vocabularies_differ_where_the_trace_cannot_see_staging_and_where_the_blocker_was_ahead() {
        let staged = Class::from_legacy_word("staged");
        assert_eq!(verdict(staged, Some(Class::Async), false), Verdict::Compatible(Reason::NoStagingProbe));
        assert_eq!(verdict(staged, Some(Class::Blocking), true), Verdict::Compatible(Reason::NoStagingProbe));
        assert_eq!(verdict(staged, Some(Class::DeviceSync), true), Verdict::Disagrees);
        let blocking = Class::from_legacy_word("blocking");
        assert_eq!(verdict(blocking, Some(Class::WaitedForStream), true), Verdict::Compatible(Reason::BlockerAhead));
        assert_eq!(verdict(blocking, Some(Class::WaitedForStream), false), Verdict::Disagrees);
        let waited = Class::from_legacy_word("waited-then-staged");
        assert_eq!(verdict(waited, Some(Class::WaitedForStream), true), Verdict::Equal);
        assert_eq!(verdict(waited, None, true), Verdict::NotFound);
        assert_eq!(verdict(None, Some(Class::Async), false), Verdict::Disagrees);
    }
}
