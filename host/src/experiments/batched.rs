//! Batched copies (rules BC1, BC2): `cuMemcpyBatchAsync` (CUDA 12.8) of one buffer in 8 pieces, host → device
//! and device → host, from pageable and from pinned memory, with each source access order (in stream order,
//! only during the call, any time), behind a blocker in the same stream. The same bytes copied by one
//! `cuMemcpyHtoDAsync`/`cuMemcpyDtoHAsync` are the copy family's `copy/async/...` cases.
//!
//! Host sources read in stream order or only during the call get the copy family's staging probe: right after
//! the return, while the blocker still runs, the first page of the source is overwritten; if what arrives is
//! still the original, the driver had taken the data by the return (`staged`). "Only during the call" promises
//! exactly that. A source that may be read at any time is not probed (the copy may be reading it right then).
//!
//! The runtime twins (`runtime/batch/...`) make the same batch through `cudaMemcpyBatchAsync`, looked up in the
//! loaded runtime with the signature its version gives it (CUDA 13 dropped the failure index; see
//! `runtime::batch`); a runtime older than 12.8 leaves them *not run*, with the reason.
//!
//! The cases, their ids, rules and words are the catalogue's (`async_lab_core::catalogue::batched`); this file
//! measures them.

use super::buffers::{Checker, Probeable, Side};
use super::method::{measure, BlockerPlan, Page, Probe};
use super::{case_record, Case};
use async_lab_core::api::Api;
use async_lab_core::catalogue::batched::{BatchFacts, SrcOrder, Submit, PIECES};
use async_lab_core::record::CaseRecord;
use async_lab_driver::batch::{BatchCopy, SrcAccessOrder};
use async_lab_driver::memory;
use async_lab_driver::runtime::batch as rtbatch;
use async_lab_driver::runtime::memory as rtmem;
use async_lab_driver::runtime::sys::cudaMemcpyKind;
use async_lab_driver::{CudaResult, Gpu, Stream, StreamHandle, StreamKind};
use std::ffi::c_void;

/// The source access order the driver and the runtime take for the catalogue's.
fn access_order(order: SrcOrder) -> SrcAccessOrder {
    match order {
        SrcOrder::Stream => SrcAccessOrder::Stream,
        SrcOrder::DuringCall => SrcAccessOrder::DuringCall,
        SrcOrder::Any => SrcAccessOrder::Any,
    }
}

/// Which pages of the source the staging probe may overwrite: only the first, with the blocker ahead holding
/// the batch back (as the copy family probes a source the GPU can read), and only of a host source. A copy
/// allowed to read the source at any time may be reading it right then, out of stream order: an overwrite
/// could give it a mix of both patterns, which says nothing. Those are not probed.
fn probeable(op: &BatchFacts) -> Probeable {
    match op.submit {
        Submit::Batch(SrcOrder::Any) => Probeable::Neither,
        _ if op.htod => Probeable::Head,
        _ => Probeable::Neither,
    }
}

/// The copies through the API under test: one batch, or the pieces one by one.
enum Via {
    Driver(BatchCopy),
    Runtime(rtbatch::RtBatchCopy),
    OneByOne,
}

struct BatchProbe<'a, 'g> {
    op: BatchFacts,
    api: Api,
    batch: Via,
    stream: &'a Stream<'g>,
    src: Side<'g>,
    dst: Side<'g>,
    checker: Checker<'g>,
    /// The batch's arrays, filled in `prepare` so that nothing is allocated inside the timed call (the driver
    /// takes them as mutable pointers, so they are filled again before every repetition).
    dsts: Vec<u64>,
    srcs: Vec<u64>,
    sizes: Vec<usize>,
}

impl BatchProbe<'_, '_> {
    /// The pieces as one async copy each, in order, through the API under test.
    ///
    /// # Safety
    /// As for the batch: the pieces tile two live buffers that stay allocated until the protocol synchronizes.
    unsafe fn one_by_one(&self) -> CudaResult<()> {
        let s = self.stream.handle();
        for ((&d, &src), &n) in self.dsts.iter().zip(&self.srcs).zip(&self.sizes) {
            // SAFETY: the caller's promise, piece by piece; the stream is live (borrowed by the probe) and a
            // driver stream of the primary context the runtime shares.
            unsafe {
                match (self.api, self.op.htod) {
                    (Api::Driver, true) => memory::memcpy_htod_async(d, src as *const c_void, n, s)?,
                    (Api::Driver, false) => memory::memcpy_dtoh_async(d as *mut c_void, src, n, s)?,
                    (Api::Runtime, true) => {
                        rtmem::rt_memcpy_async(d, src, n, cudaMemcpyKind::cudaMemcpyHostToDevice, s)?
                    }
                    (Api::Runtime, false) => {
                        rtmem::rt_memcpy_async(d, src, n, cudaMemcpyKind::cudaMemcpyDeviceToHost, s)?
                    }
                }
            }
        }
        Ok(())
    }
}

