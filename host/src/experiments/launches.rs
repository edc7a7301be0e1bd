//! Kernel launches: a warm launch (K1), CUDA_LAUNCH_BLOCKING=1 (K2) and the launch queue's depth (K5). A
//! kernel's *first* launch, which under lazy loading loads it (K4), is measured with the other ways of loading
//! code, in `loading.rs`.
//!
//! CUDA_LAUNCH_BLOCKING is read once, when the driver starts, so that experiment runs in a child process of
//! async-lab with the variable set (see `runner.rs`).

use super::method::{measure_with, Blocker, BlockerPlan, Probe};
use super::{case_record, Case, Op};
use crate::api::Api;
use crate::classify::Class::*;
use crate::driver::{DriverResult, Gpu, Stream, StreamHandle, StreamKind};
use crate::measure::{monotonic_ns, Stopwatch};
use crate::record::{BlockerPlacement, CaseRecord, CaseSetup, Family, Rep};
use crate::rules::Expected;
use crate::runtime::library::{Kernel, Library};
use crate::setup::CallTiming;
use async_lab_ptx::kernels;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug)]
pub enum LaunchOp {
    Warm,
    EnvBlocking,
    QueueDepth,
}

/// How long the kernel of the CUDA_LAUNCH_BLOCKING experiment runs: long enough that an asynchronous launch
/// returns well before it ends.
const ENV_BLOCKING_KERNEL_NS: u64 = 1_000_000;
/// The launch-queue experiment: a long blocker, then short kernels until a launch has to wait.
const QUEUE_BLOCKER_NS: u64 = 300_000_000;
const QUEUE_FILLER_NS: u64 = 20_000;
const QUEUE_MAX_LAUNCHES: usize = 16_384;
const QUEUE_AFTER: usize = 256;

impl LaunchOp {
    pub fn child_env(&self) -> Option<(&'static str, &'static str)> {
        match self {
            LaunchOp::EnvBlocking => Some(("CUDA_LAUNCH_BLOCKING", "1")),
            _ => None,
        }
    }

    fn case(self) -> Case {
        let nb = Some(StreamKind::NonBlocking);
        let (id, call, rule, expected, blocker, ahead, what) = match self {
            LaunchOp::Warm => (
                "launch/warm/nonblocking/same".to_owned(),
                "cuLaunchKernel",
                "K1",
                Expected::classes(&[Async]),
                BlockerPlacement::Same,
                true,
                "an empty kernel launched (not for the first time) behind a blocker in the same stream".to_owned(),
            ),
            LaunchOp::EnvBlocking => (
                "launch/env-blocking/nonblocking/none".to_owned(),
                "cuLaunchKernel",
                "K2",
                Expected::classes(&[Blocking]),
                BlockerPlacement::None,
                false,
                "a 1 ms kernel launched in a process started with CUDA_LAUNCH_BLOCKING=1 (no blocker: every launch, the blocker's too, would wait)".to_owned(),
            ),
            LaunchOp::QueueDepth => (
                "launch/queue-depth/nonblocking/same".to_owned(),
                "cuLaunchKernel",
                "K5",
                Expected::undocumented(),
                BlockerPlacement::Same,
                true,
                "20 µs kernels launched one after another behind a 300 ms blocker until a launch has to wait; the call measured is that launch".to_owned(),
            ),
        };
        Case {
            setup: CaseSetup {
                id,
                family: Family::Launch,
                call: call.into(),
                rule: rule.into(),
                expected,
                stream: nb,
                blocker,
                blocker_stream: if blocker == BlockerPlacement::None { None } else { nb },
                blocker_ahead: ahead,
                host_memory: None,
                bytes: 0,
                what,
                api: crate::api::Api::Driver,
                peer: None,
                direction: None,
                timing: CallTiming::Stopwatch,
            },
            op: Op::Launch(self),
        }
    }
}

