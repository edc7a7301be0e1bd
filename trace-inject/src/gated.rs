//! Each thread's gate (`attach`'s blocks): the limit a thread set, and its calls that held it past that limit,
//! listed as they return (`callbacks` tells, on the hot path) until the block takes them.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, CStr};
use std::sync::atomic::{AtomicU64, Ordering};

/// How many held calls the gate has listed, on any thread: the Python side reads it (`ctypes`' `in_dll`) at
/// every return to Python, and asks its own thread's list only when it moved.
#[no_mangle]
pub static ASYNC_LAB_HELD: AtomicU64 = AtomicU64::new(0);

/// One call that held its thread longer than the gate's limit.
#[derive(Clone, Debug, PartialEq)]
pub struct Held {
    /// CUPTI's correlation id.
    pub corr: u32,
    /// The API function.
    pub name: String,
    /// When it began and returned (ns, CUPTI's clock).
    pub start: u64,
    pub end: u64,
}

thread_local! {
    /// This thread's gate: calls that hold longer than this many ns are listed; 0, none.
    static LIMIT: Cell<u64> = const { Cell::new(0) };
    /// This thread's calls listed and not yet taken.
    static HELD: RefCell<Vec<Held>> = const { RefCell::new(Vec::new()) };
}

/// Called by `callbacks` when a call returns on this thread (the outermost one: a runtime call, not the driver
/// calls inside it): listed where it held longer than the thread's gate. On the hot path: a thread without a
/// gate pays one thread-local read.
///
/// # Safety
/// `name` is null or a C string alive during the call.
pub unsafe fn returned(corr: u32, name: *const c_char, start: u64, end: u64) {
    let limit = LIMIT.try_with(Cell::get).unwrap_or(0);
    if limit == 0 || end.saturating_sub(start) <= limit {
        return;
    }
    let name = if name.is_null() {
        String::new()
    } else {
        // SAFETY: the caller's promise.
        unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
    };
    let held = Held { corr, name, start, end };
    if HELD.try_with(|h| h.borrow_mut().push(held)).is_ok() {
        ASYNC_LAB_HELD.fetch_add(1, Ordering::SeqCst);
    }
}

/// Sets this thread's gate: its calls that hold it longer than `limit_ns` are listed from now on; 0 stops.
pub fn set_limit(limit_ns: u64) {
    let _ = LIMIT.try_with(|l| l.set(limit_ns));
}

/// This thread's listed calls, taken (none where the thread is ending).
pub fn take() -> Vec<Held> {
    HELD.try_with(|h| std::mem::take(&mut *h.borrow_mut())).unwrap_or_default()
}
