//! Memset of device, pinned host and managed memory, in both forms (rules M1–M3).

use super::buffers::gpu_checksum;
use super::method::{measure, BlockerPlan, Probe};
use super::{case_record, Case};
use crate::pattern::checksum_term;
use anyhow::ensure;
use async_lab_core::api::Api;
use async_lab_core::catalogue::memset::{MemsetFacts, Target};
use async_lab_core::record::CaseRecord;
use async_lab_core::setup::BlockerPlacement;
use async_lab_driver::memory as mem;
use async_lab_driver::runtime::memory as rtmem;
use async_lab_driver::{CudaResult, DeviceBuffer, Gpu, HostBuffer, HostKind, Stream, StreamHandle, StreamKind};

const VALUE: u8 = 0xA5;

enum Memory<'g> {
    Device(DeviceBuffer<'g>),
    Host(HostBuffer<'g>),
}

struct MemsetProbe<'a, 'g> {
    op: MemsetFacts,
    api: Api,
    mem: Memory<'g>,
    stream: &'a Stream<'g>,
    sum: DeviceBuffer<'g>,
    want: u64,
}

impl MemsetProbe<'_, '_> {
    fn addr(&self) -> u64 {
        match &self.mem {
            Memory::Device(d) => d.ptr,
            Memory::Host(h) => h.addr(),
        }
    }
}

impl Probe for MemsetProbe<'_, '_> {
    fn prepare(&mut self, _gpu: &Gpu) -> anyhow::Result<()> {
        // SAFETY: the buffer holds `bytes` bytes; the device is idle between repetitions.
        unsafe { mem::memset_d8(self.addr(), 0, self.op.bytes as usize)? };
        Ok(())
    }

    fn call(&mut self, _gpu: &Gpu) -> CudaResult<()> {
        let (addr, n) = (self.addr(), self.op.bytes as usize);
        if self.api == Api::Runtime {
            // SAFETY: as below; the stream is a driver stream of the primary context the runtime shares.
            return unsafe {
                if self.op.asynchronous {
                    rtmem::memset_async(addr, VALUE, n, self.stream.handle())
                } else {
                    rtmem::memset(addr, VALUE, n)
                }
            };
        }
        // SAFETY: `addr..addr+n` is device-accessible memory owned by this probe and alive until verified.
        unsafe {
            if self.op.asynchronous {
                mem::memset_d8_async(addr, VALUE, n, self.stream.handle())
            } else {
                mem::memset_d8(addr, VALUE, n)
            }
        }
    }

    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        Some(if self.op.asynchronous { self.stream.handle() } else { StreamHandle::LEGACY })
    }

    fn verify(&mut self, gpu: &Gpu, _probed: Option<super::method::Page>) -> anyhow::Result<Option<bool>> {
        let got = gpu_checksum(gpu, &self.sum, self.addr(), self.op.bytes)?;
        ensure!(got == self.want, "the memset left wrong bytes (checksum {got:#x}, expected {:#x})", self.want);
        Ok(None)
    }
}

pub fn run(gpu: &Gpu, case: &Case, op: MemsetFacts, reps: usize) -> anyhow::Result<CaseRecord> {
    let len = op.bytes as usize;
    let mem = match op.target {
        Target::Device => Memory::Device(DeviceBuffer::new(gpu, len)?),
        Target::Pinned => Memory::Host(HostBuffer::new(gpu, HostKind::Pinned, len)?),
        Target::Managed => Memory::Host(HostBuffer::new(gpu, HostKind::Managed, len)?),
    };
    let stream = Stream::new(gpu, op.stream)?;
    let other = Stream::new(gpu, StreamKind::NonBlocking)?;
    let want = (0..op.bytes).fold(0u64, |acc, i| acc.wrapping_add(checksum_term(i, VALUE)));
    let plan = BlockerPlan {
        stream: if op.blocker == BlockerPlacement::Same { stream.handle() } else { other.handle() },
        ahead: op.blocker == BlockerPlacement::Same,
    };
    let mut probe =
        MemsetProbe { op, api: case.setup.api, mem, stream: &stream, sum: DeviceBuffer::new(gpu, 8)?, want };
    let (warmup, blocker_ns, reps) = measure(gpu, &mut probe, plan, reps)?;
    Ok(case_record(case, Some(warmup), Some(blocker_ns), reps))
}
