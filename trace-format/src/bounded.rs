//! The bounded trace, decided online: of a traced program's lines, only what the answer needs, so that a
//! program traced for hours writes kilobytes a second, not megabytes.
//!
//! A call (a runtime or driver call, with the driver calls made inside it folded in, as `scene::Program`
//! folds them) is *kept*, its lines written, where:
//! - it held its thread longer than the threshold (`Config::keep_over_ns`, the trace's `--min-held`): then
//!   also everything its class and explanation rest on, by `trim`'s rule: its GPU records and
//!   synchronizations (by correlation id) and the records of the events those waited for, the GPU work that
//!   overlapped it, and the calls other threads had in flight when it began;
//! - it is one of those calls in flight;
//! - it may be start-up: it loads or creates (`functions::loads_or_creates`, a resource event on its thread while it
//!   ran), or it came before the first GPU record (the first call that enqueued work is among those).
//!
//! A kept call's own GPU records, synchronizations and the driver's overheads it caused are kept with it, and
//! its launch log (`ahead`) and its location: a stack written before (the same Python and native frames: a loop's `loss.item()`, step after
//! step) as a `same-location` line naming the call it was first written for. Every resource event, default-streams,
//! thread name, setup, record-kinds, kernel-window, error, conflict, signal, dropped and end line is kept, and each NVTX range that holds a kept call's
//! start. Of the rest of the calls only their counts are written ([`Line::Counts`]: per thread and function,
//! how many calls, their time, their durations grouped as the tables print them), so the tables per function
//! and per thread add up as from the whole trace.
//!
//! Online means from a bounded window of recent lines: a call not kept is held back for [`Config::window_ns`]
//! of the trace's clock after it returned (and as long as a call on another thread that began before its end is
//! still in flight: such a call may turn out to be held, and this one was in flight when it began), then
//! counted; a GPU record likewise; what was kept is remembered ([`Config::remember`]), so that GPU records
//! that come later (CUPTI hands them over in batches) still find the held call they overlap.
//!
//! Pure: the injection library feeds it the lines as they come (`trace-inject/src/writer.rs`), and a test feeds
//! it a whole committed trace and checks that the bounded one gives the same tables and explanations.

use crate::functions::loads_or_creates;
use crate::lines::{CallCount, Domain, Line};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// What the filter keeps and for how long it waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Calls that held their thread longer than this (ns) are kept with what explains them.
    pub keep_over_ns: u64,
    /// How long (ns, the trace's clock) a call or GPU record not kept is held back before it is only counted.
    pub window_ns: u64,
    /// How many kept calls' correlation ids and held calls' spans are remembered for the lines that come
    /// later (GPU records, event records: CUPTI may hand them over only when its buffer is full, or at exit).
    pub remember: usize,
    /// How often the counts of the rest are written (they are cumulative: the last line counts).
    pub counts_every_ns: u64,
    /// Calls kept before the first GPU record at most (start-up, in a program that enqueues no work for long).
    pub startup_calls: usize,
}

impl Config {
    /// The library's defaults for a threshold.
    pub fn with_threshold(keep_over_ns: u64) -> Config {
        Config {
            keep_over_ns,
            window_ns: 200_000_000,
            remember: 1 << 20,
            counts_every_ns: 10_000_000_000,
            startup_calls: 5_000,
        }
    }
}

/// Event records kept per event, the latest.
const EVENT_RECORDS: usize = 16;

/// One call, its driver calls folded in.
#[derive(Debug)]
struct Call {
    domain: Domain,
    start: u64,
    end: u64,
    corrs: Vec<u32>,
    /// Its `api` lines (its own last) and its location.
    lines: Vec<Line>,
}

