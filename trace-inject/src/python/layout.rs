//! Where each field the frame reader needs sits in the interpreter's structures: for 3.10 to 3.12 the offsets
//! of the version's own headers (`Include/cpython/pystate.h`, `frameobject.h`, `code.h`,
//! `Include/internal/pycore_frame.h`, x86-64 and aarch64 alike, identical across a version's releases), for
//! 3.13 and later the `_Py_DebugOffsets` table the interpreter keeps at the start of `_PyRuntime` for
//! debuggers and profilers. Only builds with the GIL (a free-threaded build lays its objects out otherwise).

use super::linetable::Format;
use super::memory::word;

/// How an interpreter frame says which instruction it is at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Instr {
    /// 3.10: `f_lasti`, an `int` index of code units.
    Index,
    /// 3.11 and later: a pointer into the code object's bytecode (`co_code_adaptive`).
    Pointer,
}

/// Where the thread holding the GIL is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GilAt {
    /// 3.10 and 3.11: `_PyThreadState_UncheckedGet()` answers the runtime's `gilstate.tstate_current`, the
    /// thread state holding the GIL (null while none does), from any thread.
    Function,
    /// 3.12: the interpreter's `ceval.gil` (at this offset) points to its `_gil_runtime_state`, whose
    /// `last_holder` (8) is the holder while `locked` (16) is set.
    Pointer { at: usize },
    /// 3.13 and later: the interpreter's own `_gil`'s `last_holder` and `locked`, at these offsets of the
    /// interpreter (`_Py_DebugOffsets`).
    Embedded { holder: usize, locked: usize },
}

/// The offsets the reader uses, in bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    // The interpreter.
    /// Where the interpreter keeps its first thread state (3.10 `tstate_head`, later `threads.head`).
    pub is_threads_head: usize,
    pub gil: GilAt,
    // The thread state.
    /// The next thread state of the interpreter's list, and the interpreter the state belongs to.
    pub ts_next: usize,
    pub ts_interp: usize,
    /// `thread_id`: the thread's `pthread_t`.
    pub ts_thread_id: usize,
    /// `native_thread_id`, the system's id of the thread (3.11 and later).
    pub ts_native_id: Option<usize>,
    /// The innermost frame's pointer (3.10 `frame`, 3.13 `current_frame`), or of the `_PyCFrame` that holds
    /// it (3.11 and 3.12 `cframe`).
    pub ts_frame: usize,
    /// In 3.11 and 3.12: where `_PyCFrame` holds `current_frame`.
    pub cframe_current: Option<usize>,
    /// The thread's current data-stack chunk (`datastack_chunk`, 3.11 and later), where its frames live.
    pub ts_chunk: Option<usize>,
    // The frame (`PyFrameObject` in 3.10, `_PyInterpreterFrame` after).
    pub f_previous: usize,
    pub f_code: usize,
    /// 3.10: the frame object's reference count, 0 once it is freed (kept for reuse by its code object or on
    /// the free list, its fields as they were): a frame read with none is not on any thread's chain.
    pub f_refcnt: Option<usize>,
    /// The function object the frame runs (3.11 `f_func`, 3.12 `f_funcobj`): with the frame's address and
    /// its code object, what says a frame is the one read before.
    pub f_func: Option<usize>,
    pub f_instr: usize,
    pub instr: Instr,
    /// Who owns the frame (3.11 and later).
    pub f_owner: Option<usize>,
    /// Frames whose owner is this or more are the interpreter's entry frames, not the program's (3.12 and
    /// later: owned by the C stack, 3.14: by the interpreter).
    pub skip_owner_from: Option<u8>,
    // Objects.
    pub ob_type: usize,
    pub co_filename: usize,
    pub co_name: usize,
    pub co_linetable: usize,
    pub co_firstlineno: usize,
    /// The code object's size in code units (`ob_size`, 3.11 and later: its bytecode is inline).
    pub co_units: Option<usize>,
    /// Where the bytecode starts in a code object (3.11 and later).
    pub co_code: Option<usize>,
    pub lines: Format,
    pub str_state: usize,
    pub str_length: usize,
    /// `sizeof(PyASCIIObject)`: where a compact ASCII string's characters start.
    pub str_ascii_size: usize,
    /// `sizeof(PyCompactUnicodeObject)`: where a compact non-ASCII string's characters start.
    pub str_compact_size: usize,
    pub bytes_size: usize,
    pub bytes_data: usize,
}

