//! A thread's frame chain, copied as (frame, function, code object, instruction) from its innermost frame
//! outward, without the GIL: the calling thread's, which is inside a CUDA callback and alone pushes and pops
//! its frames, so its chain is still while it is read; or another thread's (`threads`), which keeps running:
//! its innermost frames may change under the reader, and what reads them checks every code object's type and
//! every instruction against its code object (`code::resolve`). Every read goes through a [`Snapshot`]
//! (reads that cannot fault, as few system calls as the last read of the thread allows), and the walk is
//! bounded in frames and steps.
//!
//! Frames of 3.11 and later live in the thread's data-stack chunks: a frame not yet copied is copied with the
//! frames below it in its chunk, as one window. A frame found at an address where the thread's recent reads
//! saw the same function run the same code object is known (`seen`): its code object is not read again.
//! With [`Depth::ToUser`] the walk stops
//! at the program's own frame, the first one outside the installed packages and the interpreter's library
//! (`code`: decided once per code object), which is where a location is placed; the frames outside it are
//! not read at all.

use super::layout::{Instr, FRAME_SPAN_MAX, TSTATE_SPAN_MAX};
use super::memory::{int, on_own_stack, word};
use super::reader::Reader;
use super::snapshot::Snapshot;

/// The frames kept, innermost first.
pub const MAX_FRAMES: usize = 64;
/// The frames stepped through at most (the interpreter's entry frames are stepped over, not kept).
const MAX_STEPS: usize = 4 * MAX_FRAMES;
/// A frame not yet copied is copied with this much of its chunk below it (the frames it was called from).
const WINDOW_BELOW: usize = 8 * 1024;
/// A code object's id not known yet.
pub const NO_CODE: u32 = u32::MAX;

/// What identifies a code object beside its address, so that an address the allocator gave to another code
/// object since is not read as the one cached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CodeKey {
    pub code: usize,
    pub filename: usize,
    pub name: usize,
    pub linetable: usize,
    pub first_line: i32,
}

impl CodeKey {
    pub const NONE: CodeKey = CodeKey { code: 0, filename: 0, name: 0, linetable: 0, first_line: 0 };
}

/// One frame as copied.
#[derive(Clone, Copy, Debug)]
pub struct RawFrame {
    /// The frame's own address.
    pub frame: usize,
    /// The function it runs (3.11 and later; 0 where the layout has none).
    pub func: usize,
    /// Its code object's address, and what identifies the code object where this walk read it (a frame known
    /// from the thread's recent reads has the address alone: its id says the rest).
    pub key: CodeKey,
    /// The code unit it is at (-1: not begun).
    pub lasti: i32,
    /// Its code object's id in `code`'s table ([`NO_CODE`]: not known yet).
    pub id: u32,
    /// Whether its code object is the program's own (outside the installed packages and the interpreter's
    /// library).
    pub user: bool,
    /// Whether its instruction is known to be one of its code object's, with a line (checked for another
    /// thread's frames: `code::resolve`), here or when the same frame was seen at the same instruction.
    pub plausible: bool,
}

impl RawFrame {
    const NONE: RawFrame =
        RawFrame { frame: 0, func: 0, key: CodeKey::NONE, lasti: -1, id: NO_CODE, user: false, plausible: false };
}

/// What is known of a frame seen before (`seen`): its code object's id, whether that is the program's own
/// code, and whether its instruction now is one found plausible for its code object before.
pub struct Known {
    pub id: u32,
    pub user: bool,
    pub plausible: bool,
}

impl Default for RawFrame {
    fn default() -> RawFrame {
        RawFrame::NONE
    }
}

/// A thread's frames as copied, innermost first.
#[derive(Clone)]
pub struct Capture {
    pub frames: [RawFrame; MAX_FRAMES],
    pub len: usize,
    /// The `code` table's generation its ids are of.
    pub generation: u64,
}

impl Default for Capture {
    fn default() -> Capture {
        Capture::EMPTY
    }
}

