//! The trace file of this process: `<folder>/<pid>.jsonl`, the folder named by [`OUT_DIR_VAR`].
//!
//! API calls (and the lines made on a program's thread: locations, resource events, NVTX ranges) are the hot
//! path: each thread pushes a fixed-size record (`record`) into a ring of its own, a single-producer
//! single-consumer queue (`rtrb`), without a lock, an allocation or any formatting; on its outermost call it
//! also says when that call began, so that the library's thread knows which calls are in flight. The library's
//! own thread drains every ring each [`PASS_MS`], turns the records into lines, passes them through the bounded
//! trace's filter (`async_lab_trace_format::bounded`; every line with `--all-records`) and writes them, with the
//! GPU records of the buffers CUPTI handed back (`activity`: read there too). The other lines (the setup, an
//! error, the end) go through the same filter from the thread that has them. Each thread met (its first ring,
//! a Python thread a location names) is named there (`names`: `Line::Thread`), and named again at the end where
//! its name changed. A
//! program's thread takes the writer's lock only where its ring is full (the library's thread fell behind: it
//! drains every ring itself, once) and where it writes after its ring is gone (a thread exiting).
//!
//! Memory stays bounded (a ring per thread, the filter's window), a program that crashes loses at most the
//! lines not yet drained ([`flush`] drains: the periodic flush, a signal handler, `_exit`, `exit`), and each
//! thread's lines reach the file in the order it made them.
//!
//! A signal handler flushes too ([`in_handler`]): there the writer's lock is only tried; held by another thread
//! (the library's, in the middle of a pass) it is waited for a little, held by this very thread (the handler
//! interrupted the writer) it is skipped rather than waited for.

use crate::names::Names;
use crate::record::{Name, Record};
use crate::switches::{self, Writer};
use async_lab_trace_format::bounded::{Config, Filter};
use async_lab_trace_format::{header, Domain, Line, Resource};
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, CStr};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Names the folder the trace files go to; set by `async-lab trace`.
pub const OUT_DIR_VAR: &str = "ASYNC_LAB_TRACE_DIR";

/// The file's buffer.
const BUFFER_BYTES: usize = 64 * 1024;
/// Records a thread's ring holds: at a launch every 2 µs (two records each), 16 ms of calls.
const RING: usize = 16 * 1024;
/// How often the library's thread drains the rings.
pub const PASS_MS: u64 = 2;
/// How often the flusher thread (`ending`) has CUPTI hand back its complete buffers and hands the lines to the
/// file: a program killed 0.3 s after a call keeps the call and its GPU records (a flush comes within any 0.2 s).
pub const FLUSH_MS: u64 = 200;

/// Whether the header is written (it is written once, first).
static HEADER: AtomicBool = AtomicBool::new(false);
/// The process that opened the trace: a child forked from it inherits the writer and its rings, and must not
/// write the parent's lines a second time.
static OPENED_BY: AtomicU32 = AtomicU32::new(0);
/// Nothing is recorded (`ASYNC_LAB_TRACE_WRITER=none`).
static OFF: AtomicBool = AtomicBool::new(false);
/// Nothing is recorded for now: the gate (`attach`) between its blocks.
static IDLE: AtomicBool = AtomicBool::new(false);

/// The file, the filter and every thread's ring, behind one lock.
static SINK: Mutex<Option<Sink>> = Mutex::new(None);
/// The thread holding [`SINK`] (its id + 1; 0: none), so that a handler never waits for its own thread.
static SINK_HOLDER: AtomicU64 = AtomicU64::new(0);
/// Rings of threads that made their first call since the last pass.
static NEW_RINGS: Mutex<Vec<Ring>> = Mutex::new(Vec::new());
/// CUPTI's buffers of GPU records, handed over, not yet read.
static BUFFERS: Mutex<Vec<Box<dyn Records>>> = Mutex::new(Vec::new());

/// A batch of GPU records handed to the library's thread and read into lines there (a buffer CUPTI handed
/// back): a trait, so that the writer names no module above it (`activity` implements it and calls the writer).
pub trait Records: Send {
    /// Its records as lines.
    fn lines(&self) -> Vec<Line>;
}

