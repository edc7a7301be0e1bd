//! The seed question's program, step by step: a 10 MB host → device copy, a 1e6-cycle kernel on 128×128
//! threads, the copy back, and a host callback, all on one non-blocking stream, with pageable and with pinned
//! host memory. For each call: its time, whether the work ahead of it had finished when it returned, and
//! whether its own work had; after the last call, whether the callback had run (the question's "has the
//! stream concluded?"), and after synchronizing.
//!
//! Each step is read the way `method.rs` reads every other call: right after the return, a timed query of
//! the stream (had its own work finished?) and a timed query of the event after the step before (had the
//! work ahead of it finished?); the events between the steps place each step's work on the GPU's clock. The
//! step before plays the blocker's part in the repetition (`Rep::blocker_*`), so the one classifier
//! (`async_lab_core::classify`) decides what held each call, with the same resolution as everywhere.
//!
//! The kernel comes from a library loaded just before (`cuLibraryLoadData`, the way the runtime loads a
//! program's kernels), so its launch is a first launch: under lazy loading (the default on Linux since CUDA
//! 12.2) that launch is when the kernel is loaded into the context.
//!
//! This file makes the question's calls through the driver API, each the runtime call's counterpart
//! (`cuMemcpyAsync` for `cudaMemcpyAsync(..., cudaMemcpyDefault)`, `cuStreamAddCallback` for
//! `cudaStreamAddCallback`); `seed_runtime.rs` makes them through the runtime API. Both use `Sequence` (the
//! timeline and the signals of each step) and `Flag` (the question's `callback_executed`) from here. The steps,
//! their ids, calls and rules are the catalogue's (`async_lab_core::catalogue::seed`); each step's record is set
//! up from its facts (`SeedFacts::at`).

use super::method::timed_query;
use crate::pattern;
use anyhow::ensure;
use async_lab_core::catalogue::seed::{SeedFacts, Step};
use async_lab_core::catalogue::{self, Case};
use async_lab_core::record::{CaseRecord, CaseSetup, Rep};
use async_lab_driver::library::Library;
use async_lab_driver::measure::{monotonic_ns, Stopwatch, Timed};
use async_lab_driver::memory::memcpy_async;
use async_lab_driver::stream::stream_add_callback;
use async_lab_driver::{
    sys, CudaResult, DeviceBuffer, Event, Gpu, HostBuffer, HostKind, Stream, StreamHandle, StreamKind,
};
use async_lab_ptx::kernels;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

/// The seed program's sizes.
pub const BUFFER_BYTES: usize = catalogue::seed::BUFFER_BYTES as usize;
pub const KERNEL_CYCLES: u64 = 1_000_000;
pub(super) const GRID: u32 = 128;
pub(super) const BLOCK: u32 = 128;

