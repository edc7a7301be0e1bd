//! What held a traced call, in words ([`cause_words`]): the largest part first, then the parts before it and
//! after it, each in time order; several holders of one cause named by the kind of work that held it most.

use super::call_view::CallView;
use crate::attribution::{Cause, Held, Identity, Place, Segment};

/// What held the call `v` views, in words: the largest part first, then the parts before it and those after
/// it, each in time order, as `--explain` lists them ("4.7 ms pageable memory: the driver staged ...; before
/// it, 263 µs driver work on this thread"; "161 µs waited for the kernel ...; after it, 4.8 µs its own GPU
/// work"). A call with one part names it alone.
pub fn cause_words(v: &CallView, held: &Held) -> String {
    let parts = parts(v, held);
    match parts.len() {
        // No part at all (a call of a killed program's trace whose time no record accounts for).
        0 => return "nothing the trace shows".into(),
        1 => return parts[0].1.clone(),
        _ => {}
    }
    let largest = (0..parts.len()).max_by_key(|&k| (parts[k].0, std::cmp::Reverse(k))).unwrap_or(0);
    let worded = |(ns, words): &(i64, String)| format!("{} {words}", crate::units::duration(*ns as f64));
    let mut out = worded(&parts[largest]);
    for (side, range) in [("before", &parts[..largest]), ("after", &parts[largest + 1..])] {
        if !range.is_empty() {
            out.push_str(&format!("; {side} it, "));
            out.push_str(&range.iter().map(worded).collect::<Vec<_>>().join(", then "));
        }
    }
    out
}

/// The parts of the call's time worth naming (longer than the resolution and a twentieth of the call; the
/// longest alone where none is), in the order of their first segments: (length, words).
fn parts(v: &CallView, held: &Held) -> Vec<(i64, String)> {
    let c = v.call;
    let (loading, queue_full) = (v.loading(), v.queue_full());
    // A load the program called itself is at run time; one a launch or lookup made inside is lazy.
    let at_run_time = super::functions::loads_module(&c.name);
    let lazily = !at_run_time && v.functions().iter().any(|n| super::functions::may_load_lazily(n));
    let has_stream = v.stream.is_some();
    let own = &v.own_work;
    // Each waiting cause's holders, in the order they held it, with how long each did.
    let mut holders: Vec<(Cause, Vec<(&Segment, i64)>)> = Vec::new();
    for s in held.segments.iter().filter(|s| matches!(s.cause, Cause::Stream | Cause::Device | Cause::Thread)) {
        let whats = match holders.iter_mut().find(|(c, _)| *c == s.cause) {
            Some((_, whats)) => whats,
            None => {
                holders.push((s.cause, Vec::new()));
                &mut holders.last_mut().expect("just pushed").1
            }
        };
        match whats.iter_mut().find(|(w, _)| w.what == s.what) {
            Some((_, ns)) => *ns += s.span.len(),
            None => whats.push((s, s.span.len())),
        }
    }
    // One part per cause, at its first place (the call's own work splits its host time in two): a cause's
    // segments are one thing named, its words made once.
    let mut parts: Vec<(Cause, i64, String)> = Vec::new();
    for s in &held.segments {
        if let Some(part) = parts.iter_mut().find(|p| p.0 == s.cause) {
            part.1 += s.span.len();
            continue;
        }
        let words = match s.cause {
            Cause::Stream | Cause::Device | Cause::Thread => {
                // Several holders of one cause (a synchronize behind a step's kernels) are one part, named by
                // the work that held it most (`several`).
                let whats = holders.iter().find(|(c, _)| *c == s.cause).map_or(&[][..], |(_, w)| &w[..]);
                let Several { words: one, counts_pieces } = match whats {
                    [_] | [] => Several { words: s.what.clone(), counts_pieces: false },
                    _ => several(whats),
                };
                let what = match s.cause {
                    Cause::Thread => format!("another thread's call ({one})"),
                    Cause::Device if has_stream => format!("other streams' work: {one}"),
                    Cause::Device => format!("the device: {one}"),
                    // Pieces of earlier work counted: the sentence says whose they were.
                    _ if counts_pieces => format!("its stream: {one}"),
                    _ => one,
                };
                match (loading, lazily) {
                    (true, true) => format!("lazy module load waited for {what}"),
                    (true, false) => format!("module load waited for {what}"),
                    // The driver's record says the launch queue was full: the call waited for room in it.
                    _ if queue_full => format!("launch queue full: waited for {what}"),
                    _ => format!("waited for {what}"),
                }
            }
            Cause::Own => match own.iter().find(|w| w.pageable()) {
                Some(w) => format!("pageable memory: the driver staged {} on this thread", w.words_for(&c.name)),
                None if held.held_through_own_work() == Some(true) => "its own GPU work ran while it waited".into(),
                None => "its own GPU work, in part".into(),
            },
            Cause::Call => {
                let mut what: Vec<&str> = Vec::new();
                if v.contexts > 0 {
                    what.push("context creation");
                }
                if loading {
                    what.push(if at_run_time {
                        "a module loaded at run time"
                    } else if lazily {
                        "lazy module load"
                    } else {
                        "a module load"
                    });
                } else if at_run_time {
                    what.push("loading a library or module");
                }
                if what.is_empty() {
                    "driver work on this thread".into()
                } else {
                    what.join(", ")
                }
            }
        };
        parts.push((s.cause, s.span.len(), words));
    }
    let parts: Vec<(i64, String)> = parts.into_iter().map(|(_, ns, words)| (ns, words)).collect();
    // Worth naming: longer than the resolution and than a twentieth of the call.
    let least = held.resolution_ns.max(held.total_ns / 20);
    let worth: Vec<(i64, String)> = parts.iter().filter(|(ns, _)| *ns > least).cloned().collect();
    if worth.is_empty() {
        // Nothing longer than the resolution: the longest part alone.
        parts.into_iter().max_by_key(|(ns, _)| *ns).into_iter().collect()
    } else {
        worth
    }
}

