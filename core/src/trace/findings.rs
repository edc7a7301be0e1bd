//! The findings of a trace: the calls that CUDA held (their class neither `async` nor `staged`), grouped by
//! where they were made and by cause, each group with how many, the median and the total, what held them,
//! and a remedy with what the lab measured of it on the H200 (`remedies`, `capability`).
//!
//! The causes ([`Kind`]), in the order a call is tested for them: context creation; loading code (a lazy
//! module load, or a library loaded at run time); a copy from or to pageable memory that held its thread
//! for its transfer; another thread's call; a free that drained the device, or another call that did; a launch
//! into a full queue; a synchronization, or a copy to the host, that waited for its stream; any other wait for
//! its stream; driver work. Warm-up findings (`warmup`) are kept apart from the steady state's.
//!
//! A group is keyed by the call's place as the by-location table keys it (`location::Place::key`: its kind, its
//! words, the NVTX range beside it), except context creation and loading code, which happen once per kernel or
//! library wherever the program first needs one, and are one finding each. NVTX ranges named once per step
//! (`batch-to-gpu-0`, `batch-to-gpu-1`, ...) are one place: their numbers are folded (shown
//! `batch-to-gpu-0…7`).

use super::analysis::Analysis;
use super::by_location::ClassCount;
use super::calls::is_load;
use super::capability;
use super::format::cupti_kinds::copy;
use super::functions::{frees, launches, manages_memory as allocates};
use super::location::{Kind as PlaceKind, Place};
use super::remedies;
use super::scene::{Program, WorkKind};
use super::warmup::{synchronizes, WarmUp};
use super::words::duration;
use crate::attribution::{Cause, Span};
use crate::units::format_size;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What held a group's calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The context created (once per process).
    ContextCreation,
    /// A module loaded lazily at a first launch or lookup, or a library or module loaded at run time.
    LoadingCode,
    /// A copy from or to pageable host memory, staged by the driver on the calling thread.
    PageableCopy,
    /// Another thread's call, until it ended.
    OtherThread,
    /// A free (`cudaFree`, `empty_cache()`'s frees, `cuMemFree`...) that waited for every stream.
    FreeDrainsDevice,
    /// Another call that waited for every stream.
    DeviceWait,
    /// A launch behind a full launch queue.
    FullQueue,
    /// A synchronization (`.item()`, `.cpu()`, `torch.cuda.synchronize()`) or a copy to the host that waited
    /// for the work ahead in its stream.
    Synchronization,
    /// Any other wait for the work ahead in its stream.
    StreamWait,
    /// The driver's own work on the calling thread (allocating, pinning, freeing pinned memory).
    DriverWork,
    /// Anything else (a class that decides nothing).
    Other,
}

impl Kind {
    /// A finding's title, for `calls` calls.
    pub fn title(self) -> &'static str {
        match self {
            Kind::ContextCreation => "context creation",
            Kind::LoadingCode => "loading code (lazy module loads, libraries)",
            Kind::PageableCopy => "pageable copies",
            Kind::OtherThread => "waits for another thread's call",
            Kind::FreeDrainsDevice => "frees that drained the device",
            Kind::DeviceWait => "waits for the whole device",
            Kind::FullQueue => "launches into a full launch queue",
            Kind::Synchronization => "synchronizations",
            Kind::StreamWait => "waits for earlier work in the stream",
            Kind::DriverWork => "driver work",
            Kind::Other => "other holds",
        }
    }

    /// Whether its findings are grouped by kind alone (they happen wherever the program first needs a
    /// kernel or a library, once each).
    fn by_kind_alone(self) -> bool {
        matches!(self, Kind::ContextCreation | Kind::LoadingCode)
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
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
    pub median_ns: i64,
    pub total_ns: i64,
    /// Its calls are warm-up (see `warmup`).
    pub warm_up: bool,
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

/// What to change, and what the lab measured of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Remedy {
    /// In words.
    pub words: String,
    /// The lab's experiments behind the numbers in it.
    pub lab: Vec<LabEvidence>,
}

/// One experiment of the lab's that a remedy quotes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LabEvidence {
    /// The case id (`async-lab explain CASE --replay recordings/RECORDING`).
    pub case: String,
    pub recording: String,
    /// What it measured, in words.
    pub words: String,
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

