//! Every Python thread of the main interpreter, read from a thread that runs no Python (an XLA runtime thread,
//! PyTorch's autograd thread) when one of its calls held it: what each Python thread was doing at that moment.
//! The interpreter's thread list is walked (its first thread state, then each state's `next`), as
//! out-of-process profilers read it, without the GIL and without stopping the threads: every read goes
//! through a [`Snapshot`] (one system call where the last read tells what to copy, so that the threads are
//! read as they were within that call), each state must name the main interpreter (a list changing under the
//! reader ends the walk there), and each thread's frames are checked as read while it ran (`code::resolve`,
//! strict). Bounded: [`MAX_LIST`] states stepped through, [`MAX_THREADS`] threads kept, each to its
//! program's own frame or [`walk::MAX_FRAMES`].
//!
//! Each thread's system id is its `native_thread_id` (3.11 and later); 3.10 has none, so it is read from the
//! thread's `pthread_t`, where glibc keeps it at an offset found once on two threads of the process. Whether
//! it holds the GIL: 3.10 and 3.11 through `_PyThreadState_UncheckedGet` (the runtime's current thread state,
//! null while no thread holds it); 3.12 and later from the GIL's own state (`last_holder` while `locked`),
//! reached through the interpreter (`layout::GilAt`).
//!
//! Where the offsets of the list do not check out on the process's own threads ([`ThreadList::find`]), no other
//! thread is read and the setup line says why.

use super::layout::GilAt;
use super::memory::{self, int, word};
use super::reader::Reader;
use super::seen::Seen;
use super::snapshot::Snapshot;
use super::stack;
use super::walk::{self, Capture, Depth};
use std::ffi::c_void;
use std::sync::Mutex;

/// The threads whose frames are kept at most.
pub const MAX_THREADS: usize = 32;
/// The thread states stepped through at most.
const MAX_LIST: usize = 256;
/// The times a thread whose frames changed under the read is read again.
const RETRIES: usize = 2;
/// The bytes of glibc's `struct pthread` searched for the thread's id.
const PTHREAD_SEARCH: usize = 2048;

/// Where the main interpreter's threads are read, checked on the process's own threads.
#[derive(Clone, Copy, Debug)]
pub struct ThreadList {
    interp: usize,
    holder: Holder,
    /// 3.10: where glibc's `struct pthread` keeps the thread's id, from its `pthread_t`.
    pthread_tid: Option<usize>,
}

/// Where the thread holding the GIL is read.
#[derive(Clone, Copy, Debug)]
enum Holder {
    Function(unsafe extern "C" fn() -> *mut c_void),
    At { holder: usize, locked: usize },
}

/// What finding the list needs from the interpreter (`runtime::Interp`): its main state and its first thread
/// state as the interpreter reads them, the holder's function (3.10, 3.11), and the calling thread's state and
/// whether it holds the GIL.
pub struct Found {
    pub interp: usize,
    pub head: usize,
    pub gil_function: Option<unsafe extern "C" fn() -> *mut c_void>,
    pub this_tstate: usize,
    pub gil_held: bool,
}

impl ThreadList {
    /// Checks where the reader finds the list against what the interpreter says: its first state where the
    /// interpreter reads it, every state naming the interpreter, the calling thread's state in it with the
    /// calling thread's id, and the GIL's holder one of them (the calling thread's where it holds the GIL).
    pub fn find(reader: &Reader, found: &Found) -> Result<ThreadList, String> {
        let l = &reader.layout;
        if found.interp == 0 {
            return Err("the interpreter has no main state yet".into());
        }
        let mut snap = Snapshot::default();
        snap.begin();
        let holder = match l.gil {
            GilAt::Function => Holder::Function(found.gil_function.ok_or("no _PyThreadState_UncheckedGet")?),
            GilAt::Pointer { at } => {
                let gil = read_word(&mut snap, found.interp.wrapping_add(at)).filter(|&g| g != 0);
                let gil = gil.ok_or("the interpreter's GIL could not be read")?;
                Holder::At { holder: gil + 8, locked: gil + 16 }
            }
            GilAt::Embedded { holder, locked } => {
                Holder::At { holder: found.interp.wrapping_add(holder), locked: found.interp.wrapping_add(locked) }
            }
        };
        let pthread_tid = if l.ts_native_id.is_none() { pthread_tid_offset() } else { None };
        let list = ThreadList { interp: found.interp, holder, pthread_tid };
        // The list may change between reading it and reading the holder: tried twice.
        let mut why = String::new();
        for _ in 0..2 {
            match list.check(reader, &mut snap, found) {
                Ok(()) => return Ok(list),
                Err(e) => why = e,
            }
        }
        Err(why)
    }

