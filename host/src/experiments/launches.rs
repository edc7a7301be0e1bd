//! Kernel launches: a warm launch (K1), CUDA_LAUNCH_BLOCKING=1 (K2) and the launch queue's depth (K5). A
//! kernel's *first* launch, which under lazy loading loads it (K4), is measured with the other ways of loading
//! code, in `loading.rs`.
//!
//! The cases and what they expect are the catalogue's (`async_lab_core::catalogue::launches`); this file
//! measures them. CUDA_LAUNCH_BLOCKING is read once, when the driver starts, so that experiment runs in a child
//! process of async-lab with the variable set (see `runner.rs`).

use super::method::{measure_with, BlockerPlan, Probe};
use super::queue;
use super::{case_record, Case};
use async_lab_core::api::Api;
use async_lab_core::catalogue::launches::LaunchFacts;
use async_lab_core::record::CaseRecord;
use async_lab_driver::runtime::library::{RtKernel, RtLibrary};
use async_lab_driver::{CudaResult, Gpu, Stream, StreamHandle, StreamKind};
use async_lab_ptx::kernels;

/// How long the kernel of the CUDA_LAUNCH_BLOCKING experiment runs: long enough that an asynchronous launch
/// returns well before it ends.
const ENV_BLOCKING_KERNEL_NS: u64 = 1_000_000;
/// The launch-queue experiment's short kernels (the queue is filled behind `queue::BLOCKER_NS`).
const QUEUE_FILLER_NS: u64 = 20_000;

/// A warm launch, or the 1 ms kernel of the CUDA_LAUNCH_BLOCKING experiment.
struct LaunchProbe<'a, 'g> {
    stream: &'a Stream<'g>,
    kernel_ns: Option<u64>,
    /// For the runtime twin: the kernels through the runtime (`cudaLaunchKernel`).
    runtime: Option<RuntimeKernels>,
}

/// The two kernels the launch experiments use, loaded through the runtime (`cudaLibraryLoadData`).
struct RuntimeKernels {
    empty: RtKernel,
    spin_wait_ns: RtKernel,
    /// Keeps the kernels loaded; dropped after them (the device is synchronized by then).
    _library: RtLibrary,
}

impl RuntimeKernels {
    fn load(gpu: &Gpu) -> anyhow::Result<RuntimeKernels> {
        let library = RtLibrary::load(gpu.ptx.text())?;
        Ok(RuntimeKernels {
            empty: library.kernel(kernels::EMPTY.name)?,
            spin_wait_ns: library.kernel(kernels::SPIN_WAIT_NS.name)?,
            _library: library,
        })
    }

    /// `spin_wait_ns(ns, stamps = null)` through `cudaLaunchKernel`.
    fn launch_spin(&self, stream: StreamHandle<'_>, ns: u64) -> CudaResult<()> {
        // SAFETY: the kernel is `spin_wait_ns`; the library is held by `self`.
        unsafe { self.spin_wait_ns.launch_spin(stream, ns) }
    }

    fn launch_empty(&self, stream: StreamHandle<'_>) -> CudaResult<()> {
        // SAFETY: `empty` takes no parameters; the library is held by `self`.
        unsafe { self.empty.launch(1, 1, stream, &mut []) }
    }
}

impl Probe for LaunchProbe<'_, '_> {
    fn prepare(&mut self, _gpu: &Gpu) -> anyhow::Result<()> {
        Ok(())
    }
    fn call(&mut self, gpu: &Gpu) -> CudaResult<()> {
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

pub fn run(gpu: &Gpu, case: &Case, op: LaunchFacts, reps: usize) -> anyhow::Result<CaseRecord> {
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    match op {
        LaunchFacts::Warm | LaunchFacts::EnvBlocking => {
            let env = matches!(op, LaunchFacts::EnvBlocking);
            let plan = BlockerPlan { stream: stream.handle(), ahead: true };
            let runtime = (case.setup.api == Api::Runtime).then(|| RuntimeKernels::load(gpu)).transpose()?;
            let mut probe = LaunchProbe { stream: &stream, kernel_ns: env.then_some(ENV_BLOCKING_KERNEL_NS), runtime };
            let (warmup, blocker_ns, reps) = measure_with(gpu, &mut probe, plan, reps, !env)?;
            Ok(case_record(case, Some(warmup), (!env).then_some(blocker_ns), reps))
        }
        LaunchFacts::QueueDepth => {
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
