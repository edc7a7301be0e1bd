//! Where a call that held its thread was made: the thread's Python frames (`python`) and its native
//! frames, each as the file it is in and its offset from that file's first loaded byte, symbolized by
//! `async-lab trace` after the program ended (nothing is symbolized in the program: a slow call must stay
//! a slow call, not become a slower one). Only calls that held longer than the session's threshold pay.

use crate::python;
use async_lab_core::trace::format::{Line, NativeFrame};
use std::ffi::{c_void, CStr};

/// The native frames kept per call, innermost first, after the tracer's own and CUPTI's and the driver's.
const NATIVE_DEPTH: usize = 24;
/// The frames walked at most (the tracer's and CUPTI's, then the program's).
const WALK_DEPTH: usize = 64;

/// The location of the call the calling thread is returning from.
pub fn here(tid: u64, corr: u32) -> Line {
    let (gil, python) = python::frames();
    Line::Location { tid, corr, gil, python, native: native() }
}

/// The calling thread's native frames, outside this library, CUPTI and the driver.
pub fn native() -> Vec<NativeFrame> {
    let mut ips: Vec<usize> = Vec::with_capacity(WALK_DEPTH);
    backtrace::trace(|frame| {
        ips.push(frame.ip() as usize);
        ips.len() < WALK_DEPTH
    });
    let mut out = Vec::new();
    for ip in ips {
        // A return address: the call itself is the byte before it.
        let Some((module, offset)) = module_of(ip.saturating_sub(1)) else { continue };
        if out.is_empty() && is_tool(&module) {
            continue;
        }
        out.push(NativeFrame { module, offset, function: None, file: None, line: None });
        if out.len() == NATIVE_DEPTH {
            break;
        }
    }
    out
}

/// Frames of the tracer, CUPTI and the driver: what every call has in common, left out.
fn is_tool(module: &str) -> bool {
    let file = module.rsplit('/').next().unwrap_or(module);
    file.starts_with("libasync_lab_inject") || file.starts_with("libcupti") || file.starts_with("libcuda.so")
}

/// The file an address is in and its offset from the file's first loaded byte.
pub fn module_of(addr: usize) -> Option<(String, u64)> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: `info` is a valid place for dladdr's answer; dladdr only reads the loader's tables.
    if unsafe { libc::dladdr(addr as *const c_void, &mut info) } == 0 || info.dli_fbase.is_null() {
        return None;
    }
    let name = if info.dli_fname.is_null() {
        String::new()
    } else {
        // SAFETY: dladdr's file name is the loader's C string, alive while the file is loaded.
        unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned()
    };
    // The program itself is named as it was started (`argv[0]`): its file is /proc/self/exe.
    let name = if name.starts_with('/') {
        name
    } else {
        static EXE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
        EXE.get_or_init(|| std::fs::read_link("/proc/self/exe").ok().map(|p| p.display().to_string()))
            .clone()
            .unwrap_or(name)
    };
    Some((name, (addr - info.dli_fbase as usize) as u64))
}
