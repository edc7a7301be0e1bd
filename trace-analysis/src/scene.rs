//! A traced process as calls and GPU work (its records: `records`), read once, and each call's
//! `attribution::Scene` (`Program::scene`, in `call_scene`).
//!
//! A *call* is a runtime or driver API call made by the program itself: driver calls made inside a runtime
//! call on the same thread belong to it (their correlation ids too, so the GPU work they enqueued is the
//! runtime call's own). Around each call:
//! - its own GPU work: the records with its correlation ids;
//! - its stream: the stream of its own work, or of its synchronization record;
//! - the holders: GPU work enqueued earlier (a lower correlation id) that overlapped the call, in its stream
//!   (`Cause::Stream`) or in another (`Cause::Device`, also for a call with no stream); other threads' calls
//!   in flight when it began (`Cause::Thread`);
//! - the module loads (lazy loading) that happened on its thread while it ran;
//! - the driver's overhead records with its correlation ids (format 4): when a lazy load began and ended, when
//!   it waited for room in a full launch queue.
//!
//! Where a process's section was cut short (the program was killed) or CUPTI dropped records, some GPU
//! records are missing: [`Program::lost`] says why, and [`Program::missing_records`] which calls lack them.
//!
//! Times in a trace are all CUPTI's, on one clock: CUPTI puts the GPU's times on the host's clock to within
//! about a µs or two ([`CLOCK_ERROR_NS`]), and the callbacks' own timestamps, taken just inside the call's
//! enter and just after its return, add a few more ([`RESOLUTION_NS`], what the attribution cannot tell
//! apart).

use super::format::{Domain, Line, ProcessTrace, Resource};
use super::records::{Lost, Overhead, Work, WorkKind};
use crate::attribution::Span;
use std::collections::HashMap;

mod call_scene;

/// How close two times of a trace may be and still not be told apart, in ns.
pub const RESOLUTION_NS: i64 = 5_000;
/// How far a trace's GPU times may be off on the host's clock, in ns.
pub const CLOCK_ERROR_NS: i64 = 2_000;

/// One API call of the program (driver calls made inside it folded in).
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub domain: Domain,
    pub name: String,
    pub tid: u64,
    /// Its correlation id (the one the table and `explain` use).
    pub corr: u32,
    pub span: Span,
    /// The correlation ids of the driver calls made inside it, its own first.
    pub corrs: Vec<u32>,
    /// The names of the driver calls made inside it, in order.
    pub inner: Vec<String>,
    /// Their host intervals, in the same order.
    pub inner_spans: Vec<Span>,
}

/// A traced process, ready for the attribution.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    /// In the order they began.
    pub calls: Vec<Call>,
    /// In the order they began on the GPU.
    pub work: Vec<Work>,
    /// (correlation id, stream) of each stream synchronization.
    pub syncs: Vec<(u32, u32)>,
    /// (thread, time) of each module load, in time order.
    pub module_loads: Vec<(u64, i64)>,
    /// (thread, time) of each context the program created, in time order.
    pub contexts: Vec<(u64, i64)>,
    /// CUPTI's ids of the default streams, where the trace names them (format 3): the legacy default
    /// stream, and each thread's per-thread default stream.
    pub legacy_streams: Vec<u32>,
    pub per_thread_streams: HashMap<u32, u64>,
    /// Records CUPTI dropped.
    pub dropped: u64,
    /// The calls a bounded trace counted without writing them (format 4), where it is one.
    pub rest: Option<super::counts::Rest>,
    /// The driver's overhead records, in the order they began.
    pub overheads: Vec<Overhead>,
    /// The threads' names, where the trace gives them (format 5).
    pub threads: super::threads::Names,
    /// Why some GPU records may be missing (`None`: the section is whole and CUPTI dropped none).
    pub lost: Option<Lost>,
    /// The latest end of any GPU or synchronization record in the section (`i64::MIN` where it has none):
    /// in a section cut short, what ended later was not handed back.
    pub records_end: i64,
    /// The launch log and the record kinds the trace holds (format 5; `ahead`).
    pub log: super::ahead::Log,
    /// Indexes, so that a long program's calls are each looked at in about constant time.
    index: Index,
}

