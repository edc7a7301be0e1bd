//! Unified-memory hints (rules UM1, UM2): prefetching managed memory to the GPU and back
//! (`cuMemPrefetchAsync`) next to a blocker in the call's stream or on another stream (and pageable memory to
//! the GPU, where the GPU can access pageable memory; elsewhere that case is not run), and advice on a managed
//! range (`cuMemAdvise`: read-mostly, preferred location, accessed-by) while a blocker runs, on the legacy stream
//! or on a non-blocking one.
//!
//! Before a prefetch to the GPU the pages are written by the host (so they sit in host memory), before a
//! prefetch to the host by a kernel (so they sit on the GPU); the data is checked on the GPU afterwards, so a
//! prefetch that lost or changed bytes is an error, not a class.
//!
//! The runtime twins (`runtime/unified/...`) make the same calls through `cudaMemPrefetchAsync` and
//! `cudaMemAdvise`, in the form the loaded runtime has (CUDA 13 changed both signatures; see
//! `runtime::unified`), naming the GPU by its runtime device ordinal.

use super::buffers::{Checker, Side};
use super::method::{measure, BlockerPlan, Probe};
use super::{case_record, Case};
use anyhow::ensure;
use async_lab_core::catalogue::unified::{HintCall, HintFacts};
use async_lab_core::record::CaseRecord;
use async_lab_core::setup::BlockerPlacement;
use async_lab_driver::runtime::unified as rtum;
use async_lab_driver::unified::{self as um, Hints, Place};
use async_lab_driver::{sys, CudaResult, Gpu, HostBuffer, Stream, StreamHandle, StreamKind};

/// The advice a hint sets (and, in `prepare`, the one that unsets it); `None` for a prefetch.
fn advice(call: HintCall) -> Option<(i32, i32)> {
    match call {
        HintCall::ReadMostly => Some((um::CU_MEM_ADVISE_SET_READ_MOSTLY, um::CU_MEM_ADVISE_UNSET_READ_MOSTLY)),
        HintCall::PreferredLocation => {
            Some((um::CU_MEM_ADVISE_SET_PREFERRED_LOCATION, um::CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION))
        }
        HintCall::AccessedBy => Some((um::CU_MEM_ADVISE_SET_ACCESSED_BY, um::CU_MEM_ADVISE_UNSET_ACCESSED_BY)),
        _ => None,
    }
}

/// The calls' entry points through the API under test.
#[derive(Clone, Copy)]
enum Via {
    Driver(Hints),
    Runtime(rtum::RtHints),
}

impl Via {
    /// # Safety
    /// As for `Hints::prefetch`.
    unsafe fn prefetch(&self, ptr: u64, n: usize, to: Place, stream: StreamHandle<'_>) -> CudaResult<()> {
        // SAFETY: the caller's promise, passed on.
        unsafe {
            match self {
                Via::Driver(h) => h.prefetch(ptr, n, to, stream),
                Via::Runtime(h) => h.prefetch(ptr, n, to, stream),
            }
        }
    }

    /// # Safety
    /// As for `Hints::advise`.
    unsafe fn advise(&self, ptr: u64, n: usize, advice: i32, place: Place) -> CudaResult<()> {
        // SAFETY: the caller's promise, passed on.
        unsafe {
            match self {
                Via::Driver(h) => h.advise(ptr, n, advice, place),
                Via::Runtime(h) => h.advise(ptr, n, advice, place),
            }
        }
    }

    /// Whether the form used takes a location (the `_v2` names, or CUDA 13's runtime plain names).
    fn located(&self, prefetch: bool) -> bool {
        match self {
            Via::Driver(h) => if prefetch { h.prefetch_name } else { h.advise_name }.ends_with("_v2"),
            Via::Runtime(h) => h.located,
        }
    }
}

struct HintProbe<'a, 'g> {
    op: HintFacts,
    hints: Via,
    stream: &'a Stream<'g>,
    side: Side<'g>,
    checker: Checker<'g>,
    gpu_place: Place,
}

impl Probe for HintProbe<'_, '_> {
    fn prepare(&mut self, gpu: &Gpu) -> anyhow::Result<()> {
        let (ptr, n) = (self.side.addr(), self.op.bytes as usize);
        if let Some((_, unset)) = advice(self.op.call) {
            // SAFETY: `ptr..ptr+n` is the managed buffer this probe owns.
            unsafe { self.hints.advise(ptr, n, unset, self.gpu_place)? };
        }
        match self.op.call {
            // The host writes every page: they sit in host memory.
            HintCall::PrefetchToDevice | HintCall::PrefetchPageableToDevice => {
                self.checker.fill(gpu, &mut self.side)?
            }
            // A kernel writes every page: they sit on the GPU.
            _ => self.checker.fill_on_gpu(gpu, &self.side)?,
        }
        Ok(())
    }

