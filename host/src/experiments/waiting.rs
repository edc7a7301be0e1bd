//! How the host waits: a 100 ms kernel, then `cuStreamSynchronize` in contexts created with each scheduling
//! flag (rule W1), and `cuEventSynchronize` on a default and a BLOCKING_SYNC event (W2). Measured: the CPU
//! time the waiting thread burns and how late it wakes up after the kernel ends.
//!
//! The runtime twins set the flag with `cudaSetDeviceFlags` on the device's primary context, which is
//! already active (the driver side of async-lab opened it), and wait with `cudaStreamSynchronize` /
//! `cudaEventSynchronize`: the way a runtime program changes how it waits after start-up. The scheduling flags
//! read before (`cudaGetDeviceFlags`) are put back afterwards. The cases and what they expect are the
//! catalogue's (`async_lab_core::catalogue::waiting`); this file measures them.
//!
//! Wake-up latency is estimated as (host time from just before the launch to the wait's return) minus the
//! kernel's device time: it includes the launch latency, a few microseconds.

use super::method::timed_query;
use super::{case_record, Case};
use async_lab_core::catalogue::waiting::{SchedFlag, WaitFacts};
use async_lab_core::record::{CaseRecord, Rep};
use async_lab_driver::gpu::FlaggedContext;
use async_lab_driver::measure::{monotonic_ns, Stopwatch};
use async_lab_driver::runtime::{self, stream as rtstream};
use async_lab_driver::{sys, CudaResult, Event, Gpu, Stream, StreamKind};

/// The driver's `CU_CTX_SCHED_*` bits of a scheduling flag (the runtime's `cudaDeviceSchedule*` values are the
/// same).
fn sched_bits(flag: SchedFlag) -> u32 {
    match flag {
        SchedFlag::Spin => sys::CU_CTX_SCHED_SPIN,
        SchedFlag::Yield => sys::CU_CTX_SCHED_YIELD,
        SchedFlag::BlockingSync => sys::CU_CTX_SCHED_BLOCKING_SYNC,
        SchedFlag::Auto => sys::CU_CTX_SCHED_AUTO,
    }
}

/// How long the kernel each wait waits for runs.
const KERNEL_NS: u64 = 100_000_000;

/// One wait in a context created with a scheduling flag: the kernel, then `cuStreamSynchronize`, timed.
fn flagged_rep(fc: &FlaggedContext) -> anyhow::Result<Rep> {
    let launched = monotonic_ns();
    fc.enqueue_spin(KERNEL_NS)?;
    let waited = timed_wait(launched, || fc.synchronize_stream(), || fc.spin_done())?;
    Ok(wait_rep(&waited, fc.elapsed_ns()?))
}

/// `reps` waits, after one to warm up, each on a 100 ms kernel between `start` and `end` in `stream`: the call
/// `wait` makes (a stream or event synchronization, through either API), timed.
fn waits_between_events(
    gpu: &Gpu,
    stream: &Stream,
    (start, end): (&Event, &Event),
    reps: usize,
    wait: impl Fn() -> CudaResult<()>,
) -> anyhow::Result<Vec<Rep>> {
    let mut out = Vec::new();
    for i in 0..=reps {
        let launched = monotonic_ns();
        start.record(stream.handle())?;
        gpu.launch_spin_wait_ns(stream.handle(), KERNEL_NS, 0)?;
        end.record(stream.handle())?;
        let waited = timed_wait(launched, &wait, || end.is_done())?;
        if i > 0 {
            out.push(wait_rep(&waited, end.ns_since(start)?));
        }
    }
    Ok(out)
}

/// One wait, timed as the lab times every call (`method.rs`).
struct Waited {
    t: async_lab_driver::measure::Timed,
    /// When the kernel it waits for was launched, the call began and it returned (host clock).
    launched: u64,
    call_start: u64,
    returned: u64,
    /// Whether the kernel had ended, asked right after the return, and when that was asked.
    kernel: (bool, [u64; 2]),
}

/// Times the call `wait`, then asks `done` whether the kernel it waited for (launched at `launched`) had
/// ended.
fn timed_wait(
    launched: u64,
    wait: impl FnOnce() -> CudaResult<()>,
    done: impl FnOnce() -> CudaResult<bool>,
) -> anyhow::Result<Waited> {
    let call_start = monotonic_ns();
    let w = Stopwatch::start();
    let r = wait();
    let t = w.stop();
    let returned = monotonic_ns();
    r?;
    let kernel = timed_query(call_start, done)?;
    Ok(Waited { t, launched, call_start, returned, kernel })
}

