//! Python frames read without the GIL: PyTorch, JAX and CuPy release it around their CUDA calls, and its
//! holder may be waiting on a lock the very call we are in holds, so it is never taken and no CPython function
//! that needs it is called. Two readings: the calling thread's own frames ([`own`]: its state from
//! `PyGILState_GetThisThreadState`, a thread-specific slot), and where the calling thread runs no Python,
//! every Python thread's ([`others`]: through the interpreter's thread list, `threads`). Frames are read the
//! way out-of-process profilers and `faulthandler` read them (`walk`: 3.10 to 3.12 by each version's layout,
//! 3.13 and later through the interpreter's `_Py_DebugOffsets` table), by reads that cannot fault (`memory`;
//! the calling thread's own state and data-stack chunks, which it alone writes, in place: `direct`),
//! as few of them as the thread's recent reads allow (`snapshot`, `seen`), to the program's own frame
//! (`stack`), each frame kept as its code object's id and its instruction: a code object is decoded once (`code`,
//! `linetable`), and frames become file, line and function on the library's thread ([`frames_of`]). Nothing is
//! allocated on the calling thread once its buffers have grown and its code objects are known.
//!
//! Written here rather than taken from the `py-spy` crate: py-spy's library reads another process (it
//! finds the interpreter by parsing its binary, may pause it, allocates per sample and brings a large
//! dependency tree); a CUDA callback needs its own process's frames in microseconds.

mod code;
mod direct;
mod export;
mod layout;
mod linetable;
mod memory;
mod reader;
mod runtime;
mod seen;
mod snapshot;
mod stack;
mod threads;
mod walk;

use async_lab_trace_format::{Gil, PyFrame, PythonSetup, ThreadFrames};
use seen::Seen;
use snapshot::Snapshot;
use std::cell::RefCell;
use std::sync::OnceLock;
use threads::ThreadList;
use walk::{Capture, Depth};

pub use threads::MAX_THREADS;
pub use walk::MAX_FRAMES;

/// The other threads' frames kept at most, all threads together.
pub const OTHER_FRAMES: usize = 1024;

/// A thread's frames as a location keeps them, innermost first: (code id, instruction).
#[derive(Clone, Copy)]
pub struct Frames {
    pub at: [(u32, i32); MAX_FRAMES],
    pub len: usize,
}

impl Frames {
    pub const EMPTY: Frames = Frames { at: [(0, 0); MAX_FRAMES], len: 0 };

    pub fn frames(&self) -> &[(u32, i32)] {
        &self.at[..self.len]
    }

    fn set(&mut self, cap: &Capture) {
        for (to, f) in self.at.iter_mut().zip(cap.frames()) {
            *to = (f.id, f.lasti);
        }
        self.len = cap.len.min(MAX_FRAMES);
    }
}

/// One other thread: its system id, whether it held the GIL, where its frames are in [`Others::frames`].
#[derive(Clone, Copy, Default)]
pub struct Other {
    pub tid: u64,
    pub gil: bool,
    pub from: u32,
    pub len: u32,
}

/// Every other Python thread's frames at one moment.
pub struct Others {
    pub threads: [Other; MAX_THREADS],
    pub n: usize,
    pub frames: Box<[(u32, i32)]>,
    pub used: usize,
}

