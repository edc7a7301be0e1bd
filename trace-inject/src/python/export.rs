//! The frame reader through a C ABI, for its test and its measurement: `tests/python/frames_ctypes.py` loads
//! the library into a Python process with `ctypes` (which releases the GIL around a foreign call, as
//! PyTorch does around its CUDA calls) and compares what the reader returns with what Python says of
//! itself. Every function writes JSON into the caller's buffer.

use super::{code, memory, Frames, Others};
use async_lab_trace_format::Gil;
use serde_json::{json, Value};
use std::time::Instant;

/// Writes `{"gil", "python": [{file, line, function}], "setup": {version, reader, note}}` for the calling
/// thread, every frame to the bounds, into `buf`; returns the bytes written, or minus the bytes needed where
/// `len` is too few, or -1 on a failure.
///
/// # Safety
/// `buf` is writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn async_lab_python_frames(buf: *mut u8, len: usize) -> isize {
    let text = std::panic::catch_unwind(|| {
        let (gil, python) = super::frames();
        json!({ "gil": gil, "python": python, "setup": super::setup() }).to_string()
    });
    // SAFETY: the caller's promise.
    text.map_or(-1, |t| unsafe { put(&t, buf, len) })
}

/// Writes the location a call returning on the calling thread gets, native frames left out (`location::here`,
/// its line made as the library's thread makes it): the `location` line as JSON (`null` where it has no
/// frame). Returns as [`async_lab_python_frames`] does.
///
/// # Safety
/// `buf` is writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn async_lab_python_location(buf: *mut u8, len: usize) -> isize {
    let text = std::panic::catch_unwind(location);
    // SAFETY: the caller's promise.
    text.map_or(-1, |t| unsafe { put(&t, buf, len) })
}

/// Writes, as [`async_lab_python_location`] does, the location a call returning on a thread that runs no
/// Python gets (from a thread started for it): every Python thread's frames (the caller's among them), each
/// to its program's own frame, as its `others`.
///
/// # Safety
/// `buf` is writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn async_lab_python_others(buf: *mut u8, len: usize) -> isize {
    let text = std::panic::catch_unwind(|| std::thread::spawn(location).join().unwrap_or_default());
    // SAFETY: the caller's promise.
    text.map_or(-1, |t| unsafe { put(&t, buf, len) })
}

/// Reads the calling thread's frames as a location does (to the program's own frame), timed: writes
/// `{"ns", "calls", "in_place", "python": [{file, line, function}]}` (the read's time and system calls,
/// whether the thread's own frames are read in place; the frames made after the timing). What a program that is held at several places in turn pays a read: its caller calls it
/// from each place (`tests/python/frames_sites.py`). Returns as [`async_lab_python_frames`] does.
///
/// # Safety
/// `buf` is writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn async_lab_python_read_timed(buf: *mut u8, len: usize) -> isize {
    let text = std::panic::catch_unwind(|| {
        let mut f = Frames::EMPTY;
        let calls = memory::calls();
        let t = Instant::now();
        super::own(&mut f);
        let ns = t.elapsed().as_nanos() as u64;
        let calls = memory::calls() - calls;
        json!({ "ns": ns, "calls": calls, "in_place": super::direct::in_place(), "python": lines(&f) }).to_string()
    });
    // SAFETY: the caller's promise.
    text.map_or(-1, |t| unsafe { put(&t, buf, len) })
}

/// The calling thread's location as JSON, native frames left out.
fn location() -> String {
    let line = crate::location::here(gettid(), 0, false).map(crate::location::into_line);
    serde_json::to_string(&line).unwrap_or_default()
}

/// Measures a location's Python part, `rounds` times each, as median and max in ns: on the calling thread,
/// its own frames once its reading state is warm (`own_ns`) and with that state and the code table emptied
/// first (`own_first_ns`), the line made from them on the library's thread (`line_ns`); from a thread that runs
/// no Python, every other thread's frames (`others_ns`, `others_first_ns`); with the frames and threads read.
/// Empties the process's code table. Returns as [`async_lab_python_frames`] does.
///
/// # Safety
/// `buf` is writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn async_lab_python_read_cost(rounds: u32, buf: *mut u8, len: usize) -> isize {
    let text = std::panic::catch_unwind(|| {
        let rounds = rounds.max(1) as usize;
        let mut f = Frames::EMPTY;
        if super::own(&mut f) == Gil::NoPython {
            return json!({ "error": "no Python in the process" }).to_string();
        }
        let own = time(rounds, &mut || {
            super::own(&mut f);
        });
        let line = time(rounds, &mut || {
            std::hint::black_box(lines(&f));
        });
        let own_first = time(rounds, &mut || {
            super::forget();
            super::own(&mut f);
        });
        let (others, others_first, threads, other_frames) = std::thread::spawn(move || {
            let mut o = Others::new();
            super::others(&mut o);
            let warm = time(rounds, &mut || super::others(&mut o));
            let first = time(rounds, &mut || {
                super::forget();
                super::others(&mut o);
            });
            (warm, first, o.n, o.used)
        })
        .join()
        .unwrap_or_default();
        json!({
            "frames": f.len,
            "threads": threads,
            "other_frames": other_frames,
            "rounds": rounds,
            "own_ns": own,
            "own_first_ns": own_first,
            "line_ns": line,
            "others_ns": others,
            "others_first_ns": others_first,
        })
        .to_string()
    });
    // SAFETY: the caller's promise.
    text.map_or(-1, |t| unsafe { put(&t, buf, len) })
}

fn lines(f: &Frames) -> Vec<async_lab_trace_format::PyFrame> {
    let mut out = Vec::new();
    code::frames_of(f.frames(), &mut out);
    out
}

/// `f` run `rounds` times: the median and the largest time, in ns, and the system calls a run made (on
/// average).
fn time(rounds: usize, f: &mut dyn FnMut()) -> Value {
    let calls = memory::calls();
    let mut ns: Vec<u64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_nanos() as u64
        })
        .collect();
    let calls = (memory::calls() - calls) as f64 / rounds as f64;
    ns.sort_unstable();
    json!({ "median": ns[ns.len() / 2], "max": ns[ns.len() - 1], "calls": (calls * 10.0).round() / 10.0 })
}

fn gettid() -> u64 {
    // SAFETY: gettid has no preconditions.
    (unsafe { libc::gettid() }) as u64
}

/// Copies `text` into the caller's buffer.
///
/// # Safety
/// `buf` is writable for `len` bytes.
unsafe fn put(text: &str, buf: *mut u8, len: usize) -> isize {
    if buf.is_null() || text.len() > len {
        return -(text.len() as isize);
    }
    // SAFETY: `buf` is writable for `len` bytes (the caller's promise), `text.len()` of them; the two do not
    // overlap (`text` is ours).
    unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), buf, text.len()) };
    text.len() as isize
}