impl Capture {
    /// No frame.
    pub const EMPTY: Capture = Capture { frames: [RawFrame::NONE; MAX_FRAMES], len: 0, generation: 0 };

    pub fn frames(&self) -> &[RawFrame] {
        &self.frames[..self.len]
    }

    /// Keeps the frames from `from` on (the ones inside it dropped).
    pub fn drop_inner(&mut self, from: usize) {
        let from = from.min(self.len);
        self.frames.copy_within(from..self.len, 0);
        self.len -= from;
    }
}

/// A thread state as read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadState {
    /// The next thread state of the interpreter's list.
    pub next: usize,
    /// The interpreter it belongs to.
    pub interp: usize,
    /// Its `pthread_t`.
    pub thread_id: usize,
    /// The system's id of the thread (3.11 and later).
    pub native_id: Option<u64>,
    /// Its innermost frame (0: it runs no Python now).
    pub frame: usize,
    /// Its current data-stack chunk (0: none).
    pub chunk: usize,
}

/// Reads thread state `tstate` (3.11 and 3.12: and the `_PyCFrame` that holds its innermost frame).
pub fn thread_state(reader: &Reader, snap: &mut Snapshot, tstate: usize) -> Option<ThreadState> {
    let l = &reader.layout;
    let (lo, len) = l.tstate_span();
    let mut ts = [0u8; TSTATE_SPAN_MAX];
    if tstate == 0 || !snap.read(tstate.wrapping_add(lo), &mut ts[..len]) {
        return None;
    }
    let at = |field: usize| word(&ts, field - lo);
    let mut frame = at(l.ts_frame);
    if let Some(current) = l.cframe_current {
        let mut b = [0u8; 8];
        if frame == 0 || !snap.read(frame.wrapping_add(current), &mut b) {
            return None;
        }
        frame = usize::from_ne_bytes(b);
    }
    Some(ThreadState {
        next: at(l.ts_next),
        interp: at(l.ts_interp),
        thread_id: at(l.ts_thread_id),
        native_id: l.ts_native_id.map(|n| at(n) as u64),
        frame,
        chunk: l.ts_chunk.map_or(0, at),
    })
}

/// How far a walk goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Depth {
    /// Every frame, to the bounds.
    Whole,
    /// To the program's own frame, the first one outside the installed packages and the interpreter's
    /// library (where every frame is inside them, to the bounds).
    ToUser,
}