/// The question's `callback_executed`: set by the host callback, read right after the last enqueue and
/// after synchronizing.
///
/// Its memory is leaked on purpose (one byte per experiment): a callback still queued when an error cuts a
/// repetition short can then never write to freed memory.
#[derive(Clone, Copy)]
pub(super) struct Flag(&'static AtomicBool);

impl Flag {
    pub fn new() -> Flag {
        Flag(Box::leak(Box::new(AtomicBool::new(false))))
    }

    pub fn reset(self) {
        self.0.store(false, Ordering::SeqCst);
    }

    pub fn is_set(self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// The callback's user data: a pointer to the flag, valid for the rest of the process.
    pub fn user(self) -> *mut c_void {
        (self.0 as *const AtomicBool) as *mut c_void
    }

    /// What the question prints: the flag read right after the last enqueue, and again once `synchronize`
    /// (the stream's) returned.
    pub fn around<E>(self, synchronize: impl FnOnce() -> Result<(), E>) -> Result<Conclusion, E> {
        let after_enqueue = self.is_set();
        synchronize()?;
        Ok(Conclusion { after_enqueue, after_sync: self.is_set() })
    }
}

/// Whether the callback had run right after the last enqueue, and after synchronizing.
#[derive(Clone, Copy, Debug)]
pub(super) struct Conclusion {
    after_enqueue: bool,
    after_sync: bool,
}

/// Sets the flag that `user` points at (the host function: a `CUhostFn`).
///
/// # Safety
/// `user` comes from `Flag::user`.
pub(super) unsafe extern "C" fn set_flag(user: *mut c_void) {
    // SAFETY: `Flag::user` points at a leaked, never freed AtomicBool; atomics may be written from the
    // driver's callback thread.
    unsafe { &*(user as *const AtomicBool) }.store(true, Ordering::SeqCst);
}

/// `set_flag` as a stream callback (`CUstreamCallback`: stream, status, user data).
///
/// # Safety
/// `user` comes from `Flag::user`.
unsafe extern "C" fn set_flag_on_callback(_stream: sys::CUstream, _status: sys::CuResult, user: *mut c_void) {
    // SAFETY: the caller's promise, passed on.
    unsafe { set_flag(user) }
}

/// The staging probe of the seed's first call, a host → device copy out of pageable memory with nothing ahead
/// of it: if its copy was still in flight at the return, the last page of the source is overwritten at once
/// (the GPU cannot read pageable memory: only the driver's host code copies it into its staging buffer). The
/// host buffer is also the copy back's destination, so after the round trip its last page says what the
/// device got: the original bytes (the call had copied the whole source away before returning) or the
/// overwritten ones.
pub(super) struct TailProbe {
    range: std::ops::Range<usize>,
    overwrite: Vec<u8>,
    probed: bool,
    /// Whether the GPU reads pageable memory itself (then the probe never overwrites: a DMA may be reading).
    gpu_reads_pageable: bool,
}

impl TailProbe {
    pub fn new(len: usize, gpu_reads_pageable: bool) -> TailProbe {
        let range = len.saturating_sub(super::buffers::PROBE_BYTES as usize)..len;
        let mut overwrite = vec![0u8; range.len()];
        pattern::fill(&mut overwrite, range.start as u64, super::buffers::SEED_OVERWRITE);
        TailProbe { range, overwrite, probed: false, gpu_reads_pageable }
    }

    /// Right after the first call returned (`own_done`: its stream's answer): overwrites the last page of
    /// `source` if the copy was in flight and `kind` is pageable. Returns whether it did.
    ///
    /// # Safety
    /// `source` is the pageable buffer the copy reads, alive; on a GPU that does not read pageable memory itself
    /// (`TailProbe::new`'s flag, checked here) no DMA reads it, and the driver's host code only reads it, so the
    /// overwrite races with nothing but the reading the probe looks for.
    pub unsafe fn after_first_call(&mut self, own_done: Option<bool>, kind: HostKind, source: &mut [u8]) -> bool {
        self.probed = kind == HostKind::Pageable && !self.gpu_reads_pageable && own_done == Some(false);
        if self.probed {
            source[self.range.clone()].copy_from_slice(&self.overwrite);
        }
        self.probed
    }

    /// After the round trip: `Some(true)` if the original bytes came back, `Some(false)` if the overwritten
    /// ones did (`None` when not probed); an error if anything else differs from `reference`.
    pub fn verify(&self, arrived: &[u8], reference: &[u8]) -> anyhow::Result<Option<bool>> {
        let r = self.range.clone();
        ensure!(arrived[..r.start] == reference[..r.start], "the seed's round trip delivered wrong bytes");
        if arrived[r.clone()] == reference[r.clone()] {
            return Ok(self.probed.then_some(true));
        }
        ensure!(self.probed && arrived[r] == self.overwrite[..], "the seed's round trip delivered wrong bytes");
        Ok(Some(false))
    }
}

/// An empty record for one step (its repetitions are pushed as they are measured).
pub(super) fn step_record(setup: CaseSetup) -> CaseRecord {
    CaseRecord { setup, blocker_ns: None, warmup: None, reps: vec![], series: None, error: None, skipped: None }
}

/// Each step's repetition onto its record, in the steps' order.
pub(super) fn push_reps(records: &mut [CaseRecord], reps: Vec<Rep>) {
    for (record, r) in records.iter_mut().zip(reps) {
        record.reps.push(r);
    }
}

/// Makes one call between two readings of the host's clocks: its start (monotonic ns), its times, its result.
pub(super) fn time_call<T>(call: impl FnOnce() -> T) -> (u64, Timed, T) {
    let start = monotonic_ns();
    let w = Stopwatch::start();
    let result = call();
    (start, w.stop(), result)
}

/// A stream of the primary context a `Sequence` can run on (the handle's lifetime keeps it alive).
pub(super) trait SeedStream {
    fn stream(&self) -> StreamHandle<'_>;
}

impl SeedStream for Stream<'_> {
    fn stream(&self) -> StreamHandle<'_> {
        self.handle()
    }
}

