//! The calling thread's Python frames, read without the GIL: PyTorch, JAX and CuPy release it around their
//! CUDA calls, and its holder may be waiting on a lock the very call we are in holds, so it is never taken
//! and no CPython function that needs it is called. The thread's state comes from
//! `PyGILState_GetThisThreadState` (a thread-specific slot); its frames are read the way out-of-process
//! profilers and `faulthandler` read them (`walk`: 3.10 to 3.12 by each version's layout, 3.13 and later
//! through the interpreter's `_Py_DebugOffsets` table), by reads that cannot fault (`memory`), and decoded
//! through a cache per code object (`code`, `linetable`).
//!
//! Written here rather than taken from the `py-spy` crate: py-spy's library reads another process (it
//! finds the interpreter by parsing its binary, may pause it, allocates per sample and brings a large
//! dependency tree); a CUDA callback needs one thread's frames of its own process in microseconds.

mod code;
mod export;
mod layout;
mod linetable;
mod memory;
mod reader;
mod runtime;
mod walk;

use async_lab_trace_format::{Gil, PyFrame, PythonSetup};

/// Whether the thread holds the GIL (for information), and its frames, innermost first.
pub fn frames() -> (Gil, Vec<PyFrame>) {
    let Some(py) = runtime::interp() else { return (Gil::NoPython, Vec::new()) };
    if !py.initialized() {
        return (Gil::NotHeld, Vec::new());
    }
    let gil = if py.gil_held() { Gil::Held } else { Gil::NotHeld };
    let Ok(reader) = &py.reader else { return (gil, Vec::new()) };
    let raw = walk::capture(reader, py.this_thread_state());
    (gil, code::decode(reader, raw.frames()))
}

/// The interpreter in the process and how its frames are read, for the trace's setup line; `None` where
/// the process runs no Python.
pub fn setup() -> Option<PythonSetup> {
    runtime::interp().map(runtime::Interp::setup)
}