thread_local! {
    /// This thread is in a signal handler of the library: locks are only tried.
    static IN_HANDLER: Cell<bool> = const { Cell::new(false) };
    static LOCAL: Local = Local::new();
}

/// The consumer's end of one thread's ring.
struct Ring {
    tid: u64,
    rx: rtrb::Consumer<Record>,
    /// When the thread's outermost call in flight began (0: none).
    open: Arc<AtomicU64>,
}

/// A thread's own: its id, the producer's end of its ring.
struct Local {
    tid: u64,
    tx: RefCell<rtrb::Producer<Record>>,
    open: Arc<AtomicU64>,
}

impl Local {
    fn new() -> Local {
        let (tx, rx) = rtrb::RingBuffer::new(RING);
        let open = Arc::new(AtomicU64::new(0));
        let tid = gettid();
        relock(&NEW_RINGS).push(Ring { tid, rx, open: Arc::clone(&open) });
        Local { tid, tx: RefCell::new(tx), open }
    }
}

impl Drop for Local {
    /// A thread that exits is in no call; what its ring holds is drained on the next pass, and the ring goes.
    fn drop(&mut self) {
        self.open.store(0, Ordering::Release);
    }
}

/// What becomes of the lines.
enum Shape {
    /// The bounded trace.
    Bounded(Box<Filter>),
    /// Every line (`--all-records`).
    All,
    /// Lines made, not written (for measuring).
    Unwritten,
}

/// The writer's state.
struct Sink {
    out: Option<BufWriter<File>>,
    rings: Vec<Ring>,
    shape: Shape,
    /// Lines decided, to write.
    lines: Vec<Line>,
    /// Bytes made, to write.
    bytes: Vec<u8>,
    /// The threads named so far (`Line::Thread`).
    names: Names,
}

impl Sink {
    fn new(file: File, writer: Writer) -> Sink {
        let shape = match writer {
            Writer::On { all: true, .. } => Shape::All,
            Writer::On { all: false, keep_over_ns } => {
                Shape::Bounded(Box::new(Filter::new(Config::with_threshold(keep_over_ns))))
            }
            Writer::Unwritten | Writer::Off => Shape::Unwritten,
        };
        Sink {
            out: Some(BufWriter::with_capacity(BUFFER_BYTES, file)),
            rings: Vec::new(),
            shape,
            lines: Vec::new(),
            bytes: Vec::with_capacity(BUFFER_BYTES),
            names: Names::default(),
        }
    }

    /// Names thread `tid` where it is met for the first time.
    fn name(&mut self, tid: u64) {
        if let Some(line) = self.names.first(tid) {
            self.feed(line, None);
        }
    }

    /// One line, as it comes (`outermost`: for an API call, whether it is a call of its own).
    fn feed(&mut self, line: Line, outermost: Option<bool>) {
        match &mut self.shape {
            Shape::Bounded(filter) => {
                let setup = matches!(line, Line::Setup { .. });
                filter.push(line, outermost, &mut self.lines);
                if setup {
                    filter.start(&mut self.lines);
                }
            }
            Shape::All | Shape::Unwritten => self.lines.push(line),
        }
    }

    /// One record of thread `tid`'s ring.
    fn record(&mut self, tid: u64, record: Record) {
        match (&self.shape, record) {
            // Every call's line, made straight from its record.
            (Shape::All | Shape::Unwritten, Record::Api { domain, name, cbid, corr, start, end, .. }) => {
                api_line(&mut self.bytes, domain, name.as_cstr(), cbid, tid, corr, start, end)
            }
            (_, record) => {
                let (line, outermost) = record.line(tid);
                if let Line::Location { others, .. } = &line {
                    for other in others.clone() {
                        self.name(other.tid);
                    }
                }
                self.feed(line, outermost);
            }
        }
    }

