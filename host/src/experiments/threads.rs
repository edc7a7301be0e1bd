//! Threads (rule TH1): one thread's quick asynchronous call while another thread of the same process, in the
//! same context, is inside a slow driver call (a 256 MiB pageable copy, a 256 MiB `cuMemAllocHost`, a 256 MiB
//! `cuMemHostRegister`, a module load). Does the quick call wait for the slow one?
//!
//! From the second repetition on, `prepare` starts the other thread, lets it into its slow call and then lets
//! the protocol time the quick call (behind a blocker in its own stream, as usual). Both threads' host times are
//! kept: `waited_for_other_thread` is 1 when the quick call returned only after the slow call had ended, having
//! started while it ran; `overlapped` says whether the two calls overlapped at all. The protocol launches the
//! blocker (event records, a kernel launch) from the measuring thread between `prepare` and the call: when those
//! calls begin inside the other thread's call and the quick call can start only after it ended,
//! `launch_waited_for_other_thread` is 1: the measuring thread's driver calls waited for the other thread (seen
//! on the H200 for every slow call that lasts longer than a millisecond). The other thread's span is kept as `other_start_ns`/`other_end_ns` (host
//! monotonic clock, like the repetition's own start) for timelines.

use super::method::{measure, BlockerPlan, Probe};
use super::{case_record, Case, Op};
use crate::driver::library::{module_load_data, module_unload};
use crate::driver::memory;
use crate::driver::{
    sys, ContextRef, DeviceBuffer, DriverResult, Gpu, HostBuffer, HostKind, PageableBuffer, Stream, StreamHandle,
    StreamKind,
};
use crate::measure::monotonic_ns;
use crate::record::{BlockerPlacement, CaseRecord, CaseSetup, Family};
use crate::rules::Expected;
use crate::setup::CallTiming;
use anyhow::ensure;
use std::ffi::{c_char, CStr, CString};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the other thread's slow calls move or take.
const SLOW_BYTES: usize = 256 << 20;
/// What the quick copy moves.
const QUICK_BYTES: usize = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlowCall {
    PageableCopy,
    AllocHost,
    HostRegister,
    ModuleLoad,
}

impl SlowCall {
    fn slug(self) -> &'static str {
        match self {
            SlowCall::PageableCopy => "pageable-copy",
            SlowCall::AllocHost => "alloc-host",
            SlowCall::HostRegister => "host-register",
            SlowCall::ModuleLoad => "module-load",
        }
    }

    fn words(self) -> &'static str {
        match self {
            SlowCall::PageableCopy => "a 256 MiB pageable host → device cuMemcpyHtoD",
            SlowCall::AllocHost => "a 256 MiB cuMemAllocHost",
            SlowCall::HostRegister => "a 256 MiB cuMemHostRegister",
            SlowCall::ModuleLoad => "a cuModuleLoadData of the kernels' PTX",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuickCall {
    /// An empty kernel's launch on the thread's own non-blocking stream.
    Launch,
    /// A 4 KiB pinned host → device `cuMemcpyHtoDAsync` on that stream.
    PinnedCopyAsync,
}

#[derive(Clone, Copy, Debug)]
pub struct ThreadOp {
    pub slow: SlowCall,
    pub quick: QuickCall,
}

impl ThreadOp {
    fn case(self) -> Case {
        let (call, quick) = match self.quick {
            QuickCall::Launch => ("cuLaunchKernel", "launch"),
            QuickCall::PinnedCopyAsync => ("cuMemcpyHtoDAsync", "pinned-copy-async"),
        };
        Case {
            setup: CaseSetup {
                id: format!("threads/{}/{quick}/nonblocking/same", self.slow.slug()),
                family: Family::Threads,
                call: call.into(),
                rule: "TH1".into(),
                expected: Expected::undocumented(),
                stream: Some(StreamKind::NonBlocking),
                blocker: BlockerPlacement::Same,
                blocker_stream: Some(StreamKind::NonBlocking),
                blocker_ahead: true,
                host_memory: (self.quick == QuickCall::PinnedCopyAsync).then_some(HostKind::Pinned),
                direction: None,
                bytes: if self.quick == QuickCall::PinnedCopyAsync { QUICK_BYTES as u64 } else { 0 },
                what: format!(
                    "{call} behind a blocker in its own stream while another thread is inside {}",
                    self.slow.words()
                ),
                api: crate::api::Api::Driver,
                peer: None,
                timing: CallTiming::Stopwatch,
            },
            op: Op::Threads(self),
        }
    }
}

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for slow in [SlowCall::PageableCopy, SlowCall::AllocHost, SlowCall::HostRegister, SlowCall::ModuleLoad] {
        for quick in [QuickCall::Launch, QuickCall::PinnedCopyAsync] {
            v.push(ThreadOp { slow, quick }.case());
        }
    }
    v
}