impl Call {
    fn held_ns(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// In flight at `t`, as `Program::calls_at` sees it.
    fn in_flight_at(&self, t: u64) -> bool {
        self.start < t && self.end > t
    }
}

/// One thread's state.
#[derive(Debug, Default)]
struct Thread {
    /// Calls returned whose caller may still be running (a driver call inside a runtime call not yet returned).
    pending: Vec<Call>,
    /// Calls not kept, held back, in the order they returned.
    window: VecDeque<Call>,
    /// The starts and ends of kept calls, remembered for the NVTX ranges that close later.
    kept: VecDeque<(u64, u64)>,
    /// NVTX ranges not kept, held back.
    nvtx: VecDeque<Line>,
    /// Resource events on this thread, recent.
    resources: VecDeque<u64>,
}

/// A group of the rest: calls not written.
#[derive(Debug, Default, Clone)]
struct Rest {
    calls: u64,
    total_ns: u64,
    first_ns: u64,
    last_ns: u64,
    /// Durations grouped as `units::duration` prints them: (one duration of the group, how many).
    groups: BTreeMap<String, (u64, u64)>,
}

/// The filter of one process's lines.
#[derive(Debug)]
pub struct Filter {
    cfg: Config,
    /// The latest end of a call seen: the filter's clock.
    now: u64,
    threads: HashMap<u64, Thread>,
    /// GPU records and synchronizations not kept, by (end, arrival).
    gpu: BTreeMap<(u64, u64), Line>,
    gpu_by_corr: HashMap<u32, Vec<(u64, u64)>>,
    arrivals: u64,
    /// Correlation ids of kept calls, the latest [`Config::remember`].
    kept_corrs: std::collections::HashSet<u32>,
    kept_corrs_order: VecDeque<u32>,
    /// The held calls' spans, merged: start → end.
    held: BTreeMap<u64, u64>,
    /// Starts of held calls: (thread, start, until).
    pins: VecDeque<(u64, u64, u64)>,
    /// Calls still running (thread, start), as the library last saw them.
    open: Vec<(u64, u64)>,
    /// Event records, the latest per event, with whether each was written.
    events: HashMap<u32, VecDeque<(Line, bool)>>,
    /// Events that kept synchronizations waited for, the latest [`Config::remember`].
    waited: std::collections::HashSet<u32>,
    waited_order: VecDeque<u32>,
    rest: BTreeMap<(u64, Domain, String), Rest>,
    counts_at: u64,
    counts_changed: bool,
    /// The counts a trace fed through the filter already held (its last `counts` line: a bounded trace cut
    /// again), added to the filter's own.
    carried: Vec<CallCount>,
    /// Whether a GPU record was seen, and the calls kept before it.
    gpu_seen: bool,
    startup_kept: usize,
    /// Whether lines came with the library's word on whether each call is outermost.
    hinted: bool,
    /// The frames of the locations written, with the call they were written for: a stack written again is
    /// written as a `same-location` line (the latest [`STACKS`]).
    stacks: HashMap<String, u32>,
    stacks_order: VecDeque<String>,
}

/// Distinct stacks remembered for writing a repeated one once.
const STACKS: usize = 4096;

impl Filter {
    pub fn new(cfg: Config) -> Filter {
        Filter {
            cfg,
            now: 0,
            threads: HashMap::new(),
            gpu: BTreeMap::new(),
            gpu_by_corr: HashMap::new(),
            arrivals: 0,
            kept_corrs: Default::default(),
            kept_corrs_order: VecDeque::new(),
            held: BTreeMap::new(),
            pins: VecDeque::new(),
            open: Vec::new(),
            events: HashMap::new(),
            waited: Default::default(),
            waited_order: VecDeque::new(),
            rest: BTreeMap::new(),
            counts_at: 0,
            counts_changed: false,
            carried: Vec::new(),
            gpu_seen: false,
            startup_kept: 0,
            hinted: false,
            stacks: HashMap::new(),
            stacks_order: VecDeque::new(),
        }
    }

    /// The first line of a bounded trace, right after its setup: it says the trace is one (no call counted yet).
    pub fn start(&mut self, out: &mut Vec<Line>) {
        self.counts_changed = true;
        self.counts(out);
    }

