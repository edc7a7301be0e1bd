//! Threads (rule TH1): one thread's quick asynchronous call (an empty kernel's launch, a 4 KiB pinned
//! `cuMemcpyHtoDAsync`, a `cuEventRecord`) while another thread of the same process, in the same context, is
//! inside a slow driver call (a 256 MiB pageable copy, a 256 MiB `cuMemAllocHost`, a 256 MiB
//! `cuMemHostRegister`, a module load), or while a host function (`cuLaunchHostFunc`, on a stream of its own)
//! runs on the driver's callback thread. Does the quick call wait for the slow one?
//!
//! Per case: a warm-up times the quick call alone; then the slow call is timed alone, once, in the other
//! thread (`other_alone_us`), and the blocker is made to outlast it three times over (a quick call that waits
//! for the other thread must return while the blocker still runs, or it would read as having waited for the
//! blocker). Then each repetition follows the protocol (`method::run_rep`): `prepare` starts the other thread,
//! which makes the context current and waits; the blocker and the event before the call are enqueued from the
//! measuring thread; only then `before_call` releases the other thread into its slow call, waits until the
//! other thread has noted its call's start (its last instruction before the call), and spins `INSIDE` more,
//! so that the slow call has begun; then the protocol times the quick call. So the measuring thread's own
//! driver calls (event records, the blocker's launch) are all made before the slow call starts, and the quick
//! call is the first driver call it makes inside it.
//!
//! Both threads' host times are kept, per repetition (host monotonic clock, like the repetition's own start):
//! `other_start_ns`/`other_end_ns` (for timelines) and `other_call_us`; `overlapped` is 1 when the two calls
//! overlapped at all; `waited_for_other_thread` is 1 when the quick call started inside the slow call and
//! returned only after it had ended; `started_into_other_us` is how long the slow call had run when the quick
//! call started, and `returned_after_other_end_us` how long after the slow call's end the quick call
//! returned (negative: before it ended; a call that waited for a lock the other call held returns within
//! microseconds of its end).
//!
//! The host function is the one slow thing not made by a thread of ours: `before_call` enqueues it (with
//! `cuLaunchHostFunc`, from the measuring thread, on a third non-blocking stream with nothing ahead: neither the
//! quick call's stream nor the blocker's) and waits until the function, on the driver's callback thread, has
//! noted its start, then `INSIDE` more; the function spins `HOST_FUNC_SPIN` and notes its end as its last
//! instruction. So its span is the function's own, not the driver's dispatch around it. The enqueue is the one
//! driver call the measuring thread makes between the blocker's launch and the quick call, and it is made
//! before the function starts. Its "alone" time is the function's spin, enqueued with nothing else going on.
//!
//! Recordings made before this order (ids `threads/<slow>/<quick>/nonblocking/same`) started the other thread
//! in `prepare`, before the blocker's launch: the measuring thread's event records and launch then waited for
//! the slow call (`launch_waited_for_other_thread`), and the quick call came only after it had ended.
//!
//! The runtime twins make the quick call through the runtime (`cudaLaunchKernel`, `cudaMemcpyAsync`,
//! `cudaEventRecord`); the other thread's slow call stays the driver's, so that the quick call's API is the one
//! difference between a case and its twin.
//!
//! The cases, their ids, rules and words are the catalogue's (`async_lab_core::catalogue::threads`); this file
//! measures them.

