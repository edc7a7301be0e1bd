//! The findings of a trace: the calls that CUDA held (their class neither `async` nor `staged`), classified
//! by cause ([`kind`]) and grouped by where they were made, each group with how many, the median and the
//! total, what held them (`what_held`), and a remedy in the program's framework with what the lab measured of
//! it on the H200 (`remedy`); the terminal's text of them is `findings_text`, the causes and their test `cause`.
//!
//! The causes ([`Kind`]), in the order a call is tested for them: first what the program pays once, by its
//! cause (`once`: context creation, loading code, compiling, a library's setup, a caching allocator's growth,
//! a model's upload); then a copy from or to pageable memory that held its thread for its transfer; another
//! thread's call; a free that drained the device, or another call that did; a launch into a full queue; a
//! synchronization, or a copy to the host, that waited for its stream; any other wait for its stream; driver
//! work. Warm-up findings (`warmup`: what is paid once, and the steps `--skip-first` leaves out) are kept
//! apart from the steady state's.
//!
//! A group is keyed by the call's place as the by-location table keys it (`location::Place::key`: its kind, its
//! words, the NVTX range beside it), except what is paid once, which happens wherever the program first needs
//! a kernel, a library or memory, and is one finding per cause. NVTX ranges named once per step
//! (`batch-to-gpu-0`, `batch-to-gpu-1`, ...) are one place: their numbers are folded (shown
//! `batch-to-gpu-0…7`).

use super::analysis::Analysis;
use super::by_location::ClassCount;
pub use super::cause::{kind, Kind};
use super::framework::Framework;
use super::location::{Kind as PlaceKind, Place};
use super::remedy::{self, Remedy};
use super::warmup::WarmUp;
use super::words::fold;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One finding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Finding {
    pub kind: Kind,
    /// In words ("pageable copies").
    pub title: String,
    /// Its place: its longest call's (NVTX step numbers folded), which its calls share as the by-location
    /// table keys a place; for a finding of context creation or of loading code, its longest call's as it is.
    pub place: Place,
    /// The place for people: `nvtx: batch-to-gpu-0…7`, or `train.py:41 main and 11 more places`.
    pub where_words: String,
    /// How many places its calls were made at.
    pub places: usize,
    pub calls: usize,
    /// Of them, calls with no location of their own placed as the same call site was (`sites`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub inferred_calls: usize,
    pub median_ns: i64,
    pub total_ns: i64,
    /// Its calls are warm-up (see `warmup`).
    pub warm_up: bool,
    /// The framework its longest call was made through, in whose API the remedy is worded.
    pub framework: Framework,
    /// Each class of its calls with how many, the most common first.
    pub classes: Vec<ClassCount>,
    /// What held them, in words.
    pub what: String,
    pub remedy: Remedy,
    /// Its longest call's `--explain` id (its correlation id).
    pub explain: u32,
    /// Every call's `--explain` id, longest first.
    pub calls_explain: Vec<u32>,
}

/// The findings of an analysed process, steady state first, each part the most time first; start-up left
/// out with `after_startup`.
pub fn findings(a: &Analysis, warm: &WarmUp, after_startup: bool) -> Vec<Finding> {
    let mut groups: BTreeMap<(bool, Kind, PlaceKey), Vec<usize>> = BTreeMap::new();
    let held = |i: &usize| !(a.traced[*i].class.returns_at_once() || (after_startup && a.startup[*i]));
    for i in (0..a.program.calls.len()).filter(held) {
        let kind = kind(a, i);
        let key = if kind.by_kind_alone() { (PlaceKind::Api, String::new(), None) } else { key(&a.places[i]) };
        groups.entry((warm.calls[i], kind, key)).or_default().push(i);
    }
    let mut out: Vec<Finding> =
        groups.into_iter().map(|((warm_up, kind, _), calls)| finding(a, kind, warm_up, calls)).collect();
    out.sort_by(|x, y| {
        x.warm_up.cmp(&y.warm_up).then(y.total_ns.cmp(&x.total_ns)).then(x.where_words.cmp(&y.where_words))
    });
    out
}

/// What a finding's calls share of their place: as the by-location table keys a place (its kind, its words,
/// the NVTX range beside it: `Place::key`), with NVTX step numbers folded.
type PlaceKey = (PlaceKind, String, Option<String>);