impl Probe for BatchProbe<'_, '_> {
    fn prepare(&mut self, _gpu: &Gpu) -> anyhow::Result<()> {
        self.checker.restore(&mut self.src);
        self.checker.poison(&mut self.dst)?;
        let piece = self.op.bytes / PIECES;
        let (d, s) = (self.dst.addr(), self.src.addr());
        self.dsts = (0..PIECES).map(|i| d + i * piece).collect();
        self.srcs = (0..PIECES).map(|i| s + i * piece).collect();
        self.sizes = vec![piece as usize; PIECES as usize];
        Ok(())
    }

    fn call(&mut self, _gpu: &Gpu) -> CudaResult<()> {
        let (dsts, srcs, sizes) = (&mut self.dsts, &mut self.srcs, &mut self.sizes);
        // SAFETY: the pieces tile the two live buffers of `bytes` bytes exactly; they stay allocated and are
        // not touched until the protocol synchronizes, except the staging probe's overwrite of the source's
        // first page, which `probe_source` explains.
        unsafe {
            match (&self.batch, self.op.submit) {
                (Via::Driver(b), Submit::Batch(order)) => {
                    b.copy(dsts, srcs, sizes, access_order(order), self.stream.handle())
                }
                (Via::Runtime(b), Submit::Batch(order)) => {
                    b.copy(dsts, srcs, sizes, access_order(order), self.stream.handle())
                }
                (_, _) => self.one_by_one(),
            }
        }
    }

    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        Some(self.stream.handle())
    }

    fn probe_source(&mut self, page: Page) -> bool {
        // SAFETY: as in the copy family: `run_rep` asks for the first page only while the blocker ahead still
        // runs and the stream's work is unfinished, and `probeable` allows no other page; a copy that reads the
        // source in stream order cannot have started, one that reads it only during the call has finished
        // reading, and one that may read it at any time is not probed. The host writes plain bytes the copy
        // only reads: no memory is used after it is freed.
        unsafe { self.checker.probe_source(&mut self.src, page, probeable(&self.op)) }
    }

    fn verify(&mut self, gpu: &Gpu, probed: Option<Page>) -> anyhow::Result<Option<bool>> {
        self.checker.verify_probe(gpu, &mut self.dst, probed)
    }
}

pub fn run(gpu: &Gpu, case: &Case, op: BatchFacts, reps: usize) -> anyhow::Result<CaseRecord> {
    let batch = match (op.submit, case.setup.api) {
        (Submit::OneByOne, _) => Ok(Via::OneByOne),
        (Submit::Batch(_), Api::Driver) => BatchCopy::resolve().map(Via::Driver).map_err(str::to_owned),
        (Submit::Batch(_), Api::Runtime) => rtbatch::RtBatchCopy::resolve().map(Via::Runtime),
    };
    let batch = match batch {
        Ok(b) => b,
        Err(why) => return Ok(super::not_run(case, &why)),
    };
    let len = op.bytes as usize;
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let checker = Checker::new(gpu, op.bytes)?;
    let (src_host, dst_host) = if op.htod { (Some(op.host), None) } else { (None, Some(op.host)) };
    let mut src = Side::new(gpu, src_host, len)?;
    let dst = Side::new(gpu, dst_host, len)?;
    checker.fill(gpu, &mut src)?;
    let plan = BlockerPlan { stream: stream.handle(), ahead: true };
    let mut probe = BatchProbe {
        op,
        api: case.setup.api,
        batch,
        stream: &stream,
        src,
        dst,
        checker,
        dsts: Vec::new(),
        srcs: Vec::new(),
        sizes: Vec::new(),
    };
    let (warmup, blocker_ns, reps) = measure(gpu, &mut probe, plan, reps)?;
    drop(probe);
    Ok(case_record(case, Some(warmup), Some(blocker_ns), reps))
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_lab_core::catalogue::{batched::cases, Facts};

    #[test]
    fn the_probe_overwrites_only_the_first_page_of_a_host_source_not_read_at_any_time() {
        for c in cases() {
            let Facts::Batch(op) = c.facts else { panic!("{} is not a batch case", c.id()) };
            let probed = op.htod && op.submit != Submit::Batch(SrcOrder::Any);
            assert_eq!(probeable(&op), if probed { Probeable::Head } else { Probeable::Neither }, "{}", c.id());
        }
    }
}
