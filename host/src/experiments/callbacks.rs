//! Host callbacks (`cuLaunchHostFunc` and the older `cuStreamAddCallback`, the seed's call; rule CB1) and
//! destroying a stream that still has work (SD1). The cases and what they expect are the catalogue's
//! (`async_lab_core::catalogue::callbacks`); this file measures them.
//!
//! Besides how long enqueueing a callback takes, this measures how late the callback runs: a second host
//! thread polls the event recorded after the blocker and notes when it completes; the callback notes when
//! it runs; the difference is the driver's delay in calling back.

use super::method::{measure_with, Blocker, BlockerPlan, Probe};
use super::{case_record, Case};
use async_lab_core::api::Api;
use async_lab_core::catalogue::callbacks::CallbackFacts;
use async_lab_core::record::{CaseRecord, Rep};
use async_lab_driver::measure::monotonic_ns;
use async_lab_driver::runtime::stream as rtstream;
use async_lab_driver::stream;
use async_lab_driver::{sys, CudaResult, Gpu, Stream, StreamHandle, StreamKind};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

/// The blocker the callbacks wait behind, and that still runs in the stream being destroyed.
const BLOCKER_NS: u64 = 20_000_000;

/// Called by the driver on its own thread: notes the time.
unsafe extern "C" fn note_time(user: *mut c_void) {
    // SAFETY: `user` points at the leaked (never freed) AtomicU64 of a `HostFuncProbe`.
    let cell = unsafe { &*(user as *const AtomicU64) };
    cell.store(monotonic_ns(), Ordering::SeqCst);
}

/// The stream-callback form: the same note, with the callback's (stream, status, user) arguments. Its
/// signature is the same in both APIs (`CUstreamCallback`, `cudaStreamCallback_t`).
unsafe extern "C" fn note_time_callback(_stream: sys::CUstream, _status: u32, user: *mut c_void) {
    // SAFETY: as in `note_time`.
    unsafe { note_time(user) }
}

/// The same with the runtime's stream type (the status stays a raw code: see `runtime::stream_callback`).
unsafe extern "C" fn note_time_runtime(
    _stream: async_lab_driver::runtime::sys::cudaStream_t,
    _status: u32,
    user: *mut c_void,
) {
    // SAFETY: as in `note_time`.
    unsafe { note_time(user) }
}

struct HostFuncProbe<'a, 'g> {
    stream: &'a Stream<'g>,
    ran_at: &'static AtomicU64,
    op: CallbackFacts,
    api: Api,
}

impl Probe for HostFuncProbe<'_, '_> {
    fn prepare(&mut self, _gpu: &Gpu) -> anyhow::Result<()> {
        self.ran_at.store(0, Ordering::SeqCst);
        Ok(())
    }
    fn call(&mut self, _gpu: &Gpu) -> CudaResult<()> {
        let user = (self.ran_at as *const AtomicU64) as *mut c_void;
        let (s, add) = (self.stream.handle(), matches!(self.op, CallbackFacts::StreamAddCallback));
        // SAFETY: the functions only store into the atomic, which is leaked (`'static`): it outlives any
        // callback, even one still pending when a repetition fails.
        // The runtime shares the stream's primary context.
        unsafe {
            match (self.api, add) {
                (Api::Driver, false) => stream::launch_host_func(s, note_time, user),
                (Api::Driver, true) => stream::stream_add_callback(s, note_time_callback, user),
                (Api::Runtime, false) => rtstream::rt_launch_host_func(s, note_time, user),
                (Api::Runtime, true) => rtstream::rt_stream_add_callback(s, note_time_runtime, user),
            }
        }
    }
    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        Some(self.stream.handle())
    }
    fn verify(&mut self, _gpu: &Gpu, _probed: Option<super::method::Page>) -> anyhow::Result<Option<bool>> {
        anyhow::ensure!(self.ran_at.load(Ordering::SeqCst) != 0, "the host function never ran");
        Ok(None)
    }
}

pub fn run(gpu: &Gpu, case: &Case, op: CallbackFacts, reps: usize) -> anyhow::Result<CaseRecord> {
    match op {
        CallbackFacts::LaunchHostFunc | CallbackFacts::StreamAddCallback => host_func(gpu, case, op, reps),
        CallbackFacts::StreamDestroy => stream_destroy(gpu, case, reps),
    }
}

fn host_func(gpu: &Gpu, case: &Case, op: CallbackFacts, reps: usize) -> anyhow::Result<CaseRecord> {
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let plan = BlockerPlan { stream: stream.handle(), ahead: true };
    // The cell is leaked, not boxed: if a repetition fails after the enqueue (`?` below), the callback may
    // still run later, and must never write freed memory. Eight bytes per experiment.
    let ran_at: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(0)));
    let mut probe = HostFuncProbe { stream: &stream, ran_at, op, api: case.setup.api };
    let (warmup, _, mut out) = measure_with(gpu, &mut probe, plan, reps, true)?;

    // The delay: poll the blocker's end event from a second thread while the callback waits behind it.
    let blocker = Blocker::new(gpu)?;
    let (context, end) = (gpu.context_ref(), blocker.end_event().shared());
    for rep in out.iter_mut() {
        probe.ran_at.store(0, Ordering::SeqCst);
        blocker.launch(probe.stream.handle(), BLOCKER_NS)?;
        probe.call(gpu)?;
        let seen_at = std::thread::scope(|s| {
            s.spawn(move || -> CudaResult<u64> {
                // The context and the event outlive this scoped thread (their lifetimes say so).
                context.bind()?;
                loop {
                    match end.is_done() {
                        Ok(false) => std::hint::spin_loop(),
                        done => {
                            let t = monotonic_ns();
                            done?;
                            return Ok(t);
                        }
                    }
                }
            })
            .join()
            .expect("the polling thread does not panic")
        })?;
        gpu.synchronize()?;
        let ran_at = probe.ran_at.load(Ordering::SeqCst);
        rep.metrics.callback_delay_us = Some(ran_at.saturating_sub(seen_at) as f64 / 1e3);
    }
    Ok(case_record(case, Some(warmup), Some(BLOCKER_NS), out))
}

fn stream_destroy(gpu: &Gpu, case: &Case, reps: usize) -> anyhow::Result<CaseRecord> {
    let blocker = Blocker::new(gpu)?;
    let mut out = Vec::new();
    for _ in 0..reps {
        let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
        let launched = blocker.launch(stream.handle(), BLOCKER_NS)?;
        let host_call_start_ns = monotonic_ns();
        let timed = match case.setup.api {
            Api::Driver => stream.destroy_timed()?,
            Api::Runtime => rtstream::stream_destroy_timed(stream)?,
        };
        let blocker_done = blocker.is_done()?;
        gpu.synchronize()?;
        let (blocker_device_ns, stamps) = blocker.read()?;
        out.push(Rep {
            host_call_ns: timed.wall_ns,
            host_cpu_ns: timed.cpu_ns,
            blocker_done_at_return: Some(blocker_done),
            op_done_at_return: None,
            blocker_device_ns: Some(blocker_device_ns),
            host_call_start_ns,
            host_blocker_launch_ns: Some(launched),
            blocker_gpu_ns: Some(stamps),
            ..Rep::default()
        });
    }
    Ok(case_record(case, None, Some(BLOCKER_NS), out))
}
