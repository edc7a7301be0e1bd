//! Stream memory operations (rules SM1, SM2). Two questions:
//!
//! 1. Do `cuStreamWaitValue32` and `cuStreamWriteValue32` themselves return at once? They are enqueued behind a
//!    blocker in their own stream or next to one on another stream, like any stream-ordered call.
//! 2. Which host calls wait while a stream waits on a value that only the host will write? A program that
//!    makes such a call before writing the value never gets to write it: it hangs. Here stream W waits on a word
//!    of pinned host memory, the blocker is queued behind that wait in W, and a *watchdog* thread writes the
//!    value 100 ms later, so nothing hangs. A call that returns only after the watchdog's write would have hung
//!    (the `returned_after_host_write` metric says so per repetition); one that returns at once did not wait.
//!    Should the GPU not see the host's write within 2 s, the watchdog has another stream write the value
//!    (`cuStreamWriteValue32`), so the run still ends; that repetition says so (`gpu_release`).
//!
//! The warm-up repetition (the first `prepare`) measures the call alone: it arms no wait.
//!
//! The cases, their ids, rules and words are the catalogue's (`async_lab_core::catalogue::streammem`); this
//! file measures them.

use super::method::{measure, BlockerPlan, Probe};
use super::{case_record, Case};
use anyhow::ensure;
use async_lab_core::catalogue::streammem::{MemOpCall, StreamMemFacts, HELD_BYTES, WATCHDOG_MS};
use async_lab_core::record::CaseRecord;
use async_lab_core::setup::BlockerPlacement;
use async_lab_driver::gpu::ctx_synchronize;
use async_lab_driver::library::Module;
use async_lab_driver::measure::monotonic_ns;
use async_lab_driver::memory;
use async_lab_driver::streammem::StreamMemOps;
use async_lab_driver::{
    sys, ContextRef, CudaResult, DeviceBuffer, Event, EventRef, Gpu, HostBuffer, HostKind, Stream, StreamHandle,
    StreamKind,
};
use std::ffi::CString;
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long after arming the wait the watchdog writes the value.
pub const WATCHDOG: Duration = Duration::from_millis(WATCHDOG_MS);
/// How long the watchdog gives the GPU to see the host's write before it has a stream write the value.
const GPU_GRACE: Duration = Duration::from_secs(2);
/// The bytes the copies and allocations of the held cases move or take.
const BYTES: usize = HELD_BYTES as usize;

/// What the watchdog thread needs: handles, which the thread uses only while the probe (their owner) waits for
/// it to end.
struct Release {
    context: ContextRef<'static>,
    /// The stream that writes the value should the GPU not see the host's write.
    fallback: usize,
    /// An event recorded right after the wait in the waiting stream: done once the wait is satisfied.
    passed: EventRef<'static>,
    flag: usize,
    value: u32,
    ops: StreamMemOps,
}

// SAFETY: the stream is a plain driver handle (usable from any thread once the context is current there) and
// `flag` the address of an `AtomicU32` in pinned memory; the probe that owns both joins the thread before it
// drops either (in `verify`, or in its `Drop`).
unsafe impl Send for Release {}

/// The watchdog: waits `WATCHDOG`, writes the value from the host, and makes sure the GPU saw it. Returns the host
/// time of the write and whether the fallback write by a stream was needed.
fn watchdog(r: Release) -> (u64, bool) {
    std::thread::sleep(WATCHDOG);
    let t = monotonic_ns();
    // SAFETY: `flag` is the address of a live, aligned `AtomicU32` in pinned memory (see `Release`).
    unsafe { (*(r.flag as *const AtomicU32)).store(r.value, Ordering::SeqCst) };
    // Making the context current on this thread affects only this thread.
    if r.context.bind().is_err() {
        return (t, false);
    }
    let start = Instant::now();
    loop {
        match r.passed.is_done() {
            Ok(false) if start.elapsed() < GPU_GRACE => std::thread::sleep(Duration::from_millis(1)),
            Ok(false) => break,
            _ => return (t, false),
        }
    }
    // SAFETY: a live stream of the current context; the word stays allocated until the probe has joined us and
    // synchronized the device.
    let _ = unsafe { r.ops.write_raw(r.fallback as sys::CUstream, r.flag as u64, r.value) };
    (t, true)
}