/// What the other thread needs: the context, and the memory its call uses as plain addresses (owned by the
/// probe, which joins the thread before it frees anything).
struct Other {
    slow: SlowCall,
    context: ContextRef<'static>,
    host: usize,
    device: u64,
    ptx: usize,
    start: Arc<Barrier>,
}

// SAFETY: plain driver handles and addresses; the probe that owns what they name joins the thread (in `verify`
// or in its `Drop`) before freeing any of it.
unsafe impl Send for Other {}

/// What the other thread reports: its call's host start and end, its result code, and what it made (an address
/// or a module handle) for the probe to free.
type Report = (u64, u64, sys::CuResult, usize);

fn other_thread(o: Other) -> Report {
    // Current on this thread only.
    let bound = o.context.bind();
    o.start.wait();
    if let Err(e) = bound {
        return (0, 0, e.code, 0);
    }
    let mut made = 0usize;
    let t0 = monotonic_ns();
    // SAFETY: every address names memory of SLOW_BYTES owned by the probe (see `Other`), and the registered
    // range stays allocated until `finish_other` has unregistered it; the PTX is a NUL-terminated string the
    // probe keeps.
    let result = unsafe {
        match o.slow {
            SlowCall::PageableCopy => memory::memcpy_htod(o.device, o.host as *const std::ffi::c_void, SLOW_BYTES),
            SlowCall::AllocHost => memory::mem_alloc_host(SLOW_BYTES).map(|p| made = p as usize),
            SlowCall::HostRegister => {
                memory::mem_host_register(o.host as *mut std::ffi::c_void, SLOW_BYTES, sys::CU_MEMHOSTREGISTER_DEFAULT)
            }
            SlowCall::ModuleLoad => module_load_data(CStr::from_ptr(o.ptx as *const c_char)).map(|m| made = m as usize),
        }
    };
    let t1 = monotonic_ns();
    (t0, t1, result.err().map_or(sys::CUDA_SUCCESS, |e| e.code), made)
}

struct ThreadProbe<'a, 'g> {
    op: ThreadOp,
    stream: &'a Stream<'g>,
    quick_src: HostBuffer<'g>,
    quick_dst: DeviceBuffer<'g>,
    slow_host: PageableBuffer,
    slow_dst: DeviceBuffer<'g>,
    ptx: &'a CString,
    context: ContextRef<'static>,
    prepared: usize,
    other: Option<JoinHandle<Report>>,
    /// Per measured repetition: the other call's start and end.
    spans: Vec<(u64, u64)>,
}

