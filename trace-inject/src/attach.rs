//! The library loaded into a running program (Python's `ctypes`, by the `async_lab` package) rather than by the
//! CUDA driver at `cuInit`: [`async_lab_attach`] subscribes now, with the same callbacks and GPU records, to a
//! trace file of its own; and the gate around a block of the program's code: a thread that opens one
//! ([`async_lab_gate`]) gets each of its calls that held it longer than the block's limit listed
//! ([`async_lab_take`]), and a block asks what held them ([`async_lab_report`]): the JSON report's entries,
//! from the trace read back since the block began (`window`).
//!
//! Subscribing after CUDA started, CUPTI misses what came before: calls in flight at that moment (their exit
//! comes without their enter: `callbacks` leaves them out), the context's creation and the modules loaded
//! before, the records of GPU work enqueued before, and NVTX ranges (they reach CUPTI only where
//! `NVTX_INJECTION64_PATH` was set when the program started). The default streams' ids are asked on each
//! thread's first calls, as when injected, and the context is there to answer.
//!
//! Every function here returns an error code or an empty answer rather than panic across the C boundary.

mod window;

use crate::gated;
use crate::{activity, callbacks, cupti, windows, writer};
use async_lab_trace_format::{Failure, Line, PyFrame};
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use window::{Asked, Window};

/// The locate threshold where `LOCATE_VAR` is not set: `async-lab trace`'s default `--locate-over`.
const LOCATE_DEFAULT_NS: u64 = 200_000;
/// Past this size, the trace file is started afresh when no block is open.
const ROTATE_BYTES: u64 = 64 << 20;
/// How long a report waits for the GPU records of the calls it is asked about.
const RECORDS_WAIT_MS: u64 = 200;

/// The trace read back, once attached.
static WINDOW: Mutex<Option<Window>> = Mutex::new(None);

fn window() -> std::sync::MutexGuard<'static, Option<Window>> {
    WINDOW.lock().unwrap_or_else(|e| e.into_inner())
}

/// A string for the caller, who frees it with [`async_lab_free`].
fn give(s: String) -> *mut c_char {
    CString::new(s.replace('\0', " ")).map_or(std::ptr::null_mut(), CString::into_raw)
}

/// Subscribes to CUPTI in this process, now (a second call answers as the first did, once it succeeded):
/// 0; else 1 (CUPTI could not be loaded), 2 (CUPTI is taken: another tool subscribed), 3 (another CUPTI
/// error), 4 (the trace file cannot be written), with the reason in `*why` where `why` is not null.
///
/// # Safety
/// `why` is null or a valid place for one pointer.
#[no_mangle]
pub unsafe extern "C" fn async_lab_attach(why: *mut *mut c_char) -> c_int {
    let outcome = catch_unwind(attach).unwrap_or_else(|_| Err((5, "the injection library failed".into())));
    match outcome {
        Ok(()) => 0,
        Err((code, message)) => {
            if !why.is_null() {
                // SAFETY: `why` is a valid place for one pointer (the caller's promise).
                unsafe { why.write(give(message)) };
            }
            code
        }
    }
}

