//! Code objects as the trace names them: file, function, line table and whether it is the program's own code,
//! read once per code object into a table where each has an id ([`resolve`]), so that a captured frame is
//! (id, instruction) and becomes a file, line and function only on the library's thread ([`frames_of`]).
//! A code object is known by its address and what identifies it ([`CodeKey`]: its file name's, name's and
//! line table's objects and its first line). Its own fields are read on the calling thread, right after the
//! walk: the code objects of the frames just copied are alive only while their frames are (each running frame
//! holds its code object); later, on another thread, the allocator may have given the address to something
//! else.
//!
//! Whether a code object is the program's own is the analysis's rule (`async_lab_trace_analysis::library_paths::
//! library_python`: outside `site-packages`, `dist-packages`, `lib/pythonX.Y` and `<frozen ...>`), decided
//! once per code object: a location's walk stops at the first such frame.

use super::linetable::{self, Range};
use super::memory::{self, int, word};
use super::reader::Reader;
use super::snapshot::Snapshot;
use super::walk::{Capture, CodeKey, MAX_FRAMES, NO_CODE};
use async_lab_trace_format::PyFrame;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, RwLock, RwLockReadGuard};

/// The longest file or function name read, in characters.
const NAME_MAX: usize = 4096;
/// The longest line table read, in bytes.
const TABLE_MAX: usize = 1 << 20;
/// The code objects the table holds at most; past it, frames of code objects not in it are left out (a
/// program that keeps making code). Ids stay valid for the whole run: records in flight name them.
const CODES_MAX: usize = 1 << 16;
/// Code objects closer than this are read as one range.
const MERGE_GAP: usize = 1024;
/// The longest range read for several code objects.
const MERGED_MAX: usize = 16 * 1024;

/// One code object, decoded.
pub struct Code {
    pub file: String,
    pub function: String,
    lines: Vec<Range>,
    first_line: i32,
    /// The program's own code (outside the installed packages and the interpreter's library).
    pub user: bool,
    /// Its bytecode's length in code units (0: not known).
    units: u32,
}

impl Code {
    /// The source line of code unit `lasti` (0: none).
    pub fn line(&self, lasti: i32) -> u32 {
        linetable::line_at(&self.lines, self.first_line, lasti)
    }

    /// Whether `lasti` can be an instruction of this code object and has a line: what another thread's frame,
    /// read while it ran, must show to be kept.
    pub fn plausible(&self, lasti: i32) -> bool {
        (self.units == 0 || lasti < self.units as i32) && self.line(lasti) != 0
    }
}

type Hasher = foldhash::fast::FixedState;

/// Every code object seen: by what identifies it, by its last address, and by id.
#[derive(Default)]
pub struct Table {
    by_key: HashMap<CodeKey, u32, Hasher>,
    by_addr: HashMap<usize, u32, Hasher>,
    /// `None`: a code object that could not be read (remembered so, to cost no second try).
    codes: Vec<Option<Code>>,
}

impl Table {
    /// Whether the code object last seen at `addr` is the program's own (`None`: none seen there).
    pub fn user_at(&self, addr: usize) -> Option<bool> {
        let id = *self.by_addr.get(&addr)?;
        Some(self.codes.get(id as usize)?.as_ref()?.user)
    }

    /// The code object of id `id`.
    pub fn code(&self, id: u32) -> Option<&Code> {
        self.codes.get(id as usize)?.as_ref()
    }
}

static TABLE: LazyLock<RwLock<Table>> = LazyLock::new(|| RwLock::new(Table::default()));
/// Bumped where the table is emptied (to measure a first read): captures of an older generation name ids
/// that no longer are.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The table, for reading.
pub fn table() -> RwLockReadGuard<'static, Table> {
    TABLE.read().unwrap_or_else(|e| e.into_inner())
}