/// What held call `i` (the order is in the module's doc).
pub fn kind(a: &Analysis, i: usize) -> Kind {
    let (p, t) = (&a.program, &a.traced[i]);
    let c = &p.calls[i];
    if t.contexts > 0 {
        return Kind::ContextCreation;
    }
    if t.module_loads > 0 || std::iter::once(&c.name).chain(&c.inner).any(|n| is_load(n)) {
        return Kind::LoadingCode;
    }
    let own = p.own_work(i);
    let own_ns = t.held.ns(Cause::Own);
    let waited = t.held.ns(Cause::Stream) + t.held.ns(Cause::Device) + t.held.ns(Cause::Thread);
    // Held by the staging of its pageable transfer at least as long as by any wait: pinned memory is the
    // remedy. One that mostly waited (an 8-byte result read behind the work that computes it) is that wait.
    if own.iter().any(|w| w.pageable()) && own_ns > 0 && own_ns >= waited {
        return Kind::PageableCopy;
    }
    // What it waited for: what released it, or, for a call its own work released after a longer wait, the
    // cause it waited for longest.
    let wait = match t.held.released_by().map(|s| s.cause) {
        Some(c @ (Cause::Thread | Cause::Device | Cause::Stream)) => Some(c),
        _ if waited > 0 && waited >= own_ns => {
            [Cause::Stream, Cause::Device, Cause::Thread].into_iter().max_by_key(|&c| t.held.ns(c))
        }
        _ => None,
    };
    match wait {
        Some(Cause::Thread) => Kind::OtherThread,
        Some(Cause::Device) if frees(&c.name) => Kind::FreeDrainsDevice,
        Some(Cause::Device) => Kind::DeviceWait,
        Some(_) if launches(&c.name) && full_queue(p, i) => Kind::FullQueue,
        Some(_) if synchronizes(&c.name) || to_host(p, i) => Kind::Synchronization,
        Some(_) => Kind::StreamWait,
        None if t.class == crate::class::Class::DriverWork || t.class == crate::class::Class::Blocking => {
            if own.iter().any(|w| w.pageable()) {
                Kind::PageableCopy
            } else {
                Kind::DriverWork
            }
        }
        None => Kind::Other,
    }
}

/// Whether call `i` launched behind a full launch queue (the lab's measured depth, `capability`).
fn full_queue(p: &Program, i: usize) -> bool {
    capability::lab().queue_depth.is_some_and(|d| p.queued_before(i) as f64 >= d)
}

/// Whether call `i` copied into host memory (`.item()`, `.cpu()`, `float(loss)`): from the device, or the last
/// leg of a read staged through pinned memory (pinned → pageable).
fn to_host(p: &Program, i: usize) -> bool {
    use super::format::cupti_kinds::memory;
    p.own_work(i).iter().any(|w| match w.kind {
        WorkKind::Copy { copy_kind: copy::DTOH, .. } => true,
        WorkKind::Copy { copy_kind: copy::HTOH, dst_kind, .. } => dst_kind == memory::PAGEABLE,
        _ => false,
    })
}

/// A place with the numbers of its NVTX range's name folded (`batch-to-gpu-#`), so that ranges named once per
/// step are one place: the range it is placed by, and the range beside a place of another kind.
fn folded(place: &Place) -> Place {
    let words = if place.kind == PlaceKind::Nvtx { fold(&place.words) } else { place.words.clone() };
    Place { words, nvtx: place.nvtx.as_deref().map(fold), ..place.clone() }
}

/// Each run of digits as one `#`.
fn fold(name: &str) -> String {
    let mut out = String::new();
    let mut in_digits = false;
    for ch in name.chars() {
        if ch.is_ascii_digit() {
            if !in_digits {
                out.push('#');
            }
            in_digits = true;
        } else {
            out.push(ch);
            in_digits = false;
        }
    }
    out
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
    let what = what(a, kind, &calls);
    let remedy = remedy(a, kind, &calls);
    Finding {
        kind,
        title: kind.title().into(),
        place,
        where_words,
        places,
        calls: calls.len(),
        median_ns: times[times.len() / 2],
        total_ns: times.iter().sum(),
        warm_up,
        classes,
        what,
        remedy,
        explain: a.program.calls[longest].corr,
        calls_explain: calls.iter().map(|&i| a.program.calls[i].corr).collect(),
    }
}