fn attach() -> Result<(), (c_int, String)> {
    let mut guard = window();
    if guard.is_some() {
        return Ok(());
    }
    let code = |failure: Failure| match failure {
        Failure::CuptiMissing => 1,
        Failure::CuptiTaken => 2,
        Failure::CuptiError => 3,
    };
    // Loaded by the driver too (`async-lab trace` runs this program): its trace is the one to read.
    if callbacks::subscribed() {
        let dir = std::env::var_os(writer::OUT_DIR_VAR).ok_or((3, "the tracer has no trace folder".into()))?;
        let path = PathBuf::from(dir).join(format!("{}.jsonl", std::process::id()));
        *guard = Some(Window::new(path));
        return Ok(());
    }
    let version = cupti::load().map_err(|m| (code(Failure::CuptiMissing), m))?;
    let path = std::env::temp_dir().join(format!("async-lab-gate-{}.jsonl", std::process::id()));
    writer::open_whole(&path).map_err(|e| (4, format!("cannot write the gate's trace at {}: {e}", path.display())))?;
    writer::write_header(version);
    let (api_calls, _) = callbacks::settings();
    let locate_over_ns =
        std::env::var(callbacks::LOCATE_VAR).ok().and_then(|v| v.parse().ok()).unwrap_or(LOCATE_DEFAULT_NS);
    let enabled = callbacks::subscribe(api_calls, locate_over_ns).and_then(|s| activity::enable(&s));
    let several_subscribers = enabled.as_ref().ok().copied();
    let python = crate::python::setup();
    writer::write(&Line::Setup { clock: crate::clock_pair(), api_calls, locate_over_ns, python, several_subscribers });
    enabled.map_err(|(failure, message)| {
        // Nothing traced: no file left behind (a later attempt opens a new one).
        let _ = std::fs::remove_file(&path);
        (code(failure), message)
    })?;
    writer::write_all(activity::record_kinds().iter());
    windows::start();
    // Between blocks the gate records nothing (`between_blocks`): the first block begins right after this.
    GATE_ONLY.store(true, Ordering::SeqCst);
    between_blocks(true);
    writer::flush();
    *guard = Some(Window::new(path));
    // SAFETY: `remove_trace` is an `extern "C"` function without arguments that lives as long as the process
    // (this library is never unloaded).
    unsafe { libc::atexit(remove_trace) };
    Ok(())
}

/// The gate is the only tracer here (not `async-lab trace`, whose trace it reads where it runs): between its
/// blocks it records nothing.
static GATE_ONLY: AtomicBool = AtomicBool::new(false);

/// No block open in the process (`idle`), or the first one begins: between blocks the calls' lines are dropped
/// on the program's threads, no location is taken, the GPU records and kernel windows are off; what a block
/// needs from before it began is in the launch log (`launches`), which goes on. A CUPTI call that fails is a
/// `note` line; the gate goes on.
fn between_blocks(idle: bool) {
    if !GATE_ONLY.load(Ordering::SeqCst) {
        return;
    }
    if !idle {
        writer::set_idle(false);
    }
    if let Err(message) = activity::pause(idle) {
        writer::write(&Line::Note { t: cupti::timestamp(), message });
    }
    windows::pause(idle);
    if idle {
        writer::set_idle(true);
    }
}

/// At exit: the gate's trace file is the process's own scratch, removed (not one `async-lab trace` wrote).
extern "C" fn remove_trace() {
    let _ = catch_unwind(|| {
        if let Some(w) = window().as_ref() {
            if w.path().starts_with(std::env::temp_dir()) {
                let _ = std::fs::remove_file(w.path());
            }
        }
    });
}

/// Sets this thread's gate: its calls that hold it longer than `limit_ns` are listed from now on; 0 stops.
#[no_mangle]
pub extern "C" fn async_lab_gate(limit_ns: u64) {
    gated::set_limit(limit_ns);
}

/// This thread's listed calls, taken: a JSON array of `{"corr", "name", "start_ns", "end_ns", "held_ns"}`,
/// to free with [`async_lab_free`].
#[no_mangle]
pub extern "C" fn async_lab_take() -> *mut c_char {
    let taken = catch_unwind(gated::take);
    let list: Vec<serde_json::Value> = taken
        .unwrap_or_default()
        .into_iter()
        .map(|h| {
            serde_json::json!({
                "corr": h.corr, "name": h.name, "start_ns": h.start, "end_ns": h.end,
                "held_ns": h.end.saturating_sub(h.start),
            })
        })
        .collect();
    give(serde_json::Value::Array(list).to_string())
}

