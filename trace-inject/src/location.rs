//! Where a call that held its thread was made: the thread's Python frames (`python`) and its native
//! frames, each as the file it is in and its offset from that file's first loaded byte, symbolized by
//! `async-lab trace` after the program ended (nothing is symbolized in the program: a slow call must stay
//! a slow call, not become a slower one). Only calls that held longer than the trace's threshold pay.

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

/// One loaded segment: its addresses, and its file's name and first loaded byte.
struct Segment {
    start: usize,
    end: usize,
    base: usize,
    file: std::sync::Arc<str>,
}

/// The loaded files' segments, sorted by address; read again when an address is in none of them (a library
/// loaded since). `dladdr` would answer the same, but it searches each file's dynamic symbols for the
/// nearest one, for every frame: milliseconds per stack in a process that loaded libtorch and libcuda.
static SEGMENTS: std::sync::RwLock<Vec<Segment>> = std::sync::RwLock::new(Vec::new());

/// The file an address is in and its offset from the file's first loaded byte (what `dladdr` calls its base).
pub fn module_of(addr: usize) -> Option<(String, u64)> {
    let find = |segments: &[Segment]| {
        let i = segments.partition_point(|s| s.end <= addr);
        segments.get(i).filter(|s| s.start <= addr).map(|s| (s.file.to_string(), (addr - s.base) as u64))
    };
    if let Some(found) = find(&SEGMENTS.read().unwrap_or_else(|e| e.into_inner())) {
        return Some(found);
    }
    let fresh = loaded_segments();
    let found = find(&fresh);
    *SEGMENTS.write().unwrap_or_else(|e| e.into_inner()) = fresh;
    found
}

/// Every loaded file's segments, through the loader's `dl_iterate_phdr`.
fn loaded_segments() -> Vec<Segment> {
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, out: *mut c_void) -> libc::c_int {
        // SAFETY: the loader passes a valid `dl_phdr_info` for one loaded file, whose program headers and
        // name live during this call; `out` is the Vec `loaded_segments` passed.
        unsafe {
            let info = &*info;
            let out = &mut *out.cast::<Vec<Segment>>();
            let headers = std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize);
            let loads = headers.iter().filter(|h| h.p_type == libc::PT_LOAD);
            let Some(first) = loads.clone().map(|h| h.p_vaddr as usize).min() else { return 0 };
            let name = if info.dlpi_name.is_null() {
                String::new()
            } else {
                CStr::from_ptr(info.dlpi_name).to_string_lossy().into_owned()
            };
            let name = if name.starts_with('/') { name } else { exe().unwrap_or(name) };
            let file: std::sync::Arc<str> = name.into();
            let bias = info.dlpi_addr as usize;
            let base = bias + (first & !0xfff);
            for h in loads {
                let start = bias + h.p_vaddr as usize;
                out.push(Segment { start, end: start + h.p_memsz as usize, base, file: file.clone() });
            }
            0
        }
    }
    let mut out: Vec<Segment> = Vec::new();
    // SAFETY: `each` has the callback's signature and only reads what the loader passes; `out` outlives
    // the call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&mut out as *mut Vec<Segment>).cast()) };
    out.sort_by_key(|s| s.start);
    out
}

/// The program's own file: the loader names it by `argv[0]`, or not at all.
fn exe() -> Option<String> {
    static EXE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    EXE.get_or_init(|| std::fs::read_link("/proc/self/exe").ok().map(|p| p.display().to_string())).clone()
}

#[cfg(test)]
mod tests {
    use super::*;

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
                assert_eq!(Some(module), exe());
            }
            assert_eq!(offset, (addr - info.dli_fbase as usize) as u64);
        }
        let on_the_heap = Box::new(0u64);
        assert_eq!(module_of(&*on_the_heap as *const u64 as usize), None);
    }
}