impl ThreadProbe<'_, '_> {
    /// Joins the other thread, checks its result and undoes what its call made.
    fn finish_other(&mut self) -> anyhow::Result<()> {
        let Some(h) = self.other.take() else { return Ok(()) };
        let (t0, t1, rc, made) = h.join().map_err(|_| anyhow::anyhow!("the other thread panicked"))?;
        let undo = || -> anyhow::Result<()> {
            // SAFETY: each arm undoes what the other thread's call made, once, with the thread joined.
            unsafe {
                match self.op.slow {
                    SlowCall::AllocHost if made != 0 => memory::mem_free_host(made as *mut std::ffi::c_void)?,
                    SlowCall::HostRegister if rc == sys::CUDA_SUCCESS => {
                        memory::mem_host_unregister(self.slow_host.as_ptr().cast())?
                    }
                    SlowCall::ModuleLoad if made != 0 => module_unload(made as sys::CUmodule)?,
                    _ => {}
                }
            }
            Ok(())
        };
        undo()?;
        crate::driver::check(rc, "the other thread's slow call")?;
        self.spans.push((t0, t1));
        Ok(())
    }
}

impl Probe for ThreadProbe<'_, '_> {
    fn prepare(&mut self, gpu: &Gpu) -> anyhow::Result<()> {
        self.prepared += 1;
        gpu.synchronize()?;
        if self.prepared == 1 {
            // The warm-up measures the quick call alone.
            return Ok(());
        }
        let start = Arc::new(Barrier::new(2));
        let other = Other {
            slow: self.op.slow,
            context: self.context,
            host: self.slow_host.as_ptr() as usize,
            device: self.slow_dst.ptr,
            ptx: self.ptx.as_ptr() as usize,
            start: start.clone(),
        };
        self.other = Some(std::thread::spawn(move || other_thread(other)));
        start.wait();
        // Let the other thread get inside its call (each takes tens of milliseconds; `overlapped` checks).
        std::thread::sleep(Duration::from_millis(1));
        Ok(())
    }

    /// The other thread is inside its slow call: synchronizing could wait for its copy.
    fn prepared_work_in_flight(&self) -> bool {
        self.other.is_some()
    }

    fn call(&mut self, gpu: &Gpu) -> DriverResult<()> {
        match self.op.quick {
            QuickCall::Launch => gpu.launch_empty(self.stream.handle()),
            // SAFETY: a live pinned buffer and a live device buffer of QUICK_BYTES, untouched until synchronized.
            QuickCall::PinnedCopyAsync => unsafe {
                memory::memcpy_htod_async(
                    self.quick_dst.ptr,
                    self.quick_src.as_ptr().cast(),
                    QUICK_BYTES,
                    self.stream.handle(),
                )
            },
        }
    }

    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        Some(self.stream.handle())
    }

    fn verify(&mut self, gpu: &Gpu, _probed: bool) -> anyhow::Result<Option<bool>> {
        self.finish_other()?;
        gpu.synchronize()?;
        if self.op.quick == QuickCall::PinnedCopyAsync {
            let mut back = vec![0u8; QUICK_BYTES];
            // The device is idle.
            self.quick_dst.copy_to_host(&mut back)?;
            ensure!(back.iter().all(|&b| b == 0x5C), "the quick copy delivered wrong bytes");
        }
        Ok(None)
    }
}

impl Drop for ThreadProbe<'_, '_> {
    fn drop(&mut self) {
        let _ = self.finish_other();
    }
}

pub fn run(gpu: &Gpu, case: &Case, op: ThreadOp, reps: usize) -> anyhow::Result<CaseRecord> {
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let ptx = CString::new(gpu.ptx.text()).map_err(|_| anyhow::anyhow!("the PTX holds a NUL byte"))?;
    let mut quick_src = HostBuffer::new(gpu, HostKind::Pinned, QUICK_BYTES)?;
    // SAFETY: a fresh pinned buffer nothing on the GPU uses yet.
    unsafe { quick_src.bytes_mut() }.fill(0x5C);
    let slow_host = PageableBuffer::new(SLOW_BYTES);
    // SAFETY: the buffer holds SLOW_BYTES bytes; touching every page now keeps first-touch costs out of the copy.
    unsafe { std::ptr::write_bytes(slow_host.as_ptr(), 0x11, SLOW_BYTES) };
    let mut probe = ThreadProbe {
        op,
        stream: &stream,
        quick_src,
        quick_dst: DeviceBuffer::new(gpu, QUICK_BYTES)?,
        slow_host,
        slow_dst: DeviceBuffer::new(gpu, if op.slow == SlowCall::PageableCopy { SLOW_BYTES } else { 1 })?,
        ptx: &ptx,
        // SAFETY: the probe joins the other thread (in `verify`, or in its `Drop`) before `run` returns, while
        // `gpu` is still borrowed.
        context: unsafe { gpu.context_ref().unbounded() },
        prepared: 0,
        other: None,
        spans: Vec::new(),
    };
    let plan = BlockerPlan { stream: stream.handle(), ahead: true };
    let (warmup, blocker_ns, mut reps) = measure(gpu, &mut probe, plan, reps)?;
    ensure!(probe.spans.len() == reps.len(), "a repetition's other thread was not accounted for");
    for (r, &(t0, t1)) in reps.iter_mut().zip(&probe.spans) {
        note_other_span(r, t0, t1);
    }
    drop(probe);
    Ok(case_record(case, Some(warmup), Some(blocker_ns), reps))
}