/// Where to look, for one call: its work by correlation id, and how far back an overlap can begin.
#[derive(Clone, Debug, Default, PartialEq)]
struct Index {
    work_by_corr: HashMap<u32, Vec<usize>>,
    stream_by_corr: HashMap<u32, u32>,
    /// The correlation ids of context synchronizations.
    context_syncs: std::collections::HashSet<u32>,
    /// The overhead records of each correlation id, by their place in `overheads`.
    overheads_by_corr: HashMap<u32, Vec<usize>>,
    /// The calls that lack their GPU records (by index), in the order they began.
    missing: Vec<usize>,
    longest_work: i64,
    longest_call: i64,
    /// The longest a lazy module load with nothing to wait for held its thread (`lazy`).
    lazy_alone: Option<i64>,
}

/// An API call's line, before the calls are nested: (domain, name, callback id, thread, correlation id, span).
type ApiLine<'a> = (Domain, &'a str, u32, u64, u32, Span);

/// What a section's lines say that is placed only once all are read.
#[derive(Default)]
struct Unplaced<'a> {
    /// The API calls, outer and inner.
    api: Vec<ApiLine<'a>>,
    /// (event, the correlation id of the call that recorded it, its stream).
    records: Vec<(u32, u32, u32)>,
    /// (event, the correlation id of the call that waited for it).
    event_waits: Vec<(u32, u32)>,
    /// The correlation ids of context synchronizations.
    context_syncs: Vec<u32>,
}

impl Program {
    /// The calls and records of one process's section.
    pub fn of(p: &ProcessTrace) -> Program {
        super::made::program();
        let mut prog = Program { threads: super::threads::Names::of(p.pid, &[]), ..Program::default() };
        let Unplaced { api, records, event_waits, context_syncs } = prog.read(&p.lines);
        prog.records_end = records_end(&p.lines);
        prog.lost = if p.partial && p.failure.is_none() {
            Some(Lost::Cut { signal: p.ended_by.clone() })
        } else if prog.dropped > 0 {
            Some(Lost::Dropped(prog.dropped))
        } else {
            None
        };
        prog.syncs.extend(event_wait_streams(records, event_waits));
        prog.calls = nest(api);
        prog.calls.sort_by_key(|c| (c.span.start, c.corr));
        prog.work.sort_by_key(|w| (w.span.start, w.corr));
        prog.module_loads.sort_by_key(|&(tid, t)| (t, tid));
        prog.contexts.sort_by_key(|&(tid, t)| (t, tid));
        prog.overheads.sort_by_key(|o| (o.span.start, o.corr));
        prog.index = Index::of(&prog, context_syncs);
        prog.index.lazy_alone = prog.lazy_alone_longest();
        if prog.lost.is_some() {
            prog.index.missing = (0..prog.calls.len()).filter(|&i| prog.lacks_its_records(i)).collect();
        }
        prog
    }

