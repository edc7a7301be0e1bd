//! Host-side clocks: wall time and the calling thread's CPU time around one call.
//!
//! Thread CPU time tells a busy wait (CPU time close to wall time) from a sleep (CPU time near zero).

/// Wall and CPU nanoseconds spent in a measured span.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timed {
    pub wall_ns: u64,
    pub cpu_ns: u64,
}

/// Started right before a call, stopped right after it. The wall clock is read innermost (after the CPU
/// clock at the start, before it at the stop) so that the span is the call's alone, on the monotonic clock
/// that every other host time of a repetition uses.
pub struct Stopwatch {
    wall_start_ns: u64,
    cpu_ns: u64,
}

impl Stopwatch {
    pub fn start() -> Stopwatch {
        let cpu_ns = thread_cpu_ns();
        Stopwatch { wall_start_ns: monotonic_ns(), cpu_ns }
    }

    /// The monotonic time the span began (comparable with [`monotonic_ns`]).
    pub fn started_at_ns(&self) -> u64 {
        self.wall_start_ns
    }

    pub fn stop(&self) -> Timed {
        let wall_ns = monotonic_ns().saturating_sub(self.wall_start_ns);
        Timed { wall_ns, cpu_ns: thread_cpu_ns().saturating_sub(self.cpu_ns) }
    }
}

/// CPU time consumed by the calling thread, in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID is supported on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds on the host's monotonic clock (`CLOCK_MONOTONIC`), comparable across threads and processes.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: as above; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
