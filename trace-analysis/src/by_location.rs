//! The held calls grouped by where in the program they were made (their innermost user frame, see
//! `location`): per place, how many calls held their thread, for how long in all and at the median, their
//! class and the cause that held them longest. What the program pays once (see `once` and `startup`: the
//! context, loading code, the allocator's growth, a model's upload...) is one line of its own, whatever
//! line it was made at. The place with the most time held comes first.

use super::calls::Traced;
use super::location::Place;
use super::scene::Program;
use super::words::duration;
use crate::attribution::Cause;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What held one place's calls longest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LargestCause {
    /// `stream`, `device`, `thread`, `own` or `call` (see `attribution::Cause`).
    pub cause: String,
    /// The cause in words ("its stream").
    pub words: String,
    /// Its time over all the place's calls.
    pub ns: i64,
    /// The work that held it most over the place's calls (a kernel by its name, a copy by its size and
    /// direction, summed over its pieces), in words, without correlation ids (empty for `own` and `call`).
    pub what: String,
    /// How long that work held it.
    pub what_ns: i64,
}

/// One place's held calls.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Row {
    pub place: Place,
    pub calls: usize,
    /// Of them, calls with no location of their own placed as the same call site was (`sites`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub inferred_calls: usize,
    pub total_ns: i64,
    pub median_ns: i64,
    /// Each class of its calls with how many, the most common first.
    pub classes: Vec<ClassCount>,
    pub largest_cause: Option<LargestCause>,
}

/// One class among a place's calls.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ClassCount {
    pub class: String,
    pub calls: usize,
}

/// The start-up calls, summed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Startup {
    pub calls: usize,
    /// The start-up calls' host time in all, held or not.
    pub total_ns: i64,
}

/// The calls the program paid once (start-up among them), summed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PaidOnce {
    pub calls: usize,
    /// Their host time in all.
    pub total_ns: i64,
    /// What for, in words ("context creation, 30 libraries loaded, 37 allocations (the allocator's growth)").
    pub what: String,
}

/// The table: start-up, what is paid once, and a row per place.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ByLocation {
    /// `None` where the program had no start-up call.
    pub startup: Option<Startup>,
    /// What the program paid once, left out of the rows (`None`: nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paid_once: Option<PaidOnce>,
    /// Whether start-up was left out of every table (`--after-startup`).
    pub after_startup: bool,
    /// The place with most time held first.
    pub rows: Vec<Row>,
}

/// What is left out of the rows: the start-up calls, and the calls paid once with what they paid for (each
/// indexed as `Program::calls`).
pub struct Apart<'a> {
    pub startup: &'a [bool],
    pub paid_once: &'a [bool],
    pub paid_once_words: String,
}

/// Groups the calls held longer than `min_held_ns` (`places` indexed as `Program::calls`), those `apart` left
/// out of the rows.
pub fn by_location(
    p: &Program,
    traced: &[Traced],
    places: &[Place],
    apart: Apart,
    min_held_ns: i64,
    after_startup: bool,
) -> ByLocation {
    let startup = apart.startup;
    let up: Vec<&Traced> = traced.iter().filter(|t| startup[t.index]).collect();
    let start = (!up.is_empty())
        .then(|| Startup { calls: up.len(), total_ns: up.iter().map(|t| p.calls[t.index].span.len()).sum() });
    let once: Vec<&Traced> =
        traced.iter().filter(|t| apart.paid_once[t.index] && !(after_startup && startup[t.index])).collect();
    let paid_once = (!once.is_empty()).then(|| PaidOnce {
        calls: once.len(),
        total_ns: once.iter().map(|t| p.calls[t.index].span.len()).sum(),
        what: apart.paid_once_words,
    });
    let mut groups: BTreeMap<_, Vec<&Traced>> = BTreeMap::new();
    for t in traced.iter().filter(|t| !apart.paid_once[t.index] && t.held.total_ns > min_held_ns) {
        groups.entry(places[t.index].key()).or_default().push(t);
    }
    // Each row named by the place of its call that held longest (the calls of one line differ only in their
    // chain below it).
    let mut rows: Vec<Row> = groups
        .into_values()
        .map(|calls| {
            let longest = calls.iter().max_by_key(|t| (t.held.total_ns, std::cmp::Reverse(t.index))).map(|t| t.index);
            row(places, longest.unwrap_or_default(), &calls)
        })
        .collect();
    rows.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then_with(|| a.place.cmp(&b.place)));
    ByLocation { startup: start, paid_once, after_startup, rows }
}

/// `usize` zero, for `skip_serializing_if`.
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The row of `calls`, named by the place of call `longest` (`places` indexed as `Program::calls`).
fn row(places: &[Place], longest: usize, calls: &[&Traced]) -> Row {
    let place = &places[longest];
    let mut held: Vec<i64> = calls.iter().map(|t| t.held.total_ns).collect();
    held.sort_unstable();
    let mut classes: BTreeMap<&str, usize> = BTreeMap::new();
    for t in calls {
        *classes.entry(t.class.as_str()).or_default() += 1;
    }
    let mut classes: Vec<ClassCount> =
        classes.into_iter().map(|(c, n)| ClassCount { class: c.to_owned(), calls: n }).collect();
    classes.sort_by(|a, b| b.calls.cmp(&a.calls).then_with(|| a.class.cmp(&b.class)));
    // Per cause: its time in all, and per kind of work that held it (correlation ids cut), its time.
    let mut causes: BTreeMap<Cause, (i64, BTreeMap<String, i64>)> = BTreeMap::new();
    for s in calls.iter().flat_map(|t| &t.held.segments) {
        let e = causes.entry(s.cause).or_default();
        e.0 += s.span.len();
        if !s.what.is_empty() {
            *e.1.entry(s.holder.kind()).or_default() += s.span.len();
        }
    }
    let largest_cause = causes.into_iter().max_by_key(|(cause, (ns, _))| (*ns, std::cmp::Reverse(*cause))).map(
        |(cause, (ns, kinds))| {
            let (what, what_ns) = kinds
                .into_iter()
                .max_by(|(a, a_ns), (b, b_ns)| a_ns.cmp(b_ns).then_with(|| b.cmp(a)))
                .unwrap_or_default();
            LargestCause { cause: cause.slug().into(), words: super::words::cause(cause).into(), ns, what, what_ns }
        },
    );
    Row {
        place: place.clone(),
        calls: calls.len(),
        inferred_calls: calls.iter().filter(|t| places[t.index].inferred.is_some()).count(),
        total_ns: held.iter().sum(),
        median_ns: held[held.len() / 2],
        classes,
        largest_cause,
    }
}

/// The classes of a row in a few words: the one class, or each with its count.
pub fn class_words(r: &Row) -> String {
    match r.classes.as_slice() {
        [one] => one.class.clone(),
        many => many.iter().map(|c| format!("{} ×{}", c.class, c.calls)).collect::<Vec<_>>().join(", "),
    }
}

/// The largest cause of a row in words: "its stream 24.8 ms, 61% of it the kernel sm80_xmma_gemm… ahead in
/// its stream".
pub fn cause_words(r: &Row) -> String {
    match &r.largest_cause {
        None => String::new(),
        Some(c) if c.what.is_empty() => format!("{} {}", c.words, duration(c.ns)),
        Some(c) if super::words::percent(c.what_ns, c.ns) == "100%" => {
            format!("{} {}: {}", c.words, duration(c.ns), c.what)
        }
        Some(c) => {
            format!("{} {}, {} of it {}", c.words, duration(c.ns), super::words::percent(c.what_ns, c.ns), c.what)
        }
    }
}
