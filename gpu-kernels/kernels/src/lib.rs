//! The kernels of async-lab, compiled to one PTX module by `cargo xtask build-ptx`.
//!
//! Their names and parameter lists are the ABI that the host program relies on (it launches them by name with
//! `cust`); `cargo xtask test` snapshots them. They are deliberately simple: most exist to keep the GPU busy
//! for a known time, or to produce data whose correctness the host can check byte for byte.

#![no_std]
#![feature(abi_ptx)]
#![deny(unsafe_op_in_unsafe_fn)]

mod pattern;

use core::sync::atomic::{AtomicU64, Ordering};

use nvptx_helpers::misc::{clock64, globaltimer};
use nvptx_helpers::thread::{block_dim_x, grid_dim_x, index_1d};
use pattern::{checksum_term, pattern_byte};

/// Keeps every thread busy for at least `cycles` SM clock cycles, then writes the cycles it actually waited to
/// `out[index_1d()]`. The host checks them (all at least `cycles`, and within 1%) and times the kernel.
///
/// # Safety
/// `out` must be valid for writes of `grid size * block size` `u64`s (1-D launch).
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn spin_sleep(cycles: u64, out: *mut u64) {
    let start = clock64();
    let mut waited = 0;
    while waited < cycles {
        waited = clock64().wrapping_sub(start);
    }
    // SAFETY: the caller guarantees one slot per thread of the 1-D launch, and `index_1d()` is below that count.
    unsafe { out.add(index_1d() as usize).write(waited) };
}

/// The "blocker" of the experiments, launched `<<<1, 1>>>`: spins on `%globaltimer` until at least `ns`
/// nanoseconds have passed. If `stamps` is not null, thread 0 writes the start and end timer values to
/// `stamps[0]` and `stamps[1]`, so the host can place the kernel on its own timeline.
///
/// # Safety
/// `stamps` is null, or valid for writes of two `u64`s.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn spin_wait_ns(ns: u64, stamps: *mut u64) {
    let start = globaltimer();
    let mut end = start;
    while end.wrapping_sub(start) < ns {
        end = globaltimer();
    }
    if !stamps.is_null() && index_1d() == 0 {
        // SAFETY: `stamps` is not null here, so the caller guarantees it is valid for two `u64` writes; only one
        // thread writes.
        unsafe {
            stamps.write(start);
            stamps.add(1).write(end);
        }
    }
}

/// Does nothing: for measuring launch overhead and filling the launch queue.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn empty() {}

/// Writes `pattern_byte(i, seed)` to `dst[i]` for every `i < len` (grid-stride loop), so that the host can check a
/// copy of the buffer byte for byte or by `checksum`.
///
/// # Safety
/// `dst` must be valid for writes of `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn fill(dst: *mut u8, len: u64, seed: u32) {
    let stride = u64::from(block_dim_x()) * u64::from(grid_dim_x());
    let mut i = u64::from(index_1d());
    while i < len {
        // SAFETY: `i < len` and the caller guarantees `len` writable bytes at `dst`.
        unsafe { dst.add(i as usize).write(pattern_byte(i, seed)) };
        i += stride;
    }
}

/// Adds `checksum_term(i, src[i])` over every `i < len` (grid-stride loop, wrapping) into `out[0]`, with one
/// atomic add per thread. The host zeroes `out[0]` first and compares it with the sum it computes itself: a
/// device-side check that a copy arrived whole, in place and in order.
///
/// # Safety
/// `src` must be valid for reads of `len` bytes, and `out` for atomic access to one 8-byte aligned `u64` that
/// nothing else accesses non-atomically during the launch.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn checksum(src: *const u8, len: u64, out: *mut u64) {
    let stride = u64::from(block_dim_x()) * u64::from(grid_dim_x());
    let mut i = u64::from(index_1d());
    let mut sum = 0u64;
    while i < len {
        // SAFETY: `i < len` and the caller guarantees `len` readable bytes at `src`.
        let byte = unsafe { src.add(i as usize).read() };
        sum = sum.wrapping_add(checksum_term(i, byte));
        i += stride;
    }
    // SAFETY: the caller guarantees `out` is aligned, valid, and only accessed atomically during the launch,
    // which is what `AtomicU64::from_ptr` requires.
    let total = unsafe { AtomicU64::from_ptr(out) };
    total.fetch_add(sum, Ordering::Relaxed);
}

/// Thread 0 writes the device's `%globaltimer` (ns) to `out[0]`: the host brackets the launch with its own clock
/// to line the GPU's timeline up with the host's.
///
/// # Safety
/// `out` must be valid for a write of one `u64`.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn write_globaltimer(out: *mut u64) {
    if index_1d() == 0 {
        // SAFETY: the caller guarantees one writable `u64` at `out`; only one thread writes.
        unsafe { out.write(globaltimer()) };
    }
}
