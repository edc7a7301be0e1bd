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
    let mut by: BTreeMap<String, i64> = BTreeMap::new();
    let mut total = 0;
    for &i in calls {
        for s in a.traced[i]
            .held
            .segments
            .iter()
            .filter(|s| matches!(s.cause, Cause::Stream | Cause::Device | Cause::Thread))
        {
            *by.entry(s.holder.kind()).or_default() += s.span.len();
            total += s.span.len();
        }
    }
    let (what, ns) = by.into_iter().max_by(|(a, a_ns), (b, b_ns)| a_ns.cmp(b_ns).then_with(|| b.cmp(a)))?;
    Some((what, ns, total))
}

/// How much of the waits of a group the GPU was busy (any stream had work running): busy, waited (ns).
pub(super) fn gpu_busy(p: &Program, a: &Analysis, calls: &[usize]) -> (i64, i64) {
    let (mut busy, mut waited) = (0, 0);
    for &i in calls {
        for s in a.traced[i].held.segments.iter().filter(|s| matches!(s.cause, Cause::Stream | Cause::Device)) {
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
            let (busy, waited) = gpu_busy(p, a, calls);
            let holder = main_holder(a, calls).map_or(String::new(), |(what, ns, total)| {
                if super::words::percent(ns, total) == "100%" {
                    format!(": {what}")
                } else {
                    format!("; most of it, {}: {what}", super::words::percent(ns, total))
                }
            });
            let busy_words = if waited > 0 {
                format!(" The GPU was busy {} of the wait.", super::words::percent(busy, waited))
            } else {
                String::new()
            };
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
