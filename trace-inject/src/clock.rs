//! The clock of the hot path: CUPTI's (`cuptiGetTimestamp`, the clock of every time in the trace) in a traced
//! program; another where there is no CUPTI to ask (`cargo bench`, which calls the callbacks with data made by
//! hand on a machine without a GPU).

use std::sync::atomic::{AtomicUsize, Ordering};

/// The time source, as a `fn() -> u64` (0: CUPTI's).
static SOURCE: AtomicUsize = AtomicUsize::new(0);

/// The time now, in ns of the trace's clock.
#[inline]
pub fn now() -> u64 {
    match SOURCE.load(Ordering::Relaxed) {
        0 => crate::cupti::timestamp(),
        f => {
            // SAFETY: a non-zero SOURCE was stored by `set` from a `fn() -> u64`.
            let f: fn() -> u64 = unsafe { std::mem::transmute::<usize, fn() -> u64>(f) };
            f()
        }
    }
}

/// Takes the time from `source` instead of CUPTI (for the benchmark).
pub fn set(source: fn() -> u64) {
    SOURCE.store(source as usize, Ordering::Relaxed);
}
