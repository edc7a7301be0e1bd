//! The calling thread's native stack, walked inside the process by framehop (the unwinder samply uses): each
//! loaded file's `.eh_frame_hdr` and `.eh_frame` are read where the loader mapped them (`modules`), handed to
//! the unwinder once per file (files loaded later are added when the loader's count of additions moves; a
//! removal rebuilds the list), and the rule found for each address is cached, so a stack walked again costs
//! a few table lookups. libgcc's unwinder (the `backtrace` crate's) searched every file's tables again for
//! each frame: milliseconds per stack in a process that loaded libcuda and libcublasLt.
//!
//! The walk starts from this thread's own registers (instruction, stack and frame pointers, read by inline
//! assembly), reads stack memory only between that stack pointer and the top of the thread's stack, and runs
//! inside the loader's `dl_iterate_phdr`, whose lock `dlclose` takes to unmap a file: no file's tables can
//! go away while they are read.

use crate::modules::{self, Counters, File, Segment};
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, Module, Unwinder as _};
use std::cell::Cell;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// One frame found: the file its address is in and the address's offset from the file's first loaded byte
/// (for a return address, of the call before it).
pub type Frame = (Arc<str>, u64);

/// The unwinder with the files it knows, and the rules it has found.
struct Unwinding {
    unwinder: UnwinderX86_64<&'static [u8]>,
    cache: CacheX86_64,
    /// Every known file's segments, by address.
    segments: Vec<Segment>,
    /// The known files, by their first address.
    known: HashSet<u64>,
    /// The loader's counters when the files were read.
    counters: Counters,
}

/// Taken inside the loader's lock only (every walk and every change is made in its callback, or right after
/// reading the files in it), so it is never contended for long.
static STATE: Mutex<Option<Unwinding>> = Mutex::new(None);

impl Unwinding {
    fn new(counters: Counters) -> Unwinding {
        Unwinding {
            unwinder: UnwinderX86_64::new(),
            cache: CacheX86_64::new(),
            segments: Vec::new(),
            known: HashSet::new(),
            counters,
        }
    }

    /// Adds the files not known yet.
    fn add(&mut self, files: Vec<File>) {
        for f in files {
            if !self.known.insert(f.range.start) {
                continue;
            }
            self.segments.extend(f.segments.iter().cloned());
            let mut info = ExplicitModuleSectionInfo::<&'static [u8]> {
                base_svma: 0,
                text_svma: f.text_svma.clone(),
                ..Default::default()
            };
            if let Some(t) = f.tables {
                info.eh_frame_hdr_svma = Some(t.hdr_svma);
                info.eh_frame_hdr = Some(t.hdr);
                info.eh_frame_svma = Some(t.eh_frame_svma);
                info.eh_frame = Some(t.eh_frame);
            }
            // ELF files state addresses from 0: the loader's bias is the file's base in the process.
            self.unwinder.add_module(Module::new(f.name.to_string(), f.range.clone(), f.bias, info));
        }
        self.segments.sort_by_key(|s| s.start);
    }

    /// The file `addr` is in, and its offset there.
    fn frame_at(&self, addr: u64) -> Option<Frame> {
        let i = self.segments.partition_point(|s| s.end <= addr);
        self.segments.get(i).filter(|s| s.start <= addr).map(|s| (s.file.clone(), addr - s.base))
    }

    /// Walks from `regs`, reading the stack between `regs`' stack pointer and `stack_top`: at most `depth`
    /// frames, each in a known file.
    fn walk(&mut self, regs: Registers, stack_top: u64, depth: usize) -> Vec<Frame> {
        let sp = regs.sp;
        let mut read_stack = |addr: u64| {
            if addr >= sp && addr.checked_add(8).is_some_and(|end| end <= stack_top) {
                // SAFETY: inside this thread's own stack, between its stack pointer when the walk began and
                // the stack's top: mapped, and held by the frames being walked (which are still running).
                Ok(unsafe { (addr as *const u64).read_unaligned() })
            } else {
                Err(())
            }
        };
        let mut out = Vec::with_capacity(depth);
        let start = UnwindRegsX86_64::new(regs.ip, regs.sp, regs.bp);
        let mut frames = self.unwinder.iter_frames(regs.ip, start, &mut self.cache, &mut read_stack);
        let mut addresses = Vec::with_capacity(depth);
        while addresses.len() < depth {
            match frames.next() {
                Ok(Some(frame)) => addresses.push(frame.address_for_lookup()),
                _ => break,
            }
        }
        out.extend(addresses.into_iter().filter_map(|a| self.frame_at(a)));
        out
    }
}

