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
use super::{case_record, Case, Op};
use anyhow::ensure;
use async_lab_core::api::Api;
use async_lab_core::classify::Class::*;
use async_lab_core::record::{CaseRecord, CaseSetup};
use async_lab_core::rules::Expected;
use async_lab_core::setup::CallTiming;
use async_lab_core::setup::{BlockerPlacement, Family};
use async_lab_driver::device::{attribute, memory_free_and_total};
use async_lab_driver::limits::{self as lim, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as MAX_DYN_SHARED};
use async_lab_driver::runtime::library::{Kernel, Library};
use async_lab_driver::runtime::limits::{self as rtlim, DeviceAttr, Limit};
use async_lab_driver::{sys, DriverResult, Gpu, Stream, StreamHandle, StreamKind};
use async_lab_ptx::kernels;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitCall {
    /// `cuCtxSetLimit(CU_LIMIT_STACK_SIZE)` from 1 KiB to 8 KiB per thread.
    SetStackSize,
    /// `cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE)` from 1 MiB to 2 MiB.
    SetPrintfFifo,
    /// `cuCtxGetLimit(CU_LIMIT_STACK_SIZE)`.
    GetStackSize,
    /// `cuMemGetInfo`.
    MemGetInfo,
    /// `cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)`.
    DeviceGetAttribute,
    /// `cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)` of a kernel that is not running (`checksum`).
    FuncSetAttributeIdle,
    /// The same on the blocker's own kernel, which is running during the call.
    FuncSetAttributeRunning,
}

/// Stack size per GPU thread: restored to `STACK_FROM`, set to `STACK_TO`.
const STACK_FROM: usize = 1024;
const STACK_TO: usize = 8 * 1024;
const FIFO_FROM: usize = 1 << 20;
const FIFO_TO: usize = 2 << 20;
/// Dynamic shared memory: restored to 0, set to 64 KiB (above the 48 KiB a kernel gets without asking).
const SHARED_TO: i32 = 64 * 1024;

