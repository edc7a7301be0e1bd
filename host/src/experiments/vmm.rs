//! Virtual memory management (rules VM1, VM2): `cuMemCreate`, `cuMemMap`, `cuMemSetAccess`, `cuMemUnmap` and
//! `cuMemRelease` while a blocker runs on the legacy stream or on a non-blocking one; and `cuMemUnmap` of memory
//! that work queued on the GPU is still going to write.
//!
//! That last case: a stream holds a 100 ms spin kernel, then a kernel that writes into the mapped range, then
//! the blocker. If `cuMemUnmap` returns before the writing kernel has run, the program has unmapped memory the
//! GPU still uses, a finding of its own: the repetition's `returned_while_in_use` flag is set, the report lists
//! it among its findings, and the range is mapped again at once (long before the spin kernel ends), so the
//! kernel writes into valid memory and the run goes on. The case still runs in a child process, so that a
//! fault could only ever end that child.

use super::method::{measure, BlockerPlan, Probe};
use super::{case_record, Case};
use anyhow::ensure;
use async_lab_core::catalogue::vmm::{VmmCall, VmmFacts, HOLD_MS};
use async_lab_core::record::CaseRecord;
use async_lab_driver::memory;
use async_lab_driver::vmm::Vmm;
use async_lab_driver::{CudaResult, Event, Gpu, Stream, StreamHandle, StreamKind};
use std::time::Duration;

/// How long the spin kernel ahead of the writing kernel runs (far longer than mapping the range again takes).
const HOLD: Duration = Duration::from_millis(HOLD_MS);

struct VmmProbe<'a, 'g> {
    op: VmmFacts,
    vmm: Vmm<'g>,
    stream: &'a Stream<'g>,
    /// Recorded right after the writing kernel.
    written: Event<'g>,
    prepared: usize,
    armed: bool,
    /// Set right after the return when the writing kernel had not run yet (and the range was mapped again).
    in_use_at_return: bool,
    remap_error: Option<String>,
    flags: Vec<bool>,
}

impl VmmProbe<'_, '_> {
    fn ensure_memory(&mut self) -> CudaResult<()> {
        if !self.vmm.has_memory() {
            self.vmm.create()?;
        }
        Ok(())
    }

    fn ensure_unmapped(&mut self) -> CudaResult<()> {
        if self.vmm.is_mapped() {
            // SAFETY: `prepare` runs with the device synchronized: nothing uses the range.
            unsafe { self.vmm.unmap()? };
        }
        Ok(())
    }

    fn ensure_mapped(&mut self) -> CudaResult<()> {
        self.ensure_memory()?;
        if !self.vmm.is_mapped() {
            self.vmm.map()?;
            self.vmm.set_access()?;
        }
        Ok(())
    }

    /// Reads the first 8 bytes of the range (mapped, device idle).
    fn read_head(&self, gpu: &Gpu) -> anyhow::Result<u64> {
        gpu.bind()?;
        let mut v = 0u64;
        // SAFETY: the range is mapped with read-write access and holds at least 8 bytes; the device is idle.
        unsafe { memory::memcpy_dtoh((&mut v as *mut u64).cast(), self.vmm.va, 8)? };
        Ok(v)
    }
}

impl Probe for VmmProbe<'_, '_> {
    fn prepare(&mut self, gpu: &Gpu) -> anyhow::Result<()> {
        self.prepared += 1;
        gpu.synchronize()?;
        match self.op.call {
            VmmCall::Create => {
                self.ensure_unmapped()?;
                if self.vmm.has_memory() {
                    self.vmm.release()?;
                }
            }
            VmmCall::Map => {
                self.ensure_memory()?;
                self.ensure_unmapped()?;
            }
            VmmCall::SetAccess => {
                self.ensure_memory()?;
                self.ensure_unmapped()?;
                self.vmm.map()?;
            }
            VmmCall::Unmap | VmmCall::UnmapInUse => self.ensure_mapped()?,
            VmmCall::Release => {
                self.ensure_unmapped()?;
                self.ensure_memory()?;
            }
        }
        self.armed = false;
        self.in_use_at_return = false;
        if self.op.call == VmmCall::UnmapInUse && self.prepared > 1 {
            // SAFETY: the range is mapped with access; 8 bytes; the device is idle.
            unsafe { memory::memset_d8(self.vmm.va, 0, 8)? };
            gpu.synchronize()?;
            // The spin kernel, then the kernel that writes the GPU's timer into the range; the protocol's
            // blocker follows in the same stream.
            gpu.launch_spin_wait_ns(self.stream.handle(), HOLD.as_nanos() as u64, 0)?;
            gpu.launch_write_globaltimer(self.stream.handle(), self.vmm.va)?;
            self.written.record(self.stream.handle())?;
            self.armed = true;
        }
        Ok(())
    }