/// Puts the other thread's call (`t0..t1`, host clock) beside the repetition's own calls, as metrics.
fn note_other_span(r: &mut crate::record::Rep, t0: u64, t1: u64) {
    let (start, end) = (r.host_call_start_ns, r.host_call_start_ns + r.host_call_ns);
    let overlapped = start < t1 && t0 < end;
    r.metrics.insert("overlapped".into(), f64::from(u8::from(overlapped)));
    r.metrics.insert("waited_for_other_thread".into(), f64::from(u8::from(start < t1 && end >= t1)));
    // The protocol's own calls before THE call (the blocker's event records and launch) are made by the
    // measuring thread too: when they began inside the other call and THE call could start only after it
    // ended, those calls waited for the other thread.
    let launched = r.host_blocker_launch_ns.is_some_and(|b| t0 <= b && b < t1);
    r.metrics.insert("launch_waited_for_other_thread".into(), f64::from(u8::from(launched && start >= t1)));
    r.metrics.insert("other_start_ns".into(), t0 as f64);
    r.metrics.insert("other_end_ns".into(), t1 as f64);
    r.metrics.insert("other_call_us".into(), (t1.saturating_sub(t0)) as f64 / 1e3);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_slow_call_meets_every_quick_call() {
        let cases = cases();
        assert_eq!(cases.len(), 8);
        let mut ids: Vec<&str> = cases.iter().map(|c| c.setup.id.as_str()).collect();
        ids.dedup();
        assert_eq!(ids.len(), 8);
        assert!(cases.iter().all(|c| c.setup.blocker_ahead && c.setup.rule == "TH1"));
    }

    #[test]
    fn spans_give_the_flags() {
        let rep = |launch: u64, start: u64, took: u64| crate::record::Rep {
            host_blocker_launch_ns: Some(launch),
            host_call_start_ns: start,
            host_call_ns: took,
            ..Default::default()
        };
        let flags = |r: &crate::record::Rep| {
            ["overlapped", "waited_for_other_thread", "launch_waited_for_other_thread"].map(|k| r.metrics[k])
        };
        // As on the H200: the blocker's launch began 1 ms into a 20 ms call; THE call came after it ended.
        let mut r = rep(1_000_000, 20_200_000, 3_000);
        note_other_span(&mut r, 0, 20_000_000);
        assert_eq!(flags(&r), [0.0, 0.0, 1.0]);
        // THE call itself inside the other call, returning after it: it waited.
        let mut r = rep(500_000, 1_000_000, 19_500_000);
        note_other_span(&mut r, 0, 20_000_000);
        assert_eq!(flags(&r), [1.0, 1.0, 0.0]);
        // Inside it and back before it ended: overlapped, did not wait.
        let mut r = rep(500_000, 1_000_000, 3_000);
        note_other_span(&mut r, 0, 20_000_000);
        assert_eq!(flags(&r), [1.0, 0.0, 0.0]);
        assert_eq!(r.metrics["other_call_us"], 20_000.0);
    }
}
