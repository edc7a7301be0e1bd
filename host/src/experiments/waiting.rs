//! How the host waits: a 100 ms kernel, then `cuStreamSynchronize` in contexts created with each scheduling
//! flag (rule W1), and `cuEventSynchronize` on a default and a BLOCKING_SYNC event (W2). Measured: the CPU
//! time the waiting thread burns and how late it wakes up after the kernel ends.
//!
//! The runtime twins set the flag with `cudaSetDeviceFlags` on the device's primary context, which is
//! already active (the driver side of async-lab opened it), and wait with `cudaStreamSynchronize` /
//! `cudaEventSynchronize`: the way a runtime program changes how it waits after start-up. The scheduling flags
//! read before (`cudaGetDeviceFlags`) are put back afterwards.
//!
//! Wake-up latency is estimated as (host time from just before the launch to the wait's return) minus the
//! kernel's device time: it includes the launch latency, a few microseconds.

use super::method::timed_query;
use super::{case_record, Case, Op};
use async_lab_core::record::{CaseRecord, CaseSetup, Rep};
use async_lab_core::rules::{Expected, WaitStyle};
use async_lab_core::setup::CallTiming;
use async_lab_core::setup::{BlockerPlacement, Family};
use async_lab_driver::gpu::FlaggedContext;
use async_lab_driver::measure::{monotonic_ns, Stopwatch};
use async_lab_driver::runtime::{self, stream as rtstream};
use async_lab_driver::{sys, Event, Gpu, Stream, StreamKind};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedFlag {
    Spin,
    Yield,
    BlockingSync,
    Auto,
}