    fn check(&self, reader: &Reader, snap: &mut Snapshot, found: &Found) -> Result<(), String> {
        let head = read_word(snap, self.interp.wrapping_add(reader.layout.is_threads_head));
        if head != Some(found.head) {
            return Err("the interpreter's thread list is not where the layout says".into());
        }
        let mut states = Vec::new();
        let mut t = found.head;
        while t != 0 && states.len() < MAX_LIST {
            let ts = walk::thread_state(reader, snap, t).ok_or("a thread state could not be read")?;
            if ts.interp != self.interp {
                return Err("a thread state of the list names another interpreter".into());
            }
            if t == found.this_tstate && self.tid(snap, &ts) != gettid() {
                return Err("the thread's own state does not hold its id where the layout says".into());
            }
            states.push(t);
            t = ts.next;
        }
        if found.this_tstate != 0 && !states.contains(&found.this_tstate) {
            return Err("the thread's own state is not in the interpreter's list".into());
        }
        let h = self.holder(snap);
        let ok = if found.gil_held { h == found.this_tstate } else { h == 0 || states.contains(&h) };
        if !ok {
            return Err("the GIL's holder is not read where the layout says".into());
        }
        Ok(())
    }

    /// The thread state holding the GIL (0: none).
    fn holder(&self, snap: &mut Snapshot) -> usize {
        match self.holder {
            // SAFETY: `_PyThreadState_UncheckedGet` takes no arguments and reads one atomic of the runtime.
            Holder::Function(f) => unsafe { f() as usize },
            Holder::At { holder, locked } => {
                let mut l = [0u8; 4];
                let locked = snap.read(locked, &mut l) && int(&l, 0) != 0;
                if locked {
                    read_word(snap, holder).unwrap_or(0)
                } else {
                    0
                }
            }
        }
    }

    /// The system's id of the thread of state `ts` (0: not known).
    fn tid(&self, snap: &mut Snapshot, ts: &walk::ThreadState) -> u64 {
        match (ts.native_id, self.pthread_tid) {
            (Some(id), _) => id,
            (None, Some(at)) => {
                let mut b = [0u8; 4];
                if ts.thread_id != 0 && snap.read(ts.thread_id.wrapping_add(at), &mut b) {
                    int(&b, 0).max(0) as u64
                } else {
                    0
                }
            }
            (None, None) => 0,
        }
    }
}

/// One Python thread as read: its id, whether it held the GIL, its frames.
pub struct Thread<'a> {
    pub tid: u64,
    pub gil: bool,
    pub frames: &'a Capture,
}

/// Every thread's recent frames (by thread state), the snapshot the reads share, and the capture each
/// thread's read is made in.
struct State {
    snap: Snapshot,
    /// Reads with no plan: a thread read again where it changed under the first read.
    again: Snapshot,
    /// (thread state, its frames seen; whether it was met in this read), one per thread read.
    seen: Vec<(usize, Box<Seen>, bool)>,
    out: Capture,
}

impl State {
    fn new() -> State {
        State { snap: Snapshot::default(), again: Snapshot::default(), seen: Vec::new(), out: Capture::EMPTY }
    }

    /// Where thread state `t`'s recent frames are in `seen`, made where it has none (a thread not read before:
    /// allocated once), marked as met.
    fn seen_at(&mut self, t: usize) -> usize {
        let at = match self.seen.iter().position(|s| s.0 == t) {
            Some(at) => at,
            None => {
                self.seen.push((t, Box::default(), false));
                self.seen.len() - 1
            }
        };
        self.seen[at].2 = true;
        at
    }
}

/// Shared by the threads that read: a thread runs one read at a time through it.
static STATE: Mutex<Option<State>> = Mutex::new(None);