use super::method::{blocker_ns_for, run_rep, Blocker, BlockerPlan, Probe, MAX_BLOCKER};
use super::{case_record, Case};
use anyhow::{bail, ensure};
use async_lab_core::api::Api;
use async_lab_core::catalogue::threads::{self as catalogue, QuickCall, SlowCall, ThreadFacts, HOST_FUNC_SPIN_MS};
use async_lab_core::record::{CaseRecord, Rep};
use async_lab_driver::library::{module_load_data, module_unload};
use async_lab_driver::measure::monotonic_ns;
use async_lab_driver::memory;
use async_lab_driver::runtime::library::{RtKernel, RtLibrary};
use async_lab_driver::runtime::memory as rtmem;
use async_lab_driver::runtime::stream as rtstream;
use async_lab_driver::stream;
use async_lab_driver::{
    sys, ContextRef, CudaResult, DeviceBuffer, Event, Gpu, HostBuffer, HostKind, PageableBuffer, Stream, StreamHandle,
    StreamKind,
};
use async_lab_ptx::kernels;
use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the other thread's slow calls move or take.
const SLOW_BYTES: usize = catalogue::SLOW_BYTES as usize;
/// What the quick copy moves.
const QUICK_BYTES: usize = catalogue::QUICK_BYTES as usize;
/// How long after the other thread noted its call's start the quick call is made: long enough for the slow
/// call to be inside the driver (entering it takes about a microsecond), short enough to fall inside the
/// shortest slow call (a module load: 0.19-0.27 ms on the H200).
const INSIDE: Duration = Duration::from_micros(50);
/// How long the measuring thread waits for the other thread to start its call once released (it is already
/// running and bound to the context then): past this, the repetition fails instead of spinning on. It fails once
/// the thread has returned: the thread is joined first, the only safe way to free the buffers it uses (a
/// driver call that never returns would still hang the run there).
const ENTER_TIMEOUT: Duration = Duration::from_secs(5);
/// The blocker outlasts the slow call alone this many times over.
const BLOCKER_OVER_SLOW: u64 = 3;
/// How long the host function spins: far longer than a quick call (microseconds), so a quick call that waits
/// for it is plain; short enough to keep the family fast (the blocker is three times this: 90 ms a repetition).
const HOST_FUNC_SPIN: Duration = Duration::from_millis(HOST_FUNC_SPIN_MS);

/// What `other_thread` stores in `Gate::entered` when it could not make the context current.
const FAILED: u64 = u64::MAX;

/// What the two threads share: the host time at which the other thread starts its call (0 until then,
/// `FAILED` if it never will).
#[derive(Default)]
struct Gate {
    entered: AtomicU64,
}

/// What the host function and the measuring thread share: the gate on which the function notes its start (as
/// the other thread does), and its end (0 until then).
#[derive(Default)]
struct HostFuncCell {
    gate: Gate,
    end: AtomicU64,
}

/// The host function of `SlowCall::HostFunc`: called by the driver on its callback thread, it notes its start,
/// spins `HOST_FUNC_SPIN` and notes its end. It makes no CUDA call (host functions must not) and cannot panic.
unsafe extern "C" fn spin_host_func(user: *mut c_void) {
    // SAFETY: `user` is the `&'static HostFuncCell` of a `HostFuncSide`: leaked, never freed, so it outlives
    // every run of this function, even one still pending when a repetition failed.
    let cell = unsafe { &*(user as *const HostFuncCell) };
    let t0 = monotonic_ns();
    cell.gate.entered.store(t0.clamp(1, FAILED - 1), Ordering::Release);
    spin_until(t0 + HOST_FUNC_SPIN.as_nanos() as u64);
    cell.end.store(monotonic_ns().max(1), Ordering::Release);
}

/// Spins until the host monotonic clock reads `t` (ns).
fn spin_until(t: u64) {
    while monotonic_ns() < t {
        std::hint::spin_loop();
    }
}

/// What `wait_for_entry` saw on the gate.
#[derive(Debug, PartialEq, Eq)]
enum Entry {
    /// The other thread is going into its call; the host time it noted just before.
    Entered(u64),
    /// It could not make the context current, and will not go in.
    Failed,
    /// Neither within the time allowed.
    TimedOut,
}

/// Spins until the other thread has said, on `gate`, that it is going into its call, or that it will not;
/// gives up after `timeout`.
fn wait_for_entry(gate: &Gate, timeout: Duration) -> Entry {
    let waited = Instant::now();
    loop {
        match gate.entered.load(Ordering::Acquire) {
            0 if waited.elapsed() > timeout => return Entry::TimedOut,
            0 => std::hint::spin_loop(),
            FAILED => return Entry::Failed,
            t => return Entry::Entered(t),
        }
    }
}

