//! Copies in every direction, from and to every kind of host memory, in both API forms, on every kind of
//! stream (rules S1–S5, A1–A4, G1, ST1–ST3, AL4, AL5).
//!
//! Each copy goes through one of the driver's two entry forms: *typed* (`cuMemcpyHtoDAsync`, ...: the
//! caller says which side is host memory) or *unified* (`cuMemcpyAsync`: the driver infers it from the
//! addresses). The runtime twin of a typed copy passes the explicit `cudaMemcpyKind`, that of a unified one
//! `cudaMemcpyDefault`. Managed memory is measured in two states: pages last touched by the host, and pages
//! resident on the GPU (written by a kernel just before).

use super::buffers::{Checker, Probeable, Side};
use super::method::{measure, BlockerPlan, Page, Probe};
use super::{case_record, Case};
use async_lab_core::api::Api;
use async_lab_core::catalogue::copies::{CopyCall, CopyFacts, Entry, Form, Residency};
use async_lab_core::record::CaseRecord;
use async_lab_core::setup::{BlockerPlacement, Direction};
use async_lab_driver::memory as mem;
use async_lab_driver::runtime::memory as rtmem;
use async_lab_driver::{CudaResult, Gpu, HostKind, Stream, StreamHandle, StreamKind};

/// Which pages of a copy's source the staging probe may overwrite. Only a host source, and with the copy in
/// flight only one the GPU cannot read itself: pageable memory (on a GPU that cannot access pageable memory:
/// `CopyProbe::probe_source` checks the device's attribute), which only the driver's host code copies into its
/// staging buffer.
pub fn probeable(op: &CopyFacts) -> Probeable {
    match (op.dir, op.host) {
        (Direction::DtoH | Direction::DtoD, _) => Probeable::Neither,
        (Direction::HtoD | Direction::HtoH, Some(HostKind::Pageable)) => Probeable::Either,
        (Direction::HtoD | Direction::HtoH, _) => Probeable::Head,
    }
}

/// The buffers and streams of one copy experiment.
struct CopyProbe<'a, 'g> {
    op: CopyFacts,
    api: Api,
    src: Side<'g>,
    dst: Side<'g>,
    checker: Checker<'g>,
    stream: &'a Stream<'g>,
    /// Whether the GPU reads pageable memory itself: then no page of a copy in flight may be overwritten.
    gpu_reads_pageable: bool,
}

impl Probe for CopyProbe<'_, '_> {
    fn prepare(&mut self, gpu: &Gpu) -> anyhow::Result<()> {
        if self.op.residency == Residency::GpuResident {
            // Written on the GPU, so the pages are resident there (the probe's host write may have moved one).
            self.checker.fill_on_gpu(gpu, &self.src)?;
            self.checker.poison_on_gpu(gpu, &self.dst)?;
        } else {
            self.checker.restore(&mut self.src);
            self.checker.poison(&mut self.dst)?;
        }
        Ok(())
    }