    /// Takes in the records of `lines` (GPU work, synchronizations, resources, default streams, drops, counts,
    /// overheads), in the order they are; and what is placed later.
    fn read<'a>(&mut self, lines: &'a [Line]) -> Unplaced<'a> {
        let mut u = Unplaced::default();
        let Unplaced { api, records, event_waits, context_syncs } = &mut u;
        for line in lines {
            // A GPU record CUPTI handed back without its times (start 0: its work had not ended when the buffer
            // came back, at the program's exit) cannot be placed in time: it is left out.
            if let Line::Memcpy { start: 0, .. } | Line::Memset { start: 0, .. } | Line::Kernel { start: 0, .. } = line
            {
                continue;
            }
            match line {
                Line::Api { domain, name, cbid, tid, corr, start, end } => {
                    api.push((*domain, name, *cbid, *tid, *corr, Span::new(*start as i64, *end as i64)))
                }
                Line::Memcpy { copy_kind, src_kind, dst_kind, bytes, start, end, stream, corr } => {
                    self.work.push(Work {
                        kind: WorkKind::Copy { copy_kind: *copy_kind, src_kind: *src_kind, dst_kind: *dst_kind },
                        bytes: *bytes,
                        span: Span::new(*start as i64, *end as i64),
                        stream: *stream,
                        corr: *corr,
                    })
                }
                Line::Memset { bytes, start, end, stream, corr } => self.work.push(Work {
                    kind: WorkKind::Memset,
                    bytes: *bytes,
                    span: Span::new(*start as i64, *end as i64),
                    stream: *stream,
                    corr: *corr,
                }),
                Line::Kernel { name, start, end, stream, corr } => self.work.push(Work {
                    kind: WorkKind::Kernel { name: name.clone() },
                    bytes: 0,
                    span: Span::new(*start as i64, *end as i64),
                    stream: *stream,
                    corr: *corr,
                }),
                Line::Sync { stream: Some(s), corr, .. } => self.syncs.push((*corr, *s)),
                Line::Sync { sync_type: 4, stream: None, corr, .. } => context_syncs.push(*corr),
                Line::Sync { stream: None, event: Some(e), corr, .. } => event_waits.push((*e, *corr)),
                Line::Event { event, stream, corr } => records.push((*event, *corr, *stream)),
                Line::Resource { event: Resource::ModuleLoaded, t, tid } => self.module_loads.push((*tid, *t as i64)),
                Line::Resource { event: Resource::ContextCreated, t, tid } => self.contexts.push((*tid, *t as i64)),
                Line::DefaultStreams { tid, legacy, per_thread } => {
                    if !self.legacy_streams.contains(legacy) {
                        self.legacy_streams.push(*legacy);
                    }
                    if let Some(s) = per_thread {
                        self.per_thread_streams.insert(*s, *tid);
                    }
                }
                Line::Dropped { records } => self.dropped += records,
                Line::Thread { tid, name } => self.threads.add(*tid, name),
                Line::Counts { keep_over_ns, calls } => {
                    self.rest = Some(super::counts::Rest { keep_over_ns: *keep_over_ns, calls: calls.clone() })
                }
                Line::Overhead { kind, start, end, corr, stream, queue_length } => self.overheads.push(Overhead {
                    kind: *kind,
                    span: Span::new(*start as i64, *end as i64),
                    corr: *corr,
                    stream: *stream,
                    queue_length: *queue_length,
                }),
                other => {
                    self.log.read(other);
                }
            }
        }
        u
    }

    /// How many calls the program made: those in the trace and those a bounded trace only counted, less the
    /// `left_out` of its calls that a view does not show.
    pub fn calls_made(&self, left_out: usize) -> usize {
        self.calls.len() - left_out + self.rest.as_ref().map_or(0, super::counts::Rest::total)
    }

    /// Whether call `i` enqueues GPU work by what it is (a copy, a memset, a kernel launch: its own function
    /// or a driver function it called) and its trace holds none of it, in a section whose records may be
    /// missing (`lost`). A graph launch, a host function and a call that enqueues nothing are not such calls:
    /// they may have no record of their own in a whole trace too.
    fn lacks_its_records(&self, i: usize) -> bool {
        let c = &self.calls[i];
        self.lost.is_some()
            && self.own_work(i).is_empty()
            && std::iter::once(&c.name).chain(&c.inner).any(|n| enqueues(n))
    }

    /// The longest GPU work the trace holds, in ns.
    pub fn longest_work_ns(&self) -> i64 {
        self.index.longest_work
    }

    /// The longest a lazy module load with nothing to wait for held its thread in this trace (`lazy`), in ns,
    /// where it has one.
    pub fn lazy_alone_ns(&self) -> Option<i64> {
        self.index.lazy_alone
    }

    /// The longest call the trace holds, in ns.
    pub fn longest_call_ns(&self) -> i64 {
        self.index.longest_call
    }

    /// The calls that lack their GPU records (`lacks_its_records`), by index, in the order they began.
    pub fn missing_records(&self) -> &[usize] {
        &self.index.missing
    }

    /// The overhead records of call `i` (by its correlation ids), in the order they began.
    pub fn overheads_of(&self, i: usize) -> Vec<&Overhead> {
        let mut at: Vec<usize> =
            self.calls[i].corrs.iter().filter_map(|c| self.index.overheads_by_corr.get(c)).flatten().copied().collect();
        at.sort_unstable();
        at.into_iter().map(|k| &self.overheads[k]).collect()
    }

    /// The GPU work of call `i`, in the order it began.
    pub fn own_work(&self, i: usize) -> Vec<&Work> {
        let mut at: Vec<usize> =
            self.calls[i].corrs.iter().filter_map(|c| self.index.work_by_corr.get(c)).flatten().copied().collect();
        at.sort_unstable();
        at.into_iter().map(|k| &self.work[k]).collect()
    }

    /// The GPU work that overlapped `span`.
    pub fn work_during(&self, span: Span) -> impl Iterator<Item = &Work> {
        let from = self.work.partition_point(|w| w.span.start <= span.start - self.index.longest_work);
        let to = self.work.partition_point(|w| w.span.start < span.end);
        self.work[from..to.max(from)].iter().filter(move |w| w.span.end > span.start)
    }

    /// The calls in flight at `t` (begun before it, not yet returned).
    pub fn calls_at(&self, t: i64) -> impl Iterator<Item = &Call> {
        let from = self.calls.partition_point(|c| c.span.start <= t - self.index.longest_call);
        let to = self.calls.partition_point(|c| c.span.start < t);
        self.calls[from..to.max(from)].iter().filter(move |c| c.span.end > t)
    }

    /// How much GPU work enqueued before call `i` had not begun when it began: how full the launch queue was.
    /// The trace may not hold every queued record (a cut trace keeps only what overlapped the calls it kept),
    /// so where the earliest work not yet begun is in the call's stream, everything enqueued after it there is
    /// counted too, from the correlation ids between: as many calls as there are ids, in steps of as many ids
    /// as the call itself took (a runtime launch takes its own and its driver launch's).
    pub fn queued_before(&self, i: usize) -> usize {
        self.queued_before_in(i, self.stream_of(i))
    }

    /// `queued_before` of call `i`, whose stream is `stream`.
    pub(super) fn queued_before_in(&self, i: usize, stream: Option<u32>) -> usize {
        let c = &self.calls[i];
        let first_corr = c.corrs.iter().copied().min().unwrap_or(c.corr);
        let from = self.work.partition_point(|w| w.span.start <= c.span.start);
        let pending: Vec<&Work> = self.work[from..].iter().filter(|w| w.corr < first_corr).collect();
        let by_ids = pending
            .iter()
            .filter(|w| Some(w.stream) == stream)
            .map(|w| w.corr)
            .min()
            .map_or(0, |earliest| (first_corr - earliest) as usize / c.corrs.len().max(1));
        pending.len().max(by_ids)
    }

    /// The stream call `i` works in or synchronizes, where it has one.
    pub fn stream_of(&self, i: usize) -> Option<u32> {
        self.stream_with(i, &self.own_work(i))
    }

    /// `stream_of` call `i`, whose own work is `own`: its work's, its synchronization's record's, or where the
    /// trace holds no such record (format 5's default), as its parameters named it (`ahead`).
    pub(super) fn stream_with(&self, i: usize, own: &[&Work]) -> Option<u32> {
        let c = &self.calls[i];
        own.first()
            .map(|w| w.stream)
            .or_else(|| c.corrs.iter().find_map(|corr| self.index.stream_by_corr.get(corr).copied()))
            .or_else(|| self.log.stream_of(&c.corrs))
    }

    /// The earliest start of the GPU records of correlation id `corr`, where the trace holds one.
    pub fn record_start(&self, corr: u32) -> Option<i64> {
        self.index.work_by_corr.get(&corr)?.iter().map(|&k| self.work[k].span.start).min()
    }

    /// The module loads on call `i`'s thread while it ran.
    pub fn module_loads_in(&self, i: usize) -> usize {
        self.module_load_times_in(i).len()
    }

    /// When the module loads on call `i`'s thread while it ran happened.
    pub fn module_load_times_in(&self, i: usize) -> Vec<i64> {
        events_in(&self.module_loads, &self.calls[i])
    }

    /// The contexts created on call `i`'s thread while it ran.
    pub fn contexts_in(&self, i: usize) -> usize {
        events_in(&self.contexts, &self.calls[i]).len()
    }

    /// A stream in words: "the legacy default stream", "thread 7's per-thread default stream", "stream 13".
    pub fn stream_words(&self, stream: u32) -> String {
        if self.legacy_streams.contains(&stream) {
            "the legacy default stream".into()
        } else if let Some(tid) = self.per_thread_streams.get(&stream) {
            format!("{}'s per-thread default stream", self.threads.words(*tid))
        } else {
            format!("stream {stream}")
        }
    }
}