/// The signals of one wait, read like every other call's (`method.rs`): the kernel it waits for is the
/// blocker, and a timed query of the kernel's end event right after the return says whether it had ended
/// (`kernel`). The wait puts no work of its own on the GPU. How it waited is in the metrics.
fn wait_rep(w: &Waited, device_ns: u64) -> Rep {
    let Waited { t, launched, call_start, returned, kernel } = *w;
    let mut rep = Rep {
        host_call_ns: t.wall_ns,
        host_cpu_ns: t.cpu_ns,
        blocker_done_at_return: Some(kernel.0),
        blocker_query_ns: Some(kernel.1),
        blocker_device_ns: Some(device_ns),
        host_blocker_launch_ns: Some(launched),
        host_call_start_ns: call_start,
        ..Rep::default()
    };
    let latency_us = (returned.saturating_sub(launched) as f64 - device_ns as f64) / 1e3;
    rep.metrics.wake_latency_us = Some(latency_us.max(0.0));
    rep.metrics.cpu_fraction = Some(if t.wall_ns > 0 { t.cpu_ns as f64 / t.wall_ns as f64 } else { 0.0 });
    rep
}

/// `cudaSetDeviceFlags(flag)` on the current device; `restore` puts back the scheduling flags it had before
/// (a failure to do so is an error of the experiment: later ones would wait differently). Dropped without
/// `restore` (an error path), it restores them best-effort and says so if it cannot.
struct RuntimeFlags {
    previous: u32,
    restored: bool,
}

/// `cudaDeviceScheduleMask`: the scheduling bits of the device flags (the rest, such as the implicit
/// `cudaDeviceMapHost`, are not `cudaSetDeviceFlags`'s to set).
const SCHEDULE_MASK: u32 = 0x07;

impl RuntimeFlags {
    fn set(flag: SchedFlag) -> anyhow::Result<RuntimeFlags> {
        // The runtime's current device is set (the runner's cudaSetDevice).
        let previous = runtime::device_flags()?;
        // The runtime's cudaDeviceSchedule* values are the driver's CU_CTX_SCHED_* values.
        runtime::set_device_flags(sched_bits(flag))?;
        Ok(RuntimeFlags { previous: previous & SCHEDULE_MASK, restored: false })
    }

    fn restore(mut self) -> anyhow::Result<()> {
        self.restored = true;
        runtime::set_device_flags(self.previous)?;
        Ok(())
    }
}

impl Drop for RuntimeFlags {
    fn drop(&mut self) {
        if !self.restored {
            if let Err(e) = runtime::set_device_flags(self.previous) {
                eprintln!("async-lab: could not restore the device's scheduling flags ({e}); later runtime cases may wait differently");
            }
        }
    }
}

/// The runtime twins: the same waits through `cudaStreamSynchronize` / `cudaEventSynchronize`.
fn run_runtime(gpu: &Gpu, op: WaitFacts, reps: usize) -> anyhow::Result<Vec<Rep>> {
    let (flag, event_flags) = match op {
        WaitFacts::StreamSync(flag) => (Some(flag), sys::CU_EVENT_DEFAULT),
        WaitFacts::EventSync { blocking_sync: true } => (None, sys::CU_EVENT_BLOCKING_SYNC),
        WaitFacts::EventSync { blocking_sync: false } => (None, sys::CU_EVENT_DEFAULT),
    };
    let flags = flag.map(RuntimeFlags::set).transpose()?;
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let (start, end) = (Event::new(gpu)?, Event::with_flags(gpu, event_flags)?);
    let out = waits_between_events(gpu, &stream, (&start, &end), reps, || match op {
        WaitFacts::StreamSync(_) => rtstream::stream_synchronize(stream.handle()),
        WaitFacts::EventSync { .. } => rtstream::event_synchronize(&end),
    })?;
    if let Some(f) = flags {
        f.restore()?;
    }
    Ok(out)
}

pub fn run(gpu: &Gpu, case: &Case, op: WaitFacts, reps: usize) -> anyhow::Result<CaseRecord> {
    if case.setup.api == async_lab_core::api::Api::Runtime {
        let out = run_runtime(gpu, op, reps)?;
        return Ok(case_record(case, None, None, out));
    }
    let mut out = Vec::new();
    match op {
        WaitFacts::StreamSync(flag) => {
            let fc = FlaggedContext::create(gpu, sched_bits(flag))?;
            let _warm = flagged_rep(&fc)?;
            for _ in 0..reps {
                out.push(flagged_rep(&fc)?);
            }
        }
        WaitFacts::EventSync { blocking_sync } => {
            let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
            let flags = if blocking_sync { sys::CU_EVENT_BLOCKING_SYNC } else { sys::CU_EVENT_DEFAULT };
            let (start, end) = (Event::new(gpu)?, Event::with_flags(gpu, flags)?);
            out = waits_between_events(gpu, &stream, (&start, &end), reps, || end.synchronize())?;
        }
    }
    Ok(case_record(case, None, None, out))
}