    /// One line, as it comes; what is decided goes to `out`. `outermost` says, for an `api` line, whether it
    /// returned outside every other traced call of its thread (`Some(true)`: it is a call of its own, decided
    /// at once), inside one (`Some(false)`), or is not known (`None`: decided by the next line of its thread).
    pub fn push(&mut self, line: Line, outermost: Option<bool>, out: &mut Vec<Line>) {
        match line {
            Line::Api { domain, tid, corr, start, end, .. } => {
                self.now = self.now.max(end);
                let call = Call { domain, start, end, corrs: vec![corr], lines: vec![line] };
                self.call(tid, call, outermost, out);
            }
            Line::Location { tid, corr, .. } => {
                // Written for a call that returned outside every other: its thread's pending calls are decided.
                self.settle(tid, out);
                let t = self.threads.entry(tid).or_default();
                if self.kept_corrs.contains(&corr) {
                    self.location(line, out);
                } else if let Some(c) = t.window.iter_mut().rev().find(|c| c.corrs.contains(&corr)) {
                    c.lines.push(line);
                }
            }
            // The launch log of a held call (`ahead`): written with the call, as its location is.
            Line::Ahead { tid, corr, .. } => {
                self.settle(tid, out);
                let t = self.threads.entry(tid).or_default();
                if self.kept_corrs.contains(&corr) {
                    out.push(line);
                } else if let Some(c) = t.window.iter_mut().rev().find(|c| c.corrs.contains(&corr)) {
                    c.lines.push(line);
                }
            }
            Line::Nvtx { tid, start, end, .. } => {
                // A range closes between calls: its thread's pending calls are decided.
                self.settle(tid, out);
                let t = self.threads.entry(tid).or_default();
                if t.kept.iter().any(|&(s, _)| start <= s && s <= end) {
                    out.push(line);
                } else {
                    t.nvtx.push_back(line);
                }
            }
            Line::Resource { tid, t, .. } => {
                self.threads.entry(tid).or_default().resources.push_back(t);
                out.push(line);
            }
            Line::Memcpy { corr, start, end, .. }
            | Line::Memset { corr, start, end, .. }
            | Line::Kernel { corr, start, end, .. } => {
                self.gpu_seen = true;
                if self.kept_corrs.contains(&corr) || self.overlaps_held(start, end) {
                    out.push(line);
                } else {
                    self.hold_gpu(corr, end, line);
                }
            }
            // The driver's overheads go with the call that caused them (and those of no call, always).
            Line::Overhead { corr: None, .. } => out.push(line),
            Line::Overhead { corr: Some(corr), end, .. } => {
                if self.kept_corrs.contains(&corr) {
                    out.push(line);
                } else {
                    self.hold_gpu(corr, end, line);
                }
            }
            Line::Sync { corr, end, event, .. } => {
                if self.kept_corrs.contains(&corr) {
                    if let Some(e) = event {
                        self.waited_for(e, out);
                    }
                    out.push(line);
                } else {
                    self.hold_gpu(corr, end, line);
                }
            }
            Line::Event { event, .. } => {
                let written = self.waited.contains(&event);
                if written {
                    out.push(line.clone());
                }
                let records = self.events.entry(event).or_default();
                records.push_back((line, written));
                if records.len() > EVENT_RECORDS {
                    records.pop_front();
                }
            }
            // What the rest of the calls add up to is the filter's own to write, with what an already bounded
            // trace had counted (each `counts` line holds all of it so far: the last one stands).
            Line::Counts { calls, .. } => {
                self.carried = calls;
                self.counts_changed = true;
            }
            Line::End { .. } | Line::Signal { .. } => {
                self.finish(out);
                out.push(line);
            }
            other => out.push(other),
        }
        if self.now >= self.counts_at.saturating_add(self.cfg.counts_every_ns) {
            self.evict(out);
            self.counts(out);
        }
    }

    /// The calls running now (thread, start), as the library sees them each time it hands lines over: what
    /// overlaps them is held back until they return. Then what is past the window is counted.
    pub fn open(&mut self, open: &[(u64, u64)], out: &mut Vec<Line>) {
        self.open.clear();
        self.open.extend_from_slice(open);
        if !self.hinted {
            // Without the library's word on each call, a thread's pending calls that returned before the call it
            // is in now began (or while it is in none) were calls of their own.
            let tids: Vec<u64> = self.threads.iter().filter(|(_, t)| !t.pending.is_empty()).map(|(&k, _)| k).collect();
            for tid in tids {
                let running = open.iter().filter(|o| o.0 == tid).map(|o| o.1).min();
                let t = self.threads.entry(tid).or_default();
                let (done, inside): (Vec<Call>, Vec<Call>) =
                    t.pending.drain(..).partition(|c| running.is_none_or(|s| c.end <= s));
                t.pending = inside;
                for c in done {
                    self.decide(tid, c, out);
                }
            }
        }
        self.evict(out);
    }

