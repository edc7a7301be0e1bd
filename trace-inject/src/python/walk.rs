//! The hot path: the calling thread's Python frames copied as (code object, instruction) pairs, innermost
//! first, without the GIL. The thread is inside our callback, and only it pushes and pops its own frames,
//! so its chain is still while it is read; every read goes through [`memory`] and cannot fault, and the walk
//! is bounded in frames and steps. Frames of 3.11 and later live in the thread's data-stack chunks: a chunk
//! is copied once, from its start to the frame asked for, and the frames below it are then read from the
//! copy; the code objects are copied in one system call. Nothing is allocated once the thread's scratch
//! space has grown to its stack.

use super::layout::{Instr, CODE_SPAN_MAX, FRAME_SPAN_MAX, TSTATE_SPAN_MAX};
use super::memory::{self, int, word};
use super::reader::Reader;
use std::cell::RefCell;

/// The frames kept, innermost first.
pub const MAX_FRAMES: usize = 64;
/// The frames stepped through at most (the interpreter's entry frames are stepped over, not kept).
const MAX_STEPS: usize = 4 * MAX_FRAMES;
/// The most of one data-stack chunk copied.
const WINDOW_MAX: usize = 1 << 20;
/// The chunks whose bounds are read at most.
const CHUNKS_MAX: usize = 4;
/// A chunk's header (`_PyStackChunk`: previous, size, top) before its frames.
const CHUNK_HEADER: usize = 24;

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

/// One frame as copied: its code object and the code unit it is at (-1: not begun).
#[derive(Clone, Copy, Debug, Default)]
pub struct RawFrame {
    pub key: CodeKey,
    pub lasti: i32,
}

/// A thread's frames as copied, innermost first.
pub struct Capture {
    pub frames: [RawFrame; MAX_FRAMES],
    pub len: usize,
}

impl Capture {
    pub fn frames(&self) -> &[RawFrame] {
        &self.frames[..self.len]
    }
}

/// Each thread's copy of a data-stack chunk and of its code objects, kept between captures.
#[derive(Default)]
struct Scratch {
    window: Vec<u8>,
    codes: Vec<u8>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The frames of thread state `tstate` (the calling thread's).
pub fn capture(reader: &Reader, tstate: usize) -> Capture {
    let mut out = Capture { frames: [RawFrame::default(); MAX_FRAMES], len: 0 };
    if tstate == 0 {
        return out;
    }
    let _ = SCRATCH.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            walk(reader, tstate, &mut s, &mut out);
        }
    });
    out
}

fn walk(reader: &Reader, tstate: usize, scratch: &mut Scratch, out: &mut Capture) {
    let l = &reader.layout;
    let pid = memory::pid();
    let Some((mut frame, chunk)) = innermost(reader, pid, tstate) else { return };
    let mut frames = Frames::new(pid, chunk, &mut scratch.window);
    let (flo, flen) = l.frame_span();
    let mut f = [0u8; FRAME_SPAN_MAX];
    let mut steps = 0;
    while frame != 0 && steps < MAX_STEPS && out.len < MAX_FRAMES {
        steps += 1;
        if !frames.read(frame.wrapping_add(flo), &mut f[..flen]) {
            break;
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
            out.frames[out.len] = RawFrame { key: CodeKey { code, ..CodeKey::default() }, lasti };
            out.len += 1;
        }
        if previous == frame {
            break;
        }
        frame = previous;
    }
    codes(reader, pid, &mut scratch.codes, out);
}

/// The thread's innermost frame (0: it runs no Python now) and its current data-stack chunk (0: none).
fn innermost(reader: &Reader, pid: libc::pid_t, tstate: usize) -> Option<(usize, usize)> {
    let l = &reader.layout;
    let (tlo, tlen) = l.tstate_span();
    let mut ts = [0u8; TSTATE_SPAN_MAX];
    if !memory::read(pid, tstate.wrapping_add(tlo), &mut ts[..tlen]) {
        return None;
    }
    let mut frame = word(&ts, l.ts_frame - tlo);
    if let Some(current) = l.cframe_current {
        let mut b = [0u8; 8];
        if frame == 0 || !memory::read(pid, frame.wrapping_add(current), &mut b) {
            return None;
        }
        frame = usize::from_ne_bytes(b);
    }
    let chunk = l.ts_chunk.map_or(0, |c| word(&ts, c - tlo));
    Some((frame, chunk))
}