    /// Drains every ring, then writes what was decided.
    fn pass(&mut self) {
        // A thread's first ring: it is named (outside the lock its program's threads take for a new ring).
        let fresh = std::mem::take(&mut *relock(&NEW_RINGS));
        for ring in &fresh {
            self.name(ring.tid);
        }
        self.rings.extend(fresh);
        // The calls in flight, read before the rings: a call that returns meanwhile is drained too.
        let open: Vec<(u64, u64)> = self
            .rings
            .iter()
            .filter_map(|r| {
                let s = r.open.load(Ordering::Acquire);
                (s != 0).then_some((r.tid, s))
            })
            .collect();
        let mut rings = std::mem::take(&mut self.rings);
        for ring in &mut rings {
            while let Ok(record) = ring.rx.pop() {
                self.record(ring.tid, record);
            }
        }
        rings.retain(|r| !(r.rx.is_abandoned() && r.rx.is_empty()));
        rings.append(&mut self.rings);
        self.rings = rings;
        let buffers = std::mem::take(&mut *relock(&BUFFERS));
        for buffer in buffers {
            for line in buffer.lines() {
                self.feed(line, None);
            }
        }
        if let Shape::Bounded(filter) = &mut self.shape {
            filter.open(&open, &mut self.lines);
        }
        self.emit();
    }

    /// Writes the lines decided and the bytes made to the file's buffer.
    fn emit(&mut self) {
        for l in self.lines.drain(..) {
            match l {
                Line::Api { domain, ref name, cbid, tid, corr, start, end } => {
                    let name = std::ffi::CString::new(name.as_bytes()).unwrap_or_default();
                    api_line(&mut self.bytes, domain, &name, cbid, tid, corr, start, end);
                }
                other => {
                    // Writing to a Vec cannot fail.
                    let _ = serde_json::to_writer(&mut self.bytes, &other);
                    self.bytes.push(b'\n');
                }
            }
        }
        if matches!(self.shape, Shape::Unwritten) {
            self.bytes.clear();
            return;
        }
        if let Some(out) = self.out.as_mut() {
            if out.write_all(&self.bytes).is_err() {
                // A full disk or a closed file: the trace ends there (at worst with half a line), the program goes on.
                self.out = None;
            }
        }
        self.bytes.clear();
    }

    /// The file's buffer to the file.
    fn write_out(&mut self) {
        if let Some(out) = self.out.as_mut() {
            if out.flush().is_err() {
                self.out = None;
            }
        }
    }
}

/// [`SINK`], held; says who holds it while it does.
struct Held<'a>(MutexGuard<'a, Option<Sink>>);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        SINK_HOLDER.store(0, Ordering::Release);
    }
}

fn gettid() -> u64 {
    // SAFETY: gettid has no preconditions.
    (unsafe { libc::gettid() }) as u64
}

/// A lock, whether or not a thread panicked while holding it.
fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The writer, where it can be had: waited for, except in a signal handler, where it is tried, waited for a
/// little (up to 100 ms) while another thread holds it, and given up where this thread does.
fn take() -> Option<Held<'static>> {
    let me = gettid() + 1;
    if !IN_HANDLER.with(Cell::get) {
        let held = Held(relock(&SINK));
        SINK_HOLDER.store(me, Ordering::Release);
        return Some(held);
    }
    for _ in 0..1000 {
        match SINK.try_lock() {
            Ok(g) => {
                SINK_HOLDER.store(me, Ordering::Release);
                return Some(Held(g));
            }
            Err(std::sync::TryLockError::Poisoned(e)) => {
                SINK_HOLDER.store(me, Ordering::Release);
                return Some(Held(e.into_inner()));
            }
            Err(std::sync::TryLockError::WouldBlock) if SINK_HOLDER.load(Ordering::Acquire) == me => return None,
            Err(std::sync::TryLockError::WouldBlock) => std::thread::sleep(std::time::Duration::from_micros(100)),
        }
    }
    None
}

/// Runs `f` as a signal handler's part: the writer's lock is only tried meanwhile.
pub fn in_handler(f: impl FnOnce()) {
    let was = IN_HANDLER.with(|h| h.replace(true));
    f();
    IN_HANDLER.with(|h| h.set(was));
}

