//! The frame reader through a C ABI, for its test and its measurement: `tests/python/frames_ctypes.py` loads
//! the library into a Python process with `ctypes` (which releases the GIL around a foreign call, as
//! PyTorch does around its CUDA calls) and compares what the reader returns with what Python says of
//! itself. Both functions write JSON into the caller's buffer.

use super::{code, runtime, walk};
use serde_json::json;
use std::time::Instant;

/// Writes `{"gil", "python": [{file, line, function}], "setup": {version, reader, note}}` for the calling
/// thread into `buf`; returns the bytes written, or minus the bytes needed where `len` is too few, or -1 on
/// a failure.
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

/// Measures the reader on the calling thread, `rounds` times each: the walk alone (`capture_ns`), the
/// decoding of its frames through the warm cache (`decode_ns`), decoding them with the cache emptied first
/// (`first_decode_ns`), and the whole of what a location pays (`frames_ns`); each as its median and max, with
/// the frames read. Empties the process's code cache. Returns as `async_lab_python_frames` does.
///
/// # Safety
/// `buf` is writable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn async_lab_python_frames_cost(rounds: u32, buf: *mut u8, len: usize) -> isize {
    let text = std::panic::catch_unwind(|| {
        let Some(py) = runtime::interp() else { return json!({ "error": "no Python in the process" }).to_string() };
        let Ok(reader) = &py.reader else { return json!({ "error": py.setup() }).to_string() };
        let rounds = rounds.max(1) as usize;
        let tstate = py.this_thread_state();
        let raw = walk::capture(reader, tstate);
        let _ = code::decode(reader, raw.frames());
        let time = |f: &mut dyn FnMut()| {
            let mut ns: Vec<u64> = (0..rounds)
                .map(|_| {
                    let t = Instant::now();
                    f();
                    t.elapsed().as_nanos() as u64
                })
                .collect();
            ns.sort_unstable();
            json!({ "median": ns[ns.len() / 2], "max": ns[ns.len() - 1] })
        };
        let capture = time(&mut || {
            std::hint::black_box(walk::capture(reader, tstate).len);
        });
        let decode = time(&mut || {
            std::hint::black_box(code::decode(reader, raw.frames()));
        });
        let first = time(&mut || {
            code::forget();
            std::hint::black_box(code::decode(reader, raw.frames()));
        });
        let whole = time(&mut || {
            std::hint::black_box(super::frames());
        });
        json!({
            "frames": raw.len,
            "rounds": rounds,
            "capture_ns": capture,
            "decode_ns": decode,
            "first_decode_ns": first,
            "frames_ns": whole,
        })
        .to_string()
    });
    // SAFETY: the caller's promise.
    text.map_or(-1, |t| unsafe { put(&t, buf, len) })
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
