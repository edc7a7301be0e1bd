//! Allocation, freeing and registration: do they wait for work already running on the GPU? (rules AL1–AL4,
//! ST4). Calls without a stream are measured next to a blocker on the legacy stream and on a non-blocking
//! stream; stream-ordered allocation next to a blocker in its own stream and on another. The cases and what
//! they expect are the catalogue's (`async_lab_core::catalogue::alloc`); this file measures them.

use super::method::{measure, BlockerPlan, Probe};
use super::{case_record, Case};
use async_lab_core::api::Api;
use async_lab_core::catalogue::alloc::{AllocCall, AllocFacts, Pool};
use async_lab_core::record::CaseRecord;
use async_lab_core::setup::BlockerPlacement;
use async_lab_driver::memory::{self as mem, DefaultMemPool};
use async_lab_driver::runtime::memory as rtmem;
use async_lab_driver::{sys, CudaResult, Gpu, PageableBuffer, Stream, StreamHandle, StreamKind};
use std::ffi::c_void;

struct AllocProbe<'a, 'g> {
    op: AllocFacts,
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
    fn call_runtime(&mut self) -> CudaResult<()> {
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

    fn call(&mut self, _gpu: &Gpu) -> CudaResult<()> {
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

pub fn run(gpu: &Gpu, case: &Case, op: AllocFacts, reps: usize) -> anyhow::Result<CaseRecord> {
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
        ahead: case.setup.layout.blocker_ahead,
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
