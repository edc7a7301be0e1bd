//! A thread's frames as a location keeps them: walked (`walk`), their code objects known or read (`code`), and
//! with [`Depth::ToUser`] cut after the program's own frame, the one the location is placed at (the frames
//! inside it, the library's, make the chain from there to the call).

use super::code;
use super::reader::Reader;
use super::seen::Seen;
use super::snapshot::Snapshot;
use super::walk::{self, Capture, Depth, Walked};

/// Captures the frames from `start` (innermost frame, current data-stack chunk) into `out`, `seen` being the
/// thread's recent frames (which then hold this capture's too); with `strict`, another thread's (`code::resolve`), whose read must also end at
/// its program's own frame or its outermost one: a chain that runs into a bound without either was read across
/// a change, and is not kept. Returns the frames kept.
pub fn capture(
    reader: &Reader,
    snap: &mut Snapshot,
    start: (usize, usize),
    seen: &mut Seen,
    depth: Depth,
    strict: bool,
    out: &mut Capture,
) -> usize {
    let kept = capture_seen(reader, snap, start, seen, depth, strict, out);
    seen.remember(out.frames(), out.generation);
    kept
}

fn capture_seen(
    reader: &Reader,
    snap: &mut Snapshot,
    start: (usize, usize),
    seen: &Seen,
    depth: Depth,
    strict: bool,
    out: &mut Capture,
) -> usize {
    let generation = code::generation();
    let seen = |f: &walk::RawFrame| seen.find(f, generation);
    let mut walked = {
        let table = code::table();
        walk::frames(reader, snap, start, &seen, depth, &|addr| table.user_at(addr), out)
    };
    code::resolve(reader, snap, out, strict);
    if depth == Depth::Whole {
        return out.len;
    }
    let mut user = out.frames().iter().position(|f| f.user);
    if user.is_none() && walked == Walked::AtUser {
        // The frame the walk stopped at runs, at that address, another code object than the program's one
        // seen there before (the old one freed): walked again to the bounds, and cut where the program's is.
        walked = walk::frames(reader, snap, start, &seen, Depth::Whole, &|_| None, out);
        code::resolve(reader, snap, out, strict);
        user = out.frames().iter().position(|f| f.user);
    }
    match user {
        Some(at) => out.len = at + 1,
        None if strict && walked != Walked::Whole => out.len = 0,
        None => {}
    }
    out.len
}

/// The layout's check on the calling thread's own frames (`tstate`: its thread state, 0 where it has none;
/// `version`: the interpreter's, for the error): where it has a Python frame, its frames must read as code
/// objects (a wrong offset finds something else).
pub fn check(tstate: usize, version: &str, reader: &Reader) -> Result<(), String> {
    if tstate == 0 {
        return Ok(());
    }
    let mut snap = Snapshot::default();
    snap.begin();
    let Some(ts) = walk::thread_state(reader, &mut snap, tstate) else {
        return Err("the thread state could not be read".into());
    };
    if ts.frame == 0 {
        return Ok(());
    }
    let mut cap = Capture::default();
    let mut seen = Box::<Seen>::default();
    if capture(reader, &mut snap, (ts.frame, ts.chunk), &mut seen, Depth::Whole, false, &mut cap) > 0 {
        Ok(())
    } else {
        Err(format!("the layout check failed: the thread has frames but none reads as Python {version}"))
    }
}
