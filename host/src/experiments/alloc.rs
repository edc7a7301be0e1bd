//! Allocation, freeing and registration: do they wait for work already running on the GPU? (rules AL1–AL4,
//! ST4). Calls without a stream are measured next to a blocker on the legacy stream and on a non-blocking
//! stream; stream-ordered allocation next to a blocker in its own stream and on another.

use super::method::{measure, BlockerPlan, Probe};
use super::{case_record, Case, Op};
use async_lab_core::api::Api;
use async_lab_core::classify::Class::*;
use async_lab_core::record::{CaseRecord, CaseSetup};
use async_lab_core::rules::Expected;
use async_lab_core::setup::CallTiming;
use async_lab_core::setup::{BlockerPlacement, Family};
use async_lab_driver::memory::{self as mem, DefaultMemPool};
use async_lab_driver::runtime::memory as rtmem;
use async_lab_driver::{sys, DriverResult, Gpu, PageableBuffer, Stream, StreamHandle, StreamKind};
use std::ffi::c_void;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocCall {
    MemAlloc,
    MemFree,
    AllocHost,
    FreeHost,
    HostRegister,
    HostUnregister,
    AllocManaged,
    AllocAsync,
    FreeAsync,
}

/// The default memory pool's release threshold during a stream-ordered experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pool {
    /// The default (0): the pool gives memory back at every synchronization, so allocations refill it.
    Threshold0,
    /// Threshold at its maximum and the pool primed: allocations are served from memory the pool keeps.
    Warm,
}

#[derive(Clone, Copy, Debug)]
pub struct AllocOp {
    pub call: AllocCall,
    pub pool: Pool,
    /// For calls without a stream: the stream the blocker runs on (legacy or non-blocking).
    pub blocker_stream: StreamKind,
    /// For stream-ordered calls: blocker in the call's stream or on another.
    pub blocker: BlockerPlacement,
    pub bytes: u64,
}

impl AllocCall {
    fn slug(self) -> &'static str {
        match self {
            AllocCall::MemAlloc => "mem-alloc",
            AllocCall::MemFree => "mem-free",
            AllocCall::AllocHost => "alloc-host",
            AllocCall::FreeHost => "free-host",
            AllocCall::HostRegister => "host-register",
            AllocCall::HostUnregister => "host-unregister",
            AllocCall::AllocManaged => "alloc-managed",
            AllocCall::AllocAsync => "alloc-async",
            AllocCall::FreeAsync => "free-async",
        }
    }

    fn name(self) -> &'static str {
        match self {
            AllocCall::MemAlloc => "cuMemAlloc",
            AllocCall::MemFree => "cuMemFree",
            AllocCall::AllocHost => "cuMemAllocHost",
            AllocCall::FreeHost => "cuMemFreeHost",
            AllocCall::HostRegister => "cuMemHostRegister",
            AllocCall::HostUnregister => "cuMemHostUnregister",
            AllocCall::AllocManaged => "cuMemAllocManaged",
            AllocCall::AllocAsync => "cuMemAllocAsync",
            AllocCall::FreeAsync => "cuMemFreeAsync",
        }
    }

    fn stream_ordered(self) -> bool {
        matches!(self, AllocCall::AllocAsync | AllocCall::FreeAsync)
    }
}