pub fn cases() -> Vec<Case> {
    let mut v = vec![LaunchOp::Warm.case(), LaunchOp::EnvBlocking.case()];
    v.push(LaunchOp::QueueDepth.case());
    v
}

/// A warm launch, or the 1 ms kernel of the CUDA_LAUNCH_BLOCKING experiment.
struct LaunchProbe<'a, 'g> {
    stream: &'a Stream<'g>,
    kernel_ns: Option<u64>,
    /// For the runtime twin: the kernels through the runtime (`cudaLaunchKernel`).
    runtime: Option<RuntimeKernels>,
}

/// The two kernels the launch experiments use, loaded through the runtime (`cudaLibraryLoadData`).
struct RuntimeKernels {
    empty: Kernel,
    spin_wait_ns: Kernel,
    /// Keeps the kernels loaded; dropped after them (the device is synchronized by then).
    _library: Library,
}

impl RuntimeKernels {
    fn load(gpu: &Gpu) -> anyhow::Result<RuntimeKernels> {
        let library = Library::load(gpu.ptx.text())?;
        Ok(RuntimeKernels {
            empty: library.kernel(kernels::EMPTY.name)?,
            spin_wait_ns: library.kernel(kernels::SPIN_WAIT_NS.name)?,
            _library: library,
        })
    }

    /// `spin_wait_ns(ns, stamps = null)` through `cudaLaunchKernel`.
    fn launch_spin(&self, stream: StreamHandle<'_>, ns: u64) -> DriverResult<()> {
        // SAFETY: the kernel is `spin_wait_ns`; the library is held by `self`.
        unsafe { self.spin_wait_ns.launch_spin(stream, ns) }
    }

    fn launch_empty(&self, stream: StreamHandle<'_>) -> DriverResult<()> {
        // SAFETY: `empty` takes no parameters; the library is held by `self`.
        unsafe { self.empty.launch(1, 1, stream, &mut []) }
    }
}

impl Probe for LaunchProbe<'_, '_> {
    fn prepare(&mut self, _gpu: &Gpu) -> anyhow::Result<()> {
        Ok(())
    }
    fn call(&mut self, gpu: &Gpu) -> DriverResult<()> {
        match (&self.runtime, self.kernel_ns) {
            (None, Some(ns)) => gpu.launch_spin_wait_ns_timed(self.stream.handle(), ns),
            (None, None) => gpu.launch_empty(self.stream.handle()),
            (Some(rt), Some(ns)) => rt.launch_spin(self.stream.handle(), ns),
            (Some(rt), None) => rt.launch_empty(self.stream.handle()),
        }
    }
    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        Some(self.stream.handle())
    }
    fn verify(&mut self, _gpu: &Gpu, _probed: bool) -> anyhow::Result<Option<bool>> {
        Ok(None)
    }
}

pub fn run(gpu: &Gpu, case: &Case, op: LaunchOp, reps: usize) -> anyhow::Result<CaseRecord> {
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    match op {
        LaunchOp::Warm | LaunchOp::EnvBlocking => {
            let env = matches!(op, LaunchOp::EnvBlocking);
            let plan = BlockerPlan { stream: stream.handle(), ahead: true };
            let runtime = (case.setup.api == Api::Runtime).then(|| RuntimeKernels::load(gpu)).transpose()?;
            let mut probe = LaunchProbe { stream: &stream, kernel_ns: env.then_some(ENV_BLOCKING_KERNEL_NS), runtime };
            let (warmup, blocker_ns, reps) = measure_with(gpu, &mut probe, plan, reps, !env)?;
            Ok(case_record(case, Some(warmup), (!env).then_some(blocker_ns), reps))
        }
        LaunchOp::QueueDepth => {
            let runtime = (case.setup.api == Api::Runtime).then(|| RuntimeKernels::load(gpu)).transpose()?;
            queue_depth(gpu, case, &stream, runtime.as_ref(), reps)
        }
    }
}

