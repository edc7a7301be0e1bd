//! The trace file of this process: `<folder>/<pid>.jsonl`, the folder named by [`OUT_DIR_VAR`].
//!
//! API calls (and resource events) are the hot path: each thread appends its lines to a buffer of its own,
//! formatted without allocating, so threads that call CUDA at once do not wait on each other. A thread's
//! buffer goes to the file, whole lines at once under the file's lock, when it is full, when the thread's
//! calls have gone on [`FLUSH_EVERY`] since it last went, when the thread exits, and at every [`flush`]
//! (after each batch of GPU records, which CUPTI hands over at least every second while there are any, and
//! at exit). The other lines (the header, GPU records, errors, the end) go through one buffered writer
//! behind the same lock. Memory stays bounded (one buffer per thread), a program that crashes loses at most
//! the lines not yet handed over, and lines of different threads interleave in the file by whole buffers
//! (each thread's in the order it wrote them): the reader orders calls by thread and time, never by their
//! place in the file.
//!
//! A signal handler flushes too ([`in_handler`]): there every lock is only tried, so a handler that
//! interrupted this very writer skips what it cannot take rather than wait for itself.

use async_lab_core::trace::format::{header, Domain, Line, Resource};
use std::cell::Cell;
use std::ffi::CStr;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Names the folder the trace files go to; set by `async-lab trace`.
pub const OUT_DIR_VAR: &str = "ASYNC_LAB_TRACE_DIR";

/// The shared writer's buffer, and the size at which a thread's buffer goes to the file.
const BUFFER_BYTES: usize = 64 * 1024;

static OUT: Mutex<Option<BufWriter<File>>> = Mutex::new(None);
/// How often a thread's lines go out to the file while its calls go on, in ns of the trace's clock.
const FLUSH_EVERY: u64 = 200_000_000;
/// Whether the header is written (it is written once, first).
static HEADER: AtomicBool = AtomicBool::new(false);
/// Every live thread's buffer, so that [`flush`] reaches the lines of threads that are not calling.
static THREADS: Mutex<Vec<Arc<Mutex<Pending>>>> = Mutex::new(Vec::new());
/// The process that opened the trace: a child forked from it inherits the writer and its buffers, and must
/// not write the parent's lines a second time.
static OPENED_BY: AtomicU32 = AtomicU32::new(0);

thread_local! {
    /// This thread is in a signal handler of the library: locks are only tried.
    static IN_HANDLER: Cell<bool> = const { Cell::new(false) };
}

/// One thread's lines not yet in the file.
struct Pending {
    bytes: Vec<u8>,
    /// The end of the call at which they last went out (the trace's clock).
    sent_at: u64,
}

/// A thread's own: its id and its buffer (also in [`THREADS`]).
struct Local {
    tid: u64,
    pending: Arc<Mutex<Pending>>,
}

impl Local {
    fn new() -> Local {
        // Room for a full buffer and the line that filled it, so that the buffer never grows in the common case.
        let pending = Arc::new(Mutex::new(Pending { bytes: Vec::with_capacity(BUFFER_BYTES + 1024), sent_at: 0 }));
        relock(&THREADS).push(Arc::clone(&pending));
        Local { tid: gettid(), pending }
    }
}

impl Drop for Local {
    /// A thread that exits hands over what it holds and leaves [`THREADS`].
    fn drop(&mut self) {
        send(&mut relock(&self.pending).bytes, false);
        relock(&THREADS).retain(|p| !Arc::ptr_eq(p, &self.pending));
    }
}

thread_local! {
    static LOCAL: Local = Local::new();
}

fn gettid() -> u64 {
    // SAFETY: gettid has no preconditions.
    (unsafe { libc::gettid() }) as u64
}

/// A lock, whether or not a thread panicked while holding it: at worst that left a half line in a buffer,
/// which the reader drops (a last line) or reports.
fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The lock where it can be had: waited for, except in a signal handler, where it is only tried (the
/// interrupted code of this same thread may hold it).
fn take<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    if IN_HANDLER.with(Cell::get) {
        match m.try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    } else {
        Some(relock(m))
    }
}

/// Runs `f` as a signal handler's part: every lock the writer takes meanwhile is only tried.
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

/// Opens this process's trace file; `false` (and no tracing) where the variable is unset or the file cannot
/// be made.
pub fn open() -> bool {
    let Some(dir) = std::env::var_os(OUT_DIR_VAR) else { return false };
    let path = std::path::Path::new(&dir).join(format!("{}.jsonl", std::process::id()));
    let Ok(file) = File::create(&path) else { return false };
    *relock(&OUT) = Some(BufWriter::with_capacity(BUFFER_BYTES, file));
    OPENED_BY.store(std::process::id(), Ordering::Relaxed);
    true
}

/// Opens the trace at `path` (for the tests and the benchmark).
pub fn open_at(path: &std::path::Path) -> std::io::Result<()> {
    *relock(&OUT) = Some(BufWriter::with_capacity(BUFFER_BYTES, File::create(path)?));
    OPENED_BY.store(std::process::id(), Ordering::Relaxed);
    Ok(())
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
    write(&header(std::process::id(), program, cupti_version));
}