impl AllocOp {
    fn case(self) -> Case {
        let c = self.call;
        let (rule, expected) = match c {
            AllocCall::MemAlloc | AllocCall::AllocManaged => ("ST4", Expected::undocumented()),
            AllocCall::MemFree => ("AL1", Expected::classes(&[DeviceSync])),
            AllocCall::AllocHost | AllocCall::FreeHost => ("AL3", Expected::undocumented()),
            AllocCall::HostRegister | AllocCall::HostUnregister => ("AL4", Expected::undocumented()),
            // With the blocker on another stream the call's own stream is not asked about (see `op_stream`):
            // these once took `blocking` as a second class, only to absorb what that query could not tell.
            AllocCall::AllocAsync | AllocCall::FreeAsync => ("AL2", Expected::classes(&[Async])),
        };
        let size = async_lab_core::units::format_size(self.bytes);
        let (id, stream, blocker, blocker_stream, ahead, what) = if c.stream_ordered() {
            let same = self.blocker == BlockerPlacement::Same;
            let pool = if self.pool == Pool::Warm { "warm-pool" } else { "threshold-0" };
            (
                format!("alloc/{}/{pool}/nonblocking/{}", c.slug(), if same { "same" } else { "other" }),
                Some(StreamKind::NonBlocking),
                self.blocker,
                StreamKind::NonBlocking,
                same,
                format!(
                    "{} of {size} from the default pool ({}), with a blocker {}",
                    c.name(),
                    if self.pool == Pool::Warm {
                        "release threshold at its maximum, pool primed"
                    } else {
                        "release threshold 0, the default"
                    },
                    super::blocker_words(same)
                ),
            )
        } else {
            (
                format!("alloc/{}/{}", c.slug(), self.blocker_stream.slug()),
                None,
                BlockerPlacement::Other,
                self.blocker_stream,
                false,
                format!("{} of {size} while a blocker runs on the {} stream", c.name(), self.blocker_stream.slug()),
            )
        };
        Case {
            setup: CaseSetup {
                id,
                family: Family::Alloc,
                call: c.name().into(),
                rule: rule.into(),
                expected,
                stream,
                blocker,
                blocker_stream: Some(blocker_stream),
                blocker_ahead: ahead,
                host_memory: None,
                bytes: self.bytes,
                what,
                api: async_lab_core::api::Api::Driver,
                peer: None,
                direction: None,
                timing: CallTiming::Stopwatch,
                case: None,
            },
            op: Op::Alloc(self),
        }
    }
}

pub fn cases(bytes: u64) -> Vec<Case> {
    let mut v = Vec::new();
    for call in [
        AllocCall::MemAlloc,
        AllocCall::MemFree,
        AllocCall::AllocHost,
        AllocCall::FreeHost,
        AllocCall::HostRegister,
        AllocCall::HostUnregister,
        AllocCall::AllocManaged,
    ] {
        for blocker_stream in [StreamKind::Legacy, StreamKind::NonBlocking] {
            v.push(
                AllocOp { call, pool: Pool::Threshold0, blocker_stream, blocker: BlockerPlacement::Other, bytes }
                    .case(),
            );
        }
    }
    for call in [AllocCall::AllocAsync, AllocCall::FreeAsync] {
        for pool in [Pool::Threshold0, Pool::Warm] {
            for blocker in [BlockerPlacement::Same, BlockerPlacement::Other] {
                v.push(AllocOp { call, pool, blocker_stream: StreamKind::NonBlocking, blocker, bytes }.case());
            }
        }
    }
    v
}

struct AllocProbe<'a, 'g> {
    op: AllocOp,
    api: Api,
    stream: &'a Stream<'g>,
    pool: DefaultMemPool,
    /// What the call allocates or frees.
    device: u64,
    host: *mut c_void,
    pageable: Option<PageableBuffer>,
}

impl AllocProbe<'_, '_> {
    fn set_threshold(&self, value: u64) -> anyhow::Result<()> {
        self.pool.set_release_threshold(value)?;
        Ok(())
    }

    /// Frees whatever the last call left allocated or registered.
    fn release(&mut self) -> anyhow::Result<()> {
        // SAFETY: each branch undoes exactly what a previous `call` or `prepare` did, once; the device is
        // synchronized before `verify` and `prepare` run.
        unsafe {
            match self.op.call {
                AllocCall::MemAlloc | AllocCall::AllocManaged | AllocCall::MemFree if self.device != 0 => {
                    mem::mem_free(self.device)?;
                }
                AllocCall::AllocHost | AllocCall::FreeHost if !self.host.is_null() => mem::mem_free_host(self.host)?,
                AllocCall::HostRegister | AllocCall::HostUnregister if !self.host.is_null() => {
                    mem::mem_host_unregister(self.host)?
                }
                AllocCall::AllocAsync | AllocCall::FreeAsync if self.device != 0 => {
                    mem::mem_free_async(self.device, self.stream.handle())?;
                    self.stream.synchronize()?;
                }
                _ => {}
            }
        }
        self.device = 0;
        self.host = std::ptr::null_mut();
        Ok(())
    }
}