/// The bytes of a frame the walk copies, from [`Layout::frame_span`]'s first byte.
pub const FRAME_SPAN_MAX: usize = 128;
/// The bytes of a code object the walk copies, from [`Layout::code_span`]'s first byte.
pub const CODE_SPAN_MAX: usize = 256;
/// The bytes of a thread state the walk copies.
pub const TSTATE_SPAN_MAX: usize = 512;

impl Layout {
    /// 3.10 (`PyFrameObject` frames on the heap).
    pub fn v3_10() -> Layout {
        Layout {
            is_threads_head: 8,
            gil: GilAt::Function,
            ts_next: 8,
            ts_interp: 16,
            ts_thread_id: 176,
            ts_native_id: None,
            ts_frame: 24,
            cframe_current: None,
            ts_chunk: None,
            f_previous: 24,
            f_code: 32,
            f_refcnt: Some(0),
            f_func: None,
            f_instr: 96,
            instr: Instr::Index,
            f_owner: None,
            skip_owner_from: None,
            ob_type: 8,
            co_filename: 104,
            co_name: 112,
            co_linetable: 120,
            co_firstlineno: 40,
            co_units: None,
            co_code: None,
            lines: Format::Pairs,
            str_state: 32,
            str_length: 16,
            str_ascii_size: 48,
            str_compact_size: 72,
            bytes_size: 16,
            bytes_data: 32,
        }
    }

    /// 3.11 (`_PyInterpreterFrame` in the thread's data stack, reached through `cframe`).
    pub fn v3_11() -> Layout {
        Layout {
            is_threads_head: 16,
            ts_thread_id: 152,
            ts_native_id: Some(160),
            ts_frame: 56,
            cframe_current: Some(8),
            ts_chunk: Some(296),
            f_previous: 48,
            f_code: 32,
            f_refcnt: None,
            f_func: Some(0),
            f_instr: 56,
            instr: Instr::Pointer,
            f_owner: Some(69),
            skip_owner_from: None,
            co_filename: 112,
            co_name: 120,
            co_linetable: 136,
            co_firstlineno: 72,
            co_units: Some(16),
            co_code: Some(184),
            lines: Format::Locations,
            ..Layout::v3_10()
        }
    }

    /// 3.12 (the entry frames of the C stack, owner 3, are skipped; strings lost their `wstr`).
    pub fn v3_12() -> Layout {
        Layout {
            is_threads_head: 72,
            gil: GilAt::Pointer { at: 384 },
            ts_thread_id: 136,
            ts_native_id: Some(144),
            ts_frame: 56,
            cframe_current: Some(0),
            ts_chunk: Some(232),
            f_previous: 8,
            f_code: 0,
            f_refcnt: None,
            f_func: Some(16),
            f_instr: 56,
            f_owner: Some(70),
            skip_owner_from: Some(3),
            co_firstlineno: 68,
            co_code: Some(192),
            str_ascii_size: 40,
            str_compact_size: 56,
            ..Layout::v3_11()
        }
    }