struct MemOpProbe<'a, 'g> {
    /// The GPU the buffers and the module of a repetition are made on (they borrow it).
    gpu: &'g Gpu,
    op: StreamMemFacts,
    ops: StreamMemOps,
    /// The call's stream (question 1 and the launch), the stream that waits on the host, the fallback's.
    stream: &'a Stream<'g>,
    waiting: &'a Stream<'g>,
    fallback: &'a Stream<'g>,
    passed: Event<'g>,
    flag: HostBuffer<'g>,
    value: u32,
    prepared: usize,
    watchdog: Option<JoinHandle<(u64, bool)>>,
    /// Per armed repetition: when the host wrote the value, and whether a stream had to write it.
    releases: Vec<(u64, bool)>,
    device: Option<DeviceBuffer<'g>>,
    allocated: sys::CUdeviceptr,
    module: Option<Module<'g>>,
    ptx: &'a CString,
    host: Vec<u8>,
}

impl MemOpProbe<'_, '_> {
    fn flag_addr(&self) -> u64 {
        self.flag.addr()
    }

    fn flag_value(&self) -> u32 {
        // SAFETY: the flag is a live, aligned word of pinned memory; reading it atomically is always allowed.
        unsafe { (*(self.flag.as_ptr() as *const AtomicU32)).load(Ordering::SeqCst) }
    }

    fn join_watchdog(&mut self) -> anyhow::Result<()> {
        if let Some(w) = self.watchdog.take() {
            let r = w.join().map_err(|_| anyhow::anyhow!("the watchdog thread panicked"))?;
            self.releases.push(r);
        }
        Ok(())
    }
}

impl Probe for MemOpProbe<'_, '_> {
    fn prepare(&mut self, gpu: &Gpu) -> anyhow::Result<()> {
        self.prepared += 1;
        gpu.bind()?;
        match self.op.call {
            MemOpCall::MemFree => self.device = Some(DeviceBuffer::new(self.gpu, BYTES)?),
            MemOpCall::LegacyCopyDtoH | MemOpCall::LegacyMemset if self.device.is_none() => {
                self.device = Some(DeviceBuffer::new(self.gpu, BYTES)?)
            }
            _ => {}
        }
        if self.op.call == MemOpCall::LegacyCopyDtoH {
            let d = self.device.as_ref().expect("made above");
            // `d` holds BYTES bytes; the device is idle between repetitions.
            d.set_bytes(0x3C)?;
            self.host.fill(0);
        }
        gpu.synchronize()?;
        if self.op.call == MemOpCall::EnqueueWrite {
            // The write must change the word: clear it, and write a new value each repetition.
            self.value = self.prepared as u32;
            // SAFETY: the flag is a live word of pinned memory that nothing on the GPU uses now (synchronized).
            unsafe { (*(self.flag.as_ptr() as *const AtomicU32)).store(0, Ordering::SeqCst) };
        }
        // Question 1 (the wait is on a value already there), or the warm-up: nothing to arm.
        if !self.op.call.held() || self.prepared == 1 {
            return Ok(());
        }
        // Question 2, a measured repetition: the waiting stream waits for the next value, which only the
        // watchdog writes.
        self.value = self.value.wrapping_add(1);
        // SAFETY: the flag is a live word of pinned memory, device-accessible at its host address (unified
        // addressing); the watchdog writes the value, and the probe joins it and synchronizes before freeing.
        unsafe { self.ops.wait_geq(self.waiting.handle(), self.flag_addr(), self.value)? };
        self.passed.record(self.waiting.handle())?;
        // SAFETY: the GPU and the event outlive the watchdog: the probe that holds the event borrows the GPU,
        // and joins the thread (in `verify`, or in its `Drop`) before either can go.
        let (context, passed) = unsafe { (gpu.context_ref().unbounded(), self.passed.shared().unbounded()) };
        let release = Release {
            context,
            fallback: self.fallback.raw() as usize,
            passed,
            flag: self.flag.as_ptr() as usize,
            value: self.value,
            ops: self.ops,
        };
        self.watchdog = Some(std::thread::spawn(move || watchdog(release)));
        Ok(())
    }

    /// The waiting stream waits for the watchdog's write: synchronizing would wait for the watchdog.
    fn prepared_work_in_flight(&self) -> bool {
        self.watchdog.is_some()
    }