/// A block begins: every line written so far goes out to the file; returns where the block's part of the
/// trace begins, for [`async_lab_report`] and [`async_lab_end`]. Where no block is open and the file has grown
/// past [`ROTATE_BYTES`], it is started afresh.
#[no_mangle]
pub extern "C" fn async_lab_begin() -> u64 {
    catch_unwind(|| {
        writer::flush();
        let mut guard = window();
        let Some(w) = guard.as_mut() else { return 0 };
        let mut len = std::fs::metadata(w.path()).map_or(0, |m| m.len());
        let own = w.path().starts_with(std::env::temp_dir());
        if w.idle() && own && len > ROTATE_BYTES {
            let old = w.path().to_path_buf();
            let fresh = old.with_extension(format!("{}.jsonl", cupti::timestamp()));
            if writer::open_whole(&fresh).is_ok() {
                let _ = std::fs::remove_file(&old);
                w.moved_to(fresh);
                len = 0;
            }
        }
        let first = w.idle();
        let at = w.begin(len);
        drop(guard);
        if first {
            between_blocks(false);
        }
        at
    })
    .unwrap_or(0)
}

/// The block that began at `since` ended.
#[no_mangle]
pub extern "C" fn async_lab_end(since: u64) {
    let _ = catch_unwind(|| {
        let mut guard = window();
        let Some(w) = guard.as_mut() else { return };
        w.end(since);
        let last = w.idle();
        drop(guard);
        if last {
            between_blocks(true);
        }
    });
}

/// What held the calls a block asks about. `request` is JSON: `{"since": N, "warm_up": false, "calls":
/// [{"corr": C, "python": [{"file", "line", "function"}, ...], "over_ns": L, "name": F, "held_ns": H}, ...]}`
/// (frames innermost first; `over_ns` the block's limit; `name` and `held_ns` what the callback saw). The
/// answer, to free with [`async_lab_free`], is JSON (`window::answer`): `{"held_calls": [...], "paid_once":
/// [...]}` (the JSON report's entries, `docs/trace-report.schema.json`, each with the gate's `message`; the
/// calls paid once apart unless `warm_up`) with `"missing": [{"corr", "message"}, ...]`, the calls not found
/// in the trace, or `{"error": "..."}`.
///
/// # Safety
/// `request` is a valid C string.
#[no_mangle]
pub unsafe extern "C" fn async_lab_report(request: *const c_char) -> *mut c_char {
    // SAFETY: the caller's promise.
    let request = unsafe { CStr::from_ptr(request) }.to_string_lossy().into_owned();
    let answer = catch_unwind(AssertUnwindSafe(|| report(&request)))
        .unwrap_or_else(|_| Err("the injection library failed while reading its trace".into()));
    give(match answer {
        Ok(v) => v.to_string(),
        Err(e) => serde_json::json!({ "error": e }).to_string(),
    })
}