/// What the other thread needs: the context, the memory its call uses as plain addresses (owned by the probe,
/// which joins the thread before it frees anything), the signal that releases it into its call, and the gate
/// on which it says that it is going in.
struct Other {
    slow: SlowCall,
    context: ContextRef<'static>,
    host: usize,
    device: u64,
    ptx: usize,
    go: mpsc::Receiver<()>,
    gate: Arc<Gate>,
}

// SAFETY: plain driver handles and addresses; the probe that owns what they name joins the thread (in `verify`,
// `before_call` or its `Drop`) before freeing any of it.
unsafe impl Send for Other {}

/// What the other thread reports: whether it made its call, the call's host start and end, its result code
/// (or the binding's, when it did not make it), and what it made (an address or a module handle) for the probe
/// to free.
struct Report {
    ran: bool,
    start: u64,
    end: u64,
    rc: sys::CuResult,
    made: usize,
}

impl Report {
    fn not_run(rc: sys::CuResult) -> Report {
        Report { ran: false, start: 0, end: 0, rc, made: 0 }
    }
}

fn other_thread(o: Other) -> Report {
    // Current on this thread only.
    if let Err(e) = o.context.bind() {
        o.gate.entered.store(FAILED, Ordering::Release);
        return Report::not_run(e.code);
    }
    // A closed channel: the probe gave up on this repetition before releasing the thread.
    if o.go.recv().is_err() {
        return Report::not_run(sys::CUDA_SUCCESS);
    }
    let mut made = 0usize;
    let t0 = monotonic_ns();
    o.gate.entered.store(t0.clamp(1, FAILED - 1), Ordering::Release);
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
            // `start_other` never starts a thread for it (it runs on the driver's thread): a panic here is an
            // error of `finish_other`'s join, not a hang.
            SlowCall::HostFunc => unreachable!("a host function is not made in `other_thread`"),
        }
    };
    let t1 = monotonic_ns();
    Report { ran: true, start: t0, end: t1, rc: result.err().map_or(sys::CUDA_SUCCESS, |e| e.code), made }
}

/// The empty kernel through the runtime (`cudaLibraryLoadData`), for the runtime twins' `cudaLaunchKernel`.
struct RuntimeKernel {
    empty: RtKernel,
    /// Keeps the kernel loaded; dropped after it (the device is synchronized by then).
    _library: RtLibrary,
}

/// The other thread while it runs: its handle, the sender that releases it (dropping it cancels the thread
/// before its call), and the gate.
struct Running {
    handle: JoinHandle<Report>,
    go: Option<mpsc::Sender<()>>,
    gate: Arc<Gate>,
}

/// The host function's side (`SlowCall::HostFunc` only): its own stream and the cell it writes.
///
/// The cell is leaked (24 bytes a case), not boxed: freeing it safely would need the stream synchronized first,
/// and that can fail (a context error) while the function may still be about to run or running; leaked, no
/// error path can leave the function writing freed memory. The stream is still synchronized before the cell
/// is reset or read (`finish_other`), so each repetition reads its own function's span, and before the next
/// case (the probe's `Drop`); destroying it with the function pending is allowed (the driver frees the stream
/// once its work is done).
struct HostFuncSide<'g> {
    stream: Stream<'g>,
    cell: &'static HostFuncCell,
    /// `start_other` armed it: the next `release_other` enqueues the function.
    armed: bool,
    /// A function was (or may have been) enqueued and its stream not synchronized since.
    pending: bool,
}

struct ThreadProbe<'a, 'g> {
    op: ThreadFacts,
    stream: &'a Stream<'g>,
    quick_src: HostBuffer<'g>,
    quick_dst: DeviceBuffer<'g>,
    slow_host: PageableBuffer,
    slow_dst: DeviceBuffer<'g>,
    ptx: &'a CString,
    context: ContextRef<'static>,
    /// For the runtime twins of the launch: the kernel through the runtime.
    runtime: Option<RuntimeKernel>,
    /// The event the event-record case records.
    marker: Event<'g>,
    api: Api,
    /// Whether `prepare` starts the other thread (not in the warm-up).
    with_other: bool,
    other: Option<Running>,
    /// For `SlowCall::HostFunc`: the host function's stream and cell (then no other thread is started).
    host_func: Option<HostFuncSide<'g>>,
    /// Per slow call made: its start and end.
    spans: Vec<(u64, u64)>,
}