impl AllocProbe<'_, '_> {
    /// The runtime's counterpart of each call. What it allocates is freed by `release` through the driver:
    /// both APIs work in the same primary context, and the runtime's default pool is the device's.
    fn call_runtime(&mut self) -> DriverResult<()> {
        let n = self.op.bytes as usize;
        let s = self.stream.handle();
        // SAFETY: frees and unregistrations act on what `prepare` made (the pageable buffer registered here
        // lives in `self` until `release` has unregistered it), and each result is stored where `release`
        // finds it.
        unsafe {
            match self.op.call {
                AllocCall::MemAlloc => rtmem::malloc(n).map(|p| self.device = p),
                AllocCall::MemFree => rtmem::free(self.device).map(|()| self.device = 0),
                AllocCall::AllocHost => rtmem::malloc_host(n).map(|p| self.host = p),
                AllocCall::FreeHost => rtmem::free_host(self.host).map(|()| self.host = std::ptr::null_mut()),
                AllocCall::HostRegister => {
                    let q = self.pageable.as_ref().expect("made in run").as_ptr();
                    rtmem::host_register(q.cast(), n, 0).map(|()| self.host = q.cast())
                }
                AllocCall::HostUnregister => {
                    rtmem::host_unregister(self.host).map(|()| self.host = std::ptr::null_mut())
                }
                AllocCall::AllocManaged => {
                    rtmem::malloc_managed(n, 1 /* cudaMemAttachGlobal */).map(|p| self.device = p)
                }
                AllocCall::AllocAsync => rtmem::malloc_async(n, s).map(|p| self.device = p),
                AllocCall::FreeAsync => rtmem::free_async(self.device, s).map(|()| self.device = 0),
            }
        }
    }
}

impl Probe for AllocProbe<'_, '_> {
    fn prepare(&mut self, _gpu: &Gpu) -> anyhow::Result<()> {
        self.release()?;
        let n = self.op.bytes as usize;
        if self.op.call.stream_ordered() {
            self.set_threshold(if self.op.pool == Pool::Warm { u64::MAX } else { 0 })?;
        }
        // What is allocated here is what `call` frees or unregisters, and `release` cleans up whatever is left.
        match self.op.call {
            AllocCall::MemFree => self.device = mem::mem_alloc(n)?,
            AllocCall::FreeHost => self.host = mem::mem_alloc_host(n)?,
            AllocCall::HostUnregister => {
                let p = self.pageable.as_ref().expect("made in run").as_ptr();
                // SAFETY: `p..p+n` is the live pageable buffer `self` owns; `release` unregisters it before
                // the probe (and the buffer with it) is dropped.
                unsafe { mem::mem_host_register(p.cast(), n, sys::CU_MEMHOSTREGISTER_DEFAULT)? };
                self.host = p.cast();
            }
            AllocCall::FreeAsync => {
                self.device = mem::mem_alloc_async(n, self.stream.handle())?;
                self.stream.synchronize()?;
            }
            AllocCall::AllocAsync if self.op.pool == Pool::Warm => {
                // Prime the pool so that the measured allocation is served from memory it keeps.
                let d = mem::mem_alloc_async(n, self.stream.handle())?;
                // SAFETY: `d` was just allocated on this stream and is not used again.
                unsafe { mem::mem_free_async(d, self.stream.handle())? };
                self.stream.synchronize()?;
            }
            _ => {}
        }
        Ok(())
    }

