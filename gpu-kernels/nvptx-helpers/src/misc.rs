//! Clocks, sleeping and aborting: the special registers and instructions that are not about thread indices.

use core::arch::asm;

/// Reads the per-SM cycle counter `%clock64`; `cuda_std::misc::clock` under its `cuda_std` name.
#[inline(always)]
pub fn clock() -> u64 {
    clock64()
}

/// Reads the per-SM 64-bit cycle counter `%clock64` (counts at the SM clock; not comparable across SMs).
#[inline(always)]
pub fn clock64() -> u64 {
    let cycles: u64;
    // SAFETY: `mov` from a read-only special register into the output register declared here. `%clock64`
    // exists on every PTX target; the asm reads and writes no memory and does not touch the stack, which is
    // exactly what `nomem, nostack` promise. It is not `pure`, so every call really reads the counter again.
    unsafe { asm!("mov.u64 {}, %clock64;", out(reg64) cycles, options(nomem, nostack)) };
    cycles
}

/// Reads the global nanosecond timer `%globaltimer`, which is the same on every SM of the device.
#[inline(always)]
pub fn globaltimer() -> u64 {
    let ns: u64;
    // SAFETY: as in `clock64`: a `mov` from the read-only special register `%globaltimer` (PTX ISA 3.1, sm_30+)
    // into a declared output register; no memory, no stack, and not `pure`, so each call reads it anew.
    unsafe { asm!("mov.u64 {}, %globaltimer;", out(reg64) ns, options(nomem, nostack)) };
    ns
}

/// Aborts the kernel launch; the host's next synchronisation reports the error.
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: `trap` has no preconditions (core declares it `unsafe` like all of its nvptx intrinsics). It stops
    // the thread for good and makes the launch fail, like `abort()` on the CPU: no code of this thread runs
    // afterwards, so no invariant can be observed broken.
    unsafe { core::arch::nvptx::trap() }
}