    /// Everything still held back decided, and the counts of the rest written (at the process's end).
    pub fn finish(&mut self, out: &mut Vec<Line>) {
        let tids: Vec<u64> = self.threads.keys().copied().collect();
        for tid in tids {
            self.settle(tid, out);
        }
        self.open.clear();
        self.now = u64::MAX;
        self.evict(out);
        self.counts_changed = true;
        self.counts(out);
    }

    /// Writes the counts of the rest where they changed.
    fn counts(&mut self, out: &mut Vec<Line>) {
        self.counts_at = self.now;
        if !self.counts_changed {
            return;
        }
        self.counts_changed = false;
        let calls = self
            .rest
            .iter()
            .map(|((tid, domain, name), r)| CallCount {
                tid: *tid,
                domain: *domain,
                name: name.clone(),
                calls: r.calls,
                total_ns: r.total_ns,
                first_ns: r.first_ns,
                last_ns: r.last_ns,
                durations: {
                    let mut g: Vec<[u64; 2]> = r.groups.values().map(|&(ns, n)| [ns, n]).collect();
                    g.sort_unstable();
                    g
                },
            })
            .collect();
        let calls = with_carried(calls, &self.carried);
        out.push(Line::Counts { keep_over_ns: self.cfg.keep_over_ns, calls });
    }

    /// A call returned on `tid`.
    fn call(&mut self, tid: u64, mut call: Call, outermost: Option<bool>, out: &mut Vec<Line>) {
        self.hinted |= outermost.is_some();
        let t = self.threads.entry(tid).or_default();
        // The pending calls inside it are its driver calls; the others came before it.
        let (inner, before): (Vec<Call>, Vec<Call>) =
            t.pending.drain(..).partition(|p| p.start >= call.start && p.end <= call.end);
        t.pending = before;
        for i in inner {
            for c in i.corrs {
                if !call.corrs.contains(&c) {
                    call.corrs.push(c);
                }
            }
            let own = call.lines.pop();
            call.lines.extend(i.lines);
            call.lines.extend(own);
        }
        if outermost == Some(true) {
            // Outside every other call: those before it were calls of their own.
            self.settle(tid, out);
            self.decide(tid, call, out);
        } else {
            // It, and those before it, may yet be inside a call still running.
            self.threads.entry(tid).or_default().pending.push(call);
        }
    }

    /// Decides the pending calls of `tid`: none of them is inside a call still running.
    fn settle(&mut self, tid: u64, out: &mut Vec<Line>) {
        let pending = match self.threads.get_mut(&tid) {
            Some(t) => std::mem::take(&mut t.pending),
            None => return,
        };
        for c in pending {
            self.decide(tid, c, out);
        }
    }

    /// Keeps `call` or holds it back.
    fn decide(&mut self, tid: u64, call: Call, out: &mut Vec<Line>) {
        let held = call.held_ns() > self.cfg.keep_over_ns;
        let t = self.threads.entry(tid).or_default();
        while t.resources.front().is_some_and(|&r| r.saturating_add(self.cfg.window_ns) < call.start) {
            t.resources.pop_front();
        }
        let created = t.resources.iter().any(|&r| r >= call.start && r <= call.end);
        let startup = !self.gpu_seen && self.startup_kept < self.cfg.startup_calls;
        let pinned = self.pins.iter().any(|&(ptid, at, _)| ptid != tid && call.in_flight_at(at));
        if held
            || created
            || startup
            || pinned
            || call.lines.iter().any(|l| matches!(l, Line::Api { name, .. } if loads_or_creates(name)))
        {
            if startup {
                self.startup_kept += 1;
            }
            self.keep(tid, call, held, out);
        } else {
            self.threads.entry(tid).or_default().window.push_back(call);
        }
    }