/// The registers a walk starts from.
#[derive(Clone, Copy, Debug)]
struct Registers {
    ip: u64,
    sp: u64,
    bp: u64,
}

/// What a pass through the loader's files is doing.
enum Pass {
    /// Before the first file: the counters decide.
    Starting,
    /// The files changed: they are read, to be handed to the unwinder after the pass.
    Reading(Vec<File>, Counters),
    /// The walk is done.
    Walked(Vec<Frame>),
}

/// One pass's inputs and outcome.
struct Job {
    regs: Registers,
    stack_top: u64,
    depth: usize,
    pass: Pass,
}

unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, size: usize, data: *mut libc::c_void) -> libc::c_int {
    let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `data` is the `Job` `walk` passed, used by this thread alone; `info` is the loader's
        // description of one file, valid during this callback.
        let (job, info) = unsafe { (&mut *data.cast::<Job>(), &*info) };
        match &mut job.pass {
            Pass::Starting => {
                let counters = modules::counters(info, size);
                let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(s) = state.as_mut().filter(|s| s.counters == counters) {
                    job.pass = Pass::Walked(s.walk(job.regs, job.stack_top, job.depth));
                    return 1;
                }
                // SAFETY: the loader's description, during its callback.
                job.pass = Pass::Reading(unsafe { modules::file_of(info) }.into_iter().collect(), counters);
                0
            }
            Pass::Reading(files, _) => {
                // SAFETY: as above.
                files.extend(unsafe { modules::file_of(info) });
                0
            }
            Pass::Walked(_) => 1,
        }
    }));
    // A panic must not cross the loader: stop the pass there.
    step.unwrap_or(1)
}

/// The files read in a pass handed to the unwinder: added to those it knows, or, where a file was removed
/// since, in place of them.
fn learn(files: Vec<File>, counters: Counters) {
    let mut state = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let removed = state.as_ref().is_none_or(|s| s.counters.1 != counters.1);
    if removed {
        *state = Some(Unwinding::new(counters));
    }
    if let Some(s) = state.as_mut() {
        s.counters = counters;
        s.add(files);
    }
}

thread_local! {
    /// The top of this thread's stack (its highest address), once asked.
    static STACK_TOP: Cell<Option<u64>> = const { Cell::new(None) };
}

/// The top of the calling thread's stack, from its thread attributes.
fn stack_top() -> Option<u64> {
    if let Some(top) = STACK_TOP.with(Cell::get) {
        return Some(top);
    }
    // SAFETY: `attr` is initialized by pthread_getattr_np before it is read and destroyed once after; the
    // out-pointers are valid places for what pthread_attr_getstack writes.
    let top = unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let (mut addr, mut size) = (std::ptr::null_mut(), 0usize);
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        ok.then(|| addr as u64 + size as u64)?
    };
    STACK_TOP.with(|t| t.set(Some(top)));
    Some(top)
}

/// This function's own instruction, stack and frame pointers, read in one instruction sequence.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn registers() -> Option<Registers> {
    let (ip, sp, bp): (u64, u64, u64);
    // SAFETY: reads three registers into outputs; touches no memory, the stack or the flags.
    unsafe {
        std::arch::asm!(
            "lea {ip}, [rip]",
            "mov {sp}, rsp",
            "mov {bp}, rbp",
            ip = out(reg) ip,
            sp = out(reg) sp,
            bp = out(reg) bp,
            options(nomem, nostack, preserves_flags),
        );
    }
    Some(Registers { ip, sp, bp })
}

/// Other architectures: no walk.
#[cfg(not(target_arch = "x86_64"))]
fn registers() -> Option<Registers> {
    None
}