    fn call(&mut self, _gpu: &Gpu) -> CudaResult<()> {
        let (n, s) = (self.op.bytes as usize, self.stream.handle());
        let (dst, src) = (self.dst.addr(), self.src.addr());
        if self.api == Api::Runtime {
            use async_lab_driver::runtime::sys::cudaMemcpyKind as K;
            let kind = match (self.op.entry, self.op.dir) {
                (_, Direction::HtoH) | (Entry::Unified, _) => K::cudaMemcpyDefault,
                (Entry::Typed, Direction::HtoD) => K::cudaMemcpyHostToDevice,
                (Entry::Typed, Direction::DtoH) => K::cudaMemcpyDeviceToHost,
                (Entry::Typed, Direction::DtoD) => K::cudaMemcpyDeviceToDevice,
            };
            // SAFETY: as for the driver calls below: live buffers of `n` bytes, untouched until synchronized;
            // the stream is a driver stream of the primary context the runtime uses too.
            return unsafe {
                match self.op.form {
                    Form::Sync => rtmem::rt_memcpy(dst, src, n, kind),
                    Form::Async => rtmem::rt_memcpy_async(dst, src, n, kind, s),
                }
            };
        }
        // SAFETY: `dst` and `src` are live buffers of `n` bytes owned by this probe; for the async forms they
        // stay alive and are not touched by the host until the device is synchronized (the one exception is
        // the staging probe, see `probe_source`).
        unsafe {
            match self.op.driver_call() {
                CopyCall::Memcpy => mem::memcpy(dst, src, n),
                CopyCall::MemcpyAsync => mem::memcpy_async(dst, src, n, s),
                CopyCall::HtoD => mem::memcpy_htod(dst, src as *const _, n),
                CopyCall::DtoH => mem::memcpy_dtoh(dst as *mut _, src, n),
                CopyCall::DtoD => mem::memcpy_dtod(dst, src, n),
                CopyCall::HtoDAsync => mem::memcpy_htod_async(dst, src as *const _, n, s),
                CopyCall::DtoHAsync => mem::memcpy_dtoh_async(dst as *mut _, src, n, s),
                CopyCall::DtoDAsync => mem::memcpy_dtod_async(dst, src, n, s),
            }
        }
    }

    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        Some(match self.op.form {
            Form::Sync => StreamHandle::LEGACY,
            Form::Async => self.stream.handle(),
        })
    }

    fn probe_source(&mut self, page: Page) -> bool {
        // A GPU that reads pageable memory itself (HMM, ATS) may be reading the source right now.
        if page == Page::Tail && self.gpu_reads_pageable {
            return false;
        }
        // SAFETY: `run_rep` asks for the first page only while the blocker ahead of the copy is still running
        // and the copy's own work has not finished, so the copy engine cannot read the source before the
        // blocker ends (if it ends during the overwrite, `run_rep` sees it and discards the repetition); the
        // last page only with the copy in flight, which `probeable` allows only for pageable memory, which no
        // DMA reads. Staged data comes from the driver's buffer, not this one. Either way the host writes plain
        // bytes the copy only reads: no memory is used after it is freed.
        unsafe { self.checker.probe_source(&mut self.src, page, probeable(&self.op)) }
    }

    fn verify(&mut self, gpu: &Gpu, probed: Option<Page>) -> anyhow::Result<Option<bool>> {
        self.checker.verify_probe(gpu, &mut self.dst, probed)
    }
}

pub fn run(gpu: &Gpu, case: &Case, op: CopyFacts, reps: usize) -> anyhow::Result<CaseRecord> {
    let len = op.bytes as usize;
    let (src_host, dst_host) = match op.dir {
        Direction::HtoD => (op.host, None),
        Direction::DtoH => (None, op.host),
        Direction::DtoD => (None, None),
        Direction::HtoH => (op.host, op.host),
    };
    let stream = Stream::new(gpu, if op.form == Form::Sync { StreamKind::Legacy } else { op.stream })?;
    let other = Stream::new(gpu, StreamKind::NonBlocking)?;
    let checker = Checker::new(gpu, op.bytes)?;
    let mut src = Side::new(gpu, src_host, len)?;
    checker.fill(gpu, &mut src)?;
    let dst = Side::new(gpu, dst_host, len)?;
    if op.residency == Residency::GpuResident {
        // The GPU-resident state is made in `prepare`, before every repetition: only managed memory has it.
        anyhow::ensure!(op.host == Some(HostKind::Managed), "only managed memory can be GPU-resident");
    }
    let plan = BlockerPlan {
        stream: if op.blocker == BlockerPlacement::Same { stream.handle() } else { other.handle() },
        ahead: op.blocker == BlockerPlacement::Same,
    };
    let gpu_reads_pageable = async_lab_driver::device::reads_pageable_memory(gpu.device)?;
    let mut probe = CopyProbe { op, api: case.setup.api, src, dst, checker, stream: &stream, gpu_reads_pageable };
    let (warmup, blocker_ns, reps) = measure(gpu, &mut probe, plan, reps)?;
    Ok(case_record(case, Some(warmup), Some(blocker_ns), reps))
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_lab_core::catalogue::{copies::full_cases, Facts};

    #[test]
    fn the_probe_overwrites_a_host_source_and_its_last_page_only_if_pageable() {
        for case in full_cases(&[4 << 10]) {
            let Facts::Copy(op) = case.facts else { panic!("{} is not a copy", case.id()) };
            let want = match (op.dir, op.host) {
                (Direction::DtoH | Direction::DtoD, _) => Probeable::Neither,
                (_, Some(HostKind::Pageable)) => Probeable::Either,
                _ => Probeable::Head,
            };
            assert_eq!(probeable(&op), want, "{}", case.id());
            assert_eq!(want.allows(Page::Tail), want == Probeable::Either);
            assert_eq!(want.allows(Page::Head), want != Probeable::Neither);
        }
    }
}
