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

    /// Stops the wall clock only, returning the monotonic time of the stop: what must happen right at the
    /// return (the queries of the method) can come before the CPU clock is read, which costs a system call
    /// (up to 10 µs after a long wait on the H200's host). [`Stopwatch::finish`] completes the span.
    pub fn stop_wall(&self) -> u64 {
        monotonic_ns()
    }

    /// The span that ended at `wall_end_ns` (from [`Stopwatch::stop_wall`]). The CPU clock is read now, so the
    /// thread's CPU time includes whatever ran since the stop: `since_stop_ns` of it (work that runs on the CPU
    /// throughout, such as driver queries) is taken back out.
    pub fn finish(&self, wall_end_ns: u64, since_stop_ns: u64) -> Timed {
        let cpu_ns = thread_cpu_ns().saturating_sub(self.cpu_ns).saturating_sub(since_stop_ns);
        Timed { wall_ns: wall_end_ns.saturating_sub(self.wall_start_ns), cpu_ns }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(ns: u64) {
        let t = monotonic_ns();
        while monotonic_ns() - t < ns {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn a_span_finished_later_ends_at_the_wall_stop_and_leaves_out_what_came_after() {
        let w = Stopwatch::start();
        spin(2_000_000);
        let end = w.stop_wall();
        spin(2_000_000);
        let after = monotonic_ns() - end;
        let t = w.finish(end, after);
        assert_eq!(t.wall_ns, end - w.started_at_ns());
        // The 2 ms spun after the stop are not in the CPU time; the 2 ms inside are (less any preemption).
        assert!(t.cpu_ns <= t.wall_ns + 200_000, "{t:?}");
        let whole = Stopwatch { wall_start_ns: w.started_at_ns(), cpu_ns: w.cpu_ns }.stop();
        assert!(whole.cpu_ns >= t.cpu_ns + after / 2, "{whole:?} vs {t:?}");
    }
}