impl ThreadProbe<'_, '_> {
    /// Starts the other thread: it makes the context current and waits for `release_other`. A thread still
    /// there from before (a repetition cut short) is finished first, so that none is ever left detached. For
    /// the host function, arms it instead (it is enqueued in `release_other`).
    fn start_other(&mut self) -> anyhow::Result<()> {
        self.finish_other()?;
        if let Some(hf) = self.host_func.as_mut() {
            hf.armed = true;
            return Ok(());
        }
        let (go, rx) = mpsc::channel();
        let gate = Arc::new(Gate::default());
        let other = Other {
            slow: self.op.slow,
            context: self.context,
            host: self.slow_host.as_ptr() as usize,
            device: self.slow_dst.ptr,
            ptx: self.ptx.as_ptr() as usize,
            go: rx,
            gate: gate.clone(),
        };
        let handle = std::thread::spawn(move || other_thread(other));
        self.other = Some(Running { handle, go: Some(go), gate });
        Ok(())
    }

    /// Releases the other thread into its slow call and returns once it is inside it: when it has noted its
    /// call's start, plus `INSIDE`. Fails (having joined the thread) when the thread could not start its call.
    fn release_other(&mut self) -> anyhow::Result<()> {
        if self.host_func.is_some() {
            return self.release_host_func();
        }
        let Some(running) = self.other.as_mut() else { return Ok(()) };
        let gate = running.gate.clone();
        if let Some(go) = running.go.take() {
            // A send fails only when the thread is gone (it could not bind): the gate then says so.
            let _ = go.send(());
        }
        let entered = match wait_for_entry(&gate, ENTER_TIMEOUT) {
            Entry::Entered(t) => t,
            Entry::Failed => {
                self.finish_other()?;
                bail!("the other thread could not start its slow call")
            }
            Entry::TimedOut => {
                self.finish_other()?;
                bail!("the other thread did not start its slow call within {ENTER_TIMEOUT:?}")
            }
        };
        spin_until(entered + INSIDE.as_nanos() as u64);
        Ok(())
    }

    /// `release_other` for the host function: enqueues it on its own stream (neither the quick call's nor the
    /// blocker's) and returns once it runs: when it has noted its start, plus `INSIDE`. Fails (having
    /// synchronized its stream) when it did not start in time.
    fn release_host_func(&mut self) -> anyhow::Result<()> {
        let Some(hf) = self.host_func.as_mut() else { return Ok(()) };
        if !std::mem::take(&mut hf.armed) {
            return Ok(());
        }
        // `start_other` finished the previous function (its stream synchronized) before arming: nothing writes
        // the cell now.
        hf.cell.gate.entered.store(0, Ordering::Release);
        hf.cell.end.store(0, Ordering::Release);
        // Before the enqueue: whatever it returns, the stream is synchronized before the cell is used again.
        hf.pending = true;
        let user = (hf.cell as *const HostFuncCell).cast_mut().cast::<c_void>();
        // SAFETY: `spin_host_func` only reads the clock and stores into the cell's atomics, from any thread; the
        // cell is `'static` (leaked), so it outlives every pending run. The stream is live (owned by `hf`).
        unsafe { stream::launch_host_func(hf.stream.handle(), spin_host_func, user) }?;
        match wait_for_entry(&hf.cell.gate, ENTER_TIMEOUT) {
            Entry::Entered(t) => {
                spin_until(t + INSIDE.as_nanos() as u64);
                Ok(())
            }
            // The function never says `FAILED`; either way it did not start in time.
            Entry::Failed | Entry::TimedOut => {
                self.finish_other()?;
                bail!("the host function did not start within {ENTER_TIMEOUT:?}")
            }
        }
    }

