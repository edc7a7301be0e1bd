//! The launch log: per stream and per event, the last work enqueued, kept on the program's threads as their
//! calls return, so that a call that held its thread can say what it had ahead of it without an activity
//! record of every kernel (`async_lab_trace_format::ahead`).
//!
//! Each call whose function has a row in `params` (a launch, a copy, a memset, a graph launch, a host
//! function, a stream's wait for an event, an event record, a synchronization, a stream's destruction) is
//! read when it returns: its stream handle becomes CUPTI's stream id (asked of CUPTI once per handle and
//! thread, then cached), a kernel's name (`CUpti_CallbackData::symbolName`) is copied once into a table of
//! names and named by its index from then on, and the work goes into its stream's slot, the last
//! [`DEPTH`] pieces. An event record copies the last work of its stream into the event's slot; a
//! synchronization marks what it waited for as done. Nothing here allocates or locks: the slots are fixed
//! tables of atomics, each behind a sequence lock (a writer makes the count odd while it writes; a reader
//! retries where the count moved), and the names go into a fixed arena.
//!
//! When a call held its thread past the bounded trace's threshold, [`ahead`] reads the slots it needs: the
//! work enqueued last before the call began in its stream (for an event, in the stream of the event's last
//! record, before that record; for a device-wide wait and for a call that names no stream, in every stream),
//! leaving out work a synchronization that returned before the call began showed done, as an `ahead` line.
//!
//! A stream slot is found by hashing CUPTI's stream id into [`STREAMS`] slots; two streams that meet in one
//! slot take it in turn (the older one's history is lost, never mixed); an event likewise by its handle.

use crate::params::{self, Does};
use crate::{windows, writer};
use async_lab_trace_format::{EnqueueKind, Enqueued, EventRecorded, Line};
use cudarc::cupti::sys;
use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::ptr::addr_of;
use std::sync::atomic::{fence, AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// The pieces of work kept per stream.
pub const DEPTH: usize = 4;
/// Stream slots.
const STREAMS: usize = 512;
/// Event slots.
const EVENTS: usize = 1024;
/// Kernel names kept, and the bytes they may take.
const NAMES: usize = 8192;
const ARENA: usize = 4 << 20;
/// The most streams a device-wide entry lists (the latest enqueued).
pub const DEVICE_STREAMS: usize = 16;
/// No name.
const NO_NAME: u32 = u32::MAX;

/// The bounded trace's threshold: calls that held their thread longer get their `ahead` line.
static KEEP_OVER: AtomicU64 = AtomicU64::new(crate::switches::KEEP_OVER_DEFAULT_NS);
/// Bumped when a stream is destroyed: its handle may come back for another stream, so each thread's cache of
/// stream ids is dropped.
static STREAM_GENERATION: AtomicU64 = AtomicU64::new(0);
/// The latest device-wide synchronization: work that had returned by `.0` was done by `.1`.
static DEVICE_DONE: SeqPair = SeqPair::new();

/// How a stream handle becomes CUPTI's id (CUPTI's own in a traced program; the benchmark's without a GPU).
static RESOLVE: AtomicUsize = AtomicUsize::new(0);
type Resolve = fn(*mut c_void, u64, bool) -> Option<u32>;

/// Sets the threshold past which a call's work ahead is written, and builds the parameter table.
pub fn init(keep_over_ns: u64) {
    KEEP_OVER.store(keep_over_ns, Ordering::Relaxed);
    params::init();
}

/// Asks `f` for stream ids instead of CUPTI (for the benchmark).
pub fn set_resolver(f: Resolve) {
    RESOLVE.store(f as usize, Ordering::Relaxed);
}

/// What one call was, as its parameters said: enough to tell, if it held, what it had ahead of it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Own {
    /// Its row's role (`None`: a function without a row: an allocation, a free, a load).
    pub does: Option<Does>,
    pub stream: Option<u32>,
    pub event: u64,
}

thread_local! {
    /// The call last read on this thread (its correlation id and what it was): a runtime call and the driver
    /// call inside it share the id, and the inner one returns first.
    static LAST: Cell<(u32, Own)> = const { Cell::new((0, Own { does: None, stream: None, event: 0 })) };
    /// Stream ids by (context, handle, per-thread), with the generation they were asked in.
    static IDS: [Cell<(u64, u64, u32, u64)>; 16] = const { [const { Cell::new((0, 0, 0, u64::MAX)) }; 16] };
}