    /// Writes a call and what it needs.
    fn keep(&mut self, tid: u64, call: Call, held: bool, out: &mut Vec<Line>) {
        let (start, end) = (call.start, call.end);
        for &corr in &call.corrs {
            if self.kept_corrs.insert(corr) {
                self.kept_corrs_order.push_back(corr);
            }
            // Its GPU records and synchronizations that came before it.
            for key in self.gpu_by_corr.remove(&corr).unwrap_or_default() {
                if let Some(line) = self.gpu.remove(&key) {
                    if let Line::Sync { event: Some(e), .. } = line {
                        self.waited_for(e, out);
                    }
                    out.push(line);
                }
            }
        }
        for line in call.lines {
            if matches!(line, Line::Location { .. }) {
                self.location(line, out);
            } else {
                out.push(line);
            }
        }
        let t = self.threads.entry(tid).or_default();
        t.kept.push_back((start, end));
        // The NVTX ranges that hold its start.
        let (hold, keep): (Vec<Line>, Vec<Line>) = t
            .nvtx
            .drain(..)
            .partition(|r| matches!(r, Line::Nvtx { start: s, end: e, .. } if *s <= start && start <= *e));
        t.nvtx = keep.into();
        out.extend(hold);
        if !held {
            return;
        }
        // The GPU work that overlapped it (came before it), and what comes later.
        let overlapping: Vec<(u64, u64)> = self
            .gpu
            .range((start.saturating_add(1), 0)..)
            .filter(|(_, l)| gpu_start(l).is_some_and(|s| s < end))
            .map(|(k, _)| *k)
            .collect();
        for key in overlapping {
            if let Some(line) = self.gpu.remove(&key) {
                out.push(line);
            }
        }
        self.hold_span(start, end);
        // The calls other threads had in flight when it began, now and as they come.
        self.pins.push_back((tid, start, self.now.saturating_add(self.cfg.window_ns)));
        let others: Vec<u64> = self.threads.keys().copied().filter(|&o| o != tid).collect();
        for o in others {
            let th = self.threads.entry(o).or_default();
            // A thread's calls follow one another: the one that ends first after `start` is the only candidate.
            let i = th.window.partition_point(|c| c.end <= start);
            if th.window.get(i).is_some_and(|c| c.in_flight_at(start)) {
                if let Some(c) = th.window.remove(i) {
                    self.keep(o, c, false, out);
                }
            }
        }
    }

    /// Writes a location: whole the first time its frames are seen, else as the same as the earlier one.
    fn location(&mut self, line: Line, out: &mut Vec<Line>) {
        let Line::Location { tid, corr, gil, ref python, ref native, took_ns, ref others } = line else {
            return out.push(line);
        };
        if python.is_empty() && native.is_empty() && others.is_empty() {
            return out.push(line);
        }
        // Writing to a String cannot fail: the frames, as the key of the stack.
        let key = serde_json::to_string(&(gil, python, native, others)).unwrap_or_default();
        match self.stacks.get(&key) {
            Some(&as_corr) => out.push(Line::SameLocation { tid, corr, gil, as_corr, took_ns }),
            None => {
                self.stacks.insert(key.clone(), corr);
                self.stacks_order.push_back(key);
                if self.stacks_order.len() > STACKS {
                    if let Some(old) = self.stacks_order.pop_front() {
                        self.stacks.remove(&old);
                    }
                }
                out.push(line);
            }
        }
    }

    /// The records of event `e`, which a kept synchronization waited for: those seen, and those to come.
    fn waited_for(&mut self, e: u32, out: &mut Vec<Line>) {
        if self.waited.insert(e) {
            self.waited_order.push_back(e);
        }
        for (line, written) in self.events.entry(e).or_default().iter_mut() {
            if !*written {
                *written = true;
                out.push(line.clone());
            }
        }
    }

    fn hold_gpu(&mut self, corr: u32, end: u64, line: Line) {
        self.arrivals += 1;
        let key = (end, self.arrivals);
        self.gpu.insert(key, line);
        self.gpu_by_corr.entry(corr).or_default().push(key);
    }

    /// Whether `[start, end)` overlaps a held call.
    fn overlaps_held(&self, start: u64, end: u64) -> bool {
        self.held.range(..end).next_back().is_some_and(|(_, &e)| e > start)
    }