    fn call(&mut self, _gpu: &Gpu) -> CudaResult<()> {
        let (ptr, n) = (self.side.addr(), self.op.bytes as usize);
        // SAFETY: `ptr..ptr+n` is the managed buffer this probe owns; it outlives the stream's work (the protocol
        // synchronizes before `verify`, and the buffer is dropped after the probe).
        unsafe {
            match self.op.call {
                HintCall::PrefetchToDevice | HintCall::PrefetchPageableToDevice => {
                    self.hints.prefetch(ptr, n, self.gpu_place, self.stream.handle())
                }
                HintCall::PrefetchToHost => self.hints.prefetch(ptr, n, Place::Host, self.stream.handle()),
                _ => {
                    let (set, _) = advice(self.op.call).expect("an advice case");
                    self.hints.advise(ptr, n, set, self.gpu_place)
                }
            }
        }
    }

    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        self.op.call.is_prefetch().then(|| self.stream.handle())
    }

    fn verify(&mut self, gpu: &Gpu, _probed: Option<super::method::Page>) -> anyhow::Result<Option<bool>> {
        let intact = self.checker.verify(gpu, &mut self.side, None)?;
        ensure!(intact, "the managed range no longer holds what was written before the call");
        Ok(None)
    }
}

/// Whether the GPU can take part in `call` (concurrent managed access; for pageable memory, access to it); the
/// reason it cannot.
fn support(gpu: &Gpu, call: HintCall) -> anyhow::Result<Option<&'static str>> {
    let attribute = |a| -> anyhow::Result<i32> { Ok(async_lab_driver::device::attribute(gpu.device, a)?) };
    use sys::CUdevice_attribute as A;
    if attribute(A::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)? == 0 {
        return Ok(Some(
            "the GPU has no concurrent managed access (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS is 0)",
        ));
    }
    if call == HintCall::PrefetchPageableToDevice && attribute(A::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS)? == 0 {
        return Ok(Some("the GPU cannot access pageable memory (CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS is 0)"));
    }
    Ok(None)
}

pub fn run(gpu: &Gpu, case: &Case, op: HintFacts, reps: usize) -> anyhow::Result<CaseRecord> {
    let hints = match case.setup.api {
        async_lab_core::api::Api::Driver => Hints::resolve().map(Via::Driver),
        async_lab_core::api::Api::Runtime => rtum::RtHints::resolve().map(Via::Runtime),
    };
    let hints = match hints {
        Ok(h) => h,
        Err(why) => return Ok(super::not_run(case, why)),
    };
    if let Some(why) = support(gpu, op.call)? {
        return Ok(super::not_run(case, why));
    }
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let other = Stream::new(gpu, op.blocker_stream)?;
    let kind = op.call.host_memory();
    let side = Side::Host(HostBuffer::new(gpu, kind, op.bytes as usize)?);
    let checker = Checker::new(gpu, op.bytes)?;
    let plan = BlockerPlan {
        stream: if op.call.is_prefetch() && op.blocker == BlockerPlacement::Same {
            stream.handle()
        } else {
            other.handle()
        },
        ahead: case.setup.layout.blocker_ahead,
    };
    // The driver names the GPU by its `CUdevice`, the runtime by its device ordinal.
    let gpu_place = match hints {
        Via::Driver(_) => Place::Device(gpu.device),
        Via::Runtime(_) => Place::Device(gpu.ordinal),
    };
    let mut probe = HintProbe { op, hints, stream: &stream, side, checker, gpu_place };
    let (warmup, blocker_ns, mut reps) = measure(gpu, &mut probe, plan, reps)?;
    // Which form of the call ran: one that takes a location (1), or a device ordinal (0).
    let located = hints.located(op.call.is_prefetch());
    for r in &mut reps {
        r.metrics.location_form = Some(located);
    }
    if let Some((_, unset)) = advice(op.call) {
        // Leave the range as it was found (it is freed next, but a failed unset would say something is wrong).
        // SAFETY: the managed buffer is still owned by the probe.
        unsafe { hints.advise(probe.side.addr(), op.bytes as usize, unset, probe.gpu_place)? };
    }
    drop(probe);
    Ok(case_record(case, Some(warmup), Some(blocker_ns), reps))
}