/// Reads every Python thread of the list but the calling thread (`me`) and those running no Python, each to its
/// program's own frame, and hands each with frames left to `each`.
pub fn read(reader: &Reader, list: &ThreadList, me: u64, mut each: impl FnMut(Thread<'_>)) {
    let mut guard = STATE.lock().unwrap_or_else(|e| e.into_inner());
    let st = guard.get_or_insert_with(State::new);
    st.snap.begin();
    st.seen.iter_mut().for_each(|s| s.2 = false);
    let holder = list.holder(&mut st.snap);
    let mut t = read_word(&mut st.snap, list.interp.wrapping_add(reader.layout.is_threads_head)).unwrap_or(0);
    let mut n = 0;
    let mut stepped = 0;
    while t != 0 && stepped < MAX_LIST && n < MAX_THREADS {
        stepped += 1;
        let Some(ts) = walk::thread_state(reader, &mut st.snap, t) else { break };
        // A state freed and reused while the list changed: what was read so far stands.
        if ts.interp != list.interp {
            break;
        }
        let tid = list.tid(&mut st.snap, &ts);
        if ts.frame != 0 && tid != me {
            let at = st.seen_at(t);
            let State { snap, again, out, seen } = st;
            let seen = &mut *seen[at].1;
            let start = (ts.frame, ts.chunk);
            let mut kept = stack::capture(reader, snap, start, seen, Depth::ToUser, true, out);
            // Its innermost frame left between reading its state and its frames (3.10's frame objects are read
            // one by one): read again, from its state on, each read its own.
            for _ in 0..RETRIES {
                if kept > 0 {
                    break;
                }
                again.begin();
                let Some(ts) = walk::thread_state(reader, again, t).filter(|ts| ts.frame != 0) else { break };
                let start = (ts.frame, ts.chunk);
                kept = stack::capture(reader, again, start, seen, Depth::ToUser, true, out);
            }
            if kept > 0 {
                each(Thread { tid, gil: t == holder, frames: &st.out });
                n += 1;
            }
        }
        t = ts.next;
    }
    st.snap.end();
    // The threads not met (ended, or running no Python now) are forgotten.
    st.seen.retain(|s| s.2);
}

/// Forgets every thread's last read (to measure a first read).
pub fn forget() {
    *STATE.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

fn read_word(snap: &mut Snapshot, at: usize) -> Option<usize> {
    let mut b = [0u8; 8];
    snap.read(at, &mut b).then(|| word(&b, 0))
}

fn gettid() -> u64 {
    // SAFETY: gettid has no preconditions.
    (unsafe { libc::gettid() }) as u64
}

/// Where glibc's `struct pthread` holds the thread's id: the offsets from `pthread_self()` whose `int` is the
/// thread's id, on this thread and on another one (so that a number that only happens to match is not
/// taken).
fn pthread_tid_offset() -> Option<usize> {
    fn candidates() -> Vec<usize> {
        // SAFETY: pthread_self has no preconditions.
        let me = unsafe { libc::pthread_self() } as usize;
        let tid = gettid() as i32;
        let mut buf = vec![0u8; PTHREAD_SEARCH];
        if !memory::read(memory::pid(), me, &mut buf) {
            return Vec::new();
        }
        (0..PTHREAD_SEARCH).step_by(4).filter(|&k| int(&buf, k) == tid).collect()
    }
    let here = candidates();
    let there = std::thread::scope(|s| s.spawn(candidates).join().unwrap_or_default());
    here.into_iter().find(|k| there.contains(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// glibc's `struct pthread` holds each thread's id at one offset: found on two threads, it reads a third
    /// thread's id from its `pthread_t`.
    #[test]
    fn a_threads_id_is_read_from_its_pthread() {
        let at = pthread_tid_offset().expect("glibc keeps the id in struct pthread");
        let (tid, read) = std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: pthread_self has no preconditions.
                let me = unsafe { libc::pthread_self() } as usize;
                let mut b = [0u8; 4];
                assert!(memory::read(memory::pid(), me + at, &mut b));
                (gettid(), int(&b, 0) as u64)
            })
            .join()
            .unwrap()
        });
        assert_eq!(read, tid);
    }
}