/// Launches short kernels behind a long blocker until a launch returns only after the blocker finished.
fn queue_depth(
    gpu: &Gpu,
    case: &Case,
    stream: &Stream,
    runtime: Option<&RuntimeKernels>,
    reps: usize,
) -> anyhow::Result<CaseRecord> {
    let blocker = Blocker::new(gpu)?;
    // The filler kernel, through the API under test.
    let filler = |ns| match runtime {
        Some(rt) => rt.launch_spin(stream.handle(), ns),
        None => gpu.launch_spin_wait_ns_timed(stream.handle(), ns),
    };
    // The timed launches do not make the context current themselves (one driver call per measured span).
    gpu.bind()?;
    let mut out = Vec::new();
    let mut series = None;
    // One warm-up round of launches so that the first measured one is not a first launch.
    filler(QUEUE_FILLER_NS)?;
    gpu.synchronize()?;
    for _ in 0..reps {
        let blocker_launch = blocker.launch(stream.handle(), QUEUE_BLOCKER_NS)?;
        let mut times = Vec::new();
        let mut blocked: Option<(usize, u64, bool)> = None;
        let mut host_call_start_ns = 0;
        let mut cpu_ns = 0;
        while times.len() < QUEUE_MAX_LAUNCHES {
            let start = monotonic_ns();
            let w = Stopwatch::start();
            filler(QUEUE_FILLER_NS)?;
            let t = w.stop();
            times.push(t.wall_ns);
            if blocker.is_done()? {
                let op_done = stream.handle().is_idle()?;
                blocked = Some((times.len() - 1, t.wall_ns, op_done));
                host_call_start_ns = start;
                cpu_ns = t.cpu_ns;
                break;
            }
        }
        if blocked.is_some() {
            for _ in 0..QUEUE_AFTER {
                let w = Stopwatch::start();
                filler(QUEUE_FILLER_NS)?;
                times.push(w.stop().wall_ns);
            }
        }
        gpu.synchronize()?;
        let (blocker_device_ns, stamps) = blocker.read()?;
        let median = |s: &[u64]| -> f64 {
            let mut v: Vec<f64> = s.iter().map(|&x| x as f64 / 1e3).collect();
            crate::stats::median(&mut v).unwrap_or(f64::NAN)
        };
        let mut metrics = BTreeMap::new();
        let rep = match blocked {
            Some((depth, call_ns, op_done)) => {
                metrics.insert("queue_depth".into(), depth as f64);
                metrics.insert("launch_us_before_full".into(), median(&times[..depth]));
                metrics.insert("launch_us_blocked".into(), call_ns as f64 / 1e3);
                metrics.insert("launch_us_after_full".into(), median(&times[depth + 1..]));
                Rep {
                    host_call_ns: call_ns,
                    host_cpu_ns: cpu_ns,
                    blocker_done_at_return: Some(true),
                    op_done_at_return: Some(op_done),
                    blocker_device_ns: Some(blocker_device_ns),
                    host_call_start_ns,
                    host_blocker_launch_ns: Some(blocker_launch),
                    blocker_gpu_ns: Some(stamps),
                    metrics,
                    ..Rep::default()
                }
            }
            None => {
                // No launch waited: the queue holds more than we tried. Report the last launch.
                metrics.insert("queue_depth_at_least".into(), times.len() as f64);
                metrics.insert("launch_us_before_full".into(), median(&times));
                Rep {
                    host_call_ns: *times.last().unwrap_or(&0),
                    blocker_done_at_return: Some(false),
                    op_done_at_return: Some(false),
                    blocker_device_ns: Some(blocker_device_ns),
                    host_blocker_launch_ns: Some(blocker_launch),
                    blocker_gpu_ns: Some(stamps),
                    metrics,
                    ..Rep::default()
                }
            }
        };
        if series.is_none() {
            series = Some(times.iter().map(|&t| t as f64 / 1e3).collect());
        }
        out.push(rep);
    }
    let mut record = case_record(case, None, Some(QUEUE_BLOCKER_NS), out);
    record.series = series;
    Ok(record)
}