/// Whether this process opened the trace (not a child forked from it).
pub fn ours() -> bool {
    let opened = OPENED_BY.load(Ordering::Relaxed);
    opened != 0 && opened == std::process::id()
}

/// Opens this process's trace file as the environment says; `false` (and no tracing) where the variable is
/// unset or the file cannot be made.
pub fn open() -> bool {
    let Some(dir) = std::env::var_os(OUT_DIR_VAR) else { return false };
    let path = std::path::Path::new(&dir).join(format!("{}.jsonl", std::process::id()));
    open_at(&path, switches::writer()).is_ok()
}

/// Opens the trace at `path`, its lines handled as `writer` says, in place of any open one (the threads' rings
/// go on into the new one), and starts the library's thread.
pub fn open_at(path: &std::path::Path, writer: Writer) -> std::io::Result<()> {
    let file = File::create(path)?;
    OFF.store(writer == Writer::Off, Ordering::Relaxed);
    {
        let mut sink = relock(&SINK);
        let rings = sink.take().map(|s| s.rings).unwrap_or_default();
        let mut fresh = Sink::new(file, writer);
        fresh.rings = rings;
        *sink = Some(fresh);
    }
    let first = OPENED_BY.swap(std::process::id(), Ordering::Relaxed) == 0;
    if first {
        let _ = std::thread::Builder::new().name("async-lab-drain".into()).spawn(|| loop {
            std::thread::sleep(std::time::Duration::from_millis(PASS_MS));
            if !ours() {
                return;
            }
            if let Some(mut held) = take() {
                if let Some(sink) = held.0.as_mut() {
                    sink.pass();
                }
            }
        });
    }
    Ok(())
}

/// Opens the trace at `path` with every line written (the gate's own file, `attach`, which reads it back), in
/// place of any open one.
pub fn open_whole(path: &std::path::Path) -> std::io::Result<()> {
    open_at(path, Writer::On { all: true, keep_over_ns: switches::KEEP_OVER_DEFAULT_NS })
}

/// The header: this process, its command line, CUPTI's version; only the first call writes it.
pub fn write_header(cupti_version: Option<u32>) {
    if HEADER.swap(true, Ordering::SeqCst) {
        return;
    }
    let program: Vec<String> = std::fs::read("/proc/self/cmdline")
        .map(|b| {
            b.split(|&c| c == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect()
        })
        .unwrap_or_default();
    // The program's file name only: where it was on the measuring machine says nothing about the trace.
    let program = program
        .iter()
        .enumerate()
        .map(|(i, a)| if i == 0 { a.rsplit('/').next().unwrap_or(a).to_owned() } else { a.clone() })
        .collect();
    let Some(mut held) = take() else { return };
    if let Some(sink) = held.0.as_mut() {
        // Straight to the file, first, whatever the shape.
        sink.lines.push(header(std::process::id(), program, cupti_version));
        sink.emit();
    }
}

/// One line, from the thread that has it (GPU records, the setup, an error, the end).
pub fn write(line: &Line) {
    write_all(std::iter::once(line));
}

/// Lines, from the thread that has them, under one lock.
pub fn write_all<'a>(lines: impl Iterator<Item = &'a Line>) {
    let Some(mut held) = take() else { return };
    let Some(sink) = held.0.as_mut() else { return };
    for line in lines {
        // The end of the process comes after every thread's lines.
        if matches!(line, Line::End { .. } | Line::Signal { .. }) {
            sink.pass();
            for renamed in sink.names.renamed() {
                sink.feed(renamed, None);
            }
        }
        sink.feed(line.clone(), None);
    }
    sink.emit();
}

/// Drains every thread's ring and writes everything out to the file.
pub fn flush() {
    let Some(mut held) = take() else { return };
    if let Some(sink) = held.0.as_mut() {
        sink.pass();
        sink.write_out();
    }
}