    /// 3.13 and 3.14 from the interpreter's `_Py_DebugOffsets` (`table`: its bytes, `minor`: the version the
    /// table says it is of). Its sections move between versions (each adds fields); within one they do not.
    pub fn from_debug_offsets(table: &[u8], minor: u8) -> Result<Layout, String> {
        // Where the sections the reader needs begin in the table, per version (`Include/internal/
        // pycore_runtime.h` in 3.13, `pycore_debug_offsets.h` in 3.14): thread state, interpreter frame,
        // code object, object, bytes, unicode.
        // The interpreter's section begins at 48 in both; in 3.14 `threads_main` after `threads_head` moves the
        // GIL's fields one on.
        let (interp, gil_field) = (48, if minor == 13 { 11 } else { 12 });
        let (thread, frame, code, object, bytes, unicode) = match minor {
            13 => (152, 224, 272, 352, 512, 536),
            14 => (176, 248, 312, 400, 592, 616),
            _ => return Err(format!("no layout of the debug offsets table of 3.{minor}")),
        };
        if table.len() < unicode + 32 {
            return Err("the debug offsets table is shorter than its version's".into());
        }
        let at = |section: usize, field: usize| word(table, section + 8 * field);
        let size_of = |section: usize| at(section, 0);
        let layout = Layout {
            is_threads_head: at(interp, 3),
            gil: GilAt::Embedded { holder: at(interp, gil_field + 1), locked: at(interp, gil_field) },
            ts_next: at(thread, 2),
            ts_interp: at(thread, 3),
            ts_thread_id: at(thread, 5),
            ts_native_id: Some(at(thread, 6)),
            ts_frame: at(thread, 4),
            cframe_current: None,
            ts_chunk: Some(at(thread, 7)),
            f_previous: at(frame, 1),
            f_code: at(frame, 2),
            f_refcnt: None,
            f_func: None,
            f_instr: at(frame, 3),
            instr: Instr::Pointer,
            f_owner: Some(at(frame, 5)),
            skip_owner_from: Some(3),
            ob_type: at(object, 1),
            co_filename: at(code, 1),
            co_name: at(code, 2),
            co_linetable: at(code, 4),
            co_firstlineno: at(code, 5),
            // A variable-size object's `ob_size` follows its type (`PyObject_VAR_HEAD`).
            co_units: Some(at(object, 1) + 8),
            co_code: Some(at(code, 9)),
            lines: Format::Locations,
            str_state: at(unicode, 1),
            str_length: at(unicode, 2),
            str_ascii_size: at(unicode, 3),
            str_compact_size: at(unicode, 3) + 16,
            bytes_size: at(bytes, 1),
            bytes_data: at(bytes, 2),
        };
        // What the table says must fit inside the structures it describes, and the spans the walk copies.
        let inside = |offset: usize, width: usize, size: usize| offset + width <= size;
        let checks = [
            inside(layout.is_threads_head, 8, size_of(interp)),
            inside(at(interp, gil_field), 4, size_of(interp)),
            inside(at(interp, gil_field + 1), 8, size_of(interp)),
            inside(layout.ts_next, 8, size_of(thread)),
            inside(layout.ts_interp, 8, size_of(thread)),
            inside(layout.ts_thread_id, 8, size_of(thread)),
            inside(at(thread, 6), 8, size_of(thread)),
            inside(layout.ts_frame, 8, size_of(thread)),
            inside(at(thread, 7), 8, size_of(thread)),
            inside(layout.f_previous, 8, size_of(frame)),
            inside(layout.f_code, 8, size_of(frame)),
            inside(layout.f_instr, 8, size_of(frame)),
            inside(at(frame, 5), 1, size_of(frame)),
            inside(layout.co_filename, 8, size_of(code)),
            inside(layout.co_name, 8, size_of(code)),
            inside(layout.co_linetable, 8, size_of(code)),
            inside(layout.co_firstlineno, 4, size_of(code)),
            at(code, 9) <= size_of(code),
            inside(layout.ob_type, 8, size_of(object)),
            layout.str_ascii_size >= 24 && layout.str_ascii_size <= 128,
            inside(layout.str_state, 4, layout.str_ascii_size),
            inside(layout.str_length, 8, layout.str_ascii_size),
            inside(layout.bytes_size, 8, size_of(bytes)),
            layout.bytes_data <= size_of(bytes),
            layout.frame_span().1 <= FRAME_SPAN_MAX,
            layout.code_span().1 <= CODE_SPAN_MAX,
            layout.tstate_span().1 <= TSTATE_SPAN_MAX,
        ];
        if checks.iter().all(|&ok| ok) {
            Ok(layout)
        } else {
            Err("the debug offsets table does not describe structures the reader can read".into())
        }
    }

    /// The first byte and length of a frame the walk copies.
    pub fn frame_span(&self) -> (usize, usize) {
        let instr = (self.f_instr, if self.instr == Instr::Index { 4 } else { 8 });
        span(&[
            Some((self.f_previous, 8)),
            Some((self.f_code, 8)),
            Some(instr),
            self.f_owner.map(|o| (o, 1)),
            self.f_func.map(|f| (f, 8)),
            self.f_refcnt.map(|f| (f, 8)),
        ])
    }

    /// The first byte and length of a code object the walk copies (its type, names, table and first line).
    pub fn code_span(&self) -> (usize, usize) {
        span(&[
            Some((self.ob_type, 8)),
            Some((self.co_filename, 8)),
            Some((self.co_name, 8)),
            Some((self.co_linetable, 8)),
            Some((self.co_firstlineno, 4)),
            self.co_units.map(|u| (u, 8)),
        ])
    }