/// Reads a call that returned: its parameters, and into the log what it enqueued, recorded or waited for.
/// Returns what it was (for [`ahead`], where it held).
///
/// # Safety
/// `data` is the `CUpti_CallbackData` CUPTI passed to the exit callback of callback id `cbid` of the runtime
/// API (`runtime`) or the driver API, valid during the call.
pub unsafe fn returned(
    runtime: bool,
    cbid: u32,
    data: *const sys::CUpti_CallbackData,
    corr: u32,
    start: u64,
    end: u64,
) -> Own {
    let (last_corr, last) = LAST.with(Cell::get);
    let Some(row) = params::row(runtime, cbid) else {
        // The runtime call around a driver call already read: what the driver call was.
        return if last_corr == corr { last } else { Own::default() };
    };
    if last_corr == corr && last.does.is_some() {
        return last;
    }
    // SAFETY: `data` is valid during the callback (the caller's promise); the fields are read as they are.
    let (params_block, context, symbol) = unsafe {
        (addr_of!((*data).functionParams).read(), addr_of!((*data).context).read(), addr_of!((*data).symbolName).read())
    };
    // SAFETY: `params_block` is the parameter block of `row`'s function (CUPTI passes the one of the callback
    // id it calls back for), valid during the callback.
    let decoded = unsafe { params::decode(row, params_block) };
    let stream = match decoded.does {
        // A destroyed stream is not asked about (its handle is gone); an event or the device names none.
        Does::SyncEvent | Does::SyncDevice | Does::EventGone | Does::StreamGone => None,
        _ => stream_id(context.cast(), decoded.stream, decoded.per_thread),
    };
    let own = Own { does: Some(decoded.does), stream, event: decoded.event };
    LAST.with(|l| l.set((corr, own)));
    let tid = writer::tid();
    let call =
        Work { corr, tid, start, end, kind: EnqueueKind::Other, stream: stream.unwrap_or(u32::MAX), name: NO_NAME };
    match decoded.does {
        Does::Enqueue(kind) => {
            let name = if kind == EnqueueKind::Kernel {
                windows::LAUNCHES.fetch_add(1, Ordering::Relaxed);
                // SAFETY: CUPTI's `symbolName` of a launch callback: null or the kernel's C string, valid
                // during the callback.
                unsafe { intern(symbol) }
            } else {
                if kind == EnqueueKind::Graph {
                    windows::LAUNCHES.fetch_add(1, Ordering::Relaxed);
                }
                NO_NAME
            };
            if let Some(s) = stream {
                slot(s).push(Work { kind, name, ..call });
            }
        }
        Does::Record => {
            if decoded.event != 0 {
                let before = stream.and_then(|s| slot(s).read(s)).and_then(|h| h.last_before(start, None));
                event_slot(decoded.event).write(decoded.event, call, before);
            }
        }
        Does::SyncStream => {
            if let Some(s) = stream {
                slot(s).done(s, start, end);
            }
        }
        Does::SyncEvent => {
            if let Some((EventRecorded { stream: Some(s), start: recorded, .. }, _)) =
                event_slot(decoded.event).read(decoded.event)
            {
                slot(s).done(s, recorded, end);
            }
        }
        Does::SyncDevice => DEVICE_DONE.write(start, end),
        Does::StreamGone => {
            STREAM_GENERATION.fetch_add(1, Ordering::Relaxed);
        }
        Does::EventGone => event_slot(decoded.event).forget(decoded.event),
        Does::CaptureBegin | Does::CaptureEnd => {
            if let Some(s) = stream {
                slot(s).capturing(s, decoded.does == Does::CaptureBegin);
            }
        }
    }
    own
}

/// An outermost call (function `cbid`) returned: where it held its thread past the bounded trace's
/// threshold, its `ahead` line after its own, and where past the location threshold (`located`), a window of
/// kernel records asked for (`windows`).
#[inline]
pub fn held(cbid: u32, corr: u32, start: u64, end: u64, own: Own, located: bool) {
    if end.saturating_sub(start) <= KEEP_OVER.load(Ordering::Relaxed) || writer::idle() {
        return;
    }
    let tid = writer::tid();
    if let Some(line) = ahead(tid, corr, start, own) {
        writer::append(&line, end);
    }
    if located {
        windows::held(tid, cbid);
    }
}

