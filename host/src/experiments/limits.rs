//! Attributes and limits while work is in flight (rules LM1–LM4): changing the per-thread stack size and the
//! printf FIFO (`cuCtxSetLimit`), a kernel's maximum dynamic shared memory (`cuFuncSetAttribute`, on an idle
//! kernel and on the kernel running right now), and the queries programs make all the time (`cuCtxGetLimit`,
//! `cuMemGetInfo`, `cuDeviceGetAttribute`). None takes a stream: each is timed next to a blocker on the legacy
//! stream and on a non-blocking stream, and waiting for it means the call drained the device.
//!
//! Every setter's value is restored in `prepare`, so that each repetition really changes it, and read back in
//! `verify`: a setting that did not take is an error.
//!
//! The runtime twins (`runtime/limits/...`) make the runtime's calls on the same primary context:
//! `cudaDeviceSetLimit`, `cudaDeviceGetLimit`, `cudaMemGetInfo`, `cudaDeviceGetAttribute`, and
//! `cudaFuncSetAttribute` of the `checksum` kernel the runtime loaded itself (`cudaLibraryLoadData`; the
//! runtime names a kernel by a `cudaKernel_t`, and under lazy loading its first `cudaFuncSetAttribute` may load
//! it, which the warm-up repetition absorbs). The running-kernel case has no twin: the running kernel is the
//! blocker, a driver module's function, which the runtime has no handle for.

use super::method::{measure, BlockerPlan, Probe};
use super::{case_record, Case};
use anyhow::ensure;
use async_lab_core::api::Api;
use async_lab_core::catalogue::limits::{LimitCall, LimitFacts};
use async_lab_core::record::CaseRecord;
use async_lab_driver::device::{attribute, memory_free_and_total};
use async_lab_driver::limits::{self as lim, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as MAX_DYN_SHARED};
use async_lab_driver::runtime::library::{RtKernel, RtLibrary};
use async_lab_driver::runtime::limits::{self as rtlim, DeviceAttr, Limit};
use async_lab_driver::{sys, CudaResult, Gpu, Stream, StreamHandle};
use async_lab_ptx::kernels;

/// Stack size per GPU thread: restored to `STACK_FROM`, set to `STACK_TO`.
const STACK_FROM: usize = 1024;
const STACK_TO: usize = 8 * 1024;
const FIFO_FROM: usize = 1 << 20;
const FIFO_TO: usize = 2 << 20;
/// Dynamic shared memory: restored to 0, set to 64 KiB (above the 48 KiB a kernel gets without asking).
const SHARED_TO: i32 = 64 * 1024;

struct LimitProbe {
    op: LimitFacts,
    api: Api,
    /// What the queries read, kept so that the call's result is used.
    read: u64,
    /// For the runtime's `cudaFuncSetAttribute`: the `checksum` kernel the runtime loaded, and its library
    /// (kept loaded while the probe lives).
    runtime_kernel: Option<(RtKernel, RtLibrary)>,
}

impl LimitProbe {
    fn function(&self, gpu: &Gpu) -> sys::CUfunction {
        match self.op.call {
            LimitCall::FuncSetAttributeRunning => gpu.kernels.spin_wait_ns,
            _ => gpu.kernels.checksum,
        }
    }
}

impl Probe for LimitProbe {
    fn prepare(&mut self, gpu: &Gpu) -> anyhow::Result<()> {
        self.reset(gpu)?;
        self.read = 0;
        Ok(())
    }

    fn call(&mut self, gpu: &Gpu) -> CudaResult<()> {
        if self.api == Api::Runtime {
            return self.runtime_call(gpu);
        }
        match self.op.call {
            LimitCall::SetStackSize => lim::ctx_set_limit(lim::CU_LIMIT_STACK_SIZE, STACK_TO),
            LimitCall::SetPrintfFifo => lim::ctx_set_limit(lim::CU_LIMIT_PRINTF_FIFO_SIZE, FIFO_TO),
            LimitCall::GetStackSize => lim::ctx_get_limit(lim::CU_LIMIT_STACK_SIZE).map(|v| self.read = v as u64),
            LimitCall::MemGetInfo => memory_free_and_total().map(|(_, total)| self.read = total as u64),
            LimitCall::DeviceGetAttribute => {
                attribute(gpu.device, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                    .map(|v| self.read = v as u64)
            }
            LimitCall::FuncSetAttributeIdle | LimitCall::FuncSetAttributeRunning => {
                // SAFETY: as in `reset`.
                unsafe { lim::set_function_attribute(self.function(gpu), MAX_DYN_SHARED, SHARED_TO) }
            }
        }
    }

    fn op_stream(&self) -> Option<StreamHandle<'_>> {
        None
    }