/// Appends one line to the shared writer.
pub fn write(line: &Line) {
    write_all(std::iter::once(line));
}

/// Appends lines to the shared writer under one lock.
pub fn write_all<'a>(lines: impl Iterator<Item = &'a Line>) {
    let Some(mut guard) = take(&OUT) else { return };
    let Some(out) = guard.as_mut() else { return };
    let mut ok = true;
    for line in lines {
        ok = serde_json::to_writer(&mut *out, line).is_ok() && out.write_all(b"\n").is_ok();
        if !ok {
            break;
        }
    }
    if !ok {
        // A full disk or a closed file: the trace ends there (at worst with half a line), the program goes on.
        *guard = None;
    }
}

/// Writes every thread's lines and the shared buffer out to the file.
pub fn flush() {
    if let Some(threads) = take(&THREADS) {
        for pending in threads.iter() {
            if let Some(mut p) = take(pending) {
                send(&mut p.bytes, false);
            }
        }
    }
    let Some(mut guard) = take(&OUT) else { return };
    if let Some(out) = guard.as_mut() {
        if out.flush().is_err() {
            *guard = None;
        }
    }
}

/// Hands `bytes` (whole lines) to the file and empties it; with `to_disk`, the shared buffer goes out too.
fn send(bytes: &mut Vec<u8>, to_disk: bool) {
    if bytes.is_empty() && !to_disk {
        return;
    }
    let Some(mut guard) = take(&OUT) else { return };
    if let Some(out) = guard.as_mut() {
        // A buffer as large as the writer's goes straight to the file; write_all writes it whole or fails.
        if out.write_all(bytes).is_err() || (to_disk && out.flush().is_err()) {
            *guard = None;
        }
    }
    bytes.clear();
}

/// Appends the line of one API call, on the calling thread. The hot path: nothing allocated, no lock that
/// another thread takes except while this thread's lines go to the file.
pub fn api(domain: Domain, name: &CStr, cbid: u32, corr: u32, start: u64, end: u64) {
    let done = LOCAL.try_with(|local| {
        let mut pending = relock(&local.pending);
        api_line(&mut pending.bytes, domain, name, cbid, local.tid, corr, start, end);
        after_append(&mut pending, end);
    });
    if done.is_err() {
        // The thread is exiting and its buffer is gone: the line goes to the file on its own.
        let mut bytes = Vec::new();
        api_line(&mut bytes, domain, name, cbid, gettid(), corr, start, end);
        send(&mut bytes, false);
    }
}

/// Appends a resource event, on the thread that caused it.
pub fn resource(event: Resource, t: u64) {
    let done = LOCAL.try_with(|local| {
        let mut pending = relock(&local.pending);
        line(&mut pending.bytes, &Line::Resource { event, t, tid: local.tid });
        after_append(&mut pending, t);
    });
    if done.is_err() {
        let mut bytes = Vec::new();
        line(&mut bytes, &Line::Resource { event, t, tid: gettid() });
        send(&mut bytes, false);
    }
}

/// Appends any line to the calling thread's buffer, after the lines of its calls so far (a call's
/// location right after the call); `tid` is filled in by the caller with [`tid`].
pub fn append(l: &Line, t: u64) {
    let done = LOCAL.try_with(|local| {
        let mut pending = relock(&local.pending);
        line(&mut pending.bytes, l);
        after_append(&mut pending, t);
    });
    if done.is_err() {
        let mut bytes = Vec::new();
        line(&mut bytes, l);
        send(&mut bytes, false);
    }
}

/// The calling thread's id, as its lines give it.
pub fn tid() -> u64 {
    LOCAL.try_with(|l| l.tid).unwrap_or_else(|_| gettid())
}

/// A full buffer goes to the file; so does one whose thread's calls went on [`FLUSH_EVERY`] since it last
/// went, and then to disk: a program killed without running its exit handlers loses no more than that.
fn after_append(pending: &mut Pending, now: u64) {
    if now > pending.sent_at.saturating_add(FLUSH_EVERY) {
        pending.sent_at = now;
        send(&mut pending.bytes, true);
    } else if pending.bytes.len() >= BUFFER_BYTES {
        send(&mut pending.bytes, false);
    }
}

fn line(bytes: &mut Vec<u8>, line: &Line) {
    // Writing to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *bytes, line);
    bytes.push(b'\n');
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
    use async_lab_core::trace::format::Trace;

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
        open_at(&path).unwrap();
        HEADER.store(false, Ordering::SeqCst);
        write_header(None);
        let name = c"cudaStreamSynchronize";
        for i in 0..10u32 {
            api(Domain::Runtime, name, 131, i, u64::from(i) * 10, u64::from(i) * 10 + 5);
        }
        let held = relock(&OUT);
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
        open_at(&path).unwrap();
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
                let name = std::ffi::CString::new(name.as_str()).unwrap();
                api(*domain, &name, *cbid, *corr, *start, *end);
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
        let mut got: Vec<String> = trace.processes[0].lines.iter().map(key).collect();
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
}