/// The `ahead` line of call `corr` of thread `tid`, which began at `start` and was `own`: what it had ahead of
/// it; `None` where the log holds nothing to say. Made on the program's thread, for a held call only.
pub fn ahead(tid: u64, corr: u32, start: u64, own: Own) -> Option<Line> {
    let mut raw = Raw { tid, corr, stream: own.stream, event: None, device: false, work: [None; DEVICE_STREAMS] };
    let device_done = DEVICE_DONE.read().filter(|&(_, at)| at <= start).map_or(0, |(before, _)| before);
    match own.does {
        Some(Does::SyncEvent) | Some(Does::Enqueue(EnqueueKind::EventWait)) => {
            if let Some((record, before)) = event_slot(own.event).read(own.event) {
                if record.end <= start {
                    let done = record.stream.and_then(|s| slot(s).read(s)).map_or(0, |h| h.done_by(start));
                    raw.event = Some(record);
                    raw.work[0] = before.filter(|w| w.end > done.max(device_done));
                }
            }
        }
        Some(Does::SyncDevice) | None => {
            raw.device = own.does.is_some();
            let mut latest: Vec<Work> = Vec::new();
            for s in &SLOTS {
                if let Some(h) = s.read_any() {
                    let done = h.done_by(start).max(device_done);
                    if let Some(w) = h.last_before(start, Some(corr)).filter(|w| w.end > done) {
                        latest.push(w);
                    }
                }
            }
            latest.sort_by_key(|w| std::cmp::Reverse(w.end));
            latest.truncate(DEVICE_STREAMS);
            latest.reverse();
            for (k, w) in latest.into_iter().enumerate() {
                raw.work[k] = Some(w);
            }
        }
        Some(_) => {
            if let Some(s) = own.stream {
                if let Some(h) = slot(s).read(s) {
                    let done = h.done_by(start).max(device_done);
                    let ahead = h.oldest_first().filter(|w| w.end <= start && w.corr != corr && w.end > done);
                    for (k, w) in ahead.enumerate() {
                        raw.work[k] = Some(w);
                    }
                }
            }
        }
    }
    let any = raw.stream.is_some() || raw.event.is_some() || raw.work.iter().any(Option::is_some);
    any.then(|| raw.line())
}

/// One piece of work in the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Work {
    pub corr: u32,
    pub tid: u64,
    pub start: u64,
    pub end: u64,
    pub kind: EnqueueKind,
    /// CUPTI's stream id (`u32::MAX`: not known).
    pub stream: u32,
    /// The kernel's name in the table (`NO_NAME`: none).
    pub name: u32,
}

/// A held call's work ahead, as read from the slots.
#[derive(Debug)]
struct Raw {
    tid: u64,
    corr: u32,
    stream: Option<u32>,
    event: Option<EventRecorded>,
    device: bool,
    work: [Option<Work>; DEVICE_STREAMS],
}

impl Raw {
    /// The `ahead` line (kernel names read from the table).
    fn line(&self) -> Line {
        let work = self
            .work
            .iter()
            .flatten()
            .map(|w| Enqueued {
                corr: w.corr,
                tid: w.tid,
                start: w.start,
                end: w.end,
                kind: w.kind,
                stream: (w.stream != u32::MAX).then_some(w.stream),
                kernel: name(w.name),
            })
            .collect();
        Line::Ahead {
            tid: self.tid,
            corr: self.corr,
            stream: self.stream,
            event: self.event.clone(),
            device: self.device,
            work,
        }
    }
}

/// The stream id of `handle` (0: the default stream; `per_thread`: a per-thread variant's), from this thread's
/// cache or CUPTI.
fn stream_id(context: *mut c_void, handle: u64, per_thread: bool) -> Option<u32> {
    let resolve = RESOLVE.load(Ordering::Relaxed);
    if context.is_null() && resolve == 0 {
        return None;
    }
    let generation = STREAM_GENERATION.load(Ordering::Relaxed);
    let key = handle ^ u64::from(per_thread);
    let at = (mix(key ^ context as u64) % 16) as usize;
    let hit = IDS.with(|c| {
        let (ctx, h, id, g) = c[at].get();
        (ctx == context as u64 && h == key && g == generation).then_some(id)
    });
    if hit.is_some() {
        return hit;
    }
    let id = match resolve {
        0 => cupti_stream_id(context, handle, per_thread),
        f => {
            // SAFETY: a non-zero RESOLVE was stored by `set_resolver` from a `Resolve`.
            let f: Resolve = unsafe { std::mem::transmute::<usize, Resolve>(f) };
            f(context, handle, per_thread)
        }
    }?;
    IDS.with(|c| c[at].set((context as u64, key, id, generation)));
    Some(id)
}

/// CUPTI's id of a stream: the legacy default stream for 0 and `CU_STREAM_LEGACY`, the thread's per-thread
/// default stream for `CU_STREAM_PER_THREAD` and for 0 in a per-thread variant.
fn cupti_stream_id(context: *mut c_void, handle: u64, per_thread: bool) -> Option<u32> {
    let (stream, per_thread) = match handle {
        0 => (std::ptr::null_mut(), per_thread),
        1 => (std::ptr::null_mut(), false),
        2 => (std::ptr::null_mut(), true),
        h => (h as *mut c_void, false),
    };
    let mut id = 0u32;
    // SAFETY: `context` is the live context of the call being returned from, `stream` a stream handle the
    // call was given (or null for a default stream); `id` is a valid place for the one u32 CUPTI writes.
    let code = unsafe { sys::cuptiGetStreamIdEx(context.cast(), stream.cast(), u8::from(per_thread), &mut id) };
    (code == sys::CUptiResult::CUPTI_SUCCESS).then_some(id)
}

/// A 64-bit mix (splitmix64's finalizer): neighbouring handles and ids spread over the slots.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A sequence lock's count: odd while a writer writes.
struct Seq(AtomicU64);

impl Seq {
    const fn new() -> Seq {
        Seq(AtomicU64::new(0))
    }