/// Copies each frame's code object and keeps the frames whose code object is one. The distinct code objects
/// are read in one system call, those near each other as one range (each range costs the kernel about as
/// much as copying a few KiB); where a merged range cannot be read, each object is read alone.
fn codes(reader: &Reader, pid: libc::pid_t, scratch: &mut Vec<u8>, out: &mut Capture) {
    let l = &reader.layout;
    let (clo, clen) = l.code_span();
    debug_assert!(clen <= CODE_SPAN_MAX);
    let mut spans = [0usize; MAX_FRAMES];
    for (span, f) in spans.iter_mut().zip(out.frames()) {
        *span = f.key.code.wrapping_add(clo);
    }
    let spans = &mut spans[..out.len];
    spans.sort_unstable();
    let mut distinct = 0;
    for i in 0..spans.len() {
        if distinct == 0 || spans[i] != spans[distinct - 1] {
            spans[distinct] = spans[i];
            distinct += 1;
        }
    }
    let spans = &spans[..distinct];
    let mut ranges = Ranges::of(spans, clen, true);
    if !ranges.read(pid, scratch, false) {
        ranges = Ranges::of(spans, clen, false);
        ranges.read(pid, scratch, true);
    }
    let mut kept = 0;
    for i in 0..out.len {
        let mut f = out.frames[i];
        let Some(c) = ranges.bytes(scratch, f.key.code.wrapping_add(clo), clen) else { continue };
        if word(c, l.ob_type - clo) != reader.code_type {
            continue;
        }
        f.key.filename = word(c, l.co_filename - clo);
        f.key.name = word(c, l.co_name - clo);
        f.key.linetable = word(c, l.co_linetable - clo);
        f.key.first_line = int(c, l.co_firstlineno - clo);
        out.frames[kept] = f;
        kept += 1;
    }
    out.len = kept;
}

/// Code objects closer than this are read as one range.
const MERGE_GAP: usize = 4096;
/// The longest range read for several code objects.
const MERGED_MAX: usize = 16 * 1024;

/// The address ranges the code objects are read from, in order, and where each went in the scratch space.
struct Ranges {
    /// (start, end, read whole)
    ranges: [(usize, usize, bool); MAX_FRAMES],
    len: usize,
}

impl Ranges {
    /// Sorted distinct spans of `width` bytes, those close together merged where `merge`.
    fn of(spans: &[usize], width: usize, merge: bool) -> Ranges {
        debug_assert!(spans.windows(2).all(|w| w[0] < w[1]));
        let mut r = Ranges { ranges: [(0, 0, false); MAX_FRAMES], len: 0 };
        for &s in spans {
            match r.ranges[..r.len].last_mut() {
                Some(last)
                    if merge
                        && s <= last.1.saturating_add(MERGE_GAP)
                        && s.saturating_add(width) - last.0 <= MERGED_MAX =>
                {
                    last.1 = s.saturating_add(width)
                }
                _ => {
                    r.ranges[r.len] = (s, s.saturating_add(width), false);
                    r.len += 1;
                }
            }
        }
        r
    }

    /// Reads every range into `scratch`, one after another; returns whether all were read. With
    /// `skip_failed`, a range that cannot be read is left out and the ranges after it are read still.
    fn read(&mut self, pid: libc::pid_t, scratch: &mut Vec<u8>, skip_failed: bool) -> bool {
        let total: usize = self.ranges[..self.len].iter().map(|r| r.1 - r.0).sum();
        if scratch.len() < total {
            scratch.resize(total, 0);
        }
        let mut first = 0;
        let mut all = true;
        while first < self.len {
            let offset: usize = self.ranges[..first].iter().map(|r| r.1 - r.0).sum();
            let mut rest = &mut scratch[offset..];
            let mut parts: [(usize, &mut [u8]); MAX_FRAMES] = std::array::from_fn(|_| (0, &mut [][..]));
            for (part, r) in parts.iter_mut().zip(&self.ranges[first..self.len]) {
                let (here, after) = std::mem::take(&mut rest).split_at_mut(r.1 - r.0);
                *part = (r.0, here);
                rest = after;
            }
            let read = memory::read_many(pid, &mut parts[..self.len - first]);
            for r in &mut self.ranges[first..first + read] {
                r.2 = true;
            }
            first += read;
            if first < self.len {
                all = false;
                if !skip_failed {
                    return false;
                }
                first += 1;
            }
        }
        all
    }

    /// The `width` bytes read at `addr`, where its range was read.
    fn bytes<'s>(&self, scratch: &'s [u8], addr: usize, width: usize) -> Option<&'s [u8]> {
        let mut offset = 0;
        for r in &self.ranges[..self.len] {
            if addr >= r.0 && addr.checked_add(width).is_some_and(|end| end <= r.1) {
                return r.2.then(|| &scratch[offset + addr - r.0..offset + addr - r.0 + width]);
            }
            offset += r.1 - r.0;
        }
        None
    }
}