impl SchedFlag {
    fn slug(self) -> &'static str {
        match self {
            SchedFlag::Spin => "spin",
            SchedFlag::Yield => "yield",
            SchedFlag::BlockingSync => "blocking-sync",
            SchedFlag::Auto => "auto",
        }
    }
    fn bits(self) -> u32 {
        match self {
            SchedFlag::Spin => sys::CU_CTX_SCHED_SPIN,
            SchedFlag::Yield => sys::CU_CTX_SCHED_YIELD,
            SchedFlag::BlockingSync => sys::CU_CTX_SCHED_BLOCKING_SYNC,
            SchedFlag::Auto => sys::CU_CTX_SCHED_AUTO,
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub enum WaitOp {
    StreamSync(SchedFlag),
    EventSync { blocking_sync: bool },
}

const KERNEL_NS: u64 = 100_000_000;

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    let busy = || Expected::WaitStyle { styles: vec![WaitStyle::Busy] };
    let sleeps = || Expected::WaitStyle { styles: vec![WaitStyle::Sleeps] };
    for flag in [SchedFlag::Spin, SchedFlag::Yield, SchedFlag::BlockingSync, SchedFlag::Auto] {
        let expected = match flag {
            SchedFlag::Spin => busy(),
            // "Yield" says the thread yields, not whether it burns CPU time meanwhile: no prediction.
            SchedFlag::Yield => Expected::undocumented(),
            SchedFlag::BlockingSync => sleeps(),
            // With one context and many CPUs, AUTO spins.
            SchedFlag::Auto => busy(),
        };
        v.push(case(
            format!("wait/stream-sync/{}", flag.slug()),
            "cuStreamSynchronize",
            "W1",
            expected,
            format!(
                "cuStreamSynchronize on a 100 ms kernel, in a context created with CU_CTX_SCHED_{}",
                flag.slug().to_uppercase().replace('-', "_")
            ),
            WaitOp::StreamSync(flag),
        ));
    }
    for blocking_sync in [false, true] {
        v.push(case(
            format!("wait/event-sync/{}", if blocking_sync { "blocking-sync" } else { "default" }),
            "cuEventSynchronize",
            "W2",
            if blocking_sync { sleeps() } else { busy() },
            format!(
                "cuEventSynchronize on an event{} recorded after a 100 ms kernel",
                if blocking_sync { " created with CU_EVENT_BLOCKING_SYNC" } else { " created with default flags" }
            ),
            WaitOp::EventSync { blocking_sync },
        ));
    }
    v
}

impl WaitOp {
    /// What the runtime twin does, in words.
    pub fn runtime_what(&self) -> String {
        match self {
            WaitOp::StreamSync(flag) => format!(
                "cudaStreamSynchronize on a 100 ms kernel, after cudaSetDeviceFlags(cudaDeviceSchedule{}) on the \
                 running primary context",
                match flag {
                    SchedFlag::Spin => "Spin",
                    SchedFlag::Yield => "Yield",
                    SchedFlag::BlockingSync => "BlockingSync",
                    SchedFlag::Auto => "Auto",
                }
            ),
            WaitOp::EventSync { blocking_sync } => format!(
                "cudaEventSynchronize on an event{} recorded after a 100 ms kernel",
                if *blocking_sync { " created with cudaEventBlockingSync" } else { " created with default flags" }
            ),
        }
    }
}

fn case(id: String, call: &str, rule: &str, expected: Expected, what: String, op: WaitOp) -> Case {
    Case {
        setup: CaseSetup {
            id,
            family: Family::Wait,
            call: call.into(),
            rule: rule.into(),
            expected,
            stream: Some(StreamKind::NonBlocking),
            // The 100 ms kernel the call waits for is the protocol's blocker, ahead of it in its stream.
            blocker: BlockerPlacement::Same,
            blocker_stream: Some(StreamKind::NonBlocking),
            blocker_ahead: true,
            host_memory: None,
            bytes: 0,
            what,
            api: async_lab_core::api::Api::Driver,
            peer: None,
            direction: None,
            timing: CallTiming::Stopwatch,
            case: None,
        },
        op: Op::Wait(op),
    }
}

/// One wait in a context created with a scheduling flag: the kernel, then `cuStreamSynchronize`, timed.
fn flagged_rep(fc: &FlaggedContext) -> anyhow::Result<Rep> {
    let launched = monotonic_ns();
    fc.enqueue_spin(KERNEL_NS)?;
    let call_start = monotonic_ns();
    let w = Stopwatch::start();
    let r = fc.synchronize_stream();
    let t = w.stop();
    let returned = monotonic_ns();
    r?;
    let kernel = timed_query(call_start, || fc.spin_done())?;
    Ok(wait_rep(t, call_start, launched, returned, kernel, fc.elapsed_ns()?))
}

/// The signals of one wait, read like every other call's (`method.rs`): the kernel it waits for is the
/// blocker, and a timed query of the kernel's end event right after the return says whether it had ended
/// (`kernel`). The wait puts no work of its own on the GPU. How it waited is in the metrics.
fn wait_rep(
    t: async_lab_driver::measure::Timed,
    call_start: u64,
    launched: u64,
    returned: u64,
    kernel: (bool, [u64; 2]),
    device_ns: u64,
) -> Rep {
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
    rep.metrics.insert("wake_latency_us".into(), latency_us.max(0.0));
    rep.metrics.insert("cpu_fraction".into(), if t.wall_ns > 0 { t.cpu_ns as f64 / t.wall_ns as f64 } else { 0.0 });
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
        runtime::set_device_flags(flag.bits())?;
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
fn run_runtime(gpu: &Gpu, op: WaitOp, reps: usize) -> anyhow::Result<Vec<Rep>> {
    let (flag, event_flags) = match op {
        WaitOp::StreamSync(flag) => (Some(flag), sys::CU_EVENT_DEFAULT),
        WaitOp::EventSync { blocking_sync: true } => (None, sys::CU_EVENT_BLOCKING_SYNC),
        WaitOp::EventSync { blocking_sync: false } => (None, sys::CU_EVENT_DEFAULT),
    };
    let flags = flag.map(RuntimeFlags::set).transpose()?;
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let (start, end) = (Event::new(gpu)?, Event::with_flags(gpu, event_flags)?);
    let mut out = Vec::new();
    for i in 0..=reps {
        let launched = monotonic_ns();
        start.record(stream.handle())?;
        gpu.launch_spin_wait_ns(stream.handle(), KERNEL_NS, 0)?;
        end.record(stream.handle())?;
        let call_start = monotonic_ns();
        let w = Stopwatch::start();
        let r = match op {
            WaitOp::StreamSync(_) => rtstream::stream_synchronize(stream.handle()),
            WaitOp::EventSync { .. } => rtstream::event_synchronize(&end),
        };
        let t = w.stop();
        let returned = monotonic_ns();
        r?;
        let kernel = timed_query(call_start, || end.is_done())?;
        if i > 0 {
            out.push(wait_rep(t, call_start, launched, returned, kernel, end.ns_since(&start)?));
        }
    }
    if let Some(f) = flags {
        f.restore()?;
    }
    Ok(out)
}

pub fn run(gpu: &Gpu, case: &Case, op: WaitOp, reps: usize) -> anyhow::Result<CaseRecord> {
    if case.setup.api == async_lab_core::api::Api::Runtime {
        let out = run_runtime(gpu, op, reps)?;
        return Ok(case_record(case, None, None, out));
    }
    let mut out = Vec::new();
    match op {
        WaitOp::StreamSync(flag) => {
            let fc = FlaggedContext::create(gpu, flag.bits())?;
            let _warm = flagged_rep(&fc)?;
            for _ in 0..reps {
                out.push(flagged_rep(&fc)?);
            }
        }
        WaitOp::EventSync { blocking_sync } => {
            let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
            let flags = if blocking_sync { sys::CU_EVENT_BLOCKING_SYNC } else { sys::CU_EVENT_DEFAULT };
            let (start, end) = (Event::new(gpu)?, Event::with_flags(gpu, flags)?);
            for i in 0..=reps {
                let launched = monotonic_ns();
                start.record(stream.handle())?;
                gpu.launch_spin_wait_ns(stream.handle(), KERNEL_NS, 0)?;
                end.record(stream.handle())?;
                let call_start = monotonic_ns();
                let w = Stopwatch::start();
                let r = end.synchronize();
                let t = w.stop();
                let returned = monotonic_ns();
                r?;
                let kernel = timed_query(call_start, || end.is_done())?;
                if i > 0 {
                    out.push(wait_rep(t, call_start, launched, returned, kernel, end.ns_since(&start)?));
                }
            }
        }
    }
    Ok(case_record(case, None, None, out))
}