    /// The writer is queued behind a spin kernel (armed in `prepare`): synchronizing would run it first.
    fn prepared_work_in_flight(&self) -> bool {
        self.armed
    }

    fn call(&mut self, _gpu: &Gpu) -> CudaResult<()> {
        match self.op.call {
            VmmCall::Create => self.vmm.create(),
            VmmCall::Map => self.vmm.map(),
            VmmCall::SetAccess => self.vmm.set_access(),
            // SAFETY: nothing uses the range (`Unmap`), or the writer is queued behind a 100 ms spin kernel and
            // `probe_source`, right after the return, maps the range again before it can run (`UnmapInUse`).
            VmmCall::Unmap | VmmCall::UnmapInUse => unsafe { self.vmm.unmap() },
            VmmCall::Release => self.vmm.release(),
        }
    }

    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        (self.op.call == VmmCall::UnmapInUse).then(|| self.stream.handle())
    }

    /// Called right after the return while the blocker ahead and the stream's work were unfinished (the first
    /// page's turn): if the writer has not run, the call returned while the GPU still had to use the memory.
    /// Map it again at once.
    fn probe_source(&mut self, page: super::method::Page) -> bool {
        if page == super::method::Page::Head && self.armed && !self.written.is_done().unwrap_or(true) {
            self.in_use_at_return = true;
            if let Err(e) = self.vmm.map().and_then(|()| self.vmm.set_access()) {
                self.remap_error = Some(e.to_string());
            }
        }
        // Nothing was overwritten: this is not the staging probe.
        false
    }

    fn verify(&mut self, gpu: &Gpu, _probed: Option<super::method::Page>) -> anyhow::Result<Option<bool>> {
        if let Some(e) = self.remap_error.take() {
            anyhow::bail!("mapping the range again right after cuMemUnmap returned failed: {e}");
        }
        match self.op.call {
            VmmCall::Create => ensure!(self.vmm.has_memory(), "cuMemCreate left no memory"),
            VmmCall::Map => ensure!(self.vmm.is_mapped(), "cuMemMap left the range unmapped"),
            VmmCall::SetAccess => {
                // The GPU writes into the mapping: it works only with access granted.
                gpu.launch_write_globaltimer(StreamHandle::LEGACY, self.vmm.va)?;
                gpu.synchronize()?;
                ensure!(self.read_head(gpu)? != 0, "the kernel's write into the mapping did not arrive");
            }
            VmmCall::Unmap => ensure!(!self.vmm.is_mapped(), "cuMemUnmap left the range mapped"),
            VmmCall::Release => ensure!(!self.vmm.has_memory(), "cuMemRelease left the memory"),
            VmmCall::UnmapInUse => {
                if self.armed {
                    ensure!(self.written.is_done()?, "the writing kernel had not finished after synchronization");
                    if self.in_use_at_return {
                        ensure!(self.read_head(gpu)? != 0, "the writing kernel's value did not arrive in the range");
                    }
                    self.flags.push(self.in_use_at_return);
                }
            }
        }
        Ok(None)
    }
}

pub fn run(gpu: &Gpu, case: &Case, op: VmmFacts, reps: usize) -> anyhow::Result<CaseRecord> {
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let other = Stream::new(gpu, op.blocker_stream)?;
    let in_use = op.call == VmmCall::UnmapInUse;
    let plan = BlockerPlan { stream: if in_use { stream.handle() } else { other.handle() }, ahead: in_use };
    let mut probe = VmmProbe {
        op,
        vmm: Vmm::reserve(gpu)?,
        stream: &stream,
        written: Event::new(gpu)?,
        prepared: 0,
        armed: false,
        in_use_at_return: false,
        remap_error: None,
        flags: Vec::new(),
    };
    let (warmup, blocker_ns, mut reps) = measure(gpu, &mut probe, plan, reps)?;
    if in_use {
        ensure!(probe.flags.len() == reps.len(), "a repetition's flag was not accounted for");
        for (r, &flag) in reps.iter_mut().zip(&probe.flags) {
            r.metrics.returned_while_in_use = Some(flag);
        }
    }
    drop(probe);
    Ok(case_record(case, Some(warmup), Some(blocker_ns), reps))
}