/// Hands a record to the library's thread: into this thread's ring, or where that cannot be, to the writer.
fn push(record: Record) {
    if OFF.load(Ordering::Relaxed) || IDLE.load(Ordering::Relaxed) {
        return;
    }
    let mut record = Some(record);
    let left = LOCAL.try_with(|local| {
        let r = record.take()?;
        match local.tx.try_borrow_mut() {
            Ok(mut tx) => match tx.push(r) {
                Ok(()) => None,
                Err(rtrb::PushError::Full(r)) => Some((local.tid, r)),
            },
            Err(_) => Some((local.tid, r)),
        }
    });
    match left {
        Ok(None) => {}
        Ok(Some((tid, r))) => direct(tid, Some(r)),
        // The thread is exiting and its ring is gone.
        Err(_) => direct(gettid(), record.take()),
    }
}

/// The writer takes `record` itself, after every ring is drained (so this thread's earlier records come first).
fn direct(tid: u64, record: Option<Record>) {
    if !ours() {
        return;
    }
    let Some(mut held) = take() else { return };
    let Some(sink) = held.0.as_mut() else { return };
    sink.pass();
    if let Some(record) = record {
        sink.record(tid, record);
        sink.emit();
    }
}

/// A buffer of GPU records CUPTI is done with, to read on the next pass (from CUPTI's callback, on whatever
/// thread CUPTI calls it: nothing is read or formatted there).
pub fn completed(buffer: Box<dyn Records>) {
    if !ours() {
        return;
    }
    // In a handler that interrupted this very thread's pass the lock is not waited for: the buffer is lost.
    if IN_HANDLER.with(Cell::get) {
        if let Ok(mut b) = BUFFERS.try_lock() {
            b.push(buffer);
        }
    } else {
        relock(&BUFFERS).push(buffer);
    }
}

/// Appends the line of one API call, on the calling thread. The hot path: one record into this thread's ring.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn api(domain: Domain, name: *const c_char, cbid: u32, corr: u32, start: u64, end: u64, outermost: bool) {
    push(Record::Api { domain, name: Name(name), cbid, corr, start, end, outermost });
}

/// Whether the threads' lines are dropped for now ([`set_idle`]).
#[inline]
pub fn idle() -> bool {
    IDLE.load(Ordering::Relaxed)
}

/// Drops the threads' lines from now on (`true`: the gate has no block open), or records them again.
pub fn set_idle(idle: bool) {
    IDLE.store(idle, Ordering::Relaxed);
}

/// This thread's outermost call began at `start` (0: it returned).
#[inline]
pub fn in_call(start: u64) {
    let _ = LOCAL.try_with(|l| l.open.store(start, Ordering::Release));
}

/// Appends a resource event, on the thread that caused it.
pub fn resource(event: Resource, t: u64) {
    push(Record::Line(Box::new(Line::Resource { event, t, tid: tid() })));
}

/// Appends any line after the calling thread's calls so far (a call's location right after the call); `tid` is
/// filled in by the caller with [`tid`].
pub fn append(l: &Line, _t: u64) {
    push(Record::Line(Box::new(l.clone())));
}

/// Appends a call's location as taken on the calling thread, after its calls so far: its line is made on the
/// library's thread.
pub fn located(taken: Box<crate::location::Taken>) {
    push(Record::Location(taken));
}

/// The calling thread's id, as its lines give it.
pub fn tid() -> u64 {
    LOCAL.try_with(|l| l.tid).unwrap_or_else(|_| gettid())
}