    /// Waits for no other writer, then makes the count odd; returns the even count it found. A writer holds it
    /// for a few stores: a short spin, then the processor is yielded (the writer may have been preempted).
    fn lock(&self) -> u64 {
        let mut tries = 0u32;
        loop {
            let s = self.0.load(Ordering::Relaxed);
            if s & 1 == 0 && self.0.compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                return s;
            }
            tries += 1;
            if tries < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    fn unlock(&self, s: u64) {
        self.0.store(s + 2, Ordering::Release);
    }

    /// Runs `read` until it ran while no writer wrote (a few tries; `None` where a writer kept writing).
    fn read<T>(&self, read: impl Fn() -> T) -> Option<T> {
        for _ in 0..64 {
            let s = self.0.load(Ordering::Acquire);
            if s & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let value = read();
            fence(Ordering::Acquire);
            if self.0.load(Ordering::Relaxed) == s {
                return Some(value);
            }
        }
        None
    }
}

/// Two times behind a sequence lock.
struct SeqPair {
    seq: Seq,
    a: AtomicU64,
    b: AtomicU64,
}

impl SeqPair {
    const fn new() -> SeqPair {
        SeqPair { seq: Seq::new(), a: AtomicU64::new(0), b: AtomicU64::new(0) }
    }

    fn write(&self, a: u64, b: u64) {
        let s = self.seq.lock();
        self.a.store(a, Ordering::Relaxed);
        self.b.store(b, Ordering::Relaxed);
        self.seq.unlock(s);
    }

    fn read(&self) -> Option<(u64, u64)> {
        self.seq.read(|| (self.a.load(Ordering::Relaxed), self.b.load(Ordering::Relaxed))).filter(|&(_, b)| b != 0)
    }
}

/// One piece of work, as atomics.
struct Cell5 {
    /// corr | kind << 32 | (1 << 40: written)
    head: AtomicU64,
    tid: AtomicU64,
    start: AtomicU64,
    end: AtomicU64,
    /// stream | name << 32
    ids: AtomicU64,
}

fn kind_code(k: EnqueueKind) -> u64 {
    match k {
        EnqueueKind::Kernel => 0,
        EnqueueKind::Copy => 1,
        EnqueueKind::Memset => 2,
        EnqueueKind::Graph => 3,
        EnqueueKind::HostFunction => 4,
        EnqueueKind::EventWait => 5,
        EnqueueKind::Other => 6,
    }
}

fn kind_of(code: u64) -> EnqueueKind {
    match code {
        0 => EnqueueKind::Kernel,
        1 => EnqueueKind::Copy,
        2 => EnqueueKind::Memset,
        3 => EnqueueKind::Graph,
        4 => EnqueueKind::HostFunction,
        5 => EnqueueKind::EventWait,
        _ => EnqueueKind::Other,
    }
}

impl Cell5 {
    const fn new() -> Cell5 {
        Cell5 {
            head: AtomicU64::new(0),
            tid: AtomicU64::new(0),
            start: AtomicU64::new(0),
            end: AtomicU64::new(0),
            ids: AtomicU64::new(0),
        }
    }

    fn put(&self, w: Option<Work>) {
        let Some(w) = w else {
            self.head.store(0, Ordering::Relaxed);
            return;
        };
        self.head.store(u64::from(w.corr) | kind_code(w.kind) << 32 | 1 << 40, Ordering::Relaxed);
        self.tid.store(w.tid, Ordering::Relaxed);
        self.start.store(w.start, Ordering::Relaxed);
        self.end.store(w.end, Ordering::Relaxed);
        self.ids.store(u64::from(w.stream) | u64::from(w.name) << 32, Ordering::Relaxed);
    }

    fn get(&self) -> Option<Work> {
        let head = self.head.load(Ordering::Relaxed);
        if head & 1 << 40 == 0 {
            return None;
        }
        let ids = self.ids.load(Ordering::Relaxed);
        Some(Work {
            corr: head as u32,
            kind: kind_of((head >> 32) & 0xff),
            tid: self.tid.load(Ordering::Relaxed),
            start: self.start.load(Ordering::Relaxed),
            end: self.end.load(Ordering::Relaxed),
            stream: ids as u32,
            name: (ids >> 32) as u32,
        })
    }
}

/// One stream's slot: its last [`DEPTH`] pieces of work and what a synchronization showed done.
struct Slot {
    seq: Seq,
    /// The stream id + 1 (0: empty).
    key: AtomicU64,
    /// Pieces written since the stream took the slot.
    count: AtomicU64,
    /// Work that had returned by `done_before` was done by `done_at` (a synchronization of the stream).
    done_before: AtomicU64,
    done_at: AtomicU64,
    /// The synchronization's before it: a held synchronization's `ahead` is made after its own return was
    /// logged, and must still see what the one before it showed done.
    earlier_before: AtomicU64,
    earlier_at: AtomicU64,
    /// The stream is capturing a graph (1): what is enqueued into it meanwhile does not run.
    capture: AtomicU64,
    cells: [Cell5; DEPTH],
}

static SLOTS: [Slot; STREAMS] = [const { Slot::new() }; STREAMS];

fn slot(stream: u32) -> &'static Slot {
    &SLOTS[(mix(u64::from(stream)) % STREAMS as u64) as usize]
}