/// What the calls waited, in all: for their stream, the device or another thread.
fn waited_ns(a: &Analysis, calls: &[usize]) -> i64 {
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
fn main_holder(a: &Analysis, calls: &[usize]) -> Option<(String, i64, i64)> {
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
fn gpu_busy(p: &Program, a: &Analysis, calls: &[usize]) -> (i64, i64) {
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
fn what(a: &Analysis, kind: Kind, calls: &[usize]) -> String {
    let p = &a.program;
    let longest = calls[0];
    match kind {
        Kind::PageableCopy => {
            let own: Vec<_> = calls.iter().flat_map(|&i| p.own_work(i)).filter(|w| w.pageable()).collect();
            let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
            for w in &own {
                *kinds.entry(w.words()).or_default() += 1;
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
            let total: i64 = calls.iter().map(|&i| a.traced[i].held.total_ns).sum();
            let waited = waited_ns(a, calls);
            let first = if waited > 0 {
                format!("; before that, {} waiting for the work ahead", super::words::percent(waited, total))
            } else {
                String::new()
            };
            format!(
                "{} of their time the driver staged the copy on the calling thread ({most}){first}",
                super::words::percent(own_ns, total)
            )
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
        Kind::LoadingCode | Kind::ContextCreation => {
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
        Kind::DriverWork | Kind::Other => a.traced[longest].cause.clone(),
    }
}

fn cause_noun(kind: Kind) -> &'static str {
    match kind {
        Kind::DeviceWait | Kind::FreeDrainsDevice => "every stream's work",
        Kind::FullQueue => "room in the launch queue",
        _ => "the work ahead in its stream",
    }
}

/// The remedy of a group.
fn remedy(a: &Analysis, kind: Kind, calls: &[usize]) -> Remedy {
    let p = &a.program;
    let longest = calls[0];
    let c = &p.calls[longest];
    let api = match c.domain {
        super::format::Domain::Runtime => "runtime",
        super::format::Domain::Driver => "driver",
    };
    let lab = remedies::lab();
    let mut evidence: Vec<LabEvidence> = Vec::new();
    let words = match kind {
        Kind::PageableCopy => pin_memory(p, longest, api, &mut evidence),
        Kind::LoadingCode => load_before(api, &mut evidence),
        Kind::ContextCreation => {
            "Once per process, and not to be avoided, only moved: create the context before the part \
                                  you time (torch.cuda.init(), cudaFree(0)), or leave start-up out (--after-startup)."
                .into()
        }
        Kind::Synchronization => {
            let (busy, waited) = gpu_busy(p, a, calls);
            let busy_all = waited > 0 && busy * 10 >= waited * 9;
            let mut words = "Synchronize less often, only where the host needs a result: in a training loop, read \
                             the loss every N steps (if step % N == 0: print(loss.item())) or add it up on the GPU and \
                             read it once; keep .item(), .cpu() and printing out of the step."
                .to_owned();
            if busy_all {
                words.push_str(
                    " The GPU was simply busy: the wait is its own work, so the step takes as long on the GPU; \
                     without the synchronization the thread runs ahead and queues the next step meanwhile.",
                );
            } else if waited > 0 {
                words.push_str(&format!(
                    " The GPU was idle {} of the wait: the thread waited for work queued late, or for a host function.",
                    super::words::percent(waited - busy, waited)
                ));
            }
            evidence.extend(basis(a, longest));
            words
        }
        Kind::FreeDrainsDevice => {
            evidence.extend(basis(a, longest));
            "Move it out of the loop: a free waits for every stream. Free once at the end, or keep the memory for \
             reuse (PyTorch's caching allocator does; torch.cuda.empty_cache() in the loop gives it back and drains \
             the device each time)."
                .into()
        }
        Kind::DeviceWait => {
            evidence.extend(basis(a, longest));
            format!("Move {} out of the loop, or before the GPU work it waits for: it waits for every stream.", c.name)
        }
        Kind::FullQueue => {
            evidence.extend(basis(a, longest));
            let depth = capability::lab().queue_depth.unwrap_or(0.0);
            format!(
                "The launch queue was full: {} launches ahead of it had not begun (the lab measured room for {depth:.0} \
                 on its {}). The thread ran that far ahead of the GPU; the wait is the GPU's work. Fewer, larger \
                 kernels (or a CUDA graph) shorten it; nothing else on the host does.",
                p.queued_before(longest),
                lab.gpu
            )
        }
        Kind::OtherThread => {
            evidence.extend(basis(a, longest));
            let who = main_holder(a, calls).map_or(String::new(), |(what, _, _)| format!(" ({what})"));
            format!(
                "Another thread's slow call held it{who}: make that call (pinned allocation, module load) before the \
                 threads start, or outside the time that matters."
            )
        }
        Kind::StreamWait => {
            evidence.extend(basis(a, longest));
            "It needs the work ahead in its stream to finish. Work that does not depend on it can go on a stream of \
             its own; a copy from pinned memory with non_blocking=True does not wait."
                .into()
        }
        Kind::DriverWork => {
            let mut times: Vec<i64> = calls.iter().map(|&i| a.traced[i].held.total_ns).collect();
            times.sort_unstable();
            let median = duration(times[times.len() / 2]);
            if allocates(&c.name) {
                format!(
                    "Do it once, outside the loop: allocate and pin buffers once and reuse them (a caching allocator \
                     does), free them at the end ({} took {median} at the median here).",
                    c.name
                )
            } else if a.traced[longest].class == crate::class::Class::Blocking {
                format!(
                    "The driver's own work on this thread held it ({median} at the median), and it returned only \
                     once its own GPU work had ended; --explain shows the parts."
                )
            } else {
                format!(
                    "The driver's own work held it ({median} at the median), with nothing on the GPU to wait for; \
                     --explain shows what ran during it."
                )
            }
        }
        Kind::Other => format!("See --explain {}.", c.corr),
    };
    Remedy { words, lab: evidence }
}

/// The remedy of a pageable copy: pin the host memory, with what a pinned copy of its size and direction did in
/// the lab (`evidence`).
fn pin_memory(p: &Program, longest: usize, api: &str, evidence: &mut Vec<LabEvidence>) -> String {
    let lab = remedies::lab();
    let own = p.own_work(longest);
    let copy = own.iter().find(|w| w.pageable());
    let (direction, bytes) = match copy.map(|w| (&w.kind, w.bytes)) {
        Some((WorkKind::Copy { copy_kind: copy::DTOH, .. }, b)) => ("dtoh", b),
        Some((_, b)) => ("htod", b),
        None => ("htod", 0),
    };
    let mut words = "Pin the host memory: pin_memory=True in the DataLoader (then .to(device, \
                     non_blocking=True)), tensor.pin_memory(), cupy.cuda.alloc_pinned_memory, or \
                     cudaHostAlloc / cudaHostRegister."
        .to_owned();
    if let Some(m) = lab.pinned_copy(api, direction, bytes) {
        let gpu = m.gpu_ns.map_or(String::new(), |g| {
            format!("; its transfer then ran {} on the GPU while the thread went on", duration(g))
        });
        words.push_str(&format!(
            " On the lab's {} a pinned {} {} {} returned in {} (median of {}, {}–{}){gpu}.",
            lab.gpu,
            format_size(m.bytes),
            if direction == "dtoh" { "device → host" } else { "host → device" },
            m.call.split('(').next().unwrap_or(&m.call),
            duration(m.returned_ns),
            m.repetitions,
            duration(m.min_ns),
            duration(m.max_ns)
        ));
        evidence.push(LabEvidence {
            case: m.case.clone(),
            recording: m.recording.clone(),
            words: format!("a pinned {} copy returned in {}", format_size(m.bytes), duration(m.returned_ns)),
        });
    }
    words
}

/// The remedy of code loaded in the loop: load it before, with what a first launch did under lazy and eager
/// loading in the lab, and a library load (`evidence`).
fn load_before(api: &str, evidence: &mut Vec<LabEvidence>) -> String {
    let lab = remedies::lab();
    let mut words = "Load the code before the loop: run one warm-up step first (each kernel and library \
                     is loaded once), or set CUDA_MODULE_LOADING=EAGER to load a module's kernels with it."
        .to_owned();
    let lazy = lab.load(api, "first-launch", "lazy", "other");
    let eager = lab.load(api, "first-launch", "eager", "other");
    let library = lab.load(api, "library-load-data", "eager", "other");
    if let (Some(lazy), Some(eager)) = (lazy, eager) {
        words.push_str(&format!(
            " On the lab's {} a first launch under lazy loading waited {} for a kernel on another stream \
             ({}); under EAGER it returned in {}",
            lab.gpu,
            duration(lazy.waited_ns),
            lazy.class,
            duration(eager.returned_ns)
        ));
        for l in [lazy, eager] {
            evidence.push(LabEvidence {
                case: l.case.clone(),
                recording: l.recording.clone(),
                words: format!("a first launch under {} loading: {}, {}", l.loading, l.class, duration(l.returned_ns)),
            });
        }
        match library {
            Some(lib) if lib.waited_ns > 0 => {
                words.push_str(&format!(
                    ", and loading the library waited for the device instead ({}): load before the GPU is busy.",
                    duration(lib.waited_ns)
                ));
                evidence.push(LabEvidence {
                    case: lib.case.clone(),
                    recording: lib.recording.clone(),
                    words: format!("a library load under eager loading: {}, {}", lib.class, duration(lib.returned_ns)),
                });
            }
            _ => words.push('.'),
        }
    }
    words
}

/// The lab's experiment that shows the function of call `longest` can wait the way it did, where there is one.
fn basis(a: &Analysis, longest: usize) -> Option<LabEvidence> {
    let e = a.traced[longest].basis.as_ref()?;
    Some(LabEvidence {
        case: e.case.clone(),
        recording: e.recording.clone(),
        words: format!(
            "{} can {}{}",
            e.function,
            e.way.words(),
            if e.condition == capability::Condition::Always {
                String::new()
            } else {
                format!(" {}", e.condition.words())
            }
        ),
    })
}

/// The findings for the terminal, `width` columns wide (`None`: unwrapped), at most `top` of each part.
pub fn text(findings: &[Finding], width: Option<u16>, top: usize) -> String {
    use super::layout::{name_limit, wrap};
    use super::words::shorten_words;
    let mut out = String::new();
    let (steady, warm): (Vec<&Finding>, Vec<&Finding>) = findings.iter().partition(|f| !f.warm_up);
    for (part, list) in [("in the steady state", steady), ("in warm-up (paid once)", warm)] {
        if list.is_empty() {
            continue;
        }
        let shown = if list.len() > top { format!(" (the {top} with most time shown)") } else { String::new() };
        out.push_str(&wrap(
            &format!(
                "{} finding{} {part}, most time first{shown}:",
                list.len(),
                if list.len() == 1 { "" } else { "s" }
            ),
            width,
            "",
            "  ",
        ));
        for (n, f) in list.iter().take(top).enumerate() {
            let classes = match f.classes.as_slice() {
                [one] => one.class.clone(),
                many => many.iter().map(|c| format!("{} ×{}", c.class, c.calls)).collect::<Vec<_>>().join(", "),
            };
            let head = format!(
                "{} at {}: {} call{}, median {}, total {} ({classes})",
                f.title,
                f.where_words,
                f.calls,
                if f.calls == 1 { "" } else { "s" },
                duration(f.median_ns),
                duration(f.total_ns)
            );
            let number = format!("{}. ", n + 1);
            let indent = " ".repeat(number.len());
            out.push_str(&wrap(&shorten_words(&head, name_limit(width)), width, &number, &indent));
            out.push_str(&wrap(
                &shorten_words(&format!("What held them: {}", f.what), name_limit(width)),
                width,
                &indent,
                &indent,
            ));
            out.push_str(&wrap(
                &shorten_words(&format!("Fix: {}", f.remedy.words), name_limit(width)),
                width,
                &indent,
                &indent,
            ));
            out.push_str(&wrap(&format!("--explain {}", f.explain), width, &indent, &indent));
        }
        out.push('\n');
    }
    out
}
