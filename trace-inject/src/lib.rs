//! async-lab's CUPTI injection library: the CUDA driver loads it into an unmodified program when
//! `CUDA_INJECTION64_PATH` names it, and calls [`InitializeInjection`] during `cuInit`. It subscribes to
//! CUPTI's runtime, driver and resource callbacks and to the GPU activity records (copies, memsets, the
//! driver's overheads, kernels in windows: `windows`; every kind with `--all-kernels`), keeps the launch log
//! (`launches`: the work enqueued ahead of each held call), and writes them as the trace format of `async_lab_trace_format`, one file per
//! process in the folder named by [`OUT_DIR_VAR`].
//!
//! Where `async-lab trace` also preloads it (`LD_PRELOAD`), its `_exit` and `cuptiSubscribe` come before
//! libc's and CUPTI's (`ending`, `conflict`).
//!
//! `async-lab trace` sets the variables; the library never stops the program: whatever goes wrong is one
//! `error` line in the trace, which the command turns into its message.
//!
//! A program may also load it itself, after CUDA started (the `async_lab` Python package does, through
//! `ctypes`): `attach` subscribes then, and gates blocks of the program's code.

mod activity;
mod attach;
#[doc(hidden)]
pub mod bench;
mod budget;
mod buffers;
mod callbacks;
mod clock;
mod conflict;
mod cupti;
mod ending;
mod gated;
mod launches;
mod location;
mod modules;
mod names;
mod nvtx;
mod params;
mod python;
mod record;
mod switches;
mod unwind;
mod windows;
mod writer;

pub use writer::OUT_DIR_VAR;

use async_lab_trace_format::{ClockPair, Failure, Line};

/// Names the CUPTI library to load (a file); set by `async-lab trace`.
pub const CUPTI_VAR: &str = "ASYNC_LAB_CUPTI_LIB";

/// Called by the CUDA driver during `cuInit`; returns 1 (the driver ignores the value).
#[no_mangle]
pub extern "C" fn InitializeInjection() -> std::ffi::c_int {
    // A panic must not cross into the driver: catch it and say so in the trace.
    let outcome = std::panic::catch_unwind(start);
    if let Err(e) = outcome {
        let message = e.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| e.downcast_ref::<String>().cloned());
        writer::write_header(None);
        writer::write(&Line::Error {
            error: Failure::CuptiError,
            message: format!("the injection library failed: {}", message.unwrap_or_default()),
        });
        writer::flush();
    }
    1
}

/// Opens the trace, loads CUPTI and subscribes; on any failure writes the `error` line and stops there.
fn start() {
    if !writer::open() {
        return;
    }
    // The header comes first whatever follows: a trace that says why it holds nothing is still a trace.
    let version = match cupti::load() {
        Ok(v) => v,
        Err(message) => {
            writer::write_header(None);
            return fail(Failure::CuptiMissing, message);
        }
    };
    writer::write_header(version);
    let (api_calls, locate_over_ns) = callbacks::settings();
    // The records enabled before the setup line is written: it says whether CUPTI let the tracer record as
    // one of several subscribers, which only the activity registration tells.
    let enabled = callbacks::subscribe(api_calls, locate_over_ns).and_then(|s| activity::enable(&s));
    let several_subscribers = enabled.as_ref().ok().copied();
    let python = python::setup();
    writer::write(&Line::Setup { clock: clock_pair(), api_calls, locate_over_ns, python, several_subscribers });
    if let Err((failure, message)) = enabled {
        return fail(failure, message);
    }
    writer::write_all(activity::record_kinds().iter());
    windows::start();
    // SAFETY: `finish` is an `extern "C"` function without arguments that lives as long as the process.
    unsafe { libc::atexit(finish) };
    ending::install();
}

/// CUPTI's clock and CLOCK_MONOTONIC, read back to back.
fn clock_pair() -> ClockPair {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    let cupti_ns = cupti::timestamp();
    // SAFETY: `t` is a valid place for the one timespec clock_gettime writes.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    ClockPair { cupti_ns, monotonic_ns: t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64 }
}

/// At exit: CUPTI's last records, then the line that marks the trace complete.
extern "C" fn finish() {
    // A panic must not cross into libc's exit: the trace then reads as partial.
    let _ = std::panic::catch_unwind(|| {
        // A child forked from the traced process holds a copy of its writer: the parent's lines are not
        // written twice.
        if !writer::ours() {
            return;
        }
        activity::flush_all();
        windows::finish();
        // Every thread's calls (the exiting thread's and those of threads still running) before the end line.
        writer::flush();
        writer::write(&Line::End { t: cupti::timestamp() });
        writer::flush();
    });
}

fn fail(error: Failure, message: String) {
    writer::write(&Line::Error { error, message });
    writer::flush();
}