/// Walks the frames from `frame` (the innermost; `chunk`: the thread's current data-stack chunk) outward into
/// `out`. `seen` answers for the thread's recent frames: a frame found at an address where one ran the same
/// function and code object takes its code id from there. With
/// [`Depth::ToUser`] the walk stops after the first frame whose code object is known as the program's own
/// (`known_user` answers for one not seen, by its address); the frames' code objects not known yet are read
/// afterwards (`code::resolve`).
pub fn frames(
    reader: &Reader,
    snap: &mut Snapshot,
    (frame, chunk): (usize, usize),
    seen: &dyn Fn(&RawFrame) -> Option<Known>,
    depth: Depth,
    known_user: &dyn Fn(usize) -> Option<bool>,
    out: &mut Capture,
) -> Walked {
    let l = &reader.layout;
    out.len = 0;
    let (flo, flen) = l.frame_span();
    let mut f = [0u8; FRAME_SPAN_MAX];
    let mut frame = frame;
    let mut steps = 0;
    // The frames met so far, by a bit of their address each: a frame whose bit is set is looked for among them.
    let mut met = [0u64; 4];
    while frame != 0 && steps < MAX_STEPS && out.len < MAX_FRAMES {
        steps += 1;
        if !read_frame(reader, snap, frame.wrapping_add(flo), chunk, &mut f[..flen]) {
            break;
        }
        // A freed frame object (3.10): the thread left it since its state was read, and what was read of
        // the frames inside it is no longer its stack either.
        // A frame met twice: a chain read across a change (3.10's frame objects are reused), not one stack.
        let bit = (frame >> 3) as u64 ^ (frame >> 11) as u64;
        let (word_at, mask) = ((bit >> 6) as usize & 3, 1u64 << (bit & 63));
        let twice = met[word_at] & mask != 0 && out.frames().iter().any(|g| g.frame == frame);
        met[word_at] |= mask;
        if l.f_refcnt.is_some_and(|rc| word(&f, rc - flo) == 0) || twice {
            out.len = 0;
            return Walked::Torn;
        }
        let previous = word(&f, l.f_previous - flo);
        let entry = match (l.f_owner, l.skip_owner_from) {
            (Some(o), Some(from)) => f[o - flo] >= from,
            _ => false,
        };
        // A code object is at least 8-aligned: low bits set are 3.14's reference tags.
        let code = word(&f, l.f_code - flo) & !7;
        if !entry && code != 0 {
            let lasti = match (l.instr, l.co_code) {
                (Instr::Index, _) => int(&f, l.f_instr - flo),
                (Instr::Pointer, Some(start)) => {
                    let at = (word(&f, l.f_instr - flo) as i64).wrapping_sub(code.wrapping_add(start) as i64);
                    (at / 2).clamp(-1, i32::MAX as i64) as i32
                }
                (Instr::Pointer, None) => -1,
            };
            let func = l.f_func.map_or(0, |at| word(&f, at - flo));
            let mut raw =
                RawFrame { frame, func, key: CodeKey { code, ..CodeKey::default() }, lasti, ..RawFrame::default() };
            match seen(&raw) {
                Some(k) => (raw.id, raw.user, raw.plausible) = (k.id, k.user, k.plausible),
                None => raw.user = known_user(code).unwrap_or(false),
            }
            out.frames[out.len] = raw;
            out.len += 1;
            if depth == Depth::ToUser && raw.user {
                return Walked::AtUser;
            }
        }
        if previous == frame {
            return Walked::Whole;
        }
        frame = previous;
    }
    if frame == 0 {
        Walked::Whole
    } else {
        Walked::Bounded
    }
}

/// Where a walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walked {
    /// At a frame whose code object is known as the program's own.
    AtUser,
    /// At the thread's outermost frame.
    Whole,
    /// At a bound (frames, steps) or a frame that could not be read.
    Bounded,
    /// At a frame no longer on the thread's chain: nothing kept.
    Torn,
}

/// Copies a frame's fields: from the snapshot where it holds them, else (a frame in a data-stack chunk) with
/// the frames below it in the chunk as one window, else alone.
fn read_frame(reader: &Reader, snap: &mut Snapshot, addr: usize, chunk: usize, out: &mut [u8]) -> bool {
    let end = addr.saturating_add(out.len());
    if !snap.holds(addr, out.len()) && reader.layout.ts_chunk.is_some() && !on_own_stack(addr, out.len()) {
        // The current chunk's frames lie above its start; a frame of an older chunk has no known bound below
        // it but its own page.
        let floor = if chunk != 0 && chunk <= addr { chunk } else { addr & !4095 };
        let lo = end.saturating_sub(WINDOW_BELOW).max(floor);
        if !snap.fetch(lo, end) {
            snap.fetch(addr & !4095, end);
        }
    }
    snap.read(addr, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(frame: usize, code: usize, id: u32) -> RawFrame {
        RawFrame { frame, func: 7, key: CodeKey { code, ..CodeKey::default() }, id, ..RawFrame::default() }
    }

    fn capture(frames: &[RawFrame]) -> Capture {
        let mut c = Capture::default();
        c.frames[..frames.len()].copy_from_slice(frames);
        c.len = frames.len();
        c
    }

    #[test]
    fn the_frames_inside_one_are_dropped() {
        let mut c = capture(&[frame(1, 1, 1), frame(2, 2, 2), frame(3, 3, 3)]);
        c.drop_inner(2);
        assert_eq!(c.frames().iter().map(|f| f.frame).collect::<Vec<_>>(), [3]);
        c.drop_inner(5);
        assert_eq!(c.len, 0);
    }
}