/// The latest end of any GPU or synchronization record in `lines` (`i64::MIN` where there is none).
fn records_end(lines: &[Line]) -> i64 {
    lines
        .iter()
        .filter_map(|l| match l {
            Line::Memcpy { end, .. } | Line::Memset { end, .. } | Line::Kernel { end, .. } | Line::Sync { end, .. } => {
                Some(*end as i64)
            }
            _ => None,
        })
        .max()
        .unwrap_or(i64::MIN)
}

/// (correlation id, stream) of each event wait whose stream the trace shows: an event wait waits for the stream
/// the event was last recorded in before the wait was called.
fn event_wait_streams(mut records: Vec<(u32, u32, u32)>, event_waits: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    records.sort_unstable();
    let mut syncs = Vec::new();
    for (event, corr) in event_waits {
        let before = records.partition_point(|&(e, c, _)| (e, c) < (event, corr));
        if let Some(&(e, _, stream)) = before.checked_sub(1).map(|k| &records[k]) {
            if e == event {
                syncs.push((corr, stream));
            }
        }
    }
    syncs
}

/// The calls of `api`: a call made inside another on its thread, within its span (a runtime call's driver
/// calls), is one of the outer call's `inner` calls.
fn nest(mut api: Vec<ApiLine>) -> Vec<Call> {
    let mut calls: Vec<Call> = Vec::new();
    // Outer calls first where two begin together (a runtime call and the driver call it starts at once).
    api.sort_by_key(|a| (a.3, a.5.start, std::cmp::Reverse(a.5.end), a.0 == Domain::Driver));
    let mut open: Option<usize> = None;
    for (domain, name, _cbid, tid, corr, span) in api {
        let inside = open.filter(|&i| {
            let c: &Call = &calls[i];
            c.tid == tid && span.start >= c.span.start && span.end <= c.span.end
        });
        match inside {
            Some(i) => {
                let c = &mut calls[i];
                if !c.corrs.contains(&corr) {
                    c.corrs.push(corr);
                }
                c.inner.push(name.to_owned());
                c.inner_spans.push(span);
            }
            None => {
                calls.push(Call {
                    domain,
                    name: name.to_owned(),
                    tid,
                    corr,
                    span,
                    corrs: vec![corr],
                    inner: vec![],
                    inner_spans: vec![],
                });
                open = Some(calls.len() - 1);
            }
        }
    }
    calls
}

