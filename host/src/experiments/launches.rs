//! Kernel launches: a warm launch (K1), CUDA_LAUNCH_BLOCKING=1 (K2) and the launch queue's depth (K5). A
//! kernel's *first* launch, which under lazy loading loads it (K4), is measured with the other ways of loading
//! code, in `loading.rs`.
//!
//! CUDA_LAUNCH_BLOCKING is read once, when the driver starts, so that experiment runs in a child process of
//! async-lab with the variable set (see `runner.rs`).

use super::method::{measure_with, BlockerPlan, Probe};
use super::queue;
use super::{case_record, Case, Op};
use async_lab_core::api::Api;
use async_lab_core::classify::Class::*;
use async_lab_core::record::{CaseRecord, CaseSetup};
use async_lab_core::rules::Expected;
use async_lab_core::setup::CallTiming;
use async_lab_core::setup::{BlockerPlacement, Family};
use async_lab_driver::runtime::library::{Kernel, Library};
use async_lab_driver::{DriverResult, Gpu, Stream, StreamHandle, StreamKind};
use async_lab_ptx::kernels;

#[derive(Clone, Copy, Debug)]
pub enum LaunchOp {
    Warm,
    EnvBlocking,
    QueueDepth,
}

/// How long the kernel of the CUDA_LAUNCH_BLOCKING experiment runs: long enough that an asynchronous launch
/// returns well before it ends.
const ENV_BLOCKING_KERNEL_NS: u64 = 1_000_000;
/// The launch-queue experiment's short kernels (the queue is filled behind `queue::BLOCKER_NS`).
const QUEUE_FILLER_NS: u64 = 20_000;

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
                api: async_lab_core::api::Api::Driver,
                peer: None,
                direction: None,
                timing: CallTiming::Stopwatch,
                case: None,
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
    fn verify(&mut self, _gpu: &Gpu, _probed: Option<super::method::Page>) -> anyhow::Result<Option<bool>> {
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

/// Launches short kernels behind a long blocker until a launch returns only after the blocker finished
/// (`queue::fill_until_a_launch_waits`), through the API under test.
fn queue_depth(
    gpu: &Gpu,
    case: &Case,
    stream: &Stream,
    runtime: Option<&RuntimeKernels>,
    reps: usize,
) -> anyhow::Result<CaseRecord> {
    let filler = || match runtime {
        Some(rt) => rt.launch_spin(stream.handle(), QUEUE_FILLER_NS),
        None => gpu.launch_spin_wait_ns_timed(stream.handle(), QUEUE_FILLER_NS),
    };
    queue::fill_until_a_launch_waits(gpu, case, stream, reps, filler)
}
