//! Code objects as the trace names them: file, function and the line table, read once per code object and
//! cached by its address and what identifies it ([`CodeKey`]: its file name's, name's and line table's
//! objects and its first line), so a frame's line is then a hash lookup and a binary search. Decoded on the
//! calling thread, right after the walk: the code objects of the frames just copied are alive only while the
//! thread is still inside the call (each running frame holds its code object); later, on another thread,
//! the allocator may have given the address to something else.

use super::linetable::{self, Range};
use super::memory::{self, int, word};
use super::reader::Reader;
use super::walk::{CodeKey, RawFrame};
use async_lab_trace_format::PyFrame;
use std::collections::HashMap;
use std::sync::Mutex;

/// The longest file or function name read, in characters.
const NAME_MAX: usize = 4096;
/// The longest line table read, in bytes.
const TABLE_MAX: usize = 1 << 20;
/// The code objects cached at most; past it the cache starts again (a program that keeps making code).
const CACHE_MAX: usize = 1 << 16;

/// One code object, decoded.
struct Code {
    file: String,
    function: String,
    lines: Vec<Range>,
}

/// Each code object seen, by what identifies it; `None` where it could not be read.
static CACHE: Mutex<Option<HashMap<CodeKey, Option<Code>>>> = Mutex::new(None);

/// The frames as the trace holds them, innermost first; a frame whose code object cannot be read is left out.
/// Where every code object is cached, the cache is locked once; a new one is read outside the lock.
pub fn decode(reader: &Reader, frames: &[RawFrame]) -> Vec<PyFrame> {
    let mut missing: Vec<CodeKey> = Vec::new();
    {
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        let map = cache.get_or_insert_with(HashMap::new);
        let out = frames_of(map, frames, &mut missing);
        if missing.is_empty() {
            return out;
        }
    }
    missing.sort_unstable_by_key(|k| k.code);
    missing.dedup();
    let pid = memory::pid();
    let read: Vec<(CodeKey, Option<Code>)> = missing.iter().map(|k| (*k, read(reader, pid, k))).collect();
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let map = cache.get_or_insert_with(HashMap::new);
    if map.len() + read.len() > CACHE_MAX {
        map.clear();
    }
    // A code object that cannot be read is remembered as such: it costs no second try per call.
    map.extend(read);
    frames_of(map, frames, &mut Vec::new())
}

/// The frames whose code objects are cached; the others' keys are pushed onto `missing`.
fn frames_of(map: &HashMap<CodeKey, Option<Code>>, frames: &[RawFrame], missing: &mut Vec<CodeKey>) -> Vec<PyFrame> {
    let mut out = Vec::with_capacity(frames.len());
    for f in frames {
        match map.get(&f.key) {
            Some(Some(code)) => out.push(PyFrame {
                file: code.file.clone(),
                line: linetable::line_at(&code.lines, f.key.first_line, f.lasti),
                function: code.function.clone(),
            }),
            Some(None) => {}
            None => missing.push(f.key),
        }
    }
    out
}

/// Empties the cache (to measure decoding a code object for the first time).
pub fn forget() {
    *CACHE.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

fn read(reader: &Reader, pid: libc::pid_t, key: &CodeKey) -> Option<Code> {
    let table = bytes(reader, pid, key.linetable)?;
    Some(Code {
        file: string(reader, pid, key.filename)?,
        function: string(reader, pid, key.name)?,
        lines: linetable::ranges(reader.layout.lines, &table, key.first_line),
    })
}

/// A `str` object's text: compact strings only (the names of code objects are).
fn string(reader: &Reader, pid: libc::pid_t, at: usize) -> Option<String> {
    let l = &reader.layout;
    let mut head = [0u8; 128];
    let head = head.get_mut(..l.str_compact_size)?;
    if !memory::read(pid, at, head) || word(head, l.ob_type) != reader.unicode_type {
        return None;
    }
    let len = word(head, l.str_length).min(NAME_MAX);
    let state = int(head, l.str_state) as u32;
    let (kind, compact, ascii) = ((state >> 2) & 7, (state >> 5) & 1 == 1, (state >> 6) & 1 == 1);
    if !compact || !matches!(kind, 1 | 2 | 4) {
        return None;
    }
    let data = if ascii { l.str_ascii_size } else { l.str_compact_size };
    let mut text = vec![0u8; len * kind as usize];
    if !memory::read(pid, at.wrapping_add(data), &mut text) {
        return None;
    }
    Some(match kind {
        1 => text.iter().map(|&b| b as char).collect(),
        2 => text.chunks_exact(2).map(|c| u16::from_ne_bytes([c[0], c[1]]) as u32).filter_map(char::from_u32).collect(),
        _ => text
            .chunks_exact(4)
            .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .filter_map(char::from_u32)
            .collect(),
    })
}

/// A `bytes` object's content.
fn bytes(reader: &Reader, pid: libc::pid_t, at: usize) -> Option<Vec<u8>> {
    let l = &reader.layout;
    let mut head = [0u8; 64];
    let head = head.get_mut(..l.bytes_data)?;
    if !memory::read(pid, at, head) || word(head, l.ob_type) != reader.bytes_type {
        return None;
    }
    let len = word(head, l.bytes_size);
    if len > TABLE_MAX {
        return None;
    }
    let mut data = vec![0u8; len];
    memory::read(pid, at.wrapping_add(l.bytes_data), &mut data).then_some(data)
}