/// The calling thread's frames, innermost first (this function's own first), at most `depth` of them.
#[inline(never)]
pub fn walk(depth: usize) -> Vec<Frame> {
    let Some(top) = stack_top() else { return Vec::new() };
    let Some(regs) = registers() else { return Vec::new() };
    // On another stack (a signal's): nothing is read.
    if regs.sp >= top {
        return Vec::new();
    }
    // Files loaded or removed while this runs make the pass read them again: twice, then give up.
    for _ in 0..3 {
        let mut job = Job { regs, stack_top: top, depth, pass: Pass::Starting };
        // SAFETY: `visit` has the callback's signature; `job` outlives the call and is only touched by
        // `visit` on this thread.
        unsafe { libc::dl_iterate_phdr(Some(visit), (&mut job as *mut Job).cast()) };
        match job.pass {
            Pass::Walked(frames) => return frames,
            Pass::Reading(files, counters) => learn(files, counters),
            Pass::Starting => return Vec::new(),
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hint::black_box;

    /// The frames of a known call chain, `chain_a` → `chain_b` → `chain_c`, walked here and by libgcc's
    /// unwinder (the `backtrace` crate), each as (file, offset).
    #[inline(never)]
    fn chain_c(n: u32) -> (Vec<Frame>, Vec<Frame>) {
        let ours = walk(64);
        let mut theirs = Vec::new();
        backtrace::trace(|f| {
            let ip = f.ip() as u64;
            // libgcc's first frame is the instruction pointer itself, the others return addresses.
            let lookup = if theirs.is_empty() { ip } else { ip.saturating_sub(1) };
            theirs.extend(frame_of(lookup));
            true
        });
        black_box(n);
        (ours, theirs)
    }

    #[inline(never)]
    fn chain_b(n: u32) -> (Vec<Frame>, Vec<Frame>) {
        let r = chain_c(black_box(n + 1));
        black_box(r)
    }

    #[inline(never)]
    fn chain_a(n: u32) -> (Vec<Frame>, Vec<Frame>) {
        let r = chain_b(black_box(n + 1));
        black_box(r)
    }

    /// The file and offset of an address, as the unwinder's own table has it.
    fn frame_of(addr: u64) -> Option<Frame> {
        STATE.lock().unwrap().as_ref().and_then(|s| s.frame_at(addr))
    }

    /// Symbolized by the `backtrace` crate (its own reader of this binary's debug info).
    fn names(frames: &[Frame]) -> Vec<String> {
        let exe = modules::exe().unwrap();
        let (files, _) = modules::loaded();
        let base = |name: &str| files.iter().find(|f| *f.name == *name).map(|f| f.segments[0].base);
        frames
            .iter()
            .map(|(file, offset)| {
                let mut name = String::new();
                if **file == *exe {
                    if let Some(b) = base(file) {
                        backtrace::resolve((b + offset) as *mut std::ffi::c_void, |s| {
                            if name.is_empty() {
                                name = s.name().map(|n| n.to_string()).unwrap_or_default();
                            }
                        });
                    }
                }
                name
            })
            .collect()
    }

    #[test]
    fn the_walk_finds_the_frames_libgccs_unwinder_finds() {
        let (ours, theirs) = chain_a(1);
        let named = names(&ours);
        let at = |f: &str| named.iter().position(|n| n.contains(f)).unwrap_or_else(|| panic!("{f} in {named:#?}"));
        // Innermost first: the chain's functions in order, after the walk's own frame (where the registers are
        // read, inlined into it).
        assert!(named[0].contains("unwind::walk") || named[0].contains("unwind::registers"), "{named:#?}");
        assert!(at("chain_c") < at("chain_b") && at("chain_b") < at("chain_a"), "{named:#?}");
        assert!(named.iter().any(|n| n.contains("the_walk_finds_the_frames_libgccs_unwinder_finds")));
        // From chain_b's frame out (chain_c called each walk from its own line), the same return addresses as
        // libgcc's, to the thread's start.
        let mine = &ours[at("chain_b")..];
        let first = theirs.iter().position(|f| *f == mine[0]).expect("libgcc's walk passes chain_b");
        let theirs = &theirs[first..];
        let common = mine.len().min(theirs.len());
        assert!(common >= 8, "{} and {} frames", mine.len(), theirs.len());
        assert_eq!(mine[..common], theirs[..common]);
    }

    /// A walk, then again after a library was loaded: the new file is known to the unwinder.
    #[test]
    fn a_file_loaded_later_is_learnt() {
        assert!(!walk(8).is_empty());
        let known = |f: &str| STATE.lock().unwrap().as_ref().unwrap().segments.iter().any(|s| s.file.contains(f));
        let candidates = [(c"libz.so.1", "libz.so"), (c"libutil.so.1", "libutil.so"), (c"libanl.so.1", "libanl.so")];
        let (name, file) = candidates
            .into_iter()
            .find(|(name, file)| {
                // SAFETY: dlopen of a system library by name; it stays loaded (never closed).
                !known(file) && !unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW) }.is_null()
            })
            .expect("a system library not yet loaded");
        walk(8);
        assert!(known(file), "{name:?} was loaded and is not known");
    }

    /// Walks on several threads while another loads and unloads a library again and again: each walk still
    /// finds its caller, nothing faults or hangs, and the unwinder ends up knowing the files as they are.
    #[test]
    fn walks_stay_sound_while_files_come_and_go() {
        let candidates = [c"libz.so.1", c"libutil.so.1", c"libanl.so.1"];
        let name = candidates
            .into_iter()
            .find(|n| {
                // SAFETY: dlopen of a system library by name, closed right after (a probe of which one exists).
                unsafe {
                    let h = libc::dlopen(n.as_ptr(), libc::RTLD_NOW);
                    !h.is_null() && libc::dlclose(h) == 0
                }
            })
            .expect("a system library to load");
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..200 {
                    // SAFETY: as above; each handle opened here is closed once, here.
                    unsafe {
                        let h = libc::dlopen(name.as_ptr(), libc::RTLD_NOW);
                        assert!(!h.is_null());
                        libc::dlclose(h);
                    }
                }
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            });
            for _ in 0..3 {
                s.spawn(|| {
                    let mut walks = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) || walks < 50 {
                        let (ours, _) = chain_a(walks);
                        assert!(names(&ours).iter().any(|n| n.contains("chain_b")));
                        walks += 1;
                    }
                });
            }
        });
        let (files, counters) = modules::loaded();
        walk(8);
        let state = STATE.lock().unwrap();
        let s = state.as_ref().unwrap();
        assert_eq!(s.counters, counters);
        assert_eq!(s.known.len(), files.len());
    }

    /// The cost of one stack here, against libgcc's: the median and the largest of 2000 walks after 100
    /// to warm up, each from 20 frames deeper than the test (this process loads a handful of files; a CUDA
    /// process's cost is in its trace, each location's `took_ns`).
    #[test]
    #[ignore = "a benchmark: cargo test --release -p async-lab-trace-inject unwind -- --ignored --nocapture"]
    fn ns_per_stack() {
        fn deep(n: u32, f: &dyn Fn() -> usize) -> usize {
            if n == 0 {
                f()
            } else {
                black_box(deep(black_box(n - 1), f)) + 1
            }
        }
        let time = |f: &dyn Fn() -> usize| {
            let mut ns: Vec<u64> = (0..2100)
                .map(|_| {
                    let t0 = std::time::Instant::now();
                    black_box(deep(20, f));
                    t0.elapsed().as_nanos() as u64
                })
                .skip(100)
                .collect();
            ns.sort_unstable();
            (ns[ns.len() / 2], ns[ns.len() - 1])
        };
        let frames = deep(20, &|| walk(64).len()) - 20;
        let (median, max) = time(&|| walk(64).len());
        println!("framehop, {frames} frames: median {median} ns, max {max} ns per stack");
        let (median, max) = time(&|| {
            let mut n = 0;
            backtrace::trace(|_| {
                n += 1;
                n < 64
            });
            n
        });
        println!("libgcc (backtrace crate): median {median} ns, max {max} ns per stack");
    }
}
