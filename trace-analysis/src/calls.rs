//! Each call of a traced program through the attribution and the classes, as the lab's own experiments go:
//! what held the thread, for how long, and in words ("lazy module load waited for the 2 GiB host → device
//! copy ahead in its stream, correlation 122").
//!
//! A call whose class would rest on GPU records the trace lacks reads `unknown` instead, with why
//! (`claims`): a call that enqueued GPU work with none of it in the trace, in a section cut short
//! (the program was killed) or whose CUPTI dropped records; and a call without work of its own that the
//! attribution finds held by nothing, where work whose records are missing may have held it. A call that
//! enqueues nothing (a synchronize) is still judged from the records there are.

use super::call_words::cause_words;
use super::capability::Entry;
use super::claims::{check, missing_words, shown, unrecorded_words, Check, Redo};
use super::scene::Program;
use crate::attribution::{attribute, Cause, Held, Segment, Span};
use crate::class::{class_of_held, Class};

/// One call, classified.
#[derive(Clone, Debug, PartialEq)]
pub struct Traced {
    /// The call's index in `Program::calls`.
    pub index: usize,
    pub held: Held,
    pub class: Class,
    /// Module loads on its thread while it ran (lazy loading, or a load at run time).
    pub module_loads: usize,
    /// Contexts created on its thread while it ran.
    pub contexts: usize,
    /// What held it, in words: the largest part first, then the rest in time order.
    pub cause: String,
    /// The experiment of the lab's that shows its function can wait the way it waited (`None`: it waited
    /// for nothing).
    pub basis: Option<Entry>,
    /// Waits the attribution found that are not claimed, and why: the lab never saw its function wait that
    /// way, or never measured it. Their holders are in `held.overlapped`.
    pub not_claimed: Vec<NotClaimed>,
}

/// A wait that is not claimed.
#[derive(Clone, Debug, PartialEq)]
pub struct NotClaimed {
    pub cause: Cause,
    /// Why, in words ("the lab has never measured cudaHostAlloc or cuMemHostAlloc").
    pub why: String,
}

/// Every call of the program, in the order they began.
pub fn classify(p: &Program) -> Vec<Traced> {
    (0..p.calls.len()).map(|i| traced(p, i)).collect()
}