fn key(place: &Place) -> PlaceKey {
    let f = folded(place);
    (f.kind, f.words, f.nvtx)
}

/// A place with the numbers of its NVTX range's name folded (`batch-to-gpu-#`), so that ranges named once per
/// step are one place: the range it is placed by, and the range beside a place of another kind.
fn folded(place: &Place) -> Place {
    let words = if place.kind == PlaceKind::Nvtx { fold(&place.words) } else { place.words.clone() };
    Place { words, nvtx: place.nvtx.as_deref().map(fold), ..place.clone() }
}

/// The places of a group in words: one place as itself; places that differ in the one number of an NVTX
/// range's name as `nvtx: batch-to-gpu-0…7`; else the one with the most time and how many more.
fn where_words(a: &Analysis, calls: &[usize]) -> (String, usize) {
    let mut by: BTreeMap<String, i64> = BTreeMap::new();
    for &i in calls {
        *by.entry(a.places[i].shown()).or_default() += a.traced[i].held.total_ns;
    }
    let places = by.len();
    if places == 1 {
        return (by.into_keys().next().unwrap_or_default(), 1);
    }
    // Ranges named once per step: the one number that differs, from the least to the most.
    let template = folded(&a.places[calls[0]]).shown();
    let same = calls.iter().all(|&i| folded(&a.places[i]).shown() == template);
    if let (true, [head, tail]) = (same, template.split('#').collect::<Vec<_>>().as_slice()) {
        let numbers: Vec<u64> =
            by.keys().filter_map(|w| w.strip_prefix(head)?.strip_suffix(tail)?.parse().ok()).collect();
        if let (Some(lo), Some(hi)) = (numbers.iter().min(), numbers.iter().max()) {
            return (format!("{head}{lo}…{hi}{tail}"), places);
        }
    }
    let most = by.iter().max_by_key(|(w, ns)| (**ns, std::cmp::Reverse(*w))).map_or("", |(w, _)| w.as_str());
    let more = places - 1;
    (format!("{most} and {more} more place{}", if more == 1 { "" } else { "s" }), places)
}

fn finding(a: &Analysis, kind: Kind, warm_up: bool, mut calls: Vec<usize>) -> Finding {
    let held = |i: usize| a.traced[i].held.total_ns;
    calls.sort_by(|&x, &y| held(y).cmp(&held(x)).then(x.cmp(&y)));
    let mut times: Vec<i64> = calls.iter().map(|&i| held(i)).collect();
    times.sort_unstable();
    let mut classes: BTreeMap<&str, usize> = BTreeMap::new();
    for &i in &calls {
        *classes.entry(a.traced[i].class.as_str()).or_default() += 1;
    }
    let mut classes: Vec<ClassCount> =
        classes.into_iter().map(|(c, n)| ClassCount { class: c.to_owned(), calls: n }).collect();
    classes.sort_by(|x, y| y.calls.cmp(&x.calls).then_with(|| x.class.cmp(&y.class)));
    let (where_words, places) = where_words(a, &calls);
    let longest = calls[0];
    let place = if kind.by_kind_alone() { a.places[longest].clone() } else { folded(&a.places[longest]) };
    let what = super::what_held::what(a, kind, &calls);
    let framework = a.framework_of(longest);
    let remedy = remedy::remedy(a, kind, &calls, framework);
    Finding {
        kind,
        title: kind.title().into(),
        place,
        where_words,
        places,
        calls: calls.len(),
        inferred_calls: calls.iter().filter(|&&i| a.places[i].inferred.is_some()).count(),
        median_ns: times[times.len() / 2],
        total_ns: times.iter().sum(),
        warm_up,
        framework,
        classes,
        what,
        remedy,
        explain: a.program.calls[longest].corr,
        calls_explain: calls.iter().map(|&i| a.program.calls[i].corr).collect(),
    }
}

/// `usize` zero, for `skip_serializing_if`.
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// How many of a finding's calls were placed as the same call site was, in words (" (3 placed as the same
/// call at its line: no location of their own)"); empty where none.
pub fn inferred_words(f: &Finding) -> String {
    match f.inferred_calls {
        0 => String::new(),
        n if n == f.calls => " (placed as the same call elsewhere in the trace: none has a location of its own)".into(),
        n => format!(" ({n} placed as the same call: no location of {})", if n == 1 { "its own" } else { "their own" }),
    }
}