/// What the host saw of one step.
#[derive(Clone, Copy, Debug, Default)]
struct HostStep {
    start_ns: u64,
    timed: Timed,
    /// The query of the stream right after the return: idle or not, and when it was asked (ns after the
    /// call's start); `None` when the call failed.
    own: Option<(bool, [u64; 2])>,
    /// The query of the event after the step before (had the work ahead finished?), asked right after.
    prior: Option<(bool, [u64; 2])>,
}

/// One pass of a seed program on one stream, as the GPU saw it: a `%globaltimer` stamp and an event before
/// the first step, an event after each step; and what the host saw of each call. After the stream is
/// synchronized, `reps` turns that into one `Rep` per step.
///
/// Dropping it waits for the GPU, so that buffers, streams and modules made before it (and so dropped after
/// it) are never freed under work still running, also when an error cut a repetition short.
pub(super) struct Sequence<'s, 'g> {
    gpu: &'g Gpu,
    stream: StreamHandle<'s>,
    /// `events[0]` right after the stamp; `events[k + 1]` right after step `k`.
    events: Vec<Event<'g>>,
    origin: DeviceBuffer<'g>,
    host: Vec<HostStep>,
}

impl<'s, 'g> Sequence<'s, 'g> {
    /// A sequence of `steps` calls on `stream` (the recording's clock fit places its GPU times on the host's
    /// clock).
    pub fn new(gpu: &'g Gpu, stream: &'s impl SeedStream, steps: usize) -> anyhow::Result<Sequence<'s, 'g>> {
        let events: Vec<Event> = (0..=steps).map(|_| Event::new(gpu)).collect::<Result<_, _>>()?;
        let origin = DeviceBuffer::new(gpu, 8)?;
        Ok(Sequence { gpu, stream: stream.stream(), events, origin, host: vec![HostStep::default(); steps] })
    }

    /// The GPU's clock at the sequence's start, for timelines: the stamp kernel runs at once (the stream is
    /// idle) and the first event completes right after it.
    pub fn start(&mut self) -> CudaResult<()> {
        self.host.fill(HostStep::default());
        self.gpu.launch_write_globaltimer(self.stream, self.origin.ptr)?;
        self.events[0].record(self.stream)
    }

    /// Whether step `k`'s stream was idle at its return (`None`: not asked, the call failed).
    pub fn own_done(&self, k: usize) -> Option<bool> {
        self.host[k].own.map(|q| q.0)
    }

    /// Step `k`: makes `call` (exactly one CUDA call) between two clock readings, asks the stream at the
    /// return whether its work was done and the event after the step before whether the work ahead was
    /// (each query timed), then records the step's end event. The call's error comes last.
    pub fn step(&mut self, k: usize, call: impl FnOnce() -> CudaResult<()>) -> CudaResult<()> {
        let (start_ns, timed, result) = time_call(call);
        let (own, prior) = if result.is_ok() {
            let own = timed_query(start_ns, || self.stream.is_idle())?;
            let prior = if k > 0 { Some(timed_query(start_ns, || self.events[k].is_done())?) } else { None };
            (Some(own), prior)
        } else {
            (None, None)
        };
        self.host[k] = HostStep { start_ns, timed, own, prior };
        self.events[k + 1].record(self.stream)?;
        result
    }