/// What a reader copied of a stream's slot.
#[derive(Clone, Copy, Debug)]
struct History {
    /// Oldest first.
    work: [Option<Work>; DEPTH],
    done_before: u64,
    done_at: u64,
    earlier_before: u64,
    earlier_at: u64,
}

impl History {
    fn oldest_first(&self) -> impl Iterator<Item = Work> + '_ {
        self.work.iter().flatten().copied()
    }

    /// The last piece that had returned by `t` (other than call `not`).
    fn last_before(&self, t: u64, not: Option<u32>) -> Option<Work> {
        self.oldest_first().filter(|w| w.end <= t && Some(w.corr) != not).last()
    }

    /// Work that had returned by this was done when a call beginning at `t` began: the latest of the last two
    /// synchronizations that had returned by then.
    fn done_by(&self, t: u64) -> u64 {
        if self.done_at != 0 && self.done_at <= t {
            self.done_before
        } else if self.earlier_at != 0 && self.earlier_at <= t {
            self.earlier_before
        } else {
            0
        }
    }
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            seq: Seq::new(),
            key: AtomicU64::new(0),
            count: AtomicU64::new(0),
            done_before: AtomicU64::new(0),
            done_at: AtomicU64::new(0),
            earlier_before: AtomicU64::new(0),
            earlier_at: AtomicU64::new(0),
            capture: AtomicU64::new(0),
            cells: [const { Cell5::new() }; DEPTH],
        }
    }

    /// Takes the slot for `stream` where another stream had it.
    fn claim(&self, stream: u32) {
        let key = u64::from(stream) + 1;
        if self.key.load(Ordering::Relaxed) != key {
            self.key.store(key, Ordering::Relaxed);
            self.count.store(0, Ordering::Relaxed);
            self.done_before.store(0, Ordering::Relaxed);
            self.done_at.store(0, Ordering::Relaxed);
            self.earlier_before.store(0, Ordering::Relaxed);
            self.earlier_at.store(0, Ordering::Relaxed);
            self.capture.store(0, Ordering::Relaxed);
            for c in &self.cells {
                c.put(None);
            }
        }
    }

    fn push(&self, w: Work) {
        let s = self.seq.lock();
        self.claim(w.stream);
        if self.capture.load(Ordering::Relaxed) != 0 {
            // Captured into a graph: the graph's launch is the work, later.
            self.seq.unlock(s);
            return;
        }
        let n = self.count.load(Ordering::Relaxed);
        self.cells[(n % DEPTH as u64) as usize].put(Some(w));
        self.count.store(n + 1, Ordering::Relaxed);
        self.seq.unlock(s);
    }

    /// `stream` began (`on`) or ended capturing a graph.
    fn capturing(&self, stream: u32, on: bool) {
        let s = self.seq.lock();
        self.claim(stream);
        self.capture.store(u64::from(on), Ordering::Relaxed);
        self.seq.unlock(s);
    }

    /// A synchronization of `stream` that began at `start` returned at `end`.
    fn done(&self, stream: u32, start: u64, end: u64) {
        let s = self.seq.lock();
        self.claim(stream);
        self.earlier_before.store(self.done_before.load(Ordering::Relaxed), Ordering::Relaxed);
        self.earlier_at.store(self.done_at.load(Ordering::Relaxed), Ordering::Relaxed);
        self.done_before.store(start, Ordering::Relaxed);
        self.done_at.store(end, Ordering::Relaxed);
        self.seq.unlock(s);
    }

    /// The slot's history, where it is `stream`'s.
    fn read(&self, stream: u32) -> Option<History> {
        self.read_any().filter(|_| self.key.load(Ordering::Relaxed) == u64::from(stream) + 1)
    }

    /// The slot's history, whichever stream it holds.
    fn read_any(&self) -> Option<History> {
        if self.key.load(Ordering::Relaxed) == 0 {
            return None;
        }
        self.seq.read(|| {
            let n = self.count.load(Ordering::Relaxed);
            let mut work = [None; DEPTH];
            let kept = n.min(DEPTH as u64);
            for k in 0..kept {
                let at = ((n - kept + k) % DEPTH as u64) as usize;
                work[k as usize] = self.cells[at].get();
            }
            History {
                work,
                done_before: self.done_before.load(Ordering::Relaxed),
                done_at: self.done_at.load(Ordering::Relaxed),
                earlier_before: self.earlier_before.load(Ordering::Relaxed),
                earlier_at: self.earlier_at.load(Ordering::Relaxed),
            }
        })
    }
}