    /// Joins the other thread (cancelling it if it was never released), checks its result and undoes what its
    /// call made; notes the call's span.
    fn finish_other(&mut self) -> anyhow::Result<()> {
        if let Some(hf) = self.host_func.as_mut() {
            hf.armed = false;
            if !hf.pending {
                return Ok(());
            }
            // Waits for the function to return (it spins `HOST_FUNC_SPIN` once started).
            hf.stream.synchronize()?;
            hf.pending = false;
            let (start, end) = (hf.cell.gate.entered.load(Ordering::Acquire), hf.cell.end.load(Ordering::Acquire));
            ensure!(start != 0 && end != 0, "the host function did not run");
            self.spans.push((start, end));
            return Ok(());
        }
        let Some(running) = self.other.take() else { return Ok(()) };
        drop(running.go);
        let report = running.handle.join().map_err(|_| anyhow::anyhow!("the other thread panicked"))?;
        let Report { ran, start, end, rc, made } = report;
        let undo = || -> anyhow::Result<()> {
            // SAFETY: each arm undoes what the other thread's call made, once, with the thread joined.
            unsafe {
                match self.op.slow {
                    SlowCall::AllocHost if made != 0 => memory::mem_free_host(made as *mut std::ffi::c_void)?,
                    SlowCall::HostRegister if ran && rc == sys::CUDA_SUCCESS => {
                        memory::mem_host_unregister(self.slow_host.as_ptr().cast())?
                    }
                    SlowCall::ModuleLoad if made != 0 => module_unload(made as sys::CUmodule)?,
                    _ => {}
                }
            }
            Ok(())
        };
        undo()?;
        let what = if ran { "the other thread's slow call" } else { "the other thread's cuCtxSetCurrent" };
        async_lab_driver::check(rc, what)?;
        if ran {
            self.spans.push((start, end));
        }
        Ok(())
    }

    /// The slow call alone, in the other thread, with nothing else going on: its host time.
    fn slow_call_alone(&mut self) -> anyhow::Result<u64> {
        self.start_other()?;
        self.release_other()?;
        self.finish_other()?;
        let (t0, t1) = self.spans.pop().ok_or_else(|| anyhow::anyhow!("the slow call alone was not made"))?;
        Ok(t1.saturating_sub(t0))
    }
}

impl Probe for ThreadProbe<'_, '_> {
    fn prepare(&mut self, _gpu: &Gpu) -> anyhow::Result<()> {
        if self.with_other {
            self.start_other()?;
        }
        Ok(())
    }

    /// The blocker and the event before the call are in the stream: now the other thread goes into its call.
    fn before_call(&mut self, _gpu: &Gpu) -> anyhow::Result<()> {
        self.release_other()
    }

