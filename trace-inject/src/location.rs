//! Where a call that held its thread was made: the thread's Python frames (`python`: to the program's own
//! frame), or where the thread runs no Python in a process that does, every Python thread's frames at that
//! moment (what the program was waiting in: an XLA or autograd thread's call is placed by it), and its native
//! frames (walked by `unwind`), each as the file it is in and its offset from that file's first loaded byte,
//! symbolized by `async-lab trace` after the program ended (nothing is symbolized in the program: a slow call
//! must stay a slow call, not become a slower one). Only calls that held longer than the trace's threshold
//! pay, and the line says what taking it cost.
//!
//! What the program's thread takes ([`Taken`]) holds its Python frames as code ids and instructions, in a
//! buffer taken from a pool: nothing is formatted or allocated there once warm (the native walk, under its
//! budget, excepted). The library's thread makes the line ([`into_line`]) and gives the buffer back.

use crate::{modules, python, switches, unwind};
use async_lab_trace_format::{Gil, Line, NativeFrame};
use std::sync::{Mutex, OnceLock};

/// The native frames kept per call, innermost first, after the tracer's own and CUPTI's and the driver's.
const NATIVE_DEPTH: usize = 24;
/// The frames walked at most (the tracer's and CUPTI's, then the program's).
const WALK_DEPTH: usize = 64;
/// The buffers the pool keeps at most (more are in flight only where the library's thread fell behind).
const POOL_MAX: usize = 64;

/// A location as taken on the program's thread.
pub struct Taken {
    pub tid: u64,
    pub corr: u32,
    pub gil: Gil,
    pub python: python::Frames,
    pub others: python::Others,
    pub native: Vec<NativeFrame>,
    pub took_ns: Option<u64>,
}

impl std::fmt::Debug for Taken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Taken")
            .field("tid", &self.tid)
            .field("corr", &self.corr)
            .field("python", &self.python.len)
            .field("others", &self.others.n)
            .field("native", &self.native.len())
            .finish()
    }
}

impl Taken {
    fn new() -> Box<Taken> {
        Box::new(Taken {
            tid: 0,
            corr: 0,
            gil: Gil::NoPython,
            python: python::Frames::EMPTY,
            others: python::Others::new(),
            native: Vec::new(),
            took_ns: None,
        })
    }
}

/// The buffers given back: boxed, as the rings carry them (a pointer each), so that one is reused, not copied.
#[allow(clippy::vec_box)]
static POOL: Mutex<Vec<Box<Taken>>> = Mutex::new(Vec::new());

fn pooled() -> Box<Taken> {
    let from_pool = POOL.lock().unwrap_or_else(|e| e.into_inner()).pop();
    from_pool.unwrap_or_else(Taken::new)
}

/// Gives a buffer back (on the library's thread, possibly in a signal handler's flush: the pool's lock is
/// only tried there, and the buffer dropped where it is held).
fn give_back(t: Box<Taken>) {
    if let Ok(mut pool) = POOL.try_lock() {
        if pool.len() < POOL_MAX {
            pool.push(t);
        }
    }
}

/// The line of a location taken, made on the library's thread; the buffer goes back to the pool.
pub fn into_line(mut t: Box<Taken>) -> Line {
    let mut frames = Vec::with_capacity(t.python.len);
    python::frames_of(t.python.frames(), &mut frames);
    let line = Line::Location {
        tid: t.tid,
        corr: t.corr,
        gil: t.gil,
        python: frames,
        native: std::mem::take(&mut t.native),
        took_ns: t.took_ns,
        others: t.others.lines(),
    };
    give_back(t);
    line
}

/// Whether native frames are walked at all (`ASYNC_LAB_NATIVE_FRAMES=0`: not, for measuring the Python
/// frames alone).
fn native_on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var(switches::NATIVE_FRAMES_VAR).map_or(true, |v| v != "0"))
}

/// The location of the call the calling thread is returning from, and what taking it cost: its Python
/// frames, or where it has none in a process that runs Python, the other Python threads' frames; with
/// `walk_native` its native frames too. Without them, `None` where there is no Python frame to write: a line
/// with neither kind of frame says nothing.
pub fn here(tid: u64, corr: u32, walk_native: bool) -> Option<Box<Taken>> {
    let t0 = std::time::Instant::now();
    let mut t = pooled();
    (t.tid, t.corr, t.took_ns) = (tid, corr, None);
    t.native.clear();
    t.gil = python::own(&mut t.python);
    t.others.clear();
    if t.python.len == 0 && t.gil != Gil::NoPython {
        python::others(&mut t.others);
    }
    let walk_native = walk_native && native_on();
    if !walk_native && t.python.len == 0 && t.others.is_empty() {
        give_back(t);
        return None;
    }
    if walk_native {
        t.native = native();
    }
    t.took_ns = Some(t0.elapsed().as_nanos() as u64);
    Some(t)
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
        assert!(here(1, 2, false).is_none());
    }

    /// A location taken here: no Python in this process, the test's own frames, and what it cost; its buffer
    /// goes back to the pool when its line is made, and comes out again for the next.
    #[test]
    fn a_location_has_the_callers_frames_and_its_cost() {
        let taken = here(1, 2, true).expect("native frames");
        let at = &*taken as *const Taken;
        let line = into_line(taken);
        assert!(POOL.lock().unwrap().iter().any(|t| std::ptr::eq(&**t, at)));
        let Line::Location { tid: 1, corr: 2, gil, native, took_ns, python, others } = line else { panic!() };
        assert!(python.is_empty() && others.is_empty());
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