    /// After the stream is synchronized: one `Rep` per step, in the protocol's terms. Every step's work is
    /// placed on the GPU's clock from the stamped first event (`op_gpu_ns_from_origin`); for a step with work
    /// ahead, the step before is its blocker: that work's GPU start and end (`blocker_gpu_ns`, the stamp plus
    /// the events' times), its length, and the step's own work relative to its start.
    pub fn reps(&self) -> anyhow::Result<Vec<Rep>> {
        let events = &self.events;
        // The stream is synchronized, so the stamp has been written.
        let gpu_origin_ns = self.origin.read_u64s(1)?[0];
        let at = |i: usize| events[i].signed_ns_since(&events[0]);
        let mut out = Vec::with_capacity(self.host.len());
        for (step, h) in self.host.iter().enumerate() {
            let own = [at(step)?, at(step + 1)?];
            let mut rep = Rep {
                host_call_ns: h.timed.wall_ns,
                host_cpu_ns: h.timed.cpu_ns,
                op_done_at_return: h.own.map(|q| q.0),
                op_query_ns: h.own.map(|q| q.1),
                op_device_ns: Some(events[step + 1].ns_since(&events[step])?),
                op_gpu_ns_from_origin: Some(own),
                gpu_origin_ns: Some(gpu_origin_ns),
                host_call_start_ns: h.start_ns,
                ..Rep::default()
            };
            if step > 0 {
                let ahead = [at(step - 1)?, own[0]];
                let gpu = |ns: i64| gpu_origin_ns.saturating_add_signed(ns);
                rep.blocker_done_at_return = h.prior.map(|q| q.0);
                rep.blocker_query_ns = h.prior.map(|q| q.1);
                rep.blocker_device_ns = Some((ahead[1] - ahead[0]).max(0) as u64);
                rep.blocker_gpu_ns = Some([gpu(ahead[0]), gpu(ahead[1])]);
                // The event that starts the work ahead was recorded after the call before that one returned
                // (for the first step's work, before the sequence began: no host bound).
                rep.host_blocker_launch_ns = step.checked_sub(2).map(|k| self.host[k].start_ns);
                rep.op_gpu_ns_from_blocker = Some([own[0] - ahead[0], own[1] - ahead[0]]);
            }
            out.push(rep);
        }
        Ok(out)
    }

    /// After the stream is synchronized: [`Sequence::reps`], the first step's with what the data's round trip
    /// said of its copy (`captured`: the tail probe's answer), the last's (the callback) with what the question
    /// prints (`conclusion`).
    pub fn reps_of_the_question(&self, captured: Option<bool>, conclusion: Conclusion) -> anyhow::Result<Vec<Rep>> {
        let mut reps = self.reps()?;
        reps[0].data_captured_at_return = captured;
        if let Some(callback) = reps.last_mut() {
            callback.metrics.concluded_after_enqueue = Some(conclusion.after_enqueue);
            callback.metrics.concluded_after_sync = Some(conclusion.after_sync);
        }
        Ok(reps)
    }
}

impl Drop for Sequence<'_, '_> {
    fn drop(&mut self) {
        let _ = self.gpu.synchronize();
    }
}

