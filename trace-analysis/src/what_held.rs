//! What held a group of findings' calls, in words (`findings`): the share the driver staged a pageable copy,
//! the work the waits waited for and how busy the GPU was meanwhile, the other thread's call, what was paid
//! once.

use super::analysis::Analysis;
use super::cause::Kind;
use super::scene::Program;
use super::words::duration;
use crate::attribution::{Cause, Span};
use std::collections::BTreeMap;

/// What the calls waited, in all: for their stream, the device or another thread.
pub(super) fn waited_ns(a: &Analysis, calls: &[usize]) -> i64 {
    calls
        .iter()
        .map(|&i| {
            let h = &a.traced[i].held;
            h.ns(Cause::Stream) + h.ns(Cause::Device) + h.ns(Cause::Thread)
        })
        .sum()
}

/// The work that held a group's waits most (by kind: a kernel's name, a copy's size), its share of their
/// waiting, and how many pieces of it there were.
pub(super) fn main_holder(a: &Analysis, calls: &[usize]) -> Option<(String, i64, i64)> {
    let waits = |i: usize| {
        a.traced[i].held.segments.iter().filter(|s| matches!(s.cause, Cause::Stream | Cause::Device | Cause::Thread))
    };
    // Where kernels were recorded for some of the calls only (a trace's windows), what held those is what the
    // group is said to have waited for, marked as sampled; the launch log names the rest's work only by its
    // last launch.
    // (A call is recorded where every one of its waits rests on records, not on the launch log alone.)
    let waiting: Vec<usize> = calls.iter().copied().filter(|&i| waits(i).next().is_some()).collect();
    let recorded: Vec<usize> =
        waiting.iter().copied().filter(|&i| waits(i).all(|s| !super::ahead::logged(&s.holder))).collect();
    let sampled = !recorded.is_empty() && recorded.len() < waiting.len();
    let mut by: BTreeMap<String, i64> = BTreeMap::new();
    let mut total = 0;
    for &i in if sampled { &recorded[..] } else { calls } {
        for s in waits(i).filter(|s| !sampled || !super::ahead::logged(&s.holder)) {
            *by.entry(s.holder.kind()).or_default() += s.span.len();
            total += s.span.len();
        }
    }
    let (what, ns) = by.into_iter().max_by(|(a, a_ns), (b, b_ns)| a_ns.cmp(b_ns).then_with(|| b.cmp(a)))?;
    let what = if sampled {
        format!("{what} (sampled: the {} of {} calls with kernel records)", recorded.len(), waiting.len())
    } else {
        what
    };
    Some((what, ns, total))
}

/// How much of the waits of a group the GPU was busy (any stream had work running): busy, waited (ns); the waits
/// known from the launch log alone left out.
pub(super) fn gpu_busy(p: &Program, a: &Analysis, calls: &[usize]) -> (i64, i64) {
    let (mut busy, mut waited) = (0, 0);
    for &i in calls {
        // A wait known from the launch log alone has no record to tell how busy the GPU was.
        let measured = |s: &&crate::attribution::Segment| {
            matches!(s.cause, Cause::Stream | Cause::Device) && !super::ahead::logged(&s.holder)
        };
        for s in a.traced[i].held.segments.iter().filter(measured) {
            waited += s.span.len();
            let mut spans: Vec<Span> = p
                .work_during(s.span)
                .map(|w| Span::new(w.span.start.max(s.span.start), w.span.end.min(s.span.end)))
                .collect();
            spans.sort_by_key(|w| w.start);
            let mut end = s.span.start;
            for w in spans {
                let from = w.start.max(end);
                if w.end > from {
                    busy += w.end - from;
                    end = w.end;
                }
            }
        }
    }
    (busy, waited)
}

/// What held a group's calls, in words.
pub(super) fn what(a: &Analysis, kind: Kind, calls: &[usize]) -> String {
    let p = &a.program;
    let longest = calls[0];
    match kind {
        Kind::PageableCopy => {
            let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
            for &i in calls {
                for w in p.own_work(i).into_iter().filter(|w| w.pageable()) {
                    *kinds.entry(w.words_for(&p.calls[i].name)).or_default() += 1;
                }
            }
            let most =
                kinds.iter().max_by_key(|(w, n)| (**n, std::cmp::Reverse(*w))).map_or(String::new(), |(w, n)| {
                    if *n > 1 {
                        format!("{w}, {n} times")
                    } else {
                        w.clone()
                    }
                });
            let own_ns: i64 = calls.iter().map(|&i| a.traced[i].held.ns(Cause::Own)).sum();
            let call_ns: i64 = calls.iter().map(|&i| a.traced[i].held.ns(Cause::Call)).sum();
            let total: i64 = calls.iter().map(|&i| a.traced[i].held.total_ns).sum();
            let waited = waited_ns(a, calls);
            let first = if waited > 0 {
                format!("; before that, {} waiting for the work ahead", super::words::percent(waited, total))
            } else {
                String::new()
            };
            if own_ns >= call_ns {
                format!(
                    "{} of their time the driver staged the copy on the calling thread ({most}){first}",
                    super::words::percent(own_ns, total)
                )
            } else {
                // Copies too small for their transfer to show: the driver's own work of staging them.
                format!(
                    "{} of their time the driver's own work on the calling thread, for copies from or to pageable \
                     memory ({most}){first}",
                    super::words::percent(call_ns, total)
                )
            }
        }
        Kind::Synchronization | Kind::StreamWait | Kind::FullQueue | Kind::DeviceWait | Kind::FreeDrainsDevice => {
            let (busy, measured) = gpu_busy(p, a, calls);
            let holder = main_holder(a, calls).map_or(String::new(), |(what, ns, total)| {
                if super::words::percent(ns, total) == "100%" {
                    format!(": {what}")
                } else {
                    format!("; most of it, {}: {what}", super::words::percent(ns, total))
                }
            });
            let busy_words = if measured > 0 {
                format!(" The GPU was busy {} of the wait.", super::words::percent(busy, measured))
            } else {
                String::new()
            };
            // Every wait for the GPU's work, those known from the launch log too.
            let waited: i64 =
                calls.iter().map(|&i| a.traced[i].held.ns(Cause::Stream) + a.traced[i].held.ns(Cause::Device)).sum();
            format!("waited {} in all for {}{holder}.{busy_words}", duration(waited), cause_noun(kind))
        }
        Kind::OtherThread => main_holder(a, calls).map_or_else(
            || a.traced[longest].cause.clone(),
            |(what, ns, total)| format!("waited for {what} ({} of the wait)", super::words::percent(ns, total)),
        ),
        k if k.paid_once() => {
            let mut first = super::warmup::FirstUse::default();
            for &i in calls {
                first.add(super::warmup::first_use(a, i));
            }
            let waited = waited_ns(a, calls);
            let waits = if waited > 0 {
                format!(", {} of it waiting for the GPU's work", duration(waited))
            } else {
                String::new()
            };
            format!("{}{waits}", first.words())
        }
        _ => a.traced[longest].cause.clone(),
    }
}

fn cause_noun(kind: Kind) -> &'static str {
    match kind {
        Kind::DeviceWait | Kind::FreeDrainsDevice => "every stream's work",
        Kind::FullQueue => "room in the launch queue",
        _ => "the work ahead in its stream",
    }
}