impl Index {
    /// The index of `prog`'s calls, work, synchronizations and overheads, each in its order.
    fn of(prog: &Program, context_syncs: Vec<u32>) -> Index {
        let mut index = Index {
            context_syncs: context_syncs.into_iter().collect(),
            longest_work: prog.work.iter().map(|w| w.span.len()).max().unwrap_or(0),
            longest_call: prog.calls.iter().map(|c| c.span.len()).max().unwrap_or(0),
            ..Index::default()
        };
        for (i, w) in prog.work.iter().enumerate() {
            index.work_by_corr.entry(w.corr).or_default().push(i);
        }
        for &(corr, stream) in &prog.syncs {
            index.stream_by_corr.entry(corr).or_insert(stream);
        }
        for (i, o) in prog.overheads.iter().enumerate() {
            if let Some(c) = o.corr {
                index.overheads_by_corr.entry(c).or_default().push(i);
            }
        }
        index
    }
}

/// The events of `events` (thread, time; in time order) on `c`'s thread while it ran.
fn events_in(events: &[(u64, i64)], c: &Call) -> Vec<i64> {
    let from = events.partition_point(|&(_, t)| t < c.span.start);
    events[from..]
        .iter()
        .take_while(|&&(_, t)| t <= c.span.end)
        .filter(|&&(tid, _)| tid == c.tid)
        .map(|&(_, t)| t)
        .collect()
}

/// Index of calls by correlation id.
pub fn by_corr(p: &Program) -> HashMap<u32, usize> {
    p.calls.iter().enumerate().map(|(i, c)| (c.corr, i)).collect()
}

/// A function that enqueues GPU work a record is made of: a copy, a memset, a kernel launch (not a host
/// function's launch, not a graph's, whose records depend on its nodes): the function table's answer.
pub fn enqueues(name: &str) -> bool {
    super::functions::enqueues_with_record(name)
}
