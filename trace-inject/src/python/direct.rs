//! The calling thread's own frames, read where they lie (3.11 and later). A location reads the frames of the
//! thread that made the call, which is inside that call: it pushes and pops no frame while it is read, and no
//! other thread writes its thread state or its frames. Its frames live in its data-stack chunks, which the
//! interpreter allocated for it and frees only when the thread pops a chunk's first frame; every chunk from
//! the thread's current one back to its first holds frames of calls still running. So the thread state and
//! those chunks are read in place, without a system call, as CPython's `faulthandler` reads a thread's frames;
//! everything else (the code objects a frame names, another thread's frames) is still read by reads that
//! cannot fault (`memory`).
//!
//! A chunk is found from the thread state's `datastack_chunk` and bounded by its own header (`previous`,
//! `size`). Where that field lies is checked once per process, by reads that cannot fault, on a thread that
//! runs Python: its chunk's header must be sane and its innermost frame inside the chunk (a generator's
//! frame lies in the generator, so a read made from one leaves the answer to a later read). Until then, or
//! where it does not check out, nothing is read in place.

use super::memory::{self, on_own_stack, word};
use super::reader::Reader;
use super::snapshot::Snapshot;
use super::walk;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

/// A data-stack chunk's header: `previous`, `size`, `top` (`_PyStackChunk` of 3.11 to 3.14).
const CHUNK_HEAD: usize = 24;
/// The chunks read in place at most: the thread's current one and the ones of its older frames.
const CHUNKS: usize = 4;
/// A chunk's size believed at most (the interpreter makes them of 16 KiB, or the size of one large frame).
const CHUNK_MAX: usize = 1 << 30;

/// Whether the chunk's place in the thread state was checked: not yet, holds, does not.
static CHECKED: AtomicU8 = AtomicU8::new(UNKNOWN);
/// The reads that found no answer (a frame outside the chunk, in a generator); past [`TRIES`], none is
/// sought again.
static UNDECIDED: AtomicU32 = AtomicU32::new(0);
const TRIES: u32 = 64;
const UNKNOWN: u8 = 0;
const HOLDS: u8 = 1;
const WRONG: u8 = 2;

/// Lets `snap` read in place, until its next `begin`, the calling thread's state `tstate` (as
/// `PyGILState_GetThisThreadState` gives it) and the data-stack chunks its frames are in; nothing where the
/// version keeps no chunks (3.10) or the chunk's place has not checked out.
pub fn allow(reader: &Reader, snap: &mut Snapshot, tstate: usize) {
    let Some(at_chunk) = reader.layout.ts_chunk else { return };
    let checked = match CHECKED.load(Ordering::Relaxed) {
        UNKNOWN => check(reader, tstate),
        known => known,
    };
    if checked != HOLDS || tstate == 0 {
        return;
    }
    in_place_of(reader, snap, tstate, at_chunk);
}

/// Lets `snap` read in place the thread state `tstate` and its chunks, the current one (at `at_chunk` in the
/// state) and up to [`CHUNKS`] in all back through their `previous`, each to its header's `size`; the first
/// chunk whose size is not sane ends them.
fn in_place_of(reader: &Reader, snap: &mut Snapshot, tstate: usize, at_chunk: usize) {
    let (lo, len) = reader.layout.tstate_span();
    // SAFETY: `tstate` is the calling thread's own state, which the interpreter keeps for the thread's life;
    // the fields read (its frame, its chunk, its list and ids) lie within it (the layout's span), and only the
    // thread itself writes the frame and chunk fields, and it is inside this call. The list's `next` may be
    // written by a thread starting or ending, under the interpreter's lock: it is read as a word, as any other.
    unsafe { snap.in_place(tstate.wrapping_add(lo), tstate.wrapping_add(lo + len)) };
    let mut b = [0u8; 8];
    let mut chunk = if snap.read(tstate.wrapping_add(at_chunk), &mut b) { word(&b, 0) } else { 0 };
    for _ in 0..CHUNKS {
        if chunk == 0 {
            break;
        }
        let mut head = [0u8; CHUNK_HEAD];
        // SAFETY: `chunk` is the thread's current data-stack chunk (from its own state, where the check found
        // it) or the `previous` of one of them: each holds frames of calls the thread is still inside, so the
        // interpreter has not freed it, and only the thread writes it. Its header's first 24 bytes are read.
        unsafe { std::ptr::copy_nonoverlapping(chunk as *const u8, head.as_mut_ptr(), CHUNK_HEAD) };
        let (previous, size) = (word(&head, 0), word(&head, 8));
        if !(CHUNK_HEAD..=CHUNK_MAX).contains(&size) {
            break;
        }
        // SAFETY: as for the header, the whole chunk: the interpreter allocated `size` bytes for it.
        unsafe { snap.in_place(chunk, chunk.saturating_add(size)) };
        chunk = previous;
    }
}

/// Checks, by reads that cannot fault, that the layout's `datastack_chunk` is the chunk the calling thread's innermost frame lies in, and remembers the answer: it holds where the
/// chunk's header is sane and the frame inside it, it does not where the header cannot be read or is not
/// sane; no answer yet where the thread has no frame or its frame lies elsewhere (on its own stack, in a
/// generator), up to [`TRIES`] such reads.
fn check(reader: &Reader, tstate: usize) -> u8 {
    if tstate == 0 {
        return UNKNOWN;
    }
    if UNDECIDED.fetch_add(1, Ordering::Relaxed) >= TRIES {
        CHECKED.store(WRONG, Ordering::Relaxed);
        return WRONG;
    }
    let answer = verdict(reader, tstate);
    if answer != UNKNOWN {
        CHECKED.store(answer, Ordering::Relaxed);
    }
    answer
}