fn report(request: &str) -> Result<serde_json::Value, String> {
    let (since, asked) = parse_request(request)?;
    let warm_up = serde_json::from_str::<serde_json::Value>(request).ok().and_then(|v| v["warm_up"].as_bool());
    if window().is_none() {
        return Err("not attached: call async_lab_attach first".into());
    }
    let started = std::time::Instant::now();
    loop {
        activity::flush_all();
        writer::flush();
        let mut guard = window();
        let w = guard.as_mut().ok_or("not attached: call async_lab_attach first")?;
        w.read().map_err(|e| format!("cannot read {}: {e}", w.path().display()))?;
        let p = w.process(since);
        let waited = started.elapsed() >= std::time::Duration::from_millis(RECORDS_WAIT_MS);
        if waited || window::records_in(&p, &asked) {
            drop(guard);
            return Ok(window::answer(p, &asked, warm_up.unwrap_or(false)));
        }
        drop(guard);
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

fn parse_request(request: &str) -> Result<(u64, Vec<Asked>), String> {
    let v: serde_json::Value = serde_json::from_str(request).map_err(|e| format!("a report request is JSON: {e}"))?;
    let since = v["since"].as_u64().ok_or("the request has no `since`")?;
    let calls = v["calls"].as_array().ok_or("the request has no `calls`")?;
    let asked = calls
        .iter()
        .map(|c| {
            let corr = c["corr"].as_u64().and_then(|n| u32::try_from(n).ok()).ok_or("a call has no `corr`")?;
            let python: Vec<PyFrame> = match c.get("python") {
                Some(frames) => {
                    serde_json::from_value(frames.clone()).map_err(|e| format!("a call's `python`: {e}"))?
                }
                None => Vec::new(),
            };
            // The block's limit the call held past, and what the callback saw of it (older requests carry none).
            let over_ns = c["over_ns"].as_i64().unwrap_or(0);
            let name = c["name"].as_str().unwrap_or_default().to_owned();
            let held_ns = c["held_ns"].as_i64().unwrap_or(0);
            Ok(Asked { corr, python, over_ns, name, held_ns })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok((since, asked))
}

/// Frees a string this library returned.
///
/// # Safety
/// `s` is null or a string returned by this library and not yet freed.
#[no_mangle]
pub unsafe extern "C" fn async_lab_free(s: *mut c_char) {
    if !s.is_null() {
        // SAFETY: made by `CString::into_raw` in `give`, freed once (the caller's promise).
        drop(unsafe { CString::from_raw(s) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gated::ASYNC_LAB_HELD;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_thread_lists_only_its_own_calls_held_past_its_limit() {
        let before = ASYNC_LAB_HELD.load(Ordering::SeqCst);
        let call = |corr: u32, name: &CStr, held: u64| {
            // SAFETY: a C string literal.
            unsafe { gated::returned(corr, name.as_ptr(), 0, held) }
        };
        async_lab_gate(1_000_000);
        call(5, c"cudaMemcpyAsync", 3_000_000);
        call(6, c"cudaLaunchKernel", 10_000);
        // Another thread, without a gate, lists nothing.
        std::thread::spawn(move || call(7, c"cudaMemcpyAsync", 9_000_000)).join().unwrap();
        async_lab_gate(0);
        call(8, c"cudaMemcpyAsync", 9_000_000);
        assert_eq!(ASYNC_LAB_HELD.load(Ordering::SeqCst), before + 1);
        let taken = async_lab_take();
        // SAFETY: a string this library returned, read once and freed once.
        let text = unsafe { CStr::from_ptr(taken) }.to_string_lossy().into_owned();
        // SAFETY: as above.
        unsafe { async_lab_free(taken) };
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v,
            serde_json::json!([{"corr": 5, "name": "cudaMemcpyAsync", "start_ns": 0, "end_ns": 3_000_000, "held_ns": 3_000_000}])
        );
        let again = async_lab_take();
        // SAFETY: as above.
        assert_eq!(unsafe { CStr::from_ptr(again) }.to_str().unwrap(), "[]");
        // SAFETY: as above.
        unsafe { async_lab_free(again) };
    }

    #[test]
    fn a_report_request_is_read_and_bad_ones_are_told() {
        let (since, asked) =
            parse_request(r#"{"since": 120, "calls": [{"corr": 9, "python": [{"file": "t.py", "line": 3, "function": "f"}]}, {"corr": 4}]}"#)
                .unwrap();
        assert_eq!(since, 120);
        assert_eq!(asked[0].python[0].line, 3);
        assert!(asked[1].python.is_empty());
        assert!(parse_request("{").unwrap_err().contains("JSON"));
        assert!(parse_request(r#"{"calls": []}"#).unwrap_err().contains("since"));
        assert!(parse_request(r#"{"since": 1, "calls": [{"python": []}]}"#).unwrap_err().contains("corr"));
    }

    #[test]
    fn reporting_before_attaching_is_an_error_not_a_panic() {
        // SAFETY: a C string literal.
        let answer = unsafe { async_lab_report(c"{\"since\": 0, \"calls\": []}".as_ptr()) };
        // SAFETY: a string this library returned.
        let text = unsafe { CStr::from_ptr(answer) }.to_string_lossy().into_owned();
        // SAFETY: as above.
        unsafe { async_lab_free(answer) };
        assert!(text.contains("not attached"), "{text}");
    }
}