/// Call `i`, classified: the attribution of its scene, each wait it finds checked against what the lab has
/// measured of the call's function (`capability`); a wait the lab never saw that function make under what the
/// trace shows is dropped (its holders kept as overlapped) and the call attributed again without it.
pub fn traced(p: &Program, i: usize) -> Traced {
    let v = p.view(i);
    let c = v.call;
    let mut scene = p.scene_of(&v);
    let functions = v.functions();
    let loads_by_name = functions.iter().any(|n| is_load(n));
    let shown = shown(&v, loads_by_name);
    let stream_known = v.stream.is_some();
    let mut not_claimed: Vec<NotClaimed> = Vec::new();
    let mut dropped: Vec<Segment> = Vec::new();
    let (mut held, basis) = loop {
        let held = attribute(&scene);
        // Every way it waited must be one the lab saw; the release first (it decides the class).
        let mut waits: Vec<Cause> = held.released_by().map(|s| s.cause).into_iter().collect();
        for s in &held.segments {
            if matches!(s.cause, Cause::Stream | Cause::Device | Cause::Thread) && !waits.contains(&s.cause) {
                waits.push(s.cause);
            }
        }
        let mut basis: Option<Entry> = None;
        let mut redo: Option<Redo> = None;
        for (k, &cause) in waits.iter().enumerate() {
            match check(&functions, cause, shown, stream_known) {
                Check::Claimed(e) => {
                    if k == 0 {
                        basis = Some(e.clone());
                    }
                }
                Check::ItsStream => {
                    redo = Some(Redo::DeviceAsStream);
                    break;
                }
                Check::Refused(why) => {
                    not_claimed.push(NotClaimed { cause, why });
                    redo = Some(Redo::Without(cause));
                    break;
                }
            }
        }
        match redo {
            None => break (held, basis),
            Some(Redo::DeviceAsStream) => {
                for h in scene.holders.iter_mut().filter(|h| h.cause == Cause::Device) {
                    h.cause = Cause::Stream;
                    h.what = format!("{} (the trace does not say which stream it waited for)", h.what);
                }
            }
            // Attribute again without that cause's holders; they ran during the call, not waited for.
            Some(Redo::Without(cause)) => {
                let (kept, gone): (Vec<_>, Vec<_>) = scene.holders.drain(..).partition(|h| h.cause != cause);
                scene.holders = kept;
                dropped.extend(gone.into_iter().filter(|h| h.span.overlap(&c.span) > 0).map(|h| Segment {
                    cause: h.cause,
                    span: Span::new(h.span.start.max(c.span.start), h.span.end.min(c.span.end)),
                    what: h.what,
                    holder: h.who,
                }));
            }
        }
    };
    held.overlapped.extend(dropped);
    held.overlapped.sort_by_key(|s| s.span.start);
    let (module_loads, contexts) = (v.module_loads, v.contexts);
    let class = class_of_held(&held);
    let unclaimed =
        missing_words(p, &v, class, &functions).or_else(|| unrecorded_words(p, &v, &held, &functions, shown));
    if let Some(why) = unclaimed {
        return Traced {
            index: i,
            class: Class::Unknown,
            held,
            module_loads,
            contexts,
            cause: why,
            basis: None,
            not_claimed,
        };
    }
    let cause = cause_words(&v, &held);
    let class =
        super::driver_work::class(&held, super::driver_work::DriverWork { contexts, module_loads, loads_by_name });
    Traced { index: i, class, held, module_loads, contexts, cause, basis, not_claimed }
}

/// A function that loads a module at run time (its own call, not a lazy load at a first use).
pub fn is_load(name: &str) -> bool {
    super::functions::loads_module(name)
}

/// One API function's calls, summed.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub name: String,
    pub calls: usize,
    /// Calls that held the thread longer than the threshold.
    pub held_calls: usize,
    pub total_ns: i64,
    pub max_ns: i64,
    pub median_ns: i64,
}

/// A summary per API function, the one with most time first.
pub fn summary(p: &Program, traced: &[Traced], min_held_ns: i64) -> Vec<Summary> {
    let mut by: std::collections::BTreeMap<&str, Vec<i64>> = std::collections::BTreeMap::new();
    for t in traced {
        by.entry(p.calls[t.index].name.as_str()).or_default().push(t.held.total_ns);
    }
    let mut rows: Vec<Summary> = by
        .iter()
        .map(|(name, ns)| (*name, ns.clone()))
        .map(|(name, mut ns)| {
            ns.sort_unstable();
            Summary {
                name: name.to_owned(),
                calls: ns.len(),
                held_calls: ns.iter().filter(|&&n| n > min_held_ns).count(),
                total_ns: ns.iter().sum(),
                max_ns: *ns.last().unwrap_or(&0),
                median_ns: ns[ns.len() / 2],
            }
        })
        .collect();
    rows.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
    // A bounded trace's calls that it only counted.
    if let Some(rest) = &p.rest {
        let mut names: Vec<&str> = super::counts::names(rest);
        names.extend(by.keys());
        names.sort_unstable();
        names.dedup();
        for name in names {
            let m = super::counts::merged(name, by.get(name).map_or(&[][..], Vec::as_slice), rest);
            let held_calls = rows.iter().find(|r| r.name == name).map_or(0, |r| r.held_calls);
            let row = Summary {
                name: name.to_owned(),
                calls: m.calls,
                held_calls,
                total_ns: m.total_ns,
                max_ns: m.max_ns,
                median_ns: m.median_ns,
            };
            match rows.iter_mut().find(|r| r.name == name) {
                Some(r) => *r = row,
                None => rows.push(row),
            }
        }
        rows.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.name.cmp(&b.name)));
    }
    rows
}