    fn call(&mut self, gpu: &Gpu) -> CudaResult<()> {
        let (dst, src, s) = (self.quick_dst.ptr, self.quick_src.addr(), self.stream.handle());
        match (self.op.quick, &self.runtime) {
            (QuickCall::Launch, None) => gpu.launch_empty(s),
            // SAFETY: `empty` takes no parameters; the library is held by the probe.
            (QuickCall::Launch, Some(rt)) => unsafe { rt.empty.launch(1, 1, s, &mut []) },
            // SAFETY: a live pinned buffer and a live device buffer of QUICK_BYTES, untouched until synchronized;
            // the stream is a driver stream of the primary context the runtime uses too.
            (QuickCall::PinnedCopyAsync, _) if self.api == Api::Runtime => unsafe {
                let kind = async_lab_driver::runtime::sys::cudaMemcpyKind::cudaMemcpyHostToDevice;
                rtmem::rt_memcpy_async(dst, src, QUICK_BYTES, kind, s)
            },
            // SAFETY: as above.
            (QuickCall::PinnedCopyAsync, _) => unsafe {
                memory::memcpy_htod_async(dst, src as *const std::ffi::c_void, QUICK_BYTES, s)
            },
            (QuickCall::EventRecord, _) if self.api == Api::Runtime => rtstream::event_record(&self.marker, s),
            (QuickCall::EventRecord, _) => self.marker.record(s),
        }
    }

    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        Some(self.stream.handle())
    }

    fn verify(&mut self, gpu: &Gpu, _probed: Option<super::method::Page>) -> anyhow::Result<Option<bool>> {
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

pub fn run(gpu: &Gpu, case: &Case, op: ThreadFacts, reps: usize) -> anyhow::Result<CaseRecord> {
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let blocker = Blocker::new(gpu)?;
    let ptx = CString::new(gpu.ptx.text()).map_err(|_| anyhow::anyhow!("the PTX holds a NUL byte"))?;
    let mut quick_src = HostBuffer::new(gpu, HostKind::Pinned, QUICK_BYTES)?;
    // SAFETY: a fresh pinned buffer nothing on the GPU uses yet.
    unsafe { quick_src.bytes_mut() }.fill(0x5C);
    let slow_host = PageableBuffer::new(SLOW_BYTES);
    // SAFETY: the buffer holds SLOW_BYTES bytes; touching every page now keeps first-touch costs out of the copy.
    unsafe { std::ptr::write_bytes(slow_host.as_ptr(), 0x11, SLOW_BYTES) };
    let runtime = if case.setup.api == Api::Runtime && op.quick == QuickCall::Launch {
        let library = RtLibrary::load(gpu.ptx.text())?;
        Some(RuntimeKernel { empty: library.kernel(kernels::EMPTY.name)?, _library: library })
    } else {
        None
    };
    let host_func = match op.slow {
        SlowCall::HostFunc => Some(HostFuncSide {
            stream: Stream::new(gpu, StreamKind::NonBlocking)?,
            // Leaked on purpose: see `HostFuncSide`.
            cell: Box::leak(Box::new(HostFuncCell::default())),
            armed: false,
            pending: false,
        }),
        _ => None,
    };
    let mut probe = ThreadProbe {
        op,
        stream: &stream,
        quick_src,
        quick_dst: DeviceBuffer::new(gpu, QUICK_BYTES)?,
        slow_host,
        slow_dst: DeviceBuffer::new(gpu, if op.slow == SlowCall::PageableCopy { SLOW_BYTES } else { 1 })?,
        ptx: &ptx,
        // SAFETY: the probe joins the other thread (in `verify`, `before_call` or its `Drop`) before `run`
        // returns, while `gpu` is still borrowed.
        context: unsafe { gpu.context_ref().unbounded() },
        runtime,
        marker: Event::new(gpu)?,
        api: case.setup.api,
        with_other: false,
        other: None,
        host_func,
        spans: Vec::new(),
    };
    let plan = BlockerPlan { stream: stream.handle(), ahead: true };
    let rep = |probe: &mut ThreadProbe, ns| {
        run_rep(gpu, probe, plan, &blocker, ns)?
            .ok_or_else(|| anyhow::anyhow!("the threads probe never probes a source"))
    };
    // The quick call alone (no blocker, no other thread), then the slow call alone: the blocker outlasts both.
    let warmup = rep(&mut probe, 0)?;
    let alone_ns = probe.slow_call_alone()?;
    let blocker_ns = blocker_ns_for(&warmup).max(BLOCKER_OVER_SLOW * alone_ns).min(MAX_BLOCKER.as_nanos() as u64);
    probe.with_other = true;
    let mut measured = (0..reps).map(|_| rep(&mut probe, blocker_ns)).collect::<anyhow::Result<Vec<_>>>()?;
    ensure!(probe.spans.len() == measured.len(), "a repetition's other thread was not accounted for");
    for (r, &(t0, t1)) in measured.iter_mut().zip(&probe.spans) {
        note_other_span(r, t0, t1, alone_ns);
    }
    drop(probe);
    Ok(case_record(case, Some(warmup), Some(blocker_ns), measured))
}

/// Puts the other thread's call (`t0..t1`, host clock; `alone_ns` when made alone) beside the repetition's
/// own call, as metrics.
fn note_other_span(r: &mut Rep, t0: u64, t1: u64, alone_ns: u64) {
    let (start, end) = (r.host_call_start_ns, r.host_call_start_ns + r.host_call_ns);
    let overlapped = start < t1 && t0 < end;
    let inside = t0 <= start && start < t1;
    let signed_us = |a: u64, b: u64| (a as f64 - b as f64) / 1e3;
    let m = &mut r.metrics;
    m.overlapped = Some(overlapped);
    m.waited_for_other_thread = Some(inside && end >= t1);
    m.started_into_other_us = Some(signed_us(start, t0));
    m.returned_after_other_end_us = Some(signed_us(end, t1));
    m.other_start_ns = Some(t0 as f64);
    m.other_end_ns = Some(t1 as f64);
    m.other_call_us = Some((t1.saturating_sub(t0)) as f64 / 1e3);
    m.other_alone_us = Some(alone_ns as f64 / 1e3);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blocker_outlasts_the_host_function_three_times_within_the_longest_blocker() {
        assert!(BLOCKER_OVER_SLOW as u128 * HOST_FUNC_SPIN.as_nanos() < MAX_BLOCKER.as_nanos());
    }

    #[test]
    fn the_host_function_notes_its_span_on_its_cell() {
        // Called here as the driver would call it, on another thread.
        let cell: &'static HostFuncCell = Box::leak(Box::new(HostFuncCell::default()));
        let user = (cell as *const HostFuncCell) as usize;
        // SAFETY: the cell is leaked, as in `run`.
        let t = std::thread::spawn(move || unsafe { spin_host_func(user as *mut c_void) });
        let Entry::Entered(t0) = wait_for_entry(&cell.gate, Duration::from_secs(5)) else { panic!("no start") };
        t.join().unwrap();
        let t1 = cell.end.load(Ordering::Acquire);
        assert!(t1 >= t0 + HOST_FUNC_SPIN.as_nanos() as u64, "{t0}..{t1}");
    }

    #[test]
    fn the_measuring_thread_never_waits_forever_for_the_other() {
        // Nobody says anything: it gives up.
        assert_eq!(wait_for_entry(&Gate::default(), Duration::from_millis(5)), Entry::TimedOut);
        // The other thread could not bind, or goes in a little later.
        for (said, want) in [(FAILED, Entry::Failed), (123, Entry::Entered(123))] {
            let gate = Arc::new(Gate::default());
            let other = gate.clone();
            let t = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(2));
                other.entered.store(said, Ordering::Release);
            });
            assert_eq!(wait_for_entry(&gate, Duration::from_secs(5)), want);
            t.join().unwrap();
        }
    }

    fn rep(start: u64, took: u64) -> Rep {
        Rep {
            host_blocker_launch_ns: Some(start.saturating_sub(100_000)),
            host_call_start_ns: start,
            host_call_ns: took,
            ..Default::default()
        }
    }

    fn flags(r: &Rep) -> [Option<bool>; 2] {
        [r.metrics.overlapped, r.metrics.waited_for_other_thread]
    }

    #[test]
    fn spans_give_the_flags() {
        // Inside a 20 ms call from 1 ms in, returning 5 µs after it ended: it waited.
        let mut r = rep(1_000_000, 19_005_000);
        note_other_span(&mut r, 0, 20_000_000, 18_000_000);
        assert_eq!(flags(&r), [Some(true), Some(true)]);
        assert_eq!(r.metrics.started_into_other_us, Some(1_000.0));
        assert_eq!(r.metrics.returned_after_other_end_us, Some(5.0));
        assert_eq!(r.metrics.other_call_us, Some(20_000.0));
        assert_eq!(r.metrics.other_alone_us, Some(18_000.0));
        // Inside it and back before it ended: overlapped, did not wait.
        let mut r = rep(1_000_000, 3_000);
        note_other_span(&mut r, 0, 20_000_000, 18_000_000);
        assert_eq!(flags(&r), [Some(true), Some(false)]);
        assert_eq!(r.metrics.returned_after_other_end_us, Some(-18_997.0));
        // Started after the other call ended (a slow call shorter than the wait before the quick call): no
        // overlap, nothing measured about threads.
        let mut r = rep(300_000, 3_000);
        note_other_span(&mut r, 0, 250_000, 200_000);
        assert_eq!(flags(&r), [Some(false), Some(false)]);
        // Started before the other call and returned after it: overlapped, but it did not start inside it.
        let mut r = rep(1_000, 30_000_000);
        note_other_span(&mut r, 2_000, 20_000_000, 18_000_000);
        assert_eq!(flags(&r), [Some(true), Some(false)]);
        assert!(r.metrics.started_into_other_us.is_some_and(|us| us < 0.0));
        // No metric of the older order.
        assert_eq!(r.metrics.launch_waited_for_other_thread, None);
    }
}