/// The check's answer for thread state `tstate`, read by reads that cannot fault.
fn verdict(reader: &Reader, tstate: usize) -> u8 {
    // A snapshot with no plan: every read through `memory`, as the walk reads any thread state.
    let mut snap = Snapshot::default();
    snap.begin();
    let Some(ts) = walk::thread_state(reader, &mut snap, tstate) else { return UNKNOWN };
    let (frame, chunk) = (ts.frame, ts.chunk);
    if frame == 0 || on_own_stack(frame, 8) {
        return UNKNOWN;
    }
    let mut head = [0u8; CHUNK_HEAD];
    let size = if chunk != 0 && memory::read(memory::pid(), chunk, &mut head) { word(&head, 8) } else { 0 };
    if !(CHUNK_HEAD..=CHUNK_MAX).contains(&size) {
        WRONG
    } else if frame >= chunk + CHUNK_HEAD && frame < chunk.saturating_add(size) {
        HOLDS
    } else {
        UNKNOWN
    }
}

/// Whether the calling thread's frames are read in place in this process (for the reader's test).
pub fn in_place() -> bool {
    CHECKED.load(Ordering::Relaxed) == HOLDS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::layout::Layout;
    use async_lab_trace_format::PyReader;

    const CHUNK: usize = 16 * 1024;

    fn reader() -> Reader {
        Reader { layout: Layout::v3_12(), kind: PyReader::Layout, code_type: 0, unicode_type: 0, bytes_type: 0 }
    }

    /// A thread as 3.12 lays it out: its state (`cframe` at 56, `datastack_chunk` at 232), its `cframe` (the
    /// innermost frame at 0), two chunks of 16 KiB (the current one's `previous` the older one), and its
    /// innermost frame at `frame_at` in the current chunk.
    struct Thread {
        state: Vec<u64>,
        cframe: Box<[u64; 2]>,
        chunks: [Vec<u64>; 2],
    }

    impl Thread {
        fn new(frame_at: usize, size: u64) -> Thread {
            let chunks = [vec![0u64; CHUNK / 8], vec![0u64; CHUNK / 8]];
            let (current, older) = (chunks[0].as_ptr() as u64, chunks[1].as_ptr() as u64);
            let mut t = Thread { state: vec![0u64; 64], cframe: Box::new([current + frame_at as u64, 0]), chunks };
            t.chunks[0][..2].copy_from_slice(&[older, size]);
            t.chunks[1][..2].copy_from_slice(&[0, CHUNK as u64]);
            t.state[56 / 8] = t.cframe.as_ptr() as u64;
            t.state[232 / 8] = current;
            t
        }

        fn tstate(&self) -> usize {
            self.state.as_ptr() as usize
        }

        fn chunk(&self, i: usize) -> usize {
            self.chunks[i].as_ptr() as usize
        }
    }

    /// The chunk's place checks out where its header is sane and the innermost frame lies in it; it does not
    /// where the header is not sane; there is no answer yet where the frame lies elsewhere (a generator's).
    #[test]
    fn the_chunks_place_is_checked_by_the_threads_innermost_frame() {
        let r = reader();
        let sane = Thread::new(1024, CHUNK as u64);
        assert_eq!(verdict(&r, sane.tstate()), HOLDS);
        let insane = Thread::new(1024, 0);
        assert_eq!(verdict(&r, insane.tstate()), WRONG);
        let huge = Thread::new(1024, 1 << 40);
        assert_eq!(verdict(&r, huge.tstate()), WRONG);
        let mut elsewhere = Thread::new(1024, CHUNK as u64);
        let heap = Box::new([0u64; 16]);
        elsewhere.cframe[0] = heap.as_ptr() as u64;
        assert_eq!(verdict(&r, elsewhere.tstate()), UNKNOWN);
        assert_eq!(verdict(&r, 0x10), UNKNOWN, "a state that cannot be read");
    }

    /// Once checked, the state and every chunk back through `previous` are read in place (not planned: no
    /// system call reads them), each to its size; a chunk whose size is not sane ends the chunks there.
    #[test]
    fn the_state_and_its_chunks_are_read_in_place() {
        let r = reader();
        let t = Thread::new(1024, CHUNK as u64);
        let mut snap = Snapshot::default();
        snap.begin();
        in_place_of(&r, &mut snap, t.tstate(), 232);
        assert!(snap.holds(t.tstate() + 56, 8) && snap.holds(t.tstate() + 232, 8));
        assert!(snap.holds(t.chunk(0) + 1024, 64) && snap.holds(t.chunk(0) + CHUNK - 8, 8));
        assert!(!snap.holds(t.chunk(0) + CHUNK - 4, 8), "past the chunk's size");
        assert!(snap.holds(t.chunk(1), 24), "the older chunk");
        let mut out = [0u8; 8];
        assert!(snap.read(t.tstate() + 232, &mut out));
        assert_eq!(usize::from_ne_bytes(out), t.chunk(0));
        snap.end();
        snap.begin();
        assert!(!snap.holds(t.tstate() + 232, 8), "read in place: never planned");

        let cut = Thread::new(1024, 0);
        let mut snap = Snapshot::default();
        snap.begin();
        in_place_of(&r, &mut snap, cut.tstate(), 232);
        assert!(snap.holds(cut.tstate() + 232, 8));
        assert!(!snap.holds(cut.chunk(0) + 1024, 8) && !snap.holds(cut.chunk(1), 8));
    }
}
