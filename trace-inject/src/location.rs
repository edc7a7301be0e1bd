//! Where a call that held its thread was made: the thread's Python frames (`python`) and its native
//! frames (walked by `unwind`), each as the file it is in and its offset from that file's first loaded byte,
//! symbolized by `async-lab trace` after the program ended (nothing is symbolized in the program: a slow call
//! must stay a slow call, not become a slower one). Only calls that held longer than the trace's threshold
//! pay, and the line says what taking it cost.

use crate::{modules, python, unwind};
use async_lab_trace_format::{Line, NativeFrame};

/// The native frames kept per call, innermost first, after the tracer's own and CUPTI's and the driver's.
const NATIVE_DEPTH: usize = 24;
/// The frames walked at most (the tracer's and CUPTI's, then the program's).
const WALK_DEPTH: usize = 64;

/// The location of the call the calling thread is returning from, and what taking it cost: its Python
/// frames, and with `walk_native` its native frames too. Without them, `None` where the thread has no Python
/// frame (no interpreter, or a thread that runs no Python): a line with neither kind of frame says nothing.
pub fn here(tid: u64, corr: u32, walk_native: bool) -> Option<Line> {
    let t0 = std::time::Instant::now();
    let (gil, python) = python::frames();
    if !walk_native && python.is_empty() {
        return None;
    }
    let native = if walk_native { native() } else { Vec::new() };
    let took_ns = Some(t0.elapsed().as_nanos() as u64);
    Some(Line::Location { tid, corr, gil, python, native, took_ns, others: Vec::new() })
}

/// The calling thread's native frames, outside this library, CUPTI and the driver.
pub fn native() -> Vec<NativeFrame> {
    let mut out = Vec::new();
    for (module, offset) in unwind::walk(WALK_DEPTH) {
        if out.is_empty() && is_tool(&module) {
            continue;
        }
        out.push(NativeFrame { module: module.to_string(), offset, function: None, file: None, line: None });
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

/// The loaded files' segments, sorted by address; read again when an address is in none of them (a library
/// loaded since). `dladdr` would answer the same, but it searches each file's dynamic symbols for the
/// nearest one, for every frame: milliseconds per stack in a process that loaded libtorch and libcuda.
static SEGMENTS: std::sync::RwLock<Vec<modules::Segment>> = std::sync::RwLock::new(Vec::new());

/// The file an address is in and its offset from the file's first loaded byte (what `dladdr` calls its base).
pub fn module_of(addr: usize) -> Option<(String, u64)> {
    let addr = addr as u64;
    let find = |segments: &[modules::Segment]| {
        let i = segments.partition_point(|s| s.end <= addr);
        segments.get(i).filter(|s| s.start <= addr).map(|s| (s.file.to_string(), addr - s.base))
    };
    if let Some(found) = find(&SEGMENTS.read().unwrap_or_else(|e| e.into_inner())) {
        return Some(found);
    }
    let mut fresh: Vec<modules::Segment> = modules::loaded().0.into_iter().flat_map(|f| f.segments).collect();
    fresh.sort_by_key(|s| s.start);
    let found = find(&fresh);
    *SEGMENTS.write().unwrap_or_else(|e| e.into_inner()) = fresh;
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::{c_void, CStr};

    /// Past the budget, a thread without Python frames writes no location at all (this test process runs no
    /// Python): a line with neither kind of frame would say nothing.
    #[test]
    fn a_python_only_location_needs_python_frames() {
        assert_eq!(here(1, 2, false), None);
    }

    /// A location taken here: no Python in this process, the test's own frames, and what it cost.
    #[test]
    fn a_location_has_the_callers_frames_and_its_cost() {
        let Some(Line::Location { gil, native, took_ns, .. }) = here(1, 2, true) else { panic!() };
        assert_eq!(gil, async_lab_trace_format::Gil::NoPython);
        assert!(native.len() >= 3, "{native:?}");
        assert!(took_ns.is_some_and(|ns| ns > 0));
    }

    /// The file and offset of a few addresses (this library's code, libc's, the heap's none) as `dladdr`
    /// gives them.
    #[test]
    fn addresses_are_found_in_their_files_as_dladdr_finds_them() {
        let probes =
            [module_of as *const () as usize, libc::malloc as *const () as usize, libc::write as *const () as usize];
        for addr in probes {
            let mut info = libc::Dl_info {
                dli_fname: std::ptr::null(),
                dli_fbase: std::ptr::null_mut(),
                dli_sname: std::ptr::null(),
                dli_saddr: std::ptr::null_mut(),
            };
            // SAFETY: `info` is a valid place for dladdr's answer; dladdr only reads the loader's tables.
            assert_ne!(unsafe { libc::dladdr(addr as *const c_void, &mut info) }, 0);
            // SAFETY: dladdr's file name is the loader's C string.
            let file = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
            let (module, offset) = module_of(addr).expect("a loaded address");
            if file.starts_with('/') {
                assert_eq!(module, file);
            } else {
                assert_eq!(Some(module), modules::exe());
            }
            assert_eq!(offset, (addr - info.dli_fbase as usize) as u64);
        }
        let on_the_heap = Box::new(0u64);
        assert_eq!(module_of(&*on_the_heap as *const u64 as usize), None);
    }
}