    /// Adds a held call's span to the merged spans.
    fn hold_span(&mut self, mut start: u64, mut end: u64) {
        // Merge with every span it touches.
        let touching: Vec<u64> =
            self.held.range(..=end).rev().take_while(|(_, &e)| e >= start).map(|(&s, _)| s).collect();
        for s in touching {
            if let Some(e) = self.held.remove(&s) {
                start = start.min(s);
                end = end.max(e);
            }
        }
        self.held.insert(start, end);
    }

    /// Counts what is past the window, and forgets what is past remembering.
    fn evict(&mut self, out: &mut Vec<Line>) {
        let mut horizon = self.now.saturating_sub(self.cfg.window_ns);
        for &(_, s) in &self.open {
            horizon = horizon.min(s);
        }
        self.pins.retain(|p| p.2 >= self.now);
        let mut counted: Vec<(u64, Call)> = Vec::new();
        for (&tid, t) in self.threads.iter_mut() {
            while t.window.front().is_some_and(|c| c.end <= horizon) {
                if let Some(c) = t.window.pop_front() {
                    counted.push((tid, c));
                }
            }
            while t.nvtx.front().is_some_and(|l| matches!(l, Line::Nvtx { end, .. } if *end <= horizon)) {
                t.nvtx.pop_front();
            }
            while t.kept.len() > self.cfg.remember {
                t.kept.pop_front();
            }
        }
        for (tid, c) in counted {
            let ns = c.end.saturating_sub(c.start);
            // The call's own line is its last `api` line: its name is the function counted.
            let Some(Line::Api { name, .. }) = c.lines.into_iter().rev().find(|l| matches!(l, Line::Api { .. })) else {
                continue;
            };
            let r = self.rest.entry((tid, c.domain, name)).or_default();
            r.first_ns = if r.calls == 0 { c.start } else { r.first_ns.min(c.start) };
            r.last_ns = r.last_ns.max(c.end);
            r.calls += 1;
            r.total_ns += ns;
            let group = crate::units::duration(ns as f64);
            match r.groups.get_mut(&group) {
                Some(g) => g.1 += 1,
                None => {
                    r.groups.insert(group, (ns, 1));
                }
            }
            self.counts_changed = true;
        }
        while let Some(entry) = self.gpu.first_entry() {
            if entry.key().0 > horizon {
                break;
            }
            let ((_, _), line) = entry.remove_entry();
            if let Some(corr) = corr_of(&line) {
                if let Some(keys) = self.gpu_by_corr.get_mut(&corr) {
                    keys.retain(|k| self.gpu.contains_key(k));
                    if keys.is_empty() {
                        self.gpu_by_corr.remove(&corr);
                    }
                }
            }
        }
        let remember = self.cfg.remember;
        while self.kept_corrs_order.len() > remember {
            if let Some(corr) = self.kept_corrs_order.pop_front() {
                self.kept_corrs.remove(&corr);
            }
        }
        while self.held.len() > remember {
            self.held.pop_first();
        }
        while self.waited_order.len() > remember {
            if let Some(e) = self.waited_order.pop_front() {
                self.waited.remove(&e);
            }
        }
        if self.events.len() > 4096 {
            // Events not waited for lately: their latest records go first.
            let waited = &self.waited;
            self.events.retain(|e, _| waited.contains(e));
        }
        let _ = out;
    }
}

fn gpu_start(l: &Line) -> Option<u64> {
    match l {
        Line::Memcpy { start, .. } | Line::Memset { start, .. } | Line::Kernel { start, .. } => Some(*start),
        _ => None,
    }
}

fn corr_of(l: &Line) -> Option<u32> {
    match l {
        Line::Memcpy { corr, .. }
        | Line::Memset { corr, .. }
        | Line::Kernel { corr, .. }
        | Line::Sync { corr, .. }
        | Line::Event { corr, .. } => Some(*corr),
        Line::Overhead { corr, .. } => *corr,
        _ => None,
    }
}

/// `own` with `carried` added in: the same thread, API and function summed, their duration groups merged.
fn with_carried(mut own: Vec<CallCount>, carried: &[CallCount]) -> Vec<CallCount> {
    for c in carried {
        match own.iter_mut().find(|o| o.tid == c.tid && o.domain == c.domain && o.name == c.name) {
            Some(o) => {
                o.calls += c.calls;
                o.total_ns += c.total_ns;
                o.first_ns = o.first_ns.min(c.first_ns);
                o.last_ns = o.last_ns.max(c.last_ns);
                for &[ns, n] in &c.durations {
                    match o.durations.iter_mut().find(|d| d[0] == ns) {
                        Some(d) => d[1] += n,
                        None => o.durations.push([ns, n]),
                    }
                }
                o.durations.sort_unstable();
            }
            None => own.push(c.clone()),
        }
    }
    own
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ahead::{EnqueueKind, Enqueued};

    fn api(tid: u64, corr: u32, start: u64, end: u64) -> Line {
        Line::Api { domain: Domain::Runtime, name: "cudaStreamSynchronize".into(), cbid: 131, tid, corr, start, end }
    }

    fn ahead(tid: u64, corr: u32) -> Line {
        Line::Ahead {
            tid,
            corr,
            stream: Some(13),
            event: None,
            device: false,
            work: vec![Enqueued {
                corr: corr - 1,
                tid,
                start: 0,
                end: 1,
                kind: EnqueueKind::Kernel,
                stream: Some(13),
                kernel: Some("_Z4spinv".into()),
            }],
        }
    }

    /// A held call's launch log is written with it, after it; a call that is only counted takes its own with
    /// it; the windows of kernel records and the kinds are kept whatever the calls.
    #[test]
    fn a_held_calls_launch_log_is_kept_with_it_and_a_counted_calls_is_not() {
        let mut f = Filter::new(Config::with_threshold(20_000));
        let mut out = Vec::new();
        // A GPU record has come: start-up is over.
        f.push(Line::Memset { bytes: 4, start: 1, end: 2, stream: 13, corr: 1 }, None, &mut out);
        f.push(api(7, 10, 1_000_000, 1_005_000), Some(true), &mut out);
        f.push(ahead(7, 10), None, &mut out);
        f.push(api(7, 12, 2_000_000, 9_000_000), Some(true), &mut out);
        f.push(ahead(7, 12), None, &mut out);
        f.push(Line::KernelWindow { start: 5, end: 6, why: crate::ahead::WindowWhy::Held }, None, &mut out);
        f.finish(&mut out);
        let aheads: Vec<u32> =
            out.iter().filter_map(|l| if let Line::Ahead { corr, .. } = l { Some(*corr) } else { None }).collect();
        assert_eq!(aheads, [12]);
        let held = out.iter().position(|l| matches!(l, Line::Api { corr: 12, .. })).unwrap();
        assert!(matches!(out[held + 1], Line::Ahead { corr: 12, .. }));
        assert!(out.iter().any(|l| matches!(l, Line::KernelWindow { .. })));
    }

    /// A thread's name is written wherever it comes, among calls that are only counted and after the end's
    /// decisions alike: the analysis names threads by it.
    #[test]
    fn thread_names_are_kept_wherever_they_come() {
        let mut f = Filter::new(Config::with_threshold(20_000));
        let mut out = Vec::new();
        f.start(&mut out);
        let named = |tid: u64, name: &str| Line::Thread { tid, name: name.into() };
        f.push(named(7, "python3"), None, &mut out);
        let call = |corr: u32, start: u64| Line::Api {
            domain: Domain::Runtime,
            name: "cudaLaunchKernel".into(),
            cbid: 211,
            tid: 7,
            corr,
            start,
            end: start + 1_000,
        };
        // A GPU record: start-up is over, short calls are counted, not kept.
        f.push(Line::Kernel { name: "k".into(), start: 10, end: 20, stream: 7, corr: 0 }, None, &mut out);
        for i in 0..100 {
            f.push(call(i + 1, 1_000_000 + u64::from(i) * 10_000), Some(true), &mut out);
        }
        f.push(named(9, "pt_autograd_0"), None, &mut out);
        f.finish(&mut out);
        f.push(named(7, "renamed"), None, &mut out);
        let names: Vec<(u64, &str)> = out
            .iter()
            .filter_map(|l| if let Line::Thread { tid, name } = l { Some((*tid, name.as_str())) } else { None })
            .collect();
        assert_eq!(names, [(7, "python3"), (9, "pt_autograd_0"), (7, "renamed")]);
        assert!(!out.iter().any(|l| matches!(l, Line::Api { .. })), "the short calls are counted, not kept");
    }
}