/// One event's slot: its last record, and the last work of its stream before that record.
struct EventSlot {
    seq: Seq,
    /// The event handle (0: empty).
    key: AtomicU64,
    record: Cell5,
    before: Cell5,
}

static EVENT_SLOTS: [EventSlot; EVENTS] = [const { EventSlot::new() }; EVENTS];

fn event_slot(event: u64) -> &'static EventSlot {
    &EVENT_SLOTS[(mix(event) % EVENTS as u64) as usize]
}

impl EventSlot {
    const fn new() -> EventSlot {
        EventSlot { seq: Seq::new(), key: AtomicU64::new(0), record: Cell5::new(), before: Cell5::new() }
    }

    fn write(&self, event: u64, record: Work, before: Option<Work>) {
        let s = self.seq.lock();
        self.key.store(event, Ordering::Relaxed);
        self.record.put(Some(record));
        self.before.put(before);
        self.seq.unlock(s);
    }

    fn forget(&self, event: u64) {
        let s = self.seq.lock();
        if self.key.load(Ordering::Relaxed) == event {
            self.key.store(0, Ordering::Relaxed);
            self.record.put(None);
            self.before.put(None);
        }
        self.seq.unlock(s);
    }

    /// The event's last record and the work before it.
    fn read(&self, event: u64) -> Option<(EventRecorded, Option<Work>)> {
        if event == 0 {
            return None;
        }
        let (key, record, before) =
            self.seq.read(|| (self.key.load(Ordering::Relaxed), self.record.get(), self.before.get()))?;
        let record = record.filter(|_| key == event)?;
        Some((
            EventRecorded {
                corr: record.corr,
                tid: record.tid,
                start: record.start,
                end: record.end,
                stream: (record.stream != u32::MAX).then_some(record.stream),
            },
            before,
        ))
    }
}

/// Kernel names: the pointer CUPTI gave (`symbolName`) → the name's place in the arena.
struct NameSlot {
    /// The pointer (0: empty).
    key: AtomicUsize,
    /// ready (1 << 63) | offset << 32 | length
    at: AtomicU64,
}

static NAME_SLOTS: [NameSlot; NAMES] = [const { NameSlot { key: AtomicUsize::new(0), at: AtomicU64::new(0) } }; NAMES];
static ARENA_BYTES: [AtomicU8; ARENA] = [const { AtomicU8::new(0) }; ARENA];
static ARENA_USED: AtomicUsize = AtomicUsize::new(0);
/// The bytes of a name compared with the one kept under its pointer, each launch: a pointer that now holds
/// another name (its module unloaded and the memory reused) is not taken for the old one.
const PREFIX: usize = 24;
/// The longest name kept whole.
const LONGEST: usize = 4096;
const READY: u64 = 1 << 63;

/// The index of the kernel name at `name` in the table, copying it there on first sight (`NO_NAME`: null, the
/// table or the arena full, or a pointer whose text changed).
///
/// # Safety
/// `name` is null or a C string valid during the call.
unsafe fn intern(name: *const c_char) -> u32 {
    if name.is_null() {
        return NO_NAME;
    }
    let key = name as usize;
    let first = (mix(key as u64) % NAMES as u64) as usize;
    for probe in 0..16 {
        let i = (first + probe) % NAMES;
        let slot = &NAME_SLOTS[i];
        let k = slot.key.load(Ordering::Acquire);
        if k == key {
            let at = slot.at.load(Ordering::Acquire);
            if at & READY == 0 {
                // Another thread is copying it: unnamed this time.
                return NO_NAME;
            }
            // SAFETY: `name` is a C string (the caller's promise), read up to its end or PREFIX bytes.
            return if unsafe { same_prefix(name, at) } { i as u32 } else { NO_NAME };
        }
        if k == 0 && slot.key.compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            // A kernel not launched before (`windows` watches for start-up's end).
            windows::LAST_NEW_KERNEL.store(windows::LAUNCHES.load(Ordering::Relaxed), Ordering::Relaxed);
            // SAFETY: as above; the slot is this thread's to fill.
            return unsafe { fill(slot, name) }.map_or(NO_NAME, |()| i as u32);
        }
    }
    NO_NAME
}

/// Copies `name` into the arena for `slot` (just claimed); `None` where the arena is full.
///
/// # Safety
/// `name` is a C string valid during the call.
unsafe fn fill(slot: &NameSlot, name: *const c_char) -> Option<()> {
    let mut len = 0;
    // SAFETY: a C string is readable up to and including its NUL; the count stops there (or at LONGEST).
    while len < LONGEST && unsafe { *name.add(len) } != 0 {
        len += 1;
    }
    let off = ARENA_USED.fetch_add(len, Ordering::Relaxed);
    if off + len > ARENA {
        return None;
    }
    for k in 0..len {
        // SAFETY: `k < len`, within the string.
        let b = unsafe { *name.add(k) } as u8;
        ARENA_BYTES[off + k].store(b, Ordering::Relaxed);
    }
    slot.at.store(READY | (off as u64) << 32 | len as u64, Ordering::Release);
    Some(())
}