impl LimitCall {
    fn slug(self) -> &'static str {
        match self {
            LimitCall::SetStackSize => "set-limit/stack-size",
            LimitCall::SetPrintfFifo => "set-limit/printf-fifo",
            LimitCall::GetStackSize => "get-limit/stack-size",
            LimitCall::MemGetInfo => "mem-get-info",
            LimitCall::DeviceGetAttribute => "device-get-attribute/sm-count",
            LimitCall::FuncSetAttributeIdle => "func-set-attribute/idle-kernel",
            LimitCall::FuncSetAttributeRunning => "func-set-attribute/running-kernel",
        }
    }

    fn name(self) -> &'static str {
        match self {
            LimitCall::SetStackSize | LimitCall::SetPrintfFifo => "cuCtxSetLimit",
            LimitCall::GetStackSize => "cuCtxGetLimit",
            LimitCall::MemGetInfo => "cuMemGetInfo",
            LimitCall::DeviceGetAttribute => "cuDeviceGetAttribute",
            LimitCall::FuncSetAttributeIdle | LimitCall::FuncSetAttributeRunning => "cuFuncSetAttribute",
        }
    }

    /// Whether the runtime can name the kernel this call changes: only one it loaded itself, not the
    /// blocker's (a driver module's function), so the running-kernel case has no runtime twin.
    pub fn runtime_can_name_kernel(self) -> bool {
        self != LimitCall::FuncSetAttributeRunning
    }

    fn words(self) -> &'static str {
        match self {
            LimitCall::SetStackSize => "raising the per-thread stack size from 1 KiB to 8 KiB",
            LimitCall::SetPrintfFifo => "raising the printf FIFO from 1 MiB to 2 MiB (no kernel here uses printf)",
            LimitCall::GetStackSize => "reading the per-thread stack size",
            LimitCall::MemGetInfo => "reading the free and total device memory",
            LimitCall::DeviceGetAttribute => "reading the number of multiprocessors",
            LimitCall::FuncSetAttributeIdle => {
                "raising a kernel's maximum dynamic shared memory to 64 KiB; the kernel is not running"
            }
            LimitCall::FuncSetAttributeRunning => {
                "raising the maximum dynamic shared memory of the blocker's kernel to 64 KiB while it runs"
            }
        }
    }

    fn rule(self) -> (&'static str, Expected) {
        match self {
            // "If necessary, the device will block until all preceding requested tasks are complete": it may
            // drain the device, or not need to.
            LimitCall::SetStackSize => ("LM1", Expected::classes(&[Async, DeviceSync])),
            LimitCall::SetPrintfFifo => ("LM2", Expected::undocumented()),
            LimitCall::GetStackSize | LimitCall::MemGetInfo | LimitCall::DeviceGetAttribute => {
                ("LM3", Expected::undocumented())
            }
            LimitCall::FuncSetAttributeIdle | LimitCall::FuncSetAttributeRunning => ("LM4", Expected::undocumented()),
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct LimitOp {
    pub call: LimitCall,
    /// The stream the blocker runs on (the calls take none).
    pub blocker_stream: StreamKind,
}

impl LimitOp {
    fn case(self) -> Case {
        let c = self.call;
        let (rule, expected) = c.rule();
        Case {
            setup: CaseSetup {
                id: format!("limits/{}/{}", c.slug(), self.blocker_stream.slug()),
                family: Family::Limits,
                call: c.name().into(),
                rule: rule.into(),
                expected,
                stream: None,
                blocker: BlockerPlacement::Other,
                blocker_stream: Some(self.blocker_stream),
                blocker_ahead: false,
                host_memory: None,
                direction: None,
                bytes: 0,
                what: format!(
                    "{} ({}), while a blocker runs on the {} stream",
                    c.words(),
                    c.name(),
                    self.blocker_stream.slug()
                ),
                api: async_lab_core::api::Api::Driver,
                peer: None,
                timing: CallTiming::Stopwatch,
                case: None,
            },
            op: Op::Limits(self),
        }
    }
}

pub fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for call in [
        LimitCall::SetStackSize,
        LimitCall::SetPrintfFifo,
        LimitCall::GetStackSize,
        LimitCall::MemGetInfo,
        LimitCall::DeviceGetAttribute,
        LimitCall::FuncSetAttributeIdle,
        LimitCall::FuncSetAttributeRunning,
    ] {
        for blocker_stream in [StreamKind::Legacy, StreamKind::NonBlocking] {
            v.push(LimitOp { call, blocker_stream }.case());
        }
    }
    v
}

struct LimitProbe {
    op: LimitOp,
    api: Api,
    /// What the queries read, kept so that the call's result is used.
    read: u64,
    /// For the runtime's `cudaFuncSetAttribute`: the `checksum` kernel the runtime loaded, and its library
    /// (kept loaded while the probe lives).
    runtime_kernel: Option<(Kernel, Library)>,
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

    fn call(&mut self, gpu: &Gpu) -> DriverResult<()> {
        if self.api == Api::Runtime {
            return self.runtime_call(gpu);
        }
        match self.op.call {
            LimitCall::SetStackSize => lim::set_limit(lim::CU_LIMIT_STACK_SIZE, STACK_TO),
            LimitCall::SetPrintfFifo => lim::set_limit(lim::CU_LIMIT_PRINTF_FIFO_SIZE, FIFO_TO),
            LimitCall::GetStackSize => lim::get_limit(lim::CU_LIMIT_STACK_SIZE).map(|v| self.read = v as u64),
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
        let name = self.op.call.name();
        match self.op.call {
            LimitCall::SetStackSize => {
                let v = lim::get_limit(lim::CU_LIMIT_STACK_SIZE)?;
                ensure!(v >= STACK_TO, "{name}: the stack size reads {v} bytes after setting {STACK_TO}");
            }
            LimitCall::SetPrintfFifo => {
                let v = lim::get_limit(lim::CU_LIMIT_PRINTF_FIFO_SIZE)?;
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
    fn runtime_call(&mut self, gpu: &Gpu) -> DriverResult<()> {
        match self.op.call {
            LimitCall::SetStackSize => rtlim::set_limit(Limit::cudaLimitStackSize, STACK_TO),
            LimitCall::SetPrintfFifo => rtlim::set_limit(Limit::cudaLimitPrintfFifoSize, FIFO_TO),
            LimitCall::GetStackSize => rtlim::get_limit(Limit::cudaLimitStackSize).map(|v| self.read = v as u64),
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
            LimitCall::SetStackSize => lim::set_limit(lim::CU_LIMIT_STACK_SIZE, STACK_FROM)?,
            LimitCall::SetPrintfFifo => lim::set_limit(lim::CU_LIMIT_PRINTF_FIFO_SIZE, FIFO_FROM)?,
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

pub fn run(gpu: &Gpu, case: &Case, op: LimitOp, reps: usize) -> anyhow::Result<CaseRecord> {
    let blocker_stream = Stream::new(gpu, op.blocker_stream)?;
    let plan = BlockerPlan { stream: blocker_stream.handle(), ahead: false };
    let runtime_attribute = case.setup.api == Api::Runtime
        && matches!(op.call, LimitCall::FuncSetAttributeIdle | LimitCall::FuncSetAttributeRunning);
    anyhow::ensure!(
        case.setup.api == Api::Driver || op.call.runtime_can_name_kernel(),
        "{}: the runtime has no handle for the running blocker's kernel",
        case.setup.id
    );
    let runtime_kernel = if runtime_attribute {
        let library = Library::load(gpu.ptx.text())?;
        Some((library.kernel(kernels::CHECKSUM.name)?, library))
    } else {
        None
    };
    let mut probe = LimitProbe { op, api: case.setup.api, read: 0, runtime_kernel };
    // What the limit was before, so the run leaves the context as it found it.
    gpu.bind()?;
    let before = match op.call {
        LimitCall::SetStackSize => Some((lim::CU_LIMIT_STACK_SIZE, lim::get_limit(lim::CU_LIMIT_STACK_SIZE)?)),
        LimitCall::SetPrintfFifo => {
            Some((lim::CU_LIMIT_PRINTF_FIFO_SIZE, lim::get_limit(lim::CU_LIMIT_PRINTF_FIFO_SIZE)?))
        }
        _ => None,
    };
    let measured = measure(gpu, &mut probe, plan, reps);
    gpu.synchronize()?;
    probe.reset(gpu)?;
    if let Some((limit, value)) = before {
        lim::set_limit(limit, value)?;
    }
    let (warmup, blocker_ns, reps) = measured?;
    Ok(case_record(case, Some(warmup), Some(blocker_ns), reps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_twins_name_the_runtime_calls_and_skip_the_running_kernel() {
        for c in cases() {
            let Op::Limits(op) = c.op else { unreachable!("a limits case") };
            let twin = super::super::runtime_twin(&c);
            assert_eq!(twin.is_some(), op.call.runtime_can_name_kernel(), "{}", c.setup.id);
            let Some(twin) = twin else { continue };
            let want = match op.call {
                LimitCall::SetStackSize | LimitCall::SetPrintfFifo => "cudaDeviceSetLimit",
                LimitCall::GetStackSize => "cudaDeviceGetLimit",
                LimitCall::MemGetInfo => "cudaMemGetInfo",
                LimitCall::DeviceGetAttribute => "cudaDeviceGetAttribute",
                LimitCall::FuncSetAttributeIdle | LimitCall::FuncSetAttributeRunning => "cudaFuncSetAttribute",
            };
            assert_eq!(twin.setup.call, want, "{}", c.setup.id);
            assert_eq!(twin.setup.id, format!("runtime/{}", c.setup.id));
        }
    }

    #[test]
    fn every_call_next_to_both_blockers_and_only_the_stack_size_has_a_rule_to_match() {
        let cases = cases();
        assert_eq!(cases.len(), 14);
        assert!(cases.iter().all(|c| c.setup.stream.is_none() && !c.setup.blocker_ahead));
        for c in &cases {
            let documented = matches!(c.setup.expected, Expected::Classes { .. });
            assert_eq!(documented, c.setup.rule == "LM1", "{}", c.setup.id);
        }
    }
}