/// Reads frames, from a copy of the data-stack chunk they are in where they are in one.
struct Frames<'a> {
    pid: libc::pid_t,
    /// The next chunk whose bounds are not read yet (0: none).
    next_chunk: usize,
    /// The chunks' (start, size) read so far.
    chunks: [(usize, usize); CHUNKS_MAX],
    known: usize,
    window: &'a mut Vec<u8>,
    /// The address `window` is a copy of, and how many of its bytes are.
    window_at: usize,
    window_len: usize,
}

impl<'a> Frames<'a> {
    fn new(pid: libc::pid_t, chunk: usize, window: &'a mut Vec<u8>) -> Frames<'a> {
        Frames { pid, next_chunk: chunk, chunks: [(0, 0); CHUNKS_MAX], known: 0, window, window_at: 0, window_len: 0 }
    }

    /// Copies `out.len()` bytes at `addr`.
    fn read(&mut self, addr: usize, out: &mut [u8]) -> bool {
        let Some(end) = addr.checked_add(out.len()) else { return false };
        if !(addr >= self.window_at && end <= self.window_at + self.window_len) {
            match self.chunk_of(addr, end) {
                Some(start) if end - start <= WINDOW_MAX => {
                    if self.window.len() < end - start {
                        self.window.resize(end - start, 0);
                    }
                    if !memory::read(self.pid, start, &mut self.window[..end - start]) {
                        return false;
                    }
                    (self.window_at, self.window_len) = (start, end - start);
                }
                _ => return memory::read(self.pid, addr, out),
            }
        }
        let from = addr - self.window_at;
        out.copy_from_slice(&self.window[from..from + out.len()]);
        true
    }

    /// The start of the chunk that holds [addr, end), reading the chunks' bounds as far as needed.
    fn chunk_of(&mut self, addr: usize, end: usize) -> Option<usize> {
        loop {
            if let Some(&(start, _)) = self.chunks[..self.known]
                .iter()
                .find(|&&(start, size)| addr >= start.saturating_add(CHUNK_HEADER) && end <= start.saturating_add(size))
            {
                return Some(start);
            }
            if self.next_chunk == 0 || self.known == CHUNKS_MAX {
                return None;
            }
            let at = self.next_chunk;
            self.next_chunk = 0;
            let mut header = [0u8; 16];
            if !memory::read(self.pid, at, &mut header) {
                return None;
            }
            let size = word(&header, 8);
            if !(CHUNK_HEADER..=WINDOW_MAX * 64).contains(&size) {
                return None;
            }
            self.chunks[self.known] = (at, size);
            self.known += 1;
            self.next_chunk = word(&header, 0);
        }
    }
}

/// The layout's check on the calling thread's own frames (`tstate`: its thread state, 0 where it has none; `version`: the interpreter's, for the error): where it has a Python frame, the innermost one's
/// code object must be a code object (a wrong offset finds something else).
pub fn check(tstate: usize, version: &str, reader: &Reader) -> Result<(), String> {
    if tstate == 0 {
        return Ok(());
    }
    match innermost(reader, memory::pid(), tstate) {
        None => Err("the thread state could not be read".into()),
        Some((0, _)) => Ok(()),
        Some(_) if capture(reader, tstate).len > 0 => Ok(()),
        Some(_) => Err(format!("the layout check failed: the thread has frames but none reads as Python {version}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearby_code_objects_are_one_range_and_a_range_that_cannot_be_read_falls_back_to_each_object() {
        let block: Vec<u8> = (0..=255u8).cycle().take(3 * 4096).collect();
        let base = block.as_ptr() as usize;
        let far = Box::new([9u8; 64]);
        let near = Ranges::of(&[base, base + 100, base + 8192], 16, true);
        assert_eq!(&near.ranges[..near.len], &[(base, base + 116, false), (base + 8192, base + 8208, false)]);
        let mut spans = [base, base + 100, base + 8192, far.as_ptr() as usize];
        spans.sort_unstable();
        let mut scratch = Vec::new();
        let mut r = Ranges::of(&spans, 16, true);
        assert!(r.read(memory::pid(), &mut scratch, false));
        assert_eq!(r.bytes(&scratch, base + 100, 16).unwrap(), &block[100..116]);
        assert_eq!(r.bytes(&scratch, far.as_ptr() as usize, 16).unwrap(), &[9u8; 16]);

        // An unmapped address (page 0) among them: the merged read fails, each object is then read alone.
        let spans = [16, base, base + 8192];
        let mut r = Ranges::of(&spans, 16, true);
        assert!(!r.read(memory::pid(), &mut scratch, false));
        let mut r = Ranges::of(&spans, 16, false);
        assert!(!r.read(memory::pid(), &mut scratch, true));
        assert!(r.bytes(&scratch, 16, 16).is_none());
        assert_eq!(r.bytes(&scratch, base + 8192, 16).unwrap(), &block[8192..8208]);
    }
}