    fn verify(&mut self, gpu: &Gpu, _probed: Option<super::method::Page>) -> anyhow::Result<Option<bool>> {
        gpu.bind()?;
        let name = self.op.call.name(self.api);
        match self.op.call {
            LimitCall::SetStackSize => {
                let v = lim::ctx_get_limit(lim::CU_LIMIT_STACK_SIZE)?;
                ensure!(v >= STACK_TO, "{name}: the stack size reads {v} bytes after setting {STACK_TO}");
            }
            LimitCall::SetPrintfFifo => {
                let v = lim::ctx_get_limit(lim::CU_LIMIT_PRINTF_FIFO_SIZE)?;
                ensure!(v >= FIFO_TO, "{name}: the printf FIFO reads {v} bytes after setting {FIFO_TO}");
            }
            LimitCall::FuncSetAttributeIdle | LimitCall::FuncSetAttributeRunning => {
                let v = match &self.runtime_kernel {
                    // SAFETY: the kernel's library is held by the probe.
                    Some((k, _)) => unsafe { rtlim::max_dynamic_shared(*k)? },
                    // SAFETY: as in `reset`.
                    None => unsafe { lim::function_attribute(self.function(gpu), MAX_DYN_SHARED)? },
                };
                ensure!(
                    v == SHARED_TO,
                    "{name}: the kernel's maximum dynamic shared memory reads {v} after setting {SHARED_TO}"
                );
            }
            _ => ensure!(self.read > 0, "{name} read 0"),
        }
        Ok(None)
    }
}

impl LimitProbe {
    /// The runtime's counterpart of each call (the runtime uses the current context, which `run_case` made
    /// the GPU's primary one, the driver-side objects' too).
    fn runtime_call(&mut self, gpu: &Gpu) -> CudaResult<()> {
        match self.op.call {
            LimitCall::SetStackSize => rtlim::device_set_limit(Limit::cudaLimitStackSize, STACK_TO),
            LimitCall::SetPrintfFifo => rtlim::device_set_limit(Limit::cudaLimitPrintfFifoSize, FIFO_TO),
            LimitCall::GetStackSize => rtlim::device_get_limit(Limit::cudaLimitStackSize).map(|v| self.read = v as u64),
            LimitCall::MemGetInfo => rtlim::mem_get_info().map(|(_, total)| self.read = total as u64),
            LimitCall::DeviceGetAttribute => {
                rtlim::device_attribute(DeviceAttr::cudaDevAttrMultiProcessorCount, gpu.ordinal)
                    .map(|v| self.read = v as u64)
            }
            LimitCall::FuncSetAttributeIdle | LimitCall::FuncSetAttributeRunning => {
                let (k, _) = self.runtime_kernel.as_ref().expect("loaded in run for a runtime attribute case");
                // SAFETY: the kernel's library is held by the probe.
                unsafe { rtlim::set_max_dynamic_shared(*k, SHARED_TO) }
            }
        }
    }

    /// Puts the setting back where each repetition starts (1 KiB of stack, a 1 MiB FIFO, attribute 0).
    fn reset(&self, gpu: &Gpu) -> anyhow::Result<()> {
        gpu.bind()?;
        match self.op.call {
            LimitCall::SetStackSize => lim::ctx_set_limit(lim::CU_LIMIT_STACK_SIZE, STACK_FROM)?,
            LimitCall::SetPrintfFifo => lim::ctx_set_limit(lim::CU_LIMIT_PRINTF_FIFO_SIZE, FIFO_FROM)?,
            LimitCall::FuncSetAttributeIdle | LimitCall::FuncSetAttributeRunning => match &self.runtime_kernel {
                // SAFETY: the kernel's library is held by the probe.
                Some((k, _)) => unsafe { rtlim::set_max_dynamic_shared(*k, 0)? },
                // SAFETY: one of the `Gpu`'s kernels, whose module stays loaded while the `Gpu` lives.
                None => unsafe { lim::set_function_attribute(self.function(gpu), MAX_DYN_SHARED, 0)? },
            },
            _ => {}
        }
        Ok(())
    }
}

pub fn run(gpu: &Gpu, case: &Case, op: LimitFacts, reps: usize) -> anyhow::Result<CaseRecord> {
    let blocker_stream = Stream::new(gpu, op.blocker_stream)?;
    let plan = BlockerPlan { stream: blocker_stream.handle(), ahead: false };
    let runtime_attribute = case.setup.api == Api::Runtime && op.call.sets_function_attribute();
    anyhow::ensure!(
        case.setup.api == Api::Driver || op.call.runtime_can_name_kernel(),
        "{}: the runtime has no handle for the running blocker's kernel",
        case.setup.id
    );
    let runtime_kernel = if runtime_attribute {
        let library = RtLibrary::load(gpu.ptx.text())?;
        Some((library.kernel(kernels::CHECKSUM.name)?, library))
    } else {
        None
    };
    let mut probe = LimitProbe { op, api: case.setup.api, read: 0, runtime_kernel };
    // What the limit was before, so the run leaves the context as it found it.
    gpu.bind()?;
    let before = match op.call {
        LimitCall::SetStackSize => Some((lim::CU_LIMIT_STACK_SIZE, lim::ctx_get_limit(lim::CU_LIMIT_STACK_SIZE)?)),
        LimitCall::SetPrintfFifo => {
            Some((lim::CU_LIMIT_PRINTF_FIFO_SIZE, lim::ctx_get_limit(lim::CU_LIMIT_PRINTF_FIFO_SIZE)?))
        }
        _ => None,
    };
    let measured = measure(gpu, &mut probe, plan, reps);
    gpu.synchronize()?;
    probe.reset(gpu)?;
    if let Some((limit, value)) = before {
        lim::ctx_set_limit(limit, value)?;
    }
    let (warmup, blocker_ns, reps) = measured?;
    Ok(case_record(case, Some(warmup), Some(blocker_ns), reps))
}