impl Others {
    /// Room for [`MAX_THREADS`] threads and [`OTHER_FRAMES`] frames, on the heap.
    pub fn new() -> Others {
        Others {
            threads: [Other::default(); MAX_THREADS],
            n: 0,
            frames: vec![(0, 0); OTHER_FRAMES].into_boxed_slice(),
            used: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    pub fn clear(&mut self) {
        self.n = 0;
        self.used = 0;
    }

    /// As the trace holds them (on the library's thread).
    pub fn lines(&self) -> Vec<ThreadFrames> {
        self.threads[..self.n]
            .iter()
            .map(|o| {
                let mut python = Vec::with_capacity(o.len as usize);
                frames_of(&self.frames[o.from as usize..(o.from + o.len) as usize], &mut python);
                ThreadFrames { tid: o.tid, gil: o.gil, python }
            })
            .collect()
    }
}

/// The calling thread's reading state: its snapshot's plan, its recent frames, its capture.
#[derive(Default)]
struct Own {
    snap: Snapshot,
    seen: Seen,
    now: Capture,
}

thread_local! {
    static OWN: RefCell<Option<Box<Own>>> = const { RefCell::new(None) };
}

/// Whether the calling thread holds the GIL (for information), and its frames into `out`: with
/// [`Depth::ToUser`] (a location's) to the program's own frame, else all of them to the bounds.
fn own_frames(depth: Depth, out: &mut Frames) -> Gil {
    out.len = 0;
    let Some(py) = runtime::interp() else { return Gil::NoPython };
    if !py.initialized() {
        return Gil::NotHeld;
    }
    let gil = if py.gil_held() { Gil::Held } else { Gil::NotHeld };
    let Ok(reader) = &py.reader else { return gil };
    let tstate = py.this_thread_state();
    if tstate == 0 {
        return gil;
    }
    let _ = OWN.try_with(|own| {
        let Ok(mut own) = own.try_borrow_mut() else { return };
        let own = own.get_or_insert_with(Box::default);
        let own = &mut **own;
        own.snap.begin();
        direct::allow(reader, &mut own.snap, tstate);
        if let Some(ts) = walk::thread_state(reader, &mut own.snap, tstate).filter(|ts| ts.frame != 0) {
            let start = (ts.frame, ts.chunk);
            if stack::capture(reader, &mut own.snap, start, &mut own.seen, depth, false, &mut own.now) > 0 {
                out.set(&own.now);
            }
        }
        own.snap.end();
    });
    gil
}

/// What a location records of the calling thread: whether it holds the GIL, and its frames to the program's
/// own frame.
pub fn own(out: &mut Frames) -> Gil {
    own_frames(Depth::ToUser, out)
}

/// Every Python thread's frames but the calling thread's, each to its program's own frame, into `out`; nothing
/// where the process runs no Python or its thread list cannot be read.
pub fn others(out: &mut Others) {
    out.clear();
    let Some(py) = runtime::interp() else { return };
    if !py.initialized() {
        return;
    }
    let (Ok(reader), Some(list)) = (&py.reader, thread_list(py)) else { return };
    // SAFETY: gettid has no preconditions.
    let me = (unsafe { libc::gettid() }) as u64;
    threads::read(reader, list, me, |t| {
        let len = t.frames.len.min(OTHER_FRAMES - out.used);
        if len == 0 || out.n == MAX_THREADS {
            return;
        }
        for (to, f) in out.frames[out.used..out.used + len].iter_mut().zip(t.frames.frames()) {
            *to = (f.id, f.lasti);
        }
        out.threads[out.n] = Other { tid: t.tid, gil: t.gil, from: out.used as u32, len: len as u32 };
        out.n += 1;
        out.used += len;
    });
}

/// The main interpreter's thread list, found once the interpreter is initialized.
fn thread_list(py: &runtime::Interp) -> Option<&'static ThreadList> {
    found_list(py)?.as_ref().ok()
}

/// The main interpreter's thread list or why it cannot be read; `None` until the interpreter is initialized.
fn found_list(py: &runtime::Interp) -> Option<&'static Result<ThreadList, String>> {
    static LIST: OnceLock<Result<ThreadList, String>> = OnceLock::new();
    if let Some(found) = LIST.get() {
        return Some(found);
    }
    if !py.initialized() {
        return None;
    }
    let reader = py.reader.as_ref().ok()?;
    let interp = py.main_interp();
    let found = threads::Found {
        interp,
        // SAFETY: `interp` is the main interpreter's state, live while the interpreter is initialized.
        head: if interp == 0 { 0 } else { unsafe { py.thread_head(interp) } },
        gil_function: py.gil_holder,
        this_tstate: py.this_thread_state(),
        gil_held: py.gil_held(),
    };
    Some(LIST.get_or_init(|| ThreadList::find(reader, &found)))
}

/// Forgets every code object, the calling thread's last read and every thread's (to measure a first read).
fn forget() {
    code::forget();
    let _ = OWN.try_with(|own| {
        if let Ok(mut own) = own.try_borrow_mut() {
            *own = None;
        }
    });
    threads::forget();
}

/// The frames as the trace holds them, innermost first, from (code id, instruction) pairs.
pub fn frames_of(frames: &[(u32, i32)], out: &mut Vec<PyFrame>) {
    code::frames_of(frames, out);
}

/// Whether the calling thread holds the GIL (for information), and all of its frames (to the bounds), as the
/// trace holds them: what the reader's own test compares with what Python says of itself.
pub fn frames() -> (Gil, Vec<PyFrame>) {
    let mut f = Frames::EMPTY;
    let gil = own_frames(Depth::Whole, &mut f);
    let mut out = Vec::with_capacity(f.len);
    frames_of(f.frames(), &mut out);
    (gil, out)
}

/// The interpreter in the process and how its frames are read, for the trace's setup line; `None` where
/// the process runs no Python. Where other threads' frames cannot be read, its note says why.
pub fn setup() -> Option<PythonSetup> {
    let py = runtime::interp()?;
    let mut setup = py.setup();
    if let (None, Some(Err(why))) = (&setup.note, found_list(py)) {
        setup.note = Some(format!("other threads' frames are not read: {why}"));
    }
    Some(setup)
}
