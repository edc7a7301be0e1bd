//! What `cargo bench -p async-lab-trace-inject` drives: the callback CUPTI calls for each API call's enter and
//! exit, with CUPTI's data made by hand and the clock given (no CUPTI, no GPU), writing a trace as the library
//! does in a program. Not part of the library's interface to the CUDA driver.

use cudarc::cupti::sys::{CUpti_CallbackData, CUpti_CallbackDomain, CUpti_CallbackId};
use std::ffi::c_void;

/// Opens the trace at `path` with the settings of the variables in the environment (as `InitializeInjection`
/// reads them), and takes the time from `clock`.
pub fn start(path: &std::path::Path, clock: fn() -> u64) -> std::io::Result<()> {
    crate::clock::set(clock);
    // Stream ids without CUPTI: each handle its own id.
    crate::launches::set_resolver(|_, handle, per_thread| {
        Some(if handle == 0 { 7 + u32::from(per_thread) } else { handle as u32 })
    });
    crate::launches::init(crate::switches::KEEP_OVER_DEFAULT_NS);
    crate::writer::open_at(path, crate::switches::writer())?;
    crate::writer::write_header(None);
    Ok(())
}

/// The callback, as CUPTI calls it.
///
/// # Safety
/// `data` points to a `CUpti_CallbackData` that lives during the call, whose `correlationData` points to a u64
/// that lives from the call's enter to its exit, and whose `functionName` is null or a C string that lives as
/// long as the trace.
pub unsafe fn callback(domain: CUpti_CallbackDomain, cbid: CUpti_CallbackId, data: *const CUpti_CallbackData) {
    // SAFETY: the caller's promise is the callback's.
    unsafe { crate::callbacks::on_callback(std::ptr::null_mut::<c_void>(), domain, cbid, data.cast()) }
}

/// Drops the threads' lines (`true`), as the gate does between its blocks, or records them again.
pub fn idle(idle: bool) {
    crate::writer::set_idle(idle);
}

/// Every line out to the file.
pub fn flush() {
    crate::writer::flush();
}