/// Runs the sequence `reps` times (plus a warm-up) and returns one record per step.
pub fn run(gpu: &Gpu, program: SeedFacts, reps: usize) -> anyhow::Result<Vec<CaseRecord>> {
    let kind = program.memory;
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let mut host = HostBuffer::new(gpu, kind, BUFFER_BYTES)?;
    let device = DeviceBuffer::new(gpu, BUFFER_BYTES)?;
    let out = DeviceBuffer::new(gpu, (GRID * BLOCK) as usize * 8)?;
    let mut reference = vec![0u8; BUFFER_BYTES];
    pattern::fill(&mut reference, 0, 0x5EED);
    let flag = Flag::new();
    let mut probe = TailProbe::new(BUFFER_BYTES, async_lab_driver::device::reads_pageable_memory(gpu.device)?);
    let image = std::ffi::CString::new(gpu.ptx.text())?;
    // Declared before `seq`, so that on an error `seq`'s drop waits for the GPU before the library is unloaded
    // (its own drop waits too).
    let mut library = None;
    let mut seq = Sequence::new(gpu, &stream, 4)?;
    let mut records: Vec<CaseRecord> =
        Step::ALL.iter().map(|&s| step_record(CaseSetup::of(&Case::driver(program.at(s))))).collect();

    for rep in 0..=reps {
        // SAFETY: the device is idle between repetitions (synchronized at the end of the last one).
        unsafe { host.bytes_mut() }.copy_from_slice(&reference);
        device.set_bytes(0)?;
        flag.reset();
        gpu.bind()?;
        let dummy = library.insert(Library::load(gpu, &image)?).kernel(kernels::SPIN_SLEEP.c_name)?;
        gpu.synchronize()?;
        let s = stream.handle();

        seq.start()?;
        for (k, step) in Step::ALL.into_iter().enumerate() {
            // SAFETY: the buffers are live and `BUFFER_BYTES` long; they are not touched by the host until the
            // stream is synchronized below (`seq`, dropped before them, waits for the GPU on every path).
            // spin_sleep takes (u64 cycles, *mut u64 out) and `out` holds one u64 per thread; its library is
            // unloaded only after a synchronization. The callback gets a `Flag::user` pointer. The host buffer's
            // address is a valid unified address (UVA), as `cudaMemcpyDefault` takes it.
            seq.step(k, || unsafe {
                match step {
                    Step::HtoD => memcpy_async(device.ptr, host.addr(), BUFFER_BYTES, s),
                    Step::Launch => {
                        let (mut cycles, mut out_ptr) = (KERNEL_CYCLES, out.ptr);
                        let mut params =
                            [(&mut cycles as *mut u64).cast::<c_void>(), (&mut out_ptr as *mut u64).cast::<c_void>()];
                        dummy.launch(GRID, BLOCK, s, &mut params)
                    }
                    Step::DtoH => memcpy_async(host.addr(), device.ptr, BUFFER_BYTES, s),
                    Step::Callback => stream_add_callback(s, set_flag_on_callback, flag.user()),
                }
            })?;
            if step == Step::HtoD {
                // SAFETY: `host` is the live source of the copy just made; pageable memory only (the probe
                // checks), which no DMA reads.
                unsafe { probe.after_first_call(seq.own_done(0), kind, host.bytes_mut()) };
            }
        }
        let conclusion = flag.around(|| stream.synchronize())?;
        // SAFETY: the stream is synchronized: the copy back has finished.
        let captured = probe.verify(unsafe { host.bytes_mut() }, &reference)?;
        library = None;
        if rep == 0 {
            continue; // warm-up: buffers touched, streams and staging buffers created
        }
        push_reps(&mut records, seq.reps_of_the_question(captured, conclusion)?);
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_probe_reads_what_came_back() {
        let mut reference = vec![0u8; 3 * 4096];
        pattern::fill(&mut reference, 0, 0x5EED);
        let mut probe = TailProbe::new(reference.len(), false);
        let mut source = reference.clone();
        // Not pageable, or the copy already done: nothing is touched, and the round trip must be exact.
        // SAFETY: a plain vector, read by nothing else.
        assert!(!unsafe { probe.after_first_call(Some(false), HostKind::Pinned, &mut source) });
        // SAFETY: as above.
        assert!(!unsafe { probe.after_first_call(Some(true), HostKind::Pageable, &mut source) });
        assert_eq!(probe.verify(&reference, &reference).unwrap(), None);
        // A GPU that reads pageable memory itself may be reading it: never overwritten.
        let mut hmm = TailProbe::new(reference.len(), true);
        // SAFETY: as above.
        assert!(!unsafe { hmm.after_first_call(Some(false), HostKind::Pageable, &mut source) });
        // In flight: the last page is overwritten; what comes back decides.
        // SAFETY: as above.
        assert!(unsafe { probe.after_first_call(Some(false), HostKind::Pageable, &mut source) });
        assert_ne!(source, reference);
        assert_eq!(probe.verify(&reference, &reference).unwrap(), Some(true), "the original came back");
        assert_eq!(probe.verify(&source, &reference).unwrap(), Some(false), "the overwrite came back");
        let mut wrong = reference.clone();
        wrong[5] ^= 1;
        assert!(probe.verify(&wrong, &reference).is_err());
    }
}