    fn call(&mut self, _gpu: &Gpu) -> DriverResult<()> {
        let n = self.op.bytes as usize;
        let s = self.stream.handle();
        if self.api == Api::Runtime {
            return self.call_runtime();
        }
        // SAFETY: frees and unregistrations act on what `prepare` made (the pageable buffer registered here
        // lives in `self` until `release` has unregistered it), and each result is stored where `release`
        // finds it.
        unsafe {
            match self.op.call {
                AllocCall::MemAlloc => mem::mem_alloc(n).map(|p| self.device = p),
                AllocCall::MemFree => mem::mem_free(self.device).map(|()| self.device = 0),
                AllocCall::AllocHost => mem::mem_alloc_host(n).map(|p| self.host = p),
                AllocCall::FreeHost => mem::mem_free_host(self.host).map(|()| self.host = std::ptr::null_mut()),
                AllocCall::HostRegister => {
                    let p = self.pageable.as_ref().expect("made in run").as_ptr();
                    mem::mem_host_register(p.cast(), n, sys::CU_MEMHOSTREGISTER_DEFAULT).map(|()| self.host = p.cast())
                }
                AllocCall::HostUnregister => {
                    mem::mem_host_unregister(self.host).map(|()| self.host = std::ptr::null_mut())
                }
                AllocCall::AllocManaged => {
                    mem::mem_alloc_managed(n, sys::CU_MEM_ATTACH_GLOBAL).map(|p| self.device = p)
                }
                AllocCall::AllocAsync => mem::mem_alloc_async(n, s).map(|p| self.device = p),
                AllocCall::FreeAsync => mem::mem_free_async(self.device, s).map(|()| self.device = 0),
            }
        }
    }

    /// With the blocker ahead, the stream query tells whether the call returned while that work still ran.
    /// With the blocker on another stream, the call's stream is idle before it, and "idle after it" cannot tell
    /// "nothing was put on the stream" (a pool with memory to spare) from "what was put there finished": three
    /// runs at 395228c read `blocking` for calls that returned in under a microsecond. The question is then not
    /// asked, and the class rests on whether the call waited for the other stream, which is what AL2 is about.
    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        (self.op.call.stream_ordered() && self.op.blocker == BlockerPlacement::Same).then(|| self.stream.handle())
    }

    fn verify(&mut self, _gpu: &Gpu, _probed: Option<super::method::Page>) -> anyhow::Result<Option<bool>> {
        self.release()?;
        Ok(None)
    }
}

impl Drop for AllocProbe<'_, '_> {
    fn drop(&mut self) {
        let _ = self.release();
        if self.op.call.stream_ordered() {
            let _ = self.set_threshold(0);
        }
    }
}

pub fn run(gpu: &Gpu, case: &Case, op: AllocOp, reps: usize) -> anyhow::Result<CaseRecord> {
    let stream = Stream::new(gpu, StreamKind::NonBlocking)?;
    let blocker_stream =
        Stream::new(gpu, if op.call.stream_ordered() { StreamKind::NonBlocking } else { op.blocker_stream })?;
    let pool = DefaultMemPool::of(gpu.device)?;
    let plan = BlockerPlan {
        stream: if op.call.stream_ordered() && op.blocker == BlockerPlacement::Same {
            stream.handle()
        } else {
            blocker_stream.handle()
        },
        ahead: case.setup.blocker_ahead,
    };
    let pageable = matches!(op.call, AllocCall::HostRegister | AllocCall::HostUnregister)
        .then(|| PageableBuffer::new(op.bytes as usize));
    let mut probe =
        AllocProbe { op, api: case.setup.api, stream: &stream, pool, device: 0, host: std::ptr::null_mut(), pageable };
    let (warmup, blocker_ns, reps) = measure(gpu, &mut probe, plan, reps)?;
    drop(probe);
    drop(blocker_stream);
    Ok(case_record(case, Some(warmup), Some(blocker_ns), reps))
}
