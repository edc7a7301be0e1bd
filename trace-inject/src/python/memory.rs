//! Reads of the process's own memory that cannot fault. The interpreter's structures are read without the
//! GIL, so a pointer may be stale or the layout wrong: `process_vm_readv` on the process's own pid answers
//! EFAULT for an address that is not mapped, where a plain load would crash the program. The one exception is
//! this thread's own stack above the current frame, which is mapped while we run on it and read directly
//! (CPython 3.12 and later keep the frame that enters the interpreter from C there).

use std::cell::Cell;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

/// The most parts one [`read_many`] reads in one system call (well under the kernel's `IOV_MAX`, 1024).
pub const MAX_PARTS: usize = 64;

/// The process's id, asked for once and again in a child after `fork` (a child must read its own memory,
/// not its parent's): `getpid` is a system call, half a microsecond where system calls are slow.
pub fn pid() -> libc::pid_t {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        extern "C" fn forked() {
            // SAFETY: getpid takes no arguments and cannot fail.
            PID.store(unsafe { libc::getpid() }, Ordering::Relaxed);
        }
        forked();
        // SAFETY: `forked` is an `extern "C"` function without arguments that lives as long as the process
        // and only stores a number (async-signal-safe, as a child handler must be).
        unsafe { libc::pthread_atfork(None, None, Some(forked)) };
    });
    PID.load(Ordering::Relaxed)
}

static PID: AtomicI32 = AtomicI32::new(0);

/// The `process_vm_readv` calls made so far (for measuring what a read costs: `export`).
static CALLS: AtomicU64 = AtomicU64::new(0);

/// The `process_vm_readv` calls made so far by the process.
pub fn calls() -> u64 {
    CALLS.load(Ordering::Relaxed)
}

/// Copies `out.len()` bytes from `addr` into `out`; false where any of them is not readable.
pub fn read(pid: libc::pid_t, addr: usize, out: &mut [u8]) -> bool {
    if out.is_empty() {
        return true;
    }
    if on_own_stack(addr, out.len()) {
        // SAFETY: [addr, addr + len) lies between this frame's stack pointer and the top of this thread's
        // stack: frames of calls this thread is still inside, mapped and not written by any other thread
        // while we run. The bytes are copied as bytes, so any value is valid.
        unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, out.as_mut_ptr(), out.len()) };
        return true;
    }
    let local = libc::iovec { iov_base: out.as_mut_ptr().cast(), iov_len: out.len() };
    let remote = libc::iovec { iov_base: addr as *mut libc::c_void, iov_len: out.len() };
    CALLS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: `local` describes `out`, writable for its length; the remote range is only read by the kernel,
    // which answers EFAULT (not a fault) where it is not mapped.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    n == out.len() as isize
}

/// Copies several ranges in one system call: `parts[i]` is (address, destination). Returns how many parts,
/// from the first, were read whole (the kernel stops at the first range it cannot read).
pub fn read_many(pid: libc::pid_t, parts: &mut [(usize, &mut [u8])]) -> usize {
    let count = parts.len().min(MAX_PARTS);
    let parts = &mut parts[..count];
    let empty = libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 };
    let mut local = [empty; MAX_PARTS];
    let mut remote = [empty; MAX_PARTS];
    for (i, (addr, out)) in parts.iter_mut().enumerate() {
        local[i] = libc::iovec { iov_base: out.as_mut_ptr().cast(), iov_len: out.len() };
        remote[i] = libc::iovec { iov_base: *addr as *mut libc::c_void, iov_len: out.len() };
    }
    let count = count as libc::c_ulong;
    CALLS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: each local iovec describes one destination slice, writable for its length and alive for the
    // call; the remote ranges are only read, by the kernel, which stops at the first unmapped one.
    let n = unsafe { libc::process_vm_readv(pid, local.as_ptr(), count, remote.as_ptr(), count, 0) };
    if n < 0 {
        return 0;
    }
    let mut left = n as usize;
    let mut whole = 0;
    for (_, out) in parts.iter() {
        if left < out.len() {
            break;
        }
        left -= out.len();
        whole += 1;
    }
    whole
}

