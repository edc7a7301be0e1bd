//! Memset of device, pinned host and managed memory, in both forms (rules M1–M3).

use super::buffers::gpu_checksum;
use super::method::{measure, BlockerPlan, Probe};
use super::{case_record, Case, Op};
use crate::pattern::checksum_term;
use anyhow::ensure;
use async_lab_core::api::Api;
use async_lab_core::classify::Class::*;
use async_lab_core::record::{BlockerPlacement, CaseRecord, CaseSetup, Family};
use async_lab_core::rules::Expected;
use async_lab_core::setup::CallTiming;
use async_lab_core::units::format_size;
use async_lab_driver::memory as mem;
use async_lab_driver::runtime::memory as rtmem;
use async_lab_driver::{DeviceBuffer, DriverResult, Gpu, HostBuffer, HostKind, Stream, StreamHandle, StreamKind};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Device,
    Pinned,
    Managed,
}

impl Target {
    fn slug(self) -> &'static str {
        match self {
            Target::Device => "device",
            Target::Pinned => "pinned",
            Target::Managed => "managed",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct MemsetOp {
    pub asynchronous: bool,
    pub target: Target,
    pub stream: StreamKind,
    pub blocker: BlockerPlacement,
    pub bytes: u64,
}

const VALUE: u8 = 0xA5;

impl MemsetOp {
    fn case(self) -> Case {
        let (rule, expected) = match (self.asynchronous, self.target) {
            (true, _) => ("M3", Expected::classes(&[Async])),
            (false, Target::Device) => ("M1", Expected::classes(&[Async])),
            // Fully synchronous: held through its own work; behind work in its stream, work too short for the
            // readings to say more reads as the wait for the stream.
            (false, Target::Pinned) if self.blocker == BlockerPlacement::Same => {
                ("M2", Expected::classes(&[Blocking, WaitedForStream]))
            }
            (false, Target::Pinned) => ("M2", Expected::classes(&[Blocking])),
            (false, Target::Managed) => ("M1", Expected::undocumented()),
        };
        let call = if self.asynchronous { "cuMemsetD8Async" } else { "cuMemsetD8" };
        let same = self.blocker == BlockerPlacement::Same;
        Case {
            setup: CaseSetup {
                id: format!(
                    "memset/{}/{}/{}/{}/{}",
                    if self.asynchronous { "async" } else { "sync" },
                    self.target.slug(),
                    self.stream.slug(),
                    if same { "same" } else { "other" },
                    format_size(self.bytes)
                ),
                family: Family::Memset,
                call: call.into(),
                rule: rule.into(),
                expected,
                stream: Some(self.stream),
                blocker: self.blocker,
                blocker_stream: Some(if same { self.stream } else { StreamKind::NonBlocking }),
                blocker_ahead: same,
                host_memory: match self.target {
                    Target::Device => None,
                    Target::Pinned => Some(HostKind::Pinned),
                    Target::Managed => Some(HostKind::Managed),
                },
                bytes: self.bytes,
                what: format!(
                    "{call} of {} of {} memory on the {} stream, with a blocker {}",
                    format_size(self.bytes),
                    self.target.slug(),
                    self.stream.slug(),
                    super::blocker_words(same)
                ),
                api: async_lab_core::api::Api::Driver,
                peer: None,
                direction: None,
                timing: CallTiming::Stopwatch,
            },
            op: Op::Memset(self),
        }
    }
}

pub fn cases(bytes: u64) -> Vec<Case> {
    let mut v = Vec::new();
    for target in [Target::Device, Target::Pinned, Target::Managed] {
        v.push(
            MemsetOp {
                asynchronous: false,
                target,
                stream: StreamKind::Legacy,
                blocker: BlockerPlacement::Same,
                bytes,
            }
            .case(),
        );
        v.push(
            MemsetOp {
                asynchronous: true,
                target,
                stream: StreamKind::NonBlocking,
                blocker: BlockerPlacement::Same,
                bytes,
            }
            .case(),
        );
    }
    v.push(
        MemsetOp {
            asynchronous: false,
            target: Target::Device,
            stream: StreamKind::Legacy,
            blocker: BlockerPlacement::Other,
            bytes,
        }
        .case(),
    );
    v
}

enum Memory<'g> {
    Device(DeviceBuffer<'g>),
    Host(HostBuffer<'g>),
}

struct MemsetProbe<'a, 'g> {
    op: MemsetOp,
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

    fn call(&mut self, _gpu: &Gpu) -> DriverResult<()> {
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

pub fn run(gpu: &Gpu, case: &Case, op: MemsetOp, reps: usize) -> anyhow::Result<CaseRecord> {
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