/// The table's generation.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// Empties the table (to measure reading code objects for the first time).
pub fn forget() {
    let mut t = TABLE.write().unwrap_or_else(|e| e.into_inner());
    *t = Table::default();
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Gives every frame of `cap` whose code id is not known yet its id, reading its code object (through `snap`,
/// several in one system call), checking its type and decoding a code object seen for the first time; a frame
/// whose code object cannot be read, or is not a code object, is left out. With `strict` (another thread's
/// frames, read while it ran), a frame whose instruction is not one of its code object's, or has no line, is
/// taken as read in the middle of a change: it and the frames inside it are left out. Returns the frames kept.
pub fn resolve(reader: &Reader, snap: &mut Snapshot, cap: &mut Capture, strict: bool) -> usize {
    cap.generation = generation();
    let l = &reader.layout;
    let (clo, clen) = l.code_span();
    let unknown = |cap: &Capture| cap.frames().iter().any(|f| f.id == NO_CODE);
    if unknown(cap) {
        fetch_codes(snap, cap, clo, clen);
    }
    // The frames' code objects as read: (frame index, key, units) of those not known yet.
    let mut fresh = [(0usize, CodeKey::default(), 0u32); MAX_FRAMES];
    let mut n_fresh = 0;
    let mut span = [0u8; super::layout::CODE_SPAN_MAX];
    for (i, f) in cap.frames.iter_mut().enumerate().take(cap.len) {
        if f.id != NO_CODE {
            continue;
        }
        let c = &mut span[..clen];
        if !snap.peek(f.key.code.wrapping_add(clo), c) || word(c, l.ob_type - clo) != reader.code_type {
            continue;
        }
        f.key.filename = word(c, l.co_filename - clo);
        f.key.name = word(c, l.co_name - clo);
        f.key.linetable = word(c, l.co_linetable - clo);
        f.key.first_line = int(c, l.co_firstlineno - clo);
        let units = l.co_units.map_or(0, |u| word(c, u - clo).min(u32::MAX as usize) as u32);
        fresh[n_fresh] = (i, f.key, units);
        n_fresh += 1;
    }
    let fresh = &fresh[..n_fresh];
    let missing = {
        let t = table();
        let mut missing = false;
        for &(i, key, _) in fresh {
            match t.by_key.get(&key) {
                Some(&id) => cap.frames[i].id = id,
                None => missing = true,
            }
        }
        missing
    };
    if missing {
        add(reader, cap, fresh);
    }
    let t = table();
    let mut kept = 0;
    let mut torn = None;
    for i in 0..cap.len {
        let f = cap.frames[i];
        let Some(code) = (f.id != NO_CODE).then(|| t.code(f.id)).flatten() else { continue };
        let plausible = f.plausible || (strict && code.plausible(f.lasti));
        if strict && !plausible {
            torn = Some(kept);
        }
        cap.frames[kept] = f;
        cap.frames[kept].user = code.user;
        cap.frames[kept].plausible = plausible;
        kept += 1;
    }
    cap.len = kept;
    if let Some(torn) = torn {
        cap.drop_inner(torn + 1);
    }
    cap.len
}

/// Copies the code objects of the frames whose code id is not known yet, those near each other as one
/// range, in one system call.
fn fetch_codes(snap: &mut Snapshot, cap: &Capture, clo: usize, clen: usize) {
    let mut spans = [0usize; MAX_FRAMES];
    let mut n = 0;
    for f in cap.frames().iter().filter(|f| f.id == NO_CODE) {
        let at = f.key.code.wrapping_add(clo);
        if !snap.holds(at, clen) {
            spans[n] = at;
            n += 1;
        }
    }
    let spans = &mut spans[..n];
    spans.sort_unstable();
    let mut ranges = [(0usize, 0usize); MAX_FRAMES];
    let mut r = 0;
    for &s in spans.iter() {
        let end = s.saturating_add(clen);
        match ranges[..r].last_mut() {
            Some(last) if s <= last.1.saturating_add(MERGE_GAP) && end - last.0 <= MERGED_MAX => {
                last.1 = last.1.max(end)
            }
            _ => {
                ranges[r] = (s, end);
                r += 1;
            }
        }
    }
    snap.fetch_many(&ranges[..r]);
}

/// Reads and adds the code objects of `fresh` (frame index, key, units) not in the table yet, outside its lock,
/// and gives their frames their ids.
fn add(reader: &Reader, cap: &mut Capture, fresh: &[(usize, CodeKey, u32)]) {
    let mut keys: Vec<(CodeKey, u32)> = Vec::new();
    for &(i, key, units) in fresh {
        if cap.frames[i].id == NO_CODE && !keys.iter().any(|(k, _)| *k == key) {
            keys.push((key, units));
        }
    }
    let read: Vec<(CodeKey, Option<Code>)> = keys.iter().map(|k| k.0).zip(decode_all(reader, &keys)).collect();
    let mut t = TABLE.write().unwrap_or_else(|e| e.into_inner());
    for (key, code) in read {
        let id = match t.by_key.get(&key) {
            Some(&id) => id,
            None if t.codes.len() < CODES_MAX => {
                let id = t.codes.len() as u32;
                t.codes.push(code);
                t.by_key.insert(key, id);
                id
            }
            None => continue,
        };
        t.by_addr.insert(key.code, id);
        for f in cap.frames.iter_mut().take(cap.len).filter(|f| f.key == key) {
            f.id = id;
        }
    }
}

/// The frames as the trace holds them, innermost first, from (code id, instruction) pairs; a frame whose code
/// object could not be read is left out. Made on the library's thread, or in a signal handler's flush: there
/// the table's lock may be held by the very thread the handler interrupted (adding code objects), so it is
/// only tried, for a while, and the frames are left out where it cannot be had.
pub fn frames_of(frames: &[(u32, i32)], out: &mut Vec<PyFrame>) {
    let mut tries = 0;
    let t = loop {
        match TABLE.try_read() {
            Ok(t) => break t,
            Err(std::sync::TryLockError::Poisoned(e)) => break e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) if tries < 10_000 => {
                tries += 1;
                std::thread::yield_now();
            }
            Err(std::sync::TryLockError::WouldBlock) => return,
        }
    };
    out.extend(frames.iter().filter_map(|&(id, lasti)| {
        let code = t.code(id)?;
        Some(PyFrame { file: code.file.clone(), line: code.line(lasti), function: code.function.clone() })
    }));
}

/// Decodes code objects `keys` (with their bytecode's length): their file names, names and line tables read
/// for all of them at once, the objects' heads in one system call and their contents in another.
fn decode_all(reader: &Reader, keys: &[(CodeKey, u32)]) -> Vec<Option<Code>> {
    let l = &reader.layout;
    let pid = memory::pid();
    let heads: Vec<(usize, usize)> = keys
        .iter()
        .flat_map(|(k, _)| {
            [(k.filename, l.str_compact_size), (k.name, l.str_compact_size), (k.linetable, l.bytes_data)]
        })
        .collect();
    let heads_read = read_all(pid, &heads);
    // Each object's content: where, how many bytes, and for a string its characters' width.
    let contents: Vec<Option<(usize, usize, u32)>> = heads_read
        .iter()
        .enumerate()
        .map(|(i, head)| {
            let head = head.as_deref()?;
            if i % 3 == 2 {
                bytes_content(reader, heads[i].0, head)
            } else {
                string_content(reader, heads[i].0, head)
            }
        })
        .collect();
    let ranges: Vec<(usize, usize)> = contents.iter().map(|c| c.map_or((0, 0), |c| (c.0, c.1))).collect();
    let data = read_all(pid, &ranges);
    keys.iter()
        .enumerate()
        .map(|(i, (key, units))| {
            let text = |j: usize| Some(string_of(data[j].as_deref()?, contents[j]?.2));
            let file = text(3 * i)?;
            let table = data[3 * i + 2].as_deref().filter(|_| contents[3 * i + 2].is_some())?;
            Some(Code {
                user: !async_lab_trace_analysis::library_paths::library_python(&file),
                file,
                function: text(3 * i + 1)?,
                lines: linetable::ranges(l.lines, table, key.first_line),
                first_line: key.first_line,
                units: *units,
            })
        })
        .collect()
}

/// Reads every range (several per system call); `None` for a range that could not be read.
fn read_all(pid: libc::pid_t, ranges: &[(usize, usize)]) -> Vec<Option<Vec<u8>>> {
    let mut out: Vec<Option<Vec<u8>>> = ranges.iter().map(|r| Some(vec![0u8; r.1])).collect();
    let mut first = 0;
    while first < ranges.len() {
        let n = (ranges.len() - first).min(memory::MAX_PARTS);
        let mut parts: Vec<(usize, &mut [u8])> = ranges[first..first + n]
            .iter()
            .zip(out[first..first + n].iter_mut())
            .map(|(r, o)| (r.0, o.as_deref_mut().unwrap_or(&mut [])))
            .collect();
        let read = memory::read_many(pid, &mut parts);
        first += read;
        if read < n {
            // The kernel stopped at this range: left out, the ones after it read on.
            out[first] = None;
            first += 1;
        }
    }
    out
}

/// A `str` object's characters from its head (compact strings only: the names of code objects are): where,
/// how many bytes, and their width.
fn string_content(reader: &Reader, at: usize, head: &[u8]) -> Option<(usize, usize, u32)> {
    let l = &reader.layout;
    if word(head, l.ob_type) != reader.unicode_type {
        return None;
    }
    let len = word(head, l.str_length).min(NAME_MAX);
    let state = int(head, l.str_state) as u32;
    let (kind, compact, ascii) = ((state >> 2) & 7, (state >> 5) & 1 == 1, (state >> 6) & 1 == 1);
    if !compact || !matches!(kind, 1 | 2 | 4) {
        return None;
    }
    let data = if ascii { l.str_ascii_size } else { l.str_compact_size };
    Some((at.wrapping_add(data), len * kind as usize, kind))
}

/// A `bytes` object's content from its head: where and how many bytes.
fn bytes_content(reader: &Reader, at: usize, head: &[u8]) -> Option<(usize, usize, u32)> {
    let l = &reader.layout;
    if word(head, l.ob_type) != reader.bytes_type {
        return None;
    }
    let len = word(head, l.bytes_size);
    (len <= TABLE_MAX).then(|| (at.wrapping_add(l.bytes_data), len, 1))
}

/// A string's text from its characters of width `kind` (1, 2 or 4 bytes).
fn string_of(text: &[u8], kind: u32) -> String {
    match kind {
        1 => text.iter().map(|&b| b as char).collect(),
        2 => text.chunks_exact(2).map(|c| u16::from_ne_bytes([c[0], c[1]]) as u32).filter_map(char::from_u32).collect(),
        _ => text
            .chunks_exact(4)
            .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .filter_map(char::from_u32)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(user: bool, units: u32) -> Code {
        Code {
            file: "f.py".into(),
            function: "g".into(),
            lines: vec![Range { start: 0, end: 8, line: 3 }, Range { start: 8, end: 20, line: 4 }],
            first_line: 2,
            user,
            units,
        }
    }

    /// An instruction another thread's frame was read at must lie in its code object and have a line.
    #[test]
    fn an_instruction_outside_its_code_object_is_not_plausible() {
        let c = code(true, 10);
        assert!(c.plausible(0) && c.plausible(9));
        assert_eq!(c.line(5), 4);
        assert!(!c.plausible(10), "past the bytecode");
        assert!(!c.plausible(400));
        // Units unknown (3.10): the line table alone decides.
        assert!(code(true, 0).plausible(9));
        assert!(!code(true, 0).plausible(12));
        // Not begun: its first line.
        assert!(c.plausible(-1));
    }

    /// A table's code objects by address and id; one that could not be read answers nothing.
    #[test]
    fn the_table_answers_by_address_and_by_id() {
        let mut t = Table::default();
        t.codes.push(Some(code(false, 10)));
        t.codes.push(None);
        t.by_addr.insert(0x1000, 0);
        t.by_addr.insert(0x2000, 1);
        assert_eq!(t.user_at(0x1000), Some(false));
        assert_eq!(t.user_at(0x2000), None);
        assert_eq!(t.user_at(0x3000), None);
        assert_eq!(t.code(0).map(|c| c.line(5)), Some(4));
        assert!(t.code(1).is_none() && t.code(7).is_none());
    }
}
