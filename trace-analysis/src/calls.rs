//! Each call of a traced program through the attribution and the classes, as the lab's own experiments go:
//! what held the thread, for how long, and in words ("lazy module load waited for the 2 GiB host → device
//! copy ahead in its stream, correlation 122").
//!
//! A call whose class would rest on GPU records the trace lacks reads `unknown` instead, with why
//! ([`missing_words`]): a call that enqueued GPU work with none of it in the trace, in a section cut short
//! (the program was killed) or whose CUPTI dropped records; and a call without work of its own that the
//! attribution finds held by nothing, where work whose records are missing may have held it. A call that
//! enqueues nothing (a synchronize) is still judged from the records there are.

use super::call_view::CallView;
use super::capability::{self, Allowed, Entry, Shown, Way};
use super::format::cupti_kinds::copy;
use super::records::{Lost, WorkKind};
use super::scene::Program;
use crate::attribution::{attribute, Cause, Held, Identity, Place, Segment, Span};
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
    if let Some(why) = missing_words(p, &v, class, &functions) {
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
    if let Some(why) = unrecorded_words(p, &v, &held, &functions, shown) {
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

/// Why call `i`'s class would rest on GPU records the trace lacks, where it would (`None`: it does not):
/// it enqueued GPU work and none of it is in the trace (`Program::missing_records`); or it has no work of its
/// own, the attribution found nothing that held it (`async`), the lab has seen its function wait, and work
/// whose records are missing may have been under way while it ran: enqueued before it returned, and, in a
/// section cut short, the call returned after the last record the trace holds ended (in one whose CUPTI
/// dropped records, it began before that work could have ended, as long as the longest work the trace holds).
fn missing_words(p: &Program, v: &CallView, class: Class, functions: &[&str]) -> Option<String> {
    let lost = p.lost.as_ref()?;
    let missing = p.missing_records();
    if missing.binary_search(&v.index).is_ok() {
        return Some(match lost {
            Lost::Dropped(_) => format!("its GPU records are missing: {}", lost.words()),
            Lost::Cut { .. } => format!("its GPU records were lost: {}", lost.words()),
        });
    }
    if class != Class::Async || !v.own_work.is_empty() {
        return None;
    }
    let c = v.call;
    // The missing calls enqueued before this one returned (they are in the order they began).
    let before = &missing[..missing.partition_point(|&k| p.calls[k].span.start < c.span.end)];
    let may_have_held = match lost {
        Lost::Cut { .. } => !before.is_empty() && c.span.end > p.records_end,
        Lost::Dropped(_) => {
            let (work, call) = (p.longest_work_ns(), p.longest_call_ns());
            before
                .iter()
                .rev()
                .map(|&k| &p.calls[k])
                .take_while(|u| u.span.start + call + work > c.span.start)
                .any(|u| c.span.start < u.span.end + work)
        }
    };
    let table = capability::lab();
    let waits = [Way::Stream, Way::Device]
        .iter()
        .any(|&w| matches!(table.allows(functions, w, Shown::default()), Allowed::Yes(_)));
    (may_have_held && waits)
        .then(|| format!("what it waited for may be among the GPU records missing: {}", lost.words()))
}

/// Why the call `v` views would be classed on records the trace does not hold, where it would: it waited for
/// nothing the trace shows, the lab saw its function wait for its stream or the device, and its launch log
/// names work the trace holds no record of (kernel records off then) whose end nothing bounds (`ahead`).
fn unrecorded_words(p: &Program, v: &CallView, held: &Held, functions: &[&str], shown: Shown) -> Option<String> {
    let table = capability::lab();
    let may_wait =
        [Way::Stream, Way::Device].iter().any(|&w| matches!(table.allows(functions, w, shown), Allowed::Yes(_)));
    p.log.unknown_words(&v.call.corrs, held.released_by().is_some(), may_wait, &|k| p.record_start(k).is_some())
}

/// What the lab's table says of one way a call waited.
enum Check {
    /// The lab saw its function wait that way: this entry.
    Claimed(&'static Entry),
    /// A wait for "other streams" of a call whose stream the trace does not name (an event wait without the
    /// event's record), where the lab saw the function wait for its own stream: the other streams may be its.
    ItsStream,
    /// Not claimed, and why.
    Refused(String),
}

/// How the scene changes before the call is attributed again.
enum Redo {
    /// Its other streams' work is taken for its own stream's (`Check::ItsStream`).
    DeviceAsStream,
    /// Without the holders of this cause.
    Without(Cause),
}

/// Whether a call of `functions` may be said to have waited for `cause`, under what the trace `shown`.
fn check(functions: &[&str], cause: Cause, shown: Shown, stream_known: bool) -> Check {
    let table = capability::lab();
    let way = match cause {
        Cause::Stream => Way::Stream,
        Cause::Device => Way::Device,
        _ => Way::Thread,
    };
    match table.allows(functions, way, shown) {
        Allowed::Yes(e) => Check::Claimed(e),
        Allowed::NeverSeen(_)
            if cause == Cause::Device
                && !stream_known
                && matches!(table.allows(functions, Way::Stream, shown), Allowed::Yes(_)) =>
        {
            Check::ItsStream
        }
        Allowed::NeverSeen(entries) => Check::Refused(format!(
            "the lab never saw {} {}{} ({})",
            entries[0].function,
            way.words(),
            shown_words(shown),
            entries.iter().map(|e| e.case.as_str()).take(3).collect::<Vec<_>>().join(", ")
        )),
        Allowed::NotMeasured => {
            Check::Refused(format!("not known to wait: the lab has never measured {}", functions_words(functions)))
        }
    }
}

/// What the trace shows about the call `v` views (`loads_by_name`: its function or one it called loads a
/// module), for the lab's conditions.
fn shown(v: &CallView, loads_by_name: bool) -> Shown {
    let own = &v.own_work;
    // The driver's overhead records say it too: a load at a first use, a launch queue full.
    let queue_depth = capability::lab().queue_depth.unwrap_or(f64::INFINITY) as usize;
    Shown {
        pageable: own.iter().any(|w| w.pageable()),
        managed: own.iter().any(|w| w.managed()),
        module_load: v.loading() || loads_by_name,
        full_queue: v.queue_full() || v.queued_before >= queue_depth,
        host_to_host: own.iter().any(|w| matches!(w.kind, WorkKind::Copy { copy_kind: copy::HTOH, .. })),
    }
}

/// "with pageable host memory", ...: the conditions the trace shows, for a sentence.
fn shown_words(s: Shown) -> String {
    let mut parts = Vec::new();
    if s.pageable {
        parts.push("with pageable memory");
    }
    if s.managed {
        parts.push("with managed memory");
    }
    if s.module_load {
        parts.push("loading a module");
    }
    if s.full_queue {
        parts.push("with a full launch queue");
    }
    if s.host_to_host {
        parts.push("copying host to host");
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" {}", parts.join(", "))
    }
}

/// "cudaHostAlloc or cuMemHostAlloc".
fn functions_words(functions: &[&str]) -> String {
    let mut names: Vec<&str> = functions.iter().map(|f| capability::function_of(f)).collect();
    names.sort_unstable();
    names.dedup();
    names.join(" or ")
}

/// A function that loads a module at run time (its own call, not a lazy load at a first use).
pub fn is_load(name: &str) -> bool {
    super::functions::loads_module(name)
}

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
    let at_run_time = is_load(&c.name);
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