/// The JSON line of one call, byte for byte what `serde_json` writes for the same [`Line::Api`] (its name
/// read as `to_string_lossy` reads it), without building one: no allocation but the buffer's.
#[allow(clippy::too_many_arguments)]
fn api_line(b: &mut Vec<u8>, domain: Domain, name: &CStr, cbid: u32, tid: u64, corr: u32, start: u64, end: u64) {
    let mut n = itoa::Buffer::new();
    b.extend_from_slice(match domain {
        Domain::Runtime => br#"{"type":"api","domain":"runtime","name":"#,
        Domain::Driver => br#"{"type":"api","domain":"driver","name":"#,
    });
    let raw = name.to_bytes();
    // API names are plain ASCII, written as they are; anything else as serde_json escapes it.
    if raw.iter().all(|&c| (0x20..0x7f).contains(&c) && c != b'"' && c != b'\\') {
        b.push(b'"');
        b.extend_from_slice(raw);
        b.push(b'"');
    } else {
        let _ = serde_json::to_writer(&mut *b, &*name.to_string_lossy());
    }
    b.extend_from_slice(br#","cbid":"#);
    b.extend_from_slice(n.format(cbid).as_bytes());
    b.extend_from_slice(br#","tid":"#);
    b.extend_from_slice(n.format(tid).as_bytes());
    b.extend_from_slice(br#","corr":"#);
    b.extend_from_slice(n.format(corr).as_bytes());
    b.extend_from_slice(br#","start":"#);
    b.extend_from_slice(n.format(start).as_bytes());
    b.extend_from_slice(br#","end":"#);
    b.extend_from_slice(n.format(end).as_bytes());
    b.extend_from_slice(b"}\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_lab_trace_format::Trace;

    fn serde_line(line: &Line) -> Vec<u8> {
        let mut v = serde_json::to_vec(line).unwrap();
        v.push(b'\n');
        v
    }

    #[test]
    fn an_api_line_is_byte_for_byte_what_serde_json_writes_for_line_api() {
        let names: [&CStr; 7] = [
            c"cudaMemcpyAsync",
            c"",
            c"quote\"back\\slash",
            c"tab\tnewline\ncontrol\x01\x7f",
            c"caf\xc3\xa9 \xe2\x86\x92",
            // Not UTF-8: read as `to_string_lossy` reads it.
            c"bad\xff\xfebytes",
            c"cuLaunchKernel_ptsz",
        ];
        for name in names {
            for domain in [Domain::Runtime, Domain::Driver] {
                for (cbid, tid, corr, start, end) in
                    [(0, 0, 0, 0, 0), (41, 7, 3, 10, 20), (u32::MAX, u64::MAX, u32::MAX, u64::MAX, u64::MAX)]
                {
                    let mut ours = Vec::new();
                    api_line(&mut ours, domain, name, cbid, tid, corr, start, end);
                    let name = name.to_string_lossy().into_owned();
                    let want = serde_line(&Line::Api { domain, name, cbid, tid, corr, start, end });
                    assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&want));
                    assert_eq!(ours, want);
                }
            }
        }
    }

    /// Every line written, as `--all-records` writes them.
    const ALL: Writer = Writer::On { all: true, keep_over_ns: 20_000 };

    /// What the writer writes from several threads (some that exit, one still running at the flush, the
    /// flushing one) reads back as exactly those lines.
    /// The writer is one per process: its tests take turns.
    static TURN: Mutex<()> = Mutex::new(());

    /// A flush in a signal handler that interrupted the writer itself (this thread holding the file's lock)
    /// returns at once, writing nothing; the next flush writes every line, in order, ending each with its
    /// newline: a reader finds whole lines only.
    #[test]
    fn a_flush_in_a_handler_never_waits_for_its_own_thread() {
        let _turn = relock(&TURN);
        let path = std::env::temp_dir().join(format!("async-lab-inject-flush-{}.jsonl", std::process::id()));
        open_at(&path, ALL).unwrap();
        HEADER.store(false, Ordering::SeqCst);
        write_header(None);
        let name = c"cudaStreamSynchronize";
        for i in 0..10u32 {
            api(Domain::Runtime, name.as_ptr(), 131, i, u64::from(i) * 10, u64::from(i) * 10 + 5, true);
        }
        let held = take();
        in_handler(flush);
        drop(held);
        // Nothing reached the file while the lock was held (the header waits in the shared buffer).
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
        in_handler(flush);
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert!(text.ends_with('\n'));
        let trace = Trace::parse(&text).unwrap();
        let corrs: Vec<u32> = trace.processes[0]
            .lines
            .iter()
            .filter_map(|l| if let Line::Api { corr, .. } = l { Some(*corr) } else { None })
            .collect();
        assert_eq!(corrs, (0..10).collect::<Vec<_>>());
        assert!(trace.partial());
    }

    #[test]
    fn lines_of_many_threads_read_back_as_written() {
        let _turn = relock(&TURN);
        let path = std::env::temp_dir().join(format!("async-lab-inject-writer-{}.jsonl", std::process::id()));
        open_at(&path, ALL).unwrap();
        HEADER.store(false, Ordering::SeqCst);
        write_header(Some(130001));
        let mut want: Vec<Line> = Vec::new();
        // Correlation ids rise across threads too: a thread that exited may hand its id on to a later one.
        let calls = |tid: u64, base: u64, n: u64| -> Vec<Line> {
            (0..n)
                .map(|i| Line::Api {
                    domain: if i % 2 == 0 { Domain::Runtime } else { Domain::Driver },
                    name: format!("cuCall{}", i % 5),
                    cbid: (i % 300) as u32,
                    tid,
                    corr: (base + i) as u32,
                    // Calls 1 ms apart: the time rule sends the lines now and then as well as when full.
                    start: 1_000_000 * i,
                    end: 1_000_000 * i + 500,
                })
                .collect()
        };
        let emit = |lines: &[Line]| {
            for l in lines {
                let Line::Api { domain, name, cbid, corr, start, end, .. } = l else { unreachable!() };
                // Names live as long as the trace, as CUPTI's do.
                let name: &'static CStr = Box::leak(std::ffi::CString::new(name.as_str()).unwrap().into_boxed_c_str());
                api(*domain, name.as_ptr(), *cbid, *corr, *start, *end, true);
            }
        };
        // Threads that exit: their buffers go out as they do.
        let exited: Vec<Vec<Line>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..3)
                .map(|k| {
                    s.spawn(move || {
                        let lines = calls(gettid(), 100_000 * k, 2_000 + 500 * k);
                        emit(&lines);
                        resource(Resource::ModuleLoaded, 42);
                        let mut lines = lines;
                        lines.push(Line::Resource { event: Resource::ModuleLoaded, t: 42, tid: gettid() });
                        lines
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        want.extend(exited.into_iter().flatten());
        // A thread still running at the flush, and this one.
        let (wrote_tx, wrote_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let running = std::thread::spawn(move || {
            let lines = calls(gettid(), 1_000_000, 10);
            emit(&lines);
            wrote_tx.send(lines).unwrap();
            done_rx.recv().unwrap();
        });
        want.extend(wrote_rx.recv().unwrap());
        let mine = calls(gettid(), 2_000_000, 7);
        emit(&mine);
        want.extend(mine);
        flush();
        let text = std::fs::read_to_string(&path).unwrap();
        done_tx.send(()).unwrap();
        running.join().unwrap();
        let _ = std::fs::remove_file(&path);

        let trace = Trace::parse(&text).unwrap();
        assert_eq!(trace.processes.len(), 1);
        assert_eq!(trace.processes[0].cupti_version, Some(130001));
        let key = |l: &Line| serde_json::to_string(l).unwrap();
        // The threads' names besides (those still running at the flush are named for certain).
        let named: Vec<u64> = trace.processes[0]
            .lines
            .iter()
            .filter_map(|l| if let Line::Thread { tid, .. } = l { Some(*tid) } else { None })
            .collect();
        assert!(named.contains(&gettid()), "{named:?}");
        let mut got: Vec<String> =
            trace.processes[0].lines.iter().filter(|l| !matches!(l, Line::Thread { .. })).map(key).collect();
        let mut want: Vec<String> = want.iter().map(key).collect();
        got.sort();
        want.sort();
        assert_eq!(got.len(), want.len());
        assert_eq!(got, want);
        // Each thread's lines keep the order that thread wrote them in.
        let tids: std::collections::BTreeSet<u64> = trace.processes[0]
            .lines
            .iter()
            .filter_map(|l| if let Line::Api { tid, .. } = l { Some(*tid) } else { None })
            .collect();
        for tid in tids {
            let corrs: Vec<u32> = trace.processes[0]
                .lines
                .iter()
                .filter_map(|l| match l {
                    Line::Api { tid: t, corr, .. } if *t == tid => Some(*corr),
                    _ => None,
                })
                .collect();
            assert!(corrs.windows(2).all(|w| w[0] < w[1]), "thread {tid} out of order");
        }
    }

    /// A thread is named (by the system's name) when its first calls are drained, in the bounded trace too, and
    /// again at the end with the name it took since.
    #[test]
    fn the_threads_met_are_named_in_the_bounded_trace() {
        let _turn = relock(&TURN);
        let path = std::env::temp_dir().join(format!("async-lab-inject-names-{}.jsonl", std::process::id()));
        open_at(&path, Writer::On { all: false, keep_over_ns: 20_000 }).unwrap();
        HEADER.store(false, Ordering::SeqCst);
        write_header(None);
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("xla-worker".into())
            .spawn(move || {
                api(Domain::Runtime, c"cudaStreamSynchronize".as_ptr(), 131, 1, 1_000, 3_000_000, true);
                tid_tx.send(gettid()).unwrap();
                go_rx.recv().unwrap();
                // SAFETY: a NUL-terminated name of 15 bytes or fewer, for this very thread.
                unsafe { libc::pthread_setname_np(libc::pthread_self(), c"pt_autograd_0".as_ptr()) };
                done_tx.send(()).unwrap();
                // Alive at the end, to be named again.
                go_rx.recv().ok();
            })
            .unwrap();
        let tid = tid_rx.recv().unwrap();
        flush();
        go_tx.send(()).unwrap();
        done_rx.recv().unwrap();
        write(&Line::End { t: 10_000_000 });
        flush();
        drop(go_tx);
        worker.join().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let trace = Trace::parse(&text).unwrap();
        let names: Vec<&str> = trace.processes[0]
            .lines
            .iter()
            .filter_map(|l| match l {
                Line::Thread { tid: t, name } if *t == tid => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(names, ["xla-worker", "pt_autograd_0"], "{text}");
    }

    /// By default the trace is bounded: of a thread's 10,000 short calls and one held call after start-up, the
    /// file holds the held call and the counts of the others, decided on the library's thread.
    #[test]
    fn the_default_trace_holds_the_held_call_and_counts_the_rest() {
        let _turn = relock(&TURN);
        let path = std::env::temp_dir().join(format!("async-lab-inject-bounded-{}.jsonl", std::process::id()));
        open_at(&path, Writer::On { all: false, keep_over_ns: 20_000 }).unwrap();
        HEADER.store(false, Ordering::SeqCst);
        write_header(None);
        let name = c"cudaLaunchKernel";
        let t0 = 1_000_000_000u64;
        // A GPU record has come: start-up is over (before one, every call is kept).
        write(&Line::Kernel { name: "k".into(), start: 10, end: 20, stream: 7, corr: 0 });
        std::thread::spawn(move || {
            for i in 0..10_000u32 {
                let start = t0 + u64::from(i) * 10_000;
                // The 5,000th call held its thread 2 ms.
                let end = start + if i == 5_000 { 2_000_000 } else { 4_000 };
                api(Domain::Runtime, name.as_ptr(), 211, i + 1, start, end, true);
            }
        })
        .join()
        .unwrap();
        write(&Line::End { t: t0 + 200_000_000 });
        flush();
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let trace = Trace::parse(&text).unwrap();
        let lines = &trace.processes[0].lines;
        let calls: Vec<u32> =
            lines.iter().filter_map(|l| if let Line::Api { corr, .. } = l { Some(*corr) } else { None }).collect();
        assert_eq!(calls.len(), 1, "{} calls written", calls.len());
        assert_eq!(calls, [5_001]);
        let Some(Line::Counts { calls, keep_over_ns }) = lines.iter().rev().find(|l| matches!(l, Line::Counts { .. }))
        else {
            panic!("no counts line: {text}");
        };
        assert_eq!(*keep_over_ns, 20_000);
        assert_eq!(calls.len(), 1);
        assert_eq!(
            (calls[0].name.as_str(), calls[0].calls, calls[0].total_ns),
            ("cudaLaunchKernel", 9_999, 9_999 * 4_000)
        );
        assert!(!trace.partial());
    }
}