/// Several holders of one cause, in words.
struct Several {
    words: String,
    /// Whether the words count pieces of earlier work ("28 pieces of earlier work", "and 2 more pieces of
    /// earlier work"; not "and 1 more piece").
    counts_pieces: bool,
}

/// Several holders of one cause in words: the kind of work that held it most (a kernel's name, a copy's size
/// and direction, summed over its pieces) with its share of the wait. One piece that held most of it is named
/// as itself, with how many others; else how many pieces, and the kind that held longest.
fn several(whats: &[(&Segment, i64)]) -> Several {
    let total: i64 = whats.iter().map(|(_, ns)| ns).sum::<i64>().max(1);
    let mut kinds: Vec<(String, &Identity, i64, usize)> = Vec::new();
    for (s, ns) in whats {
        let kind = s.holder.kind();
        match kinds.iter_mut().find(|k| k.0 == kind) {
            Some(k) => {
                k.2 += ns;
                k.3 += 1;
            }
            None => kinds.push((kind, &s.holder, *ns, 1)),
        }
    }
    let Some((kind, holder, ns, pieces)) = kinds.into_iter().max_by_key(|k| k.2) else {
        return Several { words: String::new(), counts_pieces: false };
    };
    let share = ns * 100 / total;
    let more = whats.len() - 1;
    let s = |n: usize| if n == 1 { "" } else { "s" };
    match whats.iter().max_by_key(|(_, ns)| *ns) {
        Some((main, ns)) if *ns * 2 >= total => Several {
            words: format!(
                "{}, {}% of the wait (and {more} more piece{} of earlier work)",
                main.what,
                ns * 100 / total,
                s(more)
            ),
            counts_pieces: more > 1,
        },
        _ => {
            // Work ahead in the call's stream is named alone: the sentence says it was its stream's.
            let kind = if holder.place == Place::AheadInStream { holder.name.clone() } else { kind };
            let times = if pieces > 1 { format!(" (×{pieces})") } else { String::new() };
            Several {
                words: format!("{} pieces of earlier work, {share}% of the wait {kind}{times}", whats.len()),
                counts_pieces: true,
            }
        }
    }
}