    /// The first byte and length of a thread state the walk copies (its place in the interpreter's list, its
    /// ids, its frame or `cframe`, its chunk).
    pub fn tstate_span(&self) -> (usize, usize) {
        span(&[
            Some((self.ts_frame, 8)),
            Some((self.ts_next, 8)),
            Some((self.ts_interp, 8)),
            Some((self.ts_thread_id, 8)),
            self.ts_chunk.map(|c| (c, 8)),
            self.ts_native_id.map(|n| (n, 8)),
        ])
    }
}

/// The smallest range covering every (offset, width) given; computed on every read, so without allocating.
fn span(fields: &[Option<(usize, usize)>]) -> (usize, usize) {
    let fields = fields.iter().flatten();
    let lo = fields.clone().map(|f| f.0).min().unwrap_or(0);
    let hi = fields.map(|f| f.0 + f.1).max().unwrap_or(0);
    (lo, hi - lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_known_layouts_fit_the_spans_the_walk_copies() {
        for l in [Layout::v3_10(), Layout::v3_11(), Layout::v3_12()] {
            assert!(l.frame_span().1 <= FRAME_SPAN_MAX, "{l:?}");
            assert!(l.code_span().1 <= CODE_SPAN_MAX, "{l:?}");
            assert!(l.tstate_span().1 <= TSTATE_SPAN_MAX, "{l:?}");
        }
        // 3.11's frame: f_func at 0 to its owner at 69.
        assert_eq!(Layout::v3_11().frame_span(), (0, 70));
        // 3.12's thread state: `next` at 8 to `datastack_chunk` at 232.
        assert_eq!(Layout::v3_12().tstate_span(), (8, 232));
    }

    /// The sections of the table CPython 3.13.0 fills (x86-64, with the GIL: its values read from a running
    /// 3.13.0), read back into the 3.13 layout.
    #[test]
    fn a_3_13_debug_offsets_table_reads_as_its_fields() {
        let mut t = vec![0u8; 584];
        let mut put = |at: usize, v: u64| t[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        // interpreter state: size, id, next, threads_head, gc, imports_modules, sysdict, builtins, ceval_gil,
        // gil_runtime_state, gil_runtime_state_enabled, gil_runtime_state_locked, gil_runtime_state_holder
        for (i, v) in [194968, 0, 8, 7344, 0, 0, 0, 0, 16, 7752, 0, 7768, 7760].into_iter().enumerate() {
            put(48 + 8 * i, v);
        }
        // thread state: size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk,
        // status
        for (i, v) in [304, 0, 8, 16, 72, 152, 160, 232, 32].into_iter().enumerate() {
            put(152 + 8 * i, v);
        }
        // interpreter frame: size, previous, executable, instr_ptr, localsplus, owner
        for (i, v) in [80, 8, 0, 56, 72, 70].into_iter().enumerate() {
            put(224 + 8 * i, v);
        }
        // code object: size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
        // localspluskinds, co_code_adaptive
        for (i, v) in [208, 112, 120, 128, 136, 68, 52, 96, 104, 200].into_iter().enumerate() {
            put(272 + 8 * i, v);
        }
        put(352, 16);
        put(360, 8);
        for (i, v) in [40, 16, 32].into_iter().enumerate() {
            put(512 + 8 * i, v);
        }
        for (i, v) in [64, 32, 16, 40].into_iter().enumerate() {
            put(536 + 8 * i, v);
        }
        let l = Layout::from_debug_offsets(&t, 13).unwrap();
        assert_eq!((l.ts_frame, l.ts_chunk, l.f_previous, l.f_code, l.f_instr), (72, Some(232), 8, 0, 56));
        assert_eq!((l.co_filename, l.co_linetable, l.co_firstlineno, l.co_code), (112, 136, 68, Some(200)));
        assert_eq!((l.str_ascii_size, l.str_compact_size, l.bytes_data), (40, 56, 32));
        assert_eq!((l.is_threads_head, l.gil), (7344, GilAt::Embedded { holder: 7760, locked: 7768 }));
        assert_eq!((l.ts_next, l.ts_interp, l.ts_native_id, l.co_units), (8, 16, Some(160), Some(16)));
        assert!(Layout::from_debug_offsets(&t, 15).is_err());
        // A table whose offsets lie outside their structures is refused.
        t[224..232].copy_from_slice(&8u64.to_ne_bytes());
        assert!(Layout::from_debug_offsets(&t, 13).is_err());
    }
}