    fn call(&mut self, gpu: &Gpu) -> CudaResult<()> {
        let s = self.stream.handle();
        // SAFETY: in all arms, every pointer is a live buffer of this probe or a valid out-pointer; the flag as in
        // `prepare`; the module image is NUL-terminated PTX.
        unsafe {
            match self.op.call {
                MemOpCall::EnqueueWait => self.ops.wait_geq(s, self.flag_addr(), self.value),
                MemOpCall::EnqueueWrite => self.ops.write(s, self.flag_addr(), self.value),
                MemOpCall::CtxSynchronize => ctx_synchronize(),
                MemOpCall::MemFree => memory::mem_free(self.device.take().expect("made in prepare").into_raw()),
                MemOpCall::MemAlloc => memory::mem_alloc(BYTES).map(|p| self.allocated = p),
                MemOpCall::ModuleLoad => Module::load(self.gpu, self.ptx).map(|m| self.module = Some(m)),
                MemOpCall::LegacyCopyDtoH => {
                    let d = self.device.as_ref().expect("made in prepare").ptr;
                    memory::memcpy_dtoh(self.host.as_mut_ptr().cast(), d, BYTES)
                }
                MemOpCall::LegacyMemset => {
                    memory::memset_d8(self.device.as_ref().expect("made in prepare").ptr, 0x3C, BYTES)
                }
                MemOpCall::LaunchOther => gpu.launch_empty(s),
            }
        }
    }

    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        match self.op.call_stream() {
            Some(StreamKind::Legacy) => Some(StreamHandle::LEGACY),
            Some(_) => Some(self.stream.handle()),
            None => None,
        }
    }

    fn verify(&mut self, _gpu: &Gpu, _probed: Option<super::method::Page>) -> anyhow::Result<Option<bool>> {
        self.join_watchdog()?;
        match self.op.call {
            MemOpCall::EnqueueWait | MemOpCall::EnqueueWrite => {
                ensure!(
                    self.flag_value() == self.value,
                    "the flag reads {} where {} was written",
                    self.flag_value(),
                    self.value
                )
            }
            MemOpCall::MemAlloc => {
                ensure!(self.allocated != 0, "cuMemAlloc returned no address");
                // SAFETY: allocated by the call, freed once, here; the device is idle.
                unsafe { memory::mem_free(self.allocated)? };
                self.allocated = 0;
            }
            MemOpCall::ModuleLoad => ensure!(self.module.take().is_some(), "the module load left no module"),
            MemOpCall::LegacyCopyDtoH => {
                ensure!(self.host.iter().all(|&b| b == 0x3C), "the copy delivered wrong bytes")
            }
            _ => {}
        }
        Ok(None)
    }
}

impl Drop for MemOpProbe<'_, '_> {
    fn drop(&mut self) {
        // An error may have left a watchdog running: it releases the waiting stream within WATCHDOG (+ GPU_GRACE).
        let _ = self.join_watchdog();
        if self.allocated != 0 {
            // SAFETY: allocated by a call that succeeded and was not freed in `verify` (an error came first).
            let _ = unsafe { memory::mem_free(self.allocated) };
        }
    }
}

pub fn run(gpu: &Gpu, case: &Case, op: StreamMemFacts, reps: usize) -> anyhow::Result<CaseRecord> {
    let ops = match StreamMemOps::resolve() {
        Ok(o) => o,
        Err(why) => return Ok(super::not_run(case, why)),
    };
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let waiting = Stream::new(gpu, op.waiting)?;
    let fallback = Stream::new(gpu, StreamKind::NonBlocking)?;
    let ptx = CString::new(gpu.ptx.text()).map_err(|_| anyhow::anyhow!("the PTX holds a NUL byte"))?;
    let plan = if op.call.held() {
        BlockerPlan { stream: waiting.handle(), ahead: case.setup.layout.blocker_ahead }
    } else {
        BlockerPlan {
            stream: if op.blocker == BlockerPlacement::Same { stream.handle() } else { fallback.handle() },
            ahead: op.blocker == BlockerPlacement::Same,
        }
    };
    let mut probe = MemOpProbe {
        gpu,
        op,
        ops,
        stream: &stream,
        waiting: &waiting,
        fallback: &fallback,
        passed: Event::new(gpu)?,
        flag: HostBuffer::new(gpu, HostKind::Pinned, 4096)?,
        value: 0,
        prepared: 0,
        watchdog: None,
        releases: Vec::new(),
        device: None,
        allocated: 0,
        module: None,
        ptx: &ptx,
        host: vec![0; BYTES],
    };
    // SAFETY: the flag is this probe's pinned buffer, idle.
    unsafe { probe.flag.bytes_mut()[..4].fill(0) };
    let (warmup, blocker_ns, mut reps) = measure(gpu, &mut probe, plan, reps)?;
    if op.call.held() {
        ensure!(probe.releases.len() == reps.len(), "a repetition's watchdog was not accounted for");
        for (r, (written, by_gpu)) in reps.iter_mut().zip(&probe.releases) {
            let returned = r.host_call_start_ns + r.host_call_ns;
            r.metrics.returned_after_host_write = Some(returned >= *written);
            r.metrics.gpu_release = Some(*by_gpu);
        }
    }
    drop(probe);
    Ok(case_record(case, Some(warmup), Some(blocker_ns), reps))
}