/// Whether `safe_reads_work`: some kernels or sandboxes refuse `process_vm_readv` (seccomp), and then no frame
/// is read at all.
pub fn safe_reads_work() -> Result<(), String> {
    let probe = 0x5eed_u64;
    let mut out = [0u8; 8];
    let local = libc::iovec { iov_base: out.as_mut_ptr().cast(), iov_len: 8 };
    let remote = libc::iovec { iov_base: (&probe as *const u64) as *mut libc::c_void, iov_len: 8 };
    // SAFETY: `local` describes `out`; the remote range is `probe`, alive and only read.
    let n = unsafe { libc::process_vm_readv(pid(), &local, 1, &remote, 1, 0) };
    if n == 8 && u64::from_ne_bytes(out) == probe {
        Ok(())
    } else {
        Err(format!("process_vm_readv on the process itself failed: {}", std::io::Error::last_os_error()))
    }
}

thread_local! {
    /// The top (highest address) of this thread's stack, 0 until asked.
    static STACK_TOP: Cell<usize> = const { Cell::new(0) };
}

/// Whether [addr, addr + len) lies on this thread's stack, above the caller's frame.
pub fn on_own_stack(addr: usize, len: usize) -> bool {
    let here = 0u8;
    let sp = &here as *const u8 as usize;
    let top = STACK_TOP.with(|t| {
        if t.get() == 0 {
            t.set(stack_top());
        }
        t.get()
    });
    addr > sp && addr.checked_add(len).is_some_and(|end| end <= top)
}

/// The top of the calling thread's stack, through `pthread_getattr_np` (0 where it cannot say).
fn stack_top() -> usize {
    // SAFETY: a zeroed pthread_attr_t is a valid place for pthread_getattr_np to fill; it is destroyed once
    // filled; the base and size written are plain numbers.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return 0;
        }
        let mut base: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let ok = libc::pthread_attr_getstack(&attr, &mut base, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        if ok {
            base as usize + size
        } else {
            0
        }
    }
}

/// A native pointer-sized word of `buf` at `at` (0 where `buf` is too short).
pub fn word(buf: &[u8], at: usize) -> usize {
    buf.get(at..at + 8).map_or(0, |b| usize::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
}

/// A native `int` of `buf` at `at` (0 where `buf` is too short).
pub fn int(buf: &[u8], at: usize) -> i32 {
    buf.get(at..at + 4).map_or(0, |b| i32::from_ne_bytes(b.try_into().unwrap_or([0; 4])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_range_is_read_and_an_unmapped_one_is_refused_without_a_fault() {
        safe_reads_work().unwrap();
        let data: Vec<u8> = (0..200u8).collect();
        let mut out = [0u8; 16];
        assert!(read(pid(), data.as_ptr() as usize + 10, &mut out));
        assert_eq!(out[0], 10);
        assert!(!read(pid(), 8, &mut out), "page 0 is never mapped");
        assert!(!read(pid(), usize::MAX - 4, &mut out));
    }

    #[test]
    fn several_ranges_are_read_whole_up_to_the_first_unreadable_one() {
        let a = [1u8; 8];
        let b = [2u8; 8];
        let (mut x, mut y, mut z) = ([0u8; 8], [0u8; 8], [0u8; 8]);
        let mut parts = [(a.as_ptr() as usize, &mut x[..]), (b.as_ptr() as usize, &mut y[..]), (16usize, &mut z[..])];
        assert_eq!(read_many(pid(), &mut parts), 2);
        assert_eq!((x, y), (a, b));
    }

    #[test]
    fn this_threads_own_stack_above_the_caller_is_read_directly() {
        let above = [7u8; 32];
        // `above` is in this test's frame, above `read`'s.
        assert!(on_own_stack(above.as_ptr() as usize, above.len()));
        let mut out = [0u8; 32];
        assert!(read(pid(), above.as_ptr() as usize, &mut out));
        assert_eq!(out, above);
        let heap = Box::new([0u8; 8]);
        assert!(!on_own_stack(heap.as_ptr() as usize, 8));
    }
}