/// Whether the string at `name` begins as the one kept at `at` does (up to [`PREFIX`] bytes).
///
/// # Safety
/// `name` is a C string valid during the call.
unsafe fn same_prefix(name: *const c_char, at: u64) -> bool {
    let (off, len) = (((at >> 32) & 0x7fff_ffff) as usize, (at & 0xffff_ffff) as usize);
    for k in 0..PREFIX.min(len + 1) {
        // SAFETY: the loop stops at the kept length + 1, and a byte that differs (the string's NUL where it
        // is shorter) ends it first: never past the string's end.
        let b = unsafe { *name.add(k) } as u8;
        let kept = if k < len { ARENA_BYTES[off + k].load(Ordering::Relaxed) } else { 0 };
        if b != kept {
            return false;
        }
        if b == 0 {
            return true;
        }
    }
    true
}

/// The kernel name kept at `id`.
pub fn name(id: u32) -> Option<String> {
    let slot = NAME_SLOTS.get(id as usize)?;
    let at = slot.at.load(Ordering::Acquire);
    if at & READY == 0 {
        return None;
    }
    let (off, len) = (((at >> 32) & 0x7fff_ffff) as usize, (at & 0xffff_ffff) as usize);
    let bytes: Vec<u8> = (off..off + len).map(|k| ARENA_BYTES[k].load(Ordering::Relaxed)).collect();
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::cupti::sys::{CUpti_driver_api_trace_cbid as DR, CUpti_runtime_api_trace_cbid as RT};
    use std::ffi::CStr;

    /// Stream ids without CUPTI: a handle's low bits.
    fn resolver() {
        set_resolver(|_, handle, per_thread| Some(if handle == 0 { 7 + u32::from(per_thread) } else { handle as u32 }));
    }

    /// CUPTI's data for the exit of a call with this parameter block.
    fn data(params: *const c_void, symbol: &CStr, corr: u32) -> sys::CUpti_CallbackData {
        sys::CUpti_CallbackData {
            callbackSite: sys::CUpti_ApiCallbackSite::CUPTI_API_EXIT,
            functionName: c"f".as_ptr(),
            functionParams: params,
            functionReturnValue: std::ptr::null_mut(),
            symbolName: symbol.as_ptr(),
            context: 0x1000 as *mut _,
            contextUid: 1,
            correlationData: std::ptr::null_mut(),
            correlationId: corr,
        }
    }

    /// A runtime launch of `kernel` into stream `stream` (and the driver launch inside it), `corr`, at `t`.
    fn launch(stream: u64, kernel: &CStr, corr: u32, t: u64) -> Own {
        // SAFETY: a plain C struct of integers and pointers: all zero is a valid value.
        let mut rt: sys::cudaLaunchKernel_v7000_params = unsafe { std::mem::zeroed() };
        rt.stream = stream as _;
        // SAFETY: as above.
        let mut dr: sys::cuLaunchKernel_params = unsafe { std::mem::zeroed() };
        dr.hStream = stream as _;
        let (d_rt, d_dr) = (data((&raw const rt).cast(), kernel, corr), data((&raw const dr).cast(), kernel, corr));
        // SAFETY: each data block is the exit of the row's function, with its parameter block, alive here.
        unsafe {
            returned(false, DR::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel as u32, &d_dr, corr, t + 1, t + 3);
            returned(true, RT::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 as u32, &d_rt, corr, t, t + 4)
        }
    }

    fn stream_sync(stream: u64, corr: u32, start: u64, end: u64) -> Own {
        // SAFETY: as in `launch`.
        let mut p: sys::cudaStreamSynchronize_v3020_params = unsafe { std::mem::zeroed() };
        p.stream = stream as _;
        let d = data((&raw const p).cast(), c"", corr);
        // SAFETY: as in `launch`.
        unsafe { returned(true, RT::CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020 as u32, &d, corr, start, end) }
    }

    fn work(line: &Line) -> Vec<(u32, Option<String>, Option<u32>)> {
        let Line::Ahead { work, .. } = line else { panic!("{line:?}") };
        work.iter().map(|w| (w.corr, w.kernel.clone(), w.stream)).collect()
    }

    #[test]
    fn a_held_synchronization_names_the_work_last_enqueued_in_its_stream() {
        resolver();
        let s = 0x9100;
        launch(s, c"_Z4spinv", 11, 1_000);
        launch(s, c"_Z4stepv", 12, 2_000);
        // Another stream's launch is not ahead of it.
        launch(0x9200, c"_Z5otherv", 13, 2_500);
        let own = stream_sync(s, 14, 3_000, 9_000);
        assert_eq!(own.stream, Some(0x9100));
        let line = ahead(1, 14, 3_000, own).unwrap();
        assert_eq!(
            work(&line),
            [(11, Some("_Z4spinv".into()), Some(0x9100)), (12, Some("_Z4stepv".into()), Some(0x9100))]
        );
        let Line::Ahead { stream, device, corr, .. } = line else { unreachable!() };
        assert_eq!((stream, device, corr), (Some(0x9100), false, 14));
        // Once that synchronization returned, the work before it is done: a copy's call after it has nothing
        // ahead of it but what came later.
        launch(s, c"_Z4stepv", 15, 10_000);
        let own = stream_sync(s, 16, 11_000, 12_000);
        assert_eq!(work(&ahead(1, 16, 11_000, own).unwrap()), [(15, Some("_Z4stepv".into()), Some(0x9100))]);
    }

    #[test]
    fn an_event_wait_names_the_work_ahead_of_the_events_record() {
        resolver();
        let s = 0x9300;
        launch(s, c"_Z6blockerv", 21, 1_000);
        // SAFETY: as in `launch`.
        let mut rec: sys::cudaEventRecord_v3020_params = unsafe { std::mem::zeroed() };
        rec.stream = s as _;
        rec.event = 0xe100 as _;
        let d = data((&raw const rec).cast(), c"", 22);
        // SAFETY: as in `launch`.
        unsafe { returned(true, RT::CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020 as u32, &d, 22, 2_000, 2_010) };
        // Work after the record is not what the event waits for.
        launch(s, c"_Z5laterv", 23, 3_000);
        // SAFETY: as in `launch`.
        let mut sync: sys::cudaEventSynchronize_v3020_params = unsafe { std::mem::zeroed() };
        sync.event = 0xe100 as _;
        let d = data((&raw const sync).cast(), c"", 24);
        // SAFETY: as in `launch`.
        let own = unsafe {
            returned(true, RT::CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020 as u32, &d, 24, 4_000, 9_000)
        };
        let line = ahead(1, 24, 4_000, own).unwrap();
        assert_eq!(work(&line), [(21, Some("_Z6blockerv".into()), Some(0x9300))]);
        let Line::Ahead { event: Some(e), stream: None, .. } = line else { panic!("{line:?}") };
        assert_eq!((e.corr, e.stream), (22, Some(0x9300)));
    }

    #[test]
    fn a_device_wide_wait_names_each_streams_last_work() {
        resolver();
        launch(0x9400, c"_Z1av", 31, 1_000);
        launch(0x9500, c"_Z1bv", 32, 1_500);
        let d = data(std::ptr::null(), c"", 33);
        // SAFETY: the device synchronization reads no parameter.
        let own = unsafe {
            returned(true, RT::CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020 as u32, &d, 33, 5_000, 6_000)
        };
        let line = ahead(1, 33, 5_000, own).unwrap();
        let Line::Ahead { device, work: w, .. } = &line else { unreachable!() };
        assert!(*device);
        let ours: Vec<u32> = w.iter().map(|w| w.corr).filter(|c| (31..=32).contains(c)).collect();
        // Each stream's last, the latest last.
        assert_eq!(ours, [31, 32]);
    }

    #[test]
    fn work_captured_into_a_graph_is_not_work_ahead_of_a_synchronization() {
        resolver();
        let s = 0x9600;
        launch(s, c"_Z4realv", 51, 1_000);
        let capture = |cbid: RT, corr: u32, t: u64| {
            // SAFETY: as in `launch`.
            let mut p: sys::cudaStreamBeginCapture_v10000_params = unsafe { std::mem::zeroed() };
            p.stream = s as _;
            let d = data((&raw const p).cast(), c"", corr);
            // SAFETY: the begin and end capture blocks both start with the stream (the one field read).
            unsafe { returned(true, cbid as u32, &d, corr, t, t + 2) };
        };
        capture(RT::CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000, 52, 2_000);
        launch(s, c"_Z8capturedv", 53, 3_000);
        capture(RT::CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000, 54, 4_000);
        let own = stream_sync(s, 55, 5_000, 9_000);
        assert_eq!(work(&ahead(1, 55, 5_000, own).unwrap()), [(51, Some("_Z4realv".into()), Some(0x9600))]);
    }

    #[test]
    fn a_name_whose_text_changed_under_its_pointer_is_not_taken_for_the_old_one() {
        let mut text = *b"_Z10first_kernelv\0";
        let p = text.as_ptr().cast::<c_char>();
        // SAFETY: `text` is a C string alive here.
        let id = unsafe { intern(p) };
        assert_eq!(name(id).as_deref(), Some("_Z10first_kernelv"));
        // SAFETY: as above.
        assert_eq!(unsafe { intern(p) }, id);
        text[4] = b's';
        // SAFETY: as above.
        assert_eq!(unsafe { intern(text.as_ptr().cast()) }, NO_NAME);
    }
}
