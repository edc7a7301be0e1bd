//! CUPTI's activity buffers, made ready before CUPTI asks: CUPTI asks for one on the program's thread (in the
//! middle of a launch, when the one it fills is full), so the buffer it gets is taken from a pool, already
//! allocated and its pages already touched (a fresh allocation of a megabyte is mapped lazily, and each first
//! write to one of its pages would fault on the program's thread). A buffer the library's thread has read is
//! put back in the pool rather than freed; the pool is kept at [`KEEP`] buffers, filled again on the library's
//! thread ([`fill`], on each flush), never on the program's.

use std::alloc::Layout;
use std::sync::Mutex;

/// Buffers kept ready.
const KEEP: usize = 4;

/// A buffer of ours, not in CUPTI's hands.
struct Buffer(*mut u8);

// SAFETY: a buffer in the pool belongs to no one else: whichever thread takes it out may use it.
unsafe impl Send for Buffer {}

/// The ready buffers, and their size.
static POOL: Mutex<(Vec<Buffer>, usize)> = Mutex::new((Vec::new(), 0));

fn layout(size: usize) -> Option<Layout> {
    Layout::from_size_align(size, 8).ok().filter(|l| l.size() > 0)
}

/// A new buffer of `size` bytes, each page written once (null where memory ran out).
fn fresh(size: usize) -> *mut u8 {
    let Some(l) = layout(size) else { return std::ptr::null_mut() };
    // SAFETY: a layout of non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(l) };
    if !p.is_null() {
        for at in (0..size).step_by(4096) {
            // SAFETY: `at < size`, inside the allocation; a volatile write is not optimized away, so the page is
            // mapped now, on this thread.
            unsafe { p.add(at).write_volatile(0) };
        }
    }
    p
}

/// Fills the pool up to [`KEEP`] buffers of `size` bytes (on the library's threads; at the start, on the thread
/// that subscribes).
pub fn fill(size: usize) {
    let missing = {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if pool.1 != size {
            // The size changed (it is set once, at the start): the pool starts again.
            let old = pool.1;
            for b in pool.0.drain(..) {
                // SAFETY: made by `fresh` with the pool's old size, in no one's hands.
                unsafe { free(b.0, old) };
            }
            pool.1 = size;
        }
        KEEP.saturating_sub(pool.0.len())
    };
    for _ in 0..missing {
        let p = fresh(size);
        if p.is_null() {
            return;
        }
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if pool.1 == size && pool.0.len() < KEEP {
            pool.0.push(Buffer(p));
        } else {
            drop(pool);
            // SAFETY: just made with `size`, in no one's hands.
            unsafe { free(p, size) };
        }
    }
}

/// A buffer for CUPTI, and its size: from the pool, or made now where the pool is empty or busy.
pub fn take(size: usize) -> (*mut u8, usize) {
    if let Ok(mut pool) = POOL.try_lock() {
        if pool.1 == size {
            if let Some(b) = pool.0.pop() {
                return (b.0, size);
            }
        }
    }
    (fresh(size), size)
}

/// A buffer CUPTI handed back and the library read: back into the pool, or freed where it is full.
///
/// # Safety
/// `p` was returned by [`take`] with `size`, CUPTI is done with it, and it is given back once.
pub unsafe fn give_back(p: *mut u8, size: usize) {
    if p.is_null() {
        return;
    }
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if pool.1 == size && pool.0.len() < KEEP {
        pool.0.push(Buffer(p));
        return;
    }
    drop(pool);
    // SAFETY: the caller's promise.
    unsafe { free(p, size) };
}

/// # Safety
/// `p` was allocated by `fresh` with `size` and is not used again.
unsafe fn free(p: *mut u8, size: usize) {
    if let Some(l) = layout(size) {
        // SAFETY: the caller's promise: allocated with this layout.
        unsafe { std::alloc::dealloc(p, l) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_from_the_pool_and_go_back_to_it() {
        let size = 64 << 10;
        fill(size);
        let (a, n) = take(size);
        assert!(!a.is_null());
        assert_eq!(n, size);
        // SAFETY: `a` is ours, `size` bytes long.
        unsafe { a.add(size - 1).write(7) };
        // SAFETY: taken above, given back once.
        unsafe { give_back(a, size) };
        let (b, _) = take(size);
        // The buffer given back is the next one taken.
        assert_eq!(a, b);
        // SAFETY: as above.
        unsafe { give_back(b, size) };
        // More than the pool holds: the rest are made on the spot and freed when given back.
        let taken: Vec<_> = (0..KEEP + 2).map(|_| take(size).0).collect();
        assert!(taken.iter().all(|p| !p.is_null()));
        for p in taken {
            // SAFETY: each taken once, given back once.
            unsafe { give_back(p, size) };
        }
        assert_eq!(POOL.lock().unwrap().0.len(), KEEP);
    }
}
